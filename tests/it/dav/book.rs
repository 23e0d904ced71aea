//! The address book's own properties and the identity of its cards: a display name a client
//! sets, UIDs that differ only in case kept as two cards, and any href a client chooses.

use super::{account, card, etags, hrefs, server, sync_token};
use crate::helpers::PASSWORD;

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

/// `%XX` escapes decoded (the test's own reading of an href).
fn decoded(href: &str) -> String {
    let bytes = href.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%'
            && let Some(v) = href.get(i + 1..i + 3).and_then(|h| u8::from_str_radix(h, 16).ok())
        {
            out.push(v);
            i += 3;
        } else {
            out.push(bytes[i]);
            i += 1;
        }
    }
    String::from_utf8(out).expect("UTF-8")
}

/// Any href a client chooses names its card: a space, `@`, non-ASCII letters, an encoded newline,
/// a name unrelated to the card's UID. Each is created, read, listed, fetched by multiget and sync,
/// edited and deleted under the href the client chose (however it encoded it), and the card
/// carries no trace of the name.
#[tokio::test]
async fn any_href_a_client_chooses_names_its_card() {
    let server = server().await;
    let (api, dav) = account(&server, "ada").await;
    let first = dav.sync("", None).await;
    // (the path segment as the client sends it, the card's UID)
    let cases = [
        ("test%20%40%20foo%20%C3%A4t%20bar%20%D0%B3%D1%80%D0%B0%D0%B4", "test @ foo ät bar град"),
        ("%D0%B3%D1%80%D0%B0%D0%B4%20%D1%81%D0%B0%D1%82%D0%B0%D0%BD%D1%83-1", "град сатану-1"),
        (
            "UID%3A20210609T084907Z-@synaps-web-54fddfdf7-7kcfm%0A.ics",
            "UID:20210609T084907Z-@synaps-web-54fddfdf7-7kcfm%0A.ics",
        ),
        ("someone@example.org", "someone@example.org"),
        ("chosen-by-the-client", "an-unrelated-uid-42"),
        ("ABCDEF01-2345-4678-9ABC-DEF012345678", "another-unrelated-uid"),
    ];
    let book = dav.book();
    for (at, (segment, uid)) in cases.iter().enumerate() {
        let href = format!("{book}{segment}.vcf");
        let name = format!("Href Case {at}");
        let made = dav.send("PUT", &href, &[("Content-Type", "text/vcard")], &card(uid, &name)).await;
        assert_eq!(made.status, 201, "{segment}: {}", made.body);
        let got = dav.send("GET", &href, &[], "").await;
        assert_eq!(got.status, 200, "{segment}");
        assert!(got.body.contains(&name), "{segment}: {}", got.body);
        assert!(!got.body.contains("davName") && !got.body.contains("DAVNAME"), "{}", got.body);
        assert_eq!(got.etag(), made.etag(), "{segment}");
        // Listed and synced under the same name, encoded by the server its own way.
        let listed = dav.propfind(&book, "1", "<D:getetag/>").await;
        let served: Vec<String> = hrefs(&listed.body).iter().map(|h| decoded(h)).collect();
        assert!(served.contains(&decoded(&href)), "{segment} listed: {served:?}");
        let synced = dav.sync(&sync_token(&first.body), None).await;
        assert!(etags(&synced.body).iter().any(|(h, e)| decoded(h) == decoded(&href) && *e == made.etag()));
        // Fetched by multiget under the href the server lists.
        let listed_href = hrefs(&listed.body).into_iter().find(|h| decoded(h) == decoded(&href)).expect("listed");
        assert!(!listed_href.contains(' ') && !listed_href.contains('\n'), "encoded: {listed_href:?}");
        let multiget = format!(
            r#"<C:addressbook-multiget xmlns:D="DAV:" xmlns:C="urn:ietf:params:xml:ns:carddav"><D:prop><D:getetag/><C:address-data/></D:prop><D:href>{listed_href}</D:href></C:addressbook-multiget>"#
        );
        let fetched = dav.send("REPORT", &book, &[("Content-Type", "application/xml")], &multiget).await;
        assert!(fetched.body.contains(&name), "{segment}: {}", fetched.body);
        let edited =
            dav.send("PUT", &listed_href, &[("If-Match", &made.etag())], &card(uid, &format!("{name} Edited"))).await;
        assert_eq!(edited.status, 204, "{segment}: {}", edited.body);
        let got = dav.send("GET", &href, &[], "").await;
        assert!(got.body.contains(&format!("{name} Edited")), "{segment}: {}", got.body);
    }
    let listed: serde_json::Value = api.get("/api/v1/contacts?limit=50").await.json().await.unwrap();
    assert_eq!(listed["contacts"].as_array().map(Vec::len), Some(cases.len()), "{listed}");
    for (segment, _) in cases {
        let gone = dav.send("DELETE", &format!("{book}{segment}.vcf"), &[], "").await;
        assert_eq!(gone.status, 204, "{segment}");
        assert_eq!(dav.send("GET", &format!("{book}{segment}.vcf"), &[], "").await.status, 404);
    }
    assert_eq!(dav.send("PUT", &format!("{book}..vcf"), &[], &card("dot", "Dot")).await.status, 403);
}

/// vdirsyncer's own test card (3.0, LF line ends, `TYPE=PREF`, `URL;VALUE=URI`), `{uid}` filled.
const VDIRSYNCER_CARD: &str = "BEGIN:VCARD\nVERSION:3.0\nFN:Cyrus Daboo\nN:Daboo;Cyrus;;;\nADR;TYPE=POSTAL:;2822 Email HQ;Suite 2821;RFCVille;PA;15213;USA\nEMAIL;TYPE=PREF:cyrus@example.com\nNICKNAME:me\nNOTE:Example VCard.\nORG:Self Employed\nTEL;TYPE=VOICE:412 605 0499\nTEL;TYPE=FAX:412 605 0705\nURL;VALUE=URI:http://www.example.com\nX-SOMETHING:0.5795\nUID:{uid}\nEND:VCARD";

/// What a client stored comes back to it as it stored it: the card it PUT is served as it was
/// written (GET, multiget) to a reader of its version while the contact is unchanged; a reader
/// of the other version, and everyone once the contact changes elsewhere, get the card written
/// from the contact. A card with a control character is never served with it.
#[tokio::test]
async fn a_card_comes_back_as_its_client_wrote_it_until_the_contact_changes() {
    let server = server().await;
    let (api, dav) = account(&server, "ada").await;
    let text = VDIRSYNCER_CARD.replace("{uid}", "cyrus-1");
    let made = dav.put("cyrus-1", &text, &[("If-None-Match", "*")]).await;
    assert_eq!(made.status, 201, "{}", made.body);
    let got = dav.send("GET", &dav.card("cyrus-1"), &[], "").await;
    assert_eq!(got.body, text, "as written");
    let multiget = format!(
        r#"<C:addressbook-multiget xmlns:D="DAV:" xmlns:C="urn:ietf:params:xml:ns:carddav"><D:prop><D:getetag/><C:address-data/></D:prop><D:href>{}</D:href></C:addressbook-multiget>"#,
        dav.card("cyrus-1")
    );
    let fetched = dav.send("REPORT", &dav.book(), &[("Content-Type", "application/xml")], &multiget).await;
    assert!(fetched.body.contains("EMAIL;TYPE=PREF:cyrus@example.com\nNICKNAME:me"), "{}", fetched.body);
    let four = dav.send("GET", &dav.card("cyrus-1"), &[("Accept", "text/vcard; version=4.0")], "").await;
    assert!(four.body.contains("VERSION:4.0") && four.body.contains("Cyrus Daboo"), "{}", four.body);

    // An edit by the same client is kept as written too.
    let edited = text.replace("NOTE:Example VCard.", "NOTE:Met at the RFC meeting.");
    assert_eq!(dav.put("cyrus-1", &edited, &[("If-Match", &made.etag())]).await.status, 204);
    assert_eq!(dav.send("GET", &dav.card("cyrus-1"), &[], "").await.body, edited);

    // A change elsewhere: the card is written from the contact, with the change.
    let listed: serde_json::Value = api.get("/api/v1/contacts").await.json().await.unwrap();
    let id = listed["contacts"][0]["id"].as_u64().expect("id");
    assert_eq!(api.post(&format!("/api/v1/contacts/{id}/favorite"), serde_json::json!({})).await.status(), 200);
    let changed = dav.send("GET", &dav.card("cyrus-1"), &[], "").await;
    assert_ne!(changed.body, edited);
    assert!(changed.body.contains("Met at the RFC meeting") && changed.body.contains("\r\n"), "{}", changed.body);

    // A control character (here in the note) is not served back.
    let odd = VDIRSYNCER_CARD.replace("{uid}", "odd-1").replace("Example VCard.", "bell\u{7} here");
    assert_eq!(dav.put("odd-1", &odd, &[]).await.status, 201);
    let got = dav.send("GET", &dav.card("odd-1"), &[], "").await;
    assert!(!got.body.chars().any(|c| c.is_control() && !matches!(c, '\r' | '\n' | '\t')), "{:?}", got.body);
}

/// The cards Apple's Contacts (iOS, 3.0 with item groups and labels), DAVx5 (3.0, its phonetic
/// name and Apple-style labels) and Thunderbird (4.0) send, from the exporter corpus: each PUT
/// comes back to its client as it sent it, and reads in the other version with what it holds.
#[tokio::test]
async fn the_cards_apple_davx5_and_thunderbird_send_come_back_as_sent() {
    let server = server().await;
    let (_, dav) = account(&server, "ada").await;
    let corpus = concat!(env!("CARGO_MANIFEST_DIR"), "/../tests/fixtures/exporters");
    for (file, uid, needle, other) in [
        ("ios.vcf", "1E2D3C4B-5A69-4788-9766-554433221100", "Okafor", "4.0"),
        ("davx5.vcf", "4f3c2b1a-0e9d-4c8b-a7f6-e5d4c3b2a190", "MEE-rah", "4.0"),
        ("thunderbird.vcf", "7b0b2e5c-4b1e-4e63-9a44-1f2d3c4b5a69", "Garnier", "3.0"),
    ] {
        let text = std::fs::read_to_string(format!("{corpus}/{file}")).expect("fixture");
        let end = text.find("END:VCARD").expect("a card") + "END:VCARD".len();
        let card = format!(
            "{}{}",
            &text[..end],
            &text[end..].chars().take_while(|c| *c == '\r' || *c == '\n').collect::<String>()
        );
        let made = dav.put(uid, &card, &[("If-None-Match", "*")]).await;
        assert_eq!(made.status, 201, "{file}: {}", made.body);
        let version = if card.contains("VERSION:4.0") { "4.0" } else { "3.0" };
        let got = dav.send("GET", &dav.card(uid), &[("Accept", &format!("text/vcard; version={version}"))], "").await;
        assert_eq!(got.body, card, "{file} as sent");
        let converted =
            dav.send("GET", &dav.card(uid), &[("Accept", &format!("text/vcard; version={other}"))], "").await;
        assert!(
            converted.body.contains(&format!("VERSION:{other}")) && converted.body.contains(needle),
            "{file}: {}",
            converted.body
        );
    }
}

/// A sync token names a point of this book's history, not only a number: an empty token gets
/// everything; a token whose change is not the one at its number in this feed (as after a
/// restore from backup, when the numbers are reached again by other changes) is one this server
/// never issued, 403 `valid-sync-token`; so is a foreign one. A token of the older form (a
/// number alone) is still taken.
#[tokio::test]
async fn a_sync_token_of_another_history_is_refused_and_an_empty_one_gets_everything() {
    let server = server().await;
    let (_, dav) = account(&server, "ada").await;
    assert_eq!(dav.put("first", &card("first", "First Card"), &[]).await.status, 201);
    let everything = dav.sync("", None).await;
    assert_eq!(etags(&everything.body).len(), 1, "{}", everything.body);
    let token = sync_token(&everything.body);
    let (number, instant) = token.rsplit_once('~').expect("the token names its change");
    assert_eq!(dav.put("second", &card("second", "Second Card"), &[]).await.status, 201);
    let next = dav.sync(&token, None).await;
    assert_eq!(etags(&next.body).len(), 1, "only the second: {}", next.body);
    let other: i64 = instant.parse::<i64>().expect("micros") + 1;
    for refused in [format!("{number}~{other}"), "http://example.org/ns/sync/1".to_string()] {
        let answer = dav.sync(&refused, None).await;
        assert_eq!(answer.status, 403, "{refused}: {}", answer.body);
        assert!(answer.body.contains("valid-sync-token"), "{}", answer.body);
    }
    let older_form = dav.sync(number, None).await;
    assert_eq!(older_form.status, 207, "{}", older_form.body);
    assert_eq!(etags(&older_form.body).len(), 1, "{}", older_form.body);
}

/// A client's first PROPFIND goes without credentials and with a body, then again with them on
/// the same connection (python-caldav, Thunderbird): the 401 leaves that connection open for it
/// (hyper reads the small body the refusal left unread).
#[tokio::test]
async fn a_refused_request_with_a_body_leaves_its_connection_usable() {
    use std::io::{Read, Write};
    let server = server().await;
    let (_, dav) = account(&server, "ada").await;
    let body =
        r#"<?xml version="1.0"?><D:propfind xmlns:D="DAV:"><D:prop><D:current-user-principal/></D:prop></D:propfind>"#;
    let addr = server.addr;
    let auth = base64::Engine::encode(&base64::engine::general_purpose::STANDARD, format!("ada:{PASSWORD}"));
    let book = dav.book();
    let answers = tokio::task::spawn_blocking(move || {
        let mut socket = std::net::TcpStream::connect(addr).expect("connect");
        socket.set_read_timeout(Some(std::time::Duration::from_secs(10))).expect("timeout");
        let request = |credentials: &str| {
            format!(
                "PROPFIND {book} HTTP/1.1\r\nHost: {addr}\r\nDepth: 0\r\nContent-Type: application/xml\r\n{credentials}Content-Length: {}\r\n\r\n{body}",
                body.len()
            )
        };
        let mut answers = Vec::new();
        for credentials in [String::new(), format!("Authorization: Basic {auth}\r\n")] {
            socket.write_all(request(&credentials).as_bytes()).expect("write");
            let mut seen = Vec::new();
            let mut buf = [0u8; 8192];
            // Read until the answer's head and its whole body (by Content-Length or chunked end).
            loop {
                let n = socket.read(&mut buf).unwrap_or(0);
                if n == 0 {
                    break;
                }
                seen.extend_from_slice(&buf[..n]);
                let text = String::from_utf8_lossy(&seen);
                if let Some(head_end) = text.find("\r\n\r\n") {
                    let head = text[..head_end].to_ascii_lowercase();
                    let length = head.lines().find_map(|l| l.strip_prefix("content-length:")).map(|v| v.trim().parse::<usize>().unwrap_or(0));
                    let done = match length {
                        Some(length) => seen.len() >= head_end + 4 + length,
                        None => text.ends_with("0\r\n\r\n"),
                    };
                    if done {
                        break;
                    }
                }
            }
            answers.push(String::from_utf8_lossy(&seen).into_owned());
        }
        answers
    })
    .await
    .expect("client");
    assert!(answers[0].starts_with("HTTP/1.1 401"), "{}", answers[0]);
    assert!(answers[1].starts_with("HTTP/1.1 207"), "the same connection answers the retry: {:?}", answers[1]);
}
