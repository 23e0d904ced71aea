//! Records that deepen a contact: life events (partial dates; a month-and-day event recurs
//! yearly), gifts (ideas have no date) and conversation-agenda items (open until discussed).
//! Each belongs to one contact and is listed through the `contact` index. One folder for the
//! three kinds: they share their operations ([`ops`], one generic save and delete).

use jiff::Timestamp;
use mycorrhizal_codecs::dates::Partial;
use mycorrhizal_engine::{Invalid, Kind, Record, kind};
use serde::{Deserialize, Serialize};

use crate::crm::{records::BY_CONTACT, records::contact_time, records::length as text};

pub mod ops;

pub const LIFE_EVENT_CATEGORIES: &[&str] =
    &["home_living", "health_wellness", "work_education", "travel_experiences", "family_relationships"];
pub const GIFT_STATUSES: &[&str] = &["idea", "purchased", "given", "received"];

fn url(field: &str, value: &str) -> Result<(), Invalid> {
    if !value.is_empty() && !(value.starts_with("https://") || value.starts_with("http://")) {
        return Err(Invalid::new(field, "must be an http(s) URL"));
    }
    text(field, value, 0, 2000)
}

/// A partial date as stored. (The codec's `Partial` skips empty members when serialized, which
/// suits JSON but not a positional binary encoding, so rows keep every member.)
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct DateParts {
    pub year: Option<i32>,
    pub month: Option<u8>,
    pub day: Option<u8>,
}

impl From<Partial> for DateParts {
    fn from(p: Partial) -> Self {
        DateParts { year: p.year, month: p.month, day: p.day }
    }
}

impl From<DateParts> for Partial {
    fn from(d: DateParts) -> Self {
        Partial { year: d.year, month: d.month, day: d.day }
    }
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct LifeEvent {
    pub contact_id: u64,
    /// Open vocabulary (`graduated`, `married`, `moved`, ...).
    pub kind: String,
    pub category: String,
    pub date: DateParts,
    pub description: String,
    /// Other contacts involved (their UIDs).
    pub related: Vec<String>,
    pub remind: bool,
}

impl LifeEvent {
    /// `YYYYMMDD` with zeros for unknown parts: sorts events in time within a contact.
    pub fn sortable(&self) -> String {
        format!(
            "{:04}{:02}{:02}",
            self.date.year.unwrap_or(0).max(0),
            self.date.month.unwrap_or(0),
            self.date.day.unwrap_or(0)
        )
    }
}

impl Record for LifeEvent {
    const KIND: Kind = kind!("life_event", soft_delete);

    fn validate(&self) -> Result<(), Invalid> {
        text("type", &self.kind, 0, 100)?;
        text("description", &self.description, 0, 2000)?;
        if !self.category.is_empty() && !LIFE_EVENT_CATEGORIES.contains(&self.category.as_str()) {
            return Err(Invalid::new("category", format!("must be one of {}", LIFE_EVENT_CATEGORIES.join(", "))));
        }
        if self.date.month.is_some_and(|m| !(1..=12).contains(&m))
            || self.date.day.is_some_and(|d| !(1..=31).contains(&d))
        {
            return Err(Invalid::new("date", "month must be 1-12 and day 1-31"));
        }
        if self.date.day.is_some() && self.date.month.is_none() {
            return Err(Invalid::new("date", "a day needs a month"));
        }
        if self.kind.trim().is_empty() && self.description.trim().is_empty() {
            return Err(Invalid::new("type", "give the event a type or a description"));
        }
        Ok(())
    }

    fn index_entries(&self) -> Vec<(&'static str, String)> {
        vec![(BY_CONTACT, format!("{:020}{}", self.contact_id, self.sortable()))]
    }
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Gift {
    pub contact_id: u64,
    /// `idea`, `purchased`, `given` or `received`.
    pub status: String,
    pub occasion: String,
    pub description: String,
    pub url: String,
    pub notes: String,
    /// Absent for an idea.
    pub date: Option<Timestamp>,
    pub value_cents: Option<i64>,
    pub currency: Option<String>,
}

impl Record for Gift {
    const KIND: Kind = kind!("gift", soft_delete);

    fn validate(&self) -> Result<(), Invalid> {
        text("description", &self.description, 1, 2000)?;
        text("occasion", &self.occasion, 0, 200)?;
        text("notes", &self.notes, 0, 2000)?;
        url("url", &self.url)?;
        if !GIFT_STATUSES.contains(&self.status.as_str()) {
            return Err(Invalid::new("status", format!("must be one of {}", GIFT_STATUSES.join(", "))));
        }
        match (&self.value_cents, &self.currency) {
            (Some(v), Some(c)) if *v >= 0 && c.len() == 3 && c.chars().all(|ch| ch.is_ascii_uppercase()) => Ok(()),
            (None, None) => Ok(()),
            (Some(_), None) | (None, Some(_)) => Err(Invalid::new("currency", "value_cents and currency go together")),
            _ => Err(Invalid::new("currency", "a non-negative value with a 3-letter ISO currency code (e.g. EUR)")),
        }
    }

    fn index_entries(&self) -> Vec<(&'static str, String)> {
        vec![(BY_CONTACT, contact_time(self.contact_id, self.date.unwrap_or(Timestamp::UNIX_EPOCH)))]
    }
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct AgendaItem {
    pub contact_id: u64,
    pub content: String,
    pub reference_url: String,
    /// `None` while open.
    pub discussed_at: Option<Timestamp>,
    pub activity_id: Option<u64>,
}

impl Record for AgendaItem {
    const KIND: Kind = kind!("agenda_item", soft_delete);

    fn validate(&self) -> Result<(), Invalid> {
        text("content", &self.content, 1, 2000)?;
        url("reference_url", &self.reference_url)
    }

    fn index_entries(&self) -> Vec<(&'static str, String)> {
        // Open items first within a contact, then by id (creation order).
        let state = if self.discussed_at.is_some() { "1" } else { "0" };
        vec![(BY_CONTACT, format!("{:020}{state}", self.contact_id))]
    }
}
