//! Embedding kubeboot's runtime in a node agent of your own: the runtime keeps the node's
//! credentials usable (bootstrap, rotation, the serving certificate) while the program uses them
//! in-process, never restarting for a new certificate:
//!
//! * as `system:node:<name>` through a `kube::Client`: it registers its Node, then every second
//!   lists it and gets it, and keeps a watch on it;
//! * as an HTTPS server whose certificate is the node's serving certificate, the newest pair at
//!   every handshake.
//!
//! ```text
//! embed --kubeconfig FILE --cert-dir DIR --bootstrap-kubeconfig FILE --node-name NAME
//!       --ca-bundle FILE --ip IP [--dns NAME] --listen IP:PORT
//! ```
//!
//! Besides the agent's lines it prints `embed:` lines (e2e/embed reads them): a new client
//! identity (`client generation=G current_after_swap_ms=MS`: from the moment the cert dir's
//! `kubelet-client-current.pem` moved), the first request that used it, a new serving pair, every
//! failed request, and on SIGTERM a summary; it exits 0 only if no request failed.

use std::net::SocketAddr;
use std::process::ExitCode;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use futures::StreamExt;
use k8s_openapi::api::core::v1::Node;
use kube::api::{Api, ListParams, ObjectMeta, PostParams, WatchEvent, WatchParams};
use kubeboot::agent::Mode;
use kubeboot::grammar;
use kubeboot_runtime::{Credentials, Options, Runtime, Settings};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

/// What the program did with the node's identity.
#[derive(Default)]
struct Counts {
    requests: AtomicU64,
    failed: AtomicU64,
    watch_events: AtomicU64,
    /// The client generation of the last request that succeeded.
    used: AtomicU64,
}

impl Counts {
    fn outcome<T, E: std::fmt::Display>(&self, what: &str, generation: u64, r: Result<T, E>) {
        self.requests.fetch_add(1, Ordering::Relaxed);
        match r {
            Ok(_) => {
                if self.used.fetch_max(generation, Ordering::Relaxed) < generation {
                    println!("embed: first request generation={generation} at_ms={}", now_ms());
                }
            }
            Err(e) => {
                self.failed.fetch_add(1, Ordering::Relaxed);
                println!("embed: failed {what} generation={generation}: {e}");
            }
        }
    }
}

fn now_ms() -> u128 {
    SystemTime::now().duration_since(UNIX_EPOCH).map(|d| d.as_millis()).unwrap_or_default()
}

/// The flags, the grammar judging their values (a refusal is its line, exit 2).
fn settings(args: &[String]) -> Result<(Settings, SocketAddr), String> {
    let mut s = Settings::new("rust-embed", "kubelet.conf", "pki");
    s.mode = Mode::Run { max_rotations: None };
    let (mut dns, mut ips, mut listen) = (Vec::new(), Vec::new(), None);
    let refusal = |flag: &str, value: &str, e| {
        let mut line = String::new();
        let _ = grammar::write_refusal(&mut line, flag, value, e);
        line
    };
    for pair in args.chunks(2) {
        let [flag, value] = pair else { return Err(format!("{}: a value is missing", pair[0])) };
        match flag.as_str() {
            "--kubeconfig" => s.kubeconfig = value.into(),
            "--cert-dir" => s.cert_dir = value.into(),
            "--bootstrap-kubeconfig" => s.bootstrap_kubeconfig = Some(value.into()),
            "--node-name" => s.node_name = Some(value.clone()),
            "--ca-bundle" => s.ca_bundle = Some(value.into()),
            "--dns" => dns.push(value.clone()),
            "--ip" => ips.push(grammar::ip(value).map_err(|e| refusal(flag, value, e))?),
            "--listen" => {
                listen = Some(grammar::bind_address(value).map_err(|e| refusal(flag, value, e))?)
            }
            _ => return Err(format!("{flag}: not a flag of this program")),
        }
    }
    s.serving = Some((dns, ips));
    Ok((s, listen.ok_or("--listen is required")?))
}

#[tokio::main]
async fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let (settings, listen) = match settings(&args) {
        Ok(s) => s,
        Err(line) => {
            eprintln!("{line}");
            return ExitCode::from(2);
        }
    };
    let node = settings.node_name.clone().unwrap_or_default();
    let current_pem = settings.cert_dir.join("kubelet-client-current.pem");
    // Print the agent's lines, stop on SIGTERM, keep the credentials for this program.
    let options = Options { print: true, signals: true, ..Options::default() };
    let runtime = Runtime::new(settings, options);
    let handle = runtime.handle();
    let agent = tokio::spawn(runtime.run());
    let creds = handle.credentials();
    let counts = Arc::new(Counts::default());

    let tasks = [
        tokio::spawn(follow_client(creds.clone(), current_pem)),
        tokio::spawn(follow_serving(creds.clone())),
        tokio::spawn(serve(listen, creds.clone(), node.clone())),
        tokio::spawn(use_identity(creds.clone(), node.clone(), counts.clone())),
        tokio::spawn(watch_node(creds.clone(), node, counts.clone())),
    ];
    let end = agent.await;
    for t in tasks {
        t.abort();
    }
    let (requests, failed) =
        (counts.requests.load(Ordering::Relaxed), counts.failed.load(Ordering::Relaxed));
    let client = creds.client().map(|i| i.generation()).unwrap_or(0);
    let serving = creds.serving().map(|p| p.generation()).unwrap_or(0);
    println!(
        "embed: summary requests={requests} failed={failed} client_generations={client} \
         serving_generations={serving} watch_events={} end={end:?}",
        counts.watch_events.load(Ordering::Relaxed)
    );
    match end {
        Ok(Ok(_)) if failed == 0 => ExitCode::SUCCESS,
        _ => ExitCode::FAILURE,
    }
}

/// Say when each client identity became current, and how long after the cert dir's
/// `-current.pem` link moved to it.
async fn follow_client(creds: Credentials, current_pem: std::path::PathBuf) {
    let mut seen = 0;
    while let Ok(identity) = creds.next_client(seen).await {
        let at = now_ms();
        let swapped = std::fs::symlink_metadata(&current_pem)
            .and_then(|m| m.modified())
            .map(|t| t.duration_since(UNIX_EPOCH).unwrap_or_default().as_millis())
            .unwrap_or(at);
        seen = identity.generation();
        println!(
            "embed: client generation={seen} current_after_swap_ms={} at_ms={at}",
            at.saturating_sub(swapped)
        );
    }
}

/// Say when each serving pair became current.
async fn follow_serving(creds: Credentials) {
    let mut seen = 0;
    loop {
        match creds.wait_serving().await {
            Ok(pair) if pair.generation() > seen => {
                seen = pair.generation();
                println!("embed: serving generation={seen} at_ms={}", now_ms());
            }
            Ok(_) => tokio::time::sleep(Duration::from_millis(100)).await,
            Err(_) => return,
        }
    }
}

/// Register the node, then every second list it and get it, as `system:node:<name>`.
async fn use_identity(creds: Credentials, node: String, counts: Arc<Counts>) {
    if creds.wait_client().await.is_err() {
        return;
    }
    let nodes: Api<Node> = Api::all(creds.kube_client());
    let generation = || creds.client().map(|i| i.generation()).unwrap_or(0);
    let mine = Node {
        metadata: ObjectMeta { name: Some(node.clone()), ..ObjectMeta::default() },
        ..Node::default()
    };
    match nodes.create(&PostParams::default(), &mine).await {
        Err(kube::Error::Api(s)) if s.code == 409 => println!("embed: node {node} exists"),
        r => counts.outcome("create node", generation(), r),
    }
    // (the node authorizer lets a node read its own Node object)
    let own = ListParams::default().fields(&format!("metadata.name={node}"));
    let mut tick = tokio::time::interval(Duration::from_secs(1));
    loop {
        tick.tick().await;
        let g = generation();
        counts.outcome("list nodes", g, nodes.list(&own).await);
        counts.outcome("get node", g, nodes.get(&node).await);
    }
}

/// Watch the node's own Node object, a new watch every 30 s (each one a request made with the
/// identity current then).
async fn watch_node(creds: Credentials, node: String, counts: Arc<Counts>) {
    if creds.wait_client().await.is_err() {
        return;
    }
    let nodes: Api<Node> = Api::all(creds.kube_client());
    let params = WatchParams::default().fields(&format!("metadata.name={node}")).timeout(30);
    loop {
        let g = creds.client().map(|i| i.generation()).unwrap_or(0);
        let stream = nodes.watch(&params, "0").await;
        let stream = match stream {
            Ok(s) => s,
            Err(e) => {
                counts.outcome::<(), _>("watch node", g, Err(e));
                tokio::time::sleep(Duration::from_secs(1)).await;
                continue;
            }
        };
        let mut stream = std::pin::pin!(stream);
        while let Some(event) = stream.next().await {
            match event {
                Ok(WatchEvent::Error(e)) => counts.outcome::<(), _>("watch node", g, Err(e)),
                Ok(_) => {
                    counts.watch_events.fetch_add(1, Ordering::Relaxed);
                }
                Err(e) => counts.outcome::<(), _>("watch node", g, Err(e)),
            }
        }
    }
}

/// HTTPS on the node's serving certificate: the newest pair at every handshake.
async fn serve(listen: SocketAddr, creds: Credentials, node: String) {
    let config = rustls::ServerConfig::builder_with_provider(Arc::new(
        rustls::crypto::ring::default_provider(),
    ))
    .with_safe_default_protocol_versions()
    .expect("TLS 1.2 and 1.3")
    .with_no_client_auth()
    .with_cert_resolver(creds.server_cert_resolver());
    let acceptor = tokio_rustls::TlsAcceptor::from(Arc::new(config));
    let listener = match tokio::net::TcpListener::bind(listen).await {
        Ok(l) => l,
        Err(e) => return eprintln!("embed: listen {listen}: {e}"),
    };
    println!("embed: serving https://{listen}");
    loop {
        let Ok((tcp, _)) = listener.accept().await else { continue };
        let (acceptor, creds, node) = (acceptor.clone(), creds.clone(), node.clone());
        tokio::spawn(async move {
            let Ok(mut tls) = acceptor.accept(tcp).await else { return };
            let mut head = [0u8; 1024];
            let _ = tls.read(&mut head).await;
            let g = creds.serving().map(|p| p.generation()).unwrap_or(0);
            let body = format!("ok {node} serving generation {g}\n");
            let answer = format!(
                "HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: {}\r\n\
                 Connection: close\r\n\r\n{body}",
                body.len()
            );
            let _ = tls.write_all(answer.as_bytes()).await;
            let _ = tls.shutdown().await;
        });
    }
}
