//! What the bundle needs of one record kind, made once per kind by [`BundleKind::of`] for the
//! registry (`crm::kinds`): its rows as JSON lines, a check of one line, its creation from one
//! line, and the fields that name rows of other kinds ([`Ref`]), which an import remaps.

use mycorrhizal_engine::UPDATED_INDEX;
use mycorrhizal_engine::{Invalid, Record, TxUser, UserView};
use serde_json::Value;

use crate::crm::export::{Failure, PAGE};

/// How a field names a row of another kind.
#[derive(Clone, Copy, Debug)]
pub enum Shape {
    /// A required id: a row naming a row that is not in the bundle is left out (it was already
    /// an orphan where it came from).
    One,
    /// An id, `null` or `0` for none: one naming a row that is not in the bundle becomes none.
    Optional,
    /// An id where 0 means none: one naming a row that is not in the bundle becomes 0.
    ZeroForNone,
    /// A list of ids: those naming rows not in the bundle are dropped.
    Many,
    /// An id as text, when the row's field `when` is `equals` (a cadence policy's contact
    /// target); as [`Shape::One`] otherwise.
    TextWhen { when: &'static str, equals: &'static str },
    /// A reference outside the records (an audit event of the old instance): set to 0.
    Cleared,
}

/// A field of a kind that names a row of kind `kind` (an engine kind name).
#[derive(Clone, Copy, Debug)]
pub struct Ref {
    pub field: &'static str,
    pub kind: &'static str,
    pub shape: Shape,
}

impl Ref {
    pub const fn one(field: &'static str, kind: &'static str) -> Ref {
        Ref { field, kind, shape: Shape::One }
    }
    pub const fn optional(field: &'static str, kind: &'static str) -> Ref {
        Ref { field, kind, shape: Shape::Optional }
    }
    pub const fn many(field: &'static str, kind: &'static str) -> Ref {
        Ref { field, kind, shape: Shape::Many }
    }
}

/// One row as the bundle holds it: a line of `records/<kind>.jsonl`.
#[derive(Debug, serde::Serialize, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Line {
    pub id: u64,
    pub created_at: jiff::Timestamp,
    pub updated_at: jiff::Timestamp,
    pub body: Value,
}

/// Rows of one kind for the bundle, in the order they were last changed.
pub type Rows = fn(&UserView, &mut dyn FnMut(Line) -> Result<bool, Failure>) -> Result<(), Failure>;

/// The bundle's functions for one kind (see the module).
#[derive(Clone, Copy)]
pub struct BundleKind {
    pub rows: Rows,
    /// Reads a (remapped) body as the kind and runs its write-time checks.
    pub check: fn(Value) -> Result<(), Invalid>,
    /// Creates the (remapped) body in the transaction; its new id.
    pub create: fn(&TxUser<'_, '_>, Value) -> mycorrhizal_engine::Result<u64>,
    pub refs: &'static [Ref],
}

impl BundleKind {
    pub fn of<R: Record>() -> BundleKind {
        BundleKind { rows: rows::<R>, check: check::<R>, create: create::<R>, refs: &[] }
    }
}

fn rows<R: Record>(view: &UserView, each: &mut dyn FnMut(Line) -> Result<bool, Failure>) -> Result<(), Failure> {
    let mut after: Option<(String, u64)> = None;
    loop {
        let page = view
            .page::<R>(UPDATED_INDEX, after.as_ref().map(|(v, id)| (v.as_str(), *id)), PAGE, false)
            .map_err(Failure::database)?;
        for row in page.rows {
            let body = serde_json::to_value(&row.body).map_err(Failure::serialization)?;
            let line = Line { id: row.id, created_at: row.meta.created_at, updated_at: row.meta.updated_at, body };
            if !each(line)? {
                return Ok(());
            }
        }
        after = page.next;
        if after.is_none() {
            return Ok(());
        }
    }
}

fn parse<R: Record>(body: Value) -> Result<R, Invalid> {
    serde_json::from_value::<R>(body).map_err(|e| Invalid::new("body", e.to_string()))
}

fn check<R: Record>(body: Value) -> Result<(), Invalid> {
    parse::<R>(body)?.prepare()
}

fn create<R: Record>(tx: &TxUser<'_, '_>, body: Value) -> mycorrhizal_engine::Result<u64> {
    let record = parse::<R>(body).map_err(mycorrhizal_engine::Error::Invalid)?;
    Ok(tx.create(record)?.id)
}
