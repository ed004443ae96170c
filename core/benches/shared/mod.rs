//! Fixtures and peer calls shared by the `peers` (criterion) and `overhead` (paired) benches, so
//! both time exactly the same work.

use std::hint::black_box;

use kubeboot::backend::SignatureVerifier;
use kubeboot::verify::{Anchor, Expected, verify_issued_der_anchored, verify_issued_der_with};
use rustls_pki_types::{CertificateDer, TrustAnchor, UnixTime};

pub const K1: &[u8] = include_bytes!("../../tests/data/p256.key");
pub const EC_CA: &[u8] = include_bytes!("../../tests/data/ec-ca.crt");
pub const EC_LEAF: &[u8] = include_bytes!("../../tests/data/ec-leaf.crt");
pub const NOW: i64 = 1_811_808_000;
pub const NODE: &str = "node-1";

/// The DER of the first CERTIFICATE block of `pem`.
pub fn der_of(pem: &[u8]) -> Vec<u8> {
    let mut buf = vec![0u8; pem.len()];
    let n = kubeboot::pem::decode_first(pem, "CERTIFICATE", &mut buf).unwrap().len();
    buf.truncate(n);
    buf
}

/// rustls-webpki's validation of a client certificate, as one iteration of the benches: the leaf
/// DER is parsed, the trust anchors were extracted once by the caller.
pub fn webpki_client(leaf: &[u8], anchors: &[TrustAnchor<'_>], time: UnixTime) {
    let leaf_der = CertificateDer::from(black_box(leaf));
    let ee = webpki::EndEntityCert::try_from(&leaf_der).unwrap();
    ee.verify_for_usage(
        webpki::ALL_VERIFICATION_ALGS,
        black_box(anchors),
        &[],
        time,
        webpki::KeyUsage::client_auth(),
        None,
        None,
    )
    .map(|_| ())
    .unwrap();
}

/// rustls-webpki's validation with the trust anchor extracted from the CA's DER on every call:
/// the like-for-like row for [`kubeboot_der`] (which parses the CA on every call).
pub fn webpki_client_ca_per_call(leaf: &[u8], ca: &[u8], time: UnixTime) {
    let ca_der = CertificateDer::from(black_box(ca));
    let anchors = [webpki::anchor_from_trusted_cert(&ca_der).unwrap()];
    webpki_client(leaf, &anchors, time);
}

/// openssl's `X509::verify` as one iteration of the benches: the signature check only, the leaf
/// and the CA's key parsed beforehand by the caller.
pub fn openssl_verify(
    leaf: &openssl::x509::X509,
    ca_key: &openssl::pkey::PKey<openssl::pkey::Public>,
) {
    assert!(black_box(leaf).verify(ca_key).unwrap());
}

/// kubeboot's validation as one iteration of the benches: the leaf and the CA from DER, the CA
/// parsed on every call.
pub fn kubeboot_der(v: &dyn SignatureVerifier, leaf: &[u8], ca: &[u8], expected: &Expected<'_>) {
    black_box(verify_issued_der_with(v, black_box(leaf), &[], &[ca], expected, NOW).unwrap());
}

/// The same with the CA parsed once into an [`Anchor`] by the caller (what an agent keeps across
/// rotations): the like-for-like row for rustls-webpki's trust anchor.
pub fn kubeboot_anchored(
    v: &dyn SignatureVerifier,
    leaf: &[u8],
    anchors: &[Anchor<'_>],
    expected: &Expected<'_>,
) {
    black_box(
        verify_issued_der_anchored(v, black_box(leaf), &[], black_box(anchors), expected, NOW)
            .unwrap(),
    );
}

/// The subject of the benches' client CSR for rcgen (O=system:nodes, CN=system:node:node-1).
pub fn rcgen_params() -> rcgen::CertificateParams {
    let mut params = rcgen::CertificateParams::new(Vec::<String>::new()).unwrap();
    let mut dn = rcgen::DistinguishedName::new();
    dn.push(rcgen::DnType::OrganizationName, "system:nodes");
    dn.push(rcgen::DnType::CommonName, "system:node:node-1");
    params.distinguished_name = dn;
    params
}

/// (tbs, signature, issuer SPKI DER, issuer subjectPublicKey bytes) of a leaf and its CA, for
/// the bare signature operations.
pub fn parts(leaf: &[u8], ca: &[u8]) -> (Vec<u8>, Vec<u8>, Vec<u8>, Vec<u8>) {
    use der::{Decode, Encode};
    let leaf = x509_cert::Certificate::from_der(leaf).unwrap();
    let ca = x509_cert::Certificate::from_der(ca).unwrap();
    let spki = ca.tbs_certificate().subject_public_key_info();
    (
        leaf.tbs_certificate().to_der().unwrap(),
        leaf.signature().raw_bytes().to_vec(),
        spki.to_der().unwrap(),
        spki.subject_public_key.raw_bytes().to_vec(),
    )
}
