//! A briefing before meeting someone (`GET /contacts/{id}/briefing`), in one read: their last
//! activity, newest notes, the keep-in-touch rhythm that covers them and how it stands, what
//! is still to talk about, their relationships (each as the other party is to them), newest life
//! events, reminders due within 30 days (overdue ones too) and the birthday or anniversary
//! coming within a year. Computed on every read, never stored.

use jiff::civil::Date;
use jiff::{SignedDuration, Timestamp};
use mycorrhizal_engine::UserView;
use serde::Serialize;
use utoipa::ToSchema;

use super::Contact;
use super::detail::detail;
use crate::crm::activity::ops::ActivityView;
use crate::crm::cadence::CadencePolicy;
use crate::crm::cadence::ops::{Health, PolicyView, health};
use crate::crm::depth::ops::{AgendaItemView, LifeEventView};
use crate::crm::note::ops::NoteView;
use crate::crm::relationship::inverse;
use crate::crm::relationship::ops::DetailEdge;
use crate::crm::reminder::ops::ReminderView;
use crate::crm::{Result, calendar};

/// The rhythm covering the contact and how they stand under it.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct BriefingCadence {
    pub policy: PolicyView,
    pub health: Health,
}

/// A birthday or anniversary coming within a year.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct UpcomingDate {
    /// `birthday` or `anniversary`.
    pub label: &'static str,
    /// As stored: `1990-04-02`, or `--04-02` without a year.
    pub date: String,
    pub days_until: i32,
}

#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct Briefing {
    pub contact_id: u64,
    pub uid: String,
    pub name: String,
    /// `crm.kind` (`animal` for a pet), when set.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub kind: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub last_activity: Option<ActivityView>,
    pub recent_notes: Vec<NoteView>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cadence: Option<BriefingCadence>,
    pub open_agenda_items: Vec<AgendaItemView>,
    /// Each with `display_token`: what the other party is to this contact.
    pub relationships: Vec<DetailEdge>,
    pub life_events: Vec<LifeEventView>,
    pub upcoming_reminders: Vec<ReminderView>,
    pub upcoming_dates: Vec<UpcomingDate>,
}

/// Contact `id`'s briefing at `now` (`today` in the user's zone).
pub fn briefing(v: &UserView, id: u64, today: Date, now: Timestamp) -> Result<Briefing> {
    let d = detail(v, id, today, Vec::new())?;
    let contact = v.get::<Contact>(id)?;
    let crm: serde_json::Value = serde_json::from_str(&contact.body.crm).unwrap_or_default();
    let covers = |p: &CadencePolicy| match p.scope.as_str() {
        "contact" => p.target == id.to_string(),
        "circle" => contact.body.circles.contains(&p.target),
        "tag" => contact.body.tags.contains(&p.target),
        _ => false,
    };
    let cadence = match v.list::<CadencePolicy>()?.into_iter().find(|p| covers(&p.body)) {
        Some(policy) => Some(BriefingCadence { health: health(v, &policy, id, now)?, policy: PolicyView::of(&policy) }),
        None => None,
    };
    let horizon = now.checked_add(SignedDuration::from_hours(30 * 24)).unwrap_or(now);
    let relationships = d
        .relationship_edges
        .into_iter()
        .filter(|e| e.edge.status == "confirmed" && e.edge.sensitivity != "secret")
        .map(|mut e| {
            // What the other party is to this contact: read from the other end when it is the source.
            if e.edge.source_contact_id == id {
                e.display_token = inverse(&e.edge.kind).map_or_else(|| e.edge.kind.clone(), str::to_string);
            }
            e
        })
        .collect();
    let mut upcoming_dates = Vec::new();
    for (label, date) in
        [("birthday", contact.body.birthday()), ("anniversary", contact.body.flat.anniversary.as_str())]
    {
        let md = date.strip_prefix("--").or_else(|| date.get(5..)).unwrap_or("");
        let (Some(m), Some(day)) =
            (md.get(0..2).and_then(|m| m.parse().ok()), md.get(3..5).and_then(|d| d.parse().ok()))
        else {
            continue;
        };
        if let Some(next) = calendar::next_yearly(m, day, today) {
            let days = (next - today).get_days();
            if (0..366).contains(&days) {
                upcoming_dates.push(UpcomingDate { label, date: date.to_string(), days_until: days });
            }
        }
    }
    upcoming_dates.sort_by_key(|u| u.days_until);
    Ok(Briefing {
        contact_id: id,
        uid: contact.body.uid.clone(),
        name: contact.body.name(),
        kind: crm["kind"].as_str().filter(|k| !k.is_empty()).map(str::to_string),
        last_activity: d.activities.into_iter().next(),
        recent_notes: d.notes,
        cadence,
        open_agenda_items: d.agenda,
        relationships,
        life_events: d.life_events,
        upcoming_reminders: d.reminders.into_iter().filter(|r| r.remind_at <= horizon).collect(),
        upcoming_dates,
    })
}
