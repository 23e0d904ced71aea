//! The redo log: how a batch becomes durable without a durable redb commit of its own.
//!
//! A durable redb commit costs one fsync of every page the batch dirtied, and a contact's index
//! entries land on pages no other write of the batch shares: past a few thousand contacts each
//! write costs several scattered pages at its commit (BENCHMARKS.md, the CardDAV PUT tail). So
//! the writer commits each batch to redb without a sync ([`redb::Durability::None`]) after
//! appending what the batch changed (each table's key and value bytes, put or removed) to this
//! file and syncing it: one sequential write a batch, whatever the book's size. When the writer
//! pauses ([`Checkpoints`]: 100 ms without a batch; at the latest every 30 s, or once the log
//! holds a sixteenth of the page cache, at most 256 MB),
//! and whenever a batch could not be recorded (it wrote through the raw transaction), a durable
//! redb commit (a *checkpoint*) makes everything so far durable in the database itself, records
//! the last batch it covers in `map:meta`, and starts the log over. A stream of writes pays for
//! each page it dirtied once, at its checkpoint, not once per batch.
//!
//! At start-up, before migrations, [`open`] replays the batches the database does not hold yet
//! (after a crash: those after the last checkpoint) in one durable transaction. A batch is
//! answered only after its record is synced, so every acknowledged write is either in the
//! database or in the log.
//!
//! File layout (numbers little-endian):
//!
//! ```text
//! "MYCREDO" 0x01  u64 id               the database's redo id (`map:meta` "redo_id")
//! u32 len  u32 crc  u64 seq  ops       one batch: `len` bytes of ops, crc32 of seq and ops
//! ```
//!
//! An op is `'P' u16 name u32 key u32 value` (put) or `'D' u16 name u32 key` (remove), each
//! length-prefixed, the bytes those of redb's own encoding (read back through [`Raw`]).
//! Reading stops at the first record that is short, fails its checksum or does not follow its
//! predecessor's sequence: only the last record can be torn, since each is synced before the
//! next is written.
//!
//! The file is written ahead with zeros ([`RedoLog::grow`]: 64 KiB, then twice as much each
//! time up to 4 MiB at a time) and records overwrite them, so syncing a record changes only
//! data: the file's size and blocks were made durable when it grew. Appending to the file's
//! end instead made every sync a journal commit of the new size and blocks as well: the
//! writer's wait for it, once a batch, was about half as long again in the dav bench
//! (BENCHMARKS.md, thirty-fourth session). After a checkpoint the next records start again
//! behind the header, over the old ones (the space is kept, up to [`KEEP`]); the old records
//! that follow the new ones end the reading, since their sequence numbers are at or before the
//! checkpoint's. A clean close and every open cut the file back to its header.

use std::borrow::Borrow;
use std::cell::{Cell, RefCell};
use std::fs::{File, OpenOptions};
use std::io::{self, Read};
use std::ops::{Deref, RangeBounds};
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use redb::{Database, Key, ReadableDatabase, ReadableTable, TableDefinition, Value, WriteTransaction};

use crate::rows::{Layout, RawTable, open_raw};
use crate::tables::META;
use crate::{Error, Result};

const MAGIC: [u8; 8] = *b"MYCREDO\x01";
const HEADER: u64 = 16;
const RECORD_HEAD: usize = 16;
/// The first zeroed stretch ahead of the records, and the most zeroed at once.
const GROW_FIRST: u64 = 64 << 10;
const GROW_MOST: u64 = 4 << 20;
/// The space a checkpoint leaves in the file for the records that follow; past it, the file is
/// cut back to this (after a large import, say).
const KEEP: u64 = 64 << 20;
const PUT: u8 = b'P';
const REMOVE: u8 = b'D';
/// `map:meta` keys: the id tying a log to its database, and the last batch the database holds.
pub(crate) const ID_KEY: &str = "redo_id";
pub(crate) const SEQ_KEY: &str = "redo_seq";

/// When checkpoints are taken ([`crate::Options::checkpoints`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Checkpoints {
    /// Once the writer has had nothing to do for this long with batches in the log. A stream of
    /// writes (a phone's first sync) is not interrupted: its checkpoint comes when it pauses,
    /// and costs each page it dirtied once, however many batches dirtied it.
    pub idle: Duration,
    /// At the latest this long after the last one, however busy the writer.
    pub every: Duration,
    /// Once the log holds this many bytes, however busy the writer: what a start after a crash
    /// may have to replay. [`crate::Engine::open`] lowers it to a sixteenth of the page cache.
    pub bytes: u64,
}

impl Default for Checkpoints {
    fn default() -> Self {
        Checkpoints { idle: Duration::from_millis(100), every: Duration::from_secs(30), bytes: 256 << 20 }
    }
}

/// What one transaction changed, as ops, recorded by [`Logged`] tables.
#[derive(Default)]
pub(crate) struct Ops {
    bytes: RefCell<Vec<u8>>,
    /// Set when the transaction was reached without recording ([`crate::tx::Tx::txn`]): its
    /// commit must then be durable.
    pub(crate) unrecorded: Cell<bool>,
}

impl Ops {
    fn put(&self, name: &str, key: &[u8], value: &[u8]) {
        let mut bytes = self.bytes.borrow_mut();
        bytes.push(PUT);
        push_name(&mut bytes, name);
        push_bytes(&mut bytes, key);
        push_bytes(&mut bytes, value);
    }

    fn remove(&self, name: &str, key: &[u8]) {
        let mut bytes = self.bytes.borrow_mut();
        bytes.push(REMOVE);
        push_name(&mut bytes, name);
        push_bytes(&mut bytes, key);
    }

    pub(crate) fn into_bytes(self) -> Vec<u8> {
        self.bytes.into_inner()
    }
}

fn push_name(out: &mut Vec<u8>, name: &str) {
    // Table names are the engine's own, far shorter than 64 KiB.
    out.extend_from_slice(&(name.len() as u16).to_le_bytes());
    out.extend_from_slice(name.as_bytes());
}

fn push_bytes(out: &mut Vec<u8>, bytes: &[u8]) {
    // redb refuses values over 3 GiB, so a length fits.
    out.extend_from_slice(&(bytes.len() as u32).to_le_bytes());
    out.extend_from_slice(bytes);
}

/// A table of the writer's transaction whose every change is recorded for the redo log. Reads go
/// to the table itself (it dereferences to it); changes only through the methods here.
pub struct Logged<'t, K: Key + 'static, V: Value + 'static> {
    table: redb::Table<'t, K, V>,
    name: Box<str>,
    ops: &'t Ops,
}

impl<'t, K: Key + 'static, V: Value + 'static> Logged<'t, K, V> {
    pub(crate) fn open(txn: &'t WriteTransaction, ops: &'t Ops, definition: TableDefinition<'_, K, V>) -> Result<Self> {
        let name = redb::TableHandle::name(&definition).into();
        Ok(Logged { table: txn.open_table(definition)?, name, ops })
    }

    /// Inserts or replaces `key`.
    pub fn insert<'k, 'v>(
        &mut self,
        key: impl Borrow<K::SelfType<'k>>,
        value: impl Borrow<V::SelfType<'v>>,
    ) -> Result<()> {
        let (key, value) = (key.borrow(), value.borrow());
        self.table.insert(key, value)?;
        self.ops.put(&self.name, K::as_bytes(key).as_ref(), V::as_bytes(value).as_ref());
        Ok(())
    }

    /// Removes `key`; whether it was there.
    pub fn remove<'k>(&mut self, key: impl Borrow<K::SelfType<'k>>) -> Result<bool> {
        let key = key.borrow();
        let was = self.table.remove(key)?.is_some();
        if was {
            self.ops.remove(&self.name, K::as_bytes(key).as_ref());
        }
        Ok(was)
    }

    /// Removes the entries of `range` for which `keep` is false; how many went.
    pub fn retain_in<'r, KR>(
        &mut self,
        range: impl RangeBounds<KR> + 'r,
        mut keep: impl for<'f> FnMut(K::SelfType<'f>, V::SelfType<'f>) -> bool,
    ) -> Result<u64>
    where
        KR: Borrow<K::SelfType<'r>> + 'r,
    {
        let gone = unwanted(self.table.range(range)?, &mut keep)?;
        self.remove_all(gone)
    }

    fn remove_all(&mut self, keys: Vec<Vec<u8>>) -> Result<u64> {
        for key in &keys {
            self.table.remove(K::from_bytes(key))?;
            self.ops.remove(&self.name, key);
        }
        Ok(keys.len() as u64)
    }
}

/// The keys of `entries` for which `keep` is false, as bytes.
fn unwanted<K: Key + 'static, V: Value + 'static>(
    entries: redb::Range<'_, K, V>,
    keep: &mut impl for<'f> FnMut(K::SelfType<'f>, V::SelfType<'f>) -> bool,
) -> Result<Vec<Vec<u8>>> {
    let mut gone = Vec::new();
    for entry in entries {
        let (key, value) = entry?;
        if !keep(key.value(), value.value()) {
            gone.push(K::as_bytes(&key.value()).as_ref().to_vec());
        }
    }
    Ok(gone)
}

impl<'t, K: Key + 'static, V: Value + 'static> Deref for Logged<'t, K, V> {
    type Target = redb::Table<'t, K, V>;

    fn deref(&self) -> &Self::Target {
        &self.table
    }
}

/// The open log, owned by the writer.
pub(crate) struct RedoLog {
    file: File,
    path: PathBuf,
    id: u64,
    /// Where the next record goes: the header and the records since the last checkpoint.
    len: u64,
    /// Bytes of the file written and synced (zeros ahead of `len`), so that a record written
    /// below it changes no metadata.
    capacity: u64,
    /// The sequence of the last batch appended (0 before the first).
    last: u64,
    /// The last batch a checkpoint made durable in the database.
    sealed: u64,
    since: Instant,
    when: Checkpoints,
    /// A simulated power cut told of the file's syncs (tests only).
    #[cfg(feature = "test-hooks")]
    cut: Option<std::sync::Arc<crate::power_cut::PowerCut>>,
}

/// Where the log of the database at `db_path` lives.
pub fn path_for(db_path: &Path) -> PathBuf {
    let mut name = db_path.file_name().map(|n| n.to_os_string()).unwrap_or_default();
    name.push(".redo");
    db_path.with_file_name(name)
}

/// Whether the database at `db_path` has a redo log holding batches (a crash left them; opening
/// the database with the engine replays them): whether a whole record follows the header. (A
/// checkpoint blanks the first record's head, but when a crash came before that reached the
/// disk the log holds only records the database has; replaying them finds nothing to do.)
pub fn holds_writes(db_path: &Path) -> bool {
    let Ok(file) = File::open(path_for(db_path)) else { return false };
    let size = file.metadata().map_or(0, |m| m.len());
    let mut head = [0u8; RECORD_HEAD];
    if file.read_exact_at(&mut head, HEADER).is_err() {
        return false;
    }
    let len = u32::from_le_bytes(head[0..4].try_into().unwrap_or_default()) as u64;
    if HEADER + RECORD_HEAD as u64 + len > size {
        return false;
    }
    let mut body = vec![0u8; 8 + len as usize];
    file.read_exact_at(&mut body, HEADER + 8).is_ok()
        && crc32fast::hash(&body) == u32::from_le_bytes(head[4..8].try_into().unwrap_or_default())
}

/// What [`open`] found in the log.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Recovered {
    /// Batches replayed into the database.
    pub batches: u64,
    /// Their ops (rows put or removed).
    pub ops: u64,
    /// Where a log that could not be replayed was set aside ([`Unreplayable::SetAside`]).
    pub set_aside: Option<PathBuf>,
}

/// What opening does with a redo log it cannot replay (another database's, or one that does not
/// continue the last checkpoint).
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub enum Unreplayable {
    /// Refuse to open ([`Error::RedoUnreplayable`]): the operator decides.
    #[default]
    Refuse,
    /// Rename it aside (`<name>.redo.orphan-<seconds>`) and open without it; said in
    /// [`Recovered::set_aside`].
    SetAside,
}

/// The logs set aside beside the database at `db_path` (`<name>.redo.orphan-*`).
pub fn set_aside_logs(db_path: &Path) -> Vec<PathBuf> {
    let log = path_for(db_path);
    let (Some(dir), Some(name)) = (log.parent(), log.file_name().and_then(|n| n.to_str())) else { return Vec::new() };
    let prefix = format!("{name}.orphan-");
    let mut found: Vec<PathBuf> = std::fs::read_dir(if dir.as_os_str().is_empty() { Path::new(".") } else { dir })
        .map(|entries| {
            entries
                .filter_map(|e| e.ok())
                .filter(|e| e.file_name().to_str().is_some_and(|n| n.starts_with(&prefix)))
                .map(|e| e.path())
                .collect()
        })
        .unwrap_or_default();
    found.sort();
    found
}

/// Syncs the folder holding `path`, so that a rename or a new name in it is durable.
fn sync_parent(path: &Path) -> io::Result<()> {
    match path.parent() {
        Some(parent) if !parent.as_os_str().is_empty() => File::open(parent)?.sync_all(),
        _ => File::open(".")?.sync_all(),
    }
}

fn meta_u64(db: &Database, key: &str) -> Result<Option<u64>> {
    let read = db.begin_read()?;
    let table = match read.open_table(META) {
        Ok(table) => table,
        Err(redb::TableError::TableDoesNotExist(_)) => return Ok(None),
        Err(e) => return Err(e.into()),
    };
    Ok(table.get(key)?.and_then(|v| v.value().try_into().ok().map(u64::from_le_bytes)))
}

/// Opens the log of the database at `db_path` (creating it on first use), replaying first every
/// batch it holds that the database does not. Call before anything else writes to `db`.
pub(crate) fn open(
    db: &Database,
    db_path: &Path,
    when: Checkpoints,
    unreplayable: Unreplayable,
) -> Result<(RedoLog, Recovered)> {
    let path = path_for(db_path);
    let sealed = meta_u64(db, SEQ_KEY)?.unwrap_or(0);
    let id = match meta_u64(db, ID_KEY)? {
        Some(id) => id,
        None => {
            let mut bytes = [0u8; 8];
            getrandom::fill(&mut bytes).map_err(|e| Error::Io(io::Error::other(e.to_string())))?;
            u64::from_le_bytes(bytes)
        }
    };
    let mut recovered = Recovered::default();
    let mut last = sealed;
    match std::fs::File::open(&path) {
        Ok(mut file) => {
            let mut bytes = Vec::new();
            file.read_to_end(&mut bytes)?;
            let ours = bytes.get(..8) == Some(MAGIC.as_slice())
                && bytes.get(8..16).and_then(|b| b.try_into().ok()).map(u64::from_le_bytes) == Some(id);
            let found = if ours { batches(&bytes[HEADER as usize..], sealed) } else { None };
            match found {
                Some(batches) if !batches.is_empty() => {
                    let mut write = db.begin_write()?;
                    // Durable as the writer's checkpoints are.
                    write.set_two_phase_commit(true);
                    for (seq, ops) in &batches {
                        recovered.ops += replay(&write, ops)?;
                        last = *seq;
                    }
                    seal(&write, id, last)?;
                    write.commit()?;
                    recovered.batches = batches.len() as u64;
                    tracing::warn!(
                        event = "redo_replayed",
                        component = "engine",
                        batches = recovered.batches,
                        ops = recovered.ops,
                        "the last run ended without a checkpoint; its logged writes were replayed"
                    );
                }
                Some(_) => {}
                None if bytes.iter().all(|b| *b == 0) => {}
                // Another database's log that holds no record: nothing can be lost with it.
                None if !ours
                    && bytes.get(HEADER as usize..).and_then(|r| batches(r, 0)).is_some_and(|b| b.is_empty()) =>
                {
                    tracing::warn!(event = "redo_replaced", component = "engine", path = %path.display(),
                        "an empty redo log of another database was replaced");
                }
                None => {
                    // Not this database's log (another database file was put in its place), or
                    // one that does not continue its last checkpoint: never replayed, and not
                    // dropped quietly either.
                    let reason = if ours {
                        "its records do not continue the database's last checkpoint"
                    } else {
                        "it belongs to another database"
                    };
                    if unreplayable == Unreplayable::Refuse {
                        tracing::error!(event = "redo_unreplayable", component = "engine", path = %path.display(), reason);
                        return Err(Error::RedoUnreplayable { path, reason: reason.into() });
                    }
                    let aside = path.with_extension(format!("redo.orphan-{}", jiff::Timestamp::now().as_second()));
                    std::fs::rename(&path, &aside)?;
                    sync_parent(&aside)?;
                    tracing::error!(event = "redo_set_aside", component = "engine", kept = %aside.display(), reason,
                        "a redo log that cannot be replayed was set aside, as REDO_LOG_SET_ASIDE asked");
                    recovered.set_aside = Some(aside);
                }
            }
        }
        Err(e) if e.kind() == io::ErrorKind::NotFound => {}
        Err(e) => return Err(e.into()),
    }
    if meta_u64(db, ID_KEY)? != Some(id) {
        let write = db.begin_write()?;
        seal(&write, id, last)?;
        write.commit()?;
    }
    let file = OpenOptions::new().read(true).write(true).create(true).truncate(false).open(&path)?;
    let mut header = MAGIC.to_vec();
    header.extend_from_slice(&id.to_le_bytes());
    file.set_len(0)?;
    file.write_all_at(&header, 0)?;
    file.sync_all()?;
    // The file's name must be as durable as its contents.
    sync_parent(&path)?;
    let log = RedoLog {
        file,
        path,
        id,
        len: HEADER,
        capacity: HEADER,
        last,
        sealed: last,
        since: Instant::now(),
        when,
        #[cfg(feature = "test-hooks")]
        cut: None,
    };
    Ok((log, recovered))
}

/// The batches of `bytes` (the records after the header) after `sealed`, in order, up to the
/// first torn or stale record; `None` when they do not continue from `sealed` (writes the
/// database does not hold would be missing between them).
fn batches(mut bytes: &[u8], sealed: u64) -> Option<Vec<(u64, &[u8])>> {
    let mut out = Vec::new();
    let mut expected: Option<u64> = None;
    while bytes.len() >= RECORD_HEAD {
        let len = u32::from_le_bytes(bytes[0..4].try_into().unwrap_or_default()) as usize;
        let crc = u32::from_le_bytes(bytes[4..8].try_into().unwrap_or_default());
        let Some(body) = bytes.get(8..RECORD_HEAD + len) else { break };
        if crc32fast::hash(body) != crc {
            break;
        }
        let seq = u64::from_le_bytes(body[0..8].try_into().unwrap_or_default());
        if expected.is_some_and(|e| e != seq) {
            break;
        }
        expected = Some(seq + 1);
        if seq > sealed {
            out.push((seq, &body[8..]));
        }
        bytes = &bytes[RECORD_HEAD + len..];
    }
    match out.first() {
        Some((first, _)) if *first != sealed + 1 => None,
        _ => Some(out),
    }
}

/// Applies one batch's ops inside `write`; how many there were.
fn replay(write: &WriteTransaction, mut ops: &[u8]) -> Result<u64> {
    let corrupt = |reason: &str| Error::Corrupt { table: "redo log".into(), reason: reason.into() };
    let mut count = 0;
    let mut current: Option<(String, Box<dyn RawTable + '_>)> = None;
    while let Some((&tag, rest)) = ops.split_first() {
        let (name, rest) = take(rest, 2).ok_or_else(|| corrupt("a short op"))?;
        let name = std::str::from_utf8(name).map_err(|_| corrupt("a table name that is not UTF-8"))?;
        let (key, rest) = take(rest, 4).ok_or_else(|| corrupt("a short op"))?;
        let (value, rest) = match tag {
            PUT => take(rest, 4).map(|(v, r)| (Some(v), r)).ok_or_else(|| corrupt("a short op"))?,
            REMOVE => (None, rest),
            _ => return Err(corrupt("an unknown op")),
        };
        ops = rest;
        if current.as_ref().is_none_or(|(open, _)| open != name) {
            drop(current.take());
            let layout = Layout::of(name).ok_or_else(|| corrupt("an unknown table"))?;
            current = Some((name.to_string(), open_raw(write, name, layout)?));
        }
        let Some((_, table)) = current.as_mut() else { unreachable!("opened above") };
        match value {
            Some(value) => table.put(key, value)?,
            None => table.remove(key)?,
        }
        count += 1;
    }
    Ok(count)
}

/// Splits a length-prefixed field (`width` bytes of little-endian length) off `bytes`.
fn take(bytes: &[u8], width: usize) -> Option<(&[u8], &[u8])> {
    let (len, rest) = bytes.split_at_checked(width)?;
    let mut buf = [0u8; 8];
    buf[..width].copy_from_slice(len);
    rest.split_at_checked(usize::try_from(u64::from_le_bytes(buf)).ok()?)
}

/// Records in `write` that the database holds every batch up to `seq` of log `id`.
fn seal(write: &WriteTransaction, id: u64, seq: u64) -> Result<()> {
    let mut meta = write.open_table(META)?;
    meta.insert(ID_KEY, id.to_le_bytes().as_slice())?;
    meta.insert(SEQ_KEY, seq.to_le_bytes().as_slice())?;
    Ok(())
}

impl RedoLog {
    /// Whether a checkpoint is due however busy the writer: batches have waited in the log for
    /// [`Checkpoints::every`], or it holds [`Checkpoints::bytes`].
    pub(crate) fn due(&self) -> bool {
        self.last > self.sealed && (self.since.elapsed() >= self.when.every || self.len >= self.when.bytes)
    }

    /// With batches in the log, how long the writer may wait for the next batch before it takes a
    /// checkpoint instead.
    pub(crate) fn pending(&self) -> Option<Duration> {
        (self.last > self.sealed).then(|| self.when.idle.min(self.when.every.saturating_sub(self.since.elapsed())))
    }

    /// Appends one batch's ops and syncs them: once this returns, the batch is durable. The
    /// record's head and its ops are written apart, so a large batch is never copied.
    pub(crate) fn append(&mut self, ops: &[u8]) -> Result<()> {
        let seq = self.last + 1;
        let mut head = [0u8; RECORD_HEAD];
        head[..4].copy_from_slice(&(ops.len() as u32).to_le_bytes());
        head[8..16].copy_from_slice(&seq.to_le_bytes());
        let mut crc = crc32fast::Hasher::new();
        crc.update(&head[8..]);
        crc.update(ops);
        head[4..8].copy_from_slice(&crc.finalize().to_le_bytes());
        let end = self.len + (RECORD_HEAD + ops.len()) as u64;
        let written = self
            .grow(end)
            .and_then(|()| self.file.write_all_at(&head, self.len))
            .and_then(|()| self.file.write_all_at(ops, self.len + RECORD_HEAD as u64))
            .and_then(|()| self.sync_data());
        if let Err(e) = written {
            // What may have reached the disk (a failed sync may still have written it) is a
            // batch its callers are told failed: a start must never replay it.
            self.unwrite();
            return Err(e.into());
        }
        self.len = end;
        self.last = seq;
        Ok(())
    }

    /// Makes sure the file is written and synced up to `end`: zeros ahead of the records, in
    /// steps that double from [`GROW_FIRST`] up to [`GROW_MOST`].
    fn grow(&mut self, end: u64) -> io::Result<()> {
        if end <= self.capacity {
            return Ok(());
        }
        let step = self.capacity.clamp(GROW_FIRST, GROW_MOST);
        let target = end.div_ceil(step) * step;
        let zeros = vec![0u8; (target - self.capacity).min(GROW_MOST) as usize];
        let mut at = self.capacity;
        while at < target {
            let n = (target - at).min(zeros.len() as u64) as usize;
            self.file.write_all_at(&zeros[..n], at)?;
            at += n as u64;
        }
        self.sync_data()?;
        self.capacity = target;
        Ok(())
    }

    /// Syncs the file's data.
    fn sync_data(&self) -> io::Result<()> {
        self.file.sync_data()?;
        self.durable()
    }

    /// Syncs the file's data and size.
    fn sync_all(&self) -> io::Result<()> {
        self.file.sync_all()?;
        self.durable()
    }

    /// Tells a simulated power cut that what the file holds is durable now (tests only).
    fn durable(&self) -> io::Result<()> {
        #[cfg(feature = "test-hooks")]
        if let Some(cut) = &self.cut {
            return cut.synced(&self.path);
        }
        Ok(())
    }

    /// Reports the file's syncs to `cut` from now on; what it holds now is durable.
    #[cfg(feature = "test-hooks")]
    pub(crate) fn watched_by(&mut self, cut: std::sync::Arc<crate::power_cut::PowerCut>) -> io::Result<()> {
        self.cut = Some(cut);
        self.durable()
    }

    /// Makes sure no record starts at `len` on disk: its head blanked and synced, or, when that
    /// fails, the file cut there and synced. When both fail, the record may be replayed at the
    /// next start, and that is logged.
    fn unwrite(&mut self) {
        let blanked = self.blank(self.len).and_then(|()| self.sync_data());
        if blanked.is_err() {
            match self.file.set_len(self.len).and_then(|()| self.sync_all()) {
                Ok(()) => self.capacity = self.len,
                Err(e) => tracing::error!(event = "redo_unwrite_failed", component = "engine",
                    path = %self.path.display(), error = %e,
                    "a batch reported as failed could not be taken out of the redo log; it may be replayed"),
            }
        }
    }

    /// Zeros the head of the record at `at`, so that reading the log stops there.
    fn blank(&self, at: u64) -> io::Result<()> {
        self.file.write_all_at(&[0; RECORD_HEAD], at)
    }

    /// Takes the last appended batch back out (its redb commit failed, so its callers are told
    /// it failed, and a start must not replay it): its head blanked and synced, or, when that
    /// fails, the file cut before it and synced.
    pub(crate) fn withdraw(&mut self, ops: &[u8]) -> Result<()> {
        self.len -= (RECORD_HEAD + ops.len()) as u64;
        self.last -= 1;
        let blanked = self.blank(self.len).and_then(|()| self.sync_data());
        if blanked.is_err() {
            self.file.set_len(self.len)?;
            self.sync_all()?;
            self.capacity = self.len;
        }
        Ok(())
    }

    /// Writes, inside a transaction about to be committed durably, that it holds every batch of
    /// the log.
    pub(crate) fn seal(&self, write: &WriteTransaction) -> Result<()> {
        seal(write, self.id, self.last)
    }

    /// After the durable commit of a transaction [`RedoLog::seal`]ed: the log starts over behind
    /// its header, over the records the database now holds (they would be skipped at a start,
    /// their sequence being at or before the checkpoint's). Their first head is blanked for
    /// [`holds_writes`], without a sync; the space stays, up to [`KEEP`].
    pub(crate) fn sealed(&mut self) {
        self.sealed = self.last;
        self.since = Instant::now();
        self.len = HEADER;
        // A cut is followed by a sync of the file's size (the redb commit before it is durable).
        let kept = if self.capacity > KEEP {
            self.file.set_len(KEEP).and_then(|()| self.sync_all()).map(|()| self.capacity = KEEP)
        } else {
            Ok(())
        };
        if let Err(e) = kept.and_then(|()| self.blank(HEADER)) {
            tracing::warn!(event = "redo_truncate_failed", component = "engine", path = %self.path.display(), error = %e);
        }
    }

    /// At a clean close, after the last checkpoint: the file is cut back to its header.
    pub(crate) fn close(&mut self) {
        if self.last == self.sealed
            && let Err(e) = self.file.set_len(HEADER).and_then(|()| self.sync_all())
        {
            tracing::warn!(event = "redo_truncate_failed", component = "engine", path = %self.path.display(), error = %e);
        }
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    fn record(seq: u64, ops: &[u8]) -> Vec<u8> {
        let mut body = seq.to_le_bytes().to_vec();
        body.extend_from_slice(ops);
        let mut out = (ops.len() as u32).to_le_bytes().to_vec();
        out.extend_from_slice(&crc32fast::hash(&body).to_le_bytes());
        out.extend_from_slice(&body);
        out
    }

    fn seqs(found: Option<Vec<(u64, &[u8])>>) -> Option<Vec<u64>> {
        found.map(|b| b.iter().map(|(seq, _)| *seq).collect())
    }

    #[test]
    fn reading_stops_at_a_torn_or_stale_record_and_skips_what_the_checkpoint_holds() {
        let mut log = [record(5, b"a"), record(6, b"bb"), record(7, b"ccc")].concat();
        assert_eq!(seqs(batches(&log, 4)), Some(vec![5, 6, 7]));
        assert_eq!(seqs(batches(&log, 6)), Some(vec![7]), "the checkpoint holds 5 and 6");
        assert_eq!(seqs(batches(&log, 7)), Some(vec![]));
        // A record cut short by the crash, or one whose bytes changed, ends the log.
        let whole = log.len();
        log.extend_from_slice(&record(8, b"dddd")[..10]);
        assert_eq!(seqs(batches(&log, 4)), Some(vec![5, 6, 7]));
        log.truncate(whole);
        let mut bad = record(8, b"dddd");
        *bad.last_mut().unwrap() ^= 1;
        log.extend_from_slice(&bad);
        assert_eq!(seqs(batches(&log, 4)), Some(vec![5, 6, 7]));
        // Older records past a shorter new one (a truncation the crash undid) are not read.
        log.truncate(whole);
        log.extend_from_slice(&record(3, b"old"));
        assert_eq!(seqs(batches(&log, 4)), Some(vec![5, 6, 7]));
    }

    /// The log as [`open`] would read it: the batches after the database's checkpoint.
    fn logged(db: &Database, path: &Path) -> Option<Vec<u64>> {
        let bytes = std::fs::read(path_for(path)).unwrap();
        seqs(batches(&bytes[HEADER as usize..], meta_u64(db, SEQ_KEY).unwrap().unwrap_or(0)))
    }

    fn checkpoint(db: &Database, log: &mut RedoLog) {
        let write = db.begin_write().unwrap();
        log.seal(&write).unwrap();
        write.commit().unwrap();
        log.sealed();
    }

    #[test]
    fn records_after_a_checkpoint_overwrite_the_old_ones_and_only_they_are_read() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("db.redb");
        let db = Database::builder().create(&path).unwrap();
        let (mut log, _) = open(&db, &path, Checkpoints::default(), Unreplayable::Refuse).unwrap();
        assert!(!holds_writes(&path));
        for ops in [&b"first, a long batch"[..], b"second", b"third"] {
            log.append(ops).unwrap();
        }
        assert_eq!(logged(&db, &path), Some(vec![1, 2, 3]));
        assert!(holds_writes(&path));
        let grown = std::fs::metadata(path_for(&path)).unwrap().len();
        assert_eq!(grown, GROW_FIRST, "zeros written ahead of the records");

        checkpoint(&db, &mut log);
        assert!(!holds_writes(&path), "the checkpoint holds them");
        assert_eq!(logged(&db, &path), Some(vec![]));
        // A shorter record over the first old one: the old ones after it are not read.
        log.append(b"4").unwrap();
        assert_eq!(logged(&db, &path), Some(vec![4]));
        assert!(holds_writes(&path));
        assert_eq!(std::fs::metadata(path_for(&path)).unwrap().len(), grown, "the space is reused");
        // A batch taken back out is not read either.
        log.append(b"five").unwrap();
        log.withdraw(b"five").unwrap();
        assert_eq!(logged(&db, &path), Some(vec![4]));
        log.append(b"5 again").unwrap();
        assert_eq!(logged(&db, &path), Some(vec![4, 5]));
        // A record head whose length runs past the file is no record.
        let mut bytes = std::fs::read(path_for(&path)).unwrap();
        bytes.truncate(HEADER as usize + RECORD_HEAD);
        bytes[HEADER as usize..HEADER as usize + 4].copy_from_slice(&u32::MAX.to_le_bytes());
        let other = dir.path().join("other.redb");
        std::fs::write(path_for(&other), &bytes).unwrap();
        assert!(!holds_writes(&other));

        // Records past the first zeroed stretch grow the file in doubling steps.
        let big = vec![7u8; GROW_FIRST as usize];
        log.append(&big).unwrap();
        assert_eq!(std::fs::metadata(path_for(&path)).unwrap().len(), 2 * GROW_FIRST);
        assert_eq!(logged(&db, &path), Some(vec![4, 5, 6]));
        checkpoint(&db, &mut log);
        log.close();
        assert_eq!(std::fs::metadata(path_for(&path)).unwrap().len(), HEADER, "a clean close cuts it back");
    }

    #[test]
    fn a_log_that_cannot_be_replayed_refuses_the_open_or_is_set_aside_when_asked() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("db.redb");
        let db = Database::builder().create(&path).unwrap();
        let (mut log, _) = open(&db, &path, Checkpoints::default(), Unreplayable::Refuse).unwrap();
        log.append(b"acknowledged").unwrap();
        drop(log);
        // Another database's file in its place: the log is not its.
        drop(db);
        std::fs::remove_file(&path).unwrap();
        let db = Database::builder().create(&path).unwrap();
        let refused = open(&db, &path, Checkpoints::default(), Unreplayable::Refuse).map(|_| ());
        assert!(matches!(refused, Err(Error::RedoUnreplayable { .. })), "{refused:?}");
        assert!(holds_writes(&path), "the log is left as it was");
        assert!(set_aside_logs(&path).is_empty());
        let (_, recovered) = open(&db, &path, Checkpoints::default(), Unreplayable::SetAside).unwrap();
        let aside = recovered.set_aside.expect("set aside");
        assert_eq!(set_aside_logs(&path), vec![aside.clone()]);
        assert!(std::fs::read(&aside).unwrap().windows(12).any(|w| w == b"acknowledged"), "kept whole");
        assert!(!holds_writes(&path), "a fresh log in its place");
    }

    #[test]
    fn a_log_that_does_not_continue_the_checkpoint_is_refused() {
        let log = [record(9, b"a"), record(10, b"b")].concat();
        assert_eq!(seqs(batches(&log, 4)), None, "batches 5 to 8 would be missing");
        assert_eq!(seqs(batches(&log, 8)), Some(vec![9, 10]));
    }

    #[test]
    fn an_op_cut_short_is_refused_not_applied_in_part() {
        let file = tempfile::NamedTempFile::new().unwrap();
        let db = Database::builder().create(file.path()).unwrap();
        let ops = Ops::default();
        ops.put("map:meta", b"k", b"v");
        let bytes = ops.into_bytes();
        let write = db.begin_write().unwrap();
        assert_eq!(replay(&write, &bytes).unwrap(), 1);
        assert!(matches!(replay(&write, &bytes[..bytes.len() - 1]), Err(Error::Corrupt { .. })));
        let unknown = Ops::default();
        unknown.put("no such table", b"k", b"v");
        assert!(matches!(replay(&write, &unknown.into_bytes()), Err(Error::Corrupt { .. })));
    }
}
