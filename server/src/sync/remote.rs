//! Talking to a remote DAV server: `libdav`'s requests (built and parsed without I/O) sent
//! through the outbound guard's client (`CALDAV_BLOCK_PRIVATE_URLS`), with Basic credentials,
//! `X-Correlation-ID`, a bounded body, and every failure put in a [`Class`] that says whether
//! retrying can help. [`discover`] finds collections from a server root, a principal or a
//! collection (RFC 6764's well-known address, `current-user-principal`, the home sets).

use std::time::Duration;

use http::Uri;
use libdav::dav::{FindPropertyHrefs, FoundCollection, SyncCollectionParseError};
use libdav::names;
use libdav::requests::{DavRequest, ParseResponseError};
use serde::Serialize;
use utoipa::ToSchema;

use super::Source;

/// One request's whole time.
const TIMEOUT: Duration = Duration::from_secs(60);
/// The largest answer read (a multiget batch of cards with photos).
pub const MAX_BODY: usize = 64 * 1024 * 1024;

/// Why a sync or a request failed, as the subscription's state and `sync_failed` name it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum Class {
    /// The server refused the credentials (401, 403): terminal.
    Credentials,
    /// The collection is gone or access to it was revoked (404, 410): terminal.
    Gone,
    /// The address is private and `CALDAV_BLOCK_PRIVATE_URLS` refuses it: terminal.
    Refused,
    /// No answer in time: retried.
    Timeout,
    /// The connection failed (refused, reset, no such host): retried.
    Unreachable,
    /// The server failed (5xx, 429) or answered what it should not: retried.
    Server,
    /// The server no longer accepts the sync token: the pass starts over (never stored).
    TokenInvalid,
    /// This server could not store what it read: retried.
    Local,
}

impl Class {
    /// Whether retrying cannot mend it ("Sync stopped, action needed").
    pub fn terminal(self) -> bool {
        matches!(self, Class::Credentials | Class::Gone | Class::Refused)
    }

    pub fn name(self) -> &'static str {
        match self {
            Class::Credentials => "credentials",
            Class::Gone => "gone",
            Class::Refused => "refused",
            Class::Timeout => "timeout",
            Class::Unreachable => "unreachable",
            Class::Server => "server",
            Class::TokenInvalid => "token_invalid",
            Class::Local => "local",
        }
    }
}

/// A failed request or pass.
#[derive(Debug, Clone)]
pub struct Failure {
    pub class: Class,
    pub message: String,
}

impl Failure {
    pub fn new(class: Class, message: impl Into<String>) -> Failure {
        Failure { class, message: message.into() }
    }

    /// This server failed to store what it read (retried).
    pub fn local(e: impl std::fmt::Display) -> Failure {
        Failure::new(Class::Local, format!("This server could not store what it read: {e}."))
    }

    /// The failure an HTTP status means.
    pub fn of_status(status: http::StatusCode) -> Failure {
        let class = match status.as_u16() {
            401 | 403 => Class::Credentials,
            404 | 410 => Class::Gone,
            _ => Class::Server,
        };
        let message = match class {
            Class::Credentials => format!("The server refused the user name and password (HTTP {status})."),
            Class::Gone => {
                format!("The collection is not there any more, or access to it was withdrawn (HTTP {status}).")
            }
            _ => format!("The server answered HTTP {status}."),
        };
        Failure::new(class, message)
    }
}

impl std::fmt::Display for Failure {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.message)
    }
}

/// How a request's own parse error maps to a [`Failure`].
pub trait ParseFailure {
    fn failure(self) -> Failure;
}

impl ParseFailure for ParseResponseError {
    fn failure(self) -> Failure {
        match self {
            ParseResponseError::BadStatusCode(status) => Failure::of_status(status),
            other => Failure::new(Class::Server, format!("The server's answer could not be read: {other}.")),
        }
    }
}

impl ParseFailure for SyncCollectionParseError {
    fn failure(self) -> Failure {
        match self {
            SyncCollectionParseError::PreconditionFailed(_) => {
                Failure::new(Class::TokenInvalid, "The server no longer accepts the sync token.")
            }
            SyncCollectionParseError::Parse(e) => e.failure(),
        }
    }
}

/// A remote server, reached at `origin` (scheme and authority) with Basic credentials.
pub struct Remote {
    client: reqwest::Client,
    origin: Uri,
    username: String,
    password: String,
    /// Time spent waiting on the server (sending, its answer, reading it), in microseconds.
    waited: std::sync::atomic::AtomicU64,
}

/// An answer: its head, its body, and the address it finally came from (after redirects).
pub struct Answer {
    pub parts: http::response::Parts,
    pub body: Vec<u8>,
    pub url: reqwest::Url,
}

impl Remote {
    /// A client for `url`'s server; the URL's path is where the caller starts.
    pub fn new(url: &reqwest::Url, username: &str, password: &str, block_internal: bool) -> Result<Remote, Failure> {
        crate::outbound::check_literal(url, block_internal).map_err(|e| Failure::new(Class::Refused, e))?;
        let client = crate::outbound::guarded_client(block_internal, TIMEOUT)
            .map_err(|e| Failure::new(Class::Unreachable, e))?;
        let origin = origin_of(url)?;
        Ok(Remote {
            client,
            origin,
            username: username.to_string(),
            password: password.to_string(),
            waited: Default::default(),
        })
    }

    /// Sends `request` (its URI relative to this server) and reads the answer, at most
    /// [`MAX_BODY`] bytes.
    pub async fn exchange(&self, request: http::Request<String>) -> Result<Answer, Failure> {
        let started = std::time::Instant::now();
        let answer = self.exchange_untimed(request).await;
        self.waited.fetch_add(started.elapsed().as_micros() as u64, std::sync::atomic::Ordering::Relaxed);
        answer
    }

    /// How long this client has waited on the server so far.
    pub fn waited(&self) -> std::time::Duration {
        std::time::Duration::from_micros(self.waited.load(std::sync::atomic::Ordering::Relaxed))
    }

    async fn exchange_untimed(&self, request: http::Request<String>) -> Result<Answer, Failure> {
        let (head, body) = request.into_parts();
        let url = reqwest::Url::parse(&head.uri.to_string())
            .map_err(|e| Failure::new(Class::Server, format!("A link of the server is not an address: {e}.")))?;
        let mut builder = self.client.request(head.method.clone(), url).headers(head.headers).body(body);
        if !self.username.is_empty() || !self.password.is_empty() {
            builder = builder.basic_auth(&self.username, Some(&self.password));
        }
        if let Some(correlation) = crate::ops::correlation::current() {
            builder = builder.header("X-Correlation-ID", correlation);
        }
        let mut response = builder.send().await.map_err(request_failure)?;
        let url = response.url().clone();
        let mut parts = http::Response::new(()).into_parts().0;
        parts.status = response.status();
        parts.headers = std::mem::take(response.headers_mut());
        let mut body = Vec::new();
        while let Some(chunk) = response.chunk().await.map_err(request_failure)? {
            if body.len() + chunk.len() > MAX_BODY {
                return Err(Failure::new(
                    Class::Server,
                    format!("The server's answer is larger than {} MB.", MAX_BODY >> 20),
                ));
            }
            body.extend_from_slice(&chunk);
        }
        Ok(Answer { parts, body, url })
    }

    /// Sends a `libdav` request and parses its answer. A refused credential, a missing
    /// collection or a server error is classed by its status before the request's own parser
    /// sees the body; an answer naming `valid-sync-token` is [`Class::TokenInvalid`].
    pub async fn send<R>(&self, request: &R) -> Result<R::Response, Failure>
    where
        R: DavRequest,
        R::ParseError: ParseFailure,
    {
        let prepared = request
            .prepare_request(self.origin.clone())
            .map_err(|e| Failure::new(Class::Server, format!("The request could not be made: {e}.")))?;
        let answer = self.exchange(prepared).await?;
        let status = answer.parts.status;
        if !status.is_success() && status.as_u16() != 207 {
            if contains(&answer.body, b"valid-sync-token") {
                return Err(Failure::new(Class::TokenInvalid, "The server no longer accepts the sync token."));
            }
            return Err(Failure::of_status(status));
        }
        request.parse_response(&answer.parts, &answer.body).map_err(ParseFailure::failure)
    }

    /// `GET` of `path` on this server (an `.ics` address).
    pub async fn get(&self, path: &str) -> Result<Answer, Failure> {
        let uri = libdav::dav::make_relative_url(self.origin.clone(), path)
            .map_err(|e| Failure::new(Class::Server, format!("The address could not be used: {e}.")))?;
        let request = http::Request::get(uri)
            .header("Accept", "text/calendar")
            .body(String::new())
            .map_err(|e| Failure::new(Class::Server, format!("The request could not be made: {e}.")))?;
        let answer = self.exchange(request).await?;
        if !answer.parts.status.is_success() {
            return Err(Failure::of_status(answer.parts.status));
        }
        Ok(answer)
    }

    /// Where `path` leads once its redirects are followed (RFC 6764's well-known address
    /// redirects to the DAV root). Asked with a `GET`, since a `303` would turn a `PROPFIND`
    /// into one on the way; the `PROPFIND` then goes to the place found.
    pub async fn landing(&self, path: &str) -> Result<String, Failure> {
        let uri = libdav::dav::make_relative_url(self.origin.clone(), path)
            .map_err(|e| Failure::new(Class::Server, format!("The address could not be used: {e}.")))?;
        let request = http::Request::get(uri)
            .body(String::new())
            .map_err(|e| Failure::new(Class::Server, format!("The request could not be made: {e}.")))?;
        Ok(self.exchange(request).await?.url.path().to_string())
    }

    /// The absolute address of `href` on this server.
    pub fn absolute(&self, href: &str) -> String {
        if href.starts_with("http://") || href.starts_with("https://") {
            return href.to_string();
        }
        format!("{}{}", self.origin.to_string().trim_end_matches('/'), href)
    }
}

fn contains(haystack: &[u8], needle: &[u8]) -> bool {
    haystack.windows(needle.len()).any(|w| w == needle)
}

fn origin_of(url: &reqwest::Url) -> Result<Uri, Failure> {
    let host = url.host_str().ok_or_else(|| Failure::new(Class::Server, "The address has no host."))?;
    let host = if host.contains(':') && !host.starts_with('[') { format!("[{host}]") } else { host.to_string() };
    let authority = match url.port() {
        Some(port) => format!("{host}:{port}"),
        None => host,
    };
    Uri::builder()
        .scheme(url.scheme())
        .authority(authority)
        .path_and_query("/")
        .build()
        .map_err(|e| Failure::new(Class::Server, format!("The address could not be used: {e}.")))
}

fn request_failure(e: reqwest::Error) -> Failure {
    if crate::outbound::is_refusal(&e) {
        return Failure::new(
            Class::Refused,
            format!("The address is refused: {}.", crate::ops::events::sanitise(&e.to_string())),
        );
    }
    if e.is_timeout() {
        return Failure::new(Class::Timeout, "The server did not answer in time.");
    }
    let mut text = e.to_string();
    let mut source = std::error::Error::source(&e);
    while let Some(s) = source {
        text = format!("{text}: {s}");
        source = s.source();
    }
    Failure::new(
        Class::Unreachable,
        format!("The server could not be reached: {}.", crate::ops::events::sanitise(&text)),
    )
}

/// A collection found by [`discover`].
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct Collection {
    /// Its absolute address: what a subscription stores.
    pub url: String,
    /// Its display name, when the server gives one.
    pub name: String,
    /// Whether it offers RFC 6578 `sync-collection`.
    pub incremental: bool,
}

fn collections_of(remote: &Remote, found: Vec<FoundCollection>) -> Vec<Collection> {
    found
        .into_iter()
        .map(|c| Collection {
            url: remote.absolute(&c.href),
            name: c
                .properties
                .iter()
                .find(|(name, _)| **name == names::DISPLAY_NAME)
                .and_then(|(_, v)| v.clone())
                .unwrap_or_default(),
            incremental: c.supports_sync,
        })
        .collect()
}

async fn collections_at(remote: &Remote, source: Source, path: &str) -> Result<Vec<Collection>, Failure> {
    let found = match source {
        Source::AddressBook => {
            let request = libdav::carddav::FindAddressBooks::new(path);
            remote.send(&request).await?.addressbooks
        }
        Source::Calendar => {
            let request = libdav::caldav::FindCalendars::new(path);
            remote.send(&request).await?.calendars
        }
    };
    Ok(collections_of(remote, found))
}

async fn hrefs(remote: &Remote, path: &str, property: &libdav::PropertyName<'_, '_>) -> Result<Vec<String>, Failure> {
    let found = remote.send(&FindPropertyHrefs::new(path, property)).await?;
    Ok(found.hrefs.into_iter().map(|u| u.path().to_string()).collect())
}

/// The collections of `source` reachable from `url`: the collection itself, those under it
/// (a home set), or those of the principal it names or the well-known address leads to.
pub async fn discover(remote: &Remote, url: &reqwest::Url, source: Source) -> Result<Vec<Collection>, Failure> {
    let path = url.path().to_string();
    match collections_at(remote, source, &path).await {
        Ok(found) if !found.is_empty() => return Ok(found),
        Ok(_) => {}
        Err(f) if f.class == Class::Gone || f.class == Class::Server => {}
        Err(f) => return Err(f),
    }
    let mut principals = hrefs(remote, &path, &names::CURRENT_USER_PRINCIPAL).await.unwrap_or_default();
    if principals.is_empty() {
        let well_known = match source {
            Source::AddressBook => "/.well-known/carddav",
            Source::Calendar => "/.well-known/caldav",
        };
        let landing = remote.landing(well_known).await?;
        principals = match hrefs(remote, &landing, &names::CURRENT_USER_PRINCIPAL).await {
            Ok(found) => found,
            Err(f) if f.class.terminal() && f.class != Class::Gone => return Err(f),
            Err(_) => Vec::new(),
        };
    }
    let home_property = match source {
        Source::AddressBook => names::ADDRESSBOOK_HOME_SET,
        Source::Calendar => names::CALENDAR_HOME_SET,
    };
    let mut out: Vec<Collection> = Vec::new();
    for principal in principals {
        for home in hrefs(remote, &principal, &home_property).await? {
            for found in collections_at(remote, source, &home).await? {
                if !out.iter().any(|c| c.url == found.url) {
                    out.push(found);
                }
            }
        }
    }
    Ok(out)
}
