//! The administrator's pages (an admin's browser session only, as on `/api/v1/admin`): the
//! accounts (create, make admin, reset password, reset two-factor, delete) and the rebuilds of
//! the search index and the derived contact columns. Each action is an `auth::accounts` or
//! `jobs` operation the JSON API calls too; the last-admin rule is theirs.

use axum::extract::{Path, Query, State};
use axum::http::StatusCode;
use maud::{Markup, html};
use serde::Deserialize;

use super::page::{Form, PageResult, Viewer, WebError, field_error, notice, page, page_with, see_other, shell};
use crate::auth::Via;
use crate::auth::accounts::{self, NewAccount};
use crate::auth::records::Account;
use crate::error::ApiError;
use crate::state::AppState;

/// Accounts per page.
const PAGE: usize = 50;

/// The viewer, if an admin in a browser session (API tokens are refused, as on the API).
pub(super) fn admin(viewer: &Viewer) -> Result<(), WebError> {
    if matches!(viewer.user.via, Via::ApiToken { .. }) || !viewer.user.account.is_admin {
        return Err(WebError::Api(ApiError::Forbidden(viewer.t("admin.only").into())));
    }
    Ok(())
}

#[derive(Debug, Default, Deserialize)]
pub struct AdminQuery {
    page: Option<usize>,
    notice: Option<String>,
}

fn render(
    viewer: &Viewer,
    users: &[(u64, Account)],
    total: usize,
    page_no: usize,
    error: Option<&str>,
    result: Option<&str>,
    notice_key: Option<&'static str>,
) -> Markup {
    let c = viewer.chrome();
    let t = |k| viewer.t(k);
    let pages = total.div_ceil(PAGE).max(1);
    let main = html! {
        h1 { (t("admin.title")) }
        p { a href="/admin/status" { (t("admin.console")) } }
        @if let Some(e) = error { p class="error" role="alert" { (e) } }
        @if let Some(r) = result { p class="notice" role="status" { (r) } }
        section class="card wide" aria-labelledby="h-users" {
            h2 id="h-users" { (t("admin.users")) " (" (total) ")" }
            table class="list" {
                thead { tr {
                    th scope="col" { (t("register.username")) } th scope="col" { (t("register.email")) }
                    th scope="col" { (t("admin.role")) } th scope="col" { (t("settings.two_factor")) }
                    th scope="col" { span class="visually-hidden" { (t("reminders.actions")) } }
                } }
                tbody {
                    @for (id, a) in users {
                        tr {
                            td { (a.username) }
                            td { (a.email) }
                            td { (if a.is_admin { t("admin.admin") } else { t("admin.user") }) }
                            td { (if a.totp.as_ref().is_some_and(|t| t.enabled) { t("admin.on") } else { t("admin.off") }) }
                            td {
                                (c.button_form(&format!("/admin/users/{id}/admin"), if a.is_admin { t("admin.revoke_admin") } else { t("admin.make_admin") }, "small", None))
                                @if a.totp.is_some() {
                                    (c.button_form(&format!("/admin/users/{id}/reset-2fa"), t("admin.reset_2fa"), "small", Some(t("admin.reset_2fa_confirm"))))
                                }
                                @if *id != viewer.user.id.0 {
                                    (c.button_form(&format!("/admin/users/{id}/delete"), t("admin.delete"), "small danger", Some(t("admin.delete_confirm"))))
                                }
                                details {
                                    summary { (t("admin.reset_password")) }
                                    form method="post" action={ "/admin/users/" (id) "/password" } class="stack" {
                                        (c.csrf_field())
                                        label for={ "pw-" (id) } { (t("settings.new_password")) }
                                        input id={ "pw-" (id) } name="password" type="password" autocomplete="new-password" required minlength="8";
                                        button type="submit" { (t("admin.reset_password")) }
                                    }
                                }
                            }
                        }
                    }
                }
            }
            @if pages > 1 {
                p {
                    @if page_no > 1 { a href={ "/admin?page=" (page_no - 1) } { (t("admin.previous")) } " " }
                    (viewer.lang.f("admin.page_of", &[("page", &page_no.to_string()), ("pages", &pages.to_string())]))
                    @if page_no < pages { " " a href={ "/admin?page=" (page_no + 1) } { (t("contacts.next")) } }
                }
            }
        }
        div class="grid" {
            section class="card" aria-labelledby="h-new-user" {
                h2 id="h-new-user" { (t("admin.new_user")) }
                form method="post" action="/admin/users" class="stack" {
                    (c.csrf_field())
                    label for="new-username" { (t("register.username")) }
                    input id="new-username" name="username" required maxlength="50" autocomplete="off";
                    label for="new-email" { (t("register.email")) }
                    input id="new-email" name="email" type="email" required autocomplete="off";
                    label for="new-password" { (t("register.password")) }
                    input id="new-password" name="password" type="password" required minlength="8" autocomplete="new-password";
                    label class="check" { input type="checkbox" name="is_admin" value="1"; " " (t("admin.make_admin")) }
                    button type="submit" class="primary" { (t("admin.create")) }
                }
            }
            section class="card" aria-labelledby="h-maintenance" {
                h2 id="h-maintenance" { (t("admin.maintenance")) }
                p class="hint" { (t("admin.rebuild_search_hint")) }
                (c.button_form("/admin/rebuild-search", t("admin.rebuild_search"), "", None))
                p class="hint" { (t("admin.rebuild_derived_hint")) }
                (c.button_form("/admin/rebuild-derived", t("admin.rebuild_derived"), "", None))
            }
        }
    };
    shell(&c, t("admin.title"), notice_key, main)
}

async fn show(
    state: &AppState,
    viewer: &Viewer,
    page_no: usize,
    status: StatusCode,
    error: Option<&str>,
    result: Option<&str>,
    notice_key: Option<&'static str>,
) -> PageResult {
    let (users, total) = accounts::page(&state.engine, page_no, PAGE).await?;
    Ok(page_with(status, render(viewer, &users, total, page_no, error, result, notice_key)))
}

pub async fn index(State(state): State<AppState>, viewer: Viewer, Query(q): Query<AdminQuery>) -> PageResult {
    admin(&viewer)?;
    let page_no = q.page.unwrap_or(1).max(1);
    let (users, total) = accounts::page(&state.engine, page_no, PAGE).await?;
    Ok(page(render(&viewer, &users, total, page_no, None, None, notice(q.notice.as_deref()))))
}

/// The page again with a form's error, or the error page for anything else.
async fn refused(state: &AppState, viewer: &Viewer, e: impl Into<ApiError>) -> PageResult {
    let e: ApiError = e.into();
    match e {
        ApiError::Validation { .. }
        | ApiError::InvalidInput { .. }
        | ApiError::AlreadyExists { .. }
        | ApiError::Conflict(_) => {
            let (status, message) = field_error(viewer.lang, &e);
            show(state, viewer, 1, status, Some(&message), None, None).await
        }
        e => Err(e.into()),
    }
}

pub async fn create_user(State(state): State<AppState>, viewer: Viewer, form: Form) -> PageResult {
    admin(&viewer)?;
    let new = NewAccount {
        username: form.get("username"),
        email: form.get("email"),
        password: Some(form.raw("password")),
        language: None,
        oidc: None,
        is_admin: form.has("is_admin"),
    };
    match accounts::create(&state.auth, &state.engine, new).await {
        Ok(_) => Ok(see_other("/admin?notice=created")),
        Err(e) => refused(&state, &viewer, e).await,
    }
}

pub async fn toggle_admin(
    State(state): State<AppState>,
    viewer: Viewer,
    Path(id): Path<u64>,
    _form: Form,
) -> PageResult {
    admin(&viewer)?;
    let account = accounts::get(&state.engine, id).await.map_err(ApiError::from)?;
    match accounts::set_admin(&state.engine, id, !account.is_admin).await {
        Ok(_) => Ok(see_other("/admin?notice=saved")),
        Err(e) => refused(&state, &viewer, e).await,
    }
}

pub async fn reset_password(
    State(state): State<AppState>,
    viewer: Viewer,
    Path(id): Path<u64>,
    form: Form,
) -> PageResult {
    admin(&viewer)?;
    match accounts::reset_password(&state.auth, &state.engine, id, form.raw("password")).await {
        Ok(_) => Ok(see_other("/admin?notice=saved")),
        Err(e) => refused(&state, &viewer, e).await,
    }
}

pub async fn reset_2fa(State(state): State<AppState>, viewer: Viewer, Path(id): Path<u64>, _form: Form) -> PageResult {
    admin(&viewer)?;
    accounts::reset_second_factor(&state.engine, id).await?;
    Ok(see_other("/admin?notice=saved"))
}

pub async fn delete_user(
    State(state): State<AppState>,
    viewer: Viewer,
    Path(id): Path<u64>,
    _form: Form,
) -> PageResult {
    admin(&viewer)?;
    match crate::account_removal::delete(&state.auth, &state.engine, id).await {
        Ok(()) => {
            tracing::info!(event = "account_deleted", component = "auth", user_id = id);
            Ok(see_other("/admin?notice=deleted"))
        }
        Err(e) => refused(&state, &viewer, e).await,
    }
}

pub async fn rebuild_search(State(state): State<AppState>, viewer: Viewer, _form: Form) -> PageResult {
    admin(&viewer)?;
    let report = crate::jobs::search_rebuild_now(&state).await?;
    let count: u64 = report.indexed.iter().map(|(_, n)| n).sum();
    let message = viewer.lang.f("admin.search_rebuilt", &[("count", &count.to_string())]);
    show(&state, &viewer, 1, StatusCode::OK, None, Some(&message), None).await
}

pub async fn rebuild_derived(State(state): State<AppState>, viewer: Viewer, _form: Form) -> PageResult {
    admin(&viewer)?;
    let (scanned, updated) = crate::maintenance::rebuild_derived(&state.engine).await?;
    let message =
        viewer.lang.f("admin.derived_rebuilt", &[("scanned", &scanned.to_string()), ("updated", &updated.to_string())]);
    show(&state, &viewer, 1, StatusCode::OK, None, Some(&message), None).await
}
