//! Import endpoints: uploads (CSV, vCard, JSContact) and a JSON batch of neutral records open a
//! session with a per-row preview (duplicate match, merge diff, within-upload duplicates); a
//! confirm applies the person's decisions. The rules live in `crm::import`; this module reads
//! requests and shapes responses.

use std::collections::HashMap;
use std::time::Duration;

use axum::extract::{Multipart, Query, State};
use axum::response::Response;
use mycorrhizal_codecs::csv::{self, ColumnMapping};
use mycorrhizal_codecs::record::NeutralRecord;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use utoipa::{IntoParams, ToSchema};

use crate::auth::AuthUser;
use crate::crm::import::{self, Action, ImportRow, SessionError, Source, Stage};
use crate::error::ApiError;
use crate::http::json::{Json, json_bytes};
use crate::state::AppState;

/// Records per batch.
pub const MAX_RECORDS: usize = 500;
/// Rows shown in a CSV upload's `sample_data`.
const SAMPLE_ROWS: usize = 5;

/// Reads the multipart field `file`, refusing a wrong extension and enforcing `limit` while
/// streaming (so an oversized upload is never held in memory whole).
async fn read_file(mut form: Multipart, extensions: &[&str], limit: usize) -> Result<Vec<u8>, ApiError> {
    while let Some(mut field) = form.next_field().await.map_err(|e| ApiError::invalid_input("file", e.body_text()))? {
        if field.name() != Some("file") {
            continue;
        }
        if let Some(name) = field.file_name().map(str::to_lowercase).filter(|n| !n.is_empty())
            && !extensions.iter().any(|ext| name.ends_with(ext))
        {
            return Err(ApiError::invalid_input("file", format!("must be a {} file", extensions.join(" or "))));
        }
        let mut bytes = Vec::new();
        while let Some(chunk) = field.chunk().await.map_err(|e| ApiError::invalid_input("file", e.body_text()))? {
            if bytes.len() + chunk.len() > limit {
                return Err(ApiError::PayloadTooLarge { limit });
            }
            bytes.extend_from_slice(&chunk);
        }
        if bytes.is_empty() {
            return Err(ApiError::invalid_input("file", "the file is empty"));
        }
        return Ok(bytes);
    }
    Err(ApiError::invalid_input("file", "missing: send the file in the multipart field \"file\""))
}

fn too_many(count: usize, max: usize) -> Result<(), ApiError> {
    if count > max {
        return Err(ApiError::invalid_input(
            "file",
            format!("holds {count} contacts; at most {max} per upload (IMPORT_MAX_CARDS)"),
        ));
    }
    Ok(())
}

/// The preview body every upload and the CSV preview answer with, serialized straight from the
/// session's rows (a preview of 10,000 rows is megabytes: no intermediate JSON tree, no copy of
/// the rows).
fn preview(session_id: &str, rows: &[ImportRow]) -> Result<Vec<u8>, ApiError> {
    let body = PreviewBody {
        session_id,
        rows: PreviewRows(rows),
        total_rows: rows.len(),
        valid_rows: rows.iter().filter(|r| r.record.is_some()).count(),
        duplicate_count: rows.iter().filter(|r| r.duplicate.is_some() || r.batch_duplicate_of.is_some()).count(),
        error_count: rows.iter().filter(|r| r.record.is_none()).count(),
    };
    serde_json::to_vec(&body).map_err(ApiError::internal)
}

#[derive(Serialize)]
struct PreviewBody<'a> {
    session_id: &'a str,
    rows: PreviewRows<'a>,
    total_rows: usize,
    valid_rows: usize,
    duplicate_count: usize,
    error_count: usize,
}

struct PreviewRows<'a>(&'a [ImportRow]);

impl Serialize for PreviewRows<'_> {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_seq(self.0.iter().map(|r| PreviewRow {
            row_index: r.index,
            line: r.line,
            parsed_contact: r.record.as_ref().map(import::parsed_contact).unwrap_or_default(),
            validation_errors: &r.errors,
            duplicate_match: r.duplicate.as_ref(),
            suggested_action: r.suggested_action(),
            merge_diff: r.diff.as_ref(),
            batch_duplicate_of: r.batch_duplicate_of,
            diagnostics: &r.diagnostics,
        }))
    }
}

#[derive(Serialize)]
struct PreviewRow<'a> {
    row_index: usize,
    line: usize,
    parsed_contact: std::collections::BTreeMap<&'static str, String>,
    validation_errors: &'a [String],
    duplicate_match: Option<&'a import::DuplicateMatch>,
    suggested_action: &'static str,
    merge_diff: Option<&'a import::MergeDiff>,
    batch_duplicate_of: Option<usize>,
    #[serde(skip_serializing_if = "<[String]>::is_empty")]
    diagnostics: &'a [String],
}

/// Runs duplicate detection on fresh rows and opens a session holding them; the preview is
/// serialized on the blocking pool, before the rows move into the session.
async fn open_previewed(
    state: &AppState,
    user: &AuthUser,
    source: Source,
    mut rows: Vec<ImportRow>,
) -> Result<Response, ApiError> {
    // Refused before the duplicate lookups, which are the costly part of a large upload.
    state.imports.check_room(user.id).map_err(session_error)?;
    let scope = state.engine.user(user.id);
    let id = import::Sessions::fresh_id();
    let session = id.clone();
    let (rows, body) = state
        .blocking(move |_| {
            import::detect(&scope.view()?, &mut rows)?;
            let body = preview(&session, &rows)?;
            Ok::<_, ApiError>((rows, body))
        })
        .await??;
    state.imports.open_as(id, user.id, source, None, Stage::Previewed(rows)).map_err(session_error)?;
    Ok(json_bytes(body))
}

#[utoipa::path(post, path = "/api/v1/contacts/import/upload", tag = "import",
    request_body(content_type = "multipart/form-data", description = "Field `file`: a `.csv` file (UTF-8 with or without BOM, UTF-16 with BOM, or Windows-1252; comma, semicolon or tab separated), at most `IMPORT_MAX_CSV_MB` (20 MB)"),
    responses((status = 200, description = "`{session_id, headers, suggested_mappings: [{csv_column, contact_field, group}], row_count, sample_data}`; Google, Outlook and Apple headers are recognised"),
        (status = 400, description = "`INVALID_INPUT` naming `file`: missing, wrong extension, unreadable, or too many rows"),
        (status = 413, description = "Larger than the configured limit"),
        (status = 429, description = "32 previews already wait for their confirm; `Retry-After` says when the oldest expires")))]
pub async fn upload_csv(
    State(state): State<AppState>,
    user: AuthUser,
    form: Multipart,
) -> Result<axum::Json<Value>, ApiError> {
    state.imports.check_room(user.id).map_err(session_error)?;
    let bytes = read_file(form, &[".csv", ".txt"], state.config.import.max_csv_bytes).await?;
    let table = state
        .blocking(move |_| {
            let text = mycorrhizal_codecs::text::decode(&bytes);
            csv::read_table(&text)
        })
        .await?
        .map_err(|e| ApiError::invalid_input("file", format!("line {}: {}", e.line, e.reason)))?;
    too_many(table.rows.len(), state.config.import.max_cards)?;
    let body = json!({
        "headers": table.headers,
        "suggested_mappings": csv::suggest_mappings(&table.headers),
        "row_count": table.rows.len(),
        "sample_data": table.rows.iter().take(SAMPLE_ROWS).collect::<Vec<_>>(),
    });
    let id = state.imports.open(user.id, Source::Csv, Some(table), Stage::Uploaded).map_err(session_error)?;
    let mut body = body;
    body["session_id"] = json!(id);
    Ok(axum::Json(body))
}

#[derive(Debug, Deserialize, ToSchema)]
pub struct PreviewRequest {
    pub session_id: String,
    #[schema(value_type = Vec<Object>)]
    pub mappings: Vec<ColumnMapping>,
}

#[utoipa::path(post, path = "/api/v1/contacts/import/preview", tag = "import", request_body = PreviewRequest,
    responses((status = 200, description = "The preview: `{session_id, rows, total_rows, valid_rows, duplicate_count, error_count}`"),
        (status = 400, description = "An unknown `contact_field` or `csv_column` (named by its position)"),
        (status = 404, description = "Unknown, expired or another user's session")))]
pub async fn preview_csv(
    State(state): State<AppState>,
    user: AuthUser,
    Json(req): Json<PreviewRequest>,
) -> Result<Response, ApiError> {
    let table = state
        .imports
        .with(user.id, &req.session_id, |s| {
            if s.source != Source::Csv {
                return Err(SessionError::WrongEndpoint(s.source));
            }
            if matches!(s.stage, Stage::Applying | Stage::Done(_)) {
                return Err(SessionError::Busy);
            }
            s.table.clone().ok_or(SessionError::NotFound)
        })
        .map_err(session_error)?;
    csv::check_mappings(&table.headers, &req.mappings)
        .map_err(|(field, reason)| ApiError::validation(field, reason))?;
    let scope = state.engine.user(user.id);
    let mappings = req.mappings;
    let session = req.session_id.clone();
    let (rows, body) = state
        .blocking(move |_| {
            let mut rows: Vec<ImportRow> = csv::apply_mappings(&table, &mappings)
                .into_iter()
                .enumerate()
                .map(|(index, row)| ImportRow::from_csv(index, row))
                .collect();
            import::detect(&scope.view()?, &mut rows)?;
            let body = preview(&session, &rows)?;
            Ok::<_, ApiError>((rows, body))
        })
        .await??;
    state
        .imports
        .with(user.id, &req.session_id, |s| {
            // A confirm may have started while the mapping was applied: its rows stand.
            if matches!(s.stage, Stage::Applying | Stage::Done(_)) {
                return Err(SessionError::Busy);
            }
            s.stage = Stage::Previewed(rows);
            Ok(())
        })
        .map_err(session_error)?;
    Ok(json_bytes(body))
}

#[utoipa::path(post, path = "/api/v1/contacts/import/vcf/upload", tag = "import", params(UploadQuery),
    request_body(content_type = "multipart/form-data", description = "Field `file`: a `.vcf` file of vCard 2.1, 3.0 or 4.0 cards, at most `IMPORT_MAX_FILE_MB` (50 MB) and `IMPORT_MAX_CARDS` cards"),
    responses((status = 200, description = "The preview; a card that cannot be read is a row with `validation_errors` naming its line, and the others import"),
        (status = 400, description = "`INVALID_INPUT` naming `file`, or `VALIDATION_ERROR` naming `categories`"), (status = 413, description = "Larger than the configured limit"),
        (status = 429, description = "32 previews already wait for their confirm; `Retry-After` says when the oldest expires")))]
pub async fn upload_vcf(
    State(state): State<AppState>,
    user: AuthUser,
    Query(q): Query<UploadQuery>,
    form: Multipart,
) -> Result<Response, ApiError> {
    let categories = q.categories()?;
    let bytes = read_file(form, &[".vcf", ".vcard"], state.config.import.max_file_bytes).await?;
    let items = state.blocking(move |_| mycorrhizal_codecs::vcard::parse_file(&bytes)).await?;
    open_cards(&state, &user, Source::Vcf, items, categories).await
}

/// The cards of a vCard or JSContact file as a previewed session, their categories placed.
async fn open_cards(
    state: &AppState,
    user: &AuthUser,
    source: Source,
    items: Vec<mycorrhizal_codecs::record::Item>,
    categories: import::Categories,
) -> Result<Response, ApiError> {
    too_many(items.len(), state.config.import.max_cards)?;
    let mut rows = import::rows_of(items);
    categories.place(&mut rows);
    open_previewed(state, user, source, rows).await
}

#[derive(Debug, Default, Deserialize, IntoParams)]
pub struct UploadQuery {
    /// Where the cards' categories (vCard `CATEGORIES`, JSContact `keywords`) go: `tags` (the
    /// default) or `circles`.
    pub categories: Option<String>,
}

impl UploadQuery {
    fn categories(&self) -> Result<import::Categories, ApiError> {
        match self.categories.as_deref().map(str::trim).filter(|c| !c.is_empty()) {
            None => Ok(import::Categories::Tags),
            Some(text) => import::Categories::parse(text)
                .ok_or_else(|| ApiError::validation("categories", "must be tags or circles")),
        }
    }
}

#[utoipa::path(post, path = "/api/v1/contacts/import/jscontact/upload", tag = "import", params(UploadQuery),
    request_body(content_type = "multipart/form-data", description = "Field `file`: a `.json` JSContact (RFC 9553) file: one Card, an array of Cards, or a CardGroup"),
    responses((status = 200, description = "The preview (a vCard-family session)"), (status = 400, description = "`INVALID_INPUT` naming `file`, or `VALIDATION_ERROR` naming `categories`"),
        (status = 413, description = "Larger than the configured limit"),
        (status = 429, description = "32 previews already wait for their confirm; `Retry-After` says when the oldest expires")))]
pub async fn upload_jscontact(
    State(state): State<AppState>,
    user: AuthUser,
    Query(q): Query<UploadQuery>,
    form: Multipart,
) -> Result<Response, ApiError> {
    let categories = q.categories()?;
    let bytes = read_file(form, &[".json", ".jscontact"], state.config.import.max_file_bytes).await?;
    let items = state.blocking(move |_| mycorrhizal_codecs::jscontact::parse_file(&bytes)).await?;
    if let [mycorrhizal_codecs::record::Item::Problem(p)] = items.as_slice()
        && p.reason.starts_with("not valid JSON")
    {
        return Err(ApiError::invalid_input("file", p.reason.clone()));
    }
    open_cards(&state, &user, Source::JsContact, items, categories).await
}

#[derive(Debug, Deserialize, ToSchema)]
pub struct RecordsRequest {
    /// 1 to 500 neutral records `{card, crm?, passthrough?, gender?}`.
    #[schema(value_type = Vec<Object>)]
    pub records: Vec<Value>,
}

#[utoipa::path(post, path = "/api/v1/contacts/import/records", tag = "import", request_body = RecordsRequest,
    responses((status = 200, description = "The preview of a records session"),
        (status = 400, description = "`VALIDATION_ERROR` naming `records` (0 or more than 500); a record that is not a valid neutral record is a row with `validation_errors`"),
        (status = 413, description = "A body larger than `IMPORT_MAX_FILE_MB` (50 MB); `details.limit_bytes` says the limit"),
        (status = 429, description = "32 previews already wait for their confirm; `Retry-After` says when the oldest expires")))]
pub async fn records(
    State(state): State<AppState>,
    user: AuthUser,
    Json(req): Json<RecordsRequest>,
) -> Result<Response, ApiError> {
    if req.records.is_empty() || req.records.len() > MAX_RECORDS {
        return Err(ApiError::validation(
            "records",
            format!("between 1 and {MAX_RECORDS} records per batch (got {})", req.records.len()),
        ));
    }
    let rows = req
        .records
        .into_iter()
        .enumerate()
        .map(|(index, value)| match serde_path_to_error::deserialize::<_, NeutralRecord>(value) {
            Ok(mut record) => {
                let diagnostics = mycorrhizal_codecs::text::name_fallback(&mut record.card);
                match record.card.validate() {
                    Ok(()) => ImportRow::from_record(index, 0, record, diagnostics),
                    Err(e) => ImportRow::failed(index, 0, format!("records[{index}].{}: {}", e.field, e.reason)),
                }
            }
            Err(e) => ImportRow::failed(index, 0, format!("records[{index}].{}: {}", e.path(), e.inner())),
        })
        .collect();
    open_previewed(&state, &user, Source::Records, rows).await
}

#[derive(Debug, Deserialize, ToSchema)]
pub struct ConfirmAction {
    pub row_index: usize,
    /// `add`, `update` or `skip`.
    pub action: String,
}

#[derive(Debug, Deserialize, ToSchema)]
pub struct ConfirmRequest {
    pub session_id: String,
    /// One decision per row; a row without one is skipped.
    pub actions: Vec<ConfirmAction>,
}

fn session_error(e: SessionError) -> ApiError {
    match e {
        SessionError::NotFound => ApiError::NotFound,
        SessionError::WrongEndpoint(source) => ApiError::invalid_input(
            "session",
            match source {
                Source::Csv => "a CSV session is confirmed at /contacts/import/confirm",
                Source::Records => "a records session is confirmed at /contacts/import/vcf/confirm",
                Source::Vcf | Source::JsContact => "this session is confirmed at /contacts/import/vcf/confirm",
            },
        ),
        SessionError::NotPreviewed => {
            ApiError::invalid_input("session", "preview the column mapping (POST /contacts/import/preview) first")
        }
        SessionError::Busy => ApiError::Conflict("this import session is being confirmed".into()),
        SessionError::TooManyOpen(wait) => ApiError::Saturated {
            message: format!(
                "{} import previews are waiting for a confirm; confirm one, or retry when the oldest expires",
                import::OPEN_SESSIONS_PER_USER
            ),
            retry_after: wait.as_secs().max(1),
        },
    }
}

/// How long a confirm waits for another confirm of the same session to finish before it gives up
/// with 409; the second one then answers with the first one's result, as a repeat does.
const CONCURRENT_CONFIRM_WAIT: Duration = Duration::from_secs(120);

async fn confirm(
    state: AppState,
    user: AuthUser,
    req: ConfirmRequest,
    accepts: &[Source],
) -> Result<axum::Json<Value>, ApiError> {
    let mut actions = HashMap::new();
    for (i, a) in req.actions.iter().enumerate() {
        let action = Action::parse(&a.action)
            .ok_or_else(|| ApiError::validation(format!("actions[{i}].action"), "must be add, update or skip"))?;
        actions.insert(a.row_index, action);
    }
    let waited = tokio::time::Instant::now();
    let (source, mut rows) = loop {
        match state.imports.begin_confirm(user.id, &req.session_id, accepts) {
            Ok(Ok(taken)) => break taken,
            Ok(Err(earlier)) => return Ok(axum::Json(json!(earlier))),
            Err(SessionError::Busy) if waited.elapsed() < CONCURRENT_CONFIRM_WAIT => {
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
            Err(e) => return Err(session_error(e)),
        }
    };
    if let Some((i, a)) = req.actions.iter().enumerate().find(|(_, a)| a.row_index >= rows.len()) {
        let reason = format!("row {} does not exist (the session has {} rows)", a.row_index, rows.len());
        state.imports.finish(user.id, &req.session_id, Stage::Previewed(rows));
        return Err(ApiError::validation(format!("actions[{i}].row_index"), reason));
    }
    let scope = state.engine.user(user.id);
    let batch = state.config.import.batch_rows;
    // The session is settled inside the blocking task, so a client that hangs up mid-import
    // still leaves the result for a repeat; if the task dies, the guard drops the session (the
    // client re-uploads, and the preview shows what did get in as duplicates).
    let settle = Settle { sessions: state.imports.clone(), user: user.id, id: req.session_id.clone(), done: false };
    let result = state
        .blocking(move |_| {
            let mut settle = settle;
            let result = import::execute(&scope, source, &mut rows, &actions, batch, &|_, _| {});
            settle.sessions.finish(settle.user, &settle.id, Stage::Done(result.clone()));
            settle.done = true;
            // Every parsed card with its preview and diff is freed off the answer's path: for
            // 100,000 cards that alone took 0.4 s. Should the thread not start, they are freed here.
            let _ = std::thread::Builder::new().name("import-free".into()).spawn(move || drop(rows));
            result
        })
        .await?;
    Ok(axum::Json(json!(result)))
}

/// Drops a session whose confirm never reached its end.
struct Settle {
    sessions: std::sync::Arc<import::Sessions>,
    user: mycorrhizal_engine::UserId,
    id: String,
    done: bool,
}

impl Drop for Settle {
    fn drop(&mut self) {
        if !self.done {
            self.sessions.remove(self.user, &self.id);
        }
    }
}

#[utoipa::path(post, path = "/api/v1/contacts/import/confirm", tag = "import", request_body = ConfirmRequest,
    responses((status = 200, description = "`{total_processed, created, updated, skipped, error_count, errors}`; a repeated confirm within 15 minutes returns the first result and applies nothing"),
        (status = 400, description = "A records session (confirm it at /contacts/import/vcf/confirm), a CSV session not yet previewed, or a bad action"),
        (status = 404, description = "Unknown, expired, lost in a restart, or another user's session")))]
pub async fn confirm_csv(
    State(state): State<AppState>,
    user: AuthUser,
    Json(req): Json<ConfirmRequest>,
) -> Result<axum::Json<Value>, ApiError> {
    confirm(state, user, req, &[Source::Csv, Source::Vcf, Source::JsContact]).await
}

#[utoipa::path(post, path = "/api/v1/contacts/import/vcf/confirm", tag = "import", request_body = ConfirmRequest,
    responses((status = 200, description = "`{total_processed, created, updated, skipped, error_count, errors}`"),
        (status = 400, description = "A CSV session (confirm it at /contacts/import/confirm), or a bad action"),
        (status = 404, description = "Unknown, expired, lost in a restart, or another user's session")))]
pub async fn confirm_vcf(
    State(state): State<AppState>,
    user: AuthUser,
    Json(req): Json<ConfirmRequest>,
) -> Result<axum::Json<Value>, ApiError> {
    confirm(state, user, req, &[Source::Vcf, Source::JsContact, Source::Records]).await
}

#[utoipa::path(get, path = "/api/v1/contacts/import/runs", tag = "import",
    responses((status = 200, description = "`{import_runs: [{id, format, processed, created, updated, skipped, errors, created_at}]}`, newest first, the 50 most recent")))]
pub async fn runs(State(state): State<AppState>, user: AuthUser) -> Result<axum::Json<Value>, ApiError> {
    let scope = state.engine.user(user.id);
    let body = state
        .blocking(move |_| {
            let mut rows = scope.view()?.list::<import::ImportRun>()?;
            rows.sort_by(|a, b| b.meta.created_at.cmp(&a.meta.created_at).then(b.id.cmp(&a.id)));
            let runs: Vec<Value> = rows
                .iter()
                .map(|r| {
                    json!({
                        "id": r.id, "format": r.body.format, "processed": r.body.processed, "created": r.body.created,
                        "updated": r.body.updated, "skipped": r.body.skipped, "errors": r.body.errors,
                        "created_at": r.meta.created_at,
                    })
                })
                .collect();
            Ok::<_, ApiError>(json!({ "import_runs": runs }))
        })
        .await??;
    Ok(axum::Json(body))
}
