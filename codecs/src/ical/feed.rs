//! A subscribed calendar's objects (read in, never stored as they are): their occurrences in a
//! window, recurrences expanded, for the subscription's activities.

use calcard::icalendar::{ICalendar, ICalendarComponentType, ICalendarProperty, ICalendarValue};

use super::{MAX_INSTANCES, compact_utc};

/// One occurrence of an event of a calendar read in (a subscription): a single event, or one
/// instance of a recurring one (its exceptions applied, its cancelled instances left out).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Occurrence {
    pub uid: String,
    /// Empty for an event that does not recur; else the instance's start (`YYYYMMDDTHHMMSSZ`).
    pub instance: String,
    /// Seconds since the epoch, UTC (an all-day or floating time is read in UTC).
    pub start: i64,
    pub all_day: bool,
    pub summary: String,
    pub description: String,
    pub location: String,
    /// The addresses the event names: attendees, the organizer and `X-` properties holding an
    /// email address, lower-cased.
    pub emails: Vec<String>,
}

/// The occurrences of every `VEVENT` of an iCalendar object that start in `[from, to]` (seconds
/// since the epoch), recurring events expanded (their `EXDATE`s and overridden instances
/// applied); `Err` says why the object cannot be read.
pub fn occurrences(text: &str, from: i64, to: i64) -> Result<Vec<Occurrence>, String> {
    let calendar = ICalendar::parse(text).map_err(|e| format!("not a readable iCalendar object ({e:?})"))?;
    let expanded = calendar.expand_dates(calcard::common::timezone::Tz::UTC, MAX_INSTANCES);
    let mut out = Vec::new();
    for event in expanded.events {
        let Some(component) = calendar.components.get(event.comp_id as usize) else { continue };
        if component.component_type != ICalendarComponentType::VEvent {
            continue;
        }
        let start = event.start.timestamp();
        if start < from || start > to {
            continue;
        }
        let find = |name: &ICalendarProperty| component.entries.iter().find(|e| &e.name == name);
        let text_of = |name: ICalendarProperty| {
            find(&name).and_then(|e| e.values.first()).and_then(value_text).unwrap_or_default().to_string()
        };
        let cancelled = find(&ICalendarProperty::Status)
            .and_then(|e| e.values.first())
            .is_some_and(|v| matches!(v, ICalendarValue::Status(calcard::icalendar::ICalendarStatus::Cancelled)));
        if cancelled {
            continue;
        }
        let recurs = find(&ICalendarProperty::Rrule).is_some() || find(&ICalendarProperty::RecurrenceId).is_some();
        let all_day = find(&ICalendarProperty::Dtstart)
            .and_then(|e| e.values.first())
            .and_then(|v| v.as_partial_date_time())
            .is_some_and(|d| d.hour.is_none());
        let mut emails: Vec<String> = Vec::new();
        for entry in &component.entries {
            let named = matches!(entry.name, ICalendarProperty::Attendee | ICalendarProperty::Organizer)
                || matches!(&entry.name, ICalendarProperty::Other(n) if n.to_ascii_uppercase().starts_with("X-"));
            if !named {
                continue;
            }
            for value in &entry.values {
                if let Some(address) = value_text(value).and_then(email_in) {
                    if !emails.contains(&address) {
                        emails.push(address);
                    }
                }
            }
        }
        out.push(Occurrence {
            uid: text_of(ICalendarProperty::Uid).trim().to_string(),
            instance: if recurs { compact_utc(start) } else { String::new() },
            start,
            all_day,
            summary: text_of(ICalendarProperty::Summary),
            description: text_of(ICalendarProperty::Description),
            location: text_of(ICalendarProperty::Location),
            emails,
        });
    }
    out.sort_by(|a, b| (a.start, &a.uid).cmp(&(b.start, &b.uid)));
    Ok(out)
}

fn value_text(value: &ICalendarValue) -> Option<&str> {
    match value {
        ICalendarValue::Text(s) => Some(s),
        ICalendarValue::Uri(calcard::icalendar::Uri::Location(s)) => Some(s),
        _ => None,
    }
}

/// The email address in `mailto:x@y` or a bare `x@y`, lower-cased.
fn email_in(value: &str) -> Option<String> {
    let value = value.trim();
    let address = value.strip_prefix("mailto:").or_else(|| value.strip_prefix("MAILTO:")).unwrap_or(value);
    let (local, domain) = address.split_once('@')?;
    let ok = !local.is_empty() && domain.contains('.') && !address.contains(char::is_whitespace);
    ok.then(|| address.to_ascii_lowercase())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_recurring_event_expands_inside_the_window_with_its_exception_and_cancellation() {
        let text = "BEGIN:VCALENDAR\r\nVERSION:2.0\r\nBEGIN:VEVENT\r\nUID:weekly\r\nDTSTART:20261201T100000Z\r\n\
DTEND:20261201T110000Z\r\nRRULE:FREQ=WEEKLY;COUNT=4\r\nEXDATE:20261215T100000Z\r\nSUMMARY:Standup\r\n\
ATTENDEE;CN=Ann:mailto:Ann@Example.org\r\nX-CONTACT:bo@example.org\r\nEND:VEVENT\r\nBEGIN:VEVENT\r\nUID:weekly\r\n\
RECURRENCE-ID:20261208T100000Z\r\nDTSTART:20261208T150000Z\r\nDTEND:20261208T160000Z\r\nSUMMARY:Standup (moved)\r\n\
END:VEVENT\r\nBEGIN:VEVENT\r\nUID:gone\r\nDTSTART:20261203T100000Z\r\nSTATUS:CANCELLED\r\nSUMMARY:No\r\nEND:VEVENT\r\n\
BEGIN:VEVENT\r\nUID:day\r\nDTSTART;VALUE=DATE:20261225\r\nSUMMARY:Holiday\r\nEND:VEVENT\r\nEND:VCALENDAR\r\n";
        let all = occurrences(text, 0, i64::MAX).expect("read");
        let seen: Vec<(&str, &str, &str)> =
            all.iter().map(|o| (o.uid.as_str(), o.instance.as_str(), o.summary.as_str())).collect();
        assert_eq!(
            seen,
            [
                ("weekly", "20261201T100000Z", "Standup"),
                ("weekly", "20261208T150000Z", "Standup (moved)"),
                ("weekly", "20261222T100000Z", "Standup"),
                ("day", "", "Holiday"),
            ],
            "{all:?}"
        );
        assert_eq!(all[0].emails, ["ann@example.org", "bo@example.org"]);
        assert!(all[3].all_day);
        let december_20 = 1_797_724_800; // 2026-12-20T00:00:00Z
        let later = occurrences(text, december_20, i64::MAX).expect("read");
        assert_eq!(later.len(), 2, "the window leaves the first two out: {later:?}");
        assert_eq!(compact_utc(december_20), "20261220T000000Z");
        assert!(occurrences("nonsense", 0, 1).is_err());
    }
}
