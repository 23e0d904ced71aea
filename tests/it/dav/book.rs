//! The address book's own properties and the identity of its cards: a display name a client
//! sets, and UIDs that differ only in case kept as two cards.

use super::{account, card, server};

#[tokio::test]
async fn the_address_book_can_be_renamed_and_other_properties_are_refused_whole() {
    let server = server().await;
    let (_, dav) = account(&server, "ada").await;
    let set = |props: &str| {
        format!(
            r#"<?xml version="1.0"?><D:propertyupdate xmlns:D="DAV:" xmlns:X="urn:example"><D:set><D:prop>{props}</D:prop></D:set></D:propertyupdate>"#
        )
    };
    let named = dav
        .send(
            "PROPPATCH",
            &dav.book(),
            &[("Content-Type", "application/xml")],
            &set("<D:displayname>Family &amp; friends</D:displayname>"),
        )
        .await;
    assert_eq!(named.status, 207, "{}", named.body);
    assert!(named.body.contains("HTTP/1.1 200 OK"), "{}", named.body);
    let listed = dav.propfind(&dav.book(), "0", "<D:displayname/>").await;
    assert!(listed.body.contains("<D:displayname>Family &amp; friends</D:displayname>"), "{}", listed.body);

    let mixed = set("<D:displayname>Other</D:displayname><X:colour>red</X:colour>");
    let refused = dav.send("PROPPATCH", &dav.book(), &[("Content-Type", "application/xml")], &mixed).await;
    assert_eq!(refused.status, 207);
    assert!(
        refused.body.contains("403 Forbidden") && refused.body.contains("424 Failed Dependency"),
        "{}",
        refused.body
    );
    let listed = dav.propfind(&dav.book(), "0", "<D:displayname/>").await;
    assert!(listed.body.contains("Family &amp; friends"), "all or nothing: {}", listed.body);

    let (_, bob) = account(&server, "bob").await;
    let theirs = bob
        .send(
            "PROPPATCH",
            &dav.book(),
            &[("Content-Type", "application/xml")],
            &set("<D:displayname>Mine</D:displayname>"),
        )
        .await;
    assert_eq!(theirs.status, 404, "another user's book");
}

/// UIDs are case-sensitive: two cards whose UUID-shaped UIDs differ only in case are two cards,
/// each found under its own name, in either order.
#[tokio::test]
async fn uids_that_differ_only_in_case_are_two_cards() {
    let server = server().await;
    let (_, dav) = account(&server, "ada").await;
    for (first, second) in [
        ("8a3f0c2e-1b2d-4c5e-9f60-7a8b9c0d1e2f", "8A3F0C2E-1B2D-4C5E-9F60-7A8B9C0D1E2F"),
        ("C1D2E3F4-A5B6-4C7D-8E9F-0A1B2C3D4E5F", "c1d2e3f4-a5b6-4c7d-8e9f-0a1b2c3d4e5f"),
    ] {
        assert_eq!(dav.put(first, &card(first, "First Case"), &[("If-None-Match", "*")]).await.status, 201);
        let other = dav.put(second, &card(second, "Second Case"), &[("If-None-Match", "*")]).await;
        assert_eq!(other.status, 201, "{}", other.body);
        for (name, full) in [(first, "First Case"), (second, "Second Case")] {
            let got = dav.send("GET", &dav.card(name), &[], "").await;
            assert_eq!(got.status, 200, "{name}");
            assert!(got.body.contains(&format!("UID:{name}")) && got.body.contains(full), "{name}: {}", got.body);
        }
        let listed = dav.propfind(&dav.book(), "1", "<D:getetag/>").await;
        for name in [first, second] {
            assert!(listed.body.contains(&format!("/{name}.vcf")), "{name} listed: {}", listed.body);
        }
        let edited = dav.put(second, &card(second, "Second Edited"), &[]).await;
        assert_eq!(edited.status, 204, "an edit goes to its own card");
        let got = dav.send("GET", &dav.card(first), &[], "").await;
        assert!(got.body.contains("First Case"), "{}", got.body);
    }
}
