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
//! events, `PEM` bytes each for the issued certificate and the CA bundle: [`MAX_CERT_PEM`] by
//! default). No heap. [`Engine::idle`] is a `const fn`, so an engine can be placed in a static and started
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
use crate::out::Filled;
use crate::request::CertificateRequest;
use crate::token::BootstrapToken;
use crate::verify::{self, Expected, Verified};
use crate::{pem, rotation};

mod action;
mod object;
mod respond;

pub use action::*;
pub use object::has_certificate;
use object::*;

/// Default work-buffer size: request bodies, whole responses and single watch events.
pub const DEFAULT_BUFFER: usize = 32 * 1024;
/// Largest issued certificate chain (PEM) we keep (the default `PEM` of [`Engine`]).
pub const MAX_CERT_PEM: usize = 16 * 1024;
/// Largest CA bundle (PEM) the engine keeps to validate the issued certificate against (the
/// default `PEM` of [`Engine`]).
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
struct Owned<const PEM: usize, const SANS: usize> {
    node_name: heapless::String<MAX_NODE_NAME>,
    serving: bool,
    dns: heapless::Vec<heapless::String<MAX_DNS_NAME>, SANS>,
    ips: heapless::Vec<IpAddr, MAX_SANS>,
    naming: Naming,
    ca: heapless::Vec<u8, PEM>,
    expiration_seconds: Option<u32>,
    /// `None` is [`SOFTWARE`] (no reference in the idle state: see [`Engine::reset`]).
    verifier: Option<&'static (dyn SignatureVerifier + Sync)>,
}

impl<const PEM: usize, const SANS: usize> Owned<PEM, SANS> {
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
    fn profile<'s: 'r, 'r>(
        &'s self,
        refs: &'r mut heapless::Vec<&'s str, MAX_SANS>,
    ) -> Profile<'r> {
        if !self.serving {
            return Profile::Client;
        }
        crate::csr::borrow_names(&self.dns, refs);
        Profile::Serving { dns: refs, ips: &self.ips }
    }
}

/// The state machine. `N` is the work-buffer size (largest body/event), default 32 KiB; `PEM`
/// the largest CA bundle and issued chain kept (PEM bytes, default [`MAX_CA_PEM`]); `SANS` the
/// most DNS names of a serving certificate (default [`MAX_SANS`]). The defaults are the
/// hosts'; a microcontroller picks capacities it can prove enough (a CA bundle or chain over
/// `PEM` is [`Error::TooLarge`], more names than `SANS` [`Error::TooManySans`], a response over
/// `N` a typed failure, never a truncation).
///
/// All-zero bytes are a valid (not a started) engine: no field holds a bare reference, so the
/// C ABI builds engines in place in zeroed memory, never on the stack, and [`Engine::start`]
/// (which resets every field) makes one of them; its build checks this property.
pub struct Engine<
    const N: usize = DEFAULT_BUFFER,
    const PEM: usize = MAX_CERT_PEM,
    const SANS: usize = MAX_SANS,
> {
    cfg: Owned<PEM, SANS>,
    spki: [u8; P256_SPKI_LEN],
    csr_pem: heapless::Vec<u8, MAX_CSR_PEM>,
    bearer: heapless::String<40>,
    name: heapless::String<MAX_NAME>,
    uid: heapless::String<MAX_NAME>,
    path: heapless::String<512>,
    buf: [u8; N],
    /// Bytes of a partial watch event at the start of `buf`.
    pending: usize,
    cert: heapless::Vec<u8, PEM>,
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

impl<const N: usize, const PEM: usize, const SANS: usize> Drop for Engine<N, PEM, SANS> {
    fn drop(&mut self) {
        self.wipe_bearer();
    }
}

impl<const N: usize, const PEM: usize, const SANS: usize> fmt::Debug for Engine<N, PEM, SANS> {
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

impl<const N: usize, const PEM: usize, const SANS: usize> Default for Engine<N, PEM, SANS> {
    fn default() -> Self {
        Self::idle()
    }
}

impl<const N: usize, const PEM: usize, const SANS: usize> Engine<N, PEM, SANS> {
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
    /// `PEM` bytes ([`MAX_CA_PEM`] by default) or an empty one.
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
            let cn = builder.common_name();
            let n = api::node_csr_name(&self.spki, &cn, &[NODES_GROUP], self.cfg.usages());
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
}
