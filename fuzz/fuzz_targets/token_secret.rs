//! Structure-aware: a `SecretView` + token + `now` → `authenticate` / `validate_for_signing` /
//! `is_expired` never panic, and a success really means every documented condition held.
#![no_main]

use arbitrary::Arbitrary;
use kubeboot::Error;
use kubeboot::token::{
    self, BOOTSTRAPPERS_GROUP, BootstrapToken, SECRET_NAMESPACE, SECRET_TYPE, SecretView,
    authenticate, is_expired, validate_for_signing,
};
use libfuzzer_sys::fuzz_target;

/// A field value: absent, the value a matching Secret would hold, or arbitrary.
#[derive(Arbitrary, Debug, Clone, Copy)]
enum Val<'a> {
    Absent,
    Right,
    Other(&'a [u8]),
}

#[derive(Arbitrary, Debug)]
enum Expiry<'a> {
    Absent,
    Empty,
    /// Formatted `now + delta` (clamped into range), with an optional fraction.
    Relative {
        delta: i16,
        frac: Option<u16>,
    },
    Raw(&'a [u8]),
}

#[derive(Arbitrary, Debug)]
enum Groups<'a> {
    Absent,
    /// Valid `system:bootstrappers:<suffix>` names built from these bytes.
    Valid(Vec<&'a [u8]>),
    Raw(&'a [u8]),
}

#[derive(Arbitrary, Debug)]
struct Input<'a> {
    /// Alphabet indices of the token (6 + 16).
    token: [u8; 22],
    name: Val<'a>,
    namespace: Val<'a>,
    secret_type: Val<'a>,
    deletion_pending: bool,
    token_id: Val<'a>,
    token_secret: Val<'a>,
    expiration: Expiry<'a>,
    usage_auth: Val<'a>,
    usage_signing: Val<'a>,
    groups: Groups<'a>,
    description: Option<&'a [u8]>,
    extra: Vec<(&'a str, &'a [u8])>,
    now: i64,
}

fn pick<'a>(v: Val<'a>, right: &'a [u8]) -> Option<&'a [u8]> {
    match v {
        Val::Absent => None,
        Val::Right => Some(right),
        Val::Other(b) => Some(b),
    }
}

fn pick_str<'a>(v: Val<'a>, right: &'a str) -> Option<&'a str> {
    pick(v, right.as_bytes()).map(|b| std::str::from_utf8(b).unwrap_or(right))
}

fn group_name(raw: &[u8]) -> String {
    const OK: &[u8] = b"abcdefghijklmnopqrstuvwxyz0123456789:-";
    let mut s = String::from("system:bootstrappers:");
    for &b in raw.iter().take(40) {
        s.push(OK[usize::from(b) % OK.len()] as char);
    }
    s.push('x');
    s
}

fn check_user<const N: usize>(
    r: &kubeboot::Result<token::AuthenticatedUser<'_, N>>,
    t: &BootstrapToken,
    v: &SecretView<'_>,
    now: i64,
) {
    match r {
        Ok(user) => {
            assert_eq!(user.name.as_str(), format!("system:bootstrap:{}", t.id()));
            assert!(v.name.is_none_or(|n| n == t.secret_name().as_str()));
            assert!(v.namespace.is_none_or(|n| n == SECRET_NAMESPACE));
            assert!(!v.deletion_pending);
            assert_eq!(v.secret_type, Some(SECRET_TYPE));
            assert_eq!(v.token_secret, Some(&t.secret_bytes()[..]));
            assert_eq!(v.token_id, Some(&t.token_id().as_bytes()[..]));
            assert!(!is_expired(v.expiration, now));
            assert_eq!(v.usage_bootstrap_authentication, Some(&b"true"[..]));
            assert!(user.groups.contains(&BOOTSTRAPPERS_GROUP));
            assert!(user.groups.windows(2).all(|w| w[0] < w[1]));
        }
        Err(
            Error::InvalidSecretName
            | Error::TokenExpired
            | Error::TokenMismatch
            | Error::TokenNotForAuthentication
            | Error::InvalidGroup
            | Error::BufferTooSmall { .. },
        ) => {}
        Err(e) => panic!("undocumented error {e:?}"),
    }
}

fuzz_target!(|input: Input<'_>| {
    let mut wire = [0u8; 23];
    for (i, &b) in input.token.iter().enumerate() {
        let at = if i < 6 { i } else { i + 1 };
        wire[at] = token::ALPHABET.as_bytes()[usize::from(b) % 36];
    }
    wire[6] = b'.';
    let t = BootstrapToken::parse_bytes(&wire).expect("alphabet token parses");
    let name = t.secret_name();
    let now = input.now;

    let exp_text;
    let expiration: Option<&[u8]> = match input.expiration {
        Expiry::Absent => None,
        Expiry::Empty => Some(b""),
        Expiry::Relative { delta, frac } => {
            let at = now
                .saturating_add(i64::from(delta))
                .clamp(token::rfc3339::MIN_FORMATTABLE, token::rfc3339::MAX_FORMATTABLE);
            let base = token::rfc3339::format(at).unwrap();
            let s = base.as_str();
            exp_text = match frac {
                Some(f) => format!("{}.{}Z", &s[..19], f),
                None => s.to_owned(),
            };
            Some(exp_text.as_bytes())
        }
        Expiry::Raw(b) => Some(b),
    };
    let groups_text;
    let auth_extra_groups: Option<&[u8]> = match &input.groups {
        Groups::Absent => None,
        Groups::Valid(parts) => {
            groups_text = parts.iter().map(|p| group_name(p)).collect::<Vec<_>>().join(",");
            Some(groups_text.as_bytes())
        }
        Groups::Raw(b) => Some(b),
    };

    let id = t.token_id();
    let mut v = SecretView {
        name: pick_str(input.name, name.as_str()),
        namespace: pick_str(input.namespace, SECRET_NAMESPACE),
        secret_type: pick_str(input.secret_type, SECRET_TYPE),
        deletion_pending: input.deletion_pending,
        token_id: pick(input.token_id, &id.as_bytes()[..]),
        token_secret: pick(input.token_secret, &t.secret_bytes()[..]),
        expiration,
        usage_bootstrap_authentication: pick(input.usage_auth, b"true"),
        usage_bootstrap_signing: pick(input.usage_signing, b"true"),
        auth_extra_groups,
        description: input.description,
    };
    for (k, val) in &input.extra {
        let known = matches!(
            *k,
            "token-id"
                | "token-secret"
                | "expiration"
                | "usage-bootstrap-authentication"
                | "usage-bootstrap-signing"
                | "auth-extra-groups"
                | "description"
        );
        let before = v;
        assert_eq!(v.set_data(k, val), known);
        if !known {
            assert_eq!(format!("{before:?}"), format!("{v:?}"));
        }
    }

    // Debug never shows the secret unless something else in the view holds the same text.
    let secret = t.expose_secret();
    let without = format!("{:?}", SecretView { token_secret: None, ..v });
    if !without.contains(secret) {
        let dbg = format!("{v:?}");
        assert!(!dbg.contains(secret), "secret leaked: {dbg}");
    }

    let r1 = authenticate::<1>(&t, &v, now);
    let r4 = authenticate::<4>(&t, &v, now);
    let r16 = authenticate::<{ token::MAX_GROUPS }>(&t, &v, now);
    check_user(&r1, &t, &v, now);
    check_user(&r4, &t, &v, now);
    check_user(&r16, &t, &v, now);
    // Bigger capacity never turns success into failure.
    if r1.is_ok() {
        assert!(r4.is_ok());
    }
    if r4.is_ok() {
        assert!(r16.is_ok());
    }
    if let (Ok(a), Ok(b)) = (&r4, &r16) {
        assert_eq!(&a.groups[..], &b.groups[..]);
    }

    match validate_for_signing(&v, now) {
        Ok(id) => {
            assert_eq!(v.name.map(|n| n.strip_prefix("bootstrap-token-")), Some(Some(id.as_str())));
            assert_eq!(v.usage_bootstrap_signing, Some(&b"true"[..]));
            assert!(!is_expired(v.expiration, now));
            assert!(v.token_secret.is_some_and(|s| !s.is_empty()));
        }
        Err(
            Error::InvalidSecretName
            | Error::TokenMismatch
            | Error::TokenExpired
            | Error::InvalidUsage,
        ) => {}
        Err(e) => panic!("undocumented error {e:?}"),
    }
    for dt in [i64::MIN, -1, 0, 1, i64::MAX] {
        let _ = is_expired(v.expiration, now.saturating_add(dt));
    }
});
