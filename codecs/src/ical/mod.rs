//! iCalendar (RFC 5545) through calcard's types, parser, writer and recurrence expansion (the
//! same crate as the vCards), so escaping and folding are its. This file writes the CRM's events
//! (one `VEVENT` per [`Event`]; what an event of the CRM is, an activity, a life event, a
//! birthday, is decided by the server's domain layer); `client` reads, expands, queries and
//! patches the object a calendar client stored; `feed` reads a subscribed calendar's
//! occurrences.

mod client;
mod feed;

pub use client::{
    Incoming, Instance, Patch, Start, alarm_times, event_properties, expanded, free_busy, instances, patch, read_event,
};
pub use feed::{Occurrence, occurrences};

use calcard::common::PartialDateTime;
use calcard::icalendar::{
    ICalendar, ICalendarComponent, ICalendarComponentType, ICalendarEntry, ICalendarFrequency, ICalendarParameter,
    ICalendarParameterName, ICalendarParameterValue, ICalendarProperty, ICalendarRecurrenceRule, ICalendarTransparency,
    ICalendarValue, ICalendarValueType,
};

/// A calendar date.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Day {
    pub year: u16,
    pub month: u8,
    pub day: u8,
}

/// An instant in UTC, to the second.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Utc {
    pub day: Day,
    pub hour: u8,
    pub minute: u8,
    pub second: u8,
}

/// When an event happens.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum When {
    /// From `start` to `end`.
    Timed { start: Utc, end: Utc },
    /// All day on `first`, every year from then. `leap_day`: a 29 February date, which falls on
    /// 1 March in other years (written as the year's 60th day, which is exactly that).
    Yearly { first: Day, next_day: Day, leap_day: bool },
    /// All day on `day`, once.
    Day { day: Day, next_day: Day },
}

/// One event.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Event {
    pub uid: String,
    pub summary: String,
    pub description: String,
    pub location: String,
    pub categories: Vec<String>,
    pub when: When,
    /// When the event was last changed (`DTSTAMP`).
    pub stamp: Utc,
}

pub(crate) fn date_time(at: &Utc) -> PartialDateTime {
    PartialDateTime {
        year: Some(at.day.year),
        month: Some(at.day.month),
        day: Some(at.day.day),
        hour: Some(at.hour),
        minute: Some(at.minute),
        second: Some(at.second),
        tz_hour: Some(0),
        tz_minute: Some(0),
        tz_minus: false,
    }
}

pub(crate) fn date(day: &Day) -> PartialDateTime {
    PartialDateTime { year: Some(day.year), month: Some(day.month), day: Some(day.day), ..Default::default() }
}

pub(crate) fn entry(name: ICalendarProperty, value: ICalendarValue) -> ICalendarEntry {
    ICalendarEntry { name, params: Vec::new(), values: vec![value] }
}

pub(crate) fn text(name: ICalendarProperty, value: &str) -> ICalendarEntry {
    entry(name, ICalendarValue::Text(value.to_string()))
}

pub(crate) fn at_value(name: ICalendarProperty, value: PartialDateTime, all_day: bool) -> ICalendarEntry {
    let mut e = entry(name, ICalendarValue::PartialDateTime(Box::new(value)));
    if all_day {
        e.params.push(ICalendarParameter {
            name: ICalendarParameterName::Value,
            value: ICalendarParameterValue::Value(ICalendarValueType::Date),
        });
    }
    e
}

/// The event as an iCalendar object (CRLF line ends, folded).
pub fn write(event: &Event) -> String {
    write_all(std::slice::from_ref(event))
}

/// Events as one iCalendar object (a subscription feed).
pub fn write_all(events: &[Event]) -> String {
    let mut components = vec![ICalendarComponent {
        component_type: ICalendarComponentType::VCalendar,
        entries: vec![
            text(ICalendarProperty::Version, "2.0"),
            text(ICalendarProperty::Prodid, "-//Mycorrhizal//Mycorrhizal//EN"),
        ],
        component_ids: (1..=events.len() as u32).collect(),
    }];
    components.extend(events.iter().map(|event| ICalendarComponent {
        component_type: ICalendarComponentType::VEvent,
        entries: entries(event),
        component_ids: Vec::new(),
    }));
    ICalendar { components }.to_string()
}

fn entries(event: &Event) -> Vec<ICalendarEntry> {
    let mut entries = vec![
        text(ICalendarProperty::Uid, &event.uid),
        at_value(ICalendarProperty::Dtstamp, date_time(&event.stamp), false),
        text(ICalendarProperty::Summary, &event.summary),
    ];
    match &event.when {
        When::Timed { start, end } => {
            entries.push(at_value(ICalendarProperty::Dtstart, date_time(start), false));
            entries.push(at_value(ICalendarProperty::Dtend, date_time(end), false));
        }
        When::Yearly { first, next_day, leap_day } => {
            entries.push(at_value(ICalendarProperty::Dtstart, date(first), true));
            entries.push(at_value(ICalendarProperty::Dtend, date(next_day), true));
            let rule = ICalendarRecurrenceRule {
                freq: ICalendarFrequency::Yearly,
                byyearday: if *leap_day { vec![60] } else { Vec::new() },
                ..Default::default()
            };
            entries.push(entry(ICalendarProperty::Rrule, ICalendarValue::RecurrenceRule(Box::new(rule))));
            entries.push(entry(
                ICalendarProperty::Transp,
                ICalendarValue::Transparency(ICalendarTransparency::Transparent),
            ));
        }
        When::Day { day, next_day } => {
            entries.push(at_value(ICalendarProperty::Dtstart, date(day), true));
            entries.push(at_value(ICalendarProperty::Dtend, date(next_day), true));
        }
    }
    if !event.description.is_empty() {
        entries.push(text(ICalendarProperty::Description, &event.description));
    }
    if !event.location.is_empty() {
        entries.push(text(ICalendarProperty::Location, &event.location));
    }
    if !event.categories.is_empty() {
        let values = event.categories.iter().map(|c| ICalendarValue::Text(c.clone())).collect();
        entries.push(ICalendarEntry { name: ICalendarProperty::Categories, params: Vec::new(), values });
    }
    entries
}

/// Most instances expanded from one recurring event.
pub const MAX_INSTANCES: usize = 20_000;

/// `seconds` since the epoch as the codecs' UTC date-time.
pub(crate) fn utc_of_seconds(seconds: i64) -> Utc {
    let compact = compact_utc(seconds);
    let n = |range: std::ops::Range<usize>| compact[range].parse::<u16>().unwrap_or(0);
    Utc {
        day: Day { year: n(0..4), month: n(4..6) as u8, day: n(6..8) as u8 },
        hour: n(9..11) as u8,
        minute: n(11..13) as u8,
        second: n(13..15) as u8,
    }
}

/// `seconds` since the epoch as `YYYYMMDDTHHMMSSZ`.
pub(crate) fn compact_utc(seconds: i64) -> String {
    let days = seconds.div_euclid(86_400);
    let secs = seconds.rem_euclid(86_400);
    // Civil from days (Howard Hinnant's algorithm).
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    format!("{year:04}{month:02}{day:02}T{:02}{:02}{:02}Z", secs / 3600, secs % 3600 / 60, secs % 60)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn utc(year: u16, month: u8, day: u8, hour: u8) -> Utc {
        Utc { day: Day { year, month, day }, hour, minute: 0, second: 0 }
    }

    #[test]
    fn a_timed_event_is_written_in_utc_with_its_text_escaped() {
        let event = Event {
            uid: "activity-1@mycorrhizal".into(),
            summary: "Lunch; with Ada, Grace".into(),
            description: "Line one\nline two".into(),
            location: String::new(),
            categories: vec![],
            when: When::Timed { start: utc(2026, 3, 4, 12), end: utc(2026, 3, 4, 13) },
            stamp: utc(2026, 3, 1, 9),
        };
        let text = write(&event);
        assert!(text.starts_with("BEGIN:VCALENDAR\r\n"), "{text}");
        assert!(text.contains("DTSTART:20260304T120000Z\r\n"), "{text}");
        assert!(text.contains("SUMMARY:Lunch\\; with Ada\\, Grace\r\n"), "{text}");
        assert!(text.contains("DESCRIPTION:Line one\\nline two\r\n"), "{text}");
        assert!(text.ends_with("END:VEVENT\r\nEND:VCALENDAR\r\n"), "{text}");
    }

    #[test]
    fn a_leap_day_recurs_on_the_sixtieth_day_of_the_year() {
        let event = Event {
            uid: "b".into(),
            summary: "Birthday".into(),
            description: String::new(),
            location: String::new(),
            categories: vec!["birthday".into()],
            when: When::Yearly {
                first: Day { year: 2000, month: 2, day: 29 },
                next_day: Day { year: 2000, month: 3, day: 1 },
                leap_day: true,
            },
            stamp: utc(2026, 3, 1, 9),
        };
        let text = write(&event);
        assert!(text.contains("DTSTART;VALUE=DATE:20000229\r\n"), "{text}");
        assert!(text.contains("RRULE:FREQ=YEARLY;BYYEARDAY=60\r\n"), "{text}");
        let both = write_all(&[event.clone(), event]);
        assert_eq!(both.matches("BEGIN:VEVENT").count(), 2, "{both}");
        assert_eq!(both.matches("BEGIN:VCALENDAR").count(), 1, "{both}");
    }
}
