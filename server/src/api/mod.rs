//! The route table (one screen) and the OpenAPI document generated from the handlers.
//! Every route added here must also be listed in [`ApiDoc`]; a test checks both agree.

pub mod health;

use axum::Router;
use axum::routing::get;
use utoipa::OpenApi;

use crate::state::AppState;

#[derive(OpenApi)]
#[openapi(
    info(title = "Mycorrhizal API", description = "Self-hosted personal CRM. JSON under /api/v1; health probes at the root."),
    paths(health::live, health::ready, health::health, openapi_json),
    components(schemas(crate::error::ErrorBody, health::Live, health::Ready, health::ReadyChecks, health::Check, health::Health, health::DatabaseHealth)),
    tags((name = "health", description = "Unauthenticated, unversioned probes"), (name = "meta", description = "The API's own description"))
)]
pub struct ApiDoc;

/// Every route of the service.
pub fn router() -> Router<AppState> {
    Router::new()
        .route("/health/live", get(health::live))
        .route("/health/ready", get(health::ready))
        .route("/health", get(health::health))
        .route("/api/v1/openapi.json", get(openapi_json))
}

/// The OpenAPI 3.1 description of this API.
#[utoipa::path(get, path = "/api/v1/openapi.json", tag = "meta", responses((status = 200, description = "OpenAPI 3.1 document")))]
pub async fn openapi_json() -> axum::Json<utoipa::openapi::OpenApi> {
    let mut doc = ApiDoc::openapi();
    doc.info.version = crate::build_info::VERSION.to_string();
    axum::Json(doc)
}
