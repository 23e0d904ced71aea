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
//!
//! [`across_cores`] is the other half of CPU-heavy work: one request's many items (the cards of
//! a CardDAV answer or a multiget) shared across the cores on scoped threads, answers handed on
//! in order as soon as they are ready.

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

/// Items below which [`across_cores`] works on the calling thread alone (a thread costs more
/// than a few cards: a vCard's parse or rendering), per thread.
const CARDS_PER_THREAD: usize = 64;

/// Consecutive items a thread of [`across_cores`] takes at a time.
const BLOCK: usize = 16;

/// The machine's cores, asked once (on Linux the answer reads the cgroup files).
fn cores() -> usize {
    static CORES: std::sync::OnceLock<usize> = std::sync::OnceLock::new();
    *CORES.get_or_init(|| std::thread::available_parallelism().map_or(1, |n| n.get()))
}

/// Blocks a thread of [`across_cores`] may be ahead of the answers handed on: what is written
/// but not yet sent stays bounded (about 16 cards of 2 KB a block, a few hundred KB) however
/// slowly the client reads.
const LEAD: usize = 8;

/// `work` on each of `items` (with its position), on up to one thread per core, each answer
/// handed to `emit` on the calling thread in order as soon as the answers before it are: the
/// threads (the calling one too, between its emits) take blocks of [`BLOCK`] consecutive items
/// in turn, so a slow item holds back no thread's whole share, and what is done early goes out
/// early (an answer's first bytes are on their way while the rest is written). No thread takes
/// a block more than [`LEAD`] blocks past the answers handed on, so a slow `emit` (a client
/// reading slowly) holds the work back instead of gathering it all. `emit` answering
/// `false` stops it: no block is taken after that.
pub fn across_cores<I: Sync, T: Send>(
    items: &[I],
    work: impl Fn(usize, &I) -> T + Sync,
    emit: &mut dyn FnMut(T) -> bool,
) {
    use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering::Relaxed};
    use std::sync::{Condvar, Mutex, PoisonError};
    use std::time::Duration;

    let blocks = items.len().div_ceil(BLOCK);
    let block = |b: usize| -> Vec<T> {
        let start = b * BLOCK;
        let run = &items[start..(start + BLOCK).min(items.len())];
        run.iter().enumerate().map(|(i, item)| work(start + i, item)).collect()
    };
    let threads = cores().min(items.len() / CARDS_PER_THREAD).max(1);
    if threads == 1 {
        for b in 0..blocks {
            for answer in block(b) {
                if !emit(answer) {
                    return;
                }
            }
        }
        return;
    }
    let next = AtomicUsize::new(0);
    // Blocks handed on, and whether to stop; both wake the helpers waiting for room.
    let handed = AtomicUsize::new(0);
    let stopped = AtomicBool::new(false);
    let done: Mutex<std::collections::HashMap<usize, Vec<T>>> = Mutex::default();
    let arrived = Condvar::new();
    let room = Condvar::new();
    let lock = || done.lock().unwrap_or_else(PoisonError::into_inner);
    let finish = |b: usize, answers: Vec<T>| {
        lock().insert(b, answers);
        arrived.notify_one();
    };
    /// Sets `stopped` and wakes the helpers when the calling thread leaves, however it leaves:
    /// one that unwinds (a panic in its own block) must not leave them waiting for room.
    struct Release<'a>(&'a AtomicBool, &'a Condvar);
    impl Drop for Release<'_> {
        fn drop(&mut self) {
            self.0.store(true, Relaxed);
            self.1.notify_all();
        }
    }
    std::thread::scope(|scope| {
        let _release = Release(&stopped, &room);
        let helpers: Vec<_> = (1..threads)
            .map(|_| {
                scope.spawn(|| {
                    loop {
                        let b = next.fetch_add(1, Relaxed);
                        if b >= blocks {
                            break;
                        }
                        let mut waiting = lock();
                        while b >= handed.load(Relaxed) + LEAD && !stopped.load(Relaxed) {
                            waiting = room
                                .wait_timeout(waiting, Duration::from_millis(50))
                                .map_or_else(|poisoned| poisoned.into_inner().0, |(guard, _)| guard);
                        }
                        drop(waiting);
                        if stopped.load(Relaxed) {
                            break;
                        }
                        finish(b, block(b));
                    }
                })
            })
            .collect();
        let mut emitted = 0;
        'emitting: while emitted < blocks {
            let ready = lock().remove(&emitted);
            if let Some(answers) = ready {
                for answer in answers {
                    if !emit(answer) {
                        next.store(blocks, Relaxed);
                        break 'emitting;
                    }
                }
                emitted += 1;
                // Under the lock, so a helper about to wait for room does not miss it.
                let guard = lock();
                handed.store(emitted, Relaxed);
                drop(guard);
                room.notify_all();
                continue;
            }
            // Take a block while the next to hand on is not ready, as far ahead as a helper may.
            if next.load(Relaxed) < emitted + LEAD {
                let b = next.fetch_add(1, Relaxed);
                if b < blocks {
                    finish(b, block(b));
                    continue;
                }
            }
            // Every block near enough is taken: wait for the helpers' next one. A helper that panicked
            // leaves its block missing; the scope's end then carries the panic on.
            let waiting = lock();
            if !waiting.contains_key(&emitted) {
                if helpers.iter().all(|h| h.is_finished()) {
                    break;
                }
                let _ = arrived.wait_timeout(waiting, Duration::from_millis(50));
            }
        }
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every answer comes out once, in order, whether the items are few (the calling thread
    /// alone) or many (blocks shared out), and however slow some of them are.
    #[test]
    fn across_cores_hands_every_answer_on_in_order() {
        for count in [0, 1, BLOCK, CARDS_PER_THREAD * 2 - 1, 1_000, 1_001] {
            let items: Vec<usize> = (0..count).collect();
            let mut seen = Vec::new();
            across_cores(
                &items,
                |at, item| {
                    assert_eq!(at, *item);
                    if item % 97 == 0 {
                        std::thread::sleep(std::time::Duration::from_millis(2));
                    }
                    item * 2
                },
                &mut |answer| {
                    seen.push(answer);
                    true
                },
            );
            assert_eq!(seen, items.iter().map(|i| i * 2).collect::<Vec<_>>(), "{count} items");
        }
    }

    /// However slowly the answers are handed on (a client reading slowly), the work done and not
    /// yet handed on stays within [`LEAD`] blocks a helper plus the block each thread is on.
    #[test]
    fn across_cores_keeps_no_more_than_its_lead_ahead_of_a_slow_emit() {
        use std::sync::atomic::{AtomicUsize, Ordering::SeqCst};
        let items: Vec<usize> = (0..3_000).collect();
        let worked = AtomicUsize::new(0);
        let mut handed = 0;
        let mut most_ahead = 0;
        across_cores(
            &items,
            |_, item| {
                worked.fetch_add(1, SeqCst);
                *item
            },
            &mut |_| {
                if handed % BLOCK == 0 {
                    std::thread::sleep(std::time::Duration::from_millis(1));
                }
                handed += 1;
                most_ahead = most_ahead.max(worked.load(SeqCst) - handed);
                true
            },
        );
        assert_eq!(handed, items.len());
        let bound = (LEAD + 2 * cores()) * BLOCK;
        assert!(most_ahead <= bound, "{most_ahead} items written ahead of what was handed on (at most {bound})");
    }

    /// `emit` answering `false` (the client has gone) ends it: nothing more is handed on, and
    /// the blocks not yet taken are not worked on.
    #[test]
    fn across_cores_stops_when_told() {
        let items: Vec<usize> = (0..10_000).collect();
        let worked = std::sync::atomic::AtomicUsize::new(0);
        let mut seen = 0;
        across_cores(
            &items,
            |_, item| {
                worked.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                // Half a second of work in all on one thread: stopping saves most of it.
                std::thread::sleep(std::time::Duration::from_micros(50));
                *item
            },
            &mut |_| {
                seen += 1;
                seen < 10
            },
        );
        assert_eq!(seen, 10);
        let worked = worked.into_inner();
        assert!(worked < items.len() / 2, "stopped early: {worked} worked on");
    }

    /// A panic while working (a bug) comes out as a panic on the calling thread, as it would
    /// with one thread, and never leaves it waiting for the block that will not come.
    #[test]
    fn a_panic_in_the_work_is_carried_on_not_waited_for() {
        let items: Vec<usize> = (0..1_000).collect();
        for bad in [5, 500, 999] {
            let outcome = std::panic::catch_unwind(|| {
                across_cores(&items, |_, item| if *item == bad { panic!("bad item") } else { *item }, &mut |_| true)
            });
            assert!(outcome.is_err(), "item {bad}");
        }
    }

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
