//! Importing contacts: the rows of an upload (from the codecs), their duplicate detection against
//! the user's contacts and within the upload, the merge an `update` performs, applying the
//! user's decisions in batched transactions, and the import sessions that hold rows between
//! preview and confirm (15 minutes, in memory).
//!
//! Duplicate detection is index lookups and hashing only: per row, the card UID, each email, each
//! phone key and the sort name are looked up in the contact indexes, and the same keys in one hash
//! map find earlier rows of the same upload. Nothing compares rows pairwise.

use std::collections::{BTreeMap, HashMap};

use mycorrhizal_codecs::card::{Card, Component, Name};
use mycorrhizal_codecs::projection::{Flat, project};
use mycorrhizal_codecs::record::{Item, NeutralRecord};
use mycorrhizal_codecs::vcard::Photo;
use mycorrhizal_engine::{Invalid, Kind, Precondition, Prepared, Record, Row, TxUser, UserView, kind};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value, json};

mod merge;
mod sessions;

pub use merge::{diff, merge};
pub use sessions::{OPEN_SESSIONS_PER_USER, SESSION_LIFETIME, Session, SessionError, Sessions, Stage};

use super::contact::{Contact, INDEX_EMAIL, INDEX_PHONE, INDEX_SORT_NAME, INDEX_UID, phone_key};

/// Rows per write transaction when applying, unless configured (`IMPORT_BATCH_ROWS`): one durable
/// commit per batch, not per row. A batch holds the writer (every other user's writes wait) for
/// about 0.3 s on a small machine. Smaller batches cost more than their share once the contact
/// indexes are large: each batch copies every index page it touches, and 500 random names touch
/// nearly 500 pages (100k cards: 25.4 s to confirm with 500-row batches, 17.1 s with 2,000, 15.0 s
/// with 5,000).
pub const BATCH: usize = 2_000;
/// The most rows a large import grows its transactions to (see [`batch_rows`]).
pub const BATCH_MAX: usize = 10_000;

/// Rows per transaction for a confirm that writes `planned` rows: the configured size, grown for
/// a large import so that it commits in about ten transactions, at most [`BATCH_MAX`] rows each.
/// Every transaction copies each index page it touches, and the random keys of a large import
/// touch nearly all of them: 100,000 cards wrote 1,104 MB in 2,000-row batches and 669 MB in
/// 10,000-row ones, and confirmed in 7.8 s instead of 9.0. A larger batch holds the writer longer
/// (about half a second at 10,000 rows since rows are created together, `create_many_from`),
/// which other users' writes wait for; a configured size above the cap is kept as configured.
pub fn batch_rows(configured: usize, planned: usize) -> usize {
    configured.max((planned / 10).min(BATCH_MAX)).max(1)
}

/// Import runs kept per user.
pub const RUNS_KEPT: usize = 50;
/// Where a card's own UID is kept when it is not exactly our stored UUID (a non-UUID UID, an
/// upper-case or `urn:uuid:` one), so exports give it back as it was.
pub const ORIGINAL_UID_POINTER: &str = "/uid";

/// Where a session's rows came from. The confirm endpoints accept families: CSV on
/// `/contacts/import/confirm`; vCard, JSContact and records on `/contacts/import/vcf/confirm`;
/// vCard and JSContact also on the CSV route, as existing clients do.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Source {
    Csv,
    Vcf,
    JsContact,
    Records,
}

impl Source {
    pub fn format(self) -> &'static str {
        match self {
            Source::Csv => "csv",
            Source::Vcf => "vcf",
            Source::JsContact => "jscontact",
            Source::Records => "records",
        }
    }
}

/// An existing contact an incoming row matches, and by what.
#[derive(Debug, Clone, Serialize)]
pub struct DuplicateMatch {
    pub existing_contact_id: u64,
    pub existing_firstname: String,
    pub existing_lastname: String,
    pub existing_email: String,
    pub existing_phone: String,
    /// `uid`, `email`, `phone` or `name`.
    pub match_reason: &'static str,
}

#[derive(Debug, Clone, Serialize)]
pub struct FieldChange {
    pub field: &'static str,
    pub label: &'static str,
    pub old: String,
    pub new: String,
}

#[derive(Debug, Clone, Serialize)]
pub struct Added {
    pub kind: &'static str,
    pub value: String,
}

/// What an `update` of the matched contact would change.
#[derive(Debug, Clone, Default, Serialize)]
pub struct MergeDiff {
    pub updated: Vec<FieldChange>,
    pub added: Vec<Added>,
}

impl MergeDiff {
    pub fn is_empty(&self) -> bool {
        self.updated.is_empty() && self.added.is_empty()
    }
}

/// One row of an upload, prepared for preview and confirm.
#[derive(Debug, Clone)]
pub struct ImportRow {
    pub index: usize,
    /// 1-based line in the file, 0 when the format has none.
    pub line: usize,
    pub record: Option<NeutralRecord>,
    pub photo: Option<Photo>,
    pub errors: Vec<String>,
    pub diagnostics: Vec<String>,
    pub duplicate: Option<DuplicateMatch>,
    pub batch_duplicate_of: Option<usize>,
    pub diff: Option<MergeDiff>,
}

impl ImportRow {
    pub fn from_record(index: usize, line: usize, mut record: NeutralRecord, diagnostics: Vec<String>) -> ImportRow {
        let mut diagnostics = diagnostics;
        let photo = mycorrhizal_codecs::vcard::take_photo(&mut record.card);
        let photo = photo.and_then(|p| {
            if super::pictures::keeps(&p.bytes) {
                Some(p)
            } else {
                diagnostics.push("the inline photo is not a JPEG, PNG, GIF or WebP of at most 10 MB; left out".into());
                None
            }
        });
        ImportRow {
            index,
            line,
            record: Some(record),
            photo,
            errors: Vec::new(),
            diagnostics,
            duplicate: None,
            batch_duplicate_of: None,
            diff: None,
        }
    }

    /// A mapped CSV row: its record with the values it lost listed, or the reasons it has none.
    pub fn from_csv(index: usize, row: mycorrhizal_codecs::csv::CsvRow) -> ImportRow {
        let mut out = match row.record {
            Some(record) => ImportRow::from_record(index, row.line, record, row.diagnostics),
            None => ImportRow::failed(index, row.line, row.validation_errors.join("; ")),
        };
        out.errors = row.validation_errors;
        out
    }

    pub fn failed(index: usize, line: usize, reason: String) -> ImportRow {
        ImportRow {
            index,
            line,
            record: None,
            photo: None,
            errors: vec![reason],
            diagnostics: Vec::new(),
            duplicate: None,
            batch_duplicate_of: None,
            diff: None,
        }
    }

    /// `add`, `update` or `skip`: what a person would most likely choose.
    pub fn suggested_action(&self) -> &'static str {
        if self.record.is_none() || self.batch_duplicate_of.is_some() {
            return "skip";
        }
        match (&self.duplicate, &self.diff) {
            (None, _) => "add",
            (Some(_), Some(diff)) if !diff.is_empty() => "update",
            (Some(_), _) => "skip",
        }
    }
}

/// The rows of parsed codec items, numbered in file order.
pub fn rows_of(items: Vec<Item>) -> Vec<ImportRow> {
    items
        .into_iter()
        .enumerate()
        .map(|(index, item)| match item {
            Item::Record { record, line, diagnostics } => ImportRow::from_record(index, line, *record, diagnostics),
            Item::Problem(p) => {
                let at = if p.line > 0 { format!(" (line {})", p.line) } else { String::new() };
                ImportRow::failed(index, p.line, format!("card {}{at}: {}", p.index + 1, p.reason))
            }
        })
        .collect()
}

/// Where a vCard's `CATEGORIES` (a JSContact card's `keywords`) go: the contact's tags, as the
/// card holds them (the default), or its circles, for address books whose categories are the
/// groups people belong to (Apple and Google export contact groups this way).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Categories {
    #[default]
    Tags,
    Circles,
}

impl Categories {
    pub fn parse(text: &str) -> Option<Categories> {
        match text.trim().to_ascii_lowercase().as_str() {
            "tags" | "tag" => Some(Categories::Tags),
            "circles" | "circle" => Some(Categories::Circles),
            _ => None,
        }
    }

    /// Moves each row's categories into its circles when they are circles; done before duplicate
    /// detection, so the preview's merge diff shows them where they will land.
    pub fn place(self, rows: &mut [ImportRow]) {
        if self == Categories::Tags {
            return;
        }
        for record in rows.iter_mut().filter_map(|r| r.record.as_mut()) {
            let keywords = std::mem::take(&mut record.card.keywords);
            if keywords.is_empty() {
                continue;
            }
            let circles = record.crm.entry("circles").or_insert_with(|| json!([]));
            if !circles.is_array() {
                *circles = json!([]);
            }
            if let Value::Array(list) = circles {
                for keyword in keywords.into_iter().map(|k| k.trim().to_string()).filter(|k| !k.is_empty()) {
                    let keyword = Value::String(keyword);
                    if !list.contains(&keyword) {
                        list.push(keyword);
                    }
                }
            }
        }
    }
}

/// The stored UID for an incoming card: its own UID when it is a UUID; a UUID derived from its
/// UID when it has another one (so the same card always maps to the same contact); derived from
/// its name, emails and phones when it has none.
pub fn stable_uid(card: &Card) -> String {
    const NAMESPACE: uuid::Uuid = uuid::Uuid::from_u128(0x6d79_636f_7272_6869_7a61_6c2d_7569_6400);
    if let Some(uid) = card.uid.as_deref().map(str::trim).filter(|u| !u.is_empty()) {
        let bare = uid.trim_start_matches("urn:uuid:");
        if let Ok(u) = uuid::Uuid::parse_str(bare) {
            return u.to_string();
        }
        return uuid::Uuid::new_v5(&NAMESPACE, uid.as_bytes()).to_string();
    }
    let flat = project(card);
    let mut key = format!("{}\u{1f}{}", flat.firstname.to_lowercase(), flat.lastname.to_lowercase());
    for e in &flat.emails {
        key.push('\u{1f}');
        key.push_str(&e.to_lowercase());
    }
    for p in &flat.phones {
        key.push('\u{1f}');
        key.push_str(&mycorrhizal_codecs::projection::normalize_phone(&p.value));
    }
    uuid::Uuid::new_v5(&NAMESPACE, key.as_bytes()).to_string()
}

/// The identifying keys of a card, strongest first: what duplicates are looked up by.
fn keys(card: &Card, flat: &Flat) -> Vec<(&'static str, &'static str, String)> {
    let mut out = vec![("uid", INDEX_UID, stable_uid(card))];
    for e in &flat.emails {
        let e = e.trim().to_lowercase();
        if !e.is_empty() {
            out.push(("email", INDEX_EMAIL, e));
        }
    }
    for p in &flat.phones {
        if let Some(k) = phone_key(&p.value) {
            out.push(("phone", INDEX_PHONE, k));
        }
    }
    // A name alone is a weaker signal: only a first and a last name together count.
    if !flat.firstname.is_empty() && !flat.lastname.is_empty() {
        out.push(("name", INDEX_SORT_NAME, flat.sort_name.clone()));
    }
    out
}

/// Finds, for every row, the existing contact it duplicates and the earlier row of the same
/// upload it repeats, and what an update would change. The lookups of a large upload run on
/// several threads (rows are independent there); the repeats within the upload are then found
/// in one pass over the rows' keys, in file order.
pub fn detect(view: &UserView, rows: &mut [ImportRow]) -> mycorrhizal_engine::Result<()> {
    /// Rows per thread below which one thread does all the lookups.
    const ROWS_PER_THREAD: usize = 500;
    let threads = std::thread::available_parallelism().map_or(1, |n| n.get()).clamp(1, 4);
    let per_thread = rows.len().div_ceil(threads).max(ROWS_PER_THREAD);
    let keyed: Vec<Vec<Keys>> = if per_thread >= rows.len() {
        vec![match_existing(view, rows)?]
    } else {
        std::thread::scope(|scope| {
            let parts: Vec<_> =
                rows.chunks_mut(per_thread).map(|part| scope.spawn(move || match_existing(view, part))).collect();
            parts
                .into_iter()
                .map(|p| p.join().unwrap_or_else(|panic| std::panic::resume_unwind(panic)))
                .collect::<mycorrhizal_engine::Result<Vec<_>>>()
        })?
    };
    let mut seen: HashMap<(&'static str, &str), usize> = HashMap::new();
    for (row, keys) in rows.iter_mut().zip(keyed.iter().flatten()) {
        row.batch_duplicate_of = keys.iter().find_map(|(reason, _, k)| seen.get(&(*reason, k.as_str())).copied());
        for (reason, _, k) in keys {
            seen.entry((*reason, k.as_str())).or_insert(row.index);
        }
    }
    Ok(())
}

/// A row's identifying keys (see [`keys`]); none for a row without a record.
type Keys = Vec<(&'static str, &'static str, String)>;

/// The existing contact each row matches (by its strongest key that matches), and the row's keys.
fn match_existing(view: &UserView, rows: &mut [ImportRow]) -> mycorrhizal_engine::Result<Vec<Keys>> {
    let mut out = Vec::with_capacity(rows.len());
    for row in rows.iter_mut() {
        let Some(record) = &row.record else {
            out.push(Vec::new());
            continue;
        };
        let flat = project(&record.card);
        let keys = keys(&record.card, &flat);
        for (reason, index, key) in &keys {
            let Some(id) = view.find::<Contact>(index, key)?.into_iter().next() else { continue };
            let existing = view.get::<Contact>(id)?;
            let f = &existing.body.flat;
            row.duplicate = Some(DuplicateMatch {
                existing_contact_id: id,
                existing_firstname: f.firstname.clone(),
                existing_lastname: f.lastname.clone(),
                existing_email: f.email.clone(),
                existing_phone: f.phone.clone(),
                match_reason: reason,
            });
            let merged = merge(&existing.body, record);
            row.diff = Some(diff(&existing.body, &merged));
            break;
        }
        out.push(keys);
    }
    Ok(out)
}

/// `parsed_contact` of the preview: the flat fields a person checks, non-empty only.
pub fn parsed_contact(record: &NeutralRecord) -> BTreeMap<&'static str, String> {
    let f = project(&record.card);
    let join = |v: Option<&Value>| -> String {
        v.and_then(Value::as_array)
            .map(|l| l.iter().filter_map(Value::as_str).collect::<Vec<_>>().join(", "))
            .unwrap_or_default()
    };
    let text = |key: &str| record.crm.get(key).and_then(Value::as_str).unwrap_or("").to_string();
    let pairs = [
        ("firstname", f.firstname.clone()),
        ("lastname", f.lastname.clone()),
        ("middle_name", f.middle_name.clone()),
        ("prefix", f.prefix.clone()),
        ("suffix", f.suffix.clone()),
        ("nickname", f.nickname.clone()),
        ("email", f.email.clone()),
        ("phone", f.phone.clone()),
        ("birthday", f.birthday.clone()),
        ("anniversary", f.anniversary.clone()),
        ("address", f.address.clone()),
        ("gender", record.gender.clone()),
        ("organization", f.org.clone()),
        ("department", f.department.clone()),
        ("job_title", f.job_title.clone()),
        ("role", f.role.clone()),
        ("work_information", text("work_information")),
        ("circles", join(record.crm.get("circles"))),
        ("tags", record.card.keywords.join(", ")),
    ];
    pairs.into_iter().filter(|(_, v)| !v.is_empty()).collect()
}

/// A new contact from an incoming record (the stable UID, or a fresh one when `uid_taken`), and
/// its card, for [`Contact::prepare_parsed`]. Validation is left to that preparation.
pub fn new_contact(record: NeutralRecord, uid_taken: bool) -> Result<(Contact, Card), String> {
    let NeutralRecord { mut card, crm, mut passthrough, gender } = record;
    let uid = if uid_taken { uuid::Uuid::new_v4().to_string() } else { stable_uid(&card) };
    // The card's own UID comes back on export exactly as it was written (case, `urn:uuid:`).
    if let Some(original) = card.uid.as_deref().map(str::trim).filter(|u| !u.is_empty() && *u != uid && !uid_taken) {
        let props = passthrough.entry("jsContactProps").or_insert_with(|| json!({}));
        if let Value::Object(p) = props {
            p.insert(ORIGINAL_UID_POINTER.into(), Value::String(original.to_string()));
        }
    }
    card.uid = Some(uid.clone());
    let contact = Contact {
        uid,
        card: serde_json::to_string(&card).map_err(|e| e.to_string())?,
        crm: Value::Object(crm).to_string(),
        passthrough: Value::Object(passthrough).to_string(),
        gender,
        archived: false,
        favorite: false,
        photo: String::new(),
        legacy_birthday: String::new(),
        flat: Default::default(),
        circles: Vec::new(),
        tags: Vec::new(),
    };
    Ok((contact, card))
}

/// The summary a confirm returns (and returns again for a repeated confirm).
#[derive(Debug, Clone, Default, Serialize)]
pub struct ImportResult {
    pub total_processed: u64,
    pub created: u64,
    pub updated: u64,
    pub skipped: u64,
    /// How many rows failed (each has a line in `errors`).
    pub error_count: u64,
    /// One line per failed row, then one per value a kept row lost (an unreadable date):
    /// `row N (line L): reason`.
    pub errors: Vec<String>,
}

/// A picture an op brings: the name a contact will know it by (fresh, so it never replaces a
/// picture another contact names) and its bytes, stored as the user's blob in the transaction
/// that gives it to a contact, and only then.
#[derive(Debug, Clone)]
pub struct Picture {
    pub name: String,
    pub bytes: Vec<u8>,
}

impl Picture {
    /// The picture of an imported photo, named by a fresh UUID and the image type; `None` when
    /// the bytes are not an image we keep (the preview checked them already). The UUID is
    /// time-ordered (v7), so an import's pictures are appended to the blob table in key order
    /// rather than scattered over it: 100,000 cards confirmed in 5.9 s with random names.
    pub fn of(photo: Photo) -> Option<Picture> {
        let (_, ext) = super::pictures::sniff(&photo.bytes)?;
        Some(Picture { name: format!("{}.{ext}", uuid::Uuid::now_v7().simple()), bytes: photo.bytes })
    }
}

/// One step of applying a session: a new contact takes its picture (already named in the
/// contact); an updated one only when it has none.
#[derive(Debug, Clone)]
pub enum Op {
    Add { row: usize, contact: Box<Prepared<Contact>>, picture: Option<Picture> },
    Update { row: usize, id: u64, record: Box<NeutralRecord>, picture: Option<Picture> },
}

impl Op {
    /// The row this op applies.
    pub fn row(&self) -> usize {
        match self {
            Op::Add { row, .. } | Op::Update { row, .. } => *row,
        }
    }
}

/// What happened to one op inside a transaction.
#[derive(Debug, Clone)]
pub enum Outcome {
    Created { row: usize, id: u64 },
    Updated { row: usize, id: u64 },
    Failed { row: usize, reason: String },
}

/// Applies one batch inside one transaction. A failing row is reported and the others go on:
/// every check that can fail runs before the row writes anything.
pub fn apply_batch(tx: &TxUser<'_, '_>, ops: &[Op]) -> mycorrhizal_engine::Result<Vec<Outcome>> {
    let mut out: Vec<Option<Outcome>> = vec![None; ops.len()];
    // The batch's new contacts are created together (their index entries written in key order),
    // from borrows: the batch may run again (see the writer), so its contacts are not given away.
    let adds: Vec<(usize, usize, &Prepared<Contact>, Option<&Picture>)> = ops
        .iter()
        .enumerate()
        .filter_map(|(at, op)| match op {
            Op::Add { row, contact, picture } => Some((at, *row, contact.as_ref(), picture.as_ref())),
            Op::Update { .. } => None,
        })
        .collect();
    let bodies: Vec<&Prepared<Contact>> = adds.iter().map(|(_, _, contact, _)| *contact).collect();
    let created = tx.create_many_from(&bodies)?;
    for ((at, row, contact, picture), created) in adds.into_iter().zip(created) {
        // The UID is unique: a taken one is refused before the row writes anything, and the
        // card then gets a fresh one.
        let created = match created {
            Err(mycorrhizal_engine::Error::Duplicate { index: INDEX_UID }) => {
                let mut contact = contact.body().clone();
                contact.uid = uuid::Uuid::new_v4().to_string();
                let mut card = contact.parsed_card();
                card.uid = Some(contact.uid.clone());
                contact.card = serde_json::to_string(&card).unwrap_or(contact.card);
                tx.create(contact).map(|r| r.id)
            }
            created => created,
        };
        out[at] = Some(match created {
            Ok(id) => {
                // The contact names its picture already; the bytes land in the same commit.
                if let Some(picture) = picture {
                    tx.put_blob(&picture.name, &picture.bytes)?;
                }
                Outcome::Created { row, id }
            }
            Err(mycorrhizal_engine::Error::Invalid(e)) => {
                Outcome::Failed { row, reason: format!("{}: {}", e.field, e.reason) }
            }
            Err(e) => return Err(e),
        });
    }
    for (at, op) in ops.iter().enumerate() {
        let Op::Update { row, id, record, picture } = op else { continue };
        let row = *row;
        let existing: Row<Contact> = match tx.get(*id) {
            Ok(r) => r,
            Err(mycorrhizal_engine::Error::NotFound) => {
                out[at] = Some(Outcome::Failed { row, reason: format!("the matched contact {id} no longer exists") });
                continue;
            }
            Err(e) => return Err(e),
        };
        let mut merged = merge(&existing.body, record);
        if let Err(e) = merged.parsed_card().validate() {
            out[at] = Some(Outcome::Failed { row, reason: format!("{}: {}", e.field, e.reason) });
            continue;
        }
        // A contact that already has a picture keeps it.
        let took = picture.as_ref().filter(|_| merged.photo.is_empty());
        if let Some(picture) = took {
            merged.photo = picture.name.clone();
        }
        out[at] = Some(match tx.put(*id, Precondition::Any, merged) {
            Ok(r) => {
                if let Some(picture) = took {
                    tx.put_blob(&picture.name, &picture.bytes)?;
                }
                Outcome::Updated { row, id: r.id }
            }
            Err(mycorrhizal_engine::Error::Invalid(e)) => {
                Outcome::Failed { row, reason: format!("{}: {}", e.field, e.reason) }
            }
            Err(e) => return Err(e),
        });
    }
    // Every op got its outcome above, in the batch's order.
    Ok(out.into_iter().flatten().collect())
}

/// A finished import, kept per user (the 50 most recent). Counts, not messages.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ImportRun {
    /// `csv`, `vcf`, `jscontact` or `records`.
    pub format: String,
    pub processed: u64,
    pub created: u64,
    pub updated: u64,
    pub skipped: u64,
    pub errors: u64,
}

impl Record for ImportRun {
    const KIND: Kind = kind!("import_run", hard_delete);

    fn validate(&self) -> Result<(), Invalid> {
        if !["csv", "vcf", "jscontact", "records"].contains(&self.format.as_str()) {
            return Err(Invalid::new("format", "must be csv, vcf, jscontact or records"));
        }
        Ok(())
    }
}

/// Records a run and drops the oldest beyond [`RUNS_KEPT`], in the caller's transaction.
pub fn record_run(tx: &TxUser<'_, '_>, run: ImportRun) -> mycorrhizal_engine::Result<()> {
    tx.create(run)?;
    let ids = tx.find_range::<ImportRun>(mycorrhizal_engine::UPDATED_INDEX, "", "~")?;
    if ids.len() > RUNS_KEPT {
        let mut ids = ids;
        ids.sort_unstable();
        for id in &ids[..ids.len() - RUNS_KEPT] {
            tx.delete::<ImportRun>(*id, Precondition::Any)?;
        }
    }
    Ok(())
}

/// A person's decision for one row.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Action {
    Add,
    Update,
    Skip,
}

impl Action {
    pub fn parse(text: &str) -> Option<Action> {
        match text {
            "add" => Some(Action::Add),
            "update" => Some(Action::Update),
            "skip" => Some(Action::Skip),
            _ => None,
        }
    }
}

fn row_error(row: &ImportRow, reason: &str) -> String {
    row_error_at(row.index, row.line, reason)
}

fn row_error_at(index: usize, line: usize, reason: &str) -> String {
    if line > 0 { format!("row {index} (line {line}): {reason}") } else { format!("row {index}: {reason}") }
}

/// A row the confirm will write: its position in the rows, and the contact an update merges into.
struct Planned {
    at: usize,
    update: Option<u64>,
}

/// Applies decisions to prepared rows: creates and merges in transactions of `batch` rows
/// (one durable commit each; [`BATCH`] unless configured), with each row's picture stored in the
/// same commit as the contact that takes it, and records the import run.
/// `progress(done, total)` is called after each batch.
///
/// While the writer commits one batch, this thread prepares the next (the contact, its save hook
/// and validation), so the single writer only stores rows.
///
/// It always returns a result, never an error: rows are independent, so a failing row is counted
/// and described and the others are applied, and a batch whose transaction fails (the disk, not
/// the row) reports each of its rows as failed while later batches are still tried. Once any row
/// may have been written, the only honest answer is the per-row account; an error instead would
/// invite a retry that adds the committed rows a second time. A kept row whose preview noted a
/// dropped value (an unreadable date) is listed in `errors` too, without counting as failed.
pub fn execute(
    scope: &mycorrhizal_engine::UserScope,
    source: Source,
    rows: &mut [ImportRow],
    actions: &HashMap<usize, Action>,
    batch: usize,
    progress: &dyn Fn(usize, usize),
) -> ImportResult {
    let mut result = ImportResult { total_processed: rows.len() as u64, ..Default::default() };
    let mut failed = 0u64;
    let mut notes = Vec::new();
    let mut planned = Vec::new();
    for (at, row) in rows.iter().enumerate() {
        let action = actions.get(&row.index).copied().unwrap_or(Action::Skip);
        let mut fail = |reason: &str| {
            failed += 1;
            result.errors.push(row_error(row, reason));
        };
        match (action, &row.record, &row.duplicate) {
            (Action::Skip, _, _) => result.skipped += 1,
            (_, None, _) => fail(row.errors.first().map(String::as_str).unwrap_or("the row could not be read")),
            (Action::Add, Some(_), _) => planned.push(Planned { at, update: None }),
            (Action::Update, Some(_), Some(dup)) => planned.push(Planned { at, update: Some(dup.existing_contact_id) }),
            (Action::Update, Some(_), None) => fail("update asked, but the row matches no existing contact"),
        }
        if action != Action::Skip && row.record.is_some() {
            for problem in &row.errors {
                notes.push(row_error(row, &format!("imported without a value: {problem}")));
            }
        }
    }
    let lines: HashMap<usize, usize> = rows.iter().map(|r| (r.index, r.line)).collect();
    let describe = |row: usize, reason: &str| match lines.get(&row) {
        Some(&line) => row_error_at(row, line, reason),
        None => format!("row {row}: {reason}"),
    };
    let total = planned.len();
    let batch = batch_rows(batch, total);
    let mut done = 0;
    // Returns how many rows the written batch held.
    let account = |outcomes: Vec<Outcome>, result: &mut ImportResult, failed: &mut u64| {
        for outcome in &outcomes {
            match outcome {
                Outcome::Created { .. } => result.created += 1,
                Outcome::Updated { .. } => result.updated += 1,
                Outcome::Failed { row, reason } => {
                    *failed += 1;
                    result.errors.push(describe(*row, reason));
                }
            }
        }
        outcomes.len()
    };
    std::thread::scope(|threads| {
        let (to_writer, batches) = std::sync::mpsc::sync_channel::<Vec<Op>>(1);
        let (to_account, written) = std::sync::mpsc::channel::<Vec<Outcome>>();
        threads.spawn(move || {
            for batch in batches {
                let rows: Vec<usize> = batch.iter().map(Op::row).collect();
                // The batch is freed here, not on the engine's writer (which every user waits on).
                let batch = std::sync::Arc::new(batch);
                let job = std::sync::Arc::clone(&batch);
                let outcomes = match scope.write(move |tx| apply_batch(tx, &job)) {
                    Ok(outcomes) => outcomes,
                    Err(e) => {
                        tracing::error!(event = "import_batch_failed", rows = rows.len(), error = %e);
                        let reason = format!("not saved: {e}");
                        rows.iter().map(|row| Outcome::Failed { row: *row, reason: reason.clone() }).collect()
                    }
                };
                if to_account.send(outcomes).is_err() {
                    return;
                }
            }
        });
        for chunk in planned.chunks(batch.max(1)) {
            let mut ops = Vec::with_capacity(chunk.len());
            for plan in chunk {
                // The row's card and picture move into the contact: the session keeps only the
                // result once confirmed, so nothing is copied.
                let row = &mut rows[plan.at];
                let (Some(record), picture) = (row.record.take(), row.photo.take().and_then(Picture::of)) else {
                    continue;
                };
                let row = &*row;
                match plan.update {
                    None => {
                        let prepared = new_contact(record, false).and_then(|(mut contact, card)| {
                            contact.photo = picture.as_ref().map(|p| p.name.clone()).unwrap_or_default();
                            Prepared::with(contact, |c| c.prepare_parsed(card))
                                .map_err(|e| format!("{}: {}", e.field, e.reason))
                        });
                        match prepared {
                            // The writer's share that needs no id is done here, off the writer.
                            Ok(contact) => {
                                ops.push(Op::Add { row: row.index, contact: Box::new(contact.ahead()), picture })
                            }
                            Err(reason) => {
                                failed += 1;
                                result.errors.push(row_error(row, &reason));
                            }
                        }
                    }
                    Some(id) => ops.push(Op::Update { row: row.index, id, record: Box::new(record), picture }),
                }
            }
            // Rows that failed before the transaction count as done too.
            done += chunk.len() - ops.len();
            if !ops.is_empty() && to_writer.send(ops).is_err() {
                break;
            }
            while let Ok(outcomes) = written.try_recv() {
                done += account(outcomes, &mut result, &mut failed);
                progress(done, total);
            }
        }
        drop(to_writer);
        for outcomes in written {
            done += account(outcomes, &mut result, &mut failed);
            progress(done, total);
        }
    });
    result.errors.extend(notes);
    result.error_count = failed;
    let run = ImportRun {
        format: source.format().to_string(),
        processed: result.total_processed,
        created: result.created,
        updated: result.updated,
        skipped: result.skipped,
        errors: result.error_count,
    };
    if let Err(e) = scope.write(move |tx| record_run(tx, run.clone())) {
        // The contacts are in; only the history line is missing.
        tracing::error!(event = "import_run_not_recorded", error = %e);
    }
    result
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A large import grows its transactions to a tenth of its rows, within the cap; a configured
    /// size is never shrunk.
    #[test]
    fn batches_grow_with_a_large_import_up_to_the_cap() {
        assert_eq!(batch_rows(BATCH, 10_000), BATCH);
        assert_eq!(batch_rows(BATCH, 50_000), 5_000);
        assert_eq!(batch_rows(BATCH, 100_000), BATCH_MAX);
        assert_eq!(batch_rows(BATCH, 1_000_000), BATCH_MAX);
        assert_eq!(batch_rows(50_000, 100), 50_000);
        assert_eq!(batch_rows(1, 5), 1);
        assert_eq!(batch_rows(0, 0), 1);
    }

    /// Preparing an imported contact from its card in hand gives the body (derived columns
    /// included) and the creation audit that preparing it from its card text gives.
    #[test]
    fn a_contact_prepared_from_its_parsed_card_is_the_one_prepared_from_its_text() {
        let dirs = [
            concat!(env!("CARGO_MANIFEST_DIR"), "/../../shared/fixtures/rfc-cards"),
            concat!(env!("CARGO_MANIFEST_DIR"), "/../codecs/tests/fixtures/vcf"),
        ];
        let mut compared = 0;
        for dir in dirs {
            for path in std::fs::read_dir(dir).expect("fixtures").flatten().map(|e| e.path()) {
                if path.extension().and_then(|e| e.to_str()) != Some("vcf") {
                    continue;
                }
                for row in rows_of(mycorrhizal_codecs::vcard::parse_file(&std::fs::read(&path).expect("read"))) {
                    let Some(record) = &row.record else { continue };
                    let (contact, card) = new_contact(record.clone(), false).expect("contact");
                    let from_text = Prepared::new(contact.clone());
                    let from_card = Prepared::with(contact, |c| c.prepare_parsed(card));
                    match (from_text, from_card) {
                        (Ok(a), Ok(b)) => {
                            assert_eq!(
                                serde_json::to_value(a.body()).expect("json"),
                                serde_json::to_value(b.body()).expect("json"),
                                "{}",
                                path.display()
                            );
                            compared += 1;
                        }
                        (Err(a), Err(b)) => assert_eq!((a.field, a.reason), (b.field, b.reason)),
                        (a, b) => panic!("{}: {:?} / {:?}", path.display(), a.is_ok(), b.is_ok()),
                    }
                }
            }
        }
        assert!(compared >= 20, "{compared} contacts compared");
    }
}
