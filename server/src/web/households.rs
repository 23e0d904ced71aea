//! Households in the browser: the list (with the address suggestions the members' own addresses
//! give, to use or dismiss), one household (its members, shared address and notes), create, edit
//! and delete, adding a member (found by name, or from the contact's page) and removing one
//! (`crm::household::ops`, the JSON API's own operations).

use axum::extract::{Path, Query, State};
use axum::http::StatusCode;
use maud::{Markup, html};
use mycorrhizal_engine::Precondition;
use serde::Deserialize;

use super::home::contact_link;
use super::page::{Form, PageResult, Sent, Viewer, WebError, encode, notice, page, page_with, see_other, shell};
use crate::crm::contact::list::ListParams;
use crate::crm::household::HOUSEHOLD_TYPES;
use crate::crm::{
    household::ops as household_ops, household::ops::AddressInput, household::ops::AddressSuggestion,
    household::ops::HouseholdFilter, household::ops::HouseholdInput, household::ops::HouseholdView,
    household::ops::MemberEdit, household::ops::MemberInput, household::ops::MemberView,
};
use crate::error::ApiError;
use crate::state::AppState;

/// Households per page of the list.
const PAGE: usize = 50;

/// The roles offered in the member form (any other word is kept as typed).
const ROLES: &[&str] = &["adult", "child", "pet", "roommate"];

pub fn kind_key(kind: &str) -> &'static str {
    match kind {
        "family_unit" => "household.family_unit",
        "roommates" => "household.roommates",
        _ => "household.other",
    }
}

#[derive(Debug, Default, Deserialize)]
pub struct ListQuery {
    cursor: Option<String>,
    notice: Option<String>,
}

/// The household form's values: as stored, or as typed when sent back.
struct Values {
    name: String,
    kind: String,
    street: String,
    postal_code: String,
    city: String,
    region: String,
    country: String,
    notes: String,
    revision: u64,
}

impl Values {
    fn of(h: &HouseholdView) -> Values {
        let a = h.address.as_ref();
        let part = |f: fn(&crate::crm::household::ops::AddressView) -> &String| a.map(f).cloned().unwrap_or_default();
        Values {
            name: h.name.clone(),
            kind: h.kind.clone(),
            street: part(|a| &a.street),
            postal_code: part(|a| &a.postal_code),
            city: part(|a| &a.city),
            region: part(|a| &a.region),
            country: part(|a| &a.country),
            notes: h.notes.clone(),
            revision: h.stamp.revision,
        }
    }

    fn from_form(form: &Form) -> Values {
        Values {
            name: form.get("name"),
            kind: form.get("type"),
            street: form.get("street"),
            postal_code: form.get("postal_code"),
            city: form.get("city"),
            region: form.get("region"),
            country: form.get("country"),
            notes: form.raw("notes"),
            revision: form.get("revision").parse().unwrap_or(0),
        }
    }

    fn empty() -> Values {
        Values::from_form(&Form(Vec::new()))
    }

    /// The operation's input. The address's free text (`full`), which the form does not show, is
    /// kept from `stored`.
    fn input(&self, stored_full: Option<String>) -> HouseholdInput {
        HouseholdInput {
            name: self.name.clone(),
            kind: Some(self.kind.clone()),
            address: Some(AddressInput {
                components: Vec::new(),
                full: stored_full,
                country_code: None,
                street: Some(self.street.clone()),
                city: Some(self.city.clone()),
                region: Some(self.region.clone()),
                postal_code: Some(self.postal_code.clone()),
                country: Some(self.country.clone()),
            }),
            notes: Some(self.notes.clone()),
        }
    }
}

/// The create or edit form (`prefix` keeps its ids apart from other forms on the page).
fn household_form(viewer: &Viewer, action: &str, v: &Values, sent: Option<&Sent>, submit: &str) -> Markup {
    let c = viewer.chrome();
    let t = |k| viewer.t(k);
    let inv = |name| Sent::invalid(sent, name);
    html! {
        form method="post" action=(action) class="stack" {
            (c.csrf_field())
            (Sent::alert(sent))
            @if v.revision > 0 { input type="hidden" name="revision" value=(v.revision); }
            label for="hh-name" { (t("household.name")) }
            input id="hh-name" name="name" required maxlength="200" value=(v.name) aria-invalid=[inv("name")];
            label for="hh-type" { (t("household.type")) }
            select id="hh-type" name="type" {
                @for k in HOUSEHOLD_TYPES {
                    option value=(k) selected[v.kind == *k || (v.kind.is_empty() && *k == "family_unit")] { (t(kind_key(k))) }
                }
            }
            fieldset {
                legend { (t("household.address")) }
                label for="hh-street" { (t("household.street")) }
                input id="hh-street" name="street" maxlength="200" value=(v.street) autocomplete="street-address" aria-invalid=[inv("street")];
                div class="row" {
                    div { label for="hh-postal" { (t("household.postal_code")) } input id="hh-postal" name="postal_code" maxlength="200" value=(v.postal_code) autocomplete="postal-code" aria-invalid=[inv("postal_code")]; }
                    div { label for="hh-city" { (t("household.city")) } input id="hh-city" name="city" maxlength="200" value=(v.city) autocomplete="address-level2" aria-invalid=[inv("city")]; }
                }
                div class="row" {
                    div { label for="hh-region" { (t("household.region")) } input id="hh-region" name="region" maxlength="200" value=(v.region) autocomplete="address-level1" aria-invalid=[inv("region")]; }
                    div { label for="hh-country" { (t("household.country")) } input id="hh-country" name="country" maxlength="200" value=(v.country) autocomplete="country-name" aria-invalid=[inv("country")]; }
                }
            }
            label for="hh-notes" { (t("household.notes")) }
            textarea id="hh-notes" name="notes" rows="2" maxlength="5000" aria-invalid=[inv("notes")] { (v.notes) }
            button type="submit" class="primary" { (submit) }
        }
    }
}

/// One suggestion with its two buttons (use the address, dismiss it), returning to `back`.
fn suggestion(viewer: &Viewer, s: &AddressSuggestion, back: &str, name_it: bool) -> Markup {
    let c = viewer.chrome();
    let t = |k| viewer.t(k);
    let hashes = html! {
        (c.csrf_field())
        input type="hidden" name="address_hash" value=(s.address_hash);
        input type="hidden" name="member_hash" value=(s.member_hash);
        input type="hidden" name="back" value=(back);
    };
    html! {
        li {
            @if name_it { a href={ "/households/" (s.household_id) } { (s.household_name) } ": " }
            (if s.reason == "members_share_address" { t("household.reason_shared") } else { t("household.reason_member") })
            " " strong { (s.address_line) }
            @if !s.current_address_line.is_empty() {
                br; span class="muted" { (viewer.lang.f("household.current_address", &[("address", &s.current_address_line)])) }
            }
            div class="actions" {
                form method="post" action={ "/households/" (s.household_id) "/address" } class="inline" {
                    (hashes) button type="submit" class="small" { (t("household.use_address")) }
                }
                form method="post" action="/households/suggestions/dismiss" class="inline" {
                    (hashes) button type="submit" class="small secondary" { (t("household.dismiss")) }
                }
            }
        }
    }
}

async fn list_page(state: &AppState, viewer: &Viewer, q: &ListQuery, sent: Option<&Sent>) -> PageResult {
    let filter = HouseholdFilter {
        include_members: true,
        cursor: q.cursor.clone().filter(|c| !c.is_empty()),
        limit: PAGE,
        ascending: false,
        ..HouseholdFilter::default()
    };
    let (list, suggestions, addresses) = state
        .read(&viewer.user, move |v| {
            let addresses = crate::crm::address_suggestions::suggestions(v)?;
            Ok((household_ops::list(v, &filter)?, household_ops::suggestions(v, None)?, addresses))
        })
        .await?;
    let c = viewer.chrome();
    let t = |k| viewer.t(k);
    let members = list.members.clone().unwrap_or_default();
    let typed = Sent::to(sent, "household").map(|s| Values::from_form(&s.fields)).unwrap_or_else(Values::empty);
    let main = html! {
        h1 { (t("household.title")) }
        p class="hint" { (t("household.hint")) }
        div class="grid" {
            section class="card" aria-labelledby="h-households" {
                h2 id="h-households" { (t("household.all")) }
                @if list.households.is_empty() { p class="muted" { (t("household.none")) } }
                ul class="items" {
                    @for h in &list.households {
                        @let who: Vec<&MemberView> = members.iter().filter(|m| m.household_id == h.id && m.until.is_empty()).collect();
                        li {
                            a href={ "/households/" (h.id) } { (h.name) } " "
                            span class="muted" { (t(kind_key(&h.kind))) @if !h.address_line.is_empty() { " · " (h.address_line) } }
                            @if !who.is_empty() {
                                br; @for (i, m) in who.iter().enumerate() { @if i > 0 { ", " } (m.contact_name) }
                            }
                        }
                    }
                }
                @if !list.next_cursor.is_empty() {
                    p { a class="button" rel="next" href={ "/households?cursor=" (encode(&list.next_cursor)) } { (t("contacts.next")) } }
                }
            }
            @if !suggestions.suggestions.is_empty() {
                section class="card" aria-labelledby="h-suggestions" {
                    h2 id="h-suggestions" { (t("household.suggestions")) }
                    ul class="items" { @for s in &suggestions.suggestions { (suggestion(viewer, s, "/households", true)) } }
                }
            }
            @if !addresses.suggestions.is_empty() {
                section class="card" aria-labelledby="h-addresses" {
                    h2 id="h-addresses" { (t("address.suggestions")) }
                    p class="hint" { (t("address.hint")) }
                    ul class="items" {
                        @for s in addresses.suggestions.iter().take(50) {
                            li {
                                a href={ "/contacts/" (s.contact_id) } { (s.contact_name) } ": "
                                (mycorrhizal_codecs::projection::one_line(&s.address)) " "
                                span class="muted" { "(" (viewer.lang.f("address.from", &[("source", &s.source_name)])) ")" }
                                form method="post" action="/addresses/apply" class="inline" {
                                    (c.csrf_field())
                                    input type="hidden" name="contact_vcard_uid" value=(s.contact_vcard_uid);
                                    input type="hidden" name="source_kind" value=(s.source_kind);
                                    input type="hidden" name="source_id" value=(s.source_id);
                                    input type="hidden" name="address_key" value=(s.address_key);
                                    button type="submit" class="small" { (t("address.add")) }
                                }
                            }
                        }
                    }
                }
            }
            section class="card" aria-labelledby="h-new-household" {
                h2 id="h-new-household" { (t("household.new")) }
                (household_form(viewer, "/households", &typed, Sent::to(sent, "household"), t("household.create")))
            }
        }
    };
    let title = t("household.title");
    Ok(page_with(Sent::status(sent), shell(&c, title, notice(q.notice.as_deref()), main)))
}

pub async fn index(State(state): State<AppState>, viewer: Viewer, Query(q): Query<ListQuery>) -> PageResult {
    list_page(&state, &viewer, &q, None).await
}

/// Adds a suggested address to its contact (`crm::address_suggestions::apply`), back to the
/// households page; one that no longer holds says so there.
pub async fn apply_address(State(state): State<AppState>, viewer: Viewer, form: Form) -> PageResult {
    let input = crate::crm::address_suggestions::AddressApplyInput {
        contact_vcard_uid: form.get("contact_vcard_uid"),
        source_kind: form.get("source_kind"),
        source_id: form.get("source_id"),
        address_key: form.get("address_key"),
    };
    match crate::crm::address_suggestions::apply(&state.scope(&viewer.user), input).await {
        Ok(_) => Ok(see_other("/households?notice=address_added")),
        Err(crate::crm::Error::Conflict(_)) => Ok(see_other("/households?notice=address_stale")),
        Err(e) => Err(ApiError::from(e).into()),
    }
}

pub async fn create(State(state): State<AppState>, viewer: Viewer, form: Form) -> PageResult {
    let values = Values::from_form(&form);
    match household_ops::save(&state.scope(&viewer.user), None, values.input(None)).await {
        Ok(row) => Ok(see_other(&format!("/households/{}?notice=created", row.id))),
        Err(e) => {
            let e = ApiError::from(e);
            match Sent::of("household", form, viewer.lang, &e) {
                Some(sent) => list_page(&state, &viewer, &ListQuery::default(), Some(&sent)).await,
                None => Err(e.into()),
            }
        }
    }
}

#[derive(Debug, Default, Deserialize)]
pub struct ShowQuery {
    notice: Option<String>,
}

/// Household `id`'s page; `sent` is a form of it sent back with its error, `conflict` says the
/// edit was refused as stale.
async fn household_page(
    state: &AppState,
    viewer: &Viewer,
    id: u64,
    notice_key: Option<&'static str>,
    sent: Option<&Sent>,
    conflict: bool,
) -> PageResult {
    let (body, suggestions) = state
        .read(&viewer.user, move |v| {
            let (_, body) = household_ops::get(v, id)?;
            Ok((body, household_ops::suggestions(v, Some(id))?))
        })
        .await?;
    let c = viewer.chrome();
    let t = |k| viewer.t(k);
    let h = &body.household;
    let back = format!("/households/{id}");
    let edit = Sent::to(sent, "edit");
    let mut values = match edit {
        Some(s) => Values::from_form(&s.fields),
        None => Values::of(h),
    };
    if conflict {
        // Saving again from this form saves over the version now shown.
        values.revision = h.stamp.revision;
    }
    let member = Sent::to(sent, "member");
    let main = html! {
        div class="contact-head" {
            div {
                h1 { (h.name) }
                p class="muted" { (t(kind_key(&h.kind))) }
            }
            div class="actions" {
                (c.button_form(&format!("/households/{id}/delete"), t("household.delete"), "danger", Some(t("household.delete_confirm"))))
            }
        }
        p { a href="/households" { (t("household.back")) } }
        div class="grid" {
            section class="card" aria-labelledby="h-household-details" {
                h2 id="h-household-details" { (t("contact.details")) }
                dl {
                    dt { (t("household.address")) }
                    dd { @if h.address_line.is_empty() { span class="muted" { (t("household.no_address")) } } @else { (h.address_line) } }
                    @if !h.notes.is_empty() { dt { (t("household.notes")) } dd class="pre" { (h.notes) } }
                }
                details open[edit.is_some() || conflict] {
                    summary { (t("household.edit")) }
                    @if conflict { p class="error" role="alert" { (t("household.conflict")) } }
                    (household_form(viewer, &back, &values, edit.filter(|s| !s.message.is_empty()), t("contact.save")))
                }
            }
            section class="card" aria-labelledby="h-members" {
                h2 id="h-members" { (t("household.members")) }
                @if body.members.is_empty() { p class="muted" { (t("household.no_members")) } }
                ul class="items" {
                    @for m in &body.members {
                        li {
                            (contact_link(m.contact_id, if m.contact_name.is_empty() { t("contact.unnamed") } else { &m.contact_name }))
                            @if !m.role.is_empty() || !m.since.is_empty() || !m.until.is_empty() {
                                " " span class="muted" {
                                    (m.role)
                                    @if !m.since.is_empty() { " · " (viewer.lang.f("household.since", &[("when", &m.since)])) }
                                    @if !m.until.is_empty() { " · " (viewer.lang.f("household.until", &[("when", &m.until)])) }
                                }
                            }
                            (c.button_form(&format!("/households/{id}/members/{}/delete", m.id), t("household.remove_member"), "small secondary", Some(t("household.remove_member_confirm"))))
                            (member_edit_form(viewer, id, m, sent))
                        }
                    }
                }
                details open[member.is_some()] {
                    summary { (t("household.add_member")) }
                    form method="post" action={ "/households/" (id) "/members" } class="stack" {
                        (c.csrf_field())
                        (Sent::alert(member))
                        label for="member-who" { (t("household.who")) }
                        input id="member-who" name="who" required autocomplete="off" placeholder=(t("relationship.other_hint")) value=(Sent::value(member, "who")) aria-invalid=[Sent::invalid(member, "who")];
                        (role_fields(viewer, "member", ["role", "since", "until"].map(|f| Sent::value(member, f)), false, member))
                        button type="submit" { (t("household.add_member")) }
                    }
                }
                // The roles offered in every membership form of the page.
                datalist id="household-roles" { @for r in ROLES { option value=(r) {} } }
            }
            @if !suggestions.suggestions.is_empty() {
                section class="card" aria-labelledby="h-suggestions" {
                    h2 id="h-suggestions" { (t("household.suggestions")) }
                    ul class="items" { @for s in &suggestions.suggestions { (suggestion(viewer, s, &back, false)) } }
                }
            }
        }
    };
    let status = if conflict { StatusCode::CONFLICT } else { Sent::status(sent) };
    Ok(page_with(status, shell(&c, &h.name, notice_key, main)))
}

/// The role, since and (when `until` is given) until fields of a membership form, their ids
/// under `prefix`, holding `values` (role, since, until).
fn role_fields(viewer: &Viewer, prefix: &str, values: [String; 3], until: bool, sent: Option<&Sent>) -> Markup {
    let t = |k| viewer.t(k);
    let id = |s: &str| format!("{prefix}-{s}");
    let [role, since, until_value] = values;
    html! {
        div class="row" {
            div {
                label for=(id("role")) { (t("household.role")) }
                input id=(id("role")) name="role" maxlength="100" list="household-roles" value=(role) aria-invalid=[Sent::invalid(sent, "role")];
            }
            div {
                label for=(id("since")) { (t("household.since_label")) }
                input id=(id("since")) name="since" maxlength="100" placeholder="2019" value=(since) aria-invalid=[Sent::invalid(sent, "since")];
            }
            @if until {
                div {
                    label for=(id("until")) { (t("household.until_label")) }
                    input id=(id("until")) name="until" maxlength="100" value=(until_value) aria-invalid=[Sent::invalid(sent, "until")];
                }
            }
        }
    }
}

/// A member's role and dates, editable: open with the error (or the conflict) when this
/// member's form was sent back, its values as typed; otherwise closed, holding the stored ones.
fn member_edit_form(viewer: &Viewer, household: u64, m: &MemberView, sent: Option<&Sent>) -> Markup {
    let c = viewer.chrome();
    let mine = Sent::to(sent, "member_edit").filter(|s| s.fields.get("member") == m.id.to_string());
    let values = match mine {
        Some(s) => ["role", "since", "until"].map(|f| s.fields.raw(f)),
        None => [m.role.clone(), m.since.clone(), m.until.clone()],
    };
    html! {
        details open[mine.is_some()] {
            summary { (viewer.t("household.edit_member")) }
            form method="post" action={ "/households/" (household) "/members/" (m.id) } class="stack" {
                (c.csrf_field())
                input type="hidden" name="member" value=(m.id);
                // After a conflict, saving again saves over the version now shown.
                input type="hidden" name="revision" value=(m.stamp.revision);
                (Sent::alert(mine))
                (role_fields(viewer, &format!("member-{}", m.id), values, true, mine))
                button type="submit" { (viewer.t("contact.save")) }
            }
        }
    }
}

pub async fn show(
    State(state): State<AppState>,
    viewer: Viewer,
    Path(id): Path<u64>,
    Query(q): Query<ShowQuery>,
) -> PageResult {
    household_page(&state, &viewer, id, notice(q.notice.as_deref()), None, false).await
}

pub async fn update(State(state): State<AppState>, viewer: Viewer, Path(id): Path<u64>, form: Form) -> PageResult {
    let values = Values::from_form(&form);
    let full = state
        .read(&viewer.user, move |v| Ok(household_ops::get(v, id)?.1.household.address.and_then(|a| a.full)))
        .await?;
    let pre = if values.revision > 0 { Precondition::Revision(values.revision) } else { Precondition::Any };
    match household_ops::save(&state.scope(&viewer.user), Some((id, pre)), values.input(full)).await {
        Ok(_) => Ok(see_other(&format!("/households/{id}?notice=saved"))),
        Err(e) => match ApiError::from(e) {
            ApiError::PreconditionFailed { .. } => {
                let sent = Sent {
                    form: "edit",
                    fields: form,
                    field: String::new(),
                    message: String::new(),
                    status: StatusCode::CONFLICT,
                };
                household_page(&state, &viewer, id, None, Some(&sent), true).await
            }
            e => match Sent::of("edit", form, viewer.lang, &e) {
                Some(sent) => household_page(&state, &viewer, id, None, Some(&sent), false).await,
                None => Err(e.into()),
            },
        },
    }
}

pub async fn delete(State(state): State<AppState>, viewer: Viewer, Path(id): Path<u64>, _form: Form) -> PageResult {
    household_ops::delete(&state.scope(&viewer.user), id, Precondition::Any).await?;
    Ok(see_other("/households?notice=deleted"))
}

/// Who a member form names.
enum Picked {
    Contact(u64),
    /// The form's fault: sent back with the error.
    Refused(ApiError),
    /// Several people match the name: the page offering the choice.
    Choose(axum::response::Response),
}

/// The contact a member form names: `contact_id` (a choice already made), or a name that must
/// match exactly one contact.
async fn contact_named(state: &AppState, viewer: &Viewer, id: u64, form: &Form) -> Result<Picked, WebError> {
    if let Ok(contact) = form.get("contact_id").parse::<u64>() {
        return Ok(Picked::Contact(contact));
    }
    let who = form.get("who");
    if who.is_empty() {
        return Ok(Picked::Refused(ApiError::validation("who", "name the person")));
    }
    let scope = state.scope(&viewer.user);
    let params = ListParams { search: Some(who.clone()), limit: 10, ..ListParams::default() };
    let found = state.blocking(move |_| crate::crm::contact::list::list(&scope, params)).await??;
    match found.contacts.as_slice() {
        [one] => Ok(Picked::Contact(one.id)),
        [] => Ok(Picked::Refused(ApiError::validation("who", format!("no contact matches “{who}”")))),
        many => {
            let c = viewer.chrome();
            let main = html! {
                h1 { (viewer.t("relationship.choose")) }
                ul class="items" {
                    @for person in many {
                        li {
                            form method="post" action={ "/households/" (id) "/members" } class="inline" {
                                (c.csrf_field())
                                input type="hidden" name="contact_id" value=(person.id);
                                input type="hidden" name="role" value=(form.get("role"));
                                input type="hidden" name="since" value=(form.get("since"));
                                button type="submit" { (person.name) }
                            }
                            " " span class="muted" { (person.primary_email) }
                        }
                    }
                }
                p { a href={ "/households/" (id) } { (viewer.t("contact.cancel")) } }
            };
            Ok(Picked::Choose(page(shell(&c, viewer.t("relationship.choose"), None, main))))
        }
    }
}

fn member_input(contact: u64, form: &Form) -> MemberInput {
    let text = |name: &str| Some(form.get(name)).filter(|v| !v.is_empty());
    MemberInput {
        member_vcard_uid: None,
        contact_id: Some(contact),
        role: text("role"),
        since: text("since"),
        until: None,
    }
}

pub async fn add_member(State(state): State<AppState>, viewer: Viewer, Path(id): Path<u64>, form: Form) -> PageResult {
    // The household first: another user's household is not found before any name is looked up.
    state.read(&viewer.user, move |v| Ok(household_ops::get(v, id)?.0.id)).await?;
    let outcome = match contact_named(&state, &viewer, id, &form).await? {
        Picked::Contact(contact) => {
            household_ops::add_member(&state.scope(&viewer.user), id, member_input(contact, &form))
                .await
                .map_err(ApiError::from)
        }
        Picked::Refused(e) => Err(e),
        Picked::Choose(page) => return Ok(page),
    };
    match outcome {
        Ok(_) => Ok(see_other(&format!("/households/{id}?notice=saved#h-members"))),
        Err(e) => match Sent::of("member", form, viewer.lang, &e) {
            Some(sent) => household_page(&state, &viewer, id, None, Some(&sent), false).await,
            None => Err(e.into()),
        },
    }
}

/// Changes a member's role and dates (all three fields sent; blank clears one).
pub async fn edit_member(
    State(state): State<AppState>,
    viewer: Viewer,
    Path((id, member)): Path<(u64, u64)>,
    form: Form,
) -> PageResult {
    let pre = match form.get("revision").parse::<u64>() {
        Ok(r) if r > 0 => Precondition::Revision(r),
        _ => Precondition::Any,
    };
    let edit =
        MemberEdit { role: Some(form.get("role")), since: Some(form.get("since")), until: Some(form.get("until")) };
    let outcome = household_ops::edit_member(&state.scope(&viewer.user), id, member.to_string(), pre, edit).await;
    let sent = match outcome.map_err(ApiError::from) {
        Ok(_) => return Ok(see_other(&format!("/households/{id}?notice=saved#h-members"))),
        Err(ApiError::PreconditionFailed { .. }) => Sent {
            form: "member_edit",
            fields: form,
            field: String::new(),
            message: viewer.t("household.member_conflict").to_string(),
            status: StatusCode::CONFLICT,
        },
        Err(e) => match Sent::of("member_edit", form, viewer.lang, &e) {
            Some(sent) => sent,
            None => return Err(e.into()),
        },
    };
    household_page(&state, &viewer, id, None, Some(&sent), false).await
}

pub async fn remove_member(
    State(state): State<AppState>,
    viewer: Viewer,
    Path((id, member)): Path<(u64, u64)>,
    _form: Form,
) -> PageResult {
    household_ops::remove_member(&state.scope(&viewer.user), id, member.to_string(), Precondition::Any).await?;
    Ok(see_other(&format!("/households/{id}?notice=saved#h-members")))
}

/// Where a suggestion's buttons return: the page they were on (the list or a household's page,
/// nothing else).
fn back_of(form: &Form) -> String {
    let back = form.get("back");
    let ok = back == "/households" || back.strip_prefix("/households/").is_some_and(|id| id.parse::<u64>().is_ok());
    if ok { back } else { "/households".into() }
}

pub async fn use_address(State(state): State<AppState>, viewer: Viewer, Path(id): Path<u64>, form: Form) -> PageResult {
    let scope = state.scope(&viewer.user);
    household_ops::adopt_suggestion(&scope, id, &form.get("address_hash"), &form.get("member_hash")).await?;
    Ok(see_other(&format!("{}?notice=saved", back_of(&form))))
}

pub async fn dismiss(State(state): State<AppState>, viewer: Viewer, form: Form) -> PageResult {
    let input =
        household_ops::DismissInput { address_hash: form.get("address_hash"), member_hash: form.get("member_hash") };
    if !is_hash(&input.address_hash) || !is_hash(&input.member_hash) {
        return Err(ApiError::validation("address_hash", "must be 64 hex digits").into());
    }
    household_ops::dismiss(&state.scope(&viewer.user), input).await?;
    Ok(see_other(&format!("{}?notice=saved", back_of(&form))))
}

fn is_hash(s: &str) -> bool {
    s.len() == 64 && s.bytes().all(|b| b.is_ascii_hexdigit())
}

/// The households a contact is (or was) a member of, and the form that adds them to another,
/// for the contact's page.
pub struct ContactHouseholds {
    pub theirs: Vec<(HouseholdView, MemberView)>,
    /// Every household (up to a page), for the form's choice.
    pub all: Vec<HouseholdView>,
}

/// Reads what [`contact_section`] shows, inside the contact page's read.
pub fn of_contact(v: &mycorrhizal_engine::UserView, contact: u64) -> crate::crm::Result<ContactHouseholds> {
    let filter =
        HouseholdFilter { include_members: true, contact_id: Some(contact), limit: PAGE, ..HouseholdFilter::default() };
    let page = household_ops::list(v, &filter)?;
    let members = page.members.unwrap_or_default();
    let theirs = page
        .households
        .into_iter()
        .filter_map(|h| {
            members.iter().find(|m| m.household_id == h.id && m.contact_id == contact).cloned().map(|m| (h, m))
        })
        .collect();
    let all = household_ops::list(v, &HouseholdFilter { limit: PAGE, ..HouseholdFilter::default() })?.households;
    Ok(ContactHouseholds { theirs, all })
}

/// The contact page's households section.
pub fn contact_section(viewer: &Viewer, id: u64, h: &ContactHouseholds, sent: Option<&Sent>) -> Markup {
    let c = viewer.chrome();
    let t = |k| viewer.t(k);
    let sent = Sent::to(sent, "join");
    html! {
        section class="card" aria-labelledby="h-households" {
            h2 id="h-households" { (t("household.title")) }
            @if h.theirs.is_empty() { p class="muted" { (t("household.contact_none")) } }
            ul class="items" {
                @for (household, m) in &h.theirs {
                    li {
                        a href={ "/households/" (household.id) } { (household.name) }
                        @if !m.role.is_empty() || !m.until.is_empty() {
                            " " span class="muted" { (m.role) @if !m.until.is_empty() { " · " (viewer.lang.f("household.until", &[("when", &m.until)])) } }
                        }
                        @if !household.address_line.is_empty() { br; span class="muted" { (household.address_line) } }
                    }
                }
            }
            @let joinable: Vec<&HouseholdView> = h.all.iter().filter(|x| !h.theirs.iter().any(|(t, _)| t.id == x.id)).collect();
            @if joinable.is_empty() { (Sent::alert(sent)) }
            @if !joinable.is_empty() {
                details open[sent.is_some()] {
                    summary { (t("household.join")) }
                    form method="post" action={ "/contacts/" (id) "/households" } class="stack" {
                        (c.csrf_field())
                        (Sent::alert(sent))
                        label for="join-household" { (t("household.which")) }
                        select id="join-household" name="household_id" required {
                            @for x in &joinable { option value=(x.id) selected[Sent::value(sent, "household_id") == x.id.to_string()] { (x.name) } }
                        }
                        datalist id="household-roles" { @for r in ROLES { option value=(r) {} } }
                        (role_fields(viewer, "join", ["role", "since", "until"].map(|f| Sent::value(sent, f)), false, sent))
                        button type="submit" { (t("household.add_member")) }
                    }
                }
            }
            p { a href="/households" { (t("household.manage")) } }
        }
    }
}
