//! The indexer thread. It owns the live generation's one `IndexWriter`: it applies the batches
//! the writer reports (through the change feed), commits every `commit_interval` or on a flush
//! (never per write), and after every [`CHUNK`] change-feed entries while a backlog drains (so
//! an import's rows leave the read-your-writes overlay a chunk at a time, not all at the end),
//! drops a purged user's documents, swaps in a rebuilt generation, and starts the merges held
//! back while rows were being written once writing pauses (`merges`). A
//! failed update or commit is logged and retried; searches stay right meanwhile through the
//! overlay. It and tantivy's own indexing and merging threads run at background priority.

use std::collections::{BTreeSet, HashMap};
use std::sync::{Arc, mpsc};
use std::time::{Duration, Instant};

use redb::ReadableDatabase;
use tantivy::{Index, IndexWriter, Term};

use super::generation::Live;
use super::merges::{self, WhenQuiet};
use super::shared::{Msg, Shared, lock};
use crate::{Error, Result};

/// The indexer thread: owns the one `IndexWriter` of the live generation.
pub(super) struct Indexer {
    pub shared: Arc<Shared>,
    pub writer: IndexWriter,
    /// The last change-feed sequence applied to `writer`, per user.
    pub applied: HashMap<u64, u64>,
    pub live: Arc<Live>,
}

/// How much lower than the rest of the server the search index's own threads run: a nice value
/// added to the server's (Linux keeps it per thread; new threads inherit it). Indexing is
/// background work: searches cover rows not yet indexed (the overlay), so when the machine is
/// busy, requests and the durable writer go first. On a 2-core machine, importing 100,000 cards
/// competed with about 1.7 CPU seconds of indexing and merging during the confirm.
const BACKGROUND_NICE: i32 = 10;

/// Change-feed entries applied between two commits while a backlog drains. Until a commit covers
/// a row, every search judges it from the database (the overlay): after a 100,000-card import,
/// committing only at the end kept all of them there for the whole catch-up, each search paying
/// for all of them and holding their analyses in memory.
pub(super) const CHUNK: usize = 10_000;

/// How often an idle indexer looks whether merges held back while rows were written are due.
const IDLE_LOOK: Duration = Duration::from_secs(5);

/// Lowers the calling thread's priority by [`BACKGROUND_NICE`] (see [`crate::priority`]).
pub(super) fn background_priority() {
    crate::priority::lower_by(BACKGROUND_NICE, "search_priority_unchanged");
}

impl Shared {
    /// The live generation's writer, made on a thread of background priority: tantivy's
    /// indexing and merging threads, started with it, inherit that priority (see
    /// [`background_priority`]). Its merges wait while rows are being written (`merges`).
    pub fn writer(&self, index: &Index) -> Result<IndexWriter> {
        let memory = self.memory;
        let made = std::thread::scope(|scope| {
            scope
                .spawn(|| {
                    background_priority();
                    index.writer_with_num_threads(1, memory)
                })
                .join()
                .unwrap_or_else(|panic| std::panic::resume_unwind(panic))
        })?;
        made.set_merge_policy(Box::new(WhenQuiet(self.merges.clone())));
        Ok(made)
    }
}

impl Indexer {
    pub fn run(mut self, queue: mpsc::Receiver<Msg>) {
        background_priority();
        let mut dirty_since: Option<Instant> = None;
        let mut pending: BTreeSet<u64> = BTreeSet::new();
        loop {
            // A backlog still pending is taken up at once; otherwise wait for news, the commit or
            // the pause in writing that held-back merges wait for. Idle, it still looks every few
            // seconds: a merge that ended during writing may have held back the next one
            // (tantivy asks the policy again on its own thread) after the last commit.
            let wait = if pending.is_empty() {
                let commit = dirty_since.map_or(IDLE_LOOK, |t| self.shared.interval.saturating_sub(t.elapsed()));
                self.shared.merges.wait().map_or(commit, |merges| commit.min(merges))
            } else {
                Duration::ZERO
            };
            let mut stop = false;
            let mut next = match queue.recv_timeout(wait) {
                Ok(msg) => Some(msg),
                Err(mpsc::RecvTimeoutError::Timeout) => None,
                Err(mpsc::RecvTimeoutError::Disconnected) => {
                    stop = true;
                    None
                }
            };
            // Handle everything already queued before committing.
            while let Some(msg) = next.take() {
                match msg {
                    Msg::Changed(users) => pending.extend(users),
                    Msg::Purged(user) => {
                        self.writer.delete_term(Term::from_field_u64(self.shared.fields.user, user));
                        self.applied.remove(&user);
                        pending.remove(&user);
                        dirty_since.get_or_insert_with(Instant::now);
                    }
                    Msg::Flush(reply) => {
                        let result = self.apply_all(&mut pending).and_then(|_| self.commit());
                        if result.is_ok() {
                            dirty_since = None;
                        }
                        let _ = reply.send(result);
                    }
                    Msg::Reload => {
                        if let Err(e) = self.live.reader.reload() {
                            self.failed("search_index_reload_failed", &e.into());
                        }
                    }
                    Msg::Swap(built, reply) => {
                        let result = self.swap(*built);
                        if result.is_ok() {
                            pending.clear();
                            dirty_since = None;
                        }
                        let _ = reply.send(result);
                    }
                }
                next = queue.try_recv().ok();
            }
            let mut backlog = false;
            if !pending.is_empty() {
                match self.apply(&mut pending) {
                    Ok(more) => {
                        dirty_since.get_or_insert_with(Instant::now);
                        backlog = more;
                    }
                    Err(e) => {
                        // Reads stay right meanwhile (the rows stay in the overlay); retry later
                        // instead of spinning on a failure that may not go away at once.
                        self.failed("search_index_update_failed", &e);
                        std::thread::sleep(Duration::from_secs(1));
                    }
                }
            }
            let due = backlog || dirty_since.is_some_and(|t| t.elapsed() >= self.shared.interval);
            if (due || stop) && dirty_since.is_some() {
                match self.commit() {
                    Ok(()) => dirty_since = None,
                    Err(e) => {
                        self.failed("search_index_commit_failed", &e);
                        dirty_since = Some(Instant::now());
                    }
                }
            }
            if stop {
                return;
            }
            if self.shared.merges.due() {
                self.merge_held();
            }
        }
    }

    /// Starts the merges the policy proposes for the committed segments now that writing has
    /// paused; each has readers reloaded when it is done.
    fn merge_held(&mut self) {
        match self.live.index.searchable_segment_metas() {
            Ok(segments) => {
                for candidate in merges::proposed(&segments) {
                    self.shared.merge_in_background(&mut self.writer, &candidate.0);
                }
            }
            Err(e) => tracing::warn!(event = "search_merge_not_started", component = "search", error = %e),
        }
    }

    fn failed(&self, event: &str, error: &Error) {
        tracing::error!(event, component = "search", error = %error);
        lock(&self.shared.health).0 = Some(error.to_string());
    }

    /// Applies the pending users' change feeds, `chunk` entries at most ([`CHUNK`] by default);
    /// a user whose feed goes on past that stays pending. Returns whether anything stays pending.
    fn apply(&mut self, pending: &mut BTreeSet<u64>) -> Result<bool> {
        if pending.is_empty() {
            return Ok(false);
        }
        let txn = self.shared.db.begin_read()?;
        let mut budget = self.shared.chunk;
        while let Some(user) = pending.first().copied() {
            let (_, read, more) = self.shared.catch_up(&self.writer, &txn, &mut self.applied, user, budget)?;
            if more {
                return Ok(true);
            }
            pending.remove(&user);
            // Each user costs at least one entry of the budget, so the loop ends.
            budget = budget.saturating_sub(read.max(1));
            if budget == 0 {
                break;
            }
        }
        Ok(!pending.is_empty())
    }

    /// Applies every pending change (a flush).
    fn apply_all(&mut self, pending: &mut BTreeSet<u64>) -> Result<()> {
        while self.apply(pending)? {}
        Ok(())
    }

    fn commit(&mut self) -> Result<()> {
        self.shared.commit(&mut self.writer, &self.live, &self.applied)
    }
}
