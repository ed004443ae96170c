//! The node's private key: ECDSA P-256, as the kubelet generates it.
//!
//! * generated from caller-supplied entropy (no `getrandom` here): [`NodeKey::from_entropy`];
//! * read from SEC1 `EC PRIVATE KEY` or PKCS#8 `PRIVATE KEY`, PEM or DER: [`NodeKey::from_pem`],
//!   [`NodeKey::from_der`]; RSA and other curves are refused with [`Error::UnsupportedKey`];
//! * written as SEC1 `EC PRIVATE KEY` PEM, byte for byte what Go's `x509.MarshalECPrivateKey` +
//!   `pem.EncodeToMemory` produce (the kubelet's `kubelet-client.key.tmp` format);
//! * its public key as SubjectPublicKeyInfo DER ([`NodeKey::public_key_spki`]), the first item of
//!   the `node-csr-<digest>` name.
//!
//! Key material is zeroized on drop (p256's `SigningKey` and the assembly backend's key are
//! `ZeroizeOnDrop`, and every scratch buffer holding key bytes here is a `Zeroizing` array).
//! `Debug` never prints the private scalar.
//!
//! With the `p256-cortex-m4` backend on a bare-metal Arm target the key is held by the assembly
//! (`backend::cortex_m4::M4Key`): its public key is derived once, by the
//! assembly, when the key is made or read, and every signature is the assembly's. RustCrypto's
//! P-256 arithmetic then derives nothing (it took about 14 M instructions per key on a Cortex-M4,
//! against the assembly's 0.23 M).

use core::fmt;

use der::{Decode, Encode};
use p256::ecdsa::{DerSignature, Signature};
#[cfg(not(all(feature = "p256-cortex-m4", target_arch = "arm", target_os = "none")))]
use p256::ecdsa::{SigningKey, VerifyingKey, signature::Signer as _};
use zeroize::Zeroizing;

use crate::error::{Error, Result};
use crate::out::Filled;
use crate::pem;

/// Length of the DER SubjectPublicKeyInfo of a P-256 public key.
pub const P256_SPKI_LEN: usize = 91;
/// Length of the SEC1 `ECPrivateKey` DER a [`NodeKey`] writes.
pub const SEC1_DER_LEN: usize = 121;
/// Length of the SEC1 `EC PRIVATE KEY` PEM a [`NodeKey`] writes (227 bytes).
pub const SEC1_PEM_LEN: usize = 227;
/// Bytes of entropy consumed per key-generation attempt.
pub const ENTROPY_LEN: usize = 32;

/// `SEQUENCE { SEQUENCE { id-ecPublicKey, prime256v1 }, BIT STRING (0 unused bits) ... }` header of a
/// P-256 SPKI, followed by the 65-byte uncompressed point.
const P256_SPKI_PREFIX: [u8; 26] = [
    0x30, 0x59, 0x30, 0x13, 0x06, 0x07, 0x2a, 0x86, 0x48, 0xce, 0x3d, 0x02, 0x01, 0x06, 0x08, 0x2a,
    0x86, 0x48, 0xce, 0x3d, 0x03, 0x01, 0x07, 0x03, 0x42, 0x00,
];

/// PEM label of a SEC1 EC private key.
pub const LABEL_EC_PRIVATE_KEY: &str = "EC PRIVATE KEY";
/// PEM label of a PKCS#8 private key.
pub const LABEL_PRIVATE_KEY: &str = "PRIVATE KEY";
/// PEM label of a PKCS#1 RSA private key (refused).
pub const LABEL_RSA_PRIVATE_KEY: &str = "RSA PRIVATE KEY";

/// Largest private-key DER we decode from PEM. A P-256 PKCS#8 key is 138 bytes; anything larger
/// than this cannot be a P-256 key.
const MAX_KEY_DER: usize = 512;

/// Something that can sign a CSR with ECDSA P-256 / SHA-256: the software [`NodeKey`], or a key
/// held elsewhere (secure element, TPM, a faster backend, a C callback).
pub trait P256Signer {
    /// The public key as a 65-byte uncompressed SEC1 point (`04 || X || Y`).
    fn public_point(&self) -> [u8; 65];

    /// Sign `message` (the DER to-be-signed bytes; the signer hashes it with SHA-256) and return
    /// the signature as fixed-size `r || s` (32 + 32 bytes, big endian).
    fn sign_p256_sha256(&self, message: &[u8]) -> Result<[u8; 64]>;

    /// The public key as DER SubjectPublicKeyInfo.
    fn public_key_spki(&self) -> [u8; P256_SPKI_LEN] {
        spki_from_point(&self.public_point())
    }
}

/// Build a P-256 SubjectPublicKeyInfo from an uncompressed point.
pub fn spki_from_point(point: &[u8; 65]) -> [u8; P256_SPKI_LEN] {
    let mut out = [0u8; P256_SPKI_LEN];
    let (head, tail) = out.split_at_mut(P256_SPKI_PREFIX.len());
    head.copy_from_slice(&P256_SPKI_PREFIX);
    tail.copy_from_slice(point);
    out
}

/// Encode a fixed-size `r || s` ECDSA P-256 signature as DER (`ECDSA-Sig-Value`), refusing
/// out-of-range values (zero or ≥ n) with [`Error::SignerFailed`].
pub fn der_signature(rs: &[u8; 64]) -> Result<DerSignature> {
    let sig = Signature::from_slice(rs).map_err(|_| Error::SignerFailed)?;
    Ok(sig.to_der())
}

/// `SEQUENCE { INTEGER 0|1, INTEGER <modulus of at least 512 bits>, ... }`: a PKCS#1 RSA key.
fn looks_like_pkcs1_rsa(der: &[u8]) -> bool {
    let parse = || -> der::Result<bool> {
        let mut reader = der::SliceReader::new(der)?;
        der::Reader::sequence(&mut reader, |r| {
            let version = der::asn1::UintRef::decode(r)?;
            let modulus = der::asn1::UintRef::decode(r)?;
            // Skip the remaining fields.
            while !der::Reader::is_finished(r) {
                der::asn1::AnyRef::decode(r)?;
            }
            Ok(version.as_bytes().len() <= 1 && modulus.as_bytes().len() >= 64)
        })
    };
    parse().unwrap_or(false)
}

/// How the platform holds a P-256 key: the assembly backend on a bare-metal Arm target built
/// with it, RustCrypto's signing key elsewhere. Both derive the public key once, when made.
#[cfg(all(feature = "p256-cortex-m4", target_arch = "arm", target_os = "none"))]
type Inner = crate::backend::cortex_m4::M4Key;
#[cfg(not(all(feature = "p256-cortex-m4", target_arch = "arm", target_os = "none")))]
type Inner = SigningKey;

/// A key from a 32-byte big-endian scalar, `None` unless it is in `[1, n)`.
fn inner_from_scalar(d: &[u8]) -> Option<Inner> {
    #[cfg(all(feature = "p256-cortex-m4", target_arch = "arm", target_os = "none"))]
    {
        let d: &[u8; 32] = d.try_into().ok()?;
        Inner::from_scalar_bytes(d).ok()
    }
    #[cfg(not(all(feature = "p256-cortex-m4", target_arch = "arm", target_os = "none")))]
    {
        if d.len() != 32 {
            return None;
        }
        SigningKey::from_slice(d).ok()
    }
}

/// Whether the SEC1 encoding `theirs` (uncompressed `04 || X || Y` or compressed
/// `02|03 || X`) is the point `ours` (uncompressed). Equal encodings are the only way two
/// encodings of points on the curve can name the same point, so nothing is decoded.
fn same_point(theirs: &[u8], ours: &[u8; 65]) -> bool {
    let (Some(&tag), Some(x), Some(&y_last)) = (theirs.first(), ours.get(1..33), ours.last())
    else {
        return false;
    };
    match tag {
        0x04 => theirs == ours.as_slice(),
        0x02 | 0x03 => theirs.get(1..) == Some(x) && (tag & 1) == (y_last & 1),
        _ => false,
    }
}

/// A node's ECDSA P-256 private key.
pub struct NodeKey {
    key: Inner,
}

impl NodeKey {
    /// Derive a key from caller entropy by rejection sampling: each 32-byte chunk is tried as a
    /// big-endian scalar and the first one in `[1, n)` is used, so the key is uniform over the
    /// group. Fewer than 32 bytes is [`Error::InsufficientEntropy`]; if every chunk is out of range
    /// (probability 2⁻³² per chunk) the result is [`Error::BadEntropy`].
    pub fn from_entropy(entropy: &[u8]) -> Result<Self> {
        if entropy.len() < ENTROPY_LEN {
            return Err(Error::InsufficientEntropy);
        }
        for chunk in entropy.chunks_exact(ENTROPY_LEN) {
            if let Some(key) = inner_from_scalar(chunk) {
                return Ok(NodeKey { key });
            }
        }
        Err(Error::BadEntropy)
    }

    /// Generate a key by asking `fill` for entropy until a valid scalar comes out (at most 8
    /// attempts; a source failing that often is broken and gives [`Error::BadEntropy`]).
    pub fn generate(mut fill: impl FnMut(&mut [u8]) -> Result<()>) -> Result<Self> {
        let mut buf = Zeroizing::new([0u8; ENTROPY_LEN]);
        for _ in 0..8 {
            fill(&mut buf[..])?;
            if let Some(key) = inner_from_scalar(&buf[..]) {
                return Ok(NodeKey { key });
            }
        }
        Err(Error::BadEntropy)
    }

    /// Wrap the raw 32-byte big-endian private scalar (in `[1, n)`, else
    /// [`Error::MalformedKey`]).
    pub fn from_scalar_bytes(d: &[u8; 32]) -> Result<Self> {
        inner_from_scalar(d).map(|key| NodeKey { key }).ok_or(Error::MalformedKey)
    }

    /// Read the first private key of a PEM input: `EC PRIVATE KEY` (SEC1) or `PRIVATE KEY`
    /// (PKCS#8). Other blocks (`EC PARAMETERS`, certificates) are skipped, as Go does; an
    /// `RSA PRIVATE KEY`, an RSA or non-P-256 PKCS#8 key is [`Error::UnsupportedKey`].
    pub fn from_pem(input: &[u8]) -> Result<Self> {
        for block in pem::blocks(input) {
            let block = block.map_err(|_| Error::MalformedKey)?;
            match block.label {
                LABEL_RSA_PRIVATE_KEY => return Err(Error::UnsupportedKey),
                LABEL_EC_PRIVATE_KEY | LABEL_PRIVATE_KEY => {
                    let mut buf = Zeroizing::new([0u8; MAX_KEY_DER]);
                    let der = match block.decode(&mut buf[..]) {
                        Ok(der) => der,
                        // Too large to be a P-256 key (an RSA PKCS#8 key, say).
                        Err(Error::BufferTooSmall { .. }) if block.label == LABEL_PRIVATE_KEY => {
                            return Err(Error::UnsupportedKey);
                        }
                        Err(_) => return Err(Error::MalformedKey),
                    };
                    return if block.label == LABEL_EC_PRIVATE_KEY {
                        Self::from_sec1_der(der)
                    } else {
                        Self::from_pkcs8_der(der)
                    };
                }
                _ => continue,
            }
        }
        Err(Error::MalformedKey)
    }

    /// Read a DER private key: SEC1 `ECPrivateKey` or PKCS#8 `PrivateKeyInfo`.
    /// A PKCS#1 `RSAPrivateKey` is recognised and refused as [`Error::UnsupportedKey`].
    pub fn from_der(der: &[u8]) -> Result<Self> {
        match Self::from_sec1_der(der) {
            Ok(k) => Ok(k),
            Err(Error::UnsupportedKey) => Err(Error::UnsupportedKey),
            Err(_) => match Self::from_pkcs8_der(der) {
                Err(Error::MalformedKey) if looks_like_pkcs1_rsa(der) => Err(Error::UnsupportedKey),
                other => other,
            },
        }
    }

    /// Read a SEC1 `ECPrivateKey` (RFC 5915). The curve, when named, must be P-256; an embedded
    /// public key must match the private scalar.
    pub fn from_sec1_der(der: &[u8]) -> Result<Self> {
        let sec1 = sec1::EcPrivateKey::from_der(der).map_err(|_| Error::MalformedKey)?;
        if let Some(params) = sec1.parameters {
            let oid = params.named_curve().ok_or(Error::UnsupportedKey)?;
            if oid != crate::oid::P256 {
                return Err(Error::UnsupportedKey);
            }
        }
        let Ok(d) = <&[u8; 32]>::try_from(sec1.private_key) else {
            // A different curve without named parameters (P-384 has 48 bytes, etc.).
            return Err(Error::UnsupportedKey);
        };
        let key = NodeKey::from_scalar_bytes(d)?;
        if let Some(public) = sec1.public_key {
            if !same_point(public, &key.public_point()) {
                return Err(Error::MalformedKey);
            }
        }
        Ok(key)
    }

    /// Read a PKCS#8 `PrivateKeyInfo` holding an EC P-256 key.
    pub fn from_pkcs8_der(der: &[u8]) -> Result<Self> {
        let info = pkcs8::PrivateKeyInfoRef::from_der(der).map_err(|_| Error::MalformedKey)?;
        if info.algorithm.oid != crate::oid::EC_PUBLIC_KEY {
            return Err(Error::UnsupportedKey);
        }
        let curve: der::asn1::ObjectIdentifier =
            info.algorithm.parameters_oid().map_err(|_| Error::UnsupportedKey)?;
        if curve != crate::oid::P256 {
            return Err(Error::UnsupportedKey);
        }
        Self::from_sec1_der(info.private_key.as_bytes())
    }

    /// Write the SEC1 `ECPrivateKey` DER (version 1, named curve, public key), as Go's
    /// `x509.MarshalECPrivateKey` does. Returns the length ([`SEC1_DER_LEN`]).
    pub fn to_sec1_der(&self, buf: &mut [u8]) -> Result<usize> {
        if buf.len() < SEC1_DER_LEN {
            return Err(Error::BufferTooSmall { needed: SEC1_DER_LEN });
        }
        let d = self.scalar_bytes();
        let point = self.public_point();
        let sec1 = sec1::EcPrivateKey {
            private_key: &d[..],
            parameters: Some(sec1::EcParameters::NamedCurve(crate::oid::P256)),
            public_key: Some(&point[..]),
        };
        let out = sec1.encode_to_slice(buf).map_err(|_| Error::MalformedKey)?;
        Ok(out.len())
    }

    /// Write the key as an `EC PRIVATE KEY` PEM block (what the kubelet writes to
    /// `kubelet-client.key.tmp` and into `kubelet-client-<ts>.pem`). Returns the length
    /// ([`SEC1_PEM_LEN`]).
    pub fn to_sec1_pem(&self, buf: &mut [u8]) -> Result<usize> {
        let mut der = Zeroizing::new(Filled::<SEC1_DER_LEN>::new());
        pem::encode(LABEL_EC_PRIVATE_KEY, der.fill(|b| self.to_sec1_der(b))?, buf)
    }

    /// The public key as DER SubjectPublicKeyInfo (91 bytes), as Go's
    /// `x509.MarshalPKIXPublicKey` writes it.
    pub fn public_key_spki(&self) -> [u8; P256_SPKI_LEN] {
        spki_from_point(&self.public_point())
    }

    /// The ECDSA verifying key. (Not on a bare-metal Arm target with the `p256-cortex-m4`
    /// backend, where the assembly holds the key: use [`NodeKey::public_point`].)
    #[cfg(not(all(feature = "p256-cortex-m4", target_arch = "arm", target_os = "none")))]
    pub fn verifying_key(&self) -> &VerifyingKey {
        self.key.verifying_key()
    }

    /// The public key as an uncompressed SEC1 point.
    pub fn public_point(&self) -> [u8; 65] {
        #[cfg(all(feature = "p256-cortex-m4", target_arch = "arm", target_os = "none"))]
        {
            P256Signer::public_point(&self.key)
        }
        #[cfg(not(all(feature = "p256-cortex-m4", target_arch = "arm", target_os = "none")))]
        {
            let point = self.key.verifying_key().to_sec1_point(false);
            let mut out = [0u8; 65];
            out.copy_from_slice(point.as_bytes());
            out
        }
    }

    /// The assembly backend's key (it is what this key holds on such a target).
    #[cfg(all(feature = "p256-cortex-m4", target_arch = "arm", target_os = "none"))]
    pub(crate) fn into_m4(self) -> crate::backend::cortex_m4::M4Key {
        self.key
    }

    /// The private scalar, big endian (secret).
    pub(crate) fn scalar_bytes(&self) -> Zeroizing<[u8; 32]> {
        #[cfg(all(feature = "p256-cortex-m4", target_arch = "arm", target_os = "none"))]
        {
            Zeroizing::new(*self.key.scalar())
        }
        #[cfg(not(all(feature = "p256-cortex-m4", target_arch = "arm", target_os = "none")))]
        {
            let mut d = Zeroizing::new([0u8; 32]);
            d.copy_from_slice(&self.key.to_bytes());
            d
        }
    }

    /// Sign with deterministic ECDSA (RFC 6979) over SHA-256, returning `r || s`. With the
    /// `p256-cortex-m4` backend on a bare-metal Arm target the signature is made by its assembly
    /// (the same RFC 6979 nonce, so the same `r || s`).
    pub fn sign(&self, message: &[u8]) -> [u8; 64] {
        #[cfg(all(feature = "p256-cortex-m4", target_arch = "arm", target_os = "none"))]
        {
            self.key.sign(message)
        }
        #[cfg(not(all(feature = "p256-cortex-m4", target_arch = "arm", target_os = "none")))]
        {
            let sig: Signature = self.key.sign(message);
            let mut out = [0u8; 64];
            out.copy_from_slice(&sig.to_bytes());
            out
        }
    }
}

impl P256Signer for NodeKey {
    fn public_point(&self) -> [u8; 65] {
        NodeKey::public_point(self)
    }

    fn sign_p256_sha256(&self, message: &[u8]) -> Result<[u8; 64]> {
        Ok(self.sign(message))
    }
}

impl fmt::Debug for NodeKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("NodeKey(P-256, <redacted>)")
    }
}

#[cfg(test)]
pub(crate) mod tests_support {
    /// K1 of docs/test-vectors.md: d = SHA-256("k8s-bootstrap-spec-test-vector-p256") mod n.
    pub(crate) const K1_PEM: &str = "-----BEGIN EC PRIVATE KEY-----
MHcCAQEEIBQc50o+SyBffpzfRjyfULo+yJGB7FDxLSYQzUOnSo+8oAoGCCqGSM49
AwEHoUQDQgAE3wsRu9elE0goTwfLycqOCWwP4YCurXH61SN6kZB/XNw569fHfFH2
a9AKDIgLcIl3WIEJ8NMDy2ANvLrpuvVJqw==
-----END EC PRIVATE KEY-----
";
}

#[cfg(test)]
mod tests {
    use super::tests_support::K1_PEM;
    use super::*;

    const K2_P384_PEM: &str = "-----BEGIN EC PRIVATE KEY-----
MIGkAgEBBDAPEbSXwyDfWf0+61Oofd7aHkmdX69mrzD2Xb1CHF5syfsoRIhnG0dJ
ozBulPZCDDWgBwYFK4EEACKhZANiAATjlMJAtKhEPqU/i7MsrgKcK/RmXHC6He7W
0p69+9qFXg2raJ9zvvbKxkiu2ELOYRDAz0utcFTBOIgoUJEzBVmsjZQ7dvFa1BKP
Ym7MFAKG3O2espBqXn+audgdHGh5B0I=
-----END EC PRIVATE KEY-----
";

    #[cfg_attr(miri, ignore = "P-256 scalar multiplications: minutes each")]
    #[test]
    fn k1_round_trips_byte_exact() {
        let key = NodeKey::from_pem(K1_PEM.as_bytes()).unwrap();
        let mut buf = [0u8; 512];
        let n = key.to_sec1_pem(&mut buf).unwrap();
        assert_eq!(n, SEC1_PEM_LEN);
        assert_eq!(core::str::from_utf8(&buf[..n]).unwrap(), K1_PEM);
    }

    #[cfg_attr(miri, ignore = "P-256 scalar multiplications: minutes each")]
    #[test]
    fn k1_spki_matches_spec_hash_input() {
        let key = NodeKey::from_pem(K1_PEM.as_bytes()).unwrap();
        let spki = key.public_key_spki();
        let mut b64 = [0u8; 128];
        let s =
            <base64ct::Base64UrlUnpadded as base64ct::Encoding>::encode(&spki, &mut b64).unwrap();
        assert_eq!(
            s,
            "MFkwEwYHKoZIzj0CAQYIKoZIzj0DAQcDQgAE3wsRu9elE0goTwfLycqOCWwP4YCurXH61SN6kZB_XNw569fHfFH2a9AKDIgLcIl3WIEJ8NMDy2ANvLrpuvVJqw"
        );
    }

    /// The embedded public key of a SEC1 key must be the scalar's: compared as encodings
    /// (`same_point`), with the verdict RustCrypto's decoding gives, for every SEC1 form but the
    /// compact one (`05 || X`, never written by OpenSSL or Go), which is refused.
    #[cfg_attr(miri, ignore = "P-256 scalar multiplications: minutes each")]
    #[test]
    fn embedded_public_key_must_be_the_scalars() {
        let key = NodeKey::from_pem(K1_PEM.as_bytes()).unwrap();
        let ours = key.public_point();
        let compressed = key.verifying_key().to_sec1_point(true);
        let mut other_parity = compressed.as_bytes().to_vec();
        other_parity[0] ^= 1;
        let mut other_x = ours;
        other_x[5] ^= 0x40;
        let mut compact = ours[..33].to_vec();
        compact[0] = 5;
        let cases: [&[u8]; 7] =
            [&ours, compressed.as_bytes(), &other_parity, &other_x, &ours[..64], &[0], &[]];
        for theirs in cases {
            let rustcrypto = VerifyingKey::from_sec1_bytes(theirs)
                .map(|t| t.to_sec1_point(false).as_bytes() == ours.as_slice())
                .unwrap_or(false);
            assert_eq!(same_point(theirs, &ours), rustcrypto, "{theirs:02x?}");
        }
        assert!(same_point(&ours, &ours) && same_point(compressed.as_bytes(), &ours));
        assert!(!same_point(&compact, &ours));

        // Through the SEC1 reader: K1's DER with its public key replaced.
        let mut der = [0u8; SEC1_DER_LEN];
        key.to_sec1_der(&mut der).unwrap();
        assert_eq!(NodeKey::from_sec1_der(&der).unwrap().public_point(), ours);
        let mut bad = der;
        bad[SEC1_DER_LEN - 1] ^= 1;
        assert_eq!(NodeKey::from_sec1_der(&bad).unwrap_err(), Error::MalformedKey);
    }

    #[test]
    fn p384_and_rsa_are_unsupported() {
        assert_eq!(NodeKey::from_pem(K2_P384_PEM.as_bytes()).unwrap_err(), Error::UnsupportedKey);
        let rsa = "-----BEGIN RSA PRIVATE KEY-----\nAAAA\n-----END RSA PRIVATE KEY-----\n";
        assert_eq!(NodeKey::from_pem(rsa.as_bytes()).unwrap_err(), Error::UnsupportedKey);
    }

    #[test]
    fn garbage_is_malformed() {
        assert_eq!(NodeKey::from_pem(b"hello").unwrap_err(), Error::MalformedKey);
        assert_eq!(NodeKey::from_der(&[0x30, 0x03, 0x02, 0x01]).unwrap_err(), Error::MalformedKey);
        let bad = "-----BEGIN EC PRIVATE KEY-----\n!!!!\n-----END EC PRIVATE KEY-----\n";
        assert_eq!(NodeKey::from_pem(bad.as_bytes()).unwrap_err(), Error::MalformedKey);
    }

    #[cfg_attr(miri, ignore = "P-256 scalar multiplications: minutes each")]
    #[test]
    fn entropy_rules() {
        assert_eq!(NodeKey::from_entropy(&[7u8; 31]).unwrap_err(), Error::InsufficientEntropy);
        assert_eq!(NodeKey::from_entropy(&[0u8; 32]).unwrap_err(), Error::BadEntropy);
        assert_eq!(NodeKey::from_entropy(&[0xffu8; 64]).unwrap_err(), Error::BadEntropy);
        // First chunk out of range, second used.
        let mut e = [0xffu8; 64];
        e[32..].copy_from_slice(&[0x11; 32]);
        let k = NodeKey::from_entropy(&e).unwrap();
        let k2 = NodeKey::from_scalar_bytes(&[0x11; 32]).unwrap();
        assert_eq!(k.public_point(), k2.public_point());
    }

    #[cfg_attr(miri, ignore = "P-256 scalar multiplications: minutes each")]
    #[test]
    fn generate_retries_until_valid() {
        let mut calls = 0;
        let k = NodeKey::generate(|buf| {
            calls += 1;
            buf.fill(if calls < 3 { 0 } else { 0x42 });
            Ok(())
        })
        .unwrap();
        assert_eq!(calls, 3);
        assert_eq!(
            k.public_point(),
            NodeKey::from_scalar_bytes(&[0x42; 32]).unwrap().public_point()
        );
    }

    #[cfg_attr(miri, ignore = "P-256 scalar multiplications: minutes each")]
    #[test]
    fn debug_is_redacted() {
        extern crate std;
        use std::format;
        let key = NodeKey::from_pem(K1_PEM.as_bytes()).unwrap();
        let s = format!("{key:?}");
        assert_eq!(s, "NodeKey(P-256, <redacted>)");
    }

    #[cfg_attr(miri, ignore = "P-256 scalar multiplications: minutes each")]
    #[test]
    fn signature_verifies() {
        use p256::ecdsa::signature::Verifier;
        let key = NodeKey::from_pem(K1_PEM.as_bytes()).unwrap();
        let rs = key.sign(b"hello");
        let sig = Signature::from_slice(&rs).unwrap();
        key.verifying_key().verify(b"hello", &sig).unwrap();
        let der = der_signature(&rs).unwrap();
        assert!(der.as_bytes().len() >= 8);
        assert_eq!(der_signature(&[0u8; 64]).unwrap_err(), Error::SignerFailed);
    }

    #[cfg_attr(miri, ignore = "P-256 scalar multiplications: minutes each")]
    #[test]
    fn pkcs8_with_mismatched_public_key_is_refused() {
        // SEC1 whose embedded public key belongs to another scalar.
        let a = NodeKey::from_scalar_bytes(&[1u8; 32]).unwrap();
        let b = NodeKey::from_scalar_bytes(&[2u8; 32]).unwrap();
        let d = a.key.to_bytes();
        let p = b.public_point();
        let sec1 = sec1::EcPrivateKey {
            private_key: &d[..],
            parameters: Some(sec1::EcParameters::NamedCurve(crate::oid::P256)),
            public_key: Some(&p[..]),
        };
        let mut buf = [0u8; 200];
        let der = sec1.encode_to_slice(&mut buf).unwrap();
        assert_eq!(NodeKey::from_der(der).unwrap_err(), Error::MalformedKey);
    }
}
