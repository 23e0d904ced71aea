//! Reading a vCard file as it arrives: [`Cards`] finds the cards of a stream one at a time, as
//! [`parse_file`](super::parse_file) finds them in a whole file (the same encodings, the same
//! nesting and folding rules, the same line numbers), so an upload is parsed a batch at a time and
//! never held whole. [`parse_cards`] parses a batch of them on up to four threads.

use std::io::{self, BufRead, BufReader, Read};

use super::read::{Block, parse_blocks, trim_line, without_controls};
use crate::record::{Item, Problem};
use crate::text::Utf8Reader;

/// One card of a stream: its bytes (control characters dropped, as `parse_file` drops them),
/// its position among the stream's cards and the line it starts on.
#[derive(Debug, Clone)]
pub struct RawCard {
    pub index: usize,
    pub line: usize,
    bytes: Vec<u8>,
    complete: bool,
}

impl RawCard {
    /// The card's bytes, from its `BEGIN:VCARD` line to its `END:VCARD` line.
    pub fn len(&self) -> usize {
        self.bytes.len()
    }

    pub fn is_empty(&self) -> bool {
        self.bytes.is_empty()
    }
}

/// The cards of a vCard stream, in order. Text outside any card is skipped; a stream without
/// any card gives one problem, "no BEGIN:VCARD found", as `parse_file` does.
pub struct Cards<R: Read> {
    input: BufReader<Utf8Reader<R>>,
    line: Vec<u8>,
    lines: usize,
    found: usize,
    depth: usize,
    current: Option<RawCard>,
    ended: bool,
}

impl<R: Read> Cards<R> {
    pub fn new(input: R) -> Cards<R> {
        Cards {
            input: BufReader::with_capacity(64 * 1024, Utf8Reader::new(input)),
            line: Vec::new(),
            lines: 0,
            found: 0,
            depth: 0,
            current: None,
            ended: false,
        }
    }

    /// How many cards were found so far.
    pub fn found(&self) -> usize {
        self.found
    }

    /// The next card, `None` after the last. A card the stream ends inside is given incomplete
    /// (it parses as a problem, "the card has no END:VCARD").
    pub fn next_card(&mut self) -> io::Result<Option<RawCard>> {
        if self.ended {
            return Ok(None);
        }
        loop {
            self.line.clear();
            if self.input.read_until(b'\n', &mut self.line)? == 0 {
                self.ended = true;
                return Ok(self.current.take());
            }
            self.lines += 1;
            let raw = without_controls(std::borrow::Cow::Borrowed(&self.line[..]));
            if self.depth > 0 && matches!(raw.first(), Some(b' ' | b'\t')) {
                if let Some(card) = self.current.as_mut() {
                    card.bytes.extend_from_slice(&raw);
                }
                continue;
            }
            let marker = trim_line(&raw);
            if marker.eq_ignore_ascii_case(b"BEGIN:VCARD") {
                if self.depth == 0 {
                    self.current =
                        Some(RawCard { index: self.found, line: self.lines, bytes: Vec::new(), complete: false });
                    self.found += 1;
                }
                self.depth += 1;
            } else if marker.eq_ignore_ascii_case(b"END:VCARD") && self.depth > 0 {
                self.depth -= 1;
                if self.depth == 0 {
                    let mut card = self.current.take().unwrap_or_else(|| unreachable!("a card is open at depth 1"));
                    card.bytes.extend_from_slice(&raw);
                    card.complete = true;
                    return Ok(Some(card));
                }
            }
            if let Some(card) = self.current.as_mut() {
                card.bytes.extend_from_slice(&raw);
            }
        }
    }

    /// Up to `max` next cards; fewer only at the end of the stream.
    pub fn next_cards(&mut self, max: usize) -> io::Result<Vec<RawCard>> {
        let mut out = Vec::with_capacity(max.min(4096));
        while out.len() < max {
            match self.next_card()? {
                Some(card) => out.push(card),
                None => break,
            }
        }
        Ok(out)
    }

    /// The problem a stream that held no card at all is, once it has ended without one.
    pub fn nothing_found(&self) -> Option<Item> {
        (self.ended && self.found == 0)
            .then(|| Item::Problem(Problem { index: 0, line: 1, reason: "no BEGIN:VCARD found".into() }))
    }
}

/// The cards read, each a record or a problem with its line, in their order; parsed on up to
/// four threads when there are many. Their items are what `parse_file` gives for them.
pub fn parse_cards(cards: &[RawCard]) -> Vec<Item> {
    let blocks: Vec<Block<'_>> =
        cards.iter().map(|c| Block { index: c.index, line: c.line, bytes: &c.bytes, complete: c.complete }).collect();
    parse_blocks(&blocks)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A reader giving at most `step` bytes a call, as a network upload arrives.
    struct Trickle<'a> {
        bytes: &'a [u8],
        step: usize,
    }

    impl Read for Trickle<'_> {
        fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
            let n = self.step.min(buf.len()).min(self.bytes.len());
            buf[..n].copy_from_slice(&self.bytes[..n]);
            self.bytes = &self.bytes[n..];
            Ok(n)
        }
    }

    fn streamed(bytes: &[u8], step: usize, batch: usize) -> Vec<Item> {
        let mut cards = Cards::new(Trickle { bytes, step });
        let mut out = Vec::new();
        loop {
            let batch = cards.next_cards(batch).expect("read");
            if batch.is_empty() {
                break;
            }
            out.extend(parse_cards(&batch));
        }
        out.extend(cards.nothing_found());
        out
    }

    /// Every fixture file, and awkward ones (UTF-16, a BOM, controls, nesting, folding right
    /// before a marker, a card cut short, text around cards, none at all), give the same items
    /// read as a stream in pieces of any size as read whole.
    #[test]
    fn a_stream_in_any_pieces_gives_what_the_whole_file_gives() {
        let mut files: Vec<Vec<u8>> = Vec::new();
        for dir in [
            concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/vcf"),
            concat!(env!("CARGO_MANIFEST_DIR"), "/../tests/fixtures/exporters"),
            concat!(env!("CARGO_MANIFEST_DIR"), "/../tests/fixtures/rfc-cards"),
        ] {
            for entry in std::fs::read_dir(dir).expect("fixtures").flatten() {
                files.push(std::fs::read(entry.path()).expect("read"));
            }
        }
        let card = "BEGIN:VCARD\r\nVERSION:3.0\r\nFN:Zoë Ångström\r\nN:Ångström;Zoë;;;\r\nEND:VCARD\r\n";
        let utf16: Vec<u8> = [0xff, 0xfe].into_iter().chain(card.encode_utf16().flat_map(u16::to_le_bytes)).collect();
        let utf16be: Vec<u8> = [0xfe, 0xff].into_iter().chain(card.encode_utf16().flat_map(u16::to_be_bytes)).collect();
        files.extend([
            utf16,
            utf16be,
            format!("\u{feff}{card}{card}").into_bytes(),
            b"BEGIN:VCARD\nVERSION:3.0\nFN:Bell\x07 Ringer\nNOTE:a\x00b\nEND:VCARD\x07\n".to_vec(),
            b"BEGIN:VCARD\nVERSION:2.1\nN:Outer;A\nAGENT:\nBEGIN:VCARD\nVERSION:2.1\nN:Inner;B\nEND:VCARD\nEND:VCARD\n"
                .to_vec(),
            b"BEGIN:VCARD\nVERSION:3.0\nFN:Fold\nNOTE:text\n END:VCARD\nEND:VCARD\n".to_vec(),
            format!("preamble\n{card}between\n{card}BEGIN:VCARD\nVERSION:3.0\nFN:Cut").into_bytes(),
            b"no cards here\n".to_vec(),
            Vec::new(),
            b"BEGIN:VCARD\rVERSION:3.0\rFN:Old Mac\rEND:VCARD\r".to_vec(),
            b"BEGIN:VCARD\nVERSION:3.0\nFN:Jos\xe9 1252\nEND:VCARD\n".to_vec(),
        ]);
        for (n, bytes) in files.iter().enumerate() {
            let whole = super::super::parse_file(bytes);
            for (step, batch) in [(1, 1), (3, 2), (7, 1000), (4096, 3), (1 << 20, 1 << 20)] {
                let got = streamed(bytes, step, batch);
                assert!(got == whole, "file {n}, pieces of {step}, batches of {batch}:\n{got:?}\n{whole:?}");
            }
        }
        assert!(files.len() > 20);
    }
}
