//! Prints the neutral records of vCard or JSContact files, and the 4.0 and 3.0 vCards written
//! back from them: `cargo run -p mycorrhizal-codecs --example dump -- FILE...`.

use mycorrhizal_codecs::record::Item;
use mycorrhizal_codecs::{jscontact, vcard};

fn main() {
    for path in std::env::args().skip(1) {
        let Ok(bytes) = std::fs::read(&path) else {
            eprintln!("cannot read {path}");
            continue;
        };
        let items = if path.ends_with(".json") { jscontact::parse_file(&bytes) } else { vcard::parse_file(&bytes) };
        println!("== {path}");
        for item in items {
            match item {
                Item::Record { record, line, diagnostics } => {
                    println!("-- line {line} {diagnostics:?}");
                    println!("{}", serde_json::to_string(&*record).unwrap_or_default());
                    for version in [vcard::Version::V4, vcard::Version::V3] {
                        match vcard::write(&record, version) {
                            Ok(text) => print!("{text}"),
                            Err(e) => println!("-- {e}"),
                        }
                    }
                }
                Item::Problem(p) => println!("-- problem {p:?}"),
            }
        }
    }
}
