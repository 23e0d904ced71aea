//! A contact-like test record and an engine on a temporary folder.

use mycorrhizal_engine::{Engine, Invalid, Kind, Options, Record, kind};
use serde::{Deserialize, Serialize};
use tempfile::TempDir;

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Person {
    pub name: String,
    pub email: String,
    /// Derived by the save hook: lowercase name.
    pub sort_name: String,
}

impl Person {
    pub fn new(name: &str, email: &str) -> Self {
        Person { name: name.into(), email: email.into(), sort_name: String::new() }
    }
}

impl Record for Person {
    const KIND: Kind = kind!("person", soft_delete);

    fn validate(&self) -> Result<(), Invalid> {
        if self.name.trim().is_empty() {
            return Err(Invalid::new("name", "must not be empty"));
        }
        Ok(())
    }

    fn save_hook(&mut self) {
        self.sort_name = self.name.to_lowercase();
    }

    fn index_entries(&self) -> Vec<(&'static str, String)> {
        let mut entries = vec![("sort_name", self.sort_name.clone())];
        if !self.email.is_empty() {
            entries.push(("email", self.email.to_lowercase()));
        }
        entries
    }

    const UNIQUE: &'static [&'static str] = &["email"];
}

pub struct TestDb {
    pub dir: TempDir,
    pub engine: Engine,
}

pub fn open_in(dir: &TempDir) -> Engine {
    Engine::open(dir.path().join("db.redb"), Options::default()).expect("open").0
}

pub fn fresh() -> TestDb {
    let dir = tempfile::tempdir().expect("tempdir");
    let engine = open_in(&dir);
    TestDb { dir, engine }
}
