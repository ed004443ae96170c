//! The approver's flags, and the settings they make (the operator's grammars are the core's:
//! [`DnsPattern`], [`KeyPolicy`]).

use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

use kubeboot::policy::serving::{
    DEFAULT_MAX_EXPIRATION_SECONDS, DnsPattern, KeyPolicy, ServingPolicy,
};

/// Approve `kubernetes.io/kubelet-serving` CSRs only for the addresses the node really has.
#[derive(clap::Args, Clone, Debug)]
pub struct Args {
    /// The kubeconfig to reach the apiserver with (default: $KUBECONFIG, ~/.kube/config, then
    /// the in-cluster service account).
    #[arg(long, value_name = "FILE")]
    pub kubeconfig: Option<PathBuf>,

    /// A DNS name a node may have beyond its Node's Hostname/InternalDNS/ExternalDNS addresses,
    /// with `{node}` for the node's name (once): `{node}.nodes.example.com`,
    /// `*.{node}.example.com`. Repeatable.
    #[arg(long = "dns-pattern", value_name = "PATTERN")]
    pub dns_patterns: Vec<String>,

    /// Key types and sizes approved: a list of ecdsa-p256, ecdsa-p384, rsa-<bits>.
    #[arg(long, value_name = "LIST", default_value_t = KeyPolicy::DEFAULT.to_string())]
    pub allowed_key_types: String,

    /// The longest `expirationSeconds` approved (absent: the signer's own duration).
    #[arg(long, value_name = "SECONDS", default_value_t = DEFAULT_MAX_EXPIRATION_SECONDS)]
    pub max_expiration_seconds: u32,

    /// Leave a CSR that would be denied pending for a person to decide (with an Event and a log
    /// line giving the reason), instead of denying it.
    #[arg(long)]
    pub skip_deny_step: bool,

    /// Judge, log and count every CSR, but change nothing in the cluster (no approval, denial or
    /// Event).
    #[arg(long)]
    pub dry_run: bool,

    /// How long a CSR whose Node does not exist yet is retried (with backoff) before it is left
    /// pending with reason policy-node-not-found.
    #[arg(long, value_name = "SECONDS", default_value_t = 300)]
    pub node_wait_seconds: u64,

    /// Decide only while holding a coordination.k8s.io Lease, so that of several replicas one
    /// decides at a time.
    #[arg(long)]
    pub leader_elect: bool,

    /// The Lease's namespace (default: $POD_NAMESPACE, else kube-system).
    #[arg(long, value_name = "NAMESPACE")]
    pub leader_elect_namespace: Option<String>,

    /// The Lease's name.
    #[arg(long, value_name = "NAME", default_value = "kubeboot-approver")]
    pub leader_elect_lease_name: String,

    /// How long a Lease holds after its last renewal.
    #[arg(long, value_name = "SECONDS", default_value_t = 15)]
    pub leader_elect_lease_duration: u64,

    /// The holder renews this long before its Lease runs out (and stops deciding if it cannot).
    #[arg(long, value_name = "SECONDS", default_value_t = 5)]
    pub leader_elect_renew_grace: u64,

    /// This replica's identity in the Lease (default: $POD_NAME, else <hostname>_<pid>).
    #[arg(long, value_name = "ID")]
    pub leader_elect_identity: Option<String>,

    /// Where /metrics, /healthz and /readyz are served (IP:PORT; empty: nowhere).
    #[arg(long, value_name = "IP:PORT", default_value = "127.0.0.1:8080")]
    pub metrics_bind_address: String,

    /// Log lines as text or one JSON object each.
    #[arg(long, value_enum, default_value_t = LogFormat::Text)]
    pub log_format: LogFormat,

    /// CSRs judged at the same time.
    #[arg(long, value_name = "N", default_value_t = 8)]
    pub concurrency: u16,
}

/// `--log-format`.
#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum LogFormat {
    /// `key=value` text.
    Text,
    /// One JSON object per line.
    Json,
}

/// The settings the flags make, checked.
#[derive(Clone, Debug)]
pub struct Settings {
    /// The core's rules.
    pub policy: ServingPolicy<'static>,
    /// `--skip-deny-step`.
    pub skip_deny: bool,
    /// `--dry-run`.
    pub dry_run: bool,
    /// `--node-wait-seconds`.
    pub node_wait: Duration,
    /// `--metrics-bind-address`, if any.
    pub bind: Option<SocketAddr>,
}

/// A flag value that cannot be used: the flag and why.
#[derive(Debug, thiserror::Error)]
#[error("{flag} {value:?}: {reason}")]
pub struct BadFlag {
    flag: &'static str,
    value: String,
    reason: String,
}

fn bad(flag: &'static str, value: &str, reason: impl ToString) -> BadFlag {
    BadFlag { flag, value: value.to_owned(), reason: reason.to_string() }
}

impl Args {
    /// Check the flags and make the settings (the patterns live as long as the process).
    pub fn settings(&self) -> Result<Settings, BadFlag> {
        let mut patterns = Vec::with_capacity(self.dns_patterns.len());
        for p in &self.dns_patterns {
            let text: &'static str = Box::leak(p.clone().into_boxed_str());
            patterns.push(DnsPattern::parse(text).map_err(|e| bad("--dns-pattern", p, e))?);
        }
        let keys = KeyPolicy::parse(&self.allowed_key_types)
            .map_err(|e| bad("--allowed-key-types", &self.allowed_key_types, e))?;
        if self.max_expiration_seconds < kubeboot::policy::MIN_EXPIRATION_SECONDS {
            let v = self.max_expiration_seconds.to_string();
            return Err(bad("--max-expiration-seconds", &v, "below the API's minimum of 600"));
        }
        if self.leader_elect && self.leader_elect_renew_grace >= self.leader_elect_lease_duration {
            let v = self.leader_elect_renew_grace.to_string();
            return Err(bad("--leader-elect-renew-grace", &v, "must be shorter than the lease"));
        }
        if self.concurrency == 0 {
            return Err(bad("--concurrency", "0", "at least 1"));
        }
        let bind = match self.metrics_bind_address.as_str() {
            "" => None,
            a => Some(a.parse().map_err(|e| bad("--metrics-bind-address", a, e))?),
        };
        Ok(Settings {
            policy: ServingPolicy {
                max_expiration_seconds: self.max_expiration_seconds,
                keys,
                dns_patterns: Vec::leak(patterns),
            },
            skip_deny: self.skip_deny_step,
            dry_run: self.dry_run,
            node_wait: Duration::from_secs(self.node_wait_seconds),
            bind,
        })
    }

    /// The Lease's namespace.
    pub fn lease_namespace(&self) -> String {
        self.leader_elect_namespace
            .clone()
            .or_else(|| std::env::var("POD_NAMESPACE").ok().filter(|s| !s.is_empty()))
            .unwrap_or_else(|| "kube-system".to_owned())
    }

    /// This replica's identity.
    pub fn identity(&self) -> String {
        self.leader_elect_identity
            .clone()
            .or_else(|| std::env::var("POD_NAME").ok().filter(|s| !s.is_empty()))
            .unwrap_or_else(|| {
                let host = std::fs::read_to_string("/proc/sys/kernel/hostname")
                    .map(|h| h.trim().to_owned())
                    .unwrap_or_else(|_| "approver".to_owned());
                format!("{host}_{}", std::process::id())
            })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    #[derive(Parser)]
    struct Cli {
        #[command(flatten)]
        args: Args,
    }

    fn parse(argv: &[&str]) -> Result<Settings, String> {
        let cli = Cli::try_parse_from(std::iter::once("approver").chain(argv.iter().copied()))
            .map_err(|e| e.to_string())?;
        cli.args.settings().map_err(|e| e.to_string())
    }

    #[test]
    fn defaults() {
        let s = parse(&[]).unwrap();
        assert_eq!(s.policy.keys, KeyPolicy::DEFAULT);
        assert_eq!(s.policy.max_expiration_seconds, DEFAULT_MAX_EXPIRATION_SECONDS);
        assert!(s.policy.dns_patterns.is_empty());
        assert!(!s.skip_deny && !s.dry_run);
        assert_eq!(s.bind, Some("127.0.0.1:8080".parse().unwrap()));
    }

    #[test]
    fn flags_in_the_cores_grammar() {
        let s = parse(&[
            "--dns-pattern",
            "{node}.nodes.example",
            "--dns-pattern",
            "*.{node}.svc",
            "--allowed-key-types",
            "ecdsa-p256",
            "--max-expiration-seconds",
            "3600",
            "--metrics-bind-address",
            "",
        ])
        .unwrap();
        assert_eq!(s.policy.dns_patterns.len(), 2);
        assert!(s.policy.dns_patterns[0].matches("n1", "n1.nodes.example"));
        assert_eq!(s.policy.keys.to_string(), "ecdsa-p256");
        assert_eq!(s.bind, None);
    }

    #[test]
    fn bad_flags_name_the_flag_and_the_cores_reason() {
        let e = parse(&["--dns-pattern", "example.com"]).unwrap_err();
        assert!(e.contains("--dns-pattern") && e.contains("{node}"), "{e}");
        let e = parse(&["--allowed-key-types", "rsa-512"]).unwrap_err();
        assert!(e.contains("--allowed-key-types"), "{e}");
        assert!(parse(&["--max-expiration-seconds", "599"]).is_err());
        assert!(parse(&["--metrics-bind-address", "localhost"]).is_err());
        assert!(parse(&["--leader-elect", "--leader-elect-renew-grace", "15"]).is_err());
        assert!(parse(&["--concurrency", "0"]).is_err());
        assert!(parse(&["--log-format", "xml"]).is_err());
    }
}
