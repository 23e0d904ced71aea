//! Full-text search: one tantivy index in the data folder over the record kinds that declare a
//! [`SearchDoc`], fed from the change feed and nothing else.
//!
//! - **Feeding.** After each group commit the writer tells the indexer thread which users changed.
//!   The indexer reads those users' change feeds from where it stopped, re-reads each touched row
//!   and replaces (or deletes) its document. Handlers never touch the index.
//! - **Commits.** One long-lived `IndexWriter`, committed every `commit_interval` (or on flush),
//!   never per write. Each commit's payload holds the schema version and, per user, the last
//!   change-feed sequence applied. At start the indexer replays what the payload says it missed,
//!   so a crash between a database commit and an index commit loses nothing.
//! - **Read-your-writes.** Before a write is acknowledged, the writer records each touched row in
//!   an in-memory overlay (`user -> (kind, id) -> seq`). A query skips overlaid documents in the
//!   index and judges those rows straight from the database with the same matching rules
//!   ([`query::Plan::score`]). An entry leaves the overlay only once a commit covering its
//!   sequence is visible to readers.
//! - **Rebuild.** A fresh index is built in a new folder from one read transaction, then handed
//!   to the indexer, which catches it up from the change feed and swaps it in; readers see the old
//!   index until that instant. `CURRENT` names the live folder.
//! - **Isolation.** Every term of the index carries its owner's scope and every query is built
//!   from the caller's scopes only ([`lookup`]); the API is only on [`crate::UserScope`].
//! - **Ranking.** Per kind, tantivy keeps the best hits asked for and skips postings that cannot
//!   reach them (block-max WAND); totals are counted up to [`TOTAL_CAP`].

mod any;
pub(crate) mod collect;
mod lookup;
pub mod query;
mod run;
mod schema;

use std::collections::{BTreeSet, HashMap};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, RwLock, mpsc};
use std::time::{Duration, Instant};

use redb::{Database, ReadTransaction, ReadableDatabase, ReadableTable, TableError};
use serde::{Deserialize, Serialize};
use tantivy::columnar::Column;
use tantivy::schema::Schema;
use tantivy::{Index, IndexReader, IndexWriter, ReloadPolicy, TantivyDocument, Term};

use crate::changes::{Change, CommitHook, Touched};
pub use crate::record::SearchDoc;
use crate::record::{Record, Row};
use crate::tables::{self, CHANGES, USER_SEQ};
use crate::{Error, Result, codec, read};
pub use query::{Plan, Snippet};
pub use run::TOTAL_CAP;
use schema::Fields;

type LoadFn = fn(&ReadTransaction, u64, u64) -> Result<Option<SearchDoc>>;
type ScanFn = fn(&ReadTransaction, &mut dyn FnMut(u64, u64, SearchDoc) -> Result<()>) -> Result<()>;

/// A searchable record kind. Build with [`Source::of`].
#[derive(Clone, Copy)]
pub struct Source {
    pub kind: &'static str,
    load: LoadFn,
    scan: ScanFn,
    /// Rows of this kind are contacts: each belongs to itself (for `SearchRequest::contacts`).
    contact: bool,
}

impl Source {
    pub fn of<R: Record>() -> Source {
        Source { kind: R::KIND.name, load: load_doc::<R>, scan: scan_docs::<R>, contact: false }
    }

    /// Marks the kind as the contact kind: a row is among the rows of the contacts it names.
    pub fn contacts(self) -> Source {
        Source { contact: true, ..self }
    }
}

fn load_doc<R: Record>(txn: &ReadTransaction, user: u64, id: u64) -> Result<Option<SearchDoc>> {
    let table = match txn.open_table(tables::record_table(R::KIND.records)) {
        Ok(table) => table,
        Err(TableError::TableDoesNotExist(_)) => return Ok(None),
        Err(e) => return Err(e.into()),
    };
    match read::live_row::<R>(&table, R::KIND.records, user, id) {
        Ok(row) => Ok(row.body.search_doc()),
        Err(Error::NotFound) => Ok(None),
        Err(e) => Err(e),
    }
}

fn scan_docs<R: Record>(txn: &ReadTransaction, f: &mut dyn FnMut(u64, u64, SearchDoc) -> Result<()>) -> Result<()> {
    let table = match txn.open_table(tables::record_table(R::KIND.records)) {
        Ok(table) => table,
        Err(TableError::TableDoesNotExist(_)) => return Ok(()),
        Err(e) => return Err(e.into()),
    };
    for entry in table.iter()? {
        let (key, value) = entry?;
        let row: Row<R> = codec::decode(R::KIND.records, value.value())?;
        if row.is_deleted() {
            continue;
        }
        if let Some(doc) = row.body.search_doc() {
            f(key.value().0, row.id, doc)?;
        }
    }
    Ok(())
}

/// How the engine runs its search index.
pub struct SearchOptions {
    /// The folder holding the index generations (e.g. `data/search`).
    pub dir: PathBuf,
    /// The searchable kinds; their order is their group order in results.
    pub sources: Vec<Source>,
    /// How long written documents may wait before an index commit (they are searchable at once
    /// through the overlay either way).
    pub commit_interval: Duration,
    /// The index writer's memory budget in bytes (tantivy needs at least 15 MB).
    pub writer_memory: usize,
}

impl SearchOptions {
    pub fn new(dir: impl Into<PathBuf>, sources: Vec<Source>) -> SearchOptions {
        SearchOptions { dir: dir.into(), sources, commit_interval: Duration::from_millis(500), writer_memory: 48 << 20 }
    }
}

/// What a search asks for. Everything is within the calling user's rows.
#[derive(Debug, Clone)]
pub struct SearchRequest<'a> {
    pub plan: &'a Plan,
    /// Only these kinds (by name); `None` for every kind.
    pub kinds: Option<&'a [&'a str]>,
    /// Include documents marked hidden (archived contacts).
    pub include_hidden: bool,
    /// Only rows belonging to one of these contacts.
    pub contacts: Option<&'a [u64]>,
    /// Hits per kind, after skipping `offset`.
    pub limit: usize,
    pub offset: usize,
}

/// A matching row.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Hit {
    pub id: u64,
    pub score: f32,
}

/// The hits of one kind, best first, and how many rows of that kind matched: exact below
/// [`TOTAL_CAP`], at least `TOTAL_CAP` when it reads `TOTAL_CAP` (a search asking for more than
/// a thousand hits per kind counts every match).
#[derive(Debug, Clone, PartialEq)]
pub struct SearchGroup {
    pub kind: &'static str,
    pub hits: Vec<Hit>,
    pub total: usize,
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

#[derive(Debug, Serialize, Deserialize)]
struct Payload {
    schema: u32,
    /// Last change-feed sequence applied, per user.
    seqs: HashMap<u64, u64>,
}

/// An open index generation.
struct Live {
    index: Index,
    reader: IndexReader,
    dir: PathBuf,
}

enum Msg {
    Changed(Vec<u64>),
    Purged(u64),
    Flush(mpsc::Sender<Result<()>>),
    Swap(Box<Built>, mpsc::Sender<Result<()>>),
    /// A background merge finished: let readers see the merged segment.
    Reload,
}

/// A freshly built generation waiting to be caught up and swapped in.
struct Built {
    live: Live,
    applied: HashMap<u64, u64>,
}

/// `user -> (kind code, id) -> entry`.
type Overlay = HashMap<u64, HashMap<(u64, u64), Pending>>;

/// A row written since the last visible commit: the sequence of its latest change, and its
/// analysed document once a query has needed it (`None` inside: the row is gone or unsearchable).
#[derive(Clone)]
struct Pending {
    seq: u64,
    doc: Option<Arc<Option<Analysed>>>,
}

/// A document as the in-memory matcher reads it.
struct Analysed {
    title: Vec<query::Token>,
    body: Vec<query::Token>,
    hidden: bool,
    contacts: Vec<u64>,
}

pub(crate) struct Search {
    db: Arc<Database>,
    root: PathBuf,
    sources: Vec<Source>,
    codes: HashMap<&'static str, u64>,
    schema: Schema,
    fields: Fields,
    interval: Duration,
    memory: usize,
    live: RwLock<Arc<Live>>,
    /// `user -> (kind code, id) -> seq` of rows written since the last visible commit.
    overlay: Mutex<Overlay>,
    queue: Mutex<Option<mpsc::Sender<Msg>>>,
    thread: Mutex<Option<std::thread::JoinHandle<()>>>,
    rebuilding: AtomicBool,
    health: Mutex<(Option<String>, u64)>,
    /// The key column of each segment, opened once (opening one decodes its block index, which
    /// costs more than a whole pruned query on a large segment). Segments never change.
    keys: Mutex<HashMap<tantivy::index::SegmentId, Column<u64>>>,
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

impl From<tantivy::TantivyError> for Error {
    fn from(e: tantivy::TantivyError) -> Self {
        Error::Search(e.to_string())
    }
}

const CURRENT: &str = "CURRENT";

impl Search {
    /// Opens the live generation (rebuilding it when missing, of another schema, unreadable or
    /// ahead of the database), replays the change feed it missed, and starts the indexer.
    pub(crate) fn open(db: Arc<Database>, options: SearchOptions) -> Result<Arc<Search>> {
        std::fs::create_dir_all(&options.dir)?;
        let (schema, fields) = schema::build();
        let codes = options.sources.iter().enumerate().map(|(i, s)| (s.kind, i as u64 + 1)).collect();
        let search = Search {
            db,
            root: options.dir,
            sources: options.sources,
            codes,
            schema,
            fields,
            interval: options.commit_interval,
            memory: options.writer_memory.max(15 << 20),
            live: RwLock::new(Arc::new(placeholder()?)),
            overlay: Mutex::new(HashMap::new()),
            queue: Mutex::new(None),
            thread: Mutex::new(None),
            rebuilding: AtomicBool::new(false),
            health: Mutex::new((None, 0)),
            keys: Mutex::new(HashMap::new()),
        };
        let mut rebuilt = false;
        let (live, applied) = match search.open_current() {
            Ok(found) => found,
            Err(reason) => {
                tracing::warn!(event = "search_index_rebuild", component = "search", reason = %reason, "rebuilding the search index at start");
                let dir = search.root.join(generation_name());
                let built = search.build(&dir).inspect_err(|_| {
                    let _ = std::fs::remove_dir_all(&dir);
                })?;
                search.set_current(&dir)?;
                rebuilt = true;
                (built.0.live, built.0.applied)
            }
        };
        let mut writer = search.writer(&live.index)?;
        let mut applied = applied;
        let caught_up = search.catch_up_all(&writer, &mut applied)?;
        if caught_up > 0 {
            tracing::info!(event = "search_index_replayed", component = "search", rows = caught_up);
        }
        search.commit(&mut writer, &live, &applied)?;
        let current = live.dir.clone();
        *search.live.write().unwrap_or_else(|p| p.into_inner()) = Arc::new(live);
        search.remove_other_generations(&current);
        let search = Arc::new(search);
        let (sender, queue) = mpsc::channel();
        *lock(&search.queue) = Some(sender);
        if rebuilt {
            search.merge_in_background(&search.current().index, &mut writer);
        }
        let indexer = Indexer { search: search.clone(), writer, applied, live: search.current() };
        let handle = std::thread::Builder::new().name("search-indexer".into()).spawn(move || indexer.run(queue))?;
        *lock(&search.thread) = Some(handle);
        Ok(search)
    }

    fn current(&self) -> Arc<Live> {
        self.live.read().unwrap_or_else(|p| p.into_inner()).clone()
    }

    fn open_current(&self) -> std::result::Result<(Live, HashMap<u64, u64>), String> {
        let name = std::fs::read_to_string(self.root.join(CURRENT)).map_err(|e| format!("no current index ({e})"))?;
        let dir = self.root.join(name.trim());
        let index = Index::open_in_dir(&dir).map_err(|e| format!("unreadable index: {e}"))?;
        let metas = index.load_metas().map_err(|e| format!("unreadable index metadata: {e}"))?;
        let payload: Payload = serde_json::from_str(metas.payload.as_deref().unwrap_or(""))
            .map_err(|e| format!("index commit payload unreadable: {e}"))?;
        if payload.schema != schema::SCHEMA_VERSION || index.schema() != self.schema {
            return Err(format!("index schema {} differs from {}", payload.schema, schema::SCHEMA_VERSION));
        }
        let seqs = self.database_seqs().map_err(|e| e.to_string())?;
        if let Some((user, seq)) = payload.seqs.iter().find(|(u, s)| seqs.get(u).is_some_and(|db| *s > db)) {
            return Err(format!("index is ahead of the database for user {user} (seq {seq}): restored database"));
        }
        let live = self.live_of(index, dir).map_err(|e| e.to_string())?;
        Ok((live, payload.seqs))
    }

    fn live_of(&self, index: Index, dir: PathBuf) -> Result<Live> {
        schema::register_tokenizers(&index);
        let reader = index.reader_builder().reload_policy(ReloadPolicy::Manual).try_into()?;
        Ok(Live { index, reader, dir })
    }

    /// The live generation's writer, made on a thread of background priority: tantivy's
    /// indexing and merging threads, started with it, inherit that priority (see
    /// [`background_priority`]).
    fn writer(&self, index: &Index) -> Result<IndexWriter> {
        let memory = self.memory;
        let made = std::thread::scope(|scope| {
            scope
                .spawn(|| {
                    background_priority();
                    index.writer_with_num_threads(1, memory)
                })
                .join()
                .unwrap_or_else(|panic| std::panic::resume_unwind(panic))
        });
        Ok(made?)
    }

    fn database_seqs(&self) -> Result<HashMap<u64, u64>> {
        let txn = self.db.begin_read()?;
        seqs_of(&txn)
    }

    /// Builds a complete generation in `dir` from one read transaction of the database.
    fn build(&self, dir: &Path) -> Result<(Built, Vec<(&'static str, u64)>)> {
        std::fs::create_dir_all(dir)?;
        let index = Index::create_in_dir(dir, self.schema.clone())?;
        schema::register_tokenizers(&index);
        let threads = std::thread::available_parallelism().map(|n| n.get()).unwrap_or(1).clamp(1, 4);
        let mut writer: IndexWriter = index.writer_with_num_threads(threads, self.memory * threads)?;
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
        let live = self.live_of(index, dir.to_path_buf())?;
        Ok((Built { live, applied }, counts))
    }

    /// The contacts a row belongs to: its own, plus its own id for a contact.
    fn contacts_of(&self, code: u64, id: u64, doc: &SearchDoc) -> Vec<u64> {
        let mut contacts = doc.contacts.clone();
        if self.sources[code as usize - 1].contact {
            contacts.push(id);
        }
        contacts
    }

    fn document(&self, user: u64, code: u64, id: u64, doc: &SearchDoc) -> TantivyDocument {
        let f = &self.fields;
        let mut d = TantivyDocument::default();
        d.add_u64(f.user, user);
        d.add_u64(f.key, schema::key(code, id));
        for c in self.contacts_of(code, id, doc) {
            d.add_u64(f.contact, c);
        }
        // The scoping tokenizers read the scope from the head of the text (see `schema`).
        let scope = schema::scope(user, code, doc.hidden);
        for (text, words, grams) in [(&doc.title, f.title, f.title_grams), (&doc.body, f.body, f.body_grams)] {
            let scoped = schema::scoped_text(&scope, text);
            d.add_text(grams, &scoped);
            d.add_text(words, scoped);
        }
        d
    }

    /// Applies `user`'s change feed after `applied[user]` to `writer`. Returns rows re-indexed.
    fn catch_up(
        &self,
        writer: &IndexWriter,
        txn: &ReadTransaction,
        applied: &mut HashMap<u64, u64>,
        user: u64,
    ) -> Result<usize> {
        let from = applied.get(&user).copied().unwrap_or(0);
        let changes = match txn.open_table(CHANGES) {
            Ok(table) => table,
            Err(TableError::TableDoesNotExist(_)) => return Ok(0),
            Err(e) => return Err(e.into()),
        };
        let mut touched = BTreeSet::new();
        let mut last = from;
        for entry in changes.range((user, from + 1)..=(user, u64::MAX))? {
            let (key, value) = entry?;
            let change: Change = codec::decode("changes", value.value())?;
            last = key.value().1;
            if let Some(code) = self.codes.get(change.kind.as_str()) {
                touched.insert((*code, change.id));
            }
        }
        for (code, id) in &touched {
            writer.delete_term(Term::from_field_u64(self.fields.key, schema::key(*code, *id)));
            let source = &self.sources[*code as usize - 1];
            if let Some(doc) = (source.load)(txn, user, *id)? {
                writer.add_document(self.document(user, *code, *id, &doc))?;
            }
        }
        if last > from {
            applied.insert(user, last);
        }
        Ok(touched.len())
    }

    /// Catches every user up with the database, and drops users the database no longer has.
    fn catch_up_all(&self, writer: &IndexWriter, applied: &mut HashMap<u64, u64>) -> Result<usize> {
        let txn = self.db.begin_read()?;
        let seqs = seqs_of(&txn)?;
        let gone: Vec<u64> = applied.keys().filter(|u| !seqs.contains_key(u)).copied().collect();
        for user in gone {
            writer.delete_term(Term::from_field_u64(self.fields.user, user));
            applied.remove(&user);
        }
        let mut rows = 0;
        for (user, seq) in seqs {
            if applied.get(&user).copied().unwrap_or(0) < seq {
                rows += self.catch_up(writer, &txn, applied, user)?;
            }
        }
        Ok(rows)
    }

    /// Commits with the applied sequences as payload, makes the commit visible to readers, then
    /// drops the overlay entries it covers (in that order, so no row is ever invisible).
    fn commit(&self, writer: &mut IndexWriter, live: &Live, applied: &HashMap<u64, u64>) -> Result<()> {
        let started = Instant::now();
        let mut prepared = writer.prepare_commit()?;
        prepared.set_payload(&payload_json(applied)?);
        prepared.commit()?;
        live.reader.reload()?;
        {
            let mut overlay = lock(&self.overlay);
            overlay.retain(|user, rows| {
                let done = applied.get(user).copied().unwrap_or(0);
                rows.retain(|_, pending| pending.seq > done);
                !rows.is_empty()
            });
        }
        *lock(&self.health) = (None, started.elapsed().as_millis() as u64);
        Ok(())
    }

    fn set_current(&self, dir: &Path) -> Result<()> {
        let name = dir.file_name().and_then(|n| n.to_str()).ok_or_else(|| Error::Search("bad index folder".into()))?;
        let tmp = self.root.join("CURRENT.tmp");
        {
            use std::io::Write;
            let mut f = std::fs::File::create(&tmp)?;
            f.write_all(name.as_bytes())?;
            f.sync_all()?;
        }
        std::fs::rename(&tmp, self.root.join(CURRENT))?;
        if let Ok(d) = std::fs::File::open(&self.root) {
            let _ = d.sync_all();
        }
        Ok(())
    }

    fn remove_other_generations(&self, keep: &Path) {
        let Ok(entries) = std::fs::read_dir(&self.root) else { return };
        for entry in entries.flatten() {
            let path = entry.path();
            if path.is_dir()
                && path != keep
                && entry.file_name().to_string_lossy().starts_with("gen-")
                && let Err(e) = std::fs::remove_dir_all(&path)
            {
                tracing::warn!(event = "search_cleanup_failed", component = "search", path = %path.display(), error = %e);
            }
        }
    }

    /// Merges a freshly built generation into one segment in the background (every query pays
    /// per segment), then has the indexer reload readers. Searches meanwhile use the segments as
    /// they are; the rebuild does not wait for it.
    fn merge_in_background(&self, index: &Index, writer: &mut IndexWriter) {
        let segments = match index.searchable_segment_ids() {
            Ok(segments) if segments.len() > 1 => segments,
            _ => return,
        };
        let merge = writer.merge(&segments);
        let Some(queue) = lock(&self.queue).clone() else { return };
        let spawned = std::thread::Builder::new().name("search-merge".into()).spawn(move || {
            if merge.wait().is_ok() {
                let _ = queue.send(Msg::Reload);
            }
        });
        if let Err(e) = spawned {
            tracing::warn!(event = "search_merge_not_started", component = "search", error = %e);
        }
    }

    fn send(&self, msg: Msg) -> Result<()> {
        let queue = lock(&self.queue).clone().ok_or(Error::ShutDown)?;
        queue.send(msg).map_err(|_| Error::ShutDown)
    }

    /// Commits whatever is pending now and waits for it.
    pub(crate) fn flush(&self) -> Result<()> {
        let (reply, answer) = mpsc::channel();
        self.send(Msg::Flush(reply))?;
        answer.recv().map_err(|_| Error::ShutDown)?
    }

    /// Builds a fresh index aside and swaps it in. A second call while one runs is refused.
    pub(crate) fn rebuild(&self) -> Result<RebuildReport> {
        if self.rebuilding.swap(true, Ordering::SeqCst) {
            return Err(Error::RebuildRunning);
        }
        let started = Instant::now();
        let dir = self.root.join(generation_name());
        let result = self.build(&dir).and_then(|(built, counts)| {
            let (reply, answer) = mpsc::channel();
            self.send(Msg::Swap(Box::new(built), reply))?;
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
        let searcher = self.current().reader.searcher();
        let (documents, segments) = (searcher.num_docs(), searcher.segment_readers().len() as u64);
        let pending = lock(&self.overlay).values().map(|m| m.len() as u64).sum();
        let (last_error, last_commit_ms) = lock(&self.health).clone();
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
        lock(&self.queue).take();
        if let Some(handle) = lock(&self.thread).take() {
            let _ = handle.join();
        }
    }
}

impl CommitHook for Search {
    /// Called by the writer after a durable commit and before it answers anyone.
    fn committed(&self, touched: &[Touched], purged: &[u64]) {
        let mut users = Vec::new();
        {
            let mut overlay = lock(&self.overlay);
            for t in touched {
                if let Some(code) = self.codes.get(t.kind) {
                    let pending = overlay
                        .entry(t.user)
                        .or_default()
                        .entry((*code, t.id))
                        .or_insert(Pending { seq: 0, doc: None });
                    if t.seq > pending.seq {
                        *pending = Pending { seq: t.seq, doc: None };
                    }
                    if !users.contains(&t.user) {
                        users.push(t.user);
                    }
                }
            }
            for user in purged {
                overlay.remove(user);
            }
        }
        for user in purged {
            let _ = self.send(Msg::Purged(*user));
        }
        if !users.is_empty() {
            let _ = self.send(Msg::Changed(users));
        }
    }
}

/// An empty in-memory index standing in until the real one is open.
fn placeholder() -> Result<Live> {
    let (schema, _) = schema::build();
    let index = Index::create_in_ram(schema);
    schema::register_tokenizers(&index);
    let reader = index.reader_builder().reload_policy(ReloadPolicy::Manual).try_into()?;
    Ok(Live { index, reader, dir: PathBuf::new() })
}

fn seqs_of(txn: &ReadTransaction) -> Result<HashMap<u64, u64>> {
    let table = match txn.open_table(USER_SEQ) {
        Ok(table) => table,
        Err(TableError::TableDoesNotExist(_)) => return Ok(HashMap::new()),
        Err(e) => return Err(e.into()),
    };
    let mut out = HashMap::new();
    for entry in table.iter()? {
        let (user, seq) = entry?;
        out.insert(user.value(), seq.value());
    }
    Ok(out)
}

fn payload_json(applied: &HashMap<u64, u64>) -> Result<String> {
    serde_json::to_string(&Payload { schema: schema::SCHEMA_VERSION, seqs: applied.clone() })
        .map_err(|e| Error::Search(e.to_string()))
}

fn generation_name() -> String {
    let nanos = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map(|d| d.as_nanos()).unwrap_or(0);
    format!("gen-{nanos}")
}

/// The indexer thread: owns the one `IndexWriter` of the live generation.
struct Indexer {
    search: Arc<Search>,
    writer: IndexWriter,
    applied: HashMap<u64, u64>,
    live: Arc<Live>,
}

/// How much lower than the rest of the server the search index's own threads run: a nice value
/// added to the server's (Linux keeps it per thread; new threads inherit it). Indexing is
/// background work: searches cover rows not yet indexed (the overlay), so when the machine is
/// busy, requests and the durable writer go first. On a 2-core machine, importing 100,000 cards
/// competed with about 1.7 CPU seconds of indexing and merging during the confirm.
const BACKGROUND_NICE: i32 = 10;

/// Lowers the calling thread's priority by [`BACKGROUND_NICE`] (at most to 19, the lowest). Where
/// that is refused, the thread keeps its priority: indexing is then as fast as before, no less
/// correct.
fn background_priority() {
    #[cfg(target_os = "linux")]
    {
        let me = Some(rustix::thread::gettid());
        let now = rustix::process::getpriority_process(me).unwrap_or(0);
        if let Err(e) = rustix::process::setpriority_process(me, (now + BACKGROUND_NICE).min(19)) {
            tracing::debug!(event = "search_priority_unchanged", component = "search", error = %e);
        }
    }
}

impl Indexer {
    fn run(mut self, queue: mpsc::Receiver<Msg>) {
        background_priority();
        let mut dirty_since: Option<Instant> = None;
        let mut pending: BTreeSet<u64> = BTreeSet::new();
        loop {
            let wait =
                dirty_since.map_or(Duration::from_secs(3600), |t| self.search.interval.saturating_sub(t.elapsed()));
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
                        self.writer.delete_term(Term::from_field_u64(self.search.fields.user, user));
                        self.applied.remove(&user);
                        pending.remove(&user);
                        dirty_since.get_or_insert_with(Instant::now);
                    }
                    Msg::Flush(reply) => {
                        let result = self.apply(&mut pending).and_then(|_| self.commit());
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
            if !pending.is_empty() {
                match self.apply(&mut pending) {
                    Ok(()) => {
                        dirty_since.get_or_insert_with(Instant::now);
                    }
                    Err(e) => {
                        // Reads stay right meanwhile (the rows stay in the overlay); retry later
                        // instead of spinning on a failure that may not go away at once.
                        self.failed("search_index_update_failed", &e);
                        std::thread::sleep(Duration::from_secs(1));
                    }
                }
            }
            let due = dirty_since.is_some_and(|t| t.elapsed() >= self.search.interval);
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
        }
    }

    fn failed(&self, event: &str, error: &Error) {
        tracing::error!(event, component = "search", error = %error);
        lock(&self.search.health).0 = Some(error.to_string());
    }

    fn apply(&mut self, pending: &mut BTreeSet<u64>) -> Result<()> {
        if pending.is_empty() {
            return Ok(());
        }
        let txn = self.search.db.begin_read()?;
        while let Some(user) = pending.first().copied() {
            self.search.catch_up(&self.writer, &txn, &mut self.applied, user)?;
            pending.remove(&user);
        }
        Ok(())
    }

    fn commit(&mut self) -> Result<()> {
        self.search.commit(&mut self.writer, &self.live, &self.applied)
    }

    /// Catches a rebuilt generation up with writes made while it was built, then makes it live.
    fn swap(&mut self, built: Built) -> Result<()> {
        let Built { live, mut applied } = built;
        let mut writer = self.search.writer(&live.index)?;
        self.search.catch_up_all(&writer, &mut applied)?;
        self.search.commit(&mut writer, &live, &applied)?;
        let live = Arc::new(live);
        self.search.set_current(&live.dir)?;
        *self.search.live.write().unwrap_or_else(|p| p.into_inner()) = live.clone();
        // The old writer's uncommitted work is covered by the new generation's catch-up.
        drop(std::mem::replace(&mut self.writer, writer));
        self.applied = applied;
        self.live = live;
        self.search.merge_in_background(&self.live.index, &mut self.writer);
        self.search.remove_other_generations(&self.live.dir);
        Ok(())
    }
}
