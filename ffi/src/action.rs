//! What [`crate::agent::kubeboot_agent_poll`] hands the front-end: one tagged union,
//! [`kubeboot_action`], whose `kind` says which member of `of` is meaningful. Every field has
//! one meaning; text is a [`kubeboot_str`] and bytes a [`kubeboot_bytes`] (neither
//! NUL-terminated), valid until the next call on the agent.

use core::ffi::c_char;
use core::ptr::null;

use kb::agent::{
    Action, CertStatus, FileRole, FileStep, HttpRequest, KeyOp, Method, Outcome, RequestKind,
};

use crate::csr::kubeboot_str;
use crate::error::kubeboot_result;

/// Bytes borrowed from the agent (`data` NULL when `len` is 0).
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct kubeboot_bytes {
    /// The bytes.
    pub data: *const u8,
    /// Their number.
    pub len: usize,
}

pub(crate) fn bytes(b: &[u8]) -> kubeboot_bytes {
    if b.is_empty() {
        kubeboot_bytes { data: null(), len: 0 }
    } else {
        kubeboot_bytes { data: b.as_ptr(), len: b.len() }
    }
}

pub(crate) fn text(s: &str) -> kubeboot_str {
    if s.is_empty() {
        kubeboot_str { data: null(), len: 0 }
    } else {
        kubeboot_str { data: s.as_ptr().cast::<c_char>(), len: s.len() }
    }
}

const NO_TEXT: kubeboot_str = kubeboot_str { data: null(), len: 0 };
const NO_BYTES: kubeboot_bytes = kubeboot_bytes { data: null(), len: 0 };

/// Which member of [`kubeboot_action::of`] is meaningful.
#[repr(u32)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum kubeboot_action_kind {
    /// `of.read`: read the whole file; answer `kubeboot_agent_on_read`.
    Read = 0,
    /// `of.file`: change a file; answer `kubeboot_agent_on_file_done`.
    File = 1,
    /// `of.entropy`: bytes from a CSPRNG; answer `kubeboot_agent_on_entropy`.
    Entropy = 2,
    /// `of.key`: use the device that holds the node key; answer the `kubeboot_agent_on_key_*`
    /// call its `op` names, or `kubeboot_agent_on_key_error`.
    Key = 3,
    /// `of.http`: send the HTTPS request; answer `kubeboot_agent_on_http_response` (a 200 watch:
    /// `kubeboot_agent_on_stream_data` per chunk, then `kubeboot_agent_on_stream_end`) or
    /// `kubeboot_agent_on_transport_error`.
    Http = 4,
    /// `of.sleep`: nothing to do before `until`.
    Sleep = 5,
    /// `of.event`: print the line.
    Event = 6,
    /// `of.done`: finished (exit 0).
    Done = 7,
    /// `of.failed`: stopped for good (print the line, exit 1).
    Failed = 8,
}

/// What a file read is for.
#[repr(u32)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum kubeboot_file_role {
    /// The node kubeconfig.
    Kubeconfig = 0,
    /// The bootstrap kubeconfig.
    BootstrapKubeconfig = 1,
    /// A kubeconfig's `certificate-authority` file.
    ClusterCa = 2,
    /// The configured CA bundle.
    CaBundle = 3,
    /// The node kubeconfig's `client-certificate` file.
    ClientCertificate = 4,
    /// The node kubeconfig's `client-key` file.
    ClientKey = 5,
    /// The bootstrap kubeconfig's `tokenFile`.
    TokenFile = 6,
    /// The bootstrap key cache.
    KeyCache = 7,
    /// The serving pair.
    ServingPair = 8,
}

/// `KUBEBOOT_ACTION_KIND_READ`: read the whole file at `path` (following symlinks); answer with
/// its bytes, `KUBEBOOT_RESULT_STORE_NOT_FOUND`, `KUBEBOOT_RESULT_STORE_FILE_TOO_LARGE` beyond
/// `max_len` bytes, or another `KUBEBOOT_RESULT_STORE_*`.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct kubeboot_read {
    /// The absolute, clean path.
    pub path: kubeboot_str,
    /// What it is.
    pub role: kubeboot_file_role,
    /// Larger files are too large.
    pub max_len: usize,
}

/// The file steps (see [`kubeboot_file_step`] for what each must do).
#[repr(u32)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum kubeboot_file_step_kind {
    /// Open the store `<path>/<prefix>-*.pem` as client-go's `NewFileStore` does (an interrupted
    /// swap recovered, stale temporary files removed); a missing directory is
    /// `KUBEBOOT_RESULT_STORE_NOT_FOUND`.
    Recover = 0,
    /// Create the directory `path` (mode 0700, parents as needed).
    CreateDir = 1,
    /// Write the key cache `path` (`data`: a key or its reference; secret) atomically, 0600.
    WriteKeyCache = 2,
    /// Write the data file `path` (`data`: chain then key; secret) atomically, 0600, and read it
    /// back: it must equal `data` (`KUBEBOOT_RESULT_STORE_READ_BACK_MISMATCH`).
    WritePair = 3,
    /// Symlink `updated` → `target` (absolute), renamed over `path` (`-current.pem`); `path` or
    /// `updated` existing as something else than a symlink is an error and nothing changes.
    SwapCurrent = 4,
    /// Write the node kubeconfig `path` (`data`) atomically, 0600.
    WriteKubeconfig = 5,
    /// Write the discovered bootstrap kubeconfig `path` (`data`, holds the token: secret)
    /// atomically, 0600.
    WriteBootstrapKubeconfig = 6,
    /// Remove the key cache `path` (a missing file is success).
    RemoveKeyCache = 7,
    /// Remove the directory `path` if it is empty.
    RemoveDir = 8,
    /// Write the node's CA file `path` (`data`: PEM certificates, not secret) atomically.
    WriteCa = 9,
    /// Remove the store's replaced pairs: every regular file `<path>/<prefix>-YYYY-MM-DD-HH-MM-SS.pem`
    /// (digits where the layout has them) other than `target`, then sync the
    /// directory. Nothing else is touched; a file that cannot be removed does not stop the others.
    PrunePairs = 10,
}

/// `KUBEBOOT_ACTION_KIND_FILE`: a change to the node's files, in the order the agent gives them.
/// Every write is atomic and durable: a temporary file in the same directory, `fsync`, rename,
/// `fsync` of the directory (`kubeboot_agent_perform_file_action` does exactly this).
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct kubeboot_file_step {
    /// Which step.
    pub step: kubeboot_file_step_kind,
    /// The step's name (`write-pair`, ...), for messages.
    pub name: kubeboot_str,
    /// The file or directory the step changes.
    pub path: kubeboot_str,
    /// What a write writes (empty for the others).
    pub data: kubeboot_bytes,
    /// `data` is secret (a key, a token): never print it.
    pub secret: bool,
    /// [`kubeboot_file_step_kind::Recover`], [`kubeboot_file_step_kind::PrunePairs`]: the
    /// store's prefix (`kubelet-client`, `kubelet-server`); empty otherwise.
    pub prefix: kubeboot_str,
    /// [`kubeboot_file_step_kind::SwapCurrent`]: the `-updated.pem` symlink; empty otherwise.
    pub updated: kubeboot_str,
    /// [`kubeboot_file_step_kind::SwapCurrent`]: the data file the link points at;
    /// [`kubeboot_file_step_kind::PrunePairs`]: the data file to keep; empty otherwise.
    pub target: kubeboot_str,
}

/// `KUBEBOOT_ACTION_KIND_ENTROPY`: `len` bytes from a CSPRNG (a new private key).
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct kubeboot_entropy {
    /// How many bytes.
    pub len: usize,
}

/// What a device operation is.
#[repr(u32)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum kubeboot_key_op_kind {
    /// Load the key `key_ref` names and tell its public point.
    Public = 0,
    /// Make a P-256 signing key that never leaves `device`, named `label`.
    Generate = 1,
    /// ECDSA P-256 over SHA-256 of `message` with `key_ref`'s key.
    Sign = 2,
    /// Destroy `key_ref`'s key (PKCS#11: both objects; TPM: nothing to destroy).
    Destroy = 3,
    /// An attested bootstrap: `TPM2_Certify` of `key_ref`'s TPM key by the TPM's attestation
    /// key over the 32 bytes of `message` (the qualifying data).
    Certify = 4,
}

/// Who holds a key.
#[repr(u32)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum kubeboot_key_holder {
    /// A key in memory (PEM).
    Software = 0,
    /// A TPM (a `TSS2 PRIVATE KEY` blob).
    Tpm = 1,
    /// A PKCS#11 token (a `PKCS#11 PROVIDER URI` block).
    Pkcs11 = 2,
}

pub(crate) fn holder_of(pem: &[u8]) -> kubeboot_key_holder {
    holder(kb::keyref::Holder::of_pem(pem).ok())
}

pub(crate) fn holder(h: Option<kb::keyref::Holder>) -> kubeboot_key_holder {
    match h {
        Some(kb::keyref::Holder::Tpm) => kubeboot_key_holder::Tpm,
        Some(kb::keyref::Holder::Pkcs11) => kubeboot_key_holder::Pkcs11,
        _ => kubeboot_key_holder::Software,
    }
}

/// `KUBEBOOT_ACTION_KIND_KEY`: something to do with the device that holds the node key.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct kubeboot_key_action {
    /// The operation.
    pub op: kubeboot_key_op_kind,
    /// The device's kind (of `key_ref`, or of `device` for a new key).
    pub holder: kubeboot_key_holder,
    /// The key's reference (PUBLIC, SIGN, DESTROY): a `TSS2 PRIVATE KEY` or
    /// `PKCS#11 PROVIDER URI` PEM block.
    pub key_ref: kubeboot_bytes,
    /// GENERATE: the device (`tpm`, or a `pkcs11:` URI of the token).
    pub device: kubeboot_str,
    /// GENERATE: the new key's name (`kubelet-client-<timestamp>`; PKCS#11 `CKA_LABEL`).
    pub label: kubeboot_str,
    /// SIGN: the bytes to sign (not secret).
    pub message: kubeboot_bytes,
}

/// What a request is for.
#[repr(u32)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum kubeboot_request_kind {
    /// `GET /healthz` before bootstrapping.
    Healthz = 0,
    /// `GET` of `kube-public/cluster-info` (discovery and the CA refresh; anonymous).
    ClusterInfo = 1,
    /// List the ClusterTrustBundles of the apiserver's serving signer (the CA refresh).
    TrustBundles = 2,
    /// `GET /healthz` trusting only a new CA bundle (the CA refresh): any HTTP answer proves it,
    /// a failed handshake is a transport error.
    CaProbe = 3,
    /// Create the CSR.
    Create = 4,
    /// GET the CSR.
    Get = 5,
    /// Watch the CSR: with status 200 the body is a stream (while it is open and quiet past
    /// `idle_at`, call `kubeboot_agent_on_stream_idle`).
    Watch = 6,
    /// `POST` a `SelfSubjectReview` presenting the client certificate: who the apiserver takes
    /// it for (the agent's probe).
    SelfSubjectReview = 7,
}

/// How to connect; `id` changes whenever anything else here does (keep one client per `id`).
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct kubeboot_connection {
    /// Changes with the settings.
    pub id: u32,
    /// `https://host:port`.
    pub server: kubeboot_str,
    /// Trust exactly these CAs (PEM); empty only with `insecure`.
    pub ca_pem: kubeboot_bytes,
    /// Do not verify the server.
    pub insecure: bool,
    /// Verify the server for this name instead of the URL's host; empty: the URL's.
    pub server_name: kubeboot_str,
    /// Present this client certificate chain (PEM); empty: none.
    pub client_cert_pem: kubeboot_bytes,
    /// Its key (PEM, secret), or the reference of a key a device holds.
    pub client_key_pem: kubeboot_bytes,
    /// Who holds the client key (a device signs the handshake).
    pub client_key_holder: kubeboot_key_holder,
}

/// `KUBEBOOT_ACTION_KIND_HTTP`: an HTTPS request to send.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct kubeboot_http_request {
    /// Where and how.
    pub connection: kubeboot_connection,
    /// What for.
    pub kind: kubeboot_request_kind,
    /// `GET` or `POST`.
    pub method: kubeboot_str,
    /// Path and query.
    pub path: kubeboot_str,
    /// The `Authorization` header (secret); empty: none.
    pub authorization: kubeboot_str,
    /// The body's `Content-Type`; empty: none.
    pub content_type: kubeboot_str,
    /// `Accept`.
    pub accept: kubeboot_str,
    /// The body.
    pub body: kubeboot_bytes,
    /// `User-Agent`.
    pub user_agent: kubeboot_str,
    /// Give up at this time (unix seconds) and answer `kubeboot_agent_on_transport_error`.
    pub give_up_at: i64,
    /// A watch: if the stream is open and nothing arrived by this time, call
    /// `kubeboot_agent_on_stream_idle` (the agent reports progress) and keep reading; 0: never.
    pub idle_at: i64,
}

/// `KUBEBOOT_ACTION_KIND_SLEEP`.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct kubeboot_sleep {
    /// Unix seconds.
    pub until: i64,
}

/// `KUBEBOOT_ACTION_KIND_EVENT`: a line to print (`agent=<fe> step=<step> ...`, or JSON).
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct kubeboot_event {
    /// The step (`create`, `wait`, ...).
    pub step: kubeboot_str,
    /// The line.
    pub line: kubeboot_str,
    /// Progress on the previous line's step: on a terminal, overwrite that line.
    pub update: bool,
    /// The credentials are usable and the agent sleeps or is done: a service is ready
    /// (systemd's `READY=1`) at the first.
    pub ready: bool,
}

/// One certificate's state.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
pub struct kubeboot_cert_status {
    /// There is such a certificate (the others are 0 when not).
    pub present: bool,
    /// notBefore (unix seconds).
    pub not_before: i64,
    /// notAfter.
    pub not_after: i64,
    /// When it is due for rotation.
    pub rotation_deadline: i64,
}

fn status(c: Option<CertStatus>) -> kubeboot_cert_status {
    match c {
        Some(c) => kubeboot_cert_status {
            present: true,
            not_before: c.not_before,
            not_after: c.not_after,
            rotation_deadline: c.rotation_deadline,
        },
        None => kubeboot_cert_status::default(),
    }
}

/// `KUBEBOOT_ACTION_KIND_DONE`.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct kubeboot_done {
    /// The client certificate.
    pub client: kubeboot_cert_status,
    /// The serving certificate, when configured.
    pub serving: kubeboot_cert_status,
}

/// `KUBEBOOT_ACTION_KIND_FAILED`.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct kubeboot_failure {
    /// The typed reason.
    pub result: kubeboot_result,
    /// What it was doing, and the server's reason and message, if any.
    pub detail: kubeboot_str,
    /// The line to print.
    pub line: kubeboot_str,
}

/// The members of [`kubeboot_action`]: the one `kind` names is meaningful.
#[repr(C)]
#[derive(Clone, Copy)]
pub union kubeboot_action_of {
    /// `KUBEBOOT_ACTION_KIND_READ`.
    pub read: kubeboot_read,
    /// `KUBEBOOT_ACTION_KIND_FILE`.
    pub file: kubeboot_file_step,
    /// `KUBEBOOT_ACTION_KIND_ENTROPY`.
    pub entropy: kubeboot_entropy,
    /// `KUBEBOOT_ACTION_KIND_KEY`.
    pub key: kubeboot_key_action,
    /// `KUBEBOOT_ACTION_KIND_HTTP`.
    pub http: kubeboot_http_request,
    /// `KUBEBOOT_ACTION_KIND_SLEEP`.
    pub sleep: kubeboot_sleep,
    /// `KUBEBOOT_ACTION_KIND_EVENT`.
    pub event: kubeboot_event,
    /// `KUBEBOOT_ACTION_KIND_DONE`.
    pub done: kubeboot_done,
    /// `KUBEBOOT_ACTION_KIND_FAILED`.
    pub failed: kubeboot_failure,
}

/// What to do next: `kind` and the member of `of` it names.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct kubeboot_action {
    /// Which member of `of` is meaningful.
    pub kind: kubeboot_action_kind,
    /// The action.
    pub of: kubeboot_action_of,
}

impl core::fmt::Debug for kubeboot_action {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("kubeboot_action").field("kind", &self.kind).finish_non_exhaustive()
    }
}

fn role(r: FileRole) -> kubeboot_file_role {
    match r {
        FileRole::Kubeconfig => kubeboot_file_role::Kubeconfig,
        FileRole::BootstrapKubeconfig => kubeboot_file_role::BootstrapKubeconfig,
        FileRole::ClusterCa => kubeboot_file_role::ClusterCa,
        FileRole::CaBundle => kubeboot_file_role::CaBundle,
        FileRole::ClientCertificate => kubeboot_file_role::ClientCertificate,
        FileRole::ClientKey => kubeboot_file_role::ClientKey,
        FileRole::TokenFile => kubeboot_file_role::TokenFile,
        FileRole::KeyCache => kubeboot_file_role::KeyCache,
        _ => kubeboot_file_role::ServingPair,
    }
}

pub(crate) fn file_step(step: &FileStep<'_>) -> kubeboot_file_step {
    use kubeboot_file_step_kind as K;
    let mut x = kubeboot_file_step {
        step: K::Recover,
        name: text(step.name()),
        path: text(step.path()),
        data: NO_BYTES,
        secret: false,
        prefix: NO_TEXT,
        updated: NO_TEXT,
        target: NO_TEXT,
    };
    match *step {
        FileStep::Recover { prefix, .. } => x.prefix = text(prefix),
        FileStep::CreateDir { .. } => x.step = K::CreateDir,
        FileStep::WriteKeyCache { pem, .. } => {
            (x.step, x.data, x.secret) = (K::WriteKeyCache, bytes(pem), true);
        }
        FileStep::WritePair { content, .. } => {
            (x.step, x.data, x.secret) = (K::WritePair, bytes(content), true);
        }
        FileStep::SwapCurrent { updated, target, .. } => {
            (x.step, x.updated, x.target) = (K::SwapCurrent, text(updated), text(target));
        }
        FileStep::WriteKubeconfig { content, .. } => {
            (x.step, x.data) = (K::WriteKubeconfig, bytes(content));
        }
        FileStep::WriteCa { content, .. } => (x.step, x.data) = (K::WriteCa, bytes(content)),
        FileStep::WriteBootstrapKubeconfig { content, .. } => {
            (x.step, x.data, x.secret) = (K::WriteBootstrapKubeconfig, bytes(content), true);
        }
        FileStep::RemoveKeyCache { .. } => x.step = K::RemoveKeyCache,
        FileStep::PrunePairs { prefix, keep, .. } => {
            (x.step, x.prefix, x.target) = (K::PrunePairs, text(prefix), text(keep));
        }
        _ => x.step = K::RemoveDir,
    }
    x
}

pub(crate) fn key_action(op: &KeyOp<'_>) -> kubeboot_key_action {
    use kubeboot_key_op_kind as K;
    let mut x = kubeboot_key_action {
        op: K::Public,
        holder: kubeboot_key_holder::Software,
        key_ref: NO_BYTES,
        device: NO_TEXT,
        label: NO_TEXT,
        message: NO_BYTES,
    };
    match *op {
        KeyOp::Public { key } => (x.holder, x.key_ref) = (holder_of(key), bytes(key)),
        KeyOp::Generate { device, label } => {
            x.op = K::Generate;
            x.holder = holder(kb::keyref::Device::parse(device).ok().map(|d| d.holder()));
            (x.device, x.label) = (text(device), text(label));
        }
        KeyOp::Sign { key, message } => {
            x.op = K::Sign;
            (x.holder, x.key_ref, x.message) = (holder_of(key), bytes(key), bytes(message));
        }
        KeyOp::Destroy { key } => {
            x.op = K::Destroy;
            (x.holder, x.key_ref) = (holder_of(key), bytes(key));
        }
        KeyOp::Certify { key, qualifying } => {
            x.op = K::Certify;
            (x.holder, x.key_ref, x.message) = (holder_of(key), bytes(key), bytes(qualifying));
        }
        _ => x.op = K::Public,
    }
    x
}

fn request_kind(k: RequestKind) -> kubeboot_request_kind {
    use kubeboot_request_kind as K;
    match k {
        RequestKind::Healthz => K::Healthz,
        RequestKind::ClusterInfo => K::ClusterInfo,
        RequestKind::TrustBundles => K::TrustBundles,
        RequestKind::CaProbe => K::CaProbe,
        RequestKind::Create => K::Create,
        RequestKind::Get => K::Get,
        RequestKind::SelfSubjectReview => K::SelfSubjectReview,
        _ => K::Watch,
    }
}

fn http(r: &HttpRequest<'_>) -> kubeboot_http_request {
    let c = r.connection;
    let (cert, key) = c
        .client_certificate
        .map_or((NO_BYTES, NO_BYTES), |cc| (bytes(cc.chain_pem), bytes(cc.key_pem)));
    kubeboot_http_request {
        connection: kubeboot_connection {
            id: c.id,
            server: text(c.server),
            ca_pem: c.ca_pem.map_or(NO_BYTES, bytes),
            insecure: c.insecure,
            server_name: c.server_name.map_or(NO_TEXT, text),
            client_cert_pem: cert,
            client_key_pem: key,
            client_key_holder: c
                .client_certificate
                .map_or(kubeboot_key_holder::Software, |cc| holder_of(cc.key_pem)),
        },
        kind: request_kind(r.kind),
        method: text(match r.method {
            Method::Get => "GET",
            Method::Post => "POST",
        }),
        path: text(r.path),
        authorization: r.authorization.map_or(NO_TEXT, text),
        content_type: r.content_type.map_or(NO_TEXT, text),
        accept: text(r.accept),
        body: bytes(r.body),
        user_agent: text(r.user_agent),
        give_up_at: r.give_up_at,
        idle_at: r.idle_at.unwrap_or(0),
    }
}

fn done(o: &Outcome) -> kubeboot_done {
    kubeboot_done { client: status(o.client), serving: status(o.serving) }
}

/// The C form of an event.
pub(crate) fn event(e: &kb::agent::Event<'_>) -> kubeboot_event {
    kubeboot_event { step: text(e.step), line: text(e.line), update: e.update, ready: e.ready }
}

/// The C form of an action.
pub(crate) fn action(a: &Action<'_>) -> kubeboot_action {
    use kubeboot_action_kind as K;
    let (kind, of) = match a {
        Action::Read(r) => (
            K::Read,
            kubeboot_action_of {
                read: kubeboot_read { path: text(r.path), role: role(r.role), max_len: r.max_len },
            },
        ),
        Action::File(step) => (K::File, kubeboot_action_of { file: file_step(step) }),
        Action::Entropy { len } => {
            (K::Entropy, kubeboot_action_of { entropy: kubeboot_entropy { len: *len } })
        }
        Action::Key(op) => (K::Key, kubeboot_action_of { key: key_action(op) }),
        Action::Http(r) => (K::Http, kubeboot_action_of { http: http(r) }),
        Action::Sleep { until } => {
            (K::Sleep, kubeboot_action_of { sleep: kubeboot_sleep { until: *until } })
        }
        Action::Event(e) => (K::Event, kubeboot_action_of { event: event(e) }),
        Action::Done(o) => (K::Done, kubeboot_action_of { done: done(o) }),
        Action::Failed(f) => (
            K::Failed,
            kubeboot_action_of {
                failed: kubeboot_failure {
                    result: f.error.into(),
                    detail: text(f.detail),
                    line: text(f.line),
                },
            },
        ),
        _ => (
            K::Failed,
            kubeboot_action_of {
                failed: kubeboot_failure {
                    result: kubeboot_result::InvalidState,
                    detail: NO_TEXT,
                    line: NO_TEXT,
                },
            },
        ),
    };
    kubeboot_action { kind, of }
}
