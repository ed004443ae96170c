//! `kubeboot` — the command-line face of the kubeboot library.
//!
//! Exit codes: 0 success / accepted, 1 input rejected (one-line reason on stderr),
//! 2 usage error (clap's own).

mod cmd_csr;
mod cmd_key;
mod files;

use std::process::ExitCode;

use clap::{Parser, Subcommand};

/// Kubelet-style TLS bootstrapping for node agents.
#[derive(Parser)]
#[command(name = "kubeboot", version, about, propagate_version = true)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Private keys.
    #[command(subcommand)]
    Key(cmd_key::KeyCommand),
    /// Build a kubelet CSR (PEM), or with --object the CertificateSigningRequest JSON.
    Csr(cmd_csr::CsrArgs),
}

/// A rejected input: printed as one line, exit status 1.
#[derive(Debug)]
pub struct Rejected(pub String);

impl<E: std::fmt::Display> From<E> for Rejected {
    fn from(e: E) -> Self {
        Rejected(e.to_string())
    }
}

/// Result of a subcommand.
pub type CmdResult = Result<(), Rejected>;

fn main() -> ExitCode {
    let cli = Cli::parse();
    let result = match cli.command {
        Command::Key(k) => cmd_key::run(k),
        Command::Csr(c) => cmd_csr::run(c),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(Rejected(reason)) => {
            eprintln!("kubeboot: {reason}");
            ExitCode::from(1)
        }
    }
}
