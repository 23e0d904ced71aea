//! The document archive: Paperless-ngx's REST API with the user's token
//! (`Authorization: Token <token>`).
//!
//! Used: `GET /api/` and `/api/ui_settings/` (the connection test), `GET /api/documents/`
//! with `query` (full text), `correspondent__id` or `tags__id__all`, newest added first,
//! `GET /api/documents/{id}/` (a document to link), `GET /api/correspondents/` and
//! `GET /api/tags/` (to find documents by them). A linked document is an external identity
//! (`paperless`, its id) whose link opens it in Paperless.

use mycorrhizal_engine::UserScope;
use reqwest::Method;
use serde::Serialize;
use serde_json::{Map, Value};
use utoipa::ToSchema;

use super::remote::{Call, Failure, TestResult, join};
use super::{Integrations, Result, System};
use crate::crm::external::ops::ExternalIdentityView;

/// Most documents one search returns.
pub const MAX_RESULTS: usize = 100;
const PAGE: usize = 100;

/// A document of the archive.
#[derive(Debug, Clone, PartialEq, Serialize, ToSchema)]
#[schema(as = PaperlessDocument)]
pub struct Document {
    pub id: u64,
    pub title: String,
    pub file_name: String,
    /// The document's date (`YYYY-MM-DD` or an instant, as Paperless says).
    pub created: String,
    pub added: String,
    /// In Paperless.
    pub url: String,
}

/// A correspondent or a tag.
#[derive(Debug, Clone, PartialEq, Serialize, ToSchema)]
#[schema(as = PaperlessLabel)]
pub struct Label {
    pub id: u64,
    pub name: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub document_count: Option<u64>,
}

fn text(v: &Value, key: &str) -> String {
    v.get(key).and_then(Value::as_str).unwrap_or_default().to_string()
}

fn document_of(v: &Value) -> Option<Document> {
    let id = v.get("id").and_then(Value::as_u64).filter(|id| *id > 0)?;
    let file_name = match text(v, "original_file_name") {
        name if name.is_empty() => text(v, "file_name"),
        name => name,
    };
    Some(Document {
        id,
        title: text(v, "title"),
        file_name,
        created: match text(v, "created_date") {
            d if d.is_empty() => text(v, "created"),
            d => d,
        },
        added: text(v, "added"),
        url: String::new(),
    })
}

/// A page of a Paperless list: its `results` read by `item`, and whether `next` names a page.
fn page_of<T>(bytes: &[u8], item: impl Fn(&Value) -> Option<T>) -> std::result::Result<(Vec<T>, bool), String> {
    let doc: Value = serde_json::from_slice(bytes).map_err(|e| format!("not JSON: {e}"))?;
    let results = doc.get("results").and_then(Value::as_array).ok_or("no `results` list")?;
    let more = doc.get("next").is_some_and(|n| n.as_str().is_some_and(|s| !s.is_empty()));
    Ok((results.iter().filter_map(item).collect(), more))
}

/// A page of `GET /api/documents/`.
pub fn parse_documents(bytes: &[u8]) -> std::result::Result<(Vec<Document>, bool), String> {
    page_of(bytes, document_of)
}

/// One `GET /api/documents/{id}/`.
pub fn parse_document(bytes: &[u8]) -> std::result::Result<Document, String> {
    let doc: Value = serde_json::from_slice(bytes).map_err(|e| format!("not JSON: {e}"))?;
    document_of(&doc).ok_or_else(|| "no document id".into())
}

/// A page of correspondents or tags.
pub fn parse_labels(bytes: &[u8]) -> std::result::Result<(Vec<Label>, bool), String> {
    page_of(bytes, |v| {
        Some(Label {
            id: v.get("id").and_then(Value::as_u64)?,
            name: text(v, "name"),
            document_count: v.get("document_count").and_then(Value::as_u64),
        })
    })
}

fn api(call: &Call<'_>, path: &str) -> String {
    join(&call.opened.base_url, path)
}

async fn get(call: &mut Call<'_>, url: &str) -> std::result::Result<Vec<u8>, Failure> {
    let answer = call.send(Method::GET, url, None, false).await?;
    call.read(answer, super::remote::MAX_DOCUMENT).await
}

/// The connection test: the API answers the token, then names the account.
pub async fn test(i: &Integrations, user: u64) -> Result<TestResult> {
    let mut call = Call::new(i, user, System::Paperless)?.testing();
    let root = api(&call, "/api/");
    if let Err(f) = call.send(Method::GET, &root, None, false).await {
        call.finish().await;
        return Ok(TestResult::failed(System::Paperless, &f));
    }
    let settings = api(&call, "/api/ui_settings/");
    let outcome = call.json::<Value>(Method::GET, &settings, None).await;
    call.finish().await;
    Ok(match outcome {
        Ok(s) => {
            let name = s.get("user").map(|u| text(u, "username")).unwrap_or_default();
            TestResult::ok(if name.is_empty() {
                "Connected to Paperless".into()
            } else {
                format!("Connected to Paperless as {name}")
            })
        }
        Err(f) => TestResult::failed(System::Paperless, &f),
    })
}

/// What documents are asked for.
#[derive(Debug, Clone, Default)]
pub struct Search {
    /// Full text.
    pub query: Option<String>,
    pub correspondent: Option<u64>,
    pub tag: Option<u64>,
}

/// The pages of a Paperless list at `path` (with `?` and its filters, no page), read by
/// `parse`, until no next page or `most` pages.
async fn pages<T>(
    call: &mut Call<'_>,
    path: &str,
    most: usize,
    parse: fn(&[u8]) -> std::result::Result<(Vec<T>, bool), String>,
) -> std::result::Result<Vec<T>, Failure> {
    let mut found = Vec::new();
    for page in 1..=most {
        let url = api(call, &format!("{path}&page_size={PAGE}&page={page}"));
        let bytes = get(call, &url).await?;
        let (list, more) = parse(&bytes).or_else(|e| call.fail(Failure::Unreadable(e)))?;
        found.extend(list);
        if !more {
            break;
        }
    }
    Ok(found)
}

/// Documents matching `search`, newest added first, at most [`MAX_RESULTS`].
pub async fn documents(i: &Integrations, user: u64, search: &Search) -> Result<Vec<Document>> {
    let mut call = Call::new(i, user, System::Paperless)?;
    let mut filter = String::new();
    if let Some(q) = search.query.as_deref().map(str::trim).filter(|q| !q.is_empty()) {
        filter.push_str(&format!("&query={}", super::remote::segment(q)));
    }
    if let Some(c) = search.correspondent {
        filter.push_str(&format!("&correspondent__id={c}"));
    }
    if let Some(t) = search.tag {
        filter.push_str(&format!("&tags__id__all={t}"));
    }
    let base = call.opened.base_url.clone();
    let most = MAX_RESULTS.div_ceil(PAGE);
    let outcome = pages(&mut call, &format!("/api/documents/?ordering=-added{filter}"), most, parse_documents).await;
    let mut found = call.settle(outcome).await?;
    found.truncate(MAX_RESULTS);
    for d in &mut found {
        d.url = join(&base, &format!("/documents/{}/details", d.id));
    }
    Ok(found)
}

/// The archive's correspondents (`tags = false`) or tags, by name.
pub async fn labels(i: &Integrations, user: u64, tags: bool) -> Result<Vec<Label>> {
    let mut call = Call::new(i, user, System::Paperless)?;
    let what = if tags { "tags" } else { "correspondents" };
    let outcome = pages(&mut call, &format!("/api/{what}/?ordering=name"), 10, parse_labels).await;
    call.settle(outcome).await
}

/// Links document `document_id` (checked with the archive, which names it) to contact `uid`.
pub async fn link(
    i: &Integrations,
    scope: &UserScope,
    user: u64,
    uid: &str,
    document_id: &str,
) -> Result<ExternalIdentityView> {
    let id: u64 = document_id.trim().parse().ok().filter(|id| *id > 0).ok_or_else(|| {
        crate::crm::Error::invalid("document_id", "must be a Paperless document id (a positive number)")
    })?;
    let contact = super::contact_of(scope, uid).await?;
    let mut call = Call::new(i, user, System::Paperless)?;
    let url = api(&call, &format!("/api/documents/{id}/"));
    let parsed = match get(&mut call, &url).await {
        Ok(bytes) => parse_document(&bytes).or_else(|e| call.fail(Failure::Unreadable(e))),
        Err(f) => Err(f),
    };
    let base = call.opened.base_url.clone();
    let doc = call.settle(parsed).await?;
    let mut metadata = Map::new();
    metadata.insert("title".into(), Value::from(doc.title.clone()));
    metadata.insert("file_name".into(), Value::from(doc.file_name.clone()));
    metadata.insert("created_at".into(), Value::from(doc.created.clone()));
    super::save_link(
        scope,
        contact,
        System::Paperless,
        doc.id.to_string(),
        join(&base, &format!("/documents/{}/details", doc.id)),
        metadata,
    )
    .await
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_page_of_documents_is_read() {
        let page = br#"{"count":2,"next":"http://p/api/documents/?page=2","results":[
            {"id":7,"title":"Lease","original_file_name":"lease.pdf","created_date":"2024-05-01","added":"2024-05-02T10:00:00Z"},
            {"id":0,"title":"bad"}]}"#;
        let (docs, more) = parse_documents(page).unwrap();
        assert!(more);
        assert_eq!(docs.len(), 1);
        assert_eq!((docs[0].id, docs[0].file_name.as_str(), docs[0].created.as_str()), (7, "lease.pdf", "2024-05-01"));
        assert!(parse_documents(br#"{"results":{}}"#).is_err());
        let (labels, more) =
            parse_labels(br#"{"next":null,"results":[{"id":3,"name":"Bank","document_count":4}]}"#).unwrap();
        assert!(!more);
        assert_eq!(labels[0], Label { id: 3, name: "Bank".into(), document_count: Some(4) });
    }
}
