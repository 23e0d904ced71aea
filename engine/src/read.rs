//! Reads. A [`UserView`] is one consistent read transaction scoped to one user; the helpers below
//! are shared with the write path so a row is decoded and filtered the same way everywhere.

use std::ops::Bound;

use redb::{ReadTransaction, ReadableTable, TableError};

use crate::changes::Change;
use crate::record::{Record, Row};
use crate::tables::{self, BLOBS, CHANGES, LIVE_COUNTS, USER_SEQ};
use crate::{Error, Result, codec};

/// A live (not deleted) row of `user`, or `NotFound`.
pub(crate) fn live_row<R: Record>(
    table: &impl ReadableTable<(u64, u64), &'static [u8]>,
    name: &str,
    user: u64,
    id: u64,
) -> Result<Row<R>> {
    match any_row(table, name, user, id)? {
        Some(row) if !row.is_deleted() => Ok(row),
        _ => Err(Error::NotFound),
    }
}

/// A row of `user` including tombstones.
pub(crate) fn any_row<R: Record>(
    table: &impl ReadableTable<(u64, u64), &'static [u8]>,
    name: &str,
    user: u64,
    id: u64,
) -> Result<Option<Row<R>>> {
    match table.get((user, id))? {
        Some(bytes) => Ok(Some(codec::decode(name, bytes.value())?)),
        None => Ok(None),
    }
}

pub(crate) fn index_ids(
    table: &impl ReadableTable<(u64, &'static str, &'static str, u64), ()>,
    user: u64,
    index: &str,
    value: &str,
) -> Result<Vec<u64>> {
    let range = table.range((user, index, value, 0)..=(user, index, value, u64::MAX))?;
    range.map(|entry| Ok(entry?.0.value().3)).collect()
}

/// The leading fields of record kind `R`'s body, for listings that need only those of every
/// row ([`UserView::list_heads`]): a row is stored as postcard, which writes a struct's fields
/// one after the other, so a struct of `R`'s first fields, in order and of the same types, reads
/// them and leaves the rest unread. A string field it passes over on the way is [`Skipped`].
/// Implement it only for such a struct, with a test that it reads what `R` holds.
pub trait Head<R: Record>: serde::de::DeserializeOwned {}

/// A string field of a row a [`Head`] passes over: its bytes are not copied.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Skipped;

impl<'de> serde::Deserialize<'de> for Skipped {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> std::result::Result<Self, D::Error> {
        struct Passed;
        impl serde::de::Visitor<'_> for Passed {
            type Value = Skipped;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("a string")
            }
            fn visit_str<E: serde::de::Error>(self, _: &str) -> std::result::Result<Skipped, E> {
                Ok(Skipped)
            }
        }
        deserializer.deserialize_str(Passed)
    }
}

/// Lookups of rows of kind `R` by index value and by id in one [`UserView`], its two tables
/// opened once ([`UserView::lookup`]) rather than at every call: a request that looks up a
/// thousand rows (a CardDAV multiget) opens them once, and its threads share them.
pub struct Lookup<'a, R: Record> {
    /// Each `None` when there is no such table yet (nothing was ever written to it): a lookup
    /// in it finds nothing.
    index: Option<redb::ReadOnlyTable<IndexKey, ()>>,
    records: Option<redb::ReadOnlyTable<(u64, u64), &'static [u8]>>,
    user: u64,
    kind: std::marker::PhantomData<&'a fn() -> R>,
}

/// The key of an index table: user, index name, value, id.
type IndexKey = (u64, &'static str, &'static str, u64);

impl<R: Record> Lookup<'_, R> {
    /// [`UserView::find`].
    pub fn find(&self, index: &str, value: &str) -> Result<Vec<u64>> {
        match &self.index {
            Some(table) => index_ids(table, self.user, index, value),
            None => Ok(Vec::new()),
        }
    }

    /// [`UserView::get`].
    pub fn get(&self, id: u64) -> Result<Row<R>> {
        match &self.records {
            Some(table) => live_row(table, R::KIND.records, self.user, id),
            None => Err(Error::NotFound),
        }
    }
}

/// One read transaction, scoped to one user. Keep it short-lived: an open read transaction
/// holds freed pages from reuse.
pub struct UserView {
    pub(crate) txn: ReadTransaction,
    pub(crate) user: u64,
}

/// Where a [`UserView::walk`] goes: an index, a value range `[from, to)`, a resume point.
#[derive(Debug, Clone, Copy)]
pub struct Walk<'a> {
    pub index: &'a str,
    /// Inclusive lower value bound (`""` for the start).
    pub from: &'a str,
    /// Exclusive upper value bound (`None` for the end).
    pub to: Option<&'a str>,
    /// `(value, id)` of the previous page's last row.
    pub after: Option<(&'a str, u64)>,
    pub descending: bool,
}

/// A page of rows read through an index, in index order.
#[derive(Debug, Clone)]
pub struct Page<R> {
    pub rows: Vec<Row<R>>,
    /// `(value, id)` of the last row, to resume after; `None` when there are no more rows.
    pub next: Option<(String, u64)>,
}

impl UserView {
    /// A [`Lookup`] of rows of kind `R`, for many lookups.
    pub fn lookup<R: Record>(&self) -> Result<Lookup<'_, R>> {
        fn opened<T>(table: std::result::Result<T, TableError>) -> Result<Option<T>> {
            match table {
                Ok(table) => Ok(Some(table)),
                Err(TableError::TableDoesNotExist(_)) => Ok(None),
                Err(e) => Err(e.into()),
            }
        }
        Ok(Lookup {
            index: opened(self.txn.open_table(tables::index_table(R::KIND.index)))?,
            records: opened(self.txn.open_table(tables::record_table(R::KIND.records)))?,
            user: self.user,
            kind: std::marker::PhantomData,
        })
    }

    pub fn get<R: Record>(&self, id: u64) -> Result<Row<R>> {
        match self.txn.open_table(tables::record_table(R::KIND.records)) {
            Ok(table) => live_row(&table, R::KIND.records, self.user, id),
            Err(TableError::TableDoesNotExist(_)) => Err(Error::NotFound),
            Err(e) => Err(e.into()),
        }
    }

    /// The user's blob `name` (see [`crate::TxUser::put_blob`]), or `None`.
    pub fn blob(&self, name: &str) -> Result<Option<Vec<u8>>> {
        match self.txn.open_table(BLOBS) {
            Ok(table) => Ok(table.get((self.user, name))?.map(|v| v.value().to_vec())),
            Err(TableError::TableDoesNotExist(_)) => Ok(None),
            Err(e) => Err(e.into()),
        }
    }

    /// The names of the user's blobs, in order.
    pub fn blob_names(&self) -> Result<Vec<String>> {
        match self.txn.open_table(BLOBS) {
            Ok(table) => table
                .range((self.user, "")..(self.user + 1, ""))?
                .map(|entry| Ok(entry?.0.value().1.to_string()))
                .collect(),
            Err(TableError::TableDoesNotExist(_)) => Ok(Vec::new()),
            Err(e) => Err(e.into()),
        }
    }

    /// A row including its tombstone, for sync.
    pub fn get_any<R: Record>(&self, id: u64) -> Result<Option<Row<R>>> {
        match self.txn.open_table(tables::record_table(R::KIND.records)) {
            Ok(table) => any_row(&table, R::KIND.records, self.user, id),
            Err(TableError::TableDoesNotExist(_)) => Ok(None),
            Err(e) => Err(e.into()),
        }
    }

    /// Every live row of this kind, by id.
    pub fn list<R: Record>(&self) -> Result<Vec<Row<R>>> {
        let mut rows = self.scan::<R>()?;
        rows.retain(|r| !r.is_deleted());
        Ok(rows)
    }

    /// Every live row of this kind, by id, its body read only as far as head `H` (a listing of
    /// ten thousand rows that needs a few fields of each: the rest is neither decoded nor copied).
    pub fn list_heads<R: Record, H: Head<R>>(&self) -> Result<Vec<Row<H>>> {
        let table = match self.txn.open_table(tables::record_table(R::KIND.records)) {
            Ok(table) => table,
            Err(TableError::TableDoesNotExist(_)) => return Ok(Vec::new()),
            Err(e) => return Err(e.into()),
        };
        let mut rows = Vec::new();
        for entry in table.range((self.user, 0)..=(self.user, u64::MAX))? {
            let row: Row<H> = codec::decode(R::KIND.records, entry?.1.value())?;
            if !row.is_deleted() {
                rows.push(row);
            }
        }
        Ok(rows)
    }

    /// Every row including tombstones, by id.
    pub fn scan<R: Record>(&self) -> Result<Vec<Row<R>>> {
        let table = match self.txn.open_table(tables::record_table(R::KIND.records)) {
            Ok(table) => table,
            Err(TableError::TableDoesNotExist(_)) => return Ok(Vec::new()),
            Err(e) => return Err(e.into()),
        };
        let range = table.range((self.user, 0)..=(self.user, u64::MAX))?;
        range.map(|entry| codec::decode(R::KIND.records, entry?.1.value())).collect()
    }

    /// The lowest and highest id among this user's rows of this kind, tombstones included (two
    /// key lookups; no scan). `None` when the user has none. Ids come from one counter per kind
    /// shared by all users, so a user's ids are this range with gaps.
    pub fn id_bounds<R: Record>(&self) -> Result<Option<(u64, u64)>> {
        let table = match self.txn.open_table(tables::record_table(R::KIND.records)) {
            Ok(table) => table,
            Err(TableError::TableDoesNotExist(_)) => return Ok(None),
            Err(e) => return Err(e.into()),
        };
        let mut range = table.range((self.user, 0)..=(self.user, u64::MAX))?;
        let first = match range.next() {
            Some(entry) => entry?.0.value().1,
            None => return Ok(None),
        };
        let last = match range.next_back() {
            Some(entry) => entry?.0.value().1,
            None => first,
        };
        Ok(Some((first, last)))
    }

    /// Number of live rows of this kind (kept by the write path; no scan).
    pub fn count<R: Record>(&self) -> Result<u64> {
        match self.txn.open_table(LIVE_COUNTS) {
            Ok(table) => Ok(table.get((self.user, R::KIND.name))?.map(|v| v.value()).unwrap_or(0)),
            Err(TableError::TableDoesNotExist(_)) => Ok(0),
            Err(e) => Err(e.into()),
        }
    }

    /// Number of live rows whose index `index` holds exactly `value` (walks the index entries only).
    pub fn count_where<R: Record>(&self, index: &str, value: &str) -> Result<u64> {
        Ok(self.find::<R>(index, value)?.len() as u64)
    }

    /// Ids whose index holds exactly `value`.
    pub fn find<R: Record>(&self, index: &str, value: &str) -> Result<Vec<u64>> {
        match self.txn.open_table(tables::index_table(R::KIND.index)) {
            Ok(table) => index_ids(&table, self.user, index, value),
            Err(TableError::TableDoesNotExist(_)) => Ok(Vec::new()),
            Err(e) => Err(e.into()),
        }
    }

    /// Ids whose index `index` holds a value in `[from, to)` (`to: None` for the end), in index
    /// order, without repeats. Reads index keys only, no row.
    pub fn find_range<R: Record>(&self, index: &str, from: &str, to: Option<&str>) -> Result<Vec<u64>> {
        let table = match self.txn.open_table(tables::index_table(R::KIND.index)) {
            Ok(table) => table,
            Err(TableError::TableDoesNotExist(_)) => return Ok(Vec::new()),
            Err(e) => return Err(e.into()),
        };
        let upper_name = format!("{index}\0");
        let start: Bound<(u64, &str, &str, u64)> = Bound::Included((self.user, index, from, 0));
        let end: Bound<(u64, &str, &str, u64)> = match to {
            Some(to) => Bound::Excluded((self.user, index, to, 0)),
            None => Bound::Excluded((self.user, upper_name.as_str(), "", 0)),
        };
        let mut ids = Vec::new();
        let mut seen = std::collections::HashSet::new();
        for entry in table.range::<(u64, &str, &str, u64)>((start, end))? {
            let id = entry?.0.value().3;
            if seen.insert(id) {
                ids.push(id);
            }
        }
        Ok(ids)
    }

    /// The distinct values index `index` holds, in order. Skips from one value to the next
    /// (one seek per value), so a value held by 100,000 rows costs what one held by one does.
    pub fn index_values<R: Record>(&self, index: &str) -> Result<Vec<String>> {
        let table = match self.txn.open_table(tables::index_table(R::KIND.index)) {
            Ok(table) => table,
            Err(TableError::TableDoesNotExist(_)) => return Ok(Vec::new()),
            Err(e) => return Err(e.into()),
        };
        let upper_name = format!("{index}\0");
        let end: Bound<(u64, &str, &str, u64)> = Bound::Excluded((self.user, upper_name.as_str(), "", 0));
        let mut values: Vec<String> = Vec::new();
        let mut from = String::new();
        loop {
            let start: Bound<(u64, &str, &str, u64)> = Bound::Included((self.user, index, from.as_str(), 0));
            let Some(entry) = table.range::<(u64, &str, &str, u64)>((start, end))?.next() else { break };
            let value = entry?.0.value().2.to_string();
            // The smallest string above every string that starts with `value`'s bytes and
            // equals it: `value` followed by NUL.
            from = format!("{value}\0");
            values.push(value);
        }
        Ok(values)
    }

    /// Every `(index name, value, id)` entry of this kind, for consistency checks.
    pub fn index_entries<R: Record>(&self) -> Result<Vec<(String, String, u64)>> {
        let table = match self.txn.open_table(tables::index_table(R::KIND.index)) {
            Ok(table) => table,
            Err(TableError::TableDoesNotExist(_)) => return Ok(Vec::new()),
            Err(e) => return Err(e.into()),
        };
        let lo = (self.user, "", "", 0u64);
        let range = table.range::<(u64, &str, &str, u64)>(lo..)?;
        let mut out = Vec::new();
        for entry in range {
            let (key, _) = entry?;
            let (user, name, value, id) = key.value();
            if user != self.user {
                break;
            }
            out.push((name.to_string(), value.to_string(), id));
        }
        Ok(out)
    }

    /// Up to `limit` live rows in the order of index `index`, starting after `after`
    /// (`(value, id)` of the previous page's last row), ascending or descending.
    pub fn page<R: Record>(
        &self,
        index: &str,
        after: Option<(&str, u64)>,
        limit: usize,
        descending: bool,
    ) -> Result<Page<R>> {
        self.walk(Walk { index, from: "", to: None, after, descending }, limit, |_: &Row<R>| true)
    }

    /// Up to `limit` live rows that `keep` accepts, in the order of index `walk.index`, within
    /// the value range `[walk.from, walk.to)`, resuming after `walk.after`.
    pub fn walk<R: Record>(
        &self,
        walk: Walk<'_>,
        limit: usize,
        mut keep: impl FnMut(&Row<R>) -> bool,
    ) -> Result<Page<R>> {
        let (idx, records) = match (
            self.txn.open_table(tables::index_table(R::KIND.index)),
            self.txn.open_table(tables::record_table(R::KIND.records)),
        ) {
            (Ok(i), Ok(r)) => (i, r),
            (Err(TableError::TableDoesNotExist(_)), _) | (_, Err(TableError::TableDoesNotExist(_))) => {
                return Ok(Page { rows: Vec::new(), next: None });
            }
            (Err(e), _) | (_, Err(e)) => return Err(e.into()),
        };
        let Walk { index, from, to, after, descending } = walk;
        // The index name ends where its next sibling name would begin: `index` + '\0'.
        let upper_name = format!("{index}\0");
        let start: Bound<(u64, &str, &str, u64)> = Bound::Included((self.user, index, from, 0));
        let end: Bound<(u64, &str, &str, u64)> = match to {
            Some(to) => Bound::Excluded((self.user, index, to, 0)),
            None => Bound::Excluded((self.user, upper_name.as_str(), "", 0)),
        };
        let (lo, hi) = match (after, descending) {
            (None, _) => (start, end),
            (Some((v, id)), false) => (Bound::Excluded((self.user, index, v, id)), end),
            (Some((v, id)), true) => (start, Bound::Excluded((self.user, index, v, id))),
        };
        let range = idx.range::<(u64, &str, &str, u64)>((lo, hi))?;
        let mut rows = Vec::with_capacity(limit.min(1024));
        let mut last = None;
        let mut more = false;
        let mut visit = |entry: std::result::Result<
            (redb::AccessGuard<'_, (u64, &str, &str, u64)>, _),
            redb::StorageError,
        >|
         -> Result<bool> {
            let (key, _) = entry?;
            let (_, _, value, id) = key.value();
            let row = live_row(&records, R::KIND.records, self.user, id)?;
            if !keep(&row) {
                return Ok(true);
            }
            if rows.len() == limit {
                more = true;
                return Ok(false);
            }
            rows.push(row);
            last = Some((value.to_string(), id));
            Ok(true)
        };
        if descending {
            for entry in range.rev() {
                if !visit(entry)? {
                    break;
                }
            }
        } else {
            for entry in range {
                if !visit(entry)? {
                    break;
                }
            }
        }
        Ok(Page { rows, next: if more { last } else { None } })
    }

    /// Change-feed entries after `seq`, oldest first, at most `limit`.
    pub fn changes_since(&self, seq: u64, limit: usize) -> Result<Vec<Change>> {
        let table = match self.txn.open_table(CHANGES) {
            Ok(table) => table,
            Err(TableError::TableDoesNotExist(_)) => return Ok(Vec::new()),
            Err(e) => return Err(e.into()),
        };
        let range = table.range((self.user, seq.saturating_add(1))..=(self.user, u64::MAX))?;
        range.take(limit).map(|entry| codec::decode("changes", entry?.1.value())).collect()
    }

    /// This user's audit events after `seq`, oldest first.
    pub fn audit_events(&self, after: u64, limit: usize) -> Result<Vec<crate::audit::AuditEvent>> {
        crate::audit::events(&self.txn, self.user, after, limit)
    }

    /// This user's audit events newest first, those `keep` accepts, at most `limit`.
    pub fn latest_audit_events(
        &self,
        limit: usize,
        keep: impl FnMut(&crate::audit::AuditEvent) -> bool,
    ) -> Result<Vec<crate::audit::AuditEvent>> {
        crate::audit::latest_events(&self.txn, self.user, limit, keep)
    }

    /// Verifies this user's audit hash chain; returns how many events were checked.
    pub fn verify_audit(&self) -> Result<u64> {
        crate::audit::verify(&self.txn, self.user)
    }

    /// The newest change-feed sequence number of this user (0 before any write).
    pub fn last_seq(&self) -> Result<u64> {
        match self.txn.open_table(USER_SEQ) {
            Ok(table) => Ok(table.get(self.user)?.map(|v| v.value()).unwrap_or(0)),
            Err(TableError::TableDoesNotExist(_)) => Ok(0),
            Err(e) => Err(e.into()),
        }
    }
}

#[cfg(test)]
mod tests {
    use serde::{Deserialize, Serialize};

    use super::Skipped;
    use crate::codec;
    use crate::record::{Meta, Row};

    #[derive(Serialize)]
    struct Full {
        a: String,
        b: String,
        c: String,
        d: Vec<String>,
    }

    #[derive(Debug, Deserialize)]
    struct FirstAndThird {
        a: String,
        #[allow(dead_code)]
        b: Skipped,
        c: String,
    }

    #[test]
    fn a_head_reads_the_leading_fields_and_passes_over_skipped_ones() {
        let now = jiff::Timestamp::from_second(1_700_000_000).expect("instant");
        let meta = Meta { revision: 3, created_at: now, updated_at: now, deleted_at: None };
        let body = Full { a: "first".into(), b: "x".repeat(5000), c: "third".into(), d: vec!["tail".into()] };
        let bytes = codec::encode(&Row { id: 42, meta, body });
        let head: Row<FirstAndThird> = codec::decode("t", &bytes).expect("the head reads");
        assert_eq!((head.id, head.meta, head.body.a.as_str(), head.body.c.as_str()), (42, meta, "first", "third"));
    }
}
