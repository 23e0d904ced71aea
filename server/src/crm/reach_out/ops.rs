//! What a person does with a reach-out suggestion (accept it as a one-off reminder, dismiss it
//! for good), and the suggestion as clients read it: the contact named and the cadence health
//! computed now. The scan that makes them is [`super::scan`], run as job `reach_out_scan`.

use jiff::Timestamp;
use jiff::civil::Date;
use mycorrhizal_engine::{Precondition, Row, UserScope, UserView};
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use super::{DISMISSED, ReachOutSuggestion};
use crate::crm::cadence::CadencePolicy;
use crate::crm::cadence::ops::Health;
use crate::crm::calendar::{self, Recurrence};
use crate::crm::contact::Contact;
use crate::crm::contact::view::ContactSummary;
use crate::crm::reminder::Reminder;
use crate::crm::reminder::ops::ReminderView;
use crate::crm::{Error, Result};

/// The reminder text of an accepted suggestion when the user gives none: who, and the news.
fn default_message(name: &str, s: &ReachOutSuggestion) -> String {
    use crate::crm::reach_out::{KIND_ADDRESS, KIND_ORGANIZATION, KIND_TITLE};
    let name = name.trim();
    match s.kind.as_str() {
        KIND_ORGANIZATION => format!("Reach out to {name}: now at {}", s.new_value),
        KIND_TITLE => format!("Reach out to {name}: now {}", s.new_value),
        KIND_ADDRESS => format!("Reach out to {name}: moved to {}", s.new_value),
        _ => format!("Reach out to {name}"),
    }
}

/// A suggestion as clients see it, with the contact's name and the cadence health computed now.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct SuggestionView {
    pub id: u64,
    #[schema(value_type = String)]
    pub created_at: Timestamp,
    #[schema(value_type = String)]
    pub updated_at: Timestamp,
    pub revision: u64,
    pub contact_id: u64,
    /// The contact's UID (empty if the contact is gone).
    pub contact_vcard_uid: String,
    /// The contact's name (empty if the contact is gone).
    pub contact_name: String,
    /// Why: `cadence_overdue`, `organization`, `title` or `address`.
    pub kind: String,
    /// A field change's value before (empty for a cadence).
    pub old_value: String,
    /// A field change's value after (empty for a cadence).
    pub new_value: String,
    /// The audit event of the field change, or for a cadence the newest one the scan had seen.
    pub audit_event_id: u64,
    /// `pending` or `dismissed`.
    pub status: String,
    /// The cadence policy found overdue (0 for a field change).
    pub policy_id: u64,
    /// The one-off reminder made when the suggestion was accepted; absent before.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reminder_id: Option<u64>,
    /// The contact's photo thumbnail; absent without a photo.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub photo_thumbnail: Option<String>,
    /// The contact's cadence health now; absent for a field change.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub health: Option<Health>,
}

impl SuggestionView {
    pub fn of(v: &UserView, row: &Row<ReachOutSuggestion>, now: Timestamp) -> SuggestionView {
        let s = &row.body;
        let contact = v.get::<Contact>(s.contact_id).ok();
        let health = v
            .get::<CadencePolicy>(s.policy_id)
            .ok()
            .and_then(|p| crate::crm::cadence::ops::health(v, &p, s.contact_id, now).ok());
        SuggestionView {
            id: row.id,
            created_at: row.meta.created_at,
            updated_at: row.meta.updated_at,
            revision: row.meta.revision,
            contact_id: s.contact_id,
            contact_vcard_uid: contact.as_ref().map(|c| c.body.uid.clone()).unwrap_or_default(),
            contact_name: contact.as_ref().map(|c| c.body.name()).unwrap_or_default(),
            kind: s.kind.clone(),
            old_value: s.old_value.clone(),
            new_value: s.new_value.clone(),
            audit_event_id: s.audit_event_id,
            status: s.status.clone(),
            policy_id: s.policy_id,
            reminder_id: s.reminder_id,
            photo_thumbnail: contact.as_ref().and_then(|c| ContactSummary::of(c).photo_thumbnail),
            health,
        }
    }
}

/// `{suggestions, total}`: a list of suggestions.
#[derive(Debug, Clone, Serialize, ToSchema)]
#[schema(as = ReachOutSuggestionList)]
pub struct SuggestionList {
    pub suggestions: Vec<SuggestionView>,
    pub total: usize,
}

/// `{message, suggestion, reminder}`: a suggestion just accepted and its new reminder.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct SuggestionAccepted {
    pub message: String,
    pub suggestion: SuggestionView,
    pub reminder: ReminderView,
}

/// `{message, suggestion}`: a suggestion just dismissed.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct SuggestionDismissed {
    pub message: String,
    pub suggestion: SuggestionView,
}

/// Suggestions with `status` (`None` for all), most overdue first, then oldest first.
pub fn views(v: &UserView, status: Option<&str>, now: Timestamp) -> Result<Vec<SuggestionView>> {
    let mut out: Vec<SuggestionView> = v
        .list::<ReachOutSuggestion>()?
        .iter()
        .filter(|r| status.is_none_or(|s| r.body.status == s))
        .map(|r| SuggestionView::of(v, r, now))
        .collect();
    out.sort_by_key(|s| std::cmp::Reverse(s.health.as_ref().map_or(0, |h| h.overdue_by)));
    Ok(out)
}

/// The list response for [`views`].
pub fn listed(v: &UserView, status: Option<&str>, now: Timestamp) -> Result<SuggestionList> {
    let suggestions = views(v, status, now)?;
    Ok(SuggestionList { total: suggestions.len(), suggestions })
}

/// The response to an accept: the linked suggestion and the reminder, its contact named.
pub fn accepted(
    v: &UserView,
    suggestion: &Row<ReachOutSuggestion>,
    reminder: &Row<Reminder>,
    today: Date,
    now: Timestamp,
) -> SuggestionAccepted {
    let name = v.get::<Contact>(reminder.body.contact_id).map(|c| c.body.name()).ok();
    SuggestionAccepted {
        message: "Reminder created".into(),
        suggestion: SuggestionView::of(v, suggestion, now),
        reminder: ReminderView::of(reminder, Some(today), name),
    }
}

/// The response to a dismissal.
pub fn dismissed(v: &UserView, suggestion: &Row<ReachOutSuggestion>, now: Timestamp) -> SuggestionDismissed {
    SuggestionDismissed { message: "Suggestion dismissed".into(), suggestion: SuggestionView::of(v, suggestion, now) }
}

/// An accepted suggestion's reminder falls this many days after today unless the input names a day.
pub const DEFAULT_ACCEPT_DAYS: i64 = 1;

#[derive(Debug, Clone, Default, Deserialize, ToSchema)]
pub struct AcceptInput {
    /// The reminder's day (RFC 3339 instant or `YYYY-MM-DD`); default tomorrow.
    #[schema(value_type = Option<crate::crm::schema::DayOrInstantOrBlank>)]
    pub remind_at: Option<String>,
    /// The reminder's text, 1 to 500 characters; default "Reach out to <name>".
    #[schema(
        max_length = 500,
        pattern = "[^\\t-\\r \\u0085\\u00a0\\u1680\\u2000-\\u200a\\u2028\\u2029\\u202f\\u205f\\u3000]"
    )]
    pub message: Option<String>,
}

enum Accepted {
    Done(Box<(Row<ReachOutSuggestion>, Row<Reminder>)>),
    Dismissed,
    HasReminder,
}

/// Accepts suggestion `id`: a one-off reminder for its contact on the input's day (default
/// [`DEFAULT_ACCEPT_DAYS`] after `today`), linked to the suggestion, in one transaction. A
/// dismissed suggestion, or one whose reminder still lives, is a conflict.
pub async fn accept(
    scope: &UserScope,
    id: u64,
    today: Date,
    input: AcceptInput,
) -> Result<(Row<ReachOutSuggestion>, Row<Reminder>)> {
    let day = match input.remind_at.as_deref().map(str::trim).filter(|d| !d.is_empty()) {
        Some(text) => calendar::day_of(calendar::instant("remind_at", text)?),
        None => today.checked_add(jiff::Span::new().days(DEFAULT_ACCEPT_DAYS)).unwrap_or(today),
    };
    let message = input.message.map(|m| m.trim().to_string());
    let outcome = scope
        .write_async(move |tx| {
            let s = tx.get::<ReachOutSuggestion>(id)?;
            if s.body.status == DISMISSED {
                return Ok(Accepted::Dismissed);
            }
            if s.body.reminder_id.is_some_and(|r| tx.get::<Reminder>(r).is_ok()) {
                return Ok(Accepted::HasReminder);
            }
            let contact = tx.get::<Contact>(s.body.contact_id)?;
            let text = message
                .clone()
                .unwrap_or_else(|| default_message(&contact.body.name(), &s.body).chars().take(500).collect());
            let reminder = tx.create(Reminder {
                message: text,
                remind_at: calendar::midnight(day),
                recurrence: Recurrence::Once,
                anchor_day: day.day(),
                contact_id: s.body.contact_id,
                by_mail: false,
                reoccur_from_completion: true,
                last_sent: None,
            })?;
            let linked = tx.update::<ReachOutSuggestion>(id, Precondition::Any, |b| {
                b.reminder_id = Some(reminder.id);
                Ok(())
            })?;
            Ok(Accepted::Done(Box::new((linked, reminder))))
        })
        .await?;
    match outcome {
        Accepted::Done(rows) => Ok(*rows),
        Accepted::Dismissed => Err(Error::Conflict("This suggestion was dismissed".into())),
        Accepted::HasReminder => Err(Error::Conflict("This suggestion already has a reminder".into())),
    }
}

/// Marks suggestion `id` dismissed (later scans leave its contact alone); idempotent.
pub async fn dismiss(scope: &UserScope, id: u64) -> Result<Row<ReachOutSuggestion>> {
    Ok(scope
        .write_async(move |tx| {
            let s = tx.get::<ReachOutSuggestion>(id)?;
            if s.body.status == DISMISSED {
                return Ok(s);
            }
            tx.update::<ReachOutSuggestion>(id, Precondition::Any, |b| {
                b.status = DISMISSED.to_string();
                Ok(())
            })
        })
        .await?)
}

/// Removes suggestion `id` for good when `pre` holds: unlike a dismissal, a later scan may
/// propose the contact again.
pub async fn delete(scope: &UserScope, id: u64, pre: Precondition) -> Result<()> {
    crate::crm::records::delete::<ReachOutSuggestion>(scope, id, pre).await
}
