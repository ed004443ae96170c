//! The agent's transitions: what each answer means and what comes next.

use core::fmt::Write;

use super::*;

/// A detail text.
type Detail = heapless::String<MAX_DETAIL>;

/// The wait for approval is announced, then again after this long, then at doubling intervals
/// up to [`MAX_PROGRESS_SECS`].
pub(crate) const FIRST_PROGRESS_SECS: i64 = 30;
/// The longest interval between two progress lines of a wait.
pub(crate) const MAX_PROGRESS_SECS: i64 = 900;

fn detail(args: core::fmt::Arguments<'_>) -> Detail {
    let mut d = Detail::new();
    let _ = d.write_fmt(args);
    d
}

fn file_error(e: StoreErrorKind) -> Error {
    Error::Store(e)
}

impl<const N: usize> Agent<N> {
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
            _ => {}
        }
    }

    fn begin(&mut self) {
        self.clear_loaded();
        // Until `decide` picks one, what fails is the client credentials (retry lines, metrics).
        self.kind = Kind::Bootstrap;
        self.conn_id = self.conn_id.wrapping_add(2);
        // Check mode changes nothing, not even an interrupted swap (it reads what is there).
        self.st = if self.mode == Mode::Check { St::ReadKubeconfig } else { St::RecoverClient };
    }

    fn can_bootstrap(&self) -> bool {
        self.discovery_on || !self.bootstrap_path.is_empty()
    }

    // -----------------------------------------------------------------------------------------
    // Loading the node's credentials

    fn unusable(&mut self, e: Error, what: Part) {
        if self.client == Verdict::Unknown {
            self.client = Verdict::Unusable(e, what);
        }
    }

    /// The next file to read for the client credentials, or the check.
    fn next_client_read(&mut self) {
        let usable = self.client == Verdict::Unknown;
        self.st = if usable && self.need_node_ca {
            St::ReadNodeCa
        } else if usable && self.need_cert {
            St::ReadClientCert
        } else if usable && self.need_key {
            St::ReadClientKey
        } else if !self.bundle_path.is_empty() && !self.bundle_loaded {
            St::ReadBundle
        } else {
            St::CheckClient
        };
    }

    fn load_node_kubeconfig(&mut self, bytes: &[u8]) -> Result<()> {
        let kc = Kubeconfig::parse(bytes)?;
        let r = kc.resolve()?;
        put(&mut self.node_kc_dir, path::dir(&self.kubeconfig_path))?;
        scalar_into(r.server(), &mut self.node_kc.server)?;
        while self.node_kc.server.ends_with('/') {
            self.node_kc.server.pop();
        }
        self.node_kc.insecure = r.cluster.insecure_skip_tls_verify;
        if let Some(n) = r.cluster.tls_server_name.filter(|n| !n.is_empty()) {
            scalar_into(n, &mut self.node_kc.server_name)?;
        }
        match r.cluster.ca_source() {
            Source::Data(d) => data_into(d, &mut self.node_kc.ca)?,
            Source::File(f) => {
                let mut rel = PathBuf::new();
                scalar_into(f, &mut rel)?;
                path::resolve_into(&self.node_kc_dir, &rel, &mut self.node_kc.ca_file)?;
                self.need_node_ca = true;
            }
            Source::None => {}
        }
        if self.node_kc.insecure && !matches!(r.cluster.ca_source(), Source::None) {
            // clientcmd: "specifying a root certificates file with the insecure flag is not
            // allowed".
            return Err(Error::Malformed);
        }
        match r.user.client_cert_source() {
            Source::Data(d) => {
                data_into(d, &mut self.out)?;
                split_pair(&self.out, &mut self.client_chain, None::<&mut heapless::Vec<u8, 1>>)?;
            }
            Source::File(f) => {
                let mut rel = PathBuf::new();
                scalar_into(f, &mut rel)?;
                path::resolve_into(&self.node_kc_dir, &rel, &mut self.cert_path)?;
                self.need_cert = true;
            }
            Source::None => return Err(Error::Store(StoreErrorKind::NoCertKeyFiles)),
        }
        match r.user.client_key_source() {
            Source::Data(d) => {
                data_into(d, &mut self.out)?;
                let mut none = heapless::Vec::<u8, 1>::new();
                split_pair(&self.out, &mut none, Some(&mut self.client_key))
                    .or_else(|e| if e == Error::TooLarge { Ok(()) } else { Err(e) })?;
                self.out.as_mut_slice().zeroize();
                self.out.clear();
            }
            Source::File(f) => {
                let mut rel = PathBuf::new();
                scalar_into(f, &mut rel)?;
                path::resolve_into(&self.node_kc_dir, &rel, &mut self.key_path)?;
                self.need_key = self.key_path != self.cert_path || !self.need_cert;
            }
            Source::None => return Err(Error::Store(StoreErrorKind::NoCertKeyFiles)),
        }
        let mut current = PathBuf::new();
        path::child_into(&self.cert_dir, &[PREFIX_CLIENT, "-current.pem"], &mut current)?;
        self.kc_points_at_current = self.cert_path == current && self.key_path == current;
        Ok(())
    }

    fn load_bootstrap_kubeconfig(&mut self, bytes: &[u8]) -> Result<()> {
        let kc = Kubeconfig::parse(bytes)?;
        let r = kc.resolve()?;
        put(&mut self.boot_dir, path::dir(&self.bootstrap_path))?;
        scalar_into(r.server(), &mut self.boot.server)?;
        while self.boot.server.ends_with('/') {
            self.boot.server.pop();
        }
        self.boot.insecure = r.cluster.insecure_skip_tls_verify;
        if let Some(n) = r.cluster.tls_server_name.filter(|n| !n.is_empty()) {
            scalar_into(n, &mut self.boot.server_name)?;
        }
        match r.cluster.ca_source() {
            Source::Data(d) => data_into(d, &mut self.boot.ca)?,
            Source::File(f) => {
                let mut rel = PathBuf::new();
                scalar_into(f, &mut rel)?;
                path::resolve_into(&self.boot_dir, &rel, &mut self.boot.ca_file)?;
            }
            Source::None => {}
        }
        if self.boot.insecure && !matches!(r.cluster.ca_source(), Source::None) {
            return Err(Error::Malformed);
        }
        match (r.user.token.filter(|t| !t.is_empty()), r.user.token_file.filter(|t| !t.is_empty()))
        {
            (Some(t), _) => {
                let mut buf = [0u8; 64];
                let text = t.decode_into(&mut buf).map_err(|_| Error::InvalidToken);
                let token = text.and_then(|s| BootstrapToken::parse(s.trim()));
                buf.zeroize();
                self.token = Some(token?);
            }
            (None, Some(f)) => {
                let mut rel = PathBuf::new();
                scalar_into(f, &mut rel)?;
                path::resolve_into(&self.boot_dir, &rel, &mut self.token_path)?;
            }
            (None, None) => return Err(Error::InvalidToken),
        }
        Ok(())
    }

    /// Validate a pair of the node (`chain` PEM, `key` PEM) for `profile`.
    fn validate(&mut self, chain_and_key: Option<&[u8]>, serving: bool, now: i64) -> Verdict {
        let (chain, key): (&[u8], &[u8]) = match chain_and_key {
            Some(both) => (both, both),
            None => (&self.client_chain, &self.client_key),
        };
        let what = if serving { Part::ServingCertificate } else { Part::ClientCertificate };
        if !pem::blocks(chain).any(|b| b.is_ok_and(|b| b.label == "CERTIFICATE")) {
            return Verdict::Unusable(Error::Store(StoreErrorKind::NoCertificates), what);
        }
        let key = match NodeKey::from_pem(key) {
            Ok(k) => k,
            Err(e) => return Verdict::Unusable(e, if serving { what } else { Part::ClientKey }),
        };
        let spki = key.public_key_spki();
        drop(key);
        if self.node.is_empty() {
            let scratch = self.engine.scratch();
            let name = pem::decode_first(chain, "CERTIFICATE", scratch)
                .ok()
                .and_then(verify::subject_node_name)
                .and_then(|n| heapless::String::<MAX_NODE_NAME>::try_from(n).ok());
            match name {
                Some(n) if crate::csr::validate_node_name(&n).is_ok() => self.node = n,
                _ => {
                    let e = VerifyError::field(Reason::SubjectMismatch, "subject.CN");
                    return Verdict::Unusable(Error::Verify(e), what);
                }
            }
        }
        let ca: &[u8] = if !self.bundle.is_empty() { &self.bundle } else { &self.node_kc.ca };
        if ca.is_empty() {
            return Verdict::Unusable(Error::NoCa, what);
        }
        let mut refs = [""; MAX_SANS];
        for (r, d) in refs.iter_mut().zip(self.serving_dns.iter()) {
            *r = d.as_str();
        }
        let profile = if serving {
            Profile::Serving {
                dns: refs.get(..self.serving_dns.len()).unwrap_or(&[]),
                ips: &self.serving_ips,
            }
        } else {
            Profile::Client
        };
        let expected = Expected { node_name: &self.node, public_key: &spki, profile };
        let verifier = self.verifier();
        let scratch = self.engine.scratch();
        match verify::verify_issued_with(verifier, chain, ca, &expected, now, scratch) {
            Ok(v) => Verdict::Valid(CertStatus {
                not_before: v.not_before,
                not_after: v.not_after,
                rotation_deadline: rotation::rotation_deadline(
                    v.not_before,
                    v.not_after,
                    cert_jitter(self.seed, chain),
                ),
            }),
            Err(Error::BufferTooSmall { .. }) => Verdict::Unusable(Error::TooLarge, what),
            Err(e) => Verdict::Unusable(e, what),
        }
    }

    fn report(&mut self, kind: &str, v: Verdict) {
        let not_after = match v {
            Verdict::Valid(c) => Some(c.not_after),
            Verdict::Unusable(..) => None,
            Verdict::Unknown => return,
        };
        if kind == "serving" {
            self.metrics.serving_not_after = not_after;
        } else {
            self.metrics.client_not_after = not_after;
        }
        let line = match v {
            Verdict::Valid(c) => self
                .ev("credentials")
                .kv("kind", kind)
                .kv("state", "valid")
                .time("not_after", c.not_after)
                .time("rotation_deadline", c.rotation_deadline)
                .done(),
            Verdict::Unusable(e, what) => self
                .ev("credentials")
                .kv("kind", kind)
                .kv("state", "unusable")
                .kv("reason", e.name())
                .kv("what", what.as_str())
                .kv("detail", &detail(format_args!("{e}")))
                .done(),
            Verdict::Unknown => return,
        };
        self.event(line);
    }

    fn check_client(&mut self, now: i64) {
        if self.client == Verdict::Unknown {
            self.client = self.validate(None, false, now);
        }
        self.report("client", self.client);
        let usable = matches!(self.client, Verdict::Valid(_));
        if self.mode == Mode::Check {
            // `out` keeps the serving chain (no file step uses it in this mode).
            self.out.as_mut_slice().zeroize();
            self.out.clear();
            self.read_serving();
        } else {
            self.st = if usable && self.serving_on { St::RecoverServer } else { St::Decide };
        }
    }

    /// Read `kubelet-server-current.pem` next.
    fn read_serving(&mut self) {
        match path::child_into(
            &self.cert_dir,
            &[PREFIX_SERVER, "-current.pem"],
            &mut self.step_paths[0],
        ) {
            Ok(()) => self.st = St::ReadServing,
            Err(e) => {
                self.serving = Verdict::Unusable(e, Part::ServingCertificate);
                self.st = St::Decide;
            }
        }
    }

    /// Check mode: keep the serving chain in `out` and, unless SANs were configured, take the
    /// certificate's own as requested.
    #[inline(never)] // its locals stay out of `on_read`'s frame (firmware stacks)
    fn keep_serving(&mut self, pair: &[u8]) {
        if split_pair(pair, &mut self.out, None::<&mut heapless::Vec<u8, 1>>).is_err() {
            self.out.clear();
        }
        if self.serving_on {
            return;
        }
        let scratch = self.engine.scratch();
        let Ok(der) = pem::decode_first(pair, "CERTIFICATE", scratch) else { return };
        let (dns, ips) = (&mut self.serving_dns, &mut self.serving_ips);
        let _ = verify::for_each_san(der, |san| match san {
            verify::San::Dns(d) => {
                if let Ok(d) = heapless::String::try_from(d) {
                    let _ = dns.push(d);
                }
            }
            verify::San::Ip(ip) => {
                let _ = ips.push(ip);
            }
        });
    }

    // -----------------------------------------------------------------------------------------
    // Deciding

    fn decide(&mut self, now: i64) {
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
            self.new_key();
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
                    self.new_key();
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
        self.outcome = Outcome { client: Some(client), serving };
        let next = serving.map_or(client.rotation_deadline, |s| {
            s.rotation_deadline.min(client.rotation_deadline)
        });
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

    fn new_key(&mut self) {
        self.key = None;
        self.key_generated = false;
        self.key_tries = 0;
        self.st = St::KeyEntropy;
    }

    fn begin_bootstrap(&mut self, now: i64) {
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

    fn prepare_bootstrap(&mut self, now: i64) {
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
        self.st = if self.client_dir_exists { St::ReadKeyCache } else { St::KeyEntropy };
    }

    // -----------------------------------------------------------------------------------------
    // Running an attempt

    fn start_engine(&mut self, now: i64) {
        let Some(key) = self.key.as_ref() else {
            return self.attempt_failed(now, Error::InvalidState, "no key");
        };
        let ca: &[u8] = if !self.bundle.is_empty() {
            &self.bundle
        } else if self.kind == Kind::Bootstrap {
            &self.boot.ca
        } else {
            &self.node_kc.ca
        };
        let mut refs = [""; MAX_SANS];
        for (r, d) in refs.iter_mut().zip(self.serving_dns.iter()) {
            *r = d.as_str();
        }
        let profile = if self.kind == Kind::Serving {
            Profile::Serving {
                dns: refs.get(..self.serving_dns.len()).unwrap_or(&[]),
                ips: &self.serving_ips,
            }
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
        match self.engine.start(&cfg, key, now, seed) {
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
    fn wait_line(&self, now: i64) -> Line {
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

    fn drive_discovery(&mut self, now: i64) {
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
                let _ = self.out.resize_default(OUT_CAP);
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
            Next::Sleep(t) => self.sleep_until = Some(t.max(now)),
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

    fn drive_engine(&mut self, now: i64) {
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
                    let line = self.ev("retry").kv("kind", self.kind.as_str()).time("at", t).done();
                    self.event(line);
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

    /// The certificate was issued and validated: plan the files.
    fn issued(&mut self, now: i64) {
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
        let mut key_pem = [0u8; SEC1_PEM_LEN];
        let key = match (&self.key, content) {
            (Some(k), Ok(())) => k.to_sec1_pem(&mut key_pem),
            (_, Err(e)) => Err(e),
            (None, _) => Err(Error::InvalidState),
        };
        let r = key.and_then(|n| {
            self.out.extend_from_slice(key_pem.get(..n).unwrap_or(&[])).map_err(|_| Error::TooLarge)
        });
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

    fn write_node_kubeconfig(&mut self) -> Result<()> {
        // After bootstrap: the bootstrap kubeconfig's server and CA (as the kubelet does); after
        // a rotation (a kubeconfig that did not name -current.pem): its own.
        let c = if self.kind == Kind::Bootstrap { &self.boot } else { &self.node_kc };
        let cfg = NodeKubeconfig {
            server: &c.server,
            certificate_authority: if c.ca_file.is_empty() { None } else { Some(&c.ca_file) },
            certificate_authority_data: if c.ca_file.is_empty() && !c.ca.is_empty() {
                Some(&c.ca)
            } else {
                None
            },
            insecure_skip_tls_verify: c.insecure,
            cert_dir: &self.cert_dir,
        };
        let _ = self.out.resize_default(OUT_CAP);
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

    fn attempt_succeeded(&mut self, now: i64) {
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
    fn attempt_failed(&mut self, now: i64, e: Error, why: &str) {
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
            self.st = St::Start;
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
    fn count_failure(&mut self) {
        let m = &mut self.metrics;
        let c = if self.kind == Kind::Serving {
            &mut m.serving_renew_errors
        } else {
            &mut m.client_renew_errors
        };
        *c = c.saturating_add(1);
    }

    fn finish_failure(&mut self, now: i64) {
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

    // -----------------------------------------------------------------------------------------
    // Answers

    /// The outcome of [`Action::Read`]: the whole file, or why not. Ignored when no read is
    /// outstanding.
    pub fn on_read(&mut self, now: i64, result: core::result::Result<&[u8], StoreErrorKind>) {
        if self.pending != Pending::Read {
            return;
        }
        self.pending = Pending::None;
        match self.st {
            St::ReadKubeconfig => {
                match result {
                    Ok(bytes) => {
                        if let Err(e) = self.load_node_kubeconfig(bytes) {
                            self.unusable(e, Part::Kubeconfig);
                        }
                    }
                    Err(e) => self.unusable(file_error(e), Part::Kubeconfig),
                }
                self.next_client_read();
            }
            St::ReadNodeCa => {
                self.need_node_ca = false;
                match result {
                    Ok(b) => {
                        if let Err(e) = put_bytes(&mut self.node_kc.ca, b) {
                            self.unusable(e, Part::CertificateAuthority);
                        }
                    }
                    Err(e) => self.unusable(file_error(e), Part::CertificateAuthority),
                }
                self.next_client_read();
            }
            St::ReadClientCert => {
                self.need_cert = false;
                let same = self.key_path == self.cert_path;
                match result {
                    Ok(b) => {
                        let key = if same { Some(&mut self.client_key) } else { None };
                        if let Err(e) = split_pair(b, &mut self.client_chain, key) {
                            self.unusable(e, Part::ClientCertificate);
                        }
                    }
                    Err(e) => self.unusable(file_error(e), Part::ClientCertificate),
                }
                self.next_client_read();
            }
            St::ReadClientKey => {
                self.need_key = false;
                match result {
                    Ok(b) => {
                        let mut none = heapless::Vec::<u8, 1>::new();
                        if let Err(e) = split_pair(b, &mut none, Some(&mut self.client_key)) {
                            if e != Error::TooLarge || self.client_key.is_empty() {
                                self.unusable(e, Part::ClientKey);
                            }
                        }
                    }
                    Err(e) => self.unusable(file_error(e), Part::ClientKey),
                }
                self.next_client_read();
            }
            St::ReadBundle => {
                self.bundle_loaded = true;
                let r = match result {
                    Ok(b) => put_bytes(&mut self.bundle, b),
                    Err(e) => Err(file_error(e)),
                };
                match r {
                    Ok(()) => self.st = St::CheckClient,
                    Err(e) => {
                        self.failure = Some(e);
                        self.detail =
                            detail(format_args!("reading the CA bundle {}", self.bundle_path));
                        self.finish_failure(now);
                    }
                }
            }
            St::ReadServing => {
                self.serving = match result {
                    Ok(b) => {
                        if self.mode == Mode::Check {
                            self.keep_serving(b);
                        }
                        self.validate(Some(b), true, now)
                    }
                    Err(e) => Verdict::Unusable(file_error(e), Part::ServingCertificate),
                };
                self.report("serving", self.serving);
                self.st = St::Decide;
            }
            St::ReadBootKc => {
                let r = match result {
                    Ok(b) => self.load_bootstrap_kubeconfig(b),
                    Err(e) => Err(file_error(e)),
                };
                match r {
                    Ok(()) => self.next_bootstrap_read(),
                    Err(e) => {
                        let d = detail(format_args!(
                            "the bootstrap kubeconfig {}",
                            self.bootstrap_path
                        ));
                        self.attempt_failed(now, e, &d);
                    }
                }
            }
            St::ReadBootCa => {
                self.boot.ca_file_read = true;
                let r = match result {
                    Ok(b) => put_bytes(&mut self.boot.ca, b),
                    Err(e) => Err(file_error(e)),
                };
                match r {
                    Ok(()) => self.next_bootstrap_read(),
                    Err(e) => {
                        let d = detail(format_args!("certificate-authority {}", self.boot.ca_file));
                        self.attempt_failed(now, e, &d);
                    }
                }
            }
            St::ReadTokenFile => {
                let r = match result {
                    Ok(b) => core::str::from_utf8(b)
                        .map_err(|_| Error::InvalidToken)
                        .and_then(|s| BootstrapToken::parse(s.trim())),
                    Err(e) => Err(file_error(e)),
                };
                match r {
                    Ok(t) => {
                        self.token = Some(t);
                        self.st = St::PrepareBootstrap;
                    }
                    Err(e) => {
                        let d = detail(format_args!("the token file {}", self.token_path));
                        self.attempt_failed(now, e, &d);
                    }
                }
            }
            St::ReadKeyCache => {
                let reason = match result.map(NodeKey::from_pem) {
                    Ok(Ok(k)) => {
                        self.key = Some(k);
                        self.key_generated = false;
                        let line = self
                            .ev("key")
                            .kv("kind", "bootstrap")
                            .kv("source", "cache")
                            .kv("path", &self.key_cache_path)
                            .done();
                        self.event(line);
                        self.st = St::Healthz;
                        return;
                    }
                    Ok(Err(e)) => e.name(),
                    Err(StoreErrorKind::NotFound) => "",
                    Err(e) => e.code().name(),
                };
                if !reason.is_empty() {
                    // Upstream fails until someone deletes a corrupt cache; we replace it.
                    let line = self
                        .ev("key")
                        .kv("kind", "bootstrap")
                        .kv("source", "regenerate")
                        .kv("reason", reason)
                        .kv("path", &self.key_cache_path)
                        .done();
                    self.event(line);
                }
                self.st = St::KeyEntropy;
            }
            _ => {}
        }
    }

    fn next_bootstrap_read(&mut self) {
        self.st = if !self.boot.ca_file.is_empty() && !self.boot.ca_file_read {
            St::ReadBootCa
        } else if self.token.is_none() && !self.token_path.is_empty() {
            St::ReadTokenFile
        } else {
            St::PrepareBootstrap
        };
    }

    /// The outcome of [`Action::File`]. Ignored when no file step is outstanding.
    pub fn on_file_done(&mut self, now: i64, result: core::result::Result<(), StoreErrorKind>) {
        if self.pending != Pending::File {
            return;
        }
        self.pending = Pending::None;
        let failed = |agent: &mut Self, e: StoreErrorKind, what: &str| {
            let d = detail(format_args!("{what}: {}", e.message()));
            agent.attempt_failed(now, file_error(e), &d);
        };
        match (self.st, result) {
            (St::RecoverClient, Ok(())) => {
                self.client_dir_exists = true;
                self.st = St::ReadKubeconfig;
            }
            (St::RecoverClient, Err(StoreErrorKind::NotFound)) => {
                self.client_dir_exists = false;
                self.st = St::ReadKubeconfig;
            }
            (St::RecoverClient, Err(e)) => {
                self.failure = Some(file_error(e));
                self.detail = detail(format_args!(
                    "opening the cert dir {} ({PREFIX_CLIENT})",
                    self.cert_dir
                ));
                self.finish_failure(now);
            }
            (St::RecoverServer, Ok(()) | Err(StoreErrorKind::NotFound)) => self.read_serving(),
            (St::RecoverServer, Err(e)) => {
                self.serving = Verdict::Unusable(file_error(e), Part::ServingCertificate);
                self.report("serving", self.serving);
                self.st = St::Decide;
            }
            (St::MakeDir, Ok(())) => {
                self.dir_created = true;
                self.client_dir_exists = true;
                self.st = St::WriteKeyCache;
            }
            (St::MakeDir, Err(e)) => failed(self, e, "creating the cert dir"),
            (St::WriteKeyCache, Ok(())) => {
                let line = self
                    .ev("key")
                    .kv("kind", "bootstrap")
                    .kv("source", "generated")
                    .kv("path", &self.key_cache_path)
                    .done();
                self.event(line);
                self.out.as_mut_slice().zeroize();
                self.out.clear();
                self.st = St::Healthz;
            }
            (St::WriteKeyCache, Err(e)) => failed(self, e, "writing the key cache"),
            (St::WriteBootKc, Ok(())) => {
                self.out.as_mut_slice().zeroize();
                self.out.clear();
                self.st = St::ReadBootKc;
            }
            (St::WriteBootKc, Err(e)) => failed(self, e, "writing the bootstrap kubeconfig"),
            (St::StorePair, Ok(())) => self.st = St::StoreSwap,
            (St::StorePair, Err(e)) => failed(self, e, "writing the new pair"),
            (St::StoreSwap, Ok(())) => {
                let line = self
                    .ev("stored")
                    .kv("kind", self.kind.as_str())
                    .kv("file", &self.step_paths[0])
                    .kv("current", &self.step_paths[1])
                    .done();
                self.event(line);
                self.out.as_mut_slice().zeroize();
                self.out.clear();
                let client = self.kind != Kind::Serving;
                if client && (self.kind == Kind::Bootstrap || !self.kc_points_at_current) {
                    match self.write_node_kubeconfig() {
                        Ok(()) => self.st = St::StoreKubeconfig,
                        Err(e) => self.attempt_failed(now, e, "writing the node kubeconfig"),
                    }
                } else {
                    self.after_store(now);
                }
            }
            (St::StoreSwap, Err(e)) => failed(self, e, "swapping -current.pem"),
            (St::StoreKubeconfig, Ok(())) => {
                let line = self.ev("kubeconfig").kv("path", &self.kubeconfig_path).done();
                self.event(line);
                self.out.clear();
                self.after_store(now);
            }
            (St::StoreKubeconfig, Err(e)) => failed(self, e, "writing the node kubeconfig"),
            (St::StoreRemoveCache, r) => {
                if let Err(e) = r {
                    if e != StoreErrorKind::NotFound {
                        let line = self
                            .ev("warning")
                            .kv("what", "could not remove the key cache")
                            .kv("reason", e.code().name())
                            .kv("path", &self.key_cache_path)
                            .done();
                        self.event(line);
                    }
                }
                self.attempt_succeeded(now);
            }
            (St::SweepCache, r) => {
                if r.is_ok() {
                    // Removed or absent: nothing to report either way (a NotFound is success).
                }
                self.st = St::Decide;
            }
            (St::CleanupCache, _) => {
                let line = self.ev("cleanup").kv("removed", &self.key_cache_path).done();
                self.event(line);
                if self.dir_created {
                    self.st = St::CleanupDir;
                } else {
                    self.finish_failure(now);
                }
            }
            (St::CleanupDir, _) => {
                self.dir_created = false;
                self.finish_failure(now);
            }
            _ => {}
        }
    }

    fn after_store(&mut self, now: i64) {
        if self.kind == Kind::Bootstrap {
            self.st = St::StoreRemoveCache;
        } else {
            self.attempt_succeeded(now);
        }
    }

    /// Entropy for a new key ([`Action::Entropy`]). Ignored when none was asked for.
    pub fn on_entropy(&mut self, bytes: &[u8]) {
        if self.pending != Pending::Entropy {
            return;
        }
        self.pending = Pending::None;
        match NodeKey::from_entropy(bytes) {
            Ok(k) => {
                if self.kind == Kind::Bootstrap {
                    let mut pem = [0u8; SEC1_PEM_LEN];
                    let r = k
                        .to_sec1_pem(&mut pem)
                        .and_then(|n| put_bytes(&mut self.out, pem.get(..n).unwrap_or(&[])));
                    pem.zeroize();
                    self.key = Some(k);
                    self.key_generated = true;
                    match r {
                        Ok(()) => {
                            self.st =
                                if self.client_dir_exists { St::WriteKeyCache } else { St::MakeDir }
                        }
                        Err(e) => self.attempt_failed(0, e, "encoding the key"),
                    }
                } else {
                    self.key = Some(k);
                    let line = self
                        .ev("key")
                        .kv("kind", self.kind.as_str())
                        .kv("source", "generated")
                        .done();
                    self.event(line);
                    self.st = St::StartEngine;
                }
            }
            Err(Error::BadEntropy) if self.key_tries + 1 < KEY_ATTEMPTS => {
                self.key_tries += 1;
            }
            Err(e) => self.attempt_failed(0, e, "generating a key"),
        }
    }

    fn request_name(&self) -> &'static str {
        match self.pending {
            Pending::Healthz => "healthz",
            Pending::Discovery => "cluster-info",
            _ => self.engine.outstanding_request().map_or("request", |r| r.kind.as_str()),
        }
    }

    fn healthz_failed(&mut self, now: i64, status: Option<u16>) {
        if now.saturating_add(HEALTHZ_INTERVAL_SECS) < self.healthz_until {
            let mut b = self.ev("healthz").kv("state", "not-ready");
            if let Some(s) = status {
                b = b.num("status", i64::from(s));
            }
            let line = b.done();
            self.event(line);
            self.sleep_until = Some(now.saturating_add(HEALTHZ_INTERVAL_SECS));
        } else {
            // The kubelet goes on after a minute anyway.
            let line = self.ev("healthz").kv("state", "gave-up").done();
            self.event(line);
            self.st = St::StartEngine;
        }
    }

    /// The whole response to [`Action::Http`] (for a watch that could not be streamed, the whole
    /// stream). Ignored when no request is outstanding.
    pub fn on_http_response(&mut self, now: i64, status: u16, body: &[u8]) {
        let pending = self.pending;
        match pending {
            Pending::Healthz => {
                self.pending = Pending::None;
                if status == 200 {
                    self.st = St::StartEngine;
                } else {
                    self.healthz_failed(now, Some(status));
                }
            }
            Pending::Discovery => {
                self.pending = Pending::None;
                if status != 200 {
                    let line = self
                        .ev("http")
                        .kv("request", "cluster-info")
                        .num("status", i64::from(status))
                        .done();
                    self.event(line);
                }
                self.discovery.on_response(now, status, body);
            }
            Pending::Engine => {
                let kind = self.engine.outstanding_request().map(|r| r.kind);
                if !(200..300).contains(&status) {
                    let line = self
                        .ev("http")
                        .kv("request", self.request_name())
                        .num("status", i64::from(status))
                        .done();
                    self.event(line);
                    self.retrying = true;
                }
                self.pending = Pending::None;
                self.engine.on_response(now, status, body);
                if kind == Some(engine::RequestKind::Create) && self.engine.created() {
                    let line = self
                        .ev("created")
                        .kv("kind", self.kind.as_str())
                        .kv("name", self.engine.csr_name())
                        .done();
                    self.event(line);
                }
            }
            _ => {}
        }
    }

    /// A chunk of a watch response with status 200. Answers whether to keep reading; on
    /// [`StreamControl::Close`] drop the connection and do not call [`Agent::on_stream_end`].
    pub fn on_stream_data(&mut self, now: i64, chunk: &[u8]) -> StreamControl {
        if self.pending != Pending::Engine {
            return StreamControl::Close;
        }
        let c = self.engine.on_stream_data(now, chunk);
        if c == StreamControl::Close {
            self.pending = Pending::None;
        }
        c
    }

    /// The watch stream ended (server timeout, closed connection, or a broken read).
    pub fn on_stream_end(&mut self, now: i64) {
        if self.pending == Pending::Engine {
            self.pending = Pending::None;
            self.engine.on_stream_end(now);
        }
    }

    /// [`Action::Http`] could not be sent or no (complete) response arrived; `why` is printed
    /// (never put a secret in it).
    pub fn on_transport_error(&mut self, now: i64, why: &str) {
        let pending = self.pending;
        if !matches!(pending, Pending::Healthz | Pending::Discovery | Pending::Engine) {
            return;
        }
        let line =
            self.ev("transport-error").kv("request", self.request_name()).kv("detail", why).done();
        self.event(line);
        self.retrying = true;
        self.pending = Pending::None;
        match pending {
            Pending::Healthz => self.healthz_failed(now, None),
            Pending::Discovery => self.discovery.on_transport_error(now),
            _ => self.engine.on_transport_error(now),
        }
    }
}
