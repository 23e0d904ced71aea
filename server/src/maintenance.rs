//! What an admin can ask the instance to recompute, from any front door: every contact's derived
//! columns, and the answers' shapes of those and of the search index rebuild (which is a job,
//! recorded as a run: `jobs::search_rebuild_now`).

use mycorrhizal_engine::{Engine, UserId};

use crate::crm::Result;

/// Recomputes every user's contacts' derived columns from their cards; returns
/// `(scanned, updated)`. Only rows whose projection changed are written.
pub async fn rebuild_derived(engine: &Engine) -> Result<(u64, u64)> {
    let (mut scanned, mut updated) = (0u64, 0u64);
    for user in crate::auth::accounts::ids(engine).await? {
        let rebuilt = crate::crm::contact::ops::rebuild_derived(&engine.user(UserId(user))).await?;
        scanned += rebuilt.scanned;
        updated += rebuilt.updated;
    }
    Ok((scanned, updated))
}

/// `{message, contacts_scanned, contacts_updated}`: the derived contact columns rebuilt.
#[derive(Debug, serde::Serialize, utoipa::ToSchema)]
pub struct DerivedRebuilt {
    pub message: String,
    pub contacts_scanned: u64,
    pub contacts_updated: u64,
}

impl DerivedRebuilt {
    pub fn of(contacts_scanned: u64, contacts_updated: u64) -> DerivedRebuilt {
        DerivedRebuilt { message: "Derived contact columns rebuilt".into(), contacts_scanned, contacts_updated }
    }
}

/// `{message, indexed}`: the search index rebuilt, with the live rows indexed (all users).
#[derive(Debug, serde::Serialize, utoipa::ToSchema)]
pub struct SearchRebuilt {
    pub message: String,
    pub indexed: IndexedCounts,
}

/// Rows indexed per searchable kind.
#[derive(Debug, serde::Serialize, utoipa::ToSchema)]
pub struct IndexedCounts {
    pub contacts: u64,
    pub notes: u64,
    pub activities: u64,
}

impl SearchRebuilt {
    pub fn of(report: &mycorrhizal_engine::RebuildReport) -> SearchRebuilt {
        let count = |kind: &str| report.indexed.iter().find(|(k, _)| *k == kind).map_or(0, |(_, n)| *n);
        let indexed = IndexedCounts { contacts: count("contact"), notes: count("note"), activities: count("activity") };
        SearchRebuilt { message: "Search index rebuilt".into(), indexed }
    }
}
