//! The small add forms a contact's page shows (log an activity; add a life event, a gift idea
//! or an agenda item; its custom field values), apart from their handlers (`journal`, `depth`,
//! `fields`): the page that renders
//! them (`contacts::render`) is also what those handlers answer a refused form with, so the
//! forms live below both and the imports run one way.

use maud::{Markup, html};
use mycorrhizal_engine::Row;

use super::page::{Chrome, Sent, Viewer};
use crate::crm::field::ops::ValueView;
use crate::crm::field::{FieldDefinition, as_text};

pub const GIFT_STATUSES: [(&str, &str); 4] =
    [("idea", "gift.idea"), ("purchased", "gift.purchased"), ("given", "gift.given"), ("received", "gift.received")];

pub fn gift_status_key(status: &str) -> &'static str {
    GIFT_STATUSES.iter().find(|(s, _)| *s == status).map(|(_, k)| *k).unwrap_or("gift.idea")
}

/// The three add forms, folded away under their section headings (the one `sent` back with its
/// error unfolded, what was typed kept).
pub fn depth_forms(viewer: &Viewer, id: u64, sent: Option<&Sent>, more: Markup) -> Markup {
    let c = viewer.chrome();
    let t = |k| viewer.t(k);
    let (life, gift, agenda) = (Sent::to(sent, "life"), Sent::to(sent, "gift"), Sent::to(sent, "agenda"));
    html! {
        section class="card" aria-labelledby="h-add-more" {
            h2 id="h-add-more" { (t("depth.add_more")) }
            details open[life.is_some()] {
                summary { (t("depth.add_life_event")) }
                form method="post" action={ "/contacts/" (id) "/life-events" } class="stack" {
                    (c.csrf_field())
                    (Sent::alert(life))
                    label for="life-type" { (t("depth.life_type")) }
                    input id="life-type" name="type" required maxlength="100" list="life-types" value=(Sent::value(life, "type")) aria-invalid=[Sent::invalid(life, "type")];
                    datalist id="life-types" { @for k in ["graduated", "married", "moved", "new_job", "child_born", "retired"] { option value=(k) {} } }
                    label for="life-date" { (t("depth.life_date")) }
                    input id="life-date" name="date" placeholder="YYYY-MM-DD" aria-describedby="life-date-hint" value=(Sent::value(life, "date")) aria-invalid=[Sent::invalid(life, "date")];
                    p class="hint" id="life-date-hint" { (t("depth.life_date_hint")) }
                    label for="life-description" { (t("activity.description")) }
                    textarea id="life-description" name="description" rows="2" maxlength="2000" aria-invalid=[Sent::invalid(life, "description")] { (Sent::value(life, "description")) }
                    button type="submit" { (t("depth.add_life_event")) }
                }
            }
            details open[gift.is_some()] {
                summary { (t("depth.add_gift")) }
                form method="post" action={ "/contacts/" (id) "/gifts" } class="stack" {
                    (c.csrf_field())
                    (Sent::alert(gift))
                    label for="gift-description" { (t("depth.gift_description")) }
                    input id="gift-description" name="description" required maxlength="2000" value=(Sent::value(gift, "description")) aria-invalid=[Sent::invalid(gift, "description")];
                    div class="row" {
                        div {
                            label for="gift-status" { (t("depth.gift_status")) }
                            select id="gift-status" name="status" aria-invalid=[Sent::invalid(gift, "status")] { @for (s, k) in GIFT_STATUSES { option value=(s) selected[Sent::value(gift, "status") == s] { (t(k)) } } }
                        }
                        div { label for="gift-occasion" { (t("depth.gift_occasion")) } input id="gift-occasion" name="occasion" maxlength="200" value=(Sent::value(gift, "occasion")) aria-invalid=[Sent::invalid(gift, "occasion")]; }
                    }
                    button type="submit" { (t("depth.add_gift")) }
                }
            }
            details open[agenda.is_some()] {
                summary { (t("depth.add_agenda")) }
                form method="post" action={ "/contacts/" (id) "/agenda" } class="stack" {
                    (c.csrf_field())
                    (Sent::alert(agenda))
                    label for="agenda-content" { (t("depth.agenda_content")) }
                    input id="agenda-content" name="content" required maxlength="2000" value=(Sent::value(agenda, "content")) aria-invalid=[Sent::invalid(agenda, "content")];
                    button type="submit" { (t("depth.add_agenda")) }
                }
            }
            (more)
            p { a href={ "/contacts/" (id) "/timeline" } { (t("depth.timeline")) } }
        }
    }
}

/// The form that logs an activity, posting to `action` (about `contact` when given); `sent`:
/// this form sent back with its error.
pub fn activity_form(viewer: &Viewer, action: &str, contact: Option<u64>, sent: Option<&Sent>) -> Markup {
    let c = viewer.chrome();
    let t = |k| viewer.t(k);
    let date = if sent.is_some() { Sent::value(sent, "date") } else { viewer.today.to_string() };
    html! {
        form method="post" action=(action) class="stack" {
            (c.csrf_field())
            (Sent::alert(sent))
            @if let Some(id) = contact { input type="hidden" name="contact_id" value=(id); }
            label for="activity-title" { (t("activity.title")) }
            input id="activity-title" name="title" required maxlength="200" placeholder=(t("activity.placeholder")) value=(Sent::value(sent, "title")) aria-invalid=[Sent::invalid(sent, "title")];
            div class="row" {
                div { label for="activity-date" { (t("activity.date")) } input id="activity-date" name="date" type="date" required value=(date) aria-invalid=[Sent::invalid(sent, "date")]; }
                div { label for="activity-location" { (t("activity.location")) } input id="activity-location" name="location" maxlength="300" value=(Sent::value(sent, "location")) aria-invalid=[Sent::invalid(sent, "location")]; }
            }
            label for="activity-description" { (t("activity.description")) }
            textarea id="activity-description" name="description" rows="2" maxlength="2000" aria-invalid=[Sent::invalid(sent, "description")] { (Sent::value(sent, "description")) }
            button type="submit" { (t("activity.add")) }
        }
    }
}

/// The form field of a definition's value on the contact page.
pub fn field_input_name(id: u64) -> String {
    format!("field-{id}")
}

/// A contact's custom field values, and the form that edits them (`sent`: that form sent back with its error).
/// The sections a share may hold, each with its label key; the sensitive ones are not ticked
/// at first.
const SHARE_SECTIONS: &[(&str, &str, bool)] = &[
    ("emails", "share.s_emails", true),
    ("phones", "share.s_phones", true),
    ("addresses", "share.s_addresses", true),
    ("organizations", "share.s_organizations", true),
    ("anniversaries", "share.s_anniversaries", true),
    ("media", "share.s_media", true),
    ("online_services", "share.s_online_services", true),
    ("links", "share.s_links", true),
    ("notes", "share.s_notes", true),
    ("keywords", "share.s_keywords", true),
    ("speak_to_as", "share.s_speak_to_as", true),
    ("languages", "share.s_languages", true),
    ("related_to", "share.s_related_to", false),
    ("personal_info", "share.s_personal_info", false),
    ("custom_fields", "share.s_custom_fields", false),
];

/// The contact page's share form: another user of this server gets a copy of the sections
/// ticked, which they review before anything is added to their book.
pub fn share_card(c: &Chrome<'_>, viewer: &Viewer, id: u64, users: &[(u64, String)], sent: Option<&Sent>) -> Markup {
    let t = |k| viewer.t(k);
    let sent = Sent::to(sent, "share");
    let ticked = |name: &str, default: bool| match sent {
        Some(s) => s.fields.0.iter().any(|(k, v)| k == "sections" && v == name),
        None => default,
    };
    html! {
        section class="card" aria-labelledby="h-share" {
            h2 id="h-share" { (t("share.title")) }
            @if users.is_empty() {
                p class="muted" { (t("share.no_users")) }
            } @else {
                details open[sent.is_some()] {
                    summary { (t("share.with_someone")) }
                    form method="post" action={ "/contacts/" (id) "/share" } class="stack" {
                        (c.csrf_field())
                        (Sent::alert(sent))
                        label for="share-to" { (t("share.to_user")) }
                        select id="share-to" name="to_user_id" required aria-invalid=[Sent::invalid(sent, "to_user_id")] {
                            @for (uid, name) in users { option value=(uid) { (name) } }
                        }
                        fieldset {
                            legend { (t("share.sections")) }
                            @for (name, key, default) in SHARE_SECTIONS {
                                label class="check" { input type="checkbox" name="sections" value=(name) checked[ticked(name, *default)]; " " (t(key)) }
                            }
                        }
                        label class="check" { input type="checkbox" name="include_sensitive" value="1"; " " (t("share.include_sensitive")) }
                        p class="hint" { (t("share.hint")) }
                        button type="submit" { (t("share.send")) }
                    }
                }
            }
        }
    }
}

/// The contact page's links to other systems (a person in the photo library, a document), each
/// opening there in a new tab, each removable; nothing when there are none.
pub fn external_card(c: &Chrome<'_>, viewer: &Viewer, identities: &[serde_json::Value]) -> Markup {
    let t = |k| viewer.t(k);
    let text = |v: &serde_json::Value, k: &str| v[k].as_str().unwrap_or("").to_string();
    html! {
        @if !identities.is_empty() {
            section class="card" aria-labelledby="h-external" {
                h2 id="h-external" { (t("external.title")) }
                ul class="items" {
                    @for i in identities {
                        @let meta = &i["metadata"];
                        @let shown = [meta["person_name"].as_str(), meta["title"].as_str(), meta["name"].as_str()]
                            .into_iter().flatten().find(|s| !s.is_empty()).map(str::to_string).unwrap_or_else(|| text(i, "external_id"));
                        li {
                            span class="muted" { (text(i, "system")) } " "
                            @if text(i, "url").is_empty() { (shown) }
                            @else { a href=(text(i, "url")) rel="noopener noreferrer" target="_blank" { (shown) } }
                            (c.button_form(&format!("/external-identities/{}/delete", i["id"]), t("external.unlink"), "small secondary", Some(t("external.unlink_confirm"))))
                        }
                    }
                }
            }
        }
    }
}

/// The contact page's way into a merge: who to merge this contact with, as typed; the merge
/// page then shows the contacts found, or the preview when one is.
pub fn merge_card(viewer: &Viewer, id: u64) -> Markup {
    let t = |k| viewer.t(k);
    html! {
        section class="card" aria-labelledby="h-merge" {
            h2 id="h-merge" { (t("dups.merge_title")) }
            details {
                summary { (t("dups.merge_with")) }
                form method="get" action="/contacts/merge" class="stack" {
                    input type="hidden" name="keep" value=(id);
                    label for="merge-with" { (t("dups.merge_who")) }
                    input id="merge-with" name="with" type="search" required;
                    p class="muted" { (t("dups.merge_with_hint")) }
                    button type="submit" { (t("dups.find_other")) }
                }
            }
        }
    }
}

pub fn field_card(
    c: &Chrome<'_>,
    viewer: &Viewer,
    id: u64,
    defs: &[Row<FieldDefinition>],
    values: &[ValueView],
    sent: Option<&Sent>,
) -> Markup {
    let t = |k| viewer.t(k);
    let sent = Sent::to(sent, "fields");
    let value_of = |d: &Row<FieldDefinition>| values.iter().find(|v| v.field_definition_id == d.id).map(|v| &v.value);
    html! {
        section class="card" aria-labelledby="h-fields" {
            h2 id="h-fields" { (t("fields.title")) }
            @if defs.is_empty() {
                p class="muted" { (t("fields.none")) " " a href="/settings/fields" { (t("fields.manage")) } }
            } @else {
                dl {
                    @for d in defs {
                        @if let Some(v) = value_of(d) {
                            dt { (d.body.label) }
                            dd { @if d.body.kind == "uri" { a href=(as_text(v)) rel="noopener noreferrer" { (as_text(v)) } } @else { (as_text(v)) } }
                        }
                    }
                }
                details open[sent.is_some()] {
                    summary { (t("fields.edit")) }
                    form method="post" action={ "/contacts/" (id) "/fields" } class="stack" {
                        (c.csrf_field())
                        (Sent::alert(sent))
                        @for (i, d) in defs.iter().enumerate() {
                            @let name = field_input_name(d.id);
                            @let shown = if sent.is_some() { Sent::value(sent, &name) } else { value_of(d).map(as_text).unwrap_or_default() };
                            @let invalid = Sent::invalid(sent, &format!("field_values[{i}].value"));
                            label for=(name) { (d.body.label) }
                            (input_of(&d.body, &name, &shown, invalid, viewer))
                        }
                        button type="submit" { (t("fields.save")) }
                    }
                }
            }
        }
    }
}

fn input_of(d: &FieldDefinition, name: &str, shown: &str, invalid: Option<&str>, viewer: &Viewer) -> Markup {
    let c = &d.constraints;
    if d.kind == "enum" && !c.multi {
        return html! {
            select id=(name) name=(name) aria-invalid=[invalid] {
                option value="" { (viewer.t("fields.no_value")) }
                @for v in &c.values { option value=(v) selected[shown == v] { (v) } }
            }
        };
    }
    if d.kind == "boolean" && !c.multi {
        return html! {
            select id=(name) name=(name) aria-invalid=[invalid] {
                option value="" { (viewer.t("fields.no_value")) }
                option value="true" selected[shown == "true"] { (viewer.t("fields.yes")) }
                option value="false" selected[shown == "false"] { (viewer.t("fields.no")) }
            }
        };
    }
    if d.kind == "text" {
        return html! { textarea id=(name) name=(name) rows="3" maxlength="5000" aria-invalid=[invalid] { (shown) } };
    }
    let kind = match (d.kind.as_str(), c.multi) {
        (_, true) => "text",
        ("number", _) => "number",
        ("date", _) => "text",
        ("datetime", _) => "text",
        ("uri", _) => "url",
        ("email", _) => "email",
        ("phone", _) => "tel",
        _ => "text",
    };
    let hint = match (d.kind.as_str(), c.multi) {
        (_, true) => Some(viewer.t("fields.multi_hint")),
        ("date", _) => Some("YYYY-MM-DD · --MM-DD"),
        ("datetime", _) => Some("2026-12-07T18:30:00Z"),
        _ => None,
    };
    html! {
        input id=(name) name=(name) type=(kind) value=(shown) step=[(kind == "number").then_some("any")]
            min=[c.min.filter(|_| kind == "number")] max=[c.max.filter(|_| kind == "number")] aria-invalid=[invalid];
        @if let Some(hint) = hint { span class="hint" { (hint) } }
    }
}
