//! Calendar rules, written once: what "today" is (the one server clock in `REMINDER_TIMEZONE`),
//! when a yearly date next occurs (29 February falls on 1 March in other years), how recurring
//! reminders advance (monthly clamps to the month's last day), and ages from full dates only.

use jiff::civil::Date;
use jiff::tz::TimeZone;
use jiff::{Timestamp, ToSpan};

/// The calendar date of `now` in the server zone.
pub fn today(now: Timestamp, zone: &TimeZone) -> Date {
    now.to_zoned(zone.clone()).date()
}

/// The date a yearly `month`/`day` falls on in `year`: 29 February becomes 1 March in a
/// non-leap year; an impossible date (31 April) is `None`.
pub fn in_year(year: i16, month: i8, day: i8) -> Option<Date> {
    match Date::new(year, month, day) {
        Ok(date) => Some(date),
        Err(_) if month == 2 && day == 29 => Date::new(year, 3, 1).ok(),
        Err(_) => None,
    }
}

/// The first occurrence of a yearly `month`/`day` on or after `from`.
pub fn next_yearly(month: i8, day: i8, from: Date) -> Option<Date> {
    let this_year = in_year(from.year(), month, day)?;
    if this_year >= from { Some(this_year) } else { in_year(from.year() + 1, month, day) }
}

/// Age reached on `on` by someone born on `born` (only for full dates).
pub fn age_on(born: Date, on: Date) -> i16 {
    let had_birthday = (on.month(), on.day()) >= (born.month(), born.day());
    on.year() - born.year() - if had_birthday { 0 } else { 1 }
}

/// How a reminder repeats.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub enum Recurrence {
    #[serde(rename = "once")]
    Once,
    #[serde(rename = "weekly")]
    Weekly,
    #[serde(rename = "monthly")]
    Monthly,
    #[serde(rename = "quarterly")]
    Quarterly,
    #[serde(rename = "six-months")]
    SixMonths,
    #[serde(rename = "yearly")]
    Yearly,
}

impl Recurrence {
    pub const ALL: &'static str = "once, weekly, monthly, quarterly, six-months, yearly";

    pub fn parse(text: &str) -> Option<Recurrence> {
        serde_json::from_value(serde_json::Value::String(text.to_string())).ok()
    }

    /// The next date after `date` for this recurrence, anchored on the original day of month
    /// `anchor_day` so that 31 January -> 28/29 February -> 31 March.
    pub fn advance(self, date: Date, anchor_day: i8) -> Option<Date> {
        let months = match self {
            Recurrence::Once => return None,
            Recurrence::Weekly => return date.checked_add(7.days()).ok(),
            Recurrence::Monthly => 1,
            Recurrence::Quarterly => 3,
            Recurrence::SixMonths => 6,
            Recurrence::Yearly => {
                let next_year = date.year() + 1;
                let month = if anchor_day == 29 && date.month() == 3 && date.day() == 1 { 2 } else { date.month() };
                return in_year(next_year, month, anchor_day.min(31)).or_else(|| Date::new(next_year, month, 28).ok());
            }
        };
        let first = date.first_of_month().checked_add(months.months()).ok()?;
        let day = anchor_day.min(first.days_in_month());
        Date::new(first.year(), first.month(), day).ok()
    }
}

/// The instant at midnight UTC of `date`: how day-granular reminder dates are stored.
pub fn midnight(date: Date) -> Timestamp {
    date.to_zoned(TimeZone::UTC).map(|z| z.timestamp()).unwrap_or(Timestamp::UNIX_EPOCH)
}

/// The calendar day a stored reminder instant stands for.
pub fn day_of(instant: Timestamp) -> Date {
    instant.to_zoned(TimeZone::UTC).date()
}

/// An instant given by a caller: RFC 3339 with `Z` or an offset, or a bare `YYYY-MM-DD` (midnight UTC).
pub fn instant(field: &str, text: &str) -> Result<jiff::Timestamp, crate::crm::Error> {
    let text = text.trim();
    if let Ok(t) = text.parse::<jiff::Timestamp>() {
        return Ok(t);
    }
    text.parse::<Date>().map(midnight).map_err(|_| {
        crate::crm::Error::invalid(field, "must be an RFC 3339 instant (e.g. 2026-11-22T10:00:00Z) or YYYY-MM-DD")
    })
}

/// An optional [`instant`]: absent or blank (whitespace only, as the document's pattern
/// allows) is none.
pub fn instant_or_blank(field: &str, text: Option<&str>) -> Result<Option<jiff::Timestamp>, crate::crm::Error> {
    text.filter(|t| !t.trim().is_empty()).map(|t| instant(field, t)).transpose()
}

/// `fromDate`/`toDate` (inclusive `YYYY-MM-DD`) as a half-open microsecond range.
pub fn date_range(from: Option<&str>, to: Option<&str>) -> Result<(i64, i64), crate::crm::Error> {
    let day = |field: &str, text: &str| {
        text.parse::<Date>().map_err(|_| crate::crm::Error::bad_parameter(field, "must be YYYY-MM-DD"))
    };
    let lo = match from {
        Some(f) if !f.is_empty() => midnight(day("fromDate", f)?).as_microsecond().max(0),
        _ => 0,
    };
    let hi = match to {
        Some(t) if !t.is_empty() => {
            let next = day("toDate", t)?
                .tomorrow()
                .map_err(|_| crate::crm::Error::bad_parameter("toDate", "is out of range"))?;
            midnight(next).as_microsecond()
        }
        _ => i64::MAX,
    };
    Ok((lo, hi))
}

#[cfg(test)]
mod tests {
    use super::*;
    use jiff::civil::date;

    #[test]
    fn leap_day_birthdays_fall_on_1_march_in_other_years() {
        assert_eq!(next_yearly(2, 29, date(2027, 1, 10)), Some(date(2027, 3, 1)));
        assert_eq!(next_yearly(2, 29, date(2028, 1, 10)), Some(date(2028, 2, 29)));
        assert_eq!(next_yearly(12, 31, date(2026, 12, 31)), Some(date(2026, 12, 31)), "today counts");
        assert_eq!(next_yearly(1, 1, date(2026, 12, 31)), Some(date(2027, 1, 1)), "across the year end");
        assert_eq!(next_yearly(4, 31, date(2026, 1, 1)), None);
    }

    #[test]
    fn a_blank_instant_is_none_whatever_its_whitespace() {
        assert_eq!(instant_or_blank("before", None).unwrap(), None);
        assert_eq!(instant_or_blank("before", Some("")).unwrap(), None);
        assert_eq!(instant_or_blank("before", Some("\u{205f}\u{2028}\u{85}\u{a0}")).unwrap(), None);
        assert_eq!(
            instant_or_blank("before", Some(" 2026-11-22 ")).unwrap(),
            Some("2026-11-22T00:00:00Z".parse().unwrap())
        );
        assert!(instant_or_blank("before", Some("soon")).is_err());
    }

    #[test]
    fn ages_come_from_full_dates() {
        assert_eq!(age_on(date(1990, 6, 15), date(2026, 6, 14)), 35);
        assert_eq!(age_on(date(1990, 6, 15), date(2026, 6, 15)), 36);
        assert_eq!(age_on(date(2000, 2, 29), date(2027, 3, 1)), 27);
    }

    #[test]
    fn monthly_recurrence_clamps_and_keeps_its_anchor() {
        let r = Recurrence::Monthly;
        let feb = r.advance(date(2027, 1, 31), 31).unwrap();
        assert_eq!(feb, date(2027, 2, 28));
        assert_eq!(r.advance(feb, 31).unwrap(), date(2027, 3, 31), "back to the 31st");
        assert_eq!(r.advance(date(2028, 1, 31), 31).unwrap(), date(2028, 2, 29), "leap year");
        assert_eq!(Recurrence::Quarterly.advance(date(2026, 11, 30), 30).unwrap(), date(2027, 2, 28));
        assert_eq!(Recurrence::Weekly.advance(date(2026, 12, 29), 29).unwrap(), date(2027, 1, 5));
        assert_eq!(Recurrence::Once.advance(date(2026, 1, 1), 1), None);
    }

    #[test]
    fn yearly_recurrence_moves_29_february_to_1_march_and_back() {
        let r = Recurrence::Yearly;
        let y2025 = r.advance(date(2024, 2, 29), 29).unwrap();
        assert_eq!(y2025, date(2025, 3, 1));
        let y2026 = r.advance(y2025, 29).unwrap();
        assert_eq!(y2026, date(2026, 3, 1));
        assert_eq!(r.advance(date(2027, 3, 1), 29).unwrap(), date(2028, 2, 29));
    }

    #[test]
    fn today_is_decided_in_the_server_zone() {
        let instant: Timestamp = "2026-12-31T20:00:00Z".parse().unwrap();
        assert_eq!(today(instant, &TimeZone::get("Pacific/Kiritimati").unwrap()), date(2027, 1, 1));
        assert_eq!(today(instant, &TimeZone::get("America/Los_Angeles").unwrap()), date(2026, 12, 31));
        assert_eq!(today(instant, &TimeZone::UTC), date(2026, 12, 31));
    }
}
