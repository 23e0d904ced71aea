//! FRONT DOOR (browser): the web client, server-rendered HTML at `/` and below.
//!
//! Pages are maud templates compiled into the binary (type-checked, escaped by default). Every
//! handler extracts the viewer and the form, calls one operation of the domain layer
//! (`crate::crm`, `crate::auth`) exactly as the JSON API does, and renders the result or
//! redirects. Every page and form works with JavaScript off; `static/app.js` only enhances
//! (search as you type, confirmations). The words are in `i18n/`, never in the templates.
//!
//! The session is the API's (`auth_token` cookie). Every state-changing form carries a CSRF
//! token equal to the `csrf` cookie (SameSite=Strict), and a cross-site `Origin` is refused.
//! Every response carries a strict Content-Security-Policy (no inline script or style).

mod admin;
mod assets;
mod auth;
mod cadence;
mod console;
mod contact_form;
mod contacts;
mod depth;
mod duplicates;
mod fields;
mod format;
mod groups;
mod home;
mod households;
pub mod i18n;
mod import;
mod integrations;
mod journal;
mod network;
mod page;
mod record_forms;
mod reminders;
mod search;
mod settings;
mod subscriptions;

use axum::Router;
use axum::extract::{Request, State};
use axum::http::{HeaderValue, Method, StatusCode, header};
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};

use crate::auth::records::random_token;
use crate::auth::session::read_cookie;
use crate::state::AppState;
use page::{Chrome, Csrf, ErrorPage, LangSlot};

/// The web client's routes, with its own middleware (CSRF cookie, security headers, error pages).
pub fn router(state: &AppState) -> Router<AppState> {
    let import_limit = state.config.import.max_file_bytes.max(state.config.import.max_csv_bytes);
    Router::new()
        .route("/", get(home::dashboard))
        .route("/login", get(auth::login_page).post(auth::login))
        .route("/login/second-factor", get(auth::second_factor_page).post(auth::second_factor))
        .route("/register", get(auth::register_page).post(auth::register))
        .route("/logout", post(auth::logout))
        .route("/forgot-password", get(auth::forgot_page).post(auth::forgot))
        .route("/reset-password", get(auth::reset_page).post(auth::reset))
        .route("/contacts", get(contacts::list).post(contacts::create))
        .route("/contacts/new", get(contacts::new_form))
        .route("/contacts/bulk", post(contacts::bulk))
        .route("/contacts/duplicates", get(duplicates::list))
        .route("/contacts/duplicates/dismiss", post(duplicates::dismiss))
        .route("/contacts/merge", get(duplicates::merge_form).post(duplicates::merge_now))
        .route("/contacts/{id}", get(contacts::show).post(contacts::update))
        .route("/contacts/{id}/edit", get(contacts::edit_form))
        .route("/contacts/{id}/delete", post(contacts::delete))
        .route("/contacts/{id}/flags", post(contacts::flags))
        .route("/contacts/{id}/notes", post(contacts::add_note))
        .route(
            "/contacts/{id}/photo",
            crate::http::body_limit(post(contacts::photo), crate::crm::contact::picture::MAX_PHOTO + 64 * 1024),
        )
        .route("/contacts/{id}/reminders", post(contacts::add_reminder))
        .route("/contacts/{id}/households", post(contacts::join_household))
        .route(
            "/contacts/{id}/attachments",
            crate::http::body_limit(
                post(contacts::upload_attachment),
                crate::crm::attachment::ops::MAX_ATTACHMENT + 64 * 1024,
            ),
        )
        .route("/attachments/{id}", get(contacts::download_attachment))
        .route("/attachments/{id}/delete", post(contacts::delete_attachment))
        .route("/external-identities/{id}/delete", post(contacts::unlink_external))
        .route("/households", get(households::index).post(households::create))
        .route("/households/suggestions/dismiss", post(households::dismiss))
        .route("/addresses/apply", post(households::apply_address))
        .route("/households/{id}", get(households::show).post(households::update))
        .route("/households/{id}/delete", post(households::delete))
        .route("/households/{id}/address", post(households::use_address))
        .route("/households/{id}/members", post(households::add_member))
        .route("/households/{id}/members/{member}", post(households::edit_member))
        .route("/households/{id}/members/{member}/delete", post(households::remove_member))
        .route("/suggestions/{id}/accept", post(home::accept_suggestion))
        .route("/suggestions/{id}/dismiss", post(home::dismiss_suggestion))
        .route("/contacts/{id}/activities", post(journal::add_contact_activity))
        .route("/notes", get(journal::notes_page).post(journal::add_note))
        .route("/groups", get(groups::index).post(groups::change))
        .route("/contacts/{id}/relationships", post(network::add))
        .route("/contacts/{id}/relationships/{rid}/delete", post(network::remove))
        .route("/network", get(network::picture))
        .route("/cadence", get(cadence::index).post(cadence::add))
        .route("/cadence/{id}/delete", post(cadence::delete))
        .route("/contacts/{id}/life-events", post(depth::add_life_event))
        .route("/contacts/{id}/gifts", post(depth::add_gift))
        .route("/contacts/{id}/agenda", post(depth::add_agenda))
        .route("/contacts/{id}/agenda/{item}/discussed", post(depth::discussed))
        .route("/contacts/{id}/timeline", get(depth::timeline))
        .route("/activities", get(journal::activities_page).post(journal::add_activity))
        .route("/reminders", get(reminders::list))
        .route("/reminders/{id}/complete", post(reminders::complete))
        .route("/import", crate::http::body_limit(get(import::index).post(import::upload), import_limit))
        .route("/import/bundle", crate::http::body_limit(post(import::upload_bundle), import::bundle_limit(state)))
        .route("/import/{session}/preview", post(import::preview_csv))
        .route("/import/{session}/confirm", post(import::confirm))
        .route("/shares/{id}/review", post(import::share_review))
        .route("/shares/{id}/confirm/{session}", post(import::share_confirm))
        .route("/shares/{id}/decline", post(import::share_decline))
        .route("/contacts/{id}/share", post(import::share_create))
        .route("/search", get(search::page))
        .route("/settings", get(settings::page))
        .route("/settings/preferences", post(settings::preferences))
        .route("/settings/password", post(settings::password))
        .route("/settings/2fa/setup", post(settings::two_factor_setup))
        .route("/settings/2fa/confirm", post(settings::two_factor_confirm))
        .route("/settings/2fa/disable", post(settings::two_factor_disable))
        .route("/settings/2fa/recovery-codes", post(settings::recovery_codes))
        .route("/settings/fields", get(fields::page).post(fields::create))
        .route("/settings/fields/{id}/delete", post(fields::delete))
        .route("/contacts/{id}/fields", post(fields::save_values))
        .route("/settings/integrations", get(integrations::page))
        .route("/settings/integrations/immich/sync", post(integrations::sync))
        .route("/settings/integrations/{system}", post(integrations::save))
        .route("/settings/integrations/{system}/test", post(integrations::test))
        .route("/settings/integrations/{system}/delete", post(integrations::delete))
        .route("/contacts/{id}/link/immich/picture", post(integrations::use_as_picture))
        .route("/contacts/{id}/link/{system}", get(integrations::find).post(integrations::link))
        .route("/settings/subscriptions", get(subscriptions::page).post(subscriptions::create))
        .route("/settings/subscriptions/{id}/edit", post(subscriptions::edit))
        .route("/settings/subscriptions/{id}/sync", post(subscriptions::sync))
        .route("/settings/subscriptions/{id}/test", post(subscriptions::test))
        .route("/settings/subscriptions/{id}/delete", post(subscriptions::delete))
        .route("/settings/feed", post(settings::feed))
        .route("/settings/feed/revoke", post(settings::feed_revoke))
        .route("/settings/notifications/email", post(settings::notify_email))
        .route("/settings/notifications/ntfy", post(settings::notify_ntfy))
        .route("/settings/notifications/gotify", post(settings::notify_gotify))
        .route("/settings/notifications/{channel}/delete", post(settings::notify_remove))
        .route("/settings/notifications/{channel}/test", post(settings::notify_test))
        .route("/settings/notifications/push/{id}/delete", post(settings::notify_unsubscribe))
        .route("/sw.js", get(assets::service_worker))
        .route("/settings/tokens", post(settings::create_token))
        .route("/settings/tokens/revoke-all", post(settings::revoke_all_tokens))
        .route("/settings/tokens/{id}/rotate", post(settings::rotate_token))
        .route("/settings/tokens/{id}/revoke", post(settings::revoke_token))
        .route("/admin", get(admin::index))
        .route("/admin/users", post(admin::create_user))
        .route("/admin/users/{id}/admin", post(admin::toggle_admin))
        .route("/admin/users/{id}/password", post(admin::reset_password))
        .route("/admin/users/{id}/reset-2fa", post(admin::reset_2fa))
        .route("/admin/users/{id}/delete", post(admin::delete_user))
        .route("/admin/rebuild-search", post(admin::rebuild_search))
        .route("/admin/rebuild-derived", post(admin::rebuild_derived))
        .route("/admin/status", get(console::status))
        .route("/admin/events", get(console::events))
        .route("/admin/diagnostics", get(console::diagnostics))
        .route("/admin/console/evaluate", post(console::evaluate))
        .route("/admin/console/backup", post(console::backup))
        .route("/admin/console/restore-drill", post(console::restore_drill))
        .route("/assets/{file}", get(assets::serve))
        .layer(middleware::from_fn_with_state(state.clone(), chrome))
}

/// True for the paths the web client owns (everything but the API, DAV and health).
pub fn owns(path: &str) -> bool {
    !["/api/", "/carddav", "/caldav", "/health", "/.well-known/", "/ical/"].iter().any(|p| path.starts_with(p))
}

/// The CSRF cookie (minted when absent), the same-origin check on state-changing requests, the
/// error pages, and the security headers.
async fn chrome(State(state): State<AppState>, mut request: Request, next: Next) -> Response {
    let existing = request
        .headers()
        .get_all(header::COOKIE)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .find_map(|h| read_cookie(h, CSRF_COOKIE).filter(|v| v.len() == 32).map(str::to_string));
    let minted = existing.is_none();
    let token = existing.unwrap_or_else(|| random_token(24));
    request.extensions_mut().insert(Csrf(token.clone()));
    let slot = LangSlot::default();
    request.extensions_mut().insert(slot.clone());

    let mut response = if !same_origin(&request, state.config.auth.frontend_url.as_deref()) {
        let lang = i18n::Lang::of_header(request.headers().get(header::ACCEPT_LANGUAGE).and_then(|v| v.to_str().ok()));
        let _ = slot.0.set(lang);
        let mut r = StatusCode::FORBIDDEN.into_response();
        r.extensions_mut()
            .insert(ErrorPage { status: StatusCode::FORBIDDEN, message: lang.t("error.cross_site").into() });
        r
    } else {
        next.run(request).await
    };

    if let Some(error) = response.extensions_mut().remove::<ErrorPage>() {
        let lang = slot.0.get().copied().unwrap_or(i18n::Lang::En);
        let chrome = Chrome { lang, csrf: &token, user: None, date_format: "iso" };
        let retry_after = response.headers().get(header::RETRY_AFTER).cloned();
        response = page::page_with(error.status, page::error_page(&chrome, error.status, &error.message));
        if let Some(value) = retry_after {
            response.headers_mut().insert(header::RETRY_AFTER, value);
        }
    }
    let headers = response.headers_mut();
    if minted {
        let cookie = format!(
            "{CSRF_COOKIE}={token}; Path=/; HttpOnly; SameSite=Strict{}",
            if state.config.auth.cookie_secure { "; Secure" } else { "" }
        );
        if let Ok(value) = HeaderValue::from_str(&cookie) {
            headers.append(header::SET_COOKIE, value);
        }
    }
    security_headers(headers);
    response
}

const CSRF_COOKIE: &str = "csrf";

/// A state-changing request whose `Origin` (or, without one, `Referer`) names another host than
/// this site is refused; a request with neither passes (the CSRF token decides). This site is the
/// request's `Host`, the `X-Forwarded-Host` a reverse proxy set, or the host of `FRONTEND_URL`.
fn same_origin(request: &Request, frontend_url: Option<&str>) -> bool {
    if matches!(*request.method(), Method::GET | Method::HEAD | Method::OPTIONS) {
        return true;
    }
    let headers = request.headers();
    let origin = headers
        .get(header::ORIGIN)
        .or_else(|| headers.get(header::REFERER))
        .and_then(|v| v.to_str().ok())
        .filter(|o| *o != "null");
    let Some(origin) = origin else { return true };
    let host_of = |url: &str| -> String {
        let rest = url.split_once("://").map(|(_, r)| r).unwrap_or(url);
        rest.split('/').next().unwrap_or("").to_ascii_lowercase()
    };
    let origin = host_of(origin);
    let ours = [
        headers.get(header::HOST).and_then(|v| v.to_str().ok()).map(str::to_ascii_lowercase),
        headers.get("x-forwarded-host").and_then(|v| v.to_str().ok()).map(|h| h.trim().to_ascii_lowercase()),
        frontend_url.map(host_of),
    ];
    ours.iter().flatten().any(|host| !host.is_empty() && *host == origin)
}

/// The headers every web response carries.
pub fn security_headers(headers: &mut axum::http::HeaderMap) {
    headers.insert(
        header::CONTENT_SECURITY_POLICY,
        HeaderValue::from_static(
            "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; \
             form-action 'self'; frame-ancestors 'none'; base-uri 'none'",
        ),
    );
    headers.insert(header::X_FRAME_OPTIONS, HeaderValue::from_static("DENY"));
    headers.insert(header::X_CONTENT_TYPE_OPTIONS, HeaderValue::from_static("nosniff"));
    headers.insert(header::REFERRER_POLICY, HeaderValue::from_static("same-origin"));
}

/// The "not found" page for a browser's request of an unknown `path` the client owns (`None`
/// for API, DAV and health paths, which keep the JSON envelope).
pub fn not_found_for(path: &str, request_lang: Option<&str>) -> Option<Response> {
    owns(path).then(|| not_found_page(request_lang))
}

/// The page for a path nobody serves, in the browser's language.
fn not_found_page(request_lang: Option<&str>) -> Response {
    let lang = i18n::Lang::of_header(request_lang);
    let chrome = Chrome { lang, csrf: "", user: None, date_format: "iso" };
    let mut response = page::page_with(
        StatusCode::NOT_FOUND,
        page::error_page(&chrome, StatusCode::NOT_FOUND, lang.t("error.not_found_text")),
    );
    security_headers(response.headers_mut());
    response
}
