//! JSContact (RFC 9553) in and out, and the mapping between a JSContact card and the neutral
//! record.
//!
//! The neutral card is JSContact with two shape changes existing clients rely on: every id-keyed
//! map of objects (`emails`, `phones`, ...) is a list whose items keep their key as `id`, and
//! every set of strings (`contexts`, `features`, `keywords`, a related entry's `relation`) is a
//! list. `@type` markers and the `version` member are dropped on the way in and put back on the
//! way out. The RFC 9555 `vCard` member (properties with no JSContact home, and the parameters of
//! converted ones) is carried in `passthrough` (`vCardProps` and `jsContactProps`), so an export
//! gives those properties back.

use serde::Deserialize as _;
use serde_json::{Map, Value, json};

use crate::card::Card;
use crate::record::{Item, JsonRecord, NeutralRecord, Problem};

/// Members whose JSContact form is a map of id to object.
const ID_MAPS: &[&str] = &[
    "nicknames",
    "organizations",
    "titles",
    "emails",
    "phones",
    "addresses",
    "anniversaries",
    "onlineServices",
    "links",
    "media",
    "notes",
    "personalInfo",
    "preferredLanguages",
    "calendars",
    "schedulingAddresses",
    "directories",
    "cryptoKeys",
];

/// Members (of the card or of an item) whose JSContact form is a set: a map of string to `true`.
const SETS: &[&str] = &["contexts", "features", "keywords", "members"];

pub use crate::record::{PASSTHROUGH_JSCONTACT_PROPS, PASSTHROUGH_VCARD_PROPS};
const CONVERTED_POINTER: &str = "/vCard/convertedProperties";
/// Vendor members (RFC 9553 §1.7.2 style) that carry the CRM envelope and gender through
/// JSContact, and through vCard as `JSPROP`, so our own exports re-import without loss.
pub const CRM_MEMBER: &str = "mycorrhizal:crm";
pub const GENDER_MEMBER: &str = "mycorrhizal:gender";

fn set_to_list(value: Value) -> Value {
    match value {
        Value::Object(map) => Value::Array(
            map.into_iter().filter(|(_, v)| v.as_bool() != Some(false)).map(|(k, _)| Value::String(k)).collect(),
        ),
        other => other,
    }
}

fn list_to_set(value: Value) -> Value {
    match value {
        Value::Array(list) => Value::Object(
            list.into_iter().filter_map(|v| v.as_str().map(|s| (s.to_string(), Value::Bool(true)))).collect(),
        ),
        other => other,
    }
}

/// Strips `@type` and turns sets into lists, recursively.
fn neutral_item(value: Value) -> Value {
    match value {
        Value::Object(map) => Value::Object(
            map.into_iter()
                .filter(|(k, _)| k != "@type")
                .map(|(k, v)| {
                    let v = if SETS.contains(&k.as_str()) { set_to_list(v) } else { neutral_item(v) };
                    (k, v)
                })
                .collect(),
        ),
        Value::Array(list) => Value::Array(list.into_iter().map(neutral_item).collect()),
        other => other,
    }
}

fn id_map_to_list(value: Value) -> Value {
    match value {
        Value::Object(mut map) => {
            // An Id is 1 to 255 characters (RFC 9553 1.4.1): an item under the empty key gets the
            // id a write would give it, so that writing the card and reading it back is stable.
            if let Some(item) = map.remove("") {
                let id = (1..).map(|n| format!("k{n}")).find(|id| !map.contains_key(id)).expect("a free id");
                map.insert(id, item);
            }
            Value::Array(
                in_id_order(map)
                    .into_iter()
                    .map(|(id, item)| {
                        let mut item = neutral_item(item);
                        if let Value::Object(m) = &mut item {
                            m.insert("id".into(), Value::String(id));
                        }
                        item
                    })
                    .collect(),
            )
        }
        other => neutral_item(other),
    }
}

/// The entries of an id map in the order its ids count: `k2` before `k10`. Ids are numbered in
/// the order the items were written (calcard numbers a vCard's properties so, as most JSContact
/// writers do), and the JSON map reads them back sorted as text, which put the tenth property
/// before the ninth and so changed the order of a card's emails or phones between two reads.
fn in_id_order(map: Map<String, Value>) -> Vec<(String, Value)> {
    let sorted = ids_in_order(&map);
    let mut entries: Vec<(String, Value)> = map.into_iter().collect();
    if !sorted {
        entries.sort_by(|(a, _), (b, _)| id_key(a).cmp(&id_key(b)));
    }
    entries
}

/// Whether the map's text order is its id order already (it is unless ids of different lengths
/// share a stem, as `k9` and `k10`).
fn ids_in_order(map: &Map<String, Value>) -> bool {
    map.keys().is_sorted_by(|a, b| id_key(a) <= id_key(b))
}

/// The order of map keys as ids count: the text before a trailing number, then the number.
fn id_key(id: &str) -> (&str, Option<u128>, &str) {
    let stem = id.trim_end_matches(|c: char| c.is_ascii_digit());
    (stem, id[stem.len()..].parse().ok(), id)
}

/// A JSContact card read by a deserializer as [`to_text_in_id_order`]'s text would be (every
/// map's members in id order, the same values), straight from the value: the card's readers
/// (calcard) build their own value from it without JSON text written and parsed again.
pub struct InIdOrder<'a>(pub &'a Value);

impl<'de> serde::Deserializer<'de> for InIdOrder<'de> {
    type Error = serde_json::Error;

    fn deserialize_any<V: serde::de::Visitor<'de>>(self, visitor: V) -> Result<V::Value, Self::Error> {
        use serde::de::value::{MapDeserializer, SeqDeserializer};
        match self.0 {
            Value::Null => visitor.visit_unit(),
            Value::Bool(b) => visitor.visit_bool(*b),
            // As JSON text reads back: a whole number that fits as unsigned, else signed, else
            // a float.
            Value::Number(n) => match (n.as_u64(), n.as_i64(), n.as_f64()) {
                (Some(u), _, _) => visitor.visit_u64(u),
                (None, Some(i), _) => visitor.visit_i64(i),
                (None, None, Some(f)) => visitor.visit_f64(f),
                (None, None, None) => Err(serde::de::Error::custom("a number out of range")),
            },
            Value::String(text) => visitor.visit_borrowed_str(text),
            Value::Array(list) => {
                let mut seq = SeqDeserializer::new(list.iter().map(InIdOrder));
                let out = visitor.visit_seq(&mut seq)?;
                seq.end()?;
                Ok(out)
            }
            Value::Object(map) => {
                let mut entries: Vec<(&String, &Value)> = map.iter().collect();
                if !ids_in_order(map) {
                    entries.sort_by(|(a, _), (b, _)| id_key(a).cmp(&id_key(b)));
                }
                let mut members = MapDeserializer::new(
                    entries.into_iter().map(|(k, v)| (serde::de::value::BorrowedStrDeserializer::new(k), InIdOrder(v))),
                );
                let out = visitor.visit_map(&mut members)?;
                members.end()?;
                Ok(out)
            }
        }
    }

    serde::forward_to_deserialize_any! {
        bool i8 i16 i32 i64 i128 u8 u16 u32 u64 u128 f32 f64 char str string bytes byte_buf option unit
        unit_struct newtype_struct seq tuple tuple_struct map struct enum identifier ignored_any
    }
}

impl<'de> serde::de::IntoDeserializer<'de, serde_json::Error> for InIdOrder<'de> {
    type Deserializer = Self;

    fn into_deserializer(self) -> Self {
        self
    }
}

/// JSON text of a JSContact card with every map's members in id order ([`in_id_order`]), for
/// readers that keep the order of the text: calcard writes a vCard's properties in that order.
pub fn to_text_in_id_order(card: &Value) -> String {
    struct Ordered<'a>(&'a Value);
    impl serde::Serialize for Ordered<'_> {
        fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
            use serde::ser::{SerializeMap, SerializeSeq};
            match self.0 {
                Value::Object(map) => {
                    let mut entries: Vec<(&String, &Value)> = map.iter().collect();
                    if !ids_in_order(map) {
                        entries.sort_by(|(a, _), (b, _)| id_key(a).cmp(&id_key(b)));
                    }
                    let mut out = serializer.serialize_map(Some(entries.len()))?;
                    for (k, v) in entries {
                        out.serialize_entry(k, &Ordered(v))?;
                    }
                    out.end()
                }
                Value::Array(list) => {
                    let mut out = serializer.serialize_seq(Some(list.len()))?;
                    for v in list {
                        out.serialize_element(&Ordered(v))?;
                    }
                    out.end()
                }
                other => other.serialize(serializer),
            }
        }
    }
    serde_json::to_string(&Ordered(card)).unwrap_or_default()
}

/// Applies `f` to every item of an id map (or list).
fn map_items(value: Value, f: fn(Value) -> Value) -> Value {
    match value {
        Value::Object(map) => Value::Object(map.into_iter().map(|(k, v)| (k, f(v))).collect()),
        Value::Array(list) => Value::Array(list.into_iter().map(f).collect()),
        other => other,
    }
}

/// JSContact dates are typed objects (`{"@type": "PartialDate", year, month, day}` or
/// `{"@type": "Timestamp", utc}`); the neutral card holds `{partial: {...}}` or `{timestamp}`.
fn neutral_anniversary(mut item: Value) -> Value {
    if let Some(date) = item.get_mut("date") {
        let typed = date.get("@type").and_then(Value::as_str).map(str::to_string);
        if let Value::Object(d) = date {
            d.remove("@type");
            let utc = d.get("utc").cloned();
            *date = match (typed.as_deref(), utc) {
                (Some("Timestamp"), Some(utc)) | (None, Some(utc)) => json!({ "timestamp": utc }),
                _ => json!({ "partial": Value::Object(std::mem::take(d)) }),
            };
        }
    }
    item
}

/// The neutral anniversary date back in JSContact's typed form.
fn jscontact_anniversary(mut item: Value) -> Value {
    if let Some(date) = item.get_mut("date") {
        if let Some(Value::Object(partial)) = date.get("partial") {
            let mut typed = partial.clone();
            typed.insert("@type".into(), json!("PartialDate"));
            *date = Value::Object(typed);
        } else if let Some(utc) = date.get("timestamp").cloned() {
            *date = json!({ "@type": "Timestamp", "utc": utc });
        }
    }
    item
}

/// `relatedTo`: `{target: {relation: {spouse: true}}}` becomes `[{target, relations: [spouse]}]`.
fn related_to_list(value: Value) -> Value {
    match value {
        Value::Object(map) => Value::Array(
            map.into_iter()
                .map(|(target, item)| {
                    let mut out = Map::new();
                    out.insert("target".into(), Value::String(target));
                    if let Value::Object(mut item) = neutral_item(item) {
                        if let Some(rel) = item.remove("relation") {
                            out.insert("relations".into(), set_to_list(rel));
                        }
                        out.extend(item);
                    }
                    Value::Object(out)
                })
                .collect(),
        ),
        other => other,
    }
}

/// `speakToAs.pronouns` is an id map inside an object.
fn speak_to_as(value: Value) -> Value {
    match neutral_item(value) {
        Value::Object(mut map) => {
            if let Some(p) = map.remove("pronouns") {
                map.insert("pronouns".into(), id_map_to_list(p));
            }
            Value::Object(map)
        }
        other => other,
    }
}

/// A JSContact card (RFC 9553 JSON) as a neutral record. Never fails: members it cannot read
/// are kept as they are in the card's unknown members.
pub fn to_neutral(card: Value) -> NeutralRecord {
    let Value::Object(map) = card else { return NeutralRecord::default() };
    let mut out = Map::new();
    let mut passthrough = Map::new();
    let mut crm = Map::new();
    let mut gender = String::new();
    for (key, value) in map {
        match key.as_str() {
            "@type" | "version" => {}
            CRM_MEMBER => {
                if let Value::Object(m) = value {
                    crm = m;
                }
            }
            GENDER_MEMBER => {
                if let Value::String(g) = value {
                    gender = g;
                }
            }
            "vCard" => {
                if let Value::Object(vcard) = value {
                    carry_vcard_member(vcard, &mut passthrough);
                }
            }
            "relatedTo" => {
                out.insert(key, related_to_list(value));
            }
            "speakToAs" => {
                out.insert(key, speak_to_as(value));
            }
            "anniversaries" => {
                out.insert(key, id_map_to_list(map_items(value, neutral_anniversary)));
            }
            k if ID_MAPS.contains(&k) => {
                out.insert(key, id_map_to_list(value));
            }
            k if SETS.contains(&k) => {
                out.insert(key, set_to_list(value));
            }
            _ => {
                out.insert(key, neutral_item(value));
            }
        }
    }
    // Phones written as `tel:` URIs read as plain numbers.
    if let Some(Value::Array(phones)) = out.get_mut("phones") {
        for phone in phones {
            if let Some(Value::String(n)) = phone.get_mut("number")
                && let Some(rest) = n.strip_prefix("tel:")
            {
                *n = rest.to_string();
            }
        }
    }
    let mut card = deserialize_card(Value::Object(out));
    legacy_context_tokens(&mut card);
    // Google puts every contact in its system group "myContacts"; it is not the person's tag.
    card.keywords.retain(|k| !k.eq_ignore_ascii_case("myContacts"));
    NeutralRecord { card, crm, passthrough, gender }
}

/// Reads the neutral card leniently: a member of the wrong type moves to the unknown members
/// under its own name prefixed `x-invalid-`, rather than losing the card.
fn deserialize_card(value: Value) -> Card {
    match Card::deserialize(&value) {
        Ok(card) => card,
        Err(_) => {
            let Value::Object(map) = value else { return Card::default() };
            let mut good = Map::new();
            let mut bad = Map::new();
            for (k, v) in map {
                let mut probe = Map::new();
                probe.insert(k.clone(), v.clone());
                if serde_json::from_value::<Card>(Value::Object(probe)).is_ok() {
                    good.insert(k, v);
                } else {
                    bad.insert(format!("x-invalid-{k}"), v);
                }
            }
            let mut card: Card = serde_json::from_value(Value::Object(good)).unwrap_or_default();
            card.extra.extend(bad);
            card
        }
    }
}

/// vCard 3 spells preference and transport as types (`TYPE=pref`, `TYPE=internet`): `pref`
/// becomes `pref: 1`, `internet` (every email is) is dropped.
fn legacy_context_tokens(card: &mut Card) {
    fn fix(contexts: &mut Vec<String>, pref: &mut Option<u32>) {
        if contexts.iter().any(|c| c.eq_ignore_ascii_case("pref")) && pref.is_none() {
            *pref = Some(1);
        }
        contexts.retain(|c| !c.eq_ignore_ascii_case("pref") && !c.eq_ignore_ascii_case("internet"));
    }
    for e in &mut card.emails {
        fix(&mut e.contexts, &mut e.pref);
    }
    for p in &mut card.phones {
        fix(&mut p.contexts, &mut p.pref);
    }
    for a in &mut card.addresses {
        fix(&mut a.contexts, &mut a.pref);
    }
    // The other id maps (online services, languages, links, ...) are untyped items.
    for key in ID_MAPS {
        let Some(Value::Array(items)) = card.extra.get_mut(*key) else { continue };
        for item in items.iter_mut().filter_map(Value::as_object_mut) {
            let Some(Value::Array(contexts)) = item.get_mut("contexts") else { continue };
            let had_pref = contexts.iter().any(|c| c.as_str().is_some_and(|c| c.eq_ignore_ascii_case("pref")));
            contexts.retain(|c| !c.as_str().is_some_and(|c| c.eq_ignore_ascii_case("pref")));
            if contexts.is_empty() {
                item.remove("contexts");
            }
            if had_pref && !item.contains_key("pref") {
                item.insert("pref".into(), json!(1));
            }
        }
    }
}

/// Splits the RFC 9555 `vCard` member into `passthrough`: `properties` (jCard arrays) become
/// `vCardProps` objects `{name, params, type, value}` (without `version`), and
/// `convertedProperties` is kept under its JSON pointer in `jsContactProps`.
fn carry_vcard_member(mut vcard: Map<String, Value>, passthrough: &mut Map<String, Value>) {
    if let Some(Value::Array(props)) = vcard.remove("properties") {
        let list: Vec<Value> = props
            .into_iter()
            .filter_map(|p| {
                let parts = p.as_array()?;
                let name = parts.first()?.as_str()?;
                if name.eq_ignore_ascii_case("version") {
                    return None;
                }
                let value = if parts.len() > 4 { Value::Array(parts[3..].to_vec()) } else { parts.get(3)?.clone() };
                Some(json!({
                    "name": name,
                    "params": bare_tokens_as_types(parts.get(1).cloned().unwrap_or_else(|| json!({}))),
                    "type": parts.get(2).cloned().unwrap_or_else(|| json!("unknown")),
                    "value": value,
                }))
            })
            .collect();
        // One order whatever order a writer used, so a card reads back the same after any
        // number of exports and imports. Apple's grouped properties stay together.
        let mut list = list;
        list.sort_by_cached_key(|p| {
            let group = p["params"]["group"].as_str().unwrap_or("~").to_string();
            (group, p["name"].as_str().unwrap_or("").to_string(), p["value"].to_string())
        });
        if !list.is_empty() {
            passthrough.insert(PASSTHROUGH_VCARD_PROPS.into(), Value::Array(list));
        }
    }
    if let Some(Value::Object(mut converted)) = vcard.remove("convertedProperties") {
        // vCard 2.1's bare type tokens (`EMAIL;INTERNET:`) are already contexts of the member.
        for entry in converted.values_mut() {
            if let Some(Value::Object(params)) = entry.get_mut("parameters") {
                params.retain(|_, v| v.as_str() != Some(""));
            }
        }
        // An entry that says only which property a member came from (`{"name": "tz"}`) is
        // kept: without it a write gives a time zone, coordinates or an IMPP back as another
        // property (an `ADR` parameter, a `SOCIALPROFILE`).
        converted.retain(|_, e| {
            e.as_object().is_some_and(|m| {
                m.len() > 1
                    || m.contains_key("name")
                    || m.get("parameters").and_then(Value::as_object).is_some_and(|p| !p.is_empty())
            })
        });
        if converted.is_empty() {
            return;
        }
        let props = passthrough.entry(PASSTHROUGH_JSCONTACT_PROPS).or_insert_with(|| json!({}));
        if let Value::Object(p) = props {
            p.insert(CONVERTED_POINTER.into(), Value::Object(converted));
        }
    }
}

/// vCard 2.1 writes types as bare parameters (`LABEL;WORK;PREF:`), which read as parameters
/// with an empty value; they are types.
fn bare_tokens_as_types(params: Value) -> Value {
    let Value::Object(mut map) = params else { return params };
    let bare: Vec<String> = map.iter().filter(|(_, v)| v.as_str() == Some("")).map(|(k, _)| k.clone()).collect();
    if bare.is_empty() {
        return Value::Object(map);
    }
    let mut types: Vec<String> = match map.remove("type") {
        Some(Value::String(t)) => t.split(',').map(str::to_string).collect(),
        Some(Value::Array(list)) => list.iter().filter_map(|v| v.as_str().map(str::to_string)).collect(),
        _ => Vec::new(),
    };
    for token in bare {
        map.remove(&token);
        // A bare PREF says nothing on a carried property, and 4.0 would read it as `PREF=`.
        if !token.eq_ignore_ascii_case("pref") {
            types.push(token.to_uppercase());
        }
    }
    if !types.is_empty() {
        map.insert("type".into(), Value::String(types.join(",")));
    }
    Value::Object(map)
}

/// The passthrough's vCard properties and converted-property parameters as the RFC 9555 `vCard`
/// member, or `None` when there are none.
fn vcard_member(passthrough: &Map<String, Value>) -> Option<Value> {
    let mut vcard = Map::new();
    if let Some(Value::Array(props)) = passthrough.get(PASSTHROUGH_VCARD_PROPS) {
        let list: Vec<Value> = props
            .iter()
            .filter_map(|p| {
                let name = p.get("name")?.as_str()?;
                let mut parts = vec![json!(name.to_lowercase()), p.get("params").cloned().unwrap_or_else(|| json!({}))];
                parts.push(p.get("type").cloned().unwrap_or_else(|| json!("unknown")));
                match p.get("value") {
                    // A structured value (CLIENTPIDMAP's `1;urn:...`) is one jCard element.
                    Some(v @ Value::Array(_)) => parts.push(v.clone()),
                    Some(v) => parts.push(v.clone()),
                    None => parts.push(json!("")),
                }
                Some(Value::Array(parts))
            })
            .collect();
        if !list.is_empty() {
            vcard.insert("properties".into(), Value::Array(list));
        }
    }
    if let Some(converted) = passthrough.get(PASSTHROUGH_JSCONTACT_PROPS).and_then(|p| p.get(CONVERTED_POINTER))
        && converted.as_object().is_some_and(|m| !m.is_empty())
    {
        vcard.insert("convertedProperties".into(), converted.clone());
    }
    (!vcard.is_empty()).then_some(Value::Object(vcard))
}

/// Turns lists into sets where JSContact has sets, recursively. The values are changed where
/// they are (no map or list is built again: this runs for every card a CardDAV answer writes).
fn jscontact_item(mut value: Value) -> Value {
    sets_in_place(&mut value);
    value
}

fn sets_in_place(value: &mut Value) {
    match value {
        Value::Object(map) => {
            for (k, v) in map.iter_mut() {
                if SETS.contains(&k.as_str()) {
                    *v = list_to_set(std::mem::take(v));
                } else {
                    sets_in_place(v);
                }
            }
        }
        Value::Array(list) => list.iter_mut().for_each(sets_in_place),
        _ => {}
    }
}

fn list_to_id_map(value: Value) -> Value {
    let Value::Array(list) = value else { return jscontact_item(value) };
    let taken: Vec<String> =
        list.iter().filter_map(|v| v.get("id").and_then(Value::as_str).map(str::to_string)).collect();
    let mut next = 0;
    let mut map = Map::new();
    for item in list {
        let mut item = jscontact_item(item);
        let id = match item.as_object_mut().and_then(|m| m.remove("id")) {
            Some(Value::String(id)) if !id.is_empty() && !map.contains_key(&id) => id,
            _ => loop {
                next += 1;
                let candidate = format!("k{next}");
                if !taken.contains(&candidate) && !map.contains_key(&candidate) {
                    break candidate;
                }
            },
        };
        map.insert(id, item);
    }
    Value::Object(map)
}

fn related_to_map(value: Value) -> Value {
    let Value::Array(list) = value else { return value };
    let mut map = Map::new();
    for item in list {
        let Value::Object(mut item) = item else { continue };
        let Some(Value::String(target)) = item.remove("target") else { continue };
        let relations = item.remove("relations").map(list_to_set).unwrap_or_else(|| json!({}));
        let mut entry = match jscontact_item(Value::Object(item)) {
            Value::Object(m) => m,
            _ => Map::new(),
        };
        if relations.as_object().is_some_and(|r| !r.is_empty()) {
            entry.insert("relation".into(), relations);
        }
        map.insert(target, Value::Object(entry));
    }
    Value::Object(map)
}

/// The neutral record as a JSContact card (RFC 9553), `@type` and `version` included.
pub fn from_neutral(record: &NeutralRecord) -> Value {
    from_json(JsonRecord::from(record))
}

/// [`from_neutral`] of a record whose card is JSON already.
pub fn from_json(record: JsonRecord) -> Value {
    let JsonRecord { card: members, crm, passthrough, gender } = record;
    let mut out = Map::new();
    out.insert("@type".into(), json!("Card"));
    out.insert("version".into(), json!("1.0"));
    for (key, value) in members {
        let value = match key.as_str() {
            "relatedTo" => related_to_map(value),
            "speakToAs" => match jscontact_item(value) {
                Value::Object(mut m) => {
                    if let Some(p) = m.remove("pronouns") {
                        m.insert("pronouns".into(), list_to_id_map(p));
                    }
                    Value::Object(m)
                }
                other => other,
            },
            "anniversaries" => map_items(list_to_id_map(value), jscontact_anniversary),
            k if ID_MAPS.contains(&k) => list_to_id_map(value),
            k if SETS.contains(&k) => list_to_set(value),
            _ => jscontact_item(value),
        };
        out.insert(key, value);
    }
    if let Some(vcard) = vcard_member(&passthrough) {
        out.insert("vCard".into(), vcard);
    }
    if !crm.is_empty() {
        out.insert(CRM_MEMBER.into(), Value::Object(crm));
    }
    if !gender.is_empty() {
        out.insert(GENDER_MEMBER.into(), Value::String(gender));
    }
    Value::Object(out)
}

/// The cards of a JSContact file: one Card, an array of Cards, or a group (`@type: CardGroup`
/// with `cards` as an array or map, as earlier drafts wrote it). A card that is not a JSON object
/// is a problem of its own; a file that is not JSON at all is one problem at index 0.
pub fn parse_file(bytes: &[u8]) -> Vec<Item> {
    let text = crate::text::decode(bytes);
    let value: Value = match serde_json::from_str(text.trim_start_matches('\u{feff}')) {
        Ok(v) => v,
        Err(e) => {
            return vec![Item::Problem(Problem { index: 0, line: e.line(), reason: format!("not valid JSON: {e}") })];
        }
    };
    let cards: Vec<Value> = match value {
        Value::Array(list) => list,
        Value::Object(mut map) if map.get("@type").and_then(Value::as_str) == Some("CardGroup") => {
            match map.remove("cards") {
                Some(Value::Array(list)) => list,
                Some(Value::Object(m)) => m.into_iter().map(|(_, v)| v).collect(),
                _ => Vec::new(),
            }
        }
        other => vec![other],
    };
    cards
        .into_iter()
        .enumerate()
        .map(|(index, card)| {
            let kind = card.get("@type").and_then(Value::as_str);
            if !card.is_object() || kind.is_some_and(|t| t != "Card") {
                return Item::Problem(Problem {
                    index,
                    line: 0,
                    reason: "not a JSContact Card (an object with \"@type\": \"Card\")".into(),
                });
            }
            let mut record = to_neutral(card);
            match crate::importable::importable(&mut record) {
                Ok(diagnostics) => Item::Record { record: Box::new(record), line: 0, diagnostics },
                Err(e) => Item::Problem(Problem { index, line: 0, reason: format!("{}: {}", e.field, e.reason) }),
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The lists-to-sets walk as it was written first, rebuilding every map and list: the
    /// reference the in-place walk must agree with.
    fn rebuilt(value: Value) -> Value {
        match value {
            Value::Object(map) => Value::Object(
                map.into_iter()
                    .map(|(k, v)| {
                        let v = if SETS.contains(&k.as_str()) { list_to_set(v) } else { rebuilt(v) };
                        (k, v)
                    })
                    .collect(),
            ),
            Value::Array(list) => Value::Array(list.into_iter().map(rebuilt).collect()),
            other => other,
        }
    }

    #[test]
    fn sets_are_made_in_place_as_they_were_by_rebuilding() {
        let values = [
            json!({"contexts": ["work", "private", 3], "pref": 1, "address": "a@example.org"}),
            json!([{"features": ["voice", "cell"], "number": "+1"}, {"contexts": "not a list"}, 7, null]),
            json!({"name": {"components": [{"kind": "given", "value": "Ann", "contexts": ["x"]}], "keywords": []}}),
            json!({"members": {"already": true}, "deep": [[{"keywords": ["a", "b", "a"]}]], "text": "keywords"}),
            json!("plain"),
            json!({}),
        ];
        for value in values {
            assert_eq!(jscontact_item(value.clone()), rebuilt(value.clone()), "{value}");
        }
    }

    #[test]
    fn maps_become_lists_and_come_back() {
        let js = json!({
            "@type": "Card", "version": "1.0", "uid": "x",
            "name": {"components": [{"kind": "given", "value": "Ann"}]},
            "emails": {"e1": {"@type": "EmailAddress", "address": "a@example.org", "contexts": {"work": true}, "pref": 1}},
            "keywords": {"friends": true},
            "relatedTo": {"urn:uuid:1": {"relation": {"spouse": true}}},
            "speakToAs": {"pronouns": {"p1": {"pronouns": "she/her"}}},
        });
        let record = to_neutral(js.clone());
        assert_eq!(record.card.emails[0].address, "a@example.org");
        assert_eq!(record.card.emails[0].contexts, vec!["work"]);
        assert_eq!(record.card.emails[0].extra["id"], json!("e1"));
        assert_eq!(record.card.keywords, vec!["friends"]);
        assert_eq!(record.card.related_to[0].relations, vec!["spouse"]);
        let back = from_neutral(&record);
        let mut expected = js;
        expected["emails"]["e1"].as_object_mut().unwrap().remove("@type");
        assert_eq!(back, expected);
    }

    #[test]
    fn vcard_3_type_tokens_become_pref_and_disappear() {
        let record = to_neutral(json!({
            "name": {"full": "A B"},
            "emails": {"k1": {"address": "a@b.c", "contexts": {"internet": true, "pref": true, "private": true}}},
        }));
        assert_eq!(record.card.emails[0].contexts, vec!["private"]);
        assert_eq!(record.card.emails[0].pref, Some(1));
    }

    #[test]
    fn a_file_may_hold_one_card_a_list_or_a_group() {
        let one = br#"{"@type":"Card","name":{"full":"Ann Lee"}}"#;
        assert!(matches!(parse_file(one).as_slice(), [Item::Record { .. }]));
        let list = br#"[{"@type":"Card","name":{"full":"Ann"}}, 7, {"@type":"Card","name":{"full":"Bo"}}]"#;
        let items = parse_file(list);
        assert_eq!(items.len(), 3);
        assert!(matches!(&items[1], Item::Problem(p) if p.index == 1));
        let group = br#"{"@type":"CardGroup","cards":[{"@type":"Card","name":{"full":"Ann"}}]}"#;
        assert_eq!(parse_file(group).len(), 1);
        assert!(matches!(parse_file(b"{not json").as_slice(), [Item::Problem(_)]));
    }

    /// Reads every card of `bytes`, writes it and reads it again: the same record.
    fn assert_stable(bytes: &[u8], what: &str) -> usize {
        let mut checked = 0;
        for item in parse_file(bytes) {
            let Item::Record { record, .. } = item else { continue };
            let out = serde_json::to_vec(&from_neutral(&record)).expect("serialises");
            match parse_file(&out).into_iter().next() {
                Some(Item::Record { record: again, .. }) => assert_eq!(again, record, "{what}: out and back in"),
                other => panic!("{what}: a written card does not read back: {other:?}"),
            }
            checked += 1;
        }
        checked
    }

    /// An Id is never empty (RFC 9553); an item under `""` was read with the empty id, which a
    /// write replaced by `k1`, so the card changed between the first and the second read.
    #[test]
    fn an_item_under_the_empty_id_gets_the_id_a_write_would_give() {
        let file = br#"{"@type":"Card","uid":"u","organizations":{"k1":{"name":"First"},"":{"name":"Second"},"k10":{"name":"Third"}}}"#;
        let Some(Item::Record { record, .. }) = parse_file(file).into_iter().next() else { panic!("a record") };
        let ids: Vec<_> =
            record.card.organizations.iter().map(|o| o.extra["id"].as_str().unwrap().to_string()).collect();
        assert_eq!(ids, ["k1", "k2", "k10"]);
        assert_eq!(record.card.organizations[1].name.as_deref(), Some("Second"));
        assert_eq!(assert_stable(file, "empty id"), 1);
    }

    /// Inputs on which the `jscontact` fuzz target failed (`fuzz/regressions/jscontact`).
    #[test]
    fn fuzz_findings_stay_fixed() {
        let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/../fuzz/regressions/jscontact");
        let mut checked = 0;
        for path in std::fs::read_dir(dir).expect("regressions").flatten().map(|e| e.path()) {
            if path.file_name().and_then(|n| n.to_str()).is_some_and(|n| n.starts_with("fixed-")) {
                checked += assert_stable(&std::fs::read(&path).expect("read"), &path.display().to_string());
            }
        }
        assert!(checked >= 1, "{checked} cards");
    }
}
