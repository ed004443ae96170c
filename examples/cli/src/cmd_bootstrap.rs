//! `kubeboot bootstrap`, `kubeboot rotate`, `kubeboot run`: flags in (the runtime's
//! [`AgentFlags`], read by the core's grammar), the runtime started (`kubeboot-runtime`: every
//! daemon habit, over the core's agent: every decision), exit status out.

use kubeboot::agent::Mode;
use kubeboot_runtime::flags::{AgentFlags, Refused};
use kubeboot_runtime::{Options, Runtime};

use crate::{CmdResult, Rejected};

/// What to run.
pub enum Run {
    /// `bootstrap` / `rotate`: until the credentials are usable.
    Once,
    /// `run`: forever, or for this many rotations.
    Daemon(Option<u32>),
}

/// What a daemon does around the agent: print its lines, stop on SIGTERM/SIGINT, wake on
/// SIGHUP, tell systemd.
pub fn daemon_options() -> Options {
    Options { signals: true, print: true, credentials: false, ..Options::default() }
}

/// Run the agent with these flags.
pub fn run(a: &AgentFlags, how: Run) -> CmdResult {
    let mode = match how {
        Run::Once => Mode::Once,
        Run::Daemon(max_rotations) => Mode::Run { max_rotations },
    };
    let settings = a.settings("rust", mode).map_err(rejected)?;
    let options = a.options(daemon_options()).map_err(rejected)?;
    Runtime::new(settings, options).run_blocking()?;
    Ok(())
}

/// A refusal as the CLI reports it: a grammar's refusal is a usage error (exit 2).
pub fn rejected(r: Refused) -> Rejected {
    match r {
        Refused::Usage(line) => Rejected::usage(line),
        Refused::Invalid(line) => Rejected::from(line),
    }
}
