//! Group commit. One writer thread owns redb's write transaction. Callers queue a change and
//! wait; the writer takes everything queued, applies it in one transaction, makes it durable
//! once for the whole batch, then answers everyone. Nothing is acknowledged before it is durable.
//! With the redo log ([`crate::redo`], every durable engine) a batch is durable once its record
//! in the log is synced, and redb commits it without a sync; a checkpoint, a durable redb
//! commit, follows when the writer falls idle with batches in the log (or has been busy for
//! long: [`crate::redo::Checkpoints`]).
//!
//! A failing change must not poison its neighbours: when one fails, the transaction is aborted
//! and the batch is replayed without it, so the failure's partial writes vanish and the others
//! commit. That is why a change is `FnMut`: it may run more than once, and only its last run counts.

use std::any::Any;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, mpsc};
use std::time::Duration;

use redb::{Database, Durability};
use tokio::sync::oneshot;

use crate::changes::{CommitHook, Touched};
use crate::clock::Clock;
use crate::redo::RedoLog;
use crate::tx::{ChangeHook, Tx};
use crate::{Error, Result};

type Output = Box<dyn Any + Send>;
pub(crate) type Job = Box<dyn FnMut(&mut Tx<'_>) -> Result<Output> + Send>;

pub(crate) struct Request {
    pub job: Job,
    pub reply: oneshot::Sender<Result<Output>>,
    /// What the change was submitted under ([`crate::tx::ChangeHook::origin`]).
    pub origin: Option<Arc<str>>,
}

/// Upper bound on changes in one transaction, so one huge queue cannot delay every reply.
const MAX_BATCH: usize = 512;

pub(crate) struct Writer {
    pub stats: Arc<crate::stats::Stats>,
    pub db: Arc<Database>,
    pub clock: Arc<dyn Clock>,
    pub durability: Durability,
    /// Cleared when a commit fails on I/O: redb then refuses writes until reopened.
    pub healthy: Arc<AtomicBool>,
    /// Changes submitted and not yet taken into a batch ([`crate::Engine::queued_writes`]).
    pub queued: Arc<AtomicUsize>,
    /// Changes submitted and not yet answered ([`crate::Engine::writes_in_flight`]).
    pub in_flight: Arc<AtomicUsize>,
    /// Told of every committed batch before anyone is answered (the search index's
    /// read-your-writes overlay).
    pub hook: Option<Arc<dyn CommitHook>>,
    /// Told of every change inside its transaction (the outbox), once installed.
    pub change_hook: Arc<std::sync::OnceLock<Arc<dyn ChangeHook>>>,
    /// Where batches are made durable between checkpoints; `None` for a non-durable engine.
    pub redo: Option<RedoLog>,
}

impl Writer {
    pub fn run(mut self, queue: mpsc::Receiver<Request>) {
        loop {
            // Batches waiting in the log are checkpointed when the writer falls idle (not after a
            // failed commit: the log keeps them for the next start).
            let healthy = self.healthy.load(Ordering::SeqCst);
            let waiting = self.redo.as_ref().and_then(RedoLog::pending).filter(|_| healthy);
            let first = match waiting {
                Some(wait) => match queue.recv_timeout(wait.max(Duration::from_millis(1))) {
                    Ok(first) => first,
                    Err(mpsc::RecvTimeoutError::Timeout) => {
                        self.checkpoint();
                        continue;
                    }
                    Err(mpsc::RecvTimeoutError::Disconnected) => break,
                },
                None => match queue.recv() {
                    Ok(first) => first,
                    Err(_) => break,
                },
            };
            let mut batch = vec![first];
            while batch.len() < MAX_BATCH {
                match queue.try_recv() {
                    Ok(next) => batch.push(next),
                    Err(_) => break,
                }
            }
            let taken = batch.len();
            self.queued.fetch_sub(taken, Ordering::SeqCst);
            let started = std::time::Instant::now();
            self.apply(batch);
            self.stats.batch(taken, started.elapsed());
            self.in_flight.fetch_sub(taken, Ordering::SeqCst);
            if self.redo.as_ref().is_some_and(RedoLog::due) {
                self.checkpoint();
            }
        }
        // The engine is shutting down: what the log holds goes into the database.
        self.checkpoint();
        if let Some(redo) = self.redo.as_mut() {
            redo.close();
        }
    }

    /// Makes every batch in the redo log durable in the database itself, and starts the log over.
    fn checkpoint(&mut self) {
        let Some(redo) = self.redo.as_mut() else { return };
        if redo.pending().is_none() || !self.healthy.load(Ordering::SeqCst) {
            return;
        }
        let sealed = (|| -> Result<()> {
            let mut txn = self.db.begin_write()?;
            txn.set_durability(Durability::Immediate).map_err(|e| Error::CommitFailed(e.to_string()))?;
            txn.set_two_phase_commit(true);
            redo.seal(&txn)?;
            txn.commit()?;
            Ok(())
        })();
        match sealed {
            Ok(()) => redo.sealed(),
            Err(e) => {
                let _ = self.commit_failed(format!("checkpoint: {e}"));
            }
        }
    }

    fn apply(&mut self, mut batch: Vec<Request>) {
        let mut failed: Vec<Option<Error>> = (0..batch.len()).map(|_| None).collect();
        loop {
            match self.attempt(&mut batch, &failed) {
                Attempt::Committed(outputs, touched, purged) => {
                    if let Some(hook) = &self.hook {
                        hook.committed(&touched, &purged);
                    }
                    if let Some(hook) = self.change_hook.get() {
                        hook.committed();
                    }
                    for ((request, output), error) in batch.into_iter().zip(outputs).zip(failed) {
                        // The change is dropped before its caller hears back, so a caller that
                        // shares the change's data frees it on its own thread, not this one.
                        let Request { job, reply, .. } = request;
                        drop(job);
                        let result = match (output, error) {
                            (Some(output), _) => Ok(output),
                            (None, Some(error)) => Err(error),
                            (None, None) => Err(Error::CommitFailed("change was not run".into())),
                        };
                        // A caller that stopped waiting is fine: its change is committed anyway.
                        let _ = reply.send(result);
                    }
                    return;
                }
                Attempt::ChangeFailed(index, error) => failed[index] = Some(error),
                Attempt::CommitFailed(reason) => {
                    for (request, error) in batch.into_iter().zip(failed) {
                        let _ = request.reply.send(Err(error.unwrap_or_else(|| Error::CommitFailed(reason.clone()))));
                    }
                    return;
                }
            }
        }
    }

    fn attempt(&mut self, batch: &mut [Request], failed: &[Option<Error>]) -> Attempt {
        let mut txn = match self.db.begin_write() {
            Ok(txn) => txn,
            Err(e) => return self.commit_failed(e.to_string()),
        };
        // With the log, the batch is made durable by its record there, not by this commit.
        let durability = if self.redo.is_some() { Durability::None } else { self.durability };
        if let Err(e) = txn.set_durability(durability) {
            return self.commit_failed(e.to_string());
        }
        txn.set_two_phase_commit(true);
        let mut outputs = Vec::with_capacity(batch.len());
        let (touched, purged, ops);
        {
            // Instants are stored at microsecond precision; stamp them so from the start.
            let now = self.clock.now();
            let now = jiff::Timestamp::from_microsecond(now.as_microsecond()).unwrap_or(now);
            let mut tx = Tx::new(&txn, now, self.change_hook.get().cloned());
            for (index, request) in batch.iter_mut().enumerate() {
                if failed[index].is_some() {
                    outputs.push(None);
                    continue;
                }
                *tx.origin.borrow_mut() = request.origin.clone();
                let run = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| (request.job)(&mut tx)));
                let run = run.unwrap_or_else(|_| Err(Error::CommitFailed("the change panicked".into())));
                match run {
                    Ok(output) => outputs.push(Some(output)),
                    Err(error) => {
                        drop(tx);
                        let _ = txn.abort();
                        return Attempt::ChangeFailed(index, error);
                    }
                }
            }
            match tx.finish() {
                Ok(handed) => (touched, purged, ops) = handed,
                Err(error) => {
                    let _ = txn.abort();
                    return self.commit_failed(error.to_string());
                }
            }
        }
        let Some(redo) = self.redo.as_mut() else {
            return match txn.commit() {
                Ok(()) => Attempt::Committed(outputs, touched, purged),
                Err(e) => self.commit_failed(e.to_string()),
            };
        };
        if ops.unrecorded.get() {
            // Changed past the log's view: this commit is a checkpoint, durable on its own.
            let sealed = redo.seal(&txn).and_then(|()| {
                txn.set_durability(Durability::Immediate).map_err(|e| Error::CommitFailed(e.to_string()))?;
                Ok(txn.commit()?)
            });
            return match sealed {
                Ok(()) => {
                    redo.sealed();
                    Attempt::Committed(outputs, touched, purged)
                }
                Err(e) => self.commit_failed(e.to_string()),
            };
        }
        let ops = ops.into_bytes();
        if !ops.is_empty()
            && let Err(e) = redo.append(&ops)
        {
            let _ = txn.abort();
            return self.commit_failed(format!("redo log: {e}"));
        }
        match txn.commit() {
            Ok(()) => Attempt::Committed(outputs, touched, purged),
            Err(e) => {
                if !ops.is_empty()
                    && let Err(undo) = redo.withdraw(&ops)
                {
                    // The batch stays in the log and would be replayed at the next start,
                    // though its callers are told it failed.
                    tracing::error!(event = "redo_withdraw_failed", component = "engine", error = %undo);
                }
                self.commit_failed(e.to_string())
            }
        }
    }

    fn commit_failed(&self, reason: String) -> Attempt {
        tracing::error!(event = "commit_failed", component = "engine", error = %reason);
        self.healthy.store(false, Ordering::SeqCst);
        Attempt::CommitFailed(reason)
    }
}

enum Attempt {
    Committed(Vec<Option<Output>>, Vec<Touched>, Vec<u64>),
    ChangeFailed(usize, Error),
    CommitFailed(String),
}
