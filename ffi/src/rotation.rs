//! Certificate rotation timing (client-go's 70–90 % window) and failure backoff. Pure functions:
//! the caller supplies the time and a uniformly random `jitter`.

use kb::rotation;

/// First backoff wait after a failed rotation attempt, in milliseconds.
pub const KUBEBOOT_BACKOFF_INITIAL_MS: u64 = 2_000;
const _: () = assert!(KUBEBOOT_BACKOFF_INITIAL_MS == rotation::BACKOFF_INITIAL_MS);
/// Fixed wait once the exponential phase is over, in milliseconds.
pub const KUBEBOOT_POLL_INTERVAL_MS: u64 = 32_000;
const _: () = assert!(KUBEBOOT_POLL_INTERVAL_MS == rotation::POLL_INTERVAL_MS);

/// The rotation deadline (unix seconds) of a certificate valid from `not_before` to `not_after`:
/// `not_before + lifetime·(0.7 + 0.2·jitter/2³²)`; `not_after` for an empty or inverted window.
/// Returns 0 (rotate now) should kubeboot panic.
#[unsafe(no_mangle)]
pub extern "C" fn kubeboot_rotation_deadline(not_before: i64, not_after: i64, jitter: u32) -> i64 {
    ffi_panic_boundary! { 0, { rotation::rotation_deadline(not_before, not_after, jitter) } }
}

/// Whether a certificate with rotation deadline `deadline` must be rotated at `now`.
/// Returns true (rotate) should kubeboot panic.
#[unsafe(no_mangle)]
pub extern "C" fn kubeboot_needs_rotation(deadline: i64, now: i64) -> bool {
    ffi_panic_boundary! { true, { rotation::needs_rotation(deadline, now) } }
}

/// Whether to rotate at `now`: always without a certificate (`has_cert` false), for an empty,
/// inverted or expired window, else once the deadline for `jitter` has passed (use the same
/// `jitter` for one certificate across calls). Returns true should kubeboot panic.
#[unsafe(no_mangle)]
pub extern "C" fn kubeboot_rotation_due(
    has_cert: bool,
    not_before: i64,
    not_after: i64,
    jitter: u32,
    now: i64,
) -> bool {
    ffi_panic_boundary! { true, {
        rotation::rotation_due(has_cert.then_some((not_before, not_after)), jitter, now)
    }}
}

/// Milliseconds to wait after failed attempt number `attempt` (zero-based): 2 s, 4 s, 8 s,
/// 16 s plus up to 10 % jitter, then a flat 32 s. Returns 32 000 should kubeboot panic.
#[unsafe(no_mangle)]
pub extern "C" fn kubeboot_backoff_delay_ms(attempt: u32, jitter: u32) -> u64 {
    ffi_panic_boundary! { KUBEBOOT_POLL_INTERVAL_MS, { rotation::backoff_delay_ms(attempt, jitter) } }
}
