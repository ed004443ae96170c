//! The result texts, the rotation arithmetic and the version.

use crate::harness::*;
use arbitrary::Arbitrary;
use kubeboot_ffi::error as ferr;
use kubeboot_ffi::rotation as frot;

/// `kubeboot_result_name` / `kubeboot_result_message` of any code.
#[derive(Arbitrary, Debug)]
pub struct ResultText {
    pub name: bool,
    pub code: u32,
    pub out: Out,
}

/// The rotation deadline, `kubeboot_needs_rotation`, `kubeboot_rotation_due` and the backoff.
#[derive(Arbitrary, Debug)]
pub struct Rotation {
    pub a: i64,
    pub b: i64,
    pub jitter: u32,
    pub attempt: u32,
    pub has_cert: bool,
}

pub fn result_text(op: &ResultText) {
    let ResultText { name, code, out } = op;
    let f = if *name { ferr::kubeboot_result_name } else { ferr::kubeboot_result_message };
    let (_, got) = out_call(out, false, &mut |p, l, ol| f(*code, p.cast(), l, ol));
    if let (true, Some(g)) = (*name, got) {
        assert_eq!(
            g == b"unknown",
            !header_codes().contains(code),
            "name of {code}: {:?}",
            String::from_utf8_lossy(&g)
        );
    }
    let _ = (
        ferr::kubeboot_result_is_verify_error(*code),
        ferr::kubeboot_result_is_policy_error(*code),
    );
}

pub fn rotation(op: &Rotation) {
    let Rotation { a, b, jitter, attempt, has_cert } = op;
    let d = frot::kubeboot_rotation_deadline(*a, *b, *jitter);
    if a < b {
        assert!(d >= *a && d <= *b, "deadline {d} outside [{a}, {b}]");
    }
    assert_eq!(frot::kubeboot_needs_rotation(d, *a), kubeboot::rotation::needs_rotation(d, *a));
    let _ = frot::kubeboot_rotation_due(*has_cert, *a, *b, *jitter, *b);
    let ms = frot::kubeboot_backoff_delay_ms(*attempt, *jitter);
    let base = [2_000u64, 4_000, 8_000, 16_000].get(*attempt as usize).copied();
    match base {
        Some(b) => {
            assert!(ms >= b && ms < b + b / 10 + 1, "{ms} for attempt {attempt}")
        }
        None => assert_eq!(ms, frot::KUBEBOOT_POLL_INTERVAL_MS),
    }
}

pub fn version() {
    let v = kubeboot_ffi::kubeboot_version();
    assert!(!v.is_null());
    // SAFETY: a NUL-terminated static string per the ABI.
    let v = unsafe { std::ffi::CStr::from_ptr(v) }.to_str().unwrap();
    assert!(v.split('.').count() >= 3 && v.starts_with(|c: char| c.is_ascii_digit()));
}
