//! `mycorrhizal import`: a file into one user's contacts from the command line, through the same
//! rows, duplicate detection and batched apply as the HTTP import, with a progress bar.

use std::collections::HashMap;
use std::path::Path;

use mycorrhizal_codecs::{csv, jscontact, vcard};
use mycorrhizal_engine::UserId;

use crate::auth::records::Account;
use crate::config::Config;
use crate::crm::import::{self, Action, ImportResult, ImportRow, Source};

/// The source format of `path`: `format` when given, else its extension.
fn source_of(path: &Path, format: Option<&str>) -> Result<Source, String> {
    let ext = path.extension().and_then(|e| e.to_str()).unwrap_or("").to_lowercase();
    match format.map(str::to_lowercase).as_deref().unwrap_or(ext.as_str()) {
        "vcf" | "vcard" => Ok(Source::Vcf),
        "json" | "jscontact" => Ok(Source::JsContact),
        "csv" | "txt" => Ok(Source::Csv),
        other => Err(format!("unknown format {other:?}: use --format vcf, jscontact or csv")),
    }
}

/// The rows of a file; a CSV file uses the suggested column mapping.
pub fn rows_of_file(source: Source, bytes: &[u8]) -> Result<Vec<ImportRow>, String> {
    Ok(match source {
        Source::Vcf => import::rows_of(vcard::parse_file(bytes)),
        Source::JsContact => import::rows_of(jscontact::parse_file(bytes)),
        Source::Csv => {
            let table = csv::read_table(&mycorrhizal_codecs::text::decode(bytes))
                .map_err(|e| format!("line {}: {}", e.line, e.reason))?;
            let mappings = csv::suggest_mappings(&table.headers);
            csv::apply_mappings(&table, &mappings)
                .into_iter()
                .enumerate()
                .map(|(index, row)| ImportRow::from_csv(index, row))
                .collect()
        }
        Source::Records | Source::Share => return Err("records and shares are imported over HTTP".into()),
    })
}

/// How `mycorrhizal import` reads and applies a file.
#[derive(Debug, Clone, Copy, Default)]
pub struct Options<'a> {
    /// `vcf`, `jscontact` or `csv`; else the file's extension.
    pub format: Option<&'a str>,
    /// Merge duplicates into their contacts instead of skipping them.
    pub update_duplicates: bool,
    /// Where the cards' categories go.
    pub categories: import::Categories,
}

/// Imports `path` for `user`. Opens the database (the server must be stopped).
pub async fn run(config: Config, user: &str, path: &Path, options: Options<'_>) -> Result<ImportResult, String> {
    let Options { format, update_duplicates, categories } = options;
    let source = source_of(path, format)?;
    let bytes = std::fs::read(path).map_err(|e| format!("{}: {e}", path.display()))?;
    let (limit, knob) = match source {
        Source::Csv => (config.import.max_csv_bytes, "IMPORT_MAX_CSV_MB"),
        _ => (config.import.max_file_bytes, "IMPORT_MAX_FILE_MB"),
    };
    if bytes.len() > limit {
        return Err(format!("{}: larger than {knob} allows ({} MB)", path.display(), limit / (1024 * 1024)));
    }
    let engine = crate::open_engine(&config).await.map_err(|e| format!("{e:#}"))?;
    let identifier = user.trim().to_lowercase();
    let key = if identifier.contains('@') { "email" } else { "username" };
    let found = engine.global().and_then(|g| g.find::<Account>(key, &identifier)).map_err(|e| e.to_string())?;
    let Some((id, _)) = found else {
        engine.shutdown();
        return Err(format!("no user {user:?}"));
    };
    let scope = engine.user(UserId(id));
    let outcome = tokio::task::spawn_blocking(move || -> Result<ImportResult, String> {
        let mut rows = rows_of_file(source, &bytes)?;
        categories.place(&mut rows);
        if rows.len() > config.import.max_cards {
            return Err(format!("{} rows; at most {} (IMPORT_MAX_CARDS)", rows.len(), config.import.max_cards));
        }
        import::prepare(&scope, &mut rows).map_err(|e| e.to_string())?;
        let actions: HashMap<usize, Action> = rows
            .iter()
            .map(|r| {
                let action = match r.suggested() {
                    Action::Update if !update_duplicates => Action::Skip,
                    suggested => suggested,
                };
                (r.index, action)
            })
            .collect();
        let bar = indicatif::ProgressBar::new(rows.len() as u64);
        bar.set_style(
            indicatif::ProgressStyle::with_template("{bar:40} {pos}/{len} contacts written ({per_sec}, {eta} left)")
                .unwrap_or_else(|_| indicatif::ProgressStyle::default_bar()),
        );
        let progress = |done: usize, total: usize| {
            bar.set_length(total as u64);
            bar.set_position(done as u64);
        };
        let held = import::Held::of(&config.data_dir, rows).map_err(|e| e.to_string())?;
        let result = import::execute(&scope, source, &held, &actions, config.import.batch_rows, &progress);
        bar.finish_and_clear();
        Ok(result)
    })
    .await
    .map_err(|e| e.to_string())?;
    engine.shutdown();
    outcome
}
