//! Cross-checks of `kubeboot::kubeconfig` against the real `kubectl` (offline:
//! `kubectl config ... --kubeconfig FILE` never contacts a server).
//!
//! - kubeconfigs written by `kubectl config set-cluster/set-credentials/set-context/use-context`
//!   (as in the setup guides: embedded CA, CA file, relative paths, several contexts, odd names)
//!   are read by our reader, in YAML and as `kubectl config view --raw -o json`; every field is
//!   compared with kubectl's own JSON view (the oracle);
//! - node and bootstrap kubeconfigs written by our writers are read back by kubectl;
//! - hand-written YAML variants are read by both and must agree;
//! - constructs outside our subset (anchors, tags, block scalars, ...) and garbage are errors.

mod common;

use common::{TempDir, ok, run};
use kubeboot::kubeconfig::{
    BOOTSTRAP_USER, BootstrapKubeconfig, Kubeconfig, NODE_CLUSTER, NODE_CONTEXT, NODE_USER,
    NodeKubeconfig, Scalar, write_bootstrap_kubeconfig, write_node_kubeconfig,
};
use serde_json::Value;
use std::path::Path;

const TOKEN: &str = "07401b.f395accd246ae52d";

fn kubectl(dir: &Path, kc: &str, args: &[&str]) {
    let mut all: Vec<&str> = vec!["config"];
    all.extend_from_slice(args);
    all.push("--kubeconfig");
    all.push(kc);
    ok(dir, "kubectl", &all, None);
}

fn view(dir: &Path, kc: &str) -> Value {
    let o =
        ok(dir, "kubectl", &["config", "view", "--raw", "-o", "json", "--kubeconfig", kc], None);
    serde_json::from_slice(&o.stdout).unwrap()
}

fn dec(s: Option<Scalar<'_>>) -> Option<String> {
    let s = s?;
    let mut buf = vec![0u8; s.decoded_len()];
    let d = s.decode_into(&mut buf).unwrap().to_owned();
    assert!(s.eq_str(&d));
    if d.is_empty() { None } else { Some(d) }
}

fn js(v: &Value, key: &str) -> Option<String> {
    v.get(key).and_then(Value::as_str).filter(|s| !s.is_empty()).map(str::to_owned)
}

fn entries<'v>(v: &'v Value, key: &str) -> Vec<&'v Value> {
    v.get(key).and_then(Value::as_array).map(|a| a.iter().collect()).unwrap_or_default()
}

/// Compare everything our reader exposes with kubectl's JSON view.
fn assert_matches_kubectl(ours: &Kubeconfig<'_>, view: &Value) {
    assert_eq!(dec(ours.current_context()), js(view, "current-context"));
    let clusters = entries(view, "clusters");
    assert_eq!(ours.clusters().len(), clusters.len());
    for c in clusters {
        let name = c["name"].as_str().unwrap();
        let o = ours.cluster(name).unwrap_or_else(|| panic!("cluster {name:?} missing"));
        let k = &c["cluster"];
        assert_eq!(dec(o.server), js(k, "server"), "{name}");
        assert_eq!(dec(o.certificate_authority), js(k, "certificate-authority"));
        assert_eq!(dec(o.certificate_authority_data), js(k, "certificate-authority-data"));
        assert_eq!(dec(o.tls_server_name), js(k, "tls-server-name"));
        let insecure = k.get("insecure-skip-tls-verify").and_then(Value::as_bool).unwrap_or(false);
        assert_eq!(o.insecure_skip_tls_verify, insecure);
        if let Some(data) = o.certificate_authority_data {
            let mut buf = vec![0u8; data.raw().len()];
            let pem = data.decode_base64_into(&mut buf).unwrap();
            assert!(pem.starts_with(b"-----BEGIN CERTIFICATE-----"));
        }
    }
    let users = entries(view, "users");
    assert_eq!(ours.users().len(), users.len());
    for u in users {
        let name = u["name"].as_str().unwrap();
        let o = ours.user(name).unwrap_or_else(|| panic!("user {name:?} missing"));
        let k = &u["user"];
        assert_eq!(dec(o.token), js(k, "token"));
        assert_eq!(dec(o.token_file), js(k, "tokenFile"));
        assert_eq!(dec(o.client_certificate), js(k, "client-certificate"));
        assert_eq!(dec(o.client_certificate_data), js(k, "client-certificate-data"));
        assert_eq!(dec(o.client_key), js(k, "client-key"));
        assert_eq!(dec(o.client_key_data), js(k, "client-key-data"));
    }
    let contexts = entries(view, "contexts");
    assert_eq!(ours.contexts().len(), contexts.len());
    for c in contexts {
        let name = c["name"].as_str().unwrap();
        let o = ours.context(name).unwrap_or_else(|| panic!("context {name:?} missing"));
        let k = &c["context"];
        assert_eq!(dec(o.cluster), js(k, "cluster"));
        assert_eq!(dec(o.user), js(k, "user"));
        assert_eq!(dec(o.namespace), js(k, "namespace"));
    }
}

/// Read `file` (YAML) and kubectl's JSON view of it with our reader; both must match kubectl.
fn crosscheck(dir: &Path, file: &str) -> (Vec<u8>, Value) {
    let yaml = std::fs::read(dir.join(file)).unwrap();
    let v = view(dir, file);
    {
        let ours = Kubeconfig::parse(&yaml).unwrap_or_else(|e| {
            panic!("{e:?} reading {}", String::from_utf8_lossy(&yaml));
        });
        assert_matches_kubectl(&ours, &v);
    }
    let json = serde_json::to_vec_pretty(&v).unwrap();
    let ours_json = Kubeconfig::parse(&json).unwrap();
    assert_eq!(ours_json.format(), kubeboot::kubeconfig::Format::Json);
    assert_matches_kubectl(&ours_json, &v);
    (yaml, v)
}

fn make_ca(dir: &Path) {
    ok(
        dir,
        "openssl",
        &[
            "req",
            "-x509",
            "-newkey",
            "ec",
            "-pkeyopt",
            "ec_paramgen_curve:P-256",
            "-nodes",
            "-keyout",
            "ca.key",
            "-out",
            "ca.crt",
            "-subj",
            "/CN=kubernetes",
            "-days",
            "3650",
        ],
        None,
    );
}

/// Seed 003 style: embedded CA, token user, one context.
fn write_embedded(dir: &Path, f: &str) {
    kubectl(
        dir,
        f,
        &[
            "set-cluster",
            "kubernetes",
            "--certificate-authority=ca.crt",
            "--embed-certs=true",
            "--server=https://k8smaster:6443",
        ],
    );
    kubectl(dir, f, &["set-credentials", "kubelet-bootstrap", &format!("--token={TOKEN}")]);
    kubectl(
        dir,
        f,
        &["set-context", "default", "--cluster=kubernetes", "--user=kubelet-bootstrap"],
    );
    kubectl(dir, f, &["use-context", "default"]);
}

/// Seed 000 style: CA file path (not embedded), token user.
fn write_file_ca(dir: &Path, f: &str) {
    kubectl(
        dir,
        f,
        &[
            "set-cluster",
            "bootstrap",
            "--server=https://192.168.5.30:6443",
            "--certificate-authority=/var/lib/kubernetes/ca.crt",
        ],
    );
    kubectl(dir, f, &["set-credentials", "kubelet-bootstrap", &format!("--token={TOKEN}")]);
    kubectl(
        dir,
        f,
        &["set-context", "bootstrap", "--user=kubelet-bootstrap", "--cluster=bootstrap"],
    );
    kubectl(dir, f, &["use-context", "bootstrap"]);
}

/// Several clusters/users/contexts, relative paths, embedded client certs, odd names.
fn write_multi(dir: &Path, f: &str) {
    make_client_pair(dir);
    kubectl(
        dir,
        f,
        &["set-cluster", "ins", "--server=https://[::1]:6443", "--insecure-skip-tls-verify=true"],
    );
    kubectl(
        dir,
        f,
        &[
            "set-cluster",
            "rel",
            "--server=https://10.0.0.1:6443",
            "--certificate-authority=pki/ca.crt",
            "--tls-server-name=api.internal",
        ],
    );
    kubectl(
        dir,
        f,
        &[
            "set-cluster",
            "embedded",
            "--server=https://h:443",
            "--certificate-authority=ca.crt",
            "--embed-certs",
        ],
    );
    kubectl(dir, f, &["set-cluster", "123", "--server=https://num:1"]);
    kubectl(dir, f, &["set-cluster", "yes", "--server=https://bool:1"]);
    kubectl(dir, f, &["set-credentials", "tok", &format!("--token={TOKEN}")]);
    kubectl(dir, f, &["set-credentials", "numtok", "--token=123456.1234567890123456"]);
    kubectl(
        dir,
        f,
        &[
            "set-credentials",
            "files",
            "--client-certificate=certs/client.pem",
            "--client-key=/etc/k/key.pem",
        ],
    );
    kubectl(
        dir,
        f,
        &[
            "set-credentials",
            "embedded",
            "--client-certificate=client.crt",
            "--client-key=client.key",
            "--embed-certs",
        ],
    );
    kubectl(dir, f, &["set-credentials", "tokfile", "--token=x"]);
    kubectl(dir, f, &["set", "users.tokfile.tokenFile", "secrets/token"]);
    kubectl(
        dir,
        f,
        &[
            "set-context",
            "weird: name #1",
            "--cluster=rel",
            "--user=files",
            "--namespace=kube-system",
        ],
    );
    kubectl(dir, f, &["set-context", "emb", "--cluster=embedded", "--user=embedded"]);
    kubectl(
        dir,
        f,
        &["set-context", "\"quoted\" 'ctx' é", "--cluster=123", "--user=numtok", "--namespace=n1"],
    );
    kubectl(dir, f, &["set-context", "ins", "--cluster=ins", "--user=tok"]);
    kubectl(dir, f, &["set-context", "boolish", "--cluster=yes", "--user=tokfile"]);
    kubectl(dir, f, &["use-context", "weird: name #1"]);
}

fn make_client_pair(dir: &Path) {
    ok(
        dir,
        "openssl",
        &[
            "req",
            "-x509",
            "-newkey",
            "ec",
            "-pkeyopt",
            "ec_paramgen_curve:P-256",
            "-nodes",
            "-keyout",
            "client.key",
            "-out",
            "client.crt",
            "-subj",
            "/CN=system:node:n1/O=system:nodes",
            "-days",
            "30",
        ],
        None,
    );
}

#[test]
fn kubectl_written_kubeconfigs_read_identically() {
    let t = TempDir::new("kc-kubectl");
    make_ca(&t.0);
    write_embedded(&t.0, "embedded.yaml");
    write_file_ca(&t.0, "file-ca.yaml");
    write_multi(&t.0, "multi.yaml");

    let (yaml, _) = crosscheck(&t.0, "embedded.yaml");
    let kc = Kubeconfig::parse(&yaml).unwrap();
    let r = kc.resolve().unwrap();
    assert!(r.server().eq_str("https://k8smaster:6443"));
    assert!(r.user.token.unwrap().eq_str(TOKEN));
    let mut buf = vec![0u8; 4096];
    let kubeboot::kubeconfig::Source::Data(d) = r.cluster.ca_source() else { panic!() };
    let pem = d.decode_base64_into(&mut buf).unwrap();
    assert_eq!(pem, std::fs::read(t.path("ca.crt")).unwrap().as_slice());

    let (yaml, _) = crosscheck(&t.0, "file-ca.yaml");
    let kc = Kubeconfig::parse(&yaml).unwrap();
    let r = kc.resolve().unwrap();
    let kubeboot::kubeconfig::Source::File(f) = r.cluster.ca_source() else { panic!() };
    assert!(f.eq_str("/var/lib/kubernetes/ca.crt") && !f.is_relative_path());

    let (yaml, _) = crosscheck(&t.0, "multi.yaml");
    let kc = Kubeconfig::parse(&yaml).unwrap();
    let r = kc.resolve().unwrap();
    assert!(r.context_name.eq_str("weird: name #1"));
    assert!(r.cluster.certificate_authority.unwrap().is_relative_path());
    assert!(r.cluster.tls_server_name.unwrap().eq_str("api.internal"));
    assert!(r.user.client_certificate.unwrap().is_relative_path());
    assert!(!r.user.client_key.unwrap().is_relative_path());
    assert!(r.namespace().unwrap().eq_str("kube-system"));
    let r = kc.resolve_context("\"quoted\" 'ctx' é").unwrap();
    assert!(r.cluster_name.eq_str("123"));
    assert!(r.user.token.unwrap().eq_str("123456.1234567890123456"));
    let r = kc.resolve_context("boolish").unwrap();
    assert!(r.user.token_file.unwrap().is_relative_path());
    let r = kc.resolve_context("emb").unwrap();
    let kubeboot::kubeconfig::Source::Data(k) = r.user.client_key_source() else { panic!() };
    let key = k.decode_base64_into(&mut buf).unwrap();
    assert_eq!(key, std::fs::read(t.path("client.key")).unwrap().as_slice());
    let r = kc.resolve_context("ins").unwrap();
    assert!(r.cluster.insecure_skip_tls_verify);

    // Truncating kubectl's JSON anywhere inside is an error.
    let v = view(&t.0, "multi.yaml");
    let json = serde_json::to_vec(&v).unwrap();
    for cut in (1..json.len() - 1).step_by(7) {
        assert!(Kubeconfig::parse(&json[..cut]).is_err(), "cut {cut}");
    }
}

#[test]
fn seed_files_are_kubectl_output() {
    // The committed seeds (used by fuzzing) must keep parsing and agree with kubectl.
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/kubeconfig");
    let mut n = 0;
    for e in std::fs::read_dir(&dir).unwrap() {
        let p = e.unwrap().path();
        let name = p.file_name().unwrap().to_str().unwrap().to_owned();
        if !(name.ends_with(".yaml") || name.ends_with(".json")) {
            continue;
        }
        let data = std::fs::read(&p).unwrap();
        let ours = Kubeconfig::parse(&data).unwrap_or_else(|e| panic!("{name}: {e:?}"));
        assert_matches_kubectl(&ours, &view(&dir, &name));
        n += 1;
    }
    assert!(n >= 4, "only {n} seed files");
}

fn node_view(t: &TempDir, name: &str, cfg: &NodeKubeconfig<'_>) -> Value {
    let mut buf = vec![0u8; 8192];
    let n = write_node_kubeconfig(cfg, &mut buf).unwrap();
    t.write(name, &buf[..n]);
    // --minify resolves the current context (fails if it does not resolve).
    let o = ok(
        &t.0,
        "kubectl",
        &["config", "view", "--raw", "--minify", "-o", "json", "--kubeconfig", name],
        None,
    );
    let v: Value = serde_json::from_slice(&o.stdout).unwrap();
    // Our reader agrees with kubectl on our own output.
    assert_matches_kubectl(&Kubeconfig::parse(&buf[..n]).unwrap(), &view(&t.0, name));
    v
}

#[test]
fn node_kubeconfig_read_by_kubectl() {
    let t = TempDir::new("kc-node");
    make_ca(&t.0);
    let ca_pem = std::fs::read(t.path("ca.crt")).unwrap();

    // CA file: no CA data, no insecure, no tls-server-name, no token.
    let v = node_view(
        &t,
        "node-file.yaml",
        &NodeKubeconfig {
            server: "https://10.0.0.1:6443",
            certificate_authority: Some("/etc/kubernetes/pki/ca.crt"),
            certificate_authority_data: Some(&ca_pem),
            insecure_skip_tls_verify: false,
            cert_dir: "/var/lib/kubelet/pki",
        },
    );
    assert_eq!(v["current-context"], NODE_CONTEXT);
    let c = &v["clusters"][0];
    assert_eq!(c["name"], NODE_CLUSTER);
    assert_eq!(c["cluster"]["server"], "https://10.0.0.1:6443");
    assert_eq!(c["cluster"]["certificate-authority"], "/etc/kubernetes/pki/ca.crt");
    assert!(c["cluster"].get("certificate-authority-data").is_none());
    assert!(c["cluster"].get("insecure-skip-tls-verify").is_none());
    assert!(c["cluster"].get("tls-server-name").is_none());
    let x = &v["contexts"][0];
    assert_eq!(x["name"], NODE_CONTEXT);
    assert_eq!(x["context"]["cluster"], NODE_CLUSTER);
    assert_eq!(x["context"]["user"], NODE_USER);
    assert_eq!(x["context"]["namespace"], "default");
    let u = &v["users"][0];
    assert_eq!(u["name"], NODE_USER);
    let pem_path = "/var/lib/kubelet/pki/kubelet-client-current.pem";
    assert_eq!(u["user"]["client-certificate"], pem_path);
    assert_eq!(u["user"]["client-key"], pem_path);
    assert!(u["user"].get("token").is_none());

    // No CA file → base64 of the PEM; insecure written only when true.
    let v = node_view(
        &t,
        "node-data.yaml",
        &NodeKubeconfig {
            server: "https://[fd00::1]:6443",
            certificate_authority: None,
            certificate_authority_data: Some(&ca_pem),
            insecure_skip_tls_verify: true,
            cert_dir: "/var/lib/kubelet/pki/",
        },
    );
    let c = &v["clusters"][0]["cluster"];
    use base64ct::{Base64, Encoding};
    let data = Base64::decode_vec(c["certificate-authority-data"].as_str().unwrap()).unwrap();
    assert_eq!(data, ca_pem);
    assert_eq!(c["insecure-skip-tls-verify"], true);
    assert_eq!(c["server"], "https://[fd00::1]:6443");
    assert_eq!(
        v["users"][0]["user"]["client-key"],
        "/var/lib/kubelet/pki/kubelet-client-current.pem"
    );

    // Strings YAML would misread are quoted; kubectl reads them back verbatim.
    for server in
        ["true", "123", "null", "2001-12-14", "https://h: #x", "\"q\" \\ é\t", "yes", "0x1F"]
    {
        let v = node_view(
            &t,
            "node-odd.yaml",
            &NodeKubeconfig { server, cert_dir: "pki #dir: x", ..Default::default() },
        );
        assert_eq!(v["clusters"][0]["cluster"]["server"], server);
        // Relative cert dir stays relative (upstream behaviour, bootstrap.go
        // writeKubeconfigFromBootstrapping).
        assert_eq!(
            v["users"][0]["user"]["client-certificate"],
            "pki #dir: x/kubelet-client-current.pem"
        );
    }
}

#[test]
fn bootstrap_kubeconfig_read_by_kubectl() {
    let t = TempDir::new("kc-boot");
    make_ca(&t.0);
    let ca_pem = std::fs::read(t.path("ca.crt")).unwrap();
    for cluster in ["kubernetes", "my cluster: 1"] {
        let cfg = BootstrapKubeconfig {
            server: "https://192.168.5.30:6443",
            cluster_name: cluster,
            certificate_authority_data: &ca_pem,
            token: TOKEN,
        };
        let mut buf = vec![0u8; 8192];
        let n = write_bootstrap_kubeconfig(&cfg, &mut buf).unwrap();
        t.write("boot.yaml", &buf[..n]);
        let o = ok(
            &t.0,
            "kubectl",
            &["config", "view", "--raw", "--minify", "-o", "json", "--kubeconfig", "boot.yaml"],
            None,
        );
        let v: Value = serde_json::from_slice(&o.stdout).unwrap();
        let ctx = format!("{BOOTSTRAP_USER}@{cluster}");
        assert_eq!(v["current-context"], ctx.as_str());
        assert_eq!(v["contexts"][0]["context"]["cluster"], cluster);
        assert_eq!(v["contexts"][0]["context"]["user"], BOOTSTRAP_USER);
        assert_eq!(v["users"][0]["user"]["token"], TOKEN);
        assert_eq!(v["clusters"][0]["name"], cluster);
        assert_eq!(v["clusters"][0]["cluster"]["server"], "https://192.168.5.30:6443");
        use base64ct::{Base64, Encoding};
        let data = v["clusters"][0]["cluster"]["certificate-authority-data"].as_str().unwrap();
        assert_eq!(Base64::decode_vec(data).unwrap(), ca_pem);
        assert_matches_kubectl(&Kubeconfig::parse(&buf[..n]).unwrap(), &view(&t.0, "boot.yaml"));
    }
}

/// Hand-written YAML in styles other tools produce: both readers must agree.
#[test]
fn yaml_variants_agree_with_kubectl() {
    let t = TempDir::new("kc-variants");
    let variants = [
        // Indented sequences, comments, a leading document marker, quoted keys and values.
        "---\n# written by hand\napiVersion: v1\nkind: Config\nclusters:\n  - name: \"c\\u00e9\"   # comment\n    cluster:\n      server: 'https://a:1'\n      insecure-skip-tls-verify: yes\nusers:\n  - name: u\n    user:\n      token: \"abc\\tdef\"\ncontexts:\n  - name: x\n    context:\n      cluster: \"c\\xe9\"\n      user: u\ncurrent-context: x\n",
        // Current context first, CRLF line ends, nulls and empty collections, extensions.
        "current-context: ctx\r\ncontexts:\r\n- context:\r\n    cluster: c\r\n    namespace: ~\r\n    user: null\r\n  name: ctx\r\nclusters:\r\n- cluster:\r\n    server: https://b:2\r\n    extensions: []\r\n    certificate-authority: ../ca.crt\r\n  name: c\r\nusers: []\r\npreferences: {}\r\n",
        // Dash on its own line, single-quoted escapes, extra unknown keys with nesting.
        "clusters:\n-\n  name: 'it''s'\n  cluster:\n    server: https://c:3\n    proxy-url: http://proxy:8080\n    extensions:\n    - name: e\n      extension:\n        a: 1\n        b:\n        - x\nusers:\n- name: u\n  user:\n    exec:\n      command: /bin/true\n      args:\n      - --flag\n      apiVersion: client.authentication.k8s.io/v1\ncontexts:\n- name: \"x\"\n  context:\n    cluster: \"it's\"\n    user: u\ncurrent-context: x\n",
        // JSON.
        "{\"apiVersion\":\"v1\",\"clusters\":[{\"name\":\"j\",\"cluster\":{\"server\":\"https://d:4\",\"tls-server-name\":\"n\\u0061me\"}}],\"contexts\":[{\"name\":\"j\",\"context\":{\"cluster\":\"j\"}}],\"current-context\":\"j\"}",
    ];
    for (i, y) in variants.iter().enumerate() {
        let name = format!("v{i}.yaml");
        t.write(&name, y.as_bytes());
        let v = view(&t.0, &name);
        let ours = Kubeconfig::parse(y.as_bytes()).unwrap_or_else(|e| panic!("variant {i}: {e:?}"));
        assert_matches_kubectl(&ours, &v);
        assert!(ours.resolve().is_ok(), "variant {i}");
    }
}

#[test]
fn unsupported_or_broken_input_is_an_error() {
    let t = TempDir::new("kc-neg");
    make_ca(&t.0);
    write_embedded(&t.0, "k.yaml");
    let good = std::fs::read_to_string(t.path("k.yaml")).unwrap();
    assert!(Kubeconfig::parse(good.as_bytes()).is_ok());
    let bad = [
        // Anchors and aliases (kubectl would accept these; we refuse rather than guess).
        good.replacen("- cluster:", "- cluster: &c", 1),
        good.replacen("    server:", "    <<: *c\n    server:", 1),
        // Tags.
        good.replacen("server: ", "server: !!str ", 1),
        // Block scalars.
        good.replacen(&format!("token: {TOKEN}"), "token: |\n      abc", 1),
        good.replacen(&format!("token: {TOKEN}"), "token: >-\n      abc", 1),
        // Multi-document.
        format!("{good}---\n{good}"),
        // Flow mappings with content.
        good.replacen("preferences: {}", "preferences: {colors: true}", 1),
        // Garbage and truncation in the middle of a quoted scalar.
        good.replacen("kind: Config", "kind: Config\n\u{1}", 1),
        good.replacen("current-context: default", "current-context: 'default", 1),
        good.replacen("current-context: default", "current-context: \"default", 1),
        // Bad indentation.
        good.replacen("    server:", "     server:", 1),
        good.replacen("  name: default", "\tname: default", 1),
        // Typing: a number where a string is expected.
        good.replacen(&format!("token: {TOKEN}"), "token: 123456.1234567890123456", 1),
        // Duplicate entries.
        good.replacen("users:\n", "users:\n- name: kubelet-bootstrap\n  user: {}\n", 1),
    ];
    for (i, b) in bad.iter().enumerate() {
        assert_ne!(b, &good, "case {i} did not change the input");
        assert!(Kubeconfig::parse(b.as_bytes()).is_err(), "case {i}:\n{b}");
    }
    // Cases kubectl itself refuses must be refused by us too.
    for (i, b) in bad.iter().enumerate() {
        t.write("bad.yaml", b.as_bytes());
        let o =
            run(&t.0, "kubectl", &["config", "view", "--raw", "--kubeconfig", "bad.yaml"], None);
        if o.status != 0 {
            assert!(Kubeconfig::parse(b.as_bytes()).is_err(), "case {i}");
        }
    }
    for garbage in
        [&b"\x00\x01\x02"[..], b"{{{{", b"[]", b"- a\n- b\n", b"key value\n", b"\xff\xfe\xfd"]
    {
        assert!(Kubeconfig::parse(garbage).is_err(), "{garbage:?}");
    }
}

/// JSON numbers outside f64's range in fields kubectl ignores: kubectl reads the file (Go skips an
/// unknown field's value by its syntax alone), so we must too, though `serde_json` refuses them
/// ("number out of range"; the long `kubeconfig_read` fuzz run found the difference).
#[test]
fn out_of_range_json_numbers_accepted_like_kubectl() {
    let t = TempDir::new("kc-bignum");
    make_ca(&t.0);
    write_embedded(&t.0, "k.yaml");
    let v = view(&t.0, "k.yaml");
    let json = serde_json::to_string(&v).unwrap();
    for num in ["9999994.471e51375", "-1e99999", "1E+400", "0.0000001e-99999"] {
        if !num.contains("e-") {
            assert!(serde_json::from_str::<Value>(&format!("[{num}]")).is_err(), "{num}");
        }
        let text = json
            .replacen('{', &format!("{{\"\": {num}, \"x-big\": [{num}, {{\"n\": {num}}}], "), 1)
            .replacen("\"preferences\":{}", &format!("\"preferences\":{{\"p\":{num}}}"), 1);
        assert_ne!(text, json);
        t.write("big.json", text.as_bytes());
        let theirs = view(&t.0, "big.json");
        let ours = Kubeconfig::parse(text.as_bytes()).unwrap_or_else(|e| panic!("{e:?}: {text}"));
        assert_eq!(ours.format(), kubeboot::kubeconfig::Format::Json);
        assert_matches_kubectl(&ours, &theirs);
        assert_eq!(theirs, v, "kubectl read {num} differently");
    }
}

/// Plain scalars that YAML may type as bool/number/null: we accept exactly what kubectl accepts,
/// with the same value.
#[test]
fn plain_scalar_typing_agrees_with_kubectl() {
    let t = TempDir::new("kc-typing");
    let values = [
        "abc",
        "yes",
        "Yes",
        "no",
        "on",
        "OFF",
        "y",
        "n",
        "true",
        "False",
        "null",
        "Null",
        "~",
        "123",
        "-7",
        "+1",
        "1_000",
        "08",
        "0o17",
        "0b101",
        "0x1F",
        "0x",
        "1e3",
        "1.e3",
        "e3",
        "0.",
        ".5",
        "-.5",
        ".inf",
        "-.Inf",
        ".nan",
        "1.2.3",
        "2001-12-14",
        "2001-12-14t21:59:43.10-05:00",
        "1:20",
        "https://1.2.3.4:6443",
        "07401b.f395accd246ae52d",
        "-",
        "a b",
        "a:b",
        "@x",
    ];
    let mut disagreements = Vec::new();
    for v in values {
        for field in ["server", "insecure-skip-tls-verify"] {
            let y = format!(
                "clusters:\n- name: a\n  cluster:\n    {field}: {v}\ncontexts:\n- name: a\n  context:\n    cluster: a\n"
            );
            t.write("t.yaml", y.as_bytes());
            let o = run(
                &t.0,
                "kubectl",
                &["config", "view", "--raw", "-o", "json", "--kubeconfig", "t.yaml"],
                None,
            );
            let ours = Kubeconfig::parse(y.as_bytes());
            match (o.status == 0, &ours) {
                (true, Ok(kc)) => {
                    assert_matches_kubectl(kc, &serde_json::from_slice(&o.stdout).unwrap());
                }
                (false, Err(_)) => {}
                (k, _) => {
                    disagreements.push(format!("{field}: {v:?}: kubectl ok={k}, ours={ours:?}"))
                }
            }
        }
    }
    assert!(disagreements.is_empty(), "{disagreements:#?}");
}

/// Line-level mutations of kubectl-written files (indentation off by one, lines deleted,
/// duplicated, commented, quoted): whenever we accept a mutant, kubectl must accept it too and
/// see the same values; whenever kubectl refuses, we refuse.
#[test]
fn mutants_never_accepted_differently() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/kubeconfig");
    let t = TempDir::new("kc-mutants");
    let (mut accepted, mut refused, mut stricter) = (0, 0, 0);
    for seed in ["file-ca.yaml", "node-like.yaml"] {
        let text = std::fs::read_to_string(dir.join(seed)).unwrap();
        let lines: Vec<&str> = text.lines().collect();
        for i in 0..lines.len() {
            let l = lines[i];
            let edits = [
                format!(" {l}"),
                l.strip_prefix(' ').unwrap_or(l).to_owned(),
                String::new(),
                format!("{l}\n{l}"),
                format!("{l} # c"),
                l.replacen(": ", ": '", 1) + "'",
                l.replacen(": ", ":  \"", 1) + "\"",
            ];
            for e in edits {
                let mut m: Vec<String> = lines.iter().map(|s| s.to_string()).collect();
                m[i] = e;
                let mutant = m.join("\n") + "\n";
                if mutant == text {
                    continue;
                }
                t.write("m.yaml", mutant.as_bytes());
                let o = run(
                    &t.0,
                    "kubectl",
                    &["config", "view", "--raw", "-o", "json", "--kubeconfig", "m.yaml"],
                    None,
                );
                match (Kubeconfig::parse(mutant.as_bytes()), o.status == 0) {
                    (Ok(kc), true) => {
                        let v: Value = serde_json::from_slice(&o.stdout).unwrap();
                        assert_matches_kubectl(&kc, &v);
                        accepted += 1;
                    }
                    (Ok(_), false) => {
                        panic!("we accept what kubectl refuses:\n{mutant}\n{}", o.stderr)
                    }
                    (Err(_), false) => refused += 1,
                    (Err(_), true) => {
                        stricter += 1;
                        if std::env::var_os("KC_SHOW_STRICTER").is_some() {
                            eprintln!("--- only we refuse (line {i}):\n{}", m[i]);
                        }
                    }
                }
            }
        }
    }
    eprintln!(
        "mutants: {accepted} accepted by both, {refused} refused by both, {stricter} only by us"
    );
    assert!(accepted > 10 && refused > 10);
}
