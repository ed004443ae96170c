//! Loading and judging the node's files: the node kubeconfig and what it names, the bootstrap
//! kubeconfig, the verdict on a certificate (the kubelet's `isClientConfigStillValid` plus the
//! template and chain checks), the serving pair.

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
    pub(super) fn unusable(&mut self, e: Error, what: Part) {
        if self.client == Verdict::Unknown {
            self.client = Verdict::Unusable(e, what);
        }
    }

    /// The next file to read for the client credentials, or the check.
    pub(super) fn next_client_read(&mut self) {
        let usable = self.client == Verdict::Unknown;
        self.st = if usable && self.need_node_ca {
            St::ReadNodeCa
        } else if usable && self.need_cert {
            St::ReadClientCert
        } else if usable && self.need_key {
            St::ReadClientKey
        } else if usable && self.dk.client_point.is_none() && self.client_key_in_device() {
            St::KeyPublic
        } else if !self.bundle_path.is_empty() && !self.bundle_loaded {
            St::ReadBundle
        } else {
            St::CheckClient
        };
    }

    #[inline(never)] // its locals stay out of poll's and the on_* frames (firmware stacks)
    pub(super) fn load_node_kubeconfig(&mut self, bytes: &[u8]) -> Result<()> {
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
                let mut rel = PathBuf::<PATH>::new();
                scalar_into(f, &mut rel)?;
                path::resolve_into(&self.node_kc_dir, &rel, &mut self.node_kc.ca_file)?;
                self.need_node_ca = true;
                self.kc_names_ca_file = self.node_kc.ca_file == self.ca_file_path;
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
                let mut rel = PathBuf::<PATH>::new();
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
                let mut rel = PathBuf::<PATH>::new();
                scalar_into(f, &mut rel)?;
                path::resolve_into(&self.node_kc_dir, &rel, &mut self.key_path)?;
                self.need_key = self.key_path != self.cert_path || !self.need_cert;
            }
            Source::None => return Err(Error::Store(StoreErrorKind::NoCertKeyFiles)),
        }
        let mut current = PathBuf::<PATH>::new();
        path::child_into(&self.cert_dir, &[PREFIX_CLIENT, "-current.pem"], &mut current)?;
        self.kc_points_at_current = self.cert_path == current && self.key_path == current;
        Ok(())
    }

    #[inline(never)] // its locals stay out of poll's and the on_* frames (firmware stacks)
    pub(super) fn load_bootstrap_kubeconfig(&mut self, bytes: &[u8]) -> Result<()> {
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
                let mut rel = PathBuf::<PATH>::new();
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
                let mut rel = PathBuf::<PATH>::new();
                scalar_into(f, &mut rel)?;
                path::resolve_into(&self.boot_dir, &rel, &mut self.token_path)?;
            }
            (None, None) => return Err(Error::InvalidToken),
        }
        Ok(())
    }

    /// Validate a pair of the node (`chain` PEM, `key` PEM) for `profile`.
    #[inline(never)] // its locals stay out of poll's and the on_* frames (firmware stacks)
    pub(super) fn validate(
        &mut self,
        chain_and_key: Option<&[u8]>,
        serving: bool,
        now: i64,
    ) -> Verdict {
        let (chain, key): (&[u8], &[u8]) = match chain_and_key {
            Some(both) => (both, both),
            None => (&self.client_chain, &self.client_key),
        };
        let what = if serving { Part::ServingCertificate } else { Part::ClientCertificate };
        if !pem::blocks(chain).any(|b| b.is_ok_and(|b| b.label == "CERTIFICATE")) {
            return Verdict::Unusable(Error::Store(StoreErrorKind::NoCertificates), what);
        }
        let spki = match (chain_and_key, self.dk.client_point) {
            // The device's key: its public point is the device's answer.
            (None, Some(p)) if self.client_key_in_device() => crate::key::spki_from_point(&p),
            _ => match NodeKey::from_pem(key) {
                Ok(k) => k.public_key_spki(),
                Err(e) => {
                    return Verdict::Unusable(e, if serving { what } else { Part::ClientKey });
                }
            },
        };
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
        let mut refs = heapless::Vec::<&str, MAX_SANS>::new();
        crate::csr::borrow_names(&self.serving_dns, &mut refs);
        let profile = if serving {
            Profile::Serving { dns: &refs, ips: &self.serving_ips }
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

    #[inline(never)] // its locals stay out of poll's and the on_* frames (firmware stacks)
    pub(super) fn report(&mut self, kind: &str, v: Verdict) {
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

    #[inline(never)] // its locals stay out of poll's and the on_* frames (firmware stacks)
    pub(super) fn check_client(&mut self, now: i64) {
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
    pub(super) fn read_serving(&mut self) {
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
    pub(super) fn keep_serving(&mut self, pair: &[u8]) {
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
}
