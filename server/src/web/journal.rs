//! The notes journal (notes about no one in particular, as `/api/v1/notes`) and the activities
//! log (everything done with people, newest first), each with its add form, a text filter and
//! cursor paging (`crm::note::ops::page`, `crm::activity::ops::page`). An activity logged from a contact's
//! page names that contact.

use axum::extract::{Path, Query, State};
use maud::{Markup, html};
use serde::Deserialize;

use super::format;
use super::home::contact_link;
use super::page::{Form, PageResult, Viewer, encode, notice, page, see_other, shell};
use super::record_forms::activity_form;
use crate::crm::cursor::DatedFilter;
use crate::crm::{activity::ops as activities, note::ops as notes};
use crate::state::AppState;

const PAGE: usize = 50;

#[derive(Debug, Default, Deserialize)]
pub struct ListQuery {
    q: Option<String>,
    cursor: Option<String>,
    notice: Option<String>,
}

impl ListQuery {
    fn filter(&self) -> DatedFilter {
        DatedFilter {
            search: self.q.clone().filter(|q| !q.trim().is_empty()),
            from_date: None,
            to_date: None,
            cursor: self.cursor.clone().filter(|c| !c.is_empty()),
            limit: PAGE,
            ascending: false,
        }
    }
}

fn filter_form(viewer: &Viewer, action: &str, q: &Option<String>) -> Markup {
    html! {
        form method="get" action=(action) class="filters" role="search" {
            div { label for="q" { (viewer.t("journal.filter")) } input id="q" type="search" name="q" value=(q.clone().unwrap_or_default()); }
            button type="submit" { (viewer.t("contacts.filter")) }
        }
    }
}

fn next_link(viewer: &Viewer, action: &str, q: &Option<String>, next: &str) -> Markup {
    let query = match q.as_deref().filter(|q| !q.is_empty()) {
        Some(q) => format!("?q={}&cursor={}", encode(q), encode(next)),
        None => format!("?cursor={}", encode(next)),
    };
    html! { @if !next.is_empty() { p { a class="button" rel="next" href={ (action) (query) } { (viewer.t("contacts.next")) } } } }
}

pub async fn notes_page(State(state): State<AppState>, viewer: Viewer, Query(q): Query<ListQuery>) -> PageResult {
    let filter = q.filter();
    let list = state.read(&viewer.user, move |v| notes::page(v, None, &filter)).await?;
    let c = viewer.chrome();
    let t = |k| viewer.t(k);
    let zone = &state.config.reminder_timezone;
    let main = html! {
        h1 { (t("journal.notes_title")) }
        p class="hint" { (t("journal.notes_hint")) }
        form method="post" action="/notes" class="stack card" {
            (c.csrf_field())
            label for="content" { (t("notes.content")) }
            textarea id="content" name="content" rows="3" required maxlength="5000" {}
            button type="submit" { (t("notes.add")) }
        }
        (filter_form(&viewer, "/notes", &q.q))
        @if list.notes.is_empty() { p class="muted" { (t("journal.no_notes")) } }
        @for n in &list.notes {
            article class="note" { p class="muted" { (format::day_of(viewer.lang, c.date_format, n.date, zone)) } p class="pre" { (n.content) } }
        }
        (next_link(&viewer, "/notes", &q.q, &list.next_cursor))
    };
    Ok(page(shell(&c, t("journal.notes_title"), notice(q.notice.as_deref()), main)))
}

pub async fn add_note(State(state): State<AppState>, viewer: Viewer, form: Form) -> PageResult {
    let input = notes::NoteInput { content: form.get("content"), date: None, contact_id: None };
    notes::create(&state.scope(&viewer.user), None, input, state.engine.clock().now()).await?;
    Ok(see_other("/notes?notice=saved"))
}

pub async fn activities_page(State(state): State<AppState>, viewer: Viewer, Query(q): Query<ListQuery>) -> PageResult {
    let filter = q.filter();
    let list = state.read(&viewer.user, move |v| activities::page(v, None, &filter)).await?;
    let c = viewer.chrome();
    let t = |k| viewer.t(k);
    let zone = &state.config.reminder_timezone;
    let main = html! {
        h1 { (t("journal.activities_title")) }
        (activity_form(&viewer, "/activities", None, None))
        (filter_form(&viewer, "/activities", &q.q))
        @if list.activities.is_empty() { p class="muted" { (t("contact.no_activities")) } }
        ul class="items" {
            @for a in &list.activities {
                li {
                    strong { (a.title) } " "
                    span class="muted" { (format::day_of(viewer.lang, c.date_format, a.date, zone)) @if !a.location.is_empty() { " · " (a.location) } }
                    @if !a.contacts.is_empty() {
                        br; @for (i, who) in a.contacts.iter().enumerate() { @if i > 0 { ", " } (contact_link(who.id, &who.name)) }
                    }
                    @if !a.description.is_empty() { br; (a.description) }
                }
            }
        }
        (next_link(&viewer, "/activities", &q.q, &list.next_cursor))
    };
    Ok(page(shell(&c, t("journal.activities_title"), notice(q.notice.as_deref()), main)))
}

fn activity_input(form: &Form, contact_ids: Vec<u64>) -> activities::ActivityInput {
    let text = |name: &str| Some(form.get(name)).filter(|v| !v.is_empty());
    activities::ActivityInput {
        title: form.get("title"),
        description: text("description"),
        location: text("location"),
        date: form.get("date"),
        contact_ids: Some(contact_ids),
        kind: text("type"),
        external_ref: None,
    }
}

pub async fn add_activity(State(state): State<AppState>, viewer: Viewer, form: Form) -> PageResult {
    activities::save(&state.scope(&viewer.user), None, activity_input(&form, Vec::new())).await?;
    Ok(see_other("/activities?notice=saved"))
}

/// Logs an activity with contact `id` (from the contact's page).
pub async fn add_contact_activity(
    State(state): State<AppState>,
    viewer: Viewer,
    Path(id): Path<u64>,
    form: Form,
) -> PageResult {
    match activities::save(&state.scope(&viewer.user), None, activity_input(&form, vec![id])).await {
        Ok(_) => Ok(see_other(&format!("/contacts/{id}?notice=saved#h-activities"))),
        Err(e) => super::contacts::refused(&state, &viewer, id, "activity", form, e.into()).await,
    }
}
