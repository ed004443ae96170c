//! The server's pushback (`pushback::parse_retry_after`, `asked`, `delay_secs`) on arbitrary
//! `Retry-After` values, statuses and jitter: the parser accepts exactly delta-seconds (digits
//! between optional spaces and tabs) with their saturated value, only 429 and 5xx are honoured,
//! and the wait lies in the documented window.
#![no_main]

use kubeboot::pushback::{self, Headers, MAX_RETRY_AFTER_SECS};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|input: (u16, u32, &[u8])| {
    let (status, jitter, value) = input;
    let parsed = pushback::parse_retry_after(value);
    // An independent reading: trim spaces and tabs, then digits only, saturating.
    let trimmed: &[u8] = {
        let ows = |b: &u8| *b == b' ' || *b == b'\t';
        let start = value.iter().position(|b| !ows(b)).unwrap_or(value.len());
        let end = value.iter().rposition(|b| !ows(b)).map_or(start, |e| e + 1);
        &value[start..end]
    };
    let expected = (!trimmed.is_empty() && trimmed.iter().all(u8::is_ascii_digit)).then(|| {
        let v =
            trimmed.iter().fold(0u128, |a, &d| (a * 10 + u128::from(d - b'0')).min(u128::MAX / 20));
        u32::try_from(v).unwrap_or(u32::MAX)
    });
    assert_eq!(parsed, expected, "{value:?}");

    let asked = pushback::asked(status, &Headers::retry_after(Some(value)));
    let honoured = status == 429 || (500..600).contains(&status);
    assert_eq!(asked, if honoured { parsed } else { None });
    assert_eq!(pushback::asked(status, &Headers::NONE), None);

    let n = parsed.unwrap_or(jitter);
    let d = pushback::delay_secs(n, jitter);
    let lo = i64::from(n.clamp(1, MAX_RETRY_AFTER_SECS));
    assert!(d > lo && d <= lo + 1 + (lo / 2).max(1), "{n} {jitter} -> {d}");
    if jitter < u32::MAX {
        assert!(pushback::delay_secs(n, jitter + 1) >= d, "monotone in jitter");
    }
});
