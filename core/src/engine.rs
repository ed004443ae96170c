//! The bootstrap / rotation protocol as a sans-IO state machine (the quinn-proto model).
//!
//! The engine never touches a socket, a clock or an RNG, and it borrows nothing: it owns a copy of
//! its configuration (node name, SANs, CA bundle, bearer token, CSR) in fixed-capacity storage, so
//! a C or firmware caller can keep one in a static. The caller:
//!
//! 1. starts an [`Engine`] with a [`Config`], a [`P256Signer`] (the node key: it signs the CSR
//!    during [`Engine::start`] and is not kept), `now` and a seed for backoff jitter;
//! 2. calls [`Engine::poll`] with the current time; it answers with an [`Action`]: a [`Request`]
//!    to send (method, path with query, `Authorization` header, JSON body), a time to wait until,
//!    the validated certificate ([`Action::Done`]) or a typed failure ([`Action::Failed`]);
//! 3. feeds the outcome of the request back: [`Engine::on_response`] (status + whole body); for
//!    a [`RequestKind::Watch`] with status 200, [`Engine::on_stream_data`] for every chunk (it
//!    answers [`StreamControl::Close`] when the engine needs no more of the stream) and
//!    [`Engine::on_stream_end`] when the server ends it; [`Engine::on_transport_error`] when no
//!    (complete) response arrived.
//!
//! Failures have one channel: the `on_*` methods return nothing (or a [`StreamControl`]); what
//! went wrong comes out of the next [`Engine::poll`] as [`Action::Failed`], with the server's
//! reason and message in [`Engine::failure`]. Input that arrives when no request is outstanding
//! is ignored and changes nothing.
//!
//! What it does (bootstrap.go LoadClientCert / requestNodeCertificate, client-go
//! util/certificate/csr/csr.go RequestCertificate and WaitForCertificate, certificate_manager.go
//! nextRotationDeadline):
//! * create the CertificateSigningRequest (`node-csr-<digest>` for bootstrap, `generateName: csr-`
//!   for rotation);
//! * on 409 AlreadyExists, GET the existing object and reuse it only if it is ours: same subject,
//!   same signer, its self-signature verifies with our public key, and any issued certificate has
//!   not expired (client-go's `ensureCompatible`, plus the key check);
//! * wait with a `fieldSelector=metadata.name=<name>` watch (events may arrive split anywhere),
//!   falling back to polling with GET when the watch cannot be used;
//! * `Denied` / `Failed` conditions, deletion and a UID change are failures carrying the server's
//!   reason and message; `Approved` plus a certificate ends the wait;
//! * the issued certificate is validated ([`crate::verify`], through the configured
//!   [`SignatureVerifier`]) against the CA bundle, our key, the node name and profile before it is
//!   handed out;
//! * 401 and 403 are failures naming the cause; 429, 5xx and transport errors are retried with the
//!   kubelet's backoff (2, 4, 8, 16 s with jitter, then every 32 s) until the wait deadline.
//!   While waiting for the CSR created with this token, a 401 is retried
//!   [`UNAUTHORIZED_RETRIES`] times first: an apiserver that has just restarted answers 401 until
//!   its bootstrap-token cache has synced (the kubelet's reflector retries such errors until its
//!   own deadline).
//!
//! Memory: everything lives inside the engine (`N` bytes of work buffer for bodies and watch
//! events, [`MAX_CERT_PEM`] bytes for the issued certificate, [`MAX_CA_PEM`] for the CA bundle).
//! No heap. [`Engine::idle`] is a `const fn`, so an engine can be placed in a static and started
//! there ([`Engine::start`]) without ever being moved through the stack.

use core::fmt;
use core::net::IpAddr;

use zeroize::Zeroize;

use crate::api::{self, CsrObject, ObjectName};
use crate::backend::{SignatureVerifier, Software};
use crate::csr::{
    CsrBuilder, MAX_CSR_DER, MAX_NODE_NAME, MAX_SANS, NODE_USER_PREFIX, NODES_GROUP, Profile,
};
use crate::error::{Error, Result};
use crate::json::{self, Object, Value};
use crate::key::{P256_SPKI_LEN, P256Signer};
use crate::request::CertificateRequest;
use crate::token::BootstrapToken;
use crate::verify::{self, Expected, Verified};
use crate::{pem, rotation};

/// Default work-buffer size: request bodies, whole responses and single watch events.
pub const DEFAULT_BUFFER: usize = 32 * 1024;
/// Largest issued certificate chain (PEM) we keep.
pub const MAX_CERT_PEM: usize = 16 * 1024;
/// Largest CA bundle (PEM) the engine keeps to validate the issued certificate against.
pub const MAX_CA_PEM: usize = 16 * 1024;
/// Longest object name / UID we keep.
pub const MAX_NAME: usize = 253;
/// Longest DNS subject alternative name.
pub const MAX_DNS_NAME: usize = 253;
/// The kubelet's bootstrap wait (path B): one hour.
pub const BOOTSTRAP_WAIT_SECS: i64 = 3600;
/// How many 401 answers in a row the wait for an already created CSR retries (with the backoff)
/// before failing with [`Error::Unauthorized`]: about 14 s, the time a restarted apiserver takes
/// to sync its bootstrap-token cache. A 401 to the create request fails at once.
pub const UNAUTHORIZED_RETRIES: u32 = 3;

/// The certificate manager's wait per rotation attempt: fifteen minutes.
pub const ROTATION_WAIT_SECS: i64 = 15 * 60;
/// Interval between GETs when polling instead of watching.
pub const POLL_INTERVAL_SECS: i64 = 5;
/// Watch requests ask the apiserver to end the stream after this long; we then watch again.
pub const WATCH_TIMEOUT_SECS: u32 = 300;
/// A watch that fails this many times in a row (without any event) makes the engine poll instead.
pub const WATCH_FAILURES_BEFORE_POLL: u32 = 3;

const MAX_CSR_PEM: usize = MAX_CSR_DER / 3 * 4 + MAX_CSR_DER / 48 + 80;
const MAX_MESSAGE: usize = 256;

/// The portable verifier, the default of [`Config::verifier`].
pub const SOFTWARE: &(dyn SignatureVerifier + Sync) = &Software;

/// How the request authenticates. The transport must present the client certificate itself in
/// the `ClientCertificate` case (the engine only says so).
#[derive(Clone, Copy)]
pub enum Auth<'a> {
    /// `Authorization: Bearer <id>.<secret>` (bootstrap).
    Token(&'a BootstrapToken),
    /// The current client certificate, presented in the TLS handshake (rotation).
    ClientCertificate,
}

impl fmt::Debug for Auth<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Auth::Token(t) => write!(f, "Token({t:?})"),
            Auth::ClientCertificate => f.write_str("ClientCertificate"),
        }
    }
}

/// How the CSR object is named.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Naming {
    /// `node-csr-<digest>`, the kubelet's bootstrap (path B) name: a restart finds its own CSR.
    #[cfg(feature = "csr-name")]
    NodeCsr,
    /// `generateName: csr-` (rotation; the apiserver picks the name).
    Generate,
}

/// What to ask for and how to wait. Only read by [`Engine::start`], which copies what it needs.
#[derive(Clone, Copy)]
pub struct Config<'a> {
    /// The node name (`CN=system:node:<node_name>`).
    pub node_name: &'a str,
    /// Client or serving certificate (and the serving SANs).
    pub profile: Profile<'a>,
    /// How to authenticate.
    pub auth: Auth<'a>,
    /// How to name the CSR.
    pub naming: Naming,
    /// The CA bundle (PEM) the issued certificate must chain to (at most [`MAX_CA_PEM`] bytes).
    pub ca_pem: &'a [u8],
    /// `spec.expirationSeconds` (≥ 600), or `None` for the signer's default.
    pub expiration_seconds: Option<u32>,
    /// How long to wait for issuance, counted from the engine's start.
    pub wait_secs: i64,
    /// Watch for the CSR (the default) or poll it.
    pub watch: bool,
    /// Who checks the signatures of the issued certificate ([`SOFTWARE`] by default; e.g.
    /// `&kubeboot::backend::ring::Ring` on std hosts).
    pub verifier: &'static (dyn SignatureVerifier + Sync),
}

impl fmt::Debug for Config<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Config")
            .field("node_name", &self.node_name)
            .field("profile", &self.profile)
            .field("auth", &self.auth)
            .field("naming", &self.naming)
            .field("ca_pem_len", &self.ca_pem.len())
            .field("expiration_seconds", &self.expiration_seconds)
            .field("wait_secs", &self.wait_secs)
            .field("watch", &self.watch)
            .finish_non_exhaustive()
    }
}

impl<'a> Config<'a> {
    /// A bootstrap (path B) configuration: client certificate, token auth, `node-csr-` name,
    /// one-hour wait, watch.
    #[cfg(feature = "csr-name")]
    pub fn bootstrap(node_name: &'a str, token: &'a BootstrapToken, ca_pem: &'a [u8]) -> Self {
        Config {
            node_name,
            profile: Profile::Client,
            auth: Auth::Token(token),
            naming: Naming::NodeCsr,
            ca_pem,
            expiration_seconds: None,
            wait_secs: BOOTSTRAP_WAIT_SECS,
            watch: true,
            verifier: SOFTWARE,
        }
    }

    /// A rotation configuration: client certificate authenticated by the current certificate,
    /// `generateName: csr-`, fifteen-minute wait, watch.
    pub fn rotation(node_name: &'a str, ca_pem: &'a [u8]) -> Self {
        Config {
            node_name,
            profile: Profile::Client,
            auth: Auth::ClientCertificate,
            naming: Naming::Generate,
            ca_pem,
            expiration_seconds: None,
            wait_secs: ROTATION_WAIT_SECS,
            watch: true,
            verifier: SOFTWARE,
        }
    }
}

/// HTTP method.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Method {
    /// GET
    Get,
    /// POST
    Post,
}

impl Method {
    /// `GET` / `POST`.
    pub fn as_str(self) -> &'static str {
        match self {
            Method::Get => "GET",
            Method::Post => "POST",
        }
    }
}

/// What a request is for. A [`RequestKind::Watch`] response with status 200 is a stream: feed
/// it with [`Engine::on_stream_data`] as it arrives.
#[non_exhaustive]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RequestKind {
    /// Create the CSR.
    Create,
    /// GET the CSR by name (409 follow-up or polling).
    Get,
    /// Watch the CSR: a streaming response.
    Watch,
}

impl RequestKind {
    /// `create` / `get` / `watch`.
    pub fn as_str(self) -> &'static str {
        match self {
            RequestKind::Create => "create",
            RequestKind::Get => "get",
            RequestKind::Watch => "watch",
        }
    }
}

/// A request to send now.
pub struct Request<'e> {
    /// What the request is for.
    pub kind: RequestKind,
    /// The method.
    pub method: Method,
    /// Path and query, relative to the server URL.
    pub path: &'e str,
    /// The `Authorization` header value (`Bearer ...`) when the engine authenticates with a
    /// token; with [`Auth::ClientCertificate`] the transport presents the certificate instead.
    pub authorization: Option<&'e str>,
    /// `Content-Type` of the body, if any.
    pub content_type: Option<&'static str>,
    /// `Accept`.
    pub accept: &'static str,
    /// The body (empty for GET).
    pub body: &'e [u8],
    /// When the transport should give up on this request and report
    /// [`Engine::on_transport_error`] (unix seconds): the engine's deadline, and for a watch
    /// the server's `timeoutSeconds` plus a margin.
    pub give_up_at: i64,
}

impl fmt::Debug for Request<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Request")
            .field("kind", &self.kind)
            .field("method", &self.method)
            .field("path", &self.path)
            .field("authorization", &self.authorization.map(|_| "<redacted>"))
            .field("body_len", &self.body.len())
            .field("give_up_at", &self.give_up_at)
            .finish()
    }
}

/// The validated result.
#[derive(Debug)]
pub struct Issued<'e> {
    /// The issued certificate chain as PEM (what the apiserver returned, validated).
    pub cert_pem: &'e [u8],
    /// Validation result: validity window and the CA that issued it.
    pub verified: &'e Verified,
    /// When to rotate (70–90 % of the lifetime, jitter from the engine's seed).
    pub rotation_deadline: i64,
    /// The CSR object's name.
    pub csr_name: &'e str,
}

/// What to do next.
#[non_exhaustive]
#[derive(Debug)]
pub enum Action<'e> {
    /// Send this request; report its outcome with `on_response` / `on_stream_*` /
    /// `on_transport_error`.
    Send(Request<'e>),
    /// A request is outstanding: feed its outcome first (a transport that gives up reports
    /// [`Engine::on_transport_error`]). `until` is the request's [`Request::give_up_at`].
    AwaitResponse {
        /// Give up on the request at this time.
        until: i64,
    },
    /// Nothing to send before `until` (backoff or poll interval): call `poll` again then.
    Wait {
        /// Unix seconds.
        until: i64,
    },
    /// Done: the certificate was issued and validated.
    Done(Issued<'e>),
    /// The attempt failed for good; see [`Engine::failure`] for the server's reason and message.
    Failed(Error),
}

/// Whether a streaming transport should keep reading the watch response.
#[must_use]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum StreamControl {
    /// Keep feeding chunks as they arrive.
    Continue,
    /// Stop reading and drop the connection: the certificate arrived, the CSR failed, or the
    /// engine wants another request. Do not call [`Engine::on_stream_end`] (it would be ignored).
    Close,
}

/// What the engine is waiting on / doing.
#[non_exhaustive]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Phase {
    /// Not started ([`Engine::idle`], or after [`Engine::reset`]).
    Idle,
    /// About to create the CSR.
    Create,
    /// Create sent.
    Creating,
    /// About to GET the CSR.
    Fetch,
    /// GET sent.
    Fetching,
    /// About to watch.
    Watch,
    /// Watch stream open.
    Watching,
    /// Waiting before the next attempt (`until`).
    Backoff,
    /// Certificate issued and validated.
    Done,
    /// Failed for good.
    Failed,
}

/// Server-provided detail of a failure: the condition's or Status's reason and message.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct FailureDetail {
    /// HTTP status, when the failure came from one.
    pub status: Option<u16>,
    /// `reason` (condition reason or Status reason).
    pub reason: heapless::String<MAX_MESSAGE>,
    /// `message`.
    pub message: heapless::String<MAX_MESSAGE>,
}

impl FailureDetail {
    const fn empty() -> Self {
        FailureDetail {
            status: None,
            reason: heapless::String::new(),
            message: heapless::String::new(),
        }
    }

    /// Back to [`FailureDetail::empty`], in place.
    fn clear(&mut self) {
        let FailureDetail { status, reason, message } = self;
        *status = None;
        reason.clear();
        message.clear();
    }
}

fn push_lossy<const M: usize>(dst: &mut heapless::String<M>, s: &str) {
    dst.clear();
    for c in s.chars() {
        if dst.push(c).is_err() {
            break;
        }
    }
}

/// A tiny deterministic PRNG (SplitMix64) for backoff and rotation jitter, seeded by the caller.
#[derive(Clone, Debug)]
pub(crate) struct Jitter(pub(crate) u64);

impl Jitter {
    pub(crate) fn next_u32(&mut self) -> u32 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        (z ^ (z >> 31)) as u32
    }
}

/// The engine's copy of its [`Config`].
struct Owned {
    node_name: heapless::String<MAX_NODE_NAME>,
    serving: bool,
    dns: heapless::Vec<heapless::String<MAX_DNS_NAME>, MAX_SANS>,
    ips: heapless::Vec<IpAddr, MAX_SANS>,
    naming: Naming,
    ca: heapless::Vec<u8, MAX_CA_PEM>,
    expiration_seconds: Option<u32>,
    /// `None` is [`SOFTWARE`] (no reference in the idle state: see [`Engine::reset`]).
    verifier: Option<&'static (dyn SignatureVerifier + Sync)>,
}

impl Owned {
    const fn empty() -> Self {
        Owned {
            node_name: heapless::String::new(),
            serving: false,
            dns: heapless::Vec::new(),
            ips: heapless::Vec::new(),
            naming: Naming::Generate,
            ca: heapless::Vec::new(),
            expiration_seconds: None,
            verifier: None,
        }
    }

    /// Back to [`Owned::empty`], in place.
    fn clear(&mut self) {
        let Owned { node_name, serving, dns, ips, naming, ca, expiration_seconds, verifier } = self;
        node_name.clear();
        *serving = false;
        dns.clear();
        ips.clear();
        *naming = Naming::Generate;
        ca.clear();
        *expiration_seconds = None;
        *verifier = None;
    }

    fn signer_name(&self) -> &'static str {
        if self.serving { api::SIGNER_SERVING } else { api::SIGNER_CLIENT }
    }

    fn usages(&self) -> &'static [&'static str] {
        if self.serving { &api::USAGES_SERVING_EC } else { &api::USAGES_CLIENT_EC }
    }

    /// The profile, borrowing the owned SANs through `refs`.
    fn profile<'r>(&'r self, refs: &'r mut [&'r str; MAX_SANS]) -> Profile<'r> {
        if !self.serving {
            return Profile::Client;
        }
        for (slot, d) in refs.iter_mut().zip(self.dns.iter()) {
            *slot = d.as_str();
        }
        Profile::Serving { dns: refs.get(..self.dns.len()).unwrap_or(&[]), ips: &self.ips }
    }
}

/// The state machine. `N` is the work-buffer size (largest body/event), default 32 KiB.
///
/// All-zero bytes are a valid (not a started) engine: no field holds a bare reference, so the
/// C ABI builds engines in place in zeroed memory, never on the stack, and [`Engine::start`]
/// (which resets every field) makes one of them; its build checks this property.
pub struct Engine<const N: usize = DEFAULT_BUFFER> {
    cfg: Owned,
    spki: [u8; P256_SPKI_LEN],
    csr_pem: heapless::Vec<u8, MAX_CSR_PEM>,
    bearer: heapless::String<40>,
    name: heapless::String<MAX_NAME>,
    uid: heapless::String<MAX_NAME>,
    path: heapless::String<512>,
    buf: [u8; N],
    /// Bytes of a partial watch event at the start of `buf`.
    pending: usize,
    cert: heapless::Vec<u8, MAX_CERT_PEM>,
    verified: Option<Verified>,
    rotation_deadline: i64,
    phase: Phase,
    /// Where to go after a backoff.
    resume: Phase,
    until: i64,
    /// When the transport gives up on the outstanding request.
    give_up_at: i64,
    /// The outstanding request's kind, method and body length (while one is outstanding).
    sent: Option<(RequestKind, Method, usize)>,
    deadline: i64,
    attempt: u32,
    watch_failures: u32,
    /// 401 answers in a row while waiting (see [`UNAUTHORIZED_RETRIES`]).
    unauthorized: u32,
    poll_mode: bool,
    events_seen: bool,
    jitter: Jitter,
    /// The caller wants control back by then: watches sent end by this time.
    watch_by: Option<i64>,
    error: Option<Error>,
    detail: FailureDetail,
}

impl<const N: usize> Drop for Engine<N> {
    fn drop(&mut self) {
        self.wipe_bearer();
    }
}

impl<const N: usize> fmt::Debug for Engine<N> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Engine")
            .field("phase", &self.phase)
            .field("name", &self.name.as_str())
            .field("uid", &self.uid.as_str())
            .field("attempt", &self.attempt)
            .field("error", &self.error)
            .finish_non_exhaustive()
    }
}

impl<const N: usize> Default for Engine<N> {
    fn default() -> Self {
        Self::idle()
    }
}

impl<const N: usize> Engine<N> {
    /// An engine that has not been started ([`Phase::Idle`]): `const`, so it can initialise a
    /// static. [`Engine::start`] configures it in place.
    pub const fn idle() -> Self {
        Engine {
            cfg: Owned::empty(),
            spki: [0u8; P256_SPKI_LEN],
            csr_pem: heapless::Vec::new(),
            bearer: heapless::String::new(),
            name: heapless::String::new(),
            uid: heapless::String::new(),
            path: heapless::String::new(),
            buf: [0u8; N],
            pending: 0,
            cert: heapless::Vec::new(),
            verified: None,
            rotation_deadline: 0,
            phase: Phase::Idle,
            resume: Phase::Idle,
            until: 0,
            give_up_at: 0,
            sent: None,
            deadline: 0,
            attempt: 0,
            watch_failures: 0,
            unauthorized: 0,
            poll_mode: false,
            events_seen: false,
            jitter: Jitter(0),
            watch_by: None,
            error: None,
            detail: FailureDetail::empty(),
        }
    }

    /// A started engine (see [`Engine::start`]). The value is moved out, so it passes through the
    /// stack: a caller with a small stack keeps an [`Engine::idle`] in place and starts it there.
    pub fn new<S: P256Signer + ?Sized>(
        config: &Config<'_>,
        signer: &S,
        now: i64,
        seed: u64,
    ) -> Result<Self> {
        let mut e = Self::idle();
        e.start(config, signer, now, seed)?;
        Ok(e)
    }

    fn wipe_bearer(&mut self) {
        // The bearer header holds the token secret.
        let mut bytes = core::mem::take(&mut self.bearer).into_bytes();
        bytes.as_mut_slice().zeroize();
    }

    /// Back to [`Phase::Idle`], forgetting the configuration, the CSR and any result (the bearer
    /// token is wiped): every field as [`Engine::idle`] has it but the work buffer's bytes (the
    /// destructuring below makes a new field a compile error until it is reset here), so an engine
    /// reset in place is the idle engine, whatever it held.
    pub fn reset(&mut self) {
        self.wipe_bearer();
        let Engine {
            cfg,
            spki,
            csr_pem,
            bearer: _,
            name,
            uid,
            path,
            buf: _,
            pending,
            cert,
            verified,
            rotation_deadline,
            phase,
            resume,
            until,
            give_up_at,
            sent,
            deadline,
            attempt,
            watch_failures,
            unauthorized,
            poll_mode,
            events_seen,
            jitter,
            watch_by,
            error,
            detail,
        } = self;
        cfg.clear();
        *spki = [0u8; P256_SPKI_LEN];
        csr_pem.clear();
        name.clear();
        uid.clear();
        path.clear();
        *pending = 0;
        cert.clear();
        *verified = None;
        *rotation_deadline = 0;
        *phase = Phase::Idle;
        *resume = Phase::Idle;
        *until = 0;
        *give_up_at = 0;
        *sent = None;
        *deadline = 0;
        *attempt = 0;
        *watch_failures = 0;
        *unauthorized = 0;
        *poll_mode = false;
        *events_seen = false;
        *jitter = Jitter(0);
        *watch_by = None;
        *error = None;
        detail.clear();
    }

    /// Copy `config`, build and sign the CSR with `signer` (which is not kept), and get ready to
    /// create it. `seed` drives backoff and rotation jitter (take it from a CSPRNG or any
    /// unpredictable source; it is not a secret). Whatever the engine held before is forgotten.
    ///
    /// Errors (the engine is then [`Phase::Idle`]): the CSR's ([`Error::InvalidNodeName`],
    /// [`Error::InvalidDnsName`], [`Error::TooManySans`], [`Error::SignerFailed`], ...),
    /// [`Error::InvalidExpirationSeconds`], and [`Error::TooLarge`] for a CA bundle over
    /// [`MAX_CA_PEM`] bytes or an empty one.
    pub fn start<S: P256Signer + ?Sized>(
        &mut self,
        config: &Config<'_>,
        signer: &S,
        now: i64,
        seed: u64,
    ) -> Result<()> {
        self.reset();
        let r = self.configure(config, signer, now, seed);
        if r.is_err() {
            self.reset();
        }
        r
    }

    fn configure<S: P256Signer + ?Sized>(
        &mut self,
        config: &Config<'_>,
        signer: &S,
        now: i64,
        seed: u64,
    ) -> Result<()> {
        let builder = match config.profile {
            Profile::Client => CsrBuilder::client(config.node_name)?,
            Profile::Serving { dns, ips } => CsrBuilder::serving(config.node_name, dns, ips)?,
        };
        if config.expiration_seconds.is_some_and(|e| e < api::MIN_EXPIRATION_SECONDS) {
            return Err(Error::InvalidExpirationSeconds);
        }
        if config.ca_pem.is_empty() {
            return Err(Error::Malformed);
        }
        let c = &mut self.cfg;
        c.ca.extend_from_slice(config.ca_pem).map_err(|_| Error::TooLarge)?;
        c.node_name.push_str(config.node_name).map_err(|_| Error::InvalidNodeName)?;
        if let Profile::Serving { dns, ips } = config.profile {
            c.serving = true;
            for d in dns {
                let s = heapless::String::try_from(*d).map_err(|_| Error::InvalidDnsName)?;
                c.dns.push(s).map_err(|_| Error::TooManySans)?;
            }
            c.ips.extend_from_slice(ips).map_err(|_| Error::TooManySans)?;
        }
        c.naming = config.naming;
        c.expiration_seconds = config.expiration_seconds;
        c.verifier = Some(config.verifier);

        self.csr_pem.resize_default(MAX_CSR_PEM).map_err(|_| Error::TooLarge)?;
        let n = builder.write_pem(signer, &mut self.csr_pem)?;
        self.csr_pem.truncate(n);
        self.spki = signer.public_key_spki();
        #[cfg(feature = "csr-name")]
        if config.naming == Naming::NodeCsr {
            let mut cn = [0u8; NODE_USER_PREFIX.len() + MAX_NODE_NAME];
            let cn = builder.common_name(&mut cn);
            let n = api::node_csr_name(&self.spki, cn, &[NODES_GROUP], self.cfg.usages());
            self.name.push_str(n.as_str()).map_err(|_| Error::TooLarge)?;
        }
        if let Auth::Token(t) = config.auth {
            let wire = t.to_wire();
            self.bearer.push_str("Bearer ").map_err(|_| Error::TooLarge)?;
            self.bearer.push_str(wire.as_str()).map_err(|_| Error::TooLarge)?;
        }
        self.phase = Phase::Create;
        self.resume = Phase::Create;
        self.until = now;
        self.deadline = now.saturating_add(config.wait_secs.max(0));
        self.poll_mode = !config.watch;
        self.jitter = Jitter(seed);
        Ok(())
    }

    /// The work buffer, as scratch for a caller that owns the engine while it is idle (the
    /// agent validates the node's files with it).
    pub(crate) fn scratch(&mut self) -> &mut [u8] {
        &mut self.buf
    }

    /// Have every watch sent from now on end by `at` (unix seconds; its `timeoutSeconds`, at
    /// least 1 and at most [`WATCH_TIMEOUT_SECS`]), so that the caller gets control back then
    /// (the agent reports progress on a long wait this way); `None`: watches last
    /// [`WATCH_TIMEOUT_SECS`]. A watch that ends is sent again; the wait's deadline is unchanged.
    pub fn end_watches_by(&mut self, at: Option<i64>) {
        self.watch_by = at;
    }

    /// The current phase.
    pub fn phase(&self) -> Phase {
        self.phase
    }

    /// The CSR object's name (empty until known for `generateName`).
    pub fn csr_name(&self) -> &str {
        &self.name
    }

    /// The signer name of the CSR (`kubernetes.io/kube-apiserver-client-kubelet` or
    /// `kubernetes.io/kubelet-serving`).
    pub fn signer_name(&self) -> &'static str {
        self.cfg.signer_name()
    }

    /// Whether the apiserver has acknowledged our CSR object (created, or found by name and
    /// adopted): from then on it may still be approved, so the key that signed it is worth keeping.
    pub fn created(&self) -> bool {
        !self.uid.is_empty()
    }

    /// The CSR PEM we send.
    pub fn csr_pem(&self) -> &[u8] {
        &self.csr_pem
    }

    /// The public key (SubjectPublicKeyInfo DER) of the CSR, and so of the issued certificate.
    pub fn public_key_spki(&self) -> &[u8; P256_SPKI_LEN] {
        &self.spki
    }

    /// The failure, with the server's reason and message, once [`Action::Failed`] was returned.
    pub fn failure(&self) -> Option<(Error, &FailureDetail)> {
        self.error.map(|e| (e, &self.detail))
    }

    /// The overall deadline (unix seconds).
    pub fn deadline(&self) -> i64 {
        self.deadline
    }

    /// Whether a request is outstanding (sent, its outcome not yet fed).
    pub fn request_outstanding(&self) -> bool {
        matches!(self.phase, Phase::Creating | Phase::Fetching | Phase::Watching)
    }

    /// When `poll` next has something to do: now while a request is to be sent, the end of a
    /// backoff, the give-up time of an outstanding request; `None` when done, failed or idle.
    pub fn poll_timeout(&self) -> Option<i64> {
        match self.phase {
            Phase::Idle | Phase::Done | Phase::Failed => None,
            Phase::Backoff => Some(self.until.min(self.deadline)),
            Phase::Creating | Phase::Fetching | Phase::Watching => Some(self.give_up_at),
            Phase::Create | Phase::Fetch | Phase::Watch => Some(self.until.min(self.deadline)),
        }
    }

    /// What to do now.
    pub fn poll(&mut self, now: i64) -> Action<'_> {
        if self.phase == Phase::Idle {
            return Action::Failed(Error::InvalidState);
        }
        if let Some(e) = self.error {
            return Action::Failed(e);
        }
        if self.phase == Phase::Done {
            return self.done_action();
        }
        if now >= self.deadline {
            self.fail(Error::Timeout, None, "", "no certificate was issued before the deadline");
            return Action::Failed(Error::Timeout);
        }
        if self.phase == Phase::Backoff {
            if now < self.until {
                return Action::Wait { until: self.until.min(self.deadline) };
            }
            self.phase = self.resume;
        }
        match self.phase {
            Phase::Create => {
                let body_len = match self.write_create_body() {
                    Ok(n) => n,
                    Err(e) => return self.fail_now(e),
                };
                self.phase = Phase::Creating;
                self.path.clear();
                let _ = self.path.push_str(api::CSR_PATH);
                self.give_up_at = self.deadline;
                Action::Send(self.request(RequestKind::Create, Method::Post, body_len))
            }
            Phase::Fetch => {
                if let Err(e) = self.set_get_path() {
                    return self.fail_now(e);
                }
                self.phase = Phase::Fetching;
                self.give_up_at = self.deadline;
                Action::Send(self.request(RequestKind::Get, Method::Get, 0))
            }
            Phase::Watch => {
                if self.poll_mode {
                    self.phase = Phase::Fetch;
                    return self.poll(now);
                }
                let timeout = match self.watch_by {
                    Some(at) => at.saturating_sub(now).clamp(1, i64::from(WATCH_TIMEOUT_SECS)),
                    None => i64::from(WATCH_TIMEOUT_SECS),
                };
                if let Err(e) = self.set_watch_path(timeout as u32) {
                    return self.fail_now(e);
                }
                self.phase = Phase::Watching;
                self.pending = 0;
                self.events_seen = false;
                let watch_end = now.saturating_add(timeout + 30);
                self.give_up_at = watch_end.min(self.deadline);
                Action::Send(self.request(RequestKind::Watch, Method::Get, 0))
            }
            Phase::Creating | Phase::Fetching | Phase::Watching => {
                Action::AwaitResponse { until: self.give_up_at }
            }
            Phase::Idle | Phase::Backoff | Phase::Done | Phase::Failed => {
                Action::Wait { until: self.deadline }
            }
        }
    }

    fn done_action(&self) -> Action<'_> {
        match &self.verified {
            Some(v) => Action::Done(Issued {
                cert_pem: &self.cert,
                verified: v,
                rotation_deadline: self.rotation_deadline,
                csr_name: &self.name,
            }),
            None => Action::Failed(Error::InvalidState),
        }
    }

    /// The outstanding request again (what the last [`Action::Send`] said), while
    /// [`Engine::request_outstanding`]; `None` otherwise.
    pub fn outstanding_request(&self) -> Option<Request<'_>> {
        match self.sent {
            Some((kind, method, body_len)) if self.request_outstanding() => {
                Some(self.request_view(kind, method, body_len))
            }
            _ => None,
        }
    }

    fn request(&mut self, kind: RequestKind, method: Method, body_len: usize) -> Request<'_> {
        self.sent = Some((kind, method, body_len));
        self.request_view(kind, method, body_len)
    }

    fn request_view(&self, kind: RequestKind, method: Method, body_len: usize) -> Request<'_> {
        Request {
            kind,
            method,
            path: &self.path,
            authorization: if self.bearer.is_empty() { None } else { Some(&self.bearer) },
            content_type: if body_len > 0 { Some("application/json") } else { None },
            accept: "application/json",
            body: self.buf.get(..body_len).unwrap_or(&[]),
            give_up_at: self.give_up_at,
        }
    }

    fn write_create_body(&mut self) -> Result<usize> {
        let name = match self.cfg.naming {
            #[cfg(feature = "csr-name")]
            Naming::NodeCsr => ObjectName::Fixed(self.name.as_str()),
            Naming::Generate => ObjectName::Generate,
        };
        let obj = CsrObject::new(
            name,
            &self.csr_pem,
            self.cfg.signer_name(),
            self.cfg.usages(),
            self.cfg.expiration_seconds,
        )?;
        obj.write_json(&mut self.buf).map_err(|e| match e {
            Error::BufferTooSmall { .. } => Error::TooLarge,
            e => e,
        })
    }

    fn set_get_path(&mut self) -> Result<()> {
        self.path.clear();
        let p = &mut self.path;
        p.push_str(api::CSR_PATH).map_err(|_| Error::TooLarge)?;
        p.push('/').map_err(|_| Error::TooLarge)?;
        p.push_str(&self.name).map_err(|_| Error::TooLarge)
    }

    fn set_watch_path(&mut self, timeout_secs: u32) -> Result<()> {
        self.path.clear();
        let p = &mut self.path;
        let mut put = |s: &str| p.push_str(s).map_err(|_| Error::TooLarge);
        put(api::CSR_PATH)?;
        put("?fieldSelector=metadata.name%3D")?;
        put(&self.name)?;
        put("&watch=true&timeoutSeconds=")?;
        put(crate::out::decimal(u64::from(timeout_secs), &mut [0; 20]))
    }

    fn fail(&mut self, e: Error, status: Option<u16>, reason: &str, message: &str) {
        self.error = Some(e);
        self.phase = Phase::Failed;
        self.detail.status = status;
        push_lossy(&mut self.detail.reason, reason);
        push_lossy(&mut self.detail.message, message);
    }

    fn fail_now(&mut self, e: Error) -> Action<'_> {
        self.fail(e, None, "", e.message());
        Action::Failed(e)
    }

    /// Schedule a retry of `phase` after the kubelet's backoff.
    fn backoff(&mut self, now: i64, phase: Phase) {
        let ms = rotation::backoff_delay_ms(self.attempt, self.jitter.next_u32());
        self.attempt = self.attempt.saturating_add(1);
        let secs = i64::try_from(ms.div_ceil(1000)).unwrap_or(i64::MAX);
        self.until = now.saturating_add(secs);
        self.resume = phase;
        self.phase = Phase::Backoff;
    }

    /// The request could not be sent or no (complete) response arrived (connection refused, TLS
    /// failure, timeout, a broken stream). Retried with backoff until the deadline. Ignored when
    /// no request is outstanding.
    pub fn on_transport_error(&mut self, now: i64) {
        match self.phase {
            Phase::Creating => self.backoff(now, Phase::Create),
            Phase::Fetching => self.backoff(now, Phase::Fetch),
            Phase::Watching => self.watch_broke(now),
            _ => {}
        }
    }

    fn watch_broke(&mut self, now: i64) {
        if self.events_seen {
            // A stream that delivered events and ended: just watch again.
            self.watch_failures = 0;
            self.phase = Phase::Watch;
            return;
        }
        self.watch_failures = self.watch_failures.saturating_add(1);
        if self.watch_failures >= WATCH_FAILURES_BEFORE_POLL {
            self.poll_mode = true;
        }
        self.backoff(now, Phase::Watch);
    }

    /// The whole response to the outstanding request. For a watch this may be the complete stream
    /// (a transport that cannot stream delivers it this way). Ignored when no request is
    /// outstanding; failures come out of the next [`Engine::poll`].
    pub fn on_response(&mut self, now: i64, status: u16, body: &[u8]) {
        let phase = self.phase;
        match phase {
            Phase::Creating | Phase::Fetching | Phase::Watching => {}
            _ => return,
        }
        if phase == Phase::Watching && status == 200 {
            if self.on_stream_data(now, body) == StreamControl::Continue {
                self.on_stream_end(now);
            }
            return;
        }
        let _ = self.response(now, status, body, phase);
    }

    fn response(&mut self, now: i64, status: u16, body: &[u8], phase: Phase) -> Result<()> {
        match status {
            200 | 201 => {
                self.unauthorized = 0;
                let len = body.len();
                if len > N {
                    self.fail(Error::TooLarge, Some(status), "", "response larger than the buffer");
                    return Err(Error::TooLarge);
                }
                if let Some(dst) = self.buf.get_mut(..len) {
                    dst.copy_from_slice(body);
                }
                self.on_object(now, status, len, phase)
            }
            409 if phase == Phase::Creating => {
                if self.name.is_empty() {
                    self.fail_status(Error::HttpStatus, status, body);
                    return Err(Error::HttpStatus);
                }
                self.phase = Phase::Fetch;
                Ok(())
            }
            401 if phase != Phase::Creating && self.unauthorized < UNAUTHORIZED_RETRIES => {
                self.unauthorized += 1;
                let retry = if phase == Phase::Fetching { Phase::Fetch } else { Phase::Watch };
                self.backoff(now, retry);
                Ok(())
            }
            401 => {
                self.fail_status(Error::Unauthorized, status, body);
                Err(Error::Unauthorized)
            }
            403 => {
                self.fail_status(Error::Forbidden, status, body);
                Err(Error::Forbidden)
            }
            404 if phase == Phase::Fetching => {
                self.fail(Error::CsrDeleted, Some(404), "NotFound", "csr was deleted");
                Err(Error::CsrDeleted)
            }
            // A server that does not offer watch on this resource: poll instead.
            404 | 405 | 406 | 501 if phase == Phase::Watching => {
                self.poll_mode = true;
                self.phase = Phase::Fetch;
                Ok(())
            }
            408 | 429 | 500..=599 => {
                let retry = match phase {
                    Phase::Creating => Phase::Create,
                    Phase::Fetching => Phase::Fetch,
                    _ => Phase::Watch,
                };
                if phase == Phase::Watching {
                    self.watch_broke(now);
                } else {
                    self.backoff(now, retry);
                }
                Ok(())
            }
            _ => {
                self.fail_status(Error::HttpStatus, status, body);
                Err(Error::HttpStatus)
            }
        }
    }

    fn fail_status(&mut self, e: Error, status: u16, body: &[u8]) {
        let mut reason = "";
        let mut message = "";
        let mut rbuf = [0u8; MAX_MESSAGE];
        let mut mbuf = [0u8; MAX_MESSAGE];
        if let Ok(Value::Object(o)) = json::parse(body) {
            if let Ok(Some(Value::String(s))) = o.get("reason") {
                reason = decode_lossy(s, &mut rbuf);
            }
            if let Ok(Some(Value::String(s))) = o.get("message") {
                message = decode_lossy(s, &mut mbuf);
            }
        }
        if message.is_empty() {
            message = e.message();
        }
        self.fail(e, Some(status), reason, message);
    }

    /// A chunk of a watch response with status 200. Events are newline-delimited JSON objects;
    /// chunk boundaries may fall anywhere. Answers whether to keep reading; when no watch is
    /// outstanding the chunk is ignored and the answer is [`StreamControl::Close`].
    pub fn on_stream_data(&mut self, now: i64, mut chunk: &[u8]) -> StreamControl {
        if self.phase != Phase::Watching {
            return StreamControl::Close;
        }
        self.unauthorized = 0; // the stream was accepted
        while !chunk.is_empty() && self.phase == Phase::Watching {
            let nl = chunk.iter().position(|&b| b == b'\n');
            let (part, rest, complete) = match nl {
                Some(i) => (chunk.get(..i).unwrap_or(&[]), chunk.get(i + 1..).unwrap_or(&[]), true),
                None => (chunk, &[][..], false),
            };
            let end = self.pending + part.len();
            if end > N {
                self.fail(Error::TooLarge, None, "", "watch event larger than the buffer");
                return StreamControl::Close;
            }
            if let Some(dst) = self.buf.get_mut(self.pending..end) {
                dst.copy_from_slice(part);
            }
            self.pending = end;
            chunk = rest;
            if complete {
                let len = core::mem::take(&mut self.pending);
                if self.on_event(now, len).is_err() {
                    return StreamControl::Close;
                }
            }
        }
        if self.phase == Phase::Watching { StreamControl::Continue } else { StreamControl::Close }
    }

    /// The watch stream ended (server timeout or closed connection). Call it after the last
    /// [`Engine::on_stream_data`]; ignored when no watch is open.
    pub fn on_stream_end(&mut self, now: i64) {
        if self.phase != Phase::Watching {
            return;
        }
        let len = core::mem::take(&mut self.pending);
        if len > 0
            && self.buf.get(..len).is_some_and(|b| b.iter().any(|c| !c.is_ascii_whitespace()))
        {
            // A final event without a trailing newline.
            if self.on_event(now, len).is_err() || self.phase != Phase::Watching {
                return;
            }
        }
        self.watch_broke(now);
    }

    fn on_event(&mut self, now: i64, len: usize) -> Result<()> {
        let mut kind = EventKind::Other;
        let mut object: Option<usize> = None;
        {
            let line = self.buf.get(..len).unwrap_or(&[]);
            if line.iter().all(|c| c.is_ascii_whitespace()) {
                return Ok(());
            }
            let Ok(Value::Object(ev)) = json::parse(line) else {
                self.fail(Error::MalformedResponse, None, "", "malformed watch event");
                return Err(Error::MalformedResponse);
            };
            if let Ok(Some(Value::String(t))) = ev.get("type") {
                kind = if t.eq_str("ADDED") || t.eq_str("MODIFIED") {
                    EventKind::Object
                } else if t.eq_str("DELETED") {
                    EventKind::Deleted
                } else if t.eq_str("ERROR") {
                    EventKind::Error
                } else {
                    EventKind::Other
                };
            }
            if let Ok(Some(Value::Object(o))) = ev.get("object") {
                // Offset of the object inside the line (it is a sub-slice of it).
                let start = (o.raw().as_ptr() as usize).wrapping_sub(line.as_ptr() as usize);
                object = Some(start);
            }
        }
        self.events_seen = true;
        self.watch_failures = 0;
        match (kind, object) {
            (EventKind::Deleted, _) => {
                self.fail(Error::CsrDeleted, None, "", "csr was deleted");
                Err(Error::CsrDeleted)
            }
            (EventKind::Error, Some(start)) => {
                // Usually 410 Gone (too old resource version): watch again.
                let code = {
                    let obj = self.buf.get(start..len).unwrap_or(&[]);
                    json::parse_prefix(obj)
                        .ok()
                        .and_then(|(v, _)| v.as_object())
                        .and_then(|o| o.get("code").ok().flatten())
                        .and_then(|v| v.as_i64())
                };
                if code == Some(410) {
                    self.phase = Phase::Watch;
                    return Ok(());
                }
                self.watch_broke(now);
                Ok(())
            }
            (EventKind::Object, Some(start)) => {
                let obj_len = {
                    let obj = self.buf.get(start..len).unwrap_or(&[]);
                    json::parse_prefix(obj).map(|(v, _)| v.as_object().map(|o| o.raw().len()))
                };
                match obj_len {
                    Ok(Some(n)) => {
                        self.buf.copy_within(start..start + n, 0);
                        self.on_object(now, 200, n, Phase::Watching)
                    }
                    _ => {
                        self.fail(Error::MalformedResponse, None, "", "malformed watch event");
                        Err(Error::MalformedResponse)
                    }
                }
            }
            _ => Ok(()),
        }
    }

    /// A CertificateSigningRequest object in `buf[..len]` (create response, GET, watch event).
    fn on_object(&mut self, now: i64, status: u16, len: usize, phase: Phase) -> Result<()> {
        // Two steps so that the parser's frame is gone before the verifier's is pushed (on a
        // microcontroller's stack the two together are what counts).
        if self.take_object(now, status, len, phase)? { self.validate(now) } else { Ok(()) }
    }

    /// Take the CSR object in `buf[..len]`: `Ok(true)` when it carries the issued certificate
    /// (now in `cert`, to be validated).
    #[inline(never)]
    fn take_object(&mut self, now: i64, status: u16, len: usize, phase: Phase) -> Result<bool> {
        let mut outcome = ObjectOutcome::Pending;
        let mut detail = FailureDetail::default();
        let mut cert_len = 0usize;
        {
            let body = self.buf.get(..len).unwrap_or(&[]);
            let parsed = match json::parse(body) {
                Ok(Value::Object(o)) => o,
                _ => {
                    self.fail(
                        Error::MalformedResponse,
                        Some(status),
                        "",
                        "response is not a JSON object",
                    );
                    return Err(Error::MalformedResponse);
                }
            };
            let read = read_csr_object(parsed);
            let csr = match read {
                Ok(c) => c,
                Err(e) => {
                    self.fail(e, Some(status), "", "response is not a CertificateSigningRequest");
                    return Err(e);
                }
            };
            // Identity: name and UID.
            let mut nbuf = [0u8; MAX_NAME];
            let name = csr.name.and_then(|s| s.decode_into(&mut nbuf).ok()).unwrap_or("");
            let mut ubuf = [0u8; MAX_NAME];
            let uid = csr.uid.and_then(|s| s.decode_into(&mut ubuf).ok()).unwrap_or("");
            if phase == Phase::Creating {
                self.name.clear();
                self.uid.clear();
                if self.name.push_str(name).is_err()
                    || self.uid.push_str(uid).is_err()
                    || name.is_empty()
                {
                    self.fail(
                        Error::MalformedResponse,
                        Some(status),
                        "",
                        "created object has no name",
                    );
                    return Err(Error::MalformedResponse);
                }
            } else if self.uid.is_empty() {
                // First sight of a pre-existing object (409): check it is ours, adopt its UID.
                if let Err(why) = self.compatible(&csr) {
                    self.fail(Error::CsrIncompatible, Some(status), "", why);
                    return Err(Error::CsrIncompatible);
                }
                if self.uid.push_str(uid).is_err() {
                    self.fail(Error::MalformedResponse, Some(status), "", "bad uid");
                    return Err(Error::MalformedResponse);
                }
            } else if !uid.is_empty() && uid != self.uid.as_str() {
                outcome = ObjectOutcome::Fail(Error::CsrUidChanged);
                push_lossy(&mut detail.message, "csr changed UIDs");
            }
            if matches!(outcome, ObjectOutcome::Pending) {
                // Conditions by type only, as client-go does.
                match csr.condition {
                    Condition::Denied { reason, message }
                    | Condition::Failed { reason, message } => {
                        let e = if matches!(csr.condition, Condition::Denied { .. }) {
                            Error::CsrDenied
                        } else {
                            Error::CsrFailed
                        };
                        let mut b = [0u8; MAX_MESSAGE];
                        push_lossy(
                            &mut detail.reason,
                            reason.map(|s| decode_lossy(s, &mut b)).unwrap_or(""),
                        );
                        let mut b = [0u8; MAX_MESSAGE];
                        push_lossy(
                            &mut detail.message,
                            message.map(|s| decode_lossy(s, &mut b)).unwrap_or(""),
                        );
                        outcome = ObjectOutcome::Fail(e);
                    }
                    Condition::Approved => {
                        if let Some(cert) = csr.certificate {
                            let _ = self.cert.resize_default(MAX_CERT_PEM);
                            match decode_base64_str(cert, &mut self.cert) {
                                Ok(n) if n > 0 => {
                                    cert_len = n;
                                    outcome = ObjectOutcome::Issued;
                                }
                                Ok(_) => {}
                                Err(e) => outcome = ObjectOutcome::Fail(e),
                            }
                        }
                    }
                    Condition::None => {}
                }
            }
        }
        if !matches!(outcome, ObjectOutcome::Issued) {
            self.cert.clear();
        }
        match outcome {
            ObjectOutcome::Pending => {
                if matches!(phase, Phase::Creating | Phase::Fetching) {
                    self.phase = if self.poll_mode && phase == Phase::Fetching {
                        self.until = now.saturating_add(POLL_INTERVAL_SECS);
                        self.resume = Phase::Fetch;
                        Phase::Backoff
                    } else {
                        Phase::Watch
                    };
                }
                self.attempt = 0;
                Ok(false)
            }
            ObjectOutcome::Fail(e) => {
                self.error = Some(e);
                self.phase = Phase::Failed;
                detail.status = Some(status);
                if detail.message.is_empty() {
                    push_lossy(&mut detail.message, e.message());
                }
                self.detail = detail;
                Err(e)
            }
            ObjectOutcome::Issued => {
                self.cert.truncate(cert_len);
                Ok(true)
            }
        }
    }

    /// ensureCompatible: same subject, same signer, and the CSR's key is ours and signed it.
    fn compatible(&self, csr: &CsrView<'_>) -> core::result::Result<(), &'static str> {
        let Some(req_b64) = csr.request else { return Err("retrieved csr has no spec.request") };
        if let Some(signer) = csr.signer {
            if !signer.eq_str(self.cfg.signer_name()) {
                return Err("retrieved csr is not compatible: signer name differs");
            }
        }
        let mut pem_buf = [0u8; MAX_CSR_PEM];
        let pem_len = decode_base64_str(req_b64, &mut pem_buf)
            .map_err(|_| "retrieved csr: spec.request is not base64")?;
        let mut der = [0u8; MAX_CSR_DER];
        let req = CertificateRequest::from_pem(pem_buf.get(..pem_len).unwrap_or(&[]), &mut der)
            .map_err(|_| "retrieved csr: spec.request is not a CSR")?;
        // Subject: exactly O=system:nodes, CN=system:node:<name>.
        let cn_ok = req.common_name().is_some_and(|cn| {
            cn.starts_with(NODE_USER_PREFIX)
                && cn.as_str().is_some_and(|s| {
                    s.get(NODE_USER_PREFIX.len()..) == Some(self.cfg.node_name.as_str())
                })
        });
        let mut orgs = req.organizations();
        let o_ok = orgs.next().is_some_and(|o| o.eq_str(NODES_GROUP)) && orgs.next().is_none();
        if !cn_ok || !o_ok || req.subject().count() != 2 {
            return Err("retrieved csr is not compatible: subject differs");
        }
        if req.spki_der() != self.spki.as_slice()
            || req.verify_signature_with(self.cfg.verifier.unwrap_or(SOFTWARE)).is_err()
        {
            return Err("retrieved csr is not compatible: not signed by our key");
        }
        Ok(())
    }

    fn validate(&mut self, now: i64) -> Result<()> {
        let mut refs = [""; MAX_SANS];
        let expected = Expected {
            node_name: &self.cfg.node_name,
            public_key: &self.spki,
            profile: self.cfg.profile(&mut refs),
        };
        let result = verify::verify_issued_with(
            self.cfg.verifier.unwrap_or(SOFTWARE),
            &self.cert,
            &self.cfg.ca,
            &expected,
            now,
            &mut self.buf,
        );
        match result {
            Ok(v) => {
                self.rotation_deadline =
                    rotation::rotation_deadline(v.not_before, v.not_after, self.jitter.next_u32());
                self.verified = Some(v);
                self.phase = Phase::Done;
                Ok(())
            }
            Err(e) => {
                let e = match e {
                    Error::BufferTooSmall { .. } => Error::TooLarge,
                    e => e,
                };
                let mut msg = heapless::String::<MAX_MESSAGE>::new();
                let _ = fmt::write(&mut msg, format_args!("issued certificate rejected: {e}"));
                self.fail(e, None, "", &msg);
                Err(e)
            }
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum EventKind {
    Object,
    Deleted,
    Error,
    Other,
}

enum ObjectOutcome {
    Pending,
    Issued,
    Fail(Error),
}

#[derive(Clone, Copy)]
enum Condition<'a> {
    None,
    Approved,
    Denied { reason: Option<json::Str<'a>>, message: Option<json::Str<'a>> },
    Failed { reason: Option<json::Str<'a>>, message: Option<json::Str<'a>> },
}

struct CsrView<'a> {
    name: Option<json::Str<'a>>,
    uid: Option<json::Str<'a>>,
    request: Option<json::Str<'a>>,
    signer: Option<json::Str<'a>>,
    condition: Condition<'a>,
    certificate: Option<json::Str<'a>>,
}

fn get_str<'a>(o: Object<'a>, key: &str) -> Result<Option<json::Str<'a>>> {
    Ok(o.get(key).map_err(|_| Error::MalformedResponse)?.and_then(|v| v.as_str()))
}

fn get_obj<'a>(o: Object<'a>, key: &str) -> Result<Option<Object<'a>>> {
    Ok(o.get(key).map_err(|_| Error::MalformedResponse)?.and_then(|v| v.as_object()))
}

/// Pull the fields we need out of a CertificateSigningRequest.
fn read_csr_object(o: Object<'_>) -> Result<CsrView<'_>> {
    if let Some(kind) = get_str(o, "kind")? {
        if !kind.eq_str("CertificateSigningRequest") {
            return Err(Error::MalformedResponse);
        }
    }
    let meta = get_obj(o, "metadata")?.ok_or(Error::MalformedResponse)?;
    let spec = get_obj(o, "spec")?;
    let status = get_obj(o, "status")?;
    let mut condition = Condition::None;
    let mut certificate = None;
    if let Some(st) = status {
        if let Some(conds) =
            st.get("conditions").map_err(|_| Error::MalformedResponse)?.and_then(|v| v.as_array())
        {
            // Denied or Failed wins over Approved, wherever it appears.
            for c in conds.items() {
                let c = c.map_err(|_| Error::MalformedResponse)?;
                let Some(c) = c.as_object() else { continue };
                let Some(t) = get_str(c, "type")? else { continue };
                let reason = get_str(c, "reason")?;
                let message = get_str(c, "message")?;
                if t.eq_str("Denied") {
                    condition = Condition::Denied { reason, message };
                } else if t.eq_str("Failed") {
                    if !matches!(condition, Condition::Denied { .. }) {
                        condition = Condition::Failed { reason, message };
                    }
                } else if t.eq_str("Approved") && matches!(condition, Condition::None) {
                    condition = Condition::Approved;
                }
            }
        }
        certificate = get_str(st, "certificate")?.filter(|s| !s.is_empty());
    }
    Ok(CsrView {
        name: get_str(meta, "name")?,
        uid: get_str(meta, "uid")?,
        request: match spec {
            Some(s) => get_str(s, "request")?,
            None => None,
        },
        signer: match spec {
            Some(s) => get_str(s, "signerName")?,
            None => None,
        },
        condition,
        certificate,
    })
}

fn decode_lossy<'b>(s: json::Str<'_>, buf: &'b mut [u8]) -> &'b str {
    let mut n = 0;
    for b in s.bytes() {
        match buf.get_mut(n) {
            Some(slot) => *slot = b,
            None => break,
        }
        n += 1;
    }
    // Cut at a character boundary.
    let mut bytes = buf.get(..n).unwrap_or(&[]);
    loop {
        match core::str::from_utf8(bytes) {
            Ok(s) => return s,
            Err(e) => bytes = bytes.get(..e.valid_up_to()).unwrap_or(&[]),
        }
    }
}

/// Decode a JSON string holding standard base64 (a Go `[]byte`) into `out`.
fn decode_base64_str(s: json::Str<'_>, out: &mut [u8]) -> Result<usize> {
    use base64ct::{Base64, Encoding};
    let raw = s.as_borrowed().ok_or(Error::MalformedResponse)?;
    if raw.len() / 4 * 3 > out.len() + 3 {
        return Err(Error::TooLarge);
    }
    Base64::decode(raw.as_bytes(), out).map(|d| d.len()).map_err(|e| match e {
        base64ct::Error::InvalidLength => Error::TooLarge,
        _ => Error::MalformedResponse,
    })
}

/// Does this PEM carry at least one certificate? (Used by callers deciding whether stored
/// credentials exist.)
pub fn has_certificate(pem_bundle: &[u8]) -> bool {
    pem::blocks(pem_bundle).any(|b| b.is_ok_and(|b| b.label == "CERTIFICATE"))
}
