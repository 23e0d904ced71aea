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
//! **Prefix grams.** For type-ahead, the first [`GRAM_MAX`] characters of every word that long
//! are indexed in a field of their own (`ali` for `alice`, and for `ali`), so a three-letter
//! prefix is one term, not an expansion over every word it starts. Names and titles also get
//! their first [`SHORT_GRAM`] characters (`al`): two letters typed find the names they start,
//! and only those (two-letter grams of every body word cost about a tenth of the build time, and
//! two letters inside notes match too much to be useful).
//!
//! **Number endings.** A number of four digits or more is also indexed reversed in the gram field
//! (`#7654` for `4567`), so the numbers a query number ends (a phone's last digits, or its national
//! part without the country code) are one range of that dictionary, not one term per suffix.
//!
//! **Pair buckets.** Every two adjacent words are also indexed, in the same field as the grams,
//! as one of [`PAIR_BUCKETS`] bucket terms: a hash of the
//! pair behind a space, which no word or gram contains. A quoted phrase then starts from the few
//! documents holding its pairs' buckets, and word positions confirm the phrase only there,
//! instead of intersecting the positions of two common words across every document holding both.
//! Buckets rather than the pairs themselves keep the dictionary small: one distinct term per
//! adjacent pair made the index twice as slow to build.

use tantivy::Index;
use tantivy::schema::{Field, IndexRecordOption, NumericOptions, Schema, TextFieldIndexing, TextOptions};
use tantivy::tokenizer::{Token, TokenStream, Tokenizer};

use super::query::{self, GRAM_MAX};

/// Stored in every commit's payload; a mismatch at start triggers a rebuild. Also raised when
/// what a kind puts in its documents changes, so stored rows are indexed again (8: a contact's
/// custom field values, and a phone's national digits).
pub(crate) const SCHEMA_VERSION: u32 = 8;

pub(crate) const F_USER: &str = "user";
pub(crate) const F_KEY: &str = "key";
pub(crate) const F_CONTACT: &str = "contact";
pub(crate) const F_TITLE: &str = "title";
pub(crate) const F_BODY: &str = "body";
pub(crate) const F_TITLE_GRAMS: &str = "title_grams";
pub(crate) const F_BODY_GRAMS: &str = "body_grams";

/// Length of the short gram of names and titles, in characters.
pub(crate) const SHORT_GRAM: usize = 2;

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

/// The prefix gram of `word`: its first [`GRAM_MAX`] characters, when it has that many (a word
/// of exactly that length is its own gram).
pub(crate) fn gram(word: &str) -> Option<&str> {
    first_chars(word, GRAM_MAX)
}

/// The short gram of a name's or title's `word`: its first [`SHORT_GRAM`] characters.
pub(crate) fn short_gram(word: &str) -> Option<&str> {
    first_chars(word, SHORT_GRAM)
}

fn first_chars(word: &str, n: usize) -> Option<&str> {
    let mut ends = word.char_indices().map(|(at, _)| at).chain([word.len()]);
    ends.nth(n).map(|end| &word[..end])
}

/// How many buckets adjacent word pairs are hashed into, per scope (four hex digits).
pub(crate) const PAIR_BUCKETS: u64 = 1 << 14;
const _: () = assert!(PAIR_BUCKETS <= 1 << 16);

/// The bucket term of two adjacent words (without its scope): a space, then a hash of both words
/// in four hex digits, stable across platforms and versions (it is stored in the index).
pub(crate) fn pair_bucket(first: &str, second: &str) -> String {
    let mut out = String::with_capacity(5);
    push_pair_bucket(&mut out, word_hash(first), word_hash(second));
    out
}

/// FNV-1a of a word, hashed once per word while indexing (each word is in two pairs).
fn word_hash(word: &str) -> u64 {
    word.bytes().fold(0xcbf2_9ce4_8422_2325, |hash, byte| (hash ^ u64::from(byte)).wrapping_mul(0x0100_0000_01b3))
}

/// Appends the bucket term of two words, given by their [`word_hash`] (no allocation: it runs for
/// every indexed word).
fn push_pair_bucket(out: &mut String, first: u64, second: u64) {
    // Order matters (`party birthday` is another pair); FNV's low bits are weak for look-alike
    // words: mix before taking them (splitmix64's end).
    let mut hash = first.rotate_left(23).wrapping_mul(0x9e37_79b9_7f4a_7c15) ^ second;
    hash = (hash ^ (hash >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    hash = (hash ^ (hash >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    hash ^= hash >> 31;
    let bucket = hash % PAIR_BUCKETS;
    out.push(' ');
    for shift in [12, 8, 4, 0] {
        out.push(char::from_digit(((bucket >> shift) & 0xF) as u32, 16).expect("a hex digit"));
    }
}

/// Marks a reversed number in a gram field; never part of a word, a gram or a bucket.
pub(crate) const REVERSED: char = '#';

/// Appends the reversed-number term of `number` (ASCII digits, without scope): a number's ending
/// is then a prefix of one term, found by one range of the grams' dictionary.
pub(crate) fn push_reversed_number(out: &mut String, number: &str) {
    out.push(REVERSED);
    out.extend(number.chars().rev());
}

/// Ends the scope at the head of a field's text.
const SCOPE_END: char = '\0';
/// Tokenizer names, registered on every index by [`register_tokenizers`].
const WORDS: &str = "scoped_words";
const GRAMS: &str = "scoped_grams";
const TITLE_GRAMS: &str = "scoped_title_grams";

/// What a [`Scoping`] tokenizer emits for the words the analyzer finds.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(crate) enum Emit {
    Words,
    /// The prefix gram of each word (and its short gram, with `short`), its reversed form for a
    /// number, and the bucket of its pair with the word before.
    GramsAndPairs {
        short: bool,
    },
}

/// The text a scoped field is given: the scope, then the row's text.
pub(crate) fn scoped_text(scope: &str, text: &str) -> String {
    let mut out = String::with_capacity(scope.len() + 1 + text.len());
    out.push_str(scope);
    out.push(SCOPE_END);
    out.push_str(text);
    out
}

/// Splits and folds text as [`query::analyzer`] does ([`query::each_word`]), then emits every
/// word (or its prefix gram, and the bucket of its pair with the word before) behind the scope
/// read from the text's head. Text without a scope yields nothing: no term can exist outside a
/// scope.
#[derive(Clone)]
pub(crate) struct Scoping {
    folder: query::Folder,
    emit: Emit,
    tokens: Vec<Token>,
}

impl Scoping {
    fn new(emit: Emit) -> Scoping {
        Scoping { folder: query::Folder::default(), emit, tokens: Vec::new() }
    }
}

/// The words of the texts analysed last on this thread. A document gives the same text to its word
/// field and to its gram field, and tantivy indexes a document's fields one after the other on one
/// thread (title, body, then their grams): the gram field reuses the words instead of analysing
/// the text again. A hit needs the very same text (scope included), so it is never stale.
#[derive(Default)]
struct Analysed {
    slots: [Analysis; 2],
    /// The slot the next new text replaces.
    next: usize,
}

#[derive(Default)]
struct Analysis {
    text: String,
    /// Reused from one text to the next; the first `len` are this text's words.
    words: Vec<Token>,
    len: usize,
}

thread_local! {
    static ANALYSED: std::cell::RefCell<Analysed> = std::cell::RefCell::default();
}

impl Analysed {
    /// The folded words of `text` (without its scope), analysed now or reused.
    fn words(&mut self, folder: &mut query::Folder, scoped: &str, text: &str) -> &[Token] {
        let at = match self.slots.iter().position(|slot| slot.text == scoped) {
            Some(at) => at,
            None => {
                let at = self.next;
                self.next = (at + 1) % self.slots.len();
                let slot = &mut self.slots[at];
                slot.text.clear();
                slot.text.push_str(scoped);
                slot.len = 0;
                query::each_word(text, |from, to, position| {
                    if slot.len == slot.words.len() {
                        slot.words.push(Token::default());
                    }
                    let word = &mut slot.words[slot.len];
                    word.offset_from = from;
                    word.offset_to = to;
                    word.position = position;
                    word.text.clear();
                    folder.fold_into(&mut word.text, &text[from..to]);
                    slot.len += 1;
                });
                at
            }
        };
        let slot = &self.slots[at];
        &slot.words[..slot.len]
    }
}

pub(crate) struct ScopedTokens<'a> {
    tokens: &'a [Token],
    /// One past the current token (0 before the first `advance`).
    next: usize,
}

impl Tokenizer for Scoping {
    type TokenStream<'a> = ScopedTokens<'a>;

    fn token_stream<'a>(&'a mut self, scoped: &'a str) -> ScopedTokens<'a> {
        // Tokens (and their strings) are reused from one text to the next: no allocation per
        // word once the buffers have grown.
        let mut len = 0;
        if let Some((scope, text)) = scoped.split_once(SCOPE_END) {
            let Scoping { folder, emit: mode, tokens } = self;
            ANALYSED.with_borrow_mut(|analysed| {
                let words = analysed.words(folder, scoped, text);
                let mut emit = |word: &Token, tail: &dyn Fn(&mut String)| {
                    if len == tokens.len() {
                        tokens.push(Token::default());
                    }
                    let out = &mut tokens[len];
                    out.offset_from = word.offset_from;
                    out.offset_to = word.offset_to;
                    out.position = word.position;
                    out.position_length = 1;
                    out.text.clear();
                    out.text.push_str(scope);
                    tail(&mut out.text);
                    len += 1;
                };
                let mut before: Option<u64> = None;
                for word in words {
                    match mode {
                        Emit::Words => emit(word, &|out| out.push_str(&word.text)),
                        Emit::GramsAndPairs { short } => {
                            if let Some(gram) = short_gram(&word.text).filter(|_| *short) {
                                emit(word, &|out| out.push_str(gram));
                            }
                            if let Some(gram) = gram(&word.text) {
                                emit(word, &|out| out.push_str(gram));
                            }
                            if query::is_number(&word.text) {
                                emit(word, &|out| push_reversed_number(out, &word.text));
                            }
                            let hash = word_hash(&word.text);
                            if let Some(before) = before {
                                emit(word, &|out| push_pair_bucket(out, before, hash));
                            }
                            before = Some(hash);
                        }
                    }
                }
            });
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
    index.tokenizers().register(WORDS, Scoping::new(Emit::Words));
    index.tokenizers().register(GRAMS, Scoping::new(Emit::GramsAndPairs { short: false }));
    index.tokenizers().register(TITLE_GRAMS, Scoping::new(Emit::GramsAndPairs { short: true }));
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
        title_grams: b.add_text_field(F_TITLE_GRAMS, text(TITLE_GRAMS, IndexRecordOption::WithFreqs)),
        body_grams: b.add_text_field(F_BODY_GRAMS, text(GRAMS, IndexRecordOption::WithFreqs)),
    };
    (b.build(), fields)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_gram_is_the_first_three_letters() {
        assert_eq!(gram("alice"), Some("ali"));
        assert_eq!(gram("ali"), Some("ali"));
        assert_eq!(gram("al"), None);
        assert_eq!(gram("josé"), Some("jos"));
        assert_eq!(gram("müllerin"), Some("mül"));
        assert_eq!(gram("éé"), None);
        assert_eq!(gram("ééé"), Some("ééé"));
        assert_eq!(short_gram("alice"), Some("al"));
        assert_eq!(short_gram("al"), Some("al"));
        assert_eq!(short_gram("é"), None);
    }

    #[test]
    fn the_tokenizers_scope_every_word_and_gram() {
        let collect = |emit, text: &str| {
            let mut t = Scoping::new(emit);
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
            collect(Emit::GramsAndPairs { short: false }, &text),
            vec![word("jos", 0), word("ali", 1), bucket("jose", "ali", 1), bucket("ali", "bo", 2)]
        );
        // A pair never spans two texts of the same tokenizer.
        assert_eq!(collect(Emit::GramsAndPairs { short: false }, &scoped_text("1.1v:", "solo")), vec![word("sol", 0)]);
        assert!(collect(Emit::Words, "no scope here").is_empty());
        assert_eq!(
            collect(Emit::GramsAndPairs { short: true }, &scoped_text("1.1v:", "Al Zoé 2024")),
            vec![
                word("al", 0),
                word("zo", 1),
                word("zoe", 1),
                bucket("al", "zoe", 1),
                word("20", 2),
                word("202", 2),
                word("#4202", 2),
                bucket("zoe", "2024", 2)
            ]
        );
        // Words analysed for one field are reused for the other only for the very same text.
        let other = scoped_text("2.1v:", "José  Ali, Bo");
        assert_eq!(collect(Emit::Words, &other)[0], ("2.1v:jose".to_string(), 0));
        assert_eq!(collect(Emit::Words, &scoped_text("1.1v:", "Zoé"))[0], word("zoe", 0));
        assert_eq!(collect(Emit::GramsAndPairs { short: false }, &text)[0], word("jos", 0));
        assert_eq!(collect(Emit::GramsAndPairs { short: false }, &scoped_text("1.1v:", "Zoé")), vec![word("zoe", 0)]);
    }

    #[test]
    fn pair_buckets_are_stable_and_ordered() {
        // Stored in indexes: a change here needs a new SCHEMA_VERSION.
        assert_eq!(pair_bucket("birthday", "party"), " 3779");
        assert_eq!(pair_bucket("rust", "meetup"), " 0831");
        assert_ne!(pair_bucket("ab", "c"), pair_bucket("a", "bc"));
        assert_ne!(pair_bucket("party", "birthday"), pair_bucket("birthday", "party"));
        assert_eq!(pair_bucket("rust", "meetup").len(), 5);
        assert!(pair_bucket("rust", "meetup").starts_with(' '), "never a word or a gram");
        let spread: std::collections::HashSet<String> =
            (0..1000).map(|i| pair_bucket("word", &i.to_string())).collect();
        assert!(spread.len() > 955, "pairs spread over the buckets: {}", spread.len());
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
