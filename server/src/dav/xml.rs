//! DAV request bodies in, multistatus out. A body is read strictly with quick-xml into a small
//! namespaced tree (unbound prefixes, mismatched or unclosed tags, a DOCTYPE, unknown entities,
//! text outside the root, more than [`MAX_DEPTH`] levels or [`MAX_ELEMENTS`] elements are all
//! [`XmlError`], which the front door answers 400), then into the typed requests
//! ([`Propfind`], [`Report`]); nothing else reads XML. The writer side builds a
//! `D:multistatus` with fixed prefixes for the namespaces we answer in.

use std::fmt::Write as _;

use quick_xml::escape::escape;
use quick_xml::events::Event;
use quick_xml::name::ResolveResult;
use quick_xml::reader::NsReader;

pub const DAV: &str = "DAV:";
pub const CARDDAV: &str = "urn:ietf:params:xml:ns:carddav";
pub const CALDAV: &str = "urn:ietf:params:xml:ns:caldav";
pub const CALSERVER: &str = "http://calendarserver.org/ns/";

/// Deepest nesting read (a calendar-query filter is about seven levels).
pub const MAX_DEPTH: usize = 32;
/// Most elements read from one body (a multiget of 10,000 hrefs stays well inside).
pub const MAX_ELEMENTS: usize = 200_000;

/// Why a body is not a request we read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct XmlError(pub String);

fn err(text: impl Into<String>) -> XmlError {
    XmlError(text.into())
}

/// One element: its namespace and local name, its attributes (by local name) and children, and
/// its text (character data joined).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Element {
    pub ns: String,
    pub name: String,
    pub attrs: Vec<(String, String)>,
    pub children: Vec<Element>,
    pub text: String,
}

impl Element {
    pub fn is(&self, ns: &str, name: &str) -> bool {
        self.ns == ns && self.name == name
    }

    pub fn child(&self, ns: &str, name: &str) -> Option<&Element> {
        self.children.iter().find(|c| c.is(ns, name))
    }

    pub fn attr(&self, name: &str) -> Option<&str> {
        self.attrs.iter().find(|(n, _)| n == name).map(|(_, v)| v.as_str())
    }
}

/// Reads a whole body into its root element; `None` for an empty (or blank) body.
pub fn parse(bytes: &[u8]) -> Result<Option<Element>, XmlError> {
    let text = std::str::from_utf8(bytes).map_err(|_| err("the body is not UTF-8"))?;
    if text.trim().is_empty() {
        return Ok(None);
    }
    let mut reader = NsReader::from_str(text);
    reader.config_mut().check_end_names = true;
    let mut stack: Vec<Element> = Vec::new();
    let mut root: Option<Element> = None;
    let mut count = 0usize;
    loop {
        let (resolved, event) = reader.read_resolved_event().map_err(|e| err(format!("malformed XML: {e}")))?;
        let ns = match resolved {
            ResolveResult::Bound(ns) => {
                std::str::from_utf8(ns.into_inner()).map_err(|_| err("bad namespace"))?.to_string()
            }
            ResolveResult::Unbound => String::new(),
            ResolveResult::Unknown(prefix) => {
                return Err(err(format!("unbound namespace prefix {:?}", String::from_utf8_lossy(&prefix))));
            }
        };
        match event {
            Event::Start(ref start) | Event::Empty(ref start) => {
                count += 1;
                if count > MAX_ELEMENTS || stack.len() >= MAX_DEPTH {
                    return Err(err("the body is too large or too deeply nested"));
                }
                if root.is_some() {
                    return Err(err("more than one root element"));
                }
                let name = std::str::from_utf8(start.local_name().into_inner())
                    .map_err(|_| err("bad element name"))?
                    .to_string();
                let mut attrs = Vec::new();
                for attr in start.attributes() {
                    let attr = attr.map_err(|e| err(format!("malformed attribute: {e}")))?;
                    let key = std::str::from_utf8(attr.key.local_name().into_inner())
                        .map_err(|_| err("bad attribute name"))?
                        .to_string();
                    if attr.key.as_ref().starts_with(b"xmlns") {
                        continue;
                    }
                    let value = attr.unescape_value().map_err(|e| err(format!("malformed attribute: {e}")))?;
                    attrs.push((key, value.into_owned()));
                }
                stack.push(Element { ns, name, attrs, children: Vec::new(), text: String::new() });
                if matches!(event, Event::Empty(_)) {
                    close(&mut stack, &mut root)?;
                }
            }
            Event::End(_) => close(&mut stack, &mut root)?,
            Event::Text(t) => {
                let text = t.decode().map_err(|e| err(format!("malformed text: {e}")))?;
                push_text(&mut stack, &text)?;
            }
            Event::CData(t) => {
                let text = t.decode().map_err(|e| err(format!("malformed text: {e}")))?;
                push_text(&mut stack, &text)?;
            }
            Event::GeneralRef(r) => {
                let text = match r.resolve_char_ref().map_err(|e| err(format!("bad reference: {e}")))? {
                    Some(c) => c.to_string(),
                    None => match &*r.decode().map_err(|e| err(format!("bad reference: {e}")))? {
                        "lt" => "<".into(),
                        "gt" => ">".into(),
                        "amp" => "&".into(),
                        "apos" => "'".into(),
                        "quot" => "\"".into(),
                        other => return Err(err(format!("unknown entity &{other};"))),
                    },
                };
                push_text(&mut stack, &text)?;
            }
            Event::DocType(_) => return Err(err("a DOCTYPE is not accepted")),
            Event::Decl(_) | Event::PI(_) | Event::Comment(_) => {}
            Event::Eof => break,
        }
    }
    if !stack.is_empty() {
        return Err(err("unclosed element"));
    }
    root.map(Some).ok_or_else(|| err("no root element"))
}

fn close(stack: &mut Vec<Element>, root: &mut Option<Element>) -> Result<(), XmlError> {
    let done = stack.pop().ok_or_else(|| err("unexpected end tag"))?;
    match stack.last_mut() {
        Some(parent) => parent.children.push(done),
        None => *root = Some(done),
    }
    Ok(())
}

fn push_text(stack: &mut [Element], text: &str) -> Result<(), XmlError> {
    match stack.last_mut() {
        Some(open) => {
            open.text.push_str(text);
            Ok(())
        }
        None if text.trim().is_empty() => Ok(()),
        None => Err(err("text outside the root element")),
    }
}

/// A property name: namespace and local name.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct PropName {
    pub ns: String,
    pub name: String,
}

impl PropName {
    pub fn new(ns: &str, name: &str) -> PropName {
        PropName { ns: ns.to_string(), name: name.to_string() }
    }

    pub fn is(&self, ns: &str, name: &str) -> bool {
        self.ns == ns && self.name == name
    }
}

/// A requested property, with what an `address-data` or `calendar-data` element asks for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Prop {
    pub name: PropName,
    /// `version` of an `address-data` request (`3.0`, `4.0`).
    pub version: Option<String>,
    /// The `expand` of a `calendar-data` request: recurrences written out as their occurrences
    /// in this range.
    pub expand: Option<TimeRange>,
}

/// What a PROPFIND asks for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Propfind {
    AllProp,
    PropName,
    Prop(Vec<Prop>),
}

/// A text-match of an addressbook-query filter.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TextMatch {
    pub text: String,
    /// `equals`, `contains` (default), `starts-with`, `ends-with`.
    pub match_type: String,
    /// `i;unicode-casemap` (default) or `i;octet` (case-sensitive).
    pub octet: bool,
    pub negate: bool,
}

/// A prop-filter of an addressbook-query.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PropFilter {
    /// The vCard property name, upper case.
    pub name: String,
    pub all: bool,
    pub is_not_defined: bool,
    pub matches: Vec<TextMatch>,
}

/// An addressbook-query filter: prop-filters joined by `anyof` (default) or `allof`.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct CardFilter {
    pub all: bool,
    pub props: Vec<PropFilter>,
}

/// A calendar-query time range (UTC instants as iCalendar text `YYYYMMDDTHHMMSSZ`).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct TimeRange {
    pub start: Option<String>,
    pub end: Option<String>,
}

/// A REPORT body.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Report {
    AddressbookMultiget {
        props: Vec<Prop>,
        hrefs: Vec<String>,
    },
    AddressbookQuery {
        props: Vec<Prop>,
        filter: CardFilter,
        limit: Option<usize>,
    },
    CalendarMultiget {
        props: Vec<Prop>,
        hrefs: Vec<String>,
    },
    CalendarQuery {
        props: Vec<Prop>,
        filter: EventFilter,
    },
    /// RFC 4791 7.10: the busy time in `range`.
    FreeBusy {
        range: TimeRange,
    },
    SyncCollection {
        token: String,
        props: Vec<Prop>,
        limit: Option<usize>,
    },
}

fn props_of(prop: Option<&Element>) -> Vec<Prop> {
    prop.map(|p| {
        p.children
            .iter()
            .map(|c| Prop {
                name: PropName::new(&c.ns, &c.name),
                version: c.attr("version").map(str::to_string),
                expand: c.child(CALDAV, "expand").and_then(|e| range_of(e).ok()),
            })
            .collect()
    })
    .unwrap_or_default()
}

/// Reads a PROPFIND body; an empty body is `allprop` (RFC 4918 9.1).
pub fn propfind(bytes: &[u8]) -> Result<Propfind, XmlError> {
    let Some(root) = parse(bytes)? else { return Ok(Propfind::AllProp) };
    if !root.is(DAV, "propfind") {
        return Err(err("the body is not a DAV:propfind"));
    }
    if let Some(prop) = root.child(DAV, "prop") {
        return Ok(Propfind::Prop(props_of(Some(prop))));
    }
    if root.child(DAV, "propname").is_some() {
        return Ok(Propfind::PropName);
    }
    if root.child(DAV, "allprop").is_some() {
        return Ok(Propfind::AllProp);
    }
    Err(err("a propfind names prop, allprop or propname"))
}

fn nresults(limit: Option<&Element>) -> Result<Option<usize>, XmlError> {
    let Some(limit) = limit else { return Ok(None) };
    let n = limit.children.iter().find(|c| c.name == "nresults").ok_or_else(|| err("limit without nresults"))?;
    n.text.trim().parse::<usize>().map(Some).map_err(|_| err("nresults is not a number"))
}

fn hrefs(root: &Element) -> Vec<String> {
    root.children.iter().filter(|c| c.is(DAV, "href")).map(|c| c.text.trim().to_string()).collect()
}

/// One change of a PROPPATCH: a property set to a text, or removed.
#[derive(Debug, Clone, PartialEq)]
pub struct PropUpdate {
    pub name: PropName,
    /// `None`: removed.
    pub value: Option<String>,
}

/// Reads a PROPPATCH body (`DAV:propertyupdate` of `set` and `remove`, in order).
pub fn propertyupdate(bytes: &[u8]) -> Result<Vec<PropUpdate>, XmlError> {
    let root = parse(bytes)?.ok_or_else(|| err("a PROPPATCH needs a body"))?;
    if !root.is(DAV, "propertyupdate") {
        return Err(err("the body is not a DAV:propertyupdate"));
    }
    let mut out = Vec::new();
    for action in &root.children {
        let set = if action.is(DAV, "set") {
            true
        } else if action.is(DAV, "remove") {
            false
        } else {
            return Err(err("a propertyupdate holds set and remove"));
        };
        for prop in action.children.iter().filter(|c| c.is(DAV, "prop")) {
            for p in &prop.children {
                let value = set.then(|| p.text.clone());
                out.push(PropUpdate { name: PropName::new(&p.ns, &p.name), value });
            }
        }
    }
    Ok(out)
}

/// Reads a REPORT body.
pub fn report(bytes: &[u8]) -> Result<Report, XmlError> {
    let root = parse(bytes)?.ok_or_else(|| err("a REPORT needs a body"))?;
    let props = props_of(root.child(DAV, "prop"));
    match (root.ns.as_str(), root.name.as_str()) {
        (CARDDAV, "addressbook-multiget") => Ok(Report::AddressbookMultiget { props, hrefs: hrefs(&root) }),
        (CALDAV, "calendar-multiget") => Ok(Report::CalendarMultiget { props, hrefs: hrefs(&root) }),
        (CARDDAV, "addressbook-query") => Ok(Report::AddressbookQuery {
            props,
            filter: card_filter(root.child(CARDDAV, "filter"))?,
            limit: nresults(root.child(CARDDAV, "limit"))?,
        }),
        (CALDAV, "calendar-query") => Ok(Report::CalendarQuery { props, filter: event_filter(&root)? }),
        (CALDAV, "free-busy-query") => {
            let range = root.child(CALDAV, "time-range").ok_or_else(|| err("a free-busy-query needs a time-range"))?;
            let range = range_of(range)?;
            if range.start.is_none() {
                return Err(err("a free-busy-query's time-range needs a start"));
            }
            Ok(Report::FreeBusy { range })
        }
        (DAV, "sync-collection") => {
            let token = root.child(DAV, "sync-token").map(|t| t.text.trim().to_string()).unwrap_or_default();
            if let Some(level) = root.child(DAV, "sync-level")
                && level.text.trim() != "1"
            {
                return Err(err("sync-level must be 1"));
            }
            Ok(Report::SyncCollection { token, props, limit: nresults(root.child(DAV, "limit"))? })
        }
        (ns, name) => Err(err(format!("unsupported report {{{ns}}}{name}"))),
    }
}

fn card_filter(filter: Option<&Element>) -> Result<CardFilter, XmlError> {
    let Some(filter) = filter else { return Ok(CardFilter::default()) };
    let mut out = CardFilter { all: filter.attr("test") == Some("allof"), props: Vec::new() };
    for pf in filter.children.iter().filter(|c| c.is(CARDDAV, "prop-filter")) {
        let name = pf.attr("name").ok_or_else(|| err("prop-filter without name"))?.to_ascii_uppercase();
        let mut matches = Vec::new();
        for tm in pf.children.iter().filter(|c| c.is(CARDDAV, "text-match")) {
            let match_type = tm.attr("match-type").unwrap_or("contains").to_string();
            if !matches!(match_type.as_str(), "equals" | "contains" | "starts-with" | "ends-with") {
                return Err(err(format!("unsupported match-type {match_type}")));
            }
            matches.push(TextMatch {
                text: tm.text.clone(),
                match_type,
                octet: tm.attr("collation") == Some("i;octet"),
                negate: tm.attr("negate-condition") == Some("yes"),
            });
        }
        out.props.push(PropFilter {
            name,
            all: pf.attr("test") == Some("allof"),
            is_not_defined: pf.child(CARDDAV, "is-not-defined").is_some(),
            matches,
        });
    }
    Ok(out)
}

/// What a calendar-query's filter asks of an event (RFC 4791 9.7).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct EventFilter {
    /// Whether it asks for events at all (a query for tasks or journals finds none here).
    pub events: bool,
    /// The event happens in it (recurrences expanded).
    pub range: Option<TimeRange>,
    /// One of its alarms goes off in it.
    pub alarm: Option<TimeRange>,
    /// Each must hold of one of the object's `VEVENT`s.
    pub props: Vec<EventPropFilter>,
}

/// A `prop-filter` of the event: the property is there (and its value matches `text`), or
/// (`defined` false) it is not.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EventPropFilter {
    /// Upper case.
    pub name: String,
    pub defined: bool,
    /// A substring of the value (`match_type` is always `contains`).
    pub text: Option<TextMatch>,
}

/// The filter of a calendar-query: `VCALENDAR`, then at most one component filter, which asks
/// for `VEVENT`s (else `events` is false) with a time range, property filters and an alarm's time
/// range. What it cannot judge (a parameter filter, a time range on a property, another nested
/// component) is refused rather than answered unfiltered.
fn event_filter(root: &Element) -> Result<EventFilter, XmlError> {
    let all = EventFilter { events: true, ..EventFilter::default() };
    let Some(calendar) = root.child(CALDAV, "filter").and_then(|f| f.child(CALDAV, "comp-filter")) else {
        return Ok(all);
    };
    let Some(component) = calendar.child(CALDAV, "comp-filter") else { return Ok(all) };
    let asked = component.attr("name").unwrap_or_default();
    if !asked.eq_ignore_ascii_case("VEVENT") || component.child(CALDAV, "is-not-defined").is_some() {
        return Ok(EventFilter::default());
    }
    let mut filter = all;
    for child in &component.children {
        match (child.ns.as_str(), child.name.as_str()) {
            (CALDAV, "time-range") => filter.range = Some(range_of(child)?),
            (CALDAV, "prop-filter") => filter.props.push(prop_filter(child)?),
            (CALDAV, "comp-filter") if child.attr("name").is_some_and(|n| n.eq_ignore_ascii_case("VALARM")) => {
                match child.children.as_slice() {
                    [range] if range.is(CALDAV, "time-range") => filter.alarm = Some(range_of(range)?),
                    _ => return Err(err("an alarm filter is a time-range only")),
                }
            }
            (ns, name) => return Err(err(format!("unsupported calendar filter {{{ns}}}{name}"))),
        }
    }
    Ok(filter)
}

fn prop_filter(e: &Element) -> Result<EventPropFilter, XmlError> {
    let name = e.attr("name").ok_or_else(|| err("a prop-filter needs a name"))?.to_ascii_uppercase();
    let mut filter = EventPropFilter { name, defined: true, text: None };
    for child in &e.children {
        match (child.ns.as_str(), child.name.as_str()) {
            (CALDAV, "is-not-defined") => filter.defined = false,
            (CALDAV, "text-match") => {
                let collation = child.attr("collation").unwrap_or("i;ascii-casemap");
                if !matches!(collation, "i;ascii-casemap" | "i;octet" | "i;unicode-casemap") {
                    return Err(err(format!("unsupported collation {collation}")));
                }
                filter.text = Some(TextMatch {
                    text: child.text.clone(),
                    match_type: "contains".into(),
                    octet: collation == "i;octet",
                    negate: child.attr("negate-condition").is_some_and(|v| v == "yes"),
                });
            }
            (ns, name) => return Err(err(format!("unsupported property filter {{{ns}}}{name}"))),
        }
    }
    Ok(filter)
}

/// A `time-range` element's bounds, each a UTC date-time.
fn range_of(range: &Element) -> Result<TimeRange, XmlError> {
    let check = |v: Option<&str>| -> Result<Option<String>, XmlError> {
        match v {
            None => Ok(None),
            Some(v) if v.len() == 16 && v.ends_with('Z') && v.as_bytes()[8] == b'T' => Ok(Some(v.to_string())),
            Some(v) => Err(err(format!("time-range value {v:?} is not a UTC date-time"))),
        }
    };
    Ok(TimeRange { start: check(range.attr("start"))?, end: check(range.attr("end"))? })
}

/// A `D:multistatus` being written.
pub struct Multistatus {
    out: String,
}

/// One property's value as XML (the element itself, written by the caller with these prefixes:
/// `D:` DAV, `C:` CardDAV, `CAL:` CalDAV, `CS:` calendarserver).
pub type PropXml = String;

impl Default for Multistatus {
    fn default() -> Self {
        Multistatus::new()
    }
}

impl Multistatus {
    pub fn new() -> Multistatus {
        let mut out = String::with_capacity(4096);
        out.push_str(r#"<?xml version="1.0" encoding="utf-8"?>"#);
        out.push_str(&format!(
            r#"<D:multistatus xmlns:D="{DAV}" xmlns:C="{CARDDAV}" xmlns:CAL="{CALDAV}" xmlns:CS="{CALSERVER}">"#
        ));
        Multistatus { out }
    }

    /// Responses written apart (on the thread that wrote their cards), without the document's
    /// start: appended to a multistatus with [`Multistatus::append`].
    pub fn part() -> Multistatus {
        Multistatus { out: String::new() }
    }

    /// Appends the responses written in `part`.
    pub fn append(&mut self, part: &Multistatus) {
        self.out.push_str(&part.out);
    }

    /// What is written so far, taken out to be sent on (the multistatus goes on writing after
    /// it, into room for `room` more bytes).
    pub fn take(&mut self, room: usize) -> String {
        std::mem::replace(&mut self.out, String::with_capacity(room))
    }

    /// The bytes written so far.
    pub fn len(&self) -> usize {
        self.out.len()
    }

    /// Whether nothing is written (only a part can be empty).
    pub fn is_empty(&self) -> bool {
        self.out.is_empty()
    }

    /// A response for `href` with found properties (200) and missing ones (404).
    pub fn props(&mut self, href: &str, found: &[PropXml], missing: &[&PropName]) {
        let _ = write!(self.out, "<D:response><D:href>{}</D:href>", escape(href));
        if !found.is_empty() {
            self.out.push_str("<D:propstat><D:prop>");
            for p in found {
                self.out.push_str(p);
            }
            self.out.push_str("</D:prop><D:status>HTTP/1.1 200 OK</D:status></D:propstat>");
        }
        if !missing.is_empty() {
            self.out.push_str("<D:propstat><D:prop>");
            for name in missing {
                self.out.push_str(&empty(name));
            }
            self.out.push_str("</D:prop><D:status>HTTP/1.1 404 Not Found</D:status></D:propstat>");
        }
        self.out.push_str("</D:response>");
    }

    /// A response for `href` with one propstat per property and status (a PROPPATCH's answer).
    pub fn propstat_statuses(&mut self, href: &str, statuses: &[(PropName, (u16, &str))]) {
        let _ = write!(self.out, "<D:response><D:href>{}</D:href>", escape(href));
        for (name, (status, reason)) in statuses {
            let _ = write!(
                self.out,
                "<D:propstat><D:prop>{}</D:prop><D:status>HTTP/1.1 {status} {reason}</D:status></D:propstat>",
                empty(name)
            );
        }
        self.out.push_str("</D:response>");
    }

    /// A response for `href` that is only a status (`404` for a removed member, `507` for a
    /// truncated result).
    pub fn status(&mut self, href: &str, status: u16, reason: &str) {
        let _ = write!(
            self.out,
            "<D:response><D:href>{}</D:href><D:status>HTTP/1.1 {status} {reason}</D:status></D:response>",
            escape(href)
        );
    }

    pub fn finish(mut self, sync_token: Option<&str>) -> String {
        if let Some(token) = sync_token {
            let _ = write!(self.out, "<D:sync-token>{}</D:sync-token>", escape(token));
        }
        self.out.push_str("</D:multistatus>");
        self.out
    }
}

/// The prefix we write `ns` with, if it is one of ours.
fn prefix(ns: &str) -> Option<&'static str> {
    match ns {
        DAV => Some("D"),
        CARDDAV => Some("C"),
        CALDAV => Some("CAL"),
        CALSERVER => Some("CS"),
        _ => None,
    }
}

/// `<name/>` for any property name (a foreign namespace gets its own declaration).
pub fn empty(name: &PropName) -> String {
    match prefix(&name.ns) {
        Some(p) => format!("<{p}:{}/>", name.name),
        None if name.ns.is_empty() => format!("<{} xmlns=\"\"/>", name.name),
        None => format!("<X:{} xmlns:X=\"{}\"/>", name.name, escape(name.ns.as_str())),
    }
}

/// `<P:name>text</P:name>` with the text escaped (as `quick_xml::escape::escape` escapes it).
/// A card's text (an `address-data`, 20 KB with a picture) rarely holds a character to escape,
/// so it is first looked over a block at a time, which the compiler turns into vector compares
/// (the byte at a time scan of `escape` was 4% of a multiget's time), and copied once.
pub fn text(tag: &str, value: &str) -> String {
    let escaped = if needs_escape(value) { escape(value) } else { value.into() };
    let mut out = String::with_capacity(2 * tag.len() + 5 + escaped.len());
    for piece in ["<", tag, ">", &escaped, "</", tag, ">"] {
        out.push_str(piece);
    }
    out
}

/// Whether `text` holds a character `escape` replaces.
fn needs_escape(text: &str) -> bool {
    text.as_bytes()
        .chunks(64)
        .any(|block| block.iter().fold(false, |found, &b| found | matches!(b, b'<' | b'>' | b'&' | b'\'' | b'"')))
}

/// `<P:name><D:href>href</D:href></P:name>`.
pub fn href_prop(tag: &str, href: &str) -> String {
    format!("<{tag}><D:href>{}</D:href></{tag}>", escape(href))
}

/// A `D:error` body holding one precondition element (e.g. `C:valid-address-data`), with an
/// optional human explanation.
pub fn error_body(precondition: &str, detail: Option<&str>) -> String {
    let mut out = format!(
        r#"<?xml version="1.0" encoding="utf-8"?><D:error xmlns:D="{DAV}" xmlns:C="{CARDDAV}" xmlns:CAL="{CALDAV}"><{precondition}/>"#
    );
    if let Some(detail) = detail {
        let _ = write!(out, "<D:responsedescription>{}</D:responsedescription>", escape(detail));
    }
    out.push_str("</D:error>");
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_text_element_escapes_as_quick_xml_does_wherever_the_character_falls() {
        let long = "B".repeat(200);
        for special in ["<", ">", "&", "'", "\"", "é", ""] {
            // Before, in and after the first 64-byte block, and at its edges.
            for at in [0, 1, 63, 64, 65, 127, 128, 199, 200] {
                let value = format!("{}{special}{}", &long[..at], &long[at..]);
                assert_eq!(
                    text("C:address-data", &value),
                    format!("<C:address-data>{}</C:address-data>", escape(&value)),
                    "{special:?} at {at}"
                );
            }
        }
        assert_eq!(text("D:x", "a<b"), "<D:x>a&lt;b</D:x>");
    }

    #[test]
    fn a_propfind_reads_its_properties_with_namespaces() {
        let body = br#"<?xml version="1.0"?><d:propfind xmlns:d="DAV:" xmlns:card="urn:ietf:params:xml:ns:carddav" xmlns:cs="http://calendarserver.org/ns/">
            <d:prop><d:getetag/><cs:getctag/><card:address-data version="3.0"/><x:foo xmlns:x="urn:x"/></d:prop></d:propfind>"#;
        let Propfind::Prop(props) = propfind(body).expect("test value") else { panic!("prop") };
        assert_eq!(props.len(), 4);
        assert!(props[0].name.is(DAV, "getetag"));
        assert!(props[1].name.is(CALSERVER, "getctag"));
        assert_eq!(props[2].version.as_deref(), Some("3.0"));
        assert!(props[3].name.is("urn:x", "foo"));
        assert_eq!(propfind(b"").expect("test value"), Propfind::AllProp);
    }

    #[test]
    fn malformed_bodies_are_errors_not_panics() {
        for bad in [
            &b"<d:propfind xmlns:d=\"DAV:\"><d:prop>"[..],
            b"<propfind xmlns=\"DAV:\"><prop></propfind>",
            b"<x:propfind/>",
            b"<propfind xmlns=\"DAV:\"/><again/>",
            b"<!DOCTYPE x [<!ENTITY a \"b\">]><propfind xmlns=\"DAV:\">&a;</propfind>",
            b"text<propfind xmlns=\"DAV:\"/>",
            b"\xff\xfe",
            b"<propfind xmlns=\"DAV:\"><prop>&bogus;</prop></propfind>",
        ] {
            assert!(propfind(bad).is_err(), "{:?}", String::from_utf8_lossy(bad));
        }
        let deep = "<a>".repeat(100) + &"</a>".repeat(100);
        assert!(parse(deep.as_bytes()).is_err());
    }

    #[test]
    fn a_sync_collection_reads_token_and_limit() {
        let body =
            br#"<D:sync-collection xmlns:D="DAV:"><D:sync-token>urn:x:1</D:sync-token><D:sync-level>1</D:sync-level>
            <D:limit><D:nresults>10</D:nresults></D:limit><D:prop><D:getetag/></D:prop></D:sync-collection>"#;
        let Report::SyncCollection { token, props, limit } = report(body).expect("test value") else { panic!() };
        assert_eq!((token.as_str(), props.len(), limit), ("urn:x:1", 1, Some(10)));
    }

    #[test]
    fn a_query_filter_reads_its_text_matches() {
        let body = br#"<C:addressbook-query xmlns:D="DAV:" xmlns:C="urn:ietf:params:xml:ns:carddav"><D:prop><D:getetag/></D:prop>
            <C:filter test="anyof"><C:prop-filter name="FN"><C:text-match collation="i;unicode-casemap" match-type="contains">ad&amp;a</C:text-match></C:prop-filter></C:filter></C:addressbook-query>"#;
        let Report::AddressbookQuery { filter, .. } = report(body).expect("test value") else { panic!() };
        assert_eq!(filter.props[0].name, "FN");
        assert_eq!(filter.props[0].matches[0].text, "ad&a");
    }
}
