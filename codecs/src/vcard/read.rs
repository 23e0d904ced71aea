//! Reading a vCard file: split into cards (nesting counted, lines unfolded on bytes), each card
//! repaired (`repair.rs`), converted through JSContact to the neutral record, and its few
//! post-conversion fixes (Apple's year-less dates, one line break per line).

use super::*;

/// One card's bytes in a file and the line it starts on.
pub(super) struct Block<'a> {
    /// Its position among the file's cards.
    pub(super) index: usize,
    pub(super) line: usize,
    pub(super) bytes: &'a [u8],
    pub(super) complete: bool,
}

pub(super) fn trim_line(line: &[u8]) -> &[u8] {
    let line = line.strip_prefix(b"\xef\xbb\xbf").unwrap_or(line);
    let start = line.iter().position(|b| !b.is_ascii_whitespace()).unwrap_or(line.len());
    let end = line.iter().rposition(|b| !b.is_ascii_whitespace()).map_or(start, |e| e + 1);
    &line[start..end]
}

/// Splits a file into `BEGIN:VCARD` ... `END:VCARD` blocks, nesting counted (2.1's `AGENT` may
/// embed a card). Text outside any card is ignored. Inside a card, a line that starts with a
/// space or tab continues the line before it (folding), so it is never a marker: a long value
/// holding the text `BEGIN:VCARD` can be folded right before it.
pub(super) fn blocks(bytes: &[u8]) -> Vec<Block<'_>> {
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
                let index = out.len();
                out.push(Block { index, line: start.0, bytes: &bytes[start.1..offset + raw.len()], complete: true });
            }
        }
        offset += raw.len();
    }
    if depth > 0 {
        out.push(Block { index: out.len(), line: start.0, bytes: &bytes[start.1..], complete: false });
    }
    out
}

/// Removes folding (a line break followed by a space or tab) on bytes.
pub(super) fn unfold(bytes: &[u8]) -> Vec<u8> {
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
    let bytes = without_controls(crate::text::utf8_bytes(bytes));
    let found = blocks(&bytes);
    if found.is_empty() {
        return vec![Item::Problem(Problem { index: 0, line: 1, reason: "no BEGIN:VCARD found".into() })];
    }
    parse_blocks(&found)
}

/// `bytes` without the ASCII control characters no vCard line may hold (all but tab and the
/// line ends): a value read with one (a bell, a NUL) would be served with it, and break the
/// parser of the client that reads it. Copied only when there is one.
pub(super) fn without_controls(bytes: std::borrow::Cow<'_, [u8]>) -> std::borrow::Cow<'_, [u8]> {
    let control = |b: &u8| (*b < 0x20 && !matches!(*b, b'\t' | b'\r' | b'\n')) || *b == 0x7f;
    if !bytes.iter().any(control) {
        return bytes;
    }
    std::borrow::Cow::Owned(bytes.iter().copied().filter(|b| !control(b)).collect())
}

/// Cards per thread below which a file is parsed on the calling thread alone.
pub(super) const CARDS_PER_THREAD: usize = 256;

/// Parses the cards on up to four threads (the cards are independent), keeping their order.
pub(super) fn parse_blocks(found: &[Block<'_>]) -> Vec<Item> {
    // A file this small is parsed on one thread whatever the core count (`per_thread` is at
    // least `CARDS_PER_THREAD`), so the count is not asked: on Linux it reads the cgroup files,
    // which cost a CardDAV PUT (one card) more than a third of its parse.
    if found.len() <= CARDS_PER_THREAD {
        return found.iter().map(parse_block).collect();
    }
    let threads = std::thread::available_parallelism().map_or(1, |n| n.get()).clamp(1, 4);
    let per_thread = found.len().div_ceil(threads).max(CARDS_PER_THREAD);
    if per_thread >= found.len() {
        return found.iter().map(parse_block).collect();
    }
    std::thread::scope(|scope| {
        let parts: Vec<_> = found
            .chunks(per_thread)
            .map(|blocks| scope.spawn(move || blocks.iter().map(parse_block).collect::<Vec<_>>()))
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

pub(super) fn parse_block(block: &Block<'_>) -> Item {
    let index = block.index;
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
    offsets_with_minutes_as_text(&mut vcard);
    control_text_as_binary(&mut vcard);
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
pub(super) fn drop_unreadable_timestamps(record: &mut NeutralRecord) -> Vec<String> {
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

/// A line break is `\n` in the record: 2.1's quoted-printable values hold `\r\n`, which a
/// vCard writer cannot escape (calcard wrote `\r` as a backslash and an `r`, so the text came
/// back with stray letters).
pub(super) fn one_line_break(value: &mut Value) {
    match value {
        Value::String(text) if text.contains('\r') => *text = text.replace("\r\n", "\n").replace('\r', "\n"),
        Value::Array(list) => list.iter_mut().for_each(one_line_break),
        Value::Object(map) => map.values_mut().for_each(one_line_break),
        _ => {}
    }
}

/// Apple writes a year-less date as year 1604 with `X-APPLE-OMIT-YEAR=1604`: the year is
/// dropped and the parameter forgotten.
pub(super) fn apple_omit_year_in(js: &mut Value) {
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
