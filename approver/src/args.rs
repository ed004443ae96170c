//! The approver's flags, and the settings they make: every value a user types is read by the
//! core's grammar ([`kubeboot::grammar`]: durations, the listening address, DNS patterns, key
//! policies), and a value it refuses is its one line (`--node-wait "5x": invalid-duration: ...`).

use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

use kubeboot::grammar;
use kubeboot::policy::serving::ServingPolicy;

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
    #[arg(long, value_name = "LIST", default_value = "ecdsa-p256,ecdsa-p384,rsa-2048")]
    pub allowed_key_types: String,

    /// The longest `expirationSeconds` approved, a duration of at least 10m (a CSR without
    /// `expirationSeconds` gets the signer's own duration).
    #[arg(long, value_name = "DURATION", default_value = "8760h")]
    pub max_expiration: String,

    /// Leave a CSR that would be denied pending for a person to decide (with an Event and a log
    /// line giving the reason), instead of denying it.
    #[arg(long)]
    pub skip_deny_step: bool,

    /// Judge, log and count every CSR, but change nothing in the cluster (no approval, denial or
    /// Event).
    #[arg(long)]
    pub dry_run: bool,

    /// How long a CSR whose Node does not exist yet is retried (with backoff) before it is left
    /// pending with reason policy-node-not-found (a duration: 90s, 5m, ...).
    #[arg(long, value_name = "DURATION", default_value = "5m")]
    pub node_wait: String,

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

    /// How long a Lease holds after its last renewal (a duration, whole seconds).
    #[arg(long, value_name = "DURATION", default_value = "15s")]
    pub leader_elect_lease_duration: String,

    /// The holder renews this long before its Lease runs out (and stops deciding if it cannot).
    #[arg(long, value_name = "DURATION", default_value = "5s")]
    pub leader_elect_renew_grace: String,

    /// This replica's identity in the Lease (default: $POD_NAME, else <hostname>_<pid>).
    #[arg(long, value_name = "ID")]
    pub leader_elect_identity: Option<String>,

    /// Attested joins (docs/attestation.md): the device CAs (PEM) that certify the TPMs'
    /// attestation keys. With --enrolment, bootstrap client CSRs (signer
    /// kubernetes.io/kube-apiserver-client-kubelet, requested by system:bootstrap:<id>) are
    /// approved only with an attestation the core accepts, and denied otherwise; turn off
    /// kube-controller-manager's auto-approval for bootstrappers in that cluster.
    #[arg(long, value_name = "FILE", requires = "enrolment")]
    pub attestation_ca: Option<PathBuf>,

    /// The operator's allowlist of devices for attested joins: `<serial number> <node name>` a
    /// line, `#` comments; one device, one name. Read at every decision.
    #[arg(long, value_name = "FILE", requires = "attestation_ca")]
    pub enrolment: Option<PathBuf>,

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
    /// `--node-wait`.
    pub node_wait: Duration,
    /// `--leader-elect-lease-duration`, in seconds.
    pub lease_duration: u64,
    /// `--leader-elect-renew-grace`, in seconds.
    pub renew_grace: u64,
    /// `--metrics-bind-address`, if any.
    pub bind: Option<SocketAddr>,
    /// `--attestation-ca` and `--enrolment`, if given.
    pub attestation: Option<crate::attested::Attestation>,
}

/// A flag value that cannot be used: its one line, `<flag> "<value>": <reason>`.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct BadFlag(String);

impl BadFlag {
    /// A whole line.
    pub(crate) fn line(line: String) -> Self {
        BadFlag(line)
    }

    /// A value the core's grammar refused with `e`: [`grammar::write_refusal`]'s line.
    fn refused(flag: &str, value: &str, e: kubeboot::Error) -> Self {
        let mut line = String::new();
        let _ = grammar::write_refusal(&mut line, flag, value, e);
        BadFlag(line)
    }
}

/// `value` of `flag` read by `rule` of the core's grammar.
fn read<'v, T>(
    flag: &str,
    value: &'v str,
    rule: impl FnOnce(&'v str) -> kubeboot::Result<T>,
) -> Result<T, BadFlag> {
    rule(value).map_err(|e| BadFlag::refused(flag, value, e))
}

/// A duration flag in whole seconds, at least one.
fn positive(flag: &str, value: &str) -> Result<u64, BadFlag> {
    match read(flag, value, grammar::duration)? {
        0 => Err(BadFlag(format!("{flag} {value:?}: must be longer than 0"))),
        n => Ok(n.unsigned_abs()),
    }
}

impl Args {
    /// Check the flags and make the settings (the patterns live as long as the process).
    pub fn settings(&self) -> Result<Settings, BadFlag> {
        let mut patterns = Vec::with_capacity(self.dns_patterns.len());
        for p in &self.dns_patterns {
            let text: &'static str = Box::leak(p.clone().into_boxed_str());
            patterns.push(read("--dns-pattern", text, grammar::dns_pattern)?);
        }
        let keys = read("--allowed-key-types", &self.allowed_key_types, grammar::key_policy)?;
        let max_expiration =
            read("--max-expiration", &self.max_expiration, grammar::max_expiration)?;
        let node_wait = read("--node-wait", &self.node_wait, grammar::duration)?.unsigned_abs();
        let lease_duration =
            positive("--leader-elect-lease-duration", &self.leader_elect_lease_duration)?;
        let renew_grace = positive("--leader-elect-renew-grace", &self.leader_elect_renew_grace)?;
        if renew_grace >= lease_duration {
            let (flag, v) = ("--leader-elect-renew-grace", &self.leader_elect_renew_grace);
            return Err(BadFlag(format!(
                "{flag} {v:?}: must be shorter than --leader-elect-lease-duration ({}s)",
                lease_duration
            )));
        }
        if self.concurrency == 0 {
            return Err(BadFlag("--concurrency \"0\": at least 1".to_owned()));
        }
        let bind = match self.metrics_bind_address.as_str() {
            "" => None,
            a => Some(read("--metrics-bind-address", a, grammar::bind_address)?),
        };
        Ok(Settings {
            policy: ServingPolicy {
                max_expiration_seconds: max_expiration,
                keys,
                dns_patterns: Vec::leak(patterns),
            },
            skip_deny: self.skip_deny_step,
            dry_run: self.dry_run,
            node_wait: Duration::from_secs(node_wait),
            lease_duration,
            renew_grace,
            bind,
            attestation: match (&self.attestation_ca, &self.enrolment) {
                (Some(ca), Some(list)) => Some(crate::attested::Attestation::read(ca, list)?),
                _ => None,
            },
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
    use kubeboot::policy::serving::{DEFAULT_MAX_EXPIRATION_SECONDS, KeyPolicy};

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
        assert_eq!(
            (s.node_wait, s.lease_duration, s.renew_grace),
            (Duration::from_secs(300), 15, 5)
        );
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
            "--max-expiration",
            "1h",
            "--node-wait",
            "1m30s",
            "--metrics-bind-address",
            "",
        ])
        .unwrap();
        assert_eq!(s.policy.dns_patterns.len(), 2);
        assert!(s.policy.dns_patterns[0].matches("n1", "n1.nodes.example"));
        assert_eq!(s.policy.keys.to_string(), "ecdsa-p256");
        assert_eq!(s.policy.max_expiration_seconds, 3600);
        assert_eq!(s.node_wait, Duration::from_secs(90));
        assert_eq!(s.bind, None);
    }

    #[test]
    fn bad_flags_name_the_flag_and_the_cores_reason() {
        let e = parse(&["--dns-pattern", "example.com"]).unwrap_err();
        assert!(e.starts_with("--dns-pattern \"example.com\": invalid-dns-pattern: "), "{e}");
        let e = parse(&["--allowed-key-types", "rsa-512"]).unwrap_err();
        assert!(e.starts_with("--allowed-key-types \"rsa-512\": invalid-key-policy: "), "{e}");
        let e = parse(&["--max-expiration", "599s"]).unwrap_err();
        assert!(e.starts_with("--max-expiration \"599s\": invalid-expiration-seconds"), "{e}");
        let e = parse(&["--max-expiration", "3600"]).unwrap_err();
        assert!(e.contains("invalid-duration"), "{e}");
        let e = parse(&["--node-wait", "5x"]).unwrap_err();
        assert!(e.starts_with("--node-wait \"5x\": invalid-duration: "), "{e}");
        let e = parse(&["--metrics-bind-address", "localhost:80"]).unwrap_err();
        assert!(e.contains("invalid-address"), "{e}");
        assert!(parse(&["--leader-elect-renew-grace", "15s"]).is_err());
        assert!(parse(&["--leader-elect-lease-duration", "0"]).is_err());
        assert!(parse(&["--concurrency", "0"]).is_err());
        assert!(parse(&["--log-format", "xml"]).is_err());
    }
}
