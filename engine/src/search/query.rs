//! What a person types into a search box, and the one set of matching rules applied to it, both by
//! tantivy (for committed documents, through [`super::lookup`]) and in memory (for the
//! read-your-writes overlay and snippets):
//!
//! - words are split and folded by the index's own analyzer (case, diacritics);
//! - every word must match, in any field;
//! - a word matches a token that equals it or, for words of five letters or more, is one edit
//!   away (insert, delete, substitute or swap two letters); the last word (the one being typed)
//!   also matches tokens it starts (type-ahead: `ali` finds Alice), in names and titles only
//!   while it has two letters;
//! - a number of four digits or more also matches the numbers it ends (see [`number_endings`]);
//! - `"quoted words"` must appear next to each other, in order;
//! - words of one letter are dropped (they would match nearly everything);
//! - name (title) matches weigh three times body matches.

use tantivy::tokenizer::{
    AsciiFoldingFilter, LowerCaser, RemoveLongFilter, TextAnalyzer, Token as TantivyToken, TokenStream, Tokenizer,
};

/// Title matches weigh this much more than body matches.
pub(crate) const TITLE_BOOST: f32 = 3.0;
/// Shortest word that tolerates one typo.
pub const FUZZY_MIN_CHARS: usize = 5;
/// Length of the indexed prefix gram, in characters. A prefix shorter than this matches names
/// and titles only; one of at most this length is one gram term of the index (see `schema`).
/// Longer prefixes expand over the words' dictionary (a fourth character narrows a prefix enough
/// for that; indexing it cost a tenth of build time).
pub(crate) const GRAM_MAX: usize = 3;
/// At most this many words and phrases are used; the rest are ignored.
pub const MAX_CLAUSES: usize = 12;

/// Lower-cases, folds diacritics (`José` -> `jose`) and splits into runs of letters and runs of
/// digits ([`Words`]).
pub fn analyzer() -> TextAnalyzer {
    TextAnalyzer::builder(Words::default())
        .filter(RemoveLongFilter::limit(LONG_WORD))
        .filter(LowerCaser)
        .filter(AsciiFoldingFilter)
        .build()
}

/// Words of this many bytes or more are not indexed (nor searched for).
const LONG_WORD: usize = 64;

/// Splits text into words: runs of letters, and runs of digits. Anything else separates words,
/// and so does a change between letters and digits: `garcia42@example.org` is `garcia`, `42`,
/// `example`, `org`. Typing `garcia` then finds every Garcia address without expanding over one
/// word per number, and `garcia42` still finds it (both of its words are required).
#[derive(Clone, Default)]
pub struct Words {
    token: TantivyToken,
}

pub struct WordStream<'a> {
    text: &'a str,
    at: usize,
    token: &'a mut TantivyToken,
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum CharClass {
    Letter,
    Digit,
    Other,
}

fn class(c: char) -> CharClass {
    if c.is_ascii() {
        return match c {
            'a'..='z' | 'A'..='Z' => CharClass::Letter,
            '0'..='9' => CharClass::Digit,
            _ => CharClass::Other,
        };
    }
    if c.is_numeric() {
        CharClass::Digit
    } else if c.is_alphanumeric() {
        CharClass::Letter
    } else {
        CharClass::Other
    }
}

impl Tokenizer for Words {
    type TokenStream<'a> = WordStream<'a>;

    fn token_stream<'a>(&'a mut self, text: &'a str) -> WordStream<'a> {
        self.token.reset();
        self.token.position = usize::MAX;
        WordStream { text, at: 0, token: &mut self.token }
    }
}

impl TokenStream for WordStream<'_> {
    fn advance(&mut self) -> bool {
        let Some((start, end)) = next_word(self.text, self.at) else {
            self.at = self.text.len();
            return false;
        };
        self.token.text.clear();
        self.token.text.push_str(&self.text[start..end]);
        self.token.offset_from = start;
        self.token.offset_to = end;
        self.token.position = self.token.position.wrapping_add(1);
        self.at = end;
        true
    }

    fn token(&self) -> &TantivyToken {
        self.token
    }

    fn token_mut(&mut self) -> &mut TantivyToken {
        self.token
    }
}

/// The words [`analyzer`] finds, without its chain of boxed filters, for indexing (a tenth of a
/// rebuild went into that chain): `each(from, to, position)` for every word it keeps, in order,
/// with [`Folder::fold_into`] giving the word's folded form. Positions count the long words left
/// out, as the analyzer's do.
pub(crate) fn each_word(text: &str, mut each: impl FnMut(usize, usize, usize)) {
    let (mut at, mut position) = (0, 0);
    while let Some((from, to)) = next_word(text, at) {
        if to - from < LONG_WORD {
            each(from, to, position);
        }
        position += 1;
        at = to;
    }
}

/// `(from, to)` of the first word of `text` at or after byte `at` ([`Words`]' rule: a run of
/// letters or a run of digits), reading ASCII byte by byte.
fn next_word(text: &str, mut at: usize) -> Option<(usize, usize)> {
    let bytes = text.as_bytes();
    let class_at = |i: usize| match bytes[i] {
        byte if byte.is_ascii() => (class(char::from(byte)), 1),
        _ => {
            let c = text[i..].chars().next().expect("a char starts here");
            (class(c), c.len_utf8())
        }
    };
    let kind = loop {
        if at >= bytes.len() {
            return None;
        }
        let (kind, len) = class_at(at);
        if kind != CharClass::Other {
            break kind;
        }
        at += len;
    };
    let from = at;
    while at < bytes.len() {
        let (next, len) = class_at(at);
        if next != kind {
            break;
        }
        at += len;
    }
    Some((from, at))
}

/// Folds one word as [`analyzer`]'s filters do: ASCII in place, anything else through the same
/// tantivy filters (lower case, then ASCII folding).
#[derive(Clone)]
pub(crate) struct Folder {
    filters: TextAnalyzer,
}

impl Default for Folder {
    fn default() -> Folder {
        Folder {
            filters: TextAnalyzer::builder(tantivy::tokenizer::RawTokenizer::default())
                .filter(LowerCaser)
                .filter(AsciiFoldingFilter)
                .build(),
        }
    }
}

impl Folder {
    /// Appends the folded form of `word` (one word of [`each_word`]) to `out`.
    pub(crate) fn fold_into(&mut self, out: &mut String, word: &str) {
        if word.is_ascii() {
            out.extend(word.bytes().map(|b| char::from(b.to_ascii_lowercase())));
            return;
        }
        let mut stream = self.filters.token_stream(word);
        while let Some(token) = stream.next() {
            out.push_str(&token.text);
        }
    }
}

/// A token of analysed text: its folded form and where it sits in the original.
#[derive(Debug, Clone)]
pub(crate) struct Token {
    pub text: String,
    pub from: usize,
    pub to: usize,
}

pub(crate) fn tokens(analyzer: &mut TextAnalyzer, text: &str) -> Vec<Token> {
    let mut stream = analyzer.token_stream(text);
    let mut out = Vec::new();
    while let Some(t) = stream.next() {
        out.push(Token { text: t.text.clone(), from: t.offset_from, to: t.offset_to });
    }
    out
}

/// One required part of a query.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Clause {
    /// A single word: exact, one typo (long words), and a prefix when `prefix` (the last word).
    Word { text: String, prefix: bool },
    /// Quoted words that must be adjacent, in order.
    Phrase(Vec<String>),
}

/// A parsed query. Build it with [`Plan::parse`]; `None` means nothing searchable was typed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Plan {
    pub clauses: Vec<Clause>,
}

/// How well a token matches a word, as the score tantivy would roughly give it.
#[derive(Debug, Clone, Copy, PartialEq, PartialOrd)]
enum Strength {
    None,
    Near,
    Exact,
}

impl Plan {
    pub fn parse(input: &str) -> Option<Plan> {
        let mut analyzer = analyzer();
        let mut clauses = Vec::new();
        for (i, part) in input.split('"').enumerate() {
            let words: Vec<String> = tokens(&mut analyzer, part).into_iter().map(|t| t.text).collect();
            // Odd parts sit between quotes. An unbalanced quote makes its tail a phrase too.
            if i % 2 == 1 && words.len() > 1 {
                clauses.push(Clause::Phrase(words));
            } else {
                let words = words.into_iter().filter(|w| w.chars().count() > 1);
                clauses.extend(words.map(|text| Clause::Word { text, prefix: false }));
            }
        }
        clauses.dedup();
        clauses.truncate(MAX_CLAUSES);
        // The word still being typed is the last one, unless the input ends with a quote.
        if !input.trim_end().ends_with('"')
            && let Some(Clause::Word { prefix, .. }) = clauses.last_mut()
        {
            *prefix = true;
        }
        (!clauses.is_empty()).then_some(Plan { clauses })
    }

    /// Whether analysed title and body satisfy every clause; the score approximates tantivy's.
    pub(crate) fn score(&self, title: &[Token], body: &[Token]) -> Option<f32> {
        let mut total = 0.0;
        for clause in &self.clauses {
            let in_title = clause_strength(clause, title, true);
            let in_body = clause_strength(clause, body, false);
            if in_title == Strength::None && in_body == Strength::None {
                return None;
            }
            total += TITLE_BOOST * strength_score(in_title) + strength_score(in_body);
        }
        Some(total)
    }

    /// Whether one token matches any word of the query (for highlighting).
    pub(crate) fn highlights(&self, token: &str) -> bool {
        self.clauses.iter().any(|c| match c {
            Clause::Word { text, prefix } => word_strength(text, *prefix, token, true) != Strength::None,
            Clause::Phrase(words) => words.iter().any(|w| w == token),
        })
    }

    /// A short excerpt of `text` around its best match, and the char ranges of matched words
    /// within the excerpt. `None` when nothing in `text` matches.
    pub fn snippet(&self, text: &str, max_chars: usize) -> Option<Snippet> {
        let mut analyzer = analyzer();
        let toks = tokens(&mut analyzer, text);
        let hits: Vec<&Token> = toks.iter().filter(|t| self.highlights(&t.text)).collect();
        let first = hits.first()?;
        // Start a little before the first match, on a char boundary, preferring a word start.
        let lead = max_chars / 4;
        let mut start = first.from;
        for (i, _) in text[..first.from].char_indices().rev().take(lead) {
            start = i;
        }
        if start > 0
            && let Some(tok) = toks.iter().find(|t| t.from >= start)
        {
            start = tok.from.min(first.from);
        }
        let mut end = text.len();
        for (count, (i, _)) in text[start..].char_indices().enumerate() {
            if count == max_chars {
                end = start + i;
                break;
            }
        }
        // Do not cut a word in two at the end.
        if end < text.len()
            && let Some(tok) = toks.iter().find(|t| t.from < end && t.to > end)
            && tok.from > start
        {
            end = tok.from;
        }
        let prefix = if start > 0 { "…" } else { "" };
        let suffix = if end < text.len() { "…" } else { "" };
        let excerpt = text[start..end].trim_end();
        let shift = prefix.chars().count();
        let highlights = hits
            .iter()
            .filter(|t| t.from >= start && t.to <= start + excerpt.len())
            .map(|t| {
                let from = text[start..t.from].chars().count() + shift;
                (from, from + text[t.from..t.to].chars().count())
            })
            .collect();
        Some(Snippet { text: format!("{prefix}{excerpt}{suffix}"), highlights })
    }
}

/// An excerpt with the `[from, to)` char ranges of the matched words.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Snippet {
    pub text: String,
    pub highlights: Vec<(usize, usize)>,
}

/// Rough equivalents of tantivy's scores: BM25 of an exact term is a few points, an automaton
/// (prefix, fuzzy) match scores one.
fn strength_score(s: Strength) -> f32 {
    match s {
        Strength::None => 0.0,
        Strength::Near => 1.0,
        Strength::Exact => 5.0,
    }
}

fn clause_strength(clause: &Clause, tokens: &[Token], title: bool) -> Strength {
    match clause {
        Clause::Word { text, prefix } => tokens
            .iter()
            .map(|t| word_strength(text, *prefix, &t.text, title))
            .fold(Strength::None, |a, b| if b > a { b } else { a }),
        Clause::Phrase(words) => {
            let found = tokens.windows(words.len()).any(|w| w.iter().zip(words).all(|(t, word)| &t.text == word));
            if found { Strength::Exact } else { Strength::None }
        }
    }
}

/// How `word` matches `token` of a name or title (`title`) or of the body.
fn word_strength(word: &str, prefix: bool, token: &str, title: bool) -> Strength {
    if token == word {
        Strength::Exact
    } else if (prefix && token.starts_with(word) && (title || word.chars().count() >= GRAM_MAX))
        || (word.chars().count() >= FUZZY_MIN_CHARS && within_one_edit(word, token))
        || number_endings(word).any(|end| is_number(token) && token.ends_with(end))
    {
        Strength::Near
    } else {
        Strength::None
    }
}

/// Shortest number found by its ending.
pub const NUMBER_ENDING_MIN: usize = 4;

/// Whether `word` is a number (a run of ASCII digits) long enough to be found by its ending.
pub(crate) fn is_number(word: &str) -> bool {
    word.len() >= NUMBER_ENDING_MIN && word.bytes().all(|b| b.is_ascii_digit())
}

/// The endings a query word finds numbers by: a number of [`NUMBER_ENDING_MIN`] digits or more
/// finds every number it ends (`4567` finds `15551234567`), and without a leading zero too (a
/// national number typed with its trunk zero, `0612345678`, finds `33612345678`).
pub(crate) fn number_endings(word: &str) -> impl Iterator<Item = &str> {
    let number = is_number(word);
    let national = word.strip_prefix('0').filter(|rest| number && is_number(rest));
    number.then_some(word).into_iter().chain(national)
}

/// Damerau-Levenshtein distance at most one (an adjacent swap counts as one edit), like
/// tantivy's fuzzy query with `transposition_cost_one`.
pub(crate) fn within_one_edit(a: &str, b: &str) -> bool {
    let a: Vec<char> = a.chars().collect();
    let b: Vec<char> = b.chars().collect();
    let (short, long) = if a.len() <= b.len() { (&a, &b) } else { (&b, &a) };
    if long.len() - short.len() > 1 {
        return false;
    }
    let common = short.iter().zip(long.iter()).take_while(|(x, y)| x == y).count();
    if common == short.len() {
        return true; // equal, or one extra char at the end
    }
    if short.len() == long.len() {
        // One substitution, or a swap of two adjacent letters.
        let rest_equal = |from: usize| short[from..] == long[from..];
        return rest_equal(common + 1)
            || (common + 1 < short.len()
                && short[common] == long[common + 1]
                && short[common + 1] == long[common]
                && rest_equal(common + 2));
    }
    // One insertion into the shorter.
    short[common..] == long[common + 1..]
}

#[cfg(test)]
mod tests {
    use super::*;

    fn toks(s: &str) -> Vec<Token> {
        tokens(&mut analyzer(), s)
    }

    #[test]
    fn parse_folds_splits_and_drops_single_letters() {
        let plan = Plan::parse("  José  a  MÜLLER \"New York\" x").expect("plan");
        let word = |text: &str, prefix| Clause::Word { text: text.into(), prefix };
        assert_eq!(
            plan.clauses,
            vec![word("jose", false), word("muller", false), Clause::Phrase(vec!["new".into(), "york".into()])]
        );
        assert_eq!(Plan::parse("a - !"), None);
        assert_eq!(Plan::parse("\"one\"").expect("plan").clauses, vec![word("one", false)]);
        assert_eq!(Plan::parse("ada lov").expect("plan").clauses, vec![word("ada", false), word("lov", true)]);
    }

    proptest::proptest! {
        /// The fuzz target `search_query`'s properties, on every test run.
        #[test]
        fn any_text_parses_and_snippets_within_bounds(text in "\\PC{0,120}") {
            if let Some(plan) = Plan::parse(&text) {
                proptest::prop_assert!(!plan.clauses.is_empty() && plan.clauses.len() <= MAX_CLAUSES);
                for clause in &plan.clauses {
                    match clause {
                        Clause::Word { text, .. } => proptest::prop_assert!(text.chars().count() > 1),
                        Clause::Phrase(words) => proptest::prop_assert!(words.len() > 1),
                    }
                }
                if let Some(s) = plan.snippet(&text, 40) {
                    let len = s.text.chars().count();
                    proptest::prop_assert!(len <= 42);
                    proptest::prop_assert!(s.highlights.iter().all(|(from, to)| from < to && *to <= len));
                }
            }
        }
    }

    /// `(text, from, to, position)` of every word, by the analyzer and by the indexing path.
    fn both_ways(text: &str) -> (Vec<(String, usize, usize, usize)>, Vec<(String, usize, usize, usize)>) {
        let mut analyzer = analyzer();
        let mut stream = analyzer.token_stream(text);
        let mut slow = Vec::new();
        while let Some(t) = stream.next() {
            slow.push((t.text.clone(), t.offset_from, t.offset_to, t.position));
        }
        let (mut folder, mut fast) = (Folder::default(), Vec::new());
        each_word(text, |from, to, position| {
            let mut word = String::new();
            folder.fold_into(&mut word, &text[from..to]);
            fast.push((word, from, to, position));
        });
        (slow, fast)
    }

    #[test]
    fn the_indexing_path_finds_the_analyzers_words() {
        let long = "x".repeat(LONG_WORD);
        for text in [
            "José MÜLLER-Lüdenscheidt, Straße 7b; garcia42@example.org",
            "İstanbul ǅemal ﬁnance Ωmega Ёлка 北京 e\u{301}te 🍄 x²³ ٣٤ Ⅻ",
            &format!("{long} after {long}y {}", &long[1..]),
            "",
            " -- ",
            "Crème brûlée, naïve fiancée: rendezvous at the café.",
        ] {
            let (slow, fast) = both_ways(text);
            assert_eq!(fast, slow, "{text}");
        }
        let (_, fast) = both_ways(&format!("a {long} b"));
        assert_eq!(fast.iter().map(|w| w.3).collect::<Vec<_>>(), [0, 2], "a long word keeps its position");
    }

    proptest::proptest! {
        #[test]
        fn the_indexing_path_finds_the_analyzers_words_in_any_text(text in "(\\PC|[a-zA-Z0-9 .éÉßİ\u{301}]){0,90}") {
            let (slow, fast) = both_ways(&text);
            proptest::prop_assert_eq!(fast, slow);
        }
    }

    #[test]
    fn words_are_runs_of_letters_or_digits() {
        let words: Vec<String> =
            toks("Garcia42@Example.org, +1 (555) 0100; Straße 7b").into_iter().map(|t| t.text).collect();
        assert_eq!(words, ["garcia", "42", "example", "org", "1", "555", "0100", "strasse", "7", "b"]);
        let t = toks("ab12");
        assert_eq!((t[1].from, t[1].to), (2, 4));
        assert!(toks(" -- ").is_empty());
    }

    #[test]
    fn numbers_are_found_by_their_endings() {
        let endings = |w| number_endings(w).collect::<Vec<_>>();
        assert_eq!(endings("0612345678"), vec!["0612345678", "612345678"]);
        assert_eq!(endings("4567"), vec!["4567"]);
        assert_eq!(endings("0456"), vec!["0456"], "too short without its zero");
        assert!(endings("456").is_empty() && endings("ab12").is_empty() && endings("١٢٣٤").is_empty());
        assert_eq!(word_strength("5678", false, "33612345678", false), Strength::Near);
        assert_eq!(word_strength("0612345678", false, "33612345678", false), Strength::Near);
        assert_eq!(word_strength("1234", false, "33612345678", false), Strength::None);
        assert_eq!(word_strength("5678", false, "abc5678", false), Strength::None, "numbers only");
    }

    #[test]
    fn edit_distance_of_one() {
        assert!(within_one_edit("alice", "alice"));
        assert!(within_one_edit("alice", "alicf"));
        assert!(within_one_edit("alice", "aliec"));
        assert!(within_one_edit("alice", "alic"));
        assert!(within_one_edit("alice", "alicee"));
        assert!(within_one_edit("alice", "xalice"));
        assert!(!within_one_edit("alice", "alxcf"));
        assert!(!within_one_edit("alice", "al"));
        assert!(within_one_edit("alice", "ailce"), "adjacent swap");
        assert!(!within_one_edit("abcde", "badce"));
    }

    #[test]
    fn in_memory_matching_follows_the_rules() {
        let title = toks("José Álvarez");
        let body = toks("jose@example.com, met at the Rust meetup");
        let plan = |q: &str| Plan::parse(q).expect("plan");
        assert!(plan("jose").score(&title, &body).is_some());
        assert!(plan("alv").score(&title, &body).is_some(), "prefix");
        assert!(plan("alv jose").score(&title, &body).is_none(), "only the last word is a prefix");
        assert!(plan("jose alv").score(&title, &body).is_some());
        assert!(plan("alvarex").score(&title, &body).is_some(), "one typo on a long word");
        assert!(plan("jise").score(&title, &body).is_none(), "no typo on a short word");
        assert!(plan("jose meetup").score(&title, &body).is_some());
        assert!(plan("jose banana").score(&title, &body).is_none(), "every word must match");
        assert!(plan("\"rust meetup\"").score(&title, &body).is_some());
        assert!(plan("\"meetup rust\"").score(&title, &body).is_none());
        let name = plan("jose").score(&title, &[]).expect("title");
        let other = plan("jose").score(&[], &body).expect("body");
        assert!(name > other, "title matches weigh more");
    }

    #[test]
    fn snippets_show_the_match() {
        let plan = Plan::parse("meetup").expect("plan");
        let text = "We talked for a long while about many things, then went to the Rust meetup together and had dinner after it.";
        let s = plan.snippet(text, 40).expect("snippet");
        assert!(s.text.starts_with('…'), "{}", s.text);
        let (from, to) = s.highlights[0];
        let marked: String = s.text.chars().skip(from).take(to - from).collect();
        assert_eq!(marked, "meetup");
        assert!(s.text.chars().count() <= 42);
        assert_eq!(plan.snippet("nothing here", 40), None);
        let short = plan.snippet("Meetup", 40).expect("snippet");
        assert_eq!(short, Snippet { text: "Meetup".into(), highlights: vec![(0, 6)] });
    }
}
