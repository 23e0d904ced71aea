//! What is repaired in a card before calcard converts it: names, languages and parameters that
//! would not survive a round trip, repeated singular properties, the order calcard's unstable sort
//! would change, and `LABEL`s joined to their addresses. Each repair reports what it left out.

use super::*;

/// calcard (0.3) moves a few properties to the end of the card before converting it (role,
/// birth and death places, Apple's `X-ABLabel`, and properties in a language other than the
/// card's), with an *unstable* sort: on a card of more than 20 properties, the others then
/// change places, and with them the order of the card's emails or phones and which group label
/// attaches where, so a card read, written and read again was not the same card. Sorting by the
/// same weight first, stably, hands calcard a card already in order, which its sort then leaves
/// as it is. The card's default language is found as calcard finds it; when calcard would add a
/// `LANGUAGE` property for it, it is added here instead, so the order stays sorted.
pub(super) fn order_as_calcard_will(vcard: &mut VCard) {
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
pub(super) fn calcard_default_language(vcard: &VCard) -> (Option<String>, bool) {
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
pub(super) const SINGULAR: [(VCardProperty, &str); 9] = [
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
pub(super) fn drop_repeated_singulars(vcard: &mut VCard) -> Vec<String> {
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
pub(super) fn drop_forms_in_the_default_language(vcard: &mut VCard) -> Vec<String> {
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
pub(super) fn is_vcard_name(name: &str) -> bool {
    !name.is_empty() && name.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
}

/// Leaves out properties and parameters whose names are not vCard names, and reports them.
/// calcard reads a backslash in a name as an escape and writes the name back as it read it, so
/// `T\\EL` lost a level of backslashes on every pass until it became a phone (fuzzing): such a
/// name has no stable meaning to keep.
pub(super) fn drop_invalid_names(vcard: &mut VCard) -> Vec<String> {
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
pub(super) fn is_language_tag(tag: &str) -> bool {
    !tag.is_empty() && tag.split('-').all(|sub| !sub.is_empty() && sub.bytes().all(|b| b.is_ascii_alphanumeric()))
}

/// Leaves out a `LANGUAGE` parameter or property that is not a language tag, and reports it. A
/// language names a localization, whose key calcard reads as a JSON pointer: `//yue` lost a
/// slash on every pass (fuzzing).
pub(super) fn drop_invalid_languages(vcard: &mut VCard) -> Vec<String> {
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
pub(super) fn drop_unknown_phonetic_systems(vcard: &mut VCard) -> Vec<String> {
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
pub(super) fn drop_repeated_parameters(vcard: &mut VCard) -> Vec<String> {
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

pub(super) fn clip(text: &str) -> String {
    let mut out: String = text.chars().take(80).collect();
    if out.len() < text.len() {
        out.push('…');
    }
    out
}

/// What an address-like property is for (its types, 2.1's bare tokens included, `pref` left
/// out), to pair a `LABEL` with its `ADR`.
pub(super) fn purposes(entry: &VCardEntry) -> Vec<String> {
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
pub(super) fn labels_onto_addresses(vcard: &mut VCard) {
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
pub(super) fn label_as_property(vcard: &mut VCard) {
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

/// calcard (0.3) reads a `TZ` offset as a whole-hour `Etc/GMT` zone, so `+05:30` (India) or
/// `+05:45` (Nepal) would lose its minutes. Such an offset is handed over as the text it is
/// (`+05:30`), which the record keeps as the address's time zone and a write gives back
/// unchanged; whole-hour offsets keep calcard's reading.
pub(super) fn offsets_with_minutes_as_text(vcard: &mut VCard) {
    for entry in vcard.entries.iter_mut().filter(|e| e.name == VCardProperty::Tz) {
        let text = match entry.values.as_slice() {
            [VCardValue::PartialDateTime(v)] if v.has_zone() && v.tz_minute.unwrap_or(0) != 0 => format!(
                "{}{:02}:{:02}",
                if v.tz_minus { '-' } else { '+' },
                v.tz_hour.unwrap_or(0),
                v.tz_minute.unwrap_or(0)
            ),
            _ => continue,
        };
        entry.values = vec![VCardValue::Text(text)];
        entry.params.retain(|p| p.name != VCardParameterName::Value);
    }
}

/// A vendor property sent base64-encoded whose bytes happen to be valid UTF-8 (calcard then
/// reads them as text) holds control characters no vCard line may carry; written back as text
/// they would break the card. Such a value is kept as the binary it was sent as, so a write
/// encodes it again (3.0's `ENCODING=b`, 4.0's `data:` URI).
pub(super) fn control_text_as_binary(vcard: &mut VCard) {
    for entry in vcard.entries.iter_mut().filter(|e| matches!(e.name, VCardProperty::Other(_))) {
        for value in &mut entry.values {
            if let VCardValue::Text(text) = value
                && text.chars().any(|c| c.is_control() && !matches!(c, '\t' | '\n' | '\r'))
            {
                let data = std::mem::take(text).into_bytes();
                *value = VCardValue::Binary(calcard::common::Data { content_type: None, data });
            }
        }
    }
}
