//! Contacts: list (search, circle, archived and favourite filters, name or recency order, cursor
//! paging with a total), create, get (ETag, If-None-Match, field restriction), update (If-Match),
//! delete (soft, with its join rows), archive and favourite toggles, circles, five random
//! contacts, upcoming birthdays and the composite detail.

use axum::extract::{Path, Query, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::Response;
use jiff::civil::Date;
use mycorrhizal_codecs::card::Card;
use mycorrhizal_codecs::projection::{FlatInput, apply_flat};
use mycorrhizal_engine::{Plan, Precondition, Row, SearchRequest, UPDATED_INDEX, UserScope, UserView, Walk};
use serde::Deserialize;
use serde_json::{Map, Value, json};
use utoipa::{IntoParams, ToSchema};

use super::common::{self, decode_cursor, encode_cursor, if_match, tagged, today};
use crate::auth::AuthUser;
use crate::crm::calendar;
use crate::crm::contact::{Contact, INDEX_ARCHIVED, INDEX_BIRTHDAY, INDEX_CIRCLE, INDEX_SORT_NAME};
use crate::crm::depth::{AgendaItem, Attachment, Gift, LifeEvent};
use crate::crm::households::HouseholdMember;
use crate::crm::reach_out::ReachOutSuggestion;
use crate::crm::records::{Activity, Completion, Note, Relationship, Reminder};
use crate::error::ApiError;
use crate::http::json::Json;
use crate::state::AppState;

pub fn scope(state: &AppState, user: &AuthUser) -> UserScope {
    state.engine.user(user.id)
}

/// The body of create and update: a card (with optional `crm` and `passthrough`), or flat fields
/// only (`firstname`, `lastname`, `email`, `phone`, `birthday`, ...), which map into the card.
#[derive(Debug, Deserialize, ToSchema)]
pub struct ContactInput {
    pub gender: Option<String>,
    #[schema(value_type = Option<Object>)]
    pub card: Option<Value>,
    #[schema(value_type = Option<Object>)]
    pub crm: Option<Value>,
    #[schema(value_type = Option<Object>)]
    pub passthrough: Option<Value>,
    pub is_favorite: Option<bool>,
    #[serde(flatten)]
    #[schema(value_type = Object)]
    pub flat: FlatInput,
}

fn parse_card(value: Value) -> Result<Card, ApiError> {
    serde_path_to_error::deserialize::<_, Card>(value).map_err(|e| {
        let path = e.path().to_string();
        let field = if path == "." { "card".to_string() } else { format!("card.{path}") };
        ApiError::validation(field, e.inner().to_string())
    })
}

fn object(field: &str, value: Option<Value>, existing: Option<&str>) -> Result<String, ApiError> {
    match value {
        Some(v @ Value::Object(_)) => Ok(v.to_string()),
        Some(Value::Null) | None => Ok(existing.unwrap_or("{}").to_string()),
        Some(_) => Err(ApiError::validation(field, "must be a JSON object")),
    }
}

fn valid_uuid(text: &str) -> Option<String> {
    let text = text.trim().trim_start_matches("urn:uuid:").to_lowercase();
    uuid::Uuid::parse_str(&text).ok().map(|u| u.to_string())
}

/// Builds the stored contact from the input, over `existing` for an update. A new card replaces
/// the old one whole; flat fields apply onto whichever card results.
pub fn build(existing: Option<&Contact>, input: ContactInput) -> Result<Contact, ApiError> {
    let mut card = match input.card {
        Some(value) => parse_card(value)?,
        None => existing.map(Contact::parsed_card).unwrap_or_default(),
    };
    let legacy = apply_flat(&mut card, &input.flat);
    let uid = existing
        .map(|c| c.uid.clone())
        .or_else(|| card.uid.as_deref().and_then(valid_uuid))
        .unwrap_or_else(|| uuid::Uuid::new_v4().to_string());
    card.uid = Some(uid.clone());
    card.validate().map_err(|e| ApiError::validation(e.field, e.reason))?;
    let legacy_birthday = match legacy {
        Some(text) => text,
        None if input.flat.birthday.is_empty() => existing.map(|c| c.legacy_birthday.clone()).unwrap_or_default(),
        None => String::new(),
    };
    Ok(Contact {
        uid,
        card: serde_json::to_string(&card).map_err(ApiError::internal)?,
        crm: object("crm", input.crm, existing.map(|c| c.crm.as_str()))?,
        passthrough: object("passthrough", input.passthrough, existing.map(|c| c.passthrough.as_str()))?,
        gender: input.gender.or_else(|| existing.map(|c| c.gender.clone())).unwrap_or_default(),
        archived: existing.is_some_and(|c| c.archived),
        favorite: input.is_favorite.unwrap_or(existing.is_some_and(|c| c.favorite)),
        photo: existing.map(|c| c.photo.clone()).unwrap_or_default(),
        legacy_birthday,
        flat: Default::default(),
        circles: Vec::new(),
        tags: Vec::new(),
    })
}

fn photo_url(row: &Row<Contact>) -> Option<String> {
    (!row.body.photo.is_empty()).then(|| format!("/api/v1/contacts/{}/profile_picture", row.id))
}

/// The vCard RELATED type for an edge seen from one end.
fn vcard_relation(kind: &str, outgoing: bool) -> &'static str {
    match (kind, outgoing) {
        ("parent_of", true) | ("child_of", false) => "child",
        ("child_of", true) | ("parent_of", false) => "parent",
        ("spouse_of", _) => "spouse",
        ("sibling_of", _) => "sibling",
        ("friend_of", _) => "friend",
        ("coworker_of", _) => "co-worker",
        ("partner_of", _) => "sweetheart",
        ("roommate_of", _) => "co-resident",
        _ => "contact",
    }
}

/// The full contact as clients read it: canonical members, bookkeeping and the flat projection.
pub fn view(row: &Row<Contact>, related: &[(String, &'static str)]) -> Value {
    let c = &row.body;
    let mut card: Value = serde_json::from_str(&c.card).unwrap_or_else(|_| json!({}));
    if !related.is_empty() {
        let list = card["relatedTo"].as_array().cloned().unwrap_or_default();
        let mut list = list;
        for (uid, relation) in related {
            list.push(json!({ "target": format!("urn:uuid:{uid}"), "relations": [relation] }));
        }
        card["relatedTo"] = Value::Array(list);
    }
    let mut out = match serde_json::to_value(&c.flat) {
        Ok(Value::Object(map)) => map,
        _ => Map::new(),
    };
    let fields = json!({
        "id": row.id,
        "uid": c.uid,
        "etag": row.etag().trim_matches('"'),
        "revision": row.meta.revision,
        "gender": c.gender,
        "card": card,
        "crm": serde_json::from_str::<Value>(&c.crm).unwrap_or_else(|_| json!({})),
        "passthrough": serde_json::from_str::<Value>(&c.passthrough).unwrap_or_else(|_| json!({})),
        "photo": c.photo,
        "archived": c.archived,
        "is_favorite": c.favorite,
        "birthday": c.birthday(),
        "circles": c.circles,
        "tags": c.tags,
        "created_at": row.meta.created_at,
        "updated_at": row.meta.updated_at,
    });
    if let Value::Object(map) = fields {
        out.extend(map);
    }
    if let Some(url) = photo_url(row) {
        out.insert("photo_thumbnail".into(), json!(format!("{url}?thumbnail=true")));
    }
    Value::Object(out)
}

/// A list item.
pub fn summary(row: &Row<Contact>) -> Value {
    let c = &row.body;
    let mut item = json!({
        "id": row.id,
        "uid": c.uid,
        "revision": row.meta.revision,
        "firstname": c.flat.firstname,
        "lastname": c.flat.lastname,
        "nickname": c.flat.nickname,
        "fn": c.name(),
        "primary_email": c.flat.email,
        "primary_phone": c.flat.phone,
        "birthday": c.birthday(),
        "org": c.flat.org,
        "photo": c.photo,
        "archived": c.archived,
        "is_favorite": c.favorite,
        "circles": c.circles,
        "updated_at": row.meta.updated_at,
    });
    if let Some(url) = photo_url(row) {
        item["photo_thumbnail"] = json!(format!("{url}?thumbnail=true"));
    }
    item
}

/// Relations of `contact` that are projected into its card: confirmed, normal sensitivity.
fn projected_relations(view: &UserView, contact: u64) -> Result<Vec<(String, &'static str)>, ApiError> {
    let mut out = Vec::new();
    for (edge, outgoing) in super::relationships::edges_of(view, contact)? {
        if edge.body.sensitivity != "normal" {
            continue;
        }
        let other = if outgoing { edge.body.target } else { edge.body.source };
        if let Ok(row) = view.get::<Contact>(other) {
            out.push((row.body.uid, vcard_relation(&edge.body.kind, outgoing)));
        }
    }
    Ok(out)
}

#[derive(Debug, Default, Deserialize, IntoParams)]
pub struct ListQuery {
    /// Full-text search (the `/search` engine and rules: every word, prefixes, one typo on long
    /// words, quoted phrases, accents and case ignored) over names, emails, phones (also by their
    /// digits: the start as typed, or the last digits), organisation, address, notes, circles and
    /// tags. Without `sort`, best matches come first.
    pub search: Option<String>,
    /// Only members of this circle.
    pub circle: Option<String>,
    /// Only contacts with this tag.
    pub tag: Option<String>,
    /// `true` to include archived contacts.
    pub include_archived: Option<String>,
    /// `true` for archived contacts only.
    pub archived: Option<String>,
    /// `true` for favourites only.
    pub favorites: Option<String>,
    /// `updated_at` (default, newest first) or `name` (A to Z).
    pub sort: Option<String>,
    /// `asc` or `desc` (default depends on `sort`).
    pub order: Option<String>,
    /// Page size, default 25, at most 100.
    pub limit: Option<String>,
    /// `next_cursor` of the previous page.
    pub cursor: Option<String>,
}

/// Cursor value of a page in relevance order (its id part is the offset).
const RELEVANCE_CURSOR: &str = "~rank";

/// The list filtered by a search term, through the full-text index (the same engine and rules
/// as `/search`). Without an explicit `sort`, the best matches come first.
#[allow(clippy::too_many_arguments)]
fn searched(
    scope: &UserScope,
    plan: Option<&Plan>,
    sort: Option<(&'static str, bool)>,
    archived: (bool, bool),
    keep: &dyn Fn(&Row<Contact>) -> bool,
    narrowed: bool,
    after: Option<(String, u64)>,
    limit: usize,
) -> Result<Value, ApiError> {
    let page = |rows: &[Value], next: String, total: usize| json!({ "contacts": rows, "next_cursor": next, "limit": limit, "total": total });
    let Some(plan) = plan else { return Ok(page(&[], String::new(), 0)) };
    let (include_archived, archived_only) = archived;
    let request = SearchRequest {
        plan,
        kinds: Some(&["contact"]),
        include_hidden: include_archived || archived_only,
        contacts: None,
        limit: usize::MAX,
        offset: 0,
    };
    let hits = scope.search(&request)?.pop().map(|g| g.hits).unwrap_or_default();
    let view = scope.view()?;
    if sort.is_none() {
        let offset = match &after {
            None => 0,
            Some((value, offset)) if value == RELEVANCE_CURSOR => *offset as usize,
            Some(_) => return Err(ApiError::invalid_input("cursor", "belongs to another sort order")),
        };
        let (rows, total): (Vec<Row<Contact>>, usize) = if narrowed || archived_only {
            let rows: Vec<Row<Contact>> =
                hits.iter().filter_map(|h| view.get::<Contact>(h.id).ok()).filter(|r| keep(r)).collect();
            let total = rows.len();
            (rows.into_iter().skip(offset).take(limit).collect(), total)
        } else {
            let rows = hits.iter().skip(offset).take(limit).filter_map(|h| view.get::<Contact>(h.id).ok()).collect();
            (rows, hits.len())
        };
        let next = if offset + limit < total {
            encode_cursor(RELEVANCE_CURSOR, (offset + limit) as u64)
        } else {
            String::new()
        };
        return Ok(page(&rows.iter().map(summary).collect::<Vec<_>>(), next, total));
    }
    let (index, descending) = sort.unwrap_or((UPDATED_INDEX, true));
    let value_of = |row: &Row<Contact>| {
        if index == INDEX_SORT_NAME {
            row.body.flat.sort_name.clone()
        } else {
            format!("{:020}", row.meta.updated_at.as_microsecond().max(0))
        }
    };
    let mut rows: Vec<(String, Row<Contact>)> = hits
        .iter()
        .filter_map(|h| view.get::<Contact>(h.id).ok())
        .filter(|r| keep(r))
        .map(|r| (value_of(&r), r))
        .collect();
    rows.sort_by(|(va, a), (vb, b)| {
        let order = va.cmp(vb).then(a.id.cmp(&b.id));
        if descending { order.reverse() } else { order }
    });
    let total = rows.len();
    let start = match &after {
        None => 0,
        Some((value, id)) => rows
            .iter()
            .position(|(v, r)| {
                let order = v.as_str().cmp(value.as_str()).then(r.id.cmp(id));
                if descending { order.is_lt() } else { order.is_gt() }
            })
            .unwrap_or(total),
    };
    let slice = &rows[start..(start + limit).min(total)];
    let next = match slice.last() {
        Some((v, r)) if start + limit < total => encode_cursor(v, r.id),
        _ => String::new(),
    };
    Ok(page(&slice.iter().map(|(_, r)| summary(r)).collect::<Vec<_>>(), next, total))
}

#[utoipa::path(get, path = "/api/v1/contacts", tag = "contacts", params(ListQuery), responses(
    (status = 200, description = "`{contacts: [summary], next_cursor, limit, total}`"), (status = 400, description = "A bad parameter, named")))]
pub async fn list(
    State(state): State<AppState>,
    user: AuthUser,
    Query(q): Query<ListQuery>,
) -> Result<axum::Json<Value>, ApiError> {
    let include_archived = common::flag(q.include_archived.as_deref(), "include_archived")?;
    let archived_only = common::flag(q.archived.as_deref(), "archived")?;
    let favorites = common::flag(q.favorites.as_deref(), "favorites")?;
    let explicit_sort = q.sort.is_some();
    let (index, default_desc) = match q.sort.as_deref().unwrap_or("updated_at") {
        "updated_at" => (UPDATED_INDEX, true),
        "name" => (INDEX_SORT_NAME, false),
        _ => return Err(ApiError::invalid_input("sort", "must be updated_at or name")),
    };
    let descending = match q.order.as_deref() {
        None => default_desc,
        Some("asc") => false,
        Some("desc") => true,
        Some(_) => return Err(ApiError::invalid_input("order", "must be asc or desc")),
    };
    let limit = common::limit(q.limit.as_deref());
    let after = q.cursor.as_deref().filter(|c| !c.trim().is_empty()).map(decode_cursor).transpose()?;
    let needle = q.search.as_deref().map(str::trim).filter(|s| !s.is_empty()).map(Plan::parse);
    let circle = q.circle.clone().filter(|c| !c.is_empty());
    let tag = q.tag.clone().filter(|t| !t.is_empty());
    let scope = scope(&state, &user);
    let body = state
        .blocking(move |_| {
            let view = scope.view()?;
            let keep = |row: &Row<Contact>| {
                let c = &row.body;
                (if archived_only { c.archived } else { include_archived || !c.archived })
                    && (!favorites || c.favorite)
                    && circle.as_ref().is_none_or(|name| c.circles.contains(name))
                    && tag.as_ref().is_none_or(|t| c.tags.contains(t))
            };
            if let Some(plan) = &needle {
                let narrowed = favorites || circle.is_some() || tag.is_some();
                let sort = explicit_sort.then_some((index, descending));
                let archived = (include_archived, archived_only);
                return searched(&scope, plan.as_ref(), sort, archived, &keep, narrowed, after, limit);
            }
            let walk =
                Walk { index, from: "", to: None, after: after.as_ref().map(|(v, id)| (v.as_str(), *id)), descending };
            let page = view.walk::<Contact>(walk, limit, keep)?;
            let filtered = circle.is_some() || tag.is_some() || favorites;
            let total = if filtered {
                view.walk::<Contact>(Walk { after: None, ..walk }, usize::MAX, keep)?.rows.len() as u64
            } else {
                let archived = view.count_where::<Contact>(INDEX_ARCHIVED, "1")?;
                let all = view.count::<Contact>()?;
                if archived_only {
                    archived
                } else if include_archived {
                    all
                } else {
                    all.saturating_sub(archived)
                }
            };
            let next = page.next.as_ref().map(|(v, id)| encode_cursor(v, *id)).unwrap_or_default();
            let contacts: Vec<Value> = page.rows.iter().map(summary).collect();
            Ok::<_, ApiError>(json!({ "contacts": contacts, "next_cursor": next, "limit": limit, "total": total }))
        })
        .await??;
    Ok(axum::Json(body))
}

#[utoipa::path(post, path = "/api/v1/contacts", tag = "contacts", request_body = ContactInput, responses(
    (status = 201, description = "`{message, contact}`"), (status = 400, description = "Invalid, with the field named"),
    (status = 409, description = "A contact with this card UID exists")))]
pub async fn create(
    State(state): State<AppState>,
    user: AuthUser,
    Json(input): Json<ContactInput>,
) -> Result<Response, ApiError> {
    let contact = build(None, input)?;
    let row = scope(&state, &user).write_async(move |tx| tx.create(contact.clone())).await?;
    let body = json!({ "message": "Contact created", "contact": view(&row, &[]) });
    Ok(tagged(&row, None, StatusCode::CREATED, &body))
}

#[derive(Debug, Default, Deserialize, IntoParams)]
pub struct GetQuery {
    /// Comma-separated top-level fields to return (`id`, `uid`, `etag` and `revision` always are).
    pub fields: Option<String>,
}

#[utoipa::path(get, path = "/api/v1/contacts/{id}", tag = "contacts", params(("id" = u64, Path), GetQuery), responses(
    (status = 200, description = "The contact, with `ETag`"), (status = 304, description = "If-None-Match matched"), (status = 404, description = "No such contact")))]
pub async fn get(
    State(state): State<AppState>,
    user: AuthUser,
    headers: HeaderMap,
    Path(id): Path<u64>,
    Query(q): Query<GetQuery>,
) -> Result<Response, ApiError> {
    let scope = scope(&state, &user);
    let (row, related) = state
        .blocking(move |_| {
            let view = scope.view()?;
            let row = view.get::<Contact>(id)?;
            let related = projected_relations(&view, id)?;
            Ok::<_, ApiError>((row, related))
        })
        .await??;
    let mut body = view(&row, &related);
    if let Some(fields) = q.fields.filter(|f| !f.trim().is_empty())
        && let Value::Object(map) = &mut body
    {
        let wanted: Vec<&str> = fields.split(',').map(str::trim).collect();
        map.retain(|k, _| wanted.contains(&k.as_str()) || ["id", "uid", "etag", "revision"].contains(&k.as_str()));
    }
    Ok(tagged(&row, Some(&headers), StatusCode::OK, &body))
}

#[utoipa::path(put, path = "/api/v1/contacts/{id}", tag = "contacts", params(("id" = u64, Path)), request_body = ContactInput, responses(
    (status = 200, description = "The updated contact"), (status = 404, description = "No such contact"),
    (status = 412, description = "If-Match is stale: re-fetch (`details.expected_revision` is the current revision)"),
    (status = 409, description = "The card's UID belongs to another contact")))]
pub async fn update(
    State(state): State<AppState>,
    user: AuthUser,
    headers: HeaderMap,
    Path(id): Path<u64>,
    Json(input): Json<ContactInput>,
) -> Result<Response, ApiError> {
    let pre = if_match(&headers)?;
    let current = scope(&state, &user).get::<Contact>(id)?;
    let contact = build(Some(&current.body), input)?;
    let row = scope(&state, &user).write_async(move |tx| tx.put(id, pre, contact.clone())).await?;
    Ok(tagged(&row, None, StatusCode::OK, &view(&row, &[])))
}

#[utoipa::path(delete, path = "/api/v1/contacts/{id}", tag = "contacts", params(("id" = u64, Path)), responses(
    (status = 200, description = "Deleted (a tombstone is kept for sync; no undelete)"), (status = 404, description = "No such contact"),
    (status = 412, description = "If-Match is stale")))]
pub async fn delete(
    State(state): State<AppState>,
    user: AuthUser,
    headers: HeaderMap,
    Path(id): Path<u64>,
) -> Result<axum::Json<Value>, ApiError> {
    let pre = if_match(&headers)?;
    let scope = scope(&state, &user);
    let padded = format!("{id:020}");
    let files_of_contact = scope.find::<Attachment>(crate::crm::records::BY_CONTACT, &padded)?;
    scope.write_async(move |tx| delete_with_joins(tx, id, pre)).await?;
    let attachments = super::attachments::dir(&state, &user);
    for file in files_of_contact {
        let _ = std::fs::remove_file(attachments.join(file.to_string()));
    }
    Ok(axum::Json(json!({ "message": "Contact deleted" })))
}

/// Soft-deletes a contact and, in the same transaction, what hangs off it: its picture, its relationships,
/// notes, reminders, completions, life events, gifts, agenda items, attachments, household
/// memberships and reach-out suggestions go, and it leaves its shared activities.
fn delete_with_joins(
    tx: &mycorrhizal_engine::TxUser<'_, '_>,
    id: u64,
    pre: Precondition,
) -> mycorrhizal_engine::Result<()> {
    let picture = tx.get::<Contact>(id)?.body.photo;
    tx.delete::<Contact>(id, pre)?;
    if !picture.is_empty() {
        tx.delete_blob(&picture)?;
    }
    let (from, to) = crate::crm::records::contact_range(id);
    let padded = format!("{id:020}");
    let source = tx.find::<Relationship>(crate::crm::records::BY_SOURCE, &padded)?;
    let target = tx.find::<Relationship>(crate::crm::records::BY_TARGET, &padded)?;
    for rel in source.into_iter().chain(target) {
        tx.delete::<Relationship>(rel, Precondition::Any)?;
    }
    for note in tx.find_range::<Note>(crate::crm::records::BY_CONTACT, &from, &to)? {
        tx.delete::<Note>(note, Precondition::Any)?;
    }
    for reminder in tx.find_range::<Reminder>(crate::crm::records::BY_CONTACT, &from, &to)? {
        tx.delete::<Reminder>(reminder, Precondition::Any)?;
    }
    for completion in tx.find_range::<Completion>(crate::crm::records::BY_CONTACT, &from, &to)? {
        tx.delete::<Completion>(completion, Precondition::Any)?;
    }
    for event in tx.find_range::<LifeEvent>(crate::crm::records::BY_CONTACT, &from, &to)? {
        tx.delete::<LifeEvent>(event, Precondition::Any)?;
    }
    for gift in tx.find_range::<Gift>(crate::crm::records::BY_CONTACT, &from, &to)? {
        tx.delete::<Gift>(gift, Precondition::Any)?;
    }
    for item in tx.find_range::<AgendaItem>(crate::crm::records::BY_CONTACT, &from, &to)? {
        tx.delete::<AgendaItem>(item, Precondition::Any)?;
    }
    let padded = format!("{id:020}");
    for file in tx.find::<Attachment>(crate::crm::records::BY_CONTACT, &padded)? {
        tx.delete::<Attachment>(file, Precondition::Any)?;
    }
    for membership in tx.find::<HouseholdMember>(crate::crm::records::BY_CONTACT, &padded)? {
        tx.delete::<HouseholdMember>(membership, Precondition::Any)?;
    }
    for suggestion in tx.find::<ReachOutSuggestion>(crate::crm::records::BY_CONTACT, &padded)? {
        tx.delete::<ReachOutSuggestion>(suggestion, Precondition::Any)?;
    }
    for activity in tx.find_range::<Activity>(crate::crm::records::BY_CONTACT, &from, &to)? {
        tx.update::<Activity>(activity, Precondition::Any, |a| {
            a.contact_ids.retain(|c| *c != id);
            Ok(())
        })?;
    }
    Ok(())
}

async fn toggle(state: &AppState, user: &AuthUser, id: u64, change: fn(&mut Contact)) -> Result<Response, ApiError> {
    let row = scope(state, user)
        .write_async(move |tx| {
            tx.update::<Contact>(id, Precondition::Any, |c| {
                change(c);
                Ok(())
            })
        })
        .await?;
    Ok(tagged(&row, None, StatusCode::OK, &view(&row, &[])))
}

#[utoipa::path(post, path = "/api/v1/contacts/{id}/archive", tag = "contacts", params(("id" = u64, Path)), responses((status = 200, description = "The contact"), (status = 404, description = "No such contact")))]
pub async fn archive(State(state): State<AppState>, user: AuthUser, Path(id): Path<u64>) -> Result<Response, ApiError> {
    toggle(&state, &user, id, |c| c.archived = true).await
}

#[utoipa::path(post, path = "/api/v1/contacts/{id}/unarchive", tag = "contacts", params(("id" = u64, Path)), responses((status = 200, description = "The contact"), (status = 404, description = "No such contact")))]
pub async fn unarchive(
    State(state): State<AppState>,
    user: AuthUser,
    Path(id): Path<u64>,
) -> Result<Response, ApiError> {
    toggle(&state, &user, id, |c| c.archived = false).await
}

#[utoipa::path(post, path = "/api/v1/contacts/{id}/favorite", tag = "contacts", params(("id" = u64, Path)), responses((status = 200, description = "The contact"), (status = 404, description = "No such contact")))]
pub async fn favorite(
    State(state): State<AppState>,
    user: AuthUser,
    Path(id): Path<u64>,
) -> Result<Response, ApiError> {
    toggle(&state, &user, id, |c| c.favorite = true).await
}

#[utoipa::path(post, path = "/api/v1/contacts/{id}/unfavorite", tag = "contacts", params(("id" = u64, Path)), responses((status = 200, description = "The contact"), (status = 404, description = "No such contact")))]
pub async fn unfavorite(
    State(state): State<AppState>,
    user: AuthUser,
    Path(id): Path<u64>,
) -> Result<Response, ApiError> {
    toggle(&state, &user, id, |c| c.favorite = false).await
}

/// The circles in use by live contacts, sorted.
#[utoipa::path(get, path = "/api/v1/contacts/circles", tag = "contacts", responses((status = 200, description = "A JSON array of circle names")))]
pub async fn circles(State(state): State<AppState>, user: AuthUser) -> Result<axum::Json<Vec<String>>, ApiError> {
    let scope = scope(&state, &user);
    let names = state
        .blocking(move |_| {
            let entries = scope.view()?.index_entries::<Contact>()?;
            let mut names: Vec<String> =
                entries.into_iter().filter(|(i, _, _)| i == INDEX_CIRCLE).map(|(_, v, _)| v).collect();
            names.dedup();
            Ok::<_, ApiError>(names)
        })
        .await??;
    Ok(axum::Json(names))
}

/// Five random active contacts (fewer when there are fewer).
#[utoipa::path(get, path = "/api/v1/contacts/random", tag = "contacts", responses((status = 200, description = "`{contacts: [summary]}`")))]
pub async fn random(State(state): State<AppState>, user: AuthUser) -> Result<axum::Json<Value>, ApiError> {
    let scope = scope(&state, &user);
    let contacts = state.blocking(move |_| random_summaries(&scope.view()?, 5)).await??;
    Ok(axum::Json(json!({ "contacts": contacts })))
}

/// Up to `n` active contacts picked at random: each pick uniform over the active contacts not yet
/// picked. Ids are drawn at random between the user's lowest and highest contact id and kept when
/// they name an active contact (a few point reads, no walk); the user's ids have gaps (other users'
/// ids, deleted rows), so when draws keep missing, the rest are picked from the list of live ids.
pub fn random_summaries(view: &UserView, n: usize) -> Result<Vec<Value>, ApiError> {
    let archived = view.count_where::<Contact>(INDEX_ARCHIVED, "1")?;
    let active = view.count::<Contact>()?.saturating_sub(archived) as usize;
    let wanted = n.min(active);
    let mut picked: Vec<u64> = Vec::new();
    let mut out = Vec::new();
    if let Some((lo, hi)) = view.id_bounds::<Contact>()? {
        let span = (hi - lo).saturating_add(1);
        let mut draws = 0;
        while out.len() < wanted && draws < RANDOM_DRAWS_PER_PICK * wanted {
            draws += 1;
            let id = lo + random_u64()? % span;
            if picked.contains(&id) {
                continue;
            }
            match view.get::<Contact>(id) {
                Ok(row) if !row.body.archived => {
                    picked.push(id);
                    out.push(summary(&row));
                }
                Ok(_) | Err(mycorrhizal_engine::Error::NotFound) => {}
                Err(e) => return Err(e.into()),
            }
        }
    }
    if out.len() < wanted {
        let archived: std::collections::HashSet<u64> = view.find::<Contact>(INDEX_ARCHIVED, "1")?.into_iter().collect();
        let mut ids: Vec<u64> = view
            .find_range::<Contact>(UPDATED_INDEX, "", None)?
            .into_iter()
            .filter(|id| !archived.contains(id) && !picked.contains(id))
            .collect();
        while out.len() < n && !ids.is_empty() {
            let i = (random_u64()? % ids.len() as u64) as usize;
            out.push(summary(&view.get::<Contact>(ids.swap_remove(i))?));
        }
    }
    Ok(out)
}

/// Random draws per wanted contact before [`random_summaries`] falls back to the id list: with
/// ids at least a tenth dense, running out is vanishingly rare.
const RANDOM_DRAWS_PER_PICK: usize = 64;

fn random_u64() -> Result<u64, ApiError> {
    let mut r = [0u8; 8];
    getrandom::fill(&mut r).map_err(ApiError::internal)?;
    Ok(u64::from_le_bytes(r))
}

#[derive(Debug, Default, Deserialize, IntoParams)]
pub struct BirthdayQuery {
    /// How many days ahead to look (1 to 366). Default: the rest of this month and all of the next.
    pub days: Option<i32>,
}

/// Upcoming birthdays from today (server clock and zone), soonest first. A year-less birthday
/// recurs every year; 29 February falls on 1 March in other years; age only from full dates.
#[utoipa::path(get, path = "/api/v1/contacts/birthdays", tag = "contacts", params(BirthdayQuery), responses((status = 200, description = "`{birthdays: [{type, contact_id, name, birthday, date, days_until, age?}]}`")))]
pub async fn birthdays(
    State(state): State<AppState>,
    user: AuthUser,
    Query(q): Query<BirthdayQuery>,
) -> Result<axum::Json<Value>, ApiError> {
    let today = today(&state);
    let end = match q.days {
        Some(days) if (1..=366).contains(&days) => {
            today.checked_add(jiff::Span::new().days(days)).map_err(ApiError::internal)?
        }
        Some(_) => return Err(ApiError::invalid_input("days", "must be 1 to 366")),
        None => {
            let next_month =
                today.first_of_month().checked_add(jiff::Span::new().months(1)).map_err(ApiError::internal)?;
            next_month.last_of_month()
        }
    };
    let scope = scope(&state, &user);
    let list = state.blocking(move |_| upcoming_birthdays(&scope.view()?, today, end, usize::MAX)).await??;
    Ok(axum::Json(json!({ "birthdays": list })))
}

/// Active contacts' birthdays between `today` and `end`, soonest first, at most `limit` of them.
pub fn upcoming_birthdays(view: &UserView, today: Date, end: Date, limit: usize) -> Result<Vec<Value>, ApiError> {
    let mut found = Vec::new();
    // Walk only the month-day window of the `birthday_md` index ("MM-DD"), not every contact:
    // one range, two across the year end, everything for a window of a year or more, and always
    // "02-29" (celebrated on 1 March in other years; `next_yearly` decides).
    let md = |d: Date| format!("{:02}-{:02}", d.month(), d.day());
    let past = |d: Date| format!("{:02}-{:02}", d.month(), d.day() + 1);
    // The ranges after the first are in calendar order from today, so the first `limit` rows they
    // yield are the soonest; "02-29" is read whole (a sliver of any address book) because its
    // occurrence on 1 March does not follow its place in the index.
    let mut ranges = vec![("02-29".to_string(), "02-30".to_string())];
    if (end - today).get_days() >= 365 {
        ranges.push((String::new(), "~".into()));
    } else if md(end) >= md(today) && end.year() == today.year() {
        ranges.push((md(today), past(end)));
    } else {
        ranges.push((md(today), "~".into()));
        ranges.push((String::new(), past(end)));
    }
    let mut seen = std::collections::HashSet::new();
    let mut rows = Vec::new();
    let mut main = 0;
    for (i, (from, to)) in ranges.iter().enumerate() {
        let wanted = if i == 0 { usize::MAX } else { limit.saturating_sub(main) };
        if wanted == 0 {
            break;
        }
        let walk = Walk { index: INDEX_BIRTHDAY, from, to: Some(to), after: None, descending: false };
        let page = view.walk::<Contact>(walk, wanted, |r| !r.body.archived)?;
        if i > 0 {
            main += page.rows.len();
        }
        rows.extend(page.rows.into_iter().filter(|r| seen.insert(r.id)));
    }
    for row in rows {
        let Some(p) = mycorrhizal_codecs::dates::parse_rest_date(&row.body.flat.birthday) else { continue };
        let (Some(month), Some(day)) = (p.month, p.day) else { continue };
        let Some(next) = calendar::next_yearly(month as i8, day as i8, today) else { continue };
        if next > end {
            continue;
        }
        let days_until = (next - today).get_days();
        let mut item = json!({
            "type": "contact",
            "contact_id": row.id,
            "name": row.body.name(),
            "birthday": row.body.flat.birthday,
            "date": next.to_string(),
            "days_until": days_until,
        });
        if let Some(year) = p.year
            && let Ok(born) = Date::new(year as i16, month as i8, day as i8)
        {
            item["age"] = json!(calendar::age_on(born, next));
        }
        if let Some(url) = photo_url(&row) {
            item["photo_thumbnail"] = json!(format!("{url}?thumbnail=true"));
        }
        found.push((days_until, item));
    }
    found.sort_by_key(|(d, _)| *d);
    Ok(found.into_iter().take(limit).map(|(_, item)| item).collect())
}

/// The contact and everything about it in one call; every collection is an array.
#[utoipa::path(get, path = "/api/v1/contacts/{id}/detail", tag = "contacts", params(("id" = u64, Path)), responses(
    (status = 200, description = "`{contact, user, notes, activities, completions, reminders, relationship_edges, life_events, agenda, gifts, field_values, external_identities, external_activities, circles, tags}`"),
    (status = 404, description = "No such contact")))]
pub async fn detail(
    State(state): State<AppState>,
    user: AuthUser,
    Path(id): Path<u64>,
) -> Result<axum::Json<Value>, ApiError> {
    let scope = scope(&state, &user);
    let custom_fields = user.account.custom_fields.clone();
    let today_ = today(&state);
    let body = state
        .blocking(move |_| {
            let v = scope.view()?;
            let row = v.get::<Contact>(id)?;
            let related = projected_relations(&v, id)?;
            let notes = super::notes::of_contact(&v, id, 5)?;
            let activities = super::activities::of_contact(&v, id, 5)?;
            let completions = super::reminders::completions_of(&v, id, 5)?;
            let reminders = super::reminders::of_contact(&v, id)?;
            let edges = super::relationships::detail_edges(&v, id)?;
            let circles: Vec<Value> = row.body.circles.iter().map(|c| json!({ "name": c })).collect();
            let (from, to) = crate::crm::records::contact_range(id);
            let per_contact = |descending: bool| Walk {
                index: crate::crm::records::BY_CONTACT,
                from: &from,
                to: Some(&to),
                after: None,
                descending,
            };
            let today = today_;
            let life_events: Vec<Value> = v
                .walk::<LifeEvent>(per_contact(true), 5, |_| true)?
                .rows
                .iter()
                .map(|r| super::depth::life_event_view(&v, r, today))
                .collect();
            let gifts: Vec<Value> = v
                .walk::<Gift>(per_contact(true), 5, |_| true)?
                .rows
                .iter()
                .map(|r| super::depth::gift_view(&v, r))
                .collect();
            let agenda: Vec<Value> = v
                .walk::<AgendaItem>(per_contact(false), usize::MAX, |r| r.body.discussed_at.is_none())?
                .rows
                .iter()
                .map(|r| super::depth::agenda_view(&v, r))
                .collect();
            Ok::<_, ApiError>(json!({
                "contact": view(&row, &related),
                "user": { "custom_fields": custom_fields, "enabled_contact_fields": Value::Null },
                "notes": notes,
                "activities": activities,
                "completions": completions,
                "reminders": reminders,
                "relationship_edges": edges,
                "life_events": life_events,
                "agenda": agenda,
                "gifts": gifts,
                "field_values": [],
                "external_identities": [],
                "external_activities": [],
                "circles": circles,
                "tags": row.body.tags.iter().map(|t| json!({ "name": t })).collect::<Vec<_>>(),
            }))
        })
        .await??;
    Ok(axum::Json(body))
}

/// The ids a request names must all be this user's contacts.
pub fn require_contacts(view: &UserView, ids: &[u64]) -> Result<(), ApiError> {
    for id in ids {
        view.get::<Contact>(*id).map_err(|_| ApiError::NotFound)?;
    }
    Ok(())
}
