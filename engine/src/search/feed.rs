//! Feeding the index from the change feed and nothing else. For a user, the change-feed entries
//! after the last sequence the index applied name the rows to re-read; each is replaced by its
//! current document, or deleted when it is gone or not searchable. The same catch-up serves a
//! batch the writer reports, the replay at start (what the last index commit missed) and a
//! rebuilt generation's writes made while it was built.

use std::collections::{BTreeSet, HashMap};

use redb::{ReadTransaction, ReadableDatabase, ReadableTable, TableError};
use tantivy::{IndexWriter, Term};

use super::schema;
use super::shared::Shared;
use crate::Result;
use crate::changes::Change;
use crate::codec;
use crate::tables::{CHANGES, USER_SEQ};

/// Every user's last change-feed sequence in the database.
pub(super) fn seqs_of(txn: &ReadTransaction) -> Result<HashMap<u64, u64>> {
    let table = match txn.open_table(USER_SEQ) {
        Ok(table) => table,
        Err(TableError::TableDoesNotExist(_)) => return Ok(HashMap::new()),
        Err(e) => return Err(e.into()),
    };
    let mut out = HashMap::new();
    for entry in table.iter()? {
        let (user, seq) = entry?;
        out.insert(user.value(), seq.value());
    }
    Ok(out)
}

impl Shared {
    pub fn database_seqs(&self) -> Result<HashMap<u64, u64>> {
        let txn = self.db.begin_read()?;
        seqs_of(&txn)
    }

    /// Applies `user`'s change feed after `applied[user]` to `writer`, at most `limit` entries of
    /// it (in sequence order, so `applied[user]` then covers exactly what was applied). Returns
    /// the rows re-indexed, the entries read, and whether entries remain after the limit.
    pub fn catch_up(
        &self,
        writer: &IndexWriter,
        txn: &ReadTransaction,
        applied: &mut HashMap<u64, u64>,
        user: u64,
        limit: usize,
    ) -> Result<(usize, usize, bool)> {
        let from = applied.get(&user).copied().unwrap_or(0);
        let changes = match txn.open_table(CHANGES) {
            Ok(table) => table,
            Err(TableError::TableDoesNotExist(_)) => return Ok((0, 0, false)),
            Err(e) => return Err(e.into()),
        };
        let mut touched = BTreeSet::new();
        let mut last = from;
        let mut read = 0;
        let mut more = false;
        for entry in changes.range((user, from + 1)..=(user, u64::MAX))? {
            if read == limit {
                more = true;
                break;
            }
            let (key, value) = entry?;
            let change: Change = codec::decode("changes", value.value())?;
            last = key.value().1;
            read += 1;
            if let Some(code) = self.codes.get(change.kind.as_str()) {
                touched.insert((*code, change.id));
            }
        }
        for (code, id) in &touched {
            writer.delete_term(Term::from_field_u64(self.fields.key, schema::key(*code, *id)));
            let source = &self.sources[*code as usize - 1];
            if let Some(doc) = (source.load)(txn, user, *id)? {
                writer.add_document(self.document(user, *code, *id, &doc))?;
            }
        }
        if last > from {
            applied.insert(user, last);
        }
        Ok((touched.len(), read, more))
    }

    /// Catches every user up with the database, and drops users the database no longer has.
    pub fn catch_up_all(&self, writer: &IndexWriter, applied: &mut HashMap<u64, u64>) -> Result<usize> {
        let txn = self.db.begin_read()?;
        let seqs = seqs_of(&txn)?;
        let gone: Vec<u64> = applied.keys().filter(|u| !seqs.contains_key(u)).copied().collect();
        for user in gone {
            writer.delete_term(Term::from_field_u64(self.fields.user, user));
            applied.remove(&user);
        }
        let mut rows = 0;
        for (user, seq) in seqs {
            if applied.get(&user).copied().unwrap_or(0) < seq {
                rows += self.catch_up(writer, &txn, applied, user, usize::MAX)?.0;
            }
        }
        Ok(rows)
    }
}
