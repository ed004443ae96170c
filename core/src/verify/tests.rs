extern crate std;
use super::*;
use std::vec;
use std::vec::Vec;

/// Every value of up to 3 octets over bytes that sit on the rules' edges.
fn short_values() -> impl Iterator<Item = Vec<u8>> {
    const EDGE: [u8; 8] = [0x00, 0x01, 0x07, 0x08, 0x7f, 0x80, 0xfe, 0xff];
    (0..=3u32).flat_map(|len| {
        (0..EDGE.len().pow(len)).map(move |mut i| {
            (0..len)
                .map(|_| {
                    let b = EDGE[i % EDGE.len()];
                    i /= EDGE.len();
                    b
                })
                .collect()
        })
    })
}

/// A Name of one RDN with one attribute (type OID body, string tag, value).
fn name_der(oid_body: &[u8], tag: u8, value: &[u8]) -> Vec<u8> {
    fn tlv(tag: u8, content: &[u8]) -> Vec<u8> {
        let mut v = vec![tag];
        match content.len() {
            n @ 0..=0x7f => v.push(n as u8),
            n @ 0x80..=0xff => v.extend([0x81, n as u8]),
            n => v.extend([0x82, (n >> 8) as u8, n as u8]),
        }
        v.extend_from_slice(content);
        v
    }
    let atv = [tlv(0x06, oid_body), tlv(tag, value)].concat();
    tlv(0x30, &tlv(0x31, &tlv(0x30, &atv)))
}

#[test]
fn single_cn_fast_path_renders_as_the_general_path() {
    let cn = oid::CN.as_bytes();
    let long = "k".repeat(300);
    let values: [&[u8]; 16] = [
        b"kubernetes",
        b"kubernetes-ec",
        b"",
        b" lead",
        b"trail ",
        b"#hash",
        b"mid#dle sp",
        b"a,b",
        b"a+b",
        b"q\"q",
        b"back\\slash",
        b"<>;",
        b"tab\there",
        "caf\u{e9}".as_bytes(),
        b"\xff\xfe",
        long.as_bytes(),
    ];
    let mut fast = 0;
    for v in values {
        for (tag, oid) in [(0x13, cn), (0x0c, cn), (0x16, cn), (0x13, oid::O.as_bytes())] {
            let der = name_der(oid, tag, v);
            let mut a = heapless::String::<CA_SUBJECT_CAP>::new();
            let mut b = heapless::String::<CA_SUBJECT_CAP>::new();
            render_name(&der, &mut a);
            render_name_general(&der, &mut b);
            assert_eq!(a, b, "{v:?} tag {tag:#x}");
            let mut small = heapless::String::<12>::new();
            let mut small_b = heapless::String::<12>::new();
            render_name(&der, &mut small);
            render_name_general(&der, &mut small_b);
            assert_eq!(small, small_b, "{v:?} tag {tag:#x} (capped)");
            fast += usize::from(plain_single_cn(&der).is_some());
        }
    }
    assert_eq!(fast, 2 * 5, "the fast path takes the plain CNs only");
    let two = [name_der(cn, 0x13, b"a"), name_der(cn, 0x13, b"b")].concat();
    assert_eq!(plain_single_cn(&two), None);
}

#[test]
fn hand_decoded_primitives_agree_with_der() {
    use der::Tag;
    use der::asn1::{AnyRef, BitStringRef, UintRef};
    let mut checked = 0;
    for v in short_values() {
        for tag in [Tag::Integer, Tag::BitString, Tag::Boolean, Tag::OctetString] {
            let theirs_any = AnyRef::new(tag, &v).unwrap();
            let any = Tlv { tag: tag.number().value() as u8, value: &v };
            let theirs = UintRef::try_from(theirs_any).ok().map(|u| u.as_bytes());
            assert_eq!(uint(&any), theirs, "INTEGER {tag:?} {v:02x?}");
            let theirs = BitStringRef::try_from(theirs_any).ok();
            let ours = bit_string(&any);
            assert_eq!(
                ours,
                theirs.map(|b| (b.unused_bits(), b.raw_bytes())),
                "BIT STRING {tag:?} {v:02x?}"
            );
            assert_eq!(whole_bytes(&any), theirs.and_then(|b| b.as_bytes()));
            if let Some(b) = theirs {
                let mut want = 0u16;
                for (i, set) in b.bits().enumerate().take(16) {
                    want |= u16::from(set) << i;
                }
                let mut tlv = vec![0x03, v.len() as u8];
                tlv.extend_from_slice(&v);
                assert_eq!(parse_key_usage(&tlv), Ok(want), "{v:02x?}");
            }
            let theirs = theirs_any.decode_as::<bool>().ok();
            assert_eq!(boolean(&any), theirs, "BOOLEAN {tag:?} {v:02x?}");
            checked += 1;
        }
    }
    assert_eq!(checked, 4 * (1 + 8 + 64 + 512));
}

#[test]
fn civil_days() {
    assert_eq!(crate::calendar::days_from_civil(1970, 1, 1), Some(0));
    assert_eq!(crate::calendar::days_from_civil(2000, 3, 1), Some(11_017));
    assert_eq!(crate::calendar::days_from_civil(1969, 12, 31), Some(-1));
    assert_eq!(crate::calendar::days_from_civil(2024, 2, 29), Some(19_782));
}

fn time(tag: u8, s: &str) -> Result<i64, VerifyError> {
    parse_time(&Tlv { tag, value: s.as_bytes() })
}

/// `next` against `der` (tag, header and contents) on every first octet, with every length
/// form: short, one- and two-octet long forms (shortest and not), longer forms, indefinite,
/// a length past the input, and a high tag number.
#[cfg_attr(miri, ignore = "40 000 headers through walker and der: 14 min")]
#[test]
fn next_agrees_with_der() {
    use der::{Decode, Reader, Tag};
    let lengths: [&[u8]; 13] = [
        &[0x00],
        &[0x05],
        &[0x7f],
        &[0x80],
        &[0x81, 0x05],
        &[0x81, 0x80],
        &[0x81, 0xff],
        &[0x82, 0x00, 0x90],
        &[0x82, 0x01, 0x00],
        &[0x82, 0x01, 0x2c],
        &[0x83, 0x00, 0x01, 0x2c],
        &[0x84, 0x00, 0x00, 0x01, 0x2c],
        &[0xff],
    ];
    let mut compared = 0;
    for first in 0..=255u8 {
        for tag_tail in [&[][..], &[0x1f], &[0x81, 0x00], &[0x80, 0x1f]] {
            for len in lengths {
                for content in [0usize, 4, 300] {
                    let mut input = vec![first];
                    input.extend_from_slice(tag_tail);
                    input.extend_from_slice(len);
                    input.extend(core::iter::repeat_n(0xa5, content));
                    input.push(0x00); // something after the element
                    let ours = next(&mut Der(&input))
                        .map(|(tlv, whole)| (tlv.tag, tlv.value, whole.len()));
                    let theirs = (|| {
                        let mut r = der::SliceReader::new(&input).ok()?;
                        let header = der::Header::decode(&mut r).ok()?;
                        let header_len = usize::try_from(r.position()).ok()?;
                        let len = usize::try_from(header.length()).ok()?;
                        let value = r.read_slice(header.length()).ok()?;
                        let tag: Tag = header.tag();
                        Some((tag, value, header_len + len))
                    })();
                    match (ours, theirs) {
                        (Err(e), None) => assert_eq!(e, Malformed),
                        (Ok((ours_tag, value, n)), Some((tag, v, m))) => {
                            assert_eq!((value, n), (v, m), "{input:02x?}");
                            assert_eq!(ours_tag, first, "{input:02x?}");
                            // Equal to a one-octet constant exactly when `der` says so.
                            let single = tag.number().value() < 31;
                            assert_eq!(single, first & 0x1f != 0x1f, "{input:02x?}");
                            if single {
                                let mut enc = [0u8; 6];
                                let e = der::Encode::encode_to_slice(&tag, &mut enc).unwrap();
                                assert_eq!(e, &[first][..], "{input:02x?}");
                            } else {
                                assert_eq!(first & 0x1f, 0x1f, "{input:02x?}");
                            }
                            compared += 1;
                        }
                        (ours, theirs) => {
                            panic!("{input:02x?}: ours {ours:?}, der {:?}", theirs.is_some())
                        }
                    }
                }
            }
        }
    }
    assert!(compared > 4_000, "{compared}"); // 4,976 accepted with der 0.8.3
}

#[test]
fn times() {
    assert_eq!(time(tag::UTC_TIME, "700101000000Z"), Ok(0));
    assert_eq!(time(tag::UTC_TIME, "491231235959Z"), Ok(2_524_607_999));
    assert_eq!(time(tag::UTC_TIME, "500101000000Z"), Ok(-631_152_000));
    assert_eq!(time(tag::GENERALIZED_TIME, "20500101000000Z"), Ok(2_524_608_000));
    assert_eq!(time(tag::GENERALIZED_TIME, "20240229120000Z"), Ok(1_709_208_000));
    for bad in ["20230229120000Z", "20241301000000Z", "20240101240000Z", "2024010100000Z"] {
        assert_eq!(time(tag::GENERALIZED_TIME, bad), Err(malformed()), "{bad}");
    }
    assert_eq!(time(tag::UTC_TIME, "7001010000000"), Err(malformed()));
    assert_eq!(time(tag::UTC_TIME, "700101000000+0000"), Err(malformed()));
    assert_eq!(time(tag::UTF8_STRING, "700101000000Z"), Err(malformed()));
}

#[test]
fn garbage_is_malformed() {
    let exp = Expected { node_name: "n", public_key: &[], profile: Profile::Client };
    for input in [&[][..], &[0x30], &[0x30, 0x03, 0x02, 0x01, 0x00], &[0xff; 40]] {
        assert_eq!(verify_issued_der(input, &[], &[], &exp, 0).unwrap_err(), malformed());
    }
    let big = [0x30u8; MAX_CERT_LEN + 1];
    assert_eq!(verify_issued_der(&big, &[], &[], &exp, 0).unwrap_err(), malformed());
}

#[test]
fn oid_rendering() {
    let mut s: heapless::String<64> = heapless::String::new();
    write_oid(&mut s, oid::P256.as_bytes()).unwrap();
    assert_eq!(s.as_str(), "1.2.840.10045.3.1.7");
}

#[test]
fn decimal_without_64_bit_division_matches_core_fmt() {
    let check = |v: u64| {
        let (mut got, mut want) = (heapless::String::<32>::new(), heapless::String::<32>::new());
        write_decimal(&mut got, v).unwrap();
        write!(want, "{v}").unwrap();
        assert_eq!(got, want, "{v}");
    };
    for v in [0, 1, 9, 10, 99, 100, 0xffff_ffff, 1 << 32, 42_949_672_959, 42_949_672_960] {
        check(v);
    }
    for v in [9_999_999_999_999_999_999, 10_000_000_000_000_000_000, u64::MAX - 1, u64::MAX] {
        check(v);
    }
    let mut x = 0x9e37_79b9_7f4a_7c15u64;
    // (300 under Miri: each `write!` takes about 20 ms there.)
    for _ in 0..if cfg!(miri) { 300 } else { 5000 } {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        check(x >> (x % 64));
    }
}

#[test]
fn large_oid_arcs_are_exact() {
    // 2.999 (first octets 0x88 0x37), then arcs of 2^32, 2^63 and a saturated one (> u64).
    let body = [
        0x88, 0x37, 0x90, 0x80, 0x80, 0x80, 0x00, 0x81, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80,
        0x80, 0x00, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x7f,
    ];
    let mut s: heapless::String<128> = heapless::String::new();
    write_oid(&mut s, &body).unwrap();
    assert_eq!(s.as_str(), "2.999.4294967296.9223372036854775808.18446744073709551615");
}

#[test]
fn attribute_hex_and_control_escapes() {
    let mut s: heapless::String<128> = heapless::String::new();
    let ty = Tlv { tag: tag::OID, value: oid::P256.as_bytes() };
    // The whole encoding, as Go 1.26's pkix.RDNSequence.String() writes this attribute.
    let der = [0x04, 0x04, 0x00, 0x0f, 0xa5, 0xff];
    let value = Tlv { tag: tag::OCTET_STRING, value: &der[2..] };
    write_attribute(&mut s, &ty, &value, &der).unwrap();
    assert_eq!(s.as_str(), "1.2.840.10045.3.1.7=#0404000fa5ff");
    s.clear();
    let cn = Tlv { tag: tag::OID, value: oid::CN.as_bytes() };
    let value = Tlv { tag: tag::UTF8_STRING, value: " a\x01,\u{7f}\u{9f} ".as_bytes() };
    write_attribute(&mut s, &cn, &value, &[]).unwrap();
    assert_eq!(s.as_str(), "CN=\\ a\\01\\,\\7f\\9f\\ ");
}

#[test]
fn capped_writer_truncates() {
    let mut s: heapless::String<8> = heapless::String::new();
    let mut w = Capped { out: &mut s, full: false };
    w.write_str("abcdefghijk").unwrap();
    assert_eq!(s.as_str(), "abcde...");
}
