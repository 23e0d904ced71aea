//! A calendar client's own object (what two-way CalDAV stores and serves back whole): read for
//! the CRM's fields ([`read_event`]), its occurrences expanded for time ranges and free-busy,
//! its properties and alarms for a calendar-query's filters, written out expanded for
//! calendar-data's `expand`, and patched with what the CRM changed.

use calcard::icalendar::{
    ICalendar, ICalendarComponent, ICalendarComponentType, ICalendarParameterName, ICalendarProperty,
    ICalendarTransparency, ICalendarValue,
};

use super::{Day, MAX_INSTANCES, Utc, at_value, compact_utc, date, date_time, entry, text, utc_of_seconds};

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
    /// When the event first happens, in seconds since the epoch, as its own time zone
    /// definitions (`VTIMEZONE`, Windows zone names) place it; `None` when it cannot be placed.
    pub at: Option<i64>,
}

/// The occurrences of `calendar`'s components (calcard's expansion, at most `limit`). An edited
/// occurrence replaces its series' instance by `RECURRENCE-ID` whatever their `SEQUENCE`s
/// (RFC 5545 matches them by UID and `RECURRENCE-ID`; calcard's expansion also wants equal
/// sequences, which a client that edits one occurrence seldom writes), so the expansion reads
/// a copy without them. One object holds one event's components (CalDAV's rule).
fn expand(calendar: &ICalendar, limit: usize) -> calcard::icalendar::dates::CalendarExpand {
    let mut plain = calendar.clone();
    for component in &mut plain.components {
        component.entries.retain(|e| e.name != ICalendarProperty::Sequence);
    }
    plain.expand_dates(calcard::common::timezone::Tz::UTC, limit)
}

/// The index of an object's main `VEVENT`: the first without a `RECURRENCE-ID` (the series, not
/// one of its edited occurrences), else the first.
fn master(calendar: &ICalendar) -> Option<usize> {
    let events =
        || calendar.components.iter().enumerate().filter(|(_, c)| c.component_type == ICalendarComponentType::VEvent);
    events()
        .find(|(_, c)| !c.entries.iter().any(|e| e.name == ICalendarProperty::RecurrenceId))
        .or_else(|| events().next())
        .map(|(at, _)| at)
}

/// Reads the main `VEVENT` of an iCalendar object ([`master`]); `Err` says why not (CalDAV's
/// `valid-calendar-data`). Only VEVENTs: an object of tasks or journals is refused.
pub fn read_event(text: &str) -> Result<Incoming, String> {
    let calendar = ICalendar::parse(text).map_err(|e| format!("not a readable iCalendar object ({e:?})"))?;
    let kinds = calendar.components.iter().map(|c| &c.component_type);
    if kinds.clone().any(|k| matches!(k, ICalendarComponentType::VTodo | ICalendarComponentType::VJournal)) {
        return Err("this calendar holds events (VEVENT) only".into());
    }
    let main = master(&calendar).ok_or("the object holds no VEVENT")?;
    let event = &calendar.components[main];
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
    let at =
        expand(&calendar, 64).events.iter().filter(|e| e.comp_id as usize == main).map(|e| e.start.timestamp()).min();
    Ok(Incoming {
        uid: text_of(ICalendarProperty::Uid).trim().to_string(),
        summary: text_of(ICalendarProperty::Summary),
        description: text_of(ICalendarProperty::Description),
        location: text_of(ICalendarProperty::Location),
        start,
        at,
    })
}

/// One occurrence of an object's events, as a time range and a free-busy query read it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Instance {
    /// Seconds since the epoch, UTC (an all-day or floating time read in UTC).
    pub start: i64,
    pub end: i64,
    /// `TRANSP:TRANSPARENT`: the time stays free.
    pub transparent: bool,
    /// `STATUS:CANCELLED`.
    pub cancelled: bool,
}

/// Every occurrence of every `VEVENT` of an iCalendar object (recurrences expanded, their
/// `EXDATE`s and edited occurrences applied, at most [`MAX_INSTANCES`]), in time order; nothing
/// when it cannot be read.
pub fn instances(text: &str) -> Vec<Instance> {
    let Ok(calendar) = ICalendar::parse(text) else { return Vec::new() };
    let expanded = expand(&calendar, MAX_INSTANCES);
    let mut out: Vec<Instance> = expanded
        .events
        .iter()
        .filter_map(|event| {
            let component = calendar.components.get(event.comp_id as usize)?;
            if component.component_type != ICalendarComponentType::VEvent {
                return None;
            }
            let value = |name: ICalendarProperty| {
                component.entries.iter().find(|e| e.name == name).and_then(|e| e.values.first())
            };
            let transparent = value(ICalendarProperty::Transp)
                .is_some_and(|v| matches!(v, ICalendarValue::Transparency(ICalendarTransparency::Transparent)));
            let cancelled = value(ICalendarProperty::Status)
                .is_some_and(|v| matches!(v, ICalendarValue::Status(calcard::icalendar::ICalendarStatus::Cancelled)));
            let (start, end) = event.timestamps();
            Some(Instance { start, end: end.max(start), transparent, cancelled })
        })
        .collect();
    out.sort_by_key(|i| (i.start, i.end));
    out
}

/// The properties of each `VEVENT` of an iCalendar object, as (upper-case name, value) pairs in
/// order: lines unfolded, a `TEXT` value's escapes read (`\\,` `\\;` `\\n` `\\\\`), the
/// properties of components inside it (its alarms) left out. What a calendar-query's property
/// filters read.
pub fn event_properties(text: &str) -> Vec<Vec<(String, String)>> {
    let mut out = Vec::new();
    let mut depth = 0usize;
    let mut current: Option<Vec<(String, String)>> = None;
    for line in unfolded(text) {
        let (name, value) = split_line(&line);
        match (name.as_str(), value.to_ascii_uppercase().as_str()) {
            ("BEGIN", "VEVENT") if current.is_none() => {
                current = Some(Vec::new());
                depth = 0;
            }
            ("BEGIN", _) if current.is_some() => depth += 1,
            ("END", "VEVENT") if depth == 0 => out.extend(current.take()),
            ("END", _) if current.is_some() => depth = depth.saturating_sub(1),
            _ => {
                if let (Some(props), 0) = (current.as_mut(), depth) {
                    props.push((name, unescape(&value)));
                }
            }
        }
    }
    out
}

/// Lines with their folds (a line end then a space or tab) joined.
fn unfolded(text: &str) -> Vec<String> {
    let mut lines: Vec<String> = Vec::new();
    for raw in text.split('\n') {
        let raw = raw.strip_suffix('\r').unwrap_or(raw);
        match (raw.strip_prefix([' ', '\t']), lines.last_mut()) {
            (Some(rest), Some(last)) => last.push_str(rest),
            _ if raw.is_empty() => {}
            _ => lines.push(raw.to_string()),
        }
    }
    lines
}

/// A content line's upper-case name (parameters left off) and its value (after the first colon
/// outside a quoted parameter value).
fn split_line(line: &str) -> (String, String) {
    let mut quoted = false;
    for (at, c) in line.char_indices() {
        match c {
            '"' => quoted = !quoted,
            ':' if !quoted => {
                let head = &line[..at];
                let name = head.split(';').next().unwrap_or(head).trim().to_ascii_uppercase();
                return (name, line[at + 1..].to_string());
            }
            _ => {}
        }
    }
    (line.trim().to_ascii_uppercase(), String::new())
}

fn unescape(value: &str) -> String {
    let mut out = String::with_capacity(value.len());
    let mut chars = value.chars();
    while let Some(c) = chars.next() {
        if c != '\\' {
            out.push(c);
            continue;
        }
        match chars.next() {
            Some('n' | 'N') => out.push('\n'),
            Some(other) => out.push(other),
            None => out.push('\\'),
        }
    }
    out
}

/// When the alarms of an object's events go off, in seconds since the epoch: each `VALARM`'s
/// `TRIGGER` of its event (a duration from its start, or from its end with `RELATED=END`, or a
/// date-time), for every occurrence of the event (recurrences expanded, at most
/// [`MAX_INSTANCES`]).
pub fn alarm_times(text: &str) -> Vec<i64> {
    let Ok(calendar) = ICalendar::parse(text) else { return Vec::new() };
    let expanded = expand(&calendar, MAX_INSTANCES);
    let mut out = Vec::new();
    for event in &expanded.events {
        let Some(component) = calendar.components.get(event.comp_id as usize) else { continue };
        if component.component_type != ICalendarComponentType::VEvent {
            continue;
        }
        let (start, end) = event.timestamps();
        for alarm in component.component_ids.iter().filter_map(|id| calendar.components.get(*id as usize)) {
            if alarm.component_type != ICalendarComponentType::VAlarm {
                continue;
            }
            let Some(trigger) = alarm.entries.iter().find(|e| e.name == ICalendarProperty::Trigger) else { continue };
            let from_end = trigger.params.iter().any(|p| {
                p.name == ICalendarParameterName::Related
                    && format!("{:?}", p.value).to_ascii_uppercase().contains("END")
            });
            match trigger.values.first() {
                Some(ICalendarValue::Duration(d)) => {
                    let seconds = d.to_time_delta().map(|t| t.num_seconds()).unwrap_or(0);
                    out.push(if from_end { end } else { start } + seconds);
                }
                Some(ICalendarValue::PartialDateTime(at)) => {
                    if let Some(at) =
                        at.to_date_time().and_then(|d| d.to_date_time_with_tz(calcard::common::timezone::Tz::UTC))
                    {
                        out.push(at.timestamp());
                    }
                }
                _ => {}
            }
        }
    }
    out.sort_unstable();
    out.dedup();
    out
}

/// The object `text` with its recurring events expanded into the occurrences that overlap
/// `[from, to)` (RFC 4791 9.6.5, a calendar-data `expand`): each occurrence its own `VEVENT`
/// with a `RECURRENCE-ID`, its times in UTC (an all-day one stays a date), without `RRULE`,
/// `RDATE` or `EXDATE`; its alarms, other properties and the object's time zone definitions
/// kept. An event that does not recur is kept when it overlaps. `text` as it is when it cannot
/// be read.
pub fn expanded(text: &str, from: i64, to: i64) -> String {
    let Ok(calendar) = ICalendar::parse(text) else { return text.to_string() };
    let Some(root) = calendar.components.first().filter(|c| c.component_type == ICalendarComponentType::VCalendar)
    else {
        return text.to_string();
    };
    let mut out = ICalendar { components: vec![ICalendarComponent { component_ids: Vec::new(), ..root.clone() }] };
    // Time zone definitions stay (an edited occurrence's RECURRENCE-ID may name one).
    for id in &root.component_ids {
        let Some(zone) = calendar.components.get(*id as usize) else { continue };
        if zone.component_type == ICalendarComponentType::VTimezone {
            let children: Vec<ICalendarComponent> =
                zone.component_ids.iter().filter_map(|c| calendar.components.get(*c as usize)).cloned().collect();
            let at = out.components.len() as u32;
            out.components[0].component_ids.push(at);
            out.components.push(ICalendarComponent {
                component_ids: (at + 1..at + 1 + children.len() as u32).collect(),
                ..zone.clone()
            });
            out.components.extend(children);
        }
    }
    let mut instances: Vec<(i64, i64, u32)> = expand(&calendar, MAX_INSTANCES)
        .events
        .iter()
        .map(|e| (e.timestamps(), e.comp_id))
        .map(|((s, e), c)| (s, e, c))
        .collect();
    instances.sort_unstable();
    for (start, end, comp_id) in instances {
        let overlaps = start < to && (end > from || (end == start && start >= from));
        let Some(component) = calendar.components.get(comp_id as usize) else { continue };
        if !overlaps || component.component_type != ICalendarComponentType::VEvent {
            continue;
        }
        let has = |name: ICalendarProperty| component.entries.iter().any(|e| e.name == name);
        let recurs =
            has(ICalendarProperty::Rrule) || has(ICalendarProperty::Rdate) || has(ICalendarProperty::RecurrenceId);
        let mut event = component.clone();
        if recurs {
            let all_day = component
                .entries
                .iter()
                .find(|e| e.name == ICalendarProperty::Dtstart)
                .and_then(|e| e.values.first())
                .and_then(|v| v.as_partial_date_time())
                .is_some_and(|d| d.hour.is_none());
            let when = |name: ICalendarProperty, at: i64| {
                let utc = utc_of_seconds(at);
                if all_day { at_value(name, date(&utc.day), true) } else { at_value(name, date_time(&utc), false) }
            };
            // An edited occurrence keeps its own; the series' occurrence is named by its start.
            let rid = match component.entries.iter().find(|e| e.name == ICalendarProperty::RecurrenceId) {
                Some(own) => own.clone(),
                None => when(ICalendarProperty::RecurrenceId, start),
            };
            event.entries.retain(|e| {
                !matches!(
                    e.name,
                    ICalendarProperty::Rrule
                        | ICalendarProperty::Rdate
                        | ICalendarProperty::Exdate
                        | ICalendarProperty::Dtstart
                        | ICalendarProperty::Dtend
                        | ICalendarProperty::Duration
                        | ICalendarProperty::RecurrenceId
                )
            });
            event.entries.push(when(ICalendarProperty::Dtstart, start));
            if end > start {
                event.entries.push(when(ICalendarProperty::Dtend, end));
            }
            event.entries.push(rid);
        }
        let alarms: Vec<ICalendarComponent> =
            component.component_ids.iter().filter_map(|id| calendar.components.get(*id as usize)).cloned().collect();
        let at = out.components.len() as u32;
        event.component_ids = (at + 1..at + 1 + alarms.len() as u32).collect();
        out.components[0].component_ids.push(at);
        out.components.push(event);
        out.components.extend(alarms);
    }
    out.to_string()
}

/// What the CRM changed of an event a calendar client wrote (`None`: left as it is).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Patch {
    pub summary: Option<String>,
    pub description: Option<String>,
    pub location: Option<String>,
    /// The new first start (seconds since the epoch); the end moves with it.
    pub start: Option<i64>,
}

/// `stored` with `patch` applied to its main `VEVENT` ([`master`]) and nothing else touched: its
/// alarms, attendees, recurrence, edited occurrences and every other property stay. A moved
/// start keeps the event's length (an all-day event stays all-day, on the new start's UTC date)
/// and raises `SEQUENCE`. `Err` when `text` cannot be read.
pub fn patch(stored: &str, patch: &Patch) -> Result<String, String> {
    let mut calendar = ICalendar::parse(stored).map_err(|e| format!("not a readable iCalendar object ({e:?})"))?;
    let main = master(&calendar).ok_or("the object holds no VEVENT")?;
    let span = expand(&calendar, 64).events.iter().filter(|e| e.comp_id as usize == main).map(|e| e.timestamps()).min();
    let entries = &mut calendar.components[main].entries;
    let mut set_text = |name: ICalendarProperty, value: &Option<String>| {
        let Some(value) = value else { return };
        entries.retain(|e| e.name != name);
        if !value.is_empty() {
            entries.push(text(name, value));
        }
    };
    set_text(ICalendarProperty::Summary, &patch.summary);
    set_text(ICalendarProperty::Description, &patch.description);
    set_text(ICalendarProperty::Location, &patch.location);
    if let Some(start) = patch.start {
        let all_day = entries
            .iter()
            .find(|e| e.name == ICalendarProperty::Dtstart)
            .and_then(|e| e.values.first())
            .and_then(|v| v.as_partial_date_time())
            .is_some_and(|d| d.hour.is_none());
        let length = span.map(|(s, e)| (e - s).max(0));
        let has_end = entries.iter().any(|e| e.name == ICalendarProperty::Dtend);
        entries.retain(|e| e.name != ICalendarProperty::Dtstart && e.name != ICalendarProperty::Dtend);
        let value = |at: i64| {
            let utc = utc_of_seconds(at);
            if all_day {
                at_value(ICalendarProperty::Dtstart, date(&utc.day), true)
            } else {
                at_value(ICalendarProperty::Dtstart, date_time(&utc), false)
            }
        };
        entries.push(value(start));
        if let (true, Some(length)) = (has_end, length) {
            let mut end = value(start + length);
            end.name = ICalendarProperty::Dtend;
            entries.push(end);
        }
        let sequence = entries
            .iter()
            .find(|e| e.name == ICalendarProperty::Sequence)
            .and_then(|e| e.values.first())
            .and_then(|v| v.as_integer())
            .unwrap_or(0);
        entries.retain(|e| e.name != ICalendarProperty::Sequence);
        entries.push(entry(ICalendarProperty::Sequence, ICalendarValue::Integer(sequence + 1)));
    }
    Ok(calendar.to_string())
}

/// A free-busy answer (RFC 4791 7.10): one `VFREEBUSY` over `[start, end)` stamped `stamp`,
/// with each busy period (merged where they overlap or touch) on its own `FREEBUSY` line. All
/// values are seconds since the epoch.
pub fn free_busy(start: i64, end: i64, stamp: i64, mut busy: Vec<(i64, i64)>) -> String {
    busy.sort_unstable();
    let mut merged: Vec<(i64, i64)> = Vec::new();
    for (s, e) in busy {
        match merged.last_mut() {
            Some(last) if s <= last.1 => last.1 = last.1.max(e),
            _ => merged.push((s, e)),
        }
    }
    let mut out =
        String::from("BEGIN:VCALENDAR\r\nVERSION:2.0\r\nPRODID:-//Mycorrhizal//Mycorrhizal//EN\r\nBEGIN:VFREEBUSY\r\n");
    out.push_str(&format!(
        "DTSTAMP:{}\r\nDTSTART:{}\r\nDTEND:{}\r\n",
        compact_utc(stamp),
        compact_utc(start),
        compact_utc(end)
    ));
    for (s, e) in merged {
        out.push_str(&format!("FREEBUSY;FBTYPE=BUSY:{}/{}\r\n", compact_utc(s), compact_utc(e)));
    }
    out.push_str("END:VFREEBUSY\r\nEND:VCALENDAR\r\n");
    out
}

#[cfg(test)]
mod tests {
    use super::super::{Event, When, write};
    use super::*;

    fn utc(year: u16, month: u8, day: u8, hour: u8) -> Utc {
        Utc { day: Day { year, month, day }, hour, minute: 0, second: 0 }
    }

    const SERIES: &str = "BEGIN:VCALENDAR\r\nVERSION:2.0\r\nPRODID:-//Test//EN\r\nBEGIN:VEVENT\r\nUID:s\r\n\
RECURRENCE-ID:20261208T100000Z\r\nDTSTART:20261208T150000Z\r\nDTEND:20261208T160000Z\r\nSUMMARY:Moved\r\nEND:VEVENT\r\n\
BEGIN:VEVENT\r\nUID:s\r\nDTSTART:20261201T100000Z\r\nDTEND:20261201T110000Z\r\nRRULE:FREQ=WEEKLY;COUNT=3\r\n\
SEQUENCE:4\r\nSUMMARY:Standup\r\nRELATED-TO:parent-1\r\nX-FERN:maidenhair\r\nBEGIN:VALARM\r\nACTION:DISPLAY\r\n\
DESCRIPTION:Soon\r\nTRIGGER:-PT15M\r\nEND:VALARM\r\nEND:VEVENT\r\nEND:VCALENDAR\r\n";

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

    #[test]
    fn the_series_is_read_not_its_edited_occurrence_and_tasks_are_refused() {
        let read = read_event(SERIES).expect("read");
        assert_eq!(read.summary, "Standup");
        assert_eq!(read.at, Some(1_796_119_200), "2026-12-01T10:00:00Z");
        let task =
            "BEGIN:VCALENDAR\r\nVERSION:2.0\r\nBEGIN:VTODO\r\nUID:t\r\nSUMMARY:x\r\nEND:VTODO\r\nEND:VCALENDAR\r\n";
        assert!(read_event(task).is_err());
    }

    #[test]
    fn instances_expand_the_series_with_its_edited_occurrence() {
        let all = instances(SERIES);
        let starts: Vec<String> = all.iter().map(|i| compact_utc(i.start)).collect();
        assert_eq!(starts, ["20261201T100000Z", "20261208T150000Z", "20261215T100000Z"]);
        assert!(all.iter().all(|i| i.end - i.start == 3600 && !i.transparent && !i.cancelled));
        assert!(instances("nonsense").is_empty());
    }

    #[test]
    fn a_patch_changes_what_it_names_and_keeps_the_rest() {
        let same = patch(SERIES, &Patch::default()).expect("patch");
        for kept in ["TRIGGER:-PT15M", "RELATED-TO:parent-1", "X-FERN:maidenhair", "RECURRENCE-ID:20261208T100000Z"] {
            assert!(same.contains(kept), "{kept}: {same}");
        }
        let moved = Patch {
            summary: Some("Standup, later".into()),
            location: Some("Room 2".into()),
            start: Some(1_796_122_800), // 11:00
            ..Patch::default()
        };
        let text = patch(SERIES, &moved).expect("patch");
        assert!(text.contains("SUMMARY:Standup\\, later\r\n"), "{text}");
        assert!(text.contains("DTSTART:20261201T110000Z\r\n") && text.contains("DTEND:20261201T120000Z\r\n"), "{text}");
        assert!(text.contains("SEQUENCE:5\r\n") && text.contains("LOCATION:Room 2"), "{text}");
        assert!(text.contains("SUMMARY:Moved") && text.contains("TRIGGER:-PT15M") && text.contains("RRULE:"), "{text}");
        let read = read_event(&text).expect("read");
        assert_eq!((read.summary.as_str(), read.at), ("Standup, later", Some(1_796_122_800)));
        let day = "BEGIN:VCALENDAR\r\nVERSION:2.0\r\nBEGIN:VEVENT\r\nUID:d\r\nDTSTART;VALUE=DATE:20261224\r\nDTEND;VALUE=DATE:20261226\r\nSUMMARY:Away\r\nEND:VEVENT\r\nEND:VCALENDAR\r\n";
        let text = patch(day, &Patch { start: Some(1_798_243_200), ..Patch::default() }).expect("patch"); // 2026-12-26
        assert!(
            text.contains("DTSTART;VALUE=DATE:20261226\r\n") && text.contains("DTEND;VALUE=DATE:20261228\r\n"),
            "{text}"
        );
        assert!(patch("nonsense", &Patch::default()).is_err());
    }

    #[test]
    fn an_expanded_series_is_its_occurrences_in_the_window() {
        let text = expanded(SERIES, 1_796_119_200 + 3600, 1_796_119_200 + 15 * 86_400); // after the first
        assert_eq!(text.matches("BEGIN:VEVENT").count(), 2, "{text}");
        assert!(!text.contains("RRULE"), "{text}");
        assert!(text.contains("DTSTART:20261208T150000Z") && text.contains("RECURRENCE-ID:20261208T100000Z"), "{text}");
        assert!(text.contains("DTSTART:20261215T100000Z") && text.contains("RECURRENCE-ID:20261215T100000Z"), "{text}");
        assert_eq!(text.matches("BEGIN:VALARM").count(), 1, "the series' alarm goes with its occurrence: {text}");
        assert!(ICalendar::parse(&text).is_ok());
        let none = expanded(SERIES, 0, 1);
        assert_eq!(none.matches("BEGIN:VEVENT").count(), 0, "{none}");
    }

    #[test]
    fn free_busy_merges_what_overlaps_or_touches() {
        let text = free_busy(0, 86_400, 60, vec![(7_200, 10_800), (3_600, 7_200), (36_000, 39_600), (9_000, 9_500)]);
        assert!(text.contains("DTSTART:19700101T000000Z\r\nDTEND:19700102T000000Z\r\n"), "{text}");
        assert!(text.contains("FREEBUSY;FBTYPE=BUSY:19700101T010000Z/19700101T030000Z\r\n"), "{text}");
        assert!(text.contains("FREEBUSY;FBTYPE=BUSY:19700101T100000Z/19700101T110000Z\r\n"), "{text}");
        assert_eq!(text.matches("FREEBUSY;").count(), 2, "{text}");
        assert!(ICalendar::parse(&text).is_ok());
    }
}
