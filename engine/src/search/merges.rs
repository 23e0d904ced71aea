//! When the live index merges its segments: not while rows are being written.
//!
//! Every index commit (each `commit_interval` while writes keep coming) adds a segment, and
//! tantivy's log merge policy merges eight segments of a size as soon as they exist. On a 2-core
//! machine such a merge takes most of a core for a few hundred milliseconds, longer as the index
//! grows, and during a stream of writes (a phone's first sync of its address book) that core is
//! taken from the requests and the writer: the rate of a 10,000-card CardDAV PUT stream fell by a
//! quarter in the stretch a merge ran (BENCHMARKS.md, thirty-fourth session). So the same policy
//! decides what to merge, but while a write came in during the last [`QUIET`] its merges wait,
//! unless the index already has [`MAX_SEGMENTS_WHILE_WRITING`] segments (every query visits
//! each one). Once writing has paused for [`QUIET`], the indexer asks the policy again and starts
//! what it proposes ([`MergeGate::due`]). Searches stay right meanwhile; only their cost per
//! segment is paid a little longer.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use tantivy::index::SegmentMeta;
use tantivy::indexer::{LogMergePolicy, MergeCandidate, MergePolicy};

/// How long writing must pause before held-back merges start.
const QUIET: Duration = Duration::from_secs(1);

/// Segments above which merges run even while rows are being written, so that a write every
/// half second for hours still leaves a bounded number of segments to each query.
const MAX_SEGMENTS_WHILE_WRITING: usize = 24;

/// The time of the last write and whether merges are waiting for writing to pause. Shared by
/// the writer's commit hook (which stamps it), tantivy's segment updater thread (which consults
/// it through [`WhenQuiet`]) and the indexer (which starts the merges held back).
#[derive(Debug)]
pub(super) struct MergeGate {
    base: Instant,
    /// Milliseconds from `base` to the last write, plus one; 0 before the first.
    last_write: AtomicU64,
    /// The policy held back merges it would otherwise have proposed.
    held: AtomicBool,
    quiet: Duration,
}

impl MergeGate {
    pub fn new() -> Arc<MergeGate> {
        Arc::new(MergeGate::with_quiet(QUIET))
    }

    fn with_quiet(quiet: Duration) -> MergeGate {
        MergeGate { base: Instant::now(), last_write: AtomicU64::new(0), held: AtomicBool::new(false), quiet }
    }

    /// Called for every committed batch of writes.
    pub fn wrote(&self) {
        let at = self.base.elapsed().as_millis() as u64 + 1;
        self.last_write.store(at, Ordering::Relaxed);
    }

    /// How long ago the last write was, if there was one.
    fn since_write(&self) -> Option<Duration> {
        match self.last_write.load(Ordering::Relaxed) {
            0 => None,
            at => Some(self.base.elapsed().saturating_sub(Duration::from_millis(at - 1))),
        }
    }

    fn writing(&self) -> bool {
        self.since_write().is_some_and(|since| since < self.quiet)
    }

    /// With merges held back: how long until writing counts as paused (zero once it does).
    /// `None` when nothing waits.
    pub fn wait(&self) -> Option<Duration> {
        if !self.held.load(Ordering::Relaxed) {
            return None;
        }
        Some(self.since_write().map_or(Duration::ZERO, |since| self.quiet.saturating_sub(since)))
    }

    /// Whether merges were held back and writing has paused since: the caller starts them now.
    /// Clears the mark, so it answers `true` once per pause.
    pub fn due(&self) -> bool {
        self.wait() == Some(Duration::ZERO) && self.held.swap(false, Ordering::Relaxed)
    }
}

/// What to merge among `segments`: tantivy's log merge policy with its defaults (the segments of
/// one size class, once there are eight of them).
pub(super) fn proposed(segments: &[SegmentMeta]) -> Vec<MergeCandidate> {
    LogMergePolicy::default().compute_merge_candidates(segments)
}

/// The live writer's merge policy: [`proposed`], held back by a [`MergeGate`] while rows are
/// being written.
#[derive(Debug)]
pub(super) struct WhenQuiet(pub Arc<MergeGate>);

impl MergePolicy for WhenQuiet {
    fn compute_merge_candidates(&self, segments: &[SegmentMeta]) -> Vec<MergeCandidate> {
        let candidates = proposed(segments);
        if !candidates.is_empty() && self.0.writing() && segments.len() <= MAX_SEGMENTS_WHILE_WRITING {
            self.0.held.store(true, Ordering::Relaxed);
            return Vec::new();
        }
        candidates
    }
}

#[cfg(test)]
mod tests {
    use tantivy::Index;
    use tantivy::index::SegmentId;

    use super::*;

    fn segments(n: usize) -> Vec<SegmentMeta> {
        let index = Index::create_in_ram(super::super::schema::build().0);
        (0..n).map(|_| index.new_segment_meta(SegmentId::generate_random(), 100)).collect()
    }

    #[test]
    fn merges_wait_while_writing_and_start_once_it_pauses() {
        let gate = Arc::new(MergeGate::with_quiet(Duration::from_millis(200)));
        let policy = WhenQuiet(gate.clone());
        let ten = segments(10);
        // Nothing written yet: the policy's own answer (eight small segments make a merge).
        assert_eq!(policy.compute_merge_candidates(&ten).len(), 1);
        assert_eq!(gate.wait(), None);
        assert!(!gate.due());

        gate.wrote();
        assert!(policy.compute_merge_candidates(&ten).is_empty(), "held back while writing");
        assert!(policy.compute_merge_candidates(&segments(3)).is_empty());
        let wait = gate.wait().expect("a merge waits");
        assert!(wait > Duration::ZERO && wait <= Duration::from_millis(200), "{wait:?}");
        assert!(!gate.due(), "not while writing");
        // Too many segments for queries: merged even while writing.
        assert_eq!(policy.compute_merge_candidates(&segments(MAX_SEGMENTS_WHILE_WRITING + 1)).len(), 1);

        std::thread::sleep(Duration::from_millis(250));
        assert_eq!(gate.wait(), Some(Duration::ZERO));
        assert!(gate.due(), "writing paused: the held merges are due");
        assert!(!gate.due(), "once per pause");
        assert_eq!(gate.wait(), None);
        assert_eq!(policy.compute_merge_candidates(&ten).len(), 1, "not held once writing paused");
    }

    #[test]
    fn nothing_to_merge_holds_nothing_back() {
        let gate = Arc::new(MergeGate::with_quiet(Duration::from_secs(60)));
        let policy = WhenQuiet(gate.clone());
        gate.wrote();
        assert!(policy.compute_merge_candidates(&segments(3)).is_empty());
        assert_eq!(gate.wait(), None, "three segments make no merge, so none waits");
    }
}
