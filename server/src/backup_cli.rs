//! The operator's commands: `mycorrhizal backup`, `verify`, `restore` and `healthcheck`. Each
//! prints one clear line of outcome and returns the exit code a script can test; the work is
//! [`crate::backup`]'s.

use std::io::{IsTerminal, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::path::Path;
use std::time::{Duration, Instant};

use indicatif::{ProgressBar, ProgressStyle};
use mycorrhizal_engine::snapshot::Progress;

use crate::backup::{self, Signer};
use crate::config::Config;

/// `mycorrhizal backup [--out DIR]`.
pub fn backup(mut config: Config, out: Option<&Path>) -> u8 {
    if let Err(e) = crate::load_secret(&mut config) {
        eprintln!("mycorrhizal: {e:#}");
        return 2;
    }
    let dir = out.map(Path::to_path_buf).unwrap_or_else(|| config.integrity.backups_in(&config.data_dir));
    let bar = progress_bar();
    let mut progress = |p: Progress| {
        bar.set_length(p.rows_total);
        bar.set_position(p.rows_copied);
    };
    let started = Instant::now();
    let outcome = match backup::control::request_backup(&config.data_dir, &dir, &mut progress) {
        Ok(Some(made)) => Ok(made),
        Ok(None) => offline(&config, &dir, &mut progress),
        Err(e) => Err(e),
    };
    bar.finish_and_clear();
    match outcome {
        Ok(made) => {
            let rows: u64 = made.manifest.users.iter().flat_map(|u| u.values()).flat_map(|k| k.values()).sum();
            println!(
                "backup written: {} ({} bytes, {rows} records, {:.1} s), signed manifest beside it",
                made.path.display(),
                made.manifest.size,
                started.elapsed().as_secs_f64()
            );
            0
        }
        Err(e) => {
            eprintln!("mycorrhizal: backup failed: {e}");
            1
        }
    }
}

/// The server is stopped: snapshot the file directly, then record the event in it.
fn offline(config: &Config, dir: &Path, progress: &mut dyn FnMut(Progress)) -> Result<backup::Backup, backup::Error> {
    let signer = Signer::from_config(config)?;
    let started = Instant::now();
    let db_path = config.database_path();
    let outcome = backup::create_offline(&db_path, dir, &signer, progress)
        .map_err(|e| if mycorrhizal_engine::snapshot::in_use(&db_path) { backup::Error::Held(Box::new(e)) } else { e });
    // The event goes into the database when opening it changes nothing (no pending migration).
    let current = outcome.as_ref().map(|b| b.manifest.schema_version == crate::crm::schema_version()).unwrap_or(false);
    if current && let Ok(runtime) = tokio::runtime::Builder::new_current_thread().enable_all().build() {
        let ms = started.elapsed().as_millis() as u64;
        runtime.block_on(async {
            if let Ok(engine) = crate::open_engine(config).await {
                backup::record(&engine, &outcome, "command", ms).await;
                engine.shutdown();
            }
        });
    }
    outcome
}

fn progress_bar() -> ProgressBar {
    if !std::io::stderr().is_terminal() {
        return ProgressBar::hidden();
    }
    let bar = ProgressBar::new(0);
    if let Ok(style) = ProgressStyle::with_template("{spinner} copying {pos}/{len} rows [{bar:30}] {elapsed}") {
        bar.set_style(style);
    }
    bar
}

/// `mycorrhizal verify BACKUP`.
pub fn verify(mut config: Config, path: &Path) -> u8 {
    if let Err(e) = crate::load_secret(&mut config) {
        eprintln!("mycorrhizal: {e:#}");
        return 2;
    }
    let signer = match Signer::from_config(&config) {
        Ok(signer) => signer,
        Err(e) => {
            eprintln!("mycorrhizal: {e}");
            return 2;
        }
    };
    match backup::verify(path, &signer, config.integrity.backup_allow_unsigned) {
        Ok(verified) => {
            match &verified.manifest {
                Some(m) => println!(
                    "backup verified: {} (schema {}, {} records, signed, written {} by {})",
                    path.display(),
                    m.schema_version,
                    m.users.iter().flat_map(|u| u.values()).flat_map(|k| k.values()).sum::<u64>(),
                    m.created_at,
                    m.build.as_deref().unwrap_or("an unknown build")
                ),
                None => println!(
                    "backup opens (schema {}), but has NO manifest: nothing vouches for its contents (accepted because BACKUP_ALLOW_UNSIGNED is set)",
                    verified.schema_version
                ),
            }
            0
        }
        Err(refusal) => {
            eprintln!("mycorrhizal: backup NOT verified: {refusal}");
            refusal.exit_code()
        }
    }
}

/// `mycorrhizal restore BACKUP`.
pub fn restore(mut config: Config, path: &Path) -> u8 {
    if let Err(e) = crate::load_secret(&mut config) {
        eprintln!("mycorrhizal: {e:#}");
        return 2;
    }
    let runtime = match tokio::runtime::Builder::new_multi_thread().enable_all().build() {
        Ok(runtime) => runtime,
        Err(e) => {
            eprintln!("mycorrhizal: {e}");
            return 2;
        }
    };
    let started = Instant::now();
    match runtime.block_on(crate::restore::run(&config, path)) {
        Ok(done) => {
            println!(
                "restored {} into {}: schema {}, {} users, {} search documents, {} contacts' derived columns checked ({} updated), {:.1} s",
                path.display(),
                config.data_dir.display(),
                done.schema_version,
                done.users,
                done.search_documents,
                done.contacts_scanned,
                done.contacts_updated,
                started.elapsed().as_secs_f64()
            );
            if let Some(replaced) = &done.replaced {
                println!("the data it replaced is in {} (remove it once you are satisfied)", replaced.display());
            }
            0
        }
        Err(e) => {
            eprintln!("mycorrhizal: {e}");
            e.exit_code()
        }
    }
}

/// `mycorrhizal healthcheck`: GET /health/ready on BIND_ADDR (a wildcard address is asked on
/// loopback), 3 s at most.
pub fn healthcheck(config: &Config) -> u8 {
    let mut addr = config.bind_addr;
    if addr.ip().is_unspecified() {
        let loopback = if addr.is_ipv4() { [127, 0, 0, 1].into() } else { std::net::Ipv6Addr::LOCALHOST.into() };
        addr = SocketAddr::new(loopback, addr.port());
    }
    match ready(addr) {
        Ok(()) => 0,
        Err(e) => {
            eprintln!("mycorrhizal: not ready: {e}");
            1
        }
    }
}

fn ready(addr: SocketAddr) -> Result<(), String> {
    let timeout = Duration::from_secs(3);
    let mut stream = TcpStream::connect_timeout(&addr, timeout).map_err(|e| format!("{addr}: {e}"))?;
    stream.set_read_timeout(Some(timeout)).map_err(|e| e.to_string())?;
    stream.set_write_timeout(Some(timeout)).map_err(|e| e.to_string())?;
    let request = format!("GET /health/ready HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\r\n");
    stream.write_all(request.as_bytes()).map_err(|e| e.to_string())?;
    let mut answer = Vec::new();
    stream.take(64 * 1024).read_to_end(&mut answer).map_err(|e| e.to_string())?;
    let status_line = answer.split(|b| *b == b'\n').next().map(String::from_utf8_lossy).unwrap_or_default();
    if status_line.split_whitespace().nth(1) == Some("200") {
        Ok(())
    } else {
        Err(format!("/health/ready answered {}", status_line.trim()))
    }
}
