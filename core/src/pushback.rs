//! Pushback from the apiserver: how long to wait when an answer carries `Retry-After`.
//!
//! API Priority and Fairness rejects what it cannot queue with `429 Too Many Requests` and
//! `Retry-After: <seconds>` (apiserver `pkg/server/filters/priority-and-fairness.go`
//! tooManyRequests; the value is 1 s, doubled while rejections go on, at most 32 s:
//! `pkg/util/flowcontrol/dropped_requests_tracker.go`), and an apiserver shutting down answers
//! `Retry-After: 1` (`pkg/server/filters/with_retry_after.go`, waitgroup.go). client-go retries
//! such answers after exactly the number of seconds asked (rest `with_retry.go` checkWait: status
//! 429 or any 5xx with a `Retry-After` that `strconv.Atoi` reads; an HTTP-date is ignored).
//!
//! The engine and discovery make the same decision here, once: an answer with status 429 or 5xx
//! and a `Retry-After` of delta-seconds ([`asked`]) is retried after [`delay_secs`]: the seconds
//! asked (at least 1, at most [`MAX_RETRY_AFTER_SECS`]), plus one second because the core's clock
//! counts whole seconds (a `now` of 10 may be 10.9 s: the real wait is never shorter than asked),
//! plus a jitter of 0 to half the seconds asked (0 or 1 s at least), so that a fleet told the same
//! number does not come back in the same second. Without the header the caller's own schedule
//! applies (the kubelet's backoff, discovery's interval). The wait never outlasts the attempt's
//! deadline: the engine and discovery cut every wait there.

/// The longest wait a `Retry-After` buys: 5 minutes. A longer ask (a proxy's mistake, a value
/// meant as a date) is taken as this, so that one answer cannot use up a bootstrap's whole wait.
pub const MAX_RETRY_AFTER_SECS: u32 = 300;

/// The response headers the core reads. The front-end looks each one up by name (HTTP header
/// names are case-insensitive; the first value when repeated) and passes its raw value, or
/// `None` when the response has no such header. Build it with [`Headers::NONE`] or
/// [`Headers::retry_after`].
#[non_exhaustive]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Headers<'a> {
    /// The `Retry-After` value as received (e.g. `b"1"`).
    pub retry_after: Option<&'a [u8]>,
}

impl<'a> Headers<'a> {
    /// No header the core reads.
    pub const NONE: Headers<'static> = Headers { retry_after: None };

    /// With the `Retry-After` value `value` (`None`: absent).
    pub const fn retry_after(value: Option<&'a [u8]>) -> Self {
        Headers { retry_after: value }
    }
}

/// A `Retry-After` value as delta-seconds (`1*DIGIT`, RFC 9110 §10.2.3), surrounding spaces and
/// tabs allowed; a value past `u32::MAX` saturates. `None` for anything else: empty, a sign, a
/// fraction, an HTTP-date (client-go's retryAfterSeconds reads only integers).
pub fn parse_retry_after(value: &[u8]) -> Option<u32> {
    let ows = |b: &u8| *b == b' ' || *b == b'\t';
    let start = value.iter().position(|b| !ows(b))?;
    let end = value.iter().rposition(|b| !ows(b))? + 1;
    let digits = value.get(start..end)?;
    let mut n: u32 = 0;
    for &b in digits {
        if !b.is_ascii_digit() {
            return None;
        }
        n = n.saturating_mul(10).saturating_add(u32::from(b - b'0'));
    }
    Some(n)
}

/// Whether an answer with `status` is pushback whose `Retry-After` is honoured: 429 and every
/// 5xx (client-go's checkWait).
pub fn honoured_status(status: u16) -> bool {
    status == 429 || (500..=599).contains(&status)
}

/// The seconds the server asked to wait before the next attempt, when the answer is pushback
/// (see [`honoured_status`]) and its `Retry-After` reads as delta-seconds; `None` otherwise (the
/// caller's own schedule applies).
pub fn asked(status: u16, headers: &Headers<'_>) -> Option<u32> {
    if !honoured_status(status) {
        return None;
    }
    headers.retry_after.and_then(parse_retry_after)
}

/// The wait, in whole seconds of the core's clock, after the server asked for `asked` seconds:
/// `asked` bounded to 1..=[`MAX_RETRY_AFTER_SECS`], plus 1 (the clock's resolution), plus
/// `floor((spread + 1) · jitter / 2³²)` where `spread = max(1, asked / 2)`: uniform in
/// `asked + 1 ..= asked + 1 + spread` for a uniform `jitter`. Counted from a whole-second `now`,
/// the real wait is never shorter than asked (within the bound).
pub fn delay_secs(asked: u32, jitter: u32) -> i64 {
    let asked = asked.clamp(1, MAX_RETRY_AFTER_SECS);
    let spread = (asked / 2).max(1);
    let extra = ((u64::from(spread) + 1) * u64::from(jitter)) >> 32;
    i64::from(asked) + 1 + extra as i64
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn parses_delta_seconds_only() {
        assert_eq!(parse_retry_after(b"1"), Some(1));
        assert_eq!(parse_retry_after(b" 32\t"), Some(32));
        assert_eq!(parse_retry_after(b"0"), Some(0));
        assert_eq!(parse_retry_after(b"007"), Some(7));
        assert_eq!(parse_retry_after(b"99999999999999"), Some(u32::MAX));
        for bad in [
            &b""[..],
            b"  ",
            b"-1",
            b"+1",
            b"1.5",
            b"1 2",
            b"Fri, 31 Dec 1999 23:59:59 GMT",
            b"\xff",
        ] {
            assert_eq!(parse_retry_after(bad), None, "{bad:?}");
        }
    }

    #[test]
    fn only_pushback_statuses_are_honoured() {
        let h = Headers::retry_after(Some(b"3"));
        assert_eq!(asked(429, &h), Some(3));
        assert_eq!(asked(503, &h), Some(3));
        assert_eq!(asked(500, &h), Some(3));
        assert_eq!(asked(599, &h), Some(3));
        for s in [200, 201, 301, 401, 403, 404, 408, 409, 600] {
            assert_eq!(asked(s, &h), None, "{s}");
        }
        assert_eq!(asked(429, &Headers::NONE), None);
        assert_eq!(asked(429, &Headers::retry_after(Some(b"soon"))), None);
    }

    #[test]
    fn delay_schedule() {
        // APF's first ask: 1 s; whole seconds after a whole-second now: 2 or 3.
        assert_eq!(delay_secs(1, 0), 2);
        assert_eq!(delay_secs(1, u32::MAX / 2), 2);
        assert_eq!(delay_secs(1, u32::MAX / 2 + 1), 3);
        assert_eq!(delay_secs(1, u32::MAX), 3);
        // Zero is one second (a zero wait would spin).
        assert_eq!(delay_secs(0, 0), 2);
        // APF's largest ask: 32 s, spread over 33..=49 s.
        assert_eq!(delay_secs(32, 0), 33);
        assert_eq!(delay_secs(32, u32::MAX), 49);
        // Past the bound: the bound.
        assert_eq!(delay_secs(u32::MAX, 0), i64::from(MAX_RETRY_AFTER_SECS) + 1);
        assert_eq!(delay_secs(3600, u32::MAX), 451);
    }

    #[test]
    fn jitter_spreads_a_fleet_evenly() {
        // 1000 nodes told "1": about half come back after 2 s, half after 3 s.
        let mut j = crate::engine::Jitter(42);
        let twos = (0..1000).filter(|_| delay_secs(1, j.next_u32()) == 2).count();
        assert!((400..600).contains(&twos), "{twos}");
        // Told "8": every second of 9..=13 gets its share.
        let mut counts = [0u32; 14];
        for _ in 0..5000 {
            counts[delay_secs(8, j.next_u32()) as usize] += 1;
        }
        assert!(counts[..9].iter().all(|&c| c == 0));
        assert!(counts[9..].iter().all(|&c| (800..1200).contains(&c)), "{counts:?}");
    }

    proptest! {
        #[test]
        fn delay_bounded(a in any::<u32>(), j in any::<u32>()) {
            let d = delay_secs(a, j);
            let lo = i64::from(a.clamp(1, MAX_RETRY_AFTER_SECS));
            prop_assert!(d > lo);
            prop_assert!(d <= lo + 1 + (lo / 2).max(1));
        }

        #[test]
        fn parse_roundtrips(n in any::<u32>()) {
            let mut b = [0u8; 20];
            let s = crate::out::decimal(u64::from(n), &mut b);
            prop_assert_eq!(parse_retry_after(s.as_bytes()), Some(n));
        }
    }
}
