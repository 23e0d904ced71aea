//! Full-text search over the user's contacts, notes and activities, through the engine's index
//! (the user's scope is the only one reachable): three groups, each best first, with a snippet
//! showing the match, and the contacts holding a relation the query names ("sister").

use std::collections::HashSet;

use mycorrhizal_engine::Snippet;
use mycorrhizal_engine::{Plan, Row, SearchRequest, UserScope, UserView};
use serde::Serialize;
use utoipa::ToSchema;

use super::activity::ops::ActivityView;
use super::contact::view::ContactSummary;
use super::contact::{Contact, phone_digits};
use super::note::ops::NoteView;
use super::{Error, Result, household as households};
use super::{
    activity::Activity, note::Note, relationship::KNOWN_RELATIONS, relationship::Relationship,
    relationship::SYMMETRIC_RELATIONS, relationship::relation_token,
};

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

/// The grouped results of a search, as `GET /search` answers them and the search page shows them.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct SearchResults {
    /// The query as given.
    pub query: String,
    /// Contacts, best first; with `resolved_relation`, the contacts holding that relation follow.
    pub contacts: Vec<ContactHit>,
    pub notes: Vec<NoteHit>,
    pub activities: Vec<ActivityHit>,
    pub totals: SearchTotals,
    /// The relation the query names ("sister" gives `sibling_of`), when it names one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub resolved_relation: Option<String>,
}

/// Matches per group, counted exactly up to 1,000 (1,000 means 1,000 or more).
#[derive(Debug, Clone, Copy, Default, Serialize, ToSchema)]
pub struct SearchTotals {
    pub contacts: usize,
    pub notes: usize,
    pub activities: usize,
}

/// Where a hit matched: a piece of text and the character ranges `[from, to)` the query matched.
#[derive(Debug, Clone, Default, Serialize, ToSchema)]
pub struct SnippetView {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub snippet: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(value_type = Option<Vec<Vec<u64>>>)]
    pub snippet_highlights: Option<Vec<(usize, usize)>>,
}

impl SnippetView {
    fn of(snippet: Option<Snippet>) -> SnippetView {
        match snippet {
            Some(s) => SnippetView { snippet: Some(s.text), snippet_highlights: Some(s.highlights) },
            None => SnippetView::default(),
        }
    }

    /// The snippet text, empty when there is none.
    pub fn text(&self) -> &str {
        self.snippet.as_deref().unwrap_or("")
    }

    /// The matched character ranges.
    pub fn highlights(&self) -> &[(usize, usize)] {
        self.snippet_highlights.as_deref().unwrap_or(&[])
    }
}

/// A contact found: its summary and, when a field other than its name matched, the snippet.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct ContactHit {
    #[serde(flatten)]
    pub contact: ContactSummary,
    #[serde(flatten)]
    pub snippet: SnippetView,
}

/// A note found: the note, `ID` (as the Android client reads it), its contact's name and the
/// snippet.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct NoteHit {
    #[serde(flatten)]
    pub note: NoteView,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub contact_name: Option<String>,
    #[serde(flatten)]
    pub snippet: SnippetView,
}

/// An activity found: the activity with its contacts named, `ID` and the snippet.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct ActivityHit {
    #[serde(flatten)]
    pub activity: ActivityView,
    #[serde(flatten)]
    pub snippet: SnippetView,
}

/// The grouped results: three groups, each best first, with a snippet showing the match, and the
/// contacts holding a relation the query names.
pub fn search(scope: &UserScope, p: SearchParams) -> Result<SearchResults> {
    let SearchParams { text, limit, offset, household } = p;
    if text.trim().is_empty() {
        return Err(Error::bad_parameter("q", "must not be blank"));
    }
    let members: Option<Vec<u64>> = match household {
        None => None,
        Some(household) => Some(households::member_contacts(&scope.view()?, household)?),
    };
    let mut out = SearchResults {
        query: text.clone(),
        contacts: Vec::new(),
        notes: Vec::new(),
        activities: Vec::new(),
        totals: SearchTotals::default(),
        resolved_relation: None,
    };
    let plan = match Plan::parse(&text) {
        Some(plan) if text.trim().chars().count() >= 2 => plan,
        _ => return Ok(out),
    };
    let contacts = members.as_deref();
    let request = SearchRequest { plan: &plan, kinds: None, include_hidden: false, contacts, limit, offset };
    let mut groups = scope.search(&request)?;
    // A phone number typed with punctuation: contacts are found by its digits, however either
    // side is punctuated (as the existing implementation did); notes and activities by the text.
    let digits = phone_digits(&text).and_then(|d| Plan::parse(&d));
    if let Some(digits) = &digits {
        let by_digits = scope.search(&SearchRequest { plan: digits, kinds: Some(&["contact"]), ..request })?;
        groups.retain(|g| g.kind != "contact");
        groups.splice(0..0, by_digits);
    }
    let contact_plan = digits.as_ref().unwrap_or(&plan);
    let view = scope.view()?;
    let token = relation_token(&text);
    let relation = (KNOWN_RELATIONS.contains(&token.as_str()) && token != text.trim().to_lowercase()).then_some(token);
    for group in groups {
        match group.kind {
            "contact" => {
                out.totals.contacts = group.total;
                let mut seen = HashSet::new();
                for hit in &group.hits {
                    let Ok(row) = view.get::<Contact>(hit.id) else { continue };
                    seen.insert(row.id);
                    let snippet = SnippetView::of(contact_snippet(contact_plan, &row.body));
                    out.contacts.push(ContactHit { contact: ContactSummary::of(&row), snippet });
                }
                if let Some(token) = &relation
                    && offset == 0
                {
                    for id in related_contacts(&view, token)?
                        .into_iter()
                        .filter(|id| members.as_ref().is_none_or(|m| m.contains(id)))
                    {
                        if out.contacts.len() >= limit {
                            break;
                        }
                        let Ok(row) = view.get::<Contact>(id) else { continue };
                        if !row.body.archived && seen.insert(id) {
                            let contact = ContactSummary::of(&row);
                            out.contacts.push(ContactHit { contact, snippet: SnippetView::default() });
                        }
                    }
                }
            }
            "note" => {
                out.totals.notes = group.total;
                for hit in &group.hits {
                    let Ok(row) = view.get::<Note>(hit.id) else { continue };
                    out.notes.push(note_hit(&view, &plan, &row));
                }
            }
            "activity" => {
                out.totals.activities = group.total;
                for hit in &group.hits {
                    let Ok(row) = view.get::<Activity>(hit.id) else { continue };
                    out.activities.push(activity_hit(&view, &plan, &row));
                }
            }
            _ => {}
        }
    }
    out.resolved_relation = relation;
    Ok(out)
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

/// A note hit: the note, its contact's name, and the snippet.
fn note_hit(view: &UserView, plan: &Plan, row: &Row<Note>) -> NoteHit {
    let snippet = plan.snippet(&row.body.content, SNIPPET_CHARS);
    NoteHit {
        note: NoteView::of(row),
        contact_name: row.body.contact_id.and_then(|c| contact_name(view, c)),
        snippet: SnippetView::of(snippet.or_else(|| first_chars(&row.body.content))),
    }
}

fn activity_hit(view: &UserView, plan: &Plan, row: &Row<Activity>) -> ActivityHit {
    let a = &row.body;
    let snippet = [a.description.as_str(), a.title.as_str(), a.location.as_str()]
        .into_iter()
        .find_map(|t| plan.snippet(t, SNIPPET_CHARS))
        .or_else(|| first_chars(&a.title));
    ActivityHit { activity: crate::crm::activity::ops::named(view, row), snippet: SnippetView::of(snippet) }
}

/// The start of a text, for a hit matched only by typo or in another field.
fn first_chars(text: &str) -> Option<Snippet> {
    let cut: String = text.chars().take(SNIPPET_CHARS).collect();
    let more = if cut.len() < text.len() { "…" } else { "" };
    Some(Snippet { text: format!("{cut}{more}"), highlights: Vec::new() })
}
