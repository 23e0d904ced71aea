//! The search handle the engine holds, and what it is opened with and reports. Opening finds the
//! live generation (or rebuilds one), replays the change feed it missed and starts the indexer
//! thread; the handle is then the writer's commit hook (each committed batch goes into the
//! overlay and to the indexer before anyone is answered) and offers queries, flush, rebuild,
//! status and stop.

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, RwLock, mpsc};
use std::time::{Duration, Instant};

use redb::Database;
use serde::Serialize;

use super::generation::{self, generation_name, placeholder};
use super::indexer::Indexer;
use super::merges::MergeGate;
use super::overlay;
use super::run::{SearchGroup, SearchRequest};
use super::schema;
use super::shared::{Msg, Shared, lock};
use super::source::Source;
use crate::changes::{CommitHook, Touched};
use crate::{Error, Result};

/// How the engine runs its search index.
pub struct SearchOptions {
    /// The folder holding the index generations (e.g. `data/search`).
    pub dir: PathBuf,
    /// The searchable kinds; their order is their group order in results.
    pub sources: Vec<Source>,
    /// How long written documents may wait before an index commit (they are searchable at once
    /// through the overlay either way).
    pub commit_interval: Duration,
    /// The index writer's memory budget in bytes, all its threads together (tantivy needs at
    /// least 15 MB a thread; a rebuild uses as many threads, up to four, as the budget allows).
    pub writer_memory: usize,
    /// Change-feed entries applied between two commits while a backlog drains (an import's
    /// rows leave the overlay this many at a time; default [`super::indexer::CHUNK`]).
    pub backlog_chunk: usize,
}

impl SearchOptions {
    pub fn new(dir: impl Into<PathBuf>, sources: Vec<Source>) -> SearchOptions {
        SearchOptions {
            dir: dir.into(),
            sources,
            commit_interval: Duration::from_millis(500),
            writer_memory: 48 << 20,
            backlog_chunk: super::indexer::CHUNK,
        }
    }
}

/// What a rebuild indexed: live rows per kind, all users.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RebuildReport {
    pub indexed: Vec<(&'static str, u64)>,
    pub took: Duration,
}

/// The index's state, for health and diagnostics.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct SearchStatus {
    /// Documents in the committed index (all users).
    pub documents: u64,
    /// Segments of the committed index (every query visits each one).
    pub segments: u64,
    /// Rows written but not yet in a committed index (served from the database meanwhile).
    pub pending: u64,
    pub rebuilding: bool,
    /// The last indexing or commit failure, cleared by the next successful commit.
    pub last_error: Option<String>,
    /// Duration of the last commit, in milliseconds.
    pub last_commit_ms: u64,
}

pub(crate) struct Search {
    shared: Arc<Shared>,
    thread: Mutex<Option<std::thread::JoinHandle<()>>>,
    rebuilding: AtomicBool,
}

impl Search {
    /// Opens the live generation (rebuilding it when missing, of another schema, unreadable or
    /// ahead of the database), replays the change feed it missed, and starts the indexer.
    pub(crate) fn open(db: Arc<Database>, options: SearchOptions) -> Result<Arc<Search>> {
        std::fs::create_dir_all(&options.dir)?;
        let (schema, fields) = schema::build();
        let codes = options.sources.iter().enumerate().map(|(i, s)| (s.kind, i as u64 + 1)).collect();
        let shared = Shared {
            db,
            root: options.dir,
            sources: options.sources,
            codes,
            schema,
            fields,
            interval: options.commit_interval,
            chunk: options.backlog_chunk.max(1),
            memory: options.writer_memory.max(15 << 20),
            live: RwLock::new(Arc::new(placeholder()?)),
            overlay: Mutex::new(HashMap::new()),
            queue: Mutex::new(None),
            health: Mutex::new((None, 0)),
            keys: Mutex::new(HashMap::new()),
            merges: MergeGate::new(),
        };
        let mut rebuilt = false;
        let (live, applied) = match generation::open_current(&shared.root, &shared.schema, || shared.database_seqs()) {
            Ok(found) => found,
            Err(reason) => {
                tracing::warn!(event = "search_index_rebuild", component = "search", reason = %reason, "rebuilding the search index at start");
                let dir = shared.root.join(generation_name());
                let built = shared.build(&dir).inspect_err(|_| {
                    let _ = std::fs::remove_dir_all(&dir);
                })?;
                generation::set_current(&shared.root, &dir)?;
                rebuilt = true;
                (built.0.live, built.0.applied)
            }
        };
        let mut writer = shared.writer(&live.index)?;
        let mut applied = applied;
        let caught_up = shared.catch_up_all(&writer, &mut applied)?;
        if caught_up > 0 {
            tracing::info!(event = "search_index_replayed", component = "search", rows = caught_up);
        }
        shared.commit(&mut writer, &live, &applied)?;
        let current = live.dir.clone();
        *shared.live.write().unwrap_or_else(|p| p.into_inner()) = Arc::new(live);
        generation::remove_other_generations(&shared.root, &current);
        let shared = Arc::new(shared);
        let (sender, queue) = mpsc::channel();
        *lock(&shared.queue) = Some(sender);
        if rebuilt {
            shared.merge_all_in_background(&shared.current().index, &mut writer);
        }
        let indexer = Indexer { shared: shared.clone(), writer, applied, live: shared.current() };
        let handle = std::thread::Builder::new().name("search-indexer".into()).spawn(move || indexer.run(queue))?;
        Ok(Arc::new(Search { shared, thread: Mutex::new(Some(handle)), rebuilding: AtomicBool::new(false) }))
    }

    /// Runs a search within `user`'s documents (see `run`).
    pub(crate) fn search(&self, user: u64, request: &SearchRequest<'_>) -> Result<Vec<SearchGroup>> {
        self.shared.search(user, request)
    }

    /// Commits whatever is pending now and waits for it.
    pub(crate) fn flush(&self) -> Result<()> {
        let (reply, answer) = mpsc::channel();
        self.shared.send(Msg::Flush(reply))?;
        answer.recv().map_err(|_| Error::ShutDown)?
    }

    /// Builds a fresh index aside and swaps it in. A second call while one runs is refused.
    pub(crate) fn rebuild(&self) -> Result<RebuildReport> {
        if self.rebuilding.swap(true, Ordering::SeqCst) {
            return Err(Error::RebuildRunning);
        }
        let started = Instant::now();
        let dir = self.shared.root.join(generation_name());
        let result = self.shared.build(&dir).and_then(|(built, counts)| {
            let (reply, answer) = mpsc::channel();
            self.shared.send(Msg::Swap(Box::new(built), reply))?;
            answer.recv().map_err(|_| Error::ShutDown)??;
            Ok(counts)
        });
        self.rebuilding.store(false, Ordering::SeqCst);
        match result {
            Ok(indexed) => Ok(RebuildReport { indexed, took: started.elapsed() }),
            Err(e) => {
                let _ = std::fs::remove_dir_all(&dir);
                Err(e)
            }
        }
    }

    pub(crate) fn status(&self) -> SearchStatus {
        let searcher = self.shared.current().reader.searcher();
        let (documents, segments) = (searcher.num_docs(), searcher.segment_readers().len() as u64);
        let pending = lock(&self.shared.overlay).values().map(|m| m.len() as u64).sum();
        let (last_error, last_commit_ms) = lock(&self.shared.health).clone();
        SearchStatus {
            documents,
            segments,
            pending,
            rebuilding: self.rebuilding.load(Ordering::SeqCst),
            last_error,
            last_commit_ms,
        }
    }

    /// Stops the indexer after a last commit.
    pub(crate) fn stop(&self) {
        lock(&self.shared.queue).take();
        if let Some(handle) = lock(&self.thread).take() {
            let _ = handle.join();
        }
    }
}

impl CommitHook for Search {
    /// Called by the writer after a durable commit and before it answers anyone.
    fn committed(&self, touched: &[Touched], purged: &[u64]) {
        self.shared.merges.wrote();
        let users = overlay::note(&mut lock(&self.shared.overlay), &self.shared.codes, touched, purged);
        for user in purged {
            let _ = self.shared.send(Msg::Purged(*user));
        }
        if !users.is_empty() {
            let _ = self.shared.send(Msg::Changed(users));
        }
    }
}
