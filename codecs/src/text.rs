//! Bytes to text as real exporters write it (UTF-8 with or without BOM, UTF-16 with BOM, or
//! Windows-1252 from older desktop software), and the naming rule every importer shares.

use std::borrow::Cow;

use crate::card::{Card, Name};

/// Decodes a file: UTF-16 (LE or BE) when it starts with that BOM, UTF-8 (BOM dropped) when
/// valid, Windows-1252 otherwise. Never fails; Windows-1252 maps every byte.
pub fn decode(bytes: &[u8]) -> Cow<'_, str> {
    if let Some((encoding, bom)) = encoding_rs::Encoding::for_bom(bytes) {
        let (text, _) = encoding.decode_without_bom_handling(&bytes[bom..]);
        return text;
    }
    match std::str::from_utf8(bytes) {
        Ok(text) => Cow::Borrowed(text),
        Err(_) => encoding_rs::WINDOWS_1252.decode_without_bom_handling(bytes).0,
    }
}

/// A file as UTF-8 bytes: UTF-16 (by BOM) is transcoded, anything else is left as it is (byte
/// level work such as vCard unfolding must happen before a multi-byte sequence split by a fold
/// is decoded).
pub fn utf8_bytes(bytes: &[u8]) -> Cow<'_, [u8]> {
    match encoding_rs::Encoding::for_bom(bytes) {
        Some((encoding, bom)) if encoding != encoding_rs::UTF_8 => {
            Cow::Owned(encoding.decode_without_bom_handling(&bytes[bom..]).0.into_owned().into_bytes())
        }
        Some((_, bom)) => Cow::Borrowed(&bytes[bom..]),
        None => Cow::Borrowed(bytes),
    }
}

/// A card with no first name and no full name is named after what else identifies it: its
/// organization, else the local part of its first email. Returns what was done, for the
/// import preview's diagnostics; an empty list when the card already had a name.
pub fn name_fallback(card: &mut Card) -> Vec<String> {
    if card.given().is_some_and(|g| !g.trim().is_empty()) {
        return Vec::new();
    }
    let org = card.organizations.iter().find_map(|o| o.name.clone()).filter(|n| !n.trim().is_empty());
    let email = card.emails.first().and_then(|e| e.address.split('@').next()).filter(|l| !l.trim().is_empty());
    let (full, from) = match (org, email) {
        (Some(org), _) => (org, "organization"),
        (None, Some(local)) => (local.to_string(), "email"),
        (None, None) => return Vec::new(),
    };
    let note = format!("no name: named \"{}\" after its {from}", full.trim());
    card.name.get_or_insert_with(Name::default).full = Some(full.trim().to_string());
    vec![note]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn encodings_real_exporters_use() {
        assert_eq!(decode("José".as_bytes()), "José");
        assert_eq!(decode(b"\xef\xbb\xbfJos\xc3\xa9"), "José");
        assert_eq!(decode(b"Jos\xe9"), "José");
        assert_eq!(decode(b"\xff\xfeJ\x00o\x00"), "Jo");
        assert_eq!(&*utf8_bytes(b"\xfe\xff\x00J\x00o"), b"Jo");
    }

    #[test]
    fn a_nameless_card_is_named_after_its_organization_or_email() {
        let mut card: Card = serde_json::from_str(r#"{"emails":[{"address":"kim@example.org"}]}"#).unwrap();
        assert_eq!(name_fallback(&mut card).len(), 1);
        assert_eq!(card.given(), Some("kim"));
        let mut named: Card = serde_json::from_str(r#"{"name":{"full":"Kim Lee"}}"#).unwrap();
        assert!(name_fallback(&mut named).is_empty());
    }
}
