//! `kubeboot key ...`

use std::path::PathBuf;

use clap::Subcommand;
use kubeboot::key::{NodeKey, SEC1_PEM_LEN};
use zeroize::Zeroizing;

use kubeboot::keyref::Pkcs11Uri;

use crate::{CmdResult, Rejected, devkey, files};

/// Key subcommands.
#[derive(Subcommand)]
pub enum KeyCommand {
    /// Generate a P-256 node key and write it as SEC1 PEM (mode 0600), or make it in a device:
    /// `--key 'pkcs11:token=T;object=LABEL?module-path=M&pin-source=F'` (a key pair that never
    /// leaves the token) or `--key tpm:FILE` (a TPM key, its TSS2 PRIVATE KEY blob written to
    /// FILE).
    Generate {
        /// Where to write the key.
        #[arg(long, required_unless_present = "key", conflicts_with = "key")]
        out: Option<PathBuf>,
        /// Make the key in a device (`pkcs11:...;object=LABEL` or `tpm:FILE`).
        #[arg(long)]
        key: Option<String>,
        /// The TPM's TCTI (default: TPM2TOOLS_TCTI, then device:/dev/tpmrm0).
        #[arg(long)]
        tcti: Option<String>,
        /// Replace an existing file.
        #[arg(long)]
        force: bool,
    },
}

/// Run a key subcommand.
pub fn run(cmd: KeyCommand) -> CmdResult {
    match cmd {
        KeyCommand::Generate { key: Some(key), tcti, force, .. } => {
            generate_in_device(&key, tcti.as_deref(), force)
        }
        KeyCommand::Generate { out: Some(out), force, .. } => {
            let key = NodeKey::generate(files::os_entropy)?;
            let mut pem = Zeroizing::new([0u8; SEC1_PEM_LEN]);
            let n = key.to_sec1_pem(&mut pem[..])?;
            files::write_private(&out, &pem[..n], force)
        }
        KeyCommand::Generate { .. } => Err(Rejected::from("--out or --key is required")),
    }
}

/// `key generate --key DEVICE`: the key is made in the device; prints its reference.
fn generate_in_device(key: &str, tcti: Option<&str>, force: bool) -> CmdResult {
    let devices = devkey::devices(tcti);
    match devkey::KeyArg::parse(key)? {
        devkey::KeyArg::Pkcs11(uri) => {
            let parsed =
                Pkcs11Uri::parse(&uri).map_err(|e| Rejected::from(format!("{uri}: {e}")))?;
            let label = parsed.object.ok_or_else(|| {
                Rejected::from(format!("--key {uri}: name the new key with object="))
            })?;
            let mut buf = vec![0u8; label.len()];
            let label = String::from_utf8_lossy(
                kubeboot::keyref::decode_value(label, &mut buf)
                    .map_err(|e| Rejected::from(format!("{uri}: {e}")))?,
            )
            .into_owned();
            if parsed.id.is_some() || parsed.object_type.is_some_and(|t| t != "private") {
                return Err(Rejected::from(format!(
                    "--key {uri}: the token chooses the id; give object= only"
                )));
            }
            if kubeboot_hwkey::pkcs11::Pkcs11Key::open(&parsed).is_ok() && !force {
                return Err(Rejected::from(format!("{uri}: exists (use --force to make another)")));
            }
            let device = device_of(&uri);
            let device =
                Pkcs11Uri::parse(&device).map_err(|e| Rejected::from(format!("{device}: {e}")))?;
            let made = kubeboot_hwkey::pkcs11::generate(&device, &label)
                .map_err(|e| Rejected::from(e.to_string()))?;
            let mut scratch = vec![0u8; made.reference.len()];
            let uri = kubeboot::keyref::pkcs11_uri_of(&made.reference, &mut scratch)?;
            println!("{uri}");
            Ok(())
        }
        devkey::KeyArg::Tpm(path) if !path.as_os_str().is_empty() => {
            let made = devices.generate("tpm", "").map_err(|e| Rejected::from(e.to_string()))?;
            files::write_private(&path, &made.reference, force)
        }
        _ => Err(Rejected::from(format!("--key {key}: give pkcs11:...;object=LABEL or tpm:FILE"))),
    }
}

/// The token part of a key URI: the URI without its `object`, `id` and `type`.
fn device_of(uri: &str) -> String {
    let rest = uri.strip_prefix("pkcs11:").unwrap_or(uri);
    let (path, query) = rest.split_once('?').map_or((rest, None), |(p, q)| (p, Some(q)));
    let kept: Vec<&str> = path
        .split(';')
        .filter(|a| !a.is_empty() && !["object=", "id=", "type="].iter().any(|p| a.starts_with(p)))
        .collect();
    let mut out = format!("pkcs11:{}", kept.join(";"));
    if let Some(q) = query {
        out.push('?');
        out.push_str(q);
    }
    out
}
