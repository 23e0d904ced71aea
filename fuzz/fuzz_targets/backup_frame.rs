//! A backup file is read before its digest is compared with the manifest (the frame is scanned
//! once, hashing it and noting its blocks), and after a match it is opened block by block: any
//! bytes give a verified snapshot or an error, never a panic. The manifest here names the
//! bytes' own digest, so the block reader and redb's open run on whatever the frame holds.
#![no_main]

use std::collections::BTreeMap;

use libfuzzer_sys::fuzz_target;
use mycorrhizal_engine::snapshot::{self, Manifest};

fuzz_target!(|data: &[u8]| {
    let dir = std::env::temp_dir().join(format!("fuzz-backup-frame-{}", std::process::id()));
    let _ = std::fs::create_dir_all(&dir);
    let path = dir.join("b.redb.lz4");
    // LZ4 frames start with their magic number; give most inputs one, so the parser is reached.
    let mut bytes = vec![0x04, 0x22, 0x4D, 0x18];
    bytes.extend_from_slice(data);
    if std::fs::write(&path, &bytes).is_err() {
        return;
    }
    let Ok((sha256, size)) = snapshot::digest(&path) else { return };
    let manifest = Manifest {
        format: snapshot::MANIFEST_FORMAT.into(),
        file: "b.redb.lz4".into(),
        created_at: "2026-01-01T00:00:00Z".parse().expect("a time"),
        schema_version: 0,
        tables: BTreeMap::new(),
        sha256,
        size,
        build: None,
        users: None,
        audit_heads: None,
        encoding: Some("lz4".into()),
        signature: None,
    };
    let _ = snapshot::verify_against(&path, &manifest);
    let _ = std::fs::remove_file(&path);
});
