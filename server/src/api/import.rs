//! Import endpoints: uploads (CSV, vCard, JSContact) and a JSON batch of neutral records open a
//! session with a per-row preview (duplicate match, merge diff, within-upload duplicates); a
//! confirm applies the person's decisions. The rules live in `crm::import`; this module reads
//! requests (the multipart upload, streamed against its size limit), calls one operation there,
//! and shapes the response.

use std::io::Seek;

use crate::http::extract::Query;
use axum::body::Body;
use axum::extract::multipart::Field;
use axum::extract::{Multipart, State};
use axum::http::header::CONTENT_TYPE;
use axum::response::{IntoResponse, Response};
use mycorrhizal_codecs::csv::ColumnMapping;
use serde::Deserialize;
use serde_json::Value;
use utoipa::{IntoParams, ToSchema};

use crate::auth::AuthUser;
use crate::crm::export::{CHUNK, Sink, produce};
use crate::crm::import::{
    self, CardFile, CsvUpload, Decision, ImportError, ImportResult, ImportRunList, Previewed, SessionError, Source,
};
use crate::error::ApiError;
use crate::http::extract::FileUpload;
use crate::http::json::Json;
use crate::http::upload::{self, multipart_error};
use crate::state::AppState;

/// Whether `field` is the multipart field `file`; a name not ending in one of `extensions` is
/// refused.
fn is_file(field: &Field<'_>, extensions: &[&str]) -> Result<bool, ApiError> {
    if field.name() != Some("file") {
        return Ok(false);
    }
    if let Some(name) = field.file_name().map(str::to_lowercase).filter(|n| !n.is_empty())
        && !extensions.iter().any(|ext| name.ends_with(ext))
    {
        return Err(ApiError::invalid_input("file", format!("must be a {} file", extensions.join(" or "))));
    }
    Ok(true)
}

fn no_file() -> ApiError {
    ApiError::invalid_input("file", "missing: send the file in the multipart field \"file\"")
}

/// Reads the multipart field `file`, refusing a wrong extension and enforcing `limit` while
/// streaming (so an oversized upload is never held in memory whole).
async fn read_file(mut form: Multipart, extensions: &[&str], limit: usize) -> Result<Vec<u8>, ApiError> {
    while let Some(mut field) = form.next_field().await.map_err(multipart_error)? {
        if !is_file(&field, extensions)? {
            continue;
        }
        let mut bytes = Vec::new();
        while let Some(chunk) = field.chunk().await.map_err(multipart_error)? {
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
    Err(no_file())
}

/// Answers a preview: `write` writes its JSON to an unnamed file in the data folder on the
/// blocking pool, and the file is then streamed, so a preview of 100,000 rows (tens of MB) is
/// never held in memory, and a refusal found at its end is still the answer's status.
pub(crate) async fn preview_answer<E>(
    state: &AppState,
    write: impl FnOnce(&mut std::fs::File) -> Result<Previewed, E> + Send + 'static,
) -> Result<Response, ApiError>
where
    E: Send + 'static,
    ApiError: From<E>,
{
    let dir = state.config.data_dir.clone();
    let file = state
        .blocking(move |_| -> Result<Result<std::fs::File, E>, std::io::Error> {
            let mut file = tempfile::tempfile_in(&dir)?;
            if let Err(e) = write(&mut file) {
                return Ok(Err(e));
            }
            file.rewind()?;
            Ok(Ok(file))
        })
        .await?
        .map_err(ApiError::internal)??;
    let chunks = produce(
        move |out: &mut Sink| {
            let mut file = file;
            loop {
                let mut chunk = vec![0u8; CHUNK];
                let n = std::io::Read::read(&mut file, &mut chunk)?;
                chunk.truncate(n);
                if n == 0 || !out.send(chunk) {
                    return Ok(());
                }
            }
        },
        |e: &std::io::Error| e.to_string(),
    )
    .await
    .map_err(|e| ApiError::Internal(e.map_or_else(|| "the preview could not be sent".into(), |e| e.to_string())))?;
    Ok(([(CONTENT_TYPE, "application/json")], Body::from_stream(chunks)).into_response())
}

#[utoipa::path(post, path = "/api/v1/contacts/import/upload", tag = "import",
    request_body(content = FileUpload, content_type = "multipart/form-data", description = "Field `file`: a `.csv` file (UTF-8 with or without BOM, UTF-16 with BOM, or Windows-1252; comma, semicolon or tab separated), at most `IMPORT_MAX_CSV_MB` (20 MB)"),
    responses((status = 200, body = CsvUpload, description = "`{session_id, headers, suggested_mappings: [{csv_column, contact_field, group}], row_count, sample_data}`; Google, Outlook and Apple headers are recognised"),
        (status = 400, description = "`INVALID_INPUT` naming `file`: missing, wrong extension, unreadable, or too many rows"),
        (status = 413, description = "Larger than the configured limit"),
        (status = 429, description = "32 previews already wait for their confirm; `Retry-After` says when the oldest expires")))]
pub async fn upload_csv(
    State(state): State<AppState>,
    user: AuthUser,
    form: Multipart,
) -> Result<axum::Json<CsvUpload>, ApiError> {
    state.imports.check_room(user.id).map_err(session_error)?;
    let bytes = read_file(form, &[".csv", ".txt"], state.config.import.max_csv_bytes).await?;
    let (sessions, max_cards) = (state.imports.clone(), state.config.import.max_cards);
    let scope = state.scope(&user);
    let upload = state.blocking(move |_| import::upload_csv(&sessions, &scope, &bytes, max_cards)).await??;
    Ok(axum::Json(upload))
}

#[derive(Debug, Deserialize, ToSchema)]
pub struct PreviewRequest {
    pub session_id: String,
    #[schema(value_type = Vec<ColumnMappingInput>)]
    pub mappings: Vec<ColumnMapping>,
}

/// How one column of the uploaded file maps (the document's view of `ColumnMapping`).
#[derive(ToSchema)]
#[allow(dead_code)]
pub struct ColumnMappingInput {
    /// A header of the file (ASCII case ignored).
    csv_column: String,
    /// `""` (ignore the column) or a contact field.
    #[schema(
        pattern = "^[\\t-\\r \\u0085\\u00a0\\u1680\\u2000-\\u200a\\u2028\\u2029\\u202f\\u205f\\u3000]*(firstname|lastname|middle_name|prefix|suffix|nickname|full_name|gender|birthday|anniversary|organization|department|job_title|role|how_we_met|work_information|contact_information|circles|tags|notes|email|phone|url|impp|address_street|address_city|address_region|address_postal|address_country|email_label|phone_label|url_label|impp_label|address_label)?[\\t-\\r \\u0085\\u00a0\\u1680\\u2000-\\u200a\\u2028\\u2029\\u202f\\u205f\\u3000]*$"
    )]
    #[schema(required = false)]
    contact_field: String,
    /// Ties the parts of one multi-valued entry together (`email_label` and `email` of group 1).
    #[schema(required = false)]
    group: u32,
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
    let (sessions, scope) = (state.imports.clone(), state.engine.user(user.id));
    preview_answer(&state, move |out| import::preview_csv(&sessions, &scope, &req.session_id, &req.mappings, out)).await
}

#[utoipa::path(post, path = "/api/v1/contacts/import/vcf/upload", tag = "import", params(UploadQuery),
    request_body(content = FileUpload, content_type = "multipart/form-data", description = "Field `file`: a `.vcf` file of vCard 2.1, 3.0 or 4.0 cards, at most `IMPORT_MAX_FILE_MB` (50 MB) and `IMPORT_MAX_CARDS` cards"),
    responses((status = 200, description = "The preview; a card that cannot be read is a row with `validation_errors` naming its line, and the others import"),
        (status = 400, description = "`INVALID_INPUT` naming `file`, or `VALIDATION_ERROR` naming `categories`"), (status = 413, description = "Larger than the configured limit"),
        (status = 429, description = "32 previews already wait for their confirm; `Retry-After` says when the oldest expires")))]
pub async fn upload_vcf(
    State(state): State<AppState>,
    user: AuthUser,
    Query(q): Query<UploadQuery>,
    mut form: Multipart,
) -> Result<Response, ApiError> {
    let categories = import::Categories::from_request(q.categories.as_deref())?;
    state.imports.check_room(user.id).map_err(session_error)?;
    while let Some(mut field) = form.next_field().await.map_err(multipart_error)? {
        if !is_file(&field, &[".vcf", ".vcard"])? {
            continue;
        }
        // The cards are parsed as they arrive, on the blocking pool, while this task passes
        // them on.
        let (to, input) = upload::channel();
        let (sessions, scope, max_cards) =
            (state.imports.clone(), state.engine.user(user.id), state.config.import.max_cards);
        let answering = state.clone();
        let preview = tokio::spawn(async move {
            preview_answer(&answering, move |out| {
                import::preview_vcf(&sessions, &scope, input, categories, max_cards, out)
            })
            .await
        });
        let passed = upload::pass_on(&mut field, to, state.config.import.max_file_bytes).await;
        let answer = preview.await.map_err(ApiError::internal)?;
        passed?;
        return answer;
    }
    Err(no_file())
}

/// Opens a previewed session of a file of cards in hand and answers its preview.
async fn preview_cards(
    state: &AppState,
    user: &AuthUser,
    categories: import::Categories,
    file: CardFile,
    bytes: Vec<u8>,
) -> Result<Response, ApiError> {
    let (sessions, scope, max_cards) =
        (state.imports.clone(), state.engine.user(user.id), state.config.import.max_cards);
    preview_answer(state, move |out| import::preview_cards(&sessions, &scope, file, &bytes, categories, max_cards, out))
        .await
}

#[derive(Debug, Default, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct UploadQuery {
    /// Where the cards' categories (vCard `CATEGORIES`, JSContact `keywords`) go: `tags` (the
    /// default) or `circles` (ASCII case ignored; `tag` and `circle` too).
    #[param(
        pattern = "^[\\t-\\r \\u0085\\u00a0\\u1680\\u2000-\\u200a\\u2028\\u2029\\u202f\\u205f\\u3000]*([tT][aA][gG][sS]?|[cC][iI][rR][cC][lL][eE][sS]?)?[\\t-\\r \\u0085\\u00a0\\u1680\\u2000-\\u200a\\u2028\\u2029\\u202f\\u205f\\u3000]*$"
    )]
    pub categories: Option<String>,
}

#[utoipa::path(post, path = "/api/v1/contacts/import/jscontact/upload", tag = "import", params(UploadQuery),
    request_body(content = FileUpload, content_type = "multipart/form-data", description = "Field `file`: a `.json` JSContact (RFC 9553) file: one Card, an array of Cards, or a CardGroup"),
    responses((status = 200, description = "The preview (a vCard-family session)"), (status = 400, description = "`INVALID_INPUT` naming `file`, or `VALIDATION_ERROR` naming `categories`"),
        (status = 413, description = "Larger than the configured limit"),
        (status = 429, description = "32 previews already wait for their confirm; `Retry-After` says when the oldest expires")))]
pub async fn upload_jscontact(
    State(state): State<AppState>,
    user: AuthUser,
    Query(q): Query<UploadQuery>,
    form: Multipart,
) -> Result<Response, ApiError> {
    let categories = import::Categories::from_request(q.categories.as_deref())?;
    let bytes = read_file(form, &[".json", ".jscontact"], state.config.import.max_file_bytes).await?;
    preview_cards(&state, &user, categories, CardFile::JsContact, bytes).await
}

#[derive(Debug, Deserialize, ToSchema)]
pub struct RecordsRequest {
    /// 1 to 500 neutral records `{card, crm?, passthrough?, gender?}`; any JSON value is taken,
    /// and one that is not a valid neutral record is a row with `validation_errors`.
    #[schema(value_type = Vec<Value>, min_items = 1, max_items = 500)]
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
    let rows = import::rows_of_records(req.records)?;
    let (sessions, scope) = (state.imports.clone(), state.engine.user(user.id));
    preview_answer(&state, move |out| import::preview_rows(&sessions, &scope, Source::Records, rows, out)).await
}

#[derive(Debug, Deserialize, ToSchema)]
pub struct ConfirmAction {
    /// A row of the preview (counted from 0).
    #[schema(maximum = 9007199254740991_u64)]
    pub row_index: usize,
    /// `add`, `update` or `skip`.
    #[schema(pattern = "^(add|update|skip)$")]
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
                Source::Vcf | Source::JsContact => {
                    "a vCard or JSContact session is confirmed at /contacts/import/vcf/confirm"
                }
                Source::Share => "a shared contact is confirmed at /contact-shares/{id}/confirm",
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

/// An import operation's refusal as the API answers it.
impl From<ImportError> for ApiError {
    fn from(e: ImportError) -> Self {
        match e {
            ImportError::File(reason) => ApiError::invalid_input("file", reason),
            ImportError::Invalid { field, reason } => ApiError::validation(field, reason),
            ImportError::Session(e) => session_error(e),
            ImportError::Engine(e) => e.into(),
            ImportError::Internal(message) => ApiError::Internal(message),
        }
    }
}

/// Confirms a session of one of the `accepts` families and answers the import's result.
async fn confirm(
    state: AppState,
    user: AuthUser,
    req: ConfirmRequest,
    accepts: &[Source],
) -> Result<axum::Json<ImportResult>, ApiError> {
    let decisions: Vec<Decision> =
        req.actions.into_iter().map(|a| Decision { row_index: a.row_index, action: a.action }).collect();
    let scope = state.engine.user(user.id);
    let batch = state.config.import.batch_rows;
    let result =
        import::confirm(state.imports.clone(), scope, req.session_id, &decisions, None, accepts, batch).await?;
    Ok(axum::Json(result))
}

#[utoipa::path(post, path = "/api/v1/contacts/import/confirm", tag = "import", request_body = ConfirmRequest,
    responses((status = 200, body = ImportResult, description = "`{total_processed, created, updated, skipped, error_count, errors}`; a repeated confirm within 15 minutes returns the first result and applies nothing"),
        (status = 400, description = "`INVALID_INPUT` naming `session`: a vCard, JSContact or records session (confirm it at /contacts/import/vcf/confirm) or a CSV session not yet previewed; or a bad action"),
        (status = 404, description = "Unknown, expired, lost in a restart, or another user's session")))]
pub async fn confirm_csv(
    State(state): State<AppState>,
    user: AuthUser,
    Json(req): Json<ConfirmRequest>,
) -> Result<axum::Json<ImportResult>, ApiError> {
    confirm(state, user, req, &[Source::Csv]).await
}

#[utoipa::path(post, path = "/api/v1/contacts/import/vcf/confirm", tag = "import", request_body = ConfirmRequest,
    responses((status = 200, body = ImportResult, description = "`{total_processed, created, updated, skipped, error_count, errors}`"),
        (status = 400, description = "`INVALID_INPUT` naming `session`: a CSV session (confirm it at /contacts/import/confirm); or a bad action"),
        (status = 404, description = "Unknown, expired, lost in a restart, or another user's session")))]
pub async fn confirm_vcf(
    State(state): State<AppState>,
    user: AuthUser,
    Json(req): Json<ConfirmRequest>,
) -> Result<axum::Json<ImportResult>, ApiError> {
    confirm(state, user, req, &[Source::Vcf, Source::JsContact, Source::Records]).await
}

#[utoipa::path(get, path = "/api/v1/contacts/import/runs", tag = "import",
    responses((status = 200, body = ImportRunList, description = "`{import_runs: [{id, format, processed, created, updated, skipped, errors, created_at}]}`, newest first, the 50 most recent")))]
pub async fn runs(State(state): State<AppState>, user: AuthUser) -> Result<axum::Json<ImportRunList>, ApiError> {
    let scope = state.engine.user(user.id);
    Ok(axum::Json(state.blocking(move |_| import::run_list(&scope.view()?)).await??))
}

/// Writes the multipart field `file` to an unnamed file in `dir` (it never has a name, so nothing
/// is left behind whatever happens) as it arrives, refusing more than `limit` bytes and a name
/// without `.zip`; the file is rewound. The writes go to the page cache in pieces of at most a
/// network chunk, so they are written in place.
async fn spool(mut form: Multipart, dir: &std::path::Path, limit: usize) -> Result<std::fs::File, ApiError> {
    use std::io::Write;
    while let Some(mut field) = form.next_field().await.map_err(multipart_error)? {
        let wanted = is_file(&field, &[".zip"])
            .map_err(|_| ApiError::invalid_input("file", "must be a .zip file (an account bundle)"))?;
        if !wanted {
            continue;
        }
        let mut file = tempfile::tempfile_in(dir).map_err(ApiError::internal)?;
        let mut written = 0usize;
        while let Some(chunk) = field.chunk().await.map_err(multipart_error)? {
            written += chunk.len();
            if written > limit {
                return Err(ApiError::PayloadTooLarge { limit });
            }
            file.write_all(&chunk).map_err(ApiError::internal)?;
        }
        if written == 0 {
            return Err(ApiError::invalid_input("file", "the file is empty"));
        }
        file.rewind().map_err(ApiError::internal)?;
        return Ok(file);
    }
    Err(no_file())
}

#[utoipa::path(post, path = "/api/v1/import/bundle", tag = "import",
    request_body(content = FileUpload, content_type = "multipart/form-data", description = "Field `file`: an account bundle (`GET /export/bundle`), a `.zip` of at most `IMPORT_MAX_FILE_MB` plus `ATTACHMENT_QUOTA_MB`"),
    responses((status = 200, body = crate::crm::bundle::Imported, description = "Everything of the bundle recreated in your account, in one commit, with its references remapped to the new rows: `{imported: {kind: rows}, skipped: {kind: rows}, pictures, attachments}`. A row naming a row the bundle does not hold is skipped."),
        (status = 400, description = "`INVALID_INPUT` naming `file`: missing, not a ZIP, not a bundle this version reads, a file not matching its manifest digest, a line that is not a valid row (file and line named), rows already in your account, or attachments over your quota. Nothing is written."),
        (status = 413, description = "Larger than the limit")))]
pub async fn bundle(
    State(state): State<AppState>,
    user: AuthUser,
    form: Multipart,
) -> Result<axum::Json<crate::crm::bundle::Imported>, ApiError> {
    let quota = state.config.attachment_quota_bytes;
    let limit = state.config.import.max_file_bytes.saturating_add(usize::try_from(quota).unwrap_or(usize::MAX));
    let file = spool(form, &state.config.data_dir, limit).await?;
    let scope = state.scope(&user);
    let imported = state.blocking(move |_| crate::crm::bundle::import(&scope, file, quota)).await??;
    Ok(axum::Json(imported))
}
