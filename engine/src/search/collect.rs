//! One pass over the matching documents that keeps the best hits of every kind separately, so a
//! search answers its three groups (contacts, notes, activities) with a single query. Documents
//! the read-your-writes overlay has replaced are skipped here and judged from the database.

use std::collections::HashSet;
use std::sync::Arc;

use tantivy::collector::{Collector, SegmentCollector};
use tantivy::columnar::Column;
use tantivy::{DocId, Score, SegmentOrdinal, SegmentReader};

use super::schema::{F_KEY, unkey};

/// A matching document: its score and record id.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct Scored {
    pub score: Score,
    pub id: u64,
}

/// Best-first: higher score, then the newer (higher) id.
pub(crate) fn rank(hits: &mut Vec<Scored>, keep: usize) {
    let order = |a: &Scored, b: &Scored| b.score.total_cmp(&a.score).then(b.id.cmp(&a.id));
    if hits.len() > keep && keep > 0 {
        hits.select_nth_unstable_by(keep - 1, order);
        hits.truncate(keep);
    } else if keep == 0 {
        hits.clear();
    }
    hits.sort_unstable_by(order);
}

/// Per kind code: the kept hits and how many matched in all.
#[derive(Debug, Default, Clone)]
pub(crate) struct Group {
    pub hits: Vec<Scored>,
    pub total: usize,
}

pub(crate) struct Grouped {
    /// Kind codes run from 1 to `kinds`.
    pub kinds: usize,
    /// Hits kept per kind (offset + limit).
    pub keep: usize,
    pub scoring: bool,
    /// `(kind code, id)` of documents to leave out.
    pub exclude: Arc<HashSet<(u64, u64)>>,
}

pub(crate) struct GroupedSegment {
    key: Column<u64>,
    keep: usize,
    groups: Vec<Group>,
    exclude: Arc<HashSet<(u64, u64)>>,
}

impl Collector for Grouped {
    type Fruit = Vec<Group>;
    type Child = GroupedSegment;

    fn for_segment(&self, _: SegmentOrdinal, segment: &SegmentReader) -> tantivy::Result<GroupedSegment> {
        Ok(GroupedSegment {
            key: segment.fast_fields().u64(F_KEY)?,
            keep: self.keep,
            groups: vec![Group::default(); self.kinds + 1],
            exclude: self.exclude.clone(),
        })
    }

    fn requires_scoring(&self) -> bool {
        self.scoring
    }

    fn merge_fruits(&self, segments: Vec<Vec<Group>>) -> tantivy::Result<Vec<Group>> {
        let mut merged = vec![Group::default(); self.kinds + 1];
        for groups in segments {
            for (into, from) in merged.iter_mut().zip(groups) {
                into.total += from.total;
                into.hits.extend(from.hits);
            }
        }
        for group in &mut merged {
            rank(&mut group.hits, self.keep);
        }
        Ok(merged)
    }
}

impl SegmentCollector for GroupedSegment {
    type Fruit = Vec<Group>;

    fn collect(&mut self, doc: DocId, score: Score) {
        let Some((kind, id)) = self.key.first(doc).map(unkey) else { return };
        if !self.exclude.is_empty() && self.exclude.contains(&(kind, id)) {
            return;
        }
        let Some(group) = self.groups.get_mut(kind as usize) else { return };
        group.total += 1;
        group.hits.push(Scored { score, id });
        // Bound memory on broad queries: trim to the best `keep` now and then.
        if group.hits.len() >= self.keep.max(32).saturating_mul(2) {
            rank(&mut group.hits, self.keep);
        }
    }

    fn harvest(self) -> Vec<Group> {
        self.groups
    }
}
