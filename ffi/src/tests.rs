//! Rust-side tests of the C ABI: NULL handling, buffer rules, the panic boundary.

use core::ffi::{c_char, c_void};
use core::ptr::{null, null_mut};

use crate::csr::*;
use crate::error::*;
use crate::key::*;
use crate::token::*;

const K1_PEM: &[u8] = include_bytes!("../../core/tests/data/p256.key");
const NULL_RESULT: kubeboot_result = kubeboot_result::NullParameter;

fn s(x: &str) -> (*const c_char, usize) {
    (x.as_ptr().cast(), x.len())
}

/// A client CSR spec for `node` signed by `key` or `signer`.
fn client_spec(
    node: (*const c_char, usize),
    key: *const kubeboot_key,
    signer: *const kubeboot_signer,
    format: u32,
) -> kubeboot_csr_spec {
    kubeboot_csr_spec {
        profile: KUBEBOOT_PROFILE_CLIENT,
        node_name: node.0,
        node_name_len: node.1,
        dns_names: null(),
        dns_count: 0,
        ip_addresses: null(),
        ip_count: 0,
        format,
        key,
        signer,
    }
}

fn k1() -> *mut kubeboot_key {
    let mut k = null_mut();
    assert_eq!(kubeboot_key_from_pem(K1_PEM.as_ptr(), K1_PEM.len(), &mut k), kubeboot_result::Ok);
    assert!(!k.is_null());
    k
}

#[test]
fn panic_boundary_catches() {
    fn boom(x: u32) -> kubeboot_result {
        ffi_panic_boundary! {{
            if x > 0 {
                panic!("boom");
            }
            kubeboot_result::Ok
        }}
    }
    fn boom_ptr() -> *const u8 {
        ffi_panic_boundary! { null(), { panic!("boom") } }
    }
    assert_eq!(boom(0), kubeboot_result::Ok);
    assert_eq!(boom(1), kubeboot_result::Panic);
    assert!(boom_ptr().is_null());
}

#[test]
fn null_parameters() {
    let mut len = 0usize;
    let mut buf = [0u8; 64];
    let b = buf.as_mut_ptr().cast::<c_char>();
    assert_eq!(kubeboot_result_message(100, b, 64, null_mut()), NULL_RESULT);
    assert_eq!(kubeboot_result_message(100, null_mut(), 64, &mut len), NULL_RESULT);
    assert_eq!(kubeboot_result_name(100, null_mut(), 1, &mut len), NULL_RESULT);
    assert_eq!(kubeboot_token_parse(null(), 23, &mut null_mut()), NULL_RESULT);
    let (t, tl) = s("abcdef.0123456789abcdef");
    assert_eq!(kubeboot_token_parse(t, tl, null_mut()), NULL_RESULT);
    assert_eq!(kubeboot_token_id(null(), b, 64, &mut len), NULL_RESULT);
    assert_eq!(kubeboot_token_from_entropy(null(), 32, &mut null_mut()), NULL_RESULT);
    assert_eq!(kubeboot_token_generate(null_mut()), NULL_RESULT);
    assert_eq!(kubeboot_token_validate_extra_groups(null(), 1), NULL_RESULT);
    assert_eq!(kubeboot_key_from_pem(null(), 1, &mut null_mut()), NULL_RESULT);
    assert_eq!(kubeboot_key_generate(null_mut()), NULL_RESULT);
    assert_eq!(kubeboot_key_to_pem(null(), b, 64, &mut len), NULL_RESULT);
    assert_eq!(kubeboot_key_public_point(null(), buf.as_mut_ptr()), NULL_RESULT);
    let (n, nl) = s("node-1");
    assert_eq!(kubeboot_csr_write(null(), buf.as_mut_ptr(), 64, &mut len), NULL_RESULT);
    // Neither signer, or both: invalid.
    let none = client_spec((n, nl), null(), null(), KUBEBOOT_FORMAT_PEM);
    let r = kubeboot_csr_write(&none, buf.as_mut_ptr(), 64, &mut len);
    assert_eq!(r, kubeboot_result::InvalidParameter);
    let signer = kubeboot_signer { sign: None, userdata: null_mut(), public_point: [0; 65] };
    let spec = client_spec((n, nl), null(), &signer, KUBEBOOT_FORMAT_PEM);
    assert_eq!(kubeboot_csr_write(&spec, buf.as_mut_ptr(), 64, &mut len), NULL_RESULT);
    assert_eq!(kubeboot_csr_check(null(), 5, n, nl, null(), 0, 0), NULL_RESULT);
    assert_eq!(kubeboot_node_csr_name(null(), n, nl, b, 64, &mut len), NULL_RESULT);
    // Free of NULL is a no-op.
    kubeboot_token_free(null_mut());
    kubeboot_key_free(null_mut());
    assert_eq!(len, 0, "nothing written on failure");
}

#[test]
fn token_round_trip_and_buffers() {
    let (t, tl) = s("abcdef.0123456789abcdef");
    let mut tok = null_mut();
    assert_eq!(kubeboot_token_parse(t, tl, &mut tok), kubeboot_result::Ok);
    let mut buf = [0u8; 64];
    let mut len = 0;
    // Size query, short buffer: nothing written to buf.
    assert_eq!(
        kubeboot_token_secret_name(tok, null_mut(), 0, &mut len),
        kubeboot_result::InsufficientSize
    );
    assert_eq!(len, 22);
    assert_eq!(
        kubeboot_token_secret_name(tok, buf.as_mut_ptr().cast(), 21, &mut len),
        kubeboot_result::InsufficientSize
    );
    assert_eq!(buf, [0u8; 64]);
    assert_eq!(
        kubeboot_token_secret_name(tok, buf.as_mut_ptr().cast(), 64, &mut len),
        kubeboot_result::Ok
    );
    assert_eq!(&buf[..len], b"bootstrap-token-abcdef");
    assert_eq!(
        kubeboot_token_wire(tok, buf.as_mut_ptr().cast(), 64, &mut len),
        kubeboot_result::Ok
    );
    assert_eq!(&buf[..len], b"abcdef.0123456789abcdef");
    let mut big = [0u8; 1024];
    let (g, gl) = s("system:bootstrappers:a,system:bootstrappers:b");
    let r = kubeboot_token_secret_manifest(
        tok,
        null(),
        0,
        true,
        0,
        3,
        g,
        gl,
        big.as_mut_ptr().cast(),
        10,
        &mut len,
    );
    assert_eq!(r, kubeboot_result::InsufficientSize);
    assert!(big.iter().all(|b| *b == 0));
    let need = len;
    let r = kubeboot_token_secret_manifest(
        tok,
        null(),
        0,
        true,
        0,
        3,
        g,
        gl,
        big.as_mut_ptr().cast(),
        need,
        &mut len,
    );
    assert_eq!(r, kubeboot_result::Ok);
    let text = core::str::from_utf8(&big[..len]).unwrap();
    assert!(text.contains("expiration: \"1970-01-01T00:00:00Z\""), "{text}");
    assert!(text.contains("auth-extra-groups: \"system:bootstrappers:a,system:bootstrappers:b\""));
    let r = kubeboot_token_secret_manifest(
        tok,
        null(),
        0,
        false,
        0,
        4,
        null(),
        0,
        big.as_mut_ptr().cast(),
        1024,
        &mut len,
    );
    assert_eq!(r, kubeboot_result::InvalidUsage);
    // A NULL description with a length is a caller error, not "no description" (and not a size
    // answer either).
    let r =
        kubeboot_token_secret_manifest(tok, null(), 5, true, 0, 3, g, gl, null_mut(), 0, &mut len);
    assert_eq!(r, kubeboot_result::NullParameter);
    kubeboot_token_free(tok);
    let (bad, bl) = s("ABCDEF.0123456789abcdef");
    let mut tok2 = null_mut();
    assert_eq!(kubeboot_token_parse(bad, bl, &mut tok2), kubeboot_result::InvalidToken);
    assert!(tok2.is_null());
}

#[test]
fn invalid_utf8_and_unknown_codes() {
    let bad = [0xffu8, 0xfe];
    assert_eq!(
        kubeboot_token_validate_extra_groups(bad.as_ptr().cast(), 2),
        kubeboot_result::InvalidUtf8
    );
    let mut buf = [0u8; 64];
    let mut len = 0;
    assert_eq!(
        kubeboot_result_name(403, buf.as_mut_ptr().cast(), 64, &mut len),
        kubeboot_result::Ok
    );
    assert_eq!(&buf[..len], b"expired");
    assert_eq!(
        kubeboot_result_message(9999, buf.as_mut_ptr().cast(), 64, &mut len),
        kubeboot_result::Ok
    );
    assert_eq!(&buf[..len], b"unknown result code");
}

#[cfg_attr(miri, ignore = "P-256 scalar multiplications: minutes each")]
#[test]
fn k1_node_csr_name_vector() {
    let key = k1();
    let (n, nl) = s("node-1");
    let mut buf = [0u8; KUBEBOOT_NODE_CSR_NAME_LEN];
    let mut len = 0;
    assert_eq!(
        kubeboot_key_node_csr_name(key, n, nl, buf.as_mut_ptr().cast(), buf.len(), &mut len),
        kubeboot_result::Ok
    );
    assert_eq!(&buf[..len], b"node-csr-n8Gs_E-Z9L7aSxQqzzA00Csg_R1hDXOPVUFrdIQkVzo");
    let mut point = [0u8; 65];
    assert_eq!(kubeboot_key_public_point(key, point.as_mut_ptr()), kubeboot_result::Ok);
    let mut buf2 = [0u8; 64];
    assert_eq!(
        kubeboot_node_csr_name(point.as_ptr(), n, nl, buf2.as_mut_ptr().cast(), 64, &mut len),
        kubeboot_result::Ok
    );
    assert_eq!(&buf2[..len], &buf[..]);
    kubeboot_key_free(key);
}

unsafe extern "C" fn sign_with_key(
    ud: *mut c_void,
    msg: *const u8,
    len: usize,
    sig: *mut u8,
) -> u32 {
    kubeboot_key_sign(ud.cast_const().cast(), msg, len, sig) as u32
}

unsafe extern "C" fn sign_fails(_: *mut c_void, _: *const u8, _: usize, _: *mut u8) -> u32 {
    7
}

#[cfg_attr(miri, ignore = "P-256 scalar multiplications: minutes each")]
#[test]
fn callback_signer_and_policy() {
    let key = k1();
    let mut point = [0u8; 65];
    assert_eq!(kubeboot_key_public_point(key, point.as_mut_ptr()), kubeboot_result::Ok);
    let signer =
        kubeboot_signer { sign: Some(sign_with_key), userdata: key.cast(), public_point: point };
    let (n, nl) = s("node-1");
    let mut pem = [0u8; KUBEBOOT_CSR_MAX_LEN];
    let mut len = 0;
    let spec = client_spec((n, nl), null(), &signer, KUBEBOOT_FORMAT_PEM);
    let r = kubeboot_csr_write(&spec, pem.as_mut_ptr(), pem.len(), &mut len);
    assert_eq!(r, kubeboot_result::Ok);
    let both = client_spec((n, nl), key, &signer, KUBEBOOT_FORMAT_PEM);
    let r = kubeboot_csr_write(&both, pem.as_mut_ptr(), pem.len(), &mut 0);
    assert_eq!(r, kubeboot_result::InvalidParameter);
    // Deterministic signatures: the callback path gives the same CSR as the key path.
    let mut pem2 = [0u8; KUBEBOOT_CSR_MAX_LEN];
    let mut len2 = 0;
    let by_key = client_spec((n, nl), key, null(), KUBEBOOT_FORMAT_PEM);
    assert_eq!(
        kubeboot_csr_write(&by_key, pem2.as_mut_ptr(), pem2.len(), &mut len2),
        kubeboot_result::Ok
    );
    // Byte-identical only with RFC 6979 signing; the `ring` feature signs with a random nonce
    // (both CSRs are checked by kubeboot_csr_check below).
    #[cfg(not(feature = "ring"))]
    assert_eq!(&pem[..len], &pem2[..len2]);
    let usages = ["digital signature", "client auth"]
        .map(|u| kubeboot_str { data: u.as_ptr().cast(), len: u.len() });
    let (sg, sgl) = s("kubernetes.io/kube-apiserver-client-kubelet");
    assert_eq!(
        kubeboot_csr_check(pem.as_ptr(), len, sg, sgl, usages.as_ptr(), 2, 0),
        kubeboot_result::Ok
    );
    assert_eq!(
        kubeboot_csr_check(pem2.as_ptr(), len2, sg, sgl, usages.as_ptr(), 2, 0),
        kubeboot_result::Ok
    );
    let (ss, ssl) = s("kubernetes.io/kubelet-serving");
    assert_eq!(
        kubeboot_csr_check(pem.as_ptr(), len, ss, ssl, usages.as_ptr(), 2, 0),
        kubeboot_result::PolicySanRequired
    );
    // A failing callback and a callback for a different key.
    let bad = kubeboot_signer { sign: Some(sign_fails), ..signer };
    let mut out = [0u8; KUBEBOOT_CSR_MAX_LEN];
    let spec = client_spec((n, nl), null(), &bad, KUBEBOOT_FORMAT_PEM);
    assert_eq!(
        kubeboot_csr_write(&spec, out.as_mut_ptr(), out.len(), &mut len),
        kubeboot_result::SignerFailed
    );
    let mut other = null_mut();
    assert_eq!(kubeboot_key_from_entropy([9u8; 32].as_ptr(), 32, &mut other), kubeboot_result::Ok);
    let wrong = kubeboot_signer { userdata: other.cast(), ..signer };
    let spec = client_spec((n, nl), null(), &wrong, KUBEBOOT_FORMAT_DER);
    assert_eq!(
        kubeboot_csr_write(&spec, out.as_mut_ptr(), out.len(), &mut len),
        kubeboot_result::SignerFailed
    );
    assert!(out.iter().all(|b| *b == 0), "nothing written on signer failure");
    kubeboot_key_free(other);
    kubeboot_key_free(key);
}

#[test]
fn pkcs11_references_round_trip() {
    use crate::device::*;
    let device = "pkcs11:token=t%20one;serial=7?module-path=/m.so&pin-source=/p";
    let (d, dn) = s(device);
    let (l, ln) = s("kubelet-client-1");
    let id = [0u8, 0xff, 0x10];
    let mut pem = [0u8; KUBEBOOT_KEY_REF_MAX_LEN];
    let mut n = 0usize;
    let r =
        kubeboot_pkcs11_key_reference(d, dn, l, ln, id.as_ptr(), 3, pem.as_mut_ptr(), 8, &mut n);
    assert_eq!(r, kubeboot_result::InsufficientSize);
    let need = n;
    let r = kubeboot_pkcs11_key_reference(
        d,
        dn,
        l,
        ln,
        id.as_ptr(),
        3,
        pem.as_mut_ptr(),
        pem.len(),
        &mut n,
    );
    assert_eq!((r, n), (kubeboot_result::Ok, need));
    let mut uri = [0u8; KUBEBOOT_PKCS11_URI_MAX_LEN];
    let mut un = 0usize;
    let r =
        kubeboot_key_reference_uri(pem.as_ptr(), n, uri.as_mut_ptr().cast(), uri.len(), &mut un);
    assert_eq!(r, kubeboot_result::Ok);
    let text = core::str::from_utf8(&uri[..un]).unwrap();
    assert_eq!(
        text,
        "pkcs11:token=t%20one;serial=7;object=kubelet-client-1;id=%00%ff%10;type=private?module-path=/m.so&pin-source=/p"
    );
    let attr = |name: &str| {
        let (np, nl) = s(name);
        let (mut v, mut vn, mut found) = ([0u8; 64], 0usize, true);
        let r = kubeboot_pkcs11_uri_attribute(
            uri.as_ptr().cast(),
            un,
            np,
            nl,
            v.as_mut_ptr(),
            v.len(),
            &mut vn,
            &mut found,
        );
        assert_eq!(r, kubeboot_result::Ok);
        found.then(|| v[..vn].to_vec())
    };
    assert_eq!(attr("token").as_deref(), Some(&b"t one"[..]));
    assert_eq!(attr("id").as_deref(), Some(&id[..]));
    assert_eq!(attr("model"), None);
    // A device that is not a token, a reference that is not one, NULLs.
    let (t, tn) = s("tpm");
    let r =
        kubeboot_pkcs11_key_reference(t, tn, l, ln, null(), 0, pem.as_mut_ptr(), pem.len(), &mut n);
    assert_eq!(r, kubeboot_result::InvalidKeyReference);
    let r =
        kubeboot_key_reference_uri(b"x".as_ptr(), 1, uri.as_mut_ptr().cast(), uri.len(), &mut un);
    assert_eq!(r, kubeboot_result::MalformedKey);
    let r = kubeboot_key_reference_uri(null(), 3, uri.as_mut_ptr().cast(), uri.len(), &mut un);
    assert_eq!(r, NULL_RESULT);
    assert_eq!(kubeboot_agent_on_key_destroyed(null_mut(), 0), NULL_RESULT);
    assert_eq!(kubeboot_agent_sign_with(null_mut(), 0, null()), NULL_RESULT);
}

#[cfg_attr(miri, ignore = "P-256 scalar multiplications: minutes each")]
#[test]
fn csr_max_len_suffices() {
    let bound = kb::pem::encoded_len(kb::csr::LABEL_CSR, kb::csr::MAX_CSR_DER).unwrap();
    assert!(bound <= KUBEBOOT_CSR_MAX_LEN, "{bound}");
    let key = k1();
    let (n, nl) = s(
        "a2345678901234567890123456789012345678901234567890123456789012.b2345678901234567890123456789012345678901234567890123456789012.c2345678901234567890123456789012345678901234567890123456789012.d23456789012345678901234567890123456789012345678901234567890",
    );
    let dns = "a234567890123456789012345678901234567890123456789012345678901.b23456789012345678901234567890123456789012345678901234567890";
    let d = [kubeboot_str { data: dns.as_ptr().cast(), len: dns.len() }; 8];
    let ip = "fd00::1";
    let i = [kubeboot_str { data: ip.as_ptr().cast(), len: ip.len() }; 8];
    let mut len = 0;
    let spec = kubeboot_csr_spec {
        profile: KUBEBOOT_PROFILE_SERVING,
        dns_names: d.as_ptr(),
        dns_count: 8,
        ip_addresses: i.as_ptr(),
        ip_count: 8,
        ..client_spec((n, nl), key, null(), KUBEBOOT_FORMAT_PEM)
    };
    let r = kubeboot_csr_write(&spec, null_mut(), 0, &mut len);
    assert!(matches!(r, kubeboot_result::InsufficientSize | kubeboot_result::TooManySans), "{r:?}");
    if r == kubeboot_result::InsufficientSize {
        assert!(len <= KUBEBOOT_CSR_MAX_LEN, "{len}");
    }
    kubeboot_key_free(key);
}

#[test]
fn header_version_macros_match_crate() {
    let header = include_str!("../../include/kubeboot.h");
    let mut parts = env!("CARGO_PKG_VERSION").split('.');
    for name in ["MAJOR", "MINOR", "PATCH"] {
        let line = format!("#define KUBEBOOT_VERSION_{name} {}", parts.next().unwrap());
        assert!(header.contains(&line), "{line} missing: update ffi/cbindgen.toml after_includes");
    }
}

/// `*_free` wipes secrets before the memory goes back to the allocator: a global allocator
/// searches every freed block for known secrets (fixed inputs) and counts the hits per secret.
/// Each check first frees an unwiped heap copy of its secret, which must be counted, so the
/// detector can fail. Native only (Miri would interpret the byte search for every free).
#[cfg(not(miri))]
mod wiped_before_free {
    use super::*;
    use crate::kubeconfig::*;
    use std::alloc::{GlobalAlloc, Layout, System};
    use std::sync::atomic::{AtomicUsize, Ordering};

    const fn reversed(d: [u8; 32]) -> [u8; 32] {
        let mut out = [0u8; 32];
        let mut i = 0;
        while i < 32 {
            out[i] = d[31 - i];
            i += 1;
        }
        out
    }

    /// Private scalars (below the group order), each used by one test only.
    const KEY_D: [u8; 32] = [
        0x3c, 0x1f, 0x9a, 0x44, 0x0e, 0x7b, 0xd2, 0x65, 0x81, 0x2c, 0xf3, 0x5e, 0x17, 0xa8, 0x6d,
        0x90, 0x4b, 0xe1, 0x02, 0x73, 0xc6, 0x38, 0x9f, 0x5d, 0xaa, 0x11, 0x64, 0xb7, 0x2e, 0xd9,
        0x80, 0x4f,
    ];
    const KEY_D_LE: [u8; 32] = reversed(KEY_D);
    const ENGINE_D: [u8; 32] = [
        0x61, 0x0a, 0xc4, 0x9e, 0x27, 0xd3, 0x58, 0x1b, 0xf6, 0x83, 0x4d, 0x2a, 0x95, 0x0c, 0xe7,
        0x3f, 0x72, 0xb8, 0x16, 0xd9, 0x4e, 0xa1, 0x05, 0xcb, 0x38, 0x6f, 0x92, 0x14, 0xe0, 0x5b,
        0xad, 0x77,
    ];
    const ENGINE_D_LE: [u8; 32] = reversed(ENGINE_D);
    const TOKEN: &str = "q7x2kd.m3v9t0w1p8z4r6yn";
    const ENGINE_TOKEN: &str = "e4g1n3.s8c2r9t7w5x1y6z3";
    const KC_TOKEN: &str = "k9c0f2.zz8y7x6w5v4u3t2s";
    /// The private key of a kubeconfig's `client-key-data` (not used by any other test).
    const KC_KEY_PEM: &str = include_str!("../../core/tests/data/recorded/failed.key.pem");

    /// What the allocator looks for. The token secrets are the 16 characters after the dot.
    static NEEDLES: [&[u8]; 8] = [
        TOKEN.as_bytes().split_at(7).1,
        &KEY_D,
        &KEY_D_LE,
        ENGINE_TOKEN.as_bytes().split_at(7).1,
        &ENGINE_D,
        &ENGINE_D_LE,
        KC_TOKEN.as_bytes().split_at(7).1,
        // The first body line of the PEM: the DER prefix and most of the private scalar.
        KC_KEY_PEM.as_bytes().split_at(31).1.split_at(64).0,
    ];
    static HITS: [AtomicUsize; 8] = [const { AtomicUsize::new(0) }; 8];
    /// Size of the last freed block that held a secret (for the failure message).
    static LAST_HIT_SIZE: AtomicUsize = AtomicUsize::new(0);

    struct Inspecting;

    // SAFETY: defers to the system allocator; `dealloc` only reads the block it is handed
    // (`layout.size()` bytes, live until passed on) before freeing it. `realloc` keeps the
    // default (alloc + copy + dealloc), so blocks left behind by a move are inspected too.
    unsafe impl GlobalAlloc for Inspecting {
        unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
            // SAFETY: same contract as the caller's.
            unsafe { System.alloc(layout) }
        }
        unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
            // SAFETY: the block is live and `layout.size()` bytes long. Bytes of a freed block
            // never written (or padding) are read as whatever is there; that only matters for
            // the search, and a stray match would be reported, not hidden.
            let block = unsafe { core::slice::from_raw_parts(ptr, layout.size()) };
            for (needle, hits) in NEEDLES.iter().zip(&HITS) {
                if block.len() >= needle.len() && block.windows(needle.len()).any(|w| w == *needle)
                {
                    hits.fetch_add(1, Ordering::Relaxed);
                    LAST_HIT_SIZE.store(block.len(), Ordering::Relaxed);
                }
            }
            // SAFETY: same contract as the caller's.
            unsafe { System.dealloc(ptr, layout) }
        }
    }

    #[global_allocator]
    static GLOBAL: Inspecting = Inspecting;

    fn hits(i: usize) -> usize {
        HITS[i].load(Ordering::Relaxed)
    }

    /// Control for needle `i`: an unwiped heap copy of it is seen when freed.
    fn control(i: usize) {
        let before = hits(i);
        drop(std::hint::black_box(NEEDLES[i].to_vec()));
        assert_eq!(hits(i), before + 1, "the detector misses needle {i} in a freed block");
    }

    /// Runs `f` and asserts that no block freed meanwhile held any of the `needles`.
    fn no_hits(what: &str, needles: &[usize], f: impl FnOnce()) {
        for &i in needles {
            control(i);
        }
        let before: Vec<usize> = needles.iter().map(|&i| hits(i)).collect();
        f();
        for (&i, b) in needles.iter().zip(before) {
            let size = LAST_HIT_SIZE.load(Ordering::Relaxed);
            assert_eq!(
                hits(i) - b,
                0,
                "{what}: a freed block held secret #{i} (last: {size} bytes)"
            );
        }
    }

    #[test]
    fn token_free_wipes() {
        no_hits("kubeboot_token", &[0], || {
            let (t, tl) = s(TOKEN);
            let mut tok = null_mut();
            assert_eq!(kubeboot_token_parse(t, tl, &mut tok), kubeboot_result::Ok);
            let mut wire = [0u8; 23];
            let mut n = 0;
            let w = wire.as_mut_ptr().cast();
            assert_eq!(kubeboot_token_wire(tok, w, wire.len(), &mut n), kubeboot_result::Ok);
            assert_eq!(&wire[..n], TOKEN.as_bytes());
            kubeboot_token_free(tok);
        });
    }

    #[test]
    fn key_free_wipes() {
        no_hits("kubeboot_key", &[1, 2], || {
            let mut k = null_mut();
            let rc = kubeboot_key_from_entropy(KEY_D.as_ptr(), KEY_D.len(), &mut k);
            assert_eq!(rc, kubeboot_result::Ok);
            let mut pem = [0u8; KUBEBOOT_KEY_SEC1_PEM_LEN];
            let mut n = 0;
            let p = pem.as_mut_ptr().cast();
            assert_eq!(kubeboot_key_to_pem(k, p, pem.len(), &mut n), kubeboot_result::Ok);
            kubeboot_key_free(k);
            // And a key read back from its PEM.
            let mut k = null_mut();
            assert_eq!(kubeboot_key_from_pem(pem.as_ptr(), n, &mut k), kubeboot_result::Ok);
            kubeboot_key_free(k);
        });
    }

    /// An agent made by `kubeboot_agent_new` bootstraps up to its create request (the token in
    /// its `Authorization`, a key made from `ENGINE_D`): freeing it leaves neither in freed
    /// memory.
    #[test]
    fn agent_free_wipes_its_token_and_key() {
        let ca = std::fs::read(
            std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
                .join("../core/tests/data/recorded/client-ca.pem"),
        )
        .unwrap();
        no_hits("kubeboot_agent", &[3, 4, 5], || {
            let mut a = null_mut();
            assert_eq!(crate::agent::kubeboot_agent_new(null(), &mut a), kubeboot_result::Ok);
            let reached = crate::agent_tests::bootstrap_to_create(a, ENGINE_TOKEN, &ca, &ENGINE_D);
            assert!(reached.ends_with(ENGINE_TOKEN.as_bytes()), "{reached:?}");
            crate::agent::kubeboot_agent_free(a);
        });
    }

    /// `printf 'apiVersion: v1...' ` with the key PEM base64-encoded, into a stack buffer (a
    /// heap one would be freed holding the token).
    fn kubeconfig(buf: &mut [u8; 2048]) -> usize {
        const B64: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
        let mut key64 = [0u8; 512];
        let mut n = 0;
        for chunk in KC_KEY_PEM.as_bytes().chunks(3) {
            let b = [chunk[0], *chunk.get(1).unwrap_or(&0), *chunk.get(2).unwrap_or(&0)];
            let v = u32::from(b[0]) << 16 | u32::from(b[1]) << 8 | u32::from(b[2]);
            for k in 0..4 {
                key64[n + k] =
                    if k <= chunk.len() { B64[(v >> (18 - 6 * k) & 63) as usize] } else { b'=' };
            }
            n += 4;
        }
        let mut w = &mut buf[..];
        use std::io::Write as _;
        write!(
            w,
            "apiVersion: v1\nkind: Config\nclusters:\n- name: c\n  cluster:\n    server: \
             https://127.0.0.1:6443\ncontexts:\n- name: x\n  context:\n    cluster: c\n    \
             user: u\ncurrent-context: x\nusers:\n- name: u\n  user:\n    token: {KC_TOKEN}\n    \
             client-key-data: {}\n",
            core::str::from_utf8(&key64[..n]).unwrap()
        )
        .unwrap();
        2048 - w.len()
    }

    #[test]
    fn kubeconfig_free_wipes_key_data() {
        let mut input = [0u8; 2048];
        let len = kubeconfig(&mut input);
        no_hits("kubeboot_kubeconfig (key data)", &[7], || {
            let mut kc = null_mut();
            assert_eq!(kubeboot_kubeconfig_load(input.as_ptr(), len, &mut kc), kubeboot_result::Ok);
            kubeboot_kubeconfig_free(kc);
        });
    }

    /// Known gap: `kubeconfig.rs`'s `text()` decodes the token into a `Vec` that it frees
    /// without wiping after copying it into the handle's `String` (the handle's own copy is
    /// wiped by its `Drop`).
    #[test]
    fn kubeconfig_free_wipes_token() {
        let mut input = [0u8; 2048];
        let len = kubeconfig(&mut input);
        no_hits("kubeboot_kubeconfig (token)", &[6], || {
            let mut kc = null_mut();
            assert_eq!(kubeboot_kubeconfig_load(input.as_ptr(), len, &mut kc), kubeboot_result::Ok);
            kubeboot_kubeconfig_free(kc);
        });
    }
}
