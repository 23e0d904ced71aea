//! Session lifetimes with an injected clock, in process (the router without a socket).

use std::collections::HashMap;
use std::sync::Arc;

use axum::body::Body;
use axum::http::Request;
use jiff::{SignedDuration, Timestamp};
use mycorrhizal::config::{Config, Env};
use mycorrhizal::{AppState, app};
use mycorrhizal_engine::{Engine, FixedClock, Options};
use serde_json::{Value, json};
use tower::ServiceExt;

pub struct InProcess {
    _dir: tempfile::TempDir,
    pub state: AppState,
    pub clock: Arc<FixedClock>,
}

pub async fn in_process(extra: &[(&str, &str)]) -> InProcess {
    let dir = tempfile::tempdir().unwrap();
    let mut vars: HashMap<String, String> = HashMap::new();
    vars.insert("DATA_DIR".into(), dir.path().display().to_string());
    vars.insert("JWT_SECRET_KEY".into(), "3f9c1a7be2d04c88a9e15b6f70d2c4e1937ab0c5d8e2f61a4b7c9d0e3f5a8b21".into());
    for (k, v) in extra {
        vars.insert(k.to_string(), v.to_string());
    }
    let config = Config::load(Env::from_map(vars)).unwrap();
    let clock = Arc::new(FixedClock::new(Timestamp::now()));
    let options = Options { clock: clock.clone(), migrations: mycorrhizal::crm::migrations(), ..Options::default() };
    let (engine, _) = Engine::open(config.database_path(), options).unwrap();
    let state = AppState::build(engine, config).await.unwrap();
    InProcess { _dir: dir, state, clock }
}

impl InProcess {
    pub async fn call(
        &self,
        method: &str,
        path: &str,
        cookie: Option<&str>,
        body: Value,
    ) -> (u16, Value, Option<String>) {
        let mut request = Request::builder().method(method).uri(path).header("content-type", "application/json");
        if let Some(c) = cookie {
            request = request.header("cookie", format!("auth_token={c}"));
        }
        let response =
            app(self.state.clone()).oneshot(request.body(Body::from(body.to_string())).unwrap()).await.unwrap();
        let status = response.status().as_u16();
        let cookie = response
            .headers()
            .get_all("set-cookie")
            .iter()
            .filter_map(|v| v.to_str().ok())
            .find_map(|c| c.strip_prefix("auth_token=").map(|r| r.split(';').next().unwrap_or("").to_string()));
        let bytes = axum::body::to_bytes(response.into_body(), usize::MAX).await.unwrap();
        (status, serde_json::from_slice(&bytes).unwrap_or(Value::Null), cookie)
    }

    pub fn advance(&self, hours: i64) {
        self.clock.set(self.clock_now().checked_add(SignedDuration::from_hours(hours)).unwrap());
    }

    fn clock_now(&self) -> Timestamp {
        use mycorrhizal_engine::Clock;
        self.clock.now()
    }

    pub async fn signed_in(&self) -> String {
        let register = json!({ "username": "ada", "email": "ada@example.org", "password": crate::helpers::PASSWORD });
        assert_eq!(self.call("POST", "/api/v1/register", None, register).await.0, 201);
        self.sign_in_again().await
    }

    /// A fresh session (moving the clock far ends the old one, as it should).
    pub async fn sign_in_again(&self) -> String {
        let (status, _, cookie) = self
            .call("POST", "/api/v1/login", None, json!({ "identifier": "ada", "password": crate::helpers::PASSWORD }))
            .await;
        assert_eq!(status, 200);
        cookie.unwrap()
    }
}

#[tokio::test]
async fn an_idle_session_ends_after_the_idle_timeout() {
    let app = in_process(&[("SESSION_IDLE_TIMEOUT_HOURS", "24")]).await;
    let cookie = app.signed_in().await;
    app.advance(23);
    assert_eq!(app.call("GET", "/api/v1/users/me", Some(&cookie), json!({})).await.0, 200);
    app.advance(25);
    let (status, body, _) = app.call("GET", "/api/v1/users/me", Some(&cookie), json!({})).await;
    assert_eq!(status, 401, "{body}");
    assert_eq!(body["message"], "Session expired, please sign in again");
    assert_eq!(body["code"], "TOKEN_EXPIRED", "an expired session says so");
}

#[tokio::test]
async fn a_busy_session_still_ends_at_its_absolute_lifetime() {
    let app = in_process(&[("SESSION_IDLE_TIMEOUT_HOURS", "1000"), ("JWT_EXPIRY_HOURS", "3")]).await;
    let cookie = app.signed_in().await;
    app.advance(2);
    assert_eq!(app.call("GET", "/api/v1/users/me", Some(&cookie), json!({})).await.0, 200);
    app.advance(2);
    let (status, body, _) = app.call("GET", "/api/v1/users/me", Some(&cookie), json!({})).await;
    assert_eq!((status, body["message"].as_str()), (401, Some("Token expired")), "the token ends with the session");
    assert_eq!(body["code"], "TOKEN_EXPIRED");
}
