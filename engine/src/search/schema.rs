//! The index's schema. Changing it means bumping [`SCHEMA_VERSION`]: an index written with another
//! version is rebuilt from the database at start.
//!
//! **Scoped terms.** Every word is indexed as `<scope><word>`, where the scope names the owner,
//! the kind and whether the row is hidden (`1f.2v:garcia`). A query therefore reads only the
//! posting lists of the caller's own rows of one kind: there is no user filter to intersect
//! with, tantivy can prune with block-max WAND over plain term scorers, and no term of another
//! user can ever be reached (the scope is always matched literally, also by typo matching).
//!
//! **Prefix grams.** For type-ahead, the first 2 to [`GRAM_MAX`] characters of every word are
//! indexed in a field of their own (`ali` for `alice`), so a short prefix is one term, not an
//! expansion over every word it starts.

use tantivy::schema::{Field, IndexRecordOption, NumericOptions, Schema, TextFieldIndexing, TextOptions};

/// Stored in every commit's payload; a mismatch at start triggers a rebuild.
pub(crate) const SCHEMA_VERSION: u32 = 4;

pub(crate) const F_USER: &str = "user";
pub(crate) const F_KIND: &str = "kind";
pub(crate) const F_KEY: &str = "key";
pub(crate) const F_CONTACT: &str = "contact";
pub(crate) const F_TITLE: &str = "title";
pub(crate) const F_BODY: &str = "body";
pub(crate) const F_TITLE_GRAMS: &str = "title_grams";
pub(crate) const F_BODY_GRAMS: &str = "body_grams";

/// Longest indexed prefix gram, in characters. Longer prefixes expand over the dictionary.
pub(crate) const GRAM_MAX: usize = 4;

/// The fields of a document. Nothing is stored: results are read from the database.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Fields {
    /// Owner (for dropping a purged user's documents).
    pub user: Field,
    /// Kind code (1-based position of the source).
    pub kind: Field,
    /// `kind << 56 | id`: the one term that names a document (for replacing and deleting it),
    /// and the one column a query reads per hit.
    pub key: Field,
    /// Contacts the row belongs to (for restricting a search to a household).
    pub contact: Field,
    /// Scoped words of the name or title.
    pub title: Field,
    /// Scoped words of everything else.
    pub body: Field,
    /// Scoped prefix grams of the title's words.
    pub title_grams: Field,
    /// Scoped prefix grams of the body's words.
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

pub(crate) fn build() -> (Schema, Fields) {
    let mut b = Schema::builder();
    let filter = NumericOptions::default().set_indexed();
    // Pre-tokenized: the analyzer runs before scoping, so the field's tokenizer is never used.
    let text = |option| TextOptions::default().set_indexing_options(TextFieldIndexing::default().set_index_option(option));
    let fields = Fields {
        user: b.add_u64_field(F_USER, filter.clone()),
        kind: b.add_u64_field(F_KIND, filter.clone()),
        key: b.add_u64_field(F_KEY, filter.clone().set_fast()),
        contact: b.add_u64_field(F_CONTACT, filter),
        title: b.add_text_field(F_TITLE, text(IndexRecordOption::WithFreqsAndPositions)),
        body: b.add_text_field(F_BODY, text(IndexRecordOption::WithFreqsAndPositions)),
        title_grams: b.add_text_field(F_TITLE_GRAMS, text(IndexRecordOption::WithFreqs)),
        body_grams: b.add_text_field(F_BODY_GRAMS, text(IndexRecordOption::WithFreqs)),
    };
    (b.build(), fields)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn grams_are_the_short_prefixes() {
        assert_eq!(grams("alice").collect::<Vec<_>>(), vec!["al", "ali", "alic"]);
        assert_eq!(grams("ali").collect::<Vec<_>>(), vec!["al"]);
        assert_eq!(grams("al").count(), 0);
        assert_eq!(grams("josé").collect::<Vec<_>>(), vec!["jo", "jos"]);
        assert_eq!(grams("müllerin").collect::<Vec<_>>(), vec!["mü", "mül", "müll"]);
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
