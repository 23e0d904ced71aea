//! The state that the search handle, the indexer thread and queries share: the database, the
//! registered kinds and their codes, the live generation and its reader, the overlay, the
//! indexer's queue and the last commit's health. Also what more than one of them does with it:
//! turning a row into an index document, and committing a writer, which is also when overlay
//! entries leave.

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::{Arc, Mutex, RwLock, mpsc};
use std::time::{Duration, Instant};

use redb::Database;
use tantivy::columnar::Column;
use tantivy::schema::Schema;
use tantivy::{Index, IndexWriter, TantivyDocument};

use super::generation::{Built, Live, payload_json};
use super::merges::MergeGate;
use super::overlay::{self, Overlay};
use super::schema::{self, Fields};
use super::source::Source;
use crate::record::SearchDoc;
use crate::{Error, Result};

/// What the indexer thread is told.
pub(super) enum Msg {
    Changed(Vec<u64>),
    Purged(u64),
    Flush(mpsc::Sender<Result<()>>),
    Swap(Box<Built>, mpsc::Sender<Result<()>>),
    /// A background merge finished: let readers see the merged segment.
    Reload,
}

pub(super) struct Shared {
    pub db: Arc<Database>,
    /// The folder holding the generations.
    pub root: PathBuf,
    pub sources: Vec<Source>,
    /// Kind name -> code (its place in `sources`, from 1).
    pub codes: HashMap<&'static str, u64>,
    pub schema: Schema,
    pub fields: Fields,
    /// How long indexed documents may wait for a commit.
    pub interval: Duration,
    /// Change-feed entries between two commits while a backlog drains.
    pub chunk: usize,
    /// The index writer's memory budget in bytes.
    pub memory: usize,
    pub live: RwLock<Arc<Live>>,
    /// `user -> (kind code, id) -> seq` of rows written since the last visible commit.
    pub overlay: Mutex<Overlay>,
    /// The indexer thread's queue; `None` once stopping.
    pub queue: Mutex<Option<mpsc::Sender<Msg>>>,
    /// The last indexing or commit failure, and the last commit's duration in milliseconds.
    pub health: Mutex<(Option<String>, u64)>,
    /// The key column of each segment, opened once (opening one decodes its block index, which
    /// costs more than a whole pruned query on a large segment). Segments never change.
    pub keys: Mutex<HashMap<tantivy::index::SegmentId, Column<u64>>>,
    /// Holds the live writer's merges back while rows are being written (see `merges`).
    pub merges: Arc<MergeGate>,
}

/// The contacts a row of the kind `code` belongs to: its own, plus its own id for a contact.
pub(super) fn contacts_of(sources: &[Source], code: u64, id: u64, doc: &SearchDoc) -> Vec<u64> {
    let mut contacts = doc.contacts.clone();
    if sources[code as usize - 1].contact {
        contacts.push(id);
    }
    contacts
}

/// The index document of `user`'s row `id` of the kind `code`.
pub(super) fn document(
    f: &Fields,
    sources: &[Source],
    user: u64,
    code: u64,
    id: u64,
    doc: &SearchDoc,
) -> TantivyDocument {
    let mut d = TantivyDocument::default();
    d.add_u64(f.user, user);
    d.add_u64(f.key, schema::key(code, id));
    for c in contacts_of(sources, code, id, doc) {
        d.add_u64(f.contact, c);
    }
    // The scoping tokenizers read the scope from the head of the text (see `schema`).
    let scope = schema::scope(user, code, doc.hidden);
    for (text, words, grams) in [(&doc.title, f.title, f.title_grams), (&doc.body, f.body, f.body_grams)] {
        let scoped = schema::scoped_text(&scope, text);
        d.add_text(grams, &scoped);
        d.add_text(words, scoped);
    }
    d
}

pub(super) fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

impl Shared {
    pub fn current(&self) -> Arc<Live> {
        self.live.read().unwrap_or_else(|p| p.into_inner()).clone()
    }

    /// The contacts a row belongs to: its own, plus its own id for a contact.
    pub fn contacts_of(&self, code: u64, id: u64, doc: &SearchDoc) -> Vec<u64> {
        contacts_of(&self.sources, code, id, doc)
    }

    pub fn document(&self, user: u64, code: u64, id: u64, doc: &SearchDoc) -> TantivyDocument {
        document(&self.fields, &self.sources, user, code, id, doc)
    }

    /// Commits with the applied sequences as payload, makes the commit visible to readers, then
    /// drops the overlay entries it covers (in that order, so no row is ever invisible).
    pub fn commit(&self, writer: &mut IndexWriter, live: &Live, applied: &HashMap<u64, u64>) -> Result<()> {
        let started = Instant::now();
        let mut prepared = writer.prepare_commit()?;
        prepared.set_payload(&payload_json(applied)?);
        prepared.commit()?;
        live.reader.reload()?;
        overlay::drop_covered(&mut lock(&self.overlay), applied);
        *lock(&self.health) = (None, started.elapsed().as_millis() as u64);
        Ok(())
    }

    /// Merges a freshly built generation into one segment in the background (every query pays
    /// per segment); see [`Shared::merge_in_background`].
    pub fn merge_all_in_background(&self, index: &Index, writer: &mut IndexWriter) {
        if let Ok(segments) = index.searchable_segment_ids()
            && segments.len() > 1
        {
            self.merge_in_background(writer, &segments);
        }
    }

    /// Merges `segments` into one in the background, then has the indexer reload readers.
    /// Searches meanwhile use the segments as they are; the caller does not wait for it.
    pub fn merge_in_background(&self, writer: &mut IndexWriter, segments: &[tantivy::index::SegmentId]) {
        let merge = writer.merge(segments);
        let Some(queue) = lock(&self.queue).clone() else { return };
        let spawned = std::thread::Builder::new().name("search-merge".into()).spawn(move || {
            if merge.wait().is_ok() {
                let _ = queue.send(Msg::Reload);
            }
        });
        if let Err(e) = spawned {
            tracing::warn!(event = "search_merge_not_started", component = "search", error = %e);
        }
    }

    pub fn send(&self, msg: Msg) -> Result<()> {
        let queue = lock(&self.queue).clone().ok_or(Error::ShutDown)?;
        queue.send(msg).map_err(|_| Error::ShutDown)
    }
}
