//! The proleptic Gregorian calendar of the crate (H. Hinnant's days-from-civil algorithms), in
//! integer arithmetic: RFC 3339 times ([`crate::rfc3339`]), certificate validity times
//! ([`crate::verify`]) and the store's timestamped file names all count days with it.

/// `true` for Gregorian leap years (divisible by 4, except centuries not divisible by 400).
pub const fn is_leap_year(year: i64) -> bool {
    // Only the year modulo 400 matters, taken in 32 bits when the year fits (see
    // `days_from_civil`).
    let y400 = if year >= i32::MIN as i64 && year <= i32::MAX as i64 {
        (year as i32).rem_euclid(400)
    } else {
        year.rem_euclid(400) as i32
    };
    y400 % 4 == 0 && (y400 % 100 != 0 || y400 == 0)
}

/// Days in `month` (1–12) of `year`; 0 for an invalid month.
pub const fn days_in_month(year: i64, month: u8) -> u8 {
    match month {
        1 | 3 | 5 | 7 | 8 | 10 | 12 => 31,
        4 | 6 | 9 | 11 => 30,
        2 if is_leap_year(year) => 29,
        2 => 28,
        _ => 0,
    }
}

/// Days since 1970-01-01 of the civil date `year-month-day` (H. Hinnant's algorithm).
///
/// Does not check that the day exists in the month. `None` on an invalid month or on overflow.
pub const fn days_from_civil(year: i64, month: u8, day: u8) -> Option<i64> {
    if month < 1 || month > 12 {
        return None;
    }
    let y = if month <= 2 {
        match year.checked_sub(1) {
            Some(y) => y,
            None => return None,
        }
    } else {
        year
    };
    // In 32 bits when the year fits (every year of a certificate, a token or a file name): on
    // 32-bit targets that needs no 64-bit division routine (about 1.1 KiB of Cortex-M4 flash).
    let (era, yoe) = if y >= i32::MIN as i64 && y <= i32::MAX as i64 {
        let y = y as i32;
        (y.div_euclid(400) as i64, y.rem_euclid(400) as i64)
    } else {
        (y.div_euclid(400), y.rem_euclid(400))
    };
    // yoe in [0, 399]
    let m = month as i64;
    let mp = if m > 2 { m - 3 } else { m + 9 }; // March = 0
    let doy = (153 * mp + 2) / 5 + day as i64 - 1; // [0, 365]
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy; // [0, 146096]
    match era.checked_mul(146_097) {
        Some(d) => match d.checked_add(doe - 719_468) {
            Some(v) => Some(v),
            None => None,
        },
        None => None,
    }
}

/// The civil date `(year, month, day)` of a day count since 1970-01-01. Total for every `i64`.
pub const fn civil_from_days(days: i64) -> (i64, u8, u8) {
    // Work in i128 so that `days + 719_468` cannot overflow for extreme inputs.
    let z = days as i128 + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097); // [0, 146096]
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365; // [0, 399]
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100); // [0, 365]
    let mp = (5 * doy + 2) / 153; // [0, 11]
    let day = (doy - (153 * mp + 2) / 5 + 1) as u8;
    let month = if mp < 10 { mp + 3 } else { mp - 9 } as u8;
    let year = yoe + era * 400 + if month <= 2 { 1 } else { 0 };
    // |year| < 2^63 / 86400 / 365 for any i64 day count, so this never truncates.
    (year as i64, month, day)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn leap_years_on_both_sides_of_the_32_bit_path() {
        let naive =
            |y: i64| y.rem_euclid(4) == 0 && (y.rem_euclid(100) != 0 || y.rem_euclid(400) == 0);
        let edges = [i32::MIN as i64, i32::MAX as i64, i64::MIN, i64::MAX, 0];
        for e in edges {
            for y in e.saturating_sub(1000)..=e.saturating_add(1000) {
                assert_eq!(is_leap_year(y), naive(y), "{y}");
            }
        }
        for y in -2000..=12_000 {
            assert_eq!(is_leap_year(y), naive(y), "{y}");
            let d = days_from_civil(y, 3, 1).unwrap();
            assert_eq!(civil_from_days(d), (y, 3, 1));
        }
    }
}
