//! The CRM domain: the user-owned record types (contacts, notes, activities, reminders,
//! completions, relationships, households), their validation and save hooks, and the calendar rules.
//! Handlers in `api/` parse and render; the rules live here and in the engine's write path.

pub mod calendar;
pub mod contact;
pub mod depth;
pub mod households;
pub mod reach_out;
pub mod records;

/// The kinds full-text search indexes, in the order `/search` groups them.
pub fn search_sources() -> Vec<mycorrhizal_engine::Source> {
    use mycorrhizal_engine::Source;
    vec![Source::of::<contact::Contact>().contacts(), Source::of::<records::Note>(), Source::of::<records::Activity>()]
}
