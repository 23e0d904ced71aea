//! The contact list: filters (archived, favourites, circle, tag), name or recency order, cursor
//! paging with a total, and the full-text filter through the search index (the same engine and
//! rules as `/search`).

use mycorrhizal_engine::{Plan, Row, SEARCH_TOTAL_CAP, SearchRequest, UPDATED_INDEX, UserScope, Walk};

use super::view::{ContactPage, ContactSummary};
use super::{Contact, INDEX_ARCHIVED, INDEX_SORT_NAME};
use crate::crm::cursor::{decode_cursor, encode_cursor};
use crate::crm::{Error, Result};

/// The order of a list.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Sort {
    /// Newest change first by default.
    Updated,
    /// A to Z by default.
    Name,
}

/// What a list asks for.
#[derive(Debug, Clone, Default)]
pub struct ListParams {
    /// Full-text filter; without an explicit sort, best matches first.
    pub search: Option<String>,
    pub circle: Option<String>,
    pub tag: Option<String>,
    pub include_archived: bool,
    pub archived_only: bool,
    pub favorites: bool,
    /// Only contacts that can be reached: an email, a phone number or a link (the page then
    /// says how many others matched as `hidden_count`).
    pub has_contact_info: bool,
    /// `None`: recency (or relevance when searching).
    pub sort: Option<Sort>,
    /// `None`: the sort's default direction.
    pub descending: Option<bool>,
    pub limit: usize,
    /// The previous page's `next_cursor`.
    pub cursor: Option<String>,
}

/// How exact a page's `total` is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Count {
    /// Every match counted.
    Exact,
    /// At least `total` match (a bounded count stopped there).
    AtLeast,
}

/// One page of the user's contacts, with every match counted.
pub fn list(scope: &UserScope, p: ListParams) -> Result<ContactPage> {
    Ok(list_counted(scope, p, false)?.0)
}

/// One page of the user's contacts. With `bounded`, a search in relevance order (the common
/// case of search as you type) asks the index only for the hits up to this page and counts the
/// matches up to the engine's cap (`SEARCH_TOTAL_CAP`), answered as [`Count::AtLeast`] when it
/// reached it, instead of ranking and counting every match on each keystroke.
pub fn list_counted(scope: &UserScope, p: ListParams, bounded: bool) -> Result<(ContactPage, Count)> {
    let (index, default_desc) = match p.sort.unwrap_or(Sort::Updated) {
        Sort::Updated => (UPDATED_INDEX, true),
        Sort::Name => (INDEX_SORT_NAME, false),
    };
    let descending = p.descending.unwrap_or(default_desc);
    let limit = p.limit;
    let after = p.cursor.as_deref().filter(|c| !c.trim().is_empty()).map(decode_cursor).transpose()?;
    let circle = p.circle.clone().filter(|c| !c.is_empty());
    let tag = p.tag.clone().filter(|t| !t.is_empty());
    let (include_archived, archived_only, favorites) = (p.include_archived, p.archived_only, p.favorites);
    let reachable_only = p.has_contact_info;
    let base = |row: &Row<Contact>| {
        let c = &row.body;
        (if archived_only { c.archived } else { include_archived || !c.archived })
            && (!favorites || c.favorite)
            && circle.as_ref().is_none_or(|name| c.circles.contains(name))
            && tag.as_ref().is_none_or(|t| c.tags.contains(t))
    };
    let keep = |row: &Row<Contact>| base(row) && (!reachable_only || reachable(&row.body));
    let hidden = |row: &Row<Contact>| base(row) && !reachable(&row.body);
    if let Some(needle) = p.search.as_deref().map(str::trim).filter(|s| !s.is_empty()) {
        let plan = Plan::parse(needle);
        let digits = super::phone_digits(needle).and_then(|d| Plan::parse(&d));
        let narrowed = favorites || circle.is_some() || tag.is_some() || reachable_only;
        let sort = p.sort.is_some().then_some((index, descending));
        let archived = (include_archived, archived_only);
        let (mut page, count) =
            searched(scope, plan.as_ref(), digits.as_ref(), sort, archived, &keep, narrowed, after, limit, bounded)?;
        if reachable_only {
            let (others, _) =
                searched(scope, plan.as_ref(), digits.as_ref(), None, archived, &hidden, true, None, 1, false)?;
            page.hidden_count = Some(others.total);
        }
        return Ok((page, count));
    }
    let view = scope.view()?;
    let walk = Walk { index, from: "", to: None, after: after.as_ref().map(|(v, id)| (v.as_str(), *id)), descending };
    let page = view.walk::<Contact>(walk, limit, keep)?;
    let filtered = circle.is_some() || tag.is_some() || favorites || reachable_only;
    let total = if filtered {
        view.walk::<Contact>(Walk { after: None, ..walk }, usize::MAX, keep)?.rows.len() as u64
    } else {
        let archived = view.count_where::<Contact>(INDEX_ARCHIVED, "1")?;
        let all = view.count::<Contact>()?;
        if archived_only {
            archived
        } else if include_archived {
            all
        } else {
            all.saturating_sub(archived)
        }
    };
    let next_cursor = page.next.as_ref().map(|(v, id)| encode_cursor(v, *id)).unwrap_or_default();
    let contacts = page.rows.iter().map(ContactSummary::of).collect();
    let hidden_count = match reachable_only {
        true => {
            let mut n = 0;
            view.walk::<Contact>(Walk { after: None, ..walk }, usize::MAX, |r| {
                n += u64::from(hidden(r));
                false
            })?;
            Some(n)
        }
        false => None,
    };
    Ok((
        ContactPage {
            contacts,
            next_cursor,
            sync: crate::crm::cursor::SyncInfo::full_resync(),
            limit,
            total,
            hidden_count,
        },
        Count::Exact,
    ))
}

/// Whether a contact can be reached: an email, a phone number or a link that is not blank.
pub fn reachable(c: &Contact) -> bool {
    let given = |s: &str| !s.trim().is_empty();
    let f = &c.flat;
    given(&f.email)
        || given(&f.phone)
        || f.emails.iter().any(|e| given(e))
        || f.phones.iter().any(|p| given(&p.value))
        || c.parsed_card()
            .extra
            .get("links")
            .and_then(|l| l.as_array())
            .is_some_and(|links| links.iter().any(|l| l.get("uri").and_then(|u| u.as_str()).is_some_and(given)))
}

/// Cursor value of a page in relevance order (its id part is the offset).
const RELEVANCE_CURSOR: &str = "~rank";

/// The list filtered by a search term, through the full-text index (the same engine and rules
/// as `/search`). Without an explicit `sort`, the best matches come first. `digits`: the term
/// as a phone number's digits, whose matches follow the term's own.
#[allow(clippy::too_many_arguments)]
fn searched(
    scope: &UserScope,
    plan: Option<&Plan>,
    digits: Option<&Plan>,
    sort: Option<(&'static str, bool)>,
    archived: (bool, bool),
    keep: &dyn Fn(&Row<Contact>) -> bool,
    narrowed: bool,
    after: Option<(String, u64)>,
    limit: usize,
    bounded: bool,
) -> Result<(ContactPage, Count)> {
    let page = |contacts: Vec<ContactSummary>, next_cursor: String, total: usize| ContactPage {
        contacts,
        next_cursor,
        sync: crate::crm::cursor::SyncInfo::full_resync(),
        limit,
        total: total as u64,
        hidden_count: None,
    };
    let Some(plan) = plan else { return Ok((page(Vec::new(), String::new(), 0), Count::Exact)) };
    let (include_archived, archived_only) = archived;
    let offset = match (&after, sort) {
        (Some((value, offset)), None) if value == RELEVANCE_CURSOR => *offset as usize,
        (Some(_), None) => return Err(Error::bad_parameter("cursor", "belongs to another sort order")),
        _ => 0,
    };
    // Only the relevance order of every match (no filter to apply after the index) can stop at
    // this page's hits; a sort or a filter needs them all.
    let pruned = bounded && sort.is_none() && !narrowed && !archived_only && digits.is_none();
    let request = SearchRequest {
        plan,
        kinds: Some(&["contact"]),
        include_hidden: include_archived || archived_only,
        contacts: None,
        limit: if pruned { offset.saturating_add(limit) } else { usize::MAX },
        offset: 0,
    };
    let group = scope.search(&request)?.pop();
    let mut counted = group.as_ref().map(|g| g.total).unwrap_or(0);
    let mut hits = group.map(|g| g.hits).unwrap_or_default();
    if let Some(digits) = digits {
        let more = scope.search(&SearchRequest { plan: digits, ..request })?.pop().map(|g| g.hits).unwrap_or_default();
        let seen: std::collections::HashSet<u64> = hits.iter().map(|h| h.id).collect();
        hits.extend(more.into_iter().filter(|h| !seen.contains(&h.id)));
        counted = hits.len();
    }
    let view = scope.view()?;
    if pruned {
        let rows: Vec<Row<Contact>> =
            hits.iter().skip(offset).take(limit).filter_map(|h| view.get::<Contact>(h.id).ok()).collect();
        let total = counted.max(hits.len());
        let count = if total >= SEARCH_TOTAL_CAP { Count::AtLeast } else { Count::Exact };
        let next = if offset + limit < total {
            encode_cursor(RELEVANCE_CURSOR, (offset + limit) as u64)
        } else {
            String::new()
        };
        return Ok((page(rows.iter().map(ContactSummary::of).collect(), next, total), count));
    }
    if sort.is_none() {
        let (rows, total): (Vec<Row<Contact>>, usize) = if narrowed || archived_only {
            let rows: Vec<Row<Contact>> =
                hits.iter().filter_map(|h| view.get::<Contact>(h.id).ok()).filter(|r| keep(r)).collect();
            let total = rows.len();
            (rows.into_iter().skip(offset).take(limit).collect(), total)
        } else {
            let rows = hits.iter().skip(offset).take(limit).filter_map(|h| view.get::<Contact>(h.id).ok()).collect();
            (rows, hits.len())
        };
        let next = if offset + limit < total {
            encode_cursor(RELEVANCE_CURSOR, (offset + limit) as u64)
        } else {
            String::new()
        };
        return Ok((page(rows.iter().map(ContactSummary::of).collect(), next, total), Count::Exact));
    }
    let (index, descending) = sort.unwrap_or((UPDATED_INDEX, true));
    let value_of = |row: &Row<Contact>| {
        if index == INDEX_SORT_NAME {
            row.body.flat.sort_name.clone()
        } else {
            format!("{:020}", row.meta.updated_at.as_microsecond().max(0))
        }
    };
    let mut rows: Vec<(String, Row<Contact>)> = hits
        .iter()
        .filter_map(|h| view.get::<Contact>(h.id).ok())
        .filter(|r| keep(r))
        .map(|r| (value_of(&r), r))
        .collect();
    rows.sort_by(|(va, a), (vb, b)| {
        let order = va.cmp(vb).then(a.id.cmp(&b.id));
        if descending { order.reverse() } else { order }
    });
    let total = rows.len();
    let start = match &after {
        None => 0,
        Some((value, id)) => rows
            .iter()
            .position(|(v, r)| {
                let order = v.as_str().cmp(value.as_str()).then(r.id.cmp(id));
                if descending { order.is_lt() } else { order.is_gt() }
            })
            .unwrap_or(total),
    };
    let slice = &rows[start..(start + limit).min(total)];
    let next = match slice.last() {
        Some((v, r)) if start + limit < total => encode_cursor(v, r.id),
        _ => String::new(),
    };
    Ok((page(slice.iter().map(|(_, r)| ContactSummary::of(r)).collect(), next, total), Count::Exact))
}
