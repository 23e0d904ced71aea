//! The release check (`UPDATE_CHECK_ENABLED`, off by default): once a day the newest release is
//! read from `UPDATE_CHECK_URL` (a GitHub-style `releases/latest` document) through a client that
//! refuses private and loopback addresses whatever the configuration, and kept for the system
//! status and the admin page. A failure is quiet: the last answer stays, nothing else waits on it.

use jiff::Timestamp;
use mycorrhizal_engine::Engine;
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use crate::build_info;
use crate::crm::{Error, Result, blocking};

const TABLE: &str = "map:release_check";
const KEY: &str = "latest";
/// Most bytes of a release document read.
const MAX_DOCUMENT: usize = 256 * 1024;

/// The newest release as last read.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Latest {
    pub version: String,
    pub url: Option<String>,
    pub published_at: Option<String>,
    pub checked_at: Timestamp,
}

/// The `update` facet of the system status.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct UpdateStatus {
    pub enabled: bool,
    pub current: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub latest: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub update_available: Option<bool>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub release_url: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(value_type = Option<String>)]
    pub checked_at: Option<Timestamp>,
}

#[derive(Deserialize)]
struct Document {
    tag_name: String,
    #[serde(default)]
    html_url: Option<String>,
    #[serde(default)]
    published_at: Option<String>,
}

/// The version a release document names (`v1.2.3` is `1.2.3`), refused when it is not one.
pub fn parse(body: &[u8]) -> std::result::Result<(String, Option<String>, Option<String>), String> {
    let doc: Document = serde_json::from_slice(body).map_err(|_| "not a release document".to_string())?;
    let version = doc.tag_name.trim().trim_start_matches('v').to_string();
    if version.is_empty()
        || version.len() > 64
        || !version.chars().all(|c| c.is_ascii_alphanumeric() || ".-+".contains(c))
    {
        return Err("the release names no version".into());
    }
    let url = doc.html_url.filter(|u| u.starts_with("https://") && u.len() <= 2000);
    Ok((version, url, doc.published_at))
}

/// Whether `latest` is newer than `current`: numeric parts compared in order (`1.10.0` is
/// newer than `1.9.2`); a pre-release (`-rc1`) is older than its release.
pub fn newer(latest: &str, current: &str) -> bool {
    fn key(v: &str) -> (Vec<u64>, bool) {
        let (core, pre) = match v.split_once(['-', '+']) {
            Some((core, _)) => (core, true),
            None => (v, false),
        };
        (core.split('.').map(|p| p.parse().unwrap_or(0)).collect(), !pre)
    }
    let (l, c) = (key(latest), key(current));
    let width = l.0.len().max(c.0.len());
    let pad = |mut v: Vec<u64>| {
        v.resize(width, 0);
        v
    };
    (pad(l.0), l.1) > (pad(c.0), c.1)
}

/// Reads the newest release from `url` and keeps it. Private and loopback addresses are refused
/// always.
pub async fn check(engine: &Engine, url: &str) -> Result<Latest> {
    let client = crate::outbound::guarded_client(true, std::time::Duration::from_secs(10)).map_err(Error::internal)?;
    crate::outbound::check(url, true).await.map_err(Error::internal)?;
    let mut answer = client
        .get(url)
        .header("accept", "application/vnd.github+json, application/json")
        .send()
        .await
        .map_err(|e| Error::internal(format!("the release feed cannot be reached: {}", e.without_url())))?;
    if !answer.status().is_success() {
        return Err(Error::internal(format!("the release feed answered {}", answer.status().as_u16())));
    }
    // Read at most MAX_DOCUMENT bytes, whatever the feed claims or sends.
    let mut body = Vec::new();
    while let Some(chunk) = answer.chunk().await.map_err(|e| Error::internal(e.without_url()))? {
        if body.len() + chunk.len() > MAX_DOCUMENT {
            return Err(Error::internal("the release document is too large"));
        }
        body.extend_from_slice(&chunk);
    }
    let (version, url, published_at) = parse(&body).map_err(Error::internal)?;
    let latest = Latest { version, url, published_at, checked_at: engine.clock().now() };
    let bytes = serde_json::to_vec(&latest).map_err(Error::internal)?;
    engine.write_async(move |tx| tx.global().map_put(TABLE, KEY, &bytes)).await?;
    Ok(latest)
}

/// The `update` facet: what the last check found against this build.
pub async fn status(engine: &Engine, enabled: bool) -> Result<UpdateStatus> {
    let stored = blocking(engine, |engine| engine.global()?.map_get(TABLE, KEY)).await??;
    let latest: Option<Latest> = stored.and_then(|b| serde_json::from_slice(&b).ok());
    let current = build_info::VERSION.to_string();
    Ok(UpdateStatus {
        enabled,
        update_available: latest.as_ref().map(|l| newer(&l.version, &current)),
        latest: latest.as_ref().map(|l| l.version.clone()),
        release_url: latest.as_ref().and_then(|l| l.url.clone()),
        checked_at: latest.as_ref().map(|l| l.checked_at),
        current,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn versions_compare_by_their_numbers_and_a_prerelease_is_older() {
        assert!(newer("1.10.0", "1.9.2"));
        assert!(newer("2.0", "1.99.99"));
        assert!(!newer("1.2.3", "1.2.3"));
        assert!(!newer("1.2.3-rc1", "1.2.3"));
        assert!(newer("1.2.3", "1.2.3-rc1"));
        assert!(!newer("0.9.0", "1.0.0"));
    }

    #[test]
    fn a_release_document_gives_its_version_and_page() {
        let doc =
            br#"{"tag_name":"v1.4.0","html_url":"https://example.org/r/1.4.0","published_at":"2026-11-30T10:00:00Z"}"#;
        let (version, url, at) = parse(doc).unwrap();
        assert_eq!((version.as_str(), url.as_deref()), ("1.4.0", Some("https://example.org/r/1.4.0")));
        assert_eq!(at.as_deref(), Some("2026-11-30T10:00:00Z"));
        assert!(parse(br#"{"tag_name":"<script>"}"#).is_err());
        assert!(parse(b"not json").is_err());
        let (_, url, _) = parse(br#"{"tag_name":"1.0","html_url":"javascript:alert(1)"}"#).unwrap();
        assert_eq!(url, None, "only an https page is kept");
    }
}
