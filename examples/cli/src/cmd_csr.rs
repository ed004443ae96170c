//! `kubeboot csr ...`

use std::io::Write;
use std::net::IpAddr;

use clap::Args;
use kubeboot::api::{self, CsrObject, ObjectName};
use kubeboot::backend::ring::RingSigner;
use kubeboot::csr::{CsrBuilder, NODES_GROUP};
use kubeboot::key::{NodeKey, P256Signer};

use crate::{CmdResult, Rejected, devkey, files};

/// Arguments of `kubeboot csr`.
#[derive(Args)]
#[command(args_conflicts_with_subcommands = true, subcommand_negates_reqs = true)]
pub struct CsrArgs {
    #[command(subcommand)]
    check: Option<CsrSub>,
    /// The node's key: a SEC1 or PKCS#8 PEM file, a `pkcs11:` URI naming the key's object, or
    /// `tpm:FILE` (a TSS2 PRIVATE KEY blob); a device's key signs the CSR in the device.
    #[arg(long, required = true)]
    key: Option<String>,
    /// The TPM's TCTI (default: TPM2TOOLS_TCTI, then device:/dev/tpmrm0).
    #[arg(long)]
    tcti: Option<String>,
    /// The node name (CN=system:node:<name>).
    #[arg(long, required = true)]
    node_name: Option<String>,
    /// Build a serving-certificate CSR (signer kubernetes.io/kubelet-serving).
    #[arg(long)]
    serving: bool,
    /// DNS subject alternative name (serving only; repeatable).
    #[arg(long, requires = "serving")]
    dns: Vec<String>,
    /// IP subject alternative name (serving only; repeatable).
    #[arg(long, requires = "serving")]
    ip: Vec<String>,
    /// Print the CertificateSigningRequest object (JSON) instead of the PEM.
    #[arg(long)]
    object: bool,
    /// spec.expirationSeconds of the object (≥ 600).
    #[arg(long, requires = "object")]
    expiration_seconds: Option<u32>,
}

/// `kubeboot csr` subcommands.
#[derive(clap::Subcommand)]
pub enum CsrSub {
    /// Check a CSR against the apiserver's, approver's and signer's rules for kubelet CSRs.
    Check(crate::cmd_verify::CsrCheckArgs),
}

/// A built CSR and its object.
pub struct Built {
    /// The CSR PEM.
    pub pem: Vec<u8>,
    /// The CertificateSigningRequest JSON.
    pub object: Vec<u8>,
    /// The object's name (node-csr-<digest>).
    pub name: String,
}

/// Build the CSR PEM and the CertificateSigningRequest object for `key`.
pub fn build(
    key: &dyn P256Signer,
    node_name: &str,
    serving: Option<(&[&str], &[IpAddr])>,
    expiration_seconds: Option<u32>,
) -> Result<Built, Rejected> {
    let builder = match serving {
        None => CsrBuilder::client(node_name)?,
        Some((dns, ips)) => CsrBuilder::serving(node_name, dns, ips)?,
    };
    let mut pem = vec![0u8; builder.max_pem_len()];
    let n = builder.write_pem(key, &mut pem)?;
    pem.truncate(n);
    let (signer, usages) = match serving {
        None => (api::SIGNER_CLIENT, &api::USAGES_CLIENT_EC),
        Some(_) => (api::SIGNER_SERVING, &api::USAGES_SERVING_EC),
    };
    let cn = builder.common_name();
    let name = api::node_csr_name(&key.public_key_spki(), &cn, &[NODES_GROUP], usages);
    let obj =
        CsrObject::new(ObjectName::Fixed(name.as_str()), &pem, signer, usages, expiration_seconds)?;
    let mut json = vec![0u8; 4096];
    let n = match obj.write_json(&mut json) {
        Err(kubeboot::Error::BufferTooSmall { needed }) => {
            json.resize(needed, 0);
            obj.write_json(&mut json)?
        }
        other => other?,
    };
    json.truncate(n);
    Ok(Built { pem, object: json, name: name.as_str().to_owned() })
}

/// Run `kubeboot csr`.
pub fn run(a: CsrArgs) -> CmdResult {
    if let Some(CsrSub::Check(c)) = a.check {
        return crate::cmd_verify::csr_check(c);
    }
    let key_arg = a.key.ok_or_else(|| Rejected::from("--key is required"))?;
    let node_name = a.node_name.ok_or_else(|| Rejected::from("--node-name is required"))?;
    let signer = match devkey::KeyArg::parse(&key_arg)? {
        devkey::KeyArg::File(path) => {
            let key = NodeKey::from_pem(&files::read(&path)?)
                .map_err(|e| Rejected::from(format!("{}: {e}", path.display())))?;
            // Host backend: the signature is ring's (hedged random nonce, so the CSR bytes vary
            // between runs; the to-be-signed part does not).
            std::sync::Arc::new(RingSigner::from_node_key(&key)?) as kubeboot_hwkey::SharedSigner
        }
        device => devkey::open(&device, &devkey::devices(a.tcti.as_deref()))?,
    };
    let key = &*signer;
    let ips =
        a.ip.iter()
            .map(|s| kubeboot::csr::parse_ip(s).map_err(|e| Rejected::from(format!("{s}: {e}"))))
            .collect::<Result<Vec<_>, _>>()?;
    let dns: Vec<&str> = a.dns.iter().map(String::as_str).collect();
    let serving = a.serving.then_some((dns.as_slice(), ips.as_slice()));
    let built = build(key, &node_name, serving, a.expiration_seconds)?;
    let mut out = std::io::stdout().lock();
    if a.object {
        out.write_all(&built.object)?;
        out.write_all(b"\n")?;
    } else {
        out.write_all(&built.pem)?;
    }
    Ok(())
}
