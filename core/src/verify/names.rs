//! Subject and SAN checks, and the subject/SAN readers other modules use.

use super::*;

/// The bytes of a PrintableString or UTF8String attribute value.
pub(super) fn attribute_bytes<'a>(value: &Tlv<'a>) -> Option<&'a [u8]> {
    match value.tag() {
        tag::PRINTABLE_STRING | tag::UTF8_STRING => Some(value.value()),
        _ => None,
    }
}

/// The node name in a certificate's subject: the value of its one `CN`, PrintableString or
/// UTF8String, when that is `system:node:<name>` (`None` otherwise, or when the certificate does
/// not parse). Used to learn the node name from a node's own credentials; it checks nothing else
/// (use [`verify_issued`]).
pub fn subject_node_name(der: &[u8]) -> Option<&str> {
    let cert = Cert::parse(der).ok()?;
    let name = single(cert.subject, tag::SEQUENCE).ok()?;
    let mut found: Option<&[u8]> = None;
    let mut cns = 0usize;
    for_each_attribute(name.value(), |ty, value| {
        if is_oid(&ty, &oid::CN) {
            cns += 1;
            found = attribute_bytes(&value);
        }
        Ok(())
    })
    .ok()?;
    if cns != 1 {
        return None;
    }
    let node = found?.strip_prefix(b"system:node:")?;
    core::str::from_utf8(node).ok().filter(|n| !n.is_empty())
}

/// Capacity of [`Described::serial`]: a serial number of up to 20 octets (RFC 5280) in hex.
pub const SERIAL_HEX_CAP: usize = 40;

/// What a certificate says about itself, for display (`kubeboot status`). [`describe`] checks the
/// certificate's structure as [`verify_issued`] parses it, and nothing else: no signature, no
/// time, no profile.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Described {
    /// The subject, RFC 4514 style (`CN=system:node:n1,O=system:nodes`; last RDN first).
    pub subject: heapless::String<CA_SUBJECT_CAP>,
    /// The issuer, in the same style.
    pub issuer: heapless::String<CA_SUBJECT_CAP>,
    /// The serial number in lowercase hex, leading zero octets dropped (as `openssl x509
    /// -serial` prints it, in lowercase).
    pub serial: heapless::String<SERIAL_HEX_CAP>,
    /// notBefore (unix seconds).
    pub not_before: i64,
    /// notAfter (unix seconds).
    pub not_after: i64,
    /// Whether basicConstraints says it is a CA.
    pub is_ca: bool,
}

/// A subject alternative name, as [`for_each_san`] gives it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum San<'a> {
    /// A dNSName.
    Dns(&'a str),
    /// An iPAddress (an IPv4-mapped IPv6 address as its IPv4 form).
    Ip(IpAddr),
}

/// Describe the certificate `der`; [`Reason::Malformed`] if it does not parse.
pub fn describe(der: &[u8]) -> Result<Described, VerifyError> {
    let cert = Cert::parse(der)?;
    let mut d = Described {
        subject: heapless::String::new(),
        issuer: heapless::String::new(),
        serial: heapless::String::new(),
        not_before: cert.not_before,
        not_after: cert.not_after,
        is_ca: cert.ext.is_ca,
    };
    render_name(cert.subject, &mut d.subject);
    render_name(cert.issuer, &mut d.issuer);
    // The TBS as parsed above: [0] version (optional), then serialNumber.
    let mut t = reader(single(cert.tbs, tag::SEQUENCE)?.value())?;
    let (mut item, _) = next(&mut t)?;
    if context_tag(&item) == Some((true, 0)) {
        item = next(&mut t)?.0;
    }
    let serial = item.value();
    let first = serial.iter().position(|&b| b != 0).unwrap_or(serial.len().saturating_sub(1));
    for b in serial.get(first..).unwrap_or(&[]).iter().take(SERIAL_HEX_CAP / 2) {
        let _ = write_hex(&mut d.serial, *b);
    }
    Ok(d)
}

/// Call `f` with each DNS name and IP address in the certificate's subjectAltName, in order
/// (other kinds of name are skipped); [`Reason::Malformed`] if the certificate does not parse.
pub fn for_each_san(der: &[u8], mut f: impl FnMut(San<'_>)) -> Result<(), VerifyError> {
    let cert = Cert::parse(der)?;
    let mut r = reader(cert.ext.san.unwrap_or(&[]))?;
    while !r.is_finished() {
        let (gn, _) = next(&mut r)?;
        match context_tag(&gn) {
            Some((false, 2)) => {
                if let Ok(name) = core::str::from_utf8(gn.value()) {
                    f(San::Dns(name));
                }
            }
            Some((false, 7)) => {
                if let Some(ip) = ip_of(gn.value()) {
                    f(San::Ip(ip.to_canonical()));
                }
            }
            _ => {}
        }
    }
    Ok(())
}

/// Check a Name's structure (`Err`: [`Reason::Malformed`]) and whether it is the node's subject
/// (`Ok(Some(field))`: the field of a [`Reason::SubjectMismatch`], for step 5).
pub(super) fn subject_verdict(
    name: &Tlv<'_>,
    node_name: &str,
) -> Result<Option<&'static str>, VerifyError> {
    expect_tag(name, tag::SEQUENCE)?;
    let (mut cn_count, mut cn_ok, mut o_count, mut o_ok, mut other) = (0, false, 0, false, false);
    for_each_attribute(name.value(), |ty, value| {
        // Compared as bytes: equal to a `str` means valid UTF-8 too.
        let text = attribute_bytes(&value);
        if is_oid(&ty, &oid::CN) {
            cn_count += 1;
            cn_ok = text
                .and_then(|t| t.strip_prefix(b"system:node:"))
                .is_some_and(|n| n == node_name.as_bytes());
        } else if is_oid(&ty, &oid::O) {
            o_count += 1;
            o_ok = text == Some(b"system:nodes".as_slice());
        } else {
            other = true;
        }
        Ok(())
    })?;
    Ok(if cn_count != 1 || !cn_ok {
        Some("subject.CN")
    } else if o_count != 1 || !o_ok {
        Some("subject.O")
    } else if other {
        Some("subject")
    } else {
        None
    })
}

pub(super) fn ip_of(bytes: &[u8]) -> Option<IpAddr> {
    if let Ok(v4) = <[u8; 4]>::try_from(bytes) {
        Some(IpAddr::from(v4))
    } else {
        <[u8; 16]>::try_from(bytes).ok().map(|v6| IpAddr::from(v6).to_canonical())
    }
}

#[inline(never)] // keep its locals out of the caller's frame during the path search
pub(super) fn check_sans(san: Option<&[u8]>, profile: &Profile<'_>) -> Result<(), VerifyError> {
    let mismatch = VerifyError::field(Reason::SubjectMismatch, "san");
    let (dns, ips) = match profile {
        Profile::Client => return if san.is_some() { Err(mismatch) } else { Ok(()) },
        Profile::Serving { dns, ips } => (*dns, *ips),
    };
    let list = san.unwrap_or(&[]);
    // Every SAN of the certificate was requested...
    let mut r = reader(list)?;
    while !r.is_finished() {
        let (gn, _) = next(&mut r)?;
        let ok = match context_tag(&gn) {
            Some((false, 2)) => dns.iter().any(|d| d.as_bytes().eq_ignore_ascii_case(gn.value())),
            Some((false, 7)) => {
                let got = ip_of(gn.value());
                ips.iter().any(|ip| Some(ip.to_canonical()) == got)
            }
            _ => false,
        };
        if !ok {
            return Err(mismatch);
        }
    }
    // ...and every requested name is in the certificate.
    for d in dns {
        if !san_contains(list, |tag, v| tag == 2 && d.as_bytes().eq_ignore_ascii_case(v))? {
            return Err(mismatch);
        }
    }
    for ip in ips {
        let want = Some(ip.to_canonical());
        if !san_contains(list, |tag, v| tag == 7 && ip_of(v) == want)? {
            return Err(mismatch);
        }
    }
    Ok(())
}

pub(super) fn san_contains(
    list: &[u8],
    f: impl Fn(u32, &[u8]) -> bool,
) -> Result<bool, VerifyError> {
    let mut r = reader(list)?;
    while !r.is_finished() {
        let (gn, _) = next(&mut r)?;
        if let Some((false, n)) = context_tag(&gn) {
            if f(n, gn.value()) {
                return Ok(true);
            }
        }
    }
    Ok(false)
}
