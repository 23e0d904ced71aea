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

/// The samples of the last `days` days, oldest first (blocking).
pub fn recent(engine: &Engine, days: i64) -> mycorrhizal_engine::Result<Vec<StorageSample>> {
    let since = engine.clock().now() - jiff::SignedDuration::from_hours(24 * days);
    let mut samples: Vec<StorageSample> =
        engine.global()?.list::<StorageSample>()?.into_iter().map(|(_, s)| s).filter(|s| s.at >= since).collect();
    samples.sort_by_key(|s| s.at);
    Ok(samples)
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

/// A storage tier: `ok` below `STORAGE_WARN_PERCENT`, `warning` from it, `critical` from
/// `STORAGE_CRITICAL_PERCENT`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "lowercase")]
pub enum Tier {
    Ok,
    Warning,
    Critical,
}

/// How far below a threshold usage must fall before a tier steps down.
pub const HYSTERESIS: f64 = 5.0;

/// The tier for `used` percent, given the tier before: up as soon as a threshold is reached,
/// down only once usage is [`HYSTERESIS`] points below the threshold it crossed.
pub fn tier(before: Tier, used: f64, warn: f64, critical: f64) -> Tier {
    let fresh = if used >= critical {
        Tier::Critical
    } else if used >= warn {
        Tier::Warning
    } else {
        Tier::Ok
    };
    if fresh >= before {
        return fresh;
    }
    // Stepping down: each step needs the usage clear of its threshold by the margin.
    match before {
        Tier::Critical if used > critical - HYSTERESIS => Tier::Critical,
        Tier::Critical | Tier::Warning if used > warn - HYSTERESIS => Tier::Warning.max(fresh),
        _ => fresh,
    }
}

/// The tier the last reading left (`map:storage`, key `tier`).
const STATE: &str = "map:storage";

/// One folder of the data folder, as the storage block lists it.
#[derive(Debug, Clone, Serialize, utoipa::ToSchema)]
pub struct DirectoryUsage {
    /// Relative to the data folder (`.` is the database and the files beside it).
    pub path: String,
    pub bytes: u64,
    pub file_count: u64,
    /// The walk stopped at [`WALK_LIMIT`] entries: the sizes are at least these.
    pub truncated: bool,
}

#[derive(Debug, Clone, Serialize, utoipa::ToSchema)]
pub struct FilesystemUsage {
    pub free_bytes: u64,
    pub total_bytes: u64,
}

/// The storage block of the system status.
#[derive(Debug, Clone, Serialize, utoipa::ToSchema)]
pub struct StorageBlock {
    pub database_bytes: u64,
    pub filesystem: Option<FilesystemUsage>,
    pub directories: Vec<DirectoryUsage>,
    /// Database growth over the last 7, 30 and 90 days, from the daily samples (absent until a
    /// sample that old exists).
    pub growth_7d_bytes: Option<i64>,
    pub growth_30d_bytes: Option<i64>,
    pub growth_90d_bytes: Option<i64>,
    /// When the filesystem fills at the last 30 days' pace (7 days' while younger; absent
    /// while it does not grow).
    #[schema(value_type = Option<String>)]
    pub projected_full_at: Option<Timestamp>,
    pub usage_percent: Option<f64>,
    pub threshold: Option<Tier>,
}

/// Entries a directory walk reads at most.
pub const WALK_LIMIT: u64 = 100_000;

fn walk(dir: &std::path::Path) -> DirectoryUsage {
    let (mut bytes, mut file_count, mut seen) = (0, 0, 0);
    let mut stack = vec![dir.to_path_buf()];
    let mut truncated = false;
    'walk: while let Some(next) = stack.pop() {
        let Ok(entries) = std::fs::read_dir(&next) else { continue };
        for entry in entries.flatten() {
            seen += 1;
            if seen > WALK_LIMIT {
                truncated = true;
                break 'walk;
            }
            match entry.metadata() {
                Ok(m) if m.is_dir() => stack.push(entry.path()),
                Ok(m) => {
                    bytes += m.len();
                    file_count += 1;
                }
                Err(_) => {}
            }
        }
    }
    DirectoryUsage { path: String::new(), bytes, file_count, truncated }
}

/// The data folder's top-level folders and its loose files (`.`), largest first.
fn directories(data_dir: &std::path::Path) -> Vec<DirectoryUsage> {
    let mut out = Vec::new();
    let mut loose = DirectoryUsage { path: ".".into(), bytes: 0, file_count: 0, truncated: false };
    for entry in std::fs::read_dir(data_dir).into_iter().flatten().flatten() {
        match entry.metadata() {
            Ok(m) if m.is_dir() => {
                let mut usage = walk(&entry.path());
                usage.path = entry.file_name().to_string_lossy().into_owned();
                out.push(usage);
            }
            Ok(m) => {
                loose.bytes += m.len();
                loose.file_count += 1;
            }
            Err(_) => {}
        }
    }
    out.push(loose);
    out.sort_by(|a, b| b.bytes.cmp(&a.bytes));
    out
}

/// Growth of the database since the newest sample at least `days` old, if there is one.
fn growth(samples: &[StorageSample], now: Timestamp, days: i64, current: u64) -> Option<i64> {
    let cutoff = now - jiff::SignedDuration::from_hours(24 * days);
    let base = samples.iter().filter(|s| s.at <= cutoff).max_by_key(|s| s.at)?;
    Some(current as i64 - base.database_bytes as i64)
}

/// The storage block now, and the tier it leaves (stored when it changed). Blocking.
pub fn block(
    engine: &Engine,
    data_dir: &std::path::Path,
    warn: u8,
    critical: u8,
) -> mycorrhizal_engine::Result<StorageBlock> {
    let now = engine.clock().now();
    let database_bytes = std::fs::metadata(engine.path()).map(|m| m.len()).unwrap_or(0);
    let filesystem =
        super::fs::space(data_dir).map(|(free_bytes, total_bytes)| FilesystemUsage { free_bytes, total_bytes });
    let usage_percent = super::fs::usage_percent(data_dir).map(|p| (p * 10.0).round() / 10.0);
    let samples: Vec<StorageSample> = engine.global()?.list::<StorageSample>()?.into_iter().map(|(_, s)| s).collect();
    let (g7, g30, g90) = (
        growth(&samples, now, 7, database_bytes),
        growth(&samples, now, 30, database_bytes),
        growth(&samples, now, 90, database_bytes),
    );
    let projected_full_at = match (g30.map(|g| (g, 30)).or(g7.map(|g| (g, 7))), &filesystem) {
        (Some((grown, days)), Some(fs)) if grown > 0 => {
            let per_day = grown as f64 / days as f64;
            let days_left = fs.free_bytes as f64 / per_day;
            (days_left < 36_500.0).then(|| now + jiff::SignedDuration::from_secs_f64(days_left * 86_400.0))
        }
        _ => None,
    };
    let threshold = match usage_percent {
        Some(used) => {
            let before = engine
                .global()?
                .map_get(STATE, "tier")?
                .and_then(|b| serde_json::from_slice::<Tier>(&b).ok())
                .unwrap_or(Tier::Ok);
            let now_tier = tier(before, used, f64::from(warn), f64::from(critical));
            if now_tier != before {
                // Best effort: a full disk refuses writes just when the tier turns critical, and
                // the status must still answer then.
                let bytes = serde_json::to_vec(&now_tier).unwrap_or_default();
                if let Err(e) = engine.write(move |tx| tx.global().map_put(STATE, "tier", &bytes)) {
                    tracing::warn!(event = "storage_tier_not_stored", component = "app", error = %e);
                }
            }
            Some(now_tier)
        }
        None => None,
    };
    Ok(StorageBlock {
        database_bytes,
        filesystem,
        directories: directories(data_dir),
        growth_7d_bytes: g7,
        growth_30d_bytes: g30,
        growth_90d_bytes: g90,
        projected_full_at,
        usage_percent,
        threshold,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tiers_rise_at_their_thresholds_and_step_down_five_points_below() {
        let t = |before, used| tier(before, used, 75.0, 90.0);
        assert_eq!(t(Tier::Ok, 74.9), Tier::Ok);
        assert_eq!(t(Tier::Ok, 75.0), Tier::Warning);
        assert_eq!(t(Tier::Ok, 95.0), Tier::Critical);
        assert_eq!(t(Tier::Critical, 86.0), Tier::Critical, "within five points of critical");
        assert_eq!(t(Tier::Critical, 85.0), Tier::Warning);
        assert_eq!(t(Tier::Critical, 60.0), Tier::Ok);
        assert_eq!(t(Tier::Warning, 71.0), Tier::Warning, "within five points of warning");
        assert_eq!(t(Tier::Warning, 70.0), Tier::Ok);
        assert_eq!(t(Tier::Critical, 72.0), Tier::Warning, "down to warning, held there");
    }

    #[test]
    fn growth_is_measured_from_the_newest_sample_old_enough() {
        let day = |d: i64| Timestamp::UNIX_EPOCH + jiff::SignedDuration::from_hours(24 * d);
        let sample = |d: i64, bytes: u64| StorageSample {
            at: day(d),
            database_bytes: bytes,
            filesystem_used_percent: None,
            users: 1,
            rows: 0,
        };
        let samples = [sample(0, 1000), sample(20, 3000), sample(25, 4000)];
        assert_eq!(growth(&samples, day(30), 7, 5000), Some(2000), "from day 20's sample");
        assert_eq!(growth(&samples, day(30), 30, 5000), Some(4000));
        assert_eq!(growth(&samples, day(30), 90, 5000), None, "no sample that old");
    }
}
