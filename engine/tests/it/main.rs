//! Engine integration tests: a real redb file in a temporary folder, no mocks.

mod global;
mod helpers;
mod migrations;
mod model;
mod power_cut;
mod redo;
mod reindex;
mod search;
mod system;
mod writes;
