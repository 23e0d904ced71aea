//! Putting a snapshot's database in place for a restore, and with a record stream
//! ([`Encoding::Rows`]) its search index too, built from the same stream at the same time instead
//! of from the finished database when it is opened.
//!
//! The two builds read the stream each on their own: the database's (one thread: redb has one
//! writer) inserts every row; the index's decodes the stream again on its own thread, skipping
//! the tables it does not index, and hands the searchable rows to tantivy's threads. Neither
//! waits for the other, whatever order the stream holds its tables in (a stream holds the record
//! tables after the index and audit tables, so an index fed by the database's pass started only
//! once most of the database was built). Both passes check every row; their summaries must be
//! equal, so both built from the same rows.

use std::collections::{BTreeMap, HashMap};
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use redb::Database;
use redb::backends::FileBackend;

use crate::rows::{self, Layout, Sink};
use crate::search::{FromRows, SearchOptions};
use crate::snapshot::{self, Encoding};
use crate::{Error, Record, Result, Row, codec};

/// What a [`RowCheck`] runs on a stored row: its id and whether it needs rewriting, or `None`
/// for a deleted row.
type StaleFn = dyn Fn(&[u8]) -> Result<Option<(u64, bool)>> + Send + Sync;

/// A check run on every live row of one kind while the index's pass reads the stream (a restore
/// of a record stream with its index built alongside), instead of a pass over the restored
/// database afterwards: e.g. whether a contact's derived columns are what this build computes.
#[derive(Clone)]
pub struct RowCheck {
    records: &'static str,
    stale: Arc<StaleFn>,
}

impl RowCheck {
    /// Checks every live row of `R` with `stale` (`true`: the row needs rewriting).
    pub fn of<R: Record>(stale: fn(&R) -> bool) -> RowCheck {
        RowCheck {
            records: R::KIND.records,
            stale: Arc::new(move |bytes| {
                let row: Row<R> = codec::decode(R::KIND.records, bytes)?;
                Ok((!row.is_deleted()).then(|| (row.id, stale(&row.body))))
            }),
        }
    }
}

impl std::fmt::Debug for RowCheck {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RowCheck").field("records", &self.records).finish_non_exhaustive()
    }
}

/// What the [`RowCheck`]s found for one user.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Checked {
    /// Live rows checked.
    pub scanned: u64,
    /// Ids of the rows that need rewriting, ascending.
    pub stale: Vec<u64>,
}

/// What [`restore`] put in place besides the database.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Placed {
    /// Documents of the search index built from the stream, when one was.
    pub search_documents: Option<u64>,
    /// How long the parts took (for the operator's output and the bench): the database's build
    /// and sync, and at the same time the index's pass over the stream, then its commit and
    /// merge.
    pub steps: Vec<(&'static str, Duration)>,
    /// What the checks found, per user, when they ran (the index was built from the stream);
    /// `None` when they did not, and the caller must check the restored database itself.
    pub checked: Option<BTreeMap<u64, Checked>>,
}

/// Writes the database the snapshot at `from` holds to `to`, synced. With `search`, and a
/// snapshot stored as a record stream, the search index is built from the same rows into
/// `search.dir` (which should be empty) and made current, so opening the engine does not rebuild
/// it; pass it only when the snapshot's schema is this build's (a migration at open could change
/// what the rows index as). With the index built so, every live row of each of `checks`' kinds
/// is checked on the way ([`Placed::checked`]).
pub fn restore(from: &Path, to: &Path, search: Option<&SearchOptions>, checks: &[RowCheck]) -> Result<Placed> {
    let search = match (Encoding::of_file(from)?, search) {
        (Encoding::Rows, Some(search)) => search,
        _ => {
            snapshot::materialize(from, to, true)?;
            return Ok(Placed { search_documents: None, steps: Vec::new(), checked: None });
        }
    };
    let index = FromRows::start(search)?;
    let codes: HashMap<String, u64> = search
        .sources
        .iter()
        .filter_map(|s| index.code_of(s.records()).map(|code| (s.records().to_string(), code)))
        .collect();
    // Set when the database's build fails, so the index's pass stops early.
    let stop = Arc::new(AtomicBool::new(false));
    let (stream, stopped, checks) = (from.to_path_buf(), stop.clone(), checks.to_vec());
    let indexing = std::thread::Builder::new().name("restore-search".into()).spawn(move || {
        let started = Instant::now();
        let mut feed = Feed {
            codes: &codes,
            code: None,
            index,
            stop: &stopped,
            checks: &checks,
            check: None,
            checked: BTreeMap::new(),
        };
        let summary = rows::read(&mut crate::frame::Decoded::open(&stream)?, &mut feed)?;
        let fed = started.elapsed();
        if stopped.load(Ordering::Relaxed) {
            return Err(Error::Search("the restore's database build failed".into()));
        }
        // Committed with this read's sequences and merged while the database may still be
        // building; made current only once both reads are known to agree.
        let started = Instant::now();
        let seqs: HashMap<u64, u64> = summary.seqs.iter().map(|(user, seq)| (*user, *seq)).collect();
        let finished = feed.index.finish(&seqs)?;
        Ok::<_, Error>((finished, feed.checked, summary, fed, started.elapsed()))
    })?;
    let started = Instant::now();
    let built = build(from, to);
    let database_took = started.elapsed();
    if built.is_err() {
        stop.store(true, Ordering::Relaxed);
    }
    let index = indexing.join().map_err(|_| Error::Search("the restore's index build panicked".into()))?;
    // The database's own error first: the index's pass may only have seen it stop.
    let (summary, (finished, checked, fed, index_took, commit_took)) = match (built, index) {
        (Err(e), _) | (_, Err(e)) => return Err(e),
        (Ok(summary), Ok(index)) => (summary, index),
    };
    if fed != summary {
        return Err(Error::SnapshotInvalid(
            "the backup read differently for the database and for the search index (did it change during the restore?)"
                .into(),
        ));
    }
    let documents = finished.make_current()?;
    Ok(Placed {
        search_documents: Some(documents),
        checked: Some(checked),
        steps: vec![
            ("database built and synced", database_took),
            ("search rows fed", index_took),
            ("search committed and merged", commit_took),
        ],
    })
}

/// Builds the database `to` from the stream at `from` (one write transaction, committed once
/// without a sync of redb's own; the finished file is synced once).
fn build(from: &Path, to: &Path) -> Result<rows::Summary> {
    let file = std::fs::OpenOptions::new().read(true).write(true).create(true).truncate(true).open(to)?;
    let db = Database::builder()
        .set_cache_size(crate::snapshot::BUILD_CACHE_BYTES)
        .create_with_backend(snapshot::Unsynced(FileBackend::new(file)?))?;
    let summary = rows::fill(&mut crate::frame::Decoded::open(from)?, &db, &mut rows::Discard)?;
    db.close()?;
    // Synced here, while the index may still be committing or merging.
    std::fs::File::open(to)?.sync_all()?;
    Ok(summary)
}

/// Hands the rows of searchable kinds to the index build, and the rows of checked kinds to
/// their checks.
struct Feed<'c> {
    codes: &'c HashMap<String, u64>,
    /// The searchable kind of the table being read, if it is one.
    code: Option<u64>,
    index: FromRows,
    stop: &'c AtomicBool,
    checks: &'c [RowCheck],
    /// The check of the table being read, if it has one.
    check: Option<&'c RowCheck>,
    checked: BTreeMap<u64, Checked>,
}

impl Sink for Feed<'_> {
    fn table(&mut self, name: &str, layout: Layout) -> Result<()> {
        if self.stop.load(Ordering::Relaxed) {
            return Err(Error::Search("the restore's database build failed".into()));
        }
        let pair = layout == Layout::Pair;
        self.code = if pair { self.codes.get(name).copied() } else { None };
        self.check = if pair { self.checks.iter().find(|c| c.records == name) } else { None };
        Ok(())
    }

    fn row(&mut self, key: &[u8], value: &[u8]) -> Result<()> {
        if self.code.is_none() && self.check.is_none() {
            return Ok(());
        }
        if self.stop.load(Ordering::Relaxed) {
            return Err(Error::Search("the restore's database build failed".into()));
        }
        let user = key.get(..8).and_then(|b| b.try_into().ok()).map(u64::from_le_bytes).unwrap_or(0);
        if let Some(code) = self.code {
            self.index.add(code, user, value)?;
        }
        if let Some(check) = self.check
            && let Some((id, stale)) = (check.stale)(value)?
        {
            let checked = self.checked.entry(user).or_default();
            checked.scanned += 1;
            if stale {
                checked.stale.push(id);
            }
        }
        Ok(())
    }
}
