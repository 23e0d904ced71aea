//! The existing clients' notification routes: `/notifications/config` (one form over the ntfy
//! and Gotify channels and push, `notify::client_config`) and `/notifications/devices` (the
//! phones registered for push, this server's `fcm-devices` at the clients' shape).

use axum::extract::State;
use axum::http::StatusCode;
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use crate::auth::AuthUser;
use crate::crm::Message;
use crate::error::ApiError;
use crate::http::extract::Path;
use crate::http::json::Json;
use crate::notify::client_config::{self, ClientConfig, ClientConfigInput, ClientTestInput, ClientTestOutcome};
use crate::notify::fcm::{self, FcmDeviceInput, FcmDeviceView};
use crate::state::AppState;

#[utoipa::path(get, path = "/api/v1/notifications/config", tag = "notifications", responses((status = 200, body = ClientConfig)))]
pub async fn config(State(state): State<AppState>, user: AuthUser) -> Result<axum::Json<ClientConfig>, ApiError> {
    Ok(axum::Json(client_config::config(&state.notify, user.id.0).await?))
}

/// A switch turned off removes that channel; an address given sets it (checked as the
/// channel's own route checks it); what the form leaves out stays.
#[utoipa::path(put, path = "/api/v1/notifications/config", tag = "notifications", request_body = ClientConfigInput, responses(
    (status = 200, body = ClientConfig), (status = 400, description = "An address or topic refused, named (`ntfy_url`, ...)")))]
pub async fn set_config(
    State(state): State<AppState>,
    user: AuthUser,
    Json(input): Json<ClientConfigInput>,
) -> Result<axum::Json<ClientConfig>, ApiError> {
    Ok(axum::Json(client_config::set_config(&state.notify, user.id.0, input).await?))
}

#[utoipa::path(post, path = "/api/v1/notifications/config/test", tag = "notifications", request_body = ClientTestInput, responses(
    (status = 200, description = "`{ok: true}` when a test was queued, `{ok: false, error}` saying why not", body = ClientTestOutcome),
    (status = 400, description = "`channel` is not ntfy, gotify or push")))]
pub async fn test(
    State(state): State<AppState>,
    user: AuthUser,
    Json(input): Json<ClientTestInput>,
) -> Result<axum::Json<ClientTestOutcome>, ApiError> {
    Ok(axum::Json(client_config::test(&state.notify, user.id.0, &input.channel).await?))
}

/// A phone registered for push, at the clients' shape (the token is never shown).
#[derive(Debug, Serialize, ToSchema)]
pub struct Device {
    pub id: u64,
    #[schema(value_type = String)]
    pub created_at: jiff::Timestamp,
    #[schema(value_type = String)]
    pub updated_at: jiff::Timestamp,
    /// Always `fcm`.
    pub client: &'static str,
    pub device_label: String,
}

impl Device {
    fn of(d: FcmDeviceView) -> Device {
        Device { id: d.id, created_at: d.created_at, updated_at: d.created_at, client: "fcm", device_label: d.name }
    }
}

/// `{devices}`.
#[derive(Debug, Serialize, ToSchema)]
pub struct DeviceList {
    pub devices: Vec<Device>,
}

/// A phone's registration: its FCM token, `client: fcm`, and a label.
#[derive(Debug, Deserialize, ToSchema)]
pub struct DeviceInput {
    #[schema(pattern = r"^[A-Za-z0-9_:.-]{16,4096}$")]
    pub token: String,
    /// `fcm` (the only push service this server speaks).
    #[schema(pattern = "^fcm$")]
    pub client: Option<String>,
    #[schema(max_length = 100)]
    pub device_label: Option<String>,
}

#[utoipa::path(get, path = "/api/v1/notifications/devices", tag = "notifications", responses((status = 200, body = DeviceList)))]
pub async fn devices(State(state): State<AppState>, user: AuthUser) -> Result<axum::Json<DeviceList>, ApiError> {
    let (s, user_id) = (state.notify.clone(), user.id.0);
    let list = state.blocking(move |_| fcm::list(&s, user_id)).await??;
    Ok(axum::Json(DeviceList { devices: list.devices.into_iter().map(Device::of).collect() }))
}

#[utoipa::path(post, path = "/api/v1/notifications/devices", tag = "notifications", request_body = DeviceInput, responses(
    (status = 201, body = Device), (status = 400, description = "Invalid token, label or client; field named"),
    (status = 409, description = "The instance has no FCM service account, or you have the most devices allowed")))]
pub async fn register(
    State(state): State<AppState>,
    user: AuthUser,
    Json(input): Json<DeviceInput>,
) -> Result<(StatusCode, axum::Json<Device>), ApiError> {
    if input.client.as_deref().is_some_and(|c| c.trim() != "fcm") {
        return Err(ApiError::Validation { field: "client".into(), reason: "only fcm devices are served".into() });
    }
    let (view, _) =
        fcm::register(&state.notify, user.id.0, FcmDeviceInput { token: input.token, name: input.device_label })
            .await?;
    Ok((StatusCode::CREATED, axum::Json(Device::of(view))))
}

#[utoipa::path(delete, path = "/api/v1/notifications/devices/{id}", tag = "notifications", params(("id" = u64, Path)), responses(
    (status = 200, body = Message), (status = 404, description = "No such device of yours")))]
pub async fn unregister(
    State(state): State<AppState>,
    user: AuthUser,
    Path(id): Path<u64>,
) -> Result<axum::Json<Message>, ApiError> {
    fcm::unregister(&state.notify, user.id.0, id).await?;
    Ok(axum::Json(Message::new("Device registration deleted")))
}
