//! Configuration values an operator types: parsers are total, and versions round-trip.
#![no_main]

use libfuzzer_sys::fuzz_target;
use mycorrhizal::config::{IpNet, Version, WallTime};

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else { return };
    if let Ok(v) = text.parse::<Version>() {
        assert_eq!(v.to_string().parse::<Version>(), Ok(v));
        assert_eq!(v.to_string(), text);
    }
    if let Ok(net) = text.parse::<IpNet>() {
        assert!(net.contains(net.addr));
    }
    if let Ok(t) = text.parse::<WallTime>() {
        assert!((0..24).contains(&t.hour) && (0..60).contains(&t.minute));
    }
    let _ = mycorrhizal::config::secret::check_strength(text);
});
