//! `/metrics` in the Prometheus text format (version 0.0.4): what an operator graphs. HTTP
//! requests by route template, method and status with latency histograms (observed by the
//! request log, [`observe_http`]); the writer's batch sizes and commit times and the search
//! times (the engine's counters); the outbox's depth and delivery results, job runs by result
//! and the last durations, alert states, storage bytes and live records per kind summed over
//! every user (read at each scrape from the logs' index counts). No label names a user.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::sync::{Mutex, OnceLock, PoisonError};
use std::time::Duration;

use mycorrhizal_engine::system::{JobResult, JobRun, LogQuery, SystemEvent};
use mycorrhizal_engine::{Engine, Histogram, HistogramSnapshot, SECONDS};

/// The HTTP side, kept for the life of the process.
#[derive(Default)]
struct Http {
    /// `(route, method, status) -> requests`.
    requests: BTreeMap<(String, String, u16), u64>,
    /// `(route, method) -> seconds`.
    latency: BTreeMap<(String, String), Histogram>,
}

fn http() -> &'static Mutex<Http> {
    static HTTP: OnceLock<Mutex<Http>> = OnceLock::new();
    HTTP.get_or_init(Mutex::default)
}

/// Counts one answered request under its route template (never its concrete path) and its
/// method (a name outside the standard ones and WebDAV's is `other`, so no client can grow the
/// labels).
pub fn observe_http(route: &str, method: &str, status: u16, took: Duration) {
    const KNOWN: [&str; 14] = [
        "GET",
        "HEAD",
        "POST",
        "PUT",
        "PATCH",
        "DELETE",
        "OPTIONS",
        "PROPFIND",
        "PROPPATCH",
        "REPORT",
        "MKCOL",
        "MKCALENDAR",
        "MOVE",
        "COPY",
    ];
    let method = KNOWN.iter().find(|m| **m == method).copied().unwrap_or("other");
    let mut http = http().lock().unwrap_or_else(PoisonError::into_inner);
    *http.requests.entry((route.to_string(), method.to_string(), status)).or_insert(0) += 1;
    http.latency
        .entry((route.to_string(), method.to_string()))
        .or_insert_with(|| Histogram::new(SECONDS))
        .observe(took.as_secs_f64());
}

/// A label value escaped as the text format wants (backslash, quote, newline).
fn label(value: &str) -> String {
    value.replace('\\', "\\\\").replace('"', "\\\"").replace('\n', "\\n")
}

struct Out(String);

impl Out {
    fn family(&mut self, name: &str, kind: &str, help: &str) {
        let _ = writeln!(self.0, "# HELP {name} {help}");
        let _ = writeln!(self.0, "# TYPE {name} {kind}");
    }

    fn sample(&mut self, name: &str, labels: &[(&str, &str)], value: f64) {
        self.0.push_str(name);
        if !labels.is_empty() {
            let inner: Vec<String> = labels.iter().map(|(k, v)| format!("{k}=\"{}\"", label(v))).collect();
            let _ = write!(self.0, "{{{}}}", inner.join(","));
        }
        let _ = writeln!(self.0, " {value}");
    }

    fn histogram(&mut self, name: &str, labels: &[(&str, &str)], h: &HistogramSnapshot) {
        for (bound, count) in &h.buckets {
            let le = bound.to_string();
            let mut with: Vec<(&str, &str)> = labels.to_vec();
            with.push(("le", &le));
            self.sample(&format!("{name}_bucket"), &with, *count as f64);
        }
        let mut with: Vec<(&str, &str)> = labels.to_vec();
        with.push(("le", "+Inf"));
        self.sample(&format!("{name}_bucket"), &with, h.count as f64);
        self.sample(&format!("{name}_sum"), labels, h.sum);
        self.sample(&format!("{name}_count"), labels, h.count as f64);
    }
}

/// What a scrape reads from the engine (blocking).
pub struct Read {
    pub outbox_pending: u64,
    /// `(event type, count)` of the delivery events the timeline keeps.
    pub deliveries: Vec<(&'static str, u64)>,
    /// `(job, result, runs)` the job log keeps.
    pub job_runs: Vec<(String, &'static str, u64)>,
    /// `(job, seconds)` of each job's last run.
    pub job_last_seconds: Vec<(String, f64)>,
    pub records: BTreeMap<String, u64>,
    pub database_bytes: u64,
}

/// Reads the scrape's facts; `jobs` names the scheduler's jobs.
pub fn read(engine: &Engine, jobs: &[&'static str]) -> mycorrhizal_engine::Result<Read> {
    let count = |key: String| -> mycorrhizal_engine::Result<u64> {
        Ok(engine.events_page(&LogQuery { keys: vec![key], limit: 0, ..LogQuery::default() })?.total)
    };
    let deliveries = ["notification_sent", "notification_failed", "integration_failed"]
        .into_iter()
        .map(|t| Ok((t, count(SystemEvent::key_type(t))?)))
        .collect::<mycorrhizal_engine::Result<Vec<_>>>()?;
    let mut job_runs = Vec::new();
    let mut job_last_seconds = Vec::new();
    for job in jobs {
        for result in [JobResult::Success, JobResult::Failure, JobResult::Skipped] {
            let query = LogQuery { keys: vec![JobRun::key_job_result(job, result)], limit: 0, ..LogQuery::default() };
            job_runs.push((job.to_string(), result.name(), engine.job_runs_page(&query)?.total));
        }
        let query = LogQuery { keys: vec![JobRun::key_job(job)], limit: 1, ..LogQuery::default() };
        if let Some(last) = engine.job_runs_page(&query)?.items.first() {
            job_last_seconds.push((job.to_string(), last.duration_ms as f64 / 1000.0));
        }
    }
    let view = engine.global()?;
    let mut outbox_pending = 0;
    view.map_scan(crate::outbox::DUE_TABLE, "", |_, _| {
        outbox_pending += 1;
        true
    })?;
    Ok(Read {
        outbox_pending,
        deliveries,
        job_runs,
        job_last_seconds,
        records: engine.live_totals()?,
        database_bytes: std::fs::metadata(engine.path()).map(|m| m.len()).unwrap_or(0),
    })
}

/// The exposition: `read` from the engine, `alerts` as `(condition, alerting)`, and the
/// filesystem's free and total bytes when known.
pub fn render(engine: &Engine, read: &Read, alerts: &[(String, bool)], filesystem: Option<(u64, u64)>) -> String {
    let mut out = Out(String::with_capacity(16 * 1024));
    {
        let http = http().lock().unwrap_or_else(PoisonError::into_inner);
        out.family(
            "mycorrhizal_http_requests_total",
            "counter",
            "HTTP requests answered, by route template, method and status.",
        );
        for ((route, method, status), n) in &http.requests {
            let status = status.to_string();
            out.sample(
                "mycorrhizal_http_requests_total",
                &[("route", route), ("method", method), ("status", &status)],
                *n as f64,
            );
        }
        out.family("mycorrhizal_http_request_duration_seconds", "histogram", "Time to answer an HTTP request.");
        for ((route, method), h) in &http.latency {
            out.histogram(
                "mycorrhizal_http_request_duration_seconds",
                &[("route", route), ("method", method)],
                &h.snapshot(),
            );
        }
    }
    let stats = engine.stats();
    out.family("mycorrhizal_writer_batch_size", "histogram", "Changes one writer transaction took.");
    out.histogram("mycorrhizal_writer_batch_size", &[], &stats.batch_size.snapshot());
    out.family("mycorrhizal_writer_commit_seconds", "histogram", "Time from a batch's start to its durable commit.");
    out.histogram("mycorrhizal_writer_commit_seconds", &[], &stats.commit_seconds.snapshot());
    out.family("mycorrhizal_search_seconds", "histogram", "Time one full-text search took.");
    out.histogram("mycorrhizal_search_seconds", &[], &stats.search_seconds.snapshot());
    out.family("mycorrhizal_writes_queued", "gauge", "Changes waiting for the writer.");
    out.sample("mycorrhizal_writes_queued", &[], engine.queued_writes() as f64);

    out.family("mycorrhizal_outbox_pending", "gauge", "Outbound messages waiting for delivery.");
    out.sample("mycorrhizal_outbox_pending", &[], read.outbox_pending as f64);
    out.family(
        "mycorrhizal_delivery_events",
        "gauge",
        "Delivery outcomes the timeline keeps (notification_sent, notification_failed, integration_failed).",
    );
    for (event, n) in &read.deliveries {
        out.sample("mycorrhizal_delivery_events", &[("event", event)], *n as f64);
    }
    out.family("mycorrhizal_job_runs", "gauge", "Job runs the job log keeps, by job and result.");
    for (job, result, n) in &read.job_runs {
        out.sample("mycorrhizal_job_runs", &[("job", job), ("result", result)], *n as f64);
    }
    out.family("mycorrhizal_job_last_duration_seconds", "gauge", "How long each job's last run took.");
    for (job, seconds) in &read.job_last_seconds {
        out.sample("mycorrhizal_job_last_duration_seconds", &[("job", job)], *seconds);
    }
    out.family("mycorrhizal_alert_state", "gauge", "1 while an alert condition is alerting, else 0.");
    for (condition, alerting) in alerts {
        out.sample("mycorrhizal_alert_state", &[("condition", condition)], if *alerting { 1.0 } else { 0.0 });
    }
    out.family("mycorrhizal_storage_bytes", "gauge", "The database file, and the data folder's filesystem.");
    out.sample("mycorrhizal_storage_bytes", &[("what", "database")], read.database_bytes as f64);
    if let Some((free, total)) = filesystem {
        out.sample("mycorrhizal_storage_bytes", &[("what", "filesystem_free")], free as f64);
        out.sample("mycorrhizal_storage_bytes", &[("what", "filesystem_total")], total as f64);
    }
    out.family("mycorrhizal_records", "gauge", "Live records of each kind, summed over every user.");
    for (kind, n) in &read.records {
        out.sample("mycorrhizal_records", &[("kind", kind)], *n as f64);
    }
    out.0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn label_values_are_escaped() {
        assert_eq!(label("a\"b\\c\nd"), "a\\\"b\\\\c\\nd");
    }

    #[test]
    fn a_histogram_has_cumulative_buckets_an_infinite_one_a_sum_and_a_count() {
        let mut out = Out(String::new());
        let h = HistogramSnapshot { buckets: vec![(0.5, 1), (1.0, 3)], count: 4, sum: 4.25 };
        out.histogram("x", &[("route", "/a")], &h);
        assert_eq!(
            out.0,
            "x_bucket{route=\"/a\",le=\"0.5\"} 1\nx_bucket{route=\"/a\",le=\"1\"} 3\nx_bucket{route=\"/a\",le=\"+Inf\"} 4\nx_sum{route=\"/a\"} 4.25\nx_count{route=\"/a\"} 4\n"
        );
    }
}
