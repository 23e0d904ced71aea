//! The preview: opening a session from an upload's rows with duplicate detection run on them
//! ([`preview_rows`]), a CSV upload waiting for its column mapping ([`upload_csv`]) and the
//! preview of that mapping ([`preview_csv`]), and what a preview shows of each row ([`Preview`]).
//! Reading the upload itself (multipart, size limits while streaming) is the front door's;
//! confirming is `confirm`.

use std::collections::BTreeMap;

use mycorrhizal_codecs::csv::{self, ColumnMapping};
use mycorrhizal_codecs::projection::project;
use mycorrhizal_codecs::record::NeutralRecord;
use mycorrhizal_engine::UserScope;
use serde::Serialize;
use serde_json::Value;

use super::{Categories, check_count, prepare, rows_of_cards};
use super::{DuplicateMatch, ImportError, ImportRow, MergeDiff, SessionError, Sessions, Source, Stage};

/// Rows shown in a CSV upload's `sample_data`.
const SAMPLE_ROWS: usize = 5;

/// What a preview shows: every row with its parsed fields, problems, duplicate match, merge diff
/// and suggested action, and the counts. It borrows the rows: a large preview is megabytes, so
/// it is serialized straight from them, before they move into the session.
#[derive(Serialize)]
pub struct Preview<'a> {
    session_id: &'a str,
    rows: PreviewRows<'a>,
    total_rows: usize,
    valid_rows: usize,
    duplicate_count: usize,
    error_count: usize,
}

impl<'a> Preview<'a> {
    pub fn of(session_id: &'a str, rows: &'a [ImportRow]) -> Preview<'a> {
        Preview {
            session_id,
            rows: PreviewRows(rows),
            total_rows: rows.len(),
            valid_rows: rows.iter().filter(|r| r.record.is_some()).count(),
            duplicate_count: rows.iter().filter(|r| r.duplicate.is_some() || r.batch_duplicate_of.is_some()).count(),
            error_count: rows.iter().filter(|r| r.record.is_none()).count(),
        }
    }

    /// The session the preview opens.
    pub fn session_id(&self) -> &str {
        self.session_id
    }
}

struct PreviewRows<'a>(&'a [ImportRow]);

impl Serialize for PreviewRows<'_> {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_seq(self.0.iter().map(|r| PreviewRow {
            row_index: r.index,
            line: r.line,
            parsed_contact: r.record.as_ref().map(parsed_contact).unwrap_or_default(),
            validation_errors: &r.errors,
            duplicate_match: r.duplicate.as_ref(),
            suggested_action: r.suggested_action(),
            merge_diff: r.diff.as_ref(),
            batch_duplicate_of: r.batch_duplicate_of,
            diagnostics: &r.diagnostics,
        }))
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

/// Runs duplicate detection on fresh rows and opens a session of the scope's user holding them, unless the user
/// already holds too many; `render` is given the preview before the rows move into the session,
/// and its result is returned. Blocking: call it off the async threads.
pub fn preview_rows<T>(
    sessions: &Sessions,
    scope: &UserScope,
    source: Source,
    mut rows: Vec<ImportRow>,
    render: impl FnOnce(&Preview<'_>) -> T,
) -> Result<T, ImportError> {
    let user = scope.id();
    // Refused before the duplicate lookups, which are the costly part of a large upload.
    sessions.check_room(user)?;
    let id = Sessions::fresh_id();
    prepare(&scope.view()?, &mut rows)?;
    let rendered = render(&Preview::of(&id, &rows));
    sessions.open_as(id, user, source, None, Stage::Previewed(rows))?;
    Ok(rendered)
}

/// A file of cards.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CardFile {
    /// vCard 2.1, 3.0 or 4.0.
    Vcf,
    /// JSContact (RFC 9553): one Card, an array of Cards, or a CardGroup.
    JsContact,
}

/// Reads a file of cards (a card that cannot be read is a row naming its line, and the others
/// import), at most `max_cards` of them, places their categories and opens a previewed session
/// as [`preview_rows`] does. Blocking: call it off the async threads.
pub fn preview_cards<T>(
    sessions: &Sessions,
    scope: &UserScope,
    file: CardFile,
    bytes: &[u8],
    categories: Categories,
    max_cards: usize,
    render: impl FnOnce(&Preview<'_>) -> T,
) -> Result<T, ImportError> {
    let (source, items) = match file {
        CardFile::Vcf => (Source::Vcf, mycorrhizal_codecs::vcard::parse_file(bytes)),
        CardFile::JsContact => (Source::JsContact, mycorrhizal_codecs::jscontact::parse_file(bytes)),
    };
    let rows = rows_of_cards(source, items, categories, max_cards)?;
    preview_rows(sessions, scope, source, rows, render)
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
/// the session's rows to confirm (replacing an earlier mapping's). `render` is given the preview
/// before the rows move into the session. Blocking: call it off the async threads.
pub fn preview_csv<T>(
    sessions: &Sessions,
    scope: &UserScope,
    session_id: &str,
    mappings: &[ColumnMapping],
    render: impl FnOnce(&Preview<'_>) -> T,
) -> Result<T, ImportError> {
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
    let mut rows: Vec<ImportRow> = csv::apply_mappings(&table, mappings)
        .into_iter()
        .enumerate()
        .map(|(index, row)| ImportRow::from_csv(index, row))
        .collect();
    prepare(&scope.view()?, &mut rows)?;
    let rendered = render(&Preview::of(session_id, &rows));
    sessions.with(user, session_id, |s| {
        // A confirm may have started while the mapping was applied: its rows stand.
        if matches!(s.stage, Stage::Applying | Stage::Done(_)) {
            return Err(SessionError::Busy);
        }
        s.stage = Stage::Previewed(rows);
        Ok(())
    })?;
    Ok(rendered)
}
