//! Issued-certificate validation next to the bare signature check of the same backend, in one run:
//! the difference is our parsing and checking overhead.
//! Run: `cargo bench -p kubeboot --features std --bench validation`.

use criterion::{Criterion, criterion_group, criterion_main};
use der::{Decode, Encode};
use std::hint::black_box;

use kubeboot::backend::Software;
use kubeboot::key::NodeKey;
use kubeboot::verify::{
    Anchor, Expected, Profile, verify_issued, verify_issued_der, verify_issued_der_anchored,
};

const K1: &[u8] = include_bytes!("../tests/data/p256.key");
const EC_CA: &[u8] = include_bytes!("../tests/data/ec-ca.crt");
const EC_LEAF: &[u8] = include_bytes!("../tests/data/ec-leaf.crt");
const RSA_CA: &[u8] = include_bytes!("../tests/data/rsa-ca.crt");
const RSA_LEAF: &[u8] = include_bytes!("../tests/data/rsa-leaf.crt");
const NOW: i64 = 1_811_808_000;

fn der_of(pem: &[u8]) -> Vec<u8> {
    let mut buf = vec![0u8; pem.len()];
    let n = kubeboot::pem::decode_first(pem, "CERTIFICATE", &mut buf).unwrap().len();
    buf.truncate(n);
    buf
}

/// (to-be-signed bytes, signature bytes, issuer SPKI DER)
fn parts(leaf_pem: &[u8], ca_pem: &[u8]) -> (Vec<u8>, Vec<u8>, Vec<u8>) {
    let leaf = x509_cert::Certificate::from_der(&der_of(leaf_pem)).unwrap();
    let ca = x509_cert::Certificate::from_der(&der_of(ca_pem)).unwrap();
    (
        leaf.tbs_certificate().to_der().unwrap(),
        leaf.signature().raw_bytes().to_vec(),
        ca.tbs_certificate().subject_public_key_info().to_der().unwrap(),
    )
}

fn validation(c: &mut Criterion) {
    let key = NodeKey::from_pem(K1).unwrap();
    let spki = key.public_key_spki();
    let expected = Expected { node_name: "node-1", public_key: &spki, profile: Profile::Client };

    let mut g = c.benchmark_group("ec_p256_chain");
    let (tbs, sig, ca_spki) = parts(EC_LEAF, EC_CA);
    let vk = {
        let info = spki::SubjectPublicKeyInfoRef::from_der(&ca_spki).unwrap();
        p256::ecdsa::VerifyingKey::from_sec1_bytes(info.subject_public_key.raw_bytes()).unwrap()
    };
    g.bench_function("bare_signature_verify", |b| {
        use p256::ecdsa::signature::Verifier;
        b.iter(|| {
            let s = p256::ecdsa::DerSignature::from_bytes(black_box(&sig)).unwrap();
            vk.verify(black_box(&tbs), &s).unwrap()
        })
    });
    let (leaf_der, ca_der) = (der_of(EC_LEAF), der_of(EC_CA));
    g.bench_function("kubeboot_verify_issued_der", |b| {
        b.iter(|| black_box(verify_issued_der(&leaf_der, &[], &[&ca_der], &expected, NOW).unwrap()))
    });
    let anchor = [Anchor::from_der(&ca_der).unwrap()];
    g.bench_function("kubeboot_verify_issued_der_anchored", |b| {
        b.iter(|| {
            black_box(
                verify_issued_der_anchored(&Software, &leaf_der, &[], &anchor, &expected, NOW)
                    .unwrap(),
            )
        })
    });
    g.bench_function("kubeboot_verify_issued_pem", |b| {
        let mut scratch = [0u8; 4096];
        b.iter(|| black_box(verify_issued(EC_LEAF, EC_CA, &expected, NOW, &mut scratch).unwrap()))
    });
    g.finish();

    let mut g = c.benchmark_group("rsa2048_ca_chain");
    let (tbs, sig, ca_spki) = parts(RSA_LEAF, RSA_CA);
    let rsa_vk = {
        use rsa::pkcs8::DecodePublicKey;
        let pk = rsa::PublicKey::from_public_key_der(&ca_spki).unwrap();
        rsa::pkcs1v15::VerifyingKey::<sha2::Sha256>::new(pk)
    };
    g.bench_function("bare_signature_verify", |b| {
        use rsa::signature::Verifier;
        b.iter(|| {
            let s = rsa::pkcs1v15::Signature::try_from(black_box(sig.as_slice())).unwrap();
            rsa_vk.verify(black_box(&tbs), &s).unwrap()
        })
    });
    let (leaf_der, ca_der) = (der_of(RSA_LEAF), der_of(RSA_CA));
    g.bench_function("kubeboot_verify_issued_der", |b| {
        b.iter(|| black_box(verify_issued_der(&leaf_der, &[], &[&ca_der], &expected, NOW).unwrap()))
    });
    g.finish();
}

criterion_group!(benches, validation);
criterion_main!(benches);
