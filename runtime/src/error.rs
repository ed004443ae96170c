//! What can go wrong: the agent's typed reasons ([`kubeboot::Error`]) as the agent gives them,
//! and the few things only a runtime can get wrong (an address it cannot listen on).

use std::fmt;

/// Why a run ended without its outcome, or could not begin.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum Error {
    /// The agent refused its configuration ([`kubeboot::agent::Agent::start`]): nothing ran.
    Config(kubeboot::Error),
    /// The agent stopped for good ([`kubeboot::agent::Action::Failed`]).
    Failed {
        /// The typed reason.
        error: kubeboot::Error,
        /// What it was doing, and the server's words.
        detail: String,
        /// The line it printed (`agent=<fe> step=failed reason=<name> code=<code> ...`).
        line: String,
    },
    /// The runtime could not set itself up (a metrics address it cannot listen on, a textfile
    /// that is not `*.prom`, a path that is not UTF-8, no OS randomness): nothing ran.
    Setup(String),
}

impl Error {
    /// The agent's typed reason, when there is one.
    pub fn reason(&self) -> Option<kubeboot::Error> {
        match self {
            Error::Config(e) | Error::Failed { error: e, .. } => Some(*e),
            Error::Setup(_) => None,
        }
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            // (the typed reason first, as the C and Go agents print it)
            Error::Config(e) => write!(f, "{}: {e}", e.name()),
            Error::Failed { error, detail, .. } => write!(f, "{error}: {detail}"),
            Error::Setup(why) => f.write_str(why),
        }
    }
}

impl std::error::Error for Error {}

/// Why there are no credentials to hand out ([`crate::Credentials`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum NotReady {
    /// The agent has not made (or confirmed) usable credentials yet.
    NotYet,
    /// No serving certificate is configured.
    NotConfigured,
    /// The last usable certificate has expired and no new one is current.
    Expired,
    /// The runtime has ended (its run returned) without usable credentials.
    Ended,
}

impl fmt::Display for NotReady {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            NotReady::NotYet => "the node's credentials are not ready yet",
            NotReady::NotConfigured => "no serving certificate is configured",
            NotReady::Expired => "the node's certificate has expired and no new one is current",
            NotReady::Ended => "the runtime has ended without usable credentials",
        })
    }
}

impl std::error::Error for NotReady {}
