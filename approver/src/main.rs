//! `kubeboot-approver`: the serving-CSR approver as its own binary (the same as `kubeboot approver`).

use clap::Parser;

/// Approve kubelet-serving CSRs only for the addresses the node really has.
#[derive(Parser)]
#[command(name = "kubeboot-approver", version, about)]
struct Cli {
    #[command(flatten)]
    args: kubeboot_approver::Args,
}

fn main() -> std::process::ExitCode {
    kubeboot_approver::main(Cli::parse().args)
}
