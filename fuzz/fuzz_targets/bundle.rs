//! Account bundles from anyone (`POST /import/bundle`): any bytes are read as a ZIP, a manifest,
//! lines of rows, pictures and attachment bytes, and either pass the check or are refused with a
//! reason naming the file (`crm::bundle::check`, which reads everything an import would and
//! writes nothing), never a panic. A bundle that passes holds only rows its kinds accept.
#![no_main]

use libfuzzer_sys::fuzz_target;
use mycorrhizal::crm::Error;
use mycorrhizal::crm::bundle::check;

fuzz_target!(|data: &[u8]| {
    match check(std::io::Cursor::new(data)) {
        Ok(checked) => {
            assert_eq!(checked.manifest.format, mycorrhizal::crm::bundle::FORMAT);
            let made: u64 = checked.imported.imported.values().sum();
            let skipped: u64 = checked.imported.skipped.values().sum();
            let declared: u64 = checked.manifest.counts.values().sum();
            assert_eq!(made + skipped, declared, "every declared row is made or skipped");
        }
        Err(Error::BadParameter { field, reason }) => {
            assert_eq!(field, "file");
            assert!(!reason.is_empty());
        }
        Err(other) => panic!("a bad bundle is the caller's error, not {other}"),
    }
});
