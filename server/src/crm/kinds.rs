//! The one registry of user record kinds. Everything that must treat every kind alike reads it:
//! the index backfill at start-up, the retention purge of tombstones, the cascade when a contact
//! is deleted, the documents of full-text search, undo of an update event, and the tables of the
//! CSV/ZIP export, and the account bundle (`crm::bundle`: every kind's rows, and which of their
//! fields name rows of other kinds, remapped on import). Adding a kind is one entry in [`all`].

use jiff::Timestamp;
use mycorrhizal_engine::FieldChange;
use mycorrhizal_engine::{Indexed, Precondition, Record, Source, TxUser};

use super::bundle::{BundleKind, Ref, Shape};
use super::contact::Contact;
use super::duplicate::DuplicateDismissal;
use super::export::RecordTable;
use super::external::{ExternalActivity, ExternalIdentity};
use super::field::FieldDefinition;
use super::groups::GroupEntity;
use super::link_type::LinkFieldType;
use super::preference::Preference;
use super::reach_out::ReachOutSuggestion;
use super::{
    activity::Activity, note::Note, records::BY_CONTACT, records::contact_range, relationship::BY_SOURCE,
    relationship::BY_TARGET, relationship::Relationship, reminder::Completion, reminder::Reminder,
};
use super::{attachment::Attachment, cadence::CadencePolicy, depth::AgendaItem, depth::Gift, depth::LifeEvent};
use super::{household::DismissedHouseholdSuggestion, household::Household, household::HouseholdMember};

type Tx<'t, 'a> = TxUser<'t, 'a>;
type Cascade = fn(&Tx<'_, '_>, u64) -> mycorrhizal_engine::Result<Vec<u64>>;

/// What happens to rows of a kind when a contact they name is deleted.
#[derive(Clone, Copy)]
pub enum OnContactDelete {
    /// Nothing: the kind does not hang off one contact.
    Keep,
    /// Rows whose `contact` index starts with the contact (`<contact><time>`) are deleted.
    DeleteByContactTime,
    /// Rows whose `contact` index is the contact are deleted.
    DeleteByContact,
    /// Rows whose source or target is the contact are deleted (relationship edges).
    DeleteEdges,
    /// Rows (found as for `DeleteByContactTime`) keep living without the contact (an activity
    /// shared with others): the function takes the row and the contact.
    Detach(fn(&Tx<'_, '_>, u64, u64) -> mycorrhizal_engine::Result<()>),
}

/// One user record kind and how the generic machinery treats it.
pub struct KindEntry {
    /// The engine's kind name.
    pub name: &'static str,
    /// The index backfill of this kind.
    pub indexed: Indexed,
    /// Removes tombstones deleted before the cutoff (`None`: the kind is hard-deleted).
    pub purge: Option<fn(&Tx<'_, '_>, Timestamp) -> mycorrhizal_engine::Result<u64>>,
    pub on_contact_delete: OnContactDelete,
    /// The rows of this kind that hang off a contact (what its deletion touches).
    dependents: Cascade,
    /// Rewrites the contact references (as `bundle.refs` name them) of the given rows from one
    /// contact to another (a merge).
    repoint: fn(&Tx<'_, '_>, &[u64], u64, u64, &[Ref]) -> mycorrhizal_engine::Result<Vec<Moved>>,
    /// A live row's revision and body as JSON (what an undo puts back).
    snapshot: fn(&Tx<'_, '_>, u64) -> mycorrhizal_engine::Result<Option<(u64, String)>>,
    /// Puts a body (JSON) back over a live row still at `revision`.
    put_json: fn(&Tx<'_, '_>, u64, u64, &str) -> mycorrhizal_engine::Result<()>,
    /// Brings a deleted row back at its id with a body (JSON) and its creation instant.
    restore_json: fn(&Tx<'_, '_>, u64, &str, Option<Timestamp>) -> mycorrhizal_engine::Result<()>,
    delete: fn(&Tx<'_, '_>, &[u64]) -> mycorrhizal_engine::Result<()>,
    /// Its full-text search documents, when it has any.
    pub search: Option<Source>,
    /// Undo of an update event of this kind (`None`: its changes cannot be undone).
    pub revert: Option<Revert>,
    revert_of: Revert,
    /// Its table in the CSV and ZIP exports (contacts have their own, richer export).
    pub export: Option<RecordTable>,
    export_of: fn(&'static str) -> RecordTable,
    /// Its rows in the account bundle, and the fields that name other rows.
    pub bundle: BundleKind,
    /// A body of this kind in the engine's row encoding, as JSON (a webhook event's `data`, made
    /// on the delivery worker from the bytes the change recorded).
    pub json: fn(&[u8]) -> Option<serde_json::Value>,
}

/// Puts back the fields an update changed (see [`revert`]).
pub type Revert = fn(&Tx<'_, '_>, u64, u64, &[FieldChange]) -> mycorrhizal_engine::Result<Refusal>;

impl KindEntry {
    fn of<R: Record>(on_contact_delete: OnContactDelete) -> KindEntry {
        let dependents: Cascade = match on_contact_delete {
            OnContactDelete::Keep => |_, _| Ok(Vec::new()),
            OnContactDelete::DeleteByContactTime | OnContactDelete::Detach(_) => find_by_contact_time::<R>,
            OnContactDelete::DeleteByContact => find_by_contact::<R>,
            OnContactDelete::DeleteEdges => find_edges::<R>,
        };
        KindEntry {
            name: R::KIND.name,
            indexed: Indexed::of::<R>(),
            purge: R::KIND.soft_delete.then_some(purge::<R> as fn(&Tx<'_, '_>, Timestamp) -> _),
            on_contact_delete,
            dependents,
            repoint: repoint::<R>,
            snapshot: snapshot::<R>,
            put_json: put_json::<R>,
            restore_json: restore_json::<R>,
            delete: delete_all::<R>,
            search: None,
            revert: None,
            revert_of: revert::<R>,
            export: None,
            export_of: RecordTable::of::<R>,
            bundle: BundleKind::of::<R>(),
            json: |stored| {
                let body: R = mycorrhizal_engine::codec::decode(R::KIND.name, stored).ok()?;
                serde_json::to_value(body).ok()
            },
        }
    }

    /// Its fields in `refs` name rows of other kinds (which come before it in [`all`]).
    fn refers(mut self, refs: &'static [Ref]) -> KindEntry {
        self.bundle.refs = refs;
        self
    }

    /// Its rows are exported as the CSV table `name`.
    fn exported(mut self, name: &'static str) -> KindEntry {
        self.export = Some((self.export_of)(name));
        self
    }

    /// Its update events can be undone.
    fn undoable(mut self) -> KindEntry {
        self.revert = Some(self.revert_of);
        self
    }

    fn searched(mut self, source: Source) -> KindEntry {
        self.search = Some(source);
        self
    }
}

const CONTACT: &str = Contact::KIND.name;
const TO_CONTACT: &[Ref] = &[Ref::one("contact_id", CONTACT)];

/// Every user record kind. Search groups follow this order (contacts, notes, activities). A kind
/// whose fields name rows of other kinds comes after them (the bundle's import relies on it).
pub fn all() -> Vec<KindEntry> {
    use OnContactDelete::*;
    vec![
        KindEntry::of::<Contact>(Keep).searched(Source::of::<Contact>().contacts()).undoable(),
        KindEntry::of::<Note>(DeleteByContactTime)
            .searched(Source::of::<Note>())
            .undoable()
            .exported("notes")
            .refers(const { &[Ref::optional("contact_id", CONTACT)] }),
        KindEntry::of::<Activity>(Detach(leave_activity))
            .searched(Source::of::<Activity>())
            .undoable()
            .exported("activities")
            .refers(const { &[Ref::many("contact_ids", CONTACT)] }),
        KindEntry::of::<Reminder>(DeleteByContactTime).undoable().exported("reminders").refers(TO_CONTACT),
        KindEntry::of::<Completion>(DeleteByContactTime).undoable().exported("reminder_completions").refers(const { &[
            Ref::optional("reminder_id", Reminder::KIND.name),
            Ref::one("contact_id", CONTACT),
        ] }),
        KindEntry::of::<Relationship>(DeleteEdges)
            .undoable()
            .exported("relationships")
            .refers(const { &[Ref::one("source", CONTACT), Ref::one("target", CONTACT)] }),
        KindEntry::of::<LifeEvent>(DeleteByContactTime).undoable().exported("life_events").refers(TO_CONTACT),
        KindEntry::of::<Gift>(DeleteByContactTime).undoable().exported("gifts").refers(TO_CONTACT),
        KindEntry::of::<AgendaItem>(DeleteByContactTime).undoable().exported("conversation_agenda").refers(const { &[
            Ref::one("contact_id", CONTACT),
            Ref::optional("activity_id", Activity::KIND.name),
        ] }),
        KindEntry::of::<Attachment>(DeleteByContact).refers(TO_CONTACT),
        KindEntry::of::<Household>(Keep).undoable().exported("households"),
        KindEntry::of::<HouseholdMember>(DeleteByContact)
            .undoable()
            .exported("household_members")
            .refers(const { &[Ref::one("household_id", Household::KIND.name), Ref::one("contact_id", CONTACT)] }),
        KindEntry::of::<CadencePolicy>(Keep).exported("cadence_policies").refers(const { &[Ref {
            field: "target",
            kind: CONTACT,
            shape: Shape::TextWhen { when: "scope", equals: "contact" },
        }] }),
        // Circle and tag rows: names only, membership is on the contacts (a rename touches
        // both, so an undo of the row alone would part them: not undoable).
        KindEntry::of::<GroupEntity>(Keep),
        // Custom field definitions: values live on the contacts, keyed by the definition's key.
        KindEntry::of::<FieldDefinition>(Keep).exported("field_definitions"),
        KindEntry::of::<LinkFieldType>(Keep),
        KindEntry::of::<Preference>(DeleteByContact).undoable().exported("preferences").refers(TO_CONTACT),
        // Links to other systems and what happened there: they follow their contact (a merge
        // moves them, a delete takes them along).
        KindEntry::of::<ExternalIdentity>(DeleteByContact)
            .undoable()
            .exported("external_identities")
            .refers(TO_CONTACT),
        KindEntry::of::<ExternalActivity>(DeleteByContactTime)
            .undoable()
            .exported("external_activities")
            .refers(TO_CONTACT),
        // Its hashes are of the members' ids, which an import changes: carried as they are, a
        // dismissal no longer matches, and the suggestion may be offered again.
        KindEntry::of::<DismissedHouseholdSuggestion>(Keep),
        // Dismissals name contact ids, remapped by an import like every other reference.
        KindEntry::of::<DuplicateDismissal>(DeleteByContact)
            .refers(const { &[Ref::one("low", CONTACT), Ref::one("high", CONTACT)] }),
        KindEntry::of::<ReachOutSuggestion>(DeleteByContact).refers(const { &[
            Ref::one("contact_id", CONTACT),
            Ref { field: "policy_id", kind: CadencePolicy::KIND.name, shape: Shape::ZeroForNone },
            Ref::optional("reminder_id", Reminder::KIND.name),
            Ref { field: "audit_event_id", kind: "", shape: Shape::Cleared },
        ] }),
    ]
}

/// The body of kind `kind` in the engine's row encoding (`stored`), as JSON; `None` for a kind
/// not in [`all`] or bytes that are not its body.
pub fn body_json(kind: &str, stored: &[u8]) -> Option<serde_json::Value> {
    static BY_NAME: std::sync::OnceLock<
        std::collections::HashMap<&'static str, fn(&[u8]) -> Option<serde_json::Value>>,
    > = std::sync::OnceLock::new();
    let by_name = BY_NAME.get_or_init(|| all().into_iter().map(|k| (k.name, k.json)).collect());
    by_name.get(kind).and_then(|json| json(stored))
}

/// The record tables of the CSV and ZIP exports, in the order the ZIP holds them.
pub fn export_tables() -> Vec<RecordTable> {
    all().into_iter().filter_map(|k| k.export).collect()
}

/// Everything that hangs off contact `id`, in the contact's delete transaction: each kind as
/// its entry says; the bytes of the attachments removed go in the same commit.
pub fn cascade_contact(tx: &Tx<'_, '_>, id: u64) -> mycorrhizal_engine::Result<()> {
    for entry in all() {
        let touched = (entry.dependents)(tx, id)?;
        match entry.on_contact_delete {
            OnContactDelete::Keep => {}
            OnContactDelete::Detach(leave) => {
                for row in &touched {
                    leave(tx, *row, id)?;
                }
            }
            _ => (entry.delete)(tx, &touched)?,
        }
        if entry.name == Attachment::KIND.name {
            for attachment in &touched {
                tx.delete_blob(&super::attachment::blob_name(*attachment))?;
            }
        }
    }
    Ok(())
}

fn purge<R: Record>(tx: &Tx<'_, '_>, cutoff: Timestamp) -> mycorrhizal_engine::Result<u64> {
    tx.purge_tombstones::<R>(cutoff)
}

/// A row a merge moved: its kind, id, body before (JSON) and revision after.
#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
pub struct Moved {
    pub kind: String,
    pub id: u64,
    pub before: String,
    pub revision: u64,
}

/// Moves everything that hangs off contact `from` to contact `to` (a merge): every row of every
/// kind that names `from` names `to` instead, stored again (validated, audited, re-indexed).
/// Rows that must not move (an edge that would join `to` to itself, a second membership) are the
/// caller's to remove first. Each moved row, with its body before.
pub fn move_dependents(tx: &Tx<'_, '_>, from: u64, to: u64) -> mycorrhizal_engine::Result<Vec<Moved>> {
    let mut moved = Vec::new();
    for entry in all() {
        let ids = (entry.dependents)(tx, from)?;
        if ids.is_empty() {
            continue;
        }
        moved.extend((entry.repoint)(tx, &ids, from, to, entry.bundle.refs)?);
    }
    Ok(moved)
}

fn entry_of(kind: &str) -> mycorrhizal_engine::Result<KindEntry> {
    all().into_iter().find(|e| e.name == kind).ok_or(mycorrhizal_engine::Error::NotFound)
}

/// Row `id` of kind `kind`: its revision and body as JSON, if live.
pub fn snapshot_of(tx: &Tx<'_, '_>, kind: &str, id: u64) -> mycorrhizal_engine::Result<Option<(u64, String)>> {
    (entry_of(kind)?.snapshot)(tx, id)
}

/// Puts `body` (JSON) back over row `id` of kind `kind`, if it is still at `revision`.
pub fn put_json_of(tx: &Tx<'_, '_>, kind: &str, id: u64, revision: u64, body: &str) -> mycorrhizal_engine::Result<()> {
    (entry_of(kind)?.put_json)(tx, id, revision, body)
}

/// Brings deleted row `id` of kind `kind` back with `body` (JSON), created at `created_at`.
pub fn restore_json_of(
    tx: &Tx<'_, '_>,
    kind: &str,
    id: u64,
    body: &str,
    created_at: Timestamp,
) -> mycorrhizal_engine::Result<()> {
    (entry_of(kind)?.restore_json)(tx, id, body, Some(created_at))
}

fn invalid_json(e: serde_json::Error) -> mycorrhizal_engine::Error {
    mycorrhizal_engine::Error::Invalid(mycorrhizal_engine::Invalid::new("body", e.to_string()))
}

fn snapshot<R: Record>(tx: &Tx<'_, '_>, id: u64) -> mycorrhizal_engine::Result<Option<(u64, String)>> {
    match tx.get::<R>(id) {
        Ok(row) => Ok(Some((row.meta.revision, serde_json::to_string(&row.body).map_err(invalid_json)?))),
        Err(mycorrhizal_engine::Error::NotFound) => Ok(None),
        Err(e) => Err(e),
    }
}

fn put_json<R: Record>(tx: &Tx<'_, '_>, id: u64, revision: u64, body: &str) -> mycorrhizal_engine::Result<()> {
    let body: R = serde_json::from_str(body).map_err(invalid_json)?;
    tx.put(id, Precondition::Revision(revision), body).map(|_| ())
}

fn restore_json<R: Record>(
    tx: &Tx<'_, '_>,
    id: u64,
    body: &str,
    created_at: Option<Timestamp>,
) -> mycorrhizal_engine::Result<()> {
    let body: R = serde_json::from_str(body).map_err(invalid_json)?;
    tx.restore(id, body, created_at).map(|_| ())
}

/// How many rows of each kind hang off contact `id`.
pub fn count_dependents(tx: &Tx<'_, '_>, id: u64) -> mycorrhizal_engine::Result<Vec<(&'static str, u64)>> {
    let mut counts = Vec::new();
    for entry in all() {
        let n = (entry.dependents)(tx, id)?.len() as u64;
        if n > 0 {
            counts.push((entry.name, n));
        }
    }
    Ok(counts)
}

fn repoint<R: Record>(
    tx: &Tx<'_, '_>,
    ids: &[u64],
    from: u64,
    to: u64,
    refs: &[Ref],
) -> mycorrhizal_engine::Result<Vec<Moved>> {
    use serde_json::Value;
    let mut moved = Vec::new();
    let swap = |v: &mut Value| {
        if v.as_u64() == Some(from) {
            *v = Value::from(to);
        }
    };
    for id in ids {
        let before = serde_json::to_string(&tx.get::<R>(*id)?.body).map_err(invalid_json)?;
        let row = tx.update::<R>(*id, Precondition::Any, |body| {
            let invalid = |e: serde_json::Error| mycorrhizal_engine::Invalid::new("body", e.to_string());
            let mut value = serde_json::to_value(&*body).map_err(invalid)?;
            if let Value::Object(fields) = &mut value {
                for r in refs.iter().filter(|r| r.kind == CONTACT) {
                    match r.shape {
                        super::bundle::Shape::Many => {
                            if let Some(Value::Array(list)) = fields.get_mut(r.field) {
                                list.iter_mut().for_each(swap);
                                let mut seen = std::collections::HashSet::new();
                                list.retain(|v| seen.insert(v.as_u64()));
                            }
                        }
                        super::bundle::Shape::TextWhen { when, equals }
                            if fields.get(when).and_then(Value::as_str) == Some(equals) =>
                        {
                            if fields.get(r.field).and_then(Value::as_str) == Some(from.to_string().as_str()) {
                                fields.insert(r.field.into(), Value::from(to.to_string()));
                            }
                        }
                        _ => {
                            if let Some(v) = fields.get_mut(r.field) {
                                swap(v);
                            }
                        }
                    }
                }
            }
            *body = serde_json::from_value(value).map_err(invalid)?;
            Ok(())
        })?;
        moved.push(Moved { kind: R::KIND.name.to_string(), id: *id, before, revision: row.meta.revision });
    }
    Ok(moved)
}

/// Whether anything the CRM keeps hangs off contact `id` (a note, an activity, a reminder, an
/// edge, ...): what deleting it would delete or detach.
pub fn holds_anything(tx: &Tx<'_, '_>, id: u64) -> mycorrhizal_engine::Result<bool> {
    for entry in all() {
        if !(entry.dependents)(tx, id)?.is_empty() {
            return Ok(true);
        }
    }
    Ok(false)
}

fn delete_all<R: Record>(tx: &Tx<'_, '_>, ids: &[u64]) -> mycorrhizal_engine::Result<()> {
    for id in ids {
        tx.delete::<R>(*id, Precondition::Any)?;
    }
    Ok(())
}

fn find_by_contact<R: Record>(tx: &Tx<'_, '_>, contact: u64) -> mycorrhizal_engine::Result<Vec<u64>> {
    tx.find::<R>(BY_CONTACT, &format!("{contact:020}"))
}

fn find_edges<R: Record>(tx: &Tx<'_, '_>, contact: u64) -> mycorrhizal_engine::Result<Vec<u64>> {
    let padded = format!("{contact:020}");
    let mut ids = tx.find::<R>(BY_SOURCE, &padded)?;
    ids.extend(tx.find::<R>(BY_TARGET, &padded)?);
    ids.sort_unstable();
    ids.dedup();
    Ok(ids)
}

fn find_by_contact_time<R: Record>(tx: &Tx<'_, '_>, contact: u64) -> mycorrhizal_engine::Result<Vec<u64>> {
    let (from, to) = contact_range(contact);
    tx.find_range::<R>(BY_CONTACT, &from, &to)
}

/// A deleted contact leaves a shared activity; the activity stays for the others.
fn leave_activity(tx: &Tx<'_, '_>, activity: u64, contact: u64) -> mycorrhizal_engine::Result<()> {
    tx.update::<Activity>(activity, Precondition::Any, |a| {
        a.contact_ids.retain(|c| *c != contact);
        Ok(())
    })?;
    Ok(())
}

/// Whether a revert happened, decided inside the transaction: a refusal is the domain's
/// `Conflict`.
pub type Refusal = std::result::Result<(), super::Error>;

/// Puts back the fields an update changed, if the record is still at the revision that update
/// produced; inside the caller's write transaction.
pub fn revert<R: Record>(
    tx: &Tx<'_, '_>,
    id: u64,
    revision: u64,
    changes: &[FieldChange],
) -> mycorrhizal_engine::Result<Refusal> {
    let current = tx.get::<R>(id)?;
    if current.meta.revision != revision {
        return Ok(Err(super::Error::Conflict(
            "The record changed after this event; undo only the latest change".into(),
        )));
    }
    let internal = |e: serde_json::Error| {
        mycorrhizal_engine::Error::Invalid(mycorrhizal_engine::Invalid::new("changes", e.to_string()))
    };
    let mut body = serde_json::to_value(&current.body).map_err(internal)?;
    for change in changes {
        body[&change.field] = serde_json::from_str(&change.before).map_err(internal)?;
    }
    let restored: R = serde_json::from_value(body).map_err(internal)?;
    tx.put(id, Precondition::Revision(revision), restored)?;
    Ok(Ok(()))
}

#[cfg(test)]
mod body_json_tests {
    use super::*;

    #[test]
    fn a_stored_body_reads_back_as_the_json_of_its_row() {
        let note = Note {
            content: "Call \"Ma\" ☎".into(),
            date: Timestamp::from_second(1_700_000_000).expect("instant"),
            contact_id: Some(7),
        };
        let stored = mycorrhizal_engine::codec::encode(&note);
        assert_eq!(body_json("note", &stored), Some(serde_json::to_value(&note).expect("json")));
        assert_eq!(body_json("no such kind", &stored), None);
        assert_eq!(body_json("note", b"{\"content\":\"x\"}"), None, "JSON text is not the row encoding");
    }
}
