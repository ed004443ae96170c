//! bench/fleet's kubeboot side: N node agents bootstrapping at once from one process, each run by
//! `kubeboot-runtime` (the runtime a program embedding kubeboot uses: the core's agent over
//! tokio, hyper and rustls, its file steps, its sleeps) with its own P-256 key, node name, cert
//! dir, node kubeconfig and HTTPS client, all with one bootstrap kubeconfig (one token).
//!
//! The driver only starts the runtimes and writes down what they said: every request, backoff,
//! pushback and file is the runtime's and its agent's. Each node's `User-Agent` names it
//! (`kubeboot-fleet-<i>/…`), so the apiserver's audit log tells the nodes apart.
//!
//! ```text
//! kubeboot-fleet --bootstrap-kubeconfig B --ca-bundle CA --dir D --count N [--prefix P]
//!                [--wait SECS] [--progress FILE] [--report FILE]
//! ```
//!
//! Writes one line per node to `--report` (`node=<name> ua=<front-end> ok=<0|1> ttc_ms=<ms>
//! pushback=<server-asked retries> retry_at=<when each was due, RFC 3339, comma-separated>
//! retries=<other retries> failure=<reason>`), the number of nodes credentialed so far to
//! `--progress` (rewritten as it grows), and a summary on stdout: `fleet: nodes=N ok=K
//! wall_ms=... p50_ms ... vmhwm_kib=...`. Exit 0 when every node got credentials. Whether every
//! node waited as long as the server asked is checked against the audit log
//! (`analyze.py`: each node's request after a 429 is received no sooner than its `retry_at`).

use std::path::PathBuf;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use kubeboot::agent::{Agent, Capacities, Mode};
use kubeboot_runtime::{Event, Finished, Options, Runtime, Settings};

/// Each node's agent capacities, sized to a node that bootstraps its client certificate (the
/// runtime's default, `Capacities::HOST`, takes 251 KiB): the work buffer 8 KiB (a CSR watch
/// event of v1.37.2 is under 4 KiB), each CA bundle and chain 1.5 KiB (the fleet's CAs and issued
/// certificates are under 1 KiB of PEM each), the node's key its SEC1 PEM (software P-256), a
/// file step 2 KiB (a pair is under 1.3 KiB, the node kubeconfig with its CA about 1.4 KiB),
/// paths 256 B (the longest, a pair's temporary file under CI's target directory, is about
/// 160), no serving DNS names. Larger input is a typed `too-large`, never a truncation, so a node
/// that needed more would say so.
const CAPS: Capacities = Capacities {
    response: 8192,
    pem: 1536,
    key: kubeboot::key::SEC1_PEM_LEN,
    file: 2048,
    path: 256,
    serving_dns: 0,
};

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

/// What one node's runtime said.
#[derive(Default)]
struct Outcome {
    ok: bool,
    ttc: Duration,
    /// `retry reason=server-asked` lines: the `at=` of each (a 429 or 5xx with `Retry-After`).
    retry_at: Vec<String>,
    /// Other `retry` lines (transport errors, 5xx without `Retry-After`, ...).
    retries: u32,
    failure: String,
}

impl Outcome {
    fn heard(&mut self, e: &Event) {
        if e.step != "retry" {
            return;
        }
        let field = |k: &str| {
            e.line.split_whitespace().find_map(|kv| kv.strip_prefix(k)?.strip_prefix('='))
        };
        match (field("reason"), field("at")) {
            (Some("server-asked"), Some(at)) => self.retry_at.push(at.to_owned()),
            _ => self.retries += 1,
        }
    }
}

/// What every node shares.
struct Shared {
    done: AtomicUsize,
    progress: Option<PathBuf>,
    t0: Instant,
}

/// The node's settings: what a `kubeboot bootstrap` of it would be given.
fn settings(args: &Args, i: usize, name: &str) -> Settings {
    let dir = args.dir.join(name);
    let mut s = Settings::new(&format!("fleet-{i}"), dir.join("kubelet.conf"), dir.join("pki"));
    s.working_dir = dir;
    s.node_name = Some(name.to_owned());
    s.bootstrap_kubeconfig = Some(args.bootstrap.clone().into());
    s.ca_bundle = Some(args.ca_bundle.clone().into());
    s.bootstrap_wait_secs = args.wait_secs;
    s.mode = Mode::Once;
    s
}

async fn node(shared: Arc<Shared>, args: Arc<Args>, i: usize) -> (String, Outcome) {
    let name = format!("{}-{i}", args.prefix);
    let options = Options {
        notify: false,
        credentials: false,
        capacities: CAPS,
        // (nobody subscribes: the driver hears every line through on_event)
        event_buffer: 1,
        ..Options::default()
    };
    let heard = Arc::new(Mutex::new(Outcome::default()));
    let h = heard.clone();
    let runtime = Runtime::new(settings(&args, i, &name), options).on_event(move |e| {
        if let Ok(mut o) = h.lock() {
            o.heard(e);
        }
    });
    let end = runtime.run().await;
    let mut out = std::mem::take(&mut *heard.lock().unwrap_or_else(|p| p.into_inner()));
    out.ttc = shared.t0.elapsed();
    match end {
        Ok(Finished::Done(_)) => {
            out.ok = true;
            let n = shared.done.fetch_add(1, Ordering::SeqCst) + 1;
            if let Some(p) = &shared.progress {
                let _ = std::fs::write(p, format!("{n}\n"));
            }
        }
        Ok(Finished::Stopped) => out.failure = "stopped".into(),
        Err(e) => out.failure = e.to_string(),
    }
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
    // One thread drives every node (the runtimes run as tasks of one current-thread tokio
    // runtime, as an embedding program with many virtual nodes would).
    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().expect("runtime");
    let (vmhwm_idle, _) = memory_kib();
    let shared = Arc::new(Shared {
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
    let (mut ok, mut pushback, mut retries) = (0, 0usize, 0u64);
    for (i, (name, o)) in results.iter().enumerate() {
        if o.ok {
            ok += 1;
            ttcs.push(o.ttc.as_millis());
        }
        pushback += o.retry_at.len();
        retries += u64::from(o.retries);
        lines.push_str(&format!(
            "node={name} ua=kubeboot-fleet-{i}/ ok={} ttc_ms={} pushback={} retry_at={} retries={} failure={:?}\n",
            u8::from(o.ok),
            o.ttc.as_millis(),
            o.retry_at.len(),
            if o.retry_at.is_empty() { "-".into() } else { o.retry_at.join(",") },
            o.retries,
            if o.failure.is_empty() { "-" } else { &o.failure },
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
         pushback={pushback} retries={retries} \
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
