//! Certificate and extension parsing (in place, no copy) and the validity times.

use super::*;
use crate::calendar;

/// Extensions of a certificate that matter here.
#[derive(Clone, Copy, Default)]
pub(super) struct Extensions<'a> {
    pub(super) is_ca: bool,
    pub(super) has_basic_constraints: bool,
    pub(super) path_len: Option<u32>,
    pub(super) key_usage: Option<u16>,
    /// Contents of the ExtKeyUsageSyntax SEQUENCE (OIDs).
    pub(super) eku: Option<&'a [u8]>,
    /// Contents of the GeneralNames SEQUENCE.
    pub(super) san: Option<&'a [u8]>,
    /// Contents of the NameConstraints SEQUENCE (see [`super::constraints`]).
    pub(super) name_constraints: Option<&'a [u8]>,
    pub(super) unknown_critical: bool,
}

/// A parsed, borrowed X.509 certificate.
#[derive(Clone, Copy)]
pub(super) struct Cert<'a> {
    pub(super) tbs: &'a [u8],
    pub(super) sig_alg: SignatureAlgorithm,
    pub(super) signature: &'a [u8],
    pub(super) issuer: &'a [u8],
    pub(super) subject: &'a [u8],
    pub(super) not_before: i64,
    pub(super) not_after: i64,
    pub(super) spki: &'a [u8],
    /// The public key in `spki`, as an issuer's key.
    pub(super) key: IssuerKey<'a>,
    pub(super) ext: Extensions<'a>,
}

/// The outer frame of a certificate (at most [`MAX_CERT_LEN`] bytes): one SEQUENCE of exactly a
/// TBSCertificate SEQUENCE, a signatureAlgorithm and a signatureValue, nothing after it.
pub(super) struct Frame<'a> {
    pub(super) tbs: Tlv<'a>,
    /// The whole TBSCertificate (the signed bytes).
    pub(super) tbs_der: &'a [u8],
    pub(super) alg: Tlv<'a>,
    /// The whole signatureAlgorithm (compared with the TBS's `signature` field).
    pub(super) alg_tlv: &'a [u8],
    pub(super) sig: Tlv<'a>,
}

/// Read the [`Frame`] of a certificate.
pub(super) fn frame(der: &[u8]) -> Result<Frame<'_>, VerifyError> {
    if der.len() > MAX_CERT_LEN {
        return Err(malformed());
    }
    let mut outer = reader(der)?;
    let (cert, _) = next(&mut outer)?;
    outer.finish()?;
    expect_tag(&cert, tag::SEQUENCE)?;
    let mut c = reader(cert.value())?;
    let (tbs, tbs_der) = next(&mut c)?;
    expect_tag(&tbs, tag::SEQUENCE)?;
    let (alg, alg_tlv) = next(&mut c)?;
    let (sig, _) = next(&mut c)?;
    c.finish()?;
    Ok(Frame { tbs, tbs_der, alg, alg_tlv, sig })
}

/// The SubjectPublicKeyInfo DER of a certificate, exactly as it appears in it (used for kubeadm
/// CA pins). The certificate's frame is checked as Go's `x509.ParseCertificate` checks it
/// (TBSCertificate, signatureAlgorithm equal to the TBS's `signature` field, a BIT STRING
/// signatureValue, nothing after it); the TBS fields before the key are walked without being
/// interpreted, so a CA with a key type [`verify_issued`] does not support can still be pinned.
pub(crate) fn cert_spki(der: &[u8]) -> Result<&[u8], VerifyError> {
    let Frame { tbs, alg, alg_tlv, sig, .. } = frame(der)?;
    expect_tag(&alg, tag::SEQUENCE)?;
    bit_string(&sig).ok_or_else(malformed)?;
    let mut t = reader(tbs.value())?;
    let (first, _) = next(&mut t)?;
    // [0] version (optional), serial, signature, issuer, validity, subject, spki
    if context_tag(&first) == Some((true, 0)) {
        next(&mut t)?; // serialNumber
    }
    let (_, inner_alg) = next(&mut t)?;
    if inner_alg != alg_tlv {
        return Err(malformed());
    }
    for _ in 0..3 {
        next(&mut t)?; // issuer, validity, subject
    }
    let (spki, spki_tlv) = next(&mut t)?;
    expect_tag(&spki, tag::SEQUENCE)?;
    Spki::parse(spki_tlv)?;
    Ok(spki_tlv)
}

/// The SubjectPublicKeyInfo DER and the validity (`notBefore`, `notAfter`, unix seconds) of a
/// certificate, read by the same parser as validation's (the crate's one certificate reader; the
/// store reads its cert files with it).
#[cfg(all(feature = "std", unix))]
pub(crate) fn cert_key_and_validity(der: &[u8]) -> Result<(&[u8], i64, i64), VerifyError> {
    let c = Cert::parse(der)?;
    Ok((c.spki, c.not_before, c.not_after))
}

impl<'a> Cert<'a> {
    /// Parse an intermediate or a CA (step 1).
    pub(super) fn parse(der: &'a [u8]) -> Result<Self, VerifyError> {
        Self::parse_as(der, None)
    }

    /// Parse the leaf (step 1), and check its subject against `node_name` on the way: the
    /// verdict of step 5 goes to `subject` (the field of a [`Reason::SubjectMismatch`], if any). The issuer Name is left to the caller (see
    /// [`verify_leaf`]): it matters only if it equals a subject checked by another parse.
    pub(super) fn parse_leaf(
        der: &'a [u8],
        node_name: &str,
        subject: &mut Option<&'static str>,
    ) -> Result<Self, VerifyError> {
        Self::parse_as(der, Some((node_name, subject)))
    }

    #[inline(never)] // keep its locals out of the caller's frame during the path search
    pub(super) fn parse_as(
        der: &'a [u8],
        leaf: Option<(&str, &mut Option<&'static str>)>,
    ) -> Result<Self, VerifyError> {
        let Frame { tbs: tbs_any, tbs_der: tbs, alg: alg_any, alg_tlv, sig: sig_any } = frame(der)?;
        let sig_alg = parse_sig_alg(&alg_any)?;
        let signature = whole_bytes(&sig_any).ok_or_else(malformed)?;

        let mut t = reader(tbs_any.value())?;
        let (mut item, _) = next(&mut t)?;
        if context_tag(&item) == Some((true, 0)) {
            // version [0] EXPLICIT INTEGER
            let mut v = reader(item.value())?;
            let (version, _) = next(&mut v)?;
            v.finish()?;
            expect_tag(&version, tag::INTEGER)?;
            item = next(&mut t)?.0;
        }
        // serialNumber: a positive (or zero) INTEGER in its shortest form, as Go's
        // x509.ParseCertificate requires since Go 1.23 ("x509: negative serial number").
        uint(&item).ok_or_else(malformed)?;
        let (_, inner_alg) = next(&mut t)?;
        if inner_alg != alg_tlv {
            return Err(malformed());
        }
        let (issuer_any, issuer) = next(&mut t)?;
        if leaf.is_none() {
            check_name(&issuer_any)?;
        }
        let (validity, _) = next(&mut t)?;
        expect_tag(&validity, tag::SEQUENCE)?;
        let mut v = reader(validity.value())?;
        let not_before = parse_time(&next(&mut v)?.0)?;
        let not_after = parse_time(&next(&mut v)?.0)?;
        v.finish()?;
        let (subject_any, subject) = next(&mut t)?;
        match leaf {
            Some((node_name, verdict)) => *verdict = subject_verdict(&subject_any, node_name)?,
            None if subject != issuer => check_name(&subject_any)?,
            None => {} // a self-signed CA's was just checked
        }
        let (spki_any, spki) = next(&mut t)?;
        expect_tag(&spki_any, tag::SEQUENCE)?;
        let key = issuer_key(&Spki::parse(spki)?);

        let mut ext = Extensions::default();
        let mut last = 0u32;
        while !t.is_finished() {
            let (item, _) = next(&mut t)?;
            let number = match context_tag(&item) {
                Some((_, n @ (1 | 2))) if n > last => n, // issuer/subject unique IDs
                Some((true, 3)) if last < 3 => 3,
                _ => return Err(malformed()),
            };
            last = number;
            if number == 3 {
                ext = parse_extensions(item.value())?;
            }
        }
        Ok(Cert { tbs, sig_alg, signature, issuer, subject, not_before, not_after, spki, key, ext })
    }

    pub(super) fn check_time(&self, now: i64) -> Result<(), VerifyError> {
        let detail =
            Detail::Validity { not_before: self.not_before, not_after: self.not_after, now };
        if now < self.not_before {
            Err(VerifyError { reason: Reason::NotYetValid, detail })
        } else if now > self.not_after {
            Err(VerifyError { reason: Reason::Expired, detail })
        } else {
            Ok(())
        }
    }

    /// Why this certificate cannot issue a certificate `depth` intermediates above the leaf
    /// (then [`Cert::chain_constraint`]).
    pub(super) fn issuer_constraint(&self, depth: usize, leaf: &Leaf<'_>) -> Option<&'static str> {
        if !self.ext.is_ca {
            Some("issuer.basicConstraints")
        } else if self.ext.key_usage.is_some_and(|ku| ku & KU_KEY_CERT_SIGN == 0) {
            Some("issuer.keyUsage")
        } else if self.ext.path_len.is_some_and(|max| depth > max as usize) {
            Some("issuer.pathLenConstraint")
        } else if self.ext.unknown_critical {
            Some("issuer.criticalExtension")
        } else {
            self.chain_constraint(leaf)
        }
    }

    /// Why the leaf cannot chain through this intermediate or CA, by what Go's `x509.Verify`
    /// checks on every certificate of a chain, the CA included: the leaf's purpose must be among
    /// its extendedKeyUsage (or anyExtendedKeyUsage) when it has the extension, and the leaf's
    /// DNS and IP SANs within its nameConstraints.
    pub(super) fn chain_constraint(&self, leaf: &Leaf<'_>) -> Option<&'static str> {
        let allows = |list| {
            oid_list_contains(list, leaf.purpose).unwrap_or(false)
                || oid_list_contains(list, &oid::ANY_EXT_KEY_USAGE).unwrap_or(false)
        };
        if self.ext.eku.is_some_and(|list| !allows(list)) {
            Some("issuer.extendedKeyUsage")
        } else if self.ext.name_constraints.is_some_and(|nc| !names_permitted(nc, leaf.san)) {
            Some("issuer.nameConstraints")
        } else {
            None
        }
    }
}

pub(super) fn parse_sig_alg(any: &Tlv<'_>) -> Result<SignatureAlgorithm, VerifyError> {
    expect_tag(any, tag::SEQUENCE)?;
    let mut r = reader(any.value())?;
    let (id, _) = next(&mut r)?;
    expect_tag(&id, tag::OID)?;
    let params = if r.is_finished() { None } else { Some(next(&mut r)?.0) };
    r.finish()?;
    let rsa_params_ok = params.is_none_or(|p| p.is_null());
    Ok(if is_oid(&id, &oid::ECDSA_SHA256) && params.is_none() {
        SignatureAlgorithm::EcdsaSha256
    } else if is_oid(&id, &oid::ECDSA_SHA384) && params.is_none() {
        SignatureAlgorithm::EcdsaSha384
    } else if is_oid(&id, &oid::ECDSA_SHA512) && params.is_none() {
        SignatureAlgorithm::EcdsaSha512
    } else if is_oid(&id, &oid::RSA_SHA256) && rsa_params_ok {
        SignatureAlgorithm::RsaSha256
    } else if is_oid(&id, &oid::RSA_SHA384) && rsa_params_ok {
        SignatureAlgorithm::RsaSha384
    } else if is_oid(&id, &oid::RSA_SHA512) && rsa_params_ok {
        SignatureAlgorithm::RsaSha512
    } else {
        SignatureAlgorithm::Other
    })
}

/// Name ::= SEQUENCE OF SET OF SEQUENCE { type OID, value ANY }
pub(super) fn check_name(any: &Tlv<'_>) -> Result<(), VerifyError> {
    expect_tag(any, tag::SEQUENCE)?;
    for_each_attribute(any.value(), |_, _| Ok(()))
}

/// The error of a validation whose path search failed with `e`. The leaf's parse skipped its
/// issuer Name: a path is found only if it equals, byte for byte, the subject of an
/// intermediate or a CA (each checked by its own parse). Without a path it is checked here, so a
/// malformed one is still step 1's [`Reason::Malformed`]. (Out of line and cold: its locals stay
/// out of [`verify_leaf`]'s frame, which is live during the signature checks.)
#[cold]
#[inline(never)]
pub(super) fn no_path(leaf_issuer: &[u8], e: VerifyError) -> VerifyError {
    match single(leaf_issuer, tag::SEQUENCE) {
        Ok(name) => match check_name(&name) {
            Ok(()) => e,
            Err(malformed) => malformed,
        },
        Err(malformed) => malformed.into(),
    }
}

/// Call `f(type, value)` for every attribute of every RDN of a Name's contents, in order.
pub(super) fn for_each_attribute<'a>(
    name_contents: &'a [u8],
    mut f: impl FnMut(Tlv<'a>, Tlv<'a>) -> Result<(), VerifyError>,
) -> Result<(), VerifyError> {
    let mut rdns = reader(name_contents)?;
    while !rdns.is_finished() {
        let (set, _) = next(&mut rdns)?;
        expect_tag(&set, tag::SET)?;
        let mut atvs = reader(set.value())?;
        if atvs.is_finished() {
            return Err(malformed());
        }
        while !atvs.is_finished() {
            let (atv, _) = next(&mut atvs)?;
            expect_tag(&atv, tag::SEQUENCE)?;
            let mut a = reader(atv.value())?;
            let (ty, _) = next(&mut a)?;
            expect_tag(&ty, tag::OID)?;
            let (value, _) = next(&mut a)?;
            a.finish()?;
            f(ty, value)?;
        }
    }
    Ok(())
}

/// The extensions [`parse_extensions`] reads, by the last arc of their OID: all seven are under
/// id-ce (2.5.29, DER `55 1d`), so one byte tells them apart (checked at compile time).
pub(super) static KNOWN_EXTENSIONS: [u8; 7] = [
    id_ce_arc(&oid::BASIC_CONSTRAINTS),
    id_ce_arc(&oid::KEY_USAGE),
    id_ce_arc(&oid::EXT_KEY_USAGE),
    id_ce_arc(&oid::SUBJECT_ALT_NAME),
    id_ce_arc(&oid::SUBJECT_KEY_ID),
    id_ce_arc(&oid::AUTHORITY_KEY_ID),
    id_ce_arc(&oid::NAME_CONSTRAINTS),
];

/// The DER encoding of id-ce (2.5.29).
pub(super) const ID_CE: [u8; 2] = [0x55, 0x1d];

/// The last arc of an OID `2.5.29.n` with n < 128 (one content byte after [`ID_CE`]). Only
/// evaluated at compile time (in [`KNOWN_EXTENSIONS`]): the panic is a build error.
#[allow(clippy::panic)]
pub(super) const fn id_ce_arc(oid: &ObjectIdentifier) -> u8 {
    match oid.as_bytes() {
        [0x55, 0x1d, n] if *n < 0x80 => *n,
        _ => panic!("not an id-ce OID with a one-byte last arc"),
    }
}

/// The index in [`KNOWN_EXTENSIONS`] of an extension's OID contents, if it is one of them.
pub(super) fn known_extension(oid: &[u8]) -> Option<usize> {
    match oid {
        [a, b, n] if [*a, *b] == ID_CE => KNOWN_EXTENSIONS.iter().position(|k| k == n),
        _ => None,
    }
}

#[inline(never)] // keep its locals out of the caller's frame during the path search
pub(super) fn parse_extensions(explicit: &[u8]) -> Result<Extensions<'_>, VerifyError> {
    let mut wrapper = reader(explicit)?;
    let (seq, _) = next(&mut wrapper)?;
    wrapper.finish()?;
    expect_tag(&seq, tag::SEQUENCE)?;
    let mut list = reader(seq.value())?;
    let mut ext = Extensions::default();
    let mut seen = [false; KNOWN_EXTENSIONS.len()];
    let mut count = 0usize;
    while !list.is_finished() {
        count += 1;
        if count > 64 {
            return Err(malformed());
        }
        let (e, _) = next(&mut list)?;
        expect_tag(&e, tag::SEQUENCE)?;
        let mut r = reader(e.value())?;
        let (id, _) = next(&mut r)?;
        expect_tag(&id, tag::OID)?;
        let (mut item, _) = next(&mut r)?;
        let mut critical = false;
        if item.tag() == tag::BOOLEAN {
            critical = boolean(&item).ok_or_else(malformed)?;
            item = next(&mut r)?.0;
        }
        expect_tag(&item, tag::OCTET_STRING)?;
        r.finish()?;
        let value = item.value();

        let Some(k) = known_extension(id.value()) else {
            // Duplicates of unknown extensions are not detected (no heap to remember them).
            ext.unknown_critical |= critical;
            continue;
        };
        let slot = seen.get_mut(k).ok_or_else(malformed)?;
        if *slot {
            return Err(malformed()); // RFC 5280: an extension appears at most once
        }
        *slot = true;
        match k {
            0 => parse_basic_constraints(value, &mut ext)?,
            1 => ext.key_usage = Some(parse_key_usage(value)?),
            2 => ext.eku = Some(parse_eku(value)?),
            3 => ext.san = Some(parse_san(value)?),
            // SKI / AKI: not needed (names are matched by bytes); RFC 5280 says they MUST NOT be
            // critical, and Go's x509.ParseCertificate refuses a certificate where one is.
            4 | 5 if critical => return Err(malformed()),
            6 => {
                let (nc, unhandled) = parse_name_constraints(value)?;
                ext.name_constraints = Some(nc);
                // A form of name kubeboot does not check (Go's `unhandled`): honoured only if
                // the extension is not critical.
                ext.unknown_critical |= critical && unhandled;
            }
            _ => {}
        }
    }
    Ok(ext)
}

/// BasicConstraints ::= SEQUENCE { cA BOOLEAN DEFAULT FALSE, pathLenConstraint INTEGER OPTIONAL }
pub(super) fn parse_basic_constraints(
    value: &[u8],
    ext: &mut Extensions<'_>,
) -> Result<(), VerifyError> {
    let seq = single(value, tag::SEQUENCE)?;
    let mut r = reader(seq.value())?;
    ext.has_basic_constraints = true;
    if r.is_finished() {
        return Ok(());
    }
    let (mut item, _) = next(&mut r)?;
    if item.tag() == tag::BOOLEAN {
        ext.is_ca = boolean(&item).ok_or_else(malformed)?;
        if r.is_finished() {
            return Ok(());
        }
        item = next(&mut r)?.0;
    }
    let n = uint(&item).ok_or_else(malformed)?;
    let mut v: u32 = 0;
    for b in n {
        v = v.saturating_mul(256).saturating_add(u32::from(*b));
    }
    ext.path_len = Some(v);
    Ok(r.finish()?)
}

/// KeyUsage ::= BIT STRING; bit i (RFC 5280 numbering) → bit i of the result.
pub(super) fn parse_key_usage(value: &[u8]) -> Result<u16, VerifyError> {
    let any = single(value, tag::BIT_STRING)?;
    let (unused, bytes) = bit_string(&any).ok_or_else(malformed)?;
    let bit_len = (bytes.len() * 8).saturating_sub(usize::from(unused));
    let mut out = 0u16;
    for i in 0..bit_len.min(16) {
        if bytes.get(i / 8).is_some_and(|b| b & (0x80 >> (i % 8)) != 0) {
            out |= 1 << i;
        }
    }
    Ok(out)
}

/// ExtKeyUsageSyntax ::= SEQUENCE SIZE (1..MAX) OF KeyPurposeId
pub(super) fn parse_eku(value: &[u8]) -> Result<&[u8], VerifyError> {
    let seq = single(value, tag::SEQUENCE)?;
    let mut r = reader(seq.value())?;
    while !r.is_finished() {
        expect_tag(&next(&mut r)?.0, tag::OID)?;
    }
    Ok(seq.value())
}

pub(super) fn oid_list_contains(
    list: &[u8],
    wanted: &ObjectIdentifier,
) -> Result<bool, VerifyError> {
    let mut r = reader(list)?;
    while !r.is_finished() {
        if is_oid(&next(&mut r)?.0, wanted) {
            return Ok(true);
        }
    }
    Ok(false)
}

/// GeneralNames ::= SEQUENCE SIZE (1..MAX) OF GeneralName; dNSName [2] IA5String and
/// iPAddress [7] OCTET STRING (4 or 16 bytes) are checked, the others only framed.
pub(super) fn parse_san(value: &[u8]) -> Result<&[u8], VerifyError> {
    let seq = single(value, tag::SEQUENCE)?;
    let mut r = reader(seq.value())?;
    while !r.is_finished() {
        let (gn, _) = next(&mut r)?;
        match context_tag(&gn) {
            Some((false, 2)) if gn.value().is_ascii() => {}
            Some((false, 7)) if matches!(gn.value().len(), 4 | 16) => {}
            Some((_, n)) if n <= 8 && n != 2 && n != 7 => {}
            _ => return Err(malformed()),
        }
    }
    Ok(seq.value())
}

/// At most 4 ASCII digits (callers pass 2 or 4) as a number.
pub(super) fn digits(bytes: &[u8]) -> Option<i32> {
    let mut v = 0i32;
    for b in bytes {
        if !b.is_ascii_digit() {
            return None;
        }
        v = v * 10 + i32::from(b - b'0');
    }
    Some(v)
}

/// UTCTime `YYMMDDHHMMSSZ` (1950–2049) or GeneralizedTime `YYYYMMDDHHMMSSZ` → unix seconds.
pub(super) fn parse_time(any: &Tlv<'_>) -> Result<i64, VerifyError> {
    let v = any.value();
    let (year, rest) = match any.tag() {
        tag::UTC_TIME if v.len() == 13 => {
            let yy = digits(v.get(..2).ok_or_else(malformed)?).ok_or_else(malformed)?;
            (if yy >= 50 { 1900 + yy } else { 2000 + yy }, v.get(2..).ok_or_else(malformed)?)
        }
        tag::GENERALIZED_TIME if v.len() == 15 => (
            digits(v.get(..4).ok_or_else(malformed)?).ok_or_else(malformed)?,
            v.get(4..).ok_or_else(malformed)?,
        ),
        _ => return Err(malformed()),
    };
    let field = |i: usize| rest.get(i..i + 2).and_then(digits).ok_or_else(malformed);
    let (mo, d, h, mi, s) = (field(0)?, field(2)?, field(4)?, field(6)?, field(8)?);
    if rest.get(10) != Some(&b'Z')
        || !(1..=12).contains(&mo)
        || d < 1
        || d > i32::from(calendar::days_in_month(i64::from(year), mo as u8))
        || h > 23
        || mi > 59
        || s > 59
    {
        return Err(malformed());
    }
    // Years 0..=9999 and a valid date: the day count exists.
    let days =
        calendar::days_from_civil(i64::from(year), mo as u8, d as u8).ok_or_else(malformed)?;
    Ok(days * 86_400 + i64::from(h * 3600 + mi * 60 + s))
}
