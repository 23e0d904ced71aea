//! Picking contacts for the dashboard: a few at random, and the upcoming birthdays.

use jiff::civil::Date;
use mycorrhizal_engine::{UPDATED_INDEX, UserView, Walk};

use super::view::{BirthdayView, ContactSummary, photo_url};
use super::{Contact, INDEX_ARCHIVED, INDEX_BIRTHDAY};
use crate::crm::calendar;
use crate::crm::{Error, Result};

/// Random draws per wanted contact before [`random_summaries`] falls back to the id list: with
/// ids at least a tenth dense, running out is vanishingly rare.
const RANDOM_DRAWS_PER_PICK: usize = 64;

/// Up to `n` active contacts picked at random: each pick uniform over the active contacts not yet
/// picked. Ids are drawn at random between the user's lowest and highest contact id and kept when
/// they name an active contact (a few point reads, no walk); the user's ids have gaps (other users'
/// ids, deleted rows), so when draws keep missing, the rest are picked from the list of live ids.
pub fn random_summaries(view: &UserView, n: usize) -> Result<Vec<ContactSummary>> {
    let archived = view.count_where::<Contact>(INDEX_ARCHIVED, "1")?;
    let active = view.count::<Contact>()?.saturating_sub(archived) as usize;
    let wanted = n.min(active);
    let mut picked: Vec<u64> = Vec::new();
    let mut out = Vec::new();
    if let Some((lo, hi)) = view.id_bounds::<Contact>()? {
        let span = (hi - lo).saturating_add(1);
        let mut draws = 0;
        while out.len() < wanted && draws < RANDOM_DRAWS_PER_PICK * wanted {
            draws += 1;
            let id = lo + random_u64()? % span;
            if picked.contains(&id) {
                continue;
            }
            match view.get::<Contact>(id) {
                Ok(row) if !row.body.archived => {
                    picked.push(id);
                    out.push(ContactSummary::of(&row));
                }
                Ok(_) | Err(mycorrhizal_engine::Error::NotFound) => {}
                Err(e) => return Err(e.into()),
            }
        }
    }
    if out.len() < wanted {
        let archived: std::collections::HashSet<u64> = view.find::<Contact>(INDEX_ARCHIVED, "1")?.into_iter().collect();
        let mut ids: Vec<u64> = view
            .find_range::<Contact>(UPDATED_INDEX, "", None)?
            .into_iter()
            .filter(|id| !archived.contains(id) && !picked.contains(id))
            .collect();
        while out.len() < n && !ids.is_empty() {
            let i = (random_u64()? % ids.len() as u64) as usize;
            out.push(ContactSummary::of(&view.get::<Contact>(ids.swap_remove(i))?));
        }
    }
    Ok(out)
}

fn random_u64() -> Result<u64> {
    let mut r = [0u8; 8];
    getrandom::fill(&mut r).map_err(Error::internal)?;
    Ok(u64::from_le_bytes(r))
}

/// Active contacts' birthdays between `today` and `end`, soonest first, at most `limit` of them.
pub fn upcoming_birthdays(view: &UserView, today: Date, end: Date, limit: usize) -> Result<Vec<BirthdayView>> {
    let mut found = Vec::new();
    // Walk only the month-day window of the `birthday_md` index ("MM-DD"), not every contact:
    // one range, two across the year end, everything for a window of a year or more, and always
    // "02-29" (celebrated on 1 March in other years; `next_yearly` decides).
    let md = |d: Date| format!("{:02}-{:02}", d.month(), d.day());
    let past = |d: Date| format!("{:02}-{:02}", d.month(), d.day() + 1);
    // The ranges after the first are in calendar order from today, so the first `limit` rows they
    // yield are the soonest; "02-29" is read whole (a sliver of any address book) because its
    // occurrence on 1 March does not follow its place in the index.
    let mut ranges = vec![("02-29".to_string(), "02-30".to_string())];
    if (end - today).get_days() >= 365 {
        ranges.push((String::new(), "~".into()));
    } else if md(end) >= md(today) && end.year() == today.year() {
        ranges.push((md(today), past(end)));
    } else {
        ranges.push((md(today), "~".into()));
        ranges.push((String::new(), past(end)));
    }
    let mut seen = std::collections::HashSet::new();
    let mut rows = Vec::new();
    let mut main = 0;
    for (i, (from, to)) in ranges.iter().enumerate() {
        let wanted = if i == 0 { usize::MAX } else { limit.saturating_sub(main) };
        if wanted == 0 {
            break;
        }
        let walk = Walk { index: INDEX_BIRTHDAY, from, to: Some(to), after: None, descending: false };
        let page = view.walk::<Contact>(walk, wanted, |r| !r.body.archived)?;
        if i > 0 {
            main += page.rows.len();
        }
        rows.extend(page.rows.into_iter().filter(|r| seen.insert(r.id)));
    }
    for row in rows {
        let Some(p) = mycorrhizal_codecs::dates::parse_rest_date(&row.body.flat.birthday) else { continue };
        let (Some(month), Some(day)) = (p.month, p.day) else { continue };
        let Some(next) = calendar::next_yearly(month as i8, day as i8, today) else { continue };
        if next > end {
            continue;
        }
        let days_until = (next - today).get_days();
        let age = p
            .year
            .and_then(|year| Date::new(year as i16, month as i8, day as i8).ok())
            .map(|born| calendar::age_on(born, next));
        let item = BirthdayView {
            kind: "contact",
            contact_id: row.id,
            name: row.body.name(),
            birthday: row.body.flat.birthday.clone(),
            date: next.to_string(),
            days_until,
            age,
            photo_thumbnail: photo_url(&row).map(|url| format!("{url}?thumbnail=true")),
        };
        found.push((days_until, item));
    }
    found.sort_by_key(|(d, _)| *d);
    Ok(found.into_iter().take(limit).map(|(_, item)| item).collect())
}

/// The end of the birthday window from `today`: `days` ahead (1 to 366), or by default the rest
/// of this month and all of the next.
pub fn birthday_window(today: Date, days: Option<i32>) -> Result<Date> {
    match days {
        Some(days) if (1..=366).contains(&days) => {
            today.checked_add(jiff::Span::new().days(days)).map_err(Error::internal)
        }
        Some(_) => Err(Error::bad_parameter("days", "must be 1 to 366")),
        None => {
            let next_month =
                today.first_of_month().checked_add(jiff::Span::new().months(1)).map_err(Error::internal)?;
            Ok(next_month.last_of_month())
        }
    }
}
