//! The `kubeboot` binary end to end: exit codes, files, and its outputs read by OpenSSL and kubectl.

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

const BIN: &str = env!("CARGO_BIN_EXE_kubeboot");

struct Dir(PathBuf);
impl Dir {
    fn new(tag: &str) -> Dir {
        let p = std::env::temp_dir().join(format!("kubeboot-cli-{tag}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&p);
        std::fs::create_dir_all(&p).unwrap();
        Dir(p)
    }
    fn p(&self, n: &str) -> PathBuf {
        self.0.join(n)
    }
}
impl Drop for Dir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

fn kb(dir: &Path, args: &[&str]) -> Output {
    Command::new(BIN).args(args).current_dir(dir).output().unwrap()
}

fn sh(dir: &Path, prog: &str, args: &[&str], stdin: Option<&[u8]>) -> Output {
    use std::io::Write;
    let mut c = Command::new(prog)
        .args(args)
        .current_dir(dir)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    if let Some(d) = stdin {
        c.stdin.take().unwrap().write_all(d).unwrap();
    }
    drop(c.stdin.take());
    let o = c.wait_with_output().unwrap();
    assert!(o.status.success(), "{prog} {args:?}: {}", String::from_utf8_lossy(&o.stderr));
    o
}

fn text(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

fn err(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

#[test]
fn token_commands_and_exit_codes() {
    let d = Dir::new("tok");
    let o = kb(&d.0, &["token", "generate"]);
    assert_eq!(o.status.code(), Some(0));
    let tok = text(&o).trim().to_owned();
    assert_eq!(tok.len(), 23);
    let o = kb(&d.0, &["token", "check", &tok]);
    assert_eq!(o.status.code(), Some(0));
    assert_eq!(text(&o).trim(), format!("bootstrap-token-{}", &tok[..6]));
    for bad in
        ["", "abcdef.0123456789abcdeF", "abcdef.0123456789abcdef\n", "abcdef:0123456789abcdef"]
    {
        let o = kb(&d.0, &["token", "check", bad]);
        assert_eq!(o.status.code(), Some(1), "{bad:?}");
        assert_eq!(err(&o).lines().count(), 1);
        assert!(!err(&o).contains("0123456789abcde"), "secret leaked: {}", err(&o));
    }
    assert_eq!(kb(&d.0, &["token", "check"]).status.code(), Some(2));
    assert_eq!(kb(&d.0, &["token", "frobnicate"]).status.code(), Some(2));
    let o = kb(
        &d.0,
        &["token", "secret", "abcdef.0123456789abcdef", "--groups", "system:bootstrappers:Bad"],
    );
    assert_eq!(o.status.code(), Some(1));
    assert!(text(&o).is_empty());
    let o = kb(
        &d.0,
        &["token", "secret", "abcdef.0123456789abcdef", "--usages", "authentication,nope"],
    );
    assert_eq!(o.status.code(), Some(1));
    let o = kb(
        &d.0,
        &["token", "secret", "abcdef.0123456789abcdef", "--expiration", "2026-13-01T00:00:00Z"],
    );
    assert_eq!(o.status.code(), Some(1));
}

#[test]
fn token_secret_is_read_by_kubectl() {
    let d = Dir::new("toksec");
    let o = kb(
        &d.0,
        &[
            "token",
            "secret",
            "abcdef.0123456789abcdef",
            "--expiration",
            "2030-01-02T03:04:05Z",
            "--description",
            "bootstrap token for \"node6752\"",
            "--groups",
            "system:bootstrappers:node6752,system:bootstrappers:worker",
        ],
    );
    assert_eq!(o.status.code(), Some(0), "{}", err(&o));
    std::fs::write(d.p("secret.yaml"), &o.stdout).unwrap();
    // `annotate --local` parses the manifest with kubectl's own decoder and needs no server.
    let j = sh(
        &d.0,
        "kubectl",
        &["annotate", "--local", "-f", "secret.yaml", "x=y", "-o", "json"],
        None,
    );
    let script = r#"
import json, sys
o = json.load(sys.stdin)
assert o['kind'] == 'Secret' and o['type'] == 'bootstrap.kubernetes.io/token', o
assert o['metadata'] == {'name': 'bootstrap-token-abcdef', 'namespace': 'kube-system', 'annotations': {'x': 'y'}}, o['metadata']
d = o['stringData']
assert d['token-id'] == 'abcdef' and d['token-secret'] == '0123456789abcdef'
assert d['expiration'] == '2030-01-02T03:04:05Z'
assert d['usage-bootstrap-authentication'] == 'true' and d['usage-bootstrap-signing'] == 'true'
assert d['auth-extra-groups'] == 'system:bootstrappers:node6752,system:bootstrappers:worker'
assert d['description'] == 'bootstrap token for "node6752"'
print('OK')
"#;
    let o = sh(&d.0, "/usr/bin/python3", &["-c", script], Some(&j.stdout));
    assert_eq!(text(&o).trim(), "OK");
}

#[test]
fn key_generate_is_private_and_never_overwrites() {
    let d = Dir::new("key");
    let o = kb(&d.0, &["key", "generate", "--out", "k.pem"]);
    assert_eq!(o.status.code(), Some(0), "{}", err(&o));
    let meta = std::fs::metadata(d.p("k.pem")).unwrap();
    assert_eq!(meta.permissions().mode() & 0o777, 0o600);
    let before = std::fs::read(d.p("k.pem")).unwrap();
    sh(&d.0, "openssl", &["ec", "-in", "k.pem", "-check", "-noout"], None);
    let o = kb(&d.0, &["key", "generate", "--out", "k.pem"]);
    assert_eq!(o.status.code(), Some(1));
    assert_eq!(std::fs::read(d.p("k.pem")).unwrap(), before, "overwritten without --force");
    let o = kb(&d.0, &["key", "generate", "--out", "k.pem", "--force"]);
    assert_eq!(o.status.code(), Some(0));
    assert_ne!(std::fs::read(d.p("k.pem")).unwrap(), before);
    assert_eq!(std::fs::metadata(d.p("k.pem")).unwrap().permissions().mode() & 0o777, 0o600);
    // Output of key generate never goes to stdout.
    assert!(o.stdout.is_empty());
    let o = kb(&d.0, &["key", "generate", "--out", "no/such/dir/k.pem"]);
    assert_eq!(o.status.code(), Some(1));
}

#[test]
fn csr_commands() {
    let d = Dir::new("csr");
    assert_eq!(kb(&d.0, &["key", "generate", "--out", "k.pem"]).status.code(), Some(0));
    let o = kb(&d.0, &["csr", "--key", "k.pem", "--node-name", "node-1"]);
    assert_eq!(o.status.code(), Some(0));
    std::fs::write(d.p("c.pem"), &o.stdout).unwrap();
    let v = sh(&d.0, "openssl", &["req", "-in", "c.pem", "-verify", "-noout"], None);
    assert!(err(&v).contains("verify OK"));
    assert_eq!(kb(&d.0, &["csr", "check", "c.pem"]).status.code(), Some(0));
    let o = kb(&d.0, &["csr", "check", "c.pem", "--signer", "kubernetes.io/kubelet-serving"]);
    assert_eq!(o.status.code(), Some(1));
    assert!(err(&o).contains("DNS or IP subjectAltName is required"), "{}", err(&o));
    let o = kb(&d.0, &["csr", "check", "c.pem", "--usages", "digital signature,server auth"]);
    assert_eq!(o.status.code(), Some(1));
    let o = kb(
        &d.0,
        &[
            "csr",
            "--key",
            "k.pem",
            "--node-name",
            "node-1",
            "--serving",
            "--dns",
            "node-1.example.com",
            "--ip",
            "10.0.0.1",
        ],
    );
    assert_eq!(o.status.code(), Some(0));
    std::fs::write(d.p("s.pem"), &o.stdout).unwrap();
    assert_eq!(
        kb(&d.0, &["csr", "check", "s.pem", "--signer", "kubernetes.io/kubelet-serving"])
            .status
            .code(),
        Some(0)
    );
    // Object form.
    let o = kb(
        &d.0,
        &[
            "csr",
            "--key",
            "k.pem",
            "--node-name",
            "node-1",
            "--object",
            "--expiration-seconds",
            "600",
        ],
    );
    assert_eq!(o.status.code(), Some(0));
    let j: String = text(&o);
    assert!(j.contains("\"name\":\"node-csr-") && j.contains("\"expirationSeconds\":600"));
    // Bad input: typed one-line errors, nothing on stdout.
    for args in [
        vec!["csr", "--key", "k.pem", "--node-name", "Node_1"],
        vec!["csr", "--key", "k.pem", "--node-name", "n", "--serving", "--ip", "10.0.0"],
        vec!["csr", "--key", "k.pem", "--node-name", "n", "--serving", "--dns", "bad name"],
        vec!["csr", "--key", "k.pem", "--node-name", "n", "--serving"],
        vec![
            "csr",
            "--key",
            "k.pem",
            "--node-name",
            "n",
            "--object",
            "--expiration-seconds",
            "599",
        ],
        vec!["csr", "--key", "missing.pem", "--node-name", "n"],
        vec!["csr", "--key", "c.pem", "--node-name", "n"],
    ] {
        let o = kb(&d.0, &args);
        assert_eq!(o.status.code(), Some(1), "{args:?}");
        assert!(o.stdout.is_empty(), "{args:?}");
        assert_eq!(err(&o).lines().count(), 1, "{args:?}: {}", err(&o));
    }
    assert_eq!(kb(&d.0, &["csr", "--key", "k.pem"]).status.code(), Some(2));
}

/// Issue a certificate for our CSR with OpenSSL as the CA, then validate it.
#[test]
fn verify_and_ca_hash_against_openssl() {
    let d = Dir::new("verify");
    let ossl = |args: &[&str]| sh(&d.0, "openssl", args, None);
    ossl(&["ecparam", "-name", "prime256v1", "-genkey", "-noout", "-out", "ca.key"]);
    ossl(&[
        "req",
        "-x509",
        "-new",
        "-key",
        "ca.key",
        "-subj",
        "/CN=kubernetes",
        "-days",
        "10",
        "-out",
        "ca.crt",
    ]);
    assert_eq!(kb(&d.0, &["key", "generate", "--out", "node.key"]).status.code(), Some(0));
    let o = kb(&d.0, &["csr", "--key", "node.key", "--node-name", "node-9"]);
    std::fs::write(d.p("node.csr"), &o.stdout).unwrap();
    std::fs::write(
        d.p("ext.cnf"),
        "basicConstraints=critical,CA:FALSE\nkeyUsage=critical,digitalSignature\nextendedKeyUsage=clientAuth\n",
    )
    .unwrap();
    ossl(&[
        "x509",
        "-req",
        "-in",
        "node.csr",
        "-CA",
        "ca.crt",
        "-CAkey",
        "ca.key",
        "-CAcreateserial",
        "-days",
        "1",
        "-extfile",
        "ext.cnf",
        "-out",
        "node.crt",
    ]);
    let o = kb(
        &d.0,
        &[
            "verify",
            "--cert",
            "node.crt",
            "--ca",
            "ca.crt",
            "--key",
            "node.key",
            "--node-name",
            "node-9",
            "--output",
            "json",
        ],
    );
    assert_eq!(o.status.code(), Some(0), "{}", err(&o));
    let j = text(&o);
    assert!(j.starts_with("{\"valid\":true,"), "{j}");
    assert!(j.contains("\"ca_subject\":\"CN=kubernetes\""), "{j}");
    // Same result through the CSR instead of the key.
    let o = kb(
        &d.0,
        &[
            "verify",
            "--cert",
            "node.crt",
            "--ca",
            "ca.crt",
            "--csr",
            "node.csr",
            "--node-name",
            "node-9",
        ],
    );
    assert_eq!(o.status.code(), Some(0), "{}", err(&o));
    // Named reasons.
    let o = kb(
        &d.0,
        &[
            "verify",
            "--cert",
            "node.crt",
            "--ca",
            "ca.crt",
            "--key",
            "node.key",
            "--node-name",
            "node-8",
            "--output",
            "json",
        ],
    );
    assert_eq!(o.status.code(), Some(1));
    assert!(text(&o).contains("\"reason\":\"subject-mismatch\""), "{}", text(&o));
    let o = kb(
        &d.0,
        &[
            "verify",
            "--cert",
            "node.crt",
            "--ca",
            "ca.crt",
            "--key",
            "node.key",
            "--node-name",
            "node-9",
            "--now",
            "2099-01-01T00:00:00Z",
            "--output",
            "json",
        ],
    );
    assert_eq!(o.status.code(), Some(1));
    assert!(text(&o).contains("\"reason\":\"expired\""), "{}", text(&o));
    ossl(&["ecparam", "-name", "prime256v1", "-genkey", "-noout", "-out", "other.key"]);
    ossl(&[
        "req",
        "-x509",
        "-new",
        "-key",
        "other.key",
        "-subj",
        "/CN=other",
        "-days",
        "10",
        "-out",
        "other.crt",
    ]);
    let o = kb(
        &d.0,
        &[
            "verify",
            "--cert",
            "node.crt",
            "--ca",
            "other.crt",
            "--key",
            "node.key",
            "--node-name",
            "node-9",
            "--output",
            "json",
        ],
    );
    assert_eq!(o.status.code(), Some(1));
    assert!(text(&o).contains("\"reason\":\"untrusted\""), "{}", text(&o));
    std::fs::write(d.p("garbage.crt"), b"not a certificate").unwrap();
    let o = kb(
        &d.0,
        &[
            "verify",
            "--cert",
            "garbage.crt",
            "--ca",
            "ca.crt",
            "--key",
            "node.key",
            "--node-name",
            "node-9",
            "--output",
            "json",
        ],
    );
    assert_eq!(o.status.code(), Some(1));
    assert!(text(&o).contains("\"reason\":\"malformed\""), "{}", text(&o));

    // ca-hash equals the OpenSSL pipeline, one line per CA.
    let mut bundle = std::fs::read(d.p("ca.crt")).unwrap();
    bundle.extend(std::fs::read(d.p("other.crt")).unwrap());
    std::fs::write(d.p("bundle.crt"), &bundle).unwrap();
    let o = kb(&d.0, &["ca-hash", "--ca", "bundle.crt"]);
    assert_eq!(o.status.code(), Some(0));
    let lines: Vec<String> = text(&o).lines().map(str::to_owned).collect();
    assert_eq!(lines.len(), 2);
    for (i, f) in ["ca.crt", "other.crt"].iter().enumerate() {
        let pubkey = sh(&d.0, "openssl", &["x509", "-in", f, "-pubkey", "-noout"], None);
        let der = sh(&d.0, "openssl", &["pkey", "-pubin", "-outform", "der"], Some(&pubkey.stdout));
        let sum = sh(&d.0, "sha256sum", &[], Some(&der.stdout));
        let hex = text(&sum).split_whitespace().next().unwrap().to_owned();
        assert_eq!(lines[i], format!("sha256:{hex}"));
    }
    let o = kb(&d.0, &["ca-hash", "--ca", "garbage.crt"]);
    assert_eq!(o.status.code(), Some(1));
}

#[test]
fn demo_runs() {
    let d = Dir::new("demo");
    let o = kb(&d.0, &["demo", "--node-name", "edge-1"]);
    assert_eq!(o.status.code(), Some(0), "{}", err(&o));
    let t = text(&o);
    assert!(
        t.contains("kind: Secret")
            && t.contains("BEGIN CERTIFICATE REQUEST")
            && t.contains("node-csr-")
    );
    assert!(t.contains("CN=system:node:edge-1"));
}

#[test]
fn kubeconfig_node_and_show_round_trip_through_kubectl() {
    let d = Dir::new("kcfg");
    std::fs::create_dir_all(d.p("certs")).unwrap();
    sh(
        &d.0,
        "openssl",
        &["ecparam", "-name", "prime256v1", "-genkey", "-noout", "-out", "certs/ca.key"],
        None,
    );
    sh(
        &d.0,
        "openssl",
        &[
            "req",
            "-x509",
            "-new",
            "-key",
            "certs/ca.key",
            "-subj",
            "/CN=ca",
            "-days",
            "2",
            "-out",
            "certs/ca.crt",
        ],
        None,
    );
    let bk = d.p("bootstrap.kubeconfig");
    let k = bk.to_str().unwrap();
    // A relative CA path, as the seed documents write it: resolved against the kubeconfig's dir.
    for args in [
        vec![
            "config",
            "set-cluster",
            "kubernetes",
            "--server",
            "https://10.0.0.1:6443",
            "--certificate-authority",
            "certs/ca.crt",
            "--kubeconfig",
            k,
        ],
        vec![
            "config",
            "set-credentials",
            "kubelet-bootstrap",
            "--token",
            "abcdef.0123456789abcdef",
            "--kubeconfig",
            k,
        ],
        vec![
            "config",
            "set-context",
            "default",
            "--cluster",
            "kubernetes",
            "--user",
            "kubelet-bootstrap",
            "--kubeconfig",
            k,
        ],
        vec!["config", "use-context", "default", "--kubeconfig", k],
    ] {
        sh(&d.0, "kubectl", &args, None);
    }
    let o = kb(&d.0, &["kubeconfig", "show", k, "--output", "json"]);
    assert_eq!(o.status.code(), Some(0), "{}", err(&o));
    let show = text(&o);
    assert!(
        show.contains("\"auth\":\"token\"") && show.contains("\"token_id\":\"abcdef\""),
        "{show}"
    );
    assert!(!show.contains("0123456789abcdef"), "secret printed: {show}");
    let o = kb(
        &d.0,
        &[
            "kubeconfig",
            "node",
            "--bootstrap-kubeconfig",
            k,
            "--cert-dir",
            "pki",
            "--out",
            "node.conf",
        ],
    );
    assert_eq!(o.status.code(), Some(0), "{}", err(&o));
    assert_eq!(std::fs::metadata(d.p("node.conf")).unwrap().permissions().mode() & 0o777, 0o600);
    let view = sh(
        &d.0,
        "kubectl",
        &["config", "view", "--raw", "-o", "json", "--kubeconfig", "node.conf"],
        None,
    );
    let script = r#"
import json, sys
v = json.load(sys.stdin)
root = sys.argv[1]
assert v["current-context"] == "default-context", v
ctx = v["contexts"][0]
assert ctx["name"] == "default-context" and ctx["context"] == {"cluster": "default-cluster", "namespace": "default", "user": "default-auth"}, ctx
cl = v["clusters"][0]
assert cl["name"] == "default-cluster" and cl["cluster"]["server"] == "https://10.0.0.1:6443", cl
assert cl["cluster"]["certificate-authority"] == root + "/certs/ca.crt", cl
u = v["users"][0]["user"]
assert u["client-certificate"] == root + "/pki/kubelet-client-current.pem", u
assert u["client-key"] == u["client-certificate"] and "token" not in u, u
print("OK")
"#;
    let root = std::fs::canonicalize(&d.0).unwrap();
    let o =
        sh(&d.0, "/usr/bin/python3", &["-c", script, root.to_str().unwrap()], Some(&view.stdout));
    assert_eq!(text(&o).trim(), "OK");
    // An unusable kubeconfig is exit 1.
    std::fs::write(d.p("bad.conf"), b"apiVersion: v1\nclusters: &a []\n").unwrap();
    assert_eq!(kb(&d.0, &["kubeconfig", "show", "bad.conf"]).status.code(), Some(1));
}

/// A cluster CA and the node kubeconfig of `node-7` (Python cryptography), in `argv[1]`.
macro_rules! node_fixture_py {
    () => {
        r#"
import datetime, hashlib, ipaddress, json, os, subprocess, sys
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID, ExtendedKeyUsageOID

d, kb = sys.argv[1], sys.argv[2]
now = datetime.datetime.now(datetime.timezone.utc)
ca_key = ec.generate_private_key(ec.SECP256R1())
ca_name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "kubernetes")])
ca = (x509.CertificateBuilder().subject_name(ca_name).issuer_name(ca_name)
      .public_key(ca_key.public_key()).serial_number(7)
      .not_valid_before(now - datetime.timedelta(days=1)).not_valid_after(now + datetime.timedelta(days=3650))
      .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
      .add_extension(x509.KeyUsage(True, False, False, False, False, True, True, False, False), critical=True)
      .sign(ca_key, hashes.SHA256()))
pem = lambda c: c.public_bytes(serialization.Encoding.PEM)
open(f"{d}/ca.crt", "wb").write(pem(ca))
os.makedirs(f"{d}/pki", exist_ok=True)

def leaf(name, key, serial, nb, na, serving=False, sans=()):
    b = (x509.CertificateBuilder()
         .subject_name(x509.Name([x509.NameAttribute(NameOID.ORGANIZATION_NAME, "system:nodes"),
                                  x509.NameAttribute(NameOID.COMMON_NAME, f"system:node:{name}")]))
         .issuer_name(ca_name).public_key(key.public_key()).serial_number(serial)
         .not_valid_before(nb).not_valid_after(na)
         .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
         .add_extension(x509.KeyUsage(True, False, False, False, False, False, False, False, False), critical=True)
         .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH if serving else ExtendedKeyUsageOID.CLIENT_AUTH]), critical=False))
    if sans:
        b = b.add_extension(x509.SubjectAlternativeName(list(sans)), critical=False)
    return b.sign(ca_key, hashes.SHA256())

def pair(prefix, cert, key):
    path = f"{d}/pki/{prefix}-2026-01-01-00-00-00.pem"
    key_pem = key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.TraditionalOpenSSL, serialization.NoEncryption())
    open(path, "wb").write(pem(cert) + key_pem)
    cur = f"{d}/pki/{prefix}-current.pem"
    if os.path.lexists(cur):
        os.remove(cur)
    os.symlink(path, cur)

open(f"{d}/kubelet.conf", "w").write(f"""apiVersion: v1
kind: Config
clusters:
- name: default-cluster
  cluster:
    server: https://127.0.0.1:6443
    certificate-authority: {d}/ca.crt
contexts:
- name: default-context
  context:
    cluster: default-cluster
    user: default-auth
current-context: default-context
users:
- name: default-auth
  user:
    client-certificate: {d}/pki/kubelet-client-current.pem
    client-key: {d}/pki/kubelet-client-current.pem
""")

"#
    };
}

/// Python's `cryptography` (not ours) makes the certificates and reads `status --output json`.
const STATUS_PY: &str = concat!(
    node_fixture_py!(),
    r#"
def status(*extra):
    r = subprocess.run([kb, "status", "--kubeconfig", f"{d}/kubelet.conf", "--cert-dir", f"{d}/pki", "--output", "json", *extra], capture_output=True, text=True)
    return r.returncode, json.loads(r.stdout), r.stderr

def check_cert(j, cert):
    assert j["subject"] == cert.subject.rfc4514_string(), (j["subject"], cert.subject.rfc4514_string())
    assert j["issuer"] == cert.issuer.rfc4514_string(), j
    assert int(j["serial"], 16) == cert.serial_number, j
    utc = lambda t: t.replace(tzinfo=datetime.timezone.utc)  # cryptography 38: naive UTC
    na = utc(cert.not_valid_after)
    assert j["notAfter"] == na.strftime("%Y-%m-%dT%H:%M:%SZ"), (j["notAfter"], na)
    life = cert.not_valid_after - cert.not_valid_before
    lo = (utc(cert.not_valid_before) + life * 7 / 10).replace(microsecond=0)
    assert j["rotationWindow"]["start"] == lo.strftime("%Y-%m-%dT%H:%M:%SZ"), (j["rotationWindow"], lo)

key = ec.generate_private_key(ec.SECP256R1())
client = leaf("node-7", key, 0x1234abcd, now - datetime.timedelta(minutes=5), now + datetime.timedelta(days=1))
pair("kubelet-client", client, key)
rc, j, err = status()
assert rc == 0, (rc, j, err)
assert j["node"] == "node-7", j
c, s = j["certificates"]
assert c["name"] == "client" and c["valid"] and c["present"], c
check_cert(c, client)
assert c["key"] == {"kind": "file", "path": f"{d}/pki/kubelet-client-current.pem"}, c
assert c["rotation"] == "before-window", c
assert s["name"] == "serving" and not s["present"] and s["reason"] == "store-not-found", s
spki = ca.public_key().public_bytes(serialization.Encoding.DER, serialization.PublicFormat.SubjectPublicKeyInfo)
(a,) = j["certificateAuthorities"]
assert a["pin"] == "sha256:" + hashlib.sha256(spki).hexdigest() and a["subject"] == "CN=kubernetes", a
assert j["caSource"] == {"kind": "file", "path": f"{d}/ca.crt"}, j

# A serving pair: valid with its own SANs; against other SANs it is not.
skey = ec.generate_private_key(ec.SECP256R1())
sans = [x509.DNSName("node-7.example.com"), x509.IPAddress(ipaddress.ip_address("10.0.0.7"))]
serving = leaf("node-7", skey, 99, now - datetime.timedelta(minutes=5), now + datetime.timedelta(days=1), True, sans)
pair("kubelet-server", serving, skey)
rc, j, err = status()
assert rc == 0, (rc, j, err)
s = j["certificates"][1]
assert s["valid"] and s["present"], s
check_cert(s, serving)
rc, j, err = status("--dns", "other.example.com", "--ip", "10.0.0.7")
assert rc == 1 and "serving" in err, (rc, err)
s = j["certificates"][1]
assert not s["valid"] and s["reason"] == "subject-mismatch" and s["what"] == "serving-certificate", s

# Expired client certificate: exit 1, still described.
expired = leaf("node-7", key, 5, now - datetime.timedelta(days=3), now - datetime.timedelta(days=1))
pair("kubelet-client", expired, key)
rc, j, err = status()
assert rc == 1 and "client" in err, (rc, err)
c = j["certificates"][0]
assert not c["valid"] and c["reason"] == "expired" and c["residualSeconds"] < 0, c
check_cert(c, expired)
# A certificate of another key: invalid with its typed reason.
pair("kubelet-client", client, skey)
rc, j, err = status()
assert rc == 1 and j["certificates"][0]["reason"] == "key-mismatch", j["certificates"][0]
pair("kubelet-client", expired, key)
print("ok")
"#
);

#[test]
fn status_reads_what_python_cryptography_made() {
    let d = Dir::new("status");
    let root = d.0.to_str().unwrap();
    std::fs::write(d.p("status.py"), STATUS_PY).unwrap();
    let o = sh(&d.0, "/usr/bin/python3", &["status.py", root, BIN], None);
    assert_eq!(text(&o).trim(), "ok");
    // The table of the expired node (left by the script): kubeadm's columns and words.
    let before = sh(&d.0, "ls", &["-lR", "--time-style=full-iso"], None).stdout;
    let o = kb(&d.0, &["status", "--kubeconfig", "kubelet.conf", "--cert-dir", "pki"]);
    assert_eq!(o.status.code(), Some(1), "{}", err(&o));
    let t = text(&o);
    assert!(t.starts_with("CERTIFICATE   EXPIRES"), "{t}");
    let client = t.lines().find(|l| l.starts_with("client ")).unwrap();
    assert!(client.contains("<invalid>") && client.ends_with("invalid: expired"), "{t}");
    assert!(t.contains("CN=system:node:node-7,O=system:nodes"), "{t}");
    assert!(t.contains("CERTIFICATE AUTHORITY") && t.contains("sha256:"), "{t}");
    assert!(t.contains("client: client-certificate: expired (code "), "{t}");
    assert!(err(&o).contains("not usable: client"), "{}", err(&o));
    // It only looks.
    assert_eq!(sh(&d.0, "ls", &["-lR", "--time-style=full-iso"], None).stdout, before);
    // Nothing there: exit 1, the kubeconfig named.
    let o = kb(&d.0, &["status", "--kubeconfig", "none.conf", "--cert-dir", "nothing"]);
    assert_eq!(o.status.code(), Some(1));
    assert!(text(&o).contains("client: kubeconfig: store-not-found"), "{}", text(&o));
}

/// `kubeboot completions bash` is completed by bash itself, and `kubeboot man --dir` writes pages
/// groff formats without a warning.
#[test]
fn completions_and_man_pages() {
    let d = Dir::new("docs");
    for shell in ["bash", "zsh", "fish", "elvish", "powershell"] {
        let o = kb(&d.0, &["completions", shell]);
        assert!(o.status.success() && text(&o).contains("kubeboot"), "{shell}: {}", err(&o));
    }
    assert_eq!(kb(&d.0, &["completions", "tcsh"]).status.code(), Some(2));
    std::fs::write(d.p("kb.bash"), kb(&d.0, &["completions", "bash"]).stdout).unwrap();
    // Bash's own completion machinery: COMP_WORDS/COMP_CWORD as readline sets them, then the
    // function `complete -p kubeboot` names.
    let complete = |words: &[&str]| -> Vec<String> {
        let script = format!(
            "source kb.bash; f=$(complete -p kubeboot | sed -E 's/.*-F ([^ ]+).*/\\1/'); \
             COMP_WORDS=({w}); COMP_CWORD={c}; COMP_LINE=\"{l}\"; COMP_POINT=${{#COMP_LINE}}; \
             $f kubeboot \"${{COMP_WORDS[COMP_CWORD]}}\" \"${{COMP_WORDS[COMP_CWORD-1]}}\"; \
             printf '%s\\n' \"${{COMPREPLY[@]}}\"",
            w = words.iter().map(|w| format!("'{w}'")).collect::<Vec<_>>().join(" "),
            c = words.len() - 1,
            l = words.join(" "),
        );
        text(&sh(&d.0, "bash", &["-c", &script], None)).lines().map(str::to_owned).collect()
    };
    assert_eq!(complete(&["kubeboot", "sta"]), ["status"]);
    assert_eq!(complete(&["kubeboot", "status", "--out"]), ["--output"]);
    assert_eq!(complete(&["kubeboot", "status", "--output", ""]), ["table", "json"]);
    assert!(complete(&["kubeboot", "token", ""]).contains(&"generate".to_owned()));

    let o = kb(&d.0, &["man", "--dir", "man1"]);
    assert!(o.status.success(), "{}", err(&o));
    let mut pages: Vec<String> = std::fs::read_dir(d.p("man1"))
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    pages.sort();
    for p in ["kubeboot.1", "kubeboot-status.1", "kubeboot-token-check.1", "kubeboot-man.1"] {
        assert!(pages.iter().any(|x| x == p), "{p} missing from {pages:?}");
    }
    assert!(!pages.iter().any(|p| p.contains("help")), "{pages:?}");
    for p in &pages {
        let path = format!("man1/{p}");
        // -k: the pages are UTF-8; -ww: every warning; -z: format, print nothing.
        let o = sh(&d.0, "groff", &["-k", "-man", "-Tutf8", "-ww", "-z", &path], None);
        assert!(o.stderr.is_empty(), "{p}: {}", err(&o));
        // -P-cbou: plain text, no bold/underline.
        let page = text(&sh(&d.0, "groff", &["-k", "-man", "-Tutf8", "-P-cbou", &path], None));
        assert!(page.contains("\nNAME\n") && page.contains("\nSYNOPSIS\n"), "{p}: {page}");
        let words = page.split_whitespace().collect::<Vec<_>>().join(" ");
        assert!(words.contains("SYNOPSIS kubeboot"), "{p}: {page}");
        for (file, cmd) in [
            ("kubeboot-token-check.1", "kubeboot token check "),
            ("kubeboot-ca-hash.1", "kubeboot ca-hash "),
            ("kubeboot-status.1", "kubeboot status "),
        ] {
            assert!(p != file || words.contains(&format!("SYNOPSIS {cmd}")), "{p}: {page}");
        }
    }
    let status = std::fs::read_to_string(d.p("man1/kubeboot-status.1")).unwrap();
    assert!(status.contains("kubeadm certs check\\-expiration"), "{status}");
    // Without --dir: the top page on stdout, the same as the file.
    let o = kb(&d.0, &["man"]);
    assert_eq!(o.stdout, std::fs::read(d.p("man1/kubeboot.1")).unwrap());
}

/// `kubeboot run` with valid credentials (made by Python cryptography) sleeps without a request;
/// its `/metrics` and textfile are read by Python's `prometheus_client` parser (not ours).
const METRICS_PY: &str = concat!(
    node_fixture_py!(),
    r#"
import socket, time, urllib.error, urllib.request
from prometheus_client.parser import text_string_to_metric_families

key = ec.generate_private_key(ec.SECP256R1())
client = leaf("node-7", key, 1, now - datetime.timedelta(minutes=5), now + datetime.timedelta(days=2))
pair("kubelet-client", client, key)
skey = ec.generate_private_key(ec.SECP256R1())
sans = [x509.DNSName("node-7.example.com"), x509.IPAddress(ipaddress.ip_address("10.0.0.7"))]
serving = leaf("node-7", skey, 2, now - datetime.timedelta(minutes=5), now + datetime.timedelta(hours=5), True, sans)
pair("kubelet-server", serving, skey)
s = socket.socket(); s.bind(("127.0.0.1", 0)); port = s.getsockname()[1]; s.close()
prom = f"{d}/kubeboot.prom"
p = subprocess.Popen([kb, "run", "--kubeconfig", f"{d}/kubelet.conf", "--cert-dir", f"{d}/pki",
                      "--serving", "--dns", "node-7.example.com", "--ip", "10.0.0.7",
                      "--metrics-bind-address", f"127.0.0.1:{port}", "--metrics-textfile", prom],
                     stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
try:
    # Until both outputs show the serving certificate read (before the agent's first look at
    # the files they are there, with no certificate yet).
    loaded = lambda text: "kubelet_certificate_manager_server_ttl_seconds +Inf" not in text
    for _ in range(100):
        try:
            body = urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=2).read().decode()
            if os.path.exists(prom) and loaded(body) and loaded(open(prom).read()):
                break
        except OSError:
            pass
        time.sleep(0.1)
    r = urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=2)
    assert r.headers["Content-Type"].startswith("text/plain; version=0.0.4"), r.headers
    t_scrape = time.time()
    text = r.read().decode()
    def families(text):
        return {f.name: f for f in text_string_to_metric_families(text)}
    def one(fams, name):
        (sample,) = fams[name].samples
        return sample.value
    for src, t in ((text, t_scrape), (open(prom).read(), os.stat(prom).st_mtime)):
        f = families(src)
        want = {"kubelet_certificate_manager_client_ttl_seconds": "gauge",
                "kubelet_certificate_manager_client_expiration_renew_errors": "counter",
                "kubelet_certificate_manager_server_ttl_seconds": "gauge",
                "kubelet_certificate_manager_server_rotation_seconds": "histogram",
                "kubelet_server_expiration_renew_errors": "counter"}
        assert {n: f[n].type for n in want} == want, {n: f[n].type for n in f}
        ttl = lambda c: c.not_valid_after.replace(tzinfo=datetime.timezone.utc).timestamp() - t
        for name, cert in (("client", client), ("server", serving)):
            v = one(f, f"kubelet_certificate_manager_{name}_ttl_seconds")
            assert abs(v - ttl(cert)) <= 2, (name, v, ttl(cert))
        assert one(f, "kubelet_certificate_manager_client_expiration_renew_errors") == 0
        assert one(f, "kubelet_server_expiration_renew_errors") == 0
        h = {s.labels.get("le"): s.value for s in f["kubelet_certificate_manager_server_rotation_seconds"].samples if s.name.endswith("_bucket")}
        assert list(h)[:3] == ["60", "3600", "14400"] and h["+Inf"] == 0 and len(h) == 11, h
    assert oct(os.stat(prom).st_mode & 0o777) == "0o644", oct(os.stat(prom).st_mode)
    assert urllib.request.urlopen(f"http://127.0.0.1:{port}/healthz", timeout=2).read() == b"ok"
    for path, method, code in (("/nothing", "GET", 404), ("/metrics", "POST", 405)):
        try:
            urllib.request.urlopen(urllib.request.Request(f"http://127.0.0.1:{port}{path}", method=method, data=b"" if method == "POST" else None), timeout=2)
            raise AssertionError(path)
        except urllib.error.HTTPError as e:
            assert e.code == code, (path, e.code)
    assert p.poll() is None, p.stdout.read()
finally:
    p.terminate()
out = p.communicate(timeout=10)[0]
assert "step=credentials kind=client state=valid" in out and "step=sleep" in out, out
assert "step=create" not in out and "transport-error" not in out, out
print("ok")
"#
);

#[test]
fn run_serves_the_kubelets_certificate_metrics() {
    let d = Dir::new("metrics");
    std::fs::write(d.p("metrics.py"), METRICS_PY).unwrap();
    let o = sh(&d.0, "/usr/bin/python3", &["metrics.py", d.0.to_str().unwrap(), BIN], None);
    assert_eq!(text(&o).trim(), "ok");
    // Bad outputs are usage errors before anything runs.
    let o = kb(&d.0, &["run", "--kubeconfig", "k", "--metrics-textfile", "m.txt"]);
    assert_eq!(o.status.code(), Some(1), "{}", err(&o));
    assert!(err(&o).contains("*.prom"), "{}", err(&o));
    // A value the core's grammar refuses: exit 2, its one line (the C and Go agents print the
    // same).
    let o = kb(&d.0, &["run", "--kubeconfig", "k", "--metrics-bind-address", "localhost"]);
    assert_eq!(o.status.code(), Some(2), "{}", err(&o));
    assert_eq!(
        err(&o).trim_end(),
        "--metrics-bind-address \"localhost\": invalid-address: not an address to listen on \
         (like 127.0.0.1:9101 or [::1]:9101)"
    );
}

/// Every flag value the core's grammar judges (`kubeboot::grammar`): refused before anything
/// runs, exit 2, the grammar's one line and nothing else; nothing written.
#[test]
fn refused_flag_values_are_the_grammars_lines() {
    let d = Dir::new("grammar");
    let base = ["bootstrap", "--kubeconfig", "k.conf", "--cert-dir", "pki", "--node-name", "n"];
    let cases: &[(&[&str], &str)] = &[
        (
            &["--wait", "5x"],
            "--wait \"5x\": invalid-duration: not a duration (like 90s, 10m, 1h30m, 0)",
        ),
        (
            &["--rotation-wait", "1.5h"],
            "--rotation-wait \"1.5h\": invalid-duration: not a duration (like 90s, 10m, 1h30m, 0)",
        ),
        (
            &["--ca-refresh-interval=-1m"],
            "--ca-refresh-interval \"-1m\": invalid-duration: not a duration (like 90s, 10m, 1h30m, 0)",
        ),
        (
            &["--serving", "--ip", "300.1.1.1"],
            "--ip \"300.1.1.1\": invalid-ip-address: not an IP address (like 10.0.0.7 or fd00::7)",
        ),
        (
            &["--key", "key.pem"],
            "--key \"key.pem\": invalid-key-reference: not a device for the agent's keys (pkcs11:<token URI with module-path, no object, no PIN> or tpm:; the agent makes its own keys)",
        ),
        (
            &["--key", "tpm:/var/node.pem"],
            "--key \"tpm:/var/node.pem\": invalid-key-reference: not a device for the agent's keys (pkcs11:<token URI with module-path, no object, no PIN> or tpm:; the agent makes its own keys)",
        ),
    ];
    for (extra, line) in cases {
        let args: Vec<&str> = base.iter().chain(extra.iter()).copied().collect();
        let o = kb(&d.0, &args);
        assert_eq!(o.status.code(), Some(2), "{extra:?}: {}", err(&o));
        assert_eq!(err(&o).trim_end(), *line, "{extra:?}");
        assert!(o.stdout.is_empty(), "{extra:?}: {}", text(&o));
    }
    let o = kb(
        &d.0,
        &[
            "discover",
            "--server",
            "https://127.0.0.1:1",
            "--token",
            "abcdef.0123456789abcdef",
            "--unsafe-skip-ca-verification",
            "--timeout",
            "5",
            "--out",
            "b.conf",
        ],
    );
    assert_eq!(o.status.code(), Some(2), "{}", err(&o));
    assert_eq!(
        err(&o).trim_end(),
        "--timeout \"5\": invalid-duration: not a duration (like 90s, 10m, 1h30m, 0)"
    );
    assert_eq!(std::fs::read_dir(&d.0).unwrap().count(), 0, "something was written");
}

/// The systemd unit the package installs: `systemd-analyze verify` (its man page from `kubeboot
/// man`) finds nothing to say, `systemd-analyze security` rates its hardening OK, and its
/// `ExecStart` reads the shipped configuration file (examples/systemd/kubeboot.conf), whose
/// settings are the CLI's (run against an empty directory: a typed failure in JSON lines, not a
/// usage error).
#[test]
fn systemd_unit_verifies_and_its_command_line_parses() {
    let d = Dir::new("systemd");
    let unit = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../systemd/kubeboot.service"
    ))
    .unwrap();
    assert!(unit.contains("\nType=notify\n") && unit.contains("\nRestart=on-failure\n"));
    assert!(unit.contains("\nProtectSystem=strict\n") && unit.contains("\nReadWritePaths="));
    std::fs::write(d.p("kubeboot.service"), unit.replace("/usr/bin/kubeboot", BIN)).unwrap();
    assert!(kb(&d.0, &["man", "--dir", "man/man1"]).status.success());
    let verify = Command::new("systemd-analyze")
        .args(["verify", "./kubeboot.service"])
        .env("MANPATH", d.p("man"))
        .current_dir(&d.0)
        .output()
        .unwrap();
    assert!(
        verify.status.success() && verify.stderr.is_empty() && verify.stdout.is_empty(),
        "{}",
        err(&verify)
    );
    let sec =
        sh(&d.0, "systemd-analyze", &["security", "--offline=true", "./kubeboot.service"], None);
    let out = text(&sec);
    let level = out
        .lines()
        .find_map(|l| l.split("Overall exposure level for kubeboot.service: ").nth(1))
        .unwrap_or_else(|| panic!("{out}"));
    let score: f64 = level.split_whitespace().next().unwrap().parse().unwrap();
    assert!(score <= 2.0 && level.contains("OK"), "exposure {level}");
    // ExecStart: `run --config` the shipped file, its paths moved into the test directory.
    let exec = unit.split("\nExecStart=").nth(1).unwrap().lines().next().unwrap();
    assert_eq!(exec, "/usr/bin/kubeboot run --config /etc/kubeboot/kubeboot.conf");
    let conf =
        std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../systemd/kubeboot.conf"))
            .unwrap();
    let root = d.0.to_str().unwrap();
    let conf = conf
        .replace("/etc/kubernetes", root)
        .replace("/var/lib/kubelet", root)
        .replace("127.0.0.1:10264", "127.0.0.1:0")
        .replace("#node-name = edge-node-1", "node-name = edge-node-1");
    std::fs::write(d.p("kubeboot.conf"), conf).unwrap();
    let args = ["run", "--config", "kubeboot.conf"];
    // A daemon: with nothing to go on it retries (a typed reason in JSON) until SIGTERM.
    use std::io::BufRead;
    let mut child = Command::new(BIN)
        .args(args)
        .current_dir(&d.0)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut lines = Vec::new();
    for line in std::io::BufReader::new(child.stdout.take().unwrap()).lines() {
        let line = line.unwrap();
        let v: serde_json::Value =
            serde_json::from_str(&line).unwrap_or_else(|e| panic!("{e}: {line}"));
        assert_eq!(v["agent"].as_str(), Some("rust"), "{line}");
        lines.push(v);
        if lines.last().unwrap()["step"] == "retry" {
            break;
        }
    }
    // SAFETY: a signal to the child we started.
    unsafe { libc::kill(child.id() as i32, libc::SIGTERM) };
    let status = child.wait().unwrap();
    assert_eq!(status.code(), Some(0), "{lines:?}");
    let retry = lines.last().unwrap();
    assert_eq!(retry["reason"], "store-not-found", "{lines:?}");
}

/// A missing or wrong configuration file: one line on stderr naming the file (and the line
/// where one is to blame), exit status 2, nothing run; a value the core's grammar refuses is
/// the grammar's line (`kubeboot::grammar::write_refusal`) after the file and line.
#[test]
fn run_config_file_errors_are_one_line() {
    let d = Dir::new("config");
    let cases: [(&str, &str, &str); 7] = [
        ("missing.conf", "", "missing.conf: cannot read the configuration file: No such file"),
        ("dashes.conf", "# x\n--kubeconfig = k\n", "dashes.conf:2: a setting is an option's name"),
        (
            "unknown.conf",
            "kubeconfig = k\nwaits = 1h\n",
            "unknown.conf:2: unexpected argument '--waits' found",
        ),
        (
            "twice.conf",
            "kubeconfig = k\n\nkubeconfig = l\n",
            "twice.conf:3: the argument '--kubeconfig <KUBECONFIG>' cannot be used multiple times",
        ),
        (
            "switch.conf",
            "kubeconfig = k\npoll = yes\n",
            "switch.conf:2: unexpected value 'yes' for '--poll' found",
        ),
        (
            "duration.conf",
            "kubeconfig = k\nwait = 1.5h\n",
            "duration.conf:2: --wait \"1.5h\": invalid-duration: not a duration",
        ),
        (
            "empty.conf",
            "# nothing\n",
            "empty.conf: with its settings, the following required arguments were not provided: --kubeconfig <KUBECONFIG>",
        ),
    ];
    for (file, body, want) in cases {
        if !body.is_empty() {
            std::fs::write(d.p(file), body).unwrap();
        }
        let o = kb(&d.0, &["run", "--config", file]);
        assert_eq!(o.status.code(), Some(2), "{file}: {}", err(&o));
        assert_eq!(err(&o).lines().count(), 1, "{file}: {}", err(&o));
        assert!(err(&o).starts_with(&format!("kubeboot: {want}")), "{file}: {}", err(&o));
        assert!(o.stdout.is_empty(), "{file}");
    }
    // The command line and the file together: an option given in both is refused.
    std::fs::write(d.p("k.conf"), "kubeconfig = k\n").unwrap();
    let o = kb(&d.0, &["run", "--config", "k.conf", "--kubeconfig", "other"]);
    assert_eq!(o.status.code(), Some(2), "{}", err(&o));
    assert!(err(&o).contains("k.conf:1: the argument '--kubeconfig"), "{}", err(&o));
}
