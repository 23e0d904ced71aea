//! Rebuild and swap. A complete generation is built aside, in a new folder, from one read
//! transaction of the database (at start when the live one cannot serve, or on request), merged
//! into one segment only after it is live. A requested one is handed to the indexer thread,
//! which catches it up with the writes made while it was built, commits, points `CURRENT` at it
//! and swaps readers over: searches use the old generation until that instant.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use redb::ReadableDatabase;
use tantivy::{Index, IndexWriter};

use super::feed::seqs_of;
use super::generation::{self, Built, live_of, payload_json};
use super::handle::SearchOptions;
use super::indexer::Indexer;
use super::schema::{self, Fields};
use super::shared::{Shared, document};
use super::source::Source;
use crate::Result;

/// The least memory tantivy gives one indexing thread.
const MIN_THREAD_MEMORY: usize = 15 << 20;

impl Shared {
    /// Builds a complete generation in `dir` from one read transaction of the database.
    pub fn build(&self, dir: &Path) -> Result<(Built, Vec<(&'static str, u64)>)> {
        std::fs::create_dir_all(dir)?;
        let index = Index::create_in_dir(dir, self.schema.clone())?;
        schema::register_tokenizers(&index);
        let mut writer = build_writer(&index, self.memory)?;
        // No merging while building: the segments are merged into one once, after the swap.
        writer.set_merge_policy(Box::new(tantivy::merge_policy::NoMergePolicy));
        let txn = self.db.begin_read()?;
        let applied = seqs_of(&txn)?;
        let mut counts = Vec::new();
        for (i, source) in self.sources.iter().enumerate() {
            let code = i as u64 + 1;
            let mut count = 0u64;
            (source.scan)(&txn, &mut |user, id, doc| {
                writer.add_document(self.document(user, code, id, &doc))?;
                count += 1;
                Ok(())
            })?;
            counts.push((source.kind, count));
        }
        drop(txn);
        let mut prepared = writer.prepare_commit()?;
        prepared.set_payload(&payload_json(&applied)?);
        prepared.commit()?;
        writer.wait_merging_threads()?;
        let live = live_of(index, dir.to_path_buf())?;
        Ok((Built { live, applied }, counts))
    }
}

/// The writer of a build: the memory is the budget of all its threads together (tantivy needs
/// 15 MB a thread), so a small budget builds on fewer threads rather than past it.
fn build_writer(index: &Index, memory: usize) -> Result<IndexWriter> {
    let threads = std::thread::available_parallelism()
        .map(|n| n.get())
        .unwrap_or(1)
        .clamp(1, 4)
        .min(memory / MIN_THREAD_MEMORY)
        .max(1);
    Ok(index.writer_with_num_threads(threads, memory.max(MIN_THREAD_MEMORY))?)
}

/// A generation built from rows handed over one at a time, for a restore that builds the
/// database from a backup's record stream: the index is built while the database is, from the
/// same rows, instead of from the finished database afterwards. [`FromRows::finish`] commits it
/// with the database's change-feed sequences as applied, merges it into one segment and makes it
/// current, so opening the engine over the restored database finds it up to date.
pub struct FromRows {
    root: PathBuf,
    dir: PathBuf,
    index: Index,
    writer: IndexWriter,
    fields: Fields,
    sources: Vec<Source>,
    documents: u64,
}

impl FromRows {
    /// Starts a generation in `options.dir` (which should hold none yet).
    pub fn start(options: &SearchOptions) -> Result<FromRows> {
        let (schema, fields) = schema::build();
        let root = options.dir.clone();
        let dir = root.join(generation::generation_name());
        std::fs::create_dir_all(&dir)?;
        let index = Index::create_in_dir(&dir, schema)?;
        schema::register_tokenizers(&index);
        let writer = build_writer(&index, options.writer_memory.max(MIN_THREAD_MEMORY))?;
        writer.set_merge_policy(Box::new(tantivy::merge_policy::NoMergePolicy));
        Ok(FromRows { root, dir, index, writer, fields, sources: options.sources.clone(), documents: 0 })
    }

    /// The code of the searchable kind whose record table is `table`, if any.
    pub fn code_of(&self, table: &str) -> Option<u64> {
        self.sources.iter().position(|s| s.records == table).map(|i| i as u64 + 1)
    }

    /// Indexes `user`'s stored row `bytes` of the kind `code` (nothing when it is deleted or not
    /// searchable).
    pub fn add(&mut self, code: u64, user: u64, bytes: &[u8]) -> Result<()> {
        let Some(source) = self.sources.get((code as usize).wrapping_sub(1)) else { return Ok(()) };
        if let Some((id, doc)) = (source.from_row)(bytes)? {
            self.writer.add_document(document(&self.fields, &self.sources, user, code, id, &doc))?;
            self.documents += 1;
        }
        Ok(())
    }

    /// Commits with `seqs` (every user's last change-feed sequence in the restored database) as
    /// applied and merges the segments into one; the generation is not current until
    /// [`Finished::make_current`].
    pub fn finish(mut self, seqs: &HashMap<u64, u64>) -> Result<Finished> {
        let mut prepared = self.writer.prepare_commit()?;
        prepared.set_payload(&payload_json(seqs)?);
        prepared.commit()?;
        let segments = self.index.searchable_segment_ids()?;
        if segments.len() > 1 {
            self.writer.merge(&segments).wait()?;
        }
        self.writer.wait_merging_threads()?;
        Ok(Finished { root: self.root, dir: self.dir, documents: self.documents })
    }
}

/// A generation built from rows, committed and merged, not yet current.
#[derive(Debug)]
pub struct Finished {
    root: PathBuf,
    dir: PathBuf,
    documents: u64,
}

impl Finished {
    /// Points `CURRENT` at the generation; returns the documents indexed.
    pub fn make_current(self) -> Result<u64> {
        generation::set_current(&self.root, &self.dir)?;
        Ok(self.documents)
    }
}

impl Indexer {
    /// Catches a rebuilt generation up with writes made while it was built, then makes it live.
    pub fn swap(&mut self, built: Built) -> Result<()> {
        let Built { live, mut applied } = built;
        let mut writer = self.shared.writer(&live.index)?;
        self.shared.catch_up_all(&writer, &mut applied)?;
        self.shared.commit(&mut writer, &live, &applied)?;
        let live = Arc::new(live);
        generation::set_current(&self.shared.root, &live.dir)?;
        *self.shared.live.write().unwrap_or_else(|p| p.into_inner()) = live.clone();
        // The old writer's uncommitted work is covered by the new generation's catch-up.
        drop(std::mem::replace(&mut self.writer, writer));
        self.applied = applied;
        self.live = live;
        self.shared.merge_all_in_background(&self.live.index, &mut self.writer);
        generation::remove_other_generations(&self.shared.root, &self.live.dir);
        Ok(())
    }
}
