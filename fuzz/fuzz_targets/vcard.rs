//! vCard files from anyone: parsing any bytes gives one item per card (a record or a problem
//! with its line), never a panic; a parsed record written as 4.0 or 3.0 reads back, and a second
//! write/read changes nothing (the first pass normalises, later passes are fixed points).
#![no_main]

use libfuzzer_sys::fuzz_target;
use mycorrhizal_codecs::record::Item;
use mycorrhizal_codecs::vcard::{self, Version};

fn reread(record: &mycorrhizal_codecs::record::NeutralRecord, version: Version) -> Option<mycorrhizal_codecs::record::NeutralRecord> {
    match vcard::parse_file(vcard::write(record, version).as_bytes()).into_iter().next()? {
        Item::Record { record, .. } => Some(*record),
        Item::Problem(_) => None,
    }
}

fuzz_target!(|data: &[u8]| {
    for item in vcard::parse_file(data) {
        if let Item::Record { record, .. } = item {
            for version in [Version::V4, Version::V3] {
                if let Some(once) = reread(&record, version) {
                    let twice = reread(&once, version).expect("a written card reads back");
                    assert_eq!(twice.card, once.card, "write/read is stable");
                }
            }
        }
    }
});
