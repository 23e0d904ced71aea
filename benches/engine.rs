//! Engine benchmark on contact-sized records with real fsync (Durability::Immediate):
//! single-row durable create latency; creates/s with 1, 8 and 32 concurrent writers (group
//! commit); point reads/s, secondary-index lookups/s and "50 by name" pages over a seeded user.
//!
//! Run: `cargo bench -p mycorrhizal-engine --bench engine`. `BENCH_CONTACTS` sets the seeded
//! size (default 100000), `BENCH_SECONDS` each timed phase (default 3).

use std::sync::Arc;
use std::time::{Duration, Instant};

use mycorrhizal_engine::{Engine, Kind, Options, Record, UserId, kind};
use serde::{Deserialize, Serialize};

/// Roughly what a real contact row weighs: names, two emails, phones, an address, a note.
#[derive(Debug, Clone, Serialize, Deserialize)]
struct Contact {
    first: String,
    last: String,
    sort_name: String,
    emails: Vec<String>,
    phones: Vec<String>,
    address: String,
    org: String,
    note: String,
}

impl Contact {
    fn sample(n: u64) -> Contact {
        Contact {
            first: format!("First{n}"),
            last: format!("Last{:07}", (n * 7_919) % 1_000_003),
            sort_name: String::new(),
            emails: vec![format!("person{n}@example.org"), format!("p{n}@work.example.com")],
            phones: vec![format!("+1 555 {:07}", n % 10_000_000), "+44 20 7946 0958".into()],
            address: format!("{n} Mycelium Lane, Spore Town, 90210, Fungaria"),
            org: "Hyphae & Partners".into(),
            note: "Met at the mushroom fair; likes chanterelles, hates truffle oil. ".repeat(6),
        }
    }
}

impl Record for Contact {
    const KIND: Kind = kind!("bench_contact", soft_delete);

    fn save_hook(&mut self) {
        self.sort_name = format!("{} {}", self.last, self.first).to_lowercase();
    }

    fn index_entries(&self) -> Vec<(&'static str, String)> {
        let mut out = vec![("sort_name", self.sort_name.clone())];
        out.extend(self.emails.iter().map(|e| ("email", e.to_lowercase())));
        out
    }
}

fn percentile(sorted: &[Duration], p: f64) -> Duration {
    if sorted.is_empty() {
        return Duration::ZERO;
    }
    sorted[((sorted.len() - 1) as f64 * p).round() as usize]
}

fn micros(d: Duration) -> String {
    format!("{:.1} us", d.as_secs_f64() * 1e6)
}

fn row(name: &str, ops: usize, elapsed: Duration, mut lat: Vec<Duration>) {
    lat.sort();
    println!(
        "| {name:<44} | {:>10.0} | {:>11} | {:>11} |",
        ops as f64 / elapsed.as_secs_f64(),
        micros(percentile(&lat, 0.5)),
        micros(percentile(&lat, 0.99))
    );
}

fn env_or(name: &str, default: u64) -> u64 {
    std::env::var(name).ok().and_then(|v| v.parse().ok()).unwrap_or(default)
}

fn main() {
    let contacts = env_or("BENCH_CONTACTS", 100_000);
    let seconds = Duration::from_secs(env_or("BENCH_SECONDS", 3));
    let dir = tempfile::tempdir().expect("tempdir");
    let (engine, _) = Engine::open(dir.path().join("bench.redb"), Options::default()).expect("open");
    println!(
        "engine bench: {} cores, {contacts} seeded contacts, {}s phases, durable commits",
        std::thread::available_parallelism().map(|n| n.get()).unwrap_or(1),
        seconds.as_secs()
    );
    println!("| operation                                    |      ops/s |         p50 |         p99 |");
    println!("|----------------------------------------------|-----------:|------------:|------------:|");

    // Single-row durable create latency: one writer, one commit (one fsync) per create.
    let writer = engine.user(UserId(1));
    let mut lat = Vec::new();
    let started = Instant::now();
    for n in 0..300 {
        let t = Instant::now();
        writer.create(Contact::sample(n)).expect("create");
        lat.push(t.elapsed());
    }
    row("create, 1 writer (sequential)", 300, started.elapsed(), lat);

    for writers in [1usize, 8, 32] {
        let (ops, elapsed, lat) = concurrent_creates(&engine, writers, seconds);
        row(&format!("create, {writers} concurrent writers (group commit)"), ops, elapsed, lat);
    }

    // Seed the read user in large transactions, then measure reads.
    let reader = UserId(2);
    let seed_started = Instant::now();
    let mut n = 0;
    while n < contacts {
        let end = (n + 5_000).min(contacts);
        let user = engine.user(reader);
        user.write(move |tx| {
            for i in n..end {
                tx.create(Contact::sample(i))?;
            }
            Ok(())
        })
        .expect("seed");
        n = end;
    }
    let seeded = seed_started.elapsed();
    let name = format!("seed {contacts} contacts, 5000 per transaction");
    println!("| {name:<44} | {:>10.0} |             |             |", contacts as f64 / seeded.as_secs_f64());

    let scope = engine.user(reader);
    let ids: Vec<u64> = scope
        .view()
        .unwrap()
        .page::<Contact>("sort_name", None, usize::MAX, false)
        .unwrap()
        .rows
        .iter()
        .map(|r| r.id)
        .collect();
    let mut rng = 0x9E37_79B9_7F4A_7C15u64;
    let mut next = move |bound: usize| {
        rng ^= rng << 13;
        rng ^= rng >> 7;
        rng ^= rng << 17;
        (rng % bound as u64) as usize
    };
    timed("point get (own read transaction)", seconds, || {
        scope.get::<Contact>(ids[next(ids.len())]).expect("get");
    });
    let picks: Vec<u64> = (0..1000).map(|_| next(contacts as usize) as u64).collect();
    let mut k = 0;
    timed("index lookup by email", seconds, || {
        k = (k + 1) % picks.len();
        let hits = scope.find::<Contact>("email", &format!("person{}@example.org", picks[k])).expect("find");
        assert_eq!(hits.len(), 1);
    });
    timed("first page of 50 by sort_name", seconds, || {
        let page = scope.view().unwrap().page::<Contact>("sort_name", None, 50, false).expect("page");
        assert_eq!(page.rows.len(), 50);
    });
    let names: Vec<String> = (0..1000)
        .map(|_| Contact::sample(next(contacts as usize) as u64))
        .map(|mut c| {
            c.save_hook();
            c.sort_name
        })
        .collect();
    let mut k = 0;
    timed("page of 50 by sort_name after a cursor", seconds, || {
        k = (k + 1) % names.len();
        let page = scope.view().unwrap().page::<Contact>("sort_name", Some((&names[k], 0)), 50, false).expect("page");
        assert!(!page.rows.is_empty() || names[k].as_str() > "last9");
    });
    let size = std::fs::metadata(dir.path().join("bench.redb")).map(|m| m.len()).unwrap_or(0);
    println!("database file: {:.1} MiB", size as f64 / 1_048_576.0);
}

fn timed(name: &str, limit: Duration, mut op: impl FnMut()) {
    let mut lat = Vec::new();
    let started = Instant::now();
    while started.elapsed() < limit {
        let t = Instant::now();
        op();
        lat.push(t.elapsed());
    }
    row(name, lat.len(), started.elapsed(), lat);
}

fn concurrent_creates(engine: &Engine, writers: usize, limit: Duration) -> (usize, Duration, Vec<Duration>) {
    let engine = Arc::new(engine.clone());
    let started = Instant::now();
    let handles: Vec<_> = (0..writers)
        .map(|w| {
            let engine = engine.clone();
            std::thread::spawn(move || {
                let user = engine.user(UserId(100 + w as u64));
                let mut lat = Vec::new();
                let mut n = 0;
                while started.elapsed() < limit {
                    let t = Instant::now();
                    user.create(Contact::sample(n)).expect("create");
                    lat.push(t.elapsed());
                    n += 1;
                }
                lat
            })
        })
        .collect();
    let lat: Vec<Duration> = handles.into_iter().flat_map(|h| h.join().expect("writer")).collect();
    (lat.len(), started.elapsed(), lat)
}
