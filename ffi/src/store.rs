//! (std) The kubelet's certificate directory, written crash-safely: `kubeboot_store` handles.
//!
//! Layout (client-go's file store): `<dir>/<prefix>-<YYYY-MM-DD-HH-MM-SS>.pem` data files (the
//! certificate chain, then the key, mode 0600), `<dir>/<prefix>-current.pem` an absolute symlink
//! to the newest, `<dir>/<prefix>.key.tmp` the bootstrap key cache.

use alloc::string::{String, ToString};
use core::ffi::c_char;

use kb::key::NodeKey;
use kb::store::{CertStore, StoreError, StoreErrorKind, Timestamp};
use zeroize::Zeroizing;

use crate::error::kubeboot_result;
use crate::key::kubeboot_key;
use crate::macros::{box_out, copy_out, free_box};

/// A certificate store for one prefix (`kubelet-client`, `kubelet-server`). Opaque; not
/// thread-safe; free with [`kubeboot_store_free`].
pub struct kubeboot_store {
    inner: CertStore,
    /// The last error of an operation on this handle, rendered (paths, OS error; never keys).
    last_error: String,
}

impl crate::macros::Handle for kubeboot_store {}

fn store_result(e: &StoreError) -> kubeboot_result {
    match e.kind() {
        StoreErrorKind::Io => kubeboot_result::StoreIo,
        StoreErrorKind::NoCertKeyFiles => kubeboot_result::StoreNoCertKeyFiles,
        StoreErrorKind::NoCertificates => kubeboot_result::StoreNoCertificates,
        StoreErrorKind::MalformedCertificate => kubeboot_result::StoreMalformedCertificate,
        StoreErrorKind::MalformedKey => kubeboot_result::StoreMalformedKey,
        StoreErrorKind::UnsupportedKey => kubeboot_result::StoreUnsupportedKey,
        StoreErrorKind::KeyMismatch => kubeboot_result::StoreKeyMismatch,
        StoreErrorKind::CurrentNotSymlink => kubeboot_result::StoreCurrentNotSymlink,
        StoreErrorKind::UpdatedNotSymlink => kubeboot_result::StoreUpdatedNotSymlink,
        StoreErrorKind::ReadBackMismatch => kubeboot_result::StoreReadBackMismatch,
        StoreErrorKind::InvalidPrefix => kubeboot_result::StoreInvalidPrefix,
        StoreErrorKind::InvalidTimestamp => kubeboot_result::StoreInvalidTimestamp,
        StoreErrorKind::KeyGeneration => kubeboot_result::StoreKeyGeneration,
        _ => kubeboot_result::UnknownError,
    }
}

impl kubeboot_store {
    fn fail(&mut self, e: &StoreError) -> kubeboot_result {
        self.last_error = e.to_string();
        store_result(e)
    }
}

fn os_fill(b: &mut [u8]) -> kb::Result<()> {
    getrandom::fill(b).map_err(|_| kb::Error::InsufficientEntropy)
}

/// Open the store `<cert_dir>/<prefix>-*.pem` (the directory need not exist yet; it is made
/// absolute now) and run crash recovery. Errors are `KUBEBOOT_RESULT_STORE_*`.
#[unsafe(no_mangle)]
pub extern "C" fn kubeboot_store_open(
    prefix: *const c_char,
    prefix_len: usize,
    cert_dir: *const c_char,
    cert_dir_len: usize,
    out: *mut *mut kubeboot_store,
) -> kubeboot_result {
    ffi_panic_boundary! {{
        let out = try_mut!(out);
        let prefix = try_str!(prefix, prefix_len);
        let dir = try_str!(cert_dir, cert_dir_len);
        if dir.is_empty() || dir.contains('\0') {
            return kubeboot_result::InvalidParameter;
        }
        match CertStore::open(prefix, dir) {
            Ok(inner) => box_out(out, kubeboot_store { inner, last_error: String::new() }),
            Err(e) => store_result(&e),
        }
    }}
}

/// Free a store handle. NULL is a no-op.
#[unsafe(no_mangle)]
pub extern "C" fn kubeboot_store_free(store: *mut kubeboot_store) {
    ffi_panic_boundary! { (), {
        // SAFETY: the caller passes NULL or a live handle from `kubeboot_store_open`.
        unsafe { free_box(store) }
    }}
}

/// Store a new pair and point `<prefix>-current.pem` at it, crash-safely. `cert_pem` is the
/// certificate chain (leaf first), `key_pem` the private key PEM; both are checked (the key must
/// match the leaf) before anything changes on disk. The data file is named after the **local**
/// time: `unix_now` shifted by `utc_offset_seconds` (east positive, e.g. `tm_gmtoff`).
#[unsafe(no_mangle)]
pub extern "C" fn kubeboot_store_update(
    store: *mut kubeboot_store,
    unix_now: i64,
    utc_offset_seconds: i32,
    cert_pem: *const u8,
    cert_pem_len: usize,
    key_pem: *const u8,
    key_pem_len: usize,
) -> kubeboot_result {
    ffi_panic_boundary! {{
        let s = try_mut!(store);
        let cert = try_slice!(cert_pem, cert_pem_len);
        let key = try_slice!(key_pem, key_pem_len);
        let ts = match Timestamp::from_unix(unix_now, utc_offset_seconds) {
            Ok(t) => t,
            Err(e) => return s.fail(&e),
        };
        match s.inner.update(&ts, cert, key) {
            Ok(_) => kubeboot_result::Ok,
            Err(e) => s.fail(&e),
        }
    }}
}

/// The current pair as one PEM (the certificate chain, then the private key: **secret**) into
/// `buf`: `<prefix>-current.pem`, else the legacy `<prefix>.crt` + `<prefix>.key`.
/// `KUBEBOOT_RESULT_STORE_NO_CERT_KEY_FILES` when there is none. Expiry is not checked: use
/// `kubeboot_verify_issued`.
#[unsafe(no_mangle)]
pub extern "C" fn kubeboot_store_current(
    store: *mut kubeboot_store,
    buf: *mut c_char,
    len: usize,
    out_len: *mut usize,
) -> kubeboot_result {
    ffi_panic_boundary! {{
        let s = try_mut!(store);
        let out_len = try_mut!(out_len);
        let buf = try_out_buf!(buf, len);
        let creds = match s.inner.current() {
            Ok(c) => c,
            Err(e) => return s.fail(&e),
        };
        let mut all = Zeroizing::new(alloc::vec::Vec::new());
        all.extend_from_slice(creds.chain_pem());
        all.extend_from_slice(creds.key_pem());
        copy_out(buf, out_len, &all)
    }}
}

/// The absolute path of `<dir>/<prefix>-current.pem` (what kubeconfigs and TLS clients should
/// name) into `buf`.
#[unsafe(no_mangle)]
pub extern "C" fn kubeboot_store_current_path(
    store: *const kubeboot_store,
    buf: *mut c_char,
    len: usize,
    out_len: *mut usize,
) -> kubeboot_result {
    ffi_panic_boundary! {{
        let s = try_ref!(store);
        let out_len = try_mut!(out_len);
        let buf = try_out_buf!(buf, len);
        let p = s.inner.current_path();
        match p.to_str() {
            Some(t) => copy_out(buf, out_len, t.as_bytes()),
            None => kubeboot_result::InvalidUtf8,
        }
    }}
}

/// The bootstrap key (the kubelet's pkg/kubelet/certificate/bootstrap/bootstrap.go LoadClientCert:
/// its key cache): the key of the current pair if it loads and is P-256 (even when its certificate
/// has expired), else the key cache `<dir>/<prefix>.key.tmp`, which is created (mode 0600, with the
/// OS RNG) when missing or unusable.
#[unsafe(no_mangle)]
pub extern "C" fn kubeboot_store_bootstrap_key(
    store: *mut kubeboot_store,
    out: *mut *mut kubeboot_key,
) -> kubeboot_result {
    ffi_panic_boundary! {{
        let s = try_mut!(store);
        let out = try_mut!(out);
        let key: NodeKey = match s.inner.bootstrap_key(os_fill) {
            Ok((k, _)) => k,
            Err(e) => return s.fail(&e),
        };
        box_out(out, kubeboot_key { inner: key })
    }}
}

/// Delete the key cache (after a successful update); a missing file is fine.
#[unsafe(no_mangle)]
pub extern "C" fn kubeboot_store_remove_key_cache(store: *mut kubeboot_store) -> kubeboot_result {
    ffi_panic_boundary! {{
        let s = try_mut!(store);
        match s.inner.remove_key_cache() {
            Ok(()) => kubeboot_result::Ok,
            Err(e) => s.fail(&e),
        }
    }}
}

/// The last failed operation's error on this handle, rendered with the path and OS error (e.g.
/// `"filesystem error at /var/lib/kubelet/pki: permission denied"`), into `buf`; empty when none.
#[unsafe(no_mangle)]
pub extern "C" fn kubeboot_store_last_error(
    store: *const kubeboot_store,
    buf: *mut c_char,
    len: usize,
    out_len: *mut usize,
) -> kubeboot_result {
    ffi_panic_boundary! {{
        let s = try_ref!(store);
        let out_len = try_mut!(out_len);
        let buf = try_out_buf!(buf, len);
        copy_out(buf, out_len, s.last_error.as_bytes())
    }}
}
