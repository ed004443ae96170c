//! TPM 2.0 (tss-esapi over libtss2): node keys as `TSS2 PRIVATE KEY` blobs.
//!
//! * The parent is a storage key recreated at every use in the owner hierarchy from tpm2-openssl's
//!   template (ECC P-256, `restricted|decrypt|fixedTPM|fixedParent|sensitiveDataOrigin|
//!   userWithAuth|noDA`, AES-128-CFB, no scheme, empty unique): the same TPM always derives the
//!   same key from its owner seed, so `openssl -provider tpm2` loads our blobs and we load its.
//! * A node key is an unrestricted ECDSA P-256 signing key, `fixedTPM|fixedParent|
//!   sensitiveDataOrigin|userWithAuth|sign`, no auth value: its private area leaves the TPM only
//!   encrypted under the storage key, so the blob is useless on another TPM (`TPM_RC_INTEGRITY`).
//! * Signing hashes on the host and signs the digest with a null hash-check ticket (allowed for
//!   unrestricted keys); every handle is flushed after use (no resource manager is assumed).
//! * Never a saved context: a TPM reset invalidates them; the blob survives.

use kubeboot::key::P256Signer;
use kubeboot::keyref::{self, Tss2};
use tss_esapi::Context;
use tss_esapi::attributes::ObjectAttributesBuilder;
use tss_esapi::constants::tss::{TPM2_RH_NULL, TPM2_ST_HASHCHECK};
use tss_esapi::handles::KeyHandle;
use tss_esapi::interface_types::algorithm::{HashingAlgorithm, PublicAlgorithm};
use tss_esapi::interface_types::ecc::EccCurve;
use tss_esapi::interface_types::resource_handles::Hierarchy;
use tss_esapi::structures::{
    Digest, EccPoint, EccScheme, HashScheme, KeyDerivationFunctionScheme, Private, Public,
    PublicBuffer, PublicBuilder, PublicEccParametersBuilder, Signature, SignatureScheme,
    SymmetricDefinitionObject,
};
use tss_esapi::tcti_ldr::TctiNameConf;
use tss_esapi::traits::{Marshall, UnMarshall};
use tss_esapi::tss2_esys::TPMT_TK_HASHCHECK;

use crate::{DeviceError, DeviceResult, NewKey, point_from_xy, rs_from, sha256};

mod attest;
pub use attest::{EK_CERT_INDICES, NV_EK_CERT_ECC, NV_EK_CERT_ECC_P384, NV_EK_CERT_RSA};

/// A connection to the TPM.
pub struct Tpm {
    /// `tpm <tcti>` (for messages).
    pub name: String,
    pub(crate) context: Context,
}

fn storage_key_template() -> tss_esapi::Result<Public> {
    let attributes = ObjectAttributesBuilder::new()
        .with_restricted(true)
        .with_decrypt(true)
        .with_fixed_tpm(true)
        .with_fixed_parent(true)
        .with_sensitive_data_origin(true)
        .with_user_with_auth(true)
        .with_no_da(true)
        .build()?;
    PublicBuilder::new()
        .with_public_algorithm(PublicAlgorithm::Ecc)
        .with_name_hashing_algorithm(HashingAlgorithm::Sha256)
        .with_object_attributes(attributes)
        .with_ecc_parameters(
            PublicEccParametersBuilder::new_restricted_decryption_key(
                SymmetricDefinitionObject::AES_128_CFB,
                EccCurve::NistP256,
            )
            .build()?,
        )
        .with_ecc_unique_identifier(EccPoint::default())
        .build()
}

/// An ECDSA P-256 / SHA-256 signing key that never leaves the TPM
/// (`fixedTPM|fixedParent|sensitiveDataOrigin|userWithAuth|sign`, empty unique): a node key
/// (unrestricted), or with `restricted` the attestation key, which signs only what the TPM made.
pub(crate) fn signing_key_template(restricted: bool) -> tss_esapi::Result<Public> {
    let attributes = ObjectAttributesBuilder::new()
        .with_fixed_tpm(true)
        .with_fixed_parent(true)
        .with_sensitive_data_origin(true)
        .with_user_with_auth(true)
        .with_restricted(restricted)
        .with_sign_encrypt(true)
        .build()?;
    PublicBuilder::new()
        .with_public_algorithm(PublicAlgorithm::Ecc)
        .with_name_hashing_algorithm(HashingAlgorithm::Sha256)
        .with_object_attributes(attributes)
        .with_ecc_parameters(
            PublicEccParametersBuilder::new()
                .with_ecc_scheme(EccScheme::EcDsa(HashScheme::new(HashingAlgorithm::Sha256)))
                .with_curve(EccCurve::NistP256)
                .with_key_derivation_function_scheme(KeyDerivationFunctionScheme::Null)
                .with_is_signing_key(true)
                .with_is_decryption_key(false)
                .with_restricted(restricted)
                .build()?,
        )
        .with_ecc_unique_identifier(EccPoint::default())
        .build()
}

pub(crate) fn point_of(public: &Public) -> Option<[u8; 65]> {
    match public {
        Public::Ecc { unique, .. } => point_from_xy(unique.x().value(), unique.y().value()),
        _ => None,
    }
}

/// A size-prefixed TPM2B of `value`.
fn tpm2b(value: &[u8]) -> Vec<u8> {
    let mut out = (value.len() as u16).to_be_bytes().to_vec();
    out.extend_from_slice(value);
    out
}

impl Tpm {
    /// Connect through `tcti` (`swtpm:path=...`, `device:/dev/tpmrm0`, ...).
    pub fn connect(tcti: &str) -> DeviceResult<Tpm> {
        let name = format!("tpm {tcti}");
        let conf: TctiNameConf =
            tcti.parse().map_err(|e| DeviceError(format!("{name}: the TCTI: {e}")))?;
        let context =
            Context::new(conf).map_err(|e| DeviceError(format!("{name}: cannot connect: {e}")))?;
        Ok(Tpm { name, context })
    }

    pub(crate) fn err(&self, what: &str, e: tss_esapi::Error) -> DeviceError {
        DeviceError(format!("{}: {what}: {e}", self.name))
    }

    /// Recreate the storage key; the caller flushes it.
    fn storage_key(&mut self) -> DeviceResult<KeyHandle> {
        let template =
            storage_key_template().map_err(|e| self.err("the storage key template", e))?;
        let r = self.context.execute_with_nullauth_session(|ctx| {
            ctx.create_primary(Hierarchy::Owner, template, None, None, None, None)
        });
        r.map(|k| k.key_handle).map_err(|e| self.err("creating the storage key", e))
    }

    pub(crate) fn flush(&mut self, handle: KeyHandle) {
        let _ = self.context.flush_context(handle.into());
    }

    /// Make a signing key under the storage key: its `TSS2 PRIVATE KEY` blob and public point.
    pub fn generate(mut self) -> DeviceResult<NewKey> {
        let srk = self.storage_key()?;
        let template = signing_key_template(false).map_err(|e| self.err("the key template", e))?;
        let r = self
            .context
            .execute_with_nullauth_session(|ctx| ctx.create(srk, template, None, None, None, None));
        self.flush(srk);
        let created = r.map_err(|e| self.err("TPM2_Create", e))?;
        let point = point_of(&created.out_public)
            .ok_or_else(|| DeviceError(format!("{}: the new key is not a P-256 key", self.name)))?;
        let public = PublicBuffer::try_from(created.out_public)
            .and_then(|b| b.marshall())
            .map_err(|e| self.err("marshalling the public area", e))?;
        let private = tpm2b(created.out_private.value());
        let blob = Tss2 {
            empty_auth: true,
            parent: keyref::TPM_RH_OWNER,
            public: &public,
            private: &private,
        };
        let mut pem = vec![0u8; keyref::MAX_KEY_REF];
        let n = blob
            .write_pem(&mut pem)
            .map_err(|e| DeviceError(format!("{}: the key blob: {e}", self.name)))?;
        pem.truncate(n);
        Ok(NewKey { reference: pem, point })
    }

    /// Load a blob under the storage key; the caller flushes the key.
    pub(crate) fn load(&mut self, blob: &Tss2<'_>) -> DeviceResult<(KeyHandle, Public)> {
        // A key with an authorization value would be used with an empty one (and count towards
        // the TPM's dictionary-attack lockout): refused, as the Go agent's hwkey refuses it.
        if !blob.empty_auth {
            return Err(DeviceError(format!(
                "{}: the TSS2 PRIVATE KEY has an authorization value (this agent uses keys without one)",
                self.name
            )));
        }
        if blob.parent != keyref::TPM_RH_OWNER {
            return Err(DeviceError(format!(
                "{}: the key's parent {:#x} is not the owner hierarchy's storage key",
                self.name, blob.parent
            )));
        }
        let public = PublicBuffer::unmarshall(blob.public)
            .and_then(Public::try_from)
            .map_err(|e| self.err("the key's public area", e))?;
        let private = match blob.private {
            [hi, lo, rest @ ..] if usize::from(u16::from_be_bytes([*hi, *lo])) == rest.len() => {
                Private::try_from(rest.to_vec())
                    .map_err(|e| self.err("the key's private area", e))?
            }
            _ => {
                return Err(DeviceError(format!(
                    "{}: the key's private area is malformed",
                    self.name
                )));
            }
        };
        let srk = self.storage_key()?;
        let p = public.clone();
        let r = self.context.execute_with_nullauth_session(|ctx| ctx.load(srk, private, p));
        self.flush(srk);
        let key = r.map_err(|e| self.err("loading the key (a key of another TPM?)", e))?;
        Ok((key, public))
    }
}

/// A TPM key blob, open for signing: each signature connects, loads the key under the
/// recreated storage key, signs and flushes (the TPM keeps nothing between signatures).
pub struct TpmKey {
    tcti: String,
    reference: Vec<u8>,
    point: [u8; 65],
}

impl TpmKey {
    /// Load the key of a `TSS2 PRIVATE KEY` reference once (checking that this TPM can) and
    /// keep its public point.
    pub fn open(tcti: &str, reference: &[u8]) -> DeviceResult<TpmKey> {
        let mut scratch = vec![0u8; reference.len()];
        let blob = Tss2::from_pem(reference, &mut scratch)
            .map_err(|e| DeviceError(format!("tpm {tcti}: the TSS2 key: {e}")))?;
        let mut tpm = Tpm::connect(tcti)?;
        let (key, public) = tpm.load(&blob)?;
        tpm.flush(key);
        let point = point_of(&public)
            .ok_or_else(|| DeviceError(format!("{}: the key is not a P-256 key", tpm.name)))?;
        Ok(TpmKey { tcti: tcti.into(), reference: reference.to_vec(), point })
    }

    /// Sign the SHA-256 digest of `message`: `r || s`.
    pub fn sign(&self, message: &[u8]) -> DeviceResult<[u8; 64]> {
        let mut scratch = vec![0u8; self.reference.len()];
        let blob = Tss2::from_pem(&self.reference, &mut scratch)
            .map_err(|e| DeviceError(format!("tpm {}: the TSS2 key: {e}", self.tcti)))?;
        let mut tpm = Tpm::connect(&self.tcti)?;
        let (key, _) = tpm.load(&blob)?;
        let digest =
            Digest::try_from(sha256(message).to_vec()).map_err(|e| tpm.err("digest", e))?;
        let ticket = TPMT_TK_HASHCHECK {
            tag: TPM2_ST_HASHCHECK,
            hierarchy: TPM2_RH_NULL,
            digest: Default::default(),
        };
        let r = ticket.try_into().and_then(|validation| {
            tpm.context.execute_with_nullauth_session(|ctx| {
                ctx.sign(key, digest, SignatureScheme::Null, validation)
            })
        });
        tpm.flush(key);
        match r.map_err(|e| tpm.err("TPM2_Sign", e))? {
            Signature::EcDsa(s) => rs_from(s.signature_r().value(), s.signature_s().value())
                .ok_or_else(|| DeviceError(format!("{}: the signature is not P-256's", tpm.name))),
            _ => Err(DeviceError(format!(
                "{}: the TPM answered with another kind of signature",
                tpm.name
            ))),
        }
    }
}

impl P256Signer for TpmKey {
    fn public_point(&self) -> [u8; 65] {
        self.point
    }

    fn sign_p256_sha256(&self, message: &[u8]) -> kubeboot::Result<[u8; 64]> {
        self.sign(message).map_err(|_| kubeboot::Error::KeyDevice)
    }
}

impl std::fmt::Debug for TpmKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TpmKey").field("tcti", &self.tcti).finish_non_exhaustive()
    }
}
