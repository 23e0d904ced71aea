//! Duplicate detection: for every row, the existing contact it matches (card UID, then email,
//! phone, then first and last name together) and what an update would change, and the earlier
//! row of the same upload it repeats.
//!
//! It is index lookups and hashing only: per row, the card UID, each email, each phone key and
//! the sort name are looked up in the contact indexes, and the same keys in one hash map find
//! earlier rows of the same upload. Nothing compares rows pairwise.

use std::collections::HashMap;

use mycorrhizal_codecs::card::Card;
use mycorrhizal_codecs::projection::{Flat, project};
use mycorrhizal_engine::{UserScope, UserView};

use super::{DuplicateMatch, ImportRow, diff, merge, stable_uid};
use crate::crm::contact::{Contact, INDEX_EMAIL, INDEX_PHONE, INDEX_SORT_NAME, INDEX_UID, phone_key};

/// The identifying keys of a card, strongest first: what duplicates are looked up by.
fn keys(card: &Card, flat: &Flat) -> Vec<(&'static str, &'static str, String)> {
    let mut out = vec![("uid", INDEX_UID, stable_uid(card))];
    for e in &flat.emails {
        let e = e.trim().to_lowercase();
        if !e.is_empty() {
            out.push(("email", INDEX_EMAIL, e));
        }
    }
    for p in &flat.phones {
        if let Some(k) = phone_key(&p.value) {
            out.push(("phone", INDEX_PHONE, k));
        }
    }
    // A name alone is a weaker signal: only a first and a last name together count.
    if !flat.firstname.is_empty() && !flat.lastname.is_empty() {
        out.push(("name", INDEX_SORT_NAME, flat.sort_name.clone()));
    }
    out
}

/// What every preview does with its rows before they are shown: each record's custom field
/// values are read against the user's definitions (`field::ops::absorb`: a `field:<key>` CSV
/// column, an `X-NAME` vCard property; what fails is noted on the row), then the duplicates are
/// found. Rows arrive in batches, in file order ([`Detector::check`]), each checked in a read
/// transaction of its own (an upload may arrive for minutes, and a long read holds pages the
/// writer would reuse); the keys of every row seen so far are kept, so a row repeating one of an
/// earlier batch is found too.
pub struct Detector<'s> {
    scope: &'s UserScope,
    defs: Vec<crate::crm::field::FieldDefinition>,
    /// Each key of the rows checked so far, by kind, with the first row that had it.
    seen: HashMap<&'static str, HashMap<String, usize>>,
}

impl<'s> Detector<'s> {
    pub fn new(scope: &'s UserScope) -> mycorrhizal_engine::Result<Detector<'s>> {
        let defs = crate::crm::field::ops::definitions(&scope.view()?)?.into_iter().map(|d| d.body).collect();
        Ok(Detector { scope, defs, seen: HashMap::new() })
    }

    /// Prepares the next rows of the upload: their custom fields read, then, for every row, the
    /// existing contact it duplicates and what an update would change, and the earlier row of the
    /// upload it repeats. The lookups of a large batch run on several threads (rows are
    /// independent there); the repeats are then found in one pass over the rows' keys, in order.
    pub fn check(&mut self, rows: &mut [ImportRow]) -> mycorrhizal_engine::Result<()> {
        /// Rows per thread below which one thread does all the lookups.
        const ROWS_PER_THREAD: usize = 500;
        for row in rows.iter_mut() {
            if let Some(record) = row.record.as_mut() {
                let notes = crate::crm::field::ops::absorb(record, &self.defs);
                row.diagnostics.extend(notes);
            }
        }
        let view = &self.scope.view()?;
        let threads = std::thread::available_parallelism().map_or(1, |n| n.get()).clamp(1, 4);
        let per_thread = rows.len().div_ceil(threads).max(ROWS_PER_THREAD);
        let keyed: Vec<Vec<Keys>> = if per_thread >= rows.len() {
            vec![match_existing(view, rows)?]
        } else {
            std::thread::scope(|scope| {
                let parts: Vec<_> =
                    rows.chunks_mut(per_thread).map(|part| scope.spawn(move || match_existing(view, part))).collect();
                parts
                    .into_iter()
                    .map(|p| p.join().unwrap_or_else(|panic| std::panic::resume_unwind(panic)))
                    .collect::<mycorrhizal_engine::Result<Vec<_>>>()
            })?
        };
        for (row, keys) in rows.iter_mut().zip(keyed.into_iter().flatten()) {
            row.batch_duplicate_of =
                keys.iter().find_map(|(reason, _, k)| self.seen.get(reason).and_then(|m| m.get(k)).copied());
            for (reason, _, k) in keys {
                self.seen.entry(reason).or_default().entry(k).or_insert(row.index);
            }
        }
        Ok(())
    }
}

/// Prepares all the rows of an upload at once (see [`Detector::check`]).
pub fn prepare(scope: &UserScope, rows: &mut [ImportRow]) -> mycorrhizal_engine::Result<()> {
    Detector::new(scope)?.check(rows)
}

/// A row's identifying keys (see [`keys`]); none for a row without a record.
type Keys = Vec<(&'static str, &'static str, String)>;

/// The existing contact each row matches (by its strongest key that matches), and the row's keys.
fn match_existing(view: &UserView, rows: &mut [ImportRow]) -> mycorrhizal_engine::Result<Vec<Keys>> {
    let mut out = Vec::with_capacity(rows.len());
    for row in rows.iter_mut() {
        let Some(record) = &row.record else {
            out.push(Vec::new());
            continue;
        };
        let flat = project(&record.card);
        let keys = keys(&record.card, &flat);
        for (reason, index, key) in &keys {
            let Some(id) = view.find::<Contact>(index, key)?.into_iter().next() else { continue };
            let existing = view.get::<Contact>(id)?;
            let f = &existing.body.flat;
            row.duplicate = Some(DuplicateMatch {
                existing_contact_id: id,
                existing_firstname: f.firstname.clone(),
                existing_lastname: f.lastname.clone(),
                existing_email: f.email.clone(),
                existing_phone: f.phone.clone(),
                match_reason: reason,
            });
            let merged = merge(&existing.body, record);
            row.diff = Some(diff(&existing.body, &merged));
            break;
        }
        out.push(keys);
    }
    Ok(out)
}
