//! What a record type declares to the engine (its kind, validation, save hook, indexes, search
//! document) and the stored row around it (id, revision, bookkeeping instants).

use jiff::Timestamp;
use serde::{Deserialize, Serialize, de::DeserializeOwned};

use crate::Invalid;

/// A user-owned record type stored by the engine.
pub trait Record: Serialize + DeserializeOwned + Clone + Send + Sync + 'static {
    /// The kind's identity: table names and change-feed label.
    const KIND: Kind;

    /// Checks the record before it is written. The first failure names its field.
    fn validate(&self) -> Result<(), Invalid> {
        Ok(())
    }

    /// Derives stored fields from canonical ones; runs on every create and update.
    fn save_hook(&mut self) {}

    /// What every write runs: [`Record::save_hook`], then [`Record::validate`]. A kind may do
    /// both in one pass (parsing its canonical form once); the outcome must be the same.
    fn prepare(&mut self) -> Result<(), Invalid> {
        self.save_hook();
        self.validate()
    }

    /// Secondary index entries `(index name, normalized value)`, maintained on every write.
    fn index_entries(&self) -> Vec<(&'static str, String)> {
        Vec::new()
    }

    /// Version of what [`Record::index_entries`] yields. Raise it whenever that changes for rows
    /// already stored (a new index, a changed value): the engine then derives the kind's entries
    /// again from every stored row (see [`crate::Engine::ensure_indexes`]), so rows written before
    /// the change are found through the new indexes too.
    const INDEX_VERSION: u32 = 0;

    /// Indexes whose value may belong to one live row per user only.
    const UNIQUE: &'static [&'static str] = &[];

    /// Derived fields the audit log leaves out of its before/after diffs.
    const AUDIT_SKIP: &'static [&'static str] = &[];

    /// What full-text search indexes of this record; `None` (the default) keeps it out.
    /// Only kinds registered as a [`crate::search::Source`] are indexed.
    fn search_doc(&self) -> Option<SearchDoc> {
        None
    }
}

/// What a record contributes to the full-text index. Returned by [`Record::search_doc`].
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SearchDoc {
    /// Names and titles: matches here rank first.
    pub title: String,
    /// Everything else searchable.
    pub body: String,
    /// Left out of a plain search (e.g. an archived contact), still found when asked for.
    pub hidden: bool,
    /// Contacts the row belongs to.
    pub contacts: Vec<u64>,
}

/// Names of a record kind's tables. Built with [`Kind::new`] in a `const`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Kind {
    /// Label in the change feed, e.g. `contact`.
    pub name: &'static str,
    /// `rec:<name>`.
    pub records: &'static str,
    /// `idx:<name>`.
    pub index: &'static str,
    /// User content soft-deletes (tombstone kept); system records hard-delete.
    pub soft_delete: bool,
}

/// Declares a record kind: `kind!("contact", soft_delete)`.
#[macro_export]
macro_rules! kind {
    ($name:literal, soft_delete) => {
        $crate::Kind { name: $name, records: concat!("rec:", $name), index: concat!("idx:", $name), soft_delete: true }
    };
    ($name:literal, hard_delete) => {
        $crate::Kind { name: $name, records: concat!("rec:", $name), index: concat!("idx:", $name), soft_delete: false }
    };
}

/// Bookkeeping the engine keeps for every row.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Meta {
    /// Starts at 1 and grows by one on every successful write.
    pub revision: u64,
    #[serde(with = "crate::codec::micros")]
    pub created_at: Timestamp,
    #[serde(with = "crate::codec::micros")]
    pub updated_at: Timestamp,
    #[serde(with = "crate::codec::micros_opt")]
    pub deleted_at: Option<Timestamp>,
}

/// A stored record with its id and bookkeeping.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Row<R> {
    pub id: u64,
    pub meta: Meta,
    pub body: R,
}

impl<R> Row<R> {
    /// Strong entity tag derived from the revision alone (never the wall clock), quoted for the
    /// `ETag` header: `"e-<id>-<revision>"`.
    pub fn etag(&self) -> String {
        format!("\"e-{}-{}\"", self.id, self.meta.revision)
    }

    pub fn is_deleted(&self) -> bool {
        self.meta.deleted_at.is_some()
    }
}

/// What a conditional write expects of the row it changes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Precondition {
    /// Unconditional.
    #[default]
    Any,
    /// The row's current revision must be this one.
    Revision(u64),
}

impl Precondition {
    pub(crate) fn check(self, actual: u64) -> crate::Result<()> {
        match self {
            Precondition::Any => Ok(()),
            Precondition::Revision(expected) if expected == actual => Ok(()),
            Precondition::Revision(expected) => Err(crate::Error::Conflict { expected, actual }),
        }
    }
}

/// A body that has been through its save hook and validation, with the audit trail's field list
/// of its creation, so a transaction can store it without repeating any of that
/// ([`crate::TxUser::create_prepared`]). Preparing on the caller's threads keeps that work off the
/// single writer during bulk writes. The body cannot change once prepared.
#[derive(Debug, Clone)]
pub struct Prepared<R> {
    pub(crate) body: R,
    /// The audit diff of creating `body` (from nothing); `None` leaves it to the transaction.
    pub(crate) created: Option<Vec<crate::audit::FieldChange>>,
    /// The encodings a batch create needs, made ahead ([`Prepared::ahead`]).
    pub(crate) ahead: Option<Ahead>,
}

/// What [`crate::TxUser::create_many_from`] would otherwise compute in the writer for one row:
/// everything of it that does not depend on the row's id, revision or time.
#[derive(Debug, Clone)]
pub(crate) struct Ahead {
    /// The body's postcard encoding: the tail of the stored row (postcard writes a struct field
    /// after field, and the body is the row's last field).
    pub(crate) body: Vec<u8>,
    /// The body's own index entries (the engine's `_updated` entry depends on the time).
    pub(crate) entries: Vec<(&'static str, String)>,
    /// The postcard encoding of the creation's audit field list.
    pub(crate) changes: Vec<u8>,
}

impl Ahead {
    pub(crate) fn of<R: Record>(body: &R, created: Option<&[crate::audit::FieldChange]>) -> Ahead {
        let computed;
        let created = match created {
            Some(created) => created,
            None => {
                computed = crate::audit::created(body, R::AUDIT_SKIP);
                &computed
            }
        };
        Ahead {
            body: postcard::to_allocvec(body).expect("row types are postcard-serializable"),
            entries: body.index_entries(),
            changes: postcard::to_allocvec(created).expect("a field list is postcard-serializable"),
        }
    }
}

impl<R: Record> Prepared<R> {
    pub fn new(mut body: R) -> Result<Prepared<R>, Invalid> {
        body.prepare()?;
        Ok(Prepared::prepared(body))
    }

    /// A body its caller has put through the equivalent of [`Record::prepare`] itself, with
    /// parts of that work in hand already (a contact's parsed card, say). `prepare` must leave
    /// the body exactly as [`Record::prepare`] would, or fail as it would.
    pub fn with(mut body: R, prepare: impl FnOnce(&mut R) -> Result<(), Invalid>) -> Result<Prepared<R>, Invalid> {
        prepare(&mut body)?;
        Ok(Prepared::prepared(body))
    }

    fn prepared(body: R) -> Prepared<R> {
        let created = crate::audit::created(&body, R::AUDIT_SKIP);
        Prepared { body, created: Some(created), ahead: None }
    }

    /// Does ahead, on the caller's thread, the part of storing this body in a batch
    /// ([`crate::TxUser::create_many_from`]) that does not depend on the row's id or time: the
    /// body's encoding, its index entries and its audit list's encoding. For bulk writes, where
    /// the single writer is the bottleneck; costs memory (about the body's size again) until
    /// the body is stored.
    pub fn ahead(mut self) -> Prepared<R> {
        self.ahead = Some(Ahead::of(&self.body, self.created.as_deref()));
        self
    }

    /// A body the caller has just prepared itself (inside the engine only).
    pub(crate) fn already(body: R) -> Prepared<R> {
        Prepared { body, created: None, ahead: None }
    }

    pub fn body(&self) -> &R {
        &self.body
    }

    pub fn into_body(self) -> R {
        self.body
    }
}
