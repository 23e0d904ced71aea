//! Notes, activities, reminders, reminder completions and relationships: user content with
//! revisions and soft deletes, each declaring its indexes for the engine's write path.
//!
//! Composite index values are zero-padded so text order is numeric order: `"{contact:020}{time:020}"`
//! lists one contact's rows by time with a single range walk.

use jiff::Timestamp;
use mycorrhizal_engine::{Invalid, Kind, Record, SearchDoc, kind};
use serde::{Deserialize, Serialize};

use super::calendar::Recurrence;

pub const BY_CONTACT: &str = "contact";
pub const BY_DATE: &str = "date";
/// An activity's calendar resource name, when a calendar client created it (unique per user).
pub const BY_DAV_NAME: &str = "dav_name";
/// An activity's event UID (its `uuid`).
pub const BY_UID: &str = "uid";

/// `{contact:020}{micros:020}`.
pub fn contact_time(contact: u64, at: Timestamp) -> String {
    format!("{contact:020}{:020}", at.as_microsecond().max(0))
}

/// The walk bounds `[from, to)` of one contact's rows in a `contact` index.
pub fn contact_range(contact: u64) -> (String, String) {
    (format!("{contact:020}"), format!("{:020}", contact + 1))
}

pub fn micros(at: Timestamp) -> String {
    format!("{:020}", at.as_microsecond().max(0))
}

fn length(field: &str, text: &str, min: usize, max: usize) -> Result<(), Invalid> {
    let n = text.trim().chars().count();
    if n < min || n > max {
        return Err(Invalid::new(
            field,
            if min > 0 { format!("must be {min} to {max} characters") } else { format!("at most {max} characters") },
        ));
    }
    Ok(())
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Note {
    pub content: String,
    pub date: Timestamp,
    /// `None` for an unassigned note.
    pub contact_id: Option<u64>,
}

impl Record for Note {
    const KIND: Kind = kind!("note", soft_delete);

    fn validate(&self) -> Result<(), Invalid> {
        length("content", &self.content, 1, 5000)
    }

    fn index_entries(&self) -> Vec<(&'static str, String)> {
        vec![(BY_CONTACT, contact_time(self.contact_id.unwrap_or(0), self.date)), (BY_DATE, micros(self.date))]
    }

    fn search_doc(&self) -> Option<SearchDoc> {
        Some(SearchDoc {
            body: self.content.clone(),
            contacts: self.contact_id.into_iter().collect(),
            ..SearchDoc::default()
        })
    }
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Activity {
    pub uuid: String,
    pub title: String,
    pub description: String,
    pub location: String,
    pub date: Timestamp,
    pub contact_ids: Vec<u64>,
    /// Open vocabulary (`call`, `meal`, ...).
    pub kind: String,
    pub external_ref: String,
    /// The resource name (`<name>.ics`, as the client wrote it) a calendar client created this
    /// activity's event under; empty for an activity made anywhere else (served as
    /// `activity-<id>.ics`). Its `uuid` is then the client's event UID.
    #[serde(default)]
    pub dav_name: String,
}

/// An activity as stored before schema version 5 (no `dav_name`); migration 5 converts it.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ActivityV4 {
    pub uuid: String,
    pub title: String,
    pub description: String,
    pub location: String,
    pub date: Timestamp,
    pub contact_ids: Vec<u64>,
    pub kind: String,
    pub external_ref: String,
}

impl From<ActivityV4> for Activity {
    fn from(a: ActivityV4) -> Activity {
        let ActivityV4 { uuid, title, description, location, date, contact_ids, kind, external_ref } = a;
        Activity { uuid, title, description, location, date, contact_ids, kind, external_ref, dav_name: String::new() }
    }
}

/// Migration step 5: stored activities gain `dav_name` (empty).
pub fn migrate_activity_names(txn: &mycorrhizal_engine::migrate::MigrationTx<'_>) -> mycorrhizal_engine::Result<()> {
    mycorrhizal_engine::migrate::convert_rows::<ActivityV4, Activity>(txn, From::from).map(|_| ())
}

impl Record for Activity {
    const KIND: Kind = kind!("activity", soft_delete);
    /// 1: the `dav_name` and `uid` entries.
    const INDEX_VERSION: u32 = 1;
    const UNIQUE: &'static [&'static str] = &[BY_DAV_NAME];

    fn validate(&self) -> Result<(), Invalid> {
        length("title", &self.title, 1, 200)?;
        length("description", &self.description, 0, 2000)?;
        length("location", &self.location, 0, 300)?;
        length("type", &self.kind, 0, 100)
    }

    fn save_hook(&mut self) {
        self.contact_ids.sort_unstable();
        self.contact_ids.dedup();
    }

    fn index_entries(&self) -> Vec<(&'static str, String)> {
        let mut entries: Vec<_> = self.contact_ids.iter().map(|c| (BY_CONTACT, contact_time(*c, self.date))).collect();
        entries.push((BY_DATE, micros(self.date)));
        entries.push((BY_UID, self.uuid.clone()));
        if !self.dav_name.is_empty() {
            entries.push((BY_DAV_NAME, self.dav_name.clone()));
        }
        entries
    }

    fn search_doc(&self) -> Option<SearchDoc> {
        let body = [self.description.as_str(), self.location.as_str()].join("\n");
        Some(SearchDoc { title: self.title.clone(), body, contacts: self.contact_ids.clone(), hidden: false })
    }
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Reminder {
    pub message: String,
    /// Midnight UTC of the reminder's calendar day (time of day is zeroed on write).
    pub remind_at: Timestamp,
    pub recurrence: Recurrence,
    /// Day of month of the first date, so monthly reminders return to the 31st after February.
    pub anchor_day: i8,
    pub contact_id: u64,
    pub by_mail: bool,
    /// Reschedule from the completion day rather than from the due day.
    pub reoccur_from_completion: bool,
    pub last_sent: Option<Timestamp>,
}

impl Record for Reminder {
    const KIND: Kind = kind!("reminder", soft_delete);

    fn validate(&self) -> Result<(), Invalid> {
        length("message", &self.message, 1, 500)
    }

    fn save_hook(&mut self) {
        let day = super::calendar::day_of(self.remind_at);
        self.remind_at = super::calendar::midnight(day);
    }

    fn index_entries(&self) -> Vec<(&'static str, String)> {
        vec![(BY_CONTACT, contact_time(self.contact_id, self.remind_at)), (BY_DATE, micros(self.remind_at))]
    }
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Completion {
    pub reminder_id: Option<u64>,
    pub contact_id: u64,
    pub message: String,
    pub completed_at: Timestamp,
}

impl Record for Completion {
    const KIND: Kind = kind!("reminder_completion", soft_delete);

    fn index_entries(&self) -> Vec<(&'static str, String)> {
        vec![(BY_CONTACT, contact_time(self.contact_id, self.completed_at))]
    }
}

/// Relation types clients know; anything else is kept as a custom type.
pub const KNOWN_RELATIONS: &[&str] = &[
    "parent_of",
    "child_of",
    "spouse_of",
    "sibling_of",
    "friend_of",
    "roommate_of",
    "coworker_of",
    "partner_of",
    "co_parent_of",
    "mentor_of",
    "mentee_of",
    "owned_by",
    "owns",
    "gets_along_with",
    "conflicts_with",
    "related_to",
];

/// Relation types that hold both ways: either end "is" the relation.
pub const SYMMETRIC_RELATIONS: &[&str] = &[
    "spouse_of",
    "sibling_of",
    "friend_of",
    "roommate_of",
    "coworker_of",
    "partner_of",
    "co_parent_of",
    "gets_along_with",
    "conflicts_with",
    "related_to",
];

/// Common words mapped to their relation type.
pub fn relation_token(text: &str) -> String {
    let t = text.trim().to_lowercase().replace([' ', '-'], "_");
    let mapped = match t.as_str() {
        "spouse" | "husband" | "wife" => "spouse_of",
        "parent" | "mother" | "father" => "parent_of",
        "child" | "son" | "daughter" => "child_of",
        "sibling" | "brother" | "sister" => "sibling_of",
        "friend" => "friend_of",
        "colleague" | "coworker" => "coworker_of",
        "partner" => "partner_of",
        "roommate" => "roommate_of",
        "mentor" => "mentor_of",
        "mentee" => "mentee_of",
        other => other,
    };
    mapped.to_string()
}

pub const BY_SOURCE: &str = "source";
pub const BY_TARGET: &str = "target";

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Relationship {
    pub source: u64,
    pub target: u64,
    /// A known token or a custom type.
    pub kind: String,
    /// `normal`, `private` or `secret`: only normal edges are projected into the card.
    pub sensitivity: String,
    pub note: String,
}

impl Record for Relationship {
    // A join row: deleting it (or either contact) removes it outright.
    const KIND: Kind = kind!("relationship", hard_delete);

    fn validate(&self) -> Result<(), Invalid> {
        if self.kind.is_empty()
            || self.kind.chars().count() > 50
            || !self.kind.chars().all(|c| c.is_alphanumeric() || c == '_')
        {
            return Err(Invalid::new("type", "must be 1 to 50 letters, digits or underscores"));
        }
        if !["normal", "private", "secret"].contains(&self.sensitivity.as_str()) {
            return Err(Invalid::new("sensitivity", "must be normal, private or secret"));
        }
        if self.source == self.target {
            return Err(Invalid::new("target_id", "a contact cannot be related to itself"));
        }
        length("note", &self.note, 0, 1000)
    }

    fn index_entries(&self) -> Vec<(&'static str, String)> {
        vec![(BY_SOURCE, format!("{:020}", self.source)), (BY_TARGET, format!("{:020}", self.target))]
    }
}

/// An id a request names must be one the API document allows: at most `i64::MAX` (the largest
/// integer every JSON client holds exactly), even where the route then ignores it.
pub fn check_id(field: &str, id: Option<u64>) -> super::Result<()> {
    match id {
        Some(id) if id > i64::MAX as u64 => Err(super::Error::invalid(field, "must be at most 9223372036854775807")),
        _ => Ok(()),
    }
}

/// Removes the user's record `id` of kind `R` when `pre` holds; a tombstone stays for sync
/// clients until the retention purge. The shared step of the kinds' own `delete` operations,
/// which say what their deletion leaves behind.
pub(crate) async fn delete<R: Record>(
    scope: &mycorrhizal_engine::UserScope,
    id: u64,
    pre: mycorrhizal_engine::Precondition,
) -> super::Result<()> {
    scope.write_async(move |tx| tx.delete::<R>(id, pre).map(|_| ())).await?;
    Ok(())
}
