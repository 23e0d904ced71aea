//! Profile pictures: multipart upload (field `photo`, at most 10 MB, JPEG, PNG, GIF or WebP,
//! checked by content rather than by name), stored in the database with the contact, served with
//! the right content type; and the image proxy for upload previews, which only reaches public
//! addresses, only accepts image content and caps size and time.

use crate::http::extract::{Path, Query};
use axum::extract::{Multipart, State};
use axum::http::StatusCode;
use axum::http::header::{CACHE_CONTROL, CONTENT_DISPOSITION, CONTENT_TYPE};
use axum::response::{IntoResponse, Response};
use serde::Deserialize;
use utoipa::IntoParams;

use crate::auth::AuthUser;
use crate::crm::contact::Contact;
use crate::crm::contact::picture as pictures;
use crate::crm::contact::view::ContactView;
use crate::error::ApiError;
use crate::http::conditional::{Tagged, tagged};
use crate::outbound::image::{self, FetchError};
use crate::state::AppState;

/// The upload limit the route table sets (the rule is the domain's).
pub use crate::crm::contact::picture::MAX_PHOTO;

#[utoipa::path(post, path = "/api/v1/contacts/{id}/profile_picture", tag = "contacts", params(("id" = u64, Path)), request_body(content = PhotoUpload, content_type = "multipart/form-data", description = "Field `photo`: a JPEG, PNG, GIF or WebP image, at most 10 MB; without it the contact is answered unchanged"), responses(
    (status = 200, description = "The contact"), (status = 400, description = "Not an image, or too large"), (status = 404, description = "No such contact")))]
pub async fn upload(
    State(state): State<AppState>,
    user: AuthUser,
    Path(id): Path<u64>,
    mut form: Multipart,
) -> Result<Tagged<ContactView>, ApiError> {
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
        return Ok(tagged(&row, None, StatusCode::OK, ContactView::of(&row, &[])));
    };
    let row = pictures::store(&state.scope(&user), id, bytes).await?;
    Ok(tagged(&row, None, StatusCode::OK, ContactView::of(&row, &[])))
}

/// A profile picture upload: the multipart field `photo`.
#[derive(utoipa::ToSchema)]
#[allow(dead_code)]
pub struct PhotoUpload {
    /// A JPEG, PNG, GIF or WebP image (told by its content), at most 10 MB.
    #[schema(value_type = Option<String>, format = Binary)]
    photo: Option<Vec<u8>>,
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
    let image = image::fetch(&state.http, q.url.as_deref()).await.map_err(|e| match e {
        FetchError::Missing => ApiError::invalid_input("url", "is required"),
        FetchError::Refused(reason) => ApiError::validation("url", reason),
        FetchError::Remote(message) => ApiError::External(message),
    })?;
    Ok(([(CONTENT_TYPE, image.mime), (CONTENT_DISPOSITION, "inline")], image.bytes).into_response())
}
