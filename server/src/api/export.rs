//! Exports: every live contact as vCard (3.0 or 4.0, photos inline) or JSContact, and the user's
//! data as CSV (one table per request: contacts by default, re-importable with identity column
//! mappings; `table=` gives notes, activities and the rest).
//!
//! Exports stream. A blocking producer reads rows a page at a time (each page its own read
//! transaction), renders them, and hands ~64 KB chunks to the response through a bounded channel,
//! so memory stays flat whatever the address book's size. A failure before the first byte
//! answers 500 with the nested export error shape; a failure after it ends the stream early (the
//! status line is already sent) and is logged.

use std::pin::Pin;
use std::task::{Context, Poll};

use axum::body::{Body, Bytes};
use axum::extract::{Query, State};
use axum::http::StatusCode;
use axum::http::header::{CONTENT_DISPOSITION, CONTENT_TYPE};
use axum::response::{IntoResponse, Response};
use mycorrhizal_codecs::record::NeutralRecord;
use mycorrhizal_codecs::vcard::{self, Photo, Version};
use mycorrhizal_engine::tx::UPDATED_INDEX;
use mycorrhizal_engine::{Row, UserScope};
use serde::Deserialize;
use serde_json::{Map, Value, json};
use tokio::sync::{mpsc, oneshot};
use utoipa::IntoParams;

use crate::auth::AuthUser;
use crate::crm::contact::{Contact, INDEX_SORT_NAME, INDEX_UID};
use crate::crm::import::ORIGINAL_UID_POINTER;
use crate::error::ApiError;
use crate::state::AppState;

/// Contacts read per read transaction.
const PAGE: usize = 200;
/// Bytes gathered before a chunk is sent.
const CHUNK: usize = 64 * 1024;
/// Chunks in flight between the producer and the socket.
const IN_FLIGHT: usize = 4;

/// The `sections` tokens and the card members each one keeps.
const SECTIONS: &[(&str, &[&str])] = &[
    ("emails", &["emails"]),
    ("phones", &["phones"]),
    ("addresses", &["addresses"]),
    ("organizations", &["organizations", "titles"]),
    ("anniversaries", &["anniversaries"]),
    ("media", &["media"]),
    ("online_services", &["onlineServices"]),
    ("links", &["links"]),
    ("notes", &["notes"]),
    ("keywords", &["keywords"]),
    ("related_to", &["relatedTo"]),
    ("personal_info", &["personalInfo"]),
    ("speak_to_as", &["speakToAs"]),
    ("members", &["members"]),
    ("languages", &["preferredLanguages"]),
    ("custom_fields", &[]),
];

/// Card members every export keeps whatever `sections` says: who the card is.
const ALWAYS: &[&str] = &["uid", "kind", "name", "nicknames", "created", "updated", "language", "prodId"];

/// What to include.
#[derive(Debug, Clone, Default)]
struct Selection {
    /// `None`: everything.
    sections: Option<Vec<&'static str>>,
}

impl Selection {
    fn parse(text: Option<&str>) -> Result<Selection, ApiError> {
        let Some(text) = text.map(str::trim).filter(|t| !t.is_empty()) else { return Ok(Selection::default()) };
        let mut chosen = Vec::new();
        for token in text.split(',').map(str::trim).filter(|t| !t.is_empty()) {
            let Some((name, _)) = SECTIONS.iter().find(|(name, _)| *name == token) else {
                let known: Vec<&str> = SECTIONS.iter().map(|(n, _)| *n).collect();
                return Err(ApiError::validation(
                    "sections",
                    format!("unknown section {token:?}; known: {}", known.join(", ")),
                ));
            };
            chosen.push(*name);
        }
        Ok(Selection { sections: Some(chosen) })
    }

    fn keeps(&self, section: &str) -> bool {
        self.sections.as_ref().is_none_or(|s| s.contains(&section))
    }

    /// Drops the card members of sections not chosen.
    fn apply(&self, record: &mut NeutralRecord) {
        let Some(chosen) = &self.sections else { return };
        let kept: Vec<&str> = SECTIONS
            .iter()
            .filter(|(name, _)| chosen.contains(name))
            .flat_map(|(_, members)| members.iter().copied())
            .chain(ALWAYS.iter().copied())
            .collect();
        let Ok(Value::Object(card)) = serde_json::to_value(&record.card) else { return };
        let card: Map<String, Value> = card.into_iter().filter(|(k, _)| kept.contains(&k.as_str())).collect();
        record.card = serde_json::from_value(Value::Object(card)).unwrap_or_default();
        if !chosen.contains(&"custom_fields") {
            record.passthrough.remove(mycorrhizal_codecs::jscontact::PASSTHROUGH_VCARD_PROPS);
        }
    }
}

/// The neutral record of a stored contact as it leaves the server: its own UID (the original
/// one when the import had to replace a non-UUID UID), and its photo inline.
fn record_of(row: &Row<Contact>, picture: Option<Vec<u8>>, selection: &Selection) -> NeutralRecord {
    let c = &row.body;
    let mut card = c.parsed_card();
    let mut passthrough: Map<String, Value> = serde_json::from_str(&c.passthrough).unwrap_or_default();
    let original = passthrough
        .get_mut("jsContactProps")
        .and_then(Value::as_object_mut)
        .and_then(|p| p.remove(ORIGINAL_UID_POINTER))
        .and_then(|v| v.as_str().map(str::to_string));
    if passthrough.get("jsContactProps").and_then(Value::as_object).is_some_and(Map::is_empty) {
        passthrough.remove("jsContactProps");
    }
    card.uid = Some(original.unwrap_or_else(|| c.uid.clone()));
    if let Some(bytes) = picture
        && let Some(media_type) = vcard::sniff(&bytes)
    {
        vcard::put_photo(&mut card, &Photo { media_type: media_type.to_string(), bytes });
    }
    let mut record = NeutralRecord {
        card,
        crm: serde_json::from_str(&c.crm).unwrap_or_default(),
        passthrough,
        gender: c.gender.clone(),
    };
    selection.apply(&mut record);
    record
}

/// The response body: a channel of chunks.
struct Chunks(mpsc::Receiver<Result<Bytes, std::io::Error>>);

impl futures_core::Stream for Chunks {
    type Item = Result<Bytes, std::io::Error>;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        self.0.poll_recv(cx)
    }
}

/// Why an export stopped: the spec's `details.category` (`database`, `serialization`) and what
/// the log says.
#[derive(Debug)]
struct Failure {
    category: &'static str,
    message: String,
}

impl Failure {
    fn database(e: impl std::fmt::Display) -> Self {
        Failure { category: "database", message: e.to_string() }
    }

    fn serialization(e: impl std::fmt::Display) -> Self {
        Failure { category: "serialization", message: e.to_string() }
    }
}

/// Where a renderer writes: `false` once nothing more can be written (the client has gone).
trait Out {
    fn push(&mut self, bytes: &[u8]) -> bool;
}

/// Hands bytes to the response in chunks of [`CHUNK`]. The first chunk lets the handler answer
/// 200; until then a failure is still the spec's clean 500.
struct Sink {
    buffer: Vec<u8>,
    tx: mpsc::Sender<Result<Bytes, std::io::Error>>,
    ready: Option<oneshot::Sender<Result<(), Failure>>>,
}

impl Out for Sink {
    fn push(&mut self, bytes: &[u8]) -> bool {
        self.buffer.extend_from_slice(bytes);
        if self.buffer.len() >= CHUNK { self.flush() } else { true }
    }
}

impl Sink {
    fn flush(&mut self) -> bool {
        if self.buffer.is_empty() {
            return true;
        }
        self.start();
        let chunk = Bytes::from(std::mem::replace(&mut self.buffer, Vec::with_capacity(CHUNK)));
        self.tx.blocking_send(Ok(chunk)).is_ok()
    }

    /// Lets the response start; from here a failure can only end the stream early.
    fn start(&mut self) {
        if let Some(r) = self.ready.take() {
            let _ = r.send(Ok(()));
        }
    }

    fn client_gone(&self) -> bool {
        self.tx.is_closed()
    }
}

/// A ZIP archive's bytes go to the response as they are made.
impl std::io::Write for Sink {
    fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
        if Out::push(self, bytes) {
            Ok(bytes.len())
        } else {
            Err(std::io::Error::new(std::io::ErrorKind::BrokenPipe, "the client went away"))
        }
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// What a producer writes for each contact, and around them.
trait Render: Send + 'static {
    fn start(&mut self, _out: &mut dyn Out) -> bool {
        true
    }
    /// Whether the contacts' pictures are written (inline); they are read only then.
    fn photos(&self) -> bool {
        true
    }
    /// One contact: its stored row and its record as it leaves the server.
    fn contact(&mut self, row: &Row<Contact>, record: &NeutralRecord, out: &mut dyn Out) -> Result<bool, Failure>;
    fn end(&mut self, _out: &mut dyn Out) -> bool {
        true
    }
}

/// Runs `producer` on the blocking pool, streaming what it writes. Answers when the first chunk
/// is ready (or the producer ends): then the response starts, or, if the producer failed first,
/// the export fails with the spec's nested 500 and no byte is sent. `operation` names the export
/// in that answer and in the log (`export:csv`, `export:vcard4`, ...).
async fn stream_export(
    content_type: &'static str,
    filename: String,
    operation: &'static str,
    producer: impl FnOnce(&mut Sink) -> Result<(), Failure> + Send + 'static,
) -> Response {
    let (tx, rx) = mpsc::channel(IN_FLIGHT);
    let (ready, started) = oneshot::channel::<Result<(), Failure>>();
    tokio::task::spawn_blocking(move || {
        let mut out = Sink { buffer: Vec::with_capacity(CHUNK), tx, ready: Some(ready) };
        match producer(&mut out) {
            Ok(()) => {
                out.flush();
                out.start();
            }
            Err(e) => {
                tracing::error!(event = "export_failed", operation, category = e.category, error = %e.message);
                match out.ready.take() {
                    Some(r) => {
                        let _ = r.send(Err(e));
                    }
                    None => {
                        let _ = out.tx.blocking_send(Err(std::io::Error::other(e.message)));
                    }
                }
            }
        }
    });
    match started.await {
        Ok(Ok(())) => (
            StatusCode::OK,
            [
                (CONTENT_TYPE, content_type.to_string()),
                (CONTENT_DISPOSITION, format!("attachment; filename=\"{filename}\"")),
            ],
            Body::from_stream(Chunks(rx)),
        )
            .into_response(),
        Ok(Err(failure)) => export_failure(operation, failure.category),
        // The producer died without a word (a panic): it was reading the database.
        Err(_) => export_failure(operation, "database"),
    }
}

/// Streams every live contact through `render`, one page per read transaction, in name order.
async fn stream_contacts(
    state: &AppState,
    user: &AuthUser,
    only_uid: Option<String>,
    selection: Selection,
    mut render: impl Render,
    content_type: &'static str,
    filename: String,
    operation: &'static str,
) -> Response {
    let scope = state.engine.user(user.id);
    stream_export(content_type, filename, operation, move |out| {
        produce(&scope, only_uid.as_deref(), &selection, &mut render, out)
    })
    .await
}

fn produce(
    scope: &UserScope,
    only_uid: Option<&str>,
    selection: &Selection,
    render: &mut dyn Render,
    out: &mut dyn Out,
) -> Result<(), Failure> {
    let mut after: Option<(String, u64)> = None;
    let mut first = true;
    loop {
        let rows: Vec<Row<Contact>> = {
            let view = scope.view().map_err(Failure::database)?;
            match only_uid {
                Some(uid) => {
                    let ids = view.find::<Contact>(INDEX_UID, &uid.to_lowercase()).map_err(Failure::database)?;
                    let mut rows = Vec::new();
                    for id in ids {
                        rows.push(view.get::<Contact>(id).map_err(Failure::database)?);
                    }
                    rows
                }
                None => {
                    let page = view
                        .page::<Contact>(INDEX_SORT_NAME, after.as_ref().map(|(v, id)| (v.as_str(), *id)), PAGE, false)
                        .map_err(Failure::database)?;
                    after = page.next.clone();
                    page.rows
                }
            }
        };
        if first {
            first = false;
            if !render.start(out) {
                return Ok(());
            }
        }
        for row in &rows {
            // A picture is read when its contact is written, from a read of its own: a page's
            // pictures together could be hundreds of megabytes, and memory is to stay flat.
            let picture = if render.photos() && selection.keeps("media") && !row.body.photo.is_empty() {
                scope.view().and_then(|v| v.blob(&row.body.photo)).map_err(Failure::database)?
            } else {
                None
            };
            if !render.contact(row, &record_of(row, picture, selection), out)? {
                return Ok(());
            }
        }
        if only_uid.is_some() || after.is_none() {
            break;
        }
    }
    render.end(out);
    Ok(())
}

/// The spec's export failure: 500 with `{error: {code, message, details: {operation, category}}}`.
fn export_failure(operation: &str, category: &str) -> Response {
    let body = json!({
        "error": {
            "code": "INTERNAL_ERROR",
            "message": "The export failed; nothing was sent. Try again, and see the server log if it persists.",
            "details": { "operation": operation, "category": category },
        }
    });
    (StatusCode::INTERNAL_SERVER_ERROR, axum::Json(body)).into_response()
}

struct VcfRender(Version);

impl Render for VcfRender {
    fn contact(&mut self, _row: &Row<Contact>, record: &NeutralRecord, out: &mut dyn Out) -> Result<bool, Failure> {
        let card = vcard::write(record, self.0).map_err(Failure::serialization)?;
        Ok(out.push(card.as_bytes()))
    }
}

#[derive(Debug, Default, Deserialize, IntoParams)]
pub struct VcfQuery {
    /// `4` (default), `4.0`, `3` or `3.0`; a `v` prefix is tolerated.
    pub version: Option<String>,
    /// Export only the contact with this card UID.
    pub vcard_uid: Option<String>,
    /// Comma list of sections to include: emails, phones, addresses, organizations, anniversaries,
    /// media, online_services, links, notes, keywords, related_to, personal_info, speak_to_as,
    /// members, languages, custom_fields. Names are always included.
    pub sections: Option<String>,
    /// `true` or `1`. Accepted for compatibility; contact cards hold no sensitive-only members.
    pub include_sensitive: Option<String>,
}

#[utoipa::path(get, path = "/api/v1/export/vcf", tag = "export", params(VcfQuery), responses(
    (status = 200, description = "`text/vcard; charset=utf-8`, one card per live contact with photos inline, streamed; attachment `mycorrhizal-contacts-YYYY-MM-DD.vcf`"),
    (status = 400, description = "`VALIDATION_ERROR` naming `version` or `sections`"),
    (status = 500, description = "`{error: {code: INTERNAL_ERROR, message, details: {operation, category}}}`")))]
pub async fn vcf(
    State(state): State<AppState>,
    user: AuthUser,
    Query(q): Query<VcfQuery>,
) -> Result<Response, ApiError> {
    let version = match q.version.as_deref().map(str::trim).filter(|v| !v.is_empty()) {
        None => Version::V4,
        Some(v) => Version::parse(v).ok_or_else(|| ApiError::validation("version", "must be 4, 4.0, 3 or 3.0"))?,
    };
    let selection = Selection::parse(q.sections.as_deref())?;
    let uid = q.vcard_uid.filter(|u| !u.trim().is_empty()).map(|u| resolve_uid(&u));
    let filename = format!("mycorrhizal-contacts-{}.vcf", state.today());
    Ok(stream_contacts(
        &state,
        &user,
        uid,
        selection,
        VcfRender(version),
        "text/vcard; charset=utf-8",
        filename,
        if version == Version::V3 { "export:vcard3" } else { "export:vcard4" },
    )
    .await)
}

/// A `vcard_uid` as stored: ours are UUIDs; an imported card's own non-UUID UID maps the way
/// the import mapped it.
fn resolve_uid(uid: &str) -> String {
    let card = mycorrhizal_codecs::card::Card { uid: Some(uid.trim().to_string()), ..Default::default() };
    crate::crm::import::stable_uid(&card)
}

struct JsRender {
    first: bool,
}

impl Render for JsRender {
    fn start(&mut self, out: &mut dyn Out) -> bool {
        out.push(b"[")
    }

    fn contact(&mut self, _row: &Row<Contact>, record: &NeutralRecord, out: &mut dyn Out) -> Result<bool, Failure> {
        let card = mycorrhizal_codecs::jscontact::from_neutral(record);
        let sep: &[u8] = if self.first { b"\n" } else { b",\n" };
        self.first = false;
        Ok(out.push(sep) && out.push(card.to_string().as_bytes()))
    }

    fn end(&mut self, out: &mut dyn Out) -> bool {
        out.push(b"\n]\n")
    }
}

#[derive(Debug, Default, Deserialize, IntoParams)]
pub struct JsQuery {
    /// As for the vCard export.
    pub sections: Option<String>,
    /// `true` or `1`; accepted for compatibility.
    pub include_sensitive: Option<String>,
}

#[utoipa::path(get, path = "/api/v1/export/jscontact", tag = "export", params(JsQuery), responses(
    (status = 200, description = "`application/jscontact+json; charset=utf-8`: a JSON array of JSContact (RFC 9553) cards, streamed; attachment `mycorrhizal-contacts-YYYY-MM-DD.jscontact.json`"),
    (status = 400, description = "`VALIDATION_ERROR` naming `sections`"),
    (status = 500, description = "`{error: {code: INTERNAL_ERROR, message, details: {operation, category}}}`")))]
pub async fn jscontact(
    State(state): State<AppState>,
    user: AuthUser,
    Query(q): Query<JsQuery>,
) -> Result<Response, ApiError> {
    let selection = Selection::parse(q.sections.as_deref())?;
    let filename = format!("mycorrhizal-contacts-{}.jscontact.json", state.today());
    Ok(stream_contacts(
        &state,
        &user,
        None,
        selection,
        JsRender { first: true },
        "application/jscontact+json; charset=utf-8",
        filename,
        "export:jscontact",
    )
    .await)
}

/// Contacts as CSV. `ids` puts each contact's `id` and `uid` (as the API shows them) first: the ZIP's other tables name
/// contacts by id. Without them (`GET /export`) the columns are exactly the re-importable ones.
struct CsvRender {
    ids: bool,
}

impl Render for CsvRender {
    fn photos(&self) -> bool {
        false
    }

    fn start(&mut self, out: &mut dyn Out) -> bool {
        let ids: &[&str] = if self.ids { &["id", "uid"] } else { &[] };
        let headers: Vec<String> =
            ids.iter().chain(mycorrhizal_codecs::csv::EXPORT_HEADERS).map(|h| h.to_string()).collect();
        csv_row(&headers, out).unwrap_or(false)
    }

    fn contact(&mut self, row: &Row<Contact>, record: &NeutralRecord, out: &mut dyn Out) -> Result<bool, Failure> {
        let mut cells = mycorrhizal_codecs::csv::export_row(record);
        if self.ids {
            cells.splice(0..0, [row.id.to_string(), row.body.uid.clone()]);
        }
        csv_row(&cells, out)
    }
}

/// One CSV row (quoted and formula-neutralised by the codec's writer) into the stream.
fn csv_row(cells: &[String], out: &mut dyn Out) -> Result<bool, Failure> {
    let mut writer = mycorrhizal_codecs::csv::CsvWriter::buffer();
    let refs: Vec<&str> = cells.iter().map(String::as_str).collect();
    let bytes = writer.write_row(&refs).and_then(|()| writer.finish()).map_err(Failure::serialization)?;
    Ok(out.push(&bytes))
}

#[derive(Debug, Default, Deserialize, IntoParams)]
pub struct CsvQuery {
    /// `contacts` (default), `all` (every table below in one ZIP), `notes`, `activities`,
    /// `reminders`, `reminder_completions`, `relationships`, `life_events`, `gifts`,
    /// `conversation_agenda`, `households`, `household_members` or `cadence_policies`.
    pub table: Option<String>,
}

/// The CSV tables other than contacts: record kinds exported column by column.
const TABLES: &[&str] = &[
    "notes",
    "activities",
    "reminders",
    "reminder_completions",
    "relationships",
    "life_events",
    "gifts",
    "conversation_agenda",
    "households",
    "household_members",
    "cadence_policies",
];

#[utoipa::path(get, path = "/api/v1/export", tag = "export", params(CsvQuery), responses(
    (status = 200, description = "`text/csv; charset=utf-8`, attachment `mycorrhizal-export-YYYY-MM-DD.csv` (or `…-<table>-YYYY-MM-DD.csv`). Your data is several tables: `contacts` (the default; its columns re-import with identity mappings) and, with `table=`, notes, activities, reminders, reminder_completions, relationships, life_events, gifts, conversation_agenda, households, household_members and cadence_policies (columns `id`, `created_at`, `updated_at`, then the record's own fields; lists and objects as JSON). `table=all` gives all of them at once: `application/zip`, attachment `mycorrhizal-export-YYYY-MM-DD.zip`, holding `contacts.csv` (the contacts table with each contact's `id` and `uid` first, which the other tables' `contact_id` columns name), one `<table>.csv` per table above (a table with no rows is a header-only file) and `README.txt` saying what each file holds. Cells that a spreadsheet would run as a formula are prefixed with `'`."),
    (status = 400, description = "`VALIDATION_ERROR` naming `table`"),
    (status = 500, description = "`{error: {code: INTERNAL_ERROR, message, details: {operation, category}}}`")))]
pub async fn csv(
    State(state): State<AppState>,
    user: AuthUser,
    Query(q): Query<CsvQuery>,
) -> Result<Response, ApiError> {
    let table = q.table.as_deref().map(str::trim).filter(|t| !t.is_empty()).unwrap_or("contacts");
    if table == "contacts" {
        let filename = format!("mycorrhizal-export-{}.csv", state.today());
        let render = CsvRender { ids: false };
        return Ok(stream_contacts(
            &state,
            &user,
            None,
            Selection::default(),
            render,
            "text/csv; charset=utf-8",
            filename,
            "export:csv",
        )
        .await);
    }
    let scope = state.engine.user(user.id);
    if table == "all" {
        let filename = format!("mycorrhizal-export-{}.zip", state.today());
        return Ok(stream_export("application/zip", filename, "export:csv", move |out| all_tables(&scope, out)).await);
    }
    let Some(table) = TABLES.iter().find(|t| **t == table).copied() else {
        return Err(ApiError::validation("table", format!("must be contacts, all or one of {}", TABLES.join(", "))));
    };
    let filename = format!("mycorrhizal-export-{table}-{}.csv", state.today());
    Ok(stream_export("text/csv; charset=utf-8", filename, "export:csv", move |out| table_csv(&scope, table, out)).await)
}

/// What `README.txt` of the ZIP export says.
const ZIP_README: &str = "Mycorrhizal export: all of your data, one CSV file per table (UTF-8, comma separated, \
first row the column names).\r\n\r\ncontacts.csv: your contacts, each with its id and uid first; \
the other columns re-import as they are (POST /contacts/import/upload). Photos are in the vCard \
export (GET /export/vcf).\r\n\
Every other file: one row per record, columns id, created_at, updated_at, then the record's own \
fields; lists and objects are JSON text. A `contact_id` column names a row of contacts.csv by its id.\r\n\
Cells a spreadsheet would run as a formula start with an apostrophe.\r\n";

/// Every table as one ZIP, streamed: `contacts.csv`, then one file per [`TABLES`] entry, then
/// `README.txt`. Each file is written as it is read, so memory stays flat.
fn all_tables(scope: &UserScope, sink: &mut Sink) -> Result<(), Failure> {
    use zip::write::SimpleFileOptions;
    let options = SimpleFileOptions::default()
        .compression_method(zip::CompressionMethod::Deflated)
        .large_file(true)
        .unix_permissions(0o644);
    let mut zip = zip::ZipWriter::new_stream(&mut *sink);
    let failed = |e: zip::result::ZipError| Failure::serialization(e);
    zip.start_file("contacts.csv", options).map_err(failed)?;
    let mut entry = ZipEntry { zip: &mut zip, gone: false };
    produce(scope, None, &Selection::default(), &mut CsvRender { ids: true }, &mut entry)?;
    for table in TABLES {
        if entry.gone {
            return Ok(());
        }
        entry.zip.start_file(format!("{table}.csv"), options).map_err(failed)?;
        table_csv(scope, table, &mut entry)?;
    }
    if entry.gone {
        return Ok(());
    }
    zip.start_file("README.txt", options).map_err(failed)?;
    std::io::Write::write_all(&mut zip, ZIP_README.as_bytes()).map_err(Failure::serialization)?;
    let finished = zip.finish().map(|_| ());
    match finished {
        Ok(()) => Ok(()),
        Err(_) if sink.client_gone() => Ok(()),
        Err(e) => Err(failed(e)),
    }
}

/// The file of a ZIP being written, as a renderer's output.
struct ZipEntry<'z, W: std::io::Write> {
    zip: &'z mut zip::ZipWriter<zip::write::StreamWriter<W>>,
    /// The archive could not be written further (the client went away).
    gone: bool,
}

impl<W: std::io::Write> Out for ZipEntry<'_, W> {
    fn push(&mut self, bytes: &[u8]) -> bool {
        self.gone = self.gone || std::io::Write::write_all(self.zip, bytes).is_err();
        !self.gone
    }
}

/// One record kind as CSV: `id`, `created_at`, `updated_at`, then the body's fields (lists and
/// objects as JSON). Two passes over pages of rows, each page its own read transaction: the
/// first gathers the columns, the second writes, so memory does not grow with the table.
fn table_csv(scope: &UserScope, table: &str, out: &mut dyn Out) -> Result<(), Failure> {
    use crate::crm::{depth, households, records};
    match table {
        "notes" => rows_csv::<records::Note>(scope, out),
        "activities" => rows_csv::<records::Activity>(scope, out),
        "reminders" => rows_csv::<records::Reminder>(scope, out),
        "reminder_completions" => rows_csv::<records::Completion>(scope, out),
        "relationships" => rows_csv::<records::Relationship>(scope, out),
        "life_events" => rows_csv::<depth::LifeEvent>(scope, out),
        "gifts" => rows_csv::<depth::Gift>(scope, out),
        "conversation_agenda" => rows_csv::<depth::AgendaItem>(scope, out),
        "households" => rows_csv::<households::Household>(scope, out),
        "household_members" => rows_csv::<households::HouseholdMember>(scope, out),
        "cadence_policies" => rows_csv::<depth::CadencePolicy>(scope, out),
        _ => Err(Failure { category: "validation", message: format!("unknown table {table}") }),
    }
}

/// Calls `each` with every live row of `R`, a page per read transaction, oldest change first,
/// until it answers `false`.
fn each_row<R: mycorrhizal_engine::Record>(
    scope: &UserScope,
    mut each: impl FnMut(&Row<R>) -> Result<bool, Failure>,
) -> Result<(), Failure> {
    let mut after: Option<(String, u64)> = None;
    loop {
        let page = scope
            .view()
            .and_then(|v| v.page::<R>(UPDATED_INDEX, after.as_ref().map(|(v, id)| (v.as_str(), *id)), PAGE, false))
            .map_err(Failure::database)?;
        for row in &page.rows {
            if !each(row)? {
                return Ok(());
            }
        }
        after = page.next;
        if after.is_none() {
            return Ok(());
        }
    }
}

fn rows_csv<R: mycorrhizal_engine::Record + serde::Serialize>(
    scope: &UserScope,
    out: &mut dyn Out,
) -> Result<(), Failure> {
    let mut columns: Vec<String> = Vec::new();
    each_row::<R>(scope, |row| {
        match serde_json::to_value(&row.body).map_err(Failure::serialization)? {
            Value::Object(m) => {
                for k in m.keys() {
                    if !columns.contains(k) {
                        columns.push(k.clone());
                    }
                }
            }
            _ => return Err(Failure::serialization("a row is not a JSON object")),
        }
        Ok(true)
    })?;
    let mut header = vec!["id".to_string(), "created_at".to_string(), "updated_at".to_string()];
    header.extend(columns.iter().cloned());
    if !csv_row(&header, out)? {
        return Ok(());
    }
    each_row::<R>(scope, |row| {
        let body = serde_json::to_value(&row.body).map_err(Failure::serialization)?;
        let mut cells = vec![row.id.to_string(), row.meta.created_at.to_string(), row.meta.updated_at.to_string()];
        for c in &columns {
            cells.push(match body.get(c) {
                None | Some(Value::Null) => String::new(),
                Some(Value::String(s)) => s.clone(),
                Some(other) => other.to_string(),
            });
        }
        csv_row(&cells, out)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    async fn body_of(response: Response) -> (StatusCode, Result<Vec<u8>, String>) {
        let status = response.status();
        let body = axum::body::to_bytes(response.into_body(), usize::MAX).await;
        (status, body.map(|b| b.to_vec()).map_err(|e| e.to_string()))
    }

    /// A failure before the first chunk is the spec's nested 500 with its category; nothing of
    /// the export is sent.
    #[tokio::test]
    async fn a_failure_before_the_first_chunk_is_the_nested_500() {
        for (failure, category) in
            [(Failure::serialization("no card"), "serialization"), (Failure::database("read failed"), "database")]
        {
            let response = stream_export("text/vcard", "x.vcf".into(), "export:vcard4", move |out| {
                out.push(b"BEGIN:VCARD\r\n");
                Err(failure)
            })
            .await;
            let (status, body) = body_of(response).await;
            assert_eq!(status, StatusCode::INTERNAL_SERVER_ERROR);
            let body: Value = serde_json::from_slice(&body.expect("a whole body")).expect("json");
            assert_eq!(body["error"]["code"], "INTERNAL_ERROR");
            assert_eq!(body["error"]["details"], json!({ "operation": "export:vcard4", "category": category }));
            assert!(body["error"]["message"].as_str().is_some_and(|m| !m.is_empty()));
        }
    }

    /// After the first chunk the status is sent: a failure ends the stream with an error, so the
    /// client sees a broken download, never a complete-looking short file.
    #[tokio::test]
    async fn a_failure_after_the_first_chunk_breaks_the_stream() {
        let response = stream_export("text/csv", "x.csv".into(), "export:csv", |out| {
            out.push(&vec![b'a'; CHUNK + 1]);
            Err(Failure::database("page 2 failed"))
        })
        .await;
        let (status, body) = body_of(response).await;
        assert_eq!(status, StatusCode::OK);
        assert!(body.is_err(), "the body ends in an error");
    }

    /// A producer that writes nothing still answers 200 with an empty body.
    #[tokio::test]
    async fn an_empty_export_is_an_empty_body() {
        let (status, body) =
            body_of(stream_export("text/vcard", "x.vcf".into(), "export:vcard4", |_| Ok(())).await).await;
        assert_eq!((status, body.expect("body")), (StatusCode::OK, Vec::new()));
    }
}
