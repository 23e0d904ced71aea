//! The date shapes of the REST surface: `YYYY-MM-DD` and the year-less `--MM-DD`, checked
//! lexically (month and day are not range-checked, as the spec says), and the partial dates of
//! the neutral record (`{year?, month?, day?}`).

use serde::{Deserialize, Serialize};

/// A date with any subset of year, month and day.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct Partial {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub year: Option<i32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub month: Option<u8>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub day: Option<u8>,
}

/// Whether `value` is exactly `YYYY-MM-DD` or `--MM-DD` (digits in place; no range check).
pub fn is_rest_date(value: &str) -> bool {
    let b = value.as_bytes();
    let digits = |r: std::ops::Range<usize>| b[r].iter().all(u8::is_ascii_digit);
    match b.len() {
        10 => digits(0..4) && b[4] == b'-' && digits(5..7) && b[7] == b'-' && digits(8..10),
        7 => b[0] == b'-' && b[1] == b'-' && digits(2..4) && b[4] == b'-' && digits(5..7),
        _ => false,
    }
}

/// Parses a REST date into a partial date; `None` when the shape is not one of the two.
pub fn parse_rest_date(value: &str) -> Option<Partial> {
    if !is_rest_date(value) {
        return None;
    }
    let num = |s: &str| s.parse::<u32>().ok();
    if let Some(rest) = value.strip_prefix("--") {
        return Some(Partial {
            year: None,
            month: num(&rest[..2]).map(|m| m as u8),
            day: num(&rest[3..]).map(|d| d as u8),
        });
    }
    Some(Partial {
        year: value[..4].parse().ok(),
        month: num(&value[5..7]).map(|m| m as u8),
        day: num(&value[8..]).map(|d| d as u8),
    })
}

/// The REST form of a partial date: `YYYY-MM-DD` with a year, `--MM-DD` without; `None` when
/// month or day is missing (a year-only or month-only date has no REST form).
pub fn rest_date(p: &Partial) -> Option<String> {
    let (month, day) = (p.month?, p.day?);
    Some(match p.year {
        Some(year) => format!("{year:04}-{month:02}-{day:02}"),
        None => format!("--{month:02}-{day:02}"),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_validator_is_lexical() {
        for ok in ["1990-06-15", "--06-15", "2024-13-45", "--99-99"] {
            assert!(is_rest_date(ok), "{ok}");
        }
        for bad in ["1990-6-15", "-06-15", "06-15", "19900615", "1990/06/15", "", "--0615", "spring"] {
            assert!(!is_rest_date(bad), "{bad}");
        }
    }

    #[test]
    fn rest_dates_round_trip_through_partials() {
        for s in ["1990-06-15", "--02-29"] {
            assert_eq!(rest_date(&parse_rest_date(s).unwrap()).as_deref(), Some(s));
        }
        assert_eq!(rest_date(&Partial { year: Some(1990), month: None, day: None }), None);
    }
}
