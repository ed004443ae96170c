//! The serving approver's operator grammars: `policy::serving::DnsPattern::{parse, matches}`,
//! `Display`, and `KeyPolicy::{parse, allows}`, `Display`.
//!
//! Input: UTF-8 text (lossy), three lines: a pattern (also read as a key policy), a node name and
//! a DNS name.
#![no_main]

use kubeboot::Error;
use kubeboot::policy::serving::{DnsPattern, KeyPolicy};
use kubeboot::request::KeyAlgorithm;
use libfuzzer_sys::fuzz_target;

/// An independent reading of a match: the pattern's text with the node put in, compared with
/// ASCII case ignored; a leading `*.` stands for one label of letters, digits, `-`, `_`.
fn expected_match(pattern: &str, node: &str, name: &str) -> bool {
    let (wild, rest) = match pattern.strip_prefix("*.") {
        Some(r) => (true, r),
        None => (false, pattern),
    };
    let concrete = rest.replacen("{node}", node, 1);
    if wild {
        match name.split_once('.') {
            Some((label, tail)) => {
                !label.is_empty()
                    && label.len() <= 63
                    && label.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
                    && tail.eq_ignore_ascii_case(&concrete)
            }
            None => false,
        }
    } else {
        name.eq_ignore_ascii_case(&concrete)
    }
}

fuzz_target!(|data: &[u8]| {
    let text = String::from_utf8_lossy(data);
    let mut lines = text.splitn(3, '\n');
    let pattern = lines.next().unwrap_or("");
    let node = lines.next().unwrap_or("");
    let name = lines.next().unwrap_or("");

    match DnsPattern::parse(pattern) {
        Ok(p) => {
            assert_eq!(pattern.matches("{node}").count(), 1, "{pattern:?}");
            assert!(pattern.len() <= 253);
            let shown = p.to_string();
            assert_eq!(shown, pattern);
            assert_eq!(DnsPattern::parse(&shown), Ok(p));
            assert_eq!(
                p.matches(node, name),
                expected_match(pattern, node, name),
                "{pattern:?} {node:?} {name:?}"
            );
            // The node's own name always fits its pattern (for a node name that is a label).
            if !node.is_empty()
                && node.bytes().all(|b| b.is_ascii_lowercase() || b.is_ascii_digit())
            {
                let own = pattern.replacen("*.", "x.", 1).replacen("{node}", node, 1);
                assert!(p.matches(node, &own), "{pattern:?} {own:?}");
            }
        }
        Err(e) => assert_eq!(e, Error::InvalidDnsPattern),
    }

    match KeyPolicy::parse(pattern) {
        Ok(k) => {
            let items: Vec<&str> = pattern.split(',').collect();
            assert!(!items.is_empty() && items.len() <= 3);
            assert_eq!(KeyPolicy::parse(&k.to_string()), Ok(k));
            assert_eq!(k.p256, items.contains(&"ecdsa-p256"));
            assert_eq!(k.p384, items.contains(&"ecdsa-p384"));
            let rsa: Option<u16> =
                items.iter().find_map(|i| i.strip_prefix("rsa-")).map(|b| b.parse().unwrap());
            assert_eq!(k.rsa_min_bits, rsa);
            for bits in [1024usize, 2048, 3072, 4096, 4097] {
                let want = rsa.is_some_and(|m| bits >= usize::from(m) && bits <= 4096);
                assert_eq!(k.allows(KeyAlgorithm::Rsa, Some(bits)), want);
            }
            assert!(
                !k.allows(KeyAlgorithm::Ed25519, None) && !k.allows(KeyAlgorithm::EcP521, None)
            );
        }
        Err(e) => assert_eq!(e, Error::InvalidKeyPolicy),
    }
});
