//! How the server process asks its allocator to give memory back.
//!
//! mimalloc (the global allocator, see `lib.rs`) keeps pages a thread freed for reuse: it purges
//! them (returns them to the system) only a second after they were freed, and only when a later
//! free happens to trigger the purge, and every thread keeps two empty pages per size class. A
//! server that imported 100,000 cards and then goes quiet keeps those pages resident: the
//! footprint bench measured 178 MB at rest with the defaults, 146 MB with purging at once and no
//! retained pages (issue #27 item 3; BENCHMARKS.md).
//!
//! mimalloc reads these options from its environment (`MIMALLOC_PURGE_DELAY`,
//! `MIMALLOC_PAGE_FULL_RETAIN`) when it first needs them, and offers no safe way to set them
//! from inside the process. So `serve` starts by executing itself again, once, with the two set,
//! unless the operator set either (theirs wins). The process keeps its id, arguments and the rest
//! of its environment; if the re-execution fails, the server runs with the allocator's defaults.

use std::ffi::OsString;

/// The options the server runs with, unless set in the environment.
pub const TUNING: [(&str, &str); 2] = [("MIMALLOC_PURGE_DELAY", "0"), ("MIMALLOC_PAGE_FULL_RETAIN", "0")];

/// What to set before running again: nothing when the environment already names any of
/// [`TUNING`] (the operator's choice, or this process after its re-execution).
pub fn missing(env: impl IntoIterator<Item = (OsString, OsString)>) -> Vec<(&'static str, &'static str)> {
    let present: Vec<OsString> = env.into_iter().map(|(k, _)| k).collect();
    if TUNING.iter().any(|(k, _)| present.iter().any(|p| p == k)) {
        return Vec::new();
    }
    TUNING.to_vec()
}

/// Replaces this process by the same program with [`TUNING`] in its environment, when it is not
/// there yet. Returns only when nothing was to be done or the re-execution failed (the reason is
/// returned, for the log).
#[cfg(unix)]
pub fn settle() -> Option<String> {
    use std::os::unix::process::CommandExt;
    let set = missing(std::env::vars_os());
    if set.is_empty() {
        return None;
    }
    let program = match std::env::current_exe() {
        Ok(program) => program,
        Err(e) => return Some(format!("the program's path is unknown: {e}")),
    };
    let mut args = std::env::args_os();
    let mut command = std::process::Command::new(program);
    if let Some(arg0) = args.next() {
        command.arg0(arg0);
    }
    // `exec` returns only when it failed.
    let error = command.args(args).envs(set).exec();
    Some(error.to_string())
}

#[cfg(not(unix))]
pub fn settle() -> Option<String> {
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env(keys: &[&str]) -> Vec<(OsString, OsString)> {
        keys.iter().map(|k| (OsString::from(k), OsString::from("1"))).collect()
    }

    #[test]
    fn sets_both_options_when_neither_is_there() {
        assert_eq!(missing(env(&["PATH", "DATA_DIR"])), TUNING.to_vec());
    }

    #[test]
    fn the_operators_setting_wins_and_a_reexecuted_process_stops() {
        assert!(missing(env(&["PATH", "MIMALLOC_PURGE_DELAY"])).is_empty());
        assert!(missing(env(&["MIMALLOC_PAGE_FULL_RETAIN"])).is_empty());
        let mut after = env(&["PATH"]);
        after.extend(TUNING.iter().map(|(k, v)| (OsString::from(k), OsString::from(v))));
        assert!(missing(after).is_empty());
    }
}
