//! The CRM domain: the user-owned record types (contacts, notes, activities, reminders,
//! completions, relationships), their validation and save hooks, and the calendar rules.
//! Handlers in `api/` parse and render; the rules live here and in the engine's write path.

pub mod calendar;
pub mod contact;
pub mod depth;
pub mod records;
