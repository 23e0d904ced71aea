//! Keep-in-touch rhythms: the policies (a contact, or everyone in a circle or with a tag, every
//! so many days, counting the activity types named), who is overdue now, and adding or removing
//! a policy (`crm::cadence`, the API's operations). A contact's own rhythm is set from its page.

use axum::extract::{Path, Query, State};
use maud::{Markup, html};
use serde::Deserialize;

use super::home::contact_link;
use super::page::{Form, PageResult, Viewer, field_error, page, page_with, see_other, shell};
use crate::crm::contact::Contact;
use crate::crm::groups::{self, Group};
use crate::crm::{cadence::ops as cadence, cadence::ops::PolicyInput};
use crate::error::ApiError;
use crate::state::AppState;
use mycorrhizal_engine::Precondition;

#[derive(Debug, Default, Deserialize)]
pub struct CadenceQuery {
    notice: Option<String>,
}

/// The form on a contact's page: keep in touch with them every so many days.
pub fn contact_form(viewer: &Viewer, id: u64) -> Markup {
    let c = viewer.chrome();
    let t = |k| viewer.t(k);
    html! {
        details {
            summary { (t("cadence.for_contact")) }
            form method="post" action="/cadence" class="stack" {
                (c.csrf_field())
                input type="hidden" name="scope" value="contact";
                input type="hidden" name="contact_id" value=(id);
                label for="cadence-days" { (t("cadence.every_days")) }
                input id="cadence-days" name="interval_days" type="number" min="1" max="3650" value="30" required;
                button type="submit" { (t("cadence.add")) }
            }
        }
    }
}

async fn render(
    state: &AppState,
    viewer: &Viewer,
    error: Option<&str>,
    notice_key: Option<&'static str>,
) -> Result<Markup, ApiError> {
    let now = state.engine.clock().now();
    let (policies, overdue, names, circles, tags) = state
        .read(&viewer.user, move |v| {
            let policies = cadence::list(v)?;
            let names: Vec<(u64, String)> = policies
                .iter()
                .filter(|p| p.scope == "contact")
                .filter_map(|p| p.target.parse::<u64>().ok())
                .filter_map(|id| v.get::<Contact>(id).ok().map(|c| (id, c.body.name())))
                .collect();
            Ok((
                policies,
                cadence::overdue(v, now)?,
                names,
                groups::names(v, Group::Circle)?,
                groups::names(v, Group::Tag)?,
            ))
        })
        .await?;
    let c = viewer.chrome();
    let t = |k| viewer.t(k);
    let main = html! {
        h1 { (t("cadence.title")) }
        p class="hint" { (t("cadence.hint")) }
        @if let Some(e) = error { p class="error" role="alert" { (e) } }
        div class="grid" {
            section class="card" aria-labelledby="h-policies" {
                h2 id="h-policies" { (t("cadence.policies")) }
                @if policies.is_empty() { p class="muted" { (t("cadence.none")) } }
                ul class="items" {
                    @for p in &policies {
                        li {
                            @match p.scope.as_str() {
                                "contact" => {
                                    @let id = p.target.parse::<u64>().unwrap_or(0);
                                    @let name = names.iter().find(|(i, _)| *i == id).map(|(_, n)| n.as_str()).unwrap_or("?");
                                    (contact_link(id, name))
                                }
                                "circle" => { (t("contacts.circle")) ": " (p.target) }
                                _ => { (t("contacts.tag")) ": " (p.target) }
                            }
                            " " span class="muted" { (viewer.lang.f("cadence.every", &[("days", &p.interval_days.to_string())]))
                                @if !p.qualifying_types.is_empty() { " · " (p.qualifying_types.join(", ")) } }
                            (c.button_form(&format!("/cadence/{}/delete", p.id), t("groups.remove"), "small danger", Some(t("cadence.remove_confirm"))))
                        }
                    }
                }
            }
            section class="card" aria-labelledby="h-overdue-list" {
                h2 id="h-overdue-list" { (t("dashboard.overdue")) }
                @if overdue.is_empty() { p class="muted" { (t("dashboard.no_overdue")) } }
                ul class="items" {
                    @for o in &overdue {
                        li { (contact_link(o.contact_id, &o.contact_name)) " " span class="muted" { (viewer.lang.f("dashboard.overdue_by", &[("days", &o.health.overdue_by.to_string())])) } }
                    }
                }
            }
            section class="card" aria-labelledby="h-new-policy" {
                h2 id="h-new-policy" { (t("cadence.new_group")) }
                form method="post" action="/cadence" class="stack" {
                    (c.csrf_field())
                    label for="cadence-group" { (t("cadence.who")) }
                    select id="cadence-group" name="group" required {
                        @for name in &circles { option value={ "circle:" (name) } { (t("contacts.circle")) ": " (name) } }
                        @for name in &tags { option value={ "tag:" (name) } { (t("contacts.tag")) ": " (name) } }
                    }
                    label for="cadence-interval" { (t("cadence.every_days")) }
                    input id="cadence-interval" name="interval_days" type="number" min="1" max="3650" value="90" required;
                    label for="cadence-types" { (t("cadence.types")) }
                    input id="cadence-types" name="qualifying_types" placeholder="call, meal";
                    p class="hint" { (t("cadence.types_hint")) }
                    button type="submit" { (t("cadence.add")) }
                }
            }
        }
    };
    Ok(shell(&c, t("cadence.title"), notice_key, main))
}

pub async fn index(State(state): State<AppState>, viewer: Viewer, Query(q): Query<CadenceQuery>) -> PageResult {
    Ok(page(render(&state, &viewer, None, super::page::notice(q.notice.as_deref())).await?))
}

pub async fn add(State(state): State<AppState>, viewer: Viewer, form: Form) -> PageResult {
    let interval_days = match form.get("interval_days").parse::<u32>() {
        Ok(days) => days,
        Err(_) => return refused(&state, &viewer, ApiError::validation("interval_days", "must be 1 to 3650")).await,
    };
    let types: Vec<String> =
        form.get("qualifying_types").split(',').map(str::trim).filter(|s| !s.is_empty()).map(str::to_string).collect();
    let (scope, contact_id, target) = match form.get("scope").as_str() {
        "contact" => ("contact".to_string(), form.get("contact_id").parse().ok(), None),
        _ => match form.get("group").split_once(':') {
            Some((kind @ ("circle" | "tag"), name)) => (kind.to_string(), None, Some(name.to_string())),
            _ => return refused(&state, &viewer, ApiError::validation("group", "choose a circle or a tag")).await,
        },
    };
    let back = if scope == "contact" { contact_id.map(|id| format!("/contacts/{id}?notice=saved")) } else { None };
    let input = PolicyInput {
        scope: Some(scope),
        contact_id,
        entity_id: None,
        target,
        interval_days: Some(interval_days),
        target_interval_days: None,
        qualifying_types: types,
    };
    match cadence::save(&state.scope(&viewer.user), None, input).await {
        Ok(_) => Ok(see_other(&back.unwrap_or_else(|| "/cadence?notice=saved".into()))),
        Err(e) => refused(&state, &viewer, e.into()).await,
    }
}

async fn refused(state: &AppState, viewer: &Viewer, e: ApiError) -> PageResult {
    match e {
        ApiError::Validation { .. } | ApiError::InvalidInput { .. } | ApiError::AlreadyExists { .. } => {
            let (status, message) = field_error(viewer.lang, &e);
            Ok(page_with(status, render(state, viewer, Some(&message), None).await?))
        }
        e => Err(e.into()),
    }
}

pub async fn delete(State(state): State<AppState>, viewer: Viewer, Path(id): Path<u64>, _form: Form) -> PageResult {
    cadence::delete(&state.scope(&viewer.user), id, Precondition::Any).await?;
    Ok(see_other("/cadence?notice=deleted"))
}
