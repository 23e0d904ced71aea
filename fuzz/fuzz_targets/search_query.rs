//! What anyone types into a search box: parsing any text gives a plan or nothing, never a panic;
//! every clause is a folded word of two or more characters (or a phrase of them); a snippet of
//! any text stays within its length and its highlights within the snippet.
#![no_main]

use libfuzzer_sys::fuzz_target;
use mycorrhizal_engine::{Plan, SEARCH_MAX_CLAUSES as MAX_CLAUSES, SearchClause as Clause};

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else { return };
    let Some(plan) = Plan::parse(text) else { return };
    assert!(!plan.clauses.is_empty() && plan.clauses.len() <= MAX_CLAUSES);
    for clause in &plan.clauses {
        match clause {
            Clause::Word { text, .. } => assert!(text.chars().count() > 1, "{text:?}"),
            Clause::Phrase(words) => assert!(words.len() > 1 && words.iter().all(|w| !w.is_empty())),
        }
    }
    if let Some(snippet) = plan.snippet(text, 40) {
        let len = snippet.text.chars().count();
        assert!(len <= 42, "{len}");
        assert!(snippet.highlights.iter().all(|(from, to)| from < to && *to <= len));
    }
});
