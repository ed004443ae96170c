//! The ring host backend against the portable one: same CSR bytes where deterministic, signatures
//! that verify both ways (and with OpenSSL), the same verdict on every validation case, and no
//! heap on the P-256 paths.

mod common;

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;
use std::process::Command;

use kubeboot::backend::ring::{Ring, RingSigner};
use kubeboot::backend::{SignatureVerifier, Software, Verdict};
use kubeboot::csr::CsrBuilder;
use kubeboot::key::{NodeKey, P256Signer};
use kubeboot::verify::{self, Expected, Profile};

struct Counting;

thread_local! {
    static ALLOCS: Cell<usize> = const { Cell::new(0) };
}

// SAFETY: defers to the system allocator; only counts calls made on the current thread.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        let _ = ALLOCS.try_with(|c| c.set(c.get() + 1));
        // SAFETY: same contract as the caller's.
        unsafe { System.alloc(layout) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: same contract as the caller's.
        unsafe { System.dealloc(ptr, layout) }
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        let _ = ALLOCS.try_with(|c| c.set(c.get() + 1));
        // SAFETY: same contract as the caller's.
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

#[global_allocator]
static GLOBAL: Counting = Counting;

fn allocations<R>(f: impl FnOnce() -> R) -> (usize, R) {
    let before = ALLOCS.with(Cell::get);
    let r = f();
    (ALLOCS.with(Cell::get) - before, r)
}

const K1: &[u8] = include_bytes!("data/p256.key");
const EC_CA: &[u8] = include_bytes!("data/ec-ca.crt");
const EC_LEAF: &[u8] = include_bytes!("data/ec-leaf.crt");
const RSA_CA: &[u8] = include_bytes!("data/rsa-ca.crt");
const RSA_LEAF: &[u8] = include_bytes!("data/rsa-leaf.crt");
const NOW: i64 = 1_811_808_000;

/// Split a CSR DER into (TBS, r || s) with x509-cert.
fn csr_parts(der: &[u8]) -> (Vec<u8>, [u8; 64]) {
    use der::{Decode, Encode};
    let req = x509_cert::request::CertReq::from_der(der).unwrap();
    let tbs = req.info.to_der().unwrap();
    let sig = p256::ecdsa::Signature::from_der(req.signature.raw_bytes()).unwrap();
    (tbs, sig.to_bytes().into())
}

fn builders() -> Vec<CsrBuilder<'static>> {
    static IPS: std::sync::OnceLock<[std::net::IpAddr; 2]> = std::sync::OnceLock::new();
    let ips = IPS.get_or_init(|| ["10.0.0.1".parse().unwrap(), "fd00::1".parse().unwrap()]);
    vec![
        CsrBuilder::client("node-1").unwrap(),
        CsrBuilder::client("worker-a.example.com").unwrap(),
        CsrBuilder::serving("node-1", &["node-1.example.com", "node-1"], ips).unwrap(),
    ]
}

#[test]
fn csr_tbs_identical_and_signatures_verify_both_ways() {
    let key = NodeKey::from_pem(K1).unwrap();
    let ring = RingSigner::from_node_key(&key).unwrap();
    assert_eq!(ring.public_key_spki(), key.public_key_spki());
    let point = key.public_point();
    for b in builders() {
        let mut a = [0u8; 2048];
        let mut r = [0u8; 2048];
        let na = b.write_der(&key, &mut a).unwrap();
        let nr = b.write_der(&ring, &mut r).unwrap();
        let (tbs_a, rs_a) = csr_parts(&a[..na]);
        let (tbs_r, rs_r) = csr_parts(&r[..nr]);
        assert_eq!(tbs_a, tbs_r, "TBS differs for {}", b.node_name());
        // ring's signature checked by p256, p256's by ring; and each by itself.
        assert_eq!(Software.p256_sha256(&point, &tbs_r, &rs_r), Verdict::Valid);
        assert_eq!(Ring.p256_sha256(&point, &tbs_a, &rs_a), Verdict::Valid);
        assert_eq!(Ring.p256_sha256(&point, &tbs_r, &rs_r), Verdict::Valid);
        // A changed message fails under both.
        let mut bad = tbs_r.clone();
        *bad.last_mut().unwrap() ^= 1;
        assert_eq!(Software.p256_sha256(&point, &bad, &rs_r), Verdict::Invalid);
        assert_eq!(Ring.p256_sha256(&point, &bad, &rs_r), Verdict::Invalid);
        // The envelope around the signature is the same code: same length up to the DER
        // signature's own length variation (r, s lose or gain a leading zero).
        assert!(na.abs_diff(nr) <= 2, "{na} vs {nr}");
        // ring signs with a random nonce: two signatures differ, both valid.
        let mut r2 = [0u8; 2048];
        let n2 = b.write_der(&ring, &mut r2).unwrap();
        assert_ne!(&r[..nr], &r2[..n2]);
    }
}

#[test]
fn ring_csr_verifies_with_openssl() {
    let key = NodeKey::from_pem(K1).unwrap();
    let ring = RingSigner::from_node_key(&key).unwrap();
    let dir = std::env::temp_dir().join(format!("kubeboot-backend-ring-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    for (i, b) in builders().into_iter().enumerate() {
        let mut pem = [0u8; 4096];
        let n = b.write_pem(&ring, &mut pem).unwrap();
        let path = dir.join(format!("csr{i}.pem"));
        std::fs::write(&path, &pem[..n]).unwrap();
        let out = Command::new("openssl")
            .args(["req", "-verify", "-noout", "-in"])
            .arg(&path)
            .output()
            .unwrap();
        let text = |o: &std::process::Output| {
            format!("{}{}", String::from_utf8_lossy(&o.stdout), String::from_utf8_lossy(&o.stderr))
        };
        assert!(out.status.success(), "{}", text(&out));
        assert!(text(&out).contains("verify OK"), "{}", text(&out));
        // Corrupt one signature byte: OpenSSL must refuse.
        let mut der = [0u8; 2048];
        let nd = b.write_der(&ring, &mut der).unwrap();
        der[nd - 1] ^= 0x01;
        let bad = dir.join(format!("csr{i}-bad.der"));
        std::fs::write(&bad, &der[..nd]).unwrap();
        let out = Command::new("openssl")
            .args(["req", "-verify", "-noout", "-inform", "der", "-in"])
            .arg(&bad)
            .output()
            .unwrap();
        // OpenSSL 3.0 exits 0 on a bad self-signature; it says so on stderr.
        assert!(!text(&out).contains("verify OK"), "{}", text(&out));
        assert!(text(&out).contains("verify failure"), "{}", text(&out));
    }
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn ring_key_writes_the_same_sec1() {
    let g = RingSigner::generate().unwrap();
    let k = g.to_node_key().unwrap();
    assert_eq!(k.public_point(), g.public_point());
    let again = RingSigner::from_node_key(&k).unwrap();
    assert_eq!(again.public_point(), g.public_point());
}

fn verify_both(
    leaf_pem: &[u8],
    ca_pem: &[u8],
    exp: &Expected<'_>,
    now: i64,
) -> Result<verify::Verified, kubeboot::Error> {
    let mut s1 = vec![0u8; 64 * 1024];
    let mut s2 = vec![0u8; 64 * 1024];
    let a = verify::verify_issued_with(&Software, leaf_pem, ca_pem, exp, now, &mut s1);
    let b = verify::verify_issued_with(&Ring, leaf_pem, ca_pem, exp, now, &mut s2);
    assert_eq!(a, b, "backends disagree");
    // The default entry point is the software one.
    let mut s3 = vec![0u8; 64 * 1024];
    assert_eq!(verify::verify_issued(leaf_pem, ca_pem, exp, now, &mut s3), a);
    a
}

#[test]
fn fixtures_validate_with_both() {
    let key = NodeKey::from_pem(K1).unwrap();
    let spki = key.public_key_spki();
    let exp = Expected { node_name: "node-1", public_key: &spki, profile: Profile::Client };
    assert!(verify_both(EC_LEAF, EC_CA, &exp, NOW).is_ok());
    assert!(verify_both(RSA_LEAF, RSA_CA, &exp, NOW).is_ok());
    assert!(verify_both(EC_LEAF, RSA_CA, &exp, NOW).is_err());
    assert!(verify_both(RSA_LEAF, EC_CA, &exp, NOW).is_err());
}

fn pem_to_der(pem: &[u8]) -> Vec<u8> {
    let mut buf = vec![0u8; pem.len()];
    let n = kubeboot::pem::decode_first(pem, "CERTIFICATE", &mut buf).unwrap().len();
    buf.truncate(n);
    buf
}

/// Every single-byte corruption of the signature and of the end of the TBS: same verdict.
#[test]
fn corruption_sweep_same_verdicts() {
    let key = NodeKey::from_pem(K1).unwrap();
    let spki = key.public_key_spki();
    let exp = Expected { node_name: "node-1", public_key: &spki, profile: Profile::Client };
    for (leaf, ca) in [(EC_LEAF, EC_CA), (RSA_LEAF, RSA_CA)] {
        let leaf = pem_to_der(leaf);
        let ca = pem_to_der(ca);
        let (mut valid, mut invalid) = (0, 0);
        // The last 300 bytes cover the signature (RSA: 256 bytes) and the end of the TBS.
        for i in leaf.len().saturating_sub(300)..leaf.len() {
            for flip in [0x01u8, 0x80] {
                let mut bad = leaf.clone();
                bad[i] ^= flip;
                let a = verify::verify_issued_der_with(&Software, &bad, &[], &[&ca], &exp, NOW);
                let b = verify::verify_issued_der_with(&Ring, &bad, &[], &[&ca], &exp, NOW);
                assert_eq!(a, b, "byte {i} flip {flip:#x}");
                if a.is_ok() { valid += 1 } else { invalid += 1 }
            }
        }
        assert!(invalid > 500, "{valid} valid, {invalid} invalid");
    }
}

fn matrix() -> common::Generated {
    common::generate("backend-ring-matrix", "gen_certs.py")
}

/// Every case of the verify matrix against every CA bundle, both profiles, three times: the two
/// backends agree everywhere, and the expected successes and failures are all represented.
#[test]
fn verify_matrix_same_verdicts() {
    let m = matrix();
    let mut cases = Vec::new();
    let mut cas = Vec::new();
    for entry in std::fs::read_dir(&m.dir).unwrap() {
        let path = entry.unwrap().path();
        let name = path.file_name().unwrap().to_string_lossy().into_owned();
        let bytes = std::fs::read(&path).unwrap();
        if name.starts_with("case_") && name.ends_with(".pem") {
            cases.push((name, bytes));
        } else if name.starts_with("case_") && name.ends_with(".der") {
            let mut pem = vec![0u8; 8192];
            let n = kubeboot::pem::encode("CERTIFICATE", &bytes, &mut pem).unwrap();
            pem.truncate(n);
            cases.push((name, pem));
        } else if name.starts_with("ca_") {
            cas.push((name, bytes));
        }
    }
    assert!(cases.len() > 40 && cas.len() > 10, "{} cases, {} CAs", cases.len(), cas.len());
    let dns = ["NODE-1.example", "node-1"];
    let ips: [std::net::IpAddr; 2] = ["10.0.0.1".parse().unwrap(), "fd00::1".parse().unwrap()];
    let profiles = [Profile::Client, Profile::Serving { dns: &dns, ips: &ips }];
    let mut reasons = std::collections::BTreeMap::<String, usize>::new();
    for (_case, leaf) in &cases {
        for (_ca, ca) in &cas {
            for profile in profiles {
                let exp = Expected { node_name: "node-1", public_key: &m.spki, profile };
                let key = match verify_both(leaf, ca, &exp, m.now) {
                    Ok(_) => "ok".to_string(),
                    Err(kubeboot::Error::Verify(e)) => format!("{:?}", e.reason),
                    Err(e) => format!("{e:?}"),
                };
                *reasons.entry(key).or_default() += 1;
            }
        }
    }
    eprintln!("verdicts: {reasons:?}");
    for want in ["ok", "BadSignature", "UnsupportedAlgorithm", "Untrusted"] {
        assert!(reasons.contains_key(want), "no {want} in {reasons:?}");
    }
}

#[test]
fn p256_paths_allocate_nothing_with_ring() {
    let key = NodeKey::from_pem(K1).unwrap();
    let (n, ring) = allocations(|| RingSigner::from_node_key(&key).unwrap());
    assert_eq!(n, 0, "RingSigner::from_node_key");
    let mut der = [0u8; 1024];
    let mut pem = [0u8; 2048];
    let (n, _) = allocations(|| CsrBuilder::client("node-1").unwrap().write_der(&ring, &mut der));
    assert_eq!(n, 0, "CSR DER with ring");
    let (n, _) = allocations(|| CsrBuilder::client("node-1").unwrap().write_pem(&ring, &mut pem));
    assert_eq!(n, 0, "CSR PEM with ring");
    let (n, _) = allocations(|| {
        let k = NodeKey::from_entropy(&[0x5a; 32]).unwrap();
        let r = RingSigner::from_node_key(&k).unwrap();
        CsrBuilder::client("node-1").unwrap().write_der(&r, &mut der).unwrap()
    });
    assert_eq!(n, 0, "keygen + CSR with ring");
    let spki = key.public_key_spki();
    let exp = Expected { node_name: "node-1", public_key: &spki, profile: Profile::Client };
    let mut scratch = [0u8; 4096];
    let (n, r) =
        allocations(|| verify::verify_issued_with(&Ring, EC_LEAF, EC_CA, &exp, NOW, &mut scratch));
    assert!(r.is_ok());
    assert_eq!(n, 0, "P-256 validation with ring");
}
