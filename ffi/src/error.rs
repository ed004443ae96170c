//! `kubeboot_result`: stable numeric result codes, their names and messages.
//!
//! The codes, names and messages are the core's one catalogue ([`kb::error::CATALOGUE`]); the
//! enum in `result.rs` is generated from it (see the test `result_enum_is_the_catalogue`), so the
//! C header's `KUBEBOOT_RESULT_*` cannot drift from the core.

use core::ffi::c_char;

use kb::error::{Code, Error};

use crate::macros::copy_out;

#[path = "result.rs"]
mod generated;
pub use generated::kubeboot_result;

impl kubeboot_result {
    /// The result with numeric `code`, if there is one.
    pub fn from_code(code: u32) -> Option<Self> {
        generated::ALL.iter().copied().find(|r| *r as u32 == code)
    }
}

impl From<Error> for kubeboot_result {
    fn from(e: Error) -> Self {
        match e {
            Error::BufferTooSmall { .. } => kubeboot_result::InsufficientSize,
            other => {
                kubeboot_result::from_code(other.code()).unwrap_or(kubeboot_result::UnknownError)
            }
        }
    }
}

const UNKNOWN_MESSAGE: &str = "unknown result code";
const UNKNOWN_NAME: &str = "unknown";

/// Write the fixed, human-readable message of `result` into `buf` (not NUL-terminated) and its
/// length into `*out_len`. Verification results (400–409) give their reason name; an unknown
/// code gives `"unknown result code"`.
///
/// Returns `KUBEBOOT_RESULT_INSUFFICIENT_SIZE` (with the needed length in `*out_len`) when `len`
/// is too small, `KUBEBOOT_RESULT_NULL_PARAMETER` when `out_len` is NULL or `buf` is NULL with a
/// non-zero `len`.
#[unsafe(no_mangle)]
pub extern "C" fn kubeboot_result_message(
    result: u32,
    buf: *mut c_char,
    len: usize,
    out_len: *mut usize,
) -> kubeboot_result {
    ffi_panic_boundary! {{
        let out_len = try_mut!(out_len);
        let buf = try_out_buf!(buf, len);
        let msg = Code::from_u32(result).map_or(UNKNOWN_MESSAGE, Code::message);
        copy_out(buf, out_len, msg.as_bytes())
    }}
}

/// Write the stable kebab-case name of `result` into `buf` (not NUL-terminated): `"ok"`,
/// `"invalid-token"`, the verification reason names for 400–409 (`"expired"`,
/// `"not-yet-valid"`, ...), `"policy-organization"`, ...; `"unknown"` for an unknown code.
/// Buffer rules as for [`kubeboot_result_message`].
#[unsafe(no_mangle)]
pub extern "C" fn kubeboot_result_name(
    result: u32,
    buf: *mut c_char,
    len: usize,
    out_len: *mut usize,
) -> kubeboot_result {
    ffi_panic_boundary! {{
        let out_len = try_mut!(out_len);
        let buf = try_out_buf!(buf, len);
        let name = Code::from_u32(result).map_or(UNKNOWN_NAME, Code::name);
        copy_out(buf, out_len, name.as_bytes())
    }}
}

/// Whether `result` is an issued-certificate verification failure (400–499).
#[unsafe(no_mangle)]
pub extern "C" fn kubeboot_result_is_verify_error(result: u32) -> bool {
    ffi_panic_boundary! { false, { (400..500).contains(&result) } }
}

/// Whether `result` is a CSR policy violation (500–599).
#[unsafe(no_mangle)]
pub extern "C" fn kubeboot_result_is_policy_error(result: u32) -> bool {
    ffi_panic_boundary! { false, { (500..600).contains(&result) } }
}

#[cfg(test)]
mod tests {
    use super::*;
    use kb::error::{CATALOGUE, PolicyViolation, Reason, StoreErrorKind, VerifyError};

    /// The source of `result.rs`, from the catalogue.
    fn generated_source() -> String {
        let mut s = String::from(
            "// Generated from kubeboot::error::CATALOGUE (core/src/error.rs) by the test\n\
             // `result_enum_is_the_catalogue`; regenerate with\n\
             // `KUBEBOOT_BLESS=1 cargo test -p kubeboot-ffi result_enum_is_the_catalogue`. Do not edit.\n\
             \n\
             /// Result of every fallible kubeboot function. Numbers are stable and shared with\n\
             /// `kubeboot::Error::code()`: 0–9 ABI-level, 10–25 files and the certificate store,\n\
             /// 100s tokens, 200s keys, 300s CSRs, 400s issued-certificate verification reasons, 500s\n\
             /// CSR policy violations, 600s CA pins, 700s the engine and the apiserver's answers, 800s\n\
             /// the node agent. In C this is a `uint32_t`; compare against the `KUBEBOOT_RESULT_*`\n\
             /// constants; `kubeboot_result_name` / `kubeboot_result_message` give the name and text.\n\
             #[repr(u32)]\n\
             #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]\n\
             #[must_use]\n\
             #[allow(rustdoc::invalid_html_tags)] // the messages are plain text: `bootstrap-token-<id>`\n\
             pub enum kubeboot_result {\n",
        );
        for (code, name, message) in CATALOGUE {
            s.push_str(&format!(
                "    /// {message} (`{name}`).\n    {} = {},\n",
                code.ident(),
                *code as u32
            ));
        }
        s.push_str("}\n\n/// Every result, in code order.\npub(crate) const ALL: &[kubeboot_result] = &[\n");
        for (code, _, _) in CATALOGUE {
            s.push_str(&format!("    kubeboot_result::{},\n", code.ident()));
        }
        s.push_str("];\n");
        s
    }

    #[test]
    fn result_enum_is_the_catalogue() {
        let want = generated_source();
        if std::env::var_os("KUBEBOOT_BLESS").is_some() {
            let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("src/result.rs");
            std::fs::write(&path, &want).unwrap();
            return;
        }
        // The file as compiled (no file system access: the test also runs under Miri's isolation).
        let have = include_str!("result.rs");
        assert!(
            have == want,
            "ffi/src/result.rs is stale: KUBEBOOT_BLESS=1 cargo test -p kubeboot-ffi result_enum_is_the_catalogue"
        );
        assert_eq!(generated::ALL.len(), CATALOGUE.len());
        for (r, (code, _, _)) in generated::ALL.iter().zip(CATALOGUE) {
            assert_eq!(*r as u32, *code as u32);
        }
    }

    #[test]
    fn every_core_error_maps_to_its_code() {
        let mut errors =
            vec![Error::BufferTooSmall { needed: 0 }, Error::NoCa, Error::InvalidConfig];
        errors.extend(Reason::ALL.iter().map(|r| Error::Verify(VerifyError::new(*r))));
        errors.extend(StoreErrorKind::ALL.iter().map(|k| Error::Store(*k)));
        errors.push(Error::Policy(PolicyViolation::Organization));
        for e in errors {
            let r = kubeboot_result::from(e);
            assert_eq!(r as u32, e.code(), "{e:?}");
        }
        assert_eq!(kubeboot_result::from_code(599), None);
        assert_eq!(kubeboot_result::from_code(713), None);
    }
}
