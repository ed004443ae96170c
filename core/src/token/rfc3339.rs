//! RFC 3339 timestamps, read the way Go's `time.Parse(time.RFC3339, s)` reads them and written
//! the way kubeadm writes them (`t.UTC().Format(time.RFC3339)`, e.g. `2026-01-02T03:04:05Z`).
//!
//! The bootstrap-token `expiration` field is parsed by the apiserver with Go's generic layout
//! parser for `2006-01-02T15:04:05Z07:00`. [`parse_timestamp`] accepts exactly what that parser
//! accepts (checked against Go 1.26 in `core/tests/token_vectors.rs`):
//!
//! - a 4-digit year (`0000`–`9999`), `-`, a 2-digit month (`01`–`12`), `-`, a 2-digit day (valid
//!   for the month, proleptic Gregorian leap years);
//! - a literal upper-case `T`;
//! - an hour of **one or two** digits (`0`–`23`), `:`, 2-digit minutes (`00`–`59`), `:`, 2-digit
//!   seconds (`00`–`59`, no leap second);
//! - optionally a fraction: `.` or `,` followed by one or more digits (only the first nine count,
//!   the rest are truncated, never rounded);
//! - a zone: upper-case `Z`, or `+hh:mm` / `-hh:mm` with two digits each, hours `00`–`24` and
//!   minutes `00`–`60` (Go's own, slightly lax, ranges);
//! - nothing after it (no whitespace, no newline).
//!
//! All arithmetic is integer (days-from-civil), there are no floats, and no input panics.

use crate::{Error, Result};

/// Length of the UTC form `YYYY-MM-DDTHH:MM:SSZ`.
pub const UTC_LEN: usize = 20;
/// The earliest instant [`format`] can write: `0000-01-01T00:00:00Z`.
pub const MIN_FORMATTABLE: i64 = -62_167_219_200;
/// The latest instant [`format`] can write: `9999-12-31T23:59:59Z`.
pub const MAX_FORMATTABLE: i64 = 253_402_300_799;

const SECS_PER_DAY: i64 = 86_400;

/// An instant with sub-second precision, as parsed from an RFC 3339 string.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Timestamp {
    /// Whole seconds since the Unix epoch (floor; negative before 1970).
    pub unix: i64,
    /// Nanoseconds past `unix`, `0..1_000_000_000`.
    pub nanos: u32,
}

impl Timestamp {
    /// `true` when `self - now > 0`, with `now` in whole unix seconds (`now` + 0 ns).
    ///
    /// This is the bootstrap-token rule "remaining ≤ 0 means expired", inverted.
    pub const fn is_after(&self, now: i64) -> bool {
        self.unix > now || (self.unix == now && self.nanos > 0)
    }
}

/// A broken-down UTC date and time (proleptic Gregorian calendar).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct DateTime {
    /// The year (astronomical numbering: year 0 exists, negative years before it).
    pub year: i64,
    /// Month, 1–12.
    pub month: u8,
    /// Day of month, 1–31.
    pub day: u8,
    /// Hour, 0–23.
    pub hour: u8,
    /// Minute, 0–59.
    pub minute: u8,
    /// Second, 0–59.
    pub second: u8,
}

impl DateTime {
    /// Breaks unix seconds down into UTC fields. Total for every `i64`.
    pub const fn from_unix(unix: i64) -> Self {
        let days = unix.div_euclid(SECS_PER_DAY);
        let secs = unix.rem_euclid(SECS_PER_DAY);
        let (year, month, day) = civil_from_days(days);
        DateTime {
            year,
            month,
            day,
            hour: (secs / 3600) as u8,
            minute: ((secs % 3600) / 60) as u8,
            second: (secs % 60) as u8,
        }
    }

    /// Unix seconds of these fields, or `None` when a field is out of range or the result
    /// overflows `i64`.
    pub const fn to_unix(&self) -> Option<i64> {
        if self.month < 1
            || self.month > 12
            || self.day < 1
            || self.day > days_in_month(self.year, self.month)
            || self.hour > 23
            || self.minute > 59
            || self.second > 59
        {
            return None;
        }
        let Some(days) = days_from_civil(self.year, self.month, self.day) else {
            return None;
        };
        // i128: the day's start may lie below i64::MIN while the instant itself does not.
        let total = days as i128 * SECS_PER_DAY as i128
            + self.hour as i128 * 3600
            + self.minute as i128 * 60
            + self.second as i128;
        if total < i64::MIN as i128 || total > i64::MAX as i128 { None } else { Some(total as i64) }
    }
}

pub use crate::calendar::{civil_from_days, days_from_civil, days_in_month, is_leap_year};

/// Parses an RFC 3339 time as Go's `time.Parse(time.RFC3339, s)` does; whole unix seconds
/// (floor), the fraction dropped. See [`parse_timestamp`] for the grammar.
pub fn parse(s: &str) -> Result<i64> {
    parse_timestamp(s.as_bytes()).map(|t| t.unix)
}

/// Parses an RFC 3339 time as Go's `time.Parse(time.RFC3339, s)` does, keeping nanoseconds.
///
/// Errors with [`Error::InvalidExpiration`] on anything Go rejects (see the module docs).
pub fn parse_timestamp(s: &[u8]) -> Result<Timestamp> {
    let mut c = Cursor { s, pos: 0 };
    let year = c.fixed(4)?;
    c.literal(b'-')?;
    let month = c.fixed(2)?;
    c.literal(b'-')?;
    let day = c.fixed(2)?;
    c.literal(b'T')?;
    let hour = c.one_or_two()?;
    c.literal(b':')?;
    let minute = c.fixed(2)?;
    c.literal(b':')?;
    let second = c.fixed(2)?;

    // Fraction: `.` or `,` and at least one digit; Go keeps 9 digits and truncates the rest.
    let mut nanos: u32 = 0;
    if matches!(c.peek(0), Some(b'.' | b',')) && c.peek(1).is_some_and(|b| b.is_ascii_digit()) {
        c.pos += 1;
        let mut n = 0u32;
        while let Some(d) = c.peek(0).filter(u8::is_ascii_digit) {
            if n < 9 {
                nanos = nanos * 10 + u32::from(d - b'0');
                n += 1;
            }
            c.pos += 1;
        }
        while n < 9 {
            nanos *= 10;
            n += 1;
        }
    }

    // Zone: `Z`, or `±hh:mm` (Go allows hh ≤ 24, mm ≤ 60).
    let offset: i64 = if c.peek(0) == Some(b'Z') {
        c.pos += 1;
        0
    } else {
        let sign: i64 = match c.peek(0) {
            Some(b'+') => 1,
            Some(b'-') => -1,
            _ => return Err(Error::InvalidExpiration),
        };
        c.pos += 1;
        let oh = c.fixed(2)?;
        c.literal(b':')?;
        let om = c.fixed(2)?;
        if oh > 24 || om > 60 {
            return Err(Error::InvalidExpiration);
        }
        sign * (oh * 3600 + om * 60)
    };
    if c.pos != s.len() {
        return Err(Error::InvalidExpiration);
    }

    if !(1..=12).contains(&month) || hour > 23 || minute > 59 || second > 59 {
        return Err(Error::InvalidExpiration);
    }
    // Values are bounded by the digit counts above, so these casts are exact.
    let (month, day) = (month as u8, day as u8);
    if day < 1 || day > days_in_month(year, month) {
        return Err(Error::InvalidExpiration);
    }
    let days = days_from_civil(year, month, day).ok_or(Error::InvalidExpiration)?;
    let unix = days * SECS_PER_DAY + hour * 3600 + minute * 60 + second - offset;
    Ok(Timestamp { unix, nanos })
}

/// Formats unix seconds as `YYYY-MM-DDTHH:MM:SSZ` (Go's `t.UTC().Format(time.RFC3339)` for
/// whole seconds).
///
/// Errors with [`Error::InvalidExpiration`] outside [`MIN_FORMATTABLE`]..=[`MAX_FORMATTABLE`].
pub fn format(unix: i64) -> Result<Rfc3339Utc> {
    if !(MIN_FORMATTABLE..=MAX_FORMATTABLE).contains(&unix) {
        return Err(Error::InvalidExpiration);
    }
    let dt = DateTime::from_unix(unix);
    let mut out = [0u8; UTC_LEN];
    let year = dt.year as u16; // 0..=9999 by the range check
    let fields: [(usize, u16, usize); 6] = [
        (0, year, 4),
        (5, u16::from(dt.month), 2),
        (8, u16::from(dt.day), 2),
        (11, u16::from(dt.hour), 2),
        (14, u16::from(dt.minute), 2),
        (17, u16::from(dt.second), 2),
    ];
    for (at, mut value, width) in fields {
        for i in (0..width).rev() {
            if let Some(slot) = out.get_mut(at + i) {
                *slot = b'0' + (value % 10) as u8;
            }
            value /= 10;
        }
    }
    for (at, b) in [(4, b'-'), (7, b'-'), (10, b'T'), (13, b':'), (16, b':'), (19, b'Z')] {
        if let Some(slot) = out.get_mut(at) {
            *slot = b;
        }
    }
    Ok(Rfc3339Utc(out))
}

/// Writes [`format`]`(unix)` into `buf`, returning the length ([`UTC_LEN`]).
pub fn write(unix: i64, buf: &mut [u8]) -> Result<usize> {
    let text = format(unix)?;
    let dst = buf.get_mut(..UTC_LEN).ok_or(Error::BufferTooSmall { needed: UTC_LEN })?;
    dst.copy_from_slice(&text.0);
    Ok(UTC_LEN)
}

/// A formatted UTC time, `YYYY-MM-DDTHH:MM:SSZ`, on the stack.
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct Rfc3339Utc([u8; UTC_LEN]);

impl Rfc3339Utc {
    /// The text.
    pub fn as_str(&self) -> &str {
        core::str::from_utf8(&self.0).unwrap_or("")
    }

    /// The text as bytes.
    pub const fn as_bytes(&self) -> &[u8; UTC_LEN] {
        &self.0
    }
}

impl core::fmt::Display for Rfc3339Utc {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.write_str(self.as_str())
    }
}

impl core::fmt::Debug for Rfc3339Utc {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        core::fmt::Debug::fmt(self.as_str(), f)
    }
}

struct Cursor<'a> {
    s: &'a [u8],
    pos: usize,
}

impl Cursor<'_> {
    fn peek(&self, ahead: usize) -> Option<u8> {
        self.s.get(self.pos.checked_add(ahead)?).copied()
    }

    fn literal(&mut self, b: u8) -> Result<()> {
        if self.peek(0) == Some(b) {
            self.pos += 1;
            Ok(())
        } else {
            Err(Error::InvalidExpiration)
        }
    }

    /// Exactly `n` (≤ 4) ASCII digits.
    fn fixed(&mut self, n: usize) -> Result<i64> {
        let mut v: i64 = 0;
        for _ in 0..n {
            match self.peek(0) {
                Some(d) if d.is_ascii_digit() => {
                    v = v * 10 + i64::from(d - b'0');
                    self.pos += 1;
                }
                _ => return Err(Error::InvalidExpiration),
            }
        }
        Ok(v)
    }

    /// One digit, or two when the second is a digit too (Go's non-fixed `getnum`).
    fn one_or_two(&mut self) -> Result<i64> {
        if self.peek(1).is_some_and(|b| b.is_ascii_digit()) { self.fixed(2) } else { self.fixed(1) }
    }
}

#[cfg(test)]
mod tests {
    extern crate std;
    use super::*;
    use proptest::prelude::*;

    fn p(s: &str) -> Result<Timestamp> {
        parse_timestamp(s.as_bytes())
    }

    #[test]
    fn kubeadm_form() {
        assert_eq!(parse("2026-01-02T03:04:05Z"), Ok(1_767_323_045));
        assert_eq!(parse("1970-01-01T00:00:00Z"), Ok(0));
        assert_eq!(parse("1969-12-31T23:59:59Z"), Ok(-1));
        assert_eq!(parse("2031-03-10T03:22:11Z"), Ok(1_930_879_331));
        assert_eq!(format(1_767_323_045).unwrap().as_str(), "2026-01-02T03:04:05Z");
        assert_eq!(format(0).unwrap().as_str(), "1970-01-01T00:00:00Z");
        assert_eq!(format(-1).unwrap().as_str(), "1969-12-31T23:59:59Z");
    }

    #[test]
    fn fractions_and_offsets() {
        assert_eq!(
            p("2026-01-02T03:04:05.5Z"),
            Ok(Timestamp { unix: 1_767_323_045, nanos: 500_000_000 })
        );
        assert_eq!(
            p("2026-01-02T03:04:05,25Z"),
            Ok(Timestamp { unix: 1_767_323_045, nanos: 250_000_000 })
        );
        assert_eq!(
            p("2026-01-02T03:04:05.1234567891Z"),
            Ok(Timestamp { unix: 1_767_323_045, nanos: 123_456_789 })
        );
        assert_eq!(
            p("2026-01-02T03:04:05.9999999999Z"),
            Ok(Timestamp { unix: 1_767_323_045, nanos: 999_999_999 })
        );
        assert_eq!(parse("2026-01-02T03:04:05+01:00"), Ok(1_767_323_045 - 3600));
        assert_eq!(parse("2026-01-02T03:04:05-01:30"), Ok(1_767_323_045 + 5400));
        assert_eq!(parse("2026-01-02T03:04:05-00:00"), Ok(1_767_323_045));
        assert_eq!(parse("2026-01-02T03:04:05+24:00"), Ok(1_767_236_645));
        assert_eq!(parse("2026-01-02T03:04:05+24:60"), Ok(1_767_233_045));
        assert_eq!(parse("2026-01-02T3:04:05Z"), Ok(1_767_323_045));
        for bad in [
            "2026-01-02T03:04:05.Z",
            "2026-01-02T03:04:05,Z",
            "2026-01-02T03:04:05+25:00",
            "2026-01-02T03:04:05+00:61",
            "2026-01-02T03:04:05+0100",
            "2026-01-02T03:04:05+1:00",
            "2026-01-02T03:04:05+01:00:00",
            "2026-01-02T03:04:05.1.2Z",
            "2026-01-02T03:04:05",
            "2026-01-02T03:04:05.5",
            "2026-01-02T03:04:05UTC",
            "2026-01-02T03:04:05Z07:00",
        ] {
            assert_eq!(p(bad), Err(Error::InvalidExpiration), "{bad}");
        }
    }

    #[test]
    fn calendar() {
        assert!(p("2024-02-29T00:00:00Z").is_ok());
        assert!(p("2000-02-29T00:00:00Z").is_ok());
        assert!(p("0000-02-29T00:00:00Z").is_ok());
        assert_eq!(parse("0000-01-01T00:00:00Z"), Ok(MIN_FORMATTABLE));
        assert_eq!(parse("9999-12-31T23:59:59Z"), Ok(MAX_FORMATTABLE));
        assert_eq!(parse("9999-12-31T23:59:59-23:59"), Ok(253_402_387_139));
        for bad in [
            "2026-02-29T00:00:00Z",
            "1900-02-29T00:00:00Z",
            "2026-00-10T00:00:00Z",
            "2026-13-10T00:00:00Z",
            "2026-04-31T00:00:00Z",
            "2026-04-00T00:00:00Z",
            "2026-01-32T00:00:00Z",
            "2026-01-02T24:00:00Z",
            "2026-01-02T03:60:00Z",
            "2026-01-02T03:04:60Z",
        ] {
            assert_eq!(p(bad), Err(Error::InvalidExpiration), "{bad}");
        }
    }

    #[test]
    fn syntax_is_strict() {
        for bad in [
            "",
            "2026-01-02t03:04:05Z",
            "2026-01-02T03:04:05z",
            "2026-01-02 03:04:05Z",
            "2026-1-02T03:04:05Z",
            "2026-01-2T03:04:05Z",
            "2026-01-02T003:04:05Z",
            "2026-01-02T03:4:05Z",
            "2026-01-02T03:04:5Z",
            "+2026-01-02T03:04:05Z",
            "12026-01-02T03:04:05Z",
            "2026-01-02T03:04:05Z ",
            "2026-01-02T03:04:05Z\n",
            " 2026-01-02T03:04:05Z",
            "2026-01-02T03:04:05 Z",
            "２026-01-02T03:04:05Z",
        ] {
            assert_eq!(p(bad), Err(Error::InvalidExpiration), "{bad:?}");
        }
    }

    #[test]
    fn extremes_do_not_panic() {
        for v in [i64::MIN, i64::MIN + 1, -1, 0, 1, i64::MAX - 1, i64::MAX] {
            let dt = DateTime::from_unix(v);
            assert_eq!(dt.to_unix(), Some(v), "{v}");
            let _ = format(v);
            let _ = civil_from_days(v);
            let _ = days_from_civil(v, 1, 1);
            let _ = days_from_civil(v, 2, 1);
        }
        assert_eq!(format(MIN_FORMATTABLE - 1), Err(Error::InvalidExpiration));
        assert_eq!(format(MAX_FORMATTABLE + 1), Err(Error::InvalidExpiration));
        assert_eq!(format(MAX_FORMATTABLE).unwrap().as_str(), "9999-12-31T23:59:59Z");
        let mut small = [0u8; 19];
        assert_eq!(write(0, &mut small), Err(Error::BufferTooSmall { needed: 20 }));
    }

    #[test]
    fn expiry_boundary() {
        let t = Timestamp { unix: 100, nanos: 0 };
        assert!(t.is_after(99));
        assert!(!t.is_after(100));
        let t = Timestamp { unix: 100, nanos: 1 };
        assert!(t.is_after(100));
        assert!(!t.is_after(101));
    }

    proptest! {
        #[test]
        fn format_parse_round_trip(unix in MIN_FORMATTABLE..=MAX_FORMATTABLE) {
            let text = format(unix).unwrap();
            prop_assert_eq!(parse(text.as_str()), Ok(unix));
            let dt = DateTime::from_unix(unix);
            prop_assert_eq!(dt.to_unix(), Some(unix));
        }

        #[test]
        fn days_round_trip(days in -10_000_000_000i64..10_000_000_000i64) {
            let (y, m, d) = civil_from_days(days);
            prop_assert!(d >= 1 && d <= days_in_month(y, m));
            prop_assert_eq!(days_from_civil(y, m, d), Some(days));
        }

        #[test]
        fn offsets_shift(unix in 0i64..=MAX_FORMATTABLE - 200_000, oh in 0u8..=23, om in 0u8..=59) {
            let dt = DateTime::from_unix(unix);
            let s = std::format!(
                "{:04}-{:02}-{:02}T{:02}:{:02}:{:02}+{:02}:{:02}",
                dt.year, dt.month, dt.day, dt.hour, dt.minute, dt.second, oh, om
            );
            if dt.year <= 9999 {
                prop_assert_eq!(parse(&s), Ok(unix - i64::from(oh) * 3600 - i64::from(om) * 60));
            }
        }

        #[test]
        fn never_panics(s in "\\PC{0,40}") {
            let _ = parse(&s);
        }
    }
}
