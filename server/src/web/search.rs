//! Global search: contacts, notes and activities in groups, best first, the matched words marked
//! in each snippet (`crm::search`, the engine and rules of `GET /search`).

use axum::extract::{Query, State};
use maud::{Markup, html};
use serde::Deserialize;

use super::home::contact_link;
use super::page::{PageResult, Viewer, page as html_page, shell};
use crate::crm::search::{self, DEFAULT_LIMIT, SearchParams, SnippetView};
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

fn snippet(s: &SnippetView) -> Markup {
    html! { @if !s.text().is_empty() { span class="snippet" { (highlighted(s.text(), s.highlights())) } } }
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
    let main = html! {
        h1 { (t("search.title")) }
        form method="get" action="/search" role="search" class="filters" {
            div { label for="q" { (t("search.label")) } input id="q" type="search" name="q" value=(text) autofocus; }
            button type="submit" { (t("search.submit")) }
        }
        @if let Some(r) = &results {
            @let totals = r.totals;
            @if totals.contacts + totals.notes + totals.activities == 0 { p { (t("search.none")) } }
            @if totals.contacts > 0 {
                section aria-labelledby="h-contacts" {
                    h2 id="h-contacts" { (t("search.contacts")) " (" (totals.contacts) ")" }
                    ul class="items" {
                        @for hit in &r.contacts {
                            li { (contact_link(hit.contact.id, &hit.contact.name)) " " (snippet(&hit.snippet)) }
                        }
                    }
                }
            }
            @if totals.notes > 0 {
                section aria-labelledby="h-notes" {
                    h2 id="h-notes" { (t("search.notes")) " (" (totals.notes) ")" }
                    ul class="items" {
                        @for hit in &r.notes {
                            li {
                                @if let (Some(id), Some(name)) = (hit.note.contact_id, &hit.contact_name) { (contact_link(id, name)) ": " }
                                (snippet(&hit.snippet))
                            }
                        }
                    }
                }
            }
            @if totals.activities > 0 {
                section aria-labelledby="h-activities" {
                    h2 id="h-activities" { (t("search.activities")) " (" (totals.activities) ")" }
                    ul class="items" {
                        @for hit in &r.activities {
                            li { strong { (hit.activity.title) } " " (snippet(&hit.snippet)) }
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
