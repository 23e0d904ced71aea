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

/// A stream as UTF-8 bytes, as [`utf8_bytes`] gives a whole file: UTF-16 (by BOM) is
/// transcoded as it is read (malformed sequences replaced, as there), a UTF-8 BOM is dropped,
/// anything else passes as it is.
pub struct Utf8Reader<R> {
    input: R,
    /// Bytes read but not yet given: the first ones until the BOM is known, or transcoded text.
    pending: Vec<u8>,
    at: usize,
    decoder: Option<encoding_rs::Decoder>,
    /// Whether the first bytes were looked at for a BOM.
    started: bool,
    ended: bool,
}

impl<R: std::io::Read> Utf8Reader<R> {
    pub fn new(input: R) -> Utf8Reader<R> {
        Utf8Reader { input, pending: Vec::new(), at: 0, decoder: None, started: false, ended: false }
    }

    /// Reads the first three bytes (fewer at the end of the stream) and chooses by their BOM.
    fn start(&mut self) -> std::io::Result<()> {
        self.started = true;
        let mut head = [0u8; 3];
        let mut got = 0;
        while got < head.len() {
            match self.input.read(&mut head[got..]) {
                Ok(0) => break,
                Ok(n) => got += n,
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                Err(e) => return Err(e),
            }
        }
        let head = &head[..got];
        match encoding_rs::Encoding::for_bom(head) {
            Some((encoding, bom)) if encoding != encoding_rs::UTF_8 => {
                self.decoder = Some(encoding.new_decoder_without_bom_handling());
                self.transcode(&head[bom..], false);
            }
            Some((_, bom)) => self.pending = head[bom..].to_vec(),
            None => self.pending = head.to_vec(),
        }
        Ok(())
    }

    /// Transcodes `bytes` into `pending`; `last` flushes what the decoder holds back.
    fn transcode(&mut self, bytes: &[u8], last: bool) {
        let Some(decoder) = self.decoder.as_mut() else { return };
        let room = decoder.max_utf8_buffer_length(bytes.len()).unwrap_or(bytes.len() * 3 + 16);
        let mut out = vec![0u8; room];
        let (_, _, written, _) = decoder.decode_to_utf8(bytes, &mut out, last);
        out.truncate(written);
        self.pending = out;
        self.at = 0;
    }
}

impl<R: std::io::Read> std::io::Read for Utf8Reader<R> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        if !self.started {
            self.start()?;
        }
        loop {
            if self.at < self.pending.len() {
                let n = buf.len().min(self.pending.len() - self.at);
                buf[..n].copy_from_slice(&self.pending[self.at..self.at + n]);
                self.at += n;
                return Ok(n);
            }
            if self.ended || buf.is_empty() {
                return Ok(0);
            }
            if self.decoder.is_none() {
                return self.input.read(buf);
            }
            let mut chunk = vec![0u8; buf.len().max(4096)];
            let n = self.input.read(&mut chunk)?;
            self.ended = n == 0;
            self.transcode(&chunk[..n], n == 0);
        }
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
