//! What an operator writes to configure the serving approver: DNS name patterns bound to the
//! node's name, and the key types and sizes it approves. One grammar each, parsed here.

use core::fmt;

use crate::error::{Error, Result};
use crate::request::KeyAlgorithm;

/// The placeholder of a [`DnsPattern`] that stands for the node's name.
pub const NODE_PLACEHOLDER: &str = "{node}";

/// The longest DNS name (and pattern) in bytes.
const MAX_DNS_NAME: usize = 253;

/// A DNS name a node may carry in its serving certificate beyond its Node's addresses, written
/// by the operator with `{node}` standing for the node's name: `{node}.nodes.example.com`,
/// `ip-{node}.ec2.internal`, or `*.{node}.example.com` (a leading `*.` matches exactly one label
/// of letters, digits, `-` or `_`; a wildcard SAN is never matched).
///
/// `{node}` must appear exactly once, so every pattern is bound to the requesting node: no
/// pattern can let two nodes claim the same name. With a sample node name in its place the
/// pattern must be a valid DNS name (labels of 1–63 bytes, at most 253 bytes); `{` and `}`
/// appear nowhere else. Anything else is [`Error::InvalidDnsPattern`]. Names compare with ASCII
/// case ignored, as DNS compares them.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DnsPattern<'a> {
    wildcard: bool,
    prefix: &'a str,
    suffix: &'a str,
}

fn is_label_byte(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b == b'-' || b == b'_'
}

/// Whether `name` is a DNS name of labels of 1–63 letters, digits, `-` (not at either end) or
/// `_`, at most [`MAX_DNS_NAME`] bytes (no wildcard).
fn is_dns_name(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= MAX_DNS_NAME
        && name.split('.').all(|l| {
            let b = l.as_bytes();
            (1..=63).contains(&b.len())
                && b.iter().all(|&c| is_label_byte(c))
                && b.first() != Some(&b'-')
                && b.last() != Some(&b'-')
        })
}

/// `a` starts with `b`, ASCII case ignored; the rest of `a`.
fn strip_prefix_ci<'s>(a: &'s str, b: &str) -> Option<&'s str> {
    let head = a.get(..b.len())?;
    if head.eq_ignore_ascii_case(b) { a.get(b.len()..) } else { None }
}

impl<'a> DnsPattern<'a> {
    /// Parse a pattern (see the type's docs for the grammar).
    pub fn parse(s: &'a str) -> Result<Self> {
        let err = Error::InvalidDnsPattern;
        if s.len() > MAX_DNS_NAME {
            return Err(err);
        }
        let (wildcard, rest) = match s.strip_prefix("*.") {
            Some(rest) => (true, rest),
            None => (false, s),
        };
        let (prefix, suffix) = rest.split_once(NODE_PLACEHOLDER).ok_or(err)?;
        if [prefix, suffix].iter().any(|p| p.contains(['{', '}', '*'])) {
            return Err(err);
        }
        // With a one-letter node name in its place, the pattern is a DNS name.
        let mut sample = heapless::String::<{ MAX_DNS_NAME + 1 }>::new();
        sample.push_str(prefix).map_err(|_| err)?;
        sample.push('n').map_err(|_| err)?;
        sample.push_str(suffix).map_err(|_| err)?;
        if !is_dns_name(&sample) {
            return Err(err);
        }
        Ok(DnsPattern { wildcard, prefix, suffix })
    }

    /// Whether `name` (a DNS SAN) is this pattern for node `node`.
    pub fn matches(&self, node: &str, name: &str) -> bool {
        let rest = if self.wildcard {
            let Some((label, rest)) = name.split_once('.') else { return false };
            if label.is_empty() || label.len() > 63 || !label.bytes().all(is_label_byte) {
                return false;
            }
            rest
        } else {
            name
        };
        strip_prefix_ci(rest, self.prefix)
            .and_then(|r| strip_prefix_ci(r, node))
            .is_some_and(|r| r.eq_ignore_ascii_case(self.suffix))
    }
}

impl fmt::Display for DnsPattern<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let star = if self.wildcard { "*." } else { "" };
        write!(f, "{star}{}{NODE_PLACEHOLDER}{}", self.prefix, self.suffix)
    }
}

/// The key types and sizes the serving approver approves, written as a comma-separated list of
/// `ecdsa-p256`, `ecdsa-p384` and `rsa-<bits>` (RSA keys of at least `<bits>`, 1024 to 4096;
/// larger RSA keys cannot be verified here), each kind at most once, in any order:
/// `ecdsa-p256,ecdsa-p384,rsa-2048` is [`KeyPolicy::DEFAULT`]. Anything else is
/// [`Error::InvalidKeyPolicy`]. Other key types (P-521, Ed25519, ...) are never approved.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct KeyPolicy {
    /// ECDSA P-256 keys (the kubelet's and kubeboot's).
    pub p256: bool,
    /// ECDSA P-384 keys.
    pub p384: bool,
    /// RSA keys of at least this many bits (up to 4096); `None`: no RSA key.
    pub rsa_min_bits: Option<u16>,
}

/// The largest RSA key whose signature is checked.
const RSA_MAX_BITS: u16 = 4096;
/// The smallest RSA minimum that may be configured (Go refuses smaller keys).
const RSA_MIN_BITS: u16 = 1024;

impl KeyPolicy {
    /// ECDSA P-256 and P-384, RSA of at least 2048 bits.
    pub const DEFAULT: KeyPolicy = KeyPolicy { p256: true, p384: true, rsa_min_bits: Some(2048) };

    /// Parse the list (see the type's docs).
    pub fn parse(s: &str) -> Result<Self> {
        let err = Error::InvalidKeyPolicy;
        let mut policy = KeyPolicy { p256: false, p384: false, rsa_min_bits: None };
        for item in s.split(',') {
            match item {
                "ecdsa-p256" if !policy.p256 => policy.p256 = true,
                "ecdsa-p384" if !policy.p384 => policy.p384 = true,
                _ => {
                    let bits = item.strip_prefix("rsa-").ok_or(err)?;
                    if policy.rsa_min_bits.is_some()
                        || bits.is_empty()
                        || !bits.bytes().all(|b| b.is_ascii_digit())
                        || bits.starts_with('0')
                    {
                        return Err(err);
                    }
                    let bits: u16 = bits.parse().map_err(|_| err)?;
                    if !(RSA_MIN_BITS..=RSA_MAX_BITS).contains(&bits) {
                        return Err(err);
                    }
                    policy.rsa_min_bits = Some(bits);
                }
            }
        }
        Ok(policy)
    }

    /// Whether a key of `algorithm` (for RSA, of `rsa_bits` bits) is approved.
    pub fn allows(&self, algorithm: KeyAlgorithm, rsa_bits: Option<usize>) -> bool {
        match algorithm {
            KeyAlgorithm::EcP256 => self.p256,
            KeyAlgorithm::EcP384 => self.p384,
            KeyAlgorithm::Rsa => match (self.rsa_min_bits, rsa_bits) {
                (Some(min), Some(bits)) => {
                    (usize::from(min)..=usize::from(RSA_MAX_BITS)).contains(&bits)
                }
                _ => false,
            },
            _ => false,
        }
    }
}

impl Default for KeyPolicy {
    fn default() -> Self {
        KeyPolicy::DEFAULT
    }
}

impl fmt::Display for KeyPolicy {
    /// The list in the grammar [`KeyPolicy::parse`] reads (empty when nothing is allowed).
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut sep = "";
        for (on, name) in [(self.p256, "ecdsa-p256"), (self.p384, "ecdsa-p384")] {
            if on {
                write!(f, "{sep}{name}")?;
                sep = ",";
            }
        }
        if let Some(bits) = self.rsa_min_bits {
            write!(f, "{sep}rsa-{bits}")?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    extern crate std;
    use super::*;
    use std::string::ToString;

    #[test]
    fn patterns_parse() {
        for ok in [
            "{node}",
            "{node}.nodes.example.com",
            "ip-{node}.ec2.internal",
            "*.{node}.example.com",
            "{node}-serving.example",
            "A{node}.Example.COM",
        ] {
            let p = DnsPattern::parse(ok).unwrap();
            assert_eq!(p.to_string(), ok);
        }
        // 253 bytes is the longest pattern.
        let longest = std::format!("{{node}}.{}", "a.".repeat(122) + "bc");
        assert_eq!(longest.len(), 253);
        assert!(DnsPattern::parse(&longest).is_ok());
        let too_long = std::format!("{longest}d");
        assert_eq!(DnsPattern::parse(&too_long), Err(Error::InvalidDnsPattern));
        for bad in [
            "",
            "node",
            "example.com",
            "{node}.{node}.example",
            "*.example.com",
            "*",
            "*.",
            "*.*.{node}",
            "x.*.{node}",
            "{node}.",
            ".{node}",
            "{node}..a",
            "{node}.-a.example",
            "{node}-.example",
            "-{node}",
            "{node}.ex ample",
            "{node}.ex{ample",
            "{nod}.example",
            "{NODE}.example",
            "{node}.é.example",
            "{node}.aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa",
        ] {
            assert_eq!(DnsPattern::parse(bad), Err(Error::InvalidDnsPattern), "{bad:?}");
        }
    }

    #[test]
    fn patterns_match_only_their_node() {
        let p = DnsPattern::parse("{node}.nodes.example.com").unwrap();
        assert!(p.matches("node-a", "node-a.nodes.example.com"));
        assert!(p.matches("node-a", "NODE-A.Nodes.Example.Com"));
        assert!(!p.matches("node-b", "node-a.nodes.example.com"));
        assert!(!p.matches("node-a", "node-a.nodes.example.com.evil"));
        assert!(!p.matches("node-a", "xnode-a.nodes.example.com"));
        assert!(!p.matches("node-a", "node-a.nodes.example.co"));
        assert!(!p.matches("node-a", ""));
        let w = DnsPattern::parse("*.{node}.example").unwrap();
        assert!(w.matches("n1", "x.n1.example"));
        assert!(w.matches("n1", "x_y-1.n1.example"));
        assert!(!w.matches("n1", "n1.example"));
        assert!(!w.matches("n1", "*.n1.example"), "a wildcard SAN is not a label");
        assert!(!w.matches("n1", "a.b.n1.example"), "one label only");
        assert!(!w.matches("n1", ".n1.example"));
        // A multi-label node name fills the placeholder as a whole.
        let q = DnsPattern::parse("ip-{node}.internal").unwrap();
        assert!(q.matches("10-0-0-1.zone", "ip-10-0-0-1.zone.internal"));
        // Non-ASCII input never panics and never matches.
        assert!(!q.matches("n", "ip-ñ.internal"));
        assert!(!w.matches("n", "é.n.example"));
    }

    #[test]
    fn key_policies() {
        assert_eq!(KeyPolicy::parse("ecdsa-p256,ecdsa-p384,rsa-2048"), Ok(KeyPolicy::DEFAULT));
        assert_eq!(KeyPolicy::DEFAULT.to_string(), "ecdsa-p256,ecdsa-p384,rsa-2048");
        assert_eq!(KeyPolicy::default(), KeyPolicy::DEFAULT);
        let only = KeyPolicy::parse("ecdsa-p256").unwrap();
        assert_eq!(only.to_string(), "ecdsa-p256");
        assert!(only.allows(KeyAlgorithm::EcP256, None));
        assert!(!only.allows(KeyAlgorithm::EcP384, None));
        assert!(!only.allows(KeyAlgorithm::Rsa, Some(4096)));
        let rsa = KeyPolicy::parse("rsa-3072,ecdsa-p384").unwrap();
        assert_eq!(rsa.to_string(), "ecdsa-p384,rsa-3072");
        assert!(!rsa.allows(KeyAlgorithm::Rsa, Some(2048)));
        assert!(rsa.allows(KeyAlgorithm::Rsa, Some(3072)));
        assert!(rsa.allows(KeyAlgorithm::Rsa, Some(4096)));
        assert!(!rsa.allows(KeyAlgorithm::Rsa, Some(8192)));
        assert!(!rsa.allows(KeyAlgorithm::Rsa, None));
        for other in [
            KeyAlgorithm::EcP521,
            KeyAlgorithm::EcOther,
            KeyAlgorithm::Ed25519,
            KeyAlgorithm::Other,
        ] {
            assert!(!KeyPolicy::DEFAULT.allows(other, Some(2048)));
        }
        for bad in [
            "",
            ",",
            "ecdsa-p256,",
            "ecdsa-p256,ecdsa-p256",
            "rsa-2048,rsa-4096",
            "rsa-",
            "rsa-0",
            "rsa-02048",
            "rsa-+2048",
            "rsa-1023",
            "rsa-4097",
            "rsa-99999999999999999999",
            "ECDSA-P256",
            "ecdsa-p521",
            "ed25519",
            " ecdsa-p256",
        ] {
            assert_eq!(KeyPolicy::parse(bad), Err(Error::InvalidKeyPolicy), "{bad:?}");
        }
    }
}
