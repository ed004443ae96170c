//! The node agent, sans-IO: every decision of a kubelet-style node agent, written once for every
//! front-end (the Rust CLI, the C agent, the Go agent, firmware).
//!
//! The front-end does the I/O: it reads files, executes file steps, sends HTTP requests over
//! TLS, sleeps and prints. The agent decides everything else:
//!
//! * whether the current client credentials are usable: the node kubeconfig loads and names a
//!   client certificate and key (data or files, relative paths resolved against the
//!   kubeconfig's directory), the key is an ECDSA P-256 key and belongs to the certificate, the
//!   certificate chains to the CA bundle, its subject is `system:node:<name>` / `system:nodes`,
//!   it has not expired, and it still matches the requested template (the kubelet's
//!   `isClientConfigStillValid` plus the checks client-go's `certSatisfiesTemplate` and the chain
//!   add);
//! * what to do: nothing until the rotation deadline (70–90 % of the lifetime); rotate with the
//!   current client certificate (`generateName: csr-`, approved by `selfnodeclient`); bootstrap
//!   with the token of the bootstrap kubeconfig (or after kubeadm-style discovery), reusing the
//!   key cache `kubelet-client.key.tmp` so that a restart finds its own `node-csr-` CSR; and
//!   **fall back to the bootstrap credential by itself** when the current certificate has
//!   expired or the apiserver refuses it (the kubelet stays stuck there: kubernetes#92676);
//! * the same for the serving certificate when one is configured (the kubelet's
//!   `serverTLSBootstrap`): requested with the client certificate, signer
//!   `kubernetes.io/kubelet-serving` (never auto-approved, so the wait says what to approve),
//!   stored as `kubelet-server-*.pem`, rotated at its own deadline;
//! * the file plan after success, as ordered [`FileStep`]s the front-end executes and
//!   acknowledges: write the pair, swap `-current.pem`, write the node kubeconfig, remove the key
//!   cache (see [`FileStep`] for the crash-safety each step must give; `store` is the std
//!   implementation, an embedded caller implements them over its own flash);
//! * when to wake up next, backoff included, and a structured [`Event`] for every step.
//!
//! # Driving it
//!
//! ```text
//! agent.start(&config)?;
//! loop {
//!     match agent.poll(now) {
//!         Action::Read(r)      => agent.on_read(now, read_file(r.path, r.max_len)),
//!         Action::File(step)   => agent.on_file_done(now, execute(step)),
//!         Action::Entropy{len} => agent.on_entropy(&random_bytes(len)),
//!         Action::Http(req)    => send it; agent.on_http_response_with(now, status,
//!                                 &Headers::retry_after(its Retry-After), body)
//!                                 (a 200 watch: on_stream_data per chunk until Close, then
//!                                  on_stream_end), or agent.on_transport_error(now, why),
//!         Action::Sleep{until} => sleep until `until`,
//!         Action::Event(e)     => print e.line,
//!         Action::Done(o)      => break (exit 0),
//!         Action::Failed(f)    => print f.line, break (exit 1),
//!     }
//! }
//! ```
//!
//! Every action must be answered before the next `poll`; a `poll` with an action unanswered
//! counts that action as failed (an I/O error, a transport error). All state, buffers included,
//! lives in the agent; nothing borrows from the caller past a call. [`Agent::idle`] is a
//! `const fn`, so an agent can live in a static and be started in place.
//!
//! # The CA refresh
//!
//! The node kubeconfig the agent writes names the CA for the apiserver as a file,
//! `<cert_dir>/ca.crt` ([`CA_FILE`]), never inline data, so that clients that re-read it (client-go
//! since v1.36 with `ClientsAllowCARotation`, the kubelet among them) follow a CA rotation. After
//! bootstrap the file holds the bootstrap kubeconfig's CA. In [`Mode::Run`], every
//! [`Config::ca_refresh_secs`] (±10 % jitter, so that a fleet started together does not ask
//! together; the first one an interval after start) and at [`Agent::wake`], the agent keeps it
//! current:
//!
//! 1. it reads `kube-public/cluster-info` over TLS that trusts the current CA file (anonymously:
//!    kubeadm grants that ConfigMap to `system:anonymous` only, so a node's identity would get
//!    403), and lists the ClusterTrustBundles of signer `kubernetes.io/kube-apiserver-serving`
//!    with its client certificate (`certificates.k8s.io/v1`, served from v1.37; a 404 means the
//!    API is not served and the source is skipped);
//! 2. the new bundle is the union of the CAs both sources publish (every one a CA certificate);
//!    if it is the set the file holds, nothing happens. A source that answered before and does
//!    not now (a restarting apiserver's 403, a 5xx, a broken connection) skips the refresh: the
//!    other alone could drop a CA the missing one still publishes;
//! 3. otherwise the apiserver must prove it: a request over TLS that trusts **only the new
//!    bundle** must complete. A bundle without the CA the apiserver's certificate chains to
//!    fails that handshake and is refused ([`Error::CaBundleUnproven`]), and nothing changes — so
//!    the CA the node is connected with is never dropped before the server presents a
//!    certificate from the new one;
//! 4. where the CA file is also what the client certificate is checked against (no
//!    [`Config::ca_bundle`], as in kubeadm clusters, where one CA signs both) and the client
//!    certificate does not chain to the proven bundle, the client certificate is rotated first
//!    (once per bundle; `step=ca state=deferred`), so that dropping the old CA never strands the
//!    node; if the new certificate does not chain to the bundle either, the bundle is refused;
//! 5. the proven bundle is written atomically ([`FileStep::WriteCa`]), and the node kubeconfig is
//!    rewritten to name the file if it did not.
//!
//! A CA rotation then goes CA1 → CA1+CA2 (accepted: the server still proves CA1) → a serving
//! certificate from CA2 (the file already trusts it) → CA2 only (accepted once the server
//! proves CA2). Every refresh says what it did: `step=ca state=unchanged|updated|refused|skipped`.
//!
//! Bad input (a corrupt kubeconfig, a certificate that does not match its key, a truncated cert
//! dir file, a key cache that is not a key) is a typed reason in the agent's decision
//! ([`Event`] `step=credentials state=unusable reason=<name>`, or [`Failure`]), never a panic,
//! and no file changes except by an explicit step of the plan.

use core::net::IpAddr;

use zeroize::Zeroize;

use crate::backend::SignatureVerifier;
use crate::csr::{MAX_NODE_NAME, MAX_SANS, Profile};
use crate::discovery::{self, Discovery};
use crate::engine::{self, Engine, Method, Naming, StreamControl};
use crate::error::{Error, Reason, Result, StoreErrorKind, VerifyError};
use crate::key::{NodeKey, SEC1_PEM_LEN};
use crate::keyref::{self, Holder};
use crate::kubeconfig::{Kubeconfig, NodeKubeconfig, Scalar, Source, write_node_kubeconfig};
use crate::metrics::Metrics;
use crate::out::Filled;
use crate::pin::CaPin;
use crate::pushback::Headers;
use crate::token::BootstrapToken;
use crate::verify::{self, Expected};
use crate::{pem, rfc3339, rotation};

mod action;
mod config;
mod device;
mod emit;
mod event;
mod helpers;
pub mod path;
mod state;
mod trust;

pub use action::*;
pub use config::*;
use device::DeviceKeys;
use emit::*;
use event::LineBuilder;
pub use event::{EVENT_LEN, Line, LogFormat};
use helpers::*;
pub use path::{MAX_PATH, PathBuf};
use state::*;

/// The client certificate store's prefix (`kubelet-client-*.pem`).
pub const PREFIX_CLIENT: &str = "kubelet-client";
/// The serving certificate store's prefix (`kubelet-server-*.pem`).
pub const PREFIX_SERVER: &str = "kubelet-server";
/// The node's CA file for the apiserver, in the cert dir: written after bootstrap, named by the
/// node kubeconfig, kept current by the CA refresh.
pub const CA_FILE: &str = "ca.crt";
/// How often [`Mode::Run`] re-reads the cluster's CA by default (seconds).
pub const DEFAULT_CA_REFRESH_SECS: i64 = 600;
/// Longest server URL kept.
pub const MAX_URL: usize = 512;
/// Largest CA bundle (PEM) kept, per source (the default `PEM` of [`Agent`]).
pub const MAX_CA_PEM: usize = engine::MAX_CA_PEM;
/// Largest certificate chain (PEM) kept for the current client credentials (the default `PEM`).
pub const MAX_CHAIN_PEM: usize = engine::MAX_CERT_PEM;
/// Largest private-key PEM block kept.
pub const MAX_KEY_PEM: usize = 4096;
/// Largest file the agent asks for (kubeconfigs).
pub const MAX_KUBECONFIG: usize = crate::kubeconfig::MAX_INPUT_LEN;
/// The kubelet's wait for `/healthz` before bootstrapping (it then goes on anyway).
pub const HEALTHZ_WAIT_SECS: i64 = 60;
/// Interval between `/healthz` probes.
pub const HEALTHZ_INTERVAL_SECS: i64 = 2;
/// Attempts at turning entropy into a key before giving up ([`Error::BadEntropy`]).
const KEY_ATTEMPTS: u32 = 8;
/// Room for what a file step writes: a pair (chain + key) or a kubeconfig with inline CA data
/// (the default `OUT` of [`Agent`]; with another `PEM`, `OUT` must hold `PEM + 227` and
/// `PEM / 3 * 4` plus the kubeconfig's other fields).
pub const MAX_OUT: usize = MAX_CHAIN_PEM + SEC1_PEM_LEN + MAX_CA_PEM / 3 * 4 + 8 * 1024;
const MAX_DETAIL: usize = 512;
const MAX_FRONT_END: usize = 16;
const MAX_UA: usize = 64;

// ---------------------------------------------------------------------------------------------
// Configuration

// ---------------------------------------------------------------------------------------------
// Actions

// ---------------------------------------------------------------------------------------------
// State

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum St {
    Idle,
    Start,
    RecoverClient,
    ReadKubeconfig,
    ReadNodeCa,
    ReadClientCert,
    ReadClientKey,
    ReadBundle,
    CheckClient,
    RecoverServer,
    ReadServing,
    Decide,
    DiscoverRun,
    WriteBootKc,
    ReadBootKc,
    ReadBootCa,
    ReadTokenFile,
    PrepareBootstrap,
    ReadKeyCache,
    KeyEntropy,
    /// The device: the current client key's public point.
    KeyPublic,
    /// The device: the key cache's public point.
    CachePublic,
    KeyGenerate,
    KeySign,
    /// The device: destroy the replaced key (its pair is no longer current).
    DestroyOld,
    /// The device: destroy the key this failed attempt made.
    DestroyNew,
    MakeDir,
    WriteKeyCache,
    Healthz,
    StartEngine,
    EngineRun,
    StorePair,
    StoreSwap,
    StoreKubeconfig,
    StoreRemoveCache,
    CleanupCache,
    CleanupDir,
    SweepCache,
    StoreCa,
    CaInfo,
    CaBundles,
    CaCompare,
    CaProbe,
    CaWrite,
    CaKubeconfig,
    Done,
    Failed,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Pending {
    None,
    Read,
    File,
    Entropy,
    Key,
    Healthz,
    Discovery,
    Engine,
    Trust,
}

/// Which connection a request goes over.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Conn {
    Bootstrap,
    Node,
}

/// The node agent. Its capacities, all fixed at compile time (the defaults are the hosts'; a
/// microcontroller picks what it can prove enough, and anything larger is a typed error, never
/// a truncation):
///
/// * `N`: the engine's work buffer (largest response or watch event; [`engine::Engine`]);
/// * `PEM`: each CA bundle and certificate chain kept ([`MAX_CA_PEM`]);
/// * `OUT`: what a file step writes, a pair or a kubeconfig ([`MAX_OUT`]);
/// * `PATH`: each path ([`MAX_PATH`]);
/// * `SANS`: the serving certificate's DNS names ([`MAX_SANS`]);
/// * `DISC`: discovery's buffer for the cluster-info answer
///   ([`discovery::DEFAULT_BUFFER`]).
///
/// All-zero bytes are a valid (not a started) agent, as for [`Engine`]: the C ABI builds agents
/// in place in zeroed memory and [`Agent::start`] resets every field.
pub struct Agent<
    const N: usize = { engine::DEFAULT_BUFFER },
    const PEM: usize = MAX_CA_PEM,
    const OUT: usize = MAX_OUT,
    const PATH: usize = MAX_PATH,
    const SANS: usize = MAX_SANS,
    const DISC: usize = { discovery::DEFAULT_BUFFER },
> {
    // Configuration.
    front_end: heapless::String<MAX_FRONT_END>,
    log_format: LogFormat,
    user_agent: heapless::String<MAX_UA>,
    node: heapless::String<MAX_NODE_NAME>,
    node_configured: bool,
    kubeconfig_path: PathBuf<PATH>,
    bootstrap_path: PathBuf<PATH>,
    cert_dir: PathBuf<PATH>,
    key_cache_path: PathBuf<PATH>,
    ca_file_path: PathBuf<PATH>,
    bundle_path: PathBuf<PATH>,
    discovery_on: bool,
    discovery_server: heapless::String<MAX_URL>,
    discovery_token: Option<BootstrapToken>,
    discovery_pins: heapless::Vec<CaPin, { discovery::MAX_PINS }>,
    discovery_unpinned: bool,
    discovery_timeout: i64,
    serving_on: bool,
    serving_dns: heapless::Vec<heapless::String<{ engine::MAX_DNS_NAME }>, SANS>,
    serving_ips: heapless::Vec<IpAddr, MAX_SANS>,
    bootstrap_wait: i64,
    rotation_wait: i64,
    expiration_seconds: Option<u32>,
    watch: bool,
    mode: Mode,
    rotate_now: RotateNow,
    utc_offset: i32,
    seed: u64,
    /// `None` is the software verifier (no reference in the idle state).
    verifier: Option<&'static (dyn SignatureVerifier + Sync)>,
    ca_refresh_secs: i64,

    // What was read.
    node_kc: ClusterInfo<PEM, PATH>,
    node_kc_dir: PathBuf<PATH>,
    cert_path: PathBuf<PATH>,
    key_path: PathBuf<PATH>,
    need_node_ca: bool,
    need_cert: bool,
    need_key: bool,
    kc_points_at_current: bool,
    kc_names_ca_file: bool,
    client_chain: heapless::Vec<u8, PEM>,
    client_key: heapless::Vec<u8, MAX_KEY_PEM>,
    bundle: heapless::Vec<u8, PEM>,
    bundle_loaded: bool,
    client: Verdict,
    serving: Verdict,
    client_dir_exists: bool,
    boot: ClusterInfo<PEM, PATH>,
    boot_dir: PathBuf<PATH>,
    token_path: PathBuf<PATH>,
    token: Option<BootstrapToken>,

    // The attempt.
    kind: Kind,
    metrics: Metrics,
    key: Option<NodeKey>,
    /// The device holding the node key, and this attempt's key in it.
    dk: DeviceKeys,
    key_generated: bool,
    key_tries: u32,
    dir_created: bool,
    issued: bool,
    healthz_until: i64,
    announced_wait: bool,
    /// When the wait for approval began, and when to say again that it goes on (0: never).
    wait_since: i64,
    progress_at: i64,
    progress_gap: i64,
    /// A request just failed: announce the engine's backoff.
    retrying: bool,
    force_bootstrap: bool,
    swept: bool,
    just_stored: Option<Kind>,
    attempts_failed: u32,
    rotations: u32,
    conn: Conn,
    conn_id: u32,
    sleep_until: Option<i64>,
    jitter: engine::Jitter,
    /// When the next CA refresh is due (`None`: not scheduled yet).
    ca_next: Option<i64>,
    /// Which sources the refresh under way found (`trust::SOURCE_*`).
    ca_sources: u8,
    /// The candidate bundle (a hash) a client rotation was forced for, so that it is forced once.
    ca_rotated_for: u64,
    /// The sources that have answered with their CAs before (`trust::SOURCE_*`).
    ca_seen: u8,

    // Machinery.
    engine: Engine<N, PEM, SANS>,
    discovery: Discovery<DISC>,
    st: St,
    pending: Pending,
    /// Whether the pending action was handed out (an unanswered one is abandoned at `poll`).
    handed_out: bool,
    read_role: FileRole,
    step_paths: [PathBuf<PATH>; 3],
    out: heapless::Vec<u8, OUT>,
    events: heapless::Deque<(Line, bool), 4>,
    shown: Line,
    failure: Option<Error>,
    detail: heapless::String<MAX_DETAIL>,
    outcome: Outcome,
}

impl<
    const N: usize,
    const PEM: usize,
    const OUT: usize,
    const PATH: usize,
    const SANS: usize,
    const DISC: usize,
> Drop for Agent<N, PEM, OUT, PATH, SANS, DISC>
{
    fn drop(&mut self) {
        self.wipe();
    }
}

impl<
    const N: usize,
    const PEM: usize,
    const OUT: usize,
    const PATH: usize,
    const SANS: usize,
    const DISC: usize,
> core::fmt::Debug for Agent<N, PEM, OUT, PATH, SANS, DISC>
{
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("Agent")
            .field("state", &self.st)
            .field("pending", &self.pending)
            .field("node", &self.node.as_str())
            .field("client", &self.client)
            .field("serving", &self.serving)
            .field("failure", &self.failure)
            .finish_non_exhaustive()
    }
}

impl<
    const N: usize,
    const PEM: usize,
    const OUT: usize,
    const PATH: usize,
    const SANS: usize,
    const DISC: usize,
> Default for Agent<N, PEM, OUT, PATH, SANS, DISC>
{
    fn default() -> Self {
        Self::idle()
    }
}

impl<
    const N: usize,
    const PEM: usize,
    const OUT: usize,
    const PATH: usize,
    const SANS: usize,
    const DISC: usize,
> Agent<N, PEM, OUT, PATH, SANS, DISC>
{
    /// An agent that has not started: `const`, so it can initialise a static.
    pub const fn idle() -> Self {
        Agent {
            front_end: heapless::String::new(),
            log_format: LogFormat::Text,
            user_agent: heapless::String::new(),
            node: heapless::String::new(),
            node_configured: false,
            kubeconfig_path: PathBuf::new(),
            bootstrap_path: PathBuf::new(),
            cert_dir: PathBuf::new(),
            key_cache_path: PathBuf::new(),
            ca_file_path: PathBuf::new(),
            bundle_path: PathBuf::new(),
            discovery_on: false,
            discovery_server: heapless::String::new(),
            discovery_token: None,
            discovery_pins: heapless::Vec::new(),
            discovery_unpinned: false,
            discovery_timeout: discovery::DEFAULT_TIMEOUT_SECS,
            serving_on: false,
            serving_dns: heapless::Vec::new(),
            serving_ips: heapless::Vec::new(),
            bootstrap_wait: engine::BOOTSTRAP_WAIT_SECS,
            rotation_wait: engine::ROTATION_WAIT_SECS,
            expiration_seconds: None,
            watch: true,
            mode: Mode::Once,
            rotate_now: RotateNow { client: false, serving: false },
            utc_offset: 0,
            seed: 0,
            verifier: None,
            ca_refresh_secs: 0,
            node_kc: ClusterInfo::empty(),
            node_kc_dir: PathBuf::new(),
            cert_path: PathBuf::new(),
            key_path: PathBuf::new(),
            need_node_ca: false,
            need_cert: false,
            need_key: false,
            kc_points_at_current: false,
            kc_names_ca_file: false,
            client_chain: heapless::Vec::new(),
            client_key: heapless::Vec::new(),
            bundle: heapless::Vec::new(),
            bundle_loaded: false,
            client: Verdict::Unknown,
            serving: Verdict::Unknown,
            client_dir_exists: false,
            boot: ClusterInfo::empty(),
            boot_dir: PathBuf::new(),
            token_path: PathBuf::new(),
            token: None,
            kind: Kind::Bootstrap,
            metrics: Metrics::new(),
            key: None,
            dk: DeviceKeys::idle(),
            key_generated: false,
            key_tries: 0,
            dir_created: false,
            issued: false,
            healthz_until: 0,
            announced_wait: false,
            wait_since: 0,
            progress_at: 0,
            progress_gap: 0,
            retrying: false,
            force_bootstrap: false,
            swept: false,
            just_stored: None,
            attempts_failed: 0,
            rotations: 0,
            conn: Conn::Node,
            conn_id: 0,
            sleep_until: None,
            jitter: engine::Jitter(0),
            ca_next: None,
            ca_sources: 0,
            ca_rotated_for: 0,
            ca_seen: 0,
            engine: Engine::idle(),
            discovery: Discovery::idle(),
            st: St::Idle,
            pending: Pending::None,
            handed_out: false,
            read_role: FileRole::Kubeconfig,
            step_paths: [PathBuf::new(), PathBuf::new(), PathBuf::new()],
            out: heapless::Vec::new(),
            events: heapless::Deque::new(),
            shown: Line::new(),
            failure: None,
            detail: heapless::String::new(),
            outcome: Outcome { client: None, serving: None },
        }
    }

    /// After [`Mode::Check`] has ended in [`Action::Done`]: the verdicts and what they were
    /// made from. `None` in any other mode or state.
    pub fn status(&self) -> Option<Status<'_>> {
        if self.mode != Mode::Check || self.st != St::Done {
            return None;
        }
        fn verdict(v: Verdict) -> core::result::Result<CertStatus, Unusable> {
            match v {
                Verdict::Valid(c) => Ok(c),
                Verdict::Unusable(error, what) => Err(Unusable { error, what: what.as_str() }),
                Verdict::Unknown => Err(Unusable {
                    error: Error::Store(StoreErrorKind::NotFound),
                    what: Part::Kubeconfig.as_str(),
                }),
            }
        }
        fn file_or(path: &str, inline: bool) -> Origin<'_> {
            if !path.is_empty() {
                Origin::File(path)
            } else if inline {
                Origin::Data
            } else {
                Origin::None
            }
        }
        let client = CertCheck {
            verdict: verdict(self.client),
            chain_pem: &self.client_chain,
            certificate: file_or(&self.cert_path, !self.client_chain.is_empty()),
            key: file_or(&self.key_path, !self.client_key.is_empty()),
        };
        let missing =
            Verdict::Unusable(Error::Store(StoreErrorKind::NotFound), Part::ServingCertificate);
        let serving_file = if self.serving == missing || self.step_paths[0].is_empty() {
            Origin::None
        } else {
            Origin::File(&self.step_paths[0])
        };
        let serving = CertCheck {
            verdict: verdict(self.serving),
            chain_pem: &self.out,
            certificate: serving_file,
            key: serving_file,
        };
        let (ca_pem, ca): (&[u8], Origin<'_>) = if !self.bundle_path.is_empty() {
            (&self.bundle, file_or(&self.bundle_path, false))
        } else if !self.node_kc.ca_file.is_empty() {
            (&self.node_kc.ca, file_or(&self.node_kc.ca_file, false))
        } else {
            (&self.node_kc.ca, if self.node_kc.ca.is_empty() { Origin::None } else { Origin::Data })
        };
        Some(Status { node: &self.node, client, serving, ca_pem, ca })
    }

    fn verifier(&self) -> &'static (dyn SignatureVerifier + Sync) {
        self.verifier.unwrap_or(engine::SOFTWARE)
    }

    fn wipe(&mut self) {
        self.client_key.as_mut_slice().zeroize();
        self.client_key.clear();
        let _ = self.out.resize_default(OUT);
        self.out.as_mut_slice().zeroize();
        self.out.clear();
        self.key = None;
        self.dk.new_ref.clear();
        self.token = None;
        self.discovery_token = None;
    }

    /// The certificate metrics (the kubelet's: [`crate::metrics`]), as of the last `poll`: copy
    /// them out and [`crate::metrics::render`] them where they are served. They start at zero
    /// with [`Agent::start`] (a new run is a new process to a scraper).
    pub fn metrics(&self) -> Metrics {
        self.metrics
    }

    /// Copy `config` and get ready; the first [`Agent::poll`] starts reading. Whatever the
    /// agent held before is forgotten (secrets wiped). Errors ([`Error::InvalidConfig`],
    /// [`Error::TooLarge`] for a path over [`MAX_PATH`], the SAN checks' errors): the agent is
    /// then idle.
    pub fn start(&mut self, config: &Config<'_>) -> Result<()> {
        self.reset();
        let r = self.configure(config);
        if r.is_err() {
            self.reset();
        }
        r
    }

    /// Back to idle, forgetting everything (secrets wiped): every field as [`Agent::idle`] has
    /// it (the destructuring below makes a new field a compile error until it is reset here), so
    /// an agent reset in place is the idle agent, whatever it held.
    pub fn reset(&mut self) {
        self.wipe();
        let Agent {
            front_end,
            log_format,
            user_agent,
            node,
            node_configured,
            kubeconfig_path,
            bootstrap_path,
            cert_dir,
            key_cache_path,
            ca_file_path,
            bundle_path,
            discovery_on,
            discovery_server,
            discovery_token,
            discovery_pins,
            discovery_unpinned,
            discovery_timeout,
            serving_on,
            serving_dns,
            serving_ips,
            bootstrap_wait,
            rotation_wait,
            expiration_seconds,
            watch,
            mode,
            rotate_now,
            utc_offset,
            seed,
            verifier,
            ca_refresh_secs,
            node_kc: _,
            node_kc_dir: _,
            cert_path: _,
            key_path: _,
            need_node_ca: _,
            need_cert: _,
            need_key: _,
            kc_points_at_current: _,
            kc_names_ca_file: _,
            client_chain: _,
            client_key: _,
            bundle: _,
            bundle_loaded: _,
            client: _,
            serving: _,
            client_dir_exists: _,
            boot: _,
            boot_dir: _,
            token_path: _,
            token: _,
            kind,
            metrics,
            key: _,
            dk,
            key_generated,
            key_tries,
            dir_created,
            issued,
            healthz_until,
            announced_wait,
            wait_since,
            progress_at,
            progress_gap,
            retrying,
            force_bootstrap,
            swept,
            just_stored,
            attempts_failed,
            rotations,
            conn,
            conn_id,
            sleep_until,
            jitter,
            ca_next,
            ca_sources,
            ca_rotated_for,
            ca_seen,
            engine,
            discovery,
            st,
            pending,
            handed_out,
            read_role,
            step_paths,
            out: _,
            events,
            shown,
            failure,
            detail,
            outcome,
        } = self;
        // Configuration.
        front_end.clear();
        *log_format = LogFormat::Text;
        user_agent.clear();
        node.clear();
        *node_configured = false;
        kubeconfig_path.clear();
        bootstrap_path.clear();
        cert_dir.clear();
        key_cache_path.clear();
        ca_file_path.clear();
        bundle_path.clear();
        *discovery_on = false;
        discovery_server.clear();
        *discovery_token = None;
        discovery_pins.clear();
        *discovery_unpinned = false;
        *discovery_timeout = discovery::DEFAULT_TIMEOUT_SECS;
        *serving_on = false;
        serving_dns.clear();
        serving_ips.clear();
        *bootstrap_wait = engine::BOOTSTRAP_WAIT_SECS;
        *rotation_wait = engine::ROTATION_WAIT_SECS;
        *expiration_seconds = None;
        *watch = true;
        *mode = Mode::Once;
        *rotate_now = RotateNow { client: false, serving: false };
        *utc_offset = 0;
        *seed = 0;
        *verifier = None;
        dk.reset();
        *ca_refresh_secs = 0;
        // The attempt.
        *kind = Kind::Bootstrap;
        *metrics = Metrics::new();
        *key_generated = false;
        *key_tries = 0;
        *dir_created = false;
        *issued = false;
        *healthz_until = 0;
        *announced_wait = false;
        *wait_since = 0;
        *progress_at = 0;
        *progress_gap = 0;
        *retrying = false;
        *force_bootstrap = false;
        *swept = false;
        *just_stored = None;
        *attempts_failed = 0;
        *rotations = 0;
        *conn = Conn::Node;
        *conn_id = 0;
        *sleep_until = None;
        *jitter = engine::Jitter(0);
        *ca_next = None;
        *ca_sources = 0;
        *ca_rotated_for = 0;
        *ca_seen = 0;
        // Machinery.
        engine.reset();
        discovery.reset();
        *st = St::Idle;
        *pending = Pending::None;
        *handed_out = false;
        *read_role = FileRole::Kubeconfig;
        for p in step_paths.iter_mut() {
            p.clear();
        }
        events.clear();
        shown.clear();
        *failure = None;
        detail.clear();
        *outcome = Outcome { client: None, serving: None };
        // What was read (and `out`, `client_key`, `key`, `token`: wiped above).
        self.clear_loaded();
    }

    fn clear_loaded(&mut self) {
        self.node_kc.clear();
        self.node_kc_dir.clear();
        self.cert_path.clear();
        self.key_path.clear();
        self.need_node_ca = false;
        self.need_cert = false;
        self.need_key = false;
        self.kc_points_at_current = false;
        self.kc_names_ca_file = false;
        self.client_chain.clear();
        self.client_key.as_mut_slice().zeroize();
        self.client_key.clear();
        self.dk.client_point = None;
        self.bundle.clear();
        self.bundle_loaded = false;
        self.client = Verdict::Unknown;
        self.serving = Verdict::Unknown;
        self.client_dir_exists = false;
        self.boot.clear();
        self.boot_dir.clear();
        self.token_path.clear();
        self.token = None;
        if !self.node_configured {
            self.node.clear();
        }
    }

    /// End a sleep between attempts now (a daemon's SIGHUP): the next [`Agent::poll`] starts
    /// over, reading every file again — the node kubeconfig, the credentials, the bootstrap
    /// kubeconfig when it comes to that — as after the sleep. It says so (`step=wake`). Returns
    /// whether the agent was sleeping between attempts; an attempt under way (a wait for
    /// approval, a backoff inside a request) is not disturbed.
    pub fn wake(&mut self) -> bool {
        if self.st != St::Start || self.sleep_until.is_none() {
            return false;
        }
        self.sleep_until = None;
        // Reloading re-reads the cluster's CA too.
        self.ca_next = Some(i64::MIN);
        let line = self.ev("wake").kv("reason", "asked").done();
        self.event(line);
        true
    }

    /// Update the local time's offset from UTC (seconds east), used to name data files.
    pub fn set_utc_offset(&mut self, utc_offset: i32) {
        self.utc_offset = utc_offset;
    }

    /// The node name (configured, or learnt from the current client certificate; empty until
    /// known).
    pub fn node_name(&self) -> &str {
        &self.node
    }

    /// The read handed out by the last [`Agent::poll`] and not answered yet, again.
    pub fn outstanding_read(&self) -> Option<Read<'_>> {
        if self.pending != Pending::Read || !self.handed_out {
            return None;
        }
        self.read_spec().map(|(role, max_len, path)| Read { path, role, max_len })
    }

    /// The file step handed out by the last [`Agent::poll`] and not answered yet, again.
    pub fn outstanding_file_step(&self) -> Option<FileStep<'_>> {
        if self.pending != Pending::File || !self.handed_out {
            return None;
        }
        Some(self.file_step())
    }

    /// The key operation handed out by the last [`Agent::poll`] and not answered yet, again.
    pub fn outstanding_key_op(&self) -> Option<KeyOp<'_>> {
        if self.pending != Pending::Key || !self.handed_out {
            return None;
        }
        self.key_op()
    }

    /// Whether an [`Action::Entropy`] was handed out and not answered yet.
    pub fn entropy_outstanding(&self) -> bool {
        self.pending == Pending::Entropy && self.handed_out
    }

    /// Whether a CSR of the current attempt exists on the server (created or adopted).
    pub fn csr_created(&self) -> bool {
        self.engine.created()
    }

    // -----------------------------------------------------------------------------------------
    // Events and failures

    fn event(&mut self, line: Line) {
        self.push_event(line, false);
    }

    fn push_event(&mut self, line: Line, update: bool) {
        if self.events.is_full() {
            let _ = self.events.pop_front();
        }
        let _ = self.events.push_back((line, update));
    }

    fn ev(&self, step: &str) -> LineBuilder {
        LineBuilder::new(&self.front_end, step, self.log_format)
    }

    fn fail(&mut self, e: Error, detail: &str) {
        self.failure = Some(e);
        self.detail.clear();
        for c in detail.chars() {
            if self.detail.push(c).is_err() {
                break;
            }
        }
        self.st = St::Failed;
    }

    // -----------------------------------------------------------------------------------------
    // Polling

    /// What to do now (see [`Action`]).
    pub fn poll(&mut self, now: i64) -> Action<'_> {
        if self.pending != Pending::None && self.handed_out {
            self.abandon(now);
        }
        self.handed_out = false;
        loop {
            if let Some((line, update)) = self.events.pop_front() {
                self.shown = line;
                let step = step_of(&self.shown);
                let ready = step == "sleep" || step == "done";
                return Action::Event(Event { step, line: &self.shown, update, ready });
            }
            if self.needs_io(now) {
                break;
            }
            self.step(now);
        }
        self.handed_out = true;
        self.emit(now)
    }

    /// The outstanding action was not answered: it failed.
    fn abandon(&mut self, now: i64) {
        match self.pending {
            Pending::Read => self.on_read(now, Err(StoreErrorKind::Io)),
            Pending::File => self.on_file_done(now, Err(StoreErrorKind::Io)),
            Pending::Healthz | Pending::Discovery | Pending::Engine | Pending::Trust => {
                self.on_transport_error(now, "no answer before the next poll")
            }
            Pending::Key => self.key_abandoned(now),
            Pending::Entropy | Pending::None => self.pending = Pending::None,
        }
    }
}

mod flow;
mod input;
mod load;
