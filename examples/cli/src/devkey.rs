//! `--key` in its three forms: a PEM file, an RFC 7512 `pkcs11:` URI, or `tpm:<TSS2 PEM file>`
//! (the TPM through `--tcti` or `TPM2TOOLS_TCTI`, as tpm2-tools); the device I/O is
//! kubeboot-hwkey's.

use std::path::PathBuf;

use kubeboot::keyref::Pkcs11Uri;
use kubeboot_hwkey::{Devices, SharedSigner};

use crate::{Rejected, files};

/// What `--key` names.
pub enum KeyArg {
    /// A PEM file (the key itself).
    File(PathBuf),
    /// A PKCS#11 URI (checked).
    Pkcs11(String),
    /// A TSS2 PEM file (`tpm:` with an empty path: the agent keeps the blobs in the cert dir).
    Tpm(PathBuf),
}

impl KeyArg {
    /// Read `--key`: an unknown URI attribute, a PIN in the URI and the like are refused here,
    /// before any device is touched.
    pub fn parse(text: &str) -> Result<KeyArg, Rejected> {
        if text.starts_with("pkcs11:") {
            Pkcs11Uri::parse(text).map_err(|e| Rejected::from(format!("--key {text}: {e}")))?;
            Ok(KeyArg::Pkcs11(text.to_owned()))
        } else if let Some(path) = text.strip_prefix("tpm:") {
            Ok(KeyArg::Tpm(path.into()))
        } else {
            Ok(KeyArg::File(text.into()))
        }
    }
}

/// The devices, with `--tcti` when given.
pub fn devices(tcti: Option<&str>) -> Devices {
    Devices { tcti: tcti.map(str::to_owned) }
}

/// Open the key `--key` names as a signer (a file's key is read into memory; a device's stays
/// in the device).
pub fn open(arg: &KeyArg, devices: &Devices) -> Result<SharedSigner, Rejected> {
    let reference = match arg {
        KeyArg::File(p) => files::read(p)?,
        KeyArg::Tpm(p) => files::read(p)?,
        KeyArg::Pkcs11(uri) => {
            let parsed =
                Pkcs11Uri::parse(uri).map_err(|e| Rejected::from(format!("{uri}: {e}")))?;
            let key = kubeboot_hwkey::pkcs11::Pkcs11Key::open(&parsed)
                .map_err(|e| Rejected::from(e.to_string()))?;
            return Ok(std::sync::Arc::new(key));
        }
    };
    devices.open(&reference).map_err(|e| Rejected::from(e.to_string()))
}
