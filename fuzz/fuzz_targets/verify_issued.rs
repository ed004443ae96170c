//! Issued-certificate validation (`verify::verify_issued`, `verify_issued_der`,
//! `verify_issued_der_with` + `backend::ring::Ring`, `scratch_len`) on arbitrary leaf, intermediate
//! and CA bytes. Structure-aware (`arbitrary`): either raw bytes, or byte edits of real chains made
//! by OpenSSL and by a real kube-controller-manager (`seeds/verify_issued/*.der`, embedded), or a
//! leaf whose signature value was altered.
//!
//! Properties:
//! * the untouched chains verify at their `now` (the fixtures are what we think they are);
//! * a leaf with altered signature bytes never verifies;
//! * any accepted chain signs exactly an original TBS with exactly the original signature bytes
//!   (leaf, and intermediate when used), and an accepted CA kept its original public key
//!   (offsets found by the target's own DER walker);
//! * accepted ⇒ `not_before ≤ now ≤ not_after` and the leaf's SPKI is the expected key;
//! * the PEM entry point gives the same verdict as the DER one; one byte less than
//!   `scratch_len` is `BufferTooSmall { needed: scratch_len }`;
//! * the ring backend gives the same verdict as the portable one on every input;
//! * `describe` and `for_each_san` never panic, and agree with an accepted leaf's validity.
#![no_main]

#[path = "common/der_walk.rs"]
mod der_walk;

use arbitrary::Arbitrary;
use base64ct::{Base64, Encoding};
use kubeboot::Error;
use kubeboot::backend::ring::Ring;
use kubeboot::csr::Profile;
use kubeboot::error::VerifyError;
use kubeboot::verify::{self, Expected, Verified};
use libfuzzer_sys::fuzz_target;
use std::net::IpAddr;

macro_rules! seed {
    ($f:literal) => {
        include_bytes!(concat!("../seeds/verify_issued/", $f)) as &[u8]
    };
}

const LATER: i64 = 1_811_808_000; // 2027-06-01
const RECORDED: i64 = 1_796_209_200; // 2026-12-02T11:00:00Z

struct Chain {
    leaf: &'static [u8],
    inter: &'static [&'static [u8]],
    cas: &'static [&'static [u8]],
    node: &'static str,
    serving: bool,
    now: i64,
}

const CHAINS: &[Chain] = &[
    Chain {
        leaf: seed!("ec-leaf.der"),
        inter: &[],
        cas: &[seed!("ec-ca.der")],
        node: "node-1",
        serving: false,
        now: LATER,
    },
    Chain {
        leaf: seed!("rsa-leaf.der"),
        inter: &[],
        cas: &[seed!("rsa-ca.der")],
        node: "node-1",
        serving: false,
        now: LATER,
    },
    Chain {
        leaf: seed!("p256-serving-leaf.der"),
        inter: &[seed!("p256-intermediate.der")],
        cas: &[seed!("p256-root.der")],
        node: "node-1",
        serving: true,
        now: LATER,
    },
    Chain {
        leaf: seed!("p384-client-leaf.der"),
        inter: &[],
        cas: &[seed!("p384-ca.der")],
        node: "node-1",
        serving: false,
        now: LATER,
    },
    Chain {
        leaf: seed!("recorded-leaf.der"),
        inter: &[],
        cas: &[seed!("recorded-ca.der"), seed!("ec-ca.der")],
        node: "rec-1",
        serving: false,
        now: RECORDED,
    },
];

#[derive(Arbitrary, Debug)]
enum Edit {
    Xor { at: u16, with: u8 },
    Insert { at: u16, byte: u8 },
    Delete { at: u16, len: u8 },
    Truncate { at: u16 },
}

#[derive(Arbitrary, Debug)]
enum Case {
    Raw {
        leaf: Vec<u8>,
        inter: Vec<Vec<u8>>,
        cas: Vec<Vec<u8>>,
        now: i64,
    },
    /// `what`: 0 leaf, 1 intermediate, 2 CA.
    Mutate {
        chain: u8,
        what: u8,
        edits: Vec<Edit>,
        now_delta: i32,
    },
    SigFlip {
        chain: u8,
        at: u16,
        with: u8,
    },
    Plain {
        chain: u8,
    },
}

fn apply(der: &mut Vec<u8>, edits: &[Edit]) {
    for e in edits.iter().take(8) {
        let n = der.len().max(1);
        match *e {
            Edit::Xor { at, with } => {
                if let Some(b) = der.get_mut(at as usize % n) {
                    *b ^= with;
                }
            }
            Edit::Insert { at, byte } => der.insert((at as usize % n).min(der.len()), byte),
            Edit::Delete { at, len } => {
                let s = (at as usize % n).min(der.len());
                let e = (s + len as usize % 4 + 1).min(der.len());
                der.drain(s..e);
            }
            Edit::Truncate { at } => der.truncate(at as usize % n),
        }
    }
}

fn pem(ders: &[&[u8]]) -> Vec<u8> {
    let mut out = Vec::new();
    for d in ders {
        out.extend_from_slice(b"-----BEGIN CERTIFICATE-----\n");
        let b64 = Base64::encode_string(d);
        for line in b64.as_bytes().chunks(64) {
            out.extend_from_slice(line);
            out.push(b'\n');
        }
        out.extend_from_slice(b"-----END CERTIFICATE-----\n");
    }
    out
}

fn signed_part(der: &[u8]) -> Option<(Vec<u8>, Vec<u8>)> {
    let p = der_walk::cert_parts(der)?;
    Some((der[p.tbs].to_vec(), der[p.sig].to_vec()))
}

fn spki(der: &[u8]) -> Option<&[u8]> {
    der_walk::cert_parts(der).map(|p| &der[p.spki])
}

/// Run every entry point; check they agree; return the verdict.
fn run(
    leaf: &[u8],
    inter: &[&[u8]],
    cas: &[&[u8]],
    exp: &Expected<'_>,
    now: i64,
) -> Result<Verified, VerifyError> {
    let sw = verify::verify_issued_der(leaf, inter, cas, exp, now);
    let ring = verify::verify_issued_der_with(&Ring, leaf, inter, cas, exp, now);
    assert_eq!(sw, ring, "ring and the portable backend disagree");
    if inter.len() <= verify::MAX_INTERMEDIATES && cas.len() <= verify::MAX_CAS {
        let mut chain: Vec<&[u8]> = vec![leaf];
        chain.extend_from_slice(inter);
        let (cert_pem, ca_pem) = (pem(&chain), pem(cas));
        let needed = verify::scratch_len(&cert_pem, &ca_pem);
        let mut scratch = vec![0u8; needed];
        let via_pem = verify::verify_issued(&cert_pem, &ca_pem, exp, now, &mut scratch);
        match (&sw, &via_pem) {
            (Ok(a), Ok(b)) => assert_eq!(a, b),
            (Err(a), Err(Error::Verify(b))) => {
                assert_eq!(a.reason, b.reason, "PEM {b:?} vs DER {a:?}")
            }
            _ => panic!("PEM {via_pem:?} vs DER {sw:?}"),
        }
        if needed > 0 {
            let mut short = vec![0u8; needed - 1];
            assert_eq!(
                verify::verify_issued(&cert_pem, &ca_pem, exp, now, &mut short),
                Err(Error::BufferTooSmall { needed })
            );
        }
    }
    // describe / for_each_san (`kubeboot status`): total on any bytes; on an accepted leaf they
    // agree with the verdict.
    let described = verify::describe(leaf);
    let mut sans = 0usize;
    let san_walk = verify::for_each_san(leaf, |_| sans += 1);
    if let Ok(v) = &sw {
        let d = described.expect("an accepted leaf describes");
        assert_eq!((d.not_before, d.not_after), (v.not_before, v.not_after));
        assert!(!d.is_ca && !d.serial.is_empty());
        assert!(san_walk.is_ok() && sans <= 2, "{sans} SANs");
    }
    if let Ok(v) = &sw {
        assert!(v.not_before <= now && now <= v.not_after, "{v:?} at {now}");
        assert_eq!(spki(leaf), Some(exp.public_key), "accepted a leaf with another key");
        assert!(v.ca_index < cas.len());
        assert!(v.intermediates_used <= inter.len());
    }
    sw
}

fuzz_target!(|case: Case| {
    let dns = ["node-1.example"];
    let ips = ["10.0.0.7".parse::<IpAddr>().unwrap()];
    let expected = |c: &Chain| Expected {
        node_name: c.node,
        public_key: spki(c.leaf).expect("fixture parses"),
        profile: if c.serving {
            Profile::Serving { dns: &dns, ips: &ips }
        } else {
            Profile::Client
        },
    };
    match case {
        Case::Raw { leaf, inter, cas, now } => {
            let inter: Vec<&[u8]> = inter.iter().map(Vec::as_slice).collect();
            let cas: Vec<&[u8]> = cas.iter().map(Vec::as_slice).collect();
            let c = &CHAINS[0];
            let r = run(&leaf, &inter, &cas, &expected(c), now);
            // Raw bytes can only verify by chaining a signature nobody here made.
            if r.is_ok() {
                let (tbs, sig) = signed_part(&leaf).unwrap();
                assert!(
                    CHAINS.iter().any(|c| signed_part(c.leaf) == Some((tbs.clone(), sig.clone())))
                );
            }
        }
        Case::Plain { chain } => {
            let c = &CHAINS[chain as usize % CHAINS.len()];
            let r = run(c.leaf, c.inter, c.cas, &expected(c), c.now);
            assert!(r.is_ok(), "fixture chain {} rejected: {r:?}", chain as usize % CHAINS.len());
        }
        Case::SigFlip { chain, at, with } => {
            let c = &CHAINS[chain as usize % CHAINS.len()];
            let p = der_walk::cert_parts(c.leaf).unwrap();
            let mut leaf = c.leaf.to_vec();
            let i = p.sig.start + at as usize % p.sig.len();
            leaf[i] ^= with.max(1);
            let r = run(&leaf, c.inter, c.cas, &expected(c), c.now);
            assert!(r.is_err(), "a leaf with an altered signature verified");
        }
        Case::Mutate { chain, what, edits, now_delta } => {
            let c = &CHAINS[chain as usize % CHAINS.len()];
            let (mut leaf, mut inter, mut cas) = (
                c.leaf.to_vec(),
                c.inter.iter().map(|d| d.to_vec()).collect::<Vec<_>>(),
                c.cas.iter().map(|d| d.to_vec()).collect::<Vec<_>>(),
            );
            match what % 3 {
                0 => apply(&mut leaf, &edits),
                1 if !inter.is_empty() => apply(&mut inter[0], &edits),
                _ => apply(&mut cas[0], &edits),
            }
            let now = c.now.saturating_add(i64::from(now_delta));
            let iref: Vec<&[u8]> = inter.iter().map(Vec::as_slice).collect();
            let cref: Vec<&[u8]> = cas.iter().map(Vec::as_slice).collect();
            if let Ok(v) = run(&leaf, &iref, &cref, &expected(c), now) {
                assert_eq!(
                    signed_part(&leaf),
                    signed_part(c.leaf),
                    "accepted a leaf that was not signed"
                );
                if v.intermediates_used > 0 {
                    // The path used the (only) intermediate: it must be the signed original.
                    assert_eq!(
                        signed_part(&inter[0]),
                        signed_part(c.inter[0]),
                        "accepted a forged intermediate"
                    );
                }
                let anchor = &cref[v.ca_index];
                assert!(c.cas.iter().any(|orig| spki(orig) == spki(anchor)), "anchor key changed");
            }
        }
    }
});
