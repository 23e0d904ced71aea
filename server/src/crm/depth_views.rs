//! Life events, gifts and agenda items as clients read them (with the contact's uid and, for a
//! life event, its next occurrence), shared by their own routes and the contact page.

use jiff::civil::Date;
use mycorrhizal_codecs::dates::Partial;
use mycorrhizal_engine::{Row, UserView};
use serde_json::{Value, json};

use super::calendar;
use super::contact::Contact;
use super::depth::{AgendaItem, Gift, LifeEvent};

pub fn uid_of(v: &UserView, contact: u64) -> String {
    v.get::<Contact>(contact).map(|c| c.body.uid).unwrap_or_default()
}

pub fn bookkeeping<R>(row: &Row<R>, mut body: Value) -> Value {
    body["id"] = json!(row.id);
    body["revision"] = json!(row.meta.revision);
    body["etag"] = json!(row.etag().trim_matches('"'));
    body["created_at"] = json!(row.meta.created_at);
    body["updated_at"] = json!(row.meta.updated_at);
    body
}

/// The next time a month-and-day event comes round (29 February -> 1 March in other years);
/// a year-only or month-only event has none.
pub fn next_occurrence(date: &Partial, today: Date) -> Option<Date> {
    calendar::next_yearly(date.month? as i8, date.day? as i8, today)
}

pub fn life_event_view(v: &UserView, row: &Row<LifeEvent>, today: Date) -> Value {
    let e = &row.body;
    let mut out = json!({
        "entity_id": uid_of(v, e.contact_id),
        "contact_id": e.contact_id,
        "type": e.kind,
        "category": e.category,
        "date": Partial::from(e.date),
        "description": e.description,
        "related_entity_ids": e.related,
        "remind": e.remind,
    });
    if let Some(next) = next_occurrence(&e.date.into(), today) {
        out["next_occurrence"] = json!(next.to_string());
    }
    bookkeeping(row, out)
}

pub fn gift_view(v: &UserView, row: &Row<Gift>) -> Value {
    let g = &row.body;
    bookkeeping(
        row,
        json!({
            "entity_id": uid_of(v, g.contact_id),
            "contact_id": g.contact_id,
            "status": g.status,
            "occasion": g.occasion,
            "description": g.description,
            "url": g.url,
            "notes": g.notes,
            "date": g.date,
            "value_cents": g.value_cents,
            "currency": g.currency,
        }),
    )
}

pub fn agenda_view(v: &UserView, row: &Row<AgendaItem>) -> Value {
    let a = &row.body;
    bookkeeping(
        row,
        json!({
            "entity_id": uid_of(v, a.contact_id),
            "contact_id": a.contact_id,
            "content": a.content,
            "reference_url": a.reference_url,
            "discussed_at": a.discussed_at,
            "activity_id": a.activity_id,
        }),
    )
}
