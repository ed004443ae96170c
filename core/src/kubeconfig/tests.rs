use super::*;

const KUBECTL: &str = "apiVersion: v1
clusters:
- cluster:
    insecure-skip-tls-verify: true
    server: https://[::1]:6443
  name: ins
- cluster:
    certificate-authority-data: TFMwdA==
    server: https://k8smaster:6443
  name: kubernetes
- cluster:
    certificate-authority: rel/ca.crt
    server: https://10.0.0.1:6443
    tls-server-name: foo
  name: other
contexts:
- context:
    cluster: kubernetes
    namespace: kube-system
    user: kubelet-bootstrap
  name: default
- context:
    cluster: other
    user: certuser
  name: 'weird: name'
current-context: default
kind: Config
preferences: {}
users:
- name: certuser
  user:
    client-certificate: a/b.pem
    client-key: /abs/key.pem
- name: kubelet-bootstrap
  user:
    token: 07401b.f395accd246ae52d
";

fn s<'a>(x: Option<Scalar<'a>>) -> &'a str {
    x.and_then(|v| v.as_borrowed()).unwrap_or("<none>")
}

#[test]
fn reads_kubectl_yaml() {
    let kc = Kubeconfig::parse(KUBECTL.as_bytes()).unwrap();
    assert_eq!(kc.format(), Format::Yaml);
    assert_eq!(kc.clusters().len(), 3);
    assert_eq!(kc.users().len(), 2);
    assert_eq!(kc.contexts().len(), 2);
    let r = kc.resolve().unwrap();
    assert!(r.context_name.eq_str("default"));
    assert!(r.cluster_name.eq_str("kubernetes"));
    assert_eq!(r.server().raw(), "https://k8smaster:6443");
    assert_eq!(s(r.namespace()), "kube-system");
    assert_eq!(s(r.user.token), "07401b.f395accd246ae52d");
    let mut buf = [0u8; 16];
    let Source::Data(d) = r.cluster.ca_source() else { panic!() };
    assert_eq!(d.decode_base64_into(&mut buf).unwrap(), b"LS0t");
    assert!(kc.cluster("ins").unwrap().certificate_authority.is_none());
    assert!(kc.cluster("ins").unwrap().insecure_skip_tls_verify);

    let r = kc.resolve_context("weird: name").unwrap();
    assert_eq!(s(r.cluster.tls_server_name), "foo");
    let Source::File(f) = r.cluster.ca_source() else { panic!() };
    assert!(f.is_relative_path());
    assert_eq!(r.namespace(), None);
    assert!(r.user.client_certificate.unwrap().is_relative_path());
    assert!(!r.user.client_key.unwrap().is_relative_path());
    // Debug redacts tokens.
    let mut out = heapless::String::<512>::new();
    core::fmt::write(&mut out, format_args!("{:?}", kc.user("kubelet-bootstrap").unwrap()))
        .unwrap();
    assert!(!out.contains("f395accd246ae52d"), "{out}");
}

#[test]
fn reads_json() {
    let j = br#"{"kind":"Config","apiVersion":"v1","preferences":{},
      "clusters":[{"name":"c\u0031","cluster":{"server":"https://h:1","insecure-skip-tls-verify":true}}],
      "users":[{"name":"u","user":{"token":"a\"b"}}],
      "contexts":[{"name":"x","context":{"cluster":"c1","user":"u","namespace":"ns"}}],
      "current-context":"x"}"#;
    let kc = Kubeconfig::parse(j).unwrap();
    assert_eq!(kc.format(), Format::Json);
    let r = kc.resolve().unwrap();
    assert!(r.cluster.insecure_skip_tls_verify);
    let mut buf = [0u8; 8];
    assert_eq!(r.user.token.unwrap().decode_into(&mut buf).unwrap(), "a\"b");
    assert!(r.cluster_name.eq_str("c1"));
}

#[test]
fn quoted_scalars_and_comments() {
    let y = "# comment\n---\napiVersion: \"v1\"\nclusters:\n  - name: \"a\\tb\\u00e9\"  # c\n    cluster:\n      server: 'https://x:1'\n      certificate-authority-data: null\ncontexts: []\nusers: ~\ncurrent-context: ''\n";
    let kc = Kubeconfig::parse(y.as_bytes()).unwrap();
    let c = &kc.clusters()[0];
    assert!(c.name.eq_str("a\tb\u{e9}"));
    assert_eq!(c.name.as_borrowed(), None);
    let mut buf = [0u8; 8];
    assert_eq!(c.name.decode_into(&mut buf).unwrap(), "a\tb\u{e9}");
    assert_eq!(c.value.certificate_authority_data, None);
    assert_eq!(kc.current_context(), None);
    assert_eq!(kc.resolve().unwrap_err(), Error::Malformed);
    let y2 = "clusters:\n- name: 'it''s'\n  cluster: {}\n";
    let kc = Kubeconfig::parse(y2.as_bytes()).unwrap();
    assert!(kc.clusters()[0].name.eq_str("it's"));
    // CRLF and BOM.
    let y3 = "\u{feff}current-context: a\r\nkind: Config\r\n";
    assert!(Kubeconfig::parse(y3.as_bytes()).unwrap().current_context().unwrap().eq_str("a"));
    // Unknown nested structures are skipped.
    let y4 = "users:\n- name: u\n  user:\n    exec:\n      args:\n      - a\n      - b: c\n      command: x\n    token: t\nextensions: []\n";
    let kc = Kubeconfig::parse(y4.as_bytes()).unwrap();
    assert_eq!(s(kc.user("u").unwrap().token), "t");
    // Empty document.
    assert_eq!(Kubeconfig::parse(b"").unwrap().clusters().len(), 0);
    assert_eq!(Kubeconfig::parse(b"# only\n").unwrap().clusters().len(), 0);
}

#[test]
fn rejects_unsupported() {
    for y in [
        "a: &x 1\n",
        "a: *x\n",
        "a: !!str 1\n",
        "a: |\n  text\n",
        "a: >\n  text\n",
        "a: 1\n---\nb: 2\n",
        "a: {b: 1}\n",
        "a: [1]\n",
        "%YAML 1.1\na: 1\n",
        "a: 1\n\tb: 2\n",
        "a: \"unterminated\n",
        "a: 'unterminated\n",
        "a: b: c\n",
        "a: - b\n",
        "a: 1\n  b: 2\n",
        "  a: 1\nb: 2\n",
        "- a\n",
        "just text\n",
        "a: 1\n...\n",
        "a: \"bad \\q escape\"\n",
        "a: \"x\"#c\n",
        "clusters: {}\n",
        "clusters:\n- cluster:\n    server: 123\n  name: a\n",
        "clusters:\n- cluster:\n    insecure-skip-tls-verify: maybe\n  name: a\n",
        "clusters:\n- cluster:\n    insecure-skip-tls-verify: 'true'\n  name: a\n",
        "clusters:\n- name: a\n- name: a\n",
        "clusters:\n- name: a\n  name: b\n",
        "clusters:\n- cluster:\n    server: a\n    server: b\n",
        "users:\n- name: u\n  user:\n    token: 123456.1234567890123456\n",
        "current-context: yes\n",
        "current-context: a\ncurrent-context: b\n",
        "clusters:\n- name: a\n  cluster:\n    server: x\n   bad: 1\n",
        "a: 1\nb\n",
        "a: multi\n  line\n",
        "a:\n  - x\n  y: 1\n",
        "a: \"\\ud800\"\n",
        "a: 1\x00\n",
        "key: a\rb\n",
    ] {
        assert_eq!(Kubeconfig::parse(y.as_bytes()).err(), Some(Error::Malformed), "{y:?}");
    }
    for j in [
        &b"{\"clusters\":{}}"[..],
        b"{\"clusters\":[{\"name\":1}]}",
        b"{\"clusters\":[{\"name\":\"a\",\"cluster\":{\"server\":5}}]}",
        b"{\"clusters\":[]",
        b"{\"current-context\":\"a\"} x",
        b"{\"clusters\":[{\"cluster\":{\"insecure-skip-tls-verify\":\"true\"}}]}",
        b"{\"users\":[{\"name\":\"a\"},{\"name\":\"a\"}]}",
    ] {
        assert_eq!(Kubeconfig::parse(j).err(), Some(Error::Malformed), "{j:?}");
    }
    assert_eq!(Kubeconfig::parse(b"\xff\xfe").err(), Some(Error::Malformed));
}

#[test]
fn capacity_limit() {
    let mut buf = [0u8; 4096];
    let mut n = 0;
    let head = b"clusters:\n";
    buf[..head.len()].copy_from_slice(head);
    n += head.len();
    for i in 0..=MAX_ENTRIES {
        let line = [b'-', b' ', b'n', b'a', b'm', b'e', b':', b' ', b'c', b'a' + i as u8, b'\n'];
        buf[n..n + line.len()].copy_from_slice(&line);
        n += line.len();
    }
    assert_eq!(Kubeconfig::parse(&buf[..n]).err(), Some(Error::Malformed));
    // One fewer fits.
    let cut = n - 11;
    assert_eq!(Kubeconfig::parse(&buf[..cut]).unwrap().clusters().len(), MAX_ENTRIES);
}

#[test]
fn footprint() {
    // Documented in the module docs.
    let size = core::mem::size_of::<Kubeconfig<'_>>();
    assert!(size <= 6600, "{size}");
}

#[test]
fn resolve_errors() {
    let base = "clusters:\n- name: c\n  cluster:\n    server: https://h\n- name: e\n  cluster: {}\nusers:\n- name: u\n  user: {}\ncontexts:\n- name: ok\n  context: {cluster: c, user: u}\n";
    // Flow mapping with content is refused even here, so build the contexts in block style.
    assert!(Kubeconfig::parse(base.as_bytes()).is_err());
    let base = "clusters:\n- name: c\n  cluster:\n    server: https://h\n- name: e\n  cluster: {}\nusers:\n- name: u\n  user: {}\ncontexts:\n- name: ok\n  context:\n    cluster: c\n    user: u\n- name: nouser\n  context:\n    cluster: c\n    user: missing\n- name: anon\n  context:\n    cluster: c\n- name: noserver\n  context:\n    cluster: e\n- name: nocluster\n  context:\n    user: u\n";
    let kc = Kubeconfig::parse(base.as_bytes()).unwrap();
    assert!(kc.resolve().is_err()); // no current-context
    assert!(kc.resolve_context("ok").is_ok());
    let anon = kc.resolve_context("anon").unwrap();
    assert_eq!(anon.user_name, None);
    assert_eq!(anon.user.client_cert_source(), Source::None);
    for bad in ["nouser", "noserver", "nocluster", "absent"] {
        assert_eq!(kc.resolve_context(bad).err(), Some(Error::Malformed), "{bad}");
    }
}

#[test]
fn plain_typing() {
    for t in [
        "1", "-1", "+1_000", "0x1F", "0b101", "0o17", "1.5", ".5", "1e3", "1.e3", "-.inf", ".NaN",
        "yes", "Off", "~", "null", "08", "0.",
    ] {
        assert!(plain_is_not_string(t), "{t}");
    }
    for t in [
        "abc",
        "2001-12-14",
        "2001-12-14t21:59:43.10-05:00",
        "1a",
        "e3",
        "https://x:1",
        "07401b.f395accd246ae52d",
        "1.2.3",
        "0x",
        "-",
        ".",
    ] {
        assert!(!plain_is_not_string(t), "{t}");
    }
}

fn roundtrip_node(cfg: &NodeKubeconfig<'_>) -> heapless::Vec<u8, 4096> {
    let mut buf = [0u8; 4096];
    let n = write_node_kubeconfig(cfg, &mut buf).unwrap();
    assert_eq!(
        write_node_kubeconfig(cfg, &mut buf[..n - 1]),
        Err(Error::BufferTooSmall { needed: n })
    );
    heapless::Vec::from_slice(&buf[..n]).unwrap()
}

#[test]
fn node_kubeconfig_roundtrip() {
    let cfg = NodeKubeconfig {
        server: "https://10.0.0.1:6443",
        certificate_authority: Some("/etc/kubernetes/pki/ca.crt"),
        certificate_authority_data: Some(b"-----BEGIN CERTIFICATE-----\n"),
        insecure_skip_tls_verify: false,
        cert_dir: "/var/lib/kubelet/pki/",
    };
    let out = roundtrip_node(&cfg);
    let text = core::str::from_utf8(&out).unwrap();
    assert!(!text.contains("certificate-authority-data"));
    assert!(!text.contains("insecure"));
    let kc = Kubeconfig::parse(&out).unwrap();
    let r = kc.resolve().unwrap();
    assert!(r.context_name.eq_str(NODE_CONTEXT));
    assert!(r.cluster_name.eq_str(NODE_CLUSTER));
    assert_eq!(r.user_name.map(|u| u.raw()), Some(NODE_USER));
    assert_eq!(s(r.namespace()), "default");
    assert_eq!(s(r.cluster.certificate_authority), "/etc/kubernetes/pki/ca.crt");
    assert_eq!(s(r.user.client_certificate), "/var/lib/kubelet/pki/kubelet-client-current.pem");
    assert_eq!(s(r.user.client_key), "/var/lib/kubelet/pki/kubelet-client-current.pem");
    assert_eq!(r.user.token, None);

    // No CA file → data; insecure; awkward strings get quoted and read back identically.
    let pem = b"-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n";
    let cfg = NodeKubeconfig {
        server: "https://h: #x \"q\" \\ \u{e9}\n",
        certificate_authority: Some(""),
        certificate_authority_data: Some(pem),
        insecure_skip_tls_verify: true,
        cert_dir: "pki dir: #1",
    };
    let out = roundtrip_node(&cfg);
    let kc = Kubeconfig::parse(&out).unwrap();
    let r = kc.resolve().unwrap();
    assert!(r.server().eq_str(cfg.server));
    assert!(r.cluster.insecure_skip_tls_verify);
    let mut buf = [0u8; 128];
    let Source::Data(d) = r.cluster.ca_source() else { panic!() };
    assert_eq!(d.decode_base64_into(&mut buf).unwrap(), pem);
    assert!(r.user.client_key.unwrap().eq_str("pki dir: #1/kubelet-client-current.pem"));
    assert!(r.user.client_key.unwrap().is_relative_path());

    for server in ["true", "123", "null", "~", "", "- x", "@x", "2001-01-01", "a:", "yes"] {
        let cfg = NodeKubeconfig { server, cert_dir: "/p", ..Default::default() };
        let out = roundtrip_node(&cfg);
        let kc = Kubeconfig::parse(&out).unwrap();
        let got = kc.cluster(NODE_CLUSTER).unwrap().server;
        if server.is_empty() {
            assert!(got.is_none_or(|g| g.is_empty()));
        } else {
            assert!(got.unwrap().eq_str(server), "{server}");
        }
    }
}

#[test]
fn bootstrap_kubeconfig_roundtrip() {
    let pem = b"-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n";
    for cluster_name in ["kubernetes", "", "my cluster"] {
        let cfg = BootstrapKubeconfig {
            server: "https://10.0.0.1:6443",
            cluster_name,
            certificate_authority_data: pem,
            token: "abcdef.0123456789abcdef",
        };
        let mut buf = [0u8; 2048];
        let n = write_bootstrap_kubeconfig(&cfg, &mut buf).unwrap();
        let kc = Kubeconfig::parse(&buf[..n]).unwrap();
        assert!(kc.clusters()[0].name.eq_str(cluster_name));
        if cluster_name.is_empty() {
            // A context naming cluster "" does not resolve (clientcmd: "cluster was not
            // specified").
            assert!(kc.resolve().is_err());
            continue;
        }
        let r = kc.resolve().unwrap();
        assert!(r.cluster_name.eq_str(cluster_name));
        assert_eq!(r.user_name.map(|u| u.raw()), Some(BOOTSTRAP_USER));
        assert_eq!(s(r.user.token), "abcdef.0123456789abcdef");
        let mut ctx = heapless::String::<64>::new();
        ctx.push_str(BOOTSTRAP_USER).unwrap();
        ctx.push('@').unwrap();
        ctx.push_str(cluster_name).unwrap();
        assert!(r.context_name.eq_str(&ctx));
        let mut out = [0u8; 128];
        let Source::Data(d) = r.cluster.ca_source() else { panic!() };
        assert_eq!(d.decode_base64_into(&mut out).unwrap(), pem);
    }
}

#[test]
fn scalar_helpers() {
    let sc = Scalar::new("a\\x41\\u00e9\\U0001F600\\\"", ScalarStyle::DoubleQuoted);
    let mut buf = [0u8; 16];
    assert_eq!(sc.decode_into(&mut buf).unwrap(), "aA\u{e9}\u{1F600}\"");
    assert_eq!(sc.decode_into(&mut buf[..2]), Err(Error::BufferTooSmall { needed: 9 }));
    let b64 = Scalar::new("TFMw\\u0064A==", ScalarStyle::Json);
    let mut buf = [0u8; 16];
    assert_eq!(b64.decode_base64_into(&mut buf).unwrap(), b"LS0t");
    let p = Scalar::plain("TFMwdA==");
    assert_eq!(p.decode_base64_into(&mut buf[..3]), Err(Error::BufferTooSmall { needed: 4 }));
    assert_eq!(Scalar::plain("TFMwdA=").decode_base64_into(&mut buf), Err(Error::Malformed));
    assert!(!Scalar::plain("").is_relative_path());
}

mod prop {
    extern crate std;
    use super::*;
    use proptest::prelude::*;

    proptest! {
        #[test]
        fn never_panics(bytes in proptest::collection::vec(any::<u8>(), 0..512)) {
            if let Ok(kc) = Kubeconfig::parse(&bytes) {
                let _ = kc.resolve();
            }
        }

        #[test]
        fn never_panics_yamlish(s in "[a-z:\\- \n'\"#{}\\[\\]&*!|>\\\\]{0,128}") {
            let _ = Kubeconfig::parse(s.as_bytes());
            let mut t = std::string::String::from(KUBECTL);
            t.insert_str(s.len() % KUBECTL.len(), &s);
            let _ = Kubeconfig::parse(t.as_bytes());
        }

        #[test]
        fn truncated_never_panics(cut in 0usize..KUBECTL.len()) {
            let _ = Kubeconfig::parse(&KUBECTL.as_bytes()[..cut]);
        }

        #[test]
        fn writer_roundtrips_any_strings(server in any::<std::string::String>(),
                                         dir in any::<std::string::String>(),
                                         ca in any::<std::string::String>(),
                                         insecure in any::<bool>()) {
            let cfg = NodeKubeconfig {
                server: &server,
                certificate_authority: Some(&ca),
                certificate_authority_data: None,
                insecure_skip_tls_verify: insecure,
                cert_dir: &dir,
            };
            let mut buf = std::vec![0u8; 4096];
            let n = write_node_kubeconfig(&cfg, &mut buf).unwrap();
            let kc = Kubeconfig::parse(&buf[..n]).unwrap();
            let c = kc.cluster(NODE_CLUSTER).unwrap();
            prop_assert_eq!(c.insecure_skip_tls_verify, insecure);
            prop_assert!(c.server.map_or(server.is_empty(), |s| s.eq_str(&server)));
            prop_assert!(c.certificate_authority.map_or(ca.is_empty(), |s| s.eq_str(&ca)));
        }
    }
}

#[test]
fn ignored_fields_are_type_checked() {
    for bad in [
        "preferences: '{}'\n",
        "preferences: []\n",
        "extensions: {}\n",
        "clusters:\n- name: a\n  cluster:\n    disable-compression: maybe\n",
        "clusters:\n- name: a\n  cluster:\n    proxy-url: 8080\n",
        "users:\n- name: a\n  user:\n    exec: /bin/x\n",
        "users:\n- name: a\n  user:\n    as-groups: g\n",
        "contexts:\n- name: a\n  context:\n    extensions: x\n",
        "{\"preferences\":\"x\"}",
        "{\"users\":[{\"name\":\"a\",\"user\":{\"exec\":[]}}]}",
    ] {
        assert_eq!(Kubeconfig::parse(bad.as_bytes()).err(), Some(Error::Malformed), "{bad:?}");
    }
    for good in [
        "preferences: {}\nextensions: []\nunknown: {a: 1}\n".replace("{a: 1}", "7").as_str(),
        "users:\n- name: a\n  user:\n    exec:\n      command: x\n    as-groups:\n    - g\n    as-user-extra: {}\n    unknown-field: 1\n",
        "clusters:\n- name: a\n  cluster:\n    disable-compression: true\n    proxy-url: http://p:1\n",
        "{\"preferences\":null,\"users\":[{\"name\":\"a\",\"user\":{\"exec\":{\"command\":\"x\"}}}]}",
    ] {
        assert!(Kubeconfig::parse(good.as_bytes()).is_ok(), "{good:?}");
    }
}
