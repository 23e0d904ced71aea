//! Duplicates in the browser without JavaScript: the scan's page, "not the same person", and a
//! merge with a conflict chosen on the form; another member can neither see nor merge them.

use serde_json::{Value, json};

use super::Browser;
use crate::helpers::{Client, Instance};

async fn person(api: &Client, first: &str, email: &str, org: &str) -> (u64, String) {
    let card = json!({ "name": { "components": [{ "kind": "given", "value": first }, { "kind": "surname", "value": "Lee" }] },
        "emails": [{ "address": email }], "organizations": [{ "name": org }] });
    let made: Value = api.post("/api/v1/contacts", json!({ "card": card })).await.json().await.unwrap();
    (made["contact"]["id"].as_u64().unwrap(), made["contact"]["uid"].as_str().unwrap().to_string())
}

#[tokio::test(flavor = "multi_thread")]
async fn doubles_are_listed_dismissed_and_merged_from_the_pages() {
    let server = Instance::new().spawn();
    let ada = server.sign_up("ada").await;
    let (ann, _) = person(&ada, "Ann", "ann@example.org", "Acme").await;
    let (twin, _) = person(&ada, "Ann", "ann@example.org", "Initech").await;
    let (kim, kim_uid) = person(&ada, "Kim", "kim@example.org", "Acme").await;
    let (kim2, kim2_uid) = person(&ada, "Kim", "kim@example.org", "Acme").await;
    let browser = Browser::of(&server, &ada).await;

    let listed = browser.get("/contacts/duplicates").await.text().await.unwrap();
    assert!(
        listed.contains("2 pair(s) that may be one person.") && listed.contains("same email, same name"),
        "{listed}"
    );
    assert!(listed.contains(&format!("/contacts/merge?keep={ann}&amp;merge={twin}")), "{listed}");

    let dismissed = browser.post("/contacts/duplicates/dismiss", &[("uid_a", &kim_uid), ("uid_b", &kim2_uid)]).await;
    assert_eq!(dismissed.status(), 303);
    assert!(browser.get("/contacts/duplicates").await.text().await.unwrap().contains("1 pair(s)"));

    let form = browser.get(&format!("/contacts/merge?keep={ann}&merge={twin}")).await;
    assert_eq!(form.status(), 200);
    let form = form.text().await.unwrap();
    assert!(form.contains("name=\"choose_organization\"") && form.contains("Initech"), "{form}");
    let (keep, merge) = (ann.to_string(), twin.to_string());
    let merged = browser
        .post(
            "/contacts/merge",
            &[("keep_id", keep.as_str()), ("merge_id", merge.as_str()), ("choose_organization", "Initech")],
        )
        .await;
    assert_eq!(merged.status(), 303, "{}", merged.text().await.unwrap_or_default());
    let kept: Value = ada.get(&format!("/api/v1/contacts/{ann}")).await.json().await.unwrap();
    assert_eq!(kept["org"], "Initech", "{kept}");
    assert_eq!(ada.get(&format!("/api/v1/contacts/{twin}")).await.status(), 404);

    let bob = server.sign_up("bob").await;
    let other = Browser::of(&server, &bob).await;
    assert!(!other.get("/contacts/duplicates").await.text().await.unwrap().contains("Kim"));
    assert_eq!(other.get(&format!("/contacts/merge?keep={kim}&merge={kim2}")).await.status(), 404);
    let (k, m) = (kim.to_string(), kim2.to_string());
    assert_eq!(other.post("/contacts/merge", &[("keep_id", k.as_str()), ("merge_id", m.as_str())]).await.status(), 404);
    assert_eq!(ada.get(&format!("/api/v1/contacts/{kim2}")).await.status(), 200);
}

/// The contact list's selection: a bulk action, and "merge the two selected" leading to the merge.
#[tokio::test(flavor = "multi_thread")]
async fn the_contact_list_acts_on_a_selection_and_merges_two() {
    let server = Instance::new().spawn();
    let ada = server.sign_up("ada").await;
    let (a, _) = person(&ada, "Ann", "ann@example.org", "Acme").await;
    let (b, _) = person(&ada, "Bea", "bea@example.org", "Acme").await;
    let browser = Browser::of(&server, &ada).await;
    let list = browser.get("/contacts").await.text().await.unwrap();
    assert!(list.contains(&format!("name=\"ids\" value=\"{a}\" form=\"bulk\"")), "{list}");
    let (sa, sb) = (a.to_string(), b.to_string());
    let tagged = browser
        .post(
            "/contacts/bulk",
            &[("ids", sa.as_str()), ("ids", sb.as_str()), ("action", "add_tag"), ("label", "Climbing")],
        )
        .await;
    assert_eq!(tagged.status(), 303);
    for id in [a, b] {
        let c: Value = ada.get(&format!("/api/v1/contacts/{id}")).await.json().await.unwrap();
        assert_eq!(c["tags"], json!(["Climbing"]), "{c}");
    }
    let merge = browser.post("/contacts/bulk", &[("ids", sa.as_str()), ("ids", sb.as_str()), ("merge", "1")]).await;
    assert_eq!(
        (merge.status().as_u16(), merge.headers()["location"].to_str().unwrap()),
        (303, format!("/contacts/merge?keep={a}&merge={b}").as_str())
    );
    let one = browser.post("/contacts/bulk", &[("ids", sa.as_str()), ("merge", "1")]).await;
    assert_eq!(one.status(), 400);
}

#[tokio::test(flavor = "multi_thread")]
async fn a_merge_starts_from_a_contacts_page_with_whoever_is_typed() {
    let server = Instance::new().spawn();
    let ada = server.sign_up("ada").await;
    let (ann, _) = person(&ada, "Ann", "ann@example.org", "Acme").await;
    let (annie, _) = person(&ada, "Annie", "annie@example.org", "Acme").await;
    let (kim, _) = person(&ada, "Kim", "kim@example.org", "Initech").await;
    let browser = Browser::of(&server, &ada).await;

    let page = browser.get(&format!("/contacts/{ann}")).await.text().await.unwrap();
    assert!(
        page.contains("action=\"/contacts/merge\"") && page.contains(&format!("name=\"keep\" value=\"{ann}\"")),
        "{page}"
    );
    // One match: straight to the preview.
    let one = browser.get(&format!("/contacts/merge?keep={ann}&with=kim%40example.org")).await;
    assert_eq!(one.status(), 303);
    assert_eq!(one.headers()["location"], format!("/contacts/merge?keep={ann}&merge={kim}").as_str());
    // Several: a choice, never the kept contact itself.
    let several = browser.get(&format!("/contacts/merge?keep={kim}&with=acme")).await.text().await.unwrap();
    assert!(several.contains(&format!("/contacts/merge?keep={kim}&amp;merge={ann}")), "{several}");
    assert!(several.contains(&format!("/contacts/merge?keep={kim}&amp;merge={annie}")), "{several}");
    assert!(!several.contains(&format!("merge={kim}\"")), "{several}");
    let none = browser.get(&format!("/contacts/merge?keep={ann}&with=zebra")).await.text().await.unwrap();
    assert!(none.contains("No other contact matches."), "{none}");
    // Another member cannot start one from Ada's contact.
    let bob = server.sign_up("bob").await;
    let other = Browser::of(&server, &bob).await;
    assert_eq!(other.get(&format!("/contacts/merge?keep={ann}&with=kim")).await.status(), 404);
}
