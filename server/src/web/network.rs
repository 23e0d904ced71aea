//! Relationships in the browser: adding one from a contact's page (the other person found by
//! name; several matches offer a choice), removing one, and the network drawn as an SVG picture
//! (`crm::relationship`: the same rules and tokens as the API).

use axum::extract::{Path, State};
use maud::{Markup, html};

use super::page::{Form, PageResult, Viewer, WebError, page, see_other, shell};
use crate::crm::contact::list::ListParams;
use crate::crm::{relationship::ops as relationships, relationship::ops::Graph, relationship::ops::RelationshipInput};
use crate::error::ApiError;
use crate::state::AppState;

/// The everyday relation words offered in the form (any other word is kept as a custom type).
const RELATIONS: &[&str] = &["friend", "partner", "spouse", "parent", "child", "sibling", "colleague", "neighbor"];

/// The form on a contact's page that adds a relationship from `id`.
pub fn add_form(viewer: &Viewer, id: u64) -> Markup {
    let c = viewer.chrome();
    let t = |k| viewer.t(k);
    html! {
        details {
            summary { (t("relationship.add")) }
            form method="post" action={ "/contacts/" (id) "/relationships" } class="stack" {
                (c.csrf_field())
                label for="rel-other" { (t("relationship.other")) }
                input id="rel-other" name="other" required autocomplete="off" placeholder=(t("relationship.other_hint"));
                label for="rel-type" { (t("relationship.type")) }
                input id="rel-type" name="type" required list="rel-types" maxlength="100";
                datalist id="rel-types" { @for r in RELATIONS { option value=(r) {} } }
                button type="submit" { (t("relationship.add")) }
            }
        }
    }
}

/// Adds a relationship from contact `id` to the contact the form names: by `target_id` (a choice
/// already made) or by a name that must match exactly one contact.
pub async fn add(State(state): State<AppState>, viewer: Viewer, Path(id): Path<u64>, form: Form) -> PageResult {
    let kind = form.get("type");
    let target = match form.get("target_id").parse::<u64>() {
        Ok(target) => target,
        Err(_) => {
            let other = form.get("other");
            if other.is_empty() {
                return Err(WebError::Api(ApiError::validation("other", "name the other person")));
            }
            let scope = state.scope(&viewer.user);
            let params = ListParams { search: Some(other.clone()), limit: 10, ..ListParams::default() };
            let found = state.blocking(move |_| crate::crm::contact::list::list(&scope, params)).await??;
            let candidates: Vec<_> = found.contacts.into_iter().filter(|c| c.id != id).collect();
            match candidates.as_slice() {
                [one] => one.id,
                [] => {
                    return Err(WebError::Api(ApiError::validation("other", format!("no contact matches “{other}”"))));
                }
                many => {
                    let c = viewer.chrome();
                    let main = html! {
                        h1 { (viewer.t("relationship.choose")) }
                        ul class="items" {
                            @for who in many {
                                li {
                                    form method="post" action={ "/contacts/" (id) "/relationships" } class="inline" {
                                        (c.csrf_field())
                                        input type="hidden" name="target_id" value=(who.id);
                                        input type="hidden" name="type" value=(kind);
                                        button type="submit" { (who.name) }
                                    }
                                    " " span class="muted" { (who.primary_email) }
                                }
                            }
                        }
                        p { a href={ "/contacts/" (id) } { (viewer.t("contact.cancel")) } }
                    };
                    return Ok(page(shell(&c, viewer.t("relationship.choose"), None, main)));
                }
            }
        }
    };
    let input = RelationshipInput { target_id: target, kind, sensitivity: None, note: None };
    relationships::create(&state.scope(&viewer.user), id, input).await?;
    Ok(see_other(&format!("/contacts/{id}?notice=saved#h-relationships")))
}

pub async fn remove(
    State(state): State<AppState>,
    viewer: Viewer,
    Path((id, rid)): Path<(u64, u64)>,
    _form: Form,
) -> PageResult {
    relationships::delete(&state.scope(&viewer.user), id, rid).await?;
    Ok(see_other(&format!("/contacts/{id}?notice=saved#h-relationships")))
}

/// Most people drawn: beyond this, the best-connected ones.
const MAX_NODES: usize = 150;

/// Positions for the graph's contacts (`(node id, label, x, y)`) and its relationship edges, by a
/// few rounds of a force layout from a circle: deterministic, so the same network draws the same.
fn layout(graph: &Graph, size: f64) -> (Vec<(String, String, f64, f64)>, Vec<(usize, usize, String)>) {
    let contacts: Vec<&crate::crm::relationship::ops::GraphNode> =
        graph.nodes.iter().filter(|n| n.kind == "contact").collect();
    let edges_all: Vec<&crate::crm::relationship::ops::GraphEdge> =
        graph.edges.iter().filter(|e| e.kind == "relationship").collect();
    let mut degree: Vec<(usize, &crate::crm::relationship::ops::GraphNode)> = contacts
        .iter()
        .map(|n| (edges_all.iter().filter(|e| e.source == n.id || e.target == n.id).count(), *n))
        .collect();
    degree.sort_by(|a, b| b.0.cmp(&a.0).then(a.1.id.cmp(&b.1.id)));
    let kept: Vec<&crate::crm::relationship::ops::GraphNode> =
        degree.into_iter().take(MAX_NODES).map(|(_, n)| n).collect();
    let index = |id: &str| kept.iter().position(|n| n.id == id);
    let edges: Vec<(usize, usize, String)> =
        edges_all.iter().filter_map(|e| Some((index(&e.source)?, index(&e.target)?, e.label.clone()))).collect();
    let n = kept.len().max(1) as f64;
    let center = size / 2.0;
    let mut pos: Vec<(f64, f64)> = (0..kept.len())
        .map(|i| {
            let angle = i as f64 / n * std::f64::consts::TAU;
            (center + center * 0.8 * angle.cos(), center + center * 0.8 * angle.sin())
        })
        .collect();
    let k = (size * size / n).sqrt() * 0.5;
    let mut temperature = size / 10.0;
    for _ in 0..80 {
        let mut shift = vec![(0.0f64, 0.0f64); pos.len()];
        for i in 0..pos.len() {
            for j in 0..pos.len() {
                if i != j {
                    let (dx, dy) = (pos[i].0 - pos[j].0, pos[i].1 - pos[j].1);
                    let d = (dx * dx + dy * dy).sqrt().max(0.01);
                    let push = k * k / d;
                    shift[i].0 += dx / d * push;
                    shift[i].1 += dy / d * push;
                }
            }
        }
        for (a, b, _) in &edges {
            let (dx, dy) = (pos[*a].0 - pos[*b].0, pos[*a].1 - pos[*b].1);
            let d = (dx * dx + dy * dy).sqrt().max(0.01);
            let pull = d * d / k;
            shift[*a].0 -= dx / d * pull;
            shift[*a].1 -= dy / d * pull;
            shift[*b].0 += dx / d * pull;
            shift[*b].1 += dy / d * pull;
        }
        for (p, s) in pos.iter_mut().zip(&shift) {
            let len = (s.0 * s.0 + s.1 * s.1).sqrt().max(0.01);
            p.0 = (p.0 + s.0 / len * len.min(temperature)).clamp(40.0, size - 40.0);
            p.1 = (p.1 + s.1 / len * len.min(temperature)).clamp(20.0, size - 20.0);
        }
        temperature *= 0.95;
    }
    let nodes = kept.iter().zip(pos).map(|(n, (x, y))| (n.id.clone(), n.label.clone(), x, y)).collect();
    (nodes, edges)
}

pub async fn picture(State(state): State<AppState>, viewer: Viewer) -> PageResult {
    let graph = state.read(&viewer.user, |v| relationships::graph(v, false)).await?;
    let size = 800.0;
    let (nodes, edges) = layout(&graph, size);
    let c = viewer.chrome();
    let t = |k| viewer.t(k);
    let contacts = graph.nodes.iter().filter(|n| n.kind == "contact").count();
    let main = html! {
        h1 { (t("network.title")) }
        @if nodes.is_empty() {
            p class="muted" { (t("network.empty")) }
        } @else {
            @if contacts > nodes.len() { p class="hint" { (viewer.lang.f("network.capped", &[("shown", &nodes.len().to_string()), ("all", &contacts.to_string())])) } }
            svg class="network" viewBox={ "0 0 " (size) " " (size) } role="group" aria-labelledby="network-desc" {
                title id="network-desc" { (viewer.lang.f("network.desc", &[("people", &nodes.len().to_string()), ("links", &edges.len().to_string())])) }
                @for (a, b, label) in &edges {
                    line class="edge" x1=(fmt(nodes[*a].2)) y1=(fmt(nodes[*a].3)) x2=(fmt(nodes[*b].2)) y2=(fmt(nodes[*b].3)) { title { (label) } }
                }
                @for (id, label, x, y) in &nodes {
                    a href={ "/contacts/" (id.trim_start_matches("c-")) } {
                        circle class="node" cx=(fmt(*x)) cy=(fmt(*y)) r="7" {}
                        text class="label" x=(fmt(*x + 10.0)) y=(fmt(*y + 4.0)) { (label) }
                    }
                }
            }
            h2 { (t("network.list")) }
            ul class="items" {
                @for (a, b, label) in &edges {
                    li {
                        a href={ "/contacts/" (nodes[*a].0.trim_start_matches("c-")) } { (nodes[*a].1) } " — " (label) " — "
                        a href={ "/contacts/" (nodes[*b].0.trim_start_matches("c-")) } { (nodes[*b].1) }
                    }
                }
            }
        }
    };
    Ok(page(shell(&c, t("network.title"), None, main)))
}

fn fmt(v: f64) -> String {
    format!("{v:.1}")
}
