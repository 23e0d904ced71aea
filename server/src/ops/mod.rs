//! Operations: the facts an operator relies on (filesystem checks, system events, storage samples,
//! the health probes' answers, the record of job runs) and the instance's own housekeeping
//! (retention).

pub mod events;
pub mod fs;
pub mod health;
pub mod job_runs;
pub mod maintenance;
pub mod retention;
pub mod storage;
