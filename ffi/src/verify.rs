//! Issued-certificate validation and `sha256:` CA pins.
//!
//! Without `std` (bare metal): [`kubeboot_verify_issued_scratch`] with a caller buffer (size it
//! with [`kubeboot_verify_scratch_len`]) and [`kubeboot_ca_pin_parse`]; the functions that size
//! their own scratch on the heap ([`kubeboot_verify_issued`], the pin checks) need `std`.

#[cfg(feature = "std")]
use alloc::vec;
use core::ffi::c_char;

use kb::pin::{self, CaPin};
use kb::verify::{self, Expected};

use crate::error::kubeboot_result;
use crate::expected::{Expectation, kubeboot_expected};
#[cfg(feature = "std")]
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

/// The arguments of the verify functions after the NULL/UTF-8/size/profile checks.
struct Args<'a> {
    cert: &'a [u8],
    ca: &'a [u8],
    spki: &'a [u8],
    expected: Expectation<'a>,
}

/// Check and borrow the C arguments shared by [`kubeboot_verify_issued`] and
/// [`kubeboot_verify_issued_scratch`] (the pointers of `cert`, `ca` and `spki` are checked by
/// the callers): the PEM sizes, then `expected` ([`kubeboot_expected::read`]).
fn args<'a>(
    cert: &'a [u8],
    ca: &'a [u8],
    spki: &'a [u8],
    expected: &'a kubeboot_expected,
) -> Result<Args<'a>, kubeboot_result> {
    if cert.len() > KUBEBOOT_MAX_PEM_LEN || ca.len() > KUBEBOOT_MAX_PEM_LEN {
        return Err(kubeboot_result::InvalidParameter);
    }
    Ok(Args { cert, ca, spki, expected: expected.read()? })
}

/// Validate `a` with `scratch` and write the result to `out`; a short scratch is
/// `Err(BufferTooSmall)` (core's error, mapped by the callers).
fn verify_into(
    a: &Args<'_>,
    now: i64,
    scratch: &mut [u8],
    out: &mut kubeboot_verified,
) -> Result<(), kb::Error> {
    let expected = Expected {
        node_name: a.expected.node_name,
        public_key: a.spki,
        profile: a.expected.profile(),
    };
    let v = verify::verify_issued(a.cert, a.ca, &expected, now, scratch)?;
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
    Ok(())
}

/// Validate an issued certificate before using it: `cert_pem` (the signer's answer: leaf first,
/// intermediates may follow) must chain to a CA of `ca_pem`, be valid at `now`, be what
/// `expected` says (subject `O=system:nodes, CN=system:node:<expected->node_name>`, the
/// profile's usages: `KUBEBOOT_PROFILE_CLIENT`: EKU clientAuth and no SANs;
/// `KUBEBOOT_PROFILE_SERVING`: EKU serverAuth and exactly `expected->dns_names` +
/// `expected->ip_addresses`), carry our public key (`spki`, SubjectPublicKeyInfo DER, e.g. from
/// `kubeboot_key_public_spki_der`) and not be a CA.
///
/// Returns the named reason on failure (`KUBEBOOT_RESULT_VERIFY_EXPIRED`, `_UNTRUSTED`,
/// `_KEY_MISMATCH`, ... 400–409; see `kubeboot_result_name`); `*out` is written only on success.
/// The decoded certificates live in a heap buffer (`std` builds); without `std` use
/// [`kubeboot_verify_issued_scratch`].
#[cfg(feature = "std")]
#[unsafe(no_mangle)]
#[allow(clippy::too_many_arguments)]
pub extern "C" fn kubeboot_verify_issued(
    cert_pem: *const u8,
    cert_pem_len: usize,
    ca_pem: *const u8,
    ca_pem_len: usize,
    expected: *const kubeboot_expected,
    spki: *const u8,
    spki_len: usize,
    now: i64,
    out: *mut kubeboot_verified,
) -> kubeboot_result {
    ffi_panic_boundary! {{
        let out = try_mut!(out);
        let a = match args(
            try_slice!(cert_pem, cert_pem_len),
            try_slice!(ca_pem, ca_pem_len),
            try_slice!(spki, spki_len),
            try_ref!(expected),
        ) {
            Ok(a) => a,
            Err(e) => return e,
        };
        let mut scratch = vec![0u8; verify::scratch_len(a.cert, a.ca)];
        match verify_into(&a, now, &mut scratch, out) {
            Ok(()) => kubeboot_result::Ok,
            // The scratch is sized by `scratch_len`; a short one would be a bug, not the caller's.
            Err(kb::Error::BufferTooSmall { .. }) => kubeboot_result::Panic,
            Err(e) => e.into(),
        }
    }}
}

/// How many bytes of scratch [`kubeboot_verify_issued_scratch`] needs for these inputs (a little
/// over ¾ of the PEM text of their `CERTIFICATE` blocks), written to `*out_len`.
#[unsafe(no_mangle)]
pub extern "C" fn kubeboot_verify_scratch_len(
    cert_pem: *const u8,
    cert_pem_len: usize,
    ca_pem: *const u8,
    ca_pem_len: usize,
    out_len: *mut usize,
) -> kubeboot_result {
    ffi_panic_boundary! {{
        let out_len = try_mut!(out_len);
        let cert = try_slice!(cert_pem, cert_pem_len);
        let ca = try_slice!(ca_pem, ca_pem_len);
        if cert.len() > KUBEBOOT_MAX_PEM_LEN || ca.len() > KUBEBOOT_MAX_PEM_LEN {
            return kubeboot_result::InvalidParameter;
        }
        *out_len = verify::scratch_len(cert, ca);
        kubeboot_result::Ok
    }}
}

/// [`kubeboot_verify_issued`] with the decoded certificates in the caller's `scratch`
/// (`scratch_len` bytes; no heap, also in builds without `std`). A short scratch returns
/// `KUBEBOOT_RESULT_INSUFFICIENT_SIZE` and writes the size needed to `*scratch_needed` (which may
/// be NULL; [`kubeboot_verify_scratch_len`] gives it up front); `*out` is written only on
/// success. The scratch holds certificate DER, no secret; its content afterwards is unspecified.
#[unsafe(no_mangle)]
#[allow(clippy::too_many_arguments)]
pub extern "C" fn kubeboot_verify_issued_scratch(
    cert_pem: *const u8,
    cert_pem_len: usize,
    ca_pem: *const u8,
    ca_pem_len: usize,
    expected: *const kubeboot_expected,
    spki: *const u8,
    spki_len: usize,
    now: i64,
    scratch: *mut u8,
    scratch_len: usize,
    scratch_needed: *mut usize,
    out: *mut kubeboot_verified,
) -> kubeboot_result {
    ffi_panic_boundary! {{
        let out = try_mut!(out);
        let scratch = try_out_buf!(scratch, scratch_len);
        let a = match args(
            try_slice!(cert_pem, cert_pem_len),
            try_slice!(ca_pem, ca_pem_len),
            try_slice!(spki, spki_len),
            try_ref!(expected),
        ) {
            Ok(a) => a,
            Err(e) => return e,
        };
        match verify_into(&a, now, scratch, out) {
            Ok(()) => kubeboot_result::Ok,
            Err(kb::Error::BufferTooSmall { needed }) => {
                // SAFETY: a non-NULL `scratch_needed` points to a writable `size_t` (contract).
                if let Some(n) = unsafe { scratch_needed.as_mut() } {
                    *n = needed;
                }
                kubeboot_result::InsufficientSize
            }
            Err(e) => e.into(),
        }
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
#[cfg(feature = "std")]
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
#[cfg(feature = "std")]
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

/// Who checks signatures in this build: ring with the `ring` feature, else the portable
/// verifier.
pub(crate) fn verifier() -> &'static (dyn kb::backend::SignatureVerifier + Sync) {
    #[cfg(feature = "ring")]
    {
        &kb::backend::ring::Ring
    }
    #[cfg(not(feature = "ring"))]
    {
        kb::backend::SOFTWARE
    }
}

#[cfg(test)]
mod tests {
    use core::ptr::{null, null_mut};

    use super::*;
    use crate::csr::KUBEBOOT_PROFILE_CLIENT;
    use crate::key::{kubeboot_key_free, kubeboot_key_from_pem, kubeboot_key_public_spki_der};

    const K1_PEM: &[u8] = include_bytes!("../../core/tests/data/p256.key");
    const EC_CA: &[u8] = include_bytes!("../../core/tests/data/ec-ca.crt");
    const EC_LEAF: &[u8] = include_bytes!("../../core/tests/data/ec-leaf.crt");
    const NOW: i64 = 1_811_808_000;

    fn k1_spki() -> [u8; 91] {
        let mut k = null_mut();
        assert_eq!(
            kubeboot_key_from_pem(K1_PEM.as_ptr(), K1_PEM.len(), &mut k),
            kubeboot_result::Ok
        );
        let mut spki = [0u8; 91];
        let mut n = 0;
        assert_eq!(
            kubeboot_key_public_spki_der(k, spki.as_mut_ptr(), 91, &mut n),
            kubeboot_result::Ok
        );
        assert_eq!(n, 91);
        kubeboot_key_free(k);
        spki
    }

    /// A client certificate for `node`.
    fn client(node: &str) -> kubeboot_expected {
        kubeboot_expected {
            node_name: node.as_ptr().cast(),
            node_name_len: node.len(),
            profile: KUBEBOOT_PROFILE_CLIENT,
            dns_names: null(),
            dns_count: 0,
            ip_addresses: null(),
            ip_count: 0,
        }
    }

    fn run(
        node: &str,
        spki: &[u8],
        ca: &[u8],
        now: i64,
        scratch: &mut [u8],
        needed: &mut usize,
        out: &mut kubeboot_verified,
    ) -> kubeboot_result {
        let ptr = if scratch.is_empty() { null_mut() } else { scratch.as_mut_ptr() };
        kubeboot_verify_issued_scratch(
            EC_LEAF.as_ptr(),
            EC_LEAF.len(),
            ca.as_ptr(),
            ca.len(),
            &client(node),
            spki.as_ptr(),
            spki.len(),
            now,
            ptr,
            scratch.len(),
            needed,
            out,
        )
    }

    fn empty() -> kubeboot_verified {
        kubeboot_verified {
            not_before: 0,
            not_after: 0,
            ca_index: 99,
            intermediates_used: 99,
            ca_subject: [0; KUBEBOOT_CA_SUBJECT_CAP],
            ca_subject_len: 0,
        }
    }

    #[cfg_attr(miri, ignore = "two ECDSA verifications: 240 s")]
    #[test]
    fn scratch_variant_matches_heap_variant() {
        let spki = k1_spki();
        let mut need = 0;
        let r = kubeboot_verify_scratch_len(
            EC_LEAF.as_ptr(),
            EC_LEAF.len(),
            EC_CA.as_ptr(),
            EC_CA.len(),
            &mut need,
        );
        assert_eq!(r, kubeboot_result::Ok);
        assert_eq!(need, verify::scratch_len(EC_LEAF, EC_CA));
        assert!(need > 0);

        let mut scratch = vec![0u8; need];
        let (mut a, mut b) = (empty(), empty());
        let mut unused = 12345;
        assert_eq!(
            run("node-1", &spki, EC_CA, NOW, &mut scratch, &mut unused, &mut a),
            kubeboot_result::Ok
        );
        assert_eq!(unused, 12345);
        let r = kubeboot_verify_issued(
            EC_LEAF.as_ptr(),
            EC_LEAF.len(),
            EC_CA.as_ptr(),
            EC_CA.len(),
            &client("node-1"),
            spki.as_ptr(),
            spki.len(),
            NOW,
            &mut b,
        );
        assert_eq!(r, kubeboot_result::Ok);
        assert_eq!(
            (a.not_before, a.not_after, a.ca_index),
            (b.not_before, b.not_after, b.ca_index)
        );
        assert_eq!(&a.ca_subject[..a.ca_subject_len], b"CN=kubernetes-ec");
        assert_eq!(a.ca_subject[..], b.ca_subject[..]);

        // Refusals write nothing to `out`.
        let mut out = empty();
        let r = run("node-2", &spki, EC_CA, NOW, &mut scratch, &mut unused, &mut out);
        assert_eq!(r, kubeboot_result::VerifySubjectMismatch);
        let r = run("node-1", &spki, EC_CA, 2_208_988_800, &mut scratch, &mut unused, &mut out);
        assert_eq!(r, kubeboot_result::VerifyExpired);
        assert_eq!(out.ca_index, 99);
    }

    #[test]
    fn short_scratch_reports_the_size() {
        let spki = k1_spki();
        let need = verify::scratch_len(EC_LEAF, EC_CA);
        let mut out = empty();
        for len in [0, 1, need - 1] {
            let mut scratch = vec![0u8; len];
            let mut got = 0;
            let r = run("node-1", &spki, EC_CA, NOW, &mut scratch, &mut got, &mut out);
            assert_eq!(r, kubeboot_result::InsufficientSize, "len {len}");
            assert_eq!(got, need);
        }
        // NULL `scratch_needed` is allowed; NULL `out` or a NULL scratch with a length is not.
        let mut scratch = vec![0u8; 8];
        let r = kubeboot_verify_issued_scratch(
            EC_LEAF.as_ptr(),
            EC_LEAF.len(),
            EC_CA.as_ptr(),
            EC_CA.len(),
            &client("node-1"),
            spki.as_ptr(),
            spki.len(),
            NOW,
            scratch.as_mut_ptr(),
            8,
            null_mut(),
            &mut out,
        );
        assert_eq!(r, kubeboot_result::InsufficientSize);
        let r = kubeboot_verify_issued_scratch(
            EC_LEAF.as_ptr(),
            EC_LEAF.len(),
            EC_CA.as_ptr(),
            EC_CA.len(),
            &client("node-1"),
            spki.as_ptr(),
            spki.len(),
            NOW,
            null_mut(),
            8,
            null_mut(),
            &mut out,
        );
        assert_eq!(r, kubeboot_result::NullParameter);
        let mut n = 0;
        let r = kubeboot_verify_scratch_len(null(), 3, EC_CA.as_ptr(), EC_CA.len(), &mut n);
        assert_eq!(r, kubeboot_result::NullParameter);
        assert_eq!(out.ca_index, 99);
    }
}
