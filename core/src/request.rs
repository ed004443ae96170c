//! A heap-free PKCS#10 (RFC 2986) certificate request reader.
//!
//! [`CertificateRequest::from_der`] checks the whole structure once (outer and inner sequences,
//! subject strings, extension request, subjectAltName entries, signature encoding) and keeps
//! borrowed slices of the input, so every accessor and iterator afterwards is infallible and
//! allocation-free. [`CertificateRequest::verify_signature`] checks the self-signature:
//!
//! | key | signature algorithm | support |
//! |---|---|---|
//! | EC P-256 | ecdsa-with-SHA256 | always |
//! | EC P-256 or P-384 | ecdsa-with-SHA256/384/512 (as Go, the digest is truncated to the order) | cargo feature `p384` |
//! | RSA | sha{256,384,512}WithRSAEncryption (PKCS#1 v1.5) | cargo feature `rsa` (needs `alloc`) |
//! | anything else Go can verify (P-521, Ed25519, RSA-PSS, ...) | | [`PolicyViolation::UnsupportedKey`] |
//!
//! Where our reading differs from Go's `x509.ParseCertificateRequest`, it is stricter (it refuses,
//! Go would accept): the version must be 0 (v1), subject attribute values and attribute types
//! outside der's tag set are refused, and two subjectAltName extensions are refused (Go keeps the
//! last one).

use crate::error::{Error, PolicyViolation, Result};
use der::asn1::ObjectIdentifier;
use der::{Decode, SliceReader, Tag, TagNumber};

use crate::backend::{SignatureVerifier, Verdict};
use crate::der_walk;
use crate::oid;
use crate::verify::{IssuerKey, signature_verdict};
use spki::SubjectPublicKeyInfoRef;

/// `-----BEGIN CERTIFICATE REQUEST-----`, the only PEM label the apiserver accepts.
pub const PEM_LABEL: &str = "CERTIFICATE REQUEST";

// DER content bytes of the OIDs we look at (no tag, no length).

/// The public key algorithm of a CSR's SubjectPublicKeyInfo.
#[non_exhaustive]
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum KeyAlgorithm {
    /// ECDSA on NIST P-256 (`id-ecPublicKey`, `prime256v1`).
    EcP256,
    /// ECDSA on NIST P-384 (`secp384r1`).
    EcP384,
    /// ECDSA on NIST P-521 (`secp521r1`).
    EcP521,
    /// `id-ecPublicKey` on another or an unnamed curve.
    EcOther,
    /// RSA (`rsaEncryption`).
    Rsa,
    /// Ed25519.
    Ed25519,
    /// Anything else.
    Other,
}

/// The signature algorithm of a CSR.
#[non_exhaustive]
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum SignatureAlgorithm {
    /// `ecdsa-with-SHA256`.
    EcdsaSha256,
    /// `ecdsa-with-SHA384`.
    EcdsaSha384,
    /// `ecdsa-with-SHA512`.
    EcdsaSha512,
    /// `sha256WithRSAEncryption` (PKCS#1 v1.5).
    RsaSha256,
    /// `sha384WithRSAEncryption` (PKCS#1 v1.5).
    RsaSha384,
    /// `sha512WithRSAEncryption` (PKCS#1 v1.5).
    RsaSha512,
    /// `RSASSA-PSS`.
    RsaPss,
    /// Ed25519 (pure).
    Ed25519,
    /// Anything else (including SHA-1 based algorithms, which Go refuses).
    Other,
}

/// Key family, to tell a key/signature mismatch (refused by Go) from an unsupported pairing.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Family {
    Ec,
    Rsa,
    Ed25519,
    Unknown,
}

impl KeyAlgorithm {
    fn family(self) -> Family {
        match self {
            KeyAlgorithm::EcP256
            | KeyAlgorithm::EcP384
            | KeyAlgorithm::EcP521
            | KeyAlgorithm::EcOther => Family::Ec,
            KeyAlgorithm::Rsa => Family::Rsa,
            KeyAlgorithm::Ed25519 => Family::Ed25519,
            KeyAlgorithm::Other => Family::Unknown,
        }
    }
}

impl SignatureAlgorithm {
    fn family(self) -> Family {
        match self {
            SignatureAlgorithm::EcdsaSha256
            | SignatureAlgorithm::EcdsaSha384
            | SignatureAlgorithm::EcdsaSha512 => Family::Ec,
            SignatureAlgorithm::RsaSha256
            | SignatureAlgorithm::RsaSha384
            | SignatureAlgorithm::RsaSha512
            | SignatureAlgorithm::RsaPss => Family::Rsa,
            SignatureAlgorithm::Ed25519 => Family::Ed25519,
            SignatureAlgorithm::Other => Family::Unknown,
        }
    }
}

/// One TLV: its tag, its value bytes and the whole encoding.
#[derive(Clone, Copy)]
struct Tlv<'a> {
    tag: Tag,
    value: &'a [u8],
    whole: &'a [u8],
}

/// Read the next TLV from `rest` with the crate's DER walker, advancing it. `Ok(None)` at the end.
/// The tag is `der`'s [`Tag`] (read again from the element only for the rare multi-octet tags).
fn next_tlv<'a>(rest: &mut &'a [u8]) -> Result<Option<Tlv<'a>>> {
    if rest.is_empty() {
        return Ok(None);
    }
    let mut r = der_walk::Der(rest);
    let (element, whole) = der_walk::next(&mut r)?;
    *rest = r.0;
    let tag = Tag::peek(&SliceReader::new(whole).map_err(|_| Error::Malformed)?)
        .map_err(|_| Error::Malformed)?;
    Ok(Some(Tlv { tag, value: element.value(), whole }))
}

/// Read the next TLV, which must exist and carry `tag`.
fn read_tagged<'a>(rest: &mut &'a [u8], tag: Tag) -> Result<Tlv<'a>> {
    match next_tlv(rest)? {
        Some(t) if t.tag == tag => Ok(t),
        _ => Err(Error::Malformed),
    }
}

fn context(number: u32, constructed: bool) -> Tag {
    TagNumber(number).context_specific(constructed)
}

/// Go's `isPrintable` for PrintableString (which also lets `*` and `&` through).
fn is_printable_byte(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b" '()+,-./:=?*&".contains(&b)
}

/// Whether a string-typed attribute value is well formed (Go's rules per string type).
/// Non-string values are accepted as they are (Go ignores them for the subject fields).
fn check_string_value(tag: Tag, value: &[u8]) -> Result<()> {
    let ok = match tag {
        Tag::Utf8String => core::str::from_utf8(value).is_ok(),
        Tag::PrintableString => value.iter().all(|&b| is_printable_byte(b)),
        Tag::Ia5String => value.is_ascii(),
        Tag::NumericString => value.iter().all(|&b| b.is_ascii_digit() || b == b' '),
        Tag::BmpString => value.len() % 2 == 0,
        _ => true,
    };
    if ok { Ok(()) } else { Err(Error::Malformed) }
}

fn is_string_tag(tag: Tag) -> bool {
    matches!(
        tag,
        Tag::Utf8String
            | Tag::PrintableString
            | Tag::Ia5String
            | Tag::NumericString
            | Tag::TeletexString
            | Tag::BmpString
    )
}

/// Which subject attribute this is.
#[non_exhaustive]
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum AttributeKind {
    /// `CN` (2.5.4.3).
    CommonName,
    /// `O` (2.5.4.10).
    Organization,
    /// `OU` (2.5.4.11).
    OrganizationalUnit,
    /// Any other attribute type.
    Other,
}

/// One attribute (type and value) of the subject name.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct NameAttribute<'a> {
    oid: &'a [u8],
    tag: Tag,
    value: &'a [u8],
}

impl<'a> NameAttribute<'a> {
    /// The attribute type as the DER *content* bytes of its OID (e.g. `55 04 03` for CN).
    pub fn oid_bytes(&self) -> &'a [u8] {
        self.oid
    }

    /// The attribute kind (CN, O, OU or other).
    pub fn kind(&self) -> AttributeKind {
        const CN: &[u8] = oid::CN.as_bytes();
        const O: &[u8] = oid::O.as_bytes();
        const OU: &[u8] = oid::OU.as_bytes();
        match self.oid {
            CN => AttributeKind::CommonName,
            O => AttributeKind::Organization,
            OU => AttributeKind::OrganizationalUnit,
            _ => AttributeKind::Other,
        }
    }

    /// The ASN.1 tag of the value (`UTF8String`, `PrintableString`, ...).
    pub fn tag(&self) -> Tag {
        self.tag
    }

    /// The raw value bytes (content octets).
    pub fn value_bytes(&self) -> &'a [u8] {
        self.value
    }

    /// Whether the value is one of the string types Go turns into a `string`
    /// (UTF8, Printable, IA5, Numeric, Teletex, BMP). Only those count for CN and O.
    pub fn is_string(&self) -> bool {
        is_string_tag(self.tag)
    }

    /// The value as `&str` when it is stored as UTF-8 compatible bytes (UTF8String,
    /// PrintableString, IA5String, NumericString, and TeletexString holding valid UTF-8).
    /// `None` for BMPString (use [`NameAttribute::chars`]) and non-string values.
    pub fn as_str(&self) -> Option<&'a str> {
        match self.tag {
            Tag::Utf8String
            | Tag::PrintableString
            | Tag::Ia5String
            | Tag::NumericString
            | Tag::TeletexString => core::str::from_utf8(self.value).ok(),
            _ => None,
        }
    }

    /// The characters of a string value, decoding BMPString (UTF-16BE, unpaired surrogates as
    /// U+FFFD). A TeletexString is taken as its bytes, as Go's `string(value)` does, and read as
    /// Go's `range` reads a string: valid UTF-8 gives its characters (so `chars` agrees with
    /// [`NameAttribute::as_str`]), each byte that does not start a valid UTF-8 sequence gives one
    /// U+FFFD. Empty for non-string values.
    pub fn chars(&self) -> AttributeChars<'a> {
        let inner = match self.tag {
            Tag::BmpString => CharsInner::Bmp(self.value),
            Tag::TeletexString => match core::str::from_utf8(self.value) {
                Ok(s) => CharsInner::Utf8(s.chars()),
                Err(_) => CharsInner::Lossy(self.value),
            },
            _ => match self.as_str() {
                Some(s) => CharsInner::Utf8(s.chars()),
                None => CharsInner::Lossy(&[]),
            },
        };
        AttributeChars { inner }
    }

    /// Whether this is a string value equal to `s`, compared as Go compares the `string` it
    /// makes of the value: a TeletexString by its bytes (so one that is not valid UTF-8 equals no
    /// `&str`), a BMPString by its decoded characters.
    pub fn eq_str(&self, s: &str) -> bool {
        match self.tag {
            Tag::TeletexString => self.value == s.as_bytes(),
            _ => self.is_string() && self.chars().eq(s.chars()),
        }
    }

    /// Whether this is a string value starting with `prefix` (compared as in
    /// [`NameAttribute::eq_str`]).
    pub fn starts_with(&self, prefix: &str) -> bool {
        match self.tag {
            Tag::TeletexString => self.value.starts_with(prefix.as_bytes()),
            _ if !self.is_string() => false,
            _ => {
                let mut mine = self.chars();
                prefix.chars().all(|c| mine.next() == Some(c))
            }
        }
    }
}

#[derive(Clone, Debug)]
enum CharsInner<'a> {
    Utf8(core::str::Chars<'a>),
    /// Bytes that are not all valid UTF-8, read as Go's `range` does.
    Lossy(&'a [u8]),
    Bmp(&'a [u8]),
}

/// Iterator over the characters of a [`NameAttribute`] string value.
#[derive(Clone, Debug)]
pub struct AttributeChars<'a> {
    inner: CharsInner<'a>,
}

impl Iterator for AttributeChars<'_> {
    type Item = char;

    fn next(&mut self) -> Option<char> {
        match &mut self.inner {
            CharsInner::Utf8(c) => c.next(),
            CharsInner::Lossy(b) => {
                let first = *b.first()?;
                let width = match first {
                    0x00..=0x7f => 1,
                    0xc2..=0xdf => 2,
                    0xe0..=0xef => 3,
                    0xf0..=0xf4 => 4,
                    _ => 0,
                };
                // from_utf8 of exactly one sequence refuses overlong forms, surrogates and
                // truncation, as Go's utf8.DecodeRune does (which then advances one byte).
                let c = b
                    .get(..width)
                    .filter(|seq| !seq.is_empty())
                    .and_then(|seq| core::str::from_utf8(seq).ok())
                    .and_then(|s| s.chars().next());
                let used = if c.is_some() { width } else { 1 };
                *b = b.get(used..).unwrap_or(&[]);
                Some(c.unwrap_or(char::REPLACEMENT_CHARACTER))
            }
            CharsInner::Bmp(b) => {
                let unit = |s: &[u8]| -> Option<u16> {
                    Some(u16::from_be_bytes([*s.first()?, *s.get(1)?]))
                };
                let hi = unit(b)?;
                *b = b.get(2..).unwrap_or(&[]);
                if (0xD800..0xDC00).contains(&hi) {
                    if let Some(lo) = unit(b).filter(|lo| (0xDC00..0xE000).contains(lo)) {
                        *b = b.get(2..).unwrap_or(&[]);
                        let c =
                            0x10000 + ((u32::from(hi) - 0xD800) << 10) + (u32::from(lo) - 0xDC00);
                        return Some(char::from_u32(c).unwrap_or('\u{FFFD}'));
                    }
                }
                Some(char::from_u32(u32::from(hi)).unwrap_or('\u{FFFD}'))
            }
        }
    }
}

/// Iterator over the subject's attributes in encoding order (RDN by RDN, flattened).
#[derive(Clone, Debug)]
pub struct SubjectAttributes<'a> {
    rdns: &'a [u8],
    set: &'a [u8],
}

impl<'a> Iterator for SubjectAttributes<'a> {
    type Item = NameAttribute<'a>;

    fn next(&mut self) -> Option<NameAttribute<'a>> {
        // The structure was validated by `from_der`; a failure here just ends the iteration.
        while self.set.is_empty() {
            let rdn = next_tlv(&mut self.rdns).ok()??;
            self.set = rdn.value;
        }
        let atv = next_tlv(&mut self.set).ok()??;
        let mut inner = atv.value;
        let oid = next_tlv(&mut inner).ok()??;
        let value = next_tlv(&mut inner).ok()??;
        Some(NameAttribute { oid: oid.value, tag: value.tag, value: value.value })
    }
}

fn validate_subject(name_value: &[u8]) -> Result<()> {
    let mut rdns = name_value;
    while let Some(rdn) = next_tlv(&mut rdns)? {
        if rdn.tag != Tag::Set {
            return Err(Error::Malformed);
        }
        let mut set = rdn.value;
        while let Some(atv) = next_tlv(&mut set)? {
            if atv.tag != Tag::Sequence {
                return Err(Error::Malformed);
            }
            let mut inner = atv.value;
            read_tagged(&mut inner, Tag::ObjectIdentifier)?;
            let value = next_tlv(&mut inner)?.ok_or(Error::Malformed)?;
            if !inner.is_empty() {
                return Err(Error::Malformed);
            }
            check_string_value(value.tag, value.value)?;
        }
    }
    Ok(())
}

/// One subjectAltName entry of the CSR's extension request.
#[non_exhaustive]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SubjectAltName<'a> {
    /// `dNSName` (IA5String).
    Dns(&'a str),
    /// `rfc822Name` (IA5String).
    Email(&'a str),
    /// `uniformResourceIdentifier` (IA5String).
    Uri(&'a str),
    /// `iPAddress`: 4 (IPv4) or 16 (IPv6) network-order bytes.
    Ip(&'a [u8]),
    /// Another GeneralName form (otherName, directoryName, registeredID, ...), which Go ignores;
    /// `tag` is the context-specific tag number.
    Other {
        /// The GeneralName CHOICE tag number (0, 3, 4, 5 or 8).
        tag: u32,
    },
}

/// Iterator over subjectAltName entries, in encoding order.
#[derive(Clone, Debug)]
pub struct SubjectAltNames<'a> {
    rest: &'a [u8],
}

fn ia5<'a>(t: &Tlv<'a>) -> Result<&'a str> {
    if !t.value.is_ascii() || t.tag.is_constructed() {
        return Err(Error::Malformed);
    }
    core::str::from_utf8(t.value).map_err(|_| Error::Malformed)
}

fn general_name(t: Tlv<'_>) -> Result<SubjectAltName<'_>> {
    let number = t.tag.number().value();
    if !t.tag.is_context_specific() {
        return Err(Error::Malformed);
    }
    Ok(match number {
        1 => SubjectAltName::Email(ia5(&t)?),
        2 => SubjectAltName::Dns(ia5(&t)?),
        6 => SubjectAltName::Uri(ia5(&t)?),
        7 => {
            if t.tag.is_constructed() || !(t.value.len() == 4 || t.value.len() == 16) {
                return Err(Error::Malformed);
            }
            SubjectAltName::Ip(t.value)
        }
        other => SubjectAltName::Other { tag: other },
    })
}

impl<'a> Iterator for SubjectAltNames<'a> {
    type Item = SubjectAltName<'a>;

    fn next(&mut self) -> Option<SubjectAltName<'a>> {
        let t = next_tlv(&mut self.rest).ok()??;
        general_name(t).ok()
    }
}

/// Find and validate the subjectAltName extension in the attributes; returns the GeneralNames
/// contents (empty when there is none).
fn find_san(attributes: &[u8]) -> Result<&[u8]> {
    let mut san: Option<&[u8]> = None;
    let mut attrs = attributes;
    while let Some(attr) = next_tlv(&mut attrs)? {
        if attr.tag != Tag::Sequence {
            return Err(Error::Malformed);
        }
        let mut inner = attr.value;
        let oid = read_tagged(&mut inner, Tag::ObjectIdentifier)?;
        let values = read_tagged(&mut inner, Tag::Set)?;
        if !inner.is_empty() {
            return Err(Error::Malformed);
        }
        if oid.value != oid::EXTENSION_REQUEST.as_bytes() {
            continue;
        }
        let mut vals = values.value;
        while let Some(exts) = next_tlv(&mut vals)? {
            if exts.tag != Tag::Sequence {
                return Err(Error::Malformed);
            }
            let mut ext_list = exts.value;
            while let Some(ext) = next_tlv(&mut ext_list)? {
                if ext.tag != Tag::Sequence {
                    return Err(Error::Malformed);
                }
                let mut e = ext.value;
                let id = read_tagged(&mut e, Tag::ObjectIdentifier)?;
                let mut next = next_tlv(&mut e)?.ok_or(Error::Malformed)?;
                if next.tag == Tag::Boolean {
                    next = next_tlv(&mut e)?.ok_or(Error::Malformed)?;
                }
                if next.tag != Tag::OctetString || !e.is_empty() {
                    return Err(Error::Malformed);
                }
                if id.value != oid::SUBJECT_ALT_NAME.as_bytes() {
                    continue;
                }
                if san.is_some() {
                    return Err(Error::Malformed);
                }
                let mut octets = next.value;
                let names = read_tagged(&mut octets, Tag::Sequence)?;
                if !octets.is_empty() {
                    return Err(Error::Malformed);
                }
                let mut list = names.value;
                while let Some(gn) = next_tlv(&mut list)? {
                    general_name(gn)?;
                }
                san = Some(names.value);
            }
        }
    }
    Ok(san.unwrap_or(&[]))
}

fn classify_key(spki: &SubjectPublicKeyInfoRef<'_>) -> KeyAlgorithm {
    let oid = spki.algorithm.oid;
    if oid == oid::EC_PUBLIC_KEY {
        let curve = spki.algorithm.parameters.and_then(|p| p.decode_as::<ObjectIdentifier>().ok());
        match curve {
            Some(c) if c == oid::P256 => KeyAlgorithm::EcP256,
            Some(c) if c == oid::P384 => KeyAlgorithm::EcP384,
            Some(c) if c == oid::P521 => KeyAlgorithm::EcP521,
            _ => KeyAlgorithm::EcOther,
        }
    } else if oid == oid::RSA_ENCRYPTION {
        KeyAlgorithm::Rsa
    } else if oid == oid::ED25519 {
        KeyAlgorithm::Ed25519
    } else {
        KeyAlgorithm::Other
    }
}

fn classify_signature(oid: &[u8]) -> SignatureAlgorithm {
    let table: [(ObjectIdentifier, SignatureAlgorithm); 8] = [
        (oid::ECDSA_SHA256, SignatureAlgorithm::EcdsaSha256),
        (oid::ECDSA_SHA384, SignatureAlgorithm::EcdsaSha384),
        (oid::ECDSA_SHA512, SignatureAlgorithm::EcdsaSha512),
        (oid::RSA_SHA256, SignatureAlgorithm::RsaSha256),
        (oid::RSA_SHA384, SignatureAlgorithm::RsaSha384),
        (oid::RSA_SHA512, SignatureAlgorithm::RsaSha512),
        (oid::RSA_PSS, SignatureAlgorithm::RsaPss),
        (oid::ED25519, SignatureAlgorithm::Ed25519),
    ];
    table
        .iter()
        .find(|(known, _)| known.as_bytes() == oid)
        .map_or(SignatureAlgorithm::Other, |(_, alg)| *alg)
}

/// A parsed PKCS#10 certificate request borrowing its DER input.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CertificateRequest<'a> {
    der: &'a [u8],
    info: &'a [u8],
    subject: &'a [u8],
    spki: &'a [u8],
    key_algorithm: KeyAlgorithm,
    public_key: &'a [u8],
    san: &'a [u8],
    signature_algorithm: SignatureAlgorithm,
    signature: &'a [u8],
}

impl<'a> CertificateRequest<'a> {
    /// Parse and structurally validate a DER `CertificationRequest`.
    ///
    /// Errors: [`Error::Malformed`] for anything that is not a well-formed v1 PKCS#10 request
    /// (including trailing bytes). The signature is *not* checked here; see
    /// [`CertificateRequest::verify_signature`].
    pub fn from_der(der: &'a [u8]) -> Result<Self> {
        let mut input = der;
        let outer = read_tagged(&mut input, Tag::Sequence)?;
        if !input.is_empty() {
            return Err(Error::Malformed);
        }
        let mut body = outer.value;
        let info = read_tagged(&mut body, Tag::Sequence)?;
        let sig_alg = read_tagged(&mut body, Tag::Sequence)?;
        let sig = read_tagged(&mut body, Tag::BitString)?;
        if !body.is_empty() {
            return Err(Error::Malformed);
        }

        let mut fields = info.value;
        let version = read_tagged(&mut fields, Tag::Integer)?;
        if version.value != [0] {
            return Err(Error::Malformed);
        }
        let subject = read_tagged(&mut fields, Tag::Sequence)?;
        let spki_tlv = read_tagged(&mut fields, Tag::Sequence)?;
        let attributes = read_tagged(&mut fields, context(0, true))?;
        if !fields.is_empty() {
            return Err(Error::Malformed);
        }
        validate_subject(subject.value)?;

        let spki =
            SubjectPublicKeyInfoRef::from_der(spki_tlv.whole).map_err(|_| Error::Malformed)?;
        let key_algorithm = classify_key(&spki);
        let public_key = spki.subject_public_key.as_bytes().ok_or(Error::Malformed)?;

        let san = find_san(attributes.value)?;

        let mut alg = sig_alg.value;
        let alg_oid = read_tagged(&mut alg, Tag::ObjectIdentifier)?;
        // Optional parameters: at most one more element.
        let _params = next_tlv(&mut alg)?;
        if !alg.is_empty() {
            return Err(Error::Malformed);
        }
        let signature_algorithm = classify_signature(alg_oid.value);
        let (&unused_bits, signature) = sig.value.split_first().ok_or(Error::Malformed)?;
        if unused_bits != 0 {
            return Err(Error::Malformed);
        }

        Ok(CertificateRequest {
            der,
            info: info.whole,
            subject: subject.whole,
            spki: spki_tlv.whole,
            key_algorithm,
            public_key,
            san,
            signature_algorithm,
            signature,
        })
    }

    /// Decode the first PEM block of `pem` into `scratch` and parse it.
    ///
    /// Like the apiserver (Go's `pem.Decode`), text before the first block is skipped and only the
    /// first block counts: no block, or a first block whose label is not `CERTIFICATE REQUEST`,
    /// gives [`PolicyViolation::NotCertificateRequest`]. A short `scratch` is
    /// [`Error::BufferTooSmall`]; bad base64 or DER is [`Error::Malformed`].
    pub fn from_pem(pem: &[u8], scratch: &'a mut [u8]) -> Result<Self> {
        let block = match crate::pem::blocks(pem).next() {
            Some(Ok(block)) if block.label == PEM_LABEL => block,
            Some(Err(Error::Malformed)) | Some(Ok(_)) | None => {
                return Err(Error::Policy(PolicyViolation::NotCertificateRequest));
            }
            Some(Err(e)) => return Err(e),
        };
        let der: &'a [u8] = block.decode(scratch)?;
        Self::from_der(der)
    }

    /// The whole DER encoding.
    pub fn der(&self) -> &'a [u8] {
        self.der
    }

    /// The DER `CertificationRequestInfo` (the signed bytes).
    pub fn info_der(&self) -> &'a [u8] {
        self.info
    }

    /// The DER subject `Name`.
    pub fn subject_der(&self) -> &'a [u8] {
        self.subject
    }

    /// The subject's attributes, RDN by RDN.
    pub fn subject(&self) -> SubjectAttributes<'a> {
        let mut s = self.subject;
        let rdns = next_tlv(&mut s).ok().flatten().map_or(&[][..], |t| t.value);
        SubjectAttributes { rdns, set: &[] }
    }

    /// The common name: the *last* string-valued CN attribute, as Go's `pkix.Name` keeps it.
    pub fn common_name(&self) -> Option<NameAttribute<'a>> {
        self.subject().filter(|a| a.kind() == AttributeKind::CommonName && a.is_string()).last()
    }

    /// The string-valued organization (O) attributes, in order (Go's `Subject.Organization`).
    pub fn organizations(&self) -> impl Iterator<Item = NameAttribute<'a>> + use<'a> {
        self.subject().filter(|a| a.kind() == AttributeKind::Organization && a.is_string())
    }

    /// The DER `SubjectPublicKeyInfo` (what CA pins and the `node-csr-` name hash).
    pub fn spki_der(&self) -> &'a [u8] {
        self.spki
    }

    /// The public key algorithm.
    pub fn key_algorithm(&self) -> KeyAlgorithm {
        self.key_algorithm
    }

    /// The subjectPublicKey bit string contents (SEC1 point for EC, PKCS#1 for RSA).
    pub fn public_key(&self) -> &'a [u8] {
        self.public_key
    }

    /// The subjectAltName entries of the extension request (empty when there are none).
    pub fn sans(&self) -> SubjectAltNames<'a> {
        SubjectAltNames { rest: self.san }
    }

    /// The modulus size in bits of an RSA key (`None` for other keys, or an RSAPublicKey that
    /// does not parse).
    pub fn rsa_modulus_bits(&self) -> Option<usize> {
        match self.key_algorithm {
            KeyAlgorithm::Rsa => crate::verify::rsa_modulus_bits(self.public_key),
            _ => None,
        }
    }

    /// The signature algorithm.
    pub fn signature_algorithm(&self) -> SignatureAlgorithm {
        self.signature_algorithm
    }

    /// The signature bytes (DER `ECDSA-Sig-Value` for ECDSA, raw for RSA).
    pub fn signature(&self) -> &'a [u8] {
        self.signature
    }

    /// Check the self-signature.
    ///
    /// - [`PolicyViolation::BadSignature`]: the signature does not verify, or Go would refuse it
    ///   outright (key and signature algorithm of different families, an unknown or SHA-1
    ///   signature algorithm, an unknown key algorithm);
    /// - [`PolicyViolation::UnsupportedKey`]: Go would try to verify it but this build cannot
    ///   (see the module docs for the supported pairs);
    /// - [`PolicyViolation::NotCertificateRequest`]: the public key does not decode (Go refuses
    ///   to parse such a request).
    pub fn verify_signature(&self) -> Result<()> {
        self.verify_signature_with(&crate::backend::Software)
    }

    /// [`CertificateRequest::verify_signature`] through `verifier` (e.g. ring on hosts, the
    /// Cortex-M4 assembly on microcontrollers): the same dispatch as every certificate signature
    /// of [`crate::verify`]. P-256 and P-384 keys take SHA-256, SHA-384 and SHA-512 as Go does
    /// (the others only with the `sha512` feature, P-384 with `p384`), RSA keys of 1024 to 4096
    /// bits only with `rsa`.
    pub fn verify_signature_with(&self, verifier: &dyn SignatureVerifier) -> Result<()> {
        let key_family = self.key_algorithm.family();
        let sig_family = self.signature_algorithm.family();
        if key_family == Family::Unknown
            || sig_family == Family::Unknown
            || key_family != sig_family
            || self.key_algorithm == KeyAlgorithm::EcOther
        {
            return Err(Error::Policy(PolicyViolation::BadSignature));
        }
        // Go refuses to parse a request whose public key does not decode: an EC point that is not
        // the uncompressed form of its curve's size, an RSAPublicKey that is not two integers.
        let (key, decodes) = match self.key_algorithm {
            KeyAlgorithm::EcP256 => (IssuerKey::P256(self.public_key), self.ec_point_decodes(32)),
            KeyAlgorithm::EcP384 => (IssuerKey::P384(self.public_key), self.ec_point_decodes(48)),
            KeyAlgorithm::Rsa => {
                (IssuerKey::Rsa(self.public_key), crate::verify::rsa_key_decodes(self.public_key))
            }
            _ => return Err(Error::Policy(PolicyViolation::UnsupportedKey)),
        };
        if !decodes {
            return Err(Error::Policy(PolicyViolation::NotCertificateRequest));
        }
        match signature_verdict(
            verifier,
            key,
            self.signature_algorithm,
            self.info,
            self.signature,
            CSR_RSA_MIN_BITS,
        ) {
            Verdict::Valid => Ok(()),
            Verdict::Invalid => Err(Error::Policy(PolicyViolation::BadSignature)),
            Verdict::Unsupported => Err(Error::Policy(PolicyViolation::UnsupportedKey)),
        }
    }

    /// An uncompressed SEC1 point (`04 || X || Y`) of `n`-byte coordinates that lies on the curve
    /// (checked where the portable arithmetic is linked; the Cortex-M4 assembly checks it when it
    /// verifies, and an off-curve point is a bad signature there).
    fn ec_point_decodes(&self, n: usize) -> bool {
        let shape = self.public_key.len() == 1 + 2 * n && self.public_key.first() == Some(&0x04);
        #[cfg(not(all(feature = "p256-cortex-m4", target_arch = "arm", target_os = "none")))]
        if shape && n == 32 {
            return crate::backend::p256_point(self.public_key).is_some();
        }
        #[cfg(feature = "p384")]
        if shape && n == 48 {
            return p384::ecdsa::VerifyingKey::from_sec1_bytes(self.public_key).is_ok();
        }
        shape
    }
}

/// The smallest RSA key of a CSR whose self-signature is checked (Go's `crypto/rsa` refuses
/// smaller ones since Go 1.24).
const CSR_RSA_MIN_BITS: usize = 1024;

#[cfg(test)]
pub(crate) mod fixtures;

#[cfg(test)]
mod tests;
