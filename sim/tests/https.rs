//! The simulated apiserver over HTTPS, driven by clients nobody here wrote: curl for requests
//! (a bootstrap token, a client certificate, a chunked watch), OpenSSL for the node's key and
//! CSR and to verify what the signer issued.

use std::path::{Path, PathBuf};
use std::process::Command;

use base64ct::{Base64, Encoding};
use kubeboot_sim::serve::{Server, unix_now};
use kubeboot_sim::{Apiserver, CLIENT_SIGNER, CSRS, DEFAULT_TOKEN, SELF_SUBJECT_REVIEWS};
use serde_json::{Value, json};

struct Dir(PathBuf);
impl Dir {
    fn new(tag: &str) -> Dir {
        let p = std::env::temp_dir().join(format!("kubeboot-sim-{tag}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&p);
        std::fs::create_dir_all(&p).unwrap();
        Dir(p)
    }
}
impl Drop for Dir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

fn run(cmd: &str, args: &[&str], dir: &Path) -> String {
    let o = Command::new(cmd).args(args).current_dir(dir).output().unwrap();
    assert!(o.status.success(), "{cmd} {args:?}: {}", String::from_utf8_lossy(&o.stderr));
    String::from_utf8(o.stdout).unwrap()
}

/// `curl` against the server: (status, body).
fn curl(d: &Dir, url: &str, extra: &[&str]) -> (u16, String) {
    let mut args = vec!["-sS", "--cacert", "ca.crt", "-w", "\n%{http_code}", url];
    args.extend_from_slice(extra);
    let out = run("curl", &args, &d.0);
    let (body, code) = out.rsplit_once('\n').unwrap();
    (code.parse().unwrap(), body.to_owned())
}

fn openssl_csr(d: &Dir, node: &str) -> String {
    run(
        "openssl",
        &[
            "req",
            "-new",
            "-newkey",
            "ec",
            "-pkeyopt",
            "ec_paramgen_curve:P-256",
            "-nodes",
            "-keyout",
            "node.key",
            "-subj",
            &format!("/O=system:nodes/CN=system:node:{node}"),
            "-out",
            "node.csr",
        ],
        &d.0,
    );
    std::fs::read_to_string(d.0.join("node.csr")).unwrap()
}

#[test]
fn a_node_bootstraps_with_curl_and_openssl() {
    let d = Dir::new("curl");
    let mut api = Apiserver::new(unix_now());
    // (whole seconds: 3 leaves the watch below time to open before the approval)
    api.approve_after = 3;
    let server = Server::start(api).unwrap();
    std::fs::write(d.0.join("ca.crt"), &server.api().ca_pem).unwrap();
    let url = server.url();
    let bearer = format!("Authorization: Bearer {DEFAULT_TOKEN}");

    // Anonymous and a wrong token: refused.
    let (code, _) = curl(&d, &format!("{url}{CSRS}/x"), &[]);
    assert_eq!(code, 403);
    let (code, body) = curl(
        &d,
        &format!("{url}{CSRS}/x"),
        &["-H", "Authorization: Bearer abcdef.wrongwrongwrong"],
    );
    assert_eq!(code, 401, "{body}");

    // Create with the bootstrap token.
    let csr = openssl_csr(&d, "n1");
    let object = json!({
        "apiVersion": "certificates.k8s.io/v1", "kind": "CertificateSigningRequest",
        "metadata": {"name": "node-csr-n1"},
        "spec": {"request": Base64::encode_string(csr.as_bytes()), "signerName": CLIENT_SIGNER,
                 "usages": ["digital signature", "client auth"]},
    });
    let post =
        ["-X", "POST", "-H", &bearer, "-H", "Content-Type: application/json", "--data-binary"];
    let mut args = post.to_vec();
    let body = object.to_string();
    args.push(&body);
    let (code, created) = curl(&d, &format!("{url}{CSRS}"), &args);
    assert_eq!(code, 201, "{created}");
    let created: Value = serde_json::from_str(&created).unwrap();
    assert_eq!(created["spec"]["username"], "system:bootstrap:abcdef");
    assert!(created["status"]["certificate"].is_null());
    let (code, _) = curl(&d, &format!("{url}{CSRS}"), &args);
    assert_eq!(code, 409, "the same name again");

    // Watch it: ADDED (pending), then MODIFIED once approved and signed, then the stream ends
    // at its timeoutSeconds.
    let watch = format!(
        "{url}{CSRS}?fieldSelector=metadata.name%3Dnode-csr-n1&watch=true&timeoutSeconds=6"
    );
    let (code, stream) = curl(&d, &watch, &["-N", "-H", &bearer]);
    assert_eq!(code, 200);
    let events: Vec<Value> = stream.lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    assert_eq!(events.len(), 2, "{stream}");
    assert_eq!(events[0]["type"], "ADDED");
    assert_eq!(events[1]["type"], "MODIFIED");
    assert_eq!(events[1]["object"]["status"]["conditions"][0]["type"], "Approved");
    let cert = events[1]["object"]["status"]["certificate"].as_str().unwrap();
    std::fs::write(d.0.join("node.crt"), Base64::decode_vec(cert).unwrap()).unwrap();

    // OpenSSL: the certificate chains to the CA, for client auth, with the CSR's subject.
    run("openssl", &["verify", "-CAfile", "ca.crt", "-purpose", "sslclient", "node.crt"], &d.0);
    let text = run("openssl", &["x509", "-in", "node.crt", "-noout", "-subject"], &d.0);
    assert!(text.contains("O = system:nodes, CN = system:node:n1"), "{text}");

    // The new pair authenticates as the node.
    let review = r#"{"apiVersion":"authentication.k8s.io/v1","kind":"SelfSubjectReview"}"#;
    let (code, body) = curl(
        &d,
        &format!("{url}{SELF_SUBJECT_REVIEWS}"),
        &["--cert", "node.crt", "--key", "node.key", "-X", "POST", "--data-binary", review],
    );
    assert_eq!(code, 201, "{body}");
    let v: Value = serde_json::from_str(&body).unwrap();
    assert_eq!(v["status"]["userInfo"]["username"], "system:node:n1");
    assert_eq!(server.api().csrs["node-csr-n1"].username, "system:bootstrap:abcdef");
}

#[test]
fn an_administrator_approves_through_the_approval_subresource() {
    let d = Dir::new("approve");
    let mut api = Apiserver::new(unix_now());
    api.auto_approve_client = false;
    let server = Server::start(api).unwrap();
    std::fs::write(d.0.join("ca.crt"), &server.api().ca_pem).unwrap();
    let url = server.url();
    let csr = openssl_csr(&d, "n2");
    let body = json!({
        "metadata": {"name": "c2"},
        "spec": {"request": Base64::encode_string(csr.as_bytes()), "signerName": CLIENT_SIGNER,
                 "usages": ["digital signature", "client auth"]},
    })
    .to_string();
    let bearer = format!("Authorization: Bearer {DEFAULT_TOKEN}");
    let (code, _) = curl(&d, &format!("{url}{CSRS}"), &["-H", &bearer, "--data-binary", &body]);
    assert_eq!(code, 201);
    let approval = json!({"status": {"conditions": [{"type": "Approved", "status": "True", "reason": "Test"}]}}).to_string();
    let put = |auth: &str| {
        curl(
            &d,
            &format!("{url}{CSRS}/c2/approval"),
            &["-X", "PUT", "-H", auth, "--data-binary", &approval],
        )
    };
    // The node's token may not approve its own request.
    assert_eq!(put(&bearer).0, 403);
    assert!(server.api().csrs["c2"].certificate.is_none());
    let admin = format!("Authorization: Bearer {}", server.api().admin_token);
    let (code, body) = put(&admin);
    assert_eq!(code, 200, "{body}");
    let (code, got) = curl(&d, &format!("{url}{CSRS}/c2"), &["-H", &bearer]);
    assert_eq!(code, 200);
    let got: Value = serde_json::from_str(&got).unwrap();
    assert_eq!(got["status"]["conditions"][0]["reason"], "Test");
    assert!(got["status"]["certificate"].is_string());
}

#[test]
fn pushback_and_an_apiserver_that_went_away() {
    let d = Dir::new("down");
    let server = Server::start(Apiserver::new(unix_now())).unwrap();
    std::fs::write(d.0.join("ca.crt"), &server.api().ca_pem).unwrap();
    server.api().throttle.push_back(kubeboot_sim::Route::Healthz);
    let out = run(
        "curl",
        &["-sS", "--cacert", "ca.crt", "-i", &format!("{}/healthz", server.url())],
        &d.0,
    );
    assert!(out.starts_with("HTTP/1.1 429"), "{out}");
    assert!(out.to_ascii_lowercase().contains("retry-after: 1"), "{out}");
    let (code, body) = curl(&d, &format!("{}/healthz", server.url()), &[]);
    assert_eq!((code, body.as_str()), (200, "ok"));
    server.api().down = true;
    let o = Command::new("curl")
        .args(["-sS", "--cacert", "ca.crt", &format!("{}/healthz", server.url())])
        .current_dir(&d.0)
        .output()
        .unwrap();
    assert!(!o.status.success(), "no answer while down");
}
