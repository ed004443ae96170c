//! The CA refresh ([module docs](super#the-ca-refresh)): re-read the cluster's CA for the
//! apiserver from `cluster-info` and the ClusterTrustBundles, have the apiserver prove a new
//! bundle, write the CA file. A sub-machine of its own: its schedule, the sources it has seen,
//! the bundle it last rotated the client certificate for, and where a refresh is.

use super::config::Settings;
use super::event::{Events, LineBuilder};
use super::flow::{Detail, detail};
use super::loader::Loader;
use super::plan::node_kubeconfig;
use super::verdict::cert_jitter;
use super::{ClientCertificate, Connection, FileStep, HttpRequest, Method, RequestKind};
use crate::buf::Bytes;
use crate::csr::Profile;
use crate::discovery;
use crate::engine::Jitter;
use crate::error::{Error, Result, StoreErrorKind};
use crate::json;
use crate::key::NodeKey;
use crate::kubeconfig::Kubeconfig;
use crate::pem;
use crate::verify::{self, Expected};

/// `cluster-info` was read.
const SOURCE_CLUSTER_INFO: u8 = 1;
/// The ClusterTrustBundle API answered.
const SOURCE_TRUST_BUNDLES: u8 = 2;

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

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum St {
    Idle,
    /// GET `kube-public/cluster-info`.
    Info,
    /// List the ClusterTrustBundles.
    Bundles,
    /// Compare the union with the CA file.
    Compare,
    /// A request over TLS that trusts only the new bundle.
    Probe,
    /// Write the CA file.
    Write,
    /// Rewrite the node kubeconfig to name the CA file.
    Kubeconfig,
    /// The refresh is over.
    Done,
    /// The client certificate must be rotated first (it does not chain to the new bundle).
    Deferred,
}

/// What the refresh needs next, or where it got to.
pub(super) enum Next<'a> {
    Http,
    File(FileStep<'a>),
    /// An internal step ([`Trust::step`]).
    Step,
    Done,
    /// Rotate the client certificate first, then refresh again at once.
    Deferred,
}

/// What the refresh works with besides its own state.
pub(super) struct TrustCx<'a, 'm> {
    pub(super) s: &'a Settings<'m>,
    pub(super) ev: &'a mut Events,
    /// The candidate bundle, then what the file steps write.
    pub(super) out: &'a mut Bytes<'m>,
    /// The work buffer, idle during a refresh: scratch to merge and compare bundles.
    pub(super) work: &'a mut [u8],
    /// The node's files: the CA file's bundle is the node kubeconfig's CA.
    pub(super) loader: &'a mut Loader<'m>,
    pub(super) jitter: &'a mut Jitter,
}

/// The CA refresh (see the module docs).
pub(super) struct Trust {
    st: St,
    /// When the next refresh is due (`None`: not scheduled yet).
    next_at: Option<i64>,
    /// Which sources the refresh under way found.
    sources: u8,
    /// The candidate bundle (a hash) a client rotation was forced for, so that it is forced once.
    rotated_for: u64,
    /// The sources that have answered with their CAs before.
    seen: u8,
}

impl Trust {
    pub(super) const fn new() -> Self {
        Trust { st: St::Idle, next_at: None, sources: 0, rotated_for: 0, seen: 0 }
    }

    /// Every field as [`Trust::new`] has it.
    pub(super) fn reset(&mut self) {
        let Trust { st, next_at, sources, rotated_for, seen } = self;
        *st = St::Idle;
        *next_at = None;
        *sources = 0;
        *rotated_for = 0;
        *seen = 0;
    }

    /// Whether the agent refreshes the CA at all ([`super::Mode::Run`] with an interval).
    pub(super) fn on(s: &Settings<'_>) -> bool {
        s.runs() && s.ca_refresh_secs > 0
    }

    /// When the next refresh is due, when it is scheduled.
    pub(super) fn next_at(&self, s: &Settings<'_>) -> Option<i64> {
        self.next_at.filter(|_| Self::on(s))
    }

    /// Refresh at the next decision (a daemon's SIGHUP: reloading re-reads the CA too).
    pub(super) fn now(&mut self) {
        self.next_at = Some(i64::MIN);
    }

    /// Whether a refresh is due now: the node kubeconfig is the agent's (it names
    /// `-current.pem`), trusts a CA (not `insecure-skip-tls-verify`) and the time has come. The
    /// first decision schedules the first refresh an interval after start.
    pub(super) fn due(
        &mut self,
        s: &Settings<'_>,
        loader: &Loader<'_>,
        jitter: &mut Jitter,
        now: i64,
    ) -> bool {
        if !Self::on(s) {
            return false;
        }
        let Some(at) = self.next_at else {
            self.schedule(s, jitter, now);
            return false;
        };
        let kc = &loader.node_kc;
        now >= at
            && loader.kc_points_at_current
            && !kc.insecure
            && !kc.ca.is_empty()
            && !kc.server.is_empty()
    }

    /// The refresh's turn is over (after [`Next::Deferred`]).
    pub(super) fn reset_turn(&mut self) {
        self.st = St::Idle;
    }

    /// Start a refresh.
    pub(super) fn begin(&mut self, out: &mut Bytes<'_>) {
        self.sources = 0;
        out.clear();
        self.st = St::Info;
    }

    /// The next refresh in [`super::Config::ca_refresh_secs`], ±10 %.
    fn schedule(&mut self, s: &Settings<'_>, jitter: &mut Jitter, now: i64) {
        let i = s.ca_refresh_secs;
        let spread = i / 5;
        let jitter =
            if spread > 0 { i64::from(jitter.next_u32()) % (spread + 1) - spread / 2 } else { 0 };
        self.next_at =
            Some(now.saturating_add(i).saturating_add(jitter).max(now.saturating_add(1)));
    }

    /// The refresh is over, whatever its outcome: the next one in [`super::Config::ca_refresh_secs`].
    fn done(&mut self, cx: &mut TrustCx<'_, '_>, now: i64) {
        cx.out.clear();
        self.schedule(cx.s, cx.jitter, now);
        self.st = St::Done;
    }

    /// What it needs now.
    pub(super) fn next<'a>(&'a self, s: &'a Settings<'_>, out: &'a [u8]) -> Next<'a> {
        match self.st {
            St::Info | St::Bundles | St::Probe => Next::Http,
            St::Compare => Next::Step,
            St::Write => Next::File(FileStep::WriteCa { path: &s.ca_file, content: out }),
            St::Kubeconfig => {
                Next::File(FileStep::WriteKubeconfig { path: &s.kubeconfig, content: out })
            }
            St::Deferred => Next::Deferred,
            St::Idle | St::Done => Next::Done,
        }
    }

    /// `step=ca state=<state>` with the sources read.
    fn line(&self, ev: &Events, state: &str) -> LineBuilder {
        let sources = match self.sources {
            0 => "none",
            SOURCE_CLUSTER_INFO => "cluster-info",
            SOURCE_TRUST_BUNDLES => "trust-bundles",
            _ => "cluster-info,trust-bundles",
        };
        ev.ev("ca").kv("state", state).kv("sources", sources)
    }

    fn refused(&mut self, cx: &mut TrustCx<'_, '_>, now: i64, e: Error, why: &str) {
        let line = self
            .line(cx.ev, "refused")
            .kv("reason", e.name())
            .kv("path", &cx.s.ca_file)
            .kv("detail", why)
            .done();
        cx.ev.push(line);
        self.done(cx, now);
    }

    /// The source the current request reads.
    fn source(&self) -> u8 {
        if self.st == St::Info { SOURCE_CLUSTER_INFO } else { SOURCE_TRUST_BUNDLES }
    }

    fn request_kind(&self) -> RequestKind {
        match self.st {
            St::Info => RequestKind::ClusterInfo,
            St::Bundles => RequestKind::TrustBundles,
            _ => RequestKind::CaProbe,
        }
    }

    /// The request's name in lines (`cluster-info`, `trust-bundles`, `ca-probe`).
    pub(super) fn request_name(&self) -> &'static str {
        self.request_kind().as_str()
    }

    /// The request of the current refresh state: `conn_id` is the agent's connection id for
    /// this refresh (one more for each of its three connection settings).
    pub(super) fn request<'a>(
        &self,
        s: &'a Settings<'_>,
        loader: &'a Loader<'_>,
        out: &'a [u8],
        conn_id: u32,
        now: i64,
    ) -> HttpRequest<'a> {
        let c = &loader.node_kc;
        let server_name =
            if c.server_name.is_empty() { None } else { Some(c.server_name.as_str()) };
        let (kind, path, ca, id, client): (_, _, &[u8], _, _) = match self.st {
            St::Info => {
                (RequestKind::ClusterInfo, discovery::CLUSTER_INFO_PATH, &c.ca, conn_id, None)
            }
            St::Bundles => (
                RequestKind::TrustBundles,
                TRUST_BUNDLES_PATH,
                &c.ca,
                conn_id.wrapping_add(1),
                Some(ClientCertificate {
                    chain_pem: &loader.client_chain,
                    key_pem: &loader.client_key,
                }),
            ),
            _ => (RequestKind::CaProbe, "/healthz", out, conn_id.wrapping_add(2), None),
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
            user_agent: &s.user_agent,
            give_up_at: now.saturating_add(10),
            idle_at: None,
        }
    }

    /// The answer to a refresh request.
    #[inline(never)] // its locals stay out of on_http_response's frame (firmware stacks)
    pub(super) fn on_response(
        &mut self,
        cx: &mut TrustCx<'_, '_>,
        now: i64,
        status: u16,
        body: &[u8],
    ) {
        match (self.st, status) {
            (St::Probe, _) => {
                // A complete answer over TLS that trusted only the new bundle: proven.
                self.check_client(cx, now);
            }
            (St::Info | St::Bundles, 200) => {
                let info = self.st == St::Info;
                let before = cx.out.len();
                let r = if info {
                    cluster_info_cas(cx.out, body, cx.work)
                } else {
                    trust_bundle_cas(cx.out, body, cx.work)
                };
                match r.and_then(|()| bundle_fits(cx.out, before, cx.loader.bundle.capacity())) {
                    Ok(()) => {
                        let source = self.source();
                        self.sources |= source;
                        self.seen |= source;
                        self.st = if info { St::Bundles } else { St::Compare };
                    }
                    Err(e) => {
                        let what = if info { "cluster-info" } else { "the ClusterTrustBundles" };
                        self.refused(cx, now, e, &detail(format_args!("{what}: {e}")));
                    }
                }
            }
            // Not published here (no cluster-info, the API not served) or not readable, and never
            // was: the other source may still be. (A source that answered before and does not
            // now is skipped below: a bundle made from the other source alone could drop a CA
            // the missing one still publishes.)
            (St::Info | St::Bundles, 401 | 403 | 404) if self.seen & self.source() == 0 => {
                let line = cx
                    .ev
                    .ev("ca")
                    .kv("state", "source-unavailable")
                    .kv("source", self.request_name())
                    .num("status", i64::from(status))
                    .done();
                // A 404 of the ClusterTrustBundle API is the normal case before v1.37: quiet.
                if !(self.st == St::Bundles && status == 404) {
                    cx.ev.push(line);
                }
                self.st = if self.st == St::Info { St::Bundles } else { St::Compare };
            }
            (St::Info | St::Bundles, _) => {
                let line = self
                    .line(cx.ev, "skipped")
                    .kv("request", self.request_name())
                    .num("status", i64::from(status))
                    .done();
                cx.ev.push(line);
                self.done(cx, now);
            }
            _ => {}
        }
    }

    /// A refresh request failed in transport. For the probe that is the refusal: the handshake
    /// that trusted only the new bundle did not complete.
    pub(super) fn on_transport_error(&mut self, cx: &mut TrustCx<'_, '_>, now: i64, why: &str) {
        if self.st == St::Probe {
            let d = detail(format_args!(
                "a TLS connection to {} trusting only the new bundle failed: {why}",
                cx.loader.node_kc.server
            ));
            self.refused(cx, now, Error::CaBundleUnproven, &d);
        } else {
            let line = self
                .line(cx.ev, "skipped")
                .kv("request", self.request_name())
                .kv("detail", why)
                .done();
            cx.ev.push(line);
            self.done(cx, now);
        }
    }

    /// Both sources are read: compare the union with the CA file, probe a change.
    pub(super) fn step(&mut self, cx: &mut TrustCx<'_, '_>, now: i64) {
        if self.st != St::Compare {
            return;
        }
        if cx.out.is_empty() {
            let line =
                self.line(cx.ev, "unchanged").kv("detail", "no source published a CA").done();
            cx.ev.push(line);
            return self.done(cx, now);
        }
        match same_cas(cx.out, &cx.loader.node_kc.ca, cx.work) {
            Ok(true) => {
                let n = pem::blocks(cx.out).count();
                let line =
                    self.line(cx.ev, "unchanged").num("cas", i64::try_from(n).unwrap_or(0)).done();
                cx.ev.push(line);
                self.done(cx, now);
            }
            Ok(false) => self.st = St::Probe,
            Err(e) => self.refused(cx, now, e, "comparing the bundles"),
        }
    }

    /// The apiserver proved the new bundle. Where the CA file also checks the client certificate
    /// (no CA bundle configured), the client certificate must chain to it too before it
    /// replaces the file: rotate it first (once per bundle), else refuse.
    fn check_client(&mut self, cx: &mut TrustCx<'_, '_>, now: i64) {
        if !cx.loader.bundle.is_empty() {
            self.st = St::Write;
            return;
        }
        let l = &*cx.loader;
        let spki = match NodeKey::from_pem(&l.client_key) {
            Ok(k) => k.public_key_spki(),
            Err(e) => return self.refused(cx, now, e, "the client key"),
        };
        let expected = Expected { node_name: &l.node, public_key: &spki, profile: Profile::Client };
        let verdict = verify::verify_issued_with(
            cx.s.verifier(),
            &l.client_chain,
            cx.out,
            &expected,
            now,
            cx.work,
        );
        let Err(e) = verdict else {
            self.st = St::Write;
            return;
        };
        let candidate = cert_jitter(0, cx.out);
        if self.rotated_for == u64::from(candidate) {
            let d = "the client certificate, rotated for this bundle, still does not chain to it";
            return self.refused(cx, now, e, d);
        }
        self.rotated_for = u64::from(candidate);
        let line = self
            .line(cx.ev, "deferred")
            .kv("reason", e.name())
            .kv(
                "detail",
                "the client certificate does not chain to the new bundle: rotating it first",
            )
            .done();
        cx.ev.push(line);
        cx.out.clear();
        // Right after the rotation, again.
        self.next_at = Some(now);
        self.st = St::Deferred;
    }

    /// The outcome of the refresh's file steps.
    pub(super) fn on_file_done(
        &mut self,
        cx: &mut TrustCx<'_, '_>,
        now: i64,
        r: core::result::Result<(), StoreErrorKind>,
    ) {
        match (self.st, r) {
            (St::Write, Ok(())) => {
                let (added, removed) = diff_counts(cx.out, &cx.loader.node_kc.ca, cx.work);
                let n = pem::blocks(cx.out).count();
                let line = self
                    .line(cx.ev, "updated")
                    .kv("path", &cx.s.ca_file)
                    .num("cas", i64::try_from(n).unwrap_or(0))
                    .num("added", i64::try_from(added).unwrap_or(0))
                    .num("removed", i64::try_from(removed).unwrap_or(0))
                    .done();
                cx.ev.push(line);
                // The connections from now on trust the new bundle.
                let _ = cx.loader.node_kc.ca.set(cx.out);
                if cx.loader.kc_names_ca_file {
                    return self.done(cx, now);
                }
                // The kubeconfig had inline data or another file: name ours from now on.
                match node_kubeconfig(&cx.loader.node_kc, cx.s, cx.out) {
                    Ok(()) => self.st = St::Kubeconfig,
                    Err(e) => self.refused(cx, now, e, "writing the node kubeconfig"),
                }
            }
            (St::Kubeconfig, Ok(())) => {
                cx.loader.kc_names_ca_file = true;
                let line = cx.ev.ev("kubeconfig").kv("path", &cx.s.kubeconfig).done();
                cx.ev.push(line);
                self.done(cx, now);
            }
            (St::Write | St::Kubeconfig, Err(e)) => {
                let what = if self.st == St::Write { "writing" } else { "naming" };
                let d: Detail = detail(format_args!("{what} the CA file: {}", e.message()));
                self.refused(cx, now, Error::Store(e), &d)
            }
            _ => {}
        }
    }
}

/// A candidate bundle over the agent's `pem` capacity (it could not be read back as the CA
/// file) is [`Error::TooLarge`], and `out` is left as it was.
fn bundle_fits(out: &mut Bytes<'_>, before: usize, pem: usize) -> Result<()> {
    if out.len() > pem {
        out.truncate(before);
        return Err(Error::TooLarge);
    }
    Ok(())
}

/// Add to `out` the CAs of a `cluster-info` ConfigMap (the `certificate-authority-data` of its
/// kubeconfig's cluster, chosen as kubeadm does).
fn cluster_info_cas(out: &mut Bytes<'_>, body: &[u8], scratch: &mut [u8]) -> Result<()> {
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
fn trust_bundle_cas(out: &mut Bytes<'_>, body: &[u8], scratch: &mut [u8]) -> Result<()> {
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
/// parse or is not a CA (basicConstraints) is [`Error::Malformed`]; `out` overflowing is
/// [`Error::TooLarge`]; either way `out` is left as it was.
fn add_cas(out: &mut Bytes<'_>, pem: &[u8], ders: &mut [u8]) -> Result<()> {
    let before = out.len();
    let (a, b) = ders.split_at_mut(ders.len() / 2);
    let r = each_der(pem, a, |der, text| {
        let d = verify::describe(der).map_err(|_| Error::Malformed)?;
        if !d.is_ca {
            return Err(Error::Malformed);
        }
        if !contains(out, der, b)? {
            out.extend(text)?;
            if !text.ends_with(b"\n") {
                out.push(b'\n')?;
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
        let mut mem = [0u8; 16384];
        let mut out = Bytes::new(&mut mem);
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
        let before: heapless::Vec<u8, 16384> = heapless::Vec::from_slice(&out).unwrap();
        let leafy = cat::<8192>(&[CA2, LEAF]);
        assert_eq!(add_cas(&mut out, &leafy, &mut scratch), Err(Error::Malformed));
        assert_eq!(&*out, &*before);
        // Garbage inside a block.
        let bad = b"-----BEGIN CERTIFICATE-----\nnot base64!\n-----END CERTIFICATE-----\n";
        assert_eq!(add_cas(&mut out, bad, &mut scratch), Err(Error::Malformed));
        assert_eq!(&*out, &*before);
        // Past the CA bundle's capacity: too large, and unchanged.
        let mut small_mem = [0u8; 16];
        let mut small = Bytes::new(&mut small_mem);
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
            let mut mem = [0u8; 16384];
            let mut out = Bytes::new(&mut mem);
            if info {
                cluster_info_cas(&mut out, body, &mut scratch).unwrap();
            } else {
                trust_bundle_cas(&mut out, body, &mut scratch).unwrap();
            }
            assert!(same_cas(&out, ca, &mut scratch).unwrap());
            // Another signer's bundles, a list without items: nothing added.
            let mut none_mem = [0u8; 16384];
            let mut none = Bytes::new(&mut none_mem);
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
