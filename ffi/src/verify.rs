//! Issued-certificate validation and `sha256:` CA pins.

use alloc::vec;
use core::ffi::c_char;
use core::net::IpAddr;

use kb::csr::{self, Profile};
use kb::pin::{self, CaPin};
use kb::verify::{self, Expected};

use crate::csr::{KUBEBOOT_PROFILE_CLIENT, KUBEBOOT_PROFILE_SERVING, kubeboot_str};
use crate::error::kubeboot_result;
use crate::macros::write_with;

/// Capacity of [`kubeboot_verified::ca_subject`].
pub const KUBEBOOT_CA_SUBJECT_CAP: usize = 256;
const _: () = assert!(KUBEBOOT_CA_SUBJECT_CAP == verify::CA_SUBJECT_CAP);
/// Length of a pin's text `sha256:<64 hex>`.
pub const KUBEBOOT_PIN_TEXT_LEN: usize = 71;
const _: () = assert!(KUBEBOOT_PIN_TEXT_LEN == pin::PIN_TEXT_LEN);
/// Most pins [`kubeboot_ca_pin_check`] accepts.
pub const KUBEBOOT_MAX_PINS: usize = 64;
/// Largest PEM input of the functions here (certificates, CA bundles).
pub const KUBEBOOT_MAX_PEM_LEN: usize = 1 << 20;

/// What [`kubeboot_verify_issued`] found.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct kubeboot_verified {
    /// The leaf's notBefore (unix seconds).
    pub not_before: i64,
    /// The leaf's notAfter (unix seconds).
    pub not_after: i64,
    /// Index in the CA bundle of the CA the path ends at.
    pub ca_index: usize,
    /// How many intermediates the path used.
    pub intermediates_used: usize,
    /// That CA's subject, RFC 4514 style (`CN=kubernetes`), UTF-8, not NUL-terminated.
    pub ca_subject: [u8; KUBEBOOT_CA_SUBJECT_CAP],
    /// Bytes used in `ca_subject`.
    pub ca_subject_len: usize,
}

/// A CA public-key pin: SHA-256 of the CA certificate's SubjectPublicKeyInfo (kubeadm's
/// `--discovery-token-ca-cert-hash`).
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct kubeboot_ca_pin {
    /// The digest.
    pub sha256: [u8; 32],
}

fn text_list<'a>(
    items: &'a [kubeboot_str],
    out: &mut heapless::Vec<&'a str, { csr::MAX_SANS }>,
) -> Result<(), kubeboot_result> {
    for item in items {
        // SAFETY: the caller guarantees each non-NULL `data` points to `len` initialised bytes
        // valid for the call.
        let bytes = unsafe { crate::macros::slice_from(item.data.cast::<u8>(), item.len) }?;
        let s = core::str::from_utf8(bytes).map_err(|_| kubeboot_result::InvalidUtf8)?;
        out.push(s).map_err(|_| kubeboot_result::TooManySans)?;
    }
    Ok(())
}

/// Validate an issued certificate before using it: `cert_pem` (the signer's answer: leaf first,
/// intermediates may follow) must chain to a CA of `ca_pem`, be valid at `now`, carry our public
/// key (`spki`, SubjectPublicKeyInfo DER, e.g. from `kubeboot_key_public_spki_der`), subject
/// `O=system:nodes, CN=system:node:<node>`, the profile's usages (`KUBEBOOT_PROFILE_CLIENT`: EKU
/// clientAuth and no SANs; `KUBEBOOT_PROFILE_SERVING`: EKU serverAuth and exactly `dns_names` +
/// `ip_addresses`) and not be a CA.
///
/// Returns the named reason on failure (`KUBEBOOT_RESULT_VERIFY_EXPIRED`, `_UNTRUSTED`,
/// `_KEY_MISMATCH`, ... 400–409; see `kubeboot_result_name`); `*out` is written only on success.
#[unsafe(no_mangle)]
#[allow(clippy::too_many_arguments)]
pub extern "C" fn kubeboot_verify_issued(
    cert_pem: *const u8,
    cert_pem_len: usize,
    ca_pem: *const u8,
    ca_pem_len: usize,
    node_name: *const c_char,
    node_name_len: usize,
    spki: *const u8,
    spki_len: usize,
    profile: u32,
    dns_names: *const kubeboot_str,
    dns_count: usize,
    ip_addresses: *const kubeboot_str,
    ip_count: usize,
    now: i64,
    out: *mut kubeboot_verified,
) -> kubeboot_result {
    ffi_panic_boundary! {{
        let out = try_mut!(out);
        let cert = try_slice!(cert_pem, cert_pem_len);
        let ca = try_slice!(ca_pem, ca_pem_len);
        let node = try_str!(node_name, node_name_len);
        let spki = try_slice!(spki, spki_len);
        if cert.len() > KUBEBOOT_MAX_PEM_LEN || ca.len() > KUBEBOOT_MAX_PEM_LEN {
            return kubeboot_result::InvalidParameter;
        }
        let mut dns = heapless::Vec::new();
        let mut ip_text = heapless::Vec::new();
        let mut ips: heapless::Vec<IpAddr, { csr::MAX_SANS }> = heapless::Vec::new();
        let profile = match profile {
            KUBEBOOT_PROFILE_CLIENT => Profile::Client,
            KUBEBOOT_PROFILE_SERVING => {
                if let Err(e) = text_list(try_slice!(dns_names, dns_count), &mut dns) {
                    return e;
                }
                if let Err(e) = text_list(try_slice!(ip_addresses, ip_count), &mut ip_text) {
                    return e;
                }
                for s in &ip_text {
                    if ips.push(try_kb!(csr::parse_ip(s))).is_err() {
                        return kubeboot_result::TooManySans;
                    }
                }
                Profile::Serving { dns: &dns, ips: &ips }
            }
            _ => return kubeboot_result::InvalidParameter,
        };
        let expected = Expected { node_name: node, public_key: spki, profile };
        let mut scratch = vec![0u8; verify::scratch_len(cert, ca)];
        let v = match verify::verify_issued(cert, ca, &expected, now, &mut scratch) {
            Ok(v) => v,
            // The scratch is sized by `scratch_len`; a short one would be a bug, not the caller's.
            Err(kb::Error::BufferTooSmall { .. }) => return kubeboot_result::Panic,
            Err(e) => return e.into(),
        };
        let mut subject = [0u8; KUBEBOOT_CA_SUBJECT_CAP];
        let s = v.ca_subject.as_bytes();
        let n = s.len().min(KUBEBOOT_CA_SUBJECT_CAP);
        if let (Some(dst), Some(src)) = (subject.get_mut(..n), s.get(..n)) {
            dst.copy_from_slice(src);
        }
        *out = kubeboot_verified {
            not_before: v.not_before,
            not_after: v.not_after,
            ca_index: v.ca_index,
            intermediates_used: v.intermediates_used,
            ca_subject: subject,
            ca_subject_len: n,
        };
        kubeboot_result::Ok
    }}
}

/// Parse a pin `sha256:<64 hex digits>` (case-insensitive hex, as kubeadm) into `*out`.
/// `KUBEBOOT_RESULT_INVALID_PIN` otherwise.
#[unsafe(no_mangle)]
pub extern "C" fn kubeboot_ca_pin_parse(
    text: *const c_char,
    len: usize,
    out: *mut kubeboot_ca_pin,
) -> kubeboot_result {
    ffi_panic_boundary! {{
        let out = try_mut!(out);
        let bytes: &[u8] = try_slice!(text.cast::<u8>(), len);
        let Ok(text) = core::str::from_utf8(bytes) else {
            return kubeboot_result::InvalidPin;
        };
        let pin = try_kb!(CaPin::parse(text));
        *out = kubeboot_ca_pin { sha256: *pin.as_bytes() };
        kubeboot_result::Ok
    }}
}

/// Succeed when the public key of any `CERTIFICATE` in `ca_pem` matches one of the `pin_count`
/// pins (kubeadm's `CheckAny`): `KUBEBOOT_RESULT_PIN_MISMATCH` otherwise (also for no pins),
/// `KUBEBOOT_RESULT_MALFORMED` for a bundle without a readable certificate. At most
/// [`KUBEBOOT_MAX_PINS`] pins.
#[unsafe(no_mangle)]
pub extern "C" fn kubeboot_ca_pin_check(
    pins: *const kubeboot_ca_pin,
    pin_count: usize,
    ca_pem: *const u8,
    ca_pem_len: usize,
) -> kubeboot_result {
    ffi_panic_boundary! {{
        let pins = try_slice!(pins, pin_count);
        let ca = try_slice!(ca_pem, ca_pem_len);
        if pins.len() > KUBEBOOT_MAX_PINS || ca.len() > KUBEBOOT_MAX_PEM_LEN {
            return kubeboot_result::InvalidParameter;
        }
        // kubeadm's CheckAny over the bundle (as `pin::check_any_pem`, with the pins as bytes).
        let mut scratch = vec![0u8; verify::MAX_CERT_LEN];
        let mut seen = false;
        let mut matched = false;
        for p in pin::pins_of_pem(ca, &mut scratch) {
            let p = try_kb!(p);
            seen = true;
            matched |= pins.iter().any(|q| q.sha256 == *p.as_bytes());
        }
        if !seen {
            return kubeboot_result::Malformed;
        }
        if !matched {
            return kubeboot_result::PinMismatch;
        }
        kubeboot_result::Ok
    }}
}

/// Write the pin of every `CERTIFICATE` in `ca_pem`, one `sha256:<hex>\n` line each (72 bytes per
/// certificate), into `buf` (`kubeboot ca-hash`). `KUBEBOOT_RESULT_MALFORMED` for a bundle
/// without certificates or with one that does not parse.
#[unsafe(no_mangle)]
pub extern "C" fn kubeboot_ca_pins_of_pem(
    ca_pem: *const u8,
    ca_pem_len: usize,
    buf: *mut c_char,
    len: usize,
    out_len: *mut usize,
) -> kubeboot_result {
    ffi_panic_boundary! {{
        let out_len = try_mut!(out_len);
        let ca = try_slice!(ca_pem, ca_pem_len);
        let buf = try_out_buf!(buf, len);
        if ca.len() > KUBEBOOT_MAX_PEM_LEN {
            return kubeboot_result::InvalidParameter;
        }
        let mut scratch = vec![0u8; verify::MAX_CERT_LEN];
        let mut text = alloc::vec::Vec::new();
        for p in pin::pins_of_pem(ca, &mut scratch) {
            let p = try_kb!(p);
            text.extend_from_slice(p.to_text().as_bytes());
            text.push(b'\n');
        }
        if text.is_empty() {
            return kubeboot_result::Malformed;
        }
        write_with(buf, out_len, |b| match b.get_mut(..text.len()) {
            Some(dst) => {
                dst.copy_from_slice(&text);
                Ok(text.len())
            }
            None => Err(kb::Error::BufferTooSmall { needed: text.len() }),
        })
    }}
}
