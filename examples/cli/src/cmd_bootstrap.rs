//! `kubeboot bootstrap`, `kubeboot rotate`, `kubeboot run`: flags in, the runtime started
//! (`kubeboot-runtime`: every daemon habit, over the core's agent: every decision), exit status
//! out. Flag values go through the core's grammar (`kubeboot::grammar`).

use std::net::IpAddr;
use std::path::PathBuf;

use clap::Args;
use kubeboot::agent::{LogFormat, Mode, RotateNow};
use kubeboot::grammar;
use kubeboot::pin::CaPin;
use kubeboot::token::BootstrapToken;
use kubeboot_runtime::{Discovery, Options, Runtime, Settings};

use crate::{CmdResult, Rejected};

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
    pub fn configure<'a>(&'a self, c: &mut kubeboot::agent::Config<'a>) -> Result<(), Rejected> {
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

/// A path as the core takes it.
pub fn text(p: &std::path::Path) -> Result<&str, Rejected> {
    p.to_str().ok_or_else(|| Rejected::from(format!("{}: not UTF-8", p.display())))
}

/// `--ip` values.
pub fn parse_ips(ips: &[String]) -> Result<Vec<IpAddr>, Rejected> {
    ips.iter().map(|s| grammar::ip(s).map_err(|e| Rejected::refusal("--ip", s, e))).collect()
}

/// A duration flag.
pub fn duration(flag: &str, value: &str) -> Result<i64, Rejected> {
    grammar::duration(value).map_err(|e| Rejected::refusal(flag, value, e))
}

/// What a daemon does around the agent: print its lines, stop on SIGTERM/SIGINT, wake on
/// SIGHUP, tell systemd.
pub fn daemon_options() -> Options {
    Options { signals: true, print: true, credentials: false, ..Options::default() }
}

/// Run the agent with these arguments.
pub fn run(a: &AgentArgs, how: Run) -> CmdResult {
    let mut s = Settings::new("rust", &a.kubeconfig, &a.node.cert_dir);
    s.node_name.clone_from(&a.node.node_name);
    s.ca_bundle.clone_from(&a.node.ca_bundle);
    s.bootstrap_kubeconfig.clone_from(&a.bootstrap_kubeconfig);
    if let (Some(server), Some(token)) = (&a.discovery_endpoint, &a.discovery_token) {
        s.discovery = Some(Discovery {
            server: server.clone(),
            token: BootstrapToken::parse(token)?,
            pins: pins("--discovery-token-ca-cert-hash", &a.discovery_token_ca_cert_hash)?,
            allow_unpinned: a.discovery_token_unsafe_skip_ca_verification,
            timeout_secs: kubeboot::discovery::DEFAULT_TIMEOUT_SECS,
        });
    }
    if a.serving {
        s.serving = Some((a.dns.clone(), parse_ips(&a.ip)?));
    }
    s.bootstrap_wait_secs = duration("--wait", &a.wait)?;
    s.rotation_wait_secs = duration("--rotation-wait", &a.rotation_wait)?;
    s.ca_refresh_secs = duration("--ca-refresh-interval", &a.ca_refresh_interval)?;
    s.expiration_seconds = a.expiration_seconds;
    s.watch = !a.poll;
    s.mode = match how {
        Run::Once => Mode::Once,
        Run::Daemon(max_rotations) => Mode::Run { max_rotations },
    };
    s.rotate_now = RotateNow { client: a.rotate_now, serving: a.rotate_now_serving };
    s.log_format = match a.log_format {
        LogFormatArg::Text => LogFormat::Text,
        LogFormatArg::Json => LogFormat::Json,
    };
    if let Some(k) = &a.key {
        s.key_device =
            Some(grammar::key_device(k).map_err(|e| Rejected::refusal("--key", k, e))?.into());
    }
    let mut o = daemon_options();
    if let Some(v) = &a.metrics_bind_address {
        let addr = grammar::bind_address(v);
        o.metrics_bind_address =
            Some(addr.map_err(|e| Rejected::refusal("--metrics-bind-address", v, e))?);
    }
    o.metrics_textfile.clone_from(&a.metrics_textfile);
    o.tcti.clone_from(&a.tcti);
    Runtime::new(s, o).run_blocking()?;
    Ok(())
}

/// `--discovery-token-ca-cert-hash` / `--ca-cert-hash` values.
pub fn pins(flag: &str, hashes: &[String]) -> Result<Vec<CaPin>, Rejected> {
    let pin =
        |p: &String| CaPin::parse(p).map_err(|e| Rejected::from(format!("{flag} {p:?}: {e}")));
    hashes.iter().map(pin).collect()
}
