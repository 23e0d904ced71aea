//! The preview: rows checked for duplicates and written out as the preview's JSON as they come
//! ([`Previewing`]: a batch at a time, then held for the confirm), the operations that open a
//! previewed session from an upload ([`preview_rows`], [`preview_vcf`] for a vCard stream read as
//! it arrives, [`preview_cards`]), a CSV upload waiting for its column mapping ([`upload_csv`])
//! and the preview of that mapping ([`preview_csv`]). Reading the upload itself (multipart, size
//! limits while streaming) is the front door's; confirming is `confirm`.

use std::collections::BTreeMap;
use std::io::{Read, Write};
use std::path::Path;

use mycorrhizal_codecs::csv::{self, ColumnMapping};
use mycorrhizal_codecs::projection::project;
use mycorrhizal_codecs::record::NeutralRecord;
use mycorrhizal_engine::UserScope;
use serde::Serialize;
use serde_json::Value;

use super::detect::Detector;
use super::held::{Held, Holding};
use super::{Categories, check_count, row_of, rows_of_cards};
use super::{DuplicateMatch, ImportError, ImportRow, MergeDiff, SessionError, Sessions, Source, Stage};

/// Rows shown in a CSV upload's `sample_data`.
const SAMPLE_ROWS: usize = 5;

/// Cards of a vCard stream parsed, checked and written out together.
const CARDS_PER_BATCH: usize = 1024;

/// What a preview counted, and the session it is of. The preview's JSON is
/// `{session_id, rows, total_rows, valid_rows, duplicate_count, error_count}`, each row with its
/// parsed fields, problems, duplicate match, merge diff and suggested action.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Previewed {
    pub session_id: String,
    pub total_rows: usize,
    pub valid_rows: usize,
    pub duplicate_count: usize,
    pub error_count: usize,
}

/// A preview being written: rows come in batches, in file order; each batch is checked
/// ([`Detector`]: custom fields, duplicates of existing contacts and of earlier rows), written to
/// `out` as the preview's JSON rows, and held for the confirm ([`Holding`]). Nothing of a row
/// stays in memory but what the confirm decides by.
pub struct Previewing<'s, W: Write> {
    detector: Detector<'s>,
    holding: Holding,
    out: std::io::BufWriter<W>,
    counts: Previewed,
}

fn written(e: std::io::Error) -> ImportError {
    ImportError::Internal(format!("writing the preview: {e}"))
}

impl<'s, W: Write> Previewing<'s, W> {
    /// Starts the preview of session `session_id` for the scope's user, its rows held in a spool
    /// in `dir`.
    pub fn start(scope: &'s UserScope, dir: &Path, session_id: String, out: W) -> Result<Self, ImportError> {
        let mut out = std::io::BufWriter::with_capacity(64 * 1024, out);
        let id = serde_json::to_string(&session_id).map_err(|e| ImportError::Internal(e.to_string()))?;
        write!(out, "{{\"session_id\":{id},\"rows\":[").map_err(written)?;
        let counts = Previewed { session_id, ..Previewed::default() };
        Ok(Previewing { detector: Detector::new(scope)?, holding: Holding::new(dir)?, out, counts })
    }

    /// Checks, writes and holds the next rows.
    pub fn push(&mut self, mut rows: Vec<ImportRow>) -> Result<(), ImportError> {
        self.detector.check(&mut rows)?;
        for row in rows {
            if self.counts.total_rows > 0 {
                self.out.write_all(b",").map_err(written)?;
            }
            serde_json::to_writer(&mut self.out, &PreviewRow::of(&row)).map_err(|e| written(e.into()))?;
            let c = &mut self.counts;
            c.total_rows += 1;
            if row.record.is_some() {
                c.valid_rows += 1;
            } else {
                c.error_count += 1;
            }
            if row.duplicate.is_some() || row.batch_duplicate_of.is_some() {
                c.duplicate_count += 1;
            }
            self.holding.hold(row)?;
        }
        Ok(())
    }

    /// Ends the preview's JSON: the counts, the rows held and the writer.
    pub fn finish(mut self) -> Result<(Previewed, Held, W), ImportError> {
        let c = &self.counts;
        write!(
            self.out,
            "],\"total_rows\":{},\"valid_rows\":{},\"duplicate_count\":{},\"error_count\":{}}}",
            c.total_rows, c.valid_rows, c.duplicate_count, c.error_count
        )
        .map_err(written)?;
        let out = self.out.into_inner().map_err(|e| written(e.into_error()))?;
        Ok((self.counts, self.holding.finish()?, out))
    }
}

#[derive(Serialize)]
struct PreviewRow<'a> {
    row_index: usize,
    line: usize,
    parsed_contact: BTreeMap<&'static str, String>,
    validation_errors: &'a [String],
    duplicate_match: Option<&'a DuplicateMatch>,
    suggested_action: &'static str,
    merge_diff: Option<&'a MergeDiff>,
    batch_duplicate_of: Option<usize>,
    #[serde(skip_serializing_if = "<[String]>::is_empty")]
    diagnostics: &'a [String],
}

impl<'a> PreviewRow<'a> {
    fn of(r: &'a ImportRow) -> PreviewRow<'a> {
        PreviewRow {
            row_index: r.index,
            line: r.line,
            parsed_contact: r.record.as_ref().map(parsed_contact).unwrap_or_default(),
            validation_errors: &r.errors,
            duplicate_match: r.duplicate.as_ref(),
            suggested_action: r.suggested_action(),
            merge_diff: r.diff.as_ref(),
            batch_duplicate_of: r.batch_duplicate_of,
            diagnostics: &r.diagnostics,
        }
    }
}

/// `parsed_contact` of the preview: the flat fields a person checks, non-empty only.
pub fn parsed_contact(record: &NeutralRecord) -> BTreeMap<&'static str, String> {
    let f = project(&record.card);
    let join = |v: Option<&Value>| -> String {
        v.and_then(Value::as_array)
            .map(|l| l.iter().filter_map(Value::as_str).collect::<Vec<_>>().join(", "))
            .unwrap_or_default()
    };
    let text = |key: &str| record.crm.get(key).and_then(Value::as_str).unwrap_or("").to_string();
    let pairs = [
        ("firstname", f.firstname.clone()),
        ("lastname", f.lastname.clone()),
        ("middle_name", f.middle_name.clone()),
        ("prefix", f.prefix.clone()),
        ("suffix", f.suffix.clone()),
        ("nickname", f.nickname.clone()),
        ("email", f.email.clone()),
        ("phone", f.phone.clone()),
        ("birthday", f.birthday.clone()),
        ("anniversary", f.anniversary.clone()),
        ("address", f.address.clone()),
        ("gender", record.gender.clone()),
        ("organization", f.org.clone()),
        ("department", f.department.clone()),
        ("job_title", f.job_title.clone()),
        ("role", f.role.clone()),
        ("work_information", text("work_information")),
        ("circles", join(record.crm.get("circles"))),
        ("tags", record.card.keywords.join(", ")),
    ];
    pairs.into_iter().filter(|(_, v)| !v.is_empty()).collect()
}

/// Opens a previewed session of the scope's user from fresh rows (duplicates found, rows held),
/// unless the user already holds too many; the preview's JSON goes to `out`. Blocking: call it
/// off the async threads.
pub fn preview_rows(
    sessions: &Sessions,
    scope: &UserScope,
    source: Source,
    rows: Vec<ImportRow>,
    out: impl Write,
) -> Result<Previewed, ImportError> {
    let user = scope.id();
    // Refused before the duplicate lookups, which are the costly part of a large upload.
    sessions.check_room(user)?;
    let mut preview = Previewing::start(scope, sessions.dir(), Sessions::fresh_id(), out)?;
    preview.push(rows)?;
    let (previewed, held, _) = preview.finish()?;
    sessions.open_as(previewed.session_id.clone(), user, source, None, Stage::Previewed(held))?;
    Ok(previewed)
}

/// Reads a vCard stream as it arrives (2.1, 3.0 or 4.0; UTF-8, UTF-16 or Windows-1252), a batch
/// of cards at a time: each batch is parsed, its categories placed, checked and written to `out`
/// as the preview's rows, then held for the confirm, so neither the file nor its parsed cards
/// are ever held whole. A card that cannot be read is a row naming its line; more than
/// `max_cards` cards refuse the whole upload (they are counted to the end, for the message).
/// Opens the previewed session as [`preview_rows`] does. Blocking: call it off the async threads.
pub fn preview_vcf(
    sessions: &Sessions,
    scope: &UserScope,
    input: impl Read,
    categories: Categories,
    max_cards: usize,
    out: impl Write,
) -> Result<Previewed, ImportError> {
    let user = scope.id();
    sessions.check_room(user)?;
    let unreadable = |e: std::io::Error| ImportError::File(format!("the upload could not be read: {e}"));
    let mut preview = Previewing::start(scope, sessions.dir(), Sessions::fresh_id(), out)?;
    let mut cards = mycorrhizal_codecs::vcard::Cards::new(input);
    loop {
        let batch = cards.next_cards(CARDS_PER_BATCH).map_err(unreadable)?;
        if batch.is_empty() {
            break;
        }
        if cards.found() > max_cards {
            while cards.next_card().map_err(unreadable)?.is_some() {}
            check_count(cards.found(), max_cards)?;
        }
        let items = mycorrhizal_codecs::vcard::parse_cards(&batch);
        let mut rows: Vec<ImportRow> = batch.iter().zip(items).map(|(card, item)| row_of(card.index, item)).collect();
        categories.place(&mut rows);
        preview.push(rows)?;
    }
    if let Some(nothing) = cards.nothing_found() {
        preview.push(vec![row_of(0, nothing)])?;
    }
    let (previewed, held, _) = preview.finish()?;
    sessions.open_as(previewed.session_id.clone(), user, Source::Vcf, None, Stage::Previewed(held))?;
    Ok(previewed)
}

/// A file of cards.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CardFile {
    /// vCard 2.1, 3.0 or 4.0.
    Vcf,
    /// JSContact (RFC 9553): one Card, an array of Cards, or a CardGroup.
    JsContact,
}

/// Reads a file of cards in hand (a card that cannot be read is a row naming its line, and the
/// others import), at most `max_cards` of them, places their categories and opens a previewed
/// session as [`preview_rows`] does. Blocking: call it off the async threads.
pub fn preview_cards(
    sessions: &Sessions,
    scope: &UserScope,
    file: CardFile,
    bytes: &[u8],
    categories: Categories,
    max_cards: usize,
    out: impl Write,
) -> Result<Previewed, ImportError> {
    match file {
        CardFile::Vcf => preview_vcf(sessions, scope, bytes, categories, max_cards, out),
        CardFile::JsContact => {
            let items = mycorrhizal_codecs::jscontact::parse_file(bytes);
            let rows = rows_of_cards(Source::JsContact, items, categories, max_cards)?;
            preview_rows(sessions, scope, Source::JsContact, rows, out)
        }
    }
}

/// A CSV upload, opened as a session waiting for its column mapping: the columns, the mapping
/// suggested for them (Google, Outlook and Apple headers are recognised), and the first rows.
#[derive(Debug, Serialize, utoipa::ToSchema)]
pub struct CsvUpload {
    pub headers: Vec<String>,
    pub row_count: usize,
    pub sample_data: Vec<Vec<String>>,
    pub session_id: String,
    /// `[{csv_column, contact_field, group}]`.
    #[schema(value_type = Vec<Object>)]
    pub suggested_mappings: Vec<ColumnMapping>,
}

/// Reads a CSV file (any of the encodings and separators the codec recognises), at most
/// `max_cards` rows, and opens its session. Blocking: call it off the async threads.
/// A column headed by a custom field's label or key (as our export writes it) is suggested as
/// that field (`field:<key>`): exactly so even over a usual header (a field labelled
/// `Homepage`), in another case only where nothing else was.
pub fn upload_csv(
    sessions: &Sessions,
    scope: &UserScope,
    bytes: &[u8],
    max_cards: usize,
) -> Result<CsvUpload, ImportError> {
    let user = scope.id();
    let text = mycorrhizal_codecs::text::decode(bytes);
    let table = csv::read_table(&text).map_err(|e| ImportError::File(format!("line {}: {}", e.line, e.reason)))?;
    check_count(table.rows.len(), max_cards)?;
    let headers = table.headers.clone();
    let mut suggested_mappings = csv::suggest_mappings(&table.headers);
    let defs = crate::crm::field::ops::definitions(&scope.view()?)?;
    for m in suggested_mappings.iter_mut() {
        let header = m.csv_column.trim();
        let exact = defs.iter().find(|d| d.body.label == header || d.body.key == header);
        let loose = || defs.iter().find(|d| d.body.label.eq_ignore_ascii_case(header));
        let found = exact.or_else(|| if m.contact_field.is_empty() { loose() } else { None });
        if let Some(d) = found {
            m.contact_field = format!("{}{}", csv::CUSTOM_FIELD_PREFIX, d.body.key);
        }
    }
    let row_count = table.rows.len();
    let sample_data = table.rows.iter().take(SAMPLE_ROWS).cloned().collect();
    let session_id = sessions.open(user, Source::Csv, Some(table), Stage::Uploaded)?;
    Ok(CsvUpload { headers, row_count, sample_data, session_id, suggested_mappings })
}

/// Applies a column mapping to a CSV session's table: its rows, with duplicate detection, become
/// the session's rows to confirm (replacing an earlier mapping's); the preview's JSON goes to
/// `out`. Blocking: call it off the async threads.
pub fn preview_csv(
    sessions: &Sessions,
    scope: &UserScope,
    session_id: &str,
    mappings: &[ColumnMapping],
    out: impl Write,
) -> Result<Previewed, ImportError> {
    let user = scope.id();
    let table = sessions.with(user, session_id, |s| {
        if s.source != Source::Csv {
            return Err(SessionError::WrongEndpoint(s.source));
        }
        if matches!(s.stage, Stage::Applying | Stage::Done(_)) {
            return Err(SessionError::Busy);
        }
        s.table.clone().ok_or(SessionError::NotFound)
    })?;
    csv::check_mappings(&table.headers, mappings).map_err(|(field, reason)| ImportError::Invalid { field, reason })?;
    let rows: Vec<ImportRow> = csv::apply_mappings(&table, mappings)
        .into_iter()
        .enumerate()
        .map(|(index, row)| ImportRow::from_csv(index, row))
        .collect();
    drop(table);
    let mut preview = Previewing::start(scope, sessions.dir(), session_id.to_string(), out)?;
    preview.push(rows)?;
    let (previewed, held, _) = preview.finish()?;
    sessions.with(user, session_id, |s| {
        // A confirm may have started while the mapping was applied: its rows stand.
        if matches!(s.stage, Stage::Applying | Stage::Done(_)) {
            return Err(SessionError::Busy);
        }
        s.stage = Stage::Previewed(held);
        Ok(())
    })?;
    Ok(previewed)
}
