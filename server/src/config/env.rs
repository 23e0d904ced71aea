//! Reading environment variables into typed values. Every failure names its variable; all
//! failures are collected so an operator sees every typo at once.

use std::collections::HashMap;

/// One configuration variable that could not be used.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConfigError {
    pub variable: String,
    pub reason: String,
}

impl std::fmt::Display for ConfigError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}: {}", self.variable, self.reason)
    }
}

/// A source of variables (the process environment, or a map in tests) plus collected errors.
pub struct Env {
    vars: HashMap<String, String>,
    pub errors: Vec<ConfigError>,
}

impl Env {
    pub fn from_process() -> Self {
        Self::from_map(std::env::vars().collect())
    }

    pub fn from_map(vars: HashMap<String, String>) -> Self {
        Env { vars, errors: Vec::new() }
    }

    /// The raw value, with surrounding whitespace removed; empty counts as unset.
    pub fn raw(&self, name: &str) -> Option<&str> {
        self.vars.get(name).map(|v| v.trim()).filter(|v| !v.is_empty())
    }

    pub fn fail(&mut self, name: &str, reason: impl Into<String>) {
        self.errors.push(ConfigError { variable: name.into(), reason: reason.into() });
    }

    pub fn string(&self, name: &str) -> Option<String> {
        self.raw(name).map(str::to_string)
    }

    pub fn string_or(&self, name: &str, default: &str) -> String {
        self.string(name).unwrap_or_else(|| default.to_string())
    }

    pub fn bool(&mut self, name: &str, default: bool) -> bool {
        match self.raw(name).map(str::to_ascii_lowercase).as_deref() {
            None => default,
            Some("1" | "true" | "yes" | "on") => true,
            Some("0" | "false" | "no" | "off") => false,
            Some(other) => {
                let reason = format!("expected true or false, got {other:?}");
                self.fail(name, reason);
                default
            }
        }
    }

    /// An integer in `min..=max`.
    pub fn int(&mut self, name: &str, default: i64, min: i64, max: i64) -> i64 {
        let Some(raw) = self.raw(name) else {
            return default;
        };
        match raw.parse::<i64>() {
            Ok(v) if (min..=max).contains(&v) => v,
            Ok(v) => {
                self.fail(name, format!("{v} is outside {min}..={max}"));
                default
            }
            Err(_) => {
                let reason = format!("expected an integer, got {raw:?}");
                self.fail(name, reason);
                default
            }
        }
    }

    /// A non-negative count or duration.
    pub fn count(&mut self, name: &str, default: u64, max: u64) -> u64 {
        self.int(name, default as i64, 0, max as i64) as u64
    }

    /// A percentage `0..=100`.
    pub fn percent(&mut self, name: &str, default: u8) -> u8 {
        self.int(name, i64::from(default), 0, 100) as u8
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env(pairs: &[(&str, &str)]) -> Env {
        Env::from_map(pairs.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect())
    }

    #[test]
    fn typos_are_collected_with_their_variable() {
        let mut e = env(&[("A", "maybe"), ("B", "12x"), ("C", "101"), ("D", " ")]);
        assert!(e.bool("A", true));
        assert_eq!(e.int("B", 5, 0, 10), 5);
        assert_eq!(e.percent("C", 75), 75);
        assert_eq!(e.percent("D", 75), 75, "blank is unset");
        let names: Vec<_> = e.errors.iter().map(|e| e.variable.as_str()).collect();
        assert_eq!(names, ["A", "B", "C"]);
    }
}
