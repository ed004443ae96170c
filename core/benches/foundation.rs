//! Foundation benchmarks: CSR build with a given key, key generation, the node-csr name and the
//! CSR object. Run: `cargo bench -p kubeboot --bench foundation`.

use criterion::{Criterion, criterion_group, criterion_main};
use std::hint::black_box;

use kubeboot::api::{CsrObject, ObjectName, SIGNER_CLIENT, USAGES_CLIENT_EC, node_csr_name};
use kubeboot::csr::CsrBuilder;
use kubeboot::key::NodeKey;

const K1: &[u8] = include_bytes!("../tests/data/p256.key");

fn csr(c: &mut Criterion) {
    let key = NodeKey::from_pem(K1).unwrap();
    let mut g = c.benchmark_group("csr");
    g.bench_function("build_der_key_given", |b| {
        let mut buf = [0u8; 1024];
        b.iter(|| {
            let csr = CsrBuilder::client(black_box("node-1")).unwrap();
            black_box(csr.write_der(&key, &mut buf).unwrap())
        })
    });
    g.bench_function("build_pem_key_given", |b| {
        let mut buf = [0u8; 2048];
        b.iter(|| {
            let csr = CsrBuilder::client(black_box("node-1")).unwrap();
            black_box(csr.write_pem(&key, &mut buf).unwrap())
        })
    });
    g.bench_function("keygen_and_build_der", |b| {
        let mut buf = [0u8; 1024];
        let mut seed = [7u8; 32];
        b.iter(|| {
            seed[0] = seed[0].wrapping_add(1);
            let key = NodeKey::from_entropy(&seed).unwrap();
            let csr = CsrBuilder::client("node-1").unwrap();
            black_box(csr.write_der(&key, &mut buf).unwrap())
        })
    });
    g.bench_function("sign_only", |b| {
        b.iter(|| black_box(key.sign(black_box(b"0123456789abcdef"))))
    });
    g.finish();

    let mut g = c.benchmark_group("object");
    let mut pem = [0u8; 2048];
    let n = CsrBuilder::client("node-1").unwrap().write_pem(&key, &mut pem).unwrap();
    let spki = key.public_key_spki();
    g.bench_function("node_csr_name", |b| {
        b.iter(|| {
            black_box(node_csr_name(
                &spki,
                "system:node:node-1",
                &["system:nodes"],
                &USAGES_CLIENT_EC,
            ))
        })
    });
    g.bench_function("write_json", |b| {
        let mut json = [0u8; 4096];
        b.iter(|| {
            let obj = CsrObject::new(
                ObjectName::Fixed("node-csr-x"),
                &pem[..n],
                SIGNER_CLIENT,
                &USAGES_CLIENT_EC,
                None,
            )
            .unwrap();
            black_box(obj.write_json(&mut json).unwrap())
        })
    });
    g.finish();
}

fn token(c: &mut Criterion) {
    use kubeboot::token::BootstrapToken;
    let mut g = c.benchmark_group("token");
    g.bench_function("parse", |b| {
        b.iter(|| black_box(BootstrapToken::parse(black_box("abcdef.0123456789abcdef")).unwrap()))
    });
    g.bench_function("parse_reject", |b| {
        b.iter(|| black_box(BootstrapToken::parse(black_box("abcdef.0123456789abcdeF")).is_err()))
    });
    g.finish();
}

criterion_group!(benches, csr, token);
criterion_main!(benches);
