//! Attachments: files kept with a contact (multipart field `file`, at most 25 MB each, within a
//! per-user quota), stored under the data folder, served back with their type, a safe
//! `Content-Disposition` and `nosniff`, and removed from disk with the row or the contact.

use axum::extract::{Multipart, Path, State};
use axum::http::StatusCode;
use axum::http::header::{CONTENT_DISPOSITION, CONTENT_TYPE};
use axum::response::{IntoResponse, Response};
use mycorrhizal_engine::{Precondition, Row, Walk};
use serde_json::{Value, json};
use sha2::{Digest, Sha256};

use crate::auth::AuthUser;
use crate::crm::contact::Contact;
use crate::crm::contact::ops::require_contacts;
use crate::crm::depth::Attachment;
use crate::crm::records::BY_CONTACT;
use crate::error::ApiError;
use crate::state::AppState;

pub const MAX_ATTACHMENT: usize = 25 * 1024 * 1024;
/// Types a browser may show inline; everything else downloads.
const INLINE: &[&str] = &["image/jpeg", "image/png", "image/gif", "image/webp", "application/pdf", "text/plain"];

pub fn dir(state: &AppState, user: &AuthUser) -> std::path::PathBuf {
    crate::crm::depth::attachments_dir(&state.config.data_dir, user.id)
}

fn view(row: &Row<Attachment>, uid: &str) -> Value {
    json!({
        "id": row.id,
        "contact_id": row.body.contact_id,
        "contact_vcard_uid": uid,
        "original_name": row.body.original_name,
        "content_type": row.body.content_type,
        "size_bytes": row.body.size_bytes,
        "created_at": row.meta.created_at,
        "updated_at": row.meta.updated_at,
    })
}

/// A name safe to echo in a header: no path, quotes or control characters.
fn clean_name(raw: &str) -> String {
    let base = raw.rsplit(['/', '\\']).next().unwrap_or("");
    let cleaned: String = base.chars().filter(|c| !c.is_control() && *c != '"').take(255).collect();
    if cleaned.trim().is_empty() { "attachment".into() } else { cleaned }
}

#[utoipa::path(post, path = "/api/v1/contacts/{id}/attachments", tag = "depth", params(("id" = u64, Path)), request_body(content_type = "multipart/form-data", description = "Field `file`, at most 25 MB"), responses(
    (status = 201, description = "`{attachment}`"), (status = 400, description = "No file, too large, or over the quota"), (status = 404, description = "No such contact")))]
pub async fn upload(
    State(state): State<AppState>,
    user: AuthUser,
    Path(id): Path<u64>,
    mut form: Multipart,
) -> Result<Response, ApiError> {
    let scope = state.scope(&user);
    let contact = scope.get::<Contact>(id)?;
    let mut file = None;
    while let Some(field) = form.next_field().await.map_err(|e| ApiError::invalid_input("file", e.body_text()))? {
        if field.name() == Some("file") {
            let name = clean_name(field.file_name().unwrap_or("attachment"));
            let kind = field.content_type().unwrap_or("application/octet-stream").to_ascii_lowercase();
            let bytes = field.bytes().await.map_err(|_| ApiError::validation("file", "must be at most 25 MB"))?;
            file = Some((name, kind, bytes));
        }
    }
    let (original_name, content_type, bytes) = file.ok_or_else(|| ApiError::validation("file", "is required"))?;
    if bytes.len() > MAX_ATTACHMENT {
        return Err(ApiError::validation("file", "must be at most 25 MB"));
    }
    let quota = state.config.attachment_quota_bytes;
    let used: u64 = scope.list::<Attachment>()?.iter().map(|a| a.body.size_bytes).sum();
    if used + bytes.len() as u64 > quota {
        return Err(ApiError::validation(
            "file",
            format!("would exceed your attachment quota of {} MB", quota / 1024 / 1024),
        ));
    }
    let sha256 = hex::encode(Sha256::digest(&bytes));
    let record = Attachment { contact_id: id, original_name, content_type, size_bytes: bytes.len() as u64, sha256 };
    let row = scope.write_async(move |tx| tx.get::<Contact>(id).and_then(|_| tx.create(record.clone()))).await?;
    let (folder, file_id) = (dir(&state, &user), row.id);
    let written = state
        .blocking(move |_| -> std::io::Result<()> {
            std::fs::create_dir_all(&folder)?;
            crate::ops::fs::write_whole(&folder, &file_id.to_string(), &bytes)
        })
        .await?;
    if let Err(e) = written {
        // The row without its bytes would be a lie: take it back.
        let _ = scope.write_async(move |tx| tx.delete::<Attachment>(file_id, Precondition::Any)).await;
        return Err(ApiError::internal(e));
    }
    Ok((StatusCode::CREATED, axum::Json(json!({ "attachment": view(&row, &contact.body.uid) }))).into_response())
}

#[utoipa::path(get, path = "/api/v1/contacts/{id}/attachments", tag = "depth", params(("id" = u64, Path)), responses((status = 200, description = "`{attachments, total}`"), (status = 404, description = "No such contact")))]
pub async fn list(
    State(state): State<AppState>,
    user: AuthUser,
    Path(id): Path<u64>,
) -> Result<axum::Json<Value>, ApiError> {
    let scope = state.scope(&user);
    let body = state
        .blocking(move |_| {
            let v = scope.view()?;
            require_contacts(&v, &[id])?;
            let uid = v.get::<Contact>(id)?.body.uid;
            let key = format!("{id:020}");
            let rows = v.walk::<Attachment>(
                Walk {
                    index: BY_CONTACT,
                    from: &key,
                    to: Some(&format!("{:020}", id + 1)),
                    after: None,
                    descending: false,
                },
                usize::MAX,
                |_| true,
            )?;
            let items: Vec<Value> = rows.rows.iter().map(|r| view(r, &uid)).collect();
            Ok::<_, ApiError>(json!({ "total": items.len(), "attachments": items }))
        })
        .await??;
    Ok(axum::Json(body))
}

#[utoipa::path(get, path = "/api/v1/attachments/{id}/download", tag = "depth", params(("id" = u64, Path)), responses((status = 200, description = "The file"), (status = 404, description = "No such attachment")))]
pub async fn download(
    State(state): State<AppState>,
    user: AuthUser,
    Path(id): Path<u64>,
) -> Result<Response, ApiError> {
    let row = state.scope(&user).get::<Attachment>(id)?;
    let path = dir(&state, &user).join(id.to_string());
    let bytes = state.blocking(move |_| std::fs::read(path)).await?.map_err(|_| ApiError::NotFound)?;
    if hex::encode(Sha256::digest(&bytes)) != row.body.sha256 {
        return Err(ApiError::internal(format!("attachment {id} does not match its recorded digest")));
    }
    let disposition = if INLINE.contains(&row.body.content_type.as_str()) { "inline" } else { "attachment" };
    let headers = [
        (CONTENT_TYPE, row.body.content_type.clone()),
        (CONTENT_DISPOSITION, format!("{disposition}; filename=\"{}\"", row.body.original_name)),
        (axum::http::header::X_CONTENT_TYPE_OPTIONS, "nosniff".to_string()),
    ];
    Ok((headers, bytes).into_response())
}

#[utoipa::path(delete, path = "/api/v1/attachments/{id}", tag = "depth", params(("id" = u64, Path)), responses((status = 200, description = "Deleted, bytes removed"), (status = 404, description = "No such attachment")))]
pub async fn delete(
    State(state): State<AppState>,
    user: AuthUser,
    Path(id): Path<u64>,
) -> Result<axum::Json<Value>, ApiError> {
    state.scope(&user).write_async(move |tx| tx.delete::<Attachment>(id, Precondition::Any)).await?;
    let _ = std::fs::remove_file(dir(&state, &user).join(id.to_string()));
    Ok(axum::Json(json!({ "message": "Attachment deleted" })))
}
