//! The OpenAPI contract, checked from outside by schemathesis (pinned in tests/requirements.txt,
//! installed into `.venv` by scripts/test.sh): it drives every documented operation of the real
//! binary, first with an API token, then the admin routes with an admin session, and fails on a
//! server error, an undocumented status, a schema-valid request refused, a schema-violating
//! request accepted or a response that breaks its schema. The checks, the operations left out and
//! the per-operation exemptions (each with its reason) are in tests/contract/.

use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::time::Duration;

use serde_json::{Value, json};

use crate::helpers::{Cred, Instance, wait_bounded};

fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).parent().expect("workspace root").to_path_buf()
}

/// The venv's `st`, next to the interpreter scripts/test.sh exported, or in the repository's
/// `.venv` when the tests run by hand after scripts/test.sh made it.
fn schemathesis() -> PathBuf {
    let from_env = std::env::var_os("MYCORRHIZAL_TEST_PYTHON")
        .map(PathBuf::from)
        .and_then(|python| python.parent().map(|bin| bin.join("st")));
    let st = from_env.unwrap_or_else(|| repo().join(".venv/bin/st"));
    assert!(
        st.exists(),
        "schemathesis is not installed at {}: run ./scripts/test.sh, which installs the pinned \
         clients of tests/requirements.txt into .venv",
        st.display()
    );
    st
}

/// Runs tests/contract/run.sh against `base` with `credential`, bounded in time; returns whether
/// it passed and its output.
fn run(base: &str, credential: &str, options: &[&str]) -> (bool, String) {
    let out = tempfile::NamedTempFile::new().expect("temp file");
    let mut child = Command::new("bash")
        .arg(repo().join("tests/contract/run.sh"))
        .arg(base)
        .arg(credential)
        .args(options)
        .env("SCHEMATHESIS", schemathesis())
        // schemathesis keeps a cache of its findings in the working folder.
        .current_dir(out.path().parent().expect("temp folder"))
        .stdout(out.reopen().expect("reopen"))
        .stderr(Stdio::null())
        .spawn()
        .expect("run schemathesis");
    let status = wait_bounded(&mut child, Duration::from_secs(900));
    let output = std::fs::read_to_string(out.path()).unwrap_or_default();
    (status.success(), output)
}

#[tokio::test(flavor = "multi_thread")]
async fn schemathesis_finds_the_live_api_true_to_its_document() {
    let server = Instance::new()
        .with("RATE_LIMIT_API_BURST", "1000000")
        .with("RATE_LIMIT_API_INTERVAL_MS", "1")
        .with("RATE_LIMIT_AUTH_BURST", "1000000")
        .with("RATE_LIMIT_AUTH_INTERVAL_MS", "1")
        .spawn();
    let admin = server.sign_up("ada").await;
    let token: Value = admin.post("/api/v1/api-tokens", json!({ "name": "contract" })).await.json().await.unwrap();
    let token = token["token"].as_str().expect("token").to_string();
    let base = server.url("");
    let base = base.trim_end_matches('/').to_string();
    let Cred::Cookie(cookie) = admin.cred.clone() else { unreachable!("sign_up gives a session") };

    let passes = [
        ("every operation, with an API token", format!("Authorization: Bearer {token}"), vec![]),
        (
            "the admin routes, with an admin session",
            format!("Cookie: auth_token={cookie}"),
            vec!["--include-path-regex", "^/api/v1/admin/"],
        ),
    ];
    for (what, credential, extra) in passes {
        // One worker: with two, schemathesis 4.32.5 now and then fails inside itself (a KeyError while
        // generating), which is its bug, not a finding.
        let mut options = vec!["--max-examples", "25", "--workers", "1"];
        options.extend(extra);
        let (passed, output) = tokio::task::spawn_blocking({
            let base = base.clone();
            let options: Vec<String> = options.iter().map(|s| s.to_string()).collect();
            move || run(&base, &credential, &options.iter().map(String::as_str).collect::<Vec<_>>())
        })
        .await
        .unwrap();
        assert!(passed, "schemathesis over {what} found failures:\n{output}");
        assert!(output.contains("generated") && output.contains("passed"), "{what}: no test cases ran:\n{output}");
    }
}
