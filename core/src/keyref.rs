//! Node keys held by a device, and the references that name them.
//!
//! A node key may live in software (the kubelet's way: the `EC PRIVATE KEY` PEM sits in the
//! cert dir) or in a device it never leaves: a PKCS#11 token or a TPM 2.0. Then the cert dir,
//! the key cache and the node kubeconfig hold a *reference* to it in the key's place, as a PEM
//! block other tools read too:
//!
//! * `TSS2 PRIVATE KEY`: a TPM key blob (public area and private area, the latter encrypted by
//!   the TPM's storage key), the format of tpm2-openssl, `tpm2_encodeobject` and
//!   `tpm2_load -r`; only the TPM that made it can load it;
//! * `PKCS#11 PROVIDER URI`: an RFC 7512 `pkcs11:` URI naming the token and the object, in the
//!   container of OpenSSL's pkcs11-provider (`SEQUENCE { VisibleString "PKCS#11 Provider URI
//!   v1.0", UTF8String uri }`), so that `openssl -provider pkcs11 -key FILE` opens the same key.
//!
//! A device is named by a [`Device`] (`tpm` or a `pkcs11:` URI of the token), and a PKCS#11 URI
//! is checked by [`Pkcs11Uri::parse`]: an attribute RFC 7512 does not define, a duplicated one,
//! or a PIN written into the URI (`pin-value`) is [`Error::InvalidKeyReference`] — the PIN comes
//! from a file (`pin-source`), never from a command line or a reference on disk.
//!
//! Everything here reads and writes caller buffers; nothing allocates.

use crate::error::{Error, Result};
use crate::out::{Sink, write_measured};
use crate::pem;

/// PEM label of a TPM 2.0 key blob.
pub const LABEL_TSS2: &str = "TSS2 PRIVATE KEY";
/// PEM label of a PKCS#11 URI reference (OpenSSL pkcs11-provider's).
pub const LABEL_PKCS11_URI: &str = "PKCS#11 PROVIDER URI";
/// The description pkcs11-provider writes into the container.
pub const PKCS11_URI_DESC: &str = "PKCS#11 Provider URI v1.0";
/// Longest `pkcs11:` URI accepted.
pub const MAX_PKCS11_URI: usize = 1024;
/// Longest device name ([`Device`] text) accepted.
pub const MAX_DEVICE: usize = MAX_PKCS11_URI;
/// Largest key reference (PEM) kept: a P-256 TSS2 blob is about 400 bytes, a URI container at
/// most about 1,450.
pub const MAX_KEY_REF: usize = 1536;

/// Who holds a node key.
#[non_exhaustive]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Holder {
    /// The key itself is in the file (`EC PRIVATE KEY`, `PRIVATE KEY`).
    Software,
    /// A TPM 2.0 (`TSS2 PRIVATE KEY`).
    Tpm,
    /// A PKCS#11 token (`PKCS#11 PROVIDER URI`).
    Pkcs11,
}

impl Holder {
    /// `software`, `tpm`, `pkcs11`.
    pub fn as_str(self) -> &'static str {
        match self {
            Holder::Software => "software",
            Holder::Tpm => "tpm",
            Holder::Pkcs11 => "pkcs11",
        }
    }

    /// The holder of a key PEM block with this label, if it is a key (or a key reference).
    pub fn of_label(label: &str) -> Option<Holder> {
        match label {
            LABEL_TSS2 => Some(Holder::Tpm),
            LABEL_PKCS11_URI => Some(Holder::Pkcs11),
            "PRIVATE KEY" => Some(Holder::Software),
            l if l.ends_with(" PRIVATE KEY") => Some(Holder::Software),
            _ => None,
        }
    }

    /// The holder of the first key block in `pem` ([`Error::MalformedKey`] if there is none).
    pub fn of_pem(pem: &[u8]) -> Result<Holder> {
        for block in pem::blocks(pem) {
            let block = block.map_err(|_| Error::MalformedKey)?;
            if let Some(h) = Holder::of_label(block.label) {
                return Ok(h);
            }
        }
        Err(Error::MalformedKey)
    }
}

/// Whether a PEM label is a private key or a key reference (a block that stands for the key in
/// a pair file).
pub fn is_key_label(label: &str) -> bool {
    Holder::of_label(label).is_some()
}

/// Where new node keys are made: `tpm` (or `tpm:`) or a `pkcs11:` URI naming the token, its
/// module and its PIN file, without an object (each key gets its own, named by the agent).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Device<'a> {
    /// The TPM (its TCTI is the front-end's setting, as for tpm2-tools).
    Tpm,
    /// A PKCS#11 token.
    Pkcs11(Pkcs11Uri<'a>),
}

impl<'a> Device<'a> {
    /// Read a device name. A PKCS#11 device needs `token=` and `module-path=`, and may not name
    /// an object (`object`, `id`, `type`): [`Error::InvalidKeyReference`] otherwise.
    pub fn parse(text: &'a str) -> Result<Self> {
        if text == "tpm" || text == "tpm:" {
            return Ok(Device::Tpm);
        }
        let uri = Pkcs11Uri::parse(text)?;
        if uri.token.is_none()
            || uri.module_path.is_none()
            || uri.object.is_some()
            || uri.id.is_some()
            || uri.object_type.is_some()
        {
            return Err(Error::InvalidKeyReference);
        }
        Ok(Device::Pkcs11(uri))
    }

    /// Who holds the keys this device makes.
    pub fn holder(&self) -> Holder {
        match self {
            Device::Tpm => Holder::Tpm,
            Device::Pkcs11(_) => Holder::Pkcs11,
        }
    }
}

/// An RFC 7512 PKCS#11 URI, checked: every attribute is one the RFC defines, none twice, no
/// `pin-value`. Values are kept as written (percent-encoded); [`decode_value`] decodes one.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Pkcs11Uri<'a> {
    /// The whole URI.
    pub text: &'a str,
    /// `token=` (the token label).
    pub token: Option<&'a str>,
    /// `manufacturer=` (the token's).
    pub manufacturer: Option<&'a str>,
    /// `model=` (the token's).
    pub model: Option<&'a str>,
    /// `serial=` (the token's).
    pub serial: Option<&'a str>,
    /// `object=` (`CKA_LABEL`).
    pub object: Option<&'a str>,
    /// `id=` (`CKA_ID`, percent-encoded bytes).
    pub id: Option<&'a str>,
    /// `type=` (`public`, `private`, `cert`, `secret-key`, `data`).
    pub object_type: Option<&'a str>,
    /// `slot-id=` (decimal).
    pub slot_id: Option<&'a str>,
    /// `module-path=` (the PKCS#11 module to load).
    pub module_path: Option<&'a str>,
    /// `module-name=`.
    pub module_name: Option<&'a str>,
    /// `pin-source=` (a file holding the user PIN; `file:` URIs and plain paths).
    pub pin_source: Option<&'a str>,
}

impl<'a> Pkcs11Uri<'a> {
    /// Check `text` as a PKCS#11 URI ([`Error::InvalidKeyReference`] when it is not one we can
    /// use: not `pkcs11:`, an unknown or repeated attribute, an empty name, a bad percent
    /// escape, `pin-value`, a `type` outside the RFC's list, over [`MAX_PKCS11_URI`] bytes).
    pub fn parse(text: &'a str) -> Result<Self> {
        let bad = Error::InvalidKeyReference;
        let rest = text.strip_prefix("pkcs11:").ok_or(bad)?;
        if text.len() > MAX_PKCS11_URI {
            return Err(bad);
        }
        let (path, query) = match rest.split_once('?') {
            Some((p, q)) => (p, Some(q)),
            None => (rest, None),
        };
        let mut u = Pkcs11Uri { text, ..Pkcs11Uri::default() };
        for attr in path.split(';').filter(|a| !a.is_empty()) {
            let (name, value) = attr.split_once('=').ok_or(bad)?;
            check_value(value)?;
            let slot = match name {
                "token" => &mut u.token,
                "manufacturer" => &mut u.manufacturer,
                "model" => &mut u.model,
                "serial" => &mut u.serial,
                "object" => &mut u.object,
                "id" => &mut u.id,
                "type" => &mut u.object_type,
                "slot-id" => &mut u.slot_id,
                // Defined by the RFC; kubeboot does not select by them, but they are not wrong.
                "library-manufacturer"
                | "library-description"
                | "library-version"
                | "slot-manufacturer"
                | "slot-description" => continue,
                _ => return Err(bad),
            };
            if slot.replace(value).is_some() {
                return Err(bad);
            }
        }
        for attr in query.into_iter().flat_map(|q| q.split('&')).filter(|a| !a.is_empty()) {
            let (name, value) = attr.split_once('=').ok_or(bad)?;
            check_value(value)?;
            let slot = match name {
                "module-path" => &mut u.module_path,
                "module-name" => &mut u.module_name,
                "pin-source" => &mut u.pin_source,
                // A PIN is never written into a reference or a command line.
                _ => return Err(bad),
            };
            if slot.replace(value).is_some() {
                return Err(bad);
            }
        }
        if let Some(t) = u.object_type {
            if !matches!(t, "public" | "private" | "cert" | "secret-key" | "data") {
                return Err(bad);
            }
        }
        if u.slot_id.is_some_and(|s| s.is_empty() || !s.bytes().all(|b| b.is_ascii_digit())) {
            return Err(bad);
        }
        Ok(u)
    }
}

/// `value` is made of RFC 3986 unreserved / sub-delims / `:` `@` `/` characters and valid
/// `%XX` escapes.
fn check_value(value: &str) -> Result<()> {
    decode_each(value, |_| Ok(()))
}

fn hex_digit(c: u8) -> Option<u8> {
    match c {
        b'0'..=b'9' => Some(c - b'0'),
        b'a'..=b'f' => Some(c - b'a' + 10),
        b'A'..=b'F' => Some(c - b'A' + 10),
        _ => None,
    }
}

/// Each decoded byte of a percent-encoded value, checked (RFC 3986 unreserved, sub-delims,
/// `:` `@` `/` `|`, and valid `%XX` escapes).
fn decode_each(value: &str, mut each: impl FnMut(u8) -> Result<()>) -> Result<()> {
    let mut bytes = value.bytes();
    while let Some(c) = bytes.next() {
        let byte = match c {
            b'%' => {
                let hi = bytes.next().and_then(hex_digit);
                let lo = bytes.next().and_then(hex_digit);
                match (hi, lo) {
                    (Some(h), Some(l)) => h << 4 | l,
                    _ => return Err(Error::InvalidKeyReference),
                }
            }
            c if c.is_ascii_alphanumeric() || b"-._~!$'()*+,:@/|".contains(&c) => c,
            _ => return Err(Error::InvalidKeyReference),
        };
        each(byte)?;
    }
    Ok(())
}

/// Decode a percent-encoded attribute value into `buf`.
pub fn decode_value<'b>(value: &str, buf: &'b mut [u8]) -> Result<&'b [u8]> {
    let mut n = 0;
    let needed = value.len();
    decode_each(value, |byte| {
        *buf.get_mut(n).ok_or(Error::BufferTooSmall { needed })? = byte;
        n += 1;
        Ok(())
    })?;
    buf.get(..n).ok_or(Error::BufferTooSmall { needed })
}

/// Write `pkcs11:<token attributes>;object=<label>;id=<id, percent-encoded>;type=private?<query>`
/// into `buf`: the URI of the private key `label` / `id` made in the token `device` names.
pub fn write_key_uri(
    device: &Pkcs11Uri<'_>,
    label: &str,
    id: &[u8],
    buf: &mut [u8],
) -> Result<usize> {
    const HEX: &[u8; 16] = b"0123456789abcdef";
    let text = device.text.strip_prefix("pkcs11:").unwrap_or(device.text);
    let (path, query) = match text.split_once('?') {
        Some((p, q)) => (p, Some(q)),
        None => (text, None),
    };
    let path = path.trim_end_matches(';');
    let escape = |sink: &mut dyn Sink, c: u8| {
        let digit = |n: u8| HEX.get(usize::from(n & 15)).copied().unwrap_or(b'0');
        sink.put(&[b'%', digit(c >> 4), digit(c)]);
    };
    let n = write_measured(buf, |sink| {
        sink.put(b"pkcs11:");
        sink.put(path.as_bytes());
        if !path.is_empty() {
            sink.put(b";");
        }
        sink.put(b"object=");
        for c in label.bytes() {
            if c.is_ascii_alphanumeric() || b"-._~".contains(&c) {
                sink.put(&[c]);
            } else {
                escape(sink, c);
            }
        }
        sink.put(b";id=");
        for c in id {
            escape(sink, *c);
        }
        sink.put(b";type=private");
        if let Some(q) = query {
            sink.put(b"?");
            sink.put(q.as_bytes());
        }
        Ok(())
    })?;
    let written = buf.get(..n).ok_or(Error::Malformed)?;
    Pkcs11Uri::parse(core::str::from_utf8(written).map_err(|_| Error::Malformed)?)?;
    Ok(n)
}

/// A DER writer into a fixed array (a short one is [`Error::TooLarge`]).
struct DerOut<const M: usize> {
    bytes: [u8; M],
    at: usize,
}

impl<const M: usize> DerOut<M> {
    const fn new() -> Self {
        DerOut { bytes: [0u8; M], at: 0 }
    }

    fn put(&mut self, b: &[u8]) -> Result<()> {
        let end = self.at.checked_add(b.len()).ok_or(Error::TooLarge)?;
        self.bytes.get_mut(self.at..end).ok_or(Error::TooLarge)?.copy_from_slice(b);
        self.at = end;
        Ok(())
    }

    /// A TLV with a short or long (up to two bytes) definite length.
    fn tlv(&mut self, tag: u8, len: usize) -> Result<()> {
        let l = u16::try_from(len).map_err(|_| Error::TooLarge)?.to_be_bytes();
        match len {
            0..=0x7f => self.put(&[tag, l[1]]),
            0x80..=0xff => self.put(&[tag, 0x81, l[1]]),
            _ => self.put(&[tag, 0x82, l[0], l[1]]),
        }
    }

    fn der(&self) -> &[u8] {
        self.bytes.get(..self.at).unwrap_or(&[])
    }
}

/// Bytes a TLV of `len` content bytes takes.
fn tlv_len(len: usize) -> usize {
    len + match len {
        0..=0x7f => 2,
        0x80..=0xff => 3,
        _ => 4,
    }
}

/// `id-loadablekey` (2.23.133.10.1.3), the TSS2 PRIVATE KEY type of a key to `TPM2_Load`.
const OID_LOADABLE_KEY: [u8; 6] = [0x67, 0x81, 0x05, 0x0a, 0x01, 0x03];
/// The owner hierarchy's handle: the key's parent is the storage key made there from the fixed
/// template (tpm2-openssl's convention for `parent`).
pub const TPM_RH_OWNER: u32 = 0x4000_0001;

/// A TPM key blob (`TSS2 PRIVATE KEY`): `SEQUENCE { type OID, emptyAuth [0] BOOLEAN OPTIONAL,
/// parent INTEGER, pubkey OCTET STRING, privkey OCTET STRING }`, the loadable-key type only.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Tss2<'a> {
    /// The key has no authorization value.
    pub empty_auth: bool,
    /// The parent's handle (`TPM_RH_OWNER`: the storage key from the fixed template).
    pub parent: u32,
    /// `TPM2B_PUBLIC`, as the TPM marshals it.
    pub public: &'a [u8],
    /// `TPM2B_PRIVATE` (encrypted and integrity-protected by the parent).
    pub private: &'a [u8],
}

impl<'a> Tss2<'a> {
    /// Read the DER of a `TSS2 PRIVATE KEY` block ([`Error::MalformedKey`] for anything else,
    /// [`Error::UnsupportedKey`] for another key type such as an importable key).
    pub fn from_der(der: &'a [u8]) -> Result<Self> {
        fn take<'b>(rest: &mut &'b [u8], want: u8) -> Result<&'b [u8]> {
            let (t, v, r) = tlv(rest).ok_or(Error::MalformedKey)?;
            if t != want {
                return Err(Error::MalformedKey);
            }
            *rest = r;
            Ok(v)
        }
        let mut all = der;
        let mut rest = take(&mut all, 0x30)?;
        if !all.is_empty() {
            return Err(Error::MalformedKey);
        }
        if take(&mut rest, 0x06)? != OID_LOADABLE_KEY {
            return Err(Error::UnsupportedKey);
        }
        let mut empty_auth = false;
        if tlv(rest).is_some_and(|t| t.0 == 0xa0) {
            // A BER boolean: tpm2-openssl writes TRUE as 0x01, DER (and we) as 0xff.
            empty_auth = match take(&mut rest, 0xa0)? {
                [0x01, 0x01, 0x00] => false,
                [0x01, 0x01, _] => true,
                _ => return Err(Error::MalformedKey),
            };
        }
        let parent = match take(&mut rest, 0x02)? {
            [0x00, rest @ ..] if rest.len() == 4 && rest.first().is_some_and(|b| *b >= 0x80) => {
                rest
            }
            p if p.len() <= 4 && p.first().is_some_and(|b| *b < 0x80) => p,
            _ => return Err(Error::MalformedKey),
        };
        let parent = parent.iter().fold(0u32, |a, b| a << 8 | u32::from(*b));
        let public = take(&mut rest, 0x04)?;
        let private = take(&mut rest, 0x04)?;
        if !rest.is_empty() || public.is_empty() || private.is_empty() {
            return Err(Error::MalformedKey);
        }
        Ok(Tss2 { empty_auth, parent, public, private })
    }

    /// The first `TSS2 PRIVATE KEY` block of `pem`, decoded into `scratch`.
    pub fn from_pem(pem: &[u8], scratch: &'a mut [u8]) -> Result<Self> {
        let der = match pem::decode_first(pem, LABEL_TSS2, scratch) {
            Ok(d) => d,
            Err(Error::BufferTooSmall { needed }) => return Err(Error::BufferTooSmall { needed }),
            Err(_) => return Err(Error::MalformedKey),
        };
        Tss2::from_der(der)
    }

    /// Write this blob as a `TSS2 PRIVATE KEY` PEM into `buf` (emptyAuth written when true).
    pub fn write_pem(&self, buf: &mut [u8]) -> Result<usize> {
        let p = self.parent.to_be_bytes();
        // The shortest two's-complement INTEGER of the handle (a leading 0 when the top bit is
        // set, as the owner hierarchy's 0x40000001 does not need).
        let skip = p.iter().take(3).take_while(|b| **b == 0).count();
        let digits = p.get(skip..).unwrap_or(&p);
        let pad = digits.first().is_some_and(|b| *b >= 0x80);
        let int_len = digits.len() + usize::from(pad);
        let auth: &[u8] = if self.empty_auth { &[0xa0, 0x03, 0x01, 0x01, 0xff] } else { &[] };
        let content = tlv_len(OID_LOADABLE_KEY.len())
            + auth.len()
            + tlv_len(int_len)
            + tlv_len(self.public.len())
            + tlv_len(self.private.len());
        let mut der = DerOut::<MAX_KEY_REF>::new();
        der.tlv(0x30, content)?;
        der.tlv(0x06, OID_LOADABLE_KEY.len())?;
        der.put(&OID_LOADABLE_KEY)?;
        der.put(auth)?;
        der.tlv(0x02, int_len)?;
        if pad {
            der.put(&[0])?;
        }
        der.put(digits)?;
        der.tlv(0x04, self.public.len())?;
        der.put(self.public)?;
        der.tlv(0x04, self.private.len())?;
        der.put(self.private)?;
        pem::encode(LABEL_TSS2, der.der(), buf)
    }
}

/// Check a key block the way a pair file's reader needs it: a software key parses as a P-256
/// key, a TPM blob as a [`Tss2`], a PKCS#11 reference as a [`Pkcs11Uri`] container. Returns
/// who holds the key (a device key's match with its certificate is the device's to tell).
pub fn check_key_pem(pem: &[u8]) -> Result<Holder> {
    let holder = Holder::of_pem(pem)?;
    let mut scratch = [0u8; MAX_KEY_REF];
    match holder {
        Holder::Software => crate::key::NodeKey::from_pem(pem).map(|_| ())?,
        Holder::Tpm => Tss2::from_pem(pem, &mut scratch).map(|_| ())?,
        Holder::Pkcs11 => pkcs11_uri_of(pem, &mut scratch).map(|_| ())?,
    }
    Ok(holder)
}

/// The `PKCS#11 PROVIDER URI` PEM of `uri` (checked with [`Pkcs11Uri::parse`]) into `buf`.
pub fn write_pkcs11_uri_pem(uri: &str, buf: &mut [u8]) -> Result<usize> {
    Pkcs11Uri::parse(uri)?;
    let mut der = DerOut::<{ MAX_PKCS11_URI + 64 }>::new();
    der.tlv(0x30, tlv_len(PKCS11_URI_DESC.len()) + tlv_len(uri.len()))?;
    der.tlv(0x1a, PKCS11_URI_DESC.len())?; // VisibleString
    der.put(PKCS11_URI_DESC.as_bytes())?;
    der.tlv(0x0c, uri.len())?; // UTF8String
    der.put(uri.as_bytes())?;
    pem::encode(LABEL_PKCS11_URI, der.der(), buf)
}

/// The URI inside the first `PKCS#11 PROVIDER URI` block of `pem`, decoded into `scratch`
/// (checked with [`Pkcs11Uri::parse`]). [`Error::MalformedKey`] when the block is missing or is
/// not the container; [`Error::InvalidKeyReference`] when the URI is not one we use.
pub fn pkcs11_uri_of<'s>(pem: &[u8], scratch: &'s mut [u8]) -> Result<&'s str> {
    let der = match pem::decode_first(pem, LABEL_PKCS11_URI, scratch) {
        Ok(d) => d,
        Err(Error::BufferTooSmall { needed }) => return Err(Error::BufferTooSmall { needed }),
        Err(_) => return Err(Error::MalformedKey),
    };
    let uri = container_uri(der).ok_or(Error::MalformedKey)?;
    let uri = core::str::from_utf8(uri).map_err(|_| Error::MalformedKey)?;
    Pkcs11Uri::parse(uri)?;
    Ok(uri)
}

/// One TLV at the front of `b`: (tag, content, rest), DER definite lengths up to two bytes.
fn tlv(b: &[u8]) -> Option<(u8, &[u8], &[u8])> {
    let (&tag, b) = b.split_first()?;
    let (&first, b) = b.split_first()?;
    let (len, b): (usize, &[u8]) = match first {
        0..=0x7f => (usize::from(first), b),
        0x81 => {
            let (&l, b) = b.split_first()?;
            (l >= 0x80).then_some((usize::from(l), b))?
        }
        0x82 => {
            let (l, b) = b.split_at_checked(2)?;
            let l = usize::from(*l.first()?) << 8 | usize::from(*l.get(1)?);
            (l >= 0x100).then_some((l, b))?
        }
        _ => return None,
    };
    let (content, rest) = b.split_at_checked(len)?;
    Some((tag, content, rest))
}

/// `SEQUENCE { VisibleString desc, UTF8String uri }` exactly: the uri.
fn container_uri(der: &[u8]) -> Option<&[u8]> {
    let (tag, body, rest) = tlv(der)?;
    if tag != 0x30 || !rest.is_empty() {
        return None;
    }
    let (t1, desc, body) = tlv(body)?;
    if t1 != 0x1a || !desc.iter().all(|c| (0x20..0x7f).contains(c)) {
        return None;
    }
    let (t2, uri, rest) = tlv(body)?;
    (t2 == 0x0c && rest.is_empty()).then_some(uri)
}

#[cfg(test)]
mod tests {
    use super::*;

    const DEVICE: &str = "pkcs11:token=kubeboot;manufacturer=SoftHSM%20project?module-path=/usr/lib/softhsm/libsofthsm2.so&pin-source=/etc/kubeboot/pin";

    #[test]
    fn parses_the_rfc_attributes() {
        let u = Pkcs11Uri::parse(DEVICE).unwrap();
        assert_eq!(u.token, Some("kubeboot"));
        assert_eq!(u.manufacturer, Some("SoftHSM%20project"));
        assert_eq!(u.module_path, Some("/usr/lib/softhsm/libsofthsm2.so"));
        assert_eq!(u.pin_source, Some("/etc/kubeboot/pin"));
        let mut buf = [0u8; 64];
        assert_eq!(decode_value(u.manufacturer.unwrap(), &mut buf).unwrap(), b"SoftHSM project");
        assert!(matches!(Device::parse(DEVICE), Ok(Device::Pkcs11(_))));
        assert_eq!(Device::parse("tpm"), Ok(Device::Tpm));
        assert_eq!(Device::parse("tpm:"), Ok(Device::Tpm));
    }

    #[test]
    fn refuses_what_it_cannot_use() {
        for bad in [
            "pkcs11:token=a;colour=blue",
            "pkcs11:token=a;token=b",
            "pkcs11:token=a?pin-value=1234",
            "pkcs11:token=a?module-path=/x&module-path=/y",
            "pkcs11:token=a;type=secret",
            "pkcs11:token=a%2",
            "pkcs11:token=a b",
            "pkcs11:token",
            "pkcs11:slot-id=x1",
            "pkcs12:token=a",
            "tpm:/var/lib/node.pem",
        ] {
            assert_eq!(Device::parse(bad), Err(Error::InvalidKeyReference), "{bad}");
        }
        // A device names the token and its module, never an object.
        for bad in [
            "pkcs11:token=a",
            "pkcs11:token=a;object=k?module-path=/m.so",
            "pkcs11:?module-path=/m.so",
        ] {
            assert_eq!(Device::parse(bad), Err(Error::InvalidKeyReference), "{bad}");
        }
    }

    #[test]
    fn key_uri_adds_object_id_and_type() {
        let Device::Pkcs11(d) = Device::parse(DEVICE).unwrap() else { panic!() };
        let mut buf = [0u8; 512];
        let n = write_key_uri(&d, "kubelet-client 2026", &[0xab, 0x01], &mut buf).unwrap();
        let uri = core::str::from_utf8(&buf[..n]).unwrap();
        assert_eq!(
            uri,
            "pkcs11:token=kubeboot;manufacturer=SoftHSM%20project;object=kubelet-client%202026;id=%ab%01;type=private?module-path=/usr/lib/softhsm/libsofthsm2.so&pin-source=/etc/kubeboot/pin"
        );
        let u = Pkcs11Uri::parse(uri).unwrap();
        assert_eq!(
            (u.object, u.id, u.object_type),
            (Some("kubelet-client%202026"), Some("%ab%01"), Some("private"))
        );
        assert!(matches!(
            write_key_uri(&d, "x", &[1], &mut [0u8; 20]),
            Err(Error::BufferTooSmall { .. })
        ));
    }

    #[test]
    fn uri_container_round_trips_and_refuses_others() {
        let uri = "pkcs11:token=kubeboot;object=node;type=private?module-path=/m.so";
        let mut pem_buf = [0u8; 2048];
        let n = write_pkcs11_uri_pem(uri, &mut pem_buf).unwrap();
        let text = core::str::from_utf8(&pem_buf[..n]).unwrap();
        assert!(text.starts_with("-----BEGIN PKCS#11 PROVIDER URI-----\n"));
        assert_eq!(Holder::of_pem(&pem_buf[..n]), Ok(Holder::Pkcs11));
        let mut scratch = [0u8; 2048];
        assert_eq!(pkcs11_uri_of(&pem_buf[..n], &mut scratch), Ok(uri));
        // A long URI takes the two-byte length form.
        let long = "pkcs11:token=kubeboot;object=node?module-path=/".to_string_lossy_free();
        let n = write_pkcs11_uri_pem(&long, &mut pem_buf).unwrap();
        assert_eq!(pkcs11_uri_of(&pem_buf[..n], &mut scratch), Ok(long.as_str()));
        // Another block, or the container with a trailing byte, is not a reference.
        let mut tampered = [0u8; 2048];
        let der = [0x30, 0x05, 0x1a, 0x00, 0x0c, 0x00, 0x00];
        let m = pem::encode(LABEL_PKCS11_URI, &der, &mut tampered).unwrap();
        assert_eq!(pkcs11_uri_of(&tampered[..m], &mut scratch), Err(Error::MalformedKey));
        assert_eq!(
            pkcs11_uri_of(
                b"-----BEGIN EC PRIVATE KEY-----\nAQID\n-----END EC PRIVATE KEY-----\n",
                &mut scratch
            ),
            Err(Error::MalformedKey)
        );
        assert_eq!(
            write_pkcs11_uri_pem("pkcs11:x=1", &mut pem_buf),
            Err(Error::InvalidKeyReference)
        );
    }

    #[test]
    fn tss2_round_trips() {
        let blob =
            Tss2 { empty_auth: true, parent: TPM_RH_OWNER, public: &[1; 90], private: &[2; 128] };
        let mut pem_buf = [0u8; 1024];
        let n = blob.write_pem(&mut pem_buf).unwrap();
        assert!(pem_buf.starts_with(b"-----BEGIN TSS2 PRIVATE KEY-----\n"));
        let mut scratch = [0u8; 1024];
        assert_eq!(Tss2::from_pem(&pem_buf[..n], &mut scratch), Ok(blob));
        assert_eq!(check_key_pem(&pem_buf[..n]), Ok(Holder::Tpm));
        let low = Tss2 { empty_auth: false, parent: 0x8100_0001, ..blob };
        let n = low.write_pem(&mut pem_buf).unwrap();
        assert_eq!(Tss2::from_pem(&pem_buf[..n], &mut scratch), Ok(low));
        // Truncated or retyped DER is refused.
        let mut der = [0u8; 1024];
        let d = pem::decode_first(&pem_buf[..n], LABEL_TSS2, &mut der).unwrap().to_vec();
        assert_eq!(Tss2::from_der(&d[..d.len() - 1]), Err(Error::MalformedKey));
        let mut other = d.clone();
        let at = other.windows(6).position(|w| w == OID_LOADABLE_KEY).unwrap() + 5;
        other[at] = 0x04; // 2.23.133.10.1.4: an importable key
        assert_eq!(Tss2::from_der(&other), Err(Error::UnsupportedKey));
    }

    /// A key `openssl genpkey -provider tpm2 -algorithm EC -pkeyopt group:P-256` wrote (tpm2-openssl
    /// 1.1.1 on swtpm): its emptyAuth TRUE is the BER byte 0x01.
    const OPENSSL_TPM2_KEY: &str = "-----BEGIN TSS2 PRIVATE KEY-----\nMIHwBgZngQUKAQOgAwEBAQIEQAAAAQRYAFYAIwALAAYAcgAAABAAEAADABAAIHoQ\nulkwZxeNO8OlP727rq3l7adpeLxjZInuiapAcsqoACCCeJhYtbn89q5r7hQYgz+c\n+mxhFpJa8EWjCbaSiuWg/wSBgAB+ACC1gKnpS69HqmICDQSso+PZzc3i5e5n5MSD\nBXi7nivYEgAQmDYk47cjrmKGBv2npOCNuFyxhBpXRccRPTBYenJPrqfrmCaDg/dz\nCxQfY2FGnb/y3O8PwrwB1eOAbJ8gaFSsMO4sF0mLjJvyDgh7C+s13NhHZbouCc8P\n+6Fq\n-----END TSS2 PRIVATE KEY-----\n";

    #[test]
    fn tss2_of_tpm2_openssl() {
        let mut scratch = [0u8; 1024];
        let k = Tss2::from_pem(OPENSSL_TPM2_KEY.as_bytes(), &mut scratch).unwrap();
        assert!(k.empty_auth);
        assert_eq!(k.parent, TPM_RH_OWNER);
        assert_eq!((k.public.len(), k.private.len()), (88, 128));
    }

    #[test]
    fn holders_by_label() {
        assert_eq!(Holder::of_label("EC PRIVATE KEY"), Some(Holder::Software));
        assert_eq!(Holder::of_label("PRIVATE KEY"), Some(Holder::Software));
        assert_eq!(Holder::of_label(LABEL_TSS2), Some(Holder::Tpm));
        assert_eq!(Holder::of_label(LABEL_PKCS11_URI), Some(Holder::Pkcs11));
        assert_eq!(Holder::of_label("CERTIFICATE"), None);
        assert_eq!(Holder::of_pem(b"nothing"), Err(Error::MalformedKey));
    }

    trait LongUri {
        fn to_string_lossy_free(&self) -> heapless::String<600>;
    }
    impl LongUri for str {
        fn to_string_lossy_free(&self) -> heapless::String<600> {
            let mut s = heapless::String::new();
            s.push_str(self).unwrap();
            while s.len() < 590 {
                s.push('d').unwrap();
            }
            s
        }
    }
}
