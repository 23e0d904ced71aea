//! The card exports: every live contact (or the one with a card UID) as vCard 3.0 or 4.0 with
//! its photo inline, or as a JSON array of JSContact (RFC 9553) cards, with only the chosen
//! sections. The conversions are the codecs'; reading the contacts is `contacts`.

use jiff::civil::Date;
use mycorrhizal_codecs::record::NeutralRecord;
use mycorrhizal_codecs::vcard::{self, Version};
use mycorrhizal_engine::{Row, UserScope};

use super::contacts::{Render, download_contacts};
use super::sections::Selection;
use super::stream::{Failure, Out};
use super::{Download, ExportError};
use crate::crm::contact::Contact;

/// What a vCard export is asked for, as the request gives it.
#[derive(Debug, Clone, Copy, Default)]
pub struct VcardRequest<'a> {
    /// `4` (the default), `4.0`, `3` or `3.0`; a `v` prefix is tolerated.
    pub version: Option<&'a str>,
    /// Only the contact with this card UID.
    pub vcard_uid: Option<&'a str>,
    /// The sections to include (see [`Selection::parse`]).
    pub sections: Option<&'a str>,
}

/// Every live contact of `scope` as vCard, named for `today`: `mycorrhizal-contacts-<date>.vcf`.
pub async fn vcard(scope: UserScope, today: Date, request: VcardRequest<'_>) -> Result<Download, ExportError> {
    let version = match request.version.map(str::trim).filter(|v| !v.is_empty()) {
        None => Version::V4,
        Some(v) => Version::parse(v)
            .ok_or_else(|| ExportError::Invalid { field: "version", reason: "must be 4, 4.0, 3 or 3.0".into() })?,
    };
    let selection = Selection::parse(request.sections)?;
    let uid = request.vcard_uid.filter(|u| !u.trim().is_empty()).map(resolve_uid);
    download_contacts(
        scope,
        uid,
        selection,
        VcfRender(version),
        "text/vcard; charset=utf-8",
        format!("mycorrhizal-contacts-{today}.vcf"),
        if version == Version::V3 { "export:vcard3" } else { "export:vcard4" },
    )
    .await
}

/// Every live contact of `scope` as a JSON array of JSContact cards, named for `today`:
/// `mycorrhizal-contacts-<date>.jscontact.json`.
pub async fn jscontact(scope: UserScope, today: Date, sections: Option<&str>) -> Result<Download, ExportError> {
    let selection = Selection::parse(sections)?;
    download_contacts(
        scope,
        None,
        selection,
        JsRender { first: true },
        "application/jscontact+json; charset=utf-8",
        format!("mycorrhizal-contacts-{today}.jscontact.json"),
        "export:jscontact",
    )
    .await
}

/// A `vcard_uid` as stored: ours are UUIDs; an imported card's own non-UUID UID maps the way
/// the import mapped it.
fn resolve_uid(uid: &str) -> String {
    let card = mycorrhizal_codecs::card::Card { uid: Some(uid.trim().to_string()), ..Default::default() };
    crate::crm::import::stable_uid(&card)
}

struct VcfRender(Version);

impl Render for VcfRender {
    fn contact(&mut self, _row: &Row<Contact>, record: &NeutralRecord, out: &mut dyn Out) -> Result<bool, Failure> {
        let card = vcard::write(record, self.0).map_err(Failure::serialization)?;
        Ok(out.push(card.as_bytes()))
    }
}

struct JsRender {
    first: bool,
}

impl Render for JsRender {
    fn start(&mut self, out: &mut dyn Out) -> bool {
        out.push(b"[")
    }

    fn contact(&mut self, _row: &Row<Contact>, record: &NeutralRecord, out: &mut dyn Out) -> Result<bool, Failure> {
        let card = mycorrhizal_codecs::jscontact::from_neutral(record);
        let sep: &[u8] = if self.first { b"\n" } else { b",\n" };
        self.first = false;
        Ok(out.push(sep) && out.push(card.to_string().as_bytes()))
    }

    fn end(&mut self, out: &mut dyn Out) -> bool {
        out.push(b"\n]\n")
    }
}
