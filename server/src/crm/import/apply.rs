//! Writing a confirmed import: the person's decision per row ([`Action`]), the rows planned
//! from them, and [`execute`], which prepares contacts on the calling thread while a second
//! thread hands batches to the engine's writer, one transaction per batch ([`apply_batch`]), and
//! accounts for every row in the [`ImportResult`]. Sessions and the confirm request around it are
//! `confirm`; what an update merges is `merge`.

use std::collections::HashMap;

use mycorrhizal_codecs::record::NeutralRecord;
use mycorrhizal_engine::{Precondition, Prepared, Row, TxUser};
use serde::Serialize;

use super::pictures::Picture;
use super::runs::{ImportRun, record_run};
use super::{Action, Held, HeldRow, Source, merge, new_contact};
use crate::crm::contact::{Contact, INDEX_UID};

/// Rows per write transaction when applying, unless configured (`IMPORT_BATCH_ROWS`): one durable
/// commit per batch, not per row. A batch holds the writer while it commits (every other user's
/// writes wait), and the memory of a confirm grows with it: its prepared contacts, the pages its
/// transaction dirties and its redo record. Larger batches write less (each copies every index
/// page it touches), but a 100,000-card confirm in batches of 10,000 peaked at 668 MB resident
/// against 296 MB in batches of 2,000, for 6.1 s against 7.6 s (#55; BENCHMARKS.md, Import).
pub const BATCH: usize = 2_000;

/// The summary a confirm returns (and returns again for a repeated confirm).
#[derive(Debug, Clone, Default, Serialize, utoipa::ToSchema)]
pub struct ImportResult {
    pub total_processed: u64,
    pub created: u64,
    pub updated: u64,
    pub skipped: u64,
    /// How many rows failed (each has a line in `errors`).
    pub error_count: u64,
    /// One line per failed row, then one per value a kept row lost (an unreadable date):
    /// `row N (line L): reason`.
    pub errors: Vec<String>,
}

/// One step of applying a session: a new contact takes its picture (already named in the
/// contact); an updated one only when it has none.
#[derive(Debug, Clone)]
pub enum Op {
    Add { row: usize, contact: Box<Prepared<Contact>>, picture: Option<Picture> },
    Update { row: usize, id: u64, record: Box<NeutralRecord>, picture: Option<Picture> },
}

impl Op {
    /// The row this op applies.
    pub fn row(&self) -> usize {
        match self {
            Op::Add { row, .. } | Op::Update { row, .. } => *row,
        }
    }
}

/// What happened to one op inside a transaction.
#[derive(Debug, Clone)]
pub enum Outcome {
    Created { row: usize, id: u64 },
    Updated { row: usize, id: u64 },
    Failed { row: usize, reason: String },
}

/// Applies one batch inside one transaction. A failing row is reported and the others go on:
/// every check that can fail runs before the row writes anything.
pub fn apply_batch(tx: &TxUser<'_, '_>, ops: &[Op]) -> mycorrhizal_engine::Result<Vec<Outcome>> {
    let mut out: Vec<Option<Outcome>> = vec![None; ops.len()];
    // The batch's new contacts are created together (their index entries written in key order),
    // from borrows: the batch may run again (see the writer), so its contacts are not given away.
    let adds: Vec<(usize, usize, &Prepared<Contact>, Option<&Picture>)> = ops
        .iter()
        .enumerate()
        .filter_map(|(at, op)| match op {
            Op::Add { row, contact, picture } => Some((at, *row, contact.as_ref(), picture.as_ref())),
            Op::Update { .. } => None,
        })
        .collect();
    let bodies: Vec<&Prepared<Contact>> = adds.iter().map(|(_, _, contact, _)| *contact).collect();
    let created = tx.create_many_from(&bodies)?;
    for ((at, row, contact, picture), created) in adds.into_iter().zip(created) {
        // The UID is unique: a taken one is refused before the row writes anything, and the
        // card then gets a fresh one.
        let created = match created {
            Err(mycorrhizal_engine::Error::Duplicate { index: INDEX_UID }) => {
                let mut contact = contact.body().clone();
                contact.uid = uuid::Uuid::new_v4().to_string();
                let mut card = contact.parsed_card();
                card.uid = Some(contact.uid.clone());
                contact.card = serde_json::to_string(&card).unwrap_or(contact.card);
                tx.create(contact).map(|r| r.id)
            }
            created => created,
        };
        out[at] = Some(match created {
            Ok(id) => {
                // The contact names its picture already; the bytes land in the same commit.
                if let Some(picture) = picture {
                    tx.put_blob(&picture.name, &picture.bytes)?;
                }
                Outcome::Created { row, id }
            }
            Err(mycorrhizal_engine::Error::Invalid(e)) => {
                Outcome::Failed { row, reason: format!("{}: {}", e.field, e.reason) }
            }
            Err(e) => return Err(e),
        });
    }
    for (at, op) in ops.iter().enumerate() {
        let Op::Update { row, id, record, picture } = op else { continue };
        let row = *row;
        let existing: Row<Contact> = match tx.get(*id) {
            Ok(r) => r,
            Err(mycorrhizal_engine::Error::NotFound) => {
                out[at] = Some(Outcome::Failed { row, reason: format!("the matched contact {id} no longer exists") });
                continue;
            }
            Err(e) => return Err(e),
        };
        let mut merged = merge(&existing.body, record);
        if let Err(e) = merged.parsed_card().validate() {
            out[at] = Some(Outcome::Failed { row, reason: format!("{}: {}", e.field, e.reason) });
            continue;
        }
        // A contact that already has a picture keeps it.
        let took = picture.as_ref().filter(|_| merged.photo.is_empty());
        if let Some(picture) = took {
            merged.photo = picture.name.clone();
        }
        out[at] = Some(match tx.put(*id, Precondition::Any, merged) {
            Ok(r) => {
                if let Some(picture) = took {
                    tx.put_blob(&picture.name, &picture.bytes)?;
                }
                Outcome::Updated { row, id: r.id }
            }
            Err(mycorrhizal_engine::Error::Invalid(e)) => {
                Outcome::Failed { row, reason: format!("{}: {}", e.field, e.reason) }
            }
            Err(e) => return Err(e),
        });
    }
    // Every op got its outcome above, in the batch's order.
    Ok(out.into_iter().flatten().collect())
}

fn row_error(row: &HeldRow, reason: &str) -> String {
    row_error_at(row.index, row.line, reason)
}

fn row_error_at(index: usize, line: usize, reason: &str) -> String {
    if line > 0 { format!("row {index} (line {line}): {reason}") } else { format!("row {index}: {reason}") }
}

/// A row the confirm will write: its position in the rows, and the contact an update merges into.
struct Planned {
    at: usize,
    update: Option<u64>,
}

/// Applies decisions to held rows (each row's record read back from the spool as its batch is
/// prepared): creates and merges in transactions of `batch` rows
/// (one durable commit each; [`BATCH`] unless configured), with each row's picture stored in the
/// same commit as the contact that takes it, and records the import run.
/// `progress(done, total)` is called after each batch.
///
/// While the writer commits one batch, this thread prepares the next (the contact, its save hook
/// and validation), so the single writer only stores rows.
///
/// It always returns a result, never an error: rows are independent, so a failing row is counted
/// and described and the others are applied, and a batch whose transaction fails (the disk, not
/// the row) reports each of its rows as failed while later batches are still tried. Once any row
/// may have been written, the only honest answer is the per-row account; an error instead would
/// invite a retry that adds the committed rows a second time. A kept row whose preview noted a
/// dropped value (an unreadable date) is listed in `errors` too, without counting as failed.
pub fn execute(
    scope: &mycorrhizal_engine::UserScope,
    source: Source,
    held: &Held,
    actions: &HashMap<usize, Action>,
    batch: usize,
    progress: &dyn Fn(usize, usize),
) -> ImportResult {
    let rows = &held.rows;
    let mut result = ImportResult { total_processed: rows.len() as u64, ..Default::default() };
    let mut failed = 0u64;
    let mut notes = Vec::new();
    let mut planned = Vec::new();
    for (at, row) in rows.iter().enumerate() {
        let action = actions.get(&row.index).copied().unwrap_or(Action::Skip);
        let mut fail = |reason: &str| {
            failed += 1;
            result.errors.push(row_error(row, reason));
        };
        match (action, row.has_record(), row.duplicate_of) {
            (Action::Skip, _, _) => result.skipped += 1,
            (_, false, _) => fail(row.errors.first().map(String::as_str).unwrap_or("the row could not be read")),
            (Action::Add, true, _) => planned.push(Planned { at, update: None }),
            (Action::Update, true, Some(id)) => planned.push(Planned { at, update: Some(id) }),
            (Action::Update, true, None) => fail("update asked, but the row matches no existing contact"),
        }
        if action != Action::Skip && row.has_record() {
            for problem in &row.errors {
                notes.push(row_error(row, &format!("imported without a value: {problem}")));
            }
        }
    }
    let lines: HashMap<usize, usize> = rows.iter().map(|r| (r.index, r.line)).collect();
    let describe = |row: usize, reason: &str| match lines.get(&row) {
        Some(&line) => row_error_at(row, line, reason),
        None => format!("row {row}: {reason}"),
    };
    let total = planned.len();
    let mut done = 0;
    // Returns how many rows the written batch held.
    let account = |outcomes: Vec<Outcome>, result: &mut ImportResult, failed: &mut u64| {
        for outcome in &outcomes {
            match outcome {
                Outcome::Created { .. } => result.created += 1,
                Outcome::Updated { .. } => result.updated += 1,
                Outcome::Failed { row, reason } => {
                    *failed += 1;
                    result.errors.push(describe(*row, reason));
                }
            }
        }
        outcomes.len()
    };
    std::thread::scope(|threads| {
        // A rendezvous: the batch being written and the one being prepared are all a confirm
        // holds, never a third waiting between them (each costs memory, #55 item 2).
        let (to_writer, batches) = std::sync::mpsc::sync_channel::<Vec<Op>>(0);
        let (to_account, written) = std::sync::mpsc::channel::<Vec<Outcome>>();
        threads.spawn(move || {
            for batch in batches {
                let rows: Vec<usize> = batch.iter().map(Op::row).collect();
                // The batch is freed here, not on the engine's writer (which every user waits on).
                let batch = std::sync::Arc::new(batch);
                let job = std::sync::Arc::clone(&batch);
                let outcomes = match scope.write(move |tx| apply_batch(tx, &job)) {
                    Ok(outcomes) => outcomes,
                    Err(e) => {
                        tracing::error!(event = "import_batch_failed", rows = rows.len(), error = %e);
                        let reason = format!("not saved: {e}");
                        rows.iter().map(|row| Outcome::Failed { row: *row, reason: reason.clone() }).collect()
                    }
                };
                if to_account.send(outcomes).is_err() {
                    return;
                }
            }
        });
        for chunk in planned.chunks(batch.max(1)) {
            let mut ops = Vec::with_capacity(chunk.len());
            for plan in chunk {
                // The row's card and picture are read back from the spool and move into the
                // contact.
                let row = &rows[plan.at];
                let (record, picture) = match held.record(row) {
                    Ok(Some((record, photo))) => (record, photo.and_then(Picture::of)),
                    Ok(None) => continue,
                    Err(e) => {
                        failed += 1;
                        result.errors.push(row_error(row, &e.to_string()));
                        continue;
                    }
                };
                match plan.update {
                    None => {
                        let prepared = new_contact(record, false).and_then(|(mut contact, card)| {
                            contact.photo = picture.as_ref().map(|p| p.name.clone()).unwrap_or_default();
                            Prepared::with(contact, |c| c.prepare_parsed(card))
                        });
                        match prepared {
                            // The writer's share that needs no id is done here, off the writer.
                            Ok(contact) => {
                                ops.push(Op::Add { row: row.index, contact: Box::new(contact.ahead()), picture })
                            }
                            Err(invalid) => {
                                failed += 1;
                                result.errors.push(row_error(row, &invalid.to_string()));
                            }
                        }
                    }
                    Some(id) => ops.push(Op::Update { row: row.index, id, record: Box::new(record), picture }),
                }
            }
            // Rows that failed before the transaction count as done too.
            done += chunk.len() - ops.len();
            if !ops.is_empty() && to_writer.send(ops).is_err() {
                break;
            }
            while let Ok(outcomes) = written.try_recv() {
                done += account(outcomes, &mut result, &mut failed);
                progress(done, total);
            }
        }
        drop(to_writer);
        for outcomes in written {
            done += account(outcomes, &mut result, &mut failed);
            progress(done, total);
        }
    });
    result.errors.extend(notes);
    result.error_count = failed;
    let run = ImportRun {
        format: source.format().to_string(),
        processed: result.total_processed,
        created: result.created,
        updated: result.updated,
        skipped: result.skipped,
        errors: result.error_count,
    };
    if let Err(e) = scope.write(move |tx| record_run(tx, run.clone())) {
        // The contacts are in; only the history line is missing.
        tracing::error!(event = "import_run_not_recorded", error = %e);
    }
    result
}
