//! Settings: the account, and the language and date format every page follows
//! (`auth::accounts`, the same rules as `PATCH /users/language` and `/users/date-format`).

use axum::extract::{Query, State};
use maud::html;
use serde::Deserialize;

use super::format;
use super::page::{Form, PageResult, Viewer, field_error, notice, page as html_page, page_with, see_other, shell};
use crate::auth::accounts::{self, DATE_FORMATS, LANGUAGES};
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

fn render(viewer: &Viewer, error: Option<&str>, notice_key: Option<&'static str>) -> maud::Markup {
    let c = viewer.chrome();
    let t = |k| viewer.t(k);
    let account = &viewer.user.account;
    let sample = jiff::civil::Date::constant(2026, 3, 14);
    let main = html! {
        h1 { (t("settings.title")) }
        section class="card" aria-labelledby="h-account" {
            h2 id="h-account" { (t("settings.account")) }
            dl {
                dt { (t("register.username")) } dd { (account.username) }
                dt { (t("register.email")) } dd { (account.email) }
            }
        }
        section class="card" aria-labelledby="h-preferences" {
            h2 id="h-preferences" { (t("settings.preferences")) }
            @if let Some(e) = error { p class="error" role="alert" { (e) } }
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
    };
    shell(&c, t("settings.title"), notice_key, main)
}

pub async fn page(viewer: Viewer, Query(q): Query<SettingsQuery>) -> PageResult {
    Ok(html_page(render(&viewer, None, notice(q.notice.as_deref()))))
}

pub async fn preferences(State(state): State<AppState>, viewer: Viewer, form: Form) -> PageResult {
    let id = viewer.user.id.0;
    let outcome = match accounts::set_language(&state, id, &form.get("language")).await {
        Ok(_) => accounts::set_date_format(&state, id, &form.get("date_format")).await.map(|_| ()),
        Err(e) => Err(e),
    };
    match outcome {
        Ok(()) => Ok(see_other("/settings?notice=preferences")),
        Err(e) => {
            let (status, message) = field_error(viewer.lang, &e);
            Ok(page_with(status, render(&viewer, Some(&message), None)))
        }
    }
}
