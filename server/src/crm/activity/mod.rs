//! An activity: something done with one or more contacts (a call, a dinner), dated. The record,
//! its indexes and its migration; its operations and views are [`ops`].

use jiff::Timestamp;
use mycorrhizal_engine::{Invalid, Kind, Record, SearchDoc, kind};
use serde::{Deserialize, Serialize};

use crate::crm::{records::BY_CONTACT, records::BY_DATE, records::contact_time, records::length, records::micros};

pub mod ops;

/// An activity's calendar resource name, when a calendar client created it (unique per user).
pub const BY_DAV_NAME: &str = "dav_name";
/// An activity's event UID (its `uuid`).
pub const BY_UID: &str = "uid";

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
    /// The iCalendar object a calendar client last wrote for this activity's event, served back
    /// as it was written (its alarms, recurrence, edited occurrences, sequence, relations and
    /// every other property); the activity's own fields are read from it, and an edit of them
    /// elsewhere is written into it. Empty for an activity no calendar client has written.
    #[serde(default)]
    pub ical: String,
}

/// An activity as stored from schema version 5 to 6 (no `ical`); migration 7 converts it.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ActivityV5 {
    pub uuid: String,
    pub title: String,
    pub description: String,
    pub location: String,
    pub date: Timestamp,
    pub contact_ids: Vec<u64>,
    pub kind: String,
    pub external_ref: String,
    pub dav_name: String,
}

impl Record for ActivityV5 {
    const KIND: Kind = kind!("activity", soft_delete);
}

impl From<ActivityV5> for Activity {
    fn from(a: ActivityV5) -> Activity {
        let ActivityV5 { uuid, title, description, location, date, contact_ids, kind, external_ref, dav_name } = a;
        Activity {
            uuid,
            title,
            description,
            location,
            date,
            contact_ids,
            kind,
            external_ref,
            dav_name,
            ical: String::new(),
        }
    }
}

/// Migration step 7: stored activities gain `ical` (empty).
pub fn migrate_activity_texts(txn: &mycorrhizal_engine::migrate::MigrationTx<'_>) -> mycorrhizal_engine::Result<()> {
    mycorrhizal_engine::migrate::convert_rows::<ActivityV5, Activity>(txn, From::from).map(|_| ())
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

impl From<ActivityV4> for ActivityV5 {
    fn from(a: ActivityV4) -> ActivityV5 {
        let ActivityV4 { uuid, title, description, location, date, contact_ids, kind, external_ref } = a;
        ActivityV5 {
            uuid,
            title,
            description,
            location,
            date,
            contact_ids,
            kind,
            external_ref,
            dav_name: String::new(),
        }
    }
}

/// Migration step 5: stored activities gain `dav_name` (empty), in the shape of its day
/// ([`ActivityV5`]; step 7 goes on from there).
pub fn migrate_activity_names(txn: &mycorrhizal_engine::migrate::MigrationTx<'_>) -> mycorrhizal_engine::Result<()> {
    mycorrhizal_engine::migrate::convert_rows::<ActivityV4, ActivityV5>(txn, From::from).map(|_| ())
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
