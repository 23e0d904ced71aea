//! The audit log: every change to a user's records appends an event, in the same transaction,
//! to that user's hash chain. Each event holds what changed (the fields that differ, before and
//! after, as JSON) and a SHA-256 over the previous event's hash and its own content, so editing
//! or removing a stored event breaks verification. Retention keeps the chain verifiable by
//! remembering the hash of the last event it removed (the anchor).

use jiff::Timestamp;
use redb::{ReadTransaction, ReadableTable, TableError, WriteTransaction};
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use crate::changes::Op;
use crate::tables::{AUDIT, AUDIT_ANCHORS};
use crate::{Error, Result, codec};

/// One field that changed: name, value before and after (JSON text; `null` when absent).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct FieldChange {
    pub field: String,
    pub before: String,
    pub after: String,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct AuditEvent {
    pub seq: u64,
    pub kind: String,
    pub record_id: u64,
    pub action: Op,
    /// The record's revision after the change.
    pub revision: u64,
    #[serde(with = "crate::codec::micros")]
    pub at: Timestamp,
    pub changes: Vec<FieldChange>,
    /// Hex SHA-256 of the previous event (or the anchor; empty for the first).
    pub prev_hash: String,
    /// Hex SHA-256 over `prev_hash` and this event's content.
    pub hash: String,
}

impl AuditEvent {
    /// The hash this event must carry given its content and `prev_hash`.
    pub fn compute_hash(&self) -> String {
        let content = (
            self.seq,
            &self.kind,
            self.record_id,
            self.action,
            self.revision,
            self.at.as_microsecond(),
            &self.changes,
            &self.prev_hash,
        );
        let bytes = postcard::to_allocvec(&content).unwrap_or_default();
        hex::encode(Sha256::digest(bytes))
    }
}

/// Top-level fields of `before` and `after` (JSON objects) that differ, except `skip`.
pub fn diff(before: &serde_json::Value, after: &serde_json::Value, skip: &[&str]) -> Vec<FieldChange> {
    let empty = serde_json::Map::new();
    let (b, a) = (before.as_object().unwrap_or(&empty), after.as_object().unwrap_or(&empty));
    let mut fields: Vec<&String> = b.keys().chain(a.keys()).filter(|k| !skip.contains(&k.as_str())).collect();
    fields.sort();
    fields.dedup();
    fields
        .into_iter()
        .filter(|f| b.get(*f) != a.get(*f))
        .map(|f| FieldChange {
            field: f.clone(),
            before: b.get(f).map(|v| v.to_string()).unwrap_or_else(|| "null".into()),
            after: a.get(f).map(|v| v.to_string()).unwrap_or_else(|| "null".into()),
        })
        .collect()
}

/// The fields of creating `body` (from nothing): what [`diff`] of null and the body's JSON gives,
/// without building the body's JSON tree. Every top-level field but `skip`, by name, each as the
/// JSON text of its value (an object or a list goes through a tree of its own, so its members are
/// in the order the whole tree would give). Skipped fields are never serialized. A bulk import
/// creates thousands of rows; this is most of their audit work. A body that is not a plain struct
/// (a map, a flattened struct) takes the tree's way.
pub fn created<T: Serialize>(body: &T, skip: &[&str]) -> Vec<FieldChange> {
    let mut fields = Fields { skip, out: Vec::new() };
    if body.serialize(&mut fields).is_err() {
        return diff(&serde_json::Value::Null, &serde_json::to_value(body).unwrap_or_default(), skip);
    }
    let mut out = fields.out;
    out.sort_by(|a, b| a.field.cmp(&b.field));
    out
}

/// A serializer that takes a struct apart into its fields' JSON texts (see [`created`]); anything
/// but a struct at the top is refused with [`NotAStruct`].
struct Fields<'s> {
    skip: &'s [&'s str],
    out: Vec<FieldChange>,
}

#[derive(Debug)]
struct NotAStruct;

impl std::fmt::Display for NotAStruct {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("not a struct")
    }
}

impl std::error::Error for NotAStruct {}

impl serde::ser::Error for NotAStruct {
    fn custom<M: std::fmt::Display>(_: M) -> Self {
        NotAStruct
    }
}

/// Serializer methods that refuse their value (everything but a struct).
macro_rules! refuse {
    ($($name:ident($($arg:ty),*)),* $(,)?) => {
        $(fn $name(self, $(_: $arg),*) -> std::result::Result<(), NotAStruct> { Err(NotAStruct) })*
    };
}

impl<'a> serde::Serializer for &'a mut Fields<'_> {
    type Ok = ();
    type Error = NotAStruct;
    type SerializeSeq = serde::ser::Impossible<(), NotAStruct>;
    type SerializeTuple = serde::ser::Impossible<(), NotAStruct>;
    type SerializeTupleStruct = serde::ser::Impossible<(), NotAStruct>;
    type SerializeTupleVariant = serde::ser::Impossible<(), NotAStruct>;
    type SerializeMap = serde::ser::Impossible<(), NotAStruct>;
    type SerializeStruct = Self;
    type SerializeStructVariant = serde::ser::Impossible<(), NotAStruct>;

    refuse!(
        serialize_bool(bool),
        serialize_i8(i8),
        serialize_i16(i16),
        serialize_i32(i32),
        serialize_i64(i64),
        serialize_u8(u8),
        serialize_u16(u16),
        serialize_u32(u32),
        serialize_u64(u64),
        serialize_f32(f32),
        serialize_f64(f64),
        serialize_char(char),
        serialize_str(&str),
        serialize_bytes(&[u8]),
        serialize_none(),
        serialize_unit(),
        serialize_unit_struct(&'static str),
        serialize_unit_variant(&'static str, u32, &'static str),
    );

    fn serialize_some<T: ?Sized + Serialize>(self, _: &T) -> std::result::Result<(), NotAStruct> {
        Err(NotAStruct)
    }
    fn serialize_newtype_struct<T: ?Sized + Serialize>(
        self,
        _: &'static str,
        _: &T,
    ) -> std::result::Result<(), NotAStruct> {
        Err(NotAStruct)
    }
    fn serialize_newtype_variant<T: ?Sized + Serialize>(
        self,
        _: &'static str,
        _: u32,
        _: &'static str,
        _: &T,
    ) -> std::result::Result<(), NotAStruct> {
        Err(NotAStruct)
    }
    fn serialize_seq(self, _: Option<usize>) -> std::result::Result<Self::SerializeSeq, NotAStruct> {
        Err(NotAStruct)
    }
    fn serialize_tuple(self, _: usize) -> std::result::Result<Self::SerializeTuple, NotAStruct> {
        Err(NotAStruct)
    }
    fn serialize_tuple_struct(
        self,
        _: &'static str,
        _: usize,
    ) -> std::result::Result<Self::SerializeTupleStruct, NotAStruct> {
        Err(NotAStruct)
    }
    fn serialize_tuple_variant(
        self,
        _: &'static str,
        _: u32,
        _: &'static str,
        _: usize,
    ) -> std::result::Result<Self::SerializeTupleVariant, NotAStruct> {
        Err(NotAStruct)
    }
    fn serialize_map(self, _: Option<usize>) -> std::result::Result<Self::SerializeMap, NotAStruct> {
        Err(NotAStruct)
    }
    fn serialize_struct(self, _: &'static str, _: usize) -> std::result::Result<Self, NotAStruct> {
        Ok(self)
    }
    fn serialize_struct_variant(
        self,
        _: &'static str,
        _: u32,
        _: &'static str,
        _: usize,
    ) -> std::result::Result<Self::SerializeStructVariant, NotAStruct> {
        Err(NotAStruct)
    }
}

impl serde::ser::SerializeStruct for &mut Fields<'_> {
    type Ok = ();
    type Error = NotAStruct;

    fn serialize_field<T: ?Sized + Serialize>(
        &mut self,
        field: &'static str,
        value: &T,
    ) -> std::result::Result<(), NotAStruct> {
        if self.skip.contains(&field) {
            return Ok(());
        }
        let text = serde_json::to_string(value).map_err(|_| NotAStruct)?;
        let after = match text.as_bytes().first() {
            Some(b'{' | b'[') => serde_json::to_value(value).map_err(|_| NotAStruct)?.to_string(),
            _ => text,
        };
        self.out.push(FieldChange { field: field.to_string(), before: "null".into(), after });
        Ok(())
    }

    fn end(self) -> std::result::Result<(), NotAStruct> {
        Ok(())
    }
}

/// The hash the next event of `user` chains to: the last event's, or the chain's anchor.
pub(crate) fn last_hash(txn: &WriteTransaction, user: u64) -> Result<String> {
    let table = txn.open_table(AUDIT)?;
    let last = table.range((user, 0)..=(user, u64::MAX))?.next_back().transpose()?;
    if let Some((_, bytes)) = last {
        let event: AuditEvent = codec::decode("audit", bytes.value())?;
        return Ok(event.hash);
    }
    let anchors = txn.open_table(AUDIT_ANCHORS)?;
    Ok(anchors.get(user)?.map(|v| String::from_utf8_lossy(v.value()).into_owned()).unwrap_or_default())
}

/// An event about to be appended, its parts borrowed (a bulk write's field lists are not
/// copied): stored exactly as the [`AuditEvent`] it stands for.
pub(crate) struct NewEvent<'a> {
    pub seq: u64,
    pub kind: &'a str,
    pub record_id: u64,
    pub action: Op,
    pub revision: u64,
    pub at: Timestamp,
    pub changes: ChangeList<'a>,
}

/// An event's field list: as fields, or already in postcard (encoded ahead of the writer).
#[derive(Clone, Copy)]
pub(crate) enum ChangeList<'a> {
    Listed(&'a [FieldChange]),
    Encoded(&'a [u8]),
}

impl NewEvent<'_> {
    /// The stored form of this event chained after `prev_hash`, and its hash. Serialized once:
    /// postcard writes a struct or tuple as its fields one after the other, so the stored event
    /// is the content [`AuditEvent::compute_hash`] hashes (every field but `hash`) followed by the
    /// hash, and that content is the event's head, its field list and the previous hash in turn.
    pub(crate) fn encode(&self, prev_hash: &str) -> (Vec<u8>, String) {
        let head = (self.seq, self.kind, self.record_id, self.action, self.revision, self.at.as_microsecond());
        let mut bytes = codec::encode(&head);
        match self.changes {
            ChangeList::Listed(fields) => bytes = postcard::to_extend(fields, bytes).expect("postcard-serializable"),
            ChangeList::Encoded(encoded) => bytes.extend_from_slice(encoded),
        }
        let bytes = postcard::to_extend(prev_hash, bytes).expect("a string is postcard-serializable");
        let hash = hex::encode(Sha256::digest(&bytes[1..]));
        let bytes = postcard::to_extend(&hash, bytes).expect("a string is postcard-serializable");
        (bytes, hash)
    }
}

/// A user's events, oldest first, after `seq`.
pub(crate) fn events(txn: &ReadTransaction, user: u64, after: u64, limit: usize) -> Result<Vec<AuditEvent>> {
    let table = match txn.open_table(AUDIT) {
        Ok(t) => t,
        Err(TableError::TableDoesNotExist(_)) => return Ok(Vec::new()),
        Err(e) => return Err(e.into()),
    };
    let range = table.range((user, after.saturating_add(1))..=(user, u64::MAX))?;
    range.take(limit).map(|entry| codec::decode("audit", entry?.1.value())).collect()
}

/// A user's events newest first, those `keep` accepts, at most `limit` of them (a page of the
/// trail as a person reads it, walking back from the newest).
pub(crate) fn latest_events(
    txn: &ReadTransaction,
    user: u64,
    limit: usize,
    mut keep: impl FnMut(&AuditEvent) -> bool,
) -> Result<Vec<AuditEvent>> {
    let table = match txn.open_table(AUDIT) {
        Ok(t) => t,
        Err(TableError::TableDoesNotExist(_)) => return Ok(Vec::new()),
        Err(e) => return Err(e.into()),
    };
    let mut out = Vec::new();
    for entry in table.range((user, 0)..=(user, u64::MAX))?.rev() {
        if out.len() >= limit {
            break;
        }
        let event: AuditEvent = codec::decode("audit", entry?.1.value())?;
        if keep(&event) {
            out.push(event);
        }
    }
    Ok(out)
}

/// Every user's chain head: the newest event's hash, or the anchor when retention removed every
/// event (users with neither have no entry). What a backup manifest records so a restore can
/// prove it brought back the chain it saved.
pub(crate) fn heads(txn: &ReadTransaction) -> Result<std::collections::BTreeMap<u64, String>> {
    let mut heads = std::collections::BTreeMap::new();
    match txn.open_table(AUDIT_ANCHORS) {
        Ok(anchors) => {
            for entry in anchors.iter()? {
                let (user, hash) = entry?;
                heads.insert(user.value(), String::from_utf8_lossy(hash.value()).into_owned());
            }
        }
        Err(TableError::TableDoesNotExist(_)) => {}
        Err(e) => return Err(e.into()),
    }
    let table = match txn.open_table(AUDIT) {
        Ok(t) => t,
        Err(TableError::TableDoesNotExist(_)) => return Ok(heads),
        Err(e) => return Err(e.into()),
    };
    // One backwards step per user: the last key of a user's range is its head.
    let mut upper = u64::MAX;
    loop {
        let Some(entry) = table.range((0, 0)..=(upper, u64::MAX))?.next_back() else { break };
        let (key, bytes) = entry?;
        let (user, _) = key.value();
        let event: AuditEvent = codec::decode("audit", bytes.value())?;
        heads.insert(user, event.hash);
        let Some(next) = user.checked_sub(1) else { break };
        upper = next;
    }
    Ok(heads)
}

/// Walks `user`'s chain from its anchor; `Err` names the first event that does not verify.
pub(crate) fn verify(txn: &ReadTransaction, user: u64) -> Result<u64> {
    let anchor = match txn.open_table(AUDIT_ANCHORS) {
        Ok(t) => t.get(user)?.map(|v| String::from_utf8_lossy(v.value()).into_owned()).unwrap_or_default(),
        Err(TableError::TableDoesNotExist(_)) => String::new(),
        Err(e) => return Err(e.into()),
    };
    let mut prev = anchor;
    let mut checked = 0;
    for event in events(txn, user, 0, usize::MAX)? {
        if event.prev_hash != prev || event.compute_hash() != event.hash {
            return Err(Error::Corrupt {
                table: "audit".into(),
                reason: format!("event {} does not verify", event.seq),
            });
        }
        prev = event.hash;
        checked += 1;
    }
    Ok(checked)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_borrowed_event_is_stored_as_the_owned_event_would_be() {
        let changes = vec![
            FieldChange { field: "card".into(), before: "null".into(), after: "\"{\\\"name\\\": 1}\"".into() },
            FieldChange { field: "uid".into(), before: "\"a\"".into(), after: "\"b\"".into() },
        ];
        let at = Timestamp::from_microsecond(1_732_400_000_123_456).unwrap();
        let encoded = postcard::to_allocvec(&changes).unwrap();
        let event = |changes| NewEvent {
            seq: 300,
            kind: "contacts",
            record_id: 70_000,
            action: Op::Created,
            revision: 1,
            at,
            changes,
        };
        let (bytes, hash) = event(ChangeList::Listed(&changes)).encode("ab12");
        assert_eq!(event(ChangeList::Encoded(&encoded)).encode("ab12"), (bytes.clone(), hash.clone()), "encoded ahead");
        let mut owned = AuditEvent {
            seq: 300,
            kind: "contacts".into(),
            record_id: 70_000,
            action: Op::Created,
            revision: 1,
            at,
            changes,
            prev_hash: "ab12".into(),
            hash: String::new(),
        };
        owned.hash = owned.compute_hash();
        assert_eq!(hash, owned.hash);
        assert_eq!(bytes, codec::encode(&owned));
        assert_eq!(codec::decode::<AuditEvent>("audit", &bytes).unwrap(), owned);
    }

    #[derive(Serialize)]
    struct Inner {
        zeta: u8,
        alpha: &'static str,
    }

    #[derive(Serialize)]
    struct Body {
        name: &'static str,
        quoted: &'static str,
        count: i64,
        ratio: f64,
        flag: bool,
        missing: Option<u8>,
        nested: Inner,
        list: Vec<Inner>,
        skipped: &'static str,
    }

    /// The creation list without the JSON tree is the tree's diff, text for text (objects in
    /// the tree's key order, escapes, numbers, null).
    #[test]
    fn created_gives_what_the_diff_from_null_gives() {
        let body = Body {
            name: "Zoë \"Ada\" Lovelace",
            quoted: "line\nbreak \\ tab\t \u{1}",
            count: -42,
            ratio: 0.1,
            flag: true,
            missing: None,
            nested: Inner { zeta: 1, alpha: "a" },
            list: vec![Inner { zeta: 2, alpha: "b" }],
            skipped: "x",
        };
        let tree = diff(&serde_json::Value::Null, &serde_json::to_value(&body).expect("value"), &["skipped"]);
        assert_eq!(created(&body, &["skipped"]), tree);
        assert_eq!(tree.len(), 8);
        assert!(tree.iter().any(|c| c.field == "nested" && c.after == r#"{"alpha":"a","zeta":1}"#), "{tree:?}");
        // A body that is not a struct takes the tree's way, and gives the same.
        let map: std::collections::HashMap<&str, Inner> = [("b", Inner { zeta: 3, alpha: "c" })].into();
        assert_eq!(
            created(&map, &[]),
            diff(&serde_json::Value::Null, &serde_json::to_value(&map).expect("value"), &[])
        );
        assert_eq!(created(&map, &[]).len(), 1);
    }
}

/// How [`tamper_for_tests`] damages an audit event.
#[cfg(feature = "test-hooks")]
#[derive(Debug, Clone, Copy)]
pub enum Tamper {
    /// One field changed and the stored hash kept, as an edit behind the engine's back would.
    Edit,
    /// The stored bytes replaced by ones that do not decode, as a damaged disk would.
    Garble,
}

/// Damages the newest audit event of `user` in the closed database at `path`. Test support only.
#[cfg(feature = "test-hooks")]
pub fn tamper_for_tests(path: &std::path::Path, user: u64, how: Tamper) -> Result<()> {
    let db = redb::Database::builder().open(path)?;
    let txn = db.begin_write()?;
    {
        let mut table = txn.open_table(AUDIT)?;
        let (key, mut event) = {
            let last = table.range((user, 0)..=(user, u64::MAX))?.next_back().transpose()?;
            let Some((key, bytes)) = last else { return Err(Error::NotFound) };
            (key.value(), codec::decode::<AuditEvent>("audit", bytes.value())?)
        };
        match how {
            Tamper::Edit => {
                event.revision += 1;
                table.insert(key, codec::encode(&event).as_slice())?;
            }
            Tamper::Garble => {
                table.insert(key, [0xff_u8; 7].as_slice())?;
            }
        }
    }
    txn.commit()?;
    Ok(())
}
