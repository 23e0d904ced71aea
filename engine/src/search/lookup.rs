//! From a parsed [`Plan`] to the tantivy query over one user's rows of one kind.
//!
//! Every term carries its scope (see [`super::schema`]), so the query is built against the term
//! dictionaries of the open segments: a prefix longer than the indexed grams and a word that may
//! hold a typo are expanded there into the scoped words they reach, and each becomes a plain
//! term query. A query made only of term queries lets tantivy skip whole blocks of postings that
//! cannot reach the top hits (block-max WAND), so its cost follows the number of hits asked for,
//! not the number of matching rows. An expansion reaching more than [`MAX_EXPANSIONS`] words
//! falls back to a constant-score automaton over the same scoped words: slower, never wrong.

use std::collections::{BTreeSet, HashMap};
use std::fmt;
use std::sync::Arc;

use tantivy::query::{
    AutomatonWeight, BooleanQuery, BoostQuery, ConstScoreQuery, DfaWrapper, EnableScoring, FuzzyTermQuery, Occur,
    PhraseQuery, Query, TermQuery, Weight,
};
use tantivy::schema::{Field, IndexRecordOption};
use tantivy::termdict::TermStreamer;
use tantivy::{Searcher, Term};
use tantivy_fst::Automaton;

use super::any::AnyOf;
use super::query::{Clause, FUZZY_MIN_CHARS, GRAM_MAX, Plan, TITLE_BOOST, number_endings};
use super::schema::{Fields, pair_bucket, push_reversed_number};
use crate::Result;

/// Words a prefix or a typo may expand into before the automaton takes over.
pub(crate) const MAX_EXPANSIONS: usize = 64;
/// A near match (prefix, typo) weighs this much of an exact one.
const NEAR: f32 = 0.5;

pub(crate) struct Lookup<'a> {
    pub searcher: &'a Searcher,
    pub fields: &'a Fields,
    /// The scopes searched (the visible rows, and the hidden ones when asked for).
    pub scopes: Vec<String>,
    pub typos: &'a Typos,
}

/// The one-typo automata of a plan's words long enough for them, built once per search (the
/// automaton does not depend on the scope or kind it then runs in).
pub(crate) struct Typos(HashMap<String, Arc<DfaWrapper>>);

impl Typos {
    pub(crate) fn of(plan: &Plan, field: Field) -> Result<Typos> {
        let mut automata = HashMap::new();
        for clause in &plan.clauses {
            if let Clause::Word { text, .. } = clause
                && text.chars().count() >= FUZZY_MIN_CHARS
                && !automata.contains_key(text)
            {
                let dfa = FuzzyTermQuery::new(Term::from_field_text(field, text), 1, true).automaton()?;
                automata.insert(text.clone(), Arc::new(dfa));
            }
        }
        Ok(Typos(automata))
    }
}

impl Lookup<'_> {
    /// Every clause required; each satisfied by any of its forms, in any scope and field.
    pub(crate) fn query(&self, plan: &Plan) -> Result<Box<dyn Query>> {
        let mut clauses = Vec::with_capacity(plan.clauses.len());
        for clause in &plan.clauses {
            let mut either = Vec::new();
            for scope in &self.scopes {
                self.clause(scope, clause, &mut either)?;
            }
            clauses.push(either);
        }
        // A single clause stays a flat union of terms, the shape block-max WAND prunes best;
        // several are intersected, each a union that moves only as far as asked.
        if clauses.len() == 1 {
            let either = clauses.remove(0);
            return Ok(Box::new(BooleanQuery::new(either.into_iter().map(|q| (Occur::Should, q)).collect())));
        }
        Ok(Box::new(BooleanQuery::new(
            clauses.into_iter().map(|either| (Occur::Must, Box::new(AnyOf(either)) as Box<dyn Query>)).collect(),
        )))
    }

    /// For a query that is one quoted phrase: the documents holding any of its pair buckets,
    /// scored by them (a union of plain terms, which block-max WAND prunes), and the exact phrase
    /// they must also match, checked only for the documents that can still reach the best hits.
    /// Ranking follows the pairs' scores; `None` for any other query.
    pub(crate) fn phrase_candidates(&self, plan: &Plan) -> Option<(Box<dyn Query>, Box<dyn Query>)> {
        let [Clause::Phrase(words)] = plan.clauses.as_slice() else { return None };
        let f = self.fields;
        let buckets = buckets(words);
        let (mut scored, mut exact) = (Vec::new(), Vec::new());
        for scope in &self.scopes {
            for (field, grams, boost) in [(f.title, f.title_grams, TITLE_BOOST), (f.body, f.body_grams, 1.0)] {
                for bucket in &buckets {
                    scored.push((Occur::Should, term(grams, &format!("{scope}{bucket}"), boost)));
                }
                exact.push((Occur::Should, phrase(field, scope, words)));
            }
        }
        Some((Box::new(BooleanQuery::new(scored)), Box::new(BooleanQuery::new(exact))))
    }

    fn clause(&self, scope: &str, clause: &Clause, out: &mut Vec<Box<dyn Query>>) -> Result<()> {
        let f = self.fields;
        match clause {
            Clause::Word { text, prefix } => {
                let scoped = format!("{scope}{text}");
                out.push(term(f.title, &scoped, TITLE_BOOST));
                out.push(term(f.body, &scoped, 1.0));
                let chars = text.chars().count();
                let grams = *prefix && chars <= GRAM_MAX;
                if grams {
                    // Two letters are a short gram: they find names and titles only.
                    out.push(term(f.title_grams, &scoped, TITLE_BOOST * NEAR));
                    if chars == GRAM_MAX {
                        out.push(term(f.body_grams, &scoped, NEAR));
                    }
                }
                // Numbers this one ends: a range of the reversed numbers in the gram fields.
                for ending in number_endings(text) {
                    let mut reversed = scope.to_string();
                    push_reversed_number(&mut reversed, ending);
                    for (field, boost) in [(f.title_grams, TITLE_BOOST * NEAR), (f.body_grams, NEAR)] {
                        self.starting_terms(field, boost, &reversed, out)?;
                    }
                }
                let typo = self.typos.0.get(text);
                if (*prefix && !grams) || typo.is_some() {
                    let automaton =
                        typo.map(|dfa| Arc::new(Scoped { scope: scope.as_bytes().into(), inner: dfa.clone() }));
                    for (field, boost) in [(f.title, TITLE_BOOST * NEAR), (f.body, NEAR)] {
                        self.near(field, boost, &scoped, *prefix && !grams, automaton.as_ref(), out)?;
                    }
                }
            }
            Clause::Phrase(words) => {
                // Word positions decide; the buckets of the phrase's pairs only narrow the
                // documents where positions are read (and add nothing to the score).
                for (field, grams, boost) in [(f.title, f.title_grams, TITLE_BOOST), (f.body, f.body_grams, 1.0)] {
                    let mut all = vec![(Occur::Must, phrase(field, scope, words))];
                    for bucket in buckets(words) {
                        let term = Term::from_field_text(grams, &format!("{scope}{bucket}"));
                        let query = TermQuery::new(term, IndexRecordOption::Basic);
                        all.push((Occur::Must, Box::new(ConstScoreQuery::new(Box::new(query), 0.0))));
                    }
                    out.push(boosted(Box::new(BooleanQuery::new(all)), boost));
                }
            }
        }
        Ok(())
    }

    /// The words of `field` that `scoped` starts (when `prefix`) or that are one edit from it (per
    /// `typo`), other than `scoped` itself, as term queries; automata past the expansion limit.
    fn near(
        &self,
        field: Field,
        boost: f32,
        scoped: &str,
        prefix: bool,
        typo: Option<&Arc<Scoped<DfaWrapper>>>,
        out: &mut Vec<Box<dyn Query>>,
    ) -> Result<()> {
        let mut words = BTreeSet::new();
        if prefix {
            self.starting(field, boost, scoped, &mut words, out)?;
        }
        if let Some(automaton) = typo {
            let expanded = self.expand(field, &mut words, Reach::Automaton(automaton))?;
            if !expanded {
                out.push(boosted(Box::new(AutomatonQuery { field, automaton: automaton.clone() }), boost));
            }
        }
        words.remove(scoped.as_bytes());
        terms(field, boost, words, out);
        Ok(())
    }

    /// The terms of `field` that start with `start` (itself included), as term queries; a prefix
    /// automaton past the expansion limit.
    fn starting_terms(&self, field: Field, boost: f32, start: &str, out: &mut Vec<Box<dyn Query>>) -> Result<()> {
        let mut words = BTreeSet::new();
        self.starting(field, boost, start, &mut words, out)?;
        terms(field, boost, words, out);
        Ok(())
    }

    /// Adds the terms of `field` starting with `start` to `words`, or the prefix automaton to
    /// `out` when they pass the expansion limit.
    fn starting(
        &self,
        field: Field,
        boost: f32,
        start: &str,
        words: &mut BTreeSet<Vec<u8>>,
        out: &mut Vec<Box<dyn Query>>,
    ) -> Result<()> {
        let mut upper = start.as_bytes().to_vec();
        upper.push(0xFF); // never inside UTF-8: every term starting `start` sorts below
        if !self.expand(field, words, Reach::Prefix(start.as_bytes(), &upper))? {
            let term = Term::from_field_text(field, start);
            out.push(boosted(Box::new(FuzzyTermQuery::new_prefix(term, 0, false)), boost));
        }
        Ok(())
    }

    /// Adds the words `reach` finds, over every segment. `false` (and nothing added) when they
    /// pass [`MAX_EXPANSIONS`].
    fn expand(&self, field: Field, words: &mut BTreeSet<Vec<u8>>, reach: Reach<'_>) -> Result<bool> {
        let mut found = BTreeSet::new();
        for segment in self.searcher.segment_readers() {
            let index = segment.inverted_index(field)?;
            let dict = index.terms();
            let complete = match reach {
                Reach::Prefix(from, to) => drain(dict.range().ge(from).lt(to).into_stream()?, &mut found),
                Reach::Automaton(automaton) => drain(dict.search(automaton).into_stream()?, &mut found),
            };
            if !complete {
                return Ok(false);
            }
        }
        words.extend(found);
        Ok(true)
    }
}

/// Where an expansion looks in a dictionary.
#[derive(Clone, Copy)]
enum Reach<'a> {
    /// Words in `[from, to)`.
    Prefix(&'a [u8], &'a [u8]),
    Automaton(&'a Scoped<DfaWrapper>),
}

/// Collects a stream's words; `false` once more than [`MAX_EXPANSIONS`] distinct words are seen.
fn drain<A: Automaton>(mut terms: TermStreamer<'_, A>, found: &mut BTreeSet<Vec<u8>>) -> bool {
    while terms.advance() {
        if found.len() >= MAX_EXPANSIONS && !found.contains(terms.key()) {
            return false;
        }
        found.insert(terms.key().to_vec());
    }
    true
}

/// Term queries for `words` of `field` (terms of a text field are UTF-8).
fn terms(field: Field, boost: f32, words: BTreeSet<Vec<u8>>, out: &mut Vec<Box<dyn Query>>) {
    for word in words.into_iter().filter_map(|w| String::from_utf8(w).ok()) {
        out.push(term(field, &word, boost));
    }
}

/// The words of a phrase, adjacent and in order, in one scope of `field`.
fn phrase(field: Field, scope: &str, words: &[String]) -> Box<dyn Query> {
    let terms = words.iter().map(|w| Term::from_field_text(field, &format!("{scope}{w}"))).collect();
    Box::new(PhraseQuery::new(terms))
}

/// The distinct pair buckets of a phrase's adjacent words (without scope).
fn buckets(words: &[String]) -> BTreeSet<String> {
    words.windows(2).map(|w| pair_bucket(&w[0], &w[1])).collect()
}

fn term(field: Field, text: &str, boost: f32) -> Box<dyn Query> {
    boosted(Box::new(TermQuery::new(Term::from_field_text(field, text), IndexRecordOption::WithFreqs)), boost)
}

fn boosted(query: Box<dyn Query>, boost: f32) -> Box<dyn Query> {
    if boost == 1.0 { query } else { Box::new(BoostQuery::new(query, boost)) }
}

/// An automaton that first requires the scope, byte for byte, then runs `inner` on the word.
pub(crate) struct Scoped<A> {
    scope: Box<[u8]>,
    inner: Arc<A>,
}

#[derive(Clone)]
pub(crate) enum ScopedState<S> {
    /// Bytes of the scope matched so far.
    Scope(usize),
    Word(S),
    Dead,
}

impl<A: Automaton> Automaton for Scoped<A>
where
    A::State: Clone,
{
    type State = ScopedState<A::State>;

    fn start(&self) -> Self::State {
        if self.scope.is_empty() { ScopedState::Word(self.inner.start()) } else { ScopedState::Scope(0) }
    }

    fn is_match(&self, state: &Self::State) -> bool {
        matches!(state, ScopedState::Word(s) if self.inner.is_match(s))
    }

    fn can_match(&self, state: &Self::State) -> bool {
        match state {
            ScopedState::Scope(_) => true,
            ScopedState::Word(s) => self.inner.can_match(s),
            ScopedState::Dead => false,
        }
    }

    fn accept(&self, state: &Self::State, byte: u8) -> Self::State {
        match state {
            ScopedState::Scope(at) if self.scope[*at] == byte => {
                if at + 1 == self.scope.len() {
                    ScopedState::Word(self.inner.start())
                } else {
                    ScopedState::Scope(at + 1)
                }
            }
            ScopedState::Word(s) => ScopedState::Word(self.inner.accept(s, byte)),
            _ => ScopedState::Dead,
        }
    }
}

/// The constant-score form of a scoped automaton, for expansions too large to list.
#[derive(Clone)]
struct AutomatonQuery {
    field: Field,
    automaton: Arc<Scoped<DfaWrapper>>,
}

impl fmt::Debug for AutomatonQuery {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "AutomatonQuery({:?}, {})", self.field, String::from_utf8_lossy(&self.automaton.scope))
    }
}

impl Query for AutomatonQuery {
    fn weight(&self, _: EnableScoring<'_>) -> tantivy::Result<Box<dyn Weight>> {
        Ok(Box::new(AutomatonWeight::<Scoped<DfaWrapper>>::new(self.field, self.automaton.clone())))
    }
}
