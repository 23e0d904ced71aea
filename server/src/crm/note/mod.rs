//! A note: free text with a date, about one contact or unassigned. The record and its indexes;
//! its operations and views are [`ops`].

use jiff::Timestamp;
use mycorrhizal_engine::{Invalid, Kind, Record, SearchDoc, kind};
use serde::{Deserialize, Serialize};

use crate::crm::{records::BY_CONTACT, records::BY_DATE, records::contact_time, records::length, records::micros};

pub mod ops;

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
