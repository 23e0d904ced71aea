//! The whole export: every table as one ZIP archive, streamed as it is written (`contacts.csv`
//! with each contact's id and uid first, one file per other table, and a `README.txt` saying what
//! each holds). The tables themselves are `csv`'s.

use mycorrhizal_engine::UserScope;

use super::contacts::produce;
use super::csv::CsvRender;
use super::sections::Selection;
use super::stream::{Failure, Out, Sink};
use crate::crm::kinds;

/// What `README.txt` of the ZIP export says.
const ZIP_README: &str = "Mycorrhizal export: all of your data, one CSV file per table (UTF-8, comma separated, \
first row the column names).\r\n\r\ncontacts.csv: your contacts, each with its id and uid first; \
the other columns re-import as they are (POST /contacts/import/upload). Photos are in the vCard \
export (GET /export/vcf).\r\n\
Every other file: one row per record, columns id, created_at, updated_at, then the record's own \
fields; lists and objects are JSON text. A `contact_id` column names a row of contacts.csv by its id.\r\n\
Cells a spreadsheet would run as a formula start with an apostrophe.\r\n";

/// Every table as one ZIP, streamed: `contacts.csv`, then one file per [`TABLES`] entry, then
/// `README.txt`. Each file is written as it is read, so memory stays flat.
pub fn all_tables(scope: &UserScope, sink: &mut Sink) -> Result<(), Failure> {
    use zip::write::SimpleFileOptions;
    let options = SimpleFileOptions::default()
        .compression_method(zip::CompressionMethod::Deflated)
        .large_file(true)
        .unix_permissions(0o644);
    let mut zip = zip::ZipWriter::new_stream(&mut *sink);
    let failed = |e: zip::result::ZipError| Failure::serialization(e);
    zip.start_file("contacts.csv", options).map_err(failed)?;
    let mut entry = ZipEntry { zip: &mut zip, gone: false };
    produce(scope, None, &Selection::default(), &mut CsvRender::of(scope, true)?, &mut entry)?;
    for table in kinds::export_tables() {
        if entry.gone {
            return Ok(());
        }
        entry.zip.start_file(format!("{}.csv", table.name), options).map_err(failed)?;
        table.write(scope, &mut entry)?;
    }
    if entry.gone {
        return Ok(());
    }
    zip.start_file("README.txt", options).map_err(failed)?;
    std::io::Write::write_all(&mut zip, ZIP_README.as_bytes()).map_err(Failure::serialization)?;
    let finished = zip.finish().map(|_| ());
    match finished {
        Ok(()) => Ok(()),
        Err(_) if sink.client_gone() => Ok(()),
        Err(e) => Err(failed(e)),
    }
}

/// The file of a ZIP being written, as a renderer's output.
struct ZipEntry<'z, W: std::io::Write> {
    zip: &'z mut zip::ZipWriter<zip::write::StreamWriter<W>>,
    /// The archive could not be written further (the client went away).
    gone: bool,
}

impl<W: std::io::Write> Out for ZipEntry<'_, W> {
    fn push(&mut self, bytes: &[u8]) -> bool {
        self.gone = self.gone || std::io::Write::write_all(self.zip, bytes).is_err();
        !self.gone
    }
}
