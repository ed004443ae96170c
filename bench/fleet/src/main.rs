//! bench/fleet's kubeboot side: N node agents (the core's `kubeboot::agent::Agent`, one per node)
//! bootstrapping at once from one process, each with its own P-256 key (from its own entropy), its
//! own node name, cert dir and node kubeconfig, its own TLS connection, all with one bootstrap
//! kubeconfig (one token).
//!
//! The driver is only I/O, as every front-end: a tokio task per node sends the agent's requests
//! (HTTP/1.1 over rustls, one connection per node, watches streamed into the agent), hands the
//! response's `Retry-After` to the agent, does the file steps on tokio's blocking pool with the
//! crate's crash-safe store, sleeps when the agent says so. Every decision (backoff, pushback,
//! the CSR, the files) is the agent's.
//!
//! ```text
//! kubeboot-fleet --bootstrap-kubeconfig B --ca-bundle CA --dir D --count N [--prefix P]
//!                [--wait SECS] [--progress FILE] [--report FILE]
//! ```
//!
//! Writes one line per node to `--report` (`node=<name> ok=<0|1> ttc_ms=<ms> requests=<n>
//! pushback=<429s> early=<retries sooner than the Retry-After> transport_errors=<n>
//! failure=<reason>`), the number of nodes credentialed so far to `--progress` (rewritten as it
//! grows), and a summary on stdout: `fleet: nodes=N ok=K wall_ms=... p50_ms ... vmhwm_kib=...`.
//! Exit 0 when every node got credentials.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper::client::conn::http1::SendRequest;
use hyper_util::rt::TokioIo;
use kubeboot::agent::{
    Action, Agent, Capacities, Config, FileStep, Method, Mode, RequestKind, StreamControl,
};
use kubeboot::error::StoreErrorKind;
use kubeboot::pushback::{self, Headers};
use kubeboot::store::FileSteps;
use zeroize::Zeroizing;

/// Each node's agent capacities, sized to a node that bootstraps its client certificate (the
/// hosts' `Capacities::HOST` take 251 KiB of memory): the work buffer 8 KiB (a CSR watch event
/// of v1.37.2 is under 4 KiB), each CA bundle and chain 2 KiB (the fleet's are about 1 KiB), the
/// node's key its SEC1 PEM (software P-256), a file step 4 KiB (a pair is under 1.5 KiB, the
/// node kubeconfig under 1 KiB), paths 512 B, no serving DNS names. Larger input is a typed
/// `too-large`, never a truncation, so a node that needed more would say so. Each node's agent
/// is `size_of::<Agent>()` plus a block of `CAPS.memory_len()` bytes its task owns.
const CAPS: Capacities = Capacities {
    response: 8192,
    pem: 2048,
    key: kubeboot::key::SEC1_PEM_LEN,
    file: 4096,
    path: 512,
    serving_dns: 0,
};
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, ServerName};

/// Largest non-watch response body read.
const MAX_BODY: usize = 1024 * 1024;

struct Args {
    bootstrap: String,
    ca_bundle: String,
    dir: PathBuf,
    count: usize,
    prefix: String,
    wait_secs: i64,
    progress: Option<PathBuf>,
    report: Option<PathBuf>,
}

fn args() -> Result<Args, String> {
    let mut a = Args {
        bootstrap: String::new(),
        ca_bundle: String::new(),
        dir: PathBuf::new(),
        count: 0,
        prefix: "fleet-kb".into(),
        wait_secs: 1800,
        progress: None,
        report: None,
    };
    let mut it = std::env::args().skip(1);
    while let Some(flag) = it.next() {
        let mut val = || it.next().ok_or(format!("{flag} needs a value"));
        match flag.as_str() {
            "--bootstrap-kubeconfig" => a.bootstrap = val()?,
            "--ca-bundle" => a.ca_bundle = val()?,
            "--dir" => a.dir = val()?.into(),
            "--count" => a.count = val()?.parse().map_err(|e| format!("--count: {e}"))?,
            "--prefix" => a.prefix = val()?,
            "--wait" => a.wait_secs = val()?.parse().map_err(|e| format!("--wait: {e}"))?,
            "--progress" => a.progress = Some(val()?.into()),
            "--report" => a.report = Some(val()?.into()),
            other => return Err(format!("unknown argument {other}")),
        }
    }
    if a.bootstrap.is_empty() || a.ca_bundle.is_empty() || a.dir.as_os_str().is_empty() {
        return Err("usage: kubeboot-fleet --bootstrap-kubeconfig B --ca-bundle CA --dir D \
                    --count N [--prefix P] [--wait SECS] [--progress FILE] [--report FILE]"
            .into());
    }
    Ok(a)
}

fn unix_now() -> i64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| d.as_secs() as i64)
}

/// Sleep until the unix second `until` (the agent's clock counts whole seconds).
async fn sleep_until_unix(until: i64) {
    let now = SystemTime::now().duration_since(UNIX_EPOCH).unwrap_or_default();
    let target = Duration::from_secs(until.max(0) as u64);
    if target > now {
        tokio::time::sleep(target - now).await;
    }
}

/// What one node did.
#[derive(Default)]
struct Outcome {
    ok: bool,
    ttc: Duration,
    requests: u32,
    pushback: u32,
    /// Requests sent sooner than the last `Retry-After` asked (must stay 0).
    early: u32,
    transport_errors: u32,
    /// The last transport error (for the report).
    last_error: String,
    failure: String,
}

/// What every node shares: the TLS settings the agent names are the same for all (one
/// bootstrap kubeconfig), so the parsed roots are built once; connections are not shared.
struct Shared {
    tls: std::sync::Mutex<Option<(Vec<u8>, Arc<rustls::ClientConfig>)>>,
    files: FileSteps,
    done: AtomicUsize,
    progress: Option<PathBuf>,
    t0: Instant,
}

impl Shared {
    /// A client config trusting exactly `ca_pem` (no session resumption: nodes are separate
    /// devices and share no tickets).
    fn tls_for(&self, ca_pem: &[u8]) -> Result<Arc<rustls::ClientConfig>, String> {
        let mut slot = self.tls.lock().map_err(|_| "poisoned")?;
        if let Some((pem, cfg)) = slot.as_ref()
            && pem == ca_pem
        {
            return Ok(cfg.clone());
        }
        let mut roots = rustls::RootCertStore::empty();
        for c in CertificateDer::pem_slice_iter(ca_pem) {
            roots.add(c.map_err(|e| format!("CA: {e}"))?).map_err(|e| format!("CA: {e}"))?;
        }
        // ring, as the CLI's ureq uses (its provider is deprecated for lacking post-quantum key
        // exchange, which the apiserver's Go TLS would offer; not what this bench measures).
        #[allow(deprecated)]
        let provider = rustls::crypto::ring::default_provider();
        let mut cfg = rustls::ClientConfig::builder_with_provider(Arc::new(provider))
            .with_safe_default_protocol_versions()
            .map_err(|e| e.to_string())?
            .with_root_certificates(roots)
            .with_no_client_auth();
        cfg.resumption = rustls::client::Resumption::disabled();
        cfg.alpn_protocols = vec![b"http/1.1".to_vec()];
        let cfg = Arc::new(cfg);
        *slot = Some((ca_pem.to_vec(), cfg.clone()));
        Ok(cfg)
    }
}

/// A request copied out of the agent's action (the action borrows the agent).
struct Req {
    conn_id: u32,
    server: String,
    ca_pem: Vec<u8>,
    watch: bool,
    post: bool,
    uri: String,
    headers: Vec<(&'static str, String)>,
    body: Vec<u8>,
    give_up_at: i64,
}

/// The node's one connection (HTTP/1.1 over TLS, kept alive between requests).
struct Conn {
    id: u32,
    send: SendRequest<Full<Bytes>>,
}

async fn connect(shared: &Shared, r: &Req) -> Result<Conn, String> {
    let url = r.server.trim_end_matches('/');
    let hostport = url.strip_prefix("https://").ok_or("only https:// servers")?;
    let host = hostport.rsplit_once(':').map_or(hostport, |(h, _)| h);
    let host = host.trim_start_matches('[').trim_end_matches(']');
    let addr = if hostport.contains(':') { hostport.to_owned() } else { format!("{host}:443") };
    let tcp = tokio::net::TcpStream::connect(&addr).await.map_err(|e| e.to_string())?;
    let _ = tcp.set_nodelay(true);
    let name = ServerName::try_from(host.to_owned()).map_err(|e| e.to_string())?;
    let tls = tokio_rustls::TlsConnector::from(shared.tls_for(&r.ca_pem)?)
        .connect(name, tcp)
        .await
        .map_err(|e| e.to_string())?;
    let (send, conn) = hyper::client::conn::http1::handshake(TokioIo::new(tls))
        .await
        .map_err(|e| e.to_string())?;
    tokio::spawn(async move {
        let _ = conn.await;
    });
    Ok(Conn { id: r.conn_id, send })
}

/// Send `r` on the node's connection (a new one when there is none, it broke, or the agent names
/// another), within its give-up time; feed the outcome to the agent.
async fn exchange(
    shared: &Shared,
    conn: &mut Option<Conn>,
    agent: &mut Agent<'_>,
    mut r: Req,
    out: &mut Outcome,
    not_before: &mut Option<Instant>,
) {
    let budget = Duration::from_secs((r.give_up_at - unix_now()).clamp(1, 600) as u64);
    if not_before.take().is_some_and(|t| Instant::now() < t) {
        out.early += 1;
    }
    out.requests += 1;
    let body = std::mem::take(&mut r.body);
    let result = tokio::time::timeout(budget, async {
        if conn.as_ref().is_none_or(|c| c.id != r.conn_id || c.send.is_closed()) {
            *conn = Some(connect(shared, &r).await?);
        }
        let c = conn.as_mut().ok_or("no connection")?;
        c.send.ready().await.map_err(|e| e.to_string())?;
        let mut b = hyper::Request::builder()
            .method(if r.post { "POST" } else { "GET" })
            .uri(&r.uri)
            .header("Host", r.server.trim_start_matches("https://").trim_end_matches('/'));
        for (k, v) in &r.headers {
            b = b.header(*k, v);
        }
        let req = b.body(Full::new(Bytes::from(body))).map_err(|e| e.to_string())?;
        c.send.send_request(req).await.map_err(|e| e.to_string())
    })
    .await;
    let resp = match result {
        Ok(Ok(resp)) => resp,
        Ok(Err(e)) => {
            *conn = None;
            out.transport_errors += 1;
            out.last_error = e.clone();
            return agent.on_transport_error(unix_now(), &e);
        }
        Err(_) => {
            *conn = None;
            out.transport_errors += 1;
            out.last_error = "timed out".into();
            return agent.on_transport_error(unix_now(), "timed out");
        }
    };
    let status = resp.status().as_u16();
    let retry_after = resp.headers().get("Retry-After").map(|v| v.as_bytes().to_vec());
    let mut body = resp.into_body();
    if r.watch && status == 200 {
        let deadline = tokio::time::Instant::now() + budget;
        loop {
            match tokio::time::timeout_at(deadline, body.frame()).await {
                Ok(Some(Ok(frame))) => {
                    if let Some(chunk) = frame.data_ref()
                        && agent.on_stream_data(unix_now(), chunk) == StreamControl::Close
                    {
                        // The agent needs no more of it: drop the connection.
                        *conn = None;
                        return;
                    }
                }
                Ok(None) => return agent.on_stream_end(unix_now()),
                Ok(Some(Err(_))) | Err(_) => {
                    *conn = None;
                    return agent.on_stream_end(unix_now());
                }
            }
        }
    }
    let mut bytes = Vec::new();
    let read = tokio::time::timeout(budget, async {
        while let Some(frame) = body.frame().await {
            let frame = frame.map_err(|e| e.to_string())?;
            if let Some(d) = frame.data_ref() {
                if bytes.len() + d.len() > MAX_BODY {
                    return Err("response too large".to_owned());
                }
                bytes.extend_from_slice(d);
            }
        }
        Ok(())
    })
    .await;
    match read {
        Ok(Ok(())) => {
            if status == 429 {
                out.pushback += 1;
            }
            // The harness's own check of the agent's decision: no request before the seconds
            // the server asked for.
            let headers = Headers::retry_after(retry_after.as_deref());
            if let Some(secs) = pushback::asked(status, &headers) {
                *not_before = Some(Instant::now() + Duration::from_secs(u64::from(secs)));
            }
            agent.on_http_response(unix_now(), status, &headers, &bytes);
        }
        Ok(Err(e)) => {
            *conn = None;
            out.transport_errors += 1;
            out.last_error = e.clone();
            agent.on_transport_error(unix_now(), &e);
        }
        Err(_) => {
            *conn = None;
            out.transport_errors += 1;
            out.last_error = "timed out reading the body".into();
            agent.on_transport_error(unix_now(), "timed out reading the body");
        }
    }
}

/// A file step for the blocking pool: the agent's [`FileStep`] with its strings and bytes copied
/// out of the agent's memory (which stays with the node's task).
struct Step {
    /// [`FileStep::name`].
    name: &'static str,
    /// The step's paths in the order of its fields (`dir`, `prefix` for `recover`; `current`,
    /// `updated`, `target` for `swap-current`; `dir`, `prefix`, `keep` for `prune-pairs`;
    /// `path` for the others).
    paths: [String; 3],
    /// What it writes (may be secret).
    data: Zeroizing<Vec<u8>>,
}

impl Step {
    fn of(step: &FileStep<'_>) -> Step {
        let (paths, data): ([&str; 3], &[u8]) = match *step {
            FileStep::Recover { dir, prefix } => ([dir, prefix, ""], &[]),
            FileStep::SwapCurrent { current, updated, target } => ([current, updated, target], &[]),
            FileStep::PrunePairs { dir, prefix, keep } => ([dir, prefix, keep], &[]),
            FileStep::WriteKeyCache { path, pem: data }
            | FileStep::WritePair { path, content: data }
            | FileStep::WriteKubeconfig { path, content: data }
            | FileStep::WriteCa { path, content: data }
            | FileStep::WriteBootstrapKubeconfig { path, content: data } => ([path, "", ""], data),
            _ => ([step.path(), "", ""], &[]),
        };
        Step {
            name: step.name(),
            paths: paths.map(str::to_owned),
            data: Zeroizing::new(data.into()),
        }
    }

    /// The step again, borrowing this copy (`None` for a step this driver does not know).
    fn view(&self) -> Option<FileStep<'_>> {
        let [a, b, c] = &self.paths;
        let data = &self.data[..];
        Some(match self.name {
            "recover" => FileStep::Recover { dir: a, prefix: b },
            "create-dir" => FileStep::CreateDir { path: a },
            "write-key-cache" => FileStep::WriteKeyCache { path: a, pem: data },
            "write-pair" => FileStep::WritePair { path: a, content: data },
            "swap-current" => FileStep::SwapCurrent { current: a, updated: b, target: c },
            "write-kubeconfig" => FileStep::WriteKubeconfig { path: a, content: data },
            "write-ca" => FileStep::WriteCa { path: a, content: data },
            "write-bootstrap-kubeconfig" => {
                FileStep::WriteBootstrapKubeconfig { path: a, content: data }
            }
            "remove-key-cache" => FileStep::RemoveKeyCache { path: a },
            "remove-dir" => FileStep::RemoveDir { path: a },
            "prune-pairs" => FileStep::PrunePairs { dir: a, prefix: b, keep: c },
            _ => return None,
        })
    }
}

/// What the blocking pool did.
enum Done {
    Read(Result<Zeroizing<Vec<u8>>, StoreErrorKind>),
    File(Result<(), StoreErrorKind>),
}

enum Next {
    Read(String, usize),
    File(Step),
    Entropy(usize),
    Http(Req),
    Sleep(i64),
    Event,
    Done,
    Failed(String),
}

fn next(agent: &mut Agent<'_>, now: i64) -> Next {
    match agent.poll(now) {
        Action::Read(r) => Next::Read(r.path.to_owned(), r.max_len),
        Action::File(step) => Next::File(Step::of(&step)),
        Action::Entropy { len } => Next::Entropy(len),
        Action::Http(h) => {
            let mut headers =
                vec![("Accept", h.accept.to_owned()), ("User-Agent", h.user_agent.to_owned())];
            if let Some(a) = h.authorization {
                headers.push(("Authorization", a.to_owned()));
            }
            if let Some(ct) = h.content_type {
                headers.push(("Content-Type", ct.to_owned()));
            }
            Next::Http(Req {
                conn_id: h.connection.id,
                server: h.connection.server.to_owned(),
                ca_pem: h.connection.ca_pem.unwrap_or_default().to_vec(),
                watch: h.kind == RequestKind::Watch,
                post: h.method == Method::Post,
                uri: h.path.to_owned(),
                headers,
                body: h.body.to_vec(),
                give_up_at: h.give_up_at,
            })
        }
        Action::Sleep { until } => Next::Sleep(until),
        Action::Event(_) => Next::Event,
        Action::Done(_) => Next::Done,
        Action::Failed(f) => Next::Failed(f.error.name().to_owned()),
        _ => Next::Failed("unknown-action".into()),
    }
}

/// Run a read or a file step on the blocking pool (the crate's crash-safe store) and answer the
/// agent with its outcome.
async fn files(
    agent: &mut Agent<'_>,
    work: impl FnOnce() -> Done + Send + 'static,
) -> Result<(), String> {
    let done = tokio::task::spawn_blocking(work).await.map_err(|e| format!("file step: {e}"))?;
    let now = unix_now();
    match done {
        Done::Read(Ok(bytes)) => agent.on_read(now, Ok(&bytes)),
        Done::Read(Err(kind)) => agent.on_read(now, Err(kind)),
        Done::File(result) => agent.on_file_done(now, result),
    }
    Ok(())
}

async fn node(shared: Arc<Shared>, args: Arc<Args>, i: usize) -> (String, Outcome) {
    let name = format!("{}-{i}", args.prefix);
    let dir = args.dir.join(&name);
    let mut out = Outcome::default();
    let (wd, kc, pki) = (
        dir.to_string_lossy().into_owned(),
        dir.join("kubelet.conf").to_string_lossy().into_owned(),
        dir.join("pki").to_string_lossy().into_owned(),
    );
    let mut seed = [0u8; 8];
    if let Err(e) = getrandom::fill(&mut seed) {
        out.failure = format!("entropy: {e}");
        return (name, out);
    }
    // The agent over the node's memory (the task owns both).
    let mut memory = vec![0u8; CAPS.memory_len()];
    let mut agent = match Agent::new(&mut memory, &CAPS) {
        Ok(a) => a,
        Err(e) => {
            out.failure = e.name().to_owned();
            return (name, out);
        }
    };
    let mut cfg = Config::new("fleet", &wd, &kc, &pki);
    cfg.node_name = Some(&name);
    cfg.bootstrap_kubeconfig = Some(&args.bootstrap);
    cfg.ca_bundle = Some(&args.ca_bundle);
    cfg.bootstrap_wait_secs = args.wait_secs;
    cfg.mode = Mode::Once;
    cfg.seed = u64::from_le_bytes(seed);
    cfg.verifier = &kubeboot::backend::ring::Ring;
    if let Err(e) = agent.start(&cfg) {
        out.failure = e.name().to_owned();
        return (name, out);
    }
    let mut conn: Option<Conn> = None;
    let mut not_before = None;
    loop {
        match next(&mut agent, unix_now()) {
            Next::Read(path, max_len) => {
                let s = shared.clone();
                let read = move || {
                    Done::Read(
                        s.files.read(Path::new(&path), max_len).map_err(|e| e.reported_kind()),
                    )
                };
                if let Err(e) = files(&mut agent, read).await {
                    out.failure = e;
                    break;
                }
            }
            Next::File(step) => {
                let s = shared.clone();
                let execute = move || {
                    Done::File(match step.view() {
                        Some(v) => s.files.execute(&v).map_err(|e| e.reported_kind()),
                        None => Err(StoreErrorKind::Io),
                    })
                };
                if let Err(e) = files(&mut agent, execute).await {
                    out.failure = e;
                    break;
                }
            }
            Next::Entropy(len) => {
                let mut b = vec![0u8; len];
                if getrandom::fill(&mut b).is_err() {
                    out.failure = "entropy".into();
                    break;
                }
                agent.on_entropy(&b);
            }
            Next::Http(r) => {
                exchange(&shared, &mut conn, &mut agent, r, &mut out, &mut not_before).await
            }
            Next::Sleep(until) => sleep_until_unix(until).await,
            Next::Event => {}
            Next::Done => {
                out.ok = true;
                out.ttc = shared.t0.elapsed();
                let n = shared.done.fetch_add(1, Ordering::SeqCst) + 1;
                if let Some(p) = &shared.progress {
                    let _ = std::fs::write(p, format!("{n}\n"));
                }
                break;
            }
            Next::Failed(why) => {
                out.failure = why;
                out.ttc = shared.t0.elapsed();
                break;
            }
        }
    }
    drop(conn);
    (name, out)
}

/// `VmHWM` (peak RSS) and `VmRSS` of this process, KiB.
fn memory_kib() -> (u64, u64) {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    let field = |k: &str| {
        status
            .lines()
            .find_map(|l| l.strip_prefix(k))
            .and_then(|v| v.split_whitespace().next())
            .and_then(|v| v.parse().ok())
            .unwrap_or(0)
    };
    (field("VmHWM:"), field("VmRSS:"))
}

fn percentile(sorted: &[u128], p: usize) -> u128 {
    if sorted.is_empty() {
        return 0;
    }
    // Nearest rank.
    let rank = (p * sorted.len()).div_ceil(100).clamp(1, sorted.len());
    sorted[rank - 1]
}

fn main() {
    let args = match args() {
        Ok(a) => Arc::new(a),
        Err(e) => {
            eprintln!("kubeboot-fleet: {e}");
            std::process::exit(2);
        }
    };
    // One thread drives every node (the tokio runtime's); file steps go to its blocking pool,
    // at most 4 threads: tokio's default, 512, started one thread per node when a fleet began
    // (each with its stack and allocator arena: 17.4 MiB peak at N = 100 against 13.9 MiB).
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .max_blocking_threads(4)
        .build()
        .expect("runtime");
    let (vmhwm_idle, _) = memory_kib();
    let shared = Arc::new(Shared {
        tls: std::sync::Mutex::new(None),
        files: FileSteps::new(),
        done: AtomicUsize::new(0),
        progress: args.progress.clone(),
        t0: Instant::now(),
    });
    let results = rt.block_on(async {
        let tasks: Vec<_> =
            (0..args.count).map(|i| tokio::spawn(node(shared.clone(), args.clone(), i))).collect();
        let mut results = Vec::with_capacity(tasks.len());
        for t in tasks {
            match t.await {
                Ok(r) => results.push(r),
                Err(e) => results.push((
                    "?".into(),
                    Outcome { failure: format!("task: {e}"), ..Outcome::default() },
                )),
            }
        }
        results
    });
    let wall = shared.t0.elapsed();
    let (vmhwm, vmrss) = memory_kib();
    let mut lines = String::new();
    let mut ttcs: Vec<u128> = Vec::new();
    let (mut ok, mut requests, mut pushback, mut early, mut terr) = (0, 0u64, 0u64, 0u64, 0u64);
    for (name, o) in &results {
        if o.ok {
            ok += 1;
            ttcs.push(o.ttc.as_millis());
        }
        requests += u64::from(o.requests);
        pushback += u64::from(o.pushback);
        early += u64::from(o.early);
        terr += u64::from(o.transport_errors);
        lines.push_str(&format!(
            "node={name} ok={} ttc_ms={} requests={} pushback={} early={} transport_errors={} failure={} last_error={:?}\n",
            u8::from(o.ok),
            o.ttc.as_millis(),
            o.requests,
            o.pushback,
            o.early,
            o.transport_errors,
            if o.failure.is_empty() { "-" } else { &o.failure },
            o.last_error,
        ));
    }
    if let Some(p) = &args.report
        && let Err(e) = std::fs::write(p, lines)
    {
        eprintln!("kubeboot-fleet: {}: {e}", p.display());
    }
    ttcs.sort_unstable();
    println!(
        "fleet: side=kubeboot nodes={} ok={ok} wall_ms={} last_ms={} p50_ms={} p90_ms={} p99_ms={} \
         requests={requests} pushback={pushback} early={early} transport_errors={terr} \
         vmhwm_kib={vmhwm} vmrss_kib={vmrss} vmhwm_idle_kib={vmhwm_idle} agent_bytes={}",
        args.count,
        wall.as_millis(),
        ttcs.last().copied().unwrap_or(0),
        percentile(&ttcs, 50),
        percentile(&ttcs, 90),
        percentile(&ttcs, 99),
        std::mem::size_of::<Agent>() + CAPS.memory_len(),
    );
    std::process::exit(if ok == args.count { 0 } else { 1 });
}
