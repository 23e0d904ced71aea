//! The CRM domain: the user-owned record types (contacts, notes, activities, reminders,
//! completions, relationships, households), their validation and save hooks, and the calendar rules.
//! Handlers in `api/` parse and render; the rules live here and in the engine's write path.

pub mod calendar;
pub mod contact;
pub mod depth;
pub mod export;
pub mod households;
pub mod import;
pub mod pictures;
pub mod reach_out;
pub mod records;

/// The kinds full-text search indexes, in the order `/search` groups them.
pub fn search_sources() -> Vec<mycorrhizal_engine::Source> {
    use mycorrhizal_engine::Source;
    vec![Source::of::<contact::Contact>().contacts(), Source::of::<records::Note>(), Source::of::<records::Activity>()]
}

/// Every user record kind, for the index backfill at start-up (`Engine::ensure_indexes`): a kind
/// whose `INDEX_VERSION` was raised gets its index entries derived again from its stored rows. A
/// new record kind belongs here.
pub fn record_kinds() -> Vec<mycorrhizal_engine::Indexed> {
    use mycorrhizal_engine::Indexed;
    vec![
        Indexed::of::<contact::Contact>(),
        Indexed::of::<records::Note>(),
        Indexed::of::<records::Activity>(),
        Indexed::of::<records::Reminder>(),
        Indexed::of::<records::Completion>(),
        Indexed::of::<records::Relationship>(),
        Indexed::of::<depth::LifeEvent>(),
        Indexed::of::<depth::Gift>(),
        Indexed::of::<depth::AgendaItem>(),
        Indexed::of::<depth::Attachment>(),
        Indexed::of::<depth::CadencePolicy>(),
        Indexed::of::<households::Household>(),
        Indexed::of::<households::HouseholdMember>(),
        Indexed::of::<households::DismissedHouseholdSuggestion>(),
        Indexed::of::<reach_out::ReachOutSuggestion>(),
    ]
}

/// The schema version this server's migrations produce (what `/health/ready` expects).
pub fn schema_version() -> u32 {
    migrations().last().map(|m| m.version).unwrap_or(0)
}

/// The schema migrations this server runs at open: the engine's own, then the steps that convert
/// stored rows of the server's record kinds whose shape changed.
pub fn migrations() -> Vec<mycorrhizal_engine::Migration> {
    let mut steps = mycorrhizal_engine::migrate::steps();
    steps.push(mycorrhizal_engine::Migration {
        version: 3,
        name: "reach-out suggestions carry old and new values",
        run: reach_out::migrate_values,
    });
    steps
}
