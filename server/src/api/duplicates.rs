//! The duplicate scan over HTTP, at the existing clients' paths: each handler extracts, calls
//! one operation of `crm::duplicate::ops`, and maps the result.

use axum::extract::State;

use crate::auth::AuthUser;
use crate::crm::Message;
use crate::crm::duplicate::ops::{self, DismissInput, DuplicatePage, DuplicateQuery};
use crate::error::ApiError;
use crate::http::extract::Query;
use crate::http::json::Json;
use crate::state::AppState;

#[utoipa::path(get, path = "/api/v1/contacts/duplicates", tag = "contacts", params(DuplicateQuery), responses(
    (status = 200, description = "Pairs of your contacts that are probably one person, best first: the reasons (same email, phone or name; a close name with a shared organisation or address) and a confidence; dismissed pairs left out", body = DuplicatePage),
    (status = 400, description = "A page or limit out of its bounds, named")))]
pub async fn list(
    State(state): State<AppState>,
    user: AuthUser,
    Query(query): Query<DuplicateQuery>,
) -> Result<axum::Json<DuplicatePage>, ApiError> {
    Ok(axum::Json(state.read(&user, move |v| ops::scan(v, &query)).await?))
}

#[utoipa::path(post, path = "/api/v1/contacts/duplicates/dismiss", tag = "contacts", request_body = DismissInput, responses(
    (status = 200, description = "The pair is never offered again (dismissing it twice is fine)", body = Message),
    (status = 404, description = "Not two different contacts of yours")))]
pub async fn dismiss(
    State(state): State<AppState>,
    user: AuthUser,
    Json(input): Json<DismissInput>,
) -> Result<axum::Json<Message>, ApiError> {
    ops::dismiss(&state.scope(&user), input).await?;
    Ok(axum::Json(Message::new("Pair dismissed")))
}
