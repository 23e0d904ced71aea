//! Subscriptions against real DAV servers started here on loopback from the pinned packages of
//! tests/requirements.txt: Radicale (Basic auth, `sync-collection`) and Xandikos. The server
//! under test is the real binary; the remote is changed over its own HTTP interface, as another
//! client would, and each sync is asked for by hand (`POST /{id}/sync`).

use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::helpers::{Client, Instance, TestServer};

/// The venv's python (next to `MYCORRHIZAL_TEST_PYTHON`, or the repository's `.venv`), which
/// runs Radicale and Xandikos.
fn python() -> PathBuf {
    crate::dav_clients::venv_tool("python")
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0").expect("bind").local_addr().expect("addr").port()
}

/// Which server.
#[derive(Clone, Copy, PartialEq)]
enum Kind {
    Radicale,
    Xandikos,
}

/// A DAV server on loopback, stopped when dropped.
pub struct DavServer {
    kind: Kind,
    child: Option<Child>,
    port: u16,
    dir: tempfile::TempDir,
    pub user: String,
    pub password: String,
    http: reqwest::Client,
}

impl DavServer {
    pub(crate) fn radicale() -> DavServer {
        let dir = tempfile::tempdir().expect("temp dir");
        std::fs::write(dir.path().join("users"), "remy:secret1\n").expect("users");
        let mut server = DavServer {
            kind: Kind::Radicale,
            child: None,
            port: free_port(),
            dir,
            user: "remy".into(),
            password: "secret1".into(),
            http: reqwest::Client::new(),
        };
        server.start();
        server
    }

    fn xandikos() -> DavServer {
        let dir = tempfile::tempdir().expect("temp dir");
        let mut server = DavServer {
            kind: Kind::Xandikos,
            child: None,
            port: free_port(),
            dir,
            user: "user".into(),
            password: String::new(),
            http: reqwest::Client::new(),
        };
        server.start();
        server
    }

    fn start(&mut self) {
        let root = self.dir.path();
        let mut command = Command::new(python());
        match self.kind {
            Kind::Radicale => {
                let config = format!(
                    "[server]\nhosts = 127.0.0.1:{}\n[auth]\ntype = htpasswd\nhtpasswd_filename = {}\n\
                     htpasswd_encryption = plain\n[storage]\nfilesystem_folder = {}\n[rights]\ntype = owner_only\n\
                     [logging]\nlevel = warning\n",
                    self.port,
                    root.join("users").display(),
                    root.join("data").display()
                );
                std::fs::write(root.join("config"), config).expect("config");
                command.args(["-m", "radicale", "--config", &root.join("config").display().to_string()]);
            }
            Kind::Xandikos => {
                command.args(["-m", "xandikos.web", "--defaults", "-d"]).arg(root.join("data")).args([
                    "-l",
                    "127.0.0.1",
                    "-p",
                    &self.port.to_string(),
                    "--current-user-principal",
                    "/user/",
                ]);
            }
        }
        let child = command.stdout(Stdio::null()).stderr(Stdio::null()).spawn().expect("start the DAV server");
        self.child = Some(child);
        let deadline = Instant::now() + Duration::from_secs(30);
        while std::net::TcpStream::connect(("127.0.0.1", self.port)).is_err() {
            assert!(Instant::now() < deadline, "the DAV server did not start");
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    fn stop(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }

    pub fn url(&self, path: &str) -> String {
        format!("http://127.0.0.1:{}{path}", self.port)
    }

    /// The address book's path.
    fn book(&self) -> &'static str {
        match self.kind {
            Kind::Radicale => "/remy/friends/",
            Kind::Xandikos => "/user/contacts/addressbook/",
        }
    }

    fn set_password(&mut self, password: &str) {
        std::fs::write(self.dir.path().join("users"), format!("remy:{password}\n")).expect("users");
        // Radicale reads the file when it changes; a restart makes sure of it.
        self.stop();
        self.start();
    }

    async fn request(&self, method: &str, path: &str, content_type: &str, body: String) -> reqwest::Response {
        let method = reqwest::Method::from_bytes(method.as_bytes()).expect("method");
        let mut request = self.http.request(method, self.url(path)).header("content-type", content_type).body(body);
        if !self.password.is_empty() {
            request = request.basic_auth(&self.user, Some(&self.password));
        }
        request.send().await.expect("DAV request")
    }

    /// Makes the address book (Xandikos's defaults have one already).
    pub(crate) async fn make_book(&self) {
        if self.kind == Kind::Xandikos {
            return;
        }
        let body = r#"<?xml version="1.0"?><D:mkcol xmlns:D="DAV:" xmlns:C="urn:ietf:params:xml:ns:carddav"><D:set><D:prop><D:resourcetype><D:collection/><C:addressbook/></D:resourcetype><D:displayname>Friends</D:displayname></D:prop></D:set></D:mkcol>"#;
        let made = self.request("MKCOL", self.book(), "application/xml", body.into()).await;
        assert_eq!(made.status(), 201, "{}", made.text().await.unwrap_or_default());
    }

    pub(crate) async fn put_card(&self, name: &str, card: &str) {
        let path = format!("{}{name}.vcf", self.book());
        let put = self.request("PUT", &path, "text/vcard", card.replace('\n', "\r\n")).await;
        assert!(put.status().is_success(), "PUT {path}: {}", put.status());
    }

    async fn delete_card(&self, name: &str) {
        let path = format!("{}{name}.vcf", self.book());
        let deleted = self.request("DELETE", &path, "text/plain", String::new()).await;
        assert!(deleted.status().is_success(), "DELETE {path}: {}", deleted.status());
    }

    /// Forgets every sync token Radicale handed out (as a server that pruned its history).
    fn forget_sync_tokens(&self) {
        let cache = self.dir.path().join("data/collection-root/remy/friends/.Radicale.cache/sync-token");
        std::fs::remove_dir_all(&cache).expect("remove Radicale's sync-token cache");
    }
}

impl Drop for DavServer {
    fn drop(&mut self) {
        self.stop();
    }
}

/// A 1x1 PNG, and another one of another colour.
const RED: &str = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg==";
const BLUE: &str = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPj/HwADAgH/eL9GtQAAAABJRU5ErkJggg==";

pub(crate) fn card(uid: &str, given: &str, family: &str, extra: &str) -> String {
    format!("BEGIN:VCARD\nVERSION:3.0\nUID:{uid}\nFN:{given} {family}\nN:{family};{given};;;\n{extra}END:VCARD\n")
}

fn photo(png: &str) -> String {
    format!("PHOTO;ENCODING=b;TYPE=PNG:{png}\n")
}

async fn contacts(client: &Client) -> Vec<Value> {
    let list: Value = client.get("/api/v1/contacts?limit=100").await.json().await.expect("contacts");
    list["contacts"].as_array().expect("contacts").clone()
}

async fn find(client: &Client, first: &str) -> Option<Value> {
    contacts(client).await.into_iter().find(|c| c["firstname"] == first)
}

async fn sync(client: &Client, base: &str, id: u64) -> (u16, Value) {
    let answer = client.post(&format!("{base}/{id}/sync"), json!({})).await;
    let status = answer.status().as_u16();
    (status, answer.json().await.unwrap_or(Value::Null))
}

async fn subscribe(client: &Client, remote: &DavServer, url: &str) -> Value {
    let body = json!({
        "name": "Friends", "url": url, "username": remote.user, "password": remote.password, "sync_enabled": false
    });
    let made = client.post("/api/v1/contact-subscriptions", body).await;
    let status = made.status();
    let made: Value = made.json().await.expect("json");
    assert_eq!(status, 201, "{made}");
    made
}

fn start() -> (Instance, TestServer) {
    let instance = Instance::new();
    let server = instance.spawn();
    (instance, server)
}

#[tokio::test]
async fn a_radicale_address_book_comes_in_and_follows_every_remote_change() {
    let remote = DavServer::radicale();
    remote.make_book().await;
    remote.put_card("ann", &card("ann-1", "Ann", "Lee", &format!("TEL:+44 20 1234 5678\n{}", photo(RED)))).await;
    remote.put_card("bo", &card("bo-1", "Bo", "Ray", "EMAIL:bo@example.org\n")).await;
    remote.put_card("cy", &card("cy-1", "Cy", "Ng", "")).await;
    // The other vCard versions, read through the same codecs as an import.
    remote
        .put_card(
            "old",
            "BEGIN:VCARD\nVERSION:2.1\nUID:old-1\nN:Olden;Otto\nFN:Otto Olden\nTEL;CELL:+49 30 1234\nEND:VCARD\n",
        )
        .await;
    remote.put_card("new", "BEGIN:VCARD\nVERSION:4.0\nUID:urn:uuid:5f1b4c0e-3c1d-4a7e-9d59-8c1e2b7a6f10\nFN:Nova Neu\nN:Neu;Nova;;;\nEMAIL;TYPE=work:nova@example.org\nEND:VCARD\n").await;
    // Radicale takes it; the codecs refuse it (nothing to name a contact after).
    remote.put_card("empty", "BEGIN:VCARD\nVERSION:3.0\nUID:empty-1\nFN:\nN:;;;;\nEND:VCARD\n").await;

    let (_instance, server) = start();
    let ada = server.sign_up("ada").await;
    // The server's root is enough: the well-known address, the principal and its home set lead
    // to the one address book.
    let found: Value = ada
        .post(
            "/api/v1/contact-subscriptions/discover",
            json!({ "url": remote.url("/"), "username": remote.user, "password": remote.password }),
        )
        .await
        .json()
        .await
        .unwrap();
    let books = found["collections"].as_array().expect("collections");
    assert_eq!(books.len(), 1, "{found}");
    assert_eq!(books[0]["url"], remote.url("/remy/friends/"));
    assert_eq!(books[0]["name"], "Friends");
    assert_eq!(books[0]["incremental"], true);

    let sub = subscribe(&ada, &remote, &remote.url("/")).await;
    let id = sub["id"].as_u64().unwrap();
    assert_eq!(sub["url"], remote.url("/remy/friends/"), "the collection found is stored");
    assert_eq!(sub["has_password"], true);
    assert!(sub.get("password").is_none() && !sub.to_string().contains("secret1"), "{sub}");
    assert_eq!(sub["status"], "disabled");

    let (status, first) = sync(&ada, "/api/v1/contact-subscriptions", id).await;
    assert_eq!(status, 200, "{first}");
    assert_eq!((first["created"].as_u64(), first["skipped"].as_u64()), (Some(5), Some(1)), "{first}");
    assert!(find(&ada, "Otto").await.is_some_and(|c| c.to_string().contains("+49 30 1234")), "vCard 2.1");
    assert!(find(&ada, "Nova").await.is_some_and(|c| c.to_string().contains("nova@example.org")), "vCard 4.0");
    let state: Value = ada.get(&format!("/api/v1/contact-subscriptions/{id}")).await.json().await.unwrap();
    assert_eq!(state["last_sync_status"], "success", "{state}");
    assert_eq!(state["incremental"], true);
    assert!(state["last_success_at"].is_string() && state["terminal_failure_at"].is_null());
    let skipped = state["skipped"].as_array().unwrap();
    assert_eq!(skipped.len(), 1, "{state}");
    assert!(skipped[0]["href"].as_str().unwrap().ends_with("empty.vcf"));
    assert!(skipped[0]["reason"].as_str().unwrap().contains("the card is empty"), "{state}");

    let ann = find(&ada, "Ann").await.expect("Ann came in");
    let ann_id = ann["id"].as_u64().unwrap();
    let detail: Value = ada.get(&format!("/api/v1/contacts/{ann_id}")).await.json().await.unwrap();
    assert_eq!(detail["subscription"], json!({ "id": id, "name": "Friends", "source": "address_book" }));
    let picture = ada.get(&format!("/api/v1/contacts/{ann_id}/profile_picture")).await;
    assert_eq!(picture.status(), 200);
    let red = picture.bytes().await.unwrap();
    // What the CRM keeps about Ann: a note and a circle.
    let note =
        ada.post(&format!("/api/v1/contacts/{ann_id}/notes"), json!({ "content": "Met at the climbing gym" })).await;
    assert_eq!(note.status(), 201, "{}", note.text().await.unwrap_or_default());

    // A remote edit and a new photo.
    remote.put_card("ann", &card("ann-1", "Ann", "Lee", &format!("TEL:+44 20 9999 0000\n{}", photo(BLUE)))).await;
    let (status, second) = sync(&ada, "/api/v1/contact-subscriptions", id).await;
    assert_eq!(status, 200, "{second}");
    assert_eq!(second["updated"], 1, "only Ann changed: {second}");
    assert_eq!(second["created"], 0);
    let detail: Value = ada.get(&format!("/api/v1/contacts/{ann_id}")).await.json().await.unwrap();
    assert!(detail.to_string().contains("+44 20 9999 0000"), "remote wins: {detail}");
    let blue = ada.get(&format!("/api/v1/contacts/{ann_id}/profile_picture")).await.bytes().await.unwrap();
    assert_ne!(red, blue, "the new photo replaced the old");
    let notes: Value = ada.get(&format!("/api/v1/contacts/{ann_id}/notes")).await.json().await.unwrap();
    assert!(notes.to_string().contains("climbing gym"), "the note stays with Ann: {notes}");

    // Remote deletions: Bo (nothing kept about him) goes; Ann (a note) is kept, archived, local.
    let bo = find(&ada, "Bo").await.expect("Bo")["id"].as_u64().unwrap();
    remote.delete_card("bo").await;
    remote.delete_card("ann").await;
    let (status, third) = sync(&ada, "/api/v1/contact-subscriptions", id).await;
    assert_eq!(status, 200, "{third}");
    assert_eq!((third["deleted"].as_u64(), third["kept"].as_u64()), (Some(1), Some(1)), "{third}");
    assert_eq!(ada.get(&format!("/api/v1/contacts/{bo}")).await.status(), 404);
    let detail: Value = ada.get(&format!("/api/v1/contacts/{ann_id}")).await.json().await.unwrap();
    assert_eq!(detail["archived"], true, "{detail}");
    assert!(detail.get("subscription").is_none(), "Ann is local now: {detail}");

    // Another user sees none of it.
    let bob = server.sign_up("bob").await;
    let list: Value = bob.get("/api/v1/contact-subscriptions").await.json().await.unwrap();
    assert_eq!(list["contact_subscriptions"], json!([]));
    assert_eq!(bob.get(&format!("/api/v1/contact-subscriptions/{id}")).await.status(), 404);
    assert_eq!(sync(&bob, "/api/v1/contact-subscriptions", id).await.0, 404);
    assert_eq!(bob.post(&format!("/api/v1/contact-subscriptions/{id}/test"), json!({})).await.status(), 404);
    let gone = bob.send(reqwest::Method::DELETE, &format!("/api/v1/contact-subscriptions/{id}"), json!({})).await;
    assert_eq!(gone.status(), 404);
    assert!(contacts(&bob).await.is_empty());
    assert_eq!(bob.get(&format!("/api/v1/contacts/{ann_id}")).await.status(), 404);
}

#[tokio::test]
async fn notes_on_a_synced_contact_survive_ten_syncs_and_the_server_wins_each_time() {
    let remote = DavServer::radicale();
    remote.make_book().await;
    remote.put_card("dee", &card("dee-1", "Dee", "Park", "TEL:100\n")).await;
    let (_instance, server) = start();
    let ada = server.sign_up("ada").await;
    let id = subscribe(&ada, &remote, &remote.url("/remy/friends/")).await["id"].as_u64().unwrap();
    assert_eq!(sync(&ada, "/api/v1/contact-subscriptions", id).await.0, 200);
    let dee = find(&ada, "Dee").await.unwrap()["id"].as_u64().unwrap();
    let noted = ada.post(&format!("/api/v1/contacts/{dee}/notes"), json!({ "content": "Likes jazz" })).await;
    assert_eq!(noted.status(), 201);
    for round in 1..=10 {
        // A local edit of a subscribed field is overwritten by the next sync.
        ada.send(reqwest::Method::PUT, &format!("/api/v1/contacts/{dee}"), json!({ "nickname": "local" })).await;
        remote.put_card("dee", &card("dee-1", "Dee", "Park", &format!("TEL:{}\n", 100 + round))).await;
        let (status, done) = sync(&ada, "/api/v1/contact-subscriptions", id).await;
        assert_eq!((status, done["updated"].as_u64()), (200, Some(1)), "round {round}: {done}");
    }
    let detail: Value = ada.get(&format!("/api/v1/contacts/{dee}")).await.json().await.unwrap();
    assert!(detail.to_string().contains("\"110\""), "{detail}");
    assert_eq!(detail["nickname"], "", "the remote card has no nickname: remote wins");
    assert_eq!(contacts(&ada).await.len(), 1, "never doubled");
    let notes: Value = ada.get(&format!("/api/v1/contacts/{dee}/notes")).await.json().await.unwrap();
    assert!(notes.to_string().contains("Likes jazz"), "{notes}");
}

#[tokio::test]
async fn a_password_changed_on_the_server_stops_the_sync_until_the_subscription_is_edited() {
    let mut remote = DavServer::radicale();
    remote.make_book().await;
    remote.put_card("eve", &card("eve-1", "Eve", "Stone", "")).await;
    let (_instance, server) = start();
    let ada = server.sign_up("ada").await;
    let id = subscribe(&ada, &remote, &remote.url("/remy/friends/")).await["id"].as_u64().unwrap();
    assert_eq!(sync(&ada, "/api/v1/contact-subscriptions", id).await.0, 200);

    remote.set_password("secret2");
    let (status, failed) = sync(&ada, "/api/v1/contact-subscriptions", id).await;
    assert_eq!(status, 503, "{failed}");
    assert_eq!(failed["code"], "EXTERNAL_SERVICE_ERROR");
    let state: Value = ada.get(&format!("/api/v1/contact-subscriptions/{id}")).await.json().await.unwrap();
    assert_eq!(state["status"], "stopped", "{state}");
    assert!(state["status_text"].as_str().unwrap().starts_with("Sync stopped, action needed"), "{state}");
    assert_eq!(state["last_error_class"], "credentials");
    assert!(state["terminal_failure_at"].is_string() && state["incident_first_failure_at"].is_string());
    let test: Value =
        ada.post(&format!("/api/v1/contact-subscriptions/{id}/test"), json!({})).await.json().await.unwrap();
    assert_eq!((test["ok"].as_bool(), test["class"].as_str()), (Some(false), Some("credentials")), "{test}");

    // The new password clears the stop.
    let edited = ada
        .send(reqwest::Method::PUT, &format!("/api/v1/contact-subscriptions/{id}"), json!({ "password": "secret2" }))
        .await;
    assert_eq!(edited.status(), 200);
    let edited: Value = edited.json().await.unwrap();
    assert!(edited["terminal_failure_at"].is_null(), "{edited}");
    let (status, done) = sync(&ada, "/api/v1/contact-subscriptions", id).await;
    assert_eq!(status, 200, "{done}");
    let state: Value = ada.get(&format!("/api/v1/contact-subscriptions/{id}")).await.json().await.unwrap();
    assert_eq!(state["status"], "disabled", "healthy again (the schedule is off in this test): {state}");
    assert!(state["incident_first_failure_at"].is_null(), "{state}");

    let events: Value = ada.get("/api/v1/admin/system-events?component=contact_sync").await.json().await.unwrap();
    let types: Vec<&str> =
        events["system_events"].as_array().unwrap().iter().map(|e| e["event_type"].as_str().unwrap()).collect();
    assert!(
        types.contains(&"sync_failed") && types.contains(&"sync_completed") && types.contains(&"sync_started"),
        "{types:?}"
    );
    let failed = events["system_events"].as_array().unwrap().iter().find(|e| e["event_type"] == "sync_failed").unwrap();
    assert_eq!(failed["severity"], "error", "a terminal failure: {failed}");
    assert!(!failed.to_string().contains("secret"), "{failed}");
}

#[tokio::test]
async fn a_stopped_server_is_retried_and_the_sync_recovers() {
    let mut remote = DavServer::radicale();
    remote.make_book().await;
    remote.put_card("fay", &card("fay-1", "Fay", "Moss", "")).await;
    let (_instance, server) = start();
    let ada = server.sign_up("ada").await;
    let id = subscribe(&ada, &remote, &remote.url("/remy/friends/")).await["id"].as_u64().unwrap();
    remote.stop();
    let (status, failed) = sync(&ada, "/api/v1/contact-subscriptions", id).await;
    assert_eq!(status, 503, "{failed}");
    let state: Value = ada.get(&format!("/api/v1/contact-subscriptions/{id}")).await.json().await.unwrap();
    assert_eq!(state["last_error_class"], "unreachable", "{state}");
    assert!(state["terminal_failure_at"].is_null(), "transient: retried, {state}");
    assert_eq!(state["consecutive_failures"], 1);
    remote.start();
    let (status, done) = sync(&ada, "/api/v1/contact-subscriptions", id).await;
    assert_eq!((status, done["created"].as_u64()), (200, Some(1)), "{done}");
    let state: Value = ada.get(&format!("/api/v1/contact-subscriptions/{id}")).await.json().await.unwrap();
    assert_eq!(state["consecutive_failures"], 0, "{state}");
}

#[tokio::test]
async fn a_sync_token_the_server_no_longer_accepts_starts_a_full_pass() {
    let remote = DavServer::radicale();
    remote.make_book().await;
    remote.put_card("gus", &card("gus-1", "Gus", "Hale", "")).await;
    remote.put_card("hal", &card("hal-1", "Hal", "Ives", "")).await;
    let (_instance, server) = start();
    let ada = server.sign_up("ada").await;
    let id = subscribe(&ada, &remote, &remote.url("/remy/friends/")).await["id"].as_u64().unwrap();
    assert_eq!(sync(&ada, "/api/v1/contact-subscriptions", id).await.1["created"], 2);
    remote.forget_sync_tokens();
    remote.delete_card("hal").await;
    remote.put_card("ivy", &card("ivy-1", "Ivy", "Jones", "")).await;
    let (status, done) = sync(&ada, "/api/v1/contact-subscriptions", id).await;
    assert_eq!(status, 200, "{done}");
    assert_eq!(
        (done["created"].as_u64(), done["deleted"].as_u64(), done["unchanged"].as_u64()),
        (Some(1), Some(1), Some(1)),
        "{done}"
    );
    let names: Vec<String> =
        contacts(&ada).await.iter().map(|c| c["firstname"].as_str().unwrap().to_string()).collect();
    assert_eq!(names.len(), 2, "{names:?}");
}

#[tokio::test]
async fn a_xandikos_address_book_comes_in_follows_edits_and_deletes() {
    let remote = DavServer::xandikos();
    remote.put_card("jo", &card("jo-1", "Jo", "King", "TEL:1\n")).await;
    remote.put_card("kim", &card("kim-1", "Kim", "Lowe", "")).await;
    let (_instance, server) = start();
    let ada = server.sign_up("ada").await;
    let sub = subscribe(&ada, &remote, &remote.url("/")).await;
    assert_eq!(sub["url"], remote.url("/user/contacts/addressbook/"), "{sub}");
    let id = sub["id"].as_u64().unwrap();
    assert_eq!(sync(&ada, "/api/v1/contact-subscriptions", id).await.1["created"], 2);
    remote.put_card("jo", &card("jo-1", "Jo", "King", "TEL:2\n")).await;
    remote.delete_card("kim").await;
    let (status, done) = sync(&ada, "/api/v1/contact-subscriptions", id).await;
    assert_eq!(status, 200, "{done}");
    assert_eq!((done["updated"].as_u64(), done["deleted"].as_u64()), (Some(1), Some(1)), "{done}");
    let left = contacts(&ada).await;
    assert_eq!(left.len(), 1);
    assert_eq!(left[0]["firstname"], "Jo");
}

#[tokio::test]
async fn bad_subscriptions_are_refused_naming_the_field() {
    let remote = DavServer::radicale();
    remote.make_book().await;
    let (_instance, server) = start();
    let ada = server.sign_up("ada").await;
    for (body, field) in [
        (json!({ "url": remote.url("/") }), "name"),
        (json!({ "name": "x" }), "url"),
        (json!({ "name": "x", "url": "ftp://example.org/" }), "url"),
        (json!({ "name": "x", "url": remote.url("/"), "username": "remy", "password": "wrong" }), "password"),
        (
            json!({ "name": "x", "url": remote.url("/"), "username": "remy", "password": "secret1", "past_days": 3 }),
            "past_days",
        ),
        (json!({ "name": "", "url": remote.url("/") }), "name"),
    ] {
        let refused = ada.post("/api/v1/contact-subscriptions", body.clone()).await;
        let status = refused.status();
        let answer: Value = refused.json().await.unwrap();
        assert_eq!(status, 400, "{body}: {answer}");
        assert_eq!(answer["details"]["field"], field, "{body}: {answer}");
    }
}

impl DavServer {
    /// The calendar's path.
    fn calendar(&self) -> &'static str {
        match self.kind {
            Kind::Radicale => "/remy/cal/",
            Kind::Xandikos => "/user/calendars/calendar/",
        }
    }

    pub(crate) async fn make_calendar(&self) {
        if self.kind == Kind::Xandikos {
            return;
        }
        let body = r#"<?xml version="1.0"?><C:mkcalendar xmlns:D="DAV:" xmlns:C="urn:ietf:params:xml:ns:caldav"><D:set><D:prop><D:displayname>Plans</D:displayname></D:prop></D:set></C:mkcalendar>"#;
        let made = self.request("MKCALENDAR", self.calendar(), "application/xml", body.into()).await;
        assert_eq!(made.status(), 201, "{}", made.text().await.unwrap_or_default());
    }

    pub(crate) async fn put_event(&self, name: &str, ics: &str) {
        let path = format!("{}{name}.ics", self.calendar());
        let put = self.request("PUT", &path, "text/calendar", ics.replace('\n', "\r\n")).await;
        assert!(put.status().is_success(), "PUT {path}: {} {}", put.status(), put.text().await.unwrap_or_default());
    }

    async fn delete_event(&self, name: &str) {
        let path = format!("{}{name}.ics", self.calendar());
        let deleted = self.request("DELETE", &path, "text/plain", String::new()).await;
        assert!(deleted.status().is_success(), "DELETE {path}: {}", deleted.status());
    }
}

/// `days` from now at `hour`:00 UTC, as iCalendar's UTC form.
fn at(days: i64, hour: i8) -> String {
    let day = jiff::Timestamp::now()
        .to_zoned(jiff::tz::TimeZone::UTC)
        .date()
        .checked_add(jiff::Span::new().days(days))
        .unwrap();
    format!("{}T{:02}0000Z", day.strftime("%Y%m%d"), hour)
}

fn vcalendar(body: &str) -> String {
    format!("BEGIN:VCALENDAR\nVERSION:2.0\nPRODID:-//test//EN\n{body}END:VCALENDAR\n")
}

/// A weekly standup from two days ahead, four times: the second moved to 15:00, the third
/// cancelled by an EXDATE.
fn standup(summary: &str) -> String {
    vcalendar(&format!(
        "BEGIN:VEVENT\nUID:standup-1\nDTSTAMP:{stamp}\nDTSTART:{first}\nDTEND:{first_end}\nRRULE:FREQ=WEEKLY;COUNT=4\n\
         EXDATE:{third}\nSUMMARY:{summary}\nEND:VEVENT\nBEGIN:VEVENT\nUID:standup-1\nDTSTAMP:{stamp}\n\
         RECURRENCE-ID:{second}\nDTSTART:{moved}\nDTEND:{moved_end}\nSUMMARY:{summary} (moved)\nEND:VEVENT\n",
        stamp = at(0, 8),
        first = at(2, 10),
        first_end = at(2, 11),
        third = at(16, 10),
        second = at(9, 10),
        moved = at(9, 15),
        moved_end = at(9, 16),
    ))
}

fn lunch(summary: &str, attendee: &str) -> String {
    vcalendar(&format!(
        "BEGIN:VEVENT\nUID:lunch-1\nDTSTAMP:{}\nDTSTART:{}\nDTEND:{}\nSUMMARY:{summary}\nLOCATION:Canteen\n\
         ATTENDEE;CN=Someone:mailto:{attendee}\nEND:VEVENT\n",
        at(0, 8),
        at(3, 12),
        at(3, 13)
    ))
}

async fn activities(client: &Client) -> Vec<Value> {
    let list: Value = client.get("/api/v1/activities?limit=100").await.json().await.expect("activities");
    let mut all = list["activities"].as_array().expect("activities").clone();
    all.sort_by_key(|a| a["date"].as_str().unwrap_or("").to_string());
    all
}

async fn calendar_round(remote: &DavServer, url: &str) {
    remote.make_calendar().await;
    remote.put_event("standup", &standup("Standup")).await;
    remote.put_event("lunch", &lunch("Lunch with Ann", "Ann@Example.org")).await;
    let (_instance, server) = start();
    let ada = server.sign_up("ada").await;
    let ann = ada
        .post(
            "/api/v1/contacts",
            json!({ "firstname": "Ann", "card": { "emails": [{ "address": "ann@example.org" }] } }),
        )
        .await;
    assert_eq!(ann.status(), 201);
    let ann: Value = ann.json().await.unwrap();
    let ann = ann["contact"]["id"].as_u64().unwrap();
    let body = json!({ "name": "Plans", "url": url, "username": remote.user, "password": remote.password, "sync_enabled": false });
    let made = ada.post("/api/v1/calendars", body).await;
    let status = made.status();
    let made: Value = made.json().await.unwrap();
    assert_eq!(status, 201, "{made}");
    assert_eq!(made["past_days"], 30);
    let id = made["id"].as_u64().unwrap();

    let (status, first) = sync(&ada, "/api/v1/calendars", id).await;
    assert_eq!(status, 200, "{first}");
    assert_eq!(first["created"], 4, "three standups (one moved, one cancelled) and a lunch: {first}");
    let all = activities(&ada).await;
    let titles: Vec<&str> = all.iter().map(|a| a["title"].as_str().unwrap()).collect();
    assert_eq!(titles, ["Standup", "Lunch with Ann", "Standup (moved)", "Standup"], "{all:?}");
    assert!(all.iter().all(|a| a["type"] == "calendar_event"));
    assert_eq!(all[0]["external_ref"], "standup-1");
    assert_eq!(all[1]["contact_ids"], json!([ann]), "the attendee is Ann: {}", all[1]);
    assert_eq!(all[1]["location"], "Canteen");
    let timeline: Value = ada.get(&format!("/api/v1/contacts/{ann}/timeline")).await.json().await.unwrap();
    assert!(timeline.to_string().contains("Lunch with Ann"), "{timeline}");

    // A remote edit overwrites; a deletion removes.
    remote.put_event("standup", &standup("Daily sync")).await;
    remote.delete_event("lunch").await;
    let (status, second) = sync(&ada, "/api/v1/calendars", id).await;
    assert_eq!(status, 200, "{second}");
    assert_eq!((second["updated"].as_u64(), second["deleted"].as_u64()), (Some(3), Some(1)), "{second}");
    let titles: Vec<String> = activities(&ada).await.iter().map(|a| a["title"].as_str().unwrap().to_string()).collect();
    assert_eq!(titles, ["Daily sync", "Daily sync (moved)", "Daily sync"]);
    // Nothing changed: nothing written.
    let (_, third) = sync(&ada, "/api/v1/calendars", id).await;
    assert_eq!((third["created"].as_u64(), third["updated"].as_u64()), (Some(0), Some(0)), "{third}");
}

#[tokio::test]
async fn a_radicale_calendar_becomes_activities_with_recurrences_exceptions_and_attendees() {
    let remote = DavServer::radicale();
    calendar_round(&remote, &remote.url("/")).await;
}

#[tokio::test]
async fn a_xandikos_calendar_becomes_activities_with_recurrences_exceptions_and_attendees() {
    let remote = DavServer::xandikos();
    calendar_round(&remote, &remote.url("/user/calendars/calendar/")).await;
}

/// A plain `.ics` address (no CalDAV) served on loopback, read with `GET`.
#[tokio::test]
async fn an_ics_address_is_read_as_a_calendar() {
    use std::sync::{Arc, Mutex};
    let feed = Arc::new(Mutex::new(vcalendar(
        &standup("Standup")
            .replace("BEGIN:VCALENDAR\nVERSION:2.0\nPRODID:-//test//EN\n", "")
            .replace("END:VCALENDAR\n", ""),
    )));
    let served = feed.clone();
    let correlations: Arc<Mutex<Vec<String>>> = Arc::default();
    let seen = correlations.clone();
    let app = axum::Router::new().route(
        "/team.ics",
        axum::routing::get(move |headers: axum::http::HeaderMap| {
            let body = served.lock().unwrap().replace('\n', "\r\n");
            if let Some(id) = headers.get("x-correlation-id").and_then(|v| v.to_str().ok()) {
                seen.lock().unwrap().push(id.to_string());
            }
            async move { ([("content-type", "text/calendar")], body) }
        }),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    tokio::spawn(async move { axum::serve(listener, app).await });
    let (_instance, server) = start();
    let ada = server.sign_up("ada").await;
    let made = ada
        .post(
            "/api/v1/calendars",
            json!({ "name": "Team", "url": format!("http://127.0.0.1:{port}/team.ics"), "sync_enabled": false }),
        )
        .await;
    let status = made.status();
    let made: Value = made.json().await.unwrap();
    assert_eq!(status, 201, "{made}");
    assert_eq!(made["feed"], true);
    let id = made["id"].as_u64().unwrap();
    let (status, first) = sync(&ada, "/api/v1/calendars", id).await;
    assert_eq!((status, first["created"].as_u64()), (200, Some(3)), "{first}");
    let ids = correlations.lock().unwrap().clone();
    assert!(ids.iter().any(|id| id.starts_with("job:calendar_sync:")), "each request names its sync: {ids:?}");
    *feed.lock().unwrap() = vcalendar("");
    let (_, second) = sync(&ada, "/api/v1/calendars", id).await;
    assert_eq!(second["deleted"], 3, "{second}");
    assert!(activities(&ada).await.is_empty());
}

async fn wait_for_sync(client: &Client, base: &str, id: u64) -> Value {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let state: Value = client.get(&format!("{base}/{id}")).await.json().await.unwrap();
        if state["last_sync_status"] != "" && state["status"] != "syncing" {
            return state;
        }
        assert!(Instant::now() < deadline, "no sync happened: {state}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// A new subscription syncs at once and is on the schedule; each sync is a job run of its own.
#[tokio::test]
async fn a_new_subscription_syncs_at_once_and_each_sync_is_a_job_run() {
    let remote = DavServer::radicale();
    remote.make_book().await;
    remote.put_card("lea", &card("lea-1", "Lea", "Moor", "")).await;
    let (_instance, server) = start();
    let ada = server.sign_up("ada").await;
    let body =
        json!({ "name": "Friends", "url": remote.url("/remy/friends/"), "username": "remy", "password": "secret1" });
    let made: Value = ada.post("/api/v1/contact-subscriptions", body).await.json().await.unwrap();
    let id = made["id"].as_u64().unwrap();
    let state = wait_for_sync(&ada, "/api/v1/contact-subscriptions", id).await;
    assert_eq!((state["status"].as_str(), state["last_counts"]["created"].as_u64()), (Some("ok"), Some(1)), "{state}");
    let next: jiff::Timestamp = state["next_sync_at"].as_str().unwrap().parse().unwrap();
    let last: jiff::Timestamp = state["last_success_at"].as_str().unwrap().parse().unwrap();
    let wait = next.duration_since(last).as_secs();
    assert!((3600..3600 + 360).contains(&wait), "an hour later, spread by up to a tenth: {wait} s");
    assert!(find(&ada, "Lea").await.is_some());
    let runs: Value = ada.get("/api/v1/admin/job-runs?job_name=contact_sync").await.json().await.unwrap();
    let runs = runs["job_runs"].as_array().unwrap();
    assert_eq!(runs.len(), 1, "{runs:?}");
    assert_eq!((runs[0]["result"].as_str(), runs[0]["trigger"].as_str()), (Some("success"), Some("manual")));
    assert!(runs[0]["correlation_id"].as_str().unwrap().starts_with("job:contact_sync:"));
    let health: Value = ada.get("/api/v1/admin/job-runs/health").await.json().await.unwrap();
    assert!(health.to_string().contains("contact_sync"), "{health}");
    let subsystems: Value = ada.get("/api/v1/admin/subsystem-health").await.json().await.unwrap();
    let contact_sync =
        subsystems["subsystems"].as_array().unwrap().iter().find(|s| s["subsystem"] == "contact_sync").cloned();
    assert_eq!(contact_sync.unwrap()["status"], "healthy", "{subsystems}");
}

/// With `CALDAV_BLOCK_PRIVATE_URLS`, a loopback server is refused the way webhooks refuse it.
#[tokio::test]
async fn private_addresses_are_refused_when_the_operator_says_so() {
    let remote = DavServer::radicale();
    remote.make_book().await;
    let server = Instance::new().with("CALDAV_BLOCK_PRIVATE_URLS", "true").spawn();
    let ada = server.sign_up("ada").await;
    for url in [remote.url("/remy/friends/"), "http://localhost:1/".to_string(), "http://[::ffff:127.0.0.1]/".into()] {
        let refused = ada
            .post(
                "/api/v1/contact-subscriptions",
                json!({ "name": "x", "url": url, "username": "remy", "password": "secret1" }),
            )
            .await;
        let status = refused.status();
        let body: Value = refused.json().await.unwrap();
        assert_eq!((status.as_u16(), body["details"]["field"].as_str()), (400, Some("url")), "{url}: {body}");
    }
    let found = ada.post("/api/v1/calendars/discover", json!({ "url": remote.url("/") })).await;
    assert_eq!(found.status(), 400);
}

/// Contact sync failing `ALERT_SYNC_FAILURE_THRESHOLD` times in a row raises `sync:contact_sync`;
/// a sync that works clears it.
#[tokio::test]
async fn sync_failures_past_the_threshold_raise_the_sync_alert_until_a_sync_works() {
    let mut remote = DavServer::radicale();
    remote.make_book().await;
    let server = Instance::new()
        .with("ALERT_SYNC_FAILURE_THRESHOLD", "2")
        .with("ALERT_DISK_USAGE_PERCENT", "0")
        .with("ALERT_JOB_STOPPED_ENABLED", "false")
        .spawn();
    let ada = server.sign_up("ada").await;
    let id = subscribe(&ada, &remote, &remote.url("/remy/friends/")).await["id"].as_u64().unwrap();
    let state_of = |alerts: &Value| {
        alerts["alerts"].as_array().unwrap().iter().find(|a| a["condition"] == "sync:contact_sync").unwrap()["state"]
            .clone()
    };
    remote.stop();
    for n in 1..=2 {
        assert_eq!(sync(&ada, "/api/v1/contact-subscriptions", id).await.0, 503);
        ada.post("/api/v1/admin/trigger-alerts", json!({})).await;
        let alerts: Value = ada.get("/api/v1/admin/alerts").await.json().await.unwrap();
        let expected = if n < 2 { "ok" } else { "alerting" };
        assert_eq!(state_of(&alerts), expected, "after {n} failure(s): {alerts}");
    }
    remote.start();
    assert_eq!(sync(&ada, "/api/v1/contact-subscriptions", id).await.0, 200);
    ada.post("/api/v1/admin/trigger-alerts", json!({})).await;
    let alerts: Value = ada.get("/api/v1/admin/alerts").await.json().await.unwrap();
    assert_eq!(state_of(&alerts), "ok", "{alerts}");
}

/// This server's own CardDAV book leaves out what a subscription brought in (the phone gets it
/// from its source), and serves the user's own contacts as before.
#[tokio::test]
async fn subscribed_contacts_are_not_served_again_by_the_own_carddav_book() {
    let remote = DavServer::radicale();
    remote.make_book().await;
    remote.put_card("mo", &card("mo-1", "Mo", "Reed", "")).await;
    let server = Instance::new().with("CARDDAV_ENABLED", "true").spawn();
    let ada = server.sign_up("ada").await;
    crate::crm::new_contact(&ada, "Local", "Only").await;
    let id = subscribe(&ada, &remote, &remote.url("/remy/friends/")).await["id"].as_u64().unwrap();
    let dav = |method: &str, path: String, depth: &str, body: &str| {
        server
            .client
            .request(reqwest::Method::from_bytes(method.as_bytes()).unwrap(), server.url(&path))
            .basic_auth("ada", Some(crate::helpers::PASSWORD))
            .header("Depth", depth)
            .header("Content-Type", "application/xml")
            .body(body.to_string())
            .send()
    };
    let book = format!("/carddav/{}/contacts/", ada.id);
    let props = r#"<?xml version="1.0"?><D:propfind xmlns:D="DAV:"><D:prop><D:getetag/></D:prop></D:propfind>"#;
    let sync_body = r#"<D:sync-collection xmlns:D="DAV:"><D:sync-token/><D:sync-level>1</D:sync-level><D:prop><D:getetag/></D:prop></D:sync-collection>"#;
    let before = dav("REPORT", book.clone(), "1", sync_body).await.unwrap().text().await.unwrap();
    let token = before
        .split("<sync-token>")
        .nth(1)
        .or_else(|| before.split("sync-token>").nth(1))
        .map(|t| t.split('<').next().unwrap().to_string());
    assert_eq!(sync(&ada, "/api/v1/contact-subscriptions", id).await.0, 200);
    let mo = find(&ada, "Mo").await.unwrap()["id"].as_u64().unwrap();
    let listing = dav("PROPFIND", book.clone(), "1", props).await.unwrap().text().await.unwrap();
    assert_eq!(listing.matches(".vcf").count(), 1, "only the local contact: {listing}");
    // Served (were it served) under the card's own UID.
    let mo_name = "mo-1".to_string();
    assert_eq!(find(&ada, "Mo").await.unwrap()["id"].as_u64(), Some(mo));
    assert!(!listing.contains(&mo_name), "{listing}");
    let get = dav("GET", format!("{book}{mo_name}.vcf"), "0", "").await.unwrap();
    assert_eq!(get.status(), 404);
    let full = dav("REPORT", book.clone(), "1", sync_body).await.unwrap().text().await.unwrap();
    assert_eq!(full.matches(".vcf").count(), 1, "{full}");
    let token = token.expect("a sync token");
    let incremental = sync_body.replace("<D:sync-token/>", &format!("<D:sync-token>{token}</D:sync-token>"));
    let changes = dav("REPORT", book.clone(), "1", &incremental).await.unwrap().text().await.unwrap();
    assert!(changes.contains(&mo_name) && changes.contains("404"), "Mo reads as not there: {changes}");
    assert!(!changes.contains("getetag"), "no card of Mo's goes out: {changes}");
}

/// A collection removed on the server is terminal ("gone"): the schedule leaves it until edited.
#[tokio::test]
async fn a_collection_removed_on_the_server_stops_the_sync() {
    let remote = DavServer::radicale();
    remote.make_book().await;
    remote.put_card("pat", &card("pat-1", "Pat", "Quill", "")).await;
    let (_instance, server) = start();
    let ada = server.sign_up("ada").await;
    let id = subscribe(&ada, &remote, &remote.url("/remy/friends/")).await["id"].as_u64().unwrap();
    assert_eq!(sync(&ada, "/api/v1/contact-subscriptions", id).await.0, 200);
    let removed = remote.request("DELETE", "/remy/friends/", "text/plain", String::new()).await;
    assert!(removed.status().is_success(), "{}", removed.status());
    let (status, failed) = sync(&ada, "/api/v1/contact-subscriptions", id).await;
    assert_eq!(status, 503, "{failed}");
    let state: Value = ada.get(&format!("/api/v1/contact-subscriptions/{id}")).await.json().await.unwrap();
    assert_eq!(
        (state["status"].as_str(), state["last_error_class"].as_str()),
        (Some("stopped"), Some("gone")),
        "{state}"
    );
    assert!(state["next_sync_at"].is_null(), "off the schedule: {state}");
    assert!(find(&ada, "Pat").await.is_some(), "what it brought in stays");
}

/// RFC 6764's well-known address (which Radicale redirects with a 301) leads to the address book; the
/// existing web client's "sync right after creating" gets the first sync's outcome, not a 409.
#[tokio::test]
async fn the_well_known_address_leads_to_the_book_and_a_sync_asked_during_the_first_joins_it() {
    let remote = DavServer::radicale();
    remote.make_book().await;
    remote.put_card("quin", &card("quin-1", "Quin", "Rowe", "")).await;
    let (_instance, server) = start();
    let ada = server.sign_up("ada").await;
    let body = json!({ "name": "Friends", "url": remote.url("/.well-known/carddav"), "username": "remy", "password": "secret1" });
    let made = ada.post("/api/v1/contact-subscriptions", body).await;
    let status = made.status();
    let made: Value = made.json().await.unwrap();
    assert_eq!(status, 201, "{made}");
    assert_eq!(made["url"], remote.url("/remy/friends/"), "{made}");
    let id = made["id"].as_u64().unwrap();
    let (status, answer) = sync(&ada, "/api/v1/contact-subscriptions", id).await;
    assert_eq!(status, 200, "{answer}");
    assert_eq!(answer["message"], "Contact sync completed");
    assert!(find(&ada, "Quin").await.is_some());
    assert_eq!(contacts(&ada).await.len(), 1, "one sync's worth, never doubled");
}
