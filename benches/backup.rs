//! The operator's safety net at size: `BENCH_CONTACTS` (default 100,000) contacts, one in ten with
//! its own 12 KB picture, plus `BENCH_NOTES` (default: as many as contacts; 0 is the issue's own
//! workload) notes and as many activities; then a signed backup of the running engine, its
//! verification, and a restore into a fresh data folder (decode, open, search index rebuilt,
//! derived columns rebuilt, audit chains walked). Prints each run with its CPU seconds (the work
//! done, whatever the neighbours on a shared machine), and the median and range. Targets
//! (issue #30): backup at most 2 s, verify at most 1 s, restore at most 10 s.
//!
//! The seeded user is an account, so the restore's derived-column rebuild and audit walk cover
//! its 100,000 contacts; each restore prints how long its steps took.
//!
//! Run: `cargo bench -p mycorrhizal --bench backup` (`BENCH_NOTES=0` for contacts only;
//! `BENCH_COMPARE=1` alternates this build's record-stream backups with the encoding before them,
//! the rows copied into a scratch redb file stored as one LZ4 frame, in one sitting).

// The shared seeding; its latency table is not used here.
#[allow(dead_code)]
mod seed;

use std::collections::HashMap;
use std::time::{Duration, Instant};

use mycorrhizal::auth::records::Account;
use mycorrhizal::backup::{self, Signer};
use mycorrhizal::config::{Config, Env};
use mycorrhizal::crm::contact::Contact;
use mycorrhizal_engine::UserId;
use mycorrhizal_engine::snapshot::Encoding;

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
        "| {name:<42} | {:>3} runs | median {:>8.1} ms | range {:>8.1} - {:>8.1} ms |",
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

/// What a backup is stored as.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
enum Side {
    /// Before: the rows copied into a scratch redb file, stored as one LZ4 frame.
    Redb,
    /// Now: the record stream in one LZ4 frame.
    Rows,
}

impl Side {
    fn name(self) -> &'static str {
        match self {
            Side::Redb => "redb in LZ4 (before)",
            Side::Rows => "record stream",
        }
    }
}

/// The 1-minute load average, as `/proc/loadavg` gives it.
fn loadavg() -> String {
    std::fs::read_to_string("/proc/loadavg").unwrap_or_default().split_whitespace().next().unwrap_or("?").to_string()
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
    // The bench's user is an account, as on a real instance: the restore's derived-column rebuild
    // and audit walk go over every account's rows.
    let now = jiff::Timestamp::now();
    let account = engine
        .write_async(move |tx| {
            tx.global().insert(&Account {
                username: "bench".into(),
                email: "bench@example.org".into(),
                password_hash: None,
                is_admin: true,
                language: "en".into(),
                date_format: "YYYY-MM-DD".into(),
                custom_fields: Vec::new(),
                token_version: 0,
                totp: None,
                recovery_codes: Vec::new(),
                oidc_subject: None,
                oidc_provider: None,
                created_at: now,
                updated_at: now,
            })
        })
        .await
        .expect("account");
    assert_eq!(account, 1, "the seeded user is account 1");
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
    // `BENCH_COMPARE=1` alternates this build's backups (the record stream) with the encoding
    // before it (the rows copied into a scratch redb file, stored as one LZ4 frame): old and new
    // measured in one sitting, under the same load.
    let sides: Vec<Side> =
        if seed::setting("COMPARE", 0) == 1 { vec![Side::Redb, Side::Rows] } else { vec![Side::Rows] };
    let mut made: HashMap<Side, Vec<Duration>> = HashMap::new();
    let mut checked: HashMap<Side, Vec<Duration>> = HashMap::new();
    let mut last: HashMap<Side, std::path::PathBuf> = HashMap::new();
    for run in 0..runs {
        for &side in &sides {
            if let Some(previous) = last.remove(&side) {
                std::fs::remove_file(mycorrhizal_engine::snapshot::manifest_path(&previous)).expect("rm manifest");
                std::fs::remove_file(&previous).expect("rm backup");
            }
            let load = loadavg();
            let (started, cpu) = (Instant::now(), cpu_seconds());
            let (path, size) = match side {
                Side::Rows => {
                    let backup = backup::create(&engine, &out, &signer, &mut |_| {}).expect("backup");
                    (backup.path, backup.manifest.size)
                }
                Side::Redb => {
                    let snapshot =
                        engine.snapshot_with(&out, backup::LABEL, Encoding::Lz4, &mut |_| {}).expect("backup");
                    backup::sign_existing(&snapshot.path, &signer).expect("sign");
                    (snapshot.path, snapshot.manifest.size)
                }
            };
            let took = started.elapsed();
            made.entry(side).or_default().push(took);
            let backup_cpu = cpu_seconds() - cpu;
            let (started, cpu) = (Instant::now(), cpu_seconds());
            backup::verify(&path, &signer, false).expect("verify");
            let verify_took = started.elapsed();
            checked.entry(side).or_default().push(verify_took);
            println!(
                "run {run} {}: backup {:.0} ms (CPU {:.1} s), {} MB written; verify {:.0} ms (CPU {:.1} s); load {load}",
                side.name(),
                took.as_secs_f64() * 1000.0,
                backup_cpu,
                size / (1024 * 1024),
                verify_took.as_secs_f64() * 1000.0,
                cpu_seconds() - cpu
            );
            last.insert(side, path);
        }
    }
    let mut restored: HashMap<Side, Vec<Duration>> = HashMap::new();
    for run in 0..runs.min(3) {
        for &side in &sides {
            let target = work.path().join(format!("restored-{run}"));
            let config = config(&target);
            let load = loadavg();
            let (started, cpu) = (Instant::now(), cpu_seconds());
            let done = mycorrhizal::restore::run(&config, &last[&side]).await.expect("restore");
            let took = started.elapsed();
            restored.entry(side).or_default().push(took);
            let steps: Vec<String> =
                done.steps.iter().map(|(step, took)| format!("{step} {:.0} ms", took.as_secs_f64() * 1000.0)).collect();
            println!(
                "restore {run} {}: {:.0} ms (CPU {:.1} s; {} search documents, {} contacts' derived columns; {}); load {load}",
                side.name(),
                took.as_secs_f64() * 1000.0,
                cpu_seconds() - cpu,
                done.search_documents,
                done.contacts_scanned,
                steps.join(", ")
            );
            std::fs::remove_dir_all(&target).expect("rm restored");
        }
    }
    println!();
    for side in sides {
        let name = side.name();
        summary(&format!("backup, {name}"), made.remove(&side).unwrap_or_default());
        summary(&format!("verify, {name}"), checked.remove(&side).unwrap_or_default());
        summary(&format!("restore incl. rebuilds, {name}"), restored.remove(&side).unwrap_or_default());
    }
    println!("peak RSS {:.0} MB; load {}", peak_rss_mb(), loadavg());
    drop(state);
    engine.shutdown();
}
