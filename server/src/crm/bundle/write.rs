//! Writing a bundle (see the module): every kind's rows, then pictures and attachment bytes,
//! then the manifest, into a ZIP written as a stream.

use std::collections::BTreeMap;
use std::io::Write;

use jiff::Timestamp;
use mycorrhizal_engine::{Record, UserView};
use sha2::{Digest, Sha256};
use zip::write::SimpleFileOptions;

use super::{FORMAT, FORMAT_VERSION, FileEntry, MANIFEST, Manifest, attachment_path, picture_path, records_path};
use crate::crm::attachment::Attachment;
use crate::crm::attachment::ops::blob_name;
use crate::crm::contact::Contact;
use crate::crm::export::Failure;
use crate::crm::kinds;

/// The archive being written, and the digest of the file being written into it.
struct Archive<W: Write> {
    zip: zip::ZipWriter<zip::write::StreamWriter<W>>,
    files: BTreeMap<String, FileEntry>,
    open: Option<(String, Sha256, u64)>,
}

impl<W: Write> Archive<W> {
    /// Starts file `path`: deflated (fast) when `deflate`, else stored (pictures and most
    /// attachments are compressed already).
    fn start(&mut self, path: String, deflate: bool) -> Result<(), Failure> {
        self.close();
        let options = SimpleFileOptions::default()
            .large_file(true)
            .unix_permissions(0o644)
            .compression_method(if deflate { zip::CompressionMethod::Deflated } else { zip::CompressionMethod::Stored })
            .compression_level(deflate.then_some(1));
        self.zip.start_file(path.as_str(), options).map_err(Failure::serialization)?;
        self.open = Some((path, Sha256::new(), 0));
        Ok(())
    }

    fn put(&mut self, bytes: &[u8]) -> Result<(), Failure> {
        self.zip.write_all(bytes).map_err(Failure::serialization)?;
        if let Some((_, hash, len)) = &mut self.open {
            hash.update(bytes);
            *len += bytes.len() as u64;
        }
        Ok(())
    }

    fn close(&mut self) {
        if let Some((path, hash, bytes)) = self.open.take() {
            self.files.insert(path, FileEntry { sha256: hex::encode(hash.finalize()), bytes });
        }
    }
}

/// Writes `view`'s bundle into `out`, as it is read; answers its manifest. `now` is its
/// `created_at`.
pub fn write<W: Write>(view: &UserView, out: W, now: Timestamp) -> Result<Manifest, Failure> {
    let mut archive = Archive { zip: zip::ZipWriter::new_stream(out), files: BTreeMap::new(), open: None };
    let mut counts = BTreeMap::new();
    let mut pictures: Vec<String> = Vec::new();
    let mut attachments: Vec<(u64, String)> = Vec::new();
    let mut line = Vec::with_capacity(4096);
    for entry in kinds::all() {
        archive.start(records_path(entry.name), true)?;
        let mut count = 0u64;
        (entry.bundle.rows)(view, &mut |row| {
            if entry.name == Contact::KIND.name
                && let Some(photo) = row.body.get("photo").and_then(|p| p.as_str()).filter(|p| !p.is_empty())
            {
                pictures.push(photo.to_string());
            }
            if entry.name == Attachment::KIND.name {
                let digest = row.body.get("sha256").and_then(|d| d.as_str()).unwrap_or_default();
                attachments.push((row.id, digest.to_string()));
            }
            line.clear();
            serde_json::to_writer(&mut line, &row).map_err(Failure::serialization)?;
            line.push(b'\n');
            archive.put(&line)?;
            count += 1;
            Ok(true)
        })?;
        counts.insert(entry.name.to_string(), count);
    }
    pictures.sort_unstable();
    pictures.dedup();
    for name in pictures {
        // A contact never names a missing picture; should one, the import gives it none.
        let Some(bytes) = view.blob(&name).map_err(Failure::database)? else {
            tracing::warn!(event = "bundle_picture_missing", picture = %name);
            continue;
        };
        archive.start(picture_path(&name), false)?;
        archive.put(&bytes)?;
    }
    for (id, digest) in attachments {
        // Bytes that are missing or no longer match their row are left out (and logged): the
        // import then leaves the row out too, rather than carry a broken file.
        match view.blob(&blob_name(id)).map_err(Failure::database)? {
            Some(bytes) if hex::encode(Sha256::digest(&bytes)) == digest => {
                archive.start(attachment_path(id), false)?;
                archive.put(&bytes)?;
            }
            _ => tracing::warn!(event = "bundle_attachment_unusable", attachment = id),
        }
    }
    archive.close();
    let manifest = Manifest {
        format: FORMAT.into(),
        format_version: FORMAT_VERSION,
        created_at: now,
        counts,
        files: std::mem::take(&mut archive.files),
    };
    archive.start(MANIFEST.into(), true)?;
    let text = serde_json::to_vec_pretty(&manifest).map_err(Failure::serialization)?;
    archive.put(&text)?;
    archive.open = None;
    archive.zip.finish().map_err(Failure::serialization)?;
    Ok(manifest)
}
