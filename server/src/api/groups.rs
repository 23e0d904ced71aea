//! Circles and tags as named groups: listed with counts, renamed or deleted in one place (the
//! change reaches every contact in one transaction). Circles live in `crm.circles`; tags are the
//! card's `keywords`.

use std::collections::BTreeMap;

use axum::extract::{Path, State};
use mycorrhizal_engine::Precondition;
use serde::Deserialize;
use serde_json::{Value, json};
use utoipa::ToSchema;

use crate::auth::AuthUser;
use crate::crm::contact::{Contact, INDEX_CIRCLE, INDEX_TAG};
use crate::error::ApiError;
use crate::http::json::Json;
use crate::state::AppState;

#[derive(Debug, Clone, Copy)]
enum Group {
    Circle,
    Tag,
}

impl Group {
    fn index(self) -> &'static str {
        match self {
            Group::Circle => INDEX_CIRCLE,
            Group::Tag => INDEX_TAG,
        }
    }

    /// Replaces `from` with `to` (or removes it when `to` is `None`) in one contact.
    fn edit(self, contact: &mut Contact, from: &str, to: Option<&str>) -> Result<(), mycorrhizal_engine::Invalid> {
        let swap = |list: &mut Vec<String>| {
            list.retain(|item| item != from);
            if let Some(to) = to
                && !list.iter().any(|item| item == to)
            {
                list.push(to.to_string());
            }
        };
        match self {
            Group::Circle => {
                let mut crm: Value = serde_json::from_str(&contact.crm).unwrap_or_else(|_| json!({}));
                let mut circles: Vec<String> = serde_json::from_value(crm["circles"].clone()).unwrap_or_default();
                swap(&mut circles);
                crm["circles"] = json!(circles);
                contact.crm = crm.to_string();
            }
            Group::Tag => {
                let mut card = contact.parsed_card();
                swap(&mut card.keywords);
                contact.card = serde_json::to_string(&card)
                    .map_err(|e| mycorrhizal_engine::Invalid::new("card", e.to_string()))?;
            }
        }
        Ok(())
    }
}

async fn counts(state: &AppState, user: &AuthUser, group: Group) -> Result<Vec<Value>, ApiError> {
    let scope = state.scope(user);
    state
        .blocking(move |_| {
            let mut counts: BTreeMap<String, u64> = BTreeMap::new();
            for (index, value, _) in scope.view()?.index_entries::<Contact>()? {
                if index == group.index() {
                    *counts.entry(value).or_default() += 1;
                }
            }
            Ok::<_, ApiError>(counts.into_iter().map(|(name, count)| json!({ "name": name, "count": count })).collect())
        })
        .await?
}

async fn change(
    state: &AppState,
    user: &AuthUser,
    group: Group,
    from: String,
    to: Option<String>,
) -> Result<u64, ApiError> {
    if let Some(to) = &to
        && (to.trim().is_empty() || to.chars().count() > 100)
    {
        return Err(ApiError::validation("name", "must be 1 to 100 characters"));
    }
    let scope = state.scope(user);
    let ids = scope.find::<Contact>(group.index(), &from)?;
    if ids.is_empty() {
        return Err(ApiError::NotFound);
    }
    let to = to.map(|t| t.trim().to_string());
    let changed = ids.len() as u64;
    scope
        .write_async(move |tx| {
            for id in &ids {
                tx.update::<Contact>(*id, Precondition::Any, |c| group.edit(c, &from, to.as_deref()))?;
            }
            Ok(())
        })
        .await?;
    Ok(changed)
}

#[derive(Debug, Deserialize, ToSchema)]
pub struct Rename {
    /// The new name.
    pub name: String,
}

#[utoipa::path(get, path = "/api/v1/circles", tag = "contacts", responses((status = 200, description = "`{circles: [{name, count}]}`")))]
pub async fn circles(State(state): State<AppState>, user: AuthUser) -> Result<axum::Json<Value>, ApiError> {
    Ok(axum::Json(json!({ "circles": counts(&state, &user, Group::Circle).await? })))
}

#[utoipa::path(put, path = "/api/v1/circles/{name}", tag = "contacts", params(("name" = String, Path)), request_body = Rename, responses((status = 200, description = "`{message, contacts_updated}`"), (status = 404, description = "No contact is in that circle")))]
pub async fn rename_circle(
    State(state): State<AppState>,
    user: AuthUser,
    Path(name): Path<String>,
    Json(body): Json<Rename>,
) -> Result<axum::Json<Value>, ApiError> {
    let n = change(&state, &user, Group::Circle, name, Some(body.name)).await?;
    Ok(axum::Json(json!({ "message": "Circle renamed", "contacts_updated": n })))
}

#[utoipa::path(delete, path = "/api/v1/circles/{name}", tag = "contacts", params(("name" = String, Path)), responses((status = 200, description = "`{message, contacts_updated}`"), (status = 404, description = "No contact is in that circle")))]
pub async fn delete_circle(
    State(state): State<AppState>,
    user: AuthUser,
    Path(name): Path<String>,
) -> Result<axum::Json<Value>, ApiError> {
    let n = change(&state, &user, Group::Circle, name, None).await?;
    Ok(axum::Json(json!({ "message": "Circle removed from every contact", "contacts_updated": n })))
}

#[utoipa::path(get, path = "/api/v1/tags", tag = "contacts", responses((status = 200, description = "`{tags: [{name, count}]}`")))]
pub async fn tags(State(state): State<AppState>, user: AuthUser) -> Result<axum::Json<Value>, ApiError> {
    Ok(axum::Json(json!({ "tags": counts(&state, &user, Group::Tag).await? })))
}

#[utoipa::path(put, path = "/api/v1/tags/{name}", tag = "contacts", params(("name" = String, Path)), request_body = Rename, responses((status = 200, description = "`{message, contacts_updated}`"), (status = 404, description = "No contact has that tag")))]
pub async fn rename_tag(
    State(state): State<AppState>,
    user: AuthUser,
    Path(name): Path<String>,
    Json(body): Json<Rename>,
) -> Result<axum::Json<Value>, ApiError> {
    let n = change(&state, &user, Group::Tag, name, Some(body.name)).await?;
    Ok(axum::Json(json!({ "message": "Tag renamed", "contacts_updated": n })))
}

#[utoipa::path(delete, path = "/api/v1/tags/{name}", tag = "contacts", params(("name" = String, Path)), responses((status = 200, description = "`{message, contacts_updated}`"), (status = 404, description = "No contact has that tag")))]
pub async fn delete_tag(
    State(state): State<AppState>,
    user: AuthUser,
    Path(name): Path<String>,
) -> Result<axum::Json<Value>, ApiError> {
    let n = change(&state, &user, Group::Tag, name, None).await?;
    Ok(axum::Json(json!({ "message": "Tag removed from every contact", "contacts_updated": n })))
}
