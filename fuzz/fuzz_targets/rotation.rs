//! Rotation arithmetic (`rotation_deadline`, `rotation_due`, `backoff_delay_ms`) on arbitrary
//! times and jitter: no overflow panics (fuzz builds keep debug assertions), results inside the
//! documented windows.
#![no_main]

use kubeboot::rotation::{self, BACKOFF_STEPS, POLL_INTERVAL_MS};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|input: (i64, i64, u32, i64, u32)| {
    let (nb, na, jitter, now, attempt) = input;
    let d = rotation::rotation_deadline(nb, na, jitter);
    if na <= nb {
        assert_eq!(d, na);
    } else {
        // 70 %..90 % of the lifetime after not_before.
        let life = i128::from(na) - i128::from(nb);
        let off = i128::from(d) - i128::from(nb);
        assert!(off * 10 >= life * 7 - 10, "deadline before 70%: {nb} {na} {jitter} -> {d}");
        assert!(off * 10 <= life * 9, "deadline after 90%: {nb} {na} {jitter} -> {d}");
        assert!(d >= nb && d <= na);
        // Monotone in jitter.
        if jitter < u32::MAX {
            assert!(rotation::rotation_deadline(nb, na, jitter + 1) >= d);
        }
    }
    let due = rotation::rotation_due(Some((nb, na)), jitter, now);
    assert_eq!(due, na <= nb || now >= na || now >= d);
    assert!(rotation::rotation_due(None, jitter, now));
    assert_eq!(rotation::needs_rotation(d, now), now >= d);

    let delay = rotation::backoff_delay_ms(attempt, jitter);
    if attempt >= BACKOFF_STEPS - 1 {
        assert_eq!(delay, POLL_INTERVAL_MS);
    } else {
        let base = 2_000u64 << attempt;
        assert!(delay >= base && delay <= base + base / 10, "{attempt} {jitter} -> {delay}");
        if attempt > 0 {
            assert!(delay >= rotation::backoff_delay_ms(attempt - 1, u32::MAX));
        }
    }
});
