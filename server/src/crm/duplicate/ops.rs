//! The duplicate scan and dismissals, at the existing clients' shapes.
//!
//! Pairs come from the contacts' own index entries, never from comparing all pairs: contacts
//! sharing an email (`email`), a phone after normalisation (`phone`, its last nine digits) or a
//! whole name (`name`) are paired within each value's group; contacts of the same surname whose
//! given names are close (one edit apart, two for longer names, or one the other's start: Jon and
//! John, Chris and Christopher) are paired when they also share an organisation
//! (`similar_name_organization`) or an address (`similar_name_address`), which only those few
//! candidates are read for. A value shared by more than [`MAX_GROUP`] contacts (a company's
//! switchboard) pairs nobody: it says nothing about who is whom. Archived contacts are included;
//! dismissed pairs are left out. The confidence grows with the kinds of evidence (see
//! [`confidence`]); pairs come best first, then by their ids.

use std::collections::{BTreeSet, HashMap, HashSet};

use mycorrhizal_engine::{UserScope, UserView};
use serde::{Deserialize, Serialize};
use utoipa::{IntoParams, ToSchema};

use super::{DuplicateDismissal, PAIR};
use crate::crm::contact::view::ContactSummary;
use crate::crm::contact::{Contact, INDEX_EMAIL, INDEX_PHONE, INDEX_SORT_NAME, INDEX_UID};
use crate::crm::{Error, Result};

/// The most contacts one value pairs; a value held by more pairs none.
pub const MAX_GROUP: usize = 50;

/// Why two contacts are probably one person.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum Reason {
    Email,
    Name,
    Phone,
    SimilarNameOrganization,
    SimilarNameAddress,
}

/// Two contacts that are probably one person.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct DuplicatePair {
    /// The contact with the smaller id.
    pub a: ContactSummary,
    pub b: ContactSummary,
    /// Every kind of evidence found, in this order: `email`, `name`, `phone`,
    /// `similar_name_organization`, `similar_name_address`.
    pub reasons: Vec<Reason>,
    /// 0.5 (the same name only) to 0.98 (email, phone and name).
    pub confidence: f64,
}

#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct DuplicatePage {
    pub pairs: Vec<DuplicatePair>,
    /// Pairs found in all (dismissed ones left out).
    pub total: u64,
    pub page: u32,
    pub limit: u32,
}

#[derive(Debug, Clone, Default, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct DuplicateQuery {
    /// 1-based page (default 1, at most 1,000,000).
    #[param(value_type = Option<u32>, minimum = 1, maximum = 1000000)]
    pub page: Option<String>,
    /// Pairs per page (default 25, 1 to 100).
    #[param(value_type = Option<u32>, minimum = 1, maximum = 100)]
    pub limit: Option<String>,
}

/// How sure a pair is, from the kinds of evidence (the existing implementation's scale, with the
/// close-name evidence between a name and nothing).
pub fn confidence(reasons: &BTreeSet<Reason>) -> f64 {
    let email = reasons.contains(&Reason::Email);
    let phone = reasons.contains(&Reason::Phone);
    let name = reasons.contains(&Reason::Name);
    let similar = reasons.contains(&Reason::SimilarNameOrganization) || reasons.contains(&Reason::SimilarNameAddress);
    match (email, phone, name, similar) {
        (true, true, true, _) => 0.98,
        (true, true, false, _) => 0.95,
        (true, _, true, _) | (_, true, true, _) => 0.90,
        (true, _, _, true) | (_, true, _, true) => 0.85,
        (false, true, false, false) => 0.75,
        (true, false, false, false) => 0.70,
        (false, false, false, true) => 0.60,
        _ => 0.50,
    }
}

/// Edit distance of two short names (characters).
fn distance(a: &str, b: &str) -> usize {
    let a: Vec<char> = a.chars().collect();
    let b: Vec<char> = b.chars().collect();
    let mut previous: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.iter().enumerate() {
        let mut current = vec![i + 1];
        for (j, cb) in b.iter().enumerate() {
            let cost = usize::from(ca != cb);
            current.push((previous[j] + cost).min(previous[j + 1] + 1).min(current[j] + 1));
        }
        previous = current;
    }
    previous[b.len()]
}

/// Whether two different given names are probably one (Jon and John, Chris and Christopher).
pub fn close_names(a: &str, b: &str) -> bool {
    if a == b || a.is_empty() || b.is_empty() {
        return false;
    }
    let (short, long) = if a.chars().count() <= b.chars().count() { (a, b) } else { (b, a) };
    if short.chars().count() >= 3 && long.starts_with(short) {
        return true;
    }
    let allowed = if long.chars().count() > 6 { 2 } else { 1 };
    distance(a, b) <= allowed
}

/// Adds every pair of `ids` with `reason` (a group past [`MAX_GROUP`] pairs none).
fn pair_up(ids: &[u64], reason: Reason, pairs: &mut HashMap<(u64, u64), BTreeSet<Reason>>) {
    if ids.len() < 2 || ids.len() > MAX_GROUP {
        return;
    }
    for (i, a) in ids.iter().enumerate() {
        for b in &ids[i + 1..] {
            if a != b {
                pairs.entry(((*a).min(*b), (*a).max(*b))).or_default().insert(reason);
            }
        }
    }
}

/// Every pair of the user's live contacts that is probably one person, with its reasons.
pub fn find_pairs(view: &UserView) -> Result<HashMap<(u64, u64), BTreeSet<Reason>>> {
    let mut pairs: HashMap<(u64, u64), BTreeSet<Reason>> = HashMap::new();
    // Surname and given name's first letter -> (given name, id), for the close names.
    let mut blocks: HashMap<(String, char), Vec<(String, u64)>> = HashMap::new();
    let mut run: Option<(String, String)> = None;
    let mut ids: Vec<u64> = Vec::new();
    let flush =
        |run: &Option<(String, String)>, ids: &mut Vec<u64>, pairs: &mut HashMap<(u64, u64), BTreeSet<Reason>>| {
            if let Some((index, value)) = run {
                let reason = match index.as_str() {
                    INDEX_EMAIL => Some(Reason::Email),
                    INDEX_PHONE => Some(Reason::Phone),
                    INDEX_SORT_NAME if value.split_whitespace().count() >= 2 => Some(Reason::Name),
                    _ => None,
                };
                if let Some(reason) = reason {
                    ids.sort_unstable();
                    ids.dedup();
                    pair_up(ids, reason, pairs);
                }
            }
            ids.clear();
        };
    for (index, value, id) in view.index_entries::<Contact>()? {
        if !matches!(index.as_str(), INDEX_EMAIL | INDEX_PHONE | INDEX_SORT_NAME) || value.trim().is_empty() {
            continue;
        }
        if index == INDEX_SORT_NAME {
            let mut words = value.split_whitespace();
            if let (Some(surname), Some(given)) = (words.next(), words.next())
                && let Some(first) = given.chars().next()
            {
                blocks.entry((surname.to_string(), first)).or_default().push((given.to_string(), id));
            }
        }
        if run.as_ref().is_none_or(|(i, v)| *i != index || *v != value) {
            flush(&run, &mut ids, &mut pairs);
            run = Some((index, value));
        }
        ids.push(id);
    }
    flush(&run, &mut ids, &mut pairs);

    // Close names: candidates from each block, confirmed by a shared organisation or address.
    let mut candidates: Vec<(u64, u64)> = Vec::new();
    for members in blocks.values() {
        if members.len() < 2 || members.len() > MAX_GROUP {
            continue;
        }
        for (i, (given_a, a)) in members.iter().enumerate() {
            for (given_b, b) in &members[i + 1..] {
                if a != b && close_names(given_a, given_b) {
                    candidates.push(((*a).min(*b), (*a).max(*b)));
                }
            }
        }
    }
    if !candidates.is_empty() {
        let lookup = view.lookup::<Contact>()?;
        let norm = |s: &str| s.split_whitespace().collect::<Vec<_>>().join(" ").to_lowercase();
        for (a, b) in candidates {
            let (Ok(ra), Ok(rb)) = (lookup.get(a), lookup.get(b)) else { continue };
            let (fa, fb) = (&ra.body.flat, &rb.body.flat);
            if !fa.org.trim().is_empty() && norm(&fa.org) == norm(&fb.org) {
                pairs.entry((a, b)).or_default().insert(Reason::SimilarNameOrganization);
            }
            if !fa.address.trim().is_empty() && norm(&fa.address) == norm(&fb.address) {
                pairs.entry((a, b)).or_default().insert(Reason::SimilarNameAddress);
            }
        }
    }
    let dismissed: HashSet<(u64, u64)> =
        view.list::<DuplicateDismissal>()?.into_iter().map(|r| (r.body.low, r.body.high)).collect();
    pairs.retain(|pair, _| !dismissed.contains(pair));
    Ok(pairs)
}

fn number(field: &str, raw: Option<&str>, default: u32, max: u32) -> Result<u32> {
    match raw.map(str::trim).filter(|v| !v.is_empty()) {
        None => Ok(default),
        Some(v) => match v.parse::<u32>() {
            Ok(n) if (1..=max).contains(&n) => Ok(n),
            _ => Err(Error::bad_parameter(field, format!("must be a whole number from 1 to {max}"))),
        },
    }
}

/// One page of the scan, best first.
pub fn scan(view: &UserView, query: &DuplicateQuery) -> Result<DuplicatePage> {
    let page = number("page", query.page.as_deref(), 1, 1_000_000)?;
    let limit = number("limit", query.limit.as_deref(), 25, 100)?;
    let mut ranked: Vec<((u64, u64), BTreeSet<Reason>, f64)> = find_pairs(view)?
        .into_iter()
        .map(|(pair, reasons)| {
            let c = confidence(&reasons);
            (pair, reasons, c)
        })
        .collect();
    ranked.sort_by(|x, y| y.2.total_cmp(&x.2).then(x.0.cmp(&y.0)));
    let total = ranked.len() as u64;
    let start = (page as usize - 1).saturating_mul(limit as usize);
    let lookup = view.lookup::<Contact>()?;
    let mut pairs = Vec::new();
    for ((a, b), reasons, confidence) in ranked.into_iter().skip(start).take(limit as usize) {
        let (Ok(ra), Ok(rb)) = (lookup.get(a), lookup.get(b)) else { continue };
        pairs.push(DuplicatePair {
            a: ContactSummary::of(&ra),
            b: ContactSummary::of(&rb),
            reasons: reasons.into_iter().collect(),
            confidence,
        });
    }
    Ok(DuplicatePage { pairs, total, page, limit })
}

/// A pair not to be offered again, named by the contacts' vCard UIDs.
#[derive(Debug, Clone, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
#[schema(as = DuplicateDismissInput)]
pub struct DismissInput {
    pub uid_a: String,
    pub uid_b: String,
}

/// Dismisses a pair for good; dismissing it again is not an error. Both must be the caller's
/// live contacts and differ (else `NotFound`, as the existing implementation answers).
pub async fn dismiss(scope: &UserScope, input: DismissInput) -> Result<()> {
    let (uid_a, uid_b) = (input.uid_a.trim().to_lowercase(), input.uid_b.trim().to_lowercase());
    Ok(scope
        .write_async(move |tx| {
            let one = |uid: &str| -> mycorrhizal_engine::Result<Option<u64>> {
                for id in tx.find::<Contact>(INDEX_UID, uid)? {
                    if tx.get::<Contact>(id).is_ok() {
                        return Ok(Some(id));
                    }
                }
                Ok(None)
            };
            let (Some(a), Some(b)) = (one(&uid_a)?, one(&uid_b)?) else { return Ok(Err(Error::NotFound)) };
            if a == b {
                return Ok(Err(Error::NotFound));
            }
            let dismissal = DuplicateDismissal::of(a, b);
            if tx.find::<DuplicateDismissal>(PAIR, &dismissal.key())?.is_empty() {
                tx.create(dismissal)?;
            }
            Ok(Ok(()))
        })
        .await??)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn close_given_names_are_one_edit_apart_or_one_starts_the_other() {
        for (a, b) in
            [("jon", "john"), ("chris", "christopher"), ("steven", "stephen"), ("ann", "anne"), ("mia", "mya")]
        {
            assert!(close_names(a, b), "{a} {b}");
            assert!(close_names(b, a), "{b} {a}");
        }
        for (a, b) in
            [("jon", "jon"), ("ann", "bob"), ("al", "albert"), ("maria", "marcus"), ("", "x"), ("kate", "katherine")]
        {
            assert!(!close_names(a, b), "{a} {b}");
        }
    }

    #[test]
    fn confidence_grows_with_the_kinds_of_evidence() {
        let of = |r: &[Reason]| confidence(&r.iter().copied().collect());
        assert_eq!(of(&[Reason::Email, Reason::Phone, Reason::Name]), 0.98);
        assert_eq!(of(&[Reason::Email, Reason::Phone]), 0.95);
        assert_eq!(of(&[Reason::Name, Reason::Phone]), 0.90);
        assert_eq!(of(&[Reason::Email, Reason::SimilarNameOrganization]), 0.85);
        assert_eq!(of(&[Reason::Phone]), 0.75);
        assert_eq!(of(&[Reason::Email]), 0.70);
        assert_eq!(of(&[Reason::SimilarNameAddress]), 0.60);
        assert_eq!(of(&[Reason::Name]), 0.50);
    }

    #[test]
    fn a_group_past_the_cap_pairs_nobody() {
        let mut pairs = HashMap::new();
        pair_up(&(0..=MAX_GROUP as u64).collect::<Vec<_>>(), Reason::Phone, &mut pairs);
        assert!(pairs.is_empty());
        pair_up(&[3, 1, 2], Reason::Phone, &mut pairs);
        assert_eq!(pairs.len(), 3);
        assert!(pairs.contains_key(&(1, 3)));
    }
}
