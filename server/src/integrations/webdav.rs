//! WebDAV links: Nextcloud, ownCloud or any WebDAV server, with an account name and an app
//! password (HTTP Basic).
//!
//! When saved ([`admit`]) the server is asked two things. Whether the credential is a real
//! account password: Nextcloud's `GET /ocs/v2.php/core/getapppassword` (with `OCS-APIRequest:
//! true`) answers 403 to an app password and hands out a new app password for a real one; a
//! real password is refused, with how to make an app password, and the app password Nextcloud
//! just made is revoked (`DELETE /ocs/v2.php/core/apppassword` with it). A server without
//! that endpoint (404) has no such accounts to tell apart. And where the files are: Nextcloud's
//! and ownCloud's `remote.php/dav/files/<user>/`, else the address itself as a collection.
//!
//! Folders are listed with `PROPFIND` (`Depth: 1`). A linked file or folder is an external
//! identity (`nextcloud`, its path), checked to exist when linked, whose link opens it in the
//! files app (Nextcloud) or is its WebDAV address (another server).

use mycorrhizal_engine::UserScope;
use quick_xml::events::Event;
use quick_xml::name::ResolveResult;
use quick_xml::reader::NsReader;
use reqwest::Method;
use serde::Serialize;
use serde_json::{Map, Value};
use utoipa::ToSchema;

use super::config::Opened;
use super::remote::{Body, Call, Failure, TestResult, clean_path, folders_first, join, parent_of, segment};
use super::{Integrations, Result, System};
use crate::crm::external::ops::ExternalIdentityView;

const DAV: &str = "DAV:";
const OC: &str = "http://owncloud.org/ns";
/// Most entries read from one listing.
const MAX_ENTRIES: usize = 20_000;

const PROPFIND: &str = r#"<?xml version="1.0" encoding="utf-8"?>
<d:propfind xmlns:d="DAV:" xmlns:oc="http://owncloud.org/ns">
  <d:prop><d:resourcetype/><d:displayname/><d:getcontentlength/><d:getlastmodified/><oc:fileid/></d:prop>
</d:propfind>"#;

/// What a WebDAV server is told when the credential is an account's real password.
pub const APP_PASSWORD_NEEDED: &str = "This is the account's real password: use an app password instead. In Nextcloud, \
     open Settings > Security > Devices & sessions, enter a name (\"Mycorrhizal\") and choose \"Create new app password\"; \
     paste the password it shows here.";

/// One entry of a multistatus.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Entry {
    /// The href as the server wrote it (percent-encoded).
    pub href: String,
    pub collection: bool,
    pub display_name: String,
    pub size: Option<u64>,
    /// RFC 1123 as the server says it.
    pub last_modified: String,
    pub file_id: String,
    /// `current-user-principal`'s href, when asked.
    pub principal: String,
}

/// Reads a `207 Multi-Status` answer to a PROPFIND: each response's href and the properties of
/// its `200` propstat.
pub fn parse_multistatus(bytes: &[u8]) -> std::result::Result<Vec<Entry>, String> {
    let text = std::str::from_utf8(bytes).map_err(|_| "not UTF-8")?;
    let mut reader = NsReader::from_str(text);
    reader.config_mut().check_end_names = true;
    let mut entries = Vec::new();
    let mut path: Vec<(String, String)> = Vec::new();
    let (mut current, mut props, mut status) = (Entry::default(), Entry::default(), String::new());
    let mut found_ok = false;
    let mut text_buf = String::new();
    let mut seen_root = false;
    loop {
        let (resolved, event) = reader.read_resolved_event().map_err(|e| format!("malformed XML: {e}"))?;
        let ns = match resolved {
            ResolveResult::Bound(ns) => String::from_utf8_lossy(ns.into_inner()).into_owned(),
            _ => String::new(),
        };
        match event {
            Event::Start(ref s) | Event::Empty(ref s) => {
                let name = String::from_utf8_lossy(s.local_name().into_inner()).into_owned();
                if path.is_empty() {
                    if seen_root || ns != DAV || name != "multistatus" {
                        return Err("not a DAV multistatus".into());
                    }
                    seen_root = true;
                }
                if path.len() > 16 {
                    return Err("nested too deeply".into());
                }
                text_buf.clear();
                match (ns.as_str(), name.as_str()) {
                    (DAV, "response") => {
                        current = Entry::default();
                        found_ok = false;
                    }
                    (DAV, "propstat") => {
                        props = Entry::default();
                        status.clear();
                    }
                    (DAV, "collection") => props.collection = true,
                    _ => {}
                }
                if matches!(event, Event::Start(_)) {
                    path.push((ns, name));
                }
            }
            Event::Text(t) => text_buf.push_str(&t.decode().map_err(|e| format!("malformed text: {e}"))?),
            Event::GeneralRef(r) => match r.resolve_char_ref().map_err(|e| format!("bad reference: {e}"))? {
                Some(c) => text_buf.push(c),
                None => text_buf.push_str(match &*r.decode().map_err(|e| format!("bad reference: {e}"))? {
                    "lt" => "<",
                    "gt" => ">",
                    "amp" => "&",
                    "apos" => "'",
                    "quot" => "\"",
                    other => return Err(format!("unknown entity &{other};")),
                }),
            },
            Event::CData(t) => text_buf.push_str(&String::from_utf8_lossy(&t)),
            Event::End(_) => {
                let Some((ns, name)) = path.pop() else { return Err("unbalanced XML".into()) };
                let value = text_buf.trim().to_string();
                match (ns.as_str(), name.as_str()) {
                    (DAV, "href") if path.last().is_some_and(|(_, n)| n == "response") => {
                        current.href = value;
                    }
                    (DAV, "href") if path.last().is_some_and(|(_, n)| n == "current-user-principal") => {
                        props.principal = value;
                    }
                    (DAV, "status") => status = value,
                    (DAV, "displayname") => props.display_name = value,
                    (DAV, "getcontentlength") => props.size = value.parse().ok(),
                    (DAV, "getlastmodified") => props.last_modified = value,
                    (OC, "fileid") => props.file_id = value,
                    (DAV, "propstat") => {
                        if !found_ok && (status.contains(" 200") || status.is_empty()) {
                            found_ok = true;
                            current.collection = props.collection;
                            current.display_name = std::mem::take(&mut props.display_name);
                            current.size = props.size;
                            current.last_modified = std::mem::take(&mut props.last_modified);
                            current.file_id = std::mem::take(&mut props.file_id);
                            current.principal = std::mem::take(&mut props.principal);
                        }
                    }
                    (DAV, "response") => {
                        if !current.href.is_empty() {
                            entries.push(std::mem::take(&mut current));
                            if entries.len() > MAX_ENTRIES {
                                return Err("too many entries".into());
                            }
                        }
                    }
                    _ => {}
                }
                text_buf.clear();
            }
            Event::Eof => break,
            _ => {}
        }
    }
    if !seen_root || !path.is_empty() {
        return Err("not a complete DAV multistatus".into());
    }
    Ok(entries)
}

/// `%XX` sequences decoded (a `+` or `&` is itself; an invalid sequence is kept as written).
fn percent_decode(raw: &str) -> String {
    let bytes = raw.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let hex = |b: u8| (b as char).to_digit(16);
        match (bytes[i], bytes.get(i + 1).copied().and_then(hex), bytes.get(i + 2).copied().and_then(hex)) {
            (b'%', Some(h), Some(l)) => {
                out.push((h * 16 + l) as u8);
                i += 3;
            }
            (b, _, _) => {
                out.push(b);
                i += 1;
            }
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// An entry of a folder.
#[derive(Debug, Clone, PartialEq, Serialize, ToSchema)]
#[schema(as = WebdavItem)]
pub struct Item {
    pub name: String,
    /// Under the files' root, starting with `/`; folders end with `/`.
    pub path: String,
    /// `file` or `dir`.
    #[serde(rename = "type")]
    pub kind: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub size: Option<u64>,
    /// RFC 3339.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub modified_at: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub file_id: Option<String>,
}

/// The entries of `dir` (a path under the root whose address path is `root_path`): the folder
/// itself left out, and anything outside it.
pub fn items_of(entries: Vec<Entry>, root_path: &str, dir: &str) -> Vec<Item> {
    let root = root_path.trim_end_matches('/');
    let dir_norm = format!("/{}", dir.trim_matches('/'));
    entries
        .into_iter()
        .filter_map(|e| {
            // Decoded once: the path of an absolute href, or the href itself.
            let href = match reqwest::Url::parse(&e.href) {
                Ok(u) => percent_decode(u.path()),
                Err(_) => percent_decode(&e.href),
            };
            let rel = href.strip_prefix(root)?;
            let rel = format!("/{}", rel.trim_matches('/'));
            if rel == dir_norm || rel.split('/').any(|s| s == "..") {
                return None;
            }
            let parent = parent_of(&rel);
            if parent != dir_norm {
                return None;
            }
            let last = rel.rsplit('/').next().unwrap_or_default().to_string();
            let name = if e.display_name.is_empty() { last } else { e.display_name.clone() };
            let modified_at = jiff::fmt::rfc2822::parse(&e.last_modified)
                .ok()
                .map(|z| z.timestamp().to_string())
                .filter(|_| !e.last_modified.is_empty());
            Some(Item {
                name,
                path: if e.collection { format!("{rel}/") } else { rel },
                kind: if e.collection { "dir" } else { "file" }.into(),
                size: if e.collection { None } else { e.size },
                modified_at,
                file_id: Some(e.file_id).filter(|f| !f.is_empty()),
            })
        })
        .collect()
}

fn escaped(path: &str) -> String {
    path.split('/').map(segment).collect::<Vec<_>>().join("/")
}

async fn propfind(call: &mut Call<'_>, url: &str, depth: &'static str) -> std::result::Result<Vec<Entry>, Failure> {
    let answer = call
        .send(Method::from_bytes(b"PROPFIND").expect("a method"), url, Some(Body::Xml(PROPFIND.into(), depth)), false)
        .await?;
    if answer.status().as_u16() != 207 {
        return call
            .fail(Failure::Unreadable(format!("PROPFIND answered {} instead of 207", answer.status().as_u16())));
    }
    let bytes = call.read(answer, super::remote::MAX_DOCUMENT).await?;
    parse_multistatus(&bytes).or_else(|e| call.fail(Failure::Unreadable(e)))
}

/// Checks a WebDAV connection before it is saved: an app password, not the account's own
/// (Nextcloud's check), and where the files are. Returns the files' root address.
pub async fn admit(i: &Integrations, opened: &Opened) -> Result<String> {
    let mut call = Call::of(i, opened.clone());
    let check = join(&opened.base_url, "/ocs/v2.php/core/getapppassword");
    let probe = i
        .client()
        .get(&check)
        .basic_auth(&opened.username, Some(&opened.secret))
        .header("ocs-apirequest", "true")
        .header("accept", "application/json");
    let parsed = reqwest::Url::parse(&check).map_err(|e| crate::crm::Error::invalid("base_url", e.to_string()))?;
    crate::outbound::check_literal_always_with(&parsed, i.loopback())
        .map_err(|e| crate::crm::Error::invalid("base_url", e))?;
    if let Ok(mut answer) = probe.send().await
        && answer.status().is_success()
    {
        // Nextcloud's answer is a few hundred bytes: read at most 64 KB of whatever answers.
        let mut body = Vec::new();
        while let Ok(Some(chunk)) = answer.chunk().await {
            body.extend_from_slice(&chunk);
            if body.len() > 64 * 1024 {
                body.clear();
                break;
            }
        }
        if let Some(token) = issued_app_password(&body) {
            // A real password made Nextcloud issue an app password: revoke it, refuse this one.
            let _ = i
                .client()
                .delete(join(&opened.base_url, "/ocs/v2.php/core/apppassword"))
                .basic_auth(&opened.username, Some(&token))
                .header("ocs-apirequest", "true")
                .send()
                .await;
            return Err(crate::crm::Error::invalid("app_password", APP_PASSWORD_NEEDED).into());
        }
    }
    // Nextcloud's files are under the account's user id, which differs from the login name for
    // an e-mail or LDAP login: its principal says which.
    let user = match user_id(&mut call, &opened.base_url).await {
        Some(id) => segment(&id),
        None => segment(&opened.username),
    };
    let candidates =
        [join(&opened.base_url, &format!("/remote.php/dav/files/{user}/")), format!("{}/", opened.base_url)];
    let mut last = Failure::NotFound;
    for root in candidates {
        match propfind(&mut call, &root, "0").await {
            Ok(_) => return Ok(root),
            Err(f @ (Failure::Rejected | Failure::Refused(_) | Failure::Unreachable(_))) => {
                last = f;
                break;
            }
            Err(f) => last = f,
        }
    }
    let message = match &last {
        Failure::NotFound | Failure::Status(_) | Failure::Unreadable(_) => {
            "No WebDAV folder answers at this address (tried Nextcloud's remote.php/dav/files/<user>/ and the address itself).".to_string()
        }
        f => f.message(System::Nextcloud),
    };
    Err(match last {
        Failure::Rejected => crate::crm::Error::invalid("app_password", message).into(),
        _ => crate::crm::Error::invalid("base_url", message).into(),
    })
}

/// The user id of Nextcloud's `current-user-principal` (`.../principals/users/<id>/`), if it
/// answers with one.
async fn user_id(call: &mut Call<'_>, base: &str) -> Option<String> {
    const ASK: &str = r#"<?xml version="1.0" encoding="utf-8"?><d:propfind xmlns:d="DAV:"><d:prop><d:current-user-principal/></d:prop></d:propfind>"#;
    let url = join(base, "/remote.php/dav/");
    let method = Method::from_bytes(b"PROPFIND").ok()?;
    let answer = call.send(method, &url, Some(Body::Xml(ASK.into(), "0")), false).await.ok()?;
    let bytes = call.read(answer, 64 * 1024).await.ok()?;
    let entries = parse_multistatus(&bytes).ok()?;
    principal_user(&entries.first()?.principal)
}

/// `<id>` of a principal href `.../principals/users/<id>/`.
pub fn principal_user(href: &str) -> Option<String> {
    let path = reqwest::Url::parse(href).map(|u| u.path().to_string()).unwrap_or_else(|_| href.to_string());
    let id = path.trim_end_matches('/').rsplit_once("/principals/users/")?.1;
    let id = percent_decode(id);
    (!id.is_empty() && !id.contains('/')).then_some(id)
}

/// The app password Nextcloud's `getapppassword` issued (`ocs.data.apppassword`), if any.
pub fn issued_app_password(body: &[u8]) -> Option<String> {
    let doc: Value = serde_json::from_slice(body).ok()?;
    doc.pointer("/ocs/data/apppassword").and_then(Value::as_str).filter(|t| !t.is_empty()).map(String::from)
}

fn root_path(opened: &Opened) -> String {
    reqwest::Url::parse(&opened.dav_root).map(|u| percent_decode(u.path())).unwrap_or_else(|_| "/".into())
}

fn is_nextcloud(opened: &Opened) -> bool {
    opened.dav_root.contains("/remote.php/dav/files/")
}

/// The connection test: the files' root answers a PROPFIND.
pub async fn test(i: &Integrations, user: u64) -> Result<TestResult> {
    let mut call = Call::new(i, user, System::Nextcloud)?.testing();
    let root = call.opened.dav_root.clone();
    let outcome = propfind(&mut call, &root, "0").await;
    call.finish().await;
    Ok(match outcome {
        Ok(_) => TestResult::ok("Connected to the WebDAV server".into()),
        Err(f) => TestResult::failed(System::Nextcloud, &f),
    })
}

async fn list(call: &mut Call<'_>, dir: &str) -> std::result::Result<Vec<Item>, Failure> {
    let url = format!("{}{}", call.opened.dav_root.trim_end_matches('/'), escaped(dir));
    let url = if url.ends_with('/') { url } else { format!("{url}/") };
    let entries = propfind(call, &url, "1").await?;
    Ok(items_of(entries, &root_path(&call.opened), dir))
}

/// A folder's entries, folders first, by name.
pub async fn dir(i: &Integrations, user: u64, path: Option<&str>) -> Result<Vec<Item>> {
    let path = clean_path(path)?;
    let mut call = Call::new(i, user, System::Nextcloud)?;
    let outcome = list(&mut call, &path).await;
    let mut items = call.settle(outcome).await?;
    folders_first(&mut items, |e| (&e.kind, &e.name));
    Ok(items)
}

/// What a link names.
#[derive(Debug, Clone, Default, serde::Deserialize, ToSchema)]
#[schema(as = WebdavLinkInput)]
pub struct LinkInput {
    /// The file's or folder's path under the files' root (`/Letters/2024.pdf`).
    #[serde(default)]
    #[schema(required = true, min_length = 1, max_length = 512)]
    pub path: String,
}

/// Links the file or folder at `input.path` (found in its folder's listing) to contact `uid`.
pub async fn link(
    i: &Integrations,
    scope: &UserScope,
    user: u64,
    uid: &str,
    input: &LinkInput,
) -> Result<ExternalIdentityView> {
    let path = clean_path(Some(&input.path))?;
    let path = path.trim_end_matches('/').to_string();
    if path.is_empty() {
        return Err(crate::crm::Error::invalid("path", "must name a file or folder, not the root").into());
    }
    let contact = super::contact_of(scope, uid).await?;
    let parent = parent_of(&path).to_string();
    let mut call = Call::new(i, user, System::Nextcloud)?;
    let outcome = match list(&mut call, &parent).await {
        Ok(items) => items.into_iter().find(|e| e.path.trim_end_matches('/') == path).ok_or(Failure::NotFound),
        Err(f) => Err(f),
    };
    let opened = call.opened.clone();
    let item = call.settle(outcome).await?;
    let url = if is_nextcloud(&opened) {
        let q = |s: &str| url::form_urlencoded::byte_serialize(s.as_bytes()).collect::<String>();
        if item.kind == "dir" {
            join(&opened.base_url, &format!("/apps/files/?dir={}", q(&path)))
        } else {
            let open = item.file_id.as_ref().map(|f| format!("&openfile={}", q(f))).unwrap_or_default();
            join(&opened.base_url, &format!("/apps/files/?dir={}{open}", q(&parent)))
        }
    } else {
        format!("{}{}", opened.dav_root.trim_end_matches('/'), escaped(&item.path))
    };
    let mut metadata = Map::new();
    metadata.insert("name".into(), Value::from(item.name.clone()));
    metadata.insert("type".into(), Value::from(item.kind.clone()));
    if let Some(size) = item.size {
        metadata.insert("size".into(), Value::from(size));
    }
    if let Some(m) = &item.modified_at {
        metadata.insert("modified_at".into(), Value::from(m.clone()));
    }
    if let Some(f) = &item.file_id {
        metadata.insert("file_id".into(), Value::from(f.clone()));
    }
    super::save_link(scope, contact, System::Nextcloud, path, url, metadata).await
}

#[cfg(test)]
mod tests {
    use super::*;

    const LISTING: &str = r#"<?xml version="1.0"?>
<d:multistatus xmlns:d="DAV:" xmlns:oc="http://owncloud.org/ns">
 <d:response><d:href>/remote.php/dav/files/ada/Letters/</d:href>
  <d:propstat><d:prop><d:resourcetype><d:collection/></d:resourcetype></d:prop><d:status>HTTP/1.1 200 OK</d:status></d:propstat></d:response>
 <d:response><d:href>/remote.php/dav/files/ada/Letters/Lease%202024.pdf</d:href>
  <d:propstat><d:prop><d:resourcetype/><d:getcontentlength>1234</d:getcontentlength>
   <d:getlastmodified>Wed, 01 May 2024 10:00:00 GMT</d:getlastmodified><oc:fileid>42</oc:fileid></d:prop>
   <d:status>HTTP/1.1 200 OK</d:status></d:propstat>
  <d:propstat><d:prop><d:displayname/></d:prop><d:status>HTTP/1.1 404 Not Found</d:status></d:propstat></d:response>
 <d:response><d:href>/remote.php/dav/files/ada/Letters/Old/</d:href>
  <d:propstat><d:prop><d:resourcetype><d:collection/></d:resourcetype></d:prop><d:status>HTTP/1.1 200 OK</d:status></d:propstat></d:response>
</d:multistatus>"#;

    #[test]
    fn a_listing_becomes_the_folders_entries() {
        let entries = parse_multistatus(LISTING.as_bytes()).unwrap();
        assert_eq!(entries.len(), 3);
        let items = items_of(entries, "/remote.php/dav/files/ada/", "/Letters/");
        assert_eq!(items.len(), 2, "{items:?}");
        assert_eq!(items[0].name, "Lease 2024.pdf");
        assert_eq!(items[0].path, "/Letters/Lease 2024.pdf");
        assert_eq!(items[0].size, Some(1234));
        assert_eq!(items[0].file_id.as_deref(), Some("42"));
        assert_eq!(items[0].modified_at.as_deref(), Some("2024-05-01T10:00:00Z"));
        assert_eq!((items[1].kind.as_str(), items[1].path.as_str()), ("dir", "/Letters/Old/"));
        assert!(parse_multistatus(b"<x/>").is_err());
        assert_eq!(percent_decode("/a%20b/Tom+Jerry%2526&x%zz"), "/a b/Tom+Jerry%26&x%zz", "decoded once");
        assert!(parse_multistatus(b"<d:multistatus xmlns:d=\"DAV:\">").is_err());
    }

    #[test]
    fn a_real_password_is_told_by_the_app_password_nextcloud_issues() {
        assert_eq!(
            issued_app_password(br#"{"ocs":{"meta":{"status":"ok"},"data":{"apppassword":"abc-def"}}}"#).as_deref(),
            Some("abc-def")
        );
        assert_eq!(issued_app_password(br#"{"ocs":{"data":[]}}"#), None);
        assert_eq!(
            principal_user("/remote.php/dav/principals/users/remy%40example.org/").as_deref(),
            Some("remy@example.org")
        );
        assert_eq!(principal_user("/principals/"), None);
    }
}
