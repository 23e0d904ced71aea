//! The pool that runs the CPU-heavy part of a request below the engine's writer: reading the
//! vCard a CardDAV client PUT (parsing, converting, validating, preparing the contact).
//!
//! Every write waits for the one writer thread, so when the cores are busy (a phone's first
//! sync sends thousands of cards at once) a writer that waits for a core holds up every PUT in
//! its batch, while parsing the next cards can wait a little without holding up anyone. The
//! pool's threads run [`POOL_NICE`] lower than the server (Linux keeps priority per thread), so
//! the writer takes a core when it needs one; when the cores are idle the pool gets them all.
//! Lowering a thread's own priority needs no privilege. Measured in BENCHMARKS.md ("the writer
//! ahead of the parsing").
//!
//! The pool is made on first use and lives as long as the process; its threads are its own, so
//! nothing else (in particular the engine's writer, which inherits the priority of the thread
//! that opens the engine) ever runs at the lowered priority by accident.

use std::sync::mpsc;
use std::sync::{Arc, Mutex, OnceLock};

/// How much lower than the rest of the server the pool's threads run (a nice value added to the
/// server's; the delivery worker and the search index run lower still, at 10).
pub const POOL_NICE: i32 = 5;

type Job = Box<dyn FnOnce() + Send + 'static>;

static POOL: OnceLock<mpsc::Sender<Job>> = OnceLock::new();

/// The job panicked (or the pool could not take it): the caller answers with an internal error.
#[derive(Debug, thiserror::Error)]
#[error("the request's work did not finish")]
pub struct Lost;

/// Runs `work` on the pool and waits for its result without blocking the async runtime.
pub async fn run<T, F>(work: F) -> Result<T, Lost>
where
    T: Send + 'static,
    F: FnOnce() -> T + Send + 'static,
{
    let (reply, answer) = tokio::sync::oneshot::channel();
    let job: Job = Box::new(move || {
        // A panic drops `reply`: the caller hears `Lost`, the thread goes on with the next job.
        if let Ok(result) = std::panic::catch_unwind(std::panic::AssertUnwindSafe(work)) {
            let _ = reply.send(result);
        }
    });
    pool().send(job).map_err(|_| Lost)?;
    answer.await.map_err(|_| Lost)
}

/// The pool's queue, starting its threads on first use: two per core (a job may also read the
/// database, and a read that misses the cache waits for the disk).
fn pool() -> &'static mpsc::Sender<Job> {
    POOL.get_or_init(|| {
        let (sender, queue) = mpsc::channel::<Job>();
        let queue = Arc::new(Mutex::new(queue));
        let threads = std::thread::available_parallelism().map_or(2, |n| n.get()) * 2;
        for n in 0..threads {
            let queue = queue.clone();
            let spawned = std::thread::Builder::new().name(format!("request-cpu-{n}")).spawn(move || {
                mycorrhizal_engine::lower_thread_priority(POOL_NICE, "request_cpu_priority_unchanged");
                loop {
                    let next = queue.lock().unwrap_or_else(|p| p.into_inner()).recv();
                    match next {
                        Ok(job) => job(),
                        Err(_) => return,
                    }
                }
            });
            if let Err(e) = spawned {
                tracing::warn!(event = "request_cpu_thread_not_started", component = "app", error = %e);
            }
        }
        sender
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn runs_jobs_and_survives_a_panicking_one() {
        assert_eq!(run(|| 6 * 7).await.unwrap(), 42);
        assert!(run(|| -> u32 { panic!("a bad card") }).await.is_err());
        // Every thread is still there to take work.
        let jobs: Vec<_> = (0..32).map(|n| tokio::spawn(run(move || n * 2))).collect();
        let mut sum = 0;
        for job in jobs {
            sum += job.await.unwrap().unwrap();
        }
        assert_eq!(sum, (0..32).map(|n| n * 2).sum::<i32>());
    }

    #[cfg(target_os = "linux")]
    #[tokio::test]
    async fn its_threads_run_below_the_caller() {
        let mine = rustix::process::getpriority_process(Some(rustix::thread::gettid())).unwrap();
        let theirs =
            run(|| rustix::process::getpriority_process(Some(rustix::thread::gettid())).unwrap()).await.unwrap();
        assert_eq!(theirs, (mine + POOL_NICE).min(19));
    }
}
