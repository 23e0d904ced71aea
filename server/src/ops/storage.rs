//! Daily storage samples, for the growth trend an operator reads before the disk fills: the
//! database file's size, the data folder's filesystem use, users and live rows. Kept
//! `STORAGE_SAMPLE_RETENTION_DAYS` (the retention purge removes older ones).

use jiff::Timestamp;
use mycorrhizal_engine::{Engine, GlobalRecord, global_tables};
use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StorageSample {
    pub at: Timestamp,
    pub database_bytes: u64,
    /// Percent of the data folder's filesystem in use.
    pub filesystem_used_percent: Option<f64>,
    pub users: u64,
    /// Live rows of every user record kind.
    pub rows: u64,
}

impl GlobalRecord for StorageSample {
    global_tables!("storage_samples");
}

/// Takes and stores one sample of an instance of `users` accounts (blocking).
pub fn sample(engine: &Engine, data_dir: &std::path::Path, users: u64) -> mycorrhizal_engine::Result<StorageSample> {
    let (counts, _) = engine.contents()?;
    let sample = StorageSample {
        at: engine.clock().now(),
        database_bytes: std::fs::metadata(engine.path()).map(|m| m.len()).unwrap_or(0),
        filesystem_used_percent: super::fs::usage_percent(data_dir),
        users,
        rows: counts.values().flat_map(|kinds| kinds.values()).sum(),
    };
    let stored = sample.clone();
    engine.write(move |tx| tx.global().insert(&stored).map(|_| ()))?;
    Ok(sample)
}

/// Removes global records of type `R` older than `cutoff` by their time `at`; returns how many.
pub fn purge_older<R: GlobalRecord>(
    tx: &mut mycorrhizal_engine::Tx<'_>,
    cutoff: Timestamp,
    at: fn(&R) -> Timestamp,
) -> mycorrhizal_engine::Result<u64> {
    let global = tx.global();
    let mut removed = 0;
    for (id, row) in global.list::<R>()? {
        if at(&row) < cutoff {
            global.delete::<R>(id)?;
            removed += 1;
        }
    }
    Ok(removed)
}
