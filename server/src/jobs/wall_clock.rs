//! The wall clock of daily jobs: `REMINDER_TIME` in `REMINDER_TIMEZONE` (the one server clock).
//!
//! - Daylight saving: a run time that does not exist on a spring-forward day (02:30 in
//!   Europe/Berlin on the last Sunday of March) runs at the first instant after the gap (03:00);
//!   one that happens twice on a fall-back day runs at its first occurrence, and once.
//! - Never twice for one local day: the runner stores the last day run (`ops::job_runs`), and a
//!   job's own writes may guard per user too (the digest writes each user's last digest day with
//!   that user's queued messages, the guard that holds even when a run dies half way).
//! - Downtime: a server that was down at the run time runs once when it comes back, for the
//!   latest run time passed, and that run covers the missed days (at most [`CATCH_UP_DAYS`]):
//!   one run, not one per missed day. A new instance does not catch up on days before it first
//!   ran.

use jiff::civil::Date;
use jiff::tz::{AmbiguousOffset, TimeZone};
use jiff::{Span, Timestamp};

use crate::config::WallTime;
use crate::crm::calendar;
pub use crate::notify::digest::Window;

/// How many days back a run after downtime looks, the run's own day included.
pub const CATCH_UP_DAYS: i64 = 31;

/// The instant `day` reaches `at` in `zone`: in a gap (spring forward), the first instant after
/// it; in a fold (fall back), the first of the two.
pub fn run_instant(day: Date, at: WallTime, zone: &TimeZone) -> Option<Timestamp> {
    let wall = day.at(at.hour, at.minute, 0, 0);
    let ambiguous = zone.to_ambiguous_timestamp(wall);
    match ambiguous.offset() {
        AmbiguousOffset::Unambiguous { offset } => offset.to_timestamp(wall).ok(),
        AmbiguousOffset::Fold { before, .. } => before.to_timestamp(wall).ok(),
        AmbiguousOffset::Gap { before, after } => {
            // Between these two readings of the wall time lies the transition: the first instant
            // whose local time is past the wall time.
            let (mut lo, mut hi) =
                (after.to_timestamp(wall).ok()?.as_second(), before.to_timestamp(wall).ok()?.as_second());
            while lo < hi {
                let mid = lo + (hi - lo) / 2;
                let local = Timestamp::from_second(mid).ok()?.to_zoned(zone.clone()).datetime();
                if local >= wall { hi = mid } else { lo = mid + 1 }
            }
            Timestamp::from_second(lo).ok()
        }
    }
}

/// The day whose run is due at `now`, given the last day run: the latest day whose run instant
/// has passed, unless it ran. A new instance (`last` none) waits for today's run time.
pub fn due_day(last: Option<Date>, now: Timestamp, at: WallTime, zone: &TimeZone) -> Option<Date> {
    let today = calendar::today(now, zone);
    let passed = run_instant(today, at, zone).is_some_and(|t| t <= now);
    let day = if passed { today } else { today.yesterday().ok()? };
    match last {
        None if passed => Some(today),
        None => None,
        Some(last) if last < day => Some(day),
        Some(_) => None,
    }
}

/// The next run instant after `now`.
pub fn next_run(now: Timestamp, at: WallTime, zone: &TimeZone) -> Option<Timestamp> {
    let today = calendar::today(now, zone);
    let mut day = today;
    for _ in 0..3 {
        if let Some(t) = run_instant(day, at, zone).filter(|t| *t > now) {
            return Some(t);
        }
        day = day.tomorrow().ok()?;
    }
    None
}

/// The days a run for `day` covers: from the day after the last run (at most
/// [`CATCH_UP_DAYS`] back), or `day` alone.
pub fn window(last: Option<Date>, day: Date) -> Window {
    let earliest = day.checked_sub(Span::new().days(CATCH_UP_DAYS - 1)).unwrap_or(day);
    let from = last.and_then(|l| l.tomorrow().ok()).unwrap_or(day).max(earliest).min(day);
    Window { from, day }
}

#[cfg(test)]
mod tests {
    use super::*;
    use jiff::civil::date;

    fn berlin() -> TimeZone {
        TimeZone::get("Europe/Berlin").unwrap()
    }

    fn at(h: i8, m: i8) -> WallTime {
        WallTime { hour: h, minute: m }
    }

    fn t(s: &str) -> Timestamp {
        s.parse().unwrap()
    }

    #[test]
    fn the_run_time_across_daylight_saving_changes() {
        let z = berlin();
        assert_eq!(run_instant(date(2026, 3, 28), at(2, 30), &z), Some(t("2026-03-28T01:30:00Z")));
        // 02:30 does not exist on 29 March 2026: the first instant after the gap is 03:00 CEST.
        assert_eq!(run_instant(date(2026, 3, 29), at(2, 30), &z), Some(t("2026-03-29T01:00:00Z")));
        assert_eq!(run_instant(date(2026, 3, 30), at(2, 30), &z), Some(t("2026-03-30T00:30:00Z")));
        // 02:30 happens twice on 25 October 2026: the first one (CEST).
        assert_eq!(run_instant(date(2026, 10, 25), at(2, 30), &z), Some(t("2026-10-25T00:30:00Z")));
        assert_eq!(run_instant(date(2026, 10, 26), at(2, 30), &z), Some(t("2026-10-26T01:30:00Z")));
        assert_eq!(run_instant(date(2026, 10, 25), at(6, 0), &z), Some(t("2026-10-25T05:00:00Z")));
    }

    #[test]
    fn due_once_per_day_and_catching_up_once() {
        let (z, six) = (TimeZone::UTC, at(6, 0));
        assert_eq!(due_day(None, t("2026-05-04T05:59:00Z"), six, &z), None, "a new instance waits");
        assert_eq!(due_day(None, t("2026-05-04T06:00:00Z"), six, &z), Some(date(2026, 5, 4)));
        assert_eq!(due_day(Some(date(2026, 5, 4)), t("2026-05-04T23:00:00Z"), six, &z), None, "ran today");
        assert_eq!(due_day(Some(date(2026, 5, 3)), t("2026-05-04T05:00:00Z"), six, &z), None, "not yet");
        assert_eq!(due_day(Some(date(2026, 5, 3)), t("2026-05-04T06:01:00Z"), six, &z), Some(date(2026, 5, 4)));
        // Down from the 1st to the 4th at 05:00: the 3rd's run, covering the 2nd and 3rd, then the 4th's.
        let late = due_day(Some(date(2026, 5, 1)), t("2026-05-04T05:00:00Z"), six, &z);
        assert_eq!(late, Some(date(2026, 5, 3)));
        assert_eq!(
            window(Some(date(2026, 5, 1)), date(2026, 5, 3)),
            Window { from: date(2026, 5, 2), day: date(2026, 5, 3) }
        );
        assert_eq!(window(None, date(2026, 5, 3)).from, date(2026, 5, 3));
        assert_eq!(window(Some(date(2026, 5, 3)), date(2026, 5, 3)).from, date(2026, 5, 3), "a second run today");
        assert_eq!(window(Some(date(2025, 1, 1)), date(2026, 5, 3)).from, date(2026, 4, 3), "at most 31 days");
    }

    #[test]
    fn the_next_run_follows_the_wall_clock() {
        let z = berlin();
        assert_eq!(next_run(t("2026-03-28T02:00:00Z"), at(2, 30), &z), Some(t("2026-03-29T01:00:00Z")));
        assert_eq!(next_run(t("2026-03-29T01:00:00Z"), at(2, 30), &z), Some(t("2026-03-30T00:30:00Z")));
        assert_eq!(
            next_run(t("2026-10-25T00:30:00Z"), at(2, 30), &z),
            Some(t("2026-10-26T01:30:00Z")),
            "once on fall-back"
        );
    }
}
