//! Bootstrap tokens (`abcdef.0123456789abcdef`): parse, generate, names, groups, usages, the
//! token Secret (check it like the apiserver does, write it as a manifest) and
//! `--token-auth-file` lines.
//!
//! A token is a 6-character ID and a 16-character secret over `[a-z0-9]`, written `<id>.<secret>`
//! on the wire (bearer token, kubeconfig `token:`). The apiserver finds the Secret
//! `kube-system/bootstrap-token-<id>` of type `bootstrap.kubernetes.io/token` and authenticates
//! the bearer as `system:bootstrap:<id>` in `system:bootstrappers` plus the Secret's
//! `auth-extra-groups`.
//!
//! Secrets are handled as secrets: [`TokenSecret`] and [`BootstrapToken`] zeroize on drop,
//! compare in constant time ([`subtle::ConstantTimeEq`]) and print as `abcdef.<redacted>` in
//! both `Debug` and `Display`. The only ways to the secret characters are the explicitly named
//! [`BootstrapToken::expose_secret`], [`BootstrapToken::secret_bytes`],
//! [`BootstrapToken::write_wire`] and [`BootstrapToken::to_wire`].
//!
//! ```
//! use kubeboot::token::BootstrapToken;
//! let t = BootstrapToken::parse("abcdef.0123456789abcdef")?;
//! assert_eq!(t.id(), "abcdef");
//! assert_eq!(t.secret_name().as_str(), "bootstrap-token-abcdef");
//! assert_eq!(t.user_name().as_str(), "system:bootstrap:abcdef");
//! assert_eq!(format!("{t:?}"), "abcdef.<redacted>");
//! # Ok::<(), kubeboot::Error>(())
//! ```

use core::fmt;

use subtle::{Choice, ConstantTimeEq};
use zeroize::{Zeroize, ZeroizeOnDrop};

use crate::{Error, Result};

mod authfile;
mod manifest;
pub mod rfc3339;
mod secret;

pub use authfile::{AuthFileLine, AuthFileLines, CsvField, CsvGroups, write_auth_file_line};
pub use manifest::{SecretSpec, write_secret_manifest};
pub use secret::{AuthenticatedUser, SecretView, authenticate, is_expired, validate_for_signing};

/// Characters in a token ID.
pub const ID_LEN: usize = 6;
/// Characters in a token secret.
pub const SECRET_LEN: usize = 16;
/// Characters in the wire form `<id>.<secret>`.
pub const TOKEN_LEN: usize = ID_LEN + 1 + SECRET_LEN;
/// The 36 symbols tokens are made of.
pub const ALPHABET: &str = "0123456789abcdefghijklmnopqrstuvwxyz";

/// Prefix of the token Secret's name: `bootstrap-token-<id>`.
pub const SECRET_NAME_PREFIX: &str = "bootstrap-token-";
/// Length of `bootstrap-token-<id>`.
pub const SECRET_NAME_LEN: usize = SECRET_NAME_PREFIX.len() + ID_LEN;
/// Prefix of the authenticated user name: `system:bootstrap:<id>`.
pub const USER_NAME_PREFIX: &str = "system:bootstrap:";
/// Length of `system:bootstrap:<id>`.
pub const USER_NAME_LEN: usize = USER_NAME_PREFIX.len() + ID_LEN;
/// The group every bootstrap-token user is in.
pub const BOOTSTRAPPERS_GROUP: &str = "system:bootstrappers";
/// Required prefix of every `auth-extra-groups` entry.
pub const EXTRA_GROUP_PREFIX: &str = "system:bootstrappers:";
/// The group the apiserver adds to every authenticated user (not part of the token's groups).
pub const AUTHENTICATED_GROUP: &str = "system:authenticated";
/// The only namespace the authenticator looks in.
pub const SECRET_NAMESPACE: &str = "kube-system";
/// The token Secret's `type`.
pub const SECRET_TYPE: &str = "bootstrap.kubernetes.io/token";
/// Prefix of the usage keys, `usage-bootstrap-<usage>`.
pub const USAGE_KEY_PREFIX: &str = "usage-bootstrap-";

/// Secret data key: the token ID.
pub const KEY_TOKEN_ID: &str = "token-id";
/// Secret data key: the token secret.
pub const KEY_TOKEN_SECRET: &str = "token-secret";
/// Secret data key: RFC 3339 expiration.
pub const KEY_EXPIRATION: &str = "expiration";
/// Secret data key: free-text description.
pub const KEY_DESCRIPTION: &str = "description";
/// Secret data key: `"true"` lets the token authenticate.
pub const KEY_USAGE_AUTHENTICATION: &str = "usage-bootstrap-authentication";
/// Secret data key: `"true"` lets the bootstrapsigner sign `cluster-info` with the token.
pub const KEY_USAGE_SIGNING: &str = "usage-bootstrap-signing";
/// Secret data key: comma-separated extra groups.
pub const KEY_AUTH_EXTRA_GROUPS: &str = "auth-extra-groups";

/// kubeadm's default extra group for join tokens.
pub const KUBEADM_DEFAULT_GROUP: &str = "system:bootstrappers:kubeadm:default-node-token";
/// kubeadm's default token TTL (24 h), in seconds.
pub const KUBEADM_DEFAULT_TTL_SECS: i64 = 24 * 3600;

/// Accepted characters a token needs: 6 for the ID, 16 for the secret.
pub const ENTROPY_MIN: usize = ID_LEN + SECRET_LEN;
/// Bytes to hand [`BootstrapToken::from_entropy`] so that running out is practically
/// impossible (each byte is rejected with probability 4/256; with 32 bytes the chance of fewer
/// than 22 accepted is about 2·10⁻¹²).
pub const ENTROPY_RECOMMENDED: usize = 32;
/// The most bytes [`BootstrapToken::generate`] draws before giving up on a broken source.
pub const MAX_GENERATE_BYTES: usize = 1024;

/// Default capacity for authenticated group lists (`system:bootstrappers` + 15 extra groups).
pub const MAX_GROUPS: usize = 16;
/// A group list with the default capacity [`MAX_GROUPS`].
pub type Groups<'a> = heapless::Vec<&'a str, MAX_GROUPS>;

const fn is_token_char(b: u8) -> bool {
    b.is_ascii_digit() || b.is_ascii_lowercase()
}

/// 1 when `b` is in `[a-z0-9]`, computed without data-dependent branches.
fn ct_token_char(b: u8) -> Choice {
    let digit = (b.wrapping_sub(b'0') < 10) as u8;
    let lower = (b.wrapping_sub(b'a') < 26) as u8;
    Choice::from(digit | lower)
}

/// Maps `x` in `0..36` to its symbol without branches or table lookups (upstream's formula).
fn symbol(x: u8) -> u8 {
    let x = u32::from(x);
    (x + 48 + (39 & (9u32.wrapping_sub(x) >> 8))) as u8
}

// ---------------------------------------------------------------------------------------------
// Token ID

/// A token ID: exactly 6 characters of `[a-z0-9]`. Public (it is part of names and logs).
#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct TokenId([u8; ID_LEN]);

impl TokenId {
    /// Parses `\A[a-z0-9]{6}\z`; [`Error::InvalidTokenId`] otherwise.
    pub fn parse(s: &str) -> Result<Self> {
        Self::from_bytes(s.as_bytes())
    }

    /// Like [`TokenId::parse`], from bytes.
    pub fn from_bytes(b: &[u8]) -> Result<Self> {
        let arr: [u8; ID_LEN] = b.try_into().map_err(|_| Error::InvalidTokenId)?;
        if arr.iter().all(|&c| is_token_char(c)) {
            Ok(TokenId(arr))
        } else {
            Err(Error::InvalidTokenId)
        }
    }

    /// Extracts the ID from a Secret name `bootstrap-token-<id>` (upstream `ParseName`,
    /// `^bootstrap-token-([a-z0-9]{6})$`); [`Error::InvalidSecretName`] otherwise.
    pub fn from_secret_name(name: &str) -> Result<Self> {
        name.strip_prefix(SECRET_NAME_PREFIX)
            .and_then(|id| TokenId::parse(id).ok())
            .ok_or(Error::InvalidSecretName)
    }

    /// The ID text.
    pub fn as_str(&self) -> &str {
        core::str::from_utf8(&self.0).unwrap_or("")
    }

    /// The ID bytes.
    pub const fn as_bytes(&self) -> &[u8; ID_LEN] {
        &self.0
    }

    /// `bootstrap-token-<id>`.
    pub fn secret_name(&self) -> heapless::String<SECRET_NAME_LEN> {
        concat(SECRET_NAME_PREFIX, self.as_str())
    }

    /// `system:bootstrap:<id>`.
    pub fn user_name(&self) -> heapless::String<USER_NAME_LEN> {
        concat(USER_NAME_PREFIX, self.as_str())
    }
}

fn concat<const N: usize>(a: &str, b: &str) -> heapless::String<N> {
    let mut s = heapless::String::new();
    // Callers size N as a.len() + b.len(); a failed push leaves a shorter string, never a panic.
    let _ = s.push_str(a);
    let _ = s.push_str(b);
    s
}

impl fmt::Debug for TokenId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "TokenId({:?})", self.as_str())
    }
}

impl fmt::Display for TokenId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Extracts the token ID from a Secret name (`bootstrap-token-abc123` → `abc123`).
pub fn parse_secret_name(name: &str) -> Result<TokenId> {
    TokenId::from_secret_name(name)
}

// ---------------------------------------------------------------------------------------------
// Token secret

/// A token secret: 16 characters of `[a-z0-9]`. Zeroized on drop, compared in constant time,
/// never printed.
pub struct TokenSecret([u8; SECRET_LEN]);

impl TokenSecret {
    /// Parses `\A[a-z0-9]{16}\z` (checking every character, no early exit);
    /// [`Error::InvalidToken`] otherwise.
    pub fn parse(s: &str) -> Result<Self> {
        Self::from_bytes(s.as_bytes())
    }

    /// Like [`TokenSecret::parse`], from bytes.
    pub fn from_bytes(b: &[u8]) -> Result<Self> {
        let arr: [u8; SECRET_LEN] = b.try_into().map_err(|_| Error::InvalidToken)?;
        let secret = TokenSecret(arr);
        let mut ok = Choice::from(1);
        for &c in &secret.0 {
            ok &= ct_token_char(c);
        }
        if bool::from(ok) { Ok(secret) } else { Err(Error::InvalidToken) }
    }

    /// The secret characters. Handle with care: for HMAC keys and the wire form only.
    pub fn expose_secret(&self) -> &str {
        core::str::from_utf8(&self.0).unwrap_or("")
    }

    /// The secret bytes (ASCII). Handle with care: for HMAC keys and the wire form only.
    pub const fn secret_bytes(&self) -> &[u8; SECRET_LEN] {
        &self.0
    }

    /// Constant-time comparison with arbitrary bytes (a length mismatch is unequal; the length
    /// itself is not secret).
    pub fn ct_eq_bytes(&self, other: &[u8]) -> bool {
        other.len() == SECRET_LEN && bool::from(self.0[..].ct_eq(other))
    }
}

impl Clone for TokenSecret {
    fn clone(&self) -> Self {
        TokenSecret(self.0)
    }
}

impl Drop for TokenSecret {
    fn drop(&mut self) {
        self.0.zeroize();
    }
}

impl Zeroize for TokenSecret {
    fn zeroize(&mut self) {
        self.0.zeroize();
    }
}

impl ZeroizeOnDrop for TokenSecret {}

impl ConstantTimeEq for TokenSecret {
    fn ct_eq(&self, other: &Self) -> Choice {
        self.0.ct_eq(&other.0)
    }
}

impl PartialEq for TokenSecret {
    fn eq(&self, other: &Self) -> bool {
        bool::from(self.ct_eq(other))
    }
}

impl Eq for TokenSecret {}

impl fmt::Debug for TokenSecret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("<redacted>")
    }
}

// ---------------------------------------------------------------------------------------------
// Token

/// A bootstrap token `<id>.<secret>`.
///
/// `Debug` and `Display` both print `<id>.<redacted>`.
#[derive(Clone, PartialEq, Eq)]
pub struct BootstrapToken {
    id: TokenId,
    secret: TokenSecret,
}

impl BootstrapToken {
    /// Parses exactly `\A[a-z0-9]{6}\.[a-z0-9]{16}\z`: no trimming, no trailing newline.
    /// [`Error::InvalidToken`] otherwise (the error never contains the input).
    pub fn parse(s: &str) -> Result<Self> {
        Self::parse_bytes(s.as_bytes())
    }

    /// Like [`BootstrapToken::parse`], from bytes.
    pub fn parse_bytes(b: &[u8]) -> Result<Self> {
        if b.len() != TOKEN_LEN || b.get(ID_LEN) != Some(&b'.') {
            return Err(Error::InvalidToken);
        }
        let id = b.get(..ID_LEN).ok_or(Error::InvalidToken)?;
        let secret = b.get(ID_LEN + 1..).ok_or(Error::InvalidToken)?;
        // Check both halves before deciding, so the secret's validity is not skipped or timed
        // separately from the ID's.
        let id = TokenId::from_bytes(id);
        let secret = TokenSecret::from_bytes(secret);
        match (id, secret) {
            (Ok(id), Ok(secret)) => Ok(BootstrapToken { id, secret }),
            _ => Err(Error::InvalidToken),
        }
    }

    /// Joins an ID and a secret (upstream `TokenFromIDAndSecret`), validating both:
    /// [`Error::InvalidTokenId`] or [`Error::InvalidToken`].
    pub fn from_parts(id: &str, secret: &str) -> Result<Self> {
        Ok(BootstrapToken { id: TokenId::parse(id)?, secret: TokenSecret::parse(secret)? })
    }

    /// Assembles a token from already-validated parts.
    pub const fn new(id: TokenId, secret: TokenSecret) -> Self {
        BootstrapToken { id, secret }
    }

    /// The token ID text.
    pub fn id(&self) -> &str {
        self.id.as_str()
    }

    /// The token ID.
    pub const fn token_id(&self) -> TokenId {
        self.id
    }

    /// The secret half.
    pub const fn secret(&self) -> &TokenSecret {
        &self.secret
    }

    /// The secret characters. Handle with care: for HMAC keys (JWS) and the wire form only.
    pub fn expose_secret(&self) -> &str {
        self.secret.expose_secret()
    }

    /// The secret bytes (ASCII). Handle with care: for HMAC keys (JWS) and the wire form only.
    pub const fn secret_bytes(&self) -> &[u8; SECRET_LEN] {
        self.secret.secret_bytes()
    }

    /// Writes the bearer form `<id>.<secret>` into `buf`, returning [`TOKEN_LEN`].
    pub fn write_wire(&self, buf: &mut [u8]) -> Result<usize> {
        let dst = buf.get_mut(..TOKEN_LEN).ok_or(Error::BufferTooSmall { needed: TOKEN_LEN })?;
        dst.copy_from_slice(&self.to_wire().0);
        Ok(TOKEN_LEN)
    }

    /// The bearer form `<id>.<secret>` in a zeroizing stack array.
    pub fn to_wire(&self) -> WireToken {
        let mut out = [0u8; TOKEN_LEN];
        for (dst, src) in out
            .iter_mut()
            .zip(self.id.0.iter().chain(core::iter::once(&b'.')).chain(self.secret.0.iter()))
        {
            *dst = *src;
        }
        WireToken(out)
    }

    /// `bootstrap-token-<id>`.
    pub fn secret_name(&self) -> heapless::String<SECRET_NAME_LEN> {
        self.id.secret_name()
    }

    /// `system:bootstrap:<id>`.
    pub fn user_name(&self) -> heapless::String<USER_NAME_LEN> {
        self.id.user_name()
    }

    /// Constant-time check of a presented bearer string against this token.
    pub fn matches_wire(&self, presented: &[u8]) -> bool {
        let wire = self.to_wire();
        presented.len() == TOKEN_LEN && bool::from(wire.0[..].ct_eq(presented))
    }

    /// Generates a token from caller entropy, deterministically: each byte `b < 252` gives the
    /// next character `ALPHABET[b % 36]` (unbiased), bytes `≥ 252` are skipped. The first 6
    /// characters form the ID, the next 16 the secret; unused trailing bytes are ignored.
    ///
    /// [`Error::InsufficientEntropy`] when fewer than 22 bytes are accepted; pass
    /// [`ENTROPY_RECOMMENDED`] (32) bytes or more.
    pub fn from_entropy(entropy: &[u8]) -> Result<Self> {
        let mut s = Sampler::new();
        for &b in entropy {
            if s.feed(b) {
                return Ok(s.finish());
            }
        }
        Err(Error::InsufficientEntropy)
    }

    /// Generates a token from a fill callback (e.g. `getrandom::fill`), drawing 32-byte
    /// chunks and rejection-sampling as in [`BootstrapToken::from_entropy`].
    ///
    /// A source that keeps producing rejected bytes is treated as broken:
    /// [`Error::InsufficientEntropy`] after [`MAX_GENERATE_BYTES`] bytes.
    pub fn generate<F: FnMut(&mut [u8])>(mut fill: F) -> Result<Self> {
        Self::try_generate(|buf| {
            fill(buf);
            Ok(())
        })
    }

    /// Generates a token from a `rand_core` 0.10 cryptographic RNG. An RNG error is
    /// [`Error::InsufficientEntropy`].
    pub fn generate_with_rng<R: rand_core::TryCryptoRng + ?Sized>(rng: &mut R) -> Result<Self> {
        Self::try_generate(|buf| rng.try_fill_bytes(buf).map_err(|_| Error::InsufficientEntropy))
    }

    fn try_generate<F: FnMut(&mut [u8]) -> Result<()>>(mut fill: F) -> Result<Self> {
        let mut s = Sampler::new();
        let mut chunk = [0u8; 32];
        let mut drawn = 0usize;
        let result = loop {
            if drawn >= MAX_GENERATE_BYTES {
                break Err(Error::InsufficientEntropy);
            }
            if let Err(e) = fill(&mut chunk) {
                break Err(e);
            }
            drawn += chunk.len();
            if chunk.iter().any(|&b| s.feed(b)) {
                break Ok(());
            }
        };
        chunk.zeroize();
        result.map(|()| s.finish())
    }
}

/// Rejection sampler over bytes into the 22 token characters.
struct Sampler {
    out: [u8; ENTROPY_MIN],
    n: usize,
}

impl Sampler {
    fn new() -> Self {
        Sampler { out: [0; ENTROPY_MIN], n: 0 }
    }

    /// Feeds one byte; `true` once all 22 characters are filled.
    fn feed(&mut self, b: u8) -> bool {
        if b < 252 {
            if let Some(slot) = self.out.get_mut(self.n) {
                *slot = symbol(b % 36);
                self.n += 1;
            }
        }
        self.n >= ENTROPY_MIN
    }

    fn finish(&mut self) -> BootstrapToken {
        let mut id = [0u8; ID_LEN];
        let mut secret = [0u8; SECRET_LEN];
        for (i, &c) in self.out.iter().enumerate() {
            if let Some(slot) = id.get_mut(i) {
                *slot = c;
            } else if let Some(slot) = secret.get_mut(i - ID_LEN) {
                *slot = c;
            }
        }
        self.out.zeroize();
        let token = BootstrapToken { id: TokenId(id), secret: TokenSecret(secret) };
        secret.zeroize();
        token
    }
}

impl Drop for Sampler {
    fn drop(&mut self) {
        self.out.zeroize();
    }
}

impl core::str::FromStr for BootstrapToken {
    type Err = Error;
    fn from_str(s: &str) -> Result<Self> {
        Self::parse(s)
    }
}

impl core::str::FromStr for TokenId {
    type Err = Error;
    fn from_str(s: &str) -> Result<Self> {
        Self::parse(s)
    }
}

impl core::str::FromStr for Usage {
    type Err = Error;
    fn from_str(s: &str) -> Result<Self> {
        Self::parse(s)
    }
}

impl ConstantTimeEq for BootstrapToken {
    fn ct_eq(&self, other: &Self) -> Choice {
        self.id.0.ct_eq(&other.id.0) & self.secret.ct_eq(&other.secret)
    }
}

impl fmt::Debug for BootstrapToken {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}.<redacted>", self.id)
    }
}

impl fmt::Display for BootstrapToken {
    /// Redacted, like `Debug`: use [`BootstrapToken::to_wire`] for the real bearer string.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}.<redacted>", self.id)
    }
}

/// The bearer form `<id>.<secret>` on the stack; zeroized on drop, `Debug` redacted.
pub struct WireToken([u8; TOKEN_LEN]);

impl WireToken {
    /// The bearer text. Handle with care.
    pub fn as_str(&self) -> &str {
        core::str::from_utf8(&self.0).unwrap_or("")
    }

    /// The bearer bytes. Handle with care.
    pub const fn as_bytes(&self) -> &[u8; TOKEN_LEN] {
        &self.0
    }
}

impl Drop for WireToken {
    fn drop(&mut self) {
        self.0.zeroize();
    }
}

impl ZeroizeOnDrop for WireToken {}

impl fmt::Debug for WireToken {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let id = self.0.get(..ID_LEN).and_then(|b| core::str::from_utf8(b).ok()).unwrap_or("");
        write!(f, "{id}.<redacted>")
    }
}

// ---------------------------------------------------------------------------------------------
// Usages

/// A token usage (`usage-bootstrap-<usage>: "true"`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Usage {
    /// `authentication`: the token authenticates API requests.
    Authentication,
    /// `signing`: the bootstrapsigner signs `kube-public/cluster-info` with the token.
    Signing,
}

impl Usage {
    /// The known usages (upstream `KnownTokenUsages`), in manifest order.
    pub const ALL: [Usage; 2] = [Usage::Authentication, Usage::Signing];

    /// Parses `signing` or `authentication` (exact, case-sensitive); [`Error::InvalidUsage`].
    pub fn parse(s: &str) -> Result<Self> {
        match s {
            "authentication" => Ok(Usage::Authentication),
            "signing" => Ok(Usage::Signing),
            _ => Err(Error::InvalidUsage),
        }
    }

    /// `authentication` or `signing`.
    pub const fn as_str(self) -> &'static str {
        match self {
            Usage::Authentication => "authentication",
            Usage::Signing => "signing",
        }
    }

    /// The Secret data key, `usage-bootstrap-<usage>`.
    pub const fn data_key(self) -> &'static str {
        match self {
            Usage::Authentication => KEY_USAGE_AUTHENTICATION,
            Usage::Signing => KEY_USAGE_SIGNING,
        }
    }

    const fn bit(self) -> u8 {
        match self {
            Usage::Authentication => 1,
            Usage::Signing => 2,
        }
    }
}

/// A set of [`Usage`]s.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct Usages(u8);

impl Usages {
    /// No usages.
    pub const NONE: Usages = Usages(0);
    /// kubeadm's default: `signing,authentication`.
    pub const KUBEADM_DEFAULT: Usages = Usages(3);

    /// This set plus `u`.
    pub const fn with(self, u: Usage) -> Self {
        Usages(self.0 | u.bit())
    }

    /// Whether `u` is in the set.
    pub const fn contains(self, u: Usage) -> bool {
        self.0 & u.bit() != 0
    }

    /// Whether the set is empty.
    pub const fn is_empty(self) -> bool {
        self.0 == 0
    }

    /// Parses a comma-separated list (kubeadm `--usages signing,authentication`); an empty
    /// string is the empty set; duplicates are fine; [`Error::InvalidUsage`] on anything else.
    pub fn parse_list(s: &str) -> Result<Self> {
        if s.is_empty() {
            return Ok(Usages::NONE);
        }
        s.split(',').try_fold(Usages::NONE, |acc, u| Ok(acc.with(Usage::parse(u)?)))
    }

    /// The usages in the set, in [`Usage::ALL`] order.
    pub fn iter(self) -> impl Iterator<Item = Usage> {
        Usage::ALL.into_iter().filter(move |u| self.contains(*u))
    }
}

// ---------------------------------------------------------------------------------------------
// Groups

/// Checks one extra group against `\Asystem:bootstrappers:[a-z0-9:-]{0,255}[a-z0-9]\z`;
/// [`Error::InvalidGroup`] otherwise.
pub fn validate_group(group: &str) -> Result<()> {
    let rest = group.strip_prefix(EXTRA_GROUP_PREFIX).ok_or(Error::InvalidGroup)?.as_bytes();
    let last_ok = rest.last().is_some_and(|&b| is_token_char(b));
    let body_ok = rest.iter().all(|&b| is_token_char(b) || b == b':' || b == b'-');
    if last_ok && body_ok && rest.len() <= 256 { Ok(()) } else { Err(Error::InvalidGroup) }
}

/// Validates a comma-separated `auth-extra-groups` value (no trimming: `"a, b"` fails). The
/// empty string is valid (no extra groups).
pub fn validate_extra_groups(value: &str) -> Result<()> {
    if value.is_empty() {
        return Ok(());
    }
    value.split(',').try_for_each(validate_group)
}

/// The groups a token with `auth-extra-groups = extra` authenticates as (upstream `GetGroups`):
/// `{system:bootstrappers} ∪ extras`, deduplicated and sorted ascending (byte order), written
/// into `out` (cleared first).
///
/// An empty value gives just `system:bootstrappers`. Any invalid name rejects the whole value
/// ([`Error::InvalidGroup`]). When the distinct groups exceed `N`, the result is
/// [`Error::BufferTooSmall`] whose `needed` is a capacity (in entries, not bytes) that is
/// guaranteed to suffice (the entry count + 1). On error `out` is left empty.
pub fn authenticated_groups<'a, const N: usize>(
    extra: &'a str,
    out: &mut heapless::Vec<&'a str, N>,
) -> Result<()> {
    out.clear();
    let r = fill_groups(extra, out);
    if r.is_err() {
        out.clear();
    }
    r
}

fn fill_groups<'a, const N: usize>(
    extra: &'a str,
    out: &mut heapless::Vec<&'a str, N>,
) -> Result<()> {
    validate_extra_groups(extra)?;
    let entries = if extra.is_empty() { 0 } else { extra.split(',').count() };
    let full = Error::BufferTooSmall { needed: entries + 1 };
    out.push(BOOTSTRAPPERS_GROUP).map_err(|_| full)?;
    if extra.is_empty() {
        return Ok(());
    }
    for g in extra.split(',') {
        if let Err(pos) = out.binary_search(&g) {
            out.insert(pos, g).map_err(|_| full)?;
        }
    }
    Ok(())
}

// ---------------------------------------------------------------------------------------------
// Output helper shared by the writers

/// Writes into a caller buffer, counting the needed length past the end. On failure the
/// whole buffer is wiped (it may hold secrets), so nothing usable is left behind.
pub(crate) struct Sink<'a> {
    buf: &'a mut [u8],
    len: usize,
    overflow: bool,
}

impl<'a> Sink<'a> {
    pub(crate) fn new(buf: &'a mut [u8]) -> Self {
        Sink { buf, len: 0, overflow: false }
    }

    pub(crate) fn put(&mut self, bytes: &[u8]) {
        let end = self.len.saturating_add(bytes.len());
        if !self.overflow {
            match self.buf.get_mut(self.len..end) {
                Some(dst) => dst.copy_from_slice(bytes),
                None => self.overflow = true,
            }
        }
        self.len = end;
    }

    pub(crate) fn put_str(&mut self, s: &str) {
        self.put(s.as_bytes());
    }

    pub(crate) fn finish(self) -> Result<usize> {
        if self.overflow {
            self.buf.zeroize();
            Err(Error::BufferTooSmall { needed: self.len })
        } else {
            Ok(self.len)
        }
    }
}

#[cfg(test)]
mod tests;
