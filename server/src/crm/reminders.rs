//! Reminders and completions as clients read them, and the reads the contact page and the
//! dashboard share (a contact's reminders, the upcoming ones).

use jiff::civil::Date;
use mycorrhizal_engine::{Row, UserView, Walk};
use serde_json::{Value, json};

use super::Result;
use super::calendar;
use super::contact::Contact;
use super::records::{BY_CONTACT, BY_DATE, Completion, Reminder, contact_range, micros};

pub fn view(row: &Row<Reminder>, today: Option<Date>, contact_name: Option<String>) -> Value {
    let r = &row.body;
    let day = calendar::day_of(r.remind_at);
    let mut out = json!({
        "id": row.id,
        "message": r.message,
        "remind_at": r.remind_at,
        "date": day.to_string(),
        "recurrence": r.recurrence,
        "contact_id": r.contact_id,
        "by_mail": r.by_mail,
        "reoccur_from_completion": r.reoccur_from_completion,
        "completed": false,
        "last_sent": r.last_sent,
        "revision": row.meta.revision,
        "etag": row.etag().trim_matches('"'),
        "created_at": row.meta.created_at,
        "updated_at": row.meta.updated_at,
    });
    if let Some(today) = today {
        out["overdue"] = json!(day < today);
    }
    if let Some(name) = contact_name {
        out["contact_name"] = json!(name);
    }
    out
}

pub fn completion_view(row: &Row<Completion>) -> Value {
    json!({
        "id": row.id,
        "reminder_id": row.body.reminder_id,
        "contact_id": row.body.contact_id,
        "message": row.body.message,
        "completed_at": row.body.completed_at,
        "created_at": row.meta.created_at,
    })
}

/// A contact's reminders, soonest first.
pub fn of_contact(v: &UserView, contact: u64) -> Result<Vec<Value>> {
    let (from, to) = contact_range(contact);
    let rows = v.walk::<Reminder>(
        Walk { index: BY_CONTACT, from: &from, to: Some(&to), after: None, descending: false },
        usize::MAX,
        |_| true,
    )?;
    Ok(rows.rows.iter().map(|r| view(r, None, None)).collect())
}

/// A contact's newest `limit` completions.
pub fn completions_of(v: &UserView, contact: u64, limit: usize) -> Result<Vec<Value>> {
    let (from, to) = contact_range(contact);
    let rows = v.walk::<Completion>(
        Walk { index: BY_CONTACT, from: &from, to: Some(&to), after: None, descending: true },
        limit,
        |_| true,
    )?;
    Ok(rows.rows.iter().map(completion_view).collect())
}

/// Open reminders due within seven days (overdue included) or, when five or fewer, the earliest
/// five; with `contact_name` and `overdue`.
pub fn upcoming_views(v: &UserView, today: Date) -> Result<Vec<Value>> {
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
    Ok(chosen.iter().map(|r| view(r, Some(today), name(r.body.contact_id))).collect())
}
