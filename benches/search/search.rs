//! Full-text search benchmark: the engine's tantivy index against SQLite FTS5 (the original
//! system's engine) on the same documents, in the same run.
//!
//! Data (seeded, so every run sees the same): one user with `BENCH_CONTACTS` contacts (default
//! 100000) and twice as many notes and activities, plus 9 other users with a tenth as many
//! contacts each, all in the same index. Names, emails and sentences are generated from word
//! lists with accents. Documents are the real ones: the server's contact, note and activity
//! records through their `search_doc`, written through the engine's write path, indexed from the
//! change feed.
//!
//! Reports: p50/p99 per query shape (single term, two terms, 3-letter prefix, one typo, phrase)
//! for the engine (three groups of 10 in one call, read-your-writes overlay included) and for
//! FTS5 (three tables, `MATCH ... AND user = ? ORDER BY bm25 LIMIT 10` each), the ratio, index
//! build throughput, rebuild times, and write-to-visible latency.
//!
//! Run: `cargo bench -p mycorrhizal-search-bench`. `BENCH_CONTACTS` scales the data,
//! `BENCH_QUERIES` the queries per shape (default 1000), `BENCH_SHAPES` which shapes run (default
//! all: `single,two,prefix,prefix2,typo,phrase`).

use std::time::{Duration, Instant};

use mycorrhizal::crm::contact::Contact;
use mycorrhizal::crm::contact::ops::ContactInput;
use mycorrhizal::crm::{activity::Activity, note::Note};
use mycorrhizal_engine::{Durability, Engine, Options, Plan, Record, SearchOptions, SearchRequest, UserId};
use serde_json::json;

const FIRST: &[&str] = &[
    "José",
    "María",
    "Zoë",
    "Anaïs",
    "Renée",
    "Björn",
    "Søren",
    "François",
    "Łukasz",
    "Chloé",
    "Ümit",
    "Inès",
    "Alice",
    "Marco",
    "Hélène",
    "Jürgen",
    "Mateo",
    "Noémie",
    "Olivia",
    "Raphaël",
    "Siobhán",
    "Tomás",
    "Yusuf",
    "Élodie",
    "Camille",
    "Daniel",
    "Emma",
    "Fatima",
    "Gabriel",
    "Hannah",
    "Isabel",
    "Jonas",
    "Karin",
    "Leila",
    "Martin",
    "Nadia",
    "Oscar",
    "Paula",
    "Quentin",
    "Rosa",
    "Samuel",
    "Théo",
    "Ursula",
    "Victor",
    "Wanda",
    "Xavier",
    "Yara",
    "Zacharie",
    "Amélie",
    "Benoît",
    "Cécile",
    "Dmitri",
    "Eszter",
    "Frédéric",
    "Greta",
    "Håkon",
    "Ingrid",
    "Joël",
    "Kenji",
    "Lucía",
    "Mónica",
    "Nikolaj",
    "Ottilie",
    "Pedro",
];
const LAST: &[&str] = &[
    "García",
    "Martínez",
    "Müller",
    "Dubois",
    "Novák",
    "Johansson",
    "Kowalski",
    "Rossi",
    "Fernández",
    "Lefèvre",
    "Schäfer",
    "O'Brien",
    "Nguyen",
    "Yılmaz",
    "Andersen",
    "Bianchi",
    "Costa",
    "Dąbrowski",
    "Eriksson",
    "Fischer",
    "González",
    "Horváth",
    "Ivanova",
    "Jensen",
    "Kovačević",
    "López",
    "Moreau",
    "Nielsen",
    "Olsen",
    "Petrović",
    "Quintero",
    "Rodríguez",
    "Sánchez",
    "Thompson",
    "Ulrich",
    "Vargas",
    "Weber",
    "Xu",
    "Young",
    "Zieliński",
    "Álvarez",
    "Böhm",
    "Çelik",
    "Durand",
    "Esposito",
    "Fontaine",
    "Gómez",
    "Hoffmann",
    "Iglesias",
    "Jiménez",
    "Keller",
    "Laurent",
    "Mercier",
    "Navarro",
    "Ortega",
    "Perrin",
    "Ramírez",
    "Schmidt",
    "Torres",
    "Vidal",
];
const CITIES: &[&str] = &[
    "Lyon",
    "Köln",
    "Kraków",
    "Sevilla",
    "Göteborg",
    "Porto",
    "Zürich",
    "Málaga",
    "Brno",
    "Tromsø",
    "Nantes",
    "Bologna",
];
const ORGS: &[&str] = &[
    "Lichen Labs",
    "Mycelium & Co",
    "Spore Systems",
    "Fern Analytics",
    "Moss Bank",
    "Chanterelle Foods",
    "Truffle Studio",
    "Birch Health",
    "Willow School",
    "Oak Legal",
];
const PHRASES: &[&str] = &[
    "birthday party",
    "coffee shop",
    "job interview",
    "moving house",
    "new baby",
    "wedding plans",
    "hiking trip",
    "book club",
    "dentist appointment",
    "football match",
    "piano lesson",
    "farmers market",
    "summer holiday",
    "family dinner",
    "board games",
    "road trip",
    "new apartment",
    "career change",
    "yoga class",
    "art exhibition",
    "garden party",
    "ski weekend",
    "science fair",
    "house warming",
    "charity run",
    "wine tasting",
    "film festival",
    "climbing gym",
    "language exchange",
    "graduation ceremony",
    "baby shower",
    "retirement party",
    "camping trip",
    "cooking class",
    "jazz concert",
    "flea market",
    "beach day",
    "chess tournament",
    "pottery workshop",
    "sailing trip",
];
const OUTINGS: &[&str] =
    &["Dinner", "Coffee", "Lunch", "Call", "Walk", "Drinks", "Brunch", "Video call", "Visit", "Hike"];
const WORDS: &[&str] = &[
    "talked",
    "about",
    "the",
    "weekend",
    "her",
    "his",
    "new",
    "project",
    "garden",
    "dinner",
    "lunch",
    "called",
    "visited",
    "family",
    "sister",
    "brother",
    "recipe",
    "holiday",
    "concert",
    "museum",
    "travel",
    "plans",
    "work",
    "promotion",
    "health",
    "running",
    "marathon",
    "photos",
    "kids",
    "school",
    "apartment",
    "renovation",
    "dog",
    "cat",
    "gift",
    "ideas",
    "remember",
    "ask",
    "next",
    "time",
    "favourite",
    "restaurant",
    "wine",
    "tea",
    "bakery",
    "mushrooms",
    "forest",
    "walk",
    "lake",
    "café",
    "crème",
    "brûlée",
    "naïve",
    "fiancée",
    "rendezvous",
];

/// Syllables for the long tail of surnames and words: real address books and notes have
/// thousands of distinct names and words, a few of them very common.
const ROOTS: &[&str] = &[
    "Berg", "Hol", "Kar", "Lind", "Mor", "Nor", "Ped", "Rav", "Sal", "Tor", "Val", "Wal", "Ald", "Bran", "Cas", "Dal",
    "Esk", "Fal", "Gund", "Hart", "Ivan", "Jar", "Kov", "Lor", "Mal", "Nik", "Ost", "Pal", "Quin", "Ros", "Stef",
    "Tam", "Ulm", "Vog", "Wes", "Yan", "Zel", "Ám", "Bé", "Cól",
];
const SUFFIXES: &[&str] = &[
    "mann", "berg", "ström", "sson", "ović", "escu", "opoulos", "ski", "ez", "ier", "ard", "elli", "etti", "ová", "ák",
    "ens", "sen", "dóttir", "ino", "aro", "ley", "ton", "wood", "field", "ère", "eau", "ues", "ith", "ke", "ler",
];
const SYLLABLES: &[&str] = &[
    "ka", "lo", "mi", "ra", "ten", "su", "vi", "do", "ne", "pa", "ri", "go", "la", "mu", "sa", "to", "be", "ko", "na",
    "fe", "li", "mo", "zu", "ha", "qui", "bre", "sto", "gra", "pli", "tru",
];

/// Names and words with a Zipf-like frequency (the i-th is picked with weight 1/(i+1)).
struct Vocab {
    items: Vec<String>,
    /// Cumulative weights.
    cumulative: Vec<f64>,
}

impl Vocab {
    fn new(items: Vec<String>) -> Vocab {
        let mut total = 0.0;
        let cumulative = (0..items.len())
            .map(|i| {
                total += 1.0 / (i as f64 + 1.0);
                total
            })
            .collect();
        Vocab { items, cumulative }
    }

    fn pick(&self, rng: &mut Rng) -> &str {
        let total = self.cumulative.last().copied().unwrap_or(1.0);
        let x = (rng.next() % 1_000_000_007) as f64 / 1_000_000_007.0 * total;
        let i = self.cumulative.partition_point(|c| *c < x).min(self.items.len() - 1);
        &self.items[i]
    }
}

struct Vocabs {
    first: Vocab,
    last: Vocab,
    words: Vocab,
}

impl Vocabs {
    fn new() -> Vocabs {
        let mut last: Vec<String> = LAST.iter().map(|s| s.to_string()).collect();
        last.extend(ROOTS.iter().flat_map(|r| SUFFIXES.iter().map(move |s| format!("{r}{s}"))));
        let mut words: Vec<String> = WORDS.iter().map(|s| s.to_string()).collect();
        let mut rng = Rng(0x5EED);
        while words.len() < 8_000 {
            let n = 2 + rng.next() % 3;
            words.push((0..n).map(|_| rng.pick(SYLLABLES)).collect());
        }
        Vocabs {
            first: Vocab::new(FIRST.iter().map(|s| s.to_string()).collect()),
            last: Vocab::new(last),
            words: Vocab::new(words),
        }
    }
}

/// xorshift64*: deterministic, no dependency.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }

    fn pick<'a>(&mut self, items: &'a [&'a str]) -> &'a str {
        items[(self.next() % items.len() as u64) as usize]
    }
}

/// A note-like sentence: Zipf-distributed words, now and then a common phrase and a first name.
fn sentence(rng: &mut Rng, v: &Vocabs, words: usize) -> String {
    let mut out: Vec<String> = (0..words).map(|_| v.words.pick(rng).to_string()).collect();
    if rng.next() % 100 < 15 {
        let at = (rng.next() % (words as u64 + 1)) as usize;
        out.insert(at, rng.pick(PHRASES).to_string());
    }
    if rng.next() % 2 == 0 {
        let name = v.first.pick(rng).to_string();
        out.insert((rng.next() % (out.len() as u64)) as usize, name);
    }
    let mut s = out.join(" ");
    if let Some(first) = s.get(..1) {
        s = first.to_uppercase() + &s[1..];
    }
    s + "."
}

fn ascii_lower(s: &str) -> String {
    s.chars()
        .map(|c| match c {
            'á' | 'à' | 'ä' | 'â' | 'ą' | 'å' => 'a',
            'é' | 'è' | 'ë' | 'ê' => 'e',
            'í' | 'ï' | 'ı' => 'i',
            'ó' | 'ö' | 'ô' | 'ø' => 'o',
            'ú' | 'ü' => 'u',
            'ç' | 'č' => 'c',
            'ł' => 'l',
            'ń' => 'n',
            c => c,
        })
        .flat_map(char::to_lowercase)
        .filter(char::is_ascii_alphanumeric)
        .collect()
}

fn vocabs() -> &'static Vocabs {
    static VOCABS: std::sync::OnceLock<Vocabs> = std::sync::OnceLock::new();
    VOCABS.get_or_init(Vocabs::new)
}

fn contact(rng: &mut Rng, n: u64) -> Contact {
    let v = vocabs();
    let (first, last) = (v.first.pick(rng), v.last.pick(rng));
    let card = json!({
        "name": { "components": [{ "kind": "given", "value": first }, { "kind": "surname", "value": last }] },
        "emails": [{ "address": format!("{}.{}{}@example.org", ascii_lower(first), ascii_lower(last), n % 1000), "contexts": ["home"] }],
        "phones": [{ "number": format!("+33 6 {:02} {:02} {:02} {:02}", rng.next() % 100, rng.next() % 100, rng.next() % 100, rng.next() % 100), "contexts": ["mobile"] }],
        "organizations": [{ "name": rng.pick(ORGS) }],
        "addresses": [{ "components": [{ "kind": "name", "value": format!("{} rue des Champignons", 1 + n % 200) }, { "kind": "locality", "value": rng.pick(CITIES) }], "contexts": ["home"] }],
    });
    let input: ContactInput = serde_json::from_value(
        json!({ "card": card, "crm": { "circles": [rng.pick(&["Friends", "Family", "Work", "Climbing"])] } }),
    )
    .expect("input");
    input.apply(None).expect("contact")
}

fn at(rng: &mut Rng) -> jiff::Timestamp {
    jiff::Timestamp::from_second(1_600_000_000 + (rng.next() % 200_000_000) as i64).expect("instant")
}

fn note(rng: &mut Rng, contacts: u64) -> Note {
    let words = 8 + (rng.next() % 20) as usize;
    Note { content: sentence(rng, vocabs(), words), date: at(rng), contact_id: Some(1 + rng.next() % contacts) }
}

fn activity(rng: &mut Rng, contacts: u64, n: u64) -> Activity {
    let title = format!("{} with {}", rng.pick(OUTINGS), vocabs().first.pick(rng));
    let words = 6 + (rng.next() % 10) as usize;
    let description = sentence(rng, vocabs(), words);
    Activity {
        uuid: format!("00000000-0000-4000-8000-{n:012}"),
        title,
        description,
        location: rng.pick(CITIES).to_string(),
        date: at(rng),
        contact_ids: vec![1 + rng.next() % contacts],
        kind: "meal".into(),
        external_ref: String::new(),
        dav_name: String::new(),
        ical: String::new(),
    }
}

/// The documents as FTS5 gets them: `(kind, user, title, body)`.
type Docs = Vec<(usize, u64, String, String)>;

fn keep_doc<R: Record>(docs: &mut Docs, kind: usize, user: u64, record: &R) {
    if let Some(doc) = record.search_doc() {
        docs.push((kind, user, doc.title, doc.body));
    }
}

/// One row to write.
#[derive(Clone)]
enum Item {
    Contact(Box<Contact>),
    Note(Note),
    Activity(Activity),
}

fn write(engine: &Engine, user: u64, items: Vec<Item>) {
    engine
        .user(UserId(user))
        .write(move |tx| {
            for item in &items {
                match item {
                    Item::Contact(c) => tx.create((**c).clone()).map(|_| ())?,
                    Item::Note(n) => tx.create(n.clone()).map(|_| ())?,
                    Item::Activity(a) => tx.create(a.clone()).map(|_| ())?,
                }
            }
            Ok(())
        })
        .expect("write");
}

/// Writes through the engine in batches; keeps the documents for FTS5.
fn seed(engine: &Engine, user: u64, contacts: u64, notes: u64, activities: u64, rng: &mut Rng, docs: &mut Docs) {
    const BATCH: u64 = 5_000;
    let mut made = 0;
    while made < contacts {
        let mut batch = Vec::new();
        for n in made..(made + BATCH).min(contacts) {
            let mut c = contact(rng, n);
            // What the write path does before storing; the document reads the derived columns.
            c.save_hook();
            keep_doc(docs, 0, user, &c);
            batch.push(Item::Contact(Box::new(c)));
        }
        made += batch.len() as u64;
        write(engine, user, batch);
    }
    if notes + activities == 0 {
        return;
    }
    // Contact ids are global per kind; notes and activities point at this user's range.
    let first_id = engine.user(UserId(user)).view().expect("view").list::<Contact>().expect("list")[0].id;
    let mut made = 0;
    while made < notes + activities {
        let mut batch = Vec::new();
        for n in made..(made + BATCH).min(notes + activities) {
            if n < notes {
                let mut x = note(rng, contacts);
                x.contact_id = x.contact_id.map(|c| c - 1 + first_id);
                keep_doc(docs, 1, user, &x);
                batch.push(Item::Note(x));
            } else {
                let mut x = activity(rng, contacts, n);
                x.contact_ids = x.contact_ids.iter().map(|c| c - 1 + first_id).collect();
                keep_doc(docs, 2, user, &x);
                batch.push(Item::Activity(x));
            }
        }
        made += batch.len() as u64;
        write(engine, user, batch);
    }
}

#[derive(Clone, Copy, PartialEq)]
enum Shape {
    Single,
    Two,
    Prefix,
    /// The first two letters typed: no target in the issue, measured because type-ahead starts there.
    Prefix2,
    Typo,
    Phrase,
}

impl Shape {
    fn name(self) -> &'static str {
        match self {
            Shape::Single => "single term",
            Shape::Two => "two terms",
            Shape::Prefix => "prefix, 3 letters",
            Shape::Prefix2 => "prefix, 2 letters",
            Shape::Typo => "one typo",
            Shape::Phrase => "phrase",
        }
    }

    fn key(self) -> &'static str {
        match self {
            Shape::Single => "single",
            Shape::Two => "two",
            Shape::Prefix => "prefix",
            Shape::Prefix2 => "prefix2",
            Shape::Typo => "typo",
            Shape::Phrase => "phrase",
        }
    }

    /// `(engine query, FTS5 query)`. FTS5 has no typo tolerance: it runs the corrected word.
    fn queries(self, rng: &mut Rng) -> (String, String) {
        match self {
            Shape::Single => {
                let w = ascii_lower(vocabs().last.pick(rng));
                (w.clone(), w)
            }
            Shape::Two => {
                let (a, b) = (ascii_lower(vocabs().first.pick(rng)), ascii_lower(vocabs().last.pick(rng)));
                (format!("{a} {b}"), format!("{a} {b}"))
            }
            Shape::Prefix | Shape::Prefix2 => {
                let name = if rng.next() % 2 == 0 { vocabs().first.pick(rng) } else { vocabs().last.pick(rng) };
                let letters = if self == Shape::Prefix { 3 } else { 2 };
                let w: String = ascii_lower(name).chars().take(letters).collect();
                (w.clone(), format!("{w}*"))
            }
            Shape::Typo => {
                let word = loop {
                    let w = ascii_lower(vocabs().last.pick(rng));
                    if w.len() >= 6 {
                        break w;
                    }
                };
                let mut chars: Vec<char> = word.chars().collect();
                let i = 2 + (rng.next() % (chars.len() as u64 - 3)) as usize;
                chars[i] = if chars[i] == 'x' { 'q' } else { 'x' };
                (chars.into_iter().collect(), word)
            }
            Shape::Phrase => {
                let p = rng.pick(PHRASES);
                (format!("\"{p}\""), format!("\"{p}\""))
            }
        }
    }
}

/// CPU seconds this process has used so far (user + system, all threads), from `/proc/self/stat`;
/// 0 where that file is missing. Shows whether a phase kept both cores busy.
fn cpu_seconds() -> f64 {
    let Ok(stat) = std::fs::read_to_string("/proc/self/stat") else { return 0.0 };
    // Fields after the command name (which may hold spaces) start behind its closing parenthesis.
    let Some((_, rest)) = stat.rsplit_once(')') else { return 0.0 };
    let fields: Vec<&str> = rest.split_whitespace().collect();
    let ticks = |i: usize| fields.get(i).and_then(|v| v.parse::<f64>().ok()).unwrap_or(0.0);
    // utime and stime are fields 14 and 15 of the line, 12 and 13 after the name; 100 ticks a second.
    (ticks(11) + ticks(12)) / 100.0
}

/// Waits until the process has used less than a tenth of a core for half a second: the
/// background merges of the seeding are over, so a rebuild measured next has the machine to
/// itself. Returns how long that took.
fn settle() -> Duration {
    let started = Instant::now();
    loop {
        let before = cpu_seconds();
        std::thread::sleep(Duration::from_millis(500));
        if cpu_seconds() - before < 0.05 || started.elapsed() > Duration::from_secs(300) {
            return started.elapsed();
        }
    }
}

fn pct(lat: &mut [Duration], p: f64) -> f64 {
    lat.sort();
    lat[((lat.len() - 1) as f64 * p).round() as usize].as_secs_f64() * 1000.0
}

fn engine_search(engine: &Engine, user: u64, q: &str) -> usize {
    let Some(plan) = Plan::parse(q) else { return 0 };
    let request =
        SearchRequest { plan: &plan, kinds: None, include_hidden: false, contacts: None, limit: 10, offset: 0 };
    engine.user(UserId(user)).search(&request).expect("search").iter().map(|g| g.hits.len()).sum()
}

const TABLES: [&str; 3] = ["contacts_fts", "notes_fts", "activities_fts"];

fn fts_search(stmts: &mut [rusqlite::Statement<'_>], user: u64, q: &str) -> usize {
    let mut n = 0;
    for stmt in stmts.iter_mut() {
        let rows = stmt.query_map(rusqlite::params![q, user as i64], |r| r.get::<_, i64>(0)).expect("fts query");
        n += rows.count();
    }
    n
}

fn main() {
    let contacts: u64 = std::env::var("BENCH_CONTACTS").ok().and_then(|v| v.parse().ok()).unwrap_or(100_000);
    // `BENCH_FTS5=0` skips the comparison (for quick runs while tuning the engine).
    let with_fts = std::env::var("BENCH_FTS5").map_or(true, |v| v != "0");
    let queries: usize = std::env::var("BENCH_QUERIES").ok().and_then(|v| v.parse().ok()).unwrap_or(1000);
    let dir = tempfile::tempdir().expect("tempdir");
    let mut search = SearchOptions::new(dir.path().join("search"), mycorrhizal::crm::search_sources());
    search.commit_interval = Duration::from_millis(500);
    // `BENCH_WRITER_MB` sets the index writer's memory per thread (for tuning).
    if let Some(mb) = std::env::var("BENCH_WRITER_MB").ok().and_then(|v| v.parse::<usize>().ok()) {
        search.writer_memory = mb << 20;
    }
    let options = Options { search: Some(search), durability: Durability::None, ..Options::default() };
    let (engine, _) = Engine::open(dir.path().join("bench.redb"), options).expect("engine");
    let mut rng = Rng(0x9E37_79B9_7F4A_7C15);
    let mut docs: Docs = Vec::new();

    println!(
        "# Search benchmark: {contacts} contacts, {} notes, {} activities for user 1; 9 users x {} contacts",
        2 * contacts,
        2 * contacts,
        contacts / 10
    );
    let started = Instant::now();
    seed(&engine, 1, contacts, 2 * contacts, 2 * contacts, &mut rng, &mut docs);
    engine.search_flush().expect("flush");
    let big = docs.len();
    println!(
        "seeded and indexed through the change feed: {big} documents in {:.1} s ({:.0} docs/s, database writes included)",
        started.elapsed().as_secs_f64(),
        big as f64 / started.elapsed().as_secs_f64()
    );
    println!("background merges of the seeding settled after {:.1} s", settle().as_secs_f64());
    let cpu = cpu_seconds();
    let report = engine.search_rebuild().expect("rebuild");
    println!(
        "rebuild, index of the big user only: {big} documents in {:.2} s ({:.0} docs/s, {:.1} CPU s)",
        report.took.as_secs_f64(),
        big as f64 / report.took.as_secs_f64(),
        cpu_seconds() - cpu
    );
    for user in 2..=10 {
        seed(&engine, user, contacts / 10, 0, 0, &mut rng, &mut docs);
    }
    engine.search_flush().expect("flush");
    println!("background merges settled after {:.1} s", settle().as_secs_f64());
    let cpu = cpu_seconds();
    let report = engine.search_rebuild().expect("rebuild");
    println!(
        "rebuild, all 10 users: {} documents in {:.2} s ({:.0} docs/s, {:.1} CPU s)",
        docs.len(),
        report.took.as_secs_f64(),
        docs.len() as f64 / report.took.as_secs_f64(),
        cpu_seconds() - cpu
    );

    // SQLite FTS5 on the same documents.
    let db = rusqlite::Connection::open(dir.path().join("fts.sqlite")).expect("sqlite");
    db.execute_batch("PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL; PRAGMA cache_size=-262144;")
        .expect("pragmas");
    for t in TABLES {
        db.execute_batch(&format!(
            "CREATE VIRTUAL TABLE {t} USING fts5(title, body, user UNINDEXED, tokenize = 'unicode61 remove_diacritics 2');"
        ))
        .expect("create");
    }
    let started = Instant::now();
    {
        let tx = db.unchecked_transaction().expect("tx");
        for (kind, user, title, body) in docs.iter().filter(|_| with_fts) {
            tx.execute(
                &format!("INSERT INTO {} (title, body, user) VALUES (?1, ?2, ?3)", TABLES[*kind]),
                rusqlite::params![title, body, *user as i64],
            )
            .expect("insert");
        }
        tx.commit().expect("commit");
    }
    println!(
        "FTS5 build: {} documents in {:.2} s ({:.0} docs/s)",
        docs.len(),
        started.elapsed().as_secs_f64(),
        docs.len() as f64 / started.elapsed().as_secs_f64()
    );
    let mut stmts: Vec<rusqlite::Statement<'_>> = TABLES
        .iter()
        .map(|t| {
            db.prepare(&format!(
                "SELECT rowid FROM {t} WHERE {t} MATCH ?1 AND user = ?2 ORDER BY bm25({t}, 3.0, 1.0) LIMIT 10"
            ))
            .expect("prepare")
        })
        .collect();

    // The rebuild returns before its background merge into one segment; measure queries after it.
    let merging = Instant::now();
    while engine.search_status().expect("status").segments > 1 && merging.elapsed() < Duration::from_secs(120) {
        std::thread::sleep(Duration::from_millis(50));
    }
    println!(
        "index segments: {} (background merge after the rebuild finished {:.1} s after it returned)",
        engine.search_status().expect("status").segments,
        merging.elapsed().as_secs_f64()
    );
    println!();
    println!(
        "| query shape | engine p50 | engine p99 | FTS5 p50 | FTS5 p99 | FTS5/engine at p99 | mean hits (engine / FTS5) |"
    );
    println!("|---|---|---|---|---|---|---|");
    // `BENCH_SHAPES=two,phrase` runs only those shapes (for profiling one of them).
    let only = std::env::var("BENCH_SHAPES").unwrap_or_default();
    let shapes = [Shape::Single, Shape::Two, Shape::Prefix, Shape::Prefix2, Shape::Typo, Shape::Phrase];
    for shape in shapes.into_iter().filter(|s| only.is_empty() || only.split(',').any(|k| k.trim() == s.key())) {
        let mut qrng = Rng(0xDEAD_BEEF_u64 ^ shape.name().len() as u64);
        let pairs: Vec<(String, String)> = (0..queries).map(|_| shape.queries(&mut qrng)).collect();
        for (q, f) in pairs.iter().take(50) {
            engine_search(&engine, 1, q);
            if with_fts {
                fts_search(&mut stmts, 1, f);
            }
        }
        let (mut ours, mut theirs) = (Vec::with_capacity(queries), Vec::with_capacity(queries));
        let (mut our_hits, mut their_hits) = (0usize, 0usize);
        for (q, f) in &pairs {
            let t = Instant::now();
            our_hits += engine_search(&engine, 1, q);
            ours.push(t.elapsed());
            let t = Instant::now();
            if with_fts {
                their_hits += fts_search(&mut stmts, 1, f);
            }
            theirs.push(t.elapsed());
        }
        let (o50, o99, t50, t99) =
            (pct(&mut ours, 0.5), pct(&mut ours, 0.99), pct(&mut theirs, 0.5), pct(&mut theirs, 0.99));
        let note = if shape == Shape::Typo { " (FTS5: corrected word, it has no typo tolerance)" } else { "" };
        println!(
            "| {}{note} | {o50:.3} ms | {o99:.3} ms | {t50:.3} ms | {t99:.3} ms | {:.1}x | {:.1} / {:.1} |",
            shape.name(),
            t99 / o99,
            our_hits as f64 / queries as f64,
            their_hits as f64 / queries as f64
        );
    }

    // Read-your-writes: a row is found by the first search after its write returns, while the
    // index has not committed it; then how long until a commit covers it.
    println!();
    let scope = engine.user(UserId(1));
    let mut visible = Vec::new();
    let mut overlay_queries = Vec::new();
    let started = Instant::now();
    for i in 0..200u64 {
        let mut c = contact(&mut rng, i);
        c.save_hook();
        let name = format!("Quetzalcoatl{i}");
        let mut card: serde_json::Value = serde_json::from_str(&c.card).expect("card");
        card["name"]["components"][0]["value"] = json!(name);
        c.card = card.to_string();
        let written = Instant::now();
        scope.create(c).expect("create");
        let t = Instant::now();
        let found = engine_search(&engine, 1, &name.to_lowercase());
        overlay_queries.push(t.elapsed());
        assert!(found >= 1, "a write was not visible to the next search");
        visible.push(written.elapsed());
    }
    let pending = engine.search_status().expect("status").pending;
    let waited = Instant::now();
    while engine.search_status().expect("status").pending > 0 {
        std::thread::sleep(Duration::from_millis(5));
    }
    println!(
        "read-your-writes: 200 creates, each found by the next search (no index commit in between; {} rows pending at the end)",
        pending
    );
    println!(
        "  write + first search p50 {:.3} ms, p99 {:.3} ms; that search alone p50 {:.3} ms, p99 {:.3} ms",
        pct(&mut visible, 0.5),
        pct(&mut visible, 0.99),
        pct(&mut overlay_queries, 0.5),
        pct(&mut overlay_queries, 0.99)
    );
    println!(
        "  index commit covering them: {:.0} ms after the last write (commit interval 500 ms); last commit took {} ms; total {:.1} s",
        waited.elapsed().as_secs_f64() * 1000.0,
        engine.search_status().expect("status").last_commit_ms,
        started.elapsed().as_secs_f64()
    );
}
