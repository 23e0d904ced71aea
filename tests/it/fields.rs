//! Custom fields against the real binary: typed definitions (aliases, constraints, one key each,
//! the key fixed), a contact's values replaced as a whole and checked all or nothing, kept
//! across contact edits that do not name them, found by search, exported as CSV columns and
//! `X-` vCard properties that re-import to the same field, removed with their definition, and
//! another user's contact or definition never reachable.

use reqwest::Method;
use serde_json::{Value, json};

use crate::helpers::{Client, Instance, json_of};
use crate::import::upload;

/// The user's definitions: shoe size (a number 10 to 60, served as `X-SHOE-SIZE`), diet (a
/// choice), and a private homepage. Their ids, in that order.
async fn define(client: &Client) -> (u64, u64, u64) {
    let mut ids = Vec::new();
    for body in [
        json!({ "label": "Shoe size", "key": "shoe_size", "type": "number", "constraints": { "min": 10, "max": 60 }, "projection": "vcard:X-SHOE-SIZE" }),
        json!({ "label": "Diet", "key": "diet", "type": "choice", "constraints": { "values": ["vegan", "omnivore"] } }),
        json!({ "label": "Homepage", "type": "url", "sensitivity": "private", "projection": "vcard:X-HOME" }),
    ] {
        let created = json_of(client.post("/api/v1/field-definitions", body).await, 201).await;
        ids.push(created["field_definition"]["id"].as_u64().unwrap());
    }
    (ids[0], ids[1], ids[2])
}

async fn contact(client: &Client, first: &str) -> u64 {
    let body = json!({ "firstname": first, "lastname": "Fielding", "crm": { "circles": ["Runners"] } });
    json_of(client.post("/api/v1/contacts", body).await, 201).await["contact"]["id"].as_u64().unwrap()
}

/// A confirm that adds every row of `preview`.
fn add_all(preview: &Value) -> Value {
    let actions: Vec<Value> = preview["rows"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| json!({ "row_index": r["row_index"], "action": "add" }))
        .collect();
    json!({ "session_id": preview["session_id"], "actions": actions })
}

fn by_key(values: &Value) -> Vec<(String, Value)> {
    let mut out: Vec<(String, Value)> = values
        .as_array()
        .unwrap()
        .iter()
        .map(|v| (v["key"].as_str().unwrap().to_string(), v["value"].clone()))
        .collect();
    out.sort_by(|a, b| a.0.cmp(&b.0));
    out
}

#[tokio::test]
async fn definitions_are_typed_keyed_once_and_checked() {
    let server = Instance::new().spawn();
    let ada = server.sign_up("ada").await;
    let (shoe, diet, home) = define(&ada).await;
    let list = json_of(ada.get("/api/v1/field-definitions").await, 200).await;
    assert_eq!(list["total"], 3);
    let listed: Vec<(&str, &str)> = list["field_definitions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|d| (d["key"].as_str().unwrap(), d["type"].as_str().unwrap()))
        .collect();
    assert_eq!(listed, [("diet", "enum"), ("homepage", "uri"), ("shoe_size", "number")], "aliases read as types");
    let one = json_of(ada.get(&format!("/api/v1/field-definitions/{diet}")).await, 200).await;
    assert_eq!(one["constraints"]["values"], json!(["vegan", "omnivore"]));
    assert_eq!((one["projection"].as_str(), one["sensitivity"].as_str()), (Some("internal-only"), Some("normal")));

    let dup = json!({ "label": "Another", "key": "diet", "type": "text" });
    let refused = json_of(ada.post("/api/v1/field-definitions", dup).await, 409).await;
    assert_eq!(refused["details"]["field"], "key");
    for (body, field) in [
        (json!({ "label": "X", "key": "x", "type": "colour" }), "type"),
        (json!({ "label": "X", "key": "x", "type": "text", "projection": "vcard:NOTE" }), "projection"),
        (json!({ "label": "X", "key": "x", "type": "enum" }), "constraints.values"),
        (json!({ "label": "X", "key": "x", "type": "text", "constraints": { "pattern": "(" } }), "constraints.pattern"),
        (
            json!({ "label": "X", "key": "x", "type": "number", "constraints": { "min": 5, "max": 1 } }),
            "constraints.min",
        ),
        (json!({ "label": "", "key": "x", "type": "text" }), "label"),
    ] {
        let refused = json_of(ada.post("/api/v1/field-definitions", body).await, 400).await;
        assert_eq!(refused["details"]["field"], field, "{refused}");
    }
    let renamed = json!({ "label": "Eating", "key": "diet", "type": "enum", "constraints": { "values": ["vegan", "omnivore", "pescatarian"] } });
    let updated =
        json_of(ada.send(Method::PUT, &format!("/api/v1/field-definitions/{diet}"), renamed).await, 200).await;
    assert_eq!(updated["label"], "Eating");
    let rekeyed = json!({ "label": "Eating", "key": "food", "type": "enum", "constraints": { "values": ["vegan"] } });
    let refused =
        json_of(ada.send(Method::PUT, &format!("/api/v1/field-definitions/{diet}"), rekeyed).await, 400).await;
    assert_eq!(refused["details"]["field"], "key");

    // Values: typed, checked all or nothing, named by position.
    let c = contact(&ada, "Fay").await;
    let values = json!({ "field_values": [
        { "field_definition_id": shoe, "value": "42" },
        { "field_definition_id": diet, "value": "pescatarian" },
        { "field_definition_id": home, "value": "https://fay.example" },
    ] });
    let saved = json_of(ada.send(Method::PUT, &format!("/api/v1/contacts/{c}/field-values"), values).await, 200).await;
    assert_eq!(
        by_key(&saved["field_values"]),
        [
            ("diet".into(), json!("pescatarian")),
            ("homepage".into(), json!("https://fay.example")),
            ("shoe_size".into(), json!(42))
        ]
    );
    for (value, definition) in [(json!(9), shoe), (json!("keto"), diet), (json!("javascript:alert(1)"), home)] {
        let body = json!({ "field_values": [{ "field_definition_id": shoe, "value": 40 }, { "field_definition_id": definition, "value": value }] });
        let refused =
            json_of(ada.send(Method::PUT, &format!("/api/v1/contacts/{c}/field-values"), body).await, 400).await;
        assert_eq!(refused["details"]["field"], "field_values[1].value", "{refused}");
    }
    let kept = json_of(ada.get(&format!("/api/v1/contacts/{c}/field-values")).await, 200).await;
    assert_eq!(by_key(&kept["field_values"])[2], ("shoe_size".into(), json!(42)), "a refused write wrote nothing");
    assert_eq!(
        kept["field_values"][0]["entity_id"],
        json!(json_of(ada.get(&format!("/api/v1/contacts/{c}")).await, 200).await["uid"])
    );

    // An edit of the contact that does not name them keeps them; search finds them.
    let edit = json!({ "firstname": "Faye", "crm": { "circles": ["Walkers"] } });
    json_of(ada.send(Method::PUT, &format!("/api/v1/contacts/{c}"), edit).await, 200).await;
    assert_eq!(
        json_of(ada.get(&format!("/api/v1/contacts/{c}/field-values")).await, 200).await["field_values"]
            .as_array()
            .unwrap()
            .len(),
        3
    );
    let detail = json_of(ada.get(&format!("/api/v1/contacts/{c}/detail")).await, 200).await;
    assert_eq!(detail["field_values"].as_array().unwrap().len(), 3);
    let found = json_of(ada.get("/api/v1/search?q=pescatarian").await, 200).await;
    assert!(found.to_string().contains("Faye"), "{found}");

    // Another user reaches neither the values nor the definitions.
    let bob = server.sign_up("bob").await;
    json_of(bob.get(&format!("/api/v1/contacts/{c}/field-values")).await, 404).await;
    json_of(bob.get(&format!("/api/v1/field-definitions/{shoe}")).await, 404).await;
    json_of(bob.send(Method::DELETE, &format!("/api/v1/field-definitions/{shoe}"), json!({})).await, 404).await;
    let mine = contact(&bob, "Bo").await;
    let body = json!({ "field_values": [{ "field_definition_id": shoe, "value": 40 }] });
    let refused =
        json_of(bob.send(Method::PUT, &format!("/api/v1/contacts/{mine}/field-values"), body).await, 400).await;
    assert_eq!(refused["details"]["field"], "field_values[0].field_definition_id");
    let body = json!({ "field_values": [] });
    json_of(bob.send(Method::PUT, &format!("/api/v1/contacts/{c}/field-values"), body).await, 404).await;
    assert!(json_of(bob.get("/api/v1/search?q=pescatarian").await, 200).await.to_string().find("Faye").is_none());

    // Deleting a definition removes its values everywhere.
    json_of(ada.send(Method::DELETE, &format!("/api/v1/field-definitions/{diet}"), json!({})).await, 200).await;
    let left = json_of(ada.get(&format!("/api/v1/contacts/{c}/field-values")).await, 200).await;
    assert_eq!(
        by_key(&left["field_values"]).into_iter().map(|(k, _)| k).collect::<Vec<_>>(),
        ["homepage", "shoe_size"]
    );
    let contact = json_of(ada.get(&format!("/api/v1/contacts/{c}")).await, 200).await;
    assert!(contact["crm"]["fields"].get("diet").is_none(), "{contact}");
}

#[tokio::test]
async fn values_leave_as_csv_columns_and_vcard_properties_and_come_back() {
    let server = Instance::new().spawn();
    let ada = server.sign_up("ada").await;
    let (shoe, diet, home) = define(&ada).await;
    let c = contact(&ada, "Fay").await;
    let values = json!({ "field_values": [
        { "field_definition_id": shoe, "value": 42 },
        { "field_definition_id": diet, "value": "vegan" },
        { "field_definition_id": home, "value": "https://fay.example" },
    ] });
    json_of(ada.send(Method::PUT, &format!("/api/v1/contacts/{c}/field-values"), values).await, 200).await;

    let vcf = ada.get("/api/v1/export/vcf").await.text().await.unwrap();
    assert!(vcf.contains("X-SHOE-SIZE:42"), "{vcf}");
    assert!(!vcf.contains("X-HOME"), "a private value stays out of vCards: {vcf}");
    let csv = ada.get("/api/v1/export").await.text().await.unwrap();
    let header = csv.lines().next().unwrap();
    assert!(header.ends_with(",Diet,Homepage,Shoe size"), "custom columns by label: {header}");
    assert!(csv.lines().nth(1).unwrap().ends_with(",vegan,https://fay.example,42"), "{csv}");

    // Bob has the same fields: both files bring the values back to them.
    let bob = server.sign_up("bob").await;
    define(&bob).await;
    let up = json_of(upload(&bob, "/api/v1/contacts/import/upload", "ada.csv", csv.as_bytes()).await, 200).await;
    let mappings = up["suggested_mappings"].clone();
    let targets: Vec<&str> = mappings.as_array().unwrap().iter().filter_map(|m| m["contact_field"].as_str()).collect();
    assert!(targets.contains(&"field:shoe_size") && targets.contains(&"field:diet"), "{targets:?}");
    let preview = json_of(
        bob.post("/api/v1/contacts/import/preview", json!({ "session_id": up["session_id"], "mappings": mappings }))
            .await,
        200,
    )
    .await;
    assert_eq!(json_of(bob.post("/api/v1/contacts/import/confirm", add_all(&preview)).await, 200).await["created"], 1);
    let from_csv =
        json_of(bob.get("/api/v1/contacts?limit=10").await, 200).await["contacts"][0]["id"].as_u64().unwrap();
    let got = json_of(bob.get(&format!("/api/v1/contacts/{from_csv}/field-values")).await, 200).await;
    assert_eq!(
        by_key(&got["field_values"]),
        [
            ("diet".into(), json!("vegan")),
            ("homepage".into(), json!("https://fay.example")),
            ("shoe_size".into(), json!(42))
        ]
    );

    // Our own vCard carries the CRM envelope whole; another program's card carries the property.
    let carol = server.sign_up("carol").await;
    define(&carol).await;
    let theirs = "BEGIN:VCARD\r\nVERSION:4.0\r\nFN:Sam Other\r\nN:Other;Sam;;;\r\nX-SHOE-SIZE:44\r\nEND:VCARD\r\n";
    for (name, file, expected) in [
        (
            "Fay",
            vcf.clone(),
            vec![
                ("diet".to_string(), json!("vegan")),
                ("homepage".into(), json!("https://fay.example")),
                ("shoe_size".into(), json!(42)),
            ],
        ),
        ("Sam", theirs.to_string(), vec![("shoe_size".to_string(), json!(44))]),
    ] {
        let preview =
            json_of(upload(&carol, "/api/v1/contacts/import/vcf/upload", "in.vcf", file.as_bytes()).await, 200).await;
        let done = add_all(&preview);
        assert_eq!(json_of(carol.post("/api/v1/contacts/import/vcf/confirm", done).await, 200).await["created"], 1);
        let newest = json_of(carol.get(&format!("/api/v1/contacts?search={name}")).await, 200).await;
        let id = newest["contacts"][0]["id"].as_u64().unwrap();
        let got = json_of(carol.get(&format!("/api/v1/contacts/{id}/field-values")).await, 200).await;
        assert_eq!(by_key(&got["field_values"]), expected, "{newest}");
    }

    // Deleting the projected definition takes its property out of the card too.
    json_of(ada.send(Method::DELETE, &format!("/api/v1/field-definitions/{shoe}"), json!({})).await, 200).await;
    let vcf = ada.get("/api/v1/export/vcf").await.text().await.unwrap();
    assert!(!vcf.contains("X-SHOE-SIZE"), "{vcf}");
}

#[tokio::test]
async fn a_merge_keeps_the_values_of_both_and_undo_puts_them_back() {
    let server = Instance::new().spawn();
    let ada = server.sign_up("ada").await;
    let (shoe, diet, _) = define(&ada).await;
    let (keep, gone) = (contact(&ada, "Fay").await, contact(&ada, "Fay").await);
    for (id, values) in [
        (keep, json!([{ "field_definition_id": shoe, "value": 42 }])),
        (
            gone,
            json!([{ "field_definition_id": shoe, "value": 40 }, { "field_definition_id": diet, "value": "vegan" }]),
        ),
    ] {
        let body = json!({ "field_values": values });
        json_of(ada.send(Method::PUT, &format!("/api/v1/contacts/{id}/field-values"), body).await, 200).await;
    }
    let merged =
        json_of(ada.post("/api/v1/contacts/merge", json!({ "keep_id": keep, "merge_id": gone })).await, 200).await;
    let values = json_of(ada.get(&format!("/api/v1/contacts/{keep}/field-values")).await, 200).await;
    assert_eq!(by_key(&values["field_values"]), [("diet".into(), json!("vegan")), ("shoe_size".into(), json!(42))]);
    let vcf = ada.get("/api/v1/export/vcf").await.text().await.unwrap();
    assert_eq!(vcf.matches("X-SHOE-SIZE").count(), 1, "{vcf}");
    let undo = merged["undo_id"].as_u64().expect("the merge's undo id");
    json_of(ada.post(&format!("/api/v1/contacts/merge/{undo}/undo"), json!({})).await, 200).await;
    let values = json_of(ada.get(&format!("/api/v1/contacts/{gone}/field-values")).await, 200).await;
    assert_eq!(by_key(&values["field_values"]), [("diet".into(), json!("vegan")), ("shoe_size".into(), json!(40))]);
}
