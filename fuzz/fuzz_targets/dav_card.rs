//! What a DAV client PUTs: any body is one card or a reason (the `valid-address-data`
//! precondition), and one event or a reason (`valid-calendar-data`, two-way CalDAV), never a
//! panic; an event read back from our own writing keeps its text; and any text a client sends as
//! a sync token is a token that prints back as itself, or not a token (`valid-sync-token`).
#![no_main]

use libfuzzer_sys::fuzz_target;
use mycorrhizal::crm::contact::card as cards;
use mycorrhizal::dav::sync::Token;

fuzz_target!(|data: &[u8]| {
    let _ = cards::parse(data);
    if let Ok(text) = std::str::from_utf8(data)
        && let Ok(event) = mycorrhizal_codecs::ical::read_event(text)
    {
        let written = mycorrhizal_codecs::ical::write(&mycorrhizal_codecs::ical::Event {
            uid: event.uid.clone(),
            summary: event.summary.clone(),
            description: event.description.clone(),
            location: event.location.clone(),
            categories: Vec::new(),
            when: mycorrhizal_codecs::ical::When::Timed { start: stamp(), end: stamp() },
            stamp: stamp(),
        });
        let again = mycorrhizal_codecs::ical::read_event(&written).expect("our own event reads back");
        assert_eq!(
            (again.uid, again.summary, again.description, again.location),
            (event.uid.trim().to_string(), event.summary, event.description, event.location)
        );
    }
    if let Ok(text) = std::str::from_utf8(data)
        && let Some(token) = Token::parse(text)
    {
        assert_eq!(Token::parse(&token.to_string()), Some(token));
    }
});

fn stamp() -> mycorrhizal_codecs::ical::Utc {
    let day = mycorrhizal_codecs::ical::Day { year: 2026, month: 1, day: 1 };
    mycorrhizal_codecs::ical::Utc { day, hour: 0, minute: 0, second: 0 }
}
