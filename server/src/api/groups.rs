//! Circles and tags over HTTP, each handler one call of `crm::groups::ops`. A path's `{id}` is
//! the group's id or, as the routes always took, its name (an id wins when a name looks like
//! one). Members are named by the contact's id or vCard UID. Lists are A to Z; without `limit`
//! they answer every group (a person's circles are few), with it they page.

use axum::extract::State;
use axum::http::StatusCode;
use serde::{Deserialize, Serialize};
use utoipa::{IntoParams, ToSchema};

use crate::auth::AuthUser;
use crate::crm::Message;
use crate::crm::groups::ops::{self, GroupFilter, GroupPage, GroupView, MemberView, Target};
use crate::crm::groups::{Group, NAME_MAX};
use crate::error::ApiError;
use crate::http::extract::{Path, Query};
use crate::http::json::Json;
use crate::http::params;
use crate::state::AppState;

#[derive(Debug, Default, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct ListQuery {
    /// `true` adds the memberships of the groups on this page (`members` for circles,
    /// `contacts` for tags).
    #[param(pattern = "^(true|false)?$")]
    pub include_members: Option<String>,
    /// The tags' name for `include_members`.
    #[param(pattern = "^(true|false)?$")]
    pub include_contacts: Option<String>,
    /// `next_cursor` of the previous page.
    pub cursor: Option<String>,
    /// Page size (above 100 is 100); absent: every group.
    #[param(value_type = Option<u32>, minimum = 1)]
    pub limit: Option<String>,
}

impl ListQuery {
    fn filter(&self) -> Result<GroupFilter, ApiError> {
        let members = params::flag(self.include_members.as_deref(), "include_members")?;
        let contacts = params::flag(self.include_contacts.as_deref(), "include_contacts")?;
        Ok(GroupFilter {
            include_members: members || contacts,
            cursor: self.cursor.clone(),
            limit: self.limit.as_deref().map(|raw| params::page_limit(Some(raw))).transpose()?,
        })
    }
}

/// `{circles, total, next_cursor, limit}`, and `members` when asked.
#[derive(Debug, Serialize, ToSchema)]
pub struct CirclePage {
    pub circles: Vec<GroupView>,
    pub total: u64,
    /// `""` on the last page.
    pub next_cursor: String,
    /// How a client keeps this collection current.
    pub sync: crate::crm::cursor::SyncInfo,
    pub limit: usize,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub members: Option<Vec<MemberView>>,
}

/// `{tags, total, next_cursor, limit}`, and `contacts` (the taggings) when asked.
#[derive(Debug, Serialize, ToSchema)]
pub struct TagPage {
    pub tags: Vec<GroupView>,
    pub total: u64,
    pub next_cursor: String,
    /// How a client keeps this collection current.
    pub sync: crate::crm::cursor::SyncInfo,
    pub limit: usize,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub contacts: Option<Vec<MemberView>>,
}

/// `{circle, members}`.
#[derive(Debug, Serialize, ToSchema)]
pub struct CircleDetail {
    pub circle: GroupView,
    pub members: Vec<MemberView>,
}

/// `{tag, contacts}`.
#[derive(Debug, Serialize, ToSchema)]
pub struct TagDetail {
    pub tag: GroupView,
    pub contacts: Vec<MemberView>,
}

/// `{message, circle}`.
#[derive(Debug, Serialize, ToSchema)]
pub struct CircleCreated {
    pub message: String,
    pub circle: GroupView,
}

/// `{message, tag}`.
#[derive(Debug, Serialize, ToSchema)]
pub struct TagCreated {
    pub message: String,
    pub tag: GroupView,
}

/// The group after a rename, with `message` and `contacts_updated` (how many contacts carried it).
#[derive(Debug, Serialize, ToSchema)]
pub struct GroupChanged {
    #[serde(flatten)]
    pub group: GroupView,
    pub message: String,
    pub contacts_updated: u64,
}

/// `{message, contacts_updated}`: a group deleted and removed from every contact.
#[derive(Debug, Serialize, ToSchema)]
pub struct GroupRemoved {
    pub message: String,
    pub contacts_updated: u64,
}

/// `{message, member}`.
#[derive(Debug, Serialize, ToSchema)]
pub struct MemberAdded {
    pub message: String,
    pub member: MemberView,
}

/// `{message, tagging}`.
#[derive(Debug, Serialize, ToSchema)]
pub struct TaggingAdded {
    pub message: String,
    pub tagging: MemberView,
}

#[derive(Debug, Deserialize, ToSchema)]
pub struct NameInput {
    /// 1 to 200 characters.
    #[serde(default)]
    #[schema(value_type = crate::crm::schema::GroupName)]
    pub name: String,
}

/// A circle member: the contact's vCard UID, or its id.
#[derive(Debug, Deserialize, ToSchema)]
pub struct CircleMemberInput {
    pub member_vcard_uid: Option<String>,
    #[schema(maximum = 9223372036854775807_u64)]
    pub contact_id: Option<u64>,
}

/// A tagged contact: its vCard UID, or its id.
#[derive(Debug, Deserialize, ToSchema)]
pub struct ContactTagInput {
    pub contact_vcard_uid: Option<String>,
    #[schema(maximum = 9223372036854775807_u64)]
    pub contact_id: Option<u64>,
}

fn member(uid: Option<String>, id: Option<u64>) -> String {
    id.map(|id| id.to_string()).or(uid).unwrap_or_default()
}

async fn page(state: &AppState, user: &AuthUser, group: Group, q: &ListQuery) -> Result<GroupPage, ApiError> {
    Ok(ops::list_ensured(&state.scope(user), group, q.filter()?).await?)
}

async fn renamed(
    state: &AppState,
    user: &AuthUser,
    group: Group,
    id: String,
    name: String,
) -> Result<GroupChanged, ApiError> {
    let (group, contacts_updated) = ops::rename(&state.scope(user), group, Target::IdOrName(id), &name).await?;
    Ok(GroupChanged { group, message: "Renamed on every contact".into(), contacts_updated })
}

async fn removed(state: &AppState, user: &AuthUser, group: Group, id: String) -> Result<GroupRemoved, ApiError> {
    let contacts_updated = ops::delete(&state.scope(user), group, Target::IdOrName(id)).await?;
    Ok(GroupRemoved { message: "Deleted and removed from every contact".into(), contacts_updated })
}

const ID: &str = "The group's id, or its name";
const NAME: &str = "Invalid name (1 to 200 characters), named";
const _: () = assert!(NAME_MAX == 200, "NAME names the limit");

// ---- circles -----------------------------------------------------------------------------

#[utoipa::path(get, path = "/api/v1/circles", tag = "contacts", params(ListQuery), responses(
    (status = 200, body = CirclePage), (status = 400, description = "Bad cursor or flag, named")))]
pub async fn circles(
    State(state): State<AppState>,
    user: AuthUser,
    Query(q): Query<ListQuery>,
) -> Result<axum::Json<CirclePage>, ApiError> {
    let p = page(&state, &user, Group::Circle, &q).await?;
    Ok(axum::Json(CirclePage {
        circles: p.groups,
        total: p.total,
        next_cursor: p.next_cursor,
        sync: p.sync,
        limit: p.limit,
        members: p.members,
    }))
}

#[utoipa::path(post, path = "/api/v1/circles", tag = "contacts", request_body = NameInput, responses(
    (status = 201, body = CircleCreated), (status = 400, description = NAME),
    (status = 409, description = "`ALREADY_EXISTS`: a circle of that name exists")))]
pub async fn create_circle(
    State(state): State<AppState>,
    user: AuthUser,
    Json(input): Json<NameInput>,
) -> Result<(StatusCode, axum::Json<CircleCreated>), ApiError> {
    let circle = ops::create(&state.scope(&user), Group::Circle, &input.name).await?;
    Ok((StatusCode::CREATED, axum::Json(CircleCreated { message: "Circle created".into(), circle })))
}

#[utoipa::path(get, path = "/api/v1/circles/{id}", tag = "contacts", params(("id" = String, Path, description = ID)),
    responses((status = 200, body = CircleDetail), (status = 404, description = "No such circle")))]
pub async fn circle(
    State(state): State<AppState>,
    user: AuthUser,
    Path(id): Path<String>,
) -> Result<axum::Json<CircleDetail>, ApiError> {
    let (circle, members) = ops::get(&state.scope(&user), Group::Circle, Target::IdOrName(id)).await?;
    Ok(axum::Json(CircleDetail { circle, members }))
}

#[utoipa::path(put, path = "/api/v1/circles/{id}", tag = "contacts", params(("id" = String, Path, description = ID)),
    request_body = NameInput, responses((status = 200, body = GroupChanged), (status = 400, description = NAME),
    (status = 404, description = "No such circle"), (status = 409, description = "`ALREADY_EXISTS`: another circle has that name")))]
pub async fn rename_circle(
    State(state): State<AppState>,
    user: AuthUser,
    Path(id): Path<String>,
    Json(body): Json<NameInput>,
) -> Result<axum::Json<GroupChanged>, ApiError> {
    Ok(axum::Json(renamed(&state, &user, Group::Circle, id, body.name).await?))
}

#[utoipa::path(delete, path = "/api/v1/circles/{id}", tag = "contacts", params(("id" = String, Path, description = ID)),
    responses((status = 200, body = GroupRemoved), (status = 404, description = "No such circle")))]
pub async fn delete_circle(
    State(state): State<AppState>,
    user: AuthUser,
    Path(id): Path<String>,
) -> Result<axum::Json<GroupRemoved>, ApiError> {
    Ok(axum::Json(removed(&state, &user, Group::Circle, id).await?))
}

#[utoipa::path(post, path = "/api/v1/circles/{id}/members", tag = "contacts", params(("id" = String, Path, description = ID)),
    request_body = CircleMemberInput, responses((status = 201, body = MemberAdded), (status = 400, description = "No contact named"),
    (status = 404, description = "No such circle or contact"), (status = 409, description = "`ALREADY_EXISTS`: already a member")))]
pub async fn add_circle_member(
    State(state): State<AppState>,
    user: AuthUser,
    Path(id): Path<String>,
    Json(input): Json<CircleMemberInput>,
) -> Result<(StatusCode, axum::Json<MemberAdded>), ApiError> {
    let who = member(input.member_vcard_uid, input.contact_id);
    let member = ops::add_member(&state.scope(&user), Group::Circle, Target::IdOrName(id), who).await?;
    Ok((StatusCode::CREATED, axum::Json(MemberAdded { message: "Member added".into(), member })))
}

#[utoipa::path(delete, path = "/api/v1/circles/{id}/members/{member}", tag = "contacts",
    params(("id" = String, Path, description = ID), ("member" = String, Path, description = "The contact's id or vCard UID")),
    responses((status = 200, body = Message), (status = 404, description = "No such circle, contact or membership")))]
pub async fn remove_circle_member(
    State(state): State<AppState>,
    user: AuthUser,
    Path((id, who)): Path<(String, String)>,
) -> Result<axum::Json<Message>, ApiError> {
    ops::remove_member(&state.scope(&user), Group::Circle, Target::IdOrName(id), who).await?;
    Ok(axum::Json(Message::new("Member removed")))
}

// ---- tags --------------------------------------------------------------------------------

#[utoipa::path(get, path = "/api/v1/tags", tag = "contacts", params(ListQuery), responses(
    (status = 200, body = TagPage), (status = 400, description = "Bad cursor or flag, named")))]
pub async fn tags(
    State(state): State<AppState>,
    user: AuthUser,
    Query(q): Query<ListQuery>,
) -> Result<axum::Json<TagPage>, ApiError> {
    let p = page(&state, &user, Group::Tag, &q).await?;
    Ok(axum::Json(TagPage {
        tags: p.groups,
        total: p.total,
        next_cursor: p.next_cursor,
        sync: p.sync,
        limit: p.limit,
        contacts: p.members,
    }))
}

#[utoipa::path(post, path = "/api/v1/tags", tag = "contacts", request_body = NameInput, responses(
    (status = 201, body = TagCreated), (status = 400, description = NAME),
    (status = 409, description = "`ALREADY_EXISTS`: a tag of that name exists")))]
pub async fn create_tag(
    State(state): State<AppState>,
    user: AuthUser,
    Json(input): Json<NameInput>,
) -> Result<(StatusCode, axum::Json<TagCreated>), ApiError> {
    let tag = ops::create(&state.scope(&user), Group::Tag, &input.name).await?;
    Ok((StatusCode::CREATED, axum::Json(TagCreated { message: "Tag created".into(), tag })))
}

#[utoipa::path(get, path = "/api/v1/tags/{id}", tag = "contacts", params(("id" = String, Path, description = ID)),
    responses((status = 200, body = TagDetail), (status = 404, description = "No such tag")))]
pub async fn tag(
    State(state): State<AppState>,
    user: AuthUser,
    Path(id): Path<String>,
) -> Result<axum::Json<TagDetail>, ApiError> {
    let (tag, contacts) = ops::get(&state.scope(&user), Group::Tag, Target::IdOrName(id)).await?;
    Ok(axum::Json(TagDetail { tag, contacts }))
}

#[utoipa::path(put, path = "/api/v1/tags/{id}", tag = "contacts", params(("id" = String, Path, description = ID)),
    request_body = NameInput, responses((status = 200, body = GroupChanged), (status = 400, description = NAME),
    (status = 404, description = "No such tag"), (status = 409, description = "`ALREADY_EXISTS`: another tag has that name")))]
pub async fn rename_tag(
    State(state): State<AppState>,
    user: AuthUser,
    Path(id): Path<String>,
    Json(body): Json<NameInput>,
) -> Result<axum::Json<GroupChanged>, ApiError> {
    Ok(axum::Json(renamed(&state, &user, Group::Tag, id, body.name).await?))
}

#[utoipa::path(delete, path = "/api/v1/tags/{id}", tag = "contacts", params(("id" = String, Path, description = ID)),
    responses((status = 200, body = GroupRemoved), (status = 404, description = "No such tag")))]
pub async fn delete_tag(
    State(state): State<AppState>,
    user: AuthUser,
    Path(id): Path<String>,
) -> Result<axum::Json<GroupRemoved>, ApiError> {
    Ok(axum::Json(removed(&state, &user, Group::Tag, id).await?))
}

#[utoipa::path(post, path = "/api/v1/tags/{id}/contacts", tag = "contacts", params(("id" = String, Path, description = ID)),
    request_body = ContactTagInput, responses((status = 201, body = TaggingAdded), (status = 400, description = "No contact named"),
    (status = 404, description = "No such tag or contact"), (status = 409, description = "`ALREADY_EXISTS`: already tagged")))]
pub async fn add_tagging(
    State(state): State<AppState>,
    user: AuthUser,
    Path(id): Path<String>,
    Json(input): Json<ContactTagInput>,
) -> Result<(StatusCode, axum::Json<TaggingAdded>), ApiError> {
    let who = member(input.contact_vcard_uid, input.contact_id);
    let tagging = ops::add_member(&state.scope(&user), Group::Tag, Target::IdOrName(id), who).await?;
    Ok((StatusCode::CREATED, axum::Json(TaggingAdded { message: "Contact tagged".into(), tagging })))
}

#[utoipa::path(delete, path = "/api/v1/tags/{id}/contacts/{member}", tag = "contacts",
    params(("id" = String, Path, description = ID), ("member" = String, Path, description = "The contact's id or vCard UID")),
    responses((status = 200, body = Message), (status = 404, description = "No such tag, contact or tagging")))]
pub async fn remove_tagging(
    State(state): State<AppState>,
    user: AuthUser,
    Path((id, who)): Path<(String, String)>,
) -> Result<axum::Json<Message>, ApiError> {
    ops::remove_member(&state.scope(&user), Group::Tag, Target::IdOrName(id), who).await?;
    Ok(axum::Json(Message::new("Tagging removed")))
}
