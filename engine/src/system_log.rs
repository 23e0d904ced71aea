//! The indexes of the two system logs (events and job runs), so that the operator's reads stay
//! cheap however long the logs grow: every entry is listed under a few index keys (all entries,
//! its component, its severity, its result, ...), each in time order, and each key's entries are
//! counted.
//!
//! Tables (copied by snapshots like any other by their prefixes):
//! - `idx:<log>`: `(0, key, time, id) -> ()`, where `time` is the entry's instant as a
//!   fixed-width number of microseconds, so string order is time order. The user slot is 0: no
//!   user has id 0, so a user's purge never touches it.
//! - `map:<log>_counts`: `key -> u64` (little-endian), the entries listed under `key`.
//!
//! A read walks the rarest of the keys it asks for, in time order, and checks the others on each
//! entry; a page of one key (or of none) and its total come from the index alone.

use jiff::Timestamp;
use redb::{ReadableDatabase, ReadableTable, ReadableTableMetadata, TableDefinition, TableError};
use serde::de::DeserializeOwned;

use crate::tables::{index_table, map_table};
use crate::{Engine, Result, Tx, codec};

/// One system log: its rows (`id -> encoded entry`), index and counts.
pub(crate) struct Log {
    pub rows: TableDefinition<'static, u64, &'static [u8]>,
    pub index: &'static str,
    pub counts: &'static str,
}

/// An entry of a system log: when it happened and the index keys it is listed under ("" is
/// every entry's).
pub(crate) trait Entry: DeserializeOwned {
    fn id(&self) -> u64;
    fn at(&self) -> Timestamp;
    fn keys(&self) -> Vec<String>;
    /// Decodes a stored row, from this build's layout or an earlier one.
    fn decode(bytes: &[u8]) -> Result<Self> {
        codec::decode("system", bytes)
    }
}

/// Which entries of a log to read, and how many.
#[derive(Debug, Clone, Default)]
pub struct LogQuery {
    /// Index keys every entry read must be listed under (none: every entry).
    pub keys: Vec<String>,
    /// Only entries at or after this instant.
    pub since: Option<Timestamp>,
    /// Only entries at or before this instant.
    pub until: Option<Timestamp>,
    /// At most this many entries.
    pub limit: usize,
    /// Oldest first instead of newest first.
    pub oldest_first: bool,
    /// Stop once `limit` entries are found: `total` then counts only what was walked (for a
    /// caller that wants the newest few, not how many there are).
    pub skip_total: bool,
}

/// A page of a log: the entries, and how many entries the query matches in all.
#[derive(Debug, Clone, PartialEq)]
pub struct LogPage<T> {
    pub items: Vec<T>,
    pub total: u64,
}

/// The time column of the index: microseconds since the epoch, 20 digits (before 1970: 0).
fn time_key(at: Timestamp) -> String {
    format!("{:020}", at.as_microsecond().max(0))
}

fn count_of(bytes: Option<redb::AccessGuard<'_, &'static [u8]>>) -> u64 {
    bytes.and_then(|b| <[u8; 8]>::try_from(b.value()).ok()).map(u64::from_le_bytes).unwrap_or(0)
}

/// Lists `entry` in the index and counts it, inside the transaction that stores it.
pub(crate) fn add(tx: &Tx<'_>, log: &Log, entry: &impl Entry) -> Result<()> {
    change(tx, log, entry, true)
}

/// Takes `entry` out of the index and its counts, inside the transaction that removes it.
pub(crate) fn remove(tx: &Tx<'_>, log: &Log, entry: &impl Entry) -> Result<()> {
    change(tx, log, entry, false)
}

fn change(tx: &Tx<'_>, log: &Log, entry: &impl Entry, listed: bool) -> Result<()> {
    let (time, id, keys) = (time_key(entry.at()), entry.id(), entry.keys());
    let mut index = tx.table(index_table(log.index))?;
    for key in &keys {
        if listed {
            index.insert((0u64, key.as_str(), time.as_str(), id), ())?;
        } else {
            index.remove((0u64, key.as_str(), time.as_str(), id))?;
        }
    }
    drop(index);
    let mut counts = tx.table(map_table(log.counts))?;
    for key in &keys {
        let now = count_of(counts.get(key.as_str())?);
        let next = if listed { now + 1 } else { now.saturating_sub(1) };
        if next == 0 {
            counts.remove(key.as_str())?;
        } else {
            counts.insert(key.as_str(), next.to_le_bytes().as_slice())?;
        }
    }
    Ok(())
}

/// Builds the index of a log whose rows were written before it existed (a database of an
/// earlier build), in one transaction. Nothing to do when the log is empty or indexed.
pub(crate) fn index_existing<T: Entry + Send + 'static>(engine: &Engine, log: &'static Log) -> Result<u64> {
    let needed = {
        let txn = engine.db().begin_read()?;
        let rows = match txn.open_table(log.rows) {
            Ok(rows) => rows.len()?,
            Err(TableError::TableDoesNotExist(_)) => 0,
            Err(e) => return Err(e.into()),
        };
        let indexed = match txn.open_table(map_table(log.counts)) {
            Ok(counts) => count_of(counts.get("")?),
            Err(TableError::TableDoesNotExist(_)) => 0,
            Err(e) => return Err(e.into()),
        };
        rows > 0 && indexed == 0
    };
    if !needed {
        return Ok(0);
    }
    engine.write(move |tx| {
        let entries: Vec<T> = {
            let rows = tx.table(log.rows)?;
            let mut out = Vec::new();
            for row in rows.iter()? {
                let (id, bytes) = row?;
                // A row that does not read is left unlisted (and logged), not a reason to refuse
                // the database: the timeline is best-effort.
                match T::decode(bytes.value()) {
                    Ok(entry) => out.push(entry),
                    Err(e) => tracing::warn!(event = "system_log_row_unreadable", id = id.value(), error = %e),
                }
            }
            out
        };
        for entry in &entries {
            add(tx, log, entry)?;
        }
        Ok(entries.len() as u64)
    })
}

impl Engine {
    /// A page of `log` for `query` (see [`LogQuery`]).
    pub(crate) fn log_page<T: Entry>(&self, log: &Log, query: &LogQuery) -> Result<LogPage<T>> {
        let txn = self.db().begin_read()?;
        let index = match txn.open_table(index_table(log.index)) {
            Ok(index) => index,
            Err(TableError::TableDoesNotExist(_)) => return Ok(LogPage { items: Vec::new(), total: 0 }),
            Err(e) => return Err(e.into()),
        };
        // A purge opens (and so makes) the index before anything is listed: no counts or rows
        // yet is an empty log.
        let (counts, rows) = match (txn.open_table(map_table(log.counts)), txn.open_table(log.rows)) {
            (Ok(counts), Ok(rows)) => (counts, rows),
            (Err(TableError::TableDoesNotExist(_)), _) | (_, Err(TableError::TableDoesNotExist(_))) => {
                return Ok(LogPage { items: Vec::new(), total: 0 });
            }
            (Err(e), _) | (_, Err(e)) => return Err(e.into()),
        };
        // The rarest key asked for leads; the others are checked on each entry.
        let mut asked: Vec<(u64, &str)> = Vec::new();
        for key in &query.keys {
            asked.push((count_of(counts.get(key.as_str())?), key.as_str()));
        }
        asked.sort();
        let lead = asked.first().map_or("", |(_, key)| key);
        let others: Vec<&str> = asked.iter().skip(1).map(|(_, key)| *key).collect();
        let from = query.since.map_or_else(|| time_key(Timestamp::MIN), time_key);
        let to = query.until.map_or_else(|| time_key(Timestamp::MAX), time_key);
        if from > to {
            return Ok(LogPage { items: Vec::new(), total: 0 });
        }
        let unbounded = query.since.is_none() && query.until.is_none();
        let range = index.range((0u64, lead, from.as_str(), 0u64)..=(0u64, lead, to.as_str(), u64::MAX))?;
        let walk: Box<dyn Iterator<Item = _>> =
            if query.oldest_first { Box::new(range) } else { Box::new(range.rev()) };
        let mut items = Vec::new();
        let mut total = 0;
        for listed in walk {
            let (key, _) = listed?;
            let id = key.value().3;
            if others.is_empty() {
                if query.skip_total && items.len() >= query.limit {
                    break;
                }
                // Counted from the index alone; a whole key's count is in the counts table.
                if items.len() < query.limit {
                    if let Some(row) = rows.get(id)? {
                        items.push(T::decode(row.value())?);
                    }
                } else if unbounded {
                    total = count_of(counts.get(lead)?);
                    return Ok(LogPage { items, total });
                }
                total += 1;
                continue;
            }
            if query.skip_total && items.len() >= query.limit {
                break;
            }
            let Some(row) = rows.get(id)? else { continue };
            let entry = T::decode(row.value())?;
            let keys = entry.keys();
            if others.iter().all(|other| keys.iter().any(|k| k == other)) {
                total += 1;
                if items.len() < query.limit {
                    items.push(entry);
                }
            }
        }
        Ok(LogPage { items, total })
    }

    /// The entries of `log` with these ids, newest first (ids not found are left out).
    pub(crate) fn log_entries<T: Entry>(&self, log: &Log, ids: &[u64]) -> Result<Vec<T>> {
        let txn = self.db().begin_read()?;
        let rows = match txn.open_table(log.rows) {
            Ok(rows) => rows,
            Err(TableError::TableDoesNotExist(_)) => return Ok(Vec::new()),
            Err(e) => return Err(e.into()),
        };
        let mut out = Vec::new();
        for id in ids {
            if let Some(row) = rows.get(id)? {
                out.push(T::decode(row.value())?);
            }
        }
        out.sort_by_key(|entry: &T| std::cmp::Reverse((entry.at(), entry.id())));
        out.dedup_by_key(|entry| entry.id());
        Ok(out)
    }

    /// Hard-deletes the entries of `log` older than `cutoff` (by their instant), with their
    /// index entries and counts. Returns how many.
    pub(crate) async fn log_purge<T: Entry + Send + 'static>(
        &self,
        log: &'static Log,
        cutoff: Timestamp,
    ) -> Result<u64> {
        self.write_async(move |tx| {
            let below = time_key(cutoff);
            let expired: Vec<(u64, String)> = {
                let index = tx.table(index_table(log.index))?;
                let mut found = Vec::new();
                for listed in index.range((0u64, "", "", 0u64)..(0u64, "", below.as_str(), 0u64))? {
                    let key = listed?.0;
                    let (_, _, time, id) = key.value();
                    found.push((id, time.to_string()));
                }
                found
            };
            let mut removed = 0;
            for (id, time) in expired {
                let decoded = tx.table(log.rows)?.get(id)?.map(|row| T::decode(row.value()));
                match decoded {
                    Some(Ok(entry)) => remove(tx, log, &entry)?,
                    // Unreadable or gone: its place in the time order goes (its other keys cannot
                    // be known), so the purge does not meet it again.
                    Some(Err(_)) | None => {
                        tx.table(index_table(log.index))?.remove((0u64, "", time.as_str(), id))?;
                        let mut counts = tx.table(map_table(log.counts))?;
                        let all = count_of(counts.get("")?).saturating_sub(1);
                        counts.insert("", all.to_le_bytes().as_slice())?;
                    }
                }
                if tx.table(log.rows)?.remove(id)? {
                    removed += 1;
                }
            }
            Ok(removed)
        })
        .await
    }
}
