//! JSContact files from anyone: any bytes give records or problems, never a panic; a record
//! written as JSContact reads back to the same record.
#![no_main]

use libfuzzer_sys::fuzz_target;
use mycorrhizal_codecs::jscontact;
use mycorrhizal_codecs::record::Item;

fuzz_target!(|data: &[u8]| {
    for item in jscontact::parse_file(data) {
        if let Item::Record { record, .. } = item {
            let out = serde_json::to_vec(&jscontact::from_neutral(&record)).expect("serialises");
            match jscontact::parse_file(&out).into_iter().next() {
                Some(Item::Record { record: again, .. }) => assert_eq!(again, record, "out and back in"),
                other => panic!("a written card does not read back: {other:?}"),
            }
        }
    }
});
