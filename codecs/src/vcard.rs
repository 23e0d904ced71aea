//! vCard 2.1, 3.0 and 4.0 in; 3.0 and 4.0 out. Built on calcard's parser, writer and its
//! RFC 9555 vCard <-> JSContact conversion; the neutral record is reached through
//! [`crate::jscontact`], so both formats share one mapping. calcard's types stay in this module.
//!
//! Around calcard, this module handles what real exporters do:
//! - a file is split into cards here, so a broken card is reported with its line and the rest of
//!   the file still imports;
//! - lines are unfolded on bytes before decoding, because exporters fold inside UTF-8 sequences;
//! - a card that is not UTF-8 is read as Windows-1252;
//! - Apple's year-less dates (`X-APPLE-OMIT-YEAR`) lose their placeholder year on the way in and
//!   get it back in 3.0 output;
//! - 4.0 `data:` URIs are written with a bare comma (calcard escapes it, and clients then lose
//!   the photo);
//! - calcard's bookkeeping parameters (`PROP-ID`, `JSCOMPS`) are not written out.

use base64::Engine as _;
use calcard::Entry;
use calcard::common::PartialDateTime;
use calcard::jscontact::JSContact;
use calcard::vcard::{
    VCard, VCardEntry, VCardParameter, VCardParameterName, VCardParameterValue, VCardProperty, VCardValue, VCardVersion,
};
use serde_json::{Value, json};

use crate::card::Card;
use crate::jscontact;
use crate::record::{Item, NeutralRecord, Problem};

/// The year Apple writes for a date without one.
const APPLE_NO_YEAR: u16 = 1604;

/// The vCard versions this server writes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Version {
    V3,
    V4,
}

impl Version {
    /// `4`, `4.0`, `3`, `3.0`, optionally prefixed `v`.
    pub fn parse(text: &str) -> Option<Version> {
        match text.trim().trim_start_matches(['v', 'V']) {
            "4" | "4.0" => Some(Version::V4),
            "3" | "3.0" => Some(Version::V3),
            _ => None,
        }
    }
}

/// One card's bytes in a file and the line it starts on.
struct Block<'a> {
    line: usize,
    bytes: &'a [u8],
    complete: bool,
}

fn trim_line(line: &[u8]) -> &[u8] {
    let line = line.strip_prefix(b"\xef\xbb\xbf").unwrap_or(line);
    let start = line.iter().position(|b| !b.is_ascii_whitespace()).unwrap_or(line.len());
    let end = line.iter().rposition(|b| !b.is_ascii_whitespace()).map_or(start, |e| e + 1);
    &line[start..end]
}

/// Splits a file into `BEGIN:VCARD` ... `END:VCARD` blocks, nesting counted (2.1's `AGENT` may
/// embed a card). Text outside any card is ignored. Inside a card, a line that starts with a
/// space or tab continues the line before it (folding), so it is never a marker: a long value
/// holding the text `BEGIN:VCARD` can be folded right before it.
fn blocks(bytes: &[u8]) -> Vec<Block<'_>> {
    let mut out = Vec::new();
    let mut depth = 0usize;
    let mut start = (0usize, 0usize);
    let mut offset = 0usize;
    for (i, raw) in bytes.split_inclusive(|b| *b == b'\n').enumerate() {
        if depth > 0 && matches!(raw.first(), Some(b' ' | b'\t')) {
            offset += raw.len();
            continue;
        }
        let line = trim_line(raw);
        if line.eq_ignore_ascii_case(b"BEGIN:VCARD") {
            if depth == 0 {
                start = (i + 1, offset);
            }
            depth += 1;
        } else if line.eq_ignore_ascii_case(b"END:VCARD") && depth > 0 {
            depth -= 1;
            if depth == 0 {
                out.push(Block { line: start.0, bytes: &bytes[start.1..offset + raw.len()], complete: true });
            }
        }
        offset += raw.len();
    }
    if depth > 0 {
        out.push(Block { line: start.0, bytes: &bytes[start.1..], complete: false });
    }
    out
}

/// Removes folding (a line break followed by a space or tab) on bytes.
fn unfold(bytes: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let b = bytes[i];
        if b == b'\r' && bytes.get(i + 1) == Some(&b'\n') && matches!(bytes.get(i + 2), Some(b' ' | b'\t')) {
            i += 3;
        } else if b == b'\n' && matches!(bytes.get(i + 1), Some(b' ' | b'\t')) {
            i += 2;
        } else {
            out.push(b);
            i += 1;
        }
    }
    out
}

/// Every card of a vCard file, in order: a neutral record, or a problem with the card's line.
pub fn parse_file(bytes: &[u8]) -> Vec<Item> {
    let bytes = crate::text::utf8_bytes(bytes);
    let found = blocks(&bytes);
    if found.is_empty() {
        return vec![Item::Problem(Problem { index: 0, line: 1, reason: "no BEGIN:VCARD found".into() })];
    }
    parse_blocks(&found)
}

/// Cards per thread below which a file is parsed on the calling thread alone.
const CARDS_PER_THREAD: usize = 256;

/// Parses the cards on up to four threads (the cards are independent), keeping file order.
fn parse_blocks(found: &[Block<'_>]) -> Vec<Item> {
    let threads = std::thread::available_parallelism().map_or(1, |n| n.get()).clamp(1, 4);
    let per_thread = found.len().div_ceil(threads).max(CARDS_PER_THREAD);
    if per_thread >= found.len() {
        return found.iter().enumerate().map(|(index, block)| parse_block(index, block)).collect();
    }
    std::thread::scope(|scope| {
        let parts: Vec<_> = found
            .chunks(per_thread)
            .enumerate()
            .map(|(part, blocks)| {
                scope.spawn(move || {
                    let first = part * per_thread;
                    blocks.iter().enumerate().map(|(i, block)| parse_block(first + i, block)).collect::<Vec<_>>()
                })
            })
            .collect();
        let mut out = Vec::with_capacity(found.len());
        for part in parts {
            match part.join() {
                Ok(items) => out.extend(items),
                // A panic in the parser is a bug; let it surface as it would have on one thread.
                Err(panic) => std::panic::resume_unwind(panic),
            }
        }
        out
    })
}

fn parse_block(index: usize, block: &Block<'_>) -> Item {
    let problem = |reason: String| Item::Problem(Problem { index, line: block.line, reason });
    if !block.complete {
        return problem("the card has no END:VCARD".into());
    }
    let unfolded = unfold(block.bytes);
    let text = crate::text::decode(&unfolded);
    let mut vcard = match VCard::parse(&*text) {
        Ok(v) => v,
        Err(Entry::InvalidLine(line)) => return problem(format!("unreadable line: {}", clip(&line))),
        Err(other) => return problem(format!("not a readable vCard ({})", clip(&format!("{other:?}")))),
    };
    let mut diagnostics = drop_invalid_names(&mut vcard);
    diagnostics.extend(drop_unknown_phonetic_systems(&mut vcard));
    diagnostics.extend(drop_invalid_languages(&mut vcard));
    diagnostics.extend(drop_repeated_singulars(&mut vcard));
    diagnostics.extend(drop_repeated_parameters(&mut vcard));
    diagnostics.extend(drop_forms_in_the_default_language(&mut vcard));
    labels_onto_addresses(&mut vcard);
    order_as_calcard_will(&mut vcard);
    let js = vcard.into_jscontact::<String, String>();
    let mut value = serde_json::to_value(&js).unwrap_or_else(|_| json!({}));
    apple_omit_year_in(&mut value);
    one_line_break(&mut value);
    let mut record = jscontact::to_neutral(value);
    diagnostics.extend(drop_unreadable_timestamps(&mut record));
    match crate::importable::importable(&mut record) {
        Ok(notes) => {
            diagnostics.extend(notes);
            Item::Record { record: Box::new(record), line: block.line, diagnostics }
        }
        Err(e) => problem(format!("{}: {}", e.field, e.reason)),
    }
}

/// The card's own bookkeeping timestamps (`CREATED`, `REV`) that calcard could not read are
/// left out and reported. Carried as unknown properties they came back, and calcard reads a 3.0
/// card's dates more leniently than a 4.0 one's: `CREATED:21-55-55-01-02` became year 25 on the
/// next pass, so the card changed on every round trip (found by the `vcard` fuzz target).
fn drop_unreadable_timestamps(record: &mut NeutralRecord) -> Vec<String> {
    let mut notes = Vec::new();
    let Some(Value::Array(props)) = record.passthrough.get_mut(jscontact::PASSTHROUGH_VCARD_PROPS) else {
        return notes;
    };
    props.retain(|p| {
        let name = p.get("name").and_then(Value::as_str).unwrap_or("");
        if !(name.eq_ignore_ascii_case("created") || name.eq_ignore_ascii_case("rev")) {
            return true;
        }
        let value =
            p.get("value").map(|v| v.as_str().map_or_else(|| v.to_string(), str::to_string)).unwrap_or_default();
        notes.push(format!("{} {:?} was left out: not a date and time", name.to_uppercase(), clip(&value)));
        false
    });
    if props.is_empty() {
        record.passthrough.remove(jscontact::PASSTHROUGH_VCARD_PROPS);
    }
    notes
}

/// calcard (0.3) moves a few properties to the end of the card before converting it (role,
/// birth and death places, Apple's `X-ABLabel`, and properties in a language other than the
/// card's), with an *unstable* sort: on a card of more than 20 properties, the others then
/// change places, and with them the order of the card's emails or phones and which group label
/// attaches where, so a card read, written and read again was not the same card. Sorting by the
/// same weight first, stably, hands calcard a card already in order, which its sort then leaves
/// as it is. The card's default language is found as calcard finds it; when calcard would add a
/// `LANGUAGE` property for it, it is added here instead, so the order stays sorted.
fn order_as_calcard_will(vcard: &mut VCard) {
    let (default, add) = calcard_default_language(vcard);
    if add && let Some(lang) = &default {
        vcard.entries.push(VCardEntry::new(VCardProperty::Language).with_value(lang.clone()));
    }
    vcard.entries.sort_by_key(|entry| {
        let lang = entry.language();
        let weight = u32::from(lang.is_some() && default.as_deref() != lang);
        match &entry.name {
            VCardProperty::Birthplace | VCardProperty::Deathplace | VCardProperty::Role => weight + 2,
            VCardProperty::Other(name) if name.eq_ignore_ascii_case("X-ABLabel") => weight + 3,
            _ => weight,
        }
    });
}

/// The card's default language as calcard's conversion decides it: the `LANGUAGE` property's,
/// else the language most of the card's properties carry, when they outnumber the properties of
/// the same names without one. `true` when calcard would add it as a property.
fn calcard_default_language(vcard: &VCard) -> (Option<String>, bool) {
    let mut explicit = None;
    let mut counts: Vec<(String, usize)> = Vec::new();
    let mut first = None;
    let mut total = 0;
    let mut langful: Vec<&VCardProperty> = Vec::new();
    for entry in &vcard.entries {
        if let Some(lang) = entry.language() {
            let lower = lang.to_ascii_lowercase();
            match counts.iter_mut().find(|(l, _)| *l == lower) {
                Some((_, n)) => *n += 1,
                None => counts.push((lower, 1)),
            }
            first.get_or_insert(lang);
            total += 1;
            if !langful.contains(&&entry.name) {
                langful.push(&entry.name);
            }
        }
        if entry.name == VCardProperty::Language
            && let Some(VCardValue::Text(lang)) = entry.values.first()
        {
            explicit = Some(lang.to_ascii_lowercase());
        }
    }
    if explicit.is_some() {
        return (explicit, false);
    }
    let (Some(min), Some((lang, max))) =
        (counts.iter().map(|(_, n)| *n).min(), counts.iter().max_by_key(|(_, n)| *n).cloned())
    else {
        return (None, false);
    };
    let without = vcard.entries.iter().filter(|e| e.language().is_none() && langful.contains(&&e.name)).count();
    if total < 2 || max <= without {
        return (None, false);
    }
    let lang = if max == min { first.map(str::to_ascii_lowercase).unwrap_or(lang) } else { lang };
    (Some(lang), true)
}

/// Properties a card holds at most once (RFC 6350), unless its instances are alternatives of
/// one another (the same `ALTID`). FN and GRAMGENDER may repeat in RFC 6350 and 9554, but
/// JSContact holds one full name and one grammatical gender (as does every client's list): a
/// second one that is not an alternative is a repeat.
const SINGULAR: [(VCardProperty, &str); 9] = [
    (VCardProperty::Uid, "UID"),
    (VCardProperty::Fn, "FN"),
    (VCardProperty::Gramgender, "GRAMGENDER"),
    (VCardProperty::Created, "CREATED"),
    (VCardProperty::Language, "LANGUAGE"),
    (VCardProperty::N, "N"),
    (VCardProperty::Kind, "KIND"),
    (VCardProperty::Rev, "REV"),
    (VCardProperty::Prodid, "PRODID"),
];

/// Keeps the first of each [`SINGULAR`] property, and one alternative of it (the same `ALTID` and
/// another `LANGUAGE`), and reports the others. A repeat would
/// travel as an unknown property and be written back beside the first: two UIDs, of which the
/// next reader may keep either, so the card would change on every round trip. The same holds
/// for a second Apple label (`X-ABLabel`) in one group: the first is kept.
fn drop_repeated_singulars(vcard: &mut VCard) -> Vec<String> {
    let param = |entry: &VCardEntry, name: VCardParameterName| {
        entry.params.iter().find(|p| p.name == name).map(|p| match &p.value {
            VCardParameterValue::Text(text) => text.to_lowercase(),
            other => format!("{other:?}").to_lowercase(),
        })
    };
    // Per property: the ALTID of the first instance kept, and the languages kept under it.
    type Form = Option<String>;
    let mut kept: [Option<(Option<String>, Vec<Form>)>; SINGULAR.len()] = Default::default();
    let mut dropped = Vec::new();
    // Groups (`item1.`) that have their Apple label already.
    let mut labelled: Vec<String> = Vec::new();
    vcard.entries.retain(|entry| {
        if let (VCardProperty::Other(name), Some(group)) = (&entry.name, &entry.group)
            && name.eq_ignore_ascii_case("X-ABLabel")
        {
            let group = group.to_ascii_lowercase();
            if labelled.contains(&group) {
                dropped.push(format!("a second X-ABLabel of {group} was left out: a group has one label"));
                return false;
            }
            labelled.push(group);
            return true;
        }
        let Some(at) = SINGULAR.iter().position(|(p, _)| *p == entry.name) else { return true };
        let altid = param(entry, VCardParameterName::Altid);
        // One form per language: calcard converts the first N of a language (plain or phonetic)
        // into the name and leaves a second one as an unknown property, which a write then puts
        // beside the converted one, and the next read may convert either: a second form in the
        // same language (another phonetic system, or plain beside phonetic) is a repeat.
        let form = param(entry, VCardParameterName::Language);
        match &mut kept[at] {
            None => {
                kept[at] = Some((altid, vec![form]));
                true
            }
            // An alternative names its language (calcard keeps it as a localization only then).
            Some((first, forms)) if first.is_some() && *first == altid && form.is_some() && !forms.contains(&form) => {
                // calcard converts one alternative and leaves a third form unknown; a write puts
                // that one first and the next read converts it instead (fuzzing): one is kept.
                if forms.len() > 1 {
                    dropped.push(format!("another {} alternative was left out: a card keeps one", SINGULAR[at].1));
                    return false;
                }
                forms.push(form);
                true
            }
            Some(_) => {
                dropped.push(format!("a second {} was left out: a card has one", SINGULAR[at].1));
                false
            }
        }
    });
    dropped
}

/// Leaves out, and reports, the second form of a [`SINGULAR`] property when one form has no
/// language and the other is in the card's default language: calcard treats a form in the
/// default language as one without a language, converts the first, and leaves the second as an
/// unknown property, which a write puts first and the next read converts instead. The default
/// may be inferred (the language most properties carry), and leaving a form out can change it,
/// so this repeats until no such pair is left (fuzzing: a card whose address was in Cantonese
/// only, written beside a plain and a Cantonese name, read back with Cantonese as its default).
fn drop_forms_in_the_default_language(vcard: &mut VCard) -> Vec<String> {
    let mut dropped = Vec::new();
    loop {
        let (Some(default), _) = calcard_default_language(vcard) else { break };
        let plain = |lang: Option<&str>| lang.is_none_or(|l| l.eq_ignore_ascii_case(&default));
        let twin = SINGULAR.iter().find_map(|(property, label)| {
            let mut forms = vcard.entries.iter().enumerate().filter(|(_, e)| e.name == *property);
            let (_, first) = forms.next()?;
            let (at, second) = forms.next()?;
            (plain(first.language()) && plain(second.language())).then_some((at, *label))
        });
        let Some((at, label)) = twin else { break };
        vcard.entries.remove(at);
        dropped.push(format!("a second {label} was left out: a card has one in its default language"));
    }
    dropped
}

/// Whether `name` is a vCard property or parameter name (RFC 6350: letters, digits and `-`; `_`
/// too, which some exporters put in their `X-` names).
fn is_vcard_name(name: &str) -> bool {
    !name.is_empty() && name.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
}

/// Leaves out properties and parameters whose names are not vCard names, and reports them.
/// calcard reads a backslash in a name as an escape and writes the name back as it read it, so
/// `T\\EL` lost a level of backslashes on every pass until it became a phone (fuzzing): such a
/// name has no stable meaning to keep.
fn drop_invalid_names(vcard: &mut VCard) -> Vec<String> {
    let mut dropped = Vec::new();
    vcard.entries.retain(|entry| {
        let valid = is_vcard_name(entry.name.as_str());
        if !valid {
            dropped.push(format!(
                "a property named {:?} was left out: not a vCard property name",
                clip(entry.name.as_str())
            ));
        }
        valid
    });
    for entry in &mut vcard.entries {
        entry.params.retain(|p| {
            let valid = is_vcard_name(p.name.as_str());
            if !valid {
                dropped.push(format!(
                    "a parameter named {:?} of {} was left out: not a vCard parameter name",
                    clip(p.name.as_str()),
                    entry.name.as_str()
                ));
            }
            valid
        });
    }
    dropped
}

/// Whether `tag` has the shape of a language tag (RFC 5646: letters and digits in subtags joined
/// by `-`).
fn is_language_tag(tag: &str) -> bool {
    !tag.is_empty() && tag.split('-').all(|sub| !sub.is_empty() && sub.bytes().all(|b| b.is_ascii_alphanumeric()))
}

/// Leaves out a `LANGUAGE` parameter or property that is not a language tag, and reports it. A
/// language names a localization, whose key calcard reads as a JSON pointer: `//yue` lost a
/// slash on every pass (fuzzing).
fn drop_invalid_languages(vcard: &mut VCard) -> Vec<String> {
    let mut dropped = Vec::new();
    vcard.entries.retain(|entry| {
        let invalid = entry.name == VCardProperty::Language
            && entry.values.iter().any(|v| !matches!(v, VCardValue::Text(t) if is_language_tag(t)));
        if invalid {
            dropped.push("the LANGUAGE property was left out: not a language tag".to_string());
        }
        !invalid
    });
    for entry in &mut vcard.entries {
        entry.params.retain(|p| {
            let invalid = p.name == VCardParameterName::Language
                && !matches!(&p.value, VCardParameterValue::Text(t) if is_language_tag(t));
            if invalid {
                dropped.push(format!(
                    "the LANGUAGE parameter of {} was left out: not a language tag",
                    entry.name.as_str()
                ));
            }
            !invalid
        });
    }
    dropped
}

/// Leaves out a `PHONETIC` parameter that names none of RFC 9554's four systems, and reports it:
/// calcard keeps such a value as text, whose case then changed between passes (fuzzing).
fn drop_unknown_phonetic_systems(vcard: &mut VCard) -> Vec<String> {
    let mut dropped = Vec::new();
    for entry in &mut vcard.entries {
        entry.params.retain(|p| {
            let unknown = p.name == VCardParameterName::Phonetic && matches!(p.value, VCardParameterValue::Text(_));
            if unknown {
                dropped.push(format!(
                    "the PHONETIC parameter of {} was left out: not ipa, jyut, piny or script",
                    entry.name.as_str()
                ));
            }
            !unknown
        });
    }
    dropped
}

/// Keeps the first of a parameter given twice on one property (`LANGUAGE=en;...;LANGUAGE=yue`),
/// and reports the others. calcard keeps both as one list, which it writes back in the other
/// order, so the next read took the other language (fuzzing). `TYPE` and `PID` are lists: given
/// twice, their values add up.
fn drop_repeated_parameters(vcard: &mut VCard) -> Vec<String> {
    let mut dropped = Vec::new();
    for entry in &mut vcard.entries {
        let mut seen: Vec<String> = Vec::new();
        entry.params.retain(|p| {
            if matches!(p.name, VCardParameterName::Type | VCardParameterName::Pid) {
                return true;
            }
            let name = p.name.as_str().to_ascii_uppercase();
            if seen.contains(&name) {
                dropped.push(format!(
                    "a second {name} parameter of {} was left out: the first is kept",
                    entry.name.as_str()
                ));
                return false;
            }
            seen.push(name);
            true
        });
    }
    dropped
}

fn clip(text: &str) -> String {
    let mut out: String = text.chars().take(80).collect();
    if out.len() < text.len() {
        out.push('…');
    }
    out
}

/// What an address-like property is for (its types, 2.1's bare tokens included, `pref` left
/// out), to pair a `LABEL` with its `ADR`.
fn purposes(entry: &VCardEntry) -> Vec<String> {
    let mut out: Vec<String> = entry
        .params
        .iter()
        .filter_map(|p| match (&p.name, &p.value) {
            (VCardParameterName::Type, VCardParameterValue::Type(t)) => Some(format!("{t:?}").to_lowercase()),
            (VCardParameterName::Type, VCardParameterValue::Text(t)) => Some(t.to_lowercase()),
            (VCardParameterName::Other(name), VCardParameterValue::Text(t)) if t.is_empty() => {
                Some(name.to_lowercase())
            }
            (VCardParameterName::Other(name), VCardParameterValue::Null) => Some(name.to_lowercase()),
            _ => None,
        })
        .filter(|t| t != "pref")
        .collect();
    out.sort();
    out.dedup();
    out
}

/// 2.1 and 3.0 give an address's printed form as a `LABEL` property beside its `ADR` (paired by
/// their types); 4.0 has no such property, only the `ADR`'s `LABEL` parameter, which is the
/// address's full text in the record. A `LABEL` is moved onto the first `ADR` of the same types
/// that has none, so a 4.0 export is valid 4.0, and a 3.0 export writes it back as a property
/// ([`label_as_property`]). A `LABEL` with no such `ADR` is carried as it is.
fn labels_onto_addresses(vcard: &mut VCard) {
    let is_label = |e: &VCardEntry| matches!(&e.name, VCardProperty::Other(n) if n.eq_ignore_ascii_case("LABEL"));
    let mut i = 0;
    while i < vcard.entries.len() {
        let entry = &vcard.entries[i];
        let text = match entry.values.as_slice() {
            [VCardValue::Text(text)] if is_label(entry) && !text.trim().is_empty() => text.clone(),
            _ => {
                i += 1;
                continue;
            }
        };
        let want = purposes(entry);
        let target = vcard.entries.iter().position(|e| {
            e.name == VCardProperty::Adr
                && !e.params.iter().any(|p| p.name == VCardParameterName::Label)
                && purposes(e) == want
        });
        match target {
            Some(at) => {
                vcard.entries[at].params.push(VCardParameter::label(text));
                vcard.entries.remove(i);
            }
            None => i += 1,
        }
    }
}

/// 3.0 has no `LABEL` parameter: an address's full text is written as a `LABEL` property of the
/// address's types, after it.
fn label_as_property(vcard: &mut VCard) {
    let mut out = Vec::with_capacity(vcard.entries.len());
    for mut entry in std::mem::take(&mut vcard.entries) {
        let label = (entry.name == VCardProperty::Adr)
            .then(|| entry.params.iter().position(|p| p.name == VCardParameterName::Label))
            .flatten()
            .map(|at| entry.params.remove(at));
        let types: Vec<VCardParameter> =
            entry.params.iter().filter(|p| p.name == VCardParameterName::Type).cloned().collect();
        out.push(entry);
        if let Some(VCardParameter { value: VCardParameterValue::Text(text), .. }) = label {
            let mut property = VCardEntry::new(VCardProperty::Other("LABEL".into())).with_value(text);
            property.params = types;
            out.push(property);
        }
    }
    vcard.entries = out;
}

/// A line break is `\n` in the record: 2.1's quoted-printable values hold `\r\n`, which a
/// vCard writer cannot escape (calcard wrote `\r` as a backslash and an `r`, so the text came
/// back with stray letters).
fn one_line_break(value: &mut Value) {
    match value {
        Value::String(text) if text.contains('\r') => *text = text.replace("\r\n", "\n").replace('\r', "\n"),
        Value::Array(list) => list.iter_mut().for_each(one_line_break),
        Value::Object(map) => map.values_mut().for_each(one_line_break),
        _ => {}
    }
}

/// Apple writes a year-less date as year 1604 with `X-APPLE-OMIT-YEAR=1604`: the year is
/// dropped and the parameter forgotten.
fn apple_omit_year_in(js: &mut Value) {
    let Some(Value::Object(converted)) = js.pointer_mut("/vCard/convertedProperties") else { return };
    let mut omitted = Vec::new();
    converted.retain(|pointer, entry| {
        let Some(params) = entry.get_mut("parameters").and_then(Value::as_object_mut) else { return true };
        let Some(year) = params.remove("x-apple-omit-year") else { return true };
        omitted.push((pointer.clone(), year));
        !params.is_empty() || entry.as_object().is_some_and(|e| e.len() > 1)
    });
    for (pointer, year) in omitted {
        let year: Option<i64> = year.as_str().and_then(|y| y.parse().ok()).or_else(|| year.as_i64());
        let Some(date) = js.pointer_mut(&format!("/{pointer}")) else { continue };
        if date.get("year").and_then(Value::as_i64) == year
            && let Some(m) = date.as_object_mut()
        {
            m.remove("year");
        }
    }
}

/// Why a record could not be written as a vCard. Never silent: an export that met one would
/// otherwise send an empty card in the person's place.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WriteError(pub String);

impl std::fmt::Display for WriteError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "the card could not be written as a vCard: {}", self.0)
    }
}

impl std::error::Error for WriteError {}

/// The record as one vCard of `version`, CRLF line ends, folded at 75 octets. Photos given as
/// `data:` URIs in the card's `media` are embedded.
pub fn write(record: &NeutralRecord, version: Version) -> Result<String, WriteError> {
    let js = jscontact::from_neutral(record);
    let mut vcard = JSContact::<String, String>::parse(&jscontact::to_text_in_id_order(&js))
        .map_err(|e| WriteError(format!("{e:?}")))?
        .into_vcard()
        .ok_or_else(|| WriteError("the card is not a JSContact object".into()))?;
    tidy(&mut vcard, version);
    time_zone_names(&mut vcard, record, version);
    if version == Version::V3 {
        label_as_property(&mut vcard);
    }
    let mut out = String::new();
    let v = if version == Version::V3 { VCardVersion::V3_0 } else { VCardVersion::V4_0 };
    vcard.write_to(&mut out, v).map_err(|e| WriteError(e.to_string()))?;
    if version == Version::V4 {
        out = out.replace(";base64\\,", ";base64,");
    }
    Ok(out)
}

/// calcard writes a `TZ` named by its zone (`Europe/Paris`) as the zone's current offset, which
/// loses the zone (and its summer time). The card's own names are written back as text; an
/// `Etc/GMT-1` is what reading `+01:00` gave, and stays an offset. The `TZ` properties come in
/// the order of the addresses that hold only a time zone (as a `TZ` property reads).
fn time_zone_names(vcard: &mut VCard, record: &NeutralRecord, version: Version) {
    let mut names = record
        .card
        .addresses
        .iter()
        .filter(|a| a.components.is_empty() && a.full.is_none())
        .filter_map(|a| a.extra.get("timeZone").and_then(Value::as_str));
    for entry in vcard.entries.iter_mut().filter(|e| e.name == VCardProperty::Tz) {
        let Some(name) = names.next() else { break };
        if name.starts_with("Etc/") || !name.contains('/') {
            continue;
        }
        entry.values = vec![VCardValue::Text(name.to_string())];
        entry.params.retain(|p| p.name != VCardParameterName::Value);
        if version == Version::V3 {
            entry.params.push(VCardParameter {
                name: VCardParameterName::Value,
                value: VCardParameterValue::ValueType(calcard::vcard::VCardValueType::Text),
            });
        }
    }
}

/// Removes calcard's bookkeeping parameters, cuts `N` and `ADR` to their classic components for
/// 3.0 (4.0 keeps RFC 9554's extended ones), and writes a year-less date Apple's way in 3.0.
fn tidy(vcard: &mut VCard, version: Version) {
    for entry in &mut vcard.entries {
        entry.params.retain(|p| !matches!(p.name, VCardParameterName::PropId | VCardParameterName::Jscomps));
        redundant_extended_address(entry);
        if version == Version::V3 {
            classic_components(entry);
            apple_year(entry);
            pref_as_type(entry);
        }
    }
}

fn joined(value: &VCardValue) -> String {
    match value {
        VCardValue::Text(t) => t.clone(),
        VCardValue::Component(parts) => parts.join(","),
        _ => String::new(),
    }
}

/// calcard repeats an address's street in RFC 9554's extended components even when nothing
/// else is there; such an `ADR` is written in its classic seven components, which every client
/// reads and which read back to the same address.
fn redundant_extended_address(entry: &mut VCardEntry) {
    if entry.name != VCardProperty::Adr || entry.values.len() <= 7 {
        return;
    }
    let classic: Vec<String> = entry.values[..7].iter().map(joined).collect();
    if entry.values[7..].iter().map(joined).all(|v| v.is_empty() || classic.contains(&v)) {
        entry.values.truncate(7);
    }
}

/// 3.0 has no `PREF` parameter: the most preferred entry (`PREF=1`) says `TYPE=pref`. Other
/// ranks stay as `PREF=n`, which 3.0 readers ignore and this one reads back.
fn pref_as_type(entry: &mut VCardEntry) {
    let before = entry.params.len();
    entry.params.retain(|p| {
        p.name != VCardParameterName::Pref
            || !matches!(&p.value, VCardParameterValue::Integer(1))
                && !matches!(&p.value, VCardParameterValue::Text(t) if t.trim() == "1")
    });
    if entry.params.len() != before {
        entry.params.push(VCardParameter {
            name: VCardParameterName::Type,
            value: calcard::vcard::VCardParameterValue::Text("pref".into()),
        });
    }
}

fn classic_components(entry: &mut VCardEntry) {
    let keep = match entry.name {
        VCardProperty::N => 5,
        VCardProperty::Adr => 7,
        _ => return,
    };
    entry.values.truncate(keep);
}

fn apple_year(entry: &mut VCardEntry) {
    if !matches!(entry.name, VCardProperty::Bday | VCardProperty::Anniversary) {
        return;
    }
    let mut changed = false;
    for value in &mut entry.values {
        if let VCardValue::PartialDateTime(PartialDateTime {
            year: year @ None, month: Some(_), day: Some(_), ..
        }) = value
        {
            *year = Some(APPLE_NO_YEAR);
            changed = true;
        }
    }
    if changed {
        entry.params.push(VCardParameter {
            name: VCardParameterName::Other("X-APPLE-OMIT-YEAR".into()),
            value: calcard::vcard::VCardParameterValue::Text(APPLE_NO_YEAR.to_string()),
        });
    }
}

/// A photo carried inline in a card.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Photo {
    pub media_type: String,
    pub bytes: Vec<u8>,
}

fn decode_data_uri(uri: &str) -> Option<Photo> {
    let rest = uri.strip_prefix("data:")?;
    let (meta, data) = rest.split_once(',')?;
    let meta = meta.trim_end_matches('\\');
    let (media_type, encoding) = meta.rsplit_once(';').unwrap_or((meta, ""));
    if !encoding.eq_ignore_ascii_case("base64") {
        return None;
    }
    let clean: String = data.chars().filter(|c| !c.is_whitespace()).collect();
    let bytes = base64::engine::general_purpose::STANDARD
        .decode(clean.trim_end_matches('='))
        .ok()
        .or_else(|| base64::engine::general_purpose::STANDARD_NO_PAD.decode(clean.trim_end_matches('=')).ok())?;
    let media_type =
        if media_type.is_empty() { sniff(&bytes).unwrap_or("application/octet-stream") } else { media_type };
    Some(Photo { media_type: media_type.to_lowercase(), bytes })
}

/// The image type of `bytes` by their magic numbers.
pub fn sniff(bytes: &[u8]) -> Option<&'static str> {
    match bytes {
        [0xFF, 0xD8, 0xFF, ..] => Some("image/jpeg"),
        [0x89, b'P', b'N', b'G', ..] => Some("image/png"),
        [b'G', b'I', b'F', b'8', ..] => Some("image/gif"),
        [b'R', b'I', b'F', b'F', _, _, _, _, b'W', b'E', b'B', b'P', ..] => Some("image/webp"),
        _ => None,
    }
}

/// Takes the first inline (`data:` URI) photo out of the card's `media`, so it can be stored as
/// a file rather than inside the record. Photo URLs stay in the card, unfetched.
pub fn take_photo(card: &mut Card) -> Option<Photo> {
    let Some(Value::Array(media)) = card.extra.get_mut("media") else { return None };
    let pos = media.iter().position(|m| {
        m.get("kind").and_then(Value::as_str).is_none_or(|k| k.eq_ignore_ascii_case("photo"))
            && m.get("uri").and_then(Value::as_str).is_some_and(|u| u.starts_with("data:"))
    })?;
    let entry = media.remove(pos);
    if media.is_empty() {
        card.extra.remove("media");
    }
    decode_data_uri(entry.get("uri")?.as_str()?)
}

/// Puts a photo into the card's `media` as a `data:` URI (first, replacing inline photos).
pub fn put_photo(card: &mut Card, photo: &Photo) {
    let uri =
        format!("data:{};base64,{}", photo.media_type, base64::engine::general_purpose::STANDARD.encode(&photo.bytes));
    let media = card.extra.entry("media".to_string()).or_insert_with(|| Value::Array(Vec::new()));
    if let Value::Array(list) = media {
        list.retain(|m| !m.get("uri").and_then(Value::as_str).is_some_and(|u| u.starts_with("data:")));
        list.insert(0, json!({"id": "photo", "kind": "photo", "uri": uri}));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_large_file_parses_on_several_threads_in_file_order() {
        let mut file = String::new();
        let mut lines = Vec::new();
        let count = CARDS_PER_THREAD * 3 + 7;
        for n in 0..count {
            lines.push(file.matches("\r\n").count() + 1);
            if n % 100 == 42 {
                file.push_str("BEGIN:VCARD\r\nVERSION:3.0\r\nN:;;;;\r\nEND:VCARD\r\n");
            } else {
                file.push_str(&format!(
                    "BEGIN:VCARD\r\nVERSION:3.0\r\nFN:Person {n}\r\nN:{n};Person;;;\r\nEND:VCARD\r\n"
                ));
            }
        }
        let items = parse_file(file.as_bytes());
        assert_eq!(items.len(), count);
        for (n, item) in items.iter().enumerate() {
            match item {
                Item::Record { record, line, .. } => {
                    assert_eq!(*line, lines[n]);
                    let full = record.card.name.as_ref().and_then(|name| name.full.clone());
                    assert_eq!(full, Some(format!("Person {n}")));
                }
                Item::Problem(p) => {
                    assert_eq!(n % 100, 42, "only the empty cards fail: {}", p.reason);
                    assert_eq!((p.index, p.line), (n, lines[n]));
                }
            }
        }
    }

    fn records(text: &[u8]) -> Vec<NeutralRecord> {
        parse_file(text)
            .into_iter()
            .filter_map(|i| match i {
                Item::Record { record, .. } => Some(*record),
                Item::Problem(_) => None,
            })
            .collect()
    }

    #[test]
    fn a_broken_card_is_reported_with_its_line_and_the_rest_imports() {
        let file = b"BEGIN:VCARD\r\nVERSION:3.0\r\nFN:Ann\r\nEND:VCARD\r\nBEGIN:VCARD\r\nVERSION:3.0\r\nEND:VCARD\r\nBEGIN:VCARD\r\nVERSION:4.0\r\nFN:Bo\r\nEND:VCARD\r\nBEGIN:VCARD\r\nFN:Cut off\r\n";
        let items = parse_file(file);
        assert_eq!(items.len(), 4);
        assert!(matches!(&items[0], Item::Record { line: 1, .. }));
        assert!(matches!(&items[1], Item::Problem(p) if p.line == 5 && p.reason.contains("card.name")));
        assert!(matches!(&items[2], Item::Record { line: 8, .. }));
        assert!(matches!(&items[3], Item::Problem(p) if p.line == 12 && p.reason.contains("END:VCARD")));
    }

    #[test]
    fn folding_inside_a_utf8_sequence_and_windows_1252() {
        let folded = b"BEGIN:VCARD\r\nVERSION:3.0\r\nFN:Jos\xc3\r\n \xa9 Luis\r\nEND:VCARD\r\n";
        assert_eq!(records(folded)[0].card.name.as_ref().unwrap().full.as_deref(), Some("Jos\u{e9} Luis"));
        let latin = b"BEGIN:VCARD\r\nVERSION:3.0\r\nFN:Jos\xe9\r\nEND:VCARD\r\n";
        assert_eq!(records(latin)[0].card.name.as_ref().unwrap().full.as_deref(), Some("Jos\u{e9}"));
    }

    #[test]
    fn apple_year_less_birthdays_both_ways() {
        let apple = b"BEGIN:VCARD\r\nVERSION:3.0\r\nFN:Ann\r\nBDAY;X-APPLE-OMIT-YEAR=1604:1604-07-14\r\nEND:VCARD\r\n";
        let record = records(apple).remove(0);
        let p = record.card.anniversaries[0].date.partial.unwrap();
        assert_eq!((p.year, p.month, p.day), (None, Some(7), Some(14)));
        let v3 = write(&record, Version::V3).expect("written");
        assert!(v3.contains("BDAY;X-APPLE-OMIT-YEAR=1604:1604-07-14\r\n"), "{v3}");
        let v4 = write(&record, Version::V4).expect("written");
        assert!(v4.contains("BDAY:--0714\r\n"), "{v4}");
    }

    #[test]
    fn inline_photos_leave_the_card_and_come_back_with_a_bare_comma() {
        let png = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg==";
        let file =
            format!("BEGIN:VCARD\r\nVERSION:4.0\r\nFN:Ann\r\nPHOTO:data:image/png;base64,{png}\r\nEND:VCARD\r\n");
        let mut record = records(file.as_bytes()).remove(0);
        let photo = take_photo(&mut record.card).expect("photo");
        assert_eq!(photo.media_type, "image/png");
        assert_eq!(sniff(&photo.bytes), Some("image/png"));
        assert!(!record.card.extra.contains_key("media"));
        put_photo(&mut record.card, &photo);
        let v4 = write(&record, Version::V4).expect("written");
        let unfolded = String::from_utf8(unfold(v4.as_bytes())).unwrap();
        assert!(unfolded.contains(&format!("PHOTO:data:image/png;base64,{png}")), "{v4}");
        let v3 = write(&record, Version::V3).expect("written");
        let unfolded = String::from_utf8(unfold(v3.as_bytes())).unwrap();
        assert!(unfolded.contains("PHOTO;ENCODING=b;TYPE=PNG:iVBOR"), "{v3}");
        assert!(!v3.contains("PROP-ID") && !v3.contains("JSCOMPS"));
    }
}
