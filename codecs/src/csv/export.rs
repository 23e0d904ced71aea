//! Export: the header row, one row per record, RFC 4180 quoting and formula neutralisation.

use std::borrow::Cow;
use std::collections::HashMap;
use std::io::{self, Write};

use serde_json::Value;

use crate::card::{Card, component};
use crate::record::NeutralRecord;

use super::*;

/// A cell a spreadsheet would run as a formula (starting with `=`, `+`, `-`, `@`, tab or
/// carriage return) gets a leading `'`. So that [`read_table`] can undo it exactly, a cell that
/// already starts with `'`s before such a character gets one more.
pub fn neutralise(cell: &str) -> Cow<'_, str> {
    if is_formula_like(cell) { Cow::Owned(format!("'{cell}")) } else { Cow::Borrowed(cell) }
}

/// Writes CSV rows (RFC 4180: CRLF line ends, fields with `,` `"` CR or LF quoted, quotes
/// doubled), every cell formula-neutralised. Into a `Vec<u8>` by default, or any writer.
pub struct CsvWriter<W: Write = Vec<u8>> {
    inner: ::csv::Writer<W>,
}

impl CsvWriter<Vec<u8>> {
    /// A writer into a fresh buffer; [`CsvWriter::finish`] returns the bytes.
    pub fn buffer() -> Self {
        Self::new(Vec::new())
    }
}

impl Default for CsvWriter<Vec<u8>> {
    fn default() -> Self {
        Self::buffer()
    }
}

impl<W: Write> CsvWriter<W> {
    pub fn new(out: W) -> Self {
        let inner = ::csv::WriterBuilder::new()
            .flexible(true)
            .terminator(::csv::Terminator::CRLF)
            .quote_style(::csv::QuoteStyle::Necessary)
            .from_writer(out);
        Self { inner }
    }

    /// Writes one row; cells may be any number (rows are not checked against a header).
    pub fn write_row(&mut self, cells: &[&str]) -> io::Result<()> {
        let cells: Vec<Cow<'_, str>> = cells.iter().map(|c| neutralise(c)).collect();
        self.inner.write_record(cells.iter().map(|c| c.as_bytes()))?;
        Ok(())
    }

    /// Flushes and returns the underlying writer (the bytes, for a buffer).
    pub fn finish(self) -> io::Result<W> {
        self.inner.into_inner().map_err(|e| e.into_error())
    }
}

/// The columns of our CSV export. [`suggest_mappings`] maps each to its field, so an export
/// re-imports unchanged. Entries beyond the numbered columns go into the last one, `:::`-joined.
pub const EXPORT_HEADERS: &[&str] = &[
    "firstname",
    "lastname",
    "middle_name",
    "prefix",
    "suffix",
    "nickname",
    "full_name",
    "gender",
    "birthday",
    "anniversary",
    "organization",
    "department",
    "job_title",
    "role",
    "email 1",
    "email 1 label",
    "email 2",
    "email 2 label",
    "email 3",
    "email 3 label",
    "phone 1",
    "phone 1 label",
    "phone 2",
    "phone 2 label",
    "phone 3",
    "phone 3 label",
    "address 1 street",
    "address 1 city",
    "address 1 region",
    "address 1 postal",
    "address 1 country",
    "address 1 label",
    "address 2 street",
    "address 2 city",
    "address 2 region",
    "address 2 postal",
    "address 2 country",
    "address 2 label",
    "url 1",
    "url 1 label",
    "url 2",
    "url 2 label",
    "impp 1",
    "impp 1 label",
    "circles",
    "tags",
    "how_we_met",
    "work_information",
    "contact_information",
    "notes",
];

/// How many numbered columns each multi-valued kind has in [`EXPORT_HEADERS`].
const EXPORT_SLOTS: [(&str, usize); 5] = [("email", 3), ("phone", 3), ("address", 2), ("url", 2), ("impp", 1)];

fn strings(value: Option<&Value>) -> Vec<String> {
    match value {
        Some(Value::Array(items)) => items.iter().filter_map(Value::as_str).map(str::to_string).collect(),
        Some(Value::String(s)) if !s.is_empty() => vec![s.clone()],
        _ => Vec::new(),
    }
}

/// The label cell of an entry: its kept label, else its contexts (`private` as `home`) and
/// features; `* ` in front of the primary one.
fn label_text(contexts: &[String], features: &[String], label: Option<&str>, pref: Option<u32>) -> String {
    let text = match label.filter(|l| !l.trim().is_empty()) {
        Some(l) => l.to_string(),
        None => contexts
            .iter()
            .map(|c| if c == "private" { "home" } else { c.as_str() })
            .chain(features.iter().map(String::as_str))
            .collect::<Vec<_>>()
            .join(" "),
    };
    if pref == Some(1) { format!("* {text}").trim_end().to_string() } else { text }
}

/// One entry of a multi-valued kind for export: the value cells (by column suffix) and label.
struct Entry {
    cells: Vec<(&'static str, String)>,
    label: String,
}

fn resource_entries(card: &Card, member: &str) -> Vec<Entry> {
    let Some(Value::Array(items)) = card.extra.get(member) else { return Vec::new() };
    items
        .iter()
        .filter_map(|item| {
            let uri = item.get("uri").and_then(Value::as_str).filter(|u| !u.is_empty())?;
            let contexts = strings(item.get("contexts"));
            let pref = item.get("pref").and_then(Value::as_u64).and_then(|p| u32::try_from(p).ok());
            let label = label_text(&contexts, &[], item.get("label").and_then(Value::as_str), pref);
            Some(Entry { cells: vec![("", uri.to_string())], label })
        })
        .collect()
}

fn extra_label(extra: &crate::card::Extra) -> Option<&str> {
    extra.get("label").and_then(Value::as_str)
}

/// Writes `entries` into the numbered columns `<kind> 1..=slots` (overflow `:::`-joined into the
/// last).
fn put_entries(cells: &mut HashMap<String, String>, kind: &str, slots: usize, entries: &[Entry]) {
    for slot in 1..=slots {
        let from = slot - 1;
        let chunk: &[Entry] =
            if slot < slots { entries.get(from..slot).unwrap_or(&[]) } else { entries.get(from..).unwrap_or(&[]) };
        if chunk.is_empty() {
            continue;
        }
        let join = |texts: Vec<&str>| {
            if texts.iter().all(|t| t.is_empty()) { String::new() } else { texts.join(" ::: ") }
        };
        let suffixes: Vec<&'static str> = chunk[0].cells.iter().map(|(s, _)| *s).collect();
        for suffix in suffixes {
            let texts: Vec<&str> = chunk
                .iter()
                .map(|e| e.cells.iter().find(|(s, _)| *s == suffix).map_or("", |(_, v)| v.as_str()))
                .collect();
            let header = if suffix.is_empty() { format!("{kind} {slot}") } else { format!("{kind} {slot} {suffix}") };
            cells.insert(header, join(texts));
        }
        cells.insert(format!("{kind} {slot} label"), join(chunk.iter().map(|e| e.label.as_str()).collect()));
    }
}

/// The cells of one record for [`EXPORT_HEADERS`], in that order (not yet neutralised;
/// [`CsvWriter`] does that). Circles and tags are joined with `, `, notes with a blank line.
pub fn export_row(record: &NeutralRecord) -> Vec<String> {
    let card = &record.card;
    let mut cells: HashMap<String, String> = HashMap::new();
    let mut put = |k: &str, v: String| {
        cells.insert(k.to_string(), v);
    };
    if let Some(name) = &card.name {
        for (field, kind) in [
            ("firstname", "given"),
            ("lastname", "surname"),
            ("middle_name", "given2"),
            ("prefix", "title"),
            ("suffix", "credential"),
        ] {
            put(field, component(&name.components, kind).unwrap_or("").to_string());
        }
        put("full_name", name.full.clone().unwrap_or_default());
    }
    put("nickname", card.nicknames.iter().map(|n| n.name.as_str()).collect::<Vec<_>>().join(" ::: "));
    put("gender", record.gender.clone());
    for (field, kind) in [("birthday", "birth"), ("anniversary", "wedding")] {
        let date = card.anniversaries.iter().find(|a| a.kind == kind).and_then(|a| a.date.partial.as_ref());
        put(field, date.map(date_text).unwrap_or_default());
    }
    if let Some(org) = card.organizations.first() {
        put("organization", org.name.clone().unwrap_or_default());
        put("department", org.units.first().map(|u| u.name.clone()).unwrap_or_default());
    }
    let title =
        |role: bool| card.titles.iter().find(|t| (t.kind.as_deref() == Some("role")) == role).map(|t| t.name.clone());
    put("job_title", title(false).unwrap_or_default());
    put("role", title(true).unwrap_or_default());
    put("circles", strings(record.crm.get("circles")).join(", "));
    put("tags", card.keywords.join(", "));
    for field in ["how_we_met", "work_information", "contact_information"] {
        put(field, record.crm.get(field).and_then(Value::as_str).unwrap_or("").to_string());
    }
    let notes: Vec<&str> = match card.extra.get("notes") {
        Some(Value::Array(items)) => items.iter().filter_map(|n| n.get("note").and_then(Value::as_str)).collect(),
        _ => Vec::new(),
    };
    put("notes", notes.join("\n\n"));

    let emails: Vec<Entry> = card
        .emails
        .iter()
        .map(|e| Entry {
            cells: vec![("", e.address.clone())],
            label: label_text(&e.contexts, &[], extra_label(&e.extra), e.pref),
        })
        .collect();
    let phones: Vec<Entry> = card
        .phones
        .iter()
        .map(|p| Entry {
            cells: vec![("", p.number.clone())],
            label: label_text(&p.contexts, &strings(p.extra.get("features")), extra_label(&p.extra), p.pref),
        })
        .collect();
    let addresses: Vec<Entry> = card
        .addresses
        .iter()
        .map(|a| {
            let get = |kind| component(&a.components, kind).unwrap_or("").to_string();
            let street = if a.components.is_empty() { a.full.clone().unwrap_or_default() } else { get("name") };
            Entry {
                cells: vec![
                    ("street", street),
                    ("city", get("locality")),
                    ("region", get("region")),
                    ("postal", get("postcode")),
                    ("country", get("country")),
                ],
                label: label_text(&a.contexts, &[], extra_label(&a.extra), a.pref),
            }
        })
        .collect();
    let lists = [emails, phones, addresses, resource_entries(card, "links"), resource_entries(card, "imppAddresses")];
    for ((kind, slots), entries) in EXPORT_SLOTS.iter().zip(lists.iter()) {
        put_entries(&mut cells, kind, *slots, entries);
    }
    EXPORT_HEADERS.iter().map(|h| cells.remove(*h).unwrap_or_default()).collect()
}

/// A whole export: the header row and one row per record, as UTF-8 bytes.
pub fn export(records: &[NeutralRecord]) -> Vec<u8> {
    let mut writer = CsvWriter::buffer();
    // Writing into a Vec cannot fail.
    let _ = writer.write_row(EXPORT_HEADERS);
    for record in records {
        let cells = export_row(record);
        let _ = writer.write_row(&cells.iter().map(String::as_str).collect::<Vec<_>>());
    }
    writer.finish().unwrap_or_default()
}
