//! The kube::Client moves to a new identity at once: against a TLS server that requires client
//! certificates (rustls checking them against a CA OpenSSL made), requests before the first
//! identity fail as not ready, requests with identity A present A over one kept-alive
//! connection, and the first request after B is current presents B over a new connection while
//! the connection made with A is closed.

use std::path::Path;
use std::process::Command;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use kubeboot::agent::CertStatus;
use rustls::pki_types::CertificateDer;
use rustls::pki_types::pem::PemObject;
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use zeroize::Zeroizing;

use super::on_server;
use crate::credentials::{Credentials, Identity, Shared};

fn openssl(dir: &Path, args: &[&str]) {
    let out = Command::new("openssl").current_dir(dir).args(args).output().unwrap();
    assert!(out.status.success(), "openssl {args:?}: {}", String::from_utf8_lossy(&out.stderr));
}

/// A P-256 key and a certificate for `subject` signed by `ca` (`ca.crt`, `ca.key`) in `dir`.
fn issue(dir: &Path, name: &str, subject: &str, ext: &str) {
    let (key, csr, crt, extfile) =
        (format!("{name}.key"), format!("{name}.csr"), format!("{name}.crt"), format!("{name}.ext"));
    std::fs::write(dir.join(&extfile), ext).unwrap();
    openssl(dir, &["req", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes"]
        .iter()
        .copied()
        .chain(["-keyout", &key, "-out", &csr, "-subj", subject])
        .collect::<Vec<_>>());
    openssl(
        dir,
        &[
            "x509", "-req", "-in", &csr, "-CA", "ca.crt", "-CAkey", "ca.key", "-CAcreateserial",
            "-days", "1", "-extfile", &extfile, "-out", &crt,
        ],
    );
}

fn identity(dir: &Path, name: &str, generation: u64, server: &str) -> Identity {
    let chain = std::fs::read(dir.join(format!("{name}.crt"))).unwrap();
    let key = Zeroizing::new(std::fs::read(dir.join(format!("{name}.key"))).unwrap());
    let certified = crate::tls::certified_key(&chain, &key, &Default::default()).unwrap();
    let far = crate::clock::unix_now() + 3600;
    Identity {
        generation,
        node: "n".into(),
        server: server.into(),
        ca_pem: Some(std::fs::read(dir.join("ca.crt")).unwrap()),
        insecure: false,
        server_name: None,
        chain_pem: chain,
        key_pem: key,
        status: CertStatus { not_before: 0, not_after: far, rotation_deadline: far },
        certified,
    }
}

/// What the server saw: per connection, the client certificate's subject and whether it ended.
#[derive(Default)]
struct Seen {
    connections: Vec<(String, bool)>,
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_kube_client_moves_to_a_new_identity_at_once() {
    let dir = std::env::temp_dir().join(format!("kubeboot-runtime-kc-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    openssl(
        &dir,
        &[
            "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes",
            "-keyout", "ca.key", "-out", "ca.crt", "-subj", "/CN=test-ca", "-days", "1",
        ],
    );
    issue(&dir, "srv", "/CN=apiserver", "subjectAltName=IP:127.0.0.1\nextendedKeyUsage=serverAuth\n");
    let client_ext = "extendedKeyUsage=clientAuth\n";
    issue(&dir, "a", "/O=system:nodes/CN=system:node:a", client_ext);
    issue(&dir, "b", "/O=system:nodes/CN=system:node:b", client_ext);

    // The server: client certificates checked against the CA, HTTP/1.1 kept alive.
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let mut roots = rustls::RootCertStore::empty();
    for c in CertificateDer::pem_file_iter(dir.join("ca.crt")).unwrap() {
        roots.add(c.unwrap()).unwrap();
    }
    let verifier = rustls::server::WebPkiClientVerifier::builder_with_provider(
        Arc::new(roots),
        provider.clone(),
    )
    .build()
    .unwrap();
    let chain: Vec<_> =
        CertificateDer::pem_file_iter(dir.join("srv.crt")).unwrap().map(Result::unwrap).collect();
    let key = rustls::pki_types::PrivateKeyDer::from_pem_file(dir.join("srv.key")).unwrap();
    let config = rustls::ServerConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .unwrap()
        .with_client_cert_verifier(verifier)
        .with_single_cert(chain, key)
        .unwrap();
    let acceptor = tokio_rustls::TlsAcceptor::from(Arc::new(config));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let server = format!("https://{}", listener.local_addr().unwrap());
    let seen = Arc::new(Mutex::new(Seen::default()));
    let record = seen.clone();
    tokio::spawn(async move {
        loop {
            let (tcp, _) = listener.accept().await.unwrap();
            let (acceptor, record) = (acceptor.clone(), record.clone());
            tokio::spawn(async move {
                let Ok(tls) = acceptor.accept(tcp).await else { return };
                let peer = tls.get_ref().1.peer_certificates().unwrap()[0].to_vec();
                let subject = subject_of(&peer);
                let index = {
                    let mut s = record.lock().unwrap();
                    s.connections.push((subject, false));
                    s.connections.len() - 1
                };
                let mut tls = BufReader::new(tls);
                let mut line = String::new();
                loop {
                    // One request: its head (no body), then the answer.
                    line.clear();
                    if tls.read_line(&mut line).await.unwrap_or(0) == 0 {
                        break;
                    }
                    if line != "\r\n" {
                        continue;
                    }
                    let body = br#"{"major":"1","minor":"37"}"#;
                    let head = format!(
                        "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n",
                        body.len()
                    );
                    let w = tls.get_mut();
                    if w.write_all(head.as_bytes()).await.is_err() || w.write_all(body).await.is_err() {
                        break;
                    }
                }
                record.lock().unwrap().connections[index].1 = true;
            });
        }
    });

    let shared = Shared::new(false);
    let client = Credentials { shared: shared.clone() }.kube_client();
    let get = || async {
        let req = http::Request::get("/version").body(Vec::new()).unwrap();
        client.request_text(req).await
    };
    let e = get().await.unwrap_err().to_string();
    assert!(e.contains("not ready"), "{e}");
    assert!(seen.lock().unwrap().connections.is_empty());

    shared.publish_client(identity(&dir, "a", 1, &server));
    get().await.unwrap();
    get().await.unwrap();
    {
        let s = seen.lock().unwrap();
        assert_eq!(s.connections, [("system:node:a".to_owned(), false)], "one connection, kept");
    }

    shared.publish_client(identity(&dir, "b", 2, &server));
    get().await.unwrap();
    for _ in 0..50 {
        if seen.lock().unwrap().connections.first().is_some_and(|c| c.1) {
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let s = seen.lock().unwrap();
    assert_eq!(
        s.connections,
        [("system:node:a".to_owned(), true), ("system:node:b".to_owned(), false)],
        "the first request after B presents B over a new connection; A's is closed"
    );
    drop(s);
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn the_request_goes_to_the_identitys_server() {
    let uri: http::Uri = "/api/v1/nodes?fieldSelector=metadata.name%3Dn".parse().unwrap();
    let got = on_server("https://127.0.0.1:6443", &uri).unwrap();
    assert_eq!(got.to_string(), "https://127.0.0.1:6443/api/v1/nodes?fieldSelector=metadata.name%3Dn");
    let got = on_server("https://lb.example:443/k8s/", &uri).unwrap();
    assert_eq!(got.to_string(), "https://lb.example:443/k8s/api/v1/nodes?fieldSelector=metadata.name%3Dn");
}

/// The subject's CN of a DER certificate, as OpenSSL prints it.
fn subject_of(der: &[u8]) -> String {
    let out = Command::new("openssl")
        .args(["x509", "-inform", "DER", "-noout", "-subject", "-nameopt", "multiline"])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .and_then(|mut c| {
            use std::io::Write;
            c.stdin.take().unwrap().write_all(der)?;
            c.wait_with_output()
        })
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    text.lines()
        .find_map(|l| l.trim().strip_prefix("commonName").map(|v| v.trim_start_matches([' ', '=']).trim().to_owned()))
        .unwrap_or_default()
}
