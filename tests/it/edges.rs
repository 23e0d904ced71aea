//! `/relationship-edges` against the real binary: edges between contacts named by vCard UID,
//! a new contact made from a name on the way, the refusals named, lists by contact and status,
//! replace and delete; two-hop suggestions that wait for an accept (kept out of the card and
//! the graph until then) and never repeat; another user reaching none of it.

use reqwest::Method;
use serde_json::{Value, json};

use crate::helpers::{Client, Instance, json_of};

async fn person(client: &Client, first: &str) -> (u64, String) {
    let made =
        json_of(client.post("/api/v1/contacts", json!({ "firstname": first, "lastname": "Lee" })).await, 201).await;
    (made["contact"]["id"].as_u64().unwrap(), made["contact"]["uid"].as_str().unwrap().to_string())
}

async fn edge(client: &Client, source: &str, kind: &str, target: &str) -> Value {
    let body = json!({ "source_id": source, "target_id": target, "type": kind });
    json_of(client.post("/api/v1/relationship-edges", body).await, 201).await["relationship_edge"].clone()
}

#[tokio::test]
async fn edges_are_made_listed_replaced_and_deleted_by_uid() {
    let server = Instance::new().spawn();
    let ada = server.sign_up("ada").await;
    let (ann, ann_uid) = person(&ada, "Ann").await;
    let (_, bob_uid) = person(&ada, "Bob").await;
    let made = edge(&ada, &ann_uid, "spouse_of", &bob_uid).await;
    assert_eq!(
        (made["source_id"].as_str(), made["target_id"].as_str()),
        (Some(ann_uid.as_str()), Some(bob_uid.as_str()))
    );
    assert_eq!((made["status"].as_str(), made["source"].as_str()), (Some("confirmed"), Some("user-confirmed")));
    assert_eq!((made["directional"].as_bool(), made["confidence"].as_f64()), (Some(false), Some(1.0)));
    let id = made["id"].as_u64().unwrap();

    // A child made from a name, and a pet that is marked as one.
    let body = json!({ "source_id": ann_uid, "target_thin": { "name": "Kit", "birthday": "2019-04-02" }, "type": "parent_of" });
    let child = json_of(ada.post("/api/v1/relationship-edges", body).await, 201).await["relationship_edge"].clone();
    assert_eq!(child["directional"], true);
    let kit = json_of(ada.get(&format!("/api/v1/contacts/{}", child["target_contact_id"])).await, 200).await;
    assert_eq!((kit["firstname"].as_str(), kit["birthday"].as_str()), (Some("Kit"), Some("2019-04-02")));
    let body = json!({ "source_id": ann_uid, "target_thin": { "name": "Rex" }, "type": "owns", "metadata": { "species": "dog" } });
    let pet = json_of(ada.post("/api/v1/relationship-edges", body).await, 201).await["relationship_edge"].clone();
    assert_eq!(pet["metadata"], json!({ "species": "dog" }));
    let rex = json_of(ada.get(&format!("/api/v1/contacts/{}", pet["target_contact_id"])).await, 200).await;
    assert_eq!(rex["crm"]["kind"], "animal", "{rex}");

    // Refusals name the field; nothing half-made stays.
    let before = json_of(ada.get("/api/v1/contacts?limit=100").await, 200).await["total"].clone();
    for (body, status, field) in [
        (
            json!({ "source_id": ann_uid, "source_thin": { "name": "X" }, "target_id": bob_uid, "type": "friend_of" }),
            400,
            "source_id",
        ),
        (json!({ "target_id": bob_uid, "type": "friend_of" }), 400, "source_id"),
        (json!({ "source_id": ann_uid, "target_id": ann_uid, "type": "friend_of" }), 400, "target_id"),
        (json!({ "source_id": ann_uid, "target_thin": { "name": "" }, "type": "friend_of" }), 400, "target_thin.name"),
        (
            json!({ "source_id": ann_uid, "target_thin": { "name": "Zed" }, "type": "friend_of", "metadata": [1] }),
            400,
            "metadata",
        ),
    ] {
        let refused = json_of(ada.post("/api/v1/relationship-edges", body).await, status).await;
        assert_eq!(refused["details"]["field"], field, "{refused}");
    }
    let unknown =
        json!({ "source_id": ann_uid, "target_id": "1b4e28ba-2fa1-4d2e-8a9b-1c2d3e4f5a6b", "type": "friend_of" });
    json_of(ada.post("/api/v1/relationship-edges", unknown).await, 404).await;
    assert_eq!(
        json_of(ada.get("/api/v1/contacts?limit=100").await, 200).await["total"],
        before,
        "no thin contact left behind"
    );

    // Lists: by contact (UID or id), by type, paged.
    let of_ann =
        json_of(ada.get(&format!("/api/v1/relationship-edges?contact_id={ann_uid}&limit=100")).await, 200).await;
    assert_eq!(of_ann["total"], 3);
    assert_eq!(json_of(ada.get(&format!("/api/v1/relationship-edges?contact_id={ann}")).await, 200).await["total"], 3);
    assert_eq!(json_of(ada.get("/api/v1/relationship-edges?type=owns").await, 200).await["total"], 1);
    let first = json_of(ada.get("/api/v1/relationship-edges?limit=2").await, 200).await;
    assert_eq!(first["relationship_edges"].as_array().unwrap().len(), 2);
    let next = first["next_cursor"].as_str().unwrap();
    let rest = json_of(ada.get(&format!("/api/v1/relationship-edges?limit=2&cursor={next}")).await, 200).await;
    assert_eq!(rest["relationship_edges"].as_array().unwrap().len(), 1);
    json_of(ada.get("/api/v1/relationship-edges?status=maybe").await, 400).await;

    // Replace keeps the id; the old contact routes see the same rows.
    let body = json!({ "source_id": ann_uid, "target_id": bob_uid, "type": "partner_of", "sensitivity": "private" });
    let replaced = json_of(ada.send(Method::PUT, &format!("/api/v1/relationship-edges/{id}"), body).await, 200).await;
    assert_eq!((replaced["id"].as_u64(), replaced["type"].as_str()), (Some(id), Some("partner_of")));
    let listed = json_of(ada.get(&format!("/api/v1/contacts/{ann}/relationships")).await, 200).await;
    assert!(listed.to_string().contains("partner_of"), "{listed}");
    json_of(ada.send(Method::DELETE, &format!("/api/v1/relationship-edges/{id}"), json!({})).await, 200).await;
    json_of(ada.get(&format!("/api/v1/relationship-edges/{id}")).await, 404).await;

    // Another user: nothing of Ada's.
    let eve = server.sign_up("eve").await;
    let child_id = child["id"].as_u64().unwrap();
    json_of(eve.get(&format!("/api/v1/relationship-edges/{child_id}")).await, 404).await;
    let body = json!({ "source_id": ann_uid, "target_id": bob_uid, "type": "friend_of" });
    json_of(eve.send(Method::PUT, &format!("/api/v1/relationship-edges/{child_id}"), body.clone()).await, 404).await;
    json_of(eve.send(Method::DELETE, &format!("/api/v1/relationship-edges/{child_id}"), json!({})).await, 404).await;
    json_of(eve.post("/api/v1/relationship-edges", body).await, 404).await;
    assert_eq!(json_of(eve.get("/api/v1/relationship-edges").await, 200).await["total"], 0);
    json_of(eve.get(&format!("/api/v1/relationship-edges?contact_id={ann_uid}")).await, 404).await;
}

#[tokio::test]
async fn suggestions_wait_for_an_accept_and_never_repeat() {
    let server = Instance::new().spawn();
    let ada = server.sign_up("ada").await;
    let (ann, ann_uid) = person(&ada, "Ann").await;
    let (_, bea_uid) = person(&ada, "Bea").await;
    let (_, cal_uid) = person(&ada, "Cal").await;
    let (_, dan_uid) = person(&ada, "Dan").await;
    let (_, kid_uid) = person(&ada, "Kid").await;
    let (_, lou_uid) = person(&ada, "Lou").await;
    edge(&ada, &kid_uid, "sibling_of", &lou_uid).await;
    edge(&ada, &ann_uid, "sibling_of", &bea_uid).await;
    edge(&ada, &bea_uid, "sibling_of", &cal_uid).await;
    edge(&ada, &dan_uid, "spouse_of", &ann_uid).await;
    edge(&ada, &kid_uid, "child_of", &ann_uid).await;

    let run = json_of(ada.send(Method::POST, "/api/v1/relationship-edges/suggest", Value::Null).await, 200).await;
    let mut found: Vec<(String, String, String, f64)> = run["suggested_edges"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| {
            assert_eq!((e["status"].as_str(), e["source"].as_str()), (Some("suggested"), Some("graph-inferred")));
            let (s, t) = (e["source_id"].as_str().unwrap(), e["target_id"].as_str().unwrap());
            let name = |uid: &str| {
                [
                    (&ann_uid, "Ann"),
                    (&bea_uid, "Bea"),
                    (&cal_uid, "Cal"),
                    (&dan_uid, "Dan"),
                    (&kid_uid, "Kid"),
                    (&lou_uid, "Lou"),
                ]
                .iter()
                .find(|(u, _)| u.as_str() == uid)
                .map(|(_, n)| n.to_string())
                .unwrap()
            };
            let (mut a, mut b) = (name(s), name(t));
            if e["directional"] == false && a > b {
                std::mem::swap(&mut a, &mut b);
            }
            (a, e["type"].as_str().unwrap().to_string(), b, e["confidence"].as_f64().unwrap())
        })
        .collect();
    found.sort_by(|x, y| x.0.cmp(&y.0).then(x.2.cmp(&y.2)));
    assert_eq!(
        found,
        [
            ("Ann".into(), "sibling_of".into(), "Cal".into(), 0.9),
            ("Ann".into(), "parent_of".into(), "Lou".into(), 0.7),
            ("Dan".into(), "parent_of".into(), "Kid".into(), 0.5),
        ],
        "a sibling's sibling, a child's sibling, a spouse's child"
    );
    assert_eq!(run["total"], 3);
    let again = json_of(ada.send(Method::POST, "/api/v1/relationship-edges/suggest", Value::Null).await, 200).await;
    assert_eq!(again["total"], 0, "nothing repeats: {again}");

    // Waiting suggestions stay out of the card and the graph.
    let pending = json_of(ada.get("/api/v1/relationship-edges?status=suggested").await, 200).await;
    assert_eq!(pending["total"], 3);
    let graph = json_of(ada.get("/api/v1/graph").await, 200).await;
    assert_eq!(graph["edges"].as_array().unwrap().iter().filter(|e| e["type"] == "relationship").count(), 5);
    let sibling =
        pending["relationship_edges"].as_array().unwrap().iter().find(|e| e["type"] == "sibling_of").unwrap().clone();
    let card = json_of(ada.get(&format!("/api/v1/contacts/{ann}")).await, 200).await;
    assert!(!card["card"].to_string().contains(&cal_uid), "{card}");

    let id = sibling["id"].as_u64().unwrap();
    let accepted =
        json_of(ada.send(Method::PATCH, &format!("/api/v1/relationship-edges/{id}/accept"), Value::Null).await, 200)
            .await;
    assert_eq!((accepted["status"].as_str(), accepted["source"].as_str()), (Some("confirmed"), Some("graph-inferred")));
    json_of(ada.send(Method::PATCH, &format!("/api/v1/relationship-edges/{id}/accept"), Value::Null).await, 409).await;
    let card = json_of(ada.get(&format!("/api/v1/contacts/{ann}")).await, 200).await;
    assert!(card["card"].to_string().contains(&cal_uid), "accepted: in the card now: {card}");

    let eve = server.sign_up("eve").await;
    let other = pending["relationship_edges"][0]["id"].as_u64().unwrap();
    json_of(eve.send(Method::PATCH, &format!("/api/v1/relationship-edges/{other}/accept"), Value::Null).await, 404)
        .await;
    assert_eq!(
        json_of(eve.send(Method::POST, "/api/v1/relationship-edges/suggest", Value::Null).await, 200).await["total"],
        0
    );
}

#[tokio::test]
async fn connections_are_the_shortest_chains_through_confirmed_edges() {
    let server = Instance::new().spawn();
    let ada = server.sign_up("ada").await;
    let (_, ann) = person(&ada, "Ann").await;
    let (_, bea) = person(&ada, "Bea").await;
    let (_, cal) = person(&ada, "Cal").await;
    let (_, kid) = person(&ada, "Kid").await;
    let (_, spy) = person(&ada, "Spy").await;
    edge(&ada, &ann, "sibling_of", &bea).await;
    edge(&ada, &bea, "spouse_of", &cal).await;
    edge(&ada, &cal, "parent_of", &kid).await;
    edge(&ada, &ann, "friend_of", &kid).await;
    let secret = json!({ "source_id": ann, "target_id": spy, "type": "friend_of", "sensitivity": "secret" });
    json_of(ada.post("/api/v1/relationship-edges", secret).await, 201).await;

    let found = json_of(ada.get(&format!("/api/v1/graph/connections?from={ann}")).await, 200).await;
    assert_eq!((found["from_name"].as_str(), found["depth"].as_u64()), (Some("Ann Lee"), Some(3)));
    let chains: Vec<(String, u64, Vec<String>)> = found["chains"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| {
            let steps = c["steps"]
                .as_array()
                .unwrap()
                .iter()
                .map(|s| format!("{} {}", s["contact_name"].as_str().unwrap(), s["relation"].as_str().unwrap()))
                .collect();
            (c["target_name"].as_str().unwrap().to_string(), c["depth"].as_u64().unwrap(), steps)
        })
        .collect();
    assert_eq!(
        chains,
        [
            ("Bea Lee".to_string(), 1, vec!["Bea Lee sibling_of".to_string()]),
            ("Kid Lee".into(), 1, vec!["Kid Lee friend_of".into()]),
            ("Cal Lee".into(), 2, vec!["Bea Lee sibling_of".into(), "Cal Lee spouse_of".into()]),
        ],
        "the shortest chain each, no secret edge: {found}"
    );
    let through = json_of(ada.get(&format!("/api/v1/graph/connections?from={ann}&relation=husband")).await, 200).await;
    let targets: Vec<&str> =
        through["chains"].as_array().unwrap().iter().map(|c| c["target_name"].as_str().unwrap()).collect();
    assert_eq!(
        targets,
        ["Cal Lee", "Bea Lee", "Kid Lee"],
        "only chains through a spouse, the shortest such: {through}"
    );
    assert_eq!(through["chains"][1]["steps"][2]["relation"], "spouse_of", "Bea by way of Kid and Cal");
    assert_eq!(through["chains"][2]["steps"][2]["relation"], "child_of");
    let near = json_of(ada.get(&format!("/api/v1/graph/connections?from={ann}&depth=1")).await, 200).await;
    assert_eq!(near["chains"].as_array().unwrap().len(), 2);
    assert_eq!(
        json_of(ada.get(&format!("/api/v1/graph/connections?from={ann}&depth=9")).await, 400).await["details"]["field"],
        "depth"
    );
    assert_eq!(json_of(ada.get("/api/v1/graph/connections").await, 400).await["details"]["field"], "from");
    let eve = server.sign_up("eve").await;
    json_of(eve.get(&format!("/api/v1/graph/connections?from={ann}")).await, 404).await;
}
