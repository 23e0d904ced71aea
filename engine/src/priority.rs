//! Thread priority: background work (the search index's threads, and in the server the delivery
//! worker and the request CPU pool) runs at a lower priority than requests and the writer.

/// Lowers the calling thread's priority by `by` nice steps (at most to 19, the lowest); Linux
/// keeps the value per thread and new threads inherit it. Needs no privilege. Where it is
/// refused (or not Linux), the thread keeps its priority and `event` is logged at debug level:
/// the work is then as fast as before, no less correct.
pub fn lower_by(by: i32, event: &'static str) {
    #[cfg(target_os = "linux")]
    {
        let me = Some(rustix::thread::gettid());
        let now = rustix::process::getpriority_process(me).unwrap_or(0);
        if let Err(e) = rustix::process::setpriority_process(me, (now + by).min(19)) {
            tracing::debug!(event, component = "app", error = %e);
        }
    }
    #[cfg(not(target_os = "linux"))]
    let _ = (by, event);
}
