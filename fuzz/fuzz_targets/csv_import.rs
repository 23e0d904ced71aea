//! CSV files from anyone: any bytes decode, read as a table or a table error, and map through the
//! suggested columns into one row each, never a panic. Every record that comes out is valid, and
//! exporting those records then reading the export gives the same records again (the export is
//! a fixed point of read-after-write).
#![no_main]

use libfuzzer_sys::fuzz_target;
use mycorrhizal_codecs::csv::{self, apply_mappings, check_mappings, decode, read_table, suggest_mappings};
use mycorrhizal_codecs::record::NeutralRecord;

fn records_of(bytes: &[u8]) -> Option<Vec<NeutralRecord>> {
    let table = read_table(&decode(bytes)).ok()?;
    assert!(table.rows.iter().all(|r| r.len() == table.headers.len()), "rows are squared to the headers");
    let mappings = suggest_mappings(&table.headers);
    assert_eq!(check_mappings(&table.headers, &mappings), Ok(()), "suggested mappings are accepted");
    let rows = apply_mappings(&table, &mappings);
    assert_eq!(rows.len(), table.rows.len(), "one result per row");
    Some(rows.into_iter().filter_map(|r| r.record).collect())
}

fuzz_target!(|data: &[u8]| {
    let Some(records) = records_of(data) else { return };
    for record in &records {
        assert_eq!(record.card.validate(), Ok(()), "an imported record is valid");
    }
    if records.is_empty() {
        return;
    }
    // The first export normalises (labels, joined notes); from there on it is stable.
    let once = records_of(&csv::export(&records)).expect("an export reads back");
    assert_eq!(once.len(), records.len(), "no row lost on the way out and back");
    let twice = records_of(&csv::export(&once)).expect("an export reads back");
    assert_eq!(twice, once, "export -> read is stable");
});
