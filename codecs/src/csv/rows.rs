//! Applying mappings: one neutral record per table row, with per-row validation errors and
//! diagnostics.

use std::collections::{BTreeMap, HashMap};

use serde_json::{Map, Value, json};

use crate::card::{
    Address, Anniversary, AnniversaryDate, Card, Component, Email, Name, Nickname, Organization, Phone, Title, Unit,
};
use crate::dates::Partial;
use crate::projection::normalize_phone;
use crate::record::NeutralRecord;

use super::*;

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
    /// The custom field key of a `field:<key>` mapping (`field` is then `"field:"`).
    custom: Option<String>,
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
        let custom = custom_key(&m.contact_field).map(str::to_string);
        let field = if custom.is_some() { Some(CUSTOM_FIELD_PREFIX) } else { known_field(m.contact_field.trim()) };
        let (Some(index), Some(field)) = (index, field) else { continue };
        let header = table.headers.get(index).cloned().unwrap_or_default();
        let day_first = matches!(field, "birthday" | "anniversary") && column_is_day_first(table, index);
        columns.push(Column {
            index,
            field,
            group: m.group,
            implied: implied_label(&header),
            header,
            day_first,
            custom,
        });
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
pub(super) struct Label {
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
pub(super) fn read_label(text: &str, fam: Family) -> Label {
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
    /// Custom field values by key, as text (the server checks them against the definitions).
    custom: Map<String, Value>,
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
            CUSTOM_FIELD_PREFIX => {
                if let Some(key) = &col.custom {
                    g.custom.entry(key.clone()).or_insert(Value::String(value));
                }
            }
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
    match crate::importable::importable(&mut record) {
        Ok(notes) => {
            out.diagnostics.extend(notes);
            out.record = Some(record);
        }
        Err(e) => out.validation_errors.push(format!("{}: {}", e.field, e.reason)),
    }
    out
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
    if !g.custom.is_empty() {
        crm.insert(CUSTOM_FIELDS_MEMBER.into(), Value::Object(std::mem::take(&mut g.custom)));
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

#[cfg(test)]
mod tests {
    use super::*;

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
}
