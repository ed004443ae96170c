//! `kubeboot demo`: the node side of TLS bootstrapping, step by step, without a cluster.

use std::io::Write;

use clap::Args;
use kubeboot::key::NodeKey;
use kubeboot::token::{BootstrapToken, SecretSpec, write_secret_manifest};

use crate::{CmdResult, files, unix_now};

/// Arguments of `kubeboot demo`.
#[derive(Args)]
pub struct DemoArgs {
    /// The node name.
    #[arg(long, default_value = "demo-node")]
    node_name: String,
}

/// Run the demo.
pub fn run(a: DemoArgs) -> CmdResult {
    let mut out = std::io::stdout().lock();
    let token = BootstrapToken::generate(|b| {
        if files::os_entropy(b).is_err() {
            b.fill(0xff);
        }
    })?;
    writeln!(
        out,
        "# 1. bootstrap token: {} (Secret {}, user {})",
        token.to_wire().as_str(),
        token.secret_name(),
        token.user_name()
    )?;
    let spec = SecretSpec::kubeadm_default(&token, unix_now());
    let mut buf = vec![0u8; 4096];
    let n = write_secret_manifest(&spec, &mut buf)?;
    writeln!(out, "# 2. the token Secret an admin applies (kubectl apply -f -):")?;
    out.write_all(&buf[..n])?;
    let key = NodeKey::generate(files::os_entropy)?;
    writeln!(out, "# 3. node key: P-256, generated locally (never leaves the node)")?;
    let signer = kubeboot::backend::ring::RingSigner::from_node_key(&key)?;
    let built = crate::cmd_csr::build(&signer, &a.node_name, None, None)?;
    writeln!(out, "# 4. CSR (O=system:nodes, CN=system:node:{}):", a.node_name)?;
    out.write_all(&built.pem)?;
    writeln!(
        out,
        "# 5. CertificateSigningRequest {} to POST to {}:",
        built.name,
        kubeboot::api::CSR_PATH
    )?;
    out.write_all(&built.object)?;
    writeln!(out)?;
    writeln!(
        out,
        "# next: wait until it is Approved and issued (kubectl certificate approve {}), then verify it with `kubeboot verify`",
        built.name
    )?;
    Ok(())
}
