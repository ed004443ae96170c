//! The crate-private DER walker: elements read in place (one-octet tags and short lengths by
//! hand, anything else by `der`, which sets the rules), and the few primitive values decoded here.
//! Certificate validation and the CSR reader both read with it; their errors come from
//! [`Malformed`] through `From`.

use der::SliceReader;
use der::asn1::ObjectIdentifier;

/// The DER was not what the reader expected (truncated, trailing bytes, wrong tag, bad header).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Malformed;

fn malformed() -> Malformed {
    Malformed
}

/// A cursor over the contents of a DER structure.
pub(crate) struct Der<'a>(pub(crate) &'a [u8]);

impl Der<'_> {
    pub(crate) fn is_finished(&self) -> bool {
        self.0.is_empty()
    }

    /// Nothing may follow the last element.
    pub(crate) fn finish(self) -> Result<(), Malformed> {
        if self.is_finished() { Ok(()) } else { Err(malformed()) }
    }
}

pub(crate) fn reader(input: &[u8]) -> Result<Der<'_>, Malformed> {
    Ok(Der(input))
}

/// A DER element as [`next`] reads it: the first identifier octet and the contents.
///
/// The identifier's first octet stands for the tag: for the one-octet tags (every tag below 31)
/// the two are the same thing, and a tag of number 31 or more (which `der` reads for
/// application, context-specific and private tags) keeps its first octet, whose number bits are
/// `0x1f`, so it never equals a [`tag`] constant nor a context number below 31.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Tlv<'a> {
    pub(crate) tag: u8,
    pub(crate) value: &'a [u8],
}

impl<'a> Tlv<'a> {
    pub(crate) fn tag(&self) -> u8 {
        self.tag
    }

    pub(crate) fn value(&self) -> &'a [u8] {
        self.value
    }

    /// A NULL with no contents (DER's only NULL).
    pub(crate) fn is_null(&self) -> bool {
        self.tag == tag::NULL && self.value.is_empty()
    }
}

/// Identifier octets of the universal types read here (X.690 §8.1.2).
pub(crate) mod tag {
    pub const BOOLEAN: u8 = 0x01;
    pub const INTEGER: u8 = 0x02;
    pub const BIT_STRING: u8 = 0x03;
    pub const OCTET_STRING: u8 = 0x04;
    pub const NULL: u8 = 0x05;
    pub const OID: u8 = 0x06;
    pub const UTF8_STRING: u8 = 0x0c;
    pub const PRINTABLE_STRING: u8 = 0x13;
    pub const TELETEX_STRING: u8 = 0x14;
    pub const IA5_STRING: u8 = 0x16;
    pub const UTC_TIME: u8 = 0x17;
    pub const GENERALIZED_TIME: u8 = 0x18;
    pub const SEQUENCE: u8 = 0x30;
    pub const SET: u8 = 0x31;
}

/// Read the next element as (element, whole TLV bytes). This is the hot loop of certificate
/// parsing: the headers certificates are made of (one-octet tags, lengths below 64 KiB) are
/// decoded here by hand, anything else by the `der` crate, which sets the rules: both accept
/// and reject the same headers (`next_agrees_with_der` checks every one-octet tag with every
/// length form).
// Hosts inline the common case into each of the ~50 call sites (the walk is most of kubeboot's
// own time in a validation); microcontrollers keep one copy (flash).
#[cfg_attr(not(target_os = "none"), inline(always))]
#[cfg_attr(target_os = "none", inline(never))]
pub(crate) fn next<'a>(r: &mut Der<'a>) -> Result<(Tlv<'a>, &'a [u8]), Malformed> {
    let input = r.0;
    let (header_len, len) = match common_header(input) {
        Some(h) => h,
        None => rare_header(input)?,
    };
    let total = header_len.checked_add(len).ok_or_else(malformed)?;
    let (tlv, rest) = input.split_at_checked(total).ok_or_else(malformed)?;
    let (&tag, _) = tlv.split_first().ok_or_else(malformed)?;
    let value = tlv.get(header_len..).ok_or_else(malformed)?;
    r.0 = rest;
    Ok((Tlv { tag, value }, tlv))
}

/// (header length, content length) of the headers [`common_header`] leaves to `der` (out of
/// line: [`next`] is inlined on hosts).
#[cold]
#[inline(never)]
pub(crate) fn rare_header(input: &[u8]) -> Result<(usize, usize), Malformed> {
    let header = der::Header::peek(&SliceReader::new(input).map_err(|_| malformed())?)
        .map_err(|_| malformed())?;
    let header_len = der::Encode::encoded_len(&header).map_err(|_| malformed())?;
    let header_len = usize::try_from(header_len).map_err(|_| malformed())?;
    let len = usize::try_from(header.length()).map_err(|_| malformed())?;
    Ok((header_len, len))
}

/// The one-octet identifiers `der` reads as a tag: its universal types, and every application,
/// context-specific and private tag of number below 31.
pub(crate) const fn is_one_octet_tag(t: u8) -> bool {
    match t {
        0x01..=0x06 | 0x09 | 0x0a | 0x0c | 0x0d | 0x12..=0x18 | 0x1a | 0x1b | 0x1e => true,
        0x30 | 0x31 => true,
        0x40..=0xff => t & 0x1f != 0x1f,
        _ => false,
    }
}

/// [`is_one_octet_tag`] in the hot loop: a table lookup on hosts (about 390 fewer instructions
/// per validation than the match), the match on microcontrollers (256 bytes less flash).
#[cfg_attr(not(target_os = "none"), inline(always))]
pub(crate) fn one_octet_tag(t: u8) -> bool {
    #[cfg(not(target_os = "none"))]
    {
        static TABLE: [bool; 256] = {
            let mut table = [false; 256];
            let mut i = 0;
            while i < 256 {
                #[allow(clippy::indexing_slicing)] // compile time, `i < 256`
                {
                    table[i] = is_one_octet_tag(i as u8);
                }
                i += 1;
            }
            table
        };
        TABLE.get(usize::from(t)) == Some(&true)
    }
    #[cfg(target_os = "none")]
    {
        is_one_octet_tag(t)
    }
}

/// (header length, content length) of a header with a one-octet tag and a length in its common
/// form, the way `der` decodes it; `None` for anything else (rare or invalid: `der` decides).
#[cfg_attr(not(target_os = "none"), inline(always))]
pub(crate) fn common_header(input: &[u8]) -> Option<(usize, usize)> {
    let (&t, rest) = input.split_first()?;
    if !one_octet_tag(t) {
        return None;
    }
    match *rest {
        [l @ 0..=0x7f, ..] => Some((2, usize::from(l))),
        // Shortest form only, as DER (and `der`) require.
        [0x81, l @ 0x80..=0xff, ..] => Some((3, usize::from(l))),
        [0x82, hi @ 0x01..=0xff, lo, ..] => Some((4, usize::from(hi) << 8 | usize::from(lo))),
        _ => None,
    }
}

pub(crate) fn expect_tag(any: &Tlv<'_>, tag: u8) -> Result<(), Malformed> {
    if any.tag() == tag { Ok(()) } else { Err(malformed()) }
}

/// (constructed, number) of a context-specific tag (a number of 31 or more reads as 31).
pub(crate) fn context_tag(any: &Tlv<'_>) -> Option<(bool, u32)> {
    match any.tag() {
        t @ 0x80..=0xbf => Some((t & 0x20 != 0, u32::from(t & 0x1f))),
        _ => None,
    }
}

pub(crate) fn is_oid(any: &Tlv<'_>, oid: &ObjectIdentifier) -> bool {
    any.tag() == tag::OID && any.value() == oid.as_bytes()
}

// The three primitive values below are decoded by hand, under the rules `der` decodes them with
// (its `UintRef`, `BitStringRef` and `bool`; the unit tests compare the two on every short
// input): this keeps `der`'s value decoders, about 1.5 KiB of flash, out of the Cortex-M image.

/// A non-negative DER INTEGER's magnitude: shortest form, no sign bit set; one leading 0x00 (the
/// sign octet) removed, the value zero kept as `[0]`.
pub(crate) fn uint<'a>(any: &Tlv<'a>) -> Option<&'a [u8]> {
    if any.tag() != tag::INTEGER {
        return None;
    }
    let v = any.value();
    match v {
        [] => None,
        [0] => Some(v),
        [0, b, ..] if *b < 0x80 => None,
        [0, rest @ ..] => Some(rest),
        [b, ..] if *b >= 0x80 => None,
        _ => Some(v),
    }
}

/// A DER BIT STRING as (unused bits, bytes): the first octet counts the unused bits of the last
/// byte (at most 7, and 0 when there is no byte).
pub(crate) fn bit_string<'a>(any: &Tlv<'a>) -> Option<(u8, &'a [u8])> {
    if any.tag() != tag::BIT_STRING {
        return None;
    }
    let (&unused, bytes) = any.value().split_first()?;
    if unused > 7 || (unused != 0 && bytes.is_empty()) {
        return None;
    }
    Some((unused, bytes))
}

/// A BIT STRING of whole bytes (signatures, public keys): no unused bits.
pub(crate) fn whole_bytes<'a>(any: &Tlv<'a>) -> Option<&'a [u8]> {
    match bit_string(any)? {
        (0, bytes) => Some(bytes),
        _ => None,
    }
}

/// A DER BOOLEAN: one octet, 0x00 or 0xFF.
pub(crate) fn boolean(any: &Tlv<'_>) -> Option<bool> {
    match (any.tag(), any.value()) {
        (tag::BOOLEAN, [0x00]) => Some(false),
        (tag::BOOLEAN, [0xff]) => Some(true),
        _ => None,
    }
}

pub(crate) fn single<'a>(value: &'a [u8], tag: u8) -> Result<Tlv<'a>, Malformed> {
    let mut r = reader(value)?;
    let (any, _) = next(&mut r)?;
    r.finish()?;
    expect_tag(&any, tag)?;
    Ok(any)
}

impl From<Malformed> for crate::error::VerifyError {
    fn from(_: Malformed) -> Self {
        crate::error::VerifyError::new(crate::error::Reason::Malformed)
    }
}

impl From<Malformed> for crate::error::Error {
    fn from(_: Malformed) -> Self {
        crate::error::Error::Malformed
    }
}
