//! Sign in (with the second-factor step and the single-sign-on button), register, sign out. The
//! rules are `auth::signin`'s; these pages only ask and redirect.

use axum::extract::{Query, State};
use axum::http::StatusCode;
use axum::http::header::SET_COOKIE;
use axum::http::request::Parts;
use axum::response::{AppendHeaders, IntoResponse, Response};
use maud::{Markup, html};
use serde::Deserialize;

use super::page::{Chrome, Form, Guest, PageResult, WebError, field_error, notice, page, page_with, see_other, shell};
use crate::auth::accounts::NewAccount;
use crate::auth::signin::{self, SignIn};
use crate::error::ApiError;
use crate::http::gate::AuthRate;
use crate::state::AppState;

#[derive(Debug, Default, Deserialize)]
pub struct NextQuery {
    next: Option<String>,
    notice: Option<String>,
}

/// Only a path on this site is a place to go back to (never `//host` or a URL).
fn safe_next(next: Option<&str>) -> String {
    match next {
        Some(n) if n.starts_with('/') && !n.starts_with("//") && !n.starts_with("/\\") => n.to_string(),
        _ => "/".to_string(),
    }
}

fn login_form(c: &Chrome, state: &AppState, next: &str, identifier: &str, error: Option<&str>) -> Markup {
    let t = |k| c.lang.t(k);
    html! {
        section class="narrow" {
            h1 { (t("login.title")) }
            @if let Some(e) = error { p class="error" role="alert" { (e) } }
            form method="post" action="/login" {
                (c.csrf_field())
                input type="hidden" name="next" value=(next);
                label for="identifier" { (t("login.identifier")) }
                input id="identifier" name="identifier" type="text" autocomplete="username" required value=(identifier) autofocus;
                label for="password" { (t("login.password")) }
                input id="password" name="password" type="password" autocomplete="current-password" required;
                button type="submit" class="primary" { (t("login.submit")) }
            }
            p { a href="/forgot-password" { (t("reset.forgot_link")) } }
            @if state.oidc.is_some() {
                p { a class="button" href="/api/v1/auth/oidc/login" { (t("login.sso")) } }
            }
            @if !state.config.auth.disable_registration {
                p { (t("login.no_account")) " " a href="/register" { (t("login.register")) } }
            }
        }
    }
}

pub async fn login_page(State(state): State<AppState>, guest: Guest, Query(q): Query<NextQuery>) -> Response {
    let c = guest.chrome();
    let next = safe_next(q.next.as_deref());
    page(shell(&c, c.lang.t("login.title"), notice(q.notice.as_deref()), login_form(&c, &state, &next, "", None)))
}

pub async fn login(
    State(state): State<AppState>,
    guest: Guest,
    rate: Result<AuthRate, ApiError>,
    form: Form,
) -> PageResult {
    let c = guest.chrome();
    let next = safe_next(Some(&form.get("next")));
    let identifier = form.get("identifier");
    let outcome = match rate {
        Ok(rate) => signin::with_password(&state.auth, &state.engine, &identifier, form.raw("password"), rate.ip)
            .await
            .map_err(ApiError::from),
        Err(e) => Err(e),
    };
    match outcome {
        Ok(SignIn::Session { cookie, .. }) => Ok(([(SET_COOKIE, cookie)], see_other(&next)).into_response()),
        Ok(SignIn::SecondFactor { pending_cookie }) => {
            let to = format!("/login/second-factor?next={}", super::page::encode(&next));
            Ok(([(SET_COOKIE, pending_cookie)], see_other(&to)).into_response())
        }
        Err(e) => {
            let (status, message) = match &e {
                ApiError::InvalidCredentials => (StatusCode::UNAUTHORIZED, c.lang.t("login.invalid").to_string()),
                ApiError::RateLimited { locked: true, .. } => {
                    (StatusCode::TOO_MANY_REQUESTS, c.lang.t("login.locked").into())
                }
                ApiError::RateLimited { .. } => (StatusCode::TOO_MANY_REQUESTS, c.lang.t("error.too_many").into()),
                ApiError::Validation { .. } | ApiError::InvalidInput { .. } => field_error(c.lang, &e),
                _ => return Err(WebError::Api(e)),
            };
            let body = login_form(&c, &state, &next, &identifier, Some(&message));
            Ok(page_with(status, shell(&c, c.lang.t("login.title"), None, body)))
        }
    }
}

fn second_factor_form(c: &Chrome, next: &str, error: Option<&str>) -> Markup {
    let t = |k| c.lang.t(k);
    html! {
        section class="narrow" {
            h1 { (t("second_factor.title")) }
            p { (t("second_factor.help")) }
            @if let Some(e) = error { p class="error" role="alert" { (e) } }
            form method="post" action="/login/second-factor" {
                (c.csrf_field())
                input type="hidden" name="next" value=(next);
                label for="code" { (t("second_factor.code")) }
                input id="code" name="code" type="text" inputmode="numeric" autocomplete="one-time-code" required autofocus;
                button type="submit" class="primary" { (t("second_factor.submit")) }
            }
        }
    }
}

pub async fn second_factor_page(guest: Guest, Query(q): Query<NextQuery>) -> Response {
    let c = guest.chrome();
    let next = safe_next(q.next.as_deref());
    page(shell(&c, c.lang.t("second_factor.title"), None, second_factor_form(&c, &next, None)))
}

pub async fn second_factor(
    State(state): State<AppState>,
    guest: Guest,
    rate: Result<AuthRate, ApiError>,
    parts: Parts,
    form: Form,
) -> PageResult {
    let c = guest.chrome();
    let next = safe_next(Some(&form.get("next")));
    rate?;
    match signin::with_second_factor(
        &state.auth,
        &state.engine,
        crate::http::caller::cookie(&parts, crate::auth::session::PENDING_COOKIE),
        &form.get("code"),
    )
    .await
    .map_err(ApiError::from)
    {
        Ok((_, cookies)) => {
            let headers = AppendHeaders(cookies.into_iter().map(|c| (SET_COOKIE, c)).collect::<Vec<_>>());
            Ok((headers, see_other(&next)).into_response())
        }
        Err(ApiError::Unauthorized(_) | ApiError::TokenExpired(_)) => Ok(see_other("/login")),
        Err(e @ (ApiError::Validation { .. } | ApiError::InvalidInput { .. } | ApiError::RateLimited { .. })) => {
            let (status, _) = e.status_and_message();
            let message = c.lang.t("second_factor.wrong");
            Ok(page_with(
                status,
                shell(&c, c.lang.t("second_factor.title"), None, second_factor_form(&c, &next, Some(message))),
            ))
        }
        Err(e) => Err(e.into()),
    }
}

fn register_form(c: &Chrome, username: &str, email: &str, error: Option<&str>) -> Markup {
    let t = |k| c.lang.t(k);
    html! {
        section class="narrow" {
            h1 { (t("register.title")) }
            p { (t("register.first_admin")) }
            @if let Some(e) = error { p class="error" role="alert" { (e) } }
            form method="post" action="/register" {
                (c.csrf_field())
                label for="username" { (t("register.username")) }
                input id="username" name="username" type="text" autocomplete="username" required maxlength="50" value=(username);
                label for="email" { (t("register.email")) }
                input id="email" name="email" type="email" autocomplete="email" required value=(email);
                label for="password" { (t("register.password")) }
                input id="password" name="password" type="password" autocomplete="new-password" required minlength="8";
                p class="hint" { (t("register.password_hint")) }
                button type="submit" class="primary" { (t("register.submit")) }
            }
            p { a href="/login" { (t("register.have_account")) } }
        }
    }
}

pub async fn register_page(State(state): State<AppState>, guest: Guest) -> PageResult {
    if state.config.auth.disable_registration {
        return Err(WebError::Api(ApiError::Forbidden(guest.lang.t("register.disabled").into())));
    }
    let c = guest.chrome();
    Ok(page(shell(&c, c.lang.t("register.title"), None, register_form(&c, "", "", None))))
}

pub async fn register(
    State(state): State<AppState>,
    guest: Guest,
    rate: Result<AuthRate, ApiError>,
    form: Form,
) -> PageResult {
    let c = guest.chrome();
    let rate = rate?;
    let (username, email, password) = (form.get("username"), form.get("email"), form.raw("password"));
    let new = NewAccount {
        username: username.clone(),
        email: email.clone(),
        password: Some(password.clone()),
        language: Some(c.lang.code().to_string()),
        oidc: None,
        is_admin: false,
    };
    match signin::register(&state.auth, &state.engine, new).await.map_err(ApiError::from) {
        Ok(_) => match signin::with_password(&state.auth, &state.engine, &username, password, rate.ip).await? {
            SignIn::Session { cookie, .. } => {
                Ok(([(SET_COOKIE, cookie)], see_other("/?notice=registered")).into_response())
            }
            SignIn::SecondFactor { .. } => Ok(see_other("/login")),
        },
        Err(e @ (ApiError::Validation { .. } | ApiError::InvalidInput { .. } | ApiError::AlreadyExists { .. })) => {
            let (status, message) = match &e {
                ApiError::AlreadyExists { field } => {
                    (StatusCode::CONFLICT, c.lang.f("register.taken", &[("field", field)]))
                }
                _ => field_error(c.lang, &e),
            };
            let body = register_form(&c, &username, &email, Some(&message));
            Ok(page_with(status, shell(&c, c.lang.t("register.title"), None, body)))
        }
        Err(e) => Err(e.into()),
    }
}

/// Ends the session (the form carries the CSRF token, so another site cannot sign you out).
pub async fn logout(State(state): State<AppState>, parts: Parts, _form: Form) -> Response {
    let (cookies, sso_end) = crate::http::caller::sign_out(&state, &parts).await;
    let to = sso_end.unwrap_or_else(|| "/login?notice=signed_out".into());
    let headers = AppendHeaders(cookies.into_iter().map(|c| (SET_COOKIE, c)).collect::<Vec<_>>());
    (headers, see_other(&to)).into_response()
}

fn forgot_form(c: &Chrome, error: Option<&str>) -> Markup {
    let t = |k| c.lang.t(k);
    html! {
        section class="narrow" {
            h1 { (t("reset.forgot_title")) }
            p { (t("reset.forgot_help")) }
            @if let Some(e) = error { p class="error" role="alert" { (e) } }
            form method="post" action="/forgot-password" {
                (c.csrf_field())
                label for="email" { (t("register.email")) }
                input id="email" name="email" type="email" autocomplete="email" required autofocus;
                button type="submit" class="primary" { (t("reset.send")) }
            }
            p { a href="/login" { (t("login.title")) } }
        }
    }
}

pub async fn forgot_page(guest: Guest) -> Response {
    let c = guest.chrome();
    page(shell(&c, c.lang.t("reset.forgot_title"), None, forgot_form(&c, None)))
}

/// Sends the reset link; says the same whether or not the account exists.
pub async fn forgot(
    State(state): State<AppState>,
    guest: Guest,
    rate: Result<AuthRate, ApiError>,
    form: Form,
) -> PageResult {
    let c = guest.chrome();
    rate?;
    match signin::request_reset(&state.auth, &state.engine, &form.get("email")).await.map_err(ApiError::from) {
        Ok(()) => {
            let body = html! { section class="narrow" { h1 { (c.lang.t("reset.forgot_title")) } p role="status" { (c.lang.t("reset.sent")) } p { a href="/login" { (c.lang.t("login.title")) } } } };
            Ok(page(shell(&c, c.lang.t("reset.forgot_title"), None, body)))
        }
        Err(e @ (ApiError::Validation { .. } | ApiError::InvalidInput { .. })) => {
            let (status, message) = field_error(c.lang, &e);
            Ok(page_with(status, shell(&c, c.lang.t("reset.forgot_title"), None, forgot_form(&c, Some(&message)))))
        }
        Err(e) => Err(e.into()),
    }
}

#[derive(Debug, Default, Deserialize)]
pub struct TokenQuery {
    token: Option<String>,
}

fn reset_form(c: &Chrome, token: &str, error: Option<&str>) -> Markup {
    let t = |k| c.lang.t(k);
    html! {
        section class="narrow" {
            h1 { (t("reset.title")) }
            @if let Some(e) = error { p class="error" role="alert" { (e) } }
            form method="post" action="/reset-password" {
                (c.csrf_field())
                @if token.is_empty() {
                    label for="token" { (t("reset.token")) }
                    input id="token" name="token" required autocomplete="off";
                } @else {
                    input type="hidden" name="token" value=(token);
                }
                label for="password" { (t("settings.new_password")) }
                input id="password" name="password" type="password" autocomplete="new-password" required minlength="8" autofocus;
                p class="hint" { (t("register.password_hint")) }
                button type="submit" class="primary" { (t("reset.submit")) }
            }
        }
    }
}

pub async fn reset_page(guest: Guest, Query(q): Query<TokenQuery>) -> Response {
    let c = guest.chrome();
    page(shell(&c, c.lang.t("reset.title"), None, reset_form(&c, q.token.as_deref().unwrap_or(""), None)))
}

pub async fn reset(
    State(state): State<AppState>,
    guest: Guest,
    rate: Result<AuthRate, ApiError>,
    form: Form,
) -> PageResult {
    let c = guest.chrome();
    rate?;
    let token = form.get("token");
    match signin::confirm_reset(&state.auth, &state.engine, &token, form.raw("password")).await.map_err(ApiError::from)
    {
        Ok(()) => Ok(see_other("/login?notice=password_reset")),
        Err(e @ (ApiError::Validation { .. } | ApiError::InvalidInput { .. })) => {
            let (status, message) = field_error(c.lang, &e);
            Ok(page_with(status, shell(&c, c.lang.t("reset.title"), None, reset_form(&c, &token, Some(&message)))))
        }
        Err(e) => Err(e.into()),
    }
}
