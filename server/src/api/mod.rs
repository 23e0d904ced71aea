//! The route table (one screen) and the OpenAPI document generated from the handlers.
//! A route is registered with `routes!(handler, ..)`, which takes its path, methods, parameters
//! and answers from the handler's `#[utoipa::path]`: a route cannot be served undocumented, nor
//! documented unserved. The route-inventory test checks each is public by intent or refuses
//! anonymous callers.

pub mod activities;
pub mod addresses;
pub mod admin;
pub mod attachments;
pub mod audit;
pub mod auth;
pub mod cadence;
pub mod contacts;
pub mod dashboard;
pub mod depth;
pub mod duplicates;
pub mod edges;
pub mod export;
pub mod external;
pub mod fields;
pub mod groups;
pub mod health;
pub mod households;
pub mod ical;
pub mod import;
pub mod integrations;
pub mod link_types;
pub mod metrics;
pub mod notes;
pub mod notification_config;
pub mod notifications;
pub mod oidc;
pub mod photos;
pub mod preferences;
pub mod reach_out;
pub mod relationships;
pub mod reminders;
pub mod safety;
pub mod search;
pub mod shares;
pub mod subscriptions;
pub mod timeline;
pub mod tokens;
pub mod users;
pub mod webhooks;

use axum::Router;
use axum::extract::{DefaultBodyLimit, Extension};
use utoipa::OpenApi;
use utoipa_axum::router::{OpenApiRouter, UtoipaMethodRouterExt};
use utoipa_axum::routes;

use crate::state::AppState;

#[derive(OpenApi)]
#[openapi(
    info(title = "Mycorrhizal API", description = "Self-hosted personal CRM. JSON under /api/v1; health probes at the root."),
    components(schemas(crate::error::ErrorBody, crate::crm::schema::Day, crate::crm::schema::DayOrBlank, crate::crm::schema::DayOrInstant, crate::crm::schema::DayOrInstantOrBlank, crate::ops::health::Live, crate::ops::health::Ready, crate::ops::health::ReadyChecks, crate::ops::health::Check, crate::ops::health::Health, crate::ops::health::DatabaseHealth)),
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
        (name = "subscriptions", description = "Remote address books (/contact-subscriptions) and calendars (/calendars) pulled in on a schedule, the remote copy winning: CRUD (the password never returned), discovery, a connection test, sync now and the sync's health"),
        (name = "webhooks", description = "Signed deliveries of your events to your own receivers: CRUD, the secret shown once (rotatable), a test event, the delivery log and redelivery"),
        (name = "notifications", description = "Your notification channels (email, an ntfy-style topic, a Gotify-style server, Web Push, mobile push through FCM), each with a test; the server's VAPID key, your browsers' push subscriptions and your phones' FCM registrations"),
        (name = "integrations", description = "Your photo library (Immich), document archive (Paperless-ngx), file library (Seafile) and WebDAV server (Nextcloud, ownCloud, any): settings with the credential sealed and never returned, a connection test, and links from contacts to people, documents, files and folders. Private and loopback addresses are always refused"),
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
    let (router, doc) = OpenApiRouter::with_openapi(ApiDoc::openapi())
        .routes(routes!(openapi_json))
        .routes(routes!(auth::register))
        .routes(routes!(auth::login))
        .routes(routes!(auth::login_2fa))
        .routes(routes!(auth::logout))
        .routes(routes!(auth::check_password_strength))
        .routes(routes!(auth::password_reset_request))
        .routes(routes!(auth::password_reset_confirm))
        .routes(routes!(auth::create_device_grant))
        .routes(routes!(auth::device_session))
        .routes(routes!(oidc::config))
        .routes(routes!(oidc::login))
        .routes(routes!(oidc::callback))
        .routes(routes!(users::me))
        .routes(routes!(users::change_password))
        .routes(routes!(users::set_language))
        .routes(routes!(users::set_date_format))
        .routes(routes!(users::custom_fields, users::set_custom_fields))
        .routes(routes!(users::directory))
        .routes(routes!(users::enabled_contact_fields, users::set_enabled_contact_fields))
        .routes(routes!(users::totp_status))
        .routes(routes!(users::totp_setup))
        .routes(routes!(users::totp_confirm))
        .routes(routes!(users::totp_disable))
        .routes(routes!(users::totp_regenerate))
        .routes(routes!(tokens::list, tokens::create))
        .routes(routes!(tokens::revoke_all))
        .routes(routes!(tokens::revoke))
        .routes(routes!(tokens::rotate))
        .routes(routes!(tokens::admin_list, tokens::admin_create))
        .routes(routes!(tokens::admin_revoke))
        .routes(routes!(ical::status, ical::rotate, ical::revoke))
        .routes(routes!(admin::list_users, admin::create_user))
        .routes(routes!(admin::get_user, admin::patch_user, admin::delete_user))
        .routes(routes!(admin::reset_2fa))
        .routes(routes!(admin::rebuild_derived))
        .routes(routes!(admin::rebuild_search))
        .routes(routes!(safety::trigger_backup))
        .routes(routes!(safety::trigger_restore_drill))
        .routes(routes!(safety::integrity_check))
        .routes(routes!(admin::trigger_purge))
        .routes(routes!(admin::trigger_reminders))
        .routes(routes!(admin::diagnostics))
        .routes(routes!(timeline::system_events))
        .routes(routes!(timeline::subsystem_health))
        .routes(routes!(timeline::job_runs))
        .routes(routes!(timeline::job_health))
        .routes(routes!(timeline::error_aggregation))
        .routes(routes!(timeline::alerts))
        .routes(routes!(timeline::system_status))
        .routes(routes!(timeline::trigger_alerts))
        .routes(routes!(search::search))
        .routes(routes!(duplicates::list))
        .routes(routes!(duplicates::dismiss))
        .routes(routes!(duplicates::merge_preview))
        .routes(routes!(duplicates::merge_contacts))
        .routes(routes!(duplicates::merge_undo))
        .routes(routes!(duplicates::bulk))
        .routes(routes!(contacts::list, contacts::create))
        .routes(routes!(contacts::circles))
        .routes(routes!(contacts::random))
        .routes(routes!(contacts::birthdays))
        .routes(routes!(contacts::get, contacts::update, contacts::delete))
        .routes(routes!(contacts::detail))
        .routes(routes!(contacts::briefing))
        .routes(routes!(photos::download, photos::upload).layer(DefaultBodyLimit::max(photos::MAX_PHOTO + 64 * 1024)))
        .routes(routes!(photos::proxy))
        .routes(routes!(contacts::archive))
        .routes(routes!(contacts::unarchive))
        .routes(routes!(contacts::favorite))
        .routes(routes!(contacts::unfavorite))
        .routes(routes!(relationships::outgoing, relationships::create))
        .routes(routes!(relationships::update, relationships::delete))
        .routes(routes!(relationships::incoming))
        .routes(routes!(relationships::graph))
        .routes(routes!(relationships::connections))
        .routes(routes!(dashboard::dashboard))
        .routes(routes!(audit::export))
        .routes(routes!(audit::list))
        .routes(
            routes!(attachments::list, attachments::upload)
                .layer(DefaultBodyLimit::max(attachments::MAX_ATTACHMENT + 64 * 1024)),
        )
        .routes(routes!(attachments::download))
        .routes(routes!(attachments::delete))
        .routes(routes!(cadence::list, cadence::create))
        .routes(routes!(cadence::list_overdue))
        .routes(routes!(cadence::get, cadence::update, cadence::delete))
        .routes(routes!(groups::circles, groups::create_circle))
        .routes(routes!(groups::circle, groups::rename_circle, groups::delete_circle))
        .routes(routes!(groups::add_circle_member))
        .routes(routes!(groups::remove_circle_member))
        .routes(routes!(groups::tags, groups::create_tag))
        .routes(routes!(groups::tag, groups::rename_tag, groups::delete_tag))
        .routes(routes!(groups::add_tagging))
        .routes(routes!(groups::remove_tagging))
        .routes(routes!(audit::undo))
        .routes(routes!(dashboard::timeline))
        .routes(routes!(notes::list_for_contact, notes::create_for_contact))
        .routes(routes!(notes::list_unassigned, notes::create))
        .routes(routes!(notes::get, notes::update, notes::delete))
        .routes(routes!(activities::list, activities::create))
        .routes(routes!(activities::get, activities::update, activities::delete))
        .routes(routes!(activities::list_for_contact))
        .routes(routes!(reminders::list))
        .routes(routes!(reminders::upcoming))
        .routes(routes!(reminders::get, reminders::update, reminders::delete))
        .routes(routes!(reminders::complete))
        .routes(routes!(reminders::list_for_contact, reminders::create_for_contact))
        .routes(routes!(reminders::completions))
        .routes(routes!(reminders::delete_completion))
        .routes(routes!(depth::list_life_events, depth::create_life_event))
        .routes(routes!(depth::get_life_event, depth::update_life_event, depth::delete_life_event))
        .routes(routes!(depth::list_gifts, depth::create_gift))
        .routes(routes!(depth::get_gift, depth::update_gift, depth::delete_gift))
        .routes(routes!(depth::list_agenda, depth::create_agenda))
        .routes(routes!(depth::get_agenda, depth::update_agenda, depth::delete_agenda))
        .routes(routes!(depth::discuss_agenda))
        .routes(routes!(edges::list, edges::create))
        .routes(routes!(edges::suggest))
        .routes(routes!(edges::get, edges::replace, edges::delete))
        .routes(routes!(edges::accept))
        .routes(routes!(notification_config::config, notification_config::set_config))
        .routes(routes!(notification_config::test))
        .routes(routes!(notification_config::devices, notification_config::register))
        .routes(routes!(notification_config::unregister))
        .routes(routes!(preferences::list, preferences::create))
        .routes(routes!(preferences::get, preferences::replace, preferences::delete))
        .routes(routes!(shares::create))
        .routes(routes!(external::list_identities, external::create_identity))
        .routes(routes!(external::get_identity, external::replace_identity, external::delete_identity))
        .routes(routes!(external::list_activities, external::create_activity))
        .routes(routes!(external::get_activity, external::replace_activity, external::delete_activity))
        .routes(routes!(integrations::get_config, integrations::put_config, integrations::delete_config))
        .routes(routes!(integrations::test_connection))
        .routes(routes!(integrations::unlink))
        .routes(routes!(integrations::immich_people))
        .routes(routes!(integrations::immich_sync))
        .routes(routes!(integrations::immich_link, integrations::immich_unlink))
        .routes(routes!(integrations::immich_summary))
        .routes(routes!(integrations::immich_thumbnail))
        .routes(routes!(integrations::immich_assets))
        .routes(routes!(integrations::immich_asset_image))
        .routes(routes!(integrations::immich_use_as_picture))
        .routes(routes!(integrations::paperless_documents))
        .routes(routes!(integrations::paperless_correspondents))
        .routes(routes!(integrations::paperless_tags))
        .routes(routes!(integrations::paperless_link))
        .routes(routes!(integrations::seafile_libraries))
        .routes(routes!(integrations::seafile_dir))
        .routes(routes!(integrations::seafile_link))
        .routes(routes!(integrations::webdav_dir))
        .routes(routes!(integrations::webdav_link))
        .routes(routes!(addresses::scan))
        .routes(routes!(addresses::apply))
        .routes(routes!(shares::incoming))
        .routes(routes!(shares::outgoing))
        .routes(routes!(shares::accept))
        .routes(routes!(shares::confirm))
        .routes(routes!(shares::decline))
        .routes(routes!(link_types::list, link_types::create))
        .routes(routes!(link_types::reorder))
        .routes(routes!(link_types::get, link_types::replace, link_types::delete))
        .routes(routes!(fields::list, fields::create))
        .routes(routes!(fields::get, fields::update, fields::delete))
        .routes(routes!(fields::values, fields::put_values))
        .routes(routes!(households::list, households::create))
        .routes(routes!(households::list_suggestions))
        .routes(routes!(households::dismiss))
        .routes(routes!(households::suggest_addresses))
        .routes(routes!(households::get, households::update, households::delete))
        .routes(routes!(households::list_members, households::add_member))
        .routes(routes!(households::update_member, households::remove_member))
        .routes(routes!(households::household_suggestions))
        .routes(routes!(reach_out::list))
        .routes(routes!(reach_out::delete))
        .routes(routes!(reach_out::accept))
        .routes(routes!(reach_out::dismiss))
        .routes(routes!(import::upload_csv).layer(DefaultBodyLimit::disable()))
        .routes(routes!(import::preview_csv))
        .routes(routes!(import::confirm_csv))
        .routes(routes!(import::upload_vcf).layer(DefaultBodyLimit::disable()))
        .routes(routes!(import::upload_jscontact).layer(DefaultBodyLimit::disable()))
        .routes(routes!(import::records).map(|route| crate::http::body_limit(route, config.import.max_file_bytes)))
        .routes(routes!(import::confirm_vcf))
        .routes(routes!(import::runs))
        .routes(routes!(export::csv))
        .routes(routes!(export::bundle))
        .routes(routes!(import::bundle).layer(DefaultBodyLimit::disable()))
        .routes(routes!(export::vcf))
        .routes(routes!(export::jscontact))
        .routes(routes!(subscriptions::list_books, subscriptions::create_book))
        .routes(routes!(subscriptions::discover_books))
        .routes(routes!(
            subscriptions::get_book,
            subscriptions::update_book,
            subscriptions::patch_book,
            subscriptions::delete_book
        ))
        .routes(routes!(subscriptions::sync_book))
        .routes(routes!(subscriptions::test_book))
        .routes(routes!(subscriptions::list_calendars, subscriptions::create_calendar))
        .routes(routes!(subscriptions::discover_calendars))
        .routes(routes!(
            subscriptions::get_calendar,
            subscriptions::update_calendar,
            subscriptions::patch_calendar,
            subscriptions::delete_calendar
        ))
        .routes(routes!(subscriptions::sync_calendar))
        .routes(routes!(subscriptions::test_calendar))
        .routes(routes!(webhooks::list, webhooks::create))
        .routes(routes!(webhooks::events))
        .routes(routes!(webhooks::get, webhooks::update, webhooks::delete))
        .routes(routes!(webhooks::rotate_secret))
        .routes(routes!(webhooks::test))
        .routes(routes!(webhooks::deliveries))
        .routes(routes!(webhooks::redeliver))
        .routes(routes!(notifications::list))
        .routes(routes!(notifications::set_email, notifications::clear_email))
        .routes(routes!(notifications::test_email))
        .routes(routes!(notifications::set_ntfy, notifications::clear_ntfy))
        .routes(routes!(notifications::test_ntfy))
        .routes(routes!(notifications::set_gotify, notifications::clear_gotify))
        .routes(routes!(notifications::test_gotify))
        .routes(routes!(notifications::test_webpush))
        .routes(routes!(notifications::public_key))
        .routes(routes!(notifications::list_subscriptions, notifications::subscribe))
        .routes(routes!(notifications::unsubscribe))
        .routes(routes!(notifications::test_fcm))
        .routes(routes!(notifications::list_devices, notifications::register_device))
        .routes(routes!(notifications::unregister_device))
        .routes(routes!(health::live))
        .routes(routes!(health::ready))
        .routes(routes!(health::health))
        .routes(routes!(metrics::metrics))
        .split_for_parts();
    let json = serde_json::to_vec(&finish(doc)).expect("the OpenAPI document serializes");
    router.layer(Extension(Document(json.into())))
}

/// The OpenAPI 3.1 description of this API.
#[utoipa::path(get, path = "/api/v1/openapi.json", tag = "meta", responses((status = 200, description = "OpenAPI 3.1 document")))]
pub async fn openapi_json(Extension(doc): Extension<Document>) -> impl axum::response::IntoResponse {
    ([(http::header::CONTENT_TYPE, "application/json")], doc.0)
}

/// The finished document, serialized once when the router is built.
#[derive(Clone)]
pub struct Document(axum::body::Bytes);

/// The API document: the handlers' own descriptions (gathered by the router), plus the answers every route of a kind can
/// give whatever the handler (written once here rather than on each of them): a 400 where there
/// is a path, query or body to read, a 413 where there is a body, 401 and the credentials
/// schemes on every non-public route, 403 on the admin routes, 429 on everything under `/api/`.
fn finish(mut doc: utoipa::openapi::OpenApi) -> utoipa::openapi::OpenApi {
    use utoipa::openapi::security::{ApiKey, ApiKeyValue, Http, HttpAuthScheme, SecurityRequirement, SecurityScheme};
    use utoipa::openapi::{Content, Ref, RefOr, ResponseBuilder};

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
