//! The release feed's answer (untrusted bytes from the network): reading it never panics, a
//! version it gives is short and plain, a page it keeps is https, and comparing versions is a
//! strict order on what it gives.
#![no_main]

use libfuzzer_sys::fuzz_target;
use mycorrhizal::release::{newer, parse};

fuzz_target!(|data: &[u8]| {
    if let Ok((version, url, _)) = parse(data) {
        assert!(!version.is_empty() && version.len() <= 64);
        assert!(version.chars().all(|c| c.is_ascii_alphanumeric() || ".-+".contains(c)));
        assert!(url.is_none_or(|u| u.starts_with("https://")));
        assert!(!newer(&version, &version), "a version is not newer than itself");
        if newer(&version, "1.0.0") {
            assert!(!newer("1.0.0", &version));
        }
    }
});
