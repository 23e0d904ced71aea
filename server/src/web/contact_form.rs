//! The contact form: what the create and edit pages show, and how a submitted form becomes the
//! domain's [`ContactInput`]. The form edits the card's common members (names, several emails,
//! phones and addresses, organisation, title, birthday, tags) and the circles; every other
//! member of the card (and the passthrough of unknown vCard properties) is kept as it was.

use maud::{Markup, html};
use mycorrhizal_codecs::card::{Address, Card, Component, Email, Name, Nickname, Organization, Phone, Title};
use mycorrhizal_codecs::projection::FlatInput;
use serde_json::{Value, json};

use super::page::{Chrome, Form};
use crate::crm::contact::Contact;
use crate::crm::contact::ops::ContactInput;

/// The values a form shows: from a stored contact, or as typed when sent back with an error.
#[derive(Debug, Default, Clone)]
pub struct Values {
    pub firstname: String,
    pub lastname: String,
    pub nickname: String,
    pub org: String,
    pub job_title: String,
    pub birthday: String,
    pub emails: Vec<String>,
    pub phones: Vec<String>,
    /// `[street, locality, region, postcode, country]` per address.
    pub addresses: Vec<[String; 5]>,
    pub circles: String,
    pub tags: String,
    pub favorite: bool,
    /// The revision the edit started from (`If-Match`): a stale edit is refused, not merged.
    pub revision: u64,
}

const ADDRESS_KINDS: [&str; 5] = ["name", "locality", "region", "postcode", "country"];
const ADDRESS_FIELDS: [&str; 5] = ["street", "locality", "region", "postcode", "country"];

fn component<'a>(components: &'a [Component], kind: &str) -> &'a str {
    components.iter().find(|c| c.kind == kind).map(|c| c.value.as_str()).unwrap_or("")
}

impl Values {
    pub fn of(contact: &Contact, revision: u64) -> Values {
        let card = contact.parsed_card();
        let name = card.name.clone().unwrap_or_default();
        let crm: Value = serde_json::from_str(&contact.crm).unwrap_or_else(|_| json!({}));
        let birthday = card
            .anniversaries
            .iter()
            .find(|a| a.kind == "birth")
            .and_then(|a| a.date.partial.as_ref())
            .map(|p| match (p.year, p.month, p.day) {
                (Some(y), Some(m), Some(d)) => format!("{y:04}-{m:02}-{d:02}"),
                (None, Some(m), Some(d)) => format!("--{m:02}-{d:02}"),
                _ => String::new(),
            })
            .unwrap_or_else(|| contact.legacy_birthday.clone());
        Values {
            firstname: component(&name.components, "given").to_string(),
            lastname: component(&name.components, "surname").to_string(),
            nickname: card.nicknames.first().map(|n| n.name.clone()).unwrap_or_default(),
            org: card.organizations.first().and_then(|o| o.name.clone()).unwrap_or_default(),
            job_title: card
                .titles
                .iter()
                .find(|t| t.kind.as_deref() != Some("role"))
                .map(|t| t.name.clone())
                .unwrap_or_default(),
            birthday,
            emails: card.emails.iter().map(|e| e.address.clone()).collect(),
            phones: card.phones.iter().map(|p| p.number.clone()).collect(),
            addresses: card
                .addresses
                .iter()
                .map(|a| ADDRESS_KINDS.map(|k| component(&a.components, k).to_string()))
                .collect(),
            circles: crm["circles"]
                .as_array()
                .map(|a| a.iter().filter_map(Value::as_str).collect::<Vec<_>>().join(", "))
                .unwrap_or_default(),
            tags: card.keywords.join(", "),
            favorite: contact.favorite,
            revision,
        }
    }

    pub fn from_form(form: &Form) -> Values {
        let streets = form.all("street");
        let columns: Vec<Vec<String>> = ADDRESS_FIELDS.iter().map(|f| form.all(f)).collect();
        let addresses = (0..streets.len())
            .map(|i| std::array::from_fn(|k| columns[k].get(i).cloned().unwrap_or_default()))
            .filter(|a: &[String; 5]| a.iter().any(|v| !v.is_empty()))
            .collect();
        Values {
            firstname: form.get("firstname"),
            lastname: form.get("lastname"),
            nickname: form.get("nickname"),
            org: form.get("org"),
            job_title: form.get("job_title"),
            birthday: form.get("birthday"),
            emails: form.all("email").into_iter().filter(|e| !e.is_empty()).collect(),
            phones: form.all("phone").into_iter().filter(|p| !p.is_empty()).collect(),
            addresses,
            circles: form.get("circles"),
            tags: form.get("tags"),
            favorite: form.has("favorite"),
            revision: form.get("revision").parse().unwrap_or(0),
        }
    }

    /// The domain input these values make, over `existing`'s card and CRM envelope (an edit) or
    /// from nothing (a new contact). It only translates: what makes a contact valid (a first
    /// name, a birthday that is a date) is the domain's rule ([`ContactInput::apply`]), the same
    /// for every front door.
    pub fn input(&self, existing: Option<&Contact>) -> ContactInput {
        let mut card: Card = existing.map(Contact::parsed_card).unwrap_or_default();
        // The name is rewritten only when the form changed it: a card whose name is only a
        // full name (as many imported cards are) shows empty name fields, and saving another
        // change must not erase that name.
        let stored = card.name.clone().unwrap_or_default();
        let name_changed = component(&stored.components, "given") != self.firstname
            || component(&stored.components, "surname") != self.lastname;
        if name_changed {
            let mut name = card.name.take().unwrap_or_else(Name::default);
            name.components.retain(|c| c.kind != "given" && c.kind != "surname");
            name.full = None;
            card.name = Some(name);
        }
        // Given and family name and the birthday go in as the API's flat fields, so both front
        // doors write them alike (a `1990-13-45` is kept as text there, as the spec's lexical
        // rule accepts it).
        card.anniversaries.retain(|a| a.kind != "birth");
        let flat = FlatInput {
            firstname: if name_changed { self.firstname.clone() } else { String::new() },
            lastname: if name_changed { self.lastname.clone() } else { String::new() },
            birthday: self.birthday.clone(),
            ..FlatInput::default()
        };
        set_first(
            &mut card.nicknames,
            &self.nickname,
            |n| n.name = self.nickname.clone(),
            || Nickname { name: self.nickname.clone(), ..Default::default() },
        );
        match card.organizations.first_mut() {
            Some(org) if !self.org.is_empty() => org.name = Some(self.org.clone()),
            Some(_) => {
                card.organizations.remove(0);
            }
            None if !self.org.is_empty() => {
                card.organizations.push(Organization { name: Some(self.org.clone()), ..Default::default() })
            }
            None => {}
        }
        let title_at = card.titles.iter().position(|t| t.kind.as_deref() != Some("role"));
        match (title_at, self.job_title.is_empty()) {
            (Some(i), false) => card.titles[i].name = self.job_title.clone(),
            (Some(i), true) => {
                card.titles.remove(i);
            }
            (None, false) => card.titles.push(Title { name: self.job_title.clone(), ..Default::default() }),
            (None, true) => {}
        }
        card.emails = self
            .emails
            .iter()
            .map(|address| {
                card.emails
                    .iter()
                    .find(|e| &e.address == address)
                    .cloned()
                    .unwrap_or_else(|| Email { address: address.clone(), ..Default::default() })
            })
            .collect();
        card.phones = self
            .phones
            .iter()
            .map(|number| {
                card.phones
                    .iter()
                    .find(|p| &p.number == number)
                    .cloned()
                    .unwrap_or_else(|| Phone { number: number.clone(), ..Default::default() })
            })
            .collect();
        let old_addresses = std::mem::take(&mut card.addresses);
        card.addresses = self
            .addresses
            .iter()
            .enumerate()
            .map(|(i, values)| {
                let mut address = old_addresses.get(i).cloned().unwrap_or_else(Address::default);
                address.components.retain(|c| !ADDRESS_KINDS.contains(&c.kind.as_str()));
                address.full = None;
                for (kind, value) in ADDRESS_KINDS.iter().zip(values) {
                    if !value.is_empty() {
                        address.components.push(Component {
                            kind: (*kind).into(),
                            value: value.clone(),
                            ..Default::default()
                        });
                    }
                }
                address
            })
            .collect();
        card.keywords = split_list(&self.tags);
        let mut crm: Value = existing.and_then(|c| serde_json::from_str(&c.crm).ok()).unwrap_or_else(|| json!({}));
        crm["circles"] = json!(split_list(&self.circles));
        ContactInput {
            gender: None,
            card: None,
            typed_card: Some(card),
            dav_card: None,
            crm: Some(crm),
            passthrough: None,
            is_favorite: Some(self.favorite),
            flat,
        }
    }
}

fn set_first<T>(list: &mut Vec<T>, value: &str, edit: impl FnOnce(&mut T), make: impl FnOnce() -> T) {
    match (list.is_empty(), value.is_empty()) {
        (false, false) => edit(&mut list[0]),
        (false, true) => {
            list.remove(0);
        }
        (true, false) => list.push(make()),
        (true, true) => {}
    }
}

/// A comma-separated list, trimmed, blanks and repeats dropped, order kept.
fn split_list(text: &str) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for item in text.split(',').map(str::trim).filter(|s| !s.is_empty()) {
        if !out.iter().any(|o| o == item) {
            out.push(item.to_string());
        }
    }
    out
}

/// The form, posting to `action`; `error` shown above it, the values kept.
pub fn render(c: &Chrome, action: &str, v: &Values, error: Option<&str>, submit: &str) -> Markup {
    let t = |k| c.lang.t(k);
    // Room for one more of each without JavaScript; the script adds rows on demand.
    let mut emails = v.emails.clone();
    emails.push(String::new());
    let mut phones = v.phones.clone();
    phones.push(String::new());
    let mut addresses = v.addresses.clone();
    addresses.push(Default::default());
    html! {
        @if let Some(e) = error { p class="error" role="alert" { (e) } }
        form method="post" action=(action) class="contact-form" {
            (c.csrf_field())
            input type="hidden" name="revision" value=(v.revision);
            fieldset {
                legend { (t("contact.names")) }
                div class="row" {
                    div { label for="firstname" { (t("contact.firstname")) } input id="firstname" name="firstname" value=(v.firstname) autocomplete="off"; }
                    div { label for="lastname" { (t("contact.lastname")) } input id="lastname" name="lastname" value=(v.lastname) autocomplete="off"; }
                }
                label for="nickname" { (t("contact.nickname")) } input id="nickname" name="nickname" value=(v.nickname);
            }
            fieldset {
                legend { (t("contact.work")) }
                div class="row" {
                    div { label for="org" { (t("contact.org")) } input id="org" name="org" value=(v.org); }
                    div { label for="job_title" { (t("contact.job_title")) } input id="job_title" name="job_title" value=(v.job_title); }
                }
            }
            fieldset data-repeat="email" {
                legend { (t("contact.emails")) }
                @for (i, e) in emails.iter().enumerate() {
                    label for={ "email-" (i) } class="visually-hidden" { (t("contact.email")) " " (i + 1) }
                    input id={ "email-" (i) } name="email" type="email" value=(e);
                }
            }
            fieldset data-repeat="phone" {
                legend { (t("contact.phones")) }
                @for (i, p) in phones.iter().enumerate() {
                    label for={ "phone-" (i) } class="visually-hidden" { (t("contact.phone")) " " (i + 1) }
                    input id={ "phone-" (i) } name="phone" type="tel" value=(p);
                }
            }
            fieldset {
                legend { (t("contact.addresses")) }
                @for (i, a) in addresses.iter().enumerate() {
                    div class="address" {
                        @for (k, field) in ADDRESS_FIELDS.iter().enumerate() {
                            div {
                                label for={ (field) "-" (i) } { (c.lang.t(address_label(field))) }
                                input id={ (field) "-" (i) } name=(field) value=(a[k]);
                            }
                        }
                    }
                }
            }
            fieldset {
                legend { (t("contact.more")) }
                label for="birthday" { (t("contact.birthday")) }
                input id="birthday" name="birthday" value=(v.birthday) placeholder="YYYY-MM-DD" aria-describedby="birthday-hint";
                p class="hint" id="birthday-hint" { (t("contact.birthday_hint")) }
                label for="circles" { (t("contact.circles")) }
                input id="circles" name="circles" value=(v.circles) aria-describedby="list-hint";
                label for="tags" { (t("contact.tags")) }
                input id="tags" name="tags" value=(v.tags) aria-describedby="list-hint";
                p class="hint" id="list-hint" { (t("contact.list_hint")) }
                label class="check" { input type="checkbox" name="favorite" value="1" checked[v.favorite]; " " (t("contact.favorite")) }
            }
            button type="submit" class="primary" { (submit) }
        }
    }
}

fn address_label(field: &str) -> &'static str {
    match field {
        "street" => "address.street",
        "locality" => "address.locality",
        "region" => "address.region",
        "postcode" => "address.postcode",
        _ => "address.country",
    }
}
