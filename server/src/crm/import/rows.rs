//! The rows of an upload: each incoming card (from the codecs' vCard, JSContact or CSV reading,
//! or a JSON neutral record) as an [`ImportRow`] with its problems, numbered in file order, and
//! where its categories go. Rows are what a preview shows and a confirm applies; duplicate
//! detection (`detect`) and writing (`apply`) are elsewhere.

use mycorrhizal_codecs::record::{Item, NeutralRecord};
use mycorrhizal_codecs::vcard::Photo;
use serde::Serialize;
use serde_json::{Value, json};

use super::pictures::inline_photo;
use super::{ImportError, MergeDiff, Source};

/// An existing contact an incoming row matches, and by what.
#[derive(Debug, Clone, Serialize)]
pub struct DuplicateMatch {
    pub existing_contact_id: u64,
    pub existing_firstname: String,
    pub existing_lastname: String,
    pub existing_email: String,
    pub existing_phone: String,
    /// `uid`, `email`, `phone` or `name`.
    pub match_reason: &'static str,
}

/// Records one JSON batch may hold.
pub const MAX_RECORDS: usize = 500;

/// One row of an upload, prepared for preview and confirm.
#[derive(Debug, Clone)]
pub struct ImportRow {
    pub index: usize,
    /// 1-based line in the file, 0 when the format has none.
    pub line: usize,
    pub record: Option<NeutralRecord>,
    pub photo: Option<Photo>,
    pub errors: Vec<String>,
    pub diagnostics: Vec<String>,
    pub duplicate: Option<DuplicateMatch>,
    pub batch_duplicate_of: Option<usize>,
    pub diff: Option<MergeDiff>,
}

impl ImportRow {
    pub fn from_record(index: usize, line: usize, mut record: NeutralRecord, diagnostics: Vec<String>) -> ImportRow {
        let mut diagnostics = diagnostics;
        let photo = inline_photo(&mut record.card, &mut diagnostics);
        ImportRow {
            index,
            line,
            record: Some(record),
            photo,
            errors: Vec::new(),
            diagnostics,
            duplicate: None,
            batch_duplicate_of: None,
            diff: None,
        }
    }

    /// A mapped CSV row: its record with the values it lost listed, or the reasons it has none.
    pub fn from_csv(index: usize, row: mycorrhizal_codecs::csv::CsvRow) -> ImportRow {
        let mut out = match row.record {
            Some(record) => ImportRow::from_record(index, row.line, record, row.diagnostics),
            None => ImportRow::failed(index, row.line, row.validation_errors.join("; ")),
        };
        out.errors = row.validation_errors;
        out
    }

    pub fn failed(index: usize, line: usize, reason: String) -> ImportRow {
        ImportRow {
            index,
            line,
            record: None,
            photo: None,
            errors: vec![reason],
            diagnostics: Vec::new(),
            duplicate: None,
            batch_duplicate_of: None,
            diff: None,
        }
    }

    /// `add`, `update` or `skip`: what a person would most likely choose.
    pub fn suggested_action(&self) -> &'static str {
        self.suggested().as_str()
    }

    /// What a person would most likely choose.
    pub fn suggested(&self) -> Action {
        if self.record.is_none() || self.batch_duplicate_of.is_some() {
            return Action::Skip;
        }
        match (&self.duplicate, &self.diff) {
            (None, _) => Action::Add,
            (Some(_), Some(diff)) if !diff.is_empty() => Action::Update,
            (Some(_), _) => Action::Skip,
        }
    }
}

/// A person's decision for one row.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Action {
    Add,
    Update,
    Skip,
}

impl Action {
    pub fn parse(text: &str) -> Option<Action> {
        match text {
            "add" => Some(Action::Add),
            "update" => Some(Action::Update),
            "skip" => Some(Action::Skip),
            _ => None,
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Action::Add => "add",
            Action::Update => "update",
            Action::Skip => "skip",
        }
    }
}

/// The rows of parsed codec items, numbered in file order.
pub fn rows_of(items: Vec<Item>) -> Vec<ImportRow> {
    items.into_iter().enumerate().map(|(index, item)| row_of(index, item)).collect()
}

/// The row of the file's item at `index`.
pub fn row_of(index: usize, item: Item) -> ImportRow {
    match item {
        Item::Record { record, line, diagnostics } => ImportRow::from_record(index, line, *record, diagnostics),
        Item::Problem(p) => {
            let at = if p.line > 0 { format!(" (line {})", p.line) } else { String::new() };
            ImportRow::failed(index, p.line, format!("card {}{at}: {}", p.index + 1, p.reason))
        }
    }
}

/// The rows of a JSON batch of neutral records: each record read (a record that is not one is a
/// row naming the path of its fault, `records[i].<path>`), its name filled in when it has none,
/// and its card checked. A batch is 1 to [`MAX_RECORDS`] records.
pub fn rows_of_records(records: Vec<Value>) -> Result<Vec<ImportRow>, ImportError> {
    if records.is_empty() || records.len() > MAX_RECORDS {
        return Err(ImportError::Invalid {
            field: "records".into(),
            reason: format!("between 1 and {MAX_RECORDS} records per batch (got {})", records.len()),
        });
    }
    Ok(records
        .into_iter()
        .enumerate()
        .map(|(index, value)| match serde_path_to_error::deserialize::<_, NeutralRecord>(value) {
            Ok(mut record) => match mycorrhizal_codecs::importable::importable(&mut record) {
                Ok(diagnostics) => ImportRow::from_record(index, 0, record, diagnostics),
                Err(e) => ImportRow::failed(index, 0, format!("records[{index}].{}: {}", e.field, e.reason)),
            },
            Err(e) => ImportRow::failed(index, 0, format!("records[{index}].{}: {}", e.path(), e.inner())),
        })
        .collect())
}

/// The rows of a vCard or JSContact file's cards, at most `max_cards` of them, their categories
/// placed. A JSContact file that is not JSON at all is refused whole rather than shown as one
/// failed row.
pub fn rows_of_cards(
    source: Source,
    items: Vec<Item>,
    categories: Categories,
    max_cards: usize,
) -> Result<Vec<ImportRow>, ImportError> {
    if source == Source::JsContact
        && let [Item::Problem(p)] = items.as_slice()
        && p.reason.starts_with("not valid JSON")
    {
        return Err(ImportError::File(p.reason.clone()));
    }
    check_count(items.len(), max_cards)?;
    let mut rows = rows_of(items);
    categories.place(&mut rows);
    Ok(rows)
}

/// Refuses an upload of more than `max` contacts (`IMPORT_MAX_CARDS`).
pub fn check_count(count: usize, max: usize) -> Result<(), ImportError> {
    if count > max {
        return Err(ImportError::File(format!("holds {count} contacts; at most {max} per upload (IMPORT_MAX_CARDS)")));
    }
    Ok(())
}

/// Where a vCard's `CATEGORIES` (a JSContact card's `keywords`) go: the contact's tags, as the
/// card holds them (the default), or its circles, for address books whose categories are the
/// groups people belong to (Apple and Google export contact groups this way).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Categories {
    #[default]
    Tags,
    Circles,
}

impl Categories {
    /// The `categories` a request names; none (or blank) is [`Categories::Tags`].
    pub fn from_request(text: Option<&str>) -> Result<Categories, ImportError> {
        match text.map(str::trim).filter(|c| !c.is_empty()) {
            None => Ok(Categories::Tags),
            Some(text) => Categories::parse(text).ok_or_else(|| ImportError::Invalid {
                field: "categories".into(),
                reason: "must be tags or circles".into(),
            }),
        }
    }

    pub fn parse(text: &str) -> Option<Categories> {
        match text.trim().to_ascii_lowercase().as_str() {
            "tags" | "tag" => Some(Categories::Tags),
            "circles" | "circle" => Some(Categories::Circles),
            _ => None,
        }
    }

    /// Moves each row's categories into its circles when they are circles; done before duplicate
    /// detection, so the preview's merge diff shows them where they will land.
    pub fn place(self, rows: &mut [ImportRow]) {
        if self == Categories::Tags {
            return;
        }
        for record in rows.iter_mut().filter_map(|r| r.record.as_mut()) {
            let keywords = std::mem::take(&mut record.card.keywords);
            if keywords.is_empty() {
                continue;
            }
            let circles = record.crm.entry("circles").or_insert_with(|| json!([]));
            if !circles.is_array() {
                *circles = json!([]);
            }
            if let Value::Array(list) = circles {
                for keyword in keywords.into_iter().map(|k| k.trim().to_string()).filter(|k| !k.is_empty()) {
                    let keyword = Value::String(keyword);
                    if !list.contains(&keyword) {
                        list.push(keyword);
                    }
                }
            }
        }
    }
}
