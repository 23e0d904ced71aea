//! CardDAV on the wire: the real binary with `CARDDAV_ENABLED`, spoken to with raw HTTP
//! (reqwest) so every status, header and precondition element is checked as a client sees it.

use reqwest::{Method, StatusCode};
use serde_json::json;

use crate::helpers::{Client, Instance, PASSWORD, TestServer};

mod book;
mod caldav;

/// A CardDAV client of one account (HTTP Basic).
#[derive(Clone)]
struct Dav {
    base: String,
    http: reqwest::Client,
    user: String,
    secret: String,
    id: u64,
}

struct Answer {
    status: StatusCode,
    headers: reqwest::header::HeaderMap,
    body: String,
}

impl Answer {
    fn etag(&self) -> String {
        self.headers.get("etag").and_then(|v| v.to_str().ok()).expect("etag").to_string()
    }
}

impl Dav {
    fn book(&self) -> String {
        format!("/carddav/{}/contacts/", self.id)
    }

    fn card(&self, name: &str) -> String {
        format!("/carddav/{}/contacts/{name}.vcf", self.id)
    }

    async fn send(&self, method: &str, path: &str, headers: &[(&str, &str)], body: &str) -> Answer {
        let mut request = self
            .http
            .request(Method::from_bytes(method.as_bytes()).unwrap(), format!("{}{}", self.base, path))
            .basic_auth(&self.user, Some(&self.secret))
            .body(body.to_string());
        for (k, v) in headers {
            request = request.header(*k, *v);
        }
        let response = request.send().await.expect("request");
        let status = response.status();
        let headers = response.headers().clone();
        Answer { status, headers, body: response.text().await.expect("body") }
    }

    async fn propfind(&self, path: &str, depth: &str, props: &str) -> Answer {
        let body = format!(
            r#"<?xml version="1.0"?><D:propfind xmlns:D="DAV:" xmlns:C="urn:ietf:params:xml:ns:carddav" xmlns:CS="http://calendarserver.org/ns/"><D:prop>{props}</D:prop></D:propfind>"#
        );
        self.send("PROPFIND", path, &[("Depth", depth), ("Content-Type", "application/xml")], &body).await
    }

    async fn put(&self, name: &str, card: &str, headers: &[(&str, &str)]) -> Answer {
        let mut all = vec![("Content-Type", "text/vcard; charset=utf-8")];
        all.extend_from_slice(headers);
        self.send("PUT", &self.card(name), &all, card).await
    }

    async fn sync(&self, token: &str, limit: Option<usize>) -> Answer {
        let limit = limit.map(|n| format!("<D:limit><D:nresults>{n}</D:nresults></D:limit>")).unwrap_or_default();
        let body = format!(
            r#"<D:sync-collection xmlns:D="DAV:"><D:sync-token>{token}</D:sync-token><D:sync-level>1</D:sync-level>{limit}<D:prop><D:getetag/></D:prop></D:sync-collection>"#
        );
        self.send("REPORT", &self.book(), &[("Content-Type", "application/xml")], &body).await
    }
}

fn card(uid: &str, name: &str) -> String {
    format!(
        "BEGIN:VCARD\r\nVERSION:4.0\r\nUID:{uid}\r\nFN:{name}\r\nN:{name};;;;\r\nEMAIL:{uid}@example.org\r\nX-FAVOURITE-FERN:maidenhair\r\nEND:VCARD\r\n"
    )
}

async fn server() -> TestServer {
    Instance::new().with("CARDDAV_ENABLED", "true").spawn()
}

async fn account(server: &TestServer, username: &str) -> (Client, Dav) {
    let client = server.sign_up(username).await;
    let dav = Dav {
        base: server.url(""),
        http: server.client.clone(),
        user: username.into(),
        secret: PASSWORD.into(),
        id: client.id,
    };
    (client, dav)
}

/// Every `<D:href>` of a multistatus, in order.
fn hrefs(body: &str) -> Vec<String> {
    body.split("<D:href>").skip(1).filter_map(|s| s.split("</D:href>").next()).map(str::to_string).collect()
}

fn sync_token(body: &str) -> String {
    let after = body.rsplit("<D:sync-token>").next().expect("sync-token");
    after.split("</D:sync-token>").next().expect("sync-token").to_string()
}

/// `(href, etag)` of each member response that has a getetag.
fn etags(body: &str) -> Vec<(String, String)> {
    body.split("<D:response>")
        .skip(1)
        .filter_map(|r| {
            let href = r.split("<D:href>").nth(1)?.split("</D:href>").next()?;
            let etag = r.split("<D:getetag>").nth(1)?.split("</D:getetag>").next()?;
            Some((href.to_string(), etag.replace("&quot;", "\"")))
        })
        .collect()
}

#[tokio::test(flavor = "multi_thread")]
async fn discovery_leads_from_the_well_known_url_to_the_address_book() {
    let server = server().await;
    let (_, dav) = account(&server, "ada").await;
    let no_redirects = reqwest::Client::builder().redirect(reqwest::redirect::Policy::none()).build().unwrap();
    let well_known = no_redirects.get(server.url("/.well-known/carddav")).send().await.unwrap();
    assert_eq!(well_known.status(), 301);
    assert_eq!(well_known.headers()["location"], "/carddav/");

    let options = server.client.request(Method::OPTIONS, server.url("/carddav/")).send().await.unwrap();
    assert_eq!(options.status(), 200);
    assert!(options.headers()["dav"].to_str().unwrap().contains("addressbook"));

    let anonymous =
        server.client.request(Method::from_bytes(b"PROPFIND").unwrap(), server.url("/carddav/")).send().await.unwrap();
    assert_eq!(anonymous.status(), 401);
    assert!(anonymous.headers()["www-authenticate"].to_str().unwrap().starts_with("Basic realm="));

    let root = dav.propfind("/carddav/", "0", "<D:current-user-principal/>").await;
    assert_eq!(root.status, 207, "{}", root.body);
    let principal = format!("/carddav/{}/", dav.id);
    assert!(root.body.contains(&format!("<D:current-user-principal><D:href>{principal}</D:href>")), "{}", root.body);

    let slash = dav.propfind("/", "0", "<D:current-user-principal/>").await;
    assert_eq!(slash.status, 207, "{}", slash.body);
    assert!(slash.body.contains(&format!("<D:current-user-principal><D:href>{principal}</D:href>")), "{}", slash.body);

    let home = dav.propfind(&principal, "0", "<C:addressbook-home-set/><D:displayname/>").await;
    assert!(home.body.contains(&format!("<C:addressbook-home-set><D:href>{principal}</D:href>")), "{}", home.body);
    assert!(home.body.contains("<D:displayname>ada</D:displayname>"));

    let books = dav.propfind(&principal, "1", "<D:resourcetype/>").await;
    assert_eq!(hrefs(&books.body), vec![principal.clone(), dav.book()]);
    assert!(books.body.contains("<C:addressbook/>"), "{}", books.body);

    let book = dav
        .propfind(
            &dav.book(),
            "0",
            "<D:resourcetype/><D:displayname/><CS:getctag/><D:sync-token/><C:supported-address-data/><C:max-resource-size/><D:current-user-privilege-set/><D:quota-used-bytes/>",
        )
        .await;
    assert_eq!(book.status, 207);
    for expected in [
        "<C:address-data-type content-type=\"text/vcard\" version=\"3.0\"/>",
        "<C:address-data-type content-type=\"text/vcard\" version=\"4.0\"/>",
        "<C:max-resource-size>",
        "<CS:getctag>urn:mycorrhizal:sync:",
        "<D:sync-token>urn:mycorrhizal:sync:",
        "<D:write/>",
        "HTTP/1.1 404 Not Found",
        "<D:quota-used-bytes/>",
    ] {
        assert!(book.body.contains(expected), "{expected} in {}", book.body);
    }

    let malformed = dav.send("PROPFIND", &dav.book(), &[("Depth", "0")], "<D:propfind xmlns:D=\"DAV:\"><D:prop>").await;
    assert_eq!(malformed.status, 400);
    let unbound = dav.send("PROPFIND", &dav.book(), &[("Depth", "0")], "<x:propfind/>").await;
    assert_eq!(unbound.status, 400);
}

#[tokio::test(flavor = "multi_thread")]
async fn cards_are_written_read_and_deleted_with_strong_etags_and_preconditions() {
    let server = server().await;
    let (api, dav) = account(&server, "ada").await;
    let name = "6f9619ff-8b86-d011-b42d-00c04fc964ff";

    let created = dav.put(name, &card(name, "Ada Lovelace"), &[("If-None-Match", "*")]).await;
    assert_eq!(created.status, 201, "{}", created.body);
    let etag = created.etag();
    assert!(etag.starts_with('"') && !etag.starts_with("W/"), "strong: {etag}");
    let again = dav.put(name, &card(name, "Ada Lovelace"), &[("If-None-Match", "*")]).await;
    assert_eq!(again.status, 412);

    let got = dav.send("GET", &dav.card(name), &[], "").await;
    assert_eq!(got.status, 200);
    assert_eq!(got.etag(), etag);
    assert!(got.headers["content-type"].to_str().unwrap().starts_with("text/vcard"));
    for line in ["VERSION:4.0", "FN:Ada Lovelace", &format!("UID:{name}"), "X-FAVOURITE-FERN:maidenhair"] {
        assert!(got.body.contains(line), "{line} in {}", got.body);
    }
    let v3 = dav.send("GET", &dav.card(name), &[("Accept", "text/vcard; version=3.0")], "").await;
    assert!(v3.body.contains("VERSION:3.0"), "{}", v3.body);
    // A client that did not write 4.0 and asks nothing reads 3.0 (iOS and macOS refuse 4.0),
    // with no parameter only 4.0 knows.
    let mac = dav.send("GET", &dav.card(name), &[("User-Agent", "macOS/15.1 (24B83) AddressBookCore/2575")], "").await;
    assert!(mac.body.contains("VERSION:3.0"), "{}", mac.body);
    for four_only in ["DERIVED", "VALUE=uri", "PREF=", "KIND:", "LANGUAGE="] {
        assert!(!mac.body.contains(four_only), "{four_only} in {}", mac.body);
    }
    let asked = dav
        .send("GET", &dav.card(name), &[("User-Agent", "macOS/15.1"), ("Accept", "text/vcard; version=4.0")], "")
        .await;
    assert!(asked.body.contains("VERSION:4.0"), "asked: {}", asked.body);
    let unchanged = dav.send("GET", &dav.card(name), &[("If-None-Match", &etag)], "").await;
    assert_eq!(unchanged.status, 304);

    let stale = dav.put(name, &card(name, "Ada King"), &[("If-Match", "\"e-1-999\"")]).await;
    assert_eq!(stale.status, 412);
    let edited = dav.put(name, &card(name, "Ada King"), &[("If-Match", &etag)]).await;
    assert_eq!(edited.status, 204);
    assert_ne!(edited.etag(), etag);
    let missing_if_match = dav.put("nobody", &card("nobody", "No One"), &[("If-Match", &etag)]).await;
    assert_eq!(missing_if_match.status, 412);

    // The same contact through the JSON API: one contact, edited by the card.
    let listed: serde_json::Value = api.get("/api/v1/contacts").await.json().await.unwrap();
    assert_eq!(listed["contacts"].as_array().map(Vec::len), Some(1), "{listed}");
    assert_eq!(listed["contacts"][0]["fn"], "Ada King", "{listed}");

    for broken in ["not a card", "BEGIN:VCARD\r\nVERSION:4.0\r\nEND:VCARD\r\n", "BEGIN:VCARD\r\nFN:cut"] {
        let refused = dav.put("broken", broken, &[]).await;
        assert_eq!(refused.status, 403, "{broken}: {}", refused.body);
        assert!(refused.body.contains("<C:valid-address-data/>"), "{}", refused.body);
    }
    let two = format!("{}{}", card("a1", "A"), card("a2", "B"));
    assert_eq!(dav.put("two", &two, &[]).await.status, 403);
    let huge =
        format!("BEGIN:VCARD\r\nVERSION:4.0\r\nFN:Big\r\nNOTE:{}\r\nEND:VCARD\r\n", "x".repeat(17 * 1024 * 1024));
    // On a connection of its own: the server answers before reading the rest and closes it.
    let alone = Dav { http: reqwest::Client::new(), ..dav.clone() };
    assert_eq!(alone.put("huge", &huge, &[]).await.status, 413);
    let json_body = dav.send("PUT", &dav.card("j"), &[("Content-Type", "application/json")], "{}").await;
    assert_eq!(json_body.status, 403);
    assert!(json_body.body.contains("<C:supported-address-data/>"));

    let other_uid = dav.put(name, &card("another-uid", "Ada"), &[]).await;
    assert_eq!(other_uid.status, 409, "{}", other_uid.body);
    assert!(other_uid.body.contains("<C:no-uid-conflict/>"));

    let stale_delete = dav.send("DELETE", &dav.card(name), &[("If-Match", &etag)], "").await;
    assert_eq!(stale_delete.status, 412);
    let deleted = dav.send("DELETE", &dav.card(name), &[], "").await;
    assert_eq!(deleted.status, 204);
    assert_eq!(dav.send("GET", &dav.card(name), &[], "").await.status, 404);
    assert_eq!(dav.send("DELETE", &dav.card(name), &[], "").await.status, 404);
}

#[tokio::test(flavor = "multi_thread")]
async fn a_card_keeps_its_exact_name_uid_and_photo() {
    let server = server().await;
    let (_, dav) = account(&server, "ada").await;
    let png = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg==";
    let upper = "ABCDEF01-2345-6789-ABCD-EF0123456789";
    let text = format!(
        "BEGIN:VCARD\r\nVERSION:3.0\r\nUID:{upper}\r\nFN:Grace Hopper\r\nN:Hopper;Grace;;;\r\nPHOTO;ENCODING=b;TYPE=PNG:{png}\r\nEND:VCARD\r\n"
    );
    assert_eq!(dav.put(upper, &text, &[]).await.status, 201);
    let listing = dav.propfind(&dav.book(), "1", "<D:getetag/>").await;
    assert!(hrefs(&listing.body).contains(&dav.card(upper)), "{}", listing.body);
    let got = dav.send("GET", &dav.card(upper), &[("Accept", "text/vcard; version=3.0")], "").await;
    let unfolded = got.body.replace("\r\n ", "");
    assert!(unfolded.contains(&format!("UID:{upper}")), "{unfolded}");
    assert!(unfolded.contains(png.trim_end_matches('=')), "{unfolded}");

    // A name unrelated to the card's UID still finds the card.
    let odd = "0b6d8b4e-7f1c-4a4e-9d55-1f7a3c2b9e10";
    assert_eq!(dav.put(odd, &card("someone@example.org", "Odd Name"), &[]).await.status, 201);
    let got = dav.send("GET", &dav.card(odd), &[], "").await;
    assert_eq!(got.status, 200);
    assert!(got.body.contains("UID:someone@example.org"), "{}", got.body);
}

/// The photo (base64) of the card `text` reads as: its `PHOTO` line, unfolded, after the
/// last `,` (a 4.0 data URI) or `:`.
fn photo_bytes(text: &str) -> Vec<u8> {
    use base64::Engine as _;
    let unfolded = text.replace("\r\n ", "");
    let line = unfolded.lines().find(|l| l.starts_with("PHOTO")).expect("a PHOTO line");
    let data = line.rsplit([',', ':']).next().expect("photo data");
    base64::engine::general_purpose::STANDARD.decode(data).expect("base64 photo")
}

/// A photo the picture store does not take (a BMP; a JPEG past its 10 MB) is not dropped: the
/// card reads back with the same bytes, and another picture the contact had is gone. A card
/// past the book's max-resource-size is refused with that precondition and not stored.
#[tokio::test(flavor = "multi_thread")]
async fn a_photo_the_picture_store_does_not_take_reads_back_as_sent() {
    use base64::Engine as _;
    let server = server().await;
    let (api, dav) = account(&server, "ada").await;
    let b64 = |bytes: &[u8]| base64::engine::general_purpose::STANDARD.encode(bytes);
    let with_photo = |uid: &str, line: &str| {
        format!("BEGIN:VCARD\r\nVERSION:3.0\r\nUID:{uid}\r\nFN:Ada Byron\r\nN:Byron;Ada;;;\r\n{line}\r\nEND:VCARD\r\n")
    };
    let png = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg==";
    assert_eq!(dav.put("bmp", &with_photo("bmp", &format!("PHOTO;ENCODING=b;TYPE=PNG:{png}")), &[]).await.status, 201);
    let listed: serde_json::Value = api.get("/api/v1/contacts").await.json().await.unwrap();
    let id = listed["contacts"][0]["id"].as_u64().expect("id");
    assert_eq!(
        api.get(&format!("/api/v1/contacts/{id}/profile_picture")).await.status(),
        200,
        "the PNG is its picture"
    );

    let mut bmp = b"BM".to_vec();
    bmp.extend((0..4000u32).map(|i| (i * 7 % 251) as u8));
    let put = dav.put("bmp", &with_photo("bmp", &format!("PHOTO;ENCODING=b;TYPE=BMP:{}", b64(&bmp))), &[]).await;
    assert_eq!(put.status, 204, "{}", put.body);
    let got = dav.send("GET", &dav.card("bmp"), &[("Accept", "text/vcard; version=3.0")], "").await;
    assert_eq!(photo_bytes(&got.body), bmp, "{}", got.body);
    let got4 = dav.send("GET", &dav.card("bmp"), &[], "").await;
    assert_eq!(photo_bytes(&got4.body), bmp, "{}", got4.body);
    assert_eq!(api.get(&format!("/api/v1/contacts/{id}/profile_picture")).await.status(), 404, "the PNG was replaced");

    let mut big = vec![0xFF, 0xD8, 0xFF, 0xE0];
    big.extend((0..(10 * 1024 * 1024 + 4096) as u32).map(|i| (i % 253) as u8));
    // A 14 MB card takes the unoptimised test build a while to read and write.
    let patient = Dav {
        http: reqwest::Client::builder().timeout(std::time::Duration::from_secs(300)).build().expect("client"),
        ..dav.clone()
    };
    let put = patient.put("big", &with_photo("big", &format!("PHOTO;ENCODING=b;TYPE=JPEG:{}", b64(&big))), &[]).await;
    assert_eq!(put.status, 201, "{}", put.body);
    let got = patient.send("GET", &patient.card("big"), &[], "").await;
    assert_eq!(got.status, 200);
    assert!(photo_bytes(&got.body) == big, "the 10 MB JPEG reads back byte for byte");

    let huge =
        vec![0xFF, 0xD8, 0xFF, 0xE0].into_iter().chain(std::iter::repeat_n(7u8, 13 * 1024 * 1024)).collect::<Vec<_>>();
    let alone = Dav { http: reqwest::Client::new(), ..dav.clone() };
    let refused =
        alone.put("huge", &with_photo("huge", &format!("PHOTO;ENCODING=b;TYPE=JPEG:{}", b64(&huge))), &[]).await;
    assert_eq!(refused.status, 413);
    assert!(refused.body.contains("<C:max-resource-size/>"), "{}", refused.body);
    assert_eq!(dav.send("GET", &dav.card("huge"), &[], "").await.status, 404, "not stored");
}

#[tokio::test(flavor = "multi_thread")]
async fn multiget_and_query_answer_the_cards_asked_for() {
    let server = server().await;
    let (_, dav) = account(&server, "ada").await;
    for (uid, name) in [("u1", "Ada Lovelace"), ("u2", "Grace Hopper"), ("u3", "Alan Turing")] {
        assert_eq!(dav.put(uid, &card(uid, name), &[]).await.status, 201);
    }
    let body = format!(
        r#"<C:addressbook-multiget xmlns:D="DAV:" xmlns:C="urn:ietf:params:xml:ns:carddav"><D:prop><D:getetag/><C:address-data version="3.0"/></D:prop><D:href>{}</D:href><D:href>{}</D:href><D:href>/carddav/{}/contacts/missing.vcf</D:href></C:addressbook-multiget>"#,
        dav.card("u1"),
        dav.card("u3"),
        dav.id
    );
    let multiget = dav.send("REPORT", &dav.book(), &[("Depth", "1")], &body).await;
    assert_eq!(multiget.status, 207, "{}", multiget.body);
    assert!(multiget.body.contains("FN:Ada Lovelace") && multiget.body.contains("FN:Alan Turing"));
    assert!(!multiget.body.contains("Grace"));
    assert!(multiget.body.contains("VERSION:3.0"));
    assert!(multiget.body.contains("missing.vcf</D:href><D:status>HTTP/1.1 404"), "{}", multiget.body);

    let query = r#"<C:addressbook-query xmlns:D="DAV:" xmlns:C="urn:ietf:params:xml:ns:carddav"><D:prop><D:getetag/></D:prop><C:filter><C:prop-filter name="FN"><C:text-match collation="i;unicode-casemap" match-type="contains">hopper</C:text-match></C:prop-filter></C:filter></C:addressbook-query>"#;
    let found = dav.send("REPORT", &dav.book(), &[("Depth", "1")], query).await;
    assert_eq!(found.status, 207, "{}", found.body);
    assert_eq!(hrefs(&found.body), vec![dav.card("u2")]);
    let email = query.replace("name=\"FN\"", "name=\"EMAIL\"").replace(">hopper<", ">u3@example<");
    let found = dav.send("REPORT", &dav.book(), &[("Depth", "1")], &email).await;
    assert_eq!(hrefs(&found.body), vec![dav.card("u3")]);
    let unsupported = dav.send("REPORT", &dav.book(), &[], "<D:expand-property xmlns:D=\"DAV:\"/>").await;
    assert_eq!(unsupported.status, 400);
}

/// A PUT that changes a card's photo is one write: the contact moves one revision, under the
/// client's `If-Match`, with the new picture; a stale `If-Match` changes neither card nor picture;
/// a card without its photo removes the picture in the same one revision.
#[tokio::test(flavor = "multi_thread")]
async fn a_put_that_changes_the_photo_is_one_revision() {
    use base64::Engine as _;
    let server = server().await;
    let (api, dav) = account(&server, "ada").await;
    let b64 = |bytes: &[u8]| base64::engine::general_purpose::STANDARD.encode(bytes);
    let png = |fill: u8| {
        let mut bytes = b"\x89PNG\r\n\x1a\n".to_vec();
        bytes.extend(std::iter::repeat_n(fill, 64));
        bytes
    };
    let with = |fname: &str, photo: Option<&[u8]>| {
        let line = photo.map(|p| format!("PHOTO;ENCODING=b;TYPE=PNG:{}\r\n", b64(p))).unwrap_or_default();
        format!(
            "BEGIN:VCARD\r\nVERSION:3.0\r\nUID:one\r\nFN:{fname} Byron\r\nN:Byron;{fname};;;\r\n{line}END:VCARD\r\n"
        )
    };
    let created = dav.put("one", &with("Ada", Some(&png(1))), &[]).await;
    assert_eq!(created.status, 201, "{}", created.body);
    let listed: serde_json::Value = api.get("/api/v1/contacts").await.json().await.unwrap();
    let id = listed["contacts"][0]["id"].as_u64().expect("id");
    let revision = |contact: &serde_json::Value| contact["revision"].as_u64().expect("revision");
    let picture = || async { api.get(&format!("/api/v1/contacts/{id}/profile_picture")).await.bytes().await.unwrap() };
    let before: serde_json::Value = api.get(&format!("/api/v1/contacts/{id}")).await.json().await.unwrap();
    assert_eq!(picture().await.as_ref(), png(1).as_slice());

    let etag = created.etag();
    let changed = dav.put("one", &with("Augusta", Some(&png(2))), &[("If-Match", etag.as_str())]).await;
    assert_eq!(changed.status, 204, "{}", changed.body);
    let after: serde_json::Value = api.get(&format!("/api/v1/contacts/{id}")).await.json().await.unwrap();
    assert_eq!(revision(&after), revision(&before) + 1, "one revision for the card and its picture");
    assert_eq!(picture().await.as_ref(), png(2).as_slice());

    let stale = dav.put("one", &with("Stale", Some(&png(3))), &[("If-Match", etag.as_str())]).await;
    assert_eq!(stale.status, 412);
    assert_eq!(picture().await.as_ref(), png(2).as_slice(), "a refused PUT leaves the picture");

    let dropped = dav.put("one", &with("Augusta", None), &[]).await;
    assert_eq!(dropped.status, 204, "{}", dropped.body);
    let last: serde_json::Value = api.get(&format!("/api/v1/contacts/{id}")).await.json().await.unwrap();
    assert_eq!(revision(&last), revision(&after) + 1);
    assert_eq!(api.get(&format!("/api/v1/contacts/{id}/profile_picture")).await.status(), 404);
}

/// A multiget large enough to be written on several threads answers every href in the order
/// asked, each with its own card (a photo inline among them), and a missing one in its place.
#[tokio::test(flavor = "multi_thread")]
async fn a_large_multiget_answers_every_card_in_the_order_asked() {
    let server = server().await;
    let (_, dav) = account(&server, "ada").await;
    put_many(&dav, "m", 300).await;
    let png = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg==";
    let pictured = format!(
        "BEGIN:VCARD\r\nVERSION:3.0\r\nUID:pictured\r\nFN:Pictured Person\r\nN:Person;Pictured;;;\r\nPHOTO;ENCODING=b;TYPE=PNG:{png}\r\nEND:VCARD\r\n"
    );
    assert_eq!(dav.put("pictured", &pictured, &[]).await.status, 201);
    // Newest first, the pictured card in the middle, one missing card after it.
    let mut names: Vec<String> = (0..300).rev().map(|n| format!("m{n}")).collect();
    names.insert(150, "pictured".into());
    names.insert(151, "missing".into());
    let hrefs_asked: String = names.iter().map(|n| format!("<D:href>{}</D:href>", dav.card(n))).collect();
    let body = format!(
        r#"<C:addressbook-multiget xmlns:D="DAV:" xmlns:C="urn:ietf:params:xml:ns:carddav"><D:prop><D:getetag/><C:address-data/></D:prop>{hrefs_asked}</C:addressbook-multiget>"#
    );
    let answer = dav.send("REPORT", &dav.book(), &[("Depth", "1")], &body).await;
    assert_eq!(answer.status, 207, "{}", answer.body);
    let responses: Vec<&str> = answer.body.split("<D:response>").skip(1).collect();
    assert_eq!(responses.len(), names.len());
    for (name, response) in names.iter().zip(&responses) {
        assert!(response.starts_with(&format!("<D:href>{}</D:href>", dav.card(name))), "{name}: {response}");
        match name.as_str() {
            "missing" => assert!(response.contains("HTTP/1.1 404 Not Found"), "{response}"),
            "pictured" => {
                let card = response.split("<C:address-data>").nth(1).expect("address-data");
                assert!(card.contains("FN:Pictured Person"), "{card}");
                assert!(card.replace("\r\n ", "").contains(png.trim_end_matches('=')), "{card}");
            }
            name => {
                let n = name.trim_start_matches('m');
                let card = response.split("<C:address-data>").nth(1).expect("address-data");
                assert!(card.contains(&format!("UID:{name}\r\n")), "{name}: {card}");
                assert!(card.contains(&format!("FN:Person {n}\r\n")), "{name}: {card}");
            }
        }
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn sync_collection_reports_changes_removals_and_refuses_stale_tokens() {
    let server = server().await;
    let (api, dav) = account(&server, "ada").await;
    for uid in ["s1", "s2", "s3"] {
        assert_eq!(dav.put(uid, &card(uid, &format!("Person {uid}")), &[]).await.status, 201);
    }
    let first = dav.sync("", None).await;
    assert_eq!(first.status, 207, "{}", first.body);
    let before = etags(&first.body);
    assert_eq!(before.len(), 3);
    let token = sync_token(&first.body);
    let ctag = dav.propfind(&dav.book(), "0", "<CS:getctag/>").await.body;

    let nothing = dav.sync(&token, None).await;
    assert!(etags(&nothing.body).is_empty());
    assert_eq!(sync_token(&nothing.body), token, "no change, same token");

    // An edit through the JSON API, a delete over DAV.
    let listed: serde_json::Value = api.get("/api/v1/contacts").await.json().await.unwrap();
    let s1 = listed["contacts"].as_array().unwrap().iter().find(|c| c["fn"] == "Person s1").expect("s1");
    let id = s1["id"].as_u64().expect("id");
    let edited = api.send(Method::PUT, &format!("/api/v1/contacts/{id}"), json!({ "firstname": "Edited" })).await;
    assert_eq!(edited.status(), 200);
    assert_eq!(dav.send("DELETE", &dav.card("s2"), &[], "").await.status, 204);

    let next = dav.sync(&token, None).await;
    assert_eq!(next.status, 207);
    let changed = etags(&next.body);
    assert_eq!(changed.len(), 1, "{}", next.body);
    assert_eq!(changed[0].0, dav.card("s1"));
    let old = before.iter().find(|(h, _)| *h == dav.card("s1")).unwrap();
    assert_ne!(changed[0].1, old.1, "a new ETag");
    assert!(
        next.body.contains(&format!("{}</D:href><D:status>HTTP/1.1 404 Not Found", dav.card("s2"))),
        "{}",
        next.body
    );
    assert_ne!(sync_token(&next.body), token);
    assert_ne!(dav.propfind(&dav.book(), "0", "<CS:getctag/>").await.body, ctag, "getctag changed");

    for stale in ["urn:mycorrhizal:sync:999999", "http://example.org/other-server/1", "urn:mycorrhizal:sync:banana"] {
        let refused = dav.sync(stale, None).await;
        assert_eq!(refused.status, 403, "{stale}");
        assert!(refused.body.contains("<D:valid-sync-token/>"), "{}", refused.body);
    }
}

/// Puts `count` cards named `<prefix><n>` over 8 connections.
async fn put_many(dav: &Dav, prefix: &str, count: usize) {
    let mut tasks = Vec::new();
    for worker in 0..8 {
        let dav = dav.clone();
        let prefix = prefix.to_string();
        tasks.push(tokio::spawn(async move {
            for n in (worker..count).step_by(8) {
                let uid = format!("{prefix}{n}");
                let answer = dav.put(&uid, &card(&uid, &format!("Person {n}")), &[]).await;
                assert!(answer.status.is_success(), "{uid}: {}", answer.status);
            }
        }));
    }
    for task in tasks {
        task.await.unwrap();
    }
}

/// Follows sync pages of `limit` from `token` until one is not truncated; returns every member
/// href seen and the final token.
async fn page_through(
    dav: &Dav,
    mut token: String,
    limit: usize,
) -> (std::collections::HashSet<String>, String, usize) {
    let mut seen = std::collections::HashSet::new();
    let mut pages = 0;
    loop {
        let page = dav.sync(&token, Some(limit)).await;
        assert_eq!(page.status, 207, "{}", page.body);
        pages += 1;
        let members = etags(&page.body);
        assert!(members.len() <= limit);
        seen.extend(members.into_iter().map(|(h, _)| h));
        token = sync_token(&page.body);
        if !page.body.contains("507 Insufficient Storage") {
            return (seen, token, pages);
        }
        assert!(pages < 1000, "no progress");
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn a_limited_sync_pages_through_a_thousand_changes_without_losing_one() {
    let server = server().await;
    let (_, dav) = account(&server, "ada").await;
    let start = sync_token(&dav.sync("", None).await.body);
    put_many(&dav, "p", 1000).await;
    let (seen, token, pages) = page_through(&dav, start.clone(), 90).await;
    assert_eq!(seen.len(), 1000, "every change reported");
    assert!(pages >= 12, "{pages} pages");
    let (first, _, _) = page_through(&dav, String::new(), 77).await;
    assert_eq!(first.len(), 1000, "a first sync paged sees every card");
    // Edits interleaved with paging are never skipped.
    let mid = dav.sync(&token, Some(10)).await;
    assert!(etags(&mid.body).is_empty());
    put_many(&dav, "p", 300).await;
    let (again, _, _) = page_through(&dav, token, 64).await;
    assert_eq!(again.len(), 300);
}

#[tokio::test(flavor = "multi_thread")]
async fn another_user_can_neither_see_sync_nor_write_the_book() {
    let server = server().await;
    let (_, ada) = account(&server, "ada").await;
    let (_, bob) = account(&server, "bob").await;
    assert_eq!(ada.put("secret", &card("secret", "Ada's Friend"), &[]).await.status, 201);
    let as_bob = Dav { user: "bob".into(), ..ada.clone() };
    let as_bob = Dav { secret: PASSWORD.into(), ..as_bob };
    // Bob's credentials on Ada's paths.
    for (method, path) in
        [("GET", ada.card("secret")), ("DELETE", ada.card("secret")), ("PROPFIND", ada.book()), ("REPORT", ada.book())]
    {
        let answer = as_bob.send(method, &path, &[("Depth", "1")], "").await;
        assert_eq!(answer.status, 404, "{method} {path}");
    }
    assert_eq!(as_bob.put("secret", &card("secret", "Overwritten"), &[]).await.status, 404);
    // In his own book, Ada's UID is his own contact, and nothing of hers shows.
    assert_eq!(bob.send("GET", &bob.card("secret"), &[], "").await.status, 404);
    let multiget = format!(
        r#"<C:addressbook-multiget xmlns:D="DAV:" xmlns:C="urn:ietf:params:xml:ns:carddav"><D:prop><D:getetag/></D:prop><D:href>{}</D:href><D:href>{}</D:href></C:addressbook-multiget>"#,
        ada.card("secret"),
        bob.card("secret")
    );
    let answer = bob.send("REPORT", &bob.book(), &[], &multiget).await;
    assert!(!answer.body.contains("getetag>"), "{}", answer.body);
    assert!(etags(&bob.sync("", None).await.body).is_empty());
    assert_eq!(bob.put("secret", &card("secret", "Bob's Own"), &[]).await.status, 201);
    let still = ada.send("GET", &ada.card("secret"), &[], "").await;
    assert!(still.body.contains("FN:Ada's Friend"), "{}", still.body);
}

#[tokio::test(flavor = "multi_thread")]
async fn basic_auth_takes_the_password_or_a_carddav_token_and_locks_out_guessers() {
    let server = server().await;
    let (api, dav) = account(&server, "ada").await;
    let path = dav.book();
    let wrong = Dav { secret: "wrong-password-1".into(), ..dav.clone() };
    assert_eq!(wrong.propfind(&path, "0", "<D:getetag/>").await.status, 401);

    let made: serde_json::Value =
        api.post("/api/v1/api-tokens", json!({ "name": "phone", "scope": "carddav" })).await.json().await.unwrap();
    let token = made["token"].as_str().expect("token").to_string();
    let with_token = Dav { secret: token.clone(), ..dav.clone() };
    assert_eq!(with_token.propfind(&path, "0", "<D:getetag/>").await.status, 207);
    let as_other_name = Dav { user: "someone-else".into(), ..with_token.clone() };
    assert_eq!(as_other_name.propfind(&path, "0", "<D:getetag/>").await.status, 401);
    let full: serde_json::Value = api.post("/api/v1/api-tokens", json!({ "name": "full" })).await.json().await.unwrap();
    let with_full = Dav { secret: full["token"].as_str().unwrap().into(), ..dav.clone() };
    assert_eq!(
        with_full.propfind(&path, "0", "<D:getetag/>").await.status,
        401,
        "a full-scope token is not a DAV credential"
    );

    // A password change ends DAV access with the old password (a remembered one included).
    assert_eq!(dav.propfind(&path, "0", "<D:getetag/>").await.status, 207);
    let new_password = "another-lichen-fern-77";
    let changed = api
        .post("/api/v1/users/change-password", json!({ "current_password": PASSWORD, "new_password": new_password }))
        .await;
    assert_eq!(changed.status(), 200);
    assert_eq!(dav.propfind(&path, "0", "<D:getetag/>").await.status, 401);
    let renewed = Dav { secret: new_password.into(), ..dav.clone() };
    assert_eq!(renewed.propfind(&path, "0", "<D:getetag/>").await.status, 207);

    // Five wrong passwords lock the pair out: even the right one is refused, with Retry-After.
    for _ in 0..5 {
        let status = wrong.propfind(&path, "0", "<D:getetag/>").await.status;
        assert!(status == 401 || status == 429, "{status}");
    }
    let locked = renewed.propfind(&path, "0", "<D:getetag/>").await;
    assert_eq!(locked.status, 429);
    assert!(locked.headers.get("retry-after").is_some());
    // One lockout for every door that takes the password: the session sign-in is locked too.
    let login = server.post("/api/v1/login", json!({ "identifier": "ada", "password": new_password })).await;
    assert_eq!(login.status(), 429);
}

/// A password DAV verified a moment ago stops working once the account turns on a second factor
/// (the remembered password does not skip that rule); a `carddav` token still works.
#[tokio::test(flavor = "multi_thread")]
async fn a_remembered_password_stops_at_a_second_factor_turned_on_since() {
    let server = server().await;
    let (api, dav) = account(&server, "ada").await;
    let path = dav.book();
    let made: serde_json::Value =
        api.post("/api/v1/api-tokens", json!({ "name": "phone", "scope": "carddav" })).await.json().await.unwrap();
    let with_token = Dav { secret: made["token"].as_str().expect("token").into(), ..dav.clone() };
    assert_eq!(dav.propfind(&path, "0", "<D:getetag/>").await.status, 207, "the password, now remembered");
    crate::twofactor::enrol(&api).await;
    assert_eq!(dav.propfind(&path, "0", "<D:getetag/>").await.status, 401, "a password alone skips the second factor");
    assert_eq!(with_token.propfind(&path, "0", "<D:getetag/>").await.status, 207);
}

#[tokio::test(flavor = "multi_thread")]
async fn the_carddav_bucket_answers_429_with_retry_after_past_its_burst() {
    let server = server().await;
    let http = server.client.clone();
    let mut refused = None;
    let started = std::time::Instant::now();
    // The bucket refills one request per 100 ms, so a slow (busy) machine gets further before
    // the refusal: the bound allows what refilled meanwhile.
    for n in 0..6000 {
        let answer = http.request(Method::OPTIONS, server.url("/carddav/")).send().await.unwrap();
        if answer.status() == 429 {
            refused = Some((n, answer.headers().get("retry-after").is_some()));
            break;
        }
    }
    let (n, retry_after) = refused.expect("refused past the burst");
    let refilled = started.elapsed().as_millis() as usize / 100;
    assert!((2400..=2600 + refilled).contains(&n), "refused at request {n} ({refilled} refilled meanwhile)");
    assert!(retry_after);
    // The API's own bucket is separate.
    assert_eq!(server.get("/health/live").await.status(), 200);
}

#[tokio::test(flavor = "multi_thread")]
async fn the_dav_bucket_takes_its_size_and_pace_from_the_configuration() {
    // A bucket of 20 that refills one request a minute: the 21st request is refused, whatever
    // the machine's speed.
    let server = Instance::new()
        .with("CARDDAV_ENABLED", "true")
        .with("RATE_LIMIT_DAV_BURST", "20")
        .with("RATE_LIMIT_DAV_INTERVAL_MS", "60000")
        .spawn();
    let mut statuses = Vec::new();
    for _ in 0..21 {
        statuses.push(server.client.request(Method::OPTIONS, server.url("/carddav/")).send().await.unwrap().status());
    }
    assert!(statuses[..20].iter().all(|s| s.is_success()), "{statuses:?}");
    assert_eq!(statuses[20], 429);
}

#[tokio::test(flavor = "multi_thread")]
async fn with_carddav_off_the_paths_answer_404() {
    let server = Instance::new().spawn();
    let (_, dav) = account(&server, "ada").await;
    assert_eq!(dav.propfind("/carddav/", "0", "<D:current-user-principal/>").await.status, 404);
    assert_eq!(server.get("/.well-known/carddav").await.status(), 404);
}

#[tokio::test(flavor = "multi_thread")]
async fn a_burst_of_writes_is_answered_201_or_503_with_retry_after_and_every_201_is_stored() {
    let server = server().await;
    let (_, dav) = account(&server, "ada").await;
    let mut tasks = Vec::new();
    for n in 0..300 {
        let dav = dav.clone();
        tasks.push(tokio::spawn(async move {
            let uid = format!("burst{n}");
            let answer = dav.put(&uid, &card(&uid, &format!("Burst {n}")), &[]).await;
            (uid, answer.status, answer.headers.get("retry-after").is_some())
        }));
    }
    let mut stored = Vec::new();
    for task in tasks {
        let (uid, status, retry_after) = task.await.unwrap();
        match status.as_u16() {
            201 => stored.push(uid),
            503 => assert!(retry_after, "503 without Retry-After"),
            other => panic!("{uid}: {other}"),
        }
    }
    assert!(!stored.is_empty());
    let listing = dav.propfind(&dav.book(), "1", "<D:getetag/>").await;
    let hrefs = hrefs(&listing.body);
    for uid in &stored {
        assert!(hrefs.contains(&dav.card(uid)), "{uid} answered 201 but is not in the book");
    }
}

/// A token whose removed members were purged after `DELETED_RETENTION_DAYS` can no longer be
/// answered (their names are gone): 403 `valid-sync-token`, so the client syncs afresh. A token
/// issued after those removals were reported still answers. In process, with a moved clock.
#[tokio::test]
async fn a_token_from_before_purged_removals_is_stale_and_a_later_one_is_not() {
    use axum::body::Body;
    use base64::Engine as _;
    use jiff::Timestamp;
    use mycorrhizal_engine::system::Trigger;
    use tower::ServiceExt;

    let app = crate::sessions::in_process(&[("CARDDAV_ENABLED", "true"), ("DELETED_RETENTION_DAYS", "30")]).await;
    app.clock.set("2026-01-01T10:00:00Z".parse::<Timestamp>().unwrap());
    let cookie = app.signed_in().await;
    let mut ids = Vec::new();
    for name in ["Gone", "Kept"] {
        let (status, body, _) = app.call("POST", "/api/v1/contacts", Some(&cookie), json!({ "firstname": name })).await;
        assert_eq!(status, 201, "{body}");
        ids.push(body["contact"]["id"].as_u64().expect("id"));
    }
    let basic = format!("Basic {}", base64::engine::general_purpose::STANDARD.encode(format!("ada:{PASSWORD}")));
    let sync = |token: String| {
        let (state, basic) = (app.state.clone(), basic.clone());
        async move {
            let body = format!(
                r#"<D:sync-collection xmlns:D="DAV:"><D:sync-token>{token}</D:sync-token><D:sync-level>1</D:sync-level><D:prop><D:getetag/></D:prop></D:sync-collection>"#
            );
            let request = axum::http::Request::builder()
                .method("REPORT")
                .uri("/carddav/1/contacts/")
                .header("authorization", basic)
                .header("content-type", "application/xml")
                .body(Body::from(body))
                .unwrap();
            let response = mycorrhizal::app(state).oneshot(request).await.unwrap();
            let status = response.status().as_u16();
            let bytes = axum::body::to_bytes(response.into_body(), 1 << 20).await.unwrap();
            (status, String::from_utf8_lossy(&bytes).into_owned())
        }
    };
    let (status, first) = sync(String::new()).await;
    assert_eq!(status, 207, "{first}");
    let before = sync_token(&first);

    let (status, _, _) = app.call("DELETE", &format!("/api/v1/contacts/{}", ids[0]), Some(&cookie), json!({})).await;
    assert_eq!(status, 200);
    app.clock.set("2026-01-02T10:00:00Z".parse::<Timestamp>().unwrap());
    let (status, next) = sync(before.clone()).await;
    assert_eq!(status, 207, "{next}");
    assert!(next.contains("404 Not Found"), "the removal is reported inside the window: {next}");
    let after = sync_token(&next);

    app.clock.set("2026-02-01T10:00:01Z".parse::<Timestamp>().unwrap());
    mycorrhizal::jobs::run(&app.state, mycorrhizal::jobs::PURGE, Trigger::Manual).await.unwrap();
    assert!(
        app.state
            .engine
            .user(mycorrhizal_engine::UserId(1))
            .view()
            .unwrap()
            .get_any::<mycorrhizal::crm::contact::Contact>(ids[0])
            .unwrap()
            .is_none(),
        "the tombstone was purged"
    );
    let (status, stale) = sync(before).await;
    assert_eq!(status, 403, "{stale}");
    assert!(stale.contains("valid-sync-token"), "{stale}");
    let (status, fresh) = sync(after).await;
    assert_eq!(status, 207, "a token issued after the removal was reported still answers: {fresh}");
    assert!(!fresh.contains("404 Not Found"), "{fresh}");
}

/// The kill -9 rule holds for DAV writes: every card answered 201 before the server was killed
/// (SIGKILL, no shutdown) is there after a restart, with the content the client sent.
#[tokio::test(flavor = "multi_thread")]
async fn every_card_acknowledged_before_a_kill_survives_it() {
    let instance = Instance::new().with("CARDDAV_ENABLED", "true");
    let mut server = instance.spawn();
    let (_, dav) = account(&server, "ada").await;
    let acked: std::sync::Arc<std::sync::Mutex<Vec<String>>> = std::sync::Arc::default();
    let mut writers = Vec::new();
    for w in 0..4 {
        let (http, base, id, acked) = (dav.http.clone(), dav.base.clone(), dav.id, acked.clone());
        writers.push(tokio::spawn(async move {
            for n in 0.. {
                let uid = format!("kill{w}x{n}");
                let sent = http
                    .put(format!("{base}/carddav/{id}/contacts/{uid}.vcf"))
                    .basic_auth("ada", Some(PASSWORD))
                    .header("Content-Type", "text/vcard; charset=utf-8")
                    .body(card(&uid, &format!("Kill {w} {n}")))
                    .send()
                    .await;
                match sent {
                    Ok(answer) if answer.status() == 201 => acked.lock().expect("lock").push(uid),
                    Ok(answer) if answer.status() == 503 => {
                        tokio::time::sleep(std::time::Duration::from_millis(50)).await
                    }
                    // The server is gone: what was not answered was not promised.
                    _ => break,
                }
            }
        }));
    }
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    while acked.lock().expect("lock").len() < 200 && std::time::Instant::now() < deadline {
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
    server.child.kill().expect("kill");
    server.child.wait().expect("wait");
    for w in writers {
        w.await.expect("writer");
    }
    let acked = acked.lock().expect("lock").clone();
    assert!(acked.len() >= 200, "only {} writes were acknowledged before the deadline", acked.len());
    drop(server);

    let server = instance.spawn();
    let dav = Dav {
        base: server.url(""),
        http: server.client.clone(),
        user: "ada".into(),
        secret: PASSWORD.into(),
        id: dav.id,
    };
    for uid in &acked {
        let answer = dav.send("GET", &dav.card(uid), &[], "").await;
        assert_eq!(answer.status, 200, "card {uid} was acknowledged before the kill");
        assert!(answer.body.contains(&format!("UID:{uid}")), "{}", answer.body);
    }
}
