//! Data invariants, checked inside one read transaction (the scheduled integrity check and
//! `GET /admin/integrity-check`): every stored page reads back, every live row has each of its
//! index entries and every index entry belongs to a live row, and no user's change feed runs
//! past its head. Results are counts and kinds, never user data.

use std::collections::BTreeMap;

use redb::{
    Key, ReadTransaction, ReadableTable, ReadableTableMetadata, TableDefinition, TableError, TableHandle, Value,
};

use crate::record::{Record, Row};
use crate::tables::{
    self, BLOBS, CHANGES, COUNTERS, INDEX_PREFIX, LIVE_COUNTS, MAP_PREFIX, RECORD_PREFIX, SYSTEM_PREFIX, USER_SEQ,
};
use crate::{Error, Result, codec, tx};

/// One record kind's index consistency.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct KindCheck {
    pub kind: &'static str,
    /// Live rows checked.
    pub rows: u64,
    /// Entries a live row should have and the index lacks.
    pub missing_entries: u64,
    /// Entries of the index that belong to no live row (or to another value of it).
    pub dangling_entries: u64,
}

/// The change feed's consistency.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct FeedCheck {
    pub users: u64,
    /// Users with change-feed entries past their recorded head (sync tokens would repeat).
    pub users_past_head: u64,
}

pub(crate) fn kind<R: Record>(txn: &ReadTransaction) -> Result<KindCheck> {
    let mut check = KindCheck { kind: R::KIND.name, rows: 0, missing_entries: 0, dangling_entries: 0 };
    let records = match txn.open_table(tables::record_table(R::KIND.records)) {
        Ok(table) => table,
        Err(TableError::TableDoesNotExist(_)) => return Ok(check),
        Err(e) => return Err(e.into()),
    };
    let index = match txn.open_table(tables::index_table(R::KIND.index)) {
        Ok(table) => Some(table),
        Err(TableError::TableDoesNotExist(_)) => None,
        Err(e) => return Err(e.into()),
    };
    let mut present = 0u64;
    for entry in records.iter()? {
        let (key, value) = entry?;
        let row: Row<R> = codec::decode(R::KIND.records, value.value())?;
        if row.is_deleted() {
            continue;
        }
        check.rows += 1;
        let user = key.value().0;
        let mut entries = tx::entries_of(&row);
        entries.sort();
        entries.dedup();
        for (name, value) in entries {
            let found = match &index {
                Some(index) => index.get((user, name, value.as_str(), row.id))?.is_some(),
                None => false,
            };
            if found {
                present += 1;
            } else {
                check.missing_entries += 1;
            }
        }
    }
    let total = match &index {
        Some(index) => index.len()?,
        None => 0,
    };
    check.dangling_entries = total.saturating_sub(present);
    Ok(check)
}

pub(crate) fn feed(txn: &ReadTransaction) -> Result<FeedCheck> {
    let mut check = FeedCheck::default();
    let heads = match txn.open_table(USER_SEQ) {
        Ok(table) => table,
        Err(TableError::TableDoesNotExist(_)) => return Ok(check),
        Err(e) => return Err(e.into()),
    };
    let changes = match txn.open_table(CHANGES) {
        Ok(table) => Some(table),
        Err(TableError::TableDoesNotExist(_)) => None,
        Err(e) => return Err(e.into()),
    };
    for entry in heads.iter()? {
        let (user, head) = entry?;
        let (user, head) = (user.value(), head.value());
        check.users += 1;
        if let Some(changes) = &changes
            && changes.range((user, head.saturating_add(1))..=(user, u64::MAX))?.next().is_some()
        {
            check.users_past_head += 1;
        }
    }
    Ok(check)
}

/// Reads every key and value of every table (an unreadable page fails here); returns the rows
/// read per table.
pub(crate) fn storage(txn: &ReadTransaction) -> Result<BTreeMap<String, u64>> {
    let mut rows = BTreeMap::new();
    for handle in txn.list_tables()? {
        let name = handle.name().to_string();
        let n = match name.as_str() {
            n if n.starts_with(RECORD_PREFIX) => read_all(txn, tables::record_table(n))?,
            n if n.starts_with(INDEX_PREFIX) => read_all(txn, tables::index_table(n))?,
            n if n.starts_with(SYSTEM_PREFIX) => read_all(txn, tables::system_table(n))?,
            n if n.starts_with(MAP_PREFIX) || tables::LEGACY_MAP_TABLES.contains(&n) => {
                read_all(txn, tables::map_table(n))?
            }
            n if n == CHANGES.name() => read_all(txn, CHANGES)?,
            n if n == BLOBS.name() => read_all(txn, BLOBS)?,
            n if n == COUNTERS.name() => read_all(txn, COUNTERS)?,
            n if n == USER_SEQ.name() => read_all(txn, USER_SEQ)?,
            n if n == LIVE_COUNTS.name() => read_all(txn, LIVE_COUNTS)?,
            n if n == crate::tables::AUDIT.name() => read_all(txn, crate::tables::AUDIT)?,
            n if n == crate::tables::AUDIT_ANCHORS.name() => read_all(txn, crate::tables::AUDIT_ANCHORS)?,
            other => return Err(Error::Corrupt { table: other.into(), reason: "a table of no known layout".into() }),
        };
        rows.insert(name, n);
    }
    Ok(rows)
}

fn read_all<K: Key + 'static, V: Value + 'static>(
    txn: &ReadTransaction,
    definition: TableDefinition<K, V>,
) -> Result<u64> {
    let table = txn.open_table(definition)?;
    let mut rows = 0;
    for entry in table.iter()? {
        let (key, value) = entry?;
        // Touch both: a page is read (and its checksum checked) when its bytes are.
        std::hint::black_box((key.value(), value.value()));
        rows += 1;
    }
    if rows != table.len()? {
        return Err(Error::Corrupt {
            table: definition.name().into(),
            reason: "row count differs from the rows read".into(),
        });
    }
    Ok(rows)
}

/// What [`Engine::check`] found.
#[derive(Debug, Clone)]
pub struct Report {
    /// Rows read per table.
    pub tables: BTreeMap<String, u64>,
    pub kinds: Vec<KindCheck>,
    pub feed: FeedCheck,
}
