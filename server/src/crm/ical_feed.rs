//! The read-only subscription feed of a user's dates, for calendar apps that subscribe to a URL:
//! `/ical/<user>-<secret>.ics` serves their birthdays, life events and upcoming reminders as one
//! iCalendar file. The secret is made (and any earlier one replaced) by [`rotate`], which shows
//! it once, and ended by [`revoke`]; only its SHA-256 is kept, as the user's blob [`BLOB`], so a
//! backup carries it and a user's purge takes it. Anyone holding the URL reads the dates and
//! nothing else: it grants no other access.

use jiff::civil::Date;
use mycorrhizal_codecs::ical::{self, Day, When};
use mycorrhizal_engine::{Engine, UserId, UserScope, UserView};
use sha2::{Digest, Sha256};

use super::calendar::day_of;
use super::contact::Contact;
use super::reminder::Reminder;
use super::{Error, Result};
use super::{calendar_events as events, calendar_events::Source};

/// The user's blob holding the feed secret's SHA-256.
pub const BLOB: &str = "ical-feed.sha256";

fn digest(secret: &str) -> Vec<u8> {
    Sha256::digest(secret.as_bytes()).to_vec()
}

/// Makes a new secret (the old one stops working) and returns the feed's file name,
/// `<user>-<secret>.ics`: shown this once.
pub async fn rotate(scope: &UserScope) -> Result<String> {
    let mut bytes = [0u8; 24];
    getrandom::fill(&mut bytes).map_err(Error::internal)?;
    let secret = hex::encode(bytes);
    let stored = digest(&secret);
    scope.write_async(move |tx| tx.put_blob(BLOB, &stored)).await?;
    Ok(format!("{}-{secret}.ics", scope.id().0))
}

/// Ends the feed; `false` when there was none.
pub async fn revoke(scope: &UserScope) -> Result<bool> {
    Ok(scope.write_async(|tx| tx.delete_blob(BLOB)).await?)
}

/// Whether the user has a feed.
pub fn enabled(view: &UserView) -> Result<bool> {
    Ok(view.blob(BLOB)?.is_some())
}

/// The user a feed file name `<user>-<secret>.ics` belongs to, when its secret is that user's
/// current one.
pub fn owner(engine: &Engine, file: &str) -> Result<Option<UserId>> {
    let Some((user, secret)) = file.strip_suffix(".ics").and_then(|f| f.split_once('-')) else { return Ok(None) };
    let Ok(user) = user.parse::<u64>() else { return Ok(None) };
    let stored = engine.user(UserId(user)).view()?.blob(BLOB)?;
    // Both sides are digests of equal length; comparing them leaks nothing about the secret.
    Ok(stored.filter(|s| *s == digest(secret)).map(|_| UserId(user)))
}

/// The feed: every birthday and life event (yearly), and every reminder due from `today` on
/// (on its day), as one iCalendar file.
pub fn calendar(view: &UserView, today: Date) -> Result<String> {
    let mut out: Vec<ical::Event> =
        events::all(view)?.into_iter().filter(|e| !matches!(e.source, Source::Activity(_))).map(|e| e.event).collect();
    for row in view.list::<Reminder>()? {
        let day = day_of(row.body.remind_at);
        if day < today {
            continue;
        }
        let Ok(next) = day.tomorrow() else { continue };
        let who = view.get_any::<Contact>(row.body.contact_id)?.filter(|c| !c.is_deleted()).map(|c| c.body.name());
        let summary = match who {
            Some(name) if !name.is_empty() => format!("{}: {name}", row.body.message),
            _ => row.body.message.clone(),
        };
        let as_day = |d: Date| Day { year: d.year().max(0) as u16, month: d.month() as u8, day: d.day() as u8 };
        let stamp = events::utc_of(row.meta.updated_at);
        out.push(ical::Event {
            uid: format!("reminder-{}@mycorrhizal", row.id),
            summary,
            description: String::new(),
            location: String::new(),
            categories: vec!["reminder".into()],
            when: When::Day { day: as_day(day), next_day: as_day(next) },
            stamp,
        });
    }
    Ok(ical::write_all(&out))
}
