//! A subscribed calendar's resources (untrusted bytes from another server): expanding their
//! occurrences never panics and stays bounded, every occurrence starts inside the window asked
//! for, and the addresses it names are lower-case and hold an `@`.
#![no_main]

use libfuzzer_sys::fuzz_target;
use mycorrhizal_codecs::ical::{MAX_INSTANCES, occurrences};

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else { return };
    let (from, to) = (0, 4_102_444_800); // 1970 to 2100
    if let Ok(found) = occurrences(text, from, to) {
        let components = text.matches("BEGIN:VEVENT").count().max(1);
        assert!(found.len() <= MAX_INSTANCES * components);
        for o in &found {
            assert!((from..=to).contains(&o.start));
            assert!(o.emails.iter().all(|e| e.contains('@') && *e == e.to_lowercase()));
        }
    }
});
