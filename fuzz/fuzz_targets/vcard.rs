//! vCard files from anyone: parsing any bytes gives one item per card (a record or a problem
//! with its line), never a panic; a parsed record writes as 4.0 and as 3.0 (a write never fails
//! or comes out empty) and reads back as a record, and a second write/read changes nothing (the
//! first pass normalises, later passes are fixed points). The same bytes read as a stream, in
//! pieces and batches of sizes the input chooses, give the items the whole file gives.
#![no_main]

use libfuzzer_sys::fuzz_target;
use mycorrhizal_codecs::record::{Item, NeutralRecord};
use mycorrhizal_codecs::vcard::{self, Version};

fn reread(record: &NeutralRecord, version: Version) -> NeutralRecord {
    let text = vcard::write(record, version).expect("a parsed card writes");
    match vcard::parse_file(text.as_bytes()).into_iter().next() {
        Some(Item::Record { record, .. }) => *record,
        other => panic!("a written card reads back as a card: {other:?}\n{text}"),
    }
}

/// A reader giving at most `step` bytes a call, as an upload arrives.
struct Pieces<'a> {
    bytes: &'a [u8],
    step: usize,
}

impl std::io::Read for Pieces<'_> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let n = self.step.min(buf.len()).min(self.bytes.len());
        buf[..n].copy_from_slice(&self.bytes[..n]);
        self.bytes = &self.bytes[n..];
        Ok(n)
    }
}

fn streamed(data: &[u8], step: usize, batch: usize) -> Vec<Item> {
    let mut cards = vcard::Cards::new(Pieces { bytes: data, step });
    let mut out = Vec::new();
    loop {
        let next = cards.next_cards(batch).expect("reading from memory");
        if next.is_empty() {
            break;
        }
        out.extend(vcard::parse_cards(&next));
    }
    out.extend(cards.nothing_found());
    out
}

fuzz_target!(|data: &[u8]| {
    let whole = vcard::parse_file(data);
    let (step, batch) = data.first().map_or((1, 1), |b| (usize::from(b % 13) + 1, usize::from(b / 13 % 5) + 1));
    assert_eq!(streamed(data, step, batch), whole, "a stream gives what the whole file gives");
    for item in whole {
        if let Item::Record { record, .. } = item {
            for version in [Version::V4, Version::V3] {
                let once = reread(&record, version);
                let twice = reread(&once, version);
                assert_eq!(twice.card, once.card, "write/read is stable");
            }
        }
    }
});
