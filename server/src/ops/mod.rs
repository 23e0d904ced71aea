//! Operations: the facts an operator relies on (filesystem checks, system events, storage samples,
//! the health probes' answers).

pub mod events;
pub mod fs;
pub mod health;
pub mod storage;
