//! CalDAV on the wire: the calendar of dates (read-only, time ranges, sync), the subscription
//! feed, and two-way CalDAV, where a client's events edit, create and delete activities.

use reqwest::Method;
use serde_json::json;

use super::{Answer, Dav, account, etags, hrefs, sync_token};
use crate::helpers::Instance;

/// A sync-collection REPORT of `calendar` from `token` (empty: from the start), asking etags.
async fn sync(dav: &Dav, calendar: &str, token: &str) -> Answer {
    let body = format!(
        r#"<D:sync-collection xmlns:D="DAV:"><D:sync-token>{token}</D:sync-token><D:sync-level>1</D:sync-level><D:prop><D:getetag/></D:prop></D:sync-collection>"#
    );
    dav.send("REPORT", calendar, &[], &body).await
}

#[tokio::test(flavor = "multi_thread")]
async fn the_calendar_serves_dates_read_only_with_time_ranges_and_sync() {
    let server = Instance::new().with("CALDAV_ENABLED", "true").spawn();
    let (api, dav) = account(&server, "ada").await;
    let created: serde_json::Value = api
        .post("/api/v1/contacts", json!({ "card": { "name": { "full": "Leap Day" } }, "birthday": "--02-29" }))
        .await
        .json()
        .await
        .unwrap();
    let contact = created["contact"]["id"].as_u64().unwrap();
    let calendar = format!("/caldav/{}/calendar/", dav.id);
    let home = dav.propfind(&format!("/caldav/{}/", dav.id), "1", "<D:resourcetype/>").await;
    assert!(hrefs(&home.body).contains(&calendar), "{}", home.body);
    assert!(home.body.contains("<CAL:calendar/>"), "{}", home.body);
    let slash = dav.propfind("/", "0", "<D:current-user-principal/>").await;
    assert!(slash.body.contains(&format!("/caldav/{}/", dav.id)), "{}", slash.body);

    let event = format!("{calendar}birthday-{contact}.ics");
    let got = dav.send("GET", &event, &[], "").await;
    assert_eq!(got.status, 200);
    assert!(got.body.contains("RRULE:FREQ=YEARLY;BYYEARDAY=60"), "{}", got.body);
    assert!(got.body.contains("DTSTART;VALUE=DATE:20000229"), "{}", got.body);

    let query = |start: &str, end: &str| {
        format!(
            r#"<C:calendar-query xmlns:D="DAV:" xmlns:C="urn:ietf:params:xml:ns:caldav"><D:prop><D:getetag/></D:prop><C:filter><C:comp-filter name="VCALENDAR"><C:comp-filter name="VEVENT"><C:time-range start="{start}" end="{end}"/></C:comp-filter></C:comp-filter></C:filter></C:calendar-query>"#
        )
    };
    let march = dav.send("REPORT", &calendar, &[("Depth", "1")], &query("20270301T000000Z", "20270302T000000Z")).await;
    assert_eq!(hrefs(&march.body), vec![event.clone()], "{}", march.body);
    let february =
        dav.send("REPORT", &calendar, &[("Depth", "1")], &query("20270201T000000Z", "20270301T000000Z")).await;
    assert!(hrefs(&february.body).is_empty(), "{}", february.body);
    let bad = dav.send("REPORT", &calendar, &[], &query("yesterday", "20270301T000000Z")).await;
    assert_eq!(bad.status, 400);

    let refused =
        dav.send("PUT", &event, &[("Content-Type", "text/calendar")], "BEGIN:VCALENDAR\r\nEND:VCALENDAR\r\n").await;
    assert_eq!(refused.status, 403);
    assert!(refused.body.contains("<D:need-privileges/>"), "{}", refused.body);
    assert_eq!(dav.send("DELETE", &event, &[], "").await.status, 403);

    let first = sync(&dav, &calendar, "").await;
    assert_eq!(etags(&first.body).len(), 1, "{}", first.body);
    let deleted = api.request(Method::DELETE, &format!("/api/v1/contacts/{contact}")).send().await.unwrap();
    assert_eq!(deleted.status(), 200);
    let next = sync(&dav, &calendar, &sync_token(&first.body)).await;
    assert!(next.body.contains(&format!("{event}</D:href><D:status>HTTP/1.1 404")), "{}", next.body);

    let other = server.sign_up("bob").await;
    let as_bob = Dav { user: "bob".into(), id: other.id, ..dav.clone() };
    assert_eq!(as_bob.send("GET", &event, &[], "").await.status, 404);
    assert_eq!(as_bob.propfind(&calendar, "1", "<D:getetag/>").await.status, 404);
}

#[tokio::test(flavor = "multi_thread")]
async fn the_subscription_feed_serves_dates_to_its_secret_url_until_rotated_or_revoked() {
    let server = Instance::new().spawn();
    let ada = server.sign_up("ada").await;
    let created: serde_json::Value = ada
        .post("/api/v1/contacts", json!({ "card": { "name": { "full": "Grace Hopper" } }, "birthday": "1906-12-09" }))
        .await
        .json()
        .await
        .unwrap();
    let contact = created["contact"]["id"].as_u64().unwrap();
    let reminder = ada
        .post(
            &format!("/api/v1/contacts/{contact}/reminders"),
            json!({ "message": "Call", "remind_at": "2099-01-02", "recurrence": "once" }),
        )
        .await;
    assert!(reminder.status().is_success(), "{}", reminder.status());
    let status: serde_json::Value = ada.get("/api/v1/ical-feed").await.json().await.unwrap();
    assert_eq!(status["enabled"], false);

    let made: serde_json::Value = ada.post("/api/v1/ical-feed", json!({})).await.json().await.unwrap();
    let path = made["path"].as_str().expect("path").to_string();
    assert!(path.starts_with(&format!("/ical/{}-", ada.id)), "{path}");
    let feed = server.get(&path).await;
    assert_eq!(feed.status(), 200);
    assert!(feed.headers()["content-type"].to_str().unwrap().starts_with("text/calendar"));
    let text = feed.text().await.unwrap();
    assert!(text.contains("SUMMARY:Grace Hopper's birthday"), "{text}");
    assert!(text.contains("DTSTART;VALUE=DATE:19061209"), "{text}");
    assert!(text.contains("SUMMARY:Call: Grace Hopper"), "{text}");
    assert!(text.contains("DTSTART;VALUE=DATE:20990102"), "{text}");
    let status: serde_json::Value = ada.get("/api/v1/ical-feed").await.json().await.unwrap();
    assert_eq!(status["enabled"], true);

    let wrong = path.replace(".ics", "0.ics");
    assert_eq!(server.get(&wrong).await.status(), 404);
    let bob = server.sign_up("bob").await;
    let bobs: serde_json::Value = bob.post("/api/v1/ical-feed", json!({})).await.json().await.unwrap();
    let bobs_secret = bobs["path"].as_str().unwrap().split_once('-').unwrap().1.to_string();
    assert_eq!(
        server.get(&format!("/ical/{}-{bobs_secret}", ada.id)).await.status(),
        404,
        "a secret is its user's only"
    );

    let rotated: serde_json::Value = ada.post("/api/v1/ical-feed", json!({})).await.json().await.unwrap();
    let new_path = rotated["path"].as_str().unwrap().to_string();
    assert_ne!(new_path, path);
    assert_eq!(server.get(&path).await.status(), 404, "the old URL stops working");
    assert_eq!(server.get(&new_path).await.status(), 200);
    let revoked = ada.request(Method::DELETE, "/api/v1/ical-feed").send().await.unwrap();
    assert_eq!(revoked.status(), 200);
    assert_eq!(server.get(&new_path).await.status(), 404);
}

#[tokio::test(flavor = "multi_thread")]
async fn with_two_way_caldav_an_activitys_event_edits_and_deletes_the_activity() {
    let server = Instance::new().with("CALDAV_ENABLED", "true").with("CALDAV_TWO_WAY_ENABLED", "true").spawn();
    let (api, dav) = account(&server, "ada").await;
    let created: serde_json::Value = api
        .post("/api/v1/contacts", json!({ "card": { "name": { "full": "Grace Hopper" } }, "birthday": "--12-09" }))
        .await
        .json()
        .await
        .unwrap();
    let contact = created["contact"]["id"].as_u64().unwrap();
    let made: serde_json::Value = api
        .post(
            "/api/v1/activities",
            json!({ "title": "Lunch", "description": "Talked about COBOL", "date": "2026-03-04T12:00:00Z", "contact_ids": [contact], "type": "meal" }),
        )
        .await
        .json()
        .await
        .unwrap();
    let id = made["activity"]["id"].as_u64().unwrap();
    let event = format!("/caldav/{}/calendar/activity-{id}.ics", dav.id);
    let got = dav.send("GET", &event, &[], "").await;
    assert!(got.body.contains("With Grace Hopper"), "{}", got.body);
    let etag = got.etag();
    let calendar = format!("/caldav/{}/calendar/", dav.id);
    let privileges = dav.propfind(&calendar, "0", "<D:current-user-privilege-set/>").await;
    assert!(privileges.body.contains("<D:write-content/>"), "{}", privileges.body);

    let edited = got
        .body
        .replace("SUMMARY:Lunch", "SUMMARY:Long lunch")
        .replace("DTSTART:20260304T120000Z", "DTSTART;TZID=Europe/Paris:20260304T140000");
    let stale = dav.send("PUT", &event, &[("If-Match", "\"a-1-999\"")], &edited).await;
    assert_eq!(stale.status, 412);
    let put = dav.send("PUT", &event, &[("If-Match", &etag), ("Content-Type", "text/calendar")], &edited).await;
    assert_eq!(put.status, 204, "{}", put.body);
    assert_ne!(put.etag(), etag);
    let activity: serde_json::Value = api.get(&format!("/api/v1/activities/{id}")).await.json().await.unwrap();
    assert_eq!(activity["title"], "Long lunch", "{activity}");
    assert_eq!(activity["description"], "Talked about COBOL", "the contact line is not folded in: {activity}");
    assert!(activity["date"].as_str().unwrap().starts_with("2026-03-04T13:00:00"), "14:00 in Paris: {activity}");
    assert_eq!(activity["type"], "meal");

    let garbage = dav.send("PUT", &event, &[], "BEGIN:VCALENDAR\r\nEND:VCALENDAR\r\n").await;
    assert_eq!(garbage.status, 403);
    assert!(garbage.body.contains("<CAL:valid-calendar-data/>"), "{}", garbage.body);
    let birthday = format!("/caldav/{}/calendar/birthday-{contact}.ics", dav.id);
    assert_eq!(dav.send("PUT", &birthday, &[], &edited).await.status, 403, "a birthday is edited on its contact");

    assert_eq!(dav.send("DELETE", &event, &[], "").await.status, 204);
    assert_eq!(api.get(&format!("/api/v1/activities/{id}")).await.status(), 404);
}

/// With two-way CalDAV a client's new event (Thunderbird's and DAVx5's `<uuid>.ics` with
/// `If-None-Match: *`) becomes an activity, served back under the client's href with its UID,
/// found by sync and calendar-query, then edited and deleted through that href. Another user
/// can neither see it nor write into the calendar.
#[tokio::test(flavor = "multi_thread")]
async fn with_two_way_caldav_a_clients_new_event_becomes_an_activity_under_its_own_href() {
    let server = Instance::new().with("CALDAV_ENABLED", "true").with("CALDAV_TWO_WAY_ENABLED", "true").spawn();
    let (api, dav) = account(&server, "ada").await;
    let calendar = format!("/caldav/{}/calendar/", dav.id);
    let first = sync(&dav, &calendar, "").await;
    let uid = "5C6F0E42-1B7A-4F0B-9D2E-6A1B2C3D4E5F@thunderbird.example";
    let href = format!("{calendar}tb-5c6f0e42.ics");
    let event = |summary: &str, start: &str| {
        format!(
            "BEGIN:VCALENDAR\r\nVERSION:2.0\r\nPRODID:-//Mozilla.org/NONSGML Mozilla Calendar V1.1//EN\r\nBEGIN:VEVENT\r\nUID:{uid}\r\nDTSTAMP:20260301T090000Z\r\nSUMMARY:{summary}\r\nLOCATION:Café Lumière\r\nDESCRIPTION:Bring the seed catalogue\r\nDTSTART:{start}\r\nDTEND:20260310T180000Z\r\nEND:VEVENT\r\nEND:VCALENDAR\r\n"
        )
    };
    let privileges = dav.propfind(&calendar, "0", "<D:current-user-privilege-set/>").await;
    assert!(privileges.body.contains("<D:bind/>"), "{}", privileges.body);

    let type_ics = ("Content-Type", "text/calendar; charset=utf-8");
    let guarded =
        dav.send("PUT", &href, &[type_ics, ("If-Match", "\"a-1-1\"")], &event("Seed swap", "20260310T170000Z")).await;
    assert_eq!(guarded.status, 412, "If-Match on a resource that is not there: {}", guarded.body);
    let made =
        dav.send("PUT", &href, &[type_ics, ("If-None-Match", "*")], &event("Seed swap", "20260310T170000Z")).await;
    assert_eq!(made.status, 201, "{}", made.body);
    let etag = made.etag();
    let again =
        dav.send("PUT", &href, &[type_ics, ("If-None-Match", "*")], &event("Seed swap", "20260310T170000Z")).await;
    assert_eq!(again.status, 412, "it exists now");

    let got = dav.send("GET", &href, &[], "").await;
    assert_eq!(got.status, 200);
    assert_eq!(got.etag(), etag);
    assert!(got.body.contains(&format!("UID:{uid}\r\n")), "{}", got.body);
    assert!(got.body.contains("SUMMARY:Seed swap"), "{}", got.body);
    assert!(got.body.contains("DTSTART:20260310T170000Z"), "{}", got.body);
    assert!(got.body.contains("Café Lumière"), "{}", got.body);

    let listed: serde_json::Value = api.get("/api/v1/activities").await.json().await.unwrap();
    let activities = listed["activities"].as_array().expect("activities");
    assert_eq!(activities.len(), 1, "{listed}");
    assert_eq!(activities[0]["title"], "Seed swap");
    assert_eq!(activities[0]["uuid"], uid);
    assert_eq!(activities[0]["description"], "Bring the seed catalogue");
    let id = activities[0]["id"].as_u64().expect("id");
    assert_eq!(
        dav.send("GET", &format!("{calendar}activity-{id}.ics"), &[], "").await.status,
        404,
        "served under the client's href only"
    );

    let changes = sync(&dav, &calendar, &sync_token(&first.body)).await;
    assert_eq!(etags(&changes.body), vec![(href.clone(), etag.clone())], "{}", changes.body);
    let query = format!(
        r#"<C:calendar-query xmlns:D="DAV:" xmlns:C="urn:ietf:params:xml:ns:caldav"><D:prop><D:getetag/><C:calendar-data/></D:prop><C:filter><C:comp-filter name="VCALENDAR"><C:comp-filter name="VEVENT"><C:time-range start="20260310T000000Z" end="20260311T000000Z"/></C:comp-filter></C:comp-filter></C:filter></C:calendar-query>"#
    );
    let found = dav.send("REPORT", &calendar, &[("Depth", "1")], &query).await;
    assert_eq!(hrefs(&found.body), vec![href.clone()], "{}", found.body);
    assert!(found.body.contains(uid), "{}", found.body);
    let multiget = format!(
        r#"<C:calendar-multiget xmlns:D="DAV:" xmlns:C="urn:ietf:params:xml:ns:caldav"><D:prop><D:getetag/></D:prop><D:href>{href}</D:href></C:calendar-multiget>"#
    );
    assert_eq!(etags(&dav.send("REPORT", &calendar, &[], &multiget).await.body), vec![(href.clone(), etag.clone())]);

    // The same UID under another href is the RFC's no-uid-conflict.
    let twin = dav.send("PUT", &format!("{calendar}other.ics"), &[type_ics], &event("Twin", "20260310T170000Z")).await;
    assert_eq!(twin.status, 409, "{}", twin.body);
    assert!(twin.body.contains("<CAL:no-uid-conflict/>"), "{}", twin.body);
    assert!(twin.body.contains(&href), "names the holder: {}", twin.body);
    // A name of the server's own form, or an unreadable body, is refused.
    let reserved =
        dav.send("PUT", &format!("{calendar}activity-999.ics"), &[type_ics], &event("X", "20260310T170000Z")).await;
    assert_eq!(reserved.status, 403, "{}", reserved.body);
    let garbage =
        dav.send("PUT", &format!("{calendar}new.ics"), &[type_ics], "BEGIN:VCALENDAR\r\nEND:VCALENDAR\r\n").await;
    assert_eq!(garbage.status, 403);
    assert!(garbage.body.contains("<CAL:valid-calendar-data/>"), "{}", garbage.body);

    let other = server.sign_up("bob").await;
    let as_bob = Dav { user: "bob".into(), id: other.id, ..dav.clone() };
    assert_eq!(as_bob.send("GET", &href, &[], "").await.status, 404);
    let intruding =
        as_bob.send("PUT", &format!("{calendar}bob.ics"), &[type_ics], &event("Bob's", "20260310T170000Z")).await;
    assert_eq!(intruding.status, 404, "not bob's calendar");
    let bobs_calendar = format!("/caldav/{}/calendar/", other.id);
    let own = as_bob
        .send("PUT", &format!("{bobs_calendar}tb-5c6f0e42.ics"), &[type_ics], &event("Bob's own", "20260310T170000Z"))
        .await;
    assert_eq!(own.status, 201, "the same name and UID in bob's own calendar are his: {}", own.body);
    let bobs = as_bob.propfind(&bobs_calendar, "1", "<D:getetag/>").await;
    assert_eq!(etags(&bobs.body).len(), 1, "{}", bobs.body);
    assert_eq!(dav.send("GET", &href, &[], "").await.body, got.body, "ada's event is untouched");

    let moved = got
        .body
        .replace("SUMMARY:Seed swap", "SUMMARY:Seed swap and soup")
        .replace("DTSTART:20260310T170000Z", "DTSTART:20260311T100000Z");
    let stale = dav.send("PUT", &href, &[type_ics, ("If-Match", "\"a-1-999\"")], &moved).await;
    assert_eq!(stale.status, 412);
    let edited = dav.send("PUT", &href, &[type_ics, ("If-Match", &etag)], &moved).await;
    assert_eq!(edited.status, 204, "{}", edited.body);
    assert_ne!(edited.etag(), etag);
    let activity: serde_json::Value = api.get(&format!("/api/v1/activities/{id}")).await.json().await.unwrap();
    assert_eq!(activity["title"], "Seed swap and soup", "{activity}");
    assert!(activity["date"].as_str().unwrap().starts_with("2026-03-11T10:00:00"), "{activity}");
    // An edit through the API keeps the href and UID.
    let put = api
        .send(
            Method::PUT,
            &format!("/api/v1/activities/{id}"),
            json!({ "title": "Soup", "date": "2026-03-11T10:00:00Z" }),
        )
        .await;
    assert_eq!(put.status(), 200);
    let after_api = dav.send("GET", &href, &[], "").await;
    assert!(after_api.body.contains("SUMMARY:Soup") && after_api.body.contains(uid), "{}", after_api.body);

    let before_delete = sync(&dav, &calendar, "").await;
    assert_eq!(dav.send("DELETE", &href, &[], "").await.status, 204);
    assert_eq!(api.get(&format!("/api/v1/activities/{id}")).await.status(), 404);
    assert_eq!(dav.send("GET", &href, &[], "").await.status, 404);
    assert_eq!(dav.send("DELETE", &href, &[], "").await.status, 404);
    let gone = sync(&dav, &calendar, &sync_token(&before_delete.body)).await;
    assert!(gone.body.contains(&format!("{href}</D:href><D:status>HTTP/1.1 404")), "{}", gone.body);
}

/// A calendar app's event as it writes one: an edited occurrence listed before its series (as
/// vdirsyncer's suite does), an alarm, a sequence, a relation, a zone of its own and an `X-`
/// property; `{summary}` and `{uid}` filled in.
const APP_EVENT: &str = "BEGIN:VCALENDAR\r\nVERSION:2.0\r\nPRODID:-//Apple Inc.//macOS 15.1//EN\r\nCALSCALE:GREGORIAN\r\n\
BEGIN:VTIMEZONE\r\nTZID:W. Europe Standard Time\r\nBEGIN:STANDARD\r\nDTSTART:16010101T030000\r\nTZOFFSETFROM:+0200\r\nTZOFFSETTO:+0100\r\nRRULE:FREQ=YEARLY;BYDAY=-1SU;BYMONTH=10\r\nEND:STANDARD\r\nBEGIN:DAYLIGHT\r\nDTSTART:16010101T020000\r\nTZOFFSETFROM:+0100\r\nTZOFFSETTO:+0200\r\nRRULE:FREQ=YEARLY;BYDAY=-1SU;BYMONTH=3\r\nEND:DAYLIGHT\r\nEND:VTIMEZONE\r\n\
BEGIN:VEVENT\r\nUID:{uid}\r\nDTSTAMP:20261101T090000Z\r\nRECURRENCE-ID;TZID=W. Europe Standard Time:20261208T100000\r\nDTSTART;TZID=W. Europe Standard Time:20261208T150000\r\nDTEND;TZID=W. Europe Standard Time:20261208T160000\r\nSEQUENCE:1\r\nSUMMARY:{summary} (moved)\r\nEND:VEVENT\r\n\
BEGIN:VEVENT\r\nUID:{uid}\r\nDTSTAMP:20261101T090000Z\r\nDTSTART;TZID=W. Europe Standard Time:20261201T100000\r\nDTEND;TZID=W. Europe Standard Time:20261201T110000\r\nRRULE:FREQ=WEEKLY;COUNT=4\r\nEXDATE;TZID=W. Europe Standard Time:20261215T100000\r\nSEQUENCE:0\r\nSUMMARY:{summary}\r\nLOCATION:Greenhouse\r\nRELATED-TO;RELTYPE=PARENT:garden-plan-1\r\nX-APPLE-TRAVEL-ADVISORY-BEHAVIOR:AUTOMATIC\r\n\
BEGIN:VALARM\r\nACTION:DISPLAY\r\nDESCRIPTION:Reminder\r\nTRIGGER:-PT15M\r\nUID:alarm-1\r\nEND:VALARM\r\nEND:VEVENT\r\nEND:VCALENDAR\r\n";

fn time_query(start: &str, end: &str, component: &str) -> String {
    format!(
        r#"<C:calendar-query xmlns:D="DAV:" xmlns:C="urn:ietf:params:xml:ns:caldav"><D:prop><D:getetag/></D:prop><C:filter><C:comp-filter name="VCALENDAR"><C:comp-filter name="{component}"><C:time-range start="{start}" end="{end}"/></C:comp-filter></C:comp-filter></C:filter></C:calendar-query>"#
    )
}

/// With two-way CalDAV an event a calendar app writes comes back exactly as written (its alarm,
/// sequence, relation, recurrence, exception, edited occurrence and zone), under any href the
/// app chooses, while its activity shows what the CRM uses; a time range finds each occurrence
/// (and not the removed one); an edit in the CRM is written into the app's event, leaving the
/// rest; free-busy answers the busy occurrences; tasks are refused.
#[tokio::test(flavor = "multi_thread")]
async fn with_two_way_caldav_an_apps_event_comes_back_whole_and_recurs() {
    let server = Instance::new().with("CALDAV_ENABLED", "true").with("CALDAV_TWO_WAY_ENABLED", "true").spawn();
    let (api, dav) = account(&server, "ada").await;
    let calendar = format!("/caldav/{}/calendar/", dav.id);
    let type_ics = ("Content-Type", "text/calendar; charset=utf-8");
    let uid = "Standup @ greenhouse ät град";
    let href = format!("{calendar}Standup%20%40%20greenhouse%20%C3%A4t%20%D0%B3%D1%80%D0%B0%D0%B4.ics");
    let body = APP_EVENT.replace("{uid}", uid).replace("{summary}", "Standup");
    let made = dav.send("PUT", &href, &[type_ics, ("If-None-Match", "*")], &body).await;
    assert_eq!(made.status, 201, "{}", made.body);
    let got = dav.send("GET", &href, &[], "").await;
    assert_eq!(got.status, 200);
    assert_eq!(got.body, body, "served back exactly as written");
    assert_eq!(got.etag(), made.etag());

    let listed: serde_json::Value = api.get("/api/v1/activities").await.json().await.unwrap();
    let activity = &listed["activities"][0];
    assert_eq!((activity["title"].as_str(), activity["location"].as_str()), (Some("Standup"), Some("Greenhouse")));
    assert!(activity["date"].as_str().unwrap().starts_with("2026-12-01T09:00:00"), "10:00 at +01:00: {activity}");
    let id = activity["id"].as_u64().unwrap();

    // Each occurrence is found by its own time range; the removed one and the moved one's old
    // time are not.
    let find = |start: &'static str, end: &'static str, component: &'static str| {
        let dav = dav.clone();
        let calendar = calendar.clone();
        async move {
            hrefs(&dav.send("REPORT", &calendar, &[("Depth", "1")], &time_query(start, end, component)).await.body)
        }
    };
    assert_eq!(find("20261222T085000Z", "20261222T091000Z", "VEVENT").await.len(), 1, "the fourth week");
    assert_eq!(find("20261208T140000Z", "20261208T144000Z", "VEVENT").await.len(), 1, "the moved occurrence");
    assert!(find("20261208T090000Z", "20261208T095000Z", "VEVENT").await.is_empty(), "the moved one's old time");
    assert!(find("20261215T090000Z", "20261215T095000Z", "VEVENT").await.is_empty(), "the removed one");
    assert!(find("20261229T000000Z", "20270101T000000Z", "VEVENT").await.is_empty(), "after the last");
    assert!(find("20261201T000000Z", "20261231T000000Z", "VTODO").await.is_empty(), "no tasks here");

    // Property and alarm filters: an event is found by its UID and text, and by when its alarm
    // goes off (15 minutes before each occurrence); a filter it cannot judge is refused.
    let filtered = |inner: String| {
        let dav = dav.clone();
        let calendar = calendar.clone();
        async move {
            let body = format!(
                r#"<C:calendar-query xmlns:D="DAV:" xmlns:C="urn:ietf:params:xml:ns:caldav"><D:prop><D:getetag/></D:prop><C:filter><C:comp-filter name="VCALENDAR"><C:comp-filter name="VEVENT">{inner}</C:comp-filter></C:comp-filter></C:filter></C:calendar-query>"#
            );
            dav.send("REPORT", &calendar, &[("Depth", "1")], &body).await
        }
    };
    let text = |name: &str, text: &str, extra: &str| {
        format!(r#"<C:prop-filter name="{name}"><C:text-match {extra}>{text}</C:text-match></C:prop-filter>"#)
    };
    assert_eq!(hrefs(&filtered(text("UID", uid, "collation=\"i;octet\"")).await.body).len(), 1);
    assert_eq!(hrefs(&filtered(text("SUMMARY", "moved", "")).await.body).len(), 1, "an edited occurrence's summary");
    assert_eq!(hrefs(&filtered(text("SUMMARY", "STANDUP", "collation=\"i;octet\"")).await.body).len(), 0);
    assert_eq!(hrefs(&filtered(text("LOCATION", "greenhouse", "")).await.body).len(), 1, "case folded");
    assert_eq!(hrefs(&filtered(text("LOCATION", "green", "negate-condition=\"yes\"")).await.body).len(), 0);
    let undefined = r#"<C:prop-filter name="CLASS"><C:is-not-defined/></C:prop-filter>"#.to_string();
    assert_eq!(hrefs(&filtered(undefined).await.body).len(), 1);
    let alarm = |start: &str, end: &str| {
        format!(r#"<C:comp-filter name="VALARM"><C:time-range start="{start}" end="{end}"/></C:comp-filter>"#)
    };
    assert_eq!(hrefs(&filtered(alarm("20261222T084000Z", "20261222T085000Z")).await.body).len(), 1, "08:45 UTC");
    assert!(hrefs(&filtered(alarm("20261222T085000Z", "20261222T090000Z")).await.body).is_empty());
    let param = r#"<C:prop-filter name="SUMMARY"><C:param-filter name="LANGUAGE"/></C:prop-filter>"#.to_string();
    assert_eq!(filtered(param).await.status, 400, "not answered unfiltered");

    let freebusy = r#"<C:free-busy-query xmlns:C="urn:ietf:params:xml:ns:caldav"><C:time-range start="20261201T000000Z" end="20261231T000000Z"/></C:free-busy-query>"#;
    let busy = dav.send("REPORT", &calendar, &[("Depth", "1")], freebusy).await;
    assert_eq!(busy.status, 200, "{}", busy.body);
    assert!(busy.headers["content-type"].to_str().unwrap().starts_with("text/calendar"));
    let periods: Vec<&str> = busy.body.lines().filter(|l| l.starts_with("FREEBUSY")).collect();
    assert_eq!(
        periods,
        [
            "FREEBUSY;FBTYPE=BUSY:20261201T090000Z/20261201T100000Z",
            "FREEBUSY;FBTYPE=BUSY:20261208T140000Z/20261208T150000Z",
            "FREEBUSY;FBTYPE=BUSY:20261222T090000Z/20261222T100000Z",
        ],
        "{}",
        busy.body
    );

    // Expanded by the server (calendar-data's expand): each occurrence in the range its own
    // VEVENT, the removed one left out.
    let expand = r#"<C:calendar-query xmlns:D="DAV:" xmlns:C="urn:ietf:params:xml:ns:caldav"><D:prop><C:calendar-data><C:expand start="20261201T000000Z" end="20261231T000000Z"/></C:calendar-data></D:prop><C:filter><C:comp-filter name="VCALENDAR"><C:comp-filter name="VEVENT"><C:time-range start="20261201T000000Z" end="20261231T000000Z"/></C:comp-filter></C:comp-filter></C:filter></C:calendar-query>"#;
    let expanded = dav.send("REPORT", &calendar, &[("Depth", "1")], expand).await;
    assert_eq!(expanded.body.matches("BEGIN:VEVENT").count(), 3, "{}", expanded.body);
    assert!(!expanded.body.contains("FREQ=WEEKLY") && !expanded.body.contains("EXDATE"), "{}", expanded.body);
    for start in ["DTSTART:20261201T090000Z", "DTSTART:20261208T140000Z", "DTSTART:20261222T090000Z"] {
        assert!(expanded.body.contains(start), "{start}: {}", expanded.body);
    }
    assert_eq!(expanded.body.matches("RECURRENCE-ID").count(), 3, "{}", expanded.body);

    // An edit in the CRM goes into the app's event, and only what it changed.
    let edited = api
        .send(
            Method::PUT,
            &format!("/api/v1/activities/{id}"),
            json!({ "title": "Standup, outside", "location": "Greenhouse", "description": "", "date": "2026-12-01T09:30:00Z" }),
        )
        .await;
    assert_eq!(edited.status(), 200);
    let got = dav.send("GET", &href, &[], "").await;
    for kept in [
        "TRIGGER:-PT15M",
        "RELATED-TO;RELTYPE=PARENT:garden-plan-1",
        "X-APPLE-TRAVEL-ADVISORY-BEHAVIOR",
        "EXDATE",
        "SUMMARY:Standup (moved)",
        "TZID:W. Europe Standard Time",
    ] {
        assert!(got.body.contains(kept), "{kept}: {}", got.body);
    }
    assert!(got.body.contains("SUMMARY:Standup\\, outside\r\n"), "{}", got.body);
    assert!(
        got.body.contains("DTSTART:20261201T093000Z\r\n") && got.body.contains("DTEND:20261201T103000Z\r\n"),
        "{}",
        got.body
    );
    assert!(got.body.contains("SEQUENCE:1\r\n"), "the series' sequence raised: {}", got.body);
    assert_ne!(got.etag(), made.etag());

    // The app's next edit replaces it whole again.
    let again = APP_EVENT.replace("{uid}", uid).replace("{summary}", "Standup, inside");
    let put = dav.send("PUT", &href, &[type_ics, ("If-Match", &got.etag())], &again).await;
    assert_eq!(put.status, 204, "{}", put.body);
    assert_eq!(dav.send("GET", &href, &[], "").await.body, again);
    let activity: serde_json::Value = api.get(&format!("/api/v1/activities/{id}")).await.json().await.unwrap();
    assert_eq!(activity["title"], "Standup, inside");

    let task =
        "BEGIN:VCALENDAR\r\nVERSION:2.0\r\nBEGIN:VTODO\r\nUID:t-1\r\nSUMMARY:Repot\r\nEND:VTODO\r\nEND:VCALENDAR\r\n";
    let refused = dav.send("PUT", &format!("{calendar}t-1.ics"), &[type_ics], task).await;
    assert_eq!(refused.status, 403, "{}", refused.body);
    assert!(refused.body.contains("valid-calendar-data"), "{}", refused.body);
    let untitled = "BEGIN:VCALENDAR\r\nVERSION:2.0\r\nBEGIN:VEVENT\r\nUID:u-1\r\nDTSTART:20261203T120000Z\r\nEND:VEVENT\r\nEND:VCALENDAR\r\n";
    assert_eq!(dav.send("PUT", &format!("{calendar}u-1.ics"), &[type_ics], untitled).await.status, 201);
    assert_eq!(dav.send("GET", &format!("{calendar}u-1.ics"), &[], "").await.body, untitled);
}

/// The calendar's name and colour can be set (as vdirsyncer's and Apple's clients do), removed,
/// and are refused whole beside a property that cannot be set.
#[tokio::test(flavor = "multi_thread")]
async fn the_calendar_can_be_named_and_coloured() {
    let server = Instance::new().with("CALDAV_ENABLED", "true").spawn();
    let (_, dav) = account(&server, "ada").await;
    let calendar = format!("/caldav/{}/calendar/", dav.id);
    let patch = |body: &str| {
        format!(
            r#"<D:propertyupdate xmlns:D="DAV:" xmlns:A="http://apple.com/ns/ical/" xmlns:X="urn:x">{body}</D:propertyupdate>"#
        )
    };
    let props = "<D:displayname/><A:calendar-color xmlns:A=\"http://apple.com/ns/ical/\"/>";
    let before = dav.propfind(&calendar, "0", props).await;
    assert!(before.body.contains("<D:displayname>Dates</D:displayname>"), "{}", before.body);
    let privileges = dav.propfind(&calendar, "0", "<D:current-user-privilege-set/>").await;
    assert!(privileges.body.contains("<D:write-properties/>"), "said before it is asked: {}", privileges.body);
    let set = dav
        .send("PROPPATCH", &calendar, &[], &patch("<D:set><D:prop><D:displayname>hello wörld</D:displayname><A:calendar-color>#ff0000</A:calendar-color></D:prop></D:set>"))
        .await;
    assert_eq!(set.status, 207, "{}", set.body);
    assert!(set.body.contains("200 OK") && !set.body.contains("403"), "{}", set.body);
    let after = dav.propfind(&calendar, "0", props).await;
    assert!(after.body.contains("<D:displayname>hello wörld</D:displayname>"), "{}", after.body);
    assert!(after.body.contains(">#ff0000</X:calendar-color>"), "{}", after.body);
    let mixed = dav
        .send(
            "PROPPATCH",
            &calendar,
            &[],
            &patch("<D:set><D:prop><D:displayname>Other</D:displayname><X:flavour>umami</X:flavour></D:prop></D:set>"),
        )
        .await;
    assert!(mixed.body.contains("403 Forbidden") && mixed.body.contains("424 Failed Dependency"), "{}", mixed.body);
    let bad = dav
        .send(
            "PROPPATCH",
            &calendar,
            &[],
            &patch("<D:set><D:prop><A:calendar-color>red</A:calendar-color></D:prop></D:set>"),
        )
        .await;
    assert_eq!(bad.status, 403, "{}", bad.body);
    let removed = dav
        .send("PROPPATCH", &calendar, &[], &patch("<D:remove><D:prop><A:calendar-color/></D:prop></D:remove>"))
        .await;
    assert_eq!(removed.status, 207);
    let last = dav.propfind(&calendar, "0", props).await;
    assert!(last.body.contains("hello wörld") && !last.body.contains("#ff0000"), "{}", last.body);
}
