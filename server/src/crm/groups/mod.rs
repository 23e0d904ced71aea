//! Circles and tags: named groups of contacts. Membership lives on the contact (a circle in
//! `crm.circles`, a tag in the card's `keywords`, so every import and export format carries it);
//! each name also has a [`GroupEntity`] row, which gives it an id, creation and update instants,
//! and a life of its own (an empty circle exists until deleted). `ops` keeps the two together:
//! a name found on a contact without its row gets one before any list or id is answered.

use mycorrhizal_engine::{Invalid, Kind, Record, UserView, kind};
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use utoipa::ToSchema;

use super::Result;
use super::contact::{Contact, INDEX_CIRCLE, INDEX_TAG};

pub mod ops;

/// The longest circle or tag name, in characters.
pub const NAME_MAX: usize = 200;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Group {
    Circle,
    Tag,
}

impl Group {
    /// The contact index of this group's names.
    pub fn index(self) -> &'static str {
        match self {
            Group::Circle => INDEX_CIRCLE,
            Group::Tag => INDEX_TAG,
        }
    }

    /// As stored in [`GroupEntity::group`].
    pub fn as_str(self) -> &'static str {
        match self {
            Group::Circle => "circle",
            Group::Tag => "tag",
        }
    }

    /// The value of [`BY_NAME`] for `name` in this group.
    pub fn key(self, name: &str) -> String {
        format!("{}:{name}", self.as_str())
    }

    /// The names `contact` carries in this group.
    pub fn names_of(self, contact: &Contact) -> &[String] {
        match self {
            Group::Circle => &contact.circles,
            Group::Tag => &contact.tags,
        }
    }

    /// Replaces `from` with `to` (or removes it when `to` is `None`; adds `to` when `from` is
    /// empty) in one contact.
    pub fn edit(self, contact: &mut Contact, from: &str, to: Option<&str>) -> Result<(), Invalid> {
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
                contact.card = serde_json::to_string(&card).map_err(|e| Invalid::new("card", e.to_string()))?;
            }
        }
        Ok(())
    }
}

/// Index of group rows by `<group>:<name>`, unique: one row per name (named after the input
/// field a duplicate comes from, since the engine's 409 names the index).
pub const BY_NAME: &str = "name";

/// A circle or a tag as a row of its own: its id and name. Who belongs to it is on the contacts.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct GroupEntity {
    /// `circle` or `tag`.
    pub group: String,
    pub name: String,
}

impl GroupEntity {
    pub fn group(&self) -> Group {
        if self.group == "tag" { Group::Tag } else { Group::Circle }
    }
}

impl Record for GroupEntity {
    const KIND: Kind = kind!("group", soft_delete);
    const UNIQUE: &'static [&'static str] = &[BY_NAME];

    fn validate(&self) -> Result<(), Invalid> {
        if !matches!(self.group.as_str(), "circle" | "tag") {
            return Err(Invalid::new("group", "must be circle or tag"));
        }
        valid_name(&self.name)
    }

    fn index_entries(&self) -> Vec<(&'static str, String)> {
        vec![(BY_NAME, self.group().key(&self.name))]
    }
}

/// A circle or tag name: 1 to [`NAME_MAX`] characters, not blank, no surrounding spaces.
pub fn valid_name(name: &str) -> Result<(), Invalid> {
    if name.trim().is_empty() || name.chars().count() > NAME_MAX || name.trim() != name {
        return Err(Invalid::new("name", format!("must be 1 to {NAME_MAX} characters, not blank")));
    }
    Ok(())
}

/// A group name and how many contacts carry it.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct GroupCount {
    pub name: String,
    pub count: u64,
}

/// Every name of `group` in use, A to Z, with its contact count.
pub fn counts(v: &UserView, group: Group) -> Result<Vec<GroupCount>> {
    names(v, group)?
        .into_iter()
        .map(|name| Ok(GroupCount { count: v.count_where::<Contact>(group.index(), &name)?, name }))
        .collect()
}

/// Every name of `group` carried by a contact, A to Z: one index seek per name, whatever the
/// book's size.
pub fn names(v: &UserView, group: Group) -> Result<Vec<String>> {
    Ok(v.index_values::<Contact>(group.index())?)
}
