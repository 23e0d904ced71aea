//! Operations: the facts an operator relies on (filesystem checks, system events).

pub mod events;
pub mod fs;
