//! # libkubeboot — the C ABI of kubeboot
//!
//! Conventions (after rustls-ffi):
//!
//! * every fallible function returns a [`kubeboot_result`]; outputs are trailing out-parameters
//!   and are written **only** on success (exception: a short output buffer returns
//!   `KUBEBOOT_RESULT_INSUFFICIENT_SIZE` and writes the needed size to `*out_len`);
//! * bytes come in as `(const uint8_t *, size_t)`, text as `(const char *, size_t)` (UTF-8, not
//!   NUL-terminated); a NULL data pointer with length 0 is the empty input;
//! * outputs are `(buf, len, size_t *out_len)`: the bytes are not NUL-terminated;
//! * a NULL pointer anywhere else is `KUBEBOOT_RESULT_NULL_PARAMETER`;
//! * opaque handles (`kubeboot_token`, `kubeboot_key`, `kubeboot_agent`, `kubeboot_kubeconfig`)
//!   come from `*_parse` / `*_generate` / `*_new` / `kubeboot_agent_init_in` and are released
//!   with their `*_free`, which zeroizes the secret and accepts NULL;
//! * one public layer: the agent (which makes every decision) and the protocol's pieces (tokens,
//!   keys, CSRs, validation, kubeconfigs, pins, metrics text); the machines below the agent are
//!   not exported;
//! * no panic crosses the boundary: std builds wrap every exported function in `catch_unwind`
//!   and return `KUBEBOOT_RESULT_PANIC` (or NULL / 0 for functions without a result).
//!
//! All `unsafe` of kubeboot lives in this crate; every block carries a `SAFETY:` comment.
#![cfg_attr(not(feature = "std"), no_std)]
#![warn(missing_docs)]
// No panic may reach the boundary: no unwrap/expect/panic/unchecked indexing outside tests.
#![cfg_attr(
    not(test),
    deny(clippy::unwrap_used, clippy::expect_used, clippy::panic, clippy::indexing_slicing)
)]
#![allow(non_camel_case_types)]
// The exported functions are called from C, where `unsafe fn` means nothing; their pointer
// contracts are documented on each function (as in rustls-ffi) and checked for NULL.
#![allow(clippy::not_unsafe_ptr_arg_deref)]

// Handles live on the heap with std; without std they live in fixed static pools (see
// `macros::pool`), so a bare-metal build links no allocator.
#[cfg(feature = "std")]
extern crate alloc;

#[macro_use]
mod macros;

#[cfg(all(feature = "critical-section-c", not(feature = "std")))]
mod critical;

pub mod action;
pub mod agent;
pub mod csr;
pub mod device;
pub mod error;
pub mod expected;
pub mod grammar;
pub mod key;
#[cfg(feature = "std")]
pub mod kubeconfig;
pub mod metrics;
pub mod token;
// Validation: everywhere with caller scratch; heap-sized scratch and the pin checks need std.
pub mod verify;

#[cfg(test)]
mod agent_tests;
#[cfg(test)]
mod tests;

pub use error::kubeboot_result;

/// Bare-metal builds (no `std`): a panic (which the core crate is written never to cause) stops
/// the program with a permanently undefined instruction (a HardFault) rather than unwinding into
/// C. Build with `panic = "abort"` (the `firmware` profile of the workspace).
#[cfg(all(not(feature = "std"), target_os = "none"))]
#[panic_handler]
fn panic(_: &core::panic::PanicInfo<'_>) -> ! {
    #[cfg(target_arch = "arm")]
    // SAFETY: `udf` traps; it touches no memory and never returns.
    unsafe {
        core::arch::asm!("udf #0", options(noreturn))
    }
    #[cfg(not(target_arch = "arm"))]
    loop {}
}

/// The library version, a static NUL-terminated string (e.g. `"0.4.0"`); never NULL.
#[unsafe(no_mangle)]
pub extern "C" fn kubeboot_version() -> *const core::ffi::c_char {
    ffi_panic_boundary! {
        core::ptr::null(),
        {
            concat!(env!("CARGO_PKG_VERSION"), "\0").as_ptr().cast()
        }
    }
}
