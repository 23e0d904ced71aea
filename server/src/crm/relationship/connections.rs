//! How someone is connected to everyone they can be reached from (`GET /graph/connections`):
//! the shortest chain of confirmed, non-secret relationships from one contact to each other
//! contact within a depth, each step saying what that contact is to the one before
//! (`sibling_of`, ...), optionally only chains passing through one kind of relation.

use std::collections::{BTreeMap, HashMap};

use mycorrhizal_engine::UserView;
use serde::Serialize;
use utoipa::ToSchema;

use super::{Relationship, inverse, relation_token};
use crate::crm::contact::{Contact, named};
use crate::crm::{Error, Result};

/// The deepest chain asked for.
pub const MAX_DEPTH: u32 = 5;
/// Paths explored at most (a dense book stays bounded; the answer is then what was found).
const MAX_PATHS: usize = 200_000;

#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct Step {
    pub contact_id: u64,
    pub contact_vcard_uid: String,
    pub contact_name: String,
    /// What this contact is to the one before it.
    pub relation: String,
}

#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct Chain {
    pub target_id: u64,
    pub target_vcard_uid: String,
    pub target_name: String,
    pub depth: u32,
    pub steps: Vec<Step>,
}

#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct Connections {
    pub from_vcard_uid: String,
    pub from_name: String,
    pub depth: u32,
    /// One per reachable contact (the shortest), by depth then name.
    pub chains: Vec<Chain>,
}

/// A relation word as a token: `brothers` → `sibling_of`.
fn resolved(word: &str) -> String {
    let token = relation_token(word);
    if token.ends_with("_of")
        || token == "owns"
        || token == "owned_by"
        || super::KNOWN_RELATIONS.contains(&token.as_str())
    {
        return token;
    }
    match token.strip_suffix('s') {
        Some(single) => relation_token(single),
        None => token,
    }
}

/// Contact `from` (vCard UID or id)'s chains up to `depth` hops, only those with a step of
/// `relation` when given.
pub fn connections(v: &UserView, from: &str, depth: u32, relation: Option<&str>) -> Result<Connections> {
    let from = from.trim();
    if from.is_empty() {
        return Err(Error::bad_parameter("from", "is required: a contact's vCard UID"));
    }
    let start = named(v, from).ok_or(Error::NotFound)?;
    let me = v.get::<Contact>(start)?;
    if depth == 0 || depth > MAX_DEPTH {
        return Err(Error::bad_parameter("depth", format!("must be 1 to {MAX_DEPTH}")));
    }
    let wanted = relation.map(str::trim).filter(|r| !r.is_empty()).map(resolved);
    // Who is what to whom: `next[a]` holds (b, what b is to a).
    let mut next: HashMap<u64, Vec<(u64, String)>> = HashMap::new();
    for edge in v.list::<Relationship>()? {
        let r = &edge.body;
        if !r.is_confirmed() || r.sensitivity == "secret" {
            continue;
        }
        next.entry(r.target).or_default().push((r.source, r.kind.clone()));
        let back = inverse(&r.kind).map_or_else(|| r.kind.clone(), str::to_string);
        next.entry(r.source).or_default().push((r.target, back));
    }
    let mut best: BTreeMap<u64, Vec<(u64, String)>> = BTreeMap::new();
    let mut path: Vec<(u64, String)> = Vec::new();
    let mut explored = 0usize;
    walk(start, start, depth, &next, &wanted, &mut path, &mut best, &mut explored);
    let mut names: HashMap<u64, (String, String)> = HashMap::new();
    let mut named = |id: u64| -> (String, String) {
        names
            .entry(id)
            .or_insert_with(|| match v.get::<Contact>(id) {
                Ok(c) => (c.body.uid.clone(), c.body.name()),
                Err(_) => (String::new(), String::new()),
            })
            .clone()
    };
    let mut chains: Vec<Chain> = best
        .into_iter()
        .map(|(target, steps)| {
            let (target_vcard_uid, target_name) = named(target);
            let steps = steps
                .into_iter()
                .map(|(id, relation)| {
                    let (uid, name) = named(id);
                    Step { contact_id: id, contact_vcard_uid: uid, contact_name: name, relation }
                })
                .collect::<Vec<_>>();
            Chain { target_id: target, target_vcard_uid, target_name, depth: steps.len() as u32, steps }
        })
        .collect();
    chains.sort_by(|a, b| a.depth.cmp(&b.depth).then_with(|| a.target_name.cmp(&b.target_name)));
    Ok(Connections { from_vcard_uid: me.body.uid.clone(), from_name: me.body.name(), depth, chains })
}

/// Every simple path from `origin` through `at` of at most `left` more hops; the shortest to each
/// contact (with a step of `wanted`, when given) is kept in `best`.
#[allow(clippy::too_many_arguments)]
fn walk(
    origin: u64,
    at: u64,
    left: u32,
    next: &HashMap<u64, Vec<(u64, String)>>,
    wanted: &Option<String>,
    path: &mut Vec<(u64, String)>,
    best: &mut BTreeMap<u64, Vec<(u64, String)>>,
    explored: &mut usize,
) {
    if left == 0 || *explored >= MAX_PATHS {
        return;
    }
    for (other, relation) in next.get(&at).map(Vec::as_slice).unwrap_or_default() {
        if *other == origin || path.iter().any(|(id, _)| id == other) {
            continue;
        }
        *explored += 1;
        path.push((*other, relation.clone()));
        let counts = wanted.as_deref().is_none_or(|w| path.iter().any(|(_, r)| r == w));
        if counts && best.get(other).is_none_or(|kept| kept.len() > path.len()) {
            best.insert(*other, path.clone());
        }
        walk(origin, *other, left - 1, next, wanted, path, best, explored);
        path.pop();
    }
}
