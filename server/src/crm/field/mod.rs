//! Custom fields: a user's typed field definitions ([`FieldDefinition`]: a label, an unchanging
//! key, a type with its constraints, a vCard projection and a sensitivity) and each contact's
//! values, kept in its CRM envelope under `crm.fields` keyed by the definition's key (so the
//! account bundle, a merge and an import carry them with the contact, and contact search finds
//! them). A definition projected as `vcard:X-NAME` also writes its normal-sensitivity values into
//! the card's passthrough as `X-NAME` properties, which every vCard door serves, and an `X-NAME`
//! a vCard brings in becomes the value again (`ops::absorb`).

use mycorrhizal_engine::{Invalid, Kind, Record, kind};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use utoipa::ToSchema;

use crate::crm::records::length as text;

pub mod ops;

/// Where a contact's values live in its CRM envelope: `{key: value}`.
pub const CRM_FIELDS: &str = "fields";

/// The value types, as the existing clients name them (`url` and `choice` are accepted as
/// `uri` and `enum`).
pub const TYPES: &[&str] =
    &["string", "text", "number", "boolean", "date", "datetime", "uri", "email", "phone", "enum"];
pub const SENSITIVITIES: &[&str] = &["normal", "private", "secret"];
/// The projection of a field kept out of vCards.
pub const INTERNAL: &str = "internal-only";

/// Index of definitions by key, unique (named after the input field a duplicate comes from).
pub const BY_KEY: &str = "key";

/// What a value of a definition may be. Every member is optional; `values` is the choices of
/// an `enum`; `multi` makes any type a list.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct Constraints {
    pub min: Option<f64>,
    pub max: Option<f64>,
    /// Longest text, in characters.
    #[serde(rename = "maxLength")]
    pub max_length: Option<u32>,
    /// A regular expression a text value must match (anywhere in it).
    pub pattern: Option<String>,
    #[serde(default)]
    pub values: Vec<String>,
    #[serde(default)]
    pub multi: bool,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct FieldDefinition {
    pub label: String,
    /// Unique per user, never changed: where values live and what the CSV column falls back to.
    pub key: String,
    /// One of [`TYPES`].
    pub kind: String,
    pub constraints: Constraints,
    /// [`INTERNAL`] or `vcard:X-NAME`.
    pub projection: String,
    /// One of [`SENSITIVITIES`]: only `normal` values are projected into vCards.
    pub sensitivity: String,
}

impl FieldDefinition {
    /// The vCard property (upper case, `X-` prefixed) its values are served as, if any.
    pub fn vcard_property(&self) -> Option<String> {
        self.projection.strip_prefix("vcard:").map(str::to_uppercase)
    }

    /// Whether its values go into vCards.
    pub fn projected(&self) -> bool {
        self.vcard_property().is_some() && self.sensitivity == "normal"
    }
}

impl Record for FieldDefinition {
    const KIND: Kind = kind!("field_definition", soft_delete);
    const UNIQUE: &'static [&'static str] = &[BY_KEY];

    fn validate(&self) -> Result<(), Invalid> {
        text("label", &self.label, 1, 200)?;
        text("key", &self.key, 1, 100)?;
        if self.key.trim() != self.key || self.key.chars().any(char::is_control) {
            return Err(Invalid::new("key", "must not start or end with spaces or hold control characters"));
        }
        if !TYPES.contains(&self.kind.as_str()) {
            return Err(Invalid::new("type", format!("must be one of {}", TYPES.join(", "))));
        }
        if !SENSITIVITIES.contains(&self.sensitivity.as_str()) {
            return Err(Invalid::new("sensitivity", "must be normal, private or secret"));
        }
        let projected = self.projection.strip_prefix("vcard:X-").or(self.projection.strip_prefix("vcard:x-"));
        let fine = |name: &str| {
            !name.is_empty() && name.len() <= 60 && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '-')
        };
        if self.projection != INTERNAL && !projected.is_some_and(fine) {
            return Err(Invalid::new("projection", "must be internal-only or vcard:X-NAME (letters, digits, dashes)"));
        }
        let c = &self.constraints;
        if let (Some(min), Some(max)) = (c.min, c.max)
            && min > max
        {
            return Err(Invalid::new("constraints.min", "must not be above max"));
        }
        if c.min.is_some_and(|v| !v.is_finite()) || c.max.is_some_and(|v| !v.is_finite()) {
            return Err(Invalid::new("constraints.min", "min and max must be finite numbers"));
        }
        if let Some(pattern) = &c.pattern {
            text("constraints.pattern", pattern, 0, 500)?;
            regex::Regex::new(pattern)
                .map_err(|e| Invalid::new("constraints.pattern", format!("not a regular expression: {e}")))?;
        }
        if self.kind == "enum" && c.values.is_empty() {
            return Err(Invalid::new("constraints.values", "a choice needs at least one value"));
        }
        if c.values.len() > 200 || c.values.iter().any(|v| v.trim().is_empty() || v.chars().count() > 200) {
            return Err(Invalid::new("constraints.values", "at most 200 values of 1 to 200 characters"));
        }
        Ok(())
    }

    fn index_entries(&self) -> Vec<(&'static str, String)> {
        vec![(BY_KEY, self.key.clone())]
    }
}

/// Checks `value` against definition `d`, answering it as stored (a number given as text is a
/// number, a date trimmed); `null` or `""` is "no value" (`None`). The error names why.
pub fn check(d: &FieldDefinition, value: &Value) -> Result<Option<Value>, String> {
    if d.constraints.multi {
        let items = match value {
            Value::Null => return Ok(None),
            Value::Array(items) => items.clone(),
            Value::String(s) if s.trim().is_empty() => return Ok(None),
            // A list given as text (a CSV cell, a vCard property): `; `-separated.
            Value::String(s) => s.split(';').map(|p| Value::String(p.trim().to_string())).collect(),
            other => vec![other.clone()],
        };
        if items.len() > 100 {
            return Err("at most 100 items".into());
        }
        let mut out = Vec::new();
        for (i, item) in items.iter().enumerate() {
            if let Some(v) = check_one(d, item).map_err(|e| format!("item {}: {e}", i + 1))? {
                out.push(v);
            }
        }
        return Ok((!out.is_empty()).then_some(Value::Array(out)));
    }
    check_one(d, value)
}

fn check_one(d: &FieldDefinition, value: &Value) -> Result<Option<Value>, String> {
    let c = &d.constraints;
    let textual = match value {
        Value::Null => return Ok(None),
        Value::String(s) if s.trim().is_empty() => return Ok(None),
        Value::String(s) => Some(s.trim().to_string()),
        _ => None,
    };
    match d.kind.as_str() {
        "number" => {
            let n = match (value, &textual) {
                (Value::Number(n), _) => n.as_f64(),
                (_, Some(t)) => t.parse::<f64>().ok().filter(|n| n.is_finite()),
                _ => None,
            }
            .ok_or("expected a number")?;
            if c.min.is_some_and(|min| n < min) || c.max.is_some_and(|max| n > max) {
                return Err(format!("{n} is out of the allowed range"));
            }
            // A whole number stays whole (`42`, not `42.0`, in every export).
            if n.fract() == 0.0 && n.abs() < 9e15 {
                return Ok(Some(Value::from(n as i64)));
            }
            Ok(Some(serde_json::Number::from_f64(n).map(Value::Number).ok_or("expected a number")?))
        }
        "boolean" => match (value, textual.as_deref()) {
            (Value::Bool(b), _) => Ok(Some(Value::Bool(*b))),
            (_, Some("true" | "yes" | "1")) => Ok(Some(Value::Bool(true))),
            (_, Some("false" | "no" | "0")) => Ok(Some(Value::Bool(false))),
            _ => Err("expected true or false".into()),
        },
        kind => {
            let t = textual.ok_or("expected text")?;
            if t.chars().count() > c.max_length.map_or(5000, |m| m.min(5000) as usize) {
                return Err(format!("longer than {} characters", c.max_length.unwrap_or(5000).min(5000)));
            }
            if let Some(pattern) = &c.pattern
                && !regex::Regex::new(pattern).is_ok_and(|r| r.is_match(&t))
            {
                return Err("does not match the required pattern".into());
            }
            let ok = match kind {
                "date" => calendar_day(&t),
                "datetime" => t.parse::<jiff::Timestamp>().is_ok(),
                "uri" => url::Url::parse(&t)
                    .is_ok_and(|u| !matches!(u.scheme(), "javascript" | "data" | "vbscript" | "file")),
                "email" => t
                    .split_once('@')
                    .is_some_and(|(l, d)| !l.is_empty() && d.contains('.') && !t.contains(char::is_whitespace)),
                "phone" => (5..=20).contains(&t.chars().filter(|c| c.is_ascii_digit() || *c == '+').count()),
                "enum" => c.values.iter().any(|v| v == &t),
                _ => true,
            };
            if !ok {
                return Err(match kind {
                    "date" => format!("{t:?} is not a date (YYYY-MM-DD or --MM-DD)"),
                    "datetime" => format!("{t:?} is not a date and time (RFC 3339)"),
                    "enum" => format!("{t:?} is not one of {}", c.values.join(", ")),
                    _ => format!("{t:?} is not a valid {kind}"),
                });
            }
            Ok(Some(Value::String(t)))
        }
    }
}

/// The definitions of the user, by key.
pub fn definitions(
    v: &mycorrhizal_engine::UserView,
) -> mycorrhizal_engine::Result<Vec<mycorrhizal_engine::Row<FieldDefinition>>> {
    let walk = mycorrhizal_engine::Walk { index: BY_KEY, from: "", to: None, after: None, descending: false };
    Ok(v.walk::<FieldDefinition>(walk, 10_000, |_| true)?.rows)
}

/// A stored value as one line of text (a CSV cell, a vCard property, a search document).
pub fn as_text(value: &Value) -> String {
    match value {
        Value::String(s) => s.clone(),
        Value::Array(items) => items.iter().map(as_text).collect::<Vec<_>>().join("; "),
        Value::Null => String::new(),
        other => other.to_string(),
    }
}

/// `YYYY-MM-DD` or `--MM-DD` naming a real calendar day (29 February is fine without a year).
fn calendar_day(t: &str) -> bool {
    let (year, rest) = match t.strip_prefix("--") {
        Some(rest) => (2000, rest),
        None => match t.split_once('-') {
            Some((y, rest)) if y.len() == 4 => match y.parse::<i16>() {
                Ok(y) => (y, rest),
                Err(_) => return false,
            },
            _ => return false,
        },
    };
    let Some((m, d)) = rest.split_once('-') else { return false };
    if m.len() != 2 || d.len() != 2 {
        return false;
    }
    match (m.parse::<i8>(), d.parse::<i8>()) {
        (Ok(m), Ok(d)) => jiff::civil::Date::new(year, m, d).is_ok(),
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn def(kind: &str, constraints: Constraints) -> FieldDefinition {
        FieldDefinition {
            label: "F".into(),
            key: "f".into(),
            kind: kind.into(),
            constraints,
            projection: INTERNAL.into(),
            sensitivity: "normal".into(),
        }
    }

    #[test]
    fn values_are_checked_per_type_and_read_back_as_stored() {
        let choice = Constraints { values: vec!["tea".into(), "coffee".into()], ..Constraints::default() };
        let list = Constraints { multi: true, ..Constraints::default() };
        let cases: Vec<(FieldDefinition, Value, Result<Option<Value>, ()>)> = vec![
            (def("number", Constraints::default()), json!("42"), Ok(Some(json!(42)))),
            (def("number", Constraints::default()), json!(2.5), Ok(Some(json!(2.5)))),
            (def("number", Constraints { max: Some(10.0), ..Constraints::default() }), json!(11), Err(())),
            (def("number", Constraints::default()), json!("NaN"), Err(())),
            (def("boolean", Constraints::default()), json!("yes"), Ok(Some(json!(true)))),
            (def("date", Constraints::default()), json!("--02-29"), Ok(Some(json!("--02-29")))),
            (def("date", Constraints::default()), json!("2023-02-29"), Err(())),
            (
                def("datetime", Constraints::default()),
                json!("2026-12-07T10:00:00Z"),
                Ok(Some(json!("2026-12-07T10:00:00Z"))),
            ),
            (def("uri", Constraints::default()), json!("javascript:alert(1)"), Err(())),
            (def("email", Constraints::default()), json!(" ann@example.org "), Ok(Some(json!("ann@example.org")))),
            (def("phone", Constraints::default()), json!("12"), Err(())),
            (def("enum", choice.clone()), json!("tea"), Ok(Some(json!("tea")))),
            (def("enum", choice), json!("Tea"), Err(())),
            (def("string", Constraints { max_length: Some(3), ..Constraints::default() }), json!("four"), Err(())),
            (
                def("string", Constraints { pattern: Some("^[A-Z]+$".into()), ..Constraints::default() }),
                json!("abc"),
                Err(()),
            ),
            (def("string", list.clone()), json!("a; b;; c"), Ok(Some(json!(["a", "b", "c"])))),
            (def("number", list), json!([1, "2"]), Ok(Some(json!([1, 2])))),
            (def("string", Constraints::default()), json!(null), Ok(None)),
            (def("string", Constraints::default()), json!("  "), Ok(None)),
        ];
        for (d, given, expected) in cases {
            let got = check(&d, &given);
            assert_eq!(got.clone().map_err(|_| ()), expected, "{} {given}", d.kind);
            if let Ok(Some(stored)) = got {
                assert_eq!(check(&d, &stored), Ok(Some(stored.clone())), "{} {stored} reads back as itself", d.kind);
            }
        }
    }
}
