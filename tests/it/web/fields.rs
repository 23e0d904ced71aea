//! Custom fields and circles in the browser without JavaScript: a field defined on the settings
//! page, its value set on the contact page (a refused value sent back with the field marked),
//! the field removed with its values; an empty circle created on the groups page.

use serde_json::{Value, json};

use super::Browser;
use crate::helpers::Instance;

#[tokio::test(flavor = "multi_thread")]
async fn fields_are_defined_filled_and_removed_from_the_pages() {
    let server = Instance::new().spawn();
    let ada = server.sign_up("ada").await;
    let made: Value = ada.post("/api/v1/contacts", json!({ "firstname": "Fay" })).await.json().await.unwrap();
    let fay = made["contact"]["id"].as_u64().unwrap();
    let browser = Browser::of(&server, &ada).await;

    let page = browser.get(&format!("/contacts/{fay}")).await.text().await.unwrap();
    assert!(page.contains("No custom fields yet.") && page.contains("href=\"/settings/fields\""), "{page}");
    let created = browser
        .post(
            "/settings/fields",
            &[("label", "Shoe size"), ("type", "number"), ("min", "10"), ("max", "60"), ("sensitivity", "normal")],
        )
        .await;
    assert_eq!(created.status(), 303);
    let refused =
        browser.post("/settings/fields", &[("label", "Diet"), ("type", "enum"), ("sensitivity", "normal")]).await;
    assert_eq!(refused.status(), 400, "a choice without choices");
    assert!(refused.text().await.unwrap().contains("role=\"alert\""));
    let defs: Value = ada.get("/api/v1/field-definitions").await.json().await.unwrap();
    let shoe = defs["field_definitions"][0]["id"].as_u64().unwrap();
    assert_eq!(defs["field_definitions"][0]["key"], "shoe_size");

    let name = format!("field-{shoe}");
    let bad = browser.post(&format!("/contacts/{fay}/fields"), &[(name.as_str(), "99")]).await;
    assert_eq!(bad.status(), 400);
    let bad = bad.text().await.unwrap();
    assert!(bad.contains("out of the allowed range") && bad.contains("aria-invalid=\"true\""), "{bad}");
    let saved = browser.post(&format!("/contacts/{fay}/fields"), &[(name.as_str(), "42")]).await;
    assert_eq!(saved.status(), 303);
    let values: Value = ada.get(&format!("/api/v1/contacts/{fay}/field-values")).await.json().await.unwrap();
    assert_eq!(values["field_values"][0]["value"], 42);
    let page = browser.get(&format!("/contacts/{fay}")).await.text().await.unwrap();
    assert!(page.contains("<dt>Shoe size</dt><dd>42</dd>"), "{page}");

    let bob = server.sign_up("bob").await;
    let other = Browser::of(&server, &bob).await;
    assert_eq!(other.post(&format!("/contacts/{fay}/fields"), &[(name.as_str(), "40")]).await.status(), 404);
    assert_eq!(other.post(&format!("/settings/fields/{shoe}/delete"), &[]).await.status(), 404);

    assert_eq!(browser.post(&format!("/settings/fields/{shoe}/delete"), &[]).await.status(), 303);
    let values: Value = ada.get(&format!("/api/v1/contacts/{fay}/field-values")).await.json().await.unwrap();
    assert_eq!(values["field_values"], json!([]));

    assert_eq!(
        browser.post("/groups", &[("group", "circle"), ("create", "1"), ("to", "Book club")]).await.status(),
        303
    );
    assert_eq!(
        browser.post("/groups", &[("group", "circle"), ("create", "1"), ("to", "Book club")]).await.status(),
        409
    );
    let groups = browser.get("/groups").await.text().await.unwrap();
    assert!(groups.contains("Book club"), "{groups}");
}
