//! The daily digest: for each user, the reminders due in the run's window of days, the birthdays
//! in it and the keep-in-touch cadences overdue now, assembled into ONE [`Notification`] per user
//! per day and queued through [`channels::fan_out`] with the key `digest:<user>:<YYYY-MM-DD>`,
//! together with the webhook events `reminder.triggered`, `birthday.occurred` and
//! `cadence.overdue`.
//!
//! Once per user per day: the last day a user's digest was queued is kept in `map:digest_days`
//! and written in the same transaction as the queued messages and the reminders' `last_sent`,
//! so a second run for the same day (a restart, a manual trigger, two runs at once) finds it and
//! sends nothing. A user with nothing due gets nothing (and no marker).
//!
//! Which reminders: a reminder is due on each day of its rule from its `remind_at` on (a one-off
//! on that day only; weekly, monthly, quarterly, six-monthly, yearly by
//! [`Recurrence::advance`], so a monthly one on the 31st falls on the month's last day and a
//! yearly one on 29 February on 1 March in common years), whether or not earlier occurrences
//! were completed. An occurrence is not sent again once `last_sent` is on or after its day (a
//! one-off is sent once; a completed one-off no longer exists).
//!
//! What it does not do: decide when to run (the job table, `jobs`), deliver (the outbox
//! worker), or know the channels (`channels`).

use std::collections::{HashMap, HashSet};

use jiff::Timestamp;
use jiff::civil::Date;
use jiff::tz::TimeZone;
use jiff::{Span, ToSpan};
use mycorrhizal_engine::{Precondition, Tx, UserId, UserView};
use serde_json::{Value, json};

use super::channels::{self, Notification, Senders};
use super::notifier::Notifier;
use super::webhooks;
use crate::auth::records::Account;
use crate::crm::calendar::{self, Recurrence};
use crate::crm::contact::Contact;
use crate::crm::contact::pick::upcoming_birthdays;
use crate::crm::contact::view::BirthdayView;
use crate::crm::reminder::Reminder;
use crate::crm::{Error, Result};
use crate::crm::{cadence::ops as cadence, cadence::ops::Overdue};

/// The last local day each user's digest was queued (key: user id, value: `YYYY-MM-DD`).
const SENT_TABLE: &str = "map:digest_days";
/// Users whose digests are written in one transaction.
pub const BATCH_USERS: usize = 50;
/// Lines shown per section of the text; the rest are counted.
const SECTION_LINES: usize = 20;

/// The days a run covers: `day` (the run's local day) and, after downtime, the missed days
/// before it from `from` on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Window {
    pub from: Date,
    pub day: Date,
}

/// A reminder occurrence in the window.
#[derive(Debug, Clone)]
pub struct DueReminder {
    pub id: u64,
    /// The day of the occurrence (the window's day unless catching up).
    pub due: Date,
    pub message: String,
    pub contact_id: u64,
    pub contact_name: String,
    pub recurrence: Recurrence,
}

/// One user's digest.
#[derive(Debug, Clone, Default)]
pub struct Digest {
    pub reminders: Vec<DueReminder>,
    pub birthdays: Vec<BirthdayView>,
    /// One entry per contact (the most overdue policy).
    pub overdue: Vec<Overdue>,
}

impl Digest {
    pub fn is_empty(&self) -> bool {
        self.reminders.is_empty() && self.birthdays.is_empty() && self.overdue.is_empty()
    }
}

/// What a run queued.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Report {
    /// Users who got their digest.
    pub digests: u64,
    pub reminders: u64,
    pub birthdays: u64,
    pub overdue: u64,
    /// Outbox messages queued (channel messages and webhook deliveries).
    pub messages: u64,
}

/// The first occurrence of `r` on or after `from`, if it is on or before `to`.
pub fn occurrence(r: &Reminder, from: Date, to: Date) -> Option<Date> {
    let mut day = near(r, calendar::day_of(r.remind_at), from);
    while day < from {
        day = r.recurrence.advance(day, r.anchor_day)?;
    }
    (day <= to).then_some(day)
}

/// A day of `r`'s series shortly before `from` (or `start` itself), so that a reminder set long
/// ago is not walked one step at a time.
fn near(r: &Reminder, start: Date, from: Date) -> Date {
    if start >= from {
        return start;
    }
    let months = match r.recurrence {
        Recurrence::Once => return start,
        Recurrence::Weekly => {
            let weeks = (from - start).get_days() / 7;
            return start.checked_add(Span::new().days(i64::from(weeks.max(1) - 1) * 7)).unwrap_or(start);
        }
        Recurrence::Monthly => 1,
        Recurrence::Quarterly => 3,
        Recurrence::SixMonths => 6,
        Recurrence::Yearly => {
            let year = from.year() - 1;
            if year <= start.year() {
                return start;
            }
            // The series' month: February for a 29 February reminder shown on 1 March.
            let month = if r.anchor_day == 29 && start.month() == 3 && start.day() == 1 { 2 } else { start.month() };
            return calendar::in_year(year, month, r.anchor_day.min(31))
                .or_else(|| Date::new(year, month, 28).ok())
                .unwrap_or(start);
        }
    };
    let apart = (i32::from(from.year()) - i32::from(start.year())) * 12 + i32::from(from.month() - start.month());
    let steps = apart / months - 1;
    if steps <= 0 {
        return start;
    }
    let Ok(first) = start.first_of_month().checked_add((steps * months).months()) else { return start };
    Date::new(first.year(), first.month(), r.anchor_day.min(first.days_in_month())).unwrap_or(start)
}

/// Whether occurrence `due` of `r` was already sent (`last_sent` on or after its day).
fn sent(r: &Reminder, due: Date, zone: &TimeZone) -> bool {
    r.last_sent.is_some_and(|at| calendar::today(at, zone) >= due)
}

/// Assembles `user`'s digest for `window` from a read view (`now`: for overdue cadences).
pub fn plan(v: &UserView, window: Window, now: Timestamp, zone: &TimeZone) -> Result<Digest> {
    let mut names: HashMap<u64, String> = HashMap::new();
    let mut name = |id: u64| {
        names.entry(id).or_insert_with(|| v.get::<Contact>(id).map(|c| c.body.name()).unwrap_or_default()).clone()
    };
    let mut reminders = Vec::new();
    for row in crate::crm::reminder::ops::all(v)? {
        let r = &row.body;
        let Some(due) = occurrence(r, window.from, window.day) else { continue };
        if sent(r, due, zone) {
            continue;
        }
        reminders.push(DueReminder {
            id: row.id,
            due,
            message: r.message.clone(),
            contact_id: r.contact_id,
            contact_name: name(r.contact_id),
            recurrence: r.recurrence,
        });
    }
    reminders.sort_by(|a, b| (a.due, &a.contact_name, a.id).cmp(&(b.due, &b.contact_name, b.id)));
    let birthdays = upcoming_birthdays(v, window.from, window.day, usize::MAX)?;
    let mut seen = HashSet::new();
    let overdue = cadence::overdue(v, now)?.into_iter().filter(|o| seen.insert(o.contact_id)).collect();
    Ok(Digest { reminders, birthdays, overdue })
}

fn count(n: usize, one: &str, many: &str) -> Option<String> {
    match n {
        0 => None,
        1 => Some(format!("1 {one}")),
        n => Some(format!("{n} {many}")),
    }
}

fn day_text(day: Date) -> String {
    day.strftime("%A %-d %B").to_string()
}

fn section(text: &mut String, title: &str, lines: Vec<String>) {
    if lines.is_empty() {
        return;
    }
    text.push_str(&format!("\n{title}\n"));
    for line in lines.iter().take(SECTION_LINES) {
        text.push_str(&format!("- {line}\n"));
    }
    if lines.len() > SECTION_LINES {
        text.push_str(&format!("- ...and {} more\n", lines.len() - SECTION_LINES));
    }
}

/// The digest as a notification: a subject that counts ("Today: 3 reminders, 1 birthday") and a
/// plain text naming the people.
pub fn notification(d: &Digest, window: Window) -> Notification {
    let catching_up = window.from < window.day;
    let parts: Vec<String> = [
        count(d.reminders.len(), "reminder", "reminders"),
        count(d.birthdays.len(), "birthday", "birthdays"),
        count(d.overdue.len(), "person to get in touch with", "people to get in touch with"),
    ]
    .into_iter()
    .flatten()
    .collect();
    let lead = if catching_up { format!("Since {}", window.from.strftime("%-d %B")) } else { "Today".to_string() };
    let subject = format!("{lead}: {}", parts.join(", "));
    let mut text = if catching_up {
        format!(
            "Good morning! The server was away for a while: here is what came due from {} to {}.\n",
            day_text(window.from),
            day_text(window.day)
        )
    } else {
        format!("Good morning! Here is your {}.\n", day_text(window.day))
    };
    let when = |due: Date| if due == window.day { String::new() } else { format!(" (on {})", day_text(due)) };
    let reminders = d
        .reminders
        .iter()
        .map(|r| {
            let who = if r.contact_name.is_empty() { String::new() } else { format!(" ({})", r.contact_name) };
            format!("{}{who}{}", r.message, when(r.due))
        })
        .collect();
    section(&mut text, "Reminders", reminders);
    let birthdays = d
        .birthdays
        .iter()
        .map(|b| {
            let on = b.date.parse::<Date>().map(when).unwrap_or_default();
            match (b.age, on.is_empty()) {
                (Some(age), true) => format!("{} turns {age} today", b.name),
                (Some(age), false) => format!("{} turned {age}{on}", b.name),
                (None, true) => format!("{}'s birthday is today", b.name),
                (None, false) => format!("{}'s birthday{on}", b.name),
            }
        })
        .collect();
    section(&mut text, "Birthdays", birthdays);
    let overdue = d
        .overdue
        .iter()
        .map(|o| {
            let days = o.policy.interval_days;
            let late = match o.health.overdue_by {
                0 => "due today".to_string(),
                1 => "1 day overdue".to_string(),
                n => format!("{n} days overdue"),
            };
            let every = if days == 1 { "day".to_string() } else { format!("{days} days") };
            format!("{}: you meant to be in touch every {every} ({late})", o.contact_name)
        })
        .collect();
    section(&mut text, "Keep in touch", overdue);
    text.push_str("\nHave a good day.\n");
    Notification { subject, text }
}

/// Forgets `user`'s day marker (an account's deletion). Returns how many rows went.
pub(crate) fn remove_user(tx: &Tx<'_>, user: u64) -> mycorrhizal_engine::Result<u64> {
    Ok(u64::from(tx.global().map_remove(SENT_TABLE, &user.to_string())?))
}

/// The last day `user`'s digest was queued.
fn last_day(tx: &Tx<'_>, user: u64) -> mycorrhizal_engine::Result<Option<Date>> {
    let stored = tx.global().map_get(SENT_TABLE, &user.to_string())?;
    Ok(stored.and_then(|bytes| String::from_utf8(bytes).ok()).and_then(|text| text.parse().ok()))
}

/// Queues `user`'s digest in `tx`, re-checking inside the transaction what the plan read: the
/// day's marker, and each reminder (still there, still due, not yet sent). Sets each included
/// reminder's `last_sent`, fans the notification out, queues the webhook events and writes the
/// marker. Returns what was queued (nothing when the day is done or nothing is left).
pub fn queue(
    tx: &Tx<'_>,
    senders: &Senders,
    zone: &TimeZone,
    user: u64,
    window: Window,
    planned: &Digest,
) -> mycorrhizal_engine::Result<Report> {
    if last_day(tx, user)?.is_some_and(|done| done >= window.day) {
        return Ok(Report::default());
    }
    let scope = tx.user(UserId(user));
    let now = tx.now();
    let mut reminders = Vec::new();
    for r in &planned.reminders {
        let Ok(row) = scope.get::<Reminder>(r.id) else { continue };
        if occurrence(&row.body, window.from, window.day) != Some(r.due) || sent(&row.body, r.due, zone) {
            continue;
        }
        scope.update::<Reminder>(r.id, Precondition::Any, |stored| {
            stored.last_sent = Some(now);
            Ok(())
        })?;
        reminders.push(r.clone());
    }
    let digest = Digest { reminders, ..planned.clone() };
    if digest.is_empty() {
        return Ok(Report::default());
    }
    let key = format!("digest:{user}:{}", window.day);
    let mut messages = channels::fan_out(tx, senders, user, &notification(&digest, window), &key)?.len() as u64;
    for r in &digest.reminders {
        let data = || {
            json!({
                "reminder_id": r.id, "message": r.message, "contact_id": r.contact_id,
                "contact_name": r.contact_name, "recurrence": r.recurrence, "due": r.due.to_string(),
                "last_sent": now,
            })
        };
        messages += webhooks::publish(tx, user, "reminder.triggered", &data)? as u64;
    }
    for b in &digest.birthdays {
        messages += webhooks::publish(tx, user, "birthday.occurred", &|| birthday_data(b))? as u64;
    }
    for o in &digest.overdue {
        messages += webhooks::publish(tx, user, "cadence.overdue", &|| overdue_data(o))? as u64;
    }
    tx.global().map_put(SENT_TABLE, &user.to_string(), window.day.to_string().as_bytes())?;
    Ok(Report {
        digests: 1,
        reminders: digest.reminders.len() as u64,
        birthdays: digest.birthdays.len() as u64,
        overdue: digest.overdue.len() as u64,
        messages,
    })
}

fn birthday_data(b: &BirthdayView) -> Value {
    json!({ "contact_id": b.contact_id, "name": b.name, "birthday": b.birthday, "date": b.date, "age": b.age })
}

fn overdue_data(o: &Overdue) -> Value {
    json!({
        "policy_id": o.policy.id, "contact_id": o.contact_id, "contact_name": o.contact_name,
        "interval_days": o.policy.interval_days, "last_interaction": o.health.last_interaction,
        "next_due": o.health.next_due, "overdue_by": o.health.overdue_by,
    })
}

/// Queues every user's digest for `window` (users in batches of [`BATCH_USERS`], one write
/// transaction each; each batch planned from read views first) and wakes the delivery worker
/// after each batch that queued something.
pub async fn run(notifier: &Notifier, window: Window) -> Result<Report> {
    let senders = Senders::of(notifier);
    let zone = notifier.reminder_timezone.clone();
    let users: Vec<u64> = crate::crm::blocking(&notifier.engine, |engine| engine.global()?.list::<Account>())
        .await??
        .into_iter()
        .map(|(id, _)| id)
        .collect();
    let mut total = Report::default();
    for batch in users.chunks(BATCH_USERS) {
        let (batch, zone_) = (batch.to_vec(), zone.clone());
        let now = notifier.engine.clock().now();
        let engine = notifier.engine.clone();
        let plans = tokio::task::spawn_blocking(move || {
            let global = engine.global()?;
            let mut plans = Vec::new();
            for user in batch {
                let done = global.map_get(SENT_TABLE, &user.to_string())?;
                let done: Option<Date> = done.and_then(|b| String::from_utf8(b).ok()).and_then(|t| t.parse().ok());
                if done.is_some_and(|d| d >= window.day) {
                    continue;
                }
                let digest = plan(&engine.user(UserId(user)).view()?, window, now, &zone_)?;
                if !digest.is_empty() {
                    plans.push((user, digest));
                }
            }
            Ok::<_, Error>(plans)
        })
        .await
        .map_err(Error::internal)??;
        if plans.is_empty() {
            continue;
        }
        let (senders, zone) = (senders.clone(), zone.clone());
        let report = notifier
            .engine
            .write_async(move |tx| {
                let mut report = Report::default();
                for (user, digest) in &plans {
                    let queued = queue(tx, &senders, &zone, *user, window, digest)?;
                    report.digests += queued.digests;
                    report.reminders += queued.reminders;
                    report.birthdays += queued.birthdays;
                    report.overdue += queued.overdue;
                    report.messages += queued.messages;
                }
                Ok(report)
            })
            .await?;
        if report.messages > 0 {
            notifier.outbox.signal.wake();
        }
        total.digests += report.digests;
        total.reminders += report.reminders;
        total.birthdays += report.birthdays;
        total.overdue += report.overdue;
        total.messages += report.messages;
    }
    Ok(total)
}

#[cfg(test)]
mod tests {
    use super::*;
    use jiff::civil::date;

    fn reminder(day: Date, recurrence: Recurrence) -> Reminder {
        Reminder {
            message: "m".into(),
            remind_at: calendar::midnight(day),
            recurrence,
            anchor_day: day.day(),
            contact_id: 1,
            by_mail: false,
            reoccur_from_completion: true,
            last_sent: None,
        }
    }

    /// The series walked one step at a time, for comparison.
    fn slow(r: &Reminder, from: Date, to: Date) -> Option<Date> {
        let mut day = calendar::day_of(r.remind_at);
        while day < from {
            day = r.recurrence.advance(day, r.anchor_day)?;
        }
        (day <= to).then_some(day)
    }

    #[test]
    fn occurrences_follow_each_rule_and_the_shortcut_agrees_with_the_walk() {
        let rules = [
            Recurrence::Once,
            Recurrence::Weekly,
            Recurrence::Monthly,
            Recurrence::Quarterly,
            Recurrence::SixMonths,
            Recurrence::Yearly,
        ];
        let starts = [date(2016, 2, 29), date(2019, 1, 31), date(2020, 8, 30), date(2024, 12, 31), date(2026, 3, 1)];
        for rule in rules {
            for start in starts {
                let r = reminder(start, rule);
                let mut day = date(2026, 1, 1);
                while day < date(2029, 1, 1) {
                    assert_eq!(occurrence(&r, day, day), slow(&r, day, day), "{rule:?} from {start} on {day}");
                    day = day.tomorrow().unwrap();
                }
            }
        }
    }

    #[test]
    fn the_calendar_rules_of_the_digest() {
        let yearly = reminder(date(2024, 2, 29), Recurrence::Yearly);
        let on = |r: &Reminder, d: Date| occurrence(r, d, d).is_some();
        assert!(!on(&yearly, date(2027, 2, 28)));
        assert!(on(&yearly, date(2027, 3, 1)), "29 February falls on 1 March in a common year");
        assert!(on(&yearly, date(2028, 2, 29)));
        assert!(!on(&yearly, date(2028, 3, 1)), "and on 29 February in a leap year");
        let monthly = reminder(date(2026, 1, 31), Recurrence::Monthly);
        assert!(on(&monthly, date(2026, 4, 30)), "clamped to a 30-day month's last day");
        assert!(on(&monthly, date(2026, 2, 28)));
        assert!(on(&monthly, date(2026, 5, 31)), "back to the 31st");
        let once = reminder(date(2026, 5, 4), Recurrence::Once);
        assert!(on(&once, date(2026, 5, 4)) && !on(&once, date(2026, 5, 5)));
        assert_eq!(occurrence(&once, date(2026, 5, 1), date(2026, 5, 6)), Some(date(2026, 5, 4)), "a catch-up window");
        let mut sent_once = once.clone();
        sent_once.last_sent = Some("2026-05-04T06:00:00Z".parse().unwrap());
        assert!(sent(&sent_once, date(2026, 5, 4), &TimeZone::UTC), "a one-off is not sent again");
    }

    #[test]
    fn the_subject_counts_and_the_text_names_the_people() {
        let day = date(2026, 3, 1);
        let digest = Digest {
            reminders: vec![DueReminder {
                id: 1,
                due: day,
                message: "Call about the trip".into(),
                contact_id: 2,
                contact_name: "Mum".into(),
                recurrence: Recurrence::Once,
            }],
            birthdays: vec![BirthdayView {
                kind: "contact",
                contact_id: 3,
                name: "Ada Lovelace".into(),
                birthday: "1990-03-01".into(),
                date: "2026-03-01".into(),
                days_until: 0,
                age: Some(36),
                photo_thumbnail: None,
            }],
            overdue: Vec::new(),
        };
        let n = notification(&digest, Window { from: day, day });
        assert_eq!(n.subject, "Today: 1 reminder, 1 birthday");
        assert!(n.text.contains("Call about the trip (Mum)"), "{}", n.text);
        assert!(n.text.contains("Ada Lovelace turns 36 today"), "{}", n.text);
        assert!(n.text.contains("Sunday 1 March"), "{}", n.text);
        let late = notification(&digest, Window { from: date(2026, 2, 26), day });
        assert!(late.subject.starts_with("Since 26 February: "), "{}", late.subject);
    }
}
