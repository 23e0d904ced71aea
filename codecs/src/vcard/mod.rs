//! vCard 2.1, 3.0 and 4.0 in; 3.0 and 4.0 out. Built on calcard's parser, writer and its
//! RFC 9555 vCard <-> JSContact conversion; the neutral record is reached through
//! [`crate::jscontact`], so both formats share one mapping. calcard's types stay in this module.
//!
//! Around calcard, this module handles what real exporters do:
//! - a file is split into cards here, so a broken card is reported with its line and the rest of
//!   the file still imports;
//! - lines are unfolded on bytes before decoding, because exporters fold inside UTF-8 sequences;
//! - a card that is not UTF-8 is read as Windows-1252;
//! - Apple's year-less dates (`X-APPLE-OMIT-YEAR`) lose their placeholder year on the way in and
//!   get it back in 3.0 output;
//! - 4.0 `data:` URIs are written with a bare comma (calcard escapes it, and clients then lose
//!   the photo);
//! - calcard's bookkeeping parameters (`PROP-ID`, `JSCOMPS`) are not written out.

use base64::Engine as _;
use calcard::Entry;
use calcard::common::PartialDateTime;
use calcard::jscontact::JSContact;
use calcard::vcard::{
    VCard, VCardEntry, VCardParameter, VCardParameterName, VCardParameterValue, VCardProperty, VCardValue, VCardVersion,
};
use serde_json::{Map, Value, json};

use crate::card::Card;
use crate::jscontact;
use crate::record::{Item, JsonRecord, NeutralRecord, Problem};

mod photo;
mod read;
mod repair;
mod stream;
mod write;

pub use photo::{Photo, put_photo, put_photo_in, sniff, take_photo};
pub use read::parse_file;
use repair::*;
pub use stream::{Cards, RawCard, parse_cards};
pub use write::{WriteError, write, write_json, write_json_with_photo, write_with_photo};

/// The year Apple writes for a date without one.
const APPLE_NO_YEAR: u16 = 1604;

/// The vCard versions this server writes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Version {
    V3,
    V4,
}

impl Version {
    /// `4`, `4.0`, `3`, `3.0`, optionally prefixed `v`.
    pub fn parse(text: &str) -> Option<Version> {
        match text.trim().trim_start_matches(['v', 'V']) {
            "4" | "4.0" => Some(Version::V4),
            "3" | "3.0" => Some(Version::V3),
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::read::{CARDS_PER_THREAD, unfold};
    use super::*;

    #[test]
    fn a_large_file_parses_on_several_threads_in_file_order() {
        let mut file = String::new();
        let mut lines = Vec::new();
        let count = CARDS_PER_THREAD * 3 + 7;
        for n in 0..count {
            lines.push(file.matches("\r\n").count() + 1);
            if n % 100 == 42 {
                file.push_str("BEGIN:VCARD\r\nVERSION:3.0\r\nN:;;;;\r\nEND:VCARD\r\n");
            } else {
                file.push_str(&format!(
                    "BEGIN:VCARD\r\nVERSION:3.0\r\nFN:Person {n}\r\nN:{n};Person;;;\r\nEND:VCARD\r\n"
                ));
            }
        }
        let items = parse_file(file.as_bytes());
        assert_eq!(items.len(), count);
        for (n, item) in items.iter().enumerate() {
            match item {
                Item::Record { record, line, .. } => {
                    assert_eq!(*line, lines[n]);
                    let full = record.card.name.as_ref().and_then(|name| name.full.clone());
                    assert_eq!(full, Some(format!("Person {n}")));
                }
                Item::Problem(p) => {
                    assert_eq!(n % 100, 42, "only the empty cards fail: {}", p.reason);
                    assert_eq!((p.index, p.line), (n, lines[n]));
                }
            }
        }
    }

    fn records(text: &[u8]) -> Vec<NeutralRecord> {
        parse_file(text)
            .into_iter()
            .filter_map(|i| match i {
                Item::Record { record, .. } => Some(*record),
                Item::Problem(_) => None,
            })
            .collect()
    }

    #[test]
    fn a_broken_card_is_reported_with_its_line_and_the_rest_imports() {
        let file = b"BEGIN:VCARD\r\nVERSION:3.0\r\nFN:Ann\r\nEND:VCARD\r\nBEGIN:VCARD\r\nVERSION:3.0\r\nEND:VCARD\r\nBEGIN:VCARD\r\nVERSION:4.0\r\nFN:Bo\r\nEND:VCARD\r\nBEGIN:VCARD\r\nFN:Cut off\r\n";
        let items = parse_file(file);
        assert_eq!(items.len(), 4);
        assert!(matches!(&items[0], Item::Record { line: 1, .. }));
        assert!(matches!(&items[1], Item::Problem(p) if p.line == 5 && p.reason.contains("card.name")));
        assert!(matches!(&items[2], Item::Record { line: 8, .. }));
        assert!(matches!(&items[3], Item::Problem(p) if p.line == 12 && p.reason.contains("END:VCARD")));
    }

    #[test]
    fn folding_inside_a_utf8_sequence_and_windows_1252() {
        let folded = b"BEGIN:VCARD\r\nVERSION:3.0\r\nFN:Jos\xc3\r\n \xa9 Luis\r\nEND:VCARD\r\n";
        assert_eq!(records(folded)[0].card.name.as_ref().unwrap().full.as_deref(), Some("Jos\u{e9} Luis"));
        let latin = b"BEGIN:VCARD\r\nVERSION:3.0\r\nFN:Jos\xe9\r\nEND:VCARD\r\n";
        assert_eq!(records(latin)[0].card.name.as_ref().unwrap().full.as_deref(), Some("Jos\u{e9}"));
    }

    #[test]
    fn apple_year_less_birthdays_both_ways() {
        let apple = b"BEGIN:VCARD\r\nVERSION:3.0\r\nFN:Ann\r\nBDAY;X-APPLE-OMIT-YEAR=1604:1604-07-14\r\nEND:VCARD\r\n";
        let record = records(apple).remove(0);
        let p = record.card.anniversaries[0].date.partial.unwrap();
        assert_eq!((p.year, p.month, p.day), (None, Some(7), Some(14)));
        let v3 = write(&record, Version::V3).expect("written");
        assert!(v3.contains("BDAY;X-APPLE-OMIT-YEAR=1604:1604-07-14\r\n"), "{v3}");
        let v4 = write(&record, Version::V4).expect("written");
        assert!(v4.contains("BDAY:--0714\r\n"), "{v4}");
    }

    #[test]
    fn inline_photos_leave_the_card_and_come_back_with_a_bare_comma() {
        let png = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg==";
        let file =
            format!("BEGIN:VCARD\r\nVERSION:4.0\r\nFN:Ann\r\nPHOTO:data:image/png;base64,{png}\r\nEND:VCARD\r\n");
        let mut record = records(file.as_bytes()).remove(0);
        let photo = take_photo(&mut record.card).expect("photo");
        assert_eq!(photo.media_type, "image/png");
        assert_eq!(sniff(&photo.bytes), Some("image/png"));
        assert!(!record.card.extra.contains_key("media"));
        put_photo(&mut record.card, &photo);
        let v4 = write(&record, Version::V4).expect("written");
        let unfolded = String::from_utf8(unfold(v4.as_bytes())).unwrap();
        assert!(unfolded.contains(&format!("PHOTO:data:image/png;base64,{png}")), "{v4}");
        let v3 = write(&record, Version::V3).expect("written");
        let unfolded = String::from_utf8(unfold(v3.as_bytes())).unwrap();
        assert!(unfolded.contains("PHOTO;ENCODING=b;TYPE=PNG:iVBOR"), "{v3}");
        assert!(!v3.contains("PROP-ID") && !v3.contains("JSCOMPS"));
    }

    #[test]
    fn a_vendor_data_uri_survives_both_versions_and_reads_back_the_same() {
        // Binary without a media type (what reading ENCODING=b gives) goes back as 3.0's
        // ENCODING=b. A URI naming its type, or holding plain text (ENCODING=b of text reads
        // back as text), stays the URI it was.
        for (uri, encoded) in
            [("data:;base64,/9j/4AAQ", true), ("data:image/jpeg;base64,/9j/4AAQ", false), ("data:;base64,YWJj", false)]
        {
            let file = format!("BEGIN:VCARD\r\nVERSION:4.0\r\nFN:Ann\r\nX-BLOB:{uri}\r\nEND:VCARD\r\n");
            let record = records(file.as_bytes()).remove(0);
            for version in [Version::V3, Version::V4] {
                let written = write(&record, version).expect("written");
                let unfolded = String::from_utf8(unfold(written.as_bytes())).unwrap();
                if version == Version::V3 && encoded {
                    assert!(unfolded.contains("X-BLOB;ENCODING=b:/9j/4AAQ"), "{written}");
                } else {
                    // Text (3.0 escapes its `;` and `,`), never re-encoded.
                    assert!(unfolded.contains("X-BLOB:data:") && !unfolded.contains("ENCODING"), "{written}");
                }
                assert_eq!(records(written.as_bytes()).remove(0).passthrough, record.passthrough, "{written}");
            }
        }
    }
}
