//! Rebuild and swap. A complete generation is built aside, in a new folder, from one read
//! transaction of the database (at start when the live one cannot serve, or on request), merged
//! into one segment only after it is live. A requested one is handed to the indexer thread,
//! which catches it up with the writes made while it was built, commits, points `CURRENT` at it
//! and swaps readers over: searches use the old generation until that instant.

use std::path::Path;
use std::sync::Arc;

use redb::ReadableDatabase;
use tantivy::{Index, IndexWriter};

use super::feed::seqs_of;
use super::generation::{self, Built, live_of, payload_json};
use super::indexer::Indexer;
use super::schema;
use super::shared::Shared;
use crate::Result;

/// The least memory tantivy gives one indexing thread.
const MIN_THREAD_MEMORY: usize = 15 << 20;

impl Shared {
    /// Builds a complete generation in `dir` from one read transaction of the database.
    pub fn build(&self, dir: &Path) -> Result<(Built, Vec<(&'static str, u64)>)> {
        std::fs::create_dir_all(dir)?;
        let index = Index::create_in_dir(dir, self.schema.clone())?;
        schema::register_tokenizers(&index);
        // The writer's memory is the budget of all its threads together (tantivy needs 15 MB a
        // thread): a small budget builds on fewer threads rather than past it.
        let threads = std::thread::available_parallelism()
            .map(|n| n.get())
            .unwrap_or(1)
            .clamp(1, 4)
            .min(self.memory / MIN_THREAD_MEMORY)
            .max(1);
        let mut writer: IndexWriter = index.writer_with_num_threads(threads, self.memory.max(MIN_THREAD_MEMORY))?;
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
        self.shared.merge_in_background(&self.live.index, &mut self.writer);
        generation::remove_other_generations(&self.shared.root, &self.live.dir);
        Ok(())
    }
}
