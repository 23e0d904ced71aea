//! The web client: its flows in a real headless Chromium (tests/browser/flows.py, Playwright and
//! axe-core pinned in tests/requirements-browser.txt), and at the HTTP level what a browser test
//! cannot see well: the security headers, CSRF and cross-site refusals, the stale-edit conflict,
//! and per-user isolation on every page and form.

use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::time::Duration;

use serde_json::{Value, json};

use crate::helpers::{Client, Cred, Instance, TestServer, set_cookie, wait_bounded};

mod console;
mod duplicates;
mod external;
mod fields;
mod households;
mod integrations;
mod shares;
mod subscriptions;

fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).parent().expect("workspace root").to_path_buf()
}

/// A browser-like client of the web pages: the session cookie, the CSRF cookie, no redirects
/// followed (the tests read them).
struct Browser {
    base: String,
    http: reqwest::Client,
    session: String,
    csrf: String,
}

impl Browser {
    async fn of(server: &TestServer, api: &Client) -> Browser {
        let Cred::Cookie(session) = api.cred.clone() else { panic!("a session client") };
        let http = reqwest::Client::builder()
            .redirect(reqwest::redirect::Policy::none())
            .timeout(Duration::from_secs(10))
            .build()
            .expect("client");
        let first = http.get(server.url("/login")).send().await.expect("login page");
        let csrf = set_cookie(&first, "csrf").expect("a csrf cookie on the first page");
        Browser { base: server.url(""), http, session, csrf }
    }

    fn cookies(&self) -> String {
        format!("auth_token={}; csrf={}", self.session, self.csrf)
    }

    async fn get(&self, path: &str) -> reqwest::Response {
        let request = self.http.get(format!("{}{path}", self.base)).header("cookie", self.cookies());
        request.header("accept", "text/html").send().await.expect("get")
    }

    /// Posts `fields` as a form, with the CSRF token unless `fields` names its own `_csrf`.
    async fn post(&self, path: &str, fields: &[(&str, &str)]) -> reqwest::Response {
        let mut form: Vec<(&str, &str)> = fields.to_vec();
        if !fields.iter().any(|(k, _)| *k == "_csrf") {
            form.push(("_csrf", &self.csrf));
        }
        self.http
            .post(format!("{}{path}", self.base))
            .header("cookie", self.cookies())
            .form(&form)
            .send()
            .await
            .expect("post")
    }
}

async fn contact(api: &Client, first: &str) -> u64 {
    let created = api.post("/api/v1/contacts", json!({ "firstname": first, "lastname": "Example" })).await;
    assert_eq!(created.status(), 201);
    let body: Value = created.json().await.expect("json");
    body["contact"]["id"].as_u64().expect("id")
}

async fn total(api: &Client) -> u64 {
    let list: Value = api.get("/api/v1/contacts?include_archived=true").await.json().await.expect("json");
    list["total"].as_u64().expect("total")
}

#[tokio::test(flavor = "multi_thread")]
async fn pages_carry_security_headers_and_assets_are_content_addressed() {
    let server = Instance::new().spawn();
    let page = server.client.get(server.url("/login")).send().await.expect("login page");
    assert_eq!(page.status(), 200);
    let headers = page.headers().clone();
    let csp = headers["content-security-policy"].to_str().unwrap();
    for directive in ["default-src 'none'", "script-src 'self'", "style-src 'self'", "frame-ancestors 'none'"] {
        assert!(csp.contains(directive), "{csp} lacks {directive}");
    }
    assert!(!csp.contains("unsafe-inline"), "{csp}");
    assert_eq!(headers["x-frame-options"], "DENY");
    assert_eq!(headers["x-content-type-options"], "nosniff");
    assert_eq!(headers["referrer-policy"], "same-origin");
    let csrf_line = headers
        .get_all("set-cookie")
        .iter()
        .filter_map(|v| v.to_str().ok())
        .find(|c| c.starts_with("csrf="))
        .expect("csrf cookie")
        .to_string();
    assert!(csrf_line.contains("HttpOnly") && csrf_line.contains("SameSite=Strict"), "{csrf_line}");

    let html = page.text().await.unwrap();
    assert!(!html.contains("<script>") && !html.contains("style="), "inline script or style in the page");
    let css = html.split("href=\"/assets/app.").nth(1).and_then(|r| r.split('"').next()).expect("stylesheet link");
    let asset = server.get(&format!("/assets/app.{css}")).await;
    assert_eq!(asset.status(), 200);
    assert_eq!(asset.headers()["cache-control"], "public, max-age=31536000, immutable");
    assert!(asset.headers()["content-type"].to_str().unwrap().starts_with("text/css"));
    assert_eq!(server.get("/assets/app.000000000000.css").await.status(), 404);

    // The whole page weight stays small: HTML, CSS and script of the sign-in page.
    let js = html.split("src=\"/assets/app.").nth(1).and_then(|r| r.split('"').next()).expect("script");
    let js_len = server.get(&format!("/assets/app.{js}")).await.bytes().await.unwrap().len();
    let css_len = server.get(&format!("/assets/app.{css}")).await.bytes().await.unwrap().len();
    assert!(html.len() + js_len + css_len < 100 * 1024, "{} + {js_len} + {css_len} bytes", html.len());
}

#[tokio::test(flavor = "multi_thread")]
async fn a_browser_gets_pages_and_an_api_client_gets_json() {
    let server = Instance::new().spawn();
    let html = server.client.get(server.url("/no/such/page")).header("accept", "text/html").send().await.unwrap();
    assert_eq!(html.status(), 404);
    assert!(html.headers()["content-type"].to_str().unwrap().starts_with("text/html"));
    assert!(html.text().await.unwrap().contains("There is no page at this address."));
    let api = server.client.get(server.url("/api/v1/nothing")).header("accept", "text/html").send().await.unwrap();
    assert_eq!(api.status(), 404);
    let body: Value = api.json().await.unwrap();
    assert_eq!(body["code"], "NOT_FOUND");
    let plain = server.get("/no/such/page").await;
    assert_eq!(plain.status(), 404);
    assert_eq!(plain.json::<Value>().await.unwrap()["code"], "NOT_FOUND");

    // Not signed in: the pages send you to sign in and back.
    let anonymous = reqwest::Client::builder().redirect(reqwest::redirect::Policy::none()).build().unwrap();
    let to_login = anonymous.get(server.url("/contacts?q=a")).send().await.unwrap();
    assert_eq!(to_login.status(), 303);
    assert_eq!(to_login.headers()["location"], "/login?next=/contacts%3Fq%3Da");
}

#[tokio::test(flavor = "multi_thread")]
async fn state_changing_forms_need_the_token_and_this_site() {
    let server = Instance::new().spawn();
    let api = server.sign_up("ada").await;
    let web = Browser::of(&server, &api).await;

    let no_token = web
        .http
        .post(format!("{}/contacts", web.base))
        .header("cookie", web.cookies())
        .form(&[("firstname", "Mallory")])
        .send()
        .await
        .unwrap();
    assert_eq!(no_token.status(), 403);
    let wrong = web.post("/contacts", &[("firstname", "Mallory"), ("_csrf", "x".repeat(32).as_str())]).await;
    assert_eq!(wrong.status(), 403);
    assert!(wrong.text().await.unwrap().contains("Reload the page"));
    let cross_site = web
        .http
        .post(format!("{}/contacts", web.base))
        .header("cookie", web.cookies())
        .header("origin", "https://evil.example")
        .form(&[("firstname", "Mallory"), ("_csrf", web.csrf.as_str())])
        .send()
        .await
        .unwrap();
    assert_eq!(cross_site.status(), 403);
    assert_eq!(total(&api).await, 0, "a refused form changed nothing");
    // Behind a reverse proxy the browser's origin is the public name the proxy forwards.
    let proxied = web
        .http
        .post(format!("{}/contacts", web.base))
        .header("cookie", web.cookies())
        .header("origin", "https://crm.example.org")
        .header("x-forwarded-host", "crm.example.org")
        .form(&[("firstname", "Proxied"), ("_csrf", web.csrf.as_str())])
        .send()
        .await
        .unwrap();
    assert_eq!(proxied.status(), 303);
    assert_eq!(total(&api).await, 1);

    let created =
        web.post("/contacts", &[("firstname", "Grace"), ("lastname", "Hopper"), ("email", "g@navy.mil")]).await;
    assert_eq!(created.status(), 303);
    let location = created.headers()["location"].to_str().unwrap().to_string();
    assert!(location.starts_with("/contacts/") && location.ends_with("?notice=created"), "{location}");
    assert_eq!(total(&api).await, 2);

    // A bad field comes back named, with what was typed kept.
    let bad = web.post("/contacts", &[("firstname", "Typo"), ("birthday", "31.02.1990")]).await;
    assert_eq!(bad.status(), 400);
    let page = bad.text().await.unwrap();
    assert!(page.contains("birthday: must be YYYY-MM-DD"), "{page}");
    assert!(page.contains("value=\"31.02.1990\"") && page.contains("value=\"Typo\""));
    assert_eq!(total(&api).await, 2);

    // What makes a contact valid is the domain's one rule, whichever door: a nickname and an
    // email without a first name are refused here as by the API, naming the first-name field.
    let nameless = web.post("/contacts", &[("nickname", "Amazing"), ("email", "grace@navy.mil")]).await;
    assert_eq!(nameless.status(), 400);
    let page = nameless.text().await.unwrap();
    assert!(page.contains("a first name is required"), "{page}");
    assert!(page.contains("value=\"Amazing\""), "what was typed is kept");
    let refused = api.post("/api/v1/contacts", json!({ "nickname": "Amazing", "email": "grace@navy.mil" })).await;
    assert_eq!(refused.status(), 400);
    let body = refused.text().await.unwrap();
    assert!(body.contains("card.name") && body.contains("a first name is required"), "{body}");
    assert_eq!(total(&api).await, 2);
}

#[tokio::test(flavor = "multi_thread")]
async fn a_stale_edit_is_refused_and_the_current_version_offered() {
    let server = Instance::new().spawn();
    let api = server.sign_up("ada").await;
    let web = Browser::of(&server, &api).await;
    let id = contact(&api, "Grace").await;
    let form = web.get(&format!("/contacts/{id}/edit")).await.text().await.unwrap();
    let revision =
        form.split("name=\"revision\" value=\"").nth(1).and_then(|r| r.split('"').next()).unwrap().to_string();

    // A phone changes the contact meanwhile.
    let elsewhere = api
        .request(reqwest::Method::PUT, &format!("/api/v1/contacts/{id}"))
        .json(&json!({ "org": "Navy" }))
        .send()
        .await
        .unwrap();
    assert_eq!(elsewhere.status(), 200);

    let stale = web
        .post(
            &format!("/contacts/{id}"),
            &[("revision", revision.as_str()), ("firstname", "Amazing"), ("lastname", "Grace")],
        )
        .await;
    assert_eq!(stale.status(), 409);
    let page = stale.text().await.unwrap();
    assert!(page.contains("was changed elsewhere") && page.contains("Navy"), "{page}");
    assert!(page.contains("value=\"Amazing\""), "what was typed is kept");
    let now: Value = api.get(&format!("/api/v1/contacts/{id}")).await.json().await.unwrap();
    assert_eq!(now["firstname"], "Grace", "the stale edit wrote nothing");
    assert_eq!(now["org"], "Navy");

    // Saving again from the offered form (it carries the current revision) applies the edit.
    let current = now["revision"].as_u64().unwrap().to_string();
    let retry = web
        .post(
            &format!("/contacts/{id}"),
            &[("revision", current.as_str()), ("firstname", "Amazing"), ("lastname", "Grace"), ("org", "Navy")],
        )
        .await;
    assert_eq!(retry.status(), 303);
    let after: Value = api.get(&format!("/api/v1/contacts/{id}")).await.json().await.unwrap();
    assert_eq!((after["firstname"].as_str(), after["org"].as_str()), (Some("Amazing"), Some("Navy")));
}

#[tokio::test(flavor = "multi_thread")]
async fn no_page_or_form_reaches_another_users_data() {
    let server = Instance::new().spawn();
    let ada = server.sign_up("ada").await;
    let bob = server.sign_up("bob").await;
    let id = contact(&ada, "Secretive").await;
    let note = ada.post("/api/v1/notes", json!({ "content": "the hidden plan", "contact_id": id })).await;
    assert_eq!(note.status(), 201);
    let reminder = ada
        .post(
            &format!("/api/v1/contacts/{id}/reminders"),
            json!({ "message": "hidden reminder", "remind_at": "2026-01-01", "recurrence": "yearly" }),
        )
        .await;
    assert_eq!(reminder.status(), 201);
    let reminder_id = reminder.json::<Value>().await.unwrap()["reminder"]["id"].as_u64().expect("reminder id");
    let web = Browser::of(&server, &bob).await;

    for path in [format!("/contacts/{id}"), format!("/contacts/{id}/edit"), format!("/contacts/{id}/timeline")] {
        assert_eq!(web.get(&path).await.status(), 404, "{path}");
    }
    let network = web.get("/network").await.text().await.unwrap();
    assert!(!network.contains("Secretive"));
    let link = format!("href=\"/contacts/{id}\"");
    for (path, what) in [
        ("/contacts", "Secretive"),
        ("/search?q=Secretive", link.as_str()),
        ("/search?q=hidden", "hidden plan"),
        ("/", "Secretive"),
        ("/reminders", "hidden reminder"),
    ] {
        let page = web.get(path).await;
        assert_eq!(page.status(), 200, "{path}");
        assert!(!page.text().await.unwrap().contains(what), "{path} shows {what}");
    }
    let fragment = web.get("/contacts?q=secretive&fragment=1").await.text().await.unwrap();
    assert!(!fragment.contains("Secretive"));

    let attempts: Vec<(String, Vec<(&str, &str)>)> = vec![
        (format!("/contacts/{id}"), vec![("revision", "1"), ("firstname", "Owned")]),
        (format!("/contacts/{id}/flags"), vec![("archived", "1")]),
        (format!("/contacts/{id}/notes"), vec![("content", "planted")]),
        (
            format!("/contacts/{id}/reminders"),
            vec![("message", "planted"), ("remind_at", "2026-01-01"), ("recurrence", "once")],
        ),
        (format!("/reminders/{reminder_id}/complete"), vec![]),
        (format!("/contacts/{id}/activities"), vec![("title", "planted"), ("date", "2026-01-01")]),
        (format!("/contacts/{id}/life-events"), vec![("type", "planted")]),
        (format!("/contacts/{id}/gifts"), vec![("description", "planted")]),
        (format!("/contacts/{id}/agenda"), vec![("content", "planted")]),
        (format!("/contacts/{id}/relationships"), vec![("target_id", "1"), ("type", "friend")]),
        (format!("/contacts/{id}/delete"), vec![]),
    ];
    for (path, fields) in attempts {
        let response = web.post(&path, &fields).await;
        assert_eq!(response.status(), 404, "POST {path}");
    }
    let still: Value = ada.get(&format!("/api/v1/contacts/{id}")).await.json().await.unwrap();
    assert_eq!((still["firstname"].as_str(), still["archived"].as_bool()), (Some("Secretive"), Some(false)));
    let notes: Value = ada.get(&format!("/api/v1/contacts/{id}/notes")).await.json().await.unwrap();
    assert_eq!(notes["notes"].as_array().map(Vec::len), Some(1), "{notes}");
    let reminders: Value = ada.get(&format!("/api/v1/contacts/{id}/reminders")).await.json().await.unwrap();
    assert_eq!(reminders["reminders"].as_array().map(Vec::len), Some(1), "{reminders}");
    let detail: Value = ada.get(&format!("/api/v1/contacts/{id}/detail")).await.json().await.unwrap();
    for list in ["activities", "life_events", "gifts", "agenda", "relationship_edges"] {
        assert_eq!(detail[list].as_array().map(Vec::len), Some(0), "{list}: {detail}");
    }
    // A photo sent to another user's contact is refused before it is read.
    let boundary = "web-boundary";
    let body = format!(
        "--{boundary}\r\nContent-Disposition: form-data; name=\"_csrf\"\r\n\r\n{}\r\n--{boundary}\r\nContent-Disposition: form-data; name=\"photo\"; filename=\"x.png\"\r\nContent-Type: image/png\r\n\r\n\u{89}PNG\r\n--{boundary}--\r\n",
        web.csrf
    );
    let photo = web
        .http
        .post(format!("{}/contacts/{id}/photo", web.base))
        .header("cookie", web.cookies())
        .header("content-type", format!("multipart/form-data; boundary={boundary}"))
        .body(body)
        .send()
        .await
        .unwrap();
    assert_eq!(photo.status(), 404);
    assert_eq!(total(&bob).await, 0);

    // A token scoped to contact sync opens no page.
    let token: Value =
        ada.post("/api/v1/api-tokens", json!({ "name": "phone", "scope": "carddav" })).await.json().await.unwrap();
    let carddav = web
        .http
        .get(format!("{}/contacts/{id}", web.base))
        .bearer_auth(token["token"].as_str().expect("token"))
        .send()
        .await
        .unwrap();
    assert_eq!(carddav.status(), 403);
}

fn python() -> PathBuf {
    let python = std::env::var_os("MYCORRHIZAL_TEST_PYTHON")
        .map(PathBuf::from)
        .unwrap_or_else(|| repo().join(".venv/bin/python"));
    assert!(
        python.exists(),
        "no test venv at {}: run ./scripts/test.sh, which installs tests/requirements*.txt into .venv",
        python.display()
    );
    python
}

fn chromium() -> PathBuf {
    let path = std::env::var_os("CHROMIUM").map(PathBuf::from).unwrap_or_else(|| PathBuf::from("/usr/bin/chromium"));
    assert!(
        path.exists(),
        "Chromium is missing at {}: the browser tests need Debian's `chromium` (./scripts/test.sh installs it when run as root; otherwise `apt-get install chromium`)",
        path.display()
    );
    path
}

#[tokio::test(flavor = "multi_thread")]
async fn every_flow_works_in_a_real_browser() {
    let (python, chromium) = (python(), chromium());
    let server = Instance::new().with("RATE_LIMIT_AUTH_BURST", "1000").with("RATE_LIMIT_AUTH_INTERVAL_MS", "1").spawn();
    let artifacts = repo().join(".artifacts/browser");
    let _ = std::fs::remove_dir_all(&artifacts);
    let output = tempfile::NamedTempFile::new().expect("temp file");
    let mut child = Command::new(python)
        .arg(repo().join("tests/browser/flows.py"))
        .arg(server.url(""))
        .arg(&artifacts)
        .env("CHROMIUM", chromium)
        .stdout(output.reopen().expect("reopen"))
        .stderr(output.reopen().expect("reopen"))
        .stdin(Stdio::null())
        .spawn()
        .expect("start the browser flows");
    let status = wait_bounded(&mut child, Duration::from_secs(600));
    let report = std::fs::read_to_string(output.path()).unwrap_or_default();
    println!("{report}\nscreenshots and reports: {}", artifacts.display());
    assert!(status.success(), "the browser flows failed:\n{report}");
    for shot in [
        "desktop-dashboard.png",
        "desktop-contact.png",
        "phone-dashboard.png",
        "phone-contact.png",
        "desktop-household.png",
        "phone-household.png",
        "phone-contact-files.png",
    ] {
        assert!(artifacts.join(shot).exists(), "{shot} was not saved");
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn a_forgotten_password_is_reset_from_the_mailed_link() {
    let (port, received) = crate::reset::smtp_sink().await;
    let server = Instance::new()
        .with("SMTP_HOST", "127.0.0.1")
        .with("SMTP_PORT", &port.to_string())
        .with("SMTP_TLS", "none")
        .with("FRONTEND_URL", "https://crm.example.org")
        .spawn();
    let ada = server.sign_up("ada").await;
    let web = Browser::of(&server, &ada).await;
    let login = web.get("/login").await.text().await.unwrap();
    assert!(login.contains("href=\"/forgot-password\""));

    let unknown = web.post("/forgot-password", &[("email", "nobody@example.org")]).await;
    let known = web.post("/forgot-password", &[("email", "ada@example.org")]).await;
    assert_eq!((unknown.status(), known.status()), (reqwest::StatusCode::OK, reqwest::StatusCode::OK));
    assert_eq!(unknown.text().await.unwrap(), known.text().await.unwrap(), "the same page either way");
    let mail = crate::reset::wait_for_mail(&received).await.replace("=\n", "").replace("=3D", "=");
    let link = mail.split("https://crm.example.org").nth(1).and_then(|r| r.split_whitespace().next()).expect("link");
    assert!(link.starts_with("/reset-password?token="), "{link}");
    let token = link.trim_start_matches("/reset-password?token=").to_string();

    let form = web.get(link).await.text().await.unwrap();
    assert!(form.contains(&format!("name=\"token\" value=\"{token}\"")));
    let weak = web.post("/reset-password", &[("token", token.as_str()), ("password", "123456")]).await;
    assert_eq!(weak.status(), 400);
    assert!(weak.text().await.unwrap().contains("password:"));
    let done = web.post("/reset-password", &[("token", token.as_str()), ("password", "gills-and-spores-11")]).await;
    assert_eq!(done.status(), 303);
    assert_eq!(done.headers()["location"], "/login?notice=password_reset");
    assert_eq!(ada.get("/api/v1/users/me").await.status(), 401, "the old session ended");
    server.sign_in("ada", "gills-and-spores-11").await;
    let again = web.post("/reset-password", &[("token", token.as_str()), ("password", "another-pass-22-x")]).await;
    assert_eq!(again.status(), 400, "the link works once");
}

#[tokio::test(flavor = "multi_thread")]
async fn an_edit_keeps_what_the_form_does_not_show() {
    let server = Instance::new().spawn();
    let api = server.sign_up("ada").await;
    let web = Browser::of(&server, &api).await;
    // An imported card: only a full name, a nickname the form shows, and a URL it does not.
    let card = json!({ "name": { "full": "Dr. Grace Brewster Murray Hopper" }, "nicknames": [{ "name": "Amazing Grace" }],
        "links": [{ "uri": "https://example.org/grace" }] });
    let created = api.post("/api/v1/contacts", json!({ "card": card })).await;
    assert_eq!(created.status(), 201);
    let created: Value = created.json().await.unwrap();
    let id = created["contact"]["id"].as_u64().unwrap();
    let revision = created["contact"]["revision"].as_u64().unwrap().to_string();
    let saved = web
        .post(
            &format!("/contacts/{id}"),
            &[("revision", revision.as_str()), ("nickname", "Amazing Grace"), ("org", "US Navy")],
        )
        .await;
    assert_eq!(saved.status(), 303);
    let after: Value = api.get(&format!("/api/v1/contacts/{id}")).await.json().await.unwrap();
    assert_eq!(after["card"]["name"]["full"], "Dr. Grace Brewster Murray Hopper", "{after}");
    assert_eq!(after["org"], "US Navy");
    assert_eq!(after["card"]["links"][0]["uri"], "https://example.org/grace", "{after}");
}

/// The import page links the account bundle's download and takes one in: everything lands in the
/// viewer's account; a damaged file is shown on the page with what is wrong, and nothing lands.
#[tokio::test]
async fn an_account_bundle_is_downloaded_and_brought_in_from_the_import_page() {
    let server = Instance::new().spawn();
    let ada = server.sign_up("ada").await;
    let bob = server.sign_up("bob").await;
    contact(&ada, "Packed").await;
    contact(&ada, "Moving").await;
    let web = Browser::of(&server, &bob).await;
    let page = web.get("/import").await.text().await.unwrap();
    assert!(page.contains("href=\"/api/v1/export/bundle\"") && page.contains("action=\"/import/bundle\""), "{page}");
    let bundle = ada.get("/api/v1/export/bundle").await.bytes().await.unwrap().to_vec();
    let send = |bytes: Vec<u8>| {
        let boundary = "web-bundle-boundary";
        let mut body = format!(
            "--{boundary}\r\nContent-Disposition: form-data; name=\"_csrf\"\r\n\r\n{}\r\n--{boundary}\r\nContent-Disposition: form-data; name=\"file\"; filename=\"b.zip\"\r\nContent-Type: application/zip\r\n\r\n",
            web.csrf
        )
        .into_bytes();
        body.extend_from_slice(&bytes);
        body.extend_from_slice(format!("\r\n--{boundary}--\r\n").as_bytes());
        web.http
            .post(format!("{}/import/bundle", web.base))
            .header("cookie", web.cookies())
            .header("content-type", format!("multipart/form-data; boundary={boundary}"))
            .body(body)
            .send()
    };
    let damaged = send(bundle[..bundle.len() / 2].to_vec()).await.unwrap();
    assert_eq!(damaged.status(), 400);
    assert!(damaged.text().await.unwrap().contains("role=\"alert\""));
    assert_eq!(total(&bob).await, 0, "nothing of a damaged bundle lands");
    let done = send(bundle).await.unwrap();
    assert_eq!(done.status(), 200);
    assert!(done.text().await.unwrap().contains("2 records added"));
    assert_eq!(total(&bob).await, 2);
    assert_eq!(total(&ada).await, 2, "ada keeps hers");
}

impl Browser {
    /// Posts a multipart form: `fields` as text parts (the CSRF token added unless named), and
    /// one file part `file_field` named `file_name` of `content_type`.
    async fn upload(
        &self,
        path: &str,
        fields: &[(&str, &str)],
        file_field: &str,
        file_name: &str,
        content_type: &str,
        bytes: &[u8],
    ) -> reqwest::Response {
        let boundary = "web-upload-boundary-7300";
        let mut body = Vec::new();
        let mut all: Vec<(&str, &str)> = fields.to_vec();
        if !fields.iter().any(|(k, _)| *k == "_csrf") {
            all.push(("_csrf", &self.csrf));
        }
        for (name, value) in all {
            body.extend_from_slice(
                format!("--{boundary}\r\nContent-Disposition: form-data; name=\"{name}\"\r\n\r\n{value}\r\n")
                    .as_bytes(),
            );
        }
        body.extend_from_slice(
            format!(
                "--{boundary}\r\nContent-Disposition: form-data; name=\"{file_field}\"; filename=\"{file_name}\"\r\nContent-Type: {content_type}\r\n\r\n"
            )
            .as_bytes(),
        );
        body.extend_from_slice(bytes);
        body.extend_from_slice(format!("\r\n--{boundary}--\r\n").as_bytes());
        self.http
            .post(format!("{}{path}", self.base))
            .header("cookie", self.cookies())
            .header("content-type", format!("multipart/form-data; boundary={boundary}"))
            .body(body)
            .send()
            .await
            .expect("upload")
    }
}

fn location(response: &reqwest::Response) -> String {
    response.headers().get("location").and_then(|v| v.to_str().ok()).unwrap_or("").to_string()
}

#[tokio::test(flavor = "multi_thread")]
async fn files_are_kept_with_a_contact_from_its_page() {
    let server = Instance::new().with("ATTACHMENT_QUOTA_MB", "1").spawn();
    let api = server.sign_up("ada").await;
    let web = Browser::of(&server, &api).await;
    let id = contact(&api, "Rosalind").await;
    let page = web.get(&format!("/contacts/{id}")).await.text().await.unwrap();
    assert!(page.contains("No files yet.") && page.contains(&format!("action=\"/contacts/{id}/attachments\"")));

    let photo51 = b"%PDF-1.4 diffraction pattern".to_vec();
    let forged = web
        .upload(
            &format!("/contacts/{id}/attachments"),
            &[("_csrf", "nope")],
            "file",
            "x.pdf",
            "application/pdf",
            &photo51,
        )
        .await;
    assert_eq!(forged.status(), 403);
    let uploaded = web
        .upload(&format!("/contacts/{id}/attachments"), &[], "file", "Photo 51.pdf", "application/pdf", &photo51)
        .await;
    assert_eq!(uploaded.status(), 303);
    let listed: Value = api.get(&format!("/api/v1/contacts/{id}/attachments")).await.json().await.unwrap();
    assert_eq!(listed["total"], 1, "{listed}");
    let file = listed["attachments"][0]["id"].as_u64().expect("id");
    assert_eq!(listed["attachments"][0]["original_name"], "Photo 51.pdf");
    assert_eq!(listed["attachments"][0]["content_type"], "application/pdf");
    let page = web.get(&format!("/contacts/{id}")).await.text().await.unwrap();
    assert!(page.contains(&format!("href=\"/attachments/{file}\"")) && page.contains("Photo 51.pdf"), "{page}");

    let download = web.get(&format!("/attachments/{file}")).await;
    assert_eq!(download.status(), 200);
    assert_eq!(download.headers()["content-type"], "application/pdf");
    assert_eq!(download.headers()["content-disposition"], "inline; filename=\"Photo 51.pdf\"");
    assert_eq!(download.headers()["x-content-type-options"], "nosniff");
    assert_eq!(download.bytes().await.unwrap().to_vec(), photo51);
    // A type a browser could run is never shown inline.
    let html = web
        .upload(&format!("/contacts/{id}/attachments"), &[], "file", "x.html", "text/html", b"<script>1</script>")
        .await;
    assert_eq!(html.status(), 303);
    let listed: Value = api.get(&format!("/api/v1/contacts/{id}/attachments")).await.json().await.unwrap();
    let page_file = listed["attachments"][1]["id"].as_u64().expect("id");
    let download = web.get(&format!("/attachments/{page_file}")).await;
    assert!(download.headers()["content-disposition"].to_str().unwrap().starts_with("attachment;"));

    // The API's rules: no file, and the account's quota (1 MB here), come back on the page.
    let empty = web.upload(&format!("/contacts/{id}/attachments"), &[], "other", "", "text/plain", b"").await;
    assert_eq!(empty.status(), 400);
    assert!(empty.text().await.unwrap().contains("file: is required"));
    let big = vec![7u8; 700 * 1024];
    let first = web
        .upload(&format!("/contacts/{id}/attachments"), &[], "file", "a.bin", "application/octet-stream", &big)
        .await;
    assert_eq!(first.status(), 303);
    let over = web
        .upload(&format!("/contacts/{id}/attachments"), &[], "file", "b.bin", "application/octet-stream", &big)
        .await;
    assert_eq!(over.status(), 400);
    let page = over.text().await.unwrap();
    assert!(page.contains("attachment quota") && page.contains("role=\"alert\""), "{page}");
    let listed: Value = api.get(&format!("/api/v1/contacts/{id}/attachments")).await.json().await.unwrap();
    assert_eq!(listed["total"], 3);

    let deleted = web.post(&format!("/attachments/{file}/delete"), &[]).await;
    assert_eq!(deleted.status(), 303);
    assert_eq!(location(&deleted), format!("/contacts/{id}?notice=deleted#h-attachments"));
    assert_eq!(web.get(&format!("/attachments/{file}")).await.status(), 404);
    let listed: Value = api.get(&format!("/api/v1/contacts/{id}/attachments")).await.json().await.unwrap();
    assert_eq!(listed["total"], 2);
}

#[tokio::test(flavor = "multi_thread")]
async fn the_contact_pages_add_forms_come_back_with_what_was_typed() {
    let server = Instance::new().spawn();
    let api = server.sign_up("ada").await;
    let web = Browser::of(&server, &api).await;
    let id = contact(&api, "Lise").await;
    let long = "y".repeat(2001);
    let cases: Vec<(&str, Vec<(&str, &str)>, &str, &str)> = vec![
        (
            "reminders",
            vec![("message", "Ask about fission"), ("remind_at", "2026-13-45"), ("recurrence", "yearly")],
            "remind_at",
            "value=\"Ask about fission\"",
        ),
        (
            "activities",
            vec![("title", "Walk in Kungälv"), ("date", "someday"), ("location", "Sweden")],
            "date",
            "value=\"Walk in Kungälv\"",
        ),
        (
            "life-events",
            vec![("type", "moved"), ("date", "31.02.1938"), ("description", "to Stockholm")],
            "date",
            "value=\"31.02.1938\"",
        ),
        (
            "gifts",
            vec![("description", "A Geiger counter"), ("status", "stolen"), ("occasion", "Nobel")],
            "status",
            "value=\"A Geiger counter\"",
        ),
        ("agenda", vec![("content", long.as_str())], "content", "maxlength=\"2000\" value=\"yyyy"),
        ("notes", vec![("content", "   ")], "content", "id=\"note-error\""),
    ];
    for (path, fields, field, kept) in cases {
        let response = web.post(&format!("/contacts/{id}/{path}"), &fields).await;
        assert_eq!(response.status(), 400, "{path}");
        let page = response.text().await.unwrap();
        assert!(page.contains("<h1>Lise Example</h1>"), "{path}: the contact's page again");
        assert!(
            page.contains("role=\"alert\"") && page.contains(&format!("{field}:")),
            "{path}: the field named\n{page}"
        );
        assert!(page.contains(kept), "{path}: what was typed is kept");
        if !matches!(path, "notes" | "reminders") {
            assert!(page.contains("<details open"), "{path}: the folded form is unfolded");
        }
    }
    let detail: Value = api.get(&format!("/api/v1/contacts/{id}/detail")).await.json().await.unwrap();
    for list in ["notes", "reminders", "activities", "life_events", "gifts", "agenda"] {
        assert_eq!(detail[list].as_array().map(Vec::len).unwrap_or(0), 0, "{list}: {detail}");
    }
    // A good form saves.
    let fine =
        web.post(&format!("/contacts/{id}/gifts"), &[("description", "A Geiger counter"), ("status", "idea")]).await;
    assert_eq!(fine.status(), 303);
}

/// A large file on the web import: the preview page lists its first rows (500) and says how many
/// more there are; the confirm takes the listed rows' choices and gives every other row its
/// suggestion (a duplicate of a contact, or of an earlier row, past the listed ones is skipped),
/// or what the choice for all rows makes of it.
#[tokio::test]
async fn a_large_web_import_lists_its_first_rows_and_the_others_take_their_suggestion() {
    let server = Instance::new().spawn();
    let ada = server.sign_up("ada").await;
    let existing = json!({ "firstname": "Dup", "lastname": "Licate", "email": "dup@example.org" });
    assert_eq!(ada.post("/api/v1/contacts", existing).await.status(), 201);
    let card = |first: &str, last: &str, email: &str| {
        format!(
            "BEGIN:VCARD\r\nVERSION:3.0\r\nFN:{first} {last}\r\nN:{last};{first};;;\r\nEMAIL:{email}\r\nEND:VCARD\r\n"
        )
    };
    let mut file = String::new();
    for i in 0..620 {
        file += &match i {
            0 | 610 => card("Dup", "Licate", "dup@example.org"),
            615 => card("Person", "612", "p612@example.org"),
            _ => card("Person", &i.to_string(), &format!("p{i}@example.org")),
        };
    }
    let web = Browser::of(&server, &ada).await;
    let preview =
        web.upload("/import", &[("categories", "tags")], "file", "many.vcf", "text/vcard", file.as_bytes()).await;
    assert_eq!(preview.status(), 200);
    let page = preview.text().await.unwrap();
    assert_eq!(page.matches("name=\"action_").count(), 500, "the first 500 rows are listed");
    assert!(page.contains("name=\"action_499\"") && !page.contains("name=\"action_500\""));
    assert!(page.contains("id=\"rows-not-shown\"") && page.contains("The other 120"), "{page}");
    let confirm = page.split("action=\"/import/").nth(1).and_then(|s| s.split('"').next()).expect("confirm action");

    // As the page would send it: row 0 (a duplicate) skipped, the other listed rows added.
    let names: Vec<String> = (0..500).map(|i| format!("action_{i}")).collect();
    let mut form: Vec<(&str, &str)> = names.iter().map(|n| (n.as_str(), "add")).collect();
    form[0].1 = "skip";
    form.push(("bulk", "rows"));
    let done = web.post(&format!("/import/{confirm}"), &form).await;
    assert_eq!(done.status(), 200);
    // 499 listed + 118 of the 120 others (row 610 duplicates the contact, row 615 row 612).
    assert_eq!(total(&ada).await, 1 + 499 + 118);
    let found: Value = ada.get("/api/v1/contacts?search=p612%40example.org").await.json().await.unwrap();
    assert_eq!(found["total"], 1, "{found}");
}
