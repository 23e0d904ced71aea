//! A backup's record stream is read before anything trusts it: a restore builds the database
//! from it, and verify reads it whole (its digest is compared only after the pass). Any bytes
//! give a summary or an error, never a panic: as a decoded stream, and as the content of an LZ4
//! frame checked against a manifest naming the file's own digest (so the record reader runs on
//! whatever the frame holds).
#![no_main]

use std::collections::BTreeMap;
use std::io::Write;

use libfuzzer_sys::fuzz_target;
use mycorrhizal_engine::{ROW_STREAM_MAGIC, check_row_bytes};
use mycorrhizal_engine::snapshot::{self, Manifest};

fuzz_target!(|data: &[u8]| {
    // Most inputs get the stream's magic, so the records are reached.
    let mut stream = ROW_STREAM_MAGIC.to_vec();
    stream.extend_from_slice(data);
    let _ = check_row_bytes(&stream);
    let _ = check_row_bytes(data);

    let dir = std::env::temp_dir().join(format!("fuzz-backup-rows-{}", std::process::id()));
    let _ = std::fs::create_dir_all(&dir);
    let path = dir.join("b.rows.lz4");
    let mut frame = lz4_flex::frame::FrameEncoder::new(Vec::new());
    if frame.write_all(&stream).is_err() {
        return;
    }
    let Ok(bytes) = frame.finish() else { return };
    if std::fs::write(&path, &bytes).is_err() {
        return;
    }
    let Ok((sha256, size)) = snapshot::digest(&path) else { return };
    let manifest = Manifest {
        format: snapshot::MANIFEST_FORMAT_ROWS.into(),
        file: "b.rows.lz4".into(),
        created_at: "2026-01-01T00:00:00Z".parse().expect("a time"),
        schema_version: 0,
        tables: BTreeMap::new(),
        sha256,
        size,
        build: None,
        users: None,
        audit_heads: None,
        encoding: Some("rows-lz4".into()),
        signature: None,
    };
    let _ = snapshot::verify_against(&path, &manifest);
    // A restore's build of the database from it.
    let _ = snapshot::materialize(&path, &dir.join("b.redb"), false);
    let _ = std::fs::remove_file(&path);
    let _ = std::fs::remove_file(dir.join("b.redb"));
});
