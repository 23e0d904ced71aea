//! The reminders page (every reminder, soonest first, overdue marked) and completing one from
//! any page (`crm::reminder::ops::complete`: a one-off is done, a recurring one moves on).

use axum::extract::{Path, Query, State};
use maud::html;
use serde::Deserialize;

use super::format;
use super::home::contact_link;
use super::page::{Form, PageResult, Viewer, notice, page, see_other, shell};
use crate::crm::contact::Contact;
use crate::crm::{reminder::ops as reminders, reminder::ops::ReminderView};
use crate::state::AppState;

#[derive(Debug, Default, Deserialize)]
pub struct ListQuery {
    notice: Option<String>,
}

pub async fn list(State(state): State<AppState>, viewer: Viewer, Query(q): Query<ListQuery>) -> PageResult {
    let today = viewer.today;
    let rows = state
        .read(&viewer.user, move |v| {
            Ok(reminders::all(v)?
                .iter()
                .map(|r| {
                    let name = v.get::<Contact>(r.body.contact_id).map(|c| c.body.name()).ok();
                    ReminderView::of(r, Some(today), name)
                })
                .collect::<Vec<_>>())
        })
        .await?;
    let c = viewer.chrome();
    let t = |k| viewer.t(k);
    let main = html! {
        h1 { (t("reminders.title")) }
        @if rows.is_empty() { p class="muted" { (t("reminders.none")) } }
        table class="list" {
            thead { tr { th scope="col" { (t("reminders.date")) } th scope="col" { (t("reminders.message")) } th scope="col" { (t("reminders.contact")) } th scope="col" { span class="visually-hidden" { (t("reminders.actions")) } } } }
            tbody {
                @for r in &rows {
                    tr class=[r.overdue.unwrap_or(false).then_some("overdue")] {
                        td { (format::rest_date(viewer.lang, c.date_format, &r.date)) @if r.overdue.unwrap_or(false) { " " span class="badge" { (t("reminders.overdue")) } } }
                        td { (r.message) }
                        td { @if let Some(name) = &r.contact_name { (contact_link(r.contact_id, name)) } }
                        td { (c.button_form(&format!("/reminders/{}/complete?back=/reminders", r.id), t("reminders.complete"), "small", None)) }
                    }
                }
            }
        }
    };
    Ok(page(shell(&c, t("reminders.title"), notice(q.notice.as_deref()), main)))
}

#[derive(Debug, Default, Deserialize)]
pub struct BackQuery {
    back: Option<String>,
}

/// Where to go after an action: a path on this site, else the dashboard.
pub fn back_to(back: Option<&str>) -> String {
    match back {
        Some(b) if b.starts_with('/') && !b.starts_with("//") && !b.starts_with("/\\") => b.to_string(),
        _ => "/".to_string(),
    }
}

pub async fn complete(
    State(state): State<AppState>,
    viewer: Viewer,
    Path(id): Path<u64>,
    Query(q): Query<BackQuery>,
    _form: Form,
) -> PageResult {
    reminders::complete(&state.scope(&viewer.user), id, viewer.today, false).await?;
    let back = back_to(q.back.as_deref());
    let sep = if back.contains('?') { '&' } else { '?' };
    Ok(see_other(&format!("{back}{sep}notice=saved")))
}
