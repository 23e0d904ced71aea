//! Photos in cards: `data:` URIs decoded and sniffed, taken out of a card and put back.

use super::*;

/// A photo carried inline in a card.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Photo {
    pub media_type: String,
    pub bytes: Vec<u8>,
}

pub(super) fn decode_data_uri(uri: &str) -> Option<Photo> {
    let rest = uri.strip_prefix("data:")?;
    let (meta, data) = rest.split_once(',')?;
    let meta = meta.trim_end_matches('\\');
    let (media_type, encoding) = meta.rsplit_once(';').unwrap_or((meta, ""));
    if !encoding.eq_ignore_ascii_case("base64") {
        return None;
    }
    let clean: String = data.chars().filter(|c| !c.is_whitespace()).collect();
    let bytes = base64::engine::general_purpose::STANDARD
        .decode(clean.trim_end_matches('='))
        .ok()
        .or_else(|| base64::engine::general_purpose::STANDARD_NO_PAD.decode(clean.trim_end_matches('=')).ok())?;
    let media_type =
        if media_type.is_empty() { sniff(&bytes).unwrap_or("application/octet-stream") } else { media_type };
    Some(Photo { media_type: media_type.to_lowercase(), bytes })
}

/// The image type of `bytes` by their magic numbers.
pub fn sniff(bytes: &[u8]) -> Option<&'static str> {
    match bytes {
        [0xFF, 0xD8, 0xFF, ..] => Some("image/jpeg"),
        [0x89, b'P', b'N', b'G', ..] => Some("image/png"),
        [b'G', b'I', b'F', b'8', ..] => Some("image/gif"),
        [b'R', b'I', b'F', b'F', _, _, _, _, b'W', b'E', b'B', b'P', ..] => Some("image/webp"),
        _ => None,
    }
}

/// Takes the first inline (`data:` URI) photo out of the card's `media`, so it can be stored as
/// a file rather than inside the record. Photo URLs stay in the card, unfetched.
pub fn take_photo(card: &mut Card) -> Option<Photo> {
    let Some(Value::Array(media)) = card.extra.get_mut("media") else { return None };
    let pos = media.iter().position(|m| {
        m.get("kind").and_then(Value::as_str).is_none_or(|k| k.eq_ignore_ascii_case("photo"))
            && m.get("uri").and_then(Value::as_str).is_some_and(|u| u.starts_with("data:"))
    })?;
    let entry = media.remove(pos);
    if media.is_empty() {
        card.extra.remove("media");
    }
    decode_data_uri(entry.get("uri")?.as_str()?)
}

/// Puts a photo into the card's `media` as a `data:` URI (first, replacing inline photos).
pub fn put_photo(card: &mut Card, photo: &Photo) {
    put_in_media(card.extra.entry("media".to_string()).or_insert_with(|| Value::Array(Vec::new())), photo);
}

/// [`put_photo`] for a card held as JSON ([`crate::record::JsonRecord`]).
pub fn put_photo_in(card: &mut Map<String, Value>, photo: &Photo) {
    put_in_media(card.entry("media").or_insert_with(|| Value::Array(Vec::new())), photo);
}

/// [`put_photo`]'s work on the card's `media` member.
fn put_in_media(media: &mut Value, photo: &Photo) {
    let uri =
        format!("data:{};base64,{}", photo.media_type, base64::engine::general_purpose::STANDARD.encode(&photo.bytes));
    if let Value::Array(list) = media {
        list.retain(|m| !m.get("uri").and_then(Value::as_str).is_some_and(|u| u.starts_with("data:")));
        list.insert(0, json!({"id": "photo", "kind": "photo", "uri": uri}));
    }
}
