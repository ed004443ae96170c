//! Paired, interleaved timing: kubeboot's overhead over the bare signature operation of the same
//! backend, and kubeboot against its closest peer, each as a ratio measured round by round.
//!
//! Criterion times one function after another, so on a shared machine a load change between two
//! rows shows up as a difference of 10–20 %, more than the 5 % overhead target. Here each round
//! times a batch of A, a batch of B, a batch of B and a batch of A (ABBA, cancelling a linear
//! drift inside the round), the round's ratio is (B1 + B2) / (A1 + A2), and the report is the
//! median and the quartiles of several hundred such ratios: a load change affects both sides of a
//! round alike. Driven by `bench/run` (`overhead.txt`, read by `bench/report.py`).
//!
//! Run: `cargo bench -p kubeboot --features ring --bench overhead [-- ROUNDS]`.
//! `-- --count NAME N` runs one function N times untimed: `bench/run` runs it under callgrind
//! (N and 3N, the difference divided by 2N) for instructions per call, which no load changes.
//! Output: one line per pair, `pair <name> <A> <B> <median B/A> <95 % CI low> <CI high> <q1> <q3>
//! <rounds> <batch size> <A ns/op> <B ns/op>`.

use std::hint::black_box;
use std::time::{Duration, Instant};

use kubeboot::backend::Software;
use kubeboot::backend::ring::{Ring, RingSigner};
use kubeboot::csr::CsrBuilder;
use kubeboot::key::{NodeKey, P256Signer};
use kubeboot::verify::{Anchor, Expected, Profile};

mod shared;
use shared::{
    EC_CA, EC_LEAF, K1, NODE, NOW, der_of, kubeboot_anchored, kubeboot_der, openssl_verify, parts,
    rcgen_params, webpki_client, webpki_client_ca_per_call,
};

/// Target duration of one batch.
const BATCH: Duration = Duration::from_micros(500);

fn time(n: u32, f: &mut dyn FnMut()) -> f64 {
    let t = Instant::now();
    for _ in 0..n {
        f();
    }
    t.elapsed().as_nanos() as f64
}

fn quantile(sorted: &[f64], q: f64) -> f64 {
    let pos = q * (sorted.len() - 1) as f64;
    let (lo, hi) = (pos.floor() as usize, pos.ceil() as usize);
    sorted[lo] + (sorted[hi] - sorted[lo]) * (pos - lo as f64)
}

/// Time `a` and `b` in ABBA rounds; print the median and quartiles of the per-round B/A ratios.
fn pair(
    name: &str,
    (an, a): (&str, &mut dyn FnMut()),
    (bn, b): (&str, &mut dyn FnMut()),
    rounds: usize,
) {
    // Warm up both, then size the batch so that one batch of the slower takes about BATCH.
    let warm = Instant::now();
    while warm.elapsed() < Duration::from_millis(200) {
        a();
        b();
    }
    let per = time(20, a).max(time(20, b)) / 20.0;
    let n = ((BATCH.as_nanos() as f64 / per) as u32).max(1);
    let (mut ratios, mut ta, mut tb) = (Vec::with_capacity(rounds), 0.0, 0.0);
    for _ in 0..rounds {
        let a1 = time(n, a);
        let b1 = time(n, b);
        let b2 = time(n, b);
        let a2 = time(n, a);
        ratios.push((b1 + b2) / (a1 + a2));
        ta += a1 + a2;
        tb += b1 + b2;
    }
    ratios.sort_by(f64::total_cmp);
    let ops = (2 * n as usize * rounds) as f64;
    // 95 % confidence interval of the median from the order statistics (distribution-free):
    // ranks rounds/2 -+ 1.96 sqrt(rounds)/2.
    let half = 0.98 * (rounds as f64).sqrt();
    let lo = ((rounds as f64 / 2.0 - half).floor().max(0.0)) as usize;
    let hi = ((rounds as f64 / 2.0 + half).ceil() as usize).min(rounds - 1);
    println!(
        "pair {name} {an} {bn} {:.4} {:.4} {:.4} {:.4} {:.4} {rounds} {n} {:.0} {:.0}",
        quantile(&ratios, 0.5),
        ratios[lo],
        ratios[hi],
        quantile(&ratios, 0.25),
        quantile(&ratios, 0.75),
        ta / ops,
        tb / ops
    );
}

fn main() {
    // `cargo bench` passes `--bench`; a bare number sets the rounds. `--count NAME N` runs one
    // function N times without timing, for an instruction count under callgrind.
    let args: Vec<String> = std::env::args().skip(1).collect();
    let count_mode = args
        .iter()
        .position(|a| a == "--count")
        .map(|i| (args[i + 1].clone(), args[i + 2].parse::<u32>().expect("--count NAME N")));
    let rounds = args.iter().find_map(|a| a.parse().ok()).unwrap_or(400);

    let key = NodeKey::from_pem(K1).unwrap();
    let ring_key = RingSigner::from_node_key(&key).unwrap();
    let mut tbs = [0u8; 512];
    let tbs_len =
        CsrBuilder::client(NODE).unwrap().write_tbs(&key.public_key_spki(), &mut tbs).unwrap();
    let csr_tbs = &tbs[..tbs_len];
    let (mut buf, mut buf2, mut buf3) = ([0u8; 1024], [0u8; 1024], [0u8; 1024]);

    // Validation of the one-level P-256 chain.
    let (leaf, ca) = (der_of(EC_LEAF), der_of(EC_CA));
    let (tbs, sig, _, ca_key) = parts(&leaf, &ca);
    let spki = key.public_key_spki();
    let expected = Expected { node_name: NODE, public_key: &spki, profile: Profile::Client };
    let anchor = [Anchor::from_der(&ca).unwrap()];
    let ring_pk =
        ring::signature::UnparsedPublicKey::new(&ring::signature::ECDSA_P256_SHA256_ASN1, &ca_key);
    let vk = p256::ecdsa::VerifyingKey::from_sec1_bytes(&ca_key).unwrap();
    let ca_der = rustls_pki_types::CertificateDer::from(ca.clone());
    let anchors = [webpki::anchor_from_trusted_cert(&ca_der).unwrap().to_owned()];
    let now = rustls_pki_types::UnixTime::since_unix_epoch(Duration::from_secs(NOW as u64));

    let mut bare_sign_ring = || {
        black_box(ring_key.sign_p256_sha256(black_box(csr_tbs)).unwrap());
    };
    let mut csr_ring = || {
        black_box(
            CsrBuilder::client(black_box(NODE)).unwrap().write_der(&ring_key, &mut buf).unwrap(),
        );
    };
    let mut bare_sign_p256 = || {
        black_box(key.sign(black_box(csr_tbs)));
    };
    let mut csr_p256 = || {
        black_box(CsrBuilder::client(black_box(NODE)).unwrap().write_der(&key, &mut buf2).unwrap());
    };
    let mut bare_ring = || ring_pk.verify(black_box(&tbs), black_box(&sig)).unwrap();
    let mut ours_ring = || kubeboot_der(&Ring, &leaf, &ca, &expected);
    let mut ours_anchored = || kubeboot_anchored(&Ring, &leaf, &anchor, &expected);
    let mut webpki = || webpki_client(&leaf, &anchors, now);
    let mut webpki_ca = || webpki_client_ca_per_call(&leaf, &ca, now);
    // openssl's `X509::verify`: the signature check only, leaf and CA key parsed beforehand (as
    // the `openssl_x509_verify` row of the peers bench).
    let o_leaf = openssl::x509::X509::from_der(&leaf).unwrap();
    let o_ca_key = openssl::x509::X509::from_der(&ca).unwrap().public_key().unwrap();
    let mut openssl = || openssl_verify(&o_leaf, &o_ca_key);
    let mut bare_p256 = || {
        use p256::ecdsa::signature::Verifier;
        let s = p256::ecdsa::DerSignature::from_bytes(black_box(&sig)).unwrap();
        vk.verify(black_box(&tbs), &s).unwrap()
    };
    let mut ours_p256 = || kubeboot_der(&Software, &leaf, &ca, &expected);
    // CSR with key generation: kubeboot (ring keygen) against rcgen (ring keygen).
    let mut rcgen = || {
        let k = rcgen::KeyPair::generate().unwrap();
        black_box(rcgen_params().serialize_request(&k).unwrap().der().len());
    };
    let mut keygen_ring = || {
        let k = RingSigner::generate().unwrap();
        black_box(CsrBuilder::client(NODE).unwrap().write_der(&k, &mut buf3).unwrap());
    };

    if let Some((name, n)) = count_mode {
        let f: &mut dyn FnMut() = match name.as_str() {
            "bare_sign_ring" => &mut bare_sign_ring,
            "csr_ring" => &mut csr_ring,
            "bare_sign_p256" => &mut bare_sign_p256,
            "csr_p256" => &mut csr_p256,
            "bare_verify_ring" => &mut bare_ring,
            "kubeboot_ring" => &mut ours_ring,
            "kubeboot_ring_anchored" => &mut ours_anchored,
            "rustls_webpki" => &mut webpki,
            "rustls_webpki_ca_per_call" => &mut webpki_ca,
            "openssl_x509_verify" => &mut openssl,
            "bare_verify_p256" => &mut bare_p256,
            "kubeboot_p256" => &mut ours_p256,
            "rcgen_keygen" => &mut rcgen,
            "kubeboot_ring_keygen" => &mut keygen_ring,
            other => panic!("--count: unknown function {other}"),
        };
        // Timed too, but only the instruction count matters here (the two clock reads cancel
        // in bench/run's N / 3N difference).
        time(n, f);
        return;
    }

    pair(
        "csr_ring",
        ("bare_sign_ring", &mut bare_sign_ring),
        ("kubeboot_ring", &mut csr_ring),
        rounds,
    );
    pair(
        "csr_p256",
        ("bare_sign_p256", &mut bare_sign_p256),
        ("kubeboot_p256", &mut csr_p256),
        rounds / 4,
    );
    pair(
        "verify_ring",
        ("bare_verify_ring", &mut bare_ring),
        ("kubeboot_ring", &mut ours_ring),
        rounds,
    );
    pair(
        "verify_ring_anchored",
        ("bare_verify_ring", &mut bare_ring),
        ("kubeboot_ring_anchored", &mut ours_anchored),
        rounds,
    );
    pair(
        "verify_webpki",
        ("bare_verify_ring", &mut bare_ring),
        ("rustls_webpki", &mut webpki),
        rounds,
    );
    pair("race_webpki", ("rustls_webpki", &mut webpki), ("kubeboot_ring", &mut ours_ring), rounds);
    pair(
        "race_webpki_ca_per_call",
        ("rustls_webpki_ca_per_call", &mut webpki_ca),
        ("kubeboot_ring", &mut ours_ring),
        rounds,
    );
    pair(
        "race_webpki_anchored",
        ("rustls_webpki", &mut webpki),
        ("kubeboot_ring_anchored", &mut ours_anchored),
        rounds,
    );
    pair(
        "race_openssl_verify",
        ("openssl_x509_verify", &mut openssl),
        ("kubeboot_ring", &mut ours_ring),
        rounds,
    );
    pair(
        "race_openssl_verify_anchored",
        ("openssl_x509_verify", &mut openssl),
        ("kubeboot_ring_anchored", &mut ours_anchored),
        rounds,
    );
    pair(
        "verify_p256",
        ("bare_verify_p256", &mut bare_p256),
        ("kubeboot_p256", &mut ours_p256),
        rounds / 4,
    );
    pair("race_rcgen_keygen", ("rcgen", &mut rcgen), ("kubeboot_ring", &mut keygen_ring), rounds);
}
