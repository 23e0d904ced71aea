//! Health probes, request ids, the error envelope and the OpenAPI document.

use serde_json::Value;

use crate::helpers::Instance;

#[tokio::test]
async fn health_endpoints_report_live_ready_and_build_facts() {
    // The disk thresholds are the host's business here (a busy build machine passes 75%); their
    // own tests set the usage they mean.
    let server = Instance::new().with("STORAGE_WARN_PERCENT", "99").with("STORAGE_CRITICAL_PERCENT", "100").spawn();
    let live = server.get("/health/live").await;
    assert_eq!(live.status(), 200);
    assert_eq!(live.json::<Value>().await.unwrap()["status"], "live");

    let ready = server.get("/health/ready").await;
    let status = ready.status();
    let ready: Value = ready.json().await.unwrap();
    assert_eq!(status, 200, "{ready}");
    assert_eq!(ready["status"], "ready");
    for check in ["database", "migrations", "filesystem"] {
        assert_eq!(ready["checks"][check]["status"], "ok", "{check}");
    }

    let health = server.get("/health").await;
    assert_eq!(health.status(), 200);
    let health: Value = health.json().await.unwrap();
    assert_eq!(health["status"], "healthy");
    assert_eq!(health["api_contract_version"], "v1");
    assert_eq!(health["version"], env!("CARGO_PKG_VERSION"));
    assert!(health["commit"].is_string() && health["build_date"].is_string());
    assert_eq!(health["database"]["status"], "healthy");
    assert!(health.get("min_client_version").is_none(), "absent when no floor is set");
    assert!(!health.to_string().contains("jwt"), "no secrets");
}

#[tokio::test]
async fn health_reports_the_client_floor_when_set() {
    let server = Instance::new().with("MIN_CLIENT_VERSION", "0.6.0").spawn();
    let health: Value = server.get("/health").await.json().await.unwrap();
    assert_eq!(health["min_client_version"], "0.6.0");
}

#[tokio::test]
async fn a_vanished_data_folder_makes_ready_fail_and_health_degrade() {
    let instance = Instance::new();
    let server = instance.spawn();
    std::fs::remove_dir_all(instance.data_dir()).unwrap();
    let ready = server.get("/health/ready").await;
    assert_eq!(ready.status(), 503);
    let ready: Value = ready.json().await.unwrap();
    assert_eq!(ready["status"], "not_ready");
    assert_eq!(ready["checks"]["filesystem"]["status"], "failed");
    assert_eq!(ready["checks"]["database"]["status"], "ok", "the open file still reads");
    let health = server.get("/health").await;
    assert_eq!(health.status(), 200, "degraded is still 200");
    assert_eq!(health.json::<Value>().await.unwrap()["status"], "degraded");
}

#[tokio::test]
async fn request_ids_are_echoed_or_generated() {
    let server = Instance::new().spawn();
    let echoed = server.client.get(server.url("/health/live")).header("X-Request-ID", "trace-42").send().await.unwrap();
    assert_eq!(echoed.headers()["x-request-id"], "trace-42");
    let generated = server.get("/health/live").await;
    let id = generated.headers()["x-request-id"].to_str().unwrap().to_string();
    assert!(uuid_like(&id), "{id}");
    let too_long = "x".repeat(500);
    let replaced = server.client.get(server.url("/health")).header("X-Request-ID", &too_long).send().await.unwrap();
    assert!(uuid_like(replaced.headers()["x-request-id"].to_str().unwrap()));
    let logged = server.log_lines().iter().any(|l| {
        l["event"] == "http_request"
            && l["request_id"] == "trace-42"
            && l["correlation_id"] == "trace-42"
            && l["operation"] == "GET /health/live"
    });
    assert!(logged, "one log line per request with the request id as correlation id");
}

fn uuid_like(s: &str) -> bool {
    s.len() == 36 && s.chars().filter(|c| *c == '-').count() == 4
}

#[tokio::test]
async fn unknown_routes_and_wrong_methods_use_the_envelope() {
    let server = Instance::new().spawn();
    let missing =
        server.client.get(server.url("/api/v1/no-such-thing")).header("X-Request-ID", "r-1").send().await.unwrap();
    assert_eq!(missing.status(), 404);
    let body: Value = missing.json().await.unwrap();
    assert_eq!(body["code"], "NOT_FOUND");
    assert!(body["message"].is_string() && body["details"].is_object());
    assert_eq!(body["request_id"], "r-1");

    let wrong = server.client.delete(server.url("/health")).send().await.unwrap();
    assert_eq!(wrong.status(), 405);
    let body: Value = wrong.json().await.unwrap();
    assert_eq!(body["code"], "METHOD_NOT_ALLOWED");
    assert!(body["details"].is_object());
}

#[tokio::test]
async fn the_openapi_document_lists_every_route_and_each_answers() {
    let server = Instance::new().spawn();
    let doc: Value = server.get("/api/v1/openapi.json").await.json().await.unwrap();
    assert!(doc["openapi"].as_str().unwrap().starts_with("3.1"));
    let paths = doc["paths"].as_object().unwrap();
    for route in ["/health", "/health/live", "/health/ready", "/api/v1/openapi.json"] {
        assert!(paths.contains_key(route), "{route} documented");
    }
    for (path, ops) in paths {
        for method in ops.as_object().unwrap().keys() {
            let response =
                server.client.request(method.to_uppercase().parse().unwrap(), server.url(path)).send().await.unwrap();
            let status = response.status();
            if status == 404 {
                // Served but switched off on this instance (e.g. single sign-on) is not "missing".
                let body: Value = response.json().await.unwrap();
                assert_eq!(
                    body["details"]["reason"], "feature_disabled",
                    "{method} {path} is documented but not served"
                );
                continue;
            }
            assert_ne!(status, 405, "{method} {path} is documented but not served");
        }
    }
}

/// A path or query value that cannot be read answers with the envelope naming it, never axum's
/// plain-text 400, and the document says so: every operation that reads input documents 400 (with
/// the error body), every non-public one 401 and its credentials, and the query-string structs
/// are query parameters, not path parameters.
#[tokio::test]
async fn unreadable_path_and_query_values_get_the_envelope_and_the_document_says_so() {
    let server = Instance::new().spawn();
    let ada = server.sign_up("ada").await;
    for (path, field) in
        [("/api/v1/contacts/-1", "path"), ("/api/v1/contacts/abc", "path"), ("/api/v1/gifts?contact_id=abc", "query")]
    {
        let response = ada.get(path).await;
        assert_eq!(response.status(), 400, "{path}");
        let body: Value = response.json().await.unwrap();
        assert_eq!(body["code"], "INVALID_INPUT", "{path}");
        assert_eq!(body["details"]["field"], field, "{path}");
    }
    let doc: Value = server.get("/api/v1/openapi.json").await.json().await.unwrap();
    assert!(doc["components"]["securitySchemes"]["bearer"].is_object());
    let mut operations = 0;
    for (path, item) in doc["paths"].as_object().unwrap() {
        for (method, op) in item.as_object().unwrap() {
            let params = op["parameters"].as_array().cloned().unwrap_or_default();
            for p in &params {
                let name = p["name"].as_str().unwrap();
                let in_path = path.contains(&format!("{{{name}}}"));
                assert_eq!(p["in"] == "path", in_path, "{method} {path}: parameter {name} is in {}", p["in"]);
            }
            if !params.is_empty() || op.get("requestBody").is_some() {
                let bad = &op["responses"]["400"];
                assert!(bad.is_object(), "{method} {path} documents 400");
                assert_eq!(
                    bad["content"]["application/json"]["schema"]["$ref"], "#/components/schemas/ErrorBody",
                    "{method} {path}: {bad}"
                );
            }
            if !mycorrhizal::api::PUBLIC.contains(&path.as_str()) {
                assert!(op["responses"]["401"].is_object(), "{method} {path} documents 401");
                assert!(op["security"].is_array(), "{method} {path} names its credentials");
            }
            operations += 1;
        }
    }
    assert!(operations > 100, "{operations} operations");
}
