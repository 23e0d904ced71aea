//! The CSV exports: the contacts table (its columns re-import with identity mappings) and one
//! table per other record kind ([`TABLES`]: `id`, `created_at`, `updated_at`, then the record's
//! own fields, lists and objects as JSON text). Every cell goes through the codec's writer, which
//! quotes it and neutralises what a spreadsheet would run as a formula. All tables at once are
//! `archive`'s.

use mycorrhizal_codecs::record::NeutralRecord;
use mycorrhizal_engine::UPDATED_INDEX;
use mycorrhizal_engine::{Row, UserScope};
use serde_json::Value;

use super::contacts::{PAGE, Render};
use super::stream::{Failure, Out};
use crate::crm::contact::Contact;

/// A record kind exported column by column: its table name and what writes it.
#[derive(Clone, Copy)]
pub struct RecordTable {
    pub name: &'static str,
    write: fn(&UserScope, &mut dyn Out) -> Result<(), Failure>,
}

impl RecordTable {
    /// Record kind `R`'s table under `name`.
    pub fn of<R: mycorrhizal_engine::Record>(name: &'static str) -> RecordTable {
        RecordTable { name, write: rows_csv::<R> }
    }

    /// Writes the table, header first.
    pub fn write(&self, scope: &UserScope, out: &mut dyn Out) -> Result<(), Failure> {
        (self.write)(scope, out)
    }
}

/// Contacts as CSV. `ids` puts each contact's `id` and `uid` (as the API shows them) first: the ZIP's other tables name
/// contacts by id. Without them (`GET /export`) the columns are exactly the re-importable ones.
/// One column per custom field follows the others, headed by its label, in label order.
pub struct CsvRender {
    pub ids: bool,
    /// The custom fields' columns: (label, key).
    pub fields: Vec<(String, String)>,
}

impl CsvRender {
    /// With the user's custom fields as its last columns (blocking: reads the definitions).
    pub fn of(scope: &UserScope, ids: bool) -> Result<CsvRender, Failure> {
        let view = scope.view().map_err(Failure::database)?;
        let mut fields: Vec<(String, String)> = crate::crm::field::definitions(&view)
            .map_err(|e| Failure::database(e.to_string()))?
            .into_iter()
            .map(|d| (d.body.label, d.body.key))
            .collect();
        fields.sort();
        Ok(CsvRender { ids, fields })
    }
}

impl Render for CsvRender {
    fn photos(&self) -> bool {
        false
    }

    fn start(&mut self, out: &mut dyn Out) -> bool {
        let ids: &[&str] = if self.ids { &["id", "uid"] } else { &[] };
        let headers: Vec<String> = ids
            .iter()
            .chain(mycorrhizal_codecs::csv::EXPORT_HEADERS)
            .map(|h| h.to_string())
            .chain(self.fields.iter().map(|(label, _)| label.clone()))
            .collect();
        csv_row(&headers, out).unwrap_or(false)
    }

    fn contact(&mut self, row: &Row<Contact>, record: &NeutralRecord, out: &mut dyn Out) -> Result<bool, Failure> {
        let mut cells = mycorrhizal_codecs::csv::export_row(record);
        if self.ids {
            cells.splice(0..0, [row.id.to_string(), row.body.uid.clone()]);
        }
        if !self.fields.is_empty() {
            let values = crate::crm::contact::field_values(&row.body.crm);
            cells.extend(
                self.fields.iter().map(|(_, key)| values.get(key).map(crate::crm::field::as_text).unwrap_or_default()),
            );
        }
        csv_row(&cells, out)
    }
}

/// One CSV row (quoted and formula-neutralised by the codec's writer) into the stream.
pub(super) fn csv_row(cells: &[String], out: &mut dyn Out) -> Result<bool, Failure> {
    let mut writer = mycorrhizal_codecs::csv::CsvWriter::buffer();
    let refs: Vec<&str> = cells.iter().map(String::as_str).collect();
    let bytes = writer.write_row(&refs).and_then(|()| writer.finish()).map_err(Failure::serialization)?;
    Ok(out.push(&bytes))
}

/// One record kind as CSV: `id`, `created_at`, `updated_at`, then the body's fields (lists and
/// objects as JSON). Two passes over pages of rows, each page its own read transaction: the
/// first gathers the columns, the second writes, so memory does not grow with the table.
/// Calls `each` with every live row of `R`, a page per read transaction, oldest change first,
/// until it answers `false`.
fn each_row<R: mycorrhizal_engine::Record>(
    scope: &UserScope,
    mut each: impl FnMut(&Row<R>) -> Result<bool, Failure>,
) -> Result<(), Failure> {
    let mut after: Option<(String, u64)> = None;
    loop {
        let page = scope
            .view()
            .and_then(|v| v.page::<R>(UPDATED_INDEX, after.as_ref().map(|(v, id)| (v.as_str(), *id)), PAGE, false))
            .map_err(Failure::database)?;
        for row in &page.rows {
            if !each(row)? {
                return Ok(());
            }
        }
        after = page.next;
        if after.is_none() {
            return Ok(());
        }
    }
}

fn rows_csv<R: mycorrhizal_engine::Record + serde::Serialize>(
    scope: &UserScope,
    out: &mut dyn Out,
) -> Result<(), Failure> {
    let mut columns: Vec<String> = Vec::new();
    each_row::<R>(scope, |row| {
        match serde_json::to_value(&row.body).map_err(Failure::serialization)? {
            Value::Object(m) => {
                for k in m.keys() {
                    if !columns.contains(k) {
                        columns.push(k.clone());
                    }
                }
            }
            _ => return Err(Failure::serialization("a row is not a JSON object")),
        }
        Ok(true)
    })?;
    let mut header = vec!["id".to_string(), "created_at".to_string(), "updated_at".to_string()];
    header.extend(columns.iter().cloned());
    if !csv_row(&header, out)? {
        return Ok(());
    }
    each_row::<R>(scope, |row| {
        let body = serde_json::to_value(&row.body).map_err(Failure::serialization)?;
        let mut cells = vec![row.id.to_string(), row.meta.created_at.to_string(), row.meta.updated_at.to_string()];
        for c in &columns {
            cells.push(match body.get(c) {
                None | Some(Value::Null) => String::new(),
                Some(Value::String(s)) => s.clone(),
                Some(other) => other.to_string(),
            });
        }
        csv_row(&cells, out)
    })
}
