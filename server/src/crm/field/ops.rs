//! The operations on custom fields every front door shares: definitions (list, get, create,
//! update with the key unchanged, delete with every value), a contact's values (read, replace
//! as a whole, validated per definition, all or nothing), the vCard projection kept in step
//! ([`project`]) and what an import brings in ([`absorb`]).

use mycorrhizal_codecs::record::{NeutralRecord, PASSTHROUGH_VCARD_PROPS};
use mycorrhizal_engine::{Invalid, Precondition, Row, TxUser, UserScope, UserView, Walk};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value, json};
use utoipa::ToSchema;

pub use super::definitions;
use super::{BY_KEY, CRM_FIELDS, Constraints, FieldDefinition, INTERNAL, check};
use crate::crm::contact::{Contact, INDEX_FIELD};
use crate::crm::cursor::{decode_cursor, encode_cursor};
use crate::crm::{Error, Result, Stamp};

/// A definition as sent: `type` one of the types (`url` and `choice` read as `uri` and `enum`).
#[derive(Debug, Clone, Deserialize, ToSchema)]
pub struct DefinitionInput {
    /// 1 to 200 characters.
    #[serde(default)]
    #[schema(required = true, max_length = 200)]
    pub label: String,
    /// 1 to 100 characters, unique; cannot change once created.
    #[schema(max_length = 100)]
    pub key: Option<String>,
    #[serde(rename = "type", default)]
    #[schema(required = true)]
    pub kind: String,
    pub constraints: Option<Constraints>,
    /// `internal-only` (default) or `vcard:X-NAME`.
    pub projection: Option<String>,
    /// `normal` (default), `private` or `secret`.
    pub sensitivity: Option<String>,
    /// Always `contact` (the only target).
    pub target: Option<String>,
}

/// A definition as clients read it.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct DefinitionView {
    pub id: u64,
    pub label: String,
    pub key: String,
    #[serde(rename = "type")]
    pub kind: String,
    pub target: &'static str,
    pub constraints: Constraints,
    pub projection: String,
    pub sensitivity: String,
    #[serde(flatten)]
    pub stamp: Stamp,
}

impl DefinitionView {
    pub fn of(row: &Row<FieldDefinition>) -> DefinitionView {
        let d = &row.body;
        DefinitionView {
            id: row.id,
            label: d.label.clone(),
            key: d.key.clone(),
            kind: d.kind.clone(),
            target: "contact",
            constraints: d.constraints.clone(),
            projection: d.projection.clone(),
            sensitivity: d.sensitivity.clone(),
            stamp: Stamp::of(row),
        }
    }
}

/// `{field_definitions, total, next_cursor, limit}`.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct DefinitionPage {
    pub field_definitions: Vec<DefinitionView>,
    pub total: u64,
    pub next_cursor: String,
    /// How a client keeps this collection current.
    pub sync: crate::crm::cursor::SyncInfo,
    pub limit: usize,
}

/// One value of a contact.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct ValueView {
    pub field_definition_id: u64,
    pub key: String,
    pub label: String,
    #[serde(rename = "type")]
    pub kind: String,
    /// As stored: text, a number, true/false, or a list of those.
    #[schema(value_type = Object)]
    pub value: Value,
    pub contact_id: u64,
    /// The contact's vCard UID (the existing clients' `entity_id`).
    pub entity_id: String,
}

/// `{field_values}`, and `message` after a write.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct ValueList {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
    pub field_values: Vec<ValueView>,
}

/// One value to set: the definition by id (or key) and the value (`null` or `""`: none).
#[derive(Debug, Clone, Deserialize, ToSchema)]
pub struct ValueInput {
    #[schema(maximum = 9223372036854775807_u64)]
    pub field_definition_id: Option<u64>,
    pub key: Option<String>,
    #[serde(default)]
    #[schema(value_type = Object)]
    pub value: Value,
}

/// [`definitions`] inside a write transaction.
pub fn definitions_in(tx: &TxUser<'_, '_>) -> mycorrhizal_engine::Result<Vec<Row<FieldDefinition>>> {
    let mut out = Vec::new();
    for id in tx.find_range::<FieldDefinition>(BY_KEY, "", "\u{10FFFF}")? {
        out.push(tx.get::<FieldDefinition>(id)?);
    }
    Ok(out)
}

/// A page of definitions by key.
pub fn list(v: &UserView, cursor: Option<&str>, limit: usize) -> Result<DefinitionPage> {
    let after = cursor.filter(|c| !c.trim().is_empty()).map(decode_cursor).transpose()?;
    let walk = Walk {
        index: BY_KEY,
        from: "",
        to: None,
        after: after.as_ref().map(|(value, id)| (value.as_str(), *id)),
        descending: false,
    };
    let page = v.walk::<FieldDefinition>(walk, limit, |_| true)?;
    Ok(DefinitionPage {
        field_definitions: page.rows.iter().map(DefinitionView::of).collect(),
        total: v.count::<FieldDefinition>()?,
        next_cursor: page.next.as_ref().map(|(value, id)| encode_cursor(value, *id)).unwrap_or_default(),
        sync: crate::crm::cursor::SyncInfo::full_resync(),
        limit,
    })
}

fn canonical_type(kind: &str) -> String {
    match kind.trim() {
        "url" => "uri".into(),
        "choice" => "enum".into(),
        other => other.to_string(),
    }
}

fn projection_of(given: Option<String>, kept: Option<&str>) -> String {
    match given.map(|p| p.trim().to_string()).filter(|p| !p.is_empty()) {
        Some(p) => match p.strip_prefix("vcard:") {
            Some(name) => format!("vcard:{}", name.to_uppercase()),
            None => p,
        },
        None => kept.unwrap_or(INTERNAL).to_string(),
    }
}

fn check_target(target: &Option<String>) -> Result<()> {
    match target.as_deref().map(str::trim) {
        None | Some("") | Some("contact") => Ok(()),
        Some(_) => Err(Error::invalid("target", "must be contact")),
    }
}

/// A new definition (409 on `key` when the user has one with that key).
pub async fn create(scope: &UserScope, input: DefinitionInput) -> Result<Row<FieldDefinition>> {
    check_target(&input.target)?;
    let key = input.key.as_deref().map(str::trim).filter(|k| !k.is_empty()).map(str::to_string);
    let label = input.label.trim().to_string();
    let definition = FieldDefinition {
        // No key: one made from the label (`Shoe size` → `shoe_size`).
        key: key.unwrap_or_else(|| {
            label
                .to_lowercase()
                .split(|c: char| !c.is_alphanumeric())
                .filter(|p| !p.is_empty())
                .collect::<Vec<_>>()
                .join("_")
        }),
        label,
        kind: canonical_type(&input.kind),
        constraints: input.constraints.unwrap_or_default(),
        projection: projection_of(input.projection, None),
        sensitivity: input
            .sensitivity
            .map(|s| s.trim().to_string())
            .filter(|s| !s.is_empty())
            .unwrap_or_else(|| "normal".into()),
    };
    Ok(scope.write_async(move |tx| tx.create(definition.clone())).await?)
}

/// Replaces label, type and constraints of definition `id` (projection and sensitivity when
/// given); its key cannot change. Values already stored are kept as they are; a new projection
/// or sensitivity reaches every contact's vCard in the same transaction.
pub async fn update(
    scope: &UserScope,
    id: u64,
    pre: Precondition,
    input: DefinitionInput,
) -> Result<Row<FieldDefinition>> {
    check_target(&input.target)?;
    Ok(scope
        .write_async(move |tx| {
            let before = tx.get::<FieldDefinition>(id)?.body;
            if let Some(key) = input.key.as_deref().map(str::trim).filter(|k| !k.is_empty())
                && key != before.key
            {
                return Err(mycorrhizal_engine::Error::Invalid(Invalid::new("key", "cannot change once created")));
            }
            let row = tx.put(
                id,
                pre,
                FieldDefinition {
                    label: input.label.trim().to_string(),
                    key: before.key.clone(),
                    kind: canonical_type(&input.kind),
                    constraints: input.constraints.clone().unwrap_or_default(),
                    projection: projection_of(input.projection.clone(), Some(&before.projection)),
                    sensitivity: input
                        .sensitivity
                        .clone()
                        .map(|s| s.trim().to_string())
                        .filter(|s| !s.is_empty())
                        .unwrap_or(before.sensitivity.clone()),
                },
            )?;
            if row.body.projected() != before.projected() || row.body.vcard_property() != before.vcard_property() {
                reproject_holders(tx, &before)?;
            }
            Ok(row)
        })
        .await?)
}

/// Deletes definition `id` and, in the same transaction, its value on every contact (and the
/// vCard property that served it): how many contacts held one.
pub async fn delete(scope: &UserScope, id: u64, pre: Precondition) -> Result<u64> {
    Ok(scope
        .write_async(move |tx| {
            let gone = tx.get::<FieldDefinition>(id)?.body;
            tx.delete::<FieldDefinition>(id, pre)?;
            let defs: Vec<FieldDefinition> = definitions_in(tx)?.into_iter().map(|r| r.body).collect();
            let holders = tx.find::<Contact>(INDEX_FIELD, &gone.key)?;
            for contact in &holders {
                tx.update::<Contact>(*contact, Precondition::Any, |c| {
                    c.crm = with_fields(&c.crm, |fields| {
                        fields.remove(&gone.key);
                    })?;
                    project(c, &defs, std::slice::from_ref(&gone))
                })?;
            }
            Ok(holders.len() as u64)
        })
        .await?)
}

/// Re-projects the contacts holding a value of `before.key` after its definition changed
/// (`before`'s old vCard property is cleared). Only a contact with a value ever had one.
fn reproject_holders(tx: &TxUser<'_, '_>, before: &FieldDefinition) -> mycorrhizal_engine::Result<()> {
    let defs: Vec<FieldDefinition> = definitions_in(tx)?.into_iter().map(|r| r.body).collect();
    for contact in tx.find::<Contact>(INDEX_FIELD, &before.key)? {
        tx.update::<Contact>(contact, Precondition::Any, |c| project(c, &defs, std::slice::from_ref(before)))?;
    }
    Ok(())
}

fn with_fields(crm: &str, change: impl FnOnce(&mut Map<String, Value>)) -> std::result::Result<String, Invalid> {
    let mut crm: Map<String, Value> = serde_json::from_str(crm).map_err(|e| Invalid::new("crm", e.to_string()))?;
    let mut fields = crm.get(CRM_FIELDS).and_then(Value::as_object).cloned().unwrap_or_default();
    change(&mut fields);
    if fields.is_empty() {
        crm.remove(CRM_FIELDS);
    } else {
        crm.insert(CRM_FIELDS.into(), Value::Object(fields));
    }
    Ok(Value::Object(crm).to_string())
}

/// Puts the contact's projected values into its passthrough as vCard properties (`X-NAME`,
/// replacing any of that name), and clears the properties of `gone` definitions and of values
/// no longer there: the one place the vCard form of custom fields is made.
pub fn project(
    contact: &mut Contact,
    defs: &[FieldDefinition],
    gone: &[FieldDefinition],
) -> std::result::Result<(), Invalid> {
    let crm: Map<String, Value> = serde_json::from_str(&contact.crm).unwrap_or_default();
    let fields = crm.get(CRM_FIELDS).and_then(Value::as_object).cloned().unwrap_or_default();
    let mut passthrough: Map<String, Value> =
        serde_json::from_str(&contact.passthrough).map_err(|e| Invalid::new("passthrough", e.to_string()))?;
    let owned: Vec<String> =
        defs.iter().chain(gone).filter_map(FieldDefinition::vcard_property).map(|p| p.to_lowercase()).collect();
    let mut props: Vec<Value> =
        passthrough.get(PASSTHROUGH_VCARD_PROPS).and_then(Value::as_array).cloned().unwrap_or_default();
    props.retain(|p| !p["name"].as_str().is_some_and(|n| owned.contains(&n.to_lowercase())));
    for d in defs.iter().filter(|d| d.projected()) {
        if let (Some(property), Some(value)) = (d.vcard_property(), fields.get(&d.key)) {
            let text = super::as_text(value);
            if !text.is_empty() {
                props.push(json!({ "name": property.to_lowercase(), "params": {}, "type": "unknown", "value": text }));
            }
        }
    }
    if props.is_empty() {
        passthrough.remove(PASSTHROUGH_VCARD_PROPS);
    } else {
        passthrough.insert(PASSTHROUGH_VCARD_PROPS.into(), Value::Array(props));
    }
    contact.passthrough = Value::Object(passthrough).to_string();
    Ok(())
}

fn view_values(defs: &[Row<FieldDefinition>], contact: &Row<Contact>) -> Vec<ValueView> {
    let crm: Map<String, Value> = serde_json::from_str(&contact.body.crm).unwrap_or_default();
    let fields = crm.get(CRM_FIELDS).and_then(Value::as_object).cloned().unwrap_or_default();
    defs.iter()
        .filter_map(|d| {
            let value = fields.get(&d.body.key)?.clone();
            Some(ValueView {
                field_definition_id: d.id,
                key: d.body.key.clone(),
                label: d.body.label.clone(),
                kind: d.body.kind.clone(),
                value,
                contact_id: contact.id,
                entity_id: contact.body.uid.clone(),
            })
        })
        .collect()
}

/// Contact `id`'s values, one per definition that has one, by key.
pub fn values(v: &UserView, id: u64) -> Result<Vec<ValueView>> {
    let contact = v.get::<Contact>(id)?;
    Ok(view_values(&definitions(v)?, &contact))
}

/// Replaces contact `id`'s values with `given` (each checked against its definition; the first
/// error, named `field_values[i].value`, writes nothing), and its vCard properties with them.
pub async fn put_values(scope: &UserScope, id: u64, given: Vec<ValueInput>) -> Result<Vec<ValueView>> {
    let (contact, defs) = scope
        .write_async(move |tx| {
            tx.get::<Contact>(id)?;
            let defs = definitions_in(tx)?;
            let mut fields = Map::new();
            for (i, item) in given.iter().enumerate() {
                let def = defs
                    .iter()
                    .find(|d| {
                        item.field_definition_id.is_some_and(|fid| fid == d.id)
                            || (item.field_definition_id.is_none() && item.key.as_deref() == Some(d.body.key.as_str()))
                    })
                    .ok_or_else(|| {
                        mycorrhizal_engine::Error::Invalid(Invalid::new(
                            format!("field_values[{i}].field_definition_id"),
                            "names no field definition of yours",
                        ))
                    })?;
                match check(&def.body, &item.value) {
                    Ok(Some(value)) => {
                        fields.insert(def.body.key.clone(), value);
                    }
                    Ok(None) => {
                        fields.remove(&def.body.key);
                    }
                    Err(reason) => {
                        return Err(mycorrhizal_engine::Error::Invalid(Invalid::new(
                            format!("field_values[{i}].value"),
                            reason,
                        )));
                    }
                }
            }
            let bodies: Vec<FieldDefinition> = defs.iter().map(|d| d.body.clone()).collect();
            let contact = tx.update::<Contact>(id, Precondition::Any, |c| {
                c.crm = with_fields(&c.crm, |kept| *kept = fields)?;
                project(c, &bodies, &[])
            })?;
            Ok((contact, defs))
        })
        .await?;
    Ok(view_values(&defs, &contact))
}

/// An incoming record's custom field values (an import): a text value a CSV column put in
/// `crm.fields` under a definition's key, and an `X-NAME` property of a definition projected as
/// `vcard:X-NAME`, each checked against its definition and stored typed; what fails is left
/// out with a note, and values of keys no definition has are dropped with a note.
pub fn absorb(record: &mut NeutralRecord, defs: &[FieldDefinition]) -> Vec<String> {
    let mut notes = Vec::new();
    let mut fields: Map<String, Value> =
        record.crm.get(CRM_FIELDS).and_then(Value::as_object).cloned().unwrap_or_default();
    let props = record.passthrough.get(PASSTHROUGH_VCARD_PROPS).and_then(Value::as_array).cloned().unwrap_or_default();
    for d in defs {
        let Some(property) = d.vcard_property() else { continue };
        if fields.contains_key(&d.key) {
            continue;
        }
        if let Some(p) = props.iter().find(|p| p["name"].as_str().is_some_and(|n| n.eq_ignore_ascii_case(&property))) {
            let text = p["value"].as_str().map_or_else(|| p["value"].to_string(), str::to_string);
            fields.insert(d.key.clone(), Value::String(text));
        }
    }
    let mut typed = Map::new();
    for (key, value) in fields {
        match defs.iter().find(|d| d.key == key) {
            None => notes.push(format!("custom field {key:?} was left out: no field has that key")),
            Some(d) => match check(d, &value) {
                Ok(Some(v)) => {
                    typed.insert(key, v);
                }
                Ok(None) => {}
                Err(reason) => notes.push(format!("{}: {reason}; left out", d.label)),
            },
        }
    }
    if typed.is_empty() {
        record.crm.remove(CRM_FIELDS);
    } else {
        record.crm.insert(CRM_FIELDS.into(), Value::Object(typed));
    }
    notes
}
