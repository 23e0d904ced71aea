//! `GET /export?layout=legacy`: the CSV file the existing implementation wrote, for the people
//! and scripts that read it: one file of five sections (`=== CONTACTS ===`, `=== RELATIONSHIPS
//! ===`, `=== ACTIVITIES ===`, `=== NOTES ===`, `=== REMINDERS ===`), each its own header row,
//! with that implementation's column names. Contacts come in name order (archived ones too),
//! circles and tags joined with `; `, food preferences in their own column, and one column per
//! custom field after the others, headed by its label. Cells are formula-neutralised as in
//! every export; the section lines are not cells.
//!
//! The default layout stays the one table that re-imports with identity mappings: several
//! tables in one file are read as one by no spreadsheet and no importer.

use std::collections::HashMap;

use mycorrhizal_engine::{Row, UserScope, UserView};

use super::stream::{Failure, Out};
use crate::crm::activity::Activity;
use crate::crm::contact::{Contact, INDEX_SORT_NAME, field_values};
use crate::crm::field::{self, FieldDefinition};
use crate::crm::note::Note;
use crate::crm::preference::Preference;
use crate::crm::relationship::Relationship;
use crate::crm::reminder::Reminder;

const CONTACT_HEADERS: &[&str] = &[
    "ID",
    "Firstname",
    "Lastname",
    "Nickname",
    "Gender",
    "Email",
    "Phone",
    "Birthday",
    "Address",
    "How We Met",
    "Food Preference",
    "Work Information",
    "Contact Information",
    "Circles",
    "Tags",
    "Created At",
    "Updated At",
];

fn row(cells: &[String], out: &mut dyn Out) -> Result<(), Failure> {
    if super::csv::csv_row(cells, out)? { Ok(()) } else { Err(Failure::database("the download was cancelled")) }
}

fn section(title: &str, headers: &[&str], out: &mut dyn Out) -> Result<(), Failure> {
    if !out.push(format!("=== {title} ===\r\n").as_bytes()) {
        return Err(Failure::database("the download was cancelled"));
    }
    row(&headers.iter().map(|h| h.to_string()).collect::<Vec<_>>(), out)
}

fn end_section(out: &mut dyn Out) -> Result<(), Failure> {
    if out.push(b"\r\n") { Ok(()) } else { Err(Failure::database("the download was cancelled")) }
}

fn crm_text(c: &Contact, key: &str) -> String {
    serde_json::from_str::<serde_json::Value>(&c.crm)
        .ok()
        .and_then(|crm| crm.get(key).and_then(|v| v.as_str()).map(str::to_string))
        .unwrap_or_default()
}

/// Writes the whole file. Contacts are read a page per read transaction; the other sections
/// are read from one view (they are small beside the contacts).
pub fn write(scope: &UserScope, out: &mut dyn Out) -> Result<(), Failure> {
    let view = scope.view().map_err(Failure::database)?;
    let database = |e: mycorrhizal_engine::Error| Failure::database(e);
    let mut defs: Vec<FieldDefinition> =
        field::definitions(&view).map_err(database)?.into_iter().map(|r| r.body).collect();
    defs.sort_by(|a, b| a.label.cmp(&b.label));
    let mut food: HashMap<u64, Vec<String>> = HashMap::new();
    for p in view.list::<Preference>().map_err(database)? {
        if p.body.category == "food" {
            food.entry(p.body.contact_id).or_default().push(p.body.value);
        }
    }
    let headers: Vec<&str> = CONTACT_HEADERS.iter().copied().chain(defs.iter().map(|d| d.label.as_str())).collect();
    section("CONTACTS", &headers, out)?;
    let mut after: Option<(String, u64)> = None;
    loop {
        let page = scope
            .view()
            .and_then(|v| {
                v.page::<Contact>(INDEX_SORT_NAME, after.as_ref().map(|(v, id)| (v.as_str(), *id)), 200, false)
            })
            .map_err(database)?;
        for r in &page.rows {
            let c = &r.body;
            let mut circles = c.circles.clone();
            circles.sort();
            let mut tags = c.tags.clone();
            tags.sort();
            let values = field_values(&c.crm);
            let mut cells = vec![
                r.id.to_string(),
                c.flat.firstname.clone(),
                c.flat.lastname.clone(),
                c.flat.nickname.clone(),
                c.gender.clone(),
                c.flat.email.clone(),
                c.flat.phone.clone(),
                c.birthday().to_string(),
                c.flat.address.clone(),
                crm_text(c, "how_we_met"),
                food.get(&r.id).map(|f| f.join("; ")).unwrap_or_default(),
                crm_text(c, "work_information"),
                crm_text(c, "contact_information"),
                circles.join("; "),
                tags.join("; "),
                r.meta.created_at.to_string(),
                r.meta.updated_at.to_string(),
            ];
            cells.extend(defs.iter().map(|d| values.get(&d.key).map(field::as_text).unwrap_or_default()));
            row(&cells, out)?;
        }
        match page.next {
            Some(next) => after = Some(next),
            None => break,
        }
    }
    end_section(out)?;
    others(&view, out)
}

fn others(view: &UserView, out: &mut dyn Out) -> Result<(), Failure> {
    let database = |e: mycorrhizal_engine::Error| Failure::database(e);
    let names: HashMap<u64, String> =
        view.list::<Contact>().map_err(database)?.into_iter().map(|c| (c.id, legacy_name(&c))).collect();
    let name = |id: u64| names.get(&id).cloned().unwrap_or_default();

    section(
        "RELATIONSHIPS",
        &[
            "ID",
            "Source Contact ID",
            "Source Contact Name",
            "Type",
            "Target Contact ID",
            "Target Contact Name",
            "Status",
            "Sensitivity",
            "Source",
            "Created At",
            "Updated At",
        ],
        out,
    )?;
    for r in by_id(view.list::<Relationship>().map_err(database)?) {
        let e: &Relationship = &r.body;
        let mut cells = vec![
            r.id.to_string(),
            e.source.to_string(),
            name(e.source),
            e.kind.clone(),
            e.target.to_string(),
            name(e.target),
            e.status.clone(),
            e.sensitivity.clone(),
            e.origin.clone(),
        ];
        cells.extend(stamps(&r));
        row(&cells, out)?;
    }
    end_section(out)?;

    section(
        "ACTIVITIES",
        &["ID", "Title", "Description", "Location", "Date", "Contact Names", "Created At", "Updated At"],
        out,
    )?;
    for r in by_id(view.list::<Activity>().map_err(database)?) {
        let a: &Activity = &r.body;
        let who: Vec<String> = a.contact_ids.iter().map(|id| name(*id)).collect();
        let mut cells = vec![
            r.id.to_string(),
            a.title.clone(),
            a.description.clone(),
            a.location.clone(),
            a.date.to_string(),
            who.join("; "),
        ];
        cells.extend(stamps(&r));
        row(&cells, out)?;
    }
    end_section(out)?;

    section("NOTES", &["ID", "Contact ID", "Contact Name", "Content", "Date", "Created At", "Updated At"], out)?;
    for r in by_id(view.list::<Note>().map_err(database)?) {
        let n: &Note = &r.body;
        let contact = n.contact_id.map(|c| c.to_string()).unwrap_or_default();
        let mut cells = vec![
            r.id.to_string(),
            contact,
            n.contact_id.map(name).unwrap_or_default(),
            n.content.clone(),
            n.date.to_string(),
        ];
        cells.extend(stamps(&r));
        row(&cells, out)?;
    }
    end_section(out)?;

    section(
        "REMINDERS",
        &[
            "ID",
            "Contact ID",
            "Contact Name",
            "Message",
            "Remind At",
            "Recurrence",
            "By Mail",
            "Reoccur From Completion",
            "Completed",
            "Last Sent",
            "Created At",
            "Updated At",
        ],
        out,
    )?;
    for r in by_id(view.list::<Reminder>().map_err(database)?) {
        let m: &Reminder = &r.body;
        let recurrence = serde_json::to_value(m.recurrence).ok().and_then(|v| v.as_str().map(str::to_string));
        let mut cells = vec![
            r.id.to_string(),
            m.contact_id.to_string(),
            name(m.contact_id),
            m.message.clone(),
            m.remind_at.to_string(),
            recurrence.unwrap_or_default(),
            m.by_mail.to_string(),
            m.reoccur_from_completion.to_string(),
            // A completed one-off reminder is gone; a recurring one moved on.
            "false".into(),
            m.last_sent.map(|t| t.to_string()).unwrap_or_default(),
        ];
        cells.extend(stamps(&r));
        row(&cells, out)?;
    }
    Ok(())
}

fn stamps<R>(r: &Row<R>) -> [String; 2] {
    [r.meta.created_at.to_string(), r.meta.updated_at.to_string()]
}

fn by_id<R>(mut rows: Vec<Row<R>>) -> Vec<Row<R>> {
    rows.sort_by_key(|r| r.id);
    rows
}

/// `First Last`, as the existing implementation named a contact in its export.
fn legacy_name(c: &Row<Contact>) -> String {
    let f = &c.body.flat;
    let joined = format!("{} {}", f.firstname, f.lastname).trim().to_string();
    if joined.is_empty() { c.body.name() } else { joined }
}
