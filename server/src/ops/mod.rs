//! Operations: the facts an operator relies on (filesystem checks, system events and their
//! correlation ids, storage samples, the health probes' answers, the record of job runs). The
//! bottom of the domain: it reads the engine and the configuration, and no other domain module.

pub mod correlation;
pub mod events;
pub mod fs;
pub mod health;
pub mod job_runs;
pub mod storage;
