//! `kubeboot discover`: kubeadm-style token discovery (cluster-info JWS + CA pin).

use std::path::PathBuf;

use clap::Args;
use kubeboot::agent::{Agent, Capacities, Config, DiscoveryConfig, Mode};
use kubeboot::pin::CaPin;
use kubeboot::token::BootstrapToken;

use crate::cmd_bootstrap::text;
use crate::metrics_out::MetricsOut;
use crate::{CmdResult, Rejected, files};

/// Arguments of `kubeboot discover`.
#[derive(Args)]
pub struct DiscoverArgs {
    /// The API server, `https://HOST:PORT`.
    #[arg(long)]
    server: String,
    /// The bootstrap token (`id.secret`); its secret verifies the cluster-info signature.
    #[arg(long)]
    token: String,
    /// `sha256:<hex>` pin of the cluster CA's public key (repeatable).
    #[arg(long = "ca-cert-hash", required_unless_present = "unsafe_skip_ca_verification")]
    ca_cert_hash: Vec<String>,
    /// Trust the CA in cluster-info without a pin (authenticated by the token's JWS only).
    #[arg(long)]
    unsafe_skip_ca_verification: bool,
    /// Give up after this long.
    #[arg(long, default_value = "5m")]
    timeout: String,
    /// Where to write the bootstrap kubeconfig (mode 0600).
    #[arg(long)]
    out: PathBuf,
}

/// Run `kubeboot discover`: the core's agent in its discovery mode (the same decisions and
/// lines as discovery before a bootstrap), driven by the CLI's I/O loop.
pub fn run(a: DiscoverArgs) -> CmdResult {
    let token = BootstrapToken::parse(&a.token)?;
    let pins = a
        .ca_cert_hash
        .iter()
        .map(|p| CaPin::parse(p).map_err(|e| Rejected(format!("--ca-cert-hash {p:?}: {e}"))))
        .collect::<Result<Vec<_>, _>>()?;
    let cwd = std::env::current_dir()?;
    let cwd = text(&cwd)?;
    let out = text(&a.out)?;
    // (no node kubeconfig or cert dir is read or written in this mode)
    let mut c = Config::new("rust", cwd, out, cwd);
    c.bootstrap_kubeconfig = Some(out);
    c.discovery = Some(DiscoveryConfig {
        server: &a.server,
        token: &token,
        pins: &pins,
        allow_unpinned: a.unsafe_skip_ca_verification && pins.is_empty(),
        timeout_secs: crate::cmd_token::parse_duration(&a.timeout)?,
    });
    c.mode = Mode::Discover;
    let mut seed = [0u8; 8];
    files::os_entropy(&mut seed)?;
    c.seed = u64::from_le_bytes(seed);
    c.verifier = &kubeboot::backend::ring::Ring;
    let mut memory = vec![0u8; Capacities::HOST.memory_len()];
    let mut agent = Agent::new(&mut memory, &Capacities::HOST)?;
    agent.start(&c).map_err(|e| Rejected(format!("{}: {e}", e.name())))?;
    let mut out = MetricsOut::start(None, None)?;
    crate::cmd_bootstrap::drive(&mut agent, &mut out, kubeboot_hwkey::Devices::default())
}
