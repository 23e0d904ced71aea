//! FRONT DOOR (CardDAV, RFC 6352; sync-collection, RFC 6578): every user's contacts as one
//! address book. It translates DAV requests into the domain's operations (`crm::contact::card`, which
//! calls the same contact operations as the JSON API) and their results into DAV answers; it
//! holds no rule of its own about contacts.
//!
//! Layout: this file (routes, HTTP Basic authentication, the DAV error), `xml` (strict request
//! parsing and the multistatus writer), `props` (what each resource answers for a property),
//! `carddav` (the methods), `sync` (tokens over the change feed).
//!
//! URLs: `/carddav/` (root), `/carddav/<user id>/` (the principal, which is also the address
//! book home), `/carddav/<user id>/contacts/` (the book), `.../contacts/<name>.vcf` (a card).
//! Another user's paths answer 404, as missing ones do. When `CARDDAV_ENABLED` is off none of
//! this is routed, so the paths answer 404.

mod caldav;
mod carddav;
mod props;
mod query;
pub mod sync;
pub mod xml;

use std::net::IpAddr;
use std::sync::Arc;
use std::time::Duration;

use axum::Router;
use axum::body::Body;
use axum::extract::{Request, State};
use axum::http::header::{AUTHORIZATION, CONTENT_TYPE, LOCATION, RETRY_AFTER, WWW_AUTHENTICATE};
use axum::http::{HeaderMap, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::any;
use base64::Engine as _;
use mycorrhizal_engine::UserId;

use crate::auth::limits::Rate;
use crate::auth::records::Scope;
use crate::auth::{Error as AuthError, credentials};
use crate::http::client::client_ip;
use crate::state::AppState;

/// The CardDAV request rate per client IP: `RATE_LIMIT_DAV_BURST` / `RATE_LIMIT_DAV_INTERVAL_MS`,
/// by default wire-shapes' 1 per 100 ms with a burst of 2,500.
pub fn rate(config: &crate::config::Config) -> Rate {
    Rate { every: Duration::from_millis(config.rates.dav_interval_ms), burst: config.rates.dav_burst as f64 }
}
/// The largest request body a DAV route reads (a card with a 10 MB photo, base64).
pub const MAX_BODY: usize = 16 * 1024 * 1024;
/// DAV writes (PUT, DELETE), cards and events together, waiting on the writer at once. Past it a write
/// is answered 503 with `Retry-After` at once rather than queued behind a saturated writer until
/// the client times out (and retries, adding to the queue).
pub const WRITES_IN_FLIGHT: usize = 128;
/// Changes queued for the engine's writer (from every front door and job) past which the writer
/// counts as saturated: a DAV write is then answered 503 with `Retry-After` instead of joining
/// the queue. Four full write batches.
pub const WRITER_SATURATED: usize = 2048;
const REALM: &str = "Basic realm=\"Mycorrhizal\", charset=\"UTF-8\"";

/// Whether `path` is served by this front door (the rate limiter's CardDAV bucket).
pub fn is_dav_path(path: &str) -> bool {
    ["/carddav", "/caldav", "/.well-known/carddav", "/.well-known/caldav", "/ical"]
        .iter()
        .any(|p| path == *p || path.strip_prefix(p).is_some_and(|rest| rest.starts_with('/')))
}

/// The DAV routes, for the features `state.config` turns on, and the subscription feed.
pub fn router(state: &AppState) -> Router<AppState> {
    let mut router = Router::new().route("/ical/{file}", axum::routing::get(feed));
    if state.config.features.carddav_enabled {
        let dav = Dav::new();
        let handle = move |State(state): State<AppState>, request: Request| {
            let dav = dav.clone();
            async move { dav.carddav(state, request).await }
        };
        let route = || crate::http::body_limit(any(handle.clone()), MAX_BODY);
        router = router
            .route("/.well-known/carddav", any(|| async { redirect("/carddav/") }))
            .route("/carddav", route())
            .route("/carddav/", route())
            .route("/carddav/{*rest}", route());
    }
    if state.config.features.caldav_enabled {
        let dav = Dav::new();
        let handle = move |State(state): State<AppState>, request: Request| {
            let dav = dav.clone();
            async move { dav.caldav(state, request).await }
        };
        let route = || crate::http::body_limit(any(handle.clone()), MAX_BODY);
        router = router
            .route("/.well-known/caldav", any(|| async { redirect("/caldav/") }))
            .route("/caldav", route())
            .route("/caldav/", route())
            .route("/caldav/{*rest}", route());
    }
    router
}

/// `app` with `PROPFIND /` answered (RFC 5397 `current-user-principal`, for clients given only
/// the server's address), when CardDAV is on. A layer around the whole application rather than a
/// route, so `/` stays free for the other front doors' methods.
pub fn at_root(app: Router, state: &AppState) -> Router {
    if !state.config.features.carddav_enabled && !state.config.features.caldav_enabled {
        return app;
    }
    let dav = Dav::new();
    app.layer(axum::middleware::from_fn_with_state((state.clone(), dav), root))
}

async fn root(State((state, dav)): State<(AppState, Dav)>, request: Request, next: axum::middleware::Next) -> Response {
    if request.method().as_str() != "PROPFIND" || request.uri().path() != "/" {
        return next.run(request).await;
    }
    let peer = crate::http::client::socket_peer(request.extensions());
    let ip = client_ip(peer, request.headers(), &state.config.trusted_proxies);
    if let Err(refusal) = state.auth.limits.take(format!("dav:ip:{ip}"), rate(&state.config)) {
        return DavError::too_many(refusal.retry_after.as_secs().max(1)).into_response();
    }
    dav.carddav(state, request).await
}

/// `GET /ical/<user>-<secret>.ics`: the user's dates as one iCalendar file (`crm::ical_feed`); an
/// unknown or revoked secret is 404, like a missing file.
async fn feed(State(state): State<AppState>, axum::extract::Path(file): axum::extract::Path<String>) -> Response {
    let today = state.today();
    let answer = state
        .blocking(move |engine| -> Result<Option<String>, crate::crm::Error> {
            let Some(user) = crate::crm::ical_feed::owner(engine, &file)? else { return Ok(None) };
            Ok(Some(crate::crm::ical_feed::calendar(&engine.user(user).view()?, today)?))
        })
        .await;
    match answer {
        Ok(Ok(Some(text))) => (
            [
                (CONTENT_TYPE, "text/calendar; charset=utf-8"),
                (axum::http::header::CACHE_CONTROL, "private, max-age=300"),
            ],
            text,
        )
            .into_response(),
        Ok(Ok(None)) => DavError::not_found().into_response(),
        Ok(Err(e)) => DavError::from(e).into_response(),
        Err(e) => DavError::from(e).into_response(),
    }
}

fn redirect(to: &'static str) -> Response {
    (StatusCode::MOVED_PERMANENTLY, [(LOCATION, to)]).into_response()
}

/// What the DAV routes share: the bound on writes in flight.
#[derive(Clone)]
pub struct Dav {
    writes: Arc<tokio::sync::Semaphore>,
}

/// The caller of a DAV request.
#[derive(Debug, Clone)]
pub struct DavUser {
    pub id: UserId,
    pub username: String,
    /// Which collections this instance serves (`CARDDAV_ENABLED`, `CALDAV_ENABLED`).
    pub carddav: bool,
    pub caldav: bool,
    /// `CALDAV_TWO_WAY_ENABLED`: an activity's event may be edited and deleted.
    pub calendar_writable: bool,
}

impl DavUser {
    fn new(state: &AppState, id: UserId, username: String) -> DavUser {
        let features = &state.config.features;
        DavUser {
            id,
            username,
            carddav: features.carddav_enabled,
            caldav: features.caldav_enabled,
            calendar_writable: features.caldav_two_way_enabled,
        }
    }
}

impl Dav {
    fn new() -> Dav {
        Dav { writes: Arc::new(tokio::sync::Semaphore::new(WRITES_IN_FLIGHT)) }
    }

    async fn carddav(&self, state: AppState, request: Request) -> Response {
        let peer = crate::http::client::socket_peer(request.extensions());
        let headers = request.headers().clone();
        let user = match self.authenticate(&state, &headers, peer).await {
            Ok(user) => user,
            Err(_) if request.method() == axum::http::Method::OPTIONS => return carddav::options(),
            Err(e) => return e.into_response(),
        };
        let _permit = match self.write_permit(&state, request.method()) {
            Ok(permit) => permit,
            Err(refused) => return refused,
        };
        carddav::handle(state, user, request).await.unwrap_or_else(IntoResponse::into_response)
    }

    async fn caldav(&self, state: AppState, request: Request) -> Response {
        let peer = crate::http::client::socket_peer(request.extensions());
        let headers = request.headers().clone();
        let user = match self.authenticate(&state, &headers, peer).await {
            Ok(user) => user,
            Err(_) if request.method() == axum::http::Method::OPTIONS => return caldav::options(),
            Err(e) => return e.into_response(),
        };
        let _permit = match self.write_permit(&state, request.method()) {
            Ok(permit) => permit,
            Err(refused) => return refused,
        };
        caldav::handle(state, user, request).await.unwrap_or_else(IntoResponse::into_response)
    }

    /// For a write (PUT, DELETE): a place among the DAV writes in flight, or the 503 a client
    /// retries on when those are all taken or the engine's writer is saturated.
    fn write_permit(
        &self,
        state: &AppState,
        method: &axum::http::Method,
    ) -> Result<Option<tokio::sync::OwnedSemaphorePermit>, Response> {
        if !matches!(method.as_str(), "PUT" | "DELETE") {
            return Ok(None);
        }
        if state.engine.queued_writes() >= WRITER_SATURATED {
            return Err(DavError::unavailable().into_response());
        }
        match self.writes.clone().try_acquire_owned() {
            Ok(permit) => Ok(Some(permit)),
            Err(_) => Err(DavError::unavailable().into_response()),
        }
    }

    /// HTTP Basic with the account password, or with an API token of scope `carddav` as the
    /// password, checked by sign-in's own core (`auth::credentials`: lockout, spray, one answer,
    /// the limiters' accounting). An account with two-factor authentication must use a token (a
    /// password alone would bypass the second factor).
    async fn authenticate(&self, state: &AppState, headers: &HeaderMap, peer: IpAddr) -> Result<DavUser, DavError> {
        let (identifier, password) = basic(headers).ok_or_else(DavError::unauthorized)?;
        let ip = client_ip(peer, headers, &state.config.trusted_proxies);
        let checked = credentials::check(&state.auth, &state.engine, &identifier, password, ip, Some(Scope::Carddav));
        match checked.await {
            Ok(proven) if !proven.needs_second_factor() => {
                Ok(DavUser::new(state, UserId(proven.id), proven.account.username))
            }
            Ok(_) => {
                tracing::info!(
                    event = "dav_auth_refused",
                    component = "dav",
                    reason = "second factor: use an API token"
                );
                Err(DavError::unauthorized())
            }
            Err(AuthError::RateLimited { retry_after, .. }) => Err(DavError::too_many(retry_after)),
            Err(AuthError::Engine(_) | AuthError::Crm(_) | AuthError::Internal(_)) => Err(DavError::unavailable()),
            Err(_) => Err(DavError::unauthorized()),
        }
    }
}

/// `(user, password)` of an `Authorization: Basic` header.
fn basic(headers: &HeaderMap) -> Option<(String, String)> {
    let value = headers.get(AUTHORIZATION)?.to_str().ok()?;
    let (scheme, encoded) = value.trim().split_once(' ')?;
    if !scheme.eq_ignore_ascii_case("basic") {
        return None;
    }
    let decoded = base64::engine::general_purpose::STANDARD.decode(encoded.trim()).ok()?;
    let text = String::from_utf8(decoded).ok()?;
    let (user, password) = text.split_once(':')?;
    Some((user.to_string(), password.to_string()))
}

/// A DAV failure: a status, and for a failed precondition of RFC 4918/6352/6578 the element a
/// `D:error` body names.
#[derive(Debug)]
pub struct DavError {
    status: StatusCode,
    precondition: Option<&'static str>,
    detail: Option<String>,
    retry_after: Option<u64>,
}

impl DavError {
    fn new(status: StatusCode) -> DavError {
        DavError { status, precondition: None, detail: None, retry_after: None }
    }

    pub fn unauthorized() -> DavError {
        DavError::new(StatusCode::UNAUTHORIZED)
    }

    pub fn not_found() -> DavError {
        DavError::new(StatusCode::NOT_FOUND)
    }

    pub fn bad_request(detail: impl Into<String>) -> DavError {
        DavError { detail: Some(detail.into()), ..DavError::new(StatusCode::BAD_REQUEST) }
    }

    /// A body past [`MAX_BODY`].
    pub fn too_large() -> DavError {
        DavError {
            detail: Some(format!("the body is larger than {MAX_BODY} bytes")),
            ..DavError::new(StatusCode::PAYLOAD_TOO_LARGE)
        }
    }

    /// A resource past [`MAX_BODY`] (the collection's `max-resource-size`): 413 naming the
    /// RFC's precondition `element` (`C:max-resource-size`, `CAL:max-resource-size`).
    pub fn resource_too_large(element: &'static str) -> DavError {
        DavError { precondition: Some(element), ..DavError::too_large() }
    }

    pub fn precondition_failed() -> DavError {
        DavError::new(StatusCode::PRECONDITION_FAILED)
    }

    pub fn method_not_allowed() -> DavError {
        DavError::new(StatusCode::METHOD_NOT_ALLOWED)
    }

    pub fn too_many(retry_after: u64) -> DavError {
        DavError { retry_after: Some(retry_after), ..DavError::new(StatusCode::TOO_MANY_REQUESTS) }
    }

    pub fn unavailable() -> DavError {
        DavError { retry_after: Some(5), ..DavError::new(StatusCode::SERVICE_UNAVAILABLE) }
    }

    /// A failed precondition (`C:valid-address-data`, `D:valid-sync-token`, ...).
    pub fn condition(status: StatusCode, element: &'static str, detail: Option<String>) -> DavError {
        DavError { precondition: Some(element), detail, ..DavError::new(status) }
    }

    pub fn internal(detail: impl std::fmt::Display) -> DavError {
        tracing::error!(event = "internal_error", component = "dav", error = %detail);
        DavError::new(StatusCode::INTERNAL_SERVER_ERROR)
    }
}

impl From<crate::crm::Error> for DavError {
    fn from(e: crate::crm::Error) -> Self {
        use crate::crm::Error as E;
        use mycorrhizal_engine::Error as Engine;
        match e {
            E::NotFound | E::Engine(Engine::NotFound) => DavError::not_found(),
            E::Engine(Engine::Conflict { .. }) | E::PreconditionFailed => DavError::precondition_failed(),
            E::Engine(Engine::Poisoned | Engine::ShutDown) => DavError::unavailable(),
            E::Invalid { field, reason } => DavError::bad_request(format!("{field}: {reason}")),
            E::BadParameter { field, reason } => DavError::bad_request(format!("{field}: {reason}")),
            other => DavError::internal(other),
        }
    }
}

impl From<mycorrhizal_engine::Error> for DavError {
    fn from(e: mycorrhizal_engine::Error) -> Self {
        DavError::from(crate::crm::Error::from(e))
    }
}

impl From<crate::auth::Error> for DavError {
    fn from(e: crate::auth::Error) -> Self {
        crate::error::ApiError::from(e).into()
    }
}

impl From<crate::error::ApiError> for DavError {
    fn from(e: crate::error::ApiError) -> Self {
        DavError::internal(e)
    }
}

impl IntoResponse for DavError {
    fn into_response(self) -> Response {
        let body = match (self.precondition, &self.detail) {
            (Some(element), detail) => Body::from(xml::error_body(element, detail.as_deref())),
            (None, Some(detail)) => Body::from(detail.clone()),
            (None, None) => Body::empty(),
        };
        let mut response = Response::new(body);
        *response.status_mut() = self.status;
        let headers = response.headers_mut();
        if self.precondition.is_some() {
            headers.insert(CONTENT_TYPE, HeaderValue::from_static("application/xml; charset=utf-8"));
        } else if self.detail.is_some() {
            headers.insert(CONTENT_TYPE, HeaderValue::from_static("text/plain; charset=utf-8"));
        }
        if self.status == StatusCode::UNAUTHORIZED {
            headers.insert(WWW_AUTHENTICATE, HeaderValue::from_static(REALM));
        }
        if let Some(seconds) = self.retry_after
            && let Ok(value) = HeaderValue::from_str(&seconds.to_string())
        {
            headers.insert(RETRY_AFTER, value);
        }
        response
    }
}
