//! `kubeboot` — the command-line face of the kubeboot library.
//!
//! Exit codes: 0 success / accepted, 1 input rejected (one-line reason on stderr),
//! 2 usage error (clap's own, or a flag value the core's grammar refuses: its one line).

mod cmd_bootstrap;
mod cmd_csr;
mod cmd_demo;
#[cfg(feature = "tpm")]
mod cmd_device;
mod cmd_discover;
mod cmd_docs;
mod cmd_key;
mod cmd_kubeconfig;
mod cmd_status;
mod cmd_token;
mod cmd_verify;
mod config;
mod devkey;
mod files;
mod kubecfg;

use std::ffi::OsString;
use std::path::PathBuf;
use std::process::ExitCode;

use clap::{CommandFactory, Parser, Subcommand};
use kubeboot_runtime::flags::AgentFlags;

/// Kubelet-style TLS bootstrapping for node agents.
#[derive(Parser)]
#[command(name = "kubeboot", version, about, propagate_version = true)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Bootstrap tokens: generate, check, Secret manifest.
    #[command(subcommand)]
    Token(cmd_token::TokenCommand),
    /// Private keys.
    #[command(subcommand)]
    Key(cmd_key::KeyCommand),
    /// Build a kubelet CSR (PEM), or with --object the CertificateSigningRequest JSON;
    /// `csr check FILE` checks one against the kubelet-CSR rules.
    Csr(cmd_csr::CsrArgs),
    /// Validate an issued certificate against the CA, our key, the node name and the profile.
    Verify(cmd_verify::VerifyArgs),
    /// Print the kubeadm-style `sha256:<hex>` pin of every CA in a PEM file.
    CaHash(cmd_verify::CaHashArgs),
    /// Show the whole node side: token, key, CSR and CertificateSigningRequest object.
    Demo(cmd_demo::DemoArgs),
    /// Make this node's credentials usable: nothing if they are, rotation when due, TLS
    /// bootstrap with the token (kubelet path B) when there are none or they expired.
    Bootstrap(AgentFlags),
    /// The same, rotating the client certificate (authenticated by the current one) when due,
    /// or now with --force.
    Rotate {
        #[command(flatten)]
        args: AgentFlags,
        /// Rotate now, even before the rotation deadline.
        #[arg(long)]
        force: bool,
    },
    /// The agent as a daemon: keep the credentials usable, rotating at every deadline.
    Run {
        #[command(flatten)]
        args: AgentFlags,
        /// Stop after this many rotations (default: run forever).
        #[arg(long)]
        rotations: Option<u32>,
        /// Also take options from FILE, one a line: `NAME = VALUE` for `--NAME=VALUE`, `NAME`
        /// for `--NAME`, `#` comment lines (kubeboot.service reads /etc/kubeboot/kubeboot.conf).
        /// An option both there and on the command line is refused, as any option given twice.
        #[arg(long, value_name = "FILE")]
        config: Option<PathBuf>,
    },
    /// kubeadm-style token discovery: fetch cluster-info, check its JWS with the token and the
    /// CA against `--ca-cert-hash`, write a bootstrap kubeconfig.
    Discover(cmd_discover::DiscoverArgs),
    /// The node's certificates at a glance (like `kubeadm certs check-expiration`): subject,
    /// issuer, expiry, residual time, rotation window, CA pin, key source and the validation
    /// verdict. Exit 1 when the client certificate (or a serving one present) is not usable.
    Status(cmd_status::StatusArgs),
    /// Shell completions on stdout (install: `kubeboot completions bash >
    /// /usr/share/bash-completion/completions/kubeboot`).
    Completions(cmd_docs::CompletionsArgs),
    /// The man page on stdout, or with --dir one page per command (install: `kubeboot man --dir
    /// /usr/local/share/man/man1`).
    Man(cmd_docs::ManArgs),
    /// Kubeconfig files: show, write the node kubeconfig.
    #[command(subcommand)]
    Kubeconfig(cmd_kubeconfig::KubeconfigCommand),
    /// A device's identity for an attested join: `device provision` certifies the TPM's
    /// attestation key with the factory CA (docs/attestation.md).
    #[cfg(feature = "tpm")]
    #[command(subcommand)]
    Device(cmd_device::DeviceCommand),
    /// Approve kubelet-serving CSRs only for the addresses the node really has: the
    /// kubeboot-approver controller, run until SIGTERM (docs/approver.md).
    Approver(kubeboot_approver::Args),
}

/// A rejected input: printed as one line, exit status 1; or a flag value the core's grammar
/// refuses: its one line (the same from every front-end), exit status 2.
#[derive(Debug)]
pub struct Rejected {
    reason: String,
    usage: bool,
}

impl<E: std::fmt::Display> From<E> for Rejected {
    fn from(e: E) -> Self {
        Rejected { reason: e.to_string(), usage: false }
    }
}

impl Rejected {
    /// A usage error (exit status 2): `reason` is the whole line.
    pub fn usage(reason: String) -> Rejected {
        Rejected { reason, usage: true }
    }

    /// `value` of `flag`, refused by the grammar with `e` (`kubeboot::grammar::write_refusal`).
    pub fn refusal(flag: &str, value: &str, e: kubeboot::Error) -> Rejected {
        let mut reason = String::new();
        let _ = kubeboot::grammar::write_refusal(&mut reason, flag, value, e);
        Rejected { reason, usage: true }
    }
}

/// Result of a subcommand.
pub type CmdResult = Result<(), Rejected>;

/// Unix seconds as RFC 3339 UTC (the number itself when out of range).
pub fn rfc(t: i64) -> String {
    kubeboot::rfc3339::format(t).map(|s| s.as_str().to_owned()).unwrap_or_else(|_| t.to_string())
}

/// Seconds since the Unix epoch.
pub fn unix_now() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs() as i64)
        .unwrap_or(0)
}

/// A configuration file's settings, with their lines.
type Settings = (PathBuf, Vec<(usize, OsString)>);

/// `run --config FILE`: the file's settings put into the command line (config.rs).
fn with_config(
    argv: Vec<OsString>,
) -> Result<(Vec<OsString>, Option<Settings>), config::ConfigError> {
    let found = Cli::command()
        .ignore_errors(true)
        .try_get_matches_from(&argv)
        .ok()
        .and_then(|m| m.subcommand_matches("run")?.get_one::<PathBuf>("config").cloned());
    let Some(file) = found else { return Ok((argv, None)) };
    let settings = config::read(&file)?;
    Ok((config::splice(&argv, &settings), Some((file, settings))))
}

/// The command line, or the exit status of a usage error; one line naming the file and line
/// when a configuration file was read (a service's journal gets one clear line).
fn parse_cli() -> Result<Cli, ExitCode> {
    let usage = |e: &dyn std::fmt::Display| {
        eprintln!("kubeboot: {e}");
        ExitCode::from(2)
    };
    let (argv, settings) = with_config(std::env::args_os().collect()).map_err(|e| usage(&e))?;
    match (Cli::try_parse_from(&argv), settings) {
        (Ok(cli), _) => Ok(cli),
        (Err(e), Some((file, settings))) if e.use_stderr() => {
            // clap's message up to its first blank line (its usage and tips left out), on one line.
            let text = e.render().to_string();
            let lines = text.lines().take_while(|l| !l.trim().is_empty()).map(str::trim);
            let what = lines.collect::<Vec<_>>().join(" ").replacen("error: ", "", 1);
            let option = match e.get(clap::error::ContextKind::InvalidArg) {
                Some(clap::error::ContextValue::String(s)) => config::line_of(&settings, s),
                _ => None,
            };
            Err(usage(&match option {
                Some(line) => config::ConfigError { file, line: Some(line), reason: what },
                None => config::ConfigError {
                    file,
                    line: None,
                    reason: format!("with its settings, {what}"),
                },
            }))
        }
        (Err(e), _) => e.exit(),
    }
}

fn main() -> ExitCode {
    let cli = match parse_cli() {
        Ok(cli) => cli,
        Err(status) => return status,
    };
    let result = match cli.command {
        Command::Token(t) => cmd_token::run(t),
        Command::Key(k) => cmd_key::run(k),
        #[cfg(feature = "tpm")]
        Command::Device(d) => cmd_device::run(d),
        Command::Csr(c) => cmd_csr::run(c),
        Command::Verify(v) => cmd_verify::run(v),
        Command::CaHash(c) => cmd_verify::ca_hash(c),
        Command::Demo(d) => cmd_demo::run(d),
        Command::Bootstrap(a) => cmd_bootstrap::run(&a, cmd_bootstrap::Run::Once),
        Command::Rotate { mut args, force } => {
            args.rotate_now |= force;
            cmd_bootstrap::run(&args, cmd_bootstrap::Run::Once)
        }
        Command::Run { args, rotations, config: _ } => {
            cmd_bootstrap::run(&args, cmd_bootstrap::Run::Daemon(rotations))
        }
        Command::Kubeconfig(k) => cmd_kubeconfig::run(k),
        Command::Discover(d) => cmd_discover::run(d),
        Command::Status(s) => cmd_status::run(s),
        Command::Completions(c) => cmd_docs::completions(c, Cli::command()),
        Command::Man(m) => cmd_docs::man(m, Cli::command()),
        Command::Approver(a) => return kubeboot_approver::main(a),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(Rejected { reason, usage: true }) => {
            eprintln!("{reason}");
            ExitCode::from(2)
        }
        Err(Rejected { reason, .. }) => {
            eprintln!("kubeboot: {reason}");
            ExitCode::from(1)
        }
    }
}
