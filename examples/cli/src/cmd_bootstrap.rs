//! `kubeboot bootstrap`, `kubeboot rotate`, `kubeboot run`: the node agent. Every decision is
//! the core's (`kubeboot::agent`); this file only does I/O: files (through the core's crash-safe
//! `store::FileSteps`), HTTPS (`transport.rs`), the clock, entropy, sleeping and printing.

use std::net::IpAddr;
use std::path::PathBuf;
use std::time::Duration;

use clap::Args;
use kubeboot::agent::{
    Action, Agent, Capacities, Config, DiscoveryConfig, LogFormat, Mode, RotateNow, Serving,
};
use kubeboot::pin::CaPin;
use kubeboot::store::FileSteps;
use kubeboot::token::BootstrapToken;
use zeroize::Zeroizing;

use crate::metrics_out::MetricsOut;
use crate::service;
use crate::transport::Http;
use crate::{CmdResult, Rejected, files, unix_now};

/// Arguments of the agent commands.
#[derive(Args, Clone)]
pub struct AgentArgs {
    /// The node kubeconfig: checked first (valid credentials mean nothing to do), written after
    /// bootstrap.
    #[arg(long)]
    kubeconfig: PathBuf,
    /// The bootstrap kubeconfig (server, CA, bootstrap token): bootstrap, and the fallback when
    /// the current certificate has expired.
    #[arg(long)]
    bootstrap_kubeconfig: Option<PathBuf>,
    #[command(flatten)]
    node: NodeArgs,
    /// How long a bootstrap waits for approval and issuance (e.g. 1h, 15m).
    #[arg(long, default_value = "1h")]
    wait: String,
    /// How long a rotation or serving request waits.
    #[arg(long, default_value = "15m")]
    rotation_wait: String,
    /// spec.expirationSeconds to request (≥ 600).
    #[arg(long)]
    expiration_seconds: Option<u32>,
    /// Poll CSRs instead of watching them.
    #[arg(long)]
    poll: bool,
    /// Also request and keep a kubelet serving certificate (signer kubernetes.io/kubelet-serving,
    /// kubelet-server-*.pem; approve it with `kubectl certificate approve`).
    #[arg(long)]
    serving: bool,
    /// Serving certificate DNS name (repeatable).
    #[arg(long, requires = "serving")]
    dns: Vec<String>,
    /// Serving certificate IP address (repeatable; v1.31+ needs one).
    #[arg(long, requires = "serving")]
    ip: Vec<String>,
    /// Rotate the client certificate now, whatever its deadline.
    #[arg(long)]
    rotate_now: bool,
    /// Rotate the serving certificate now.
    #[arg(long, requires = "serving")]
    rotate_now_serving: bool,
    /// kubeadm-style discovery: the apiserver endpoint (writes --bootstrap-kubeconfig).
    #[arg(long, requires_all = ["discovery_token", "bootstrap_kubeconfig"])]
    discovery_endpoint: Option<String>,
    /// Discovery: the bootstrap token.
    #[arg(long, requires = "discovery_endpoint")]
    discovery_token: Option<String>,
    /// Discovery: `sha256:<hex>` pin of the cluster CA (repeatable).
    #[arg(long, requires = "discovery_endpoint")]
    discovery_token_ca_cert_hash: Vec<String>,
    /// Discovery: trust the token-signed CA without a pin.
    #[arg(long, requires = "discovery_endpoint")]
    discovery_token_unsafe_skip_ca_verification: bool,
    /// Serve the kubelet's certificate metrics (`kubelet_certificate_manager_client_ttl_seconds`,
    /// ...) at http://IP:PORT/metrics, e.g. 127.0.0.1:10255.
    #[arg(long, value_name = "IP:PORT")]
    metrics_bind_address: Option<String>,
    /// Also write them for node_exporter's textfile collector (a `.prom` file in its
    /// `--collector.textfile.directory`; rewritten atomically, at least every minute).
    #[arg(long, value_name = "FILE")]
    metrics_textfile: Option<PathBuf>,
    /// How the agent's lines are written: `text` (`agent=rust step=... key=value`) or `json`
    /// (one JSON object per line, the same keys).
    #[arg(long, value_enum, default_value = "text")]
    log_format: LogFormatArg,
    /// Make every new client key in a device it never leaves: `tpm:` (the blobs go into the cert
    /// dir) or `pkcs11:token=T?module-path=M&pin-source=F` (each key an object of its own). The
    /// cert dir and the node kubeconfig then hold the key's reference, never the key.
    #[arg(long, value_name = "DEVICE")]
    key: Option<String>,
    /// The TPM's TCTI, as tpm2-tools takes it (default: TPM2TOOLS_TCTI, then
    /// device:/dev/tpmrm0).
    #[arg(long)]
    tcti: Option<String>,
    /// `run`: how often to re-read the cluster's CA (kube-public/cluster-info and the
    /// ClusterTrustBundles of kubernetes.io/kube-apiserver-serving) and keep <cert-dir>/ca.crt,
    /// which the node kubeconfig names, current; a new bundle is written only once the apiserver
    /// proves it. `0` never.
    #[arg(long, default_value = "10m")]
    ca_refresh_interval: String,
}

/// `--log-format`.
#[derive(clap::ValueEnum, Clone, Copy)]
pub enum LogFormatArg {
    /// `agent=rust step=... key=value`.
    Text,
    /// One JSON object per line.
    Json,
}

/// Where the node's credentials are and whose they are (the agent commands and `status`).
#[derive(Args, Clone)]
pub struct NodeArgs {
    /// The certificate directory.
    #[arg(long, default_value = "/var/lib/kubelet/pki")]
    pub cert_dir: PathBuf,
    /// The node name (default: the current client certificate's).
    #[arg(long)]
    pub node_name: Option<String>,
    /// CA bundle issued certificates must chain to (default: the kubeconfig's CA).
    #[arg(long)]
    pub ca_bundle: Option<PathBuf>,
}

impl NodeArgs {
    /// Set the configuration's node name, cert dir and CA bundle (paths must be UTF-8).
    pub fn configure<'a>(&'a self, c: &mut Config<'a>) -> Result<(), Rejected> {
        c.cert_dir = text(&self.cert_dir)?;
        c.node_name = self.node_name.as_deref();
        c.ca_bundle = self.ca_bundle.as_deref().map(text).transpose()?;
        Ok(())
    }
}

impl AgentArgs {
    /// `kubeboot rotate --force`.
    pub fn force_rotation(&mut self, force: bool) {
        self.rotate_now |= force;
    }
}

/// What to run.
pub enum Run {
    /// `bootstrap` / `rotate`: until the credentials are usable.
    Once,
    /// `run`: forever, or for this many rotations.
    Daemon(Option<u32>),
}

fn secs(s: &str) -> Result<i64, Rejected> {
    match crate::cmd_token::parse_duration(s)? {
        n if n > 0 => Ok(n),
        _ => Err(Rejected(format!("{s}: the wait must be positive"))),
    }
}

pub fn text(p: &std::path::Path) -> Result<&str, Rejected> {
    p.to_str().ok_or_else(|| Rejected(format!("{}: not UTF-8", p.display())))
}

/// The local UTC offset in seconds (data files are named by local time, as the kubelet's).
fn utc_offset(unix: i64) -> i32 {
    let t: libc::time_t = unix as libc::time_t;
    // SAFETY: `tm` is a plain C struct, fully written by localtime_r on success; both pointers
    // are valid for the call.
    unsafe {
        let mut tm: libc::tm = std::mem::zeroed();
        if libc::localtime_r(&t, &mut tm).is_null() {
            return 0;
        }
        tm.tm_gmtoff as i32
    }
}

/// `--ip` values.
pub fn parse_ips(ips: &[String]) -> Result<Vec<IpAddr>, Rejected> {
    ips.iter()
        .map(|s| kubeboot::csr::parse_ip(s).map_err(|e| Rejected(format!("--ip {s}: {e}"))))
        .collect()
}

/// Run the agent with these arguments.
pub fn run(a: &AgentArgs, how: Run) -> CmdResult {
    let cwd = std::env::current_dir()?;
    let dns: Vec<&str> = a.dns.iter().map(String::as_str).collect();
    let ips = parse_ips(&a.ip)?;
    let token = a.discovery_token.as_deref().map(BootstrapToken::parse).transpose()?;
    let pins = a
        .discovery_token_ca_cert_hash
        .iter()
        .map(|p| CaPin::parse(p).map_err(|e| Rejected(format!("{p}: {e}"))))
        .collect::<Result<Vec<_>, _>>()?;
    let bootstrap = a.bootstrap_kubeconfig.as_deref().map(text).transpose()?;
    let device = match a.key.as_deref() {
        Some(k) => crate::devkey::KeyArg::parse(k)?.device()?,
        None => None,
    };
    let mut c = Config::new("rust", text(&cwd)?, text(&a.kubeconfig)?, "");
    a.node.configure(&mut c)?;
    c.bootstrap_kubeconfig = bootstrap;
    if let (Some(server), Some(token)) = (a.discovery_endpoint.as_deref(), token.as_ref()) {
        c.discovery = Some(DiscoveryConfig {
            server,
            token,
            pins: &pins,
            allow_unpinned: a.discovery_token_unsafe_skip_ca_verification,
            timeout_secs: kubeboot::discovery::DEFAULT_TIMEOUT_SECS,
        });
    }
    c.serving = a.serving.then_some(Serving { dns: &dns, ips: &ips });
    c.bootstrap_wait_secs = secs(&a.wait)?;
    c.rotation_wait_secs = secs(&a.rotation_wait)?;
    c.ca_refresh_secs = match crate::cmd_token::parse_duration(&a.ca_refresh_interval)? {
        n if n >= 0 => n,
        _ => return Err(Rejected("--ca-refresh-interval must not be negative".into())),
    };
    c.expiration_seconds = a.expiration_seconds;
    c.watch = !a.poll;
    c.mode = match how {
        Run::Once => Mode::Once,
        Run::Daemon(max_rotations) => Mode::Run { max_rotations },
    };
    c.rotate_now = RotateNow { client: a.rotate_now, serving: a.rotate_now_serving };
    let now = unix_now();
    c.utc_offset = utc_offset(now);
    let mut seed = [0u8; 8];
    files::os_entropy(&mut seed)?;
    c.seed = u64::from_le_bytes(seed);
    c.log_format = match a.log_format {
        LogFormatArg::Text => LogFormat::Text,
        LogFormatArg::Json => LogFormat::Json,
    };
    c.verifier = &kubeboot::backend::ring::Ring;
    c.key_device = device.as_deref();
    let mut out = MetricsOut::start(a.metrics_bind_address.as_deref(), a.metrics_textfile.clone())?;
    let mut memory = vec![0u8; Capacities::HOST.memory_len()];
    let mut agent = Agent::new(&mut memory, &Capacities::HOST)?;
    // (the typed reason first, as the C and Go agents print it)
    agent.start(&c).map_err(|e| Rejected(format!("{}: {e}", e.name())))?;
    let r = drive(&mut agent, &mut out, crate::devkey::devices(a.tcti.as_deref()));
    out.update(agent.metrics(), unix_now());
    r
}

/// Print a line; on a terminal a progress update replaces the `rows` the line before took.
fn print_line(line: &str, update: bool, rows: &mut usize) {
    // SAFETY: a plain C struct that TIOCGWINSZ fills; fd 1 stays open for the call.
    let cols = unsafe {
        let mut ws: libc::winsize = std::mem::zeroed();
        if libc::ioctl(1, libc::TIOCGWINSZ, &mut ws) == 0 { usize::from(ws.ws_col) } else { 0 }
    };
    // A closed stdout (a pipe's reader gone, a hung-up terminal) does not stop the agent.
    use std::io::Write;
    let mut out = std::io::stdout().lock();
    if cols > 0 && update && *rows > 0 {
        let _ = write!(out, "\x1b[{rows}F\x1b[J");
    }
    let _ = writeln!(out, "{line}");
    *rows = if cols > 0 { line.chars().count().div_ceil(cols).max(1) } else { 0 };
}

/// The I/O loop.
pub(crate) fn drive(
    agent: &mut Agent<'_>,
    out: &mut MetricsOut,
    devices: kubeboot_hwkey::Devices,
) -> CmdResult {
    let (files, mut rows) = (FileSteps::new(), 0);
    let mut http = Http::default();
    http.devices = devices.clone();
    let mut notify = service::Notifier::from_env();
    service::handle_signals();
    loop {
        let now = unix_now();
        agent.set_utc_offset(utc_offset(now));
        if service::take_hangup() {
            agent.wake();
        }
        out.update(agent.metrics(), now);
        let action = agent.poll(now);
        if service::stopping() && matches!(action, Action::Sleep { .. } | Action::Http(_)) {
            notify.stopping();
            return Ok(());
        }
        match action {
            Action::Read(_) | Action::File(_) => {
                if let Some(Err(e)) = files.perform(agent, now) {
                    // The agent decides what it means; the OS's words are for the operator.
                    eprintln!("kubeboot: {e}");
                }
            }
            Action::Key(_) => {
                if let Some(e) = devices.perform(agent, now) {
                    // The agent decides what it means; the device's words are for the operator.
                    eprintln!("kubeboot: {e}");
                }
            }
            Action::Entropy { len } => {
                let mut bytes = Zeroizing::new(vec![0u8; len]);
                files::os_entropy(&mut bytes)?;
                agent.on_entropy(&bytes);
            }
            Action::Http(req) => {
                // The request and its answer (a watch's whole stream) write nothing: a stop
                // signal meanwhile ends the process at once.
                service::in_http(true);
                if service::stopping() {
                    notify.stopping();
                    return Ok(());
                }
                let exchange = http.send(&req, now);
                exchange.feed(agent);
                service::in_http(false);
            }
            Action::Sleep { until } => {
                // In short steps, to notice a signal.
                let end = now + (until - now).clamp(1, out.max_sleep_secs());
                while unix_now() < end && !service::stopping() && !service::hangup_pending() {
                    std::thread::sleep(Duration::from_millis(250));
                }
            }
            Action::Event(e) => {
                print_line(e.line, e.update, &mut rows);
                notify.event(e.line, e.ready);
            }
            Action::Done(_) => return Ok(()),
            Action::Failed(f) => {
                print_line(f.line, false, &mut rows);
                notify.event(f.line, false);
                return Err(Rejected(format!("{}: {}", f.error, f.detail)));
            }
            _ => return Err(Rejected("unknown agent action".into())),
        }
    }
}
