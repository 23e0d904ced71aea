//! A reminder (once or recurring, day-granular) and its completions. The records and their
//! indexes; the operations and views are [`ops`].

use jiff::Timestamp;
use mycorrhizal_engine::{Invalid, Kind, Record, kind};
use serde::{Deserialize, Serialize};

use crate::crm::calendar::Recurrence;
use crate::crm::{records::BY_CONTACT, records::BY_DATE, records::contact_time, records::length, records::micros};

pub mod ops;

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
