//! Contacts, relationships, notes, activities and reminders over HTTP.

use serde_json::{Value, json};

use crate::helpers::{Client, Instance};

fn fixture_card() -> Value {
    let detail: Value = serde_json::from_str(include_str!("../fixtures/api-shapes/contact-detail.json")).unwrap();
    let mut card = detail["contact"]["card"].clone();
    card.as_object_mut().unwrap().remove("relatedTo");
    card
}

async fn json_of(r: reqwest::Response) -> Value {
    r.json().await.unwrap()
}

pub async fn new_contact(client: &Client, first: &str, last: &str) -> Value {
    let response = client.post("/api/v1/contacts", json!({ "firstname": first, "lastname": last })).await;
    assert_eq!(response.status(), 201);
    json_of(response).await["contact"].clone()
}

#[tokio::test]
async fn a_card_is_stored_whole_projected_and_conditionally_updated() {
    let server = Instance::new().spawn();
    let ada = server.sign_up("ada").await;
    let created = ada
        .post(
            "/api/v1/contacts",
            json!({ "card": fixture_card(), "crm": { "circles": ["Friends"], "how_we_met": "fixture" } }),
        )
        .await;
    assert_eq!(created.status(), 201);
    let etag = created.headers()["etag"].to_str().unwrap().to_string();
    let contact = json_of(created).await["contact"].clone();
    let id = contact["id"].as_u64().unwrap();
    assert_eq!(etag, format!("\"e-{id}-1\""));
    for (field, expected) in [
        ("firstname", "Fixture"),
        ("lastname", "Primary"),
        ("email", "fixture.primary@example.com"),
        ("phone", "+1 555-0100"),
        ("birthday", "1990-06-15"),
        ("sort_name", "primary fixture"),
        ("address", "1 Fixture Way, Fixtureville, CA 94000, US"),
    ] {
        assert_eq!(contact[field], expected, "{field}");
    }
    assert_eq!(contact["card"]["emails"][0]["contexts"], json!(["home"]), "the card is kept as sent");
    assert_eq!(contact["crm"]["how_we_met"], "fixture");
    assert_eq!(contact["circles"], json!(["Friends"]));

    let path = format!("/api/v1/contacts/{id}");
    let cached = ada.request(reqwest::Method::GET, &path).header("if-none-match", &etag).send().await.unwrap();
    assert_eq!(cached.status(), 304);
    let restricted = json_of(ada.get(&format!("{path}?fields=firstname,email")).await).await;
    assert_eq!(
        restricted.as_object().unwrap().keys().cloned().collect::<Vec<_>>(),
        ["email", "etag", "firstname", "id", "revision", "uid"]
    );

    let mut card = fixture_card();
    card["nicknames"] = json!([{ "name": "Fixy" }]);
    let updated = ada
        .request(reqwest::Method::PUT, &path)
        .header("if-match", &etag)
        .json(&json!({ "card": card }))
        .send()
        .await
        .unwrap();
    assert_eq!(updated.status(), 200);
    assert_eq!(json_of(updated).await["nickname"], "Fixy");
    let stale = ada
        .request(reqwest::Method::PUT, &path)
        .header("if-match", &etag)
        .json(&json!({ "card": fixture_card() }))
        .send()
        .await
        .unwrap();
    assert_eq!(stale.status(), 412);
    let body = json_of(stale).await;
    assert_eq!(
        (body["code"].as_str(), body["details"]["expected_revision"].as_u64()),
        (Some("PRECONDITION_FAILED"), Some(2))
    );
    let fresh = ada.request(reqwest::Method::GET, &path).header("if-none-match", &etag).send().await.unwrap();
    assert_eq!(fresh.status(), 200, "a stale If-None-Match gets the current body");

    assert_eq!(
        ada.request(reqwest::Method::DELETE, &path).header("if-match", "\"1\"").send().await.unwrap().status(),
        412
    );
    assert_eq!(ada.request(reqwest::Method::DELETE, &path).send().await.unwrap().status(), 200);
    for gone in [path.clone(), format!("{path}/detail"), format!("{path}/notes"), format!("{path}/reminders")] {
        assert_eq!(ada.get(&gone).await.status(), 404, "{gone}");
    }
    assert_eq!(ada.post(&format!("{path}/archive"), json!({})).await.status(), 404);
}

#[tokio::test]
async fn bad_cards_name_the_field_and_birthdays_follow_the_lexical_rule() {
    let server = Instance::new().spawn();
    let ada = server.sign_up("ada").await;
    let nameless =
        ada.post("/api/v1/contacts", json!({ "card": { "emails": [{ "address": "x@example.org" }] } })).await;
    assert_eq!(nameless.status(), 400);
    assert_eq!(json_of(nameless).await["details"]["field"], "card.name");
    let wrong_type = ada
        .post("/api/v1/contacts", json!({ "card": { "name": { "full": "A B" }, "emails": [{ "address": 5 }] } }))
        .await;
    assert_eq!(json_of(wrong_type).await["details"]["field"], "card.emails[0].address");
    let crm = ada.post("/api/v1/contacts", json!({ "firstname": "A", "crm": [1] })).await;
    assert_eq!(json_of(crm).await["details"]["field"], "crm");
    // Every shape but YYYY-MM-DD and --MM-DD is refused on write, naming the field.
    for shape in ["15/03/1990", "1990-3-5", "sometime in May", "19900315", "--0315"] {
        let refused = ada.post("/api/v1/contacts", json!({ "firstname": "Bea", "birthday": shape })).await;
        assert_eq!(refused.status(), 400, "{shape}");
        assert_eq!(json_of(refused).await["details"]["field"], "birthday", "{shape}");
    }
    let yearless = ada.post("/api/v1/contacts", json!({ "firstname": "Cy", "birthday": "--02-29" })).await;
    let c = json_of(yearless).await["contact"].clone();
    assert_eq!(c["birthday"], "--02-29");
    assert_eq!(c["card"]["anniversaries"][0]["date"]["partial"], json!({ "month": 2, "day": 29 }));
    // The validator is lexical: month 13 has the shape, so it is accepted and given back as
    // sent; the card holds no birthday for it (no BDAY can say it).
    let odd = ada.post("/api/v1/contacts", json!({ "firstname": "Di", "birthday": "1990-13-45" })).await;
    assert_eq!(odd.status(), 201);
    let c = json_of(odd).await["contact"].clone();
    assert_eq!(c["birthday"], "1990-13-45");
    assert!(c["card"].get("anniversaries").is_none(), "{c}");
    // A stored value off the calendar stays untouched by an edit that does not name it.
    let path = format!("/api/v1/contacts/{}", c["id"]);
    let edited = ada.send(reqwest::Method::PUT, &path, json!({ "firstname": "Di", "lastname": "Prince" })).await;
    assert_eq!(edited.status(), 200);
    let edited = json_of(edited).await;
    assert_eq!((edited["lastname"].as_str(), edited["birthday"].as_str()), (Some("Prince"), Some("1990-13-45")));
    let fixed = json_of(ada.send(reqwest::Method::PUT, &path, json!({ "birthday": "1990-12-05" })).await).await;
    assert_eq!(fixed["birthday"], "1990-12-05");
}

/// `since` and `sort=name` do not combine (400 naming `since`); either alone is served.
#[tokio::test]
async fn the_list_refuses_since_with_the_name_sort() {
    let server = Instance::new().spawn();
    let ada = server.sign_up("ada").await;
    new_contact(&ada, "Ann", "Lee").await;
    let refused = ada.get("/api/v1/contacts?sort=name&since=2026-01-01T00:00:00Z").await;
    assert_eq!(refused.status(), 400);
    let refused = json_of(refused).await;
    assert_eq!(
        (refused["code"].as_str(), refused["details"]["field"].as_str()),
        (Some("INVALID_INPUT"), Some("since"))
    );
    for ok in ["/api/v1/contacts?sort=name", "/api/v1/contacts?sort=updated_at&since=2026-01-01T00:00:00Z"] {
        assert_eq!(ada.get(ok).await.status(), 200, "{ok}");
    }
}

#[tokio::test]
async fn lists_sort_page_filter_and_count() {
    let server = Instance::new().spawn();
    let ada = server.sign_up("ada").await;
    let names = [("Zoe", "Adams"), ("Yann", "Baker"), ("Xia", "Chen"), ("Will", "Diaz"), ("Vera", "Evans")];
    let mut ids = Vec::new();
    for (first, last) in names {
        ids.push(new_contact(&ada, first, last).await["id"].as_u64().unwrap());
    }
    ada.post(&format!("/api/v1/contacts/{}/archive", ids[4]), json!({})).await;
    ada.post(&format!("/api/v1/contacts/{}/favorite", ids[1]), json!({})).await;
    ada.send(
        reqwest::Method::PUT,
        &format!("/api/v1/contacts/{}", ids[2]),
        json!({ "email": "xia.chen@lab.example.org", "phone": "+44 20 7946 0958", "crm": { "circles": ["Lab"] } }),
    )
    .await;

    let first = json_of(ada.get("/api/v1/contacts?sort=name&limit=2").await).await;
    let lastnames: Vec<&str> =
        first["contacts"].as_array().unwrap().iter().map(|c| c["lastname"].as_str().unwrap()).collect();
    assert_eq!(lastnames, ["Adams", "Baker"]);
    assert_eq!(first["total"], 4, "archived contacts are not counted by default");
    let cursor = first["next_cursor"].as_str().unwrap();
    let second = json_of(ada.get(&format!("/api/v1/contacts?sort=name&limit=2&cursor={cursor}")).await).await;
    let lastnames: Vec<&str> =
        second["contacts"].as_array().unwrap().iter().map(|c| c["lastname"].as_str().unwrap()).collect();
    assert_eq!(lastnames, ["Chen", "Diaz"]);
    assert_eq!(second["next_cursor"], "");

    let recent = json_of(ada.get("/api/v1/contacts?limit=1").await).await;
    assert_eq!(recent["contacts"][0]["lastname"], "Chen", "most recently updated first");
    assert_eq!(json_of(ada.get("/api/v1/contacts?archived=true").await).await["total"], 1);
    assert_eq!(json_of(ada.get("/api/v1/contacts?include_archived=true").await).await["total"], 5);
    assert_eq!(json_of(ada.get("/api/v1/contacts?favorites=true").await).await["contacts"][0]["lastname"], "Baker");
    for search in ["lab.example", "XIA", "7946", "chen"] {
        let found = json_of(ada.get(&format!("/api/v1/contacts?search={search}")).await).await;
        assert_eq!(
            (found["total"].as_u64(), found["contacts"][0]["lastname"].as_str()),
            (Some(1), Some("Chen")),
            "{search}"
        );
    }
    assert_eq!(json_of(ada.get("/api/v1/contacts?circle=Lab").await).await["total"], 1);
    assert_eq!(json_of(ada.get("/api/v1/contacts/circles").await).await, json!(["Lab"]));
    let random = json_of(ada.get("/api/v1/contacts/random").await).await;
    assert_eq!(random["contacts"].as_array().unwrap().len(), 4, "all active contacts, none archived");
    for bad in ["sort=age", "order=sideways", "archived=maybe", "cursor=%21%21"] {
        let response = ada.get(&format!("/api/v1/contacts?{bad}")).await;
        assert_eq!(response.status(), 400, "{bad}");
    }
}

#[tokio::test]
async fn relationships_link_two_contacts_both_ways_and_project_into_the_card() {
    let server = Instance::new().spawn();
    let ada = server.sign_up("ada").await;
    let anna = new_contact(&ada, "Anna", "Smith").await;
    let ben = new_contact(&ada, "Ben", "Smith").await;
    let (a, b) = (anna["id"].as_u64().unwrap(), ben["id"].as_u64().unwrap());
    let created =
        ada.post(&format!("/api/v1/contacts/{a}/relationships"), json!({ "target_id": b, "type": "sister" })).await;
    assert_eq!(created.status(), 201);
    let edge = json_of(created).await;
    assert_eq!(edge["type"], "sibling_of");
    let custom = ada
        .post(
            &format!("/api/v1/contacts/{a}/relationships"),
            json!({ "target_id": b, "type": "climbing_buddy", "sensitivity": "private" }),
        )
        .await;
    assert_eq!(json_of(custom).await["custom"], true);
    assert_eq!(
        ada.post(&format!("/api/v1/contacts/{a}/relationships"), json!({ "target_id": b, "type": "bad type!" }))
            .await
            .status(),
        400
    );
    assert_eq!(
        ada.post(&format!("/api/v1/contacts/{a}/relationships"), json!({ "target_id": a, "type": "friend" }))
            .await
            .status(),
        400
    );
    assert_eq!(
        ada.post(&format!("/api/v1/contacts/{a}/relationships"), json!({ "target_id": 999_999, "type": "friend" }))
            .await
            .status(),
        404
    );

    let outgoing = json_of(ada.get(&format!("/api/v1/contacts/{a}/relationships")).await).await;
    assert_eq!(outgoing["relationships"].as_array().unwrap().len(), 2);
    let incoming = json_of(ada.get(&format!("/api/v1/contacts/{b}/incoming-relationships")).await).await;
    assert_eq!(incoming["relationships"][0]["other_party_name"], "Anna Smith");
    let card = json_of(ada.get(&format!("/api/v1/contacts/{a}")).await).await["card"].clone();
    assert_eq!(
        card["relatedTo"],
        json!([{ "target": format!("urn:uuid:{}", ben["uid"].as_str().unwrap()), "relations": ["sibling"] }]),
        "only normal-sensitivity edges"
    );

    let graph = json_of(ada.get("/api/v1/graph").await).await;
    assert_eq!(graph["nodes"].as_array().unwrap().len(), 2);
    assert_eq!(graph["edges"].as_array().unwrap().len(), 2);
    let rid = edge["id"].as_u64().unwrap();
    let changed = ada
        .send(
            reqwest::Method::PUT,
            &format!("/api/v1/contacts/{a}/relationships/{rid}"),
            json!({ "target_id": b, "type": "friend" }),
        )
        .await;
    assert_eq!(json_of(changed).await["type"], "friend_of");
    ada.send(reqwest::Method::DELETE, &format!("/api/v1/contacts/{b}"), json!({})).await;
    let after = json_of(ada.get(&format!("/api/v1/contacts/{a}/relationships")).await).await;
    assert_eq!(after["relationships"], json!([]), "deleting a contact removes its edges");
}

#[tokio::test]
async fn notes_belong_to_a_contact_or_to_nobody() {
    let server = Instance::new().spawn();
    let ada = server.sign_up("ada").await;
    let c = new_contact(&ada, "Nora", "Note").await["id"].as_u64().unwrap();
    for (day, text) in
        [("2026-01-05", "New year call"), ("2026-03-10", "Moved to Lisbon"), ("2026-06-01", "Birthday plans")]
    {
        let r = ada
            .post(
                &format!("/api/v1/contacts/{c}/notes"),
                json!({ "content": text, "date": format!("{day}T12:00:00+02:00") }),
            )
            .await;
        assert_eq!(r.status(), 201);
    }
    let listed = json_of(ada.get(&format!("/api/v1/contacts/{c}/notes?limit=2")).await).await;
    let contents: Vec<&str> =
        listed["notes"].as_array().unwrap().iter().map(|n| n["content"].as_str().unwrap()).collect();
    assert_eq!(contents, ["Birthday plans", "Moved to Lisbon"]);
    let ranged =
        json_of(ada.get(&format!("/api/v1/contacts/{c}/notes?fromDate=2026-03-01&toDate=2026-03-31")).await).await;
    assert_eq!(ranged["notes"].as_array().unwrap().len(), 1);
    let searched = json_of(ada.get(&format!("/api/v1/contacts/{c}/notes?search=LISBON")).await).await;
    assert_eq!(searched["notes"][0]["content"], "Moved to Lisbon");
    assert_eq!(searched["notes"][0]["date"], "2026-03-10T10:00:00Z", "stored in UTC");

    let loose = json_of(ada.post("/api/v1/notes", json!({ "content": "Idea for a gift" })).await).await["note"].clone();
    assert!(loose["contact_id"].is_null());
    let unassigned = json_of(ada.get("/api/v1/notes").await).await;
    assert_eq!(
        (unassigned["total"].as_u64(), unassigned["notes"][0]["content"].as_str()),
        (Some(1), Some("Idea for a gift"))
    );
    let id = loose["id"].as_u64().unwrap();
    let moved = ada
        .send(
            reqwest::Method::PUT,
            &format!("/api/v1/notes/{id}"),
            json!({ "content": "Idea for a gift", "contact_id": c }),
        )
        .await;
    assert_eq!(json_of(moved).await["note"]["contact_id"], c);
    assert_eq!(json_of(ada.get("/api/v1/notes").await).await["total"], 0);
    let unassign =
        ada.send(reqwest::Method::PUT, &format!("/api/v1/notes/{id}"), json!({ "content": "Idea for a gift" })).await;
    assert!(json_of(unassign).await["note"]["contact_id"].is_null(), "leaving contact_id out unassigns");
    assert_eq!(ada.post("/api/v1/notes", json!({ "content": "" })).await.status(), 400);
    assert_eq!(ada.post("/api/v1/notes", json!({ "content": "x", "date": "yesterday" })).await.status(), 400);
}

#[tokio::test]
async fn activities_join_several_contacts_and_survive_a_contact_deletion() {
    let server = Instance::new().spawn();
    let ada = server.sign_up("ada").await;
    let a = new_contact(&ada, "Al", "One").await["id"].as_u64().unwrap();
    let b = new_contact(&ada, "Bo", "Two").await["id"].as_u64().unwrap();
    let created = ada
        .post(
            "/api/v1/activities",
            json!({ "title": "Dinner", "date": "2026-11-20T19:00:00Z", "contact_ids": [a, b], "type": "meal" }),
        )
        .await;
    assert_eq!(created.status(), 201);
    let activity = json_of(created).await["activity"].clone();
    assert_eq!(activity["contacts"].as_array().unwrap().len(), 2);
    assert_eq!(
        json_of(ada.get(&format!("/api/v1/contacts/{a}/activities")).await).await["activities"][0]["title"],
        "Dinner"
    );
    assert_eq!(
        ada.post("/api/v1/activities", json!({ "title": "X", "date": "2026-11-20", "contact_ids": [999_999] }))
            .await
            .status(),
        404
    );
    assert_eq!(ada.post("/api/v1/activities", json!({ "title": "", "date": "2026-11-20" })).await.status(), 400);
    let graph = json_of(ada.get("/api/v1/graph").await).await;
    assert!(graph["nodes"].as_array().unwrap().iter().any(|n| n["type"] == "activity"));
    ada.send(reqwest::Method::DELETE, &format!("/api/v1/contacts/{b}"), json!({})).await;
    let kept = json_of(ada.get(&format!("/api/v1/activities/{}", activity["id"])).await).await;
    assert_eq!(kept["contact_ids"], json!([a]), "the deleted contact leaves the activity");
}

#[tokio::test]
async fn reminders_zero_the_time_complete_into_the_timeline_and_recur() {
    let server = Instance::new().spawn();
    let ada = server.sign_up("ada").await;
    let c = new_contact(&ada, "Rita", "Remind").await["id"].as_u64().unwrap();
    let once = json_of(
        ada.post(
            &format!("/api/v1/contacts/{c}/reminders"),
            json!({ "message": "Send the book", "remind_at": "2026-01-15T17:45:00Z", "recurrence": "once" }),
        )
        .await,
    )
    .await["reminder"]
        .clone();
    assert_eq!(once["remind_at"], "2026-01-15T00:00:00Z");
    assert_eq!(once["overdue"], true);
    let done = json_of(ada.post(&format!("/api/v1/reminders/{}/complete", once["id"]), json!({})).await).await;
    assert!(done.get("reminder").is_none(), "a one-off reminder is done");
    assert_eq!(ada.get(&format!("/api/v1/reminders/{}", once["id"])).await.status(), 404);
    let monthly = json_of(ada.post(&format!("/api/v1/contacts/{c}/reminders"), json!({ "message": "Call", "remind_at": "2026-01-31", "recurrence": "monthly", "reoccur_from_completion": false })).await).await["reminder"].clone();
    let next =
        json_of(ada.post(&format!("/api/v1/reminders/{}/complete?skip=true", monthly["id"]), json!({})).await).await;
    let date = next["reminder"]["date"].as_str().unwrap().to_string();
    assert!(
        date.ends_with("-28") || date.ends_with("-30") || date.ends_with("-31") || date.ends_with("-29"),
        "anchored to month ends: {date}"
    );
    assert!(next.get("completion").is_none(), "skip records nothing");
    let completions =
        json_of(ada.get(&format!("/api/v1/contacts/{c}/reminder-completions")).await).await["completions"].clone();
    assert_eq!(completions.as_array().unwrap().len(), 1);
    assert_eq!(completions[0]["message"], "Send the book");
    let cid = completions[0]["id"].as_u64().unwrap();
    assert_eq!(
        ada.send(reqwest::Method::DELETE, &format!("/api/v1/reminder-completions/{cid}"), json!({})).await.status(),
        200
    );
    let bad = ada
        .post(
            &format!("/api/v1/contacts/{c}/reminders"),
            json!({ "message": "x", "remind_at": "2026-01-01", "recurrence": "fortnightly" }),
        )
        .await;
    assert_eq!(json_of(bad).await["details"]["field"], "recurrence");
    let upcoming = json_of(ada.get("/api/v1/reminders/upcoming").await).await;
    assert_eq!(upcoming["reminders"][0]["contact_name"], "Rita Remind");
}

#[tokio::test]
async fn the_detail_composite_always_has_every_collection() {
    let server = Instance::new().spawn();
    let ada = server.sign_up("ada").await;
    let c = new_contact(&ada, "Dee", "Tail").await["id"].as_u64().unwrap();
    ada.post(&format!("/api/v1/contacts/{c}/notes"), json!({ "content": "hello" })).await;
    let detail = json_of(ada.get(&format!("/api/v1/contacts/{c}/detail")).await).await;
    assert_eq!(detail["contact"]["id"], c);
    assert_eq!(detail["notes"][0]["content"], "hello");
    for key in [
        "notes",
        "activities",
        "completions",
        "reminders",
        "relationship_edges",
        "life_events",
        "agenda",
        "gifts",
        "field_values",
        "external_identities",
        "external_activities",
        "circles",
        "tags",
    ] {
        assert!(detail[key].is_array(), "{key} is an array");
    }
}

#[test]
fn phone_keys_are_the_last_nine_digits() {
    use mycorrhizal::crm::contact::phone_key;
    assert_eq!(phone_key("+44 20 7946 0958").as_deref(), Some("079460958"));
    assert_eq!(phone_key("020 7946 0958"), phone_key("+44 20 7946 0958"), "national and international forms match");
    assert_eq!(phone_key("(555) 12-34").as_deref(), Some("5551234"));
    assert_eq!(phone_key("123-456").as_deref(), Some("123456"), "six digits are enough");
    assert_eq!(phone_key("12 345"), None, "fewer than six digits");
    assert_eq!(phone_key("ext. ٣٤٥٦٧٨٩"), None, "ASCII digits only");
}

#[tokio::test]
async fn contacts_are_indexed_by_phone_key_and_favourite() {
    use mycorrhizal::crm::contact::{Contact, INDEX_FAVORITE, INDEX_PHONE};
    let instance = crate::helpers::Instance::new();
    let mut server = instance.spawn();
    let ada = server.sign_up("ada").await;
    let card = json!({ "name": { "full": "Phil Phone" }, "phones": [
        { "number": "+44 20 7946 0958" }, { "number": "020 7946 0958" }, { "number": "112" }] });
    let created = ada.post("/api/v1/contacts", json!({ "card": card })).await;
    assert_eq!(created.status(), 201);
    let c = json_of(created).await["contact"]["id"].as_u64().unwrap();
    let other = new_contact(&ada, "Fay", "Vourite").await["id"].as_u64().unwrap();
    ada.post(&format!("/api/v1/contacts/{other}/favorite"), json!({})).await;
    assert!(server.terminate().success());
    let engine = crate::helpers::open_engine(&instance.database());
    let view = engine.user(mycorrhizal_engine::UserId(ada.id)).view().unwrap();
    assert_eq!(view.find::<Contact>(INDEX_PHONE, "079460958").unwrap(), vec![c]);
    let entries = view.index_entries::<Contact>().unwrap();
    let phones: Vec<_> = entries.iter().filter(|(name, _, id)| name == INDEX_PHONE && *id == c).collect();
    assert_eq!(phones.len(), 1, "one entry per distinct key, none for a short number: {phones:?}");
    let favourites: Vec<_> = entries.iter().filter(|(name, _, _)| name == INDEX_FAVORITE).collect();
    assert_eq!(favourites, [&(INDEX_FAVORITE.to_string(), "vourite fay".to_string(), other)]);
}

/// `PUT /reminders/{id}` without `contact_id` keeps the reminder's contact; with one, it moves,
/// and only to a contact of the caller's; an unknown `order` on a dated list is refused by name.
#[tokio::test]
async fn a_reminder_update_keeps_its_contact_unless_given_and_dated_lists_name_a_bad_order() {
    let server = Instance::new().spawn();
    let ada = server.sign_up("ada").await;
    let bob = server.sign_up("bob").await;
    let first = new_contact(&ada, "Grace", "Hopper").await["id"].as_u64().unwrap();
    let second = new_contact(&ada, "Alan", "Turing").await["id"].as_u64().unwrap();
    let theirs = new_contact(&bob, "Eve", "Other").await["id"].as_u64().unwrap();
    let created = ada
        .post(
            &format!("/api/v1/contacts/{first}/reminders"),
            json!({ "message": "call", "remind_at": "2027-01-05", "recurrence": "once" }),
        )
        .await;
    assert_eq!(created.status(), 201);
    let id = json_of(created).await["reminder"]["id"].as_u64().unwrap();
    let path = format!("/api/v1/reminders/{id}");
    let put = |body: Value| ada.send(reqwest::Method::PUT, &path, body);
    let kept = put(json!({ "message": "call again", "remind_at": "2027-01-06", "recurrence": "weekly" })).await;
    assert_eq!(kept.status(), 200);
    let kept = json_of(kept).await;
    assert_eq!(kept["reminder"]["contact_id"], first, "{kept}");
    assert_eq!(kept["reminder"]["message"], "call again");
    let moved = json_of(
        put(json!({ "message": "call", "remind_at": "2027-01-06", "recurrence": "once", "contact_id": second })).await,
    )
    .await;
    assert_eq!(moved["reminder"]["contact_id"], second, "{moved}");
    let refused =
        put(json!({ "message": "x", "remind_at": "2027-01-06", "recurrence": "once", "contact_id": theirs })).await;
    assert_eq!(refused.status(), 404);
    assert_eq!(json_of(ada.get(&format!("/api/v1/reminders/{id}")).await).await["contact_id"], second);

    for path in ["/api/v1/notes?order=sideways", "/api/v1/activities?order=sideways"] {
        let response = ada.get(path).await;
        assert_eq!(response.status(), 400, "{path}");
        assert_eq!(json_of(response).await["details"]["field"], "order", "{path}");
    }
    assert_eq!(ada.get("/api/v1/notes?order=").await.status(), 200);
}
