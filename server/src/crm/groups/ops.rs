//! The operations on circles and tags every front door shares: list (paged by name, with the
//! members of the page), get, create, rename, delete, add and remove a member. A group is named
//! by its id or, for the routes that always took one, by its name ([`Target`]).
//!
//! Before a list or a lookup answers, [`ensure`] gives every name a contact carries its row (an
//! import, a CardDAV client or a contact edit adds names without one); a name a row cannot hold
//! (longer than [`NAME_MAX`](super::NAME_MAX)) stays reachable by name only. Renaming a group
//! to the name of another is refused (409 on `name`); deleting one removes the name from every
//! contact, in the same transaction.

use mycorrhizal_engine::{Precondition, Row, UserScope, UserView, Walk};
use serde::Serialize;
use utoipa::ToSchema;

use super::{BY_NAME, Group, GroupEntity, names, valid_name};
use crate::crm::contact::{Contact, named};
use crate::crm::cursor::{decode_cursor, encode_cursor};
use crate::crm::{Error, Result, Stamp};

/// A circle or tag as clients read it.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct GroupView {
    pub id: u64,
    pub name: String,
    /// How many contacts carry it.
    pub count: u64,
    /// `revision`, `etag`, `created_at`, `updated_at`.
    #[serde(flatten)]
    pub stamp: Stamp,
}

/// A contact's membership of a circle (`circle_id`, `member_vcard_uid`) or tag (`tag_id`,
/// `contact_vcard_uid`). A membership has no row of its own: its `id` is the contact's.
#[derive(Debug, Clone, Serialize, ToSchema)]
#[schema(as = GroupMemberView)]
pub struct MemberView {
    pub id: u64,
    pub contact_id: u64,
    pub contact_name: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub circle_id: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub member_vcard_uid: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tag_id: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub contact_vcard_uid: Option<String>,
}

impl MemberView {
    fn of(group: &Row<GroupEntity>, contact: &Row<Contact>) -> MemberView {
        let uid = Some(contact.body.uid.clone());
        let circle = group.body.group() == Group::Circle;
        MemberView {
            id: contact.id,
            contact_id: contact.id,
            contact_name: contact.body.name(),
            circle_id: circle.then_some(group.id),
            member_vcard_uid: if circle { uid.clone() } else { None },
            tag_id: (!circle).then_some(group.id),
            contact_vcard_uid: if circle { None } else { uid },
        }
    }
}

/// How a path names a group.
#[derive(Debug, Clone)]
pub enum Target {
    /// Its id, or else its name (the API's `/circles/{id}`, which also took names).
    IdOrName(String),
    /// Its name only (a web form).
    Name(String),
}

/// What a list of groups asks for.
#[derive(Debug, Clone, Default)]
pub struct GroupFilter {
    pub include_members: bool,
    pub cursor: Option<String>,
    /// `None`: every group (a person's circles are few).
    pub limit: Option<usize>,
}

/// A page of groups, A to Z.
#[derive(Debug, Clone)]
pub struct GroupPage {
    pub groups: Vec<GroupView>,
    pub total: u64,
    pub next_cursor: String,
    /// How a client keeps this collection current.
    pub sync: crate::crm::cursor::SyncInfo,
    pub limit: usize,
    /// The memberships of the groups on this page, with `include_members`.
    pub members: Option<Vec<MemberView>>,
}

fn view(v: &UserView, row: &Row<GroupEntity>) -> Result<GroupView> {
    Ok(GroupView {
        id: row.id,
        name: row.body.name.clone(),
        count: v.count_where::<Contact>(row.body.group().index(), &row.body.name)?,
        stamp: Stamp::of(row),
    })
}

fn members(v: &UserView, row: &Row<GroupEntity>) -> Result<Vec<MemberView>> {
    let mut out = Vec::new();
    for id in v.find::<Contact>(row.body.group().index(), &row.body.name)? {
        if let Ok(contact) = v.get::<Contact>(id) {
            out.push(MemberView::of(row, &contact));
        }
    }
    Ok(out)
}

/// The names contacts carry in `group` that have no row yet (and could have one).
fn missing(v: &UserView, group: Group) -> Result<Vec<String>> {
    let mut out = Vec::new();
    for name in names(v, group)? {
        if valid_name(&name).is_ok() && v.find::<GroupEntity>(BY_NAME, &group.key(&name))?.is_empty() {
            out.push(name);
        }
    }
    Ok(out)
}

async fn read<T: Send + 'static>(
    scope: &UserScope,
    f: impl FnOnce(&UserView) -> Result<T> + Send + 'static,
) -> Result<T> {
    let reader = scope.clone();
    tokio::task::spawn_blocking(move || f(&reader.view()?)).await.map_err(Error::internal)?
}

/// Gives every name a contact carries in `group` its row (one write, only when one is missing).
pub async fn ensure(scope: &UserScope, group: Group) -> Result<()> {
    let missing = read(scope, move |v| missing(v, group)).await?;
    if missing.is_empty() {
        return Ok(());
    }
    scope
        .write_async(move |tx| {
            for name in &missing {
                if tx.find::<GroupEntity>(BY_NAME, &group.key(name))?.is_empty() {
                    tx.create(GroupEntity { group: group.as_str().into(), name: name.clone() })?;
                }
            }
            Ok(())
        })
        .await?;
    Ok(())
}

/// The group `target` names, if it is one of `group`.
pub fn resolve(v: &UserView, group: Group, target: &Target) -> Result<Row<GroupEntity>> {
    let name = match target {
        Target::IdOrName(text) => {
            if let Ok(id) = text.trim().parse::<u64>()
                && let Ok(row) = v.get::<GroupEntity>(id)
                && row.body.group() == group
            {
                return Ok(row);
            }
            text
        }
        Target::Name(name) => name,
    };
    let id = *v.find::<GroupEntity>(BY_NAME, &group.key(name))?.first().ok_or(Error::NotFound)?;
    Ok(v.get::<GroupEntity>(id)?)
}

async fn resolve_id(scope: &UserScope, group: Group, target: Target) -> Result<u64> {
    ensure(scope, group).await?;
    read(scope, move |v| Ok(resolve(v, group, &target)?.id)).await
}

/// A page of `group`'s rows, A to Z, with their members when asked (after [`ensure`]).
pub fn list(v: &UserView, group: Group, q: &GroupFilter) -> Result<GroupPage> {
    let after = q.cursor.as_deref().filter(|c| !c.trim().is_empty()).map(decode_cursor).transpose()?;
    let (from, to) = (format!("{}:", group.as_str()), format!("{};", group.as_str()));
    let limit = q.limit.unwrap_or(usize::MAX);
    let walk = Walk {
        index: BY_NAME,
        from: &from,
        to: Some(&to),
        after: after.as_ref().map(|(value, id)| (value.as_str(), *id)),
        descending: false,
    };
    let page = v.walk::<GroupEntity>(walk, limit.min(100_000), |_| true)?;
    let total = v.index_values::<GroupEntity>(BY_NAME)?.iter().filter(|k| k.starts_with(&from)).count() as u64;
    let members = if q.include_members {
        let mut all = Vec::new();
        for row in &page.rows {
            all.extend(members(v, row)?);
        }
        Some(all)
    } else {
        None
    };
    Ok(GroupPage {
        groups: page.rows.iter().map(|row| view(v, row)).collect::<Result<_>>()?,
        total,
        next_cursor: page.next.as_ref().map(|(value, id)| encode_cursor(value, *id)).unwrap_or_default(),
        sync: crate::crm::cursor::SyncInfo::full_resync(),
        limit: q.limit.unwrap_or(total as usize),
        members,
    })
}

/// [`list`] after [`ensure`].
pub async fn list_ensured(scope: &UserScope, group: Group, q: GroupFilter) -> Result<GroupPage> {
    ensure(scope, group).await?;
    read(scope, move |v| list(v, group, &q)).await
}

/// The group `target` names, with its members.
pub async fn get(scope: &UserScope, group: Group, target: Target) -> Result<(GroupView, Vec<MemberView>)> {
    ensure(scope, group).await?;
    read(scope, move |v| {
        let row = resolve(v, group, &target)?;
        Ok((view(v, &row)?, members(v, &row)?))
    })
    .await
}

/// A new, empty group (a second one of the same name is a 409 on `name`).
pub async fn create(scope: &UserScope, group: Group, name: &str) -> Result<GroupView> {
    ensure(scope, group).await?;
    let name = name.trim().to_string();
    valid_name(&name).map_err(|e| Error::invalid(&e.field, e.reason))?;
    let row = scope
        .write_async(move |tx| tx.create(GroupEntity { group: group.as_str().into(), name: name.clone() }))
        .await?;
    read(scope, move |v| view(v, &row)).await
}

/// Renames the group `target` names, on every contact carrying it too, in one transaction:
/// the group after, and how many contacts changed.
pub async fn rename(scope: &UserScope, group: Group, target: Target, name: &str) -> Result<(GroupView, u64)> {
    let id = resolve_id(scope, group, target).await?;
    let name = name.trim().to_string();
    valid_name(&name).map_err(|e| Error::invalid(&e.field, e.reason))?;
    let (row, changed) = scope
        .write_async(move |tx| {
            let from = tx.get::<GroupEntity>(id)?.body.name;
            let row = tx.update::<GroupEntity>(id, Precondition::Any, |g| {
                g.name = name.clone();
                Ok(())
            })?;
            let contacts = if from == name { Vec::new() } else { tx.find::<Contact>(group.index(), &from)? };
            for contact in &contacts {
                tx.update::<Contact>(*contact, Precondition::Any, |c| group.edit(c, &from, Some(&name)))?;
            }
            Ok((row, contacts.len() as u64))
        })
        .await?;
    Ok((read(scope, move |v| view(v, &row)).await?, changed))
}

/// Deletes the group `target` names and removes it from every contact, in one transaction:
/// how many contacts changed.
pub async fn delete(scope: &UserScope, group: Group, target: Target) -> Result<u64> {
    let id = resolve_id(scope, group, target).await?;
    Ok(scope
        .write_async(move |tx| {
            let from = tx.get::<GroupEntity>(id)?.body.name;
            tx.delete::<GroupEntity>(id, Precondition::Any)?;
            let contacts = tx.find::<Contact>(group.index(), &from)?;
            for contact in &contacts {
                tx.update::<Contact>(*contact, Precondition::Any, |c| group.edit(c, &from, None))?;
            }
            Ok(contacts.len() as u64)
        })
        .await?)
}

/// The contact a member input or path names: its id, or its vCard UID.
fn contact_of(v: &UserView, field: &str, text: &str) -> Result<u64> {
    if text.trim().is_empty() {
        return Err(Error::invalid(field, "is required (the contact's vCard UID), or contact_id"));
    }
    named(v, text).ok_or(Error::NotFound)
}

/// The input field that names a member of `group` (and a duplicate's 409 names).
pub fn member_field(group: Group) -> &'static str {
    match group {
        Group::Circle => "member_vcard_uid",
        Group::Tag => "contact_vcard_uid",
    }
}

/// Adds the contact `member` names (id or vCard UID) to the group `target` names; a contact
/// already in it is a 409 on the member field.
pub async fn add_member(scope: &UserScope, group: Group, target: Target, member: String) -> Result<MemberView> {
    let id = resolve_id(scope, group, target).await?;
    let field = member_field(group);
    let contact = read(scope, move |v| contact_of(v, field, &member)).await?;
    let (row, contact) = scope
        .write_async(move |tx| {
            let row = tx.get::<GroupEntity>(id)?;
            let name = row.body.name.clone();
            if group.names_of(&tx.get::<Contact>(contact)?.body).contains(&name) {
                return Err(mycorrhizal_engine::Error::Duplicate { index: field });
            }
            let contact = tx.update::<Contact>(contact, Precondition::Any, |c| group.edit(c, &name, Some(&name)))?;
            Ok((row, contact))
        })
        .await?;
    Ok(MemberView::of(&row, &contact))
}

/// Takes the contact `member` names (id or vCard UID) out of the group `target` names; a
/// contact not in it is not found.
pub async fn remove_member(scope: &UserScope, group: Group, target: Target, member: String) -> Result<()> {
    let id = resolve_id(scope, group, target).await?;
    let field = member_field(group);
    let contact = read(scope, move |v| contact_of(v, field, &member)).await?;
    scope
        .write_async(move |tx| {
            let name = tx.get::<GroupEntity>(id)?.body.name;
            if !group.names_of(&tx.get::<Contact>(contact)?.body).contains(&name) {
                return Err(mycorrhizal_engine::Error::NotFound);
            }
            tx.update::<Contact>(contact, Precondition::Any, |c| group.edit(c, &name, None)).map(|_| ())
        })
        .await?;
    Ok(())
}

/// The name of group `id` of `group` (a bulk action naming a group by id).
pub fn name_of(v: &UserView, group: Group, id: u64) -> Result<String> {
    let row = v.get::<GroupEntity>(id)?;
    if row.body.group() != group {
        return Err(Error::NotFound);
    }
    Ok(row.body.name)
}
