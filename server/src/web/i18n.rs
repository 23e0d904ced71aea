//! The web client's words, in catalogues (`i18n/<lang>.txt`, one `key = text` per line), never in
//! the templates. English is complete; another language falls back to English for a missing key,
//! and a test holds every catalogue to English's keys.

use std::collections::HashMap;
use std::sync::OnceLock;

/// A language the web client speaks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Lang {
    En,
    De,
}

const SOURCES: &[(Lang, &str, &str)] =
    &[(Lang::En, "en", include_str!("i18n/en.txt")), (Lang::De, "de", include_str!("i18n/de.txt"))];

impl Lang {
    /// The account's language, or English for one without a catalogue yet.
    pub fn of_account(code: &str) -> Lang {
        SOURCES.iter().find(|(_, c, _)| *c == code).map(|(l, _, _)| *l).unwrap_or(Lang::En)
    }

    /// The first language of an `Accept-Language` header that has a catalogue.
    pub fn of_header(header: Option<&str>) -> Lang {
        let Some(header) = header else { return Lang::En };
        let mut wanted: Vec<(f32, &str)> = header
            .split(',')
            .filter_map(|part| {
                let mut pieces = part.trim().split(';');
                let tag = pieces.next()?.trim();
                let q =
                    pieces.find_map(|p| p.trim().strip_prefix("q=")).and_then(|q| q.parse::<f32>().ok()).unwrap_or(1.0);
                Some((q, tag))
            })
            .collect();
        wanted.sort_by(|a, b| b.0.total_cmp(&a.0));
        wanted
            .iter()
            .find_map(|(_, tag)| {
                let primary = tag.split('-').next().unwrap_or("").to_ascii_lowercase();
                SOURCES.iter().find(|(_, c, _)| *c == primary).map(|(l, _, _)| *l)
            })
            .unwrap_or(Lang::En)
    }

    pub fn code(self) -> &'static str {
        SOURCES.iter().find(|(l, _, _)| *l == self).map(|(_, c, _)| *c).unwrap_or("en")
    }

    /// The text of `key`; the key itself (and a log line) when no catalogue has it.
    pub fn t(self, key: &'static str) -> &'static str {
        let catalogues = catalogues();
        if let Some(text) = catalogues.get(&self).and_then(|c| c.get(key)) {
            return text;
        }
        if let Some(text) = catalogues.get(&Lang::En).and_then(|c| c.get(key)) {
            return text;
        }
        tracing::warn!(event = "i18n_missing", component = "web", key);
        key
    }

    /// [`Lang::t`] with `{name}` placeholders filled.
    pub fn f(self, key: &'static str, args: &[(&str, &str)]) -> String {
        let mut text = self.t(key).to_string();
        for (name, value) in args {
            text = text.replace(&format!("{{{name}}}"), value);
        }
        text
    }
}

type Catalogue = HashMap<&'static str, &'static str>;

fn catalogues() -> &'static HashMap<Lang, Catalogue> {
    static CATALOGUES: OnceLock<HashMap<Lang, Catalogue>> = OnceLock::new();
    CATALOGUES.get_or_init(|| SOURCES.iter().map(|(lang, _, text)| (*lang, parse(text))).collect())
}

fn parse(text: &'static str) -> Catalogue {
    text.lines()
        .map(str::trim)
        .filter(|l| !l.is_empty() && !l.starts_with('#'))
        .filter_map(|l| l.split_once(" = ").map(|(k, v)| (k.trim(), v.trim())))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_catalogue_has_exactly_the_english_keys() {
        let all = catalogues();
        let mut english: Vec<&str> = all[&Lang::En].keys().copied().collect();
        english.sort();
        for (lang, code, text) in SOURCES {
            let mut keys: Vec<&str> = all[lang].keys().copied().collect();
            keys.sort();
            assert_eq!(keys, english, "catalogue {code} differs from en");
            let lines = text.lines().filter(|l| !l.trim().is_empty() && !l.trim().starts_with('#')).count();
            assert_eq!(lines, keys.len(), "catalogue {code} has a malformed or repeated line");
        }
    }

    #[test]
    fn accept_language_picks_the_best_known_language() {
        assert_eq!(Lang::of_header(Some("de-DE,de;q=0.9,en;q=0.8")), Lang::De);
        assert_eq!(Lang::of_header(Some("fr-FR, en;q=0.5, de;q=0.7")), Lang::De);
        assert_eq!(Lang::of_header(Some("fr")), Lang::En);
        assert_eq!(Lang::of_header(None), Lang::En);
        assert_eq!(Lang::of_account("de"), Lang::De);
        assert_eq!(Lang::of_account("it"), Lang::En);
    }

    #[test]
    fn placeholders_are_filled() {
        assert_eq!(Lang::En.f("contacts.count", &[("count", "3")]), "3 contacts");
    }
}
