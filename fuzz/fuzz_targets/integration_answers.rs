//! What the users' integrations answer (untrusted bytes from Immich, Paperless-ngx, Seafile and
//! WebDAV servers): reading them never panics, and what is kept has the shape the rest of the
//! server relies on (ids present and bounded, entries inside the folder listed, no path that
//! climbs out of it).
#![no_main]

use libfuzzer_sys::fuzz_target;
use mycorrhizal::integrations::{immich, paperless, seafile, webdav};

fuzz_target!(|data: &[u8]| {
    if let Ok((people, _)) = immich::parse_people(data) {
        assert!(people.iter().all(|p| !p.id.is_empty() && p.id.len() <= 255));
    }
    if let Ok((assets, _)) = immich::parse_assets(data) {
        assert!(assets.iter().all(|a| !a.id.is_empty() && a.id.len() <= 255));
    }
    let _ = immich::parse_statistics(data);
    if let Ok((docs, _)) = paperless::parse_documents(data) {
        assert!(docs.iter().all(|d| d.id > 0));
    }
    let _ = paperless::parse_document(data);
    let _ = paperless::parse_labels(data);
    let _ = seafile::parse_libraries(data);
    if let Ok(items) = seafile::parse_dir(data, "/Letters/") {
        assert!(items.iter().all(|i| i.path.starts_with("/Letters/") && !i.name.contains('/')));
    }
    let _ = webdav::issued_app_password(data);
    if let Ok(entries) = webdav::parse_multistatus(data) {
        for item in webdav::items_of(entries, "/remote.php/dav/files/ada/", "/Letters/") {
            assert!(item.path.starts_with("/Letters/"), "{item:?}");
            assert!(!item.path.split('/').any(|s| s == ".."), "{item:?}");
        }
    }
});
