//! The result texts and the version.

use crate::harness::*;
use arbitrary::Arbitrary;
use kubeboot_ffi::error as ferr;

/// `kubeboot_result_name` / `kubeboot_result_message` of any code.
#[derive(Arbitrary, Debug)]
pub struct ResultText {
    pub name: bool,
    pub code: u32,
    pub out: Out,
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

pub fn version() {
    let v = kubeboot_ffi::kubeboot_version();
    assert!(!v.is_null());
    // SAFETY: a NUL-terminated static string per the ABI.
    let v = unsafe { std::ffi::CStr::from_ptr(v) }.to_str().unwrap();
    assert!(v.split('.').count() >= 3 && v.starts_with(|c: char| c.is_ascii_digit()));
}
