//! Signature dispatch: which algorithm and issuer key, and the backend that checks it.

use super::*;
pub(crate) use crate::request::SignatureAlgorithm;

#[derive(Clone, Copy)]
pub(crate) enum IssuerKey<'a> {
    P256(&'a [u8]),
    P384(&'a [u8]),
    Rsa(&'a [u8]),
    Other,
}

pub(super) fn issuer_key<'a>(spki: &Spki<'a>) -> IssuerKey<'a> {
    if is_oid(&spki.algorithm, &oid::EC_PUBLIC_KEY) {
        match spki.parameters {
            Some(curve) if is_oid(&curve, &oid::P256) => IssuerKey::P256(spki.key),
            Some(curve) if is_oid(&curve, &oid::P384) => IssuerKey::P384(spki.key),
            _ => IssuerKey::Other,
        }
    } else if is_oid(&spki.algorithm, &oid::RSA_ENCRYPTION) {
        // RFC 3279 §2.3.1: the parameters MUST be NULL (Go's x509 refuses anything else: "RSA key
        // missing NULL parameters"); found by the verify_issued fuzz target.
        if spki.parameters.is_some_and(|p| p.is_null()) {
            IssuerKey::Rsa(spki.key)
        } else {
            IssuerKey::Other
        }
    } else {
        IssuerKey::Other
    }
}

/// A borrowed SubjectPublicKeyInfo. (Parsed by hand: `spki::SubjectPublicKeyInfoRef` costs
/// about 1.8 KiB of stack to decode, too much next to the ECDSA verification on a Cortex-M.)
pub(super) struct Spki<'a> {
    pub(super) algorithm: Tlv<'a>,
    pub(super) parameters: Option<Tlv<'a>>,
    /// The subjectPublicKey BIT STRING's bytes (no unused bits).
    pub(super) key: &'a [u8],
}

impl<'a> Spki<'a> {
    /// SubjectPublicKeyInfo ::= SEQUENCE { algorithm AlgorithmIdentifier, subjectPublicKey BIT STRING }
    pub(super) fn parse(tlv: &'a [u8]) -> Result<Self, VerifyError> {
        let seq = single(tlv, tag::SEQUENCE)?;
        let mut r = reader(seq.value())?;
        let (alg, _) = next(&mut r)?;
        let (bits, _) = next(&mut r)?;
        r.finish()?;
        expect_tag(&alg, tag::SEQUENCE)?;
        let mut a = reader(alg.value())?;
        let (algorithm, _) = next(&mut a)?;
        expect_tag(&algorithm, tag::OID)?;
        let parameters = if a.is_finished() { None } else { Some(next(&mut a)?.0) };
        a.finish()?;
        expect_tag(&bits, tag::BIT_STRING)?;
        let key = whole_bytes(&bits).ok_or_else(malformed)?;
        Ok(Spki { algorithm, parameters, key })
    }
}

/// The smallest RSA modulus accepted for a certificate's issuer (as the kubelet's signers and
/// Go's `x509.Verify` effectively require; smaller keys are [`Reason::UnsupportedAlgorithm`]).
pub(crate) const CA_RSA_MIN_BITS: usize = 2048;

/// The one signature dispatch of the crate: `sig` over `tbs` by `key` with `alg`, checked by
/// `verifier` (certificate signatures in the path search, and the CSR self-signature of
/// [`crate::request`]). RSA moduli must have `rsa_min_bits` to 4096 bits, else unsupported.
#[inline(never)] // keep its locals out of the caller's frame during the path search
pub(crate) fn signature_verdict(
    verifier: &dyn SignatureVerifier,
    key: IssuerKey<'_>,
    alg: SignatureAlgorithm,
    tbs: &[u8],
    sig: &[u8],
    rsa_min_bits: usize,
) -> Verdict {
    match (key, alg) {
        (IssuerKey::P256(point), SignatureAlgorithm::EcdsaSha256) => {
            let mut buf = [0u8; 96];
            match ecdsa_raw(sig, 32, &mut buf).and_then(|raw| <&[u8; 64]>::try_from(raw).ok()) {
                Some(rs) => verifier.p256_sha256(point, tbs, rs),
                None => Verdict::Invalid,
            }
        }
        // The other digests with either curve, as Go's crypto/x509 and OpenSSL accept them
        // (e.g. openssl signs with SHA-256 by default whatever the key): the digest is computed
        // here and checked with the software backend's prehash verification.
        (
            IssuerKey::P256(point),
            SignatureAlgorithm::EcdsaSha384 | SignatureAlgorithm::EcdsaSha512,
        ) => p256_prehashed(point, alg, tbs, sig),
        // Without the features the algorithm is unsupported whatever the backend (as before
        // backends existed: no parse, no `BadSignature`).
        (
            IssuerKey::P384(_),
            SignatureAlgorithm::EcdsaSha256
            | SignatureAlgorithm::EcdsaSha384
            | SignatureAlgorithm::EcdsaSha512,
        ) if !cfg!(feature = "p384") => Verdict::Unsupported,
        (IssuerKey::P384(point), SignatureAlgorithm::EcdsaSha384) => {
            let mut buf = [0u8; 96];
            match ecdsa_raw(sig, 48, &mut buf).and_then(|raw| <&[u8; 96]>::try_from(raw).ok()) {
                Some(rs) => verifier.p384_sha384(point, tbs, rs),
                None => Verdict::Invalid,
            }
        }
        (
            IssuerKey::P384(point),
            SignatureAlgorithm::EcdsaSha256 | SignatureAlgorithm::EcdsaSha512,
        ) => p384_prehashed(point, alg, tbs, sig),
        (
            IssuerKey::Rsa(key),
            SignatureAlgorithm::RsaSha256
            | SignatureAlgorithm::RsaSha384
            | SignatureAlgorithm::RsaSha512,
        ) => verify_rsa(verifier, key, alg, tbs, sig, rsa_min_bits),
        _ => Verdict::Unsupported,
    }
}

/// Which digests ECDSA P-256 is checked with besides SHA-256: SHA-384 and SHA-512 need SHA-512's
/// compression function (about 4 KiB of Cortex-M4 flash with sha2's compact backend), so they are
/// accepted only with the `sha512` feature (on by default; `p384` and `rsa` enable it); otherwise
/// such a certificate stays [`Reason::UnsupportedAlgorithm`].
#[cfg(feature = "sha512")]
pub(super) fn p256_prehashed(
    point: &[u8],
    alg: SignatureAlgorithm,
    tbs: &[u8],
    sig: &[u8],
) -> Verdict {
    use sha2::Digest;
    let mut buf = [0u8; 96];
    let Some(rs) = ecdsa_raw(sig, 32, &mut buf) else {
        return Verdict::Invalid;
    };
    let ok = match alg {
        SignatureAlgorithm::EcdsaSha384 => {
            p256_verify_digest(point, &sha2::Sha384::digest(tbs), rs)
        }
        SignatureAlgorithm::EcdsaSha512 => {
            p256_verify_digest(point, &sha2::Sha512::digest(tbs), rs)
        }
        _ => return Verdict::Unsupported,
    };
    if ok { Verdict::Valid } else { Verdict::Invalid }
}

/// ECDSA P-256 over a digest longer than 32 bytes (its leftmost 32 bytes count, as ECDSA
/// prescribes). With the `p256-cortex-m4` backend on a bare-metal Arm target the check runs in
/// its assembly, so RustCrypto's P-256 verification is not linked there.
#[cfg(all(
    feature = "sha512",
    feature = "p256-cortex-m4",
    target_arch = "arm",
    target_os = "none"
))]
pub(super) fn p256_verify_digest(point: &[u8], digest: &[u8], rs: &[u8]) -> bool {
    crate::backend::cortex_m4::verify_p256_prehashed(point, digest, rs)
}

#[cfg(all(
    feature = "sha512",
    not(all(feature = "p256-cortex-m4", target_arch = "arm", target_os = "none"))
))]
pub(super) fn p256_verify_digest(point: &[u8], digest: &[u8], rs: &[u8]) -> bool {
    use p256::ecdsa::signature::hazmat::PrehashVerifier;
    let (Some(key), Ok(sig)) =
        (crate::backend::p256_point(point), p256::ecdsa::Signature::from_slice(rs))
    else {
        return false;
    };
    key.verify_prehash(digest, &sig).is_ok()
}

#[cfg(not(feature = "sha512"))]
pub(super) fn p256_prehashed(
    _point: &[u8],
    _alg: SignatureAlgorithm,
    _tbs: &[u8],
    _sig: &[u8],
) -> Verdict {
    Verdict::Unsupported
}

/// ECDSA P-384 with SHA-256 or SHA-512 (feature `p384`).
#[cfg(feature = "p384")]
pub(super) fn p384_prehashed(
    point: &[u8],
    alg: SignatureAlgorithm,
    tbs: &[u8],
    sig: &[u8],
) -> Verdict {
    use p384::ecdsa::signature::hazmat::PrehashVerifier;
    use sha2::Digest;
    let mut buf = [0u8; 96];
    let Some(rs) = ecdsa_raw(sig, 48, &mut buf) else {
        return Verdict::Invalid;
    };
    let (Ok(key), Ok(sig)) =
        (p384::ecdsa::VerifyingKey::from_sec1_bytes(point), p384::ecdsa::Signature::from_slice(rs))
    else {
        return Verdict::Invalid;
    };
    let ok = match alg {
        SignatureAlgorithm::EcdsaSha256 => {
            key.verify_prehash(&sha2::Sha256::digest(tbs), &sig).is_ok()
        }
        SignatureAlgorithm::EcdsaSha512 => {
            key.verify_prehash(&sha2::Sha512::digest(tbs), &sig).is_ok()
        }
        _ => return Verdict::Unsupported,
    };
    if ok { Verdict::Valid } else { Verdict::Invalid }
}

#[cfg(not(feature = "p384"))]
pub(super) fn p384_prehashed(
    _point: &[u8],
    _alg: SignatureAlgorithm,
    _tbs: &[u8],
    _sig: &[u8],
) -> Verdict {
    Verdict::Unsupported
}

/// Parse an ECDSA-Sig-Value into `r || s`, each left-padded to `n` bytes, in `out`.
pub(super) fn ecdsa_raw<'o>(sig: &[u8], n: usize, out: &'o mut [u8; 96]) -> Option<&'o [u8]> {
    let (a, b) = two_uints(sig)?;
    let raw = out.get_mut(..2 * n)?;
    for (k, bytes) in [a, b].iter().enumerate() {
        if bytes.len() > n {
            return None;
        }
        let start = k * n + (n - bytes.len());
        raw.get_mut(start..(k + 1) * n)?.copy_from_slice(bytes);
    }
    Some(raw)
}

/// `SEQUENCE { INTEGER, INTEGER }` with non-negative integers (ECDSA-Sig-Value, RSAPublicKey),
/// nothing after it: their magnitudes (see [`uint`]).
pub(super) fn two_uints(der: &[u8]) -> Option<(&[u8], &[u8])> {
    let seq = single(der, tag::SEQUENCE).ok()?;
    let mut r = Der(seq.value());
    let a = uint(&next(&mut r).ok()?.0)?;
    let b = uint(&next(&mut r).ok()?.0)?;
    r.finish().ok()?;
    Some((a, b))
}

/// Whether an RSAPublicKey (`SEQUENCE { modulus, publicExponent }`, non-negative) parses.
pub(crate) fn rsa_key_decodes(key: &[u8]) -> bool {
    two_uints(key).is_some()
}

/// The bit length of a modulus magnitude (leading zero bits of its first byte left out).
fn modulus_bits(n: &[u8]) -> usize {
    (n.len() * 8).saturating_sub(n.first().map_or(8, |b| b.leading_zeros() as usize))
}

/// The modulus size in bits of an RSAPublicKey, if it parses.
pub(crate) fn rsa_modulus_bits(key: &[u8]) -> Option<usize> {
    two_uints(key).map(|(n, _)| modulus_bits(n))
}

/// Parse the RSAPublicKey, enforce the `min_bits`–4096-bit range (else unsupported), then let the
/// backend check the signature.
pub(super) fn verify_rsa(
    verifier: &dyn SignatureVerifier,
    key: &[u8],
    alg: SignatureAlgorithm,
    tbs: &[u8],
    sig: &[u8],
    min_bits: usize,
) -> Verdict {
    let hash = match alg {
        SignatureAlgorithm::RsaSha256 => RsaHash::Sha256,
        SignatureAlgorithm::RsaSha384 => RsaHash::Sha384,
        SignatureAlgorithm::RsaSha512 => RsaHash::Sha512,
        _ => return Verdict::Unsupported,
    };
    if !cfg!(feature = "rsa") {
        return Verdict::Unsupported;
    }
    // RSAPublicKey ::= SEQUENCE { modulus INTEGER, publicExponent INTEGER }
    let Some((n, e)) = two_uints(key) else {
        return Verdict::Invalid;
    };
    if !(min_bits..=4096).contains(&modulus_bits(n)) {
        return Verdict::Unsupported;
    }
    verifier.rsa_pkcs1(n, e, hash, tbs, sig)
}
