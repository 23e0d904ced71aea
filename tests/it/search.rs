//! `GET /search`, the contacts list's `search=`, and `POST /admin/search/rebuild` against the real
//! binary: read-your-writes without waiting for an index commit, the query rules a search box
//! needs, parameter errors, replay after the process is killed between the database commit and
//! the index commit, and the rebuild's response and job run.

use serde_json::{Value, json};

use crate::helpers::{Client, Instance, open_engine};

async fn created(client: &Client, path: &str, body: Value, key: &str) -> u64 {
    let response = client.post(path, body).await;
    assert!(response.status().is_success(), "{path}: {}", response.status());
    let value: Value = response.json().await.expect("json");
    value[key]["id"].as_u64().unwrap_or_else(|| panic!("{path}: no {key}.id in {value}"))
}

async fn search(client: &Client, q: &str) -> Value {
    let response = client.get(&format!("/api/v1/search?q={}", urlencode(q))).await;
    assert_eq!(response.status(), 200, "search {q}");
    response.json().await.expect("json")
}

fn urlencode(q: &str) -> String {
    q.bytes().map(|b| if b.is_ascii_alphanumeric() { (b as char).to_string() } else { format!("%{b:02X}") }).collect()
}

fn ids(found: &Value, group: &str) -> Vec<u64> {
    found[group]
        .as_array()
        .unwrap_or_else(|| panic!("{group} in {found}"))
        .iter()
        .map(|v| v["id"].as_u64().unwrap())
        .collect()
}

async fn listed(client: &Client, query: &str) -> Value {
    let response = client.get(&format!("/api/v1/contacts?{query}")).await;
    assert_eq!(response.status(), 200, "contacts?{query}");
    response.json().await.expect("json")
}

fn contact_ids(page: &Value) -> Vec<u64> {
    page["contacts"].as_array().expect("contacts").iter().map(|v| v["id"].as_u64().unwrap()).collect()
}

struct World {
    jose: u64,
    alice: u64,
    bob: u64,
    note: u64,
    activity: u64,
}

async fn seed(a: &Client) -> World {
    let jose = created(
        a,
        "/api/v1/contacts",
        json!({ "firstname": "José", "lastname": "Álvarez", "email": "jose.alvarez@example.org", "phone": "+1 (555) 123-4567", "org": "Lichen Labs" }),
        "contact",
    )
    .await;
    let alice = created(
        a,
        "/api/v1/contacts",
        json!({ "firstname": "Alice", "lastname": "Martin", "email": "alice@example.org", "crm": { "circles": ["Climbing"] } }),
        "contact",
    )
    .await;
    let bob = created(
        a,
        "/api/v1/contacts",
        json!({ "firstname": "Bob", "lastname": "Stone", "org": "Alice Foods" }),
        "contact",
    )
    .await;
    let note = created(
        a,
        &format!("/api/v1/contacts/{alice}/notes"),
        json!({ "content": "Long talk about her new job at the observatory and the Rust meetup in Lyon next spring." }),
        "note",
    )
    .await;
    let activity = created(
        a,
        "/api/v1/activities",
        json!({ "title": "Dinner at Chez Marcel", "description": "Alice brought the sourdough", "date": "2026-03-01", "contact_ids": [alice, bob] }),
        "activity",
    )
    .await;
    World { jose, alice, bob, note, activity }
}

#[tokio::test]
async fn search_finds_what_a_person_types_right_after_writing_it() {
    // The index commits only once an hour here: everything below is served by read-your-writes.
    let server = Instance::new().with("SEARCH_COMMIT_INTERVAL_MS", "3600000").spawn();
    let a = server.sign_up("ada").await;
    let w = seed(&a).await;

    let found = search(&a, "jose").await;
    assert_eq!(found["query"], "jose");
    assert_eq!(ids(&found, "contacts"), vec![w.jose], "accents folded: {found}");
    assert_eq!(found["contacts"][0]["firstname"], "José");
    assert_eq!(found["contacts"][0]["snippet"], "jose.alvarez@example.org");
    assert_eq!(found["contacts"][0]["snippet_highlights"], json!([[0, 4]]));
    assert_eq!(ids(&search(&a, "ÁLV").await, "contacts"), vec![w.jose], "prefix, case and accents");
    assert_eq!(ids(&search(&a, "alvarex").await, "contacts"), vec![w.jose], "one typo");
    assert_eq!(ids(&search(&a, "4567").await, "contacts"), vec![w.jose], "phone by its last digits");
    assert_eq!(ids(&search(&a, "5551234567").await, "contacts"), vec![w.jose], "phone without its country code");
    assert_eq!(ids(&search(&a, "155512").await, "contacts"), vec![w.jose], "phone digits as they are typed");
    assert_eq!(ids(&search(&a, "lichen labs").await, "contacts"), vec![w.jose], "organisation, every word");
    assert_eq!(ids(&search(&a, "climbing").await, "contacts"), vec![w.alice], "circles");

    // Names first: Alice by name, then Bob by his organisation; her note and the dinner too.
    let found = search(&a, "alice").await;
    assert_eq!(ids(&found, "contacts"), vec![w.alice, w.bob], "{found}");
    assert_eq!(ids(&found, "activities"), vec![w.activity]);
    assert_eq!(found["activities"][0]["ID"], w.activity);
    assert_eq!(found["activities"][0]["snippet"], "Alice brought the sourdough");
    assert_eq!(found["totals"], json!({ "contacts": 2, "notes": 0, "activities": 1 }));

    let found = search(&a, "\"rust meetup\"").await;
    assert_eq!(ids(&found, "notes"), vec![w.note]);
    assert_eq!(found["notes"][0]["ID"], w.note);
    assert_eq!(found["notes"][0]["contact_name"], "Alice Martin");
    let snippet = found["notes"][0]["snippet"].as_str().unwrap();
    assert!(snippet.contains("Rust meetup"), "{snippet}");
    assert_eq!(found["notes"][0]["snippet_highlights"].as_array().unwrap().len(), 2);
    assert_eq!(ids(&search(&a, "\"meetup rust\"").await, "notes"), Vec::<u64>::new(), "phrase order");
    assert_eq!(ids(&search(&a, "observatory lyon").await, "notes"), vec![w.note]);
    assert_eq!(ids(&search(&a, "observatory paris").await, "notes"), Vec::<u64>::new());

    // Updated text is found by its new words only; archived and deleted rows disappear.
    let response = a
        .send(
            reqwest::Method::PUT,
            &format!("/api/v1/notes/{}", w.note),
            json!({ "content": "Now about tango lessons", "contact_id": w.alice }),
        )
        .await;
    assert_eq!(response.status(), 200);
    assert_eq!(ids(&search(&a, "tango").await, "notes"), vec![w.note]);
    assert_eq!(ids(&search(&a, "observatory").await, "notes"), Vec::<u64>::new());
    assert_eq!(a.post(&format!("/api/v1/contacts/{}/archive", w.bob), json!({})).await.status(), 200);
    assert_eq!(ids(&search(&a, "alice").await, "contacts"), vec![w.alice]);
    let response = a.send(reqwest::Method::DELETE, &format!("/api/v1/activities/{}", w.activity), json!({})).await;
    assert_eq!(response.status(), 200);
    assert_eq!(ids(&search(&a, "sourdough").await, "activities"), Vec::<u64>::new());
}

#[tokio::test]
async fn search_parameters_are_checked_and_paged() {
    let server = Instance::new().spawn();
    let a = server.sign_up("ada").await;
    for i in 0..12 {
        created(
            &a,
            "/api/v1/contacts",
            json!({ "firstname": format!("Walker{i:02}"), "lastname": "Smith" }),
            "contact",
        )
        .await;
    }
    for (query, field) in [
        ("q=", "q"),
        ("q=%20%20", "q"),
        ("", "q"),
        ("q=smith&limit=0", "limit"),
        ("q=smith&limit=-3", "limit"),
        ("q=smith&limit=ten", "limit"),
        ("q=smith&offset=-1", "offset"),
    ] {
        let response = a.get(&format!("/api/v1/search?{query}")).await;
        assert_eq!(response.status(), 400, "{query}");
        let body: Value = response.json().await.unwrap();
        assert_eq!(body["code"], "INVALID_INPUT", "{query}");
        assert_eq!(body["details"]["field"], field, "{query}: {body}");
    }
    // One character: no error, empty groups.
    let one = search(&a, "s").await;
    assert_eq!(
        (one["contacts"].clone(), one["notes"].clone(), one["activities"].clone()),
        (json!([]), json!([]), json!([]))
    );
    // Default 10 per group; limit and offset page through the rest; limit is capped at 50.
    let first = search(&a, "smith").await;
    assert_eq!(first["contacts"].as_array().unwrap().len(), 10);
    assert_eq!(first["totals"]["contacts"], 12);
    let page: Value = a.get("/api/v1/search?q=smith&limit=5&offset=10").await.json().await.unwrap();
    let rest = ids(&page, "contacts");
    assert_eq!(rest.len(), 2);
    assert!(rest.iter().all(|id| !ids(&first, "contacts").contains(id)), "pages do not overlap");
    assert_eq!(a.get("/api/v1/search?q=smith&limit=500").await.status(), 200);
    // Households do not exist yet: any id is unknown.
    assert_eq!(a.get("/api/v1/search?q=smith&household_id=6f1c8f5e-8d7e-4a52-9d2b-0c8a1e0b7f11").await.status(), 404);
    // Anonymous callers are refused.
    assert_eq!(server.anonymous().get("/api/v1/search?q=smith").await.status(), 401);
}

#[tokio::test]
async fn the_contacts_list_search_uses_the_same_engine() {
    let server = Instance::new().spawn();
    let a = server.sign_up("ada").await;
    let w = seed(&a).await;
    // Prefix, accents, every word; best match first without a sort.
    assert_eq!(contact_ids(&listed(&a, "search=jos%C3%A9%20alv").await), vec![w.jose]);
    assert_eq!(contact_ids(&listed(&a, "search=ali").await), vec![w.alice, w.bob]);
    assert_eq!(listed(&a, "search=ali").await["total"], 2);
    // With a sort, that order; archived rows only when asked for.
    assert_eq!(contact_ids(&listed(&a, "search=ali&sort=name").await), vec![w.alice, w.bob]);
    assert_eq!(a.post(&format!("/api/v1/contacts/{}/archive", w.alice), json!({})).await.status(), 200);
    assert_eq!(contact_ids(&listed(&a, "search=ali").await), vec![w.bob]);
    assert_eq!(contact_ids(&listed(&a, "search=ali&include_archived=true").await), vec![w.alice, w.bob]);
    assert_eq!(contact_ids(&listed(&a, "search=ali&archived=true").await), vec![w.alice]);
    // Circle filter together with a search.
    assert_eq!(contact_ids(&listed(&a, "search=ali&include_archived=true&circle=Climbing").await), vec![w.alice]);
    // Cursor paging in relevance order and in name order.
    for i in 0..7 {
        created(&a, "/api/v1/contacts", json!({ "firstname": format!("Zed{i}"), "lastname": "Paging" }), "contact")
            .await;
    }
    for sort in ["", "&sort=name", "&sort=updated_at"] {
        let mut seen = Vec::new();
        let mut cursor = String::new();
        loop {
            let page = listed(&a, &format!("search=paging&limit=3{sort}&cursor={cursor}")).await;
            assert_eq!(page["total"], 7);
            seen.extend(contact_ids(&page));
            cursor = page["next_cursor"].as_str().unwrap().to_string();
            if cursor.is_empty() {
                break;
            }
        }
        let mut unique = seen.clone();
        unique.sort_unstable();
        unique.dedup();
        assert_eq!((seen.len(), unique.len()), (7, 7), "{sort}: {seen:?}");
    }
    // Too short to search: an empty page, not every contact.
    assert_eq!(listed(&a, "search=z").await["total"], 0);
}

#[tokio::test]
async fn a_kill_between_the_database_and_index_commits_loses_nothing() {
    let instance = Instance::new().with("SEARCH_COMMIT_INTERVAL_MS", "3600000");
    let mut server = instance.spawn();
    let a = server.sign_up("ada").await;
    let w = seed(&a).await;
    // SIGKILL: no graceful shutdown, so the index never committed these rows.
    server.child.kill().expect("kill");
    server.child.wait().expect("wait");
    drop(server);
    let server = instance.spawn();
    let a = server.sign_in("ada", crate::helpers::PASSWORD).await;
    let found = search(&a, "alice").await;
    assert_eq!(ids(&found, "contacts"), vec![w.alice, w.bob]);
    assert_eq!(ids(&found, "activities"), vec![w.activity]);
    assert_eq!(ids(&search(&a, "observatory").await, "notes"), vec![w.note]);
    assert_eq!(ids(&search(&a, "jose").await, "contacts"), vec![w.jose]);
    let replayed = server.log_lines().iter().any(|l| l["event"] == "search_index_replayed");
    assert!(replayed, "the start-up replay was not logged");
}

#[tokio::test]
async fn admins_rebuild_the_index_and_the_run_is_recorded() {
    let instance = Instance::new();
    let mut server = instance.spawn();
    let admin = server.sign_up("root").await;
    let ada = server.sign_up("ada").await;
    seed(&ada).await;
    created(&admin, "/api/v1/notes", json!({ "content": "admin's own note" }), "note").await;
    let gone = created(&ada, "/api/v1/notes", json!({ "content": "deleted note" }), "note").await;
    assert_eq!(ada.send(reqwest::Method::DELETE, &format!("/api/v1/notes/{gone}"), json!({})).await.status(), 200);

    assert_eq!(ada.post("/api/v1/admin/search/rebuild", json!({})).await.status(), 403, "admins only");
    let response = admin.post("/api/v1/admin/search/rebuild", json!({})).await;
    assert_eq!(response.status(), 200);
    let body: Value = response.json().await.unwrap();
    assert_eq!(
        body["indexed"],
        json!({ "contacts": 3, "notes": 2, "activities": 1 }),
        "live rows of all users: {body}"
    );
    assert!(body["message"].is_string());
    // Searching works on the new index, and writes after the swap are found.
    assert_eq!(search(&ada, "alice").await["totals"], json!({ "contacts": 2, "notes": 0, "activities": 1 }));
    let late = created(&ada, "/api/v1/contacts", json!({ "firstname": "Late", "lastname": "Comer" }), "contact").await;
    assert_eq!(ids(&search(&ada, "comer").await, "contacts"), vec![late]);
    assert_eq!(ids(&search(&admin, "alice").await, "contacts"), Vec::<u64>::new(), "still per user");

    server.terminate();
    let engine = open_engine(&instance.database());
    let runs = engine.job_runs(10, |r| r.job_name == "search_index_rebuild").unwrap();
    assert_eq!(runs.len(), 1);
    assert_eq!(runs[0].items_processed, Some(6));
    assert_eq!(format!("{:?}", runs[0].result), "Success");
}

#[tokio::test]
async fn a_relation_word_finds_the_contacts_holding_that_relation() {
    let server = Instance::new().spawn();
    let a = server.sign_up("ada").await;
    let ines = created(&a, "/api/v1/contacts", json!({ "firstname": "Inès", "lastname": "Roy" }), "contact").await;
    let paul = created(&a, "/api/v1/contacts", json!({ "firstname": "Paul", "lastname": "Roy" }), "contact").await;
    let other = created(&a, "/api/v1/contacts", json!({ "firstname": "Zoé", "lastname": "Blanc" }), "contact").await;
    let response =
        a.post(&format!("/api/v1/contacts/{ines}/relationships"), json!({ "target_id": paul, "type": "sister" })).await;
    assert!(response.status().is_success(), "{}", response.status());
    let found = search(&a, "sister").await;
    assert_eq!(found["resolved_relation"], "sibling_of", "{found}");
    let mut holders = ids(&found, "contacts");
    holders.sort_unstable();
    assert_eq!(holders, vec![ines, paul], "both ends of a symmetric relation, nobody else");
    assert!(!holders.contains(&other));
    // An ordinary word resolves to no relation.
    assert!(search(&a, "roy").await.get("resolved_relation").is_none());
}
