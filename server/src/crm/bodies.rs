//! Request-body schemas that state the rules between a body's fields (one of two fields
//! required, two that go together): each is the input type's derived schema `allOf` the allowed
//! shapes, so the document refuses what the server refuses. Kept apart from `schema` (the
//! building blocks) so that the input types' modules can use those blocks without a cycle.

use utoipa::openapi::Type as T;
use utoipa::openapi::schema::{AnyOfBuilder, ObjectBuilder};

use super::schema::{contact_ref, nonblank, refined, shape, typed};

refined!(
    /// A life event: for a contact, with a type or a description.
    LifeEventBody = super::depth::ops::LifeEventInput,
    "Names its contact by `entity_id` or `contact_id`; has a non-blank `type` or `description`",
    [
        contact_ref(),
        AnyOfBuilder::new()
            .item(shape(&["type"], vec![("type", nonblank())]))
            .item(shape(&["description"], vec![("description", nonblank())]))
            .into(),
    ]
);

refined!(
    /// A gift: for a contact; `value_cents` and `currency` go together.
    GiftBody = super::depth::ops::GiftInput,
    "Names its contact by `entity_id` or `contact_id`; `value_cents` and `currency` are both given or both absent (or null)",
    [
        contact_ref(),
        AnyOfBuilder::new()
            .item(shape(&["value_cents", "currency"], vec![("value_cents", typed(T::Integer)), ("currency", typed(T::String))]))
            .item(shape(&[], vec![("value_cents", typed(T::Null)), ("currency", typed(T::Null))]))
            .into(),
    ]
);

refined!(
    /// A conversation-agenda item: for a contact.
    AgendaBody = super::depth::ops::AgendaInput,
    "Names its contact by `entity_id` or `contact_id`",
    [contact_ref()]
);

refined!(
    /// A cadence policy: a contact policy names its contact, a circle or tag policy its target.
    CadencePolicyBody = super::cadence::ops::PolicyInput,
    "`scope` `contact` (or absent) needs `contact_id`; `circle` or `tag` needs a non-blank `target`",
    [AnyOfBuilder::new()
        .item(shape(
            &["contact_id"],
            vec![
                ("scope", ObjectBuilder::new().enum_values(Some([serde_json::json!("contact"), serde_json::Value::Null]))),
                ("contact_id", typed(T::Integer)),
            ],
        ))
        .item(shape(
            &["scope", "target"],
            vec![
                ("scope", typed(T::String).enum_values(Some(["circle", "tag"]))),
                ("target", nonblank()),
            ],
        ))
        .into()]
);

refined!(
    /// A new household member: names its contact.
    HouseholdMemberBody = super::household::ops::MemberInput,
    "Names its contact by a non-blank `member_vcard_uid` or by `contact_id`",
    [AnyOfBuilder::new()
        .item(shape(&["member_vcard_uid"], vec![("member_vcard_uid", nonblank())]))
        .item(shape(&["contact_id"], vec![("contact_id", typed(T::Integer))]))
        .into()]
);
