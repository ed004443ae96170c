//! The agent's state types: a loaded kubeconfig's cluster, the verdict on a certificate, the
//! part a verdict is about, the kind of attempt.

use super::*;

/// A kubeconfig's cluster, as loaded.
pub(super) struct ClusterInfo<const PEM: usize, const PATH: usize> {
    pub(super) server: heapless::String<MAX_URL>,
    pub(super) insecure: bool,
    pub(super) server_name: heapless::String<MAX_NODE_NAME>,
    /// The CA (PEM), from data or the file.
    pub(super) ca: heapless::Vec<u8, PEM>,
    /// The CA file (absolute), when the CA came from a file.
    pub(super) ca_file: PathBuf<PATH>,
    /// Whether `ca_file` was read.
    pub(super) ca_file_read: bool,
}

impl<const PEM: usize, const PATH: usize> ClusterInfo<PEM, PATH> {
    pub(super) const fn empty() -> Self {
        ClusterInfo {
            server: heapless::String::new(),
            insecure: false,
            server_name: heapless::String::new(),
            ca: heapless::Vec::new(),
            ca_file: PathBuf::new(),
            ca_file_read: false,
        }
    }

    pub(super) fn clear(&mut self) {
        self.server.clear();
        self.insecure = false;
        self.server_name.clear();
        self.ca.clear();
        self.ca_file.clear();
        self.ca_file_read = false;
    }
}

/// The verdict on one certificate.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Verdict {
    Unknown,
    Valid(CertStatus),
    Unusable(Error, Part),
}

/// Which file made a verdict unusable (named as in the events).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Part {
    Kubeconfig,
    CertificateAuthority,
    ClientCertificate,
    ClientKey,
    ServingCertificate,
}

impl Part {
    pub(super) fn as_str(self) -> &'static str {
        match self {
            Part::Kubeconfig => "kubeconfig",
            Part::CertificateAuthority => "certificate-authority",
            Part::ClientCertificate => "client-certificate",
            Part::ClientKey => "client-key",
            Part::ServingCertificate => "serving-certificate",
        }
    }
}

impl core::fmt::Display for Part {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.write_str(self.as_str())
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Kind {
    Bootstrap,
    Rotate,
    Serving,
}

impl Kind {
    pub(super) fn as_str(self) -> &'static str {
        match self {
            Kind::Bootstrap => "bootstrap",
            Kind::Rotate => "rotate",
            Kind::Serving => "serving",
        }
    }
}
