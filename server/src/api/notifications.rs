//! Notification channels over HTTP: each handler extracts, calls one operation of
//! `notify::channels` or `notify::webpush`, and maps the result. Tokens and push keys go in,
//! never out. Every channel has its own literal path (its own body schema).

use axum::extract::State;
use axum::http::StatusCode;

use crate::auth::AuthUser;
use crate::error::ApiError;
use crate::http::extract::Path;
use crate::http::json::Json;
use crate::notify::channels::{self, Channel, ChannelsView, EmailInput, GotifyInput, NtfyInput, Queued};
use crate::notify::fcm::{self, FcmDeviceInput, FcmDeviceList, FcmDeviceView};
use crate::notify::webpush::{self, PushSubscriptionInput, PushSubscriptionList, PushSubscriptionView, VapidKeyView};
use crate::state::AppState;

#[utoipa::path(get, path = "/api/v1/notifications/channels", tag = "notifications", responses(
    (status = 200, description = "Your channels: email on or off, the ntfy-style topic and Gotify-style server when set (tokens never shown, only whether set), how many browsers get Web Push", body = ChannelsView)))]
pub async fn list(State(state): State<AppState>, user: AuthUser) -> Result<axum::Json<ChannelsView>, ApiError> {
    let (s, user_id) = (state.notify.clone(), user.id.0);
    Ok(axum::Json(state.blocking(move |_| channels::list(&s, user_id)).await??))
}

#[utoipa::path(put, path = "/api/v1/notifications/channels/email", tag = "notifications", request_body = EmailInput, responses(
    (status = 200, description = "Your channels", body = ChannelsView),
    (status = 409, description = "Turning email on on an instance without a mail provider")))]
pub async fn set_email(
    State(state): State<AppState>,
    user: AuthUser,
    Json(input): Json<EmailInput>,
) -> Result<axum::Json<ChannelsView>, ApiError> {
    Ok(axum::Json(channels::set_email(&state.notify, user.id.0, input).await?))
}

#[utoipa::path(delete, path = "/api/v1/notifications/channels/email", tag = "notifications", responses(
    (status = 200, description = "Email turned off; your channels", body = ChannelsView)))]
pub async fn clear_email(State(state): State<AppState>, user: AuthUser) -> Result<axum::Json<ChannelsView>, ApiError> {
    Ok(axum::Json(channels::clear(&state.notify, user.id.0, Channel::Email).await?))
}

#[utoipa::path(post, path = "/api/v1/notifications/channels/email/test", tag = "notifications", responses(
    (status = 202, description = "A test notification queued to your account's address", body = Queued),
    (status = 404, description = "Email is off, or the instance has no mail provider")))]
pub async fn test_email(
    State(state): State<AppState>,
    user: AuthUser,
) -> Result<(StatusCode, axum::Json<Queued>), ApiError> {
    Ok((StatusCode::ACCEPTED, axum::Json(channels::send_test(&state.notify, user.id.0, Channel::Email).await?)))
}

#[utoipa::path(put, path = "/api/v1/notifications/channels/ntfy", tag = "notifications", request_body = NtfyInput, responses(
    (status = 200, description = "Your channels", body = ChannelsView),
    (status = 400, description = "Invalid url (or a private address refused by WEBHOOK_BLOCK_PRIVATE_URLS), topic or token; field named")))]
pub async fn set_ntfy(
    State(state): State<AppState>,
    user: AuthUser,
    Json(input): Json<NtfyInput>,
) -> Result<axum::Json<ChannelsView>, ApiError> {
    Ok(axum::Json(channels::set_ntfy(&state.notify, user.id.0, input).await?))
}

#[utoipa::path(delete, path = "/api/v1/notifications/channels/ntfy", tag = "notifications", responses(
    (status = 200, description = "The topic and its token removed; your channels", body = ChannelsView),
    (status = 404, description = "No topic is set")))]
pub async fn clear_ntfy(State(state): State<AppState>, user: AuthUser) -> Result<axum::Json<ChannelsView>, ApiError> {
    Ok(axum::Json(channels::clear(&state.notify, user.id.0, Channel::Ntfy).await?))
}

#[utoipa::path(post, path = "/api/v1/notifications/channels/ntfy/test", tag = "notifications", responses(
    (status = 202, description = "A test notification queued to your topic", body = Queued),
    (status = 404, description = "No topic is set")))]
pub async fn test_ntfy(
    State(state): State<AppState>,
    user: AuthUser,
) -> Result<(StatusCode, axum::Json<Queued>), ApiError> {
    Ok((StatusCode::ACCEPTED, axum::Json(channels::send_test(&state.notify, user.id.0, Channel::Ntfy).await?)))
}

#[utoipa::path(put, path = "/api/v1/notifications/channels/gotify", tag = "notifications", request_body = GotifyInput, responses(
    (status = 200, description = "Your channels", body = ChannelsView),
    (status = 400, description = "Invalid url (or a private address refused by WEBHOOK_BLOCK_PRIVATE_URLS) or token, or no token for a new server; field named")))]
pub async fn set_gotify(
    State(state): State<AppState>,
    user: AuthUser,
    Json(input): Json<GotifyInput>,
) -> Result<axum::Json<ChannelsView>, ApiError> {
    Ok(axum::Json(channels::set_gotify(&state.notify, user.id.0, input).await?))
}

#[utoipa::path(delete, path = "/api/v1/notifications/channels/gotify", tag = "notifications", responses(
    (status = 200, description = "The server and its token removed; your channels", body = ChannelsView),
    (status = 404, description = "No Gotify server is set")))]
pub async fn clear_gotify(State(state): State<AppState>, user: AuthUser) -> Result<axum::Json<ChannelsView>, ApiError> {
    Ok(axum::Json(channels::clear(&state.notify, user.id.0, Channel::Gotify).await?))
}

#[utoipa::path(post, path = "/api/v1/notifications/channels/gotify/test", tag = "notifications", responses(
    (status = 202, description = "A test notification queued to your Gotify server", body = Queued),
    (status = 404, description = "No Gotify server is set")))]
pub async fn test_gotify(
    State(state): State<AppState>,
    user: AuthUser,
) -> Result<(StatusCode, axum::Json<Queued>), ApiError> {
    Ok((StatusCode::ACCEPTED, axum::Json(channels::send_test(&state.notify, user.id.0, Channel::Gotify).await?)))
}

#[utoipa::path(post, path = "/api/v1/notifications/channels/webpush/test", tag = "notifications", responses(
    (status = 202, description = "A test notification queued to each of your browsers", body = Queued),
    (status = 404, description = "No browser is registered")))]
pub async fn test_webpush(
    State(state): State<AppState>,
    user: AuthUser,
) -> Result<(StatusCode, axum::Json<Queued>), ApiError> {
    Ok((StatusCode::ACCEPTED, axum::Json(channels::send_test(&state.notify, user.id.0, Channel::Webpush).await?)))
}

#[utoipa::path(get, path = "/api/v1/notifications/webpush/public-key", tag = "notifications", responses(
    (status = 200, description = "The server's VAPID public key (created on first use), the `applicationServerKey` of `pushManager.subscribe`", body = VapidKeyView)))]
pub async fn public_key(State(state): State<AppState>, _user: AuthUser) -> Result<axum::Json<VapidKeyView>, ApiError> {
    Ok(axum::Json(webpush::public_key(&state.notify).await?))
}

#[utoipa::path(get, path = "/api/v1/notifications/push-subscriptions", tag = "notifications", responses(
    (status = 200, description = "Your registered browsers (endpoints only, never their keys)", body = PushSubscriptionList)))]
pub async fn list_subscriptions(
    State(state): State<AppState>,
    user: AuthUser,
) -> Result<axum::Json<PushSubscriptionList>, ApiError> {
    let (s, user_id) = (state.notify.clone(), user.id.0);
    Ok(axum::Json(state.blocking(move |_| webpush::list(&s, user_id)).await??))
}

#[utoipa::path(post, path = "/api/v1/notifications/push-subscriptions", tag = "notifications", request_body = PushSubscriptionInput, responses(
    (status = 201, description = "The browser registered", body = PushSubscriptionView),
    (status = 200, description = "The endpoint was registered already: its keys replaced (and it is yours now)", body = PushSubscriptionView),
    (status = 400, description = "Invalid endpoint (or a private address refused by WEBHOOK_BLOCK_PRIVATE_URLS), keys.p256dh (not a P-256 point) or keys.auth; field named"),
    (status = 409, description = "You have the most browsers allowed (20)")))]
pub async fn subscribe(
    State(state): State<AppState>,
    user: AuthUser,
    Json(input): Json<PushSubscriptionInput>,
) -> Result<(StatusCode, axum::Json<PushSubscriptionView>), ApiError> {
    let (view, new) = webpush::subscribe(&state.notify, user.id.0, input).await?;
    Ok((if new { StatusCode::CREATED } else { StatusCode::OK }, axum::Json(view)))
}

#[utoipa::path(delete, path = "/api/v1/notifications/push-subscriptions/{id}", tag = "notifications", params(("id" = u64, Path)), responses(
    (status = 204, description = "The browser unregistered"),
    (status = 404, description = "No such subscription of yours")))]
pub async fn unsubscribe(
    State(state): State<AppState>,
    user: AuthUser,
    Path(id): Path<u64>,
) -> Result<StatusCode, ApiError> {
    webpush::unsubscribe(&state.notify, user.id.0, id).await?;
    Ok(StatusCode::NO_CONTENT)
}

#[utoipa::path(post, path = "/api/v1/notifications/channels/fcm/test", tag = "notifications", responses(
    (status = 202, description = "A test notification queued to each of your mobile devices", body = Queued),
    (status = 404, description = "No device is registered, or the instance has no FCM service account")))]
pub async fn test_fcm(
    State(state): State<AppState>,
    user: AuthUser,
) -> Result<(StatusCode, axum::Json<Queued>), ApiError> {
    Ok((StatusCode::ACCEPTED, axum::Json(channels::send_test(&state.notify, user.id.0, Channel::Fcm).await?)))
}

#[utoipa::path(get, path = "/api/v1/notifications/fcm-devices", tag = "notifications", responses(
    (status = 200, description = "Your mobile devices registered for push (never their tokens)", body = FcmDeviceList)))]
pub async fn list_devices(
    State(state): State<AppState>,
    user: AuthUser,
) -> Result<axum::Json<FcmDeviceList>, ApiError> {
    let (s, user_id) = (state.notify.clone(), user.id.0);
    Ok(axum::Json(state.blocking(move |_| fcm::list(&s, user_id)).await??))
}

#[utoipa::path(post, path = "/api/v1/notifications/fcm-devices", tag = "notifications", request_body = FcmDeviceInput, responses(
    (status = 201, description = "The device registered", body = FcmDeviceView),
    (status = 200, description = "The token was registered already: its name replaced (and it is yours now)", body = FcmDeviceView),
    (status = 400, description = "Invalid token or name; field named"),
    (status = 409, description = "The instance has no FCM service account, or you have the most devices allowed (20)")))]
pub async fn register_device(
    State(state): State<AppState>,
    user: AuthUser,
    Json(input): Json<FcmDeviceInput>,
) -> Result<(StatusCode, axum::Json<FcmDeviceView>), ApiError> {
    let (view, new) = fcm::register(&state.notify, user.id.0, input).await?;
    Ok((if new { StatusCode::CREATED } else { StatusCode::OK }, axum::Json(view)))
}

#[utoipa::path(delete, path = "/api/v1/notifications/fcm-devices/{id}", tag = "notifications", params(("id" = u64, Path)), responses(
    (status = 204, description = "The device unregistered"),
    (status = 404, description = "No such device of yours")))]
pub async fn unregister_device(
    State(state): State<AppState>,
    user: AuthUser,
    Path(id): Path<u64>,
) -> Result<StatusCode, ApiError> {
    fcm::unregister(&state.notify, user.id.0, id).await?;
    Ok(StatusCode::NO_CONTENT)
}
