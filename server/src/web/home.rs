//! The dashboard: what a person opens every morning. Birthdays, reminders due (complete from
//! here), overdue keep-in-touch cadences, reach-out suggestions (accept or dismiss), favourites
//! and a few random people, all from `crm::home::dashboard`, one read.

use axum::extract::{Path, Query, State};
use maud::{Markup, html};
use serde::Deserialize;

use super::format;
use super::page::{Form, PageResult, Viewer, notice, page, see_other, shell};
use crate::crm::contact::view::ContactSummary;
use crate::crm::home;
use crate::crm::reach_out::ops as suggestions;
use crate::state::AppState;

#[derive(Debug, Default, Deserialize)]
pub struct NoticeQuery {
    notice: Option<String>,
}

/// A contact's name as a link to their page.
pub fn contact_link(id: u64, name: &str) -> Markup {
    html! { a href={ "/contacts/" (id) } { (name) } }
}

pub fn people(list: &[ContactSummary]) -> Markup {
    html! {
        ul class="people" {
            @for c in list {
                li { (contact_link(c.id, &c.name)) @if !c.org.is_empty() { span class="muted" { " · " (c.org) } } }
            }
        }
    }
}

pub async fn dashboard(State(state): State<AppState>, viewer: Viewer, Query(q): Query<NoticeQuery>) -> PageResult {
    let (today, now) = (viewer.today, state.engine.clock().now());
    let d = state.read(&viewer.user, move |v| home::dashboard(v, today, now)).await?;
    let c = viewer.chrome();
    let t = |k| viewer.t(k);
    let fmt = |text: &str| format::rest_date(viewer.lang, c.date_format, text);
    let main = html! {
        h1 { (t("dashboard.title")) }
        div class="grid" {
            section class="card" aria-labelledby="h-reminders" {
                h2 id="h-reminders" { (t("dashboard.reminders")) }
                @if d.upcoming_reminders.is_empty() { p class="muted" { (t("dashboard.no_reminders")) } }
                ul class="items" {
                    @for r in &d.upcoming_reminders {
                        li class=[r.overdue.unwrap_or(false).then_some("overdue")] {
                            span { (r.message) }
                            " "
                            span class="muted" {
                                (fmt(&r.date))
                                @if let Some(name) = &r.contact_name { " · " (contact_link(r.contact_id, name)) }
                            }
                            (c.button_form(&format!("/reminders/{}/complete?back=/", r.id), t("reminders.complete"), "small", None))
                        }
                    }
                }
                p { a href="/reminders" { (t("dashboard.all_reminders")) } }
            }
            section class="card" aria-labelledby="h-birthdays" {
                h2 id="h-birthdays" { (t("dashboard.birthdays")) }
                @if d.birthdays.is_empty() { p class="muted" { (t("dashboard.no_birthdays")) } }
                ul class="items" {
                    @for b in &d.birthdays {
                        li {
                            (contact_link(b.contact_id, &b.name)) " "
                            span class="muted" {
                                (fmt(&b.date))
                                @if b.days_until == 0 { " · " (t("dashboard.today")) }
                                @else { " · " (viewer.lang.f("dashboard.in_days", &[("days", &b.days_until.to_string())])) }
                                @if let Some(age) = b.age { " · " (viewer.lang.f("dashboard.turns", &[("age", &age.to_string())])) }
                            }
                        }
                    }
                }
            }
            section class="card" aria-labelledby="h-overdue" {
                h2 id="h-overdue" { (t("dashboard.overdue")) }
                p { a href="/cadence" { (t("cadence.title")) } }
                @if d.overdue.is_empty() { p class="muted" { (t("dashboard.no_overdue")) } }
                ul class="items" {
                    @for o in &d.overdue {
                        li {
                            (contact_link(o.contact_id, &o.contact_name)) " "
                            span class="muted" { (viewer.lang.f("dashboard.overdue_by", &[("days", &o.health.overdue_by.to_string())])) }
                        }
                    }
                }
            }
            section class="card" aria-labelledby="h-suggestions" {
                h2 id="h-suggestions" { (t("dashboard.suggestions")) }
                @if d.reach_out_suggestions.is_empty() { p class="muted" { (t("dashboard.no_suggestions")) } }
                ul class="items" {
                    @for s in &d.reach_out_suggestions {
                        li {
                            (contact_link(s.contact_id, &s.contact_name)) " "
                            span class="muted" { (suggestion_reason(&viewer, s)) }
                            (c.button_form(&format!("/suggestions/{}/accept", s.id), t("dashboard.accept"), "small", None))
                            (c.button_form(&format!("/suggestions/{}/dismiss", s.id), t("dashboard.dismiss"), "small secondary", None))
                        }
                    }
                }
            }
            section class="card" aria-labelledby="h-favorites" {
                h2 id="h-favorites" { (t("dashboard.favorites")) }
                @if d.favorites.is_empty() { p class="muted" { (t("dashboard.no_favorites")) } }
                (people(&d.favorites))
            }
            section class="card" aria-labelledby="h-random" {
                h2 id="h-random" { (t("dashboard.random")) }
                @if d.random_contacts.is_empty() {
                    p class="muted" { (t("dashboard.empty_book")) " " a href="/contacts/new" { (t("contacts.new")) } }
                }
                (people(&d.random_contacts))
            }
        }
    };
    Ok(page(shell(&c, t("dashboard.title"), notice(q.notice.as_deref()), main)))
}

fn suggestion_reason(viewer: &Viewer, s: &suggestions::SuggestionView) -> String {
    match s.kind.as_str() {
        "cadence_overdue" => viewer.t("suggestion.cadence").to_string(),
        _ => viewer.lang.f("suggestion.changed", &[("old", &s.old_value), ("new", &s.new_value)]),
    }
}

/// Accepts a reach-out suggestion: a reminder for tomorrow, as the API's default.
pub async fn accept_suggestion(
    State(state): State<AppState>,
    viewer: Viewer,
    Path(id): Path<u64>,
    _form: Form,
) -> PageResult {
    suggestions::accept(&state.scope(&viewer.user), id, viewer.today, Default::default()).await?;
    Ok(see_other("/?notice=saved"))
}

pub async fn dismiss_suggestion(
    State(state): State<AppState>,
    viewer: Viewer,
    Path(id): Path<u64>,
    _form: Form,
) -> PageResult {
    suggestions::dismiss(&state.scope(&viewer.user), id).await?;
    Ok(see_other("/?notice=saved"))
}
