//! The path from the leaf to a CA of the bundle (step 2), built and checked by rustls-webpki.
//!
//! webpki matches issuer to subject by exact DER name bytes, builds the path (at most 6
//! intermediates), checks every signature on it, the validity of the leaf and of every
//! intermediate at `now`, the intermediates' basicConstraints, pathLenConstraint, name
//! constraints and critical extensions, and the chain of extendedKeyUsage: an intermediate that
//! lists extendedKeyUsage must list the leaf's purpose or anyExtendedKeyUsage (as Go's
//! `x509.Verify`). The signatures go through the call's backend: each [`Algorithm`] is one
//! (issuer key, signatureAlgorithm) pair webpki may pick, handed to [`signature_verdict`].
//!
//! What a webpki trust anchor does not carry is checked here on each path webpki completes
//! (a refused path makes webpki try the next one): the CA's validity period and its
//! pathLenConstraint (Go checks both), and keyCertSign in the keyUsage of each intermediate (as
//! OpenSSL does; Go and webpki ignore it). The leaf's own extendedKeyUsage is left to step 6
//! (it must exist and list the purpose, which webpki does not require).

use core::cell::Cell;
use core::fmt;
use core::sync::atomic::{AtomicBool, AtomicUsize, Ordering::Relaxed};
use core::time::Duration;

use rustls_pki_types::{
    AlgorithmIdentifier, CertificateDer, InvalidSignature, SignatureVerificationAlgorithm,
    TrustAnchor, UnixTime, alg_id,
};
use webpki::{
    EndEntityCert, Error as PathError, ExtendedKeyUsageValidator, KeyPurposeId, KeyPurposeIdIter,
    VerifiedPath,
};

use super::*;

/// What the path needs of a CA beyond webpki's trust anchor, from kubeboot's own parse.
#[derive(Clone, Copy)]
pub(super) struct CaFacts<'a> {
    /// The subject Name, DER with its header ([`Verified::ca_subject`]).
    pub(super) subject: &'a [u8],
    pub(super) not_before: i64,
    pub(super) not_after: i64,
    pub(super) path_len: Option<u32>,
}

impl<'a> CaFacts<'a> {
    pub(super) fn of(cert: &Cert<'a>) -> Self {
        CaFacts {
            subject: cert.subject,
            not_before: cert.not_before,
            not_after: cert.not_after,
            path_len: cert.ext.path_len,
        }
    }

    fn check_time(&self, now: i64) -> Result<(), VerifyError> {
        check_time(self.not_before, self.not_after, now)
    }
}

/// `now` against a validity period (inclusive at both ends).
pub(super) fn check_time(not_before: i64, not_after: i64, now: i64) -> Result<(), VerifyError> {
    let detail = Detail::Validity { not_before, not_after, now };
    if now < not_before {
        Err(VerifyError { reason: Reason::NotYetValid, detail })
    } else if now > not_after {
        Err(VerifyError { reason: Reason::Expired, detail })
    } else {
        Ok(())
    }
}

/// The parts of a CA certificate webpki's trust anchor is made of, borrowed from its DER: the
/// subject Name's and the SubjectPublicKeyInfo's contents and the nameConstraints. `None` when
/// webpki does not take the certificate as a trust anchor.
#[derive(Clone, Copy)]
pub(super) struct AnchorParts<'a> {
    subject: &'a [u8],
    spki: &'a [u8],
    name_constraints: Option<&'a [u8]>,
}

impl<'a> AnchorParts<'a> {
    pub(super) fn of(der: &'a [u8]) -> Option<Self> {
        let cert = CertificateDer::from(der);
        let ta = webpki::anchor_from_trusted_cert(&cert).ok()?;
        // The anchor borrows `der` through `cert`: the same bytes, at the same place.
        Some(AnchorParts {
            subject: within(der, ta.subject.as_ref())?,
            spki: within(der, ta.subject_public_key_info.as_ref())?,
            name_constraints: match &ta.name_constraints {
                Some(nc) => Some(within(der, nc.as_ref())?),
                None => None,
            },
        })
    }

    fn anchor(&self) -> TrustAnchor<'a> {
        TrustAnchor {
            subject: self.subject.into(),
            subject_public_key_info: self.spki.into(),
            name_constraints: self.name_constraints.map(Into::into),
        }
    }
}

/// `part`, a slice that lies inside `whole`, with `whole`'s lifetime.
fn within<'a>(whole: &'a [u8], part: &[u8]) -> Option<&'a [u8]> {
    let start = (part.as_ptr() as usize).checked_sub(whole.as_ptr() as usize)?;
    whole.get(start..start.checked_add(part.len())?)
}

/// The signature checks of one validation: which backend, how many are left, and what they saw
/// (webpki only learns "invalid" from a [`SignatureVerificationAlgorithm`]).
struct Checks<'a> {
    verifier: &'a dyn SignatureVerifier,
    left: AtomicUsize,
    invalid: AtomicBool,
    unsupported: AtomicBool,
}

/// Which public key an [`Algorithm`] takes.
#[derive(Clone, Copy, Debug)]
enum KeyKind {
    P256,
    P384,
    Rsa,
}

/// One (issuer key, signatureAlgorithm) pair for webpki, checked by the backend of the call.
struct Algorithm<'a> {
    key: KeyKind,
    alg: SignatureAlgorithm,
    key_id: AlgorithmIdentifier,
    sig_id: AlgorithmIdentifier,
    checks: &'a Checks<'a>,
}

impl fmt::Debug for Algorithm<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Algorithm").field("key", &self.key).finish()
    }
}

impl SignatureVerificationAlgorithm for Algorithm<'_> {
    fn verify_signature(
        &self,
        public_key: &[u8],
        message: &[u8],
        signature: &[u8],
    ) -> Result<(), InvalidSignature> {
        let c = self.checks;
        let left = c.left.load(Relaxed);
        if left == 0 {
            return Err(InvalidSignature);
        }
        c.left.store(left - 1, Relaxed);
        let key = match self.key {
            KeyKind::P256 => IssuerKey::P256(public_key),
            KeyKind::P384 => IssuerKey::P384(public_key),
            KeyKind::Rsa => IssuerKey::Rsa(public_key),
        };
        match signature_verdict(c.verifier, key, self.alg, message, signature, CA_RSA_MIN_BITS) {
            Verdict::Valid => Ok(()),
            Verdict::Invalid => {
                c.invalid.store(true, Relaxed);
                Err(InvalidSignature)
            }
            Verdict::Unsupported => {
                c.unsupported.store(true, Relaxed);
                Err(InvalidSignature)
            }
        }
    }

    fn public_key_alg_id(&self) -> AlgorithmIdentifier {
        self.key_id
    }

    fn signature_alg_id(&self) -> AlgorithmIdentifier {
        self.sig_id
    }
}

/// sha{256,384,512}WithRSAEncryption without the NULL parameters (Go and kubeboot accept both
/// encodings; webpki's identifiers carry the NULL).
const RSA_SHA256_ABSENT: AlgorithmIdentifier = AlgorithmIdentifier::from_slice(&[
    0x06, 0x09, 0x2a, 0x86, 0x48, 0x86, 0xf7, 0x0d, 0x01, 0x01, 0x0b,
]);
const RSA_SHA384_ABSENT: AlgorithmIdentifier = AlgorithmIdentifier::from_slice(&[
    0x06, 0x09, 0x2a, 0x86, 0x48, 0x86, 0xf7, 0x0d, 0x01, 0x01, 0x0c,
]);
const RSA_SHA512_ABSENT: AlgorithmIdentifier = AlgorithmIdentifier::from_slice(&[
    0x06, 0x09, 0x2a, 0x86, 0x48, 0x86, 0xf7, 0x0d, 0x01, 0x01, 0x0d,
]);

/// Every pair kubeboot's signature dispatch knows; those a build leaves out (P-384, RSA, the
/// SHA-384/512 digests of P-256) are [`Reason::UnsupportedAlgorithm`] there.
const PAIRS: [(KeyKind, SignatureAlgorithm, AlgorithmIdentifier, AlgorithmIdentifier); 12] = {
    use SignatureAlgorithm::*;
    [
        (KeyKind::P256, EcdsaSha256, alg_id::ECDSA_P256, alg_id::ECDSA_SHA256),
        (KeyKind::P256, EcdsaSha384, alg_id::ECDSA_P256, alg_id::ECDSA_SHA384),
        (KeyKind::P256, EcdsaSha512, alg_id::ECDSA_P256, alg_id::ECDSA_SHA512),
        (KeyKind::P384, EcdsaSha384, alg_id::ECDSA_P384, alg_id::ECDSA_SHA384),
        (KeyKind::P384, EcdsaSha256, alg_id::ECDSA_P384, alg_id::ECDSA_SHA256),
        (KeyKind::P384, EcdsaSha512, alg_id::ECDSA_P384, alg_id::ECDSA_SHA512),
        (KeyKind::Rsa, RsaSha256, alg_id::RSA_ENCRYPTION, alg_id::RSA_PKCS1_SHA256),
        (KeyKind::Rsa, RsaSha384, alg_id::RSA_ENCRYPTION, alg_id::RSA_PKCS1_SHA384),
        (KeyKind::Rsa, RsaSha512, alg_id::RSA_ENCRYPTION, alg_id::RSA_PKCS1_SHA512),
        (KeyKind::Rsa, RsaSha256, alg_id::RSA_ENCRYPTION, RSA_SHA256_ABSENT),
        (KeyKind::Rsa, RsaSha384, alg_id::RSA_ENCRYPTION, RSA_SHA384_ABSENT),
        (KeyKind::Rsa, RsaSha512, alg_id::RSA_ENCRYPTION, RSA_SHA512_ABSENT),
    ]
};

/// id-kp-serverAuth, id-kp-clientAuth and anyExtendedKeyUsage, as webpki compares them (the OID's
/// contents).
const SERVER_AUTH: &[u8] = &[0x2b, 0x06, 0x01, 0x05, 0x05, 0x07, 0x03, 0x01];
const CLIENT_AUTH: &[u8] = &[0x2b, 0x06, 0x01, 0x05, 0x05, 0x07, 0x03, 0x02];
const ANY_EKU: &[u8] = &[0x55, 0x1d, 0x25, 0x00];

/// The purpose a path is built for, as [`IssuerEku`] takes it.
pub(super) fn purpose(wanted: &ObjectIdentifier) -> &'static [u8] {
    if *wanted == oid::SERVER_AUTH { SERVER_AUTH } else { CLIENT_AUTH }
}

/// The extendedKeyUsage of the certificates webpki puts on a path: the first one it asks about
/// is the leaf (left to step 6), every other one an intermediate, which passes without the
/// extension, or listing `wanted` or anyExtendedKeyUsage (Go's rule).
struct IssuerEku {
    wanted: &'static [u8],
    leaf_seen: Cell<bool>,
    refused: Cell<bool>,
}

impl ExtendedKeyUsageValidator for IssuerEku {
    fn validate(&self, iter: KeyPurposeIdIter<'_, '_>) -> Result<(), PathError> {
        if !self.leaf_seen.replace(true) {
            return Ok(());
        }
        let (wanted, any) = (KeyPurposeId::new(self.wanted), KeyPurposeId::new(ANY_EKU));
        let mut listed = false;
        for id in iter {
            let id = id?;
            if id == wanted || id == any {
                return Ok(());
            }
            listed = true;
        }
        if listed {
            self.refused.set(true);
            #[allow(deprecated)] // the variant without context: it needs no allocation
            return Err(PathError::RequiredEkuNotFound);
        }
        Ok(())
    }
}

/// A CA set ready for webpki: its trust anchors and kubeboot's facts about each, same order.
pub(super) struct Cas<'s> {
    pub(super) anchors: heapless::Vec<TrustAnchor<'s>, MAX_CAS>,
    pub(super) facts: heapless::Vec<CaFacts<'s>, MAX_CAS>,
}

impl<'s> Cas<'s> {
    pub(super) fn new() -> Self {
        Cas { anchors: heapless::Vec::new(), facts: heapless::Vec::new() }
    }

    /// Add a CA; [`Reason::Malformed`] past [`MAX_CAS`].
    pub(super) fn push(
        &mut self,
        parts: &AnchorParts<'s>,
        facts: CaFacts<'s>,
    ) -> Result<(), VerifyError> {
        self.anchors.push(parts.anchor()).map_err(|_| malformed())?;
        self.facts.push(facts).map_err(|_| malformed())
    }
}

/// What the intermediates that came with the leaf are, from kubeboot's parse (step 1).
#[derive(Clone, Copy, Default)]
pub(super) struct InterFacts {
    pub(super) not_before: i64,
    pub(super) not_after: i64,
    /// keyUsage absent or with keyCertSign.
    pub(super) may_sign: bool,
}

/// Step 2: a path from `leaf_der` (parsed by kubeboot as `leaf`) through `intermediates` to one
/// of `cas`, valid at `now`. Returns the CA's index and the number of intermediates used.
#[inline(never)]
#[allow(clippy::too_many_arguments)]
pub(super) fn find_path(
    verifier: &dyn SignatureVerifier,
    leaf_der: &[u8],
    leaf: &Cert<'_>,
    intermediates: &[&[u8]],
    inter: &[InterFacts],
    cas: &Cas<'_>,
    wanted: &'static [u8],
    now: i64,
) -> Result<(usize, usize), VerifyError> {
    let cert = CertificateDer::from(leaf_der);
    let ee = match EndEntityCert::try_from(&cert) {
        Ok(ee) => ee,
        Err(PathError::UnsupportedCriticalExtension) => {
            return Err(VerifyError::field(Reason::WrongUsage, "criticalExtension"));
        }
        Err(_) => return Err(malformed()),
    };
    let mut ders = heapless::Vec::<CertificateDer<'_>, MAX_INTERMEDIATES>::new();
    for der in intermediates {
        ders.push(CertificateDer::from(*der)).map_err(|_| malformed())?;
    }
    let checks = Checks {
        verifier,
        left: AtomicUsize::new(MAX_SIGNATURE_CHECKS),
        invalid: AtomicBool::new(false),
        unsupported: AtomicBool::new(false),
    };
    let algorithms = PAIRS.map(|(key, alg, key_id, sig_id)| Algorithm {
        key,
        alg,
        key_id,
        sig_id,
        checks: &checks,
    });
    let algs: heapless::Vec<&dyn SignatureVerificationAlgorithm, 12> =
        algorithms.iter().map(|a| a as &dyn SignatureVerificationAlgorithm).collect();
    let eku = IssuerEku { wanted, leaf_seen: Cell::new(false), refused: Cell::new(false) };
    let noted: Cell<Option<VerifyError>> = Cell::new(None);
    let note = |e: VerifyError| {
        if noted.get().is_none() {
            noted.set(Some(e));
        }
    };
    let anchors: &[TrustAnchor<'_>] = &cas.anchors;
    let extra = |path: &VerifiedPath<'_>| -> Result<(), PathError> {
        let index = anchor_index(anchors, path.anchor()).ok_or(PathError::UnknownIssuer)?;
        let ca = cas.facts.get(index).ok_or(PathError::UnknownIssuer)?;
        let depth = path.intermediate_certificates().count();
        if ca.path_len.is_some_and(|max| depth > max as usize) {
            note(VerifyError::field(Reason::Untrusted, "issuer.pathLenConstraint"));
            return Err(PathError::PathLenConstraintViolated);
        }
        for c in path.intermediate_certificates() {
            let at = c.der().as_ref().as_ptr();
            let j = intermediates.iter().position(|d| d.as_ptr() == at);
            if !j.and_then(|j| inter.get(j)).is_some_and(|f| f.may_sign) {
                note(VerifyError::field(Reason::Untrusted, "issuer.keyUsage"));
                return Err(PathError::EndEntityUsedAsCa);
            }
        }
        if let Err(e) = ca.check_time(now) {
            note(e);
            return Err(PathError::CertExpired { time: unix(now), not_after: unix(ca.not_after) });
        }
        Ok(())
    };
    let result = ee.verify_for_usage(&algs, anchors, &ders, unix(now), &eku, None, Some(&extra));
    match result {
        Ok(path) => {
            let index = anchor_index(anchors, path.anchor()).ok_or_else(malformed)?;
            Ok((index, path.intermediate_certificates().count()))
        }
        Err(e) => Err(reason_of(&e, leaf, inter, noted.get(), &checks, &eku, now)),
    }
}

/// The index of `anchor` (one of `anchors`, by address) in `anchors`.
fn anchor_index(anchors: &[TrustAnchor<'_>], anchor: &TrustAnchor<'_>) -> Option<usize> {
    anchors.iter().position(|a| core::ptr::eq(a, anchor))
}

/// `now` as webpki's time (times before 1970 are 1970: webpki has none earlier).
fn unix(t: i64) -> UnixTime {
    UnixTime::since_unix_epoch(Duration::from_secs(u64::try_from(t).unwrap_or(0)))
}

/// The [`Reason`] of webpki's verdict on the path, with the context kubeboot reports.
#[cold]
#[inline(never)]
fn reason_of(
    e: &PathError,
    leaf: &Cert<'_>,
    inter: &[InterFacts],
    noted: Option<VerifyError>,
    checks: &Checks<'_>,
    eku: &IssuerEku,
    now: i64,
) -> VerifyError {
    let untrusted = |field| VerifyError::field(Reason::Untrusted, field);
    match e {
        PathError::CertExpired { .. } | PathError::CertNotValidYet { .. } => {
            // The leaf is checked first; then the certificate found out of its period: an
            // intermediate, or the CA (noted by the path check).
            if let Err(e) = leaf.check_time(now) {
                return e;
            }
            if let Some(e) =
                noted.filter(|n| matches!(n.reason, Reason::Expired | Reason::NotYetValid))
            {
                return e;
            }
            inter
                .iter()
                .find_map(|f| check_time(f.not_before, f.not_after, now).err())
                .unwrap_or_else(|| VerifyError::new(Reason::Untrusted))
        }
        PathError::InvalidSignatureForPublicKey => {
            if checks.invalid.load(Relaxed) {
                VerifyError::new(Reason::BadSignature)
            } else if checks.unsupported.load(Relaxed) {
                VerifyError::new(Reason::UnsupportedAlgorithm)
            } else {
                VerifyError::new(Reason::Untrusted) // the signature budget ran out
            }
        }
        PathError::UnsupportedSignatureAlgorithmContext(_)
        | PathError::UnsupportedSignatureAlgorithmForPublicKeyContext(_) => {
            VerifyError::new(Reason::UnsupportedAlgorithm)
        }
        PathError::CaUsedAsEndEntity => VerifyError::new(Reason::IsCa),
        PathError::EndEntityUsedAsCa => match noted {
            Some(n) if n.detail == Detail::Field("issuer.keyUsage") => n,
            _ => untrusted("issuer.basicConstraints"),
        },
        PathError::PathLenConstraintViolated => untrusted("issuer.pathLenConstraint"),
        // An extendedKeyUsage extension with no purpose in it: the leaf's is step 6's.
        PathError::EmptyEkuExtension if leaf.ext.eku == Some(&[]) => {
            VerifyError::field(Reason::WrongUsage, "extendedKeyUsage")
        }
        PathError::EmptyEkuExtension => untrusted("issuer.extendedKeyUsage"),
        #[allow(deprecated)]
        PathError::RequiredEkuNotFound if eku.refused.get() => untrusted("issuer.extendedKeyUsage"),
        PathError::UnsupportedCriticalExtension => untrusted("issuer.criticalExtension"),
        PathError::NameConstraintViolation => untrusted("issuer.nameConstraints"),
        // A leaf whose notBefore is after its notAfter is out of its period whenever it is
        // checked; one with a time before 1970 cannot be read by webpki.
        PathError::InvalidCertValidity | PathError::BadDerTime
            if leaf.not_before > leaf.not_after || leaf.not_before < 0 =>
        {
            leaf.check_time(now).err().unwrap_or_else(malformed)
        }
        _ => VerifyError::new(Reason::Untrusted),
    }
}
