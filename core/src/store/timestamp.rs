//! The local wall-clock timestamps that name the store's data files.

use super::*;

/// A broken-down **local** wall-clock time naming a data file: `YYYY-MM-DD-HH-MM-SS`
/// (Go layout `2006-01-02-15-04-05`). Years 0–9999.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Timestamp {
    pub(super) year: u16,
    pub(super) month: u8,
    pub(super) day: u8,
    pub(super) hour: u8,
    pub(super) minute: u8,
    pub(super) second: u8,
}

impl Timestamp {
    /// A timestamp from its fields; out-of-range fields are [`StoreErrorKind::InvalidTimestamp`].
    pub fn new(
        year: u16,
        month: u8,
        day: u8,
        hour: u8,
        minute: u8,
        second: u8,
    ) -> StoreResult<Self> {
        let ok = year <= 9999
            && (1..=12).contains(&month)
            && day >= 1
            && day <= crate::calendar::days_in_month(i64::from(year), month)
            && hour < 24
            && minute < 60
            && second < 60;
        if !ok {
            return Err(StoreError::new(StoreErrorKind::InvalidTimestamp, None));
        }
        Ok(Timestamp { year, month, day, hour, minute, second })
    }

    /// The local time for `unix` seconds at a UTC offset of `utc_offset` seconds (east positive),
    /// e.g. from the OS's time zone for that instant.
    pub fn from_unix(unix: i64, utc_offset: i32) -> StoreResult<Self> {
        let bad = || StoreError::new(StoreErrorKind::InvalidTimestamp, None);
        let local = unix.checked_add(i64::from(utc_offset)).ok_or_else(bad)?;
        let (y, m, d) = crate::calendar::civil_from_days(local.div_euclid(86_400));
        let secs = local.rem_euclid(86_400);
        let year = u16::try_from(y).map_err(|_| bad())?;
        let f = |v: i64| u8::try_from(v).map_err(|_| bad());
        Timestamp::new(year, m, d, f(secs / 3600)?, f(secs % 3600 / 60)?, f(secs % 60)?)
    }

    /// Parse `YYYY-MM-DD-HH-MM-SS`.
    pub fn parse(s: &str) -> StoreResult<Self> {
        let bad = || StoreError::new(StoreErrorKind::InvalidTimestamp, None);
        let b = s.as_bytes();
        if b.len() != 19 {
            return Err(bad());
        }
        for (i, c) in b.iter().enumerate() {
            let dash = matches!(i, 4 | 7 | 10 | 13 | 16);
            if (dash && *c != b'-') || (!dash && !c.is_ascii_digit()) {
                return Err(bad());
            }
        }
        let num = |r: core::ops::Range<usize>| -> u16 {
            b.get(r).unwrap_or(&[]).iter().fold(0u16, |a, c| a * 10 + u16::from(c - b'0'))
        };
        let small = |r| u8::try_from(num(r)).map_err(|_| bad());
        Timestamp::new(
            num(0..4),
            small(5..7)?,
            small(8..10)?,
            small(11..13)?,
            small(14..16)?,
            small(17..19)?,
        )
    }
}

impl fmt::Display for Timestamp {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{:04}-{:02}-{:02}-{:02}-{:02}-{:02}",
            self.year, self.month, self.day, self.hour, self.minute, self.second
        )
    }
}

impl FromStr for Timestamp {
    type Err = StoreError;
    fn from_str(s: &str) -> StoreResult<Self> {
        Timestamp::parse(s)
    }
}
