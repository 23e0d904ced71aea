//! vCard files from anyone: parsing any bytes gives one item per card (a record or a problem
//! with its line), never a panic; a parsed record writes as 4.0 and as 3.0 (a write never fails
//! or comes out empty) and reads back as a record, and a second write/read changes nothing (the
//! first pass normalises, later passes are fixed points).
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

fuzz_target!(|data: &[u8]| {
    for item in vcard::parse_file(data) {
        if let Item::Record { record, .. } = item {
            for version in [Version::V4, Version::V3] {
                let once = reread(&record, version);
                let twice = reread(&once, version);
                assert_eq!(twice.card, once.card, "write/read is stable");
            }
        }
    }
});
