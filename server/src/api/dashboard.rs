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
    /// The previous page's `next_cursor` (the same as `before`; the existing clients' name).
    #[param(value_type = Option<crate::crm::schema::DayOrInstantOrBlank>)]
    pub cursor: Option<String>,
    /// Only entries of these types, comma separated: `note`, `activity`,
    /// `reminder_completion` (or `completion`), `gift`, `life_event`, `external_activity`.
    #[param(
        pattern = "^((note|activity|reminder_completion|completion|gift|life_event|external_activity)(,(note|activity|reminder_completion|completion|gift|life_event|external_activity))*)?$"
    )]
    pub r#type: Option<String>,
    /// Only recent entries: `last_7_days`, `last_30_days`, `last_90_days`, `this_year`, or
    /// `all` (the default).
    #[param(pattern = "^(all|last_7_days|last_30_days|last_90_days|this_year)?$")]
    pub bucket: Option<String>,
}

const TYPES: &str = "note, activity, reminder_completion (or completion), gift, life_event or external_activity";

/// A contact's history, newest first, paged by `before` (a page ends only between instants).
#[utoipa::path(get, path = "/api/v1/contacts/{id}/timeline", tag = "contacts", params(("id" = u64, Path), TimelineQuery), responses(
    (status = 200, body = home::Timeline, description = "`{timeline: [{type, date, item}], next_before}` and, for the existing clients, `{items: [{type, id, date, data}], next_cursor, limit}` (which also hold life events without a year); the next-page values are empty on the last page"),
    (status = 400, description = "A bad `before`, `cursor`, `type` or `bucket`, named"), (status = 404, description = "No such contact")))]
pub async fn timeline(
    State(state): State<AppState>,
    user: AuthUser,
    Path(id): Path<u64>,
    Query(q): Query<TimelineQuery>,
) -> Result<axum::Json<home::Timeline>, ApiError> {
    let limit = params::limit(q.limit.as_deref());
    let before = match crate::crm::calendar::instant_or_blank("before", q.before.as_deref())? {
        Some(b) => Some(b),
        None => crate::crm::calendar::instant_or_blank("cursor", q.cursor.as_deref())?,
    };
    let mut only = Vec::new();
    for token in q.r#type.as_deref().unwrap_or("").split(',').map(str::trim).filter(|t| !t.is_empty()) {
        match home::TimelineType::parse(token) {
            Some(t) => only.push(t),
            None => return Err(ApiError::invalid_input("type", format!("each type must be one of {TYPES}"))),
        }
    }
    let today = state.today();
    let now = state.engine.clock().now();
    let since = match q.bucket.as_deref().map(str::trim).unwrap_or("") {
        "" | "all" => None,
        "last_7_days" => Some(now - jiff::SignedDuration::from_hours(7 * 24)),
        "last_30_days" => Some(now - jiff::SignedDuration::from_hours(30 * 24)),
        "last_90_days" => Some(now - jiff::SignedDuration::from_hours(90 * 24)),
        "this_year" => Some(crate::crm::calendar::midnight(jiff::civil::date(today.year(), 1, 1))),
        _ => {
            return Err(ApiError::invalid_input(
                "bucket",
                "must be all, last_7_days, last_30_days, last_90_days or this_year",
            ));
        }
    };
    let request = home::TimelineRequest { before, since, limit, only, today: Some(today) };
    let body = state.read(&user, move |v| home::timeline(v, id, &request)).await?;
    Ok(axum::Json(body))
}
