//! CSV import and export: the dialects of real exports (fixtures under `tests/fixtures/csv/`),
//! table reading, per-row validation, formula neutralisation and the export round trip.

use mycorrhizal_codecs::csv::{
    ColumnMapping, CsvRow, CsvWriter, EXPORT_HEADERS, FIELDS, Table, check_mappings, decode, export, export_row,
    implied_label, neutralise, read_table, suggest_mappings,
};
use mycorrhizal_codecs::record::NeutralRecord;
use serde_json::{Value, json};

fn fixture(name: &str) -> Vec<u8> {
    let path = format!("{}/tests/fixtures/csv/{name}", env!("CARGO_MANIFEST_DIR"));
    std::fs::read(&path).unwrap_or_else(|e| panic!("{path}: {e}"))
}

/// Decodes, reads, suggests and applies: what the import endpoints do.
fn import(bytes: &[u8]) -> (Table, Vec<ColumnMapping>, Vec<CsvRow>) {
    let table = read_table(&decode(bytes)).expect("a readable table");
    let mappings = suggest_mappings(&table.headers);
    assert_eq!(check_mappings(&table.headers, &mappings), Ok(()));
    let rows = mycorrhizal_codecs::csv::apply_mappings(&table, &mappings);
    (table, mappings, rows)
}

fn apply(text: &str) -> Vec<CsvRow> {
    let table = read_table(text).expect("a readable table");
    mycorrhizal_codecs::csv::apply_mappings(&table, &suggest_mappings(&table.headers))
}

/// The suggested (field, group) of `header`.
fn mapped<'a>(mappings: &'a [ColumnMapping], header: &str) -> (&'a str, u32) {
    let m = mappings.iter().find(|m| m.csv_column == header).unwrap_or_else(|| panic!("no mapping for {header}"));
    (m.contact_field.as_str(), m.group)
}

fn card(row: &CsvRow) -> Value {
    let record = row.record.as_ref().unwrap_or_else(|| panic!("row {} has no record: {:?}", row.line, row));
    serde_json::to_value(&record.card).expect("a card serialises")
}

fn record(row: &CsvRow) -> &NeutralRecord {
    row.record.as_ref().expect("a record")
}

fn component(kind: &str, value: &str) -> Value {
    json!({"kind": kind, "value": value})
}

#[test]
fn google_contacts_new_format() {
    let (table, mappings, rows) = import(&fixture("google.csv"));
    let expected = [
        ("First Name", "firstname", 0),
        ("Middle Name", "middle_name", 0),
        ("Last Name", "lastname", 0),
        ("Phonetic First Name", "", 0),
        ("Name Prefix", "prefix", 0),
        ("Name Suffix", "suffix", 0),
        ("Nickname", "nickname", 0),
        ("File As", "", 0),
        ("Organization Name", "organization", 0),
        ("Organization Title", "job_title", 0),
        ("Organization Department", "department", 0),
        ("Birthday", "birthday", 0),
        ("Notes", "notes", 0),
        ("Photo", "", 0),
        ("Labels", "tags", 0),
        ("E-mail 1 - Label", "email_label", 1),
        ("E-mail 1 - Value", "email", 1),
        ("E-mail 2 - Label", "email_label", 2),
        ("E-mail 2 - Value", "email", 2),
        ("Phone 1 - Label", "phone_label", 1),
        ("Phone 2 - Value", "phone", 2),
        ("Address 1 - Label", "address_label", 1),
        ("Address 1 - Formatted", "", 0),
        ("Address 1 - Street", "address_street", 1),
        ("Address 1 - City", "address_city", 1),
        ("Address 1 - PO Box", "", 0),
        ("Address 1 - Region", "address_region", 1),
        ("Address 1 - Postal Code", "address_postal", 1),
        ("Address 1 - Country", "address_country", 1),
        ("Website 1 - Label", "url_label", 1),
        ("Website 1 - Value", "url", 1),
        ("IM 1 - Service", "", 0),
        ("IM 1 - Value", "impp", 1),
    ];
    for (header, field, group) in expected {
        assert_eq!(mapped(&mappings, header), (field, group), "{header}");
    }
    assert_eq!(mappings.len(), table.headers.len());
    assert_eq!(table.row_lines, vec![2, 6], "Ada's notes and formatted address span four lines");
    assert!(rows.iter().all(|r| r.validation_errors.is_empty()), "{rows:?}");

    let ada = card(&rows[0]);
    assert_eq!(
        ada["name"],
        json!({"components": [component("title", "Dr."), component("given", "Ada"), component("given2", "Augusta"),
            component("surname", "Lovelace"), component("credential", "PhD")], "full": "Dr. Ada Augusta Lovelace PhD"})
    );
    assert_eq!(ada["nicknames"], json!([{"name": "Ada"}]));
    assert_eq!(ada["organizations"], json!([{"name": "Analytical Engines Ltd", "units": [{"name": "Research"}]}]));
    assert_eq!(ada["titles"], json!([{"name": "Mathematician", "kind": "title"}]));
    assert_eq!(
        ada["anniversaries"],
        json!([{"kind": "birth", "date": {"partial": {"year": 1815, "month": 12, "day": 10}}}])
    );
    assert_eq!(ada["notes"], json!([{"note": "Met at the Babbage salon.\nPrefers letters."}]));
    assert_eq!(ada["keywords"], json!(["Friends", "Science"]), "myContacts is Google's, not a tag");
    assert_eq!(
        ada["emails"],
        json!([{"address": "ada@example.org", "contexts": ["private"], "pref": 1},
            {"address": "ada@engines.example", "contexts": ["work"]}])
    );
    assert_eq!(
        ada["phones"],
        json!([{"number": "+44 20 7946 0001", "features": ["mobile"]},
            {"number": "+44 20 7946 0002", "features": ["mobile"]},
            {"number": "+44 20 7946 0099", "contexts": ["work"], "features": ["fax"]}])
    );
    assert_eq!(
        ada["addresses"],
        json!([{"components": [component("name", "12 St James's Square"), component("locality", "London"),
            component("postcode", "SW1Y 4JH"), component("country", "United Kingdom")], "contexts": ["private"]}])
    );
    assert_eq!(ada["links"], json!([{"uri": "https://ada.example.org", "label": "Blog"}]));
    assert_eq!(ada["imppAddresses"], json!([{"uri": "xmpp:ada@example.org"}]));

    let grace = card(&rows[1]);
    assert_eq!(grace["anniversaries"][0]["date"]["partial"], json!({"month": 12, "day": 9}), "year-less birthday");
    assert_eq!(grace["emails"], json!([{"address": "grace@navy.example"}]), "the label Other says nothing");
    assert_eq!(grace.get("keywords"), None);
    assert_eq!(grace["addresses"][0]["contexts"], json!(["work"]));
    assert_eq!(grace["addresses"][0]["components"][2], component("region", "VA"));
    assert_eq!(grace["titles"], json!([{"name": "Rear Admiral", "kind": "title"}]));
}

#[test]
fn google_contacts_legacy_format() {
    let (_, mappings, rows) = import(&fixture("google-legacy.csv"));
    assert_eq!(mapped(&mappings, "Name"), ("full_name", 0));
    assert_eq!(mapped(&mappings, "Given Name"), ("firstname", 0));
    assert_eq!(mapped(&mappings, "Additional Name"), ("middle_name", 0));
    assert_eq!(mapped(&mappings, "Family Name"), ("lastname", 0));
    assert_eq!(mapped(&mappings, "Group Membership"), ("tags", 0));
    assert_eq!(mapped(&mappings, "E-mail 2 - Type"), ("email_label", 2));
    assert_eq!(mapped(&mappings, "Phone 2 - Value"), ("phone", 2));
    assert_eq!(mapped(&mappings, "Organization 1 - Name"), ("organization", 0));
    assert_eq!(mapped(&mappings, "Organization 1 - Title"), ("job_title", 0));
    assert_eq!(mapped(&mappings, "Organization 1 - Department"), ("department", 0));
    assert_eq!(mapped(&mappings, "Organization 1 - Yomi Name"), ("", 0));
    assert_eq!(mapped(&mappings, "Website 1 - Type"), ("url_label", 1));
    assert_eq!(mapped(&mappings, "Gender"), ("gender", 0));
    assert_eq!(mapped(&mappings, "Yomi Name"), ("", 0));

    let alan = card(&rows[0]);
    assert_eq!(alan["name"]["full"], json!("Alan Turing"));
    assert_eq!(alan["name"]["components"][1], component("given2", "Mathison"));
    assert_eq!(alan["name"]["components"][3], component("credential", "OBE"));
    assert_eq!(
        alan["emails"],
        json!([{"address": "alan@bletchley.example", "contexts": ["work"], "pref": 1},
            {"address": "turing@bletchley.example", "contexts": ["work"]},
            {"address": "alan@home.example", "contexts": ["private"]}]),
        "one label for several values applies to each; the star marks only the first"
    );
    assert_eq!(
        alan["phones"],
        json!([{"number": "+44 1908 640404", "features": ["mobile"]},
            {"number": "+44 1908 000000", "contexts": ["private"]}])
    );
    assert_eq!(
        alan["organizations"],
        json!([{"name": "Government Code and Cypher School", "units": [{"name": "Hut 8"}]}])
    );
    assert_eq!(alan["titles"], json!([{"name": "Cryptanalyst", "kind": "title"}]));
    assert_eq!(alan["keywords"], json!(["Bletchley"]));
    assert_eq!(alan["addresses"][0]["components"][0], component("name", "The Mansion"));
    assert_eq!(alan["addresses"][0]["contexts"], json!(["work"]));
    assert_eq!(
        alan["links"],
        json!([{"uri": "https://turing.example", "contexts": ["private"], "label": "Home Page"}])
    );
    assert_eq!(record(&rows[0]).gender, "male");

    let joan = card(&rows[1]);
    assert_eq!(joan["name"], json!({"full": "Joan Clarke"}), "a full name alone is a name");
    assert_eq!(joan["emails"], json!([{"address": "joan@bletchley.example", "pref": 1}]));
    assert_eq!(joan["anniversaries"][0]["date"]["partial"], json!({"month": 6, "day": 24}));
    assert_eq!(record(&rows[1]).gender, "female");
}

#[test]
fn outlook_utf8_with_bom() {
    let bytes = fixture("outlook.csv");
    assert!(bytes.starts_with(&[0xEF, 0xBB, 0xBF]), "the fixture carries a BOM");
    let (table, mappings, rows) = import(&bytes);
    assert_eq!(table.headers[0], "Title", "the BOM is not part of the first header");
    assert_eq!(mapped(&mappings, "Title"), ("prefix", 0), "Outlook's Title is the name prefix");
    assert_eq!(mapped(&mappings, "Job Title"), ("job_title", 0));
    assert_eq!(mapped(&mappings, "Company"), ("organization", 0));
    assert_eq!(mapped(&mappings, "E-mail Address"), ("email", 1));
    assert_eq!(mapped(&mappings, "E-mail 2 Address"), ("email", 2));
    assert_eq!(mapped(&mappings, "E-mail 3 Address"), ("email", 3));
    assert_eq!(mapped(&mappings, "E-mail Type").0, "", "SMTP is not a label");
    assert_eq!(mapped(&mappings, "E-mail Display Name").0, "");
    assert_eq!(mapped(&mappings, "Categories").0, "tags");
    assert_eq!(mapped(&mappings, "Web Page").0, "url");
    assert_eq!(mapped(&mappings, "Initials").0, "");
    let business = mapped(&mappings, "Business Street").1;
    for h in ["Business Street 2", "Business City", "Business State", "Business Postal Code", "Business Country/Region"]
    {
        assert_eq!(mapped(&mappings, h).1, business, "{h}");
    }
    let home = mapped(&mappings, "Home Street").1;
    assert_ne!(home, business);
    assert_eq!(mapped(&mappings, "Home Postal Code"), ("address_postal", home));
    let phone_groups: std::collections::BTreeSet<u32> =
        mappings.iter().filter(|m| m.contact_field == "phone").map(|m| m.group).collect();
    assert_eq!(phone_groups.len(), mappings.iter().filter(|m| m.contact_field == "phone").count(), "a group each");

    let m = card(&rows[0]);
    assert_eq!(
        m["name"],
        json!({"components": [component("title", "Ms."), component("given", "Margaret"), component("given2", "H."),
            component("surname", "Hamilton")], "full": "Ms. Margaret H. Hamilton"})
    );
    assert_eq!(m["organizations"], json!([{"name": "MIT Instrumentation Lab", "units": [{"name": "Software"}]}]));
    assert_eq!(m["titles"], json!([{"name": "Director", "kind": "title"}]));
    assert_eq!(
        m["phones"],
        json!([{"number": "+1 617 555 0199", "contexts": ["work"], "features": ["fax"]},
            {"number": "+1 617 555 0100", "contexts": ["work"]},
            {"number": "+1 617 555 0142", "contexts": ["private"]},
            {"number": "+1 617 555 0123", "features": ["mobile"]}]),
        "labels implied by Business Fax, Business Phone, Home Phone, Mobile Phone"
    );
    assert_eq!(m["emails"], json!([{"address": "margaret@mit.example"}, {"address": "mh@home.example"}]));
    assert_eq!(
        m["addresses"],
        json!([
            {"components": [component("name", "75 Cambridge Pkwy\nBuilding 2"), component("locality", "Cambridge"),
                component("region", "MA"), component("postcode", "02142"),
                component("country", "United States of America")],
             "contexts": ["work"]},
            {"components": [component("name", "1 Elm St"), component("locality", "Boston"), component("region", "MA"),
                component("postcode", "02108"), component("country", "USA")], "contexts": ["private"]}
        ])
    );
    assert_eq!(
        m["anniversaries"],
        json!([{"kind": "birth", "date": {"partial": {"year": 1936, "month": 8, "day": 17}}}]),
        "0/0/00 is no anniversary"
    );
    assert_eq!(m["keywords"], json!(["Apollo", "Friends"]));
    assert_eq!(m["nicknames"], json!([{"name": "Maggie"}]));
    assert_eq!(m["notes"], json!([{"note": "Wrote the on-board flight software."}]));
    assert_eq!(m["links"], json!([{"uri": "https://hamilton.example"}]));
    assert_eq!(record(&rows[0]).gender, "female");

    let parc = &rows[1];
    assert!(parc.validation_errors.is_empty(), "{parc:?}");
    assert_eq!(card(parc)["name"], json!({"full": "Xerox PARC"}), "the organization names a nameless row");
    assert!(parc.diagnostics.iter().any(|d| d.contains("organization")), "{:?}", parc.diagnostics);
    assert_eq!(record(parc).gender, "", "Unspecified is no gender");
    assert_eq!(card(parc)["anniversaries"][0]["date"]["partial"], json!({"year": 1970, "month": 1, "day": 1}));
}

#[test]
fn outlook_windows_1252() {
    let bytes = fixture("outlook-1252.csv");
    assert!(std::str::from_utf8(&bytes).is_err(), "the fixture really is Windows-1252");
    let (_, mappings, rows) = import(&bytes);
    assert_eq!(mapped(&mappings, "Mobile Phone").0, "phone");
    assert_eq!(implied_label("Mobile Phone"), Some("mobile"));
    let jose = card(&rows[0]);
    assert_eq!(jose["name"]["full"], json!("José Núñez"));
    assert_eq!(jose["phones"], json!([{"number": "+34 600 000 000", "features": ["mobile"]}]));
    assert_eq!(
        jose["addresses"],
        json!([{"components": [component("locality", "Málaga"), component("country", "España")],
            "contexts": ["private"]}])
    );
    assert_eq!(jose["anniversaries"][0]["date"]["partial"], json!({"year": 1980, "month": 3, "day": 7}), "US order");
    assert_eq!(jose["keywords"], json!(["Família"]));
    assert_eq!(card(&rows[1])["name"]["components"][0], component("given", "Zoë"));
    assert_eq!(card(&rows[1])["addresses"][0]["components"][0], component("locality", "Besançon"));
}

#[test]
fn apple_style_semicolons() {
    let (table, mappings, rows) = import(&fixture("apple-ish.csv"));
    assert_eq!(table.headers.len(), 21, "semicolon-delimited");
    assert_eq!(mapped(&mappings, "Email (home)").0, "email");
    assert_eq!(mapped(&mappings, "Phone (mobile)").0, "phone");
    assert_eq!(mapped(&mappings, "Job title").0, "job_title");
    assert_eq!(mapped(&mappings, "Groups").0, "circles");
    assert_eq!(mapped(&mappings, "Tags").0, "tags");
    assert_eq!(mapped(&mappings, "Note").0, "notes");
    assert_eq!(mapped(&mappings, "ZIP (home)"), ("address_postal", mapped(&mappings, "Street (home)").1));
    assert_ne!(mapped(&mappings, "Street (home)").1, mapped(&mappings, "Street (work)").1);
    assert_ne!(mapped(&mappings, "Email (home)").1, mapped(&mappings, "Email (work)").1);

    let k = card(&rows[0]);
    assert_eq!(k["name"]["full"], json!("Käthe Kollwitz"));
    assert_eq!(k["emails"], json!([{"address": "kaethe@example.de", "contexts": ["private"]}]));
    assert_eq!(
        k["phones"],
        json!([{"number": "+49 30 1234567", "features": ["mobile"]},
            {"number": "+49 30 7654321", "contexts": ["work"]}])
    );
    assert_eq!(k["addresses"][0]["components"][0], component("name", "Kollwitzstraße 56"));
    assert_eq!(k["addresses"][0]["contexts"], json!(["private"]));
    assert_eq!(k["addresses"][1]["components"][0], component("name", "Hanseatenweg 10"));
    assert_eq!(k["addresses"][1]["contexts"], json!(["work"]));
    assert_eq!(k["anniversaries"][0]["date"]["partial"], json!({"year": 1867, "month": 7, "day": 8}), "DD.MM.YYYY");
    assert_eq!(k["keywords"], json!(["Kunst", "Grafik"]));
    assert_eq!(k["notes"], json!([{"note": "Notizen mit \"Anführungszeichen\"; und Semikolon"}]));
    assert_eq!(k["organizations"], json!([{"name": "Akademie der Künste"}]));
    assert_eq!(record(&rows[0]).crm, json!({"circles": ["Familie"]}).as_object().cloned().unwrap_or_default());
    let a = card(&rows[1]);
    assert_eq!(a["emails"], json!([{"address": "albert@ias.example", "contexts": ["work"]}]));
    assert_eq!(a["anniversaries"][0]["date"]["partial"], json!({"year": 1879, "month": 3, "day": 14}));
}

#[test]
fn generic_headers_and_our_export_headers_are_recognised() {
    let headers: Vec<String> = [
        "First name",
        "Last name",
        "Email",
        "Phone",
        "Mobile",
        "Company",
        "Address",
        "City",
        "Zip",
        "Country",
        "Birthday",
        "Tags",
        "Groups",
        "Notes",
        "Title",
        "Website",
        "Full Name",
        "how_we_met",
    ]
    .map(String::from)
    .to_vec();
    let m = suggest_mappings(&headers);
    let fields: Vec<&str> = m.iter().map(|m| m.contact_field.as_str()).collect();
    assert_eq!(
        fields,
        [
            "firstname",
            "lastname",
            "email",
            "phone",
            "phone",
            "organization",
            "address_street",
            "address_city",
            "address_postal",
            "address_country",
            "birthday",
            "tags",
            "circles",
            "notes",
            "job_title",
            "url",
            "full_name",
            "how_we_met"
        ]
    );
    assert_ne!(m[3].group, m[4].group, "Phone and Mobile are two entries");
    assert!(m[6..10].iter().all(|x| x.group == m[6].group), "Address, City, Zip, Country are one address");

    let ours: Vec<String> = EXPORT_HEADERS.iter().map(|h| h.to_string()).collect();
    let m = suggest_mappings(&ours);
    assert!(m.iter().all(|m| FIELDS.contains(&m.contact_field.as_str())), "{m:?}");
    assert_eq!(mapped(&m, "email 2"), ("email", 2));
    assert_eq!(mapped(&m, "email 2 label"), ("email_label", 2));
    assert_eq!(mapped(&m, "address 2 postal"), ("address_postal", 2));
    assert_eq!(mapped(&m, "impp 1 label"), ("impp_label", 1));
    assert_eq!(mapped(&m, "full_name"), ("full_name", 0));
    // Every plain field name maps to itself.
    let identity = suggest_mappings(&FIELDS.iter().map(|f| f.to_string()).collect::<Vec<_>>());
    assert!(identity.iter().all(|m| m.csv_column == m.contact_field), "{identity:?}");
}

#[test]
fn implied_labels_come_from_header_names() {
    for (header, label) in [
        ("Business Phone", Some("work")),
        ("Business Phone 2", Some("work")),
        ("Mobile Phone", Some("mobile")),
        ("Home Street", Some("home")),
        ("Business Fax", Some("work fax")),
        ("Phone (mobile)", Some("mobile")),
        ("Email (work)", Some("work")),
        ("Personal Web Page", Some("home")),
        ("TTY/TDD Phone", Some("textphone")),
        ("Other Phone", None),
        ("Email", None),
        ("First Name", None),
    ] {
        assert_eq!(implied_label(header), label, "{header}");
    }
}

#[test]
fn decoding_finds_the_encoding() {
    assert_eq!(decode(b"\xEF\xBB\xBFName\n"), "Name\n");
    assert_eq!(decode("Zoë".as_bytes()), "Zoë");
    assert_eq!(decode(b"Jos\xe9 \x80"), "José €");
    let utf16le: Vec<u8> = [0xFF, 0xFE].into_iter().chain("Zoë,1".encode_utf16().flat_map(u16::to_le_bytes)).collect();
    assert_eq!(decode(&utf16le), "Zoë,1");
    let utf16be: Vec<u8> = [0xFE, 0xFF].into_iter().chain("Zoë,1".encode_utf16().flat_map(u16::to_be_bytes)).collect();
    assert_eq!(decode(&utf16be), "Zoë,1");
    let bomless: Vec<u8> = "Name,Zoë".encode_utf16().flat_map(u16::to_le_bytes).collect();
    assert_eq!(decode(&bomless), "Name,Zoë");
    assert_eq!(decode(b""), "");
}

#[test]
fn tables_handle_quotes_lines_delimiters_and_ragged_rows() {
    let t =
        read_table("Name,Notes\r\nAnn,\"first\r\nsecond\"\r\n\r\nBob,\"He said \"\"hi\"\", left\"\r\n").expect("table");
    assert_eq!(t.headers, ["Name", "Notes"]);
    assert_eq!(t.rows, [["Ann", "first\r\nsecond"], ["Bob", "He said \"hi\", left"]]);
    assert_eq!(t.row_lines, [2, 5], "Bob starts after Ann's two lines and an empty line");

    let t = read_table("\n\n  Name ; Note \nAnn;a, b\n;\nBob;c").expect("table");
    assert_eq!(t.headers, ["Name", "Note"], "semicolons, trimmed headers, leading empty lines");
    assert_eq!(t.rows, [["Ann", "a, b"], ["Bob", "c"]], "a row of empty cells is skipped");
    assert_eq!(t.row_lines, [4, 6]);

    let t = read_table("Name\tEmail\nAnn\tann@example.org\n").expect("table");
    assert_eq!(t.rows, [["Ann", "ann@example.org"]]);

    let t = read_table("a,b,c\n1\n1,2,3,4\n").expect("table");
    assert_eq!(t.rows, [["1", "", ""], ["1", "2", "3"]], "padded and truncated to the header");

    assert_eq!(read_table("Name,Email\n").map(|t| t.rows.len()), Ok(0));
    assert_eq!(read_table("").map_err(|e| e.reason), Err("the file is empty".to_string()));
    assert_eq!(read_table(" \r\n\n").map_err(|e| e.line), Err(1));
    let headless = read_table(",,\n1,2,3\n").expect_err("no header names");
    assert!(headless.reason.contains("header"), "{headless}");
    let unclosed = read_table("a,b\n1,\"oops\n2,3\n").expect_err("unclosed quote");
    assert_eq!(unclosed.line, 2);
    assert!(unclosed.to_string().starts_with("line 2: "), "{unclosed}");
}

#[test]
fn bad_dates_are_reported_per_row_and_the_row_is_kept() {
    let rows =
        apply("First Name,Birthday,Anniversary\nAnn,31/31/2020,2001-02-03\nBob,1990-02-30,\nCid,--06-15,0/0/00\n");
    assert_eq!(rows.len(), 3);
    assert_eq!(rows[0].validation_errors.len(), 1);
    assert!(rows[0].validation_errors[0].starts_with("birthday: cannot read \"31/31/2020\""), "{:?}", rows[0]);
    assert_eq!(
        card(&rows[0])["anniversaries"],
        json!([{"kind": "wedding", "date": {"partial": {"year": 2001, "month": 2, "day": 3}}}]),
        "the bad birthday is dropped, the row kept"
    );
    assert!(rows[1].validation_errors[0].contains("\"1990-02-30\""), "{:?}", rows[1]);
    assert_eq!(rows[1].line, 3);
    assert!(rows[2].validation_errors.is_empty());
    assert_eq!(card(&rows[2])["anniversaries"][0]["date"]["partial"], json!({"month": 6, "day": 15}));

    let rows = apply("First Name,Birthday\nAnn,25/12/1990\nBob,03/04/1985\n");
    assert_eq!(
        card(&rows[1])["anniversaries"][0]["date"]["partial"],
        json!({"year": 1985, "month": 4, "day": 3}),
        "a column with 25/12 is day-first"
    );
}

#[test]
fn a_row_without_any_name_is_named_after_what_it_has() {
    let rows = apply(
        "First Name,Last Name,Email,Company,Phone\nAnn,Lee,ann@example.org,,\n,,,,+1 555 0100\n\
         ,,carol.king@example.org,,\n,,,Acme,\n,Lee,,,\n",
    );
    assert_eq!(rows.len(), 5);
    assert_eq!(card(&rows[1])["name"], json!({"full": "+1 555 0100"}), "a phone alone names the card");
    assert_eq!(rows[1].line, 3);
    assert_eq!(card(&rows[0])["name"]["full"], json!("Ann Lee"));
    assert_eq!(card(&rows[2])["name"], json!({"full": "carol.king@example.org"}), "the email address");
    assert!(rows[2].diagnostics.iter().any(|d| d.contains("email")));
    assert_eq!(card(&rows[3])["name"], json!({"full": "Acme"}));
    assert_eq!(card(&rows[4])["name"]["full"], json!("Lee"), "a surname alone names the person");
    assert!(rows.iter().filter(|r| r.record.is_some()).all(|r| r.validation_errors.is_empty()));
}

#[test]
fn mappings_are_checked_and_chosen_mappings_are_followed() {
    let headers: Vec<String> = ["Name", "Mail", "Other"].map(String::from).to_vec();
    let m = |c: &str, f: &str, g| ColumnMapping { csv_column: c.into(), contact_field: f.into(), group: g };
    assert_eq!(check_mappings(&headers, &[m("Name", "firstname", 0), m("Other", "", 0)]), Ok(()));
    let (field, reason) =
        check_mappings(&headers, &[m("Name", "firstname", 0), m("Mail", "e-mail", 0)]).expect_err("field");
    assert_eq!(field, "mappings[1].contact_field");
    assert!(reason.contains("e-mail"), "{reason}");
    let (field, _) = check_mappings(&headers, &[m("Phone", "phone", 0)]).expect_err("column");
    assert_eq!(field, "mappings[0].csv_column");

    // Wire names and defaults.
    let parsed: ColumnMapping = serde_json::from_str(r#"{"csv_column":"Mail"}"#).expect("parses");
    assert_eq!(parsed, m("Mail", "", 0));
    assert_eq!(
        serde_json::to_value(m("Mail", "email", 2)).expect("serialises"),
        json!({"csv_column": "Mail", "contact_field": "email", "group": 2})
    );

    // Two email columns in one group are two emails sharing the group's label; duplicate
    // header names map one to one.
    let table = read_table("Name,Mail,Mail,Kind\nAnn,a@example.org,b@example.org,Work\n").expect("table");
    let rows = mycorrhizal_codecs::csv::apply_mappings(
        &table,
        &[m("Name", "firstname", 0), m("Mail", "email", 0), m("Mail", "email", 0), m("Kind", "email_label", 0)],
    );
    assert_eq!(
        card(&rows[0])["emails"],
        json!([{"address": "a@example.org", "contexts": ["work"]}, {"address": "b@example.org", "contexts": ["work"]}])
    );
    // A second value for a single field is reported, not silently merged.
    let rows = mycorrhizal_codecs::csv::apply_mappings(&table, &[m("Name", "firstname", 0), m("Kind", "firstname", 0)]);
    assert_eq!(card(&rows[0])["name"]["full"], json!("Ann"));
    assert!(rows[0].diagnostics.iter().any(|d| d.contains("Work")), "{:?}", rows[0].diagnostics);
}

#[test]
fn cells_are_neutralised_and_quoted() {
    assert_eq!(neutralise("=SUM(A1:A9)"), "'=SUM(A1:A9)");
    for (cell, out) in [("+1 555", "'+1 555"), ("-2", "'-2"), ("@me", "'@me"), ("\tx", "'\tx"), ("\rx", "'\rx")] {
        assert_eq!(neutralise(cell), out);
    }
    assert_eq!(neutralise("plain"), "plain");
    assert!(matches!(neutralise("Ada"), std::borrow::Cow::Borrowed(_)));

    let mut w = CsvWriter::buffer();
    w.write_row(&["=HYPERLINK(\"x\")", "a,b", "say \"hi\"", "line\nbreak", "+1 555", "plain", ""]).expect("written");
    w.write_row(&["x"]).expect("written");
    let bytes = w.finish().expect("finished");
    assert_eq!(
        String::from_utf8(bytes).expect("utf-8"),
        "\"'=HYPERLINK(\"\"x\"\")\",\"a,b\",\"say \"\"hi\"\"\",\"line\nbreak\",'+1 555,plain,\r\nx\r\n"
    );

    // Into any writer.
    let mut out = Vec::new();
    let mut w = CsvWriter::new(&mut out);
    w.write_row(&["@a", "b"]).expect("written");
    w.finish().expect("finished");
    assert_eq!(out, b"'@a,b\r\n");
}

fn rec(value: Value) -> NeutralRecord {
    serde_json::from_value(value).expect("a record")
}

/// Records in the shape the reader produces, so a round trip must give them back exactly.
fn varied_records() -> Vec<NeutralRecord> {
    vec![
        rec(json!({
            "gender": "female",
            "card": {
                "name": {"components": [{"kind": "title", "value": "Dr."}, {"kind": "given", "value": "Ada"},
                    {"kind": "given2", "value": "Augusta"}, {"kind": "surname", "value": "Lovelace"},
                    {"kind": "credential", "value": "PhD"}], "full": "Ada King, Countess of Lovelace"},
                "nicknames": [{"name": "Ada"}, {"name": "=Enchantress"}],
                "organizations": [{"name": "Analytical, Engines", "units": [{"name": "Research"}]}],
                "titles": [{"name": "Mathematician", "kind": "title"}, {"name": "Poet", "kind": "role"}],
                "emails": [{"address": "ada@example.org", "contexts": ["private"]},
                    {"address": "ada@engines.example", "contexts": ["work"], "pref": 1},
                    {"address": "countess@example.org", "label": "Court"},
                    {"address": "a4@example.org"}, {"address": "a5@example.org", "contexts": ["work"]}],
                "phones": [{"number": "+44 20 7946 0001", "features": ["mobile"]},
                    {"number": "+44 20 7946 0099", "contexts": ["work"], "features": ["fax"]},
                    {"number": "020 7946 0002", "features": ["voice"], "label": "Google Voice", "pref": 1},
                    {"number": "-7946", "contexts": ["private"]}],
                "addresses": [
                    {"components": [{"kind": "name", "value": "12 St James's Square\nFlat 2"},
                        {"kind": "locality", "value": "London"}, {"kind": "postcode", "value": "SW1Y 4JH"},
                        {"kind": "country", "value": "United Kingdom"}], "contexts": ["private"]},
                    {"components": [{"kind": "name", "value": "1 Engine Row"}, {"kind": "region", "value": "Surrey"}],
                        "contexts": ["work"]},
                    {"components": [{"kind": "locality", "value": "Ockham"}]}],
                "anniversaries": [{"kind": "birth", "date": {"partial": {"year": 1815, "month": 12, "day": 10}}},
                    {"kind": "wedding", "date": {"partial": {"year": 1835, "month": 7}}}],
                "keywords": ["Friends", "-science", "Poetry"],
                "notes": [{"note": "=cmd|' /C calc'!A0\nMet at the \"salon\";\n\nPrefers letters."}],
                "links": [{"uri": "https://ada.example.org", "label": "Blog"},
                    {"uri": "https://work.example", "contexts": ["work"]},
                    {"uri": "https://third.example", "pref": 1}],
                "imppAddresses": [{"uri": "xmpp:ada@example.org"}, {"uri": "sip:ada@example.org", "contexts": ["work"]}]
            },
            "crm": {"circles": ["Family", "Science"], "how_we_met": "At the \"Babbage\" salon, 1833",
                "work_information": "Notes on the engine\nSketch of the engine",
                "contact_information": "@ada on the old network"}
        })),
        rec(json!({"card": {"name": {"components": [{"kind": "given", "value": "Solo"}], "full": "Solo"}}})),
        rec(json!({"card": {"name": {"full": "Acme Widgets"}, "organizations": [{"units": [{"name": "Sales"}]}],
            "anniversaries": [{"kind": "birth", "date": {"partial": {"month": 2, "day": 29}}}],
            "phones": [{"number": "+1 555 0100", "contexts": ["work"]}]}})),
        rec(json!({"gender": "nonbinary", "card": {"name": {"components": [{"kind": "given", "value": "José"},
            {"kind": "surname", "value": "Núñez"}], "full": "José Núñez"},
            "emails": [{"address": "jose@example.es"}],
            "anniversaries": [{"kind": "birth", "date": {"partial": {"year": 1980}}}]},
            "crm": {"circles": ["Amigos"]}})),
    ]
}

#[test]
fn the_export_reads_back_to_equal_records() {
    let records = varied_records();
    for record in &records {
        assert_eq!(export_row(record).len(), EXPORT_HEADERS.len());
        assert_eq!(record.card.validate(), Ok(()));
    }
    let bytes = export(&records);
    let text = String::from_utf8(bytes.clone()).expect("utf-8");
    assert!(text.starts_with("firstname,lastname,middle_name,"), "{text}");
    assert!(text.contains("'=Enchantress") || text.contains("::: =Enchantress"), "nickname cell written");
    assert!(text.contains("\"'=cmd|"), "the note is neutralised");

    let (table, mappings, rows) = import(&bytes);
    assert_eq!(table.headers, EXPORT_HEADERS);
    assert!(mappings.iter().all(|m| !m.contact_field.is_empty()), "every export column is recognised");
    assert_eq!(rows.len(), records.len());
    for (row, original) in rows.iter().zip(&records) {
        assert!(row.validation_errors.is_empty() && row.diagnostics.is_empty(), "{row:?}");
        let back = record(row);
        assert_eq!(serde_json::to_value(&back.card).ok(), serde_json::to_value(&original.card).ok());
        assert_eq!(back.crm, original.crm);
        assert_eq!(back.gender, original.gender);
        assert_eq!(back, original);
    }
    // Exporting what was read gives the same bytes.
    let again: Vec<NeutralRecord> = rows.iter().map(|r| record(r).clone()).collect();
    assert_eq!(export(&again), bytes);
}

#[test]
fn cards_from_elsewhere_export_their_flat_members() {
    // A card as a vCard import might produce: uid, pref 2, no name.full, an address given as
    // one line. The CSV keeps what its columns hold.
    let original =
        rec(json!({"card": {"uid": "urn:uuid:1", "name": {"components": [{"kind": "given", "value": "Grace"},
        {"kind": "surname", "value": "Hopper"}]}, "emails": [{"address": "grace@example.org", "pref": 2}],
        "addresses": [{"full": "Pentagon, Arlington VA"}], "notes": [{"note": "one"}, {"note": "two"}]}}));
    let (_, _, rows) = import(&export(std::slice::from_ref(&original)));
    let back = card(&rows[0]);
    assert_eq!(back["name"]["full"], json!("Grace Hopper"));
    assert_eq!(back["emails"], json!([{"address": "grace@example.org"}]));
    assert_eq!(back["addresses"], json!([{"components": [component("name", "Pentagon, Arlington VA")]}]));
    assert_eq!(back["notes"], json!([{"note": "one\n\ntwo"}]), "notes are joined with a blank line");
    assert_eq!(back.get("uid"), None);
}

/// A deterministic generator of awkward inputs: quotes, delimiters, line ends, labels, dates,
/// non-ASCII and invalid bytes. Nothing may panic, and the table invariants must hold.
#[test]
fn no_input_makes_it_panic() {
    let alphabet: &[&[u8]] = &[
        b"\"",
        b",",
        b";",
        b"\t",
        b"\n",
        b"\r\n",
        b"\r",
        b"a",
        b"Z",
        b"1",
        b"0",
        b"/",
        b"-",
        b".",
        b" ::: ",
        b"*",
        b"@",
        b"=",
        b"'",
        b" ",
        b"\xe9",
        b"\xff",
        b"\xef\xbb\xbf",
        b"\x00",
        "ß".as_bytes(),
        b"--",
        b"12",
        b"31",
        b"2020",
        b"First Name",
        b"E-mail 1 - Value",
        b"Phone 1 - Label",
        b"Birthday",
        b"Labels",
        b"Home Street",
    ];
    let mut seed: u64 = 0x9E37_79B9_7F4A_7C15;
    let mut next = move || {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        seed
    };
    for _ in 0..1000 {
        let len = (next() % 60) as usize;
        let bytes: Vec<u8> =
            (0..len).flat_map(|_| alphabet[(next() % alphabet.len() as u64) as usize].iter().copied()).collect();
        let text = decode(&bytes);
        let Ok(table) = read_table(&text) else { continue };
        assert_eq!(table.rows.len(), table.row_lines.len());
        assert!(table.rows.iter().all(|r| r.len() == table.headers.len()));
        assert!(table.row_lines.windows(2).all(|w| w[0] < w[1]), "{:?} {text:?}", table.row_lines);
        let mut mappings = suggest_mappings(&table.headers);
        assert_eq!(check_mappings(&table.headers, &mappings), Ok(()));
        for m in &mut mappings {
            m.contact_field = FIELDS[(next() % FIELDS.len() as u64) as usize].to_string();
            m.group = (next() % 3) as u32;
        }
        let rows = mycorrhizal_codecs::csv::apply_mappings(&table, &mappings);
        assert_eq!(rows.len(), table.rows.len());
        let records: Vec<NeutralRecord> = rows.into_iter().filter_map(|r| r.record).collect();
        for r in &records {
            assert_eq!(r.card.validate(), Ok(()));
        }
        let exported = export(&records);
        let (_, _, again) = import(&exported);
        assert_eq!(again.len(), records.len());
    }
}
