//! What a CardDAV client PUTs: any body is one card or a reason (the `valid-address-data`
//! precondition), never a panic; and any text a client sends as a sync token is a token that
//! prints back as itself, or not a token (`valid-sync-token`).
#![no_main]

use libfuzzer_sys::fuzz_target;
use mycorrhizal::crm::cards;
use mycorrhizal::dav::sync::Token;

fuzz_target!(|data: &[u8]| {
    let _ = cards::parse(data);
    if let Ok(text) = std::str::from_utf8(data)
        && let Some(token) = Token::parse(text)
    {
        assert_eq!(Token::parse(&token.to_string()), Some(token));
    }
});
