extern crate std;
use super::*;
use proptest::prelude::*;
use std::format;
use std::vec::Vec;

const VALID: [&str; 4] = [
    "abcdef.1234567890123456",
    "123456.aabbccddeeffgghh",
    "abcdef.abcdef0123456789",
    "123456.1234560123456789",
];
const INVALID: [&str; 13] = [
    "",
    ".",
    "1234567890123456789012",
    "12345.1234567890123456",
    ".1234567890123456",
    "123456.",
    "123456:1234567890.123456",
    "abcdef:1234567890123456",
    "Abcdef.1234567890123456",
    "123456.AABBCCDDEEFFGGHH",
    "123456.AABBCCD-EEFFGGHH",
    "abc*ef.1234567890123456",
    "ABCDEF.abcdef0123456789",
];

#[test]
fn upstream_token_vectors() {
    for v in VALID {
        let t = BootstrapToken::parse(v).unwrap();
        assert_eq!(t.to_wire().as_str(), v);
        assert_eq!(t.id(), &v[..6]);
        assert_eq!(t.expose_secret(), &v[7..]);
    }
    for v in INVALID {
        assert_eq!(BootstrapToken::parse(v), Err(Error::InvalidToken), "{v:?}");
    }
    for v in ["abcdef.0123456789abcdef\n", " abcdef.0123456789abcdef", "abcdef.0123456789abcdeé"] {
        assert_eq!(BootstrapToken::parse(v), Err(Error::InvalidToken), "{v:?}");
    }
    let t = BootstrapToken::from_parts("abcdef", "abcdef0123456789").unwrap();
    assert_eq!(t.to_wire().as_str(), "abcdef.abcdef0123456789");
    assert_eq!(t.secret_name().as_str(), "bootstrap-token-abcdef");
    assert_eq!(BootstrapToken::from_parts("abcde", "abcdef0123456789"), Err(Error::InvalidTokenId));
    assert_eq!(BootstrapToken::from_parts("abcdef", "abcdef012345678"), Err(Error::InvalidToken));
}

#[test]
fn token_id_parse() {
    assert!(TokenId::parse("abc123").is_ok());
    for bad in ["", "abc12", "abc1234", "ABC123", "abc-12", "abc12\n"] {
        assert_eq!(TokenId::parse(bad), Err(Error::InvalidTokenId), "{bad:?}");
    }
}

#[test]
fn upstream_parse_name() {
    assert_eq!(parse_secret_name("bootstrap-token-abc123").unwrap().as_str(), "abc123");
    for bad in [
        "",
        "abc123",
        "bootstrap-token-",
        "bootstrap-token-abc",
        "bootstrap-token-abc123ghi",
        "bootstrap-token-ABC123",
    ] {
        assert_eq!(parse_secret_name(bad), Err(Error::InvalidSecretName), "{bad:?}");
    }
}

#[test]
fn names() {
    let t = BootstrapToken::parse("abcdef.0123456789abcdef").unwrap();
    assert_eq!(t.user_name().as_str(), "system:bootstrap:abcdef");
    assert_eq!(t.secret_name().as_str(), "bootstrap-token-abcdef");
    assert_eq!(SECRET_NAME_LEN, "bootstrap-token-abcdef".len());
    assert_eq!(USER_NAME_LEN, "system:bootstrap:abcdef".len());
}

#[test]
fn redaction() {
    let t = BootstrapToken::parse("abcdef.0123456789abcdef").unwrap();
    for s in [
        format!("{t:?}"),
        format!("{t:#?}"),
        format!("{t}"),
        format!("{:?}", t.secret()),
        format!("{:?}", t.to_wire()),
        format!("{:?}", BootstrapToken::parse("abcdef.0123456789abcdeF")),
    ] {
        assert!(!s.contains("0123456789abcdef"), "{s}");
        assert!(!s.contains("0123456789"), "{s}");
    }
    assert_eq!(format!("{t:?}"), "abcdef.<redacted>");
    assert_eq!(format!("{t}"), "abcdef.<redacted>");
}

#[test]
fn constant_time_eq_and_wire() {
    let a = BootstrapToken::parse("abcdef.0123456789abcdef").unwrap();
    let b = BootstrapToken::parse("abcdef.0123456789abcdeg").unwrap();
    assert_eq!(a, a.clone());
    assert_ne!(a, b);
    assert!(a.matches_wire(b"abcdef.0123456789abcdef"));
    assert!(!a.matches_wire(b"abcdef.0123456789abcdeg"));
    assert!(!a.matches_wire(b"abcdef.0123456789abcde"));
    assert!(a.secret().ct_eq_bytes(b"0123456789abcdef"));
    assert!(!a.secret().ct_eq_bytes(b"0123456789abcdef0"));
    let mut buf = [0u8; 23];
    assert_eq!(a.write_wire(&mut buf), Ok(23));
    assert_eq!(&buf, b"abcdef.0123456789abcdef");
    let mut small = [0u8; 22];
    assert_eq!(a.write_wire(&mut small), Err(Error::BufferTooSmall { needed: 23 }));
    assert_eq!(small, [0u8; 22]);
}

#[test]
fn symbol_map() {
    let all: Vec<u8> = (0..36).map(symbol).collect();
    assert_eq!(all, ALPHABET.as_bytes());
}

#[test]
fn from_entropy_rejects_and_runs_out() {
    // 252..=255 are skipped; 0 → '0', 35 → 'z', 36 → '0', 251 → 251 % 36 = 35 → 'z'.
    let mut e = Vec::new();
    e.extend_from_slice(&[252, 253, 254, 255]);
    e.extend((0u8..22).map(|i| i * 11));
    let t = BootstrapToken::from_entropy(&e).unwrap();
    let expect: Vec<u8> = (0u8..22).map(|i| symbol((i * 11) % 36)).collect();
    assert_eq!(t.id().as_bytes(), &expect[..6]);
    assert_eq!(t.expose_secret().as_bytes(), &expect[6..]);
    assert_eq!(BootstrapToken::from_entropy(&[7u8; 21]), Err(Error::InsufficientEntropy));
    assert_eq!(BootstrapToken::from_entropy(&[255u8; 1000]), Err(Error::InsufficientEntropy));
    assert!(BootstrapToken::from_entropy(&[0u8; 22]).is_ok());
}

#[test]
fn generate_gives_up_on_broken_source() {
    assert_eq!(BootstrapToken::generate(|b| b.fill(0xff)), Err(Error::InsufficientEntropy));
    let t = BootstrapToken::generate(|b| b.fill(1)).unwrap();
    assert_eq!(t.to_wire().as_str(), "111111.1111111111111111");
}

/// SplitMix64, enough for statistics in tests.
struct SplitMix(u64);
impl SplitMix {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }
    fn fill(&mut self, buf: &mut [u8]) {
        for b in buf {
            *b = self.next() as u8;
        }
    }
}

impl rand_core::TryRng for SplitMix {
    type Error = core::convert::Infallible;
    fn try_next_u32(&mut self) -> core::result::Result<u32, Self::Error> {
        Ok(self.next() as u32)
    }
    fn try_next_u64(&mut self) -> core::result::Result<u64, Self::Error> {
        Ok(self.next())
    }
    fn try_fill_bytes(&mut self, dst: &mut [u8]) -> core::result::Result<(), Self::Error> {
        self.fill(dst);
        Ok(())
    }
}
impl rand_core::TryCryptoRng for SplitMix {}

#[cfg_attr(miri, ignore = "20 000 generated tokens: tens of minutes")]
#[test]
fn generation_is_unbiased() {
    // 20 000 tokens × 22 chars = 440 000 symbols over 36 bins, per position class.
    let mut rng = SplitMix(0x5eed);
    let mut counts = [0u64; 36];
    let mut first = [0u64; 36];
    let n = 20_000;
    for _ in 0..n {
        let t = BootstrapToken::generate(|b| rng.fill(b)).unwrap();
        let wire = t.to_wire();
        for (i, &c) in wire.as_bytes().iter().enumerate() {
            if i == ID_LEN {
                assert_eq!(c, b'.');
                continue;
            }
            let idx = ALPHABET.bytes().position(|a| a == c).unwrap();
            counts[idx] += 1;
            if i == 0 {
                first[idx] += 1;
            }
        }
    }
    let chi2 = |bins: &[u64; 36]| {
        let total: u64 = bins.iter().sum();
        let e = total as f64 / 36.0;
        bins.iter().map(|&o| (o as f64 - e).powi(2) / e).sum::<f64>()
    };
    // 35 degrees of freedom: p = 0.001 critical value ≈ 66.6. A biased `b % 36` over all
    // 256 byte values would give the first 4 symbols 8/7 the weight: χ² in the thousands.
    let all = chi2(&counts);
    assert!(all < 66.6, "chi2 over all positions = {all}");
    let f = chi2(&first);
    assert!(f < 66.6, "chi2 first position = {f}");

    // The same sampler without rejection would be detectably biased: sanity-check the test.
    let mut biased = [0u64; 36];
    for _ in 0..(n * 22) {
        biased[(rng.next() as u8 % 36) as usize] += 1;
    }
    assert!(chi2(&biased) > 200.0);
}

#[test]
fn generate_with_rng_works() {
    let mut rng = SplitMix(42);
    let a = BootstrapToken::generate_with_rng(&mut rng).unwrap();
    let b = BootstrapToken::generate_with_rng(&mut rng).unwrap();
    assert_ne!(a, b);
    assert!(BootstrapToken::parse(a.to_wire().as_str()).is_ok());
}

#[test]
fn usages() {
    assert_eq!(Usage::parse("signing"), Ok(Usage::Signing));
    assert_eq!(Usage::parse("authentication"), Ok(Usage::Authentication));
    for bad in ["", "Signing", "auth", "signing ", "usage-bootstrap-signing"] {
        assert_eq!(Usage::parse(bad), Err(Error::InvalidUsage));
    }
    assert_eq!(Usages::parse_list("signing,authentication"), Ok(Usages::KUBEADM_DEFAULT));
    assert_eq!(Usages::parse_list(""), Ok(Usages::NONE));
    assert_eq!(Usages::parse_list("signing,"), Err(Error::InvalidUsage));
    let u: Vec<_> = Usages::KUBEADM_DEFAULT.iter().map(Usage::data_key).collect();
    assert_eq!(u, ["usage-bootstrap-authentication", "usage-bootstrap-signing"]);
}

#[test]
fn upstream_group_vectors() {
    for ok in [
        "system:bootstrappers:foo",
        "system:bootstrappers:foo:bar:baz",
        "system:bootstrappers:foo-bar-42",
    ] {
        assert_eq!(validate_group(ok), Ok(()), "{ok}");
    }
    let long = format!("system:bootstrappers:{}", "x".repeat(300));
    for bad in [
        "system:bootstrappers:Foo",
        "foo",
        "system:bootstrappers:",
        "system:bootstrappers: ",
        "system:bootstrappers:*",
        "system:bootstrappers:foo:",
        "system:bootstrappers:foo-",
        long.as_str(),
        "system:bootstrappers",
    ] {
        assert_eq!(validate_group(bad), Err(Error::InvalidGroup), "{bad}");
    }
    // 1..=256 characters after the prefix.
    assert!(validate_group(&format!("system:bootstrappers:{}", "x".repeat(256))).is_ok());
    assert!(validate_group(&format!("system:bootstrappers:{}", "x".repeat(257))).is_err());
    assert!(validate_group("system:bootstrappers:x").is_ok());
}

#[test]
fn upstream_get_groups() {
    let mut g: Groups<'_> = Groups::new();
    authenticated_groups("", &mut g).unwrap();
    assert_eq!(&g[..], ["system:bootstrappers"]);
    assert_eq!(authenticated_groups("foo", &mut g), Err(Error::InvalidGroup));
    assert!(g.is_empty());
    authenticated_groups(
        "system:bootstrappers:foo,system:bootstrappers:bar,system:bootstrappers:bar",
        &mut g,
    )
    .unwrap();
    assert_eq!(
        &g[..],
        ["system:bootstrappers", "system:bootstrappers:bar", "system:bootstrappers:foo"]
    );
    assert_eq!(
        authenticated_groups("system:bootstrappers:a, system:bootstrappers:b", &mut g),
        Err(Error::InvalidGroup)
    );
    assert_eq!(authenticated_groups("system:bootstrappers:a,", &mut g), Err(Error::InvalidGroup));
    let mut tiny: heapless::Vec<&str, 2> = heapless::Vec::new();
    assert_eq!(
        authenticated_groups("system:bootstrappers:a,system:bootstrappers:b", &mut tiny),
        Err(Error::BufferTooSmall { needed: 3 })
    );
    assert!(tiny.is_empty());
    authenticated_groups("system:bootstrappers:a,system:bootstrappers:a", &mut tiny).unwrap();
    assert_eq!(&tiny[..], ["system:bootstrappers", "system:bootstrappers:a"]);
}

#[test]
fn sink_wipes_on_overflow() {
    let mut buf = [0xaau8; 4];
    let mut s = Sink::new(&mut buf);
    s.put(b"abc");
    s.put(b"def");
    assert_eq!(s.finish(), Err(Error::BufferTooSmall { needed: 6 }));
    assert_eq!(buf, [0u8; 4]);
}

proptest! {
    #[test]
    fn generate_parse_round_trip(entropy in proptest::collection::vec(any::<u8>(), 32..64)) {
        if let Ok(t) = BootstrapToken::from_entropy(&entropy) {
            let wire = t.to_wire();
            let back = BootstrapToken::parse(wire.as_str()).unwrap();
            prop_assert!(back == t);
            prop_assert_eq!(back.id(), t.id());
        }
    }

    #[test]
    fn parse_never_panics(s in "\\PC{0,30}") {
        let _ = BootstrapToken::parse(&s);
        let _ = parse_secret_name(&s);
        let _ = validate_group(&s);
    }

    #[test]
    fn groups_sorted_dedup(picks in proptest::collection::vec(0usize..5, 0..8)) {
        let names = ["system:bootstrappers:e", "system:bootstrappers:a",
            "system:bootstrappers:c:d", "system:bootstrappers:b-1", "system:bootstrappers:a0"];
        let joined = picks.iter().map(|&i| names[i]).collect::<Vec<_>>().join(",");
        let mut g: Groups<'_> = Groups::new();
        authenticated_groups(&joined, &mut g).unwrap();
        let mut expect: Vec<&str> = picks.iter().map(|&i| names[i]).collect();
        expect.push(BOOTSTRAPPERS_GROUP);
        expect.sort();
        expect.dedup();
        prop_assert_eq!(&g[..], &expect[..]);
    }
}
