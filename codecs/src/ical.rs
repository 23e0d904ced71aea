//! iCalendar out (RFC 5545): one `VEVENT` in a `VCALENDAR`, written through calcard's iCalendar
//! types and writer (the same crate as the vCards), so escaping and folding are its. What an
//! event of the CRM is (an activity, a life event, a birthday) is decided by the server's domain
//! layer; this module only writes the [`Event`] it is given.

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

fn date_time(at: &Utc) -> PartialDateTime {
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

fn date(day: &Day) -> PartialDateTime {
    PartialDateTime { year: Some(day.year), month: Some(day.month), day: Some(day.day), ..Default::default() }
}

fn entry(name: ICalendarProperty, value: ICalendarValue) -> ICalendarEntry {
    ICalendarEntry { name, params: Vec::new(), values: vec![value] }
}

fn text(name: ICalendarProperty, value: &str) -> ICalendarEntry {
    entry(name, ICalendarValue::Text(value.to_string()))
}

fn at(name: ICalendarProperty, value: PartialDateTime, all_day: bool) -> ICalendarEntry {
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
        at(ICalendarProperty::Dtstamp, date_time(&event.stamp), false),
        text(ICalendarProperty::Summary, &event.summary),
    ];
    match &event.when {
        When::Timed { start, end } => {
            entries.push(at(ICalendarProperty::Dtstart, date_time(start), false));
            entries.push(at(ICalendarProperty::Dtend, date_time(end), false));
        }
        When::Yearly { first, next_day, leap_day } => {
            entries.push(at(ICalendarProperty::Dtstart, date(first), true));
            entries.push(at(ICalendarProperty::Dtend, date(next_day), true));
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
            entries.push(at(ICalendarProperty::Dtstart, date(day), true));
            entries.push(at(ICalendarProperty::Dtend, date(next_day), true));
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

/// When an incoming event starts, as written.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Start {
    /// A UTC date-time (`...Z`).
    Utc(Utc),
    /// A wall-clock date-time in zone `tzid` (`None`: floating).
    Local { at: Utc, tzid: Option<String> },
    /// A date (all day).
    Date(Day),
}

/// What the server reads back from a client's event: its text and when it starts.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Incoming {
    /// The event's `UID` (empty when it has none).
    pub uid: String,
    pub summary: String,
    pub description: String,
    pub location: String,
    pub start: Start,
}

/// Reads the first `VEVENT` of an iCalendar object; `Err` says why not (CalDAV's
/// `valid-calendar-data`).
pub fn read_event(text: &str) -> Result<Incoming, String> {
    let calendar = ICalendar::parse(text).map_err(|e| format!("not a readable iCalendar object ({e:?})"))?;
    let event = calendar
        .components
        .iter()
        .find(|c| c.component_type == ICalendarComponentType::VEvent)
        .ok_or("the object holds no VEVENT")?;
    let find = |name: ICalendarProperty| event.entries.iter().find(|e| e.name == name);
    let text_of = |name: ICalendarProperty| {
        find(name).and_then(|e| e.values.first()).and_then(|v| v.as_text()).unwrap_or_default().to_string()
    };
    let start = find(ICalendarProperty::Dtstart).ok_or("the event has no DTSTART")?;
    let at = start.values.first().and_then(|v| v.as_partial_date_time()).ok_or("DTSTART is not a date")?;
    let (Some(year), Some(month), Some(day)) = (at.year, at.month, at.day) else {
        return Err("DTSTART is not a whole date".into());
    };
    let day = Day { year, month, day };
    let start = match (at.hour, at.minute) {
        (None, _) => Start::Date(day),
        (Some(hour), minute) => {
            let utc = Utc { day, hour, minute: minute.unwrap_or(0), second: at.second.unwrap_or(0) };
            let tzid = start
                .params
                .iter()
                .find(|p| p.name == ICalendarParameterName::Tzid)
                .and_then(|p| p.value.as_text())
                .map(str::to_string);
            if at.tz_hour.is_some() && tzid.is_none() { Start::Utc(utc) } else { Start::Local { at: utc, tzid } }
        }
    };
    Ok(Incoming {
        uid: text_of(ICalendarProperty::Uid).trim().to_string(),
        summary: text_of(ICalendarProperty::Summary),
        description: text_of(ICalendarProperty::Description),
        location: text_of(ICalendarProperty::Location),
        start,
    })
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

    #[test]
    fn an_event_reads_back_its_text_and_start() {
        let event = Event {
            uid: "a".into(),
            summary: "Lunch, late".into(),
            description: "x".into(),
            location: "Lyon".into(),
            categories: vec![],
            when: When::Timed { start: utc(2026, 3, 4, 12), end: utc(2026, 3, 4, 13) },
            stamp: utc(2026, 3, 1, 9),
        };
        let read = read_event(&write(&event)).expect("read");
        assert_eq!((read.summary.as_str(), read.location.as_str()), ("Lunch, late", "Lyon"));
        assert_eq!(read.start, Start::Utc(utc(2026, 3, 4, 12)));
        let local = "BEGIN:VCALENDAR\r\nVERSION:2.0\r\nBEGIN:VEVENT\r\nUID:x\r\nDTSTART;TZID=Europe/Paris:20260304T130000\r\nSUMMARY:Dinner\r\nEND:VEVENT\r\nEND:VCALENDAR\r\n";
        let read = read_event(local).expect("read");
        assert_eq!(read.start, Start::Local { at: utc(2026, 3, 4, 13), tzid: Some("Europe/Paris".into()) });
        assert_eq!(read.uid, "x");
        let tricky =
            Event { summary: "a\\b;c,d\ne ünï 🍄".into(), description: " lead and trail ".into(), ..event.clone() };
        let read = read_event(&write(&tricky)).expect("read");
        assert_eq!((read.summary.as_str(), read.description.as_str()), ("a\\b;c,d\ne ünï 🍄", " lead and trail "));
        assert!(read_event("BEGIN:VCALENDAR\r\nEND:VCALENDAR\r\n").is_err());
        assert!(read_event("nonsense").is_err());
    }
}
