//! What every page shares: who is looking ([`Viewer`], [`Guest`]), the forms they send back
//! ([`Form`], checked against the CSRF token), the errors a handler may end with ([`WebError`]),
//! and the page shell ([`shell`]).

use std::sync::{Arc, OnceLock};

use axum::extract::{FromRequest, FromRequestParts, Request};
use axum::http::request::Parts;
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Redirect, Response};
use maud::{DOCTYPE, Markup, html};

use super::assets;
use super::i18n::Lang;
use crate::auth::AuthUser;
use crate::error::ApiError;
use crate::state::AppState;

/// The request's CSRF token (the `csrf` cookie, minted by the middleware when absent).
#[derive(Debug, Clone)]
pub struct Csrf(pub String);

/// Where a handler leaves the language it chose, so an error page rendered after it speaks the
/// same language.
#[derive(Debug, Clone, Default)]
pub struct LangSlot(pub Arc<OnceLock<Lang>>);

/// An error page to render (set by [`WebError`], rendered by the middleware with the language).
#[derive(Debug, Clone)]
pub struct ErrorPage {
    pub status: StatusCode,
    pub message: String,
}

/// How a page handler can fail.
#[derive(Debug)]
pub enum WebError {
    /// Not signed in: off to the sign-in page, then back to `next`.
    SignIn { next: String },
    /// Any refusal of the domain or the auth layer, shown as an error page.
    Api(ApiError),
}

impl From<ApiError> for WebError {
    fn from(e: ApiError) -> Self {
        WebError::Api(e)
    }
}

impl From<crate::crm::Error> for WebError {
    fn from(e: crate::crm::Error) -> Self {
        WebError::Api(e.into())
    }
}

impl From<crate::auth::Error> for WebError {
    fn from(e: crate::auth::Error) -> Self {
        WebError::Api(e.into())
    }
}

impl IntoResponse for WebError {
    fn into_response(self) -> Response {
        match self {
            WebError::SignIn { next } => {
                let target = if next == "/" || next.is_empty() {
                    "/login".to_string()
                } else {
                    format!("/login?next={}", encode(&next))
                };
                Redirect::to(&target).into_response()
            }
            WebError::Api(e) => {
                let retry_after = match &e {
                    ApiError::RateLimited { retry_after, .. } | ApiError::Saturated { retry_after, .. } => {
                        Some(*retry_after)
                    }
                    _ => None,
                };
                let (status, message) = e.status_and_message();
                let mut response = status.into_response();
                response.extensions_mut().insert(ErrorPage { status, message });
                if let Some(seconds) = retry_after {
                    response.headers_mut().insert(header::RETRY_AFTER, seconds.into());
                }
                response
            }
        }
    }
}

pub type PageResult = Result<Response, WebError>;

/// Percent-encodes `text` for a query value.
pub fn encode(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for b in text.bytes() {
        match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' | b'/' => out.push(b as char),
            _ => out.push_str(&format!("%{b:02X}")),
        }
    }
    out
}

fn csrf_of(parts: &Parts) -> String {
    parts.extensions.get::<Csrf>().map(|c| c.0.clone()).unwrap_or_default()
}

fn remember(parts: &Parts, lang: Lang) {
    if let Some(slot) = parts.extensions.get::<LangSlot>() {
        let _ = slot.0.set(lang);
    }
}

/// The signed-in person looking at a page: their account, language and date format, today's
/// date on the server clock, and the CSRF token their forms carry.
pub struct Viewer {
    pub user: AuthUser,
    pub lang: Lang,
    pub csrf: String,
    pub today: jiff::civil::Date,
}

impl FromRequestParts<AppState> for Viewer {
    type Rejection = WebError;

    async fn from_request_parts(parts: &mut Parts, state: &AppState) -> Result<Self, Self::Rejection> {
        let next = parts.uri.path_and_query().map(|p| p.as_str().to_string()).unwrap_or_default();
        let user = match crate::http::caller::authenticate(parts, state).await {
            Ok(user) => user,
            Err(ApiError::Unauthorized(_) | ApiError::TokenExpired(_)) => return Err(WebError::SignIn { next }),
            Err(e) => return Err(e.into()),
        };
        // A token scoped to contact sync opens no page, as it opens no API route.
        if let crate::auth::Via::ApiToken { scope: crate::auth::records::Scope::Carddav, .. } = user.via {
            return Err(WebError::Api(ApiError::Forbidden(
                "This token is scoped to CardDAV and cannot be used for the web client".into(),
            )));
        }
        let lang = Lang::of_account(&user.account.language);
        remember(parts, lang);
        Ok(Viewer { user, lang, csrf: csrf_of(parts), today: state.today() })
    }
}

impl Viewer {
    pub fn chrome(&self) -> Chrome<'_> {
        Chrome {
            lang: self.lang,
            csrf: &self.csrf,
            user: Some((&self.user.account.username, self.user.account.is_admin)),
            date_format: &self.user.account.date_format,
        }
    }

    pub fn t(&self, key: &'static str) -> &'static str {
        self.lang.t(key)
    }
}

/// Someone on a public page (sign-in, registration): the language their browser prefers.
pub struct Guest {
    pub lang: Lang,
    pub csrf: String,
}

impl FromRequestParts<AppState> for Guest {
    type Rejection = WebError;

    async fn from_request_parts(parts: &mut Parts, _state: &AppState) -> Result<Self, Self::Rejection> {
        let header = parts.headers.get(header::ACCEPT_LANGUAGE).and_then(|v| v.to_str().ok());
        let lang = Lang::of_header(header);
        remember(parts, lang);
        Ok(Guest { lang, csrf: csrf_of(parts) })
    }
}

impl Guest {
    pub fn chrome(&self) -> Chrome<'_> {
        Chrome { lang: self.lang, csrf: &self.csrf, user: None, date_format: "iso" }
    }
}

/// A submitted form (`application/x-www-form-urlencoded`), in order, repeated names kept. Its
/// `_csrf` field must equal the request's CSRF cookie, or the form is refused (403).
pub struct Form(pub Vec<(String, String)>);

impl FromRequest<AppState> for Form {
    type Rejection = WebError;

    async fn from_request(request: Request, state: &AppState) -> Result<Self, Self::Rejection> {
        let expected = request.extensions().get::<Csrf>().map(|c| c.0.clone()).unwrap_or_default();
        let axum::Form(fields) = axum::Form::<Vec<(String, String)>>::from_request(request, state)
            .await
            .map_err(|e| WebError::Api(ApiError::invalid_input("form", e.body_text())))?;
        let sent = fields.iter().find(|(k, _)| k == "_csrf").map(|(_, v)| v.as_str()).unwrap_or("");
        if expected.is_empty() || !constant_time_eq(sent.as_bytes(), expected.as_bytes()) {
            return Err(WebError::Api(ApiError::Forbidden(
                "This form has expired or came from another site. Reload the page and try again.".into(),
            )));
        }
        Ok(Form(fields))
    }
}

/// A submitted `multipart/form-data` form: the file of field `file_field` (read against `limit`
/// as it streams) and the other fields as text. Its `_csrf` field must equal the request's CSRF
/// cookie, as for [`Form`].
pub struct Upload {
    /// The file's name, lower-cased (for telling its format by extension).
    pub file_name: String,
    /// The file's name as the browser sent it.
    pub original_name: String,
    /// The part's `Content-Type` (`application/octet-stream` when the browser sent none).
    pub content_type: String,
    pub bytes: Vec<u8>,
    pub fields: Form,
}

impl Upload {
    pub async fn read(
        mut form: axum::extract::Multipart,
        csrf: &Csrf,
        file_field: &str,
        limit: usize,
    ) -> Result<Upload, ApiError> {
        let bad = |e: axum::extract::multipart::MultipartError| ApiError::invalid_input(file_field, e.body_text());
        let (mut original_name, mut bytes, mut fields) = (String::new(), Vec::new(), Vec::new());
        let mut content_type = String::new();
        while let Some(mut field) = form.next_field().await.map_err(bad)? {
            let name = field.name().unwrap_or("").to_string();
            if name == file_field {
                original_name = field.file_name().unwrap_or("").to_string();
                content_type = field.content_type().unwrap_or("application/octet-stream").to_string();
                while let Some(chunk) = field.chunk().await.map_err(bad)? {
                    if bytes.len() + chunk.len() > limit {
                        return Err(ApiError::PayloadTooLarge { limit });
                    }
                    bytes.extend_from_slice(&chunk);
                }
            } else {
                let text = field.text().await.map_err(bad)?;
                fields.push((name, text));
            }
        }
        check_csrf(&fields, csrf)?;
        let file_name = original_name.to_lowercase();
        Ok(Upload { file_name, original_name, content_type, bytes, fields: Form(fields) })
    }
}

/// Refuses a form whose `_csrf` field is not the session's token.
pub fn check_csrf(fields: &[(String, String)], csrf: &Csrf) -> Result<(), ApiError> {
    let sent = fields.iter().find(|(k, _)| k == "_csrf").map(|(_, v)| v.as_str()).unwrap_or("");
    if csrf.0.is_empty() || !constant_time_eq(sent.as_bytes(), csrf.0.as_bytes()) {
        return Err(ApiError::Forbidden(
            "This form has expired or came from another site. Reload the page and try again.".into(),
        ));
    }
    Ok(())
}

fn constant_time_eq(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

impl Form {
    /// The first value of `name`, trimmed ("" when absent).
    pub fn get(&self, name: &str) -> String {
        self.0.iter().find(|(k, _)| k == name).map(|(_, v)| v.trim().to_string()).unwrap_or_default()
    }

    /// The first value of `name` exactly as typed (passwords).
    pub fn raw(&self, name: &str) -> String {
        self.0.iter().find(|(k, _)| k == name).map(|(_, v)| v.clone()).unwrap_or_default()
    }

    /// Every value of `name`, in order, trimmed.
    pub fn all(&self, name: &str) -> Vec<String> {
        self.0.iter().filter(|(k, _)| k == name).map(|(_, v)| v.trim().to_string()).collect()
    }

    pub fn has(&self, name: &str) -> bool {
        self.0.iter().any(|(k, _)| k == name)
    }
}

/// A form on a page sent back with a field error: which form (`form`, its name on the page),
/// what was typed, and the error, so the page is shown again with that form open, its values
/// kept and the error beside it.
pub struct Sent {
    pub form: &'static str,
    pub fields: Form,
    /// The field the error names (`""` when it names none).
    pub field: String,
    pub message: String,
    pub status: StatusCode,
}

impl Sent {
    /// The form sent back for `e`, when `e` is the form's fault (a field refused or a
    /// duplicate); `None` for any other refusal (not found, forbidden, ...), which stays an
    /// error page.
    pub fn of(form: &'static str, fields: Form, lang: Lang, e: &ApiError) -> Option<Sent> {
        let field = match e {
            ApiError::Validation { field, .. } | ApiError::InvalidInput { field, .. } => field.clone(),
            ApiError::AlreadyExists { field } => field.clone(),
            _ => return None,
        };
        let (status, message) = field_error(lang, e);
        Some(Sent { form, fields, field, message, status })
    }

    /// This sending, when it is of form `form`.
    pub fn to<'a>(sent: Option<&'a Sent>, form: &str) -> Option<&'a Sent> {
        sent.filter(|s| s.form == form)
    }

    /// What was typed into `name` ("" when nothing was).
    pub fn value(sent: Option<&Sent>, name: &str) -> String {
        sent.map(|s| s.fields.raw(name)).unwrap_or_default()
    }

    /// The status the page is answered with.
    pub fn status(sent: Option<&Sent>) -> StatusCode {
        sent.map(|s| s.status).unwrap_or(StatusCode::OK)
    }

    /// The error of a sent-back form, announced (`role=alert`); nothing otherwise.
    pub fn alert(sent: Option<&Sent>) -> Markup {
        html! { @if let Some(s) = sent { p class="error" role="alert" id={ (s.form) "-error" } { (s.message) } } }
    }

    /// `aria-invalid` for field `name` of a sent-back form.
    pub fn invalid(sent: Option<&Sent>, name: &str) -> Option<&'static str> {
        sent.filter(|s| s.field == name || s.field.ends_with(&format!(".{name}"))).map(|_| "true")
    }
}

/// What the page shell needs to know of the viewer.
pub struct Chrome<'a> {
    pub lang: Lang,
    pub csrf: &'a str,
    /// `(username, is_admin)` when signed in.
    pub user: Option<(&'a str, bool)>,
    pub date_format: &'a str,
}

impl Chrome<'_> {
    /// The hidden field every state-changing form carries.
    pub fn csrf_field(&self) -> Markup {
        html! { input type="hidden" name="_csrf" value=(self.csrf); }
    }

    /// A one-button form that POSTs to `action` (toggles, completes, deletes).
    pub fn button_form(&self, action: &str, label: &str, class: &str, confirm: Option<&str>) -> Markup {
        html! {
            form method="post" action=(action) class="inline" data-confirm=[confirm] {
                (self.csrf_field())
                button type="submit" class=(class) { (label) }
            }
        }
    }
}

/// A notice shown after a redirect (`?notice=<key>`): only keys of this list are shown.
const NOTICES: &[(&str, &str)] = &[
    ("saved", "notice.saved"),
    ("created", "notice.created"),
    ("deleted", "notice.deleted"),
    ("signed_out", "notice.signed_out"),
    ("registered", "notice.registered"),
    ("preferences", "notice.preferences"),
    ("password", "notice.password"),
    ("password_reset", "notice.password_reset"),
    ("test_queued", "notice.test_queued"),
    ("shared", "notice.shared"),
    ("declined", "notice.declined"),
    ("address_added", "notice.address_added"),
    ("address_stale", "notice.address_stale"),
];

pub fn notice(key: Option<&str>) -> Option<&'static str> {
    let key = key?;
    NOTICES.iter().find(|(k, _)| *k == key).map(|(_, v)| *v)
}

/// The whole page: head, the navigation (when signed in), `notice`, then `main`.
pub fn shell(c: &Chrome, title: &str, notice_key: Option<&'static str>, main: Markup) -> Markup {
    let t = |k| c.lang.t(k);
    html! {
        (DOCTYPE)
        html lang=(c.lang.code()) {
            head {
                meta charset="utf-8";
                meta name="viewport" content="width=device-width, initial-scale=1";
                meta name="color-scheme" content="light dark";
                title { (title) " · Mycorrhizal" }
                link rel="stylesheet" href=(assets::url("app.css"));
                link rel="icon" href=(assets::url("icon.svg")) type="image/svg+xml";
                script src=(assets::url("app.js")) defer {}
            }
            body {
                a class="skip" href="#main" { (t("nav.skip")) }
                header class="top" {
                    a class="brand" href="/" { img src=(assets::url("icon.svg")) alt="" width="24" height="24"; " Mycorrhizal" }
                    @if let Some((username, is_admin)) = c.user {
                        nav aria-label=(t("nav.label")) {
                            a href="/" { (t("nav.dashboard")) }
                            a href="/contacts" { (t("nav.contacts")) }
                            a href="/households" { (t("nav.households")) }
                            a href="/reminders" { (t("nav.reminders")) }
                            a href="/activities" { (t("nav.activities")) }
                            a href="/notes" { (t("nav.notes")) }
                            a href="/import" { (t("nav.import")) }
                            a href="/settings" { (t("nav.settings")) }
                            @if is_admin { a href="/admin" { (t("nav.admin")) } }
                        }
                        form class="search" method="get" action="/search" role="search" {
                            label for="global-q" class="visually-hidden" { (t("search.label")) }
                            input id="global-q" type="search" name="q" placeholder=(t("search.placeholder"));
                        }
                        form method="post" action="/logout" class="inline" {
                            (c.csrf_field())
                            button type="submit" class="link" title=(username) { (t("nav.sign_out")) }
                        }
                    }
                }
                main id="main" {
                    @if let Some(key) = notice_key {
                        p class="notice" role="status" { (t(key)) }
                    }
                    (main)
                }
            }
        }
    }
}

/// A finished page: `200` with the HTML.
pub fn page(markup: Markup) -> Response {
    (StatusCode::OK, [(header::CONTENT_TYPE, "text/html; charset=utf-8")], markup.into_string()).into_response()
}

/// A page with another status (a form sent back with its errors: 400, 409, 412).
pub fn page_with(status: StatusCode, markup: Markup) -> Response {
    (status, [(header::CONTENT_TYPE, "text/html; charset=utf-8")], markup.into_string()).into_response()
}

/// `303 See Other` to `to` (after a POST, so a reload does not send it again).
pub fn see_other(to: &str) -> Response {
    Redirect::to(to).into_response()
}

/// The error page for `status` and `message`.
pub fn error_page(c: &Chrome, status: StatusCode, message: &str) -> Markup {
    let t = |k| c.lang.t(k);
    let title = match status {
        StatusCode::NOT_FOUND => t("error.not_found"),
        StatusCode::FORBIDDEN => t("error.forbidden"),
        StatusCode::TOO_MANY_REQUESTS => t("error.too_many"),
        s if s.is_server_error() => t("error.server"),
        _ => t("error.generic"),
    };
    shell(
        c,
        title,
        None,
        html! {
            h1 { (title) }
            p { (message) }
            p { a href="/" { (t("error.home")) } }
        },
    )
}

/// An inline error for a form: the field named and what is wrong.
pub fn field_error(lang: Lang, e: &ApiError) -> (StatusCode, String) {
    let (status, message) = e.status_and_message();
    let message = match e {
        ApiError::Validation { field, reason } | ApiError::InvalidInput { field, reason } => {
            lang.f("form.field_error", &[("field", field), ("reason", reason)])
        }
        _ => message,
    };
    (status, message)
}
