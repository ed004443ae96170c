//! The CA refresh ([module docs](super#the-ca-refresh)): re-read the cluster's CA for the
//! apiserver from `cluster-info` and the ClusterTrustBundles, have the apiserver prove a new
//! bundle, write the CA file.

use super::flow::*;
use super::*;
use crate::json;

/// `cluster-info` was read.
pub(super) const SOURCE_CLUSTER_INFO: u8 = 1;
/// The ClusterTrustBundle API answered.
pub(super) const SOURCE_TRUST_BUNDLES: u8 = 2;

/// The signer whose ClusterTrustBundles hold the apiserver's serving CAs (published by
/// kube-controller-manager from its `--root-ca-file`: `cmd/kube-controller-manager/app/
/// certificates.go`, the kube-apiserver-serving ClusterTrustBundle publisher).
pub const APISERVER_SERVING_SIGNER: &str = "kubernetes.io/kube-apiserver-serving";

/// The ClusterTrustBundles of [`APISERVER_SERVING_SIGNER`] (`certificates.k8s.io/v1`, served by
/// default from v1.37; `spec.signerName` is a field selector of the kind).
pub const TRUST_BUNDLES_PATH: &str = "/apis/certificates.k8s.io/v1/clustertrustbundles?\
     fieldSelector=spec.signerName%3Dkubernetes.io%2Fkube-apiserver-serving";

/// Bytes of scratch for one certificate's DER while bundles are merged and compared.
const DER_SCRATCH: usize = 4096;

impl<
    const N: usize,
    const PEM: usize,
    const OUT: usize,
    const PATH: usize,
    const SANS: usize,
    const DISC: usize,
> Agent<N, PEM, OUT, PATH, SANS, DISC>
{
    /// Whether [`Mode::Run`] refreshes the CA at all.
    pub(super) fn ca_refresh_on(&self) -> bool {
        matches!(self.mode, Mode::Run { .. }) && self.ca_refresh_secs > 0
    }

    /// Whether a CA refresh is due now: the node kubeconfig is the agent's (it names
    /// `-current.pem`), trusts a CA (not `insecure-skip-tls-verify`) and the time has come.
    pub(super) fn ca_refresh_due(&mut self, now: i64) -> bool {
        if !self.ca_refresh_on() {
            return false;
        }
        let Some(at) = self.ca_next else {
            // The first one an interval after start.
            self.schedule_ca_refresh(now);
            return false;
        };
        now >= at
            && self.kc_points_at_current
            && !self.node_kc.insecure
            && !self.node_kc.ca.is_empty()
            && !self.node_kc.server.is_empty()
    }

    pub(super) fn begin_ca_refresh(&mut self) {
        self.ca_sources = 0;
        self.out.clear();
        // New connection settings: new ids (info: anonymous; bundles: the node's certificate;
        // the probe: the candidate bundle).
        self.conn_id = self.conn_id.wrapping_add(4);
        self.st = St::CaInfo;
    }

    /// The next refresh in [`Config::ca_refresh_secs`], ±10 %.
    fn schedule_ca_refresh(&mut self, now: i64) {
        let i = self.ca_refresh_secs;
        let spread = i / 5;
        let jitter = if spread > 0 {
            i64::from(self.jitter.next_u32()) % (spread + 1) - spread / 2
        } else {
            0
        };
        self.ca_next =
            Some(now.saturating_add(i).saturating_add(jitter).max(now.saturating_add(1)));
    }

    /// The refresh is over, whatever its outcome: the next one in [`Config::ca_refresh_secs`].
    fn ca_done(&mut self, now: i64) {
        self.out.clear();
        self.schedule_ca_refresh(now);
        self.conn_id = self.conn_id.wrapping_add(4);
        self.st = St::Decide;
    }

    /// `step=ca state=<state>` with the sources read.
    fn ca_line(&self, state: &str) -> LineBuilder {
        let sources = match self.ca_sources {
            0 => "none",
            SOURCE_CLUSTER_INFO => "cluster-info",
            SOURCE_TRUST_BUNDLES => "trust-bundles",
            _ => "cluster-info,trust-bundles",
        };
        self.ev("ca").kv("state", state).kv("sources", sources)
    }

    fn ca_refused(&mut self, now: i64, e: Error, why: &str) {
        let line = self
            .ca_line("refused")
            .kv("reason", e.name())
            .kv("path", &self.ca_file_path)
            .kv("detail", &detail(format_args!("{why}")))
            .done();
        self.event(line);
        self.ca_done(now);
    }

    /// The source the current request reads.
    fn ca_source(&self) -> u8 {
        if self.st == St::CaInfo { SOURCE_CLUSTER_INFO } else { SOURCE_TRUST_BUNDLES }
    }

    pub(super) fn ca_request_name(&self) -> &'static str {
        match self.st {
            St::CaInfo => "cluster-info",
            St::CaBundles => "trust-bundles",
            _ => "ca-probe",
        }
    }

    /// The request of the current refresh state.
    pub(super) fn ca_request(&self, now: i64) -> HttpRequest<'_> {
        let c = &self.node_kc;
        let server_name =
            if c.server_name.is_empty() { None } else { Some(c.server_name.as_str()) };
        let (kind, path, ca, id, client): (_, _, &[u8], _, _) = match self.st {
            St::CaInfo => {
                (RequestKind::ClusterInfo, discovery::CLUSTER_INFO_PATH, &c.ca, self.conn_id, None)
            }
            St::CaBundles => (
                RequestKind::TrustBundles,
                TRUST_BUNDLES_PATH,
                &c.ca,
                self.conn_id.wrapping_add(1),
                Some(ClientCertificate {
                    chain_pem: &self.client_chain,
                    key_pem: &self.client_key,
                }),
            ),
            _ => (RequestKind::CaProbe, "/healthz", &self.out, self.conn_id.wrapping_add(2), None),
        };
        HttpRequest {
            connection: Connection {
                id,
                server: &c.server,
                ca_pem: Some(ca),
                insecure: false,
                server_name,
                client_certificate: client,
            },
            kind,
            method: Method::Get,
            path,
            authorization: None,
            content_type: None,
            accept: if kind == RequestKind::CaProbe { "*/*" } else { "application/json" },
            body: &[],
            user_agent: &self.user_agent,
            give_up_at: now.saturating_add(10),
        }
    }

    /// The answer to a refresh request.
    #[inline(never)] // its locals stay out of on_http_response's frame (firmware stacks)
    pub(super) fn on_ca_response(&mut self, now: i64, status: u16, body: &[u8]) {
        match (self.st, status) {
            (St::CaProbe, _) => {
                // A complete answer over TLS that trusted only the new bundle: proven.
                self.ca_check_client(now);
            }
            (St::CaInfo | St::CaBundles, 200) => {
                let info = self.st == St::CaInfo;
                let r =
                    if info { self.add_cluster_info(body) } else { self.add_trust_bundles(body) };
                match r {
                    Ok(()) => {
                        let source = if info { SOURCE_CLUSTER_INFO } else { SOURCE_TRUST_BUNDLES };
                        self.ca_sources |= source;
                        self.ca_seen |= source;
                        self.st = if info { St::CaBundles } else { St::CaCompare };
                    }
                    Err(e) => {
                        let what = if info { "cluster-info" } else { "the ClusterTrustBundles" };
                        self.ca_refused(now, e, &detail(format_args!("{what}: {e}")));
                    }
                }
            }
            // Not published here (no cluster-info, the API not served) or not readable, and never
            // was: the other source may still be. (A source that answered before and does not
            // now is skipped below: a bundle made from the other source alone could drop a CA
            // the missing one still publishes.)
            (St::CaInfo | St::CaBundles, 401 | 403 | 404)
                if self.ca_seen & self.ca_source() == 0 =>
            {
                let line = self
                    .ev("ca")
                    .kv("state", "source-unavailable")
                    .kv("source", self.ca_request_name())
                    .num("status", i64::from(status))
                    .done();
                // A 404 of the ClusterTrustBundle API is the normal case before v1.37: quiet.
                if !(self.st == St::CaBundles && status == 404) {
                    self.event(line);
                }
                self.st = if self.st == St::CaInfo { St::CaBundles } else { St::CaCompare };
            }
            (St::CaInfo | St::CaBundles, _) => {
                let line = self
                    .ca_line("skipped")
                    .kv("request", self.ca_request_name())
                    .num("status", i64::from(status))
                    .done();
                self.event(line);
                self.ca_done(now);
            }
            _ => {}
        }
    }

    /// A refresh request failed in transport. For the probe that is the refusal: the handshake
    /// that trusted only the new bundle did not complete.
    pub(super) fn on_ca_transport_error(&mut self, now: i64, why: &str) {
        // (not the engine's retry: nothing to announce at its next sleep)
        self.retrying = false;
        if self.st == St::CaProbe {
            let d = detail(format_args!(
                "a TLS connection to {} trusting only the new bundle failed: {why}",
                self.node_kc.server
            ));
            self.ca_refused(now, Error::CaBundleUnproven, &d);
        } else {
            let line = self
                .ca_line("skipped")
                .kv("request", self.ca_request_name())
                .kv("detail", why)
                .done();
            self.event(line);
            self.ca_done(now);
        }
    }

    /// Both sources are read: compare the union with the CA file, probe a change.
    pub(super) fn ca_compare(&mut self, now: i64) {
        if self.out.is_empty() {
            let line = self.ca_line("unchanged").kv("detail", "no source published a CA").done();
            self.event(line);
            return self.ca_done(now);
        }
        let scratch = self.engine.scratch();
        match same_cas(&self.out, &self.node_kc.ca, scratch) {
            Ok(true) => {
                let n = pem::blocks(&self.out).count();
                let line =
                    self.ca_line("unchanged").num("cas", i64::try_from(n).unwrap_or(0)).done();
                self.event(line);
                self.ca_done(now);
            }
            Ok(false) => self.st = St::CaProbe,
            Err(e) => self.ca_refused(now, e, "comparing the bundles"),
        }
    }

    /// The apiserver proved the new bundle. Where the CA file also checks the client certificate
    /// (no CA bundle configured), the client certificate must chain to it too before it
    /// replaces the file: rotate it first (once per bundle), else refuse.
    fn ca_check_client(&mut self, now: i64) {
        if !self.bundle.is_empty() {
            self.st = St::CaWrite;
            return;
        }
        let node = self.node.clone();
        let (chain, key) = (&self.client_chain, &self.client_key);
        let spki = match NodeKey::from_pem(key) {
            Ok(k) => k.public_key_spki(),
            Err(e) => return self.ca_refused(now, e, "the client key"),
        };
        let expected = Expected { node_name: &node, public_key: &spki, profile: Profile::Client };
        let verifier = self.verifier();
        let scratch = self.engine.scratch();
        let verdict =
            verify::verify_issued_with(verifier, chain, &self.out, &expected, now, scratch);
        let Err(e) = verdict else {
            self.st = St::CaWrite;
            return;
        };
        let candidate = cert_jitter(0, &self.out);
        if self.ca_rotated_for == u64::from(candidate) {
            let d = "the client certificate, rotated for this bundle, still does not chain to it";
            return self.ca_refused(now, e, d);
        }
        self.ca_rotated_for = u64::from(candidate);
        let line = self
            .ca_line("deferred")
            .kv("reason", e.name())
            .kv(
                "detail",
                "the client certificate does not chain to the new bundle: rotating it first",
            )
            .done();
        self.event(line);
        self.rotate_now.client = true;
        self.out.clear();
        // Right after the rotation, again.
        self.ca_next = Some(now);
        self.conn_id = self.conn_id.wrapping_add(4);
        self.st = St::Decide;
    }

    /// The outcome of the refresh's file steps.
    pub(super) fn on_ca_file_done(
        &mut self,
        now: i64,
        r: core::result::Result<(), StoreErrorKind>,
    ) {
        match (self.st, r) {
            (St::CaWrite, Ok(())) => {
                let scratch = self.engine.scratch();
                let (added, removed) = diff_counts(&self.out, &self.node_kc.ca, scratch);
                let n = pem::blocks(&self.out).count();
                let line = self
                    .ca_line("updated")
                    .kv("path", &self.ca_file_path)
                    .num("cas", i64::try_from(n).unwrap_or(0))
                    .num("added", i64::try_from(added).unwrap_or(0))
                    .num("removed", i64::try_from(removed).unwrap_or(0))
                    .done();
                self.event(line);
                // The connections from now on trust the new bundle.
                let _ = put_bytes(&mut self.node_kc.ca, &self.out);
                if self.kc_names_ca_file {
                    return self.ca_done(now);
                }
                // The kubeconfig had inline data or another file: name ours from now on.
                self.kind = Kind::Rotate;
                match self.write_node_kubeconfig() {
                    Ok(()) => self.st = St::CaKubeconfig,
                    Err(e) => self.ca_refused(now, e, "writing the node kubeconfig"),
                }
            }
            (St::CaKubeconfig, Ok(())) => {
                self.kc_names_ca_file = true;
                let line = self.ev("kubeconfig").kv("path", &self.kubeconfig_path).done();
                self.event(line);
                self.ca_done(now);
            }
            (_, Err(e)) => {
                let what = if self.st == St::CaWrite { "writing" } else { "naming" };
                self.ca_refused(
                    now,
                    file_error(e),
                    &detail(format_args!("{what} the CA file: {}", e.message())),
                )
            }
            _ => {}
        }
    }

    /// After a bootstrap (or the rotation of a kubeconfig that was not the agent's): write the
    /// CA the node trusts the apiserver with to the CA file, then the kubeconfig naming it.
    pub(super) fn store_ca(&mut self, now: i64) {
        let ca = if self.kind == Kind::Bootstrap { &self.boot.ca } else { &self.node_kc.ca };
        if ca.is_empty() {
            // insecure-skip-tls-verify: no CA to keep.
            return match self.write_node_kubeconfig() {
                Ok(()) => self.st = St::StoreKubeconfig,
                Err(e) => self.attempt_failed(now, e, "writing the node kubeconfig"),
            };
        }
        self.out.clear();
        match self.out.extend_from_slice(ca) {
            Ok(()) => self.st = St::StoreCa,
            Err(_) => self.attempt_failed(now, Error::TooLarge, "the CA file"),
        }
    }

    /// Add the CAs of the `cluster-info` ConfigMap's kubeconfig to the candidate bundle.
    fn add_cluster_info(&mut self, body: &[u8]) -> Result<()> {
        let before = self.out.len();
        let r = cluster_info_cas(&mut self.out, body, self.engine.scratch());
        self.bundle_fits(before, r)
    }

    /// Add the CAs of the ClusterTrustBundles in a list answer to the candidate bundle.
    fn add_trust_bundles(&mut self, body: &[u8]) -> Result<()> {
        let before = self.out.len();
        let r = trust_bundle_cas(&mut self.out, body, self.engine.scratch());
        self.bundle_fits(before, r)
    }

    /// A candidate bundle over the agent's `PEM` capacity (it could not be read back as the CA
    /// file) is [`Error::TooLarge`], and `out` is left as it was.
    fn bundle_fits(&mut self, before: usize, r: Result<()>) -> Result<()> {
        if r.is_ok() && self.out.len() > PEM {
            self.out.truncate(before);
            return Err(Error::TooLarge);
        }
        r
    }
}

/// Add to `out` the CAs of a `cluster-info` ConfigMap (the `certificate-authority-data` of its
/// kubeconfig's cluster, chosen as kubeadm does).
fn cluster_info_cas<const M: usize>(
    out: &mut heapless::Vec<u8, M>,
    body: &[u8],
    scratch: &mut [u8],
) -> Result<()> {
    let data = discovery::configmap_data(body)?.ok_or(Error::MalformedResponse)?;
    let kc =
        discovery::data_str(&data, discovery::KUBECONFIG_KEY)?.ok_or(Error::MalformedResponse)?;
    let (yaml_buf, rest) = two_texts_and_ders(scratch)?;
    let yaml = kc.decode_into(yaml_buf).map_err(|_| Error::TooLarge)?;
    let parsed = Kubeconfig::parse(yaml.as_bytes()).map_err(|_| Error::MalformedResponse)?;
    let cluster = discovery::cluster_info_cluster(&parsed)?;
    let Some(ca) = cluster.certificate_authority_data.filter(|d| !d.is_empty()) else {
        return Ok(());
    };
    let (pem_buf, ders) = text_and_ders(rest)?;
    let pem = ca.decode_base64_into(pem_buf).map_err(|_| Error::TooLarge)?;
    add_cas(out, pem, ders)
}

/// Add to `out` the CAs of every ClusterTrustBundle of [`APISERVER_SERVING_SIGNER`] in a list
/// answer (`ClusterTrustBundleList`).
fn trust_bundle_cas<const M: usize>(
    out: &mut heapless::Vec<u8, M>,
    body: &[u8],
    scratch: &mut [u8],
) -> Result<()> {
    let bad = |_| Error::MalformedResponse;
    let doc = json::parse(body).map_err(bad)?;
    let items = doc.as_object().ok_or(Error::MalformedResponse)?.get("items").map_err(bad)?;
    let items = match items {
        Some(json::Value::Array(a)) => a,
        None | Some(json::Value::Null) => return Ok(()),
        Some(_) => return Err(Error::MalformedResponse),
    };
    let (pem_buf, ders) = text_and_ders(scratch)?;
    for item in items.items() {
        let item = item.map_err(bad)?;
        let spec = item.as_object().ok_or(Error::MalformedResponse)?.get("spec").map_err(bad)?;
        let spec = spec.and_then(|s| s.as_object()).ok_or(Error::MalformedResponse)?;
        let signer = spec.get("signerName").map_err(bad)?.and_then(|v| v.as_str());
        // (a server that ignored the field selector: keep to the signer)
        if !signer.is_some_and(|s| s.eq_str(APISERVER_SERVING_SIGNER)) {
            continue;
        }
        let bundle = spec.get("trustBundle").map_err(bad)?.and_then(|v| v.as_str());
        let bundle = bundle.ok_or(Error::MalformedResponse)?;
        let pem = bundle.decode_into(pem_buf).map_err(|_| Error::TooLarge)?;
        add_cas(out, pem.as_bytes(), ders)?;
    }
    Ok(())
}

/// Scratch for text and, after it, room for two certificates' DER (compared while merging).
fn text_and_ders(scratch: &mut [u8]) -> Result<(&mut [u8], &mut [u8])> {
    let at = scratch.len().checked_sub(2 * DER_SCRATCH).filter(|&t| t >= DER_SCRATCH);
    Ok(scratch.split_at_mut(at.ok_or(Error::TooLarge)?))
}

/// Scratch for text decoded in two stages (the kubeconfig, then the PEM inside it): half of what
/// the DER room leaves for the first, the rest for [`text_and_ders`].
fn two_texts_and_ders(scratch: &mut [u8]) -> Result<(&mut [u8], &mut [u8])> {
    let first = scratch.len().saturating_sub(2 * DER_SCRATCH) / 2;
    if first < DER_SCRATCH {
        return Err(Error::TooLarge);
    }
    Ok(scratch.split_at_mut(first))
}

/// The `CERTIFICATE` blocks of `pem` as DER, one at a time, decoded into `buf`.
fn each_der(
    pem: &[u8],
    buf: &mut [u8],
    mut f: impl FnMut(&[u8], &[u8]) -> Result<bool>,
) -> Result<()> {
    for block in pem::blocks(pem) {
        let block = block.map_err(|_| Error::Malformed)?;
        if block.label != "CERTIFICATE" {
            continue;
        }
        let der = block.decode(buf).map_err(|e| match e {
            Error::BufferTooSmall { .. } => Error::TooLarge,
            _ => Error::Malformed,
        })?;
        if !f(der, block.text)? {
            break;
        }
    }
    Ok(())
}

/// Whether the certificate `der` is one of `pem`'s.
fn contains(pem: &[u8], der: &[u8], buf: &mut [u8]) -> Result<bool> {
    let mut found = false;
    each_der(pem, buf, |other, _| {
        found = other == der;
        Ok(!found)
    })?;
    Ok(found)
}

/// Append each CA certificate of `pem` that `out` does not hold yet. A certificate that does not
/// parse or is not a CA (basicConstraints) is [`Error::Malformed`]; `out` overflowing
/// [`MAX_CA_PEM`] is [`Error::TooLarge`]; either way `out` is left as it was.
fn add_cas<const M: usize>(
    out: &mut heapless::Vec<u8, M>,
    pem: &[u8],
    ders: &mut [u8],
) -> Result<()> {
    let before = out.len();
    let (a, b) = ders.split_at_mut(ders.len() / 2);
    let r = each_der(pem, a, |der, text| {
        let d = verify::describe(der).map_err(|_| Error::Malformed)?;
        if !d.is_ca {
            return Err(Error::Malformed);
        }
        if !contains(out, der, b)? {
            out.extend_from_slice(text).map_err(|_| Error::TooLarge)?;
            if !text.ends_with(b"\n") {
                out.push(b'\n').map_err(|_| Error::TooLarge)?;
            }
            if out.len() > MAX_CA_PEM {
                return Err(Error::TooLarge);
            }
        }
        Ok(true)
    });
    if r.is_err() {
        out.truncate(before);
    }
    r
}

/// Whether `x` and `y` hold the same certificates (as sets).
fn same_cas(x: &[u8], y: &[u8], scratch: &mut [u8]) -> Result<bool> {
    let (a, b) = diff(x, y, scratch)?;
    Ok(a == 0 && b == 0)
}

/// How many certificates of `new` are not in `old`, and of `old` not in `new`.
fn diff(new: &[u8], old: &[u8], scratch: &mut [u8]) -> Result<(usize, usize)> {
    if scratch.len() < 2 * DER_SCRATCH {
        return Err(Error::TooLarge);
    }
    let (a, b) = scratch.split_at_mut(scratch.len() / 2);
    let mut added = 0;
    each_der(new, a, |der, _| {
        added += usize::from(!contains(old, der, b)?);
        Ok(true)
    })?;
    let mut removed = 0;
    each_der(old, a, |der, _| {
        removed += usize::from(!contains(new, der, b)?);
        Ok(true)
    })?;
    Ok((added, removed))
}

fn diff_counts(new: &[u8], old: &[u8], scratch: &mut [u8]) -> (usize, usize) {
    // (an old file that does not decode counts as nothing)
    diff(new, old, scratch).unwrap_or((pem::blocks(new).count(), 0))
}

#[cfg(test)]
mod tests {
    use super::*;

    // Two CAs and a leaf of the test data (OpenSSL-made; core/tests/data/README.md).
    const CA1: &[u8] = include_bytes!("../../tests/data/ec-ca.crt");
    const CA2: &[u8] = include_bytes!("../../tests/data/ec-sha384-ca.crt");
    const LEAF: &[u8] = include_bytes!("../../tests/data/ec-leaf.crt");

    fn cat<const M: usize>(parts: &[&[u8]]) -> heapless::Vec<u8, M> {
        let mut v = heapless::Vec::new();
        for p in parts {
            v.extend_from_slice(p).unwrap();
        }
        v
    }

    #[test]
    fn union_dedupes_and_refuses_non_cas() {
        let mut scratch = [0u8; 4 * DER_SCRATCH];
        let mut out = heapless::Vec::<u8, 16384>::new();
        add_cas(&mut out, CA1, &mut scratch).unwrap();
        add_cas(&mut out, CA1, &mut scratch).unwrap();
        assert_eq!(pem::blocks(&out).count(), 1);
        add_cas(&mut out, &cat::<8192>(&[CA2, CA1]), &mut scratch).unwrap();
        assert_eq!(pem::blocks(&out).count(), 2);
        // The same set in another order, with text between the blocks: the same.
        assert!(same_cas(&out, &cat::<8192>(&[CA2, b"\n\n", CA1]), &mut scratch).unwrap());
        assert!(!same_cas(&out, CA1, &mut scratch).unwrap());
        assert_eq!(diff(CA2, CA1, &mut scratch).unwrap(), (1, 1));
        // A leaf among CAs: refused, and `out` unchanged.
        let before = out.clone();
        let leafy = cat::<8192>(&[CA2, LEAF]);
        assert_eq!(add_cas(&mut out, &leafy, &mut scratch), Err(Error::Malformed));
        assert_eq!(out, before);
        // Garbage inside a block.
        let bad = b"-----BEGIN CERTIFICATE-----\nnot base64!\n-----END CERTIFICATE-----\n";
        assert_eq!(add_cas(&mut out, bad, &mut scratch), Err(Error::Malformed));
        assert_eq!(out, before);
        // Past the CA bundle's capacity: too large, and unchanged.
        let mut small = heapless::Vec::<u8, 16>::new();
        assert_eq!(add_cas(&mut small, CA1, &mut scratch), Err(Error::TooLarge));
        assert!(small.is_empty());
    }

    /// The answers of a real apiserver (e2e/record.sh): cluster-info as v1.35.4 served it, the
    /// ClusterTrustBundle list as v1.37.2 did; each holds its cluster's serving CA.
    #[test]
    fn recorded_sources_give_their_serving_ca() {
        let mut scratch = [0u8; 8 * DER_SCRATCH];
        let cases: [(&[u8], &[u8], bool); 2] = [
            (
                include_bytes!("../../tests/data/recorded/cluster-info-get.json"),
                include_bytes!("../../tests/data/recorded/serving-ca.pem"),
                true,
            ),
            (
                include_bytes!("../../tests/data/recorded/trust-bundles-list.json"),
                include_bytes!("../../tests/data/recorded/trust-bundles-serving-ca.pem"),
                false,
            ),
        ];
        for (body, ca, info) in cases {
            let mut out = heapless::Vec::<u8, 16384>::new();
            if info {
                cluster_info_cas(&mut out, body, &mut scratch).unwrap();
            } else {
                trust_bundle_cas(&mut out, body, &mut scratch).unwrap();
            }
            assert!(same_cas(&out, ca, &mut scratch).unwrap());
            // Another signer's bundles, a list without items: nothing added.
            let mut none = heapless::Vec::<u8, 16384>::new();
            let other = b"{\"items\":[{\"spec\":{\"signerName\":\"example.com/x\",\"trustBundle\":\"junk\"}}]}";
            trust_bundle_cas(&mut none, other, &mut scratch).unwrap();
            trust_bundle_cas(&mut none, b"{\"items\":null}", &mut scratch).unwrap();
            assert!(none.is_empty());
            // Truncated answers are malformed, and add nothing.
            let end = body.iter().rposition(|b| *b == b'}').unwrap();
            for cut in [1, body.len() / 2, end] {
                let r = if info {
                    cluster_info_cas(&mut none, &body[..cut], &mut scratch)
                } else {
                    trust_bundle_cas(&mut none, &body[..cut], &mut scratch)
                };
                assert!(r.is_err() && none.is_empty(), "{cut}");
            }
        }
    }

    #[test]
    fn too_small_scratch_is_too_large() {
        let mut small = [0u8; DER_SCRATCH];
        assert_eq!(text_and_ders(&mut small).err(), Some(Error::TooLarge));
        assert_eq!(two_texts_and_ders(&mut small).err(), Some(Error::TooLarge));
        assert_eq!(diff(b"", b"", &mut small[..10]), Err(Error::TooLarge));
        let mut enough = [0u8; 4 * DER_SCRATCH];
        let (y, rest) = two_texts_and_ders(&mut enough).unwrap();
        assert_eq!(y.len(), DER_SCRATCH);
        let (p, d) = text_and_ders(rest).unwrap();
        assert_eq!((p.len(), d.len()), (DER_SCRATCH, 2 * DER_SCRATCH));
    }
}
