//! What a contact's page adds beyond notes and reminders: life events, gift ideas and gifts, the
//! conversation agenda (ticked off once discussed), and the timeline of everything that happened
//! (`crm::depth::ops`, `crm::home::timeline`, the API's own operations).

use axum::extract::{Path, Query, State};
use maud::html;
use mycorrhizal_codecs::dates::parse_rest_date;
use serde::Deserialize;

use super::contacts::refused;
use super::format;
use super::page::{Form, PageResult, Viewer, page, see_other, shell};
use super::record_forms::gift_status_key;
use crate::crm::home::{self, TimelineItem, TimelineType};
use crate::crm::{depth::ops as depth_ops, depth::ops::AgendaInput, depth::ops::GiftInput, depth::ops::LifeEventInput};
use crate::error::ApiError;
use crate::state::AppState;

fn back(id: u64, anchor: &str) -> axum::response::Response {
    see_other(&format!("/contacts/{id}?notice=saved#{anchor}"))
}

pub async fn add_life_event(
    State(state): State<AppState>,
    viewer: Viewer,
    Path(id): Path<u64>,
    form: Form,
) -> PageResult {
    let text = form.get("date");
    let date = match text.as_str() {
        "" => Some(Default::default()),
        t => parse_rest_date(t),
    };
    let Some(date) = date else {
        let e = ApiError::validation("date", "must be YYYY-MM-DD, or --MM-DD without a year");
        return refused(&state, &viewer, id, "life", form, e).await;
    };
    let input = LifeEventInput {
        entity_id: None,
        contact_id: Some(id),
        kind: form.get("type"),
        category: String::new(),
        date: Some(date),
        description: form.get("description"),
        related_entity_ids: Vec::new(),
        remind: false,
    };
    let (who, event) = input.record();
    match depth_ops::save(&state.scope(&viewer.user), None, who, event).await {
        Ok(_) => Ok(back(id, "h-life")),
        Err(e) => refused(&state, &viewer, id, "life", form, e.into()).await,
    }
}

pub async fn add_gift(State(state): State<AppState>, viewer: Viewer, Path(id): Path<u64>, form: Form) -> PageResult {
    let text = |name: &str| Some(form.get(name)).filter(|v| !v.is_empty());
    let input = GiftInput {
        entity_id: None,
        contact_id: Some(id),
        description: form.get("description"),
        status: text("status"),
        occasion: text("occasion"),
        url: None,
        notes: None,
        date: None,
        value_cents: None,
        currency: None,
    };
    let saved = match input.record() {
        Ok((who, gift)) => depth_ops::save(&state.scope(&viewer.user), None, who, gift).await.map(|_| ()),
        Err(e) => Err(e),
    };
    match saved {
        Ok(()) => Ok(back(id, "h-gifts")),
        Err(e) => refused(&state, &viewer, id, "gift", form, e.into()).await,
    }
}

pub async fn add_agenda(State(state): State<AppState>, viewer: Viewer, Path(id): Path<u64>, form: Form) -> PageResult {
    let input =
        AgendaInput { entity_id: None, contact_id: Some(id), content: form.get("content"), reference_url: None };
    let (who, item) = input.record();
    match depth_ops::save(&state.scope(&viewer.user), None, who, item).await {
        Ok(_) => Ok(back(id, "h-agenda")),
        Err(e) => refused(&state, &viewer, id, "agenda", form, e.into()).await,
    }
}

/// Ticks an agenda item off: discussed now.
pub async fn discussed(
    State(state): State<AppState>,
    viewer: Viewer,
    Path((id, item)): Path<(u64, u64)>,
    _form: Form,
) -> PageResult {
    depth_ops::discuss(&state.scope(&viewer.user), item, None).await?;
    Ok(back(id, "h-agenda"))
}

#[derive(Debug, Default, Deserialize)]
pub struct TimelineQuery {
    before: Option<String>,
}

pub async fn timeline(
    State(state): State<AppState>,
    viewer: Viewer,
    Path(id): Path<u64>,
    Query(q): Query<TimelineQuery>,
) -> PageResult {
    let before = crate::crm::calendar::instant_or_blank("before", q.before.as_deref())?;
    let (name, body) = state
        .read(&viewer.user, move |v| {
            let name = v.get::<crate::crm::contact::Contact>(id)?.body.name();
            Ok((name, home::timeline(v, id, &home::TimelineRequest { before, limit: 50, ..Default::default() })?))
        })
        .await?;
    let c = viewer.chrome();
    let t = |k| viewer.t(k);
    let zone = &state.config.reminder_timezone;
    let day = |ts: jiff::Timestamp| format::day_of(viewer.lang, c.date_format, ts, zone);
    let (entries, next) = (body.timeline, body.next_before);
    let main = html! {
        h1 { (viewer.lang.f("depth.timeline_of", &[("name", &name)])) }
        p { a href={ "/contacts/" (id) } { (t("depth.back_to_contact")) } }
        @if entries.is_empty() { p class="muted" { (t("depth.timeline_empty")) } }
        ol class="timeline" {
            @for e in &entries {
                li {
                    span class="muted" { (day(e.date)) " · " (t(entry_key(e.kind))) } br;
                    @match &e.item {
                        TimelineItem::Note(note) => { span class="pre" { (note.content) } }
                        TimelineItem::Activity(a) => { strong { (a.title) } " " (a.description) }
                        TimelineItem::ReminderCompletion(done) => { (done.message) }
                        TimelineItem::Gift(gift) => { (gift.description) " (" (t(gift_status_key(&gift.status))) ")" }
                        TimelineItem::LifeEvent(event) => { (event.kind) " " (event.description) }
                        TimelineItem::ExternalActivity(a) => {
                            @if a.source_system == "immich" && a.kind == crate::integrations::immich::APPEARANCE {
                                @let person = a.payload["person_name"].as_str().unwrap_or_default();
                                img src={ "/api/v1/immich/contacts/" (id) "/assets/" (super::page::encode(&a.external_id)) "/image" }
                                    alt=(viewer.lang.f("integrations.photo_of", &[("name", person), ("date", &day(a.occurred_at))])) width="96" height="96" loading="lazy";
                                " " (t("integrations.photo_appearance")) " · " (a.source_system)
                            } @else { (a.kind) " · " (a.source_system) }
                        }
                    }
                }
            }
        }
        @if !next.is_empty() { p { a class="button" rel="next" href={ "/contacts/" (id) "/timeline?before=" (super::page::encode(&next)) } { (t("contacts.next")) } } }
    };
    Ok(page(shell(&c, &name, None, main)))
}

fn entry_key(kind: TimelineType) -> &'static str {
    match kind {
        TimelineType::Note => "depth.entry_note",
        TimelineType::Activity => "depth.entry_activity",
        TimelineType::ReminderCompletion => "depth.entry_done",
        TimelineType::Gift => "depth.entry_gift",
        TimelineType::LifeEvent => "depth.entry_life_event",
        TimelineType::ExternalActivity => "depth.entry_external",
    }
}
