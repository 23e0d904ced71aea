//! Custom fields in the browser: the definitions on `/settings/fields` (listed, added with their
//! type and choices, removed with every value), and the save of a contact's values from its page
//! (the card itself is `record_forms::field_card`). Every change is a `crm::field::ops`
//! operation the JSON API calls too.

use axum::extract::{Path, Query, State};
use axum::http::StatusCode;
use maud::html;
use mycorrhizal_engine::Precondition;
use serde::Deserialize;
use serde_json::Value;

use super::page::{Form, PageResult, Viewer, field_error, page_with, see_other, shell};
use super::record_forms::field_input_name as input_name;
use crate::crm::field::ops::{self, DefinitionInput, ValueInput};
use crate::crm::field::{Constraints, INTERNAL, TYPES};
use crate::error::ApiError;
use crate::state::AppState;

#[derive(Debug, Default, Deserialize)]
pub struct PageQuery {
    notice: Option<String>,
}

/// Saves every value of the contact page's form (an empty input: no value).
pub async fn save_values(State(state): State<AppState>, viewer: Viewer, Path(id): Path<u64>, form: Form) -> PageResult {
    let defs = state.read(&viewer.user, |v| Ok(crate::crm::field::definitions(v)?)).await?;
    let given = defs
        .iter()
        .map(|d| {
            let raw = form.get(&input_name(d.id));
            let value = if d.body.constraints.multi {
                Value::Array(raw.split(';').map(str::trim).filter(|p| !p.is_empty()).map(Value::from).collect())
            } else {
                Value::String(raw)
            };
            ValueInput { field_definition_id: Some(d.id), key: None, value }
        })
        .collect();
    match ops::put_values(&state.scope(&viewer.user), id, given).await {
        Ok(_) => Ok(see_other(&format!("/contacts/{id}?notice=saved"))),
        Err(e) => super::contacts::refused(&state, &viewer, id, "fields", form, e.into()).await,
    }
}

// ---- the definitions ------------------------------------------------------------------------

async fn show(
    state: &AppState,
    viewer: &Viewer,
    status: StatusCode,
    error: Option<String>,
    notice: Option<&str>,
) -> PageResult {
    let t = |k| viewer.t(k);
    let c = viewer.chrome();
    let defs = state.read(&viewer.user, |v| Ok(crate::crm::field::definitions(v)?)).await?;
    let main = html! {
        h1 { (t("fields.title")) }
        p { a href="/settings" { (t("settings.title")) } }
        p class="hint" { (t("fields.hint")) }
        @if let Some(e) = &error { p class="error" role="alert" { (e) } }
        @if let Some(n) = notice { p class="notice" role="status" { (n) } }
        section class="card wide" aria-labelledby="h-defs" {
            h2 id="h-defs" { (t("fields.defined")) }
            @if defs.is_empty() { p class="muted" { (t("fields.none")) } }
            ul class="items" {
                @for d in &defs {
                    li {
                        strong { (d.body.label) } " "
                        span class="muted" { code { (d.body.key) } " · " (d.body.kind)
                            @if d.body.constraints.multi { " · " (t("fields.list")) }
                            @if !d.body.constraints.values.is_empty() { " · " (d.body.constraints.values.join(", ")) }
                            @if let Some(p) = d.body.vcard_property() { " · vCard " code { (p) } }
                            @if d.body.sensitivity != "normal" { " · " (d.body.sensitivity) }
                        }
                        (c.button_form(&format!("/settings/fields/{}/delete", d.id), t("fields.delete"), "small danger", Some(t("fields.delete_confirm"))))
                    }
                }
            }
            h3 { (t("fields.add")) }
            form method="post" action="/settings/fields" class="stack" {
                (c.csrf_field())
                div class="row" {
                    div { label for="f-label" { (t("fields.label")) } input id="f-label" name="label" required maxlength="200"; }
                    div { label for="f-type" { (t("fields.type")) }
                        select id="f-type" name="type" { @for kind in TYPES { option value=(kind) { (kind) } } } }
                }
                div class="row" {
                    div { label for="f-values" { (t("fields.choices")) } input id="f-values" name="values" maxlength="2000"; span class="hint" { (t("fields.choices_hint")) } }
                    div { label for="f-vcard" { (t("fields.vcard")) } input id="f-vcard" name="vcard" maxlength="60" placeholder="X-SHOE-SIZE"; }
                }
                div class="row" {
                    div { label for="f-min" { (t("fields.min")) } input id="f-min" name="min" type="number" step="any"; }
                    div { label for="f-max" { (t("fields.max")) } input id="f-max" name="max" type="number" step="any"; }
                    div { label for="f-sens" { (t("fields.sensitivity")) }
                        select id="f-sens" name="sensitivity" { @for s in crate::crm::field::SENSITIVITIES { option value=(s) { (s) } } } }
                }
                label { input type="checkbox" name="multi" value="1"; " " (t("fields.multi")) }
                button type="submit" { (t("fields.add")) }
            }
        }
    };
    Ok(page_with(status, shell(&c, t("fields.title"), None, main)))
}

pub async fn page(State(state): State<AppState>, viewer: Viewer, Query(q): Query<PageQuery>) -> PageResult {
    let notice = match q.notice.as_deref() {
        Some("saved") => Some(viewer.t("notice.saved")),
        Some("deleted") => Some(viewer.t("notice.deleted")),
        _ => None,
    };
    show(&state, &viewer, StatusCode::OK, None, notice).await
}

async fn refused(state: &AppState, viewer: &Viewer, e: impl Into<ApiError>) -> PageResult {
    let e = e.into();
    let (status, message) = field_error(viewer.lang, &e);
    show(state, viewer, status, Some(message), None).await
}

pub async fn create(State(state): State<AppState>, viewer: Viewer, form: Form) -> PageResult {
    let number = |name: &str| -> Result<Option<f64>, ApiError> {
        let raw = form.get(name);
        if raw.is_empty() {
            return Ok(None);
        }
        raw.parse().map(Some).map_err(|_| ApiError::Validation {
            field: format!("constraints.{name}"),
            reason: "must be a number".into(),
        })
    };
    let (min, max) = match (number("min"), number("max")) {
        (Ok(min), Ok(max)) => (min, max),
        (Err(e), _) | (_, Err(e)) => return refused(&state, &viewer, e).await,
    };
    let vcard = form.get("vcard");
    let input = DefinitionInput {
        label: form.get("label"),
        key: None,
        kind: form.get("type"),
        constraints: Some(Constraints {
            min,
            max,
            values: form
                .get("values")
                .split(',')
                .map(str::trim)
                .filter(|v| !v.is_empty())
                .map(str::to_string)
                .collect(),
            multi: form.has("multi"),
            ..Constraints::default()
        }),
        projection: Some(if vcard.is_empty() { INTERNAL.to_string() } else { format!("vcard:{vcard}") }),
        sensitivity: Some(form.get("sensitivity")),
        target: None,
    };
    match ops::create(&state.scope(&viewer.user), input).await {
        Ok(_) => Ok(see_other("/settings/fields?notice=saved")),
        Err(e) => refused(&state, &viewer, e).await,
    }
}

pub async fn delete(State(state): State<AppState>, viewer: Viewer, Path(id): Path<u64>, _form: Form) -> PageResult {
    ops::delete(&state.scope(&viewer.user), id, Precondition::Any).await?;
    Ok(see_other("/settings/fields?notice=deleted"))
}
