//! Bootstrap token text parsers: `BootstrapToken::parse{,_bytes}`, `TokenId`, `TokenSecret`,
//! `parse_secret_name`, group validation / `authenticated_groups`, `Usages::parse_list`,
//! `BootstrapToken::from_entropy`. Raw bytes in; properties checked against each other.
#![no_main]

use kubeboot::Error;
use kubeboot::token::{
    self, BOOTSTRAPPERS_GROUP, BootstrapToken, TOKEN_LEN, TokenId, TokenSecret, Usage, Usages,
};
use libfuzzer_sys::fuzz_target;

fn is_token_char(b: u8) -> bool {
    b.is_ascii_lowercase() || b.is_ascii_digit()
}

fn check_token_bytes(data: &[u8]) {
    let expect_ok = data.len() == TOKEN_LEN
        && data.get(6) == Some(&b'.')
        && data.iter().enumerate().all(|(i, &b)| i == 6 || is_token_char(b));
    match BootstrapToken::parse_bytes(data) {
        Ok(t) => {
            assert!(expect_ok);
            assert_eq!(t.to_wire().as_bytes(), data);
            assert!(t.matches_wire(data));
            let mut buf = [0u8; TOKEN_LEN];
            assert_eq!(t.write_wire(&mut buf), Ok(TOKEN_LEN));
            assert_eq!(&buf[..], data);
            assert_eq!(
                t.write_wire(&mut buf[..TOKEN_LEN - 1]),
                Err(Error::BufferTooSmall { needed: TOKEN_LEN })
            );
            let again = BootstrapToken::from_parts(t.id(), t.expose_secret()).unwrap();
            assert!(again == t);
            assert_eq!(token::parse_secret_name(t.secret_name().as_str()), Ok(t.token_id()));
            assert_eq!(t.user_name().as_str(), format!("system:bootstrap:{}", t.id()));
            // Debug and Display must not leak the secret.
            let dbg = format!("{t:?} {:?} {:?}", t.secret(), t.to_wire());
            assert!(!dbg.contains(t.expose_secret()), "secret leaked in Debug: {dbg}");
            let shown = format!("{t}");
            assert!(!shown.contains(t.expose_secret()), "secret leaked in Display: {shown}");
        }
        Err(e) => {
            assert!(!expect_ok, "valid token rejected: {e:?}");
            assert_eq!(e, Error::InvalidToken);
        }
    }
    // Any other presented string of the right length must not match a fixed token.
    let fixed = BootstrapToken::parse("abcdef.0123456789abcdef").unwrap();
    assert_eq!(fixed.matches_wire(data), data == b"abcdef.0123456789abcdef");

    if let Ok(id) = TokenId::from_bytes(data) {
        assert_eq!(id.as_bytes(), data);
        assert_eq!(id.as_str().as_bytes(), data);
    } else {
        assert!(!(data.len() == 6 && data.iter().all(|&b| is_token_char(b))));
    }
    if let Ok(s) = TokenSecret::from_bytes(data) {
        assert_eq!(s.secret_bytes(), data);
        assert!(s.ct_eq_bytes(data));
    } else {
        assert!(!(data.len() == 16 && data.iter().all(|&b| is_token_char(b))));
    }

    // Entropy sampling: accepted bytes are < 252, mapped b % 36.
    let accepted: Vec<u8> = data.iter().copied().filter(|&b| b < 252).take(22).collect();
    match BootstrapToken::from_entropy(data) {
        Ok(t) => {
            assert_eq!(accepted.len(), 22);
            let expect: Vec<u8> =
                accepted.iter().map(|&b| token::ALPHABET.as_bytes()[usize::from(b % 36)]).collect();
            let wire = t.to_wire();
            let w = wire.as_bytes();
            assert_eq!(&w[..6], &expect[..6]);
            assert_eq!(&w[7..], &expect[6..]);
        }
        Err(e) => {
            assert_eq!(e, Error::InsufficientEntropy);
            assert!(accepted.len() < 22);
        }
    }
}

fn check_groups(s: &str) {
    let valid = token::validate_extra_groups(s);
    let mut small: heapless::Vec<&str, 3> = heapless::Vec::new();
    let mut big: heapless::Vec<&str, 64> = heapless::Vec::new();
    let rs = token::authenticated_groups(s, &mut small);
    let rb = token::authenticated_groups(s, &mut big);
    if valid.is_err() {
        assert_eq!(valid, Err(Error::InvalidGroup));
        assert_eq!(rs, Err(Error::InvalidGroup));
        assert_eq!(rb, Err(Error::InvalidGroup));
        assert!(small.is_empty() && big.is_empty());
        return;
    }
    for (r, out) in [(rs, &small[..]), (rb, &big[..])] {
        match r {
            Ok(()) => {
                assert!(out.contains(&BOOTSTRAPPERS_GROUP));
                assert!(out.windows(2).all(|w| w[0] < w[1]), "not sorted/deduplicated: {out:?}");
                for g in out {
                    assert!(*g == BOOTSTRAPPERS_GROUP || token::validate_group(g).is_ok());
                    assert!(*g == BOOTSTRAPPERS_GROUP || s.split(',').any(|x| x == *g));
                }
                if !s.is_empty() {
                    for x in s.split(',') {
                        assert!(out.contains(&x));
                    }
                }
            }
            Err(Error::BufferTooSmall { needed }) => {
                assert!(out.is_empty());
                // `needed` must suffice.
                let distinct = {
                    let mut v: Vec<&str> = s.split(',').collect();
                    v.push(BOOTSTRAPPERS_GROUP);
                    v.sort();
                    v.dedup();
                    v.len()
                };
                assert!(needed >= distinct, "needed {needed} < {distinct}");
            }
            Err(e) => panic!("unexpected {e:?}"),
        }
    }
    if rb.is_ok() && big.len() <= 3 {
        assert_eq!(rs, Ok(()));
        assert_eq!(&small[..], &big[..]);
    }
}

fn check_usages(s: &str) {
    match Usages::parse_list(s) {
        Ok(u) => {
            let text: Vec<&str> = u.iter().map(Usage::as_str).collect();
            assert_eq!(Usages::parse_list(&text.join(",")), Ok(u));
            for part in s.split(',').filter(|_| !s.is_empty()) {
                assert!(u.contains(Usage::parse(part).unwrap()));
            }
        }
        Err(e) => {
            assert_eq!(e, Error::InvalidUsage);
            assert!(s.split(',').any(|p| Usage::parse(p).is_err()));
        }
    }
}

fuzz_target!(|data: &[u8]| {
    check_token_bytes(data);
    let Ok(s) = core::str::from_utf8(data) else { return };
    assert_eq!(BootstrapToken::parse(s).is_ok(), BootstrapToken::parse_bytes(data).is_ok());
    let _ = s.parse::<BootstrapToken>();
    match token::parse_secret_name(s) {
        Ok(id) => assert_eq!(id.secret_name().as_str(), s),
        Err(e) => assert_eq!(e, Error::InvalidSecretName),
    }
    assert_eq!(TokenId::parse(s).is_ok(), TokenId::from_bytes(data).is_ok());
    if let Some((id, secret)) = s.split_once('.') {
        if let Ok(t) = BootstrapToken::from_parts(id, secret) {
            assert_eq!(t.to_wire().as_str(), s);
        }
    }
    check_groups(s);
    check_usages(s);
});
