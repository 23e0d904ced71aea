//! The opaque cursor of a list: a position in an index walk (`"<value>|<id>"`, base64url), the
//! same for every front door that pages.

use base64::Engine as _;

use super::{Error, Result};

/// An opaque position in an index walk: base64url of `"<value>|<id>"`.
pub fn encode_cursor(value: &str, id: u64) -> String {
    base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(format!("{value}|{id}"))
}

pub fn decode_cursor(cursor: &str) -> Result<(String, u64)> {
    let bad = || Error::bad_parameter("cursor", "is not a cursor this server issued");
    let bytes = base64::engine::general_purpose::URL_SAFE_NO_PAD.decode(cursor.trim()).map_err(|_| bad())?;
    let text = String::from_utf8(bytes).map_err(|_| bad())?;
    let (value, id) = text.rsplit_once('|').ok_or_else(bad)?;
    Ok((value.to_string(), id.parse().map_err(|_| bad())?))
}

/// What a list of dated records (notes, activities) asks for.
#[derive(Debug, Clone, Default)]
pub struct DatedFilter {
    /// Case-insensitive substring of the record's text.
    pub search: Option<String>,
    /// Inclusive `YYYY-MM-DD` bounds on the record's date.
    pub from_date: Option<String>,
    pub to_date: Option<String>,
    pub cursor: Option<String>,
    pub limit: usize,
    pub ascending: bool,
}

/// The collections of the `sync` lists, every one reloaded whole to sync: this server serves no
/// `since` change feed on its JSON lists (CardDAV and CalDAV clients sync by token), and a client
/// told a collection is incremental would wait for deletions that are never reported.
pub const FULL_RESYNC: &[&str] = &[
    "contacts",
    "notes",
    "activities",
    "life_events",
    "preferences",
    "cadence_policies",
    "conversation_agenda",
    "gifts",
    "circles",
    "households",
    "tags",
    "relationship_edges",
    "field_definitions",
    "external_identities",
    "external_activities",
];

/// The `sync` member of a cursor list: how a client keeps it current (`full_resync`: reload the
/// list), and which collections sync which way (`incremental` is empty here).
#[derive(Debug, Clone, serde::Serialize, utoipa::ToSchema)]
pub struct SyncInfo {
    /// Always `full_resync` here.
    pub mode: &'static str,
    pub incremental: &'static [&'static str],
    pub full_resync: &'static [&'static str],
}

impl SyncInfo {
    pub fn full_resync() -> SyncInfo {
        SyncInfo { mode: "full_resync", incremental: &[], full_resync: FULL_RESYNC }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cursors_round_trip_and_reject_garbage() {
        let c = encode_cursor("lovelace ada|x", 42);
        assert_eq!(decode_cursor(&c).unwrap(), ("lovelace ada|x".to_string(), 42));
        assert!(decode_cursor("!!!").is_err());
        assert!(decode_cursor(&base64::engine::general_purpose::URL_SAFE_NO_PAD.encode("no-id")).is_err());
    }
}
