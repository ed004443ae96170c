//! Node keys that never leave hardware, for kubeboot's agent: the device I/O of
//! [`kubeboot::agent::Action::Key`], the signers, and a rustls client key over any signer.
//!
//! * [`pkcs11`] (feature `pkcs11`): a PKCS#11 token through `cryptoki` (the module named by the
//!   URI's `module-path` is loaded at run time). Keys are made with `CKA_SENSITIVE` and without
//!   `CKA_EXTRACTABLE`, sign with `CKM_ECDSA` over the SHA-256 digest, and are named by an
//!   RFC 7512 URI (label and id) in pkcs11-provider's `PKCS#11 PROVIDER URI` container.
//! * [`tpm`] (feature `tpm`): a TPM 2.0 through `tss-esapi` over the system's libtss2. Keys are
//!   unrestricted ECDSA P-256 signing keys under a storage key recreated from tpm2-openssl's
//!   template, kept as `TSS2 PRIVATE KEY` blobs (never as a saved context, which a TPM reset
//!   invalidates).
//! * [`tls`] (feature `rustls`): a rustls `SigningKey` and client-certificate resolver over any
//!   [`kubeboot::key::P256Signer`]: the handshake's `CertificateVerify` is made by the device.
//! * [`Devices`]: answers the agent's [`kubeboot::agent::KeyOp`]s and opens a key reference as
//!   a signer; every error is one line naming the device, never with a secret in it.
//!
//! The core (`kubeboot`) decides when a key is made, used or destroyed; this crate only talks to
//! the devices.

#![forbid(unsafe_code)]
#![warn(missing_docs)]

use std::sync::Arc;

use kubeboot::agent::{Action, Agent, KeyOp};
use kubeboot::key::{NodeKey, P256Signer};
use kubeboot::keyref::{self, Device, Holder};

#[cfg(feature = "pkcs11")]
pub mod pkcs11;
#[cfg(feature = "tls")]
pub mod tls;
#[cfg(feature = "tpm")]
pub mod tpm;

/// A signer shared with a TLS stack.
pub type SharedSigner = Arc<dyn P256Signer + Send + Sync>;

/// A device error: one line naming the device and what failed (no secret).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DeviceError(pub String);

impl std::fmt::Display for DeviceError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for DeviceError {}

/// The result of a device operation.
pub type DeviceResult<T> = Result<T, DeviceError>;

/// A new key made in a device: its reference (PEM) and public point.
pub struct NewKey {
    /// The reference (`TSS2 PRIVATE KEY` or `PKCS#11 PROVIDER URI` PEM).
    pub reference: Vec<u8>,
    /// The public key, uncompressed SEC1.
    pub point: [u8; 65],
}

/// What `TPM2_Certify` returned: the `TPMS_ATTEST` and the `TPMT_SIGNATURE` over it, as the TPM
/// marshals them (the wire blocks [`kubeboot::attest::LABEL_DATA`] and
/// [`kubeboot::attest::LABEL_SIGNATURE`]).
#[derive(Clone, Debug)]
pub struct Certified {
    /// `TPMS_ATTEST`.
    pub attest: Vec<u8>,
    /// `TPMT_SIGNATURE`.
    pub signature: Vec<u8>,
}

/// The devices this process can reach: the TPM through `tcti` (tpm2-tools' syntax, e.g.
/// `device:/dev/tpmrm0`, `swtpm:path=/run/swtpm.sock`), PKCS#11 tokens through the modules
/// their URIs name.
#[derive(Clone, Debug, Default)]
pub struct Devices {
    /// The TCTI of the TPM (`None`: `TPM2TOOLS_TCTI`, then `device:/dev/tpmrm0`).
    pub tcti: Option<String>,
}

impl Devices {
    /// The TCTI in use.
    pub fn tcti(&self) -> String {
        self.tcti
            .clone()
            .or_else(|| std::env::var("TPM2TOOLS_TCTI").ok().filter(|t| !t.is_empty()))
            .unwrap_or_else(|| "device:/dev/tpmrm0".into())
    }

    /// Make a P-256 key in `device` ([`Device`] text) named `label`.
    pub fn generate(&self, device: &str, label: &str) -> DeviceResult<NewKey> {
        match Device::parse(device).map_err(|e| DeviceError(format!("{device}: {e}")))? {
            #[cfg(feature = "tpm")]
            Device::Tpm => tpm::Tpm::connect(&self.tcti())?.generate(),
            #[cfg(feature = "pkcs11")]
            Device::Pkcs11(uri) => pkcs11::generate(&uri, label),
            #[allow(unreachable_patterns)]
            d => Err(DeviceError(format!(
                "{}: this build has no {} support",
                device,
                d.holder().as_str()
            ))),
        }
    }

    /// Open the key a reference names (a software key too) as a signer.
    pub fn open(&self, reference: &[u8]) -> DeviceResult<SharedSigner> {
        let holder = Holder::of_pem(reference)
            .map_err(|e| DeviceError(format!("the key reference: {e}")))?;
        match holder {
            Holder::Software => NodeKey::from_pem(reference)
                .map(|k| Arc::new(k) as SharedSigner)
                .map_err(|e| DeviceError(format!("the key: {e}"))),
            #[cfg(feature = "tpm")]
            Holder::Tpm => Ok(Arc::new(tpm::TpmKey::open(&self.tcti(), reference)?)),
            #[cfg(feature = "pkcs11")]
            Holder::Pkcs11 => Ok(Arc::new(pkcs11::Pkcs11Key::open_pem(reference)?)),
            #[allow(unreachable_patterns)]
            h => Err(DeviceError(format!("this build has no {} support", h.as_str()))),
        }
    }

    /// Destroy the key a reference names. A TPM key is a blob the TPM keeps nothing of: there
    /// is nothing to destroy in the TPM (its file goes with its pair file).
    pub fn destroy(&self, reference: &[u8]) -> DeviceResult<()> {
        match Holder::of_pem(reference)
            .map_err(|e| DeviceError(format!("the key reference: {e}")))?
        {
            #[cfg(feature = "pkcs11")]
            Holder::Pkcs11 => pkcs11::Pkcs11Key::open_pem(reference)?.destroy(),
            _ => Ok(()),
        }
    }

    /// `TPM2_Certify` of the TPM key `reference` by the TPM's attestation key over `qualifying`
    /// ([`kubeboot::attest::qualifying_data`]): only a TPM's key can be attested.
    pub fn certify(&self, reference: &[u8], qualifying: &[u8]) -> DeviceResult<Certified> {
        match Holder::of_pem(reference) {
            Ok(Holder::Tpm) => {}
            Ok(h) => {
                return Err(DeviceError(format!(
                    "a {} key cannot be attested: attestation needs a key made in a TPM",
                    h.as_str()
                )));
            }
            Err(e) => return Err(DeviceError(format!("the key reference: {e}"))),
        }
        #[cfg(feature = "tpm")]
        {
            let mut scratch = vec![0u8; reference.len()];
            let blob = keyref::Tss2::from_pem(reference, &mut scratch)
                .map_err(|e| DeviceError(format!("tpm {}: the TSS2 key: {e}", self.tcti())))?;
            tpm::Tpm::connect(&self.tcti())?.certify(&blob, qualifying)
        }
        #[cfg(not(feature = "tpm"))]
        {
            let _ = qualifying;
            Err(DeviceError("this build has no tpm support (attestation needs it)".into()))
        }
    }

    /// Answer the agent's outstanding key operation, if there is one. Returns what failed (to
    /// print), the agent having been told.
    pub fn perform(&self, agent: &mut Agent<'_>, now: i64) -> Option<DeviceError> {
        enum Op {
            Public(Vec<u8>),
            Generate(String, String),
            Sign(Vec<u8>, Vec<u8>),
            Certify(Vec<u8>, [u8; 32]),
            Destroy(Vec<u8>),
        }
        let op = match agent.outstanding()? {
            Action::Key(KeyOp::Public { key }) => Op::Public(key.to_vec()),
            Action::Key(KeyOp::Generate { device, label }) => {
                Op::Generate(device.into(), label.into())
            }
            Action::Key(KeyOp::Sign { key, message }) => Op::Sign(key.to_vec(), message.to_vec()),
            Action::Key(KeyOp::Destroy { key }) => Op::Destroy(key.to_vec()),
            Action::Key(KeyOp::Certify { key, qualifying }) => {
                Op::Certify(key.to_vec(), *qualifying)
            }
            _ => return None,
        };
        match op {
            Op::Public(key) => match self.open(&key) {
                Ok(s) => agent.on_key_public(now, Ok(&s.public_point())),
                Err(e) => {
                    agent.on_key_public(now, Err(&e.0));
                    return Some(e);
                }
            },
            Op::Generate(device, label) => match self.generate(&device, &label) {
                Ok(k) => agent.on_key_generated(now, Ok((&k.reference, &k.point))),
                Err(e) => {
                    agent.on_key_generated(now, Err(&e.0));
                    return Some(e);
                }
            },
            Op::Sign(key, message) => {
                let r = self.open(&key).and_then(|s| {
                    s.sign_p256_sha256(&message).map_err(|e| DeviceError(format!("signing: {e}")))
                });
                match r {
                    Ok(rs) => agent.on_signature(now, Ok(&rs)),
                    Err(e) => {
                        agent.on_signature(now, Err(&e.0));
                        return Some(e);
                    }
                }
            }
            Op::Certify(key, qualifying) => match self.certify(&key, &qualifying) {
                Ok(c) => agent.on_certified(now, Ok((&c.attest, &c.signature))),
                Err(e) => {
                    agent.on_certified(now, Err(&e.0));
                    return Some(e);
                }
            },
            Op::Destroy(key) => match self.destroy(&key) {
                Ok(()) => agent.on_key_destroyed(now, Ok(())),
                Err(e) => {
                    agent.on_key_destroyed(now, Err(&e.0));
                    return Some(e);
                }
            },
        }
        None
    }
}

/// `04 || X || Y` from big-endian coordinates (left-padded to 32 bytes).
#[cfg(feature = "tpm")]
pub(crate) fn point_from_xy(x: &[u8], y: &[u8]) -> Option<[u8; 65]> {
    if x.len() > 32 || y.len() > 32 {
        return None;
    }
    let mut p = [0u8; 65];
    p[0] = 4;
    p[33 - x.len()..33].copy_from_slice(x);
    p[65 - y.len()..].copy_from_slice(y);
    Some(p)
}

/// `r || s` from big-endian integers (left-padded to 32 bytes).
#[cfg(feature = "tpm")]
pub(crate) fn rs_from(r: &[u8], s: &[u8]) -> Option<[u8; 64]> {
    let strip = |v: &[u8]| -> Option<Vec<u8>> {
        let v: Vec<u8> = v.iter().copied().skip_while(|b| *b == 0).collect();
        (v.len() <= 32).then_some(v)
    };
    let (r, s) = (strip(r)?, strip(s)?);
    let mut out = [0u8; 64];
    out[32 - r.len()..32].copy_from_slice(&r);
    out[64 - s.len()..].copy_from_slice(&s);
    Some(out)
}

/// The SHA-256 digest of `message`.
pub(crate) fn sha256(message: &[u8]) -> [u8; 32] {
    use sha2::Digest;
    sha2::Sha256::digest(message).into()
}

/// The public point of a reference that carries it without the device: none do for PKCS#11;
/// a TSS2 blob's public area does (used to name the key in messages).
pub fn describe(reference: &[u8]) -> String {
    let mut scratch = vec![0u8; reference.len()];
    match Holder::of_pem(reference) {
        Ok(Holder::Pkcs11) => keyref::pkcs11_uri_of(reference, &mut scratch)
            .map(str::to_owned)
            .unwrap_or_else(|e| format!("pkcs11 (unreadable: {e})")),
        Ok(Holder::Tpm) => "tpm (TSS2 PRIVATE KEY)".into(),
        Ok(Holder::Software) => "software".into(),
        _ => "none".into(),
    }
}
