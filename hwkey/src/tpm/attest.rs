//! The device's side of an attested join ([`kubeboot::attest`]): its attestation key, the
//! `TPM2_Certify` of a node key by it, and the endorsement key's certificate the TPM vendor (or
//! `swtpm_setup --create-ek-cert`) stored in its NV memory.
//!
//! * **The attestation key** is a primary key of the endorsement hierarchy made from a fixed
//!   template (ECC P-256, `restricted|sign|fixedTPM|fixedParent|sensitiveDataOrigin|
//!   userWithAuth`, ECDSA with SHA-256, empty unique): the same TPM derives the same key from
//!   its endorsement seed at every use, so nothing is persisted and a TPM reset changes nothing;
//!   another TPM derives another key. Being restricted, it signs only what the TPM itself made
//!   (`TPMS_ATTEST` structures, which begin with `TPM_GENERATED_VALUE`), never an outside digest
//!   shaped like one.
//! * **The certify** loads the node key's blob under the storage key, recreates the attestation
//!   key, and asks the TPM to certify the one with the other over the caller's qualifying data;
//!   both handles are flushed after it.

use tss_esapi::abstraction::nv;
use tss_esapi::handles::{KeyHandle, NvIndexTpmHandle};
use tss_esapi::interface_types::resource_handles::{Hierarchy, NvAuth};
use tss_esapi::interface_types::session_handles::AuthSession;
use tss_esapi::structures::{Data, Public, SignatureScheme};
use tss_esapi::traits::Marshall;

use super::{Tpm, point_of, signing_key_template};
use crate::{Certified, DeviceError, DeviceResult};
use kubeboot::keyref::Tss2;

/// The NV index of a TPM's RSA 2048 endorsement key certificate (TCG EK Credential Profile 2.0,
/// §2.2.1.5).
pub const NV_EK_CERT_RSA: u32 = 0x01c0_0002;
/// The NV index of its ECC NIST P-256 endorsement key certificate.
pub const NV_EK_CERT_ECC: u32 = 0x01c0_000a;
/// The NV index of its ECC NIST P-384 endorsement key certificate (`swtpm_setup --ecc`).
pub const NV_EK_CERT_ECC_P384: u32 = 0x01c0_0016;
/// Where [`Tpm::ek_certificate`] looks, in this order.
pub const EK_CERT_INDICES: [u32; 3] = [NV_EK_CERT_ECC, NV_EK_CERT_ECC_P384, NV_EK_CERT_RSA];

impl Tpm {
    /// Recreate the attestation key; the caller flushes it.
    fn attestation_key(&mut self) -> DeviceResult<(KeyHandle, Public)> {
        let template =
            signing_key_template(true).map_err(|e| self.err("the attestation key template", e))?;
        let r = self.context.execute_with_nullauth_session(|ctx| {
            ctx.create_primary(Hierarchy::Endorsement, template, None, None, None, None)
        });
        let created = r.map_err(|e| self.err("creating the attestation key", e))?;
        Ok((created.key_handle, created.out_public))
    }

    /// The attestation key's public point (what the factory CA certifies).
    pub fn attestation_key_point(&mut self) -> DeviceResult<[u8; 65]> {
        let (ak, public) = self.attestation_key()?;
        self.flush(ak);
        point_of(&public).ok_or_else(|| {
            DeviceError(format!("{}: the attestation key is not a P-256 key", self.name))
        })
    }

    /// `TPM2_Certify` of the node key `blob` by the attestation key over `qualifying`.
    pub fn certify(&mut self, blob: &Tss2<'_>, qualifying: &[u8]) -> DeviceResult<Certified> {
        let data =
            Data::try_from(qualifying.to_vec()).map_err(|e| self.err("the qualifying data", e))?;
        let (key, _) = self.load(blob)?;
        let ak = match self.attestation_key() {
            Ok((ak, _)) => ak,
            Err(e) => {
                self.flush(key);
                return Err(e);
            }
        };
        let sessions = (Some(AuthSession::Password), Some(AuthSession::Password), None);
        let r = self.context.execute_with_sessions(sessions, |ctx| {
            ctx.certify(key.into(), ak, data, SignatureScheme::Null)
        });
        self.flush(ak);
        self.flush(key);
        let (attest, signature) = r.map_err(|e| self.err("TPM2_Certify", e))?;
        let attest = attest.marshall().map_err(|e| self.err("marshalling the attestation", e))?;
        let signature =
            signature.marshall().map_err(|e| self.err("marshalling the signature", e))?;
        Ok(Certified { attest, signature })
    }

    /// The endorsement key certificate (DER) the TPM's maker stored, and its NV index: the first
    /// of [`EK_CERT_INDICES`] present; `None` when there is none.
    pub fn ek_certificate(&mut self) -> DeviceResult<Option<(u32, Vec<u8>)>> {
        let listed = nv::list(&mut self.context).map_err(|e| self.err("listing NV indices", e))?;
        for index in EK_CERT_INDICES {
            let handle = NvIndexTpmHandle::new(index)
                .map_err(|e| self.err("the EK certificate's index", e))?;
            if !listed.iter().any(|(public, _)| public.nv_index() == handle) {
                continue;
            }
            let r = self
                .context
                .execute_with_nullauth_session(|ctx| nv::read_full(ctx, NvAuth::Owner, handle));
            return r
                .map(|der| Some((index, der)))
                .map_err(|e| self.err("reading the EK certificate", e));
        }
        Ok(None)
    }
}
