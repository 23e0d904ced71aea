//! What an `update` decision does to the matched contact ([`merge`]), and what the preview shows
//! of it ([`diff`]).

use mycorrhizal_codecs::card::{Component, Name};
use mycorrhizal_codecs::projection::{Flat, project};
use mycorrhizal_codecs::record::NeutralRecord;
use serde::Serialize;
use serde_json::{Map, Value};

use crate::crm::contact::Contact;

#[derive(Debug, Clone, Serialize)]
pub struct FieldChange {
    pub field: &'static str,
    pub label: &'static str,
    pub old: String,
    pub new: String,
}

#[derive(Debug, Clone, Serialize)]
pub struct Added {
    pub kind: &'static str,
    pub value: String,
}

/// What an `update` of the matched contact would change.
#[derive(Debug, Clone, Default, Serialize)]
pub struct MergeDiff {
    pub updated: Vec<FieldChange>,
    pub added: Vec<Added>,
}

impl MergeDiff {
    pub fn is_empty(&self) -> bool {
        self.updated.is_empty() && self.added.is_empty()
    }
}

/// Appends the items of `incoming` that `existing` lacks, judged by `key`.
fn union<T: Clone>(existing: &mut Vec<T>, incoming: &[T], key: impl Fn(&T) -> String) {
    for item in incoming {
        let k = key(item);
        if !k.is_empty() && !existing.iter().any(|e| key(e) == k) {
            existing.push(item.clone());
        }
    }
}

/// Adds to `existing` what `incoming` holds and it lacks: members under new keys and list items
/// not already there, at any depth; a value `existing` already has stays. Carried vCard
/// properties and converted-property parameters (`passthrough`) merge this way, so an update
/// keeps the incoming card's unknown properties for the next export.
fn add_absent(existing: &mut Value, incoming: &Value) {
    match (existing, incoming) {
        (Value::Object(old), Value::Object(new)) => {
            for (key, value) in new {
                match old.get_mut(key) {
                    Some(o) => add_absent(o, value),
                    None => {
                        old.insert(key.clone(), value.clone());
                    }
                }
            }
        }
        (Value::Array(old), Value::Array(new)) => {
            for item in new {
                if !old.contains(item) {
                    old.push(item.clone());
                }
            }
        }
        _ => {}
    }
}

/// A name after an update: each kind of part the incoming name has (given, surname, ...) replaces
/// the stored parts of that kind where they stood; stored kinds it lacks stay, so a row with only
/// a first name does not wipe the last name. An incoming full name replaces the stored one; when
/// parts changed and none came, the stored full name is dropped, to be derived from the parts
/// again rather than left describing the old ones.
fn merge_name(mut stored: Name, incoming: &Name) -> Name {
    let parts: Vec<&Component> = incoming.components.iter().filter(|c| !c.value.trim().is_empty()).collect();
    let of_kind = |kind: &str| parts.iter().filter(|p| p.kind == kind).map(|p| (*p).clone()).collect::<Vec<_>>();
    let mut changed = false;
    let mut placed: Vec<&str> = Vec::new();
    let mut merged = Vec::with_capacity(stored.components.len() + parts.len());
    for old in std::mem::take(&mut stored.components) {
        match parts.iter().find(|p| p.kind == old.kind) {
            None => merged.push(old),
            // A second stored part of a kind already replaced.
            Some(p) if placed.contains(&p.kind.as_str()) => changed = true,
            Some(p) => {
                placed.push(p.kind.as_str());
                let replacements = of_kind(&p.kind);
                changed |= replacements.as_slice() != std::slice::from_ref(&old);
                merged.extend(replacements);
            }
        }
    }
    for p in &parts {
        if !placed.contains(&p.kind.as_str()) {
            placed.push(p.kind.as_str());
            changed = true;
            merged.extend(of_kind(&p.kind));
        }
    }
    stored.components = merged;
    match incoming.full.as_deref().map(str::trim).filter(|f| !f.is_empty()) {
        Some(full) => stored.full = Some(full.to_string()),
        None if changed => stored.full = None,
        None => {}
    }
    stored
}

/// The contact after merging an incoming record into it: the incoming name parts (see
/// [`merge_name`]), organization, titles, nicknames and dates replace the stored ones when
/// present; emails, phones, addresses, tags, circles and other list members are added when new;
/// nothing present is removed.
pub fn merge(existing: &Contact, incoming: &NeutralRecord) -> Contact {
    let mut card = existing.parsed_card();
    let new = &incoming.card;
    if let Some(incoming) = new.name.as_ref() {
        card.name = Some(merge_name(card.name.take().unwrap_or_default(), incoming));
    }
    if !new.nicknames.is_empty() {
        card.nicknames = new.nicknames.clone();
    }
    if !new.organizations.is_empty() {
        card.organizations = new.organizations.clone();
    }
    if !new.titles.is_empty() {
        card.titles = new.titles.clone();
    }
    union(&mut card.emails, &new.emails, |e| e.address.trim().to_lowercase());
    union(&mut card.phones, &new.phones, |p| mycorrhizal_codecs::projection::normalize_phone(&p.number));
    union(&mut card.addresses, &new.addresses, mycorrhizal_codecs::projection::one_line);
    for a in &new.anniversaries {
        card.anniversaries.retain(|old| old.kind != a.kind);
        card.anniversaries.push(a.clone());
    }
    union(&mut card.keywords, &new.keywords, |k| k.trim().to_lowercase());
    union(&mut card.related_to, &new.related_to, |r| r.target.clone());
    if card.kind.is_none() {
        card.kind = new.kind.clone();
    }
    for (key, value) in &new.extra {
        match (card.extra.get_mut(key), value) {
            (None, _) => {
                card.extra.insert(key.clone(), value.clone());
            }
            (Some(Value::Array(old)), Value::Array(items)) => {
                for item in items {
                    let mut bare = item.clone();
                    if let Value::Object(m) = &mut bare {
                        m.remove("id");
                    }
                    let present = old.iter().any(|o| {
                        let mut o = o.clone();
                        if let Value::Object(m) = &mut o {
                            m.remove("id");
                        }
                        o == bare
                    });
                    if !present {
                        old.push(item.clone());
                    }
                }
            }
            (Some(_), _) => {}
        }
    }
    let mut crm: Map<String, Value> = serde_json::from_str(&existing.crm).unwrap_or_default();
    for (key, value) in &incoming.crm {
        match (crm.get_mut(key), value) {
            (Some(Value::Array(old)), Value::Array(items)) => {
                for item in items {
                    if !old.contains(item) {
                        old.push(item.clone());
                    }
                }
            }
            (_, Value::String(s)) if s.trim().is_empty() => {}
            // Custom field values: each incoming one over the stored one, the others kept.
            (Some(Value::Object(old)), Value::Object(items)) => {
                old.extend(items.iter().map(|(k, v)| (k.clone(), v.clone())));
            }
            _ => {
                crm.insert(key.clone(), value.clone());
            }
        }
    }
    let mut passthrough: Map<String, Value> = serde_json::from_str(&existing.passthrough).unwrap_or_default();
    for (key, value) in &incoming.passthrough {
        match passthrough.get_mut(key) {
            Some(old) => add_absent(old, value),
            None => {
                passthrough.insert(key.clone(), value.clone());
            }
        }
    }
    let mut merged = existing.clone();
    card.uid = Some(existing.uid.clone());
    merged.card = serde_json::to_string(&card).unwrap_or_else(|_| existing.card.clone());
    merged.crm = Value::Object(crm).to_string();
    merged.passthrough = Value::Object(passthrough).to_string();
    if !incoming.gender.trim().is_empty() {
        merged.gender = incoming.gender.clone();
    }
    merged.flat = project(&card);
    merged
}

const LABELS: &[(&str, &str)] = &[
    ("firstname", "First name"),
    ("lastname", "Last name"),
    ("middle_name", "Middle name"),
    ("prefix", "Prefix"),
    ("suffix", "Suffix"),
    ("nickname", "Nickname"),
    ("organization", "Organization"),
    ("department", "Department"),
    ("job_title", "Job title"),
    ("role", "Role"),
    ("birthday", "Birthday"),
    ("anniversary", "Anniversary"),
    ("gender", "Gender"),
];

fn scalar<'a>(c: &'a Contact, field: &str) -> &'a str {
    let f = &c.flat;
    match field {
        "firstname" => &f.firstname,
        "lastname" => &f.lastname,
        "middle_name" => &f.middle_name,
        "prefix" => &f.prefix,
        "suffix" => &f.suffix,
        "nickname" => &f.nickname,
        "organization" => &f.org,
        "department" => &f.department,
        "job_title" => &f.job_title,
        "role" => &f.role,
        "birthday" => &f.birthday,
        "anniversary" => &f.anniversary,
        "gender" => &c.gender,
        _ => "",
    }
}

/// What merging changed, field by field, as the preview shows it.
pub fn diff(before: &Contact, after: &Contact) -> MergeDiff {
    let mut out = MergeDiff::default();
    for (field, label) in LABELS {
        let (old, new) = (scalar(before, field), scalar(after, field));
        if old != new {
            out.updated.push(FieldChange { field, label, old: old.to_string(), new: new.to_string() });
        }
    }
    let (b, a) = (&before.flat, &after.flat);
    for e in a.emails.iter().filter(|e| !b.emails.contains(e)) {
        out.added.push(Added { kind: "email", value: e.clone() });
    }
    for p in a.phones.iter().filter(|p| !b.phones.iter().any(|q| q.value == p.value)) {
        out.added.push(Added { kind: "phone", value: p.value.clone() });
    }
    let lines = |f: &Flat| f.addresses_flat.split('\n').map(str::to_string).collect::<Vec<_>>();
    let before_lines = lines(b);
    for line in lines(a).into_iter().filter(|l| !l.is_empty() && !before_lines.contains(l)) {
        out.added.push(Added { kind: "address", value: line });
    }
    let tags_before: Vec<String> = before.parsed_card().keywords;
    for t in after.parsed_card().keywords.into_iter().filter(|t| !tags_before.contains(t)) {
        out.added.push(Added { kind: "tag", value: t });
    }
    let circles = |c: &Contact| -> Vec<String> {
        serde_json::from_str::<Value>(&c.crm)
            .ok()
            .and_then(|v| v["circles"].as_array().cloned())
            .unwrap_or_default()
            .into_iter()
            .filter_map(|v| v.as_str().map(str::to_string))
            .collect()
    };
    let circles_before = circles(before);
    for c in circles(after).into_iter().filter(|c| !circles_before.contains(c)) {
        out.added.push(Added { kind: "circle", value: c });
    }
    out
}

#[cfg(test)]
mod tests {
    use mycorrhizal_codecs::record::Item;
    use serde_json::json;

    use super::*;

    fn record(vcf: &str) -> NeutralRecord {
        match mycorrhizal_codecs::vcard::parse_file(vcf.as_bytes()).into_iter().next() {
            Some(Item::Record { record, .. }) => *record,
            other => panic!("not a card: {other:?}"),
        }
    }

    /// An update keeps the stored card's unknown properties and adds the incoming card's, each
    /// once, so the next export gives both back.
    #[test]
    fn an_update_adds_the_incoming_cards_unknown_properties() {
        let stored = record("BEGIN:VCARD\r\nVERSION:4.0\r\nFN:Ada\r\nX-MASTODON:@ada@example.org\r\nEND:VCARD\r\n");
        let incoming = record(
            "BEGIN:VCARD\r\nVERSION:4.0\r\nFN:Ada\r\nX-MASTODON:@ada@example.org\r\nX-SHOE-SIZE:38\r\nEND:VCARD\r\n",
        );
        let (existing, _) = super::super::new_contact(stored, false).expect("contact");
        let merged = merge(&existing, &incoming);
        let passthrough: Value = serde_json::from_str(&merged.passthrough).expect("json");
        let names: Vec<&str> = passthrough["vCardProps"]
            .as_array()
            .expect("carried properties")
            .iter()
            .filter_map(|p| p["name"].as_str())
            .collect();
        assert_eq!(names.iter().filter(|n| n.eq_ignore_ascii_case("x-mastodon")).count(), 1, "{names:?}");
        assert_eq!(names.iter().filter(|n| n.eq_ignore_ascii_case("x-shoe-size")).count(), 1, "{names:?}");
        // The stored card's original UID, kept for export, is not replaced by the incoming one's.
        assert_eq!(
            passthrough["jsContactProps"],
            serde_json::from_str::<Value>(&existing.passthrough).expect("json")["jsContactProps"]
        );
    }

    #[test]
    fn absent_members_and_items_are_added_and_present_values_stay() {
        let mut old = json!({ "a": 1, "list": [1, 2], "deep": { "x": "kept" } });
        add_absent(&mut old, &json!({ "a": 2, "b": 3, "list": [2, 3], "deep": { "x": "new", "y": "added" } }));
        assert_eq!(old, json!({ "a": 1, "b": 3, "list": [1, 2, 3], "deep": { "x": "kept", "y": "added" } }));
    }
}
