//! The flat projection of a card: the columns lists, sorting and simple clients read
//! (`firstname`, `lastname`, `email`, `phone`, `fn`, `org`, `birthday`, `anniversary`, address
//! and phone lists, searchable text, `sort_name`). Derived on every save, never edited directly;
//! and the reverse mapping for clients that create or update with flat fields only.

use serde::{Deserialize, Serialize};

use crate::card::{
    Address, Anniversary, AnniversaryDate, Card, CardError, Component, Email, Name, Nickname, Organization, Phone,
    Title, component,
};
use crate::dates::{Partial, is_rest_date, parse_rest_date, rest_date};

/// One address, flattened.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct FlatAddress {
    #[serde(rename = "type")]
    pub kind: String,
    pub street: String,
    pub city: String,
    pub region: String,
    pub postal: String,
    pub country: String,
    pub pobox: String,
    pub apartment: String,
    pub floor: String,
}

/// One phone, flattened.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct FlatPhone {
    #[serde(rename = "type")]
    pub kind: String,
    pub value: String,
}

/// Every derived column of a contact.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct Flat {
    pub firstname: String,
    pub lastname: String,
    pub middle_name: String,
    pub prefix: String,
    pub suffix: String,
    pub nickname: String,
    #[serde(rename = "fn")]
    pub full_name: String,
    pub email: String,
    pub phone: String,
    pub org: String,
    pub department: String,
    pub job_title: String,
    pub role: String,
    /// `YYYY-MM-DD`, `--MM-DD`, or empty.
    pub birthday: String,
    pub anniversary: String,
    pub addresses: Vec<FlatAddress>,
    pub phones: Vec<FlatPhone>,
    pub addresses_flat: String,
    pub phones_normalized: String,
    pub sort_name: String,
    /// The first address on one line.
    pub address: String,
    pub emails: Vec<String>,
}

fn preferred<T>(items: &[T], pref: impl Fn(&T) -> Option<u32>) -> Option<&T> {
    items.iter().enumerate().min_by_key(|(i, item)| (pref(item).unwrap_or(u32::MAX), *i)).map(|(_, item)| item)
}

fn first_context(contexts: &[String]) -> String {
    contexts.first().cloned().unwrap_or_default()
}

fn flat_address(a: &Address) -> FlatAddress {
    let get = |kind: &str| component(&a.components, kind).unwrap_or("").to_string();
    FlatAddress {
        kind: first_context(&a.contexts),
        street: get("name"),
        city: get("locality"),
        region: get("region"),
        postal: get("postcode"),
        country: get("country"),
        pobox: get("postOfficeBox"),
        apartment: get("apartment"),
        floor: get("floor"),
    }
}

/// An address on one line: `street, city, region postal, country`, or its `full` text.
pub fn one_line(a: &Address) -> String {
    let f = flat_address(a);
    let region_postal =
        [f.region.as_str(), f.postal.as_str()].iter().filter(|s| !s.is_empty()).copied().collect::<Vec<_>>().join(" ");
    let parts: Vec<&str> = [f.street.as_str(), f.city.as_str(), region_postal.as_str(), f.country.as_str()]
        .into_iter()
        .filter(|s| !s.is_empty())
        .collect();
    if parts.is_empty() { a.full.clone().unwrap_or_default() } else { parts.join(", ") }
}

/// `+` and digits only: the form phone search compares.
pub fn normalize_phone(number: &str) -> String {
    let mut out: String = number.chars().filter(char::is_ascii_digit).collect();
    if number.trim_start().starts_with('+') {
        out.insert(0, '+');
    }
    out
}

fn anniversary(card: &Card, kind: &str) -> String {
    card.anniversaries
        .iter()
        .find(|a| a.kind == kind)
        .and_then(|a| a.date.partial.as_ref())
        .and_then(rest_date)
        .unwrap_or_default()
}

/// Derives every flat column from `card`.
pub fn project(card: &Card) -> Flat {
    let empty = Name::default();
    let name = card.name.as_ref().unwrap_or(&empty);
    let part = |kind: &str| component(&name.components, kind).unwrap_or("").to_string();
    let mut firstname = part("given");
    let mut lastname = part("surname");
    if firstname.is_empty()
        && lastname.is_empty()
        && let Some(full) = name.full.as_deref()
    {
        let mut words = full.split_whitespace();
        firstname = words.next().unwrap_or("").to_string();
        lastname = words.collect::<Vec<_>>().join(" ");
    }
    let (middle_name, prefix, suffix) = (part("given2"), part("title"), part("credential"));
    let full_name = name.full.clone().filter(|f| !f.trim().is_empty()).unwrap_or_else(|| {
        [prefix.as_str(), firstname.as_str(), middle_name.as_str(), lastname.as_str(), suffix.as_str()]
            .into_iter()
            .filter(|s| !s.is_empty())
            .collect::<Vec<_>>()
            .join(" ")
    });
    let org = card.organizations.first();
    let addresses: Vec<FlatAddress> = card.addresses.iter().map(flat_address).collect();
    let lines: Vec<String> = card.addresses.iter().map(one_line).filter(|l| !l.is_empty()).collect();
    let phones: Vec<FlatPhone> =
        card.phones.iter().map(|p| FlatPhone { kind: first_context(&p.contexts), value: p.number.clone() }).collect();
    let sort_name = format!("{lastname} {firstname}").trim().to_lowercase();
    Flat {
        nickname: card.nicknames.first().map(|n| n.name.clone()).unwrap_or_default(),
        email: preferred(&card.emails, |e| e.pref).map(|e| e.address.clone()).unwrap_or_default(),
        phone: preferred(&card.phones, |p| p.pref).map(|p| p.number.clone()).unwrap_or_default(),
        org: org.and_then(|o| o.name.clone()).unwrap_or_default(),
        department: org.and_then(|o| o.units.first()).map(|u| u.name.clone()).unwrap_or_default(),
        job_title: card
            .titles
            .iter()
            .find(|t| t.kind.as_deref() != Some("role"))
            .map(|t| t.name.clone())
            .unwrap_or_default(),
        role: card
            .titles
            .iter()
            .find(|t| t.kind.as_deref() == Some("role"))
            .map(|t| t.name.clone())
            .unwrap_or_default(),
        birthday: anniversary(card, "birth"),
        anniversary: anniversary(card, "wedding"),
        address: lines.first().cloned().unwrap_or_default(),
        addresses_flat: lines.join(" | "),
        phones_normalized: card
            .phones
            .iter()
            .map(|p| normalize_phone(&p.number))
            .filter(|p| !p.is_empty())
            .collect::<Vec<_>>()
            .join(" "),
        emails: card.emails.iter().map(|e| e.address.clone()).collect(),
        addresses,
        phones,
        sort_name,
        full_name,
        firstname,
        lastname,
        middle_name,
        prefix,
        suffix,
    }
}

/// The flat fields a simple client may send instead of a card.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct FlatInput {
    pub firstname: String,
    pub lastname: String,
    pub nickname: String,
    pub email: String,
    pub phone: String,
    pub birthday: String,
    pub anniversary: String,
    pub org: String,
    pub job_title: String,
    pub address: String,
}

impl FlatInput {
    pub fn is_empty(&self) -> bool {
        self == &FlatInput::default()
    }
}

fn push_anniversary(card: &mut Card, kind: &str, value: &str) {
    if let Some(partial) = calendar_partial(value) {
        card.anniversaries.retain(|a| a.kind != kind);
        card.anniversaries.push(Anniversary {
            kind: kind.into(),
            date: AnniversaryDate { partial: Some(partial), ..AnniversaryDate::default() },
            ..Anniversary::default()
        });
    }
}

/// Applies flat fields onto `card` (each non-empty field replaces its card member).
///
/// `birthday` and `anniversary` must be `YYYY-MM-DD` or `--MM-DD` (the spec's lexical rule; any
/// other shape is refused, naming the field). A birthday of that shape that names no calendar day
/// (month 13, day 45) is accepted as the spec says but has no place in the card (a vCard `BDAY`
/// cannot hold it): the card's birthday is removed and the text is returned for the caller to
/// keep as the contact's legacy birthday. An anniversary has no such place, so it must also name
/// a month 1-12 and a day 1-31.
pub fn apply_flat(card: &mut Card, input: &FlatInput) -> Result<Option<String>, CardError> {
    let birthday = input.birthday.trim();
    let anniversary = input.anniversary.trim();
    for (field, value) in [("birthday", birthday), ("anniversary", anniversary)] {
        if !value.is_empty() && !is_rest_date(value) {
            return Err(CardError {
                field: field.into(),
                reason: "must be YYYY-MM-DD, or --MM-DD without a year".into(),
            });
        }
    }
    if !anniversary.is_empty() && calendar_partial(anniversary).is_none() {
        return Err(CardError { field: "anniversary".into(), reason: "month must be 01-12 and day 01-31".into() });
    }
    if !input.firstname.is_empty() || !input.lastname.is_empty() {
        let name = card.name.get_or_insert_with(Name::default);
        name.components.retain(|c| c.kind != "given" && c.kind != "surname");
        let mut parts = Vec::new();
        if !input.firstname.is_empty() {
            parts.push(Component {
                kind: "given".into(),
                value: input.firstname.trim().into(),
                ..Component::default()
            });
        }
        if !input.lastname.is_empty() {
            parts.push(Component {
                kind: "surname".into(),
                value: input.lastname.trim().into(),
                ..Component::default()
            });
        }
        parts.append(&mut name.components);
        name.components = parts;
        name.full = None;
    }
    if !input.nickname.is_empty() {
        card.nicknames = vec![Nickname { name: input.nickname.trim().into(), ..Nickname::default() }];
    }
    if !input.email.is_empty() {
        card.emails.retain(|e| e.address != input.email.trim());
        card.emails.insert(0, Email { address: input.email.trim().into(), pref: Some(1), ..Email::default() });
    }
    if !input.phone.is_empty() {
        card.phones.retain(|p| p.number != input.phone.trim());
        card.phones.insert(0, Phone { number: input.phone.trim().into(), pref: Some(1), ..Phone::default() });
    }
    if !input.org.is_empty() {
        let units = card.organizations.first().map(|o| o.units.clone()).unwrap_or_default();
        card.organizations =
            vec![Organization { name: Some(input.org.trim().into()), units, ..Organization::default() }];
    }
    if !input.job_title.is_empty() {
        card.titles.retain(|t| t.kind.as_deref() == Some("role"));
        card.titles
            .insert(0, Title { name: input.job_title.trim().into(), kind: Some("title".into()), ..Title::default() });
    }
    if !input.address.is_empty() {
        card.addresses.insert(0, Address { full: Some(input.address.trim().into()), ..Address::default() });
    }
    if !anniversary.is_empty() {
        push_anniversary(card, "wedding", anniversary);
    }
    if birthday.is_empty() {
        return Ok(None);
    }
    if calendar_partial(birthday).is_some() {
        push_anniversary(card, "birth", birthday);
        Ok(None)
    } else {
        card.anniversaries.retain(|a| a.kind != "birth");
        Ok(Some(birthday.to_string()))
    }
}

/// A REST date that names a month 1-12 and a day 1-31 (what a card's anniversary may hold).
fn calendar_partial(value: &str) -> Option<Partial> {
    parse_rest_date(value)
        .filter(|p| p.month.is_some_and(|m| (1..=12).contains(&m)) && p.day.is_some_and(|d| (1..=31).contains(&d)))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn card(json: &str) -> Card {
        serde_json::from_str(json).unwrap()
    }

    #[test]
    fn the_projection_follows_the_fixture() {
        let c = card(
            r#"{"name":{"components":[{"kind":"given","value":"Fixture"},{"kind":"surname","value":"Primary"}]},
            "nicknames":[{"name":"Fix"}],"emails":[{"address":"fixture.primary@example.com","contexts":["home"]}],
            "phones":[{"number":"+1 555-0100","contexts":["mobile"]}],
            "addresses":[{"components":[{"kind":"name","value":"1 Fixture Way"},{"kind":"locality","value":"Fixtureville"},{"kind":"region","value":"CA"},{"kind":"postcode","value":"94000"},{"kind":"country","value":"US"}],"contexts":["home"]}],
            "anniversaries":[{"kind":"birth","date":{"partial":{"year":1990,"month":6,"day":15}}}]}"#,
        );
        let f = project(&c);
        assert_eq!(
            (f.firstname.as_str(), f.lastname.as_str(), f.full_name.as_str()),
            ("Fixture", "Primary", "Fixture Primary")
        );
        assert_eq!(
            (f.nickname.as_str(), f.email.as_str(), f.phone.as_str()),
            ("Fix", "fixture.primary@example.com", "+1 555-0100")
        );
        assert_eq!(f.birthday, "1990-06-15");
        assert_eq!(f.address, "1 Fixture Way, Fixtureville, CA 94000, US");
        assert_eq!(f.phones_normalized, "+15550100");
        assert_eq!(f.sort_name, "primary fixture");
        assert_eq!(f.phones[0].kind, "mobile");
    }

    #[test]
    fn preference_picks_the_primary_and_year_less_birthdays_stay_year_less() {
        let c = card(
            r#"{"name":{"full":"Grace Brewster Hopper"},"emails":[{"address":"a@x.org"},{"address":"b@x.org","pref":1}],
            "anniversaries":[{"kind":"birth","date":{"partial":{"month":12,"day":9}}},{"kind":"wedding","date":{"partial":{"year":1930,"month":6,"day":15}}}]}"#,
        );
        let f = project(&c);
        assert_eq!((f.firstname.as_str(), f.lastname.as_str()), ("Grace", "Brewster Hopper"));
        assert_eq!(f.email, "b@x.org");
        assert_eq!((f.birthday.as_str(), f.anniversary.as_str()), ("--12-09", "1930-06-15"));
    }

    #[test]
    fn flat_fields_map_into_the_card_and_odd_birthdays_are_refused_or_kept_aside() {
        let mut c = Card::default();
        let legacy = apply_flat(
            &mut c,
            &FlatInput {
                firstname: "Ada".into(),
                lastname: "Lovelace".into(),
                email: "ada@example.org".into(),
                birthday: "--12-10".into(),
                ..FlatInput::default()
            },
        );
        assert_eq!(legacy, Ok(None));
        let f = project(&c);
        assert_eq!(
            (f.firstname.as_str(), f.email.as_str(), f.birthday.as_str()),
            ("Ada", "ada@example.org", "--12-10")
        );
        for shape in ["early December", "15/03/1990", "1990-3-5", "19900315", "--1210"] {
            let refused = apply_flat(&mut c, &FlatInput { birthday: shape.into(), ..FlatInput::default() });
            assert_eq!(refused.map_err(|e| e.field).err().as_deref(), Some("birthday"), "{shape}");
            let refused = apply_flat(&mut c, &FlatInput { anniversary: shape.into(), ..FlatInput::default() });
            assert_eq!(refused.map_err(|e| e.field).err().as_deref(), Some("anniversary"), "{shape}");
        }
        assert_eq!(project(&c).birthday, "--12-10", "a refused birthday leaves the card's");
        // The right shape without a calendar day: accepted, kept as text, not in the card.
        let odd = apply_flat(&mut c, &FlatInput { birthday: "1990-13-45".into(), ..FlatInput::default() });
        assert_eq!(odd, Ok(Some("1990-13-45".to_string())));
        assert_eq!(project(&c).birthday, "", "the card holds no birthday it cannot write as BDAY");
        assert!(apply_flat(&mut c, &FlatInput { anniversary: "2001-13-01".into(), ..FlatInput::default() }).is_err());
    }
}
