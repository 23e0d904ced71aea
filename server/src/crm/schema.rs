//! Schema-only types: how the OpenAPI document describes the text forms the domain's inputs
//! accept, so the document states the same rule the parsers in `calendar` enforce. They are
//! named in `#[schema(value_type = ..)]` and `#[param(value_type = ..)]`; nothing holds them.

use utoipa::openapi::schema::{KnownFormat, ObjectBuilder, OneOfBuilder, SchemaFormat, Type};
use utoipa::openapi::{RefOr, Schema};
use utoipa::{PartialSchema, ToSchema};

fn string(format: KnownFormat) -> ObjectBuilder {
    ObjectBuilder::new().schema_type(Type::String).format(Some(SchemaFormat::KnownFormat(format)))
}

/// A calendar day, `YYYY-MM-DD`.
pub struct Day;

impl PartialSchema for Day {
    fn schema() -> RefOr<Schema> {
        string(KnownFormat::Date).description(Some("A calendar day, `YYYY-MM-DD`")).into()
    }
}
impl ToSchema for Day {}

/// An RFC 3339 instant with `Z` or an offset, or a calendar day (midnight UTC).
pub struct DayOrInstant;

impl PartialSchema for DayOrInstant {
    fn schema() -> RefOr<Schema> {
        OneOfBuilder::new()
            .item(string(KnownFormat::Date))
            .item(string(KnownFormat::DateTime))
            .description(Some("An RFC 3339 instant (e.g. `2026-11-22T10:00:00Z`) or `YYYY-MM-DD` (midnight UTC)"))
            .into()
    }
}
impl ToSchema for DayOrInstant {}
