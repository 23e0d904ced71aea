//! The operator's console in the browser (an admin's session only): `/admin/status` (overall
//! status, the alerts and their history, subsystem and job health, storage with its growth
//! chart, the release notice, buttons that run a backup, a restore drill or an evaluation now),
//! `/admin/events` (the timeline with its filters, and failures gathered by cause) and
//! `/admin/diagnostics` (the checklist). Every figure is an `ops::`, `alerts::`, `status::` or
//! `diagnostics::` answer, the same the JSON API gives; the chart is SVG drawn here, so nothing
//! needs JavaScript.

use axum::extract::{Query, State};
use jiff::Timestamp;
use maud::{Markup, html};
use mycorrhizal_engine::system::Trigger;
use serde::Deserialize;

use super::admin::admin;
use super::page::{Form, PageResult, Viewer, page, see_other, shell};
use crate::error::ApiError;
use crate::ops::storage::StorageSample;
use crate::ops::timeline::{self, AggregationQuery, EventQuery};
use crate::state::AppState;

/// An instant as the operator's pages show it (UTC, to the minute), or a dash.
pub(super) fn when(at: Option<Timestamp>) -> String {
    at.map(|t| t.strftime("%Y-%m-%d %H:%M UTC").to_string()).unwrap_or_else(|| "–".into())
}

fn bytes(n: u64) -> String {
    const UNITS: [&str; 5] = ["B", "KB", "MB", "GB", "TB"];
    let mut value = n as f64;
    let mut unit = 0;
    while value >= 1024.0 && unit < UNITS.len() - 1 {
        value /= 1024.0;
        unit += 1;
    }
    if unit == 0 { format!("{n} B") } else { format!("{value:.1} {}", UNITS[unit]) }
}

/// The class a status word is shown with.
fn tone(status: &str) -> &'static str {
    match status {
        "ok" | "healthy" => "status ok",
        "warning" | "degraded" | "alerting" | "failing" | "warn" => "status warn",
        "error" | "unhealthy" | "critical" => "status bad",
        _ => "status",
    }
}

/// The database's size over the samples, as a line (no JavaScript, no style attribute).
pub fn growth_chart(samples: &[StorageSample], title: &str) -> Markup {
    let (w, h, pad) = (600.0, 160.0, 24.0);
    if samples.len() < 2 {
        return html! {};
    }
    let first = samples.first().map_or(0, |s| s.at.as_second());
    let last = samples.last().map_or(1, |s| s.at.as_second()).max(first + 1);
    let max = samples.iter().map(|s| s.database_bytes).max().unwrap_or(1).max(1) as f64;
    let points: Vec<String> = samples
        .iter()
        .map(|s| {
            let x = pad + (s.at.as_second() - first) as f64 / (last - first) as f64 * (w - 2.0 * pad);
            let y = h - pad - s.database_bytes as f64 / max * (h - 2.0 * pad);
            format!("{x:.1},{y:.1}")
        })
        .collect();
    html! {
        svg class="chart" viewBox={ "0 0 " (w) " " (h) } role="img" aria-label=(title) xmlns="http://www.w3.org/2000/svg" {
            title { (title) }
            line x1=(pad) y1=(h - pad) x2=(w - pad) y2=(h - pad) stroke="currentColor" stroke-width="1" {}
            polyline points=(points.join(" ")) fill="none" stroke="currentColor" stroke-width="2" {}
            text x=(pad) y="14" font-size="12" fill="currentColor" { (bytes(max as u64)) }
            text x=(pad) y=(h - 6.0) font-size="12" fill="currentColor" { (when(samples.first().map(|s| s.at))) }
            text x=(w - pad) y=(h - 6.0) font-size="12" fill="currentColor" text-anchor="end" { (when(samples.last().map(|s| s.at))) }
        }
    }
}

pub async fn status(State(state): State<AppState>, viewer: Viewer) -> PageResult {
    admin(&viewer)?;
    let t = |k| viewer.t(k);
    let c = viewer.chrome();
    let system = crate::status::system_status(&state, crate::jobs::activity(&state.config)).await?;
    let alerts = crate::alerts::list(&state.engine, &state.config).await?;
    let subsystems = timeline::subsystems(&state.engine).await?;
    let jobs = crate::ops::job_runs::health(&state.engine, crate::jobs::names()).await?;
    let samples = state.blocking(|engine| crate::ops::storage::recent(engine, 90)).await?.map_err(ApiError::from)?;
    let storage = &system.storage;
    let main = html! {
        h1 { (t("console.title")) }
        p { a href="/admin" { (t("console.to_accounts")) } " · " a href="/admin/events" { (t("console.events")) } " · " a href="/admin/diagnostics" { (t("console.diagnostics")) } }
        section class="card wide" aria-labelledby="h-overall" {
            h2 id="h-overall" { (t("console.overall")) }
            p { span class=(tone(&system.overall)) { (system.overall) } }
            dl class="facts" {
                dt { (t("console.version")) } dd { (system.version.version) }
                dt { (t("console.running_since")) } dd { (when(Some(system.uptime.started_at))) }
                dt { (t("console.schema")) } dd { (system.migration.applied) " / " (system.migration.latest) }
            }
            @if system.update.update_available == Some(true) {
                p class="notice" role="status" {
                    (viewer.lang.f("console.update_available", &[("version", system.update.latest.as_deref().unwrap_or(""))]))
                    @if let Some(url) = &system.update.release_url { " " a href=(url) rel="noopener noreferrer" { (t("console.release_notes")) } }
                }
            }
            @if !system.config.validation.is_empty() {
                h3 { (t("console.settings_to_review")) }
                ul { @for note in &system.config.validation { li { code { (note.field) } ": " (note.message) } } }
            }
        }
        section class="card wide" aria-labelledby="h-alerts" {
            h2 id="h-alerts" { (t("console.alerts")) }
            table class="list" {
                thead { tr { th scope="col" { (t("console.condition")) } th scope="col" { (t("console.state")) } th scope="col" { (t("console.since")) } th scope="col" { (t("console.detail")) } } }
                tbody { @for a in &alerts.alerts { tr {
                    td { (a.condition) }
                    td { span class=(tone(&a.state)) { (a.state) } @if a.pending_notify { " " (t("console.not_yet_told")) } }
                    td { (when(a.since)) }
                    td { (a.detail) }
                } } }
            }
            (c.button_form("/admin/console/evaluate", t("console.evaluate_now"), "", None))
            @if !alerts.history.is_empty() {
                h3 { (t("console.history")) }
                ul { @for h in alerts.history.iter().take(20) { li { (when(Some(h.at))) " — " (h.condition) ": " (h.change) } } }
            }
        }
        section class="card wide" aria-labelledby="h-subsystems" {
            h2 id="h-subsystems" { (t("console.subsystems")) }
            table class="list" {
                thead { tr { th scope="col" { (t("console.subsystem")) } th scope="col" { (t("console.state")) } th scope="col" { (t("console.last_success")) } th scope="col" { (t("console.failures")) } th scope="col" { (t("console.last_error")) } } }
                tbody { @for s in &subsystems.subsystems { tr {
                    td { (s.subsystem) } td { span class=(tone(&s.status)) { (s.status) } }
                    td { (when(s.last_success_at)) } td { (s.consecutive_failures) } td { (s.last_error) }
                } } }
            }
        }
        section class="card wide" aria-labelledby="h-jobs" {
            h2 id="h-jobs" { (t("console.jobs")) }
            table class="list" {
                thead { tr { th scope="col" { (t("console.job")) } th scope="col" { (t("console.state")) } th scope="col" { (t("console.last_run")) } th scope="col" { (t("console.result")) } th scope="col" { (t("console.average_ms")) } th scope="col" { (t("console.last_error")) } } }
                tbody { @for j in &jobs.jobs { tr {
                    td { (j.job_name) } td { span class=(tone(&j.status)) { (j.status) } }
                    td { (when(j.last_run_at)) } td { (j.last_result) }
                    td { (j.avg_duration_ms.map(|d| d.to_string()).unwrap_or_else(|| "–".into())) } td { (j.last_error) }
                } } }
            }
            div class="actions" {
                (c.button_form("/admin/console/backup", t("console.backup_now"), "", None))
                (c.button_form("/admin/console/restore-drill", t("console.drill_now"), "", None))
            }
        }
        section class="card wide" aria-labelledby="h-storage" {
            h2 id="h-storage" { (t("console.storage")) }
            dl class="facts" {
                dt { (t("console.database")) } dd { (bytes(storage.database_bytes)) }
                @if let Some(fs) = &storage.filesystem {
                    dt { (t("console.free")) } dd { (bytes(fs.free_bytes)) " / " (bytes(fs.total_bytes)) }
                }
                @if let (Some(p), Some(tier)) = (storage.usage_percent, storage.threshold) {
                    dt { (t("console.used")) } dd { (format!("{p:.1}%")) " " span class=(tone(&serde_json::to_value(tier).ok().and_then(|v| v.as_str().map(String::from)).unwrap_or_default())) { (serde_json::to_value(tier).ok().and_then(|v| v.as_str().map(String::from)).unwrap_or_default()) } }
                }
                @if let Some(g) = storage.growth_30d_bytes { dt { (t("console.growth_30d")) } dd { (if g < 0 { format!("−{}", bytes(g.unsigned_abs())) } else { bytes(g as u64) }) } }
                @if let Some(full) = storage.projected_full_at { dt { (t("console.full_at")) } dd { (when(Some(full))) } }
            }
            (growth_chart(&samples, t("console.growth_chart")))
            table class="list" {
                thead { tr { th scope="col" { (t("console.folder")) } th scope="col" { (t("console.size")) } th scope="col" { (t("console.files")) } } }
                tbody { @for d in &storage.directories { tr { td { (d.path) } td { (bytes(d.bytes)) @if d.truncated { "+" } } td { (d.file_count) } } } }
            }
        }
    };
    Ok(page(shell(&c, t("console.title"), None, main)))
}

#[derive(Debug, Default, Deserialize)]
pub struct EventsQuery {
    component: Option<String>,
    severity: Option<String>,
    event_type: Option<String>,
    window_hours: Option<String>,
}

const COMPONENTS: [&str; 9] =
    ["app", "migration", "scheduler", "backup", "notification", "webhook", "contact_sync", "calendar_sync", "audit"];

pub async fn events(State(state): State<AppState>, viewer: Viewer, Query(q): Query<EventsQuery>) -> PageResult {
    admin(&viewer)?;
    let t = |k| viewer.t(k);
    let c = viewer.chrome();
    let filter = EventQuery {
        component: q.component.clone(),
        severity: q.severity.clone(),
        event_type: q.event_type.clone(),
        limit: Some("200".into()),
        ..EventQuery::default()
    };
    let page_of = timeline::events(&state.engine, filter).await?;
    let buckets = timeline::aggregate(&state.engine, AggregationQuery { window_hours: q.window_hours.clone() }).await?;
    let selected = |v: &Option<String>, x: &str| v.as_deref() == Some(x);
    let main = html! {
        h1 { (t("console.events")) }
        p { a href="/admin/status" { (t("console.title")) } }
        form method="get" action="/admin/events" class="filters" {
            label for="f-component" { (t("console.component")) }
            select id="f-component" name="component" {
                option value="" { (t("console.any")) }
                @for comp in COMPONENTS { option value=(comp) selected[selected(&q.component, comp)] { (comp) } }
            }
            label for="f-severity" { (t("console.severity")) }
            select id="f-severity" name="severity" {
                option value="" { (t("console.any")) }
                @for s in ["info", "warn", "error"] { option value=(s) selected[selected(&q.severity, s)] { (s) } }
            }
            label for="f-type" { (t("console.event_type")) }
            input id="f-type" name="event_type" value=(q.event_type.clone().unwrap_or_default());
            button type="submit" { (t("console.filter")) }
        }
        p { (viewer.lang.f("console.shown_of", &[("shown", &page_of.system_events.len().to_string()), ("total", &page_of.total.to_string())])) }
        table class="list" {
            thead { tr { th scope="col" { (t("console.when")) } th scope="col" { (t("console.component")) } th scope="col" { (t("console.severity")) } th scope="col" { (t("console.event_type")) } th scope="col" { (t("console.detail")) } } }
            tbody { @for e in &page_of.system_events { tr {
                td { (when(Some(e.occurred_at))) } td { (e.component) } td { span class=(tone(&e.severity)) { (e.severity) } } td { (e.event_type) }
                td { (e.error.clone().or_else(|| e.detail.clone()).unwrap_or_default()) }
            } } }
        }
        section class="card wide" aria-labelledby="h-buckets" {
            h2 id="h-buckets" { (viewer.lang.f("console.failures_by_cause", &[("hours", &buckets.window_hours.to_string())])) }
            form method="get" action="/admin/events" class="filters" {
                label for="f-window" { (t("console.window")) }
                select id="f-window" name="window_hours" {
                    @for h in ["24", "72", "168"] { option value=(h) selected[selected(&q.window_hours, h)] { (h) " h" } }
                }
                button type="submit" { (t("console.filter")) }
            }
            @if buckets.buckets.is_empty() { p { (t("console.no_failures")) } }
            @else {
                table class="list" {
                    thead { tr { th scope="col" { (t("console.component")) } th scope="col" { (t("console.cause")) } th scope="col" { (t("console.count")) } th scope="col" { (t("console.last_seen")) } } }
                    tbody { @for b in &buckets.buckets { tr {
                        td { (b.component) } td { (b.cause) @if b.recurring { " " span class="status warn" { (t("console.recurring")) } } }
                        td { (b.count) } td { (when(Some(b.last_seen))) }
                    } } }
                }
            }
        }
    };
    Ok(page(shell(&c, t("console.events"), None, main)))
}

pub async fn diagnostics(State(state): State<AppState>, viewer: Viewer) -> PageResult {
    admin(&viewer)?;
    let t = |k| viewer.t(k);
    let c = viewer.chrome();
    let sweep = crate::diagnostics::sweep(&state, crate::jobs::activity(&state.config)).await?;
    let word = |s: crate::diagnostics::CheckStatus| {
        serde_json::to_value(s).ok().and_then(|v| v.as_str().map(String::from)).unwrap_or_default()
    };
    let main = html! {
        h1 { (t("console.diagnostics")) }
        p { a href="/admin/status" { (t("console.title")) } }
        p { span class=(tone(&word(sweep.summary.status))) { (word(sweep.summary.status)) } " — "
            (viewer.lang.f("console.summary", &[("ok", &sweep.summary.ok.to_string()), ("warnings", &sweep.summary.warnings.to_string()), ("errors", &sweep.summary.errors.to_string())])) }
        table class="list" {
            thead { tr { th scope="col" { (t("console.check")) } th scope="col" { (t("console.state")) } th scope="col" { (t("console.detail")) } } }
            tbody { @for check in &sweep.checks { tr {
                td { (check.name) } td { span class=(tone(&word(check.status))) { (word(check.status)) } } td { (check.message) }
            } } }
        }
    };
    Ok(page(shell(&c, t("console.diagnostics"), None, main)))
}

/// Runs `job` now (a manual run, recorded like its schedule's) and returns to the status page.
async fn run_now(state: &AppState, viewer: &Viewer, job: &str) -> PageResult {
    admin(viewer)?;
    crate::jobs::run(state, job, Trigger::Manual).await?;
    Ok(see_other("/admin/status"))
}

pub async fn evaluate(State(state): State<AppState>, viewer: Viewer, _form: Form) -> PageResult {
    run_now(&state, &viewer, crate::jobs::ALERTS).await
}

pub async fn backup(State(state): State<AppState>, viewer: Viewer, _form: Form) -> PageResult {
    run_now(&state, &viewer, crate::jobs::BACKUP).await
}

pub async fn restore_drill(State(state): State<AppState>, viewer: Viewer, _form: Form) -> PageResult {
    run_now(&state, &viewer, crate::jobs::RESTORE_DRILL).await
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample(day: i64, database_bytes: u64) -> StorageSample {
        StorageSample {
            at: Timestamp::UNIX_EPOCH + jiff::SignedDuration::from_hours(24 * day),
            database_bytes,
            filesystem_used_percent: None,
            users: 1,
            rows: 0,
        }
    }

    #[test]
    fn the_growth_chart_draws_one_point_per_sample_and_nothing_for_one() {
        let chart = growth_chart(&[sample(0, 100), sample(1, 200), sample(2, 400)], "size").into_string();
        assert!(chart.starts_with("<svg") && chart.contains("role=\"img\""), "{chart}");
        let points = chart.split("points=\"").nth(1).unwrap().split('"').next().unwrap();
        assert_eq!(points.split(' ').count(), 3);
        assert!(points.ends_with(",24.0"), "the largest sample reaches the top: {points}");
        assert_eq!(growth_chart(&[sample(0, 100)], "size").into_string(), "");
    }
}
