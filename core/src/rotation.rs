//! When to rotate a certificate, and how long to wait after a failed attempt.
//!
//! Pure functions: no clock and no randomness inside. Times are unix seconds (`i64`); the caller
//! supplies the current time and a uniformly random `u32` of jitter per decision.
//!
//! # Rotation deadline
//!
//! client-go's certificate manager (`util/certificate/certificate_manager.go`,
//! `nextRotationDeadline`) rotates at
//!
//! ```text
//! deadline = NotBefore + jitteryDuration(NotAfter − NotBefore)
//! jitteryDuration(T) = Jitter(T, 0.2) − 0.3·T,   Jitter(d, f) = d + rand.Float64()·f·d
//!          ⇒ deadline = NotBefore + T·(0.7 + 0.2·r),   r ∈ [0, 1)
//! ```
//!
//! i.e. uniformly in 70 %–90 % of the lifetime measured from NotBefore. Here
//! `r = jitter / 2³²`, and the product is computed exactly in `i128` and rounded toward −∞, so the
//! result is exact, monotone in `jitter`, and needs no floating point (Cortex-M4 friendly).
//! client-go also rotates at once when there is no certificate or when the certificate no longer
//! satisfies the template; [`rotation_due`] covers the first case, the template comparison is the
//! engine's job.
//!
//! # Failure backoff
//!
//! A failed rotation is retried with apimachinery's `ExponentialBackoffWithContext` using
//! `Backoff{Duration: 2s, Factor: 2, Jitter: 0.1, Steps: 5}`: five attempts separated by four waits
//! of 2 s, 4 s, 8 s and 16 s, each plus `rand·10 %` (`wait.Jitter(d, 0.1)`). When the five steps
//! are used up client-go logs "Reached backoff limit, still unable to rotate certs" and switches to
//! `PollInfiniteWithContext(32s)`, which waits 32 s (no jitter) before every further attempt.
//! [`backoff_delay_ms`] maps the zero-based index of the attempt that just failed to the wait
//! before the next one, so retries land at ≈ t0+2 s, +6 s, +14 s, +30 s, then every 32 s.

/// The share of the lifetime at which the earliest rotation happens, in tenths (0.7).
const DEADLINE_MIN_TENTHS: i128 = 7;
/// The width of the jitter window, in tenths of the lifetime (0.2).
const DEADLINE_SPAN_TENTHS: i128 = 2;
/// 2³², the denominator turning a `u32` jitter into `r ∈ [0, 1)`.
const TWO_POW_32: i128 = 1 << 32;

/// First backoff wait after a failed rotation attempt: 2 s (`Backoff.Duration`).
pub const BACKOFF_INITIAL_MS: u64 = 2_000;
/// Backoff growth factor (`Backoff.Factor`).
pub const BACKOFF_FACTOR: u64 = 2;
/// Number of attempts in the exponential phase (`Backoff.Steps`); they are separated by
/// `BACKOFF_STEPS − 1` exponential waits.
pub const BACKOFF_STEPS: u32 = 5;
/// Maximum jitter added to each exponential wait, in percent (`Backoff.Jitter` = 0.1).
pub const BACKOFF_JITTER_PERCENT: u64 = 10;
/// Fixed wait between attempts once the exponential phase is over (`PollInfiniteWithContext(32s)`).
pub const POLL_INTERVAL_MS: u64 = 32_000;

fn clamp_i64(v: i128) -> i64 {
    i64::try_from(v).unwrap_or(if v > 0 { i64::MAX } else { i64::MIN })
}

/// The rotation deadline of a certificate valid from `not_before` to `not_after` (unix seconds):
/// `not_before + (not_after − not_before)·(0.7 + 0.2·jitter/2³²)`, rounded toward −∞.
///
/// `jitter` should be uniformly random; `0` gives exactly 70 % of the lifetime and `u32::MAX`
/// just under 90 %. The result is exact (integer arithmetic in `i128`), non-decreasing in
/// `jitter`, never later than `not_after`, and cannot overflow (the arithmetic is done in `i128`
/// and the result lies between the two inputs). A certificate with `not_after ≤ not_before` (an
/// empty or inverted window, which client-go would turn into a deadline in the past) gets the
/// deadline `not_after`.
pub fn rotation_deadline(not_before: i64, not_after: i64, jitter: u32) -> i64 {
    if not_after <= not_before {
        return not_after;
    }
    let lifetime = i128::from(not_after) - i128::from(not_before);
    // |lifetime| < 2^65 and the factor < 9·2^32 < 2^36, so the product fits easily in i128.
    let factor = DEADLINE_MIN_TENTHS * TWO_POW_32 + DEADLINE_SPAN_TENTHS * i128::from(jitter);
    let offset = (lifetime * factor).div_euclid(10 * TWO_POW_32);
    clamp_i64(i128::from(not_before) + offset)
}

/// The window [`rotation_deadline`] draws from: 70 % and 90 % of the lifetime after
/// `not_before` (rounded toward −∞; both `not_after` for an empty or inverted window).
pub fn deadline_window(not_before: i64, not_after: i64) -> (i64, i64) {
    if not_after <= not_before {
        return (not_after, not_after);
    }
    let lifetime = i128::from(not_after) - i128::from(not_before);
    let at = |tenths: i128| clamp_i64(i128::from(not_before) + (lifetime * tenths).div_euclid(10));
    (at(DEADLINE_MIN_TENTHS), at(DEADLINE_MIN_TENTHS + DEADLINE_SPAN_TENTHS))
}

/// Whether a certificate whose rotation deadline is `deadline` must be rotated at `now`
/// (client-go rotates once the remaining sleep `deadline − now` is not positive).
pub fn needs_rotation(deadline: i64, now: i64) -> bool {
    now >= deadline
}

/// Whether to rotate at `now`, given the current certificate's validity window
/// `(not_before, not_after)` if there is one.
///
/// Rotates at once when there is no certificate, when its window is empty or inverted, or when it
/// has expired; otherwise when [`rotation_deadline`]`(not_before, not_after, jitter)` has passed.
/// Use the same `jitter` for one certificate across calls, or the deadline will wander.
pub fn rotation_due(validity: Option<(i64, i64)>, jitter: u32, now: i64) -> bool {
    match validity {
        None => true,
        Some((not_before, not_after)) => {
            not_after <= not_before
                || now >= not_after
                || needs_rotation(rotation_deadline(not_before, not_after, jitter), now)
        }
    }
}

/// How long to wait, in milliseconds, after the failed rotation attempt number `attempt`
/// (zero-based: `0` is the first attempt of a rotation) before trying again.
///
/// Attempts 0–3 wait 2 s, 4 s, 8 s and 16 s, each plus `base·0.1·jitter/2³²` (0 to just under
/// 10 %, rounded down to the millisecond); from attempt 4 on (the exponential phase's five steps
/// are used up) the wait is a flat 32 s with no jitter. See the module documentation for the
/// mapping to apimachinery's `ExponentialBackoff` and `PollInfinite`.
pub fn backoff_delay_ms(attempt: u32, jitter: u32) -> u64 {
    if attempt >= BACKOFF_STEPS - 1 {
        return POLL_INTERVAL_MS;
    }
    let base = BACKOFF_INITIAL_MS * BACKOFF_FACTOR.pow(attempt);
    // base ≤ 16_000 and jitter < 2^32: the product fits in u64 with room to spare.
    let extra = base * BACKOFF_JITTER_PERCENT * u64::from(jitter) / (100 << 32);
    base + extra
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    const H: i64 = 3600;
    const M: i64 = 60;

    #[test]
    fn one_year_cert_deadline_window() {
        // docs/test-vectors.md (rotation): issued at t, NotBefore = t − 5m, NotAfter = t + 8760h −
        // 5m.
        let t = 1_785_000_000;
        let nb = t - 5 * M;
        let na = t + 8760 * H - 5 * M;
        assert_eq!(rotation_deadline(nb, na, 0), nb + 6132 * H);
        let hi = rotation_deadline(nb, na, u32::MAX);
        assert!(hi < nb + 7884 * H);
        // Just under: 0.2·T·(1 − 2^-32) below 0.9·T by < 1 s.
        assert_eq!(hi, nb + 7884 * H - 1);
        let mid = rotation_deadline(nb, na, 1 << 31);
        assert_eq!(mid, nb + 7008 * H); // 80 %
        // Days 255.5 – 328.5.
        assert_eq!(6132 * H * 2, 511 * 24 * H);
        assert_eq!(7884 * H * 2, 657 * 24 * H);
    }

    #[test]
    fn the_window_bounds_every_deadline() {
        let t = 1_785_000_000;
        let (nb, na) = (t - 5 * M, t + 8760 * H - 5 * M);
        assert_eq!(deadline_window(nb, na), (nb + 6132 * H, nb + 7884 * H));
        assert_eq!(deadline_window(0, 10), (7, 9));
        assert_eq!(deadline_window(100, 50), (50, 50));
        for j in [0, 1, 1 << 31, u32::MAX - 1, u32::MAX] {
            let (lo, hi) = deadline_window(nb, na);
            let d = rotation_deadline(nb, na, j);
            assert!(lo <= d && d < hi, "{j}: {lo} <= {d} < {hi}");
        }
    }

    #[test]
    fn ten_minute_cert_deadline_window() {
        // expirationSeconds=600: NotBefore = t − 5m, NotAfter = t + 10m (15 min span).
        let t = 1_785_000_000;
        let nb = t - 5 * M;
        let na = t + 10 * M;
        assert_eq!(rotation_deadline(nb, na, 0), nb + 10 * M + 30);
        let hi = rotation_deadline(nb, na, u32::MAX);
        assert!(hi < nb + 13 * M + 30);
        assert!(hi >= nb + 13 * M + 29);
    }

    #[test]
    fn exactness_small_lifetime() {
        // T = 10 s: deadline offset floor(10·(0.7 + 0.2r)) ∈ {7, 8}.
        assert_eq!(rotation_deadline(0, 10, 0), 7);
        assert_eq!(rotation_deadline(0, 10, u32::MAX), 8);
        assert_eq!(rotation_deadline(0, 10, 1 << 31), 8);
        assert_eq!(rotation_deadline(0, 10, (1 << 31) - 1), 7);
        assert_eq!(rotation_deadline(100, 100, 12345), 100);
        assert_eq!(rotation_deadline(100, 50, 0), 50);
        assert_eq!(rotation_deadline(100, 50, u32::MAX), 50);
    }

    #[test]
    fn extreme_inputs_do_not_panic() {
        let extremes = [i64::MIN, i64::MIN + 1, -1, 0, 1, i64::MAX - 1, i64::MAX];
        for &a in &extremes {
            for &b in &extremes {
                for &j in &[0, 1, u32::MAX / 2, u32::MAX] {
                    let d = rotation_deadline(a, b, j);
                    if b >= a {
                        assert!(d >= a && d <= b, "{a} {b} {j} -> {d}");
                    } else {
                        assert_eq!(d, b);
                    }
                    let _ = rotation_due(Some((a, b)), j, d);
                }
            }
        }
        // Lifetime 2^64 − 1 s: 70 % of it, exactly, floor.
        let want = i128::from(i64::MIN) + ((1i128 << 64) - 1) * 7 / 10;
        assert_eq!(i128::from(rotation_deadline(i64::MIN, i64::MAX, 0)), want);
    }

    #[test]
    fn needs_rotation_boundaries() {
        assert!(!needs_rotation(100, 99));
        assert!(needs_rotation(100, 100));
        assert!(needs_rotation(100, 101));
        assert!(rotation_due(None, 0, 0));
        assert!(rotation_due(Some((10, 10)), 0, 0)); // empty window
        assert!(rotation_due(Some((20, 10)), 0, 0)); // inverted
        assert!(!rotation_due(Some((0, 1000)), 0, 699));
        assert!(rotation_due(Some((0, 1000)), 0, 700));
        assert!(!rotation_due(Some((0, 1000)), u32::MAX, 898));
        assert!(rotation_due(Some((0, 1000)), u32::MAX, 899));
        assert!(rotation_due(Some((0, 1000)), u32::MAX, 1000));
    }

    #[test]
    fn backoff_schedule() {
        assert_eq!(backoff_delay_ms(0, 0), 2_000);
        assert_eq!(backoff_delay_ms(1, 0), 4_000);
        assert_eq!(backoff_delay_ms(2, 0), 8_000);
        assert_eq!(backoff_delay_ms(3, 0), 16_000);
        assert_eq!(backoff_delay_ms(4, 0), 32_000);
        assert_eq!(backoff_delay_ms(4, u32::MAX), 32_000);
        assert_eq!(backoff_delay_ms(u32::MAX, u32::MAX), 32_000);
        // Max jitter: just under +10 %.
        assert_eq!(backoff_delay_ms(0, u32::MAX), 2_199);
        assert_eq!(backoff_delay_ms(3, u32::MAX), 17_599);
        assert_eq!(backoff_delay_ms(0, 1 << 31), 2_100);
        // docs/test-vectors.md (backoff): retries at ≈ t0+2 s, +6 s, +14 s, +30 s, then every 32 s.
        let mut at = 0;
        let mut retries = [0u64; 6];
        for (i, r) in retries.iter_mut().enumerate() {
            at += backoff_delay_ms(i as u32, 0);
            *r = at;
        }
        assert_eq!(retries, [2_000, 6_000, 14_000, 30_000, 62_000, 94_000]);
    }

    proptest! {
        #[test]
        fn deadline_monotone_in_jitter(nb in any::<i64>(), na in any::<i64>(), a in any::<u32>(), b in any::<u32>()) {
            let (lo, hi) = if a <= b { (a, b) } else { (b, a) };
            prop_assert!(rotation_deadline(nb, na, lo) <= rotation_deadline(nb, na, hi));
        }

        #[test]
        fn deadline_within_70_90(nb in -(1i64 << 40)..(1i64 << 40), life in 0i64..(1i64 << 40), j in any::<u32>()) {
            let d = rotation_deadline(nb, nb + life, j);
            let off = i128::from(d - nb);
            let life = i128::from(life);
            prop_assert!(off * 10 <= life * 9);
            prop_assert!(off * 10 >= life * 7);
        }

        #[test]
        fn backoff_bounded(attempt in 0u32..8, j in any::<u32>()) {
            let d = backoff_delay_ms(attempt, j);
            if attempt < 4 {
                let base = 2_000u64 << attempt;
                prop_assert!(d >= base && d < base + base / 10);
            } else {
                prop_assert_eq!(d, 32_000);
            }
        }
    }
}
