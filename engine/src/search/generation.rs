//! Index generations on disk. Each is a folder `gen-<nanos>` under the search folder, and the
//! file `CURRENT` names the live one; anything else there is a leftover, removed at start and
//! after a swap. A generation's commit payload holds the schema version and, per user, the last
//! change-feed sequence applied: what the live generation is checked against at start (another
//! schema, or ahead of the database, and it is not used) and where its catch-up begins.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use tantivy::schema::Schema;
use tantivy::{Index, IndexReader, ReloadPolicy};

use super::schema;
use crate::{Error, Result};

const CURRENT: &str = "CURRENT";

/// An index commit's payload.
#[derive(Debug, Serialize, Deserialize)]
struct Payload {
    schema: u32,
    /// Last change-feed sequence applied, per user.
    seqs: HashMap<u64, u64>,
}

/// An open index generation.
pub(super) struct Live {
    pub index: Index,
    pub reader: IndexReader,
    pub dir: PathBuf,
}

/// A freshly built generation waiting to be caught up and swapped in.
pub(super) struct Built {
    pub live: Live,
    pub applied: HashMap<u64, u64>,
}

/// Opens the generation `CURRENT` names under `root`, with the sequences its last commit
/// applied; or says why it cannot serve (missing, unreadable, of another schema than `schema`, or
/// ahead of the database's sequences `seqs`, read only once the rest holds).
pub(super) fn open_current(
    root: &Path,
    schema: &Schema,
    seqs: impl FnOnce() -> Result<HashMap<u64, u64>>,
) -> std::result::Result<(Live, HashMap<u64, u64>), String> {
    let name = std::fs::read_to_string(root.join(CURRENT)).map_err(|e| format!("no current index ({e})"))?;
    let dir = root.join(name.trim());
    let index = Index::open_in_dir(&dir).map_err(|e| format!("unreadable index: {e}"))?;
    let metas = index.load_metas().map_err(|e| format!("unreadable index metadata: {e}"))?;
    let payload: Payload = serde_json::from_str(metas.payload.as_deref().unwrap_or(""))
        .map_err(|e| format!("index commit payload unreadable: {e}"))?;
    if payload.schema != schema::SCHEMA_VERSION || index.schema() != *schema {
        return Err(format!("index schema {} differs from {}", payload.schema, schema::SCHEMA_VERSION));
    }
    let seqs = seqs().map_err(|e| e.to_string())?;
    if let Some((user, seq)) = payload.seqs.iter().find(|(u, s)| seqs.get(u).is_some_and(|db| *s > db)) {
        return Err(format!("index is ahead of the database for user {user} (seq {seq}): restored database"));
    }
    let live = live_of(index, dir).map_err(|e| e.to_string())?;
    Ok((live, payload.seqs))
}

/// A generation opened for reading (readers are reloaded by hand, after each commit).
pub(super) fn live_of(index: Index, dir: PathBuf) -> Result<Live> {
    schema::register_tokenizers(&index);
    let reader = index.reader_builder().reload_policy(ReloadPolicy::Manual).try_into()?;
    Ok(Live { index, reader, dir })
}

/// An empty in-memory index standing in until the real one is open.
pub(super) fn placeholder() -> Result<Live> {
    let (schema, _) = schema::build();
    let index = Index::create_in_ram(schema);
    schema::register_tokenizers(&index);
    let reader = index.reader_builder().reload_policy(ReloadPolicy::Manual).try_into()?;
    Ok(Live { index, reader, dir: PathBuf::new() })
}

/// The payload of a commit that has applied `applied`.
pub(super) fn payload_json(applied: &HashMap<u64, u64>) -> Result<String> {
    serde_json::to_string(&Payload { schema: schema::SCHEMA_VERSION, seqs: applied.clone() })
        .map_err(|e| Error::Search(e.to_string()))
}

/// The folder name of a new generation.
pub(super) fn generation_name() -> String {
    let nanos = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map(|d| d.as_nanos()).unwrap_or(0);
    format!("gen-{nanos}")
}

/// Points `CURRENT` under `root` at the generation in `dir`, durably.
pub(super) fn set_current(root: &Path, dir: &Path) -> Result<()> {
    let name = dir.file_name().and_then(|n| n.to_str()).ok_or_else(|| Error::Search("bad index folder".into()))?;
    let tmp = root.join("CURRENT.tmp");
    {
        use std::io::Write;
        let mut f = std::fs::File::create(&tmp)?;
        f.write_all(name.as_bytes())?;
        f.sync_all()?;
    }
    std::fs::rename(&tmp, root.join(CURRENT))?;
    if let Ok(d) = std::fs::File::open(root) {
        let _ = d.sync_all();
    }
    Ok(())
}

/// Removes every generation under `root` but `keep` (a failure is logged, and tried again later).
pub(super) fn remove_other_generations(root: &Path, keep: &Path) {
    let Ok(entries) = std::fs::read_dir(root) else { return };
    for entry in entries.flatten() {
        let path = entry.path();
        if path.is_dir()
            && path != keep
            && entry.file_name().to_string_lossy().starts_with("gen-")
            && let Err(e) = std::fs::remove_dir_all(&path)
        {
            tracing::warn!(event = "search_cleanup_failed", component = "search", path = %path.display(), error = %e);
        }
    }
}
