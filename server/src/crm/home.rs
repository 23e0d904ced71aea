//! The composite reads a person opens first: the dashboard (one read for the home screen) and a
//! contact's timeline (notes, activities, completions, life events and gifts in one
//! reverse-chronological list, paged by instant).

use jiff::Timestamp;
use jiff::civil::Date;
use mycorrhizal_engine::{UserView, Walk};

use super::Result;
use super::activity::ops::ActivityView;
use super::calendar;
use super::contact::ops::require_contacts;
use super::contact::pick::{random_summaries, upcoming_birthdays};
use super::contact::view::{BirthdayView, ContactSummary};
use super::contact::{Contact, INDEX_FAVORITE};
use super::note::ops::NoteView;
use super::{activity::Activity, note::Note, records::BY_CONTACT, records::contact_range, reminder::Completion};
use super::{depth::Gift, depth::LifeEvent};
use super::{depth::ops::GiftView, depth::ops::LifeEventView};
use super::{reminder::ops::CompletionView, reminder::ops::ReminderView};
use serde::Serialize;
use utoipa::ToSchema;

/// How many of the next 30 days' birthdays the dashboard shows, soonest first. The home screen is
/// a glance: a large address book has thousands of birthdays a month, and the whole list is
/// `GET /contacts/birthdays?days=30`.
pub const DASHBOARD_BIRTHDAYS: usize = 25;

/// The home screen in one read. Every member is an array.
#[derive(Debug, Serialize, ToSchema)]
pub struct Dashboard {
    /// The soonest [`DASHBOARD_BIRTHDAYS`] birthdays of the next 30 days.
    pub birthdays: Vec<BirthdayView>,
    /// Five random active contacts.
    pub random_contacts: Vec<ContactSummary>,
    /// The first 50 favourite, active contacts by name.
    pub favorites: Vec<ContactSummary>,
    /// Open reminders due within seven days (overdue included), or the earliest five.
    pub upcoming_reminders: Vec<ReminderView>,
    /// Contacts past their keep-in-touch cadence.
    pub overdue: Vec<crate::crm::cadence::ops::Overdue>,
    /// Pending reach-out suggestions.
    pub reach_out_suggestions: Vec<crate::crm::reach_out::ops::SuggestionView>,
}

/// The soonest birthdays of the next 30 days, five random contacts, favourites, upcoming
/// reminders, overdue cadences and pending reach-out suggestions. Every member is an array.
pub fn dashboard(v: &UserView, today: Date, now: Timestamp) -> Result<Dashboard> {
    let end = today.checked_add(jiff::Span::new().days(30)).unwrap_or(today);
    // The first 50 favourite, non-archived contacts by name: their own index, in name order.
    let favorites = v.walk::<Contact>(
        Walk { index: INDEX_FAVORITE, from: "", to: None, after: None, descending: false },
        50,
        |r| r.body.favorite && !r.body.archived,
    )?;
    Ok(Dashboard {
        birthdays: upcoming_birthdays(v, today, end, DASHBOARD_BIRTHDAYS)?,
        random_contacts: random_summaries(v, 5)?,
        favorites: favorites.rows.iter().map(ContactSummary::of).collect(),
        upcoming_reminders: crate::crm::reminder::ops::upcoming_views(v, today)?,
        overdue: crate::crm::cadence::ops::overdue(v, now)?,
        reach_out_suggestions: crate::crm::reach_out::ops::views(v, Some(crate::crm::reach_out::PENDING), now)?,
    })
}

/// The kinds of entry a timeline holds (its `type` member), to ask for some only.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum TimelineType {
    Note,
    Activity,
    ReminderCompletion,
    Gift,
    LifeEvent,
    ExternalActivity,
}

impl TimelineType {
    /// A `type` token; `completion` is the existing clients' name of `reminder_completion`.
    pub fn parse(text: &str) -> Option<TimelineType> {
        Some(match text {
            "note" => TimelineType::Note,
            "activity" => TimelineType::Activity,
            "reminder_completion" | "completion" => TimelineType::ReminderCompletion,
            "gift" => TimelineType::Gift,
            "life_event" => TimelineType::LifeEvent,
            "external_activity" => TimelineType::ExternalActivity,
            _ => return None,
        })
    }

    /// The name the existing clients give it in `items`.
    fn legacy(self) -> &'static str {
        match self {
            TimelineType::Note => "note",
            TimelineType::Activity => "activity",
            TimelineType::ReminderCompletion => "completion",
            TimelineType::Gift => "gift",
            TimelineType::LifeEvent => "life_event",
            TimelineType::ExternalActivity => "external_activity",
        }
    }
}

/// What a timeline entry shows: the record as its own routes show it.
#[derive(Debug, Clone, Serialize, ToSchema)]
#[serde(untagged)]
pub enum TimelineItem {
    Note(NoteView),
    Activity(ActivityView),
    ReminderCompletion(CompletionView),
    Gift(GiftView),
    LifeEvent(LifeEventView),
    ExternalActivity(crate::crm::external::ops::ExternalActivityView),
}

/// One entry of a contact's history.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct TimelineEntry {
    /// Which kind of record `item` is.
    #[serde(rename = "type")]
    pub kind: TimelineType,
    /// When it happened: a note's or activity's date, a completion's instant, a gift's date, a
    /// life event's day at midnight UTC (its first month or day when the date has none).
    #[schema(value_type = String)]
    pub date: Timestamp,
    pub item: TimelineItem,
    /// A life event without a year, placed by the existing clients' rule (only in `items`).
    #[serde(skip)]
    undated: bool,
    #[serde(skip)]
    id: u64,
}

/// An entry as the existing clients read it: `{type, id, date, data}`, `type` one of `note`,
/// `activity`, `completion`, `gift`, `life_event`.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct LegacyEntry {
    #[serde(rename = "type")]
    pub kind: &'static str,
    /// The record's id, as text.
    pub id: String,
    #[schema(value_type = String)]
    pub date: Timestamp,
    pub data: TimelineItem,
}

/// A page of a contact's history, newest first, in two shapes: `timeline` with `next_before`,
/// and, for the existing clients, `items` with `next_cursor` and `limit` (which also hold the
/// life events without a year: a day and month in this year, else when they were recorded).
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct Timeline {
    pub timeline: Vec<TimelineEntry>,
    /// Pass as `before` for the next page; empty on the last page.
    pub next_before: String,
    pub items: Vec<LegacyEntry>,
    /// Pass as `cursor` for the next page of `items`; empty on the last page.
    pub next_cursor: String,
    pub limit: usize,
}

/// What a timeline page is asked for.
#[derive(Debug, Clone, Default)]
pub struct TimelineRequest {
    /// Only entries strictly before this instant.
    pub before: Option<Timestamp>,
    /// Only entries at or after this instant (a `bucket`).
    pub since: Option<Timestamp>,
    pub limit: usize,
    /// Only these types (none: every type).
    pub only: Vec<TimelineType>,
    /// The user's today, which places a life event with a day and month but no year.
    pub today: Option<Date>,
}

fn entries(v: &UserView, contact: u64, request: &TimelineRequest) -> Result<Vec<TimelineEntry>> {
    let (from, to) = contact_range(contact);
    let walk = Walk { index: BY_CONTACT, from: &from, to: Some(&to), after: None, descending: true };
    let wanted = |t: TimelineType| request.only.is_empty() || request.only.contains(&t);
    let entry = |kind, date, item, id| TimelineEntry { kind, date, item, undated: false, id };
    let mut out = Vec::new();
    if wanted(TimelineType::Note) {
        for r in v.walk::<Note>(walk, usize::MAX, |_| true)?.rows {
            out.push(entry(TimelineType::Note, r.body.date, TimelineItem::Note(NoteView::of(&r)), r.id));
        }
    }
    if wanted(TimelineType::Activity) {
        for r in v.walk::<Activity>(walk, usize::MAX, |_| true)?.rows {
            let item = TimelineItem::Activity(crate::crm::activity::ops::named(v, &r));
            out.push(entry(TimelineType::Activity, r.body.date, item, r.id));
        }
    }
    if wanted(TimelineType::ReminderCompletion) {
        for r in v.walk::<Completion>(walk, usize::MAX, |_| true)?.rows {
            let item = TimelineItem::ReminderCompletion(CompletionView::of(&r));
            out.push(entry(TimelineType::ReminderCompletion, r.body.completed_at, item, r.id));
        }
    }
    if wanted(TimelineType::Gift) {
        for r in v.walk::<Gift>(walk, usize::MAX, |g| g.body.date.is_some())?.rows {
            let date = r.body.date.unwrap_or(Timestamp::UNIX_EPOCH);
            out.push(entry(TimelineType::Gift, date, TimelineItem::Gift(GiftView::of(v, &r)), r.id));
        }
    }
    if wanted(TimelineType::ExternalActivity) {
        for r in v.walk::<crate::crm::external::ExternalActivity>(walk, usize::MAX, |_| true)?.rows {
            let item = TimelineItem::ExternalActivity(crate::crm::external::ops::ExternalActivityView::of(v, &r));
            out.push(entry(TimelineType::ExternalActivity, r.body.occurred_at, item, r.id));
        }
    }
    // The timeline shows what happened; the next yearly occurrence is not its concern.
    let epoch = jiff::civil::Date::constant(1970, 1, 1);
    let life_events = if wanted(TimelineType::LifeEvent) {
        v.walk::<LifeEvent>(walk, usize::MAX, |_| true)?.rows
    } else {
        Vec::new()
    };
    for r in life_events {
        let d = r.body.date;
        let day = |year: i16| jiff::civil::Date::new(year, d.month.unwrap_or(1) as i8, d.day.unwrap_or(1) as i8).ok();
        let (date, undated) = match (d.year, d.month.zip(d.day), request.today) {
            (Some(year), _, _) => match day(year as i16) {
                Some(day) => (calendar::midnight(day), false),
                None => continue,
            },
            // The latest occurrence on or before today: a timeline holds no future.
            (None, Some(_), Some(today)) => {
                match day(today.year()).filter(|d| *d <= today).or_else(|| day(today.year() - 1)) {
                    Some(day) => (calendar::midnight(day), true),
                    None => (r.meta.created_at, true),
                }
            }
            (None, _, _) => (r.meta.created_at, true),
        };
        let item = TimelineItem::LifeEvent(LifeEventView::of(v, &r, epoch));
        out.push(TimelineEntry { kind: TimelineType::LifeEvent, date, item, undated, id: r.id });
    }
    out.retain(|e| request.since.is_none_or(|s| e.date >= s) && request.before.is_none_or(|b| e.date < b));
    out.sort_by(|a, b| b.date.cmp(&a.date));
    Ok(out)
}

/// The first page of `all` of about `limit` entries, and where the next begins (empty on the
/// last page). A page never ends between entries of the same instant: the next page starts
/// strictly before the instant returned, so entries sharing the last one's instant come on this
/// page (which may then hold a few more than `limit`).
fn page_of(mut all: Vec<TimelineEntry>, limit: usize) -> (Vec<TimelineEntry>, String) {
    let mut cut = limit.min(all.len());
    while cut > 0 && cut < all.len() && all[cut].date == all[cut - 1].date {
        cut += 1;
    }
    let more = all.len() > cut;
    all.truncate(cut);
    let next = if more { all.last().map(|e| e.date.to_string()).unwrap_or_default() } else { String::new() };
    (all, next)
}

/// A page of contact `id`'s history, newest first, as `request` asks, with where the next begins.
pub fn timeline(v: &UserView, id: u64, request: &TimelineRequest) -> Result<Timeline> {
    require_contacts(v, &[id])?;
    let all = entries(v, id, request)?;
    let dated: Vec<TimelineEntry> = all.iter().filter(|e| !e.undated).cloned().collect();
    let (timeline, next_before) = page_of(dated, request.limit);
    let (legacy, next_cursor) = page_of(all, request.limit);
    let items = legacy
        .into_iter()
        .map(|e| LegacyEntry { kind: e.kind.legacy(), id: e.id.to_string(), date: e.date, data: e.item })
        .collect();
    Ok(Timeline { timeline, next_before, items, next_cursor, limit: request.limit })
}
