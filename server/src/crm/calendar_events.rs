//! The user's dates as calendar events (what CalDAV serves, read-only): each activity as a timed
//! event (its title, description, place and the names of its contacts; an hour long, since an
//! activity has one instant), and each life event and birthday that has a month and a day as a
//! yearly all-day event (29 February falls on 1 March in other years, `calendar::in_year`'s rule).
//! An event's source row decides its name and its ETag; iCalendar text is the codecs' business.
//! An activity a calendar client wrote (two-way CalDAV) is served as the client's own object
//! ([`Activity::ical`]), recurrences and all; its title, description, place and start are what
//! the activity reads of it.

use jiff::Timestamp;
use jiff::civil::Date;
use mycorrhizal_codecs::ical::{self, Day, Utc, When};
use mycorrhizal_engine::{Record, Row, UserView};

use super::Result;
use super::calendar::in_year;
use super::contact::Contact;
use super::depth::LifeEvent;
use super::{activity::Activity, activity::BY_DAV_NAME};

/// The year a yearly date without one starts in (a leap year, so 29 February has a first day).
const NO_YEAR: i16 = 2000;

/// The row an event comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Source {
    Activity(u64),
    LifeEvent(u64),
    Birthday(u64),
}

impl Source {
    /// The resource name (without `.ics`).
    pub fn name(self) -> String {
        match self {
            Source::Activity(id) => format!("activity-{id}"),
            Source::LifeEvent(id) => format!("life-event-{id}"),
            Source::Birthday(id) => format!("birthday-{id}"),
        }
    }

    pub fn parse(name: &str) -> Option<Source> {
        let name = name.strip_suffix(".ics").unwrap_or(name);
        let (kind, id) = name.rsplit_once('-')?;
        let id = id.parse().ok()?;
        match kind {
            "activity" => Some(Source::Activity(id)),
            "life-event" => Some(Source::LifeEvent(id)),
            "birthday" => Some(Source::Birthday(id)),
            _ => None,
        }
    }

    /// The source a change-feed entry touches, if it is one (a contact's change may change its
    /// birthday).
    pub fn of_change(kind: &str, id: u64) -> Option<Source> {
        match kind {
            k if k == Activity::KIND.name => Some(Source::Activity(id)),
            k if k == LifeEvent::KIND.name => Some(Source::LifeEvent(id)),
            k if k == Contact::KIND.name => Some(Source::Birthday(id)),
            _ => None,
        }
    }

    /// A key that orders every source of a user (for paging).
    pub fn key(self) -> u64 {
        match self {
            Source::Activity(id) => id,
            Source::LifeEvent(id) => (1 << 56) | id,
            Source::Birthday(id) => (2 << 56) | id,
        }
    }

    pub fn of_key(key: u64) -> Source {
        let id = key & ((1 << 56) - 1);
        match key >> 56 {
            0 => Source::Activity(id),
            1 => Source::LifeEvent(id),
            _ => Source::Birthday(id),
        }
    }
}

/// When an event happens, for time-range queries.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Span {
    Timed {
        start: Timestamp,
        end: Timestamp,
    },
    /// All day on `month`/`day` every year from `first_year`.
    Yearly {
        first_year: i16,
        month: i8,
        day: i8,
    },
}

impl Span {
    /// Whether the event happens at some time in `[start, end)` (either bound open).
    pub fn overlaps(&self, start: Option<Timestamp>, end: Option<Timestamp>) -> bool {
        match *self {
            Span::Timed { start: s, end: e } => end.is_none_or(|end| s < end) && start.is_none_or(|start| e > start),
            Span::Yearly { first_year, month, day } => {
                let from_year =
                    start.map_or(first_year, |s| s.to_zoned(jiff::tz::TimeZone::UTC).year() - 1).max(first_year);
                let Some(to_year) = end.map(|e| e.to_zoned(jiff::tz::TimeZone::UTC).year()) else {
                    return true;
                };
                (from_year..=to_year).any(|year| {
                    let Some(date) = in_year(year, month, day) else { return false };
                    let (s, e) = (midnight(date), date.tomorrow().ok().map(midnight));
                    let Some(e) = e.flatten() else { return false };
                    end.is_none_or(|end| s.is_some_and(|s| s < end)) && start.is_none_or(|start| e > start)
                })
            }
        }
    }
}

fn midnight(date: Date) -> Option<Timestamp> {
    date.to_zoned(jiff::tz::TimeZone::UTC).ok().map(|z| z.timestamp())
}

/// One event of the user's calendar.
#[derive(Debug, Clone)]
pub struct CalendarEvent {
    pub source: Source,
    /// The resource name it is served under, with `.ics`: `activity-<id>.ics` and the like, or
    /// the name a calendar client created an activity's event under.
    pub name: String,
    /// Strong, from the source row's revision.
    pub etag: String,
    pub span: Span,
    pub event: ical::Event,
    /// The iCalendar object a calendar client wrote for it ([`Activity::ical`]), served as it is.
    pub stored: Option<String>,
}

impl CalendarEvent {
    pub fn text(&self) -> String {
        match &self.stored {
            Some(text) => text.clone(),
            None => ical::write(&self.event),
        }
    }

    /// Whether the event happens at some time in `[start, end)` (either bound open): a client's
    /// object with its recurrences expanded, edited occurrences and exceptions applied.
    pub fn overlaps(&self, start: Option<Timestamp>, end: Option<Timestamp>) -> bool {
        let Some(text) = &self.stored else { return self.span.overlaps(start, end) };
        let (from, to) = (start.map(Timestamp::as_second), end.map(Timestamp::as_second));
        ical::instances(text).iter().any(|i| {
            let after_start = from.is_none_or(|from| i.end > from || (i.end == i.start && i.start >= from));
            after_start && to.is_none_or(|to| i.start < to)
        })
    }

    /// The busy time it takes in `[start, end)`, clipped to it (RFC 4791's free-busy): timed
    /// occurrences that are not transparent or cancelled. Life events and birthdays are
    /// transparent all-day events.
    pub fn busy(&self, start: i64, end: i64) -> Vec<(i64, i64)> {
        let spans: Vec<(i64, i64)> = match (&self.stored, self.span) {
            (Some(text), _) => ical::instances(text)
                .iter()
                .filter(|i| !i.transparent && !i.cancelled)
                .map(|i| (i.start, i.end))
                .collect(),
            (None, Span::Timed { start: from, end: to }) => vec![(from.as_second(), to.as_second())],
            (None, Span::Yearly { .. }) => Vec::new(),
        };
        spans.into_iter().filter(|(s, e)| *s < end && *e > start).map(|(s, e)| (s.max(start), e.min(end))).collect()
    }
}

/// An instant as the codecs' UTC date-time.
pub fn utc_of(at: Timestamp) -> Utc {
    utc(at)
}

fn utc(at: Timestamp) -> Utc {
    let z = at.to_zoned(jiff::tz::TimeZone::UTC);
    Utc {
        day: Day { year: z.year().max(0) as u16, month: z.month() as u8, day: z.day() as u8 },
        hour: z.hour() as u8,
        minute: z.minute() as u8,
        second: z.second() as u8,
    }
}

fn day(date: Date) -> Day {
    Day { year: date.year().max(0) as u16, month: date.month() as u8, day: date.day() as u8 }
}

fn etag<R>(prefix: char, row: &Row<R>) -> String {
    format!("\"{prefix}-{}-{}\"", row.id, row.meta.revision)
}

/// A yearly all-day event on `month`/`day` from `year` (or [`NO_YEAR`]).
fn yearly(year: Option<i32>, month: u8, day_of_month: u8) -> Option<(Span, When)> {
    let (month, dom) = (i8::try_from(month).ok()?, i8::try_from(day_of_month).ok()?);
    let first_year = year.and_then(|y| i16::try_from(y).ok()).filter(|y| *y > 0).unwrap_or(NO_YEAR);
    // The first occurrence: a 29 February birth in a non-leap year cannot be (the date is wrong),
    // so the series starts in the first leap year from there.
    let mut start_year = first_year;
    let first = loop {
        match Date::new(start_year, month, dom) {
            Ok(date) => break date,
            Err(_) if month == 2 && dom == 29 && start_year < first_year + 4 => start_year += 1,
            Err(_) => return None,
        }
    };
    let when =
        When::Yearly { first: day(first), next_day: day(first.tomorrow().ok()?), leap_day: month == 2 && dom == 29 };
    Some((Span::Yearly { first_year: start_year, month, day: dom }, when))
}

fn base(uid: String, summary: String, stamp: Timestamp, when: When) -> ical::Event {
    ical::Event {
        uid,
        summary,
        description: String::new(),
        location: String::new(),
        categories: Vec::new(),
        when,
        stamp: utc(stamp),
    }
}

fn contact_name(view: &UserView, id: u64) -> Result<Option<String>> {
    Ok(view.get_any::<Contact>(id)?.filter(|r| !r.is_deleted()).map(|r| r.body.name()))
}

/// The event of `source`, or `None` when it has none (deleted, or a date without month and day).
pub fn event(view: &UserView, source: Source) -> Result<Option<CalendarEvent>> {
    match source {
        Source::Activity(id) => {
            let Some(row) = view.get_any::<Activity>(id)?.filter(|r| !r.is_deleted()) else { return Ok(None) };
            Ok(Some(activity(view, &row)?))
        }
        Source::LifeEvent(id) => {
            let Some(row) = view.get_any::<LifeEvent>(id)?.filter(|r| !r.is_deleted()) else { return Ok(None) };
            life_event(view, &row)
        }
        Source::Birthday(id) => {
            let Some(row) = view.get_any::<Contact>(id)?.filter(|r| !r.is_deleted()) else { return Ok(None) };
            Ok(birthday(&row))
        }
    }
}

fn activity(view: &UserView, row: &Row<Activity>) -> Result<CalendarEvent> {
    let a = &row.body;
    let end = a.date.checked_add(jiff::SignedDuration::from_hours(1)).unwrap_or(a.date);
    let mut event =
        base(a.uuid.clone(), a.title.clone(), row.meta.updated_at, When::Timed { start: utc(a.date), end: utc(end) });
    let mut names = Vec::new();
    for id in &a.contact_ids {
        names.extend(contact_name(view, *id)?);
    }
    event.description = match (a.description.is_empty(), names.is_empty()) {
        (_, true) => a.description.clone(),
        (true, false) => format!("With {}", names.join(", ")),
        (false, false) => format!("{}\n\nWith {}", a.description, names.join(", ")),
    };
    event.location = a.location.clone();
    if !a.kind.is_empty() {
        event.categories = vec![a.kind.clone()];
    }
    Ok(CalendarEvent {
        source: Source::Activity(row.id),
        name: super::activity::ops::resource_name(row.id, &row.body),
        etag: etag('a', row),
        span: Span::Timed { start: a.date, end },
        event,
        stored: (!a.ical.is_empty()).then(|| a.ical.clone()),
    })
}

fn life_event(view: &UserView, row: &Row<LifeEvent>) -> Result<Option<CalendarEvent>> {
    let e = &row.body;
    let (Some(month), Some(dom)) = (e.date.month, e.date.day) else { return Ok(None) };
    let Some((span, when)) = yearly(e.date.year, month, dom) else { return Ok(None) };
    let who = contact_name(view, e.contact_id)?.unwrap_or_default();
    let what = if e.kind.is_empty() { "Life event".to_string() } else { e.kind.replace('_', " ") };
    let summary = if who.is_empty() { what } else { format!("{who}: {what}") };
    let source = Source::LifeEvent(row.id);
    let mut event = base(format!("{}@mycorrhizal", source.name()), summary, row.meta.updated_at, when);
    event.description = e.description.clone();
    event.categories = vec!["life event".into()];
    Ok(Some(CalendarEvent {
        name: format!("{}.ics", source.name()),
        source,
        etag: etag('l', row),
        span,
        event,
        stored: None,
    }))
}

fn birthday(row: &Row<Contact>) -> Option<CalendarEvent> {
    let text = row.body.birthday();
    let parsed = mycorrhizal_codecs::dates::parse_rest_date(text)?;
    let (span, when) = yearly(parsed.year, parsed.month?, parsed.day?)?;
    let source = Source::Birthday(row.id);
    let summary = format!("{}'s birthday", row.body.name());
    let mut event = base(format!("{}@mycorrhizal", source.name()), summary, row.meta.updated_at, when);
    event.categories = vec!["birthday".into()];
    Some(CalendarEvent {
        name: format!("{}.ics", source.name()),
        source,
        etag: etag('b', row),
        span,
        event,
        stored: None,
    })
}

/// The event served under resource name `name` (as the client wrote it, `.ics` included), if
/// any: a name of the server's own (`activity-<id>.ics`, ...) or one a calendar client created
/// an activity under (one index lookup).
pub fn find(view: &UserView, name: &str) -> Result<Option<CalendarEvent>> {
    let found = match view.find::<Activity>(BY_DAV_NAME, name)?.first() {
        Some(id) => event(view, Source::Activity(*id))?,
        None => match Source::parse(name) {
            Some(source) => event(view, source)?,
            None => None,
        },
    };
    Ok(found.filter(|e| e.name == name))
}

/// The resource name `source` was served under, read off its tombstone when it is gone (for a
/// sync's removed members).
pub fn removed_name(view: &UserView, source: Source) -> Result<String> {
    if let Source::Activity(id) = source
        && let Some(row) = view.get_any::<Activity>(id)?
    {
        return Ok(super::activity::ops::resource_name(id, &row.body));
    }
    Ok(format!("{}.ics", source.name()))
}

/// Every event of the user, in source order.
pub fn all(view: &UserView) -> Result<Vec<CalendarEvent>> {
    let mut out = Vec::new();
    for row in view.list::<Activity>()? {
        out.push(activity(view, &row)?);
    }
    for row in view.list::<LifeEvent>()? {
        out.extend(life_event(view, &row)?);
    }
    for row in view.list::<Contact>()? {
        out.extend(birthday(&row));
    }
    Ok(out)
}

/// The instant a client's event starts: a zoned wall time in its zone, a floating one and a date
/// as UTC. A zone the time zone database does not know (a Windows name, a custom `VTIMEZONE`)
/// is placed by the object's own definitions, and refused only when they cannot place it.
fn start_of(incoming: &ical::Incoming) -> Result<Timestamp> {
    match wall_start(&incoming.start) {
        Err(e) => match incoming.at.and_then(|at| Timestamp::from_second(at).ok()) {
            Some(at) => Ok(at),
            None => Err(e),
        },
        ok => ok,
    }
}

fn wall_start(start: &ical::Start) -> Result<Timestamp> {
    let civil = |at: &Utc| {
        jiff::civil::DateTime::new(
            at.day.year as i16,
            at.day.month as i8,
            at.day.day as i8,
            at.hour as i8,
            at.minute as i8,
            at.second.min(59) as i8,
            0,
        )
        .map_err(|e| super::Error::invalid("DTSTART", e.to_string()))
    };
    let zone = match start {
        ical::Start::Local { tzid: Some(tzid), .. } => jiff::tz::TimeZone::get(tzid)
            .map_err(|_| super::Error::invalid("DTSTART", format!("unknown time zone {tzid}")))?,
        _ => jiff::tz::TimeZone::UTC,
    };
    let at = match start {
        ical::Start::Utc(at) | ical::Start::Local { at, .. } => civil(at)?,
        ical::Start::Date(d) => civil(&Utc { day: *d, hour: 0, minute: 0, second: 0 })?,
    };
    Ok(at.to_zoned(zone).map_err(|e| super::Error::invalid("DTSTART", e.to_string()))?.timestamp())
}

/// Applies a calendar client's edit of activity `id`'s event (when two-way CalDAV is on): its
/// title, description (less the line naming its contacts, which the event adds), place and start
/// replace the activity's; its contacts, type and reference stay; `text`, the client's object,
/// is kept whole and served from then on. Through `activity::ops::save_as`, the JSON API's
/// operation, under `pre`.
pub async fn edit_activity(
    scope: &mycorrhizal_engine::UserScope,
    id: u64,
    pre: mycorrhizal_engine::Precondition,
    incoming: ical::Incoming,
    text: String,
) -> Result<Row<Activity>> {
    let reader = scope.clone();
    let (current, names) = tokio::task::spawn_blocking(move || -> Result<(Row<Activity>, Vec<String>)> {
        let view = reader.view()?;
        let row = view.get::<Activity>(id)?;
        let mut names = Vec::new();
        for contact in &row.body.contact_ids {
            names.extend(contact_name(&view, *contact)?);
        }
        Ok((row, names))
    })
    .await
    .map_err(super::Error::internal)??;
    let date = start_of(&incoming)?.to_string();
    let mut description = incoming.description;
    if !names.is_empty() {
        let line = format!("With {}", names.join(", "));
        if description == line {
            description.clear();
        } else if let Some(rest) = description.strip_suffix(&format!("\n\n{line}")) {
            description = rest.to_string();
        }
    }
    let a = current.body;
    let input = super::activity::ops::ActivityInput {
        title: title_of(&incoming.summary),
        description: Some(clip(&description, 2000)),
        location: Some(clip(&incoming.location, 300)),
        date,
        contact_ids: Some(a.contact_ids),
        kind: Some(a.kind),
        external_ref: Some(a.external_ref),
    };
    super::activity::ops::save_as(scope, Some((id, pre)), input, None, Some(text)).await
}

/// An event's title as an activity's: its summary (at most 200 characters), or
/// `(untitled event)` when it has none.
fn title_of(summary: &str) -> String {
    match summary.trim() {
        "" => "(untitled event)".to_string(),
        title => clip(title, 200),
    }
}

/// At most `max` characters of `text` (the event keeps it whole; the activity shows the start).
fn clip(text: &str, max: usize) -> String {
    text.chars().take(max).collect()
}

/// Whether `name` can name a client's new event: any path segment (decoded) of 1 to 255 bytes
/// but `.` and `..` and the server's own `activity-<id>.ics` form (a space, `@`, non-ASCII
/// letters: hrefs are encoded on the way out).
pub fn new_name_allowed(name: &str) -> bool {
    !name.is_empty() && name.len() <= 255 && name != "." && name != ".." && Source::parse(name).is_none()
}

/// A calendar client's new event (two-way CalDAV) becomes an activity through
/// `activity::ops::save_as`, the JSON API's create: its title, description, place and start, no
/// contacts; it keeps the client's resource `name` (see [`new_name_allowed`]) and
/// event UID (the name when it has none), so it is served back as it was written.
pub async fn create_activity(
    scope: &mycorrhizal_engine::UserScope,
    name: &str,
    incoming: ical::Incoming,
    text: String,
) -> super::Result<Row<Activity>> {
    let date = start_of(&incoming)?.to_string();
    let uid = if incoming.uid.is_empty() { name.trim_end_matches(".ics").to_string() } else { incoming.uid };
    if uid.chars().count() > 255 {
        return Err(super::Error::invalid("UID", "at most 255 characters"));
    }
    let input = super::activity::ops::ActivityInput {
        title: title_of(&incoming.summary),
        description: Some(clip(&incoming.description, 2000)),
        location: Some(clip(&incoming.location, 300)),
        date,
        contact_ids: Some(Vec::new()),
        kind: None,
        external_ref: None,
    };
    let event = super::activity::ops::EventName { name: name.to_string(), uid };
    match super::activity::ops::save_as(scope, None, input, Some(event), Some(text)).await {
        // Its resource name was taken meanwhile: the client's `If-None-Match: *` fails.
        Err(super::Error::Engine(mycorrhizal_engine::Error::Duplicate { .. })) => Err(super::Error::PreconditionFailed),
        other => other,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(text: &str) -> Timestamp {
        text.parse().expect("instant")
    }

    #[test]
    fn names_and_keys_round_trip() {
        for source in [Source::Activity(3), Source::LifeEvent(4), Source::Birthday(5)] {
            assert_eq!(Source::parse(&format!("{}.ics", source.name())), Some(source));
            assert_eq!(Source::of_key(source.key()), source);
        }
        assert_eq!(Source::parse("nothing-1"), None);
    }

    #[test]
    fn a_leap_day_birthday_falls_on_the_first_of_march_in_other_years() {
        let (span, _) = yearly(Some(1996), 2, 29).expect("yearly");
        assert!(span.overlaps(Some(at("2027-03-01T00:00:00Z")), Some(at("2027-03-02T00:00:00Z"))));
        assert!(!span.overlaps(Some(at("2027-02-28T00:00:00Z")), Some(at("2027-03-01T00:00:00Z"))));
        assert!(span.overlaps(Some(at("2028-02-29T00:00:00Z")), Some(at("2028-03-01T00:00:00Z"))));
        assert!(!span.overlaps(Some(at("1990-01-01T00:00:00Z")), Some(at("1996-02-28T00:00:00Z"))), "not before birth");
        let (plain, _) = yearly(None, 7, 14).expect("yearly");
        assert!(plain.overlaps(Some(at("2031-07-14T10:00:00Z")), Some(at("2031-07-14T11:00:00Z"))));
        assert!(!plain.overlaps(Some(at("2031-07-15T00:00:00Z")), Some(at("2031-08-01T00:00:00Z"))));
    }
}
