//! Path validation against the field's validators, on chains where they are known to differ
//! (`tests/support/gen_divergent.py`, made with Python `cryptography` at test time): kubeboot's
//! `verify_issued`, rustls-webpki as a TLS peer uses it (ring's algorithms, `KeyUsage::client_auth`
//! / `server_auth`, the CA as a trust anchor), Go's `crypto/x509` (`Certificate.Verify`,
//! `tests/support/x509_verdicts.go`) and `openssl verify`. The table below is
//! docs/x509-validation.md's: a verdict that changes fails here.

use std::path::Path;
use std::process::Command;
use std::sync::OnceLock;

use kubeboot::Error;
use kubeboot::error::{Detail, VerifyError};
use kubeboot::verify::{self, Expected, Profile};

/// One case: kubeboot's verdict (`ok`, or the reason and its field), then whether rustls-webpki,
/// Go and OpenSSL accept the chain.
struct Row {
    case: &'static str,
    kubeboot: &'static str,
    webpki: bool,
    go: bool,
    openssl: bool,
}

const fn row(
    case: &'static str,
    kubeboot: &'static str,
    webpki: bool,
    go: bool,
    openssl: bool,
) -> Row {
    Row { case, kubeboot, webpki, go, openssl }
}

#[rustfmt::skip]
const TABLE: &[Row] = &[
    //   case                              kubeboot                                  webpki go     openssl
    row("plain",                           "ok",                                     true,  true,  true),
    row("plain_chain",                     "ok",                                     true,  true,  true),
    row("inter_eku_any",                   "ok",                                     false, true,  false),
    row("inter_eku_server_only",           "untrusted: issuer.extendedKeyUsage",     false, false, false),
    row("inter_eku_client",                "ok",                                     true,  true,  true),
    row("leaf_no_eku",                     "wrong-usage: extendedKeyUsage",          true,  true,  true),
    row("leaf_eku_any",                    "wrong-usage: extendedKeyUsage",          false, true,  false),
    row("leaf_not_before_1969",            "ok",                              false, true,  true),
    row("inter_not_before_1969",           "ok",                              false, true,  true),
    row("ca_not_before_1969",              "ok",                                     true,  true,  true),
    row("ca_expired",                      "expired",                                true,  false, false),
    row("ca_pathlen0_with_intermediate",   "untrusted: issuer.pathLenConstraint",    true,  false, false),
    row("leaf_unique_ids",                 "ok",                              false, true,  true),
    row("leaf_negative_serial",            "malformed",                                     true,  false, true),
    row("ca_v1",                           "ok",                                     true,  true,  true),
    row("inter_critical_ski",              "malformed",    false, false, false),
    row("leaf_critical_aki",               "malformed",         false, false, false),
    row("inter_critical_policies",         "untrusted: issuer.criticalExtension",    false, true,  true),
    row("inter_ku_no_cert_sign",           "untrusted: issuer.keyUsage",             true,  false, false),
    row("ca_name_constraints_violated",    "untrusted: issuer.nameConstraints",      false, false, false),
    row("ca_name_constraints_met",         "ok",                                     true,  true,  true),
    row("depth_6",                         "ok",                                     true,  true,  true),
    row("depth_7",                         "ok",                              false, true,  true),
];

mod common;
use common::{Generated as Fixture, output as run};

fn fixture() -> &'static Fixture {
    static F: OnceLock<Fixture> = OnceLock::new();
    F.get_or_init(|| common::generate("verify-peers", "gen_divergent.py"))
}

fn read(case: &str, name: &str) -> Vec<u8> {
    let path = fixture().dir.join(case).join(name);
    std::fs::read(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

fn serving(case: &str) -> bool {
    read(case, "profile") == b"serving"
}

fn ders(pem: &[u8]) -> Vec<Vec<u8>> {
    kubeboot::pem::blocks(pem)
        .map(|b| {
            let b = b.unwrap();
            let mut buf = vec![0u8; pem.len()];
            b.decode(&mut buf).unwrap().to_vec()
        })
        .collect()
}

fn kubeboot_verdict(case: &str) -> String {
    let f = fixture();
    let (cert, ca) = (read(case, "leaf.pem"), read(case, "ca.pem"));
    let dns = ["node-1"];
    let ips = ["10.0.0.1".parse().unwrap()];
    let profile =
        if serving(case) { Profile::Serving { dns: &dns, ips: &ips } } else { Profile::Client };
    let expected = Expected { node_name: "node-1", public_key: &f.spki, profile };
    let mut scratch = vec![0u8; verify::scratch_len(&cert, &ca)];
    match verify::verify_issued(&cert, &ca, &expected, f.now, &mut scratch) {
        Ok(_) => "ok".into(),
        Err(Error::Verify(VerifyError { reason, detail: Detail::Field(field) })) => {
            format!("{}: {field}", reason.name())
        }
        Err(Error::Verify(VerifyError { reason, .. })) => reason.name().into(),
        Err(e) => panic!("{case}: {e:?}"),
    }
}

fn webpki_verdict(case: &str) -> Result<(), String> {
    use rustls_pki_types::{CertificateDer, UnixTime};
    let chain = ders(&read(case, "leaf.pem"));
    let cas = ders(&read(case, "ca.pem"));
    let cas: Vec<CertificateDer<'_>> = cas.iter().map(|d| CertificateDer::from(&d[..])).collect();
    let anchors = cas
        .iter()
        .map(|c| webpki::anchor_from_trusted_cert(c).map_err(|e| format!("anchor: {e:?}")))
        .collect::<Result<Vec<_>, _>>()?;
    let inter: Vec<CertificateDer<'_>> =
        chain[1..].iter().map(|d| CertificateDer::from(&d[..])).collect();
    let leaf = CertificateDer::from(&chain[0][..]);
    let ee = webpki::EndEntityCert::try_from(&leaf).map_err(|e| format!("{e:?}"))?;
    let usage = if serving(case) {
        webpki::KeyUsage::server_auth()
    } else {
        webpki::KeyUsage::client_auth()
    };
    let time = UnixTime::since_unix_epoch(std::time::Duration::from_secs(fixture().now as u64));
    ee.verify_for_usage(webpki::ALL_VERIFICATION_ALGS, &anchors, &inter, time, usage, None, None)
        .map(|_| ())
        .map_err(|e| format!("{e:?}"))
}

/// Go's verdicts on every case, one `go run` for all of them.
fn go_verdicts() -> &'static std::collections::HashMap<String, String> {
    static G: OnceLock<std::collections::HashMap<String, String>> = OnceLock::new();
    G.get_or_init(|| {
        let f = fixture();
        let prog = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/support/x509_verdicts.go");
        let out = run(Command::new("go")
            .arg("run")
            .arg(prog)
            .arg(&f.dir)
            .arg(f.now.to_string())
            .args(TABLE.iter().map(|r| r.case)));
        String::from_utf8(out)
            .unwrap()
            .lines()
            .map(|l| {
                let (case, verdict) = l.split_once(' ').unwrap();
                (case.to_string(), verdict.to_string())
            })
            .collect()
    })
}

fn openssl_verdict(case: &str) -> Result<(), String> {
    let f = fixture();
    let dir = f.dir.join(case);
    let chain = ders(&read(case, "leaf.pem"));
    let pem = |der: &[u8]| {
        let mut buf = vec![0u8; kubeboot::pem::encoded_len("CERTIFICATE", der.len()).unwrap()];
        let n = kubeboot::pem::encode("CERTIFICATE", der, &mut buf).unwrap();
        buf.truncate(n);
        buf
    };
    std::fs::write(dir.join("only-leaf.pem"), pem(&chain[0])).unwrap();
    let rest: Vec<u8> = chain[1..].iter().flat_map(|d| pem(d)).collect();
    let mut cmd = Command::new("openssl");
    cmd.arg("verify")
        .arg("-attime")
        .arg(f.now.to_string())
        .arg("-purpose")
        .arg(if serving(case) { "sslserver" } else { "sslclient" })
        .arg("-CAfile")
        .arg(dir.join("ca.pem"));
    if !rest.is_empty() {
        std::fs::write(dir.join("untrusted.pem"), rest).unwrap();
        cmd.arg("-untrusted").arg(dir.join("untrusted.pem"));
    }
    let out = cmd.arg(dir.join("only-leaf.pem")).output().unwrap();
    if out.status.success() {
        Ok(())
    } else {
        let text = [out.stdout, out.stderr].concat();
        Err(String::from_utf8_lossy(&text).trim().replace('\n', " / "))
    }
}

#[test]
fn verdicts_match_the_documented_table() {
    let mut report = String::new();
    let mut differ = 0;
    for r in TABLE {
        let kb = kubeboot_verdict(r.case);
        let wp = webpki_verdict(r.case);
        let go = go_verdicts().get(r.case).cloned().unwrap_or_else(|| "missing".into());
        let ossl = openssl_verdict(r.case);
        let same = kb == r.kubeboot
            && wp.is_ok() == r.webpki
            && (go == "ok") == r.go
            && ossl.is_ok() == r.openssl;
        if !same {
            differ += 1;
        }
        let (wp, ossl) = (format!("{wp:?}"), format!("{ossl:?}"));
        let mark = if same { " " } else { "!" };
        report += &format!(
            "{mark} {:32} kubeboot {kb:40} webpki {wp:60} go {go:60} openssl {ossl}\n",
            r.case
        );
    }
    assert_eq!(differ, 0, "verdicts differ from the table (!):\n{report}");
    println!("{report}");
}
