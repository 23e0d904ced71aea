//! Activities: things done with one or more contacts (a call, a dinner), dated. Their
//! operations (create, replace keeping the uuid, page overall or per contact) and their view
//! with the contacts named.

use mycorrhizal_engine::{Precondition, Row, UserScope, UserView, Walk};
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use crate::crm::calendar::{date_range, instant};
use crate::crm::contact::Contact;
use crate::crm::contact::ops::require_contacts;
use crate::crm::cursor::{DatedFilter, decode_cursor, encode_cursor};
use crate::crm::{Error, Result};
use crate::crm::{activity::Activity, activity::BY_UID, records::BY_CONTACT, records::BY_DATE};

/// A contact an activity names, as the activity shows it.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct ContactName {
    pub id: u64,
    pub uid: String,
    pub name: String,
    /// The existing clients read a participant as a contact: `ID`, `firstname`, `lastname`,
    /// `nickname`.
    #[serde(rename = "ID")]
    pub legacy_id: u64,
    pub firstname: String,
    pub lastname: String,
    pub nickname: String,
}

/// An activity as clients read it.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct ActivityView {
    pub id: u64,
    /// `id` again, under the name the existing clients read.
    #[serde(rename = "ID")]
    pub legacy_id: u64,
    pub uuid: String,
    pub title: String,
    pub description: String,
    pub location: String,
    #[schema(value_type = String)]
    pub date: jiff::Timestamp,
    pub contact_ids: Vec<u64>,
    /// The contacts still there, named.
    pub contacts: Vec<ContactName>,
    #[serde(rename = "type")]
    pub kind: String,
    pub external_ref: String,
    /// `revision`, `etag`, `created_at`, `updated_at`.
    #[serde(flatten)]
    pub stamp: crate::crm::Stamp,
}

impl ActivityView {
    pub fn of(row: &Row<Activity>, contacts: Vec<ContactName>) -> ActivityView {
        let a = &row.body;
        ActivityView {
            id: row.id,
            legacy_id: row.id,
            uuid: a.uuid.clone(),
            title: a.title.clone(),
            description: a.description.clone(),
            location: a.location.clone(),
            date: a.date,
            contact_ids: a.contact_ids.clone(),
            contacts,
            kind: a.kind.clone(),
            external_ref: a.external_ref.clone(),
            stamp: crate::crm::Stamp::of(row),
        }
    }
}

/// `{message, activity}`: an activity created.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct ActivitySaved {
    pub message: String,
    pub activity: ActivityView,
}

/// An activity with its contacts named.
pub fn named(v: &UserView, row: &Row<Activity>) -> ActivityView {
    let contacts = row
        .body
        .contact_ids
        .iter()
        .filter_map(|id| v.get::<Contact>(*id).ok())
        .map(|c| ContactName {
            id: c.id,
            uid: c.body.uid.clone(),
            name: c.body.name(),
            legacy_id: c.id,
            firstname: c.body.flat.firstname.clone(),
            lastname: c.body.flat.lastname.clone(),
            nickname: c.body.flat.nickname.clone(),
        })
        .collect();
    ActivityView::of(row, contacts)
}

/// The newest `limit` activities of a contact.
pub fn of_contact(view_: &UserView, contact: u64, limit: usize) -> Result<Vec<ActivityView>> {
    let (from, to) = crate::crm::records::contact_range(contact);
    let page = view_.walk::<Activity>(
        Walk { index: BY_CONTACT, from: &from, to: Some(&to), after: None, descending: true },
        limit,
        |_| true,
    )?;
    Ok(page.rows.iter().map(|r| named(view_, r)).collect())
}

#[derive(Debug, Clone, Deserialize, ToSchema)]
pub struct ActivityInput {
    /// 1 to 200 characters.
    #[schema(min_length = 1, max_length = 200, pattern = r"\S")]
    pub title: String,
    #[schema(max_length = 2000)]
    pub description: Option<String>,
    #[schema(max_length = 300)]
    pub location: Option<String>,
    /// RFC 3339 instant or `YYYY-MM-DD`.
    #[schema(value_type = crate::crm::schema::DayOrInstant)]
    pub date: String,
    /// Contacts involved; all must be yours. Left out of a replacement, they stay as they are.
    pub contact_ids: Option<Vec<u64>>,
    /// Open vocabulary: `call`, `meal`, `visit`, ...
    #[serde(rename = "type")]
    #[schema(max_length = 100)]
    pub kind: Option<String>,
    pub external_ref: Option<String>,
}

impl ActivityInput {
    fn activity(self, uuid: String) -> Result<Activity> {
        Ok(Activity {
            uuid,
            title: self.title.trim().to_string(),
            description: self.description.unwrap_or_default(),
            location: self.location.unwrap_or_default(),
            date: instant("date", &self.date)?,
            contact_ids: self.contact_ids.unwrap_or_default(),
            kind: self.kind.unwrap_or_default(),
            external_ref: self.external_ref.unwrap_or_default(),
            dav_name: String::new(),
            ical: String::new(),
        })
    }
}

/// Creates an activity (with `id`: replaces activity `id` under `pre`, keeping its uuid). Every
/// contact it names must be the user's; the checks and the write are one transaction.
pub async fn save(scope: &UserScope, id: Option<(u64, Precondition)>, input: ActivityInput) -> Result<Row<Activity>> {
    save_as(scope, id, input, None, None).await
}

/// How a calendar client named the event of an activity it creates (two-way CalDAV): its
/// resource name (`<name>.ics`, unique per user) and its event UID (kept as the activity's uuid).
#[derive(Debug, Clone)]
pub struct EventName {
    pub name: String,
    pub uid: String,
}

/// [`save`], where a new activity may take a calendar client's [`EventName`], and `text` is the
/// iCalendar object a calendar client wrote (kept as [`Activity::ical`]). A replacement keeps
/// the stored uuid and resource name whatever it is given; without `text` it keeps the stored
/// object too, with the changed title, description, place and date written into it
/// ([`patched`]). [`Error::UidConflict`] when the UID is already another activity's, naming
/// that activity's resource; a resource name already taken is the engine's `Duplicate`.
pub async fn save_as(
    scope: &UserScope,
    id: Option<(u64, Precondition)>,
    input: ActivityInput,
    event: Option<EventName>,
    text: Option<String>,
) -> Result<Row<Activity>> {
    let keep_contacts = input.contact_ids.is_none();
    let mut activity = match &event {
        Some(event) => input.activity(event.uid.clone())?,
        None => input.activity(uuid::Uuid::new_v4().to_string())?,
    };
    if let (Some(event), None) = (&event, id) {
        activity.dav_name = event.name.clone();
    }
    if let Some(text) = &text {
        activity.ical = text.clone();
    }
    scope
        .write_async(move |tx| {
            for contact in &activity.contact_ids {
                tx.get::<Contact>(*contact)?;
            }
            match id {
                Some((id, pre)) => {
                    let activity = activity.clone();
                    let text = text.clone();
                    tx.update::<Activity>(id, pre, move |current| {
                        let ical = match &text {
                            Some(text) => text.clone(),
                            None => patched(current, &activity),
                        };
                        let contact_ids = match keep_contacts {
                            true => std::mem::take(&mut current.contact_ids),
                            false => activity.contact_ids,
                        };
                        *current = Activity {
                            uuid: std::mem::take(&mut current.uuid),
                            dav_name: std::mem::take(&mut current.dav_name),
                            contact_ids,
                            ical,
                            ..activity
                        };
                        Ok(())
                    })
                    .map(Ok)
                }
                None => {
                    if event.is_some()
                        && let Some(holder) = tx.find::<Activity>(BY_UID, &activity.uuid)?.first()
                    {
                        let holder = tx.get::<Activity>(*holder)?;
                        return Ok(Err(Error::UidConflict { holder: resource_name(holder.id, &holder.body) }));
                    }
                    tx.create(activity.clone()).map(Ok)
                }
            }
        })
        .await?
}

/// The calendar client's object of `current` with what `next` changes of it written in (title,
/// description, place, date), everything else as the client wrote it; empty when there is none,
/// or when it can no longer be read (the event is then served as the CRM writes it).
fn patched(current: &Activity, next: &Activity) -> String {
    if current.ical.is_empty() {
        return String::new();
    }
    let changed = |old: &str, new: &str| (old != new).then(|| new.to_string());
    let patch = mycorrhizal_codecs::ical::Patch {
        summary: changed(&current.title, &next.title),
        description: changed(&current.description, &next.description),
        location: changed(&current.location, &next.location),
        start: (current.date != next.date).then(|| next.date.as_second()),
    };
    if patch == mycorrhizal_codecs::ical::Patch::default() {
        return current.ical.clone();
    }
    mycorrhizal_codecs::ical::patch(&current.ical, &patch).unwrap_or_default()
}

/// The calendar resource name of activity `id` (with `.ics`): the one a calendar client created
/// it under, else `activity-<id>.ics`.
pub fn resource_name(id: u64, activity: &Activity) -> String {
    if activity.dav_name.is_empty() { format!("activity-{id}.ics") } else { activity.dav_name.clone() }
}

/// One page of activities.
#[derive(Debug, Serialize, ToSchema)]
pub struct ActivityPage {
    pub activities: Vec<ActivityView>,
    pub next_cursor: String,
    /// How a client keeps this collection current.
    pub sync: crate::crm::cursor::SyncInfo,
    pub limit: usize,
}

/// A page of activities, overall (`None`) or of one contact, newest first unless ascending.
pub fn page(v: &UserView, contact: Option<u64>, f: &DatedFilter) -> Result<ActivityPage> {
    if let Some(id) = contact {
        require_contacts(v, &[id])?;
    }
    let (lo, hi) = date_range(f.from_date.as_deref(), f.to_date.as_deref())?;
    let after = f.cursor.as_deref().filter(|c| !c.trim().is_empty()).map(decode_cursor).transpose()?;
    let (index, from, to) = match contact {
        Some(c) => (
            BY_CONTACT,
            format!("{c:020}{lo:020}"),
            if hi == i64::MAX { format!("{:020}", c + 1) } else { format!("{c:020}{hi:020}") },
        ),
        None => (BY_DATE, format!("{lo:020}"), if hi == i64::MAX { "~".to_string() } else { format!("{hi:020}") }),
    };
    let needle = f.search.as_deref().map(str::to_lowercase).filter(|s| !s.is_empty());
    let walk = Walk {
        index,
        from: &from,
        to: Some(&to),
        after: after.as_ref().map(|(v, id)| (v.as_str(), *id)),
        descending: !f.ascending,
    };
    let found = v.walk::<Activity>(walk, f.limit, |r| {
        needle.as_ref().is_none_or(|n| {
            [&r.body.title, &r.body.description, &r.body.location].iter().any(|t| t.to_lowercase().contains(n))
        })
    })?;
    Ok(ActivityPage {
        activities: found.rows.iter().map(|r| named(v, r)).collect(),
        next_cursor: found.next.as_ref().map(|(v, id)| encode_cursor(v, *id)).unwrap_or_default(),
        sync: crate::crm::cursor::SyncInfo::full_resync(),
        limit: f.limit,
    })
}

/// Activity `id` with its contacts named.
pub fn get(v: &UserView, id: u64) -> Result<(Row<Activity>, ActivityView)> {
    let row = v.get::<Activity>(id).map_err(Error::from)?;
    let view = named(v, &row);
    Ok((row, view))
}

/// Removes activity `id` when `pre` holds (from the JSON API, or a CalDAV client deleting its
/// event). An agenda item discussed in it keeps its link, which then reads as discussed.
pub async fn delete(scope: &UserScope, id: u64, pre: Precondition) -> Result<()> {
    crate::crm::records::delete::<Activity>(scope, id, pre).await
}
