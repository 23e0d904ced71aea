//! Route inventory: every documented route is public by intent or refuses anonymous callers, and
//! every `/admin/*` route refuses non-admins and API tokens.

use serde_json::{Value, json};

use crate::helpers::{Cred, Instance};

#[tokio::test]
async fn every_route_is_public_or_refuses_anonymous_and_admin_routes_refuse_others() {
    let server = Instance::new().spawn();
    let admin = server.sign_up("ada").await;
    let user = server.sign_up("bob").await;
    let token = admin.post("/api/v1/api-tokens", json!({ "name": "t" })).await.json::<Value>().await.unwrap()["token"]
        .as_str()
        .unwrap()
        .to_string();
    let admin_token = admin.with(Cred::Bearer(token));
    let doc: Value = server.get("/api/v1/openapi.json").await.json().await.unwrap();
    let mut checked = 0;
    for (path, ops) in doc["paths"].as_object().unwrap() {
        let concrete = path.replace("{id}", "1");
        for method in ops.as_object().unwrap().keys() {
            let method: reqwest::Method = method.to_uppercase().parse().unwrap();
            let anonymous =
                server.client.request(method.clone(), server.url(&concrete)).json(&json!({})).send().await.unwrap();
            if mycorrhizal::api::PUBLIC.contains(&path.as_str()) {
                assert_ne!(anonymous.status(), 401, "{method} {path} is public");
            } else {
                assert_eq!(anonymous.status(), 401, "{method} {path} must refuse anonymous callers");
            }
            if path.starts_with("/api/v1/admin/") {
                for (who, client) in [("a non-admin", &user), ("an API token", &admin_token)] {
                    let response = client.request(method.clone(), &concrete).json(&json!({})).send().await.unwrap();
                    assert_eq!(response.status(), 403, "{method} {path} must refuse {who}");
                }
            }
            checked += 1;
        }
    }
    assert!(checked > 30, "checked {checked} routes");
}
