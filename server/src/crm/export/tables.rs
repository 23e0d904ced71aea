//! `GET /export`'s choice of table: the contacts CSV (the default), one record table, or all of
//! them in one ZIP (`archive`).

use jiff::civil::Date;
use mycorrhizal_engine::UserScope;

use super::contacts::download_contacts;
use super::csv::CsvRender;
use super::sections::Selection;
use super::{Download, ExportError, download};
use crate::crm::kinds;

/// The CSV export of `table` (`contacts` when none or blank; `all` is every table in one ZIP),
/// named for `today`: `mycorrhizal-export-<date>.csv`, `mycorrhizal-export-<table>-<date>.csv`
/// or `mycorrhizal-export-<date>.zip`.
/// With `layout` `legacy`: the existing implementation's file of five sections (see `legacy`).
pub async fn csv(
    scope: UserScope,
    today: Date,
    table: Option<&str>,
    layout: Option<&str>,
) -> Result<Download, ExportError> {
    let table = table.map(str::trim).filter(|t| !t.is_empty()).unwrap_or("contacts");
    match layout.map(str::trim).unwrap_or("") {
        "" | "default" => {}
        // The whole export in one file: `table` has nothing to choose.
        "legacy" => {
            let filename = format!("mycorrhizal-export-{today}.csv");
            return download("text/csv; charset=utf-8", filename, "export:csv", move |out| {
                super::legacy::write(&scope, out)
            })
            .await;
        }
        _ => return Err(ExportError::Invalid { field: "layout", reason: "must be default or legacy".into() }),
    }
    if table == "contacts" {
        let filename = format!("mycorrhizal-export-{today}.csv");
        let reader = scope.clone();
        let failed = |failure| ExportError::Failed { operation: "export:csv", failure };
        let render = tokio::task::spawn_blocking(move || CsvRender::of(&reader, false))
            .await
            .map_err(|e| failed(super::stream::Failure::database(e)))?
            .map_err(failed)?;
        return download_contacts(
            scope,
            None,
            Selection::default(),
            render,
            "text/csv; charset=utf-8",
            filename,
            "export:csv",
        )
        .await;
    }
    if table == "all" {
        let filename = format!("mycorrhizal-export-{today}.zip");
        return download("application/zip", filename, "export:csv", move |out| super::archive::all_tables(&scope, out))
            .await;
    }
    let tables = kinds::export_tables();
    let Some(table) = tables.iter().find(|t| t.name == table).copied() else {
        let names: Vec<&str> = tables.iter().map(|t| t.name).collect();
        return Err(ExportError::Invalid {
            field: "table",
            reason: format!("must be contacts, all or one of {}", names.join(", ")),
        });
    };
    let filename = format!("mycorrhizal-export-{}-{today}.csv", table.name);
    download("text/csv; charset=utf-8", filename, "export:csv", move |out| table.write(&scope, out)).await
}
