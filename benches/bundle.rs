//! The account bundle of one large account: `BENCH_CONTACTS` contacts (default 100,000), one in
//! ten with a picture of `BENCH_PICTURE_BYTES` (default 24 KiB), plus `BENCH_NOTES` notes and as
//! many activities (default 10,000), seeded straight through the engine; then the bundle written
//! whole (`crm::bundle::write`, what `GET /export/bundle` streams) into a counting sink, three
//! times, with the peak resident memory (`VmHWM`) before and after. Run with
//! `cargo bench -p mycorrhizal --bench bundle`.

#[allow(dead_code)]
mod seed;

use std::io::Write;
use std::time::Instant;

use mycorrhizal::crm::contact::Contact;
use mycorrhizal_engine::{Engine, Precondition, UserId};

/// Bytes written, nothing kept.
struct Counting(u64);

impl Write for Counting {
    fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
        self.0 += bytes.len() as u64;
        Ok(bytes.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// `VmHWM` and `VmRSS` of this process, in MB.
fn memory() -> String {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    let field = |name: &str| {
        status
            .lines()
            .find(|l| l.starts_with(name))
            .and_then(|l| l.split_whitespace().nth(1))
            .and_then(|kb| kb.parse::<u64>().ok())
            .map(|kb| kb / 1024)
            .unwrap_or(0)
    };
    format!("peak RSS (VmHWM) {} MB, RSS {} MB", field("VmHWM:"), field("VmRSS:"))
}

#[tokio::main]
async fn main() {
    let contacts = seed::setting("CONTACTS", 100_000);
    let notes = seed::setting("NOTES", 10_000);
    let picture_bytes = seed::setting("PICTURE_BYTES", 24 * 1024) as usize;
    let dir = tempfile::tempdir().expect("tempdir");
    let options = mycorrhizal_engine::Options {
        migrations: mycorrhizal::crm::migrations(),
        ..mycorrhizal_engine::Options::default()
    };
    let engine = Engine::open(dir.path().join("mycorrhizal.redb"), options).expect("open").0;
    let user = engine.user(UserId(1));
    seed::contacts(&user, contacts).await;
    seed::notes_and_activities(&user, notes, contacts).await;
    let started = Instant::now();
    let mut picture = vec![0u8; picture_bytes];
    picture[..4].copy_from_slice(&[0xFF, 0xD8, 0xFF, 0xE0]);
    let with_pictures: Vec<u64> = (1..=contacts).step_by(10).collect();
    for batch in with_pictures.chunks(1000) {
        let (batch, picture) = (batch.to_vec(), picture.clone());
        user.write_async(move |tx| {
            for id in &batch {
                let name = format!("{id}.jpg");
                let mut bytes = picture.clone();
                bytes[4..12].copy_from_slice(&id.to_le_bytes());
                tx.put_blob(&name, &bytes)?;
                tx.update::<Contact>(*id, Precondition::Any, |c| {
                    c.photo = name.clone();
                    Ok(())
                })?;
            }
            Ok(())
        })
        .await
        .expect("pictures");
    }
    println!(
        "{} pictures of {picture_bytes} bytes seeded in {:.1} s",
        with_pictures.len(),
        started.elapsed().as_secs_f64()
    );
    println!("before the export: {}", memory());
    for run in 1..=3 {
        let view = user.view().expect("view");
        let started = Instant::now();
        let mut out = Counting(0);
        let manifest = mycorrhizal::crm::bundle::write(&view, &mut out, jiff::Timestamp::now()).expect("bundle");
        let took = started.elapsed();
        let rows: u64 = manifest.counts.values().sum();
        println!(
            "run {run}: bundle of {rows} rows and {} files, {:.1} MB, written in {:.2} s; {}",
            manifest.files.len(),
            out.0 as f64 / 1e6,
            took.as_secs_f64(),
            memory()
        );
    }
    engine.shutdown();
}
