//! Operations: the facts an operator relies on (filesystem checks, system events, storage samples).

pub mod events;
pub mod fs;
pub mod storage;
