//! The TLS server-certificate check (`verify::verify_server_der`, `ServerName::parse`,
//! `ServerKey::verify_signature`) on arbitrary chains, CA sets, dialed hosts and handshake
//! signatures. Structure-aware: raw bytes, or byte edits of a real P-256 chain (the serving leaf,
//! its intermediate and root of `seeds/verify_issued/`: SANs `node-1.example` and `10.0.0.7`,
//! serverAuth).
//!
//! Properties:
//! * the untouched chain is accepted for each of its names at a time inside its validity;
//! * an accepted chain: its leaf describes, `not_before <= now <= not_after`, and the dialed name
//!   is one of the leaf's SANs (IP for IP, DNS case-insensitively or by a one-label wildcard),
//!   checked here with the crate's SAN iterator and an independent matcher;
//! * a DNS name `ServerName::parse` accepts is letters, digits, `-` and `.`, at most 253 bytes;
//! * the ring backend gives the same verdicts as the portable one (chain and signature).
#![no_main]

use arbitrary::Arbitrary;
use kubeboot::backend::Software;
use kubeboot::backend::ring::Ring;
use kubeboot::verify::{self, San, ServerName, TrustedCas};
use libfuzzer_sys::fuzz_target;

const LEAF: &[u8] = include_bytes!("../seeds/verify_issued/p256-serving-leaf.der");
const INTER: &[u8] = include_bytes!("../seeds/verify_issued/p256-intermediate.der");
const ROOT: &[u8] = include_bytes!("../seeds/verify_issued/p256-root.der");
/// 2027-06-01, inside the seeds' validity.
const LATER: i64 = 1_811_808_000;
/// Names the seed leaf carries (in another case too), and one it does not.
const NAMES: [&str; 4] = ["node-1.example", "NODE-1.Example.", "10.0.0.7", "::ffff:10.0.0.7"];

#[derive(Arbitrary, Debug)]
enum Cert {
    Raw(Vec<u8>),
    /// One of the seeds (0 leaf, 1 intermediate, 2 root), with some bytes set.
    Seed {
        which: u8,
        edits: Vec<(u16, u8)>,
    },
}

impl Cert {
    fn bytes(&self) -> Vec<u8> {
        match self {
            Cert::Raw(b) => b.clone(),
            Cert::Seed { which, edits } => {
                let mut d = [LEAF, INTER, ROOT][usize::from(*which % 3)].to_vec();
                for (at, v) in edits.iter().take(4) {
                    let i = usize::from(*at) % d.len();
                    d[i] = *v;
                }
                d
            }
        }
    }
}

#[derive(Arbitrary, Debug)]
enum Host {
    Seed(u8),
    Any(String),
}

#[derive(Arbitrary, Debug)]
struct Input {
    chain: Vec<Cert>,
    cas: Vec<Cert>,
    host: Host,
    /// Seconds from LATER.
    offset: i32,
    scheme: u16,
    message: Vec<u8>,
    signature: Vec<u8>,
}

/// An independent reading of RFC 6125 for one dNSName: case-insensitive, `*.` only as the whole
/// leftmost label.
fn dns_ok(pattern: &str, host: &str) -> bool {
    let pattern = pattern.strip_suffix('.').unwrap_or(pattern).to_ascii_lowercase();
    let host = host.to_ascii_lowercase();
    match pattern.strip_prefix("*.") {
        Some(rest) => host
            .split_once('.')
            .is_some_and(|(first, tail)| !first.is_empty() && !rest.is_empty() && tail == rest),
        None => pattern == host,
    }
}

fn sanity() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        let cas = TrustedCas::<1>::from_der(&[ROOT]).expect("root parses");
        for n in NAMES {
            let name = ServerName::parse(n).expect("seed name parses");
            let r = verify::verify_server_der(&Software, &[LEAF, INTER], &cas, &name, LATER);
            assert!(r.is_ok(), "the seed chain for {n}: {r:?}");
        }
    });
}

fuzz_target!(|input: Input| {
    sanity();
    let chain: Vec<Vec<u8>> = input.chain.iter().take(10).map(Cert::bytes).collect();
    let cas: Vec<Vec<u8>> = input.cas.iter().take(3).map(Cert::bytes).collect();
    let host = match &input.host {
        Host::Seed(i) => NAMES[usize::from(*i) % NAMES.len()].to_string(),
        Host::Any(s) => s.clone(),
    };
    let now = LATER + i64::from(input.offset);
    let name = match ServerName::parse(&host) {
        Ok(n) => n,
        Err(_) => return,
    };
    if let ServerName::Dns(d) = name {
        assert!(
            d.len() <= 253
                && d.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'.')
        );
    }
    let chain_refs: Vec<&[u8]> = chain.iter().map(Vec::as_slice).collect();
    let ca_refs: Vec<&[u8]> = cas.iter().map(Vec::as_slice).collect();
    let Ok(anchors) = TrustedCas::<3>::from_der(&ca_refs) else { return };
    let soft = verify::verify_server_der(&Software, &chain_refs, &anchors, &name, now);
    let ring = verify::verify_server_der(&Ring, &chain_refs, &anchors, &name, now);
    assert_eq!(soft, ring, "Software vs Ring");
    let Ok(key) = soft else { return };
    let leaf = chain_refs[0];
    let d = verify::describe(leaf).expect("an accepted leaf describes");
    assert!(d.not_before <= now && now <= d.not_after);
    let mut named = false;
    verify::for_each_san(leaf, |san| match (san, name) {
        (San::Ip(ip), ServerName::Ip(want)) => named |= ip == want.to_canonical(),
        (San::Dns(d), ServerName::Dns(h)) => named |= dns_ok(d, h),
        _ => {}
    })
    .expect("an accepted leaf's SANs read");
    assert!(named, "accepted for {name:?} which the leaf does not name");
    let s = key.verify_signature(&Software, input.scheme, &input.message, &input.signature);
    let r = key.verify_signature(&Ring, input.scheme, &input.message, &input.signature);
    assert_eq!(s, r, "signature: Software vs Ring");
});
