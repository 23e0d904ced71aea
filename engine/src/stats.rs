//! What the engine counts about its own work, for the operator's metrics: the writer's batches
//! (how many changes each took, how long applying and committing it took) and full-text
//! searches (how long each took). Lock-free counters, read as a snapshot.

use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::time::Duration;

/// A histogram with fixed upper bounds (the last bucket is everything above them).
pub struct Histogram {
    bounds: &'static [f64],
    counts: Vec<AtomicU64>,
    /// Sum of the observed values, in millionths.
    sum_millionths: AtomicU64,
}

/// A histogram as read: cumulative counts per bound, then the total, and the sum.
#[derive(Debug, Clone, PartialEq)]
pub struct HistogramSnapshot {
    /// `(upper bound, observations at or below it)`, cumulative.
    pub buckets: Vec<(f64, u64)>,
    pub count: u64,
    pub sum: f64,
}

impl Histogram {
    pub fn new(bounds: &'static [f64]) -> Histogram {
        Histogram {
            bounds,
            counts: (0..=bounds.len()).map(|_| AtomicU64::new(0)).collect(),
            sum_millionths: AtomicU64::new(0),
        }
    }

    pub fn observe(&self, value: f64) {
        let at = self.bounds.iter().position(|b| value <= *b).unwrap_or(self.bounds.len());
        self.counts[at].fetch_add(1, Relaxed);
        self.sum_millionths.fetch_add((value.max(0.0) * 1e6) as u64, Relaxed);
    }

    pub fn snapshot(&self) -> HistogramSnapshot {
        let mut running = 0;
        let mut buckets = Vec::with_capacity(self.bounds.len());
        for (bound, count) in self.bounds.iter().zip(&self.counts) {
            running += count.load(Relaxed);
            buckets.push((*bound, running));
        }
        let count = running + self.counts[self.bounds.len()].load(Relaxed);
        HistogramSnapshot { buckets, count, sum: self.sum_millionths.load(Relaxed) as f64 / 1e6 }
    }
}

/// Seconds from half a millisecond to ten seconds.
pub const SECONDS: &[f64] = &[0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 10.0];
/// Changes per batch.
pub const BATCH_SIZES: &[f64] = &[1.0, 2.0, 4.0, 8.0, 16.0, 32.0, 64.0, 128.0, 256.0, 512.0];

/// The engine's counters.
pub struct Stats {
    /// Changes each committed batch took.
    pub batch_size: Histogram,
    /// Seconds from a batch's start to its durable commit.
    pub commit_seconds: Histogram,
    /// Seconds one full-text search took.
    pub search_seconds: Histogram,
}

impl Default for Stats {
    fn default() -> Self {
        Stats {
            batch_size: Histogram::new(BATCH_SIZES),
            commit_seconds: Histogram::new(SECONDS),
            search_seconds: Histogram::new(SECONDS),
        }
    }
}

impl Stats {
    pub(crate) fn batch(&self, changes: usize, took: Duration) {
        self.batch_size.observe(changes as f64);
        self.commit_seconds.observe(took.as_secs_f64());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn buckets_are_cumulative_and_the_sum_adds_up() {
        let h = Histogram::new(&[1.0, 5.0]);
        for v in [0.5, 1.0, 3.0, 7.0] {
            h.observe(v);
        }
        let s = h.snapshot();
        assert_eq!(s.buckets, vec![(1.0, 2), (5.0, 3)]);
        assert_eq!(s.count, 4);
        assert!((s.sum - 11.5).abs() < 1e-6);
    }
}
