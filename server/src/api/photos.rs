//! Profile pictures: multipart upload (field `photo`, at most 10 MB, JPEG, PNG, GIF or WebP,
//! checked by content rather than by name), stored in the database with the contact, served with
//! the right content type; and the image proxy for upload previews, which only reaches public
//! addresses, only accepts image content and caps size and time.

use std::time::Duration;

use crate::http::extract::{Path, Query};
use axum::extract::{Multipart, State};
use axum::http::StatusCode;
use axum::http::header::{CACHE_CONTROL, CONTENT_DISPOSITION, CONTENT_TYPE};
use axum::response::{IntoResponse, Response};
use serde::Deserialize;
use utoipa::IntoParams;

use crate::auth::AuthUser;
use crate::crm::contact::Contact;
use crate::crm::contact::view::ContactView;
use crate::crm::pictures::{self, PictureError};
use crate::error::ApiError;
use crate::http::conditional::tagged;
use crate::state::AppState;

/// The upload limit the route table sets (the rule is the domain's).
pub use crate::crm::pictures::MAX_PHOTO;

#[utoipa::path(post, path = "/api/v1/contacts/{id}/profile_picture", tag = "contacts", params(("id" = u64, Path)), request_body(content = PhotoUpload, content_type = "multipart/form-data", description = "Field `photo`: a JPEG, PNG, GIF or WebP image, at most 10 MB; without it the contact is answered unchanged"), responses(
    (status = 200, description = "The contact"), (status = 400, description = "Not an image, or too large"), (status = 404, description = "No such contact")))]
pub async fn upload(
    State(state): State<AppState>,
    user: AuthUser,
    Path(id): Path<u64>,
    mut form: Multipart,
) -> Result<Response, ApiError> {
    state.read(&user, move |v| Ok(v.get::<Contact>(id)?)).await?;
    let mut bytes = None;
    while let Some(field) = form.next_field().await.map_err(|e| ApiError::invalid_input("photo", e.body_text()))? {
        if field.name() == Some("photo") {
            let data = field.bytes().await.map_err(|_| {
                ApiError::validation("photo", format!("must be at most {} MB", MAX_PHOTO / 1024 / 1024))
            })?;
            bytes = Some(data);
        }
    }
    let Some(bytes) = bytes else {
        let row = state.read(&user, move |v| Ok(v.get::<Contact>(id)?)).await?;
        return Ok(tagged(&row, None, StatusCode::OK, &ContactView::of(&row, &[])));
    };
    let row = pictures::store(&state.scope(&user), id, bytes).await?;
    Ok(tagged(&row, None, StatusCode::OK, &ContactView::of(&row, &[])))
}

/// A profile picture upload: the multipart field `photo`.
#[derive(utoipa::ToSchema)]
#[allow(dead_code)]
pub struct PhotoUpload {
    /// A JPEG, PNG, GIF or WebP image (told by its content), at most 10 MB.
    #[schema(value_type = Option<String>, format = Binary)]
    photo: Option<Vec<u8>>,
}

/// A picture the domain refused, as the `photo` field's validation error.
impl From<PictureError> for ApiError {
    fn from(e: PictureError) -> Self {
        match e {
            PictureError::TooLarge => ApiError::validation("photo", "must be at most 10 MB"),
            PictureError::NotAnImage => ApiError::validation("photo", "must be a JPEG, PNG, GIF or WebP image"),
            PictureError::Engine(e) => e.into(),
        }
    }
}

#[derive(Debug, Default, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct PhotoQuery {
    /// `true` for the thumbnail (currently the stored image itself).
    pub thumbnail: Option<String>,
}

#[utoipa::path(get, path = "/api/v1/contacts/{id}/profile_picture", tag = "contacts", params(("id" = u64, Path), PhotoQuery), responses(
    (status = 200, description = "The image bytes with their content type"), (status = 404, description = "No such contact, or no picture")))]
pub async fn download(
    State(state): State<AppState>,
    user: AuthUser,
    Path(id): Path<u64>,
    Query(_q): Query<PhotoQuery>,
) -> Result<Response, ApiError> {
    let scope = state.scope(&user);
    let (mime, bytes) = state.blocking(move |_| pictures::read(&scope, id)).await??.ok_or(ApiError::NotFound)?;
    Ok(([(CONTENT_TYPE, mime), (CACHE_CONTROL, "private, max-age=300")], bytes).into_response())
}

#[derive(Debug, Default, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct ProxyQuery {
    /// An http or https image URL on a public address.
    pub url: Option<String>,
}

/// Fetches an external image for an upload preview: public addresses only, image types only
/// (no SVG), at most 10 MB, 10 seconds, no redirects.
#[utoipa::path(get, path = "/api/v1/proxy/image", tag = "contacts", params(ProxyQuery), responses(
    (status = 200, description = "The image bytes"), (status = 400, description = "Missing, private or non-image URL"), (status = 503, description = "The remote server failed")))]
pub async fn proxy(
    State(state): State<AppState>,
    _user: AuthUser,
    Query(q): Query<ProxyQuery>,
) -> Result<Response, ApiError> {
    let url = q.url.filter(|u| !u.trim().is_empty()).ok_or_else(|| ApiError::invalid_input("url", "is required"))?;
    let url = crate::outbound::check(&url, true).await.map_err(|reason| ApiError::validation("url", reason))?;
    let mut response = state
        .http
        .get(url)
        .timeout(Duration::from_secs(10))
        .send()
        .await
        .map_err(|_| ApiError::External("The image could not be fetched".into()))?;
    if !response.status().is_success() {
        return Err(ApiError::External(format!("The image server answered {}", response.status())));
    }
    let mut bytes = Vec::new();
    while let Some(chunk) =
        response.chunk().await.map_err(|_| ApiError::External("The image download failed".into()))?
    {
        bytes.extend_from_slice(&chunk);
        if bytes.len() > MAX_PHOTO {
            return Err(ApiError::validation("url", "the image is larger than 10 MB"));
        }
    }
    let (mime, _) =
        pictures::sniff(&bytes).ok_or_else(|| ApiError::validation("url", "is not a JPEG, PNG, GIF or WebP image"))?;
    Ok(([(CONTENT_TYPE, mime), (CONTENT_DISPOSITION, "inline")], bytes).into_response())
}
