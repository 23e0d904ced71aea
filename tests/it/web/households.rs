//! Households in the browser: the list, a household's page, members and suggested addresses,
//! and that no household (nor a contact's file) of one user reaches another.

use serde_json::{Value, json};

use super::{Browser, contact, location};
use crate::helpers::Instance;

/// The id in a `/households/<id>?...` location.
fn household_of(location: &str) -> u64 {
    location.trim_start_matches("/households/").split(['?', '#']).next().and_then(|s| s.parse().ok()).expect("id")
}

#[tokio::test(flavor = "multi_thread")]
async fn households_are_kept_from_the_browser_with_their_members_and_suggested_address() {
    let server = Instance::new().spawn();
    let api = server.sign_up("ada").await;
    let web = Browser::of(&server, &api).await;
    let card = |first: &str, street: &str| {
        json!({ "card": { "name": { "components": [{ "kind": "given", "value": first }, { "kind": "surname", "value": "Curie" }] },
            "addresses": [{ "components": [{ "kind": "name", "value": street }, { "kind": "locality", "value": "Paris" },
                { "kind": "postcode", "value": "75005" }, { "kind": "country", "value": "France" }] }] } })
    };
    let id_of = |v: Value| v["contact"]["id"].as_u64().expect("id");
    let marie = id_of(api.post("/api/v1/contacts", card("Marie", "36 Quai de Béthune")).await.json().await.unwrap());
    let pierre = id_of(api.post("/api/v1/contacts", card("Pierre", "36 Quai de Béthune")).await.json().await.unwrap());

    // The list page and the nav link; a refused token or a blank name changes nothing.
    let list = web.get("/households").await;
    assert_eq!(list.status(), 200);
    assert!(list.text().await.unwrap().contains("No households yet."));
    let dashboard = web.get("/").await.text().await.unwrap();
    assert!(dashboard.contains("href=\"/households\""));
    let no_token = web.post("/households", &[("name", "Forged"), ("_csrf", "x".repeat(32).as_str())]).await;
    assert_eq!(no_token.status(), 403);
    let blank = web.post("/households", &[("name", "  "), ("type", "family_unit"), ("city", "Warsaw")]).await;
    assert_eq!(blank.status(), 400);
    let page = blank.text().await.unwrap();
    assert!(page.contains("name: must be 1 to 200 characters"), "{page}");
    assert!(page.contains("value=\"Warsaw\""), "what was typed is kept");
    let households: Value = api.get("/api/v1/households").await.json().await.unwrap();
    assert_eq!(households["total"], 0);

    let created =
        web.post("/households", &[("name", "The Curies"), ("type", "family_unit"), ("notes", "Lab upstairs")]).await;
    assert_eq!(created.status(), 303);
    let id = household_of(&location(&created));
    let shown: Value = api.get(&format!("/api/v1/households/{id}")).await.json().await.unwrap();
    assert_eq!(
        (shown["household"]["name"].as_str(), shown["household"]["type"].as_str()),
        (Some("The Curies"), Some("family_unit"))
    );

    // Members: by name from the household's page, and from a contact's page.
    let added =
        web.post(&format!("/households/{id}/members"), &[("who", "Marie"), ("role", "adult"), ("since", "1895")]).await;
    assert_eq!(added.status(), 303, "{}", added.text().await.unwrap_or_default());
    let nobody = web.post(&format!("/households/{id}/members"), &[("who", "Einstein"), ("role", "adult")]).await;
    assert_eq!(nobody.status(), 400);
    let page = nobody.text().await.unwrap();
    assert!(page.contains("no contact matches") && page.contains("value=\"Einstein\""), "{page}");
    let contact_page = web.get(&format!("/contacts/{pierre}")).await.text().await.unwrap();
    assert!(contact_page.contains("Not in any household.") && contact_page.contains(&format!("value=\"{id}\"")));
    let joined = web
        .post(&format!("/contacts/{pierre}/households"), &[("household_id", &id.to_string()), ("role", "adult")])
        .await;
    assert_eq!(joined.status(), 303);
    let twice = web.post(&format!("/contacts/{pierre}/households"), &[("household_id", &id.to_string())]).await;
    assert_eq!(twice.status(), 409, "one membership per person and household");
    assert!(twice.text().await.unwrap().contains("role=\"alert\""));
    let contact_page = web.get(&format!("/contacts/{pierre}")).await.text().await.unwrap();
    assert!(contact_page.contains(&format!("href=\"/households/{id}\"")), "the contact's page links the household");
    let members: Value = api.get(&format!("/api/v1/households/{id}/members")).await.json().await.unwrap();
    assert_eq!(members["total"], 2, "{members}");
    assert_eq!(members["members"][0]["since"], "1895");

    // Both members live at the same address: it is suggested, and used.
    let page = web.get(&format!("/households/{id}")).await.text().await.unwrap();
    assert!(page.contains("Members share the address") && page.contains("36 Quai de Béthune"), "{page}");
    let hash = |name: &str| {
        page.split(&format!("name=\"{name}\" value=\""))
            .nth(1)
            .and_then(|r| r.split('"').next())
            .expect(name)
            .to_string()
    };
    let (address_hash, member_hash) = (hash("address_hash"), hash("member_hash"));
    let forged = web
        .post(&format!("/households/{id}/address"), &[("address_hash", &"0".repeat(64)), ("member_hash", &member_hash)])
        .await;
    assert_eq!(forged.status(), 404, "only an address the members give is written");
    let used = web
        .post(
            &format!("/households/{id}/address"),
            &[("address_hash", &address_hash), ("member_hash", &member_hash), ("back", &format!("/households/{id}"))],
        )
        .await;
    assert_eq!(used.status(), 303);
    assert_eq!(location(&used), format!("/households/{id}?notice=saved"));
    let shown: Value = api.get(&format!("/api/v1/households/{id}")).await.json().await.unwrap();
    assert_eq!(shown["household"]["address"]["street"], "36 Quai de Béthune", "{shown}");
    assert_eq!(shown["household"]["notes"], "Lab upstairs");

    // A household without an address is offered a member's; dismissed, it is not offered again.
    let lab = web.post("/households", &[("name", "The Radium Institute"), ("type", "other")]).await;
    let lab = household_of(&location(&lab));
    let joined = web.post(&format!("/contacts/{marie}/households"), &[("household_id", &lab.to_string())]).await;
    assert_eq!(joined.status(), 303);
    let page = web.get("/households").await.text().await.unwrap();
    assert!(page.contains("A member lives at") && page.contains("The Radium Institute"), "{page}");
    let page_hashes = |page: &str| -> (String, String) {
        let get = |name: &str| {
            page.split(&format!("name=\"{name}\" value=\""))
                .nth(1)
                .and_then(|r| r.split('"').next())
                .expect(name)
                .to_string()
        };
        (get("address_hash"), get("member_hash"))
    };
    let (a, m) = page_hashes(&page);
    let dismissed = web
        .post(
            "/households/suggestions/dismiss",
            &[("address_hash", &a), ("member_hash", &m), ("back", "https://evil.example/")],
        )
        .await;
    assert_eq!(dismissed.status(), 303);
    assert_eq!(location(&dismissed), "/households?notice=saved", "back only to a households page");
    let page = web.get("/households").await.text().await.unwrap();
    assert!(!page.contains("A member lives at"), "dismissed for good");

    // Edit: a bad field comes back typed; a stale form is refused and shows the current version.
    let long = "x".repeat(201);
    let bad = web
        .post(
            &format!("/households/{id}"),
            &[("name", "Curie family"), ("type", "family_unit"), ("city", long.as_str())],
        )
        .await;
    assert_eq!(bad.status(), 400);
    let page = bad.text().await.unwrap();
    assert!(page.contains("address.city") && page.contains("value=\"Curie family\""), "{page}");
    let stale =
        web.post(&format!("/households/{id}"), &[("revision", "1"), ("name", "Stale"), ("type", "other")]).await;
    assert_eq!(stale.status(), 409);
    assert!(stale.text().await.unwrap().contains("value=\"Stale\""));
    let current =
        api.get(&format!("/api/v1/households/{id}")).await.json::<Value>().await.unwrap()["household"]["revision"]
            .to_string();
    let saved = web
        .post(
            &format!("/households/{id}"),
            &[
                ("revision", current.as_str()),
                ("name", "Curie family"),
                ("type", "family_unit"),
                ("street", "36 Quai de Béthune"),
                ("city", "Paris"),
            ],
        )
        .await;
    assert_eq!(saved.status(), 303);
    let shown: Value = api.get(&format!("/api/v1/households/{id}")).await.json().await.unwrap();
    assert_eq!(
        (shown["household"]["name"].as_str(), shown["household"]["address"]["postal_code"].as_str()),
        (Some("Curie family"), Some(""))
    );

    // Remove a member, then delete the household (its memberships go with it).
    let member = members["members"][1]["id"].as_u64().expect("member id");
    let removed = web.post(&format!("/households/{id}/members/{member}/delete"), &[]).await;
    assert_eq!(removed.status(), 303);
    let members: Value = api.get(&format!("/api/v1/households/{id}/members")).await.json().await.unwrap();
    assert_eq!(members["total"], 1);
    let deleted = web.post(&format!("/households/{id}/delete"), &[]).await;
    assert_eq!(
        (deleted.status(), location(&deleted).as_str()),
        (reqwest::StatusCode::SEE_OTHER, "/households?notice=deleted")
    );
    assert_eq!(api.get(&format!("/api/v1/households/{id}")).await.status(), 404);
    assert_eq!(web.get(&format!("/households/{id}")).await.status(), 404);
}

#[tokio::test(flavor = "multi_thread")]
async fn no_household_or_file_reaches_another_user() {
    let server = Instance::new().spawn();
    let ada = server.sign_up("ada").await;
    let bob = server.sign_up("bob").await;
    let secret = contact(&ada, "Hidden").await;
    let household: Value =
        ada.post("/api/v1/households", json!({ "name": "Secret house", "type": "other" })).await.json().await.unwrap();
    let household = household["household"]["id"].as_u64().expect("id");
    let member = ada.post(&format!("/api/v1/households/{household}/members"), json!({ "contact_id": secret })).await;
    assert_eq!(member.status(), 201);
    let member = member.json::<Value>().await.unwrap()["member"]["id"].as_u64().expect("member id");
    let ada_web = Browser::of(&server, &ada).await;
    let stored = ada_web
        .upload(&format!("/contacts/{secret}/attachments"), &[], "file", "plan.txt", "text/plain", b"the plan")
        .await;
    assert_eq!(stored.status(), 303);
    let files: Value = ada.get(&format!("/api/v1/contacts/{secret}/attachments")).await.json().await.unwrap();
    let file = files["attachments"][0]["id"].as_u64().expect("file id");
    let own = bob.post("/api/v1/contacts", json!({ "firstname": "Bobs" })).await.json::<Value>().await.unwrap()["contact"]["id"]
        .as_u64()
        .expect("id");

    let web = Browser::of(&server, &bob).await;
    for path in [format!("/households/{household}"), format!("/attachments/{file}")] {
        assert_eq!(web.get(&path).await.status(), 404, "{path}");
    }
    let list = web.get("/households").await.text().await.unwrap();
    assert!(!list.contains("Secret house"));
    let page = web.get(&format!("/contacts/{own}")).await.text().await.unwrap();
    assert!(!page.contains("Secret house") && !page.contains(&format!("href=\"/households/{household}\"")));

    let h = household.to_string();
    let zeros = "0".repeat(64);
    let attempts: Vec<(String, Vec<(&str, &str)>)> = vec![
        (format!("/households/{household}"), vec![("name", "Owned"), ("type", "other")]),
        (format!("/households/{household}/members"), vec![("contact_id", "1"), ("who", "Bobs")]),
        (format!("/households/{household}/members"), vec![("who", "Bobs")]),
        (format!("/households/{household}/members/{member}"), vec![("role", "owner"), ("since", "now"), ("until", "")]),
        (format!("/households/{household}/members/{member}/delete"), vec![]),
        (format!("/households/{household}/address"), vec![("address_hash", &zeros), ("member_hash", &zeros)]),
        (format!("/households/{household}/delete"), vec![]),
        (format!("/contacts/{own}/households"), vec![("household_id", &h)]),
        (format!("/contacts/{secret}/households"), vec![("household_id", &h)]),
        (format!("/attachments/{file}/delete"), vec![]),
    ];
    for (path, fields) in attempts {
        let response = web.post(&path, &fields).await;
        assert_eq!(response.status(), 404, "POST {path}");
    }
    let upload =
        web.upload(&format!("/contacts/{secret}/attachments"), &[], "file", "x.txt", "text/plain", b"planted").await;
    assert_eq!(upload.status(), 404);

    let still: Value = ada.get(&format!("/api/v1/households/{household}")).await.json().await.unwrap();
    assert_eq!(still["household"]["name"], "Secret house");
    assert_eq!(still["members"].as_array().map(Vec::len), Some(1), "{still}");
    assert_eq!(still["members"][0]["role"], "", "the member's role is untouched");
    let files: Value = ada.get(&format!("/api/v1/contacts/{secret}/attachments")).await.json().await.unwrap();
    assert_eq!(files["total"], 1);
    assert_eq!(ada.get(&format!("/api/v1/attachments/{file}/download")).await.text().await.unwrap(), "the plan");
    let bobs: Value = bob.get("/api/v1/households").await.json().await.unwrap();
    assert_eq!(bobs["total"], 0);
}

#[tokio::test(flavor = "multi_thread")]
async fn a_members_role_and_dates_are_edited_from_the_households_page() {
    let server = Instance::new().spawn();
    let api = server.sign_up("ada").await;
    let web = Browser::of(&server, &api).await;
    let irene = contact(&api, "Irène").await;
    let household: Value = api
        .post("/api/v1/households", json!({ "name": "The Joliot-Curies", "type": "family_unit" }))
        .await
        .json()
        .await
        .unwrap();
    let id = household["household"]["id"].as_u64().expect("id");
    let added = api
        .post(
            &format!("/api/v1/households/{id}/members"),
            json!({ "contact_id": irene, "role": "child", "since": "1897" }),
        )
        .await;
    assert_eq!(added.status(), 201);
    let member = added.json::<Value>().await.unwrap()["member"].clone();
    let (mid, revision) = (member["id"].as_u64().expect("member id"), member["revision"].as_u64().expect("revision"));
    let shown = |v: &Value| (v["role"].clone(), v["since"].clone(), v["until"].clone());
    let stored = || async {
        let members: Value = api.get(&format!("/api/v1/households/{id}/members")).await.json().await.unwrap();
        members["members"][0].clone()
    };

    // The page offers the stored values in a form of the member's own.
    let page = web.get(&format!("/households/{id}")).await.text().await.unwrap();
    assert!(page.contains(&format!("action=\"/households/{id}/members/{mid}\"")), "{page}");
    assert!(page.contains(&format!("id=\"member-{mid}-role\"")) && page.contains("value=\"child\""), "{page}");

    // Role, since and until change together; a blank one is cleared.
    let rev = revision.to_string();
    let edited = web
        .post(
            &format!("/households/{id}/members/{mid}"),
            &[("member", &mid.to_string()), ("revision", &rev), ("role", "adult"), ("since", ""), ("until", "1926")],
        )
        .await;
    assert_eq!(edited.status(), 303);
    assert_eq!(location(&edited), format!("/households/{id}?notice=saved#h-members"));
    assert_eq!(shown(&stored().await), (json!("adult"), json!(""), json!("1926")));

    // A stale form: 409, what was typed kept in that member's form, nothing written.
    let stale = web
        .post(
            &format!("/households/{id}/members/{mid}"),
            &[("member", &mid.to_string()), ("revision", &rev), ("role", "parent"), ("since", "1900"), ("until", "")],
        )
        .await;
    assert_eq!(stale.status(), 409);
    let page = stale.text().await.unwrap();
    assert!(
        page.contains("changed elsewhere") && page.contains("value=\"parent\"") && page.contains("value=\"1900\""),
        "{page}"
    );
    assert_eq!(shown(&stored().await), (json!("adult"), json!(""), json!("1926")));

    // A refused value names its field and keeps the rest.
    let long = "z".repeat(101);
    let refused = web
        .post(
            &format!("/households/{id}/members/{mid}"),
            &[
                ("member", &mid.to_string()),
                ("revision", "0"),
                ("role", "aunt"),
                ("since", long.as_str()),
                ("until", ""),
            ],
        )
        .await;
    assert_eq!(refused.status(), 400);
    let page = refused.text().await.unwrap();
    assert!(page.contains("since: at most 100 characters") && page.contains("value=\"aunt\""), "{page}");
    assert!(
        page.contains(&format!(
            "id=\"member-{mid}-since\" name=\"since\" maxlength=\"100\" placeholder=\"2019\" value=\"{long}\" aria-invalid=\"true\""
        )),
        "{page}"
    );
    assert_eq!(shown(&stored().await), (json!("adult"), json!(""), json!("1926")));

    // A membership of another household is not this household's.
    let other: Value =
        api.post("/api/v1/households", json!({ "name": "Elsewhere", "type": "other" })).await.json().await.unwrap();
    let other = other["household"]["id"].as_u64().expect("id");
    let wrong = web.post(&format!("/households/{other}/members/{mid}"), &[("role", "stranger")]).await;
    assert_eq!(wrong.status(), 404);
    assert_eq!(stored().await["role"], "adult");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_spouses_address_is_offered_on_the_households_page_and_added() {
    let server = Instance::new().spawn();
    let ada = server.sign_up("ada").await;
    let make = |body: serde_json::Value| {
        let ada = &ada;
        async move {
            let made: serde_json::Value = ada.post("/api/v1/contacts", body).await.json().await.unwrap();
            (made["contact"]["id"].as_u64().unwrap(), made["contact"]["uid"].as_str().unwrap().to_string())
        }
    };
    let (_, ann) = make(serde_json::json!({ "firstname": "Ann", "address": "1 Main St, Springfield" })).await;
    let (bo, bo_uid) = make(serde_json::json!({ "firstname": "Bo" })).await;
    let edge = serde_json::json!({ "source_id": ann, "target_id": bo_uid, "type": "spouse_of" });
    assert_eq!(ada.post("/api/v1/relationship-edges", edge).await.status(), 201);
    let browser = Browser::of(&server, &ada).await;
    let page = browser.get("/households").await.text().await.unwrap();
    assert!(page.contains("Addresses to add") && page.contains("1 Main St, Springfield"), "{page}");
    let added = browser
        .post(
            "/addresses/apply",
            &[
                ("contact_vcard_uid", &bo_uid),
                ("source_kind", "relationship"),
                ("source_id", &ann),
                ("address_key", "1 main st springfield"),
            ],
        )
        .await;
    assert_eq!(added.headers()["location"], "/households?notice=address_added");
    let bos: serde_json::Value = ada.get(&format!("/api/v1/contacts/{bo}")).await.json().await.unwrap();
    assert_eq!(bos["address"], "1 Main St, Springfield");
    let again = browser
        .post(
            "/addresses/apply",
            &[
                ("contact_vcard_uid", &bo_uid),
                ("source_kind", "relationship"),
                ("source_id", &ann),
                ("address_key", "1 main st springfield"),
            ],
        )
        .await;
    assert_eq!(again.headers()["location"], "/households?notice=address_stale");
    assert!(!browser.get("/households").await.text().await.unwrap().contains("Addresses to add"));
}
