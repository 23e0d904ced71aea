//! The one write path. Every create, update and delete of a user record goes through [`TxUser`],
//! inside a write transaction owned by the writer: validate, save hook, revision bump,
//! bookkeeping instants, secondary indexes and the change-feed append happen here and nowhere else.

use std::cell::RefCell;
use std::collections::HashMap;
use std::collections::hash_map::Entry;

use jiff::Timestamp;
use redb::{ReadableTable, WriteTransaction};

use crate::audit::ChangeList;
use crate::changes::{Change, Op, Touched};
use crate::record::{Ahead, Meta, Precondition, Prepared, Record, Row};
use crate::redo::Logged;
use crate::tables::{self, BLOBS, CHANGES, COUNTERS, LIVE_COUNTS, USER_SEQ};
use crate::{Error, Invalid, Result, UserId, codec, read};

/// A write transaction in progress, handed to each queued change by the writer.
pub struct Tx<'a> {
    /// The transaction itself: read through it, write only through [`Tx::table`].
    raw: &'a WriteTransaction,
    /// What this transaction changed, for the redo log ([`crate::redo`]).
    pub(crate) ops: crate::redo::Ops,
    pub(crate) now: Timestamp,
    /// Rows written in this transaction, for the search indexer once it commits.
    pub(crate) touched: RefCell<Vec<Touched>>,
    /// Users whose rows were all removed.
    pub(crate) purged: RefCell<Vec<u64>>,
    /// Per-user bookkeeping this transaction has read, kept current as it writes, so a bulk write
    /// reads it once instead of once per row. The change sequence and live counts are written to
    /// their tables once, when the transaction finishes ([`Tx::finish`]).
    heads: RefCell<HashMap<u64, Head>>,
    /// Counters this transaction has incremented, by name, at their current value; written to
    /// `COUNTERS` when it finishes.
    counters: RefCell<HashMap<String, u64>>,
    /// Told of every change inside this transaction (the outbox), when one is installed.
    pub(crate) hook: Option<std::sync::Arc<dyn ChangeHook>>,
    /// What the change being run was submitted under (a request or job correlation id).
    pub(crate) origin: RefCell<Option<std::sync::Arc<str>>>,
    /// What code above the engine gathers in this transaction ([`Tx::gathered`]).
    gathered: RefCell<Option<Box<dyn Gathered>>>,
}

/// What code above the engine gathers over one transaction to write once, just before it
/// commits ([`Tx::gathered`]): the outbox's events, one row for a transaction's many changes
/// instead of one row each.
pub trait Gathered: std::any::Any {
    /// Writes what was gathered, inside `tx`, after its last change and before its own
    /// bookkeeping (counters taken here are kept). An error fails the whole transaction.
    fn finish(self: Box<Self>, tx: &Tx<'_>) -> Result<()>;
}

/// Told of every change to a user record *inside* the transaction that makes it, so what it
/// writes (an outbox row for each subscriber of the event) commits or vanishes with the change
/// itself. The engine knows nothing of what it does. It must be quick when it has nothing to do
/// (it runs for every row of an import) and may fail the change with an error.
pub trait ChangeHook: Send + Sync {
    /// `change` was just logged for `user`; `body` encodes the row's body as stored (after the
    /// change; the last live body for a deletion) in the engine's row encoding ([`crate::codec`]),
    /// which is several times cheaper to make than JSON: whoever needs JSON decodes it later,
    /// off the writer.
    fn changed(&self, tx: &Tx<'_>, user: UserId, change: &Change, body: &dyn Fn() -> Vec<u8>) -> Result<()>;

    /// Called on the submitting caller's task when a change is queued: a label the change runs
    /// under (the server's request or job correlation id), given back by [`Tx::origin`].
    fn origin(&self) -> Option<std::sync::Arc<str>> {
        None
    }

    /// Called after every durable commit, before any caller is answered.
    fn committed(&self) {}
}

/// One user's change-feed and audit-chain head within a transaction.
struct Head {
    /// The last change sequence number written.
    seq: u64,
    /// The hash of the last audit event (or the chain's anchor).
    audit: String,
    /// Live rows per kind, where this transaction changed them.
    live: HashMap<&'static str, u64>,
    /// Whether `seq` moved in this transaction (and `USER_SEQ` is to be written).
    moved: bool,
}

impl<'a> Tx<'a> {
    pub(crate) fn new(
        txn: &'a WriteTransaction,
        now: Timestamp,
        hook: Option<std::sync::Arc<dyn ChangeHook>>,
    ) -> Tx<'a> {
        Tx {
            raw: txn,
            ops: crate::redo::Ops::default(),
            now,
            touched: RefCell::new(Vec::new()),
            purged: RefCell::new(Vec::new()),
            heads: RefCell::new(HashMap::new()),
            counters: RefCell::new(HashMap::new()),
            hook,
            origin: RefCell::new(None),
            gathered: RefCell::new(None),
        }
    }

    /// Runs `f` on what this transaction has gathered so far: a `T::default()` at the first
    /// use, written by [`Gathered::finish`] when the transaction finishes. A transaction that is
    /// aborted (a failed change, the batch then run again without it) drops it with everything
    /// else it wrote, so nothing gathered outlives the changes it describes. `f` must not call
    /// `gathered` again. One type per transaction: state of another type is finished first.
    pub fn gathered<T: Gathered + Default, R>(&self, f: impl FnOnce(&mut T) -> R) -> Result<R> {
        let mut slot = self.gathered.borrow_mut();
        if !slot.as_deref().is_some_and(|state| (state as &dyn std::any::Any).is::<T>()) {
            if let Some(other) = slot.take() {
                drop(slot);
                other.finish(self)?;
                slot = self.gathered.borrow_mut();
            }
            *slot = Some(Box::new(T::default()));
        }
        let state: Option<&mut T> =
            slot.as_deref_mut().and_then(|state| (state as &mut dyn std::any::Any).downcast_mut());
        Ok(match state {
            Some(state) => f(state),
            // Just put there, so not reached; a fresh value would be the honest answer.
            None => f(&mut T::default()),
        })
    }

    /// The label the running change was submitted under (see [`ChangeHook::origin`]).
    pub fn origin(&self) -> Option<std::sync::Arc<str>> {
        self.origin.borrow().clone()
    }

    /// Increments and returns the named counter (first value 1). Read from `COUNTERS` once per
    /// transaction, written back when it finishes.
    /// The last value counter `name` gave out (0 when none).
    pub(crate) fn counter(&self, name: &str) -> Result<u64> {
        if let Some(last) = self.counters.borrow().get(name) {
            return Ok(*last);
        }
        Ok(self.table(COUNTERS)?.get(name)?.map(|v| v.value()).unwrap_or(0))
    }

    pub fn next_counter(&self, name: &str) -> Result<u64> {
        let mut cached = self.counters.borrow_mut();
        let last = match cached.get(name) {
            Some(last) => *last,
            None => self.table(COUNTERS)?.get(name)?.map(|v| v.value()).unwrap_or(0),
        };
        cached.insert(name.to_string(), last + 1);
        Ok(last + 1)
    }

    /// Writes the bookkeeping kept in memory (counters, change sequences, live counts) to its
    /// tables, and hands over what the search indexer needs once the transaction commits. The
    /// writer calls it after the last change and before the commit; a transaction dropped without
    /// it is aborted, so nothing is half written.
    pub(crate) fn finish(self) -> Result<(Vec<Touched>, Vec<u64>, crate::redo::Ops)> {
        let gathered = self.gathered.borrow_mut().take();
        if let Some(gathered) = gathered {
            gathered.finish(&self)?;
        }
        {
            let mut table = self.table(COUNTERS)?;
            for (name, value) in self.counters.borrow().iter() {
                table.insert(name.as_str(), *value)?;
            }
        }
        let users: Vec<u64> = self.heads.borrow().keys().copied().collect();
        for user in users {
            self.write_head(user)?;
        }
        Ok((self.touched.into_inner(), self.purged.into_inner(), self.ops))
    }

    /// Writes `user`'s change sequence and live counts, if this transaction changed them.
    fn write_head(&self, user: u64) -> Result<()> {
        let mut heads = self.heads.borrow_mut();
        let Some(head) = heads.get_mut(&user) else { return Ok(()) };
        if head.moved {
            self.table(USER_SEQ)?.insert(user, head.seq)?;
            head.moved = false;
        }
        if !head.live.is_empty() {
            let mut counts = self.table(LIVE_COUNTS)?;
            for (kind, count) in head.live.drain() {
                counts.insert((user, kind), count)?;
            }
        }
        Ok(())
    }

    /// Runs `f` on `user`'s head, read from the tables on first use in this transaction.
    fn with_head<T>(&self, user: u64, f: impl FnOnce(&mut Head) -> Result<T>) -> Result<T> {
        let mut heads = self.heads.borrow_mut();
        let head = match heads.entry(user) {
            Entry::Occupied(e) => e.into_mut(),
            Entry::Vacant(e) => {
                let seq = self.table(USER_SEQ)?.get(user)?.map(|v| v.value()).unwrap_or(0);
                let audit = crate::audit::last_hash(self.raw, user)?;
                e.insert(Head { seq, audit, live: HashMap::new(), moved: false })
            }
        };
        f(head)
    }

    /// The instant every row written by this batch is stamped with.
    pub fn now(&self) -> Timestamp {
        self.now
    }

    /// Writes scoped to one user: the only way to change user records.
    pub fn user(&self, user: UserId) -> TxUser<'_, 'a> {
        TxUser { tx: self, user: user.0 }
    }

    /// Opens `definition` for reading and writing, every change recorded for the redo log: the
    /// one way the writer's changes reach a table.
    pub(crate) fn table<K: redb::Key + 'static, V: redb::Value + 'static>(
        &self,
        definition: redb::TableDefinition<'_, K, V>,
    ) -> Result<Logged<'_, K, V>> {
        Logged::open(self.raw, &self.ops, definition)
    }

    /// The raw transaction, for changes the redo log cannot record (a rebuilt index drops its
    /// table): the transaction is then committed durably, as a checkpoint.
    pub(crate) fn txn(&self) -> &WriteTransaction {
        self.ops.unrecorded.set(true);
        self.raw
    }

    /// Removes every row of `user`: records, tombstones, index entries and the change feed.
    /// For deleting an account; returns how many record rows went.
    pub fn purge_user(&self, user: UserId) -> Result<u64> {
        let names: Vec<String> = self.raw.list_tables()?.map(|h| redb::TableHandle::name(&h).to_string()).collect();
        let mut removed = 0;
        for name in names {
            if name.starts_with(tables::RECORD_PREFIX) {
                let mut table = self.table(tables::record_table(&name))?;
                removed += table.retain_in((user.0, 0)..=(user.0, u64::MAX), |_, _| false)?;
            } else if name.starts_with(tables::INDEX_PREFIX) {
                let mut table = self.table(tables::index_table(&name))?;
                table.retain_in::<(u64, &str, &str, u64)>((user.0, "", "", 0).., |(u, _, _, _), ()| u != user.0)?;
            }
        }
        self.table(CHANGES)?.retain_in((user.0, 0)..=(user.0, u64::MAX), |_, _| false)?;
        self.table(BLOBS)?.retain_in((user.0, "")..(user.0 + 1, ""), |_, _| false)?;
        self.table(USER_SEQ)?.remove(user.0)?;
        self.table(LIVE_COUNTS)?.retain_in::<(u64, &str)>((user.0, "").., |(u, _), _| u != user.0)?;
        self.table(tables::AUDIT)?.retain_in((user.0, 0)..=(user.0, u64::MAX), |_, _| false)?;
        self.table(tables::AUDIT_ANCHORS)?.remove(user.0)?;
        // Nothing of the user's bookkeeping is to be written back.
        self.heads.borrow_mut().remove(&user.0);
        self.purged.borrow_mut().push(user.0);
        Ok(removed)
    }
}

/// One user's view of a write transaction.
pub struct TxUser<'t, 'a> {
    tx: &'t Tx<'a>,
    user: u64,
}

impl TxUser<'_, '_> {
    /// The instant this batch stamps rows with.
    pub fn now(&self) -> Timestamp {
        self.tx.now
    }

    /// Reads a live row inside the transaction (sees this batch's earlier writes).
    pub fn get<R: Record>(&self, id: u64) -> Result<Row<R>> {
        let table = self.tx.table(tables::record_table(R::KIND.records))?;
        read::live_row(&*table, R::KIND.records, self.user, id)
    }

    /// Ids whose index `index` holds exactly `value`, ascending.
    pub fn find<R: Record>(&self, index: &str, value: &str) -> Result<Vec<u64>> {
        let table = self.tx.table(tables::index_table(R::KIND.index))?;
        read::index_ids(&*table, self.user, index, value)
    }

    /// Ids of live rows whose index `index` holds a value in `[from, to)`, without repeats.
    pub fn find_range<R: Record>(&self, index: &str, from: &str, to: &str) -> Result<Vec<u64>> {
        let table = self.tx.table(tables::index_table(R::KIND.index))?;
        let range = table.range::<(u64, &str, &str, u64)>((self.user, index, from, 0)..(self.user, index, to, 0))?;
        let mut ids = Vec::new();
        for entry in range {
            let id = entry?.0.value().3;
            if !ids.contains(&id) {
                ids.push(id);
            }
        }
        Ok(ids)
    }

    /// Creates a row with a fresh id and revision 1.
    pub fn create<R: Record>(&self, mut body: R) -> Result<Row<R>> {
        prepare(&mut body)?;
        self.create_prepared(Prepared::already(body))
    }

    /// Creates a row from a body prepared outside the transaction (see [`Prepared`]).
    pub fn create_prepared<R: Record>(&self, prepared: Prepared<R>) -> Result<Row<R>> {
        let Prepared { body, created, .. } = prepared;
        let (id, meta) = self.insert_new(&body, created.map(std::borrow::Cow::Owned))?;
        Ok(Row { id, meta, body })
    }

    /// Creates a row from a prepared body its caller keeps, and returns the row's id: for a batch
    /// of thousands (an import), whose change may run again if a neighbour in the writer's
    /// transaction fails, so it cannot give its bodies away.
    pub fn create_from<R: Record>(&self, prepared: &Prepared<R>) -> Result<u64> {
        let audit = prepared.created.as_deref().map(std::borrow::Cow::Borrowed);
        Ok(self.insert_new(&prepared.body, audit)?.0)
    }

    /// Creates rows from prepared bodies its caller keeps, in order, as [`TxUser::create_from`]
    /// would one at a time, and returns each row's id or why it was refused: a unique value
    /// taken already, by an existing row or an earlier one of the batch (a refused row writes
    /// nothing and uses no id). Errors of the store fail the whole call. Each table is opened
    /// once, and the batch's index entries are written after its last row, in key order, so a
    /// bulk import walks each index page once in turn instead of a random page per entry.
    pub fn create_many_from<R: Record>(&self, batch: &[&Prepared<R>]) -> Result<Vec<Result<u64>>> {
        let txn = self.tx;
        let now = self.tx.now;
        let meta = Meta { revision: 1, created_at: now, updated_at: now, deleted_at: None };
        let counter = format!("id:{}", R::KIND.name);
        // What was not done ahead ([`Prepared::ahead`]) is done here.
        let missing: Vec<Option<Ahead>> =
            batch.iter().map(|p| p.ahead.is_none().then(|| Ahead::of(&p.body, p.created.as_deref()))).collect();
        let updated = updated_entry(&meta);
        self.tx.with_head(self.user, |_| Ok(()))?;
        let mut index = txn.table(tables::index_table(R::KIND.index))?;
        let mut records = txn.table(tables::record_table(R::KIND.records))?;
        let mut log = Log { changes: txn.table(CHANGES)?, audit: txn.table(tables::AUDIT)? };
        // Unique values this batch has claimed, and the index entries it is to write.
        let mut claimed: std::collections::HashSet<(&str, &str)> = std::collections::HashSet::new();
        let mut entries: Vec<(&str, &str, u64)> = Vec::new();
        let mut out = Vec::with_capacity(batch.len());
        'rows: for (prepared, missing) in batch.iter().zip(&missing) {
            let Some(ahead) = prepared.ahead.as_ref().or(missing.as_ref()) else { unreachable!("computed above") };
            let own = ahead.entries.iter().map(|(name, value)| (*name, value.as_str()));
            for (name, value) in own.clone().filter(|(n, _)| R::UNIQUE.contains(n)) {
                if claimed.contains(&(name, value)) || !read::index_ids(&*index, self.user, name, value)?.is_empty() {
                    out.push(Err(Error::Duplicate { index: name }));
                    continue 'rows;
                }
            }
            let id = self.tx.next_counter(&counter)?;
            // Postcard writes the row's fields one after the other; the body is the last.
            let mut row = codec::encode(&(id, &meta));
            row.extend_from_slice(&ahead.body);
            #[cfg(debug_assertions)]
            assert_eq!(row, encode_row(&Stored { id, meta: &meta, body: &prepared.body })?, "the row encoded ahead");
            records.insert((self.user, id), row.as_slice())?;
            self.log::<R>(
                &mut log,
                (id, &prepared.body),
                meta.revision,
                Op::Created,
                ChangeList::Encoded(&ahead.changes),
            )?;
            for (name, value) in own {
                if R::UNIQUE.contains(&name) {
                    claimed.insert((name, value));
                }
                entries.push((name, value, id));
            }
            entries.push((UPDATED_INDEX, updated.as_str(), id));
            out.push(Ok(id));
        }
        entries.sort_unstable();
        for (name, value, id) in entries {
            index.insert((self.user, name, value, id), ())?;
        }
        Ok(out)
    }

    fn insert_new<R: Record>(
        &self,
        body: &R,
        audit: Option<std::borrow::Cow<'_, [crate::audit::FieldChange]>>,
    ) -> Result<(u64, Meta)> {
        let id = self.tx.next_counter(&format!("id:{}", R::KIND.name))?;
        let now = self.tx.now;
        let meta = Meta { revision: 1, created_at: now, updated_at: now, deleted_at: None };
        self.store(None, Stored { id, meta: &meta, body }, Op::Created, audit)?;
        Ok((id, meta))
    }

    /// Brings a deleted row back at its own id with `body` (an undone merge): a soft-deleted
    /// kind's tombstone becomes live again (its revision after the tombstone's, its creation
    /// instant kept); a hard-deleted row is written again at its id. Stored as a creation:
    /// indexed, counted, in the change feed and the audit chain. A live row at `id` is
    /// `Duplicate`; an id this kind never gave out is `NotFound`. `created_at`: the creation
    /// instant of a hard-deleted row (which left no tombstone to keep it), else now.
    pub fn restore<R: Record>(&self, id: u64, mut body: R, created_at: Option<Timestamp>) -> Result<Row<R>> {
        prepare(&mut body)?;
        let old: Option<Row<R>> = {
            let table = self.tx.table(tables::record_table(R::KIND.records))?;
            read::any_row(&*table, R::KIND.records, self.user, id)?
        };
        if old.as_ref().is_some_and(|o| o.meta.deleted_at.is_none()) {
            return Err(Error::Duplicate { index: "id" });
        }
        if old.is_none() && id > self.tx.counter(&format!("id:{}", R::KIND.name))? {
            return Err(Error::NotFound);
        }
        let now = self.tx.now;
        let meta = Meta {
            revision: old.as_ref().map_or(1, |o| o.meta.revision + 1),
            created_at: old.as_ref().map(|o| o.meta.created_at).or(created_at).unwrap_or(now),
            updated_at: now,
            deleted_at: None,
        };
        // A tombstone has no index entries: the row is indexed as a new one.
        self.store(None, Stored { id, meta: &meta, body: &body }, Op::Created, None)?;
        Ok(Row { id, meta, body })
    }

    /// Replaces a live row's body.
    pub fn put<R: Record>(&self, id: u64, pre: Precondition, body: R) -> Result<Row<R>> {
        self.update(id, pre, move |current: &mut R| {
            *current = body;
            Ok(())
        })
    }

    /// Changes a live row in place with `change`, then validates and stores it.
    pub fn update<R: Record>(
        &self,
        id: u64,
        pre: Precondition,
        change: impl FnOnce(&mut R) -> std::result::Result<(), Invalid>,
    ) -> Result<Row<R>> {
        let old: Row<R> = self.get(id)?;
        pre.check(old.meta.revision)?;
        let mut row = old.clone();
        change(&mut row.body).map_err(Error::Invalid)?;
        prepare(&mut row.body)?;
        row.meta.revision += 1;
        row.meta.updated_at = self.tx.now.max(old.meta.updated_at);
        self.store(Some(&old), Stored::of(&row), Op::Updated, None)?;
        Ok(row)
    }

    /// Deletes a live row: user content becomes a tombstone (kept for sync until purged),
    /// other kinds are removed at once.
    pub fn delete<R: Record>(&self, id: u64, pre: Precondition) -> Result<()> {
        let old: Row<R> = self.get(id)?;
        pre.check(old.meta.revision)?;
        let mut row = old.clone();
        row.meta.revision += 1;
        row.meta.updated_at = self.tx.now.max(old.meta.updated_at);
        row.meta.deleted_at = Some(self.tx.now);
        self.store(Some(&old), Stored::of(&row), Op::Deleted, None)?;
        if !R::KIND.soft_delete {
            let mut table = self.tx.table(tables::record_table(R::KIND.records))?;
            table.remove((self.user, id))?;
        }
        Ok(())
    }

    /// Stores `bytes` as this user's blob `name` (a contact picture), replacing one of that name.
    /// Blobs are not records: no revision, index or change-feed entry; the row that names one
    /// changes with it in the same transaction, and that change is what sync sees.
    pub fn put_blob(&self, name: &str, bytes: &[u8]) -> Result<()> {
        self.tx.table(BLOBS)?.insert((self.user, name), bytes)?;
        Ok(())
    }

    /// Removes this user's blob `name`; whether there was one.
    pub fn delete_blob(&self, name: &str) -> Result<bool> {
        self.tx.table(BLOBS)?.remove((self.user, name))
    }

    /// This user's blob `name`, as this transaction sees it.
    pub fn blob(&self, name: &str) -> Result<Option<Vec<u8>>> {
        Ok(self.tx.table(BLOBS)?.get((self.user, name))?.map(|v| v.value().to_vec()))
    }

    /// Removes tombstones deleted before `cutoff`. Returns how many were purged.
    pub fn purge_tombstones<R: Record>(&self, cutoff: Timestamp) -> Result<u64> {
        let mut table = self.tx.table(tables::record_table(R::KIND.records))?;
        let mut expired = Vec::new();
        for entry in table.range((self.user, 0)..=(self.user, u64::MAX))? {
            let (key, value) = entry?;
            let row: Row<R> = codec::decode(R::KIND.records, value.value())?;
            if row.meta.deleted_at.is_some_and(|at| at < cutoff) {
                expired.push(key.value().1);
            }
        }
        for id in &expired {
            table.remove((self.user, *id))?;
        }
        Ok(expired.len() as u64)
    }

    /// Writes `row` and its bookkeeping. `audit`: the field changes, when already known.
    fn store<R: Record>(
        &self,
        old: Option<&Row<R>>,
        row: Stored<'_, R>,
        op: Op,
        audit: Option<std::borrow::Cow<'_, [crate::audit::FieldChange]>>,
    ) -> Result<()> {
        let txn = self.tx;
        {
            let mut index = txn.table(tables::index_table(R::KIND.index))?;
            // Only the entries that change are written: an index page costs its whole 4 KB at the
            // commit's fsync, and an edit of a note would otherwise rewrite the page of every
            // entry the row has (its name's, its e-mails', its birthday's) to put back what was
            // there.
            let before = old.map(entries_of).unwrap_or_default();
            let after = if row.meta.deleted_at.is_none() { entries_for(row.body, row.meta) } else { Vec::new() };
            if let Some(old) = old {
                debug_assert_eq!(old.id, row.id, "a row is stored over its own earlier self");
                for (name, value) in before.iter().filter(|entry| !after.contains(entry)) {
                    index.remove((self.user, *name, value.as_str(), old.id))?;
                }
            }
            for (name, value) in after.iter().filter(|(n, _)| R::UNIQUE.contains(n)) {
                let taken = read::index_ids(&*index, self.user, name, value)?;
                if taken.iter().any(|id| *id != row.id) {
                    return Err(Error::Duplicate { index: name });
                }
            }
            for (name, value) in after.iter().filter(|entry| !before.contains(entry)) {
                index.insert((self.user, *name, value.as_str(), row.id), ())?;
            }
        }
        let encoded = encode_row(&row)?;
        txn.table(tables::record_table(R::KIND.records))?.insert((self.user, row.id), encoded.as_slice())?;
        let fields = audit.unwrap_or_else(|| {
            std::borrow::Cow::Owned(match (old, op) {
                (None, Op::Created) => crate::audit::created(row.body, R::AUDIT_SKIP),
                _ => {
                    let body = |r: Option<&Row<R>>| match r {
                        Some(r) if r.meta.deleted_at.is_none() => serde_json::to_value(&r.body).unwrap_or_default(),
                        _ => serde_json::Value::Null,
                    };
                    let after = if op == Op::Deleted {
                        serde_json::Value::Null
                    } else {
                        serde_json::to_value(row.body).unwrap_or_default()
                    };
                    crate::audit::diff(&body(old), &after, R::AUDIT_SKIP)
                }
            })
        });
        // The head is read before the change feed and the audit chain are opened for writing.
        self.tx.with_head(self.user, |_| Ok(()))?;
        let mut log = Log { changes: txn.table(CHANGES)?, audit: txn.table(tables::AUDIT)? };
        self.log::<R>(&mut log, (row.id, row.body), row.meta.revision, op, ChangeList::Listed(&fields))
    }

    /// Records a change of row `id` of kind `R`: the live count, the change feed (and the
    /// search indexer's list) and the audit chain. The user's head must have been read.
    fn log<R: Record>(
        &self,
        log: &mut Log<'_>,
        row: (u64, &R),
        revision: u64,
        op: Op,
        fields: ChangeList<'_>,
    ) -> Result<()> {
        let (id, body) = row;
        let txn = self.tx;
        let delta: i64 = match op {
            Op::Created => 1,
            Op::Deleted => -1,
            Op::Updated => 0,
        };
        let seq = self.tx.with_head(self.user, |head| {
            if delta != 0 {
                let current = match head.live.get(R::KIND.name) {
                    Some(current) => *current,
                    None => txn.table(LIVE_COUNTS)?.get((self.user, R::KIND.name))?.map(|v| v.value()).unwrap_or(0),
                };
                head.live.insert(R::KIND.name, current.saturating_add_signed(delta));
            }
            head.seq += 1;
            head.moved = true;
            Ok(head.seq)
        })?;
        let change = Change { seq, kind: R::KIND.name.to_string(), id, op, revision, at: self.tx.now };
        log.changes.insert((self.user, seq), codec::encode(&change).as_slice())?;
        self.tx.touched.borrow_mut().push(Touched { user: self.user, seq, kind: R::KIND.name, id });
        let event = crate::audit::NewEvent {
            seq,
            kind: R::KIND.name,
            record_id: id,
            action: op,
            revision,
            at: self.tx.now,
            changes: fields,
        };
        self.tx.with_head(self.user, |head| {
            head.audit = append_audit(&event, &mut log.audit, self.user, &head.audit)?;
            Ok(())
        })?;
        if let Some(hook) = &self.tx.hook {
            hook.changed(self.tx, UserId(self.user), &change, &|| codec::encode(body))?;
        }
        Ok(())
    }

    /// Removes this user's audit events older than `cutoff` (the chain stays verifiable).
    pub fn purge_audit(&self, cutoff: Timestamp) -> Result<u64> {
        // The chain's head is read again after the purge; the rest of the head is kept.
        self.tx.write_head(self.user)?;
        self.tx.heads.borrow_mut().remove(&self.user);
        purge_audit(self.tx, self.user, cutoff)
    }
}

/// Appends `event` to `user`'s chain after `prev_hash` (the chain's head, which the write
/// path keeps per transaction: see `Tx`) and returns its hash, the chain's new head.
fn append_audit(
    event: &crate::audit::NewEvent<'_>,
    table: &mut crate::redo::Logged<'_, (u64, u64), &'static [u8]>,
    user: u64,
    prev_hash: &str,
) -> Result<String> {
    let (bytes, hash) = event.encode(prev_hash);
    #[cfg(debug_assertions)]
    {
        let stored: crate::audit::AuditEvent = codec::decode("audit", &bytes)?;
        debug_assert_eq!(stored.hash, stored.compute_hash());
    }
    table.insert((user, event.seq), bytes.as_slice())?;
    Ok(hash)
}

/// Removes `user`'s events older than `cutoff`, anchoring the chain at the last one removed.
fn purge_audit(txn: &Tx<'_>, user: u64, cutoff: Timestamp) -> Result<u64> {
    let mut table = txn.table(tables::AUDIT)?;
    let mut old = Vec::new();
    for entry in table.range((user, 0)..=(user, u64::MAX))? {
        let (key, bytes) = entry?;
        let event: crate::audit::AuditEvent = codec::decode("audit", bytes.value())?;
        if event.at >= cutoff {
            break;
        }
        old.push((key.value().1, event.hash));
    }
    if let Some((_, hash)) = old.last() {
        txn.table(tables::AUDIT_ANCHORS)?.insert(user, hash.as_bytes())?;
    }
    for (seq, _) in &old {
        table.remove((user, *seq))?;
    }
    Ok(old.len() as u64)
}

/// Every record kind's `_updated` index: `updated_at` in microseconds, zero-padded so that
/// text order is time order ("recently updated" lists walk it backwards).
pub const UPDATED_INDEX: &str = "_updated";

/// A row's declared index entries plus the engine's own.
pub(crate) fn entries_of<R: Record>(row: &Row<R>) -> Vec<(&'static str, String)> {
    entries_for(&row.body, &row.meta)
}

fn entries_for<R: Record>(body: &R, meta: &Meta) -> Vec<(&'static str, String)> {
    let mut entries = body.index_entries();
    entries.push((UPDATED_INDEX, updated_entry(meta)));
    entries
}

/// A row's `_updated` index value.
fn updated_entry(meta: &Meta) -> String {
    format!("{:020}", meta.updated_at.as_microsecond().max(0))
}

/// A row's stored bytes. A serde attribute such as `skip_serializing_if` silently breaks a
/// positional binary encoding; debug builds (and so every test) refuse a row that does not read
/// back.
fn encode_row<R: Record>(row: &Stored<'_, R>) -> Result<Vec<u8>> {
    let encoded = codec::encode(row);
    #[cfg(debug_assertions)]
    codec::decode::<Row<R>>(R::KIND.records, &encoded)?;
    Ok(encoded)
}

/// The tables every change is recorded in, open for one write or a batch of them.
struct Log<'t> {
    changes: Logged<'t, (u64, u64), &'static [u8]>,
    audit: Logged<'t, (u64, u64), &'static [u8]>,
}

/// A row being written, borrowed: encodes exactly as the [`Row`] it stands for (postcard is
/// positional, and a reference serializes as its value).
#[derive(serde::Serialize)]
struct Stored<'r, R> {
    id: u64,
    meta: &'r Meta,
    body: &'r R,
}

impl<'r, R> Stored<'r, R> {
    fn of(row: &'r Row<R>) -> Stored<'r, R> {
        Stored { id: row.id, meta: &row.meta, body: &row.body }
    }
}

fn prepare<R: Record>(body: &mut R) -> Result<()> {
    body.prepare().map_err(Error::Invalid)
}
