//! What the agent asks its front-end to do (read, write, connect, request, sleep), and what it
//! reports (events, status, failures).

use super::*;

/// What a file read is for (to print, and to pick the error to report).
#[non_exhaustive]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FileRole {
    /// The node kubeconfig.
    Kubeconfig,
    /// The bootstrap kubeconfig.
    BootstrapKubeconfig,
    /// A kubeconfig's `certificate-authority` file.
    ClusterCa,
    /// The configured CA bundle.
    CaBundle,
    /// The node kubeconfig's `client-certificate` file.
    ClientCertificate,
    /// The node kubeconfig's `client-key` file.
    ClientKey,
    /// The bootstrap kubeconfig's `tokenFile`.
    TokenFile,
    /// The bootstrap key cache (`kubelet-client.key.tmp`).
    KeyCache,
    /// The serving pair (`kubelet-server-current.pem`).
    ServingPair,
    /// The attestation key's certificate chain ([`super::Config::attestation`]).
    AttestationChain,
}

impl FileRole {
    /// A short name (`kubeconfig`, `key-cache`, ...).
    pub fn as_str(self) -> &'static str {
        match self {
            FileRole::Kubeconfig => "kubeconfig",
            FileRole::BootstrapKubeconfig => "bootstrap-kubeconfig",
            FileRole::ClusterCa => "certificate-authority",
            FileRole::CaBundle => "ca-bundle",
            FileRole::ClientCertificate => "client-certificate",
            FileRole::ClientKey => "client-key",
            FileRole::TokenFile => "token-file",
            FileRole::KeyCache => "key-cache",
            FileRole::ServingPair => "serving-pair",
            FileRole::AttestationChain => "attestation-chain",
        }
    }
}

/// Read the whole file at `path` (following symlinks) and answer [`Agent::on_read`] with its
/// bytes, [`StoreErrorKind::NotFound`], [`StoreErrorKind::FileTooLarge`] beyond `max_len` bytes,
/// or [`StoreErrorKind::Io`].
#[derive(Clone, Copy, Debug)]
pub struct Read<'a> {
    /// The absolute, clean path.
    pub path: &'a str,
    /// What it is.
    pub role: FileRole,
    /// Larger files are [`StoreErrorKind::FileTooLarge`].
    pub max_len: usize,
}

/// A change to the node's files, in the order the agent gives them. Answer
/// [`Agent::on_file_done`]. Every write must be atomic and durable: write a temporary file in the
/// same directory (mode `0600`), `fsync` it, rename it into place, `fsync` the directory — so a
/// crash at any point leaves either the old or the new complete file. `store::FileSteps`
/// (feature `std`) does exactly this on Unix.
#[non_exhaustive]
#[derive(Clone, Copy)]
pub enum FileStep<'a> {
    /// Open the store `<dir>/<prefix>-*.pem` as client-go's `NewFileStore` does: if
    /// `-current.pem` does not resolve and `-updated.pem` is a symlink, rename it to
    /// `-current.pem` (an interrupted swap); remove this store's stale temporary files. A
    /// missing `dir` is [`StoreErrorKind::NotFound`] (nothing to recover); `-updated.pem` that is
    /// not a symlink is [`StoreErrorKind::UpdatedNotSymlink`].
    Recover {
        /// The cert dir.
        dir: &'a str,
        /// `kubelet-client` or `kubelet-server`.
        prefix: &'a str,
    },
    /// Create the cert dir (mode `0700`, parents as needed).
    CreateDir {
        /// The directory.
        path: &'a str,
    },
    /// Write the bootstrap key cache (`EC PRIVATE KEY` PEM; secret), atomically, mode `0600`.
    WriteKeyCache {
        /// `<cert_dir>/kubelet-client.key.tmp`.
        path: &'a str,
        /// The key (secret: never print it).
        pem: &'a [u8],
    },
    /// Write a new data file (certificate chain then key; secret) atomically, mode `0600`, and
    /// read it back: the bytes must equal `content` ([`StoreErrorKind::ReadBackMismatch`]).
    WritePair {
        /// `<cert_dir>/<prefix>-YYYY-MM-DD-HH-MM-SS.pem`.
        path: &'a str,
        /// The content (secret).
        content: &'a [u8],
    },
    /// Point `current` at `target`: create the symlink `updated` → `target` (absolute; remove a
    /// stale `updated` symlink first), then rename `updated` over `current` (atomic: there is
    /// never a moment without `current`), `fsync` the directory. `current` or `updated` existing
    /// as something else than a symlink is [`StoreErrorKind::CurrentNotSymlink`] /
    /// [`StoreErrorKind::UpdatedNotSymlink`], and nothing changes.
    SwapCurrent {
        /// `<cert_dir>/<prefix>-current.pem`.
        current: &'a str,
        /// `<cert_dir>/<prefix>-updated.pem`.
        updated: &'a str,
        /// The data file just written.
        target: &'a str,
    },
    /// Write the node kubeconfig atomically, mode `0600` (it names `-current.pem`, so it never
    /// needs rewriting after a rotation).
    WriteKubeconfig {
        /// The node kubeconfig.
        path: &'a str,
        /// The YAML.
        content: &'a [u8],
    },
    /// Write the node's CA file for the apiserver (`<cert_dir>/ca.crt`: PEM `CERTIFICATE`
    /// blocks, not secret) atomically: after bootstrap, and when the CA refresh proved a new
    /// bundle (see [the CA refresh](super#the-ca-refresh)).
    WriteCa {
        /// `<cert_dir>/ca.crt`.
        path: &'a str,
        /// The PEM bundle.
        content: &'a [u8],
    },
    /// Write the discovered bootstrap kubeconfig atomically, mode `0600` (it holds the token:
    /// secret).
    WriteBootstrapKubeconfig {
        /// The bootstrap kubeconfig.
        path: &'a str,
        /// The YAML (secret).
        content: &'a [u8],
    },
    /// Remove the key cache (a missing file is success), `fsync` the directory.
    RemoveKeyCache {
        /// `<cert_dir>/kubelet-client.key.tmp`.
        path: &'a str,
    },
    /// Remove the cert dir if it is empty (it was created by this attempt, which failed).
    RemoveDir {
        /// The cert dir.
        path: &'a str,
    },
    /// Remove the store's replaced pairs, after `keep` became current: every regular file
    /// `<dir>/<prefix>-YYYY-MM-DD-HH-MM-SS.pem` (that exact form of name) other than `keep`,
    /// then `fsync` the directory. Nothing else in `dir` is touched (`-current.pem`,
    /// `-updated.pem`, the key cache, files of other names). A replaced pair holds the old key,
    /// and a node rotating every few hours would otherwise leave thousands of them. A file
    /// that cannot be removed does not stop the others; the step then fails with its kind.
    PrunePairs {
        /// The cert dir.
        dir: &'a str,
        /// `kubelet-client` or `kubelet-server`.
        prefix: &'a str,
        /// The data file `-current.pem` now points at.
        keep: &'a str,
    },
}

impl FileStep<'_> {
    /// A short name (`write-pair`, `swap-current`, ...).
    pub fn name(&self) -> &'static str {
        match self {
            FileStep::Recover { .. } => "recover",
            FileStep::CreateDir { .. } => "create-dir",
            FileStep::WriteKeyCache { .. } => "write-key-cache",
            FileStep::WritePair { .. } => "write-pair",
            FileStep::SwapCurrent { .. } => "swap-current",
            FileStep::WriteKubeconfig { .. } => "write-kubeconfig",
            FileStep::WriteCa { .. } => "write-ca",
            FileStep::WriteBootstrapKubeconfig { .. } => "write-bootstrap-kubeconfig",
            FileStep::RemoveKeyCache { .. } => "remove-key-cache",
            FileStep::RemoveDir { .. } => "remove-dir",
            FileStep::PrunePairs { .. } => "prune-pairs",
        }
    }

    /// The two links a [`FileStep::Recover`] looks at, `<dir>/<prefix>-current.pem` and
    /// `<dir>/<prefix>-updated.pem` (for front-ends without a path type: the names are the
    /// core's). `None` for another step or a path longer than `N` bytes.
    pub fn recover_paths<const N: usize>(
        &self,
    ) -> Option<(heapless::String<N>, heapless::String<N>)> {
        let FileStep::Recover { dir, prefix } = *self else { return None };
        let link = |suffix: &str| {
            let mut s = heapless::String::<N>::new();
            let dir = dir.trim_end_matches('/');
            (s.push_str(dir).is_ok()
                && s.push('/').is_ok()
                && s.push_str(prefix).is_ok()
                && s.push_str(suffix).is_ok())
            .then_some(s)
        };
        Some((link("-current.pem")?, link("-updated.pem")?))
    }

    /// The file or directory the step changes.
    pub fn path(&self) -> &str {
        match *self {
            FileStep::Recover { dir, .. } | FileStep::PrunePairs { dir, .. } => dir,
            FileStep::CreateDir { path }
            | FileStep::WriteKeyCache { path, .. }
            | FileStep::WritePair { path, .. }
            | FileStep::WriteKubeconfig { path, .. }
            | FileStep::WriteCa { path, .. }
            | FileStep::WriteBootstrapKubeconfig { path, .. }
            | FileStep::RemoveKeyCache { path }
            | FileStep::RemoveDir { path } => path,
            FileStep::SwapCurrent { current, .. } => current,
        }
    }
}

/// Whether `name` (a file name, no directory) is one of the store `prefix`'s data files:
/// `<prefix>-YYYY-MM-DD-HH-MM-SS.pem`, digits where the layout has them. What
/// [`FileStep::PrunePairs`] may remove is exactly these (less the one it keeps).
pub fn is_pair_file_name(prefix: &str, name: &str) -> bool {
    const LAYOUT: &[u8] = b"dddd-dd-dd-dd-dd-dd.pem";
    let Some(rest) = name.strip_prefix(prefix).and_then(|r| r.strip_prefix('-')) else {
        return false;
    };
    rest.len() == LAYOUT.len()
        && rest.bytes().zip(LAYOUT).all(|(c, &l)| match l {
            b'd' => c.is_ascii_digit(),
            l => c == l,
        })
}

impl core::fmt::Debug for FileStep<'_> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        write!(f, "{}({})", self.name(), self.path())
    }
}

/// What an HTTP request is for.
#[non_exhaustive]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RequestKind {
    /// `GET /healthz` before bootstrapping (the kubelet's `waitForServer`).
    Healthz,
    /// `GET` of `kube-public/cluster-info` (discovery, and the CA refresh; anonymous).
    ClusterInfo,
    /// `GET` of the ClusterTrustBundles of the apiserver's serving signer (the CA refresh).
    TrustBundles,
    /// `GET /healthz` over TLS that trusts only a new CA bundle: any HTTP answer proves the
    /// bundle; a failed handshake refuses it (the CA refresh).
    CaProbe,
    /// Create the CSR.
    Create,
    /// GET the CSR.
    Get,
    /// Watch the CSR: with status 200 the body is a stream, fed with [`Agent::on_stream_data`]
    /// (and [`Agent::on_stream_idle`] when nothing arrives by [`HttpRequest::idle_at`]).
    Watch,
    /// `POST` a `SelfSubjectReview` with the client certificate presented: who the apiserver
    /// takes it for (the probe: a certificate the agent's clock calls expired, a pair whose CA
    /// is not the kubeconfig's).
    SelfSubjectReview,
}

impl RequestKind {
    /// `healthz`, `cluster-info`, `trust-bundles`, `ca-probe`, `create`, `get`, `watch`,
    /// `self-subject-review`.
    pub fn as_str(self) -> &'static str {
        match self {
            RequestKind::Healthz => "healthz",
            RequestKind::ClusterInfo => "cluster-info",
            RequestKind::TrustBundles => "trust-bundles",
            RequestKind::CaProbe => "ca-probe",
            RequestKind::Create => "create",
            RequestKind::Get => "get",
            RequestKind::Watch => "watch",
            RequestKind::SelfSubjectReview => "self-subject-review",
        }
    }
}

/// The client certificate the TLS handshake presents.
#[derive(Clone, Copy)]
pub struct ClientCertificate<'a> {
    /// The certificate chain (PEM, `CERTIFICATE` blocks).
    pub chain_pem: &'a [u8],
    /// Its private key (PEM; secret), or the reference of a key a device holds
    /// ([`crate::keyref`]: the handshake's signature is then the device's).
    pub key_pem: &'a [u8],
}

/// How to connect. `id` changes whenever anything else here changes, so a front-end may keep
/// one client per `id`.
#[derive(Clone, Copy)]
pub struct Connection<'a> {
    /// Changes with the settings.
    pub id: u32,
    /// `https://host:port` (no trailing slash).
    pub server: &'a str,
    /// Trust exactly these CAs (PEM); `None` only with `insecure`.
    pub ca_pem: Option<&'a [u8]>,
    /// Do not verify the server (the kubeconfig's `insecure-skip-tls-verify`, or the first
    /// discovery fetch).
    pub insecure: bool,
    /// Verify the server certificate for this name instead of the URL's host
    /// (`tls-server-name`).
    pub server_name: Option<&'a str>,
    /// Present this client certificate.
    pub client_certificate: Option<ClientCertificate<'a>>,
}

impl core::fmt::Debug for Connection<'_> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("Connection")
            .field("id", &self.id)
            .field("server", &self.server)
            .field("ca_pem_len", &self.ca_pem.map(<[u8]>::len))
            .field("insecure", &self.insecure)
            .field("server_name", &self.server_name)
            .field("client_certificate", &self.client_certificate.is_some())
            .finish()
    }
}

/// An HTTP request to send.
#[derive(Clone, Copy)]
pub struct HttpRequest<'a> {
    /// Where and how.
    pub connection: Connection<'a>,
    /// What for.
    pub kind: RequestKind,
    /// GET or POST.
    pub method: Method,
    /// Path and query.
    pub path: &'a str,
    /// `Authorization` header (secret), if any.
    pub authorization: Option<&'a str>,
    /// `Content-Type` of the body, if any.
    pub content_type: Option<&'static str>,
    /// `Accept`.
    pub accept: &'static str,
    /// The body.
    pub body: &'a [u8],
    /// `User-Agent`.
    pub user_agent: &'a str,
    /// Give up at this time (unix seconds) and report [`Agent::on_transport_error`].
    pub give_up_at: i64,
    /// A watch: if the stream is still open and nothing arrived by this time, call
    /// [`Agent::on_stream_idle`] (the agent reports progress without ending the watch), then
    /// keep reading; `None`: never.
    pub idle_at: Option<i64>,
}

impl core::fmt::Debug for HttpRequest<'_> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("HttpRequest")
            .field("connection", &self.connection)
            .field("kind", &self.kind)
            .field("method", &self.method)
            .field("path", &self.path)
            .field("authorization", &self.authorization.map(|_| "<redacted>"))
            .field("body_len", &self.body.len())
            .field("give_up_at", &self.give_up_at)
            .field("idle_at", &self.idle_at)
            .finish()
    }
}

/// A step to print: `line` is the whole line (`agent=<fe> step=<step> ...`).
#[derive(Clone, Copy, Debug)]
pub struct Event<'a> {
    /// The step (`create`, `wait`, `issued`, ...).
    pub step: &'static str,
    /// The line to print.
    pub line: &'a str,
    /// The line is progress on the step of the previous event (a long wait's `step=wait` again,
    /// with the time waited): on a terminal, overwrite the previous line with it; in a log, print
    /// it as any other.
    pub update: bool,
    /// The credentials are usable and the agent sleeps until the next deadline or is done
    /// (`step=sleep`, `step=done`): a service is ready (systemd's `READY=1`) at the first.
    pub ready: bool,
}

/// The state of one certificate.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CertStatus {
    /// The leaf's notBefore (unix seconds).
    pub not_before: i64,
    /// The leaf's notAfter.
    pub not_after: i64,
    /// When it is due for rotation.
    pub rotation_deadline: i64,
}

/// What [`Action::Done`] reports.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Outcome {
    /// The client certificate (always usable at `Done`).
    pub client: Option<CertStatus>,
    /// The serving certificate, when configured.
    pub serving: Option<CertStatus>,
}

/// Where a credential came from ([`Status`]).
#[non_exhaustive]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Origin<'a> {
    /// Nothing was found (the kubeconfig or the file is missing, or names none).
    None,
    /// Inline in the kubeconfig (`*-data`).
    Data,
    /// A file (absolute path).
    File(&'a str),
}

/// Why a certificate is not usable ([`Status`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Unusable {
    /// The typed reason (`StoreErrorKind::NotFound` when there is none).
    pub error: Error,
    /// The part it is about: `kubeconfig`, `certificate-authority`, `client-certificate`,
    /// `client-key` or `serving-certificate`.
    pub what: &'static str,
}

/// The verdict on one certificate of the node and what it was made from ([`Status`]).
#[derive(Clone, Copy, Debug)]
pub struct CertCheck<'a> {
    /// Valid (with its validity and rotation deadline), or why not.
    pub verdict: core::result::Result<CertStatus, Unusable>,
    /// The certificate chain as read (PEM `CERTIFICATE` blocks; empty if none was read). A
    /// chain that does not validate is still here, to be described.
    pub chain_pem: &'a [u8],
    /// Where the certificate came from.
    pub certificate: Origin<'a>,
    /// Where its private key came from (a file, inline data; a device reference once keys can
    /// live in one).
    pub key: Origin<'a>,
}

/// What [`Mode::Check`] found ([`Agent::status`]).
#[derive(Clone, Copy, Debug)]
pub struct Status<'a> {
    /// The node name, from the configuration or the client certificate (empty if neither).
    pub node: &'a str,
    /// The client certificate.
    pub client: CertCheck<'a>,
    /// The serving certificate.
    pub serving: CertCheck<'a>,
    /// The CA bundle certificates were validated against (PEM; the configured bundle, else the
    /// node kubeconfig's CA; empty if none was read).
    pub ca_pem: &'a [u8],
    /// Where the CA bundle came from.
    pub ca: Origin<'a>,
}

/// Something to do with the device that holds the node key ([`Config::key_device`], or the
/// holder of the current key's reference: [`crate::keyref::Holder::of_pem`] tells which). A
/// key reference is a PEM block (`TSS2 PRIVATE KEY` or `PKCS#11 PROVIDER URI`, see
/// [`crate::keyref`]). Errors are answered as text naming the device (`tpm swtpm:path=...:
/// connection refused`), never with a secret in it.
#[non_exhaustive]
#[derive(Clone, Copy, Debug)]
pub enum KeyOp<'a> {
    /// Load the key and tell its public point: answer [`Agent::on_key_public`].
    Public {
        /// The key reference.
        key: &'a [u8],
    },
    /// Make a new ECDSA P-256 signing key in `device` that never leaves it (PKCS#11:
    /// `CKA_SENSITIVE`, not `CKA_EXTRACTABLE`, labelled `label`; TPM: an unrestricted signing key
    /// under the storage key, `fixedTPM|fixedParent|sensitiveDataOrigin`): answer
    /// [`Agent::on_key_generated`] with its reference and public point.
    Generate {
        /// The device ([`crate::keyref::Device`] text).
        device: &'a str,
        /// A name unique to this key (`kubelet-client-<timestamp>`; PKCS#11 `CKA_LABEL`).
        label: &'a str,
    },
    /// Sign `message` with ECDSA P-256 over its SHA-256 digest: answer [`Agent::on_signature`]
    /// with `r || s`.
    Sign {
        /// The key reference.
        key: &'a [u8],
        /// The bytes to sign (a CSR's `CertificationRequestInfo`; not secret).
        message: &'a [u8],
    },
    /// An attested bootstrap ([`super::Config::attestation`]): `TPM2_Certify` of the TPM key
    /// by the TPM's attestation key over `qualifying` (the CSR's
    /// [`crate::attest::qualifying_data`]): answer [`Agent::on_certified`] with the
    /// `TPMS_ATTEST` and `TPMT_SIGNATURE` as the TPM marshals them.
    Certify {
        /// The key reference (a `TSS2 PRIVATE KEY`).
        key: &'a [u8],
        /// The qualifying data.
        qualifying: &'a [u8; 32],
    },
    /// Destroy the key (PKCS#11: the private and public objects; TPM: nothing is left to
    /// destroy, the blob file goes with its pair file): answer [`Agent::on_key_destroyed`].
    Destroy {
        /// The key reference.
        key: &'a [u8],
    },
}

impl KeyOp<'_> {
    /// `public`, `generate`, `sign`, `certify`, `destroy`.
    pub fn name(&self) -> &'static str {
        match self {
            KeyOp::Public { .. } => "public",
            KeyOp::Generate { .. } => "generate",
            KeyOp::Sign { .. } => "sign",
            KeyOp::Certify { .. } => "certify",
            KeyOp::Destroy { .. } => "destroy",
        }
    }
}

/// Why the agent stopped.
#[derive(Clone, Copy, Debug)]
pub struct Failure<'a> {
    /// The typed reason.
    pub error: Error,
    /// What it was doing and the server's reason and message, if any.
    pub detail: &'a str,
    /// The line to print (`agent=<fe> step=failed reason=<name> code=<code> detail="..."`).
    pub line: &'a str,
}

/// What to do next; see the [module docs](super).
#[non_exhaustive]
#[derive(Debug)]
pub enum Action<'a> {
    /// Read a file; answer [`Agent::on_read`].
    Read(Read<'a>),
    /// Change a file; answer [`Agent::on_file_done`].
    File(FileStep<'a>),
    /// Give `len` bytes from a CSPRNG to [`Agent::on_entropy`] (a new private key).
    Entropy {
        /// How many bytes.
        len: usize,
    },
    /// Use the device that holds the node key; answer the `on_key_*` call [`KeyOp`] names.
    Key(KeyOp<'a>),
    /// Send a request; answer [`Agent::on_http_response`] (or the stream calls) or
    /// [`Agent::on_transport_error`].
    Http(HttpRequest<'a>),
    /// Nothing to do before `until` (unix seconds): sleep, then `poll`.
    Sleep {
        /// Unix seconds.
        until: i64,
    },
    /// Print this line, then `poll`.
    Event(Event<'a>),
    /// Finished ([`Mode::Once`], or [`Mode::Run`] after its rotations).
    Done(Outcome),
    /// Stopped for good.
    Failed(Failure<'a>),
}

#[cfg(test)]
mod tests {
    use super::FileStep;

    #[test]
    fn recover_paths_are_the_store_links() {
        let step = FileStep::Recover { dir: "/var/lib/kubelet/pki", prefix: "kubelet-client" };
        let (current, updated) = step.recover_paths::<64>().unwrap();
        assert_eq!(current.as_str(), "/var/lib/kubelet/pki/kubelet-client-current.pem");
        assert_eq!(updated.as_str(), "/var/lib/kubelet/pki/kubelet-client-updated.pem");
        let root = FileStep::Recover { dir: "/", prefix: "kubelet-server" };
        assert_eq!(root.recover_paths::<64>().unwrap().0.as_str(), "/kubelet-server-current.pem");
        // Too long for the capacity, or another step: none.
        assert!(step.recover_paths::<40>().is_none());
        assert!(FileStep::CreateDir { path: "/x" }.recover_paths::<64>().is_none());
    }
}
