//! CSV import and export of contacts. Pure functions: bytes in, cards out (and back), no I/O.
//!
//! Import runs in four steps, each usable on its own by the import endpoints:
//! [`decode`] (UTF-8 with or without BOM, UTF-16 with BOM, else Windows-1252), [`read_table`]
//! (delimiter detection, RFC 4180 quoting, 1-based line of every row), [`suggest_mappings`] (the
//! column dialects of Google, Outlook, Apple-style and generic exports, and our own export), and
//! [`apply_mappings`] (one neutral record per row, with per-row validation errors).
//!
//! Export: [`EXPORT_HEADERS`], [`export_row`] and [`CsvWriter`] (RFC 4180 quoting, every cell
//! formula-neutralised by [`neutralise`]). The reader reads its own output back: [`read_table`]
//! undoes the neutralisation, and [`suggest_mappings`] maps our headers to their fields.
//!
//! Multi-valued cells: a cell of an email, phone, url, impp or address column may hold several
//! values separated by `:::` (Google writes ` ::: `); each becomes its own entry, paired by
//! position with the pieces of the group's other columns (a single label piece applies to all).

use std::fmt;

mod dates;
mod export;
mod mapping;
mod rows;

use dates::{column_is_day_first, date_text, parse_date};
pub use export::{CsvWriter, EXPORT_HEADERS, export, export_row, neutralise};
pub use mapping::{
    CUSTOM_FIELD_PREFIX, CUSTOM_FIELDS_MEMBER, ColumnMapping, FIELDS, check_mappings, custom_key, implied_label,
    suggest_mappings,
};
use mapping::{Family, family, known_field};
pub use rows::{CsvRow, apply_mappings};

// ---------------------------------------------------------------------------------------------
// Decoding
// ---------------------------------------------------------------------------------------------

/// The text of an uploaded file: UTF-8 (a BOM is dropped), UTF-16 LE/BE with a BOM (or without
/// one when the first character is ASCII, as Outlook writes), and otherwise Windows-1252 (older
/// Outlook and Excel exports). Never fails: undecodable bytes become U+FFFD.
pub fn decode(bytes: &[u8]) -> String {
    if let Some(rest) = bytes.strip_prefix(&[0xEF, 0xBB, 0xBF]) {
        return String::from_utf8_lossy(rest).into_owned();
    }
    if let Some(rest) = bytes.strip_prefix(&[0xFF, 0xFE]) {
        return encoding_rs::UTF_16LE.decode_without_bom_handling(rest).0.into_owned();
    }
    if let Some(rest) = bytes.strip_prefix(&[0xFE, 0xFF]) {
        return encoding_rs::UTF_16BE.decode_without_bom_handling(rest).0.into_owned();
    }
    // No BOM: a text file never holds NUL, so `X\0` / `\0X` at the start is UTF-16.
    match bytes {
        [a, 0, ..] if *a != 0 && a.is_ascii() && bytes.len().is_multiple_of(2) => {
            return encoding_rs::UTF_16LE.decode_without_bom_handling(bytes).0.into_owned();
        }
        [0, b, ..] if *b != 0 && b.is_ascii() && bytes.len().is_multiple_of(2) => {
            return encoding_rs::UTF_16BE.decode_without_bom_handling(bytes).0.into_owned();
        }
        _ => {}
    }
    match std::str::from_utf8(bytes) {
        Ok(text) => text.to_owned(),
        Err(_) => encoding_rs::WINDOWS_1252.decode_without_bom_handling(bytes).0.into_owned(),
    }
}

// ---------------------------------------------------------------------------------------------
// Reading the table
// ---------------------------------------------------------------------------------------------

/// A parsed CSV file: trimmed header names, one row of cells per data row (exactly as wide as
/// the header), and the 1-based line each row starts on.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Table {
    pub headers: Vec<String>,
    pub rows: Vec<Vec<String>>,
    pub row_lines: Vec<usize>,
}

/// Why a file could not be read as a table: the 1-based line and the reason.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TableError {
    pub line: usize,
    pub reason: String,
}

impl fmt::Display for TableError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "line {}: {}", self.line, self.reason)
    }
}

impl std::error::Error for TableError {}

const DELIMITERS: [u8; 3] = [b',', b';', b'\t'];

/// The delimiter of `text`: whichever of `,` `;` and tab occurs most often outside quotes in
/// the header line (the first line with content); `,` on a tie or when there is none.
pub fn detect_delimiter(text: &str) -> u8 {
    let mut counts = [0usize; 3];
    let mut in_quotes = false;
    let mut field_start = true;
    let mut content = false;
    let bytes = text.as_bytes();
    let mut i = 0;
    while i < bytes.len() {
        let b = bytes[i];
        i += 1;
        if in_quotes {
            if b == b'"' {
                if bytes.get(i) == Some(&b'"') {
                    i += 1;
                } else {
                    in_quotes = false;
                }
            }
            continue;
        }
        match b {
            b'"' if field_start => {
                in_quotes = true;
                field_start = false;
                content = true;
            }
            b'\n' | b'\r' => {
                if content {
                    break;
                }
                field_start = true;
            }
            _ => {
                if let Some(k) = DELIMITERS.iter().position(|d| *d == b) {
                    counts[k] += 1;
                    field_start = true;
                    content = true;
                } else {
                    field_start = false;
                    content |= !b.is_ascii_whitespace();
                }
            }
        }
    }
    let mut best = 0;
    for k in 1..DELIMITERS.len() {
        if counts[k] > counts[best] {
            best = k;
        }
    }
    DELIMITERS[best]
}

/// The 1-based line of a quoted field that is never closed, if any (the rest of the file would
/// otherwise vanish into one cell). Quotes open only at the start of a field, as the reader does.
fn unclosed_quote(text: &str, delimiter: u8) -> Option<usize> {
    let bytes = text.as_bytes();
    let (mut line, mut opened_at) = (1usize, 0usize);
    let (mut in_quotes, mut field_start) = (false, true);
    let mut i = 0;
    while i < bytes.len() {
        let b = bytes[i];
        if is_break(bytes, i) {
            line += 1;
        }
        i += 1;
        if in_quotes {
            if b == b'"' {
                if bytes.get(i) == Some(&b'"') {
                    i += 1;
                } else {
                    in_quotes = false;
                }
            }
            continue;
        }
        if b == b'"' && field_start {
            in_quotes = true;
            opened_at = line;
        }
        field_start = b == delimiter || b == b'\n' || b == b'\r';
    }
    in_quotes.then_some(opened_at)
}

/// A cell starts with a formula trigger after any number of leading apostrophes.
fn is_formula_like(cell: &str) -> bool {
    matches!(cell.trim_start_matches('\'').chars().next(), Some('=' | '+' | '-' | '@' | '\t' | '\r'))
}

/// Undoes [`neutralise`]: drops the one leading `'` it added.
fn unneutralise(cell: String) -> String {
    match cell.strip_prefix('\'') {
        Some(rest) if is_formula_like(rest) => rest.to_string(),
        _ => cell,
    }
}

/// Whether byte `i` ends a line: `\n`, `\r`, and `\r\n` counted once.
fn is_break(bytes: &[u8], i: usize) -> bool {
    match bytes.get(i) {
        Some(b'\r') => true,
        Some(b'\n') => i == 0 || bytes.get(i - 1) != Some(&b'\r'),
        _ => false,
    }
}

/// The 1-based line of each record, counted incrementally (records come in order).
struct Lines<'a> {
    bytes: &'a [u8],
    at: usize,
    line: usize,
}

impl Lines<'_> {
    /// The line a record starts on. The reader reports where it began looking, which is
    /// before any empty lines it skipped, so those are skipped here too.
    fn of(&mut self, position: Option<&::csv::Position>) -> usize {
        let Some(pos) = position else { return self.line };
        let mut start = usize::try_from(pos.byte()).unwrap_or(usize::MAX).min(self.bytes.len());
        while matches!(self.bytes.get(start), Some(b'\n' | b'\r')) {
            start += 1;
        }
        if start < self.at {
            (self.at, self.line) = (0, 1);
        }
        self.line += (self.at..start).filter(|i| is_break(self.bytes, *i)).count();
        self.at = start;
        self.line
    }
}

/// Reads CSV text into a [`Table`]. The first row with content is the header; header names are
/// trimmed; fully empty rows are skipped; short rows are padded and long rows truncated to the
/// header's width; a leading `'` added by formula neutralisation is removed. An empty file, a
/// header without names, or a quote never closed is an error.
pub fn read_table(text: &str) -> Result<Table, TableError> {
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    if text.trim().is_empty() {
        return Err(TableError { line: 1, reason: "the file is empty".into() });
    }
    let delimiter = detect_delimiter(text);
    if let Some(line) = unclosed_quote(text, delimiter) {
        return Err(TableError { line, reason: "a quoted field is never closed (a missing '\"')".into() });
    }
    let mut reader =
        ::csv::ReaderBuilder::new().delimiter(delimiter).has_headers(false).flexible(true).from_reader(text.as_bytes());
    let mut table = Table::default();
    let mut header_seen = false;
    let mut lines = Lines { bytes: text.as_bytes(), at: 0, line: 1 };
    for result in reader.records() {
        let record = result.map_err(|e| TableError { line: lines.of(e.position()), reason: e.to_string() })?;
        let line = lines.of(record.position());
        if !header_seen {
            header_seen = true;
            table.headers = record.iter().map(|h| h.trim().to_string()).collect();
            if table.headers.iter().all(String::is_empty) {
                return Err(TableError {
                    line,
                    reason: "the first row holds no column names; the file needs a header row".into(),
                });
            }
            continue;
        }
        if record.iter().all(|c| c.trim().is_empty()) {
            continue;
        }
        let mut cells: Vec<String> = record.iter().map(|c| unneutralise(c.to_string())).collect();
        cells.resize(table.headers.len(), String::new());
        table.rows.push(cells);
        table.row_lines.push(line);
    }
    if !header_seen {
        return Err(TableError { line: 1, reason: "the file has no header row".into() });
    }
    Ok(table)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn delimiters_are_counted_outside_quotes() {
        assert_eq!(detect_delimiter("\n\n\"a;b;c\",d\n1;2;3;4;5"), b',');
        assert_eq!(detect_delimiter("a;b;c\n"), b';');
        assert_eq!(detect_delimiter("a\tb\t\"c,d\"\n"), b'\t');
        assert_eq!(detect_delimiter("name"), b',');
    }

    #[test]
    fn neutralisation_is_undone_exactly() {
        for cell in ["=1+1", "+1 555", "-x", "@a", "\tx", "'+1", "''=x", "'plain", "plain", "", "'"] {
            assert_eq!(unneutralise(neutralise(cell).into_owned()), cell, "{cell:?}");
        }
    }
}
