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

use std::borrow::Cow;
use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::fmt;
use std::io::{self, Write};

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value, json};

use crate::card::{
    Address, Anniversary, AnniversaryDate, Card, Component, Email, Name, Nickname, Organization, Phone, Title, Unit,
    component,
};
use crate::dates::Partial;
use crate::projection::normalize_phone;
use crate::record::NeutralRecord;

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

// ---------------------------------------------------------------------------------------------
// Column mappings
// ---------------------------------------------------------------------------------------------

/// Which contact field a CSV column feeds (wire shape of wire-shapes §7.1). `contact_field` `""`
/// ignores the column; `group` ties the parts of one multi-valued entry together (the
/// `email_label` and `email` of group 1 form one email).
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Eq)]
pub struct ColumnMapping {
    pub csv_column: String,
    #[serde(default)]
    pub contact_field: String,
    #[serde(default)]
    pub group: u32,
}

/// The allowed `contact_field` values: those of wire-shapes §7.1, plus `full_name` (name.full)
/// and `notes` (card notes), which common exports carry.
pub const FIELDS: &[&str] = &[
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
    "how_we_met",
    "work_information",
    "contact_information",
    "circles",
    "tags",
    "notes",
    "email",
    "phone",
    "url",
    "impp",
    "address_street",
    "address_city",
    "address_region",
    "address_postal",
    "address_country",
    "email_label",
    "phone_label",
    "url_label",
    "impp_label",
    "address_label",
];

fn known_field(name: &str) -> Option<&'static str> {
    FIELDS.iter().copied().find(|f| *f == name)
}

/// Checks mappings against the headers: every `contact_field` is `""` or one of [`FIELDS`], and
/// every `csv_column` names a header. The error is the field path (`mappings[3].contact_field`)
/// and the reason.
pub fn check_mappings(headers: &[String], mappings: &[ColumnMapping]) -> Result<(), (String, String)> {
    for (i, m) in mappings.iter().enumerate() {
        let column = m.csv_column.trim();
        if column.is_empty() && !headers.iter().any(String::is_empty) {
            return Err((format!("mappings[{i}].csv_column"), "is required".into()));
        }
        if !headers.iter().any(|h| h == column || h.eq_ignore_ascii_case(column)) {
            return Err((format!("mappings[{i}].csv_column"), format!("\"{column}\" is not a column of the file")));
        }
        let field = m.contact_field.trim();
        if !field.is_empty() && known_field(field).is_none() {
            return Err((
                format!("mappings[{i}].contact_field"),
                format!("\"{field}\" is not a contact field (allowed: \"\", {})", FIELDS.join(", ")),
            ));
        }
    }
    Ok(())
}

/// The multi-valued field families: their parts are tied together by `group`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
enum Family {
    Email,
    Phone,
    Url,
    Impp,
    Address,
}

fn family(field: &str) -> Option<Family> {
    Some(match field {
        "email" | "email_label" => Family::Email,
        "phone" | "phone_label" => Family::Phone,
        "url" | "url_label" => Family::Url,
        "impp" | "impp_label" => Family::Impp,
        f if f.starts_with("address_") => Family::Address,
        _ => return None,
    })
}

/// How suggested mappings pick a column's group.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Key {
    /// The number the header carries (`E-mail 2 - Value`, `email 2`).
    Num(u32),
    /// Columns of the same family and name share one group (`Home Street`, `Home City`).
    Named(&'static str),
    /// A group of its own (`Mobile Phone`, `Business Phone`).
    Solo,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Guess {
    field: &'static str,
    key: Key,
    label: Option<&'static str>,
}

fn guess(field: &'static str) -> Option<Guess> {
    Some(Guess { field, key: Key::Named(""), label: None })
}

/// Lower case, `e-mail` as `email`, `_` as space, single spaces.
fn normalise_header(header: &str) -> String {
    let lower = header.trim().to_lowercase().replace("e-mail", "email").replace('_', " ");
    lower.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// The label a qualifier word implies, and the key address columns of that qualifier share.
fn qualifier(word: &str) -> Option<(&'static str, Option<&'static str>)> {
    Some(match word {
        "home" | "personal" | "private" => ("home", Some("home")),
        "work" | "business" | "office" | "company" => ("work", Some("work")),
        "other" => ("other", None),
        "mobile" | "cell" | "cellular" | "iphone" => ("mobile", Some("mobile")),
        _ => return None,
    })
}

/// Unqualified base names of multi-valued columns: (field, label the base itself implies).
fn family_base(base: &str) -> Option<(&'static str, Option<&'static str>)> {
    Some(match base {
        "email" | "email address" | "mail" | "emails" => ("email", None),
        "email label" => ("email_label", None),
        "phone" | "telephone" | "tel" | "phone number" | "telephone number" | "main phone" => ("phone", None),
        "phone label" => ("phone_label", None),
        "mobile" | "cell" | "mobile phone" | "cell phone" | "cellphone" | "mobile number" | "iphone" => {
            ("phone", Some("mobile"))
        }
        "fax" | "fax number" => ("phone", Some("fax")),
        "pager" => ("phone", Some("pager")),
        "url" | "website" | "web site" | "web page" | "webpage" | "homepage" | "home page" | "web" => ("url", None),
        "url label" => ("url_label", None),
        "im" | "impp" | "im address" | "imaddress" | "instant messenger" | "messenger" => ("impp", None),
        "impp label" => ("impp_label", None),
        "address" | "street" | "street address" | "address line 1" | "address line 2" | "street 2" | "street 3"
        | "address line 3" => ("address_street", None),
        "city" | "town" | "locality" => ("address_city", None),
        "state" | "region" | "province" | "state/province" => ("address_region", None),
        "zip" | "zip code" | "zipcode" | "postal code" | "postcode" | "post code" | "postal" => {
            ("address_postal", None)
        }
        "country" | "country/region" => ("address_country", None),
        "address label" => ("address_label", None),
        _ => return None,
    })
}

/// Combines a qualifier's label with the label a base implies (`Home` + `Fax` = `home fax`).
fn combine_labels(q: Option<&'static str>, base: Option<&'static str>) -> Option<&'static str> {
    match (q, base) {
        (Some("home"), Some("fax")) => Some("home fax"),
        (Some("work"), Some("fax")) => Some("work fax"),
        (Some("work"), Some("mobile")) => Some("work mobile"),
        (Some("work"), Some("pager")) => Some("work pager"),
        (Some(q), _) => Some(q),
        (None, base) => base,
    }
}

/// Drops a trailing column number (`Home Phone 2`, `Street 3`) when the rest is a family base.
fn without_number(base: &str) -> &str {
    match base.rsplit_once(' ') {
        Some((b, num)) if num.parse::<u32>().is_ok() && family_base(b).is_some() => b,
        _ => base,
    }
}

/// A family base with an optional qualifier: `Home Phone`, `Email (work)`, `Business City`.
fn qualified(n: &str) -> Option<Guess> {
    let (qual, base) = if family_base(without_number(n)).is_some() {
        ("", n)
    } else if let Some(inner) = n.strip_suffix(')')
        && let Some(i) = inner.rfind(" (")
    {
        (inner.get(i + 2..).unwrap_or(""), inner.get(..i).unwrap_or(""))
    } else {
        match n.split_once(' ') {
            Some((first, rest)) if qualifier(first).is_some() => (first, rest),
            _ => return None,
        }
    };
    let (field, base_label) = family_base(without_number(base))?;
    if qual.is_empty() {
        let key = if base_label.is_some() { Key::Solo } else { Key::Named("") };
        return Some(Guess { field, key, label: base_label });
    }
    // An unknown qualifier (`Email (school)`) still names the field, without a label.
    let (qkey, qlabel) = qualifier(qual).unwrap_or(("", None));
    let label = combine_labels(qlabel, base_label);
    let key = if family(field) == Some(Family::Address) { Key::Named(qkey) } else { Key::Solo };
    Some(Guess { field, key, label })
}

/// Outlook's phone columns that are not `<qualifier> Phone`.
fn outlook_phone(n: &str) -> Option<Guess> {
    let label = match n {
        "assistant's phone" => Some("assistant"),
        "car phone" => Some("car"),
        "callback" => Some("callback"),
        "isdn" => Some("isdn"),
        "radio phone" => Some("radio"),
        "telex" => Some("telex"),
        "tty/tdd phone" => Some("textphone"),
        "primary phone" | "company main phone" => None,
        _ => return None,
    };
    let label = if n == "company main phone" { Some("work") } else { label };
    Some(Guess { field: "phone", key: Key::Solo, label })
}

/// Google's numbered columns: `E-mail 1 - Value`, `Address 2 - City`, `Organization 1 - Title`.
/// `Some(None)` for a Google column that has no contact field (`IM 1 - Service`).
fn google(n: &str) -> Option<Option<Guess>> {
    let (left, sub) = n.split_once(" - ")?;
    let (kind, num) = left.rsplit_once(' ')?;
    let num: u32 = num.parse().ok()?;
    let field = match (kind, sub) {
        ("email", "value") => "email",
        ("email", "type" | "label") => "email_label",
        ("phone", "value") => "phone",
        ("phone", "type" | "label") => "phone_label",
        ("website", "value") => "url",
        ("website", "type" | "label") => "url_label",
        ("im", "value") => "impp",
        ("im", "type" | "label") => "impp_label",
        ("address", "street") => "address_street",
        ("address", "city") => "address_city",
        ("address", "region") => "address_region",
        ("address", "postal code") => "address_postal",
        ("address", "country") => "address_country",
        ("address", "type" | "label") => "address_label",
        ("organization", "name") => "organization",
        ("organization", "title") => "job_title",
        ("organization", "department") => "department",
        (
            "email" | "phone" | "website" | "im" | "address" | "organization" | "relation" | "event" | "custom field"
            | "external id",
            _,
        ) => return Some(None),
        _ => return None,
    };
    Some(Some(Guess { field, key: Key::Num(num), label: None }))
}

/// Our own export's numbered columns: `email 2`, `email 2 label`, `address 1 city`.
fn ours(n: &str) -> Option<Guess> {
    let words: Vec<&str> = n.split(' ').collect();
    let (field, num) = match words.as_slice() {
        [kind, num] => (family_value(kind)?, num),
        ["address", num, part] => (address_part(part)?, num),
        [kind, num, "label"] => (family_label(kind)?, num),
        _ => return None,
    };
    Some(Guess { field, key: Key::Num(num.parse().ok()?), label: None })
}

fn family_value(kind: &str) -> Option<&'static str> {
    ["email", "phone", "url", "impp"].into_iter().find(|k| *k == kind)
}

fn family_label(kind: &str) -> Option<&'static str> {
    Some(match kind {
        "email" => "email_label",
        "phone" => "phone_label",
        "url" => "url_label",
        "impp" => "impp_label",
        _ => return None,
    })
}

fn address_part(part: &str) -> Option<&'static str> {
    Some(match part {
        "street" => "address_street",
        "city" => "address_city",
        "region" => "address_region",
        "postal" => "address_postal",
        "country" => "address_country",
        "label" => "address_label",
        _ => return None,
    })
}

/// Single-valued columns by their usual names.
fn single(n: &str, title_is_prefix: bool) -> Option<Guess> {
    let field = match n {
        "first name" | "firstname" | "first" | "given name" | "given" | "forename" => "firstname",
        "last name" | "lastname" | "last" | "surname" | "family name" => "lastname",
        "middle name" | "middle" | "additional name" | "middle names" => "middle_name",
        "prefix" | "name prefix" | "salutation" | "honorific prefix" => "prefix",
        "suffix" | "name suffix" | "honorific suffix" => "suffix",
        "nickname" | "nick name" | "nick" => "nickname",
        "name" | "full name" | "fullname" | "display name" | "contact name" | "formatted name" => "full_name",
        "gender" | "sex" => "gender",
        "birthday" | "birth date" | "birthdate" | "date of birth" | "dob" | "bday" => "birthday",
        "anniversary" | "wedding anniversary" | "wedding date" => "anniversary",
        "company" | "organization" | "organisation" | "org" | "company name" | "organization name"
        | "organisation name" | "employer" => "organization",
        "department" | "dept" | "organization department" | "division" => "department",
        "job title" | "jobtitle" | "position" | "organization title" => "job_title",
        "title" => {
            if title_is_prefix {
                "prefix"
            } else {
                "job_title"
            }
        }
        "role" | "profession" | "occupation" => "role",
        "notes" | "note" | "comments" | "comment" => "notes",
        "tags" | "tag" | "labels" | "keywords" | "categories" | "category" | "group membership" => "tags",
        "groups" | "group" | "circles" | "circle" => "circles",
        "how we met" => "how_we_met",
        "work information" | "work info" => "work_information",
        "contact information" | "contact info" => "contact_information",
        _ => return None,
    };
    guess(field)
}

fn classify(header: &str, title_is_prefix: bool) -> Option<Guess> {
    let raw = header.trim().to_lowercase();
    if let Some(field) = known_field(&raw) {
        return guess(field);
    }
    let n = normalise_header(header);
    if let Some(g) = ours(&n) {
        return Some(g);
    }
    if let Some(g) = google(&n) {
        return g;
    }
    // Outlook's `E-mail Address`, `E-mail 2 Address`; its `E-mail Type` (SMTP) and
    // `E-mail Display Name` are not contact fields.
    if n == "email address" {
        return Some(Guess { field: "email", key: Key::Num(1), label: None });
    }
    if let Some(num) = n.strip_prefix("email ").and_then(|r| r.strip_suffix(" address")) {
        return num.parse().ok().map(|num| Guess { field: "email", key: Key::Num(num), label: None });
    }
    if n.starts_with("email") && (n.ends_with(" type") || n.ends_with(" display name")) {
        return None;
    }
    single(&n, title_is_prefix).or_else(|| outlook_phone(&n)).or_else(|| qualified(&n))
}

/// The label a header implies for the entries of its column when the row gives none: `work`
/// for Outlook's `Business Phone`, `mobile` for `Mobile Phone` or `Phone (mobile)`, `home` for
/// `Home Street`, `work fax` for `Business Fax`. Interpreted like a label cell.
pub fn implied_label(header: &str) -> Option<&'static str> {
    classify(header, false).and_then(|g| g.label)
}

/// One mapping per header, in order, `contact_field` `""` where the header is not recognised.
/// Dialects: Google (old and new), Outlook, Apple-style and generic headers, and our export.
pub fn suggest_mappings(headers: &[String]) -> Vec<ColumnMapping> {
    let title_is_prefix = headers.iter().any(|h| normalise_header(h) == "job title");
    let guesses: Vec<Option<Guess>> = headers.iter().map(|h| classify(h, title_is_prefix)).collect();
    let mut used: HashMap<Family, BTreeSet<u32>> = HashMap::new();
    for g in guesses.iter().flatten() {
        if let (Some(fam), Key::Num(n)) = (family(g.field), g.key) {
            used.entry(fam).or_default().insert(n);
        }
    }
    let mut fresh = |fam: Family| -> u32 {
        let taken = used.entry(fam).or_default();
        let n = (0..).find(|n| !taken.contains(n)).unwrap_or(u32::MAX);
        taken.insert(n);
        n
    };
    let mut named: HashMap<(Family, &'static str), u32> = HashMap::new();
    headers
        .iter()
        .zip(guesses)
        .map(|(header, g)| {
            let (contact_field, group) = match g {
                None => (String::new(), 0),
                Some(g) => {
                    let group = match (family(g.field), g.key) {
                        (None, _) => 0,
                        (Some(_), Key::Num(n)) => n,
                        (Some(fam), Key::Named(name)) => *named.entry((fam, name)).or_insert_with(|| fresh(fam)),
                        (Some(fam), Key::Solo) => fresh(fam),
                    };
                    (g.field.to_string(), group)
                }
            };
            ColumnMapping { csv_column: header.clone(), contact_field, group }
        })
        .collect()
}

// ---------------------------------------------------------------------------------------------
// Applying mappings
// ---------------------------------------------------------------------------------------------

/// One data row turned into a record. `record` is `None` when the row cannot make a contact
/// (no name at all, or the card fails [`Card::validate`]); `validation_errors` say why, and also
/// list values that were dropped (an unreadable date) while the row is kept. `diagnostics` are
/// notes on repairs (a name taken from the organization, a conflicting second value ignored).
/// `line` is the 1-based line the row starts on.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct CsvRow {
    pub record: Option<NeutralRecord>,
    pub validation_errors: Vec<String>,
    pub diagnostics: Vec<String>,
    pub line: usize,
}

/// One mapped column, resolved against the table.
struct Column {
    index: usize,
    field: &'static str,
    group: u32,
    header: String,
    implied: Option<&'static str>,
    day_first: bool,
}

fn resolve(table: &Table, mappings: &[ColumnMapping]) -> Vec<Column> {
    // The n-th mapping naming a header takes the n-th column of that name, so duplicated
    // header names map one to one.
    let mut seen: HashMap<String, usize> = HashMap::new();
    let mut columns = Vec::new();
    for m in mappings {
        let name = m.csv_column.trim();
        let nth = seen.entry(name.to_string()).or_default();
        let mut matches: Vec<usize> = (0..table.headers.len()).filter(|i| table.headers[*i] == name).collect();
        if matches.is_empty() {
            matches = (0..table.headers.len()).filter(|i| table.headers[*i].eq_ignore_ascii_case(name)).collect();
        }
        let index = matches.get(*nth).or(matches.first()).copied();
        *nth += 1;
        let (Some(index), Some(field)) = (index, known_field(m.contact_field.trim())) else { continue };
        let header = table.headers.get(index).cloned().unwrap_or_default();
        let day_first = matches!(field, "birthday" | "anniversary") && column_is_day_first(table, index);
        columns.push(Column { index, field, group: m.group, implied: implied_label(&header), header, day_first });
    }
    columns
}

/// Maps every row of `table` through `mappings`. Mappings naming an unknown field or column are
/// skipped (see [`check_mappings`] to refuse them instead).
pub fn apply_mappings(table: &Table, mappings: &[ColumnMapping]) -> Vec<CsvRow> {
    let columns = resolve(table, mappings);
    table
        .rows
        .iter()
        .enumerate()
        .map(|(i, row)| build_row(&columns, row, table.row_lines.get(i).copied().unwrap_or(0)))
        .collect()
}

/// A cell's value: line ends as `\n`, trimmed.
fn clean(cell: &str) -> String {
    cell.replace("\r\n", "\n").replace('\r', "\n").trim().to_string()
}

/// The `:::`-separated pieces of a multi-valued cell, trimmed, empty pieces kept in place; no
/// piece for an empty cell.
fn pieces(cell: &str) -> Vec<String> {
    if cell.is_empty() {
        return Vec::new();
    }
    cell.split(":::").map(|p| p.trim().to_string()).collect()
}

/// Circle and tag names: split on `,`, `;` and `:::`; Google's `* ` marker and `System Group: `
/// prefix dropped, and its `myContacts` group left out.
fn list_items(cell: &str) -> Vec<String> {
    cell.split(":::")
        .flat_map(|p| p.split([',', ';']))
        .map(|item| {
            let item = item.trim();
            let item = item.strip_prefix('*').map_or(item, str::trim_start);
            item.strip_prefix("System Group:").map_or(item, str::trim_start).to_string()
        })
        .filter(|item| !item.is_empty() && item.replace(' ', "").to_lowercase() != "mycontacts")
        .collect()
}

fn push_unique(list: &mut Vec<String>, items: impl IntoIterator<Item = String>) {
    for item in items {
        if !list.contains(&item) {
            list.push(item);
        }
    }
}

/// A label read into contexts, phone features, a kept free-text label, and the primary mark.
#[derive(Debug, Default, PartialEq)]
struct Label {
    contexts: Vec<String>,
    features: Vec<String>,
    label: Option<String>,
    pref: bool,
}

fn context_word(word: &str) -> Option<&'static str> {
    Some(match word {
        "home" | "personal" | "private" => "private",
        "work" | "business" | "office" => "work",
        "billing" => "billing",
        "delivery" | "shipping" => "delivery",
        _ => return None,
    })
}

fn feature_word(word: &str) -> Option<&'static str> {
    Some(match word {
        "mobile" | "cell" | "cellular" | "iphone" => "mobile",
        "fax" => "fax",
        "pager" => "pager",
        "voice" => "voice",
        "text" | "sms" => "text",
        "video" => "video",
        "textphone" | "tty" | "tdd" => "textphone",
        _ => return None,
    })
}

/// Reads a label: Google's leading `*` marks the primary entry; `home`/`work` (and synonyms)
/// become contexts `private`/`work`; for phones `mobile`/`cell`, `fax`, `pager`, ... become
/// features; `other` and `phone` say nothing. A label with any other word is also kept verbatim.
fn read_label(text: &str, fam: Family) -> Label {
    let mut out = Label::default();
    let text = text.trim();
    let text = match text.strip_prefix('*') {
        Some(rest) => {
            out.pref = true;
            rest.trim()
        }
        None => text,
    };
    let mut unknown = false;
    for word in text.split(|c: char| c.is_whitespace() || matches!(c, ',' | '/' | ';')).filter(|w| !w.is_empty()) {
        let word = word.to_lowercase();
        if let Some(c) = context_word(&word) {
            push_unique(&mut out.contexts, [c.to_string()]);
        } else if let Some(f) = feature_word(&word).filter(|_| fam == Family::Phone) {
            push_unique(&mut out.features, [f.to_string()]);
        } else if !matches!(word.as_str(), "other" | "phone" | "telephone" | "tel" | "number") {
            unknown = true;
        }
    }
    if unknown {
        out.label = Some(text.to_string());
    }
    out
}

/// Everything one row's cells say, gathered before the card is built.
#[derive(Default)]
struct Gathered {
    singles: BTreeMap<&'static str, String>,
    texts: BTreeMap<&'static str, Vec<String>>,
    nicknames: Vec<String>,
    notes: Vec<String>,
    circles: Vec<String>,
    tags: Vec<String>,
    groups: BTreeMap<(Family, u32), Group>,
}

/// The cells of one multi-valued group.
#[derive(Default)]
struct Group {
    /// Value pieces, each with the label its column's header implies.
    values: Vec<(String, Option<&'static str>)>,
    labels: Vec<String>,
    /// Address parts: per field, the pieces of each of its cells.
    parts: BTreeMap<&'static str, Vec<Vec<String>>>,
    implied: Option<&'static str>,
}

fn build_row(columns: &[Column], row: &[String], line: usize) -> CsvRow {
    let mut out = CsvRow { line, ..CsvRow::default() };
    let mut g = Gathered::default();
    let mut dates: Vec<(&'static str, Partial)> = Vec::new();
    for col in columns {
        let value = clean(row.get(col.index).map_or("", String::as_str));
        if value.is_empty() {
            continue;
        }
        match col.field {
            "birthday" | "anniversary" => match parse_date(&value, col.day_first) {
                Ok(Some(p)) => {
                    if dates.iter().any(|(f, _)| *f == col.field) {
                        out.diagnostics.push(format!("{}: ignored a second date \"{value}\"", col.field));
                    } else {
                        dates.push((col.field, p));
                    }
                }
                Ok(None) => {}
                Err(()) => out.validation_errors.push(format!(
                    "{}: cannot read \"{value}\" (column \"{}\"; use YYYY-MM-DD)",
                    col.field, col.header
                )),
            },
            "nickname" => push_unique(&mut g.nicknames, pieces(&value).into_iter().filter(|p| !p.is_empty())),
            "notes" => g.notes.push(value),
            "circles" => push_unique(&mut g.circles, list_items(&value)),
            "tags" => push_unique(&mut g.tags, list_items(&value)),
            "how_we_met" | "work_information" | "contact_information" => {
                g.texts.entry(col.field).or_default().push(value);
            }
            field => match family(field) {
                Some(fam) => {
                    let group = g.groups.entry((fam, col.group)).or_default();
                    let cell = pieces(&value);
                    match field {
                        "email" | "phone" | "url" | "impp" => {
                            group.values.extend(cell.into_iter().map(|p| (p, col.implied)));
                        }
                        f if f.ends_with("_label") => group.labels.extend(cell),
                        f => {
                            group.parts.entry(f).or_default().push(cell);
                            group.implied = group.implied.or(col.implied);
                        }
                    }
                }
                None => match g.singles.get(field) {
                    None => {
                        g.singles.insert(field, value);
                    }
                    Some(kept) if *kept != value => out
                        .diagnostics
                        .push(format!("{field}: kept \"{kept}\", ignored \"{value}\" (column \"{}\")", col.header)),
                    Some(_) => {}
                },
            },
        }
    }
    let mut record = assemble(g, dates);
    if !name_the_card(&mut record.card, &mut out.diagnostics) {
        out.validation_errors.push("a name is required (firstname, full name, organization or email)".into());
        return out;
    }
    match record.card.validate() {
        Ok(()) => out.record = Some(record),
        Err(e) => out.validation_errors.push(format!("{}: {}", e.field, e.reason)),
    }
    out
}

/// When nothing gives the card a first name or a full name, the organization's name or the
/// first email's local part becomes `name.full`. False when there is none of them either.
fn name_the_card(card: &mut Card, diagnostics: &mut Vec<String>) -> bool {
    if card.given().is_some_and(|g| !g.trim().is_empty()) {
        return true;
    }
    let from_org = card.organizations.iter().find_map(|o| o.name.clone()).map(|n| (n, "the organization"));
    let from_email = || {
        card.emails.first().and_then(|e| {
            let local = e.address.split('@').next().unwrap_or("").trim();
            (!local.is_empty()).then(|| (local.to_string(), "the email address"))
        })
    };
    let Some((full, source)) = from_org.or_else(from_email) else { return false };
    diagnostics.push(format!("no name: used {source} (\"{full}\") as the name"));
    card.name.get_or_insert_with(Name::default).full = Some(full);
    true
}

fn pick<T: Clone>(list: &[T], i: usize, broadcast: bool) -> Option<T> {
    if broadcast && list.len() == 1 { list.first().cloned() } else { list.get(i).cloned() }
}

fn labelled_extra(label: &Label) -> Map<String, Value> {
    let mut m = Map::new();
    if !label.contexts.is_empty() {
        m.insert("contexts".into(), json!(label.contexts));
    }
    if let Some(l) = &label.label {
        m.insert("label".into(), json!(l));
    }
    m
}

fn assemble(mut g: Gathered, dates: Vec<(&'static str, Partial)>) -> NeutralRecord {
    let mut card = Card::default();
    let mut singles = std::mem::take(&mut g.singles);
    let mut single = |f: &str| singles.remove(f).unwrap_or_default();

    let mut components = Vec::new();
    for (field, kind) in [
        ("prefix", "title"),
        ("firstname", "given"),
        ("middle_name", "given2"),
        ("lastname", "surname"),
        ("suffix", "credential"),
    ] {
        let value = single(field);
        if !value.is_empty() {
            components.push(Component { kind: kind.into(), value, ..Component::default() });
        }
    }
    let full = single("full_name");
    let full =
        if full.is_empty() { components.iter().map(|c| c.value.as_str()).collect::<Vec<_>>().join(" ") } else { full };
    if !full.is_empty() {
        card.name = Some(Name { components, full: Some(full), ..Name::default() });
    }
    card.nicknames = g.nicknames.into_iter().map(|name| Nickname { name, ..Nickname::default() }).collect();

    let (org, dept) = (single("organization"), single("department"));
    if !org.is_empty() || !dept.is_empty() {
        card.organizations = vec![Organization {
            name: (!org.is_empty()).then_some(org),
            units: if dept.is_empty() { Vec::new() } else { vec![Unit { name: dept, ..Unit::default() }] },
            ..Organization::default()
        }];
    }
    for (field, kind) in [("job_title", "title"), ("role", "role")] {
        let name = single(field);
        if !name.is_empty() {
            card.titles.push(Title { name, kind: Some(kind.into()), ..Title::default() });
        }
    }
    let gender = gender(&single("gender"));

    for (field, kind) in [("birthday", "birth"), ("anniversary", "wedding")] {
        if let Some((_, p)) = dates.iter().find(|(f, _)| *f == field) {
            card.anniversaries.push(Anniversary {
                kind: kind.into(),
                date: AnniversaryDate { partial: Some(*p), ..AnniversaryDate::default() },
                ..Anniversary::default()
            });
        }
    }

    let (mut links, mut impps) = (Vec::new(), Vec::new());
    for ((fam, _), group) in std::mem::take(&mut g.groups) {
        if fam == Family::Address {
            card.addresses.extend(addresses(group));
            continue;
        }
        let broadcast = group.labels.len() == 1;
        for (i, (value, implied)) in group.values.iter().enumerate() {
            if value.is_empty() {
                continue;
            }
            let text = pick(&group.labels, i, broadcast).filter(|l| !l.trim().is_empty());
            let mut label = read_label(text.as_deref().or(*implied).unwrap_or(""), fam);
            label.pref &= !(broadcast && i > 0);
            let pref = label.pref.then_some(1);
            match fam {
                Family::Email => {
                    let address = value.strip_prefix("mailto:").unwrap_or(value).to_string();
                    if card.emails.iter().any(|e| e.address.eq_ignore_ascii_case(&address)) {
                        continue;
                    }
                    let mut extra = crate::card::Extra::new();
                    if let Some(l) = label.label {
                        extra.insert("label".into(), json!(l));
                    }
                    card.emails.push(Email { address, contexts: label.contexts, pref, extra });
                }
                Family::Phone => {
                    let digits = normalize_phone(value);
                    if !digits.is_empty() && card.phones.iter().any(|p| normalize_phone(&p.number) == digits) {
                        continue;
                    }
                    let mut extra = crate::card::Extra::new();
                    if !label.features.is_empty() {
                        extra.insert("features".into(), json!(label.features));
                    }
                    if let Some(l) = label.label {
                        extra.insert("label".into(), json!(l));
                    }
                    card.phones.push(Phone { number: value.clone(), contexts: label.contexts, pref, extra });
                }
                Family::Url | Family::Impp => {
                    let mut entry = Map::new();
                    entry.insert("uri".into(), json!(value));
                    entry.extend(labelled_extra(&label));
                    if let Some(p) = pref {
                        entry.insert("pref".into(), json!(p));
                    }
                    if fam == Family::Url { links.push(Value::Object(entry)) } else { impps.push(Value::Object(entry)) }
                }
                Family::Address => {}
            }
        }
    }
    if !links.is_empty() {
        card.extra.insert("links".into(), Value::Array(links));
    }
    if !impps.is_empty() {
        card.extra.insert("imppAddresses".into(), Value::Array(impps));
    }
    if !g.notes.is_empty() {
        card.extra
            .insert("notes".into(), Value::Array(g.notes.into_iter().map(|note| json!({ "note": note })).collect()));
    }
    card.keywords = g.tags;

    let mut crm = Map::new();
    if !g.circles.is_empty() {
        crm.insert("circles".into(), json!(g.circles));
    }
    for (field, texts) in g.texts {
        crm.insert(field.into(), json!(texts.join("\n")));
    }
    NeutralRecord { card, crm, passthrough: Map::new(), gender }
}

/// The web client's gender words for the common spellings; Outlook's `Unspecified` is no value.
fn gender(value: &str) -> String {
    match value.to_lowercase().as_str() {
        "male" | "m" => "male".into(),
        "female" | "f" => "female".into(),
        "other" => "other".into(),
        "unspecified" | "unknown" => String::new(),
        _ => value.to_string(),
    }
}

fn addresses(group: Group) -> Vec<Address> {
    let count = group.parts.values().flat_map(|cells| cells.iter().map(Vec::len)).max().unwrap_or(0);
    let broadcast = group.labels.len() == 1;
    let mut out = Vec::new();
    for i in 0..count {
        let mut components = Vec::new();
        for (field, kind) in [
            ("address_street", "name"),
            ("address_city", "locality"),
            ("address_region", "region"),
            ("address_postal", "postcode"),
            ("address_country", "country"),
        ] {
            let cells = group.parts.get(field).map_or(&[][..], Vec::as_slice);
            let values: Vec<&str> =
                cells.iter().filter_map(|c| c.get(i)).map(String::as_str).filter(|v| !v.is_empty()).collect();
            // Several street cells (Outlook's Street 2, Street 3) are lines of one street.
            let value = if field == "address_street" {
                values.join("\n")
            } else {
                values.first().map(|v| v.to_string()).unwrap_or_default()
            };
            if !value.is_empty() {
                components.push(Component { kind: kind.into(), value, ..Component::default() });
            }
        }
        if components.is_empty() {
            continue;
        }
        let text = pick(&group.labels, i, broadcast).filter(|l| !l.trim().is_empty());
        let mut label = read_label(text.as_deref().or(group.implied).unwrap_or(""), Family::Address);
        label.pref &= !(broadcast && i > 0);
        let mut extra = crate::card::Extra::new();
        if let Some(l) = label.label {
            extra.insert("label".into(), json!(l));
        }
        out.push(Address {
            components,
            contexts: label.contexts,
            pref: label.pref.then_some(1),
            extra,
            ..Address::default()
        });
    }
    out
}

// ---------------------------------------------------------------------------------------------
// Dates
// ---------------------------------------------------------------------------------------------

fn days_in_month(year: Option<i32>, month: u8) -> u8 {
    match month {
        1 | 3 | 5 | 7 | 8 | 10 | 12 => 31,
        4 | 6 | 9 | 11 => 30,
        2 => match year {
            Some(y) if !(y % 4 == 0 && (y % 100 != 0 || y % 400 == 0)) => 28,
            _ => 29,
        },
        _ => 0,
    }
}

fn number(s: &str, widths: std::ops::RangeInclusive<usize>) -> Option<u32> {
    (widths.contains(&s.len()) && s.bytes().all(|b| b.is_ascii_digit())).then(|| s.parse().ok()).flatten()
}

fn partial(year: Option<u32>, month: Option<u32>, day: Option<u32>) -> Option<Partial> {
    let year = match year {
        Some(y) if !(1..=9999).contains(&y) => return None,
        y => y.and_then(|y| i32::try_from(y).ok()),
    };
    let month = match month {
        Some(m) if !(1..=12).contains(&m) => return None,
        m => m.and_then(|m| u8::try_from(m).ok()),
    };
    let day = match (day, month) {
        (Some(d), Some(m)) if d == 0 || d > u32::from(days_in_month(year, m)) => return None,
        (Some(_), None) => return None,
        (d, _) => d.and_then(|d| u8::try_from(d).ok()),
    };
    Some(Partial { year, month, day })
}

/// Reads a date cell: `YYYY-MM-DD`, `YYYY/MM/DD`, `YYYYMMDD`, `YYYY-MM`, `YYYY`, `--MM-DD`
/// (Google, vCard), `MM/DD/YYYY` (Outlook; `DD/MM/YYYY` when `day_first`), `DD.MM.YYYY`; a time
/// after the date is ignored. `Ok(None)` for no date (Outlook's `0/0/00`); `Err` when unreadable
/// or impossible (month 13, 31 April).
fn parse_date(value: &str, day_first: bool) -> Result<Option<Partial>, ()> {
    let value = value.trim();
    let date = value.split([' ', 'T']).next().unwrap_or("");
    if date.is_empty() {
        return Ok(None);
    }
    if date.bytes().any(|b| b.is_ascii_digit()) && date.bytes().all(|b| matches!(b, b'0' | b'/' | b'-' | b'.')) {
        return Ok(None);
    }
    let y = |s: &str| number(s, 4..=4);
    let md = |s: &str| number(s, 1..=2);
    let parsed = if let Some(rest) = date.strip_prefix("--") {
        match rest.split_once('-') {
            Some((m, d)) => partial(None, Some(md(m).ok_or(())?), Some(md(d).ok_or(())?)),
            None => {
                partial(None, Some(rest.get(..2).and_then(md).ok_or(())?), Some(rest.get(2..).and_then(md).ok_or(())?))
            }
        }
    } else if date.len() == 8 && date.bytes().all(|b| b.is_ascii_digit()) {
        partial(date.get(..4).and_then(y), date.get(4..6).and_then(md), date.get(6..).and_then(md))
    } else {
        let sep = date.bytes().find(|b| matches!(b, b'-' | b'/' | b'.'));
        let parts: Vec<&str> = match sep {
            Some(s) => date.split(char::from(s)).collect(),
            None => vec![date],
        };
        match (sep, parts.as_slice()) {
            (None, [year]) => partial(Some(y(year).ok_or(())?), None, None),
            (Some(b'-' | b'/' | b'.'), [year, m, d]) if year.len() == 4 => {
                partial(Some(y(year).ok_or(())?), Some(md(m).ok_or(())?), Some(md(d).ok_or(())?))
            }
            (Some(b'-'), [year, m]) if year.len() == 4 => {
                partial(Some(y(year).ok_or(())?), Some(md(m).ok_or(())?), None)
            }
            (Some(b'/'), [a, b, year]) => {
                let (a, b) = (md(a).ok_or(())?, md(b).ok_or(())?);
                let (m, d) = if day_first { (b, a) } else { (a, b) };
                partial(Some(y(year).ok_or(())?), Some(m), Some(d))
            }
            (Some(b'.'), [d, m, year]) => {
                partial(Some(y(year).ok_or(())?), Some(md(m).ok_or(())?), Some(md(d).ok_or(())?))
            }
            _ => None,
        }
    };
    parsed.map(Some).ok_or(())
}

/// Whether a date column writes `DD/MM/YYYY`: some cell has a first number above 12 and none a
/// second number above 12. Otherwise slash dates are read the US way, `MM/DD/YYYY`.
fn column_is_day_first(table: &Table, index: usize) -> bool {
    let (mut day_first, mut month_first) = (false, false);
    for row in &table.rows {
        let Some(cell) = row.get(index) else { continue };
        let parts: Vec<&str> = cell.trim().split([' ', 'T']).next().unwrap_or("").split('/').collect();
        if let [a, b, _] = parts.as_slice()
            && let (Some(a), Some(b)) = (number(a, 1..=2), number(b, 1..=2))
        {
            day_first |= a > 12 && b <= 12;
            month_first |= b > 12 && a <= 12;
        }
    }
    day_first && !month_first
}

/// The export form of a partial date: `YYYY-MM-DD`, `--MM-DD`, `YYYY-MM` or `YYYY`.
fn date_text(p: &Partial) -> String {
    match (p.year, p.month, p.day) {
        (Some(y), Some(m), Some(d)) => format!("{y:04}-{m:02}-{d:02}"),
        (None, Some(m), Some(d)) => format!("--{m:02}-{d:02}"),
        (Some(y), Some(m), None) => format!("{y:04}-{m:02}"),
        (Some(y), None, _) => format!("{y:04}"),
        _ => String::new(),
    }
}

// ---------------------------------------------------------------------------------------------
// Export
// ---------------------------------------------------------------------------------------------

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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dates_in_every_shape() {
        let p = |y, m, d| Ok(Some(Partial { year: y, month: m, day: d }));
        assert_eq!(parse_date("1990-06-15", false), p(Some(1990), Some(6), Some(15)));
        assert_eq!(parse_date("--06-15", false), p(None, Some(6), Some(15)));
        assert_eq!(parse_date("--0615", false), p(None, Some(6), Some(15)));
        assert_eq!(parse_date("6/15/1990", false), p(Some(1990), Some(6), Some(15)));
        assert_eq!(parse_date("15/6/1990", true), p(Some(1990), Some(6), Some(15)));
        assert_eq!(parse_date("15.06.1990", false), p(Some(1990), Some(6), Some(15)));
        assert_eq!(parse_date("1990/06/15", false), p(Some(1990), Some(6), Some(15)));
        assert_eq!(parse_date("19900615", false), p(Some(1990), Some(6), Some(15)));
        assert_eq!(parse_date("1990-06", false), p(Some(1990), Some(6), None));
        assert_eq!(parse_date("1990", false), p(Some(1990), None, None));
        assert_eq!(parse_date("2/29/2000 12:00:00 AM", false), p(Some(2000), Some(2), Some(29)));
        assert_eq!(parse_date("1990-06-15T00:00:00Z", false), p(Some(1990), Some(6), Some(15)));
        assert_eq!(parse_date("--02-29", false), p(None, Some(2), Some(29)));
        for empty in ["0/0/00", "0/0/0000", "00.00.0000", "0", ""] {
            assert_eq!(parse_date(empty, false), Ok(None), "{empty}");
        }
        for bad in [
            "31/31/2020",
            "2/29/2001",
            "4/31/1990",
            "1990-13-01",
            "June 15",
            "15/6/1990",
            "6/15/90",
            "--13-01",
            "ß/é/ü",
            "--aé1",
        ] {
            assert_eq!(parse_date(bad, false), Err(()), "{bad}");
        }
    }

    #[test]
    fn labels_become_contexts_features_or_kept_text() {
        let l = read_label("* Work Fax", Family::Phone);
        assert_eq!(
            (l.contexts, l.features, l.label, l.pref),
            (vec!["work".to_string()], vec!["fax".to_string()], None, true)
        );
        let l = read_label("Mobile", Family::Email);
        assert_eq!(l.label.as_deref(), Some("Mobile"));
        let l = read_label("Google Voice", Family::Phone);
        assert_eq!((l.features, l.label.as_deref()), (vec!["voice".to_string()], Some("Google Voice")));
        assert_eq!(read_label("Other", Family::Email), Label::default());
    }

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
