//! Bytes to text as real exporters write it (UTF-8 with or without BOM, UTF-16 with BOM, or
//! Windows-1252 from older desktop software).

use std::borrow::Cow;

/// Decodes a file: UTF-16 (LE or BE) when it starts with that BOM, UTF-8 (BOM dropped) when
/// valid, Windows-1252 otherwise. Never fails; Windows-1252 maps every byte.
/// `%XX` escapes of a URL path decoded (a lone or bad `%` kept as it is); bytes that are not
/// UTF-8 afterwards become U+FFFD.
pub fn percent_decode(text: &str) -> String {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%'
            && let Some(v) = text.get(i + 1..i + 3).and_then(|h| u8::from_str_radix(h, 16).ok())
        {
            out.push(v);
            i += 3;
            continue;
        }
        out.push(bytes[i]);
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

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
}
