//! Finding and merging doubles in the browser, without JavaScript: `/contacts/duplicates` lists
//! the scan's pairs (why, how sure) with "not the same person" and "merge…"; `/contacts/merge`
//! shows what the kept contact will hold, field by field, with a choice for each conflict, and
//! merges. The scan, the dismissal, the preview and the merge are `crm::duplicate`'s operations,
//! the ones the JSON API calls.

use std::collections::BTreeMap;

use axum::extract::{Query, State};
use axum::http::StatusCode;
use maud::{Markup, html};
use serde::Deserialize;

use super::page::{Form, PageResult, Viewer, field_error, page, page_with, see_other, shell};
use crate::crm::duplicate::merge::{self, MergeInput, MergePreview};
use crate::crm::duplicate::ops::{self, DismissInput, DuplicateQuery, Reason};
use crate::error::ApiError;
use crate::state::AppState;

#[derive(Debug, Default, Deserialize)]
pub struct ListQuery {
    page: Option<String>,
    notice: Option<String>,
}

fn reason_key(reason: Reason) -> &'static str {
    match reason {
        Reason::Email => "dups.reason_email",
        Reason::Name => "dups.reason_name",
        Reason::Phone => "dups.reason_phone",
        Reason::SimilarNameOrganization => "dups.reason_similar_org",
        Reason::SimilarNameAddress => "dups.reason_similar_address",
    }
}

pub async fn list(State(state): State<AppState>, viewer: Viewer, Query(q): Query<ListQuery>) -> PageResult {
    let t = |k| viewer.t(k);
    let c = viewer.chrome();
    let query = DuplicateQuery { page: q.page.clone(), limit: Some("50".into()) };
    let found = state.read(&viewer.user, move |v| ops::scan(v, &query)).await?;
    let shown = |s: &crate::crm::contact::view::ContactSummary| {
        if s.name.is_empty() { t("contact.unnamed").to_string() } else { s.name.clone() }
    };
    let main = html! {
        h1 { (t("dups.title")) }
        p { a href="/contacts" { (t("contacts.title")) } }
        @if q.notice.as_deref() == Some("merged") { p class="notice" role="status" { (t("dups.merged")) } }
        @if q.notice.as_deref() == Some("dismissed") { p class="notice" role="status" { (t("dups.dismissed")) } }
        p { (viewer.lang.f("dups.found", &[("total", &found.total.to_string())])) }
        @if found.pairs.is_empty() { p class="muted" { (t("dups.none")) } }
        @for pair in &found.pairs {
            article class="card" {
                h2 {
                    a href={ "/contacts/" (pair.a.id) } { (shown(&pair.a)) } " · " a href={ "/contacts/" (pair.b.id) } { (shown(&pair.b)) }
                }
                p {
                    @for (i, r) in pair.reasons.iter().enumerate() { @if i > 0 { ", " } (t(reason_key(*r))) }
                    " — " (format!("{:.0}%", pair.confidence * 100.0))
                }
                div class="actions" {
                    a class="button" href={ "/contacts/merge?keep=" (pair.a.id) "&merge=" (pair.b.id) } { (t("dups.merge")) }
                    form method="post" action="/contacts/duplicates/dismiss" class="inline" {
                        (c.csrf_field())
                        input type="hidden" name="uid_a" value=(pair.a.uid);
                        input type="hidden" name="uid_b" value=(pair.b.uid);
                        button type="submit" { (t("dups.not_same")) }
                    }
                }
            }
        }
    };
    Ok(page(shell(&c, t("dups.title"), None, main)))
}

pub async fn dismiss(State(state): State<AppState>, viewer: Viewer, form: Form) -> PageResult {
    let input = DismissInput { uid_a: form.get("uid_a"), uid_b: form.get("uid_b") };
    ops::dismiss(&state.scope(&viewer.user), input).await?;
    Ok(see_other("/contacts/duplicates?notice=dismissed"))
}

#[derive(Debug, Default, Deserialize)]
pub struct MergeQuery {
    keep: Option<u64>,
    merge: Option<u64>,
    /// From a contact's page: who to merge it with, as typed (a name, an email, a number).
    with: Option<String>,
}

/// The contacts `text` finds, but `keep`, to choose the one to merge into `keep` (at most 20).
fn picker(viewer: &Viewer, keep: u64, keep_name: &str, text: &str, found: &[(u64, String, String)]) -> Markup {
    let c = viewer.chrome();
    let t = |k| viewer.t(k);
    let main = html! {
        h1 { (t("dups.merge_title")) }
        p { (t("dups.kept")) ": " a href={ "/contacts/" (keep) } { (keep_name) } }
        form method="get" action="/contacts/merge" class="stack" {
            input type="hidden" name="keep" value=(keep);
            label for="merge-with" { (t("dups.merge_who")) }
            input id="merge-with" name="with" type="search" value=(text) required;
            button type="submit" { (t("dups.find_other")) }
        }
        @if found.is_empty() {
            p class="muted" { (t("dups.no_match")) }
        } @else {
            p { (t("dups.pick")) }
            ul class="items" {
                @for (id, name, detail) in found {
                    li {
                        a href={ "/contacts/merge?keep=" (keep) "&merge=" (id) } { (name) }
                        @if !detail.is_empty() { " " span class="muted" { (detail) } }
                    }
                }
            }
        }
    };
    shell(&c, t("dups.merge_title"), None, main)
}

fn preview_page(viewer: &Viewer, preview: &MergePreview, error: Option<String>) -> Markup {
    let t = |k| viewer.t(k);
    let c = viewer.chrome();
    let r = &preview.resolution;
    let list = |items: &[String]| items.join(", ");
    let main = html! {
        h1 { (t("dups.merge_title")) }
        p { a href="/contacts/duplicates" { (t("dups.title")) } }
        @if let Some(message) = &error { p class="error" role="alert" { (message) } }
        p { (t("dups.merge_hint")) " "
            a href={ "/contacts/merge?keep=" (preview.merge_id) "&merge=" (preview.keep_id) } { (t("dups.swap")) } }
        p { a href={ "/contacts/" (preview.keep_id) } { (t("dups.kept")) } " · " a href={ "/contacts/" (preview.merge_id) } { (t("dups.merged_away")) } }
        form method="post" action="/contacts/merge" class="stack" {
            (c.csrf_field())
            input type="hidden" name="keep_id" value=(preview.keep_id);
            input type="hidden" name="merge_id" value=(preview.merge_id);
            table class="list" {
                thead { tr { th scope="col" { (t("dups.field")) } th scope="col" { (t("dups.value")) } } }
                tbody {
                    @for (field, value) in &r.resolved_scalars { tr { td { (field) } td { (value) } } }
                    @if !r.emails.is_empty() { tr { td { (t("dups.emails")) } td { (list(&r.emails)) } } }
                    @if !r.phones.is_empty() { tr { td { (t("dups.phones")) } td { (list(&r.phones)) } } }
                    @if !r.addresses.is_empty() { tr { td { (t("dups.addresses")) } td { (list(&r.addresses)) } } }
                    @if !r.circles.is_empty() { tr { td { (t("dups.circles")) } td { (list(&r.circles)) } } }
                    @if !r.tags.is_empty() { tr { td { (t("dups.tags")) } td { (list(&r.tags)) } } }
                }
            }
            @for conflict in &r.conflicts {
                fieldset {
                    legend { (conflict.label) }
                    label { input type="radio" name={ "choose_" (conflict.field) } value=(conflict.keeper_value) checked; " " (conflict.keeper_value) }
                    label { input type="radio" name={ "choose_" (conflict.field) } value=(conflict.loser_value); " " (conflict.loser_value) }
                }
            }
            @if !preview.association_counts.is_empty() {
                p { (t("dups.moves")) " "
                    (preview.association_counts.iter().map(|(k, n)| format!("{n} {k}")).collect::<Vec<_>>().join(", ")) }
            }
            button type="submit" class="primary" { (t("dups.merge_now")) }
        }
    };
    shell(&c, t("dups.merge_title"), None, main)
}

pub async fn merge_form(State(state): State<AppState>, viewer: Viewer, Query(q): Query<MergeQuery>) -> PageResult {
    if let (Some(keep), None, Some(text)) = (q.keep, q.merge, q.with.as_deref().map(str::trim)) {
        let scope = state.scope(&viewer.user);
        let typed = text.to_string();
        let (keep_name, found) = state
            .blocking(move |_| -> crate::crm::Result<_> {
                let keep_name = scope.view()?.get::<crate::crm::contact::Contact>(keep)?.body.name();
                if typed.is_empty() {
                    return Ok((keep_name, Vec::new()));
                }
                let params = crate::crm::contact::list::ListParams {
                    search: Some(typed),
                    include_archived: true,
                    limit: 21,
                    ..Default::default()
                };
                let page = crate::crm::contact::list::list(&scope, params)?;
                let found: Vec<(u64, String, String)> = page
                    .contacts
                    .into_iter()
                    .filter(|s| s.id != keep)
                    .take(20)
                    .map(|s| {
                        let detail = [s.primary_email.as_str(), s.primary_phone.as_str()]
                            .iter()
                            .filter(|v| !v.is_empty())
                            .copied()
                            .collect::<Vec<_>>()
                            .join(" · ");
                        (s.id, s.name.clone(), detail)
                    })
                    .collect();
                Ok((keep_name, found))
            })
            .await??;
        if let [(only, _, _)] = found.as_slice() {
            return Ok(see_other(&format!("/contacts/merge?keep={keep}&merge={only}")));
        }
        return Ok(page(picker(&viewer, keep, &keep_name, text, &found)));
    }
    let (Some(keep), Some(merge)) = (q.keep, q.merge) else { return Err(ApiError::NotFound.into()) };
    let input = MergeInput { keep_id: keep, merge_id: merge, resolutions: BTreeMap::new() };
    let preview = merge::preview(&state.scope(&viewer.user), input).await?;
    Ok(page(preview_page(&viewer, &preview, None)))
}

pub async fn merge_now(State(state): State<AppState>, viewer: Viewer, form: Form) -> PageResult {
    let id = |name: &str| form.get(name).trim().parse::<u64>().ok();
    let (Some(keep), Some(merge_id)) = (id("keep_id"), id("merge_id")) else { return Err(ApiError::NotFound.into()) };
    let scope = state.scope(&viewer.user);
    let preview = merge::preview(&scope, MergeInput { keep_id: keep, merge_id, resolutions: BTreeMap::new() }).await?;
    let resolutions: BTreeMap<String, String> = preview
        .resolution
        .conflicts
        .iter()
        .map(|c| (c.field.to_string(), form.get(&format!("choose_{}", c.field))))
        .filter(|(_, v)| !v.is_empty())
        .collect();
    match merge::merge(&scope, MergeInput { keep_id: keep, merge_id, resolutions }).await {
        Ok(_) => Ok(see_other(&format!("/contacts/{keep}?notice=saved"))),
        Err(e) => {
            let e: ApiError = e.into();
            let (status, message) = field_error(viewer.lang, &e);
            let status = if status == StatusCode::OK { StatusCode::BAD_REQUEST } else { status };
            Ok(page_with(status, preview_page(&viewer, &preview, Some(message))))
        }
    }
}
