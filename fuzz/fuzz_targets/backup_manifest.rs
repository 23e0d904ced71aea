//! A backup's manifest is read from a file the operator hands us (untrusted until its signature
//! verifies): any bytes parse to a manifest or an error, never a panic; a parsed manifest signed
//! by us verifies, and the same manifest with any field changed does not.
#![no_main]

use std::collections::HashMap;
use std::sync::OnceLock;

use libfuzzer_sys::fuzz_target;
use mycorrhizal::backup::Signer;
use mycorrhizal::config::{Config, Env};
use mycorrhizal_engine::snapshot::Manifest;

fn signer() -> &'static Signer {
    static SIGNER: OnceLock<Signer> = OnceLock::new();
    SIGNER.get_or_init(|| {
        let mut vars = HashMap::new();
        vars.insert("JWT_SECRET_KEY".to_string(), "3f9c1a7be2d04c88a9e15b6f70d2c4e1937ab0c5d8e2f61a".to_string());
        let config = Config::load(Env::from_map(vars)).expect("config");
        Signer::from_config(&config).expect("signer")
    })
}

fuzz_target!(|data: &[u8]| {
    let Ok(mut manifest) = serde_json::from_slice::<Manifest>(data) else { return };
    let _ = signer().check(&manifest);
    signer().sign(&mut manifest);
    assert!(signer().check(&manifest).is_ok(), "our own signature verifies");
    manifest.size = manifest.size.wrapping_add(1);
    assert!(signer().check(&manifest).is_err(), "a changed manifest does not");
});
