//! A power cut, simulated for tests (`test-hooks`; #55 part 6, where FUSE and LazyFS cannot run):
//! each of an engine's files as the disk would hold it if the machine lost power at this very
//! instant, every byte written before the file's last sync and none after (LazyFS's "clear
//! cache" fault). The engine tells a [`PowerCut`] of every sync of its database file (through the
//! redb backend [`Watched`]) and of its redo log; [`PowerCut::cut`] writes the images of all of
//! them, as of one instant, into a folder where the engine opens as it would after the restart.

use std::collections::BTreeMap;
use std::io;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use redb::StorageBackend;
use redb::backends::FileBackend;

/// The files of an engine as a power cut would leave them.
#[derive(Debug, Default)]
pub struct PowerCut {
    /// Each file's content as of its last sync.
    images: Mutex<BTreeMap<PathBuf, Vec<u8>>>,
    /// Syncs still to fail (see [`PowerCut::fail_next_syncs`]).
    failing: AtomicUsize,
}

impl PowerCut {
    pub fn new() -> Arc<PowerCut> {
        Arc::new(PowerCut::default())
    }

    fn images(&self) -> std::sync::MutexGuard<'_, BTreeMap<PathBuf, Vec<u8>>> {
        self.images.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// `path` was just synced: what it holds now survives a power cut. Called on the thread that
    /// writes the file, right after the sync returned, before anyone is told of what it made
    /// durable.
    pub(crate) fn synced(&self, path: &Path) -> io::Result<()> {
        let bytes = std::fs::read(path)?;
        self.images().insert(path.to_path_buf(), bytes);
        let failing = self.failing.fetch_update(Ordering::SeqCst, Ordering::SeqCst, |n| n.checked_sub(1));
        match failing {
            Ok(_) => Err(io::Error::other("a sync failed (injected)")),
            Err(_) => Ok(()),
        }
    }

    /// Makes the next `n` syncs of any file fail in the worst way: the disk took the bytes, yet
    /// the sync reports an error (so what the engine then tells its callers must hold either way).
    pub fn fail_next_syncs(&self, n: usize) {
        self.failing.store(n, Ordering::SeqCst);
    }

    /// Cuts the power now: every file's image, all taken at this one instant, is written into
    /// `folder` under its own name. A file never synced is not there, as after a real cut.
    pub fn cut(&self, folder: &Path) -> io::Result<Vec<PathBuf>> {
        let images = self.images().clone();
        std::fs::create_dir_all(folder)?;
        let mut written = Vec::new();
        for (path, bytes) in images {
            let name = path.file_name().ok_or_else(|| io::Error::other("a file without a name"))?;
            let to = folder.join(name);
            std::fs::write(&to, bytes)?;
            written.push(to);
        }
        Ok(written)
    }
}

/// The database file, its syncs told to a [`PowerCut`].
#[derive(Debug)]
pub(crate) struct Watched {
    pub(crate) file: FileBackend,
    pub(crate) path: PathBuf,
    pub(crate) cut: Arc<PowerCut>,
}

impl StorageBackend for Watched {
    fn len(&self) -> Result<u64, io::Error> {
        self.file.len()
    }

    fn read(&self, offset: u64, out: &mut [u8]) -> Result<(), io::Error> {
        self.file.read(offset, out)
    }

    fn set_len(&self, len: u64) -> Result<(), io::Error> {
        self.file.set_len(len)
    }

    fn sync_data(&self) -> Result<(), io::Error> {
        self.file.sync_data()?;
        self.cut.synced(&self.path)
    }

    fn write(&self, offset: u64, data: &[u8]) -> Result<(), io::Error> {
        self.file.write(offset, data)
    }

    fn close(&self) -> Result<(), io::Error> {
        self.file.close()
    }
}
