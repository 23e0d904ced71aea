//! Web client benchmark over HTTP: the real server on a loopback port, a keep-alive client, a
//! signed-in user with `BENCH_CONTACTS` contacts (default 100000) and `BENCH_NOTES` notes plus as
//! many activities (default 100000 each). Times each page from the request to its last byte
//! (p50 and p99), and weighs a page: its HTML plus the stylesheet and script it loads (photos
//! aside), against the 100 KB.
//!
//! Run: `cargo bench -p mycorrhizal --bench web`.

mod seed;

use std::time::{Duration, Instant};

use mycorrhizal_engine::UserId;

struct Client {
    http: reqwest::Client,
    base: String,
    cookie: String,
}

impl Client {
    async fn page(&self, path: &str) -> (u16, String, Duration) {
        let started = Instant::now();
        let response = self
            .http
            .get(format!("{}{path}", self.base))
            .header("cookie", &self.cookie)
            .header("accept", "text/html")
            .send()
            .await
            .expect("request");
        let status = response.status().as_u16();
        let body = response.text().await.expect("body");
        (status, body, started.elapsed())
    }

    /// Times `paths` in turn, `rounds` times over; returns the latencies and the last body.
    async fn time(&self, paths: &[String], rounds: usize) -> (Vec<Duration>, String) {
        let mut lat = Vec::new();
        let mut last = String::new();
        for _ in 0..rounds {
            for path in paths {
                let (status, body, took) = self.page(path).await;
                assert_eq!(status, 200, "{path}");
                lat.push(took);
                last = body;
            }
        }
        (lat, last)
    }
}

/// The `/assets/...` URLs a page loads.
fn assets(html: &str) -> Vec<String> {
    html.split("\"/assets/").skip(1).filter_map(|rest| rest.split('"').next()).map(|a| format!("/assets/{a}")).collect()
}

fn main() {
    let contacts = seed::setting("CONTACTS", 100_000);
    let notes = seed::setting("NOTES", 100_000);
    let runtime = tokio::runtime::Builder::new_multi_thread().enable_all().build().expect("runtime");
    runtime.block_on(async move {
        let dir = tempfile::tempdir().expect("tempdir");
        let (engine, state) = seed::open(dir.path()).await;
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.expect("bind");
        let base = format!("http://{}", listener.local_addr().expect("addr"));
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        let server = tokio::spawn(mycorrhizal::serve(listener, state, async move {
            let _ = stopped.await;
        }));
        let http = reqwest::Client::builder().pool_max_idle_per_host(4).build().expect("client");
        let cookie = seed::sign_in_over_http(&http, &base).await;
        let client = Client { http, base, cookie };

        let user = engine.user(UserId(1));
        print!("web bench: ");
        seed::contacts(&user, contacts).await;
        print!("web bench: ");
        seed::notes_and_activities(&user, notes, contacts).await;
        for id in 1..=50u64 {
            mycorrhizal::crm::contact::ops::set_flag(&user, id, mycorrhizal::crm::contact::ops::Flag::Favorite, true)
                .await
                .expect("favourite");
        }

        // The index takes the seeded rows in the background; time the pages once it has them,
        // as a person opening the client after an import would find it.
        let flushing = engine.clone();
        tokio::task::spawn_blocking(move || flushing.search_flush()).await.expect("join").expect("search flush");
        println!("| page                                     |  calls |      p50    |      p99    |");
        println!("|------------------------------------------|-------:|------------:|------------:|");
        // Warm the caches once, as a person's second page view would find them.
        let _ = client.page("/").await;

        let (lat, dashboard) = client.time(&["/".to_string()], 100).await;
        seed::report("dashboard", lat);

        let (lat, list) = client.time(&["/contacts".to_string()], 200).await;
        seed::report("contacts list, first 50 by name", lat);

        // Deep pages: follow the next-page link 40 times, then time those pages.
        let mut deep = Vec::new();
        let mut next = "/contacts".to_string();
        for _ in 0..40 {
            let (_, body, _) = client.page(&next).await;
            let Some(link) = body.split("rel=\"next\" href=\"").nth(1).and_then(|r| r.split('"').next()) else { break };
            next = link.replace("&amp;", "&");
            deep.push(next.clone());
        }
        let (lat, _) = client.time(&deep, 5).await;
        seed::report("contacts list, pages 2 to 41 by name", lat);

        let ids: Vec<String> = (0..200).map(|i| format!("/contacts/{}", 1 + (i * 7919) % contacts)).collect();
        let (lat, contact) = client.time(&ids, 1).await;
        seed::report("contact page", lat);

        let searches: Vec<String> =
            (0..100).map(|i| format!("/contacts?q=person{}%40&fragment=1", 1 + i * 997)).collect();
        let (lat, _) = client.time(&searches, 1).await;
        seed::report("search as you type (list fragment)", lat);
        let broad: Vec<String> =
            ["example", "first1", "last00", "person"].iter().map(|q| format!("/contacts?q={q}&fragment=1")).collect();
        let (lat, _) = client.time(&broad, 25).await;
        seed::report("search as you type, broad words", lat);

        // The list fragment's domain call, old against new in one run, alternating: every match
        // ranked and counted (as each keystroke did before) and the bounded count it asks now.
        for (name, words) in [
            ("narrow", (0..100).map(|i| format!("person{}@", 1 + i * 997)).collect::<Vec<_>>()),
            (
                "broad",
                ["example", "first1", "last00", "person"].iter().cycle().take(100).map(|w| w.to_string()).collect(),
            ),
        ] {
            let (mut exact, mut bounded) = (Vec::new(), Vec::new());
            for word in &words {
                for (counted, lat) in [(false, &mut exact), (true, &mut bounded)] {
                    let params = mycorrhizal::crm::contact::list::ListParams {
                        search: Some(word.clone()),
                        limit: 50,
                        ..Default::default()
                    };
                    let started = Instant::now();
                    let page = mycorrhizal::crm::contact::list::list_counted(&user, params, counted).expect("list");
                    lat.push(started.elapsed());
                    assert!(!page.0.contacts.is_empty() || name == "narrow", "{word}");
                }
            }
            seed::report(&format!("list call, {name}, every match counted"), exact);
            seed::report(&format!("list call, {name}, bounded count"), bounded);
        }

        let global: Vec<String> = (0..100).map(|i| format!("/search?q=First{}", 1 + i * 991)).collect();
        let (lat, _) = client.time(&global, 1).await;
        seed::report("search results page", lat);
        let (lat, results) = client.time(&["/search?q=garden".to_string()], 50).await;
        seed::report("search results, a word in 100k notes", lat);

        println!();
        println!("| page weight (HTML + CSS + script)        |   HTML |  assets |   total |");
        println!("|------------------------------------------|-------:|--------:|--------:|");
        let mut asset_bytes = 0;
        for asset in assets(&dashboard).iter().filter(|a| a.ends_with(".css") || a.ends_with(".js")) {
            asset_bytes += client.page(asset).await.1.len();
        }
        for (name, html) in [
            ("dashboard", &dashboard),
            ("contacts list", &list),
            ("contact page", &contact),
            ("search results", &results),
        ] {
            let total = html.len() + asset_bytes;
            println!("| {name:<40} | {:>5} B | {:>6} B | {:>6} B |", html.len(), asset_bytes, total);
            assert!(total <= 100 * 1024, "{name} weighs {total} bytes");
        }
        let _ = stop.send(());
        let _ = server.await;
    });
}
