//! Integrations in the browser. `/settings/integrations`: each system's settings (the
//! credential never shown, only whether one is stored), its status (answering, failing and why,
//! a credential to enter again after a key change), a connection test, "sync now" for the photo
//! library, and disconnecting. On a contact: the card with the linked person's face and latest
//! photos and the ways to link more, and `/contacts/{id}/link/{system}`, where a person, a
//! document, a file or a folder is found and linked. Every action is an `integrations::`
//! operation the JSON API calls too.

use axum::extract::{Path, Query, State};
use axum::http::StatusCode;
use maud::{Markup, html};
use serde::Deserialize;
use serde_json::Value;

use super::console::when;
use super::page::{Chrome, Form, PageResult, Viewer, field_error, page_with, see_other, shell};
use crate::error::ApiError;
use crate::integrations::config::{self, ConfigInput, ConfigView};
use crate::integrations::{System, health, immich, paperless, seafile, webdav};
use crate::state::AppState;

#[derive(Debug, Default, Deserialize)]
pub struct PageQuery {
    notice: Option<String>,
}

struct Said {
    message: String,
    error: bool,
}

fn said_markup(said: &Option<Said>) -> Markup {
    html! {
        @if let Some(said) = said {
            p class=(if said.error { "error" } else { "notice" }) role=(if said.error { "alert" } else { "status" }) { (said.message) }
        }
    }
}

fn system_of(name: &str) -> Result<System, ApiError> {
    System::parse(name).ok_or(ApiError::NotFound)
}

fn tone(status: &str) -> &'static str {
    match status {
        "ok" => "status ok",
        "failing" | "untested" => "status warn",
        "credential_unreadable" => "status bad",
        _ => "status",
    }
}

fn hint_key(system: System) -> &'static str {
    match system {
        System::Immich => "integrations.immich_hint",
        System::Paperless => "integrations.paperless_hint",
        System::Seafile => "integrations.seafile_hint",
        System::Nextcloud => "integrations.webdav_hint",
    }
}

fn card(c: &Chrome<'_>, viewer: &Viewer, system: System, v: &ConfigView) -> Markup {
    let t = |k| viewer.t(k);
    let name = system.name();
    let configured = v.status != "not_configured";
    let base = format!("/settings/integrations/{name}");
    html! {
        section class="card wide" aria-labelledby=(format!("h-{name}")) {
            h2 id=(format!("h-{name}")) { (system.label()) }
            p class="hint" { (t(hint_key(system))) }
            p { span class=(tone(&v.status)) { (v.status_message) } }
            @if configured {
                dl class="facts" {
                    dt { (t("integrations.last_ok")) } dd { (when(v.last_ok_at)) }
                    @if v.last_failure_at.is_some() { dt { (t("integrations.last_failure")) } dd { (when(v.last_failure_at)) } }
                    @if system == System::Immich {
                        dt { (t("integrations.last_sync")) }
                        dd { (when(v.last_synced_at)) @if v.last_sync_error.as_deref().is_some_and(|e| !e.is_empty()) { " — " (v.last_sync_error.clone().unwrap_or_default()) } }
                    }
                }
                div class="actions" {
                    (c.button_form(&format!("{base}/test"), t("integrations.test"), "", None))
                    @if system == System::Immich { (c.button_form(&format!("{base}/sync"), t("integrations.sync_now"), "", None)) }
                    (c.button_form(&format!("{base}/delete"), t("integrations.disconnect"), "danger", Some(t("integrations.disconnect_confirm"))))
                }
            }
            form method="post" action=(base) class="stack" {
                (c.csrf_field())
                div class="row" {
                    div { label for=(format!("url-{name}")) { (t("integrations.address")) }
                        input id=(format!("url-{name}")) name="base_url" type="url" required maxlength="2000" value=(v.base_url) placeholder=(placeholder(system)); }
                    @if system == System::Nextcloud {
                        div { label for=(format!("user-{name}")) { (t("integrations.username")) }
                            input id=(format!("user-{name}")) name="username" required maxlength="200" autocomplete="off" value=(v.username.clone().unwrap_or_default()); }
                    }
                    div { label for=(format!("secret-{name}")) { (t(secret_key(system))) }
                        input id=(format!("secret-{name}")) name="secret" type="password" maxlength="512" autocomplete="new-password" required[!configured]; }
                }
                @if configured { p class="hint" { (t("integrations.secret_kept")) } }
                @if system == System::Nextcloud { p class="hint" { (t("integrations.app_password_hint")) } }
                @if system == System::Immich {
                    label { input type="checkbox" name="sync_enabled" value="1" checked[v.sync_enabled.unwrap_or(true) || !configured]; " " (t("integrations.sync_enabled")) }
                }
                button type="submit" { (if configured { t("integrations.save") } else { t("integrations.connect") }) }
            }
        }
    }
}

fn placeholder(system: System) -> &'static str {
    match system {
        System::Immich => "https://photos.example.org",
        System::Paperless => "https://paperless.example.org",
        System::Seafile => "https://seafile.example.org",
        System::Nextcloud => "https://cloud.example.org",
    }
}

fn secret_key(system: System) -> &'static str {
    match system {
        System::Immich => "integrations.api_key",
        System::Paperless | System::Seafile => "integrations.api_token",
        System::Nextcloud => "integrations.app_password",
    }
}

async fn show(state: &AppState, viewer: &Viewer, status: StatusCode, said: Option<Said>) -> PageResult {
    let t = |k| viewer.t(k);
    let c = viewer.chrome();
    let (i, user) = (state.integrations.clone(), viewer.user.id.0);
    let views = state
        .blocking(move |_| -> crate::integrations::Result<Vec<(System, ConfigView)>> {
            System::ALL.into_iter().map(|s| Ok((s, config::view(&i, user, s)?))).collect()
        })
        .await?
        .map_err(ApiError::from)?;
    let main = html! {
        h1 { (t("integrations.title")) }
        p { a href="/settings" { (t("settings.title")) } }
        p class="hint" { (t("integrations.hint")) }
        (said_markup(&said))
        @for (system, v) in &views { (card(&c, viewer, *system, v)) }
    };
    Ok(page_with(status, shell(&c, t("integrations.title"), None, main)))
}

pub async fn page(State(state): State<AppState>, viewer: Viewer, Query(q): Query<PageQuery>) -> PageResult {
    let said = match q.notice.as_deref() {
        Some("saved") => Some(Said { message: viewer.t("notice.saved").into(), error: false }),
        Some("deleted") => Some(Said { message: viewer.t("notice.deleted").into(), error: false }),
        _ => None,
    };
    show(&state, &viewer, StatusCode::OK, said).await
}

async fn refused(state: &AppState, viewer: &Viewer, e: impl Into<ApiError>) -> PageResult {
    let e = e.into();
    let (status, message) = field_error(viewer.lang, &e);
    show(state, viewer, status, Some(Said { message, error: true })).await
}

pub async fn save(State(state): State<AppState>, viewer: Viewer, Path(name): Path<String>, form: Form) -> PageResult {
    let system = system_of(&name)?;
    let secret = Some(form.get("secret")).filter(|s| !s.trim().is_empty());
    let input = ConfigInput {
        base_url: form.get("base_url"),
        api_key: (system == System::Immich).then(|| secret.clone()).flatten(),
        api_token: matches!(system, System::Paperless | System::Seafile).then(|| secret.clone()).flatten(),
        app_password: (system == System::Nextcloud).then(|| secret.clone()).flatten(),
        username: (system == System::Nextcloud).then(|| form.get("username")),
        sync_enabled: (system == System::Immich).then(|| form.has("sync_enabled")),
    };
    match crate::integrations::connect::save(&state.integrations, viewer.user.id.0, system, input).await {
        Ok(_) => Ok(see_other("/settings/integrations?notice=saved")),
        Err(e) => refused(&state, &viewer, e).await,
    }
}

pub async fn test(State(state): State<AppState>, viewer: Viewer, Path(name): Path<String>, _form: Form) -> PageResult {
    let system = system_of(&name)?;
    match health::test(&state.integrations, viewer.user.id.0, system).await {
        Ok(r) => show(&state, &viewer, StatusCode::OK, Some(Said { message: r.message, error: !r.ok })).await,
        Err(e) => refused(&state, &viewer, e).await,
    }
}

pub async fn delete(
    State(state): State<AppState>,
    viewer: Viewer,
    Path(name): Path<String>,
    _form: Form,
) -> PageResult {
    let system = system_of(&name)?;
    config::delete(&state.integrations, viewer.user.id.0, system).await.map_err(ApiError::from)?;
    Ok(see_other("/settings/integrations?notice=deleted"))
}

pub async fn sync(State(state): State<AppState>, viewer: Viewer, _form: Form) -> PageResult {
    match immich::sync_user(&state.integrations, viewer.user.id.0).await {
        Ok(s) => {
            let message = viewer.lang.f(
                "integrations.synced",
                &[
                    ("people", &s.people.to_string()),
                    ("photos", &s.photos_added.to_string()),
                    ("pictures", &s.pictures_filled.to_string()),
                ],
            );
            let message = if s.failed > 0 { s.message } else { message };
            show(&state, &viewer, StatusCode::OK, Some(Said { message, error: s.failed > 0 })).await
        }
        Err(e) => refused(&state, &viewer, e).await,
    }
}

// ---------------------------------------------------------------------------------------------
// On a contact

/// The contact page's card: the linked person's face and latest photos, and a way to link a
/// person, documents and files from each connected system. Nothing when none is connected and
/// nothing is linked.
pub fn contact_card(
    c: &Chrome<'_>,
    viewer: &Viewer,
    id: u64,
    connected: &[System],
    identities: &[Value],
    activities: &[Value],
) -> Markup {
    let t = |k| viewer.t(k);
    let person = identities.iter().find(|i| i["system"] == "immich");
    let photos: Vec<&Value> = activities
        .iter()
        .filter(|a| a["source_system"] == "immich" && a["type"] == immich::APPEARANCE)
        .take(6)
        .collect();
    html! {
        @if !connected.is_empty() || person.is_some() {
            section class="card" aria-labelledby="h-integrations" {
                h2 id="h-integrations" { (t("integrations.on_contact")) }
                @if let Some(p) = person {
                    @let name = p["metadata"]["person_name"].as_str().unwrap_or_default();
                    div class="person" {
                        img src={ "/api/v1/immich/contacts/" (id) "/thumbnail" } alt=(viewer.lang.f("integrations.face_of", &[("name", name)])) width="64" height="64" loading="lazy";
                        " " strong { (name) }
                        @if let Some(n) = p["metadata"]["photo_count"].as_u64() { " " span class="muted" { (viewer.lang.f("integrations.photo_count", &[("count", &n.to_string())])) } }
                    }
                    @if !photos.is_empty() {
                        h3 { (t("integrations.latest_photos")) }
                        ul class="photos" {
                            @for a in &photos {
                                @let asset = a["external_id"].as_str().unwrap_or_default();
                                li {
                                    img src={ "/api/v1/immich/contacts/" (id) "/assets/" (super::page::encode(asset)) "/image" }
                                        alt=(viewer.lang.f("integrations.photo_of", &[("name", name), ("date", a["occurred_at"].as_str().unwrap_or_default().get(..10).unwrap_or_default())]))
                                        width="96" height="96" loading="lazy";
                                    br;
                                    form method="post" action={ "/contacts/" (id) "/link/immich/picture" } class="inline" {
                                        (c.csrf_field())
                                        input type="hidden" name="asset_id" value=(asset);
                                        button type="submit" class="small secondary" { (t("integrations.use_as_picture")) }
                                    }
                                }
                            }
                        }
                    }
                }
                ul class="items" {
                    @for system in connected {
                        @if *system != System::Immich || person.is_none() {
                            li { a href={ "/contacts/" (id) "/link/" (system.name()) } { (viewer.lang.f(find_key(*system), &[("system", system.label())])) } }
                        }
                    }
                }
            }
        }
    }
}

fn find_key(system: System) -> &'static str {
    match system {
        System::Immich => "integrations.find_person",
        System::Paperless => "integrations.find_documents",
        System::Seafile | System::Nextcloud => "integrations.find_files",
    }
}

/// The systems `user` connected (for the contact page).
pub fn connected(state: &AppState, user: u64) -> Vec<System> {
    let Ok(c) = config::read(&state.integrations, user) else { return Vec::new() };
    System::ALL.into_iter().filter(|s| c.get(*s).is_some()).collect()
}

#[derive(Debug, Default, Deserialize)]
pub struct FindQuery {
    /// A name (people) or words (documents).
    q: Option<String>,
    correspondent: Option<String>,
    /// A Seafile library.
    repo: Option<String>,
    path: Option<String>,
}

fn link_button(c: &Chrome<'_>, viewer: &Viewer, action: &str, fields: &[(&str, &str)]) -> Markup {
    html! {
        form method="post" action=(action) class="inline" {
            (c.csrf_field())
            @for (k, v) in fields { input type="hidden" name=(k) value=(v); }
            button type="submit" class="small" { (viewer.t("integrations.link")) }
        }
    }
}

/// Where a person, a document, a file or a folder is found and linked to contact `id`.
pub async fn find(
    State(state): State<AppState>,
    viewer: Viewer,
    Path((id, name)): Path<(u64, String)>,
    Query(q): Query<FindQuery>,
) -> PageResult {
    let system = system_of(&name)?;
    find_page(&state, &viewer, id, system, q, StatusCode::OK, None).await
}

async fn find_page(
    state: &AppState,
    viewer: &Viewer,
    id: u64,
    system: System,
    q: FindQuery,
    status: StatusCode,
    said: Option<Said>,
) -> PageResult {
    let t = |k| viewer.t(k);
    let c = viewer.chrome();
    let contact = state.read(&viewer.user, move |v| Ok(v.get::<crate::crm::contact::Contact>(id)?)).await?;
    let who = contact.body.name();
    let user = viewer.user.id.0;
    let i = &state.integrations;
    let action = format!("/contacts/{id}/link/{}", system.name());
    let (found, said) = match results(state, viewer, &c, &action, system, &who, &q, user, i).await {
        Ok(found) => (found, said),
        Err(e) => {
            let e = ApiError::from(e);
            let (_, message) = field_error(viewer.lang, &e);
            (html! {}, Some(Said { message, error: true }))
        }
    };
    let title = viewer.lang.f(find_key(system), &[("system", system.label())]);
    let main = html! {
        h1 { (title) }
        p { a href={ "/contacts/" (id) } { (viewer.lang.f("integrations.back_to", &[("name", &who)])) } }
        (said_markup(&said))
        (found)
        p class="hint" { (t("integrations.link_hint")) }
    };
    Ok(page_with(status, shell(&c, &title, None, main)))
}

#[allow(clippy::too_many_arguments)]
async fn results(
    state: &AppState,
    viewer: &Viewer,
    c: &Chrome<'_>,
    action: &str,
    system: System,
    who: &str,
    q: &FindQuery,
    user: u64,
    i: &crate::integrations::Integrations,
) -> crate::integrations::Result<Markup> {
    let t = |k| viewer.t(k);
    let query = q.q.clone().unwrap_or_else(|| who.to_string());
    Ok(match system {
        System::Immich => {
            let needle = query.to_lowercase();
            let people: Vec<immich::Person> = immich::people(i, user)
                .await?
                .into_iter()
                .filter(|p| needle.is_empty() || p.name.to_lowercase().contains(&needle))
                .collect();
            html! {
                form method="get" action=(action) class="row" role="search" {
                    label for="find-q" { (t("integrations.person_name")) }
                    input id="find-q" name="q" value=(query);
                    button type="submit" { (t("integrations.search")) }
                }
                @if people.is_empty() { p class="muted" { (t("integrations.none_found")) } }
                ul class="items" {
                    @for p in &people {
                        li { (if p.name.is_empty() { t("integrations.unnamed") } else { &p.name }) " "
                             (link_button(c, viewer, action, &[("person_id", &p.id), ("person_name", &p.name)])) }
                    }
                }
            }
        }
        System::Paperless => {
            let correspondent = q.correspondent.as_deref().and_then(|c| c.parse::<u64>().ok());
            let labels = paperless::labels(i, user, false).await?;
            let search = paperless::Search {
                query: if correspondent.is_some() && q.q.is_none() { None } else { Some(query.clone()) },
                correspondent,
                tag: None,
            };
            let docs = paperless::documents(i, user, &search).await?;
            html! {
                form method="get" action=(action) class="row" role="search" {
                    div { label for="find-q" { (t("integrations.words")) } input id="find-q" name="q" value=(query); }
                    div { label for="find-c" { (t("integrations.correspondent")) }
                        select id="find-c" name="correspondent" {
                            option value="" { (t("integrations.any")) }
                            @for l in &labels { option value=(l.id) selected[correspondent == Some(l.id)] { (l.name) } }
                        }
                    }
                    button type="submit" { (t("integrations.search")) }
                }
                @if docs.is_empty() { p class="muted" { (t("integrations.none_found")) } }
                ul class="items" {
                    @for d in &docs {
                        li { a href=(d.url) rel="noopener noreferrer" target="_blank" { (if d.title.is_empty() { &d.file_name } else { &d.title }) }
                             " " span class="muted" { (d.created.get(..10).unwrap_or(&d.created)) } " "
                             (link_button(c, viewer, action, &[("document_id", &d.id.to_string())])) }
                    }
                }
            }
        }
        System::Seafile => match q.repo.as_deref().filter(|r| !r.is_empty()) {
            None => {
                let libraries = seafile::libraries(i, user).await?;
                html! {
                    h2 { (t("integrations.libraries")) }
                    ul class="items" {
                        @for l in &libraries { li { a href={ (action) "?repo=" (super::page::encode(&l.id)) } { (l.name) } } }
                    }
                }
            }
            Some(repo) => {
                let path = q.path.clone().unwrap_or_else(|| "/".into());
                let items = seafile::dir(i, user, repo, Some(&path)).await?;
                html! {
                    p { a href=(action) { (t("integrations.libraries")) } " · " code { (path) } }
                    @if items.is_empty() { p class="muted" { (t("integrations.empty_folder")) } }
                    ul class="items" {
                        @for e in &items {
                            li {
                                @if e.kind == "dir" { a href={ (action) "?repo=" (super::page::encode(repo)) "&path=" (super::page::encode(&e.path)) } { (e.name) "/" } }
                                @else { (e.name) }
                                " " (link_button(c, viewer, action, &[("repo_id", repo), ("path", &e.path)]))
                            }
                        }
                    }
                }
            }
        },
        System::Nextcloud => {
            let path = q.path.clone().unwrap_or_else(|| "/".into());
            let items = webdav::dir(i, user, Some(&path)).await?;
            let _ = state;
            html! {
                p { a href=(action) { "/" } " · " code { (path) } }
                @if items.is_empty() { p class="muted" { (t("integrations.empty_folder")) } }
                ul class="items" {
                    @for e in &items {
                        li {
                            @if e.kind == "dir" { a href={ (action) "?path=" (super::page::encode(&e.path)) } { (e.name) "/" } }
                            @else { (e.name) }
                            " " (link_button(c, viewer, action, &[("path", &e.path)]))
                        }
                    }
                }
            }
        }
    })
}

/// Makes a photo of contact `id` its picture, back to its page.
pub async fn use_as_picture(
    State(state): State<AppState>,
    viewer: Viewer,
    Path(id): Path<u64>,
    form: Form,
) -> PageResult {
    let scope = state.scope(&viewer.user);
    immich::use_as_picture(&state.integrations, &scope, viewer.user.id.0, &id.to_string(), &form.get("asset_id"))
        .await
        .map_err(ApiError::from)?;
    Ok(see_other(&format!("/contacts/{id}?notice=saved")))
}

/// Links what was chosen to contact `id`, back to its page.
pub async fn link(
    State(state): State<AppState>,
    viewer: Viewer,
    Path((id, name)): Path<(u64, String)>,
    form: Form,
) -> PageResult {
    let system = system_of(&name)?;
    let (i, scope, user, uid) = (&state.integrations, state.scope(&viewer.user), viewer.user.id.0, id.to_string());
    let done = match system {
        System::Immich => {
            let person_name = form.get("person_name");
            immich::link(i, &scope, user, &uid, &form.get("person_id"), Some(&person_name)).await.map(|_| ())
        }
        System::Paperless => paperless::link(i, &scope, user, &uid, &form.get("document_id")).await.map(|_| ()),
        System::Seafile => {
            let input = seafile::LinkInput { repo_id: form.get("repo_id"), path: form.get("path") };
            seafile::link(i, &scope, user, &uid, &input).await.map(|_| ())
        }
        System::Nextcloud => {
            webdav::link(i, &scope, user, &uid, &webdav::LinkInput { path: form.get("path") }).await.map(|_| ())
        }
    };
    match done {
        Ok(()) => Ok(see_other(&format!("/contacts/{id}?notice=saved"))),
        Err(e) => {
            let e = ApiError::from(e);
            let (status, message) = field_error(viewer.lang, &e);
            let q = FindQuery { repo: Some(form.get("repo_id")).filter(|r| !r.is_empty()), ..FindQuery::default() };
            find_page(&state, &viewer, id, system, q, status, Some(Said { message, error: true })).await
        }
    }
}
