//! One request to an integration: built on the stored address, sent through the guarded-always
//! client (an internal literal is refused here, a name by the client's resolver), its answer
//! classed ([`Failure`]) and read with a cap. [`Call::finish`] records the outcome on the
//! user's settings and, for a failure, an `integration_failed` event.

use reqwest::{Method, StatusCode};
use serde::de::DeserializeOwned;

use super::config::{self, Opened};
use super::{Error, Integrations, System};
use crate::ops::events::{self, Event};

/// Most bytes read of a JSON or XML answer.
pub const MAX_DOCUMENT: usize = 8 * 1024 * 1024;
/// Most bytes of an image passed through.
pub const MAX_IMAGE: usize = 10 * 1024 * 1024;

/// How a request failed.
#[derive(Debug, Clone, PartialEq)]
pub enum Failure {
    /// The guard refused the destination (a private or loopback address).
    Refused(String),
    /// No answer: cannot resolve, connect, or in time.
    Unreachable(String),
    /// 401 or 403: the credential is wrong, revoked or expired.
    Rejected,
    /// 404 or 410.
    NotFound,
    /// Another unexpected status.
    Status(u16),
    /// An answer we cannot read (not the expected JSON or XML, too large, not an image).
    Unreadable(String),
    /// It redirects to another address (another scheme, host or port), which is not followed.
    Moved(String),
}

impl Failure {
    /// What the user is told.
    pub fn message(&self, system: System) -> String {
        let name = system.label();
        match self {
            Failure::Refused(why) => format!("{name} is refused: {why}. Integrations reach only public addresses."),
            Failure::Unreachable(why) => format!("Could not reach {name}: {why}. Is the server up?"),
            Failure::Rejected => format!(
                "{name} rejected the {}: check that it is not revoked, expired or mistyped.",
                system.secret_words()
            ),
            Failure::NotFound => format!("{name} has no such item."),
            Failure::Status(code) => format!("{name} answered {code}: it is reachable, but this request failed."),
            Failure::Unreadable(why) => {
                format!("{name} answered something that cannot be read ({why}); check its version.")
            }
            Failure::Moved(why) => format!("{name} {why}."),
        }
    }

    /// The stage of a connection test it belongs to.
    pub fn stage(&self) -> &'static str {
        match self {
            Failure::Rejected => "auth",
            _ => "reachability",
        }
    }
}

/// How a request carries the credential.
pub enum Credential<'a> {
    /// A header of the system's own (`x-api-key`), or `Authorization: Token ..`.
    Header(&'static str, String),
    Basic(&'a str, &'a str),
    Anonymous,
}

/// One use of an integration: its opened settings and the outcome so far.
pub struct Call<'a> {
    pub i: &'a Integrations,
    pub opened: Opened,
    /// The first failure other than "not found".
    failure: Option<Failure>,
    /// Something asked for was not there: an answer (a person deleted in the library), unless
    /// the call is a connection test, where the address itself is wrong.
    missing: bool,
    /// A connection test: "not found" is a failure of the connection.
    testing: bool,
}

impl<'a> Call<'a> {
    pub fn new(i: &'a Integrations, user: u64, system: System) -> super::Result<Call<'a>> {
        Ok(Call { i, opened: config::open(i, user, system)?, failure: None, missing: false, testing: false })
    }

    pub fn of(i: &'a Integrations, opened: Opened) -> Call<'a> {
        Call { i, opened, failure: None, missing: false, testing: false }
    }

    /// The same call as a connection test (a "not found" fails the connection).
    pub fn testing(mut self) -> Call<'a> {
        self.testing = true;
        self
    }

    fn note(&mut self, f: &Failure) {
        match f {
            Failure::NotFound => self.missing = true,
            f => {
                self.failure.get_or_insert(f.clone());
            }
        }
    }

    pub fn system(&self) -> System {
        self.opened.system
    }

    fn credential(&self) -> Credential<'_> {
        match self.opened.system {
            System::Immich => Credential::Header("x-api-key", self.opened.secret.clone()),
            System::Paperless | System::Seafile => {
                Credential::Header("authorization", format!("Token {}", self.opened.secret))
            }
            System::Nextcloud => Credential::Basic(&self.opened.username, &self.opened.secret),
        }
    }

    /// Sends `method` to `url` (absolute, under the stored address) with the credential.
    pub async fn send(
        &mut self,
        method: Method,
        url: &str,
        body: Option<Body>,
        anonymous: bool,
    ) -> Result<reqwest::Response, Failure> {
        let outcome = self.send_inner(method, url, body, anonymous).await;
        if let Err(f) = &outcome {
            self.note(f);
        }
        outcome
    }

    async fn send_inner(
        &self,
        method: Method,
        url: &str,
        body: Option<Body>,
        anonymous: bool,
    ) -> Result<reqwest::Response, Failure> {
        let parsed = reqwest::Url::parse(url).map_err(|e| Failure::Refused(format!("not a URL: {e}")))?;
        crate::outbound::check_literal_always_with(&parsed, self.i.loopback()).map_err(Failure::Refused)?;
        let mut request = self.i.client().request(method, parsed).header("accept", "application/json");
        if !anonymous {
            request = match self.credential() {
                Credential::Header(name, value) => request.header(name, value),
                Credential::Basic(user, password) => request.basic_auth(user, Some(password)),
                Credential::Anonymous => request,
            };
        }
        request = match body {
            Some(Body::Json(v)) => request.json(&v),
            Some(Body::Xml(text, depth)) => {
                request.header("content-type", "application/xml; charset=utf-8").header("depth", depth).body(text)
            }
            None => request,
        };
        let answer = request.send().await.map_err(|e| {
            if crate::outbound::is_refusal(&e) {
                let why = refusal_text(&e);
                if why.starts_with("it redirects") { Failure::Moved(why) } else { Failure::Refused(why) }
            } else if e.is_timeout() {
                Failure::Unreachable("no answer in time".into())
            } else if e.is_connect() {
                Failure::Unreachable("cannot connect".into())
            } else if e.is_redirect() {
                Failure::Unreadable("it redirected elsewhere".into())
            } else {
                Failure::Unreachable("the request failed".into())
            }
        })?;
        match answer.status() {
            s if s.is_success() || s == StatusCode::MULTI_STATUS => Ok(answer),
            StatusCode::UNAUTHORIZED | StatusCode::FORBIDDEN => Err(Failure::Rejected),
            StatusCode::NOT_FOUND | StatusCode::GONE => Err(Failure::NotFound),
            s => Err(Failure::Status(s.as_u16())),
        }
    }

    /// Reads an answer's body, at most `cap` bytes.
    pub async fn read(&mut self, mut answer: reqwest::Response, cap: usize) -> Result<Vec<u8>, Failure> {
        let mut bytes = Vec::new();
        loop {
            match answer.chunk().await {
                Ok(Some(chunk)) => {
                    bytes.extend_from_slice(&chunk);
                    if bytes.len() > cap {
                        return self.fail(Failure::Unreadable(format!("the answer is larger than {} MB", cap >> 20)));
                    }
                }
                Ok(None) => return Ok(bytes),
                Err(_) => return self.fail(Failure::Unreachable("the answer broke off".into())),
            }
        }
    }

    /// Sends and reads the answer as JSON of type `T`.
    pub async fn json<T: DeserializeOwned>(
        &mut self,
        method: Method,
        url: &str,
        body: Option<serde_json::Value>,
    ) -> Result<T, Failure> {
        let answer = self.send(method, url, body.map(Body::Json), false).await?;
        let bytes = self.read(answer, MAX_DOCUMENT).await?;
        serde_json::from_slice(&bytes)
            .or_else(|e| self.fail(Failure::Unreadable(format!("not the JSON expected: {e}"))))
    }

    /// Remembers `failure` as this call's and returns it.
    pub fn fail<T>(&mut self, failure: Failure) -> Result<T, Failure> {
        self.note(&failure);
        Err(failure)
    }

    /// The error a door answers for `failure`.
    pub fn error(&self, failure: Failure) -> Error {
        let system = self.opened.system;
        match failure {
            Failure::NotFound => Error::Missing(failure.message(system)),
            f => Error::Remote { system, message: f.message(system) },
        }
    }

    /// Records the outcome and answers `outcome` as the door's result.
    pub async fn settle<T>(self, outcome: Result<T, Failure>) -> super::Result<T> {
        let error = outcome.as_ref().err().map(|f| self.error(f.clone()));
        self.finish().await;
        outcome.map_err(|_| error.expect("a failure has its error"))
    }

    /// Records the outcome: a success, or the first failure (an `integration_failed` event
    /// too). "Not found" is an answer, not a failure of the integration, except in a
    /// connection test. Nothing is recorded by a quiet [`Integrations`] (the diagnostics').
    pub async fn finish(self) {
        let (system, user) = (self.opened.system, self.opened.user);
        if self.i.quiet() {
            return;
        }
        let failure = match self.failure {
            Some(f) => Some(f),
            None if self.missing && self.testing => Some(Failure::NotFound),
            None => None,
        };
        match failure {
            None => config::record(self.i, user, system, Ok(())).await,
            Some(f) => {
                let message = f.message(system);
                events::emit(
                    &self.i.engine,
                    Event::error(system.name(), "integration_failed", message.clone())
                        .user(user)
                        .detail(serde_json::json!({ "system": system.name(), "stage": f.stage() })),
                )
                .await;
                config::record(self.i, user, system, Err(message)).await;
            }
        }
    }
}

/// A request body.
pub enum Body {
    Json(serde_json::Value),
    /// An XML body and its `Depth` header (WebDAV's PROPFIND).
    Xml(String, &'static str),
}

fn refusal_text(e: &reqwest::Error) -> String {
    let mut source: Option<&(dyn std::error::Error + 'static)> = Some(e);
    while let Some(err) = source {
        if let Some(r) = err.downcast_ref::<crate::outbound::Refused>() {
            return r.0.clone();
        }
        source = err.source();
    }
    "the address is private or internal".into()
}

/// `base` joined with `path` (which starts with `/`).
pub fn join(base: &str, path: &str) -> String {
    format!("{}{}", base.trim_end_matches('/'), path)
}

/// One path segment escaped (an id the system gave, put into a path).
pub fn segment(raw: &str) -> String {
    // `.` and `..` (even escaped: URL parsers read `%2e` as a dot) would climb the path: no id
    // of these systems is one, so they name nothing.
    if matches!(raw, "." | "..") {
        return "_".into();
    }
    url::form_urlencoded::byte_serialize(raw.as_bytes()).collect::<String>().replace('+', "%20")
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_segment_never_climbs_or_leaves_its_place() {
        assert_eq!(super::segment(".."), "_");
        assert_eq!(super::segment("a/b?c#d@e"), "a%2Fb%3Fc%23d%40e");
        assert_eq!(super::segment("Ann Example"), "Ann%20Example");
        assert!(super::clean_path(Some("/a/../b")).is_err());
        assert!(super::clean_path(Some("/a\\b")).is_err());
        assert_eq!(super::clean_path(None).unwrap(), "/");
        assert_eq!(super::clean_path(Some("Letters")).unwrap(), "/Letters");
        assert_eq!(super::clean_path(Some("/What? #1")).unwrap(), "/What? #1", "escaped per segment later");
        assert_eq!((super::parent_of("/a/b.pdf"), super::parent_of("/a/"), super::parent_of("/b")), ("/a", "/", "/"));
    }
}

/// A folder or file path as asked (`/` when blank, a leading `/` added), refused when it climbs
/// (`.` or `..`), holds a control character or a backslash, or is longer than 512 characters.
/// Each segment is escaped when it goes into an address ([`segment`]), so `?`, `#` and `%` are
/// a name's own characters.
pub fn clean_path(raw: Option<&str>) -> super::Result<String> {
    let raw = raw.map(str::trim).filter(|p| !p.is_empty()).unwrap_or("/");
    let path = if raw.starts_with('/') { raw.to_string() } else { format!("/{raw}") };
    let bad = path.chars().any(|c| c.is_control() || c == '\\')
        || path.split('/').any(|s| s == ".." || s == ".")
        || path.chars().count() > 512;
    if bad {
        let reason = "must be a path (no `.` or `..` segment, no control character, at most 512 characters)";
        return Err(crate::crm::Error::invalid("path", reason).into());
    }
    Ok(path)
}

/// The folder holding `path` (`/` at the top).
pub fn parent_of(path: &str) -> &str {
    match path.trim_end_matches('/').rsplit_once('/') {
        Some((parent, _)) if !parent.is_empty() => parent,
        _ => "/",
    }
}

/// A folder's entries, folders first, then by name regardless of case.
pub fn folders_first<T>(items: &mut [T], key: impl Fn(&T) -> (&str, &str)) {
    items.sort_by_cached_key(|item| {
        let (kind, name) = key(item);
        (kind != "dir", name.to_lowercase())
    });
}

/// The answer a connection test gives: `{ok, stage, message}`.
#[derive(Debug, Clone, serde::Serialize, utoipa::ToSchema)]
#[schema(as = IntegrationTestResult)]
pub struct TestResult {
    pub ok: bool,
    /// `ok`, `reachability` or `auth`.
    pub stage: String,
    pub message: String,
}

impl TestResult {
    pub fn ok(message: String) -> TestResult {
        TestResult { ok: true, stage: "ok".into(), message }
    }

    pub fn failed(system: System, f: &Failure) -> TestResult {
        TestResult { ok: false, stage: f.stage().into(), message: f.message(system) }
    }
}
