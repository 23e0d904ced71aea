//! What each CardDAV resource answers for a property: the root, the principal (which is also the
//! address book home), the address book and a card. A property a resource does not have is
//! reported 404 in its propstat; `allprop` is the list each resource gives unasked.

use mycorrhizal_engine::{Meta, Row};

use super::xml::{self, CALDAV, CALSERVER, CARDDAV, DAV, Prop, PropName, PropXml};
use super::{DavUser, MAX_BODY};

/// The resources of the CardDAV tree.
pub enum Resource<'a> {
    Root,
    Principal,
    Book {
        token: &'a str,
        /// Its name (the owner's, else "Contacts").
        name: &'a str,
    },
    /// A card: its row's id and metadata (all its properties need; its `address-data` is the
    /// caller's).
    Card {
        id: u64,
        meta: &'a Meta,
    },
}

/// The principal: the CardDAV one when CardDAV is served, else the CalDAV one.
pub fn principal_href(user: &DavUser) -> String {
    if user.carddav { format!("/carddav/{}/", user.id.0) } else { calendar_home_href(user) }
}

pub fn calendar_home_href(user: &DavUser) -> String {
    format!("/caldav/{}/", user.id.0)
}

pub fn book_href(user: &DavUser) -> String {
    format!("/carddav/{}/contacts/", user.id.0)
}

pub fn card_href(user: &DavUser, name: &str) -> String {
    format!("/carddav/{}/contacts/{}.vcf", user.id.0, segment(name))
}

/// A resource name as one path segment of an href: letters, digits and `_ . - + @ ~ =` as they
/// are (so every name served before hrefs were encoded keeps its exact href), every other byte
/// of its UTF-8 percent-encoded (a space, `/`, `%`, a newline, non-ASCII letters). A client's
/// href, decoded segment by segment on the way in ([`decoded_segments`]), names the same
/// resource however the client encoded it.
pub fn segment(name: &str) -> String {
    let mut out = String::with_capacity(name.len());
    for b in name.bytes() {
        if b.is_ascii_alphanumeric() || matches!(b, b'_' | b'.' | b'-' | b'+' | b'@' | b'~' | b'=') {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

/// The segments of a request path, each percent-decoded (an encoded `/` stays inside its
/// segment), empty ones left out.
pub fn decoded_segments(path: &str) -> Vec<String> {
    path.split('/').filter(|p| !p.is_empty()).map(mycorrhizal_codecs::text::percent_decode).collect()
}

const PRIVILEGES: &str = "<D:current-user-privilege-set><D:privilege><D:read/></D:privilege><D:privilege><D:write/></D:privilege><D:privilege><D:write-properties/></D:privilege><D:privilege><D:write-content/></D:privilege><D:privilege><D:bind/></D:privilege><D:privilege><D:unbind/></D:privilege><D:privilege><D:read-current-user-privilege-set/></D:privilege></D:current-user-privilege-set>";

/// The properties a resource reports for `allprop` and `propname`.
pub fn all(resource: &Resource<'_>) -> Vec<Prop> {
    let names: &[(&str, &str)] = match resource {
        Resource::Root => &[(DAV, "resourcetype"), (DAV, "current-user-principal")],
        Resource::Principal => &[
            (DAV, "resourcetype"),
            (DAV, "displayname"),
            (DAV, "current-user-principal"),
            (DAV, "principal-URL"),
            (CARDDAV, "addressbook-home-set"),
        ],
        Resource::Book { .. } => &[
            (DAV, "resourcetype"),
            (DAV, "displayname"),
            (DAV, "sync-token"),
            (CALSERVER, "getctag"),
            (CARDDAV, "supported-address-data"),
            (CARDDAV, "max-resource-size"),
        ],
        Resource::Card { .. } => &[(DAV, "resourcetype"), (DAV, "getetag"), (DAV, "getcontenttype")],
    };
    names.iter().map(|(ns, name)| Prop { name: PropName::new(ns, name), version: None, expand: None }).collect()
}

/// The value of `prop` on `resource` (the whole property element), or `None` (404). A card's
/// `address-data` is the caller's (it needs the card written).
pub fn value(resource: &Resource<'_>, prop: &PropName, user: &DavUser) -> Option<PropXml> {
    // Written only for the properties that hold it (not for each card's getetag of a listing).
    let principal = || principal_href(user);
    let common = match (prop.ns.as_str(), prop.name.as_str()) {
        (DAV, "current-user-principal") => Some(xml::href_prop("D:current-user-principal", &principal())),
        (DAV, "principal-URL") => Some(xml::href_prop("D:principal-URL", &principal())),
        (DAV, "owner") => Some(xml::href_prop("D:owner", &principal())),
        (CARDDAV, "addressbook-home-set") if user.carddav => {
            Some(xml::href_prop("C:addressbook-home-set", &principal()))
        }
        (CALDAV, "calendar-home-set") if user.caldav => {
            Some(xml::href_prop("CAL:calendar-home-set", &calendar_home_href(user)))
        }
        (DAV, "current-user-privilege-set") => Some(PRIVILEGES.to_string()),
        _ => None,
    };
    if common.is_some() && !matches!(resource, Resource::Card { .. }) {
        return common;
    }
    match resource {
        Resource::Root => match (prop.ns.as_str(), prop.name.as_str()) {
            (DAV, "resourcetype") => Some("<D:resourcetype><D:collection/></D:resourcetype>".into()),
            _ => None,
        },
        Resource::Principal => match (prop.ns.as_str(), prop.name.as_str()) {
            (DAV, "resourcetype") => Some("<D:resourcetype><D:collection/><D:principal/></D:resourcetype>".into()),
            (DAV, "displayname") => Some(xml::text("D:displayname", &user.username)),
            _ => None,
        },
        Resource::Book { token, name } => match (prop.ns.as_str(), prop.name.as_str()) {
            (DAV, "resourcetype") => {
                Some("<D:resourcetype><D:collection/><C:addressbook/></D:resourcetype>".into())
            }
            (DAV, "displayname") => Some(xml::text("D:displayname", name)),
            (CARDDAV, "addressbook-description") => {
                Some(xml::text("C:addressbook-description", "Every contact of this account"))
            }
            (DAV, "sync-token") => Some(xml::text("D:sync-token", token)),
            (CALSERVER, "getctag") => Some(xml::text("CS:getctag", token)),
            (CARDDAV, "supported-address-data") => Some(
                "<C:supported-address-data><C:address-data-type content-type=\"text/vcard\" version=\"3.0\"/><C:address-data-type content-type=\"text/vcard\" version=\"4.0\"/></C:supported-address-data>".into(),
            ),
            (CARDDAV, "max-resource-size") => Some(xml::text("C:max-resource-size", &MAX_BODY.to_string())),
            (DAV, "supported-report-set") => Some(
                "<D:supported-report-set><D:supported-report><D:report><C:addressbook-multiget/></D:report></D:supported-report><D:supported-report><D:report><C:addressbook-query/></D:report></D:supported-report><D:supported-report><D:report><D:sync-collection/></D:report></D:supported-report></D:supported-report-set>".into(),
            ),
            _ => None,
        },
        Resource::Card { id, meta } => match (prop.ns.as_str(), prop.name.as_str()) {
            (DAV, "resourcetype") => Some("<D:resourcetype/>".into()),
            (DAV, "getetag") => Some(xml::text("D:getetag", &Row { id: *id, meta: **meta, body: () }.etag())),
            (DAV, "getcontenttype") => Some(xml::text("D:getcontenttype", "text/vcard; charset=utf-8")),
            (DAV, "getlastmodified") => {
                let at = meta.updated_at.strftime("%a, %d %b %Y %H:%M:%S GMT").to_string();
                Some(xml::text("D:getlastmodified", &at))
            }
            _ => common,
        },
    }
}
