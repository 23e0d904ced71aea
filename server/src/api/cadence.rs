//! Cadence policies ("keep in touch every N days") and their health, computed on every read from
//! the contact's activities, never stored: the last qualifying interaction, when the next one is
//! due, and how many days overdue it is.

use axum::extract::{Path, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::Response;
use jiff::{SignedDuration, Timestamp};
use mycorrhizal_engine::{Row, UserView, Walk};
use serde::Deserialize;
use serde_json::{Value, json};
use utoipa::ToSchema;

use super::common::{if_match, tagged};
use super::contacts::scope;
use crate::auth::AuthUser;
use crate::crm::contact::{Contact, INDEX_CIRCLE, INDEX_TAG};
use crate::crm::depth::CadencePolicy;
use crate::crm::records::{Activity, BY_CONTACT, contact_range};
use crate::error::ApiError;
use crate::http::json::Json;
use crate::state::AppState;

#[derive(Debug, Deserialize, ToSchema)]
pub struct PolicyInput {
    /// `contact` (default), `circle` or `tag`.
    pub scope: Option<String>,
    /// For a contact policy: its id.
    pub contact_id: Option<u64>,
    /// For a circle or tag policy: its name.
    pub target: Option<String>,
    pub interval_days: u32,
    /// Activity types that count (`call`, `meal`, ...); empty means any activity.
    #[serde(default)]
    pub qualifying_types: Vec<String>,
}

fn policy(v: &UserView, input: PolicyInput) -> Result<CadencePolicy, ApiError> {
    let scope = input.scope.unwrap_or_else(|| "contact".into());
    let target = if scope == "contact" {
        let id =
            input.contact_id.ok_or_else(|| ApiError::validation("contact_id", "is required for a contact policy"))?;
        v.get::<Contact>(id).map_err(|_| ApiError::NotFound)?;
        id.to_string()
    } else {
        input.target.unwrap_or_default().trim().to_string()
    };
    Ok(CadencePolicy { scope, target, interval_days: input.interval_days, qualifying: input.qualifying_types })
}

/// The contacts a policy covers.
fn covered(v: &UserView, p: &CadencePolicy) -> Result<Vec<u64>, ApiError> {
    Ok(match p.scope.as_str() {
        "contact" => p.target.parse::<u64>().ok().filter(|id| v.get::<Contact>(*id).is_ok()).into_iter().collect(),
        "circle" => v.find::<Contact>(INDEX_CIRCLE, &p.target)?,
        _ => v.find::<Contact>(INDEX_TAG, &p.target)?,
    })
}

/// Health of `contact` under `policy` at `now`.
pub fn health(v: &UserView, policy: &Row<CadencePolicy>, contact: u64, now: Timestamp) -> Result<Value, ApiError> {
    let (from, to) = contact_range(contact);
    let walk = Walk { index: BY_CONTACT, from: &from, to: Some(&to), after: None, descending: true };
    let kinds = &policy.body.qualifying;
    let last = v
        .walk::<Activity>(walk, 1, |a| a.body.date <= now && (kinds.is_empty() || kinds.contains(&a.body.kind)))?
        .rows
        .into_iter()
        .next();
    let interval = SignedDuration::from_hours(i64::from(policy.body.interval_days) * 24);
    let since = last.as_ref().map(|a| a.body.date).unwrap_or(policy.meta.created_at);
    let next_due = since.checked_add(interval).map_err(ApiError::internal)?;
    let overdue_by = if now > next_due { now.duration_since(next_due).as_hours() / 24 } else { 0 };
    Ok(json!({
        "has_qualifying_interaction": last.is_some(),
        "last_interaction": last.map(|a| a.body.date),
        "next_due": next_due,
        "overdue_by": overdue_by,
        "overdue": now > next_due,
    }))
}

fn view(row: &Row<CadencePolicy>) -> Value {
    json!({
        "id": row.id,
        "scope": row.body.scope,
        "target": row.body.target,
        "interval_days": row.body.interval_days,
        "qualifying_types": row.body.qualifying,
        "revision": row.meta.revision,
        "etag": row.etag().trim_matches('"'),
        "created_at": row.meta.created_at,
        "updated_at": row.meta.updated_at,
    })
}

/// Every (policy, contact) pair that is overdue, most overdue first.
pub fn overdue(v: &UserView, now: Timestamp) -> Result<Vec<Value>, ApiError> {
    let mut out = Vec::new();
    for policy in v.list::<CadencePolicy>()? {
        for contact in covered(v, &policy.body)? {
            let h = health(v, &policy, contact, now)?;
            if h["overdue"] == true {
                let name = v.get::<Contact>(contact).map(|c| c.body.name()).unwrap_or_default();
                out.push(json!({ "policy": view(&policy), "health": h, "contact_id": contact, "contact_name": name }));
            }
        }
    }
    out.sort_by_key(|o| std::cmp::Reverse(o["health"]["overdue_by"].as_i64().unwrap_or(0)));
    Ok(out)
}

#[utoipa::path(get, path = "/api/v1/cadence-policies", tag = "depth", responses((status = 200, description = "`{cadence_policies, total}`")))]
pub async fn list(State(state): State<AppState>, user: AuthUser) -> Result<axum::Json<Value>, ApiError> {
    let rows = scope(&state, &user).list::<CadencePolicy>()?;
    Ok(axum::Json(json!({ "total": rows.len(), "cadence_policies": rows.iter().map(view).collect::<Vec<_>>() })))
}

#[utoipa::path(get, path = "/api/v1/cadence-policies/overdue", tag = "depth", responses((status = 200, description = "`{overdue: [{policy, health, contact_id, contact_name}]}`, most overdue first")))]
pub async fn list_overdue(State(state): State<AppState>, user: AuthUser) -> Result<axum::Json<Value>, ApiError> {
    let scope = scope(&state, &user);
    let now = state.engine.clock().now();
    let items = state.blocking(move |_| overdue(&scope.view()?, now)).await??;
    Ok(axum::Json(json!({ "overdue": items })))
}

#[utoipa::path(post, path = "/api/v1/cadence-policies", tag = "depth", request_body = PolicyInput, responses((status = 201, description = "The policy"), (status = 400, description = "Invalid, field named"), (status = 404, description = "No such contact")))]
pub async fn create(
    State(state): State<AppState>,
    user: AuthUser,
    Json(input): Json<PolicyInput>,
) -> Result<Response, ApiError> {
    let scope = scope(&state, &user);
    let p = policy(&scope.view()?, input)?;
    let row = scope.write_async(move |tx| tx.create(p.clone())).await?;
    Ok(tagged(&row, None, StatusCode::CREATED, &view(&row)))
}

#[utoipa::path(get, path = "/api/v1/cadence-policies/{id}", tag = "depth", params(("id" = u64, Path)), responses((status = 200, description = "The policy with the health of each covered contact"), (status = 404, description = "No such policy")))]
pub async fn get(
    State(state): State<AppState>,
    user: AuthUser,
    headers: HeaderMap,
    Path(id): Path<u64>,
) -> Result<Response, ApiError> {
    let v = scope(&state, &user).view()?;
    let row = v.get::<CadencePolicy>(id)?;
    let now = state.engine.clock().now();
    let contacts: Vec<Value> = covered(&v, &row.body)?
        .into_iter()
        .map(|c| health(&v, &row, c, now).map(|h| json!({ "contact_id": c, "health": h })))
        .collect::<Result<_, _>>()?;
    let mut body = view(&row);
    body["contacts"] = json!(contacts);
    Ok(tagged(&row, Some(&headers), StatusCode::OK, &body))
}

#[utoipa::path(put, path = "/api/v1/cadence-policies/{id}", tag = "depth", params(("id" = u64, Path)), request_body = PolicyInput, responses((status = 200, description = "The policy"), (status = 404, description = "No such policy or contact"), (status = 412, description = "If-Match is stale")))]
pub async fn update(
    State(state): State<AppState>,
    user: AuthUser,
    headers: HeaderMap,
    Path(id): Path<u64>,
    Json(input): Json<PolicyInput>,
) -> Result<Response, ApiError> {
    let pre = if_match(&headers)?;
    let scope = scope(&state, &user);
    let p = policy(&scope.view()?, input)?;
    let row = scope.write_async(move |tx| tx.put(id, pre, p.clone())).await?;
    Ok(tagged(&row, None, StatusCode::OK, &view(&row)))
}

#[utoipa::path(delete, path = "/api/v1/cadence-policies/{id}", tag = "depth", params(("id" = u64, Path)), responses((status = 200, description = "Deleted"), (status = 404, description = "No such policy")))]
pub async fn delete(
    State(state): State<AppState>,
    user: AuthUser,
    headers: HeaderMap,
    Path(id): Path<u64>,
) -> Result<axum::Json<Value>, ApiError> {
    super::common::delete_record::<CadencePolicy>(&state, &user, &headers, id, "Cadence policy deleted").await
}
