//! kubeadm CA pins (`--discovery-token-ca-cert-hash`): `sha256:<64 lower-case hex>`, the SHA-256
//! of the CA certificate's SubjectPublicKeyInfo DER exactly as it appears in the certificate
//! (not of the whole certificate).
//!
//! Parsing follows kubeadm's `pubkeypin.Set.Allow`: split on `:` into exactly two parts, the
//! format is compared case-insensitively with `sha256`, the hex (either case) must decode to
//! exactly 32 bytes. Any failure is [`Error::InvalidPin`].

use core::fmt;
use core::str::FromStr;

use sha2::{Digest, Sha256};

use crate::error::{Error, Result};
use crate::pem::PemBlocks;

/// The length of a pin's text form: `sha256:` and 64 hex digits.
pub const PIN_TEXT_LEN: usize = 7 + 64;

/// A SHA-256 pin of a CA's public key.
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct CaPin([u8; 32]);

impl CaPin {
    /// Parse `sha256:<hex>` as kubeadm does (upper-case hex and `SHA256:` are accepted).
    pub fn parse(text: &str) -> Result<CaPin> {
        let mut parts = text.split(':');
        let (Some(format), Some(hex), None) = (parts.next(), parts.next(), parts.next()) else {
            return Err(Error::InvalidPin);
        };
        if !format.eq_ignore_ascii_case("sha256") || hex.len() != 64 {
            return Err(Error::InvalidPin);
        }
        let mut out = [0u8; 32];
        for (byte, pair) in out.iter_mut().zip(hex.as_bytes().chunks_exact(2)) {
            let (Some(hi), Some(lo)) =
                (pair.first().and_then(|c| nibble(*c)), pair.get(1).and_then(|c| nibble(*c)))
            else {
                return Err(Error::InvalidPin);
            };
            *byte = hi << 4 | lo;
        }
        Ok(CaPin(out))
    }

    /// The pin of a SubjectPublicKeyInfo DER (hashed as given).
    pub fn from_spki_der(spki: &[u8]) -> CaPin {
        CaPin(Sha256::digest(spki).into())
    }

    /// The pin of a certificate (DER): the hash of its SubjectPublicKeyInfo bytes.
    ///
    /// Only the framing up to the SubjectPublicKeyInfo is read; a certificate whose framing does
    /// not parse is [`Error::Malformed`].
    pub fn from_cert_der(cert: &[u8]) -> Result<CaPin> {
        let spki = crate::verify::cert_spki(cert).map_err(|_| Error::Malformed)?;
        Ok(CaPin::from_spki_der(spki))
    }

    /// The raw 32-byte SHA-256 value.
    pub fn as_bytes(&self) -> &[u8; 32] {
        &self.0
    }

    /// Write the text form `sha256:<64 lower-case hex>` into a fixed string.
    pub fn to_text(&self) -> heapless::String<PIN_TEXT_LEN> {
        let mut s = heapless::String::new();
        let _ = fmt::Write::write_fmt(&mut s, format_args!("{self}"));
        s
    }
}

fn nibble(c: u8) -> Option<u8> {
    match c {
        b'0'..=b'9' => Some(c - b'0'),
        b'a'..=b'f' => Some(c - b'a' + 10),
        b'A'..=b'F' => Some(c - b'A' + 10),
        _ => None,
    }
}

impl fmt::Display for CaPin {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("sha256:")?;
        for b in self.0 {
            write!(f, "{b:02x}")?;
        }
        Ok(())
    }
}

impl fmt::Debug for CaPin {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "CaPin({self})")
    }
}

impl FromStr for CaPin {
    type Err = Error;
    fn from_str(s: &str) -> Result<CaPin> {
        CaPin::parse(s)
    }
}

/// The pin of a certificate given as DER (same as [`CaPin::from_cert_der`]).
pub fn pin_of_cert_der(cert: &[u8]) -> Result<CaPin> {
    CaPin::from_cert_der(cert)
}

/// Iterator over the pins of every `CERTIFICATE` block of a PEM bundle (for `kubeboot ca-hash`).
/// Other blocks are skipped. Each certificate is decoded into the caller's scratch buffer, which
/// must hold the largest certificate (4 KiB is ample for CA certificates;
/// [`crate::verify::MAX_CERT_LEN`] covers anything accepted elsewhere).
pub struct PemPins<'a, 's> {
    blocks: PemBlocks<'a>,
    scratch: &'s mut [u8],
}

/// The pins of every `CERTIFICATE` in `bundle`, in order; see [`PemPins`].
pub fn pins_of_pem<'a, 's>(bundle: &'a [u8], scratch: &'s mut [u8]) -> PemPins<'a, 's> {
    PemPins { blocks: crate::pem::blocks(bundle), scratch }
}

impl Iterator for PemPins<'_, '_> {
    type Item = Result<CaPin>;

    fn next(&mut self) -> Option<Result<CaPin>> {
        loop {
            let block = match self.blocks.next()? {
                Ok(b) => b,
                Err(e) => return Some(Err(e)),
            };
            if block.label != "CERTIFICATE" {
                continue;
            }
            return Some(block.decode(self.scratch).and_then(CaPin::from_cert_der));
        }
    }
}

/// Succeeds when the public key of any of the CA certificates (DER) is pinned, as kubeadm's
/// `CheckAny`; else [`Error::PinMismatch`] (also when `pins` or `cas` is empty). A certificate
/// whose framing does not parse is [`Error::Malformed`].
pub fn check_any(pins: &[CaPin], cas: &[&[u8]]) -> Result<()> {
    let mut result = Err(Error::PinMismatch);
    for cert in cas {
        let pin = CaPin::from_cert_der(cert)?;
        if pins.contains(&pin) {
            result = Ok(());
        }
    }
    result
}

/// [`check_any`] over the `CERTIFICATE` blocks of a PEM bundle, decoding each into `scratch`
/// (see [`PemPins`]). A bundle without any certificate is [`Error::Malformed`].
pub fn check_any_pem(pins: &[CaPin], ca_pem: &[u8], scratch: &mut [u8]) -> Result<()> {
    let mut seen = false;
    let mut result = Err(Error::PinMismatch);
    for pin in pins_of_pem(ca_pem, scratch) {
        let pin = pin?;
        seen = true;
        if pins.contains(&pin) {
            result = Ok(());
        }
    }
    if seen { result } else { Err(Error::Malformed) }
}

#[cfg(test)]
mod tests {
    use super::*;

    const VECTOR: &str = "sha256:345959acb2c3b2feb87d281961c893f62a314207ef02599f1cc4a5fb255480b3";

    #[test]
    fn parse_like_kubeadm() {
        let pin = CaPin::parse(VECTOR).unwrap();
        assert_eq!(pin.to_text().as_str(), VECTOR);
        let upper = VECTOR.to_ascii_uppercase();
        assert_eq!(CaPin::parse(&upper).unwrap(), pin);
        let hex = VECTOR.strip_prefix("sha256:").unwrap();
        let mut doubled: heapless::String<200> = heapless::String::new();
        doubled.push_str(VECTOR).unwrap();
        doubled.push_str(hex).unwrap();
        for bad in [
            "xyz",
            "0011223344",
            "sha256:0011223344",
            doubled.as_str(),
            hex,
            "md5:345959acb2c3b2feb87d281961c893f62a314207ef02599f1cc4a5fb255480b3",
            "sha256:345959acb2c3b2feb87d281961c893f62a314207ef02599f1cc4a5fb255480bg",
            "sha256:345959acb2c3b2feb87d281961c893f62a314207ef02599f1cc4a5fb255480b3:",
            "sha256:+45959acb2c3b2feb87d281961c893f62a314207ef02599f1cc4a5fb255480b3",
            "",
        ] {
            assert_eq!(CaPin::parse(bad), Err(Error::InvalidPin), "{bad}");
        }
    }

    #[test]
    fn check_any_needs_a_match() {
        let pin = CaPin::parse(VECTOR).unwrap();
        assert_eq!(check_any(&[pin], &[]), Err(Error::PinMismatch));
        assert_eq!(check_any(&[pin], &[&[0x30, 0x00]]), Err(Error::Malformed));
    }

    /// The certificate's frame is checked as Go's `x509.ParseCertificate` checks it (Go 1.26 on
    /// these two edits of kubeadm's pin vector: "inner and outer signature algorithm identifiers
    /// don't match", "malformed signature"); the long jws_discovery fuzz run found a CA whose
    /// signatureValue tag had been mangled and which was still pinned.
    #[test]
    fn the_certificate_frame_is_checked() {
        let pin = CaPin::parse(VECTOR).unwrap();
        let mut buf = [0u8; 1024];
        let n = crate::pem::decode_first(
            include_bytes!("../tests/data/pin_test.crt"),
            "CERTIFICATE",
            &mut buf,
        )
        .unwrap()
        .len();
        let der = &buf[..n];
        assert_eq!(check_any(&[pin], &[der]), Ok(()));
        // Offsets from `openssl asn1parse`: the outer signatureAlgorithm's OID ends at 576, the
        // signatureValue BIT STRING starts at 579.
        assert_eq!(der[579], 0x03);
        let mut alg = [0u8; 1024];
        alg[..n].copy_from_slice(der);
        alg[576] ^= 1;
        assert_eq!(check_any(&[pin], &[&alg[..n]]), Err(Error::Malformed));
        let mut sig = [0u8; 1024];
        sig[..n].copy_from_slice(der);
        sig[579] = 0x63;
        assert_eq!(check_any(&[pin], &[&sig[..n]]), Err(Error::Malformed));
    }
}
