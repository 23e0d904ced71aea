//! The operator's safety net at size: `BENCH_CONTACTS` (default 100,000) contacts, one in ten with
//! its own 12 KB picture, plus `BENCH_NOTES` (default: as many as contacts; 0 is the issue's own
//! workload) notes and as many activities; then a signed backup of the running engine, its
//! verification, and a restore into a fresh data folder (decode, open, search index rebuilt,
//! derived columns rebuilt, audit chains walked). Prints each run with its CPU seconds (the work
//! done, whatever the neighbours on a shared machine), and the median and range. Targets
//! (issue #30): backup at most 2 s, verify at most 1 s, restore at most 10 s.
//!
//! Run: `cargo bench -p mycorrhizal --bench backup` (`BENCH_NOTES=0` for contacts only).

// The shared seeding; its latency table is not used here.
#[allow(dead_code)]
mod seed;

use std::collections::HashMap;
use std::time::{Duration, Instant};

use mycorrhizal::backup::{self, Signer};
use mycorrhizal::config::{Config, Env};
use mycorrhizal::crm::contact::Contact;
use mycorrhizal_engine::UserId;

const KEY: &str = "3f9c1a7be2d04c88a9e15b6f70d2c4e1937ab0c5d8e2f61a4b7c9d0e3f5a8b21";

fn config(dir: &std::path::Path) -> Config {
    let mut vars = HashMap::new();
    vars.insert("DATA_DIR".to_string(), dir.display().to_string());
    vars.insert("JWT_SECRET_KEY".to_string(), KEY.to_string());
    Config::load(Env::from_map(vars)).expect("config")
}

fn summary(name: &str, mut runs: Vec<Duration>) {
    runs.sort();
    let ms = |d: Duration| d.as_secs_f64() * 1000.0;
    println!(
        "| {name:<28} | {:>3} runs | median {:>8.1} ms | range {:>8.1} - {:>8.1} ms |",
        runs.len(),
        ms(runs[runs.len() / 2]),
        ms(runs[0]),
        ms(runs[runs.len() - 1])
    );
}

/// CPU seconds this process has used (all threads): on a shared machine, the work a step did
/// whatever the wall clock says about its neighbours.
fn cpu_seconds() -> f64 {
    let stat = std::fs::read_to_string("/proc/self/stat").unwrap_or_default();
    // Fields after the command's closing parenthesis; utime and stime are the 12th and 13th.
    let rest = stat.rsplit(')').next().unwrap_or_default();
    let fields: Vec<&str> = rest.split_whitespace().collect();
    let ticks = |i: usize| fields.get(i).and_then(|v| v.parse::<f64>().ok()).unwrap_or(0.0);
    (ticks(11) + ticks(12)) / 100.0
}

fn peak_rss_mb() -> f64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    status
        .lines()
        .find(|l| l.starts_with("VmHWM:"))
        .and_then(|l| l.split_whitespace().nth(1))
        .and_then(|kb| kb.parse::<f64>().ok())
        .map(|kb| kb / 1024.0)
        .unwrap_or(0.0)
}

#[tokio::main]
async fn main() {
    let contacts = seed::setting("CONTACTS", 100_000);
    let runs = seed::setting("RUNS", 5) as usize;
    let work = tempfile::tempdir().expect("tempdir");
    let source = work.path().join("source");
    let (engine, state) = seed::open(&source).await;
    let user = engine.user(UserId(1));
    seed::contacts(&user, contacts).await;
    // The workload is contacts and pictures; notes and activities (as many as contacts
    // by default) make the file a size closer to a lived-in account's.
    let notes = seed::setting("NOTES", contacts);
    if notes > 0 {
        seed::notes_and_activities(&user, notes, contacts).await;
    }
    // One contact in ten gets a picture, stored as the server stores them (a blob it names).
    // Photos are compressed already and each is different: every picture's bytes are their own
    // pseudo-random stream, so the backup's encoding can neither shrink one nor find it twice.
    let picture = |id: u64| -> Vec<u8> {
        let mut noise = 0x9E37_79B9_7F4A_7C15u64 ^ id.wrapping_mul(0xD6E8_FEB8_6659_FD93);
        [0xFF, 0xD8, 0xFF, 0xE0]
            .into_iter()
            .chain((0..12_000).map(|_| {
                noise ^= noise << 13;
                noise ^= noise >> 7;
                noise ^= noise << 17;
                (noise >> 24) as u8
            }))
            .collect()
    };
    let mut id = 1;
    while id <= contacts {
        let from = id;
        user.write_async(move |tx| {
            for id in (from..(from + 10_000).min(contacts + 1)).step_by(10) {
                let mut row = tx.get::<Contact>(id)?;
                let name = format!("{id}.jpg");
                tx.put_blob(&name, &picture(id))?;
                row.body.photo = name;
                tx.put(id, mycorrhizal_engine::Precondition::Any, row.body)?;
            }
            Ok(())
        })
        .await
        .expect("pictures");
        id += 10_000;
    }
    engine.search_flush().expect("flush");
    let live = std::fs::metadata(source.join("mycorrhizal.redb")).map(|m| m.len()).unwrap_or(0);
    println!(
        "seeded {contacts} contacts ({} with pictures), {notes} notes and {notes} activities; database file {} MB; peak RSS {:.0} MB",
        contacts / 10,
        live / (1024 * 1024),
        peak_rss_mb()
    );

    let signer = Signer::from_config(&state.config).expect("signer");
    let out = work.path().join("backups");
    let (mut made, mut checked) = (Vec::new(), Vec::new());
    let mut last = None;
    for run in 0..runs {
        if let Some(previous) = last.take() {
            let previous: std::path::PathBuf = previous;
            std::fs::remove_file(mycorrhizal_engine::snapshot::manifest_path(&previous)).expect("rm manifest");
            std::fs::remove_file(&previous).expect("rm backup");
        }
        let (started, cpu) = (Instant::now(), cpu_seconds());
        let backup = backup::create(&engine, &out, &signer, &mut |_| {}).expect("backup");
        made.push(started.elapsed());
        let backup_cpu = cpu_seconds() - cpu;
        let (started, cpu) = (Instant::now(), cpu_seconds());
        backup::verify(&backup.path, &signer, false).expect("verify");
        checked.push(started.elapsed());
        let verify_cpu = cpu_seconds() - cpu;
        println!(
            "run {run}: backup {:.0} ms (CPU {:.1} s), {} MB written; verify {:.0} ms (CPU {:.1} s)",
            made[run].as_secs_f64() * 1000.0,
            backup_cpu,
            backup.manifest.size / (1024 * 1024),
            checked[run].as_secs_f64() * 1000.0,
            verify_cpu
        );
        last = Some(backup.path);
    }
    let backup = last.expect("a backup");
    if let Ok(keep) = std::env::var("XP_KEEP") {
        std::fs::copy(&backup, &keep).expect("keep");
        std::fs::copy(work.path().join("source/mycorrhizal.redb"), format!("{keep}.live")).expect("keep live");
    }
    let mut restored = Vec::new();
    for run in 0..runs.min(3) {
        let target = work.path().join(format!("restored-{run}"));
        let config = config(&target);
        let (started, cpu) = (Instant::now(), cpu_seconds());
        let done = backup::restore::run(&config, &backup).await.expect("restore");
        restored.push(started.elapsed());
        println!(
            "restore {run}: {:.0} ms (CPU {:.1} s; {} search documents, {} contacts' derived columns)",
            restored[run].as_secs_f64() * 1000.0,
            cpu_seconds() - cpu,
            done.search_documents,
            done.contacts_scanned
        );
        std::fs::remove_dir_all(&target).expect("rm restored");
    }
    println!();
    summary("backup (running engine)", made);
    summary("verify", checked);
    summary("restore incl. rebuilds", restored);
    println!("peak RSS {:.0} MB", peak_rss_mb());
    drop(state);
    engine.shutdown();
}
