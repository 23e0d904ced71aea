//! Dates in the shapes spreadsheets write them, read into partial dates.

use crate::dates::Partial;

use super::*;

fn days_in_month(year: Option<i32>, month: u8) -> u8 {
    match month {
        1 | 3 | 5 | 7 | 8 | 10 | 12 => 31,
        4 | 6 | 9 | 11 => 30,
        2 => match year {
            Some(y) if !(y % 4 == 0 && (y % 100 != 0 || y % 400 == 0)) => 28,
            _ => 29,
        },
        _ => 0,
    }
}

fn number(s: &str, widths: std::ops::RangeInclusive<usize>) -> Option<u32> {
    (widths.contains(&s.len()) && s.bytes().all(|b| b.is_ascii_digit())).then(|| s.parse().ok()).flatten()
}

fn partial(year: Option<u32>, month: Option<u32>, day: Option<u32>) -> Option<Partial> {
    let year = match year {
        Some(y) if !(1..=9999).contains(&y) => return None,
        y => y.and_then(|y| i32::try_from(y).ok()),
    };
    let month = match month {
        Some(m) if !(1..=12).contains(&m) => return None,
        m => m.and_then(|m| u8::try_from(m).ok()),
    };
    let day = match (day, month) {
        (Some(d), Some(m)) if d == 0 || d > u32::from(days_in_month(year, m)) => return None,
        (Some(_), None) => return None,
        (d, _) => d.and_then(|d| u8::try_from(d).ok()),
    };
    Some(Partial { year, month, day })
}

/// Reads a date cell: `YYYY-MM-DD`, `YYYY/MM/DD`, `YYYYMMDD`, `YYYY-MM`, `YYYY`, `--MM-DD`
/// (Google, vCard), `MM/DD/YYYY` (Outlook; `DD/MM/YYYY` when `day_first`), `DD.MM.YYYY`; a time
/// after the date is ignored. `Ok(None)` for no date (Outlook's `0/0/00`); `Err` when unreadable
/// or impossible (month 13, 31 April).
pub(super) fn parse_date(value: &str, day_first: bool) -> Result<Option<Partial>, ()> {
    let value = value.trim();
    let date = value.split([' ', 'T']).next().unwrap_or("");
    if date.is_empty() {
        return Ok(None);
    }
    if date.bytes().any(|b| b.is_ascii_digit()) && date.bytes().all(|b| matches!(b, b'0' | b'/' | b'-' | b'.')) {
        return Ok(None);
    }
    let y = |s: &str| number(s, 4..=4);
    let md = |s: &str| number(s, 1..=2);
    let parsed = if let Some(rest) = date.strip_prefix("--") {
        match rest.split_once('-') {
            Some((m, d)) => partial(None, Some(md(m).ok_or(())?), Some(md(d).ok_or(())?)),
            None => {
                partial(None, Some(rest.get(..2).and_then(md).ok_or(())?), Some(rest.get(2..).and_then(md).ok_or(())?))
            }
        }
    } else if date.len() == 8 && date.bytes().all(|b| b.is_ascii_digit()) {
        partial(date.get(..4).and_then(y), date.get(4..6).and_then(md), date.get(6..).and_then(md))
    } else {
        let sep = date.bytes().find(|b| matches!(b, b'-' | b'/' | b'.'));
        let parts: Vec<&str> = match sep {
            Some(s) => date.split(char::from(s)).collect(),
            None => vec![date],
        };
        match (sep, parts.as_slice()) {
            (None, [year]) => partial(Some(y(year).ok_or(())?), None, None),
            (Some(b'-' | b'/' | b'.'), [year, m, d]) if year.len() == 4 => {
                partial(Some(y(year).ok_or(())?), Some(md(m).ok_or(())?), Some(md(d).ok_or(())?))
            }
            (Some(b'-'), [year, m]) if year.len() == 4 => {
                partial(Some(y(year).ok_or(())?), Some(md(m).ok_or(())?), None)
            }
            (Some(b'/'), [a, b, year]) => {
                let (a, b) = (md(a).ok_or(())?, md(b).ok_or(())?);
                let (m, d) = if day_first { (b, a) } else { (a, b) };
                partial(Some(y(year).ok_or(())?), Some(m), Some(d))
            }
            (Some(b'.'), [d, m, year]) => {
                partial(Some(y(year).ok_or(())?), Some(md(m).ok_or(())?), Some(md(d).ok_or(())?))
            }
            _ => None,
        }
    };
    parsed.map(Some).ok_or(())
}

/// Whether a date column writes `DD/MM/YYYY`: some cell has a first number above 12 and none a
/// second number above 12. Otherwise slash dates are read the US way, `MM/DD/YYYY`.
pub(super) fn column_is_day_first(table: &Table, index: usize) -> bool {
    let (mut day_first, mut month_first) = (false, false);
    for row in &table.rows {
        let Some(cell) = row.get(index) else { continue };
        let parts: Vec<&str> = cell.trim().split([' ', 'T']).next().unwrap_or("").split('/').collect();
        if let [a, b, _] = parts.as_slice()
            && let (Some(a), Some(b)) = (number(a, 1..=2), number(b, 1..=2))
        {
            day_first |= a > 12 && b <= 12;
            month_first |= b > 12 && a <= 12;
        }
    }
    day_first && !month_first
}

/// The export form of a partial date: `YYYY-MM-DD`, `--MM-DD`, `YYYY-MM` or `YYYY`.
pub(super) fn date_text(p: &Partial) -> String {
    match (p.year, p.month, p.day) {
        (Some(y), Some(m), Some(d)) => format!("{y:04}-{m:02}-{d:02}"),
        (None, Some(m), Some(d)) => format!("--{m:02}-{d:02}"),
        (Some(y), Some(m), None) => format!("{y:04}-{m:02}"),
        (Some(y), None, _) => format!("{y:04}"),
        _ => String::new(),
    }
}

#[cfg(test)]
#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dates_in_every_shape() {
        let p = |y, m, d| Ok(Some(Partial { year: y, month: m, day: d }));
        assert_eq!(parse_date("1990-06-15", false), p(Some(1990), Some(6), Some(15)));
        assert_eq!(parse_date("--06-15", false), p(None, Some(6), Some(15)));
        assert_eq!(parse_date("--0615", false), p(None, Some(6), Some(15)));
        assert_eq!(parse_date("6/15/1990", false), p(Some(1990), Some(6), Some(15)));
        assert_eq!(parse_date("15/6/1990", true), p(Some(1990), Some(6), Some(15)));
        assert_eq!(parse_date("15.06.1990", false), p(Some(1990), Some(6), Some(15)));
        assert_eq!(parse_date("1990/06/15", false), p(Some(1990), Some(6), Some(15)));
        assert_eq!(parse_date("19900615", false), p(Some(1990), Some(6), Some(15)));
        assert_eq!(parse_date("1990-06", false), p(Some(1990), Some(6), None));
        assert_eq!(parse_date("1990", false), p(Some(1990), None, None));
        assert_eq!(parse_date("2/29/2000 12:00:00 AM", false), p(Some(2000), Some(2), Some(29)));
        assert_eq!(parse_date("1990-06-15T00:00:00Z", false), p(Some(1990), Some(6), Some(15)));
        assert_eq!(parse_date("--02-29", false), p(None, Some(2), Some(29)));
        for empty in ["0/0/00", "0/0/0000", "00.00.0000", "0", ""] {
            assert_eq!(parse_date(empty, false), Ok(None), "{empty}");
        }
        for bad in [
            "31/31/2020",
            "2/29/2001",
            "4/31/1990",
            "1990-13-01",
            "June 15",
            "15/6/1990",
            "6/15/90",
            "--13-01",
            "ß/é/ü",
            "--aé1",
        ] {
            assert_eq!(parse_date(bad, false), Err(()), "{bad}");
        }
    }
}
