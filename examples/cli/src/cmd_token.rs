//! `kubeboot token ...`

use std::io::Write;

use clap::Subcommand;
use kubeboot::rfc3339;
use kubeboot::token::{
    BootstrapToken, KUBEADM_DEFAULT_GROUP, SecretSpec, Usages, write_secret_manifest,
};

use crate::{CmdResult, Rejected, files, unix_now};

/// Token subcommands.
#[derive(Subcommand)]
pub enum TokenCommand {
    /// Print a fresh bootstrap token (`[a-z0-9]{6}.[a-z0-9]{16}`).
    Generate,
    /// Check a token's format; prints its Secret name `bootstrap-token-<id>`.
    Check {
        /// The token.
        token: String,
    },
    /// Print the bootstrap-token Secret manifest (YAML) for `kubectl apply -f -`.
    Secret {
        /// The token.
        token: String,
        /// Lifetime from now, Go duration syntax (`24h`, `90m`, `1h30m`); `0` never expires.
        #[arg(long, conflicts_with = "expiration", default_value = "24h")]
        ttl: String,
        /// Absolute expiration time (RFC 3339).
        #[arg(long)]
        expiration: Option<String>,
        /// Free-text description.
        #[arg(long)]
        description: Option<String>,
        /// Extra groups (`system:bootstrappers:...`), comma-separated; empty for none.
        #[arg(long, default_value = KUBEADM_DEFAULT_GROUP)]
        groups: String,
        /// Usages, comma-separated: authentication, signing.
        #[arg(long, default_value = "signing,authentication")]
        usages: String,
    },
}

/// Run a token subcommand.
pub fn run(cmd: TokenCommand) -> CmdResult {
    let mut out = std::io::stdout().lock();
    match cmd {
        TokenCommand::Generate => {
            let token = BootstrapToken::generate(|b| {
                // An OS RNG failure yields bytes the sampler rejects, so generation fails cleanly.
                if files::os_entropy(b).is_err() {
                    b.fill(0xff);
                }
            })?;
            writeln!(out, "{}", token.to_wire().as_str())?;
        }
        TokenCommand::Check { token } => {
            let token = BootstrapToken::parse(&token)?;
            writeln!(out, "{}", token.secret_name())?;
        }
        TokenCommand::Secret { token, ttl, expiration, description, groups, usages } => {
            let token = BootstrapToken::parse(&token)?;
            let expiration = match expiration {
                Some(e) => Some(
                    rfc3339::parse(&e)
                        .map_err(|err| Rejected::from(format!("--expiration {e:?}: {err}")))?,
                ),
                None => match kubeboot_runtime::flags::duration("--ttl", &ttl)
                    .map_err(crate::cmd_bootstrap::rejected)?
                {
                    0 => None,
                    secs if secs < 0 => return Err(Rejected::from("--ttl must not be negative")),
                    secs => Some(unix_now().saturating_add(secs)),
                },
            };
            let usages = Usages::parse_list(&usages)?;
            let extra: Vec<&str> =
                if groups.is_empty() { Vec::new() } else { groups.split(',').collect() };
            let spec = SecretSpec {
                token: &token,
                description: description.as_deref(),
                expiration,
                usages,
                extra_groups: &extra,
            };
            let mut buf = vec![0u8; 4096];
            let n = match write_secret_manifest(&spec, &mut buf) {
                Err(kubeboot::Error::BufferTooSmall { needed }) => {
                    buf.resize(needed, 0);
                    write_secret_manifest(&spec, &mut buf)?
                }
                other => other?,
            };
            out.write_all(&buf[..n])?;
        }
    }
    Ok(())
}
