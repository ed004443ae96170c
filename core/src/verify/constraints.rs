//! Name constraints (RFC 5280 §4.2.1.10) of the intermediates and the CA on a path, applied to
//! the leaf's DNS and IP subject alternative names as Go's `crypto/x509` applies them
//! (`constraints.go`, `parser.go` `parseNameConstraintsExtension`):
//!
//! * a name of a kind (DNS, IP) for which the certificate permits subtrees must be within one of
//!   them, and within none of the excluded subtrees of that kind;
//! * a DNS constraint `example.com` takes `example.com` and its subdomains, `.example.com` only
//!   the subdomains, ASCII case-insensitively; an empty one takes every name; an excluded
//!   constraint also excludes a wildcard name whose parent is the constraint's parent;
//! * an IP constraint (address and mask, 8 or 32 bytes, the mask contiguous) takes the addresses
//!   of its family within it (an IPv4-mapped IPv6 address is in neither family);
//! * email and URI subtrees do not apply (kubeboot's leaves have no such names); any other form
//!   of name makes the extension unhandled, which refuses the certificate when the extension is
//!   critical (as Go refuses it); minimum and maximum are not read (as Go).
//!
//! Only the leaf's names are checked, not an intermediate's own SANs (Go checks those too;
//! intermediates seldom carry any).

use super::*;

/// Check a NameConstraints extension value (else [`Reason::Malformed`], as Go's parser refuses
/// it): `SEQUENCE { permittedSubtrees [0] OPTIONAL, excludedSubtrees [1] OPTIONAL }` with at
/// least one subtree. Returns the SEQUENCE's contents and whether a subtree names a form that is
/// not checked (Go's `unhandled`).
pub(super) fn parse_name_constraints(value: &[u8]) -> Result<(&[u8], bool), VerifyError> {
    let seq = single(value, tag::SEQUENCE)?;
    let (mut unhandled, mut subtrees_seen, mut last) = (false, false, None);
    let mut subtrees = Subtrees::new(seq.value());
    while let Some((list, base)) = subtrees.next()? {
        if last.is_some_and(|l| list <= l) {
            return Err(malformed()); // [0] then [1], each at most once
        }
        let Some(base) = base else {
            last = Some(list);
            continue;
        };
        subtrees_seen = true;
        match context_tag(&base) {
            Some((false, 1 | 2 | 6)) if base.value().iter().all(|b| *b < 0x80) => {}
            Some((false, 7)) if ip_constraint(base.value()).is_some() => {}
            Some((false, 1 | 2 | 6 | 7)) => return Err(malformed()),
            _ => unhandled = true,
        }
    }
    if !subtrees_seen {
        return Err(malformed()); // "x509: empty name constraints extension"
    }
    Ok((seq.value(), unhandled))
}

/// The GeneralSubtrees of NameConstraints contents, in order: `(list, Some(base))` for each
/// subtree's base name (list 0: permitted, 1: excluded; minimum and maximum are not read), then
/// `(list, None)` at the end of each list.
struct Subtrees<'a> {
    lists: Der<'a>,
    list: Option<(u32, Der<'a>)>,
}

impl<'a> Subtrees<'a> {
    fn new(nc: &'a [u8]) -> Self {
        Subtrees { lists: Der(nc), list: None }
    }

    fn next(&mut self) -> Result<Option<(u32, Option<Tlv<'a>>)>, Malformed> {
        loop {
            if let Some((list, subtrees)) = &mut self.list {
                let list = *list;
                if subtrees.is_finished() {
                    self.list = None;
                    return Ok(Some((list, None)));
                }
                let (subtree, _) = next(subtrees)?;
                expect_tag(&subtree, tag::SEQUENCE)?;
                let (base, _) = next(&mut Der(subtree.value()))?;
                return Ok(Some((list, Some(base))));
            }
            if self.lists.is_finished() {
                return Ok(None);
            }
            let (list, _) = next(&mut self.lists)?;
            match context_tag(&list) {
                Some((true, n @ (0 | 1))) => self.list = Some((n, Der(list.value()))),
                _ => return Err(Malformed),
            }
        }
    }
}

/// An iPAddress constraint: an IPv4 (8 bytes) or IPv6 (32 bytes) address and a contiguous mask.
fn ip_constraint(v: &[u8]) -> Option<(&[u8], &[u8])> {
    let (address, mask) = v.split_at_checked(match v.len() {
        8 => 4,
        32 => 16,
        _ => return None,
    })?;
    // Ones, then zeros: after the first byte that is not 0xff, only zero bytes.
    let mut ended = false;
    for &b in mask {
        if ended && b != 0 || !ended && b != 0xff && b.leading_ones() + b.trailing_zeros() != 8 {
            return None;
        }
        ended |= b != 0xff;
    }
    Some((address, mask))
}

/// Whether every DNS and IP name of the leaf's SANs (`san`, GeneralNames contents) is within
/// the constraints `nc` (NameConstraints contents, checked by [`parse_name_constraints`]).
#[inline(never)]
pub(super) fn names_permitted(nc: &[u8], san: Option<&[u8]>) -> bool {
    let mut names = Der(san.unwrap_or(&[]));
    while !names.is_finished() {
        let Ok((name, _)) = next(&mut names) else {
            return false;
        };
        let ok = match context_tag(&name) {
            Some((false, kind @ (2 | 7))) => within(nc, kind, name.value()),
            _ => Ok(true),
        };
        if ok != Ok(true) {
            return false;
        }
    }
    true
}

/// One name of kind `kind` (2: dNSName, 7: iPAddress) against the constraints of that kind.
fn within(nc: &[u8], kind: u32, name: &[u8]) -> Result<bool, Malformed> {
    let (mut constrained, mut matched) = (false, false);
    let mut subtrees = Subtrees::new(nc);
    while let Some((list, base)) = subtrees.next()? {
        let Some(base) = base else {
            // End of a list: a permitted list with subtrees of this kind needs a match.
            if list == 0 && constrained && !matched {
                return Ok(false);
            }
            (constrained, matched) = (false, false);
            continue;
        };
        if context_tag(&base) != Some((false, kind)) {
            continue;
        }
        constrained = true;
        matched |= match kind {
            2 => dns_within(base.value(), name, list == 1),
            _ => ip_within(base.value(), name),
        };
        if list == 1 && matched {
            return Ok(false);
        }
    }
    Ok(true)
}

/// Whether the DNS name `name` is within the constraint `c` (Go's `dnsHasSuffix`); an excluded
/// constraint also takes a wildcard name with the same parent (`*.a.example` and `b.a.example`).
fn dns_within(c: &[u8], name: &[u8], excluded: bool) -> bool {
    let Some(at) = name.len().checked_sub(c.len()) else {
        return excluded && wildcard_sibling(c, name);
    };
    let (head, tail) = name.split_at(at);
    (tail.eq_ignore_ascii_case(c)
        && (c.first().is_none_or(|&b| b == b'.') || head.is_empty() || head.last() == Some(&b'.')))
        || excluded && wildcard_sibling(c, name)
}

/// A DNS name from its first dot on (`.rest` of `label.rest`).
fn parent(n: &[u8]) -> Option<&[u8]> {
    n.iter().position(|&b| b == b'.').and_then(|i| n.get(i..))
}

/// `*.rest` and a constraint `label.rest` (from the first dot on, ASCII case-insensitively).
fn wildcard_sibling(c: &[u8], name: &[u8]) -> bool {
    name.first() == Some(&b'*')
        && matches!((parent(name), parent(c)), (Some(a), Some(b)) if a.eq_ignore_ascii_case(b))
}

/// Whether the iPAddress SAN `ip` (4 or 16 bytes) is within the constraint `c` of its family.
fn ip_within(c: &[u8], ip: &[u8]) -> bool {
    let Some((address, mask)) = ip_constraint(c) else {
        return false;
    };
    // Go takes an IPv4-mapped IPv6 SAN as IPv4 when matching, and an IPv4 constraint is not
    // consulted for a 16-byte address: it is within no constraint.
    let mapped = ip.len() == 16 && ip.starts_with(&[0; 10]) && ip.get(10..12) == Some(&[0xff; 2]);
    ip.len() == address.len()
        && !mapped
        && ip.iter().zip(address).zip(mask).all(|((a, b), m)| a & m == b & m)
}

#[cfg(test)]
mod tests {
    extern crate std;
    use super::*;
    use std::vec;
    use std::vec::Vec;

    #[test]
    fn dns_like_go() {
        // Go's dnsHasSuffix: a label suffix, `.` for subdomains only, case-insensitive.
        assert!(dns_within(b"example.com", b"example.com", false));
        assert!(dns_within(b"example.com", b"A.Example.COM", false));
        assert!(!dns_within(b"example.com", b"testexample.com", false));
        assert!(!dns_within(b".example.com", b"example.com", false));
        assert!(dns_within(b".example.com", b"a.example.com", false));
        assert!(dns_within(b"", b"anything", false));
        assert!(!dns_within(b"a.example.com", b"*.example.com", false));
        assert!(dns_within(b"a.example.com", b"*.example.com", true));
        assert!(dns_within(b"example.com", b"*.example.com", false));
    }

    fn tlv(tag: u8, content: &[u8]) -> Vec<u8> {
        let mut v = vec![tag, content.len() as u8];
        v.extend_from_slice(content);
        v
    }

    fn subtree(base: Vec<u8>) -> Vec<u8> {
        tlv(0x30, &base)
    }

    #[test]
    fn parse_like_go() {
        let dns = subtree(tlv(0x82, b"a.example"));
        let ip = subtree(tlv(0x87, &[10, 0, 0, 0, 255, 0, 0, 0]));
        let dir = subtree(tlv(0xa4, &tlv(0x30, &[])));
        let nc = |lists: &[Vec<u8>]| tlv(0x30, &lists.concat());
        let ok = nc(&[tlv(0xa0, &[dns.clone(), ip].concat()), tlv(0xa1, &dns)]);
        assert_eq!(parse_name_constraints(&ok).map(|(_, u)| u), Ok(false));
        // A directoryName: not checked, "unhandled" (refused when critical).
        assert_eq!(parse_name_constraints(&nc(&[tlv(0xa0, &dir)])).map(|(_, u)| u), Ok(true));
        for bad in [
            nc(&[]),                                                               // no subtree at all
            nc(&[tlv(0xa0, &[])]),                   // an empty list only
            nc(&[tlv(0xa1, &dns), tlv(0xa0, &dns)]), // excluded before permitted
            nc(&[tlv(0xa0, &dns), tlv(0xa0, &dns)]), // permitted twice
            nc(&[tlv(0xa0, &subtree(tlv(0x87, &[10, 0, 0, 0, 255, 0, 255, 0])))]), // mask
            nc(&[tlv(0xa0, &subtree(tlv(0x82, "é".as_bytes())))]), // not IA5
        ] {
            assert_eq!(parse_name_constraints(&bad), Err(malformed()), "{bad:02x?}");
        }
        // The leaf's names against them: permitted DNS and IP, excluded DNS.
        let (nc, _) = parse_name_constraints(&ok).unwrap();
        let san = |names: &[Vec<u8>]| names.concat();
        let a = tlv(0x82, b"a.example");
        let b = tlv(0x82, b"b.example");
        let ip_in = tlv(0x87, &[10, 1, 2, 3]);
        let ip_out = tlv(0x87, &[192, 168, 0, 1]);
        let ip6 = tlv(0x87, &[0xfd; 16]);
        assert!(names_permitted(nc, None));
        assert!(names_permitted(nc, Some(&ip_in)));
        assert!(!names_permitted(nc, Some(&san(&[ip_out]))));
        assert!(!names_permitted(nc, Some(&san(&[ip6]))));
        assert!(!names_permitted(nc, Some(&san(&[b, ip_in.clone()]))));
        // a.example is permitted and excluded: excluded wins.
        assert!(!names_permitted(nc, Some(&san(&[a]))));
    }

    #[test]
    fn ip_like_go() {
        let v4 = [10, 0, 0, 0, 255, 0, 0, 0];
        assert!(ip_within(&v4, &[10, 1, 2, 3]));
        assert!(!ip_within(&v4, &[11, 1, 2, 3]));
        let mut mapped = [0u8; 16];
        mapped[10..12].copy_from_slice(&[0xff, 0xff]);
        mapped[12] = 10;
        assert!(!ip_within(&v4, &mapped));
        assert!(ip_constraint(&[10, 0, 0, 0, 255, 0, 255, 0]).is_none());
        assert!(ip_constraint(&[10, 0, 0, 0, 255, 0x80, 0, 0]).is_some());
        assert!(ip_constraint(&[10, 0, 0, 0, 255, 0x40, 0, 0]).is_none());
        assert!(ip_constraint(&[0; 7]).is_none());
    }
}
