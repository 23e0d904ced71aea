//! Real DAV clients against the real binary: vdirsyncer (pinned in tests/requirements.txt,
//! installed into `.venv` by scripts/test.sh) syncing the address book two ways with a local
//! folder. The clients are found next to `MYCORRHIZAL_TEST_PYTHON`, or in the repository's
//! `.venv` after scripts/test.sh made it; a missing client fails the test, it is never skipped.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

use serde_json::json;

use crate::helpers::{Client, Instance, PASSWORD, wait_bounded};

fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).parent().expect("workspace root").to_path_buf()
}

/// The venv's `name` script.
pub(crate) fn venv_tool(name: &str) -> PathBuf {
    let from_env = std::env::var_os("MYCORRHIZAL_TEST_PYTHON")
        .map(PathBuf::from)
        .and_then(|python| python.parent().map(|bin| bin.join(name)));
    let tool = from_env.unwrap_or_else(|| repo().join(".venv/bin").join(name));
    assert!(
        tool.exists(),
        "{name} is not installed at {}: run ./scripts/test.sh, which installs the pinned clients of \
         tests/requirements.txt into .venv",
        tool.display()
    );
    tool
}

/// Runs vdirsyncer with `args` on `config`, answering yes to its questions; returns whether it
/// succeeded and what it printed.
fn vdirsyncer(config: &Path, args: &[&str]) -> (bool, String) {
    let out = tempfile::NamedTempFile::new().expect("temp file");
    let mut child = Command::new(venv_tool("vdirsyncer"))
        .args(["-c", &config.display().to_string()])
        .args(args)
        .stdin(Stdio::piped())
        .stdout(out.reopen().expect("reopen"))
        .stderr(out.reopen().expect("reopen"))
        .spawn()
        .expect("run vdirsyncer");
    if let Some(mut stdin) = child.stdin.take() {
        let _ = std::io::Write::write_all(&mut stdin, "y\n".repeat(20).as_bytes());
    }
    let status = wait_bounded(&mut child, Duration::from_secs(120));
    (status.success(), std::fs::read_to_string(out.path()).unwrap_or_default())
}

/// Every `.vcf` of `dir` (recursively) with its content.
fn local_cards(dir: &Path) -> Vec<(PathBuf, String)> {
    local_files(dir, "vcf")
}

/// Every file with extension `ext` under `dir` (recursively) with its content.
fn local_files(dir: &Path, ext: &str) -> Vec<(PathBuf, String)> {
    let mut out = Vec::new();
    let Ok(entries) = std::fs::read_dir(dir) else { return out };
    for entry in entries.flatten() {
        let path = entry.path();
        if path.is_dir() {
            out.extend(local_files(&path, ext));
        } else if path.extension().is_some_and(|e| e == ext) {
            out.push((path.clone(), std::fs::read_to_string(&path).expect("read card")));
        }
    }
    out.sort();
    out
}

fn local_card<'a>(cards: &'a [(PathBuf, String)], fn_line: &str) -> Option<&'a (PathBuf, String)> {
    cards.iter().find(|(_, text)| text.contains(fn_line))
}

/// The JSON API's contacts as `(id, fn)`.
async fn api_contacts(api: &Client) -> Vec<(u64, String)> {
    let listed: serde_json::Value = api.get("/api/v1/contacts?limit=100").await.json().await.expect("contacts");
    let mut out: Vec<(u64, String)> = listed["contacts"]
        .as_array()
        .expect("contacts")
        .iter()
        .map(|c| (c["id"].as_u64().expect("id"), c["fn"].as_str().unwrap_or_default().to_string()))
        .collect();
    out.sort_by(|a, b| a.1.cmp(&b.1));
    out
}

#[tokio::test(flavor = "multi_thread")]
async fn vdirsyncer_syncs_the_address_book_both_ways_and_a_resync_changes_nothing() {
    let server = Instance::new().with("CARDDAV_ENABLED", "true").spawn();
    let api = server.sign_up("ada").await;
    for name in ["Local Edit", "Local Delete", "Server Edit", "Server Delete"] {
        let created = api.post("/api/v1/contacts", json!({ "card": { "name": { "full": name } } })).await;
        assert_eq!(created.status(), 201);
    }
    let work = tempfile::tempdir().expect("tempdir");
    let local = work.path().join("contacts");
    std::fs::create_dir_all(&local).expect("mkdir");
    let config = work.path().join("config");
    std::fs::write(
        &config,
        format!(
            "[general]\nstatus_path = \"{status}\"\n\n[pair book]\na = \"local\"\nb = \"server\"\ncollections = [\"from b\"]\n\n\
             [storage local]\ntype = \"filesystem\"\npath = \"{local}\"\nfileext = \".vcf\"\n\n\
             [storage server]\ntype = \"carddav\"\nurl = \"{url}\"\nusername = \"ada\"\npassword = \"{PASSWORD}\"\n",
            status = work.path().join("status").display(),
            local = local.display(),
            url = server.url("/"),
        ),
    )
    .expect("config");

    let (ok, out) = vdirsyncer(&config, &["discover"]);
    assert!(ok, "discover: {out}");
    let (ok, out) = vdirsyncer(&config, &["sync"]);
    assert!(ok, "first sync: {out}");
    let cards = local_cards(&local);
    assert_eq!(cards.len(), 4, "{out}");

    // An edit and a delete on each side.
    let (path, text) = local_card(&cards, "FN:Local Edit").expect("local edit card");
    std::fs::write(path, text.replace("FN:Local Edit", "FN:Local Edited")).expect("edit");
    let (path, _) = local_card(&cards, "FN:Local Delete").expect("local delete card");
    std::fs::remove_file(path).expect("delete");
    let on_server = api_contacts(&api).await;
    let id_of = |name: &str| on_server.iter().find(|(_, n)| n == name).map(|(id, _)| *id).expect(name);
    let edited = api
        .send(
            reqwest::Method::PUT,
            &format!("/api/v1/contacts/{}", id_of("Server Edit")),
            json!({ "card": { "name": { "full": "Server Edited" } } }),
        )
        .await;
    assert_eq!(edited.status(), 200);
    let deleted =
        api.request(reqwest::Method::DELETE, &format!("/api/v1/contacts/{}", id_of("Server Delete"))).send().await;
    assert_eq!(deleted.expect("delete").status(), 200);

    let (ok, out) = vdirsyncer(&config, &["sync"]);
    assert!(ok, "second sync: {out}");
    let names: Vec<String> = api_contacts(&api).await.into_iter().map(|(_, n)| n).collect();
    assert_eq!(names, vec!["Local Edited", "Server Edited"], "{out}");
    let cards = local_cards(&local);
    assert_eq!(cards.len(), 2, "{out}");
    assert!(local_card(&cards, "FN:Server Edited").is_some(), "{cards:?}");
    assert!(local_card(&cards, "FN:Local Edited").is_some(), "{cards:?}");

    // A resync changes nothing on either side.
    let before_server: serde_json::Value = api.get("/api/v1/contacts?limit=100").await.json().await.expect("contacts");
    let (ok, out) = vdirsyncer(&config, &["sync"]);
    assert!(ok, "third sync: {out}");
    for word in ["Copying", "Updating", "Deleting"] {
        assert!(!out.contains(word), "a resync did something: {out}");
    }
    assert_eq!(local_cards(&local), cards, "local folder unchanged");
    let after_server: serde_json::Value = api.get("/api/v1/contacts?limit=100").await.json().await.expect("contacts");
    let etags = |v: &serde_json::Value| -> Vec<String> {
        v["contacts"].as_array().expect("contacts").iter().map(|c| c["etag"].to_string()).collect()
    };
    assert_eq!(etags(&before_server), etags(&after_server), "server unchanged");
}

/// python-caldav, run as a script: `phase` `first` discovers the calendar from the server root,
/// lists, searches July 2031 and 1-2 March 2027, multigets every event and takes a sync token;
/// `again <token>` asks what changed since; `create <token>` saves a new event (`save_event`,
/// two-way CalDAV), finds it by its UID and asks what changed since. Prints one JSON object.
const CALDAV_SCRIPT: &str = r#"
import datetime, json, sys
import caldav
url, user, password, phase = sys.argv[1:5]
client = caldav.DAVClient(url=url, username=user, password=password)
calendars = client.principal().calendars()
assert len(calendars) == 1, calendars
cal = calendars[0]
summary = lambda o: str(o.icalendar_component.get("summary"))
utc = datetime.timezone.utc
out = {}
if phase == "first":
    events = cal.events()
    out["all"] = sorted(summary(e) for e in events)
    july = cal.search(start=datetime.datetime(2031, 7, 1, tzinfo=utc), end=datetime.datetime(2031, 8, 1, tzinfo=utc), event=True)
    out["july_2031"] = sorted(summary(e) for e in july)
    march = cal.search(start=datetime.datetime(2027, 3, 1, tzinfo=utc), end=datetime.datetime(2027, 3, 2, tzinfo=utc), event=True)
    out["first_march_2027"] = sorted(summary(e) for e in march)
    got = cal.multiget([e.url for e in events])
    out["multiget"] = sorted(summary(e) for e in got)
    updates = cal.objects_by_sync_token(load_objects=True)
    out["token"] = str(updates.sync_token)
elif phase == "create":
    made = cal.save_event("BEGIN:VCALENDAR\r\nVERSION:2.0\r\nPRODID:-//python-caldav//EN\r\nBEGIN:VEVENT\r\nUID:picnic-1\r\nDTSTAMP:20260401T090000Z\r\nDTSTART:20260501T180000Z\r\nDTEND:20260501T190000Z\r\nSUMMARY:Picnic\r\nEND:VEVENT\r\nEND:VCALENDAR\r\n")
    out["url"] = str(made.url)
    found = cal.event_by_uid("picnic-1")
    out["found"] = summary(found)
    out["found_url"] = str(found.url)
    updates = cal.objects_by_sync_token(sync_token=sys.argv[5], load_objects=True)
    out["changed"] = sorted(summary(o) for o in updates if o.data)
else:
    updates = cal.objects_by_sync_token(sync_token=sys.argv[5], load_objects=True)
    changed = [o for o in updates if o.data]
    out["changed"] = sorted(summary(o) for o in changed)
    out["token"] = str(updates.sync_token)
print(json.dumps(out))
"#;

fn python_caldav(script: &Path, args: &[&str]) -> serde_json::Value {
    let output = Command::new(venv_tool("python")).arg(script).args(args).output().expect("run python");
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(output.status.success(), "python-caldav failed: {stdout}\n{}", String::from_utf8_lossy(&output.stderr));
    serde_json::from_str(stdout.lines().last().unwrap_or_default()).expect("json from the script")
}

#[tokio::test(flavor = "multi_thread")]
async fn python_caldav_discovers_searches_multigets_and_syncs_the_calendar() {
    let server = Instance::new()
        .with("CARDDAV_ENABLED", "true")
        .with("CALDAV_ENABLED", "true")
        .with("CALDAV_TWO_WAY_ENABLED", "true")
        .spawn();
    let api = server.sign_up("ada").await;
    let mut ids = Vec::new();
    for (name, birthday) in [("Ada Lovelace", "--07-14"), ("Leap Day", "1996-02-29")] {
        let created: serde_json::Value = api
            .post("/api/v1/contacts", json!({ "card": { "name": { "full": name } }, "birthday": birthday }))
            .await
            .json()
            .await
            .expect("contact");
        ids.push(created["contact"]["id"].as_u64().expect("id"));
    }
    let lunch: serde_json::Value = api
        .post(
            "/api/v1/activities",
            json!({ "title": "Lunch", "date": "2026-03-04T12:00:00Z", "contact_ids": [ids[0]] }),
        )
        .await
        .json()
        .await
        .expect("activity");
    let lunch_id = lunch["activity"]["id"].as_u64().expect("id");

    let work = tempfile::tempdir().expect("tempdir");
    let script = work.path().join("caldav_client.py");
    std::fs::write(&script, CALDAV_SCRIPT).expect("script");
    let url = server.url("/");
    let first = python_caldav(&script, &[&url, "ada", PASSWORD, "first"]);
    assert_eq!(first["all"], json!(["Ada Lovelace's birthday", "Leap Day's birthday", "Lunch"]), "{first}");
    assert_eq!(first["july_2031"], json!(["Ada Lovelace's birthday"]), "{first}");
    assert_eq!(first["first_march_2027"], json!(["Leap Day's birthday"]), "29 February falls on 1 March: {first}");
    assert_eq!(first["multiget"], first["all"]);
    let token = first["token"].as_str().expect("token").to_string();

    let renamed = api
        .send(
            reqwest::Method::PUT,
            &format!("/api/v1/activities/{lunch_id}"),
            json!({ "title": "Dinner", "date": "2026-03-04T19:00:00Z", "contact_ids": [ids[0]] }),
        )
        .await;
    assert_eq!(renamed.status(), 200);
    let again = python_caldav(&script, &[&url, "ada", PASSWORD, "again", &token]);
    assert_eq!(again["changed"], json!(["Dinner"]), "{again}");
    assert_ne!(again["token"], first["token"]);

    // Two-way: a new event saved by the client becomes an activity, found again by its UID at
    // the href the client chose.
    let token = again["token"].as_str().expect("token").to_string();
    let created = python_caldav(&script, &[&url, "ada", PASSWORD, "create", &token]);
    assert_eq!(created["found"], "Picnic", "{created}");
    assert!(created["url"].as_str().expect("url").ends_with("/picnic-1.ics"), "{created}");
    assert_eq!(created["found_url"], created["url"], "{created}");
    assert_eq!(created["changed"], json!(["Picnic"]), "{created}");
    let listed: serde_json::Value = api.get("/api/v1/activities").await.json().await.expect("activities");
    let picnic = listed["activities"].as_array().expect("list").iter().find(|a| a["title"] == "Picnic").cloned();
    let picnic = picnic.expect("the event is an activity");
    assert_eq!(picnic["uuid"], "picnic-1");
    assert!(picnic["date"].as_str().expect("date").starts_with("2026-05-01T18:00:00"), "{picnic}");
}

#[tokio::test(flavor = "multi_thread")]
async fn vdirsyncer_syncs_two_way_calendar_events_with_activities_and_a_resync_changes_nothing() {
    let server = Instance::new().with("CALDAV_ENABLED", "true").with("CALDAV_TWO_WAY_ENABLED", "true").spawn();
    let api = server.sign_up("ada").await;
    let mut ids = std::collections::HashMap::new();
    for (n, title) in ["Local Edit", "Local Delete", "Server Edit", "Server Delete"].into_iter().enumerate() {
        let made: serde_json::Value = api
            .post("/api/v1/activities", json!({ "title": title, "date": format!("2026-03-0{}T12:00:00Z", n + 1) }))
            .await
            .json()
            .await
            .expect("activity");
        ids.insert(title, made["activity"]["id"].as_u64().expect("id"));
    }
    let work = tempfile::tempdir().expect("tempdir");
    let local = work.path().join("calendars");
    std::fs::create_dir_all(&local).expect("mkdir");
    let config = work.path().join("config");
    std::fs::write(
        &config,
        format!(
            "[general]\nstatus_path = \"{status}\"\n\n[pair cal]\na = \"local\"\nb = \"server\"\ncollections = [\"from b\"]\n\n\
             [storage local]\ntype = \"filesystem\"\npath = \"{local}\"\nfileext = \".ics\"\n\n\
             [storage server]\ntype = \"caldav\"\nurl = \"{url}\"\nusername = \"ada\"\npassword = \"{PASSWORD}\"\n",
            status = work.path().join("status").display(),
            local = local.display(),
            url = server.url("/"),
        ),
    )
    .expect("config");
    let (ok, out) = vdirsyncer(&config, &["discover"]);
    assert!(ok, "discover: {out}");
    let (ok, out) = vdirsyncer(&config, &["sync"]);
    assert!(ok, "first sync: {out}");
    let events = local_files(&local, "ics");
    assert_eq!(events.len(), 4, "{out}");

    let (path, text) = events.iter().find(|(_, t)| t.contains("SUMMARY:Local Edit")).expect("local edit");
    std::fs::write(path, text.replace("SUMMARY:Local Edit", "SUMMARY:Local Edited")).expect("edit");
    let (path, _) = events.iter().find(|(_, t)| t.contains("SUMMARY:Local Delete")).expect("local delete");
    std::fs::remove_file(path).expect("delete");
    let made_here = "BEGIN:VCALENDAR\r\nVERSION:2.0\r\nPRODID:-//khal//EN\r\nBEGIN:VEVENT\r\nUID:local-new-1\r\nDTSTAMP:20260301T090000Z\r\nDTSTART:20260305T120000Z\r\nDTEND:20260305T130000Z\r\nSUMMARY:Local New\r\nEND:VEVENT\r\nEND:VCALENDAR\r\n";
    let collection = path.parent().expect("collection folder");
    std::fs::write(collection.join("local-new-1.ics"), made_here).expect("new event");
    let edited = api
        .send(
            reqwest::Method::PUT,
            &format!("/api/v1/activities/{}", ids["Server Edit"]),
            json!({ "title": "Server Edited", "date": "2026-03-03T12:00:00Z" }),
        )
        .await;
    assert_eq!(edited.status(), 200);
    let deleted =
        api.request(reqwest::Method::DELETE, &format!("/api/v1/activities/{}", ids["Server Delete"])).send().await;
    assert_eq!(deleted.expect("delete").status(), 200);

    let (ok, out) = vdirsyncer(&config, &["sync"]);
    assert!(ok, "second sync: {out}");
    let listed: serde_json::Value = api.get("/api/v1/activities").await.json().await.expect("activities");
    let mut titles: Vec<String> = listed["activities"]
        .as_array()
        .expect("list")
        .iter()
        .map(|a| a["title"].as_str().unwrap_or("").to_string())
        .collect();
    titles.sort();
    assert_eq!(titles, vec!["Local Edited", "Local New", "Server Edited"], "{out}");
    let events = local_files(&local, "ics");
    assert_eq!(events.len(), 3, "{out}");
    assert!(events.iter().any(|(_, t)| t.contains("SUMMARY:Server Edited")), "{events:?}");

    let (ok, out) = vdirsyncer(&config, &["sync"]);
    assert!(ok, "third sync: {out}");
    for word in ["Copying", "Updating", "Deleting"] {
        assert!(!out.contains(word), "a resync did something: {out}");
    }
    assert_eq!(local_files(&local, "ics"), events, "local folder unchanged");
}

/// A server for a client's own suite, with two-way CalDAV (and CardDAV when `carddav`) and a DAV
/// bucket no suite empties, and its account `ada`.
async fn suite_server(carddav: bool) -> (crate::helpers::TestServer, Client) {
    let server = Instance::new()
        .with("CARDDAV_ENABLED", if carddav { "true" } else { "false" })
        .with("CALDAV_ENABLED", "true")
        .with("CALDAV_TWO_WAY_ENABLED", "true")
        .with("RATE_LIMIT_DAV_BURST", "100000")
        .spawn();
    let api = server.sign_up("ada").await;
    (server, api)
}

/// The pinned sdist `name` (tests/sdists.txt, fetched by scripts/test.sh) unpacked into `into`.
fn unpacked(name: &str, into: &Path) -> PathBuf {
    let sdist = repo().join(format!(".venv/sdists/{name}.tar.gz"));
    assert!(sdist.exists(), "{} is missing: run ./scripts/test.sh, which fetches tests/sdists.txt", sdist.display());
    let status = Command::new("tar").arg("xzf").arg(&sdist).arg("-C").arg(into).status().expect("tar");
    assert!(status.success(), "tar xzf {}", sdist.display());
    into.join(name)
}

/// What a pytest run printed (`-rA`: a line per test).
struct Run {
    out: String,
}

impl Run {
    /// The tests reported with `word` (`PASSED `, `FAILED `, `ERROR `).
    fn outcome(&self, word: &str) -> Vec<String> {
        self.out
            .lines()
            .filter_map(|l| l.strip_prefix(word))
            .map(|t| t.split(" - ").next().unwrap_or(t).to_string())
            .collect()
    }
}

/// pytest on `tests` in `suite` with the venv's python, told the server's address and the
/// account (`MYCORRHIZAL_URL`, `_USER`, `_PASSWORD`, `_ID`) and `env`.
fn pytest(suite: &Path, tests: &str, server: &crate::helpers::TestServer, api: &Client, env: &[(&str, &str)]) -> Run {
    let run = Command::new(venv_tool("python"))
        .args([
            "-m",
            "pytest",
            "-p",
            "no:cacheprovider",
            "-p",
            "no:logging",
            "-o",
            "addopts=",
            "-q",
            "-rA",
            "--tb=short",
        ])
        .arg(tests)
        .current_dir(suite)
        .env("MYCORRHIZAL_URL", server.url(""))
        .env("MYCORRHIZAL_USER", "ada")
        .env("MYCORRHIZAL_PASSWORD", PASSWORD)
        .env("MYCORRHIZAL_ID", api.id.to_string())
        .envs(env.iter().copied())
        .stdin(Stdio::null())
        .output()
        .expect("pytest");
    Run { out: String::from_utf8_lossy(&run.stdout).into_owned() }
}

impl Run {
    /// What pytest said of its failures and errors (their sections, `=== FAILURES ===` and
    /// `=== ERRORS ===`), then its last lines.
    fn explained(&self) -> String {
        let lines: Vec<&str> = self.out.lines().collect();
        let sections = lines
            .iter()
            .skip_while(|l| !(l.starts_with('=') && (l.contains(" ERRORS ") || l.contains(" FAILURES "))))
            .take(120)
            .copied()
            .collect::<Vec<_>>()
            .join("\n");
        format!("{sections}\n...\n{}", lines[lines.len().saturating_sub(40)..].join("\n"))
    }
}

/// python-caldav's own suite (the pinned sdist's tests/test_caldav.py) against the account's
/// calendar with two-way CalDAV on, told what this server does not do
/// (tests/caldav_conf_private.py: one calendar, events only, no scheduling): every test it runs
/// passes (alarms, sequences, relations, recurrences and their exceptions kept; time ranges
/// expanded; server-side expansion; text, alarm and undefined-property searches; sync tokens).
#[tokio::test(flavor = "multi_thread")]
async fn python_caldavs_own_suite_passes_with_the_honest_feature_profile() {
    let (server, api) = suite_server(false).await;
    let work = tempfile::tempdir().expect("tempdir");
    let suite = unpacked("caldav-1.6.0", work.path());
    std::fs::copy(repo().join("tests/caldav_conf_private.py"), suite.join("tests/conf_private.py")).expect("conf");
    let run = pytest(&suite, "tests/test_caldav.py", &server, &api, &[]);
    let (mut passed, failed, errors) = (run.outcome("PASSED "), run.outcome("FAILED "), run.outcome("ERROR "));
    let tail = run.explained();
    assert!(failed.is_empty(), "failed {failed:#?} errors {errors:#?}\n{tail}");
    // An error is in a test's setting up or tidying away (the suite's own fixtures, which once
    // in a full run under load errored on one test and never alone): such a test runs once
    // more, alone, and must pass then.
    for test in &errors {
        eprintln!("python-caldav: {test} errored in its fixtures, run again:\n{tail}");
        let again = pytest(&suite, test, &server, &api, &[]);
        let skipped = again.out.lines().any(|l| l.starts_with("SKIPPED ") && l.contains("incompatibility"));
        assert!(again.outcome("PASSED ").contains(test) || skipped, "{test} again:\n{}", again.explained());
        passed.extend(again.outcome("PASSED "));
    }
    assert!(passed.len() >= 28, "{} passed:\n{tail}", passed.len());
    for must in [
        "testAlarm",
        "testRecurringDateWithExceptionSearch",
        "testEditSingleRecurrence",
        "testCreateChildParent",
        "testSearchEvent",
        "testSync",
    ] {
        assert!(passed.iter().any(|t| t.ends_with(must)), "{must} did not pass:\n{tail}");
    }
}

/// What vdirsyncer's own storage suite asks that this server refuses on purpose, by test id:
/// tasks (the calendar holds events: `[VTODO]`, and the item-type test that uploads one),
/// and new collections (one address book and one calendar per account).
fn refused_on_purpose(test: &str) -> bool {
    test.contains("[VTODO]")
        || test.contains("::test_create_collection[")
        || test.ends_with("::test_item_types_general")
}

/// vdirsyncer's own storage suite (the pinned sdist's tests/storage/dav, fetched by
/// scripts/test.sh into .venv/sdists) against the account's address book and calendar, with
/// two-way CalDAV on: every test passes but those [`refused_on_purpose`]; tests that need
/// another collection skip themselves (tests/vdirsyncer_server.py).
#[tokio::test(flavor = "multi_thread")]
async fn vdirsyncers_own_storage_suite_passes_but_for_the_refusals_written_down() {
    let (server, api) = suite_server(true).await;
    let work = tempfile::tempdir().expect("tempdir");
    let suite = unpacked("vdirsyncer-0.21.0", work.path());
    let mixin = suite.join("tests/storage/servers/mycorrhizal");
    std::fs::create_dir_all(&mixin).expect("mkdir");
    std::fs::copy(repo().join("tests/vdirsyncer_server.py"), mixin.join("__init__.py")).expect("mixin");
    let run = pytest(&suite, "tests/storage/dav", &server, &api, &[("DAV_SERVER", "mycorrhizal")]);
    let (passed, failed, errors) = (run.outcome("PASSED "), run.outcome("FAILED "), run.outcome("ERROR "));
    let out = &run.out;
    let unexpected: Vec<&String> = failed.iter().chain(&errors).filter(|t| !refused_on_purpose(t)).collect();
    assert!(unexpected.is_empty(), "unexpected failures {unexpected:#?}\n{}", run.explained());
    assert!(passed.len() >= 100, "{} passed: {out}", passed.len());
    for must in [
        "test_dav_unicode_href[VCARD]",
        "test_newline_in_uid[VEVENT]",
        "test_case_sensitive_uids[VCARD]",
        "test_recurring_events[VEVENT]",
        "test_update[VCARD]",
        "test_metadata",
    ] {
        assert!(passed.iter().any(|t| t.ends_with(must)), "{must} did not pass: {out}");
    }
}
