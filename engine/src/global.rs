//! Global records: rows that belong to the instance rather than to one user's data (accounts,
//! sessions, API tokens, reset tokens). They live in `sys:<table>` tables keyed by a global id,
//! with optional unique keys kept in `map:uniq:<table>`, and are hard-deleted.
//!
//! User content never goes here: it goes through the per-user write path in [`crate::tx`].

use redb::{ReadTransaction, ReadableTable, TableError};
use serde::{Serialize, de::DeserializeOwned};

use crate::tables;
use crate::tx::Tx;
use crate::{Error, Result, codec};

/// A record type stored in a global table.
pub trait GlobalRecord: Serialize + DeserializeOwned + Clone + Send + Sync + 'static {
    /// `sys:<name>`.
    const TABLE: &'static str;
    /// `map:uniq:<name>`: where this type's unique keys live.
    const UNIQUE_TABLE: &'static str;

    /// `(key name, normalized value)` pairs that must be unique across all rows.
    fn unique_keys(&self) -> Vec<(&'static str, String)> {
        Vec::new()
    }
}

/// Declares the two table names of a global record type: `global_tables!("users")`.
#[macro_export]
macro_rules! global_tables {
    ($name:literal) => {
        const TABLE: &'static str = concat!("sys:", $name);
        const UNIQUE_TABLE: &'static str = concat!("map:uniq:", $name);
    };
}

/// A map table's name must carry its prefix: snapshots and checks know a table's layout by it.
fn map_name(table: &str) -> Result<&str> {
    if table.starts_with(tables::MAP_PREFIX) {
        Ok(table)
    } else {
        Err(Error::Corrupt { table: table.into(), reason: "a map table's name must start with map:".into() })
    }
}

fn unique_key(name: &str, value: &str) -> String {
    format!("{name}\u{0}{value}")
}

/// Global-table writes inside a write transaction.
pub struct TxGlobal<'t, 'a> {
    pub(crate) tx: &'t Tx<'a>,
}

impl Tx<'_> {
    pub fn global(&self) -> TxGlobal<'_, '_> {
        TxGlobal { tx: self }
    }
}

impl TxGlobal<'_, '_> {
    pub fn get<R: GlobalRecord>(&self, id: u64) -> Result<R> {
        let table = self.tx.table(tables::system_table(R::TABLE))?;
        let bytes = table.get(id)?.ok_or(Error::NotFound)?;
        codec::decode(R::TABLE, bytes.value())
    }

    /// The id holding unique key `name` = `value`.
    pub fn lookup<R: GlobalRecord>(&self, name: &str, value: &str) -> Result<Option<u64>> {
        let table = self.tx.table(tables::map_table(R::UNIQUE_TABLE))?;
        Ok(table.get(unique_key(name, value).as_str())?.map(|v| decode_id(v.value())))
    }

    /// Inserts a new row with a fresh id.
    pub fn insert<R: GlobalRecord>(&self, body: &R) -> Result<u64> {
        let id = self.tx.next_counter(&format!("id:{}", R::TABLE))?;
        self.store(id, None, body)?;
        Ok(id)
    }

    /// Inserts a new row under an id the caller chose (a row of a side table keyed like its main
    /// row); an existing row of that id is replaced.
    pub fn insert_at<R: GlobalRecord>(&self, id: u64, body: &R) -> Result<()> {
        let old: Option<R> = match self.get(id) {
            Ok(old) => Some(old),
            Err(Error::NotFound) => None,
            Err(e) => return Err(e),
        };
        self.store(id, old.as_ref(), body)
    }

    /// Removes row `id` if there is one; whether there was.
    pub fn remove<R: GlobalRecord>(&self, id: u64) -> Result<bool> {
        match self.delete::<R>(id) {
            Ok(_) => Ok(true),
            Err(Error::NotFound) => Ok(false),
            Err(e) => Err(e),
        }
    }

    /// Replaces row `id`.
    pub fn put<R: GlobalRecord>(&self, id: u64, body: &R) -> Result<()> {
        let old: R = self.get(id)?;
        self.store(id, Some(&old), body)
    }

    /// Removes row `id` and its unique keys. Returns the removed row.
    pub fn delete<R: GlobalRecord>(&self, id: u64) -> Result<R> {
        let old: R = self.get(id)?;
        let mut unique = self.tx.table(tables::map_table(R::UNIQUE_TABLE))?;
        for (name, value) in old.unique_keys() {
            unique.remove(unique_key(name, &value).as_str())?;
        }
        self.tx.table(tables::system_table(R::TABLE))?.remove(id)?;
        Ok(old)
    }

    /// Every row, by id.
    pub fn list<R: GlobalRecord>(&self) -> Result<Vec<(u64, R)>> {
        let table = self.tx.table(tables::system_table(R::TABLE))?;
        let rows = table.iter()?;
        rows.map(|entry| {
            let (k, v) = entry?;
            Ok((k.value(), codec::decode(R::TABLE, v.value())?))
        })
        .collect()
    }

    /// Reads a value of a `map:<name>` table.
    pub fn map_get(&self, table: &str, key: &str) -> Result<Option<Vec<u8>>> {
        let table = self.tx.table(tables::map_table(map_name(table)?))?;
        Ok(table.get(key)?.map(|v| v.value().to_vec()))
    }

    /// Writes a value of a `map:<name>` table.
    pub fn map_put(&self, table: &str, key: &str, value: &[u8]) -> Result<()> {
        self.tx.table(tables::map_table(map_name(table)?))?.insert(key, value)?;
        Ok(())
    }

    /// Keys of a `map:<name>` table from `from` on, in key order, each with its value passed to
    /// `visit` until it answers false (inside the write: what an earlier change of it wrote is seen).
    pub fn map_scan(&self, table: &str, from: &str, mut visit: impl FnMut(&str, &[u8]) -> bool) -> Result<()> {
        let table = self.tx.table(tables::map_table(map_name(table)?))?;
        for entry in table.range::<&str>(from..)? {
            let (k, v) = entry?;
            if !visit(k.value(), v.value()) {
                break;
            }
        }
        Ok(())
    }

    /// Removes a value of a `map:<name>` table; whether there was one.
    pub fn map_remove(&self, table: &str, key: &str) -> Result<bool> {
        self.tx.table(tables::map_table(map_name(table)?))?.remove(key)
    }

    fn store<R: GlobalRecord>(&self, id: u64, old: Option<&R>, body: &R) -> Result<()> {
        let txn = self.tx;
        let mut unique = txn.table(tables::map_table(R::UNIQUE_TABLE))?;
        let new_keys = body.unique_keys();
        for (name, value) in &new_keys {
            if let Some(holder) = unique.get(unique_key(name, value).as_str())?.map(|v| decode_id(v.value()))
                && holder != id
            {
                return Err(Error::Duplicate { index: name });
            }
        }
        if let Some(old) = old {
            for (name, value) in old.unique_keys() {
                unique.remove(unique_key(name, &value).as_str())?;
            }
        }
        for (name, value) in &new_keys {
            unique.insert(unique_key(name, value).as_str(), id.to_le_bytes().as_slice())?;
        }
        txn.table(tables::system_table(R::TABLE))?.insert(id, codec::encode(body).as_slice())?;
        Ok(())
    }
}

fn decode_id(bytes: &[u8]) -> u64 {
    bytes.try_into().map(u64::from_le_bytes).unwrap_or(0)
}

/// Global-table reads in one read transaction.
pub struct GlobalView {
    pub(crate) txn: ReadTransaction,
}

impl GlobalView {
    pub fn get<R: GlobalRecord>(&self, id: u64) -> Result<R> {
        let table = match self.txn.open_table(tables::system_table(R::TABLE)) {
            Ok(t) => t,
            Err(TableError::TableDoesNotExist(_)) => return Err(Error::NotFound),
            Err(e) => return Err(e.into()),
        };
        let bytes = table.get(id)?.ok_or(Error::NotFound)?;
        codec::decode(R::TABLE, bytes.value())
    }

    pub fn lookup<R: GlobalRecord>(&self, name: &str, value: &str) -> Result<Option<u64>> {
        let table = match self.txn.open_table(tables::map_table(R::UNIQUE_TABLE)) {
            Ok(t) => t,
            Err(TableError::TableDoesNotExist(_)) => return Ok(None),
            Err(e) => return Err(e.into()),
        };
        Ok(table.get(unique_key(name, value).as_str())?.map(|v| decode_id(v.value())))
    }

    /// Reads a value of a `map:<name>` table.
    pub fn map_get(&self, table: &str, key: &str) -> Result<Option<Vec<u8>>> {
        match self.txn.open_table(tables::map_table(map_name(table)?)) {
            Ok(t) => Ok(t.get(key)?.map(|v| v.value().to_vec())),
            Err(TableError::TableDoesNotExist(_)) => Ok(None),
            Err(e) => Err(e.into()),
        }
    }

    /// Entries of a `map:<name>` table from key `from` on, in key order, each passed to `visit`
    /// until it answers false: a seek, then only as far as the caller needs.
    pub fn map_scan(&self, table: &str, from: &str, mut visit: impl FnMut(&str, &[u8]) -> bool) -> Result<()> {
        let table = match self.txn.open_table(tables::map_table(map_name(table)?)) {
            Ok(t) => t,
            Err(TableError::TableDoesNotExist(_)) => return Ok(()),
            Err(e) => return Err(e.into()),
        };
        for entry in table.range::<&str>(from..)? {
            let (k, v) = entry?;
            if !visit(k.value(), v.value()) {
                break;
            }
        }
        Ok(())
    }

    /// Looks up by unique key and reads the row.
    pub fn find<R: GlobalRecord>(&self, name: &str, value: &str) -> Result<Option<(u64, R)>> {
        match self.lookup::<R>(name, value)? {
            Some(id) => Ok(Some((id, self.get(id)?))),
            None => Ok(None),
        }
    }

    /// Rows in id order, each passed to `visit` until it answers false: reads only as far as the
    /// caller needs, and keeps none of the rows it passed over.
    pub fn scan<R: GlobalRecord>(&self, mut visit: impl FnMut(u64, R) -> bool) -> Result<()> {
        let table = match self.txn.open_table(tables::system_table(R::TABLE)) {
            Ok(t) => t,
            Err(TableError::TableDoesNotExist(_)) => return Ok(()),
            Err(e) => return Err(e.into()),
        };
        for entry in table.iter()? {
            let (k, v) = entry?;
            if !visit(k.value(), codec::decode(R::TABLE, v.value())?) {
                break;
            }
        }
        Ok(())
    }

    pub fn list<R: GlobalRecord>(&self) -> Result<Vec<(u64, R)>> {
        let table = match self.txn.open_table(tables::system_table(R::TABLE)) {
            Ok(t) => t,
            Err(TableError::TableDoesNotExist(_)) => return Ok(Vec::new()),
            Err(e) => return Err(e.into()),
        };
        let rows = table.iter()?;
        rows.map(|entry| {
            let (k, v) = entry?;
            Ok((k.value(), codec::decode(R::TABLE, v.value())?))
        })
        .collect()
    }
}
