//! Checking a token Secret the way kube-apiserver's bootstrap-token authenticator and the
//! bootstrapsigner do, as pure functions over a borrowed view of the Secret.

use core::fmt;

use super::rfc3339;
use super::{
    BOOTSTRAPPERS_GROUP, BootstrapToken, KEY_AUTH_EXTRA_GROUPS, KEY_DESCRIPTION, KEY_EXPIRATION,
    KEY_TOKEN_ID, KEY_TOKEN_SECRET, KEY_USAGE_AUTHENTICATION, KEY_USAGE_SIGNING, SECRET_NAMESPACE,
    SECRET_TYPE, TokenId, USER_NAME_LEN, authenticated_groups,
};
use crate::{Error, Result};

/// A borrowed view of a bootstrap-token Secret: metadata plus the (decoded) `data` values.
///
/// Absent keys are `None`. `name`/`namespace` are checked only when given (`None` means the
/// caller already looked the Secret up by `kube-system/bootstrap-token-<id>`); `secret_type`
/// must be given and equal `bootstrap.kubernetes.io/token`.
///
/// `Debug` redacts `token_secret`.
#[derive(Clone, Copy, Default)]
pub struct SecretView<'a> {
    /// `metadata.name`.
    pub name: Option<&'a str>,
    /// `metadata.namespace`.
    pub namespace: Option<&'a str>,
    /// `type`.
    pub secret_type: Option<&'a str>,
    /// `metadata.deletionTimestamp` is set.
    pub deletion_pending: bool,
    /// `data["token-id"]`.
    pub token_id: Option<&'a [u8]>,
    /// `data["token-secret"]`.
    pub token_secret: Option<&'a [u8]>,
    /// `data["expiration"]`.
    pub expiration: Option<&'a [u8]>,
    /// `data["usage-bootstrap-authentication"]`.
    pub usage_bootstrap_authentication: Option<&'a [u8]>,
    /// `data["usage-bootstrap-signing"]`.
    pub usage_bootstrap_signing: Option<&'a [u8]>,
    /// `data["auth-extra-groups"]`.
    pub auth_extra_groups: Option<&'a [u8]>,
    /// `data["description"]`.
    pub description: Option<&'a [u8]>,
}

impl<'a> SecretView<'a> {
    /// Records one `data` entry by key; returns `false` (and records nothing) for keys the
    /// view has no field for. Handy when walking a decoded Secret's key/value pairs.
    pub fn set_data(&mut self, key: &str, value: &'a [u8]) -> bool {
        let slot = match key {
            KEY_TOKEN_ID => &mut self.token_id,
            KEY_TOKEN_SECRET => &mut self.token_secret,
            KEY_EXPIRATION => &mut self.expiration,
            KEY_USAGE_AUTHENTICATION => &mut self.usage_bootstrap_authentication,
            KEY_USAGE_SIGNING => &mut self.usage_bootstrap_signing,
            KEY_AUTH_EXTRA_GROUPS => &mut self.auth_extra_groups,
            KEY_DESCRIPTION => &mut self.description,
            _ => return false,
        };
        *slot = Some(value);
        true
    }
}

impl<'a> fmt::Debug for SecretView<'a> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let text = |v: Option<&'a [u8]>| v.map(|b| core::str::from_utf8(b).unwrap_or("<binary>"));
        f.debug_struct("SecretView")
            .field("name", &self.name)
            .field("namespace", &self.namespace)
            .field("secret_type", &self.secret_type)
            .field("deletion_pending", &self.deletion_pending)
            .field("token_id", &text(self.token_id))
            .field("token_secret", &self.token_secret.map(|_| "<redacted>"))
            .field("expiration", &text(self.expiration))
            .field("usage_bootstrap_authentication", &text(self.usage_bootstrap_authentication))
            .field("usage_bootstrap_signing", &text(self.usage_bootstrap_signing))
            .field("auth_extra_groups", &text(self.auth_extra_groups))
            .field("description", &text(self.description))
            .finish()
    }
}

/// The user a bootstrap token authenticates as (before the apiserver appends
/// `system:authenticated`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AuthenticatedUser<'a, const N: usize = { super::MAX_GROUPS }> {
    /// `system:bootstrap:<id>`.
    pub name: heapless::String<USER_NAME_LEN>,
    /// `system:bootstrappers` plus the extra groups, deduplicated, sorted ascending.
    pub groups: heapless::Vec<&'a str, N>,
}

/// `true` when a Secret `expiration` value means the token has expired at `now` (unix
/// seconds): absent or empty never expires; an unparseable value counts as expired; otherwise
/// expired when `expiration - now ≤ 0` (a fractional part counts: `…:05.5Z` is still valid at
/// `…:05`).
pub fn is_expired(expiration: Option<&[u8]>, now: i64) -> bool {
    match expiration {
        None | Some([]) => false,
        Some(v) => match rfc3339::parse_timestamp(v) {
            Ok(t) => !t.is_after(now),
            Err(_) => true,
        },
    }
}

/// Authenticates `token` against its Secret like kube-apiserver's bootstrap-token authenticator
/// (kube-apiserver plugin/pkg/auth/authenticator/token/bootstrap/bootstrap.go AuthenticateToken,
/// its checks after the Secret lookup), at `now` (unix seconds).
///
/// Checks, in order, with the error each failure gives:
/// 1. `name` (if given) is `bootstrap-token-<id>` and `namespace` (if given) is `kube-system`
///    — [`Error::InvalidSecretName`];
/// 2. no deletion pending — [`Error::TokenExpired`] (the Secret is on its way out);
/// 3. `type` is `bootstrap.kubernetes.io/token` — [`Error::InvalidSecretName`] (not a token
///    Secret);
/// 4. `token-secret` equals the token's secret, in constant time — [`Error::TokenMismatch`];
/// 5. `token-id` equals the token's ID — [`Error::TokenMismatch`];
/// 6. not expired ([`is_expired`]) — [`Error::TokenExpired`];
/// 7. `usage-bootstrap-authentication` is exactly `true` — [`Error::TokenNotForAuthentication`];
/// 8. `auth-extra-groups` valid — [`Error::InvalidGroup`], or more than `N` groups —
///    [`Error::BufferTooSmall`] (`needed` counts entries).
///
/// The apiserver answers all of these with a plain 401; the distinct errors are for tooling.
pub fn authenticate<'a, const N: usize>(
    token: &BootstrapToken,
    secret: &SecretView<'a>,
    now: i64,
) -> Result<AuthenticatedUser<'a, N>> {
    let id = token.token_id();
    if let Some(name) = secret.name {
        if name != id.secret_name().as_str() {
            return Err(Error::InvalidSecretName);
        }
    }
    if secret.namespace.is_some_and(|ns| ns != SECRET_NAMESPACE) {
        return Err(Error::InvalidSecretName);
    }
    if secret.deletion_pending {
        return Err(Error::TokenExpired);
    }
    if secret.secret_type != Some(SECRET_TYPE) {
        return Err(Error::InvalidSecretName);
    }
    match secret.token_secret {
        Some(s) if token.secret().ct_eq_bytes(s) => {}
        _ => return Err(Error::TokenMismatch),
    }
    if secret.token_id != Some(id.as_bytes().as_slice()) {
        return Err(Error::TokenMismatch);
    }
    if is_expired(secret.expiration, now) {
        return Err(Error::TokenExpired);
    }
    if secret.usage_bootstrap_authentication != Some(b"true".as_slice()) {
        return Err(Error::TokenNotForAuthentication);
    }
    let mut groups = heapless::Vec::new();
    match secret.auth_extra_groups {
        None | Some([]) => {
            groups.push(BOOTSTRAPPERS_GROUP).map_err(|_| Error::BufferTooSmall { needed: 1 })?;
        }
        Some(extra) => {
            let extra = core::str::from_utf8(extra).map_err(|_| Error::InvalidGroup)?;
            authenticated_groups(extra, &mut groups)?;
        }
    }
    Ok(AuthenticatedUser { name: id.user_name(), groups })
}

/// Whether the bootstrapsigner would sign `cluster-info` with this Secret (upstream
/// `validateSecretForSigning`), at `now`; returns the token ID.
///
/// Requires a name `bootstrap-token-<id>` ([`Error::InvalidSecretName`]), the bootstrap-token
/// type if given ([`Error::InvalidSecretName`]), a non-empty `token-id` equal to the name's ID
/// and a non-empty `token-secret` ([`Error::TokenMismatch`]), not expired
/// ([`Error::TokenExpired`]) and `usage-bootstrap-signing` exactly `true`
/// ([`Error::InvalidUsage`]). The HMAC key is the `token-secret` value itself.
pub fn validate_for_signing(secret: &SecretView<'_>, now: i64) -> Result<TokenId> {
    let id = TokenId::from_secret_name(secret.name.ok_or(Error::InvalidSecretName)?)?;
    if secret.secret_type.is_some_and(|t| t != SECRET_TYPE) {
        return Err(Error::InvalidSecretName);
    }
    match secret.token_id {
        Some(v) if !v.is_empty() && v == id.as_bytes() => {}
        _ => return Err(Error::TokenMismatch),
    }
    if secret.token_secret.is_none_or(<[u8]>::is_empty) {
        return Err(Error::TokenMismatch);
    }
    if is_expired(secret.expiration, now) {
        return Err(Error::TokenExpired);
    }
    if secret.usage_bootstrap_signing != Some(b"true".as_slice()) {
        return Err(Error::InvalidUsage);
    }
    Ok(id)
}

#[cfg(test)]
mod tests {
    extern crate std;
    use super::*;
    use crate::token::MAX_GROUPS;
    use std::format;

    const NOW: i64 = 1_767_323_045; // 2026-01-02T03:04:05Z

    fn token() -> BootstrapToken {
        BootstrapToken::parse("abcdef.0123456789abcdef").unwrap()
    }

    fn view() -> SecretView<'static> {
        SecretView {
            name: Some("bootstrap-token-abcdef"),
            namespace: Some("kube-system"),
            secret_type: Some("bootstrap.kubernetes.io/token"),
            token_id: Some(b"abcdef"),
            token_secret: Some(b"0123456789abcdef"),
            usage_bootstrap_authentication: Some(b"true"),
            ..SecretView::default()
        }
    }

    fn auth(v: &SecretView<'static>) -> Result<AuthenticatedUser<'static>> {
        authenticate::<MAX_GROUPS>(&token(), v, NOW)
    }

    #[test]
    fn upstream_authenticated_user() {
        let u = auth(&view()).unwrap();
        assert_eq!(u.name.as_str(), "system:bootstrap:abcdef");
        assert_eq!(&u.groups[..], ["system:bootstrappers"]);
    }

    #[test]
    fn extra_groups() {
        let mut v = view();
        v.auth_extra_groups = Some(b"system:bootstrappers:kubeadm:default-node-token");
        let u = auth(&v).unwrap();
        assert_eq!(
            &u.groups[..],
            ["system:bootstrappers", "system:bootstrappers:kubeadm:default-node-token"]
        );
        v.auth_extra_groups = Some(b"");
        assert_eq!(&auth(&v).unwrap().groups[..], ["system:bootstrappers"]);
        v.auth_extra_groups = Some(b"foo");
        assert_eq!(auth(&v), Err(Error::InvalidGroup));
        v.auth_extra_groups = Some(b"system:bootstrappers:\xff");
        assert_eq!(auth(&v), Err(Error::InvalidGroup));
    }

    #[test]
    fn rejections() {
        type Mutation = fn(&mut SecretView<'static>);
        let cases: [(Mutation, Error); 14] = [
            (|v| v.name = Some("bootstrap-token-abcdeg"), Error::InvalidSecretName),
            (|v| v.namespace = Some("default"), Error::InvalidSecretName),
            (|v| v.deletion_pending = true, Error::TokenExpired),
            (|v| v.secret_type = Some("Opaque"), Error::InvalidSecretName),
            (|v| v.secret_type = None, Error::InvalidSecretName),
            (|v| v.token_secret = None, Error::TokenMismatch),
            (|v| v.token_secret = Some(b"0123456789abcdeg"), Error::TokenMismatch),
            (|v| v.token_secret = Some(b"0123456789abcdef "), Error::TokenMismatch),
            (|v| v.token_id = Some(b"abcdeg"), Error::TokenMismatch),
            (|v| v.token_id = None, Error::TokenMismatch),
            (
                |v| v.usage_bootstrap_authentication = Some(b"True"),
                Error::TokenNotForAuthentication,
            ),
            (
                |v| v.usage_bootstrap_authentication = Some(b"true\n"),
                Error::TokenNotForAuthentication,
            ),
            (|v| v.usage_bootstrap_authentication = None, Error::TokenNotForAuthentication),
            (|v| v.expiration = Some(b"yesterday"), Error::TokenExpired),
        ];
        for (i, (mutate, err)) in cases.iter().enumerate() {
            let mut v = view();
            mutate(&mut v);
            assert_eq!(auth(&v), Err(*err), "case {i}");
        }
        // Name and namespace are optional (already looked up by the caller).
        let mut v = view();
        v.name = None;
        v.namespace = None;
        assert!(auth(&v).is_ok());
    }

    #[test]
    fn expiration_boundaries() {
        let mut v = view();
        v.expiration = Some(b"2026-01-02T03:04:06Z");
        assert!(auth(&v).is_ok());
        v.expiration = Some(b"2026-01-02T03:04:05Z");
        assert_eq!(auth(&v), Err(Error::TokenExpired));
        v.expiration = Some(b"2026-01-02T03:04:05.000000001Z");
        assert!(auth(&v).is_ok());
        v.expiration = Some(b"2026-01-02T04:04:05+01:00");
        assert_eq!(auth(&v), Err(Error::TokenExpired));
        v.expiration = Some(b"2026-01-02T04:04:06+01:00");
        assert!(auth(&v).is_ok());
        v.expiration = Some(b"");
        assert!(auth(&v).is_ok());
        v.expiration = Some(b"2026-01-02t03:04:06z");
        assert_eq!(auth(&v), Err(Error::TokenExpired));
        assert!(!is_expired(None, i64::MAX));
        assert!(!is_expired(Some(b"0000-01-01T00:00:00Z"), i64::MIN + 1));
    }

    #[test]
    fn signing() {
        let mut v = view();
        assert_eq!(validate_for_signing(&v, NOW), Err(Error::InvalidUsage));
        v.usage_bootstrap_signing = Some(b"true");
        assert_eq!(validate_for_signing(&v, NOW).unwrap().as_str(), "abcdef");
        v.token_secret = Some(b"");
        assert_eq!(validate_for_signing(&v, NOW), Err(Error::TokenMismatch));
        v.token_secret = Some(b"x");
        v.name = Some("bootstrap-token-ABCDEF");
        assert_eq!(validate_for_signing(&v, NOW), Err(Error::InvalidSecretName));
        v.name = Some("bootstrap-token-abcdef");
        v.expiration = Some(b"2020-01-01T00:00:00Z");
        assert_eq!(validate_for_signing(&v, NOW), Err(Error::TokenExpired));
    }

    #[test]
    fn view_set_data_and_debug() {
        let mut v = SecretView::default();
        assert!(v.set_data("token-secret", b"0123456789abcdef"));
        assert!(v.set_data("usage-bootstrap-signing", b"true"));
        assert!(!v.set_data("kubeconfig", b"x"));
        assert_eq!(v.usage_bootstrap_signing, Some(b"true".as_slice()));
        let dbg = format!("{v:?}");
        assert!(!dbg.contains("0123456789abcdef"), "{dbg}");
        assert!(dbg.contains("<redacted>"));
    }
}
