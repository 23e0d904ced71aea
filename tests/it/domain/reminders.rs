//! Reminders' recurrence: completing one moves a recurring reminder on (months clamp to their
//! last day and return to the day they were set for), and a one-off ends.

use jiff::civil::date;
use mycorrhizal::crm::contact::ops as contacts;
use mycorrhizal::crm::reminder::ops::{self, ReminderInput};
use serde_json::json;

use super::{Domain, input};

#[tokio::test]
async fn a_monthly_reminder_set_for_the_31st_clamps_and_returns() {
    let domain = Domain::at("2026-01-31T09:00:00Z");
    let ada = domain.user(1);
    let grace = contacts::create(&ada, input(json!({ "firstname": "Grace" }))).await.unwrap();
    let given: ReminderInput = input(json!({
        "message": "call Grace", "remind_at": "2026-01-31", "recurrence": "monthly", "reoccur_from_completion": false
    }));
    let reminder = ops::create(&ada, Some(grace.id), given).await.unwrap();
    let mut days = Vec::new();
    let mut today = date(2026, 1, 31);
    for _ in 0..3 {
        let (next, completion) = ops::complete(&ada, reminder.id, today, false).await.unwrap();
        assert!(completion.is_some(), "each completion is recorded");
        let next = next.expect("a recurring reminder moves on");
        today = mycorrhizal::crm::calendar::day_of(next.body.remind_at);
        days.push(today);
    }
    assert_eq!(days, [date(2026, 2, 28), date(2026, 3, 31), date(2026, 4, 30)]);
}

#[tokio::test]
async fn a_one_off_reminder_ends_when_completed() {
    let domain = Domain::at("2026-05-01T09:00:00Z");
    let ada = domain.user(1);
    let grace = contacts::create(&ada, input(json!({ "firstname": "Grace" }))).await.unwrap();
    let given: ReminderInput =
        input(json!({ "message": "send the book", "remind_at": "2026-05-01", "recurrence": "once" }));
    let reminder = ops::create(&ada, Some(grace.id), given).await.unwrap();
    let (next, completion) = ops::complete(&ada, reminder.id, date(2026, 5, 1), false).await.unwrap();
    assert!(next.is_none(), "nothing to move on to");
    assert!(completion.is_some());
    let unknown: ReminderInput =
        input(json!({ "message": "x", "remind_at": "2026-05-01", "recurrence": "fortnightly" }));
    assert!(ops::create(&ada, Some(grace.id), unknown).await.is_err(), "an unknown recurrence is refused");
}
