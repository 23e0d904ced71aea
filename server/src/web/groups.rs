//! Circles and tags: each with how many people carry it (a link to them), created empty,
//! renamed or removed from everyone at once (`crm::groups::ops`, one transaction each).

use axum::extract::{Query, State};
use maud::{Markup, html};
use serde::Deserialize;

use super::page::{Form, PageResult, Viewer, WebError, encode, field_error, notice, page, page_with, see_other, shell};
use crate::crm::groups::Group;
use crate::crm::groups::ops::{self, GroupFilter, GroupView, Target};
use crate::error::ApiError;
use crate::state::AppState;

#[derive(Debug, Default, Deserialize)]
pub struct GroupsQuery {
    notice: Option<String>,
}

fn section(viewer: &Viewer, group: &str, filter: &str, title: &'static str, list: &[GroupView]) -> Markup {
    let c = viewer.chrome();
    let t = |k| viewer.t(k);
    html! {
        section class="card" aria-labelledby={ "h-" (group) } {
            h2 id={ "h-" (group) } { (t(title)) }
            @if list.is_empty() { p class="muted" { (t("groups.none")) } }
            ul class="items" {
                @for (i, g) in list.iter().enumerate() {
                    li {
                        a href={ "/contacts?" (filter) "=" (encode(&g.name)) } { (g.name) } " "
                        span class="muted" { (viewer.lang.f("groups.people", &[("count", &g.count.to_string())])) }
                        details {
                            summary { (t("groups.rename")) }
                            form method="post" action="/groups" class="stack" {
                                (c.csrf_field())
                                input type="hidden" name="group" value=(group);
                                input type="hidden" name="from" value=(g.name);
                                label for={ (group) "-to-" (i) } { (t("groups.new_name")) }
                                input id={ (group) "-to-" (i) } name="to" required maxlength="200" value=(g.name);
                                button type="submit" { (t("groups.rename")) }
                            }
                        }
                        form method="post" action="/groups" class="inline" data-confirm=(viewer.lang.f("groups.remove_confirm", &[("name", &g.name)])) {
                            (c.csrf_field())
                            input type="hidden" name="group" value=(group);
                            input type="hidden" name="from" value=(g.name);
                            button type="submit" class="small danger" { (t("groups.remove")) }
                        }
                    }
                }
            }
            form method="post" action="/groups" class="inline" {
                (c.csrf_field())
                input type="hidden" name="group" value=(group);
                input type="hidden" name="create" value="1";
                label for={ (group) "-new" } { (t("groups.new")) }
                input id={ (group) "-new" } name="to" required maxlength="200";
                button type="submit" { (t("groups.create")) }
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
    let scope = state.scope(&viewer.user);
    let circles = ops::list_ensured(&scope, Group::Circle, GroupFilter::default()).await?.groups;
    let tags = ops::list_ensured(&scope, Group::Tag, GroupFilter::default()).await?.groups;
    let c = viewer.chrome();
    let main = html! {
        h1 { (viewer.t("groups.title")) }
        p class="hint" { (viewer.t("groups.hint")) }
        @if let Some(e) = error { p class="error" role="alert" { (e) } }
        div class="grid" {
            (section(viewer, "circle", "circle", "groups.circles", &circles))
            (section(viewer, "tag", "tag", "groups.tags", &tags))
        }
    };
    Ok(shell(&c, viewer.t("groups.title"), notice_key, main))
}

pub async fn index(State(state): State<AppState>, viewer: Viewer, Query(q): Query<GroupsQuery>) -> PageResult {
    Ok(page(render(&state, &viewer, None, notice(q.notice.as_deref())).await?))
}

/// Creates (`create`), renames (`to` given) or removes (no `to`) a circle or tag, on every
/// contact carrying it.
pub async fn change(State(state): State<AppState>, viewer: Viewer, form: Form) -> PageResult {
    let group = match form.get("group").as_str() {
        "circle" => Group::Circle,
        "tag" => Group::Tag,
        _ => return Err(WebError::Api(ApiError::invalid_input("group", "must be circle or tag"))),
    };
    let scope = state.scope(&viewer.user);
    let from = Target::Name(form.get("from"));
    let done = if form.has("create") {
        ops::create(&scope, group, &form.get("to")).await.map(|_| ())
    } else if form.has("to") {
        ops::rename(&scope, group, from, &form.get("to")).await.map(|_| ())
    } else {
        ops::delete(&scope, group, from).await.map(|_| ())
    };
    match done {
        Ok(_) => Ok(see_other("/groups?notice=saved")),
        Err(e) => match ApiError::from(e) {
            e @ (ApiError::Validation { .. } | ApiError::InvalidInput { .. } | ApiError::AlreadyExists { .. }) => {
                let (status, message) = field_error(viewer.lang, &e);
                Ok(page_with(status, render(&state, &viewer, Some(&message), None).await?))
            }
            e => Err(e.into()),
        },
    }
}
