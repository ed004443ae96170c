//! Cross-checks of `kubeboot::policy` / `kubeboot::request` against CSRs built at test time by
//! OpenSSL (`openssl req`) and Python `cryptography` (`/usr/bin/python3`).
//!
//! The expected outcomes follow the upstream rules (pkg/apis/certificates/validation/validation.go,
//! approver/sarapprove.go, signer/signer.go and authority/policies.go): the table says which rule a
//! CSR breaks, the CSR itself is made by an independent tool.

use kubeboot::Error;
use kubeboot::error::PolicyViolation;
use kubeboot::policy::{self, KubeletSigner, SIGNER_CLIENT, SIGNER_SERVING};
use kubeboot::request::{CertificateRequest, KeyAlgorithm, SubjectAltName};
use std::path::PathBuf;
use std::process::Command;
use std::sync::atomic::{AtomicU32, Ordering};

static COUNTER: AtomicU32 = AtomicU32::new(0);

struct TempDir(PathBuf);

impl TempDir {
    fn new() -> Self {
        let nanos =
            std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_nanos();
        let n = COUNTER.fetch_add(1, Ordering::SeqCst);
        let dir = std::env::temp_dir()
            .join(format!("kubeboot-policy-{}-{nanos}-{n}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        TempDir(dir)
    }

    fn path(&self, name: &str) -> PathBuf {
        self.0.join(name)
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

fn run(cmd: &mut Command) -> Vec<u8> {
    let out = cmd.output().unwrap_or_else(|e| panic!("spawn {cmd:?}: {e}"));
    assert!(out.status.success(), "{cmd:?} failed: {}", String::from_utf8_lossy(&out.stderr));
    out.stdout
}

fn openssl(args: &[&str]) -> Vec<u8> {
    run(Command::new("openssl").args(args))
}

#[derive(Clone, Copy)]
enum Key {
    P256,
    P384,
    Rsa,
    Ed25519,
}

fn make_key(dir: &TempDir, key: Key) -> PathBuf {
    let (name, args): (&str, &[&str]) = match key {
        Key::P256 => {
            ("p256.key", &["genpkey", "-algorithm", "EC", "-pkeyopt", "ec_paramgen_curve:P-256"])
        }
        Key::P384 => {
            ("p384.key", &["genpkey", "-algorithm", "EC", "-pkeyopt", "ec_paramgen_curve:P-384"])
        }
        Key::Rsa => {
            ("rsa.key", &["genpkey", "-algorithm", "RSA", "-pkeyopt", "rsa_keygen_bits:2048"])
        }
        Key::Ed25519 => ("ed.key", &["genpkey", "-algorithm", "ED25519"]),
    };
    let path = dir.path(name);
    if !path.exists() {
        let mut a = args.to_vec();
        let p = path.to_str().unwrap().to_owned();
        a.extend(["-out", &p]);
        openssl(&a);
    }
    path
}

/// `openssl req -new` with the given subject, optional SAN extension value and digest.
fn openssl_csr(
    dir: &TempDir,
    key: Key,
    subj: &str,
    san: Option<&str>,
    digest: Option<&str>,
) -> Vec<u8> {
    let key_path = make_key(dir, key);
    let n = COUNTER.fetch_add(1, Ordering::SeqCst);
    let out = dir.path(&format!("req-{n}.csr"));
    let mut args: Vec<String> = ["req", "-new", "-key", key_path.to_str().unwrap(), "-subj", subj]
        .iter()
        .map(|s| s.to_string())
        .collect();
    if subj.contains('+') {
        args.push("-multivalue-rdn".into());
    }
    if let Some(san) = san {
        args.push("-addext".into());
        args.push(format!("subjectAltName={san}"));
    }
    if let Some(d) = digest {
        args.push(format!("-{d}"));
    }
    args.push("-out".into());
    args.push(out.to_str().unwrap().into());
    run(Command::new("openssl").args(&args));
    std::fs::read(&out).unwrap()
}

fn check(
    pem: &[u8],
    signer: &str,
    usages: &[&str],
    exp: Option<u32>,
) -> Result<KubeletSigner, Error> {
    let mut scratch = vec![0u8; pem.len()];
    policy::check_kubelet_csr(pem, signer, usages, exp, &mut scratch).map(|c| c.signer)
}

const DS: &str = "digital signature";
const KE: &str = "key encipherment";
const CA: &str = "client auth";
const SA: &str = "server auth";
const NODE: &str = "/O=system:nodes/CN=system:node:node-1";

#[test]
fn approver_and_signer_table() {
    use PolicyViolation::*;
    let dir = TempDir::new();
    type Case<'a> = (
        &'a str,
        Key,
        &'a str,
        Option<&'a str>,
        &'a str,
        &'a [&'a str],
        Result<KubeletSigner, PolicyViolation>,
    );
    let client = Ok(KubeletSigner::Client);
    let serving = Ok(KubeletSigner::Serving);
    let cases: Vec<Case> = vec![
        // Client signer (ValidateKubeletClientCSR).
        ("ecdsa client", Key::P256, NODE, None, SIGNER_CLIENT, &[DS, CA], client),
        (
            "ecdsa client, legacy usages",
            Key::P256,
            NODE,
            None,
            SIGNER_CLIENT,
            &[DS, KE, CA],
            client,
        ),
        ("usage order irrelevant", Key::P256, NODE, None, SIGNER_CLIENT, &[CA, KE, DS], client),
        (
            "O then CN order in DER irrelevant",
            Key::P256,
            "/CN=system:node:node-1/O=system:nodes",
            None,
            SIGNER_CLIENT,
            &[DS, CA],
            client,
        ),
        (
            "extra subject attributes allowed",
            Key::P256,
            "/C=US/O=system:nodes/OU=x/CN=system:node:node-1",
            None,
            SIGNER_CLIENT,
            &[DS, CA],
            client,
        ),
        (
            "multi-valued RDN",
            Key::P256,
            "/O=system:nodes+CN=system:node:node-1",
            None,
            SIGNER_CLIENT,
            &[DS, CA],
            client,
        ),
        (
            "no O",
            Key::P256,
            "/CN=system:node:node-1",
            None,
            SIGNER_CLIENT,
            &[DS, CA],
            Err(Organization),
        ),
        (
            "wrong O",
            Key::P256,
            "/O=not-system:nodes/CN=system:node:node-1",
            None,
            SIGNER_CLIENT,
            &[DS, CA],
            Err(Organization),
        ),
        (
            "two O",
            Key::P256,
            "/O=system:nodes/O=system:masters/CN=system:node:node-1",
            None,
            SIGNER_CLIENT,
            &[DS, CA],
            Err(Organization),
        ),
        (
            "O twice",
            Key::P256,
            "/O=system:nodes/O=system:nodes/CN=system:node:node-1",
            None,
            SIGNER_CLIENT,
            &[DS, CA],
            Err(Organization),
        ),
        (
            "O checked before SANs",
            Key::P256,
            "/O=x/CN=system:node:node-1",
            Some("DNS:a.example"),
            SIGNER_CLIENT,
            &[DS, CA],
            Err(Organization),
        ),
        (
            "DNS SAN",
            Key::P256,
            NODE,
            Some("DNS:node-1"),
            SIGNER_CLIENT,
            &[DS, CA],
            Err(DnsSanNotAllowed),
        ),
        (
            "email SAN",
            Key::P256,
            NODE,
            Some("email:a@b.example"),
            SIGNER_CLIENT,
            &[DS, CA],
            Err(EmailSanNotAllowed),
        ),
        (
            "IP SAN",
            Key::P256,
            NODE,
            Some("IP:10.1.2.3"),
            SIGNER_CLIENT,
            &[DS, CA],
            Err(IpSanNotAllowed),
        ),
        (
            "URI SAN",
            Key::P256,
            NODE,
            Some("URI:spiffe://cluster/node-1"),
            SIGNER_CLIENT,
            &[DS, CA],
            Err(UriSanNotAllowed),
        ),
        (
            "email before IP",
            Key::P256,
            NODE,
            Some("IP:10.1.2.3,email:a@b.example"),
            SIGNER_CLIENT,
            &[DS, CA],
            Err(EmailSanNotAllowed),
        ),
        (
            "otherName SAN ignored",
            Key::P256,
            NODE,
            Some("otherName:1.2.3.4;UTF8:x"),
            SIGNER_CLIENT,
            &[DS, CA],
            client,
        ),
        (
            "SANs before CN",
            Key::P256,
            "/O=system:nodes/CN=node-1",
            Some("DNS:x"),
            SIGNER_CLIENT,
            &[DS, CA],
            Err(DnsSanNotAllowed),
        ),
        (
            "bad CN",
            Key::P256,
            "/O=system:nodes/CN=node-1",
            None,
            SIGNER_CLIENT,
            &[DS, CA],
            Err(CommonName),
        ),
        (
            "CN prefix is case sensitive",
            Key::P256,
            "/O=system:nodes/CN=System:node:node-1",
            None,
            SIGNER_CLIENT,
            &[DS, CA],
            Err(CommonName),
        ),
        ("no CN", Key::P256, "/O=system:nodes", None, SIGNER_CLIENT, &[DS, CA], Err(CommonName)),
        (
            "CN before usages",
            Key::P256,
            "/O=system:nodes/CN=x",
            None,
            SIGNER_CLIENT,
            &[DS, SA],
            Err(CommonName),
        ),
        (
            "server usages on client",
            Key::P256,
            NODE,
            None,
            SIGNER_CLIENT,
            &[DS, KE, SA],
            Err(ClientUsages),
        ),
        (
            "missing digital signature",
            Key::P256,
            NODE,
            None,
            SIGNER_CLIENT,
            &[KE, CA],
            Err(ClientUsages),
        ),
        (
            "extra usage",
            Key::P256,
            NODE,
            None,
            SIGNER_CLIENT,
            &[DS, CA, "signing"],
            Err(ClientUsages),
        ),
        (
            "rsa client",
            Key::Rsa,
            NODE,
            None,
            SIGNER_CLIENT,
            &[DS, CA, KE],
            if cfg!(feature = "rsa") { client } else { Err(UnsupportedKey) },
        ),
        (
            "p384 client",
            Key::P384,
            NODE,
            None,
            SIGNER_CLIENT,
            &[DS, CA],
            if cfg!(feature = "p384") { client } else { Err(UnsupportedKey) },
        ),
        (
            "ed25519 client (cannot vouch)",
            Key::Ed25519,
            NODE,
            None,
            SIGNER_CLIENT,
            &[DS, CA],
            Err(UnsupportedKey),
        ),
        // Serving signer (ValidateKubeletServingCSR).
        (
            "ecdsa serving",
            Key::P256,
            NODE,
            Some("DNS:node-1.example.com,IP:10.0.0.7"),
            SIGNER_SERVING,
            &[DS, SA],
            serving,
        ),
        (
            "serving, IP only",
            Key::P256,
            NODE,
            Some("IP:10.0.0.7"),
            SIGNER_SERVING,
            &[DS, KE, SA],
            serving,
        ),
        (
            "serving, IPv6 only",
            Key::P256,
            NODE,
            Some("IP:fd00::7"),
            SIGNER_SERVING,
            &[DS, SA],
            serving,
        ),
        (
            "serving, DNS only",
            Key::P256,
            NODE,
            Some("DNS:node-1"),
            SIGNER_SERVING,
            &[DS, SA],
            serving,
        ),
        ("serving, no SAN", Key::P256, NODE, None, SIGNER_SERVING, &[DS, SA], Err(SanRequired)),
        (
            "serving, only email SAN",
            Key::P256,
            NODE,
            Some("email:a@b.example"),
            SIGNER_SERVING,
            &[DS, SA],
            Err(SanRequired),
        ),
        (
            "serving, email SAN",
            Key::P256,
            NODE,
            Some("DNS:node-1,email:a@b.example"),
            SIGNER_SERVING,
            &[DS, SA],
            Err(EmailSanNotAllowed),
        ),
        (
            "serving, URI SAN",
            Key::P256,
            NODE,
            Some("DNS:node-1,URI:https://x.example"),
            SIGNER_SERVING,
            &[DS, SA],
            Err(UriSanNotAllowed),
        ),
        (
            "serving, wrong O",
            Key::P256,
            "/O=x/CN=system:node:node-1",
            Some("DNS:node-1"),
            SIGNER_SERVING,
            &[DS, SA],
            Err(Organization),
        ),
        (
            "serving, client usages",
            Key::P256,
            NODE,
            Some("DNS:node-1"),
            SIGNER_SERVING,
            &[DS, CA],
            Err(ServingUsages),
        ),
        (
            "serving, usages before CN",
            Key::P256,
            "/O=system:nodes/CN=x",
            Some("DNS:node-1"),
            SIGNER_SERVING,
            &[DS, CA],
            Err(ServingUsages),
        ),
        (
            "serving, bad CN",
            Key::P256,
            "/O=system:nodes/CN=x",
            Some("DNS:node-1"),
            SIGNER_SERVING,
            &[DS, SA],
            Err(CommonName),
        ),
        // Other signers and generic validation.
        (
            "kube-apiserver-client signer",
            Key::P256,
            NODE,
            None,
            "kubernetes.io/kube-apiserver-client",
            &[DS, CA],
            Err(Signer),
        ),
        (
            "legacy-unknown",
            Key::P256,
            NODE,
            None,
            "kubernetes.io/legacy-unknown",
            &[DS, CA],
            Err(Signer),
        ),
        (
            "malformed signer",
            Key::P256,
            NODE,
            None,
            "kube-apiserver-client-kubelet",
            &[DS, CA],
            Err(Signer),
        ),
        ("no usages", Key::P256, NODE, None, SIGNER_CLIENT, &[], Err(UsagesRequired)),
        (
            "unknown usage",
            Key::P256,
            NODE,
            None,
            SIGNER_CLIENT,
            &[DS, "client-auth"],
            Err(UnknownUsage),
        ),
        (
            "duplicate usage",
            Key::P256,
            NODE,
            None,
            SIGNER_CLIENT,
            &[DS, CA, DS],
            Err(DuplicateUsage),
        ),
        ("usages before signer", Key::P256, NODE, None, "bogus", &[], Err(UsagesRequired)),
    ];
    let mut failures = Vec::new();
    for (name, key, subj, san, signer, usages, want) in cases {
        let pem = openssl_csr(&dir, key, subj, san, None);
        let got = check(&pem, signer, usages, None);
        let want = want.map_err(Error::Policy);
        if got != want {
            failures.push(format!("{name}: got {got:?}, want {want:?}"));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn expiration_and_pem_framing() {
    let dir = TempDir::new();
    let pem = openssl_csr(&dir, Key::P256, NODE, None, None);
    let e = |p| Err(Error::Policy(p));
    assert_eq!(check(&pem, SIGNER_CLIENT, &[DS, CA], Some(600)), Ok(KubeletSigner::Client));
    assert_eq!(check(&pem, SIGNER_CLIENT, &[DS, CA], Some(86_400)), Ok(KubeletSigner::Client));
    assert_eq!(
        check(&pem, SIGNER_CLIENT, &[DS, CA], Some(599)),
        e(PolicyViolation::ExpirationTooShort)
    );
    // A certificate first (even if a CSR follows) is refused: only the first block counts.
    let cert = openssl(&[
        "req",
        "-x509",
        "-key",
        make_key(&dir, Key::P256).to_str().unwrap(),
        "-subj",
        "/CN=x",
        "-days",
        "1",
    ]);
    let mut both = cert.clone();
    both.extend_from_slice(&pem);
    assert_eq!(
        check(&both, SIGNER_CLIENT, &[DS, CA], None),
        e(PolicyViolation::NotCertificateRequest)
    );
    // No PEM at all.
    assert_eq!(
        check(b"", SIGNER_CLIENT, &[DS, CA], None),
        e(PolicyViolation::NotCertificateRequest)
    );
}

#[test]
fn bad_signatures_agree_with_openssl() {
    let dir = TempDir::new();
    let pem = openssl_csr(&dir, Key::P256, NODE, None, None);
    let mut buf = vec![0u8; pem.len()];
    let der = kubeboot::pem::decode_first(&pem, "CERTIFICATE REQUEST", &mut buf).unwrap().to_vec();
    CertificateRequest::from_der(&der).unwrap().verify_signature().unwrap();
    // Flip each byte of the tail (signature) and a few of the body; whenever we say the
    // signature verifies, openssl must agree, and every flip inside the signed part must fail.
    let info_len = CertificateRequest::from_der(&der).unwrap().info_der().len();
    let mut checked = 0;
    for i in (2..der.len()).step_by(7) {
        let mut copy = der.clone();
        copy[i] ^= 0x5a;
        let ours = CertificateRequest::from_der(&copy).map(|r| r.verify_signature());
        let path = dir.path(&format!("flip-{i}.der"));
        std::fs::write(&path, &copy).unwrap();
        let theirs = Command::new("openssl")
            .args(["req", "-inform", "DER", "-in", path.to_str().unwrap(), "-verify", "-noout"])
            .output()
            .unwrap()
            .status
            .success();
        if let Ok(Ok(())) = ours {
            assert!(theirs, "byte {i}: we verify, openssl does not");
        }
        if (4..info_len).contains(&i) {
            assert!(!matches!(ours, Ok(Ok(()))), "byte {i}: flip in signed data verified");
        }
        checked += 1;
    }
    assert!(checked > 20);
}

#[test]
fn many_openssl_p256_signatures_verify() {
    // ECDSA signatures from OpenSSL are random: about half have a "high" s. Go accepts both, so
    // must we.
    let dir = TempDir::new();
    for _ in 0..24 {
        let pem = openssl_csr(&dir, Key::P256, NODE, None, None);
        assert_eq!(check(&pem, SIGNER_CLIENT, &[DS, CA], None), Ok(KubeletSigner::Client));
    }
}

const PY_CSR: &str = r#"
import sys, json
from cryptography import x509
from cryptography.x509.oid import NameOID
from cryptography.x509.name import _ASN1Type
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
import ipaddress

out = []
key = ec.generate_private_key(ec.SECP256R1())
spki = key.public_key().public_bytes(serialization.Encoding.DER, serialization.PublicFormat.SubjectPublicKeyInfo)

def build(name, sans=None):
    b = x509.CertificateSigningRequestBuilder().subject_name(name)
    if sans is not None:
        b = b.add_extension(x509.SubjectAlternativeName(sans), critical=False)
    return b.sign(key, hashes.SHA256()).public_bytes(serialization.Encoding.PEM).decode()

cases = {
  "bmp": build(x509.Name([
      x509.NameAttribute(NameOID.ORGANIZATION_NAME, "system:nodes", _ASN1Type.BMPString),
      x509.NameAttribute(NameOID.COMMON_NAME, "system:node:n\u00e9ud-\U0001F600", _ASN1Type.BMPString)])),
  "printable": build(x509.Name([
      x509.NameAttribute(NameOID.ORGANIZATION_NAME, "system:nodes", _ASN1Type.PrintableString),
      x509.NameAttribute(NameOID.COMMON_NAME, "system:node:n1", _ASN1Type.PrintableString)])),
  "two_cn": build(x509.Name([
      x509.NameAttribute(NameOID.ORGANIZATION_NAME, "system:nodes"),
      x509.NameAttribute(NameOID.COMMON_NAME, "system:node:first"),
      x509.NameAttribute(NameOID.COMMON_NAME, "nope")])),
  "sans": build(x509.Name([
      x509.NameAttribute(NameOID.ORGANIZATION_NAME, "system:nodes"),
      x509.NameAttribute(NameOID.COMMON_NAME, "system:node:n1")]),
      [x509.DNSName("n1.example"), x509.IPAddress(ipaddress.ip_address("192.0.2.1")),
       x509.IPAddress(ipaddress.ip_address("2001:db8::1")), x509.DNSName("n1")]),
}
print(json.dumps({"spki": spki.hex(), "cases": cases}))
"#;

#[test]
fn python_cryptography_cross_check() {
    let out = run(Command::new("/usr/bin/python3").arg("-c").arg(PY_CSR));
    let text = String::from_utf8(out).unwrap();
    // Tiny JSON field extraction (values are strings without escaped quotes except \n).
    let field = |name: &str| -> String {
        let start = text.find(&format!("\"{name}\": \"")).unwrap() + name.len() + 5;
        let end = start + text[start..].find('"').unwrap();
        text[start..end].replace("\\n", "\n")
    };
    let spki_hex = field("spki");
    let mut scratch = vec![0u8; 2048];

    // BMPString subject: O equals system:nodes, CN decodes with non-BMP characters.
    let pem = field("bmp");
    let req = CertificateRequest::from_pem(pem.as_bytes(), &mut scratch).unwrap();
    let hex: String = req.spki_der().iter().map(|b| format!("{b:02x}")).collect();
    assert_eq!(hex, spki_hex);
    assert_eq!(req.key_algorithm(), KeyAlgorithm::EcP256);
    let cn: String = req.common_name().unwrap().chars().collect();
    assert_eq!(cn, "system:node:n\u{e9}ud-\u{1F600}");
    assert_eq!(check(pem.as_bytes(), SIGNER_CLIENT, &[DS, CA], None), Ok(KubeletSigner::Client));

    let pem = field("printable");
    assert_eq!(check(pem.as_bytes(), SIGNER_CLIENT, &[DS, CA], None), Ok(KubeletSigner::Client));

    // Two CNs: Go keeps the last one, which lacks the prefix.
    let pem = field("two_cn");
    let req = CertificateRequest::from_pem(pem.as_bytes(), &mut scratch).unwrap();
    assert_eq!(req.common_name().unwrap().as_str(), Some("nope"));
    assert_eq!(
        check(pem.as_bytes(), SIGNER_CLIENT, &[DS, CA], None),
        Err(Error::Policy(PolicyViolation::CommonName))
    );

    let pem = field("sans");
    let req = CertificateRequest::from_pem(pem.as_bytes(), &mut scratch).unwrap();
    let sans: Vec<SubjectAltName> = req.sans().collect();
    let v6: [u8; 16] = "2001:db8::1".parse::<std::net::Ipv6Addr>().unwrap().octets();
    assert_eq!(
        sans,
        [
            SubjectAltName::Dns("n1.example"),
            SubjectAltName::Ip(&[192, 0, 2, 1]),
            SubjectAltName::Ip(&v6),
            SubjectAltName::Dns("n1"),
        ]
    );
    assert_eq!(check(pem.as_bytes(), SIGNER_SERVING, &[DS, SA], None), Ok(KubeletSigner::Serving));
}

#[test]
fn ecdsa_digest_and_curve_pairs() {
    // Go verifies ECDSA with any SHA-2 digest on any curve; we do P-256/SHA-256 always, the
    // other P-256 digests with the `sha512` feature and P-384 with the `p384` feature.
    let dir = TempDir::new();
    let extended = cfg!(feature = "p384");
    let sha512 = cfg!(feature = "sha512");
    let cases = [
        (Key::P256, "sha256", true),
        (Key::P256, "sha384", sha512),
        (Key::P256, "sha512", sha512),
        (Key::P384, "sha256", extended),
        (Key::P384, "sha384", extended),
        (Key::P384, "sha512", extended),
    ];
    for (key, digest, supported) in cases {
        let pem = openssl_csr(&dir, key, NODE, None, Some(digest));
        let want = if supported {
            Ok(KubeletSigner::Client)
        } else {
            Err(Error::Policy(PolicyViolation::UnsupportedKey))
        };
        assert_eq!(check(&pem, SIGNER_CLIENT, &[DS, CA], None), want, "{digest}");
        if supported {
            // And a corrupted signature fails.
            let mut scratch = vec![0u8; pem.len()];
            let der = kubeboot::pem::decode_first(&pem, "CERTIFICATE REQUEST", &mut scratch)
                .unwrap()
                .to_vec();
            let mut bad = der.clone();
            let n = bad.len();
            bad[n - 2] ^= 1;
            assert_eq!(
                policy::check_kubelet_csr_der(&bad, SIGNER_CLIENT, &[DS, CA], None)
                    .map(|c| c.signer),
                Err(Error::Policy(PolicyViolation::BadSignature)),
                "{digest}"
            );
        }
    }
    // RSA digests.
    for digest in ["sha256", "sha384", "sha512"] {
        let pem = openssl_csr(&dir, Key::Rsa, NODE, None, Some(digest));
        let want = if cfg!(feature = "rsa") {
            Ok(KubeletSigner::Client)
        } else {
            Err(Error::Policy(PolicyViolation::UnsupportedKey))
        };
        assert_eq!(check(&pem, SIGNER_CLIENT, &[DS, CA, KE], None), want, "rsa {digest}");
    }
    // SHA-1 is refused by Go outright.
    let pem = openssl_csr(&dir, Key::P256, NODE, None, Some("sha1"));
    assert_eq!(
        check(&pem, SIGNER_CLIENT, &[DS, CA], None),
        Err(Error::Policy(PolicyViolation::BadSignature))
    );
}
