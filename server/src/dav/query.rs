//! `addressbook-query` filters (RFC 6352 10.5) judged against a card's vCard text: a
//! prop-filter names a property (`FN`, `EMAIL`, `TEL`, ...), its text-matches compare that
//! property's values (`contains`, `equals`, `starts-with`, `ends-with`; case-folded unless the
//! collation is `i;octet`). Parameter filters are not read: a filter naming only them matches on
//! the property's presence. And a `calendar-query`'s property and alarm filters (RFC 4791 9.7),
//! judged against an event's iCalendar text ([`event_matches`]).

use jiff::Timestamp;

use super::xml::{CardFilter, EventPropFilter, PropFilter, TextMatch};

/// The values of property `name` (upper case) in an unfolded vCard `text`, groups ignored.
fn values<'a>(text: &'a str, name: &str) -> Vec<&'a str> {
    text.split("\r\n")
        .filter_map(|line| {
            let (head, value) = line.split_once(':')?;
            let prop = head.split(';').next()?;
            let prop = prop.rsplit('.').next()?;
            prop.eq_ignore_ascii_case(name).then_some(value)
        })
        .collect()
}

fn text_matches(m: &TextMatch, value: &str) -> bool {
    let (value, wanted) =
        if m.octet { (value.to_string(), m.text.clone()) } else { (value.to_lowercase(), m.text.to_lowercase()) };
    let hit = match m.match_type.as_str() {
        "equals" => value == wanted,
        "starts-with" => value.starts_with(&wanted),
        "ends-with" => value.ends_with(&wanted),
        _ => value.contains(&wanted),
    };
    hit != m.negate
}

fn prop_matches(filter: &PropFilter, text: &str) -> bool {
    let found = values(text, &filter.name);
    if filter.is_not_defined {
        return found.is_empty();
    }
    if found.is_empty() {
        return false;
    }
    if filter.matches.is_empty() {
        return true;
    }
    let one = |m: &TextMatch| found.iter().any(|v| text_matches(m, v));
    if filter.all { filter.matches.iter().all(one) } else { filter.matches.iter().any(one) }
}

/// Whether the card `text` (vCard, CRLF line ends, folded) passes `filter`.
pub fn matches(filter: &CardFilter, text: &str) -> bool {
    let unfolded = text.replace("\r\n ", "").replace("\r\n\t", "");
    let one = |p: &PropFilter| prop_matches(p, &unfolded);
    if filter.all { filter.props.iter().all(one) } else { filter.props.iter().any(one) }
}

/// Whether the calendar object `text` passes a calendar-query's property filters (each holds of
/// one of its `VEVENT`s: the series or an edited occurrence) and, when asked, has an alarm going
/// off in `alarm` (`[start, end)`, either open).
pub fn event_matches(
    text: &str,
    props: &[EventPropFilter],
    alarm: Option<(Option<Timestamp>, Option<Timestamp>)>,
) -> bool {
    if !props.is_empty() {
        let components = mycorrhizal_codecs::ical::event_properties(text);
        let holds = |component: &Vec<(String, String)>| {
            props.iter().all(|filter| {
                let values: Vec<&str> =
                    component.iter().filter(|(name, _)| *name == filter.name).map(|(_, v)| v.as_str()).collect();
                match (&filter.text, filter.defined) {
                    (_, false) => values.is_empty(),
                    (None, true) => !values.is_empty(),
                    (Some(m), true) => values.iter().any(|v| text_matches(m, v)),
                }
            })
        };
        if !components.iter().any(holds) {
            return false;
        }
    }
    match alarm {
        None => true,
        Some((start, end)) => mycorrhizal_codecs::ical::alarm_times(text)
            .iter()
            .any(|at| start.is_none_or(|s| *at >= s.as_second()) && end.is_none_or(|e| *at < e.as_second())),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn filter(name: &str, text: &str, match_type: &str) -> CardFilter {
        let m = TextMatch { text: text.into(), match_type: match_type.into(), octet: false, negate: false };
        CardFilter {
            all: false,
            props: vec![PropFilter { name: name.into(), all: false, is_not_defined: false, matches: vec![m] }],
        }
    }

    #[test]
    fn text_matches_fold_case_and_honour_the_match_type() {
        let card =
            "BEGIN:VCARD\r\nVERSION:4.0\r\nFN:Ada Lovelace\r\nitem1.EMAIL;TYPE=work:ada@example.org\r\nEND:VCARD\r\n";
        assert!(matches(&filter("FN", "lovelace", "contains"), card));
        assert!(matches(&filter("FN", "ada", "starts-with"), card));
        assert!(!matches(&filter("FN", "ada", "equals"), card));
        assert!(matches(&filter("EMAIL", "example.org", "ends-with"), card));
        assert!(!matches(&filter("TEL", "1", "contains"), card));
    }
}
