//! What is searchable: the record kinds registered as [`Source`]s, and how a kind's live rows
//! become [`SearchDoc`]s, one row at a time (for the change feed and the overlay) or every row
//! of every user at once (for a rebuild). Inside the index a kind is known by its code, its place
//! in the registered list counted from 1.

use redb::{ReadTransaction, ReadableTable, TableError};

use crate::record::{Record, Row, SearchDoc};
use crate::{Error, Result, codec, read, tables};

type LoadFn = fn(&ReadTransaction, u64, u64) -> Result<Option<SearchDoc>>;
type ScanFn = fn(&ReadTransaction, &mut dyn FnMut(u64, u64, SearchDoc) -> Result<()>) -> Result<()>;
type RowFn = fn(&[u8]) -> Result<Option<(u64, SearchDoc)>>;

/// A searchable record kind. Build with [`Source::of`].
#[derive(Clone, Copy)]
pub struct Source {
    pub kind: &'static str,
    /// `user`'s live row `id` as a document, or `None` when it is gone or not searchable.
    pub(super) load: LoadFn,
    /// Every live searchable row of every user, as `(user, id, document)`.
    pub(super) scan: ScanFn,
    /// Rows of this kind are contacts: each belongs to itself (for `SearchRequest::contacts`).
    pub(super) contact: bool,
    /// The kind's record table (`rec:<kind>`).
    pub(super) records: &'static str,
    /// A stored row of the kind (its encoded bytes) as `(id, document)`, or `None` when it is
    /// deleted or not searchable: for a build from a backup's rows.
    pub(super) from_row: RowFn,
}

impl Source {
    pub fn of<R: Record>() -> Source {
        Source {
            kind: R::KIND.name,
            load: load_doc::<R>,
            scan: scan_docs::<R>,
            contact: false,
            records: R::KIND.records,
            from_row: row_doc::<R>,
        }
    }

    /// The kind's record table (`rec:<kind>`).
    pub fn records(&self) -> &'static str {
        self.records
    }

    /// Marks the kind as the contact kind: a row is among the rows of the contacts it names.
    pub fn contacts(self) -> Source {
        Source { contact: true, ..self }
    }
}

fn load_doc<R: Record>(txn: &ReadTransaction, user: u64, id: u64) -> Result<Option<SearchDoc>> {
    let table = match txn.open_table(tables::record_table(R::KIND.records)) {
        Ok(table) => table,
        Err(TableError::TableDoesNotExist(_)) => return Ok(None),
        Err(e) => return Err(e.into()),
    };
    match read::live_row::<R>(&table, R::KIND.records, user, id) {
        Ok(row) => Ok(row.body.search_doc()),
        Err(Error::NotFound) => Ok(None),
        Err(e) => Err(e),
    }
}

fn row_doc<R: Record>(bytes: &[u8]) -> Result<Option<(u64, SearchDoc)>> {
    let row: Row<R> = codec::decode(R::KIND.records, bytes)?;
    if row.is_deleted() {
        return Ok(None);
    }
    Ok(row.body.search_doc().map(|doc| (row.id, doc)))
}

fn scan_docs<R: Record>(txn: &ReadTransaction, f: &mut dyn FnMut(u64, u64, SearchDoc) -> Result<()>) -> Result<()> {
    let table = match txn.open_table(tables::record_table(R::KIND.records)) {
        Ok(table) => table,
        Err(TableError::TableDoesNotExist(_)) => return Ok(()),
        Err(e) => return Err(e.into()),
    };
    for entry in table.iter()? {
        let (key, value) = entry?;
        let row: Row<R> = codec::decode(R::KIND.records, value.value())?;
        if row.is_deleted() {
            continue;
        }
        if let Some(doc) = row.body.search_doc() {
            f(key.value().0, row.id, doc)?;
        }
    }
    Ok(())
}
