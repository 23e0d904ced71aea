//! Circles and tags as named groups: counted over the live contacts, renamed or deleted in one
//! place (the change reaches every contact in one transaction). Circles live in `crm.circles`;
//! tags are the card's `keywords`.

use mycorrhizal_engine::{Precondition, UserScope, UserView};
use serde::Serialize;
use serde_json::{Value, json};
use utoipa::ToSchema;

use super::contact::{Contact, INDEX_CIRCLE, INDEX_TAG};
use super::{Error, Result};

#[derive(Debug, Clone, Copy)]
pub enum Group {
    Circle,
    Tag,
}

impl Group {
    pub fn index(self) -> &'static str {
        match self {
            Group::Circle => INDEX_CIRCLE,
            Group::Tag => INDEX_TAG,
        }
    }

    /// Replaces `from` with `to` (or removes it when `to` is `None`) in one contact.
    fn edit(self, contact: &mut Contact, from: &str, to: Option<&str>) -> Result<(), mycorrhizal_engine::Invalid> {
        let swap = |list: &mut Vec<String>| {
            list.retain(|item| item != from);
            if let Some(to) = to
                && !list.iter().any(|item| item == to)
            {
                list.push(to.to_string());
            }
        };
        match self {
            Group::Circle => {
                let mut crm: Value = serde_json::from_str(&contact.crm).unwrap_or_else(|_| json!({}));
                let mut circles: Vec<String> = serde_json::from_value(crm["circles"].clone()).unwrap_or_default();
                swap(&mut circles);
                crm["circles"] = json!(circles);
                contact.crm = crm.to_string();
            }
            Group::Tag => {
                let mut card = contact.parsed_card();
                swap(&mut card.keywords);
                contact.card = serde_json::to_string(&card)
                    .map_err(|e| mycorrhizal_engine::Invalid::new("card", e.to_string()))?;
            }
        }
        Ok(())
    }
}

/// A group name and how many contacts carry it.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct GroupCount {
    pub name: String,
    pub count: u64,
}

/// `{circles}`: every circle in use with its contact count.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct CircleList {
    pub circles: Vec<GroupCount>,
}

/// `{tags}`: every tag in use with its contact count.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct TagList {
    pub tags: Vec<GroupCount>,
}

/// `{message, contacts_updated}`: a circle or tag renamed or removed from every contact.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct GroupChanged {
    pub message: String,
    pub contacts_updated: u64,
}

/// Every name of `group` in use, A to Z, with its contact count.
pub fn counts(v: &UserView, group: Group) -> Result<Vec<GroupCount>> {
    names(v, group)?
        .into_iter()
        .map(|name| Ok(GroupCount { count: v.count_where::<Contact>(group.index(), &name)?, name }))
        .collect()
}

/// Every name of `group` in use, A to Z: one index seek per name, whatever the book's size.
pub fn names(v: &UserView, group: Group) -> Result<Vec<String>> {
    Ok(v.index_values::<Contact>(group.index())?)
}

/// Renames `from` to `to` in every contact carrying it (`to` = `None`: removes it), in one
/// transaction; returns how many contacts changed. No contact carrying `from` is `NotFound`.
pub async fn change(scope: &UserScope, group: Group, from: String, to: Option<String>) -> Result<u64> {
    if let Some(to) = &to
        && (to.trim().is_empty() || to.chars().count() > 100)
    {
        return Err(Error::invalid("name", "must be 1 to 100 characters"));
    }
    let to = to.map(|t| t.trim().to_string());
    let changed = scope
        .write_async(move |tx| {
            let ids = tx.find::<Contact>(group.index(), &from)?;
            for id in &ids {
                tx.update::<Contact>(*id, Precondition::Any, |c| group.edit(c, &from, to.as_deref()))?;
            }
            Ok(ids.len() as u64)
        })
        .await?;
    if changed == 0 {
        return Err(Error::NotFound);
    }
    Ok(changed)
}
