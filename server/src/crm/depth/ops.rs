//! Life events, gifts and agenda items as clients read them (with the contact's uid and, for a
//! life event, its next occurrence), shared by their own routes and the contact page.

use jiff::Timestamp;
use jiff::civil::Date;
use mycorrhizal_codecs::dates::Partial;
use mycorrhizal_engine::{Invalid, Precondition, Record, Row, TxUser, UPDATED_INDEX, UserScope, UserView, Walk};
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use crate::crm::contact::INDEX_UID;
use crate::crm::cursor::{decode_cursor, encode_cursor};
use crate::crm::{Error, Result};
use crate::crm::{activity::Activity, records::BY_CONTACT};

use crate::crm::calendar;
use crate::crm::contact::Contact;
use crate::crm::{depth::AgendaItem, depth::Gift, depth::LifeEvent};

pub fn uid_of(v: &UserView, contact: u64) -> String {
    v.get::<Contact>(contact).map(|c| c.body.uid).unwrap_or_default()
}

/// The next time a month-and-day event comes round (29 February -> 1 March in other years);
/// a year-only or month-only event has none.
pub fn next_occurrence(date: &Partial, today: Date) -> Option<Date> {
    calendar::next_yearly(date.month? as i8, date.day? as i8, today)
}

/// A life event as clients read it.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct LifeEventView {
    pub id: u64,
    /// The contact's UID.
    pub entity_id: String,
    pub contact_id: u64,
    #[serde(rename = "type")]
    pub kind: String,
    pub category: String,
    /// `{year?, month?, day?}`, the members known.
    #[schema(value_type = crate::crm::schema::PartialDate)]
    pub date: Partial,
    pub description: String,
    pub related_entity_ids: Vec<String>,
    pub remind: bool,
    /// `YYYY-MM-DD`, the next time a month-and-day event comes round; absent for others.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(value_type = Option<String>, format = Date)]
    pub next_occurrence: Option<Date>,
    /// `revision`, `etag`, `created_at`, `updated_at`.
    #[serde(flatten)]
    pub stamp: crate::crm::Stamp,
}

impl LifeEventView {
    /// The event with its contact's UID and its next occurrence after `today`.
    pub fn of(v: &UserView, row: &Row<LifeEvent>, today: Date) -> LifeEventView {
        let e = &row.body;
        LifeEventView {
            id: row.id,
            entity_id: uid_of(v, e.contact_id),
            contact_id: e.contact_id,
            kind: e.kind.clone(),
            category: e.category.clone(),
            date: e.date.into(),
            description: e.description.clone(),
            related_entity_ids: e.related.clone(),
            remind: e.remind,
            next_occurrence: next_occurrence(&e.date.into(), today),
            stamp: crate::crm::Stamp::of(row),
        }
    }
}

/// A gift as clients read it.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct GiftView {
    pub id: u64,
    /// The contact's UID.
    pub entity_id: String,
    pub contact_id: u64,
    /// `idea`, `purchased`, `given` or `received`.
    pub status: String,
    pub occasion: String,
    pub description: String,
    pub url: String,
    pub notes: String,
    /// `null` for an idea.
    #[schema(value_type = Option<String>)]
    pub date: Option<Timestamp>,
    pub value_cents: Option<i64>,
    /// Upper-case ISO code, with `value_cents`.
    pub currency: Option<String>,
    /// `revision`, `etag`, `created_at`, `updated_at`.
    #[serde(flatten)]
    pub stamp: crate::crm::Stamp,
}

impl GiftView {
    pub fn of(v: &UserView, row: &Row<Gift>) -> GiftView {
        let g = &row.body;
        GiftView {
            id: row.id,
            entity_id: uid_of(v, g.contact_id),
            contact_id: g.contact_id,
            status: g.status.clone(),
            occasion: g.occasion.clone(),
            description: g.description.clone(),
            url: g.url.clone(),
            notes: g.notes.clone(),
            date: g.date,
            value_cents: g.value_cents,
            currency: g.currency.clone(),
            stamp: crate::crm::Stamp::of(row),
        }
    }
}

/// A conversation-agenda item as clients read it.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct AgendaItemView {
    pub id: u64,
    /// The contact's UID.
    pub entity_id: String,
    pub contact_id: u64,
    pub content: String,
    pub reference_url: String,
    /// `null` while open.
    #[schema(value_type = Option<String>)]
    pub discussed_at: Option<Timestamp>,
    /// The activity in which it was discussed, if named.
    pub activity_id: Option<u64>,
    /// `revision`, `etag`, `created_at`, `updated_at`.
    #[serde(flatten)]
    pub stamp: crate::crm::Stamp,
}

impl AgendaItemView {
    pub fn of(v: &UserView, row: &Row<AgendaItem>) -> AgendaItemView {
        let a = &row.body;
        AgendaItemView {
            id: row.id,
            entity_id: uid_of(v, a.contact_id),
            contact_id: a.contact_id,
            content: a.content.clone(),
            reference_url: a.reference_url.clone(),
            discussed_at: a.discussed_at,
            activity_id: a.activity_id,
            stamp: crate::crm::Stamp::of(row),
        }
    }
}

/// `{message, life_event}`: a life event just created.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct LifeEventCreated {
    pub message: String,
    pub life_event: LifeEventView,
}

/// `{message, gift}`: a gift just created.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct GiftCreated {
    pub message: String,
    pub gift: GiftView,
}

/// `{message, conversation_agenda}`: an agenda item just created.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct AgendaItemCreated {
    pub message: String,
    pub conversation_agenda: AgendaItemView,
}

/// The contact a per-contact record names: its UID or its integer id.
#[derive(Debug, Clone, Default)]
pub struct ContactRef {
    pub entity_id: Option<String>,
    pub contact_id: Option<u64>,
}

impl ContactRef {
    fn is_empty(&self) -> bool {
        self.entity_id.as_deref().is_none_or(str::is_empty) && self.contact_id.is_none()
    }

    /// The contact's id, which must be the user's (a missing one is `NotFound`).
    fn resolve(
        &self,
        find: impl Fn(&str) -> mycorrhizal_engine::Result<Vec<u64>>,
        exists: impl Fn(u64) -> bool,
    ) -> mycorrhizal_engine::Result<u64> {
        let id = match (self.entity_id.as_deref().filter(|e| !e.is_empty()), self.contact_id) {
            (_, Some(id)) => id,
            (Some(uid), None) => {
                *find(&uid.trim().to_lowercase())?.first().ok_or(mycorrhizal_engine::Error::NotFound)?
            }
            (None, None) => {
                return Err(mycorrhizal_engine::Error::Invalid(Invalid::new(
                    "entity_id",
                    "is required (the contact's UID), or contact_id",
                )));
            }
        };
        if !exists(id) {
            return Err(mycorrhizal_engine::Error::NotFound);
        }
        Ok(id)
    }

    fn in_view(&self, v: &UserView) -> Result<u64> {
        Ok(self.resolve(|uid| v.find::<Contact>(INDEX_UID, uid), |id| v.get::<Contact>(id).is_ok())?)
    }

    fn in_tx(&self, tx: &TxUser<'_, '_>) -> mycorrhizal_engine::Result<u64> {
        self.resolve(|uid| tx.find::<Contact>(INDEX_UID, uid), |id| tx.get::<Contact>(id).is_ok())
    }
}

/// A record that hangs off one contact.
pub trait PerContact: Record {
    fn set_contact(&mut self, contact: u64);
}

impl PerContact for LifeEvent {
    fn set_contact(&mut self, contact: u64) {
        self.contact_id = contact;
    }
}

impl PerContact for Gift {
    fn set_contact(&mut self, contact: u64) {
        self.contact_id = contact;
    }
}

impl PerContact for AgendaItem {
    fn set_contact(&mut self, contact: u64) {
        self.contact_id = contact;
    }
}

/// Creates `body` for the contact `who` names (with `id`: replaces record `id` under `pre`); the
/// contact is resolved and checked in the same transaction as the write.
pub async fn save<R: PerContact>(
    scope: &UserScope,
    id: Option<(u64, Precondition)>,
    who: ContactRef,
    body: R,
) -> Result<Row<R>> {
    Ok(scope
        .write_async(move |tx| {
            let mut body = body.clone();
            body.set_contact(who.in_tx(tx)?);
            match id {
                Some((id, pre)) => tx.put(id, pre, body),
                None => tx.create(body),
            }
        })
        .await?)
}

/// What a list of per-contact records asks for.
#[derive(Debug, Clone, Default)]
pub struct DepthFilter {
    pub who: ContactRef,
    pub cursor: Option<String>,
    pub limit: usize,
    pub ascending: bool,
}

/// One page of life events.
#[derive(Debug, Serialize, ToSchema)]
pub struct LifeEventPage {
    pub life_events: Vec<LifeEventView>,
    pub next_cursor: String,
    /// How a client keeps this collection current.
    pub sync: crate::crm::cursor::SyncInfo,
    pub limit: usize,
}

/// One page of gifts.
#[derive(Debug, Serialize, ToSchema)]
pub struct GiftPage {
    pub gifts: Vec<GiftView>,
    pub next_cursor: String,
    /// How a client keeps this collection current.
    pub sync: crate::crm::cursor::SyncInfo,
    pub limit: usize,
}

/// One page of conversation-agenda items.
#[derive(Debug, Serialize, ToSchema)]
pub struct AgendaPage {
    pub conversation_agenda: Vec<AgendaItemView>,
    pub next_cursor: String,
    /// How a client keeps this collection current.
    pub sync: crate::crm::cursor::SyncInfo,
    pub limit: usize,
}

/// A page of `R`, rendered, with the cursor of the next page: one contact's (by its index) or,
/// without one, the user's by last update.
fn page<R: Record, V>(v: &UserView, f: &DepthFilter, render: impl Fn(&Row<R>) -> V) -> Result<(Vec<V>, String)> {
    let after = f.cursor.as_deref().filter(|c| !c.trim().is_empty()).map(decode_cursor).transpose()?;
    let descending = !f.ascending;
    let contact = if f.who.is_empty() { None } else { Some(f.who.in_view(v)?) };
    let bounds = contact.map(|c| (format!("{c:020}"), format!("{:020}", c + 1)));
    let walk = match &bounds {
        Some((from, to)) => Walk { index: BY_CONTACT, from, to: Some(to), after: None, descending },
        None => Walk { index: UPDATED_INDEX, from: "", to: None, after: None, descending },
    };
    let walk = Walk { after: after.as_ref().map(|(v, id)| (v.as_str(), *id)), ..walk };
    let found = v.walk::<R>(walk, f.limit, |_| true)?;
    let next = found.next.as_ref().map(|(v, id)| encode_cursor(v, *id)).unwrap_or_default();
    Ok((found.rows.iter().map(render).collect(), next))
}

/// A page of life events, each with its next occurrence after `today`.
pub fn life_event_page(v: &UserView, f: &DepthFilter, today: Date) -> Result<LifeEventPage> {
    let (life_events, next_cursor) = page(v, f, |r| LifeEventView::of(v, r, today))?;
    Ok(LifeEventPage { life_events, next_cursor, sync: crate::crm::cursor::SyncInfo::full_resync(), limit: f.limit })
}

/// A page of gifts.
pub fn gift_page(v: &UserView, f: &DepthFilter) -> Result<GiftPage> {
    let (gifts, next_cursor) = page(v, f, |r| GiftView::of(v, r))?;
    Ok(GiftPage { gifts, next_cursor, sync: crate::crm::cursor::SyncInfo::full_resync(), limit: f.limit })
}

/// A page of conversation-agenda items.
pub fn agenda_page(v: &UserView, f: &DepthFilter) -> Result<AgendaPage> {
    let (conversation_agenda, next_cursor) = page(v, f, |r| AgendaItemView::of(v, r))?;
    Ok(AgendaPage {
        conversation_agenda,
        next_cursor,
        sync: crate::crm::cursor::SyncInfo::full_resync(),
        limit: f.limit,
    })
}

#[derive(Debug, Clone, Deserialize, ToSchema)]
pub struct LifeEventInput {
    pub entity_id: Option<String>,
    pub contact_id: Option<u64>,
    /// Open vocabulary (`graduated`, `married`, `moved`, ...), at most 100 characters.
    #[serde(rename = "type", default)]
    #[schema(max_length = 100)]
    pub kind: String,
    /// Empty, or one of the life-event categories.
    #[serde(default)]
    #[schema(pattern = "^(|home_living|health_wellness|work_education|travel_experiences|family_relationships)$")]
    pub category: String,
    /// `{year?, month?, day?}`, any subset; `null` or left out when unknown.
    #[schema(value_type = Option<crate::crm::schema::PartialDate>)]
    #[serde(default)]
    pub date: Option<Partial>,
    /// At most 2000 characters.
    #[serde(default)]
    #[schema(max_length = 2000)]
    pub description: String,
    #[serde(default)]
    pub related_entity_ids: Vec<String>,
    #[serde(default)]
    pub remind: bool,
}

impl LifeEventInput {
    /// The contact it names and the event (its contact set by [`save`]).
    pub fn record(self) -> (ContactRef, LifeEvent) {
        let who = ContactRef { entity_id: self.entity_id, contact_id: self.contact_id };
        let event = LifeEvent {
            contact_id: 0,
            kind: self.kind.trim().to_string(),
            category: self.category,
            date: self.date.unwrap_or_default().into(),
            description: self.description,
            related: self.related_entity_ids,
            remind: self.remind,
        };
        (who, event)
    }
}

#[derive(Debug, Clone, Deserialize, ToSchema)]
pub struct GiftInput {
    pub entity_id: Option<String>,
    pub contact_id: Option<u64>,
    /// 1 to 2000 characters.
    #[schema(
        max_length = 2000,
        pattern = "[^\\t-\\r \\u0085\\u00a0\\u1680\\u2000-\\u200a\\u2028\\u2029\\u202f\\u205f\\u3000]"
    )]
    pub description: String,
    /// `idea` (default), `purchased`, `given` or `received`.
    #[schema(pattern = "^(idea|purchased|given|received)$")]
    pub status: Option<String>,
    #[schema(max_length = 200)]
    pub occasion: Option<String>,
    /// An http(s) URL, at most 2000 characters.
    #[schema(max_length = 2000, pattern = "^(https?://|$)")]
    pub url: Option<String>,
    #[schema(max_length = 2000)]
    pub notes: Option<String>,
    /// RFC 3339 instant or `YYYY-MM-DD`; absent for an idea.
    #[schema(value_type = Option<crate::crm::schema::DayOrInstantOrBlank>)]
    pub date: Option<String>,
    /// Not negative; given with `currency`.
    #[schema(minimum = 0)]
    pub value_cents: Option<i64>,
    /// A 3-letter ISO currency code (any case); given with `value_cents`.
    #[schema(
        pattern = "^[\\t-\\r \\u0085\\u00a0\\u1680\\u2000-\\u200a\\u2028\\u2029\\u202f\\u205f\\u3000]*[A-Za-z]{3}[\\t-\\r \\u0085\\u00a0\\u1680\\u2000-\\u200a\\u2028\\u2029\\u202f\\u205f\\u3000]*$"
    )]
    pub currency: Option<String>,
}

impl GiftInput {
    /// The contact it names and the gift (its contact set by [`save`]).
    pub fn record(self) -> Result<(ContactRef, Gift)> {
        let who = ContactRef { entity_id: self.entity_id, contact_id: self.contact_id };
        let date = crate::crm::calendar::instant_or_blank("date", self.date.as_deref())?;
        let gift = Gift {
            contact_id: 0,
            status: self.status.unwrap_or_else(|| "idea".into()),
            occasion: self.occasion.unwrap_or_default(),
            description: self.description,
            url: self.url.unwrap_or_default(),
            notes: self.notes.unwrap_or_default(),
            date,
            value_cents: self.value_cents,
            currency: self.currency.map(|c| c.trim().to_uppercase()),
        };
        Ok((who, gift))
    }
}

#[derive(Debug, Clone, Deserialize, ToSchema)]
pub struct AgendaInput {
    pub entity_id: Option<String>,
    pub contact_id: Option<u64>,
    /// 1 to 2000 characters.
    #[schema(
        max_length = 2000,
        pattern = "[^\\t-\\r \\u0085\\u00a0\\u1680\\u2000-\\u200a\\u2028\\u2029\\u202f\\u205f\\u3000]"
    )]
    pub content: String,
    /// An http(s) URL, at most 2000 characters.
    #[schema(max_length = 2000, pattern = "^(https?://|$)")]
    pub reference_url: Option<String>,
}

impl AgendaInput {
    /// The contact it names and the open item (its contact set by [`save`]).
    pub fn record(self) -> (ContactRef, AgendaItem) {
        let who = ContactRef { entity_id: self.entity_id, contact_id: self.contact_id };
        let item = AgendaItem {
            contact_id: 0,
            content: self.content,
            reference_url: self.reference_url.unwrap_or_default(),
            discussed_at: None,
            activity_id: None,
        };
        (who, item)
    }
}

#[derive(Debug, Clone, Deserialize, ToSchema)]
pub struct AgendaEdit {
    /// 1 to 2000 characters.
    #[schema(
        max_length = 2000,
        pattern = "[^\\t-\\r \\u0085\\u00a0\\u1680\\u2000-\\u200a\\u2028\\u2029\\u202f\\u205f\\u3000]"
    )]
    pub content: String,
    /// An http(s) URL, at most 2000 characters.
    #[schema(max_length = 2000, pattern = "^(https?://|$)")]
    pub reference_url: Option<String>,
}

/// Changes an agenda item's text only; its discussed state is [`discuss`]'s.
pub async fn edit_agenda(scope: &UserScope, id: u64, pre: Precondition, edit: AgendaEdit) -> Result<Row<AgendaItem>> {
    Ok(scope
        .write_async(move |tx| {
            tx.update::<AgendaItem>(id, pre, |item| {
                item.content = edit.content.clone();
                item.reference_url = edit.reference_url.clone().unwrap_or_default();
                Ok(())
            })
        })
        .await?)
}

/// Marks an agenda item discussed (once: a later call keeps the first instant), in `activity`
/// when given (which must be the user's).
pub async fn discuss(scope: &UserScope, id: u64, activity: Option<u64>) -> Result<Row<AgendaItem>> {
    Ok(scope
        .write_async(move |tx| {
            if let Some(activity) = activity {
                tx.get::<Activity>(activity)?;
            }
            let now = tx.now();
            tx.update::<AgendaItem>(id, Precondition::Any, |item| {
                item.discussed_at = Some(item.discussed_at.unwrap_or(now));
                item.activity_id = activity.or(item.activity_id);
                Ok(())
            })
        })
        .await?)
}

/// Record `id` of kind `R`.
pub fn get<R: Record>(v: &UserView, id: u64) -> Result<Row<R>> {
    v.get::<R>(id).map_err(Error::from)
}

/// Removes the life event, gift or agenda item `id` when `pre` holds.
pub async fn delete<R: PerContact>(scope: &UserScope, id: u64, pre: Precondition) -> Result<()> {
    crate::crm::records::delete::<R>(scope, id, pre).await
}
