//! Would the apiserver, the csrapproving controller and the csrsigning controller accept this
//! kubelet CSR?
//!
//! [`check_kubelet_csr`] runs, in this order, and returns the first violation as
//! [`Error::Policy`]:
//!
//! 1. **apiserver** generic validation of a `certificates.k8s.io/v1` CertificateSigningRequest
//!    (`pkg/apis/certificates/validation`): the first PEM block is a `CERTIFICATE REQUEST` that
//!    parses ([`PolicyViolation::NotCertificateRequest`]) and whose self-signature verifies
//!    ([`PolicyViolation::BadSignature`]); `usages` is non-empty
//!    ([`PolicyViolation::UsagesRequired`]), every usage is one of the 23 known strings
//!    ([`PolicyViolation::UnknownUsage`]) and none repeats ([`PolicyViolation::DuplicateUsage`]);
//!    the signer name is well formed ([`validate_signer_name`], [`PolicyViolation::Signer`]);
//!    `expirationSeconds`, if set, is ≥ 600 ([`PolicyViolation::ExpirationTooShort`]).
//! 2. The signer is one of the two kubelet signers, [`SIGNER_CLIENT`] or [`SIGNER_SERVING`]
//!    (we vouch for nothing else; [`PolicyViolation::Signer`]).
//! 3. The kubelet shape checks the approver and signer run (`pkg/apis/certificates/helpers.go`):
//!    [`check_kubelet_client`] or [`check_kubelet_serving`], in upstream's order.
//!
//! # Keys
//! Neither the apiserver nor the kubelet signers restrict the key type beyond what Go can verify
//! (RSA, ECDSA P-224/256/384/521, Ed25519). This crate verifies ECDSA P-256 always, P-384 with the
//! `p384` feature and RSA PKCS#1 v1.5 with the `rsa` feature; a CSR that upstream could verify but
//! this build cannot gives [`PolicyViolation::UnsupportedKey`] ("cannot vouch"), not acceptance.

pub mod serving;

use crate::backend::{SignatureVerifier, Software};
use crate::error::{Error, PolicyViolation, Result};
pub use crate::request::CertificateRequest;
use crate::request::SubjectAltName;

/// Signer of kubelet client certificates (`kubernetes.io/kube-apiserver-client-kubelet`).
pub const SIGNER_CLIENT: &str = "kubernetes.io/kube-apiserver-client-kubelet";
/// Signer of kubelet serving certificates (`kubernetes.io/kubelet-serving`).
pub const SIGNER_SERVING: &str = "kubernetes.io/kubelet-serving";
/// The legacy signer, refused by the v1 API for new objects.
pub const SIGNER_LEGACY_UNKNOWN: &str = "kubernetes.io/legacy-unknown";

/// The `O` every kubelet certificate carries.
pub const NODES_ORGANIZATION: &str = "system:nodes";
/// The `CN` prefix of every kubelet certificate (`system:node:<nodeName>`).
pub const NODE_CN_PREFIX: &str = "system:node:";

/// Minimum `spec.expirationSeconds` accepted by the API (10 minutes).
pub const MIN_EXPIRATION_SECONDS: u32 = 600;
/// Longest well-formed signer name: 253 (domain) + 1 + 253 + 63 + 1 (path).
pub const MAX_SIGNER_NAME_LEN: usize = 571;

/// Usage `signing`.
pub const USAGE_SIGNING: &str = "signing";
/// Usage `digital signature`.
pub const USAGE_DIGITAL_SIGNATURE: &str = "digital signature";
/// Usage `content commitment`.
pub const USAGE_CONTENT_COMMITMENT: &str = "content commitment";
/// Usage `key encipherment`.
pub const USAGE_KEY_ENCIPHERMENT: &str = "key encipherment";
/// Usage `key agreement`.
pub const USAGE_KEY_AGREEMENT: &str = "key agreement";
/// Usage `data encipherment`.
pub const USAGE_DATA_ENCIPHERMENT: &str = "data encipherment";
/// Usage `cert sign`.
pub const USAGE_CERT_SIGN: &str = "cert sign";
/// Usage `crl sign`.
pub const USAGE_CRL_SIGN: &str = "crl sign";
/// Usage `encipher only`.
pub const USAGE_ENCIPHER_ONLY: &str = "encipher only";
/// Usage `decipher only`.
pub const USAGE_DECIPHER_ONLY: &str = "decipher only";
/// Usage `any`.
pub const USAGE_ANY: &str = "any";
/// Usage `server auth`.
pub const USAGE_SERVER_AUTH: &str = "server auth";
/// Usage `client auth`.
pub const USAGE_CLIENT_AUTH: &str = "client auth";
/// Usage `code signing`.
pub const USAGE_CODE_SIGNING: &str = "code signing";
/// Usage `email protection`.
pub const USAGE_EMAIL_PROTECTION: &str = "email protection";
/// Usage `s/mime`.
pub const USAGE_SMIME: &str = "s/mime";
/// Usage `ipsec end system`.
pub const USAGE_IPSEC_END_SYSTEM: &str = "ipsec end system";
/// Usage `ipsec tunnel`.
pub const USAGE_IPSEC_TUNNEL: &str = "ipsec tunnel";
/// Usage `ipsec user`.
pub const USAGE_IPSEC_USER: &str = "ipsec user";
/// Usage `timestamping`.
pub const USAGE_TIMESTAMPING: &str = "timestamping";
/// Usage `ocsp signing`.
pub const USAGE_OCSP_SIGNING: &str = "ocsp signing";
/// Usage `microsoft sgc`.
pub const USAGE_MICROSOFT_SGC: &str = "microsoft sgc";
/// Usage `netscape sgc`.
pub const USAGE_NETSCAPE_SGC: &str = "netscape sgc";

/// The 23 usages of `certificates.k8s.io/v1` `KeyUsage`, in the API's order.
pub const KNOWN_USAGES: [&str; 23] = [
    USAGE_SIGNING,
    USAGE_DIGITAL_SIGNATURE,
    USAGE_CONTENT_COMMITMENT,
    USAGE_KEY_ENCIPHERMENT,
    USAGE_KEY_AGREEMENT,
    USAGE_DATA_ENCIPHERMENT,
    USAGE_CERT_SIGN,
    USAGE_CRL_SIGN,
    USAGE_ENCIPHER_ONLY,
    USAGE_DECIPHER_ONLY,
    USAGE_ANY,
    USAGE_SERVER_AUTH,
    USAGE_CLIENT_AUTH,
    USAGE_CODE_SIGNING,
    USAGE_EMAIL_PROTECTION,
    USAGE_SMIME,
    USAGE_IPSEC_END_SYSTEM,
    USAGE_IPSEC_TUNNEL,
    USAGE_IPSEC_USER,
    USAGE_TIMESTAMPING,
    USAGE_OCSP_SIGNING,
    USAGE_MICROSOFT_SGC,
    USAGE_NETSCAPE_SGC,
];

/// Which kubelet signer a CSR is for.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum KubeletSigner {
    /// [`SIGNER_CLIENT`]: the kubelet's client certificate (auto-approved by the csrapproving
    /// controller).
    Client,
    /// [`SIGNER_SERVING`]: the kubelet's serving certificate (never auto-approved).
    Serving,
}

impl KubeletSigner {
    /// The signer for `name`, if it is one of the two kubelet signers.
    pub fn from_name(name: &str) -> Option<Self> {
        match name {
            SIGNER_CLIENT => Some(KubeletSigner::Client),
            SIGNER_SERVING => Some(KubeletSigner::Serving),
            _ => None,
        }
    }

    /// The signer name (`spec.signerName`).
    pub const fn name(self) -> &'static str {
        match self {
            KubeletSigner::Client => SIGNER_CLIENT,
            KubeletSigner::Serving => SIGNER_SERVING,
        }
    }
}

/// A CSR that passed [`check_kubelet_csr`]: the parsed request and its signer.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CheckedCsr<'a> {
    /// The parsed request (borrows the DER, or the caller's scratch buffer for PEM input).
    pub request: CertificateRequest<'a>,
    /// The kubelet signer it was checked against.
    pub signer: KubeletSigner,
}

const fn violation(v: PolicyViolation) -> Error {
    Error::Policy(v)
}

/// Whether `usage` is one of the API's 23 [`KNOWN_USAGES`].
pub fn is_known_usage(usage: &str) -> bool {
    KNOWN_USAGES.contains(&usage)
}

/// The apiserver's `spec.usages` rules: non-empty, every value known, no duplicates.
///
/// Work is bounded: an unknown value stops the scan, so the duplicate search only ever looks at
/// at most 23 distinct earlier values.
pub fn validate_usages(usages: &[&str]) -> Result<()> {
    if usages.is_empty() {
        return Err(violation(PolicyViolation::UsagesRequired));
    }
    for (i, usage) in usages.iter().enumerate() {
        if !is_known_usage(usage) {
            return Err(violation(PolicyViolation::UnknownUsage));
        }
        if usages.get(..i).is_some_and(|earlier| earlier.contains(usage)) {
            return Err(violation(PolicyViolation::DuplicateUsage));
        }
    }
    Ok(())
}

/// DNS-1123 label body check without the length limit: `[a-z0-9]([-a-z0-9]*[a-z0-9])?`.
fn is_label_shape(s: &str) -> bool {
    let b = s.as_bytes();
    let alnum = |c: &u8| c.is_ascii_lowercase() || c.is_ascii_digit();
    match (b.first(), b.last()) {
        (Some(first), Some(last)) => {
            alnum(first) && alnum(last) && b.iter().all(|c| alnum(c) || *c == b'-')
        }
        _ => false,
    }
}

/// The apiserver's signer-name format rules (`ValidateSignerName`) plus the v1 refusal of
/// [`SIGNER_LEGACY_UNKNOWN`]:
///
/// - exactly one `/`;
/// - the domain part is ≤ 253 bytes of at least two `.`-separated DNS-1123 labels (each ≤ 63);
/// - the path part is `.`-separated DNS-1123 subdomains (each ≤ 253);
/// - the whole name is ≤ [`MAX_SIGNER_NAME_LEN`].
///
/// Any failure is [`PolicyViolation::Signer`].
pub fn validate_signer_name(name: &str) -> Result<()> {
    let err = violation(PolicyViolation::Signer);
    if name.len() > MAX_SIGNER_NAME_LEN || name == SIGNER_LEGACY_UNKNOWN {
        return Err(err);
    }
    let mut parts = name.split('/');
    let (Some(domain), Some(path), None) = (parts.next(), parts.next(), parts.next()) else {
        return Err(err);
    };
    if domain.len() > 253 {
        return Err(err);
    }
    let mut labels = 0usize;
    for label in domain.split('.') {
        if label.len() > 63 || !is_label_shape(label) {
            return Err(err);
        }
        labels += 1;
    }
    if labels < 2 {
        return Err(err);
    }
    for segment in path.split('.') {
        if segment.len() > 253 || !is_label_shape(segment) {
            return Err(err);
        }
    }
    Ok(())
}

/// The apiserver's `spec.expirationSeconds` rule: absent, or ≥ [`MIN_EXPIRATION_SECONDS`].
///
/// The API field is an `int32`; values above `i32::MAX` cannot be sent, and are not judged here.
pub fn validate_expiration_seconds(expiration_seconds: Option<u32>) -> Result<()> {
    match expiration_seconds {
        Some(s) if s < MIN_EXPIRATION_SECONDS => {
            Err(violation(PolicyViolation::ExpirationTooShort))
        }
        _ => Ok(()),
    }
}

/// `subject.O` is exactly `["system:nodes"]` (one string-valued O, equal to it).
fn check_organization(req: &CertificateRequest<'_>) -> Result<()> {
    let mut orgs = req.organizations();
    match (orgs.next(), orgs.next()) {
        (Some(o), None) if o.eq_str(NODES_ORGANIZATION) => Ok(()),
        _ => Err(violation(PolicyViolation::Organization)),
    }
}

fn check_common_name(req: &CertificateRequest<'_>) -> Result<()> {
    match req.common_name() {
        Some(cn) if cn.starts_with(NODE_CN_PREFIX) => Ok(()),
        _ => Err(violation(PolicyViolation::CommonName)),
    }
}

#[derive(Default)]
struct SanKinds {
    dns: bool,
    email: bool,
    ip: bool,
    uri: bool,
}

fn san_kinds(req: &CertificateRequest<'_>) -> SanKinds {
    let mut k = SanKinds::default();
    for san in req.sans() {
        match san {
            SubjectAltName::Dns(_) => k.dns = true,
            SubjectAltName::Email(_) => k.email = true,
            SubjectAltName::Ip(_) => k.ip = true,
            SubjectAltName::Uri(_) => k.uri = true,
            _ => {}
        }
    }
    k
}

/// Whether the usage *set* is exactly `{digital signature, <auth>}` or
/// `{digital signature, key encipherment, <auth>}` (set semantics, any key type).
fn usage_set_is(usages: &[&str], auth: &str) -> bool {
    let allowed = [USAGE_DIGITAL_SIGNATURE, USAGE_KEY_ENCIPHERMENT, auth];
    usages.iter().all(|u| allowed.contains(u))
        && usages.contains(&USAGE_DIGITAL_SIGNATURE)
        && usages.contains(&auth)
}

/// upstream `ValidateKubeletClientCSR`, in its order: O is exactly `[system:nodes]`; no DNS,
/// email, IP or URI SANs; CN starts with `system:node:`; the usage set is
/// `{digital signature, key encipherment, client auth}` or `{digital signature, client auth}`.
pub fn check_kubelet_client(req: &CertificateRequest<'_>, usages: &[&str]) -> Result<()> {
    check_organization(req)?;
    let sans = san_kinds(req);
    if sans.dns {
        return Err(violation(PolicyViolation::DnsSanNotAllowed));
    }
    if sans.email {
        return Err(violation(PolicyViolation::EmailSanNotAllowed));
    }
    if sans.ip {
        return Err(violation(PolicyViolation::IpSanNotAllowed));
    }
    if sans.uri {
        return Err(violation(PolicyViolation::UriSanNotAllowed));
    }
    check_common_name(req)?;
    if !usage_set_is(usages, USAGE_CLIENT_AUTH) {
        return Err(violation(PolicyViolation::ClientUsages));
    }
    Ok(())
}

/// upstream `ValidateKubeletServingCSR`, in its order: O is exactly `[system:nodes]`; at least
/// one DNS or IP SAN; no email or URI SANs; the usage set is
/// `{digital signature, key encipherment, server auth}` or `{digital signature, server auth}`;
/// CN starts with `system:node:`.
///
/// Like upstream, nothing checks that the SANs belong to the node.
pub fn check_kubelet_serving(req: &CertificateRequest<'_>, usages: &[&str]) -> Result<()> {
    check_organization(req)?;
    let sans = san_kinds(req);
    if !sans.dns && !sans.ip {
        return Err(violation(PolicyViolation::SanRequired));
    }
    if sans.email {
        return Err(violation(PolicyViolation::EmailSanNotAllowed));
    }
    if sans.uri {
        return Err(violation(PolicyViolation::UriSanNotAllowed));
    }
    if !usage_set_is(usages, USAGE_SERVER_AUTH) {
        return Err(violation(PolicyViolation::ServingUsages));
    }
    check_common_name(req)
}

/// Run every check on a DER CSR; see the module docs for the order.
///
/// A request that does not parse is [`PolicyViolation::NotCertificateRequest`].
pub fn check_kubelet_csr_der<'a>(
    csr_der: &'a [u8],
    signer: &str,
    usages: &[&str],
    expiration_seconds: Option<u32>,
) -> Result<CheckedCsr<'a>> {
    check_kubelet_csr_der_with(&Software, csr_der, signer, usages, expiration_seconds)
}

/// [`check_kubelet_csr_der`] with the self-signature checked by `verifier` (e.g. ring, or the
/// Cortex-M4 assembly) instead of the portable backend.
pub fn check_kubelet_csr_der_with<'a>(
    verifier: &dyn SignatureVerifier,
    csr_der: &'a [u8],
    signer: &str,
    usages: &[&str],
    expiration_seconds: Option<u32>,
) -> Result<CheckedCsr<'a>> {
    let request = CertificateRequest::from_der(csr_der).map_err(|e| match e {
        Error::Malformed => violation(PolicyViolation::NotCertificateRequest),
        other => other,
    })?;
    check_request(verifier, request, signer, usages, expiration_seconds)
}

/// Run every check on a PEM CSR (`spec.request`), decoding its first block into `scratch`
/// (the DER is at most 3/4 of the PEM's length); see the module docs for the order.
///
/// A first block that is missing, not labelled `CERTIFICATE REQUEST`, or does not decode or
/// parse is [`PolicyViolation::NotCertificateRequest`]; a short `scratch` is
/// [`Error::BufferTooSmall`].
pub fn check_kubelet_csr<'s>(
    csr_pem: &[u8],
    signer: &str,
    usages: &[&str],
    expiration_seconds: Option<u32>,
    scratch: &'s mut [u8],
) -> Result<CheckedCsr<'s>> {
    check_kubelet_csr_with(&Software, csr_pem, signer, usages, expiration_seconds, scratch)
}

/// [`check_kubelet_csr`] with the self-signature checked by `verifier` (e.g. ring, or the
/// Cortex-M4 assembly) instead of the portable backend.
pub fn check_kubelet_csr_with<'s>(
    verifier: &dyn SignatureVerifier,
    csr_pem: &[u8],
    signer: &str,
    usages: &[&str],
    expiration_seconds: Option<u32>,
    scratch: &'s mut [u8],
) -> Result<CheckedCsr<'s>> {
    let request = CertificateRequest::from_pem(csr_pem, scratch).map_err(|e| match e {
        Error::Malformed => violation(PolicyViolation::NotCertificateRequest),
        other => other,
    })?;
    check_request(verifier, request, signer, usages, expiration_seconds)
}

fn check_request<'a>(
    verifier: &dyn SignatureVerifier,
    request: CertificateRequest<'a>,
    signer: &str,
    usages: &[&str],
    expiration_seconds: Option<u32>,
) -> Result<CheckedCsr<'a>> {
    request.verify_signature_with(verifier)?;
    validate_usages(usages)?;
    validate_signer_name(signer)?;
    validate_expiration_seconds(expiration_seconds)?;
    let kubelet = KubeletSigner::from_name(signer).ok_or(violation(PolicyViolation::Signer))?;
    match kubelet {
        KubeletSigner::Client => check_kubelet_client(&request, usages)?,
        KubeletSigner::Serving => check_kubelet_serving(&request, usages)?,
    }
    Ok(CheckedCsr { request, signer: kubelet })
}

#[cfg(test)]
mod tests {
    extern crate std;
    use super::*;
    use crate::request::fixtures::{ALLSANS, CLIENT, ED, SERVING};

    const ECDSA_CLIENT: &[&str] = &[USAGE_DIGITAL_SIGNATURE, USAGE_CLIENT_AUTH];
    const RSA_CLIENT: &[&str] =
        &[USAGE_DIGITAL_SIGNATURE, USAGE_CLIENT_AUTH, USAGE_KEY_ENCIPHERMENT];
    const ECDSA_SERVING: &[&str] = &[USAGE_DIGITAL_SIGNATURE, USAGE_SERVER_AUTH];

    fn check(pem: &str, signer: &str, usages: &[&str], exp: Option<u32>) -> Result<KubeletSigner> {
        let mut scratch = [0u8; 1024];
        check_kubelet_csr(pem.as_bytes(), signer, usages, exp, &mut scratch).map(|c| c.signer)
    }

    fn v(p: PolicyViolation) -> Result<KubeletSigner> {
        Err(Error::Policy(p))
    }

    #[cfg_attr(miri, ignore = "ECDSA/RSA CSR signature checks: minutes each")]
    #[test]
    fn accepts_kubelet_client_and_serving() {
        assert_eq!(check(CLIENT, SIGNER_CLIENT, ECDSA_CLIENT, None), Ok(KubeletSigner::Client));
        // Either usage set for any key type; order irrelevant.
        assert_eq!(check(CLIENT, SIGNER_CLIENT, RSA_CLIENT, None), Ok(KubeletSigner::Client));
        let old = [USAGE_DIGITAL_SIGNATURE, USAGE_KEY_ENCIPHERMENT, USAGE_CLIENT_AUTH];
        assert_eq!(check(CLIENT, SIGNER_CLIENT, &old, Some(600)), Ok(KubeletSigner::Client));
        assert_eq!(check(SERVING, SIGNER_SERVING, ECDSA_SERVING, None), Ok(KubeletSigner::Serving));
        let rsa_serving = [USAGE_DIGITAL_SIGNATURE, USAGE_KEY_ENCIPHERMENT, USAGE_SERVER_AUTH];
        assert_eq!(check(SERVING, SIGNER_SERVING, &rsa_serving, None), Ok(KubeletSigner::Serving));
    }

    #[cfg_attr(miri, ignore = "ECDSA/RSA CSR signature checks: minutes each")]
    #[test]
    fn der_entry_point() {
        let mut buf = [0u8; 1024];
        let der =
            crate::pem::decode_first(CLIENT.as_bytes(), "CERTIFICATE REQUEST", &mut buf).unwrap();
        let checked = check_kubelet_csr_der(der, SIGNER_CLIENT, ECDSA_CLIENT, None).unwrap();
        assert_eq!(checked.signer, KubeletSigner::Client);
        assert_eq!(checked.request.der(), der);
        assert_eq!(
            check_kubelet_csr_der(&der[1..], SIGNER_CLIENT, ECDSA_CLIENT, None),
            Err(Error::Policy(PolicyViolation::NotCertificateRequest))
        );
    }

    #[cfg_attr(miri, ignore = "ECDSA/RSA CSR signature checks: minutes each")]
    #[test]
    fn generic_validation() {
        use PolicyViolation::*;
        let cert = CLIENT.replace("CERTIFICATE REQUEST", "CERTIFICATE");
        assert_eq!(check(&cert, SIGNER_CLIENT, ECDSA_CLIENT, None), v(NotCertificateRequest));
        let garbage =
            "-----BEGIN CERTIFICATE REQUEST-----\nAAAA\n-----END CERTIFICATE REQUEST-----\n";
        assert_eq!(check(garbage, SIGNER_CLIENT, ECDSA_CLIENT, None), v(NotCertificateRequest));
        assert_eq!(check(CLIENT, SIGNER_CLIENT, &[], None), v(UsagesRequired));
        assert_eq!(
            check(CLIENT, SIGNER_CLIENT, &["digital signature", "foo"], None),
            v(UnknownUsage)
        );
        assert_eq!(check(CLIENT, SIGNER_CLIENT, &["Client Auth"], None), v(UnknownUsage));
        assert_eq!(
            check(
                CLIENT,
                SIGNER_CLIENT,
                &["client auth", "digital signature", "client auth"],
                None
            ),
            v(DuplicateUsage)
        );
        assert_eq!(check(CLIENT, "kubernetes.io", ECDSA_CLIENT, None), v(Signer));
        assert_eq!(check(CLIENT, SIGNER_LEGACY_UNKNOWN, ECDSA_CLIENT, None), v(Signer));
        assert_eq!(
            check(CLIENT, "kubernetes.io/kube-apiserver-client", ECDSA_CLIENT, None),
            v(Signer)
        );
        assert_eq!(check(CLIENT, SIGNER_CLIENT, ECDSA_CLIENT, Some(599)), v(ExpirationTooShort));
        assert_eq!(check(CLIENT, SIGNER_CLIENT, ECDSA_CLIENT, Some(0)), v(ExpirationTooShort));
        assert_eq!(check(ED, SIGNER_CLIENT, ECDSA_CLIENT, None), v(UnsupportedKey));
    }

    #[cfg_attr(miri, ignore = "ECDSA/RSA CSR signature checks: minutes each")]
    #[test]
    fn client_shape() {
        use PolicyViolation::*;
        // A serving CSR on the client signer: DNS SAN is reported first.
        assert_eq!(check(SERVING, SIGNER_CLIENT, ECDSA_CLIENT, None), v(DnsSanNotAllowed));
        assert_eq!(check(ALLSANS, SIGNER_CLIENT, ECDSA_CLIENT, None), v(DnsSanNotAllowed));
        // Server usages on the client signer.
        assert_eq!(check(CLIENT, SIGNER_CLIENT, ECDSA_SERVING, None), v(ClientUsages));
        assert_eq!(check(CLIENT, SIGNER_CLIENT, &["client auth"], None), v(ClientUsages));
        assert_eq!(check(CLIENT, SIGNER_CLIENT, &["digital signature"], None), v(ClientUsages));
        assert_eq!(
            check(
                CLIENT,
                SIGNER_CLIENT,
                &["digital signature", "client auth", "server auth"],
                None
            ),
            v(ClientUsages)
        );
        assert_eq!(
            check(CLIENT, SIGNER_CLIENT, &["digital signature", "client auth", "signing"], None),
            v(ClientUsages)
        );
    }

    #[cfg_attr(miri, ignore = "ECDSA/RSA CSR signature checks: minutes each")]
    #[test]
    fn serving_shape() {
        use PolicyViolation::*;
        assert_eq!(check(CLIENT, SIGNER_SERVING, ECDSA_SERVING, None), v(SanRequired));
        assert_eq!(check(ALLSANS, SIGNER_SERVING, ECDSA_SERVING, None), v(EmailSanNotAllowed));
        assert_eq!(check(SERVING, SIGNER_SERVING, ECDSA_CLIENT, None), v(ServingUsages));
    }

    #[cfg_attr(miri, ignore = "ECDSA/RSA CSR signature checks: minutes each")]
    #[test]
    fn signer_names() {
        let ok = [
            SIGNER_CLIENT,
            SIGNER_SERVING,
            "kubernetes.io/kube-apiserver-client",
            "example.com/a.b-c.d",
            "a.b/c",
        ];
        for name in ok {
            assert_eq!(validate_signer_name(name), Ok(()), "{name}");
        }
        let label63 = "a".repeat(63);
        let label64 = "a".repeat(64);
        let seg253 = "b".repeat(253);
        let seg254 = "b".repeat(254);
        assert_eq!(validate_signer_name(&std::format!("{label63}.io/x")), Ok(()));
        assert!(validate_signer_name(&std::format!("{label64}.io/x")).is_err());
        assert_eq!(validate_signer_name(&std::format!("a.io/{seg253}")), Ok(()));
        assert!(validate_signer_name(&std::format!("a.io/{seg254}")).is_err());
        // Domain ≤ 253 bytes.
        let domain253 = std::format!("{label63}.{label63}.{label63}.{}", "c".repeat(61));
        assert_eq!(domain253.len(), 253);
        assert_eq!(validate_signer_name(&std::format!("{domain253}/x")), Ok(()));
        assert!(validate_signer_name(&std::format!("{domain253}a/x")).is_err());
        // Total ≤ 571: 253 + 1 + 317 is fine, one more is not.
        let path317 = std::format!("{seg253}.{label63}");
        assert_eq!(path317.len(), 317);
        assert_eq!(validate_signer_name(&std::format!("{domain253}/{path317}")), Ok(()));
        assert!(validate_signer_name(&std::format!("{domain253}/{path317}a")).is_err());
        let bad = [
            "",
            "/",
            "kubernetes.io",
            "kubernetes/x",
            "kubernetes.io/a/b",
            "Kubernetes.io/x",
            "kubernetes.io/X",
            "kubernetes.io/",
            "kubernetes.io/a..b",
            "kubernetes.io/-a",
            "kubernetes.io/a-",
            ".kubernetes.io/a",
            "kubernetes..io/a",
            "kube_rnetes.io/a",
            "kubernetes.io/a_b",
            SIGNER_LEGACY_UNKNOWN,
        ];
        for name in bad {
            assert_eq!(
                validate_signer_name(name),
                Err(Error::Policy(PolicyViolation::Signer)),
                "{name}"
            );
        }
    }

    #[test]
    fn usages() {
        assert_eq!(KNOWN_USAGES.len(), 23);
        for (i, a) in KNOWN_USAGES.iter().enumerate() {
            assert!(!KNOWN_USAGES[..i].contains(a));
        }
        assert_eq!(validate_usages(&KNOWN_USAGES), Ok(()));
        // A long hostile list stops at the first unknown or duplicate value.
        let mut long = std::vec![USAGE_ANY; 100_000];
        assert_eq!(validate_usages(&long), Err(Error::Policy(PolicyViolation::DuplicateUsage)));
        long[0] = "nope";
        assert_eq!(validate_usages(&long), Err(Error::Policy(PolicyViolation::UnknownUsage)));
    }

    #[test]
    fn expiration() {
        assert_eq!(validate_expiration_seconds(None), Ok(()));
        assert_eq!(validate_expiration_seconds(Some(600)), Ok(()));
        assert_eq!(validate_expiration_seconds(Some(u32::MAX)), Ok(()));
        assert!(validate_expiration_seconds(Some(599)).is_err());
    }

    #[test]
    fn kubelet_signer_names() {
        for s in [KubeletSigner::Client, KubeletSigner::Serving] {
            assert_eq!(KubeletSigner::from_name(s.name()), Some(s));
        }
        assert_eq!(KubeletSigner::from_name("kubernetes.io/kube-apiserver-client"), None);
    }
}
