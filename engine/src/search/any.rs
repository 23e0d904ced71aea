//! A union of queries for one required clause of a query of several clauses.
//!
//! tantivy's union ([`tantivy::query::BooleanQuery`] of `Should` clauses) buffers the next 4,096
//! documents of every term at each far jump. That is right when the union is walked end to end,
//! and wasteful inside an intersection, which mostly jumps: every jump to a document far ahead
//! decodes and scores a whole window of every term to answer for one document. [`AnyOf`] moves
//! each term only to the document asked for (postings skip lists make that cheap), so an
//! intersection of two words costs about the documents of its rarer side.
//!
//! A lone clause is still a plain union of terms, which block-max WAND prunes (see
//! [`super::lookup`]).

use tantivy::query::{EnableScoring, Explanation, Query, Scorer, Weight};
use tantivy::{DocId, DocSet, Score, SegmentReader, TERMINATED, Term};

/// Matches a document any of `queries` matches; its score is the sum of theirs.
#[derive(Debug)]
pub(crate) struct AnyOf(pub Vec<Box<dyn Query>>);

impl Clone for AnyOf {
    fn clone(&self) -> Self {
        AnyOf(self.0.iter().map(|q| q.box_clone()).collect())
    }
}

impl Query for AnyOf {
    fn weight(&self, scoring: EnableScoring<'_>) -> tantivy::Result<Box<dyn Weight>> {
        let weights = self.0.iter().map(|q| q.weight(scoring)).collect::<tantivy::Result<Vec<_>>>()?;
        Ok(Box::new(AnyWeight(weights)))
    }

    fn query_terms<'a>(&'a self, visitor: &mut dyn FnMut(&'a Term, bool)) {
        for query in &self.0 {
            query.query_terms(visitor);
        }
    }
}

struct AnyWeight(Vec<Box<dyn Weight>>);

impl Weight for AnyWeight {
    fn scorer(&self, reader: &SegmentReader, boost: Score) -> tantivy::Result<Box<dyn Scorer>> {
        let mut scorers = Vec::with_capacity(self.0.len());
        for weight in &self.0 {
            let scorer = weight.scorer(reader, boost)?;
            if scorer.doc() != TERMINATED {
                scorers.push(scorer);
            }
        }
        if scorers.len() == 1 {
            return Ok(scorers.remove(0));
        }
        Ok(Box::new(AnyScorer::new(scorers)))
    }

    fn explain(&self, reader: &SegmentReader, doc: DocId) -> tantivy::Result<Explanation> {
        let mut total = 0.0;
        let mut details = Vec::new();
        for weight in &self.0 {
            if let Ok(explained) = weight.explain(reader, doc) {
                total += explained.value();
                details.push(explained);
            }
        }
        if details.is_empty() {
            return Err(tantivy::TantivyError::InvalidArgument(format!("document {doc} does not match")));
        }
        let mut explanation = Explanation::new("AnyOf, sum of", total);
        for detail in details {
            explanation.add_detail(detail);
        }
        Ok(explanation)
    }
}

/// The union of `scorers`, moved only as far as asked.
pub(crate) struct AnyScorer {
    scorers: Vec<Box<dyn Scorer>>,
    doc: DocId,
}

impl AnyScorer {
    fn new(scorers: Vec<Box<dyn Scorer>>) -> AnyScorer {
        let mut any = AnyScorer { scorers, doc: TERMINATED };
        any.settle();
        any
    }

    /// Drops finished scorers; the current document is the lowest of the others.
    fn settle(&mut self) -> DocId {
        self.scorers.retain(|s| s.doc() != TERMINATED);
        self.doc = self.scorers.iter().map(|s| s.doc()).min().unwrap_or(TERMINATED);
        self.doc
    }
}

impl DocSet for AnyScorer {
    fn advance(&mut self) -> DocId {
        let current = self.doc;
        for scorer in &mut self.scorers {
            if scorer.doc() == current {
                scorer.advance();
            }
        }
        self.settle()
    }

    fn seek(&mut self, target: DocId) -> DocId {
        if self.doc >= target {
            return self.doc;
        }
        for scorer in &mut self.scorers {
            if scorer.doc() < target {
                scorer.seek(target);
            }
        }
        self.settle()
    }

    fn doc(&self) -> DocId {
        self.doc
    }

    fn size_hint(&self) -> u32 {
        self.scorers.iter().map(|s| s.size_hint()).fold(0u32, u32::saturating_add)
    }

    fn cost(&self) -> u64 {
        self.scorers.iter().map(|s| s.cost()).sum()
    }
}

impl Scorer for AnyScorer {
    fn score(&mut self) -> Score {
        let doc = self.doc;
        self.scorers.iter_mut().filter(|s| s.doc() == doc).map(|s| s.score()).sum()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A scorer over a fixed list of (doc, score).
    struct Listed(Vec<(DocId, Score)>, usize);

    impl DocSet for Listed {
        fn advance(&mut self) -> DocId {
            self.1 += 1;
            self.doc()
        }
        fn doc(&self) -> DocId {
            self.0.get(self.1).map_or(TERMINATED, |(d, _)| *d)
        }
        fn size_hint(&self) -> u32 {
            self.0.len() as u32
        }
    }

    impl Scorer for Listed {
        fn score(&mut self) -> Score {
            self.0[self.1].1
        }
    }

    fn any(lists: &[&[(DocId, Score)]]) -> AnyScorer {
        AnyScorer::new(lists.iter().map(|l| Box::new(Listed(l.to_vec(), 0)) as Box<dyn Scorer>).collect())
    }

    #[test]
    fn walks_the_union_in_order_with_summed_scores() {
        let mut u = any(&[&[(1, 1.0), (4, 1.0), (9, 1.0)], &[(4, 2.0), (5, 2.0)], &[]]);
        let mut seen = Vec::new();
        while u.doc() != TERMINATED {
            seen.push((u.doc(), u.score()));
            u.advance();
        }
        assert_eq!(seen, vec![(1, 1.0), (4, 3.0), (5, 2.0), (9, 1.0)]);
        assert_eq!(u.advance(), TERMINATED, "advancing past the end stays there");
    }

    #[test]
    fn seeks_to_the_first_document_at_or_after_the_target() {
        let mut u = any(&[&[(1, 1.0), (4, 1.0), (9, 1.0)], &[(4, 2.0), (5, 2.0)]]);
        assert_eq!(u.seek(0), 1, "a target behind the current document moves nothing");
        assert_eq!(u.seek(4), 4);
        assert_eq!(u.score(), 3.0);
        assert_eq!(u.seek(6), 9);
        assert_eq!(u.score(), 1.0);
        assert_eq!(u.seek(10), TERMINATED);
        assert_eq!(any(&[&[], &[]]).doc(), TERMINATED);
    }
}
