//! Dates as the viewer asked for them (`date_format` of the account), month names from the
//! catalogue. A date without a year (a birthday whose year is unknown) is shown without one.

use jiff::civil::Date;

use super::i18n::Lang;

const MONTHS: [&str; 12] = [
    "month.1", "month.2", "month.3", "month.4", "month.5", "month.6", "month.7", "month.8", "month.9", "month.10",
    "month.11", "month.12",
];

/// Day `day` of `month` in `year` (when known) in `format`.
pub fn parts(lang: Lang, format: &str, year: Option<i16>, month: i8, day: i8) -> String {
    let long = lang.t(MONTHS[(month.clamp(1, 12) - 1) as usize]);
    let short: String = long.chars().take(3).collect();
    let y = year.map(|y| format!("{y:04}"));
    match (format, y) {
        ("us", Some(y)) => format!("{month:02}/{day:02}/{y}"),
        ("us", None) => format!("{month:02}/{day:02}"),
        ("iso" | "ca", Some(y)) => format!("{y}-{month:02}-{day:02}"),
        ("iso" | "ca", None) => format!("--{month:02}-{day:02}"),
        ("eu-hyphen", Some(y)) => format!("{day:02}-{month:02}-{y}"),
        ("eu-hyphen", None) => format!("{day:02}-{month:02}"),
        ("us-mmm", Some(y)) => format!("{short} {day}, {y}"),
        ("us-mmm", None) => format!("{short} {day}"),
        ("us-mmmm", Some(y)) => format!("{long} {day}, {y}"),
        ("us-mmmm", None) => format!("{long} {day}"),
        ("eu-mmm", Some(y)) => format!("{day} {short} {y}"),
        ("eu-mmm", None) => format!("{day} {short}"),
        ("eu-mmmm", Some(y)) => format!("{day}. {long} {y}"),
        ("eu-mmmm", None) => format!("{day}. {long}"),
        (_, Some(y)) => format!("{day:02}/{month:02}/{y}"),
        (_, None) => format!("{day:02}/{month:02}"),
    }
}

pub fn date(lang: Lang, format: &str, d: Date) -> String {
    parts(lang, format, Some(d.year()), d.month(), d.day())
}

/// An instant as its day in `zone`, in `format`.
pub fn day_of(lang: Lang, format: &str, t: jiff::Timestamp, zone: &jiff::tz::TimeZone) -> String {
    date(lang, format, t.to_zoned(zone.clone()).date())
}

/// A REST date text (`YYYY-MM-DD` or `--MM-DD`) in `format`; anything else as it is.
pub fn rest_date(lang: Lang, format: &str, text: &str) -> String {
    if let Some(md) = text.strip_prefix("--") {
        let mut it = md.split('-').map(|p| p.parse::<i8>());
        if let (Some(Ok(m)), Some(Ok(d))) = (it.next(), it.next()) {
            return parts(lang, format, None, m, d);
        }
    }
    match text.parse::<Date>() {
        Ok(d) => date(lang, format, d),
        Err(_) => text.to_string(),
    }
}

/// A file size for people: `512 B`, `12 KB`, `3.4 MB`.
pub fn size(bytes: u64) -> String {
    const KB: u64 = 1024;
    match bytes {
        b if b < KB => format!("{b} B"),
        b if b < KB * KB => format!("{} KB", b.div_ceil(KB)),
        b => format!("{:.1} MB", b as f64 / (KB * KB) as f64),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn formats_follow_the_preference() {
        let d = Date::constant(2024, 2, 29);
        assert_eq!(date(Lang::En, "iso", d), "2024-02-29");
        assert_eq!(date(Lang::En, "eu", d), "29/02/2024");
        assert_eq!(date(Lang::En, "us", d), "02/29/2024");
        assert_eq!(date(Lang::En, "us-mmmm", d), "February 29, 2024");
        assert_eq!(date(Lang::De, "eu-mmmm", d), "29. Februar 2024");
        assert_eq!(rest_date(Lang::En, "eu-mmm", "--05-12"), "12 May");
        assert_eq!(rest_date(Lang::En, "iso", "soon"), "soon");
    }
}
