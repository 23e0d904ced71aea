//! Settings: the account, language and date format, password, two-factor enrolment (the QR code
//! drawn as SVG, recovery codes shown once), and API tokens (create with scope, rotate, revoke,
//! revoke all), and notification channels (email on or off, an ntfy-style topic, a Gotify-style
//! server, each with "send a test"; Web Push: the browsers registered, and a subscribe button the
//! script shows where the browser can). Every change is an operation of `auth` or
//! `notify::channels` that the JSON API calls too.

use axum::extract::{Path, Query, State};
use axum::http::StatusCode;
use axum::http::header::SET_COOKIE;
use axum::response::IntoResponse;
use base64::Engine as _;
use maud::{Markup, html};
use serde::Deserialize;

use super::format;
use super::page::{Form, PageResult, Viewer, field_error, notice, page as html_page, page_with, see_other, shell};
use crate::auth::accounts::{self, DATE_FORMATS, LANGUAGES};
use crate::auth::records::Scope;
use crate::auth::tokens::{self, NewToken, TokenView};
use crate::auth::{Via, second_factor};
use crate::error::ApiError;
use crate::notify::channels::{self, Channel, ChannelsView, EmailInput, GotifyInput, NtfyInput};
use crate::notify::webpush::{self, PushSubscriptionList};
use crate::state::AppState;

#[derive(Debug, Default, Deserialize)]
pub struct SettingsQuery {
    notice: Option<String>,
}

fn language_name(code: &str) -> &'static str {
    match code {
        "de" => "Deutsch",
        "it" => "Italiano",
        "es" => "Español",
        "fr" => "Français",
        _ => "English",
    }
}

/// What the page shows beyond the account: an error in one section, a secret shown once.
#[derive(Default)]
struct Extra {
    /// `(section, message)`: the section whose form failed.
    error: Option<(&'static str, String)>,
    /// A new token's plaintext, shown once.
    new_token: Option<String>,
    /// A two-factor setup in progress: `(secret, otpauth URL)`.
    enrolment: Option<(String, String)>,
    /// Fresh recovery codes, shown once.
    recovery_codes: Option<Vec<String>>,
    /// A new calendar feed path, shown once.
    feed_path: Option<String>,
}

fn section_error(extra: &Extra, section: &str) -> Markup {
    html! {
        @if let Some((s, message)) = &extra.error { @if *s == section { p class="error" role="alert" { (message) } } }
    }
}

/// The QR code of `text` as an SVG image (a data URL: the page's policy allows no inline style).
fn qr_image(text: &str) -> Option<String> {
    let code = qrcode::QrCode::new(text.as_bytes()).ok()?;
    let svg = code.render::<qrcode::render::svg::Color>().min_dimensions(200, 200).build();
    Some(format!("data:image/svg+xml;base64,{}", base64::engine::general_purpose::STANDARD.encode(svg)))
}

/// The caller's channels and registered browsers.
struct Notify {
    channels: ChannelsView,
    browsers: PushSubscriptionList,
}

async fn notify_of(state: &AppState, user: u64) -> Result<Notify, ApiError> {
    let s = state.notify.clone();
    state
        .blocking(move |_| -> Result<Notify, ApiError> {
            Ok(Notify { channels: channels::list(&s, user)?, browsers: webpush::list(&s, user)? })
        })
        .await?
}

/// The host of a push endpoint, to tell browsers apart without showing the capability URL.
fn endpoint_host(endpoint: &str) -> String {
    reqwest::Url::parse(endpoint).ok().and_then(|u| u.host_str().map(str::to_string)).unwrap_or_default()
}

fn notifications(c: &super::page::Chrome<'_>, viewer: &Viewer, n: &Notify, extra: &Extra) -> Markup {
    let t = |k| viewer.t(k);
    let ch = &n.channels;
    html! {
        section class="card wide" aria-labelledby="h-notify" {
            h2 id="h-notify" { (t("notify.title")) }
            p class="hint" { (t("notify.hint")) }
            (section_error(extra, "notify"))
            h3 { (t("notify.email")) }
            @if !ch.email.available {
                p class="muted" { (t("notify.email_unavailable")) }
            } @else {
                p { (if ch.email.enabled { t("notify.email_on") } else { t("notify.email_off") }) }
                form method="post" action="/settings/notifications/email" class="inline" {
                    (c.csrf_field())
                    input type="hidden" name="enabled" value=(if ch.email.enabled { "false" } else { "true" });
                    button type="submit" { (if ch.email.enabled { t("notify.turn_off") } else { t("notify.turn_on") }) }
                }
                @if ch.email.enabled { (c.button_form("/settings/notifications/email/test", t("notify.send_test"), "", None)) }
            }
            h3 { (t("notify.ntfy")) }
            @if let Some(ntfy) = &ch.ntfy {
                p { (t("notify.sends_to")) " " code { (ntfy.url) } " · " code { (ntfy.topic) }
                    @if ntfy.token_set { " · " (t("notify.token_set")) } }
                (c.button_form("/settings/notifications/ntfy/test", t("notify.send_test"), "", None))
                (c.button_form("/settings/notifications/ntfy/delete", t("notify.remove"), "danger", Some(t("notify.remove_confirm"))))
            }
            form method="post" action="/settings/notifications/ntfy" class="stack" {
                (c.csrf_field())
                div class="row" {
                    div { label for="ntfy-url" { (t("notify.server_url")) }
                        input id="ntfy-url" name="url" type="url" required maxlength="2000" placeholder="https://ntfy.sh" value=[ch.ntfy.as_ref().map(|x| x.url.as_str())]; }
                    div { label for="ntfy-topic" { (t("notify.topic")) }
                        input id="ntfy-topic" name="topic" required maxlength="64" pattern=r"[A-Za-z0-9_\-]{1,64}" value=[ch.ntfy.as_ref().map(|x| x.topic.as_str())]; }
                    div { label for="ntfy-token" { (t("notify.token_optional")) }
                        input id="ntfy-token" name="token" type="password" autocomplete="off" maxlength="512"; }
                }
                @if ch.ntfy.as_ref().is_some_and(|x| x.token_set) {
                    label { input type="checkbox" name="clear_token" value="1"; " " (t("notify.clear_token")) }
                }
                p class="hint" { (t("notify.token_hint")) }
                button type="submit" { (t("notify.save_ntfy")) }
            }
            h3 { (t("notify.gotify")) }
            @if let Some(g) = &ch.gotify {
                p { (t("notify.sends_to")) " " code { (g.url) } " · " (t("notify.token_set")) }
                (c.button_form("/settings/notifications/gotify/test", t("notify.send_test"), "", None))
                (c.button_form("/settings/notifications/gotify/delete", t("notify.remove"), "danger", Some(t("notify.remove_confirm"))))
            }
            form method="post" action="/settings/notifications/gotify" class="stack" {
                (c.csrf_field())
                div class="row" {
                    div { label for="gotify-url" { (t("notify.server_url")) }
                        input id="gotify-url" name="url" type="url" required maxlength="2000" placeholder="https://gotify.example.org" value=[ch.gotify.as_ref().map(|x| x.url.as_str())]; }
                    div { label for="gotify-token" { (t("notify.app_token")) }
                        input id="gotify-token" name="token" type="password" autocomplete="off" maxlength="512" required[ch.gotify.is_none()]; }
                }
                p class="hint" { (t("notify.token_hint")) }
                button type="submit" { (t("notify.save_gotify")) }
            }
            h3 { (t("notify.webpush")) }
            p class="hint" { (t("notify.webpush_hint")) }
            @if n.browsers.subscriptions.is_empty() {
                p class="muted" { (t("notify.no_browsers")) }
            } @else {
                ul {
                    @for b in &n.browsers.subscriptions {
                        li { (endpoint_host(&b.endpoint)) " "
                            (c.button_form(&format!("/settings/notifications/push/{}/delete", b.id), t("notify.remove"), "small danger", None)) }
                    }
                }
                (c.button_form("/settings/notifications/webpush/test", t("notify.send_test"), "", None))
            }
            div id="webpush" hidden data-key-url="/api/v1/notifications/webpush/public-key"
                data-subscribe-url="/api/v1/notifications/push-subscriptions" data-worker="/sw.js"
                data-failed=(t("notify.webpush_failed")) data-denied=(t("notify.webpush_denied")) {
                button type="button" id="webpush-subscribe" class="primary" { (t("notify.webpush_subscribe")) }
                p id="webpush-status" role="status" {}
            }
        }
    }
}

fn render(
    viewer: &Viewer,
    tokens: &[TokenView],
    feed_on: bool,
    notify: &Notify,
    extra: &Extra,
    notice_key: Option<&'static str>,
) -> Markup {
    let c = viewer.chrome();
    let t = |k| viewer.t(k);
    let account = &viewer.user.account;
    let sample = jiff::civil::Date::constant(2026, 3, 14);
    let two_factor = account.totp.as_ref().is_some_and(|t| t.enabled);
    let zone = jiff::tz::TimeZone::UTC;
    let day = |ts: jiff::Timestamp| format::day_of(viewer.lang, c.date_format, ts, &zone);
    let main = html! {
        h1 { (t("settings.title")) }
        p { a href="/settings/subscriptions" { (t("settings.subscriptions")) } " · " a href="/settings/integrations" { (t("integrations.title")) } " · " a href="/settings/fields" { (t("fields.title")) } }
        div class="grid" {
        section class="card" aria-labelledby="h-account" {
            h2 id="h-account" { (t("settings.account")) }
            dl {
                dt { (t("register.username")) } dd { (account.username) }
                dt { (t("register.email")) } dd { (account.email) }
            }
        }
        section class="card" aria-labelledby="h-preferences" {
            h2 id="h-preferences" { (t("settings.preferences")) }
            (section_error(extra, "preferences"))
            form method="post" action="/settings/preferences" class="stack" {
                (c.csrf_field())
                label for="language" { (t("settings.language")) }
                select id="language" name="language" {
                    @for code in LANGUAGES { option value=(code) selected[account.language == *code] { (language_name(code)) } }
                }
                p class="hint" { (t("settings.language_hint")) }
                label for="date_format" { (t("settings.date_format")) }
                select id="date_format" name="date_format" {
                    @for f in DATE_FORMATS {
                        option value=(f) selected[account.date_format == *f] { (format::date(viewer.lang, f, sample)) }
                    }
                }
                button type="submit" class="primary" { (t("settings.save")) }
            }
        }
        @if account.password_hash.is_some() {
            section class="card" aria-labelledby="h-password" {
                h2 id="h-password" { (t("settings.password")) }
                (section_error(extra, "password"))
                form method="post" action="/settings/password" class="stack" {
                    (c.csrf_field())
                    label for="current_password" { (t("settings.current_password")) }
                    input id="current_password" name="current_password" type="password" autocomplete="current-password" required;
                    label for="new_password" { (t("settings.new_password")) }
                    input id="new_password" name="new_password" type="password" autocomplete="new-password" required minlength="8";
                    p class="hint" { (t("settings.password_hint")) }
                    button type="submit" { (t("settings.change_password")) }
                }
            }
        }
        section class="card" aria-labelledby="h-2fa" {
            h2 id="h-2fa" { (t("settings.two_factor")) }
            (section_error(extra, "2fa"))
            @if let Some(codes) = &extra.recovery_codes {
                p class="notice" role="status" { (t("settings.recovery_codes_once")) }
                ul class="codes" { @for code in codes { li { code { (code) } } } }
            }
            @if two_factor {
                p { (t("settings.two_factor_on")) }
                form method="post" action="/settings/2fa/recovery-codes" class="stack" {
                    (c.csrf_field())
                    label for="regen-code" { (t("settings.totp_code")) }
                    input id="regen-code" name="code" inputmode="numeric" autocomplete="one-time-code" required;
                    button type="submit" { (t("settings.new_recovery_codes")) }
                }
                form method="post" action="/settings/2fa/disable" class="stack" {
                    (c.csrf_field())
                    label for="disable-code" { (t("settings.code_or_recovery")) }
                    input id="disable-code" name="code" autocomplete="one-time-code" required;
                    button type="submit" class="danger" { (t("settings.disable_two_factor")) }
                }
            } @else if let Some((secret, url)) = &extra.enrolment {
                p { (t("settings.scan")) }
                @if let Some(src) = qr_image(url) { img class="qr" src=(src) alt=(t("settings.qr_alt")) width="200" height="200"; }
                p { (t("settings.or_enter")) " " code class="secret" { (secret) } }
                form method="post" action="/settings/2fa/confirm" class="stack" {
                    (c.csrf_field())
                    label for="confirm-code" { (t("settings.totp_code")) }
                    input id="confirm-code" name="code" inputmode="numeric" autocomplete="one-time-code" required;
                    button type="submit" class="primary" { (t("settings.confirm_two_factor")) }
                }
            } @else if account.totp.is_some() {
                p { (t("settings.pending")) }
                form method="post" action="/settings/2fa/confirm" class="stack" {
                    (c.csrf_field())
                    label for="confirm-code" { (t("settings.totp_code")) }
                    input id="confirm-code" name="code" inputmode="numeric" autocomplete="one-time-code" required;
                    button type="submit" class="primary" { (t("settings.confirm_two_factor")) }
                }
                form method="post" action="/settings/2fa/setup" {
                    (c.csrf_field())
                    button type="submit" { (t("settings.start_over")) }
                }
            } @else if account.oidc_subject.is_some() {
                p class="muted" { (t("settings.two_factor_sso")) }
            } @else {
                p { (t("settings.two_factor_off")) }
                form method="post" action="/settings/2fa/setup" {
                    (c.csrf_field())
                    button type="submit" class="primary" { (t("settings.enable_two_factor")) }
                }
            }
        }
        section class="card" aria-labelledby="h-feed" {
            h2 id="h-feed" { (t("feed.title")) }
            p class="hint" { (t("feed.hint")) }
            @if let Some(path) = &extra.feed_path {
                p class="notice" role="status" { (t("feed.once")) }
                p { code class="secret" id="feed-url" { (path) } }
            } @else if feed_on {
                p { (t("feed.on")) }
            } @else {
                p class="muted" { (t("feed.off")) }
            }
            (c.button_form("/settings/feed", if feed_on { t("feed.rotate") } else { t("feed.create") }, "", None))
            @if feed_on { (c.button_form("/settings/feed/revoke", t("feed.revoke"), "danger", Some(t("feed.revoke_confirm")))) }
        }
        (notifications(&c, viewer, notify, extra))
        section class="card wide" aria-labelledby="h-tokens" {
            h2 id="h-tokens" { (t("settings.tokens")) }
            p class="hint" { (t("settings.tokens_hint")) }
            (section_error(extra, "tokens"))
            @if let Some(secret) = &extra.new_token {
                p class="notice" role="status" { (t("settings.token_once")) }
                p { code class="secret" { (secret) } }
            }
            @if !tokens.is_empty() {
                table class="list" {
                    thead { tr {
                        th scope="col" { (t("settings.token_name")) } th scope="col" { (t("settings.token_scope")) }
                        th scope="col" { (t("settings.token_expires")) } th scope="col" { (t("settings.token_used")) }
                        th scope="col" { span class="visually-hidden" { (t("reminders.actions")) } }
                    } }
                    tbody {
                        @for tok in tokens {
                            tr {
                                td { (tok.name) }
                                td { (if tok.scope == Scope::Carddav { t("settings.scope_carddav") } else { t("settings.scope_full") }) }
                                td { (day(tok.expires_at)) }
                                td { @if let Some(used) = tok.last_used_at { (day(used)) } @else { "–" } }
                                td {
                                    @if tok.revoked_at.is_some() { span class="badge" { (t("settings.revoked")) } }
                                    @else {
                                        (c.button_form(&format!("/settings/tokens/{}/rotate", tok.id), t("settings.rotate"), "small", None))
                                        (c.button_form(&format!("/settings/tokens/{}/revoke", tok.id), t("settings.revoke"), "small danger", Some(t("settings.revoke_confirm"))))
                                    }
                                }
                            }
                        }
                    }
                }
                (c.button_form("/settings/tokens/revoke-all", t("settings.revoke_all"), "danger", Some(t("settings.revoke_all_confirm"))))
            }
            form method="post" action="/settings/tokens" class="stack" {
                (c.csrf_field())
                div class="row" {
                    div { label for="token-name" { (t("settings.token_name")) } input id="token-name" name="name" required maxlength="100"; }
                    div {
                        label for="token-scope" { (t("settings.token_scope")) }
                        select id="token-scope" name="scope" {
                            option value="full" { (t("settings.scope_full")) }
                            option value="carddav" { (t("settings.scope_carddav")) }
                        }
                    }
                    div { label for="token-days" { (t("settings.token_days")) } input id="token-days" name="expires_in_days" type="number" min="1" max="365" value="90"; }
                }
                button type="submit" { (t("settings.create_token")) }
            }
        }
        }
    };
    shell(&c, t("settings.title"), notice_key, main)
}

async fn show(state: &AppState, viewer: &Viewer, status: StatusCode, extra: Extra) -> PageResult {
    let list = tokens::list(&state.engine, viewer.user.id.0).await?;
    let feed_on = state.read(&viewer.user, crate::crm::ical_feed::enabled).await?;
    let notify = notify_of(state, viewer.user.id.0).await?;
    Ok(page_with(status, render(viewer, &list, feed_on, &notify, &extra, None)))
}

/// Shows the page again with `e` in `section` when the form was at fault, else the error page.
async fn refused(state: &AppState, viewer: &Viewer, section: &'static str, e: impl Into<ApiError>) -> PageResult {
    let e: ApiError = e.into();
    match e {
        ApiError::Validation { .. } | ApiError::InvalidInput { .. } | ApiError::Conflict(_) => {
            let (status, message) = field_error(viewer.lang, &e);
            show(state, viewer, status, Extra { error: Some((section, message)), ..Extra::default() }).await
        }
        e => Err(e.into()),
    }
}

pub async fn page(State(state): State<AppState>, viewer: Viewer, Query(q): Query<SettingsQuery>) -> PageResult {
    let list = tokens::list(&state.engine, viewer.user.id.0).await?;
    let feed_on = state.read(&viewer.user, crate::crm::ical_feed::enabled).await?;
    let notify = notify_of(&state, viewer.user.id.0).await?;
    Ok(html_page(render(&viewer, &list, feed_on, &notify, &Extra::default(), notice(q.notice.as_deref()))))
}

pub async fn preferences(State(state): State<AppState>, viewer: Viewer, form: Form) -> PageResult {
    let id = viewer.user.id.0;
    let outcome = match accounts::set_language(&state.engine, id, &form.get("language")).await {
        Ok(_) => accounts::set_date_format(&state.engine, id, &form.get("date_format")).await.map(|_| ()),
        Err(e) => Err(e),
    };
    match outcome {
        Ok(()) => Ok(see_other("/settings?notice=preferences")),
        Err(e) => refused(&state, &viewer, "preferences", e).await,
    }
}

/// Changes the password: every other session and token ends; this browser gets a new session.
pub async fn password(State(state): State<AppState>, viewer: Viewer, form: Form) -> PageResult {
    match accounts::change_password(
        &state.auth,
        &state.engine,
        &viewer.user,
        &form.raw("current_password"),
        form.raw("new_password"),
    )
    .await
    {
        Ok(account) => {
            let fresh = matches!(viewer.user.via, Via::Session { .. });
            let to = see_other("/settings?notice=password");
            if fresh {
                let (_, cookie) = state.auth.start_session(&state.engine, viewer.user.id.0, &account, false).await?;
                return Ok(([(SET_COOKIE, cookie)], to).into_response());
            }
            Ok(to)
        }
        Err(e) => refused(&state, &viewer, "password", e).await,
    }
}

pub async fn two_factor_setup(State(state): State<AppState>, viewer: Viewer, _form: Form) -> PageResult {
    match second_factor::setup(&state.auth, &state.engine, &viewer.user).await {
        Ok(enrolment) => {
            show(&state, &viewer, StatusCode::OK, Extra { enrolment: Some(enrolment), ..Extra::default() }).await
        }
        Err(e) => refused(&state, &viewer, "2fa", e).await,
    }
}

pub async fn two_factor_confirm(State(state): State<AppState>, viewer: Viewer, form: Form) -> PageResult {
    match second_factor::confirm(&state.auth, &state.engine, &viewer.user, &form.get("code")).await {
        Ok(codes) => {
            // The page reflects the account as it is now: two-factor on.
            let viewer = Viewer { user: refreshed(&state, &viewer).await?, ..viewer };
            show(&state, &viewer, StatusCode::OK, Extra { recovery_codes: Some(codes), ..Extra::default() }).await
        }
        Err(e) => refused(&state, &viewer, "2fa", e).await,
    }
}

pub async fn two_factor_disable(State(state): State<AppState>, viewer: Viewer, form: Form) -> PageResult {
    match second_factor::disable(&state.auth, &state.engine, &viewer.user, &form.get("code")).await {
        Ok(()) => Ok(see_other("/settings?notice=saved")),
        Err(e) => refused(&state, &viewer, "2fa", e).await,
    }
}

pub async fn recovery_codes(State(state): State<AppState>, viewer: Viewer, form: Form) -> PageResult {
    match second_factor::regenerate(&state.auth, &state.engine, &viewer.user, &form.get("code")).await {
        Ok(codes) => {
            show(&state, &viewer, StatusCode::OK, Extra { recovery_codes: Some(codes), ..Extra::default() }).await
        }
        Err(e) => refused(&state, &viewer, "2fa", e).await,
    }
}

async fn refreshed(state: &AppState, viewer: &Viewer) -> Result<crate::auth::AuthUser, ApiError> {
    let account = crate::auth::accounts::get(&state.engine, viewer.user.id.0).await?;
    Ok(crate::auth::AuthUser { account, ..viewer.user.clone() })
}

pub async fn create_token(State(state): State<AppState>, viewer: Viewer, form: Form) -> PageResult {
    let scope = match form.get("scope").as_str() {
        "carddav" => Scope::Carddav,
        _ => Scope::Full,
    };
    let days = form.get("expires_in_days");
    let expires_in_days = match days.as_str() {
        "" => None,
        text => match text.parse() {
            Ok(n) => Some(n),
            Err(_) => {
                return refused(&state, &viewer, "tokens", ApiError::validation("expires_in_days", "must be 1 to 365"))
                    .await;
            }
        },
    };
    let new = NewToken { name: form.get("name"), expires_in_days, scope: Some(scope) };
    match tokens::create(&state.engine, viewer.user.id.0, new).await {
        Ok(minted) => {
            show(&state, &viewer, StatusCode::OK, Extra { new_token: Some(minted.plaintext), ..Extra::default() }).await
        }
        Err(e) => refused(&state, &viewer, "tokens", e).await,
    }
}

pub async fn rotate_token(
    State(state): State<AppState>,
    viewer: Viewer,
    Path(id): Path<u64>,
    _form: Form,
) -> PageResult {
    match tokens::rotate(&state.engine, viewer.user.id.0, id).await {
        Ok(minted) => {
            show(&state, &viewer, StatusCode::OK, Extra { new_token: Some(minted.plaintext), ..Extra::default() }).await
        }
        Err(e) => refused(&state, &viewer, "tokens", e).await,
    }
}

pub async fn revoke_token(
    State(state): State<AppState>,
    viewer: Viewer,
    Path(id): Path<u64>,
    _form: Form,
) -> PageResult {
    tokens::revoke(&state.engine, viewer.user.id.0, id).await?;
    Ok(see_other("/settings?notice=saved#h-tokens"))
}

pub async fn revoke_all_tokens(State(state): State<AppState>, viewer: Viewer, _form: Form) -> PageResult {
    tokens::revoke_all(&state.engine, viewer.user.id.0).await?;
    Ok(see_other("/settings?notice=saved#h-tokens"))
}

/// A new calendar feed URL (any earlier one stops working), shown once, in full.
pub async fn feed(
    State(state): State<AppState>,
    viewer: Viewer,
    headers: axum::http::HeaderMap,
    _form: Form,
) -> PageResult {
    let file = crate::crm::ical_feed::rotate(&state.scope(&viewer.user)).await?;
    let base = match &state.config.auth.frontend_url {
        Some(url) => url.trim_end_matches('/').to_string(),
        None => {
            let host = headers.get(axum::http::header::HOST).and_then(|h| h.to_str().ok()).unwrap_or("localhost");
            format!("http://{host}")
        }
    };
    let path = format!("{base}/ical/{file}");
    show(&state, &viewer, StatusCode::OK, Extra { feed_path: Some(path), ..Extra::default() }).await
}

pub async fn feed_revoke(State(state): State<AppState>, viewer: Viewer, _form: Form) -> PageResult {
    crate::crm::ical_feed::revoke(&state.scope(&viewer.user)).await?;
    Ok(see_other("/settings?notice=saved#h-feed"))
}

fn saved_notify() -> PageResult {
    Ok(see_other("/settings?notice=saved#h-notify"))
}

pub async fn notify_email(State(state): State<AppState>, viewer: Viewer, form: Form) -> PageResult {
    let input = EmailInput { enabled: form.get("enabled") == "true" };
    match channels::set_email(&state.notify, viewer.user.id.0, input).await {
        Ok(_) => saved_notify(),
        Err(e) => refused(&state, &viewer, "notify", e).await,
    }
}

pub async fn notify_ntfy(State(state): State<AppState>, viewer: Viewer, form: Form) -> PageResult {
    // An empty token field keeps the stored token; the box removes it.
    let token = match (form.get("token"), form.has("clear_token")) {
        (_, true) => Some(String::new()),
        (t, false) if t.is_empty() => None,
        (t, false) => Some(t),
    };
    let input = NtfyInput { url: form.get("url"), topic: form.get("topic"), token };
    match channels::set_ntfy(&state.notify, viewer.user.id.0, input).await {
        Ok(_) => saved_notify(),
        Err(e) => refused(&state, &viewer, "notify", e).await,
    }
}

pub async fn notify_gotify(State(state): State<AppState>, viewer: Viewer, form: Form) -> PageResult {
    let token = Some(form.get("token")).filter(|t| !t.is_empty());
    let input = GotifyInput { url: form.get("url"), token };
    match channels::set_gotify(&state.notify, viewer.user.id.0, input).await {
        Ok(_) => saved_notify(),
        Err(e) => refused(&state, &viewer, "notify", e).await,
    }
}

fn channel_of(name: &str) -> Option<Channel> {
    match name {
        "email" => Some(Channel::Email),
        "ntfy" => Some(Channel::Ntfy),
        "gotify" => Some(Channel::Gotify),
        "webpush" => Some(Channel::Webpush),
        _ => None,
    }
}

pub async fn notify_remove(
    State(state): State<AppState>,
    viewer: Viewer,
    Path(name): Path<String>,
    _form: Form,
) -> PageResult {
    let channel = channel_of(&name).ok_or(ApiError::NotFound)?;
    match channels::clear(&state.notify, viewer.user.id.0, channel).await {
        Ok(_) | Err(crate::crm::Error::NotFound) => Ok(see_other("/settings?notice=deleted#h-notify")),
        Err(e) => Err(ApiError::from(e).into()),
    }
}

pub async fn notify_test(
    State(state): State<AppState>,
    viewer: Viewer,
    Path(name): Path<String>,
    _form: Form,
) -> PageResult {
    let channel = channel_of(&name).ok_or(ApiError::NotFound)?;
    match channels::send_test(&state.notify, viewer.user.id.0, channel).await {
        Ok(_) => Ok(see_other("/settings?notice=test_queued#h-notify")),
        Err(e) => refused(&state, &viewer, "notify", e).await,
    }
}

pub async fn notify_unsubscribe(
    State(state): State<AppState>,
    viewer: Viewer,
    Path(id): Path<u64>,
    _form: Form,
) -> PageResult {
    match webpush::unsubscribe(&state.notify, viewer.user.id.0, id).await {
        Ok(()) | Err(crate::crm::Error::NotFound) => Ok(see_other("/settings?notice=deleted#h-notify")),
        Err(e) => Err(ApiError::from(e).into()),
    }
}
