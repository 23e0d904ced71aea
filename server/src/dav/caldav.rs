//! The CalDAV methods (RFC 4791): the user's dates (`crm::calendar_events`) as one calendar.
//! OPTIONS, PROPFIND on every resource, GET/HEAD of an event, and the calendar's REPORTs
//! (calendar-multiget, calendar-query with a time-range over expanded recurrences,
//! free-busy-query, sync-collection). Writes are refused with 403 and `D:need-privileges`: the
//! calendar is a view of activities, life events and birthdays, which are edited where they
//! live. With `CALDAV_TWO_WAY_ENABLED`, an activity's event may be changed (PUT) and deleted,
//! and a client's new event (a PUT under any name the calendar does not hold) becomes an
//! activity kept under that name and UID, its iCalendar object served back as written; life
//! events and birthdays stay read-only. Events only: a task or journal is refused.

use axum::body::Body;
use axum::extract::Request;
use axum::http::header::{CONTENT_TYPE, ETAG};
use axum::http::{HeaderMap, HeaderValue, Method, StatusCode};
use axum::response::{IntoResponse, Response};
use jiff::Timestamp;
use mycorrhizal_engine::UserView;

use super::carddav::{depth, multistatus, reading, respond, sync_error};
use super::props::{self, Resource};
use super::xml::{self, CALDAV, CALSERVER, DAV, Multistatus, Prop, PropName, Propfind, Report, TimeRange};
use super::{DavError, DavUser, MAX_BODY};
use super::{query, sync};
use crate::crm::{calendar_events as events, calendar_events::CalendarEvent, calendar_events::Source};
use crate::state::AppState;

const ALLOW: &str = "OPTIONS, GET, HEAD, PROPFIND, REPORT";
const CONTENT: &str = "text/calendar; charset=utf-8; component=VEVENT";
/// The largest event a client may store (it is kept whole with its activity).
const MAX_EVENT: usize = 1024 * 1024;

enum Target {
    Root,
    Home,
    Calendar,
    Event(String),
}

fn target(path: &str, user: &DavUser) -> Option<Target> {
    let rest = path.strip_prefix("/caldav")?;
    let parts = props::decoded_segments(rest);
    let parts: Vec<&str> = parts.iter().map(String::as_str).collect();
    let own = |id: &str| id == user.id.0.to_string();
    match parts.as_slice() {
        [] => Some(Target::Root),
        [id] if own(id) => Some(Target::Home),
        [id, "calendar"] if own(id) => Some(Target::Calendar),
        [id, "calendar", name] if own(id) => Some(Target::Event(name.to_string())),
        _ => None,
    }
}

fn calendar_href(user: &DavUser) -> String {
    format!("/caldav/{}/calendar/", user.id.0)
}

fn event_href(user: &DavUser, event: &CalendarEvent) -> String {
    format!("/caldav/{}/calendar/{}", user.id.0, props::segment(&event.name))
}

pub fn options() -> Response {
    (StatusCode::OK, [("DAV", "1, 3, calendar-access"), ("Allow", ALLOW)]).into_response()
}

pub async fn handle(state: AppState, user: DavUser, request: Request) -> Result<Response, DavError> {
    let (parts, body) = request.into_parts();
    let target = target(parts.uri.path(), &user).ok_or_else(DavError::not_found)?;
    let body = axum::body::to_bytes(body, MAX_BODY).await.map_err(|_| DavError::too_large())?;
    match (parts.method.as_str(), target) {
        ("OPTIONS", _) => Ok(options()),
        ("PROPFIND", target) => propfind(&state, user, target, &parts.headers, &body).await,
        ("REPORT", Target::Calendar) => report(&state, user, &body).await,
        ("GET" | "HEAD", Target::Event(name)) => {
            get(&state, user, name, &parts.headers, parts.method == Method::HEAD).await
        }
        ("PUT" | "DELETE", Target::Event(name)) if state.config.features.caldav_two_way_enabled => {
            let found = {
                let name = name.clone();
                reading(&state, &user, move |view| Ok(events::find(view, &name)?.map(|e| e.source))).await?
            };
            match (found, Source::parse(&name)) {
                (Some(Source::Activity(id)), _) if parts.method == Method::PUT => {
                    put(&state, user, id, &parts.headers, &body).await
                }
                (Some(Source::Activity(id)), _) => delete(&state, user, id, &parts.headers).await,
                (Some(_), _) | (None, Some(_)) => Err(read_only()),
                (None, None) if parts.method == Method::PUT => create(&state, user, &name, &parts.headers, &body).await,
                (None, None) => Err(DavError::not_found()),
            }
        }
        ("PROPPATCH", Target::Calendar) => proppatch(&state, user, &body).await,
        ("PUT" | "DELETE" | "PROPPATCH" | "MKCOL" | "MKCALENDAR" | "MOVE" | "COPY", _) => Err(read_only()),
        _ => Err(DavError::method_not_allowed()),
    }
}

/// PROPPATCH of the calendar: its display name and colour are set, all or nothing (RFC 4918
/// 9.2: any other property is 403, and then the settable ones are 424 and nothing is set).
async fn proppatch(state: &AppState, user: DavUser, body: &[u8]) -> Result<Response, DavError> {
    use crate::crm::collection::{CALENDAR_COLOR, CALENDAR_NAME, Setting};
    let updates = xml::propertyupdate(body).map_err(|e| DavError::bad_request(e.to_string()))?;
    let setting = |u: &xml::PropUpdate| -> Option<Setting> {
        match (u.name.ns.as_str(), u.name.name.as_str()) {
            (DAV, "displayname") => Some(CALENDAR_NAME),
            (APPLE_ICAL, "calendar-color") => Some(CALENDAR_COLOR),
            _ => None,
        }
    };
    let all_settable = updates.iter().all(|u| setting(u).is_some());
    if all_settable {
        let scope = state.engine.user(user.id);
        for update in &updates {
            if let Some(s) = setting(update) {
                crate::crm::collection::set(&scope, s, update.value.as_deref()).await.map_err(|e| refused(e, &user))?;
            }
        }
    }
    let mut out = Multistatus::new();
    let statuses: Vec<_> = updates
        .iter()
        .map(|u| {
            let status = match (setting(u).is_some(), all_settable) {
                (true, true) => (200, "OK"),
                (true, false) => (424, "Failed Dependency"),
                (false, _) => (403, "Forbidden"),
            };
            (u.name.clone(), status)
        })
        .collect();
    out.propstat_statuses(&calendar_href(&user), &statuses);
    Ok(multistatus(out.finish(None)))
}

/// A write this calendar does not take: 403 `need-privileges`.
fn read_only() -> DavError {
    DavError::condition(
        StatusCode::FORBIDDEN,
        "D:need-privileges",
        Some("read-only: only an activity's event can be edited, and only with CALDAV_TWO_WAY_ENABLED".into()),
    )
}

/// The `If-Match` of a write to an existing event (`If-None-Match: *` cannot hold: it exists).
fn precondition(headers: &HeaderMap) -> Result<mycorrhizal_engine::Precondition, DavError> {
    if headers.get(axum::http::header::IF_NONE_MATCH).is_some() {
        return Err(DavError::precondition_failed());
    }
    if headers.get(axum::http::header::IF_MATCH).is_none() {
        return Ok(mycorrhizal_engine::Precondition::Any);
    }
    crate::http::conditional::if_match(headers).map_err(|_| DavError::precondition_failed())
}

fn invalid(reason: Option<String>) -> DavError {
    DavError::condition(StatusCode::FORBIDDEN, "CAL:valid-calendar-data", reason)
}

/// Why an event was not stored, as CalDAV says it: the UID another event holds
/// (`no-uid-conflict`, naming it), an event the activity's rules refuse (`valid-calendar-data`),
/// else as any DAV error.
fn refused(e: crate::crm::Error, user: &DavUser) -> DavError {
    use crate::crm::Error as E;
    match e {
        E::UidConflict { holder } => DavError::condition(
            StatusCode::CONFLICT,
            "CAL:no-uid-conflict",
            Some(format!("the UID is in use by {}{holder}", calendar_href(user))),
        ),
        E::Invalid { field, reason } => invalid(Some(format!("{field}: {reason}"))),
        other => other.into(),
    }
}

/// The event of a PUT body and the body as text, kept as the client wrote it
/// (`valid-calendar-data` when there is none, or it is not UTF-8).
fn incoming(body: &[u8]) -> Result<(mycorrhizal_codecs::ical::Incoming, String), DavError> {
    if body.len() > MAX_EVENT {
        return Err(DavError::resource_too_large("CAL:max-resource-size"));
    }
    let text = std::str::from_utf8(body).map_err(|_| invalid(Some("the body is not UTF-8".into())))?;
    let incoming = mycorrhizal_codecs::ical::read_event(text).map_err(|reason| invalid(Some(reason)))?;
    Ok((incoming, text.to_string()))
}

/// Two-way CalDAV: a client's new event (a name the calendar does not hold) becomes an activity,
/// served back under that name with the client's UID. `If-Match` cannot hold (nothing is there).
async fn create(
    state: &AppState,
    user: DavUser,
    name: &str,
    headers: &HeaderMap,
    body: &[u8],
) -> Result<Response, DavError> {
    if headers.get(axum::http::header::IF_MATCH).is_some() {
        return Err(DavError::precondition_failed());
    }
    if !events::new_name_allowed(name) {
        return Err(DavError::condition(
            StatusCode::FORBIDDEN,
            "D:need-privileges",
            Some(
                "a new event's name is 1 to 255 bytes, not . or .., and not of the server's own activity-<id>.ics form"
                    .into(),
            ),
        ));
    }
    let (incoming, text) = incoming(body)?;
    let row = events::create_activity(&state.engine.user(user.id), name, incoming, text)
        .await
        .map_err(|e| refused(e, &user))?;
    let etag = format!("\"a-{}-{}\"", row.id, row.meta.revision);
    Ok((StatusCode::CREATED, [(ETAG, etag)]).into_response())
}

/// Two-way CalDAV: a client's edit of an activity's event changes the activity.
async fn put(state: &AppState, user: DavUser, id: u64, headers: &HeaderMap, body: &[u8]) -> Result<Response, DavError> {
    let pre = precondition(headers)?;
    let (incoming, text) = incoming(body)?;
    let row = events::edit_activity(&state.engine.user(user.id), id, pre, incoming, text)
        .await
        .map_err(|e| refused(e, &user))?;
    let etag = format!("\"a-{}-{}\"", row.id, row.meta.revision);
    Ok((StatusCode::NO_CONTENT, [(ETAG, etag)]).into_response())
}

/// Two-way CalDAV: deleting an activity's event deletes the activity.
async fn delete(state: &AppState, user: DavUser, id: u64, headers: &HeaderMap) -> Result<Response, DavError> {
    let pre = precondition(headers)?;
    crate::crm::activity::ops::delete(&state.engine.user(user.id), id, pre).await?;
    Ok(StatusCode::NO_CONTENT.into_response())
}

fn all(names: &[(&str, &str)]) -> Vec<Prop> {
    names.iter().map(|(ns, name)| Prop { name: PropName::new(ns, name), version: None, expand: None }).collect()
}

/// Read-only events; the calendar's own name and colour can still be set (PROPPATCH).
const READ_ONLY: &str = "<D:current-user-privilege-set><D:privilege><D:read/></D:privilege><D:privilege><D:write-properties/></D:privilege><D:privilege><D:read-current-user-privilege-set/></D:privilege></D:current-user-privilege-set>";

/// Two-way: events may be added (as activities), and an activity's changed and removed.
const WRITE_CONTENT: &str = "<D:current-user-privilege-set><D:privilege><D:read/></D:privilege><D:privilege><D:write-properties/></D:privilege><D:privilege><D:write-content/></D:privilege><D:privilege><D:bind/></D:privilege><D:privilege><D:unbind/></D:privilege><D:privilege><D:read-current-user-privilege-set/></D:privilege></D:current-user-privilege-set>";

/// Apple's calendar properties (`calendar-color`).
const APPLE_ICAL: &str = "http://apple.com/ns/ical/";

/// The calendar's own properties its owner set ([`crate::crm::collection`]).
struct Named {
    name: String,
    color: Option<String>,
}

/// A property of the calendar collection.
fn calendar_value(prop: &PropName, token: &str, user: &DavUser, named: &Named) -> Option<String> {
    match (prop.ns.as_str(), prop.name.as_str()) {
        (DAV, "resourcetype") => Some("<D:resourcetype><D:collection/><CAL:calendar/></D:resourcetype>".into()),
        (DAV, "displayname") => Some(xml::text("D:displayname", &named.name)),
        (APPLE_ICAL, "calendar-color") => named.color.as_ref().map(|c| {
            format!("<X:calendar-color xmlns:X=\"{APPLE_ICAL}\">{}</X:calendar-color>", quick_xml::escape::escape(c.as_str()))
        }),
        (CALDAV, "calendar-description") => {
            Some(xml::text("CAL:calendar-description", "Activities, life events and birthdays"))
        }
        (CALDAV, "supported-calendar-component-set") => {
            Some("<CAL:supported-calendar-component-set><CAL:comp name=\"VEVENT\"/></CAL:supported-calendar-component-set>".into())
        }
        (DAV, "sync-token") => Some(xml::text("D:sync-token", token)),
        (CALSERVER, "getctag") => Some(xml::text("CS:getctag", token)),
        (DAV, "current-user-privilege-set") if user.calendar_writable => Some(WRITE_CONTENT.into()),
        (DAV, "current-user-privilege-set") => Some(READ_ONLY.into()),
        (DAV, "supported-report-set") => Some("<D:supported-report-set><D:supported-report><D:report><CAL:calendar-multiget/></D:report></D:supported-report><D:supported-report><D:report><CAL:calendar-query/></D:report></D:supported-report><D:supported-report><D:report><CAL:free-busy-query/></D:report></D:supported-report><D:supported-report><D:report><D:sync-collection/></D:report></D:supported-report></D:supported-report-set>".into()),
        (DAV, "owner" | "current-user-principal" | "principal-URL") => props::value(&Resource::Root, prop, user),
        _ => None,
    }
}

/// A property of one event; `calendar-data` is the event's iCalendar text.
fn event_value(prop: &Prop, event: &CalendarEvent) -> Option<String> {
    match (prop.name.ns.as_str(), prop.name.name.as_str()) {
        (DAV, "resourcetype") => Some("<D:resourcetype/>".into()),
        (DAV, "getetag") => Some(xml::text("D:getetag", &event.etag)),
        (DAV, "getcontenttype") => Some(xml::text("D:getcontenttype", CONTENT)),
        (CALDAV, "calendar-data") => match prop.expand.as_ref().map(|r| range(Some(r.clone()))) {
            // RFC 4791 9.6.5: both bounds are required; a request without them gets the object.
            Some(Ok((Some(start), Some(end)))) => Some(xml::text(
                "CAL:calendar-data",
                &mycorrhizal_codecs::ical::expanded(&event.text(), start.as_second(), end.as_second()),
            )),
            _ => Some(xml::text("CAL:calendar-data", &event.text())),
        },
        _ => None,
    }
}

fn respond_event(out: &mut Multistatus, user: &DavUser, event: &CalendarEvent, request: &Propfind) {
    let names = all(&[(DAV, "resourcetype"), (DAV, "getetag"), (DAV, "getcontenttype")]);
    respond(out, &event_href(user, event), names, request, &|p| event_value(p, event));
}

fn respond_calendar(
    out: &mut Multistatus,
    user: &DavUser,
    view: &UserView,
    request: &Propfind,
) -> Result<(), DavError> {
    let token = sync::current(view)?.to_string();
    use crate::crm::collection::{CALENDAR_COLOR, CALENDAR_NAME, get};
    let named = Named { name: get(view, CALENDAR_NAME)?.unwrap_or_default(), color: get(view, CALENDAR_COLOR)? };
    let names = all(&[
        (DAV, "resourcetype"),
        (DAV, "displayname"),
        (DAV, "sync-token"),
        (CALSERVER, "getctag"),
        (CALDAV, "supported-calendar-component-set"),
        (APPLE_ICAL, "calendar-color"),
    ]);
    respond(out, &calendar_href(user), names, request, &|p| calendar_value(&p.name, &token, user, &named));
    Ok(())
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
    let body = reading(state, &user.clone(), move |view| {
        let mut out = Multistatus::new();
        let home = props::calendar_home_href(&user);
        let principal_names =
            all(&[(DAV, "resourcetype"), (DAV, "current-user-principal"), (CALDAV, "calendar-home-set")]);
        let principal_value = |p: &Prop| match (p.name.ns.as_str(), p.name.name.as_str()) {
            (DAV, "resourcetype") => Some("<D:resourcetype><D:collection/><D:principal/></D:resourcetype>".to_string()),
            _ => props::value(&Resource::Principal, &p.name, &user),
        };
        match target {
            Target::Root => {
                let value = |p: &Prop| props::value(&Resource::Root, &p.name, &user);
                respond(
                    &mut out,
                    "/caldav/",
                    all(&[(DAV, "resourcetype"), (DAV, "current-user-principal")]),
                    &request,
                    &value,
                );
                if depth > 0 {
                    respond(&mut out, &home, principal_names.clone(), &request, &principal_value);
                }
            }
            Target::Home => {
                respond(&mut out, &home, principal_names, &request, &principal_value);
                if depth > 0 {
                    respond_calendar(&mut out, &user, view, &request)?;
                }
            }
            Target::Calendar => {
                respond_calendar(&mut out, &user, view, &request)?;
                if depth > 0 {
                    for event in events::all(view)? {
                        respond_event(&mut out, &user, &event, &request);
                    }
                }
            }
            Target::Event(name) => {
                let event = events::find(view, &name)?;
                respond_event(&mut out, &user, &event.ok_or_else(DavError::not_found)?, &request);
            }
        }
        Ok(out.finish(None))
    })
    .await?;
    Ok(multistatus(body))
}

async fn get(
    state: &AppState,
    user: DavUser,
    name: String,
    headers: &HeaderMap,
    head: bool,
) -> Result<Response, DavError> {
    let event = reading(state, &user, move |view| events::find(view, &name)?.ok_or_else(DavError::not_found)).await?;
    if crate::http::conditional::not_modified(headers, &event.etag) {
        return Ok((StatusCode::NOT_MODIFIED, [(ETAG, event.etag)]).into_response());
    }
    let mut response = Response::new(if head { Body::empty() } else { Body::from(event.text()) });
    response.headers_mut().insert(CONTENT_TYPE, HeaderValue::from_static(CONTENT));
    if let Ok(value) = HeaderValue::from_str(&event.etag) {
        response.headers_mut().insert(ETAG, value);
    }
    Ok(response)
}

/// `20260101T000000Z` as an instant.
fn instant(text: &str) -> Result<Timestamp, DavError> {
    let iso = format!(
        "{}-{}-{}T{}:{}:{}Z",
        &text[0..4],
        &text[4..6],
        &text[6..8],
        &text[9..11],
        &text[11..13],
        &text[13..15]
    );
    iso.parse().map_err(|_| DavError::bad_request(format!("time-range value {text:?} is not a UTC date-time")))
}

fn range(range: Option<TimeRange>) -> Result<(Option<Timestamp>, Option<Timestamp>), DavError> {
    let Some(range) = range else { return Ok((None, None)) };
    Ok((range.start.as_deref().map(instant).transpose()?, range.end.as_deref().map(instant).transpose()?))
}

/// The event name an href of a multiget points at, when it is in this user's calendar.
fn name_in(href: &str, user: &DavUser) -> Option<String> {
    let path = match href.find("://") {
        Some(i) => &href[href[i + 3..].find('/').map(|j| i + 3 + j)?..],
        None => href,
    };
    match target(path, user)? {
        Target::Event(name) => Some(name),
        _ => None,
    }
}

async fn report(state: &AppState, user: DavUser, body: &[u8]) -> Result<Response, DavError> {
    let report = xml::report(body).map_err(|e| DavError::bad_request(e.to_string()))?;
    let body = reading(state, &user.clone(), move |view| {
        let mut out = Multistatus::new();
        let token = match report {
            Report::CalendarMultiget { props, hrefs } => {
                let request = Propfind::Prop(props);
                for href in hrefs {
                    match name_in(&href, &user).map(|name| events::find(view, &name)).transpose()?.flatten() {
                        Some(event) => respond_event(&mut out, &user, &event, &request),
                        None => out.status(&href, 404, "Not Found"),
                    }
                }
                None
            }
            Report::CalendarQuery { props, filter } => {
                let (start, end) = range(filter.range.clone())?;
                let alarm = filter.alarm.clone().map(|a| range(Some(a))).transpose()?;
                let request = Propfind::Prop(props);
                let all = if filter.events { events::all(view)? } else { Vec::new() };
                for event in all.iter().filter(|e| e.overlaps(start, end)) {
                    if query::event_matches(&event.text(), &filter.props, alarm) {
                        respond_event(&mut out, &user, event, &request);
                    }
                }
                None
            }
            Report::FreeBusy { range: time } => {
                let (Some(start), end) = range(Some(time))? else {
                    return Err(DavError::bad_request("a free-busy-query's time-range needs a start"));
                };
                let (start, end) = (start.as_second(), end.map_or(start.as_second() + 366 * 86_400, |e| e.as_second()));
                let busy = events::all(view)?.iter().flat_map(|e| e.busy(start, end)).collect();
                let text = mycorrhizal_codecs::ical::free_busy(start, end, Timestamp::now().as_second(), busy);
                return Ok(Answer::Calendar(text));
            }
            Report::SyncCollection { token, props, limit } => {
                let page = sync::walk(&sync::Calendar, view, Some(token.as_str()), limit).map_err(sync_error)?;
                let request = Propfind::Prop(props);
                for event in &page.changed {
                    respond_event(&mut out, &user, event, &request);
                }
                for name in &page.removed {
                    out.status(&format!("{}{}", calendar_href(&user), props::segment(name)), 404, "Not Found");
                }
                if page.truncated {
                    out.status(&calendar_href(&user), 507, "Insufficient Storage");
                }
                Some(page.next.to_string())
            }
            Report::AddressbookMultiget { .. } | Report::AddressbookQuery { .. } => {
                return Err(DavError::condition(StatusCode::FORBIDDEN, "D:supported-report", None));
            }
        };
        Ok(Answer::Multistatus(out.finish(token.as_deref())))
    })
    .await?;
    Ok(match body {
        Answer::Multistatus(body) => multistatus(body),
        Answer::Calendar(text) => {
            let mut response = Response::new(Body::from(text));
            response.headers_mut().insert(CONTENT_TYPE, HeaderValue::from_static("text/calendar; charset=utf-8"));
            response
        }
    })
}

/// What a REPORT answers: a multistatus, or (a free-busy query) a calendar object.
enum Answer {
    Multistatus(String),
    Calendar(String),
}
