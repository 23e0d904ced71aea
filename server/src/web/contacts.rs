//! Contacts in the browser: the list (search as you type, circle and tag filters, sort, the
//! archived toggle, cursor paging that costs the same on page 1 and page 4,000), the contact page
//! (`crm::contact::detail`, one read), create and edit (`crm::contact::ops`, the JSON API's own
//! operations), archive, favourite, delete, and the notes and reminders added from the page.

use axum::extract::{Path, Query, State};
use axum::http::StatusCode;
use axum::response::Response;
use maud::{Markup, html};
use mycorrhizal_engine::Precondition;
use serde::Deserialize;

use super::contact_form::{self, Values};
use super::format;
use super::home::contact_link;
use super::page::{
    Form, PageResult, Sent, Viewer, WebError, encode, field_error, notice, page, page_with, see_other, shell,
};
use crate::crm::calendar::Recurrence;
use crate::crm::contact::list::{Count, ListParams, Sort};
use crate::crm::contact::ops::{self, Flag};
use crate::crm::contact::view::{ContactPage, photo_url};
use crate::crm::contact::{Contact, detail};
use crate::crm::groups::{self, Group};
use crate::crm::{attachment::ops as attachments, attachment::ops::AttachmentView};
use crate::crm::{note::ops as notes, reminder::ops as reminders};
use crate::error::ApiError;
use crate::state::AppState;

/// Contacts per page of the list.
const PAGE: usize = 50;

#[derive(Debug, Default, Deserialize)]
pub struct ListQuery {
    q: Option<String>,
    circle: Option<String>,
    tag: Option<String>,
    sort: Option<String>,
    archived: Option<String>,
    cursor: Option<String>,
    /// `1`: only the results (the script swaps them in as you type).
    fragment: Option<String>,
    notice: Option<String>,
}

fn nonblank(v: Option<String>) -> Option<String> {
    v.map(|s| s.trim().to_string()).filter(|s| !s.is_empty())
}

pub async fn list(State(state): State<AppState>, viewer: Viewer, Query(q): Query<ListQuery>) -> PageResult {
    let search = nonblank(q.q.clone());
    let circle = nonblank(q.circle.clone());
    let tag = nonblank(q.tag.clone());
    let archived = q.archived.as_deref() == Some("1");
    let sort = match q.sort.as_deref() {
        Some("name") => Some(Sort::Name),
        Some("updated") => Some(Sort::Updated),
        _ if search.is_some() => None,
        _ => Some(Sort::Name),
    };
    let params = ListParams {
        search: search.clone(),
        circle: circle.clone(),
        tag: tag.clone(),
        include_archived: false,
        archived_only: archived,
        favorites: false,
        has_contact_info: false,
        sort,
        descending: None,
        limit: PAGE,
        cursor: nonblank(q.cursor.clone()),
    };
    let scope = state.scope(&viewer.user);
    let fragment = q.fragment.as_deref() == Some("1");
    let (list, circles, tags) = state
        .blocking(move |_| -> crate::crm::Result<_> {
            let list = crate::crm::contact::list::list_counted(&scope, params, true)?;
            if fragment {
                return Ok((list, Vec::new(), Vec::new()));
            }
            let view = scope.view()?;
            Ok((list, groups::names(&view, Group::Circle)?, groups::names(&view, Group::Tag)?))
        })
        .await??;
    let c = viewer.chrome();
    let t = |k| viewer.t(k);
    // The query string of this list without the cursor, for the next-page link.
    let mut base = Vec::new();
    for (key, value) in
        [("q", &search), ("circle", &circle), ("tag", &tag), ("sort", &q.sort), ("archived", &q.archived.clone())]
    {
        if let Some(v) = value.as_deref().filter(|v| !v.is_empty()) {
            base.push(format!("{key}={}", encode(v)));
        }
    }
    let results = results(&viewer, &list.0, list.1, &base);
    if fragment {
        return Ok(page(results));
    }
    let selected = |current: &Option<String>, name: &str| current.as_deref() == Some(name);
    let main = html! {
        div class="heading" {
            h1 { (t("contacts.title")) }
            a class="button primary" href="/contacts/new" { (t("contacts.new")) }
            a class="button" href="/contacts/duplicates" { (t("dups.find")) }
        }
        form method="get" action="/contacts" class="filters" role="search" data-live="contact-results" {
            div {
                label for="q" { (t("contacts.search")) }
                input id="q" type="search" name="q" value=(search.clone().unwrap_or_default()) autocomplete="off";
            }
            div {
                label for="circle" { (t("contacts.circle")) }
                select id="circle" name="circle" {
                    option value="" { (t("contacts.any")) }
                    @for g in &circles { option value=(g) selected[selected(&circle, g)] { (g) } }
                }
            }
            div {
                label for="tag" { (t("contacts.tag")) }
                select id="tag" name="tag" {
                    option value="" { (t("contacts.any")) }
                    @for g in &tags { option value=(g) selected[selected(&tag, g)] { (g) } }
                }
            }
            div {
                label for="sort" { (t("contacts.sort")) }
                select id="sort" name="sort" {
                    option value="" { (t("contacts.sort_best")) }
                    option value="name" selected[q.sort.as_deref() == Some("name")] { (t("contacts.sort_name")) }
                    option value="updated" selected[q.sort.as_deref() == Some("updated")] { (t("contacts.sort_updated")) }
                }
            }
            label class="check" { input type="checkbox" name="archived" value="1" checked[archived]; " " (t("contacts.archived")) }
            button type="submit" { (t("contacts.filter")) }
        }
        p { a href="/groups" { (t("groups.manage")) } }
        div id="contact-results" aria-live="polite" { (results) }
        form id="bulk" method="post" action="/contacts/bulk" class="filters" {
            (c.csrf_field())
            div {
                label for="bulk-action" { (t("bulk.action")) }
                select id="bulk-action" name="action" {
                    @for (value, key) in BULK_ACTIONS { option value=(value) { (t(key)) } }
                }
            }
            div {
                label for="bulk-label" { (t("bulk.label")) }
                input id="bulk-label" name="label" maxlength="100";
            }
            button type="submit" { (t("bulk.apply")) }
            button type="submit" name="merge" value="1" { (t("bulk.merge_two")) }
        }
    };
    Ok(page(shell(&c, t("contacts.title"), notice(q.notice.as_deref()), main)))
}

fn results(viewer: &Viewer, list: &ContactPage, count: Count, base: &[String]) -> Markup {
    let t = |k| viewer.t(k);
    html! {
        p class="muted" {
            @if count == Count::AtLeast { (viewer.lang.f("contacts.count_at_least", &[("count", &list.total.to_string())])) }
            @else if list.total == 1 { (t("contacts.count_one")) }
            @else { (viewer.lang.f("contacts.count", &[("count", &list.total.to_string())])) }
        }
        @if list.contacts.is_empty() { p { (t("contacts.none")) } }
        ul class="contact-list" {
            @for s in &list.contacts {
                li {
                    input type="checkbox" name="ids" value=(s.id) form="bulk"
                        aria-label=(viewer.lang.f("bulk.select", &[("name", if s.name.is_empty() { t("contact.unnamed") } else { &s.name })]));
                    @if let Some(thumb) = &s.photo_thumbnail { img src=(thumb) alt="" width="32" height="32" class="avatar"; }
                    @else { span class="avatar initials" aria-hidden="true" { (initials(&s.name)) } }
                    div {
                        (contact_link(s.id, if s.name.is_empty() { t("contact.unnamed") } else { &s.name }))
                        @if s.is_favorite { " " span class="badge" { (t("contact.favorite_badge")) } }
                        @if s.archived { " " span class="badge" { (t("contact.archived_badge")) } }
                        br;
                        span class="muted" {
                            (s.primary_email)
                            @if !s.primary_email.is_empty() && !s.org.is_empty() { " · " }
                            (s.org)
                        }
                    }
                }
            }
        }
        @if !list.next_cursor.is_empty() {
            @let mut query = base.to_vec();
            @let _ = query.push(format!("cursor={}", encode(&list.next_cursor)));
            p { a class="button" rel="next" href={ "/contacts?" (query.join("&")) } { (t("contacts.next")) } }
        }
    }
}

/// The bulk actions the contact list offers: `(action, words)`.
const BULK_ACTIONS: [(&str, &str); 9] = [
    ("add_circle", "bulk.add_circle"),
    ("remove_circle", "bulk.remove_circle"),
    ("add_tag", "bulk.add_tag"),
    ("remove_tag", "bulk.remove_tag"),
    ("archive", "bulk.archive"),
    ("unarchive", "bulk.unarchive"),
    ("favorite", "bulk.favorite"),
    ("unfavorite", "bulk.unfavorite"),
    ("delete", "bulk.delete"),
];

/// The contact list's selection: a bulk action (`crm::contact::bulk`), or the merge of the two
/// selected (its form).
pub async fn bulk(State(state): State<AppState>, viewer: Viewer, form: Form) -> PageResult {
    let ids: Vec<u64> = form.all("ids").iter().filter_map(|id| id.parse().ok()).collect();
    if form.has("merge") {
        return match ids.as_slice() {
            [keep, merge] => Ok(see_other(&format!("/contacts/merge?keep={keep}&merge={merge}"))),
            _ => Err(ApiError::Validation { field: "ids".into(), reason: viewer.t("bulk.need_two").into() }.into()),
        };
    }
    let action: crate::crm::contact::bulk::Action =
        serde_json::from_value(serde_json::Value::String(form.get("action")))
            .map_err(|_| ApiError::Validation { field: "action".into(), reason: "is not an action".into() })?;
    let label = Some(form.get("label")).filter(|l| !l.is_empty());
    let input = crate::crm::contact::bulk::BulkInput {
        action,
        vcard_uids: Vec::new(),
        ids,
        circle: label.clone(),
        tag: label,
        circle_id: None,
        tag_id: None,
    };
    crate::crm::contact::bulk::run(&state.scope(&viewer.user), input).await?;
    Ok(see_other("/contacts?notice=saved"))
}

fn initials(name: &str) -> String {
    name.split_whitespace().filter_map(|w| w.chars().next()).take(2).collect::<String>().to_uppercase()
}

#[derive(Debug, Default, Deserialize)]
pub struct ShowQuery {
    notice: Option<String>,
}

pub async fn show(
    State(state): State<AppState>,
    viewer: Viewer,
    Path(id): Path<u64>,
    Query(q): Query<ShowQuery>,
) -> PageResult {
    render(&state, &viewer, id, notice(q.notice.as_deref()), None).await
}

/// A form of contact `id`'s page refused for `e`: the page again with that form open, what was
/// typed kept and the error beside it when the form is at fault; the error page otherwise.
pub async fn refused(
    state: &AppState,
    viewer: &Viewer,
    id: u64,
    form_name: &'static str,
    form: Form,
    e: ApiError,
) -> PageResult {
    match Sent::of(form_name, form, viewer.lang, &e) {
        Some(sent) => render(state, viewer, id, None, Some(&sent)).await,
        None => Err(e.into()),
    }
}

/// Contact `id`'s page; `sent`: one of its forms sent back with its error.
pub async fn render(
    state: &AppState,
    viewer: &Viewer,
    id: u64,
    notice_key: Option<&'static str>,
    sent: Option<&Sent>,
) -> PageResult {
    let (today, fields) = (viewer.today, viewer.user.account.custom_fields.clone());
    let (d, photo, households, files, defs) = state
        .read(&viewer.user, move |v| {
            let d = detail::detail(v, id, today, fields)?;
            let photo = photo_url(&v.get::<Contact>(id)?);
            let defs = crate::crm::field::definitions(v)?;
            Ok((d, photo, super::households::of_contact(v, id)?, attachments::list(v, id)?, defs))
        })
        .await?;
    let owner = viewer.user.id.0;
    let users = crate::auth::accounts::directory(&state.engine, owner).await?;
    let origin = state
        .blocking(move |engine| crate::sync::origin_of(engine, owner, "contact", id))
        .await?
        .map_err(crate::crm::Error::from)?;
    let connected = {
        let s = state.clone();
        state.blocking(move |_| super::integrations::connected(&s, owner)).await?
    };
    let c = viewer.chrome();
    let t = |k| viewer.t(k);
    let zone = &state.config.reminder_timezone;
    let day = |ts: jiff::Timestamp| format::day_of(viewer.lang, c.date_format, ts, zone);
    let k = &d.contact;
    let name = if k.full_name.is_empty() { t("contact.unnamed").to_string() } else { k.full_name.clone() };
    let back = format!("/contacts/{id}");
    let main = html! {
        div class="contact-head" {
            @if let Some(src) = &photo { img src=(src) alt=(viewer.lang.f("contact.photo_of", &[("name", &name)])) class="photo" width="96" height="96"; }
            div {
                h1 { (name) }
                @if !k.org.is_empty() || !k.job_title.is_empty() {
                    p class="muted" { (k.job_title) @if !k.job_title.is_empty() && !k.org.is_empty() { " · " } (k.org) }
                }
                p {
                    @if k.is_favorite { span class="badge" { (t("contact.favorite_badge")) } " " }
                    @if k.archived { span class="badge" { (t("contact.archived_badge")) } }
                }
                @if let Some(origin) = &origin {
                    p class="hint" { a href="/settings/subscriptions" { (viewer.lang.f("subs.from", &[("name", &origin.name)])) } }
                }
            }
            div class="actions" {
                a class="button" href={ "/contacts/" (id) "/edit" } { (t("contact.edit")) }
                form method="post" action={ "/contacts/" (id) "/flags" } class="inline" {
                    (c.csrf_field())
                    input type="hidden" name="favorite" value=(if k.is_favorite { "0" } else { "1" });
                    button type="submit" { (if k.is_favorite { t("contact.unfavorite") } else { t("contact.make_favorite") }) }
                }
                form method="post" action={ "/contacts/" (id) "/flags" } class="inline" {
                    (c.csrf_field())
                    input type="hidden" name="archived" value=(if k.archived { "0" } else { "1" });
                    button type="submit" { (if k.archived { t("contact.unarchive") } else { t("contact.archive") }) }
                }
                (c.button_form(&format!("/contacts/{id}/delete"), t("contact.delete"), "danger", Some(t("contact.delete_confirm"))))
            }
        }
        details class="photo-form" {
            summary { (if photo.is_some() { t("contact.change_photo") } else { t("contact.add_photo") }) }
            form method="post" action={ "/contacts/" (id) "/photo" } enctype="multipart/form-data" class="stack" {
                (c.csrf_field())
                label for="photo" { (t("contact.photo_file")) }
                input id="photo" name="photo" type="file" accept="image/jpeg,image/png,image/gif,image/webp" required;
                button type="submit" { (t("contact.upload_photo")) }
            }
        }
        div class="grid" {
            section class="card" aria-labelledby="h-details" {
                h2 id="h-details" { (t("contact.details")) }
                dl {
                    @for e in &k.emails { dt { (t("contact.email")) } dd { a href={ "mailto:" (e) } { (e) } } }
                    @for p in &k.phones { dt { (t("contact.phone")) } dd { a href={ "tel:" (p.value) } { (p.value) } } }
                    @for a in &k.addresses {
                        dt { (t("contact.address")) }
                        dd { (a.street) @if !a.street.is_empty() { br; } (a.postal) " " (a.city) @if !a.region.is_empty() { ", " (a.region) } @if !a.country.is_empty() { br; (a.country) } }
                    }
                    @if !k.birthday.is_empty() { dt { (t("contact.birthday")) } dd { (format::rest_date(viewer.lang, c.date_format, &k.birthday)) } }
                    @if !k.nickname.is_empty() { dt { (t("contact.nickname")) } dd { (k.nickname) } }
                    @if !k.circles.is_empty() { dt { (t("contact.circles")) } dd { @for g in &k.circles { a class="badge" href={ "/contacts?circle=" (encode(g)) } { (g) } " " } } }
                    @if !k.tags.is_empty() { dt { (t("contact.tags")) } dd { @for g in &k.tags { a class="badge" href={ "/contacts?tag=" (encode(g)) } { (g) } " " } } }
                }
            }
            section class="card" aria-labelledby="h-reminders" {
                h2 id="h-reminders" { (t("contact.reminders")) }
                ul class="items" {
                    @for r in &d.reminders {
                        li {
                            (r.message) " " span class="muted" { (format::rest_date(viewer.lang, c.date_format, &r.date)) " · " (t(recurrence_key(r.recurrence))) }
                            (c.button_form(&format!("/reminders/{}/complete?back={}", r.id, encode(&back)), t("reminders.complete"), "small", None))
                        }
                    }
                }
                @let sent_rem = Sent::to(sent, "reminder");
                @let rem_date = if sent_rem.is_some() { Sent::value(sent_rem, "remind_at") } else { viewer.today.to_string() };
                form method="post" action={ "/contacts/" (id) "/reminders" } class="stack" {
                    (c.csrf_field())
                    (Sent::alert(sent_rem))
                    label for="reminder-message" { (t("reminders.message")) }
                    input id="reminder-message" name="message" required maxlength="500" value=(Sent::value(sent_rem, "message")) aria-invalid=[Sent::invalid(sent_rem, "message")];
                    div class="row" {
                        div { label for="reminder-date" { (t("reminders.date")) } input id="reminder-date" name="remind_at" type="date" required value=(rem_date) aria-invalid=[Sent::invalid(sent_rem, "remind_at")]; }
                        div {
                            label for="reminder-recurrence" { (t("reminders.recurrence")) }
                            select id="reminder-recurrence" name="recurrence" aria-invalid=[Sent::invalid(sent_rem, "recurrence")] {
                                @for (value, r) in RECURRENCES { option value=(value) selected[Sent::value(sent_rem, "recurrence") == value] { (t(recurrence_key(r))) } }
                            }
                        }
                    }
                    button type="submit" { (t("reminders.add")) }
                }
                @if !d.completions.is_empty() {
                    h3 { (t("contact.completions")) }
                    ul class="items" { @for done in &d.completions { li { (done.message) " " span class="muted" { (day(done.completed_at)) } } } }
                }
            }
            section class="card" aria-labelledby="h-notes" {
                h2 id="h-notes" { (t("contact.notes")) }
                @let sent_note = Sent::to(sent, "note");
                form method="post" action={ "/contacts/" (id) "/notes" } class="stack" {
                    (c.csrf_field())
                    (Sent::alert(sent_note))
                    label for="note-content" class="visually-hidden" { (t("notes.content")) }
                    textarea id="note-content" name="content" rows="3" required maxlength="5000" placeholder=(t("notes.placeholder")) aria-invalid=[Sent::invalid(sent_note, "content")] { (Sent::value(sent_note, "content")) }
                    button type="submit" { (t("notes.add")) }
                }
                @for n in &d.notes {
                    article class="note" { p class="muted" { (day(n.date)) } p class="pre" { (n.content) } }
                }
            }
            section class="card" aria-labelledby="h-activities" {
                h2 id="h-activities" { (t("contact.activities")) }
                @let sent_act = Sent::to(sent, "activity");
                details open[sent_act.is_some()] { summary { (t("activity.log")) } (super::record_forms::activity_form(viewer, &format!("/contacts/{id}/activities"), Some(id), sent_act)) }
                @if d.activities.is_empty() { p class="muted" { (t("contact.no_activities")) } }
                ul class="items" {
                    @for a in &d.activities {
                        li { strong { (a.title) } " " span class="muted" { (day(a.date)) @if !a.location.is_empty() { " · " (a.location) } } @if !a.description.is_empty() { br; (a.description) } }
                    }
                }
            }
            section class="card" aria-labelledby="h-relationships" {
                h2 id="h-relationships" { (t("contact.relationships")) }
                @if d.relationship_edges.is_empty() { p class="muted" { (t("contact.no_relationships")) } }
                ul class="items" {
                    @for e in &d.relationship_edges {
                        li {
                            (contact_link(e.other_party_contact_id, &e.other_party_name)) " " span class="muted" { (e.display_token.replace('_', " ")) }
                            (c.button_form(&format!("/contacts/{id}/relationships/{}/delete", e.edge.id), t("relationship.remove"), "small secondary", Some(t("relationship.remove_confirm"))))
                        }
                    }
                }
                (super::network::add_form(viewer, id))
                p { a href="/network" { (t("network.title")) } }
            }
            @if !d.life_events.is_empty() {
                section class="card" aria-labelledby="h-life" {
                    h2 id="h-life" { (t("contact.life_events")) }
                    ul class="items" {
                        @for e in &d.life_events {
                            li { (e.kind) @if !e.description.is_empty() { ": " (e.description) } " " span class="muted" { (partial(viewer, c.date_format, &e.date)) } }
                        }
                    }
                }
            }
            @if !d.gifts.is_empty() {
                section class="card" aria-labelledby="h-gifts" {
                    h2 id="h-gifts" { (t("contact.gifts")) }
                    ul class="items" { @for g in &d.gifts { li { (g.description) " " span class="muted" { (t(super::record_forms::gift_status_key(&g.status))) @if !g.occasion.is_empty() { " · " (g.occasion) } } } } }
                }
            }
            @if !d.agenda.is_empty() {
                section class="card" aria-labelledby="h-agenda" {
                    h2 id="h-agenda" { (t("contact.agenda")) }
                    ul class="items" {
                        @for a in &d.agenda {
                            li { (a.content) (c.button_form(&format!("/contacts/{id}/agenda/{}/discussed", a.id), t("depth.discussed"), "small", None)) }
                        }
                    }
                }
            }
            (super::record_forms::field_card(&c, viewer, id, &defs, &d.field_values, sent))
            (super::households::contact_section(viewer, id, &households, sent))
            (attachments_section(viewer, id, &files, sent))
            (super::integrations::contact_card(&c, viewer, id, &connected, &d.external_identities, &d.external_activities))
            (super::record_forms::external_card(&c, viewer, &d.external_identities))
            (super::record_forms::share_card(&c, viewer, id, &users, sent))
            (super::record_forms::merge_card(viewer, id))
            (super::record_forms::depth_forms(viewer, id, sent, super::cadence::contact_form(viewer, id)))
        }
    };
    Ok(page_with(Sent::status(sent), shell(&c, &name, notice_key, main)))
}

/// Removes a link to another system, back to its contact's page.
pub async fn unlink_external(State(state): State<AppState>, viewer: Viewer, Path(id): Path<u64>) -> PageResult {
    let scope = state.scope(&viewer.user);
    let row = state.read(&viewer.user, move |v| Ok(v.get::<crate::crm::external::ExternalIdentity>(id)?)).await?;
    crate::crm::external::ops::delete_identity(&scope, id).await?;
    Ok(see_other(&format!("/contacts/{}?notice=saved", row.body.contact_id)))
}

/// The contact page's files: each to open or download, delete (after a confirmation), and the
/// upload form (`crm::attachment`: at most 25 MB each, within the account's quota).
fn attachments_section(viewer: &Viewer, id: u64, files: &[AttachmentView], sent: Option<&Sent>) -> Markup {
    let c = viewer.chrome();
    let t = |k| viewer.t(k);
    let sent = Sent::to(sent, "attachment");
    html! {
        section class="card" aria-labelledby="h-attachments" {
            h2 id="h-attachments" { (t("attachment.title")) }
            @if files.is_empty() { p class="muted" { (t("attachment.none")) } }
            ul class="items" {
                @for f in files {
                    li {
                        a href={ "/attachments/" (f.id) } download=(f.original_name) { (f.original_name) }
                        " " span class="muted" { (format::size(f.size_bytes)) }
                        (c.button_form(&format!("/attachments/{}/delete", f.id), t("attachment.delete"), "small secondary", Some(t("attachment.delete_confirm"))))
                    }
                }
            }
            details open[sent.is_some()] {
                summary { (t("attachment.add")) }
                form method="post" action={ "/contacts/" (id) "/attachments" } enctype="multipart/form-data" class="stack" {
                    (c.csrf_field())
                    (Sent::alert(sent))
                    label for="attachment-file" { (t("attachment.file")) }
                    input id="attachment-file" name="file" type="file" required aria-invalid=[Sent::invalid(sent, "file")];
                    button type="submit" { (t("attachment.upload")) }
                }
            }
        }
    }
}

fn partial(viewer: &Viewer, format: &str, p: &mycorrhizal_codecs::dates::Partial) -> String {
    match (p.year, p.month, p.day) {
        (y, Some(m), Some(d)) => format::parts(viewer.lang, format, y.map(|y| y as i16), m as i8, d as i8),
        (Some(y), _, _) => y.to_string(),
        _ => String::new(),
    }
}

const RECURRENCES: [(&str, Recurrence); 6] = [
    ("once", Recurrence::Once),
    ("weekly", Recurrence::Weekly),
    ("monthly", Recurrence::Monthly),
    ("quarterly", Recurrence::Quarterly),
    ("six-months", Recurrence::SixMonths),
    ("yearly", Recurrence::Yearly),
];

fn recurrence_key(r: Recurrence) -> &'static str {
    match r {
        Recurrence::Once => "recurrence.once",
        Recurrence::Weekly => "recurrence.weekly",
        Recurrence::Monthly => "recurrence.monthly",
        Recurrence::Quarterly => "recurrence.quarterly",
        Recurrence::SixMonths => "recurrence.six_months",
        Recurrence::Yearly => "recurrence.yearly",
    }
}

fn form_page(viewer: &Viewer, title: &str, action: &str, values: &Values, error: Option<&str>, cancel: &str) -> Markup {
    let c = viewer.chrome();
    let main = html! {
        h1 { (title) }
        (contact_form::render(&c, action, values, error, viewer.t("contact.save")))
        p { a href=(cancel) { (viewer.t("contact.cancel")) } }
    };
    shell(&c, title, None, main)
}

pub async fn new_form(viewer: Viewer) -> Response {
    let title = viewer.t("contacts.new");
    page(form_page(&viewer, title, "/contacts", &Values::default(), None, "/contacts"))
}

pub async fn create(State(state): State<AppState>, viewer: Viewer, form: Form) -> PageResult {
    let values = Values::from_form(&form);
    match ops::create(&state.scope(&viewer.user), values.input(None)).await.map_err(ApiError::from) {
        Ok(row) => Ok(see_other(&format!("/contacts/{}?notice=created", row.id))),
        Err(e) => form_error(&viewer, viewer.t("contacts.new"), "/contacts", &values, e, "/contacts"),
    }
}

/// The form sent back with what was typed and the error, or the error page for a refusal that
/// is no fault of the form.
fn form_error(viewer: &Viewer, title: &str, action: &str, values: &Values, e: ApiError, cancel: &str) -> PageResult {
    match e {
        ApiError::Validation { .. } | ApiError::InvalidInput { .. } | ApiError::AlreadyExists { .. } => {
            // The domain names the card's field; the form shows the label the person typed into.
            let e = match e {
                ApiError::Validation { field, reason } if field == "card.name" => {
                    ApiError::Validation { field: viewer.t("contact.firstname").to_string(), reason }
                }
                e => e,
            };
            let (status, message) = field_error(viewer.lang, &e);
            Ok(page_with(status, form_page(viewer, title, action, values, Some(&message), cancel)))
        }
        e => Err(e.into()),
    }
}

pub async fn edit_form(State(state): State<AppState>, viewer: Viewer, Path(id): Path<u64>) -> PageResult {
    let row = state.read(&viewer.user, move |v| Ok(v.get::<Contact>(id)?)).await?;
    let title = viewer.t("contact.edit");
    Ok(page(form_page(
        &viewer,
        title,
        &format!("/contacts/{id}"),
        &Values::of(&row.body, row.meta.revision),
        None,
        &format!("/contacts/{id}"),
    )))
}

pub async fn update(State(state): State<AppState>, viewer: Viewer, Path(id): Path<u64>, form: Form) -> PageResult {
    let values = Values::from_form(&form);
    let current = state.read(&viewer.user, move |v| Ok(v.get::<Contact>(id)?)).await?;
    let (action, cancel, title) = (format!("/contacts/{id}"), format!("/contacts/{id}"), viewer.t("contact.edit"));
    let input = values.input(Some(&current.body));
    match ops::update(&state.scope(&viewer.user), id, Precondition::Revision(values.revision), input).await {
        Ok(_) => Ok(see_other(&format!("/contacts/{id}?notice=saved"))),
        Err(e) => match ApiError::from(e) {
            ApiError::PreconditionFailed { .. } => {
                // Someone (a phone, another tab) changed the contact since this form was opened:
                // say so, keep what was typed, and show the current version beside it.
                let stored = Values::of(&current.body, current.meta.revision);
                let c = viewer.chrome();
                let mut retry = values.clone();
                retry.revision = current.meta.revision;
                let main = html! {
                    h1 { (title) }
                    p class="error" role="alert" { (viewer.t("contact.conflict")) }
                    details open {
                        summary { (viewer.t("contact.current_version")) }
                        (summary_of(&viewer, &stored))
                    }
                    (contact_form::render(&c, &action, &retry, None, viewer.t("contact.save_anyway")))
                    p { a href=(cancel) { (viewer.t("contact.discard")) } }
                };
                Ok(page_with(StatusCode::CONFLICT, shell(&c, title, None, main)))
            }
            e => form_error(&viewer, title, &action, &values, e, &cancel),
        },
    }
}

fn summary_of(viewer: &Viewer, v: &Values) -> Markup {
    let t = |k| viewer.t(k);
    html! {
        dl {
            dt { (t("contact.firstname")) } dd { (v.firstname) }
            dt { (t("contact.lastname")) } dd { (v.lastname) }
            dt { (t("contact.org")) } dd { (v.org) }
            dt { (t("contact.emails")) } dd { (v.emails.join(", ")) }
            dt { (t("contact.phones")) } dd { (v.phones.join(", ")) }
            dt { (t("contact.birthday")) } dd { (v.birthday) }
        }
    }
}

pub async fn delete(State(state): State<AppState>, viewer: Viewer, Path(id): Path<u64>, _form: Form) -> PageResult {
    ops::delete(&state.scope(&viewer.user), id, Precondition::Any).await?;
    Ok(see_other("/contacts?notice=deleted"))
}

/// Sets the favourite and/or archived flag, as the form says (`1` on, `0` off).
pub async fn flags(State(state): State<AppState>, viewer: Viewer, Path(id): Path<u64>, form: Form) -> PageResult {
    let scope = state.scope(&viewer.user);
    for (name, flag) in [("favorite", Flag::Favorite), ("archived", Flag::Archived)] {
        match form.get(name).as_str() {
            "1" => ops::set_flag(&scope, id, flag, true).await?,
            "0" => ops::set_flag(&scope, id, flag, false).await?,
            "" => continue,
            _ => return Err(WebError::Api(ApiError::invalid_input(name, "must be 0 or 1"))),
        };
    }
    Ok(see_other(&format!("/contacts/{id}?notice=saved")))
}

pub async fn add_note(State(state): State<AppState>, viewer: Viewer, Path(id): Path<u64>, form: Form) -> PageResult {
    let input = notes::NoteInput { content: form.get("content"), date: None, contact_id: Some(id) };
    let now = state.engine.clock().now();
    match notes::create(&state.scope(&viewer.user), Some(id), input, now).await {
        Ok(_) => Ok(see_other(&format!("/contacts/{id}?notice=saved#h-notes"))),
        Err(e) => refused(&state, &viewer, id, "note", form, e.into()).await,
    }
}

pub async fn add_reminder(
    State(state): State<AppState>,
    viewer: Viewer,
    Path(id): Path<u64>,
    form: Form,
) -> PageResult {
    let input = reminders::ReminderInput {
        message: form.get("message"),
        remind_at: form.get("remind_at"),
        recurrence: form.get("recurrence"),
        contact_id: Some(id),
        by_mail: None,
        reoccur_from_completion: None,
    };
    match reminders::create(&state.scope(&viewer.user), Some(id), input).await {
        Ok(_) => Ok(see_other(&format!("/contacts/{id}?notice=saved#h-reminders"))),
        Err(e) => refused(&state, &viewer, id, "reminder", form, e.into()).await,
    }
}

/// Sets the contact's photo (`crm::contact::picture::store`: JPEG, PNG, GIF or WebP, told by content).
pub async fn photo(
    State(state): State<AppState>,
    viewer: Viewer,
    Path(id): Path<u64>,
    csrf: axum::Extension<super::page::Csrf>,
    form: axum::extract::Multipart,
) -> PageResult {
    state.read(&viewer.user, move |v| Ok(v.get::<Contact>(id)?)).await?;
    let upload = super::page::Upload::read(form, &csrf.0, "photo", crate::crm::contact::picture::MAX_PHOTO).await;
    let upload = match upload {
        Ok(upload) if upload.bytes.is_empty() => return Err(ApiError::validation("photo", "choose an image").into()),
        Ok(upload) => upload,
        Err(ApiError::PayloadTooLarge { .. }) => {
            return Err(ApiError::validation("photo", "must be at most 10 MB").into());
        }
        Err(e) => return Err(e.into()),
    };
    crate::crm::contact::picture::store(&state.scope(&viewer.user), id, upload.bytes).await.map_err(ApiError::from)?;
    Ok(see_other(&format!("/contacts/{id}?notice=saved")))
}

/// Keeps a file with the contact (the multipart field `file`, read against the same 25 MB limit
/// as the API, then `crm::attachment::store` with the account's quota).
pub async fn upload_attachment(
    State(state): State<AppState>,
    viewer: Viewer,
    Path(id): Path<u64>,
    csrf: axum::Extension<super::page::Csrf>,
    form: axum::extract::Multipart,
) -> PageResult {
    // Refused before the body is read when the contact is not the viewer's.
    state.read(&viewer.user, move |v| Ok(v.get::<Contact>(id)?)).await?;
    let upload = match super::page::Upload::read(form, &csrf.0, "file", attachments::MAX_ATTACHMENT).await {
        Ok(upload) if upload.original_name.is_empty() && upload.bytes.is_empty() => {
            let e = ApiError::validation("file", "is required");
            return refused(&state, &viewer, id, "attachment", upload.fields, e).await;
        }
        Ok(upload) => upload,
        Err(ApiError::PayloadTooLarge { .. }) => {
            let e = ApiError::validation("file", "must be at most 25 MB");
            return refused(&state, &viewer, id, "attachment", Form(Vec::new()), e).await;
        }
        Err(e) => return Err(e.into()),
    };
    let file = attachments::NewFile {
        name: if upload.original_name.is_empty() { "attachment".into() } else { upload.original_name.clone() },
        content_type: upload.content_type.clone(),
        bytes: upload.bytes,
    };
    let (scope, quota) = (state.scope(&viewer.user), state.config.attachment_quota_bytes);
    match state.blocking(move |_| attachments::store(&scope, id, file, quota)).await? {
        Ok(_) => Ok(see_other(&format!("/contacts/{id}?notice=saved#h-attachments"))),
        Err(e) => refused(&state, &viewer, id, "attachment", upload.fields, e.into()).await,
    }
}

/// An attachment's bytes, with the API's headers: its type, `inline` only for the types a
/// browser shows safely, a cleaned file name, `nosniff` (and the page's CSP, which sandboxes
/// nothing but keeps a shown file from running script).
pub async fn download_attachment(State(state): State<AppState>, viewer: Viewer, Path(id): Path<u64>) -> PageResult {
    use axum::http::header::{CACHE_CONTROL, CONTENT_DISPOSITION, CONTENT_TYPE};
    use axum::response::IntoResponse;
    let scope = state.scope(&viewer.user);
    let (row, bytes) = state.blocking(move |_| attachments::read(&scope, id)).await??;
    let inline = attachments::INLINE.contains(&row.body.content_type.as_str());
    let disposition = if inline { "inline" } else { "attachment" };
    let headers = [
        (CONTENT_TYPE, row.body.content_type.clone()),
        (
            CONTENT_DISPOSITION,
            format!("{disposition}; filename=\"{}\"", attachments::clean_name(&row.body.original_name)),
        ),
        (CACHE_CONTROL, "private, no-cache".to_string()),
    ];
    Ok((headers, bytes).into_response())
}

/// Deletes an attachment (the page asks first), back to its contact's page.
pub async fn delete_attachment(
    State(state): State<AppState>,
    viewer: Viewer,
    Path(id): Path<u64>,
    _form: Form,
) -> PageResult {
    let contact =
        state.read(&viewer.user, move |v| Ok(v.get::<crate::crm::attachment::Attachment>(id)?.body.contact_id)).await?;
    attachments::delete(&state.scope(&viewer.user), id).await?;
    Ok(see_other(&format!("/contacts/{contact}?notice=deleted#h-attachments")))
}

/// Adds contact `id` to the household the form names (from the contact's page).
pub async fn join_household(
    State(state): State<AppState>,
    viewer: Viewer,
    Path(id): Path<u64>,
    form: Form,
) -> PageResult {
    let household = match form.get("household_id").parse::<u64>() {
        Ok(h) => h,
        Err(_) => {
            let e = ApiError::validation("household_id", "choose a household");
            return refused(&state, &viewer, id, "join", form, e).await;
        }
    };
    let text = |name: &str| Some(form.get(name)).filter(|v| !v.is_empty());
    let input = crate::crm::household::ops::MemberInput {
        member_vcard_uid: None,
        contact_id: Some(id),
        role: text("role"),
        since: text("since"),
        until: None,
    };
    match crate::crm::household::ops::add_member(&state.scope(&viewer.user), household, input).await {
        Ok(_) => Ok(see_other(&format!("/contacts/{id}?notice=saved#h-households"))),
        Err(e) => refused(&state, &viewer, id, "join", form, e.into()).await,
    }
}
