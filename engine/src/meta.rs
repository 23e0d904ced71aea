//! The engine's own metadata row that everything below the migrations needs: the schema version
//! recorded in `map:meta`. Migrations write it, and a snapshot records it in its manifest and
//! checks it on verify, so it lives here, below both.

use redb::{ReadTransaction, TableError};

use crate::Result;
use crate::tables::META;

/// The `map:meta` key of the schema version.
pub(crate) const VERSION_KEY: &str = "schema_version";

/// The schema version recorded in the database (0 for a new file).
pub(crate) fn read_version(txn: &ReadTransaction) -> Result<u32> {
    match txn.open_table(META) {
        Ok(meta) => Ok(meta.get(VERSION_KEY)?.map(|v| decode_u32(v.value())).unwrap_or(0)),
        Err(TableError::TableDoesNotExist(_)) => Ok(0),
        Err(e) => Err(e.into()),
    }
}

/// A `map:meta` number (little-endian `u32`; 0 when unreadable).
pub(crate) fn decode_u32(bytes: &[u8]) -> u32 {
    bytes.try_into().map(u32::from_le_bytes).unwrap_or(0)
}
