//! The derived-column rebuild repairs projections written by an older build.

use mycorrhizal::crm::contact::Contact;
use mycorrhizal_engine::{Invalid, Kind, Precondition, Record, UserId};
use serde::{Deserialize, Serialize};
use serde_json::json;

use crate::sessions::in_process;

/// The same stored row as a contact, but written without the save hook: how a row from an
/// older build, whose projection rules differed, looks to this one.
#[derive(Clone, Serialize, Deserialize)]
#[serde(transparent)]
struct OldBuildContact(Contact);

impl Record for OldBuildContact {
    const KIND: Kind = Contact::KIND;

    fn validate(&self) -> Result<(), Invalid> {
        Ok(())
    }

    fn index_entries(&self) -> Vec<(&'static str, String)> {
        self.0.index_entries()
    }
}

#[tokio::test]
async fn rebuild_derived_repairs_stale_projections_once() {
    let app = in_process(&[]).await;
    let cookie = app.signed_in().await;
    let (_, created, _) = app
        .call("POST", "/api/v1/contacts", Some(&cookie), json!({ "firstname": "Ada", "lastname": "Lovelace" }))
        .await;
    let id = created["contact"]["id"].as_u64().unwrap();
    let scope = app.state.engine.user(UserId(1));
    let mut stale = scope.get::<Contact>(id).unwrap().body;
    stale.flat.firstname = "Stale".into();
    stale.flat.sort_name = "zzz".into();
    let old = OldBuildContact(stale);
    scope.write_async(move |tx| tx.put(id, Precondition::Any, old.clone())).await.unwrap();
    assert_eq!(scope.get::<Contact>(id).unwrap().body.flat.firstname, "Stale");

    let (status, report, _) =
        app.call("POST", "/api/v1/admin/contacts/rebuild-derived", Some(&cookie), json!({})).await;
    assert_eq!(status, 200, "{report}");
    assert_eq!((report["contacts_scanned"].as_u64(), report["contacts_updated"].as_u64()), (Some(1), Some(1)));
    let repaired = scope.get::<Contact>(id).unwrap().body;
    assert_eq!((repaired.flat.firstname.as_str(), repaired.flat.sort_name.as_str()), ("Ada", "lovelace ada"));
    let found = scope.find::<Contact>("sort_name", "lovelace ada").unwrap();
    assert_eq!(found, [id], "the index follows the repaired projection");
    let (_, again, _) = app.call("POST", "/api/v1/admin/contacts/rebuild-derived", Some(&cookie), json!({})).await;
    assert_eq!(again["contacts_updated"], 0, "idempotent");
}

/// A restore of a backup of this build's schema checks the derived columns as it reads the
/// backup's rows (instead of a pass over the restored database): it must find exactly the rows the
/// full pass finds, rewrite them, and count the same live contacts.
#[tokio::test]
async fn a_restore_finds_and_repairs_the_stale_projections_the_full_pass_finds() {
    use mycorrhizal::crm::contact::ops::derived_stale;

    let app = in_process(&[]).await;
    let cookie = app.signed_in().await;
    let mut ids = Vec::new();
    for (first, last) in [("Ada", "Lovelace"), ("Grace", "Hopper"), ("Alan", "Turing"), ("Edsger", "Dijkstra")] {
        let (_, created, _) =
            app.call("POST", "/api/v1/contacts", Some(&cookie), json!({ "firstname": first, "lastname": last })).await;
        ids.push(created["contact"]["id"].as_u64().expect("id"));
    }
    let scope = app.state.engine.user(UserId(1));
    // Two rows as an older build left them; one contact deleted (a tombstone is not scanned).
    for &id in &ids[1..3] {
        let mut stale = scope.get::<Contact>(id).expect("contact").body;
        stale.flat.sort_name = "zzz".into();
        let old = OldBuildContact(stale);
        scope.write_async(move |tx| tx.put(id, Precondition::Any, old.clone())).await.expect("stale write");
    }
    let (status, _, _) = app.call("DELETE", &format!("/api/v1/contacts/{}", ids[3]), Some(&cookie), json!({})).await;
    assert!(status < 300, "delete: {status}");
    // What the full pass over the source would find.
    let live = scope.list::<Contact>().expect("list");
    let expected: Vec<u64> = live.iter().filter(|r| derived_stale(&r.body)).map(|r| r.id).collect();
    assert_eq!((live.len(), expected.as_slice()), (3, &ids[1..3]));

    let signer = mycorrhizal::backup::Signer::from_config(&app.state.config).expect("signer");
    let out = tempfile::tempdir().expect("tempdir");
    let made = mycorrhizal::backup::create(&app.state.engine, out.path(), &signer, &mut |_| {}).expect("backup");
    let target = tempfile::tempdir().expect("tempdir");
    let mut config = (*app.state.config).clone();
    config.data_dir = target.path().to_path_buf();
    let done = mycorrhizal::restore::run(&config, &made.path).await.expect("restore");
    assert_eq!((done.contacts_scanned, done.contacts_updated), (3, 2), "{:?}", done.steps);
    assert!(
        done.steps.iter().any(|(step, _)| *step == "search rows fed"),
        "checked on the index's pass: {:?}",
        done.steps
    );
    assert_eq!(done.search_documents, 3);

    let options = mycorrhizal_engine::Options { migrations: mycorrhizal::crm::migrations(), ..Default::default() };
    let (restored, _) = mycorrhizal_engine::Engine::open(config.database_path(), options).expect("open restored");
    let scope = restored.user(UserId(1));
    let rows = scope.list::<Contact>().expect("list");
    assert_eq!(rows.len(), 3);
    assert!(rows.iter().all(|r| !derived_stale(&r.body)), "every projection repaired");
    assert_eq!(scope.get::<Contact>(ids[1]).expect("contact").body.flat.sort_name, "hopper grace");
    assert_eq!(scope.find::<Contact>("sort_name", "turing alan").expect("find"), [ids[2]], "the index follows");
    restored.shutdown();
}
