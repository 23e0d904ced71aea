//! `GET /search`: full-text search over the caller's contacts, notes and activities, through the
//! engine's index (the caller's user scope is the only one reachable). Results come in three
//! groups, each best first, with a snippet showing the match.

use std::collections::HashSet;

use axum::extract::{Query, State};
use mycorrhizal_engine::search::Snippet;
use mycorrhizal_engine::{Plan, Row, SearchRequest, UserView};
use serde::Deserialize;
use serde_json::{Value, json};
use utoipa::IntoParams;

use super::contacts::scope;
use crate::auth::AuthUser;
use crate::crm::contact::Contact;
use crate::crm::records::{Activity, KNOWN_RELATIONS, Note, Relationship, SYMMETRIC_RELATIONS, relation_token};
use crate::error::ApiError;
use crate::state::AppState;

/// Characters of context in a snippet.
const SNIPPET_CHARS: usize = 160;
const DEFAULT_LIMIT: usize = 10;
const MAX_LIMIT: usize = 50;

#[derive(Debug, Default, Deserialize, IntoParams)]
pub struct SearchQuery {
    /// What to look for: words (all must match, any field), prefixes (`ali` finds Alice; two
    /// letters find names and titles only), one typo on words of five letters or more,
    /// `"quoted phrases"`, numbers of four digits or more also by their ending (`4567`, or a
    /// national phone number typed with its leading zero); case and accents are ignored.
    /// Blank gives 400; fewer than two characters gives empty groups.
    pub q: Option<String>,
    /// Hits per group: default 10, at most 50.
    pub limit: Option<String>,
    /// Hits to skip in each group (for a next page).
    pub offset: Option<String>,
    /// Only members of this household (its integer id) and the notes and activities that carry
    /// one of them. Unknown, another user's, or not an integer (such as a UUID): 404.
    pub household_id: Option<String>,
}

fn positive(raw: Option<&str>, name: &str, default: usize, max: usize) -> Result<usize, ApiError> {
    match raw {
        None => Ok(default),
        Some(text) => match text.trim().parse::<i64>() {
            Ok(n) if n > 0 => Ok((n as usize).min(max)),
            _ => Err(ApiError::invalid_input(name, "must be a positive integer")),
        },
    }
}

fn snippet_fields(value: &mut Value, snippet: Option<Snippet>) {
    if let (Value::Object(map), Some(s)) = (value, snippet) {
        map.insert("snippet".into(), json!(s.text));
        map.insert("snippet_highlights".into(), json!(s.highlights));
    }
}

/// The best snippet of a contact: from the first of its non-name texts that matches.
fn contact_snippet(plan: &Plan, c: &Contact) -> Option<Snippet> {
    let f = &c.flat;
    let mut texts: Vec<&str> = f.emails.iter().map(String::as_str).collect();
    texts.extend(f.phones.iter().map(|p| p.value.as_str()));
    texts.extend([f.org.as_str(), f.job_title.as_str(), f.addresses_flat.as_str()]);
    texts.into_iter().filter(|t| !t.is_empty()).find_map(|t| plan.snippet(t, SNIPPET_CHARS))
}

fn contact_name(view: &UserView, id: u64) -> Option<String> {
    view.get::<Contact>(id).ok().map(|c| c.body.name())
}

/// Contacts holding the relation a word like "sister" names: the source end of such edges, and
/// both ends of symmetric ones.
fn related_contacts(view: &UserView, token: &str) -> Result<Vec<u64>, ApiError> {
    let mut ids = Vec::new();
    for edge in view.list::<Relationship>()? {
        if edge.body.kind == token {
            ids.push(edge.body.source);
            if SYMMETRIC_RELATIONS.contains(&token) {
                ids.push(edge.body.target);
            }
        }
    }
    ids.sort_unstable();
    ids.dedup();
    Ok(ids)
}

/// With `household_id`, results are restricted to the household's members (every membership
/// row, past ones included): the contacts group holds only members, and notes and activities
/// only those that carry a member (through the engine's contact filter). Household ids are
/// integers like every id here; a value that is not one (a UUID from another server, say) names
/// no household of the caller's and gives 404, as an unknown or another user's household does.
#[utoipa::path(get, path = "/api/v1/search", tag = "search", params(SearchQuery), responses(
    (status = 200, description = "`{query, contacts, notes, activities, totals}`; `resolved_relation` when `q` names a relation. `totals` counts the matches per group exactly up to 1,000; 1,000 means 1,000 or more"),
    (status = 400, description = "`q` blank, or a bad `limit`/`offset`, named"), (status = 404, description = "Unknown household")))]
pub async fn search(
    State(state): State<AppState>,
    user: AuthUser,
    Query(q): Query<SearchQuery>,
) -> Result<axum::Json<Value>, ApiError> {
    let text = q.q.clone().unwrap_or_default();
    if text.trim().is_empty() {
        return Err(ApiError::invalid_input("q", "must not be blank"));
    }
    let limit = positive(q.limit.as_deref(), "limit", DEFAULT_LIMIT, MAX_LIMIT)?;
    let offset = match q.offset.as_deref() {
        None => 0,
        Some(raw) => raw.trim().parse::<usize>().map_err(|_| ApiError::invalid_input("offset", "must be 0 or more"))?,
    };
    let scope = scope(&state, &user);
    let members: Option<Vec<u64>> = match q.household_id.as_deref().map(str::trim).filter(|h| !h.is_empty()) {
        None => None,
        Some(raw) => {
            let household = raw.parse::<u64>().map_err(|_| ApiError::NotFound)?;
            Some(super::households::member_contacts(&scope.view()?, household)?)
        }
    };
    let empty = json!({ "query": text, "contacts": [], "notes": [], "activities": [],
        "totals": { "contacts": 0, "notes": 0, "activities": 0 } });
    let plan = match Plan::parse(&text) {
        Some(plan) if text.trim().chars().count() >= 2 => plan,
        _ => return Ok(axum::Json(empty)),
    };
    let body = state
        .blocking(move |_| {
            let contacts = members.as_deref();
            let request = SearchRequest { plan: &plan, kinds: None, include_hidden: false, contacts, limit, offset };
            let groups = scope.search(&request)?;
            let view = scope.view()?;
            let mut out = json!({ "query": text, "contacts": [], "notes": [], "activities": [] });
            let mut totals = serde_json::Map::new();
            for group in &groups {
                totals.insert(group.kind.to_string(), json!(group.total));
            }
            let token = relation_token(&text);
            let relation =
                (KNOWN_RELATIONS.contains(&token.as_str()) && token != text.trim().to_lowercase()).then_some(token);
            for group in groups {
                let mut items = Vec::new();
                match group.kind {
                    "contact" => {
                        let mut seen = HashSet::new();
                        for hit in &group.hits {
                            let Ok(row) = view.get::<Contact>(hit.id) else { continue };
                            seen.insert(row.id);
                            let mut item = super::contacts::summary(&row);
                            snippet_fields(&mut item, contact_snippet(&plan, &row.body));
                            items.push(item);
                        }
                        if let Some(token) = &relation
                            && offset == 0
                        {
                            for id in related_contacts(&view, token)?
                                .into_iter()
                                .filter(|id| members.as_ref().is_none_or(|m| m.contains(id)))
                            {
                                if items.len() >= limit {
                                    break;
                                }
                                let Ok(row) = view.get::<Contact>(id) else { continue };
                                if !row.body.archived && seen.insert(id) {
                                    items.push(super::contacts::summary(&row));
                                }
                            }
                        }
                        out["contacts"] = Value::Array(items);
                    }
                    "note" => {
                        for hit in &group.hits {
                            let Ok(row) = view.get::<Note>(hit.id) else { continue };
                            items.push(note_hit(&view, &plan, &row));
                        }
                        out["notes"] = Value::Array(items);
                    }
                    "activity" => {
                        for hit in &group.hits {
                            let Ok(row) = view.get::<Activity>(hit.id) else { continue };
                            items.push(activity_hit(&view, &plan, &row));
                        }
                        out["activities"] = Value::Array(items);
                    }
                    _ => {}
                }
            }
            out["totals"] = json!({
                "contacts": totals.get("contact").cloned().unwrap_or(json!(0)),
                "notes": totals.get("note").cloned().unwrap_or(json!(0)),
                "activities": totals.get("activity").cloned().unwrap_or(json!(0)),
            });
            if let Some(token) = relation {
                out["resolved_relation"] = json!(token);
            }
            Ok::<_, ApiError>(out)
        })
        .await??;
    Ok(axum::Json(body))
}

/// A note hit: the note's fields (`id`, and `ID` as the Android client reads it), the contact's
/// name, and the snippet.
fn note_hit(view: &UserView, plan: &Plan, row: &Row<Note>) -> Value {
    let mut item = super::notes::view(row);
    item["ID"] = json!(row.id);
    if let Some(name) = row.body.contact_id.and_then(|c| contact_name(view, c)) {
        item["contact_name"] = json!(name);
    }
    let snippet = plan.snippet(&row.body.content, SNIPPET_CHARS);
    snippet_fields(&mut item, snippet.or_else(|| first_chars(&row.body.content)));
    item
}

fn activity_hit(view: &UserView, plan: &Plan, row: &Row<Activity>) -> Value {
    let a = &row.body;
    let mut item = super::activities::with_contacts(view, row);
    item["ID"] = json!(row.id);
    let snippet = [a.description.as_str(), a.title.as_str(), a.location.as_str()]
        .into_iter()
        .find_map(|t| plan.snippet(t, SNIPPET_CHARS))
        .or_else(|| first_chars(&a.title));
    snippet_fields(&mut item, snippet);
    item
}

/// The start of a text, for a hit matched only by typo or in another field.
fn first_chars(text: &str) -> Option<Snippet> {
    let cut: String = text.chars().take(SNIPPET_CHARS).collect();
    let more = if cut.len() < text.len() { "…" } else { "" };
    Some(Snippet { text: format!("{cut}{more}"), highlights: Vec::new() })
}
