//! Alerting: the conditions an operator must hear about (`conditions.rs`), one persisted state
//! per condition, and the evaluation that moves each between `ok` and `alerting`. A raise is
//! stored with its telling in one transaction (the state and the queued messages), then told
//! once: the `alert.raised` webhook event and each admin's channels (`notify::alerts`). While
//! the condition keeps firing nothing more is sent; when it recovers, one `alert.cleared`. A
//! telling no path accepted (no subscriber, no channel, or every message failed for good) stays
//! pending and is told again at the next evaluation.
//!
//! It sits above `ops/`, `auth/`, `notify/` and `integrity.rs`, whose facts it reads; the
//! scheduler runs it every `ALERT_EVAL_INTERVAL_MINUTES` (job `alert_evaluation`).

mod conditions;

use std::time::Duration;

use jiff::Timestamp;
use mycorrhizal_engine::{Engine, codec};
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

pub use conditions::{CONDITIONS, Facts, Verdict, Watched};

use crate::auth::limits::Limits;
use crate::config::Config;
use crate::crm::{Result, blocking};
use crate::notify::alerts::{self as telling, Delivery, Notice};
use crate::notify::channels::Senders;
use crate::outbox::Signal;

/// `condition -> AlertState`.
const STATES: &str = "map:alert_states";
/// `<when, 20 digits of microseconds>:<sequence> -> Transition`: the history, newest kept.
const HISTORY: &str = "map:alert_history";
/// Transitions the history keeps.
pub const HISTORY_KEPT: usize = 200;

/// What the evaluation reads, handed over by its caller (the scheduler's step).
pub struct Inputs<'a> {
    pub engine: &'a Engine,
    pub config: &'a Config,
    pub limits: &'a Limits,
    pub senders: Senders,
    pub signal: &'a Signal,
    /// The jobs `job_stopped` watches (enabled, with an interval), from the scheduler's table.
    pub watched: Vec<Watched>,
    /// When this process started: the baseline of a job that has not run yet.
    pub started_at: Timestamp,
}

impl<'a> Inputs<'a> {
    /// What the running server's state gives the evaluation, watching `watched`.
    pub fn of(state: &'a crate::state::AppState, watched: Vec<Watched>) -> Inputs<'a> {
        Inputs {
            engine: &state.engine,
            config: &state.config,
            limits: &state.auth.limits,
            senders: Senders::of(&state.notify),
            signal: &state.notify.outbox.signal,
            watched,
            started_at: state.started_at,
        }
    }
}

/// A telling queued and not yet accepted.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Pending {
    pub raised: bool,
    pub key: String,
    pub messages: Vec<u64>,
    /// Times it has been queued.
    pub attempts: u32,
}

/// One condition's persisted state.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct AlertState {
    pub alerting: bool,
    /// Since when it is in this state.
    pub since: Timestamp,
    /// What is wrong (or what was, once recovered).
    pub detail: String,
    pub failures: u64,
    /// The telling of the last transition until a path accepted it.
    pub pending: Option<Pending>,
    pub evaluated_at: Timestamp,
}

/// A transition as the history keeps it.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, ToSchema)]
pub struct Transition {
    pub condition: String,
    /// `raised`, `cleared` or `disabled` (switched off while alerting: cleared untold).
    pub change: String,
    #[schema(value_type = String)]
    pub at: Timestamp,
    pub detail: String,
}

/// A condition as the admin reads it.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct AlertView {
    pub condition: String,
    /// `ok`, `alerting` or `disabled`.
    pub state: String,
    #[schema(value_type = Option<String>)]
    pub since: Option<Timestamp>,
    pub detail: String,
    pub failures: u64,
    /// A raise or recovery not yet accepted by any path (told again at the next evaluation).
    pub pending_notify: bool,
    #[schema(value_type = Option<String>)]
    pub evaluated_at: Option<Timestamp>,
}

#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct AlertList {
    pub alerts: Vec<AlertView>,
    /// Newest first.
    pub history: Vec<Transition>,
}

/// What one evaluation did.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Evaluated {
    pub evaluated: u64,
    pub raised: Vec<String>,
    pub cleared: Vec<String>,
    /// Tellings queued (first or again).
    pub told: u64,
}

fn state_of(view: &mycorrhizal_engine::GlobalView, condition: &str) -> mycorrhizal_engine::Result<Option<AlertState>> {
    view.map_get(STATES, condition)?.map(|bytes| codec::decode(STATES, &bytes)).transpose()
}

/// Evaluates every condition once (see the module's description). One evaluation at a time in
/// the process: a manual one waits for a scheduled one, so a transition is never told twice.
pub async fn evaluate(inputs: Inputs<'_>) -> Result<Evaluated> {
    static ONE_AT_A_TIME: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());
    let _turn = ONE_AT_A_TIME.lock().await;
    let now = inputs.engine.clock().now();
    let alerting = blocking(inputs.engine, |engine| {
        let view = engine.global()?;
        let mut on = Vec::new();
        for c in CONDITIONS {
            if state_of(&view, c)?.is_some_and(|s| s.alerting) {
                on.push(c.to_string());
            }
        }
        Ok::<_, mycorrhizal_engine::Error>(on)
    })
    .await??;
    let facts = Facts {
        watched: inputs.watched.clone(),
        started_at: inputs.started_at,
        last_spray: inputs.limits.last_spray_on(),
        alerting,
    };
    let verdicts = conditions::check_all(inputs.engine, inputs.config, facts, now).await?;
    let stored = {
        let names: Vec<&'static str> = verdicts.iter().map(|(c, _)| *c).collect();
        blocking(inputs.engine, move |engine| {
            let view = engine.global()?;
            names
                .iter()
                .map(|c| Ok((*c, state_of(&view, c)?, Delivery::Accepted)))
                .collect::<mycorrhizal_engine::Result<Vec<_>>>()
                .and_then(|mut rows| {
                    for (_, state, delivery) in rows.iter_mut() {
                        if let Some(pending) = state.as_ref().and_then(|s| s.pending.as_ref()) {
                            *delivery = telling::delivery(&view, &pending.messages)?;
                        }
                    }
                    Ok(rows)
                })
        })
        .await??
    };
    let senders = inputs.senders.clone();
    let outcome = inputs
        .engine
        .write_async(move |tx| {
            let mut done = Evaluated::default();
            for ((condition, verdict), (_, state, delivery)) in verdicts.iter().zip(&stored) {
                done.evaluated += 1;
                let before = state.clone();
                let (next, transition) = step(condition, before.clone(), verdict, *delivery, now);
                let mut next = next;
                if let Some(pending) = next.pending.as_mut()
                    && (pending.messages.is_empty() || needs_telling(before.as_ref(), pending, *delivery))
                {
                    let notice = Notice {
                        condition: condition.to_string(),
                        raised: pending.raised,
                        detail: next.detail.clone(),
                        failures: next.failures,
                        since: next.since,
                        key: format!("{}:{}", pending.key, pending.attempts),
                    };
                    pending.messages = telling::dispatch(tx, &senders, &notice)?;
                    pending.attempts += 1;
                    done.told += 1;
                }
                if let Some(t) = &transition {
                    match t.change.as_str() {
                        "raised" => done.raised.push(condition.to_string()),
                        "cleared" => done.cleared.push(condition.to_string()),
                        _ => {}
                    }
                    let seq = tx.next_counter("id:alert_history")?;
                    let key = format!("{:020}:{seq:010}", t.at.as_microsecond().max(0));
                    tx.global().map_put(HISTORY, &key, &codec::encode(t))?;
                }
                if before.as_ref() != Some(&next) {
                    tx.global().map_put(STATES, condition, &codec::encode(&next))?;
                }
            }
            prune_history(tx)?;
            Ok(done)
        })
        .await?;
    if outcome.told > 0 {
        inputs.signal.wake();
    }
    Ok(outcome)
}

/// Whether the pending telling must be queued (again) now: it is new (no messages yet), or no
/// path accepted it and none is still trying.
fn needs_telling(before: Option<&AlertState>, pending: &Pending, delivery: Delivery) -> bool {
    let same = before.and_then(|b| b.pending.as_ref()).is_some_and(|p| p.key == pending.key);
    !same || delivery == Delivery::Refused
}

/// The next state of `condition` for `verdict`, and the transition it makes, if any.
fn step(
    condition: &str,
    before: Option<AlertState>,
    verdict: &Verdict,
    delivery: Delivery,
    now: Timestamp,
) -> (AlertState, Option<Transition>) {
    let mut state = before.unwrap_or(AlertState {
        alerting: false,
        since: now,
        detail: String::new(),
        failures: 0,
        pending: None,
        evaluated_at: now,
    });
    state.evaluated_at = now;
    if delivery == Delivery::Accepted {
        state.pending = None;
    }
    let transition = |change: &str, detail: &str| Transition {
        condition: condition.to_string(),
        change: change.into(),
        at: now,
        detail: detail.to_string(),
    };
    let new_pending = |raised: bool| Pending {
        raised,
        key: format!("alert:{condition}:{}:{}", if raised { "raised" } else { "cleared" }, now.as_microsecond()),
        messages: Vec::new(),
        attempts: 0,
    };
    match (state.alerting, verdict) {
        (false, Verdict::Firing { detail, failures }) => {
            state.alerting = true;
            state.since = now;
            state.detail = detail.clone();
            state.failures = *failures;
            state.pending = Some(new_pending(true));
            let t = transition("raised", detail);
            (state, Some(t))
        }
        (true, Verdict::Firing { detail, failures }) => {
            state.detail = detail.clone();
            state.failures = *failures;
            (state, None)
        }
        (true, Verdict::Ok) => {
            state.alerting = false;
            state.since = now;
            state.pending = Some(new_pending(false));
            let t = transition("cleared", &state.detail);
            (state, Some(t))
        }
        (true, Verdict::Disabled) => {
            state.alerting = false;
            state.since = now;
            state.pending = None;
            let t = transition("disabled", &state.detail);
            (state, Some(t))
        }
        (false, Verdict::Ok | Verdict::Disabled) => (state, None),
    }
}

fn prune_history(tx: &mycorrhizal_engine::Tx<'_>) -> mycorrhizal_engine::Result<()> {
    let mut keys = Vec::new();
    tx.global().map_scan(HISTORY, "", |key, _| {
        keys.push(key.to_string());
        true
    })?;
    if keys.len() > HISTORY_KEPT {
        for key in &keys[..keys.len() - HISTORY_KEPT] {
            tx.global().map_remove(HISTORY, key)?;
        }
    }
    Ok(())
}

/// Every condition's state (those never evaluated are `ok`; those switched off `disabled`) and
/// the newest transitions.
pub async fn list(engine: &Engine, config: &Config) -> Result<AlertList> {
    let enabled: Vec<(&'static str, bool)> = CONDITIONS.iter().map(|c| (*c, conditions::enabled(config, c))).collect();
    let all_on = config.alerts.enabled;
    blocking(engine, move |engine| {
        let view = engine.global()?;
        let mut alerts = Vec::new();
        for (condition, on) in enabled {
            let state = state_of(&view, condition)?;
            let word = if !all_on || !on {
                "disabled"
            } else if state.as_ref().is_some_and(|s| s.alerting) {
                "alerting"
            } else {
                "ok"
            };
            alerts.push(AlertView {
                condition: condition.to_string(),
                state: word.into(),
                since: state.as_ref().map(|s| s.since),
                detail: state.as_ref().map(|s| s.detail.clone()).unwrap_or_default(),
                failures: state.as_ref().map_or(0, |s| s.failures),
                pending_notify: state.as_ref().is_some_and(|s| s.pending.is_some()),
                evaluated_at: state.as_ref().map(|s| s.evaluated_at),
            });
        }
        let mut history = Vec::new();
        view.map_scan(HISTORY, "", |_, bytes| {
            if let Ok(t) = codec::decode::<Transition>(HISTORY, bytes) {
                history.push(t);
            }
            true
        })?;
        history.reverse();
        Ok::<_, mycorrhizal_engine::Error>(AlertList { alerts, history })
    })
    .await?
    .map_err(Into::into)
}

/// How often the evaluation runs.
pub fn interval(config: &Config) -> Duration {
    Duration::from_secs(config.alerts.eval_interval_minutes.max(1) * 60)
}
