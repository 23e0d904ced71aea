//! The history of finished imports: one [`ImportRun`] per confirm (counts, not messages), the
//! 50 most recent kept per user, written in the same transaction as the import's last step.

use mycorrhizal_engine::{Invalid, Kind, Precondition, Record, Row, TxUser, UserView, kind};
use serde::{Deserialize, Serialize};

/// Import runs kept per user.
pub const RUNS_KEPT: usize = 50;

/// A finished import, kept per user (the 50 most recent). Counts, not messages.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ImportRun {
    /// `csv`, `vcf`, `jscontact` or `records`.
    pub format: String,
    pub processed: u64,
    pub created: u64,
    pub updated: u64,
    pub skipped: u64,
    pub errors: u64,
}

impl Record for ImportRun {
    const KIND: Kind = kind!("import_run", hard_delete);

    fn validate(&self) -> Result<(), Invalid> {
        if !["csv", "vcf", "jscontact", "records"].contains(&self.format.as_str()) {
            return Err(Invalid::new("format", "must be csv, vcf, jscontact or records"));
        }
        Ok(())
    }
}

/// Records a run and drops the oldest beyond [`RUNS_KEPT`], in the caller's transaction.
pub fn record_run(tx: &TxUser<'_, '_>, run: ImportRun) -> mycorrhizal_engine::Result<()> {
    tx.create(run)?;
    let ids = tx.find_range::<ImportRun>(mycorrhizal_engine::UPDATED_INDEX, "", "~")?;
    if ids.len() > RUNS_KEPT {
        let mut ids = ids;
        ids.sort_unstable();
        for id in &ids[..ids.len() - RUNS_KEPT] {
            tx.delete::<ImportRun>(*id, Precondition::Any)?;
        }
    }
    Ok(())
}

/// A finished import as clients read it.
#[derive(Debug, Clone, Serialize, utoipa::ToSchema)]
pub struct ImportRunView {
    pub id: u64,
    /// `csv`, `vcf`, `jscontact` or `records`.
    pub format: String,
    pub processed: u64,
    pub created: u64,
    pub updated: u64,
    pub skipped: u64,
    pub errors: u64,
    #[schema(value_type = String)]
    pub created_at: jiff::Timestamp,
}

/// `{import_runs}`: the kept import runs, newest first.
#[derive(Debug, Clone, Serialize, utoipa::ToSchema)]
pub struct ImportRunList {
    pub import_runs: Vec<ImportRunView>,
}

/// The user's kept import runs as clients read them, newest first.
pub fn run_list(view: &UserView) -> mycorrhizal_engine::Result<ImportRunList> {
    let import_runs = recent_runs(view)?
        .into_iter()
        .map(|r| ImportRunView {
            id: r.id,
            format: r.body.format,
            processed: r.body.processed,
            created: r.body.created,
            updated: r.body.updated,
            skipped: r.body.skipped,
            errors: r.body.errors,
            created_at: r.meta.created_at,
        })
        .collect();
    Ok(ImportRunList { import_runs })
}

/// The user's kept import runs, newest first.
pub fn recent_runs(view: &UserView) -> mycorrhizal_engine::Result<Vec<Row<ImportRun>>> {
    let mut rows = view.list::<ImportRun>()?;
    rows.sort_by(|a, b| b.meta.created_at.cmp(&a.meta.created_at).then(b.id.cmp(&a.id)));
    Ok(rows)
}
