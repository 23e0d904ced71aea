//! The index's schema. Changing it means bumping [`SCHEMA_VERSION`]: an index written with another
//! version is rebuilt from the database at start.

use tantivy::schema::{Field, IndexRecordOption, NumericOptions, Schema, TextFieldIndexing, TextOptions};

use super::query::ANALYZER;

/// Stored in every commit's payload; a mismatch at start triggers a rebuild.
pub(crate) const SCHEMA_VERSION: u32 = 3;

pub(crate) const F_USER: &str = "user";
pub(crate) const F_KIND: &str = "kind";
pub(crate) const F_KEY: &str = "key";
pub(crate) const F_HIDDEN: &str = "hidden";
pub(crate) const F_CONTACT: &str = "contact";
pub(crate) const F_TITLE: &str = "title";
pub(crate) const F_BODY: &str = "body";

/// The fields of a document. Nothing is stored: results are read from the database.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Fields {
    /// Owner. Every query requires it.
    pub user: Field,
    /// Kind code (1-based position of the source), for filtering by kind.
    pub kind: Field,
    /// `kind << 56 | id`: the one term that names a document (for replacing and deleting it),
    /// and the one column a query reads per match.
    pub key: Field,
    /// 1 for rows a plain search leaves out (archived contacts).
    pub hidden: Field,
    /// Contacts the row belongs to (for restricting a search to a household).
    pub contact: Field,
    pub title: Field,
    pub body: Field,
}

const ID_BITS: u64 = (1 << 56) - 1;

pub(crate) fn key(kind: u64, id: u64) -> u64 {
    (kind << 56) | (id & ID_BITS)
}

/// `(kind, id)` of a key.
pub(crate) fn unkey(key: u64) -> (u64, u64) {
    (key >> 56, key & ID_BITS)
}

pub(crate) fn build() -> (Schema, Fields) {
    let mut b = Schema::builder();
    let filter = NumericOptions::default().set_indexed();
    let text = TextOptions::default().set_indexing_options(
        TextFieldIndexing::default().set_tokenizer(ANALYZER).set_index_option(IndexRecordOption::WithFreqsAndPositions),
    );
    let fields = Fields {
        user: b.add_u64_field(F_USER, filter.clone()),
        kind: b.add_u64_field(F_KIND, filter.clone()),
        key: b.add_u64_field(F_KEY, filter.clone().set_fast()),
        hidden: b.add_u64_field(F_HIDDEN, filter.clone()),
        contact: b.add_u64_field(F_CONTACT, filter),
        title: b.add_text_field(F_TITLE, text.clone()),
        body: b.add_text_field(F_BODY, text),
    };
    (b.build(), fields)
}
