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
