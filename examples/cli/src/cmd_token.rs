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

/// Parse a Go-style duration made of `<number><unit>` parts (`h`, `m`, `s`) into seconds.
pub fn parse_duration(s: &str) -> Result<i64, Rejected> {
    let bad = || Rejected(format!("invalid duration {s:?} (use e.g. 24h, 90m, 1h30m, 0)"));
    if s == "0" {
        return Ok(0);
    }
    let mut total: i64 = 0;
    let mut num = String::new();
    let mut saw_part = false;
    for c in s.chars() {
        if c.is_ascii_digit() {
            num.push(c);
            continue;
        }
        let unit = match c {
            'h' => 3600,
            'm' => 60,
            's' => 1,
            _ => return Err(bad()),
        };
        let n: i64 = num.parse().map_err(|_| bad())?;
        total = n.checked_mul(unit).and_then(|v| total.checked_add(v)).ok_or_else(bad)?;
        num.clear();
        saw_part = true;
    }
    if !num.is_empty() || !saw_part {
        return Err(bad());
    }
    Ok(total)
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
                        .map_err(|err| Rejected(format!("--expiration {e:?}: {err}")))?,
                ),
                None => match parse_duration(&ttl)? {
                    0 => None,
                    secs if secs < 0 => return Err(Rejected("--ttl must not be negative".into())),
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

#[cfg(test)]
mod tests {
    use super::parse_duration;

    #[test]
    fn durations() {
        assert_eq!(parse_duration("24h").unwrap(), 86400);
        assert_eq!(parse_duration("1h30m").unwrap(), 5400);
        assert_eq!(parse_duration("90s").unwrap(), 90);
        assert_eq!(parse_duration("0").unwrap(), 0);
        for bad in ["", "h", "10", "1d", "-1h", "1h-", "99999999999999999999h"] {
            assert!(parse_duration(bad).is_err(), "{bad}");
        }
    }
}
