//! TPM 2.0 structures an attested join carries, read as the TPM marshals them (TPM 2.0 Library,
//! Part 2: big-endian integers, `TPM2B_*` as a 16-bit size and that many bytes): the certified
//! key's public area ([`Public`], `TPMT_PUBLIC`) and its Name, the attestation a `TPM2_Certify`
//! returns ([`Attest`], `TPMS_ATTEST` of type `TPM_ST_ATTEST_CERTIFY`) and its signature
//! ([`Signature`], `TPMT_SIGNATURE`, ECDSA over P-256 with SHA-256).
//!
//! Only what a P-256 node key and an ECDSA attestation key use is accepted; anything else is a
//! typed [`TpmError`], never a panic, and every structure must be read to its last byte. The
//! signature itself is checked by the caller's verifier over `SHA-256(attest bytes)`.

use core::fmt;

use sha2::{Digest, Sha256};

/// `TPM_GENERATED_VALUE`: the first field of every structure the TPM itself made.
pub const TPM_GENERATED: u32 = 0xff54_4347;
/// `TPM_ST_ATTEST_CERTIFY`.
pub const ST_ATTEST_CERTIFY: u16 = 0x8017;
/// `TPM_ALG_ECC`.
pub const ALG_ECC: u16 = 0x0023;
/// `TPM_ALG_SHA256`.
pub const ALG_SHA256: u16 = 0x000b;
/// `TPM_ALG_ECDSA`.
pub const ALG_ECDSA: u16 = 0x0018;
/// `TPM_ALG_NULL`.
pub const ALG_NULL: u16 = 0x0010;
/// `TPM_ECC_NIST_P256`.
pub const ECC_NIST_P256: u16 = 0x0003;

/// `TPMA_OBJECT` bits ([`Public::attributes`]).
pub mod attr {
    /// The key cannot leave this TPM (not even duplicated).
    pub const FIXED_TPM: u32 = 1 << 1;
    /// The key cannot be duplicated to another parent.
    pub const FIXED_PARENT: u32 = 1 << 4;
    /// The TPM made the private part (it was never outside).
    pub const SENSITIVE_DATA_ORIGIN: u32 = 1 << 5;
    /// A restricted key (an attestation key signs only what the TPM made).
    pub const RESTRICTED: u32 = 1 << 16;
    /// The key decrypts.
    pub const DECRYPT: u32 = 1 << 17;
    /// The key signs.
    pub const SIGN: u32 = 1 << 18;
}

/// Why a TPM structure was refused.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TpmError {
    /// It ends before a field it must have.
    Truncated,
    /// Bytes follow its last field.
    TrailingBytes,
    /// A `TPMS_ATTEST` that does not start with `TPM_GENERATED_VALUE` (the TPM did not make it).
    NotGenerated,
    /// A `TPMS_ATTEST` of another type than `TPM_ST_ATTEST_CERTIFY`.
    NotCertify,
    /// An algorithm, curve or scheme other than ECC P-256, SHA-256 and ECDSA.
    Unsupported,
    /// A field too long for what it holds (a name, a coordinate, a signature value).
    TooLong,
}

impl TpmError {
    /// A stable, lowercase name for logs and events.
    pub fn name(self) -> &'static str {
        match self {
            TpmError::Truncated => "tpm-truncated",
            TpmError::TrailingBytes => "tpm-trailing-bytes",
            TpmError::NotGenerated => "tpm-not-generated",
            TpmError::NotCertify => "tpm-not-certify",
            TpmError::Unsupported => "tpm-unsupported-algorithm",
            TpmError::TooLong => "tpm-field-too-long",
        }
    }
}

impl fmt::Display for TpmError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            TpmError::Truncated => "the TPM structure ends before its last field",
            TpmError::TrailingBytes => "bytes follow the TPM structure's last field",
            TpmError::NotGenerated => "not made by a TPM (no TPM_GENERATED_VALUE)",
            TpmError::NotCertify => "not a TPM2_Certify attestation",
            TpmError::Unsupported => "not ECC P-256 with SHA-256 and ECDSA",
            TpmError::TooLong => "a TPM field is longer than it can be",
        })
    }
}

/// A reader over marshalled bytes.
struct Reader<'a>(&'a [u8]);

impl<'a> Reader<'a> {
    fn take(&mut self, n: usize) -> Result<&'a [u8], TpmError> {
        let (head, rest) = self.0.split_at_checked(n).ok_or(TpmError::Truncated)?;
        self.0 = rest;
        Ok(head)
    }

    fn array<const N: usize>(&mut self) -> Result<[u8; N], TpmError> {
        let (head, rest) = self.0.split_first_chunk::<N>().ok_or(TpmError::Truncated)?;
        self.0 = rest;
        Ok(*head)
    }

    fn u16(&mut self) -> Result<u16, TpmError> {
        self.array().map(u16::from_be_bytes)
    }

    fn u32(&mut self) -> Result<u32, TpmError> {
        self.array().map(u32::from_be_bytes)
    }

    fn u64(&mut self) -> Result<u64, TpmError> {
        self.array().map(u64::from_be_bytes)
    }

    /// A big-endian value of at most 32 bytes (a `TPM2B_ECC_PARAMETER`: leading zeros may be left
    /// out), as 32 bytes.
    fn coordinate(&mut self) -> Result<[u8; 32], TpmError> {
        let v = self.sized(32)?;
        let mut out = [0u8; 32];
        if let Some(tail) = out.get_mut(32 - v.len()..) {
            tail.copy_from_slice(v);
        }
        Ok(out)
    }

    /// A `TPM2B_*`: its size, then that many bytes (at most `max`).
    fn sized(&mut self, max: usize) -> Result<&'a [u8], TpmError> {
        let n = usize::from(self.u16()?);
        if n > max {
            return Err(TpmError::TooLong);
        }
        self.take(n)
    }

    /// An algorithm that must be `want`.
    fn alg(&mut self, want: u16) -> Result<(), TpmError> {
        if self.u16()? == want { Ok(()) } else { Err(TpmError::Unsupported) }
    }

    fn end(&self) -> Result<(), TpmError> {
        if self.0.is_empty() { Ok(()) } else { Err(TpmError::TrailingBytes) }
    }
}

/// What a `TPM2B_*` wrapper holds: its size, then exactly that many bytes.
fn inside_size(bytes: &[u8]) -> Result<&[u8], TpmError> {
    let mut r = Reader(bytes);
    let inner = r.sized(usize::from(u16::MAX))?;
    r.end()?;
    Ok(inner)
}

/// The longest `TPM2B_NAME` (a hash algorithm and a SHA-512 digest).
pub const MAX_NAME: usize = 2 + 64;
/// The longest `TPM2B_DATA` the TPM takes as qualifying data.
pub const MAX_DATA: usize = 64;

/// A P-256 key's public area (`TPMT_PUBLIC`, without the `TPM2B_PUBLIC` size in front).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Public<'a> {
    /// The bytes as marshalled: what the key's Name is the digest of.
    pub bytes: &'a [u8],
    /// `TPMA_OBJECT` ([`attr`]).
    pub attributes: u32,
    /// The policy that authorizes using it (empty when none).
    pub auth_policy: &'a [u8],
    /// The public point, uncompressed SEC1 (`04 || x || y`).
    pub point: [u8; 65],
}

impl<'a> Public<'a> {
    /// Read a `TPMT_PUBLIC` of an ECC P-256 key whose Name algorithm is SHA-256.
    pub fn parse(bytes: &'a [u8]) -> Result<Self, TpmError> {
        let mut r = Reader(bytes);
        r.alg(ALG_ECC)?;
        r.alg(ALG_SHA256)?;
        let attributes = r.u32()?;
        let auth_policy = r.sized(64)?;
        // TPMS_ECC_PARMS: symmetric (a storage key's), scheme, curve, KDF.
        if r.u16()? != ALG_NULL {
            // (keyBits and mode of the symmetric algorithm)
            r.take(4)?;
        }
        match r.u16()? {
            ALG_NULL => {}
            // (the scheme's hash)
            ALG_ECDSA => r.alg(ALG_SHA256)?,
            _ => return Err(TpmError::Unsupported),
        }
        r.alg(ECC_NIST_P256)?;
        r.alg(ALG_NULL)?;
        // TPMS_ECC_POINT: x and y, each at most 32 bytes (leading zeros may be left out).
        let (x, y) = (r.coordinate()?, r.coordinate()?);
        r.end()?;
        let mut point = [4u8; 65];
        let (px, py) = point[1..].split_at_mut(32);
        px.copy_from_slice(&x);
        py.copy_from_slice(&y);
        Ok(Public { bytes, attributes, auth_policy, point })
    }

    /// Read a `TPM2B_PUBLIC` (its size, then the `TPMT_PUBLIC`), as `tpm2_readpublic -o` writes.
    pub fn parse_sized(bytes: &'a [u8]) -> Result<Self, TpmError> {
        Public::parse(inside_size(bytes)?)
    }

    /// The key's Name: `TPM_ALG_SHA256 || SHA-256(TPMT_PUBLIC)`.
    pub fn name(&self) -> [u8; 34] {
        let mut n = [0u8; 34];
        let (alg, digest) = n.split_at_mut(2);
        alg.copy_from_slice(&ALG_SHA256.to_be_bytes());
        digest.copy_from_slice(&Sha256::digest(self.bytes));
        n
    }

    /// All of `bits` are set ([`attr`]).
    pub fn has(&self, bits: u32) -> bool {
        self.attributes & bits == bits
    }
}

/// What `TPM2_Certify` attests (`TPMS_ATTEST` with `TPMS_CERTIFY_INFO`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Attest<'a> {
    /// The Name of the key that signed it (the attestation key), qualified.
    pub qualified_signer: &'a [u8],
    /// The caller's qualifying data (`extraData`): what binds it to one request.
    pub extra_data: &'a [u8],
    /// The TPM's clock (milliseconds), reset and restart counts, and whether the clock is safe.
    pub clock: u64,
    /// `resetCount`.
    pub reset_count: u32,
    /// `restartCount`.
    pub restart_count: u32,
    /// `safe`.
    pub safe: bool,
    /// The TPM's firmware version.
    pub firmware_version: u64,
    /// The Name of the certified object.
    pub name: &'a [u8],
    /// Its qualified Name.
    pub qualified_name: &'a [u8],
}

impl<'a> Attest<'a> {
    /// Read a `TPMS_ATTEST` of type `TPM_ST_ATTEST_CERTIFY` (the bytes the signature covers).
    pub fn parse(bytes: &'a [u8]) -> Result<Self, TpmError> {
        let mut r = Reader(bytes);
        if r.u32()? != TPM_GENERATED {
            return Err(TpmError::NotGenerated);
        }
        if r.u16()? != ST_ATTEST_CERTIFY {
            return Err(TpmError::NotCertify);
        }
        let qualified_signer = r.sized(MAX_NAME)?;
        let extra_data = r.sized(MAX_DATA)?;
        let clock = r.u64()?;
        let reset_count = r.u32()?;
        let restart_count = r.u32()?;
        let [safe] = r.array()?;
        let safe = safe != 0;
        let firmware_version = r.u64()?;
        let name = r.sized(MAX_NAME)?;
        let qualified_name = r.sized(MAX_NAME)?;
        r.end()?;
        Ok(Attest {
            qualified_signer,
            extra_data,
            clock,
            reset_count,
            restart_count,
            safe,
            firmware_version,
            name,
            qualified_name,
        })
    }

    /// Read a `TPM2B_ATTEST` (its size, then the `TPMS_ATTEST`); the `TPMS_ATTEST` bytes too.
    pub fn parse_sized(bytes: &'a [u8]) -> Result<(Self, &'a [u8]), TpmError> {
        let inner = inside_size(bytes)?;
        Ok((Attest::parse(inner)?, inner))
    }
}

/// An ECDSA P-256 signature with SHA-256 (`TPMT_SIGNATURE`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Signature {
    /// `r || s`, each 32 bytes big-endian.
    pub rs: [u8; 64],
}

impl Signature {
    /// Read a `TPMT_SIGNATURE` (`TPM_ALG_ECDSA`, `TPM_ALG_SHA256`, then r and s).
    pub fn parse(bytes: &[u8]) -> Result<Self, TpmError> {
        let mut r = Reader(bytes);
        r.alg(ALG_ECDSA)?;
        r.alg(ALG_SHA256)?;
        let (sr, ss) = (r.coordinate()?, r.coordinate()?);
        r.end()?;
        let mut rs = [0u8; 64];
        let (a, b) = rs.split_at_mut(32);
        a.copy_from_slice(&sr);
        b.copy_from_slice(&ss);
        Ok(Signature { rs })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    // Made by swtpm and tpm2-tools (tests/data/tpm/make.sh); tests/tpm.rs checks the signature
    // with Python's cryptography.
    const KEY_PUB: &[u8] = include_bytes!("../tests/data/tpm/key.pub");
    const KEY_NAME: &[u8] = include_bytes!("../tests/data/tpm/key.name");
    const ATTEST: &[u8] = include_bytes!("../tests/data/tpm/attest.out");
    const SIG: &[u8] = include_bytes!("../tests/data/tpm/sig.out");

    #[test]
    fn reads_what_the_tpm_wrote() {
        let key = Public::parse_sized(KEY_PUB).unwrap();
        assert_eq!(key.name().as_slice(), KEY_NAME);
        let a = Attest::parse(ATTEST).unwrap();
        assert_eq!(a.name, KEY_NAME);
        assert!(Signature::parse(SIG).is_ok());
        // Wrapped in its size, the same.
        let mut sized = [0u8; 2 + 145];
        sized[..2].copy_from_slice(&(ATTEST.len() as u16).to_be_bytes());
        sized[2..2 + ATTEST.len()].copy_from_slice(ATTEST);
        let (b, inner) = Attest::parse_sized(&sized[..2 + ATTEST.len()]).unwrap();
        assert_eq!((b, inner), (a, ATTEST));
    }

    #[test]
    fn every_cut_is_refused() {
        for n in 0..ATTEST.len() {
            assert!(Attest::parse(&ATTEST[..n]).is_err());
        }
        for n in 0..KEY_PUB.len() {
            assert!(Public::parse_sized(&KEY_PUB[..n]).is_err());
        }
        for n in 0..SIG.len() {
            assert_eq!(Signature::parse(&SIG[..n]), Err(TpmError::Truncated));
        }
    }
}
