//! A custom field value (untrusted: a request body, a CSV cell, another program's vCard
//! property) checked against a definition of every type, with and without `multi`: the check
//! never panics, and what it stores reads back as itself (checking a stored value again gives
//! the same value), so an export and re-import never changes it.
#![no_main]

use libfuzzer_sys::fuzz_target;
use mycorrhizal::crm::field::{Constraints, FieldDefinition, TYPES, check};
use serde_json::Value;

fuzz_target!(|data: &[u8]| {
    let Some((&selector, rest)) = data.split_first() else { return };
    let Ok(text) = std::str::from_utf8(rest) else { return };
    let kind = TYPES[selector as usize % TYPES.len()];
    let definition = FieldDefinition {
        label: "f".into(),
        key: "f".into(),
        kind: kind.into(),
        constraints: Constraints {
            min: (selector & 0x10 != 0).then_some(-5.0),
            max: (selector & 0x10 != 0).then_some(1e6),
            max_length: (selector & 0x20 != 0).then_some(40),
            pattern: (selector & 0x40 != 0).then(|| "^[a-z0-9 :/.@+-]*$".to_string()),
            values: vec!["a".into(), "b c".into()],
            multi: selector & 0x80 != 0,
        },
        projection: "internal-only".into(),
        sensitivity: "normal".into(),
    };
    let given = serde_json::from_str::<Value>(text).unwrap_or_else(|_| Value::String(text.to_string()));
    if let Ok(Some(stored)) = check(&definition, &given) {
        assert_eq!(check(&definition, &stored), Ok(Some(stored.clone())), "stored {stored} reads back as itself");
    }
});
