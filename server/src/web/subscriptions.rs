//! Subscriptions in the browser (`/settings/subscriptions`): the user's remote address books and
//! calendars with the sync's health (status, last success, last failure and why, a stop that
//! needs action, what the last sync did and what it skipped), forms to add and edit one, and
//! buttons to sync now, test the connection and delete. Every action is a `sync::ops` operation
//! (or the sync job) the JSON API calls too.

use axum::extract::{Path, Query, State};
use axum::http::StatusCode;
use maud::{Markup, html};
use mycorrhizal_engine::system::Trigger;
use serde::Deserialize;

use super::console::when;
use super::page::{Form, PageResult, Viewer, field_error, page_with, see_other, shell};
use crate::error::ApiError;
use crate::state::AppState;
use crate::sync::Source;
use crate::sync::ops::{self, SubscriptionInput, SubscriptionView};
use crate::sync::run::Attempt;

#[derive(Debug, Default, Deserialize)]
pub struct PageQuery {
    notice: Option<String>,
}

fn tone(status: &str) -> &'static str {
    match status {
        "ok" => "status ok",
        "failing" | "syncing" => "status warn",
        "stopped" => "status bad",
        _ => "status",
    }
}

fn source_of(form: &Form) -> Source {
    if form.get("source") == "calendar" { Source::Calendar } else { Source::AddressBook }
}

fn source_word(source: Source) -> &'static str {
    match source {
        Source::AddressBook => "address_book",
        Source::Calendar => "calendar",
    }
}

/// What the page says after an action: a message (and whether it is an error).
struct Said {
    message: String,
    error: bool,
}

fn subscription(c: &super::page::Chrome<'_>, viewer: &Viewer, s: &SubscriptionView) -> Markup {
    let t = |k| viewer.t(k);
    let base = format!("/settings/subscriptions/{}", s.id);
    let counts = &s.last_counts;
    html! {
        article class="card" aria-labelledby=(format!("sub-{}", s.id)) {
            h3 id=(format!("sub-{}", s.id)) { (s.name) }
            p { code { (s.url) } }
            p { span class=(tone(s.status)) { (s.status_text) } }
            dl class="facts" {
                dt { (t("subs.last_success")) } dd { (when(s.last_success_at)) }
                @if s.last_failure_at.is_some() {
                    dt { (t("subs.last_failure")) } dd { (when(s.last_failure_at)) @if !s.last_sync_error.is_empty() { " — " (s.last_sync_error) } }
                }
                @if s.incident_first_failure_at.is_some() {
                    dt { (t("subs.failing_since")) } dd { (when(s.incident_first_failure_at)) }
                }
                @if s.next_sync_at.is_some() { dt { (t("subs.next_sync")) } dd { (when(s.next_sync_at)) } }
                dt { (t("subs.last_counts")) }
                dd { (viewer.lang.f("subs.counts", &[
                    ("created", &counts.created.to_string()), ("updated", &counts.updated.to_string()),
                    ("deleted", &counts.deleted.to_string()), ("kept", &counts.kept.to_string()),
                    ("skipped", &counts.skipped.to_string()),
                ])) }
            }
            @if !s.skipped.is_empty() {
                details {
                    summary { (t("subs.skipped")) }
                    ul { @for skip in &s.skipped { li { code { (skip.href) } " — " (skip.reason) } } }
                }
            }
            div class="actions" {
                (c.button_form(&format!("{base}/sync?source={}", source_word(s.source)), t("subs.sync_now"), "", None))
                (c.button_form(&format!("{base}/test?source={}", source_word(s.source)), t("subs.test"), "", None))
                (c.button_form(&format!("{base}/delete?source={}", source_word(s.source)), t("subs.delete"), "danger", Some(t("subs.delete_confirm"))))
            }
            details {
                summary { (t("subs.edit")) }
                (form_of(c, viewer, s.source, Some(s)))
            }
        }
    }
}

fn form_of(c: &super::page::Chrome<'_>, viewer: &Viewer, source: Source, s: Option<&SubscriptionView>) -> Markup {
    let t = |k| viewer.t(k);
    let (action, id) = match s {
        Some(s) => (format!("/settings/subscriptions/{}/edit", s.id), s.id.to_string()),
        None => ("/settings/subscriptions".to_string(), format!("new-{}", source_word(source))),
    };
    html! {
        form method="post" action=(action) class="stack" {
            (c.csrf_field())
            input type="hidden" name="source" value=(source_word(source));
            div class="row" {
                div { label for=(format!("name-{id}")) { (t("subs.name")) }
                    input id=(format!("name-{id}")) name="name" required maxlength="100" value=[s.map(|s| s.name.as_str())]; }
                div { label for=(format!("url-{id}")) { (t("subs.url")) }
                    input id=(format!("url-{id}")) name="url" type="url" required maxlength="2048" value=[s.map(|s| s.url.as_str())]; }
            }
            div class="row" {
                div { label for=(format!("user-{id}")) { (t("subs.username")) }
                    input id=(format!("user-{id}")) name="username" maxlength="200" autocomplete="off" value=[s.map(|s| s.username.as_str())]; }
                div { label for=(format!("pw-{id}")) { (t("subs.password")) }
                    input id=(format!("pw-{id}")) name="password" type="password" maxlength="500" autocomplete="new-password"; }
            }
            @if source == Source::Calendar {
                div class="row" {
                    div { label for=(format!("past-{id}")) { (t("subs.past_days")) }
                        input id=(format!("past-{id}")) name="past_days" type="number" min="0" max="3650" value=(s.and_then(|s| s.past_days).unwrap_or(30)); }
                    div { label for=(format!("future-{id}")) { (t("subs.future_days")) }
                        input id=(format!("future-{id}")) name="future_days" type="number" min="0" max="3650" value=(s.and_then(|s| s.future_days).unwrap_or(365)); }
                }
            }
            @if s.is_some_and(|s| s.has_password) {
                label { input type="checkbox" name="clear_password" value="1"; " " (t("subs.clear_password")) }
                p class="hint" { (t("subs.password_kept")) }
            }
            label { input type="checkbox" name="sync_enabled" value="1" checked[s.is_none_or(|s| s.sync_enabled)]; " " (t("subs.enabled")) }
            button type="submit" { (if s.is_some() { t("subs.save") } else { t("subs.add") }) }
        }
    }
}

/// One source's subscriptions and the form that adds one.
fn section(c: &super::page::Chrome<'_>, viewer: &Viewer, source: Source, list: &[SubscriptionView]) -> Markup {
    let t = |k| viewer.t(k);
    let (id, title, hint, add) = match source {
        Source::AddressBook => ("h-books", "subs.books", "subs.books_hint", "subs.add_book"),
        Source::Calendar => ("h-calendars", "subs.calendars", "subs.calendars_hint", "subs.add_calendar"),
    };
    html! {
        section class="card wide" aria-labelledby=(id) {
            h2 id=(id) { (t(title)) }
            p class="hint" { (t(hint)) }
            @if list.is_empty() { p class="muted" { (t("subs.none")) } }
            @for s in list { (subscription(c, viewer, s)) }
            h3 { (t(add)) }
            (form_of(c, viewer, source, None))
        }
    }
}

async fn show(state: &AppState, viewer: &Viewer, status: StatusCode, said: Option<Said>) -> PageResult {
    let t = |k| viewer.t(k);
    let c = viewer.chrome();
    let (syncer, user) = (state.sync.clone(), viewer.user.id.0);
    let (books, calendars) = state
        .blocking(move |_| -> crate::crm::Result<_> {
            Ok((ops::list(&syncer, user, Source::AddressBook)?, ops::list(&syncer, user, Source::Calendar)?))
        })
        .await??;
    let main = html! {
        h1 { (t("subs.title")) }
        p { a href="/settings" { (t("settings.title")) } }
        p class="hint" { (t("subs.hint")) }
        @if let Some(said) = &said {
            p class=(if said.error { "error" } else { "notice" }) role=(if said.error { "alert" } else { "status" }) { (said.message) }
        }
        (section(&c, viewer, Source::AddressBook, &books))
        (section(&c, viewer, Source::Calendar, &calendars))
    };
    Ok(page_with(status, shell(&c, t("subs.title"), None, main)))
}

pub async fn page(State(state): State<AppState>, viewer: Viewer, Query(q): Query<PageQuery>) -> PageResult {
    let said = match q.notice.as_deref() {
        Some("saved") => Some(Said { message: viewer.t("notice.saved").into(), error: false }),
        Some("deleted") => Some(Said { message: viewer.t("notice.deleted").into(), error: false }),
        _ => None,
    };
    show(&state, &viewer, StatusCode::OK, said).await
}

async fn refused(state: &AppState, viewer: &Viewer, e: impl Into<ApiError>) -> PageResult {
    let e = e.into();
    let (status, message) = field_error(viewer.lang, &e);
    show(state, viewer, status, Some(Said { message, error: true })).await
}

fn input_of(form: &Form, edit: bool) -> Result<SubscriptionInput, ApiError> {
    let number = |field: &'static str| -> Result<Option<u32>, ApiError> {
        let raw = form.get(field);
        if raw.is_empty() {
            return Ok(None);
        }
        raw.trim()
            .parse()
            .map(Some)
            .map_err(|_| ApiError::Validation { field: field.into(), reason: "must be a number of days".into() })
    };
    let calendar = source_of(form) == Source::Calendar;
    let password = form.get("password");
    Ok(SubscriptionInput {
        name: Some(form.get("name")),
        url: Some(form.get("url")),
        username: Some(form.get("username")),
        password: (!password.is_empty() || !edit).then_some(password),
        clear_password: form.has("clear_password").then_some(true),
        sync_enabled: Some(form.has("sync_enabled")),
        past_days: if calendar { number("past_days")? } else { None },
        future_days: if calendar { number("future_days")? } else { None },
    })
}

pub async fn create(State(state): State<AppState>, viewer: Viewer, form: Form) -> PageResult {
    let source = source_of(&form);
    let input = match input_of(&form, false) {
        Ok(input) => input,
        Err(e) => return refused(&state, &viewer, e).await,
    };
    match ops::create(&state.sync, viewer.user.id.0, source, input).await {
        Ok(created) => {
            if created.sync_enabled {
                let (state, id) = (state.clone(), created.id);
                tokio::spawn(async move {
                    crate::jobs::sync_now(&state, id, source, Trigger::Manual).await;
                });
            }
            Ok(see_other("/settings/subscriptions?notice=saved"))
        }
        Err(e) => refused(&state, &viewer, e).await,
    }
}

#[derive(Debug, Default, Deserialize)]
pub struct SourceQuery {
    source: Option<String>,
}

fn source_in(q: &SourceQuery) -> Source {
    if q.source.as_deref() == Some("calendar") { Source::Calendar } else { Source::AddressBook }
}

pub async fn edit(State(state): State<AppState>, viewer: Viewer, Path(id): Path<u64>, form: Form) -> PageResult {
    let source = source_of(&form);
    let input = match input_of(&form, true) {
        Ok(input) => input,
        Err(e) => return refused(&state, &viewer, e).await,
    };
    match ops::update(&state.sync, viewer.user.id.0, source, id, input).await {
        Ok(_) => Ok(see_other("/settings/subscriptions?notice=saved")),
        Err(e) => refused(&state, &viewer, e).await,
    }
}

pub async fn delete(
    State(state): State<AppState>,
    viewer: Viewer,
    Path(id): Path<u64>,
    Query(q): Query<SourceQuery>,
    _form: Form,
) -> PageResult {
    ops::delete(&state.sync, viewer.user.id.0, source_in(&q), id).await?;
    Ok(see_other("/settings/subscriptions?notice=deleted"))
}

pub async fn sync(
    State(state): State<AppState>,
    viewer: Viewer,
    Path(id): Path<u64>,
    Query(q): Query<SourceQuery>,
    _form: Form,
) -> PageResult {
    let source = source_in(&q);
    let (syncer, user) = (state.sync.clone(), viewer.user.id.0);
    state.blocking(move |_| ops::get(&syncer, user, source, id)).await??;
    let said = match crate::jobs::sync_now(&state, id, source, Trigger::Manual).await {
        Attempt::Synced(c, _) => Said {
            message: viewer.lang.f(
                "subs.synced",
                &[
                    ("created", &c.created.to_string()),
                    ("updated", &c.updated.to_string()),
                    ("deleted", &c.deleted.to_string()),
                    ("kept", &c.kept.to_string()),
                    ("skipped", &c.skipped.to_string()),
                ],
            ),
            error: false,
        },
        Attempt::Failed(f) => {
            let said = Said { message: viewer.lang.f("subs.sync_failed", &[("reason", &f.message)]), error: true };
            return show(&state, &viewer, StatusCode::BAD_GATEWAY, Some(said)).await;
        }
        Attempt::Busy => {
            let said = Said { message: viewer.t("subs.busy").into(), error: true };
            return show(&state, &viewer, StatusCode::CONFLICT, Some(said)).await;
        }
        Attempt::Gone => return Err(ApiError::NotFound.into()),
    };
    let status = StatusCode::OK;
    show(&state, &viewer, status, Some(said)).await
}

pub async fn test(
    State(state): State<AppState>,
    viewer: Viewer,
    Path(id): Path<u64>,
    Query(q): Query<SourceQuery>,
    _form: Form,
) -> PageResult {
    let result = ops::test(&state.sync, viewer.user.id.0, source_in(&q), id).await?;
    let said = Said { message: result.message, error: !result.ok };
    show(&state, &viewer, StatusCode::OK, Some(said)).await
}
