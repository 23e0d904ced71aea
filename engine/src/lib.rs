//! Mycorrhizal's storage engine: typed, per-user tables over redb with one write path.
//!
//! - [`Engine::open`] opens (or creates) the database, takes a verified snapshot before any
//!   pending migration, and runs the migrations.
//! - [`Engine::ensure_indexes`] backfills the secondary indexes of record kinds whose index set
//!   changed ([`Record::INDEX_VERSION`]), after a verified snapshot, one transaction per kind.
//! - User data is reached only through [`Engine::user`], a handle bound to one user id; no
//!   method reads or writes another user's rows.
//! - Every write goes through the group-commit writer ([`Engine::write`]) and [`tx::TxUser`].
//! - The engine knows nothing of HTTP.

mod audit;
mod changes;
mod check;
mod clock;
pub mod codec;
mod error;
mod frame;
mod global;
mod meta;
pub mod migrate;
#[cfg(feature = "test-hooks")]
mod power_cut;
mod priority;
mod read;
mod record;
mod redo;
mod reindex;
mod restore;
mod rows;
mod search;
pub mod snapshot;
mod stats;
pub mod system;
mod system_log;
mod tables;
mod tx;
mod writer;

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, mpsc};

use redb::{Database, ReadableDatabase};
use tokio::sync::oneshot;

pub use audit::{AuditEvent, FieldChange};
pub use changes::{Change, Op};
pub use check::Report as CheckReport;
pub use clock::{Clock, FixedClock, SystemClock};
pub use error::{Error, Invalid, Result, StorageError};
pub use global::{GlobalRecord, GlobalView, TxGlobal};
pub use migrate::{Migration, MigrationReport};
pub use priority::lower_by as lower_thread_priority;
pub use read::{Head, Lookup, Page, Skipped, UserView, Walk};
pub use record::{Kind, Meta, Precondition, Prepared, Record, Row, SearchDoc};
pub use redo::{
    Checkpoints, Recovered, Unreplayable, holds_writes as redo_holds_writes, path_for as redo_path,
    set_aside_logs as redo_set_aside_logs,
};
pub use reindex::{Indexed, KindReindexed, ReindexReport};
pub use restore::{Checked, RowCheck, restore};
pub use rows::{MAGIC as ROW_STREAM_MAGIC, check_bytes as check_row_bytes};
pub use search::Snippet;
pub use search::{
    Clause as SearchClause, Hit, MAX_CLAUSES as SEARCH_MAX_CLAUSES, Plan, RebuildReport, SearchGroup, SearchOptions,
    SearchRequest, SearchStatus, Source, TOTAL_CAP as SEARCH_TOTAL_CAP,
};
pub use stats::{BATCH_SIZES, Histogram, HistogramSnapshot, SECONDS, Stats};
pub use tx::{ChangeHook, Gathered, Tx, TxUser, UPDATED_INDEX};
#[cfg(feature = "test-hooks")]
pub use {
    audit::{Tamper, tamper_for_tests},
    power_cut::PowerCut,
    reindex::rewind_for_tests,
};

/// A user's id. User data is only reachable through [`Engine::user`] with one of these.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct UserId(pub u64);

/// How to open the engine.
pub struct Options {
    /// Where pre-migration snapshots go (default: `pre-migration/` beside the database).
    pub pre_migration_dir: Option<PathBuf>,
    /// The migration steps, in version order. Defaults to the engine's own.
    pub migrations: Vec<Migration>,
    pub clock: Arc<dyn Clock>,
    /// [`Durability::Immediate`] in production; [`Durability::None`] only for throwaway test data.
    pub durability: Durability,
    /// When the batches acknowledged from the redo log are written into the database file
    /// durably ([`redo`]): the defaults unless a test needs the log kept.
    pub checkpoints: redo::Checkpoints,
    /// The full-text index, when wanted.
    pub search: Option<SearchOptions>,
    /// The most memory redb may keep as its page cache, in bytes (redb's own default is 1 GiB,
    /// which a long-running server fills: resident memory then grows with the database).
    pub cache_bytes: usize,
    /// What opening does with a redo log it cannot replay (default: refuse to open).
    pub unreplayable: redo::Unreplayable,
    /// A simulated power cut told of every sync of the database and its redo log (tests only).
    #[cfg(feature = "test-hooks")]
    pub power_cut: Option<Arc<power_cut::PowerCut>>,
}

/// [`Options::cache_bytes`] unless configured: enough for the pages every request touches (the
/// tables' upper levels, one user's indexes) on a small box. The server's `DB_CACHE_MB` defaults
/// to it: at 48 MB a server holding 100,000 contacts stays under 150 MB resident after a busy
/// spell, with GET and search latency within about 10% of 1 GiB's (BENCHMARKS.md, twenty-fourth
/// session).
pub const DEFAULT_CACHE_BYTES: usize = 48 << 20;

/// A checkpoint is due once the redo log holds this share of the page cache (`1/16`).
const CHECKPOINT_SHARE: u64 = 16;

/// The page cache of the databases the engine opens besides the live one (a snapshot being
/// written or verified, the file a migration or an index backfill opens first): each is read
/// or written once, front to back, so a cache does not help it.
pub(crate) const SIDE_CACHE_BYTES: usize = 16 << 20;

/// Whether a commit waits for the disk.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Durability {
    /// A commit returns once it is on disk (one fsync per group commit): every acknowledged write
    /// survives a crash. The only choice for data anyone keeps.
    Immediate,
    /// A commit returns without waiting for the disk: a crash may lose the latest commits. Only
    /// for throwaway data (tests, benchmarks that measure something else).
    None,
}

impl Durability {
    fn storage(self) -> redb::Durability {
        match self {
            Durability::Immediate => redb::Durability::Immediate,
            Durability::None => redb::Durability::None,
        }
    }
}

impl Default for Options {
    fn default() -> Self {
        Self {
            pre_migration_dir: None,
            migrations: migrate::steps(),
            clock: Arc::new(SystemClock),
            durability: Durability::Immediate,
            checkpoints: redo::Checkpoints::default(),
            search: None,
            cache_bytes: DEFAULT_CACHE_BYTES,
            unreplayable: redo::Unreplayable::Refuse,
            #[cfg(feature = "test-hooks")]
            power_cut: None,
        }
    }
}

/// The storage engine. Cheap to clone; all clones share one database and one writer.
#[derive(Clone)]
pub struct Engine {
    inner: Arc<Inner>,
}

struct Inner {
    db: Arc<Database>,
    path: PathBuf,
    clock: Arc<dyn Clock>,
    queue: Mutex<Option<mpsc::Sender<writer::Request>>>,
    healthy: Arc<AtomicBool>,
    /// Changes submitted and not yet taken into a transaction by the writer.
    queued: Arc<AtomicUsize>,
    /// Changes submitted and not yet answered (queued, or in the batch being applied and made
    /// durable).
    in_flight: Arc<AtomicUsize>,
    schema_version: u32,
    /// Where verified snapshots go before existing data changes (migrations, index backfills).
    pre_migration_dir: PathBuf,
    writer: Mutex<Option<std::thread::JoinHandle<()>>>,
    search: Option<Arc<search::Search>>,
    change_hook: Arc<std::sync::OnceLock<Arc<dyn ChangeHook>>>,
    /// What the redo log held at open that the database did not.
    recovered: redo::Recovered,
    stats: Arc<stats::Stats>,
}

impl Engine {
    /// Opens the database at `path`, creating it when missing, then migrates it.
    pub fn open(path: impl AsRef<Path>, options: Options) -> Result<(Engine, MigrationReport)> {
        let path = path.as_ref().to_path_buf();
        let fresh = !path.exists();
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent)?;
        }
        let db = Self::database(&path, &options)?;
        // Before anything else writes: what the last run logged and did not checkpoint goes in.
        let redo = match options.durability {
            Durability::Immediate => {
                // Until a checkpoint, every page a stream of writes dirtied stays in redb's write
                // buffer (up to half the cache, then written out unsynced), and the checkpoint's
                // durable commit writes and syncs them all while every writer waits. At half the
                // cache, 32 clients creating contacts saw a p99 of 50 ms; at a sixteenth (3 MB of
                // log at 48 MB), 28 ms, with p90 up from 3.6 to 6.5 ms (#55; BENCHMARKS.md).
                let when = redo::Checkpoints {
                    bytes: options.checkpoints.bytes.min(options.cache_bytes as u64 / CHECKPOINT_SHARE),
                    ..options.checkpoints
                };
                Some(redo::open(&db, &path, when, options.unreplayable)?)
            }
            Durability::None => None,
        };
        let (redo, recovered) = match redo {
            Some((log, recovered)) => (Some(log), recovered),
            None => (None, redo::Recovered::default()),
        };
        #[cfg(feature = "test-hooks")]
        let redo = match (redo, &options.power_cut) {
            (Some(mut log), Some(cut)) => {
                log.watched_by(cut.clone())?;
                Some(log)
            }
            (redo, _) => redo,
        };
        let snapshot_dir = options
            .pre_migration_dir
            .clone()
            .unwrap_or_else(|| path.parent().unwrap_or(Path::new(".")).join("pre-migration"));
        let report = migrate::run(&db, fresh, &snapshot_dir, &options.migrations, options.clock.now())?;
        let db = Arc::new(db);
        let search = options.search.map(|o| search::Search::open(db.clone(), o)).transpose()?;
        let healthy = Arc::new(AtomicBool::new(true));
        let queued = Arc::new(AtomicUsize::new(0));
        let in_flight = Arc::new(AtomicUsize::new(0));
        let (sender, queue) = mpsc::channel();
        let change_hook = Arc::new(std::sync::OnceLock::new());
        let stats = Arc::new(stats::Stats::default());
        let writer = writer::Writer {
            stats: stats.clone(),
            change_hook: change_hook.clone(),
            db: db.clone(),
            clock: options.clock.clone(),
            durability: options.durability.storage(),
            healthy: healthy.clone(),
            queued: queued.clone(),
            in_flight: in_flight.clone(),
            hook: search.clone().map(|s| s as Arc<dyn changes::CommitHook>),
            redo,
        };
        let handle = std::thread::Builder::new().name("engine-writer".into()).spawn(move || writer.run(queue))?;
        let engine = Engine {
            inner: Arc::new(Inner {
                db,
                path,
                clock: options.clock,
                queue: Mutex::new(Some(sender)),
                healthy,
                queued,
                in_flight,
                schema_version: report.to,
                pre_migration_dir: snapshot_dir,
                writer: Mutex::new(Some(handle)),
                search,
                change_hook,
                recovered,
                stats,
            }),
        };
        let listed = engine.index_system_logs()?;
        if listed > 0 {
            tracing::info!(event = "system_logs_indexed", component = "migration", entries = listed);
        }
        Ok((engine, report))
    }

    /// The database file at `path`, created when missing.
    fn database(path: &Path, options: &Options) -> Result<Database> {
        let builder = || {
            let mut builder = Database::builder();
            builder.set_cache_size(options.cache_bytes);
            builder
        };
        #[cfg(feature = "test-hooks")]
        if let Some(cut) = &options.power_cut {
            let file = std::fs::OpenOptions::new().read(true).write(true).create(true).truncate(false).open(path)?;
            let watched = power_cut::Watched {
                file: redb::backends::FileBackend::new(file)?,
                path: path.to_path_buf(),
                cut: cut.clone(),
            };
            return Ok(builder().create_with_backend(watched)?);
        }
        Ok(builder().create(path)?)
    }

    /// The engine's counters: writer batches and their commit times, search times.
    pub fn stats(&self) -> &stats::Stats {
        &self.inner.stats
    }

    /// Installs the hook told of every change inside its transaction (see [`ChangeHook`]).
    /// Once per engine: a second call is refused with `false`.
    pub fn set_change_hook(&self, hook: Arc<dyn ChangeHook>) -> bool {
        self.inner.change_hook.set(hook).is_ok()
    }

    /// A handle scoped to one user.
    pub fn user(&self, user: UserId) -> UserScope {
        UserScope { engine: self.clone(), user }
    }

    pub fn path(&self) -> &Path {
        &self.inner.path
    }

    pub fn clock(&self) -> &Arc<dyn Clock> {
        &self.inner.clock
    }

    /// What the redo log held at open that the database did not (after a crash: the writes
    /// acknowledged since the last checkpoint), now replayed.
    pub fn recovered(&self) -> &redo::Recovered {
        &self.inner.recovered
    }

    pub fn schema_version(&self) -> u32 {
        self.inner.schema_version
    }

    /// Brings the index entries of every kind in `kinds` whose stored index version differs from
    /// its declared [`Record::INDEX_VERSION`] up to date (see [`reindex`]): a verified snapshot
    /// first, then one write transaction per kind. Call it at start-up, with every record kind,
    /// before serving. Blocking.
    pub fn ensure_indexes(&self, kinds: &[Indexed]) -> Result<ReindexReport> {
        reindex::ensure(self, kinds)
    }

    pub(crate) fn pre_migration_dir(&self) -> &Path {
        &self.inner.pre_migration_dir
    }

    /// False once a commit failed on I/O (redb refuses writes until reopened) or the engine shut down.
    pub fn is_writable(&self) -> bool {
        self.inner.healthy.load(Ordering::SeqCst) && self.sender().is_some()
    }

    /// Whether a read transaction can be started and the metadata read.
    pub fn check_read(&self) -> Result<()> {
        let txn = self.inner.db.begin_read()?;
        meta::read_version(&txn).map(|_| ())
    }

    /// Runs `change` in the next group commit and waits for that commit to be durable.
    /// Blocking; call it from a blocking thread. `change` may run more than once (see [`writer`]).
    pub fn write<T: Send + 'static>(&self, change: impl FnMut(&mut Tx<'_>) -> Result<T> + Send + 'static) -> Result<T> {
        let receiver = self.submit(change)?;
        Self::unpack(receiver.blocking_recv())
    }

    /// Like [`Engine::write`], awaiting the commit instead of blocking a thread.
    pub async fn write_async<T: Send + 'static>(
        &self,
        change: impl FnMut(&mut Tx<'_>) -> Result<T> + Send + 'static,
    ) -> Result<T> {
        let receiver = self.submit(change)?;
        Self::unpack(receiver.await)
    }

    fn submit<T: Send + 'static>(
        &self,
        mut change: impl FnMut(&mut Tx<'_>) -> Result<T> + Send + 'static,
    ) -> Result<oneshot::Receiver<Result<Box<dyn std::any::Any + Send>>>> {
        let (reply, receiver) = oneshot::channel();
        let job: writer::Job = Box::new(move |tx| change(tx).map(|v| Box::new(v) as Box<dyn std::any::Any + Send>));
        let origin = self.inner.change_hook.get().and_then(|h| h.origin());
        let sender = self.sender().ok_or(Error::ShutDown)?;
        // Counted before it is sent, so the writer's decrement can never come first.
        self.inner.in_flight.fetch_add(1, Ordering::SeqCst);
        self.inner.queued.fetch_add(1, Ordering::SeqCst);
        if sender.send(writer::Request { job, reply, origin }).is_err() {
            self.inner.queued.fetch_sub(1, Ordering::SeqCst);
            self.inner.in_flight.fetch_sub(1, Ordering::SeqCst);
            return Err(Error::ShutDown);
        }
        Ok(receiver)
    }

    /// Changes waiting for the writer (submitted, not yet in a transaction): the measure of a
    /// saturated writer, which a front door can answer "503, retry later" on instead of queueing
    /// more.
    pub fn queued_writes(&self) -> usize {
        self.inner.queued.load(Ordering::SeqCst)
    }

    /// Changes submitted and not yet answered: the queued ones plus the batch the writer is
    /// applying and making durable. Zero only when the writer has nothing to do, which is what
    /// background work that writes (outbox deliveries) waits for: [`Engine::queued_writes`]
    /// drops to zero each time the writer takes a batch, even under writes that never pause.
    pub fn writes_in_flight(&self) -> usize {
        self.inner.in_flight.load(Ordering::SeqCst)
    }

    fn unpack<T: 'static>(
        received: std::result::Result<Result<Box<dyn std::any::Any + Send>>, oneshot::error::RecvError>,
    ) -> Result<T> {
        let output = received.map_err(|_| Error::ShutDown)??;
        output.downcast::<T>().map(|b| *b).map_err(|_| Error::CommitFailed("writer returned the wrong type".into()))
    }

    fn sender(&self) -> Option<mpsc::Sender<writer::Request>> {
        self.inner.queue.lock().unwrap_or_else(|p| p.into_inner()).clone()
    }

    /// Stops accepting writes, lets the writer finish what is queued, and waits for it.
    /// Dropping the last clone does the same.
    pub fn shutdown(&self) {
        self.inner.stop_writer();
    }

    /// A read view of the global (instance-level) tables.
    pub fn global(&self) -> Result<GlobalView> {
        Ok(GlobalView { txn: self.db().begin_read()? })
    }

    /// A consistent snapshot of the whole database into `dir`, as a plain redb file (see
    /// [`snapshot`]).
    pub fn snapshot(&self, dir: &Path, label: &str) -> Result<snapshot::Snapshot> {
        self.snapshot_with(dir, label, snapshot::Encoding::Redb, &mut |_| {})
    }

    /// [`Engine::snapshot`] stored as `encoding`, reporting the copy's progress as it goes
    /// (blocking).
    pub fn snapshot_with(
        &self,
        dir: &Path,
        label: &str,
        encoding: snapshot::Encoding,
        progress: &mut dyn FnMut(snapshot::Progress),
    ) -> Result<snapshot::Snapshot> {
        snapshot::write(self.inner.db.as_ref(), dir, label, self.inner.clock.now(), encoding, progress)
    }

    /// What the database holds per user right now: live rows by record kind and each audit
    /// chain's head, as a backup manifest records them (the restore drill compares the two).
    pub fn contents(&self) -> Result<snapshot::Contents> {
        snapshot::contents(&self.db().begin_read()?)
    }

    /// Live rows per record kind, summed over every user (no user is named).
    pub fn live_totals(&self) -> Result<std::collections::BTreeMap<String, u64>> {
        use redb::{ReadableDatabase, ReadableTable};
        let mut totals = std::collections::BTreeMap::new();
        let read = self.db().begin_read()?;
        let table = match read.open_table(tables::LIVE_COUNTS) {
            Ok(table) => table,
            Err(redb::TableError::TableDoesNotExist(_)) => return Ok(totals),
            Err(e) => return Err(e.into()),
        };
        for entry in table.iter()? {
            let (key, count) = entry?;
            *totals.entry(key.value().1.to_string()).or_insert(0) += count.value();
        }
        Ok(totals)
    }

    pub(crate) fn db(&self) -> &Database {
        &self.inner.db
    }

    fn search(&self) -> Result<&Arc<search::Search>> {
        self.inner.search.as_ref().ok_or(Error::SearchDisabled)
    }

    /// Rebuilds the full-text index aside from the live one and swaps it in (blocking; see
    /// [`search`]). A second call while one runs gets [`Error::RebuildRunning`].
    pub fn search_rebuild(&self) -> Result<RebuildReport> {
        self.search()?.rebuild()
    }

    /// Commits pending index work now and waits for it (shutdown, tests, benchmarks).
    pub fn search_flush(&self) -> Result<()> {
        self.search()?.flush()
    }

    /// The index's state; `None` without search.
    pub fn search_status(&self) -> Option<SearchStatus> {
        self.inner.search.as_ref().map(|s| s.status())
    }
}

impl Inner {
    fn stop_writer(&self) {
        self.queue.lock().unwrap_or_else(|p| p.into_inner()).take();
        let handle = self.writer.lock().unwrap_or_else(|p| p.into_inner()).take();
        if let Some(handle) = handle {
            let _ = handle.join();
        }
        // After the writer: its last batch still reaches the index before the final commit.
        if let Some(search) = &self.search {
            search.stop();
        }
    }
}

impl Drop for Inner {
    fn drop(&mut self) {
        // The writer holds the database open; wait for it so the file is closed on return.
        self.stop_writer();
    }
}

/// One user's handle on the engine: every read and write it offers is confined to that user.
#[derive(Clone)]
pub struct UserScope {
    engine: Engine,
    user: UserId,
}

impl UserScope {
    pub fn id(&self) -> UserId {
        self.user
    }

    /// A consistent read view (one read transaction) for several reads.
    pub fn view(&self) -> Result<UserView> {
        Ok(UserView { txn: self.engine.db().begin_read()?, user: self.user.0 })
    }

    pub fn get<R: Record>(&self, id: u64) -> Result<Row<R>> {
        self.view()?.get(id)
    }

    pub fn list<R: Record>(&self) -> Result<Vec<Row<R>>> {
        self.view()?.list()
    }

    pub fn find<R: Record>(&self, index: &str, value: &str) -> Result<Vec<u64>> {
        self.view()?.find::<R>(index, value)
    }

    /// Full-text search within this user's rows only: one group per requested kind.
    pub fn search(&self, request: &SearchRequest<'_>) -> Result<Vec<SearchGroup>> {
        let started = std::time::Instant::now();
        let found = self.engine.search()?.search(self.user.0, request);
        self.engine.inner.stats.search_seconds.observe(started.elapsed().as_secs_f64());
        found
    }

    pub fn create<R: Record>(&self, body: R) -> Result<Row<R>> {
        let user = self.user;
        self.engine.write(move |tx| tx.user(user).create(body.clone()))
    }

    pub fn put<R: Record>(&self, id: u64, pre: Precondition, body: R) -> Result<Row<R>> {
        let user = self.user;
        self.engine.write(move |tx| tx.user(user).put(id, pre, body.clone()))
    }

    pub fn delete<R: Record>(&self, id: u64, pre: Precondition) -> Result<()> {
        let user = self.user;
        self.engine.write(move |tx| tx.user(user).delete::<R>(id, pre))
    }

    /// Runs several writes for this user atomically, in one group commit.
    pub fn write<T: Send + 'static>(
        &self,
        mut change: impl FnMut(&TxUser<'_, '_>) -> Result<T> + Send + 'static,
    ) -> Result<T> {
        let user = self.user;
        self.engine.write(move |tx| change(&tx.user(user)))
    }

    pub async fn write_async<T: Send + 'static>(
        &self,
        mut change: impl FnMut(&TxUser<'_, '_>) -> Result<T> + Send + 'static,
    ) -> Result<T> {
        let user = self.user;
        self.engine.write_async(move |tx| change(&tx.user(user))).await
    }
}
