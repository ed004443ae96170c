//! The TLS server-certificate check (`verify::verify_server_der`, `ServerKey::verify_signature`)
//! against chains made at test time by OpenSSL, each verdict compared with `openssl verify
//! -purpose sslserver` for the same host (two deliberate differences: a leaf without
//! extendedKeyUsage, or whose keyUsage lacks digitalSignature, is refused), and handshake
//! signatures made by `openssl dgst -sign`.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;

use kubeboot::backend::Software;
use kubeboot::error::{Detail, Reason, VerifyError};
use kubeboot::verify::{self, ServerName};

fn run(cmd: &mut Command) -> Vec<u8> {
    let out = cmd.output().unwrap_or_else(|e| panic!("{cmd:?}: {e}"));
    assert!(out.status.success(), "{cmd:?}: {}", String::from_utf8_lossy(&out.stderr));
    out.stdout
}

struct Fixture {
    dir: PathBuf,
    now: i64,
}

/// `name.ext` → `name.crt` signed by `issuer` (`-days 30`).
fn issue(dir: &Path, name: &str, issuer: &str, ext: &str) {
    let key = dir.join(format!("{name}.key"));
    run(Command::new("openssl")
        .args(["genpkey", "-algorithm", "EC", "-pkeyopt", "ec_paramgen_curve:P-256", "-out"])
        .arg(&key));
    let csr = dir.join(format!("{name}.csr"));
    run(Command::new("openssl")
        .args(["req", "-new", "-subj", &format!("/CN={name}"), "-key"])
        .arg(&key)
        .arg("-out")
        .arg(&csr));
    let extfile = dir.join(format!("{name}.ext"));
    std::fs::write(&extfile, ext).unwrap();
    run(Command::new("openssl")
        .args(["x509", "-req", "-sha256", "-days", "30", "-set_serial", "7", "-in"])
        .arg(&csr)
        .arg("-CA")
        .arg(dir.join(format!("{issuer}.crt")))
        .arg("-CAkey")
        .arg(dir.join(format!("{issuer}.key")))
        .arg("-extfile")
        .arg(&extfile)
        .arg("-out")
        .arg(dir.join(format!("{name}.crt"))));
}

const SERVER: &str = "basicConstraints=critical,CA:FALSE\nkeyUsage=critical,digitalSignature\n\
    extendedKeyUsage=serverAuth\nsubjectAltName=IP:127.0.0.1,DNS:localhost,DNS:*.svc.example\n";

fn fixture() -> &'static Fixture {
    static F: OnceLock<Fixture> = OnceLock::new();
    F.get_or_init(|| {
        let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("verify-server");
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        for ca in ["ca", "other-ca"] {
            let key = dir.join(format!("{ca}.key"));
            run(Command::new("openssl")
                .args(["genpkey", "-algorithm", "EC", "-pkeyopt", "ec_paramgen_curve:P-256"])
                .arg("-out")
                .arg(&key));
            run(Command::new("openssl")
                .args(["req", "-x509", "-new", "-sha256", "-days", "60", "-subj"])
                .arg(format!("/CN=kubeboot-test-{ca}"))
                .args(["-addext", "basicConstraints=critical,CA:TRUE"])
                .args(["-addext", "keyUsage=critical,keyCertSign,cRLSign"])
                .arg("-key")
                .arg(&key)
                .arg("-out")
                .arg(dir.join(format!("{ca}.crt"))));
        }
        issue(&dir, "server", "ca", SERVER);
        issue(&dir, "foreign", "other-ca", SERVER);
        let client = SERVER.replace("serverAuth", "clientAuth");
        issue(&dir, "client-eku", "ca", &client);
        let no_eku = SERVER.replace("extendedKeyUsage=serverAuth\n", "");
        issue(&dir, "no-eku", "ca", &no_eku);
        let ku = SERVER.replace("digitalSignature", "keyEncipherment");
        issue(&dir, "no-digital-signature", "ca", &ku);
        let no_san =
            SERVER.replace("subjectAltName=IP:127.0.0.1,DNS:localhost,DNS:*.svc.example\n", "");
        issue(&dir, "no-san", "ca", &no_san);
        issue(
            &dir,
            "inter",
            "ca",
            "basicConstraints=critical,CA:TRUE\nkeyUsage=critical,keyCertSign\n",
        );
        issue(&dir, "via-inter", "inter", SERVER);
        let now =
            std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_secs()
                as i64;
        Fixture { dir, now }
    })
}

fn der(name: &str) -> Vec<u8> {
    run(Command::new("openssl")
        .args(["x509", "-outform", "der", "-in"])
        .arg(fixture().dir.join(format!("{name}.crt"))))
}

/// Ours, for `chain` (names of certificates, leaf first) against `ca` at `now`.
fn ours(chain: &[&str], ca: &str, host: &str, now: i64) -> Result<verify::ServerKey, VerifyError> {
    let ders: Vec<Vec<u8>> = chain.iter().map(|n| der(n)).collect();
    let refs: Vec<&[u8]> = ders.iter().map(Vec::as_slice).collect();
    let ca_der = der(ca);
    let cas = verify::TrustedCas::<1>::from_der(&[&ca_der]).unwrap();
    let name = ServerName::parse(host).unwrap();
    let r = verify::verify_server_der(&Software, &refs, &cas, &name, now);
    #[cfg(feature = "ring")]
    assert_eq!(
        r,
        verify::verify_server_der(&kubeboot::backend::ring::Ring, &refs, &cas, &name, now)
    );
    r
}

/// `openssl verify -purpose sslserver` for the same chain and host.
fn openssl_accepts(chain: &[&str], ca: &str, host: &str) -> bool {
    let dir = &fixture().dir;
    let mut cmd = Command::new("openssl");
    cmd.args(["verify", "-purpose", "sslserver", "-CAfile"]).arg(dir.join(format!("{ca}.crt")));
    if let Some(inter) = chain.get(1) {
        cmd.arg("-untrusted").arg(dir.join(format!("{inter}.crt")));
    }
    if host.parse::<std::net::IpAddr>().is_ok() {
        cmd.args(["-verify_ip", host]);
    } else {
        cmd.args(["-verify_hostname", host]);
    }
    cmd.arg(dir.join(format!("{}.crt", chain[0])));
    cmd.output().unwrap().status.success()
}

/// A refusal's reason and detail (`None`: accepted).
type Verdict = Option<(Reason, Detail)>;

fn reason(r: &Result<verify::ServerKey, VerifyError>) -> Verdict {
    r.as_ref().err().map(|e| (e.reason, e.detail))
}

#[test]
fn verdicts_agree_with_openssl() {
    let now = fixture().now;
    let san = Some((Reason::SubjectMismatch, Detail::Field("san")));
    let eku = Some((Reason::WrongUsage, Detail::Field("extendedKeyUsage")));
    let cases: &[(&[&str], &str, &str, Verdict)] = &[
        (&["server"], "ca", "127.0.0.1", None),
        (&["server"], "ca", "localhost", None),
        (&["server"], "ca", "LOCALHOST", None),
        (&["server"], "ca", "api.svc.example", None),
        (&["server"], "ca", "127.0.0.2", san),
        (&["server"], "ca", "::1", san),
        (&["server"], "ca", "kubernetes", san),
        (&["server"], "ca", "a.api.svc.example", san),
        (&["server"], "other-ca", "127.0.0.1", Some((Reason::Untrusted, Detail::None))),
        (&["foreign"], "ca", "127.0.0.1", Some((Reason::Untrusted, Detail::None))),
        (&["client-eku"], "ca", "127.0.0.1", eku),
        (&["no-san"], "ca", "127.0.0.1", san),
        (&["via-inter", "inter"], "ca", "127.0.0.1", None),
        (&["via-inter"], "ca", "127.0.0.1", Some((Reason::Untrusted, Detail::None))),
    ];
    for (chain, ca, host, want) in cases {
        let r = ours(chain, ca, host, now);
        assert_eq!(reason(&r), *want, "{chain:?} by {ca} for {host}");
        assert_eq!(openssl_accepts(chain, ca, host), want.is_none(), "openssl: {chain:?} {host}");
    }
    // The deliberate differences: no extendedKeyUsage at all (OpenSSL and Go take any usage
    // then); a keyUsage without digitalSignature (OpenSSL's server purpose also takes
    // keyEncipherment, for RSA key exchange; RFC 8446 §4.4.2.2 wants digitalSignature).
    assert_eq!(reason(&ours(&["no-eku"], "ca", "127.0.0.1", now)), eku);
    assert!(openssl_accepts(&["no-eku"], "ca", "127.0.0.1"));
    let ku = Some((Reason::WrongUsage, Detail::Field("keyUsage")));
    assert_eq!(reason(&ours(&["no-digital-signature"], "ca", "127.0.0.1", now)), ku);
    assert!(openssl_accepts(&["no-digital-signature"], "ca", "127.0.0.1"));
    // Time: 30 days of validity.
    let later = now + 40 * 86_400;
    let r = ours(&["server"], "ca", "127.0.0.1", later);
    assert!(matches!(r, Err(VerifyError { reason: Reason::Expired, .. })), "{r:?}");
    let r = ours(&["server"], "ca", "127.0.0.1", now - 86_400);
    assert!(matches!(r, Err(VerifyError { reason: Reason::NotYetValid, .. })), "{r:?}");
}

#[test]
fn handshake_signature_with_the_leaf_key() {
    let f = fixture();
    let key = ours(&["server"], "ca", "127.0.0.1", f.now).unwrap();
    let message = b"                                                                TLS 1.3, server CertificateVerify\x00transcript-hash-of-32-bytes.....";
    let msg_path = f.dir.join("message");
    std::fs::write(&msg_path, message).unwrap();
    let sig = run(Command::new("openssl")
        .args(["dgst", "-sha256", "-sign"])
        .arg(f.dir.join("server.key"))
        .arg(&msg_path));
    let p256 = verify::ECDSA_SECP256R1_SHA256;
    assert_eq!(key.verify_signature(&Software, p256, message, &sig), Ok(()));
    let mut other = message.to_vec();
    other[100] ^= 1;
    let bad = Err(VerifyError::new(Reason::BadSignature));
    assert_eq!(key.verify_signature(&Software, p256, &other, &sig), bad);
    assert_eq!(key.verify_signature(&Software, p256, message, &sig[..sig.len() - 1]), bad);
    let unsupported = Err(VerifyError::new(Reason::UnsupportedAlgorithm));
    assert_eq!(
        key.verify_signature(&Software, verify::ECDSA_SECP384R1_SHA384, message, &sig),
        unsupported
    );
    assert_eq!(key.verify_signature(&Software, 0x0804, message, &sig), unsupported);
    // Another server's signature.
    let foreign = run(Command::new("openssl")
        .args(["dgst", "-sha256", "-sign"])
        .arg(f.dir.join("foreign.key"))
        .arg(&msg_path));
    assert_eq!(key.verify_signature(&Software, p256, message, &foreign), bad);
}
