//! Export endpoints: every live contact as vCard (3.0 or 4.0, photos inline) or JSContact, and
//! the user's data as CSV (one table per request: contacts by default, re-importable with
//! identity column mappings; `table=` gives notes, activities and the rest, `all` a ZIP of every
//! table). The exports are `crm::export`'s; this module reads the query, calls one of them, and
//! sends the download: streamed, 200 with its content type and attachment name once its first
//! chunk is made. A failure before that answers 500 with the nested export error shape; a failure
//! after it ends the body early (the status line is already sent).

use crate::http::extract::Query;
use axum::body::Body;
use axum::extract::State;
use axum::http::StatusCode;
use axum::http::header::{CONTENT_DISPOSITION, CONTENT_TYPE};
use axum::response::{IntoResponse, Response};
use serde::Deserialize;
use serde_json::json;
use utoipa::IntoParams;

use crate::auth::AuthUser;
use crate::crm::export::{self, Download, ExportError, VcardRequest};
use crate::error::ApiError;
use crate::state::AppState;

/// An export's outcome as the response: the download streamed, a refused request as the field's
/// validation error, a failure before the first chunk as the spec's nested 500.
fn respond(outcome: Result<Download, ExportError>) -> Result<Response, ApiError> {
    match outcome {
        Ok(Download { content_type, filename, body }) => Ok((
            StatusCode::OK,
            [
                (CONTENT_TYPE, content_type.to_string()),
                (CONTENT_DISPOSITION, format!("attachment; filename=\"{filename}\"")),
            ],
            Body::from_stream(body),
        )
            .into_response()),
        Err(ExportError::Invalid { field, reason }) => Err(ApiError::validation(field, reason)),
        Err(ExportError::Failed { operation, failure }) => Ok(export_failure(operation, failure.category.as_str())),
    }
}

/// The spec's export failure: 500 with `{error: {code, message, details: {operation, category}}}`.
pub(crate) fn export_failure(operation: &str, category: &str) -> Response {
    let body = json!({
        "error": {
            "code": "INTERNAL_ERROR",
            "message": "The export failed; nothing was sent. Try again, and see the server log if it persists.",
            "details": { "operation": operation, "category": category },
        }
    });
    (StatusCode::INTERNAL_SERVER_ERROR, axum::Json(body)).into_response()
}

#[derive(Debug, Default, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct VcfQuery {
    /// `4` (default), `4.0`, `3` or `3.0`; a `v` prefix is tolerated.
    #[param(
        pattern = "^[\\t-\\r \\u0085\\u00a0\\u1680\\u2000-\\u200a\\u2028\\u2029\\u202f\\u205f\\u3000]*([vV]*(4|4\\.0|3|3\\.0))?[\\t-\\r \\u0085\\u00a0\\u1680\\u2000-\\u200a\\u2028\\u2029\\u202f\\u205f\\u3000]*$"
    )]
    pub version: Option<String>,
    /// Export only the contact with this card UID.
    pub vcard_uid: Option<String>,
    /// Comma list of sections to include: emails, phones, addresses, organizations, anniversaries,
    /// media, online_services, links, notes, keywords, related_to, personal_info, speak_to_as,
    /// members, languages, custom_fields. Names are always included.
    #[param(
        pattern = "^[\\t-\\r \\u0085\\u00a0\\u1680\\u2000-\\u200a\\u2028\\u2029\\u202f\\u205f\\u3000]*(emails|phones|addresses|organizations|anniversaries|media|online_services|links|notes|keywords|related_to|personal_info|speak_to_as|members|languages|custom_fields)?[\\t-\\r \\u0085\\u00a0\\u1680\\u2000-\\u200a\\u2028\\u2029\\u202f\\u205f\\u3000]*(,[\\t-\\r \\u0085\\u00a0\\u1680\\u2000-\\u200a\\u2028\\u2029\\u202f\\u205f\\u3000]*(emails|phones|addresses|organizations|anniversaries|media|online_services|links|notes|keywords|related_to|personal_info|speak_to_as|members|languages|custom_fields)?[\\t-\\r \\u0085\\u00a0\\u1680\\u2000-\\u200a\\u2028\\u2029\\u202f\\u205f\\u3000]*)*$"
    )]
    pub sections: Option<String>,
    /// `true` or `1`. Accepted for compatibility; contact cards hold no sensitive-only members.
    pub include_sensitive: Option<String>,
}

#[utoipa::path(get, path = "/api/v1/export/vcf", tag = "export", params(VcfQuery), responses(
    (status = 200, description = "`text/vcard; charset=utf-8`, one card per live contact with photos inline, streamed; attachment `mycorrhizal-contacts-YYYY-MM-DD.vcf`"),
    (status = 400, description = "`VALIDATION_ERROR` naming `version` or `sections`"),
    (status = 500, description = "`{error: {code: INTERNAL_ERROR, message, details: {operation, category}}}`")))]
pub async fn vcf(
    State(state): State<AppState>,
    user: AuthUser,
    Query(q): Query<VcfQuery>,
) -> Result<Response, ApiError> {
    let request = VcardRequest {
        version: q.version.as_deref(),
        vcard_uid: q.vcard_uid.as_deref(),
        sections: q.sections.as_deref(),
    };
    let today = state.today();
    respond(export::vcard(state.engine.user(user.id), today, request).await)
}

#[derive(Debug, Default, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct JsQuery {
    /// As for the vCard export.
    #[param(
        pattern = "^[\\t-\\r \\u0085\\u00a0\\u1680\\u2000-\\u200a\\u2028\\u2029\\u202f\\u205f\\u3000]*(emails|phones|addresses|organizations|anniversaries|media|online_services|links|notes|keywords|related_to|personal_info|speak_to_as|members|languages|custom_fields)?[\\t-\\r \\u0085\\u00a0\\u1680\\u2000-\\u200a\\u2028\\u2029\\u202f\\u205f\\u3000]*(,[\\t-\\r \\u0085\\u00a0\\u1680\\u2000-\\u200a\\u2028\\u2029\\u202f\\u205f\\u3000]*(emails|phones|addresses|organizations|anniversaries|media|online_services|links|notes|keywords|related_to|personal_info|speak_to_as|members|languages|custom_fields)?[\\t-\\r \\u0085\\u00a0\\u1680\\u2000-\\u200a\\u2028\\u2029\\u202f\\u205f\\u3000]*)*$"
    )]
    pub sections: Option<String>,
    /// `true` or `1`; accepted for compatibility.
    pub include_sensitive: Option<String>,
}

#[utoipa::path(get, path = "/api/v1/export/jscontact", tag = "export", params(JsQuery), responses(
    (status = 200, description = "`application/jscontact+json; charset=utf-8`: a JSON array of JSContact (RFC 9553) cards, streamed; attachment `mycorrhizal-contacts-YYYY-MM-DD.jscontact.json`"),
    (status = 400, description = "`VALIDATION_ERROR` naming `sections`"),
    (status = 500, description = "`{error: {code: INTERNAL_ERROR, message, details: {operation, category}}}`")))]
pub async fn jscontact(
    State(state): State<AppState>,
    user: AuthUser,
    Query(q): Query<JsQuery>,
) -> Result<Response, ApiError> {
    let today = state.today();
    respond(export::jscontact(state.engine.user(user.id), today, q.sections.as_deref()).await)
}

#[derive(Debug, Default, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct CsvQuery {
    /// `contacts` (default), `all` (every table below in one ZIP), `notes`, `activities`,
    /// `reminders`, `reminder_completions`, `relationships`, `life_events`, `gifts`,
    /// `conversation_agenda`, `households`, `household_members`, `cadence_policies`,
    /// `field_definitions`, `preferences`, `external_identities` or `external_activities`.
    #[param(
        pattern = "^[\\t-\\r \\u0085\\u00a0\\u1680\\u2000-\\u200a\\u2028\\u2029\\u202f\\u205f\\u3000]*(contacts|all|notes|activities|reminders|reminder_completions|relationships|life_events|gifts|conversation_agenda|households|household_members|cadence_policies|field_definitions|preferences|external_identities|external_activities)?[\\t-\\r \\u0085\\u00a0\\u1680\\u2000-\\u200a\\u2028\\u2029\\u202f\\u205f\\u3000]*$"
    )]
    pub table: Option<String>,
    /// `default`, or `legacy`: the existing implementation's file (sections `=== CONTACTS ===`,
    /// `RELATIONSHIPS`, `ACTIVITIES`, `NOTES`, `REMINDERS`, each with its header row and that
    /// implementation's column names: `ID,Firstname,Lastname,...`); `table` is then not read.
    #[param(pattern = "^(default|legacy)?$")]
    pub layout: Option<String>,
}

#[utoipa::path(get, path = "/api/v1/export", tag = "export", params(CsvQuery), responses(
    (status = 200, description = "`text/csv; charset=utf-8`, attachment `mycorrhizal-export-YYYY-MM-DD.csv` (or `…-<table>-YYYY-MM-DD.csv`). Your data is several tables: `contacts` (the default; its columns re-import with identity mappings) and, with `table=`, notes, activities, reminders, reminder_completions, relationships, life_events, gifts, conversation_agenda, households, household_members, cadence_policies, field_definitions, preferences, external_identities and external_activities (columns `id`, `created_at`, `updated_at`, then the record's own fields; lists and objects as JSON). `table=all` gives all of them at once: `application/zip`, attachment `mycorrhizal-export-YYYY-MM-DD.zip`, holding `contacts.csv` (the contacts table with each contact's `id` and `uid` first, which the other tables' `contact_id` columns name), one `<table>.csv` per table above (a table with no rows is a header-only file) and `README.txt` saying what each file holds. Cells that a spreadsheet would run as a formula are prefixed with `'`."),
    (status = 400, description = "`VALIDATION_ERROR` naming `table`"),
    (status = 500, description = "`{error: {code: INTERNAL_ERROR, message, details: {operation, category}}}`")))]
pub async fn csv(
    State(state): State<AppState>,
    user: AuthUser,
    Query(q): Query<CsvQuery>,
) -> Result<Response, ApiError> {
    let today = state.today();
    respond(export::csv(state.engine.user(user.id), today, q.table.as_deref(), q.layout.as_deref()).await)
}

#[utoipa::path(get, path = "/api/v1/export/bundle", tag = "export", responses(
    (status = 200, description = "`application/zip`, attachment `mycorrhizal-bundle-YYYY-MM-DD.zip`, streamed: the account bundle, everything of yours to recreate in another account (`POST /import/bundle`). `records/<kind>.jsonl` for every record kind (one `{id, created_at, updated_at, body}` object a line; references name other rows by these ids), `pictures/<name>` for each contact's picture (the name its `photo` field holds), `attachments/<id>` for each attachment's bytes, and `manifest.json` last: `{format: \"mycorrhizal-bundle\", format_version: 1, created_at, counts: {kind: rows}, files: {path: {sha256, bytes}}}`."),
    (status = 500, description = "`{error: {code: INTERNAL_ERROR, message, details: {operation, category}}}`")))]
pub async fn bundle(State(state): State<AppState>, user: AuthUser) -> Result<Response, ApiError> {
    let today = state.today();
    respond(crate::crm::bundle::export(state.engine.user(user.id), today).await)
}

#[cfg(test)]
mod tests {
    use serde_json::Value;

    use super::*;
    use crate::crm::export::{CHUNK, Failure, Out, Sink};

    /// What the handlers answer for an export whose producer is `producer`.
    async fn stream_export(
        content_type: &'static str,
        filename: String,
        operation: &'static str,
        producer: impl FnOnce(&mut Sink) -> Result<(), Failure> + Send + 'static,
    ) -> Response {
        let outcome = export::stream(operation, producer).await.map(|body| Download { content_type, filename, body });
        respond(outcome).expect("an export is answered")
    }

    async fn body_of(response: Response) -> (StatusCode, Result<Vec<u8>, String>) {
        let status = response.status();
        let body = axum::body::to_bytes(response.into_body(), usize::MAX).await;
        (status, body.map(|b| b.to_vec()).map_err(|e| e.to_string()))
    }

    /// A failure before the first chunk is the spec's nested 500 with its category; nothing of
    /// the export is sent.
    #[tokio::test]
    async fn a_failure_before_the_first_chunk_is_the_nested_500() {
        for (failure, category) in
            [(Failure::serialization("no card"), "serialization"), (Failure::database("read failed"), "database")]
        {
            let response = stream_export("text/vcard", "x.vcf".into(), "export:vcard4", move |out| {
                out.push(b"BEGIN:VCARD\r\n");
                Err(failure)
            })
            .await;
            let (status, body) = body_of(response).await;
            assert_eq!(status, StatusCode::INTERNAL_SERVER_ERROR);
            let body: Value = serde_json::from_slice(&body.expect("a whole body")).expect("json");
            assert_eq!(body["error"]["code"], "INTERNAL_ERROR");
            assert_eq!(body["error"]["details"], json!({ "operation": "export:vcard4", "category": category }));
            assert!(body["error"]["message"].as_str().is_some_and(|m| !m.is_empty()));
        }
    }

    /// After the first chunk the status is sent: a failure ends the stream with an error, so the
    /// client sees a broken download, never a complete-looking short file.
    #[tokio::test]
    async fn a_failure_after_the_first_chunk_breaks_the_stream() {
        let response = stream_export("text/csv", "x.csv".into(), "export:csv", |out| {
            out.push(&vec![b'a'; CHUNK + 1]);
            Err(Failure::database("page 2 failed"))
        })
        .await;
        let (status, body) = body_of(response).await;
        assert_eq!(status, StatusCode::OK);
        assert!(body.is_err(), "the body ends in an error");
    }

    /// A producer that writes nothing still answers 200 with an empty body.
    #[tokio::test]
    async fn an_empty_export_is_an_empty_body() {
        let (status, body) =
            body_of(stream_export("text/vcard", "x.vcf".into(), "export:vcard4", |_| Ok(())).await).await;
        assert_eq!((status, body.expect("body")), (StatusCode::OK, Vec::new()));
    }
}
