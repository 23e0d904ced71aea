//! Putting a snapshot's database in place for a restore, and with a record stream
//! ([`Encoding::Rows`]) its search index too: the rows the stream hands to the database build
//! are handed as well to a search generation built on other threads at the same time, instead of
//! a rebuild from the finished database when it is opened. The two builds share the machine's
//! cores; the database's is one thread (redb has one writer), the index's are tantivy's.

use std::collections::HashMap;
use std::path::Path;
use std::sync::mpsc;

use redb::Database;
use redb::backends::FileBackend;

use crate::rows::{self, Layout, Sink};
use crate::search::{FromRows, SearchOptions};
use crate::snapshot::{self, Encoding};
use crate::{Error, Result};

/// The page cache of a database built from a record stream: the build writes every page once,
/// and a cache this size keeps the B-trees' right-hand edges and a good run of dirty pages.
pub(crate) const BUILD_CACHE_BYTES: usize = 256 << 20;

/// Rows handed to the index build at a time.
const BATCH: usize = 1024;

/// A batch of searchable rows: `(kind code, user, stored row)`.
type Batch = Vec<(u64, u64, Vec<u8>)>;

/// What [`restore`] put in place besides the database.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Placed {
    /// Documents of the search index built from the stream, when one was.
    pub search_documents: Option<u64>,
}

/// Writes the database the snapshot at `from` holds to `to`, synced. With `search`, and a
/// snapshot stored as a record stream, the search index is built from the same rows into
/// `search.dir` (which should be empty) and made current, so opening the engine does not rebuild
/// it; pass it only when the snapshot's schema is this build's (a migration at open could change
/// what the rows index as).
pub fn restore(from: &Path, to: &Path, search: Option<&SearchOptions>) -> Result<Placed> {
    let search = match (Encoding::of_file(from)?, search) {
        (Encoding::Rows, Some(search)) => search,
        _ => {
            snapshot::materialize(from, to, true)?;
            return Ok(Placed { search_documents: None });
        }
    };
    let index = FromRows::start(search)?;
    let codes: HashMap<String, u64> = search
        .sources
        .iter()
        .filter_map(|s| index.code_of(s.records()).map(|code| (s.records().to_string(), code)))
        .collect();
    let (batches, received) = mpsc::sync_channel::<Batch>(8);
    let indexing = std::thread::Builder::new().name("restore-search".into()).spawn(move || {
        let mut index = index;
        for batch in received {
            for (code, user, bytes) in batch {
                index.add(code, user, &bytes)?;
            }
        }
        Ok::<_, Error>(index)
    })?;
    let built = build(from, to, &codes, batches);
    // The index thread ends when the sender is gone (dropped by `build`, whatever its outcome).
    let index = indexing.join().map_err(|_| Error::Search("the restore's index build panicked".into()))?;
    // The index build's own error first: the database build only saw it stop.
    let (summary, index) = match (built, index) {
        (_, Err(e)) | (Err(e), _) => return Err(e),
        (Ok(summary), Ok(index)) => (summary, index),
    };
    let seqs: HashMap<u64, u64> = summary.seqs.into_iter().collect();
    let documents = index.finish(&seqs)?;
    std::fs::File::open(to)?.sync_all()?;
    Ok(Placed { search_documents: Some(documents) })
}

/// Builds the database `to` from the stream at `from` (one write transaction, committed once,
/// unsynced), sending the rows of the record tables in `codes` to `batches` as it goes.
fn build(
    from: &Path,
    to: &Path,
    codes: &HashMap<String, u64>,
    batches: mpsc::SyncSender<Batch>,
) -> Result<rows::Summary> {
    let file = std::fs::OpenOptions::new().read(true).write(true).create(true).truncate(true).open(to)?;
    let db = Database::builder()
        .set_cache_size(BUILD_CACHE_BYTES)
        .create_with_backend(snapshot::Unsynced(FileBackend::new(file)?))?;
    let mut tap = Tap { codes, code: None, batch: Vec::new(), batches };
    let summary = rows::fill(&mut crate::frame::Decoded::open(from)?, &db, &mut tap)?;
    tap.send()?;
    db.close()?;
    Ok(summary)
}

/// Hands the rows of searchable kinds to the index build.
struct Tap<'c> {
    codes: &'c HashMap<String, u64>,
    /// The searchable kind of the table being read, if it is one.
    code: Option<u64>,
    batch: Batch,
    batches: mpsc::SyncSender<Batch>,
}

impl Tap<'_> {
    fn send(&mut self) -> Result<()> {
        if self.batch.is_empty() {
            return Ok(());
        }
        let batch = std::mem::replace(&mut self.batch, Vec::with_capacity(BATCH));
        // A closed channel means the index build failed: its error is reported after.
        self.batches.send(batch).map_err(|_| Error::Search("the restore's index build stopped".into()))
    }
}

impl Sink for Tap<'_> {
    fn table(&mut self, name: &str, layout: Layout) -> Result<()> {
        self.code = if layout == Layout::Pair { self.codes.get(name).copied() } else { None };
        Ok(())
    }

    fn row(&mut self, key: &[u8], value: &[u8]) -> Result<()> {
        if let Some(code) = self.code {
            let user = key.get(..8).and_then(|b| b.try_into().ok()).map(u64::from_le_bytes).unwrap_or(0);
            self.batch.push((code, user, value.to_vec()));
            if self.batch.len() >= BATCH {
                self.send()?;
            }
        }
        Ok(())
    }
}
