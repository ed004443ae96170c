//! The conductor's own decisions: what to do once the node's files are judged (nothing,
//! rotate, request the serving certificate, bootstrap, refresh the CA, sleep, stop), how an
//! attempt runs from its key to its stored pair, and what a failure costs (undo, fall back to
//! the bootstrap credential, retry with backoff, or stop).

use core::fmt::Write;

use super::config::Settings;
use super::loader::{self, Loader};
use super::probe::{Answer, Doubt, leaf_digest};
use super::verdict;
use super::{
    Agent, Conn, HEALTHZ_INTERVAL_SECS, HEALTHZ_WAIT_SECS, Kind, Mode, Outcome, Pending, Phase,
    RotateNow,
};
use crate::csr::{MAX_SANS, Profile};
use crate::discovery;
use crate::engine::{Expect, Jitter};
use crate::error::{Error, Reason, VerifyError};
use crate::keyref::Holder;
use crate::rfc3339;

/// A detail text.
pub(super) type Detail = heapless::String<MAX_DETAIL>;
const MAX_DETAIL: usize = 512;

/// The wait for approval is announced, then again after this long, then at doubling intervals
/// up to [`MAX_PROGRESS_SECS`].
pub(crate) const FIRST_PROGRESS_SECS: i64 = 30;
/// The longest interval between two progress lines of a wait.
pub(crate) const MAX_PROGRESS_SECS: i64 = 900;

pub(super) fn detail(args: core::fmt::Arguments<'_>) -> Detail {
    let mut d = Detail::new();
    let _ = d.write_fmt(args);
    d
}

/// `YYYY-MM-DD-HH-MM-SS` of local time (Go layout `2006-01-02-15-04-05`).
pub(super) fn timestamp(unix: i64, utc_offset: i32) -> heapless::String<19> {
    let dt = rfc3339::DateTime::from_unix(unix.saturating_add(i64::from(utc_offset)));
    let mut s = heapless::String::new();
    let _ = write!(
        s,
        "{:04}-{:02}-{:02}-{:02}-{:02}-{:02}",
        dt.year.clamp(0, 9999),
        dt.month,
        dt.day,
        dt.hour,
        dt.minute,
        dt.second
    );
    s
}

/// A device's answer must be a P-256 point.
pub(super) fn checked_point<'e>(p: &[u8; 65]) -> core::result::Result<[u8; 65], &'e str> {
    if p256::ecdsa::VerifyingKey::from_sec1_bytes(p).is_ok() {
        Ok(*p)
    } else {
        Err("the device's answer is not a P-256 point")
    }
}

/// What the engine checks an issued certificate against for a `kind` attempt: the CA the loader
/// found and the profile the settings ask for.
pub(super) fn expect<'a: 'r, 'r>(
    s: &'a Settings<'_>,
    loader: &'a Loader<'_>,
    kind: Kind,
    refs: &'r mut heapless::Vec<&'a str, MAX_SANS>,
) -> Expect<'r> {
    let profile = if kind == Kind::Serving {
        s.dns_names(refs);
        Profile::Serving { dns: refs, ips: &s.ips }
    } else {
        Profile::Client
    };
    // A client certificate that chains to none of the kubeconfig's CAs (no bundle configured)
    // is proven by the apiserver before it becomes current, not thrown away.
    let prove = kind != Kind::Serving && loader.bundle.is_empty();
    Expect { ca_pem: loader.validation_ca(kind == Kind::Bootstrap), profile, prove }
}

/// The `step=` of a line.
pub(super) fn step_of(line: &str) -> &'static str {
    const STEPS: &[&str] = &[
        "start",
        "credentials",
        "bootstrap",
        "rotate",
        "serving",
        "discovery",
        "discovered",
        "key",
        "healthz",
        "create",
        "created",
        "wait",
        "http",
        "transport-error",
        "retry",
        "issued",
        "stored",
        "kubeconfig",
        "cleanup",
        "sleep",
        "done",
        "warning",
        "wake",
        "ca",
    ];
    let s = if line.starts_with('{') {
        line.split("\"step\":\"").nth(1).and_then(|r| r.split('"').next())
    } else {
        line.split(" step=").nth(1).and_then(|r| r.split(' ').next())
    };
    let s = s.unwrap_or("");
    STEPS.iter().copied().find(|x| *x == s).unwrap_or("event")
}

/// The front-end's side of the conversation: what was asked and not answered yet, and the
/// connection settings' identity.
pub(super) struct Io {
    pub(super) pending: Pending,
    /// Whether the pending action was handed out (an unanswered one is abandoned at `poll`).
    pub(super) handed_out: bool,
    /// The time of the last `poll` that handed out an action.
    pub(super) now: i64,
    /// Which connection the engine's requests go over.
    pub(super) conn: Conn,
    /// Changes whenever a connection's settings do.
    pub(super) conn_id: u32,
    /// `/healthz` answered 200 over the bootstrap connection (`conn_id`) of this attempt: the
    /// bootstrap engine goes on over that same connection (one TLS handshake, not two).
    pub(super) healthz_answered: bool,
}

impl Io {
    pub(super) const fn new() -> Self {
        Io {
            pending: Pending::None,
            handed_out: false,
            now: 0,
            conn: Conn::Node,
            conn_id: 0,
            healthz_answered: false,
        }
    }

    /// An answer of `kind` arrived: whether it was the one outstanding (then it is no longer).
    pub(super) fn answer(&mut self, kind: Pending) -> bool {
        if self.pending != kind {
            return false;
        }
        self.pending = Pending::None;
        true
    }
}

/// The attempt under way.
pub(super) struct Attempt {
    pub(super) kind: Kind,
    /// The certificate was issued (its key must be kept).
    pub(super) issued: bool,
    /// The apiserver refused the current certificate: bootstrap even if it looks valid.
    pub(super) force_bootstrap: bool,
    /// The pair just stored, to be found valid by the next reading.
    pub(super) just_stored: Option<Kind>,
    /// A cleanup that ends in a new start (a refused rotation falling back to bootstrap), not a
    /// failure.
    pub(super) fallback: bool,
    /// Until when the kubelet's `/healthz` wait goes on.
    pub(super) healthz_until: i64,
    /// The apiserver refused the certificate it was asked about (the clock calls it expired,
    /// or it chains to no CA the agent has): fall back.
    pub(super) refused: bool,
    /// Why the apiserver is asked (the probe).
    pub(super) doubt: Doubt,
    /// The issued certificate's length at the front of `out` (the pair: chain, then key).
    pub(super) cert_len: usize,
}

impl Attempt {
    pub(super) const fn new() -> Self {
        Attempt {
            kind: Kind::Bootstrap,
            issued: false,
            force_bootstrap: false,
            just_stored: None,
            fallback: false,
            healthz_until: 0,
            refused: false,
            doubt: Doubt::Expired,
            cert_len: 0,
        }
    }
}

/// The wait for approval: when it was announced and when to say again that it goes on.
pub(super) struct Wait {
    pub(super) announced: bool,
    /// When the wait began.
    pub(super) since: i64,
    /// When the next progress line is due (0: never).
    pub(super) progress_at: i64,
    pub(super) progress_gap: i64,
    /// A request just failed: announce the engine's backoff.
    pub(super) retrying: bool,
}

impl Wait {
    pub(super) const fn new() -> Self {
        Wait { announced: false, since: 0, progress_at: 0, progress_gap: 0, retrying: false }
    }
}

/// The agent's time line across attempts: sleeps, backoff, rotations done, what to rotate now.
pub(super) struct Schedule {
    pub(super) sleep_until: Option<i64>,
    pub(super) attempts_failed: u32,
    pub(super) rotations: u32,
    pub(super) jitter: Jitter,
    pub(super) rotate_now: RotateNow,
    /// A stale key cache was looked for.
    pub(super) swept: bool,
    /// The `now` of the last [`Agent::poll`](super::Agent::poll) (a clock stepped back is
    /// noticed against it).
    pub(super) last_now: Option<i64>,
    /// A wake came during an attempt: the sleep after it ends at once.
    pub(super) wake_pending: bool,
}

impl Schedule {
    pub(super) const fn new() -> Self {
        Schedule {
            sleep_until: None,
            attempts_failed: 0,
            rotations: 0,
            jitter: Jitter(0),
            rotate_now: RotateNow { client: false, serving: false },
            swept: false,
            last_now: None,
            wake_pending: false,
        }
    }

    pub(super) fn configure(&mut self, s: &Settings<'_>) {
        self.jitter = Jitter(s.seed);
        self.rotate_now = s.rotate_now;
    }

    /// A seed for a sub-machine's own jitter.
    pub(super) fn seed(&mut self) -> u64 {
        u64::from(self.jitter.next_u32()) << 32 | u64::from(self.jitter.next_u32())
    }
}

impl Agent<'_> {
    /// Begin again: read the node's files (or, in [`Mode::Discover`], discover).
    pub(super) fn begin(&mut self, now: i64) {
        // Until `decide` picks one, what fails is the client credentials (retry lines, metrics).
        self.attempt.kind = Kind::Bootstrap;
        self.io.conn_id = self.io.conn_id.wrapping_add(2);
        self.io.healthz_answered = false;
        self.attempt.refused = false;
        if self.settings.mode == Mode::Discover {
            self.keys.reset();
            return self.begin_discovery(now);
        }
        self.loader.begin(&self.settings);
        self.phase = Phase::Load;
    }

    /// The clock cannot judge a certificate: keep the node's identity, say why and wait for the
    /// clock (retried with the backoff in [`Mode::Run`]; a failure, changing nothing, in
    /// [`Mode::Once`]).
    fn wait_for_the_clock(&mut self, now: i64, why: core::fmt::Arguments<'_>) {
        self.failure = Some(Error::ClockUntrusted);
        self.detail = detail(why);
        let line = self
            .events
            .ev("credentials")
            .kv("kind", "client")
            .kv("state", "kept")
            .kv("reason", Error::ClockUntrusted.name())
            .kv("detail", &self.detail)
            .done();
        self.events.push(line);
        self.finish_failure(now);
    }

    fn wait_for_the_clock_floor(&mut self, now: i64) {
        let (t, floor) = (rfc3339::format(now), rfc3339::format(super::CLOCK_FLOOR));
        let (t, floor) =
            (t.as_ref().map_or("?", |t| t.as_str()), floor.as_ref().map_or("?", |t| t.as_str()));
        self.wait_for_the_clock(now, format_args!("the clock says {t}, before {floor}"));
    }

    /// The clock's judgement of the client certificate, when it cannot be trusted: before this
    /// build, before the certificate's notBefore, or calling it expired (then the apiserver is
    /// asked first). Returns whether it took the turn.
    fn doubt_the_clock(&mut self, now: i64, e: Error, what: verdict::Part) -> bool {
        let Error::Verify(v) = e else { return false };
        if what != verdict::Part::ClientCertificate {
            return false;
        }
        let crate::error::Detail::Validity { not_before, not_after, .. } = v.detail else {
            return false;
        };
        match v.reason {
            crate::error::Reason::NotYetValid => {
                let t = rfc3339::format(now);
                let nb = rfc3339::format(not_before);
                self.wait_for_the_clock(
                    now,
                    format_args!(
                        "the clock says {}, before the certificate's notBefore {}",
                        t.as_ref().map_or("?", |t| t.as_str()),
                        nb.as_ref().map_or("?", |t| t.as_str())
                    ),
                );
                true
            }
            // The clock calls it expired: the apiserver says whether it is.
            crate::error::Reason::Expired if !self.attempt.refused => {
                self.ask(Doubt::Expired, not_after);
                true
            }
            _ => false,
        }
    }

    /// Ask the apiserver who it takes a pair for ([`Doubt`]): the current one (`not_after` is
    /// its notAfter), or the one just issued (in `out`, its chain first).
    pub(super) fn ask(&mut self, doubt: Doubt, not_after: i64) {
        self.attempt.doubt = doubt;
        let b = self.events.ev("probe");
        let line = match doubt {
            Doubt::Expired => {
                b.kv("kind", "client").kv("reason", "expired").time("not_after", not_after).done()
            }
            Doubt::Unanchored => {
                b.kv("kind", "client").kv("reason", "untrusted").time("not_after", not_after).done()
            }
            Doubt::Issued => b
                .kv("kind", self.attempt.kind.as_str())
                .kv("reason", "untrusted")
                .kv("name", self.engine.csr_name())
                .done(),
        };
        self.events.push(line);
        if doubt == Doubt::Issued {
            // A connection presenting the new pair.
            self.io.conn_id = self.io.conn_id.wrapping_add(2);
        }
        self.phase = Phase::Probe;
    }

    /// The apiserver's answer to the probe ([`Agent::ask`]).
    pub(super) fn probed(&mut self, now: i64, answer: Answer, status: u16) {
        let doubt = self.attempt.doubt;
        let said = match answer {
            Answer::TheNode => "the-node",
            Answer::Refused => "refused",
            Answer::Unknown => "unknown",
        };
        let kind = if doubt == Doubt::Issued { self.attempt.kind.as_str() } else { "client" };
        let mut b = self.events.ev("probe").kv("kind", kind).kv("answer", said);
        if status != 0 {
            b = b.num("status", i64::from(status));
        }
        let line = b.done();
        self.events.push(line);
        let node = self.loader.node.clone();
        match (doubt, answer) {
            (Doubt::Expired, Answer::TheNode) => {
                let t = rfc3339::format(now);
                self.wait_for_the_clock(
                    now,
                    format_args!(
                        "the apiserver takes the certificate as system:node:{node}: the clock \
                         ({}) is ahead, not the certificate expired",
                        t.as_ref().map_or("?", |t| t.as_str())
                    ),
                )
            }
            (Doubt::Unanchored, Answer::TheNode) => {
                // The signer is the cluster's: the pair is the node's, and stays so (recorded).
                let work = self.engine.scratch();
                if let Some(d) = leaf_digest(&self.loader.client_chain, work) {
                    self.loader.proven.record(d);
                }
                if let verdict::Verdict::Unanchored(c) = self.loader.client {
                    self.loader.client = verdict::Verdict::Valid(c);
                }
                verdict::report(&mut self.events, &mut self.metrics, false, self.loader.client);
                self.phase = Phase::Decide;
            }
            (Doubt::Issued, Answer::TheNode) => {
                let work = self.engine.scratch();
                let chain = self.out.get(..self.attempt.cert_len).unwrap_or_default();
                if let Some(d) = leaf_digest(chain, work) {
                    self.loader.proven.record(d);
                }
                self.store_issued(now);
            }
            (Doubt::Expired | Doubt::Unanchored, Answer::Refused) => {
                // Expired indeed, or not the cluster's: decide again, now falling back to the
                // bootstrap credential.
                self.attempt.refused = true;
                self.phase = Phase::Decide;
            }
            (Doubt::Issued, Answer::Refused) => {
                self.out.wipe();
                let e = Error::Verify(VerifyError::new(Reason::Untrusted));
                let d = detail(format_args!(
                    "the issued certificate chains to no CA of the kubeconfig and the apiserver \
                     does not take it as system:node:{node}; give its signer's CA with \
                     --ca-bundle"
                ));
                self.attempt_failed(now, e, &d);
            }
            (Doubt::Expired, Answer::Unknown) => {
                // Nothing known of it: the identity is kept until the apiserver can say.
                self.failure = Some(Error::Verify(VerifyError::field(
                    Reason::Expired,
                    "the apiserver could not say whether it still takes the certificate",
                )));
                self.detail = detail(format_args!(
                    "client: the certificate looks expired and the apiserver could not say \
                     whether it still takes it"
                ));
                self.finish_failure(now);
            }
            (Doubt::Unanchored, Answer::Unknown) => {
                self.failure = Some(Error::Verify(VerifyError::new(Reason::Untrusted)));
                self.detail = detail(format_args!(
                    "client: the certificate chains to no CA of the kubeconfig and the \
                     apiserver could not say whether it takes it as system:node:{node} (kept; \
                     --ca-bundle names its signer's CA)"
                ));
                self.finish_failure(now);
            }
            (Doubt::Issued, Answer::Unknown) => {
                // Its key is kept (the certificate was issued): the next attempt finds the CSR
                // and asks again.
                self.out.wipe();
                let e = Error::Verify(VerifyError::new(Reason::Untrusted));
                let d = detail(format_args!(
                    "the issued certificate chains to no CA of the kubeconfig and the apiserver \
                     could not say whether it takes it as system:node:{node} (asked again; \
                     --ca-bundle names its signer's CA)"
                ));
                self.attempt_failed(now, e, &d);
            }
        }
    }

    /// The node's files could not be opened at all.
    pub(super) fn load_failed(&mut self, now: i64) {
        let Some((e, d, how)) = self.loader.failure() else { return };
        self.detail = detail(format_args!("{d}"));
        match how {
            loader::Fail::Stop => {
                self.failure = Some(e);
                self.finish_failure(now);
            }
            loader::Fail::Attempt => self.attempt_failed(now, e, &self.detail.clone()),
        }
    }

    // -----------------------------------------------------------------------------------------
    // Deciding

    #[inline(never)] // its locals stay out of poll's and the on_* frames (firmware stacks)
    pub(super) fn decide(&mut self, now: i64) {
        let (client_v, serving_v) = (self.loader.client, self.loader.serving);
        if self.settings.mode == Mode::Check {
            self.outcome = Outcome { client: client_v.valid(), serving: serving_v.valid() };
            self.phase = Phase::Done;
            return;
        }
        if now < super::CLOCK_FLOOR {
            return self.wait_for_the_clock_floor(now);
        }
        if let Some(k) = self.attempt.just_stored.take() {
            let v = if k == Kind::Serving { serving_v } else { client_v };
            if let verdict::Verdict::Unusable(e, what) = v {
                // Only its time: the pair was issued a moment ago, so the clock is off (it was
                // stepped since, or was already when the pair was judged in the middle of its
                // validity). The identity is kept; the clock rule judges it from now on.
                if let Error::Verify(VerifyError {
                    reason: Reason::Expired | Reason::NotYetValid,
                    ..
                }) = e
                {
                    let t = rfc3339::format(now);
                    return self.wait_for_the_clock(
                        now,
                        format_args!(
                            "the {what} just stored is {} by the clock ({}), which is off",
                            e.name(),
                            t.as_ref().map_or("?", |t| t.as_str())
                        ),
                    );
                }
                let d = detail(format_args!("the {what} just stored does not validate: {e}"));
                self.fail(e, &d);
                return;
            }
        }
        let client = match client_v {
            verdict::Verdict::Valid(c) if !self.attempt.force_bootstrap => c,
            // Only the chain is in doubt: the apiserver says whether the pair is the node's.
            verdict::Verdict::Unanchored(c)
                if !self.attempt.force_bootstrap && !self.attempt.refused =>
            {
                return self.ask(Doubt::Unanchored, c.not_after);
            }
            other => {
                let (e, what) = match other {
                    verdict::Verdict::Unusable(e, what) => (e, what),
                    verdict::Verdict::Unanchored(_) => (
                        Error::Verify(VerifyError::new(Reason::Untrusted)),
                        verdict::Part::ClientCertificate,
                    ),
                    _ => (Error::Unauthorized, verdict::Part::ClientCertificate),
                };
                if !self.attempt.force_bootstrap && self.doubt_the_clock(now, e, what) {
                    return;
                }
                if self.settings.can_bootstrap() {
                    self.attempt.kind = Kind::Bootstrap;
                    let line = self
                        .events
                        .ev("bootstrap")
                        .kv("reason", e.name())
                        .kv("what", what.as_str())
                        .done();
                    self.events.push(line);
                    self.begin_bootstrap(now);
                } else {
                    self.detail = detail(format_args!(
                        "{what}: {e}; no bootstrap kubeconfig to fall back on"
                    ));
                    self.failure = Some(e);
                    self.finish_failure(now);
                }
                return;
            }
        };
        let rotate_now = self.schedule.rotate_now;
        if rotate_now.client || now >= client.rotation_deadline {
            self.attempt.kind = Kind::Rotate;
            let reason = if rotate_now.client { "forced" } else { "due" };
            let line = self
                .events
                .ev("rotate")
                .kv("kind", "client")
                .kv("reason", reason)
                .time("deadline", client.rotation_deadline)
                .done();
            self.events.push(line);
            return self.make_key(now);
        }
        let mut serving = None;
        if self.settings.serving {
            match serving_v {
                verdict::Verdict::Valid(s) if !rotate_now.serving && now < s.rotation_deadline => {
                    serving = Some(s)
                }
                v => {
                    self.attempt.kind = Kind::Serving;
                    let mut b = self.events.ev("serving");
                    b = match v {
                        verdict::Verdict::Valid(s) => b
                            .kv("reason", if rotate_now.serving { "forced" } else { "due" })
                            .time("deadline", s.rotation_deadline),
                        verdict::Verdict::Unusable(e, _) => b.kv("reason", e.name()),
                        verdict::Verdict::Unanchored(_) => b.kv("reason", "untrusted"),
                        verdict::Verdict::Unknown => b.kv("reason", "unknown"),
                    };
                    let line = b.done();
                    self.events.push(line);
                    return self.make_key(now);
                }
            }
        }
        if !self.schedule.swept && self.loader.client_dir_exists {
            // A key cache next to valid credentials was left by a crash after they were stored;
            // a later bootstrap must not reuse its key (its CSR is done).
            self.schedule.swept = true;
            self.plan.begin_sweep();
            self.phase = Phase::Sweep;
            return;
        }
        if self.trust.due(&self.settings, &self.loader, &mut self.schedule.jitter, now) {
            self.trust.begin(&mut self.out);
            // New connection settings: new ids (info: anonymous; bundles: the node's
            // certificate; the probe: the candidate bundle).
            self.io.conn_id = self.io.conn_id.wrapping_add(4);
            self.phase = Phase::Trust;
            return;
        }
        self.outcome = Outcome { client: Some(client), serving };
        let mut next = serving.map_or(client.rotation_deadline, |s| {
            s.rotation_deadline.min(client.rotation_deadline)
        });
        if let Some(at) = self.trust.next_at(&self.settings) {
            next = next.min(at);
        }
        match self.settings.mode {
            Mode::Run { max_rotations }
                if max_rotations.is_none_or(|m| self.schedule.rotations < m) =>
            {
                let line = self.events.ev("sleep").time("until", next).done();
                self.events.push(line);
                self.schedule.sleep_until = Some(next);
                self.phase = Phase::Start;
            }
            _ => {
                let mut b = self.events.ev("done").time("client_not_after", client.not_after);
                b = b.time("client_rotation_deadline", client.rotation_deadline);
                if let Some(s) = serving {
                    b = b.time("serving_not_after", s.not_after);
                }
                let line = b.done();
                self.events.push(line);
                self.phase = Phase::Done;
            }
        }
    }

    /// The holder of the current pair's key when a device holds it.
    fn current_key_in_device(&self) -> Option<Holder> {
        let l = &self.loader;
        if l.kc_points_at_current && l.client_key_in_device() {
            Holder::of_pem(&l.client_key).ok()
        } else {
            None
        }
    }

    /// A rotation's (or the serving certificate's) key.
    fn make_key(&mut self, now: i64) {
        let current = self.current_key_in_device();
        let (keys, mut cx) = self.keys_cx();
        keys.begin(&mut cx, now, current);
        self.phase = Phase::Key;
    }

    #[inline(never)] // its locals stay out of poll's and the on_* frames (firmware stacks)
    fn begin_bootstrap(&mut self, now: i64) {
        self.keys.reset();
        // The kubelet waits a minute for /healthz; never longer than the whole wait.
        let wait = HEALTHZ_WAIT_SECS.min(self.settings.bootstrap_wait);
        self.attempt.healthz_until = now.saturating_add(wait);
        if self.settings.discovery.is_some() {
            self.begin_discovery(now);
        } else {
            self.loader.begin_bootstrap();
            self.phase = Phase::Boot;
        }
    }

    fn begin_discovery(&mut self, now: i64) {
        let seed = self.schedule.seed();
        let started = match &self.settings.discovery {
            Some(d) => {
                let mut cfg = discovery::Config::new(&d.token, &d.pins);
                cfg.allow_unpinned = d.allow_unpinned;
                cfg.timeout_secs = d.timeout_secs;
                cfg.jitter_seed = seed;
                self.discovery.start(cfg, now)
            }
            None => Err(Error::InvalidConfig),
        };
        match started {
            Ok(()) => {
                let server = self.settings.discovery.as_ref().map_or("", |d| d.server.as_str());
                let line = self.events.ev("discovery").kv("server", server).done();
                self.events.push(line);
                self.phase = Phase::Discover;
            }
            Err(e) => self.attempt_failed(now, e, "starting discovery"),
        }
    }

    #[inline(never)] // its locals stay out of poll's and the on_* frames (firmware stacks)
    pub(super) fn prepare_bootstrap(&mut self, now: i64) {
        let l = &self.loader;
        let why = if l.token.is_none() {
            Some((Error::InvalidToken, "the bootstrap kubeconfig has no bootstrap token"))
        } else if !l.boot.insecure && l.boot.ca.is_empty() {
            Some((Error::NoCa, "the bootstrap kubeconfig has no certificate-authority"))
        } else if l.bundle.is_empty() && l.boot.ca.is_empty() {
            Some((
                Error::NoCa,
                "no CA to validate the issued certificate against (give a CA bundle)",
            ))
        } else if l.node.is_empty() {
            Some((Error::InvalidConfig, "bootstrapping needs the node name"))
        } else {
            None
        };
        if let Some((e, why)) = why {
            return self.attempt_failed(now, e, why);
        }
        let token_id = l.token.as_ref().map_or("", |t| t.id());
        let mut id = heapless::String::<8>::new();
        let _ = id.push_str(token_id);
        let line = self
            .events
            .ev("bootstrap")
            .kv("node", &l.node)
            .kv("server", &l.boot.server)
            .kv("token_id", &id)
            .done();
        self.events.push(line);
        let (dir_exists, current) = (l.client_dir_exists, self.current_key_in_device());
        let (keys, mut cx) = self.keys_cx();
        keys.begin_bootstrap(&mut cx, now, dir_exists, current);
        self.phase = Phase::Key;
    }

    // -----------------------------------------------------------------------------------------
    // Running an attempt

    /// `/healthz` did not answer 200 (`status`) or not at all: again soon, or go on.
    pub(super) fn healthz_failed(&mut self, now: i64, status: Option<u16>) {
        if now.saturating_add(HEALTHZ_INTERVAL_SECS) < self.attempt.healthz_until {
            let mut b = self.events.ev("healthz").kv("state", "not-ready");
            if let Some(s) = status {
                b = b.num("status", i64::from(s));
            }
            let line = b.done();
            self.events.push(line);
            self.schedule.sleep_until = Some(now.saturating_add(HEALTHZ_INTERVAL_SECS));
        } else {
            // The kubelet goes on after a minute anyway.
            let line = self.events.ev("healthz").kv("state", "gave-up").done();
            self.events.push(line);
            self.phase = Phase::StartEngine;
        }
    }
}
