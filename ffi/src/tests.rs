//! Rust-side tests of the C ABI: NULL handling, buffer rules, the panic boundary.

use core::ffi::{c_char, c_void};
use core::ptr::{null, null_mut};

use crate::csr::*;
use crate::error::*;
use crate::key::*;
use crate::rotation::*;
use crate::token::*;

const K1_PEM: &[u8] = include_bytes!("../../core/tests/data/p256.key");
const NULL_RESULT: kubeboot_result = kubeboot_result::NullParameter;

fn s(x: &str) -> (*const c_char, usize) {
    (x.as_ptr().cast(), x.len())
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
    assert_eq!(
        kubeboot_csr_client(null(), n, nl, KUBEBOOT_FORMAT_PEM, buf.as_mut_ptr(), 64, &mut len),
        NULL_RESULT
    );
    assert_eq!(
        kubeboot_csr_client_with_signer(null(), n, nl, 0, buf.as_mut_ptr(), 64, &mut len),
        NULL_RESULT
    );
    let signer = kubeboot_signer { sign: None, userdata: null_mut(), public_point: [0; 65] };
    assert_eq!(
        kubeboot_csr_client_with_signer(&signer, n, nl, 0, buf.as_mut_ptr(), 64, &mut len),
        NULL_RESULT
    );
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
    let r = kubeboot_csr_client_with_signer(
        &signer,
        n,
        nl,
        KUBEBOOT_FORMAT_PEM,
        pem.as_mut_ptr(),
        pem.len(),
        &mut len,
    );
    assert_eq!(r, kubeboot_result::Ok);
    // Deterministic signatures: the callback path gives the same CSR as the key path.
    let mut pem2 = [0u8; KUBEBOOT_CSR_MAX_LEN];
    let mut len2 = 0;
    assert_eq!(
        kubeboot_csr_client(
            key,
            n,
            nl,
            KUBEBOOT_FORMAT_PEM,
            pem2.as_mut_ptr(),
            pem2.len(),
            &mut len2
        ),
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
    assert_eq!(
        kubeboot_csr_client_with_signer(&bad, n, nl, 0, out.as_mut_ptr(), out.len(), &mut len),
        kubeboot_result::SignerFailed
    );
    let mut other = null_mut();
    assert_eq!(kubeboot_key_from_entropy([9u8; 32].as_ptr(), 32, &mut other), kubeboot_result::Ok);
    let wrong = kubeboot_signer { userdata: other.cast(), ..signer };
    assert_eq!(
        kubeboot_csr_client_with_signer(&wrong, n, nl, 1, out.as_mut_ptr(), out.len(), &mut len),
        kubeboot_result::SignerFailed
    );
    assert!(out.iter().all(|b| *b == 0), "nothing written on signer failure");
    kubeboot_key_free(other);
    kubeboot_key_free(key);
}

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
    let r = kubeboot_csr_serving(
        key,
        n,
        nl,
        d.as_ptr(),
        8,
        i.as_ptr(),
        8,
        KUBEBOOT_FORMAT_PEM,
        null_mut(),
        0,
        &mut len,
    );
    assert!(matches!(r, kubeboot_result::InsufficientSize | kubeboot_result::TooManySans), "{r:?}");
    if r == kubeboot_result::InsufficientSize {
        assert!(len <= KUBEBOOT_CSR_MAX_LEN, "{len}");
    }
    kubeboot_key_free(key);
}

#[test]
fn rotation_passthrough() {
    assert_eq!(kubeboot_rotation_deadline(0, 1000, 0), 700);
    assert!(kubeboot_needs_rotation(700, 700));
    assert!(kubeboot_rotation_due(false, 0, 0, 0, 0));
    assert_eq!(kubeboot_backoff_delay_ms(0, 0), KUBEBOOT_BACKOFF_INITIAL_MS);
    assert_eq!(kubeboot_backoff_delay_ms(9, 0), KUBEBOOT_POLL_INTERVAL_MS);
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
