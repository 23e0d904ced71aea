//! The operations console's pages, as an admin's browser gets them without JavaScript: the
//! status page with its sections, the timeline filtered, the diagnostics, the buttons that run
//! a job now; a member gets 403. (The growth chart is drawn by a unit test of `web::console`.)

use super::Browser;
use crate::helpers::Instance;

#[tokio::test(flavor = "multi_thread")]
async fn an_admin_reads_the_console_pages_and_a_member_may_not() {
    let dir = tempfile::tempdir().unwrap();
    let server = Instance::new().with("BACKUP_DIR", &dir.path().display().to_string()).spawn();
    let ada = server.sign_up("ada").await;
    let bob = server.sign_up("bob").await;
    let admin = Browser::of(&server, &ada).await;

    let page = admin.get("/admin/status").await;
    assert_eq!(page.status(), 200);
    let text = page.text().await.unwrap();
    for heading in ["Operations", "Alerts", "Subsystems", "Scheduled jobs", "Storage"] {
        assert!(text.contains(&format!(">{heading}<")), "{heading} missing");
    }
    assert!(text.contains("backup_stale") && text.contains("storage_sample"), "conditions and jobs are listed");

    // A backup run from the page is a manual job run, and the timeline shows its event.
    let ran = admin.post("/admin/console/backup", &[]).await;
    assert_eq!((ran.status().as_u16(), ran.headers()["location"].to_str().unwrap()), (303, "/admin/status"));
    let events = admin.get("/admin/events?component=backup").await.text().await.unwrap();
    assert!(events.contains("backup_completed"), "the backup's event is listed");
    assert!(events.contains("1 of 1 events."), "{events}");
    let errors = admin.get("/admin/events?severity=error&window_hours=168").await.text().await.unwrap();
    assert!(errors.contains("0 of 0 events.") && errors.contains("No failure in this window."));

    assert_eq!(admin.post("/admin/console/evaluate", &[]).await.status(), 303);
    let alerts = ada.get("/api/v1/admin/alerts").await.json::<serde_json::Value>().await.unwrap();
    assert!(alerts["alerts"][0]["evaluated_at"].is_string(), "the page's button evaluated: {alerts}");
    let diagnostics = admin.get("/admin/diagnostics").await;
    assert_eq!(diagnostics.status(), 200);
    let checklist = diagnostics.text().await.unwrap();
    for check in ["config", "database", "backup", "background_jobs", "disk_space"] {
        assert!(checklist.contains(&format!(">{check}<")), "{check} missing");
    }

    let member = Browser::of(&server, &bob).await;
    for path in ["/admin/status", "/admin/events", "/admin/diagnostics"] {
        assert_eq!(member.get(path).await.status(), 403, "{path}");
    }
    assert_eq!(member.post("/admin/console/backup", &[]).await.status(), 403);
}
