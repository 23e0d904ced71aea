//! Request bodies: any bytes either parse or give a field-naming INVALID_INPUT, never a panic.
#![no_main]

use libfuzzer_sys::fuzz_target;
use mycorrhizal::error::ApiError;

#[derive(Debug, serde::Deserialize)]
#[allow(dead_code)]
struct Body {
    name: String,
    tags: Vec<String>,
    nested: Option<Nested>,
}

#[derive(Debug, serde::Deserialize)]
#[allow(dead_code)]
struct Nested {
    count: u32,
    when: Option<String>,
}

fuzz_target!(|data: &[u8]| {
    for result in [
        mycorrhizal::http::json::parse::<Body>(data).map(|_| ()),
        mycorrhizal::http::json::parse::<serde_json::Value>(data).map(|_| ()),
    ] {
        match result {
            Ok(()) => {}
            Err(ApiError::InvalidInput { field, .. }) => assert!(!field.is_empty()),
            Err(other) => panic!("unexpected error kind: {other:?}"),
        }
    }
});
