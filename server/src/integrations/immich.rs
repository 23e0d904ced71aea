//! The photo library: Immich's HTTP API with the user's API key (`x-api-key`).
//!
//! Used: `GET /api/server/ping` and `/api/users/me` (the connection test), `GET /api/people`
//! (the people to link a contact to), `GET /api/people/{id}` and `/statistics`,
//! `POST /api/search/metadata` with `personIds` (a person's newest photos),
//! `GET /api/people/{id}/thumbnail` (their face) and `GET /api/assets/{id}/thumbnail` (a
//! photo's thumbnail). Images pass through this server, checked to be a picture and at most
//! 10 MB; the key never leaves it.
//!
//! The sync ([`sync_user`], the `photo_library_sync` job every `PHOTO_LIBRARY_SYNC_INTERVAL_HOURS`)
//! records each linked person's [`RECENT`] newest photos as `photo-appearance` activities,
//! and gives a contact without a picture the person's face.

use jiff::Timestamp;
use mycorrhizal_engine::UserScope;
use reqwest::Method;
use serde::Serialize;
use serde_json::{Map, Value, json};
use utoipa::ToSchema;

use super::remote::{Call, Failure, TestResult, join, segment};
use super::{Error, Integrations, Result, System};
use crate::crm::external::ExternalIdentity;
use crate::crm::external::ops::{self as links, ExternalIdentityView, Seen};

/// Photos recorded per person and sync.
pub const RECENT: usize = 25;
/// Photos offered to pick a picture from.
pub const PICKABLE: usize = 30;
/// The activity type of a photo a person appears in.
pub const APPEARANCE: &str = "photo-appearance";
const PAGE: usize = 500;
const MAX_PAGES: usize = 20;

/// A person of the library.
#[derive(Debug, Clone, PartialEq, Serialize, ToSchema)]
#[schema(as = ImmichPerson)]
pub struct Person {
    pub id: String,
    pub name: String,
}

/// A photo of the library.
#[derive(Debug, Clone, PartialEq, Serialize, ToSchema)]
#[schema(as = ImmichAsset)]
pub struct Asset {
    pub id: String,
    #[schema(value_type = String)]
    pub occurred_at: Timestamp,
}

fn text(v: &Value, key: &str) -> String {
    v.get(key).and_then(Value::as_str).unwrap_or_default().to_string()
}

/// A page of `GET /api/people`: the people and whether there is another page. Both shapes
/// Immich has answered: `{people: [..], total, hasNextPage}` and `{people: {items, hasNextPage}}`.
pub fn parse_people(bytes: &[u8]) -> std::result::Result<(Vec<Person>, bool), String> {
    let doc: Value = serde_json::from_slice(bytes).map_err(|e| format!("not JSON: {e}"))?;
    let (list, next) = match doc.get("people") {
        Some(Value::Array(list)) => (list, doc.get("hasNextPage").and_then(Value::as_bool).unwrap_or(false)),
        Some(Value::Object(o)) => match o.get("items") {
            Some(Value::Array(list)) => (list, o.get("hasNextPage").and_then(Value::as_bool).unwrap_or(false)),
            _ => return Err("`people.items` is not a list".into()),
        },
        _ => return Err("no `people` list".into()),
    };
    let people = list
        .iter()
        .filter_map(|p| {
            let id = text(p, "id");
            (!id.is_empty() && id.len() <= 255).then(|| Person { id, name: text(p, "name") })
        })
        .collect();
    Ok((people, next))
}

/// `POST /api/search/metadata`'s answer: the photos and the next page's name, if any.
pub fn parse_assets(bytes: &[u8]) -> std::result::Result<(Vec<Asset>, Option<String>), String> {
    let doc: Value = serde_json::from_slice(bytes).map_err(|e| format!("not JSON: {e}"))?;
    let assets = doc.get("assets").ok_or("no `assets`")?;
    let items = assets.get("items").and_then(Value::as_array).ok_or("`assets.items` is not a list")?;
    let found = items
        .iter()
        .filter_map(|a| {
            let id = text(a, "id");
            if id.is_empty() || id.len() > 255 {
                return None;
            }
            let at = ["fileCreatedAt", "localDateTime", "createdAt"]
                .iter()
                .find_map(|k| a.get(*k).and_then(Value::as_str).and_then(|t| t.parse::<Timestamp>().ok()))?;
            Some(Asset { id, occurred_at: at })
        })
        .collect();
    let next = match assets.get("nextPage") {
        Some(Value::String(s)) if !s.is_empty() => Some(s.clone()),
        Some(Value::Number(n)) => Some(n.to_string()),
        _ => None,
    };
    Ok((found, next))
}

/// `GET /api/people/{id}/statistics`: how many photos show the person.
pub fn parse_statistics(bytes: &[u8]) -> std::result::Result<u64, String> {
    let doc: Value = serde_json::from_slice(bytes).map_err(|e| format!("not JSON: {e}"))?;
    doc.get("assets").and_then(Value::as_u64).ok_or_else(|| "no `assets` count".into())
}

async fn bytes_of(
    call: &mut Call<'_>,
    method: Method,
    url: &str,
    body: Option<Value>,
) -> std::result::Result<Vec<u8>, Failure> {
    let answer = call.send(method, url, body.map(super::remote::Body::Json), false).await?;
    call.read(answer, super::remote::MAX_DOCUMENT).await
}

fn api(call: &Call<'_>, path: &str) -> String {
    join(&call.opened.base_url, path)
}

/// The connection test: the server answers, then the key is accepted.
pub async fn test(i: &Integrations, user: u64) -> Result<TestResult> {
    let mut call = Call::new(i, user, System::Immich)?.testing();
    let ping = api(&call, "/api/server/ping");
    if let Err(f) = call.send(Method::GET, &ping, None, true).await {
        call.finish().await;
        return Ok(TestResult::failed(System::Immich, &f));
    }
    let me = api(&call, "/api/users/me");
    let outcome = call.json::<Value>(Method::GET, &me, None).await;
    call.finish().await;
    Ok(match outcome {
        Ok(me) => TestResult::ok(format!("Connected to Immich as {}", text(&me, "email"))),
        Err(f) => TestResult::failed(System::Immich, &f),
    })
}

async fn people_of(call: &mut Call<'_>) -> std::result::Result<Vec<Person>, Failure> {
    let mut all = Vec::new();
    for page in 1..=MAX_PAGES {
        let url = api(call, &format!("/api/people?withHidden=false&size={PAGE}&page={page}"));
        let bytes = bytes_of(call, Method::GET, &url, None).await?;
        let (people, next) = parse_people(&bytes).or_else(|e| call.fail(Failure::Unreadable(e)))?;
        let short = people.len() < PAGE;
        all.extend(people);
        if !next || short {
            break;
        }
    }
    Ok(all)
}

/// The library's people, by name (unnamed last).
pub async fn people(i: &Integrations, user: u64) -> Result<Vec<Person>> {
    let mut call = Call::new(i, user, System::Immich)?;
    let outcome = people_of(&mut call).await;
    let mut people = call.settle(outcome).await?;
    people.sort_by(|a, b| (a.name.is_empty(), a.name.to_lowercase()).cmp(&(b.name.is_empty(), b.name.to_lowercase())));
    Ok(people)
}

/// A person's newest `limit` photos.
async fn recent(call: &mut Call<'_>, person: &str, limit: usize) -> std::result::Result<Vec<Asset>, Failure> {
    let url = api(call, "/api/search/metadata");
    let mut found: Vec<Asset> = Vec::new();
    let mut page: Option<String> = None;
    for _ in 0..10 {
        let mut body = json!({ "personIds": [person], "size": limit.min(1000), "order": "desc" });
        if let Some(p) = &page {
            body["page"] = p.parse::<u64>().map(Value::from).unwrap_or_else(|_| Value::from(p.clone()));
        }
        let bytes = bytes_of(call, Method::POST, &url, Some(body)).await?;
        let (assets, next) = parse_assets(&bytes).or_else(|e| call.fail(Failure::Unreadable(e)))?;
        found.extend(assets);
        match next {
            Some(n) if found.len() < limit && page.as_ref() != Some(&n) => page = Some(n),
            _ => break,
        }
    }
    found.sort_by(|a, b| b.occurred_at.cmp(&a.occurred_at));
    found.dedup_by(|a, b| a.id == b.id);
    found.truncate(limit);
    Ok(found)
}

/// The contact named by `uid` (its vCard UID or id) and its Immich identity.
fn linked(scope: &UserScope, uid: &str) -> Result<(u64, Option<mycorrhizal_engine::Row<ExternalIdentity>>)> {
    let v = scope.view().map_err(crate::crm::Error::from)?;
    let contact = crate::crm::contact::named(&v, uid).ok_or(crate::crm::Error::NotFound)?;
    let identity = links::of_contact(&v, contact)?.into_iter().find(|r| r.body.system == System::Immich.name());
    Ok((contact, identity))
}

async fn linked_async(
    scope: &UserScope,
    uid: &str,
) -> Result<(u64, Option<mycorrhizal_engine::Row<ExternalIdentity>>)> {
    let (scope, uid) = (scope.clone(), uid.to_string());
    tokio::task::spawn_blocking(move || linked(&scope, &uid)).await.map_err(crate::crm::Error::internal)?
}

fn not_linked() -> Error {
    Error::Missing("This contact is not linked to an Immich person.".into())
}

/// Links contact `uid` to person `person_id` (checked with the library, which also names it
/// when `person_name` is left out). One person links one contact.
pub async fn link(
    i: &Integrations,
    scope: &UserScope,
    user: u64,
    uid: &str,
    person_id: &str,
    person_name: Option<&str>,
) -> Result<ExternalIdentityView> {
    let person_id = person_id.trim();
    if person_id.is_empty() || person_id.len() > 255 {
        return Err(crate::crm::Error::invalid("person_id", "is required: 1 to 255 characters").into());
    }
    let (contact, existing) = linked_async(scope, uid).await?;
    if existing.is_some() {
        return Err(crate::crm::Error::Conflict(
            "This contact is already linked to an Immich person: unlink it first.".into(),
        )
        .into());
    }
    let mut call = Call::new(i, user, System::Immich)?;
    let url = api(&call, &format!("/api/people/{}", segment(person_id)));
    let outcome = call.json::<Value>(Method::GET, &url, None).await;
    let base = call.opened.base_url.clone();
    let person = call.settle(outcome).await?;
    let name =
        person_name.map(str::trim).filter(|n| !n.is_empty()).map(String::from).unwrap_or_else(|| text(&person, "name"));
    let mut metadata = Map::new();
    metadata.insert("person_name".into(), Value::from(name.chars().take(200).collect::<String>()));
    super::save_link(
        scope,
        contact,
        System::Immich,
        person_id.to_string(),
        join(&base, &format!("/people/{}", segment(person_id))),
        metadata,
    )
    .await
}

/// Removes contact `uid`'s link to its person; the photos recorded stay on its timeline.
pub async fn unlink(scope: &UserScope, uid: &str) -> Result<()> {
    let (_, identity) = linked_async(scope, uid).await?;
    let identity = identity.ok_or_else(not_linked)?;
    links::delete_identity(scope, identity.id).await?;
    Ok(())
}

/// What the contact page shows of a linked person.
#[derive(Debug, Clone, Serialize, ToSchema)]
#[schema(as = ImmichPersonSummary)]
pub struct Summary {
    pub identity: ExternalIdentityView,
    pub person_name: String,
    pub photo_count: u64,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub latest_asset_id: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(value_type = Option<String>)]
    pub latest_at: Option<Timestamp>,
}

/// The linked person as the last sync saw it (no request to the library), `None` unlinked.
pub fn summary(scope: &UserScope, uid: &str) -> Result<Option<Summary>> {
    let (_, identity) = linked(scope, uid)?;
    let Some(identity) = identity else { return Ok(None) };
    let v = scope.view().map_err(crate::crm::Error::from)?;
    let view = ExternalIdentityView::of(&v, &identity);
    let m = &view.metadata;
    Ok(Some(Summary {
        person_name: text(m, "person_name"),
        photo_count: m.get("photo_count").and_then(Value::as_u64).unwrap_or(0),
        latest_asset_id: Some(text(m, "latest_asset_id")).filter(|s| !s.is_empty()),
        latest_at: m.get("latest_at").and_then(Value::as_str).and_then(|t| t.parse().ok()),
        identity: view,
    }))
}

/// What a contact's detail says of the photo library: nothing when the user has not connected
/// it, else `{summary}` (null when the contact is not linked).
pub fn detail(i: &Integrations, scope: &UserScope, user: u64, contact: u64) -> Result<Option<Value>> {
    if super::config::read(i, user)?.immich.is_none() {
        return Ok(None);
    }
    let summary = summary(scope, &contact.to_string())?;
    Ok(Some(json!({ "summary": summary })))
}

/// An image fetched from the library: a JPEG, PNG, GIF or WebP of at most 10 MB.
#[derive(Debug)]
pub struct Image {
    pub mime: &'static str,
    pub bytes: Vec<u8>,
}

async fn image(call: &mut Call<'_>, path: &str) -> std::result::Result<Image, Failure> {
    let url = api(call, path);
    let answer = call.send(Method::GET, &url, None, false).await?;
    let bytes = call.read(answer, super::remote::MAX_IMAGE).await?;
    match crate::crm::contact::picture::sniff(&bytes) {
        Some((mime, _)) => Ok(Image { mime, bytes }),
        None => call.fail(Failure::Unreadable("not a JPEG, PNG, GIF or WebP image".into())),
    }
}

/// The linked person's face.
pub async fn face(i: &Integrations, scope: &UserScope, user: u64, uid: &str) -> Result<Image> {
    let (_, identity) = linked_async(scope, uid).await?;
    let identity = identity.ok_or_else(not_linked)?;
    let mut call = Call::new(i, user, System::Immich)?;
    let outcome = image(&mut call, &format!("/api/people/{}/thumbnail", segment(&identity.body.external_id))).await;
    call.settle(outcome).await
}

/// The linked person's newest photos (to pick a picture from), recorded on the timeline too.
pub async fn assets(i: &Integrations, scope: &UserScope, user: u64, uid: &str) -> Result<Vec<Asset>> {
    let (_, identity) = linked_async(scope, uid).await?;
    let identity = identity.ok_or_else(not_linked)?;
    let mut call = Call::new(i, user, System::Immich)?;
    let outcome = recent(&mut call, &identity.body.external_id, PICKABLE).await;
    let found = call.settle(outcome).await?;
    let seen = found.iter().map(|a| appearance(&identity.body, a)).collect();
    links::record_sync(scope, identity.id, seen, Map::new()).await?;
    Ok(found)
}

/// A photo's thumbnail, only of a photo recorded as showing this contact.
pub async fn asset_image(i: &Integrations, scope: &UserScope, user: u64, uid: &str, asset: &str) -> Result<Image> {
    let (contact, identity) = linked_async(scope, uid).await?;
    identity.ok_or_else(not_linked)?;
    let (reader, asset_id) = (scope.clone(), asset.to_string());
    let shown = tokio::task::spawn_blocking(move || {
        links::has_activity(&reader.view()?, System::Immich.name(), &asset_id, contact)
    })
    .await
    .map_err(crate::crm::Error::internal)??;
    if !shown {
        return Err(Error::Missing("No photo of this contact has that id.".into()));
    }
    let mut call = Call::new(i, user, System::Immich)?;
    let outcome = image(&mut call, &format!("/api/assets/{}/thumbnail", segment(asset))).await;
    call.settle(outcome).await
}

/// Makes a photo of this contact (one recorded as showing them) its picture.
pub async fn use_as_picture(i: &Integrations, scope: &UserScope, user: u64, uid: &str, asset: &str) -> Result<()> {
    let img = asset_image(i, scope, user, uid, asset).await?;
    let contact = super::contact_of(scope, uid).await?;
    crate::crm::contact::picture::store(scope, contact, img.bytes).await?;
    Ok(())
}

fn appearance(identity: &ExternalIdentity, a: &Asset) -> Seen {
    let person_name =
        serde_json::from_str::<Value>(&identity.metadata).ok().map(|m| text(&m, "person_name")).unwrap_or_default();
    let mut payload = Map::new();
    payload.insert("person_id".into(), Value::from(identity.external_id.clone()));
    payload.insert("person_name".into(), Value::from(person_name));
    payload.insert("asset_id".into(), Value::from(a.id.clone()));
    Seen { external_id: a.id.clone(), kind: APPEARANCE.into(), occurred_at: a.occurred_at, payload }
}

/// What one user's sync did.
#[derive(Debug, Clone, Default, Serialize, ToSchema)]
#[schema(as = ImmichSyncResult)]
pub struct Synced {
    pub message: String,
    /// Linked people synced.
    pub people: usize,
    /// Photos newly recorded on timelines.
    pub photos_added: usize,
    /// Contacts that got the person's face as their picture.
    pub pictures_filled: usize,
    /// People that failed (their link's `sync_status` is `error`).
    pub failed: usize,
}

/// Syncs every linked person of `user` (the job, and "sync now"). A person that fails is
/// marked and the others go on; the first failure is the sync's error.
pub async fn sync_user(i: &Integrations, user: u64) -> Result<Synced> {
    let scope = i.engine.user(mycorrhizal_engine::UserId(user));
    let reader = scope.clone();
    let identities = tokio::task::spawn_blocking(move || links::of_system(&reader.view()?, System::Immich.name()))
        .await
        .map_err(crate::crm::Error::internal)??;
    let mut call = Call::new(i, user, System::Immich)?;
    let mut done = Synced { people: identities.len(), ..Synced::default() };
    let mut first: Option<Failure> = None;
    for identity in identities {
        let person = identity.body.external_id.clone();
        let stats = api(&call, &format!("/api/people/{}/statistics", segment(&person)));
        let count = match bytes_of(&mut call, Method::GET, &stats, None).await {
            Ok(bytes) => parse_statistics(&bytes).or_else(|e| call.fail(Failure::Unreadable(e))),
            Err(f) => Err(f),
        };
        let photos = match count {
            Ok(count) => recent(&mut call, &person, RECENT).await.map(|p| (count, p)),
            Err(f) => Err(f),
        };
        let (count, photos) = match photos {
            Ok(found) => found,
            Err(f) => {
                done.failed += 1;
                first.get_or_insert(f);
                // Unlinked meanwhile: nothing to mark.
                let _ = links::mark_error(&scope, identity.id).await;
                continue;
            }
        };
        let latest = photos.first().cloned();
        let mut metadata = Map::new();
        metadata.insert("photo_count".into(), Value::from(count));
        metadata
            .insert("latest_asset_id".into(), Value::from(latest.as_ref().map(|a| a.id.clone()).unwrap_or_default()));
        metadata.insert(
            "latest_at".into(),
            latest.as_ref().map(|a| Value::from(a.occurred_at.to_string())).unwrap_or(Value::Null),
        );
        let seen = photos.iter().map(|a| appearance(&identity.body, a)).collect();
        match links::record_sync(&scope, identity.id, seen, metadata).await {
            Ok(added) => done.photos_added += added,
            // Unlinked (or its contact deleted) while the sync ran: this person is done.
            Err(e) => {
                tracing::info!(event = "photo_sync_skipped", component = "immich", error = %e);
                continue;
            }
        }
        // Optional: a face that cannot be fetched fails nothing (a call of its own, unrecorded).
        let mut scratch = Call::of(i, call.opened.clone());
        match fill_picture(&mut scratch, &scope, identity.body.contact_id, &person).await {
            Ok(true) => done.pictures_filled += 1,
            Ok(false) => {}
            Err(e) => tracing::warn!(event = "picture_fill_failed", component = "immich", error = %e),
        }
    }
    let outcome = match &first {
        None => Ok(()),
        Some(f) => Err(f.message(System::Immich)),
    };
    call.finish().await;
    super::config::record_sync(i, user, outcome).await;
    done.message = match &first {
        None => "Immich sync completed".into(),
        Some(f) => format!("Immich sync finished with {} failure(s): {}", done.failed, f.message(System::Immich)),
    };
    match first {
        Some(f) if done.failed == done.people => {
            Err(Error::Remote { system: System::Immich, message: f.message(System::Immich) })
        }
        _ => Ok(done),
    }
}

/// Gives `contact` the person's face when it has no picture; whether it did. A face that is
/// not a picture we keep, or a contact given one meanwhile, changes nothing.
async fn fill_picture(call: &mut Call<'_>, scope: &UserScope, contact: u64, person: &str) -> Result<bool> {
    let reader = scope.clone();
    let has = tokio::task::spawn_blocking(move || {
        reader.view().and_then(|v| v.get::<crate::crm::contact::Contact>(contact)).map(|c| !c.body.photo.is_empty())
    })
    .await
    .map_err(crate::crm::Error::internal)?
    .map_err(crate::crm::Error::from)?;
    if has {
        return Ok(false);
    }
    let Ok(face) = image(call, &format!("/api/people/{}/thumbnail", segment(person))).await else {
        return Ok(false);
    };
    if !crate::crm::contact::picture::keeps(&face.bytes) {
        return Ok(false);
    }
    let bytes = std::sync::Arc::new(face.bytes);
    let filled = scope
        .write_async(move |tx| {
            if !tx.get::<crate::crm::contact::Contact>(contact)?.body.photo.is_empty() {
                return Ok(false);
            }
            crate::crm::contact::picture::put_in(tx, contact, &bytes).map(|_| true)
        })
        .await
        .map_err(crate::crm::Error::from)?;
    Ok(filled)
}

/// Every user with Immich configured and its sync on: one sync each (the job's step). Returns
/// (users synced, users failed).
pub async fn sync_all(i: &Integrations) -> Result<(u64, u64)> {
    let users = super::config::configured(i, System::Immich)?;
    let (mut ok, mut failed) = (0, 0);
    for (user, connection) in users {
        if !connection.sync_enabled {
            continue;
        }
        match sync_user(i, user).await {
            Ok(s) if s.failed == 0 => ok += 1,
            _ => failed += 1,
        }
    }
    Ok((ok, failed))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn both_shapes_of_the_people_list_are_read() {
        let flat = br#"{"people":[{"id":"p1","name":"Ada"},{"id":"","name":"x"}],"total":1,"hasNextPage":false}"#;
        assert_eq!(parse_people(flat).unwrap(), (vec![Person { id: "p1".into(), name: "Ada".into() }], false));
        let nested = br#"{"people":{"items":[],"hasNextPage":true}}"#;
        assert_eq!(parse_people(nested).unwrap(), (vec![], true));
        assert!(parse_people(b"[]").is_err());
    }

    #[test]
    fn assets_take_the_file_date_and_the_next_page() {
        let doc = br#"{"assets":{"items":[{"id":"a1","fileCreatedAt":"2025-03-01T10:00:00.000Z"},{"id":"a2"}],"nextPage":"2"}}"#;
        let (assets, next) = parse_assets(doc).unwrap();
        assert_eq!(assets.len(), 1, "an asset without a date is left out");
        assert_eq!(assets[0].id, "a1");
        assert_eq!(next.as_deref(), Some("2"));
        assert_eq!(parse_statistics(br#"{"assets":12}"#).unwrap(), 12);
    }
}
