//! Issued-certificate validation and CA pins against certificates generated at test time with
//! OpenSSL (keys, pins) and Python `cryptography` (`tests/support/gen_certs.py`).

use std::net::IpAddr;
use std::path::Path;
use std::process::Command;
use std::sync::OnceLock;

use kubeboot::Error;
use kubeboot::backend::Software;
use kubeboot::error::{Detail, Reason, VerifyError};
use kubeboot::pin::{self, CaPin};
use kubeboot::verify::{self, Expected, Profile, Verified};

mod common;
use common::{Generated as Fixture, output as run};

fn fixture() -> &'static Fixture {
    static F: OnceLock<Fixture> = OnceLock::new();
    F.get_or_init(|| common::generate("verify-matrix", "gen_certs.py"))
}

fn read(name: &str) -> Vec<u8> {
    let path = fixture().dir.join(name);
    std::fs::read(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

const DNS: [&str; 2] = ["NODE-1.example", "node-1"];

fn ips() -> [IpAddr; 2] {
    ["10.0.0.1".parse().unwrap(), "fd00::1".parse().unwrap()]
}

fn expected<'a>(profile: Profile<'a>) -> Expected<'a> {
    Expected { node_name: "node-1", public_key: &fixture().spki, profile }
}

fn verify_pem(case: &str, ca: &str, profile: Profile<'_>) -> Result<Verified, Error> {
    let f = fixture();
    let (cert, ca) = (read(case), read(ca));
    pem_both(&cert, &ca, &expected(profile), f.now)
}

/// `verify_issued` (CAs parsed per call) and, with the same inputs, `TrustedCas::from_pem` +
/// `verify_issued_anchored` (CAs parsed once), with the portable backend and (feature `ring`) the
/// host backend: every test of the matrix checks that all of them agree. Returns the first.
#[track_caller]
fn pem_both(cert: &[u8], ca: &[u8], exp: &Expected<'_>, now: i64) -> Result<Verified, Error> {
    let mut scratch = vec![0u8; verify::scratch_len(cert, ca)];
    let old = verify::verify_issued(cert, ca, exp, now, &mut scratch);
    let mut ca_scratch = vec![0u8; verify::scratch_len(b"", ca)];
    let mut cert_scratch = vec![0u8; verify::scratch_len(cert, b"")];
    let new =
        verify::TrustedCas::<{ verify::MAX_CAS }>::from_pem(ca, &mut ca_scratch).and_then(|cas| {
            verify::verify_issued_anchored(&Software, cert, &cas, exp, now, &mut cert_scratch)
        });
    assert_eq!(old, new, "verify_issued vs TrustedCas + verify_issued_anchored");
    // Without the path (the agent's trust by proof): never stricter, the same window when the
    // path is there, and the same verdict on the leaf's own defects (the CA's are not looked
    // at: a path error may pass).
    let un = verify::verify_issued_unanchored(cert, exp, now, &mut cert_scratch);
    match (&old, &un) {
        (Ok(a), Ok(b)) => assert_eq!((a.not_before, a.not_after), (b.not_before, b.not_after)),
        (Ok(_), Err(e)) => panic!("unanchored refused what the path accepts: {e:?}"),
        (Err(Error::Verify(v)), _)
            if matches!(
                v.reason,
                Reason::KeyMismatch | Reason::SubjectMismatch | Reason::WrongUsage | Reason::IsCa
            ) =>
        {
            assert_eq!(&old, &un, "a defect of the leaf, with or without the path")
        }
        _ => {}
    }
    #[cfg(feature = "ring")]
    {
        use kubeboot::backend::ring::Ring;
        let mut scratch = vec![0u8; verify::scratch_len(cert, ca)];
        let ring = verify::verify_issued_with(&Ring, cert, ca, exp, now, &mut scratch);
        assert_eq!(old, ring, "Software vs Ring");
        let mut ca_scratch = vec![0u8; verify::scratch_len(b"", ca)];
        let cas = verify::TrustedCas::<2>::from_pem(ca, &mut ca_scratch);
        let ring_new = cas.and_then(|cas| {
            verify::verify_issued_anchored(&Ring, cert, &cas, exp, now, &mut cert_scratch)
        });
        // A smaller TrustedCas: only bundles of more than 2 CAs may differ (Malformed).
        if cert_blocks(ca) <= 2 {
            assert_eq!(old, ring_new, "Software vs Ring, anchored");
        }
    }
    old
}

#[cfg(feature = "ring")]
fn cert_blocks(pem: &[u8]) -> usize {
    kubeboot::pem::blocks(pem).filter(|b| matches!(b, Ok(b) if b.label == "CERTIFICATE")).count()
}

/// `verify_issued_der` and `Anchor::from_der` + `verify_issued_der_anchored` (and, with feature
/// `ring`, both with the host backend) agree; returns the first.
#[track_caller]
fn der_both(
    leaf: &[u8],
    inter: &[&[u8]],
    cas: &[&[u8]],
    exp: &Expected<'_>,
    now: i64,
) -> Result<Verified, VerifyError> {
    let old = verify::verify_issued_der(leaf, inter, cas, exp, now);
    let anchored = |v: &dyn kubeboot::backend::SignatureVerifier| {
        let cas = verify::TrustedCas::<{ verify::MAX_CAS }>::from_der(cas)?;
        verify::verify_issued_der_anchored(v, leaf, inter, &cas, exp, now)
    };
    assert_eq!(old, anchored(&Software), "verify_issued_der vs verify_issued_der_anchored");
    // The same through a caller-owned slice of anchors.
    let anchors: Result<Vec<verify::Anchor<'_>>, _> =
        cas.iter().map(|d| verify::Anchor::from_der(d)).collect();
    let sliced = anchors
        .and_then(|a| verify::verify_issued_der_anchored(&Software, leaf, inter, &a, exp, now));
    if cas.len() <= verify::MAX_CAS {
        assert_eq!(old, sliced, "verify_issued_der vs &[Anchor]");
    }
    #[cfg(feature = "ring")]
    {
        use kubeboot::backend::ring::Ring;
        assert_eq!(old, verify::verify_issued_der_with(&Ring, leaf, inter, cas, exp, now));
        assert_eq!(old, anchored(&Ring), "Software vs Ring, anchored");
    }
    old
}

fn client(case: &str, ca: &str) -> Result<Verified, Error> {
    verify_pem(case, ca, Profile::Client)
}

fn serving(case: &str, ca: &str) -> Result<Verified, Error> {
    let ips = ips();
    verify_pem(case, ca, Profile::Serving { dns: &DNS, ips: &ips })
}

#[track_caller]
fn reason(r: Result<Verified, Error>) -> Reason {
    match r {
        Err(Error::Verify(v)) => v.reason,
        other => panic!("expected a verification error, got {other:?}"),
    }
}

#[track_caller]
fn field(r: Result<Verified, Error>, reason: Reason, field: &str) {
    match r {
        Err(Error::Verify(VerifyError { reason: got, detail: Detail::Field(f) })) => {
            assert_eq!((got, f), (reason, field));
        }
        other => panic!("expected {reason:?}/{field}, got {other:?}"),
    }
}

fn openssl_subject(ca: &str) -> String {
    let out = run(Command::new("openssl")
        .args(["x509", "-noout", "-subject", "-nameopt", "RFC2253", "-in"])
        .arg(fixture().dir.join(ca)));
    String::from_utf8(out).unwrap().trim().trim_start_matches("subject=").to_string()
}

fn unix_of(date: &str) -> i64 {
    let out = run(Command::new("date").args(["-u", "-d", date, "+%s"]));
    String::from_utf8(out).unwrap().trim().parse().unwrap()
}

// ---------------------------------------------------------------------------------------------

#[test]
fn ec_ok_and_fields() {
    let f = fixture();
    let v = client("case_ok_ec.pem", "ca_ec.pem").unwrap();
    assert_eq!(v.not_before, f.now - 300);
    assert_eq!(v.not_after, f.now + 365 * 86_400);
    assert_eq!(v.ca_subject.as_str(), openssl_subject("ca_ec.pem"));
    assert_eq!(v.ca_subject.as_str(), "CN=kubernetes");
    assert_eq!((v.ca_index, v.intermediates_used), (0, 0));
    client("case_ok_utf8.pem", "ca_ec.pem").unwrap();
}

#[test]
fn generalized_time_not_after() {
    let v = client("case_ok_long.pem", "ca_ec.pem").unwrap();
    assert_eq!(v.not_after, unix_of("2051-02-03 04:05:06"));
}

#[cfg(feature = "rsa")]
#[test]
fn rsa_issuers() {
    for case in ["case_ok_rsa2048.pem", "case_ok_rsa2048_sha384.pem", "case_ok_rsa2048_sha512.pem"]
    {
        client(case, "ca_rsa2048.pem").unwrap_or_else(|e| panic!("{case}: {e}"));
    }
    let v = client("case_ok_rsa4096.pem", "ca_rsa4096.pem").unwrap();
    assert_eq!(v.ca_subject.as_str(), openssl_subject("ca_rsa4096.pem"));
    assert_eq!(v.ca_subject.as_str(), r"CN=rsa4096 CA,O=Example\, Inc.");
    // Below 2048 bits.
    assert_eq!(reason(client("case_rsa1024.pem", "ca_rsa1024.pem")), Reason::UnsupportedAlgorithm);
    // A flipped signature bit.
    let der = read("case_tampered_rsa.der");
    let ca = pem_der(&read("ca_rsa2048.pem"));
    let exp = expected(Profile::Client);
    let err = der_both(&der, &[], &[&ca], &exp, fixture().now).unwrap_err();
    assert_eq!(err.reason, Reason::BadSignature);
    // The CA's rsaEncryption parameters must be NULL (RFC 3279; Go's x509.ParseCertificate:
    // "RSA key missing NULL parameters"): here the NULL is re-tagged [2] (found by fuzzing).
    let good = pem_der(&read("case_ok_rsa2048.pem"));
    der_both(&good, &[], &[&ca], &exp, fixture().now).unwrap();
    let rsa_null = [0x06, 0x09, 0x2a, 0x86, 0x48, 0x86, 0xf7, 0x0d, 0x01, 0x01, 0x01, 0x05, 0x00];
    let at = ca.windows(rsa_null.len()).position(|w| w == rsa_null).expect("rsaEncryption, NULL");
    let mut odd = ca.clone();
    odd[at + 11] = 0x82;
    let err = der_both(&good, &[], &[&odd], &exp, fixture().now).unwrap_err();
    assert_eq!(err.reason, Reason::UnsupportedAlgorithm);
}

#[cfg(not(feature = "rsa"))]
#[test]
fn rsa_issuers_need_the_feature() {
    for (case, ca) in
        [("case_ok_rsa2048.pem", "ca_rsa2048.pem"), ("case_ok_rsa4096.pem", "ca_rsa4096.pem")]
    {
        assert_eq!(reason(client(case, ca)), Reason::UnsupportedAlgorithm);
    }
}

#[cfg(feature = "p384")]
#[test]
fn p384_issuer() {
    let v = client("case_ok_p384.pem", "ca_p384.pem").unwrap();
    assert_eq!(v.ca_subject.as_str(), "CN=p384-ca");
}

#[cfg(not(feature = "p384"))]
#[test]
fn p384_issuer_needs_the_feature() {
    assert_eq!(reason(client("case_ok_p384.pem", "ca_p384.pem")), Reason::UnsupportedAlgorithm);
}

#[cfg(feature = "sha512")]
#[test]
fn p256_with_sha384_is_accepted() {
    client("case_p256_sha384.pem", "ca_ec.pem").unwrap();
}

#[cfg(not(feature = "sha512"))]
#[test]
fn p256_with_sha384_needs_sha512_linked() {
    assert_eq!(reason(client("case_p256_sha384.pem", "ca_ec.pem")), Reason::UnsupportedAlgorithm);
}

// ---------------------------------------------------------------------------------------------
// Curve / digest pairings, chains made by the openssl CLI (as `openssl x509 -req` signs by
// default), verdicts cross-checked with `openssl verify`.

/// `openssl verify -CAfile ca leaf` succeeds.
fn openssl_verifies(dir: &Path, ca: &str, leaf_pem: &[u8]) -> bool {
    let path = dir.join("to-verify.pem");
    std::fs::write(&path, leaf_pem).unwrap();
    let out = Command::new("openssl")
        .args(["verify", "-x509_strict", "-CAfile"])
        .arg(dir.join(ca))
        .arg(&path)
        .output()
        .unwrap();
    out.status.success()
}

fn to_pem(der: &[u8]) -> Vec<u8> {
    let mut buf = vec![0u8; kubeboot::pem::encoded_len("CERTIFICATE", der.len()).unwrap()];
    let n = kubeboot::pem::encode("CERTIFICATE", der, &mut buf).unwrap();
    buf.truncate(n);
    buf
}

/// Replace every `ecdsa-with-SHAx` OID in `der` by `to` (the same length): the claimed digest
/// changes, and with it the to-be-signed bytes.
fn relabel(der: &[u8], to: u8) -> Vec<u8> {
    const PREFIX: [u8; 9] = [0x06, 0x08, 0x2a, 0x86, 0x48, 0xce, 0x3d, 0x04, 0x03];
    let mut out = der.to_vec();
    let mut hits = 0;
    for i in 0..out.len() - PREFIX.len() {
        if out[i..i + PREFIX.len()] == PREFIX {
            out[i + PREFIX.len()] = to;
            hits += 1;
        }
    }
    assert_eq!(hits, 2, "signatureAlgorithm appears twice");
    out
}

#[test]
fn ecdsa_curve_digest_pairings_match_openssl() {
    let f = fixture();
    let dir = f.dir.join("pairings");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(
        dir.join("leaf.ext"),
        "basicConstraints=critical,CA:FALSE\nkeyUsage=critical,digitalSignature\n\
         extendedKeyUsage=clientAuth\n",
    )
    .unwrap();
    run(Command::new("openssl")
        .args(["req", "-new", "-subj", "/O=system:nodes/CN=system:node:node-1", "-key"])
        .arg(f.dir.join("leaf.key"))
        .arg("-out")
        .arg(dir.join("leaf.csr")));
    for curve in ["P-256", "P-384"] {
        let ca = format!("ca-{curve}.pem");
        run(Command::new("openssl")
            .args(["req", "-x509", "-newkey", "ec", "-pkeyopt"])
            .arg(format!("ec_paramgen_curve:{curve}"))
            .args(["-nodes", "-days", "30", "-subj"])
            .arg(format!("/CN={curve} CA"))
            .args(["-addext", "basicConstraints=critical,CA:TRUE"])
            .args(["-addext", "keyUsage=critical,keyCertSign,cRLSign"])
            .arg("-keyout")
            .arg(dir.join(format!("ca-{curve}.key")))
            .arg("-out")
            .arg(dir.join(&ca)));
    }
    let mut checked = 0;
    for (curve, digest) in [
        ("P-256", "sha256"),
        ("P-256", "sha384"),
        ("P-256", "sha512"),
        ("P-384", "sha256"),
        ("P-384", "sha384"),
        ("P-384", "sha512"),
    ] {
        let ca = format!("ca-{curve}.pem");
        let leaf_path = dir.join(format!("leaf-{curve}-{digest}.pem"));
        run(Command::new("openssl")
            .args(["x509", "-req", "-days", "10", "-set_serial", "7", "-in"])
            .arg(dir.join("leaf.csr"))
            .arg("-CA")
            .arg(dir.join(&ca))
            .arg("-CAkey")
            .arg(dir.join(format!("ca-{curve}.key")))
            .arg(format!("-{digest}"))
            .arg("-extfile")
            .arg(dir.join("leaf.ext"))
            .arg("-out")
            .arg(&leaf_path));
        let leaf_pem = std::fs::read(&leaf_path).unwrap();
        let ca_pem = std::fs::read(dir.join(&ca)).unwrap();
        let (leaf, ca_der) = (pem_der(&leaf_pem), pem_der(&ca_pem));
        // openssl's notBefore is its own clock: validate a minute later.
        let now =
            std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_secs()
                as i64
                + 60;
        let exp = expected(Profile::Client);
        let supported = match curve {
            "P-256" => digest == "sha256" || cfg!(feature = "sha512"),
            _ => cfg!(feature = "p384"),
        };
        let case = format!("{curve} CA, ecdsa-with-{digest}");
        // As issued.
        assert!(openssl_verifies(&dir, &ca, &leaf_pem), "{case}: openssl");
        let got = pem_both(&leaf_pem, &ca_pem, &exp, now);
        if supported {
            let v = got.unwrap_or_else(|e| panic!("{case}: {e:?}"));
            assert_eq!(v.ca_subject.as_str(), format!("CN={curve} CA"));
        } else {
            assert_eq!(reason(got), Reason::UnsupportedAlgorithm, "{case}");
        }
        // Tampered: the last byte of the signature, and the digest relabelled (SHA-256 <->
        // SHA-384 / SHA-512 -> SHA-256).
        let mut flipped = leaf.clone();
        *flipped.last_mut().unwrap() ^= 0x01;
        let label = match digest {
            "sha256" => 0x03,
            _ => 0x02,
        };
        for (what, bad) in
            [("signature bit", flipped), ("digest relabelled", relabel(&leaf, label))]
        {
            assert!(!openssl_verifies(&dir, &ca, &to_pem(&bad)), "{case}, {what}: openssl");
            let err = der_both(&bad, &[], &[&ca_der], &exp, now).unwrap_err();
            let relabelled_supported = if curve == "P-256" {
                label == 0x02 || cfg!(feature = "sha512")
            } else {
                cfg!(feature = "p384")
            };
            let want = if what == "signature bit" && supported
                || what == "digest relabelled" && relabelled_supported
            {
                Reason::BadSignature
            } else {
                Reason::UnsupportedAlgorithm
            };
            assert_eq!(err.reason, want, "{case}, {what}");
        }
        checked += 1;
    }
    assert_eq!(checked, 6);
}

#[test]
fn ca_rotation_bundle() {
    let v = client("case_ok_rotation.pem", "ca_rotation.pem").unwrap();
    assert_eq!(v.ca_index, 1);
    assert_eq!(v.ca_subject.as_str(), "CN=kubernetes-2");
}

#[test]
fn intermediate_chain() {
    let v = client("case_ok_chain.pem", "ca_root.pem").unwrap();
    assert_eq!((v.ca_index, v.intermediates_used), (0, 1));
    assert_eq!(v.ca_subject.as_str(), "CN=root");
    // Extra, unrelated and expired intermediates are skipped in favour of the valid one.
    let v = client("case_ok_chain_extra.pem", "ca_root.pem").unwrap();
    assert_eq!(v.intermediates_used, 1);
    assert_eq!(reason(client("case_chain_missing.pem", "ca_root.pem")), Reason::Untrusted);
    field(
        client("case_chain_notca.pem", "ca_root.pem"),
        Reason::Untrusted,
        "issuer.basicConstraints",
    );
    field(
        client("case_chain_pathlen.pem", "ca_root0.pem"),
        Reason::Untrusted,
        "issuer.pathLenConstraint",
    );
    let err = client("case_chain_expired.pem", "ca_root.pem").unwrap_err();
    assert_eq!(reason(Err(err)), Reason::Expired);
}

#[test]
fn path_search_is_bounded() {
    use kubeboot::backend::{RsaHash, SignatureVerifier, Verdict};
    use std::sync::atomic::{AtomicUsize, Ordering};
    /// The portable backend, counting its signature checks.
    struct Counting(AtomicUsize);
    impl SignatureVerifier for Counting {
        fn p256_sha256(&self, point: &[u8], message: &[u8], rs: &[u8; 64]) -> Verdict {
            self.0.fetch_add(1, Ordering::Relaxed);
            Software.p256_sha256(point, message, rs)
        }
        fn p384_sha384(&self, point: &[u8], message: &[u8], rs: &[u8; 96]) -> Verdict {
            self.0.fetch_add(1, Ordering::Relaxed);
            Software.p384_sha384(point, message, rs)
        }
        fn rsa_pkcs1(&self, n: &[u8], e: &[u8], h: RsaHash, m: &[u8], sig: &[u8]) -> Verdict {
            self.0.fetch_add(1, Ordering::Relaxed);
            Software.rsa_pkcs1(n, e, h, m, sig)
        }
    }
    assert_eq!(reason(client("case_loop.pem", "ca_unrelated.pem")), Reason::Untrusted);
    // 8 interchangeable intermediates: 8! orderings unbounded; the search stops after
    // MAX_SIGNATURE_CHECKS signature checks (counted, not timed: the bound holds on any machine).
    let (f, cert, ca) = (fixture(), read("case_loop.pem"), read("ca_unrelated.pem"));
    let mut ca_scratch = vec![0u8; verify::scratch_len(b"", &ca)];
    let cas = verify::TrustedCas::<{ verify::MAX_CAS }>::from_pem(&ca, &mut ca_scratch).unwrap();
    let mut scratch = vec![0u8; verify::scratch_len(&cert, b"")];
    let counting = Counting(AtomicUsize::new(0));
    let exp = expected(Profile::Client);
    let r = verify::verify_issued_anchored(&counting, &cert, &cas, &exp, f.now, &mut scratch);
    assert_eq!(reason(r), Reason::Untrusted);
    let checks = counting.0.load(Ordering::Relaxed);
    // (the loop exhausts the budget exactly: without it the search would go on)
    assert_eq!(checks, verify::MAX_SIGNATURE_CHECKS);
}

#[test]
fn wrong_ca() {
    assert_eq!(reason(client("case_ok_ec.pem", "ca_unrelated.pem")), Reason::Untrusted);
    // Same issuer name, other key.
    assert_eq!(reason(client("case_ok_ec.pem", "ca_same_name.pem")), Reason::BadSignature);
}

#[test]
fn tampered() {
    let f = fixture();
    let ca = pem_der(&read("ca_ec.pem"));
    let exp = expected(Profile::Client);
    for case in ["case_tampered.der", "case_tampered_tbs.der"] {
        let der = read(case);
        let err = der_both(&der, &[], &[&ca], &exp, f.now).unwrap_err();
        assert_eq!(err.reason, Reason::BadSignature, "{case}");
    }
}

#[test]
fn validity() {
    let f = fixture();
    let err = client("case_expired.pem", "ca_ec.pem").unwrap_err();
    assert_eq!(
        err,
        Error::Verify(VerifyError {
            reason: Reason::Expired,
            detail: Detail::Validity {
                not_before: f.now - 30 * 86_400,
                not_after: f.now - 86_400,
                now: f.now
            },
        })
    );
    let err = client("case_not_yet_valid.pem", "ca_ec.pem").unwrap_err();
    assert_eq!(
        err,
        Error::Verify(VerifyError {
            reason: Reason::NotYetValid,
            detail: Detail::Validity {
                not_before: f.now + 3600,
                not_after: f.now + 30 * 86_400,
                now: f.now
            },
        })
    );
    assert_eq!(reason(client("case_by_expired_ca.pem", "ca_expired.pem")), Reason::Expired);
    // Boundaries: valid at exactly notBefore and notAfter.
    let (cert, ca) = (pem_der(&read("case_ok_ec.pem")), pem_der(&read("ca_ec.pem")));
    let exp = expected(Profile::Client);
    let v = der_both(&cert, &[], &[&ca], &exp, f.now).unwrap();
    for (now, ok) in [
        (v.not_before, true),
        (v.not_after, true),
        (v.not_before - 1, false),
        (v.not_after + 1, false),
    ] {
        assert_eq!(der_both(&cert, &[], &[&ca], &exp, now).is_ok(), ok, "{now}");
    }
}

#[test]
fn key_mismatch() {
    assert_eq!(reason(client("case_key_mismatch.pem", "ca_ec.pem")), Reason::KeyMismatch);
}

#[test]
fn subject() {
    field(client("case_wrong_cn.pem", "ca_ec.pem"), Reason::SubjectMismatch, "subject.CN");
    field(client("case_missing_o.pem", "ca_ec.pem"), Reason::SubjectMismatch, "subject.O");
    field(client("case_extra_o.pem", "ca_ec.pem"), Reason::SubjectMismatch, "subject.O");
    field(client("case_two_cn.pem", "ca_ec.pem"), Reason::SubjectMismatch, "subject.CN");
    field(client("case_extra_ou.pem", "ca_ec.pem"), Reason::SubjectMismatch, "subject");
    // Another node's name.
    let f = fixture();
    let (cert, ca) = (read("case_ok_ec.pem"), read("ca_ec.pem"));
    let exp = Expected { node_name: "node-2", public_key: &f.spki, profile: Profile::Client };
    let err = pem_both(&cert, &ca, &exp, f.now).unwrap_err();
    assert_eq!(err, Error::Verify(VerifyError::field(Reason::SubjectMismatch, "subject.CN")));
}

#[test]
fn usages() {
    field(client("case_server_eku.pem", "ca_ec.pem"), Reason::WrongUsage, "extendedKeyUsage");
    field(client("case_no_eku.pem", "ca_ec.pem"), Reason::WrongUsage, "extendedKeyUsage");
    field(client("case_ku_no_ds.pem", "ca_ec.pem"), Reason::WrongUsage, "keyUsage");
    client("case_no_ku.pem", "ca_ec.pem").unwrap();
    field(
        client("case_unknown_critical.pem", "ca_ec.pem"),
        Reason::WrongUsage,
        "criticalExtension",
    );
    field(
        serving("case_serving_client_eku.pem", "ca_ec.pem"),
        Reason::WrongUsage,
        "extendedKeyUsage",
    );
}

#[test]
fn is_ca() {
    assert_eq!(reason(client("case_is_ca.pem", "ca_ec.pem")), Reason::IsCa);
}

#[test]
fn sans() {
    field(client("case_client_with_san.pem", "ca_ec.pem"), Reason::SubjectMismatch, "san");
    serving("case_ok_serving.pem", "ca_ec.pem").unwrap();
    // An IPv4-mapped IPv6 request equals the IPv4 SAN; order and duplicates do not matter.
    let mapped: [IpAddr; 3] = [
        "fd00::1".parse().unwrap(),
        "::ffff:10.0.0.1".parse().unwrap(),
        "fd00::1".parse().unwrap(),
    ];
    let dns = ["node-1", "node-1.example", "node-1"];
    verify_pem("case_ok_serving.pem", "ca_ec.pem", Profile::Serving { dns: &dns, ips: &mapped })
        .unwrap();
    for case in [
        "case_serving_extra_dns.pem",
        "case_serving_missing_ip.pem",
        "case_serving_extra_ip.pem",
        "case_serving_email.pem",
    ] {
        field(serving(case, "ca_ec.pem"), Reason::SubjectMismatch, "san");
    }
    // Requested more than the certificate has.
    let ips = ips();
    let more = ["node-1", "node-1.example", "extra.example"];
    field(
        verify_pem("case_ok_serving.pem", "ca_ec.pem", Profile::Serving { dns: &more, ips: &ips }),
        Reason::SubjectMismatch,
        "san",
    );
    // A client certificate (no SANs) for a serving request.
    field(serving("case_server_eku.pem", "ca_ec.pem"), Reason::SubjectMismatch, "san");
}

/// The DER of the first CERTIFICATE in a PEM file.
fn pem_der(pem: &[u8]) -> Vec<u8> {
    let mut buf = vec![0u8; pem.len()];
    let der = kubeboot::pem::decode_first(pem, "CERTIFICATE", &mut buf).unwrap();
    der.to_vec()
}

#[test]
fn malformed_inputs() {
    let f = fixture();
    let exp = expected(Profile::Client);
    let ca_pem = read("ca_ec.pem");
    let ca = pem_der(&ca_pem);
    let leaf_pem = read("case_ok_ec.pem");
    let leaf = pem_der(&leaf_pem);
    let der = |d: &[u8]| der_both(d, &[], &[&ca], &exp, f.now);
    // Truncated DER at many points, trailing data, garbage.
    for cut in (0..leaf.len()).step_by(7) {
        assert_eq!(der(&leaf[..cut]).unwrap_err().reason, Reason::Malformed, "cut {cut}");
    }
    let mut trailing = leaf.clone();
    trailing.push(0);
    assert_eq!(der(&trailing).unwrap_err().reason, Reason::Malformed);
    assert_eq!(der(b"hello, world").unwrap_err().reason, Reason::Malformed);
    // A malformed issuer or subject Name in the leaf (an RDN that is a SEQUENCE, not a SET):
    // `Malformed` as any parse failure, before the path search's `BadSignature` / `Untrusted`
    // (kubeboot checks the leaf's issuer Name only when no path was found: a path means it
    // equals a subject that was checked).
    {
        use der::{Decode, Encode};
        let cert = x509_cert::Certificate::from_der(&leaf).unwrap();
        let tbs = cert.tbs_certificate();
        for (which, name) in [("issuer", tbs.issuer()), ("subject", tbs.subject())] {
            let name = name.to_der().unwrap();
            assert_eq!(name[2], 0x31, "{which}: an RDN SET");
            let at = leaf.windows(name.len()).position(|w| w == name).unwrap();
            let mut bad = leaf.clone();
            bad[at + 2] = 0x30;
            let err = der(&bad).unwrap_err();
            assert_eq!(err.reason, Reason::Malformed, "{which}");
            // With a CA of another name (no path at all) it is still Malformed.
            let other_ca = pem_der(&read("ca_rsa2048.pem"));
            let err = der_both(&bad, &[], &[&other_ca], &exp, f.now).unwrap_err();
            assert_eq!(err.reason, Reason::Malformed, "{which}, other CA");
        }
    }
    // A malformed CA or intermediate fails the same way.
    let err = der_both(&leaf, &[], &[&ca[..ca.len() - 1]], &exp, f.now);
    assert_eq!(err.unwrap_err().reason, Reason::Malformed);
    let err = der_both(&leaf, &[b"\x30\x00"], &[&ca], &exp, f.now);
    assert_eq!(err.unwrap_err().reason, Reason::Malformed);
    // Too many CAs.
    let many: Vec<&[u8]> = (0..verify::MAX_CAS + 1).map(|_| &ca[..]).collect();
    let err = der_both(&leaf, &[], &many, &exp, f.now);
    assert_eq!(err.unwrap_err().reason, Reason::Malformed);

    let pem = |cert: &[u8], ca: &[u8]| pem_both(cert, ca, &exp, f.now);
    let half = &leaf_pem[..leaf_pem.len() / 2];
    for (cert, ca) in [
        (half, &ca_pem[..]),
        (&leaf_pem[..], &ca_pem[..ca_pem.len() - 30]),
        (b"garbage".as_slice(), &ca_pem[..]),
        (&leaf_pem[..], b"".as_slice()),
        (b"-----BEGIN CERTIFICATE-----\n!!!!\n-----END CERTIFICATE-----\n".as_slice(), &ca_pem[..]),
        (b"-----BEGIN CERTIFICATE-----\nMAA=\n-----END CERTIFICATE-----\n".as_slice(), &ca_pem[..]),
    ] {
        assert_eq!(reason(pem(cert, ca)), Reason::Malformed);
    }
    // Bytes flipped inside the base64: never a panic, always a typed error.
    for i in (30..leaf_pem.len() - 30).step_by(13) {
        let mut bad = leaf_pem.clone();
        if bad[i].is_ascii_alphanumeric() {
            bad[i] = if bad[i] == b'A' { b'B' } else { b'A' };
            assert!(pem(&bad, &ca_pem).is_err(), "flip at {i}");
        }
    }
}

/// Every single-byte corruption of a signed leaf is rejected with a typed error, never a panic;
/// corruptions of the CA never panic either.
#[test]
fn every_byte_corruption() {
    let f = fixture();
    let exp = expected(Profile::Client);
    let leaf = pem_der(&read("case_ok_chain.pem"));
    let inter = pem_nth(&read("case_ok_chain.pem"), 1);
    let ca = pem_der(&read("ca_root.pem"));
    der_both(&leaf, &[&inter], &[&ca], &exp, f.now).unwrap();
    for i in 0..leaf.len() {
        let mut bad = leaf.clone();
        bad[i] ^= 0x5a;
        let r = der_both(&bad, &[&inter], &[&ca], &exp, f.now);
        assert!(r.is_err(), "leaf byte {i}");
    }
    for i in 0..inter.len() {
        let mut bad = inter.clone();
        bad[i] ^= 0x81;
        let r = der_both(&leaf, &[&bad], &[&ca], &exp, f.now);
        assert!(r.is_err(), "intermediate byte {i}");
    }
    for i in 0..ca.len() {
        let mut bad = ca.clone();
        bad[i] ^= 0x24;
        let _ = der_both(&leaf, &[&inter], &[&bad], &exp, f.now);
    }
}

fn pem_nth(pem: &[u8], n: usize) -> Vec<u8> {
    let block = kubeboot::pem::blocks(pem).filter_map(Result::ok).nth(n).unwrap();
    let mut buf = vec![0u8; pem.len()];
    block.decode(&mut buf).unwrap().to_vec()
}

#[test]
fn scratch_too_small() {
    let f = fixture();
    let (cert, ca) = (read("case_ok_chain.pem"), read("ca_root.pem"));
    let needed = verify::scratch_len(&cert, &ca);
    let mut scratch = vec![0u8; needed - 1];
    let exp = expected(Profile::Client);
    assert_eq!(
        verify::verify_issued(&cert, &ca, &exp, f.now, &mut scratch).unwrap_err(),
        Error::BufferTooSmall { needed }
    );
    // Anchored: only the certificate's PEM goes through the caller's scratch.
    let mut ca_scratch = vec![0u8; verify::scratch_len(b"", &ca)];
    let short = verify::scratch_len(b"", &ca) - 1;
    assert_eq!(
        verify::TrustedCas::<2>::from_pem(&ca, &mut ca_scratch[..short]).unwrap_err(),
        Error::BufferTooSmall { needed: short + 1 }
    );
    let cas = verify::TrustedCas::<2>::from_pem(&ca, &mut ca_scratch).unwrap();
    let needed = verify::scratch_len(&cert, b"");
    let mut scratch = vec![0u8; needed];
    assert_eq!(
        verify::verify_issued_anchored(
            &Software,
            &cert,
            &cas,
            &exp,
            f.now,
            &mut scratch[..needed - 1]
        )
        .unwrap_err(),
        Error::BufferTooSmall { needed }
    );
    let v = verify::verify_issued_anchored(&Software, &cert, &cas, &exp, f.now, &mut scratch);
    assert_eq!(v.unwrap().intermediates_used, 1);
}

#[test]
fn trusted_cas_limits() {
    let f = fixture();
    let exp = expected(Profile::Client);
    let ca = pem_der(&read("ca_ec.pem"));
    let leaf = pem_der(&read("case_ok_ec.pem"));
    // Capacity below the bundle, and MAX_CAS, are Malformed, like `verify_issued_der`'s limit.
    let two: [&[u8]; 2] = [&ca, &ca];
    assert_eq!(verify::TrustedCas::<1>::from_der(&two).unwrap_err().reason, Reason::Malformed);
    let many: Vec<&[u8]> = (0..verify::MAX_CAS + 1).map(|_| &ca[..]).collect();
    let err = verify::TrustedCas::<32>::from_der(&many).unwrap_err();
    assert_eq!(err.reason, Reason::Malformed);
    let anchors: Vec<verify::Anchor<'_>> =
        many.iter().map(|d| verify::Anchor::from_der(d).unwrap()).collect();
    let err = verify::verify_issued_der_anchored(&Software, &leaf, &[], &anchors, &exp, f.now);
    assert_eq!(err.unwrap_err().reason, Reason::Malformed);
    // An empty set of anchors: Untrusted (DER), Malformed (PEM), as the old entry points.
    let err = verify::verify_issued_der_anchored(&Software, &leaf, &[], &[], &exp, f.now);
    assert_eq!(err.unwrap_err().reason, Reason::Untrusted);
    let mut scratch = [0u8; 4096];
    let cert_pem = read("case_ok_ec.pem");
    let err = verify::verify_issued_anchored(&Software, &cert_pem, &[], &exp, f.now, &mut scratch);
    assert_eq!(reason(err), Reason::Malformed);
    // One anchor reused across many validations (rotations), and its accessors.
    let anchor = verify::Anchor::from_der(&ca).unwrap();
    assert_eq!(anchor.der(), &ca[..]);
    assert!(anchor.not_before() <= f.now && f.now <= anchor.not_after());
    assert!(format!("{anchor:?}").contains("CN=kubernetes"));
    for _ in 0..3 {
        verify::verify_issued_der_anchored(&Software, &leaf, &[], &[anchor], &exp, f.now).unwrap();
    }
}

// ---------------------------------------------------------------------------------------------
// Pins

fn openssl_pin(path: &Path) -> String {
    let out = run(Command::new("sh").arg("-c").arg(format!(
        "openssl x509 -pubkey -noout -in '{}' | openssl pkey -pubin -outform der | sha256sum",
        path.display()
    )));
    let hex = String::from_utf8(out).unwrap();
    format!("sha256:{}", hex.split_whitespace().next().unwrap())
}

#[test]
fn pins_match_openssl() {
    let dir = &fixture().dir;
    for name in [
        "ca_ec.pem",
        "ca_rsa2048.pem",
        "ca_rsa4096.pem",
        "ca_p384.pem",
        "case_ok_ec.pem",
        "ca_root.pem",
    ] {
        let want = openssl_pin(&dir.join(name));
        let der = pem_der(&read(name));
        let pin = pin::pin_of_cert_der(&der).unwrap();
        assert_eq!(pin.to_string(), want, "{name}");
        assert_eq!(CaPin::parse(&want).unwrap(), pin);
        assert_eq!(CaPin::from_cert_der(&der).unwrap(), pin);
    }
    // Every certificate of a bundle, in order; other blocks skipped.
    let bundle = read("ca_rotation.pem");
    let mut scratch = [0u8; 4096];
    let pins: Vec<CaPin> =
        pin::pins_of_pem(&bundle, &mut scratch).collect::<Result<_, _>>().unwrap();
    assert_eq!(pins.len(), 2);
    let second = openssl_pin(&dir.join("case_ok_rotation.pem"));
    let _ = second; // the leaf's pin is not a CA pin; just exercised above
    let mut scratch = [0u8; 4096];
    assert_eq!(pin::check_any_pem(&[pins[1]], &bundle, &mut scratch), Ok(()));
    let other = pin::pin_of_cert_der(&pem_der(&read("ca_ec.pem"))).unwrap();
    assert_eq!(pin::check_any_pem(&[other], &bundle, &mut scratch), Err(Error::PinMismatch));
    assert_eq!(pin::check_any_pem(&[], &bundle, &mut scratch), Err(Error::PinMismatch));
    assert_eq!(pin::check_any_pem(&[other], b"no pem", &mut scratch), Err(Error::Malformed));
    let ca = pem_der(&read("ca_ec.pem"));
    assert_eq!(pin::check_any(&[pins[0], other], &[&ca]), Ok(()));
}

#[test]
fn kubeadm_pin_vector() {
    const PIN: &str = "sha256:345959acb2c3b2feb87d281961c893f62a314207ef02599f1cc4a5fb255480b3";
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/support/pin_test.crt");
    let pem = std::fs::read(&path).unwrap();
    assert_eq!(openssl_pin(&path), PIN);
    let der = pem_der(&pem);
    let pin = pin::pin_of_cert_der(&der).unwrap();
    assert_eq!(pin.to_string(), PIN);
    assert_eq!(pin, CaPin::parse(&PIN.to_uppercase()).unwrap());
    assert_eq!(pin.to_text().as_str(), PIN);
    let mut scratch = [0u8; 4096];
    assert_eq!(pin::check_any_pem(&[pin], &pem, &mut scratch), Ok(()));
    let doubled = format!("{PIN}{}", &PIN[7..]);
    for bad in ["xyz", "0011223344", doubled.as_str()] {
        assert_eq!(CaPin::parse(bad), Err(Error::InvalidPin), "{bad}");
    }
}
