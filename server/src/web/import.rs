//! Import and export in the browser. The import wizard: upload a vCard, JSContact or CSV file;
//! for a CSV, map its columns (the headers Google, Outlook and Apple write are recognised); review
//! the preview with each duplicate and what an update would change; decide per row (add, update,
//! skip) or for all at once; confirm; read the result. The sessions, duplicate detection, merge
//! and apply are `crm::import`'s, exactly as behind `/api/v1/contacts/import/*`. Exports are the
//! API's streamed downloads, linked from here.

use axum::extract::{Multipart, Path, Query, State};
use maud::{Markup, html};
use mycorrhizal_codecs::csv::{ColumnMapping, FIELDS};
use serde_json::Value;

use super::format;
use super::home::contact_link;
use super::page::{Csrf, Form, PageResult, Upload, Viewer, check_csrf, field_error, page, page_with, see_other, shell};
use crate::crm::import::{self, Bulk, CardFile, Categories, Decision, ImportResult, Source};
use crate::crm::share::ops::{self as shares, ShareInput};
use crate::error::ApiError;
use crate::http::upload;
use crate::state::AppState;

fn recent_runs(viewer: &Viewer, state: &AppState) -> impl std::future::Future<Output = Result<Markup, ApiError>> {
    let scope = state.scope(&viewer.user);
    let blocking = state.blocking(move |_| import::recent_runs(&scope.view()?));
    let (lang, date_format) = (viewer.lang, viewer.user.account.date_format.clone());
    let zone = state.config.reminder_timezone.clone();
    async move {
        let runs = blocking.await??;
        let t = |k| lang.t(k);
        Ok(html! {
            @if runs.is_empty() { p class="muted" { (t("import.no_runs")) } }
            @else {
                table class="list" {
                    thead { tr {
                        th scope="col" { (t("import.when")) } th scope="col" { (t("import.format")) }
                        th scope="col" { (t("import.created")) } th scope="col" { (t("import.updated")) }
                        th scope="col" { (t("import.skipped")) } th scope="col" { (t("import.errors")) }
                    } }
                    tbody {
                        @for r in runs.iter().take(20) {
                            tr {
                                td { (format::day_of(lang, &date_format, r.meta.created_at, &zone)) }
                                td { (r.body.format) } td { (r.body.created) } td { (r.body.updated) }
                                td { (r.body.skipped) } td { (r.body.errors) }
                            }
                        }
                    }
                }
            }
        })
    }
}

fn upload_form(viewer: &Viewer, error: Option<&str>) -> Markup {
    let c = viewer.chrome();
    let t = |k| viewer.t(k);
    html! {
        @if let Some(e) = error { p class="error" role="alert" { (e) } }
        form method="post" action="/import" enctype="multipart/form-data" class="stack" {
            (c.csrf_field())
            // The file comes last: a vCard file is parsed as it arrives, with what came before it.
            label for="categories" { (t("import.categories")) }
            select id="categories" name="categories" {
                option value="tags" { (t("import.as_tags")) }
                option value="circles" { (t("import.as_circles")) }
            }
            label for="file" { (t("import.file")) }
            input id="file" name="file" type="file" required accept=".vcf,.vcard,.json,.jscontact,.csv,.txt";
            p class="hint" { (t("import.file_hint")) }
            button type="submit" class="primary" { (t("import.upload")) }
        }
    }
}

#[derive(Debug, Default, serde::Deserialize)]
pub struct IndexQuery {
    notice: Option<String>,
}

pub async fn index(State(state): State<AppState>, viewer: Viewer, Query(q): Query<IndexQuery>) -> PageResult {
    let runs = recent_runs(&viewer, &state).await?;
    let shared = shares_section(&viewer, &state).await?;
    Ok(page(home_page(&viewer, None, runs, shared, super::page::notice(q.notice.as_deref()))))
}

/// Contacts other users of this server shared with the viewer (each pending one to review,
/// through the import preview, or to decline) and the ones the viewer shared.
async fn shares_section(viewer: &Viewer, state: &AppState) -> Result<Markup, ApiError> {
    let me = viewer.user.id.0;
    let (incoming, outgoing) = state
        .read(&viewer.user, |v| Ok((shares::list(v, true, None, 50, false)?, shares::list(v, false, None, 50, false)?)))
        .await?;
    let names: std::collections::HashMap<u64, String> =
        crate::auth::accounts::directory(&state.engine, me).await?.into_iter().collect();
    let who = |id: u64| names.get(&id).cloned().unwrap_or_else(|| viewer.t("share.gone_user").to_string());
    let c = viewer.chrome();
    let t = |k| viewer.t(k);
    let status = |s: &str| match s {
        "accepted" => t("share.accepted"),
        "declined" => t("share.declined"),
        _ => t("share.pending"),
    };
    Ok(html! {
        section class="card wide" aria-labelledby="h-shares" {
            h2 id="h-shares" { (t("share.incoming")) }
            @if incoming.shares.is_empty() { p class="muted" { (t("share.none_incoming")) } }
            ul class="items" {
                @for s in &incoming.shares {
                    li {
                        strong { (s.body.contact_display_name) } " "
                        span class="muted" { (viewer.lang.f("share.from", &[("user", &who(s.body.other_user))])) " · " (status(&s.body.status)) }
                        @if s.body.status == "pending" {
                            (c.button_form(&format!("/shares/{}/review", s.body.share), t("share.review"), "small", None))
                            (c.button_form(&format!("/shares/{}/decline", s.body.share), t("share.decline"), "small secondary", Some(t("share.decline_confirm"))))
                        }
                    }
                }
            }
            @if !outgoing.shares.is_empty() {
                h3 { (t("share.outgoing")) }
                ul class="items" {
                    @for s in &outgoing.shares {
                        li {
                            (s.body.contact_display_name) " "
                            span class="muted" { (viewer.lang.f("share.to", &[("user", &who(s.body.other_user))])) " · " (status(&s.body.status)) }
                        }
                    }
                }
            }
        }
    })
}

/// Opens a contact shared with the viewer as an import preview, confirmed through the share.
pub async fn share_review(State(state): State<AppState>, viewer: Viewer, Path(id): Path<String>) -> PageResult {
    let (sessions, scope, dir) = (state.imports.clone(), state.scope(&viewer.user), state.config.data_dir.clone());
    let share = id.clone();
    let preview =
        state.blocking(move |_| preview_value(&dir, |out| shares::accept(&sessions, &scope, &share, out))).await??;
    let session = preview["session_id"].as_str().unwrap_or("").to_string();
    Ok(page(preview_page(&viewer, &preview, &format!("/shares/{id}/confirm/{session}"))))
}

pub async fn share_confirm(
    State(state): State<AppState>,
    viewer: Viewer,
    Path((id, session)): Path<(String, String)>,
    form: Form,
) -> PageResult {
    let (decisions, bulk) = decisions_of(&form);
    let batch = state.config.import.batch_rows;
    let result = shares::confirm(
        &state.engine,
        state.imports.clone(),
        state.scope(&viewer.user),
        &id,
        session,
        &decisions,
        Some(bulk),
        batch,
    )
    .await
    .map_err(ApiError::from)?;
    Ok(page(result_page(&viewer, &result)))
}

pub async fn share_decline(State(state): State<AppState>, viewer: Viewer, Path(id): Path<String>) -> PageResult {
    shares::decline(&state.engine, &state.scope(&viewer.user), &id).await?;
    Ok(see_other("/import?notice=declined"))
}

/// Shares contact `id` with another user of this server: the sections ticked.
pub async fn share_create(
    State(state): State<AppState>,
    viewer: Viewer,
    Path(id): Path<u64>,
    form: Form,
) -> PageResult {
    let outcome = async {
        let to = form
            .get("to_user_id")
            .trim()
            .parse::<u64>()
            .map_err(|_| ApiError::validation("to_user_id", "choose who to share with"))?;
        if crate::auth::accounts::get(&state.engine, to).await.is_err() {
            return Err(ApiError::validation("to_user_id", "choose who to share with"));
        }
        let sections: Vec<String> = form.0.iter().filter(|(k, _)| k == "sections").map(|(_, v)| v.clone()).collect();
        let input = ShareInput {
            to_user_id: to,
            vcard_uid: None,
            contact_id: Some(id),
            sections,
            include_sensitive: form.has("include_sensitive"),
        };
        shares::create(&state.engine, viewer.user.id, mycorrhizal_engine::UserId(to), input)
            .await
            .map_err(ApiError::from)
    }
    .await;
    match outcome {
        Ok(_) => Ok(see_other(&format!("/contacts/{id}?notice=shared"))),
        Err(e) => super::contacts::refused(&state, &viewer, id, "share", form, e).await,
    }
}

fn home_page(
    viewer: &Viewer,
    error: Option<&str>,
    runs: Markup,
    shared: Markup,
    notice: Option<&'static str>,
) -> Markup {
    let c = viewer.chrome();
    let t = |k| viewer.t(k);
    let main = html! {
        h1 { (t("import.title")) }
        div class="grid" {
            (shared)
            section class="card" aria-labelledby="h-upload" {
                h2 id="h-upload" { (t("import.upload_title")) }
                (upload_form(viewer, error))
            }
            section class="card" aria-labelledby="h-export" {
                h2 id="h-export" { (t("export.title")) }
                p class="hint" { (t("export.hint")) }
                ul class="items" {
                    li { a href="/api/v1/export/vcf?version=4.0" download { (t("export.vcard4")) } }
                    li { a href="/api/v1/export/vcf?version=3.0" download { (t("export.vcard3")) } }
                    li { a href="/api/v1/export/jscontact" download { (t("export.jscontact")) } }
                    li { a href="/api/v1/export" download { (t("export.csv")) } }
                    li { a href="/api/v1/export?table=all" download { (t("export.zip")) } }
                    li { a href="/api/v1/export?layout=legacy" download { (t("export.legacy")) } }
                    li { a href="/api/v1/export/bundle" download { (t("export.bundle")) } }
                }
            }
            section class="card" aria-labelledby="h-bundle" {
                h2 id="h-bundle" { (t("bundle.title")) }
                p class="hint" { (t("bundle.hint")) }
                form method="post" action="/import/bundle" enctype="multipart/form-data" class="stack" {
                    (c.csrf_field())
                    label for="bundle-file" { (t("bundle.file")) }
                    input id="bundle-file" name="file" type="file" required accept=".zip";
                    button type="submit" class="primary" { (t("bundle.upload")) }
                }
            }
            section class="card wide" aria-labelledby="h-runs" {
                h2 id="h-runs" { (t("import.runs")) }
                (runs)
            }
        }
    };
    shell(&c, t("import.title"), notice, main)
}

/// The file's kind, from its name (as the API's routes decide it), or from its first bytes.
fn kind_of(upload: &Upload) -> Option<Source> {
    let name = &upload.file_name;
    let ends = |exts: &[&str]| exts.iter().any(|e| name.ends_with(e));
    if ends(&[".vcf", ".vcard"]) {
        return Some(Source::Vcf);
    }
    if ends(&[".json", ".jscontact"]) {
        return Some(Source::JsContact);
    }
    if ends(&[".csv", ".txt"]) {
        return Some(Source::Csv);
    }
    let head = String::from_utf8_lossy(&upload.bytes[..upload.bytes.len().min(256)]).trim_start().to_uppercase();
    if head.starts_with("BEGIN:VCARD") {
        Some(Source::Vcf)
    } else if head.starts_with('{') || head.starts_with('[') {
        Some(Source::JsContact)
    } else {
        None
    }
}

pub async fn upload(
    State(state): State<AppState>,
    viewer: Viewer,
    csrf: axum::Extension<Csrf>,
    mut form: Multipart,
) -> PageResult {
    let limit = state.config.import.max_file_bytes.max(state.config.import.max_csv_bytes);
    let outcome = async {
        // The text fields before the file (the form puts it last), then the file, unread.
        let bad = upload::multipart_error;
        let mut fields = Vec::new();
        let file = loop {
            match form.next_field().await.map_err(bad)? {
                Some(field) if field.name() == Some("file") => break Some(field),
                Some(field) => fields.push((field.name().unwrap_or("").to_string(), field.text().await.map_err(bad)?)),
                None => break None,
            }
        };
        check_csrf(&fields, &csrf.0)?;
        let fields = Form(fields);
        let Some(mut field) = file else {
            return Err(ApiError::invalid_input("file", "choose a file: it is missing or empty"));
        };
        let name = field.file_name().unwrap_or("").to_string();
        if [".vcf", ".vcard"].iter().any(|ext| name.to_lowercase().ends_with(ext)) {
            // A vCard file is parsed as it arrives, as the API's upload is.
            state.imports.check_room(viewer.user.id).map_err(|e| ApiError::from(import::ImportError::Session(e)))?;
            let categories = Categories::from_request(Some(&fields.get("categories")))?;
            let (to, input) = upload::channel();
            let (sessions, scope) = (state.imports.clone(), state.scope(&viewer.user));
            let (max_cards, dir) = (state.config.import.max_cards, state.config.data_dir.clone());
            let previewing = tokio::task::spawn_blocking(move || {
                preview_value(&dir, |out| import::preview_vcf(&sessions, &scope, input, categories, max_cards, out))
            });
            let passed = upload::pass_on(&mut field, to, state.config.import.max_file_bytes).await;
            let preview = previewing.await.map_err(ApiError::internal)?;
            passed?;
            let preview = preview?;
            let action = format!("/import/{}/confirm", preview["session_id"].as_str().unwrap_or(""));
            return Ok(preview_page(&viewer, &preview, &action));
        }
        let content_type = field.content_type().unwrap_or("application/octet-stream").to_string();
        let mut bytes = Vec::new();
        while let Some(chunk) = field.chunk().await.map_err(upload::multipart_error)? {
            if bytes.len() + chunk.len() > limit {
                return Err(ApiError::PayloadTooLarge { limit });
            }
            bytes.extend_from_slice(&chunk);
        }
        let upload = Upload { file_name: name.to_lowercase(), original_name: name, content_type, bytes, fields };
        if upload.bytes.is_empty() {
            return Err(ApiError::invalid_input("file", "choose a file: it is missing or empty"));
        }
        state.imports.check_room(viewer.user.id).map_err(|e| ApiError::from(import::ImportError::Session(e)))?;
        let kind = kind_of(&upload)
            .ok_or_else(|| ApiError::invalid_input("file", "must be a .vcf, .json (JSContact) or .csv file"))?;
        let categories = Categories::from_request(Some(&upload.fields.get("categories")))?;
        let (sessions, scope) = (state.imports.clone(), state.scope(&viewer.user));
        let max_cards = state.config.import.max_cards;
        match kind {
            Source::Csv => {
                if upload.bytes.len() > state.config.import.max_csv_bytes {
                    return Err(ApiError::PayloadTooLarge { limit: state.config.import.max_csv_bytes });
                }
                let reader = scope.clone();
                let csv =
                    state.blocking(move |_| import::upload_csv(&sessions, &reader, &upload.bytes, max_cards)).await??;
                Ok(mapping_page(
                    &viewer,
                    &csv.session_id,
                    &csv.headers,
                    &csv.suggested_mappings,
                    &csv.sample_data,
                    None,
                ))
            }
            Source::Vcf | Source::JsContact | Source::Records | Source::Share => {
                let file = if kind == Source::Vcf { CardFile::Vcf } else { CardFile::JsContact };
                let dir = state.config.data_dir.clone();
                let preview = state
                    .blocking(move |_| {
                        preview_value(&dir, |out| {
                            import::preview_cards(&sessions, &scope, file, &upload.bytes, categories, max_cards, out)
                        })
                    })
                    .await??;
                let action = format!("/import/{}/confirm", preview["session_id"].as_str().unwrap_or(""));
                Ok(preview_page(&viewer, &preview, &action))
            }
        }
    }
    .await;
    match outcome {
        Ok(markup) => Ok(page(markup)),
        Err(e @ (ApiError::InvalidInput { .. } | ApiError::Validation { .. } | ApiError::PayloadTooLarge { .. })) => {
            let (status, message) = field_error(viewer.lang, &e);
            let runs = recent_runs(&viewer, &state).await?;
            let shared = shares_section(&viewer, &state).await?;
            Ok(page_with(status, home_page(&viewer, Some(&message), runs, shared, None)))
        }
        Err(e) => Err(e.into()),
    }
}

/// An account bundle (`GET /api/v1/export/bundle`) recreated in the viewer's account
/// (`crm::bundle::import`); a bad one is shown on the import page with what is wrong.
pub async fn upload_bundle(
    State(state): State<AppState>,
    viewer: Viewer,
    csrf: axum::Extension<Csrf>,
    form: Multipart,
) -> PageResult {
    let quota = state.config.attachment_quota_bytes;
    let limit = bundle_limit(&state);
    let outcome = async {
        let upload = Upload::read(form, &csrf.0, "file", limit).await?;
        if upload.bytes.is_empty() {
            return Err(ApiError::invalid_input("file", "choose a file: it is missing or empty"));
        }
        let scope = state.scope(&viewer.user);
        let bytes = upload.bytes;
        Ok(state.blocking(move |_| crate::crm::bundle::import(&scope, std::io::Cursor::new(bytes), quota)).await??)
    }
    .await;
    let imported = match outcome {
        Ok(imported) => imported,
        Err(e @ (ApiError::InvalidInput { .. } | ApiError::Validation { .. } | ApiError::PayloadTooLarge { .. })) => {
            let (status, message) = field_error(viewer.lang, &e);
            let runs = recent_runs(&viewer, &state).await?;
            let shared = shares_section(&viewer, &state).await?;
            return Ok(page_with(status, home_page(&viewer, Some(&message), runs, shared, None)));
        }
        Err(e) => return Err(e.into()),
    };
    let c = viewer.chrome();
    let t = |k| viewer.t(k);
    let rows: u64 = imported.imported.values().sum();
    let skipped: u64 = imported.skipped.values().sum();
    let main = html! {
        h1 { (t("bundle.result_title")) }
        p class="notice" role="status" {
            (viewer.lang.f("bundle.result", &[("rows", &rows.to_string()), ("pictures", &imported.pictures.to_string()),
                ("attachments", &imported.attachments.to_string()), ("skipped", &skipped.to_string())]))
        }
        p { a class="button primary" href="/contacts?sort=updated" { (t("import.see_contacts")) } " " a class="button" href="/import" { (t("import.another")) } }
    };
    Ok(page(shell(&c, t("bundle.result_title"), None, main)))
}

/// The largest bundle upload: the import limit for records and pictures, plus the attachment
/// quota.
pub fn bundle_limit(state: &AppState) -> usize {
    let quota = usize::try_from(state.config.attachment_quota_bytes).unwrap_or(usize::MAX);
    state.config.import.max_file_bytes.saturating_add(quota)
}

fn mapping_page(
    viewer: &Viewer,
    session: &str,
    headers: &[String],
    suggested: &[ColumnMapping],
    sample: &[Vec<String>],
    error: Option<&str>,
) -> Markup {
    let c = viewer.chrome();
    let t = |k| viewer.t(k);
    let main = html! {
        h1 { (t("import.map_title")) }
        p { (t("import.map_hint")) }
        @if let Some(e) = error { p class="error" role="alert" { (e) } }
        form method="post" action={ "/import/" (session) "/preview" } class="stack" {
            (c.csrf_field())
            table class="list" {
                thead { tr { th scope="col" { (t("import.column")) } th scope="col" { (t("import.example")) } th scope="col" { (t("import.field")) } th scope="col" { (t("import.group")) } } }
                tbody {
                    @for (i, header) in headers.iter().enumerate() {
                        @let chosen = suggested.iter().find(|m| &m.csv_column == header);
                        tr {
                            td { (header) input type="hidden" name="column" value=(header); }
                            td class="muted" { (sample.first().and_then(|row| row.get(i)).map(String::as_str).unwrap_or("")) }
                            td {
                                label for={ "field-" (i) } class="visually-hidden" { (viewer.lang.f("import.field_for", &[("column", header)])) }
                                select id={ "field-" (i) } name="field" {
                                    option value="" { (t("import.ignore")) }
                                    @for f in FIELDS {
                                        option value=(f) selected[chosen.is_some_and(|m| m.contact_field == *f)] { (f) }
                                    }
                                }
                            }
                            td {
                                label for={ "group-" (i) } class="visually-hidden" { (viewer.lang.f("import.group_for", &[("column", header)])) }
                                input id={ "group-" (i) } name="group" type="number" min="0" value=(chosen.map_or(0, |m| m.group)) class="narrow-number";
                            }
                        }
                    }
                }
            }
            button type="submit" class="primary" { (t("import.preview")) }
        }
    };
    shell(&c, t("import.map_title"), None, main)
}

pub async fn preview_csv(
    State(state): State<AppState>,
    viewer: Viewer,
    Path(session): Path<String>,
    form: Form,
) -> PageResult {
    let (columns, fields, groups) = (form.all("column"), form.all("field"), form.all("group"));
    let mappings: Vec<ColumnMapping> = columns
        .iter()
        .enumerate()
        .map(|(i, column)| ColumnMapping {
            csv_column: column.clone(),
            contact_field: fields.get(i).cloned().unwrap_or_default(),
            group: groups.get(i).and_then(|g| g.parse().ok()).unwrap_or(0),
        })
        .collect();
    let (sessions, scope, dir) = (state.imports.clone(), state.scope(&viewer.user), state.config.data_dir.clone());
    let preview = state
        .blocking(move |_| preview_value(&dir, |out| import::preview_csv(&sessions, &scope, &session, &mappings, out)))
        .await??;
    let action = format!("/import/{}/confirm", preview["session_id"].as_str().unwrap_or(""));
    Ok(page(preview_page(&viewer, &preview, &action)))
}

/// The rows a preview page lists; the others of a larger file take their suggestion (or the
/// choice for all rows) at the confirm, and the page says how many they are.
const SHOWN_ROWS: usize = 500;

/// What a preview page shows of the preview a preview operation writes: its counts and first
/// [`SHOWN_ROWS`] rows. The preview goes to an unnamed file in `dir` and is read back a row at a
/// time, so a 100,000-card file's preview is never held whole.
fn preview_value<E>(
    dir: &std::path::Path,
    write: impl FnOnce(&mut std::fs::File) -> Result<import::Previewed, E>,
) -> Result<Value, ApiError>
where
    ApiError: From<E>,
{
    #[derive(serde::Deserialize)]
    struct Shown {
        session_id: String,
        total_rows: u64,
        valid_rows: u64,
        duplicate_count: u64,
        error_count: u64,
        rows: FirstRows,
    }
    let mut file = tempfile::tempfile_in(dir).map_err(ApiError::internal)?;
    write(&mut file)?;
    std::io::Seek::rewind(&mut file).map_err(ApiError::internal)?;
    let shown: Shown = serde_json::from_reader(std::io::BufReader::new(file)).map_err(ApiError::internal)?;
    Ok(serde_json::json!({
        "session_id": shown.session_id, "total_rows": shown.total_rows, "valid_rows": shown.valid_rows,
        "duplicate_count": shown.duplicate_count, "error_count": shown.error_count,
        "rows": shown.rows.first, "rows_not_shown": shown.rows.more,
    }))
}

/// The first [`SHOWN_ROWS`] of a list of rows, and how many more there were (skipped unread).
struct FirstRows {
    first: Vec<Value>,
    more: u64,
}

impl<'de> serde::Deserialize<'de> for FirstRows {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct Rows;
        impl<'de> serde::de::Visitor<'de> for Rows {
            type Value = FirstRows;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("a list of rows")
            }
            fn visit_seq<A: serde::de::SeqAccess<'de>>(self, mut seq: A) -> Result<FirstRows, A::Error> {
                let mut rows = FirstRows { first: Vec::new(), more: 0 };
                while rows.first.len() < SHOWN_ROWS {
                    match seq.next_element::<Value>()? {
                        Some(row) => rows.first.push(row),
                        None => return Ok(rows),
                    }
                }
                while seq.next_element::<serde::de::IgnoredAny>()?.is_some() {
                    rows.more += 1;
                }
                Ok(rows)
            }
        }
        deserializer.deserialize_seq(Rows)
    }
}

fn action_key(action: &str) -> &'static str {
    match action {
        "update" => "import.action_update",
        "skip" => "import.action_skip",
        _ => "import.action_add",
    }
}

/// The preview of an import session, its decisions sent to `action`.
fn preview_page(viewer: &Viewer, preview: &Value, action: &str) -> Markup {
    let c = viewer.chrome();
    let t = |k| viewer.t(k);
    let rows = preview["rows"].as_array().cloned().unwrap_or_default();
    let count = |k: &str| preview[k].as_u64().unwrap_or(0).to_string();
    let main = html! {
        h1 { (t("import.preview_title")) }
        p {
            (viewer.lang.f("import.summary", &[("total", &count("total_rows")), ("valid", &count("valid_rows")),
                ("duplicates", &count("duplicate_count")), ("errors", &count("error_count"))]))
        }
        form method="post" action=(action) class="stack" {
            (c.csrf_field())
            fieldset {
                legend { (t("import.bulk")) }
                @for (value, key) in [("rows", "import.bulk_rows"), ("add_update", "import.bulk_add_update"), ("add_skip", "import.bulk_add_skip"), ("skip", "import.bulk_skip")] {
                    label class="check" { input type="radio" name="bulk" value=(value) checked[value == "rows"]; " " (t(key)) }
                }
            }
            table class="list import-preview" {
                thead { tr {
                    th scope="col" { "#" } th scope="col" { (t("import.contact")) } th scope="col" { (t("import.duplicate")) }
                    th scope="col" { (t("import.decision")) }
                } }
                tbody {
                    @for row in &rows {
                        @let index = row["row_index"].as_u64().unwrap_or(0);
                        @let parsed = &row["parsed_contact"];
                        @let name = [parsed["firstname"].as_str(), parsed["lastname"].as_str()].into_iter().flatten().collect::<Vec<_>>().join(" ");
                        @let errors: Vec<&str> = row["validation_errors"].as_array().map(|a| a.iter().filter_map(Value::as_str).collect()).unwrap_or_default();
                        @let suggested = row["suggested_action"].as_str().unwrap_or("add");
                        tr {
                            td { (index + 1) }
                            td {
                                strong { (if name.is_empty() { parsed["organization"].as_str().or(parsed["email"].as_str()).unwrap_or("–").to_string() } else { name }) }
                                @if let Some(email) = parsed["email"].as_str() { br; span class="muted" { (email) } }
                                @for e in &errors { br; span class="error-text" { (e) } }
                            }
                            td {
                                @if let Some(d) = row["duplicate_match"].as_object() {
                                    @let existing = format!("{} {}", d["existing_firstname"].as_str().unwrap_or(""), d["existing_lastname"].as_str().unwrap_or(""));
                                    (contact_link(d["existing_contact_id"].as_u64().unwrap_or(0), existing.trim()))
                                    " " span class="muted" { "(" (d["match_reason"].as_str().unwrap_or("")) ")" }
                                    @if let Some(diff) = row["merge_diff"].as_object() {
                                        ul class="diff" {
                                            @for change in diff["updated"].as_array().into_iter().flatten() {
                                                li { (change["label"].as_str().unwrap_or("")) ": " del { (change["old"].as_str().unwrap_or("")) } " → " ins { (change["new"].as_str().unwrap_or("")) } }
                                            }
                                            @for added in diff["added"].as_array().into_iter().flatten() {
                                                li { "+ " (added["kind"].as_str().unwrap_or("")) ": " ins { (added["value"].as_str().unwrap_or("")) } }
                                            }
                                        }
                                    }
                                } @else if let Some(first) = row["batch_duplicate_of"].as_u64() {
                                    span class="muted" { (viewer.lang.f("import.same_as_row", &[("row", &(first + 1).to_string())])) }
                                }
                            }
                            td {
                                @if !parsed.as_object().is_none_or(|o| o.is_empty()) {
                                    label for={ "action-" (index) } class="visually-hidden" { (viewer.lang.f("import.decision_for", &[("row", &(index + 1).to_string())])) }
                                    select id={ "action-" (index) } name={ "action_" (index) } {
                                        @for a in ["add", "update", "skip"] {
                                            @if a != "update" || row["duplicate_match"].is_object() {
                                                option value=(a) selected[a == suggested] { (t(action_key(a))) }
                                            }
                                        }
                                    }
                                } @else { span class="muted" { (t("import.action_skip")) } }
                            }
                        }
                    }
                }
            }
            @if let Some(more) = preview["rows_not_shown"].as_u64().filter(|n| *n > 0) {
                p class="muted" id="rows-not-shown" {
                    (viewer.lang.f("import.not_shown", &[("shown", &rows.len().to_string()), ("count", &more.to_string())]))
                }
            }
            button type="submit" class="primary" { (t("import.confirm")) }
        }
        p { a href="/import" { (t("import.cancel")) } }
    };
    shell(&c, t("import.preview_title"), None, main)
}

pub async fn confirm(
    State(state): State<AppState>,
    viewer: Viewer,
    Path(session): Path<String>,
    form: Form,
) -> PageResult {
    let (decisions, bulk) = decisions_of(&form);
    let batch = state.config.import.batch_rows;
    let accepts = [Source::Csv, Source::Vcf, Source::JsContact];
    let (sessions, scope) = (state.imports.clone(), state.scope(&viewer.user));
    let result = import::confirm(sessions, scope, session, &decisions, Some(bulk), &accepts, batch)
        .await
        .map_err(ApiError::from)?;
    Ok(page(result_page(&viewer, &result)))
}

/// The decisions a preview's form sent: each shown row's choice, and the choice for all rows
/// (which the confirm applies, to the rows not shown too).
fn decisions_of(form: &Form) -> (Vec<Decision>, Bulk) {
    let bulk = match form.get("bulk").as_str() {
        "skip" => Bulk::Skip,
        "add_update" => Bulk::AddUpdate,
        "add_skip" => Bulk::AddSkip,
        _ => Bulk::Rows,
    };
    let decisions = form
        .0
        .iter()
        .filter_map(|(key, value)| {
            let index = key.strip_prefix("action_")?.parse::<usize>().ok()?;
            Some(Decision { row_index: index, action: value.clone() })
        })
        .collect();
    (decisions, bulk)
}

fn result_page(viewer: &Viewer, result: &ImportResult) -> Markup {
    let c = viewer.chrome();
    let t = |k| viewer.t(k);
    let main = html! {
        h1 { (t("import.result_title")) }
        p class="notice" role="status" {
            (viewer.lang.f("import.result", &[("created", &result.created.to_string()), ("updated", &result.updated.to_string()),
                ("skipped", &result.skipped.to_string()), ("errors", &result.error_count.to_string())]))
        }
        @if !result.errors.is_empty() {
            h2 { (t("import.problems")) }
            ul class="items" { @for e in &result.errors { li { (e) } } }
        }
        p { a class="button primary" href="/contacts?sort=updated" { (t("import.see_contacts")) } " " a class="button" href="/import" { (t("import.another")) } }
    };
    shell(&c, t("import.result_title"), None, main)
}
