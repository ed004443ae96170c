//! ECDSA P-256 / SHA-256 on Cortex-M4 (and M33) with the assembly of the `p256-cortex-m4` crate.
//!
//! [`M4Key`] signs deterministically (RFC 6979 nonces, as [`NodeKey`](crate::key::NodeKey)
//! does), so for the same scalar both produce the same `r || s` and byte-identical CSRs.
//! [`verify_p256_sha256`] is what [`verify`](crate::verify) uses for P-256 issuers when this
//! backend is enabled.

use core::fmt;

use p256_cortex_m4 as m4;
use rand_core_06::{CryptoRng, RngCore};
use sha2::{Digest, Sha256};
use zeroize::Zeroizing;

use crate::error::{Error, Result};
use crate::key::P256Signer;

/// The order n of the P-256 group, big endian.
const N: [u8; 32] = [
    0xff, 0xff, 0xff, 0xff, 0x00, 0x00, 0x00, 0x00, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff,
    0xbc, 0xe6, 0xfa, 0xad, 0xa7, 0x17, 0x9e, 0x84, 0xf3, 0xb9, 0xca, 0xc2, 0xfc, 0x63, 0x25, 0x51,
];
const N_HEX: &str = "ffffffff00000000ffffffffffffffffbce6faada7179e84f3b9cac2fc632551";

/// Whether a 32-byte big-endian integer lies in `[1, n)`.
fn in_range_n(x: &[u8]) -> bool {
    x.len() == 32 && x.iter().any(|&b| b != 0) && x < &N[..]
}

/// A P-256 private key held in the assembly backend's representation.
pub struct M4Key {
    secret: Zeroizing<m4::SecretKey>,
    d: Zeroizing<[u8; 32]>,
    point: [u8; 65],
}

impl M4Key {
    /// Wrap the raw 32-byte big-endian private scalar (must be in `[1, n)`, else
    /// [`Error::MalformedKey`]).
    pub fn from_scalar_bytes(d: &[u8; 32]) -> Result<Self> {
        if !in_range_n(d) {
            return Err(Error::MalformedKey);
        }
        let secret = m4::SecretKey::from_bytes(d).map_err(|_| Error::MalformedKey)?;
        let point = secret.public_key().to_uncompressed_sec1_bytes();
        Ok(M4Key { secret: Zeroizing::new(secret), d: Zeroizing::new(*d), point })
    }

    /// Read the first private key of a PEM input, with the rules of
    /// [`NodeKey::from_pem`](crate::key::NodeKey::from_pem) (the same errors).
    pub fn from_pem(input: &[u8]) -> Result<Self> {
        crate::key::NodeKey::from_pem(input).map(crate::key::NodeKey::into_m4)
    }

    /// The private scalar, big endian (secret).
    pub(crate) fn scalar(&self) -> &[u8; 32] {
        &self.d
    }

    /// Derive a key from caller entropy with the rules of
    /// [`NodeKey::from_entropy`](crate::key::NodeKey::from_entropy) (same key for the same
    /// entropy).
    pub fn from_entropy(entropy: &[u8]) -> Result<Self> {
        crate::key::NodeKey::from_entropy(entropy).map(crate::key::NodeKey::into_m4)
    }

    /// Sign with deterministic ECDSA (RFC 6979) over SHA-256, returning `r || s`.
    pub fn sign(&self, message: &[u8]) -> [u8; 64] {
        let h: [u8; 32] = Sha256::digest(message).into();
        let q = rfc6979::bigint::U256::from_be_hex(N_HEX);
        let generator = rfc6979::KGenerator::<Sha256, _>::new(&self.d[..], &h, &[], &q);
        let sig = self.secret.sign_prehashed(&h, NonceRng(generator));
        sig.to_untagged_bytes()
    }
}

impl P256Signer for M4Key {
    fn public_point(&self) -> [u8; 65] {
        self.point
    }

    fn sign_p256_sha256(&self, message: &[u8]) -> Result<[u8; 64]> {
        Ok(self.sign(message))
    }
}

impl fmt::Debug for M4Key {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("M4Key(P-256, <redacted>)")
    }
}

/// Feeds the RFC 6979 nonces to the assembly signer, which draws `k` from an RNG (as
/// little-endian words) and draws again should `k` give `r = 0` or `s = 0`.
struct NonceRng<'a>(rfc6979::KGenerator<'a, Sha256, rfc6979::bigint::U256>);

impl RngCore for NonceRng<'_> {
    fn next_u32(&mut self) -> u32 {
        rand_core_06::impls::next_u32_via_fill(self)
    }
    fn next_u64(&mut self) -> u64 {
        rand_core_06::impls::next_u64_via_fill(self)
    }
    fn fill_bytes(&mut self, dest: &mut [u8]) {
        let mut k = Zeroizing::new([0u8; 32]);
        self.0.fill_next_k(&mut k[..]);
        // The assembly reads the scalar as little-endian.
        k.reverse();
        for (d, s) in dest.iter_mut().zip(k.iter()) {
            *d = *s;
        }
    }
    fn try_fill_bytes(&mut self, dest: &mut [u8]) -> core::result::Result<(), rand_core_06::Error> {
        self.fill_bytes(dest);
        Ok(())
    }
}

impl CryptoRng for NonceRng<'_> {}

/// Verify an ECDSA P-256 / SHA-256 signature `rs` (`r || s`, 64 bytes big endian) on `message`
/// with the public key `point` (uncompressed SEC1, 65 bytes). Anything malformed is `false`.
pub fn verify_p256_sha256(point: &[u8], message: &[u8], rs: &[u8]) -> bool {
    verify_p256_prehashed(point, &Sha256::digest(message), rs)
}

/// Verify an ECDSA P-256 signature `rs` over a message digest `hash` of 32 bytes or more (SHA-256,
/// SHA-384, SHA-512): as ECDSA prescribes for a 256-bit group order, the leftmost 32 bytes of the
/// digest are used. `point` and `rs` as in [`verify_p256_sha256`]; a digest shorter than 32 bytes
/// or anything malformed is `false`.
pub fn verify_p256_prehashed(point: &[u8], hash: &[u8], rs: &[u8]) -> bool {
    if hash.len() < 32 || point.len() != 65 || point.first() != Some(&4) || rs.len() != 64 {
        return false;
    }
    let (r, s) = rs.split_at(32);
    if !in_range_n(r) || !in_range_n(s) {
        return false;
    }
    let Ok(key) = m4::PublicKey::from_sec1_bytes(point) else {
        return false;
    };
    let Ok(sig) = m4::Signature::from_untagged_bytes(rs) else {
        return false;
    };
    key.verify_prehashed(hash, &sig)
}
