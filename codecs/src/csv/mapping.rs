//! Column mappings: the allowed fields, and the suggested mapping of a header row (the dialects
//! of Google, Outlook, Apple-style and generic exports, and our own export).

use std::collections::{BTreeSet, HashMap};

use serde::{Deserialize, Serialize};

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

/// A mapping's `contact_field` naming a custom field: `field:<key>`.
pub const CUSTOM_FIELD_PREFIX: &str = "field:";
/// Where a row's custom field values go in the record's `crm`: `{key: text}`.
pub const CUSTOM_FIELDS_MEMBER: &str = "fields";

/// The key of a `field:<key>` mapping target.
pub fn custom_key(contact_field: &str) -> Option<&str> {
    contact_field.trim().strip_prefix(CUSTOM_FIELD_PREFIX).map(str::trim).filter(|k| !k.is_empty())
}

pub(super) fn known_field(name: &str) -> Option<&'static str> {
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
        if !field.is_empty() && known_field(field).is_none() && custom_key(field).is_none() {
            return Err((
                format!("mappings[{i}].contact_field"),
                format!(
                    "\"{field}\" is not a contact field (allowed: \"\", field:<custom field key>, {})",
                    FIELDS.join(", ")
                ),
            ));
        }
    }
    Ok(())
}

/// The multi-valued field families: their parts are tied together by `group`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub(super) enum Family {
    Email,
    Phone,
    Url,
    Impp,
    Address,
}

pub(super) fn family(field: &str) -> Option<Family> {
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
