//! The agent's transitions: what each answer means and what comes next.

use core::fmt::Write;

use super::device::Presigned;
use super::*;

/// A detail text.
pub(super) type Detail = heapless::String<MAX_DETAIL>;

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

pub(super) fn file_error(e: StoreErrorKind) -> Error {
    Error::Store(e)
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
    /// One internal transition (states that need no I/O).
    pub(super) fn step(&mut self, now: i64) {
        match self.st {
            St::Start => self.begin(),
            St::CheckClient => self.check_client(now),
            St::Decide => self.decide(now),
            St::PrepareBootstrap => self.prepare_bootstrap(now),
            St::StartEngine => self.start_engine(now),
            St::DiscoverRun => self.drive_discovery(now),
            St::EngineRun => self.drive_engine(now),
            St::CaCompare => self.ca_compare(now),
            _ => {}
        }
    }

    pub(super) fn begin(&mut self) {
        self.clear_loaded();
        // Until `decide` picks one, what fails is the client credentials (retry lines, metrics).
        self.kind = Kind::Bootstrap;
        self.conn_id = self.conn_id.wrapping_add(2);
        // Check mode changes nothing, not even an interrupted swap (it reads what is there).
        self.st = if self.mode == Mode::Check { St::ReadKubeconfig } else { St::RecoverClient };
    }

    pub(super) fn can_bootstrap(&self) -> bool {
        self.discovery_on || !self.bootstrap_path.is_empty()
    }

    // -----------------------------------------------------------------------------------------
    // Deciding

    #[inline(never)] // its locals stay out of poll's and the on_* frames (firmware stacks)
    pub(super) fn decide(&mut self, now: i64) {
        if self.mode == Mode::Check {
            let valid = |v| if let Verdict::Valid(c) = v { Some(c) } else { None };
            self.outcome = Outcome { client: valid(self.client), serving: valid(self.serving) };
            self.st = St::Done;
            return;
        }
        if let Some(k) = self.just_stored.take() {
            let v = if k == Kind::Serving { self.serving } else { self.client };
            if let Verdict::Unusable(e, what) = v {
                let d = detail(format_args!("the {what} just stored does not validate: {e}"));
                self.fail(e, &d);
                return;
            }
        }
        let client = match self.client {
            Verdict::Valid(c) if !self.force_bootstrap => c,
            other => {
                let (e, what) = match other {
                    Verdict::Unusable(e, what) => (e, what),
                    _ => (Error::Unauthorized, Part::ClientCertificate),
                };
                if self.can_bootstrap() {
                    self.kind = Kind::Bootstrap;
                    let line = self
                        .ev("bootstrap")
                        .kv("reason", e.name())
                        .kv("what", what.as_str())
                        .done();
                    self.event(line);
                    self.begin_bootstrap(now);
                } else {
                    let d = detail(format_args!(
                        "{what}: {e}; no bootstrap kubeconfig to fall back on"
                    ));
                    self.failure = Some(e);
                    self.detail = d;
                    self.finish_failure(now);
                }
                return;
            }
        };
        if self.rotate_now.client || now >= client.rotation_deadline {
            self.kind = Kind::Rotate;
            let reason = if self.rotate_now.client { "forced" } else { "due" };
            let line = self
                .ev("rotate")
                .kv("kind", "client")
                .kv("reason", reason)
                .time("deadline", client.rotation_deadline)
                .done();
            self.event(line);
            self.make_key(now);
            return;
        }
        let mut serving = None;
        if self.serving_on {
            match self.serving {
                Verdict::Valid(s) if !self.rotate_now.serving && now < s.rotation_deadline => {
                    serving = Some(s)
                }
                v => {
                    self.kind = Kind::Serving;
                    let mut b = self.ev("serving");
                    b = match v {
                        Verdict::Valid(s) => b
                            .kv("reason", if self.rotate_now.serving { "forced" } else { "due" })
                            .time("deadline", s.rotation_deadline),
                        Verdict::Unusable(e, _) => b.kv("reason", e.name()),
                        Verdict::Unknown => b.kv("reason", "unknown"),
                    };
                    let line = b.done();
                    self.event(line);
                    self.make_key(now);
                    return;
                }
            }
        }
        if !self.swept && self.client_dir_exists {
            // A key cache next to valid credentials was left by a crash after they were stored;
            // a later bootstrap must not reuse its key (its CSR is done).
            self.swept = true;
            self.st = St::SweepCache;
            return;
        }
        if self.ca_refresh_due(now) {
            self.begin_ca_refresh();
            return;
        }
        self.outcome = Outcome { client: Some(client), serving };
        let mut next = serving.map_or(client.rotation_deadline, |s| {
            s.rotation_deadline.min(client.rotation_deadline)
        });
        if let Some(at) = self.ca_next.filter(|_| self.ca_refresh_on()) {
            next = next.min(at);
        }
        match self.mode {
            Mode::Run { max_rotations } if max_rotations.is_none_or(|m| self.rotations < m) => {
                let line = self.ev("sleep").time("until", next).done();
                self.event(line);
                self.sleep_until = Some(next);
                self.st = St::Start;
            }
            _ => {
                let mut b = self.ev("done").time("client_not_after", client.not_after);
                b = b.time("client_rotation_deadline", client.rotation_deadline);
                if let Some(s) = serving {
                    b = b.time("serving_not_after", s.not_after);
                }
                let line = b.done();
                self.event(line);
                self.st = St::Done;
            }
        }
    }

    #[inline(never)] // its locals stay out of poll's and the on_* frames (firmware stacks)
    pub(super) fn begin_bootstrap(&mut self, now: i64) {
        self.key = None;
        self.key_generated = false;
        self.key_tries = 0;
        self.dir_created = false;
        // The kubelet waits a minute for /healthz; never longer than the whole wait.
        self.healthz_until = now.saturating_add(HEALTHZ_WAIT_SECS.min(self.bootstrap_wait));
        if self.discovery_on {
            let started = match self.discovery_token.as_ref() {
                Some(t) => {
                    let mut cfg = discovery::Config::new(t, &self.discovery_pins);
                    cfg.allow_unpinned = self.discovery_unpinned;
                    cfg.timeout_secs = self.discovery_timeout;
                    cfg.jitter_seed =
                        u64::from(self.jitter.next_u32()) << 32 | u64::from(self.jitter.next_u32());
                    self.discovery.start(cfg, now)
                }
                None => Err(Error::InvalidConfig),
            };
            match started {
                Ok(()) => {
                    let line = self.ev("discovery").kv("server", &self.discovery_server).done();
                    self.event(line);
                    self.st = St::DiscoverRun;
                }
                Err(e) => self.attempt_failed(now, e, "starting discovery"),
            }
        } else {
            self.st = St::ReadBootKc;
        }
    }

    #[inline(never)] // its locals stay out of poll's and the on_* frames (firmware stacks)
    pub(super) fn prepare_bootstrap(&mut self, now: i64) {
        if self.token.is_none() {
            return self.attempt_failed(
                now,
                Error::InvalidToken,
                "the bootstrap kubeconfig has no bootstrap token",
            );
        }
        if !self.boot.insecure && self.boot.ca.is_empty() {
            return self.attempt_failed(
                now,
                Error::NoCa,
                "the bootstrap kubeconfig has no certificate-authority",
            );
        }
        if self.bundle.is_empty() && self.boot.ca.is_empty() {
            return self.attempt_failed(
                now,
                Error::NoCa,
                "no CA to validate the issued certificate against (give a CA bundle)",
            );
        }
        if self.node.is_empty() {
            return self.attempt_failed(
                now,
                Error::InvalidConfig,
                "bootstrapping needs the node name",
            );
        }
        let token_id = self.token.as_ref().map_or("", |t| t.id());
        let mut id = heapless::String::<8>::new();
        let _ = id.push_str(token_id);
        let line = self
            .ev("bootstrap")
            .kv("node", &self.node)
            .kv("server", &self.boot.server)
            .kv("token_id", &id)
            .done();
        self.event(line);
        if self.client_dir_exists {
            self.st = St::ReadKeyCache;
        } else {
            self.make_key(now);
        }
    }

    // -----------------------------------------------------------------------------------------
    // Running an attempt

    #[inline(never)] // its locals stay out of poll's and the on_* frames (firmware stacks)
    pub(super) fn start_engine(&mut self, now: i64) {
        if self.prepare_device_signature(now) {
            return;
        }
        if self.key.is_none() && self.dk.signature.is_none() {
            return self.attempt_failed(now, Error::InvalidState, "no key");
        }
        // A device's key: the engine builds the CSR around the signature the device made.
        let presigned = self.dk.signature.map(|rs| Presigned {
            point: self.dk.new_point,
            message: &self.out,
            rs,
        });
        let Some(key) = presigned
            .as_ref()
            .map(|p| p as &dyn crate::key::P256Signer)
            .or(self.key.as_ref().map(|k| k as &dyn crate::key::P256Signer))
        else {
            return;
        };
        let ca: &[u8] = if !self.bundle.is_empty() {
            &self.bundle
        } else if self.kind == Kind::Bootstrap {
            &self.boot.ca
        } else {
            &self.node_kc.ca
        };
        // (In a block: the borrowed SAN names end before the outcome is handled.)
        let started = {
            let mut refs = heapless::Vec::<&str, MAX_SANS>::new();
            crate::csr::borrow_names(&self.serving_dns, &mut refs);
            let profile = if self.kind == Kind::Serving {
                Profile::Serving { dns: &refs, ips: &self.serving_ips }
            } else {
                Profile::Client
            };
            let (auth, naming, wait) = match (self.kind, self.token.as_ref()) {
                #[cfg(feature = "csr-name")]
                (Kind::Bootstrap, Some(t)) => {
                    (engine::Auth::Token(t), Naming::NodeCsr, self.bootstrap_wait)
                }
                #[cfg(not(feature = "csr-name"))]
                (Kind::Bootstrap, Some(t)) => {
                    (engine::Auth::Token(t), Naming::Generate, self.bootstrap_wait)
                }
                _ => (engine::Auth::ClientCertificate, Naming::Generate, self.rotation_wait),
            };
            let cfg = engine::Config {
                node_name: &self.node,
                profile,
                auth,
                naming,
                ca_pem: ca,
                expiration_seconds: self.expiration_seconds,
                wait_secs: wait,
                watch: self.watch,
                verifier: self.verifier(),
            };
            let seed = u64::from(self.jitter.next_u32()) << 32 | u64::from(self.jitter.next_u32());
            self.engine.start(&cfg, key, now, seed)
        };
        if self.dk.signature.take().is_some() {
            // The signed `CertificationRequestInfo` is in the CSR now.
            self.out.clear();
        }
        match started {
            Ok(()) => {
                self.conn = if self.kind == Kind::Bootstrap { Conn::Bootstrap } else { Conn::Node };
                self.conn_id = self.conn_id.wrapping_add(2);
                self.announced_wait = false;
                // The first watch follows the create at once: it too ends when the first
                // progress line is due.
                self.engine.end_watches_by(Some(now.saturating_add(FIRST_PROGRESS_SECS)));
                self.issued = false;
                self.st = St::EngineRun;
            }
            Err(e) => self.attempt_failed(now, e, "building the CSR"),
        }
    }

    /// `step=wait`: what the CSR waits for, what unblocks it, and for how long it has waited.
    #[inline(never)] // its locals stay out of poll's and the on_* frames (firmware stacks)
    pub(super) fn wait_line(&self, now: i64) -> Line {
        let name = self.engine.csr_name();
        let signer = self.engine.signer_name();
        let mut hint = Detail::new();
        let _ = write!(hint, "kubectl certificate approve {name}");
        let elapsed = event::duration(now.saturating_sub(self.wait_since));
        let mut msg = Detail::new();
        let _ = write!(msg, "waiting for approval of {name} (signer {signer}): {hint}");
        if now > self.wait_since {
            let _ = write!(msg, " (waited {elapsed})");
        }
        self.ev("wait")
            .kv("kind", self.kind.as_str())
            .kv("name", name)
            .kv("signer", signer)
            .kv("hint", &hint)
            .kv("elapsed", &elapsed)
            .kv("msg", &msg)
            .done()
    }

    #[inline(never)] // its locals stay out of poll's and the on_* frames (firmware stacks)
    pub(super) fn drive_discovery(&mut self, now: i64) {
        enum Next {
            Send,
            Sleep(i64),
            Done,
            Failed(Error),
        }
        let next = match self.discovery.poll(now) {
            discovery::Action::Send(_) | discovery::Action::AwaitResponse { .. } => Next::Send,
            discovery::Action::Wait { until } => Next::Sleep(until),
            discovery::Action::Done(found) => {
                let _ = self.out.resize_default(OUT);
                match found.write_bootstrap_kubeconfig(&mut self.out) {
                    Ok(n) => {
                        self.out.truncate(n);
                        Next::Done
                    }
                    Err(e) => {
                        self.out.as_mut_slice().zeroize();
                        self.out.clear();
                        Next::Failed(if matches!(e, Error::BufferTooSmall { .. }) {
                            Error::TooLarge
                        } else {
                            e
                        })
                    }
                }
            }
            discovery::Action::Failed(e) => Next::Failed(e),
        };
        match next {
            Next::Send => self.pending = Pending::Discovery,
            Next::Sleep(t) => {
                if let Some(secs) = self.discovery.retry_after() {
                    self.retry_line(t, secs, "cluster-info");
                }
                self.sleep_until = Some(t.max(now));
            }
            Next::Done => {
                let line = self
                    .ev("discovered")
                    .kv("server", &self.discovery_server)
                    .kv("pinned", if self.discovery_pins.is_empty() { "false" } else { "true" })
                    .kv("bootstrap_kubeconfig", &self.bootstrap_path)
                    .done();
                self.event(line);
                self.st = St::WriteBootKc;
            }
            Next::Failed(e) => {
                let why = self.discovery.failure().map_or("", |f| f.1);
                let d = detail(format_args!("discovery: {why}"));
                self.attempt_failed(now, e, &d);
            }
        }
    }

    #[inline(never)] // its locals stay out of poll's and the on_* frames (firmware stacks)
    pub(super) fn drive_engine(&mut self, now: i64) {
        enum Next {
            Send(engine::RequestKind),
            Sleep(i64),
            Done,
            Failed(Error),
        }
        let waiting = matches!(
            self.engine.phase(),
            engine::Phase::Watch | engine::Phase::Fetch | engine::Phase::Backoff
        );
        if self.announced_wait && self.progress_at > 0 && now >= self.progress_at && waiting {
            // Still waiting: say so again, with the time waited, at growing intervals.
            let line = self.wait_line(now);
            self.push_event(line, true);
            self.progress_gap = self.progress_gap.saturating_mul(2).min(MAX_PROGRESS_SECS);
            self.progress_at = now.saturating_add(self.progress_gap);
            self.engine.end_watches_by(Some(self.progress_at));
        }
        let next = match self.engine.poll(now) {
            engine::Action::Send(r) => Next::Send(r.kind),
            engine::Action::AwaitResponse { .. } => Next::Send(engine::RequestKind::Get),
            engine::Action::Wait { until } => Next::Sleep(until),
            engine::Action::Done(_) => Next::Done,
            engine::Action::Failed(e) => Next::Failed(e),
        };
        match next {
            Next::Send(kind) => {
                self.pending = Pending::Engine;
                let name = self.engine.csr_name();
                let signer = self.engine.signer_name();
                let line = match kind {
                    engine::RequestKind::Create => Some(
                        self.ev("create")
                            .kv("kind", self.kind.as_str())
                            .kv("name", if name.is_empty() { "csr-<generated>" } else { name })
                            .kv("signer", signer)
                            .done(),
                    ),
                    _ if !self.announced_wait => {
                        self.wait_since = now;
                        self.progress_gap = FIRST_PROGRESS_SECS;
                        self.progress_at = now.saturating_add(FIRST_PROGRESS_SECS);
                        self.engine.end_watches_by(Some(self.progress_at));
                        Some(self.wait_line(now))
                    }
                    _ => None,
                };
                if kind != engine::RequestKind::Create {
                    self.announced_wait = true;
                }
                if let Some(l) = line {
                    self.event(l);
                }
            }
            Next::Sleep(t) => {
                if core::mem::take(&mut self.retrying) {
                    match self.engine.retry_after() {
                        Some(secs) => self.retry_line(t, secs, "csr"),
                        None => {
                            let line = self
                                .ev("retry")
                                .kv("kind", self.kind.as_str())
                                .time("at", t)
                                .done();
                            self.event(line);
                        }
                    }
                }
                self.sleep_until = Some(t.max(now));
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
    }

    /// The wait until `at` is the server's: it answered `Retry-After: <secs>` to the `request`.
    pub(super) fn retry_line(&mut self, at: i64, secs: u32, request: &str) {
        let line = self
            .ev("retry")
            .kv("kind", self.kind.as_str())
            .kv("request", request)
            .kv("reason", "server-asked")
            .num("retry_after", i64::from(secs))
            .time("at", at)
            .done();
        self.event(line);
    }

    /// The certificate was issued and validated: plan the files.
    #[inline(never)] // its locals stay out of poll's and the on_* frames (firmware stacks)
    pub(super) fn issued(&mut self, now: i64) {
        self.issued = true;
        let prefix = if self.kind == Kind::Serving { PREFIX_SERVER } else { PREFIX_CLIENT };
        let mut line = None;
        let mut content = Ok(());
        if let engine::Action::Done(i) = self.engine.poll(now) {
            line = Some(
                LineBuilder::new(&self.front_end, "issued", self.log_format)
                    .kv("kind", self.kind.as_str())
                    .kv("name", i.csr_name)
                    .time("not_before", i.verified.not_before)
                    .time("not_after", i.verified.not_after)
                    .kv("issuer", &i.verified.ca_subject)
                    .done(),
            );
            self.out.clear();
            content = split_pair(i.cert_pem, &mut self.out, None::<&mut heapless::Vec<u8, 1>>);
        }
        if let Some(l) = line {
            self.event(l);
        }
        let mut key_pem = Filled::<SEC1_PEM_LEN>::new();
        let key = match (&self.key, content) {
            // A device's key: its reference takes the key's place.
            (None, Ok(())) if !self.dk.new_ref.is_empty() => Ok(self.dk.new_ref.as_slice()),
            (Some(k), Ok(())) => key_pem.fill(|b| k.to_sec1_pem(b)),
            (_, Err(e)) => Err(e),
            (None, _) => Err(Error::InvalidState),
        };
        let r = key.and_then(|pem| self.out.extend_from_slice(pem).map_err(|_| Error::TooLarge));
        key_pem.zeroize();
        let ts = timestamp(now, self.utc_offset);
        let paths = r
            .and_then(|()| {
                path::child_into(
                    &self.cert_dir,
                    &[prefix, "-", &ts, ".pem"],
                    &mut self.step_paths[0],
                )
            })
            .and_then(|()| {
                path::child_into(&self.cert_dir, &[prefix, "-current.pem"], &mut self.step_paths[1])
            })
            .and_then(|()| {
                path::child_into(&self.cert_dir, &[prefix, "-updated.pem"], &mut self.step_paths[2])
            });
        match paths {
            Ok(()) => self.st = St::StorePair,
            Err(e) => self.attempt_failed(now, e, "preparing the pair to store"),
        }
    }

    #[inline(never)] // its locals stay out of poll's and the on_* frames (firmware stacks)
    pub(super) fn write_node_kubeconfig(&mut self) -> Result<()> {
        // After bootstrap: the bootstrap kubeconfig's server and CA (as the kubelet does); after
        // a rotation (a kubeconfig that did not name -current.pem): its own.
        // The CA is always the cert dir's file (`StoreCa` wrote it), so that a CA rotation can
        // be followed (see the module docs).
        let c = if self.kind == Kind::Bootstrap { &self.boot } else { &self.node_kc };
        let cfg = NodeKubeconfig {
            server: &c.server,
            certificate_authority: if c.ca.is_empty() { None } else { Some(&self.ca_file_path) },
            certificate_authority_data: None,
            insecure_skip_tls_verify: c.insecure,
            cert_dir: &self.cert_dir,
        };
        let _ = self.out.resize_default(OUT);
        match write_node_kubeconfig(&cfg, &mut self.out) {
            Ok(n) => {
                self.out.truncate(n);
                Ok(())
            }
            Err(e) => {
                self.out.clear();
                Err(if matches!(e, Error::BufferTooSmall { .. }) { Error::TooLarge } else { e })
            }
        }
    }

    pub(super) fn attempt_succeeded(&mut self, now: i64) {
        match self.kind {
            Kind::Rotate => {
                self.rotate_now.client = false;
                self.rotations = self.rotations.saturating_add(1);
            }
            Kind::Serving => {
                if let Verdict::Valid(old) = self.serving {
                    self.rotations = self.rotations.saturating_add(1);
                    // The kubelet's histogram: how long the replaced certificate had lived.
                    self.metrics.serving_rotation.observe(now.saturating_sub(old.not_before));
                }
                self.rotate_now.serving = false;
            }
            Kind::Bootstrap => self.force_bootstrap = false,
        }
        self.attempts_failed = 0;
        self.key = None;
        self.engine.reset();
        self.out.as_mut_slice().zeroize();
        self.out.clear();
        self.just_stored = Some(self.kind);
        self.st = St::Start;
    }

    /// The attempt failed with `e`: undo what it made that is of no use, then stop or retry.
    #[inline(never)] // its locals stay out of poll's and the on_* frames (firmware stacks)
    pub(super) fn attempt_failed(&mut self, now: i64, e: Error, why: &str) {
        self.failure = Some(e);
        self.detail = detail(format_args!("{}: {why}", self.kind.as_str()));
        // A rotation refused by the apiserver: fall back to the bootstrap credential.
        if self.kind == Kind::Rotate
            && e == Error::Unauthorized
            && self.can_bootstrap()
            && !self.force_bootstrap
        {
            self.force_bootstrap = true;
            self.count_failure();
            let line = self.ev("bootstrap").kv("reason", "rotation-unauthorized").done();
            self.event(line);
            self.failure = None;
            self.engine.reset();
            self.st = if self.unused_device_key() { St::DestroyNew } else { St::Start };
            return;
        }
        // A rotation's device key that will not be current goes at once.
        if self.kind != Kind::Bootstrap && self.unused_device_key() {
            self.st = St::DestroyNew;
            return;
        }
        // A key cache made for this attempt goes again, unless a CSR signed by it exists and may
        // still be approved (a timeout), or a certificate was issued for it: then a restart must
        // reuse the key, so that it finds its own `node-csr-` object.
        let keep = self.issued || (e == Error::Timeout && self.engine.created());
        if self.kind == Kind::Bootstrap && self.key_generated && !keep {
            self.st = St::CleanupCache;
            return;
        }
        if self.kind == Kind::Bootstrap && self.key_generated && keep {
            let line = self
                .ev("cleanup")
                .kv("kept", &self.key_cache_path)
                .kv("reason", "the CSR exists; a restart reuses its key")
                .done();
            self.event(line);
        }
        self.finish_failure(now);
    }

    /// One more failed attempt in the metrics (the kubelet's renew-error counters).
    pub(super) fn count_failure(&mut self) {
        let m = &mut self.metrics;
        let c = if self.kind == Kind::Serving {
            &mut m.serving_renew_errors
        } else {
            &mut m.client_renew_errors
        };
        *c = c.saturating_add(1);
    }

    #[inline(never)] // its locals stay out of poll's and the on_* frames (firmware stacks)
    pub(super) fn finish_failure(&mut self, now: i64) {
        if self.mode != Mode::Check {
            self.count_failure();
        }
        self.key = None;
        self.engine.reset();
        match self.mode {
            Mode::Once | Mode::Check => self.st = St::Failed,
            Mode::Run { .. } => {
                let e = self.failure.take().unwrap_or(Error::InvalidState);
                let ms = rotation::backoff_delay_ms(self.attempts_failed, self.jitter.next_u32());
                self.attempts_failed = self.attempts_failed.saturating_add(1);
                let secs = i64::try_from(ms.div_ceil(1000)).unwrap_or(i64::MAX);
                let until = now.saturating_add(secs);
                let line = self
                    .ev("retry")
                    .kv("kind", self.kind.as_str())
                    .kv("reason", e.name())
                    .kv("detail", &self.detail)
                    .time("at", until)
                    .done();
                self.event(line);
                self.sleep_until = Some(until);
                self.st = St::Start;
            }
        }
    }
}
