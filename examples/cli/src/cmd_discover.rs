//! `kubeboot discover`: kubeadm-style token discovery (cluster-info JWS + CA pin), the core's
//! agent in its discovery mode run by the runtime.

use std::path::PathBuf;

use clap::Args;
use kubeboot::agent::Mode;
use kubeboot::token::BootstrapToken;
use kubeboot_runtime::{Discovery, Runtime, Settings};

use crate::CmdResult;
use kubeboot_runtime::flags::{duration, pins};

use crate::cmd_bootstrap::{daemon_options, rejected};

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

/// Run `kubeboot discover`: the same decisions and lines as discovery before a bootstrap.
pub fn run(a: DiscoverArgs) -> CmdResult {
    let pins = pins("--ca-cert-hash", &a.ca_cert_hash).map_err(rejected)?;
    // (no node kubeconfig or cert dir is read or written in this mode)
    let mut s = Settings::new("rust", &a.out, ".");
    s.bootstrap_kubeconfig = Some(a.out.clone());
    s.discovery = Some(Discovery {
        server: a.server.clone(),
        token: BootstrapToken::parse(&a.token)?,
        allow_unpinned: a.unsafe_skip_ca_verification && pins.is_empty(),
        pins,
        timeout_secs: duration("--timeout", &a.timeout).map_err(rejected)?,
    });
    s.mode = Mode::Discover;
    Runtime::new(s, daemon_options()).run_blocking()?;
    Ok(())
}
