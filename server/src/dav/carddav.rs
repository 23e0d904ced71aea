//! The CardDAV methods: OPTIONS, PROPFIND on every resource, GET/HEAD/PUT/DELETE of a card, and
//! the REPORTs of the address book (multiget, query, sync-collection). Each one reads the request
//! (`xml`), calls the domain (`crm::contact::card`) or reads one user-scoped view, and writes the answer.

use axum::body::{Body, Bytes};
use axum::extract::Request;
use axum::http::header::{ACCEPT, CONTENT_TYPE, ETAG, IF_MATCH, IF_NONE_MATCH, USER_AGENT};
use axum::http::{HeaderMap, HeaderValue, Method, StatusCode};
use axum::response::{IntoResponse, Response};
use mycorrhizal_codecs::vcard::Version;
use mycorrhizal_engine::{Row, UserView};

use super::props::{self, Resource};
use super::sync::{self, SyncError};
use super::xml::{self, CARDDAV, Multistatus, Prop, PropName, Propfind, Report};
use super::{DavError, DavUser, MAX_BODY};
use crate::crm::contact::{Contact, ContactHead};
use crate::crm::export::{CHUNK, Sink, produce};
use crate::crm::{contact::card as cards, contact::card::PutCondition};
use crate::http::conditional;
use crate::state::AppState;

const ALLOW: &str = "OPTIONS, GET, HEAD, PUT, DELETE, PROPFIND, PROPPATCH, REPORT";

/// Where a path points.
enum Target {
    /// The server's own root, `/`.
    Slash,
    Root,
    Principal,
    Book,
    Card(String),
}

/// The target of `path` for `user`; another user's paths are missing ones.
fn target(path: &str, user: &DavUser) -> Option<Target> {
    if path == "/" {
        return Some(Target::Slash);
    }
    let rest = path.strip_prefix("/carddav")?;
    let parts = props::decoded_segments(rest);
    let parts: Vec<&str> = parts.iter().map(String::as_str).collect();
    let own = |id: &str| id == user.id.0.to_string();
    match parts.as_slice() {
        [] => Some(Target::Root),
        [id] if own(id) => Some(Target::Principal),
        [id, "contacts"] if own(id) => Some(Target::Book),
        [id, "contacts", name] if own(id) => Some(Target::Card(name.strip_suffix(".vcf").unwrap_or(name).to_string())),
        _ => None,
    }
}

/// OPTIONS: the DAV classes (answered without credentials, as clients probe before signing in).
/// With CalDAV on, `calendar-access` too: the principal under `/carddav/` is the calendar
/// user's as well, and clients probe it for either.
pub fn options(calendar: bool) -> Response {
    let classes = if calendar { "1, 3, addressbook, calendar-access" } else { "1, 3, addressbook" };
    (StatusCode::OK, [("DAV", classes), ("Allow", ALLOW)]).into_response()
}

pub async fn handle(state: AppState, user: DavUser, request: Request) -> Result<Response, DavError> {
    let (parts, body) = request.into_parts();
    let target = target(parts.uri.path(), &user).ok_or_else(DavError::not_found)?;
    let too_large = match (&parts.method, &target) {
        (&Method::PUT, Target::Card(_)) => DavError::resource_too_large("C:max-resource-size"),
        _ => DavError::too_large(),
    };
    let body = axum::body::to_bytes(body, MAX_BODY).await.map_err(|_| too_large)?;
    let headers = &parts.headers;
    match (parts.method.as_str(), target) {
        ("OPTIONS", _) => Ok(options(state.config.features.caldav_enabled)),
        ("PROPFIND", target) => propfind(&state, user, target, headers, &body).await,
        ("REPORT", Target::Book) => report(&state, user, headers, &body).await,
        ("GET" | "HEAD", Target::Card(name)) => get(&state, user, name, headers, parts.method == Method::HEAD).await,
        ("PUT", Target::Card(name)) => put(&state, user, name, headers, body).await,
        ("DELETE", Target::Card(name)) => delete(&state, user, name, headers).await,
        ("PROPPATCH", Target::Book) => proppatch(&state, user, &body).await,
        ("PUT" | "DELETE" | "REPORT", _) => Err(DavError::method_not_allowed()),
        ("GET" | "HEAD", _) => Err(DavError::method_not_allowed()),
        _ => Err(DavError::method_not_allowed()),
    }
}

/// The vCard version a client reads: what it asks (an `address-data` version, `Accept:
/// text/vcard; version=4.0` or `3.0`), else what it last wrote (a client that PUT a 4.0 card
/// reads 4.0), else 3.0: iOS and macOS Contacts read only 3.0 and mark the whole account failed
/// on a 4.0 card, and every CardDAV client reads 3.0.
fn version(headers: &HeaderMap, asked: Option<&str>, user: u64) -> Version {
    if let Some(v) = asked.and_then(Version::parse) {
        return v;
    }
    let accept = headers.get(ACCEPT).and_then(|v| v.to_str().ok()).unwrap_or("").to_ascii_lowercase();
    if accept.contains("version=4.0") {
        return Version::V4;
    }
    if accept.contains("version=3.0") || accept.contains("text/x-vcard") {
        return Version::V3;
    }
    match WROTE.lock() {
        Ok(wrote) => wrote.get(&(user, agent(headers))).copied().unwrap_or(Version::V3),
        Err(_) => Version::V3,
    }
}

/// The version each client (user and `User-Agent`) last PUT, so that it reads what it writes.
/// Per process: after a restart a client reads 3.0 until it writes again.
static WROTE: std::sync::LazyLock<std::sync::Mutex<std::collections::HashMap<(u64, String), Version>>> =
    std::sync::LazyLock::new(Default::default);
/// Most clients remembered (past it, the memory starts over).
const MAX_CLIENTS: usize = 10_000;

fn agent(headers: &HeaderMap) -> String {
    headers.get(USER_AGENT).and_then(|v| v.to_str().ok()).unwrap_or("").chars().take(200).collect()
}

/// Remembers the version of the card `body` this client PUT.
fn remember_version(headers: &HeaderMap, user: u64, body: &[u8]) {
    let head = &body[..body.len().min(4096)];
    let text = String::from_utf8_lossy(head).to_ascii_uppercase();
    let version = if text.contains("VERSION:4.0") {
        Version::V4
    } else if text.contains("VERSION:3.0") {
        Version::V3
    } else {
        return;
    };
    if let Ok(mut wrote) = WROTE.lock() {
        if wrote.len() >= MAX_CLIENTS {
            wrote.clear();
        }
        wrote.insert((user, agent(headers)), version);
    }
}

pub(super) fn depth(headers: &HeaderMap) -> u8 {
    match headers.get("depth").and_then(|v| v.to_str().ok()).map(str::trim) {
        Some("0") => 0,
        _ => 1,
    }
}

pub(super) fn multistatus(body: impl Into<Body>) -> Response {
    let mut response = Response::new(body.into());
    *response.status_mut() = StatusCode::MULTI_STATUS;
    response.headers_mut().insert(CONTENT_TYPE, HeaderValue::from_static("application/xml; charset=utf-8"));
    response
}

/// Runs `work` on one read view of the user's data, off the async threads.
pub(super) async fn reading<T: Send + 'static>(
    state: &AppState,
    user: &DavUser,
    work: impl FnOnce(&UserView) -> Result<T, DavError> + Send + 'static,
) -> Result<T, DavError> {
    let scope = state.engine.user(user.id);
    state.blocking(move |_| scope.view().map_err(DavError::from).and_then(|v| work(&v))).await?
}

/// Writes one resource's response: its found properties, and the asked ones it lacks as 404.
/// `all` is what the resource reports for `allprop` and `propname`.
pub(super) fn respond(
    out: &mut Multistatus,
    href: &str,
    all: Vec<Prop>,
    request: &Propfind,
    value: &dyn Fn(&Prop) -> Option<String>,
) {
    let asked = match request {
        Propfind::Prop(props) => props.clone(),
        Propfind::AllProp | Propfind::PropName => all,
    };
    if matches!(request, Propfind::PropName) {
        let names: Vec<String> = asked.iter().map(|p| xml::empty(&p.name)).collect();
        out.props(href, &names, &[]);
        return;
    }
    let mut found = Vec::new();
    let mut missing: Vec<&PropName> = Vec::new();
    for prop in &asked {
        match value(prop) {
            Some(v) => found.push(v),
            None => missing.push(&prop.name),
        }
    }
    out.props(href, &found, &missing);
}

/// [`respond`] for a CardDAV resource; `card` answers a card's `address-data`.
fn respond_card(
    out: &mut Multistatus,
    href: &str,
    resource: &Resource<'_>,
    request: &Propfind,
    user: &DavUser,
    card: &dyn Fn(&Prop) -> Option<String>,
) {
    let value = |prop: &Prop| {
        if prop.name.is(CARDDAV, "address-data") { card(prop) } else { props::value(resource, &prop.name, user) }
    };
    // The resource's own list only answers `allprop` and `propname` (not asked per card of a
    // 10,000-card listing otherwise).
    let all = if matches!(request, Propfind::Prop(_)) { Vec::new() } else { props::all(resource) };
    respond(out, href, all, request, &value);
}

/// The vCard version `request`'s cards are written in, when it asks for `address-data` (the
/// version its first `address-data` asks, else the client's).
fn address_data(request: &Propfind, headers: &HeaderMap, user: u64) -> Option<Version> {
    let Propfind::Prop(props) = request else { return None };
    let prop = props.iter().find(|p| p.name.is(CARDDAV, "address-data"))?;
    Some(version(headers, prop.version.as_deref(), user))
}

/// The card `text` of `row` as written, or `None` when it could not be (logged).
fn written(row: &Row<Contact>, text: Result<String, crate::crm::Error>) -> Option<String> {
    match text {
        Ok(text) => Some(text),
        Err(e) => {
            tracing::error!(event = "dav_card_unwritable", component = "dav", contact = row.id, error = %e);
            None
        }
    }
}

/// The response of the card `row` under `href` for `request`, its `address-data` being `text`
/// (reported missing when `None`).
fn respond_with(
    out: &mut Multistatus,
    href: &str,
    row: &Row<Contact>,
    text: Option<&str>,
    request: &Propfind,
    user: &DavUser,
) {
    let card = |_: &Prop| text.map(|t| xml::text("C:address-data", t));
    respond_card(out, href, &Resource::Card { id: row.id, meta: &row.meta }, request, user, &card);
}

/// The responses of `cards` (each a card and the href it is answered under) for `request`, in
/// order, one part each ([`Multistatus::part`]) handed to `emit` (until it answers `false`).
/// When the cards themselves are asked, they are written by `cards::card_texts`, which shares
/// them out across the cores, and each card's response is written on the thread that wrote the
/// card; a card that could not be written is logged and its `address-data` reported missing.
fn card_parts(
    view: &UserView,
    cards: &[(String, &Row<Contact>)],
    request: &Propfind,
    user: &DavUser,
    headers: &HeaderMap,
    emit: &mut dyn FnMut(Multistatus) -> bool,
) {
    let respond = |(href, row): &(String, &Row<Contact>), text: Option<&str>| {
        let mut part = Multistatus::part();
        respond_with(&mut part, href, row, text, request, user);
        part
    };
    let Some(version) = address_data(request, headers, user.id.0) else {
        for card in cards {
            if !emit(respond(card, None)) {
                return;
            }
        }
        return;
    };
    let rows: Vec<&Row<Contact>> = cards.iter().map(|(_, row)| *row).collect();
    let then = |at: usize, text| respond(&cards[at], written(cards[at].1, text).as_deref());
    cards::card_texts(view, &rows, version, &then, emit);
}

/// [`card_parts`] written into `out`, which goes on to `sink` as it fills ([`spill`]); `false`
/// once the client has gone.
#[allow(clippy::too_many_arguments)]
fn card_responses(
    out: &mut Multistatus,
    sink: &mut Sink,
    view: &UserView,
    cards: &[(String, &Row<Contact>)],
    request: &Propfind,
    user: &DavUser,
    headers: &HeaderMap,
) -> bool {
    let mut open = true;
    card_parts(view, cards, request, user, headers, &mut |part| {
        out.append(&part);
        open = spill(out, sink);
        open
    });
    open
}

/// Sends what `out` holds on to `sink` once it is a chunk's worth; `false` once the client has
/// gone.
fn spill(out: &mut Multistatus, sink: &mut Sink) -> bool {
    out.len() < CHUNK || sink.send(out.take(CHUNK + CHUNK / 2).into_bytes())
}

/// Runs `work` on one read view of the user's data, off the async threads, and answers with
/// the multistatus it writes, streamed: `work` writes its responses into a [`Multistatus`]
/// that goes on to the client a chunk at a time as it fills ([`spill`]), and ends by sending
/// the rest ([`Multistatus::finish`]). An answer of thousands of cards is then never whole in
/// memory, and its first bytes are on their way while the rest is written. A failure before
/// the first chunk is the answer (a stale sync token's `403`); one after it ends the stream
/// early, so the client sees a broken answer, never a complete-looking short one, and is logged.
async fn streamed(
    state: &AppState,
    user: &DavUser,
    work: impl FnOnce(&UserView, &mut Sink) -> Result<(), DavError> + Send + 'static,
) -> Result<Response, DavError> {
    let scope = state.engine.user(user.id);
    let producer = move |sink: &mut Sink| scope.view().map_err(DavError::from).and_then(|view| work(&view, sink));
    let late = |e: &DavError| {
        tracing::error!(event = "dav_answer_broken", component = "dav", error = ?e);
        format!("{e:?}")
    };
    match produce(producer, late).await {
        Ok(chunks) => Ok(multistatus(Body::from_stream(chunks))),
        Err(Some(e)) => Err(e),
        Err(None) => Err(DavError::from(crate::crm::Error::internal("the answer's writer stopped"))),
    }
}

/// `cards` answered under the names they are served under.
fn served<'a>(user: &DavUser, rows: impl IntoIterator<Item = &'a Row<Contact>>) -> Vec<(String, &'a Row<Contact>)> {
    rows.into_iter().map(|row| (props::card_href(user, &cards::name_of(&row.body)), row)).collect()
}

/// Whether `request` asks for the cards themselves (`address-data`), which a listing must then
/// read whole; otherwise it reads heads ([`head_response`]).
fn asks_cards(request: &Propfind) -> bool {
    matches!(request, Propfind::Prop(props) if props.iter().any(|p| p.name.is(CARDDAV, "address-data")))
}

/// The response of a card read as its head, for a request that asks no card ([`asks_cards`]).
fn head_response(out: &mut Multistatus, head: &Row<ContactHead>, request: &Propfind, user: &DavUser) {
    let href = props::card_href(user, &cards::head_name(&head.body));
    respond_card(out, &href, &Resource::Card { id: head.id, meta: &head.meta }, request, user, &|_: &Prop| None);
}

async fn propfind(
    state: &AppState,
    user: DavUser,
    target: Target,
    headers: &HeaderMap,
    body: &[u8],
) -> Result<Response, DavError> {
    let request = xml::propfind(body).map_err(|e| DavError::bad_request(e.to_string()))?;
    let depth = depth(headers);
    let headers = headers.clone();
    let engine = state.engine.clone();
    streamed(state, &user.clone(), move |view, sink| {
        let hidden = crate::sync::subscribed_contacts(&engine, user.id.0)?;
        let mut out = Multistatus::new();
        let none = |_: &Prop| None;
        match target {
            Target::Slash => respond_card(&mut out, "/", &Resource::Root, &request, &user, &none),
            Target::Root => {
                respond_card(&mut out, "/carddav/", &Resource::Root, &request, &user, &none);
                if depth > 0 {
                    respond_card(&mut out, &props::principal_href(&user), &Resource::Principal, &request, &user, &none);
                }
            }
            Target::Principal => {
                respond_card(&mut out, &props::principal_href(&user), &Resource::Principal, &request, &user, &none);
                if depth > 0 {
                    let token = sync::current(view)?.to_string();
                    let name =
                        crate::crm::collection::get(view, crate::crm::collection::BOOK_NAME)?.unwrap_or_default();
                    respond_card(
                        &mut out,
                        &props::book_href(&user),
                        &Resource::Book { token: &token, name: &name },
                        &request,
                        &user,
                        &none,
                    );
                }
            }
            Target::Book => {
                let token = sync::current(view)?.to_string();
                let name = crate::crm::collection::get(view, crate::crm::collection::BOOK_NAME)?.unwrap_or_default();
                respond_card(
                    &mut out,
                    &props::book_href(&user),
                    &Resource::Book { token: &token, name: &name },
                    &request,
                    &user,
                    &none,
                );
                if depth > 0 && asks_cards(&request) {
                    let mut rows = view.list::<Contact>()?;
                    rows.retain(|r| !hidden.contains(&r.id));
                    if !card_responses(&mut out, sink, view, &served(&user, &rows), &request, &user, &headers) {
                        return Ok(());
                    }
                } else if depth > 0 {
                    for head in
                        view.list_heads::<Contact, ContactHead>()?.into_iter().filter(|h| !hidden.contains(&h.id))
                    {
                        head_response(&mut out, &head, &request, &user);
                        if !spill(&mut out, sink) {
                            return Ok(());
                        }
                    }
                }
            }
            Target::Card(name) => {
                let row =
                    cards::find(view, &name)?.filter(|r| !hidden.contains(&r.id)).ok_or_else(DavError::not_found)?;
                card_responses(&mut out, sink, view, &served(&user, [&row]), &request, &user, &headers);
            }
        }
        sink.send(out.finish(None).into_bytes());
        Ok(())
    })
    .await
}

async fn get(
    state: &AppState,
    user: DavUser,
    name: String,
    headers: &HeaderMap,
    head: bool,
) -> Result<Response, DavError> {
    let version = version(headers, None, user.id.0);
    let (engine, owner) = (state.engine.clone(), user.id.0);
    let (etag, text) = reading(state, &user, move |view| {
        let hidden = crate::sync::subscribed_contacts(&engine, owner)?;
        let row = cards::find(view, &name)?.filter(|r| !hidden.contains(&r.id)).ok_or_else(DavError::not_found)?;
        Ok((row.etag(), cards::card_text(Some(view), &row, version)?))
    })
    .await?;
    if conditional::not_modified(headers, &etag) {
        return Ok((StatusCode::NOT_MODIFIED, [(ETAG, etag)]).into_response());
    }
    let body = if head { Body::empty() } else { Body::from(text) };
    let mut response = Response::new(body);
    let h = response.headers_mut();
    h.insert(CONTENT_TYPE, HeaderValue::from_static("text/vcard; charset=utf-8"));
    if let Ok(value) = HeaderValue::from_str(&etag) {
        h.insert(ETAG, value);
    }
    Ok(response)
}

/// Sets the book's properties a client may set: `DAV:displayname` (RFC 4918 9.2: all or none;
/// any other property is 403, and the name then 424, unchanged).
async fn proppatch(state: &AppState, user: DavUser, body: &[u8]) -> Result<Response, DavError> {
    let updates = xml::propertyupdate(body).map_err(|e| DavError::bad_request(e.to_string()))?;
    let settable = |u: &xml::PropUpdate| u.name.is(xml::DAV, "displayname");
    let all_settable = updates.iter().all(settable);
    if all_settable && let Some(last) = updates.last() {
        let scope = state.engine.user(user.id);
        crate::crm::collection::set(&scope, crate::crm::collection::BOOK_NAME, last.value.as_deref())
            .await
            .map_err(|e| refused(e, &user))?;
    }
    let mut out = Multistatus::new();
    out.propstat_statuses(
        &props::book_href(&user),
        &updates
            .iter()
            .map(|u| {
                let status = match (settable(u), all_settable) {
                    (true, true) => (200, "OK"),
                    (true, false) => (424, "Failed Dependency"),
                    (false, _) => (403, "Forbidden"),
                };
                (u.name.clone(), status)
            })
            .collect::<Vec<_>>(),
    );
    Ok(multistatus(out.finish(None)))
}

/// The `If-Match` / `If-None-Match: *` of a write.
fn condition(headers: &HeaderMap) -> Result<PutCondition, DavError> {
    let if_match = match headers.get(IF_MATCH) {
        None => None,
        Some(_) => Some(conditional::if_match(headers).map_err(|_| DavError::precondition_failed())?),
    };
    let if_none_match = headers.get(IF_NONE_MATCH).and_then(|v| v.to_str().ok()).is_some_and(|v| v.trim() == "*");
    Ok(PutCondition { if_match, if_none_match })
}

async fn put(
    state: &AppState,
    user: DavUser,
    name: String,
    headers: &HeaderMap,
    body: Bytes,
) -> Result<Response, DavError> {
    let media = headers.get(CONTENT_TYPE).and_then(|v| v.to_str().ok()).unwrap_or("text/vcard").to_ascii_lowercase();
    let media = media.split(';').next().unwrap_or("").trim().to_string();
    if !matches!(media.as_str(), "text/vcard" | "text/x-vcard" | "text/directory" | "") {
        let detail = format!("{media} is not a vCard media type");
        return Err(DavError::condition(StatusCode::FORBIDDEN, "C:supported-address-data", Some(detail)));
    }
    let condition = condition(headers)?;
    remember_version(headers, user.id.0, &body);
    let scope = state.engine.user(user.id);
    let (row, created) = cards::put(&scope, &name, body, condition).await.map_err(|e| refused(e, &user))?;
    let status = if created { StatusCode::CREATED } else { StatusCode::NO_CONTENT };
    Ok((status, [(ETAG, row.etag())]).into_response())
}

/// Why a card was not stored, as CardDAV says it: the UID another card holds (`no-uid-conflict`,
/// naming it), a body or card the contact's rules refuse (`valid-address-data`), else as any
/// DAV error.
fn refused(e: crate::crm::Error, user: &DavUser) -> DavError {
    use crate::crm::Error as E;
    match e {
        E::UidConflict { holder } => DavError::condition(
            StatusCode::CONFLICT,
            "C:no-uid-conflict",
            Some(format!("the UID is in use by {}", props::card_href(user, &holder))),
        ),
        E::Unreadable(reason) => DavError::condition(StatusCode::FORBIDDEN, "C:valid-address-data", Some(reason)),
        E::Invalid { field, reason } => {
            DavError::condition(StatusCode::FORBIDDEN, "C:valid-address-data", Some(format!("{field}: {reason}")))
        }
        E::Engine(mycorrhizal_engine::Error::Invalid(invalid)) => {
            DavError::condition(StatusCode::FORBIDDEN, "C:valid-address-data", Some(invalid.to_string()))
        }
        other => other.into(),
    }
}

async fn delete(state: &AppState, user: DavUser, name: String, headers: &HeaderMap) -> Result<Response, DavError> {
    let pre = match condition(headers)? {
        PutCondition { if_match: Some(pre), .. } => pre,
        _ => mycorrhizal_engine::Precondition::Any,
    };
    cards::delete(&state.engine.user(user.id), &name, pre).await?;
    Ok(StatusCode::NO_CONTENT.into_response())
}

/// A sync that cannot be answered: a stale token is RFC 6578's `valid-sync-token` (403).
pub(super) fn sync_error(e: SyncError) -> DavError {
    match e {
        SyncError::Stale => DavError::condition(StatusCode::FORBIDDEN, "D:valid-sync-token", None),
        SyncError::Engine(e) => e.into(),
    }
}

/// The card name an href of a multiget points at, when it is in this user's book.
fn name_in(href: &str, user: &DavUser) -> Option<String> {
    let path = match href.find("://") {
        Some(i) => &href[href[i + 3..].find('/').map(|j| i + 3 + j)?..],
        None => href,
    };
    match target(path, user)? {
        Target::Card(name) => Some(name),
        _ => None,
    }
}

async fn report(state: &AppState, user: DavUser, headers: &HeaderMap, body: &[u8]) -> Result<Response, DavError> {
    let report = xml::report(body).map_err(|e| DavError::bad_request(e.to_string()))?;
    let headers = headers.clone();
    let engine = state.engine.clone();
    streamed(state, &user.clone(), move |view, sink| {
        let hidden = crate::sync::subscribed_contacts(&engine, user.id.0)?;
        let mut out = Multistatus::new();
        let token = match report {
            Report::AddressbookMultiget { props, hrefs } => {
                let request = Propfind::Prop(props);
                let names: Vec<Option<String>> = hrefs.iter().map(|href| name_in(href, &user)).collect();
                // Looked up, written and answered across the cores, in the order of the
                // request's hrefs; a card found under a name is served under that name.
                let answer = |at: usize, found: Option<cards::Named<'_>>| {
                    let mut part = Multistatus::part();
                    match found.filter(|named| !hidden.contains(&named.row.id)) {
                        Some(named) => {
                            let text = named.card.and_then(|card| written(named.row, card));
                            let href = props::card_href(&user, named.name);
                            respond_with(&mut part, &href, named.row, text.as_deref(), &request, &user);
                        }
                        None => part.status(&hrefs[at], 404, "Not Found"),
                    }
                    part
                };
                let version = address_data(&request, &headers, user.id.0);
                let mut open = true;
                cards::named_cards(view, &names, version, &answer, &mut |part| {
                    out.append(&part);
                    open = spill(&mut out, sink);
                    open
                })?;
                if !open {
                    return Ok(());
                }
                None
            }
            Report::AddressbookQuery { props, filter, limit } => {
                let request = Propfind::Prop(props);
                let all = view.list::<Contact>()?;
                let mut matched: Vec<&Row<Contact>> = Vec::new();
                let mut truncated = false;
                for row in all.iter().filter(|r| !hidden.contains(&r.id)) {
                    if !filter.props.is_empty() {
                        let text = cards::card_text(None, row, Version::V4)?;
                        if !super::query::matches(&filter, &text) {
                            continue;
                        }
                    }
                    if limit.is_some_and(|n| matched.len() >= n) {
                        truncated = true;
                        break;
                    }
                    matched.push(row);
                }
                if !card_responses(&mut out, sink, view, &served(&user, matched), &request, &user, &headers) {
                    return Ok(());
                }
                if truncated {
                    out.status(&props::book_href(&user), 507, "Insufficient Storage");
                }
                None
            }
            Report::SyncCollection { token, props, limit } => {
                let request = Propfind::Prop(props);
                let token = Some(token.as_str());
                let (removed, truncated, next) = if asks_cards(&request) {
                    let page = sync::walk(&sync::Book { hidden: &hidden }, view, token, limit).map_err(sync_error)?;
                    if !card_responses(&mut out, sink, view, &served(&user, &page.changed), &request, &user, &headers) {
                        return Ok(());
                    }
                    (page.removed, page.truncated, page.next)
                } else {
                    let page =
                        sync::walk(&sync::BookHeads { hidden: &hidden }, view, token, limit).map_err(sync_error)?;
                    for head in &page.changed {
                        head_response(&mut out, head, &request, &user);
                        if !spill(&mut out, sink) {
                            return Ok(());
                        }
                    }
                    (page.removed, page.truncated, page.next)
                };
                for name in &removed {
                    out.status(&props::card_href(&user, name), 404, "Not Found");
                    if !spill(&mut out, sink) {
                        return Ok(());
                    }
                }
                if truncated {
                    out.status(&props::book_href(&user), 507, "Insufficient Storage");
                }
                Some(next.to_string())
            }
            Report::CalendarMultiget { .. } | Report::CalendarQuery { .. } | Report::FreeBusy { .. } => {
                return Err(DavError::condition(StatusCode::FORBIDDEN, "D:supported-report", None));
            }
        };
        sink.send(out.finish(token.as_deref()).into_bytes());
        Ok(())
    })
    .await
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hrefs_name_cards_of_the_callers_book_only() {
        let user = DavUser {
            id: mycorrhizal_engine::UserId(7),
            username: "ada".into(),
            carddav: true,
            caldav: false,
            calendar_writable: false,
        };
        assert_eq!(name_in("/carddav/7/contacts/abc.vcf", &user).as_deref(), Some("abc"));
        assert_eq!(name_in("http://h:1/carddav/7/contacts/a%2Bb.vcf", &user).as_deref(), Some("a+b"));
        assert_eq!(name_in("/carddav/8/contacts/abc.vcf", &user), None);
        assert_eq!(name_in("/carddav/7/", &user), None);
    }
}
