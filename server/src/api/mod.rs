//! The route table (one screen) and the OpenAPI document generated from the handlers.
//! Every route added here must also be listed in [`ApiDoc`]; a test checks both agree, and the
//! route-inventory test checks each is public by intent or refuses anonymous callers.

pub mod activities;
pub mod admin;
pub mod attachments;
pub mod audit;
pub mod auth;
pub mod cadence;
pub mod contacts;
pub mod dashboard;
pub mod depth;
pub mod export;
pub mod groups;
pub mod health;
pub mod households;
pub mod import;
pub mod notes;
pub mod oidc;
pub mod photos;
pub mod reach_out;
pub mod relationships;
pub mod reminders;
pub mod search;
pub mod tokens;
pub mod users;

use axum::Router;
use axum::routing::{delete, get, patch, post, put};
use utoipa::OpenApi;

use crate::state::AppState;

#[derive(OpenApi)]
#[openapi(
    info(title = "Mycorrhizal API", description = "Self-hosted personal CRM. JSON under /api/v1; health probes at the root."),
    paths(
        health::live, health::ready, health::health, openapi_json,
        auth::register, auth::login, auth::login_2fa, auth::logout, auth::check_password_strength,
        auth::password_reset_request, auth::password_reset_confirm, auth::create_device_grant, auth::device_session,
        oidc::config, oidc::login, oidc::callback,
        users::me, users::change_password, users::set_language, users::set_date_format, users::custom_fields,
        users::set_custom_fields, users::totp_setup, users::totp_confirm, users::totp_disable, users::totp_regenerate,
        users::totp_status,
        tokens::list, tokens::create, tokens::revoke, tokens::rotate, tokens::revoke_all,
        tokens::admin_list, tokens::admin_create, tokens::admin_revoke,
        admin::list_users, admin::create_user, admin::get_user, admin::patch_user, admin::delete_user, admin::reset_2fa, admin::rebuild_derived, admin::rebuild_search, search::search,
        contacts::list, contacts::create, contacts::get, contacts::update, contacts::delete, contacts::archive,
        contacts::unarchive, contacts::favorite, contacts::unfavorite, contacts::circles, contacts::random,
        contacts::birthdays, contacts::detail, photos::upload, photos::download, photos::proxy,
        relationships::outgoing, relationships::incoming, relationships::create, relationships::update,
        relationships::delete, relationships::graph,
        notes::list_for_contact, notes::create_for_contact, notes::list_unassigned, notes::create, notes::get,
        notes::update, notes::delete,
        activities::list, activities::create, activities::get, activities::update, activities::delete,
        activities::list_for_contact,
        reminders::list, reminders::upcoming, reminders::get, reminders::update, reminders::delete,
        reminders::complete, reminders::list_for_contact, reminders::create_for_contact, reminders::completions,
        reminders::delete_completion,
        depth::list_life_events, depth::create_life_event, depth::get_life_event, depth::update_life_event,
        depth::delete_life_event, depth::list_gifts, depth::create_gift, depth::get_gift, depth::update_gift,
        depth::delete_gift, depth::list_agenda, depth::create_agenda, depth::get_agenda, depth::update_agenda,
        depth::discuss_agenda, depth::delete_agenda, dashboard::dashboard, dashboard::timeline, audit::export, audit::undo, attachments::upload, attachments::list, attachments::download, attachments::delete,
        groups::circles, groups::rename_circle, groups::delete_circle, groups::tags, groups::rename_tag, groups::delete_tag,
        cadence::list, cadence::list_overdue, cadence::create, cadence::get, cadence::update, cadence::delete,
        households::list, households::create, households::get, households::update, households::delete,
        households::list_members, households::add_member, households::update_member, households::remove_member,
        households::list_suggestions, households::suggest_addresses, households::household_suggestions,
        households::dismiss,
        reach_out::list, reach_out::accept, reach_out::dismiss, reach_out::delete,
        import::upload_csv, import::preview_csv, import::confirm_csv, import::upload_vcf, import::upload_jscontact,
        import::records, import::confirm_vcf, import::runs,
        export::csv, export::vcf, export::jscontact,
    ),
    components(schemas(crate::error::ErrorBody, health::Live, health::Ready, health::ReadyChecks, health::Check, health::Health, health::DatabaseHealth)),
    tags(
        (name = "health", description = "Unauthenticated, unversioned probes"),
        (name = "meta", description = "The API's own description"),
        (name = "auth", description = "Public sign-in routes; device grants"),
        (name = "users", description = "The signed-in user's account"),
        (name = "tokens", description = "API tokens"),
        (name = "admin", description = "Admin session only; API tokens refused"),
        (name = "contacts", description = "Contacts. Conditional writes: a stale `If-Match` gives 412; 409 is for a UID already in use"),
        (name = "relationships", description = "Typed edges between two of your contacts, and the network graph"),
        (name = "notes", description = "Notes about a contact, or unassigned"),
        (name = "activities", description = "Things done with one or more contacts"),
        (name = "reminders", description = "Day-granular reminders, one-off or recurring, and their completions"),
        (name = "depth", description = "Life events, gifts and conversation-agenda items of a contact"),
        (name = "households", description = "Households, their members over time, and address suggestions computed on read"),
        (name = "reach-out", description = "Suggestions to get in touch with contacts whose cadence is overdue, made by the reach-out scan"),
        (name = "audit", description = "Your own hash-chained change history"),
        (name = "search", description = "Full-text search over your contacts, notes and activities"),
        (name = "import", description = "Import contacts from CSV, vCard 2.1/3.0/4.0, JSContact or a JSON batch of neutral records: upload, preview with duplicate detection, confirm row by row"),
        (name = "export", description = "Everything you keep, as streamed downloads: vCard 3.0/4.0 with photos, JSContact, and CSV"),
    )
)]
pub struct ApiDoc;

/// Routes anyone may call without credentials (checked by the route-inventory test).
pub const PUBLIC: &[&str] = &[
    "/health",
    "/health/live",
    "/health/ready",
    "/api/v1/openapi.json",
    "/api/v1/register",
    "/api/v1/login",
    "/api/v1/login/2fa",
    "/api/v1/logout",
    "/api/v1/check-password-strength",
    "/api/v1/password-reset/request",
    "/api/v1/password-reset/confirm",
    "/api/v1/auth/device/session",
    "/api/v1/auth/oidc/config",
    "/api/v1/auth/oidc/login",
    "/api/v1/auth/oidc/callback",
];

/// Every route of the service; `config` sets the body limits of the import routes.
pub fn router(config: &crate::config::Config) -> Router<AppState> {
    let api = Router::new()
        .route("/openapi.json", get(openapi_json))
        .route("/register", post(auth::register))
        .route("/login", post(auth::login))
        .route("/login/2fa", post(auth::login_2fa))
        .route("/logout", post(auth::logout))
        .route("/check-password-strength", post(auth::check_password_strength))
        .route("/password-reset/request", post(auth::password_reset_request))
        .route("/password-reset/confirm", post(auth::password_reset_confirm))
        .route("/auth/device/grants", post(auth::create_device_grant))
        .route("/auth/device/session", post(auth::device_session))
        .route("/auth/oidc/config", get(oidc::config))
        .route("/auth/oidc/login", get(oidc::login))
        .route("/auth/oidc/callback", get(oidc::callback))
        .route("/users/me", get(users::me))
        .route("/users/change-password", post(users::change_password))
        .route("/users/language", patch(users::set_language))
        .route("/users/date-format", patch(users::set_date_format))
        .route("/users/custom-fields", get(users::custom_fields).patch(users::set_custom_fields))
        .route("/users/2fa/status", get(users::totp_status))
        .route("/users/2fa/setup", post(users::totp_setup))
        .route("/users/2fa/confirm", post(users::totp_confirm))
        .route("/users/2fa/disable", post(users::totp_disable))
        .route("/users/2fa/recovery-codes/regenerate", post(users::totp_regenerate))
        .route("/api-tokens", get(tokens::list).post(tokens::create))
        .route("/api-tokens/revoke-all", post(tokens::revoke_all))
        .route("/api-tokens/{id}", delete(tokens::revoke))
        .route("/api-tokens/{id}/rotate", post(tokens::rotate))
        .route("/admin/api-tokens", get(tokens::admin_list).post(tokens::admin_create))
        .route("/admin/api-tokens/{id}", delete(tokens::admin_revoke))
        .route("/admin/users", get(admin::list_users).post(admin::create_user))
        .route("/admin/users/{id}", get(admin::get_user).patch(admin::patch_user).delete(admin::delete_user))
        .route("/admin/users/{id}/reset-2fa", post(admin::reset_2fa))
        .route("/admin/contacts/rebuild-derived", post(admin::rebuild_derived))
        .route("/admin/search/rebuild", post(admin::rebuild_search))
        .route("/search", get(search::search))
        .route("/contacts", get(contacts::list).post(contacts::create))
        .route("/contacts/circles", get(contacts::circles))
        .route("/contacts/random", get(contacts::random))
        .route("/contacts/birthdays", get(contacts::birthdays))
        .route("/contacts/{id}", get(contacts::get).put(contacts::update).delete(contacts::delete))
        .route("/contacts/{id}/detail", get(contacts::detail))
        .route(
            "/contacts/{id}/profile_picture",
            get(photos::download)
                .post(photos::upload)
                .layer(axum::extract::DefaultBodyLimit::max(photos::MAX_PHOTO + 64 * 1024)),
        )
        .route("/proxy/image", get(photos::proxy))
        .route("/contacts/{id}/archive", post(contacts::archive))
        .route("/contacts/{id}/unarchive", post(contacts::unarchive))
        .route("/contacts/{id}/favorite", post(contacts::favorite))
        .route("/contacts/{id}/unfavorite", post(contacts::unfavorite))
        .route("/contacts/{id}/relationships", get(relationships::outgoing).post(relationships::create))
        .route("/contacts/{id}/relationships/{rid}", put(relationships::update).delete(relationships::delete))
        .route("/contacts/{id}/incoming-relationships", get(relationships::incoming))
        .route("/graph", get(relationships::graph))
        .route("/dashboard", get(dashboard::dashboard))
        .route("/audit/export", get(audit::export))
        .route(
            "/contacts/{id}/attachments",
            get(attachments::list)
                .post(attachments::upload)
                .layer(axum::extract::DefaultBodyLimit::max(attachments::MAX_ATTACHMENT + 64 * 1024)),
        )
        .route("/attachments/{id}/download", get(attachments::download))
        .route("/attachments/{id}", delete(attachments::delete))
        .route("/cadence-policies", get(cadence::list).post(cadence::create))
        .route("/cadence-policies/overdue", get(cadence::list_overdue))
        .route("/cadence-policies/{id}", get(cadence::get).put(cadence::update).delete(cadence::delete))
        .route("/circles", get(groups::circles))
        .route("/circles/{name}", put(groups::rename_circle).delete(groups::delete_circle))
        .route("/tags", get(groups::tags))
        .route("/tags/{name}", put(groups::rename_tag).delete(groups::delete_tag))
        .route("/audit/{id}/undo", post(audit::undo))
        .route("/contacts/{id}/timeline", get(dashboard::timeline))
        .route("/contacts/{id}/notes", get(notes::list_for_contact).post(notes::create_for_contact))
        .route("/notes", get(notes::list_unassigned).post(notes::create))
        .route("/notes/{id}", get(notes::get).put(notes::update).delete(notes::delete))
        .route("/activities", get(activities::list).post(activities::create))
        .route("/activities/{id}", get(activities::get).put(activities::update).delete(activities::delete))
        .route("/contacts/{id}/activities", get(activities::list_for_contact))
        .route("/reminders", get(reminders::list))
        .route("/reminders/upcoming", get(reminders::upcoming))
        .route("/reminders/{id}", get(reminders::get).put(reminders::update).delete(reminders::delete))
        .route("/reminders/{id}/complete", post(reminders::complete))
        .route("/contacts/{id}/reminders", get(reminders::list_for_contact).post(reminders::create_for_contact))
        .route("/contacts/{id}/reminder-completions", get(reminders::completions))
        .route("/reminder-completions/{id}", delete(reminders::delete_completion))
        .route("/life-events", get(depth::list_life_events).post(depth::create_life_event))
        .route(
            "/life-events/{id}",
            get(depth::get_life_event).put(depth::update_life_event).delete(depth::delete_life_event),
        )
        .route("/gifts", get(depth::list_gifts).post(depth::create_gift))
        .route("/gifts/{id}", get(depth::get_gift).put(depth::update_gift).delete(depth::delete_gift))
        .route("/conversation-agenda", get(depth::list_agenda).post(depth::create_agenda))
        .route(
            "/conversation-agenda/{id}",
            get(depth::get_agenda).put(depth::update_agenda).delete(depth::delete_agenda),
        )
        .route("/conversation-agenda/{id}/discuss", patch(depth::discuss_agenda))
        .route("/households", get(households::list).post(households::create))
        .route("/households/suggestions", get(households::list_suggestions))
        .route("/households/suggestions/dismiss", post(households::dismiss))
        .route("/households/suggest-addresses", post(households::suggest_addresses))
        .route("/households/{id}", get(households::get).put(households::update).delete(households::delete))
        .route("/households/{id}/members", get(households::list_members).post(households::add_member))
        .route("/households/{id}/members/{member}", patch(households::update_member).delete(households::remove_member))
        .route("/households/{id}/suggestions", get(households::household_suggestions))
        .route("/reach-out-suggestions", get(reach_out::list))
        .route("/reach-out-suggestions/{id}", delete(reach_out::delete))
        .route("/reach-out-suggestions/{id}/accept", post(reach_out::accept))
        .route("/reach-out-suggestions/{id}/dismiss", post(reach_out::dismiss))
        .route("/contacts/import/upload", post(import::upload_csv).layer(axum::extract::DefaultBodyLimit::disable()))
        .route("/contacts/import/preview", post(import::preview_csv))
        .route("/contacts/import/confirm", post(import::confirm_csv))
        .route(
            "/contacts/import/vcf/upload",
            post(import::upload_vcf).layer(axum::extract::DefaultBodyLimit::disable()),
        )
        .route(
            "/contacts/import/jscontact/upload",
            post(import::upload_jscontact).layer(axum::extract::DefaultBodyLimit::disable()),
        )
        .route("/contacts/import/records", crate::http::body_limit(post(import::records), config.import.max_file_bytes))
        .route("/contacts/import/vcf/confirm", post(import::confirm_vcf))
        .route("/contacts/import/runs", get(import::runs))
        .route("/export", get(export::csv))
        .route("/export/vcf", get(export::vcf))
        .route("/export/jscontact", get(export::jscontact));
    Router::new()
        .route("/health/live", get(health::live))
        .route("/health/ready", get(health::ready))
        .route("/health", get(health::health))
        .nest("/api/v1", api)
}

/// The OpenAPI 3.1 description of this API.
#[utoipa::path(get, path = "/api/v1/openapi.json", tag = "meta", responses((status = 200, description = "OpenAPI 3.1 document")))]
pub async fn openapi_json() -> axum::Json<utoipa::openapi::OpenApi> {
    axum::Json(document())
}

/// The API document: the handlers' own descriptions, plus the answers every route of a kind can
/// give whatever the handler (written once here rather than on each of them): a 400 where there
/// is a path, query or body to read, a 413 where there is a body, 401 and the credentials
/// schemes on every non-public route, 403 on the admin routes, 429 on everything under `/api/`.
pub fn document() -> utoipa::openapi::OpenApi {
    use utoipa::openapi::security::{ApiKey, ApiKeyValue, Http, HttpAuthScheme, SecurityRequirement, SecurityScheme};
    use utoipa::openapi::{Content, Ref, RefOr, ResponseBuilder};

    let mut doc = ApiDoc::openapi();
    doc.info.version = crate::build_info::VERSION.to_string();
    let components = doc.components.get_or_insert_with(Default::default);
    components.add_security_scheme("bearer", SecurityScheme::Http(Http::new(HttpAuthScheme::Bearer)));
    components.add_security_scheme("cookie", SecurityScheme::ApiKey(ApiKey::Cookie(ApiKeyValue::new("auth_token"))));
    let error = |description: &str| {
        RefOr::T(
            ResponseBuilder::new()
                .description(description)
                .content("application/json", Content::new(Some(Ref::from_schema_name("ErrorBody"))))
                .build(),
        )
    };
    for (path, item) in doc.paths.paths.iter_mut() {
        let public = PUBLIC.contains(&path.as_str());
        let operations = [
            &mut item.get,
            &mut item.put,
            &mut item.post,
            &mut item.delete,
            &mut item.patch,
            &mut item.head,
            &mut item.options,
            &mut item.trace,
        ];
        for operation in operations.into_iter().flatten() {
            let reads_input =
                operation.parameters.as_ref().is_some_and(|p| !p.is_empty()) || operation.request_body.is_some();
            let responses = &mut operation.responses.responses;
            let mut add = |status: &str, description: &str| {
                responses.entry(status.to_string()).or_insert_with(|| error(description));
            };
            if reads_input {
                add("400", "A path, query or body value could not be read or is invalid; `details.field` names it");
            }
            if operation.request_body.is_some() {
                add("413", "The body is larger than the route accepts");
            }
            if path.starts_with("/api/") {
                add("429", "Too many requests; `Retry-After` says when to try again");
            }
            if !public {
                add("401", "Missing, invalid or expired credentials");
                operation.security = Some(vec![
                    SecurityRequirement::new("bearer", Vec::<String>::new()),
                    SecurityRequirement::new("cookie", Vec::<String>::new()),
                ]);
            }
            let responses = &mut operation.responses.responses;
            if path.starts_with("/api/v1/admin/") {
                responses
                    .entry("403".to_string())
                    .or_insert_with(|| error("Not an admin session (API tokens are refused)"));
            }
            // Every 4xx a handler documents in words carries the one error body.
            for (status, response) in responses.iter_mut() {
                if let RefOr::T(response) = response
                    && status.starts_with('4')
                    && response.content.is_empty()
                {
                    response
                        .content
                        .insert("application/json".to_string(), Content::new(Some(Ref::from_schema_name("ErrorBody"))));
                }
            }
        }
    }
    doc
}
