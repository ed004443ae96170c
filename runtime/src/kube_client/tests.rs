//! The kube::Client moves to a new identity at once, against the simulated apiserver
//! (kubeboot-sim over HTTPS, which judges client certificates as kube-apiserver's authenticator
//! does): requests before the first identity fail as not ready; with identity A (keys and CSRs
//! made by OpenSSL, signed by the simulated cluster's CA) a SelfSubjectReview says
//! `system:node:a`, twice over one kept-alive connection; the first request after B is current
//! says `system:node:b`, over a new connection, and the connection made with A is closed. A TCP
//! relay in front of the apiserver counts the connections.

use std::path::Path;
use std::process::Command;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use k8s_openapi::api::authentication::v1::SelfSubjectReview;
use kube::api::{Api, PostParams};
use kubeboot::agent::CertStatus;
use kubeboot_sim::serve::{Server, unix_now};
use kubeboot_sim::{Apiserver, Who};
use zeroize::Zeroizing;

use super::on_server;
use crate::credentials::{Credentials, Identity, Shared};

fn openssl(dir: &Path, args: &[&str]) {
    let out = Command::new("openssl").current_dir(dir).args(args).output().unwrap();
    assert!(out.status.success(), "openssl {args:?}: {}", String::from_utf8_lossy(&out.stderr));
}

/// A P-256 key by OpenSSL (`NAME.key`) and its certificate for `system:node:NAME` from the
/// simulated cluster's signer (`NAME.crt`).
fn issue(dir: &Path, server: &Server, name: &str) {
    let (key, csr) = (format!("{name}.key"), format!("{name}.csr"));
    let subject = format!("/O=system:nodes/CN=system:node:{name}");
    openssl(
        dir,
        &[
            "req",
            "-new",
            "-newkey",
            "ec",
            "-pkeyopt",
            "ec_paramgen_curve:P-256",
            "-nodes",
            "-keyout",
            &key,
            "-out",
            &csr,
            "-subj",
            &subject,
        ],
    );
    let csr = std::fs::read(dir.join(&csr)).unwrap();
    let crt = server.api().issue(&csr, false, unix_now(), 3600);
    std::fs::write(dir.join(format!("{name}.crt")), crt).unwrap();
}

fn identity(dir: &Path, name: &str, generation: u64, server: &str, ca: &str) -> Identity {
    let chain = std::fs::read(dir.join(format!("{name}.crt"))).unwrap();
    let key = Zeroizing::new(std::fs::read(dir.join(format!("{name}.key"))).unwrap());
    let certified = crate::tls::certified_key(&chain, &key, &Default::default()).unwrap();
    let far = crate::clock::unix_now() + 3600;
    Identity {
        generation,
        node: name.into(),
        server: server.into(),
        ca_pem: Some(ca.as_bytes().to_vec()),
        insecure: false,
        server_name: None,
        chain_pem: chain,
        key_pem: key,
        status: CertStatus { not_before: 0, not_after: far, rotation_deadline: far },
        certified,
    }
}

/// A TCP relay to `to` on 127.0.0.1: its address, and per connection whether it has ended.
async fn relay(to: std::net::SocketAddr) -> (std::net::SocketAddr, Arc<Mutex<Vec<bool>>>) {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let ended = Arc::new(Mutex::new(Vec::new()));
    let record = ended.clone();
    tokio::spawn(async move {
        loop {
            let (mut inbound, _) = listener.accept().await.unwrap();
            let index = {
                let mut e = record.lock().unwrap();
                e.push(false);
                e.len() - 1
            };
            let record = record.clone();
            tokio::spawn(async move {
                if let Ok(mut outbound) = tokio::net::TcpStream::connect(to).await {
                    let _ = tokio::io::copy_bidirectional(&mut inbound, &mut outbound).await;
                }
                record.lock().unwrap()[index] = true;
            });
        }
    });
    (addr, ended)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_kube_client_moves_to_a_new_identity_at_once() {
    let dir = std::env::temp_dir().join(format!("kubeboot-runtime-kc-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let apiserver = Server::start(Apiserver::new(unix_now())).unwrap();
    let ca = apiserver.api().ca_pem.clone();
    issue(&dir, &apiserver, "a");
    issue(&dir, &apiserver, "b");
    let (addr, connections) = relay(apiserver.addr()).await;
    let server = format!("https://{addr}");

    let shared = Shared::new(false);
    let reviews: Api<SelfSubjectReview> =
        Api::all(Credentials { shared: shared.clone() }.kube_client());
    let who_am_i = || async {
        let r = reviews.create(&PostParams::default(), &SelfSubjectReview::default()).await?;
        let user = r.status.and_then(|s| s.user_info).and_then(|u| u.username);
        Ok::<_, kube::Error>(user.unwrap_or_default())
    };
    let e = who_am_i().await.unwrap_err().to_string();
    assert!(e.contains("not ready"), "{e}");
    assert!(connections.lock().unwrap().is_empty());
    assert!(apiserver.api().log.is_empty());

    shared.publish_client(identity(&dir, "a", 1, &server, &ca));
    assert_eq!(who_am_i().await.unwrap(), "system:node:a");
    // (hyper hands a connection back to its pool from a task of its own once the response is
    // read: give it that moment, or the next request may open a second one)
    tokio::time::sleep(std::time::Duration::from_millis(300)).await;
    assert_eq!(who_am_i().await.unwrap(), "system:node:a");
    assert_eq!(*connections.lock().unwrap(), [false], "one connection, kept");

    shared.publish_client(identity(&dir, "b", 2, &server, &ca));
    assert_eq!(who_am_i().await.unwrap(), "system:node:b", "the first request after B presents B");
    for _ in 0..50 {
        if connections.lock().unwrap().first() == Some(&true) {
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert_eq!(*connections.lock().unwrap(), [true, false], "over a new connection; A's is closed");
    let log = apiserver.api().log.clone();
    assert_eq!(log.len(), 3);
    assert!(log.iter().all(|e| e.who == Who::Node), "{log:?}");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn the_request_goes_to_the_identitys_server() {
    let uri: http::Uri = "/api/v1/nodes?fieldSelector=metadata.name%3Dn".parse().unwrap();
    let got = on_server("https://127.0.0.1:6443", &uri).unwrap();
    assert_eq!(
        got.to_string(),
        "https://127.0.0.1:6443/api/v1/nodes?fieldSelector=metadata.name%3Dn"
    );
    let got = on_server("https://lb.example:443/k8s/", &uri).unwrap();
    assert_eq!(
        got.to_string(),
        "https://lb.example:443/k8s/api/v1/nodes?fieldSelector=metadata.name%3Dn"
    );
}
