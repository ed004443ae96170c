//! The runtime drives the core's agent against the one simulated apiserver (kubeboot-sim over
//! HTTPS on 127.0.0.1, which judges client certificates as kube-apiserver's authenticator does):
//! a bootstrap with the token, the serving certificate once approved, a rotation, and the
//! embedding program's credentials following each of them — the kube::Client as
//! `system:node:<name>`, the serving pair through the rustls resolver — with no restart. The
//! first client certificate lives a few seconds: once it has expired (the apiserver refuses it),
//! the same kube::Client still succeeds, because it presents the rotated one.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use k8s_openapi::api::authentication::v1::SelfSubjectReview;
use kube::api::{Api, PostParams};
use kubeboot::agent::Mode;
use kubeboot_runtime::{Credentials, Finished, Options, Runtime, Settings};
use kubeboot_sim::serve::{Server, unix_now};
use kubeboot_sim::{Apiserver, DEFAULT_TOKEN, SERVING_SIGNER, Who, first_certificate_der};
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, ServerName};

const NODE: &str = "sim-node";
/// The first client certificate's lifetime (seconds): short, so the test sees it expire.
const SHORT: i64 = 12;

struct Dir(PathBuf);
impl Drop for Dir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

async fn within<T>(secs: u64, what: &str, f: impl std::future::Future<Output = T>) -> T {
    tokio::time::timeout(Duration::from_secs(secs), f)
        .await
        .unwrap_or_else(|_| panic!("{what}: not within {secs} s"))
}

async fn who_am_i(creds: &Credentials) -> Result<String, kube::Error> {
    let reviews: Api<SelfSubjectReview> = Api::all(creds.kube_client());
    let r = reviews.create(&PostParams::default(), &SelfSubjectReview::default()).await?;
    Ok(r.status.and_then(|s| s.user_info).and_then(|u| u.username).unwrap_or_default())
}

/// The certificate HTTPS on `addr` presents to a client that trusts only `ca` and checks the
/// name 127.0.0.1.
async fn served(addr: std::net::SocketAddr, ca: &str) -> Vec<u8> {
    let mut roots = rustls::RootCertStore::empty();
    roots.add(CertificateDer::from_pem_slice(ca.as_bytes()).unwrap()).unwrap();
    let config = rustls::ClientConfig::builder_with_provider(Arc::new(
        rustls::crypto::ring::default_provider(),
    ))
    .with_safe_default_protocol_versions()
    .unwrap()
    .with_root_certificates(roots)
    .with_no_client_auth();
    let tcp = tokio::net::TcpStream::connect(addr).await.unwrap();
    let name = ServerName::try_from("127.0.0.1").unwrap();
    let tls = tokio_rustls::TlsConnector::from(Arc::new(config)).connect(name, tcp).await.unwrap();
    tls.get_ref().1.peer_certificates().unwrap()[0].to_vec()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bootstrap_serving_and_rotation_followed_in_process() {
    let dir =
        Dir(std::env::temp_dir().join(format!("kubeboot-runtime-sim-{}", std::process::id())));
    let _ = std::fs::remove_dir_all(&dir.0);
    std::fs::create_dir_all(&dir.0).unwrap();
    let mut api = Apiserver::new(unix_now());
    api.lifetime = SHORT;
    let apiserver = Server::start(api).unwrap();
    let ca = apiserver.api().ca_pem.clone();
    let ca_file = dir.0.join("ca.crt");
    std::fs::write(&ca_file, &ca).unwrap();
    let bootstrap = dir.0.join("bootstrap.conf");
    let text = kubeboot_sim::bootstrap_kubeconfig(
        &apiserver.url(),
        ca_file.to_str().unwrap(),
        DEFAULT_TOKEN,
    );
    std::fs::write(&bootstrap, text).unwrap();

    let mut settings = Settings::new("runtime-test", dir.0.join("kubelet.conf"), dir.0.join("pki"));
    settings.bootstrap_kubeconfig = Some(bootstrap);
    settings.node_name = Some(NODE.into());
    settings.serving = Some((vec![format!("{NODE}.example")], vec!["127.0.0.1".parse().unwrap()]));
    settings.mode = Mode::Run { max_rotations: Some(1) };
    let runtime = Runtime::new(settings, Options { notify: false, ..Options::default() });
    let handle = runtime.handle();
    let creds = handle.credentials();
    assert!(creds.client().is_err() && creds.serving().is_err(), "nothing before the first");
    let run = tokio::spawn(runtime.run());

    // The bootstrap: the first identity, as the apiserver sees it.
    let first = within(30, "the first client identity", creds.wait_client()).await.unwrap();
    assert_eq!(first.generation(), 1);
    assert_eq!(
        within(10, "a review", who_am_i(&creds)).await.unwrap(),
        format!("system:node:{NODE}")
    );
    // From now on certificates live an hour; the serving CSR waits for an approver (this test).
    apiserver.api().lifetime = 3600;
    let serving_csr = within(30, "the serving CSR", async {
        loop {
            let name = {
                let api = apiserver.api();
                api.csrs.values().find(|c| c.signer == SERVING_SIGNER).map(|c| c.name.clone())
            };
            match name {
                Some(n) => break n,
                None => tokio::time::sleep(Duration::from_millis(50)).await,
            }
        }
    })
    .await;
    apiserver.api().approve(&serving_csr, unix_now());
    let pair = within(30, "the serving pair", creds.wait_serving()).await.unwrap();

    // HTTPS on the node's serving certificate: what the cert dir holds, checked against the CA.
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let config = rustls::ServerConfig::builder_with_provider(Arc::new(
        rustls::crypto::ring::default_provider(),
    ))
    .with_safe_default_protocol_versions()
    .unwrap()
    .with_no_client_auth()
    .with_cert_resolver(creds.server_cert_resolver());
    let acceptor = tokio_rustls::TlsAcceptor::from(Arc::new(config));
    tokio::spawn(async move {
        while let Ok((tcp, _)) = listener.accept().await {
            let _ = acceptor.accept(tcp).await;
        }
    });
    let on_disk = std::fs::read(dir.0.join("pki/kubelet-server-current.pem")).unwrap();
    assert_eq!(served(addr, &ca).await, first_certificate_der(&on_disk).unwrap());
    assert_eq!(first_certificate_der(pair.chain_pem()), first_certificate_der(&on_disk));

    // The first client certificate is due at once (it lives SHORT s plus the signer's five
    // minutes of backdating): the agent rotates it, then stops (max_rotations).
    let second = within(30, "the rotated identity", creds.next_client(1)).await.unwrap();
    assert_eq!(second.generation(), 2);
    assert_ne!(second.chain_pem(), first.chain_pem());
    let end = within(30, "the run's end", run).await.unwrap().unwrap();
    assert!(matches!(end, Finished::Done(_)), "{end:?}");

    // Past the first certificate's expiry the apiserver refuses it; the same kube::Client
    // still succeeds: it presents the rotated certificate.
    let old = first_certificate_der(first.chain_pem()).unwrap();
    let expiry = first.status().not_after;
    assert!(expiry <= unix_now() + SHORT);
    tokio::time::sleep(Duration::from_secs((expiry + 1 - unix_now()).max(0) as u64)).await;
    assert_eq!(apiserver.api().node_identity(&old, unix_now()), None, "the first has expired");
    let new = first_certificate_der(second.chain_pem()).unwrap();
    assert!(apiserver.api().node_identity(&new, unix_now()).is_some());
    let before = apiserver.api().log.len();
    assert_eq!(
        within(10, "a review", who_am_i(&creds)).await.unwrap(),
        format!("system:node:{NODE}")
    );
    let log = apiserver.api().log.clone();
    assert_eq!(log.len(), before + 1);
    assert_eq!(log[before].who, Who::Node);
    assert_eq!(served(addr, &ca).await, first_certificate_der(&on_disk).unwrap());
    // The agent's own traffic: the token for the bootstrap only, the node's certificate after.
    let creates: Vec<Who> =
        log.iter().filter(|e| e.route == kubeboot_sim::Route::CsrCreate).map(|e| e.who).collect();
    assert_eq!(creates, [Who::Bootstrap, Who::Node, Who::Node], "client, serving, rotation");
}
