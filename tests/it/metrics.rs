//! `/metrics` of the real binary, read by the official Prometheus client's parser
//! (`prometheus_client`, installed into `.venv` by scripts/test.sh): off unless configured,
//! behind the scrape token or an admin session, the families an operator graphs, and no label
//! that names a user or a concrete path.

use std::path::PathBuf;
use std::process::Command;

use serde_json::{Value, json};

use crate::helpers::{Cred, Instance};

const TOKEN: &str = "scrape-9f2b7c4d1e8a6b3c";

fn python() -> PathBuf {
    let python = std::env::var_os("MYCORRHIZAL_TEST_PYTHON").map(PathBuf::from).unwrap_or_else(|| {
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).parent().expect("workspace root").join(".venv/bin/python")
    });
    assert!(python.exists(), "no Python at {}: run ./scripts/test.sh, which makes .venv", python.display());
    python
}

/// The exposition parsed by `prometheus_client.parser`: family name -> its samples as
/// `{name, labels, value}`. Fails on anything the parser refuses.
fn parse(text: &str) -> Value {
    let file = tempfile::NamedTempFile::new().unwrap();
    std::fs::write(file.path(), text).unwrap();
    let script = r#"
import json, sys
from prometheus_client.parser import text_string_to_metric_families
families = {}
for family in text_string_to_metric_families(open(sys.argv[1]).read()):
    families[family.name] = {"type": family.type, "samples": [
        {"name": s.name, "labels": s.labels, "value": s.value} for s in family.samples]}
print(json.dumps(families))
"#;
    let out = Command::new(python()).arg("-c").arg(script).arg(file.path()).output().expect("run python");
    assert!(out.status.success(), "the parser refused the exposition: {}", String::from_utf8_lossy(&out.stderr));
    serde_json::from_slice(&out.stdout).expect("the parser's JSON")
}

fn samples<'a>(families: &'a Value, family: &str) -> &'a Vec<Value> {
    families[family]["samples"].as_array().unwrap_or_else(|| panic!("no family {family}: {families}"))
}

#[tokio::test]
async fn a_scrape_is_parsed_by_the_official_client_and_names_no_user() {
    let server = Instance::new().with("METRICS_ENABLED", "true").with("METRICS_TOKEN", TOKEN).spawn();
    let ada = server.sign_up("ada").await;
    let bob = server.sign_up("bob").await;
    let made = ada.post("/api/v1/contacts", json!({ "firstname": "Grace", "lastname": "Hopper" })).await;
    assert_eq!(made.status(), 201);
    let made = made.json::<Value>().await.unwrap()["contact"].clone();
    let id = made["id"].as_u64().map(|id| id.to_string()).or_else(|| made["id"].as_str().map(String::from)).unwrap();
    assert_eq!(ada.get(&format!("/api/v1/contacts/{id}")).await.status(), 200);
    assert_eq!(ada.get("/api/v1/search?q=Hopper").await.status(), 200);

    assert_eq!(server.anonymous().get("/metrics").await.status(), 401, "no token, no session");
    assert_eq!(bob.get("/metrics").await.status(), 403, "a member's session is not enough");
    assert_eq!(ada.get("/metrics").await.status(), 200, "an admin's session is");
    let scrape = server.anonymous().with(Cred::Bearer(TOKEN.into())).get("/metrics").await;
    assert_eq!(scrape.status(), 200);
    let kind = scrape.headers()["content-type"].to_str().unwrap().to_string();
    assert!(kind.starts_with("text/plain; version=0.0.4"), "{kind}");
    let text = scrape.text().await.unwrap();
    let families = parse(&text);

    // The parser drops a counter's `_total` from the family name.
    let requests = samples(&families, "mycorrhizal_http_requests");
    let created = requests.iter().find(|s| {
        s["labels"]["route"] == "/api/v1/contacts" && s["labels"]["method"] == "POST" && s["labels"]["status"] == "201"
    });
    assert!(created.is_some_and(|s| s["value"].as_f64() >= Some(1.0)), "{requests:?}");
    assert!(
        requests.iter().any(|s| s["labels"]["route"] == "/api/v1/contacts/{id}"),
        "the route template, not the path"
    );
    assert_eq!(families["mycorrhizal_http_request_duration_seconds"]["type"], "histogram");
    let commits = samples(&families, "mycorrhizal_writer_commit_seconds");
    let count = commits.iter().find(|s| s["name"] == "mycorrhizal_writer_commit_seconds_count").unwrap();
    assert!(count["value"].as_f64().unwrap() >= 3.0, "every write went through the writer");
    let searches = samples(&families, "mycorrhizal_search_seconds");
    assert!(
        searches.iter().any(|s| s["name"] == "mycorrhizal_search_seconds_count" && s["value"].as_f64() >= Some(1.0))
    );
    let records = samples(&families, "mycorrhizal_records");
    assert!(records.iter().any(|s| s["labels"]["kind"] == "contact" && s["value"] == 1.0), "{records:?}");
    for family in [
        "mycorrhizal_outbox_pending",
        "mycorrhizal_job_runs",
        "mycorrhizal_alert_state",
        "mycorrhizal_storage_bytes",
        "mycorrhizal_writer_batch_size",
    ] {
        assert!(families.get(family).is_some(), "{family} missing");
    }
    assert!(!text.contains("ada") && !text.contains("Hopper") && !text.contains(&format!("/contacts/{id}")), "{text}");
}

#[tokio::test]
async fn metrics_are_off_unless_configured() {
    let server = Instance::new().spawn();
    let ada = server.sign_up("ada").await;
    assert_eq!(server.anonymous().get("/metrics").await.status(), 401, "nothing told to anyone");
    let answer = ada.get("/metrics").await;
    assert_eq!(answer.status(), 404);
    assert_eq!(answer.json::<Value>().await.unwrap()["details"]["reason"], "feature_disabled");
}
