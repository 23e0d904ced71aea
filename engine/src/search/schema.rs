//! The index's schema. Changing it means bumping [`SCHEMA_VERSION`]: an index written with another
//! version is rebuilt from the database at start.
//!
//! **Scoped terms.** Every word is indexed as `<scope><word>`, where the scope names the owner,
//! the kind and whether the row is hidden (`1f.2v:garcia`). A query therefore reads only the
//! posting lists of the caller's own rows of one kind: there is no user filter to intersect
//! with, tantivy can prune with block-max WAND over plain term scorers, and no term of another
//! user can ever be reached (the scope is always matched literally, also by typo matching).
//!
//! The scope travels at the head of the field's text (`<scope>\0<text>`, [`scoped_text`]) and
//! the field's tokenizer ([`Scoping`]) puts it in front of every word the analyzer finds.
//!
//! **Prefix grams.** For type-ahead, the first 2 to [`GRAM_MAX`] characters of every word are
//! indexed in a field of their own (`ali` for `alice`), so a short prefix is one term, not an
//! expansion over every word it starts.
//!
//! **Pair buckets.** Every two adjacent words are also indexed, in the same field as the grams
//! (one analysis of the text feeds both), as one of [`PAIR_BUCKETS`] bucket terms: a hash of the
//! pair behind a space, which no word or gram contains. A quoted phrase then starts from the few
//! documents holding its pairs' buckets, and word positions confirm the phrase only there,
//! instead of intersecting the positions of two common words across every document holding both.
//! Buckets rather than the pairs themselves keep the dictionary small: one distinct term per
//! adjacent pair made the index twice as slow to build.

use tantivy::Index;
use tantivy::schema::{Field, IndexRecordOption, NumericOptions, Schema, TextFieldIndexing, TextOptions};
use tantivy::tokenizer::{TextAnalyzer, Token, TokenStream, Tokenizer};

use super::query;

/// Stored in every commit's payload; a mismatch at start triggers a rebuild.
pub(crate) const SCHEMA_VERSION: u32 = 5;

pub(crate) const F_USER: &str = "user";
pub(crate) const F_KEY: &str = "key";
pub(crate) const F_CONTACT: &str = "contact";
pub(crate) const F_TITLE: &str = "title";
pub(crate) const F_BODY: &str = "body";
pub(crate) const F_TITLE_GRAMS: &str = "title_grams";
pub(crate) const F_BODY_GRAMS: &str = "body_grams";

/// Longest indexed prefix gram, in characters. Longer prefixes expand over the dictionary (a
/// fourth character narrows a prefix enough for that; indexing it cost a tenth of build time).
pub(crate) const GRAM_MAX: usize = 3;

/// The fields of a document. Nothing is stored: results are read from the database.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Fields {
    /// Owner (for dropping a purged user's documents).
    pub user: Field,
    /// `kind << 56 | id` (kind: the 1-based position of the source): the one term that names a document (for replacing and deleting it),
    /// and the one column a query reads per hit.
    pub key: Field,
    /// Contacts the row belongs to (for restricting a search to a household).
    pub contact: Field,
    /// Scoped words of the name or title.
    pub title: Field,
    /// Scoped words of everything else.
    pub body: Field,
    /// Scoped prefix grams and pair buckets of the title's words.
    pub title_grams: Field,
    /// Scoped prefix grams and pair buckets of the body's words.
    pub body_grams: Field,
}

const ID_BITS: u64 = (1 << 56) - 1;

pub(crate) fn key(kind: u64, id: u64) -> u64 {
    (kind << 56) | (id & ID_BITS)
}

/// `(kind, id)` of a key.
pub(crate) fn unkey(key: u64) -> (u64, u64) {
    (key >> 56, key & ID_BITS)
}

/// The prefix of every term of one user's rows of one kind. Words never contain `.` or `:` (the
/// analyzer splits on them), so no scope is the start of another's terms.
pub(crate) fn scope(user: u64, kind: u64, hidden: bool) -> String {
    format!("{user:x}.{kind:x}{}:", if hidden { 'h' } else { 'v' })
}

/// The prefix grams of `word` worth indexing: 2 to [`GRAM_MAX`] characters, shorter than the
/// word itself (the word is in the word field).
pub(crate) fn grams(word: &str) -> impl Iterator<Item = &str> {
    word.char_indices().skip(2).take(GRAM_MAX - 1).map(move |(end, _)| &word[..end])
}

/// How many buckets adjacent word pairs are hashed into, per scope.
pub(crate) const PAIR_BUCKETS: u64 = 1 << 16;

/// The bucket term of two adjacent words (without its scope): a space, then a hash (FNV-1a, mixed)
/// of both words in hex, stable across platforms and versions (it is stored in the index).
pub(crate) fn pair_bucket(first: &str, second: &str) -> String {
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    for byte in first.bytes().chain([b' ']).chain(second.bytes()) {
        hash ^= u64::from(byte);
        hash = hash.wrapping_mul(0x0100_0000_01b3);
    }
    // FNV's low bits are weak for look-alike pairs: mix before taking them (splitmix64's end).
    hash = (hash ^ (hash >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    hash = (hash ^ (hash >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    hash ^= hash >> 31;
    format!(" {:04x}", hash % PAIR_BUCKETS)
}

/// Ends the scope at the head of a field's text.
const SCOPE_END: char = '\0';
/// Tokenizer names, registered on every index by [`register_tokenizers`].
const WORDS: &str = "scoped_words";
const GRAMS: &str = "scoped_grams";

/// What a [`Scoping`] tokenizer emits for the words the analyzer finds.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(crate) enum Emit {
    Words,
    /// The prefix grams of each word, and the bucket of its pair with the word before.
    GramsAndPairs,
}

/// The text a scoped field is given: the scope, then the row's text.
pub(crate) fn scoped_text(scope: &str, text: &str) -> String {
    let mut out = String::with_capacity(scope.len() + 1 + text.len());
    out.push_str(scope);
    out.push(SCOPE_END);
    out.push_str(text);
    out
}

/// Splits and folds text with [`query::analyzer`], then emits every word (or its prefix grams, or
/// the bucket of its pair with the word before) behind the scope read from the text's head. Text without a scope yields nothing: no term
/// can exist outside a scope.
#[derive(Clone)]
pub(crate) struct Scoping {
    analyzer: TextAnalyzer,
    emit: Emit,
    tokens: Vec<Token>,
    /// The word before the current one (pair buckets only).
    previous: String,
    bucket: String,
}

pub(crate) struct ScopedTokens<'a> {
    tokens: &'a [Token],
    /// One past the current token (0 before the first `advance`).
    next: usize,
}

impl Tokenizer for Scoping {
    type TokenStream<'a> = ScopedTokens<'a>;

    fn token_stream<'a>(&'a mut self, text: &'a str) -> ScopedTokens<'a> {
        // Tokens (and their strings) are reused from one text to the next: no allocation per
        // word once the buffer has grown.
        let mut len = 0;
        if let Some((scope, text)) = text.split_once(SCOPE_END) {
            let Scoping { analyzer, emit: mode, tokens, previous, bucket } = self;
            previous.clear();
            let mut stream = analyzer.token_stream(text);
            while let Some(t) = stream.next() {
                let mut emit = |word: &str| {
                    if len == tokens.len() {
                        tokens.push(Token::default());
                    }
                    let out = &mut tokens[len];
                    out.offset_from = t.offset_from;
                    out.offset_to = t.offset_to;
                    out.position = t.position;
                    out.position_length = 1;
                    out.text.clear();
                    out.text.push_str(scope);
                    out.text.push_str(word);
                    len += 1;
                };
                match mode {
                    Emit::Words => emit(&t.text),
                    Emit::GramsAndPairs => {
                        grams(&t.text).for_each(&mut emit);
                        if !previous.is_empty() {
                            *bucket = pair_bucket(previous, &t.text);
                            emit(bucket.as_str());
                        }
                        previous.clear();
                        previous.push_str(&t.text);
                    }
                }
            }
        }
        ScopedTokens { tokens: &self.tokens[..len], next: 0 }
    }
}

impl TokenStream for ScopedTokens<'_> {
    fn advance(&mut self) -> bool {
        self.next += 1;
        self.next <= self.tokens.len()
    }

    fn token(&self) -> &Token {
        &self.tokens[self.next - 1]
    }

    fn token_mut(&mut self) -> &mut Token {
        unreachable!("scoped tokens are not filtered further")
    }
}

pub(crate) fn register_tokenizers(index: &Index) {
    let scoping = |emit| Scoping {
        analyzer: query::analyzer(),
        emit,
        tokens: Vec::new(),
        previous: String::new(),
        bucket: String::new(),
    };
    index.tokenizers().register(WORDS, scoping(Emit::Words));
    index.tokenizers().register(GRAMS, scoping(Emit::GramsAndPairs));
}

pub(crate) fn build() -> (Schema, Fields) {
    let mut b = Schema::builder();
    let filter = NumericOptions::default().set_indexed();
    let text = |tokenizer, option| {
        TextOptions::default()
            .set_indexing_options(TextFieldIndexing::default().set_tokenizer(tokenizer).set_index_option(option))
    };
    let fields = Fields {
        user: b.add_u64_field(F_USER, filter.clone()),
        key: b.add_u64_field(F_KEY, filter.clone().set_fast()),
        contact: b.add_u64_field(F_CONTACT, filter),
        title: b.add_text_field(F_TITLE, text(WORDS, IndexRecordOption::WithFreqsAndPositions)),
        body: b.add_text_field(F_BODY, text(WORDS, IndexRecordOption::WithFreqsAndPositions)),
        title_grams: b.add_text_field(F_TITLE_GRAMS, text(GRAMS, IndexRecordOption::WithFreqs)),
        body_grams: b.add_text_field(F_BODY_GRAMS, text(GRAMS, IndexRecordOption::WithFreqs)),
    };
    (b.build(), fields)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn grams_are_the_short_prefixes() {
        assert_eq!(grams("alice").collect::<Vec<_>>(), vec!["al", "ali"]);
        assert_eq!(grams("ali").collect::<Vec<_>>(), vec!["al"]);
        assert_eq!(grams("al").count(), 0);
        assert_eq!(grams("josé").collect::<Vec<_>>(), vec!["jo", "jos"]);
        assert_eq!(grams("müllerin").collect::<Vec<_>>(), vec!["mü", "mül"]);
    }

    #[test]
    fn the_tokenizers_scope_every_word_and_gram() {
        let collect = |emit, text: &str| {
            let mut t = Scoping {
                analyzer: query::analyzer(),
                emit,
                tokens: Vec::new(),
                previous: String::new(),
                bucket: String::new(),
            };
            let mut out = Vec::new();
            let mut stream = t.token_stream(text);
            while let Some(tok) = stream.next() {
                out.push((tok.text.clone(), tok.position));
            }
            out
        };
        let text = scoped_text("1.1v:", "José  Ali, Bo");
        let word = |w: &str, p| (format!("1.1v:{w}"), p);
        assert_eq!(collect(Emit::Words, &text), vec![word("jose", 0), word("ali", 1), word("bo", 2)]);
        let bucket = |a, b, p| (format!("1.1v:{}", pair_bucket(a, b)), p);
        assert_eq!(
            collect(Emit::GramsAndPairs, &text),
            vec![word("jo", 0), word("jos", 0), word("al", 1), bucket("jose", "ali", 1), bucket("ali", "bo", 2)]
        );
        // A pair never spans two texts of the same tokenizer.
        assert_eq!(collect(Emit::GramsAndPairs, &scoped_text("1.1v:", "solo")), vec![word("so", 0), word("sol", 0)]);
        assert!(collect(Emit::Words, "no scope here").is_empty());
    }

    #[test]
    fn pair_buckets_are_stable_and_ordered() {
        // Stored in indexes: a change here needs a new SCHEMA_VERSION.
        assert_eq!(pair_bucket("birthday", "party"), pair_bucket("birthday", "party"));
        assert_ne!(pair_bucket("ab", "c"), pair_bucket("a", "bc"));
        assert_ne!(pair_bucket("party", "birthday"), pair_bucket("birthday", "party"));
        assert_eq!(pair_bucket("rust", "meetup").len(), 5);
        assert!(pair_bucket("rust", "meetup").starts_with(' '), "never a word or a gram");
        let spread: std::collections::HashSet<String> =
            (0..1000).map(|i| pair_bucket("word", &i.to_string())).collect();
        assert!(spread.len() > 985, "pairs spread over the buckets: {}", spread.len());
    }

    #[test]
    fn no_scope_starts_another() {
        let scopes = [scope(1, 1, false), scope(0x11, 1, false), scope(1, 0x11, false), scope(1, 1, true)];
        for a in &scopes {
            for b in &scopes {
                assert!(a == b || !b.starts_with(a.as_str()), "{a} {b}");
            }
        }
    }
}
