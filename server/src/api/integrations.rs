//! The user's integrations over HTTP, at the existing clients' paths: each system's settings
//! and connection test (`/{system}/config`, `/{system}/test-connection`), the photo library
//! (`/immich/...`), the document archive (`/paperless/...`), the file library (`/seafile/...`)
//! and WebDAV (`/nextcloud/...`). Each handler is one call of `integrations::`.

use axum::extract::State;
use axum::http::StatusCode;
use axum::http::header::{CACHE_CONTROL, CONTENT_DISPOSITION, CONTENT_TYPE, X_CONTENT_TYPE_OPTIONS};
use axum::response::{IntoResponse, Response};
use serde::{Deserialize, Serialize};
use utoipa::{IntoParams, ToSchema};

use crate::auth::AuthUser;
use crate::crm::Message;
use crate::crm::external::ops::ExternalIdentityView;
use crate::error::ApiError;
use crate::http::extract::{Path, Query};
use crate::http::json::Json;
use crate::integrations::config::{self, ConfigInput, ConfigView};
use crate::integrations::remote::TestResult;
use crate::integrations::{System, health, immich, paperless, seafile, webdav};
use crate::state::AppState;

/// The path's system: `immich`, `paperless`, `seafile` or `nextcloud` (another is 404).
fn system(name: &str) -> Result<System, ApiError> {
    System::parse(name).ok_or(ApiError::NotFound)
}

#[utoipa::path(get, path = "/api/v1/{system}/config", tag = "integrations",
    params(("system" = String, Path, pattern = "^(immich|paperless|seafile|nextcloud)$")),
    responses((status = 200, body = ConfigView, description = "The settings, never the credential: `has_api_key` (Immich), `has_api_token` (Paperless, Seafile) or `has_app_password` (WebDAV); not configured is 200 with an empty address"),
        (status = 404, description = "No such system")))]
pub async fn get_config(
    State(state): State<AppState>,
    user: AuthUser,
    Path(name): Path<String>,
) -> Result<axum::Json<ConfigView>, ApiError> {
    let system = system(&name)?;
    let i = state.integrations.clone();
    let view = state.blocking(move |_| config::view(&i, user.id.0, system)).await??;
    Ok(axum::Json(view))
}

#[utoipa::path(put, path = "/api/v1/{system}/config", tag = "integrations",
    params(("system" = String, Path, pattern = "^(immich|paperless|seafile|nextcloud)$")),
    request_body = ConfigInput,
    responses((status = 200, body = ConfigView),
        (status = 400, description = "Bad or private address, missing credential (the first time), a real WebDAV password instead of an app password; field named"),
        (status = 404, description = "No such system")))]
pub async fn put_config(
    State(state): State<AppState>,
    user: AuthUser,
    Path(name): Path<String>,
    Json(input): Json<ConfigInput>,
) -> Result<axum::Json<ConfigView>, ApiError> {
    let system = system(&name)?;
    Ok(axum::Json(crate::integrations::connect::save(&state.integrations, user.id.0, system, input).await?))
}

#[utoipa::path(delete, path = "/api/v1/{system}/config", tag = "integrations",
    params(("system" = String, Path, pattern = "^(immich|paperless|seafile|nextcloud)$")),
    responses((status = 200, body = Message, description = "Forgotten (the links stay); also when there was none"),
        (status = 404, description = "No such system")))]
pub async fn delete_config(
    State(state): State<AppState>,
    user: AuthUser,
    Path(name): Path<String>,
) -> Result<axum::Json<Message>, ApiError> {
    let system = system(&name)?;
    config::delete(&state.integrations, user.id.0, system).await?;
    Ok(axum::Json(Message { message: format!("{} config deleted", system.label()) }))
}

#[utoipa::path(post, path = "/api/v1/{system}/test-connection", tag = "integrations",
    params(("system" = String, Path, pattern = "^(immich|paperless|seafile|nextcloud)$")),
    responses((status = 200, body = TestResult, description = "`{ok, stage, message}`: the stored settings tried; a failure is 200 with `ok: false`"),
        (status = 404, description = "No such system"),
        (status = 409, description = "Not configured"),
        (status = 503, description = "The credential no longer opens after a key change (re-enter it)")))]
pub async fn test_connection(
    State(state): State<AppState>,
    user: AuthUser,
    Path(name): Path<String>,
) -> Result<axum::Json<TestResult>, ApiError> {
    let system = system(&name)?;
    Ok(axum::Json(health::test(&state.integrations, user.id.0, system).await?))
}

#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Path)]
pub struct LinkPath {
    #[param(pattern = "^(immich|paperless|seafile|nextcloud)$")]
    pub system: String,
    /// The contact's vCard UID (or id).
    pub vcard_uid: String,
    #[param(maximum = 9223372036854775807_u64)]
    pub identity_id: u64,
}

#[utoipa::path(delete, path = "/api/v1/{system}/contacts/{vcard_uid}/links/{identity_id}", tag = "integrations",
    params(LinkPath),
    responses((status = 200, body = Message), (status = 404, description = "No such contact, or no such link of this system on it")))]
pub async fn unlink(
    State(state): State<AppState>,
    user: AuthUser,
    Path(p): Path<LinkPath>,
) -> Result<axum::Json<Message>, ApiError> {
    let system = system(&p.system)?;
    crate::integrations::unlink(&state.scope(&user), &p.vcard_uid, system, p.identity_id).await?;
    Ok(axum::Json(Message { message: format!("{} link removed", system.label()) }))
}

/// `{external_identity}`: the link made.
#[derive(Debug, Serialize, ToSchema)]
pub struct IntegrationLinked {
    pub message: String,
    pub external_identity: ExternalIdentityView,
}

fn linked(system: System, view: ExternalIdentityView) -> (StatusCode, axum::Json<IntegrationLinked>) {
    let message = format!("{} link created", system.label());
    (StatusCode::CREATED, axum::Json(IntegrationLinked { message, external_identity: view }))
}

// ---------------------------------------------------------------------------------------------
// Immich

/// `{people}`.
#[derive(Debug, Serialize, ToSchema)]
pub struct ImmichPeople {
    pub people: Vec<immich::Person>,
}

#[utoipa::path(get, path = "/api/v1/immich/people", tag = "integrations", responses(
    (status = 200, body = ImmichPeople, description = "The library's people, named first"),
    (status = 409, description = "Immich not configured"), (status = 503, description = "Immich not answering, refusing the credential, or the credential no longer opens")))]
pub async fn immich_people(
    State(state): State<AppState>,
    user: AuthUser,
) -> Result<axum::Json<ImmichPeople>, ApiError> {
    Ok(axum::Json(ImmichPeople { people: immich::people(&state.integrations, user.id.0).await? }))
}

#[utoipa::path(post, path = "/api/v1/immich/sync", tag = "integrations", responses(
    (status = 200, body = immich::Synced, description = "Every linked person synced (some may have failed: `failed`)"),
    (status = 409, description = "Immich not configured"),
    (status = 503, description = "Every linked person failed, or the credential no longer opens")))]
pub async fn immich_sync(
    State(state): State<AppState>,
    user: AuthUser,
) -> Result<axum::Json<immich::Synced>, ApiError> {
    Ok(axum::Json(immich::sync_user(&state.integrations, user.id.0).await?))
}

#[derive(Debug, Deserialize, ToSchema)]
pub struct ImmichLinkInput {
    /// The person's id in Immich.
    #[serde(default)]
    #[schema(required = true, min_length = 1, max_length = 255)]
    pub person_id: String,
    /// Their name (left out: Immich's).
    #[schema(max_length = 200)]
    pub person_name: Option<String>,
}

#[utoipa::path(post, path = "/api/v1/immich/contacts/{vcard_uid}/link", tag = "integrations",
    params(("vcard_uid" = String, Path)), request_body = ImmichLinkInput, responses(
    (status = 201, body = IntegrationLinked), (status = 400, description = "No person_id"),
    (status = 404, description = "No such contact, or no such person in Immich"),
    (status = 409, description = "The contact is linked already, or the person is linked to another contact"),
    (status = 409, description = "Immich not configured"), (status = 503, description = "Immich not answering, refusing the credential, or the credential no longer opens")))]
pub async fn immich_link(
    State(state): State<AppState>,
    user: AuthUser,
    Path(uid): Path<String>,
    Json(input): Json<ImmichLinkInput>,
) -> Result<(StatusCode, axum::Json<IntegrationLinked>), ApiError> {
    let scope = state.scope(&user);
    let view =
        immich::link(&state.integrations, &scope, user.id.0, &uid, &input.person_id, input.person_name.as_deref())
            .await?;
    Ok(linked(System::Immich, view))
}

#[utoipa::path(delete, path = "/api/v1/immich/contacts/{vcard_uid}/link", tag = "integrations",
    params(("vcard_uid" = String, Path)), responses(
    (status = 200, body = Message, description = "Unlinked; the photos recorded stay on the timeline"),
    (status = 404, description = "No such contact, or it is not linked")))]
pub async fn immich_unlink(
    State(state): State<AppState>,
    user: AuthUser,
    Path(uid): Path<String>,
) -> Result<axum::Json<Message>, ApiError> {
    immich::unlink(&state.scope(&user), &uid).await?;
    Ok(axum::Json(Message::new("Immich link removed")))
}

/// `{summary}`: the linked person, or null.
#[derive(Debug, Serialize, ToSchema)]
pub struct ImmichSummaryAnswer {
    pub summary: Option<immich::Summary>,
}

#[utoipa::path(get, path = "/api/v1/immich/contacts/{vcard_uid}/summary", tag = "integrations",
    params(("vcard_uid" = String, Path)), responses(
    (status = 200, body = ImmichSummaryAnswer, description = "As the last sync saw the person; null when not linked"),
    (status = 404, description = "No such contact")))]
pub async fn immich_summary(
    State(state): State<AppState>,
    user: AuthUser,
    Path(uid): Path<String>,
) -> Result<axum::Json<ImmichSummaryAnswer>, ApiError> {
    let scope = state.scope(&user);
    let summary = state.blocking(move |_| immich::summary(&scope, &uid)).await??;
    Ok(axum::Json(ImmichSummaryAnswer { summary }))
}

fn image(img: immich::Image) -> Response {
    (
        [
            (CONTENT_TYPE, img.mime.to_string()),
            (CACHE_CONTROL, "private, max-age=3600".to_string()),
            (CONTENT_DISPOSITION, "inline".to_string()),
            (X_CONTENT_TYPE_OPTIONS, "nosniff".to_string()),
        ],
        img.bytes,
    )
        .into_response()
}

#[utoipa::path(get, path = "/api/v1/immich/contacts/{vcard_uid}/thumbnail", tag = "integrations",
    params(("vcard_uid" = String, Path)), responses(
    (status = 200, content_type = "image/jpeg", description = "The linked person's face (JPEG, PNG, GIF or WebP, at most 10 MB)"),
    (status = 404, description = "No such contact, not linked, or no such person"),
    (status = 409, description = "Immich not configured"), (status = 503, description = "Immich not answering, refusing the credential, or the credential no longer opens")))]
pub async fn immich_thumbnail(
    State(state): State<AppState>,
    user: AuthUser,
    Path(uid): Path<String>,
) -> Result<Response, ApiError> {
    Ok(image(immich::face(&state.integrations, &state.scope(&user), user.id.0, &uid).await?))
}

/// `{assets}`.
#[derive(Debug, Serialize, ToSchema)]
pub struct ImmichAssets {
    pub assets: Vec<immich::Asset>,
}

#[utoipa::path(get, path = "/api/v1/immich/contacts/{vcard_uid}/assets", tag = "integrations",
    params(("vcard_uid" = String, Path)), responses(
    (status = 200, body = ImmichAssets, description = "The person's 30 newest photos, newest first (recorded on the timeline too)"),
    (status = 404, description = "No such contact, or not linked"),
    (status = 409, description = "Immich not configured"), (status = 503, description = "Immich not answering, refusing the credential, or the credential no longer opens")))]
pub async fn immich_assets(
    State(state): State<AppState>,
    user: AuthUser,
    Path(uid): Path<String>,
) -> Result<axum::Json<ImmichAssets>, ApiError> {
    let assets = immich::assets(&state.integrations, &state.scope(&user), user.id.0, &uid).await?;
    Ok(axum::Json(ImmichAssets { assets }))
}

#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Path)]
pub struct AssetPath {
    pub vcard_uid: String,
    pub asset_id: String,
}

#[utoipa::path(get, path = "/api/v1/immich/contacts/{vcard_uid}/assets/{asset_id}/image", tag = "integrations",
    params(AssetPath), responses(
    (status = 200, content_type = "image/jpeg", description = "The photo's thumbnail (JPEG, PNG, GIF or WebP, at most 10 MB)"),
    (status = 404, description = "No such contact, not linked, or not a photo recorded of this contact"),
    (status = 409, description = "Immich not configured"), (status = 503, description = "Immich not answering, refusing the credential, or the credential no longer opens")))]
pub async fn immich_asset_image(
    State(state): State<AppState>,
    user: AuthUser,
    Path(p): Path<AssetPath>,
) -> Result<Response, ApiError> {
    let img =
        immich::asset_image(&state.integrations, &state.scope(&user), user.id.0, &p.vcard_uid, &p.asset_id).await?;
    Ok(image(img))
}

#[utoipa::path(post, path = "/api/v1/immich/contacts/{vcard_uid}/assets/{asset_id}/use-as-picture", tag = "integrations",
    params(AssetPath), responses(
    (status = 200, body = Message, description = "The photo's thumbnail is the contact's picture now"),
    (status = 400, description = "Not a picture this server keeps (JPEG, PNG, GIF or WebP, at most 10 MB)"),
    (status = 404, description = "No such contact, not linked, or not a photo recorded of this contact"),
    (status = 409, description = "Immich not configured"),
    (status = 503, description = "Immich not answering, refusing the credential, or the credential no longer opens")))]
pub async fn immich_use_as_picture(
    State(state): State<AppState>,
    user: AuthUser,
    Path(p): Path<AssetPath>,
) -> Result<axum::Json<Message>, ApiError> {
    immich::use_as_picture(&state.integrations, &state.scope(&user), user.id.0, &p.vcard_uid, &p.asset_id).await?;
    Ok(axum::Json(Message::new("Profile picture updated")))
}

// ---------------------------------------------------------------------------------------------
// Paperless

#[derive(Debug, Default, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct DocumentQuery {
    /// Full-text search.
    pub query: Option<String>,
    /// A correspondent's id.
    #[param(value_type = Option<u64>, minimum = 1)]
    pub correspondent: Option<String>,
    /// A tag's id.
    #[param(value_type = Option<u64>, minimum = 1)]
    pub tag: Option<String>,
}

fn id_param(field: &str, raw: Option<&str>) -> Result<Option<u64>, ApiError> {
    match raw.map(str::trim).filter(|r| !r.is_empty()) {
        None => Ok(None),
        Some(r) => {
            r.parse::<u64>().ok().filter(|n| *n > 0).map(Some).ok_or_else(|| ApiError::InvalidInput {
                field: field.into(),
                reason: "must be a positive number".into(),
            })
        }
    }
}

/// `{documents}`.
#[derive(Debug, Serialize, ToSchema)]
pub struct PaperlessDocuments {
    pub documents: Vec<paperless::Document>,
}

#[utoipa::path(get, path = "/api/v1/paperless/documents", tag = "integrations", params(DocumentQuery), responses(
    (status = 200, body = PaperlessDocuments, description = "Matching documents, newest added first, at most 100"),
    (status = 400, description = "Bad correspondent or tag, named"),
    (status = 409, description = "Paperless not configured"), (status = 503, description = "Paperless not answering, refusing the credential, or the credential no longer opens")))]
pub async fn paperless_documents(
    State(state): State<AppState>,
    user: AuthUser,
    Query(q): Query<DocumentQuery>,
) -> Result<axum::Json<PaperlessDocuments>, ApiError> {
    let search = paperless::Search {
        correspondent: id_param("correspondent", q.correspondent.as_deref())?,
        tag: id_param("tag", q.tag.as_deref())?,
        query: q.query,
    };
    Ok(axum::Json(PaperlessDocuments {
        documents: paperless::documents(&state.integrations, user.id.0, &search).await?,
    }))
}

/// `{correspondents}` or `{tags}`.
#[derive(Debug, Serialize, ToSchema)]
pub struct PaperlessLabels {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub correspondents: Option<Vec<paperless::Label>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tags: Option<Vec<paperless::Label>>,
}

#[utoipa::path(get, path = "/api/v1/paperless/correspondents", tag = "integrations", responses(
    (status = 200, body = PaperlessLabels, description = "`{correspondents}`, by name"),
    (status = 409, description = "Paperless not configured"), (status = 503, description = "Paperless not answering, refusing the credential, or the credential no longer opens")))]
pub async fn paperless_correspondents(
    State(state): State<AppState>,
    user: AuthUser,
) -> Result<axum::Json<PaperlessLabels>, ApiError> {
    let list = paperless::labels(&state.integrations, user.id.0, false).await?;
    Ok(axum::Json(PaperlessLabels { correspondents: Some(list), tags: None }))
}

#[utoipa::path(get, path = "/api/v1/paperless/tags", tag = "integrations", responses(
    (status = 200, body = PaperlessLabels, description = "`{tags}`, by name"),
    (status = 409, description = "Paperless not configured"), (status = 503, description = "Paperless not answering, refusing the credential, or the credential no longer opens")))]
pub async fn paperless_tags(
    State(state): State<AppState>,
    user: AuthUser,
) -> Result<axum::Json<PaperlessLabels>, ApiError> {
    let list = paperless::labels(&state.integrations, user.id.0, true).await?;
    Ok(axum::Json(PaperlessLabels { correspondents: None, tags: Some(list) }))
}

#[derive(Debug, Deserialize, ToSchema)]
pub struct PaperlessLinkInput {
    /// The document's id (a number, as a string or a number).
    #[schema(value_type = String, min_length = 1, max_length = 64)]
    pub document_id: serde_json::Value,
}

#[utoipa::path(post, path = "/api/v1/paperless/contacts/{vcard_uid}/link", tag = "integrations",
    params(("vcard_uid" = String, Path)), request_body = PaperlessLinkInput, responses(
    (status = 201, body = IntegrationLinked), (status = 400, description = "Not a document id"),
    (status = 404, description = "No such contact or document"),
    (status = 409, description = "The document is linked to a contact already"),
    (status = 409, description = "Paperless not configured"), (status = 503, description = "Paperless not answering, refusing the credential, or the credential no longer opens")))]
pub async fn paperless_link(
    State(state): State<AppState>,
    user: AuthUser,
    Path(uid): Path<String>,
    Json(input): Json<PaperlessLinkInput>,
) -> Result<(StatusCode, axum::Json<IntegrationLinked>), ApiError> {
    let id = match &input.document_id {
        serde_json::Value::String(s) => s.clone(),
        serde_json::Value::Number(n) => n.to_string(),
        _ => String::new(),
    };
    let view = paperless::link(&state.integrations, &state.scope(&user), user.id.0, &uid, &id).await?;
    Ok(linked(System::Paperless, view))
}

// ---------------------------------------------------------------------------------------------
// Seafile

/// `{libraries}`.
#[derive(Debug, Serialize, ToSchema)]
pub struct SeafileLibraries {
    pub libraries: Vec<seafile::Library>,
}

#[utoipa::path(get, path = "/api/v1/seafile/libraries", tag = "integrations", responses(
    (status = 200, body = SeafileLibraries), (status = 409, description = "Seafile not configured"), (status = 503, description = "Seafile not answering, refusing the credential, or the credential no longer opens")))]
pub async fn seafile_libraries(
    State(state): State<AppState>,
    user: AuthUser,
) -> Result<axum::Json<SeafileLibraries>, ApiError> {
    Ok(axum::Json(SeafileLibraries { libraries: seafile::libraries(&state.integrations, user.id.0).await? }))
}

#[derive(Debug, Default, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct DirQuery {
    /// The folder (default `/`).
    pub path: Option<String>,
}

/// `{items}`.
#[derive(Debug, Serialize, ToSchema)]
pub struct SeafileItems {
    pub items: Vec<seafile::Item>,
}

#[utoipa::path(get, path = "/api/v1/seafile/libraries/{repo_id}/dir", tag = "integrations",
    params(("repo_id" = String, Path), DirQuery), responses(
    (status = 200, body = SeafileItems, description = "The folder's entries, folders first"),
    (status = 400, description = "Bad path, named"), (status = 404, description = "No such library or folder"),
    (status = 409, description = "Seafile not configured"), (status = 503, description = "Seafile not answering, refusing the credential, or the credential no longer opens")))]
pub async fn seafile_dir(
    State(state): State<AppState>,
    user: AuthUser,
    Path(repo): Path<String>,
    Query(q): Query<DirQuery>,
) -> Result<axum::Json<SeafileItems>, ApiError> {
    Ok(axum::Json(SeafileItems {
        items: seafile::dir(&state.integrations, user.id.0, &repo, q.path.as_deref()).await?,
    }))
}

#[utoipa::path(post, path = "/api/v1/seafile/contacts/{vcard_uid}/link", tag = "integrations",
    params(("vcard_uid" = String, Path)), request_body = seafile::LinkInput, responses(
    (status = 201, body = IntegrationLinked), (status = 400, description = "Bad library or path, named"),
    (status = 404, description = "No such contact, library, file or folder"),
    (status = 409, description = "Linked to a contact already"),
    (status = 409, description = "Seafile not configured"), (status = 503, description = "Seafile not answering, refusing the credential, or the credential no longer opens")))]
pub async fn seafile_link(
    State(state): State<AppState>,
    user: AuthUser,
    Path(uid): Path<String>,
    Json(input): Json<seafile::LinkInput>,
) -> Result<(StatusCode, axum::Json<IntegrationLinked>), ApiError> {
    let view = seafile::link(&state.integrations, &state.scope(&user), user.id.0, &uid, &input).await?;
    Ok(linked(System::Seafile, view))
}

// ---------------------------------------------------------------------------------------------
// WebDAV (Nextcloud, ownCloud, any server)

/// `{items}`.
#[derive(Debug, Serialize, ToSchema)]
pub struct WebdavItems {
    pub items: Vec<webdav::Item>,
}

#[utoipa::path(get, path = "/api/v1/nextcloud/dir", tag = "integrations", params(DirQuery), responses(
    (status = 200, body = WebdavItems, description = "The folder's entries, folders first (paths end with `/`)"),
    (status = 400, description = "Bad path, named"), (status = 404, description = "No such folder"),
    (status = 409, description = "WebDAV not configured"), (status = 503, description = "WebDAV not answering, refusing the credential, or the credential no longer opens")))]
pub async fn webdav_dir(
    State(state): State<AppState>,
    user: AuthUser,
    Query(q): Query<DirQuery>,
) -> Result<axum::Json<WebdavItems>, ApiError> {
    Ok(axum::Json(WebdavItems { items: webdav::dir(&state.integrations, user.id.0, q.path.as_deref()).await? }))
}

#[utoipa::path(post, path = "/api/v1/nextcloud/contacts/{vcard_uid}/link", tag = "integrations",
    params(("vcard_uid" = String, Path)), request_body = webdav::LinkInput, responses(
    (status = 201, body = IntegrationLinked), (status = 400, description = "Bad path, named"),
    (status = 404, description = "No such contact, file or folder"),
    (status = 409, description = "Linked to a contact already"),
    (status = 409, description = "WebDAV not configured"), (status = 503, description = "WebDAV not answering, refusing the credential, or the credential no longer opens")))]
pub async fn webdav_link(
    State(state): State<AppState>,
    user: AuthUser,
    Path(uid): Path<String>,
    Json(input): Json<webdav::LinkInput>,
) -> Result<(StatusCode, axum::Json<IntegrationLinked>), ApiError> {
    let view = webdav::link(&state.integrations, &state.scope(&user), user.id.0, &uid, &input).await?;
    Ok(linked(System::Nextcloud, view))
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_documented_pattern_names_every_system() {
        for s in crate::integrations::System::ALL {
            assert!("^(immich|paperless|seafile|nextcloud)$".contains(s.name()));
        }
    }
}
