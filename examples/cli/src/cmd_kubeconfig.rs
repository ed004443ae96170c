//! `kubeboot kubeconfig show|node`.

use std::io::Write;
use std::path::PathBuf;

use clap::Subcommand;

use crate::cmd_verify::{Output, json_str};
use kubeboot::kubeconfig::{NodeKubeconfig, write_node_kubeconfig};

use crate::{CmdResult, Rejected, files, kubecfg};

/// Kubeconfig subcommands.
#[derive(Subcommand)]
pub enum KubeconfigCommand {
    /// Summarise a kubeconfig (never prints the token secret or key bytes); exit 1 if unusable.
    Show {
        /// The kubeconfig.
        file: PathBuf,
        /// Output format.
        #[arg(long, value_enum, default_value = "text")]
        output: Output,
    },
    /// Write the node kubeconfig the kubelet writes after bootstrap (client cert and key both
    /// `<cert-dir>/kubelet-client-current.pem`).
    Node {
        /// The bootstrap kubeconfig (server and CA are copied from it).
        #[arg(long)]
        bootstrap_kubeconfig: PathBuf,
        /// The certificate directory.
        #[arg(long, default_value = "/var/lib/kubelet/pki")]
        cert_dir: PathBuf,
        /// Where to write it (mode 0600, replaced atomically).
        #[arg(long)]
        out: PathBuf,
    },
}

/// Run a kubeconfig subcommand.
pub fn run(cmd: KubeconfigCommand) -> CmdResult {
    match cmd {
        KubeconfigCommand::Show { file, output } => show(&file, output),
        KubeconfigCommand::Node { bootstrap_kubeconfig, cert_dir, out } => {
            let boot = kubecfg::load(&bootstrap_kubeconfig)?;
            write_kubeconfig(&out, &boot, &cert_dir)
        }
    }
}

/// Write the node kubeconfig (pkg/kubelet/certificate/bootstrap/bootstrap.go
/// writeKubeconfigFromBootstrapping) with `bootstrap`'s server and CA (file path made absolute, or
/// the data copied), pointing at `<cert_dir>/kubelet-client-current.pem` with the cert dir made
/// absolute; 0600, replaced atomically.
fn write_kubeconfig(
    path: &std::path::Path,
    bootstrap: &kubecfg::Loaded,
    cert_dir: &std::path::Path,
) -> CmdResult {
    let cert_dir = std::path::absolute(cert_dir).map_err(|e| Rejected::from(e.to_string()))?;
    let ca_file = bootstrap.ca_file.as_ref().map(|p| p.to_string_lossy().into_owned());
    let cfg = NodeKubeconfig {
        server: &bootstrap.server,
        certificate_authority: ca_file.as_deref(),
        certificate_authority_data: if ca_file.is_some() {
            None
        } else {
            bootstrap.ca_pem.as_deref()
        },
        insecure_skip_tls_verify: bootstrap.insecure,
        cert_dir: &cert_dir.to_string_lossy(),
    };
    let mut buf = vec![0u8; 64 * 1024];
    let n = write_node_kubeconfig(&cfg, &mut buf)?;
    files::write_private(path, &buf[..n], true)
}

fn show(file: &std::path::Path, output: Output) -> CmdResult {
    let kc = kubecfg::load(file)?;
    let auth = if kc.client_cert_pem.is_some() {
        "client-certificate"
    } else if kc.token.is_some() {
        "token"
    } else {
        "none"
    };
    let token_id = kc
        .token
        .as_ref()
        .and_then(|t| kubeboot::token::BootstrapToken::parse(t).ok().map(|b| b.id().to_owned()));
    let (ca_source, pins) = match &kc.ca_pem {
        Some(pem) => {
            let mut scratch = vec![0u8; pem.len()];
            let pins: Vec<String> = kubeboot::pin::pins_of_pem(pem, &mut scratch)
                .filter_map(|p| p.ok().map(|p| p.to_string()))
                .collect();
            (if kc.ca_file.is_some() { "file" } else { "data" }, pins)
        }
        None if kc.insecure => ("insecure", Vec::new()),
        None => ("none", Vec::new()),
    };
    let mut out = std::io::stdout().lock();
    if output == Output::Json {
        let pins_json: Vec<String> = pins.iter().map(|p| json_str(p)).collect();
        writeln!(
            out,
            "{{\"context\":{},\"server\":{},\"auth\":{},\"token_id\":{},\"client_certificate\":{},\"ca\":{{\"source\":{},\"file\":{},\"pins\":[{}]}},\"namespace\":{}}}",
            json_str(&kc.context),
            json_str(&kc.server),
            json_str(auth),
            token_id.as_deref().map(json_str).unwrap_or_else(|| "null".into()),
            kc.client_cert_file
                .as_ref()
                .map(|p| json_str(&p.to_string_lossy()))
                .unwrap_or_else(|| "null".into()),
            json_str(ca_source),
            kc.ca_file
                .as_ref()
                .map(|p| json_str(&p.to_string_lossy()))
                .unwrap_or_else(|| "null".into()),
            pins_json.join(","),
            kc.namespace.as_deref().map(json_str).unwrap_or_else(|| "null".into()),
        )?;
    } else {
        writeln!(out, "context: {}", kc.context)?;
        writeln!(out, "server: {}", kc.server)?;
        writeln!(
            out,
            "auth: {auth}{}",
            token_id.map(|t| format!(" (bootstrap token id {t})")).unwrap_or_default()
        )?;
        writeln!(out, "ca: {ca_source} {}", pins.join(" "))?;
    }
    Ok(())
}
