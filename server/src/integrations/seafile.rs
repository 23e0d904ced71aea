//! The file library: Seafile's Web API (`api2`) with the user's API token
//! (`Authorization: Token <token>`).
//!
//! Used: `GET /api2/ping/` (anonymous) and `/api2/auth/ping/` (the connection test),
//! `GET /api2/repos/` (the libraries), `GET /api2/repos/{id}/` (one, for its name) and
//! `GET /api2/repos/{id}/dir/?p=<path>` (a folder's entries). A linked file or folder is an
//! external identity (`seafile`, `<library>:<path>`), checked to exist when linked, whose link
//! opens it in Seafile's web client.

use mycorrhizal_engine::UserScope;
use reqwest::Method;
use serde::Serialize;
use serde_json::{Map, Value};
use utoipa::ToSchema;

use super::remote::{Call, Failure, TestResult, clean_path, folders_first, join, parent_of, segment};
use super::{Integrations, Result, System};
use crate::crm::external::ops::ExternalIdentityView;

/// A library.
#[derive(Debug, Clone, PartialEq, Serialize, ToSchema)]
#[schema(as = SeafileLibrary)]
pub struct Library {
    pub id: String,
    pub name: String,
    #[serde(rename = "type")]
    pub kind: String,
}

/// An entry of a folder.
#[derive(Debug, Clone, PartialEq, Serialize, ToSchema)]
#[schema(as = SeafileItem)]
pub struct Item {
    pub id: String,
    pub name: String,
    /// `file` or `dir`.
    #[serde(rename = "type")]
    pub kind: String,
    pub size: u64,
    /// Unix seconds.
    pub mtime: i64,
    pub parent_dir: String,
    /// The entry's path in its library (folders end without a slash).
    pub path: String,
}

fn text(v: &Value, key: &str) -> String {
    v.get(key).and_then(Value::as_str).unwrap_or_default().to_string()
}

/// `GET /api2/repos/`.
pub fn parse_libraries(bytes: &[u8]) -> std::result::Result<Vec<Library>, String> {
    let doc: Value = serde_json::from_slice(bytes).map_err(|e| format!("not JSON: {e}"))?;
    let list = doc.as_array().ok_or("not a list of libraries")?;
    Ok(list
        .iter()
        .filter_map(|r| {
            let id = text(r, "id");
            (!id.is_empty() && id.len() <= 64).then(|| Library { id, name: text(r, "name"), kind: text(r, "type") })
        })
        .collect())
}

/// `GET /api2/repos/{id}/dir/?p=<dir>`: the entries, with their paths under `dir`.
pub fn parse_dir(bytes: &[u8], dir: &str) -> std::result::Result<Vec<Item>, String> {
    let doc: Value = serde_json::from_slice(bytes).map_err(|e| format!("not JSON: {e}"))?;
    let list = doc.as_array().ok_or("not a list of entries")?;
    let base = dir.trim_end_matches('/');
    Ok(list
        .iter()
        .filter_map(|e| {
            let name = text(e, "name");
            let kind = text(e, "type");
            if name.is_empty() || name.contains('/') || !matches!(kind.as_str(), "file" | "dir") {
                return None;
            }
            Some(Item {
                id: text(e, "id"),
                path: format!("{base}/{name}"),
                name,
                kind,
                size: e.get("size").and_then(Value::as_u64).unwrap_or(0),
                mtime: e.get("mtime").and_then(Value::as_i64).unwrap_or(0),
                parent_dir: match text(e, "parent_dir") {
                    p if p.is_empty() => format!("{base}/"),
                    p => p,
                },
            })
        })
        .collect())
}

fn api(call: &Call<'_>, path: &str) -> String {
    join(&call.opened.base_url, path)
}

async fn get(call: &mut Call<'_>, url: &str, anonymous: bool) -> std::result::Result<Vec<u8>, Failure> {
    let answer = call.send(Method::GET, url, None, anonymous).await?;
    call.read(answer, super::remote::MAX_DOCUMENT).await
}

fn pong(bytes: &[u8]) -> bool {
    String::from_utf8_lossy(bytes).contains("pong")
}

/// The connection test: the server answers `pong`, then `pong` to the token.
pub async fn test(i: &Integrations, user: u64) -> Result<TestResult> {
    let mut call = Call::new(i, user, System::Seafile)?.testing();
    for (path, anonymous) in [("/api2/ping/", true), ("/api2/auth/ping/", false)] {
        let url = api(&call, path);
        let outcome = match get(&mut call, &url, anonymous).await {
            Ok(bytes) if pong(&bytes) => Ok(()),
            Ok(_) => call.fail(Failure::Unreadable("it did not answer `pong`".into())),
            Err(f) => Err(f),
        };
        if let Err(f) = outcome {
            call.finish().await;
            return Ok(TestResult::failed(System::Seafile, &f));
        }
    }
    call.finish().await;
    Ok(TestResult::ok("Connected to Seafile".into()))
}

/// The libraries the token sees, by name.
pub async fn libraries(i: &Integrations, user: u64) -> Result<Vec<Library>> {
    let mut call = Call::new(i, user, System::Seafile)?;
    let url = api(&call, "/api2/repos/");
    let outcome = match get(&mut call, &url, false).await {
        Ok(bytes) => parse_libraries(&bytes).or_else(|e| call.fail(Failure::Unreadable(e))),
        Err(f) => Err(f),
    };
    let mut list = call.settle(outcome).await?;
    list.sort_by_key(|l| l.name.to_lowercase());
    Ok(list)
}

async fn list(call: &mut Call<'_>, repo: &str, path: &str) -> std::result::Result<Vec<Item>, Failure> {
    let url = api(call, &format!("/api2/repos/{}/dir/?p={}&recursive=0", segment(repo), segment(path)));
    let bytes = get(call, &url, false).await?;
    parse_dir(&bytes, path).or_else(|e| call.fail(Failure::Unreadable(e)))
}

fn check_repo(repo: &str) -> Result<()> {
    if repo.trim().is_empty() || repo.len() > 64 {
        return Err(crate::crm::Error::invalid("repo_id", "must be a library id (1 to 64 characters)").into());
    }
    Ok(())
}

/// A folder's entries, folders first, by name.
pub async fn dir(i: &Integrations, user: u64, repo: &str, path: Option<&str>) -> Result<Vec<Item>> {
    check_repo(repo)?;
    let path = clean_path(path)?;
    let mut call = Call::new(i, user, System::Seafile)?;
    let outcome = list(&mut call, repo, &path).await;
    let mut items = call.settle(outcome).await?;
    folders_first(&mut items, |e| (&e.kind, &e.name));
    Ok(items)
}

/// What a link names: a library and a path in it.
#[derive(Debug, Clone, Default, serde::Deserialize, ToSchema)]
#[schema(as = SeafileLinkInput)]
pub struct LinkInput {
    #[serde(default)]
    #[schema(required = true, min_length = 1, max_length = 64)]
    pub repo_id: String,
    /// The file's or folder's path in the library (`/Letters/2024.pdf`).
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
    check_repo(&input.repo_id)?;
    let path = clean_path(Some(&input.path))?;
    let path = path.trim_end_matches('/').to_string();
    if path.is_empty() {
        return Err(crate::crm::Error::invalid("path", "must name a file or folder, not the library itself").into());
    }
    let contact = super::contact_of(scope, uid).await?;
    let (parent, name) = (parent_of(&path), path.rsplit('/').next().unwrap_or_default());
    let mut call = Call::new(i, user, System::Seafile)?;
    let outcome = match list(&mut call, &input.repo_id, parent).await {
        Ok(items) => match items.into_iter().find(|e| e.name == name) {
            Some(item) => Ok(item),
            None => Err(Failure::NotFound),
        },
        Err(f) => Err(f),
    };
    let repo_name = if outcome.is_ok() {
        let url = api(&call, &format!("/api2/repos/{}/", segment(&input.repo_id)));
        match get(&mut call, &url, false).await {
            Ok(bytes) => serde_json::from_slice::<Value>(&bytes).ok().map(|v| text(&v, "name")).unwrap_or_default(),
            Err(_) => String::new(),
        }
    } else {
        String::new()
    };
    let base = call.opened.base_url.clone();
    let item = call.settle(outcome).await?;
    let escaped: String = path.split('/').map(segment).collect::<Vec<_>>().join("/");
    let url = if item.kind == "dir" && !repo_name.is_empty() {
        join(&base, &format!("/library/{}/{}{}/", segment(&input.repo_id), segment(&repo_name), escaped))
    } else {
        join(&base, &format!("/lib/{}/file{}", segment(&input.repo_id), escaped))
    };
    let mut metadata = Map::new();
    metadata.insert("name".into(), Value::from(item.name.clone()));
    metadata.insert("type".into(), Value::from(item.kind.clone()));
    metadata.insert("repo_name".into(), Value::from(repo_name));
    if item.size > 0 {
        metadata.insert("size".into(), Value::from(item.size));
    }
    if item.mtime > 0 {
        metadata.insert("mtime".into(), Value::from(item.mtime));
    }
    super::save_link(scope, contact, System::Seafile, format!("{}:{path}", input.repo_id.trim()), url, metadata).await
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn folders_and_libraries_are_read_and_paths_checked() {
        let dir = br#"[{"id":"f1","type":"file","name":"a.pdf","size":10,"mtime":1700000000},{"type":"dir","name":"Sub"},{"type":"x","name":"?"}]"#;
        let items = parse_dir(dir, "/Letters/").unwrap();
        assert_eq!(items.len(), 2);
        assert_eq!(items[0].path, "/Letters/a.pdf");
        assert_eq!(items[1].parent_dir, "/Letters/");
        assert_eq!(
            parse_libraries(br#"[{"id":"r1","name":"My Library","type":"repo"}]"#).unwrap()[0].name,
            "My Library"
        );
    }
}
