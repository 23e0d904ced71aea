//! The contact page in one read: the contact and everything about it (latest notes, activities
//! and completions, reminders, relationships, life events, gifts, the open agenda), each
//! collection an array.

use jiff::civil::Date;
use mycorrhizal_engine::{UserView, Walk};
use serde::Serialize;
use serde_json::{Value, json};
use utoipa::ToSchema;

use super::Contact;
use super::related::projected_relations;
use super::view::ContactView;
use crate::crm::groups::{self, Group, GroupEntity};
use crate::crm::{
    Result, activity::ops as activities, note::ops as notes, relationship::ops as relationships,
    reminder::ops as reminders,
};
use crate::crm::{depth::AgendaItem, depth::Gift, depth::LifeEvent};
use crate::crm::{depth::ops::AgendaItemView, depth::ops::GiftView, depth::ops::LifeEventView};
use crate::crm::{records::BY_CONTACT, records::contact_range};

/// How many of the newest notes, activities, completions, life events and gifts come along.
const LATEST: usize = 5;

#[derive(Debug, Serialize, ToSchema)]
pub struct ContactDetail {
    pub contact: ContactView,
    /// `{custom_fields, enabled_contact_fields}` of the signed-in user.
    #[schema(value_type = Object)]
    pub user: Value,
    pub notes: Vec<notes::NoteView>,
    pub activities: Vec<activities::ActivityView>,
    pub completions: Vec<reminders::CompletionView>,
    pub reminders: Vec<reminders::ReminderView>,
    pub relationship_edges: Vec<relationships::DetailEdge>,
    pub life_events: Vec<LifeEventView>,
    pub agenda: Vec<AgendaItemView>,
    pub gifts: Vec<GiftView>,
    pub field_values: Vec<crate::crm::field::ops::ValueView>,
    #[schema(value_type = Vec<Object>)]
    pub external_identities: Vec<Value>,
    #[schema(value_type = Vec<Object>)]
    pub external_activities: Vec<Value>,
    /// `[{id, name}]` (`id` is null until the circles are listed once: see `groups::ops::ensure`).
    #[schema(value_type = Vec<Object>)]
    pub circles: Vec<Value>,
    /// `[{id, name}]`
    #[schema(value_type = Vec<Object>)]
    pub tags: Vec<Value>,
    /// Only when the user connected the photo library: `{summary}`, the linked person as the
    /// last sync saw them (`{identity, person_name, photo_count, latest_asset_id?, latest_at?}`)
    /// or null. Filled by the door (the integrations sit above this layer).
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(value_type = Option<Object>)]
    pub immich: Option<Value>,
}

/// Contact `id` with everything about it; `custom_fields` are the user's field definitions.
pub fn detail(v: &UserView, id: u64, today: Date, custom_fields: Vec<String>) -> Result<ContactDetail> {
    let row = v.get::<Contact>(id)?;
    let related = projected_relations(v, id)?;
    let (from, to) = contact_range(id);
    let per_contact =
        |descending: bool| Walk { index: BY_CONTACT, from: &from, to: Some(&to), after: None, descending };
    let life_events = v
        .walk::<LifeEvent>(per_contact(true), LATEST, |_| true)?
        .rows
        .iter()
        .map(|r| LifeEventView::of(v, r, today))
        .collect();
    let gifts = v.walk::<Gift>(per_contact(true), LATEST, |_| true)?.rows.iter().map(|r| GiftView::of(v, r)).collect();
    let agenda = v
        .walk::<AgendaItem>(per_contact(false), usize::MAX, |r| r.body.discussed_at.is_none())?
        .rows
        .iter()
        .map(|r| AgendaItemView::of(v, r))
        .collect();
    Ok(ContactDetail {
        contact: ContactView::of(&row, &related),
        user: json!({
            "custom_fields": custom_fields,
            "enabled_contact_fields": crate::crm::client_settings::enabled_contact_fields(v)?,
        }),
        notes: notes::of_contact(v, id, LATEST)?,
        activities: activities::of_contact(v, id, LATEST)?,
        completions: reminders::completions_of(v, id, LATEST)?,
        reminders: reminders::of_contact(v, id)?,
        relationship_edges: relationships::detail_edges(v, id)?,
        life_events,
        agenda,
        gifts,
        field_values: crate::crm::field::ops::values(v, id)?,
        external_identities: crate::crm::external::ops::of_contact(v, id)?
            .iter()
            .filter_map(|r| serde_json::to_value(crate::crm::external::ops::ExternalIdentityView::of(v, r)).ok())
            .collect(),
        external_activities: crate::crm::external::ops::recent_of_contact(v, id, 5)?
            .iter()
            .filter_map(|r| serde_json::to_value(crate::crm::external::ops::ExternalActivityView::of(v, r)).ok())
            .collect(),
        immich: None,
        circles: named_groups(v, Group::Circle, &row.body.circles)?,
        tags: named_groups(v, Group::Tag, &row.body.tags)?,
    })
}

/// `[{id, name}]` of a contact's circles or tags.
fn named_groups(v: &UserView, group: Group, names: &[String]) -> Result<Vec<Value>> {
    names
        .iter()
        .map(|name| {
            let id = v.find::<GroupEntity>(groups::BY_NAME, &group.key(name))?.first().copied();
            Ok(json!({ "id": id, "name": name }))
        })
        .collect()
}

/// A contact with its card's `relatedTo` filled from the relationships.
pub fn get(v: &UserView, id: u64) -> Result<(mycorrhizal_engine::Row<Contact>, ContactView)> {
    let row = v.get::<Contact>(id)?;
    let related = projected_relations(v, id)?;
    let view = ContactView::of(&row, &related);
    Ok((row, view))
}

/// The circles in use by live contacts, sorted.
pub fn circles(v: &UserView) -> Result<Vec<String>> {
    Ok(v.index_values::<Contact>(super::INDEX_CIRCLE)?)
}
