//! The rows of a preview, held until the confirm. In memory, each row keeps only what the
//! confirm decides by (its index, line, problems and the contact an update merges into, about a
//! hundred bytes); its record and inline photo wait in a spool file, written as the preview is
//! and read back one row at a time as the confirm writes it. So a 100,000-card upload holds a few
//! megabytes between preview and confirm, not its parsed records.
//!
//! The spool is an unnamed file in the data folder (`O_TMPFILE`-style: it never has a name, so a
//! crash leaves nothing behind) and goes with its session.

use std::fs::File;
use std::io::{BufWriter, Write};
use std::os::unix::fs::FileExt;
use std::path::Path;

use mycorrhizal_codecs::record::NeutralRecord;
use mycorrhizal_codecs::vcard::Photo;

use super::{Action, ImportError, ImportRow};

/// What the confirm needs of a previewed row.
#[derive(Debug)]
pub struct HeldRow {
    pub index: usize,
    /// 1-based line in the file, 0 when the format has none.
    pub line: usize,
    pub errors: Vec<String>,
    /// The existing contact the row matched: what an update merges into.
    pub duplicate_of: Option<u64>,
    /// What the preview suggested for the row.
    pub suggested: Action,
    /// Whether the preview marked the row a duplicate (of a contact, or of an earlier row).
    pub flagged: bool,
    /// Where the row's record is in the spool; `None` for a row that has none.
    card: Option<Span>,
}

impl HeldRow {
    /// Whether the row was read into a record (a row without one can only fail or be skipped).
    pub fn has_record(&self) -> bool {
        self.card.is_some()
    }
}

/// A held record's bytes in the spool: its JSON, then its photo's media type and bytes.
#[derive(Debug, Clone, Copy)]
struct Span {
    offset: u64,
    record: u32,
    media_type: u16,
    photo: u32,
}

impl Span {
    fn len(&self) -> u64 {
        u64::from(self.record) + u64::from(self.media_type) + u64::from(self.photo)
    }
}

/// Rows being held, as a preview gives them.
pub struct Holding {
    rows: Vec<HeldRow>,
    spool: BufWriter<File>,
    written: u64,
}

fn spool_error(e: std::io::Error) -> ImportError {
    ImportError::Internal(format!("the import's spool file: {e}"))
}

impl Holding {
    /// Starts holding rows in a new unnamed file in `dir`.
    pub fn new(dir: &Path) -> Result<Holding, ImportError> {
        let file = tempfile::tempfile_in(dir).map_err(spool_error)?;
        Ok(Holding { rows: Vec::new(), spool: BufWriter::with_capacity(256 * 1024, file), written: 0 })
    }

    /// Holds a row: its record and photo go to the spool, the rest stays in memory.
    pub fn hold(&mut self, row: ImportRow) -> Result<(), ImportError> {
        let suggested = row.suggested();
        let flagged = row.duplicate.is_some() || row.batch_duplicate_of.is_some();
        let ImportRow { index, line, record, photo, errors, duplicate, .. } = row;
        let card = match record {
            None => None,
            Some(record) => {
                let json = serde_json::to_vec(&record).map_err(|e| ImportError::Internal(e.to_string()))?;
                let (media_type, bytes) = photo.map(|p| (p.media_type, p.bytes)).unwrap_or_default();
                let span = Span {
                    offset: self.written,
                    record: too_long(json.len())?,
                    media_type: u16::try_from(media_type.len()).map_err(|_| too_long_error())?,
                    photo: too_long(bytes.len())?,
                };
                for part in [&json[..], media_type.as_bytes(), &bytes] {
                    self.spool.write_all(part).map_err(spool_error)?;
                }
                self.written += span.len();
                Some(span)
            }
        };
        let duplicate_of = duplicate.map(|d| d.existing_contact_id);
        self.rows.push(HeldRow { index, line, errors, duplicate_of, suggested, flagged, card });
        Ok(())
    }

    /// The rows held, readable.
    pub fn finish(self) -> Result<Held, ImportError> {
        let file = self.spool.into_inner().map_err(|e| spool_error(e.into_error()))?;
        Ok(Held { rows: self.rows, file })
    }
}

fn too_long_error() -> ImportError {
    ImportError::Internal("a row too large to hold".into())
}

fn too_long(len: usize) -> Result<u32, ImportError> {
    u32::try_from(len).map_err(|_| too_long_error())
}

/// Rows held for a confirm.
#[derive(Debug)]
pub struct Held {
    pub rows: Vec<HeldRow>,
    file: File,
}

impl Held {
    /// Holds `rows` (every row of a small upload, or one the command line read whole) in a new
    /// spool in `dir`.
    pub fn of(dir: &Path, rows: Vec<ImportRow>) -> Result<Held, ImportError> {
        let mut holding = Holding::new(dir)?;
        for row in rows {
            holding.hold(row)?;
        }
        holding.finish()
    }

    /// The record and photo held for `row`, read back from the spool; `None` for a row without
    /// a record.
    pub fn record(&self, row: &HeldRow) -> Result<Option<(NeutralRecord, Option<Photo>)>, ImportError> {
        let Some(span) = row.card else { return Ok(None) };
        let mut bytes = vec![0u8; usize::try_from(span.len()).map_err(|_| too_long_error())?];
        self.file.read_exact_at(&mut bytes, span.offset).map_err(spool_error)?;
        let (json, rest) = bytes.split_at(span.record as usize);
        let (media_type, photo) = rest.split_at(usize::from(span.media_type));
        let record = serde_json::from_slice(json).map_err(|e| ImportError::Internal(format!("a held row: {e}")))?;
        let photo = (!photo.is_empty())
            .then(|| Photo { media_type: String::from_utf8_lossy(media_type).into_owned(), bytes: photo.to_vec() });
        Ok(Some((record, photo)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::crm::import::rows_of;

    /// Every fixture card's record and photo come back from the spool as they were held, and a
    /// row without a record holds none.
    #[test]
    fn a_held_row_comes_back_as_it_was() {
        let dirs = [
            concat!(env!("CARGO_MANIFEST_DIR"), "/../tests/fixtures/exporters"),
            concat!(env!("CARGO_MANIFEST_DIR"), "/../tests/fixtures/rfc-cards"),
            concat!(env!("CARGO_MANIFEST_DIR"), "/../codecs/tests/fixtures/vcf"),
        ];
        let mut rows = Vec::new();
        for dir in dirs {
            for path in std::fs::read_dir(dir).expect("fixtures").flatten().map(|e| e.path()) {
                rows.extend(rows_of(mycorrhizal_codecs::vcard::parse_file(&std::fs::read(&path).expect("read"))));
            }
        }
        let photo = Photo { media_type: "image/png".into(), bytes: vec![0x89, b'P', b'N', b'G', 0, 1, 2] };
        rows.iter_mut().find(|r| r.record.is_some()).expect("a record").photo = Some(photo.clone());
        rows.push(ImportRow::failed(rows.len(), 9, "unreadable".into()));
        let expected: Vec<_> = rows.iter().map(|r| (r.record.clone(), r.photo.clone())).collect();
        assert!(expected.iter().filter(|(r, _)| r.is_some()).count() >= 40, "fixture records");
        let held = Held::of(&std::env::temp_dir(), rows).expect("held");
        for (row, (record, photo)) in held.rows.iter().zip(expected) {
            let got = held.record(row).expect("read");
            assert_eq!(got.as_ref().map(|(r, _)| r), record.as_ref(), "row {}", row.index);
            assert_eq!(
                got.and_then(|(_, p)| p).map(|p| (p.media_type, p.bytes)),
                photo.map(|p| (p.media_type, p.bytes))
            );
            assert_eq!(row.has_record(), record.is_some());
        }
        assert_eq!(held.rows.last().map(|r| r.errors.clone()), Some(vec!["unreadable".to_string()]));
    }
}
