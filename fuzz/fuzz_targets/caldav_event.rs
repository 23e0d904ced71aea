//! An event a calendar client PUTs (untrusted bytes, kept and served back whole): reading it,
//! expanding its occurrences, its alarms, its properties, a calendar-data `expand` and a CRM
//! edit written into it never panic and stay bounded; what `expanded` and `patch` write reads
//! again, and a patch's new summary is what the patched object reads as.
#![no_main]

use libfuzzer_sys::fuzz_target;
use mycorrhizal_codecs::ical::{
    MAX_INSTANCES, Patch, alarm_times, event_properties, expanded, instances, patch, read_event,
};

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else { return };
    let components = text.matches("BEGIN:VEVENT").count().max(1);
    let all = instances(text);
    assert!(all.len() <= MAX_INSTANCES * components);
    assert!(all.iter().all(|i| i.end >= i.start));
    let _ = alarm_times(text);
    let _ = event_properties(text);
    let (from, to) = (0, 4_102_444_800); // 1970 to 2100
    let written = expanded(text, from, to);
    if read_event(text).is_ok() {
        let _ = instances(&written);
        let change = Patch { summary: Some("Fuzzed, again".into()), start: Some(1_796_119_200), ..Patch::default() };
        if let Ok(patched) = patch(text, &change) {
            if let Ok(read) = read_event(&patched) {
                assert_eq!(read.summary, "Fuzzed, again");
            }
        }
    }
});
