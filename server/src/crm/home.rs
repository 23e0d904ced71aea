//! The composite reads a person opens first: the dashboard (one read for the home screen) and a
//! contact's timeline (notes, activities, completions, dated life events and gifts in one
//! reverse-chronological list, paged by instant).

use jiff::Timestamp;
use jiff::civil::Date;
use mycorrhizal_engine::{UserView, Walk};
use serde_json::{Value, json};

use super::Result;
use super::calendar;
use super::contact::ops::require_contacts;
use super::contact::pick::{random_summaries, upcoming_birthdays};
use super::contact::view::{BirthdayView, ContactSummary};
use super::contact::{Contact, INDEX_FAVORITE};
use super::depth::{Gift, LifeEvent};
use super::records::{Activity, BY_CONTACT, Completion, Note, contact_range};
use super::reminders::ReminderView;
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
    pub overdue: Vec<crate::crm::cadence::Overdue>,
    /// Pending reach-out suggestions.
    pub reach_out_suggestions: Vec<crate::crm::suggestions::SuggestionView>,
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
        upcoming_reminders: crate::crm::reminders::upcoming_views(v, today)?,
        overdue: crate::crm::cadence::overdue(v, now)?,
        reach_out_suggestions: crate::crm::suggestions::views(v, Some(crate::crm::reach_out::PENDING), now)?,
    })
}

/// The kinds of entry a timeline holds (its `type` member), to ask for one only.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TimelineType {
    Note,
    Activity,
    ReminderCompletion,
    Gift,
    LifeEvent,
}

impl TimelineType {
    pub fn parse(text: &str) -> Option<TimelineType> {
        Some(match text {
            "note" => TimelineType::Note,
            "activity" => TimelineType::Activity,
            "reminder_completion" => TimelineType::ReminderCompletion,
            "gift" => TimelineType::Gift,
            "life_event" => TimelineType::LifeEvent,
            _ => return None,
        })
    }
}

fn entries(v: &UserView, contact: u64, only: Option<TimelineType>) -> Result<Vec<(Timestamp, Value)>> {
    let (from, to) = contact_range(contact);
    let walk = Walk { index: BY_CONTACT, from: &from, to: Some(&to), after: None, descending: true };
    let wanted = |t: TimelineType| only.is_none_or(|o| o == t);
    let mut out = Vec::new();
    if wanted(TimelineType::Note) {
        for r in v.walk::<Note>(walk, usize::MAX, |_| true)?.rows {
            out.push((
                r.body.date,
                json!({ "type": "note", "date": r.body.date, "item": crate::crm::notes::view(&r) }),
            ));
        }
    }
    if wanted(TimelineType::Activity) {
        for r in v.walk::<Activity>(walk, usize::MAX, |_| true)?.rows {
            out.push((
                r.body.date,
                json!({ "type": "activity", "date": r.body.date, "item": crate::crm::activities::view(&r, Vec::new()) }),
            ));
        }
    }
    if wanted(TimelineType::ReminderCompletion) {
        for r in v.walk::<Completion>(walk, usize::MAX, |_| true)?.rows {
            out.push((r.body.completed_at, json!({ "type": "reminder_completion", "date": r.body.completed_at, "item": crate::crm::reminders::completion_view(&r) })));
        }
    }
    if wanted(TimelineType::Gift) {
        for r in v.walk::<Gift>(walk, usize::MAX, |g| g.body.date.is_some())?.rows {
            let date = r.body.date.unwrap_or(Timestamp::UNIX_EPOCH);
            out.push((
                date,
                json!({ "type": "gift", "date": date, "item": crate::crm::depth_ops::GiftView::of(v, &r) }),
            ));
        }
    }
    // The timeline shows what happened; the next yearly occurrence is not its concern.
    let epoch = jiff::civil::Date::constant(1970, 1, 1);
    let life_events = if wanted(TimelineType::LifeEvent) {
        v.walk::<LifeEvent>(walk, usize::MAX, |e| e.body.date.year.is_some())?.rows
    } else {
        Vec::new()
    };
    for r in life_events {
        let d = r.body.date;
        let Some(day) = d
            .year
            .and_then(|y| jiff::civil::Date::new(y as i16, d.month.unwrap_or(1) as i8, d.day.unwrap_or(1) as i8).ok())
        else {
            continue;
        };
        let date = calendar::midnight(day);
        out.push((
            date,
            json!({ "type": "life_event", "date": date, "item": crate::crm::depth_ops::LifeEventView::of(v, &r, epoch) }),
        ));
    }
    out.sort_by(|a, b| b.0.cmp(&a.0));
    Ok(out)
}

/// A page of contact `id`'s history, newest first: at most about `limit` entries strictly before
/// `before` (of type `only` when given), with `next_before` for the next page.
pub fn timeline(
    v: &UserView,
    id: u64,
    before: Option<Timestamp>,
    limit: usize,
    only: Option<TimelineType>,
) -> Result<Value> {
    require_contacts(v, &[id])?;
    let all: Vec<(Timestamp, Value)> =
        entries(v, id, only)?.into_iter().filter(|(d, _)| before.is_none_or(|b| *d < b)).collect();
    // A page never ends between entries of the same instant: the next page starts strictly
    // before `next_before`, so entries sharing the last one's instant come on this page
    // (which may then hold a few more than `limit`).
    let mut cut = limit.min(all.len());
    while cut > 0 && cut < all.len() && all[cut].0 == all[cut - 1].0 {
        cut += 1;
    }
    let more = all.len() > cut;
    let page: Vec<(Timestamp, Value)> = all.into_iter().take(cut).collect();
    let next = if more { page.last().map(|(d, _)| d.to_string()).unwrap_or_default() } else { String::new() };
    Ok(json!({ "timeline": page.into_iter().map(|(_, v)| v).collect::<Vec<_>>(), "next_before": next }))
}
