//! Our keys and CSRs, checked by tools nobody here wrote: OpenSSL, Python `cryptography`
//! (Debian's `/usr/bin/python3`) and Go's `crypto/x509`.

mod common;

use common::{TempDir, data, ok, python, run};
use kubeboot::api::{USAGES_CLIENT_EC, node_csr_name};
use kubeboot::csr::{CsrBuilder, parse_ip};
use kubeboot::key::NodeKey;
use kubeboot::{Error, pem};

fn key_from_seed(seed: u8) -> NodeKey {
    NodeKey::from_entropy(&[seed; 32]).unwrap()
}

fn csr_pem(key: &NodeKey, b: &CsrBuilder) -> Vec<u8> {
    let mut buf = vec![0u8; b.max_pem_len()];
    let n = b.write_pem(key, &mut buf).unwrap();
    buf.truncate(n);
    buf
}

fn key_pem(key: &NodeKey) -> Vec<u8> {
    let mut buf = [0u8; 512];
    let n = key.to_sec1_pem(&mut buf).unwrap();
    buf[..n].to_vec()
}

#[test]
fn openssl_verifies_client_csr_and_sees_exact_subject() {
    let t = TempDir::new("osslc");
    for (seed, node) in [(1u8, "node-1"), (2, "worker-a.example.com"), (3, "a")] {
        let key = key_from_seed(seed);
        let pem = csr_pem(&key, &CsrBuilder::client(node).unwrap());
        let f = t.write("c.pem", &pem);
        // OpenSSL 3.0 exits 0 either way; its verdict is in the message.
        let o =
            ok(&t.0, "openssl", &["req", "-in", f.to_str().unwrap(), "-verify", "-noout"], None);
        let said = format!("{}{}", o.text(), o.stderr);
        assert!(said.contains("verify OK") && !said.contains("failure"), "{said}");
        let subj = ok(
            &t.0,
            "openssl",
            &["req", "-in", "c.pem", "-noout", "-subject", "-nameopt", "RFC2253"],
            None,
        );
        assert_eq!(subj.text().trim(), format!("subject=CN=system:node:{node},O=system:nodes"));
        let text = ok(&t.0, "openssl", &["req", "-in", "c.pem", "-noout", "-text"], None).text();
        assert!(
            text.contains("Attributes:\n            (none)"),
            "client CSR must carry no attributes:\n{text}"
        );
        assert!(!text.contains("X509v3"), "client CSR must carry no extensions:\n{text}");
        assert!(text.contains("ecdsa-with-SHA256"));
        // Public key in the CSR is ours.
        let spki = ok(&t.0, "openssl", &["req", "-in", "c.pem", "-noout", "-pubkey"], None);
        let der = ok(&t.0, "openssl", &["pkey", "-pubin", "-outform", "der"], Some(&spki.stdout));
        assert_eq!(der.stdout, key.public_key_spki());
    }
}

#[test]
fn openssl_rejects_a_tampered_csr() {
    let t = TempDir::new("osslt");
    let key = key_from_seed(9);
    let b = CsrBuilder::client("node-1").unwrap();
    let mut der = vec![0u8; b.max_der_len()];
    let n = b.write_der(&key, &mut der).unwrap();
    der.truncate(n);
    // Flip a byte of the common name inside the signed part.
    let pos = der.windows(6).position(|w| w == b"node-1").unwrap();
    der[pos] ^= 0x01;
    let f = t.write("bad.der", &der);
    let o = run(
        &t.0,
        "openssl",
        &["req", "-inform", "der", "-in", f.to_str().unwrap(), "-verify", "-noout"],
        None,
    );
    let said = format!("{}{}", o.text(), o.stderr);
    assert!(
        o.status != 0 || said.contains("verify failure"),
        "openssl accepted a tampered CSR: {said}"
    );
    assert!(!said.contains("verify OK"), "{said}");
}

#[test]
fn python_cryptography_reads_client_and_serving_csrs() {
    let t = TempDir::new("pyc");
    let key = key_from_seed(4);
    t.write("client.pem", &csr_pem(&key, &CsrBuilder::client("node-7").unwrap()));
    let dns = ["node-7.example.com", "node-7"];
    let ips = [parse_ip("10.1.2.3").unwrap(), parse_ip("fd00::7").unwrap()];
    t.write("serving.pem", &csr_pem(&key, &CsrBuilder::serving("node-7", &dns, &ips).unwrap()));
    let script = r#"
import sys
from cryptography import x509
from cryptography.x509.oid import NameOID
def load(p):
    return x509.load_pem_x509_csr(open(p,'rb').read())
for p in ['client.pem', 'serving.pem']:
    c = load(p)
    assert c.is_signature_valid, p
    attrs = [(a.oid.dotted_string, a.value) for a in c.subject]
    print(p, attrs)
    assert attrs == [('2.5.4.10', 'system:nodes'), ('2.5.4.3', 'system:node:node-7')], attrs
    assert c.signature_hash_algorithm.name == 'sha256'
c = load('client.pem')
assert len(c.extensions) == 0, list(c.extensions)
s = load('serving.pem')
san = s.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
dns = san.get_values_for_type(x509.DNSName)
ips = [str(i) for i in san.get_values_for_type(x509.IPAddress)]
print(dns, ips)
assert dns == ['node-7.example.com', 'node-7'], dns
assert ips == ['10.1.2.3', 'fd00::7'], ips
print('OK')
"#;
    let o = python(&t.0, script, &[]);
    assert!(o.text().ends_with("OK\n"), "{}", o.text());
}

#[test]
fn keys_we_write_are_read_by_openssl_and_python() {
    let t = TempDir::new("keyw");
    let key = key_from_seed(5);
    t.write("k.pem", &key_pem(&key));
    let o = ok(&t.0, "openssl", &["pkey", "-in", "k.pem", "-pubout", "-outform", "der"], None);
    assert_eq!(o.stdout, key.public_key_spki());
    ok(&t.0, "openssl", &["ec", "-in", "k.pem", "-check", "-noout"], None);
    let script = r#"
from cryptography.hazmat.primitives import serialization
k = serialization.load_pem_private_key(open('k.pem','rb').read(), None)
assert k.curve.name == 'secp256r1'
import sys
sys.stdout.buffer.write(k.public_key().public_bytes(serialization.Encoding.DER, serialization.PublicFormat.SubjectPublicKeyInfo))
"#;
    assert_eq!(python(&t.0, script, &[]).stdout, key.public_key_spki());
}

#[test]
fn keys_openssl_and_python_write_are_read_by_us() {
    let t = TempDir::new("keyr");
    let mut made: Vec<(String, bool)> = Vec::new(); // (file, is_der)
    ok(
        &t.0,
        "openssl",
        &["ecparam", "-name", "prime256v1", "-genkey", "-noout", "-out", "sec1.pem"],
        None,
    );
    made.push(("sec1.pem".into(), false));
    ok(
        &t.0,
        "openssl",
        &["ecparam", "-name", "prime256v1", "-genkey", "-out", "sec1params.pem"],
        None,
    );
    made.push(("sec1params.pem".into(), false));
    ok(
        &t.0,
        "openssl",
        &["genpkey", "-algorithm", "EC", "-pkeyopt", "ec_paramgen_curve:P-256", "-out", "p8.pem"],
        None,
    );
    made.push(("p8.pem".into(), false));
    ok(&t.0, "openssl", &["pkey", "-in", "p8.pem", "-outform", "der", "-out", "p8.der"], None);
    made.push(("p8.der".into(), true));
    ok(&t.0, "openssl", &["ec", "-in", "sec1.pem", "-outform", "der", "-out", "sec1.der"], None);
    made.push(("sec1.der".into(), true));
    python(
        &t.0,
        r#"
from cryptography.hazmat.primitives import serialization as s
from cryptography.hazmat.primitives.asymmetric import ec
k = ec.generate_private_key(ec.SECP256R1())
for name, enc, fmt in [('py_trad.pem', s.Encoding.PEM, s.PrivateFormat.TraditionalOpenSSL),
                       ('py_p8.pem', s.Encoding.PEM, s.PrivateFormat.PKCS8),
                       ('py_p8.der', s.Encoding.DER, s.PrivateFormat.PKCS8),
                       ('py_trad.der', s.Encoding.DER, s.PrivateFormat.TraditionalOpenSSL)]:
    open(name, 'wb').write(k.private_bytes(enc, fmt, s.NoEncryption()))
"#,
        &[],
    );
    for f in ["py_trad.pem", "py_p8.pem"] {
        made.push((f.into(), false));
    }
    for f in ["py_p8.der", "py_trad.der"] {
        made.push((f.into(), true));
    }
    for (f, is_der) in made {
        let bytes = std::fs::read(t.path(&f)).unwrap();
        let key = if is_der { NodeKey::from_der(&bytes) } else { NodeKey::from_pem(&bytes) }
            .unwrap_or_else(|e| panic!("{f}: {e}"));
        let inform = if is_der { "der" } else { "pem" };
        let spki = ok(
            &t.0,
            "openssl",
            &["pkey", "-inform", inform, "-in", &f, "-pubout", "-outform", "der"],
            None,
        );
        assert_eq!(spki.stdout, key.public_key_spki(), "{f}");
    }
}

#[test]
fn rsa_and_other_curves_are_unsupported() {
    let t = TempDir::new("keyu");
    ok(&t.0, "openssl", &["genrsa", "-traditional", "-out", "rsa1.pem", "2048"], None);
    ok(
        &t.0,
        "openssl",
        &["genpkey", "-algorithm", "RSA", "-pkeyopt", "rsa_keygen_bits:2048", "-out", "rsa8.pem"],
        None,
    );
    ok(&t.0, "openssl", &["pkey", "-in", "rsa8.pem", "-outform", "der", "-out", "rsa1.der"], None);
    ok(
        &t.0,
        "openssl",
        &["pkcs8", "-topk8", "-nocrypt", "-in", "rsa8.pem", "-outform", "der", "-out", "rsa8.der"],
        None,
    );
    ok(
        &t.0,
        "openssl",
        &["ecparam", "-name", "secp384r1", "-genkey", "-noout", "-out", "p384.pem"],
        None,
    );
    ok(
        &t.0,
        "openssl",
        &[
            "genpkey",
            "-algorithm",
            "EC",
            "-pkeyopt",
            "ec_paramgen_curve:P-384",
            "-out",
            "p384p8.pem",
        ],
        None,
    );
    ok(&t.0, "openssl", &["genpkey", "-algorithm", "ED25519", "-out", "ed.pem"], None);
    for f in ["rsa1.pem", "rsa8.pem", "p384.pem", "p384p8.pem", "ed.pem"] {
        let bytes = std::fs::read(t.path(f)).unwrap();
        assert_eq!(NodeKey::from_pem(&bytes).unwrap_err(), Error::UnsupportedKey, "{f}");
    }
    for f in ["rsa1.der", "rsa8.der"] {
        let der = std::fs::read(t.path(f)).unwrap();
        assert_eq!(NodeKey::from_der(&der).unwrap_err(), Error::UnsupportedKey, "{f}");
    }
}

/// The table of docs/test-vectors.md, all twelve rows: K1 (P-256), K2 (P-384) and K3 (RSA-2048).
/// The SPKI of K2 and K3 comes from OpenSSL, since we do not load such keys ourselves.
#[test]
fn node_csr_names_reproduce_the_spec_table() {
    let t = TempDir::new("names");
    let new_ec: &[&str] = &USAGES_CLIENT_EC;
    let new_rsa: &[&str] = &["digital signature", "client auth", "key encipherment"];
    let old: &[&str] = &["digital signature", "key encipherment", "client auth"];
    let table: [(&str, &str, &[&str], &str); 12] = [
        ("p256.key", "node-1", new_ec, "node-csr-n8Gs_E-Z9L7aSxQqzzA00Csg_R1hDXOPVUFrdIQkVzo"),
        ("p256.key", "node-1", old, "node-csr-R-IXJPCz2Q_Fb46JHu923Uag9Vr8kP_9zZKpB_cKb_o"),
        (
            "p256.key",
            "worker-a.example.com",
            new_ec,
            "node-csr-o8Hoe6OLrh1HbJkDczyoHirTociXreM6Y1I3ugsSvvs",
        ),
        (
            "p256.key",
            "worker-a.example.com",
            old,
            "node-csr-FMiWeGEreLw9ppZtrCcfY1ZOp3YfNbSME-cVxI53cbU",
        ),
        (
            "dontUseThisKey.pem",
            "node-1",
            new_ec,
            "node-csr-9R60w1Hi_ZXj7QrtNEM5u7i15tkeyo8k3Af2DsFfIxQ",
        ),
        (
            "dontUseThisKey.pem",
            "node-1",
            old,
            "node-csr-CF6uKEeUpin0R7HlVO1tbKXZDBf1_sCK5yDTquGHGos",
        ),
        (
            "dontUseThisKey.pem",
            "worker-a.example.com",
            new_ec,
            "node-csr-pWcIwgqTr4scCaJhXPMokginPG60Z7Kjaz7X-SR2DvQ",
        ),
        (
            "dontUseThisKey.pem",
            "worker-a.example.com",
            old,
            "node-csr-8MOLVco900EJ81xTSNj0RwRpZ6ummeSggI3u1q0EVj8",
        ),
        ("rsa2048.key", "node-1", new_rsa, "node-csr-yWZwwv70F7iRaChct6AT-I5ixl66guyZRxy-3TQihzc"),
        ("rsa2048.key", "node-1", old, "node-csr-Q0I8XpRyhT581G4waoo22RhrwHqJdvWXLsjCt0V4OXA"),
        (
            "rsa2048.key",
            "worker-a.example.com",
            new_rsa,
            "node-csr-08laah_QDgDW_DxcnkAETrmQqlV-QVxL4kyxACg8Xvs",
        ),
        (
            "rsa2048.key",
            "worker-a.example.com",
            old,
            "node-csr-avYeKLIkDXzP7zHmwXuTzwPC2t_SkyzjmdYB6XoNF3o",
        ),
    ];
    for (file, node, usages, want) in table {
        let path = data(file);
        let spki = ok(
            &t.0,
            "openssl",
            &["pkey", "-in", path.to_str().unwrap(), "-pubout", "-outform", "der"],
            None,
        )
        .stdout;
        let cn = format!("system:node:{node}");
        let got = node_csr_name(&spki, &cn, &["system:nodes"], usages);
        assert_eq!(got.as_str(), want, "{file} {node} {usages:?}");
        if file == "p256.key" {
            let key = NodeKey::from_pem(&std::fs::read(&path).unwrap()).unwrap();
            assert_eq!(key.public_key_spki().as_slice(), spki.as_slice());
        }
    }
}

/// Go's `x509.CreateCertificateRequest` must produce the same to-be-signed bytes as we do for the
/// same key, subject and SANs (its ECDSA signatures are randomized, so compare the signed part).
#[test]
fn go_x509_builds_the_same_tbs() {
    if run(std::path::Path::new("."), "go", &["version"], None).status != 0 {
        panic!("go is required for this cross-check");
    }
    let t = TempDir::new("gotbs");
    let key_path = data("p256.key");
    let key = NodeKey::from_pem(&std::fs::read(&key_path).unwrap()).unwrap();
    let go = r#"package main

import (
	"crypto/ecdsa"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/hex"
	"encoding/pem"
	"fmt"
	"net"
	"os"
)

func main() {
	b, _ := os.ReadFile(os.Args[1])
	blk, _ := pem.Decode(b)
	k, err := x509.ParseECPrivateKey(blk.Bytes)
	if err != nil { panic(err) }
	var _ *ecdsa.PrivateKey = k
	for _, serving := range []bool{false, true} {
		tmpl := &x509.CertificateRequest{Subject: pkix.Name{Organization: []string{"system:nodes"}, CommonName: "system:node:" + os.Args[2]}}
		if serving {
			tmpl.DNSNames = []string{"node-1.example.com", "node-1"}
			tmpl.IPAddresses = []net.IP{net.ParseIP("10.0.0.1"), net.ParseIP("fd00::1")}
		}
		der, err := x509.CreateCertificateRequest(rand.Reader, tmpl, k)
		if err != nil { panic(err) }
		csr, err := x509.ParseCertificateRequest(der)
		if err != nil { panic(err) }
		fmt.Println(hex.EncodeToString(csr.RawTBSCertificateRequest))
	}
}
"#;
    t.write("main.go", go.as_bytes());
    t.write("go.mod", b"module tbscheck\n\ngo 1.21\n");
    let o = ok(&t.0, "go", &["run", ".", key_path.to_str().unwrap(), "worker-a.example.com"], None);
    let text = o.text();
    let mut lines = text.lines();
    let go_client = lines.next().unwrap();
    let go_serving = lines.next().unwrap();

    let hex = |b: &[u8]| b.iter().map(|x| format!("{x:02x}")).collect::<String>();
    let mut buf = [0u8; 2048];
    let n = CsrBuilder::client("worker-a.example.com")
        .unwrap()
        .write_tbs(&key.public_key_spki(), &mut buf)
        .unwrap();
    assert_eq!(hex(&buf[..n]), go_client, "client TBS differs from Go's");
    let ips = [parse_ip("10.0.0.1").unwrap(), parse_ip("fd00::1").unwrap()];
    let dns = ["node-1.example.com", "node-1"];
    let n = CsrBuilder::serving("worker-a.example.com", &dns, &ips)
        .unwrap()
        .write_tbs(&key.public_key_spki(), &mut buf)
        .unwrap();
    assert_eq!(hex(&buf[..n]), go_serving, "serving TBS differs from Go's");
}

#[test]
fn pem_output_matches_go_pem_layout() {
    // Go's pem.EncodeToMemory: 64-column lines, LF, trailing newline. OpenSSL writes the same.
    let t = TempDir::new("pemlay");
    let key = key_from_seed(6);
    let ours = csr_pem(&key, &CsrBuilder::client("node-1").unwrap());
    t.write("c.pem", &ours);
    let o = ok(&t.0, "openssl", &["req", "-in", "c.pem"], None);
    assert_eq!(o.stdout, ours);
    let mut der = [0u8; 1024];
    let n = pem::decode_first(&ours, "CERTIFICATE REQUEST", &mut der).unwrap();
    assert!(n.len() > 200);
}
