//! Reminders: day-granular (time of day zeroed on write), once or recurring, completed into a
//! timeline of completions. Their operations (create, replace, complete with the next date
//! after today) and views, and the reads the contact page and the dashboard share.

use jiff::Timestamp;
use jiff::civil::Date;
use mycorrhizal_engine::{Precondition, Row, UserScope, UserView, Walk};
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use crate::crm::calendar::{self, Recurrence, instant};
use crate::crm::contact::Contact;
use crate::crm::{Error, Result};
use crate::crm::{
    records::BY_CONTACT, records::BY_DATE, records::contact_range, records::micros, reminder::Completion,
    reminder::Reminder,
};

/// A reminder as clients read it.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct ReminderView {
    pub id: u64,
    pub message: String,
    #[schema(value_type = String)]
    pub remind_at: Timestamp,
    /// The reminder's day, `YYYY-MM-DD`.
    pub date: String,
    #[schema(value_type = String)]
    pub recurrence: Recurrence,
    pub contact_id: u64,
    pub by_mail: bool,
    pub reoccur_from_completion: bool,
    /// Always false: a completed one-off reminder is gone, a recurring one moved on.
    pub completed: bool,
    #[schema(value_type = Option<String>)]
    pub last_sent: Option<Timestamp>,
    /// `revision`, `etag`, `created_at`, `updated_at`.
    #[serde(flatten)]
    pub stamp: crate::crm::Stamp,
    /// Whether its day is before today (when the list says).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub overdue: Option<bool>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub contact_name: Option<String>,
}

impl ReminderView {
    pub fn of(row: &Row<Reminder>, today: Option<Date>, contact_name: Option<String>) -> ReminderView {
        let r = &row.body;
        let day = calendar::day_of(r.remind_at);
        ReminderView {
            id: row.id,
            message: r.message.clone(),
            remind_at: r.remind_at,
            date: day.to_string(),
            recurrence: r.recurrence,
            contact_id: r.contact_id,
            by_mail: r.by_mail,
            reoccur_from_completion: r.reoccur_from_completion,
            completed: false,
            last_sent: r.last_sent,
            stamp: crate::crm::Stamp::of(row),
            overdue: today.map(|today| day < today),
            contact_name,
        }
    }
}

/// `{reminders}`: a list of reminders.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct ReminderList {
    pub reminders: Vec<ReminderView>,
}

/// `{message, reminder}`: a reminder created or replaced.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct ReminderSaved {
    pub message: String,
    pub reminder: ReminderView,
}

/// `{message, reminder?, completion?}`: a reminder completed. `reminder` is the rescheduled one
/// (absent for a one-off, which is done and removed); `completion` is absent when skipped.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct ReminderCompleted {
    pub message: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reminder: Option<ReminderView>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub completion: Option<CompletionView>,
}

/// `{completions}`: a contact's completions, newest first.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct CompletionList {
    pub completions: Vec<CompletionView>,
}

/// A completion (a reminder done) as clients read it.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct CompletionView {
    pub id: u64,
    /// `id` again, under the name the existing clients read.
    #[serde(rename = "ID")]
    pub legacy_id: u64,
    pub reminder_id: Option<u64>,
    pub contact_id: u64,
    pub message: String,
    #[schema(value_type = String)]
    pub completed_at: Timestamp,
    #[schema(value_type = String)]
    pub created_at: Timestamp,
}

impl CompletionView {
    pub fn of(row: &Row<Completion>) -> CompletionView {
        CompletionView {
            id: row.id,
            legacy_id: row.id,
            reminder_id: row.body.reminder_id,
            contact_id: row.body.contact_id,
            message: row.body.message.clone(),
            completed_at: row.body.completed_at,
            created_at: row.meta.created_at,
        }
    }
}

/// A contact's reminders, soonest first.
pub fn of_contact(v: &UserView, contact: u64) -> Result<Vec<ReminderView>> {
    let (from, to) = contact_range(contact);
    let rows = v.walk::<Reminder>(
        Walk { index: BY_CONTACT, from: &from, to: Some(&to), after: None, descending: false },
        usize::MAX,
        |_| true,
    )?;
    Ok(rows.rows.iter().map(|r| ReminderView::of(r, None, None)).collect())
}

/// A contact's newest `limit` completions.
pub fn completions_of(v: &UserView, contact: u64, limit: usize) -> Result<Vec<CompletionView>> {
    let (from, to) = contact_range(contact);
    let rows = v.walk::<Completion>(
        Walk { index: BY_CONTACT, from: &from, to: Some(&to), after: None, descending: true },
        limit,
        |_| true,
    )?;
    Ok(rows.rows.iter().map(CompletionView::of).collect())
}

/// Open reminders due within seven days (overdue included) or, when five or fewer, the earliest
/// five; with `contact_name` and `overdue`.
pub fn upcoming_views(v: &UserView, today: Date) -> Result<Vec<ReminderView>> {
    let horizon = today.checked_add(jiff::Span::new().days(7)).unwrap_or(today);
    // A reminder sits at midnight UTC of its day, so those due by the horizon lie below the next
    // day's midnight in the `date` index: walk only that part.
    let below = horizon
        .checked_add(jiff::Span::new().days(1))
        .ok()
        .map(calendar::midnight)
        .filter(|t| t.as_microsecond() > 0)
        .map(micros);
    let walk = Walk { index: BY_DATE, from: "", to: below.as_deref(), after: None, descending: false };
    let due = v.walk::<Reminder>(walk, usize::MAX, |r| calendar::day_of(r.body.remind_at) <= horizon)?.rows;
    let chosen = if due.len() > 5 { due } else { v.walk::<Reminder>(Walk { to: None, ..walk }, 5, |_| true)?.rows };
    let name = |id: u64| v.get::<Contact>(id).map(|c| c.body.name()).ok();
    Ok(chosen.iter().map(|r| ReminderView::of(r, Some(today), name(r.body.contact_id))).collect())
}

#[derive(Debug, Clone, Deserialize, ToSchema)]
pub struct ReminderInput {
    /// 1 to 500 characters.
    #[schema(min_length = 1, max_length = 500, pattern = r"\S")]
    pub message: String,
    /// The day (RFC 3339 instant or `YYYY-MM-DD`); its time of day is dropped.
    #[schema(value_type = crate::crm::schema::DayOrInstant)]
    pub remind_at: String,
    /// `once`, `weekly`, `monthly`, `quarterly`, `six-months` or `yearly`.
    #[schema(pattern = r"^\s*(once|weekly|monthly|quarterly|six-months|yearly)\s*$")]
    pub recurrence: String,
    /// The contact (on the nested route the path wins; on an update, absent keeps the current one).
    pub contact_id: Option<u64>,
    pub by_mail: Option<bool>,
    /// Reschedule from the completion day (default) rather than from the due day.
    pub reoccur_from_completion: Option<bool>,
}

impl ReminderInput {
    fn reminder(self, contact: Option<u64>) -> Result<Reminder> {
        crate::crm::records::check_id("contact_id", self.contact_id)?;
        let recurrence = Recurrence::parse(self.recurrence.trim())
            .ok_or_else(|| Error::invalid("recurrence", format!("must be one of {}", Recurrence::ALL)))?;
        let contact_id = contact.or(self.contact_id).ok_or_else(|| Error::invalid("contact_id", "is required"))?;
        let day = calendar::day_of(instant("remind_at", &self.remind_at)?);
        Ok(Reminder {
            message: self.message.trim().to_string(),
            remind_at: calendar::midnight(day),
            recurrence,
            anchor_day: day.day(),
            contact_id,
            by_mail: self.by_mail.unwrap_or(false),
            reoccur_from_completion: self.reoccur_from_completion.unwrap_or(true),
            last_sent: None,
        })
    }
}

/// Creates a reminder for `contact` (or the input's contact), which must be the user's.
pub async fn create(scope: &UserScope, contact: Option<u64>, input: ReminderInput) -> Result<Row<Reminder>> {
    let reminder = input.reminder(contact)?;
    Ok(scope
        .write_async(move |tx| {
            tx.get::<Contact>(reminder.contact_id)?;
            tx.create(reminder.clone())
        })
        .await?)
}

/// Replaces reminder `id`; when it was last sent stays as stored. One transaction.
/// Without `contact_id`, the reminder stays with its contact.
pub async fn update(scope: &UserScope, id: u64, pre: Precondition, input: ReminderInput) -> Result<Row<Reminder>> {
    let keep_contact = input.contact_id.is_none();
    // The placeholder contact is replaced by the current one inside the transaction.
    let reminder = input.reminder(keep_contact.then_some(0))?;
    Ok(scope
        .write_async(move |tx| {
            if !keep_contact {
                tx.get::<Contact>(reminder.contact_id)?;
            }
            let reminder = reminder.clone();
            tx.update::<Reminder>(id, pre, move |current| {
                let contact_id = if keep_contact { current.contact_id } else { reminder.contact_id };
                *current = Reminder { contact_id, last_sent: current.last_sent, ..reminder };
                Ok(())
            })
        })
        .await?)
}

/// Completes reminder `id` on `today`: records a completion (unless `skip`) and moves a recurring
/// reminder to its next date after today; a one-off reminder is done and removed. Returns the
/// rescheduled reminder (none for a one-off) and the completion.
pub async fn complete(
    scope: &UserScope,
    id: u64,
    today: Date,
    skip: bool,
) -> Result<(Option<Row<Reminder>>, Option<Row<Completion>>)> {
    Ok(scope
        .write_async(move |tx| {
            let current = tx.get::<Reminder>(id)?;
            let r = current.body.clone();
            let completion = if skip {
                None
            } else {
                Some(tx.create(Completion {
                    reminder_id: Some(id),
                    contact_id: r.contact_id,
                    message: r.message.clone(),
                    completed_at: tx.now(),
                })?)
            };
            if r.recurrence == Recurrence::Once {
                tx.delete::<Reminder>(id, Precondition::Any)?;
                return Ok((None, completion));
            }
            let due = calendar::day_of(r.remind_at);
            let mut next = if r.reoccur_from_completion { today.max(due) } else { due };
            loop {
                next = r.recurrence.advance(next, r.anchor_day).unwrap_or(today);
                if next > today {
                    break;
                }
            }
            let row = tx.update::<Reminder>(id, Precondition::Any, |rem| {
                rem.remind_at = calendar::midnight(next);
                Ok(())
            })?;
            Ok((Some(row), completion))
        })
        .await?)
}

/// Completes reminder `id` (see [`complete`]) and answers as clients read it.
pub async fn complete_view(scope: &UserScope, id: u64, today: Date, skip: bool) -> Result<ReminderCompleted> {
    let (next, completion) = complete(scope, id, today, skip).await?;
    let message = if next.is_some() { "Reminder completed and rescheduled" } else { "Reminder completed" };
    Ok(ReminderCompleted {
        message: message.into(),
        reminder: next.as_ref().map(|row| ReminderView::of(row, Some(today), None)),
        completion: completion.as_ref().map(CompletionView::of),
    })
}

/// Deletes completion `id` (it leaves the timeline).
pub async fn delete_completion(scope: &UserScope, id: u64) -> Result<()> {
    scope.write_async(move |tx| tx.delete::<Completion>(id, Precondition::Any)).await?;
    Ok(())
}

/// Every reminder, soonest first.
pub fn all(v: &UserView) -> Result<Vec<Row<Reminder>>> {
    Ok(v.walk::<Reminder>(
        Walk { index: BY_DATE, from: "", to: None, after: None, descending: false },
        usize::MAX,
        |_| true,
    )?
    .rows)
}

/// Reminder `id`.
pub fn get(v: &UserView, id: u64) -> Result<Row<Reminder>> {
    Ok(v.get::<Reminder>(id)?)
}

/// Removes reminder `id` when `pre` holds; its completions stay, as the history of what was done.
pub async fn delete(scope: &UserScope, id: u64, pre: Precondition) -> Result<()> {
    crate::crm::records::delete::<Reminder>(scope, id, pre).await
}
