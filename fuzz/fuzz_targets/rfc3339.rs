//! RFC 3339 (Go `time.RFC3339`) parsing and formatting.
//!
//! Properties: parsing never panics; `format(parse(x))` re-parses to the same instant when it
//! formats; `parse(format(t)) == t` over the formattable range; civil-date conversions agree;
//! `secret::is_expired` agrees with `parse_timestamp`.
#![no_main]

use kubeboot::Error;
use kubeboot::rfc3339::{self, DateTime, MAX_FORMATTABLE, MIN_FORMATTABLE, UTC_LEN};
use kubeboot::token::is_expired;
use libfuzzer_sys::fuzz_target;

fn roundtrip_unix(unix: i64) {
    match rfc3339::format(unix) {
        Ok(text) => {
            assert!((MIN_FORMATTABLE..=MAX_FORMATTABLE).contains(&unix));
            let s = text.as_str();
            assert_eq!(s.len(), UTC_LEN);
            assert_eq!(rfc3339::parse(s), Ok(unix), "{s}");
            let t = rfc3339::parse_timestamp(s.as_bytes()).unwrap();
            assert_eq!((t.unix, t.nanos), (unix, 0));
            let dt = DateTime::from_unix(unix);
            assert_eq!(dt.to_unix(), Some(unix));
            let mut buf = [0u8; UTC_LEN];
            assert_eq!(rfc3339::write(unix, &mut buf), Ok(UTC_LEN));
            assert_eq!(&buf, text.as_bytes());
            assert_eq!(
                rfc3339::write(unix, &mut buf[..UTC_LEN - 1]),
                Err(Error::BufferTooSmall { needed: UTC_LEN })
            );
            assert_eq!(format!("{text}"), s);
        }
        Err(e) => {
            assert_eq!(e, Error::InvalidExpiration);
            assert!(!(MIN_FORMATTABLE..=MAX_FORMATTABLE).contains(&unix));
            let mut buf = [0u8; 64];
            assert_eq!(rfc3339::write(unix, &mut buf), Err(Error::InvalidExpiration));
        }
    }
    assert_eq!(DateTime::from_unix(unix).to_unix(), Some(unix));
    // Days <-> civil for any day count the formatter could meet (and far beyond).
    let days = unix.div_euclid(86_400);
    let (y, m, d) = rfc3339::civil_from_days(days);
    assert!((1..=12).contains(&m) && d >= 1 && d <= rfc3339::days_in_month(y, m));
    if let Some(back) = rfc3339::days_from_civil(y, m, d) {
        assert_eq!(back, days);
    }
}

fuzz_target!(|data: &[u8]| {
    // 1. text -> instant -> text -> instant.
    let parsed = rfc3339::parse_timestamp(data);
    if let Ok(s) = core::str::from_utf8(data) {
        assert_eq!(rfc3339::parse(s), parsed.map(|t| t.unix));
    }
    match parsed {
        Ok(t) => {
            assert!(t.nanos < 1_000_000_000);
            if let Ok(text) = rfc3339::format(t.unix) {
                assert_eq!(rfc3339::parse(text.as_str()), Ok(t.unix));
            } else {
                // Only offsets can push a 0000..9999 date out of the formattable range.
                assert!(t.unix < MIN_FORMATTABLE + 86_400 || t.unix > MAX_FORMATTABLE - 86_400);
            }
            // is_after / is_expired agree at and around the instant.
            for now in [t.unix - 1, t.unix, t.unix + 1] {
                assert_eq!(is_expired(Some(data), now), !t.is_after(now));
            }
            assert!(t.is_after(t.unix - 1));
            assert!(!t.is_after(t.unix + 1));
            assert_eq!(t.is_after(t.unix), t.nanos > 0);
        }
        Err(e) => {
            assert_eq!(e, Error::InvalidExpiration);
            assert_eq!(is_expired(Some(data), 0), !data.is_empty());
        }
    }
    // 2. instant -> text -> instant, from the first 8 bytes (and clamped into range).
    if let Some(b) = data.get(..8) {
        let raw = i64::from_le_bytes(b.try_into().unwrap());
        roundtrip_unix(raw);
        let span = (MAX_FORMATTABLE - MIN_FORMATTABLE + 1) as u64;
        roundtrip_unix(MIN_FORMATTABLE + (raw as u64 % span) as i64);
        // Civil -> days for arbitrary (possibly invalid) dates must not panic.
        let year = i64::from(i32::from_le_bytes(b[..4].try_into().unwrap()));
        let _ = rfc3339::days_from_civil(year, b[4], b[5]);
        let _ = rfc3339::days_in_month(year, b[4]);
        let dt = DateTime { year, month: b[4], day: b[5], hour: b[6], minute: b[7], second: b[0] };
        let _ = dt.to_unix();
    }
});
