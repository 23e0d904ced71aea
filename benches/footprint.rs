//! Footprint benchmark over HTTP (issue #27 items 3 and 4): the real release binary in a process
//! of its own, on a loopback port, driven by one keep-alive client. For each `DB_CACHE_MB` in
//! `BENCH_CACHES` (default `48,1024`: today's default beside redb's own, the footprint before
//! the knob), side by side in one run:
//!
//! 1. a vCard file of `BENCH_CONTACTS` cards (default 100000; the import bench's generator, 10%
//!    with a photo) is uploaded, previewed and confirmed with every row's suggested action, the
//!    server's peak `VmHWM` printed for the upload and preview, then for the confirm (#55
//!    item 2: it is reset between them through `/proc/<pid>/clear_refs`);
//! 2. for `BENCH_TRAIL_SECS` (default 60) from the confirm's answer, while the search index takes
//!    the imported cards in the background, one client searches without pause (a first name,
//!    a city, a word of the cards' notes in turn) and every search is timed;
//! 3. then the settled workload: gets of one contact, lists of 50 by name, searches and creates;
//! 4. the server's resident memory from `/proc/<pid>/status`: `VmRSS` (and what of it is the
//!    heap, `RssAnon`, and what is mapped files such as the search index, `RssFile`) and the
//!    peak `VmHWM` since the confirm's answer; then again after five seconds at rest (one
//!    `/health` probe a second).
//!
//! Every time is from sending the request to holding the whole answer. The server runs with
//! `LOG_LEVEL=warn`; the harness's memory is not the server's. `BENCH_RESTART=1` restarts the
//! server on the same data before step 3, to tell what serving holds from what the import left.
//! `BENCH_SERVER=<path>` runs another build of the server (an older one, to compare side by side
//! with the same harness).
//!
//! `BENCH_WRK=1` adds, before the memory is read, the load of #55 item 1 from wrk (Debian's
//! package): see `Server::load`.
//!
//! Run: `cargo bench -p mycorrhizal --bench footprint`.

mod cards;
#[allow(dead_code)] // the footprint bench takes only its settings
mod seed;

use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

/// A running server process and a signed-in client of it.
struct Server {
    child: Child,
    http: reqwest::Client,
    base: String,
    cookie: String,
    port: u16,
    cache_mb: u64,
    _dir: tempfile::TempDir,
}

impl Server {
    async fn start(cache_mb: u64) -> Server {
        let dir = tempfile::tempdir().expect("tempdir");
        // A free loopback port, chosen here: at `LOG_LEVEL=warn` the server does not print
        // where it listens (that line is `info`).
        let port = std::net::TcpListener::bind("127.0.0.1:0").and_then(|l| l.local_addr()).expect("a free port").port();
        let child = Self::spawn(&dir, port, cache_mb);
        let base = format!("http://127.0.0.1:{port}");
        let http = reqwest::Client::builder().pool_max_idle_per_host(2).build().expect("client");
        Self::wait_ready(&http, &base).await;
        let cookie = seed::sign_in_over_http(&http, &base).await;
        Server { child, http, base, cookie, port, cache_mb, _dir: dir }
    }

    fn spawn(dir: &tempfile::TempDir, port: u16, cache_mb: u64) -> Child {
        let program = std::env::var_os("BENCH_SERVER").unwrap_or_else(|| env!("CARGO_BIN_EXE_mycorrhizal").into());
        Command::new(program)
            .env_clear()
            .env("PATH", std::env::var("PATH").unwrap_or_default())
            .env("DATA_DIR", dir.path().join("data"))
            .env("BIND_ADDR", format!("127.0.0.1:{port}"))
            .env("LOG_LEVEL", "warn")
            .env("DB_CACHE_MB", cache_mb.to_string())
            .env("RATE_LIMIT_API_BURST", "1000000")
            .env("RATE_LIMIT_API_INTERVAL_MS", "1")
            .env("IMPORT_MAX_FILE_MB", "1024")
            .env("IMPORT_MAX_CARDS", "10000000")
            // The other memory knobs pass through, to compare footprints: the search writer's
            // budget, and mimalloc's own options (`MIMALLOC_PURGE_DELAY`, ...).
            .envs(std::env::vars().filter(|(k, _)| k == "SEARCH_WRITER_MB" || k.starts_with("MIMALLOC_")))
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("start the server")
    }

    async fn wait_ready(http: &reqwest::Client, base: &str) {
        let ready = Instant::now();
        while !http.get(format!("{base}/health")).send().await.is_ok_and(|r| r.status().is_success()) {
            assert!(ready.elapsed() < Duration::from_secs(60), "the server answers /health within a minute");
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }

    /// Stops the process (as a deploy or a reboot would) and starts it again on the same data;
    /// the session cookie stays valid, sessions being stored.
    async fn restart(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        self.child = Self::spawn(&self._dir, self.port, self.cache_mb);
        Self::wait_ready(&self.http, &self.base).await;
    }

    /// One request: its status, its body, and the time to the body's last byte.
    async fn call(
        &self,
        method: reqwest::Method,
        path: &str,
        body: Option<&Value>,
    ) -> (u16, axum::body::Bytes, Duration) {
        let started = Instant::now();
        let mut request = self.http.request(method, format!("{}{path}", self.base)).header("cookie", &self.cookie);
        if let Some(body) = body {
            request = request.json(body);
        }
        let response = request.send().await.expect("request");
        let status = response.status().as_u16();
        let bytes = response.bytes().await.expect("body");
        (status, bytes, started.elapsed())
    }

    /// Upload, preview and confirm of `file`, every row with its suggested action; the number
    /// of contacts created.
    async fn import(&self, file: Vec<u8>) -> u64 {
        let boundary = "footprint-boundary";
        let mut body =
            format!("--{boundary}\r\nContent-Disposition: form-data; name=\"file\"; filename=\"contacts.vcf\"\r\n\r\n")
                .into_bytes();
        body.extend_from_slice(&file);
        body.extend_from_slice(format!("\r\n--{boundary}--\r\n").as_bytes());
        let started = Instant::now();
        let response = self
            .http
            .post(format!("{}/api/v1/contacts/import/vcf/upload", self.base))
            .header("cookie", &self.cookie)
            .header("content-type", format!("multipart/form-data; boundary={boundary}"))
            .body(body)
            .send()
            .await
            .expect("upload");
        assert_eq!(response.status(), 200);
        let preview: Value = response.json().await.expect("preview");
        let previewed = started.elapsed();
        let preview_peak = self.peak_since_reset();
        let actions: Vec<Value> = preview["rows"]
            .as_array()
            .expect("rows")
            .iter()
            .map(|r| json!({ "row_index": r["row_index"], "action": r["suggested_action"] }))
            .collect();
        let confirm = json!({ "session_id": preview["session_id"], "actions": actions });
        drop(preview);
        let started = Instant::now();
        let (status, answer, _) =
            self.call(reqwest::Method::POST, "/api/v1/contacts/import/vcf/confirm", Some(&confirm)).await;
        assert_eq!(status, 200, "{}", String::from_utf8_lossy(&answer));
        let answer: Value = serde_json::from_slice(&answer).expect("confirm answer");
        println!(
            "  import: upload+preview {:.1} s (peak {preview_peak:.0} MB), confirm {:.1} s (peak {:.0} MB), {} created",
            previewed.as_secs_f64(),
            started.elapsed().as_secs_f64(),
            self.peak_since_reset(),
            answer["created"]
        );
        answer["created"].as_u64().expect("created")
    }

    /// The load a user's clients put on it (#55 item 1), from wrk (Debian's package) on loopback,
    /// each for `BENCH_WRK_SECS` (10): gets of a random contact by 32 connections, searches by 1
    /// and by 8, a list page by 8, and creates by 32 (each acknowledged durably). Prints each
    /// one's requests a second and latency percentiles as wrk measures them.
    fn load(&self, contacts: u64) {
        let secs = seed::setting("WRK_SECS", 10);
        let dir = tempfile::tempdir().expect("tempdir");
        let words = (0..64).map(|i| format!("{:?}", query(i))).collect::<Vec<_>>().join(",");
        let scripts = [
            ("get by id, 32 connections", 32, format!(
                "request = function() return wrk.format(\"GET\", \"/api/v1/contacts/\" .. math.random(1, {contacts})) end"
            )),
            ("search, 1 connection", 1, format!(
                "local q = {{{words}}}\nrequest = function() return wrk.format(\"GET\", \"/api/v1/search?q=\" .. q[math.random(#q)]) end"
            )),
            ("search, 8 connections", 8, format!(
                "local q = {{{words}}}\nrequest = function() return wrk.format(\"GET\", \"/api/v1/search?q=\" .. q[math.random(#q)]) end"
            )),
            ("list 50 by name, 8 connections", 8,
                "request = function() return wrk.format(\"GET\", \"/api/v1/contacts?sort=name&limit=50\") end".to_string()),
            ("create, 32 connections", 32,
                "wrk.method = \"POST\"\nwrk.path = \"/api/v1/contacts\"\nwrk.body = '{\"firstname\":\"Load\",\"lastname\":\"Wrk\"}'\nwrk.headers[\"Content-Type\"] = \"application/json\"".to_string()),
        ];
        for (name, connections, script) in scripts {
            let path = dir.path().join("script.lua");
            std::fs::write(&path, script).expect("script");
            let out = Command::new("wrk")
                .args([
                    &format!("-t{}", connections.min(2)),
                    &format!("-c{connections}"),
                    &format!("-d{secs}s"),
                    "--latency",
                    "-s",
                ])
                .arg(&path)
                .args(["-H", &format!("cookie: {}", self.cookie), &self.base])
                .output()
                .expect("wrk (Debian's package) runs");
            let text = String::from_utf8_lossy(&out.stdout);
            let pick = |key: &str| {
                text.lines().find_map(|l| l.trim().strip_prefix(key)).map(|v| v.trim().to_string()).unwrap_or_default()
            };
            let errors =
                text.lines().filter(|l| l.contains("Non-2xx") || l.contains("Socket errors")).collect::<Vec<_>>();
            println!(
                "  wrk {name}: {} req/s, p50 {}, p90 {}, p99 {}{}",
                pick("Requests/sec:"),
                pick("50%"),
                pick("90%"),
                pick("99%"),
                if errors.is_empty() { String::new() } else { format!(" ({})", errors.join("; ")) }
            );
        }
    }

    /// The server's peak resident memory (`VmHWM`, MB) since it started or since the last call,
    /// which resets it (`clear_refs` 5), so each phase of the import has its own peak.
    fn peak_since_reset(&self) -> f64 {
        let peak = self.memory()[3];
        let _ = std::fs::write(format!("/proc/{}/clear_refs", self.child.id()), "5");
        peak
    }

    /// `VmRSS`, `RssAnon`, `RssFile` and `VmHWM` of the server process, in MB, and its number of
    /// threads (each thread keeps some memory of its own in the allocator).
    fn memory(&self) -> [f64; 5] {
        let status = std::fs::read_to_string(format!("/proc/{}/status", self.child.id())).unwrap_or_default();
        ["VmRSS:", "RssAnon:", "RssFile:", "VmHWM:", "Threads:"].map(|key| {
            let value = status
                .lines()
                .find_map(|l| l.strip_prefix(key))
                .and_then(|rest| rest.split_whitespace().next())
                .and_then(|n| n.parse::<f64>().ok())
                .unwrap_or(0.0);
            if key == "Threads:" { value } else { value / 1024.0 }
        })
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The queries of a search loop, in turn: a first name, a city and a word of the cards' notes
/// (each matching thousands of the imported people).
fn query(i: usize) -> String {
    let mut rng = cards::Rng(0x2545_F491_4F6C_DD1D ^ (i as u64 + 1));
    let list = [cards::FIRST, cards::CITIES, cards::WORDS][i % 3];
    let word = rng.pick(list);
    url_encode(word)
}

fn url_encode(text: &str) -> String {
    text.bytes()
        .map(|b| if b.is_ascii_alphanumeric() { (b as char).to_string() } else { format!("%{b:02X}") })
        .collect()
}

/// p50, p99 and the largest, in ms.
fn percentiles(mut lat: Vec<Duration>) -> (usize, f64, f64, f64) {
    lat.sort();
    let at = |p: f64| lat[((lat.len() - 1) as f64 * p).round() as usize].as_secs_f64() * 1000.0;
    (lat.len(), at(0.5), at(0.99), lat.last().map(|d| d.as_secs_f64() * 1000.0).unwrap_or(0.0))
}

struct Figures {
    cache_mb: u64,
    rows: Vec<(&'static str, (usize, f64, f64, f64))>,
    memory: [f64; 5],
    /// The same, after five seconds at rest (one `/health` probe a second, as a container's
    /// health check or a monitor sends): what the process keeps once the burst is over.
    rest: [f64; 5],
}

async fn run(cache_mb: u64, contacts: u64, trail: Duration, restart: bool) -> Figures {
    println!("DB_CACHE_MB={cache_mb}:");
    let mut server = Server::start(cache_mb).await;
    let created = server.import(cards::file(contacts as usize, 0)).await;
    let mut rows = Vec::new();

    // Searches while the index trails the confirm.
    let started = Instant::now();
    let mut lat = Vec::new();
    let mut i = 0;
    while started.elapsed() < trail {
        let (status, _, took) =
            server.call(reqwest::Method::GET, &format!("/api/v1/search?q={}", query(i)), None).await;
        assert_eq!(status, 200);
        lat.push(took);
        i += 1;
    }
    rows.push(("search, the minute after the confirm", percentiles(lat)));
    if restart {
        // The settled workload on a fresh process: what serving 100k contacts holds, apart
        // from what the import left behind.
        server.restart().await;
    }

    let mut rng = cards::Rng(0x9E37_79B9_7F4A_7C15);
    let mut lat = Vec::new();
    for _ in 0..2_000 {
        let id = 1 + rng.next() % created;
        let (status, _, took) = server.call(reqwest::Method::GET, &format!("/api/v1/contacts/{id}"), None).await;
        assert_eq!(status, 200, "contact {id}");
        lat.push(took);
    }
    rows.push(("get one contact", percentiles(lat)));
    let mut lat = Vec::new();
    for _ in 0..200 {
        let (status, _, took) = server.call(reqwest::Method::GET, "/api/v1/contacts?sort=name&limit=50", None).await;
        assert_eq!(status, 200);
        lat.push(took);
    }
    rows.push(("list 50 by name", percentiles(lat)));
    let mut lat = Vec::new();
    for i in 0..2_000 {
        let (status, _, took) =
            server.call(reqwest::Method::GET, &format!("/api/v1/search?q={}", query(i)), None).await;
        assert_eq!(status, 200);
        lat.push(took);
    }
    rows.push(("search, settled", percentiles(lat)));
    let mut lat = Vec::new();
    for n in 0..2_000 {
        let body = json!({ "firstname": format!("Later{n}"), "lastname": "Footprint" });
        let (status, _, took) = server.call(reqwest::Method::POST, "/api/v1/contacts", Some(&body)).await;
        assert_eq!(status, 201);
        lat.push(took);
    }
    rows.push(("create one contact", percentiles(lat)));
    if seed::setting("WRK", 0) == 1 {
        server.load(created);
    }
    let memory = server.memory();
    for _ in 0..5 {
        tokio::time::sleep(Duration::from_secs(1)).await;
        let (status, _, _) = server.call(reqwest::Method::GET, "/health", None).await;
        assert_eq!(status, 200);
    }
    Figures { cache_mb, rows, memory, rest: server.memory() }
}

fn main() {
    let contacts = seed::setting("CONTACTS", 100_000);
    let trail = Duration::from_secs(seed::setting("TRAIL_SECS", 60));
    let restart = seed::setting("RESTART", 0) == 1;
    let caches: Vec<u64> = std::env::var("BENCH_CACHES")
        .unwrap_or_else(|_| "48,1024".into())
        .split(',')
        .map(|c| c.trim().parse().expect("BENCH_CACHES: numbers of MB"))
        .collect();
    let runtime = tokio::runtime::Builder::new_multi_thread().enable_all().build().expect("runtime");
    let figures: Vec<Figures> = runtime.block_on(async {
        let mut out = Vec::new();
        for cache in caches {
            out.push(run(cache, contacts, trail, restart).await);
        }
        out
    });

    println!();
    print!("| {contacts} contacts, one client over loopback | ");
    for f in &figures {
        print!("DB_CACHE_MB={} n / p50 / p99 / max ms | ", f.cache_mb);
    }
    println!();
    println!("|---|{}", "---:|".repeat(figures.len()));
    for (row, (name, _)) in figures[0].rows.iter().enumerate() {
        print!("| {name} | ");
        for f in &figures {
            let (n, p50, p99, max) = f.rows[row].1;
            print!("{n} / {p50:.3} / {p99:.3} / {max:.1} | ");
        }
        println!();
    }
    for (i, name) in [
        "resident (VmRSS) after",
        "  of it heap (RssAnon)",
        "  of it mapped files (RssFile)",
        "peak (VmHWM) after the import",
    ]
    .iter()
    .enumerate()
    {
        print!("| {name} | ");
        for f in &figures {
            print!("{:.0} MB | ", f.memory[i]);
        }
        println!();
    }
    print!("| threads after / 5 s at rest | ");
    for f in &figures {
        print!("{:.0} / {:.0} | ", f.memory[4], f.rest[4]);
    }
    println!();
    for (i, name) in
        ["resident (VmRSS) 5 s at rest", "  of it heap (RssAnon)", "  of it mapped files (RssFile)"].iter().enumerate()
    {
        print!("| {name} | ");
        for f in &figures {
            print!("{:.0} MB | ", f.rest[i]);
        }
        println!();
    }
}
