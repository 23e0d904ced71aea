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
mod error;
mod props;
mod query;
mod request;
pub mod sync;
pub mod xml;

pub use error::DavError;
pub use request::{DavUser, MAX_BODY};

use std::net::IpAddr;
use std::sync::Arc;
use std::time::Duration;

use axum::Router;
use axum::extract::{Request, State};
use axum::http::header::{AUTHORIZATION, CONTENT_TYPE, LOCATION};
use axum::http::{HeaderMap, StatusCode};
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
/// DAV writes (PUT, DELETE), cards and events together, waiting on the writer at once. Past it a write
/// is answered 503 with `Retry-After` at once rather than queued behind a saturated writer until
/// the client times out (and retries, adding to the queue).
pub const WRITES_IN_FLIGHT: usize = 128;
/// Changes queued for the engine's writer (from every front door and job) past which the writer
/// counts as saturated: a DAV write is then answered 503 with `Retry-After` instead of joining
/// the queue. Four full write batches.
pub const WRITER_SATURATED: usize = 2048;

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

impl Dav {
    fn new() -> Dav {
        Dav { writes: Arc::new(tokio::sync::Semaphore::new(WRITES_IN_FLIGHT)) }
    }

    async fn carddav(&self, state: AppState, request: Request) -> Response {
        let peer = crate::http::client::socket_peer(request.extensions());
        let headers = request.headers().clone();
        let user = match self.authenticate(&state, &headers, peer).await {
            Ok(user) => user,
            Err(_) if request.method() == axum::http::Method::OPTIONS => {
                return carddav::options(state.config.features.caldav_enabled);
            }
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
