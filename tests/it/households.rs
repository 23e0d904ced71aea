//! Households against the real binary: CRUD with conditional writes, members over time with
//! `since`/`until` kept verbatim, memberships following their contact and household, address
//! suggestions computed on read and dismissed for good, and `/search?household_id=`.

use reqwest::Method;
use serde_json::{Value, json};

use crate::helpers::{Client, Instance};
use mycorrhizal::crm::{household::address_hash, household::member_hash};

async fn contact(client: &Client, body: Value) -> (u64, String) {
    let response = client.post("/api/v1/contacts", body).await;
    assert_eq!(response.status(), 201, "create contact");
    let value: Value = response.json().await.unwrap();
    (value["contact"]["id"].as_u64().unwrap(), value["contact"]["uid"].as_str().unwrap().to_string())
}

async fn household(client: &Client, body: Value) -> u64 {
    let response = client.post("/api/v1/households", body).await;
    assert_eq!(response.status(), 201, "create household");
    response.json::<Value>().await.unwrap()["household"]["id"].as_u64().unwrap()
}

async fn member(client: &Client, household: u64, body: Value) -> Value {
    let response = client.post(&format!("/api/v1/households/{household}/members"), body).await;
    assert_eq!(response.status(), 201, "add member");
    response.json::<Value>().await.unwrap()["member"].clone()
}

async fn json_of(response: reqwest::Response, status: u16) -> Value {
    let got = response.status().as_u16();
    let text = response.text().await.unwrap();
    assert_eq!(got, status, "{text}");
    serde_json::from_str(&text).unwrap()
}

async fn suggestions(client: &Client, path: &str) -> Vec<Value> {
    let body = json_of(client.get(path).await, 200).await;
    let list = body["suggestions"].as_array().unwrap().clone();
    assert_eq!(body["total"], list.len(), "{body}");
    list
}

fn ids(list: &Value, key: &str) -> Vec<u64> {
    let mut out: Vec<u64> = list.as_array().unwrap().iter().map(|v| v[key].as_u64().unwrap()).collect();
    out.sort_unstable();
    out
}

#[tokio::test]
async fn households_crud_with_validation_paging_and_if_match() {
    let server = Instance::new().spawn();
    let a = server.sign_up("ada").await;

    let response = a
        .post(
            "/api/v1/households",
            json!({ "name": "The Lovelaces", "type": "family_unit", "notes": "Sunday lunch",
                "address": { "street": "1 Main St", "city": "Springfield", "region": "IL", "postal_code": "62701", "country": "US" } }),
        )
        .await;
    assert_eq!(response.status(), 201);
    let etag = response.headers()["etag"].to_str().unwrap().to_string();
    let created = response.json::<Value>().await.unwrap();
    assert_eq!(created["message"], "Household created");
    let h = &created["household"];
    let id = h["id"].as_u64().unwrap();
    assert_eq!(
        (h["name"].as_str(), h["type"].as_str(), h["notes"].as_str()),
        (Some("The Lovelaces"), Some("family_unit"), Some("Sunday lunch"))
    );
    assert_eq!(h["revision"], 1);
    assert_eq!(format!("\"{}\"", h["etag"].as_str().unwrap()), etag);
    assert_eq!(h["address_line"], "1 Main St, Springfield, IL 62701, US");
    assert_eq!(h["address"]["city"], "Springfield");
    assert!(
        h["address"]["components"].as_array().unwrap().contains(&json!({ "kind": "locality", "value": "Springfield" }))
    );

    // The card's JSContact form is accepted too; the type defaults to `other`.
    let card_form = json_of(
        a.post(
            "/api/v1/households",
            json!({ "name": "Flat 3", "address": { "components": [{ "kind": "name", "value": "3 High St" }, { "kind": "locality", "value": "Leeds" }], "countryCode": "GB" } }),
        )
        .await,
        201,
    )
    .await["household"]
        .clone();
    assert_eq!(card_form["type"], "other");
    assert_eq!(
        (card_form["address"]["street"].as_str(), card_form["address"]["country"].as_str()),
        (Some("3 High St"), Some("GB"))
    );
    assert_eq!(card_form["address_line"], "3 High St, Leeds, GB");
    let bare = household(&a, json!({ "name": "No address yet" })).await;
    let got = json_of(a.get(&format!("/api/v1/households/{bare}")).await, 200).await;
    assert_eq!((got["household"]["address"].clone(), got["members"].clone()), (Value::Null, json!([])));

    // Validation names the field.
    for (body, field) in [
        (json!({ "type": "family_unit" }), "name"),
        (json!({ "name": " " }), "name"),
        (json!({ "name": "x", "type": "castle" }), "type"),
        (json!({ "name": "x", "address": { "street": "s".repeat(201) } }), "address.street"),
    ] {
        let error = json_of(a.post("/api/v1/households", body.clone()).await, 400).await;
        assert_eq!(error["details"]["field"], field, "{body}: {error}");
    }

    // Get, list and page.
    let got = json_of(a.get(&format!("/api/v1/households/{id}")).await, 200).await;
    assert_eq!(got["household"]["name"], "The Lovelaces");
    let all = json_of(a.get("/api/v1/households").await, 200).await;
    assert_eq!((all["total"].as_u64(), all["households"].as_array().unwrap().len()), (Some(3), 3));
    assert!(all.get("members").is_none());
    let first = json_of(a.get("/api/v1/households?limit=2").await, 200).await;
    assert_eq!(first["households"].as_array().unwrap().len(), 2);
    let cursor = first["next_cursor"].as_str().unwrap();
    assert!(!cursor.is_empty());
    let second = json_of(a.get(&format!("/api/v1/households?limit=2&cursor={cursor}")).await, 200).await;
    assert_eq!((second["households"].as_array().unwrap().len(), second["next_cursor"].as_str()), (1, Some("")));
    let bad = json_of(a.get("/api/v1/households?cursor=%21%21").await, 400).await;
    assert_eq!(bad["details"]["field"], "cursor");

    // Update: a stale If-Match is refused; PUT replaces (an absent address clears it).
    let path = format!("/api/v1/households/{id}");
    let stale = a
        .request(Method::PUT, &path)
        .header("if-match", "\"e-1-9\"")
        .json(&json!({ "name": "x" }))
        .send()
        .await
        .unwrap();
    assert_eq!(stale.status(), 412);
    let updated = a
        .request(Method::PUT, &path)
        .header("if-match", &etag)
        .json(&json!({ "name": "Lovelace-Byron", "type": "family_unit" }))
        .send()
        .await
        .unwrap();
    let updated = json_of(updated, 200).await;
    assert_eq!((updated["name"].as_str(), updated["revision"].as_u64()), (Some("Lovelace-Byron"), Some(2)));
    assert_eq!((updated["address"].clone(), updated["address_line"].as_str()), (Value::Null, Some("")));
    assert_eq!(json_of(a.send(Method::PUT, &path, json!({ "name": "" })).await, 400).await["details"]["field"], "name");
    assert_eq!(a.send(Method::PUT, "/api/v1/households/999999", json!({ "name": "x" })).await.status(), 404);

    // Delete, conditional too.
    let stale = a.request(Method::DELETE, &path).header("if-match", "\"1\"").send().await.unwrap();
    assert_eq!(stale.status(), 412);
    let deleted = a.request(Method::DELETE, &path).header("if-match", "\"2\"").send().await.unwrap();
    assert_eq!(json_of(deleted, 200).await["message"], "Household deleted");
    assert_eq!(a.get(&path).await.status(), 404);
    assert_eq!(a.send(Method::DELETE, &path, json!(null)).await.status(), 404);
    assert_eq!(json_of(a.get("/api/v1/households").await, 200).await["total"], 2);
}

#[tokio::test]
async fn members_keep_since_and_until_verbatim_and_follow_their_contact_and_household() {
    let server = Instance::new().spawn();
    let a = server.sign_up("ada").await;
    let (ada, ada_uid) = contact(&a, json!({ "firstname": "Ada", "lastname": "Lovelace" })).await;
    let (bob, bob_uid) = contact(&a, json!({ "firstname": "Bob" })).await;
    let home = household(&a, json!({ "name": "Home" })).await;
    let flat = household(&a, json!({ "name": "Student flat", "type": "roommates" })).await;

    // Added by UID or by id; since/until are any text, kept exactly as sent.
    let m = member(&a, home, json!({ "member_vcard_uid": ada_uid, "role": "adult", "since": "2019" })).await;
    assert_eq!(
        (
            m["household_id"].as_u64(),
            m["contact_id"].as_u64(),
            m["member_vcard_uid"].as_str(),
            m["contact_name"].as_str()
        ),
        (Some(home), Some(ada), Some(ada_uid.as_str()), Some("Ada Lovelace"))
    );
    assert_eq!((m["role"].as_str(), m["since"].as_str(), m["until"].as_str()), (Some("adult"), Some("2019"), Some("")));
    let b = member(&a, home, json!({ "contact_id": bob, "since": "--06-01", "until": " sometime in 2031?? " })).await;
    assert_eq!((b["since"].as_str(), b["until"].as_str()), (Some("--06-01"), Some(" sometime in 2031?? ")));
    // A contact in several households over time.
    member(&a, flat, json!({ "contact_id": ada, "role": "roommate", "since": "2015-09", "until": "2018" })).await;

    // Errors: duplicate, unknown contact or household, nothing named, too long.
    let duplicate =
        json_of(a.post(&format!("/api/v1/households/{home}/members"), json!({ "contact_id": ada })).await, 409).await;
    assert_eq!(duplicate["code"], "ALREADY_EXISTS");
    let path = format!("/api/v1/households/{home}/members");
    assert_eq!(a.post(&path, json!({ "contact_id": 999999 })).await.status(), 404);
    assert_eq!(
        a.post(&path, json!({ "member_vcard_uid": "00000000-0000-4000-8000-000000000000" })).await.status(),
        404
    );
    assert_eq!(a.post("/api/v1/households/999999/members", json!({ "contact_id": ada })).await.status(), 404);
    assert_eq!(json_of(a.post(&path, json!({ "role": "x" })).await, 400).await["details"]["field"], "member_vcard_uid");
    assert_eq!(
        json_of(a.post(&path, json!({ "contact_id": bob, "since": "9".repeat(101) })).await, 400).await["details"]["field"],
        "since"
    );

    // Listing: per household, with the households, and the households of one contact.
    let listed = json_of(a.get(&path).await, 200).await;
    assert_eq!((listed["total"].as_u64(), ids(&listed["members"], "contact_id")), (Some(2), vec![ada, bob]));
    let got = json_of(a.get(&format!("/api/v1/households/{home}")).await, 200).await;
    assert_eq!(ids(&got["members"], "contact_id"), vec![ada, bob]);
    let with = json_of(a.get("/api/v1/households?include_members=true").await, 200).await;
    assert_eq!(with["members"].as_array().unwrap().len(), 3);
    let of_ada = json_of(a.get(&format!("/api/v1/households?contact_id={ada}")).await, 200).await;
    assert_eq!((ids(&of_ada["households"], "id"), of_ada["total"].as_u64()), (vec![home, flat], Some(2)));
    let of_bob = json_of(a.get(&format!("/api/v1/households?member_vcard_uid={bob_uid}")).await, 200).await;
    assert_eq!(ids(&of_bob["households"], "id"), vec![home]);
    assert_eq!(a.get("/api/v1/households?contact_id=999999").await.status(), 404);
    assert_eq!(
        json_of(a.get("/api/v1/households?include_members=maybe").await, 400).await["details"]["field"],
        "include_members"
    );
    assert_eq!(json_of(a.get("/api/v1/households?order=sideways").await, 400).await["details"]["field"], "order");

    // Update by contact UID or membership id: absent members stay, "" clears, If-Match applies.
    let by_uid = format!("/api/v1/households/{home}/members/{ada_uid}");
    let edited =
        json_of(a.send(Method::PATCH, &by_uid, json!({ "until": "2024-02" })).await, 200).await["member"].clone();
    assert_eq!(
        (edited["role"].as_str(), edited["since"].as_str(), edited["until"].as_str()),
        (Some("adult"), Some("2019"), Some("2024-02"))
    );
    assert_eq!(edited["revision"], 2);
    let by_id = format!("/api/v1/households/{home}/members/{}", b["id"]);
    let stale = a
        .request(Method::PATCH, &by_id)
        .header("if-match", "\"7\"")
        .json(&json!({ "role": "x" }))
        .send()
        .await
        .unwrap();
    assert_eq!(stale.status(), 412);
    let edited =
        json_of(a.send(Method::PATCH, &by_id, json!({ "role": "child", "until": "" })).await, 200).await["member"]
            .clone();
    assert_eq!(
        (edited["role"].as_str(), edited["since"].as_str(), edited["until"].as_str()),
        (Some("child"), Some("--06-01"), Some(""))
    );
    // A membership id of another household does not name a member of this one.
    assert_eq!(
        a.send(Method::PATCH, &format!("/api/v1/households/{flat}/members/{}", b["id"]), json!({})).await.status(),
        404
    );
    assert_eq!(
        a.send(Method::PATCH, &format!("/api/v1/households/{flat}/members/{bob_uid}"), json!({})).await.status(),
        404
    );

    // Remove a member.
    let removed = json_of(a.send(Method::DELETE, &by_uid, json!(null)).await, 200).await;
    assert_eq!(removed["message"], "Member removed");
    assert_eq!(a.send(Method::DELETE, &by_uid, json!(null)).await.status(), 404);
    assert_eq!(ids(&json_of(a.get(&path).await, 200).await["members"], "contact_id"), vec![bob]);
    // ... and add them back later.
    member(&a, home, json!({ "member_vcard_uid": ada_uid, "since": "2025" })).await;

    // Deleting a contact drops its memberships.
    assert_eq!(a.send(Method::DELETE, &format!("/api/v1/contacts/{bob}"), json!(null)).await.status(), 200);
    assert_eq!(ids(&json_of(a.get(&path).await, 200).await["members"], "contact_id"), vec![ada]);

    // Deleting a household drops its membership rows: Ada is left in Home only.
    assert_eq!(a.send(Method::DELETE, &format!("/api/v1/households/{flat}"), json!(null)).await.status(), 200);
    let of_ada = json_of(a.get(&format!("/api/v1/households?contact_id={ada}&include_members=true")).await, 200).await;
    assert_eq!((ids(&of_ada["households"], "id"), of_ada["total"].as_u64()), (vec![home], Some(1)));
    assert_eq!(of_ada["members"].as_array().unwrap().len(), 1);
    assert_eq!(a.get(&format!("/api/v1/households/{flat}/members")).await.status(), 404);
}

#[tokio::test]
async fn address_suggestions_appear_when_they_should_and_dismissals_stick() {
    let server = Instance::new().spawn();
    let a = server.sign_up("ada").await;
    let (ada, _) = contact(&a, json!({ "firstname": "Ada", "address": "1 Main St, Springfield" })).await;
    // The same address in parts, in another case: the same line once normalized.
    let (bob, bob_uid) = contact(
        &a,
        json!({ "card": { "name": { "full": "Bob" }, "addresses": [{ "components": [
            { "kind": "name", "value": "1 main st" }, { "kind": "locality", "value": "SPRINGFIELD" }] }] } }),
    )
    .await;
    let (cy, _) = contact(&a, json!({ "firstname": "Cy", "address": "9 Elm Rd, Shelbyville" })).await;
    let (dee, _) = contact(&a, json!({ "firstname": "Dee" })).await;
    let (eve, _) = contact(&a, json!({ "firstname": "Eve", "address": "5 Oak Ave" })).await;
    let (fay, _) = contact(&a, json!({ "firstname": "Fay", "address": "3 Pine Ct" })).await;
    let (gus, _) = contact(&a, json!({ "firstname": "Gus", "address": "3 Pine Ct" })).await;

    assert!(suggestions(&a, "/api/v1/households/suggestions").await.is_empty());

    // (a)+(b): no household address, two members share one.
    let h1 = household(&a, json!({ "name": "Springfield" })).await;
    member(&a, h1, json!({ "contact_id": ada })).await;
    // One member with an address and none set: that address is suggested.
    let lone = suggestions(&a, &format!("/api/v1/households/{h1}/suggestions")).await;
    assert_eq!((lone.len(), lone[0]["reason"].as_str()), (1, Some("member_address")));
    assert_eq!(lone[0]["member_ids"], json!([ada]));
    member(&a, h1, json!({ "contact_id": bob })).await;
    member(&a, h1, json!({ "contact_id": dee })).await;
    let found = suggestions(&a, &format!("/api/v1/households/{h1}/suggestions")).await;
    assert_eq!(found.len(), 1, "{found:?}");
    let shared = found[0].clone();
    assert_eq!((shared["household_id"].as_u64(), shared["reason"].as_str()), (Some(h1), Some("members_share_address")));
    assert_eq!(shared["member_ids"], json!([ada, bob]));
    assert!(shared["member_vcard_uids"].as_array().unwrap().contains(&json!(bob_uid)));
    assert_eq!(
        (shared["address_line"].as_str(), shared["current_address_line"].as_str()),
        (Some("1 Main St, Springfield"), Some(""))
    );
    // Stable hashes: SHA-256 of the normalized line and of the sorted member ids.
    assert_eq!(shared["address_hash"], address_hash("1 main st, springfield"));
    assert_eq!(shared["member_hash"], member_hash(&[bob, ada]));
    assert_eq!(
        suggestions(&a, &format!("/api/v1/households/{h1}/suggestions")).await,
        found,
        "computed the same way on every read"
    );

    // (b) with several member addresses: each is suggested, most holders first.
    member(&a, h1, json!({ "contact_id": cy })).await;
    let found = suggestions(&a, &format!("/api/v1/households/{h1}/suggestions")).await;
    let reasons: Vec<&str> = found.iter().map(|s| s["reason"].as_str().unwrap()).collect();
    assert_eq!(reasons, ["members_share_address", "member_address"]);
    assert_eq!(
        (found[1]["member_ids"].clone(), found[1]["address_line"].as_str()),
        (json!([cy]), Some("9 Elm Rd, Shelbyville"))
    );

    // Not suggested: the household already has the members' address; a former member's address.
    let h2 =
        household(&a, json!({ "name": "Same", "address": { "street": "1 Main St", "city": "Springfield" } })).await;
    member(&a, h2, json!({ "contact_id": ada })).await;
    member(&a, h2, json!({ "contact_id": bob })).await;
    assert!(suggestions(&a, &format!("/api/v1/households/{h2}/suggestions")).await.is_empty());
    let h6 = household(&a, json!({ "name": "Moved out" })).await;
    member(&a, h6, json!({ "contact_id": eve, "since": "2012", "until": "2020" })).await;
    assert!(suggestions(&a, &format!("/api/v1/households/{h6}/suggestions")).await.is_empty());
    // Nor for a household whose members have no address.
    let h4 = household(&a, json!({ "name": "Nobody's address" })).await;
    member(&a, h4, json!({ "contact_id": dee })).await;
    assert!(suggestions(&a, &format!("/api/v1/households/{h4}/suggestions")).await.is_empty());
    // A single member's address does not override an address the household has.
    let h5 = household(&a, json!({ "name": "Own", "address": { "full": "77 Other St" } })).await;
    member(&a, h5, json!({ "contact_id": cy })).await;
    assert!(suggestions(&a, &format!("/api/v1/households/{h5}/suggestions")).await.is_empty());

    // (a) with a different household address: two members share another one.
    let h3 = household(&a, json!({ "name": "Pine", "address": { "full": "77 Other St" } })).await;
    member(&a, h3, json!({ "contact_id": fay })).await;
    member(&a, h3, json!({ "contact_id": gus, "role": "adult" })).await;
    let pine = suggestions(&a, &format!("/api/v1/households/{h3}/suggestions")).await;
    assert_eq!(pine.len(), 1);
    assert_eq!(
        (pine[0]["current_address_line"].as_str(), pine[0]["address_line"].as_str()),
        (Some("77 Other St"), Some("3 Pine Ct"))
    );
    assert_eq!(pine[0]["reason"], "members_share_address");

    // The list across households, and the path older clients POST to.
    let all = suggestions(&a, "/api/v1/households/suggestions").await;
    assert_eq!(all.len(), 3);
    let posted = json_of(a.post("/api/v1/households/suggest-addresses", json!({})).await, 200).await;
    assert_eq!(posted["suggestions"], json!(all));
    assert_eq!(a.get("/api/v1/households/999999/suggestions").await.status(), 404);

    // Taking a suggestion: set the address it carries; it is then gone.
    let taken = a
        .send(
            Method::PUT,
            &format!("/api/v1/households/{h3}"),
            json!({ "name": "Pine", "address": pine[0]["address"] }),
        )
        .await;
    assert_eq!(json_of(taken, 200).await["address_line"], "3 Pine Ct");
    assert!(suggestions(&a, &format!("/api/v1/households/{h3}/suggestions")).await.is_empty());

    // Dismissing: gone for good, the other one stays; twice is fine.
    let dismiss = json!({ "address_hash": shared["address_hash"], "member_hash": shared["member_hash"] });
    assert_eq!(
        json_of(a.post("/api/v1/households/suggestions/dismiss", dismiss.clone()).await, 200).await["message"],
        "Suggestion dismissed"
    );
    assert_eq!(a.post("/api/v1/households/suggestions/dismiss", dismiss).await.status(), 200);
    let left = suggestions(&a, &format!("/api/v1/households/{h1}/suggestions")).await;
    assert_eq!(left.len(), 1);
    assert_eq!(left[0]["member_ids"], json!([cy]));
    // Edits elsewhere do not bring it back.
    a.send(Method::PUT, &format!("/api/v1/households/{h1}"), json!({ "name": "Springfield!" })).await;
    assert_eq!(suggestions(&a, "/api/v1/households/suggestions").await.len(), 1);
    // A different member set is a different suggestion.
    let (hal, _) = contact(&a, json!({ "firstname": "Hal", "address": "1 Main St, Springfield" })).await;
    member(&a, h1, json!({ "contact_id": hal })).await;
    let again = suggestions(&a, &format!("/api/v1/households/{h1}/suggestions")).await;
    assert_eq!(again[0]["member_ids"], json!([ada, bob, hal]));
    assert_eq!(again[0]["address_hash"], shared["address_hash"]);
    assert_ne!(again[0]["member_hash"], shared["member_hash"]);

    // Bad hashes are named.
    for (body, field) in [
        (json!({ "address_hash": "abc", "member_hash": shared["member_hash"] }), "address_hash"),
        (json!({ "address_hash": shared["address_hash"] }), "member_hash"),
    ] {
        let error = json_of(a.post("/api/v1/households/suggestions/dismiss", body).await, 400).await;
        assert_eq!(error["details"]["field"], field);
    }
}

#[tokio::test]
async fn search_can_be_restricted_to_a_household() {
    let server = Instance::new().spawn();
    let a = server.sign_up("ada").await;
    let (ada, _) = contact(&a, json!({ "firstname": "Ada", "lastname": "Quince" })).await;
    let (bob, _) = contact(&a, json!({ "firstname": "Bob", "lastname": "Quince" })).await;
    for (c, text) in [(ada, "marmalade recipe from Ada"), (bob, "marmalade recipe from Bob")] {
        assert_eq!(a.post(&format!("/api/v1/contacts/{c}/notes"), json!({ "content": text })).await.status(), 201);
    }
    for (c, title) in [(ada, "marmalade tasting"), (bob, "marmalade picnic")] {
        let body = json!({ "title": title, "date": "2026-01-01", "contact_ids": [c] });
        assert_eq!(a.post("/api/v1/activities", body).await.status(), 201);
    }
    let home = household(&a, json!({ "name": "Quince home" })).await;
    let membership = member(&a, home, json!({ "contact_id": ada })).await["id"].as_u64().unwrap();

    let everything = json_of(a.get("/api/v1/search?q=marmalade").await, 200).await;
    assert_eq!(everything["totals"], json!({ "contacts": 0, "notes": 2, "activities": 2 }));
    let only = json_of(a.get(&format!("/api/v1/search?q=marmalade&household_id={home}")).await, 200).await;
    assert_eq!(only["totals"], json!({ "contacts": 0, "notes": 1, "activities": 1 }), "{only}");
    assert_eq!(only["notes"][0]["content"], "marmalade recipe from Ada");
    assert_eq!(only["activities"][0]["title"], "marmalade tasting");

    let people = json_of(a.get("/api/v1/search?q=quince").await, 200).await;
    assert_eq!(people["contacts"].as_array().unwrap().len(), 2);
    let members = json_of(a.get(&format!("/api/v1/search?q=quince&household_id={home}")).await, 200).await;
    assert_eq!((ids(&members["contacts"], "id"), members["totals"]["contacts"].as_u64()), (vec![ada], Some(1)));
    let paged = json_of(a.get(&format!("/api/v1/search?q=quince&household_id={home}&offset=1")).await, 200).await;
    assert_eq!(paged["contacts"], json!([]));

    // A household without members finds nothing; an unknown one, or not an id, is 404.
    let empty = household(&a, json!({ "name": "Empty" })).await;
    let none = json_of(a.get(&format!("/api/v1/search?q=marmalade&household_id={empty}")).await, 200).await;
    assert_eq!(
        (none["notes"].clone(), none["contacts"].clone(), none["activities"].clone()),
        (json!([]), json!([]), json!([]))
    );
    for bad in ["999999", "0b6f2ee4-5c2e-4d0b-9a51-8d6f0f1c2a3b", "abc"] {
        let response = a.get(&format!("/api/v1/search?q=marmalade&household_id={bad}")).await;
        assert_eq!(response.status(), 404, "{bad}");
    }
    // Even a query too short to search checks the household.
    assert_eq!(a.get("/api/v1/search?q=m&household_id=999999").await.status(), 404);

    // After a member leaves the household entirely, their notes drop out.
    let left = a.send(Method::DELETE, &format!("/api/v1/households/{home}/members/{membership}"), json!(null)).await;
    assert_eq!(left.status(), 200);
    let gone = json_of(a.get(&format!("/api/v1/search?q=marmalade&household_id={home}")).await, 200).await;
    assert_eq!(gone["totals"], json!({ "contacts": 0, "notes": 0, "activities": 0 }));
}

#[tokio::test]
async fn the_daily_purge_removes_household_and_membership_tombstones() {
    use jiff::Timestamp;
    use mycorrhizal::crm::{household::Household, household::HouseholdMember};
    use mycorrhizal_engine::system::Trigger;
    let app = crate::sessions::in_process(&[("DELETED_RETENTION_DAYS", "30")]).await;
    app.clock.set("2026-01-01T10:00:00Z".parse::<Timestamp>().unwrap());
    let cookie = app.signed_in().await;
    let (_, contact, _) = app.call("POST", "/api/v1/contacts", Some(&cookie), json!({ "firstname": "Kit" })).await;
    let (_, created, _) = app.call("POST", "/api/v1/households", Some(&cookie), json!({ "name": "Gone" })).await;
    let id = created["household"]["id"].as_u64().unwrap();
    let path = format!("/api/v1/households/{id}/members");
    let (status, added, _) =
        app.call("POST", &path, Some(&cookie), json!({ "contact_id": contact["contact"]["id"] })).await;
    assert_eq!(status, 201, "{added}");
    let membership = added["member"]["id"].as_u64().unwrap();
    assert_eq!(app.call("DELETE", &format!("/api/v1/households/{id}"), Some(&cookie), json!({})).await.0, 200);
    let user = mycorrhizal_engine::UserId(1);
    let tombstones = |app: &crate::sessions::InProcess| {
        let view = app.state.engine.user(user).view().unwrap();
        (
            view.get_any::<Household>(id).unwrap().is_some_and(|r| r.is_deleted()),
            view.get_any::<HouseholdMember>(membership).unwrap().is_some_and(|r| r.is_deleted()),
        )
    };
    assert_eq!(tombstones(&app), (true, true), "deleting the household deleted its member row too");

    app.clock.set("2026-02-01T10:00:01Z".parse::<Timestamp>().unwrap());
    mycorrhizal::jobs::run(&app.state, mycorrhizal::jobs::PURGE, Trigger::Manual).await.unwrap();
    assert_eq!(tombstones(&app), (false, false), "both purged after the window");
}
