//! The operations on link field types every front door shares: the list (in category, position
//! and name order, seeded with the defaults when empty), get, create (at the end of the order
//! unless placed), replace (position kept unless given), delete, and reorder (every type once).

use mycorrhizal_engine::{Precondition, Row, TxUser, UserScope, UserView};
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use super::{BY_NAME, DEFAULTS, LinkFieldType};
use crate::crm::{Error, Result, Stamp};

#[derive(Debug, Clone, Deserialize, ToSchema)]
pub struct LinkTypeInput {
    /// 1 to 200 characters, unique.
    #[serde(default)]
    #[schema(required = true, max_length = 200)]
    pub name: String,
    /// A link template holding `{value}` (`https://t.me/{value}`), or empty.
    #[schema(max_length = 2000)]
    pub protocol: Option<String>,
    /// `messaging`, `social` or `other`.
    #[serde(default)]
    #[schema(required = true)]
    pub category: String,
    #[schema(max_length = 100)]
    pub icon: Option<String>,
    pub position: Option<u32>,
}

#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct LinkTypeView {
    pub id: u64,
    pub name: String,
    pub protocol: String,
    pub category: String,
    #[serde(skip_serializing_if = "String::is_empty")]
    pub icon: String,
    pub is_default: bool,
    pub position: u32,
    #[serde(flatten)]
    pub stamp: Stamp,
}

impl LinkTypeView {
    pub fn of(row: &Row<LinkFieldType>) -> LinkTypeView {
        let t = &row.body;
        LinkTypeView {
            id: row.id,
            name: t.name.clone(),
            protocol: t.protocol.clone(),
            category: t.category.clone(),
            icon: t.icon.clone(),
            is_default: t.is_default,
            position: t.position,
            stamp: Stamp::of(row),
        }
    }
}

/// `{link_field_types}`.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct LinkTypeList {
    pub link_field_types: Vec<LinkTypeView>,
}

fn ordered(mut rows: Vec<Row<LinkFieldType>>) -> Vec<Row<LinkFieldType>> {
    rows.sort_by(|a, b| {
        let key = |r: &Row<LinkFieldType>| {
            let c = super::CATEGORIES.iter().position(|c| *c == r.body.category).unwrap_or(usize::MAX);
            (c, r.body.position, r.body.name.to_lowercase())
        };
        key(a).cmp(&key(b))
    });
    rows
}

/// The user's link types in order.
pub fn list(v: &UserView) -> Result<LinkTypeList> {
    Ok(LinkTypeList { link_field_types: ordered(v.list::<LinkFieldType>()?).iter().map(LinkTypeView::of).collect() })
}

/// [`list`], after giving a user with none the defaults.
pub async fn list_seeded(scope: &UserScope) -> Result<LinkTypeList> {
    let reader = scope.clone();
    let empty = tokio::task::spawn_blocking(move || reader.view().and_then(|v| v.count::<LinkFieldType>()))
        .await
        .map_err(Error::internal)??
        == 0;
    if empty {
        scope
            .write_async(|tx| {
                if !tx.find_range::<LinkFieldType>(BY_NAME, "", "\u{10FFFF}")?.is_empty() {
                    return Ok(());
                }
                for (i, (name, protocol, category, icon)) in DEFAULTS.iter().enumerate() {
                    tx.create(LinkFieldType {
                        name: name.to_string(),
                        protocol: protocol.to_string(),
                        category: category.to_string(),
                        icon: icon.to_string(),
                        is_default: true,
                        position: i as u32,
                    })?;
                }
                Ok(())
            })
            .await?;
    }
    let reader = scope.clone();
    tokio::task::spawn_blocking(move || list(&reader.view()?)).await.map_err(Error::internal)?
}

fn all_in(tx: &TxUser<'_, '_>) -> mycorrhizal_engine::Result<Vec<Row<LinkFieldType>>> {
    tx.find_range::<LinkFieldType>(BY_NAME, "", "\u{10FFFF}")?
        .into_iter()
        .map(|id| tx.get::<LinkFieldType>(id))
        .collect()
}

fn body_of(input: &LinkTypeInput, position: u32, is_default: bool) -> LinkFieldType {
    LinkFieldType {
        name: input.name.trim().to_string(),
        protocol: input.protocol.clone().unwrap_or_default().trim().to_string(),
        category: input.category.trim().to_string(),
        icon: input.icon.clone().unwrap_or_default().trim().to_string(),
        is_default,
        position,
    }
}

/// A new link type, at the end of the order unless `position` is given (409 on `name`).
pub async fn create(scope: &UserScope, input: LinkTypeInput) -> Result<Row<LinkFieldType>> {
    Ok(scope
        .write_async(move |tx| {
            let next = all_in(tx)?.iter().map(|r| r.body.position + 1).max().unwrap_or(0);
            tx.create(body_of(&input, input.position.unwrap_or(next), false))
        })
        .await?)
}

/// Replaces link type `id`'s name, protocol, category and icon; its position when given.
pub async fn replace(scope: &UserScope, id: u64, input: LinkTypeInput) -> Result<Row<LinkFieldType>> {
    Ok(scope
        .write_async(move |tx| {
            let current = tx.get::<LinkFieldType>(id)?.body;
            tx.put(
                id,
                Precondition::Any,
                body_of(&input, input.position.unwrap_or(current.position), current.is_default),
            )
        })
        .await?)
}

pub async fn delete(scope: &UserScope, id: u64) -> Result<()> {
    Ok(scope.write_async(move |tx| tx.delete::<LinkFieldType>(id, Precondition::Any)).await?)
}

/// Puts the user's link types in `order` (every one of their ids exactly once): each takes its
/// index as position.
pub async fn reorder(scope: &UserScope, order: Vec<u64>) -> Result<LinkTypeList> {
    let rows = scope
        .write_async(move |tx| {
            let all = all_in(tx)?;
            let mut given = order.clone();
            given.sort_unstable();
            let mut ids: Vec<u64> = all.iter().map(|r| r.id).collect();
            ids.sort_unstable();
            if given != ids {
                return Ok(Err(Error::invalid("order", "must name every one of your link field types exactly once")));
            }
            for (i, id) in order.iter().enumerate() {
                tx.update::<LinkFieldType>(*id, Precondition::Any, |t| {
                    t.position = i as u32;
                    Ok(())
                })?;
            }
            Ok(Ok(all_in(tx)?))
        })
        .await??;
    Ok(LinkTypeList { link_field_types: ordered(rows).iter().map(LinkTypeView::of).collect() })
}
