//! Schema-only types: how the OpenAPI document describes the text forms the domain's inputs
//! accept, so the document states the same rule the parsers in `calendar` enforce. They are
//! named in `#[schema(value_type = ..)]` and `#[param(value_type = ..)]`; nothing holds them.

use utoipa::openapi::schema::{ArrayBuilder, KnownFormat, ObjectBuilder, OneOfBuilder, SchemaFormat, Type};
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

/// As [`DayOrInstant`], or blank for the default the field names.
pub struct DayOrInstantOrBlank;

impl PartialSchema for DayOrInstantOrBlank {
    fn schema() -> RefOr<Schema> {
        OneOfBuilder::new()
            .item(string(KnownFormat::Date))
            .item(string(KnownFormat::DateTime))
            .item(ObjectBuilder::new().schema_type(Type::String).pattern(Some(r"^\s*$")))
            .description(Some("An RFC 3339 instant, `YYYY-MM-DD` (midnight UTC), or blank for the default"))
            .into()
    }
}
impl ToSchema for DayOrInstantOrBlank {}

/// A text schema: `min..=max` characters, at least one of them not blank (values are trimmed).
fn text(min: usize, max: usize, description: &str) -> RefOr<Schema> {
    ObjectBuilder::new()
        .schema_type(Type::String)
        .min_length(Some(min))
        .max_length(Some(max))
        .pattern(Some(r"\S"))
        .description(Some(description))
        .into()
}

/// Schema-only text types for the names and labels whose length rule the document states.
macro_rules! text_type {
    ($($name:ident: $min:literal..=$max:literal, $description:literal;)*) => {$(
        #[doc = $description]
        pub struct $name;
        impl PartialSchema for $name {
            fn schema() -> RefOr<Schema> {
                text($min, $max, $description)
            }
        }
        impl ToSchema for $name {}
    )*};
}

text_type! {
    FieldName: 1..=50, "A custom field's name: 1 to 50 characters, not blank";
    GroupName: 1..=100, "A circle's or tag's name: 1 to 100 characters, not blank";
}

/// The custom field names of an account: at most 100, each listed once.
pub fn field_names() -> utoipa::openapi::schema::Array {
    ArrayBuilder::new().items(FieldName::schema()).max_items(Some(100)).unique_items(true).build()
}
