//! The bootstrap / rotation protocol as a sans-IO state machine (the quinn-proto model).
//!
//! The engine never touches a socket, a clock or an RNG, and it borrows nothing: it owns a copy of
//! its configuration (node name, SANs, CA bundle, bearer token, CSR) in fixed-capacity storage, so
//! a C or firmware caller can keep one in a static. The caller:
//!
//! 1. starts an `Engine` with a [`Config`], a [`P256Signer`] (the node key: it signs the CSR
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
//!   kubelet's backoff (2, 4, 8, 16 s with jitter, then every 32 s) until the wait deadline;
//!   a 429 or 5xx with `Retry-After` ([`Engine::on_response`]) waits as the server asked
//!   instead, with jitter ([`crate::pushback`]; [`Engine::retry_after`] says so).
//!   While waiting for the CSR created with this token, a 401 is retried
//!   [`UNAUTHORIZED_RETRIES`] times first: an apiserver that has just restarted answers 401 until
//!   its bootstrap-token cache has synced (the kubelet's reflector retries such errors until its
//!   own deadline). A rotation's 401 (the client certificate refused) fails at once.
//!
//! **Internal**: the agent's sub-machine for one CSR ([`crate::agent`] is the public machine
//! that decides; this module is public only for kubeboot's own tests and fuzz targets, is not a
//! supported API and is not in the C ABI). Memory: the work buffer
//! for bodies and watch events and the issued chain are regions of the agent's memory
//! ([`crate::agent::Capacities`]: `response` and `pem`); the CA bundle and the serving SANs the
//! issued certificate is checked against are the agent's, lent with each answer ([`Expect`]).
//! No heap.

use core::fmt;
use zeroize::Zeroize;

use crate::api::{self, CsrObject, ObjectName};
use crate::backend::SignatureVerifier;
use crate::buf::Bytes;
use crate::csr::{CsrBuilder, MAX_CSR_DER, MAX_NODE_NAME, NODE_USER_PREFIX, NODES_GROUP, Profile};
use crate::error::{Error, Result};
use crate::json::{self, Object, Value};
use crate::key::{P256_SPKI_LEN, P256Signer};
use crate::out::Filled;
use crate::pushback::{self, Headers};
use crate::request::CertificateRequest;
use crate::rotation;
use crate::token::BootstrapToken;
use crate::verify::{self, Expected, Verified};

mod action;
mod object;
mod respond;

pub use action::*;
use object::*;

/// Longest object name / UID we keep.
pub const MAX_NAME: usize = 253;
/// The kubelet's bootstrap wait (path B): one hour.
pub const BOOTSTRAP_WAIT_SECS: i64 = 3600;
/// How many 401 answers in a row the wait for an already created CSR retries (with the backoff)
/// before failing with [`Error::Unauthorized`]: about 14 s, the time a restarted apiserver takes
/// to sync its bootstrap-token cache. A 401 to the create request, or to a request made with a
/// client certificate (a rotation), fails at once.
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

pub use crate::backend::SOFTWARE;

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
    /// The CA bundle (PEM) the issued certificate must chain to (not empty).
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

/// The engine's copy of its [`Config`] (the CA bundle and the SANs stay the agent's:
/// [`Expect`]).
struct Owned {
    node_name: heapless::String<MAX_NODE_NAME>,
    serving: bool,
    naming: Naming,
    expiration_seconds: Option<u32>,
    /// `None` is [`SOFTWARE`] (no reference in the idle state: see [`Engine::reset`]).
    verifier: Option<&'static (dyn SignatureVerifier + Sync)>,
}

impl Owned {
    const fn empty() -> Self {
        Owned {
            node_name: heapless::String::new(),
            serving: false,
            naming: Naming::Generate,
            expiration_seconds: None,
            verifier: None,
        }
    }

    /// Back to [`Owned::empty`], in place.
    fn clear(&mut self) {
        let Owned { node_name, serving, naming, expiration_seconds, verifier } = self;
        node_name.clear();
        *serving = false;
        *naming = Naming::Generate;
        *expiration_seconds = None;
        *verifier = None;
    }

    fn signer_name(&self) -> &'static str {
        if self.serving { api::SIGNER_SERVING } else { api::SIGNER_CLIENT }
    }

    fn usages(&self) -> &'static [&'static str] {
        if self.serving { &api::USAGES_SERVING_EC } else { &api::USAGES_CLIENT_EC }
    }
}

/// What the issued certificate is checked against, lent by the agent with every answer that may
/// carry it: the CA bundle and the profile (client, or serving with its SANs) the CSR asked for.
#[derive(Clone, Copy, Debug)]
pub struct Expect<'a> {
    /// The CA bundle (PEM) the issued certificate must chain to.
    pub ca_pem: &'a [u8],
    /// The profile of [`Config::profile`].
    pub profile: Profile<'a>,
    /// A certificate that chains to none of `ca_pem` but passes every other check is handed
    /// over anyway, with [`Issued::anchored`] false, for the caller to establish its issuer
    /// another way (the agent asks the apiserver who it takes the new pair for). False: it is
    /// refused as [`crate::error::Reason::Untrusted`].
    pub prove: bool,
}

/// One CSR's sub-machine. Its work buffer (requests, responses, watch events; a response or
/// event over it is [`Error::TooLarge`], never a truncation) and the issued chain are regions
/// of the agent's memory; the rest is small and fixed.
pub struct Engine<'m> {
    cfg: Owned,
    spki: [u8; P256_SPKI_LEN],
    csr_pem: heapless::Vec<u8, MAX_CSR_PEM>,
    bearer: heapless::String<40>,
    name: heapless::String<MAX_NAME>,
    uid: heapless::String<MAX_NAME>,
    path: heapless::String<512>,
    buf: &'m mut [u8],
    /// Bytes at the end of `buf` that hold an attested join's evidence, sent after the CSR
    /// ([`Engine::attach_evidence`]); the rest of `buf` is the work area.
    evidence: usize,
    /// Bytes of a partial watch event at the start of `buf`.
    pending: usize,
    cert: Bytes<'m>,
    verified: Option<Verified>,
    /// The verified certificate chains to none of the CAs (see [`Expect::prove`]).
    unanchored: bool,
    /// The verified certificate is valid, but not at the caller's `now` ([`Issued::clock_off`]).
    clock_off: bool,
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
    /// The `Retry-After` seconds the current backoff honours (`None`: our own backoff).
    asked: Option<u32>,
    error: Option<Error>,
    detail: FailureDetail,
}

impl Drop for Engine<'_> {
    fn drop(&mut self) {
        self.wipe_bearer();
    }
}

impl fmt::Debug for Engine<'_> {
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

impl<'m> Engine<'m> {
    /// An engine that has not been started ([`Phase::Idle`]) over its regions: `work` for
    /// requests, responses and watch events, `cert` for the issued chain.
    pub fn new(work: &'m mut [u8], cert: &'m mut [u8]) -> Self {
        let cert = Bytes::new(cert);
        Engine {
            cfg: Owned::empty(),
            spki: [0u8; P256_SPKI_LEN],
            csr_pem: heapless::Vec::new(),
            bearer: heapless::String::new(),
            name: heapless::String::new(),
            uid: heapless::String::new(),
            path: heapless::String::new(),
            buf: work,
            evidence: 0,
            pending: 0,
            cert,
            verified: None,
            unanchored: false,
            clock_off: false,
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
            asked: None,
            error: None,
            detail: FailureDetail::empty(),
        }
    }

    fn wipe_bearer(&mut self) {
        // The bearer header holds the token secret.
        let mut bytes = core::mem::take(&mut self.bearer).into_bytes();
        bytes.as_mut_slice().zeroize();
    }

    /// Back to [`Phase::Idle`], forgetting the configuration, the CSR and any result (the bearer
    /// token is wiped): every field as [`Engine::new`] has it but the regions' bytes (the
    /// destructuring below makes a new field a compile error until it is reset here).
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
            evidence,
            pending,
            cert,
            verified,
            unanchored,
            clock_off,
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
            asked,
            error,
            detail,
        } = self;
        cfg.clear();
        *spki = [0u8; P256_SPKI_LEN];
        csr_pem.clear();
        name.clear();
        uid.clear();
        path.clear();
        *evidence = 0;
        *pending = 0;
        cert.clear();
        *verified = None;
        *unanchored = false;
        *clock_off = false;
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
        *asked = None;
        *error = None;
        detail.clear();
    }

    /// Copy `config`, build and sign the CSR with `signer` (which is not kept), and get ready to
    /// create it. `seed` drives backoff and rotation jitter (take it from a CSPRNG or any
    /// unpredictable source; it is not a secret). Whatever the engine held before is forgotten.
    ///
    /// Errors (the engine is then [`Phase::Idle`]): the CSR's ([`Error::InvalidNodeName`],
    /// [`Error::InvalidDnsName`], [`Error::TooManySans`], [`Error::SignerFailed`], ...),
    /// [`Error::InvalidExpirationSeconds`], and [`Error::Malformed`] for an empty CA bundle.
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
        c.node_name.push_str(config.node_name).map_err(|_| Error::InvalidNodeName)?;
        c.serving = matches!(config.profile, Profile::Serving { .. });
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
    pub fn scratch(&mut self) -> &mut [u8] {
        let n = self.work_len();
        self.buf.get_mut(..n).unwrap_or_default()
    }

    /// The work area's length: the work buffer less the evidence at its end.
    fn work_len(&self) -> usize {
        self.buf.len().saturating_sub(self.evidence)
    }

    /// The CSR as built by [`Engine::start`] (PEM).
    pub fn csr_pem(&self) -> &[u8] {
        &self.csr_pem
    }

    /// The [`crate::attest::qualifying_data`] of the CSR built by [`Engine::start`] (what its
    /// attestation must certify).
    pub fn qualifying_data(&mut self) -> Result<[u8; 32]> {
        let n = self.work_len();
        let scratch = self.buf.get_mut(..n).ok_or(Error::InvalidState)?;
        let csr = crate::request::CertificateRequest::from_pem(&self.csr_pem, scratch)?;
        Ok(crate::attest::qualifying_data(csr.spki_der(), csr.subject_der()))
    }

    /// Send `write`'s output after the CSR in `spec.request` of this attempt's create (an
    /// attested join's evidence, [`crate::attest::write_evidence`]). `write` gets scratch and
    /// the destination, each half of the work buffer, and returns how many bytes of the
    /// destination it wrote; they stay at the end of the work buffer, out of the work area,
    /// until [`Engine::reset`].
    pub fn attach_evidence(
        &mut self,
        write: impl FnOnce(&mut [u8], &mut [u8]) -> Result<usize>,
    ) -> Result<()> {
        let len = self.buf.len();
        let half = len / 2;
        let (scratch, dest) = self.buf.split_at_mut(half);
        let n = write(scratch, dest)?;
        if n > dest.len() {
            return Err(Error::TooLarge);
        }
        self.buf.copy_within(half..half + n, len - n);
        self.evidence = n;
        Ok(())
    }

    /// The work buffer as it is (discovery keeps what it fetched there while the engine is idle).
    pub fn work(&self) -> &[u8] {
        self.buf
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

    /// The failure, with the server's reason and message, once [`Action::Failed`] was returned.
    pub fn failure(&self) -> Option<(Error, &FailureDetail)> {
        self.error.map(|e| (e, &self.detail))
    }

    /// Whether a request is outstanding (sent, its outcome not yet fed).
    pub fn request_outstanding(&self) -> bool {
        matches!(self.phase, Phase::Creating | Phase::Fetching | Phase::Watching)
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
                let timeout = i64::from(WATCH_TIMEOUT_SECS);
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
            Phase::Creating | Phase::Fetching | Phase::Watching => Action::AwaitResponse,
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
                csr_name: &self.name,
                anchored: !self.unanchored,
                clock_off: self.clock_off,
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
        let (work, evidence) = self.buf.split_at_mut(self.buf.len().saturating_sub(self.evidence));
        obj.with_evidence(evidence).write_json(work).map_err(|e| match e {
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

    /// End a backoff now: the retry goes out at the next [`Engine::poll`] (a daemon's SIGHUP
    /// during an attempt). Whether the engine was backing off.
    pub fn retry_now(&mut self) -> bool {
        if self.phase != Phase::Backoff {
            return false;
        }
        self.until = i64::MIN;
        true
    }

    /// The wall clock was stepped back by `secs`: the backoff's end and the wait's deadline move
    /// back with it, so a wait lasts as long as it was meant to, not the step longer.
    pub fn clock_stepped_back(&mut self, secs: i64) {
        self.until = self.until.saturating_sub(secs);
        self.deadline = self.deadline.saturating_sub(secs);
        self.give_up_at = self.give_up_at.saturating_sub(secs);
    }

    /// Schedule a retry of `phase` after the kubelet's backoff.
    fn backoff(&mut self, now: i64, phase: Phase) {
        let ms = rotation::backoff_delay_ms(self.attempt, self.jitter.next_u32());
        self.attempt = self.attempt.saturating_add(1);
        let secs = i64::try_from(ms.div_ceil(1000)).unwrap_or(i64::MAX);
        self.until = now.saturating_add(secs);
        self.resume = phase;
        self.phase = Phase::Backoff;
        self.asked = None;
    }

    /// After [`Engine::backoff`]: the server asked to retry after `secs` seconds, so the wait is
    /// [`pushback::delay_secs`] instead of our own schedule (the deadline still cuts it).
    fn wait_as_asked(&mut self, now: i64, secs: u32) {
        self.until = now.saturating_add(pushback::delay_secs(secs, self.jitter.next_u32()));
        self.asked = Some(secs);
    }

    /// The `Retry-After` seconds the server asked for, while the engine waits because of them
    /// ([`Phase::Backoff`] after a 429 or 5xx that carried one); `None` during our own backoff
    /// and in every other phase.
    pub fn retry_after(&self) -> Option<u32> {
        if self.phase == Phase::Backoff { self.asked } else { None }
    }
}
