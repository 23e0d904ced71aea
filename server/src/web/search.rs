//! Global search: contacts, notes and activities in groups, best first, the matched words marked
//! in each snippet (`crm::search`, the engine and rules of `GET /search`).

use axum::extract::{Query, State};
use maud::{Markup, html};
use serde::Deserialize;
use serde_json::Value;

use super::home::contact_link;
use super::page::{PageResult, Viewer, page as html_page, shell};
use crate::crm::search::{self, DEFAULT_LIMIT, SearchParams};
use crate::state::AppState;

#[derive(Debug, Default, Deserialize)]
pub struct SearchQuery {
    q: Option<String>,
}

/// `text` with the `(from, to)` character ranges wrapped in `<mark>`.
pub fn highlighted(text: &str, highlights: &[(usize, usize)]) -> Markup {
    let chars: Vec<char> = text.chars().collect();
    let mut pieces: Vec<(bool, String)> = Vec::new();
    let mut at = 0;
    for &(from, to) in highlights {
        let (from, to) = (from.min(chars.len()), to.min(chars.len()));
        if from < at || from >= to {
            continue;
        }
        pieces.push((false, chars[at..from].iter().collect()));
        pieces.push((true, chars[from..to].iter().collect()));
        at = to;
    }
    pieces.push((false, chars[at..].iter().collect()));
    html! { @for (marked, piece) in &pieces { @if *marked { mark { (piece) } } @else { (piece) } } }
}

fn snippet(item: &Value) -> Markup {
    let text = item["snippet"].as_str().unwrap_or("");
    let highlights: Vec<(usize, usize)> =
        serde_json::from_value(item["snippet_highlights"].clone()).unwrap_or_default();
    html! { @if !text.is_empty() { span class="snippet" { (highlighted(text, &highlights)) } } }
}

async fn results_page(state: AppState, viewer: Viewer, text: String) -> PageResult {
    let c = viewer.chrome();
    let t = |k| viewer.t(k);
    let results = if text.trim().is_empty() {
        None
    } else {
        let scope = state.scope(&viewer.user);
        let params = SearchParams { text: text.clone(), limit: DEFAULT_LIMIT * 2, offset: 0, household: None };
        Some(state.blocking(move |_| search::search(&scope, params)).await??)
    };
    let list = |r: &Value, key: &str| r[key].as_array().cloned().unwrap_or_default();
    let main = html! {
        h1 { (t("search.title")) }
        form method="get" action="/search" role="search" class="filters" {
            div { label for="q" { (t("search.label")) } input id="q" type="search" name="q" value=(text) autofocus; }
            button type="submit" { (t("search.submit")) }
        }
        @if let Some(r) = &results {
            @let total = |k: &str| r["totals"][k].as_u64().unwrap_or(0);
            @if total("contacts") + total("notes") + total("activities") == 0 { p { (t("search.none")) } }
            @if total("contacts") > 0 {
                section aria-labelledby="h-contacts" {
                    h2 id="h-contacts" { (t("search.contacts")) " (" (total("contacts")) ")" }
                    ul class="items" {
                        @for item in list(r, "contacts") {
                            li { (contact_link(item["id"].as_u64().unwrap_or(0), item["fn"].as_str().unwrap_or(""))) " " (snippet(&item)) }
                        }
                    }
                }
            }
            @if total("notes") > 0 {
                section aria-labelledby="h-notes" {
                    h2 id="h-notes" { (t("search.notes")) " (" (total("notes")) ")" }
                    ul class="items" {
                        @for item in list(r, "notes") {
                            li {
                                @if let (Some(id), Some(name)) = (item["contact_id"].as_u64(), item["contact_name"].as_str()) { (contact_link(id, name)) ": " }
                                (snippet(&item))
                            }
                        }
                    }
                }
            }
            @if total("activities") > 0 {
                section aria-labelledby="h-activities" {
                    h2 id="h-activities" { (t("search.activities")) " (" (total("activities")) ")" }
                    ul class="items" {
                        @for item in list(r, "activities") {
                            li { strong { (item["title"].as_str().unwrap_or("")) } " " (snippet(&item)) }
                        }
                    }
                }
            }
        }
    };
    Ok(html_page(shell(&c, t("search.title"), None, main)))
}

pub async fn page(State(state): State<AppState>, viewer: Viewer, Query(q): Query<SearchQuery>) -> PageResult {
    results_page(state, viewer, q.q.unwrap_or_default()).await
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn highlights_are_character_ranges() {
        let html = highlighted("…Zoë met Åsa", &[(1, 4), (9, 12)]).into_string();
        assert_eq!(html, "…<mark>Zoë</mark> met <mark>Åsa</mark>");
        assert_eq!(highlighted("<b>", &[]).into_string(), "&lt;b&gt;");
    }
}
