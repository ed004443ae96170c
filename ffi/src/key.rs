//! P-256 node keys: `kubeboot_key` handles (generate, import, export, sign).

use kb::key::{self, NodeKey};

use crate::error::kubeboot_result;
use crate::macros::{box_out, free_box, write_with};

/// A P-256 private key. Opaque; free with [`kubeboot_key_free`], which zeroizes the scalar.
pub struct kubeboot_key {
    pub(crate) inner: NodeKey,
}

impl crate::macros::Handle for kubeboot_key {
    #[cfg(not(feature = "std"))]
    fn pool() -> &'static dyn crate::macros::pool::Slots<Self> {
        static POOL: crate::macros::pool::Pool<kubeboot_key> = crate::macros::pool::Pool::new();
        &POOL
    }
}

/// Bytes of entropy [`kubeboot_key_from_entropy`] needs at least (each further 32-byte chunk is a
/// fallback should a chunk be out of range).
pub const KUBEBOOT_KEY_ENTROPY_LEN: usize = 32;
const _: () = assert!(KUBEBOOT_KEY_ENTROPY_LEN == key::ENTROPY_LEN);
/// Length of a P-256 SubjectPublicKeyInfo in DER.
pub const KUBEBOOT_KEY_SPKI_LEN: usize = 91;
const _: () = assert!(KUBEBOOT_KEY_SPKI_LEN == key::P256_SPKI_LEN);
/// Length of the SEC1 `EC PRIVATE KEY` PEM of a P-256 key.
pub const KUBEBOOT_KEY_SEC1_PEM_LEN: usize = 227;
const _: () = assert!(KUBEBOOT_KEY_SEC1_PEM_LEN == key::SEC1_PEM_LEN);
/// Length of the uncompressed public point `04 || X || Y`.
pub const KUBEBOOT_KEY_POINT_LEN: usize = 65;
/// Length of a raw `r || s` ECDSA P-256 signature.
pub const KUBEBOOT_SIGNATURE_LEN: usize = 64;

/// Derive a key from caller entropy (`len` ≥ 32; the first 32-byte chunk that is a valid scalar
/// is used). `KUBEBOOT_RESULT_INSUFFICIENT_ENTROPY` when `len` < 32,
/// `KUBEBOOT_RESULT_BAD_ENTROPY` when no chunk is a valid scalar.
#[unsafe(no_mangle)]
pub extern "C" fn kubeboot_key_from_entropy(
    entropy: *const u8,
    len: usize,
    out: *mut *mut kubeboot_key,
) -> kubeboot_result {
    ffi_panic_boundary! {{
        let out = try_mut!(out);
        let entropy = try_slice!(entropy, len);
        let inner = try_kb!(NodeKey::from_entropy(entropy));
        box_out(out, kubeboot_key { inner })
    }}
}

/// Generate a key from the operating system's RNG.
#[cfg(feature = "std")]
#[unsafe(no_mangle)]
pub extern "C" fn kubeboot_key_generate(out: *mut *mut kubeboot_key) -> kubeboot_result {
    ffi_panic_boundary! {{
        let out = try_mut!(out);
        let inner = try_kb!(NodeKey::generate(|b| {
            getrandom::fill(b).map_err(|_| kb::Error::InsufficientEntropy)
        }));
        box_out(out, kubeboot_key { inner })
    }}
}

/// Import a P-256 key from PEM (`EC PRIVATE KEY` or `PRIVATE KEY`; other blocks are skipped).
/// `KUBEBOOT_RESULT_UNSUPPORTED_KEY` for RSA / other curves, `KUBEBOOT_RESULT_MALFORMED_KEY`
/// for anything unparseable.
#[unsafe(no_mangle)]
pub extern "C" fn kubeboot_key_from_pem(
    pem: *const u8,
    len: usize,
    out: *mut *mut kubeboot_key,
) -> kubeboot_result {
    ffi_panic_boundary! {{
        let out = try_mut!(out);
        let pem = try_slice!(pem, len);
        let inner = try_kb!(NodeKey::from_pem(pem));
        box_out(out, kubeboot_key { inner })
    }}
}

/// Import a P-256 key from DER (SEC1 `ECPrivateKey` or PKCS#8).
#[unsafe(no_mangle)]
pub extern "C" fn kubeboot_key_from_der(
    der: *const u8,
    len: usize,
    out: *mut *mut kubeboot_key,
) -> kubeboot_result {
    ffi_panic_boundary! {{
        let out = try_mut!(out);
        let der = try_slice!(der, len);
        let inner = try_kb!(NodeKey::from_der(der));
        box_out(out, kubeboot_key { inner })
    }}
}

/// Free a key handle, zeroizing the private scalar. NULL is a no-op.
#[unsafe(no_mangle)]
pub extern "C" fn kubeboot_key_free(key: *mut kubeboot_key) {
    ffi_panic_boundary! { (), {
        // SAFETY: the caller passes NULL or a handle from a kubeboot_key constructor that has
        // not been freed; p256's `SigningKey` zeroizes its scalar on drop.
        unsafe { free_box(key) }
    }}
}

/// Export the key as SEC1 `EC PRIVATE KEY` PEM (227 bytes, **secret**) into `buf`.
#[unsafe(no_mangle)]
pub extern "C" fn kubeboot_key_to_pem(
    key: *const kubeboot_key,
    buf: *mut core::ffi::c_char,
    len: usize,
    out_len: *mut usize,
) -> kubeboot_result {
    ffi_panic_boundary! {{
        let key = try_ref!(key);
        let out_len = try_mut!(out_len);
        let buf = try_out_buf!(buf, len);
        write_with(buf, out_len, |b| key.inner.to_sec1_pem(b))
    }}
}

/// Export the public key as SubjectPublicKeyInfo DER (91 bytes) into `buf`.
#[unsafe(no_mangle)]
pub extern "C" fn kubeboot_key_public_spki_der(
    key: *const kubeboot_key,
    buf: *mut u8,
    len: usize,
    out_len: *mut usize,
) -> kubeboot_result {
    ffi_panic_boundary! {{
        let key = try_ref!(key);
        let out_len = try_mut!(out_len);
        let buf = try_out_buf!(buf, len);
        crate::macros::copy_out(buf, out_len, &key.inner.public_key_spki())
    }}
}

/// Write the uncompressed public point `04 || X || Y` into `point` (65 writable bytes).
#[unsafe(no_mangle)]
pub extern "C" fn kubeboot_key_public_point(
    key: *const kubeboot_key,
    point: *mut u8,
) -> kubeboot_result {
    ffi_panic_boundary! {{
        let key = try_ref!(key);
        let point = try_out_buf!(point, KUBEBOOT_KEY_POINT_LEN);
        point.copy_from_slice(&key.inner.public_point());
        kubeboot_result::Ok
    }}
}

/// ECDSA P-256 / SHA-256 signature (deterministic, RFC 6979) of `(msg, msg_len)` as raw
/// `r || s` into `sig_rs` (64 writable bytes).
#[unsafe(no_mangle)]
pub extern "C" fn kubeboot_key_sign(
    key: *const kubeboot_key,
    msg: *const u8,
    msg_len: usize,
    sig_rs: *mut u8,
) -> kubeboot_result {
    ffi_panic_boundary! {{
        let key = try_ref!(key);
        let msg = try_slice!(msg, msg_len);
        let sig_rs = try_out_buf!(sig_rs, KUBEBOOT_SIGNATURE_LEN);
        sig_rs.copy_from_slice(&key.inner.sign(msg));
        kubeboot_result::Ok
    }}
}
