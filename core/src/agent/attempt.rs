//! The attempt under way, from its key to its stored pair: starting the engine with the key's
//! signature, driving discovery and the engine (the wait for approval and its progress lines),
//! the issued pair handed to the file plan, and what a failure costs (undo, fall back to the
//! bootstrap credential, retry with backoff, or stop).

use core::fmt::Write;

use super::flow::{Detail, FIRST_PROGRESS_SECS, MAX_PROGRESS_SECS, detail, expect};
use super::keys::KeysCx;
use super::loader;
use super::plan::{Cleanup, Store};
use super::probe::Doubt;
use super::verdict;
use super::{Agent, Conn, Kind, Line, Mode, Pending, Phase};
use crate::discovery;
use crate::engine::{self, Naming};
use crate::error::Error;
use crate::key::SEC1_PEM_LEN;
use crate::out::Filled;
use crate::pushback::Headers;
use crate::rotation;

impl Agent<'_> {
    #[inline(never)] // its locals stay out of poll's and the on_* frames (firmware stacks)
    pub(super) fn start_engine(&mut self, now: i64) {
        {
            let Agent { keys, settings, events, out, loader, attempt, .. } = self;
            let mut cx = KeysCx { s: settings, ev: events, out, kind: attempt.kind };
            if keys.prepare_signature(&mut cx, &loader.node) {
                self.phase = Phase::Sign;
                return;
            }
        }
        let seed = self.schedule.seed();
        let kind = self.attempt.kind;
        let started = {
            let s = &self.settings;
            let (auth, naming, wait) = match (kind, self.loader.token.as_ref()) {
                #[cfg(feature = "csr-name")]
                (Kind::Bootstrap, Some(t)) => {
                    (engine::Auth::Token(t), Naming::NodeCsr, s.bootstrap_wait)
                }
                #[cfg(not(feature = "csr-name"))]
                (Kind::Bootstrap, Some(t)) => {
                    (engine::Auth::Token(t), Naming::Generate, s.bootstrap_wait)
                }
                _ => (engine::Auth::ClientCertificate, Naming::Generate, s.rotation_wait),
            };
            let mut refs = heapless::Vec::new();
            let expect = expect(s, &self.loader, kind, &mut refs);
            let cfg = engine::Config {
                node_name: &self.loader.node,
                profile: expect.profile,
                auth,
                naming,
                ca_pem: expect.ca_pem,
                expiration_seconds: s.expiration_seconds,
                wait_secs: wait,
                watch: s.watch,
                verifier: s.verifier(),
            };
            match self.keys.signer(&self.out) {
                Some(signer) => self.engine.start(&cfg, &signer, now, seed),
                None => Err(Error::InvalidState),
            }
        };
        if self.keys.signature_used() {
            // The signed `CertificationRequestInfo` is in the CSR now.
            self.out.clear();
        }
        let answered = core::mem::take(&mut self.io.healthz_answered);
        match started {
            Ok(()) => {
                self.io.conn = if kind == Kind::Bootstrap { Conn::Bootstrap } else { Conn::Node };
                // New settings, a new connection; but a bootstrap right after `/healthz`
                // answered has the settings that answer came over (the bootstrap kubeconfig,
                // no client certificate), so it keeps that connection.
                if !(kind == Kind::Bootstrap && answered) {
                    self.io.conn_id = self.io.conn_id.wrapping_add(2);
                }
                self.wait.announced = false;
                self.attempt.issued = false;
                self.phase = Phase::Engine;
                self.attestation.reset();
                if kind == Kind::Bootstrap && !self.settings.attestation.is_empty() {
                    match self.engine.qualifying_data() {
                        Ok(q) => {
                            self.attestation.begin(q);
                            self.phase = Phase::Attest;
                        }
                        Err(e) => self.attempt_failed(now, e, "the CSR's qualifying data"),
                    }
                }
            }
            Err(Error::InvalidState) => self.attempt_failed(now, Error::InvalidState, "no key"),
            Err(e) => self.attempt_failed(now, e, "building the CSR"),
        }
    }

    /// `step=wait`: what the CSR waits for, what unblocks it, and for how long it has waited.
    #[inline(never)] // its locals stay out of poll's and the on_* frames (firmware stacks)
    /// What unblocks the wait: a person for the serving signer, which nobody approves on their
    /// own (`hint` is the command); kube-controller-manager for the client signer, which it
    /// approves by itself for a bootstrap token bound to `nodeclient` and for a node's own
    /// certificate (`selfnodeclient`): no command to type.
    fn wait_line(&self, now: i64) -> Line {
        let name = self.engine.csr_name();
        let signer = self.engine.signer_name();
        let by_a_person = signer == crate::api::SIGNER_SERVING;
        let mut hint = Detail::new();
        if by_a_person {
            let _ = write!(hint, "kubectl certificate approve {name}");
        } else if self.attempt.kind == Kind::Bootstrap && !self.settings.attestation.is_empty() {
            let _ = write!(hint, "approved by an approver that checks its attestation");
        } else {
            let _ = write!(hint, "approved by kube-controller-manager (csrapproving)");
        }
        let elapsed = super::event::duration(now.saturating_sub(self.wait.since));
        let mut msg = Detail::new();
        let _ = write!(msg, "waiting for approval of {name} (signer {signer}): {hint}");
        if now > self.wait.since {
            let _ = write!(msg, " (waited {elapsed})");
        }
        let b = self
            .events
            .ev("wait")
            .kv("kind", self.attempt.kind.as_str())
            .kv("name", name)
            .kv("signer", signer);
        let b = if by_a_person {
            b.kv("hint", &hint)
        } else {
            b.kv("approver", "kube-controller-manager")
        };
        b.kv("elapsed", &elapsed).kv("msg", &msg).done()
    }

    /// Discovery's next step; returns whether it needs I/O.
    #[inline(never)] // its locals stay out of poll's and the on_* frames (firmware stacks)
    pub(super) fn drive_discovery(&mut self, now: i64) -> bool {
        enum Next {
            Send,
            Sleep(i64),
            Done,
            Failed(Error),
        }
        let work = self.engine.scratch();
        let next = match self.discovery.poll(now, work) {
            discovery::Action::Send(_) | discovery::Action::AwaitResponse { .. } => Next::Send,
            discovery::Action::Wait { until } => Next::Sleep(until),
            discovery::Action::Done(found) => {
                match self.out.fill(|b| found.write_bootstrap_kubeconfig(b)) {
                    Ok(()) => Next::Done,
                    Err(e) => {
                        self.out.wipe();
                        Next::Failed(e)
                    }
                }
            }
            discovery::Action::Failed(e) => Next::Failed(e),
        };
        match next {
            Next::Send => {
                self.io.pending = Pending::Discovery;
                return true;
            }
            Next::Sleep(t) => {
                if let Some(secs) = self.discovery.retry_after() {
                    self.retry_line(t, secs, "cluster-info");
                }
                self.schedule.sleep_until = Some(t.max(now));
            }
            Next::Done => {
                let d = self.settings.discovery.as_ref();
                let line = self
                    .events
                    .ev("discovered")
                    .kv("server", d.map_or("", |d| d.server.as_str()))
                    .kv(
                        "pinned",
                        if d.is_some_and(|d| d.pins.is_empty()) { "false" } else { "true" },
                    )
                    .kv("bootstrap_kubeconfig", &self.settings.bootstrap)
                    .done();
                self.events.push(line);
                self.plan.begin_bootstrap_kubeconfig();
                self.phase = Phase::WriteBootstrap;
            }
            Next::Failed(e) => {
                let why = self.discovery.failure().map_or("", |f| f.1);
                let d = detail(format_args!("discovery: {why}"));
                self.attempt_failed(now, e, &d);
            }
        }
        false
    }

    /// The engine's next step; returns whether it needs I/O.
    #[inline(never)] // its locals stay out of poll's and the on_* frames (firmware stacks)
    pub(super) fn drive_engine(&mut self, now: i64) -> bool {
        enum Next {
            Send(engine::RequestKind),
            Sleep(i64),
            Done,
            Failed(Error),
        }
        self.progress(now);
        let next = match self.engine.poll(now) {
            engine::Action::Send(r) => Next::Send(r.kind),
            engine::Action::AwaitResponse => Next::Send(engine::RequestKind::Get),
            engine::Action::Wait { until } => Next::Sleep(until),
            engine::Action::Done(_) => Next::Done,
            engine::Action::Failed(e) => Next::Failed(e),
        };
        match next {
            Next::Send(kind) => {
                self.io.pending = Pending::Engine;
                let name = self.engine.csr_name();
                let signer = self.engine.signer_name();
                let line = match kind {
                    engine::RequestKind::Create => Some(
                        self.events
                            .ev("create")
                            .kv("kind", self.attempt.kind.as_str())
                            .kv("name", if name.is_empty() { "csr-<generated>" } else { name })
                            .kv("signer", signer)
                            .done(),
                    ),
                    _ if !self.wait.announced => {
                        self.wait.since = now;
                        self.wait.progress_gap = FIRST_PROGRESS_SECS;
                        self.wait.progress_at = now.saturating_add(FIRST_PROGRESS_SECS);
                        Some(self.wait_line(now))
                    }
                    _ => None,
                };
                if kind != engine::RequestKind::Create {
                    self.wait.announced = true;
                }
                if let Some(l) = line {
                    self.events.push(l);
                }
                return true;
            }
            Next::Sleep(t) => {
                if core::mem::take(&mut self.wait.retrying) {
                    match self.engine.retry_after() {
                        Some(secs) => self.retry_line(t, secs, "csr"),
                        None => {
                            let line = self
                                .events
                                .ev("retry")
                                .kv("kind", self.attempt.kind.as_str())
                                .time("at", t)
                                .done();
                            self.events.push(line);
                        }
                    }
                }
                self.schedule.sleep_until = Some(t.max(now));
            }
            Next::Done => self.issued(now),
            Next::Failed(e) => {
                let mut d = Detail::new();
                if let Some((_, f)) = self.engine.failure() {
                    if let Some(s) = f.status {
                        let _ = write!(d, "status={s} ");
                    }
                    if !f.reason.is_empty() {
                        let _ = write!(d, "reason={} ", f.reason);
                    }
                    let _ = d.push_str(&f.message);
                }
                self.attempt_failed(now, e, &d);
            }
        }
        false
    }

    /// Still waiting for approval (between requests, or while a watch is open and quiet): say so
    /// again when the next line is due, with the time waited, at growing intervals.
    pub(super) fn progress(&mut self, now: i64) {
        let w = &self.wait;
        if !(w.announced && w.progress_at > 0 && now >= w.progress_at) {
            return;
        }
        if !matches!(
            self.engine.phase(),
            engine::Phase::Watch
                | engine::Phase::Watching
                | engine::Phase::Fetch
                | engine::Phase::Backoff
        ) {
            return;
        }
        let line = self.wait_line(now);
        self.events.update(line);
        self.wait.progress_gap = self.wait.progress_gap.saturating_mul(2).min(MAX_PROGRESS_SECS);
        self.wait.progress_at = now.saturating_add(self.wait.progress_gap);
    }

    /// An answer to the engine's request.
    pub(super) fn engine_response(
        &mut self,
        now: i64,
        status: u16,
        headers: &Headers<'_>,
        body: &[u8],
    ) {
        let kind = self.engine.outstanding_request().map(|r| r.kind);
        if !(200..300).contains(&status) {
            let line = self
                .events
                .ev("http")
                .kv("request", self.request_name())
                .num("status", i64::from(status))
                .done();
            self.events.push(line);
            self.wait.retrying = true;
        }
        self.io.pending = Pending::None;
        {
            let mut refs = heapless::Vec::new();
            let expect = expect(&self.settings, &self.loader, self.attempt.kind, &mut refs);
            self.engine.on_response(now, status, headers, body, &expect);
        }
        if kind == Some(engine::RequestKind::Create) && self.engine.created() {
            let line = self
                .events
                .ev("created")
                .kv("kind", self.attempt.kind.as_str())
                .kv("name", self.engine.csr_name())
                .done();
            self.events.push(line);
        }
    }

    /// The wait until `at` is the server's: it answered `Retry-After: <secs>` to the `request`.
    fn retry_line(&mut self, at: i64, secs: u32, request: &str) {
        let line = self
            .events
            .ev("retry")
            .kv("kind", self.attempt.kind.as_str())
            .kv("request", request)
            .kv("reason", "server-asked")
            .num("retry_after", i64::from(secs))
            .time("at", at)
            .done();
        self.events.push(line);
    }

    /// The certificate was issued and validated: the pair goes into `out` (the chain, then the
    /// key), and the file plan stores it — after the apiserver took it as the node, when it
    /// chains to no CA the agent has.
    #[inline(never)] // its locals stay out of poll's and the on_* frames (firmware stacks)
    fn issued(&mut self, now: i64) {
        self.attempt.issued = true;
        let kind = self.attempt.kind;
        let mut content = Err(Error::InvalidState);
        let mut anchored = true;
        if let engine::Action::Done(i) = self.engine.poll(now) {
            anchored = i.anchored;
            let b = self
                .events
                .ev("issued")
                .kv("kind", kind.as_str())
                .kv("name", i.csr_name)
                .time("not_before", i.verified.not_before)
                .time("not_after", i.verified.not_after)
                .kv("issuer", &i.verified.ca_subject);
            let line = if anchored { b.done() } else { b.kv("chain", "unanchored").done() };
            self.events.push(line);
            if i.clock_off {
                let line = self
                    .events
                    .ev("warning")
                    .kv("what", "the clock disagrees with the certificate just issued")
                    .kv("reason", Error::ClockUntrusted.name())
                    .time("now", now)
                    .done();
                self.events.push(line);
            }
            self.out.clear();
            content = loader::split_pair(i.cert_pem, Some(&mut self.out), None);
        }
        self.attempt.cert_len = self.out.len();
        let mut key_pem = Filled::<SEC1_PEM_LEN>::new();
        let r = content
            .and_then(|()| self.keys.pair_key(&mut key_pem))
            .and_then(|key| self.out.extend(key));
        zeroize::Zeroize::zeroize(&mut key_pem);
        match r {
            Err(e) => self.attempt_failed(now, e, "preparing the pair to store"),
            Ok(()) if !anchored => self.ask(Doubt::Issued, 0),
            Ok(()) => self.store_issued(now),
        }
    }

    /// The file plan stores the pair in `out`.
    pub(super) fn store_issued(&mut self, now: i64) {
        let kind = self.attempt.kind;
        let l = &self.loader;
        let store = Store {
            kubeconfig: kind == Kind::Bootstrap
                || (kind == Kind::Rotate && !l.kc_points_at_current),
            // The replaced key of this node's pair, when a device holds it.
            destroy_old: kind != Kind::Serving
                && l.kc_points_at_current
                && l.client_key_in_device()
                && l.client_key.as_slice() != self.keys.new_ref.as_slice(),
            remove_cache: kind == Kind::Bootstrap,
        };
        match self.plan.begin_store(&self.settings, kind, now, store) {
            Ok(()) => self.phase = Phase::Store,
            Err(e) => self.attempt_failed(now, e, "preparing the pair to store"),
        }
    }

    pub(super) fn attempt_succeeded(&mut self, now: i64) {
        match self.attempt.kind {
            Kind::Rotate => {
                self.schedule.rotate_now.client = false;
                self.schedule.rotations = self.schedule.rotations.saturating_add(1);
            }
            Kind::Serving => {
                if let verdict::Verdict::Valid(old) = self.loader.serving {
                    self.schedule.rotations = self.schedule.rotations.saturating_add(1);
                    // The kubelet's histogram: how long the replaced certificate had lived.
                    self.metrics.serving_rotation.observe(now.saturating_sub(old.not_before));
                }
                self.schedule.rotate_now.serving = false;
            }
            Kind::Bootstrap => self.attempt.force_bootstrap = false,
        }
        self.schedule.attempts_failed = 0;
        // The attempt's key is kept (not reset here) until the load that follows has judged the
        // pair just stored: that judgement then knows its public key (`LoadCx::held`) instead of
        // deriving it again from the file. The load's end resets it.
        self.engine.reset();
        self.out.wipe();
        self.attempt.just_stored = Some(self.attempt.kind);
        self.phase = Phase::Start;
    }

    /// The attempt failed with `e`: undo what it made that is of no use, then stop or retry.
    #[inline(never)] // its locals stay out of poll's and the on_* frames (firmware stacks)
    pub(super) fn attempt_failed(&mut self, now: i64, e: Error, why: &str) {
        let kind = self.attempt.kind;
        self.failure = Some(e);
        self.detail = detail(format_args!("{}: {why}", kind.as_str()));
        // A rotation refused by the apiserver: fall back to the bootstrap credential.
        if kind == Kind::Rotate
            && e == Error::Unauthorized
            && self.settings.can_bootstrap()
            && !self.attempt.force_bootstrap
        {
            self.attempt.force_bootstrap = true;
            self.count_failure();
            let line = self.events.ev("bootstrap").kv("reason", "rotation-unauthorized").done();
            self.events.push(line);
            self.failure = None;
            self.engine.reset();
            if self.keys.unused_device_key() {
                self.attempt.fallback = true;
                self.plan.begin_cleanup(Cleanup { destroy_new: true, ..Cleanup::default() });
                self.phase = Phase::Cleanup;
            } else {
                self.phase = Phase::Start;
            }
            return;
        }
        // A key cache made for this attempt goes again, unless a CSR signed by it exists and may
        // still be approved (a timeout), or a certificate was issued for it: then a restart must
        // reuse the key, so that it finds its own `node-csr-` object. A rotation's device key
        // that will not be current goes at once.
        let keep = self.attempt.issued || (e == Error::Timeout && self.engine.created());
        let bootstrap = kind == Kind::Bootstrap;
        let remove_cache = bootstrap && self.keys.generated && !keep;
        let destroy_new = self.keys.unused_device_key() && (!bootstrap || remove_cache);
        if remove_cache || destroy_new {
            self.plan.begin_cleanup(Cleanup {
                remove_cache,
                destroy_new,
                remove_dir: self.keys.dir_created,
            });
            self.phase = Phase::Cleanup;
            return;
        }
        if bootstrap && self.keys.generated && keep {
            let line = self
                .events
                .ev("cleanup")
                .kv("kept", &self.settings.key_cache)
                .kv("reason", "the CSR exists; a restart reuses its key")
                .done();
            self.events.push(line);
        }
        self.finish_failure(now);
    }

    /// The cleanup is over.
    pub(super) fn cleaned_up(&mut self, now: i64) {
        self.keys.dir_created = false;
        if core::mem::take(&mut self.attempt.fallback) {
            self.phase = Phase::Start;
        } else {
            self.finish_failure(now);
        }
    }

    /// One more failed attempt in the metrics (the kubelet's renew-error counters).
    fn count_failure(&mut self) {
        let m = &mut self.metrics;
        let c = if self.attempt.kind == Kind::Serving {
            &mut m.serving_renew_errors
        } else {
            &mut m.client_renew_errors
        };
        *c = c.saturating_add(1);
    }

    /// Stop for good ([`Mode::Once`]), or retry after the kubelet's backoff ([`Mode::Run`]).
    #[inline(never)] // its locals stay out of poll's and the on_* frames (firmware stacks)
    pub(super) fn finish_failure(&mut self, now: i64) {
        // A clock that cannot be trusted is no failed attempt at a certificate.
        if self.settings.mode != Mode::Check && self.failure != Some(Error::ClockUntrusted) {
            self.count_failure();
        }
        self.keys.reset();
        self.engine.reset();
        if !self.settings.runs() {
            self.phase = Phase::Failed;
            return;
        }
        let e = self.failure.take().unwrap_or(Error::InvalidState);
        let ms = rotation::backoff_delay_ms(
            self.schedule.attempts_failed,
            self.schedule.jitter.next_u32(),
        );
        self.schedule.attempts_failed = self.schedule.attempts_failed.saturating_add(1);
        let secs = i64::try_from(ms.div_ceil(1000)).unwrap_or(i64::MAX);
        let until = now.saturating_add(secs);
        let line = self
            .events
            .ev("retry")
            .kv("kind", self.attempt.kind.as_str())
            .kv("reason", e.name())
            .kv("detail", &self.detail)
            .time("at", until)
            .done();
        self.events.push(line);
        self.schedule.sleep_until = Some(until);
        self.phase = Phase::Start;
    }

    /// Stop now with `e` (the pair just stored does not validate: nothing is retried).
    pub(super) fn fail(&mut self, e: Error, detail: &str) {
        self.failure = Some(e);
        self.detail.clear();
        for c in detail.chars() {
            if self.detail.push(c).is_err() {
                break;
            }
        }
        self.phase = Phase::Failed;
    }

    /// The outstanding request's name in lines.
    pub(super) fn request_name(&self) -> &'static str {
        match self.io.pending {
            Pending::Healthz => "healthz",
            Pending::Discovery => "cluster-info",
            Pending::Trust => self.trust.request_name(),
            Pending::Probe => "self-subject-review",
            _ => self.engine.outstanding_request().map_or("request", |r| r.kind.as_str()),
        }
    }
}
