//! The duplicate scan at scale: `BENCH_SIZES` books (default 10,000 and 100,000 contacts, the
//! seed's distinct people) with 5% duplicates planted (a copy sharing the email, the phone in
//! another format, or the whole name, in turn). Each scan (one page of 25, best first) runs
//! `BENCH_RUNS` times (default 5) on the real engine; it also reports the planted pairs found and
//! any pair found beyond them. Target (issue #54): at 100,000 contacts a scan in at most 1 s.
//!
//! Then a merge of two contacts with `BENCH_ATTACHED` records each (default 1,000: notes and
//! activities, half each) and its undo, `BENCH_RUNS` times, each pair fresh.
//!
//! Run: `cargo bench -p mycorrhizal --bench duplicates`.

#[allow(dead_code)]
mod seed;

use std::collections::HashSet;
use std::time::{Duration, Instant};

use mycorrhizal::crm::contact::Contact;
use mycorrhizal::crm::contact::ops::ContactInput;
use mycorrhizal::crm::duplicate::ops::{DuplicateQuery, find_pairs, scan};
use mycorrhizal_engine::UserId;
use serde_json::json;

/// A copy of the seed's contact `base` (see `seed::input`), sharing one thing with it.
fn planted(k: u64, base: u64) -> ContactInput {
    let other = json!({ "components": [{ "kind": "given", "value": format!("Dup{k}") }, { "kind": "surname", "value": format!("Other{k}") }] });
    let card = match k % 3 {
        0 => json!({ "name": other, "emails": [{ "address": format!("person{base}@example.org") }] }),
        1 => json!({ "name": other, "phones": [{ "number": format!("(555) {:07}", base % 10_000_000) }] }),
        _ => json!({
            "name": { "components": [{ "kind": "given", "value": format!("First{base}") }, { "kind": "surname", "value": format!("Last{:07}", (base * 7919) % 1_000_003) }] },
            "emails": [{ "address": format!("dup{k}@example.net") }],
        }),
    };
    serde_json::from_value(json!({ "card": card })).expect("input")
}

#[tokio::main]
async fn main() {
    let sizes: Vec<u64> = std::env::var("BENCH_SIZES")
        .ok()
        .map(|s| s.split(',').filter_map(|n| n.trim().parse().ok()).collect())
        .unwrap_or_else(|| vec![10_000, 100_000]);
    let runs = seed::setting("RUNS", 5) as usize;
    println!("| contacts (5% planted) | runs | scan median | range | planted found | other pairs |");
    println!("|---|---|---|---|---|---|");
    for size in sizes {
        let dir = tempfile::tempdir().expect("dir");
        let (engine, _state) = seed::open(dir.path()).await;
        let user = engine.user(UserId(1));
        let base = size - size / 20;
        seed::contacts(&user, base).await;
        let dups = size / 20;
        let made: Vec<(u64, u64)> = user
            .write_async(move |tx| {
                let mut made = Vec::new();
                for k in 0..dups {
                    let original = (k * 19) % base;
                    let row = tx.create(planted(k, original).apply(None).expect("contact"))?;
                    made.push((original + 1, row.id));
                }
                Ok(made)
            })
            .await
            .expect("plant");
        let mut times = Vec::new();
        for _ in 0..runs {
            let view = user.view().expect("view");
            let started = Instant::now();
            let page = scan(&view, &DuplicateQuery::default()).expect("scan");
            times.push(started.elapsed());
            assert!(!page.pairs.is_empty());
        }
        let view = user.view().expect("view");
        let pairs: HashSet<(u64, u64)> = find_pairs(&view).expect("pairs").into_keys().collect();
        let planted: HashSet<(u64, u64)> = made.iter().map(|(a, b)| ((*a).min(*b), (*a).max(*b))).collect();
        let found = planted.iter().filter(|p| pairs.contains(p)).count();
        let others = pairs.iter().filter(|p| !planted.contains(p)).count();
        let _ = view.get::<Contact>(made[0].0).expect("the seed's ids start at 1");
        times.sort();
        let ms = |d: Duration| d.as_secs_f64() * 1000.0;
        println!(
            "| {size} | {runs} | {:.0} ms | {:.0}-{:.0} ms | {found} of {} | {others} |",
            ms(times[runs / 2]),
            ms(times[0]),
            ms(times[runs - 1]),
            planted.len()
        );
    }
    merge_bench(runs).await;
}

/// A merge of two contacts with many records attached each, and its undo.
async fn merge_bench(runs: usize) {
    use mycorrhizal::crm::activity::Activity;
    use mycorrhizal::crm::duplicate::merge::{self, MergeInput};
    use mycorrhizal::crm::note::Note;
    let attached = seed::setting("ATTACHED", 1000);
    let dir = tempfile::tempdir().expect("dir");
    let (engine, _state) = seed::open(dir.path()).await;
    let user = engine.user(UserId(2));
    let (mut merges, mut undos) = (Vec::new(), Vec::new());
    for run in 0..runs as u64 {
        let pair: Vec<u64> = user
            .write_async(move |tx| {
                let mut ids = Vec::new();
                for side in 0..2u64 {
                    let c = tx.create(planted(run * 2 + side, run).apply(None).expect("contact"))?;
                    for n in 0..attached {
                        if n % 2 == 0 {
                            let note: Note = serde_json::from_value(json!({
                                "contact_id": c.id, "content": format!("note {n}"), "date": "2026-01-01T00:00:00Z"
                            }))
                            .expect("note");
                            tx.create(note)?;
                        } else {
                            let activity: Activity = serde_json::from_value(json!({
                                "uuid": format!("a-{run}-{side}-{n}"), "title": "Lunch", "description": "", "location": "",
                                "date": "2026-01-01T00:00:00Z", "contact_ids": [c.id], "kind": "", "external_ref": "", "dav_name": ""
                            }))
                            .expect("activity");
                            tx.create(activity)?;
                        }
                    }
                    ids.push(c.id);
                }
                Ok(ids)
            })
            .await
            .expect("seed the pair");
        let input = MergeInput { keep_id: pair[0], merge_id: pair[1], resolutions: Default::default() };
        let preview = merge::preview(&user, input.clone()).await.expect("preview");
        let resolutions =
            preview.resolution.conflicts.iter().map(|c| (c.field.to_string(), c.keeper_value.clone())).collect();
        let started = Instant::now();
        merge::merge(&user, MergeInput { resolutions, ..input }).await.expect("merge");
        merges.push(started.elapsed());
        let started = Instant::now();
        merge::undo(&user, pair[1]).await.expect("undo");
        undos.push(started.elapsed());
    }
    let ms = |d: Duration| d.as_secs_f64() * 1000.0;
    for (name, mut times) in [("merge", merges), ("undo", undos)] {
        times.sort();
        println!(
            "| {name} of two contacts with {attached} records each | {runs} | {:.0} ms | {:.0}-{:.0} ms |",
            ms(times[runs / 2]),
            ms(times[0]),
            ms(times[runs - 1])
        );
    }
}
