//! Lockout, the spray throttle, trusted proxies and the client-version gate.

use serde_json::{Value, json};

use crate::helpers::{Instance, PASSWORD, TestServer};

async fn login_from(server: &TestServer, who: &str, password: &str, ip: &str) -> reqwest::Response {
    server
        .client
        .post(server.url("/api/v1/login"))
        .header("x-forwarded-for", ip)
        .json(&json!({ "identifier": who, "password": password }))
        .send()
        .await
        .unwrap()
}

#[tokio::test]
async fn five_failures_lock_the_identifier_and_source_with_retry_after() {
    let server = Instance::new().spawn();
    server.register("ada", PASSWORD).await;
    for _ in 0..5 {
        assert_eq!(login_from(&server, "ada", "wrong-password-x", "203.0.113.1").await.status(), 401);
    }
    let locked = login_from(&server, "ada", PASSWORD, "203.0.113.1").await;
    assert_eq!(locked.status(), 429, "locked even with the right password");
    let retry: u64 = locked.headers()["retry-after"].to_str().unwrap().parse().unwrap();
    assert!(retry > 60, "{retry}");
    let body: Value = locked.json().await.unwrap();
    assert_eq!(
        (body["code"].as_str(), body["message"].as_str()),
        (Some("RATE_LIMIT_EXCEEDED"), Some("Account temporarily locked"))
    );
    assert_eq!(login_from(&server, "ada", PASSWORD, "203.0.113.2").await.status(), 200, "another source is not locked");
}

#[tokio::test]
async fn a_spray_throttles_new_sources_but_not_returning_users() {
    let server =
        Instance::new().with("AUTH_SPRAY_FAILURE_THRESHOLD", "8").with("AUTH_SPRAY_IDENTIFIER_THRESHOLD", "4").spawn();
    server.register("ada", PASSWORD).await;
    assert_eq!(login_from(&server, "ada", PASSWORD, "198.51.100.10").await.status(), 200, "ada's usual place");
    // One account failing from many addresses does not trip it.
    for n in 0..8 {
        login_from(&server, "victim", "x-wrong-pass-1", &format!("192.0.2.{n}")).await;
    }
    assert_eq!(login_from(&server, "ada", PASSWORD, "198.51.100.99").await.status(), 200, "no throttle yet");
    // Many identifiers from a botnet does.
    for n in 0..8 {
        login_from(&server, &format!("user{n}"), "x-wrong-pass-1", &format!("192.0.2.{}", 100 + n)).await;
    }
    let stranger = login_from(&server, "someone", "whatever-pass-1", "203.0.113.50").await;
    assert_eq!(stranger.status(), 429);
    assert!(stranger.headers().get("retry-after").is_some());
    assert_eq!(login_from(&server, "ada", PASSWORD, "198.51.100.10").await.status(), 200, "returning users are exempt");
}

#[tokio::test]
async fn forwarded_headers_from_untrusted_peers_are_ignored() {
    // Loopback is not trusted here, so every attempt counts against 127.0.0.1 whatever it claims.
    let server = Instance::new().with("TRUSTED_PROXIES", "10.0.0.0/8").spawn();
    server.register("ada", PASSWORD).await;
    for n in 0..5 {
        login_from(&server, "ada", "wrong-password-x", &format!("203.0.113.{n}")).await;
    }
    assert_eq!(login_from(&server, "ada", PASSWORD, "203.0.113.200").await.status(), 429);
}

#[tokio::test]
async fn the_version_gate_refuses_before_any_credential_work() {
    let server = Instance::new().with("MIN_CLIENT_VERSION", "1.2.0").spawn();
    let post = |path: &'static str, version: Option<&'static str>, body: Value| {
        let mut request = server.client.post(server.url(path)).json(&body);
        if let Some(v) = version {
            request = request.header("x-client-version", v);
        }
        request.send()
    };
    for (version, expected) in
        [(None, 403), (Some("1.1.9"), 403), (Some("v1.2.0"), 403), (Some("1.2"), 403), (Some("1.2.0"), 201)]
    {
        let response = post(
            "/api/v1/register",
            version,
            json!({ "username": "ada", "email": "ada@example.org", "password": PASSWORD }),
        )
        .await
        .unwrap();
        assert_eq!(response.status(), expected, "{version:?}");
        if expected == 403 {
            assert_eq!(response.json::<Value>().await.unwrap()["code"], "CLIENT_NOT_SUPPORTED");
        }
    }
    for path in ["/api/v1/login", "/api/v1/login/2fa", "/api/v1/auth/device/session"] {
        // Even a malformed body gets the gate's answer first.
        let response = post(path, None, json!({ "nonsense": true })).await.unwrap();
        assert_eq!(response.status(), 403, "{path}");
    }
    // Failed attempts refused by the gate do no lockout accounting.
    for _ in 0..6 {
        post("/api/v1/login", Some("0.1.0"), json!({ "identifier": "ada", "password": "wrong-password-x" }))
            .await
            .unwrap();
    }
    assert_eq!(
        post("/api/v1/login", Some("1.2.0"), json!({ "identifier": "ada", "password": PASSWORD }))
            .await
            .unwrap()
            .status(),
        200
    );
}

#[tokio::test]
async fn the_api_rate_is_limited_per_ip_and_per_user() {
    let server = Instance::new().with("RATE_LIMIT_API_BURST", "6").with("RATE_LIMIT_API_INTERVAL_MS", "60000").spawn();
    let ada = server.sign_up("ada").await;
    // sign_up spent one request (users/me); per user the bucket has 5 left, per IP as well.
    let mut statuses = Vec::new();
    for n in 0..6 {
        let response = ada
            .request(reqwest::Method::GET, "/api/v1/users/me")
            .header("x-forwarded-for", format!("192.0.2.{n}"))
            .send()
            .await
            .unwrap();
        statuses.push(response.status().as_u16());
        if response.status() == 429 {
            assert!(response.headers().get("retry-after").is_some());
            assert_eq!(response.json::<Value>().await.unwrap()["code"], "RATE_LIMIT_EXCEEDED");
        }
    }
    assert_eq!(statuses, [200, 200, 200, 200, 200, 429], "per user, across addresses");
    let bob_ip = |n: u8| format!("198.51.100.{n}");
    let mut statuses = Vec::new();
    for _ in 0..7 {
        let response = server
            .client
            .get(server.url("/api/v1/openapi.json"))
            .header("x-forwarded-for", bob_ip(1))
            .send()
            .await
            .unwrap();
        statuses.push(response.status().as_u16());
    }
    assert_eq!(statuses.iter().filter(|s| **s == 429).count(), 1, "per IP: {statuses:?}");
    let other = server
        .client
        .get(server.url("/api/v1/openapi.json"))
        .header("x-forwarded-for", bob_ip(2))
        .send()
        .await
        .unwrap();
    assert_eq!(other.status(), 200, "another address has its own bucket");
}

#[tokio::test]
async fn the_auth_routes_have_their_own_tighter_rate() {
    let server =
        Instance::new().with("RATE_LIMIT_AUTH_BURST", "3").with("RATE_LIMIT_AUTH_INTERVAL_MS", "60000").spawn();
    let mut statuses = Vec::new();
    for _ in 0..4 {
        statuses.push(login_from(&server, "nobody", "wrong-password-x", "203.0.113.9").await.status().as_u16());
    }
    assert_eq!(statuses, [401, 401, 401, 429]);
}
