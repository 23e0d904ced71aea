//! The record stream: a snapshot as the rows themselves, table by table in key order, instead of
//! a redb file holding them. Writing one is a read of every row (no B-tree is built, nothing is
//! committed); reading one back checks every record and, for a restore, inserts the rows in key
//! order into a fresh redb file, redb's cheapest way to build one.
//!
//! The bytes of a key or value are redb's own encoding of it, read and written through [`Raw`],
//! a type that stands for a table's key or value type (same type name, width and order) and
//! hands over its stored bytes untouched. A table's name fixes its key and value types
//! ([`crate::tables`]), so the stream needs no schema of its own.
//!
//! Layout (every number little-endian; `len` is an unsigned LEB128 varint):
//!
//! ```text
//! "MYCROWS" 0x01                      magic and stream version
//! 'T' len name                        a table starts
//! 'R' len key len value               one row of the current table, keys strictly ascending
//! 'E' u64 rows                        the current table ends, with its row count
//! 'Z' u64 tables u64 rows             the end: nothing may follow
//! ```
//!
//! [`read`] refuses anything else: an unknown tag or table, a key or value that is not a
//! well-formed encoding of its type (so redb's own decoding of it cannot fail), keys out of
//! order or repeated, counts that differ from the rows seen, a missing end or bytes after it.
//! While reading it collects what a manifest records: row counts per table, live rows per user
//! and kind, each user's audit-chain head and the schema version.

use std::borrow::Cow;
use std::cmp::Ordering;
use std::collections::{BTreeMap, BTreeSet};
use std::io::{self, Read, Write};
use std::marker::PhantomData;

use redb::{Key, ReadTransaction, ReadableTable, ReadableTableMetadata, TableDefinition, TableHandle, TypeName, Value};

use crate::audit::AuditEvent;
use crate::tables::{AUDIT, AUDIT_ANCHORS};
use crate::tables::{
    BLOBS, CHANGES, COUNTERS, INDEX_PREFIX, LEGACY_MAP_TABLES, LIVE_COUNTS, MAP_PREFIX, META, RECORD_PREFIX,
    SYSTEM_PREFIX, USER_SEQ,
};
use crate::{Error, Result, codec, meta};

/// The first bytes of a record stream: a name and the stream's version.
pub const MAGIC: [u8; 8] = *b"MYCROWS\x01";

const TABLE: u8 = b'T';
const ROW: u8 = b'R';
const TABLE_END: u8 = b'E';
const END: u8 = b'Z';

/// The longest table name accepted.
const MAX_NAME: u64 = 4096;

/// A table's key or value type `T` as its stored bytes: the same type name, width and order as
/// `T` (so a table written through it is the table `T` reads), with no decoding either way.
#[derive(Debug)]
pub(crate) struct Raw<T>(PhantomData<T>);

impl<T: Value + 'static> Value for Raw<T> {
    type SelfType<'a>
        = &'a [u8]
    where
        Self: 'a;
    type AsBytes<'a>
        = &'a [u8]
    where
        Self: 'a;

    const NICHE: Option<&'static [u8]> = T::NICHE;

    fn fixed_width() -> Option<usize> {
        T::fixed_width()
    }

    fn from_bytes<'a>(data: &'a [u8]) -> &'a [u8]
    where
        Self: 'a,
    {
        data
    }

    fn as_bytes<'a, 'b: 'a>(value: &'a &'b [u8]) -> &'a [u8]
    where
        Self: 'b,
    {
        value
    }

    fn type_name() -> TypeName {
        T::type_name()
    }
}

impl<T: Key + 'static> Key for Raw<T> {
    fn compare(data1: &[u8], data2: &[u8]) -> Ordering {
        T::compare(data1, data2)
    }

    fn separator<'a>(left: &'a [u8], right: &'a [u8]) -> Cow<'a, [u8]> {
        T::separator(left, right)
    }

    fn min_encoded_key() -> Option<Cow<'static, [u8]>> {
        T::min_encoded_key()
    }
}

/// A table's key and value types, fixed by its name.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Layout {
    /// `rec:<kind>`, `changes`, `audit`: `(u64, u64) -> bytes`.
    Pair,
    /// `idx:<kind>`: `(u64, &str, &str, u64) -> ()`.
    Index,
    /// `sys:<name>`, `audit_anchors`: `u64 -> bytes`.
    Id,
    /// `map:<name>` (and the legacy map tables): `&str -> bytes`.
    Map,
    /// `blobs`: `(u64, &str) -> bytes`.
    Blobs,
    /// `counters`: `&str -> u64`.
    Counters,
    /// `user_seq`: `u64 -> u64`.
    UserSeq,
    /// `live_counts`: `(u64, &str) -> u64`.
    LiveCounts,
}

impl Layout {
    /// The layout of the table named `name`, or `None` for a name no table of the engine has.
    pub(crate) fn of(name: &str) -> Option<Layout> {
        Some(match name {
            n if n.starts_with(RECORD_PREFIX) => Layout::Pair,
            n if n.starts_with(INDEX_PREFIX) => Layout::Index,
            n if n.starts_with(SYSTEM_PREFIX) => Layout::Id,
            n if n.starts_with(MAP_PREFIX) || LEGACY_MAP_TABLES.contains(&n) => Layout::Map,
            n if n == CHANGES.name() || n == AUDIT.name() => Layout::Pair,
            n if n == AUDIT_ANCHORS.name() => Layout::Id,
            n if n == BLOBS.name() => Layout::Blobs,
            n if n == COUNTERS.name() => Layout::Counters,
            n if n == USER_SEQ.name() => Layout::UserSeq,
            n if n == LIVE_COUNTS.name() => Layout::LiveCounts,
            _ => return None,
        })
    }

    /// Whether `key` is a well-formed encoding of this layout's key type.
    fn key_ok(self, key: &[u8]) -> bool {
        match self {
            Layout::Pair => key.len() == 16,
            Layout::Id | Layout::UserSeq => key.len() == 8,
            Layout::Map | Layout::Counters => std::str::from_utf8(key).is_ok(),
            Layout::Blobs | Layout::LiveCounts => key.len() >= 8 && std::str::from_utf8(&key[8..]).is_ok(),
            Layout::Index => index_key(key).is_some(),
        }
    }

    /// Whether `value` is a well-formed encoding of this layout's value type.
    fn value_ok(self, value: &[u8]) -> bool {
        match self {
            Layout::Index => value.is_empty(),
            Layout::Counters | Layout::UserSeq | Layout::LiveCounts => value.len() == 8,
            Layout::Pair | Layout::Id | Layout::Map | Layout::Blobs => true,
        }
    }

    /// Orders two well-formed keys as the table does.
    fn compare(self, a: &[u8], b: &[u8]) -> Ordering {
        match self {
            Layout::Pair => <(u64, u64)>::compare(a, b),
            Layout::Index => <(u64, &str, &str, u64)>::compare(a, b),
            Layout::Id | Layout::UserSeq => <u64>::compare(a, b),
            Layout::Map | Layout::Counters => <&str>::compare(a, b),
            Layout::Blobs | Layout::LiveCounts => <(u64, &str)>::compare(a, b),
        }
    }
}

/// The parts of an index key `(u64, &str, &str, u64)` as redb encodes it: the two string lengths
/// (a one-byte length below 254, else 254 and a `u16` or 255 and a `u32`), then the four values.
fn index_key(key: &[u8]) -> Option<(&str, &str)> {
    fn len(bytes: &[u8]) -> Option<(usize, usize)> {
        match *bytes.first()? {
            254 => Some((u16::from_le_bytes(bytes.get(1..3)?.try_into().ok()?) as usize, 3)),
            255 => Some((u32::from_le_bytes(bytes.get(1..5)?.try_into().ok()?) as usize, 5)),
            n => Some((n as usize, 1)),
        }
    }
    let (first, a) = len(key)?;
    let (second, b) = len(key.get(a..)?)?;
    let at = a + b + 8;
    let end = at.checked_add(first)?.checked_add(second)?;
    if key.len() != end.checked_add(8)? {
        return None;
    }
    let name = std::str::from_utf8(&key[at..at + first]).ok()?;
    let value = std::str::from_utf8(&key[at + first..end]).ok()?;
    Some((name, value))
}

fn u64_at(bytes: &[u8]) -> u64 {
    bytes.get(..8).and_then(|b| b.try_into().ok()).map(u64::from_le_bytes).unwrap_or(0)
}

fn put_len(out: &mut impl Write, mut n: u64) -> io::Result<()> {
    let mut buf = [0u8; 10];
    let mut i = 0;
    loop {
        let byte = (n & 0x7F) as u8;
        n >>= 7;
        if n == 0 {
            buf[i] = byte;
            i += 1;
            break;
        }
        buf[i] = byte | 0x80;
        i += 1;
    }
    out.write_all(&buf[..i])
}

/// Rows written between two progress reports.
const PROGRESS_EVERY: u64 = 20_000;

/// Writes every table of `read` to `out` as a record stream; returns each table's row count.
/// `progress` hears `(rows written, rows in all)` every few thousand rows and at the end.
pub(crate) fn write(
    read: &ReadTransaction,
    out: &mut impl Write,
    progress: &mut dyn FnMut(u64, u64),
) -> Result<BTreeMap<String, u64>> {
    let mut tables = Vec::new();
    let mut rows_total = 0;
    for handle in read.list_tables()? {
        let name = handle.name().to_string();
        let Some(layout) = Layout::of(&name) else {
            return Err(Error::SnapshotInvalid(format!("no layout known for table {name}")));
        };
        rows_total += read.open_untyped_table(handle)?.len()?;
        tables.push((name, layout));
    }
    out.write_all(&MAGIC)?;
    let mut counts = BTreeMap::new();
    let mut written = 0u64;
    for (name, layout) in tables {
        out.write_all(&[TABLE])?;
        put_len(out, name.len() as u64)?;
        out.write_all(name.as_bytes())?;
        let mut each = |key: &[u8], value: &[u8]| -> Result<()> {
            out.write_all(&[ROW])?;
            put_len(out, key.len() as u64)?;
            out.write_all(key)?;
            put_len(out, value.len() as u64)?;
            out.write_all(value)?;
            written += 1;
            if written.is_multiple_of(PROGRESS_EVERY) {
                progress(written, rows_total);
            }
            Ok(())
        };
        let rows = match layout {
            Layout::Pair => scan::<(u64, u64), &[u8]>(read, &name, &mut each)?,
            Layout::Index => scan::<(u64, &str, &str, u64), ()>(read, &name, &mut each)?,
            Layout::Id => scan::<u64, &[u8]>(read, &name, &mut each)?,
            Layout::Map => scan::<&str, &[u8]>(read, &name, &mut each)?,
            Layout::Blobs => scan::<(u64, &str), &[u8]>(read, &name, &mut each)?,
            Layout::Counters => scan::<&str, u64>(read, &name, &mut each)?,
            Layout::UserSeq => scan::<u64, u64>(read, &name, &mut each)?,
            Layout::LiveCounts => scan::<(u64, &str), u64>(read, &name, &mut each)?,
        };
        out.write_all(&[TABLE_END])?;
        out.write_all(&rows.to_le_bytes())?;
        counts.insert(name, rows);
    }
    out.write_all(&[END])?;
    out.write_all(&(counts.len() as u64).to_le_bytes())?;
    out.write_all(&written.to_le_bytes())?;
    progress(written, rows_total);
    Ok(counts)
}

/// What [`scan`] hands each row to: its key and value as stored.
type EachRow<'a> = dyn FnMut(&[u8], &[u8]) -> Result<()> + 'a;

/// Hands every row of the table `name` (key type `K`, value type `V`) to `each` as stored bytes.
fn scan<K: Key + 'static, V: Value + 'static>(
    read: &ReadTransaction,
    name: &str,
    each: &mut EachRow<'_>,
) -> Result<u64> {
    let table = read.open_table(TableDefinition::<Raw<K>, Raw<V>>::new(name))?;
    let mut rows = 0;
    for entry in table.iter()? {
        let (key, value) = entry?;
        each(key.value(), value.value())?;
        rows += 1;
    }
    Ok(rows)
}

/// What a stream holds, as a manifest records it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Summary {
    /// Row count of every table.
    pub tables: BTreeMap<String, u64>,
    /// Live rows per user and record kind (`live_counts`).
    pub users: BTreeMap<u64, BTreeMap<String, u64>>,
    /// Each user's audit-chain head: the newest event's hash, else the anchor.
    pub audit_heads: BTreeMap<u64, String>,
    /// The schema version recorded in `map:meta` (0 when none is).
    pub schema_version: u32,
    /// Each user's last change-feed sequence (`user_seq`).
    pub seqs: BTreeMap<u64, u64>,
}

/// Where [`read`] puts the rows it checked (a restore inserts them; a check drops them).
pub(crate) trait Sink {
    fn table(&mut self, name: &str, layout: Layout) -> Result<()>;
    fn row(&mut self, key: &[u8], value: &[u8]) -> Result<()>;
}

/// A sink that keeps nothing: reading is then a check of the stream.
pub(crate) struct Discard;

impl Sink for Discard {
    fn table(&mut self, _name: &str, _layout: Layout) -> Result<()> {
        Ok(())
    }

    fn row(&mut self, _key: &[u8], _value: &[u8]) -> Result<()> {
        Ok(())
    }
}

fn invalid(what: impl std::fmt::Display) -> Error {
    Error::SnapshotInvalid(format!("the record stream is invalid: {what}"))
}

/// Reads `n` bytes into `buf` (replacing what it held), growing it only as bytes arrive, so a
/// length that lies costs no more memory than the input has.
fn read_into(source: &mut impl Read, n: u64, buf: &mut Vec<u8>) -> Result<()> {
    buf.clear();
    let got = source.by_ref().take(n).read_to_end(buf).map_err(read_failed)?;
    if got as u64 != n {
        return Err(invalid("it ends inside a record"));
    }
    Ok(())
}

fn read_failed(e: io::Error) -> Error {
    if e.kind() == io::ErrorKind::InvalidData || e.kind() == io::ErrorKind::UnexpectedEof {
        invalid(e)
    } else {
        Error::Io(e)
    }
}

fn byte(source: &mut impl Read) -> Result<u8> {
    let mut one = [0u8; 1];
    source.read_exact(&mut one).map_err(|e| match e.kind() {
        io::ErrorKind::UnexpectedEof => invalid("it ends before its end mark"),
        _ => read_failed(e),
    })?;
    Ok(one[0])
}

fn word(source: &mut impl Read) -> Result<u64> {
    let mut bytes = [0u8; 8];
    source.read_exact(&mut bytes).map_err(|e| match e.kind() {
        io::ErrorKind::UnexpectedEof => invalid("it ends inside a record"),
        _ => read_failed(e),
    })?;
    Ok(u64::from_le_bytes(bytes))
}

fn len(source: &mut impl Read) -> Result<u64> {
    let mut n = 0u64;
    for shift in (0..64).step_by(7) {
        let b = byte(source)?;
        n |= u64::from(b & 0x7F) << shift;
        if b & 0x80 == 0 {
            if shift == 63 && b > 1 {
                break;
            }
            return Ok(n);
        }
    }
    Err(invalid("a length is out of range"))
}

/// The table being read.
struct Current {
    name: String,
    layout: Layout,
    rows: u64,
    last_key: Option<Vec<u8>>,
}

/// Reads and checks a record stream from `source`, handing every row to `sink`; returns what
/// it holds. Any input gives a summary or an error, never a panic.
pub(crate) fn read(source: &mut impl Read, sink: &mut dyn Sink) -> Result<Summary> {
    let mut magic = [0u8; 8];
    source.read_exact(&mut magic).map_err(|_| invalid("it does not start with the stream's magic"))?;
    if magic != MAGIC {
        return Err(invalid("it does not start with the stream's magic"));
    }
    let mut summary = Summary::default();
    let mut seen = BTreeSet::new();
    let mut current: Option<Current> = None;
    let (mut key, mut value) = (Vec::new(), Vec::new());
    let mut total = 0u64;
    // The audit chains: anchors, and the newest event of each user (the last row of its range).
    let mut anchors = BTreeMap::new();
    let mut newest: BTreeMap<u64, String> = BTreeMap::new();
    let mut pending_head: Option<(u64, Vec<u8>)> = None;
    loop {
        match byte(source)? {
            TABLE => {
                if current.is_some() {
                    return Err(invalid("a table starts before the previous one ended"));
                }
                let n = len(source)?;
                if n > MAX_NAME {
                    return Err(invalid("a table name is too long"));
                }
                read_into(source, n, &mut key)?;
                let name = std::str::from_utf8(&key).map_err(|_| invalid("a table name is not UTF-8"))?.to_string();
                let layout = Layout::of(&name).ok_or_else(|| invalid(format!("no layout known for table {name}")))?;
                if !seen.insert(name.clone()) {
                    return Err(invalid(format!("table {name} appears twice")));
                }
                sink.table(&name, layout)?;
                current = Some(Current { name, layout, rows: 0, last_key: None });
            }
            ROW => {
                let Some(table) = current.as_mut() else {
                    return Err(invalid("a row outside any table"));
                };
                let n = len(source)?;
                read_into(source, n, &mut key)?;
                let n = len(source)?;
                read_into(source, n, &mut value)?;
                let layout = table.layout;
                if !layout.key_ok(&key) || !layout.value_ok(&value) {
                    return Err(invalid(format!("a row of {} is not well formed", table.name)));
                }
                match &mut table.last_key {
                    Some(last) => {
                        if layout.compare(&last[..], &key) != Ordering::Less {
                            return Err(invalid(format!("the keys of {} are out of order", table.name)));
                        }
                        last.clear();
                        last.extend_from_slice(&key);
                    }
                    None => table.last_key = Some(key.clone()),
                }
                collect(&table.name, &key, &value, &mut summary, &mut anchors, &mut newest, &mut pending_head)?;
                sink.row(&key, &value)?;
                table.rows += 1;
                total += 1;
            }
            TABLE_END => {
                let Some(table) = current.take() else {
                    return Err(invalid("a table end outside any table"));
                };
                if word(source)? != table.rows {
                    return Err(invalid(format!("the row count of {} differs from its rows", table.name)));
                }
                summary.tables.insert(table.name, table.rows);
            }
            END => {
                if current.is_some() {
                    return Err(invalid("it ends inside a table"));
                }
                if word(source)? != summary.tables.len() as u64 || word(source)? != total {
                    return Err(invalid("its end mark's counts differ from what it holds"));
                }
                let mut rest = [0u8; 1];
                if source.read(&mut rest).map_err(read_failed)? != 0 {
                    return Err(invalid("bytes follow its end mark"));
                }
                break;
            }
            other => return Err(invalid(format!("unknown record tag {other}"))),
        }
    }
    if let Some((user, bytes)) = pending_head.take() {
        newest.insert(user, head_of(&bytes)?);
    }
    summary.audit_heads = anchors;
    summary.audit_heads.extend(newest);
    Ok(summary)
}

fn head_of(bytes: &[u8]) -> Result<String> {
    let event: AuditEvent = codec::decode("audit", bytes)?;
    Ok(event.hash)
}

/// Notes what the manifest records from one (well-formed) row.
fn collect(
    table: &str,
    key: &[u8],
    value: &[u8],
    summary: &mut Summary,
    anchors: &mut BTreeMap<u64, String>,
    newest: &mut BTreeMap<u64, String>,
    pending_head: &mut Option<(u64, Vec<u8>)>,
) -> Result<()> {
    if table == LIVE_COUNTS.name() {
        let kind = std::str::from_utf8(&key[8..]).unwrap_or_default().to_string();
        summary.users.entry(u64_at(key)).or_default().insert(kind, u64_at(value));
    } else if table == AUDIT_ANCHORS.name() {
        anchors.insert(u64_at(key), String::from_utf8_lossy(value).into_owned());
    } else if table == AUDIT.name() {
        let user = u64_at(key);
        match pending_head {
            Some((held, bytes)) if *held == user => {
                bytes.clear();
                bytes.extend_from_slice(value);
            }
            _ => {
                if let Some((held, bytes)) = pending_head.take() {
                    newest.insert(held, head_of(&bytes)?);
                }
                *pending_head = Some((user, value.to_vec()));
            }
        }
    } else if table == USER_SEQ.name() {
        summary.seqs.insert(u64_at(key), u64_at(value));
    } else if table == META.name() && key == meta::VERSION_KEY.as_bytes() {
        summary.schema_version = meta::decode_u32(value);
    }
    Ok(())
}

/// A table written through [`Raw`] types: of the database being restored, or by the redo
/// log's replay.
pub(crate) trait RawTable {
    fn put(&mut self, key: &[u8], value: &[u8]) -> Result<()>;
    fn remove(&mut self, key: &[u8]) -> Result<()>;
}

impl<K: Key + 'static, V: Value + 'static> RawTable for redb::Table<'_, Raw<K>, Raw<V>> {
    fn put(&mut self, key: &[u8], value: &[u8]) -> Result<()> {
        self.insert(key, value)?;
        Ok(())
    }

    fn remove(&mut self, key: &[u8]) -> Result<()> {
        redb::Table::remove(self, key)?;
        Ok(())
    }
}

/// A sink inserting every row into a redb write transaction, in the order read (key order),
/// and handing it to `tap` too.
struct Insert<'t, 'a> {
    write: &'t redb::WriteTransaction,
    table: Option<Box<dyn RawTable + 't>>,
    tap: &'a mut dyn Sink,
}

/// Fills the empty database `db` from a record stream: one write transaction inserting every
/// table's rows in key order (each row checked as it is read, and handed to `tap` after it is
/// inserted), committed once. Returns what the stream holds.
pub(crate) fn fill(source: &mut impl Read, db: &redb::Database, tap: &mut dyn Sink) -> Result<Summary> {
    let write = db.begin_write()?;
    let summary = read(source, &mut Insert { write: &write, table: None, tap })?;
    write.commit()?;
    Ok(summary)
}

fn open<'t, K: Key + 'static, V: Value + 'static>(
    write: &'t redb::WriteTransaction,
    name: &str,
) -> Result<Box<dyn RawTable + 't>> {
    Ok(Box::new(write.open_table(TableDefinition::<Raw<K>, Raw<V>>::new(name))?))
}

/// Opens table `name` of layout `layout` in `write`, for rows as their stored bytes.
pub(crate) fn open_raw<'t>(
    write: &'t redb::WriteTransaction,
    name: &str,
    layout: Layout,
) -> Result<Box<dyn RawTable + 't>> {
    match layout {
        Layout::Pair => open::<(u64, u64), &[u8]>(write, name),
        Layout::Index => open::<(u64, &str, &str, u64), ()>(write, name),
        Layout::Id => open::<u64, &[u8]>(write, name),
        Layout::Map => open::<&str, &[u8]>(write, name),
        Layout::Blobs => open::<(u64, &str), &[u8]>(write, name),
        Layout::Counters => open::<&str, u64>(write, name),
        Layout::UserSeq => open::<u64, u64>(write, name),
        Layout::LiveCounts => open::<(u64, &str), u64>(write, name),
    }
}

impl Sink for Insert<'_, '_> {
    fn table(&mut self, name: &str, layout: Layout) -> Result<()> {
        self.tap.table(name, layout)?;
        // The previous table's handle goes first: one table open at a time.
        self.table = None;
        self.table = Some(open_raw(self.write, name, layout)?);
        Ok(())
    }

    fn row(&mut self, key: &[u8], value: &[u8]) -> Result<()> {
        match self.table.as_mut() {
            Some(table) => table.put(key, value)?,
            None => return Err(invalid("a row outside any table")),
        }
        self.tap.row(key, value)
    }
}

/// Checks a decoded record stream held in memory (for fuzzing and tests): its summary, or why
/// it is refused.
pub fn check_bytes(bytes: &[u8]) -> Result<Summary> {
    read(&mut &bytes[..], &mut Discard)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;
    use redb::{Database, ReadableDatabase};

    #[test]
    fn index_keys_parse_as_redb_encodes_them() {
        let (medium, long) = ("x".repeat(300), "y".repeat(70_000));
        for (name, value) in [("email", "a@example.org"), ("", ""), ("n", medium.as_str()), ("k", long.as_str())] {
            let bytes = <(u64, &str, &str, u64)>::as_bytes(&(7, name, value, 9));
            assert!(Layout::Index.key_ok(&bytes), "{name} {}", value.len());
            assert_eq!(index_key(&bytes), Some((name, value)));
            assert!(!Layout::Index.key_ok(&bytes[..bytes.len() - 1]));
        }
    }

    #[test]
    fn lengths_round_trip_and_overlong_ones_are_refused() {
        for n in [0u64, 1, 127, 128, 300, 1 << 35, u64::MAX] {
            let mut out = Vec::new();
            put_len(&mut out, n).unwrap();
            assert_eq!(len(&mut &out[..]).unwrap(), n);
        }
        assert!(len(&mut &[0xFFu8; 11][..]).is_err());
        assert!(len(&mut &[0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0x02][..]).is_err());
    }

    #[test]
    fn a_bad_stream_is_refused_without_a_panic() {
        assert!(check_bytes(b"").is_err());
        assert!(check_bytes(b"MYCROWS\x01").is_err(), "no end mark");
        let mut empty = MAGIC.to_vec();
        empty.push(END);
        empty.extend_from_slice(&0u64.to_le_bytes());
        empty.extend_from_slice(&0u64.to_le_bytes());
        assert_eq!(check_bytes(&empty).unwrap(), Summary::default());
        let mut trailing = empty.clone();
        trailing.push(0);
        assert!(check_bytes(&trailing).is_err(), "bytes after the end");
        let mut unknown = MAGIC.to_vec();
        unknown.extend_from_slice(b"T\x04nope");
        assert!(check_bytes(&unknown).unwrap_err().to_string().contains("no layout"));
        // A huge claimed length costs nothing: the input ends first.
        let mut huge = MAGIC.to_vec();
        huge.extend_from_slice(b"T\x0brec:contactR");
        huge.extend_from_slice(&[0xFF, 0xFF, 0xFF, 0xFF, 0x0F]);
        assert!(check_bytes(&huge).is_err());
    }

    /// A database with a row in every layout, keys that sort differently as bytes and as
    /// numbers, and an audit chain with an anchor.
    fn database(path: &std::path::Path) -> Database {
        let db = Database::create(path).unwrap();
        let write = db.begin_write().unwrap();
        {
            let mut records = write.open_table(crate::tables::record_table("rec:contact")).unwrap();
            for id in [1u64, 2, 255, 256, 70_000] {
                records.insert((1, id), format!("row {id}").as_bytes()).unwrap();
                records.insert((2, id), b"x".as_slice()).unwrap();
            }
            let mut index = write.open_table(crate::tables::index_table("idx:contact")).unwrap();
            index.insert((1, "email", "b@example.org", 2), ()).unwrap();
            index.insert((1, "email", "a@example.org", 1), ()).unwrap();
            index.insert((1, "name", "long".repeat(100).as_str(), 256), ()).unwrap();
            let mut blobs = write.open_table(BLOBS).unwrap();
            blobs.insert((1, "1.jpg"), [0xFFu8; 20_000].as_slice()).unwrap();
            let mut counts = write.open_table(LIVE_COUNTS).unwrap();
            counts.insert((1, "contact"), 5).unwrap();
            counts.insert((2, "contact"), 5).unwrap();
            let mut counters = write.open_table(COUNTERS).unwrap();
            counters.insert("id:contact", 70_000).unwrap();
            let mut seq = write.open_table(USER_SEQ).unwrap();
            seq.insert(1, 12).unwrap();
            let mut meta = write.open_table(META).unwrap();
            meta.insert(meta::VERSION_KEY, 9u32.to_le_bytes().as_slice()).unwrap();
            let mut anchors = write.open_table(AUDIT_ANCHORS).unwrap();
            anchors.insert(3, b"anchor-of-3".as_slice()).unwrap();
            anchors.insert(1, b"anchor-of-1".as_slice()).unwrap();
            let mut audit = write.open_table(AUDIT).unwrap();
            for (user, seq) in [(1u64, 4u64), (1, 5), (2, 1)] {
                let event = AuditEvent {
                    seq,
                    kind: "contact".into(),
                    record_id: 1,
                    action: crate::changes::Op::Updated,
                    revision: seq,
                    at: jiff::Timestamp::from_second(1_800_000_000).unwrap(),
                    changes: Vec::new(),
                    prev_hash: String::new(),
                    hash: format!("hash-{user}-{seq}"),
                };
                audit.insert((user, seq), codec::encode(&event).as_slice()).unwrap();
            }
            write.open_table(crate::tables::system_table("sys:empty")).unwrap();
        }
        write.commit().unwrap();
        db
    }

    #[test]
    fn written_then_read_gives_the_same_rows_and_what_the_manifest_records() {
        let dir = tempfile::tempdir().unwrap();
        let db = database(&dir.path().join("a.redb"));
        let read_txn = db.begin_read().unwrap();
        let mut stream = Vec::new();
        let counts = write(&read_txn, &mut stream, &mut |_, _| {}).unwrap();
        let summary = check_bytes(&stream).unwrap();
        assert_eq!(summary.tables, counts);
        assert_eq!(summary.tables.get("sys:empty"), Some(&0));
        assert_eq!(summary.schema_version, 9);
        let users: BTreeMap<u64, BTreeMap<String, u64>> =
            [1, 2].into_iter().map(|u| (u, BTreeMap::from([("contact".to_string(), 5)]))).collect();
        assert_eq!(summary.users, users);
        let heads = crate::audit::heads(&read_txn).unwrap();
        assert_eq!(summary.audit_heads, heads);
        assert_eq!(heads.get(&3).map(String::as_str), Some("anchor-of-3"));
        assert_eq!(heads.get(&1).map(String::as_str), Some("hash-1-5"));

        // Restored into a fresh file, every table holds the same rows, read with its own types.
        let copy = Database::create(dir.path().join("b.redb")).unwrap();
        assert_eq!(fill(&mut &stream[..], &copy, &mut Discard).unwrap(), summary);
        let restored = copy.begin_read().unwrap();
        let mut again = Vec::new();
        assert_eq!(write(&restored, &mut again, &mut |_, _| {}).unwrap(), counts);
        assert_eq!(again, stream, "the restored database streams to the same bytes");
        let index = restored.open_table(crate::tables::index_table("idx:contact")).unwrap();
        let first = index.iter().unwrap().next().unwrap().unwrap().0;
        assert_eq!(first.value(), (1, "email", "a@example.org", 1));
    }

    #[test]
    fn every_cut_and_every_flipped_tag_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let db = database(&dir.path().join("a.redb"));
        let mut stream = Vec::new();
        write(&db.begin_read().unwrap(), &mut stream, &mut |_, _| {}).unwrap();
        for cut in 0..stream.len() {
            assert!(check_bytes(&stream[..cut]).is_err(), "cut at {cut}");
        }
        // Rows swapped: keys out of order.
        let summary = check_bytes(&stream).unwrap();
        assert!(summary.tables.values().sum::<u64>() > 0);
        for at in 8..stream.len() {
            let mut changed = stream.clone();
            changed[at] ^= 0x40;
            // Never a panic; most changes are refused (a change inside a value may be accepted).
            let _ = check_bytes(&changed);
        }
    }
}
