//! Full-text search over the user's contacts, notes and activities, through the engine's index
//! (the user's scope is the only one reachable): three groups, each best first, with a snippet
//! showing the match, and the contacts holding a relation the query names ("sister").

use std::collections::HashSet;

use mycorrhizal_engine::search::Snippet;
use mycorrhizal_engine::{Plan, Row, SearchRequest, UserScope, UserView};
use serde_json::{Value, json};

use super::contact::Contact;
use super::contact::view::ContactSummary;
use super::records::{Activity, KNOWN_RELATIONS, Note, Relationship, SYMMETRIC_RELATIONS, relation_token};
use super::{Error, Result, households};

/// Characters of context in a snippet.
const SNIPPET_CHARS: usize = 160;
pub const DEFAULT_LIMIT: usize = 10;
pub const MAX_LIMIT: usize = 50;

/// What a search asks for.
#[derive(Debug, Clone)]
pub struct SearchParams {
    pub text: String,
    /// Hits per group.
    pub limit: usize,
    /// Hits to skip in each group.
    pub offset: usize,
    /// Only this household's members (and the notes and activities that carry one of them).
    pub household: Option<u64>,
}

/// The grouped results, as `GET /search` answers them: `{query, contacts, notes, activities,
/// totals}`, plus `resolved_relation` when the query names a relation.
pub fn search(scope: &UserScope, p: SearchParams) -> Result<Value> {
    let SearchParams { text, limit, offset, household } = p;
    if text.trim().is_empty() {
        return Err(Error::bad_parameter("q", "must not be blank"));
    }
    let members: Option<Vec<u64>> = match household {
        None => None,
        Some(household) => Some(households::member_contacts(&scope.view()?, household)?),
    };
    let plan = match Plan::parse(&text) {
        Some(plan) if text.trim().chars().count() >= 2 => plan,
        _ => {
            return Ok(json!({ "query": text, "contacts": [], "notes": [], "activities": [],
                "totals": { "contacts": 0, "notes": 0, "activities": 0 } }));
        }
    };
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
    let relation = (KNOWN_RELATIONS.contains(&token.as_str()) && token != text.trim().to_lowercase()).then_some(token);
    for group in groups {
        let mut items = Vec::new();
        match group.kind {
            "contact" => {
                let mut seen = HashSet::new();
                for hit in &group.hits {
                    let Ok(row) = view.get::<Contact>(hit.id) else { continue };
                    seen.insert(row.id);
                    let mut item = json!(ContactSummary::of(&row));
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
                            items.push(json!(ContactSummary::of(&row)));
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
    Ok(out)
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
fn related_contacts(view: &UserView, token: &str) -> Result<Vec<u64>> {
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

/// A note hit: the note's fields (`id`, and `ID` as the Android client reads it), the contact's
/// name, and the snippet.
fn note_hit(view: &UserView, plan: &Plan, row: &Row<Note>) -> Value {
    let mut item = crate::crm::notes::view(row);
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
    let mut item = crate::crm::activities::with_contacts(view, row);
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
