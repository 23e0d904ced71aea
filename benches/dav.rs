//! CardDAV benchmark over real HTTP on loopback: the server (`mycorrhizal::serve`, the same
//! stack as the binary) in this process, reqwest clients on 127.0.0.2-9 (one per client, so each
//! has its own CardDAV rate bucket, as eight phones would). `BENCH_CARDS` (default 10,000)
//! vCard 3.0 cards, one in ten with a photo, PUT by 8 concurrent clients; then PROPFIND Depth 1
//! (getetag) of the whole book, an addressbook-multiget of 1,000 hrefs, and sync-collection from
//! an empty token and from a token 10 changes old; these reads twice: right after the PUTs (the
//! search index still taking in the new cards beside them) and again at rest (the index has
//! taken in every change, then 3 s for its merges), as a phone syncing every 15 minutes finds
//! the book. Prints medians and ranges.
//!
//! The PUTs run `BENCH_STREAMS` times (default 5), each into a fresh server, and the last 1,000
//! cards' rate against the first 1,000's is summed up over them (median, range): on a shared
//! 2-core machine one stream's ratio moves by 20 points and more from run to run. The reads
//! follow the last stream.
//!
//! `BENCH_CLIENTS` (1-8) changes the number of clients and `BENCH_PUT_ONLY` stops after the
//! PUTs: `scripts/dav-instructions.sh` counts instructions with one client, one stream, the PUTs
//! only.
//! `BENCH_ORDERED` sends cards whose index entries all fall at the end of the index (see `card`).
//!
//! Run: `cargo bench -p mycorrhizal --bench dav`.

use std::collections::HashMap;
use std::net::IpAddr;
use std::time::{Duration, Instant};

use mycorrhizal::config::{Config, Env};
use mycorrhizal::{AppState, serve};

const USER: &str = "bench";
const PASSWORD: &str = "lichen-moss-fern-42";
/// Concurrent clients, 8 unless `BENCH_CLIENTS` (1 to 8) says otherwise: one client sends the
/// cards one after another, which makes the writer's batches the same from run to run (each
/// card its own batch), for counting instructions (`scripts/dav-instructions.sh`).
fn clients() -> usize {
    std::env::var("BENCH_CLIENTS").ok().and_then(|v| v.parse().ok()).unwrap_or(8).clamp(1, 8)
}
/// Runs of each read (`BENCH_RUNS` changes it, e.g. to profile one).
fn repeats() -> usize {
    std::env::var("BENCH_RUNS").ok().and_then(|v| v.parse().ok()).unwrap_or(9)
}

fn card(n: usize) -> String {
    // `BENCH_ORDERED`: every index entry of card n sorts after those of the cards before it (the
    // names and e-mails zero-padded, no birthday) and no card has a photo, so no write lands
    // anywhere but at the end of a table: what grows then is not the scattered entries' doing.
    let ordered = std::env::var_os("BENCH_ORDERED").is_some();
    let (given, family, email) = if ordered {
        ("Person".to_string(), format!("Lastname{n:05}"), format!("person{n:05}"))
    } else {
        (format!("Person {n}"), format!("Lastname{}", n % 997), format!("person{n}"))
    };
    let mut text = format!(
        "BEGIN:VCARD\r\nVERSION:3.0\r\nUID:bench-{n:05}\r\nFN:{given} {family}\r\nN:{family};{given};;;\r\n\
         EMAIL;TYPE=INTERNET,HOME:{email}@example.org\r\nTEL;TYPE=CELL:+1 555 {:07}\r\n\
         ADR;TYPE=HOME:;;{n} Mycelium Lane;Spore Town;;12345;Fungaria\r\nORG:Mushroom Co\r\n",
        n % 10_000_000
    );
    if !ordered {
        text.push_str(&format!("BDAY:{}-{:02}-{:02}\r\n", 1950 + n % 50, 1 + n % 12, 1 + n % 28));
    }
    text.push_str(&format!("NOTE:Met at the mushroom fair\\, likes chanterelles.\r\nX-CUSTOM-FIELD:{n}\r\n"));
    if !ordered && n.is_multiple_of(10) {
        // A small JPEG-sized picture (the server keeps pictures by their signature).
        let mut bytes = vec![0xFF, 0xD8, 0xFF, 0xE0];
        bytes.extend((0..12_000).map(|i| ((i * 31 + n) % 251) as u8));
        use base64::Engine as _;
        let encoded = base64::engine::general_purpose::STANDARD.encode(&bytes);
        text.push_str(&format!("PHOTO;ENCODING=b;TYPE=JPEG:{encoded}\r\n"));
    }
    text.push_str("END:VCARD\r\n");
    text
}

fn client(local: IpAddr) -> reqwest::Client {
    reqwest::Client::builder().local_address(local).pool_max_idle_per_host(4).build().expect("client")
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}

fn summary(name: &str, mut runs: Vec<Duration>) {
    if std::env::var_os("BENCH_EACH").is_some() {
        let each: Vec<String> = runs.iter().map(|r| format!("{:.1}", ms(*r))).collect();
        println!("  {name}, in order: {} ms", each.join(" "));
    }
    runs.sort();
    let median = runs[runs.len() / 2];
    println!(
        "| {name:<44} | {:>4} | {:>9.2} ms | {:>9.2} - {:>9.2} ms |",
        runs.len(),
        ms(median),
        ms(runs[0]),
        ms(runs[runs.len() - 1])
    );
}

async fn report(http: &reqwest::Client, url: &str, depth: Option<&str>, method: &str, body: String) -> (u16, String) {
    let mut request = http
        .request(reqwest::Method::from_bytes(method.as_bytes()).expect("method"), url)
        .basic_auth(USER, Some(PASSWORD))
        .header("content-type", "application/xml")
        .body(body);
    if let Some(depth) = depth {
        request = request.header("depth", depth);
    }
    let response = request.send().await.expect("request");
    let status = response.status().as_u16();
    (status, response.text().await.expect("body"))
}

fn sync_body(token: &str) -> String {
    format!(
        r#"<D:sync-collection xmlns:D="DAV:"><D:sync-token>{token}</D:sync-token><D:sync-level>1</D:sync-level><D:prop><D:getetag/></D:prop></D:sync-collection>"#
    )
}

/// CPU time (ms) used so far by this process's threads, by what they do: the engine's writer,
/// the request threads (the runtime, which the server and the bench's clients share, and the
/// request CPU pool), the search index's threads (indexing, commits, merges) and the rest. Read from `/proc/self/task` (Linux;
/// elsewhere nothing is reported) into `seen`, which keeps a thread's last figure after it ends
/// (a finished merge thread's time still counts). Tells a writer that costs more per card as the
/// book grows apart from a machine that is merely busier.
fn cpu_by_role(seen: &mut HashMap<String, (usize, f64)>) -> Option<[f64; 4]> {
    let tick_ms = 10.0; // USER_HZ is 100 on Linux
    for task in std::fs::read_dir("/proc/self/task").ok()?.flatten() {
        let Ok(stat) = std::fs::read_to_string(task.path().join("stat")) else { continue };
        let (Some(open), Some(close)) = (stat.find('('), stat.rfind(')')) else { continue };
        let name = &stat[open + 1..close];
        let fields: Vec<&str> = stat[close + 2..].split(' ').collect();
        let (Some(user), Some(system)) = (fields.get(11), fields.get(12)) else { continue };
        let ticks: f64 = user.parse::<f64>().unwrap_or(0.0) + system.parse::<f64>().unwrap_or(0.0);
        let role = match name {
            "engine-writer" => 0,
            n if n.starts_with("tokio-rt-worker") || n.starts_with("request-cpu") => 1,
            n if ["tantivy", "search", "merge", "segment", "docstore"].iter().any(|k| n.contains(k)) => 2,
            _ => 3,
        };
        seen.insert(task.file_name().to_string_lossy().into_owned(), (role, ticks * tick_ms));
    }
    let mut roles = [0.0; 4];
    for (role, ms) in seen.values() {
        roles[*role] += ms;
    }
    Some(roles)
}

/// Samples [`cpu_by_role`] every 20 ms until `stop`, with the time of each sample.
fn sample_cpu(
    stop: std::sync::Arc<std::sync::atomic::AtomicBool>,
) -> std::thread::JoinHandle<Vec<(Instant, [f64; 4])>> {
    let sampler = std::thread::Builder::new().name("bench-cpu-sampler".into());
    sampler
        .spawn(move || {
            let (mut samples, mut seen) = (Vec::new(), HashMap::new());
            while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                if let Some(roles) = cpu_by_role(&mut seen) {
                    samples.push((Instant::now(), roles));
                }
                std::thread::sleep(Duration::from_millis(20));
            }
            samples
        })
        .expect("sampler thread")
}

/// CPU used by each role between two instants, from the samples nearest them.
fn cpu_between(samples: &[(Instant, [f64; 4])], from: Instant, to: Instant) -> [f64; 4] {
    let at = |t: Instant| {
        samples.iter().min_by_key(|(s, _)| if *s > t { *s - t } else { t - *s }).map_or([0.0; 4], |(_, r)| *r)
    };
    let (a, b) = (at(from), at(to));
    [b[0] - a[0], b[1] - a[1], b[2] - a[2], b[3] - a[3]]
}

fn token_of(body: &str) -> String {
    body.rsplit("<D:sync-token>").next().and_then(|s| s.split("</D:sync-token>").next()).unwrap_or("").to_string()
}

/// PUT streams, each into a fresh server (`BENCH_STREAMS`, default 5): the ratio of the last
/// 1,000 cards' rate to the first's moves by 20 points and more from one stream to the next on a
/// shared 2-core machine, so a median of several is the figure to compare.
fn streams() -> usize {
    std::env::var("BENCH_STREAMS").ok().and_then(|v| v.parse().ok()).unwrap_or(5).max(1)
}

fn main() {
    let cards: usize = std::env::var("BENCH_CARDS").ok().and_then(|v| v.parse().ok()).unwrap_or(10_000);
    let runtime = tokio::runtime::Builder::new_multi_thread().enable_all().build().expect("runtime");
    runtime.block_on(async move {
        let texts: Vec<String> = (0..cards).map(card).collect();
        let bytes: usize = texts.iter().map(String::len).sum();
        let texts = std::sync::Arc::new(texts);
        let count = streams();
        let mut ratios = Vec::new();
        for n in 1..=count {
            if count > 1 {
                println!("PUT stream {n} of {count}, into a fresh server:");
            }
            ratios.extend(stream(cards, texts.clone(), bytes, n == count).await);
        }
        if ratios.len() > 1 {
            let shown: Vec<String> = ratios.iter().map(|r| format!("{r:+.1}%")).collect();
            ratios.sort_by(f64::total_cmp);
            let within = ratios.iter().filter(|r| r.abs() <= 20.0).count();
            println!(
                "Last 1,000 cards' rate against the first 1,000's, {} streams: median {:+.1}% (range {:+.1}% to {:+.1}%; within 20% in {within}); in order {}",
                ratios.len(),
                ratios[ratios.len() / 2],
                ratios[0],
                ratios[ratios.len() - 1],
                shown.join(" ")
            );
        }
    });
}

/// One PUT stream into a fresh server; the last one goes on to the reads (unless
/// `BENCH_PUT_ONLY`). Returns the last 1,000 cards' rate against the first 1,000's, in percent.
async fn stream(cards: usize, texts: std::sync::Arc<Vec<String>>, bytes: usize, last: bool) -> Option<f64> {
    let dir = tempfile::tempdir().expect("tempdir");
    let mut vars = HashMap::new();
    vars.insert("DATA_DIR".to_string(), dir.path().display().to_string());
    vars.insert(
        "JWT_SECRET_KEY".to_string(),
        "3f9c1a7be2d04c88a9e15b6f70d2c4e1937ab0c5d8e2f61a4b7c9d0e3f5a8b21".into(),
    );
    vars.insert("CARDDAV_ENABLED".to_string(), "true".into());
    // The server's own tuning variables pass through, to compare settings in one sitting.
    for name in ["DB_CACHE_MB", "SEARCH_WRITER_MB", "SEARCH_COMMIT_INTERVAL_MS"] {
        if let Ok(value) = std::env::var(name) {
            vars.insert(name.to_string(), value);
        }
    }
    // Each client's address has its own CardDAV bucket, as eight phones would; fewer clients
    // each get a bucket that holds their share of the cards (one client: every card).
    let share = cards.div_ceil(clients()) + 100;
    vars.insert("RATE_LIMIT_DAV_BURST".to_string(), share.max(2500).to_string());
    let config = Config::load(Env::from_map(vars)).expect("config");
    let engine = mycorrhizal::open_engine(&config).await.expect("engine");
    let state = AppState::build(engine.clone(), config).await.expect("state");
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let addr = listener.local_addr().expect("addr");
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let server = tokio::spawn(serve(listener, state, async move {
        let _ = stopped.await;
    }));
    let base = format!("http://{addr}");
    let setup = client(IpAddr::from([127, 0, 0, 1]));
    let registered = setup
        .post(format!("{base}/api/v1/register"))
        .json(&serde_json::json!({ "username": USER, "email": "bench@example.org", "password": PASSWORD }))
        .send()
        .await
        .expect("register");
    assert_eq!(registered.status(), 201);
    let me = setup
        .request(reqwest::Method::from_bytes(b"PROPFIND").expect("method"), format!("{base}/carddav/"))
        .basic_auth(USER, Some(PASSWORD))
        .header("depth", "0")
        .body(r#"<D:propfind xmlns:D="DAV:"><D:prop><D:current-user-principal/></D:prop></D:propfind>"#)
        .send()
        .await
        .expect("principal")
        .text()
        .await
        .expect("body");
    let principal =
        me.split("<D:current-user-principal><D:href>").nth(1).and_then(|s| s.split('<').next()).expect("principal");
    let book = format!("{base}{principal}contacts/");

    // 1. PUT every card from 8 clients.
    let stop_sampling = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let sampler = sample_cpu(stop_sampling.clone());
    let started = Instant::now();
    let mut workers = Vec::new();
    let clients = clients();
    for worker in 0..clients {
        let (texts, book) = (texts.clone(), book.clone());
        let http = client(IpAddr::from([127, 0, 0, 2 + worker as u8]));
        workers.push(tokio::spawn(async move {
            let mut done = Vec::new();
            for n in (worker..texts.len()).step_by(clients) {
                let t = Instant::now();
                let response = http
                    .put(format!("{book}bench-{n:05}.vcf"))
                    .basic_auth(USER, Some(PASSWORD))
                    .header("content-type", "text/vcard; charset=utf-8")
                    .header("if-none-match", "*")
                    .body(texts[n].clone())
                    .send()
                    .await
                    .expect("put");
                assert_eq!(response.status(), 201, "card {n}: {}", response.text().await.unwrap_or_default());
                done.push((Instant::now(), t.elapsed()));
            }
            done
        }));
    }
    let mut done = Vec::new();
    let mut finished = Vec::new();
    for worker in workers {
        let mine = worker.await.expect("worker");
        finished.push(mine.last().map_or(0.0, |(at, _)| at.duration_since(started).as_secs_f64()));
        done.extend(mine);
    }
    let total = started.elapsed();
    stop_sampling.store(true, std::sync::atomic::Ordering::Relaxed);
    let cpu_samples = sampler.join().expect("sampler");
    if cards == 0 {
        println!("dav bench: no cards (BENCH_CARDS=0: the server's start and the account, for counting)");
        return None;
    }
    done.sort_by_key(|(at, _)| *at);
    let mut latencies: Vec<Duration> = done.iter().map(|(_, l)| *l).collect();
    latencies.sort();
    let rate = |from: usize, to: usize| {
        let span = done[to - 1].0.duration_since(if from == 0 { started } else { done[from - 1].0 });
        (to - from) as f64 / span.as_secs_f64()
    };
    let window = 1000.min(cards);
    println!(
        "dav bench: {cards} vCard 3.0 cards ({:.1} MB, 1 in 10 with a photo) PUT by {clients} clients in {:.2} s ({:.0}/s)",
        bytes as f64 / 1e6,
        total.as_secs_f64(),
        cards as f64 / total.as_secs_f64()
    );
    println!(
        "  first {window}: {:.0}/s, last {window}: {:.0}/s; PUT latency p50 {:.2} ms, p99 {:.2} ms, max {:.2} ms",
        rate(0, window),
        rate(cards - window, cards),
        ms(latencies[latencies.len() / 2]),
        ms(latencies[latencies.len() * 99 / 100]),
        ms(latencies[latencies.len() - 1])
    );
    if std::env::var_os("BENCH_EACH").is_some() {
        let each: Vec<String> =
            (window..=cards).step_by(window).map(|to| format!("{:.0}", rate(to - window, to))).collect();
        println!("  rate of each {window}, in order: {} /s", each.join(" "));
    }
    if cpu_samples.len() > 2 {
        let first = cpu_between(&cpu_samples, started, done[window - 1].0);
        let from = if cards > window { done[cards - window - 1].0 } else { started };
        let last = cpu_between(&cpu_samples, from, done[cards - 1].0);
        println!(
            "  CPU per {window} cards, first / last {window}: writer {:.0} / {:.0} ms, request threads {:.0} / {:.0} ms, search index {:.0} / {:.0} ms, other {:.0} / {:.0} ms",
            first[0], last[0], first[1], last[1], first[2], last[2], first[3], last[3]
        );
    }
    // When each client got its last answer, and how many were still sending when the last
    // window began (the even clients carry every photo: card n goes to client n % 8, a photo
    // to every tenth card; a slower half would leave the last cards to fewer clients).
    let last_window_from = done[cards - window].0.duration_since(started).as_secs_f64();
    let running = finished.iter().filter(|&&f| f > last_window_from).count();
    let ends: Vec<String> = finished.iter().map(|f| format!("{f:.2}")).collect();
    println!(
        "  clients 0-{} finished at {} s; {running} of {clients} were still sending when the last {window} began",
        clients - 1,
        ends.join(" / ")
    );
    let ratio = 100.0 * (rate(cards - window, cards) - rate(0, window)) / rate(0, window);
    if !last {
        // The next stream must not share the machine with this one's index catching up and
        // merging: it settles as for the reads at rest, then the server stops.
        let settle = Instant::now();
        while engine.search_status().is_some_and(|s| s.pending > 0) && settle.elapsed() < Duration::from_secs(120) {
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        tokio::time::sleep(Duration::from_secs(3)).await;
        drop(setup);
        let _ = stop.send(());
        let _ = server.await;
        return Some(ratio);
    }
    if std::env::var_os("BENCH_PUT_ONLY").is_some() {
        return Some(ratio);
    }
    let http = client(IpAddr::from([127, 0, 0, 10]));
    println!("Right after the PUTs (the search index still taking in the {cards} new cards, in the background):");
    reads(&http, &book, principal, cards, 1).await;

    // The book at rest, as a phone syncing every 15 minutes finds it: the index has taken in
    // every change and its background merges are done.
    let settle = Instant::now();
    loop {
        let status = engine.search_status().expect("search");
        if status.pending == 0 || settle.elapsed() > Duration::from_secs(120) {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    tokio::time::sleep(Duration::from_secs(3)).await;
    println!(
        "At rest ({:.1} s later: the index had taken in every change, then 3 s for its merges):",
        settle.elapsed().as_secs_f64()
    );
    reads(&http, &book, principal, cards, 2).await;
    let _ = stop.send(());
    let _ = server.await;
    Some(ratio)
}

/// The read phase: PROPFIND of the whole book, an addressbook-multiget of 1,000 hrefs, sync from
/// empty, then 10 edits and sync from the token taken before them (`round` makes each pass's
/// edits new changes).
async fn reads(http: &reqwest::Client, book: &str, principal: &str, cards: usize, round: usize) {
    println!("| operation                                    | runs |    median    |          range            |");
    println!("|----------------------------------------------|-----:|-------------:|--------------------------:|");
    let propfind = r#"<D:propfind xmlns:D="DAV:"><D:prop><D:getetag/></D:prop></D:propfind>"#.to_string();
    let mut runs = Vec::new();
    for _ in 0..repeats() {
        let t = Instant::now();
        let (status, body) = report(http, book, Some("1"), "PROPFIND", propfind.clone()).await;
        runs.push(t.elapsed());
        assert_eq!(status, 207);
        assert_eq!(body.matches("<D:getetag>").count(), cards);
    }
    summary(&format!("PROPFIND Depth 1 getetag, {cards} cards"), runs);

    let count = 1000.min(cards);
    let hrefs: String = (0..count)
        .map(|i| format!("<D:href>{principal}contacts/bench-{:05}.vcf</D:href>", (i * 7919) % cards))
        .collect();
    let multiget = format!(
        r#"<C:addressbook-multiget xmlns:D="DAV:" xmlns:C="urn:ietf:params:xml:ns:carddav"><D:prop><D:getetag/><C:address-data/></D:prop>{hrefs}</C:addressbook-multiget>"#
    );
    let mut runs = Vec::new();
    for _ in 0..repeats() {
        let t = Instant::now();
        let (status, body) = report(http, book, Some("1"), "REPORT", multiget.clone()).await;
        runs.push(t.elapsed());
        assert_eq!(status, 207);
        assert_eq!(body.matches("<C:address-data>").count(), count);
    }
    summary(&format!("addressbook-multiget, {count} hrefs, address-data"), runs);

    let mut runs = Vec::new();
    let mut token = String::new();
    for _ in 0..repeats() {
        let t = Instant::now();
        let (status, body) = report(http, book, None, "REPORT", sync_body("")).await;
        runs.push(t.elapsed());
        assert_eq!(status, 207);
        assert_eq!(body.matches("<D:getetag>").count(), cards);
        token = token_of(&body);
    }
    summary(&format!("sync-collection from empty, {cards} cards"), runs);

    for n in 0..10 {
        let response = http
            .put(format!("{book}bench-{n:05}.vcf"))
            .basic_auth(USER, Some(PASSWORD))
            .header("content-type", "text/vcard")
            .body(card(n).replace("Mushroom Co", &format!("Truffle Ltd {round}")))
            .send()
            .await
            .expect("edit");
        assert_eq!(response.status(), 204);
    }
    let mut runs = Vec::new();
    for _ in 0..repeats() * 3 {
        let t = Instant::now();
        let (status, body) = report(http, book, None, "REPORT", sync_body(&token)).await;
        runs.push(t.elapsed());
        assert_eq!(status, 207);
        assert_eq!(body.matches("<D:getetag>").count(), 10);
    }
    summary("sync-collection from a token 10 changes old", runs);
}
