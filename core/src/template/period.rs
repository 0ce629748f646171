//! Periods: the key of the period an instant is in, and the period after one.

use chrono::{DateTime, Datelike, Duration, Months, NaiveDate, NaiveDateTime, Timelike};

use super::Unit;

/// A period as seen from one instant: its key and the UTC interval during which the key
/// stays the same (`[start_ms, end_ms)`, conservative).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Span {
    pub key: i64,
    pub start_ms: i64,
    pub end_ms: i64,
}

pub(super) fn truncate(t: NaiveDateTime, unit: Unit) -> NaiveDateTime {
    let d = t.date();
    let (y, m) = (d.year(), d.month());
    let date = match unit {
        Unit::Year => NaiveDate::from_ymd_opt(y, 1, 1),
        Unit::Month => NaiveDate::from_ymd_opt(y, m, 1),
        _ => Some(d),
    }
    .unwrap_or(d);
    let (h, mi, s) = match unit {
        Unit::Year | Unit::Month | Unit::Day => (0, 0, 0),
        Unit::Hour => (t.hour(), 0, 0),
        Unit::Minute => (t.hour(), t.minute(), 0),
        Unit::Second => (t.hour(), t.minute(), t.second()),
    };
    date.and_hms_opt(h, mi, s).unwrap_or(t)
}

pub(super) fn next_start(start: NaiveDateTime, unit: Unit) -> Option<NaiveDateTime> {
    match unit {
        Unit::Year => start.checked_add_months(Months::new(12)),
        Unit::Month => start.checked_add_months(Months::new(1)),
        Unit::Day => start.checked_add_signed(Duration::days(1)),
        Unit::Hour => start.checked_add_signed(Duration::hours(1)),
        Unit::Minute => start.checked_add_signed(Duration::minutes(1)),
        Unit::Second => start.checked_add_signed(Duration::seconds(1)),
    }
}

/// The local date-time a period key stands for.
pub fn local_of_key(key: i64) -> NaiveDateTime {
    DateTime::from_timestamp(key, 0).map(|d| d.naive_utc()).unwrap_or_default()
}

/// The key of the period of `unit` that contains the local moment `key` stands for (a key
/// of a finer unit, or of the same one).
pub fn truncate_key(key: i64, unit: Unit) -> i64 {
    truncate(local_of_key(key), unit).and_utc().timestamp()
}

/// The key of the period of `unit` after the one starting at `key` (`None` past the end of
/// the calendar).
pub fn next_key(key: i64, unit: Unit) -> Option<i64> {
    next_start(local_of_key(key), unit).map(|t| t.and_utc().timestamp())
}
