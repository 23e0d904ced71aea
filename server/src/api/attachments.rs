//! Attachments over HTTP: the multipart field `file` in, `crm::attachment` keeps it; served back
//! with their type, a safe `Content-Disposition` and `nosniff`.

use crate::http::extract::Path;
use axum::extract::{Multipart, State};
use axum::http::StatusCode;
use axum::http::header::{CONTENT_DISPOSITION, CONTENT_TYPE};
use axum::response::{IntoResponse, Response};

use crate::auth::AuthUser;
use crate::crm::Message;
use crate::crm::contact::Contact;
use crate::crm::{
    attachment::ops as attachments, attachment::ops::AttachmentList, attachment::ops::AttachmentStored,
    attachment::ops::INLINE, attachment::ops::NewFile,
};
use crate::error::ApiError;
use crate::state::AppState;

pub use crate::crm::attachment::ops::MAX_ATTACHMENT;

#[utoipa::path(post, path = "/api/v1/contacts/{id}/attachments", tag = "depth", params(("id" = u64, Path)), request_body(content = crate::http::extract::FileUpload, content_type = "multipart/form-data", description = "Field `file`, at most 25 MB"), responses(
    (status = 201, description = "`{attachment}`"), (status = 400, description = "No file, too large, or over the quota"), (status = 404, description = "No such contact")))]
pub async fn upload(
    State(state): State<AppState>,
    user: AuthUser,
    Path(id): Path<u64>,
    mut form: Multipart,
) -> Result<Response, ApiError> {
    // Refused before the body is read when the contact is not the caller's.
    state.read(&user, move |v| Ok(v.get::<Contact>(id)?)).await?;
    let mut file = None;
    while let Some(field) = form.next_field().await.map_err(|e| ApiError::invalid_input("file", e.body_text()))? {
        if field.name() == Some("file") {
            let name = field.file_name().unwrap_or("attachment").to_string();
            let content_type = field.content_type().unwrap_or("application/octet-stream").to_string();
            let bytes = field.bytes().await.map_err(|_| ApiError::validation("file", "must be at most 25 MB"))?;
            file = Some(NewFile { name, content_type, bytes: Vec::from(bytes) });
        }
    }
    let file = file.ok_or_else(|| ApiError::validation("file", "is required"))?;
    let (scope, quota) = (state.scope(&user), state.config.attachment_quota_bytes);
    let attachment = state.blocking(move |_| attachments::store(&scope, id, file, quota)).await??;
    Ok((StatusCode::CREATED, axum::Json(AttachmentStored { attachment })).into_response())
}

#[utoipa::path(get, path = "/api/v1/contacts/{id}/attachments", tag = "depth", params(("id" = u64, Path)), responses((status = 200, body = AttachmentList), (status = 404, description = "No such contact")))]
pub async fn list(
    State(state): State<AppState>,
    user: AuthUser,
    Path(id): Path<u64>,
) -> Result<axum::Json<AttachmentList>, ApiError> {
    let attachments = state.read(&user, move |v| attachments::list(v, id)).await?;
    Ok(axum::Json(AttachmentList { total: attachments.len(), attachments }))
}

#[utoipa::path(get, path = "/api/v1/attachments/{id}/download", tag = "depth", params(("id" = u64, Path)), responses((status = 200, description = "The file"), (status = 404, description = "No such attachment")))]
pub async fn download(
    State(state): State<AppState>,
    user: AuthUser,
    Path(id): Path<u64>,
) -> Result<Response, ApiError> {
    let scope = state.scope(&user);
    let (row, bytes) = state.blocking(move |_| attachments::read(&scope, id)).await??;
    let disposition = if INLINE.contains(&row.body.content_type.as_str()) { "inline" } else { "attachment" };
    let headers = [
        (CONTENT_TYPE, row.body.content_type.clone()),
        (CONTENT_DISPOSITION, format!("{disposition}; filename=\"{}\"", row.body.original_name)),
        (axum::http::header::X_CONTENT_TYPE_OPTIONS, "nosniff".to_string()),
    ];
    Ok((headers, bytes).into_response())
}

#[utoipa::path(delete, path = "/api/v1/attachments/{id}", tag = "depth", params(("id" = u64, Path)), responses((status = 200, body = Message, description = "Deleted, bytes removed"), (status = 404, description = "No such attachment")))]
pub async fn delete(
    State(state): State<AppState>,
    user: AuthUser,
    Path(id): Path<u64>,
) -> Result<axum::Json<Message>, ApiError> {
    attachments::delete(&state.scope(&user), id).await?;
    Ok(axum::Json(Message::new("Attachment deleted")))
}
