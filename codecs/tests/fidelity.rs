//! Export gives back what import read: every card of the exporter corpus
//! (`tests/fixtures/exporters`, written from the exporters' documented output and the RFCs'
//! examples) and of the exporter samples is read, written as vCard 4.0 and 3.0, and each
//! property instance of the original (its name and value, compared in a form both versions
//! share) must be in what was written; the written card reads back as the same card.

use std::collections::BTreeMap;

use mycorrhizal_codecs::record::{Item, NeutralRecord};
use mycorrhizal_codecs::vcard::{self, Version};

const CORPUS: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../tests/fixtures/exporters");
const SAMPLES: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/vcf");

/// One content line: group, upper-case name, parameters (upper-case names; a 2.1 bare token is
/// a `TYPE`), value as written.
#[derive(Debug, Clone)]
struct Line {
    group: String,
    name: String,
    params: Vec<(String, String)>,
    value: String,
}

fn unfold(text: &str) -> String {
    text.replace("\r\n", "\n").replace("\n ", "").replace("\n\t", "")
}

/// Splits `text` at `sep` outside double quotes and not escaped by a backslash.
fn split_unquoted(text: &str, sep: char) -> Vec<String> {
    let mut out = vec![String::new()];
    let (mut quoted, mut escaped) = (false, false);
    for c in text.chars() {
        if escaped {
            out.last_mut().expect("part").push(c);
            escaped = false;
            continue;
        }
        match c {
            '\\' => {
                escaped = true;
                out.last_mut().expect("part").push(c);
            }
            '"' => {
                quoted = !quoted;
                out.last_mut().expect("part").push(c);
            }
            c if c == sep && !quoted => out.push(String::new()),
            c => out.last_mut().expect("part").push(c),
        }
    }
    out
}

fn quoted_printable(text: &str) -> String {
    let bytes = text.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'=' && i + 2 < bytes.len() + 1 {
            if let Some(hex) = text.get(i + 1..i + 3)
                && let Ok(b) = u8::from_str_radix(hex, 16)
            {
                out.push(b);
                i += 3;
                continue;
            }
        }
        out.push(bytes[i]);
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// The cards of a file as lists of content lines (2.1 quoted-printable soft breaks joined and
/// decoded).
fn cards(text: &str) -> Vec<Vec<Line>> {
    let text = unfold(text);
    let mut physical: Vec<String> = Vec::new();
    let mut lines = text.lines();
    while let Some(line) = lines.next() {
        let mut line = line.to_string();
        if line.to_ascii_uppercase().contains("QUOTED-PRINTABLE") {
            while line.ends_with('=') {
                line.pop();
                match lines.next() {
                    Some(next) => line.push_str(next),
                    None => break,
                }
            }
        }
        physical.push(line);
    }
    let mut out = Vec::new();
    let mut card = Vec::new();
    let mut depth = 0;
    for raw in physical {
        let Some((head, value)) = split_head(&raw) else { continue };
        let parts = split_unquoted(&head, ';');
        let (group, name) = match parts[0].rsplit_once('.') {
            Some((g, n)) => (g.to_ascii_lowercase(), n.to_ascii_uppercase()),
            None => (String::new(), parts[0].to_ascii_uppercase()),
        };
        let params: Vec<(String, String)> = parts[1..]
            .iter()
            .flat_map(|p| match p.split_once('=') {
                Some((k, v)) => split_unquoted(v, ',')
                    .into_iter()
                    .map(|v| (k.to_ascii_uppercase(), v.trim_matches('"').to_string()))
                    .collect::<Vec<_>>(),
                None => vec![("TYPE".to_string(), p.clone())],
            })
            .collect();
        match (name.as_str(), value.to_ascii_uppercase().as_str()) {
            ("BEGIN", "VCARD") => {
                depth += 1;
                card = Vec::new();
            }
            ("END", "VCARD") => {
                depth -= 1;
                out.push(std::mem::take(&mut card));
            }
            _ if depth > 0 => {
                let qp = params.iter().any(|(k, v)| k == "ENCODING" && v.eq_ignore_ascii_case("QUOTED-PRINTABLE"));
                let value = if qp { quoted_printable(&value) } else { value };
                card.push(Line { group, name, params, value });
            }
            _ => {}
        }
    }
    out
}

/// The name-and-parameters part and the value of a content line (the first `:` outside quotes).
fn split_head(line: &str) -> Option<(String, String)> {
    let mut quoted = false;
    for (i, c) in line.char_indices() {
        match c {
            '"' => quoted = !quoted,
            ':' if !quoted => return Some((line[..i].to_string(), line[i + 1..].to_string())),
            _ => {}
        }
    }
    None
}

fn unescape(text: &str) -> String {
    let mut out = String::new();
    let mut chars = text.chars();
    while let Some(c) = chars.next() {
        if c == '\\' {
            match chars.next() {
                Some('n' | 'N') => out.push('\n'),
                Some(other) => out.push(other),
                None => {}
            }
        } else {
            out.push(c);
        }
    }
    out
}

fn squash(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ").to_lowercase()
}

fn digits(text: &str) -> String {
    text.chars().filter(char::is_ascii_digit).collect()
}

/// The comparable forms of one property instance: `(NAME, value)` pairs (a list property gives
/// one per item). Empty values say nothing and give none.
fn forms(line: &Line, card: &[Line]) -> Vec<(String, String)> {
    let param = |k: &str| line.params.iter().find(|(n, _)| n == k).map(|(_, v)| v.clone());
    let value = line.value.trim();
    let name = line.name.clone();
    let base64 = matches!(name.as_str(), "PHOTO" | "LOGO" | "SOUND" | "KEY")
        || value.starts_with("data:")
        || param("ENCODING").is_some_and(|e| matches!(e.to_ascii_lowercase().as_str(), "b" | "base64"));
    let one = |v: String| if v.is_empty() { Vec::new() } else { vec![(name.clone(), v)] };
    match name.as_str() {
        "VERSION" | "PRODID" => Vec::new(),
        "BDAY" | "ANNIVERSARY" | "DEATHDATE" | "X-ABDATE" | "X-EVOLUTION-ANNIVERSARY" => {
            let d = digits(value);
            if param("X-APPLE-OMIT-YEAR").is_some() || value.starts_with("--") {
                one(format!("--{}", &d[d.len().saturating_sub(4)..]))
            } else {
                one(d)
            }
        }
        "REV" | "CREATED" => one(digits(value)),
        "TEL" => one(value.trim_start_matches("tel:").chars().filter(|c| c.is_ascii_digit() || *c == '+').collect()),
        "GEO" => one(value.trim_start_matches("geo:").replace(';', ",")),
        "TZ" => one(value.replace(':', "").to_lowercase()),
        "N" | "ADR" | "ORG" | "GENDER" => {
            let mut parts: Vec<String> = split_unquoted(value, ';').iter().map(|p| squash(&unescape(p))).collect();
            while parts.last().is_some_and(String::is_empty) {
                parts.pop();
            }
            let mut out = one(parts.join(";"));
            if name == "ADR"
                && let Some(label) = param("LABEL")
            {
                out.push(("LABEL".into(), squash(&unescape(&label))));
            }
            out
        }
        "CATEGORIES" | "NICKNAME" => split_unquoted(value, ',')
            .iter()
            .map(|v| squash(&unescape(v)))
            .filter(|v| !v.is_empty())
            .map(|v| (name.clone(), v))
            .collect(),
        _ if base64 => {
            // Inline data: 2.1 `ENCODING=BASE64`, 3.0 `ENCODING=b`, 4.0 `data:` URIs.
            let value = unescape(value);
            let data = value.rsplit_once("base64,").map_or(value.as_str(), |(_, d)| d);
            one(data.chars().filter(|c| !c.is_whitespace()).collect::<String>().trim_end_matches('=').to_string())
        }
        "X-ABLABEL" => {
            // A label names its group's property: compared with that property's value.
            let sibling = card
                .iter()
                .find(|l| !line.group.is_empty() && l.group == line.group && l.name != "X-ABLABEL")
                .map(|l| forms(l, card).into_iter().next().map(|(n, v)| format!("{n}:{v}")).unwrap_or_default())
                .unwrap_or_default();
            one(format!("{} @ {sibling}", squash(&unescape(value))))
        }
        _ => one(squash(&unescape(value))),
    }
}

fn instances(card: &[Line]) -> BTreeMap<(String, String), usize> {
    let mut out = BTreeMap::new();
    for line in card {
        for form in forms(line, card) {
            *out.entry(form).or_insert(0) += 1;
        }
    }
    out
}

fn files() -> Vec<(String, String)> {
    let mut out = Vec::new();
    for dir in [CORPUS, SAMPLES] {
        let mut paths: Vec<_> = std::fs::read_dir(dir).expect("fixtures").flatten().map(|e| e.path()).collect();
        paths.sort();
        for path in paths.into_iter().filter(|p| p.extension().and_then(|e| e.to_str()) == Some("vcf")) {
            let text = String::from_utf8_lossy(&std::fs::read(&path).expect("read")).into_owned();
            out.push((path.file_name().and_then(|n| n.to_str()).unwrap_or("").to_string(), text));
        }
    }
    out
}

fn record_of(text: &str) -> NeutralRecord {
    match vcard::parse_file(text.as_bytes()).into_iter().next() {
        Some(Item::Record { record, .. }) => *record,
        other => panic!("a written card reads back as a card: {other:?}\n{text}"),
    }
}

#[test]
fn every_property_of_the_exporter_corpus_comes_back_in_3_0_and_4_0() {
    let mut missing = Vec::new();
    let mut changed = Vec::new();
    let (mut cards_checked, mut properties_checked) = (0, 0);
    for (file, text) in files() {
        let originals = cards(&text);
        let items = vcard::parse_file(text.as_bytes());
        assert_eq!(items.len(), originals.len(), "{file}: one item per card");
        for (n, (item, original)) in items.into_iter().zip(&originals).enumerate() {
            let record = match item {
                Item::Record { record, .. } => *record,
                Item::Problem(p) => panic!("{file} card {}: every card imports: {p:?}", n + 1),
            };
            let wanted = instances(original);
            for version in [Version::V4, Version::V3] {
                let written = vcard::write(&record, version).expect("writes");
                // 2.1 comes back as the version asked for: no quoted-printable, and in 4.0 no
                // `LABEL` property (4.0 has the `ADR` parameter only).
                let upper = written.to_uppercase();
                // No line carries a control character (binary goes back encoded).
                assert!(
                    !written.chars().any(|c| c.is_control() && !matches!(c, '\r' | '\n' | '\t')),
                    "{file} card {}: {written:?}",
                    n + 1
                );
                // A 3.0 card encodes a vendor property's binary as 3.0 does, not as a 4.0 URI.
                if version == Version::V3 {
                    assert!(
                        !upper.lines().any(|l| l.starts_with("X-") && l.contains(":DATA:")),
                        "{file} card {}: {written}",
                        n + 1
                    );
                }
                assert!(!upper.contains("QUOTED-PRINTABLE"), "{file} card {}: {written}", n + 1);
                if version == Version::V4 {
                    assert!(!upper.lines().any(|l| l.starts_with("LABEL")), "{file} card {}: {written}", n + 1);
                }
                let got = instances(&cards(&written).remove(0));
                for ((name, value), count) in &wanted {
                    // Google's system group holds every contact; it is not the person's tag
                    // (`jscontact::to_neutral` leaves it out on purpose).
                    if name == "CATEGORIES" && value == "mycontacts" {
                        continue;
                    }
                    let have = got.get(&(name.clone(), value.clone())).copied().unwrap_or(0);
                    if have < *count {
                        missing.push(format!("{file} card {} {version:?}: {name} {value:?}", n + 1));
                    }
                }
                properties_checked += wanted.values().sum::<usize>();
                if record_of(&written).card != record.card {
                    changed.push(format!("{file} card {} {version:?}", n + 1));
                }
            }
            cards_checked += 1;
        }
    }
    assert!(cards_checked >= 31, "{cards_checked} cards");
    assert!(missing.is_empty(), "{} of {properties_checked} missing:\n{}", missing.len(), missing.join("\n"));
    assert!(changed.is_empty(), "written cards that read back as another card: {changed:#?}");
}
