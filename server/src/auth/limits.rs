//! In-memory, per-process limiters (reset on restart, as the spec says):
//! - lockout per (identifier, client IP), with a per-identifier backstop that spares pairs which
//!   recently signed in (so an attacker cannot lock the owner out from their usual place);
//! - the instance-wide password-spray signal and throttle (`AUTH_SPRAY_*`): many failures across
//!   many identifiers in a window engages a throttle that refuses sources that have not recently
//!   authenticated; one account failing from many IPs does not trip it;
//! - token buckets for the auth and API request rates, per client IP and per user;
//! - wrong two-factor codes per account.
//! Monotonic time (`Instant`) throughout: a wall-clock jump neither locks nor frees anyone. The
//! one exception is when the last spray was detected, kept on the engine's clock because the
//! `auth_spray` alert compares it with the evaluation's time.

use std::collections::{HashMap, HashSet, VecDeque};
use std::net::IpAddr;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use jiff::Timestamp;

use crate::config::{Rates, Spray};

const LOCK_THRESHOLD: usize = 5;
const BACKSTOP_THRESHOLD: usize = 20;
const LOCK_WINDOW: Duration = Duration::from_secs(15 * 60);
const LOCK_DURATION: Duration = Duration::from_secs(15 * 60);
const REMEMBER_SUCCESS: Duration = Duration::from_secs(30 * 24 * 3600);
const TOTP_THRESHOLD: usize = 5;

/// A token bucket's shape: `burst` tokens, one more every `every`.
#[derive(Debug, Clone, Copy)]
pub struct Rate {
    pub every: Duration,
    pub burst: f64,
}

#[derive(Debug)]
struct Bucket {
    tokens: f64,
    at: Instant,
}

#[derive(Default)]
struct State {
    failures: HashMap<(String, IpAddr), VecDeque<Instant>>,
    per_identifier: HashMap<String, VecDeque<Instant>>,
    locked_pairs: HashMap<(String, IpAddr), Instant>,
    locked_identifiers: HashMap<String, Instant>,
    spray: VecDeque<(Instant, String)>,
    throttle_until: Option<Instant>,
    last_spray_on: Option<Timestamp>,
    recent_ips: HashMap<IpAddr, Instant>,
    recent_pairs: HashMap<(String, IpAddr), Instant>,
    buckets: HashMap<String, Bucket>,
    totp_failures: HashMap<u64, VecDeque<Instant>>,
    totp_locked: HashMap<u64, Instant>,
}

pub struct Limits {
    spray: Spray,
    /// Per client IP and per user on the API.
    pub api: Rate,
    /// Per client IP on the public auth routes.
    pub auth: Rate,
    state: Mutex<State>,
}

/// Why an attempt is refused before any credential work, and for how long.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Refusal {
    pub retry_after: Duration,
    /// A lockout (as opposed to a rate or spray throttle).
    pub locked: bool,
}

fn prune(times: &mut VecDeque<Instant>, now: Instant, window: Duration) {
    while times.front().is_some_and(|t| now.duration_since(*t) > window) {
        times.pop_front();
    }
}

fn remaining(until: Instant, now: Instant) -> Option<Duration> {
    (until > now).then(|| until - now)
}

impl Limits {
    pub fn new(spray: Spray, rates: &Rates) -> Limits {
        let rate = |burst: u64, ms: u64| Rate { every: Duration::from_millis(ms), burst: burst as f64 };
        Limits {
            spray,
            api: rate(rates.api_burst, rates.api_interval_ms),
            auth: rate(rates.auth_burst, rates.auth_interval_ms),
            state: Mutex::new(State::default()),
        }
    }

    fn state(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Takes one token from bucket `key` of shape `rate`; `Err` says when to retry.
    pub fn take(&self, key: String, rate: Rate) -> Result<(), Refusal> {
        let now = Instant::now();
        let mut state = self.state();
        if state.buckets.len() > 100_000 {
            // Bounded memory: full buckets carry no information.
            state.buckets.retain(|_, b| b.tokens < rate.burst);
        }
        let bucket = state.buckets.entry(key).or_insert(Bucket { tokens: rate.burst, at: now });
        let refill = now.duration_since(bucket.at).as_secs_f64() / rate.every.as_secs_f64();
        bucket.tokens = (bucket.tokens + refill).min(rate.burst);
        bucket.at = now;
        if bucket.tokens >= 1.0 {
            bucket.tokens -= 1.0;
            Ok(())
        } else {
            let wait = (1.0 - bucket.tokens) * rate.every.as_secs_f64();
            Err(Refusal { retry_after: Duration::from_secs_f64(wait.max(1.0)), locked: false })
        }
    }

    /// Checked before any credential work for a sign-in attempt.
    pub fn check_login(&self, identifier: &str, ip: IpAddr) -> Result<(), Refusal> {
        let now = Instant::now();
        let state = self.state();
        let pair = (identifier.to_string(), ip);
        let returning = state.recent_pairs.get(&pair).is_some_and(|t| now.duration_since(*t) < REMEMBER_SUCCESS)
            || state.recent_ips.get(&ip).is_some_and(|t| now.duration_since(*t) < REMEMBER_SUCCESS);
        if let Some(left) = state.locked_pairs.get(&pair).and_then(|until| remaining(*until, now)) {
            return Err(Refusal { retry_after: left, locked: true });
        }
        if !returning {
            if let Some(left) = state.locked_identifiers.get(identifier).and_then(|until| remaining(*until, now)) {
                return Err(Refusal { retry_after: left, locked: true });
            }
            if self.spray.enabled
                && let Some(left) = state.throttle_until.and_then(|until| remaining(until, now))
            {
                return Err(Refusal { retry_after: left, locked: false });
            }
        }
        Ok(())
    }

    /// Records a failed sign-in at `wall` (the engine's clock): lockout counters and the spray
    /// signal.
    pub fn login_failed(&self, identifier: &str, ip: IpAddr, wall: Timestamp) {
        let now = Instant::now();
        let mut state = self.state();
        let pair = (identifier.to_string(), ip);
        let times = state.failures.entry(pair.clone()).or_default();
        times.push_back(now);
        prune(times, now, LOCK_WINDOW);
        if times.len() >= LOCK_THRESHOLD {
            times.clear();
            state.locked_pairs.insert(pair, now + LOCK_DURATION);
        }
        let times = state.per_identifier.entry(identifier.to_string()).or_default();
        times.push_back(now);
        prune(times, now, LOCK_WINDOW);
        if times.len() >= BACKSTOP_THRESHOLD {
            times.clear();
            state.locked_identifiers.insert(identifier.to_string(), now + LOCK_DURATION);
        }
        if self.spray.enabled {
            let window = Duration::from_secs(self.spray.window_seconds);
            state.spray.push_back((now, identifier.to_string()));
            while state.spray.front().is_some_and(|(t, _)| now.duration_since(*t) > window) {
                state.spray.pop_front();
            }
            let distinct = state.spray.iter().map(|(_, id)| id.as_str()).collect::<HashSet<&str>>().len();
            if state.spray.len() as u64 >= self.spray.failure_threshold
                && distinct as u64 >= self.spray.identifier_threshold
            {
                state.throttle_until = Some(now + Duration::from_secs(self.spray.throttle_seconds));
                state.last_spray_on = Some(wall);
                tracing::warn!(
                    event = "auth_spray_detected",
                    component = "auth",
                    failures = state.spray.len(),
                    identifiers = distinct
                );
            }
        }
        if state.failures.len() > 100_000 {
            state.failures.retain(|_, t| !t.is_empty());
        }
    }

    /// Records a successful sign-in: clears the pair's failures and remembers the source.
    pub fn login_succeeded(&self, identifier: &str, ip: IpAddr) {
        let now = Instant::now();
        let mut state = self.state();
        let pair = (identifier.to_string(), ip);
        state.failures.remove(&pair);
        state.locked_pairs.remove(&pair);
        state.recent_pairs.insert(pair, now);
        state.recent_ips.insert(ip, now);
    }

    /// When the last password spray was detected on the engine's clock, if one was since start
    /// (the `auth_spray` alert's signal).
    pub fn last_spray_on(&self) -> Option<Timestamp> {
        self.state().last_spray_on
    }

    /// Whether the spray throttle is engaged now (for the operations surface).
    pub fn spray_active(&self) -> bool {
        self.state().throttle_until.is_some_and(|until| until > Instant::now())
    }

    /// Checked before verifying a two-factor code.
    pub fn check_totp(&self, user: u64) -> Result<(), Refusal> {
        let now = Instant::now();
        match self.state().totp_locked.get(&user).and_then(|until| remaining(*until, now)) {
            Some(left) => Err(Refusal { retry_after: left, locked: true }),
            None => Ok(()),
        }
    }

    pub fn totp_failed(&self, user: u64) {
        let now = Instant::now();
        let mut state = self.state();
        let times = state.totp_failures.entry(user).or_default();
        times.push_back(now);
        prune(times, now, LOCK_WINDOW);
        if times.len() >= TOTP_THRESHOLD {
            times.clear();
            state.totp_locked.insert(user, now + LOCK_DURATION);
        }
    }

    pub fn totp_succeeded(&self, user: u64) {
        let mut state = self.state();
        state.totp_failures.remove(&user);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spray(failures: u64, identifiers: u64) -> Limits {
        let spray = Spray {
            enabled: true,
            window_seconds: 60,
            failure_threshold: failures,
            identifier_threshold: identifiers,
            throttle_seconds: 300,
        };
        Limits::new(
            spray,
            &Rates {
                api_burst: 1000,
                api_interval_ms: 600,
                auth_burst: 50,
                auth_interval_ms: 500,
                dav_burst: 2500,
                dav_interval_ms: 100,
            },
        )
    }

    fn ip(n: u8) -> IpAddr {
        IpAddr::from([10, 0, 0, n])
    }

    #[test]
    fn five_failures_lock_the_pair_but_not_other_sources() {
        let limits = spray(1000, 1000);
        for _ in 0..5 {
            assert!(limits.check_login("ada", ip(1)).is_ok());
            limits.login_failed("ada", ip(1), Timestamp::UNIX_EPOCH);
        }
        let refusal = limits.check_login("ada", ip(1)).unwrap_err();
        assert!(refusal.locked && refusal.retry_after > Duration::from_secs(800));
        assert!(limits.check_login("ada", ip(2)).is_ok(), "another source is not locked");
        assert!(limits.check_login("bob", ip(1)).is_ok(), "another identifier is not locked");
    }

    #[test]
    fn the_backstop_spares_a_returning_pair() {
        let limits = spray(1000, 1000);
        limits.login_succeeded("ada", ip(9));
        for n in 0..20 {
            limits.login_failed("ada", ip(100 + n), Timestamp::UNIX_EPOCH);
        }
        assert!(limits.check_login("ada", ip(50)).unwrap_err().locked, "backstop for new sources");
        assert!(limits.check_login("ada", ip(9)).is_ok(), "the owner's usual source still works");
    }

    #[test]
    fn spray_trips_on_many_identifiers_not_on_one_account_from_many_ips() {
        let one_account = spray(10, 5);
        for n in 0..30 {
            one_account.login_failed("ada", ip(n), Timestamp::UNIX_EPOCH);
        }
        assert!(!one_account.spray_active());
        assert_eq!(one_account.last_spray_on(), None);

        let sprayed = spray(10, 5);
        sprayed.login_succeeded("owner", ip(7));
        for n in 0..10u8 {
            sprayed.login_failed(&format!("user{n}"), ip(200), Timestamp::UNIX_EPOCH);
        }
        assert!(sprayed.spray_active());
        assert_eq!(sprayed.last_spray_on(), Some(Timestamp::UNIX_EPOCH), "the alert's signal, on the given clock");
        assert!(!sprayed.check_login("stranger", ip(201)).unwrap_err().locked, "a throttle, not a lock");
        assert!(sprayed.check_login("owner", ip(7)).is_ok(), "returning users are exempt");
        assert!(sprayed.check_login("someone", ip(7)).is_ok(), "a recently authenticated source is exempt");
    }

    #[test]
    fn buckets_refill_and_refuse_past_the_burst() {
        let limits = spray(1000, 1000);
        let rate = Rate { every: Duration::from_secs(60), burst: 3.0 };
        for _ in 0..3 {
            assert!(limits.take("k".into(), rate).is_ok());
        }
        let refusal = limits.take("k".into(), rate).unwrap_err();
        assert!(refusal.retry_after >= Duration::from_secs(59));
        assert!(limits.take("other".into(), rate).is_ok());
    }
}
