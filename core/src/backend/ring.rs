//! The host backend: ring (feature `ring`, std only).
//!
//! * [`Ring`] implements [`SignatureVerifier`] with ring's P-256 / P-384 ECDSA and RSA PKCS#1 v1.5
//!   verification. Inputs ring refuses but the portable path accepts (compressed EC points, RSA
//!   public exponents below 3 or even) go to [`Software`], so verdicts never differ.
//! * [`RingSigner`] implements [`P256Signer`] with ring's ECDSA P-256 signing. ring signs with a
//!   *hedged random* nonce (the nonce mixes OS randomness with the key and the message), not
//!   RFC 6979: the signature bytes differ from run to run, the CSR's to-be-signed part is byte for
//!   byte the same as with [`NodeKey`]. Needs the OS RNG (`getrandom`) for every signature.
//!
//! Building a ring key pair derives the public key from the scalar and compares it with the one
//! given (ring has no "trust me" constructor), so [`RingSigner::from_node_key`] costs one ring
//! base-point multiplication (about a third of a ring signature).

use ring::rand::SystemRandom;
use ring::signature::{
    ECDSA_P256_SHA256_FIXED, ECDSA_P256_SHA256_FIXED_SIGNING, ECDSA_P384_SHA384_FIXED,
    EcdsaKeyPair, KeyPair as _, RSA_PKCS1_2048_8192_SHA256, RSA_PKCS1_2048_8192_SHA384,
    RSA_PKCS1_2048_8192_SHA512, RsaPublicKeyComponents, UnparsedPublicKey,
};
use zeroize::Zeroizing;

use super::{RsaHash, SignatureVerifier, Software, Verdict};
use crate::error::{Error, Result};
use crate::key::{NodeKey, P256Signer, SEC1_DER_LEN};
use crate::out::Filled;

/// ring as a [`SignatureVerifier`].
#[derive(Clone, Copy, Debug, Default)]
pub struct Ring;

fn verdict<E>(r: core::result::Result<(), E>) -> Verdict {
    if r.is_ok() { Verdict::Valid } else { Verdict::Invalid }
}

impl SignatureVerifier for Ring {
    fn p256_sha256(&self, point: &[u8], message: &[u8], rs: &[u8; 64]) -> Verdict {
        if point.len() != 65 || point.first() != Some(&0x04) {
            return Software.p256_sha256(point, message, rs);
        }
        verdict(UnparsedPublicKey::new(&ECDSA_P256_SHA256_FIXED, point).verify(message, rs))
    }

    fn p384_sha384(&self, point: &[u8], message: &[u8], rs: &[u8; 96]) -> Verdict {
        if point.len() != 97 || point.first() != Some(&0x04) {
            return Software.p384_sha384(point, message, rs);
        }
        verdict(UnparsedPublicKey::new(&ECDSA_P384_SHA384_FIXED, point).verify(message, rs))
    }

    fn rsa_pkcs1(&self, n: &[u8], e: &[u8], hash: RsaHash, message: &[u8], sig: &[u8]) -> Verdict {
        // ring requires an odd exponent of at least 3; the rsa crate takes 2 and even values.
        let odd = e.last().is_some_and(|b| b & 1 == 1);
        let at_least_3 =
            e.iter().rev().skip(1).any(|b| *b != 0) || e.last().is_some_and(|b| *b >= 3);
        // ring takes moduli of 2048 bits or more; the 1024-bit CSR keys go to the rsa crate too.
        let bits =
            (n.len() * 8).saturating_sub(n.first().map_or(8, |b| b.leading_zeros() as usize));
        if !odd || !at_least_3 || bits < 2048 {
            return Software.rsa_pkcs1(n, e, hash, message, sig);
        }
        let params = match hash {
            RsaHash::Sha256 => &RSA_PKCS1_2048_8192_SHA256,
            RsaHash::Sha384 => &RSA_PKCS1_2048_8192_SHA384,
            RsaHash::Sha512 => &RSA_PKCS1_2048_8192_SHA512,
        };
        verdict(RsaPublicKeyComponents { n, e }.verify(params, message, sig))
    }
}

/// Longest PKCS#8 document kept for a generated key (ring writes 138 bytes for P-256).
const PKCS8_MAX: usize = 160;

/// The private key as kept beside ring's key pair, for [`RingSigner::to_node_key`].
enum Secret {
    /// The raw big-endian scalar.
    Scalar(Zeroizing<[u8; 32]>),
    /// ring's PKCS#8 document (parsed only when the scalar is asked for, which keeps key
    /// generation at ring's own cost).
    Pkcs8(Zeroizing<[u8; PKCS8_MAX]>, usize),
}

/// A P-256 key signing through ring.
pub struct RingSigner {
    pair: EcdsaKeyPair,
    point: [u8; 65],
    secret: Secret,
}

impl RingSigner {
    /// Take the private scalar and public point of a [`NodeKey`] (generated or read with the
    /// portable code) and build the ring key pair from them.
    pub fn from_node_key(key: &NodeKey) -> Result<Self> {
        let mut der = Zeroizing::new(Filled::<SEC1_DER_LEN>::new());
        let sec1 =
            <sec1::EcPrivateKey<'_> as der::Decode>::from_der(der.fill(|b| key.to_sec1_der(b))?)
                .map_err(|_| Error::MalformedKey)?;
        let d: [u8; 32] = sec1.private_key.try_into().map_err(|_| Error::MalformedKey)?;
        let d = Zeroizing::new(d);
        Self::from_parts(&d, &key.public_point())
    }

    /// Build from the raw 32-byte big-endian scalar and its uncompressed public point; ring
    /// checks that they belong together ([`Error::MalformedKey`] otherwise).
    pub fn from_parts(d: &[u8; 32], point: &[u8; 65]) -> Result<Self> {
        let pair = EcdsaKeyPair::from_private_key_and_public_key(
            &ECDSA_P256_SHA256_FIXED_SIGNING,
            d,
            point,
            &SystemRandom::new(),
        )
        .map_err(|_| Error::MalformedKey)?;
        Ok(RingSigner { pair, point: *point, secret: Secret::Scalar(Zeroizing::new(*d)) })
    }

    /// Generate a fresh key with ring from the OS RNG (the host counterpart of
    /// [`NodeKey::generate`], which takes caller entropy).
    pub fn generate() -> Result<Self> {
        let rng = SystemRandom::new();
        let doc = EcdsaKeyPair::generate_pkcs8(&ECDSA_P256_SHA256_FIXED_SIGNING, &rng)
            .map_err(|_| Error::BadEntropy)?;
        let pair = EcdsaKeyPair::from_pkcs8(&ECDSA_P256_SHA256_FIXED_SIGNING, doc.as_ref(), &rng)
            .map_err(|_| Error::MalformedKey)?;
        let point: [u8; 65] =
            pair.public_key().as_ref().try_into().map_err(|_| Error::MalformedKey)?;
        let mut kept = Zeroizing::new([0u8; PKCS8_MAX]);
        let len = doc.as_ref().len();
        kept.get_mut(..len).ok_or(Error::MalformedKey)?.copy_from_slice(doc.as_ref());
        Ok(RingSigner { pair, point, secret: Secret::Pkcs8(kept, len) })
    }

    /// The same key as a portable [`NodeKey`] (to write it with [`NodeKey::to_sec1_pem`]).
    pub fn to_node_key(&self) -> Result<NodeKey> {
        match &self.secret {
            Secret::Scalar(d) => NodeKey::from_scalar_bytes(d),
            Secret::Pkcs8(doc, len) => {
                NodeKey::from_pkcs8_der(doc.get(..*len).ok_or(Error::MalformedKey)?)
            }
        }
    }
}

impl P256Signer for RingSigner {
    fn public_point(&self) -> [u8; 65] {
        self.point
    }

    fn sign_p256_sha256(&self, message: &[u8]) -> Result<[u8; 64]> {
        let sig = self.pair.sign(&SystemRandom::new(), message).map_err(|_| Error::SignerFailed)?;
        sig.as_ref().try_into().map_err(|_| Error::SignerFailed)
    }
}

impl core::fmt::Debug for RingSigner {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.write_str("RingSigner(P-256, <redacted>)")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ring_signer_matches_node_key() {
        let key = NodeKey::from_scalar_bytes(&[0x42; 32]).unwrap();
        let ring = RingSigner::from_node_key(&key).unwrap();
        assert_eq!(ring.public_point(), key.public_point());
        let rs = ring.sign_p256_sha256(b"hello").unwrap();
        let point = key.public_point();
        assert_eq!(Software.p256_sha256(&point, b"hello", &rs), Verdict::Valid);
        assert_eq!(Software.p256_sha256(&point, b"hellO", &rs), Verdict::Invalid);
        let other = NodeKey::from_scalar_bytes(&[0x43; 32]).unwrap();
        assert!(RingSigner::from_parts(&[0x42; 32], &other.public_point()).is_err());
        let g = RingSigner::generate().unwrap();
        assert_eq!(g.to_node_key().unwrap().public_point(), g.public_point());
    }

    #[test]
    fn compressed_points_fall_back() {
        let key = NodeKey::from_scalar_bytes(&[0x42; 32]).unwrap();
        let rs = key.sign(b"m");
        let compressed = key.verifying_key().to_sec1_point(true);
        // ring takes uncompressed points only; the portable code accepts compressed ones with
        // the `sec1-compressed` feature.
        let want =
            if cfg!(feature = "sec1-compressed") { Verdict::Valid } else { Verdict::Invalid };
        assert_eq!(Ring.p256_sha256(compressed.as_bytes(), b"m", &rs), want);
        assert_eq!(Ring.p256_sha256(&key.public_point(), b"m", &rs), Verdict::Valid);
        assert_eq!(Ring.p256_sha256(&key.public_point(), b"n", &rs), Verdict::Invalid);
    }
}
