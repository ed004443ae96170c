//! A simulated Kubernetes apiserver: the parts of the API a bootstrapping node uses, for kubeboot's
//! tests. One model ([`Apiserver`]) answers requests in process (the core's sans-IO tests drive
//! the agent against it under a simulated clock) and over HTTPS on 127.0.0.1 ([`serve::Server`],
//! and the `kubeboot-sim-apiserver` binary the Go and C runtimes' tests start), so every
//! front-end's tests meet the same apiserver.
//!
//! What it implements: `certificates.k8s.io/v1` CertificateSigningRequests (create, 409, get,
//! list and watch by `metadata.name`, the `approval` subresource), a signer issuing certificates
//! with rcgen once approved (backdated five minutes, as kube-controller-manager does), bootstrap
//! token and client certificate authentication, the `cluster-info` ConfigMap, the
//! ClusterTrustBundles of `kubernetes.io/kube-apiserver-serving`, SelfSubjectReviews, `/healthz`,
//! API Priority and Fairness pushback (429 with `Retry-After`). Requests are parsed with
//! `x509-cert` and `serde_json`, never with kubeboot's own parsers. The real apiserver is
//! `e2e/run`'s; this one makes the cases a real cluster makes hard to reach (expiry, denial,
//! pushback, a wrong clock) deterministic.

pub mod serve;

use std::collections::{BTreeMap, VecDeque};

use base64ct::{Base64, Encoding};
use rcgen::{
    BasicConstraints, CertificateParams, DistinguishedName, DnType, ExtendedKeyUsagePurpose, IsCa,
    Issuer, KeyPair, KeyUsagePurpose, PKCS_ECDSA_P256_SHA256, PublicKeyData, SanType,
    SignatureAlgorithm,
};
use serde_json::{Value, json};
use x509_cert::der::{Decode, DecodePem, Encode};

/// The bootstrap token the simulated apiserver accepts unless told otherwise.
pub const DEFAULT_TOKEN: &str = "abcdef.0123456789abcdef";
/// The kubelet client signer.
pub const CLIENT_SIGNER: &str = "kubernetes.io/kube-apiserver-client-kubelet";
/// The kubelet serving signer.
pub const SERVING_SIGNER: &str = "kubernetes.io/kubelet-serving";
/// The CertificateSigningRequest collection.
pub const CSRS: &str = "/apis/certificates.k8s.io/v1/certificatesigningrequests";
/// The `cluster-info` ConfigMap kubeadm publishes.
pub const CLUSTER_INFO: &str = "/api/v1/namespaces/kube-public/configmaps/cluster-info";
/// The ClusterTrustBundle collection.
pub const TRUST_BUNDLES: &str = "/apis/certificates.k8s.io/v1/clustertrustbundles";
/// The SelfSubjectReview collection.
pub const SELF_SUBJECT_REVIEWS: &str = "/apis/authentication.k8s.io/v1/selfsubjectreviews";

/// What a request asks for, read from its method and path alone.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Route {
    /// `GET /healthz` (also `/readyz`, `/livez`).
    Healthz,
    /// `GET` the `cluster-info` ConfigMap.
    ClusterInfo,
    /// `POST` a CSR.
    CsrCreate,
    /// `GET` one CSR by name.
    CsrGet,
    /// `GET` the CSR collection (a list).
    CsrList,
    /// `GET` the CSR collection with `watch=true`.
    CsrWatch,
    /// `PUT` a CSR's `approval` subresource.
    CsrApproval,
    /// `GET` the ClusterTrustBundles.
    TrustBundles,
    /// `POST` a SelfSubjectReview.
    SelfSubjectReview,
    /// Anything else (answered 404).
    Unknown,
}

impl Route {
    /// The route of `method` `path` (the path with its query).
    pub fn of(method: &str, path: &str) -> Route {
        let (p, q) = path.split_once('?').unwrap_or((path, ""));
        let watch = q.split('&').any(|kv| kv == "watch=true" || kv == "watch=1");
        match (method, p) {
            ("GET", "/healthz" | "/readyz" | "/livez") => Route::Healthz,
            ("GET", CLUSTER_INFO) => Route::ClusterInfo,
            ("POST", CSRS) => Route::CsrCreate,
            ("GET", CSRS) if watch => Route::CsrWatch,
            ("GET", CSRS) => Route::CsrList,
            ("GET", TRUST_BUNDLES) => Route::TrustBundles,
            ("POST", SELF_SUBJECT_REVIEWS) => Route::SelfSubjectReview,
            ("PUT", p) if csr_name(p).is_some_and(|(_, sub)| sub == Some("approval")) => {
                Route::CsrApproval
            }
            ("GET", p) if csr_name(p).is_some_and(|(_, sub)| sub.is_none()) => Route::CsrGet,
            _ => Route::Unknown,
        }
    }
}

/// `(name, subresource)` of a path below the CSR collection.
fn csr_name(path: &str) -> Option<(&str, Option<&str>)> {
    let rest = path.strip_prefix(CSRS)?.strip_prefix('/')?;
    match rest.split_once('/') {
        Some((name, sub)) => Some((name, Some(sub))),
        None => Some((rest, None)),
    }
}

/// Who a request authenticated as.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Who {
    /// The bootstrap token (`system:bootstrap:<id>`).
    Bootstrap,
    /// A node's client certificate (`system:node:<CN>`).
    Node,
    /// The administrator's token ([`Apiserver::admin_token`]).
    Admin,
    /// No credentials.
    Anonymous,
}

/// One request as the apiserver sees it.
#[derive(Clone, Copy, Debug)]
pub struct Request<'a> {
    /// `GET`, `POST`, `PUT`.
    pub method: &'a str,
    /// Path and query.
    pub path: &'a str,
    /// The `Authorization` header.
    pub authorization: Option<&'a str>,
    /// The DER of the client certificate the TLS handshake presented (already verified to chain
    /// to [`Apiserver::ca_pem`] by the server; in process, trusted as given).
    pub client_certificate: Option<&'a [u8]>,
    /// In process only: the CA bundle (PEM) the client trusts. A client that does not trust
    /// [`Apiserver::presents`] fails its handshake, so the request never arrives (`None` from
    /// [`Apiserver::handle`]). Over HTTPS the real client decides this itself.
    pub client_trusts: Option<&'a [u8]>,
    /// The request body.
    pub body: &'a [u8],
}

/// One answer.
#[derive(Clone, Debug)]
pub struct Response {
    /// HTTP status.
    pub status: u16,
    /// The body: JSON, or for a watch the events, one JSON object per line.
    pub body: Vec<u8>,
    /// The `Retry-After` header.
    pub retry_after: Option<&'static str>,
    /// The route the request took.
    pub route: Route,
    /// Who it authenticated as.
    pub who: Who,
}

/// One line of [`Apiserver::log`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Entry {
    /// The route.
    pub route: Route,
    /// Who sent it.
    pub who: Who,
    /// Path and query.
    pub path: String,
}

/// A CertificateSigningRequest as stored.
#[derive(Clone, Debug)]
pub struct Csr {
    /// `metadata.name`.
    pub name: String,
    /// `metadata.uid`.
    pub uid: String,
    /// `metadata.resourceVersion`: grows with every change (a watch sends MODIFIED on it).
    pub resource_version: u64,
    /// `spec.request` (base64 of the PEM).
    pub request_b64: String,
    /// `spec.signerName`.
    pub signer: String,
    /// `spec.usages`.
    pub usages: Vec<String>,
    /// `spec.expirationSeconds`, if asked.
    pub expiration_seconds: Option<i64>,
    /// `spec.username`: who created it.
    pub username: String,
    /// `status.conditions` as (type, reason).
    pub conditions: Vec<(String, String)>,
    /// `status.certificate` (base64 of the PEM chain).
    pub certificate: Option<String>,
    /// When an automatic approval falls due (see [`Apiserver::approve_after`]).
    pub approve_at: Option<i64>,
}

impl Csr {
    /// Whether a condition of `kind` (`Approved`, `Denied`, `Failed`) is set.
    pub fn has(&self, kind: &str) -> bool {
        self.conditions.iter().any(|(t, _)| t == kind)
    }
}

/// The simulated apiserver's state. Every field is a knob a test may turn.
pub struct Apiserver {
    /// The cluster CA's key.
    pub ca_key: KeyPair,
    /// The cluster CA's parameters.
    pub ca_params: CertificateParams,
    /// The cluster CA (PEM): signs node certificates, and by default the serving certificate.
    pub ca_pem: String,
    /// The CA the serving certificate chains to (PEM), for in-process trust checks; over HTTPS the
    /// server presents a certificate from [`Apiserver::ca_pem`].
    pub presents: String,
    /// The CAs client certificates are verified against (PEM bundle; kube-apiserver's
    /// `--client-ca-file`): [`Apiserver::ca_pem`] at first, both CAs during a CA rotation.
    pub client_cas: String,
    /// Every CSR by name.
    pub csrs: BTreeMap<String, Csr>,
    /// A counter for names, uids and resource versions.
    pub next: u64,
    /// The lifetime of issued certificates (seconds), unless the CSR asks for less.
    pub lifetime: i64,
    /// Approve client CSRs automatically (kube-controller-manager's csrapproving).
    pub auto_approve_client: bool,
    /// Approve serving CSRs automatically (an approver).
    pub approve_serving: bool,
    /// Seconds between a CSR's creation and its automatic approval.
    pub approve_after: i64,
    /// The bootstrap token accepted (`<id>.<secret>`).
    pub token: String,
    /// Whether [`Apiserver::token`] is still valid (false: deleted or expired, 401).
    pub token_valid: bool,
    /// An administrator's bearer token (may approve and deny through the `approval` subresource).
    pub admin_token: String,
    /// Whether the bootstrap token may create CSRs (false: RBAC missing, 403).
    pub rbac_create: bool,
    /// The apiserver is unreachable (in process: every request is a transport error).
    pub down: bool,
    /// Deny the next CSR created.
    pub deny_next: bool,
    /// The `cluster-info` ConfigMap (None: 404).
    pub cluster_info: Option<Value>,
    /// Answer the next requests of these routes, in this order, with 429 and `Retry-After: 1`.
    pub throttle: VecDeque<Route>,
    /// The ClusterTrustBundles of `kubernetes.io/kube-apiserver-serving` (PEM each); None: the
    /// API is not served (404).
    pub trust_bundles: Option<Vec<String>>,
    /// Anonymous requests are forbidden (RBAC still loading).
    pub anonymous_forbidden: bool,
    /// The apiserver's clock minus the caller's `now` (a node whose clock is wrong).
    pub skew: i64,
    /// Every request, in order.
    pub log: Vec<Entry>,
}

struct RawKey(Vec<u8>);

impl PublicKeyData for RawKey {
    fn der_bytes(&self) -> &[u8] {
        &self.0
    }
    fn algorithm(&self) -> &'static SignatureAlgorithm {
        &PKCS_ECDSA_P256_SHA256
    }
}

fn at(t: i64) -> time::OffsetDateTime {
    time::OffsetDateTime::from_unix_timestamp(t).expect("a time in range")
}

/// The DER of the first certificate in `pem`.
pub fn first_certificate_der(pem: &[u8]) -> Option<Vec<u8>> {
    let text = std::str::from_utf8(pem).ok()?;
    let start = text.find("-----BEGIN CERTIFICATE-----")?;
    let end = text[start..].find("-----END CERTIFICATE-----")? + start + 25;
    let c = x509_cert::Certificate::from_pem(&text.as_bytes()[start..end]).ok()?;
    c.to_der().ok()
}

/// Every certificate of a PEM bundle, as DER.
fn certificates_der(pem: &str) -> Vec<Vec<u8>> {
    let mut out = Vec::new();
    let mut rest = pem;
    while let Some(start) = rest.find("-----BEGIN CERTIFICATE-----") {
        let Some(len) = rest[start..].find("-----END CERTIFICATE-----") else { break };
        let end = start + len + 25;
        if let Ok(c) = x509_cert::Certificate::from_pem(&rest.as_bytes()[start..end]) {
            out.extend(c.to_der().ok());
        }
        rest = &rest[end..];
    }
    out
}

/// The subject CN, notBefore and notAfter (Unix seconds) of a DER certificate.
pub fn leaf_facts(der: &[u8]) -> Option<(String, i64, i64)> {
    let c = x509_cert::Certificate::from_der(der).ok()?;
    let tbs = c.tbs_certificate();
    let v = tbs.validity();
    let unix = |t: &x509_cert::time::Time| t.to_unix_duration().as_secs() as i64;
    let cn = common_name(tbs.subject())?;
    Some((cn, unix(&v.not_before), unix(&v.not_after)))
}

fn common_name(name: &x509_cert::name::Name) -> Option<String> {
    const CN: x509_cert::der::oid::ObjectIdentifier =
        x509_cert::der::oid::ObjectIdentifier::new_unwrap("2.5.4.3");
    name.iter_rdn().flat_map(|rdn| rdn.iter()).find(|a| a.oid == CN).and_then(|a| {
        let s = x509_cert::der::asn1::Utf8StringRef::try_from(&a.value)
            .map(|s| s.as_str().to_owned())
            .or_else(|_| {
                x509_cert::der::asn1::PrintableStringRef::try_from(&a.value)
                    .map(|s| s.as_str().to_owned())
            });
        s.ok()
    })
}

/// The first PEM block of `text` (kube-apiserver reads only the first: an attested join's
/// evidence blocks follow the CSR).
fn first_block(text: &str) -> &str {
    const END: &str = "-----END CERTIFICATE REQUEST-----";
    match text.find(END) {
        Some(i) => &text[..i + END.len()],
        None => text,
    }
}

fn status(code: u16, reason: &str) -> (u16, Vec<u8>) {
    let body = json!({
        "kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
        "reason": reason, "message": format!("sim: {reason}"), "code": code,
    });
    (code, body.to_string().into_bytes())
}

impl Apiserver {
    /// A fresh apiserver whose CA is valid from a year before `t0` to ten years after.
    pub fn new(t0: i64) -> Self {
        let ca_key = KeyPair::generate_for(&PKCS_ECDSA_P256_SHA256).expect("a P-256 key");
        let mut ca_params = CertificateParams::new(Vec::<String>::new()).expect("params");
        let mut dn = DistinguishedName::new();
        dn.push(DnType::CommonName, "sim-cluster-ca");
        ca_params.distinguished_name = dn;
        ca_params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        ca_params.key_usages =
            vec![KeyUsagePurpose::KeyCertSign, KeyUsagePurpose::DigitalSignature];
        ca_params.not_before = at(t0 - 86_400 * 365);
        ca_params.not_after = at(t0 + 86_400 * 3650);
        let ca_pem = ca_params.self_signed(&ca_key).expect("the CA").pem();
        Apiserver {
            ca_key,
            ca_params,
            presents: ca_pem.clone(),
            client_cas: ca_pem.clone(),
            ca_pem,
            csrs: BTreeMap::new(),
            next: 0,
            lifetime: 3600,
            auto_approve_client: true,
            approve_serving: false,
            approve_after: 0,
            token: DEFAULT_TOKEN.to_owned(),
            token_valid: true,
            admin_token: "sim-admin".to_owned(),
            rbac_create: true,
            down: false,
            deny_next: false,
            cluster_info: None,
            throttle: VecDeque::new(),
            trust_bundles: None,
            anonymous_forbidden: false,
            skew: 0,
            log: Vec::new(),
        }
    }

    /// Publish the `cluster-info` ConfigMap as kubeadm writes it: `ca` as
    /// certificate-authority-data and `server`.
    pub fn publish_cluster_info(&mut self, ca: &str, server: &str) {
        let kc = format!(
            "apiVersion: v1\nclusters:\n- cluster:\n    certificate-authority-data: {}\n    server: {server}\n  name: \"\"\ncontexts: null\ncurrent-context: \"\"\nkind: Config\nusers: null\n",
            Base64::encode_string(ca.as_bytes())
        );
        self.cluster_info =
            Some(json!({"kind": "ConfigMap", "apiVersion": "v1", "data": {"kubeconfig": kc}}));
    }

    /// Whether a client trusting `bundle` (PEM) accepts the certificate the server presents.
    pub fn trusted_by(&self, bundle: &[u8]) -> bool {
        let anchors = certificates_der(&self.presents);
        let bundle = String::from_utf8_lossy(bundle);
        certificates_der(&bundle).iter().any(|d| anchors.contains(d))
    }

    /// A certificate for `csr_pem` signed by the CA at `now` (PEM): subject `O=system:nodes`, the
    /// CSR's CN and SANs, serverAuth for the serving signer and clientAuth otherwise.
    pub fn issue(&self, csr_pem: &[u8], serving: bool, now: i64, lifetime: i64) -> String {
        let text = std::str::from_utf8(csr_pem).expect("a PEM CSR");
        let req =
            x509_cert::request::CertReq::from_pem(first_block(text).as_bytes()).expect("a CSR");
        let cn = common_name(&req.info.subject).unwrap_or_default();
        let mut p = CertificateParams::new(Vec::<String>::new()).expect("params");
        let mut dn = DistinguishedName::new();
        dn.push(DnType::OrganizationName, "system:nodes");
        dn.push(DnType::CommonName, cn);
        p.distinguished_name = dn;
        p.is_ca = IsCa::ExplicitNoCa;
        p.key_usages = vec![KeyUsagePurpose::DigitalSignature];
        p.extended_key_usages = vec![if serving {
            ExtendedKeyUsagePurpose::ServerAuth
        } else {
            ExtendedKeyUsagePurpose::ClientAuth
        }];
        p.subject_alt_names = requested_sans(&req);
        // The signer backdates by five minutes, as kube-controller-manager does.
        p.not_before = at(now - 300);
        p.not_after = at(now + lifetime);
        let key = RawKey(req.info.public_key.subject_public_key.raw_bytes().to_vec());
        let issuer = Issuer::from_params(&self.ca_params, &self.ca_key);
        p.signed_by(&key, &issuer).expect("signed").pem()
    }

    /// A serving certificate and key (PEM) for `127.0.0.1` and `localhost`, signed by the CA.
    pub fn serving_identity(&self, now: i64) -> (String, String) {
        let key = KeyPair::generate_for(&PKCS_ECDSA_P256_SHA256).expect("a key");
        let mut p = CertificateParams::new(vec!["localhost".to_owned()]).expect("params");
        p.subject_alt_names.push(SanType::IpAddress([127, 0, 0, 1].into()));
        let mut dn = DistinguishedName::new();
        dn.push(DnType::CommonName, "kube-apiserver");
        p.distinguished_name = dn;
        p.extended_key_usages = vec![ExtendedKeyUsagePurpose::ServerAuth];
        p.not_before = at(now - 3600);
        p.not_after = at(now + 86_400 * 365);
        let issuer = Issuer::from_params(&self.ca_params, &self.ca_key);
        (p.signed_by(&key, &issuer).expect("signed").pem(), key.serialize_pem())
    }

    /// Sign `name` now, as the signer controller does once approved.
    pub fn sign(&mut self, name: &str, now: i64) {
        let c = self.csrs[name].clone();
        let pem = Base64::decode_vec(&c.request_b64).expect("base64");
        let lifetime = c.expiration_seconds.map_or(self.lifetime, |e| e.min(self.lifetime));
        let cert = self.issue(&pem, c.signer == SERVING_SIGNER, now, lifetime);
        self.next += 1;
        let c = self.csrs.get_mut(name).expect("the CSR");
        c.certificate = Some(Base64::encode_string(cert.as_bytes()));
        c.resource_version = self.next;
    }

    /// Add a condition to `name` (`Approved` signs it).
    pub fn condition(&mut self, name: &str, kind: &str, reason: &str, now: i64) {
        self.next += 1;
        let c = self.csrs.get_mut(name).expect("the CSR");
        c.conditions.push((kind.to_owned(), reason.to_owned()));
        c.resource_version = self.next;
        c.approve_at = None;
        if kind == "Approved" {
            self.sign(name, now);
        }
    }

    /// Approve `name` as `kubectl certificate approve` does, and sign it.
    pub fn approve(&mut self, name: &str, now: i64) {
        self.condition(name, "Approved", "KubectlApprove", now);
    }

    /// Carry out the automatic approvals due at `now`.
    pub fn tick(&mut self, now: i64) {
        let due: Vec<String> = self
            .csrs
            .values()
            .filter(|c| c.approve_at.is_some_and(|t| t <= now) && c.conditions.is_empty())
            .map(|c| c.name.clone())
            .collect();
        for name in due {
            self.condition(&name, "Approved", "AutoApproved", now);
        }
    }

    /// The CSR as the API returns it.
    pub fn object(c: &Csr) -> Value {
        let mut status = json!({});
        if !c.conditions.is_empty() {
            status["conditions"] = Value::Array(
                c.conditions
                    .iter()
                    .map(|(t, r)| {
                        json!({"type": t, "status": "True", "reason": r, "message": "sim"})
                    })
                    .collect(),
            );
        }
        if let Some(cert) = &c.certificate {
            status["certificate"] = json!(cert);
        }
        let mut spec = json!({
            "request": c.request_b64, "signerName": c.signer, "usages": c.usages,
            "username": c.username,
        });
        if let Some(e) = c.expiration_seconds {
            spec["expirationSeconds"] = json!(e);
        }
        json!({
            "kind": "CertificateSigningRequest",
            "apiVersion": "certificates.k8s.io/v1",
            "metadata": {"name": c.name, "uid": c.uid, "resourceVersion": c.resource_version.to_string()},
            "spec": spec,
            "status": status,
        })
    }

    /// A watch event line for `c`.
    pub fn event(kind: &str, c: &Csr) -> Vec<u8> {
        let mut line = json!({"type": kind, "object": Self::object(c)}).to_string().into_bytes();
        line.push(b'\n');
        line
    }

    /// How many CSRs name `signer`.
    pub fn csrs_for(&self, signer: &str) -> usize {
        self.csrs.values().filter(|c| c.signer == signer).count()
    }

    /// The CN of a client certificate that chains to [`Apiserver::client_cas`] and is valid at
    /// `t` with clientAuth (kube-apiserver's x509 authenticator, here by rustls-webpki).
    pub fn node_identity(&self, der: &[u8], t: i64) -> Option<String> {
        use rustls::pki_types::{CertificateDer, UnixTime};
        let anchors_der = certificates_der(&self.client_cas);
        let anchor_certs: Vec<CertificateDer<'_>> =
            anchors_der.iter().map(|d| CertificateDer::from(d.as_slice())).collect();
        let anchors: Vec<_> =
            anchor_certs.iter().filter_map(|c| webpki::anchor_from_trusted_cert(c).ok()).collect();
        let leaf = CertificateDer::from(der);
        let ee = webpki::EndEntityCert::try_from(&leaf).ok()?;
        let time = UnixTime::since_unix_epoch(std::time::Duration::from_secs(t.max(0) as u64));
        ee.verify_for_usage(
            rustls::crypto::ring::default_provider().signature_verification_algorithms.all,
            &anchors,
            &[],
            time,
            webpki::KeyUsage::client_auth(),
            None,
            None,
        )
        .ok()?;
        leaf_facts(der).map(|(cn, _, _)| cn)
    }

    fn who(&self, req: &Request<'_>, now: i64) -> Option<(Who, String)> {
        match (req.authorization, req.client_certificate) {
            (Some(a), _) => {
                let bearer = a.strip_prefix("Bearer ")?;
                if bearer == self.admin_token {
                    return Some((Who::Admin, "kubernetes-admin".to_owned()));
                }
                let id = self.token.split('.').next().unwrap_or_default();
                (bearer == self.token && self.token_valid)
                    .then(|| (Who::Bootstrap, format!("system:bootstrap:{id}")))
            }
            (None, Some(der)) => {
                // An unknown CA or a certificate outside its validity by the apiserver's clock:
                // 401, as kube-apiserver answers (the TLS handshake itself succeeds).
                let cn = self.node_identity(der, now + self.skew)?;
                Some((Who::Node, cn))
            }
            (None, None) => Some((Who::Anonymous, "system:anonymous".to_owned())),
        }
    }

    /// The CSR a watch or list names by `fieldSelector=metadata.name=<name>`.
    pub fn selected_name(path: &str) -> Option<&str> {
        let q = path.split_once('?')?.1;
        q.split('&')
            .find_map(|kv| kv.strip_prefix("fieldSelector=metadata.name%3D"))
            .or_else(|| q.split('&').find_map(|kv| kv.strip_prefix("fieldSelector=metadata.name=")))
    }

    /// The `timeoutSeconds` of a watch.
    pub fn timeout_seconds(path: &str) -> Option<i64> {
        let q = path.split_once('?')?.1;
        q.split('&').find_map(|kv| kv.strip_prefix("timeoutSeconds=")).and_then(|t| t.parse().ok())
    }

    /// Answer one request at `now`; `None` when the request never arrives (the apiserver is
    /// [`down`](Apiserver::down), or the client does not trust the serving certificate). A watch
    /// is answered with the current state of its CSR as one `ADDED` event (the HTTPS server then
    /// keeps the stream open and sends `MODIFIED` events).
    pub fn handle(&mut self, req: &Request<'_>, now: i64) -> Option<Response> {
        if self.down {
            return None;
        }
        if let Some(bundle) = req.client_trusts {
            if !self.trusted_by(bundle) {
                return None;
            }
        }
        self.tick(now);
        let route = Route::of(req.method, req.path);
        let Some((who, username)) = self.who(req, now) else {
            self.log.push(Entry { route, who: Who::Anonymous, path: req.path.to_owned() });
            let (status, body) = status(401, "Unauthorized");
            return Some(Response { status, body, retry_after: None, route, who: Who::Anonymous });
        };
        self.log.push(Entry { route, who, path: req.path.to_owned() });
        let answer = |(status, body): (u16, Vec<u8>)| Response {
            status,
            body,
            retry_after: None,
            route,
            who,
        };
        if self.throttle.front() == Some(&route) {
            self.throttle.pop_front();
            return Some(Response {
                retry_after: Some("1"),
                ..answer((429, b"Too many requests, please try again later.\n".to_vec()))
            });
        }
        if who == Who::Anonymous && self.anonymous_forbidden && route != Route::Healthz {
            return Some(answer(status(403, "Forbidden")));
        }
        Some(answer(self.route(req, route, who, &username, now)))
    }

    fn route(
        &mut self,
        req: &Request<'_>,
        route: Route,
        who: Who,
        user: &str,
        now: i64,
    ) -> (u16, Vec<u8>) {
        match route {
            Route::Healthz => (200, b"ok".to_vec()),
            Route::ClusterInfo => match &self.cluster_info {
                Some(v) => (200, v.to_string().into_bytes()),
                None => status(404, "NotFound"),
            },
            Route::TrustBundles => self.trust_bundles(req, who),
            Route::CsrCreate => self.create(req, who, user, now),
            Route::CsrGet => {
                let name = csr_name(req.path.split('?').next().unwrap_or_default()).map(|n| n.0);
                match name.and_then(|n| self.csrs.get(n)) {
                    _ if who == Who::Anonymous => status(403, "Forbidden"),
                    Some(c) => (200, Self::object(c).to_string().into_bytes()),
                    None => status(404, "NotFound"),
                }
            }
            Route::CsrList => {
                if who == Who::Anonymous {
                    return status(403, "Forbidden");
                }
                let name = Self::selected_name(req.path);
                let items: Vec<Value> = self
                    .csrs
                    .values()
                    .filter(|c| name.is_none_or(|n| n == c.name))
                    .map(Self::object)
                    .collect();
                let list = json!({
                    "kind": "CertificateSigningRequestList", "apiVersion": "certificates.k8s.io/v1",
                    "metadata": {"resourceVersion": self.next.to_string()}, "items": items,
                });
                (200, list.to_string().into_bytes())
            }
            Route::CsrWatch => {
                if who == Who::Anonymous {
                    return status(403, "Forbidden");
                }
                match Self::selected_name(req.path).and_then(|n| self.csrs.get(n)) {
                    Some(c) => (200, Self::event("ADDED", c)),
                    None => (200, Vec::new()),
                }
            }
            Route::CsrApproval => self.approval(req, who, now),
            Route::SelfSubjectReview => self.review(req, who, user),
            Route::Unknown => status(404, "NotFound"),
        }
    }

    fn trust_bundles(&self, req: &Request<'_>, who: Who) -> (u16, Vec<u8>) {
        let selector = "fieldSelector=spec.signerName%3Dkubernetes.io%2Fkube-apiserver-serving";
        if !req.path.contains(selector) {
            return status(400, "BadRequest");
        }
        if who == Who::Anonymous {
            return status(403, "Forbidden");
        }
        match &self.trust_bundles {
            None => status(404, "NotFound"),
            Some(list) => {
                let items: Vec<Value> = list
                    .iter()
                    .enumerate()
                    .map(|(i, pem)| json!({
                        "metadata": {"name": format!("kubernetes.io:kube-apiserver-serving:{i}")},
                        "spec": {"signerName": "kubernetes.io/kube-apiserver-serving", "trustBundle": pem},
                    }))
                    .collect();
                let list = json!({"kind": "ClusterTrustBundleList", "apiVersion": "certificates.k8s.io/v1", "items": items});
                (200, list.to_string().into_bytes())
            }
        }
    }

    fn create(&mut self, req: &Request<'_>, who: Who, user: &str, now: i64) -> (u16, Vec<u8>) {
        if who == Who::Anonymous || (who == Who::Bootstrap && !self.rbac_create) {
            return status(403, "Forbidden");
        }
        let Ok(v) = serde_json::from_slice::<Value>(req.body) else {
            return status(400, "BadRequest");
        };
        let (Some(request), Some(signer), Some(usages)) = (
            v["spec"]["request"].as_str(),
            v["spec"]["signerName"].as_str(),
            v["spec"]["usages"].as_array(),
        ) else {
            return status(422, "Invalid");
        };
        let Ok(pem) = Base64::decode_vec(request) else { return status(422, "Invalid") };
        let parsed = std::str::from_utf8(&pem)
            .ok()
            .and_then(|t| x509_cert::request::CertReq::from_pem(first_block(t).as_bytes()).ok());
        if parsed.is_none() {
            return status(422, "Invalid");
        }
        self.next += 1;
        let name = match v["metadata"]["name"].as_str() {
            Some(n) => n.to_owned(),
            None => format!("csr-{:05}", self.next),
        };
        if self.csrs.contains_key(&name) {
            return status(409, "AlreadyExists");
        }
        let auto = (self.auto_approve_client && signer == CLIENT_SIGNER)
            || (self.approve_serving && signer == SERVING_SIGNER);
        let c = Csr {
            name: name.clone(),
            uid: format!("uid-{}", self.next),
            resource_version: self.next,
            request_b64: request.to_owned(),
            signer: signer.to_owned(),
            usages: usages.iter().filter_map(|u| u.as_str().map(str::to_owned)).collect(),
            expiration_seconds: v["spec"]["expirationSeconds"].as_i64(),
            username: user.to_owned(),
            conditions: vec![],
            certificate: None,
            approve_at: (auto && !self.deny_next).then_some(now + self.approve_after),
        };
        // The create response never carries the certificate (the signer comes later).
        let created = Self::object(&c).to_string().into_bytes();
        self.csrs.insert(name.clone(), c);
        if self.deny_next {
            self.deny_next = false;
            self.condition(&name, "Denied", "SimDenied", now);
        }
        self.tick(now);
        (201, created)
    }

    fn approval(&mut self, req: &Request<'_>, who: Who, now: i64) -> (u16, Vec<u8>) {
        if who != Who::Admin {
            return status(403, "Forbidden");
        }
        let name = csr_name(req.path.split('?').next().unwrap_or_default()).map(|n| n.0.to_owned());
        let Some(name) = name.filter(|n| self.csrs.contains_key(n)) else {
            return status(404, "NotFound");
        };
        let Ok(v) = serde_json::from_slice::<Value>(req.body) else {
            return status(400, "BadRequest");
        };
        let known = self.csrs[&name].conditions.len();
        let conditions = v["status"]["conditions"].as_array().cloned().unwrap_or_default();
        for c in conditions.iter().skip(known) {
            let kind = c["type"].as_str().unwrap_or_default();
            if !matches!(kind, "Approved" | "Denied") {
                return status(422, "Invalid");
            }
            let reason = c["reason"].as_str().unwrap_or("Sim").to_owned();
            self.condition(&name, kind, &reason, now);
        }
        (200, Self::object(&self.csrs[&name]).to_string().into_bytes())
    }

    fn review(&self, req: &Request<'_>, who: Who, user: &str) -> (u16, Vec<u8>) {
        let Ok(v) = serde_json::from_slice::<Value>(req.body) else {
            return status(400, "BadRequest");
        };
        if v["kind"] != "SelfSubjectReview" {
            return status(400, "BadRequest");
        }
        let (username, groups) = match who {
            // The certificate was judged by the apiserver's clock on the way in.
            Who::Node => (user.to_owned(), vec!["system:nodes", "system:authenticated"]),
            Who::Bootstrap => {
                (user.to_owned(), vec!["system:bootstrappers", "system:authenticated"])
            }
            Who::Admin => (user.to_owned(), vec!["system:masters", "system:authenticated"]),
            Who::Anonymous => (user.to_owned(), vec!["system:unauthenticated"]),
        };
        let review = json!({
            "kind": "SelfSubjectReview",
            "apiVersion": "authentication.k8s.io/v1",
            "metadata": {},
            "status": {"userInfo": {"username": username, "groups": groups}},
        });
        (201, review.to_string().into_bytes())
    }
}

/// A bootstrap kubeconfig for `server` that trusts the CA in the file `ca_file` and
/// authenticates with `token`, as `kubeadm` writes it.
pub fn bootstrap_kubeconfig(server: &str, ca_file: &str, token: &str) -> String {
    format!(
        "apiVersion: v1\nkind: Config\nclusters:\n- name: b\n  cluster:\n    server: {server}\n    certificate-authority: {ca_file}\ncontexts:\n- name: b\n  context:\n    cluster: b\n    user: u\ncurrent-context: b\nusers:\n- name: u\n  user:\n    token: {token}\n"
    )
}

/// The names the CSR asks for (DNS names and IP addresses of its extensionRequest).
fn requested_sans(req: &x509_cert::request::CertReq) -> Vec<SanType> {
    use x509_cert::ext::pkix::SubjectAltName;
    use x509_cert::ext::pkix::name::GeneralName;
    let mut out = Vec::new();
    for attr in req.info.attributes.iter() {
        if attr.oid.to_string() != "1.2.840.113549.1.9.14" {
            continue;
        }
        for value in attr.values.iter() {
            let Ok(exts) = value.decode_as::<x509_cert::ext::Extensions>() else { continue };
            for ext in exts.iter().filter(|e| e.extn_id.to_string() == "2.5.29.17") {
                let Ok(sans) = SubjectAltName::from_der(ext.extn_value.as_bytes()) else {
                    continue;
                };
                for n in sans.0 {
                    match n {
                        GeneralName::DnsName(d) => {
                            if let Ok(d) = d.as_str().to_owned().try_into() {
                                out.push(SanType::DnsName(d));
                            }
                        }
                        GeneralName::IpAddress(b) => match b.as_bytes().len() {
                            4 => out.push(SanType::IpAddress(
                                <[u8; 4]>::try_from(b.as_bytes()).expect("4").into(),
                            )),
                            16 => out.push(SanType::IpAddress(
                                <[u8; 16]>::try_from(b.as_bytes()).expect("16").into(),
                            )),
                            _ => {}
                        },
                        _ => {}
                    }
                }
            }
        }
    }
    out
}
