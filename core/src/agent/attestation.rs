//! An attested bootstrap ([`crate::attest`]): once the engine has built the bootstrap CSR, the
//! attestation key's chain is read ([`FileRole::AttestationChain`]), the TPM certifies the node
//! key over the CSR's qualifying data ([`KeyOp::Certify`]), and the evidence goes after the CSR
//! in the create request ([`crate::engine::Engine::attach_evidence`]).
//!
//! The decisions, written once for every front-end:
//!
//! * **Only a bootstrap is attested**, and only with a TPM's key (the configuration refuses
//!   anything else); a rotation is authenticated by the node's certificate.
//! * **What the device answers is checked before it is sent**: the `TPMS_ATTEST` must be the
//!   TPM's (`TPM_GENERATED_VALUE`, a certify), of this key (its Name is the key's public area's)
//!   and over this CSR's qualifying data; otherwise the attempt fails with [`Error::KeyDevice`]
//!   naming what is wrong, not with a CSR an approver denies.
//! * **A chain file that is not 1 to [`crate::attest::MAX_CHAIN`] `CERTIFICATE` blocks** fails
//!   the attempt with [`Error::Malformed`] naming the file.

use super::config::Settings;
use super::{FileRole, KeyOp};
use crate::buf::Bytes;
use crate::engine::Engine;
use crate::error::{Error, StoreErrorKind};
use crate::keyref::Tss2;
use crate::tpm;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum St {
    Idle,
    /// Read the attestation key's chain into `out`.
    ReadChain,
    /// The device: certify the key.
    Certify,
    /// The evidence is attached to the engine's create.
    Done,
    Failed,
}

/// What the attestation needs next, or where it got to.
pub(super) enum Next<'a> {
    Read(FileRole, usize, &'a str),
    Key(KeyOp<'a>),
    Done,
    Failed,
}

/// One bootstrap's attestation (see the module docs). Small: it lives in the agent's value.
pub(super) struct Attestation {
    st: St,
    qualifying: [u8; 32],
    /// Why it failed (the route adds the chain's path and the device's words).
    failure: Option<(Error, &'static str)>,
}

impl Attestation {
    pub(super) const fn new() -> Self {
        Attestation { st: St::Idle, qualifying: [0; 32], failure: None }
    }

    pub(super) fn reset(&mut self) {
        *self = Attestation::new();
    }

    /// Attest the CSR whose qualifying data is `qualifying`.
    pub(super) fn begin(&mut self, qualifying: [u8; 32]) {
        *self = Attestation { st: St::ReadChain, qualifying, failure: None };
    }

    /// What it needs: `key` is the node key's reference.
    pub(super) fn next<'a>(
        &'a self,
        s: &'a Settings<'_>,
        out: &Bytes<'_>,
        key: &'a [u8],
    ) -> Next<'a> {
        match self.st {
            St::ReadChain => {
                Next::Read(FileRole::AttestationChain, out.capacity(), s.attestation.as_str())
            }
            St::Certify => Next::Key(KeyOp::Certify { key, qualifying: &self.qualifying }),
            St::Done => Next::Done,
            St::Idle | St::Failed => Next::Failed,
        }
    }

    /// Why it failed.
    pub(super) fn failure(&self) -> Option<(Error, &'static str)> {
        self.failure
    }

    fn fail(&mut self, e: Error, why: &'static str) {
        self.failure = Some((e, why));
        self.st = St::Failed;
    }

    /// The chain file's bytes, kept in `out` until the certify is answered.
    pub(super) fn on_read(
        &mut self,
        out: &mut Bytes<'_>,
        result: core::result::Result<&[u8], StoreErrorKind>,
    ) {
        if self.st != St::ReadChain {
            return;
        }
        match result.map(|b| out.set(b)) {
            Ok(Ok(())) => self.st = St::Certify,
            Ok(Err(e)) => self.fail(e, "the attestation chain is larger than the file region"),
            Err(k) => self.fail(Error::Store(k), "reading the attestation chain"),
        }
    }

    /// The device's answer to [`KeyOp::Certify`]: checked, then attached to the engine's create
    /// with the key's public area (from `key`, its `TSS2 PRIVATE KEY` reference) and the chain in
    /// `out`, which is then cleared.
    pub(super) fn on_certified(
        &mut self,
        engine: &mut Engine<'_>,
        out: &mut Bytes<'_>,
        key: &[u8],
        result: core::result::Result<(&[u8], &[u8]), &str>,
    ) -> core::result::Result<(), ()> {
        if self.st != St::Certify {
            return Ok(());
        }
        let Ok((attest, signature)) = result else {
            out.clear();
            self.fail(Error::KeyDevice, "certifying the key in the tpm device");
            return Err(());
        };
        let q = self.qualifying;
        let mut why: &'static str = "attaching the attestation";
        let chain = out.as_slice();
        let r = engine.attach_evidence(|scratch, dest| {
            let blob = Tss2::from_pem(key, scratch)?;
            let public = tpm::Public::parse_sized(blob.public).map_err(|_| Error::KeyDevice)?;
            why = match tpm::Attest::parse(attest) {
                Err(_) => "certifying the key in the tpm device: the answer is not a TPM's certify",
                Ok(a) if a.extra_data != q.as_slice() => {
                    "certifying the key in the tpm device: not over this CSR's qualifying data"
                }
                Ok(a) if a.name != public.name().as_slice() => {
                    "certifying the key in the tpm device: not of this key"
                }
                Ok(_) if tpm::Signature::parse(signature).is_err() => {
                    "certifying the key in the tpm device: not an ECDSA P-256 TPMT_SIGNATURE"
                }
                Ok(_) => "the attestation chain is not 1 to 4 CERTIFICATE blocks",
            };
            if why.starts_with("certifying") {
                return Err(Error::KeyDevice);
            }
            crate::attest::write_evidence(public.bytes, attest, signature, chain, dest)
        });
        out.clear();
        match r {
            Ok(()) => {
                self.st = St::Done;
                Ok(())
            }
            Err(e) => {
                self.fail(e, why);
                Err(())
            }
        }
    }
}
