//! Composite reads: the dashboard (one call for the home screen) and a contact's timeline (notes,
//! activities, completions, dated life events and gifts in one reverse-chronological list).

use axum::extract::{Path, Query, State};
use jiff::Timestamp;
use mycorrhizal_engine::{UserView, Walk};
use serde::Deserialize;
use serde_json::{Value, json};
use utoipa::IntoParams;

use crate::auth::AuthUser;
use crate::crm::calendar;
use crate::crm::calendar::instant;
use crate::crm::contact::ops::require_contacts;
use crate::crm::contact::pick::{random_summaries, upcoming_birthdays};
use crate::crm::contact::view::ContactSummary;
use crate::crm::contact::{Contact, INDEX_FAVORITE};
use crate::crm::depth::{Gift, LifeEvent};
use crate::crm::records::{Activity, BY_CONTACT, Completion, Note, contact_range};
use crate::error::ApiError;
use crate::http::params::{self};
use crate::state::AppState;

/// How many of the next 30 days' birthdays the dashboard shows, soonest first. The home screen is
/// a glance: a large address book has thousands of birthdays a month, and the whole list is
/// `GET /contacts/birthdays?days=30`.
pub const DASHBOARD_BIRTHDAYS: usize = 25;

/// The soonest birthdays of the next 30 days, five random contacts, favourites, upcoming
/// reminders, overdue cadences and pending reach-out suggestions. Every member is an array.
#[utoipa::path(get, path = "/api/v1/dashboard", tag = "contacts", responses((status = 200, description = "`{birthdays, random_contacts, favorites, upcoming_reminders, overdue, reach_out_suggestions}`; `birthdays` holds the soonest 25 of the next 30 days (all of them: `/contacts/birthdays?days=30`)")))]
pub async fn dashboard(State(state): State<AppState>, user: AuthUser) -> Result<axum::Json<Value>, ApiError> {
    let scope = state.scope(&user);
    let today = state.today();
    let now = state.engine.clock().now();
    let body = state
        .blocking(move |_| {
            let v = scope.view()?;
            let end = today.checked_add(jiff::Span::new().days(30)).unwrap_or(today);
            // The first 50 favourite, non-archived contacts by name: their own index, in name order.
            let favorites = v.walk::<Contact>(
                Walk { index: INDEX_FAVORITE, from: "", to: None, after: None, descending: false },
                50,
                |r| r.body.favorite && !r.body.archived,
            )?;
            Ok::<_, ApiError>(json!({
                "birthdays": upcoming_birthdays(&v, today, end, DASHBOARD_BIRTHDAYS)?,
                "random_contacts": random_summaries(&v, 5)?,
                "favorites": favorites.rows.iter().map(ContactSummary::of).collect::<Vec<_>>(),
                "upcoming_reminders": crate::crm::reminders::upcoming_views(&v, today)?,
                "overdue": crate::crm::cadence::overdue(&v, now)?,
                "reach_out_suggestions": crate::crm::suggestions::views(&v, Some(crate::crm::reach_out::PENDING), now)?,
            }))
        })
        .await??;
    Ok(axum::Json(body))
}

#[derive(Debug, Default, Deserialize, IntoParams)]
pub struct TimelineQuery {
    /// Page size, default 25, at most 100.
    pub limit: Option<String>,
    /// Only entries strictly before this instant (the previous page's `next_before`).
    pub before: Option<String>,
}

fn entries(v: &UserView, contact: u64) -> Result<Vec<(Timestamp, Value)>, ApiError> {
    let (from, to) = contact_range(contact);
    let walk = Walk { index: BY_CONTACT, from: &from, to: Some(&to), after: None, descending: true };
    let mut out = Vec::new();
    for r in v.walk::<Note>(walk, usize::MAX, |_| true)?.rows {
        out.push((r.body.date, json!({ "type": "note", "date": r.body.date, "item": crate::crm::notes::view(&r) })));
    }
    for r in v.walk::<Activity>(walk, usize::MAX, |_| true)?.rows {
        out.push((
            r.body.date,
            json!({ "type": "activity", "date": r.body.date, "item": crate::crm::activities::view(&r, &[]) }),
        ));
    }
    for r in v.walk::<Completion>(walk, usize::MAX, |_| true)?.rows {
        out.push((r.body.completed_at, json!({ "type": "reminder_completion", "date": r.body.completed_at, "item": crate::crm::reminders::completion_view(&r) })));
    }
    for r in v.walk::<Gift>(walk, usize::MAX, |g| g.body.date.is_some())?.rows {
        let date = r.body.date.unwrap_or(Timestamp::UNIX_EPOCH);
        out.push((date, json!({ "type": "gift", "date": date, "item": crate::crm::depth_ops::gift_view(v, &r) })));
    }
    // The timeline shows what happened; the next yearly occurrence is not its concern.
    let epoch = jiff::civil::Date::constant(1970, 1, 1);
    for r in v.walk::<LifeEvent>(walk, usize::MAX, |e| e.body.date.year.is_some())?.rows {
        let d = r.body.date;
        let Some(day) = d
            .year
            .and_then(|y| jiff::civil::Date::new(y as i16, d.month.unwrap_or(1) as i8, d.day.unwrap_or(1) as i8).ok())
        else {
            continue;
        };
        let date = calendar::midnight(day);
        out.push((
            date,
            json!({ "type": "life_event", "date": date, "item": crate::crm::depth_ops::life_event_view(v, &r, epoch) }),
        ));
    }
    out.sort_by(|a, b| b.0.cmp(&a.0));
    Ok(out)
}

/// A contact's history, newest first, paged by `before` (a page ends only between instants).
#[utoipa::path(get, path = "/api/v1/contacts/{id}/timeline", tag = "contacts", params(("id" = u64, Path), TimelineQuery), responses(
    (status = 200, description = "`{timeline: [{type, date, item}], next_before}` (`next_before` empty on the last page)"), (status = 404, description = "No such contact")))]
pub async fn timeline(
    State(state): State<AppState>,
    user: AuthUser,
    Path(id): Path<u64>,
    Query(q): Query<TimelineQuery>,
) -> Result<axum::Json<Value>, ApiError> {
    let limit = params::limit(q.limit.as_deref());
    let before = q.before.as_deref().filter(|b| !b.is_empty()).map(|b| instant("before", b)).transpose()?;
    let scope = state.scope(&user);
    let body = state
        .blocking(move |_| {
            let v = scope.view()?;
            require_contacts(&v, &[id])?;
            let all: Vec<(Timestamp, Value)> =
                entries(&v, id)?.into_iter().filter(|(d, _)| before.is_none_or(|b| *d < b)).collect();
            // A page never ends between entries of the same instant: the next page starts strictly
            // before `next_before`, so entries sharing the last one's instant come on this page
            // (which may then hold a few more than `limit`).
            let mut cut = limit.min(all.len());
            while cut > 0 && cut < all.len() && all[cut].0 == all[cut - 1].0 {
                cut += 1;
            }
            let more = all.len() > cut;
            let page: Vec<(Timestamp, Value)> = all.into_iter().take(cut).collect();
            let next = if more { page.last().map(|(d, _)| d.to_string()).unwrap_or_default() } else { String::new() };
            Ok::<_, ApiError>(
                json!({ "timeline": page.into_iter().map(|(_, v)| v).collect::<Vec<_>>(), "next_before": next }),
            )
        })
        .await??;
    Ok(axum::Json(body))
}
