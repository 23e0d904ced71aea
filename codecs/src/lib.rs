//! Mycorrhizal's codecs: the neutral contact record (the hub every format maps to) and, later,
//! its formats (vCard, JSContact, CSV, iCalendar). Pure functions: no I/O, no clock. Problems in
//! input are reported as data (a field-naming [`card::CardError`]), never as panics.

pub mod card;
pub mod csv;
pub mod dates;
pub mod ical;
pub mod importable;
pub mod jscontact;
pub mod projection;
pub mod record;
pub mod text;
pub mod vcard;
