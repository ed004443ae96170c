//! Signature backends: who does the elliptic-curve and RSA arithmetic.
//!
//! Everything around the arithmetic — DER encoding of CSRs, certificate parsing, path search,
//! name, key and usage checks — is the same code whatever the backend. A backend only sees
//! normalized inputs: a SEC1 public point or RSA `(n, e)`, the message, and a fixed-size ECDSA
//! `r || s` (already parsed from strict DER by the caller) or the RSA signature bytes.
//!
//! * [`Software`] (always available, `no_std`, no heap on ECDSA): RustCrypto `p256`, `p384`
//!   (feature `p384`) and `rsa` (feature `rsa`). This is what [`crate::verify::verify_issued`]
//!   uses.
//! * `ring::Ring` (feature `ring`, std hosts): ring's assembly implementations. Inputs ring does
//!   not accept but the software path does (compressed points, RSA exponents that are even or
//!   below 3) are handed to [`Software`], so both backends give the same verdict on every input.
//!   For signing, `ring::RingSigner` implements [`P256Signer`](crate::key::P256Signer).
//! * `cortex_m4` (feature `p256-cortex-m4`, bare-metal Arm targets only: thumbv7em / thumbv8m.main):
//!   the assembly P-256 of the `p256-cortex-m4` crate for signing (`cortex_m4::M4Key`, a
//!   [`P256Signer`](crate::key::P256Signer)) and, inside [`Software`] and for the SHA-384/512
//!   digests `verify` checks by prehash, for every P-256 signature check (RustCrypto's P-256
//!   verification is then not linked). On other targets the feature has no effect.

#[cfg(all(feature = "p256-cortex-m4", target_arch = "arm", target_os = "none"))]
pub mod cortex_m4;
#[cfg(feature = "ring")]
pub mod ring;

/// The outcome of one signature check.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Verdict {
    /// The signature is valid for this key and message.
    Valid,
    /// The key or the signature is invalid, or they do not match.
    Invalid,
    /// This backend (as built) cannot check this algorithm.
    Unsupported,
}

/// The digest of an RSA PKCS#1 v1.5 signature.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RsaHash {
    /// sha256WithRSAEncryption
    Sha256,
    /// sha384WithRSAEncryption
    Sha384,
    /// sha512WithRSAEncryption
    Sha512,
}

/// Signature verification primitives used by certificate validation.
///
/// Implementations must be pure functions of their inputs (no state that changes a verdict).
pub trait SignatureVerifier {
    /// ECDSA P-256 with SHA-256: `point` is a SEC1 encoded public key (normally the 65-byte
    /// uncompressed form), `rs` the signature as `r || s`.
    fn p256_sha256(&self, point: &[u8], message: &[u8], rs: &[u8; 64]) -> Verdict;

    /// ECDSA P-384 with SHA-384: `point` is a SEC1 encoded public key, `rs` is `r || s`.
    fn p384_sha384(&self, point: &[u8], message: &[u8], rs: &[u8; 96]) -> Verdict;

    /// RSA PKCS#1 v1.5: `n` and `e` are the big-endian modulus and exponent without leading
    /// zeros; the caller has already checked that `n` has 1024 to 4096 bits (2048 for certificate
    /// signatures; CSR self-signatures accept 1024-bit keys, as Go does).
    fn rsa_pkcs1(&self, n: &[u8], e: &[u8], hash: RsaHash, message: &[u8], sig: &[u8]) -> Verdict;
}

/// A P-256 public key from SEC1: uncompressed (`04 || X || Y`, on the curve) always; compressed
/// (`02`/`03 || X`) only with feature `sec1-compressed` (on with `std`). Without it the square
/// root of point decompression is not linked (about 1.4 KiB of flash on a Cortex-M4); Go's
/// `crypto/x509` does not accept compressed keys in certificates either.
/// Also used by `verify` for the P-256 curve/digest pairings it checks by prehash. Not built with
/// the `p256-cortex-m4` backend on bare-metal Arm, where the assembly does all P-256 checks.
#[cfg(not(all(feature = "p256-cortex-m4", target_arch = "arm", target_os = "none")))]
pub(crate) fn p256_point(point: &[u8]) -> Option<p256::ecdsa::VerifyingKey> {
    #[cfg(feature = "sec1-compressed")]
    {
        p256::ecdsa::VerifyingKey::from_sec1_bytes(point).ok()
    }
    #[cfg(not(feature = "sec1-compressed"))]
    {
        use p256::elliptic_curve::point::AffineCoordinates;
        let (Some((&0x04, xy)), 65) = (point.split_first(), point.len()) else {
            return None;
        };
        let (x, y) = xy.split_at_checked(32)?;
        let x = p256::FieldBytes::try_from(x).ok()?;
        let y = p256::FieldBytes::try_from(y).ok()?;
        let affine =
            Option::<p256::AffinePoint>::from(p256::AffinePoint::from_coordinates(&x, &y))?;
        p256::ecdsa::VerifyingKey::from_affine(affine).ok()
    }
}

/// The portable RustCrypto backend (the default).
#[derive(Clone, Copy, Debug, Default)]
pub struct Software;

/// The portable verifier as a `'static` trait object (the default of the agent's
/// `Config::verifier`).
pub const SOFTWARE: &(dyn SignatureVerifier + Sync) = &Software;

impl SignatureVerifier for Software {
    #[cfg(all(feature = "p256-cortex-m4", target_arch = "arm", target_os = "none"))]
    fn p256_sha256(&self, point: &[u8], message: &[u8], rs: &[u8; 64]) -> Verdict {
        if cortex_m4::verify_p256_sha256(point, message, rs) {
            Verdict::Valid
        } else {
            Verdict::Invalid
        }
    }

    #[cfg(not(all(feature = "p256-cortex-m4", target_arch = "arm", target_os = "none")))]
    fn p256_sha256(&self, point: &[u8], message: &[u8], rs: &[u8; 64]) -> Verdict {
        use p256::ecdsa::signature::Verifier;
        let Some(key) = p256_point(point) else {
            return Verdict::Invalid;
        };
        let Ok(sig) = p256::ecdsa::Signature::from_slice(rs) else {
            return Verdict::Invalid;
        };
        if key.verify(message, &sig).is_ok() { Verdict::Valid } else { Verdict::Invalid }
    }

    #[cfg(feature = "p384")]
    fn p384_sha384(&self, point: &[u8], message: &[u8], rs: &[u8; 96]) -> Verdict {
        use p384::ecdsa::signature::Verifier;
        let Ok(key) = p384::ecdsa::VerifyingKey::from_sec1_bytes(point) else {
            return Verdict::Invalid;
        };
        let Ok(sig) = p384::ecdsa::Signature::from_slice(rs) else {
            return Verdict::Invalid;
        };
        if key.verify(message, &sig).is_ok() { Verdict::Valid } else { Verdict::Invalid }
    }

    #[cfg(not(feature = "p384"))]
    fn p384_sha384(&self, _point: &[u8], _message: &[u8], _rs: &[u8; 96]) -> Verdict {
        Verdict::Unsupported
    }

    #[cfg(feature = "rsa")]
    fn rsa_pkcs1(&self, n: &[u8], e: &[u8], hash: RsaHash, message: &[u8], sig: &[u8]) -> Verdict {
        use rsa::{BoxedUint, Pkcs1v15Sign, PublicKey};
        use sha2::Digest;
        let precision = (n.len() * 8) as u32;
        let (Ok(n), Ok(e)) =
            (BoxedUint::from_be_slice(n, precision), BoxedUint::from_be_slice(e, 64))
        else {
            return Verdict::Invalid;
        };
        let Ok(key) = PublicKey::new_with_size_limits(n, e, 1024..=4096) else {
            return Verdict::Invalid;
        };
        let result = match hash {
            RsaHash::Sha256 => {
                key.verify(Pkcs1v15Sign::new::<sha2::Sha256>(), &sha2::Sha256::digest(message), sig)
            }
            RsaHash::Sha384 => {
                key.verify(Pkcs1v15Sign::new::<sha2::Sha384>(), &sha2::Sha384::digest(message), sig)
            }
            RsaHash::Sha512 => {
                key.verify(Pkcs1v15Sign::new::<sha2::Sha512>(), &sha2::Sha512::digest(message), sig)
            }
        };
        if result.is_ok() { Verdict::Valid } else { Verdict::Invalid }
    }

    #[cfg(not(feature = "rsa"))]
    fn rsa_pkcs1(
        &self,
        _n: &[u8],
        _e: &[u8],
        _hash: RsaHash,
        _message: &[u8],
        _sig: &[u8],
    ) -> Verdict {
        Verdict::Unsupported
    }
}

#[cfg(test)]
#[cfg(not(all(feature = "p256-cortex-m4", target_arch = "arm", target_os = "none")))]
mod tests {
    use super::*;
    use crate::key::NodeKey;

    #[cfg_attr(miri, ignore = "P-256 keygen, signing, verification: 160 s")]
    #[test]
    fn p256_points() {
        let key = NodeKey::from_scalar_bytes(&[0x42; 32]).unwrap();
        let rs = key.sign(b"m");
        let point = key.public_point();
        assert_eq!(Software.p256_sha256(&point, b"m", &rs), Verdict::Valid);
        assert_eq!(Software.p256_sha256(&point, b"n", &rs), Verdict::Invalid);
        // Off the curve, truncated, trailing byte, wrong prefix, identity.
        let mut off = point;
        off[64] ^= 1;
        assert_eq!(Software.p256_sha256(&off, b"m", &rs), Verdict::Invalid);
        assert_eq!(Software.p256_sha256(&point[..64], b"m", &rs), Verdict::Invalid);
        let mut long = [0u8; 66];
        long[..65].copy_from_slice(&point);
        assert_eq!(Software.p256_sha256(&long, b"m", &rs), Verdict::Invalid);
        let mut prefix = point;
        prefix[0] = 0x06;
        assert_eq!(Software.p256_sha256(&prefix, b"m", &rs), Verdict::Invalid);
        assert_eq!(Software.p256_sha256(&[0], b"m", &rs), Verdict::Invalid);
        // Compressed: only with `sec1-compressed`.
        let compressed = key.verifying_key().to_sec1_point(true);
        let want =
            if cfg!(feature = "sec1-compressed") { Verdict::Valid } else { Verdict::Invalid };
        assert_eq!(Software.p256_sha256(compressed.as_bytes(), b"m", &rs), want);
    }
}
