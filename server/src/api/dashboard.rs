//! The dashboard and a contact's timeline over HTTP (`crm::home`).

use crate::http::extract::{Path, Query};
use axum::extract::State;
use serde::Deserialize;

use utoipa::IntoParams;

use crate::auth::AuthUser;
use crate::crm::home;
use crate::error::ApiError;
use crate::http::params::{self};
use crate::state::AppState;

/// The soonest birthdays of the next 30 days, five random contacts, favourites, upcoming
/// reminders, overdue cadences and pending reach-out suggestions. Every member is an array.
#[utoipa::path(get, path = "/api/v1/dashboard", tag = "contacts", responses((status = 200, description = "The home screen; `birthdays` holds the soonest 25 of the next 30 days (all of them: `/contacts/birthdays?days=30`)", body = home::Dashboard)))]
pub async fn dashboard(State(state): State<AppState>, user: AuthUser) -> Result<axum::Json<home::Dashboard>, ApiError> {
    let today = state.today();
    let now = state.engine.clock().now();
    let body = state.read(&user, move |v| home::dashboard(v, today, now)).await?;
    Ok(axum::Json(body))
}

#[derive(Debug, Default, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct TimelineQuery {
    /// Page size, default 25, at most 100.
    pub limit: Option<String>,
    /// Only entries strictly before this instant (the previous page's `next_before`).
    /// Blank is the same as absent (the first page).
    #[param(value_type = Option<crate::crm::schema::DayOrInstantOrBlank>)]
    pub before: Option<String>,
    /// Only entries of this type: `note`, `activity`, `reminder_completion`, `gift` or
    /// `life_event`.
    #[param(pattern = "^(note|activity|reminder_completion|gift|life_event)?$")]
    pub r#type: Option<String>,
}

/// A contact's history, newest first, paged by `before` (a page ends only between instants).
#[utoipa::path(get, path = "/api/v1/contacts/{id}/timeline", tag = "contacts", params(("id" = u64, Path), TimelineQuery), responses(
    (status = 200, body = home::Timeline, description = "`{timeline: [{type, date, item}], next_before}` (`next_before` empty on the last page)"), (status = 400, description = "A bad `before` or `type`, named"), (status = 404, description = "No such contact")))]
pub async fn timeline(
    State(state): State<AppState>,
    user: AuthUser,
    Path(id): Path<u64>,
    Query(q): Query<TimelineQuery>,
) -> Result<axum::Json<home::Timeline>, ApiError> {
    let limit = params::limit(q.limit.as_deref());
    let before = crate::crm::calendar::instant_or_blank("before", q.before.as_deref())?;
    let only = match q.r#type.as_deref().filter(|t| !t.is_empty()) {
        None => None,
        Some(t) => Some(home::TimelineType::parse(t).ok_or_else(|| {
            ApiError::invalid_input("type", "must be note, activity, reminder_completion, gift or life_event")
        })?),
    };
    let body = state.read(&user, move |v| home::timeline(v, id, before, limit, only)).await?;
    Ok(axum::Json(body))
}
