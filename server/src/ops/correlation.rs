//! The correlation id of the work in progress: a request's id (set by the HTTP door's
//! `X-Request-ID` middleware) or a job run's `job:<name>:<uuid>` (set by the scheduler's
//! runner). What the work records and enqueues (system events, outbox rows, error bodies) reads
//! it through [`current`], so the domain needs no HTTP to carry it.

tokio::task_local! {
    static CORRELATION_ID: String;
}

/// The correlation id of the work this task is doing, if any.
pub fn current() -> Option<String> {
    CORRELATION_ID.try_with(Clone::clone).ok()
}

/// Runs `work` with `id` as its correlation id.
pub async fn within<F: std::future::Future>(id: String, work: F) -> F::Output {
    CORRELATION_ID.scope(id, work).await
}
