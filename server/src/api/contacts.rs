//! Contacts over HTTP: list, create, get (ETag, If-None-Match, field restriction), update
//! (If-Match), delete, the archive and favourite toggles, circles, random picks, upcoming
//! birthdays and the composite detail. Each handler extracts, calls one operation of
//! `crm::contact`, and maps the result.

use crate::http::extract::{Path, Query};
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use serde::Deserialize;
use serde_json::Value;
use utoipa::IntoParams;

use crate::auth::AuthUser;
use crate::crm::Message;
use crate::crm::contact::list::{ListParams, Sort};
use crate::crm::contact::ops::{ContactInput, Flag};
use crate::crm::contact::view::{BirthdayList, ContactCreated, ContactSummaries, ContactView};
use crate::crm::contact::{detail, list as listing, ops, pick};
use crate::error::ApiError;
use crate::http::conditional::{Tagged, if_match, tagged};
use crate::http::json::Json;
use crate::http::params;
use crate::state::AppState;

#[derive(Debug, Default, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
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
    #[param(pattern = "^(true|false)?$")]
    pub include_archived: Option<String>,
    /// `true` for archived contacts only.
    #[param(pattern = "^(true|false)?$")]
    pub archived: Option<String>,
    /// `true` for favourites only.
    #[param(pattern = "^(true|false)?$")]
    pub favorites: Option<String>,
    /// `true` for the contacts with an email, a phone number or a link only; the page then
    /// says how many others matched (`hidden_count`).
    #[param(pattern = "^(true|false)?$")]
    pub has_contact_info: Option<String>,
    /// `updated_at` (default, newest first) or `name` (A to Z).
    #[param(pattern = "^(updated_at|name)?$")]
    pub sort: Option<String>,
    /// `asc` or `desc` (default depends on `sort`).
    #[param(pattern = "^(asc|desc)?$")]
    pub order: Option<String>,
    /// Page size, default 25, at most 100.
    pub limit: Option<String>,
    /// `next_cursor` of the previous page.
    pub cursor: Option<String>,
    /// The change-feed mode of other servers of this API. Not served here (the value is read
    /// only to refuse it with `sort=name`, as the two do not combine: 400 naming `since`);
    /// sync clients use CardDAV's sync-collection instead.
    pub since: Option<String>,
}

impl ListQuery {
    fn params(self) -> Result<ListParams, ApiError> {
        if self.since.as_deref().is_some_and(|s| !s.is_empty()) && self.sort.as_deref() == Some("name") {
            return Err(ApiError::invalid_input("since", "cannot be combined with sort=name"));
        }
        Ok(ListParams {
            include_archived: params::flag(self.include_archived.as_deref(), "include_archived")?,
            archived_only: params::flag(self.archived.as_deref(), "archived")?,
            favorites: params::flag(self.favorites.as_deref(), "favorites")?,
            has_contact_info: params::flag(self.has_contact_info.as_deref(), "has_contact_info")?,
            sort: match self.sort.as_deref() {
                None | Some("") => None,
                Some("updated_at") => Some(Sort::Updated),
                Some("name") => Some(Sort::Name),
                Some(_) => return Err(ApiError::invalid_input("sort", "must be updated_at or name")),
            },
            descending: match self.order.as_deref() {
                None | Some("") => None,
                Some("asc") => Some(false),
                Some("desc") => Some(true),
                Some(_) => return Err(ApiError::invalid_input("order", "must be asc or desc")),
            },
            limit: params::limit(self.limit.as_deref()),
            search: self.search,
            circle: self.circle,
            tag: self.tag,
            cursor: self.cursor,
        })
    }
}

#[utoipa::path(get, path = "/api/v1/contacts", tag = "contacts", params(ListQuery), responses(
    (status = 200, description = "One page of contacts", body = crate::crm::contact::view::ContactPage),
    (status = 400, description = "A bad parameter, named (also `since` with `sort=name`)")))]
pub async fn list(
    State(state): State<AppState>,
    user: AuthUser,
    Query(q): Query<ListQuery>,
) -> Result<axum::Json<crate::crm::contact::view::ContactPage>, ApiError> {
    let params = q.params()?;
    let scope = state.scope(&user);
    Ok(axum::Json(state.blocking(move |_| listing::list(&scope, params)).await??))
}

#[utoipa::path(post, path = "/api/v1/contacts", tag = "contacts", request_body = ContactInput, responses(
    (status = 201, body = ContactCreated), (status = 400, description = "Invalid, with the field named"),
    (status = 409, description = "A contact with this card UID exists")))]
pub async fn create(
    State(state): State<AppState>,
    user: AuthUser,
    Json(input): Json<ContactInput>,
) -> Result<Tagged<ContactCreated>, ApiError> {
    let row = ops::create(&state.scope(&user), input).await?;
    let body = ContactCreated { message: "Contact created".into(), contact: ContactView::of(&row, &[]) };
    Ok(tagged(&row, None, StatusCode::CREATED, body))
}

#[derive(Debug, Default, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct GetQuery {
    /// Comma-separated top-level fields to return (`id`, `uid`, `etag` and `revision` always are).
    pub fields: Option<String>,
}

#[utoipa::path(get, path = "/api/v1/contacts/{id}", tag = "contacts", params(("id" = u64, Path), GetQuery), responses(
    (status = 200, description = "The contact (a `ContactView`), with `ETag`. With `fields`, only the listed top-level members and `id`, `uid`, `etag` and `revision`: a projection, so the document promises an object and nothing more", body = Object),
    (status = 304, description = "If-None-Match matched"), (status = 404, description = "No such contact")))]
pub async fn get(
    State(state): State<AppState>,
    user: AuthUser,
    headers: HeaderMap,
    Path(id): Path<u64>,
    Query(q): Query<GetQuery>,
) -> Result<Tagged<Value>, ApiError> {
    // The most frequent request of a client: a few rows by key, read here (`AppState::read_keyed`).
    let (owner, scope) = (user.id.0, state.scope(&user));
    let (row, mut body) = state.read_keyed(|engine| -> Result<_, ApiError> {
        let (row, view) = detail::get(&scope.view()?, id)?;
        let mut body = serde_json::to_value(view).map_err(ApiError::internal)?;
        // A contact a subscription brought in says which (the next sync overwrites its card).
        if let Some(origin) = crate::sync::origin_of(engine, owner, "contact", id)?
            && let Value::Object(map) = &mut body
        {
            map.insert("subscription".into(), serde_json::to_value(origin).map_err(ApiError::internal)?);
        }
        Ok((row, body))
    })?;
    if let Some(fields) = q.fields.filter(|f| !f.trim().is_empty())
        && let Value::Object(map) = &mut body
    {
        let wanted: Vec<&str> = fields.split(',').map(str::trim).collect();
        map.retain(|k, _| wanted.contains(&k.as_str()) || ["id", "uid", "etag", "revision"].contains(&k.as_str()));
    }
    Ok(tagged(&row, Some(&headers), StatusCode::OK, body))
}

#[utoipa::path(put, path = "/api/v1/contacts/{id}", tag = "contacts", params(("id" = u64, Path)), request_body = ContactInput, responses(
    (status = 200, description = "The updated contact", body = ContactView), (status = 404, description = "No such contact"),
    (status = 412, description = "If-Match is stale: re-fetch (`details.expected_revision` is the current revision)"),
    (status = 409, description = "The card's UID belongs to another contact")))]
pub async fn update(
    State(state): State<AppState>,
    user: AuthUser,
    headers: HeaderMap,
    Path(id): Path<u64>,
    Json(input): Json<ContactInput>,
) -> Result<Tagged<ContactView>, ApiError> {
    let pre = if_match(&headers)?;
    let row = ops::update(&state.scope(&user), id, pre, input).await?;
    Ok(tagged(&row, None, StatusCode::OK, ContactView::of(&row, &[])))
}

#[utoipa::path(delete, path = "/api/v1/contacts/{id}", tag = "contacts", params(("id" = u64, Path)), responses(
    (status = 200, body = Message, description = "Deleted (a tombstone is kept for sync; no undelete)"), (status = 404, description = "No such contact"),
    (status = 412, description = "If-Match is stale")))]
pub async fn delete(
    State(state): State<AppState>,
    user: AuthUser,
    headers: HeaderMap,
    Path(id): Path<u64>,
) -> Result<axum::Json<Message>, ApiError> {
    let pre = if_match(&headers)?;
    ops::delete(&state.scope(&user), id, pre).await?;
    Ok(axum::Json(Message::new("Contact deleted")))
}

async fn set_flag(
    state: &AppState,
    user: &AuthUser,
    id: u64,
    flag: Flag,
    on: bool,
) -> Result<Tagged<ContactView>, ApiError> {
    let row = ops::set_flag(&state.scope(user), id, flag, on).await?;
    Ok(tagged(&row, None, StatusCode::OK, ContactView::of(&row, &[])))
}

#[utoipa::path(post, path = "/api/v1/contacts/{id}/archive", tag = "contacts", params(("id" = u64, Path)), responses((status = 200, description = "The contact", body = ContactView), (status = 404, description = "No such contact")))]
pub async fn archive(
    State(state): State<AppState>,
    user: AuthUser,
    Path(id): Path<u64>,
) -> Result<Tagged<ContactView>, ApiError> {
    set_flag(&state, &user, id, Flag::Archived, true).await
}

#[utoipa::path(post, path = "/api/v1/contacts/{id}/unarchive", tag = "contacts", params(("id" = u64, Path)), responses((status = 200, description = "The contact", body = ContactView), (status = 404, description = "No such contact")))]
pub async fn unarchive(
    State(state): State<AppState>,
    user: AuthUser,
    Path(id): Path<u64>,
) -> Result<Tagged<ContactView>, ApiError> {
    set_flag(&state, &user, id, Flag::Archived, false).await
}

#[utoipa::path(post, path = "/api/v1/contacts/{id}/favorite", tag = "contacts", params(("id" = u64, Path)), responses((status = 200, description = "The contact", body = ContactView), (status = 404, description = "No such contact")))]
pub async fn favorite(
    State(state): State<AppState>,
    user: AuthUser,
    Path(id): Path<u64>,
) -> Result<Tagged<ContactView>, ApiError> {
    set_flag(&state, &user, id, Flag::Favorite, true).await
}

#[utoipa::path(post, path = "/api/v1/contacts/{id}/unfavorite", tag = "contacts", params(("id" = u64, Path)), responses((status = 200, description = "The contact", body = ContactView), (status = 404, description = "No such contact")))]
pub async fn unfavorite(
    State(state): State<AppState>,
    user: AuthUser,
    Path(id): Path<u64>,
) -> Result<Tagged<ContactView>, ApiError> {
    set_flag(&state, &user, id, Flag::Favorite, false).await
}

/// The circles in use by live contacts, sorted.
#[utoipa::path(get, path = "/api/v1/contacts/circles", tag = "contacts", responses((status = 200, description = "A JSON array of circle names")))]
pub async fn circles(State(state): State<AppState>, user: AuthUser) -> Result<axum::Json<Vec<String>>, ApiError> {
    Ok(axum::Json(state.read(&user, detail::circles).await?))
}

/// Five random active contacts (fewer when there are fewer).
#[utoipa::path(get, path = "/api/v1/contacts/random", tag = "contacts", responses((status = 200, body = ContactSummaries)))]
pub async fn random(State(state): State<AppState>, user: AuthUser) -> Result<axum::Json<ContactSummaries>, ApiError> {
    let contacts = state.read(&user, |v| pick::random_summaries(v, 5)).await?;
    Ok(axum::Json(ContactSummaries { contacts }))
}

#[derive(Debug, Default, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct BirthdayQuery {
    /// How many days ahead to look (1 to 366). Default: the rest of this month and all of the next.
    #[param(minimum = 1, maximum = 366)]
    pub days: Option<i32>,
}

/// Upcoming birthdays from today (server clock and zone), soonest first. A year-less birthday
/// recurs every year; 29 February falls on 1 March in other years; age only from full dates.
#[utoipa::path(get, path = "/api/v1/contacts/birthdays", tag = "contacts", params(BirthdayQuery), responses((status = 200, body = BirthdayList, description = "`{birthdays: [{type, contact_id, name, birthday, date, days_until, age?}]}`")))]
pub async fn birthdays(
    State(state): State<AppState>,
    user: AuthUser,
    Query(q): Query<BirthdayQuery>,
) -> Result<axum::Json<BirthdayList>, ApiError> {
    let today = state.today();
    let end = pick::birthday_window(today, q.days)?;
    let birthdays = state.read(&user, move |v| pick::upcoming_birthdays(v, today, end, usize::MAX)).await?;
    Ok(axum::Json(BirthdayList { birthdays }))
}

/// What to know before meeting them: last activity, newest notes, rhythm, open agenda,
/// relationships, life events, reminders due within 30 days and dates within a year.
#[utoipa::path(get, path = "/api/v1/contacts/{id}/briefing", tag = "contacts", params(("id" = u64, Path)), responses(
    (status = 200, description = "Every list an array, never null", body = crate::crm::contact::briefing::Briefing),
    (status = 404, description = "No such contact")))]
pub async fn briefing(
    State(state): State<AppState>,
    user: AuthUser,
    Path(id): Path<u64>,
) -> Result<axum::Json<crate::crm::contact::briefing::Briefing>, ApiError> {
    let (today, now) = (state.today(), state.engine.clock().now());
    Ok(axum::Json(state.read(&user, move |v| crate::crm::contact::briefing::briefing(v, id, today, now)).await?))
}

/// The contact and everything about it in one call; every collection is an array.
#[utoipa::path(get, path = "/api/v1/contacts/{id}/detail", tag = "contacts", params(("id" = u64, Path)), responses(
    (status = 200, description = "The contact and everything about it", body = crate::crm::contact::detail::ContactDetail),
    (status = 404, description = "No such contact")))]
pub async fn detail(
    State(state): State<AppState>,
    user: AuthUser,
    Path(id): Path<u64>,
) -> Result<axum::Json<crate::crm::contact::detail::ContactDetail>, ApiError> {
    let custom_fields = user.account.custom_fields.clone();
    let today = state.today();
    let mut body = state.read(&user, move |v| detail::detail(v, id, today, custom_fields)).await?;
    let (i, scope, owner) = (state.integrations.clone(), state.scope(&user), user.id.0);
    body.immich = state
        .blocking(move |_| crate::integrations::immich::detail(&i, &scope, owner, id))
        .await?
        .map_err(ApiError::from)?;
    Ok(axum::Json(body))
}
