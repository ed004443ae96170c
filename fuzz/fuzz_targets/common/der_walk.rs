//! A tiny DER walker written for the fuzz targets (independent of the crate's parser): enough to
//! find a certificate's TBS, signature value and SubjectPublicKeyInfo by offset.
#![allow(dead_code)]

use std::ops::Range;

/// One TLV at the start of `d`: (tag, range of the content inside `d`, total length).
pub fn tlv(d: &[u8]) -> Option<(u8, Range<usize>, usize)> {
    let tag = *d.first()?;
    let first = *d.get(1)? as usize;
    let (len, hdr) = if first < 0x80 {
        (first, 2)
    } else {
        let n = first & 0x7f;
        if n == 0 || n > 4 {
            return None;
        }
        let mut len = 0usize;
        for i in 0..n {
            len = (len << 8) | *d.get(2 + i)? as usize;
        }
        (len, 2 + n)
    };
    let end = hdr.checked_add(len)?;
    if end > d.len() {
        return None;
    }
    Some((tag, hdr..end, end))
}

/// Offsets inside a certificate.
#[derive(Clone, Debug)]
pub struct CertParts {
    /// The whole TBSCertificate TLV.
    pub tbs: Range<usize>,
    /// The signature BIT STRING's content after the unused-bits byte.
    pub sig: Range<usize>,
    /// The SubjectPublicKeyInfo TLV.
    pub spki: Range<usize>,
}

pub fn cert_parts(cert: &[u8]) -> Option<CertParts> {
    let (t, body, _) = tlv(cert)?;
    if t != 0x30 {
        return None;
    }
    let mut pos = body.start;
    let (t, tbs_c, n) = tlv(cert.get(pos..body.end)?)?;
    if t != 0x30 {
        return None;
    }
    let tbs = pos..pos + n;
    let tbs_content = pos + tbs_c.start..pos + tbs_c.end;
    pos += n;
    let (t, _, n) = tlv(cert.get(pos..body.end)?)?;
    if t != 0x30 {
        return None;
    }
    let outer_alg = cert.get(pos..pos + n)?;
    pos += n;
    let (t, c, n) = tlv(cert.get(pos..body.end)?)?;
    if t != 0x03 || c.is_empty() || pos + n != body.end {
        return None;
    }
    let sig = pos + c.start + 1..pos + c.end;
    // As Go's x509.ParseCertificate: the TBS's `signature` field equals signatureAlgorithm.
    let mut p = tbs_content.start;
    let (t, _, n) = tlv(cert.get(p..tbs_content.end)?)?;
    if t == 0xa0 {
        p += n;
        let (_, _, n) = tlv(cert.get(p..tbs_content.end)?)?; // serialNumber
        p += n;
    } else {
        p += n; // serialNumber
    }
    let (_, _, n) = tlv(cert.get(p..tbs_content.end)?)?;
    if cert.get(p..p + n)? != outer_alg {
        return None;
    }
    // SPKI: the 7th element, or 6th without the [0] version.
    let mut p = tbs_content.start;
    let mut idx = 0;
    let spki = loop {
        let (t, _, n) = tlv(cert.get(p..tbs_content.end)?)?;
        if idx == 0 && t != 0xa0 {
            idx = 1;
        }
        if idx == 6 {
            break p..p + n;
        }
        idx += 1;
        p += n;
    };
    Some(CertParts { tbs, sig, spki })
}
