//! Reading a bundle: [`check`] reads everything without writing and refuses a bad bundle with
//! the file (and line) named; [`import`] then creates it in one write transaction, remapping
//! the references (see the module).

use std::collections::{HashMap, HashSet};
use std::io::{BufRead, BufReader, Read, Seek};

use mycorrhizal_engine::{Invalid, Record, TxUser, UserScope};
use serde_json::Value;
use sha2::{Digest, Sha256};

use super::kind::{Line, Ref, Shape};
use super::{FORMAT, FORMAT_VERSION, Imported, MANIFEST, Manifest, attachment_path, picture_path, records_path};
use crate::crm::attachment::Attachment;
use crate::crm::contact::Contact;
use crate::crm::kinds::{self, KindEntry};
use crate::crm::{Error, Result};
use crate::crm::{attachment::ops::MAX_ATTACHMENT, attachment::ops::blob_name, attachment::ops::used_bytes};
use crate::crm::{contact::picture::MAX_PHOTO, contact::picture::sniff};

/// The largest manifest read.
const MAX_MANIFEST: u64 = 64 * 1024 * 1024;
/// The longest line (one row) read.
const MAX_LINE: u64 = 16 * 1024 * 1024;

/// A bad bundle: what is wrong, as the caller sees it (the field is always `file`).
fn bad(reason: impl Into<String>) -> Error {
    Error::bad_parameter("file", reason)
}

/// What [`check`] found: a bundle that can be imported.
#[derive(Debug)]
pub struct Checked {
    pub manifest: Manifest,
    /// Rows that will be created and left out, per kind.
    pub imported: Imported,
    /// Attachment bytes the import adds.
    pub attachment_bytes: u64,
}

/// Reads `bytes` of one file of the archive through its digest, at most `limit` bytes.
fn read_whole<R: Read + Seek>(
    zip: &mut zip::ZipArchive<R>,
    manifest: &Manifest,
    path: &str,
    limit: u64,
) -> Result<Vec<u8>> {
    let entry = &manifest.files[path];
    if entry.bytes > limit {
        return Err(bad(format!("{path} is larger than {limit} bytes")));
    }
    let file = zip.by_name(path).map_err(|e| bad(format!("{path}: {e}")))?;
    let mut bytes = Vec::with_capacity(entry.bytes as usize);
    file.take(limit + 1).read_to_end(&mut bytes).map_err(|e| bad(format!("{path}: {e}")))?;
    if bytes.len() as u64 != entry.bytes || hex::encode(Sha256::digest(&bytes)) != entry.sha256 {
        return Err(bad(format!("{path} does not match its digest in the manifest")));
    }
    Ok(bytes)
}

/// A reader that hashes and counts what passes through it.
struct Hashing<R> {
    inner: R,
    hash: Sha256,
    bytes: u64,
}

impl<R: Read> Read for Hashing<R> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let n = self.inner.read(buf)?;
        self.hash.update(&buf[..n]);
        self.bytes += n as u64;
        Ok(n)
    }
}

/// Calls `each` with every line of `path` (numbered from 1), checking the file's digest and
/// length against the manifest once read.
fn each_line<R: Read + Seek>(
    zip: &mut zip::ZipArchive<R>,
    manifest: &Manifest,
    path: &str,
    mut each: impl FnMut(usize, Line) -> Result<()>,
) -> Result<()> {
    let Some(entry) = manifest.files.get(path) else { return Ok(()) };
    let file = zip.by_name(path).map_err(|e| bad(format!("{path}: {e}")))?;
    let mut reader = BufReader::new(Hashing { inner: file.take(entry.bytes + 1), hash: Sha256::new(), bytes: 0 });
    let mut buffer = Vec::new();
    let mut number = 0;
    loop {
        buffer.clear();
        let read =
            (&mut reader).take(MAX_LINE + 1).read_until(b'\n', &mut buffer).map_err(|e| bad(format!("{path}: {e}")))?;
        if read == 0 {
            break;
        }
        number += 1;
        if read as u64 > MAX_LINE {
            return Err(bad(format!("{path} line {number} is longer than {MAX_LINE} bytes")));
        }
        let line: Line = serde_json::from_slice(&buffer).map_err(|e| bad(format!("{path} line {number}: {e}")))?;
        each(number, line)?;
    }
    let hashing = reader.into_inner();
    if hashing.bytes != entry.bytes || hex::encode(hashing.hash.finalize()) != entry.sha256 {
        return Err(bad(format!("{path} does not match its digest in the manifest")));
    }
    Ok(())
}

/// How one id of a reference fares.
type Lookup<'a> = &'a dyn Fn(&str, u64) -> Option<u64>;

/// Remaps the references of `body` through `lookup` (old id of a kind -> new id, `None` when
/// the bundle does not hold it); `Ok(false)` when the row is to be left out.
fn remap(body: &mut Value, refs: &[Ref], lookup: Lookup<'_>) -> std::result::Result<bool, Invalid> {
    let Value::Object(fields) = body else { return Err(Invalid::new("body", "is not a JSON object")) };
    for r in refs {
        let id_of = |v: &Value| v.as_u64().ok_or_else(|| Invalid::new(r.field, "must be an id"));
        match r.shape {
            Shape::One => {
                let old = id_of(fields.get(r.field).unwrap_or(&Value::Null))?;
                match lookup(r.kind, old) {
                    Some(new) => {
                        fields.insert(r.field.into(), new.into());
                    }
                    None => return Ok(false),
                }
            }
            Shape::Optional => match fields.get(r.field) {
                None | Some(Value::Null) => {}
                Some(v) => {
                    let new = lookup(r.kind, id_of(v)?);
                    fields.insert(r.field.into(), new.map(Value::from).unwrap_or(Value::Null));
                }
            },
            Shape::ZeroForNone => {
                let old = id_of(fields.get(r.field).unwrap_or(&Value::Null))?;
                let new = if old == 0 { 0 } else { lookup(r.kind, old).unwrap_or(0) };
                fields.insert(r.field.into(), new.into());
            }
            Shape::Many => {
                let Some(Value::Array(items)) = fields.get(r.field) else {
                    return Err(Invalid::new(r.field, "must be a list of ids"));
                };
                let mut kept = Vec::with_capacity(items.len());
                for item in items {
                    if let Some(new) = lookup(r.kind, id_of(item)?) {
                        kept.push(Value::from(new));
                    }
                }
                fields.insert(r.field.into(), Value::Array(kept));
            }
            Shape::TextWhen { when, equals } => {
                if fields.get(when).and_then(Value::as_str) != Some(equals) {
                    continue;
                }
                let text = fields.get(r.field).and_then(Value::as_str).unwrap_or_default();
                let old = text.trim().parse::<u64>().map_err(|_| Invalid::new(r.field, "must be an id"))?;
                match lookup(r.kind, old) {
                    Some(new) => {
                        fields.insert(r.field.into(), new.to_string().into());
                    }
                    None => return Ok(false),
                }
            }
            Shape::Cleared => {
                fields.insert(r.field.into(), 0.into());
            }
        }
    }
    Ok(true)
}

/// A row's fate, the same in the check and the import: remapped, with what the kind needs of
/// the bundle's files (a contact's picture, an attachment's bytes). `false`: left out.
fn prepare(
    entry: &KindEntry,
    manifest: &Manifest,
    line: &mut Line,
    lookup: Lookup<'_>,
) -> std::result::Result<bool, Invalid> {
    if !remap(&mut line.body, entry.bundle.refs, lookup)? {
        return Ok(false);
    }
    if entry.name == Contact::KIND.name {
        let photo = line.body.get("photo").and_then(Value::as_str).unwrap_or_default();
        if !photo.is_empty() && !manifest.files.contains_key(&picture_path(photo)) {
            // Not in the bundle: the contact comes without it.
            line.body["photo"] = Value::from("");
        }
    }
    if entry.name == Attachment::KIND.name && !manifest.files.contains_key(&attachment_path(line.id)) {
        return Ok(false);
    }
    Ok(true)
}

/// Opens `reader` as a ZIP archive with a manifest this version reads, every file the manifest
/// names and no other.
fn open<R: Read + Seek>(reader: R) -> Result<(zip::ZipArchive<R>, Manifest)> {
    let mut zip = zip::ZipArchive::new(reader).map_err(|e| bad(format!("not a readable ZIP archive: {e}")))?;
    let mut text = Vec::new();
    zip.by_name(MANIFEST)
        .map_err(|_| bad(format!("{MANIFEST} is missing: not an account bundle")))?
        .take(MAX_MANIFEST)
        .read_to_end(&mut text)
        .map_err(|e| bad(format!("{MANIFEST}: {e}")))?;
    let manifest: Manifest = serde_json::from_slice(&text).map_err(|e| bad(format!("{MANIFEST}: {e}")))?;
    if manifest.format != FORMAT {
        return Err(bad(format!("{MANIFEST}: format must be {FORMAT}")));
    }
    if manifest.format_version != FORMAT_VERSION {
        return Err(bad(format!(
            "{MANIFEST}: format_version {} is not {FORMAT_VERSION}, the one this version reads",
            manifest.format_version
        )));
    }
    let known: HashSet<&str> = kinds::all().iter().map(|k| k.name).collect();
    if let Some(kind) = manifest.counts.keys().find(|k| !known.contains(k.as_str())) {
        return Err(bad(format!("{MANIFEST}: unknown record kind {kind:?} (a bundle of a newer version?)")));
    }
    let names: HashSet<String> = zip
        .file_names()
        .map(|n| n.map(|n| n.into_owned()))
        .collect::<Result<_, _>>()
        .map_err(|e| bad(format!("a file name of the archive: {e}")))?;
    if let Some(name) = names.iter().find(|n| n.as_str() != MANIFEST && !manifest.files.contains_key(n.as_str())) {
        return Err(bad(format!("{name} is not in the manifest")));
    }
    if let Some(path) = manifest.files.keys().find(|p| !names.contains(p.as_str())) {
        return Err(bad(format!("{path} is in the manifest but not in the archive")));
    }
    for path in manifest.files.keys() {
        let known_place =
            path.strip_prefix("records/").and_then(|f| f.strip_suffix(".jsonl")).is_some_and(|k| known.contains(k))
                || path.strip_prefix("pictures/").is_some_and(|n| !n.is_empty())
                || path.strip_prefix("attachments/").is_some_and(|n| n.parse::<u64>().is_ok());
        if !known_place {
            return Err(bad(format!("{path}: not a file an account bundle holds")));
        }
    }
    Ok((zip, manifest))
}

/// Reads the whole bundle in `reader` without writing anything: see the module. A bad bundle is
/// [`Error::BadParameter`] on `file`, saying what is wrong where.
pub fn check<R: Read + Seek>(reader: R) -> Result<Checked> {
    let (mut zip, manifest) = open(reader)?;
    let mut kept: HashMap<&'static str, HashSet<u64>> = HashMap::new();
    let mut imported = Imported::default();
    let mut digests: HashMap<u64, String> = HashMap::new();
    let mut attachment_bytes = 0u64;
    for entry in kinds::all() {
        let path = records_path(entry.name);
        let mut ids = HashSet::new();
        let (mut made, mut skipped, mut lines) = (0u64, 0u64, 0u64);
        {
            let lookup = |kind: &str, old: u64| kept.get(kind).and_then(|s| s.contains(&old).then_some(old));
            each_line(&mut zip, &manifest, &path, |number, mut line| {
                lines += 1;
                if !ids.insert(line.id) {
                    return Err(bad(format!("{path} line {number}: id {} appears twice", line.id)));
                }
                let at = |e: Invalid| bad(format!("{path} line {number}: {e}"));
                if !prepare(&entry, &manifest, &mut line, &lookup).map_err(at)? {
                    ids.remove(&line.id);
                    skipped += 1;
                    return Ok(());
                }
                if entry.name == Contact::KIND.name
                    && line.body.get("photo").and_then(Value::as_str).is_some_and(|p| !p.is_empty())
                {
                    imported.pictures += 1;
                }
                if entry.name == Attachment::KIND.name {
                    let digest = line.body.get("sha256").and_then(Value::as_str).unwrap_or_default().to_string();
                    attachment_bytes += line.body.get("size_bytes").and_then(Value::as_u64).unwrap_or(0);
                    digests.insert(line.id, digest);
                }
                (entry.bundle.check)(line.body).map_err(at)?;
                made += 1;
                Ok(())
            })?;
        }
        let declared = manifest.counts.get(entry.name).copied().unwrap_or(0);
        if lines != declared {
            return Err(bad(format!("{path}: {lines} rows, the manifest says {declared}")));
        }
        kept.insert(entry.name, ids);
        imported.imported.insert(entry.name.to_string(), made);
        imported.skipped.insert(entry.name.to_string(), skipped);
    }
    let paths: Vec<String> = manifest.files.keys().cloned().collect();
    for path in paths {
        if path.starts_with("pictures/") {
            let bytes = read_whole(&mut zip, &manifest, &path, MAX_PHOTO as u64)?;
            if sniff(&bytes).is_none() {
                return Err(bad(format!("{path} is not a JPEG, PNG, GIF or WebP image")));
            }
        } else if let Some(id) = path.strip_prefix("attachments/").and_then(|i| i.parse::<u64>().ok()) {
            let bytes = read_whole(&mut zip, &manifest, &path, MAX_ATTACHMENT as u64)?;
            match digests.get(&id) {
                Some(digest) if *digest == hex::encode(Sha256::digest(&bytes)) => imported.attachments += 1,
                Some(_) => return Err(bad(format!("{path} does not match its attachment's digest"))),
                // Its row was left out: so are its bytes.
                None => {}
            }
        }
    }
    Ok(Checked { manifest, imported, attachment_bytes })
}

/// Recreates the bundle in `reader` in `scope`'s account (see the module): [`check`] first,
/// then one write transaction. `quota` is the account's attachment quota. Blocking.
pub fn import<R: Read + Seek + Send + 'static>(scope: &UserScope, mut reader: R, quota: u64) -> Result<Imported> {
    let checked = check(&mut reader)?;
    let used = used_bytes(&scope.view()?)?;
    if used + checked.attachment_bytes > quota {
        return Err(bad(format!(
            "its attachments ({} MB) would exceed your attachment quota of {} MB ({} MB used)",
            checked.attachment_bytes.div_ceil(1024 * 1024),
            quota / 1024 / 1024,
            used.div_ceil(1024 * 1024)
        )));
    }
    reader.rewind().map_err(Error::internal)?;
    let (mut zip, manifest) = open(reader)?;
    let written = scope.write(move |tx| create_all(tx, &mut zip, &manifest));
    match written {
        Ok(imported) => {
            debug_assert_eq!(imported, checked.imported);
            Ok(imported)
        }
        Err(mycorrhizal_engine::Error::Duplicate { index }) => Err(bad(format!(
            "rows of the bundle are already in your account (a duplicate {index}): import it into another account"
        ))),
        Err(mycorrhizal_engine::Error::Invalid(Invalid { field, reason })) => Err(bad(format!("{field}: {reason}"))),
        Err(e) => Err(e.into()),
    }
}

/// The bundle failed the import after the check (its bytes changed underneath): aborts the
/// transaction, so nothing is written.
fn abort(e: Error) -> mycorrhizal_engine::Error {
    match e {
        Error::Engine(e) => e,
        other => {
            let reason = match other {
                Error::BadParameter { reason, .. } | Error::Invalid { reason, .. } => reason,
                other => other.to_string(),
            };
            mycorrhizal_engine::Error::Invalid(Invalid::new("file", reason))
        }
    }
}

/// Creates every row, picture and attachment of the (checked) bundle in `tx`, kind by kind in
/// registry order; a kind's pictures or attachment bytes once its rows are written.
fn create_all<R: Read + Seek>(
    tx: &TxUser<'_, '_>,
    zip: &mut zip::ZipArchive<R>,
    manifest: &Manifest,
) -> mycorrhizal_engine::Result<Imported> {
    let mut made: HashMap<&'static str, HashMap<u64, u64>> = HashMap::new();
    let mut imported = Imported::default();
    for entry in kinds::all() {
        let path = records_path(entry.name);
        let mut ids = HashMap::new();
        let mut skipped = 0u64;
        // (blob name in the account, file of the bundle) to store once the rows are written.
        let mut blobs: Vec<(String, String)> = Vec::new();
        {
            let lookup = |kind: &str, old: u64| made.get(kind).and_then(|m| m.get(&old).copied());
            each_line(zip, manifest, &path, |_, mut line| {
                if !prepare(&entry, manifest, &mut line, &lookup).map_err(|e| bad(e.to_string()))? {
                    skipped += 1;
                    return Ok(());
                }
                let photo = line.body.get("photo").and_then(Value::as_str).unwrap_or_default().to_string();
                if entry.name == Contact::KIND.name && !photo.is_empty() {
                    // A fresh name: the old one may be another contact's here.
                    let ext = photo.rsplit_once('.').map(|(_, e)| e).unwrap_or("img");
                    let ext: String = ext.chars().filter(char::is_ascii_alphanumeric).take(8).collect();
                    let name = format!("{}.{ext}", uuid::Uuid::now_v7().simple());
                    line.body["photo"] = Value::from(name.clone());
                    blobs.push((name, picture_path(&photo)));
                }
                let old = line.id;
                let new = (entry.bundle.create)(tx, line.body).map_err(Error::Engine)?;
                if entry.name == Attachment::KIND.name {
                    blobs.push((blob_name(new), attachment_path(old)));
                }
                ids.insert(old, new);
                Ok(())
            })
            .map_err(abort)?;
        }
        for (name, file) in blobs {
            let limit = if file.starts_with("pictures/") { MAX_PHOTO } else { MAX_ATTACHMENT };
            let bytes = read_whole(zip, manifest, &file, limit as u64).map_err(abort)?;
            tx.put_blob(&name, &bytes)?;
            if file.starts_with("pictures/") {
                imported.pictures += 1;
            } else {
                imported.attachments += 1;
            }
        }
        imported.imported.insert(entry.name.to_string(), ids.len() as u64);
        imported.skipped.insert(entry.name.to_string(), skipped);
        made.insert(entry.name, ids);
    }
    Ok(imported)
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    /// The import creates kinds in registry order: every kind a reference names comes first.
    #[test]
    fn every_reference_names_a_kind_that_comes_before_it() {
        let mut seen = HashSet::new();
        for entry in kinds::all() {
            for r in entry.bundle.refs {
                if !matches!(r.shape, Shape::Cleared) {
                    assert!(seen.contains(r.kind), "{}.{} names {}, which comes later", entry.name, r.field, r.kind);
                }
            }
            seen.insert(entry.name);
        }
    }

    /// Ids are remapped; a required reference to a row the bundle lacks leaves the row out, an
    /// optional one becomes none, a list drops it, and a foreign audit id is cleared.
    #[test]
    fn references_are_remapped_and_orphans_handled() {
        let lookup = |kind: &str, old: u64| (kind == "contact" && old == 7).then_some(70);
        let refs = [
            Ref::one("contact_id", "contact"),
            Ref::optional("reminder_id", "reminder"),
            Ref::many("contact_ids", "contact"),
            Ref { field: "policy_id", kind: "cadence_policy", shape: Shape::ZeroForNone },
            Ref { field: "audit_event_id", kind: "", shape: Shape::Cleared },
        ];
        let mut body =
            json!({ "contact_id": 7, "reminder_id": 3, "contact_ids": [7, 8], "policy_id": 5, "audit_event_id": 99 });
        assert_eq!(remap(&mut body, &refs, &lookup), Ok(true));
        assert_eq!(
            body,
            json!({ "contact_id": 70, "reminder_id": null, "contact_ids": [70], "policy_id": 0, "audit_event_id": 0 })
        );
        let mut orphan = json!({ "contact_id": 8 });
        assert_eq!(remap(&mut orphan, &refs[..1], &lookup), Ok(false));
        let cadence =
            [Ref { field: "target", kind: "contact", shape: Shape::TextWhen { when: "scope", equals: "contact" } }];
        let mut policy = json!({ "scope": "contact", "target": "7" });
        assert_eq!(remap(&mut policy, &cadence, &lookup), Ok(true));
        assert_eq!(policy["target"], "70");
        let mut circle = json!({ "scope": "circle", "target": "7" });
        assert_eq!(remap(&mut circle, &cadence, &lookup), Ok(true));
        assert_eq!(circle["target"], "7", "a circle's name is not an id");
        assert!(remap(&mut json!({ "contact_id": "x" }), &refs[..1], &lookup).is_err());
        assert!(remap(&mut json!([1]), &refs[..1], &lookup).is_err());
    }
}
