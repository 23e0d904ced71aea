//! The vCard file the import and footprint benches send: a seeded generator of realistic cards
//! (accented names, emails, phones, addresses, birthdays, notes; every name distinct; 10% with an
//! inline photo), so every run writes the same file.

#![allow(dead_code)] // each bench uses what it needs

use std::fmt::Write as _;

pub const FIRST: &[&str] = &[
    "José", "Zoë", "Ana", "Jürgen", "Chloé", "Søren", "Amélie", "Björn", "Inés", "Łukasz", "Noémie", "Aarav", "Mei",
    "Olu", "Grace", "Ada", "Émile", "Siân", "Ciarán", "Dagný",
];
pub const LAST: &[&str] = &[
    "García",
    "Müller",
    "Ødegaard",
    "Nuñez",
    "Dubois",
    "Kowalski",
    "O'Brien",
    "Nakamura",
    "Okafor",
    "Hopper",
    "Lovelace",
    "Żukowski",
    "Þórsson",
    "Ferreira",
    "Çelik",
    "Lindqvist",
    "Moreau",
    "Rossi",
    "Novák",
    "Schäfer",
];
pub const CITIES: &[&str] = &["Lyon", "Kraków", "München", "Reykjavík", "Porto", "Göteborg", "Zürich", "Sevilla"];
pub const WORDS: &[&str] = &[
    "met",
    "at",
    "the",
    "climbing",
    "gym",
    "loves",
    "mushrooms",
    "and",
    "jazz",
    "moved",
    "to",
    "Lyon",
    "last",
    "spring",
    "knows",
    "everything",
    "about",
    "bikes",
    "café",
    "owner",
    "sister",
    "of",
    "Marta",
];

/// A small deterministic generator (xorshift), so every run writes the same file.
pub struct Rng(pub u64);

impl Rng {
    pub fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
    pub fn pick<'a>(&mut self, list: &[&'a str]) -> &'a str {
        list[(self.next() % list.len() as u64) as usize]
    }
}

pub fn photo(rng: &mut Rng) -> String {
    use base64::Engine as _;
    // A JPEG-shaped blob of 6 KB: the header a client checks, then noise.
    let mut bytes = vec![0xFF, 0xD8, 0xFF, 0xE0];
    bytes.extend((0..6 * 1024).map(|_| rng.next() as u8));
    base64::engine::general_purpose::STANDARD.encode(bytes)
}

/// Syllables that make every generated surname distinct, as the people of a real address book
/// are: `n` in base 16 as syllables after a real surname ("Müllerkavo").
pub fn surname(rng: &mut Rng, n: usize) -> String {
    const SYLLABLES: &[&str] =
        &["ka", "lo", "mi", "ne", "ru", "sa", "te", "vo", "bi", "da", "fe", "go", "ju", "pe", "ri", "zu"];
    let mut out = rng.pick(LAST).to_string();
    let mut rest = n;
    loop {
        out.push_str(SYLLABLES[rest % 16]);
        rest /= 16;
        if rest == 0 {
            return out;
        }
    }
}

/// One person's card; `email` fixes the address (for duplicates of existing contacts). Names,
/// emails and UIDs are distinct per `n`, so only the planned rows are duplicates.
pub fn card(rng: &mut Rng, n: usize, email: Option<String>, with_photo: bool) -> String {
    let (first, last) = (rng.pick(FIRST), surname(rng, n));
    let email = email.unwrap_or_else(|| format!("person{n}@example.org"));
    let mut out = String::new();
    let _ = write!(
        out,
        "BEGIN:VCARD\r\nVERSION:3.0\r\nN:{last};{first};;;\r\nFN:{first} {last}\r\nEMAIL;TYPE=INTERNET;TYPE=HOME:{email}\r\n\
         TEL;TYPE=CELL:+33 6 {:02} {:02} {:02} {:02}\r\nADR;TYPE=HOME:;;{} rue des Lilas;{};;{:05};France\r\n\
         BDAY:{}-{:02}-{:02}\r\nORG:Mycelium & Co\r\nCATEGORIES:Friends,Climbing\r\nUID:bench-{n}\r\n",
        rng.next() % 100,
        rng.next() % 100,
        rng.next() % 100,
        n % 100,
        1 + rng.next() % 200,
        rng.pick(CITIES),
        rng.next() % 100_000,
        1950 + rng.next() % 55,
        1 + rng.next() % 12,
        1 + rng.next() % 28,
    );
    let note: Vec<&str> = (0..12).map(|_| rng.pick(WORDS)).collect();
    let _ = write!(out, "NOTE:{}\r\n", note.join(" "));
    if with_photo {
        let encoded = photo(rng);
        out.push_str("PHOTO;ENCODING=b;TYPE=JPEG:");
        // Folded at 75 octets, as exporters write it.
        for (i, chunk) in encoded.as_bytes().chunks(74).enumerate() {
            if i > 0 {
                out.push_str("\r\n ");
            }
            out.push_str(std::str::from_utf8(chunk).unwrap_or(""));
        }
        out.push_str("\r\n");
    }
    out.push_str("END:VCARD\r\n");
    out
}

/// The file: `n` cards, 10% with photos, 5% reusing an existing contact's email, 2% repeating
/// an earlier card.
pub fn file(n: usize, existing: usize) -> Vec<u8> {
    let mut rng = Rng(0x9E37_79B9_7F4A_7C15);
    let mut cards: Vec<String> = Vec::with_capacity(n);
    for i in 0..n {
        let roll = i % 100;
        let text = if roll < 2 && i > 0 {
            cards[(rng.next() % i as u64) as usize].clone()
        } else if roll < 7 && existing > 0 {
            let e = (rng.next() % existing as u64) as usize;
            card(&mut rng, i, Some(format!("existing{e}@example.org")), false)
        } else {
            card(&mut rng, i, None, roll >= 90)
        };
        cards.push(text);
    }
    cards.concat().into_bytes()
}
