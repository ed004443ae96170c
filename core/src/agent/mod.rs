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
//! let mut memory = [0u8; CAPS.memory_len()];     // or a Vec, or a C caller's block
//! let mut agent = Agent::new(&mut memory, &CAPS)?; // the capacities checked here
//! agent.start(&config)?;
//! loop {
//!     match agent.poll(now) {
//!         Action::Read(r)      => agent.on_read(now, read_file(r.path, r.max_len)),
//!         Action::File(step)   => agent.on_file_done(now, execute(step)),
//!         Action::Entropy{len} => agent.on_entropy(&random_bytes(len)),
//!         Action::Key(op)      => the device's answer: agent.on_key_public / _generated /
//!                                 on_signature / on_key_destroyed,
//!         Action::Http(req)    => send it; agent.on_http_response(now, status,
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
//! counts that action as failed (an I/O error, a transport error). All state lives in the agent
//! and the memory it was given; nothing borrows from the caller past a call.
//!
//! # How it is built
//!
//! The agent is a conductor: it holds its sub-machines, each of which owns its state and its
//! regions of the memory, and routes each answer to the one that asked. It decides what happens
//! between them (bootstrap or rotate, retry or stop, when to sleep).
//!
//! | sub-machine | owns |
//! |---|---|
//! | [`Capacities`] (`memory.rs`) | the carving of the caller's memory into regions |
//! | settings (`config.rs`) | the copy of the [`Config`], its paths and serving names |
//! | loader (`loader.rs`) | the node's files as read, the verdict on each certificate, the bootstrap kubeconfig |
//! | keys (`keys.rs`) | this attempt's key, in software or in a device; the key cache |
//! | engine (`crate::engine`) | one CSR from create through watch to a validated certificate |
//! | discovery (`crate::discovery`) | kubeadm token discovery |
//! | trust (`trust.rs`) | the CA refresh |
//! | plan (`plan.rs`) | the crash-safe order of the file steps, the cleanup, the sweep |
//! | events (`event.rs`) | the lines, text or JSON, on their way out |
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

use zeroize::Zeroize;

use crate::buf::Bytes;
use crate::discovery::Discovery;
use crate::engine::Engine;
use crate::error::{Error, Result, StoreErrorKind};
use crate::metrics::Metrics;
use crate::pushback::Headers;

mod action;
mod attempt;
mod attestation;
mod config;
mod event;
mod flow;
mod keys;
mod loader;
mod memory;
mod path;
mod plan;
mod probe;
mod route;
mod trust;
mod verdict;

pub use crate::engine::{Method, StreamControl};
pub use action::*;
pub use config::*;
pub use event::{EVENT_LEN, Line};
pub use memory::{CA_REFRESH_RESPONSE, Capacities, MIN_PATH, MIN_PEM, MIN_RESPONSE};
pub use probe::SELF_SUBJECT_REVIEWS_PATH;
pub use trust::{APISERVER_SERVING_SIGNER, TRUST_BUNDLES_PATH};

use config::Settings;
use event::Events;
use flow::{Attempt, Detail, Io, Schedule, Wait};
use keys::Keys;
use loader::Loader;
use memory::Regions;
use plan::Plan;
use trust::Trust;

/// The client certificate store's prefix (`kubelet-client-*.pem`).
pub const PREFIX_CLIENT: &str = "kubelet-client";
/// How far behind the last poll's `now` a poll's may be before the agent takes the wall clock
/// for stepped back (see [`Agent::poll`]); less is a slew, or a front-end's rounding.
pub const CLOCK_STEP_SECS: i64 = 5;
/// The serving certificate store's prefix (`kubelet-server-*.pem`).
pub const PREFIX_SERVER: &str = "kubelet-server";
/// The node's CA file for the apiserver, in the cert dir: written after bootstrap, named by the
/// node kubeconfig, kept current by the CA refresh.
pub const CA_FILE: &str = "ca.crt";
/// How often [`Mode::Run`] re-reads the cluster's CA by default (seconds).
pub const DEFAULT_CA_REFRESH_SECS: i64 = 600;
/// Longest server URL kept.
pub const MAX_URL: usize = 512;
/// How long a bootstrap waits for its certificate by default (the kubelet: one hour).
pub const DEFAULT_BOOTSTRAP_WAIT_SECS: i64 = crate::engine::BOOTSTRAP_WAIT_SECS;
/// How long a rotation or serving request waits by default (the certificate manager: 15 min).
pub const DEFAULT_ROTATION_WAIT_SECS: i64 = crate::engine::ROTATION_WAIT_SECS;
/// The earliest time the agent's clock is believed (2026-12-01T00:00:00Z, this release's date):
/// a clock before it (no battery-backed RTC: 1970 until NTP answers) judges no certificate, and
/// the agent waits for it ([`Error::ClockUntrusted`]).
pub const CLOCK_FLOOR: i64 = 1_796_083_200;
/// The kubelet's wait for `/healthz` before bootstrapping (it then goes on anyway).
pub const HEALTHZ_WAIT_SECS: i64 = 60;
/// Interval between `/healthz` probes.
pub const HEALTHZ_INTERVAL_SECS: i64 = 2;

/// What an attempt is for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Kind {
    Bootstrap,
    Rotate,
    Serving,
}

impl Kind {
    fn as_str(self) -> &'static str {
        match self {
            Kind::Bootstrap => "bootstrap",
            Kind::Rotate => "rotate",
            Kind::Serving => "serving",
        }
    }
}

/// Where the agent is: which sub-machine has the turn, or an internal step of its own.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Phase {
    Idle,
    /// Begin again: read the node's files.
    Start,
    /// The loader reads and judges the node's files.
    Load,
    /// Decide: nothing to do, rotate, bootstrap, refresh the CA, sleep or stop.
    Decide,
    /// The file plan sweeps a stale key cache.
    Sweep,
    /// The CA refresh.
    Trust,
    /// kubeadm discovery.
    Discover,
    /// The file plan writes the discovered bootstrap kubeconfig.
    WriteBootstrap,
    /// The loader reads the bootstrap kubeconfig.
    Boot,
    /// Check what a bootstrap needs.
    Prepare,
    /// The key machine makes (or finds) this attempt's key.
    Key,
    /// The kubelet's wait for `/healthz`.
    Healthz,
    /// The key machine has the device sign the CSR.
    Sign,
    /// Start the engine.
    StartEngine,
    /// An attested bootstrap: the TPM certifies the key over the CSR built.
    Attest,
    /// The engine: one CSR.
    Engine,
    /// The file plan stores the issued pair.
    Store,
    /// The file plan cleans up after a failed attempt.
    Cleanup,
    /// The probe: who the apiserver takes the current certificate for.
    Probe,
    Done,
    Failed,
}

/// What the front-end was asked and has not answered yet.
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
    Probe,
}

/// Which connection a request goes over.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Conn {
    Bootstrap,
    Node,
    /// The attempt's cluster, presenting the pair just issued (in `out`).
    Issued,
}

/// The node agent over the memory `'m` its caller gave it (see the [module docs](self)).
pub struct Agent<'m> {
    settings: Settings<'m>,
    events: Events,
    loader: Loader<'m>,
    keys: Keys,
    attestation: attestation::Attestation,
    engine: Engine<'m>,
    discovery: Discovery,
    trust: Trust,
    plan: Plan<'m>,
    /// What a file step writes (lent to the sub-machine that has the turn).
    out: Bytes<'m>,
    metrics: Metrics,
    phase: Phase,
    io: Io,
    attempt: Attempt,
    wait: Wait,
    schedule: Schedule,
    failure: Option<Error>,
    detail: Detail,
    outcome: Outcome,
}

impl Drop for Agent<'_> {
    fn drop(&mut self) {
        self.wipe();
    }
}

impl core::fmt::Debug for Agent<'_> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("Agent")
            .field("phase", &self.phase)
            .field("pending", &self.io.pending)
            .field("node", &self.loader.node.as_str())
            .field("client", &self.loader.client)
            .field("serving", &self.loader.serving)
            .field("failure", &self.failure)
            .finish_non_exhaustive()
    }
}

impl<'m> Agent<'m> {
    /// An agent that has not started, over `memory` carved for `caps`: [`Error::Capacity`]
    /// names a capacity too small for what it must hold ([`Capacities::check`]), or
    /// [`crate::error::Capacity::Memory`] when `memory` is shorter than
    /// [`Capacities::memory_len`].
    pub fn new(memory: &'m mut [u8], caps: &Capacities) -> Result<Self> {
        let r = Regions::carve(memory, caps)?;
        Ok(Agent {
            settings: Settings::new(r.settings, r.dns),
            events: Events::new(),
            loader: Loader::new(r.loader_paths, r.loader_pems, r.key),
            keys: Keys::new(),
            attestation: attestation::Attestation::new(),
            engine: Engine::new(r.work, r.cert),
            discovery: Discovery::idle(),
            trust: Trust::new(),
            plan: Plan::new(r.plan),
            out: r.out,
            metrics: Metrics::new(),
            phase: Phase::Idle,
            io: Io::new(),
            attempt: Attempt::new(),
            wait: Wait::new(),
            schedule: Schedule::new(),
            failure: None,
            detail: Detail::new(),
            outcome: Outcome { client: None, serving: None },
        })
    }

    /// Copy `config` and get ready; the first [`Agent::poll`] starts reading. Whatever the
    /// agent held before is forgotten (secrets wiped). Errors ([`Error::InvalidConfig`],
    /// [`Error::TooLarge`] for a path over the `path` capacity, [`Error::Capacity`] for a work
    /// buffer too small for the CA refresh, the SAN checks' errors): the agent is then idle.
    pub fn start(&mut self, config: &Config<'_>) -> Result<()> {
        self.reset();
        let r = self.configure(config);
        if r.is_err() {
            self.reset();
        }
        r
    }

    fn configure(&mut self, c: &Config<'_>) -> Result<()> {
        self.events.configure(c.front_end, c.log_format)?;
        self.settings.configure(c)?;
        if Trust::on(&self.settings) && self.engine.scratch().len() < CA_REFRESH_RESPONSE {
            return Err(Error::Capacity(crate::error::Capacity::Response));
        }
        self.schedule.configure(&self.settings);
        self.phase = Phase::Start;
        Ok(())
    }

    /// Back to idle, forgetting everything (secrets wiped): every sub-machine as
    /// [`Agent::new`] made it (each one's `reset` destructures it, so a new field is a compile
    /// error until it is reset there). Only the connection ids go on from where they were
    /// ([`Connection::id`] never repeats in an agent's life).
    pub fn reset(&mut self) {
        self.wipe();
        let Agent {
            settings,
            events,
            loader,
            keys,
            attestation,
            engine,
            discovery,
            trust,
            plan,
            out,
            metrics,
            phase,
            io,
            attempt,
            wait,
            schedule,
            failure,
            detail,
            outcome,
        } = self;
        settings.reset();
        events.reset();
        loader.reset();
        loader.forget_proofs();
        keys.reset();
        attestation.reset();
        engine.reset();
        discovery.reset();
        trust.reset();
        plan.reset();
        out.clear();
        *metrics = Metrics::new();
        *phase = Phase::Idle;
        // Connection ids never repeat in an agent's life: a front-end may still hold a session
        // made for an id of a previous start, with other settings (a client certificate or
        // none), and must not be handed it again.
        let next_id = io.conn_id.wrapping_add(2);
        *io = Io::new();
        io.conn_id = next_id;
        *attempt = Attempt::new();
        *wait = Wait::new();
        *schedule = Schedule::new();
        *failure = None;
        detail.clear();
        *outcome = Outcome { client: None, serving: None };
    }

    /// Wipe every secret: the file-step output, the client key, this attempt's key, the
    /// tokens.
    fn wipe(&mut self) {
        self.out.wipe();
        self.loader.client_key.wipe();
        self.loader.token = None;
        self.keys.reset();
        self.settings.discovery = None;
        let mut detail = core::mem::take(&mut self.detail).into_bytes();
        detail.as_mut_slice().zeroize();
    }

    /// After [`Mode::Check`] has ended in [`Action::Done`]: the verdicts and what they were
    /// made from. `None` in any other mode or state.
    pub fn status(&self) -> Option<Status<'_>> {
        if self.settings.mode != Mode::Check || self.phase != Phase::Done {
            return None;
        }
        Some(self.loader.status(&self.settings, &self.out))
    }

    /// The certificate metrics (the kubelet's: [`crate::metrics`]), as of the last `poll`: copy
    /// them out and [`crate::metrics::render`] them where they are served. They start at zero
    /// with [`Agent::start`] (a new run is a new process to a scraper).
    pub fn metrics(&self) -> Metrics {
        self.metrics
    }

    /// End a sleep between attempts now (a daemon's SIGHUP): the next [`Agent::poll`] starts
    /// over, reading every file again — the node kubeconfig, the credentials, the bootstrap
    /// kubeconfig when it comes to that — as after the sleep. It says so (`step=wake`). Returns
    /// whether the agent was sleeping between attempts. During an attempt the wake is not lost:
    /// a backoff inside a request ends now (the request is retried), the wait for approval goes
    /// on, and the sleep that follows the attempt ends at once (`step=wake reason=asked`).
    pub fn wake(&mut self) -> bool {
        match self.phase {
            Phase::Start if self.schedule.sleep_until.is_some() => {
                self.end_sleep("asked");
                true
            }
            Phase::Idle | Phase::Start | Phase::Done | Phase::Failed => false,
            _ => {
                self.schedule.wake_pending = true;
                if self.phase == Phase::Engine && self.engine.retry_now() {
                    self.schedule.sleep_until = None;
                }
                false
            }
        }
    }

    /// End the sleep between attempts (`reason`: why), reading everything again.
    fn end_sleep(&mut self, reason: &str) {
        self.schedule.sleep_until = None;
        self.schedule.wake_pending = false;
        // Reloading re-reads the cluster's CA too.
        self.trust.now();
        let line = self.events.ev("wake").kv("reason", reason).done();
        self.events.push(line);
    }

    /// A wall clock stepped back by more than [`CLOCK_STEP_SECS`] since the last poll (NTP at
    /// last answering an edge device, an operator's `date -s`) would stretch every wait by the
    /// step: between attempts the credentials are judged again by the new clock at once
    /// (`step=wake reason=clock-stepped-back`); inside an attempt its waits move back with the
    /// clock. A clock stepped forward needs nothing: waits end early, and what is judged is
    /// judged by the new clock (the edge-clock rule: `CLOCK_FLOOR`, `clock-untrusted`).
    fn watch_clock(&mut self, now: i64) {
        let Some(last) = self.schedule.last_now.replace(now) else { return };
        let back = last.saturating_sub(now);
        if back <= CLOCK_STEP_SECS {
            return;
        }
        if self.phase == Phase::Start && self.schedule.sleep_until.is_some() {
            return self.end_sleep("clock-stepped-back");
        }
        if let Some(t) = &mut self.schedule.sleep_until {
            *t = t.saturating_sub(back).max(now);
        }
        self.engine.clock_stepped_back(back);
        self.attempt.healthz_until = self.attempt.healthz_until.saturating_sub(back);
    }

    /// Update the local time's offset from UTC (seconds east), used to name data files.
    pub fn set_utc_offset(&mut self, utc_offset: i32) {
        self.settings.utc_offset = utc_offset;
    }

    /// The node name (configured, or learnt from the current client certificate; empty until
    /// known).
    pub fn node_name(&self) -> &str {
        &self.loader.node
    }

    /// Whether a CSR of the current attempt exists on the server (created or adopted).
    pub fn csr_created(&self) -> bool {
        self.engine.created()
    }

    /// The action handed out by the last [`Agent::poll`] and not answered yet, again (reads,
    /// file steps, device operations, requests); `None` when there is none.
    pub fn outstanding(&self) -> Option<Action<'_>> {
        if self.io.pending == Pending::None || !self.io.handed_out {
            return None;
        }
        if self.io.pending == Pending::Entropy {
            return Some(Action::Entropy { len: crate::key::ENTROPY_LEN });
        }
        self.io_action(self.io.now)
    }

    /// What to do now (see [`Action`]).
    pub fn poll(&mut self, now: i64) -> Action<'_> {
        self.watch_clock(now);
        if self.io.pending != Pending::None && self.io.handed_out {
            self.abandon(now);
        }
        self.io.handed_out = false;
        let mut io = false;
        loop {
            // The lines queued on the way go out before the action that follows them: a line
            // queued beside a watch would otherwise wait for the watch to end. (`advance` is a
            // query once it needs I/O: the next poll comes back to the same action.)
            if self.events.pending() {
                return self.next_event().map_or(Action::Sleep { until: now }, Action::Event);
            }
            if io {
                break;
            }
            if self.schedule.wake_pending
                && self.phase == Phase::Start
                && self.schedule.sleep_until.is_some()
            {
                // The wake that came during the attempt that has just ended.
                self.end_sleep("asked");
                continue;
            }
            if let Some(t) = self.schedule.sleep_until {
                if now < t {
                    return Action::Sleep { until: t };
                }
                self.schedule.sleep_until = None;
            }
            io = self.advance(now);
        }
        self.emit(now)
    }

    /// The outstanding action was not answered: it failed.
    fn abandon(&mut self, now: i64) {
        const WHY: &str = "no answer before the next poll";
        match self.io.pending {
            Pending::Read => self.on_read(now, Err(StoreErrorKind::Io)),
            Pending::File => self.on_file_done(now, Err(StoreErrorKind::Io)),
            Pending::Healthz
            | Pending::Discovery
            | Pending::Engine
            | Pending::Trust
            | Pending::Probe => self.on_transport_error(now, WHY),
            Pending::Key => match self.outstanding() {
                Some(Action::Key(KeyOp::Public { .. })) => self.on_key_public(now, Err(WHY)),
                Some(Action::Key(KeyOp::Generate { .. })) => self.on_key_generated(now, Err(WHY)),
                Some(Action::Key(KeyOp::Sign { .. })) => self.on_signature(now, Err(WHY)),
                Some(Action::Key(KeyOp::Destroy { .. })) => self.on_key_destroyed(now, Err(WHY)),
                _ => self.io.pending = Pending::None,
            },
            Pending::Entropy | Pending::None => self.io.pending = Pending::None,
        }
    }

    // -----------------------------------------------------------------------------------------
    // Answers: each goes to the sub-machine that asked.

    /// The outcome of [`Action::Read`]: the whole file, or why not. Ignored when no read is
    /// outstanding.
    pub fn on_read(&mut self, now: i64, result: core::result::Result<&[u8], StoreErrorKind>) {
        if !self.io.answer(Pending::Read) {
            return;
        }
        match self.phase {
            Phase::Load | Phase::Boot => {
                let (loader, mut cx) = self.load_cx();
                loader.on_read(&mut cx, now, result);
            }
            Phase::Key => {
                let (keys, mut cx) = self.keys_cx();
                keys.on_read(&mut cx, now, result);
            }
            Phase::Attest => self.attestation.on_read(&mut self.out, result),
            _ => {}
        }
    }

    /// The outcome of [`Action::File`]. Ignored when no file step is outstanding.
    pub fn on_file_done(&mut self, now: i64, result: core::result::Result<(), StoreErrorKind>) {
        if !self.io.answer(Pending::File) {
            return;
        }
        match self.phase {
            Phase::Load => {
                let (loader, mut cx) = self.load_cx();
                loader.on_recovered(&mut cx, result);
            }
            Phase::Key => {
                let (keys, mut cx) = self.keys_cx();
                keys.on_file_done(&mut cx, result);
            }
            Phase::Store | Phase::Cleanup | Phase::Sweep | Phase::WriteBootstrap => {
                let pair_is_current = self.plan_file_done(result);
                if pair_is_current {
                    // A device's new key is the current one from now on.
                    self.keys.made_current();
                }
            }
            Phase::Trust => {
                let (trust, mut cx) = self.trust_cx();
                trust.on_file_done(&mut cx, now, result);
            }
            _ => {}
        }
    }

    /// Entropy for a new key ([`Action::Entropy`]). Ignored when none was asked for.
    pub fn on_entropy(&mut self, bytes: &[u8]) {
        if !self.io.answer(Pending::Entropy) {
            return;
        }
        let (keys, mut cx) = self.keys_cx();
        keys.on_entropy(&mut cx, bytes);
    }

    /// The answer to [`KeyOp::Public`]: the key's public point (65-byte uncompressed SEC1), or
    /// why the device could not load the key. Ignored when no such operation is outstanding.
    pub fn on_key_public(&mut self, now: i64, result: core::result::Result<&[u8; 65], &str>) {
        if !matches!(self.outstanding(), Some(Action::Key(KeyOp::Public { .. })))
            || !self.io.answer(Pending::Key)
        {
            return;
        }
        let point = result.and_then(flow::checked_point);
        if self.phase == Phase::Load {
            let (loader, mut cx) = self.load_cx();
            loader.on_key_public(&mut cx, point);
        } else {
            let (keys, mut cx) = self.keys_cx();
            keys.on_key_public(&mut cx, now, point);
        }
    }

    /// The answer to [`KeyOp::Generate`]: the new key's reference (a `TSS2 PRIVATE KEY` or
    /// `PKCS#11 PROVIDER URI` PEM block, at most [`crate::keyref::MAX_KEY_REF`] bytes) and its
    /// public point, or why the device could not make it. Ignored when no such operation is
    /// outstanding.
    pub fn on_key_generated(
        &mut self,
        _now: i64,
        result: core::result::Result<(&[u8], &[u8; 65]), &str>,
    ) {
        if !matches!(self.outstanding(), Some(Action::Key(KeyOp::Generate { .. })))
            || !self.io.answer(Pending::Key)
        {
            return;
        }
        let checked = result.and_then(|(r, p)| flow::checked_point(p).map(|p| (r, p)));
        let (keys, mut cx) = self.keys_cx();
        keys.on_key_generated(&mut cx, checked);
    }

    /// The answer to [`KeyOp::Sign`]: the signature as `r || s`, or why the device could not
    /// sign. Ignored when no such operation is outstanding.
    pub fn on_signature(&mut self, _now: i64, result: core::result::Result<&[u8; 64], &str>) {
        if !matches!(self.outstanding(), Some(Action::Key(KeyOp::Sign { .. })))
            || !self.io.answer(Pending::Key)
        {
            return;
        }
        let (keys, mut cx) = self.keys_cx();
        keys.on_signature(&mut cx, result);
    }

    /// The answer to [`KeyOp::Certify`]: the `TPMS_ATTEST` and the `TPMT_SIGNATURE` the TPM
    /// returned (as it marshals them), or why the device could not certify. Ignored when no such
    /// operation is outstanding.
    pub fn on_certified(&mut self, now: i64, result: core::result::Result<(&[u8], &[u8]), &str>) {
        if !matches!(self.outstanding(), Some(Action::Key(KeyOp::Certify { .. })))
            || !self.io.answer(Pending::Key)
        {
            return;
        }
        let device_said = result.err();
        let Agent { attestation, engine, out, keys, .. } = self;
        if attestation.on_certified(engine, out, &keys.new_ref, result).is_ok() {
            return;
        }
        let (e, why) = attestation.failure().unwrap_or((Error::InvalidState, ""));
        let d = match device_said {
            Some(said) => flow::detail(format_args!("{why}: {said}")),
            None => flow::detail(format_args!("{why} ({})", self.settings.attestation.as_str())),
        };
        self.attempt_failed(now, e, &d);
    }

    /// The answer to [`KeyOp::Destroy`] (a key already gone is success). A failure is reported
    /// (`step=warning`) and changes nothing else: the key is left behind. Ignored when no such
    /// operation is outstanding.
    pub fn on_key_destroyed(&mut self, _now: i64, result: core::result::Result<(), &str>) {
        if !matches!(self.outstanding(), Some(Action::Key(KeyOp::Destroy { .. })))
            || !self.io.answer(Pending::Key)
        {
            return;
        }
        let Agent { keys, settings, events, out, loader, attempt, .. } = self;
        let mut cx = keys::KeysCx { s: settings, ev: events, out, kind: attempt.kind };
        keys.on_key_destroyed(&mut cx, &loader.client_key, result);
    }

    /// The whole response to [`Action::Http`] (for a watch that could not be streamed, the whole
    /// stream), with the response headers the agent reads (look them up by name and pass their
    /// raw values: [`Headers::NONE`] when there are none): a 429 or 5xx with `Retry-After` is
    /// retried when the server asked, with jitter, and the `step=retry` line says
    /// `reason=server-asked` ([`crate::pushback`]). Ignored when no request is outstanding.
    pub fn on_http_response(&mut self, now: i64, status: u16, headers: &Headers<'_>, body: &[u8]) {
        match self.io.pending {
            Pending::Healthz => {
                self.io.pending = Pending::None;
                if status == 200 {
                    self.io.healthz_answered = true;
                    self.phase = Phase::StartEngine;
                } else {
                    self.healthz_failed(now, Some(status));
                }
            }
            Pending::Discovery => {
                self.io.pending = Pending::None;
                if status != 200 {
                    let line = self
                        .events
                        .ev("http")
                        .kv("request", "cluster-info")
                        .num("status", i64::from(status))
                        .done();
                    self.events.push(line);
                }
                self.discovery.on_response(now, status, headers, body, self.engine.scratch());
            }
            Pending::Engine => self.engine_response(now, status, headers, body),
            Pending::Trust => {
                self.io.pending = Pending::None;
                let (trust, mut cx) = self.trust_cx();
                trust.on_response(&mut cx, now, status, body);
            }
            Pending::Probe => {
                self.io.pending = Pending::None;
                let answer = probe::answer(status, body, &self.loader.node);
                self.probed(now, answer, status);
            }
            _ => {}
        }
    }

    /// A chunk of a watch response with status 200. Answers whether to keep reading; on
    /// [`StreamControl::Close`] drop the connection and do not call [`Agent::on_stream_end`].
    pub fn on_stream_data(&mut self, now: i64, chunk: &[u8]) -> StreamControl {
        if self.io.pending != Pending::Engine {
            return StreamControl::Close;
        }
        let mut refs = heapless::Vec::new();
        let expect = flow::expect(&self.settings, &self.loader, self.attempt.kind, &mut refs);
        let c = self.engine.on_stream_data(now, chunk, &expect);
        if c == StreamControl::Close {
            self.io.pending = Pending::None;
        }
        c
    }

    /// The open watch has been quiet until [`HttpRequest::idle_at`] (or later): the agent reports
    /// progress on the wait (a `step=wait` update, handed out by [`Agent::next_event`]) without
    /// ending the watch. Answers whether to keep reading ([`StreamControl::Close`] when no watch
    /// is open); the next wake-up time is the outstanding request's `idle_at` again.
    pub fn on_stream_idle(&mut self, now: i64) -> StreamControl {
        if self.io.pending != Pending::Engine || !self.engine.request_outstanding() {
            return StreamControl::Close;
        }
        self.progress(now);
        StreamControl::Continue
    }

    /// The next line the agent has to say, now (also during a watch stream, between
    /// [`Agent::on_stream_data`] / [`Agent::on_stream_idle`] calls); `None` when there is none.
    /// [`Agent::poll`] hands out the same lines first, so a front-end that never calls this loses
    /// nothing.
    pub fn next_event(&mut self) -> Option<Event<'_>> {
        let update = self.events.next()?;
        let step = flow::step_of(&self.events.shown);
        let ready = step == "sleep" || step == "done";
        Some(Event { step, line: &self.events.shown, update, ready })
    }

    /// The watch stream ended (server timeout, closed connection, or a broken read).
    pub fn on_stream_end(&mut self, now: i64) {
        if self.io.pending == Pending::Engine {
            self.io.pending = Pending::None;
            let mut refs = heapless::Vec::new();
            let expect = flow::expect(&self.settings, &self.loader, self.attempt.kind, &mut refs);
            self.engine.on_stream_end(now, &expect);
        }
    }

    /// [`Action::Http`] could not be sent or no (complete) response arrived; `why` is printed
    /// (never put a secret in it).
    pub fn on_transport_error(&mut self, now: i64, why: &str) {
        let pending = self.io.pending;
        if !matches!(
            pending,
            Pending::Healthz
                | Pending::Discovery
                | Pending::Engine
                | Pending::Trust
                | Pending::Probe
        ) {
            return;
        }
        let line = self
            .events
            .ev("transport-error")
            .kv("request", self.request_name())
            .kv("detail", why)
            .done();
        self.events.push(line);
        self.wait.retrying = true;
        self.io.pending = Pending::None;
        match pending {
            Pending::Healthz => self.healthz_failed(now, None),
            Pending::Discovery => self.discovery.on_transport_error(now),
            Pending::Trust => {
                // (not the engine's retry: nothing to announce at its next sleep)
                self.wait.retrying = false;
                let (trust, mut cx) = self.trust_cx();
                trust.on_transport_error(&mut cx, now, why);
            }
            Pending::Probe => {
                self.wait.retrying = false;
                self.probed(now, probe::Answer::Unknown, 0);
            }
            _ => self.engine.on_transport_error(now),
        }
    }
}
