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

/// A calendar day, `YYYY-MM-DD`, or blank for none (a query bound left empty by a form).
pub struct DayOrBlank;

impl PartialSchema for DayOrBlank {
    fn schema() -> RefOr<Schema> {
        OneOfBuilder::new()
            .item(string(KnownFormat::Date))
            .item(ObjectBuilder::new().schema_type(Type::String).max_length(Some(0)))
            .description(Some("A calendar day, `YYYY-MM-DD`, or empty for none"))
            .into()
    }
}
impl ToSchema for DayOrBlank {}

/// An RFC 3339 instant, or blank for none (a query bound left empty by a form).
pub struct InstantOrBlank;

impl PartialSchema for InstantOrBlank {
    fn schema() -> RefOr<Schema> {
        OneOfBuilder::new()
            .item(string(KnownFormat::DateTime))
            .item(ObjectBuilder::new().schema_type(Type::String).max_length(Some(0)))
            .description(Some("An RFC 3339 instant (e.g. `2026-12-07T08:00:00Z`), or empty for none"))
            .into()
    }
}
impl ToSchema for InstantOrBlank {}

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

// ---- rules across the fields of a request body -------------------------------------------
//
// A derived schema states each field's own rule; these state the rules between fields (one of
// two fields required, two that go together) as `allOf` the derived schema and `anyOf` the
// allowed shapes, so the document refuses what the server refuses.

use utoipa::openapi::Type as T;
use utoipa::openapi::schema::{AllOfBuilder, AnyOfBuilder};

/// A regex class of the characters Rust's `str::trim` removes (`char::is_whitespace`); a text
/// the server trims before its length check must hold one character outside it.
pub const NONBLANK: &str = "[^\\t-\\r \\u0085\\u00a0\\u1680\\u2000-\\u200a\\u2028\\u2029\\u202f\\u205f\\u3000]";

pub(super) fn typed(ty: T) -> ObjectBuilder {
    ObjectBuilder::new().schema_type(ty)
}

pub(super) fn nonblank() -> ObjectBuilder {
    typed(T::String).pattern(Some(NONBLANK))
}

/// An object shape: these members required, with these schemas where present.
pub(super) fn shape(required: &[&str], properties: Vec<(&str, ObjectBuilder)>) -> Schema {
    let mut object = ObjectBuilder::new();
    for name in required {
        object = object.required(*name);
    }
    for (name, schema) in properties {
        object = object.property(name, schema);
    }
    object.into()
}

/// The contact a per-contact record names: `entity_id` (non-empty) or `contact_id` (not null).
pub(super) fn contact_ref() -> Schema {
    AnyOfBuilder::new()
        .item(shape(&["entity_id"], vec![("entity_id", typed(T::String).min_length(Some(1)))]))
        .item(shape(&["contact_id"], vec![("contact_id", typed(T::Integer))]))
        .into()
}

pub(super) fn all_of<B: PartialSchema>(rules: Vec<Schema>, description: &str) -> RefOr<Schema> {
    let mut all = AllOfBuilder::new().item(B::schema());
    for rule in rules {
        all = all.item(rule);
    }
    all.description(Some(description)).into()
}

/// Declares `$name`: `$base`'s schema (inlined) with the rules `$rules` across its fields.
macro_rules! refined {
    ($(#[$doc:meta])* $name:ident = $base:ty, $description:literal, [$($rule:expr),* $(,)?]) => {
        $(#[$doc])*
        pub struct $name;

        impl utoipa::PartialSchema for $name {
            fn schema() -> utoipa::openapi::RefOr<utoipa::openapi::Schema> {
                $crate::crm::schema::all_of::<$base>(vec![$($rule),*], $description)
            }
        }

        impl utoipa::ToSchema for $name {
            fn schemas(out: &mut Vec<(String, utoipa::openapi::RefOr<utoipa::openapi::Schema>)>) {
                <$base as utoipa::ToSchema>::schemas(out);
            }
        }
    };
}
pub(super) use refined;

/// A partial date `{year?, month?, day?}`: any subset, month 1-12, day 1-31, a day needs a month.
pub struct PartialDate;

impl PartialSchema for PartialDate {
    fn schema() -> RefOr<Schema> {
        let int = |min: Option<f64>, max: Option<f64>| {
            ObjectBuilder::new()
                .schema_type(utoipa::openapi::schema::SchemaType::from_iter([T::Integer, T::Null]))
                .minimum(min)
                .maximum(max)
        };
        let members = typed(T::Object)
            .property("year", int(Some(i32::MIN as f64), Some(i32::MAX as f64)))
            .property("month", int(Some(1.0), Some(12.0)))
            .property("day", int(Some(1.0), Some(31.0)));
        AllOfBuilder::new()
            .item(members)
            .item(
                AnyOfBuilder::new()
                    .item(shape(&[], vec![("day", typed(T::Null))]))
                    .item(shape(&["month"], vec![("month", typed(T::Integer))])),
            )
            .description(Some("`{year?, month?, day?}`, any subset; month 1-12, day 1-31; a day needs a month"))
            .into()
    }
}
impl ToSchema for PartialDate {}

/// What a blank text means "none" for, or else [`DayOrInstant`].
pub struct DayOrInstantOrBlank;

impl PartialSchema for DayOrInstantOrBlank {
    fn schema() -> RefOr<Schema> {
        OneOfBuilder::new()
            .item(string(KnownFormat::Date))
            .item(string(KnownFormat::DateTime))
            .item(typed(T::String).pattern(Some(format!("^{}*$", &NONBLANK.replacen("[^", "[", 1)))))
            .description(Some(
                "An RFC 3339 instant (e.g. `2026-11-22T10:00:00Z`) or `YYYY-MM-DD` (midnight UTC); blank for none",
            ))
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
        .pattern(Some(NONBLANK))
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
    GroupName: 1..=200, "A circle's or tag's name: 1 to 200 characters, not blank";
}

/// The custom field names of an account: at most 100, each listed once.
pub fn field_names() -> utoipa::openapi::schema::Array {
    ArrayBuilder::new().items(FieldName::schema()).max_items(Some(100)).unique_items(true).build()
}
