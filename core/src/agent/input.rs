//! The agent's answers to what its front-end reports: file reads and writes, entropy, HTTP
//! responses, stream data, transport errors.

use super::flow::*;
use super::*;

impl<
    const N: usize,
    const PEM: usize,
    const OUT: usize,
    const PATH: usize,
    const SANS: usize,
    const DISC: usize,
> Agent<N, PEM, OUT, PATH, SANS, DISC>
{
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
                if self.device_cache(now, result) {
                    return;
                }
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
                self.make_key(now);
            }
            _ => {}
        }
    }

    pub(super) fn next_bootstrap_read(&mut self) {
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
                // A device's new key is the current one from now on: never destroyed as unused.
                if !self.dk.new_ref.is_empty() {
                    self.key_generated = false;
                }
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
                    // The CA file first: the kubeconfig names it.
                    self.store_ca(now);
                } else {
                    self.after_store(now);
                }
            }
            (St::StoreSwap, Err(e)) => failed(self, e, "swapping -current.pem"),
            (St::StoreCa, Ok(())) => {
                self.out.clear();
                match self.write_node_kubeconfig() {
                    Ok(()) => self.st = St::StoreKubeconfig,
                    Err(e) => self.attempt_failed(now, e, "writing the node kubeconfig"),
                }
            }
            (St::StoreCa, Err(e)) => failed(self, e, "writing the CA file"),
            (St::CaWrite | St::CaKubeconfig, r) => self.on_ca_file_done(now, r),
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
                if self.unused_device_key() {
                    // The reference is gone from the cache: now the key.
                    self.st = St::DestroyNew;
                } else if self.dir_created {
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

    #[inline(never)] // its locals stay out of poll's and the on_* frames (firmware stacks)
    pub(super) fn after_store(&mut self, now: i64) {
        if self.replaced_key_in_device() {
            self.st = St::DestroyOld;
        } else if self.kind == Kind::Bootstrap {
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
                    let mut pem = Filled::<SEC1_PEM_LEN>::new();
                    let r = pem
                        .fill(|b| k.to_sec1_pem(b))
                        .and_then(|pem| put_bytes(&mut self.out, pem));
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

    pub(super) fn request_name(&self) -> &'static str {
        match self.pending {
            Pending::Healthz => "healthz",
            Pending::Discovery => "cluster-info",
            Pending::Trust => self.ca_request_name(),
            _ => self.engine.outstanding_request().map_or("request", |r| r.kind.as_str()),
        }
    }

    #[inline(never)] // its locals stay out of poll's and the on_* frames (firmware stacks)
    pub(super) fn healthz_failed(&mut self, now: i64, status: Option<u16>) {
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
            Pending::Trust => {
                self.pending = Pending::None;
                self.on_ca_response(now, status, body);
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
        if !matches!(
            pending,
            Pending::Healthz | Pending::Discovery | Pending::Engine | Pending::Trust
        ) {
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
            Pending::Trust => self.on_ca_transport_error(now, why),
            _ => self.engine.on_transport_error(now),
        }
    }
}
