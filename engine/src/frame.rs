//! Random access into a snapshot stored as one LZ4 frame, so checking a backup needs neither the
//! whole file decoded nor a scratch copy on disk.
//!
//! [`FrameIndex::scan`] reads the frame once, start to end: it hashes the stored bytes (the
//! manifest's SHA-256 and size) and notes where each block starts. [`FramePages`] then serves redb
//! the decoded file by decoding only the blocks a read touches (a few held in memory), which is
//! possible because the frame's blocks are independent (the default, and what every backup this
//! program wrote uses) and every block but the last decodes to the frame's block size (the encoder
//! fills each block before starting the next). A frame that breaks either rule is refused here,
//! and the caller decodes it whole instead.

use std::fs::File;
use std::io::{self, BufReader, Read};
use std::os::unix::fs::FileExt;
use std::path::Path;
use std::sync::Mutex;

use redb::StorageBackend;
use sha2::{Digest, Sha256};

/// The first bytes of an LZ4 frame (magic number 0x184D2204, little-endian).
pub(crate) const LZ4_MAGIC: [u8; 4] = [0x04, 0x22, 0x4D, 0x18];

/// One block: where its stored bytes are in the file, how many, and whether they are stored
/// without compression.
#[derive(Debug, Clone, Copy)]
struct Block {
    at: u64,
    len: u32,
    raw: bool,
}

/// What one pass over a frame file found.
#[derive(Debug)]
pub(crate) struct FrameIndex {
    pub sha256: String,
    pub size: u64,
    /// `None` when the frame cannot be read block by block (linked blocks, a dictionary, an
    /// unknown header): decode it whole.
    layout: Option<Layout>,
}

#[derive(Debug)]
struct Layout {
    block_size: usize,
    blocks: Vec<Block>,
}

impl FrameIndex {
    /// Reads the file at `path` once: its SHA-256 and size, and (when the frame allows random
    /// access) where each block is. A file that is not a well-formed frame still gets its digest
    /// (the caller compares it with the manifest first) and no layout.
    pub fn scan(path: &Path) -> io::Result<FrameIndex> {
        let mut reader =
            Hashed { inner: BufReader::with_capacity(1 << 20, File::open(path)?), hasher: Sha256::new(), at: 0 };
        let layout = layout(&mut reader)?;
        // Whatever the frame parse left unread (a content checksum, trailing bytes) is hashed too.
        io::copy(&mut reader, &mut io::sink())?;
        Ok(FrameIndex { sha256: hex::encode(reader.hasher.finalize()), size: reader.at, layout })
    }

    /// A read-only redb backend over the decoded file, or `None` when the frame does not allow
    /// random access. Checks the last block decodes to a size that makes the file whole pages.
    pub fn pages(&self, path: &Path) -> io::Result<Option<FramePages>> {
        let Some(layout) = &self.layout else { return Ok(None) };
        let file = File::open(path)?;
        let Some(last) = layout.blocks.last() else { return Ok(None) };
        let pages = FramePages {
            file,
            block_size: layout.block_size,
            blocks: layout.blocks.clone(),
            len: 0,
            cache: Mutex::new(Vec::new()),
        };
        let tail = pages.decode(layout.blocks.len() - 1, last)?;
        let len = (layout.blocks.len() as u64 - 1) * layout.block_size as u64 + tail.len() as u64;
        Ok(Some(FramePages { len, ..pages }))
    }
}

/// The frame's header and block positions, or `None` when it is not one this reader handles.
fn layout(reader: &mut Hashed<impl Read>) -> io::Result<Option<Layout>> {
    let mut head = [0u8; 6];
    if read_full(reader, &mut head)? < head.len() || head[..4] != LZ4_MAGIC {
        return Ok(None);
    }
    let (flg, bd) = (head[4], head[5]);
    let independent = flg & 0b0010_0000 != 0;
    let block_checksums = flg & 0b0001_0000 != 0;
    let content_size = flg & 0b0000_1000 != 0;
    let dictionary = flg & 0b0000_0001 != 0;
    if flg >> 6 != 0b01 || !independent || dictionary {
        return Ok(None);
    }
    let block_size = match (bd >> 4) & 0b111 {
        4 => 64 << 10,
        5 => 256 << 10,
        6 => 1 << 20,
        7 => 4 << 20,
        _ => return Ok(None),
    };
    // The optional content size, then the header checksum byte.
    let mut rest = vec![0u8; if content_size { 8 } else { 0 } + 1];
    if read_full(reader, &mut rest)? < rest.len() {
        return Ok(None);
    }
    let mut blocks = Vec::new();
    loop {
        let mut word = [0u8; 4];
        if read_full(reader, &mut word)? < 4 {
            return Ok(None);
        }
        let word = u32::from_le_bytes(word);
        if word == 0 {
            break;
        }
        let (raw, len) = (word & 0x8000_0000 != 0, word & 0x7FFF_FFFF);
        if len as usize > block_size {
            return Ok(None);
        }
        blocks.push(Block { at: reader.at, len, raw });
        let skip = u64::from(len) + if block_checksums { 4 } else { 0 };
        if io::copy(&mut reader.by_ref().take(skip), &mut io::sink())? < skip {
            return Ok(None);
        }
    }
    Ok(Some(Layout { block_size, blocks }))
}

/// Reads into `buf` until it is full or the input ends; returns how much it holds.
pub(crate) fn read_full(reader: &mut impl Read, buf: &mut [u8]) -> io::Result<usize> {
    let mut filled = 0;
    while filled < buf.len() {
        match reader.read(&mut buf[filled..]) {
            Ok(0) => break,
            Ok(n) => filled += n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(filled)
}

/// A reader that hashes and counts what passes through it.
struct Hashed<R> {
    inner: R,
    hasher: Sha256,
    at: u64,
}

impl<R: Read> Read for Hashed<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let n = self.inner.read(buf)?;
        self.hasher.update(&buf[..n]);
        self.at += n as u64;
        Ok(n)
    }
}

/// Decoded blocks kept: enough for the pages a check walks near each other.
const CACHED_BLOCKS: usize = 8;

/// The decoded redb file of an LZ4 frame, served block by block (read-only).
#[derive(Debug)]
pub(crate) struct FramePages {
    file: File,
    block_size: usize,
    blocks: Vec<Block>,
    len: u64,
    /// Recently decoded blocks, most recent last.
    cache: Mutex<Vec<(usize, std::sync::Arc<Vec<u8>>)>>,
}

impl FramePages {
    fn decode(&self, index: usize, block: &Block) -> io::Result<Vec<u8>> {
        let invalid = |what: String| io::Error::new(io::ErrorKind::InvalidData, what);
        let mut stored = vec![0u8; block.len as usize];
        self.file.read_exact_at(&mut stored, block.at)?;
        let out = if block.raw {
            stored
        } else {
            let mut out = vec![0u8; self.block_size];
            let n = lz4_flex::block::decompress_into(&stored, &mut out)
                .map_err(|e| invalid(format!("LZ4 block {index} does not decode: {e}")))?;
            out.truncate(n);
            out
        };
        if index + 1 < self.blocks.len() && out.len() != self.block_size {
            return Err(invalid(format!("LZ4 block {index} is short ({} bytes)", out.len())));
        }
        Ok(out)
    }

    fn block(&self, index: usize) -> io::Result<std::sync::Arc<Vec<u8>>> {
        let mut cache = self.cache.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(at) = cache.iter().position(|(i, _)| *i == index) {
            let entry = cache.remove(at);
            let data = entry.1.clone();
            cache.push(entry);
            return Ok(data);
        }
        let data = std::sync::Arc::new(self.decode(index, &self.blocks[index])?);
        if cache.len() >= CACHED_BLOCKS {
            cache.remove(0);
        }
        cache.push((index, data.clone()));
        Ok(data)
    }
}

fn read_only() -> io::Error {
    io::Error::new(io::ErrorKind::PermissionDenied, "a backup is read-only")
}

impl StorageBackend for FramePages {
    fn len(&self) -> Result<u64, io::Error> {
        Ok(self.len)
    }

    fn read(&self, offset: u64, out: &mut [u8]) -> Result<(), io::Error> {
        if offset + out.len() as u64 > self.len {
            return Err(io::Error::new(io::ErrorKind::UnexpectedEof, "read past the end of the snapshot"));
        }
        let mut done = 0;
        while done < out.len() {
            let at = offset + done as u64;
            let index = (at / self.block_size as u64) as usize;
            let within = (at % self.block_size as u64) as usize;
            let block = self.block(index)?;
            let n = (block.len() - within).min(out.len() - done);
            out[done..done + n].copy_from_slice(&block[within..within + n]);
            done += n;
        }
        Ok(())
    }

    fn set_len(&self, _len: u64) -> Result<(), io::Error> {
        Err(read_only())
    }

    fn sync_data(&self) -> Result<(), io::Error> {
        Ok(())
    }

    fn write(&self, _offset: u64, _data: &[u8]) -> Result<(), io::Error> {
        Err(read_only())
    }
}

/// The header of the frames this program writes: lz4_flex's own (a standard frame of
/// independent 256 KB blocks, no content checksum), taken from the frame of no bytes less its
/// end mark.
pub(crate) fn header() -> io::Result<Vec<u8>> {
    let info = lz4_flex::frame::FrameInfo::new()
        .block_size(lz4_flex::frame::BlockSize::Max256KB)
        .block_mode(lz4_flex::frame::BlockMode::Independent);
    let mut header =
        lz4_flex::frame::FrameEncoder::with_frame_info(info, Vec::new()).finish().map_err(io::Error::other)?;
    if !header.starts_with(&LZ4_MAGIC) || !header.ends_with(&[0, 0, 0, 0]) {
        return Err(io::Error::other("unexpected LZ4 frame header"));
    }
    header.truncate(header.len() - 4);
    Ok(header)
}

/// The block size of the frames written (the header's `Max256KB`).
pub(crate) const BLOCK: usize = 256 << 10;

/// A block handed to the compressing threads, by its place in the frame.
type Job = (u64, Vec<u8>);
/// A block compressed: its place, its bytes, and what to store (`None`: the bytes themselves,
/// as they did not shrink).
type Done = (u64, Vec<u8>, Option<Vec<u8>>);

/// Writes one LZ4 frame (the standard format: `lz4 -d` reads it) to a file while the caller
/// produces its content: each full 256 KB block goes to one of up to two compressing threads, and
/// a writing thread stores the blocks in order, hashing the stored bytes as they pass, so
/// reading the content, compressing it and writing it overlap. [`FrameWriter::finish`] writes
/// the end mark, syncs the file and returns the stored bytes' SHA-256 and size.
pub(crate) struct FrameWriter {
    block: Vec<u8>,
    next: u64,
    work: Option<std::sync::mpsc::SyncSender<Job>>,
    /// Blocks the writing thread is done with, for reuse.
    spare: std::sync::mpsc::Receiver<Vec<u8>>,
    workers: Vec<std::thread::JoinHandle<()>>,
    sink: Option<std::thread::JoinHandle<io::Result<(String, u64)>>>,
}

impl FrameWriter {
    pub fn create(path: &Path) -> io::Result<FrameWriter> {
        use std::sync::mpsc::{channel, sync_channel};
        let mut file = std::io::BufWriter::with_capacity(1 << 20, File::create(path)?);
        let header = header()?;
        let threads = std::thread::available_parallelism().map(|n| n.get()).unwrap_or(1).clamp(1, 2);
        let (work, jobs) = sync_channel::<Job>(2 * threads);
        let jobs = std::sync::Arc::new(Mutex::new(jobs));
        let (done, finished) = channel::<Done>();
        let (give_back, spare) = channel::<Vec<u8>>();
        let workers = (0..threads)
            .map(|i| {
                let (jobs, done) = (jobs.clone(), done.clone());
                std::thread::Builder::new().name(format!("backup-lz4-{i}")).spawn(move || {
                    let bound = lz4_flex::block::get_maximum_output_size(BLOCK);
                    loop {
                        let job = jobs.lock().unwrap_or_else(|p| p.into_inner()).recv();
                        let Ok((at, block)) = job else { break };
                        let mut out = vec![0u8; bound];
                        let stored = match lz4_flex::block::compress_into(&block, &mut out) {
                            Ok(n) if n < block.len() => {
                                out.truncate(n);
                                Some(out)
                            }
                            _ => None,
                        };
                        if done.send((at, block, stored)).is_err() {
                            break;
                        }
                    }
                })
            })
            .collect::<io::Result<Vec<_>>>()?;
        drop(done);
        let sink = std::thread::Builder::new().name("backup-write".into()).spawn(move || {
            let mut hasher = Sha256::new();
            let mut size = 0u64;
            let mut put = |file: &mut std::io::BufWriter<File>, bytes: &[u8]| -> io::Result<()> {
                use std::io::Write;
                file.write_all(bytes)?;
                hasher.update(bytes);
                size += bytes.len() as u64;
                Ok(())
            };
            put(&mut file, &header)?;
            let mut waiting = std::collections::BTreeMap::new();
            let mut expected = 0u64;
            for (at, block, stored) in finished {
                waiting.insert(at, (block, stored));
                while let Some((block, stored)) = waiting.remove(&expected) {
                    // A block that does not shrink is stored as it is (the size's high bit says so).
                    match &stored {
                        Some(out) => {
                            put(&mut file, &(out.len() as u32).to_le_bytes())?;
                            put(&mut file, out)?;
                        }
                        None => {
                            put(&mut file, &(block.len() as u32 | 0x8000_0000).to_le_bytes())?;
                            put(&mut file, &block)?;
                        }
                    }
                    let _ = give_back.send(block);
                    expected += 1;
                }
            }
            if !waiting.is_empty() {
                return Err(io::Error::other("an LZ4 compression thread stopped"));
            }
            // The end mark.
            put(&mut file, &[0, 0, 0, 0])?;
            let file = file.into_inner().map_err(|e| e.into_error())?;
            file.sync_all()?;
            Ok((hex::encode(hasher.finalize()), size))
        })?;
        Ok(FrameWriter {
            block: Vec::with_capacity(BLOCK),
            next: 0,
            work: Some(work),
            spare,
            workers,
            sink: Some(sink),
        })
    }

    /// Hands the full current block to the compressing threads.
    fn send(&mut self) -> io::Result<()> {
        let fresh = self.spare.try_recv().unwrap_or_else(|_| Vec::with_capacity(BLOCK));
        let block = std::mem::replace(&mut self.block, fresh);
        self.block.clear();
        let sent = self.work.as_ref().map(|w| w.send((self.next, block)).is_ok()).unwrap_or(false);
        self.next += 1;
        if sent {
            Ok(())
        } else {
            Err(self.stop().err().unwrap_or_else(|| io::Error::other("the backup writer stopped")))
        }
    }

    /// Stops the threads; the writing thread's outcome.
    fn stop(&mut self) -> io::Result<(String, u64)> {
        self.work = None;
        for worker in self.workers.drain(..) {
            let _ = worker.join();
        }
        match self.sink.take() {
            Some(sink) => sink.join().unwrap_or_else(|_| Err(io::Error::other("the backup writer panicked"))),
            None => Err(io::Error::other("the backup writer stopped")),
        }
    }

    /// Writes the last block and the end mark, syncs the file; the stored bytes' SHA-256 (hex)
    /// and size.
    pub fn finish(mut self) -> io::Result<(String, u64)> {
        if !self.block.is_empty() {
            self.send()?;
        }
        self.stop()
    }
}

impl std::io::Write for FrameWriter {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        let n = (BLOCK - self.block.len()).min(buf.len());
        self.block.extend_from_slice(&buf[..n]);
        if self.block.len() == BLOCK {
            self.send()?;
        }
        Ok(n)
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

impl Drop for FrameWriter {
    fn drop(&mut self) {
        // Dropped unfinished (an error on the way): the threads end with their channels.
        self.work = None;
        for worker in self.workers.drain(..) {
            let _ = worker.join();
        }
        if let Some(sink) = self.sink.take() {
            let _ = sink.join();
        }
    }
}

/// Reads an LZ4 frame file's decoded content while hashing its stored bytes: the digest of the
/// whole file once [`Decoded::finish`] has read what the decoder left.
pub(crate) struct Decoded {
    decoder: std::io::BufReader<lz4_flex::frame::FrameDecoder<Hashed<BufReader<File>>>>,
}

impl Decoded {
    pub fn open(path: &Path) -> io::Result<Decoded> {
        let hashed =
            Hashed { inner: BufReader::with_capacity(1 << 20, File::open(path)?), hasher: Sha256::new(), at: 0 };
        Ok(Decoded { decoder: std::io::BufReader::with_capacity(1 << 16, lz4_flex::frame::FrameDecoder::new(hashed)) })
    }

    /// Hashes whatever of the file is still unread; its SHA-256 (hex) and size.
    pub fn finish(self) -> io::Result<(String, u64)> {
        let mut hashed = self.decoder.into_inner().into_inner();
        io::copy(&mut hashed, &mut io::sink())?;
        Ok((hex::encode(hashed.hasher.finalize()), hashed.at))
    }
}

impl Read for Decoded {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        self.decoder.read(buf)
    }
}
