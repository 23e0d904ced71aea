//! Cadence policies over HTTP: each handler extracts, calls one operation of `crm::cadence`, and
//! maps the result.

use crate::http::extract::Path;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};

use crate::auth::AuthUser;
use crate::crm::cadence::ops::PolicyDetail;
use crate::crm::{
    cadence::ops as cadence, cadence::ops::OverdueList, cadence::ops::PolicyInput, cadence::ops::PolicyList,
    cadence::ops::PolicyView,
};
use crate::error::ApiError;
use crate::http::conditional::{Tagged, if_match, tagged};
use crate::http::json::Json;
use crate::state::AppState;

#[derive(Debug, Default, serde::Deserialize, utoipa::IntoParams)]
#[into_params(parameter_in = Query)]
pub struct ListQuery {
    /// Only the policy of this contact (vCard UID) ...
    pub entity_id: Option<String>,
    /// ... or id.
    pub contact_id: Option<String>,
}

/// Every policy; a contact policy with its contact's `entity_id` (vCard UID) and `health`.
#[utoipa::path(get, path = "/api/v1/cadence-policies", tag = "depth", params(ListQuery), responses(
    (status = 200, body = PolicyList), (status = 404, description = "No such contact")))]
pub async fn list(
    State(state): State<AppState>,
    user: AuthUser,
    crate::http::extract::Query(q): crate::http::extract::Query<ListQuery>,
) -> Result<axum::Json<PolicyList>, ApiError> {
    let now = state.engine.clock().now();
    let only = q.entity_id.or(q.contact_id);
    let cadence_policies = state.read(&user, move |v| cadence::list_with_health(v, only.as_deref(), now)).await?;
    Ok(axum::Json(PolicyList {
        total: cadence_policies.len(),
        limit: cadence_policies.len(),
        next_cursor: String::new(),
        sync: crate::crm::cursor::SyncInfo::full_resync(),
        cadence_policies,
    }))
}

#[utoipa::path(get, path = "/api/v1/cadence-policies/overdue", tag = "depth", responses((status = 200, body = OverdueList, description = "`{overdue: [{policy, health, contact_id, contact_name}]}`, most overdue first")))]
pub async fn list_overdue(State(state): State<AppState>, user: AuthUser) -> Result<axum::Json<OverdueList>, ApiError> {
    let now = state.engine.clock().now();
    let overdue = state.read(&user, move |v| cadence::overdue(v, now)).await?;
    Ok(axum::Json(OverdueList { overdue }))
}

#[utoipa::path(post, path = "/api/v1/cadence-policies", tag = "depth", request_body = crate::crm::bodies::CadencePolicyBody, responses((status = 201, description = "The policy"), (status = 400, description = "Invalid, field named"), (status = 404, description = "No such contact")))]
pub async fn create(
    State(state): State<AppState>,
    user: AuthUser,
    Json(input): Json<PolicyInput>,
) -> Result<Tagged<PolicyView>, ApiError> {
    let row = cadence::save(&state.scope(&user), None, input).await?;
    Ok(tagged(&row, None, StatusCode::CREATED, PolicyView::of(&row)))
}

#[utoipa::path(get, path = "/api/v1/cadence-policies/{id}", tag = "depth", params(("id" = u64, Path)), responses((status = 200, description = "The policy with the health of each covered contact", body = crate::crm::cadence::ops::PolicyDetail), (status = 404, description = "No such policy")))]
pub async fn get(
    State(state): State<AppState>,
    user: AuthUser,
    headers: HeaderMap,
    Path(id): Path<u64>,
) -> Result<Tagged<PolicyDetail>, ApiError> {
    let now = state.engine.clock().now();
    let (row, detail) = state.read(&user, move |v| cadence::detail(v, id, now)).await?;
    Ok(tagged(&row, Some(&headers), StatusCode::OK, detail))
}

#[utoipa::path(put, path = "/api/v1/cadence-policies/{id}", tag = "depth", params(("id" = u64, Path)), request_body = crate::crm::bodies::CadencePolicyBody, responses((status = 200, description = "The policy"), (status = 404, description = "No such policy or contact"), (status = 412, description = "If-Match is stale")))]
pub async fn update(
    State(state): State<AppState>,
    user: AuthUser,
    headers: HeaderMap,
    Path(id): Path<u64>,
    Json(input): Json<PolicyInput>,
) -> Result<Tagged<PolicyView>, ApiError> {
    let pre = if_match(&headers)?;
    let row = cadence::save(&state.scope(&user), Some((id, pre)), input).await?;
    Ok(tagged(&row, None, StatusCode::OK, PolicyView::of(&row)))
}

#[utoipa::path(delete, path = "/api/v1/cadence-policies/{id}", tag = "depth", params(("id" = u64, Path)), responses((status = 200, description = "Deleted", body = crate::crm::Message), (status = 404, description = "No such policy")))]
pub async fn delete(
    State(state): State<AppState>,
    user: AuthUser,
    headers: HeaderMap,
    Path(id): Path<u64>,
) -> Result<axum::Json<crate::crm::Message>, ApiError> {
    cadence::delete(&state.scope(&user), id, crate::http::conditional::if_match(&headers)?).await?;
    Ok(axum::Json(crate::crm::Message::new("Cadence policy deleted")))
}
