//! Subscriptions to remote address books (`/contact-subscriptions`) and calendars (`/calendars`)
//! over HTTP, at the existing clients' paths: each handler extracts, calls one operation of
//! `sync::ops` (or the sync job for "sync now"), and maps the result. The two resources differ
//! only in their source and their list's member name.

use axum::extract::State;
use axum::http::StatusCode;
use serde::Serialize;
use utoipa::ToSchema;

use crate::auth::AuthUser;
use crate::error::ApiError;
use crate::http::extract::Path;
use crate::http::json::Json;
use crate::state::AppState;
use crate::sync::ops::{self, Collections, DiscoverInput, SubscriptionInput, SubscriptionView, TestResult};
use crate::sync::run::Attempt;
use crate::sync::{Counts, Source};

#[derive(Debug, Serialize, ToSchema)]
pub struct ContactSubscriptionList {
    pub contact_subscriptions: Vec<SubscriptionView>,
}

#[derive(Debug, Serialize, ToSchema)]
pub struct CalendarList {
    pub calendars: Vec<SubscriptionView>,
}

/// What a sync did.
#[derive(Debug, Serialize, ToSchema)]
pub struct SyncResult {
    pub message: String,
    #[serde(flatten)]
    pub counts: Counts,
    /// `duration_ms` and `remote_ms` (the part spent waiting on the remote server).
    #[serde(flatten)]
    pub timing: crate::sync::run::Timing,
}

async fn list(state: &AppState, user: &AuthUser, source: Source) -> Result<Vec<SubscriptionView>, ApiError> {
    let (syncer, user) = (state.sync.clone(), user.id.0);
    Ok(state.blocking(move |_| ops::list(&syncer, user, source)).await??)
}

async fn create(
    state: &AppState,
    user: &AuthUser,
    source: Source,
    input: SubscriptionInput,
) -> Result<(StatusCode, axum::Json<SubscriptionView>), ApiError> {
    let created = ops::create(&state.sync, user.id.0, source, input).await?;
    // The first sync starts now (when it is switched on); the answer does not wait for it.
    if created.sync_enabled {
        let (state, id) = (state.clone(), created.id);
        tokio::spawn(async move {
            crate::jobs::sync_now(&state, id, source, mycorrhizal_engine::system::Trigger::Manual).await;
        });
    }
    Ok((StatusCode::CREATED, axum::Json(created)))
}

async fn get(
    state: &AppState,
    user: &AuthUser,
    source: Source,
    id: u64,
) -> Result<axum::Json<SubscriptionView>, ApiError> {
    let (syncer, user) = (state.sync.clone(), user.id.0);
    Ok(axum::Json(state.blocking(move |_| ops::get(&syncer, user, source, id)).await??))
}

async fn sync(state: &AppState, user: &AuthUser, source: Source, id: u64) -> Result<axum::Json<SyncResult>, ApiError> {
    // Ownership first: another user's id is 404 before anything runs.
    let _owned = get(state, user, source, id).await?;
    let what = match source {
        Source::AddressBook => "Contact",
        Source::Calendar => "Calendar",
    };
    match crate::jobs::sync_now(state, id, source, mycorrhizal_engine::system::Trigger::Manual).await {
        Attempt::Synced(counts, timing) => {
            Ok(axum::Json(SyncResult { message: format!("{what} sync completed"), counts, timing }))
        }
        Attempt::Failed(failure) => Err(ApiError::External(format!("{what} sync failed: {}", failure.message))),
        // One is running (its first sync, just after it was made): its outcome is the answer.
        Attempt::Busy => {
            let done =
                ops::after_running(&state.sync, user.id.0, source, id, std::time::Duration::from_secs(120)).await?;
            match done.last_sync_status {
                "success" if done.status != "syncing" => Ok(axum::Json(SyncResult {
                    message: format!("{what} sync completed"),
                    counts: done.last_counts,
                    timing: crate::sync::run::Timing::default(),
                })),
                "error" => Err(ApiError::External(format!("{what} sync failed: {}", done.last_sync_error))),
                _ => Err(ApiError::Conflict("A sync of this subscription is running".into())),
            }
        }
        Attempt::Gone => Err(ApiError::NotFound),
    }
}

macro_rules! resource {
    ($source:expr, $tag:literal, $base:literal, $item:literal, $list_ty:ident, $list_field:ident,
     $list:ident, $create:ident, $get:ident, $update:ident, $patch:ident, $delete:ident, $sync:ident, $test:ident, $discover:ident) => {
        #[utoipa::path(get, path = $base, tag = $tag, responses((status = 200, description = "Your subscriptions, oldest first", body = $list_ty)))]
        pub async fn $list(State(state): State<AppState>, user: AuthUser) -> Result<axum::Json<$list_ty>, ApiError> {
            Ok(axum::Json($list_ty { $list_field: list(&state, &user, $source).await? }))
        }

        #[utoipa::path(post, path = $base, tag = $tag, request_body = SubscriptionInput, responses(
            (status = 201, description = "Created after its server was reached and the collection found; its first sync starts at once", body = SubscriptionView),
            (status = 400, description = "Invalid value, a server that cannot be reached or refuses the credentials, or an address naming several collections; field named"),
            (status = 409, description = "You have the most subscriptions of this kind allowed (20)")))]
        pub async fn $create(State(state): State<AppState>, user: AuthUser, Json(input): Json<SubscriptionInput>) -> Result<(StatusCode, axum::Json<SubscriptionView>), ApiError> {
            create(&state, &user, $source, input).await
        }

        #[utoipa::path(get, path = concat!($base, "/{id}"), tag = $tag, params(("id" = u64, Path)), responses((status = 200, body = SubscriptionView), (status = 404, description = concat!("No such ", $item, " of yours"))))]
        pub async fn $get(State(state): State<AppState>, user: AuthUser, Path(id): Path<u64>) -> Result<axum::Json<SubscriptionView>, ApiError> {
            get(&state, &user, $source, id).await
        }

        #[utoipa::path(put, path = concat!($base, "/{id}"), tag = $tag, params(("id" = u64, Path)), request_body = SubscriptionInput, responses(
            (status = 200, description = "Changed; a stopped sync is cleared and due at once", body = SubscriptionView),
            (status = 400, description = "Invalid value; field named"), (status = 404, description = concat!("No such ", $item, " of yours"))))]
        pub async fn $update(State(state): State<AppState>, user: AuthUser, Path(id): Path<u64>, Json(input): Json<SubscriptionInput>) -> Result<axum::Json<SubscriptionView>, ApiError> {
            Ok(axum::Json(ops::update(&state.sync, user.id.0, $source, id, input).await?))
        }

        #[utoipa::path(patch, path = concat!($base, "/{id}"), tag = $tag, params(("id" = u64, Path)), request_body = SubscriptionInput, responses(
            (status = 200, description = "Changed (as PUT: fields left out keep their value)", body = SubscriptionView),
            (status = 400, description = "Invalid value; field named"), (status = 404, description = concat!("No such ", $item, " of yours"))))]
        pub async fn $patch(State(state): State<AppState>, user: AuthUser, Path(id): Path<u64>, Json(input): Json<SubscriptionInput>) -> Result<axum::Json<SubscriptionView>, ApiError> {
            Ok(axum::Json(ops::update(&state.sync, user.id.0, $source, id, input).await?))
        }

        #[utoipa::path(delete, path = concat!($base, "/{id}"), tag = $tag, params(("id" = u64, Path)), responses(
            (status = 200, body = crate::crm::Message, description = "Deleted; what it brought in stays, as your own records"), (status = 404, description = concat!("No such ", $item, " of yours"))))]
        pub async fn $delete(State(state): State<AppState>, user: AuthUser, Path(id): Path<u64>) -> Result<axum::Json<crate::crm::Message>, ApiError> {
            ops::delete(&state.sync, user.id.0, $source, id).await?;
            Ok(axum::Json(crate::crm::Message::new(concat!($item, " deleted"))))
        }

        #[utoipa::path(post, path = concat!($base, "/{id}/sync"), tag = $tag, params(("id" = u64, Path)), responses(
            (status = 200, description = "Synced now: what it did", body = SyncResult),
            (status = 404, description = concat!("No such ", $item, " of yours")),
            (status = 409, description = "A sync of it was still running after two minutes"),
            (status = 503, description = "The sync failed (EXTERNAL_SERVICE_ERROR): the remote refused, is gone or did not answer; the subscription's state says which")))]
        pub async fn $sync(State(state): State<AppState>, user: AuthUser, Path(id): Path<u64>) -> Result<axum::Json<SyncResult>, ApiError> {
            sync(&state, &user, $source, id).await
        }

        #[utoipa::path(post, path = concat!($base, "/{id}/test"), tag = $tag, params(("id" = u64, Path)), responses(
            (status = 200, description = "Whether its server answers, takes the credentials and still has the collection (nothing is synced)", body = TestResult),
            (status = 404, description = concat!("No such ", $item, " of yours"))))]
        pub async fn $test(State(state): State<AppState>, user: AuthUser, Path(id): Path<u64>) -> Result<axum::Json<TestResult>, ApiError> {
            Ok(axum::Json(ops::test(&state.sync, user.id.0, $source, id).await?))
        }

        #[utoipa::path(post, path = concat!($base, "/discover"), tag = $tag, request_body = DiscoverInput, responses(
            (status = 200, description = "The collections found from a server root, a principal or a collection (RFC 6764 well-known address, current-user-principal, home sets)", body = Collections),
            (status = 400, description = "The address is refused, cannot be reached or refuses the credentials; field named")))]
        pub async fn $discover(State(state): State<AppState>, _user: AuthUser, Json(input): Json<DiscoverInput>) -> Result<axum::Json<Collections>, ApiError> {
            Ok(axum::Json(ops::find(&state.sync, $source, input).await?))
        }
    };
}

resource!(
    Source::AddressBook,
    "subscriptions",
    "/api/v1/contact-subscriptions",
    "Contact subscription",
    ContactSubscriptionList,
    contact_subscriptions,
    list_books,
    create_book,
    get_book,
    update_book,
    patch_book,
    delete_book,
    sync_book,
    test_book,
    discover_books
);

resource!(
    Source::Calendar,
    "subscriptions",
    "/api/v1/calendars",
    "Calendar subscription",
    CalendarList,
    calendars,
    list_calendars,
    create_calendar,
    get_calendar,
    update_calendar,
    patch_calendar,
    delete_calendar,
    sync_calendar,
    test_calendar,
    discover_calendars
);
