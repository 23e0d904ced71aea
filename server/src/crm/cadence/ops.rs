//! Cadence policies ("keep in touch every N days") and their health, computed on every read from
//! the contact's activities, never stored: the last qualifying interaction, when the next one is
//! due, and how many days overdue it is. The reach-out scan and the dashboard read the same
//! [`overdue`] as `/cadence-policies/overdue`.

use jiff::{SignedDuration, Timestamp};
use mycorrhizal_engine::{Precondition, Row, UserScope, UserView, Walk};
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use crate::crm::cadence::CadencePolicy;
use crate::crm::contact::{Contact, INDEX_CIRCLE, INDEX_TAG, INDEX_UID};
use crate::crm::{Error, Result};
use crate::crm::{activity::Activity, records::BY_CONTACT, records::contact_range};

#[derive(Debug, Clone, Deserialize, ToSchema)]
pub struct PolicyInput {
    /// `contact` (default), `circle` or `tag`.
    #[schema(pattern = "^(contact|circle|tag)$")]
    pub scope: Option<String>,
    /// For a contact policy: its id ...
    pub contact_id: Option<u64>,
    /// ... or its vCard UID (the existing clients' `entity_id`).
    pub entity_id: Option<String>,
    /// For a circle or tag policy: its name, 1 to 100 characters.
    #[schema(max_length = 100)]
    pub target: Option<String>,
    /// 1 to 3650 (required, or as `target_interval_days`).
    #[schema(minimum = 1, maximum = 3650)]
    pub interval_days: Option<u32>,
    /// The existing clients' name for `interval_days`.
    #[schema(minimum = 1, maximum = 3650)]
    pub target_interval_days: Option<u32>,
    /// Activity types that count (`call`, `meal`, ...); empty means any activity.
    #[serde(default)]
    pub qualifying_types: Vec<String>,
}

/// `{total, cadence_policies}`: every keep-in-touch policy of the user.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct PolicyList {
    pub total: usize,
    pub cadence_policies: Vec<PolicyView>,
    /// Always empty: the list is never cut into pages.
    pub next_cursor: String,
    /// How many are listed.
    pub limit: usize,
    /// How a client keeps this collection current.
    pub sync: crate::crm::cursor::SyncInfo,
}

/// `{overdue}`: the contacts past their cadence, most overdue first.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct OverdueList {
    pub overdue: Vec<Overdue>,
}

/// A policy as clients read it.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct PolicyView {
    pub id: u64,
    pub scope: String,
    pub target: String,
    pub interval_days: u32,
    /// `interval_days`, by the existing clients' name.
    pub target_interval_days: u32,
    pub qualifying_types: Vec<String>,
    /// A contact policy's contact, by vCard UID (in lists).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub entity_id: Option<String>,
    /// How a contact policy's contact stands (in lists).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub health: Option<Health>,
    /// `revision`, `etag`, `created_at`, `updated_at`.
    #[serde(flatten)]
    pub stamp: crate::crm::Stamp,
}

impl PolicyView {
    pub fn of(row: &Row<CadencePolicy>) -> PolicyView {
        PolicyView {
            id: row.id,
            scope: row.body.scope.clone(),
            target: row.body.target.clone(),
            interval_days: row.body.interval_days,
            target_interval_days: row.body.interval_days,
            qualifying_types: row.body.qualifying.clone(),
            entity_id: None,
            health: None,
            stamp: crate::crm::Stamp::of(row),
        }
    }
}

/// How one contact stands under one policy. (Named `CadenceHealth` in the document: `Health` is
/// the service's health report.)
#[derive(Debug, Clone, Serialize, ToSchema)]
#[schema(as = CadenceHealth)]
pub struct Health {
    pub has_qualifying_interaction: bool,
    #[schema(value_type = Option<String>)]
    pub last_interaction: Option<Timestamp>,
    #[schema(value_type = String)]
    pub next_due: Timestamp,
    /// Whole days past `next_due` (0 when not overdue).
    pub overdue_by: i64,
    pub overdue: bool,
}

/// A covered contact and its health.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct CoveredContact {
    pub contact_id: u64,
    pub health: Health,
}

/// A policy with the health of each contact it covers.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct PolicyDetail {
    #[serde(flatten)]
    pub policy: PolicyView,
    pub contacts: Vec<CoveredContact>,
}

/// An overdue (policy, contact) pair.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct Overdue {
    pub policy: PolicyView,
    pub health: Health,
    pub contact_id: u64,
    pub contact_name: String,
}

impl PolicyInput {
    /// The policy this input makes; a contact policy's contact must be the user's (`exists`;
    /// `find` reads a vCard UID).
    fn policy(self, exists: impl Fn(u64) -> bool, find: impl Fn(&str) -> Option<u64>) -> Result<CadencePolicy> {
        let scope = self.scope.unwrap_or_else(|| "contact".into());
        // Ids are at most i64::MAX (the document's `int64`), whatever the scope.
        if self.contact_id.is_some_and(|id| i64::try_from(id).is_err()) {
            return Err(Error::invalid("contact_id", "must be at most 9223372036854775807"));
        }
        let target = if scope == "contact" {
            let id = match (self.contact_id, self.entity_id.as_deref().map(str::trim).filter(|u| !u.is_empty())) {
                (Some(id), _) => id,
                (None, Some(uid)) => find(uid).ok_or(Error::NotFound)?,
                (None, None) => return Err(Error::invalid("contact_id", "is required for a contact policy")),
            };
            if !exists(id) {
                return Err(Error::NotFound);
            }
            id.to_string()
        } else {
            self.target.unwrap_or_default().trim().to_string()
        };
        if self.target_interval_days.is_some_and(|t| !(1..=3650).contains(&t)) {
            return Err(Error::invalid("target_interval_days", "must be 1 to 3650"));
        }
        let interval_days = self
            .interval_days
            .or(self.target_interval_days)
            .ok_or_else(|| Error::invalid("interval_days", "is required: 1 to 3650"))?;
        Ok(CadencePolicy { scope, target, interval_days, qualifying: self.qualifying_types })
    }
}

/// Creates a policy (with `id`: replaces policy `id` under `pre`). The contact check and the
/// write are one transaction.
pub async fn save(
    scope: &UserScope,
    id: Option<(u64, Precondition)>,
    input: PolicyInput,
) -> Result<Row<CadencePolicy>> {
    scope
        .write_async(move |tx| {
            let find = |uid: &str| {
                tx.find::<Contact>(INDEX_UID, &uid.to_lowercase())
                    .ok()?
                    .into_iter()
                    .find(|c| tx.get::<Contact>(*c).is_ok())
            };
            let policy = match input.clone().policy(|c| tx.get::<Contact>(c).is_ok(), find) {
                Ok(p) => p,
                Err(e) => return Ok(Err(e)),
            };
            Ok(Ok(match id {
                None => tx.create(policy)?,
                Some((id, pre)) => tx.put(id, pre, policy)?,
            }))
        })
        .await?
}

/// The contacts a policy covers.
fn covered(v: &UserView, p: &CadencePolicy) -> Result<Vec<u64>> {
    Ok(match p.scope.as_str() {
        "contact" => p.target.parse::<u64>().ok().filter(|id| v.get::<Contact>(*id).is_ok()).into_iter().collect(),
        "circle" => v.find::<Contact>(INDEX_CIRCLE, &p.target)?,
        _ => v.find::<Contact>(INDEX_TAG, &p.target)?,
    })
}

/// Health of `contact` under `policy` at `now`.
pub fn health(v: &UserView, policy: &Row<CadencePolicy>, contact: u64, now: Timestamp) -> Result<Health> {
    let (from, to) = contact_range(contact);
    let walk = Walk { index: BY_CONTACT, from: &from, to: Some(&to), after: None, descending: true };
    let kinds = &policy.body.qualifying;
    let last = v
        .walk::<Activity>(walk, 1, |a| a.body.date <= now && (kinds.is_empty() || kinds.contains(&a.body.kind)))?
        .rows
        .into_iter()
        .next();
    let interval = SignedDuration::from_hours(i64::from(policy.body.interval_days) * 24);
    let since = last.as_ref().map(|a| a.body.date).unwrap_or(policy.meta.created_at);
    let next_due = since.checked_add(interval).map_err(Error::internal)?;
    let overdue_by = if now > next_due { now.duration_since(next_due).as_hours() / 24 } else { 0 };
    Ok(Health {
        has_qualifying_interaction: last.is_some(),
        last_interaction: last.map(|a| a.body.date),
        next_due,
        overdue_by,
        overdue: now > next_due,
    })
}

/// Every policy, oldest first.
pub fn list(v: &UserView) -> Result<Vec<PolicyView>> {
    Ok(v.list::<CadencePolicy>()?.iter().map(PolicyView::of).collect())
}

/// The policies (only those of contact `only`, a vCard UID or id, when given), a contact
/// policy with its contact's UID and health at `now`.
pub fn list_with_health(v: &UserView, only: Option<&str>, now: Timestamp) -> Result<Vec<PolicyView>> {
    let only = match only.map(str::trim).filter(|o| !o.is_empty()) {
        None => None,
        Some(text) => Some(crate::crm::contact::named(v, text).ok_or(Error::NotFound)?),
    };
    let mut out = Vec::new();
    for row in v.list::<CadencePolicy>()? {
        let contact = (row.body.scope == "contact").then(|| row.body.target.parse::<u64>().ok()).flatten();
        if only.is_some() && contact != only {
            continue;
        }
        let mut view = PolicyView::of(&row);
        if let Some(c) = contact
            && let Ok(found) = v.get::<Contact>(c)
        {
            view.entity_id = Some(found.body.uid);
            view.health = Some(health(v, &row, c, now)?);
        }
        out.push(view);
    }
    Ok(out)
}

/// Policy `id` with the health of every contact it covers.
pub fn detail(v: &UserView, id: u64, now: Timestamp) -> Result<(Row<CadencePolicy>, PolicyDetail)> {
    let row = v.get::<CadencePolicy>(id)?;
    let contacts = covered(v, &row.body)?
        .into_iter()
        .map(|c| health(v, &row, c, now).map(|health| CoveredContact { contact_id: c, health }))
        .collect::<Result<_>>()?;
    let detail = PolicyDetail { policy: PolicyView::of(&row), contacts };
    Ok((row, detail))
}

/// Every (policy, contact) pair that is overdue, most overdue first.
pub fn overdue(v: &UserView, now: Timestamp) -> Result<Vec<Overdue>> {
    let mut out = Vec::new();
    for policy in v.list::<CadencePolicy>()? {
        for contact in covered(v, &policy.body)? {
            let health = health(v, &policy, contact, now)?;
            if health.overdue {
                let contact_name = v.get::<Contact>(contact).map(|c| c.body.name()).unwrap_or_default();
                out.push(Overdue { policy: PolicyView::of(&policy), health, contact_id: contact, contact_name });
            }
        }
    }
    out.sort_by_key(|o| std::cmp::Reverse(o.health.overdue_by));
    Ok(out)
}

/// Removes policy `id` (the contacts it covered are no longer tracked by it).
pub async fn delete(scope: &UserScope, id: u64, pre: Precondition) -> Result<()> {
    crate::crm::records::delete::<CadencePolicy>(scope, id, pre).await
}
