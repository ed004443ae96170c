//! Bootstrap tokens: `kubeboot_token` handles, names, wire form and the token Secret manifest.

use core::ffi::c_char;

use kb::token::{self, BootstrapToken, SecretSpec, Usage, Usages};

use crate::error::kubeboot_result;
use crate::macros::{box_out, copy_out, free_box};

/// A parsed or generated bootstrap token (`<id>.<secret>`). Opaque; free with
/// [`kubeboot_token_free`], which zeroizes the secret.
pub struct kubeboot_token {
    pub(crate) inner: BootstrapToken,
}

impl crate::macros::Handle for kubeboot_token {
    #[cfg(not(feature = "std"))]
    fn pool() -> &'static dyn crate::macros::pool::Slots<Self> {
        static POOL: crate::macros::pool::Pool<kubeboot_token> = crate::macros::pool::Pool::new();
        &POOL
    }
}

/// Characters in the wire form `<id>.<secret>`.
pub const KUBEBOOT_TOKEN_LEN: usize = 23;
const _: () = assert!(KUBEBOOT_TOKEN_LEN == token::TOKEN_LEN);
/// Characters in a token ID.
pub const KUBEBOOT_TOKEN_ID_LEN: usize = 6;
const _: () = assert!(KUBEBOOT_TOKEN_ID_LEN == token::ID_LEN);
/// Length of `bootstrap-token-<id>`.
pub const KUBEBOOT_TOKEN_SECRET_NAME_LEN: usize = 22;
const _: () = assert!(KUBEBOOT_TOKEN_SECRET_NAME_LEN == token::SECRET_NAME_LEN);
/// Length of `system:bootstrap:<id>`.
pub const KUBEBOOT_TOKEN_USER_NAME_LEN: usize = 23;
const _: () = assert!(KUBEBOOT_TOKEN_USER_NAME_LEN == token::USER_NAME_LEN);
/// Entropy bytes to pass to [`kubeboot_token_from_entropy`] (fewer may work, 22 is the floor).
pub const KUBEBOOT_TOKEN_ENTROPY_LEN: usize = 32;
const _: () = assert!(KUBEBOOT_TOKEN_ENTROPY_LEN == token::ENTROPY_RECOMMENDED);
/// Usage bit: `usage-bootstrap-authentication: "true"`.
pub const KUBEBOOT_TOKEN_USAGE_AUTHENTICATION: u32 = 1;
/// Usage bit: `usage-bootstrap-signing: "true"`.
pub const KUBEBOOT_TOKEN_USAGE_SIGNING: u32 = 2;
/// Most `auth-extra-groups` entries [`kubeboot_token_secret_manifest`] accepts.
pub const KUBEBOOT_TOKEN_MAX_EXTRA_GROUPS: usize = 64;

/// Parse `\A[a-z0-9]{6}\.[a-z0-9]{16}\z` (no trimming) from `(s, len)` into a new handle in
/// `*out`. `KUBEBOOT_RESULT_INVALID_TOKEN` otherwise.
#[unsafe(no_mangle)]
pub extern "C" fn kubeboot_token_parse(
    s: *const c_char,
    len: usize,
    out: *mut *mut kubeboot_token,
) -> kubeboot_result {
    ffi_panic_boundary! {{
        let out = try_mut!(out);
        let bytes: &[u8] = try_slice!(s.cast::<u8>(), len);
        let inner = try_kb!(BootstrapToken::parse_bytes(bytes));
        box_out(out, kubeboot_token { inner })
    }}
}

/// Generate a token deterministically from caller entropy (`len` ≥ 22 bytes, 32 recommended:
/// bytes ≥ 252 are skipped). `KUBEBOOT_RESULT_INSUFFICIENT_ENTROPY` when too few are usable.
#[unsafe(no_mangle)]
pub extern "C" fn kubeboot_token_from_entropy(
    entropy: *const u8,
    len: usize,
    out: *mut *mut kubeboot_token,
) -> kubeboot_result {
    ffi_panic_boundary! {{
        let out = try_mut!(out);
        let entropy = try_slice!(entropy, len);
        let inner = try_kb!(BootstrapToken::from_entropy(entropy));
        box_out(out, kubeboot_token { inner })
    }}
}

/// Generate a token from the operating system's RNG. `KUBEBOOT_RESULT_INSUFFICIENT_ENTROPY`
/// when the RNG fails.
#[cfg(feature = "std")]
#[unsafe(no_mangle)]
pub extern "C" fn kubeboot_token_generate(out: *mut *mut kubeboot_token) -> kubeboot_result {
    ffi_panic_boundary! {{
        let out = try_mut!(out);
        let mut entropy = zeroize::Zeroizing::new([0u8; 64]);
        for _ in 0..4 {
            if getrandom::fill(&mut entropy[..]).is_err() {
                return kubeboot_result::InsufficientEntropy;
            }
            if let Ok(inner) = BootstrapToken::from_entropy(&entropy[..]) {
                return box_out(out, kubeboot_token { inner });
            }
        }
        kubeboot_result::InsufficientEntropy
    }}
}

/// Free a token handle, zeroizing its secret. NULL is a no-op.
#[unsafe(no_mangle)]
pub extern "C" fn kubeboot_token_free(token: *mut kubeboot_token) {
    ffi_panic_boundary! { (), {
        // SAFETY: the caller passes NULL or a handle from a kubeboot_token constructor that has
        // not been freed; `BootstrapToken` zeroizes its secret on drop.
        unsafe { free_box(token) }
    }}
}

/// The token ID (6 characters) into `buf`.
#[unsafe(no_mangle)]
pub extern "C" fn kubeboot_token_id(
    token: *const kubeboot_token,
    buf: *mut c_char,
    len: usize,
    out_len: *mut usize,
) -> kubeboot_result {
    ffi_panic_boundary! {{
        let token = try_ref!(token);
        let out_len = try_mut!(out_len);
        let buf = try_out_buf!(buf, len);
        copy_out(buf, out_len, token.inner.id().as_bytes())
    }}
}

/// The token Secret's name `bootstrap-token-<id>` into `buf`.
#[unsafe(no_mangle)]
pub extern "C" fn kubeboot_token_secret_name(
    token: *const kubeboot_token,
    buf: *mut c_char,
    len: usize,
    out_len: *mut usize,
) -> kubeboot_result {
    ffi_panic_boundary! {{
        let token = try_ref!(token);
        let out_len = try_mut!(out_len);
        let buf = try_out_buf!(buf, len);
        copy_out(buf, out_len, token.inner.secret_name().as_bytes())
    }}
}

/// The authenticated user name `system:bootstrap:<id>` into `buf`.
#[unsafe(no_mangle)]
pub extern "C" fn kubeboot_token_user_name(
    token: *const kubeboot_token,
    buf: *mut c_char,
    len: usize,
    out_len: *mut usize,
) -> kubeboot_result {
    ffi_panic_boundary! {{
        let token = try_ref!(token);
        let out_len = try_mut!(out_len);
        let buf = try_out_buf!(buf, len);
        copy_out(buf, out_len, token.inner.user_name().as_bytes())
    }}
}

/// The bearer form `<id>.<secret>` (23 characters, **contains the secret**) into `buf`.
#[unsafe(no_mangle)]
pub extern "C" fn kubeboot_token_wire(
    token: *const kubeboot_token,
    buf: *mut c_char,
    len: usize,
    out_len: *mut usize,
) -> kubeboot_result {
    ffi_panic_boundary! {{
        let token = try_ref!(token);
        let out_len = try_mut!(out_len);
        let buf = try_out_buf!(buf, len);
        crate::macros::write_with(buf, out_len, |b| token.inner.write_wire(b))
    }}
}

/// Check a comma-separated `auth-extra-groups` value (each entry
/// `system:bootstrappers:[a-z0-9:-]{0,255}[a-z0-9]`, no spaces); the empty string is valid.
/// `KUBEBOOT_RESULT_INVALID_GROUP` otherwise.
#[unsafe(no_mangle)]
pub extern "C" fn kubeboot_token_validate_extra_groups(
    groups: *const c_char,
    len: usize,
) -> kubeboot_result {
    ffi_panic_boundary! {{
        let groups = try_str!(groups, len);
        try_kb!(token::validate_extra_groups(groups));
        kubeboot_result::Ok
    }}
}

fn usages_from_bits(bits: u32) -> Option<Usages> {
    let known = KUBEBOOT_TOKEN_USAGE_AUTHENTICATION | KUBEBOOT_TOKEN_USAGE_SIGNING;
    if bits & !known != 0 {
        return None;
    }
    let mut u = Usages::NONE;
    if bits & KUBEBOOT_TOKEN_USAGE_AUTHENTICATION != 0 {
        u = u.with(Usage::Authentication);
    }
    if bits & KUBEBOOT_TOKEN_USAGE_SIGNING != 0 {
        u = u.with(Usage::Signing);
    }
    Some(u)
}

/// Write the token Secret manifest (YAML, `kube-system/bootstrap-token-<id>`, **contains the
/// secret**) into `buf`.
///
/// * `description`: NULL with `description_len` 0 for none, else `description_len` bytes of
///   UTF-8 (NULL with a non-zero length is `KUBEBOOT_RESULT_NULL_PARAMETER`);
/// * `has_expiration` / `expiration`: the expiration in unix seconds, written as RFC 3339;
/// * `usages`: a bitmask of `KUBEBOOT_TOKEN_USAGE_*` (unknown bits:
///   `KUBEBOOT_RESULT_INVALID_USAGE`);
/// * `extra_groups`: comma-separated `auth-extra-groups` (empty: none; at most
///   [`KUBEBOOT_TOKEN_MAX_EXTRA_GROUPS`] entries, else `KUBEBOOT_RESULT_INVALID_GROUP`).
///
/// `buf` is not touched unless the call succeeds.
#[unsafe(no_mangle)]
#[allow(clippy::too_many_arguments)]
pub extern "C" fn kubeboot_token_secret_manifest(
    token: *const kubeboot_token,
    description: *const c_char,
    description_len: usize,
    has_expiration: bool,
    expiration: i64,
    usages: u32,
    extra_groups: *const c_char,
    extra_groups_len: usize,
    buf: *mut c_char,
    len: usize,
    out_len: *mut usize,
) -> kubeboot_result {
    ffi_panic_boundary! {{
        let token = try_ref!(token);
        let out_len = try_mut!(out_len);
        let description = try_opt_str!(description, description_len);
        let groups_str = try_str!(extra_groups, extra_groups_len);
        let buf = try_out_buf!(buf, len);
        let Some(usages) = usages_from_bits(usages) else {
            return kubeboot_result::InvalidUsage;
        };
        try_kb!(token::validate_extra_groups(groups_str));
        let mut groups: heapless::Vec<&str, KUBEBOOT_TOKEN_MAX_EXTRA_GROUPS> = heapless::Vec::new();
        if !groups_str.is_empty() {
            for g in groups_str.split(',') {
                if groups.push(g).is_err() {
                    return kubeboot_result::InvalidGroup;
                }
            }
        }
        let spec = SecretSpec {
            token: &token.inner,
            description,
            expiration: has_expiration.then_some(expiration),
            usages,
            extra_groups: &groups,
        };
        // Measure first: the core writer wipes the buffer on failure, and a short caller buffer
        // must stay untouched.
        let needed = match token::write_secret_manifest(&spec, &mut []) {
            Ok(n) => n,
            Err(kb::Error::BufferTooSmall { needed }) => needed,
            Err(e) => return e.into(),
        };
        if buf.len() < needed {
            *out_len = needed;
            return kubeboot_result::InsufficientSize;
        }
        crate::macros::write_with(buf, out_len, |b| token::write_secret_manifest(&spec, b))
    }}
}
