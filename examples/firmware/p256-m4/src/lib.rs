//! The part of RustCrypto `p256` 0.13's API that embedded-tls 0.19 uses, over the
//! `p256-cortex-m4` assembly: patched in for `p256` 0.13 by the firmware's Cargo.toml.
//!
//! embedded-tls 0.19 hard-codes `p256::ecdh::EphemeralSecret` for its TLS 1.3 key exchange (the
//! `CryptoProvider` it takes has no key-exchange hook), so without this crate every handshake
//! ran two portable RustCrypto scalar multiplications (9.0 M instructions each on the Cortex-M4)
//! where the assembly takes 0.23 M and 0.66 M. What it provides, and nothing more:
//!
//! * [`ecdh::EphemeralSecret`] (`random`, `public_key`, `diffie_hellman`) and
//!   [`ecdh::SharedSecret`] (`raw_secret_bytes`): the key share and the shared secret;
//! * [`PublicKey::from_sec1_bytes`] (the server's share: uncompressed or compressed, checked to be
//!   on the curve; anything else is an error, never a panic) and [`EncodedPoint`] (our share,
//!   uncompressed);
//! * [`NistP256`], [`ecdsa::SigningKey`] and [`ecdsa::DerSignature`]: the types embedded-tls's
//!   `UnsecureProvider` names (the firmware has its own provider; this signer is correct all the
//!   same: deterministic ECDSA, RFC 6979, by kubeboot's assembly key);
//! * `elliptic_curve` (re-exported: embedded-tls takes `rand_core` from it).
//!
//! It runs only on a Cortex-M4/M33 (the assembly); the firmware is built for nothing else.
#![no_std]
#![deny(missing_docs)]

use elliptic_curve::bigint::U256;
use elliptic_curve::consts::U32;
use p256_cortex_m4 as m4;
use zeroize::Zeroize;

pub use elliptic_curve;

/// The NIST P-256 curve, as a type (no arithmetic: the assembly does it).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord)]
pub struct NistP256;

impl elliptic_curve::Curve for NistP256 {
    type FieldBytesSize = U32;
    type Uint = U256;
    const ORDER: U256 =
        U256::from_be_hex("ffffffff00000000ffffffffffffffffbce6faada7179e84f3b9cac2fc632551");
}

impl elliptic_curve::PrimeCurve for NistP256 {}

impl elliptic_curve::FieldBytesEncoding<NistP256> for U256 {}

/// SEC1 `ECPrivateKey` parsing takes the embedded public key as it is (this crate has no
/// arithmetic to check it; the assembly checks the scalar's range when a key is made from it).
impl elliptic_curve::sec1::ValidatePublicKey for NistP256 {}

/// A P-256 public key (a point on the curve).
pub struct PublicKey(m4::PublicKey);

impl PublicKey {
    /// Decode a SEC1 point, uncompressed (65 bytes) or compressed (33 bytes); the assembly checks
    /// that it lies on the curve. Any other input is an error.
    pub fn from_sec1_bytes(bytes: &[u8]) -> Result<Self, elliptic_curve::Error> {
        // The assembly reads the first byte unchecked: only the two lengths SEC1 allows get there.
        match (bytes.len(), bytes.first()) {
            (65, Some(4)) | (33, Some(2 | 3)) => {}
            _ => return Err(elliptic_curve::Error),
        }
        m4::PublicKey::from_sec1_bytes(bytes).map(PublicKey).map_err(|_| elliptic_curve::Error)
    }
}

/// A public key's uncompressed SEC1 encoding (`04 || X || Y`).
#[derive(Clone, Copy)]
pub struct EncodedPoint([u8; 65]);

impl EncodedPoint {
    /// The encoding.
    pub fn as_bytes(&self) -> &[u8] {
        &self.0
    }
}

impl AsRef<[u8]> for EncodedPoint {
    fn as_ref(&self) -> &[u8] {
        &self.0
    }
}

impl From<&PublicKey> for EncodedPoint {
    fn from(key: &PublicKey) -> Self {
        EncodedPoint(key.0.to_uncompressed_sec1_bytes())
    }
}

/// Elliptic-curve Diffie-Hellman.
pub mod ecdh {
    use super::*;
    use rand_core::CryptoRngCore;

    /// An ephemeral secret: one key exchange's scalar (wiped when dropped).
    pub struct EphemeralSecret(m4::SecretKey);

    impl EphemeralSecret {
        /// A uniformly random scalar in `[1, n)` (rejection sampling from `rng`).
        pub fn random(rng: &mut impl CryptoRngCore) -> Self {
            EphemeralSecret(m4::SecretKey::random(rng))
        }

        /// The public key to send (the key share).
        pub fn public_key(&self) -> PublicKey {
            PublicKey(self.0.public_key())
        }

        /// The shared secret with the peer's public key: the x-coordinate of our scalar times
        /// their point.
        pub fn diffie_hellman(&self, their: &PublicKey) -> SharedSecret {
            SharedSecret(*self.0.agree(&their.0).as_bytes())
        }
    }

    impl Drop for EphemeralSecret {
        fn drop(&mut self) {
            self.0.zeroize();
        }
    }

    /// The shared secret of an exchange (wiped when dropped).
    pub struct SharedSecret([u8; 32]);

    impl SharedSecret {
        /// The x-coordinate, big endian: TLS 1.3's input keying material for P-256.
        pub fn raw_secret_bytes(&self) -> &[u8; 32] {
            &self.0
        }
    }

    impl Drop for SharedSecret {
        fn drop(&mut self) {
            self.0.zeroize();
        }
    }
}

/// The signing types embedded-tls's `UnsecureProvider` names.
pub mod ecdsa {
    use super::*;
    use kubeboot::backend::cortex_m4::M4Key;

    /// A P-256 signing key (deterministic ECDSA over SHA-256, RFC 6979, in the assembly).
    pub struct SigningKey(Option<M4Key>);

    impl From<&elliptic_curve::SecretKey<NistP256>> for SigningKey {
        fn from(secret: &elliptic_curve::SecretKey<NistP256>) -> Self {
            // A `SecretKey` holds a scalar in [1, n) (elliptic-curve checks); should the assembly
            // refuse it all the same, signing fails with an error.
            let mut d: [u8; 32] = secret.to_bytes().into();
            let key = M4Key::from_scalar_bytes(&d).ok();
            d.zeroize();
            SigningKey(key)
        }
    }

    impl signature::Signer<DerSignature> for SigningKey {
        fn try_sign(&self, msg: &[u8]) -> Result<DerSignature, signature::Error> {
            let rs = self.0.as_ref().ok_or_else(signature::Error::new)?.sign(msg);
            let der = kubeboot::key::der_signature(&rs).map_err(|_| signature::Error::new())?;
            let bytes = der.as_bytes();
            let mut out = DerSignature { bytes: [0; 72], len: bytes.len() };
            out.bytes
                .get_mut(..bytes.len())
                .ok_or_else(signature::Error::new)?
                .copy_from_slice(bytes);
            Ok(out)
        }
    }

    /// An ECDSA signature as DER `Ecdsa-Sig-Value` (at most 72 bytes).
    #[derive(Clone, Copy)]
    pub struct DerSignature {
        bytes: [u8; 72],
        len: usize,
    }

    impl AsRef<[u8]> for DerSignature {
        fn as_ref(&self) -> &[u8] {
            self.bytes.get(..self.len).unwrap_or(&[])
        }
    }
}
