//! Running a query, and what one asks for and gets back: per kind, the best hits (pruned by
//! tantivy to what can reach them), a capped count, and the rows the read-your-writes overlay
//! judges from the database.

use std::collections::{BinaryHeap, HashSet};
use std::sync::Arc;

use redb::ReadableDatabase;
use tantivy::columnar::Column;
use tantivy::query::{BooleanQuery, ConstScoreQuery, EnableScoring, Occur, Query, Scorer, TermQuery, Weight};
use tantivy::schema::IndexRecordOption;
use tantivy::{DocId, DocSet, Searcher, SegmentReader, TERMINATED, Term};

use super::collect::{Group, Grouped, Scored, rank};
use super::lookup::{Lookup, Typos};
use super::overlay::{Analysed, Pending};
use super::query::{self, Plan};
use super::schema;
use super::shared::{Shared, lock};
use crate::Result;

/// What a search asks for. Everything is within the calling user's rows.
#[derive(Debug, Clone)]
pub struct SearchRequest<'a> {
    pub plan: &'a Plan,
    /// Only these kinds (by name); `None` for every kind.
    pub kinds: Option<&'a [&'a str]>,
    /// Include documents marked hidden (archived contacts).
    pub include_hidden: bool,
    /// Only rows belonging to one of these contacts.
    pub contacts: Option<&'a [u64]>,
    /// Hits per kind, after skipping `offset`.
    pub limit: usize,
    pub offset: usize,
}

/// A matching row.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Hit {
    pub id: u64,
    pub score: f32,
}

/// The hits of one kind, best first, and how many rows of that kind matched: exact below
/// [`TOTAL_CAP`], at least `TOTAL_CAP` when it reads `TOTAL_CAP` (a search asking for more than
/// a thousand hits per kind counts every match).
#[derive(Debug, Clone, PartialEq)]
pub struct SearchGroup {
    pub kind: &'static str,
    pub hits: Vec<Hit>,
    pub total: usize,
}

impl Shared {
    /// Runs a search within `user`'s documents: per kind, the best `offset + limit` hits (pruned
    /// by tantivy to what can reach them) and a count of the matches up to [`TOTAL_CAP`].
    pub fn search(&self, user: u64, request: &SearchRequest<'_>) -> Result<Vec<SearchGroup>> {
        // The overlay is read before the index reader is taken: an entry leaves the overlay only
        // after its commit is visible, so every row is either overlaid or in this reader.
        let dirty: Vec<((u64, u64), Pending)> = lock(&self.overlay)
            .get(&user)
            .map(|m| m.iter().map(|(k, p)| (*k, p.clone())).collect())
            .unwrap_or_default();
        let live = self.current();
        let searcher = live.reader.searcher();
        let kinds: Vec<u64> = match request.kinds {
            Some(names) => names.iter().filter_map(|n| self.codes.get(n).copied()).collect(),
            None => (1..=self.sources.len() as u64).collect(),
        };
        let keep = request.offset.saturating_add(request.limit);
        let exclude: HashSet<(u64, u64)> = dirty.iter().map(|(k, _)| *k).collect();
        let mut groups = vec![Group::default(); self.sources.len() + 1];
        let typos = Typos::of(request.plan, self.fields.title)?;
        for &code in &kinds {
            let mut scopes = vec![schema::scope(user, code, false)];
            if request.include_hidden {
                scopes.push(schema::scope(user, code, true));
            }
            let lookup = Lookup { searcher: &searcher, fields: &self.fields, scopes, typos: &typos };
            let mut query = lookup.query(request.plan)?;
            let candidates = if request.contacts.is_none() { lookup.phrase_candidates(request.plan) } else { None };
            if let Some(contacts) = request.contacts {
                let any = contacts.iter().map(|c| {
                    let term = TermQuery::new(Term::from_field_u64(self.fields.contact, *c), IndexRecordOption::Basic);
                    (Occur::Should, Box::new(ConstScoreQuery::new(Box::new(term), 0.0)) as Box<dyn Query>)
                });
                let any: Box<dyn Query> = Box::new(BooleanQuery::new(any.collect()));
                query = Box::new(BooleanQuery::new(vec![(Occur::Must, query), (Occur::Must, any)]));
            }
            groups[code as usize] = if keep > PRUNED_UP_TO {
                let collector =
                    Grouped { kinds: self.sources.len(), keep, scoring: true, exclude: Arc::new(exclude.clone()) };
                std::mem::take(&mut searcher.search(&query, &collector)?[code as usize])
            } else if let Some((scored, exact)) = candidates {
                self.best(&searcher, &*scored, Some(&*exact), keep, &exclude)?
            } else {
                self.best(&searcher, &*query, None, keep, &exclude)?
            };
        }
        if !dirty.is_empty() {
            let mut txn = None;
            let mut analyzer = None;
            for ((code, id), pending) in dirty {
                if !kinds.contains(&code) {
                    continue;
                }
                let doc = match pending.doc {
                    Some(doc) => doc,
                    None => {
                        // Judged from the database, analysed once, kept while the entry lasts.
                        let txn = match &txn {
                            Some(txn) => txn,
                            None => txn.insert(self.db.begin_read()?),
                        };
                        let analyzer = analyzer.get_or_insert_with(query::analyzer);
                        let loaded = (self.sources[code as usize - 1].load)(txn, user, id)?;
                        let doc = Arc::new(loaded.map(|d| Analysed {
                            title: query::tokens(analyzer, &d.title),
                            body: query::tokens(analyzer, &d.body),
                            hidden: d.hidden,
                            contacts: self.contacts_of(code, id, &d),
                        }));
                        if let Some(entry) = lock(&self.overlay).get_mut(&user).and_then(|m| m.get_mut(&(code, id)))
                            && entry.seq == pending.seq
                        {
                            entry.doc = Some(doc.clone());
                        }
                        doc
                    }
                };
                let Some(doc) = doc.as_ref() else { continue };
                if (doc.hidden && !request.include_hidden)
                    || request.contacts.is_some_and(|cs| !doc.contacts.iter().any(|c| cs.contains(c)))
                {
                    continue;
                }
                if let Some(score) = request.plan.score(&doc.title, &doc.body) {
                    let group = &mut groups[code as usize];
                    // A pruned search counts up to the cap; a ranked-in-full one counts everything.
                    group.total = if keep > PRUNED_UP_TO { group.total + 1 } else { (group.total + 1).min(TOTAL_CAP) };
                    group.hits.push(Scored { score, id });
                }
            }
            for group in &mut groups {
                rank(&mut group.hits, keep);
            }
        }
        Ok(self
            .sources
            .iter()
            .enumerate()
            .filter(|(i, _)| kinds.contains(&(*i as u64 + 1)))
            .map(|(i, source)| {
                let group = std::mem::take(&mut groups[i + 1]);
                SearchGroup {
                    kind: source.kind,
                    hits: group
                        .hits
                        .into_iter()
                        .skip(request.offset)
                        .map(|s| Hit { id: s.id, score: s.score })
                        .collect(),
                    total: group.total,
                }
            })
            .collect())
    }

    /// The best `keep` hits of one kind's query, outside `exclude`, and their capped count. One
    /// weight serves both passes: the pruned top-k (block-max WAND where the query allows it)
    /// and, when that did not see every match, the count. With `check`, a match of `query` is
    /// a candidate that counts only if it also matches `check`.
    fn best(
        &self,
        searcher: &Searcher,
        query: &dyn Query,
        check: Option<&dyn Query>,
        keep: usize,
        exclude: &HashSet<(u64, u64)>,
    ) -> Result<Group> {
        let weight = query.weight(EnableScoring::enabled_from_searcher(searcher))?;
        let check = check.map(|c| c.weight(EnableScoring::disabled_from_searcher(searcher))).transpose()?;
        // Overlaid rows may sit among the best; ask for enough to drop them all.
        let asked = keep.saturating_add(exclude.len());
        let mut hits = Vec::new();
        let mut seen = 0usize;
        let mut threshold = f32::MIN;
        for segment in searcher.segment_readers() {
            let keys = self.key_column(segment)?;
            let alive = segment.alive_bitset();
            let mut top: BinaryHeap<std::cmp::Reverse<Ranked>> = BinaryHeap::new();
            let mut checker = Checker::new(check.as_deref(), segment)?;
            if asked > 0 {
                weight.for_each_pruning(threshold, segment, &mut |doc, score| {
                    if alive.is_none_or(|a| a.is_alive(doc)) && checker.matches(doc) {
                        seen += 1;
                        top.push(std::cmp::Reverse(Ranked(score, doc)));
                        if top.len() > asked {
                            top.pop();
                        }
                        if top.len() == asked
                            && let Some(min) = top.peek()
                        {
                            threshold = threshold.max(min.0.0);
                        }
                    }
                    threshold
                })?;
            }
            for std::cmp::Reverse(Ranked(score, doc)) in top {
                let Some((kind, id)) = keys.first(doc).map(schema::unkey) else { continue };
                if !exclude.contains(&(kind, id)) {
                    hits.push(Scored { score, id });
                }
            }
        }
        // Pruning never skipped a match while fewer than `asked` were kept: the count is exact.
        let total = if seen < asked {
            hits.len()
        } else {
            let keys = |segment: &SegmentReader| self.key_column(segment);
            count_capped(searcher, &*weight, check.as_deref(), &keys, exclude, TOTAL_CAP)?
        };
        rank(&mut hits, keep);
        Ok(Group { hits, total })
    }
}

impl Shared {
    fn key_column(&self, segment: &SegmentReader) -> Result<Column<u64>> {
        let id = segment.segment_id();
        if let Some(column) = lock(&self.keys).get(&id) {
            return Ok(column.clone());
        }
        let column = segment.fast_fields().u64(schema::F_KEY)?;
        let mut keys = lock(&self.keys);
        // Merged-away segments leave entries behind; start over now and then.
        if keys.len() >= 256 {
            keys.clear();
        }
        keys.insert(id, column.clone());
        Ok(column)
    }
}

/// A hit in a segment, ordered by score.
struct Ranked(f32, DocId);

impl PartialEq for Ranked {
    fn eq(&self, other: &Self) -> bool {
        self.cmp(other) == std::cmp::Ordering::Equal
    }
}
impl Eq for Ranked {}
impl PartialOrd for Ranked {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}
impl Ord for Ranked {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        self.0.total_cmp(&other.0).then(other.1.cmp(&self.1))
    }
}

/// Matches counted for a group's total before counting stops (`totals` then read "at least").
pub const TOTAL_CAP: usize = 1000;
/// Past this many hits per kind a search ranks every match instead of pruning to the best.
const PRUNED_UP_TO: usize = 1000;

/// Whether a candidate (visited in increasing doc order) also matches the check, if any.
struct Checker(Option<Box<dyn Scorer>>);

impl Checker {
    fn new(check: Option<&dyn Weight>, segment: &SegmentReader) -> Result<Checker> {
        Ok(Checker(check.map(|w| w.scorer(segment, 1.0)).transpose()?))
    }

    fn matches(&mut self, doc: DocId) -> bool {
        match &mut self.0 {
            None => true,
            Some(scorer) => {
                if scorer.doc() < doc {
                    scorer.seek(doc);
                }
                scorer.doc() == doc
            }
        }
    }
}

/// Counts `query`'s live matches (that also match `check`), outside `exclude`, up to `cap`.
fn count_capped(
    searcher: &Searcher,
    weight: &dyn Weight,
    check: Option<&dyn Weight>,
    keys: &dyn Fn(&SegmentReader) -> Result<Column<u64>>,
    exclude: &HashSet<(u64, u64)>,
    cap: usize,
) -> Result<usize> {
    let mut count = 0;
    for segment in searcher.segment_readers() {
        let keys = keys(segment)?;
        let alive = segment.alive_bitset();
        let mut scorer = weight.scorer(segment, 1.0)?;
        let mut checker = Checker::new(check, segment)?;
        let mut doc = scorer.doc();
        while doc != TERMINATED {
            let live = alive.is_none_or(|a| a.is_alive(doc)) && checker.matches(doc);
            if live && (exclude.is_empty() || keys.first(doc).is_none_or(|k| !exclude.contains(&schema::unkey(k)))) {
                count += 1;
                if count >= cap {
                    return Ok(cap);
                }
            }
            doc = scorer.advance();
        }
    }
    Ok(count)
}
