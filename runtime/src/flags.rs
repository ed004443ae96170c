//! The agent's command-line flags for a Rust program (feature `flags`, with clap), as the Go
//! runtime's `agentrun.Flags` is for Go: the `kubeboot` CLI's, or an embedding program's. Every
//! value users type is read by the core's grammar ([`kubeboot::grammar`]); a refused one is
//! [`Refused::Usage`] with the grammar's line (the same line, and exit status 2, from every
//! front-end).

use std::net::IpAddr;
use std::path::PathBuf;

use clap::Args;
use kubeboot::agent::{LogFormat, Mode, RotateNow};
use kubeboot::grammar;
use kubeboot::pin::CaPin;
use kubeboot::token::BootstrapToken;

use crate::{Discovery, Options, Settings};

/// Why flags were refused.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Refused {
    /// A value the grammar refused (`kubeboot::grammar::write_refusal`'s line: exit status 2).
    Usage(String),
    /// Another value that cannot be used, without repeating it (a bootstrap token is a secret).
    Invalid(String),
}

impl std::fmt::Display for Refused {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Refused::Usage(line) | Refused::Invalid(line) => f.write_str(line),
        }
    }
}

impl std::error::Error for Refused {}

impl Refused {
    /// `value` of `flag`, refused by the grammar with `e`.
    pub fn refusal(flag: &str, value: &str, e: kubeboot::Error) -> Refused {
        let mut line = String::new();
        let _ = grammar::write_refusal(&mut line, flag, value, e);
        Refused::Usage(line)
    }
}

/// The agent's flags (`kubeboot bootstrap`, `rotate`, `run`).
#[derive(Args, Clone)]
pub struct AgentFlags {
    /// The node kubeconfig: checked first (valid credentials mean nothing to do), written after
    /// bootstrap.
    #[arg(long)]
    pub kubeconfig: PathBuf,
    /// The bootstrap kubeconfig (server, CA, bootstrap token): bootstrap, and the fallback when
    /// the current certificate has expired.
    #[arg(long)]
    pub bootstrap_kubeconfig: Option<PathBuf>,
    /// Where the node's credentials are and whose they are.
    #[command(flatten)]
    pub node: NodeFlags,
    /// How long a bootstrap waits for approval and issuance (e.g. 1h, 15m).
    #[arg(long, default_value = "1h")]
    pub wait: String,
    /// How long a rotation or serving request waits.
    #[arg(long, default_value = "15m")]
    pub rotation_wait: String,
    /// spec.expirationSeconds to request (≥ 600).
    #[arg(long)]
    pub expiration_seconds: Option<u32>,
    /// Poll CSRs instead of watching them.
    #[arg(long)]
    pub poll: bool,
    /// Also request and keep a kubelet serving certificate (signer kubernetes.io/kubelet-serving,
    /// kubelet-server-*.pem; approve it with `kubectl certificate approve`).
    #[arg(long)]
    pub serving: bool,
    /// Serving certificate DNS name (repeatable).
    #[arg(long, requires = "serving")]
    pub dns: Vec<String>,
    /// Serving certificate IP address (repeatable; v1.31+ needs one).
    #[arg(long, requires = "serving")]
    pub ip: Vec<String>,
    /// Rotate the client certificate now, whatever its deadline.
    #[arg(long)]
    pub rotate_now: bool,
    /// Rotate the serving certificate now.
    #[arg(long, requires = "serving")]
    pub rotate_now_serving: bool,
    /// kubeadm-style discovery: the apiserver endpoint (writes --bootstrap-kubeconfig).
    #[arg(long, requires_all = ["discovery_token", "bootstrap_kubeconfig"])]
    pub discovery_endpoint: Option<String>,
    /// Discovery: the bootstrap token.
    #[arg(long, requires = "discovery_endpoint")]
    pub discovery_token: Option<String>,
    /// Discovery: `sha256:<hex>` pin of the cluster CA (repeatable).
    #[arg(long, requires = "discovery_endpoint")]
    pub discovery_token_ca_cert_hash: Vec<String>,
    /// Discovery: trust the token-signed CA without a pin.
    #[arg(long, requires = "discovery_endpoint")]
    pub discovery_token_unsafe_skip_ca_verification: bool,
    /// Serve the kubelet's certificate metrics (`kubelet_certificate_manager_client_ttl_seconds`,
    /// ...) at http://IP:PORT/metrics, e.g. 127.0.0.1:10255.
    #[arg(long, value_name = "IP:PORT")]
    pub metrics_bind_address: Option<String>,
    /// Also write them for node_exporter's textfile collector (a `.prom` file in its
    /// `--collector.textfile.directory`; rewritten atomically, at least every minute).
    #[arg(long, value_name = "FILE")]
    pub metrics_textfile: Option<PathBuf>,
    /// How the agent's lines are written: `text` (`agent=rust step=... key=value`) or `json`
    /// (one JSON object per line, the same keys).
    #[arg(long, value_enum, default_value = "text")]
    pub log_format: LogFormatArg,
    /// Make every new client key in a device it never leaves: `tpm:` (the blobs go into the cert
    /// dir) or `pkcs11:token=T?module-path=M&pin-source=F` (each key an object of its own). The
    /// cert dir and the node kubeconfig then hold the key's reference, never the key.
    #[arg(long, value_name = "DEVICE")]
    pub key: Option<String>,
    /// Attest the bootstrap (with `--key tpm:`): the bootstrap CSR carries a TPM2_Certify of the
    /// node key by the TPM's attestation key, bound to this CSR, and this chain (the attestation
    /// key's certificate, as `kubeboot device provision` wrote it), for an approver that checks
    /// them (`kubeboot approver --attestation-ca`).
    #[arg(long, value_name = "FILE")]
    pub attestation: Option<PathBuf>,
    /// The TPM's TCTI, as tpm2-tools takes it (default: TPM2TOOLS_TCTI, then
    /// device:/dev/tpmrm0).
    #[arg(long)]
    pub tcti: Option<String>,
    /// `run`: how often to re-read the cluster's CA (kube-public/cluster-info and the
    /// ClusterTrustBundles of kubernetes.io/kube-apiserver-serving) and keep <cert-dir>/ca.crt,
    /// which the node kubeconfig names, current; a new bundle is written only once the apiserver
    /// proves it. `0` never.
    #[arg(long, default_value = "10m")]
    pub ca_refresh_interval: String,
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
pub struct NodeFlags {
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

impl AgentFlags {
    /// The agent's settings, as front-end `front_end` (`agent=` of every line), run as `mode`.
    pub fn settings(&self, front_end: &str, mode: Mode) -> Result<Settings, Refused> {
        let mut s = Settings::new(front_end, &self.kubeconfig, &self.node.cert_dir);
        s.node_name.clone_from(&self.node.node_name);
        s.ca_bundle.clone_from(&self.node.ca_bundle);
        s.bootstrap_kubeconfig.clone_from(&self.bootstrap_kubeconfig);
        if let (Some(server), Some(token)) = (&self.discovery_endpoint, &self.discovery_token) {
            s.discovery = Some(Discovery {
                server: server.clone(),
                // (the token is a secret: its error does not repeat it)
                token: BootstrapToken::parse(token)
                    .map_err(|e| Refused::Invalid(format!("--discovery-token: {e}")))?,
                pins: pins("--discovery-token-ca-cert-hash", &self.discovery_token_ca_cert_hash)?,
                allow_unpinned: self.discovery_token_unsafe_skip_ca_verification,
                timeout_secs: kubeboot::discovery::DEFAULT_TIMEOUT_SECS,
            });
        }
        if self.serving {
            s.serving = Some((self.dns.clone(), ips(&self.ip)?));
        }
        s.bootstrap_wait_secs = duration("--wait", &self.wait)?;
        s.rotation_wait_secs = duration("--rotation-wait", &self.rotation_wait)?;
        s.ca_refresh_secs = duration("--ca-refresh-interval", &self.ca_refresh_interval)?;
        s.expiration_seconds = self.expiration_seconds;
        s.watch = !self.poll;
        s.mode = mode;
        s.rotate_now = RotateNow { client: self.rotate_now, serving: self.rotate_now_serving };
        s.log_format = match self.log_format {
            LogFormatArg::Text => LogFormat::Text,
            LogFormatArg::Json => LogFormat::Json,
        };
        if let Some(k) = &self.key {
            let device = grammar::key_device(k).map_err(|e| Refused::refusal("--key", k, e))?;
            s.key_device = Some(device.into());
        }
        s.attestation.clone_from(&self.attestation);
        Ok(s)
    }

    /// `options` with the flags' metrics endpoint and textfile and TPM TCTI.
    pub fn options(&self, mut options: Options) -> Result<Options, Refused> {
        if let Some(v) = &self.metrics_bind_address {
            let addr = grammar::bind_address(v);
            options.metrics_bind_address =
                Some(addr.map_err(|e| Refused::refusal("--metrics-bind-address", v, e))?);
        }
        options.metrics_textfile.clone_from(&self.metrics_textfile);
        options.tcti.clone_from(&self.tcti);
        Ok(options)
    }
}

/// `--ip` values.
pub fn ips(ips: &[String]) -> Result<Vec<IpAddr>, Refused> {
    ips.iter().map(|s| grammar::ip(s).map_err(|e| Refused::refusal("--ip", s, e))).collect()
}

/// A duration flag's value, in seconds.
pub fn duration(flag: &str, value: &str) -> Result<i64, Refused> {
    grammar::duration(value).map_err(|e| Refused::refusal(flag, value, e))
}

/// `sha256:` CA pins (`--discovery-token-ca-cert-hash`, `--ca-cert-hash`).
pub fn pins(flag: &str, hashes: &[String]) -> Result<Vec<CaPin>, Refused> {
    let pin =
        |p: &String| CaPin::parse(p).map_err(|e| Refused::Invalid(format!("{flag} {p:?}: {e}")));
    hashes.iter().map(pin).collect()
}
