//! What every importer (vCard, JSContact, a batch of records) does to a parsed record before it
//! becomes a row, so that every card that holds anything arrives:
//!
//! - a value the server cannot store is left out alone and reported as a row diagnostic, never
//!   the whole card: a date with no calendar reading (`BDAY:19723101`, month 31) is carried as
//!   text in `passthrough.vCardProps` so a vCard export gives it back as it came; a year past
//!   9999 (no vCard form) and a text longer than [`MAX_TEXT`] are left out;
//! - a card without a name is named after what it has, in this order: the parts of its
//!   structured name (a surname alone), its organization, nickname, email address, phone number,
//!   address, and else [`UNNAMED`];
//! - a card is refused only when it holds nothing about a person: no name and nothing else but
//!   bookkeeping (`uid`, `kind`, `prodid`, `created`, `updated`, `language`) or carried
//!   properties.

use serde_json::{Map, Value, json};

use crate::card::{Card, CardError, MAX_TEXT, Name};
use crate::dates::Partial;
use crate::record::NeutralRecord;
use crate::record::{PASSTHROUGH_JSCONTACT_PROPS, PASSTHROUGH_VCARD_PROPS};

/// The name of a card that has nothing to be named after (a photo, a birthday, a note only).
pub const UNNAMED: &str = "Unnamed contact";

/// Card members that say nothing about the person.
const BOOKKEEPING: &[&str] = &["uid", "kind", "prodid", "created", "updated", "language", "version", "@type"];

/// Makes `record` storable (see the module's rules) and returns what was done, one line per
/// change, or why the card cannot make a contact.
pub fn importable(record: &mut NeutralRecord) -> Result<Vec<String>, CardError> {
    let mut notes = Vec::new();
    drop_unstorable_dates(record, &mut notes);
    drop_oversized_texts(&mut record.card, &mut notes);
    if is_empty(&record.card) {
        return Err(CardError {
            field: "card.name".into(),
            reason: "the card is empty: no name and nothing to name it after (organization, nickname, email, \
                     phone, address or any other detail)"
                .into(),
        });
    }
    notes.extend(name_fallback(&mut record.card));
    record.card.validate()?;
    Ok(notes)
}

fn empty_value(value: &Value) -> bool {
    match value {
        Value::Null => true,
        Value::String(s) => s.trim().is_empty(),
        Value::Array(list) => list.iter().all(empty_value),
        Value::Object(map) => map.iter().all(|(k, v)| k == "id" || k == "@type" || empty_value(v)),
        Value::Bool(_) | Value::Number(_) => false,
    }
}

fn has_name(name: Option<&Name>) -> bool {
    name.is_some_and(|n| {
        n.full.as_deref().is_some_and(|f| !f.trim().is_empty())
            || n.components.iter().any(|c| !c.value.trim().is_empty())
    })
}

/// Whether the card holds nothing about a person.
pub fn is_empty(card: &Card) -> bool {
    !has_name(card.name.as_ref())
        && card.nicknames.iter().all(|n| n.name.trim().is_empty())
        && card.organizations.iter().all(|o| {
            o.name.as_deref().is_none_or(|n| n.trim().is_empty()) && o.units.iter().all(|u| u.name.trim().is_empty())
        })
        && card.titles.iter().all(|t| t.name.trim().is_empty())
        && card.emails.iter().all(|e| e.address.trim().is_empty())
        && card.phones.iter().all(|p| p.number.trim().is_empty())
        && card.addresses.iter().all(|a| address_text(a).is_none())
        && card.anniversaries.is_empty()
        && card.keywords.iter().all(|k| k.trim().is_empty())
        && card.related_to.is_empty()
        && card.extra.iter().all(|(k, v)| BOOKKEEPING.contains(&k.as_str()) || empty_value(v))
}

fn address_text(a: &crate::card::Address) -> Option<String> {
    if let Some(full) = a.full.as_deref().map(str::trim).filter(|f| !f.is_empty()) {
        return Some(full.to_string());
    }
    let parts: Vec<&str> = a
        .components
        .iter()
        .filter(|c| c.kind != "separator")
        .map(|c| c.value.trim())
        .filter(|v| !v.is_empty())
        .collect();
    (!parts.is_empty()).then(|| parts.join(" "))
}

/// Names a card that has no first name and no full name after what it has (the module's order).
/// Returns what was done; nothing when the card had a name.
pub fn name_fallback(card: &mut Card) -> Vec<String> {
    if card.given().is_some_and(|g| !g.trim().is_empty()) {
        return Vec::new();
    }
    let trimmed = |s: &str| Some(s.trim().to_string()).filter(|s| !s.is_empty());
    let parts = card.name.as_ref().and_then(|n| {
        let words: Vec<&str> = n
            .components
            .iter()
            .filter(|c| c.kind != "separator")
            .map(|c| c.value.trim())
            .filter(|v| !v.is_empty())
            .collect();
        (!words.is_empty()).then(|| words.join(" "))
    });
    let org = card
        .organizations
        .iter()
        .find_map(|o| o.name.as_deref().and_then(trimmed).or_else(|| o.units.iter().find_map(|u| trimmed(&u.name))));
    let candidates = [
        (parts, "name parts"),
        (org, "organization"),
        (card.nicknames.iter().find_map(|n| trimmed(&n.name)), "nickname"),
        (card.emails.iter().find_map(|e| trimmed(&e.address)), "email"),
        (card.phones.iter().find_map(|p| trimmed(&p.number)), "phone"),
        (card.addresses.iter().find_map(address_text), "address"),
    ];
    let (full, from) = candidates
        .into_iter()
        .find_map(|(value, from)| value.map(|v| (v, from)))
        .unwrap_or_else(|| (UNNAMED.to_string(), "nothing"));
    let note = if from == "nothing" {
        format!("no name: named \"{full}\"")
    } else {
        format!("no name: named \"{full}\" after its {from}")
    };
    card.name.get_or_insert_with(Name::default).full = Some(full);
    vec![note]
}

/// The vCard property an anniversary kind is written as, and how a person calls it.
fn date_property(kind: &str) -> (&'static str, &'static str) {
    match kind {
        "birth" => ("bday", "birthday"),
        "death" => ("deathdate", "death date"),
        _ => ("anniversary", "anniversary"),
    }
}

fn storable(p: &Partial) -> bool {
    p.year.is_none_or(|y| (0..=9999).contains(&y))
        && p.month.is_none_or(|m| (1..=12).contains(&m))
        && p.day.is_none_or(|d| (1..=31).contains(&d))
}

/// The vCard basic form of a partial date (`19723101`, `--0229`), when its parts fit one.
fn date_text(p: &Partial) -> Option<String> {
    let year = match p.year {
        Some(y) if (0..=9999).contains(&y) => format!("{y:04}"),
        Some(_) => return None,
        None => "--".into(),
    };
    let two = |n: Option<u8>| n.filter(|n| *n <= 99).map(|n| format!("{n:02}"));
    Some(match (two(p.month), two(p.day)) {
        (Some(m), Some(d)) => format!("{year}{m}{d}"),
        (Some(m), None) if p.year.is_some() => format!("{year}-{m}"),
        (None, Some(d)) if p.year.is_none() => format!("---{d}"),
        _ => return None,
    })
}

/// Leaves out the anniversaries whose dates name no calendar day, carrying their text as a
/// vCard property when it has a form that reads back to the same numbers.
fn drop_unstorable_dates(record: &mut NeutralRecord, notes: &mut Vec<String>) {
    let mut carried = Vec::new();
    let mut gone_ids = Vec::new();
    record.card.anniversaries.retain(|a| {
        let Some(p) = a.date.partial.filter(|p| !storable(p)) else { return true };
        let (property, label) = date_property(&a.kind);
        let shown = format!(
            "{}-{}-{}",
            p.year.map_or("?".into(), |y| y.to_string()),
            p.month.map_or("?".into(), |m| m.to_string()),
            p.day.map_or("?".into(), |d| d.to_string())
        );
        match date_text(&p) {
            Some(text) => {
                notes.push(format!(
                    "the {label} {shown} was left out: no such date (its text {text} is kept and exported again)"
                ));
                carried.push(json!({ "name": property, "params": {}, "type": "unknown", "value": text }));
            }
            None => notes.push(format!("the {label} {shown} was left out: no such date")),
        }
        if let Some(Value::String(id)) = a.extra.get("id") {
            gone_ids.push(format!("anniversaries/{id}"));
        }
        false
    });
    if !gone_ids.is_empty()
        && let Some(Value::Object(props)) = record.passthrough.get_mut(PASSTHROUGH_JSCONTACT_PROPS)
    {
        for converted in props.values_mut().filter_map(Value::as_object_mut) {
            converted.retain(|pointer, _| !gone_ids.iter().any(|g| pointer.trim_start_matches('/') == g));
        }
        props.retain(|_, v| !v.as_object().is_some_and(Map::is_empty));
        if props.is_empty() {
            record.passthrough.remove(PASSTHROUGH_JSCONTACT_PROPS);
        }
    }
    if carried.is_empty() {
        return;
    }
    let list = record.passthrough.entry(PASSTHROUGH_VCARD_PROPS).or_insert_with(|| json!([]));
    if let Value::Array(list) = list {
        list.extend(carried);
        list.sort_by_cached_key(|p| {
            let group = p["params"]["group"].as_str().unwrap_or("~").to_string();
            (group, p["name"].as_str().unwrap_or("").to_string(), p["value"].to_string())
        });
    }
}

/// Leaves out emails, phones and keywords longer than [`MAX_TEXT`].
fn drop_oversized_texts(card: &mut Card, notes: &mut Vec<String>) {
    let before = (card.emails.len(), card.phones.len(), card.keywords.len());
    card.emails.retain(|e| e.address.len() <= MAX_TEXT);
    card.phones.retain(|p| p.number.len() <= MAX_TEXT);
    card.keywords.retain(|k| k.len() <= MAX_TEXT);
    let after = (card.emails.len(), card.phones.len(), card.keywords.len());
    for (what, b, a) in [("email", before.0, after.0), ("phone", before.1, after.1), ("category", before.2, after.2)] {
        if a < b {
            notes.push(format!("{} {what} value(s) longer than {MAX_TEXT} bytes were left out", b - a));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn record(json: &str) -> NeutralRecord {
        NeutralRecord { card: serde_json::from_str(json).expect("card"), ..NeutralRecord::default() }
    }

    #[test]
    fn a_nameless_card_is_named_after_what_it_has_in_order() {
        for (card, name) in [
            (
                r#"{"name":{"components":[{"kind":"surname","value":"Okafor"}]},"organizations":[{"name":"Acme"}]}"#,
                "Okafor",
            ),
            (r#"{"organizations":[{"name":"Acme"}],"nicknames":[{"name":"Bobby"}]}"#, "Acme"),
            (r#"{"nicknames":[{"name":"Bobby"}],"emails":[{"address":"kim@example.org"}]}"#, "Bobby"),
            (r#"{"emails":[{"address":"kim@example.org"}],"phones":[{"number":"+1 555 0100"}]}"#, "kim@example.org"),
            (r#"{"phones":[{"number":"+1 555 0100"}]}"#, "+1 555 0100"),
            (r#"{"addresses":[{"components":[{"kind":"locality","value":"Springfield"}]}]}"#, "Springfield"),
            (r#"{"media":[{"kind":"photo","uri":"data:image/png;base64,AAAA"}]}"#, UNNAMED),
        ] {
            let mut r = record(card);
            let notes = importable(&mut r).expect(card);
            assert_eq!(r.card.name.as_ref().and_then(|n| n.full.as_deref()), Some(name), "{card}");
            assert_eq!(notes.len(), 1, "{card}: {notes:?}");
        }
        let mut named = record(r#"{"name":{"full":"Kim Lee"}}"#);
        assert_eq!(importable(&mut named), Ok(Vec::new()));
    }

    #[test]
    fn only_an_empty_card_is_refused() {
        for empty in
            [r#"{}"#, r#"{"uid":"x","kind":"individual","name":{"components":[{"kind":"given","value":" "}]}}"#]
        {
            assert_eq!(importable(&mut record(empty)).map_err(|e| e.field), Err("card.name".to_string()), "{empty}");
        }
    }

    #[test]
    fn a_date_that_names_no_day_is_left_out_alone_and_carried_as_text() {
        let mut r = record(
            r#"{"name":{"full":"Ann"},"emails":[{"address":"ann@example.org"}],
            "anniversaries":[{"id":"k1","kind":"birth","date":{"partial":{"year":1972,"month":31,"day":1}}},
                             {"id":"k2","kind":"wedding","date":{"partial":{"year":2001,"month":6,"day":2}}},
                             {"id":"k3","kind":"death","date":{"partial":{"year":18152,"month":1,"day":1}}}]}"#,
        );
        let notes = importable(&mut r).expect("kept");
        assert_eq!(r.card.anniversaries.len(), 1);
        assert_eq!(r.card.anniversaries[0].kind, "wedding");
        assert_eq!(r.card.emails.len(), 1);
        assert_eq!(notes.len(), 2, "{notes:?}");
        assert!(notes[0].contains("birthday") && notes[0].contains("19723101"), "{notes:?}");
        assert_eq!(
            r.passthrough[PASSTHROUGH_VCARD_PROPS],
            json!([{ "name": "bday", "params": {}, "type": "unknown", "value": "19723101" }])
        );
    }
}
