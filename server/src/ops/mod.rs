//! Operations: the facts an operator relies on (filesystem checks, system events and their
//! correlation ids, storage samples, the health probes' answers, the record of job runs). The
//! bottom of the domain with crm: it reads the engine, the configuration and crm's blocking
//! helper and schema version, and no other domain module.

pub mod correlation;
pub mod events;
pub mod fs;
pub mod health;
pub mod job_runs;
pub mod storage;
pub mod timeline;
