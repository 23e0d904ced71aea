//! Stored rows read back from a file (a restored snapshot is untrusted): decoding any bytes
//! returns a row or `Corrupt`, never panics; a decoded row re-encodes to a decodable row.
#![no_main]

use libfuzzer_sys::fuzz_target;
use mycorrhizal_engine::{Meta, Row, codec};

fuzz_target!(|data: &[u8]| {
    if let Ok(row) = codec::decode::<Row<(String, Vec<u64>, Option<Meta>)>>("fuzz", data) {
        let again = codec::encode(&row);
        let back: Row<(String, Vec<u64>, Option<Meta>)> = codec::decode("fuzz", &again).expect("re-decodes");
        assert_eq!(back, row);
    }
});
