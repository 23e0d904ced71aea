//! Sync in at scale: a Radicale address book (the pinned package of tests/requirements.txt, from
//! the repository's `.venv` or next to `MYCORRHIZAL_TEST_PYTHON`) of `BENCH_CARDS` vCard 3.0 cards
//! (default 10,000, one in ten with a 12 KB photo), written into its folder before it starts.
//! A server state opened as the server opens it (search index included) subscribes to it and
//! syncs: the first sync, then `BENCH_INCREMENTAL` syncs (default 5) each after 10 cards changed
//! on Radicale over HTTP. `BENCH_ROUNDS` rounds (default 3), each into a fresh server. Each sync's
//! time is split into the time spent waiting on Radicale (its answers and their transfer) and
//! the rest, this server's. Targets (issue #52), this server's share: first sync at most 10 s,
//! an incremental sync of 10 changes at most 100 ms.
//!
//! Run: `cargo bench -p mycorrhizal --bench subscriptions`.

#[allow(dead_code)]
mod seed;

use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use base64::Engine as _;
use mycorrhizal::sync::Source;
use mycorrhizal::sync::ops::{self, SubscriptionInput};
use mycorrhizal::sync::run::Attempt;
use mycorrhizal_engine::system::Trigger;

const USER: u64 = 1;

fn python() -> PathBuf {
    std::env::var_os("MYCORRHIZAL_TEST_PYTHON")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../.venv/bin/python"))
}

fn card(n: usize, generation: usize) -> String {
    let mut text = format!(
        "BEGIN:VCARD\r\nVERSION:3.0\r\nUID:bench-{n:05}\r\nFN:Person {n} Lastname{f}\r\nN:Lastname{f};Person {n};;;\r\n\
         EMAIL;TYPE=INTERNET,HOME:person{n}@example.org\r\nTEL;TYPE=CELL:+1 555 {n:07}\r\n\
         ADR;TYPE=HOME:;;{n} Mycelium Lane;Spore Town;;12345;Fungaria\r\nORG:Mushroom Co\r\n\
         NOTE:Generation {generation}\r\n",
        f = n % 997
    );
    if n.is_multiple_of(10) {
        let mut bytes = vec![0xFF, 0xD8, 0xFF, 0xE0];
        bytes.extend((0..12_000).map(|i| ((i * 31 + n) % 251) as u8));
        let encoded = base64::engine::general_purpose::STANDARD.encode(&bytes);
        text.push_str(&format!("PHOTO;ENCODING=b;TYPE=JPEG:{encoded}\r\n"));
    }
    text.push_str("END:VCARD\r\n");
    text
}

struct Radicale {
    child: Child,
    port: u16,
    _dir: tempfile::TempDir,
}

impl Drop for Radicale {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn radicale(cards: usize) -> Radicale {
    let dir = tempfile::tempdir().expect("temp dir");
    let root = dir.path();
    let book = root.join("data/collection-root/remy/friends");
    std::fs::create_dir_all(&book).expect("book folder");
    std::fs::write(book.join(".Radicale.props"), r#"{"D:displayname": "Bench", "tag": "VADDRESSBOOK"}"#)
        .expect("props");
    for n in 0..cards {
        std::fs::write(book.join(format!("bench-{n:05}.vcf")), card(n, 0)).expect("card");
    }
    std::fs::write(root.join("users"), "remy:secret1\n").expect("users");
    let port = std::net::TcpListener::bind("127.0.0.1:0").expect("port").local_addr().expect("addr").port();
    let config = format!(
        "[server]\nhosts = 127.0.0.1:{port}\nmax_connections = 20\n[auth]\ntype = htpasswd\nhtpasswd_filename = {}\n\
         htpasswd_encryption = plain\n[storage]\nfilesystem_folder = {}\n[rights]\ntype = owner_only\n[logging]\nlevel = warning\n",
        root.join("users").display(),
        root.join("data").display()
    );
    std::fs::write(root.join("config"), config).expect("config");
    let child = Command::new(python())
        .args(["-m", "radicale", "--config", &root.join("config").display().to_string()])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("start Radicale (run ./scripts/test.sh first: it installs it into .venv)");
    let deadline = Instant::now() + Duration::from_secs(30);
    while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
        assert!(Instant::now() < deadline, "Radicale did not start");
        std::thread::sleep(Duration::from_millis(50));
    }
    Radicale { child, port, _dir: dir }
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}

fn line(name: &str, mut runs: Vec<Duration>) {
    runs.sort();
    println!(
        "| {name:<36} | {:>3} | {:>9.1} ms | {:>9.1} - {:>9.1} ms |",
        runs.len(),
        ms(runs[runs.len() / 2]),
        ms(runs[0]),
        ms(runs[runs.len() - 1])
    );
}

#[derive(Default)]
struct Split {
    total: Vec<Duration>,
    remote: Vec<Duration>,
    ours: Vec<Duration>,
}

impl Split {
    fn add(&mut self, attempt: Attempt, expect_changed: Option<u64>) {
        let Attempt::Synced(counts, timing) = attempt else { panic!("the sync failed: {attempt:?}") };
        if let Some(n) = expect_changed {
            assert_eq!(counts.updated, n, "{counts:?}");
        }
        let total = Duration::from_millis(timing.duration_ms);
        let remote = Duration::from_millis(timing.remote_ms);
        self.total.push(total);
        self.remote.push(remote);
        self.ours.push(total.saturating_sub(remote));
    }

    fn print(self, name: &str) {
        line(&format!("{name}: whole"), self.total);
        line(&format!("{name}: waiting on Radicale"), self.remote);
        line(&format!("{name}: this server"), self.ours);
    }
}

#[tokio::main]
async fn main() {
    let cards = seed::setting("CARDS", 10_000) as usize;
    let rounds = seed::setting("ROUNDS", 3);
    let incremental = seed::setting("INCREMENTAL", 5) as usize;
    let prepared = Instant::now();
    let remote = radicale(cards);
    let url = format!("http://127.0.0.1:{}/remy/friends/", remote.port);
    let http = reqwest::Client::new();
    println!("{cards} cards written for Radicale in {:.1} s", prepared.elapsed().as_secs_f64());
    let (mut first, mut after) = (Split::default(), Split::default());
    let mut generation = 0;
    for round in 0..rounds {
        let dir = tempfile::tempdir().expect("data dir");
        let (_engine, state) = seed::open(dir.path()).await;
        let input = SubscriptionInput {
            name: Some("Bench".into()),
            url: Some(url.clone()),
            username: Some("remy".into()),
            password: Some("secret1".into()),
            sync_enabled: Some(false),
            ..SubscriptionInput::default()
        };
        let id = ops::create(&state.sync, USER, Source::AddressBook, input).await.expect("subscribe").id;
        let attempt = mycorrhizal::jobs::sync_now(&state, id, Source::AddressBook, Trigger::Manual).await;
        if let Attempt::Synced(counts, _) = &attempt {
            assert_eq!(counts.created + counts.updated, cards as u64, "round {round}: {counts:?}");
        }
        first.add(attempt, None);
        for _ in 0..incremental {
            generation += 1;
            for k in 0..10 {
                let n = (generation * 10 + k) * 97 % cards;
                let put = http
                    .put(format!("{url}bench-{n:05}.vcf"))
                    .basic_auth("remy", Some("secret1"))
                    .header("content-type", "text/vcard")
                    .body(card(n, generation))
                    .send()
                    .await
                    .expect("PUT");
                assert!(put.status().is_success(), "PUT: {}", put.status());
            }
            let attempt = mycorrhizal::jobs::sync_now(&state, id, Source::AddressBook, Trigger::Manual).await;
            after.add(attempt, Some(10));
        }
    }
    println!("| sync of {cards} cards (10% with photos)         | runs | median | range |");
    println!("|---|---|---|---|");
    first.print("first sync");
    after.print("after 10 remote changes");
}
