//! Settings that alerts change for as long as they fire (`[[api.alert_actions]]`: DoH only, direct fallback on or
//! off, lower concurrency), laid over the running config. Each override remembers the value it replaced
//! and the alerts that hold it: the last of them to resolve puts the old value back — unless the setting was
//! changed since (a reload that set the key), in which case the new value stands. Two alerts that set one key share
//! its override; the one set last gives the value.
//!
//! Overrides are kept in memory only: a restart starts from the config file. Pure: every change is made to a
//! [`Config`] the caller gives and then applies.

use super::Requester;
use super::alerts::Setting;
use crate::config::{Config, ResolverMode};
use std::collections::BTreeMap;
use std::fmt;

/// The config key a setting changes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum SettingKey {
    /// `resolver.mode`.
    ResolverMode,
    /// `proxy.fallback_direct`.
    FallbackDirect,
    /// `fetch.concurrency` and `politeness.per_host_concurrency`, together.
    Concurrency,
}

impl SettingKey {
    /// The key `setting` changes.
    pub fn of(setting: Setting) -> SettingKey {
        match setting {
            Setting::ResolverDoh => SettingKey::ResolverMode,
            Setting::FallbackDirect(_) => SettingKey::FallbackDirect,
            Setting::LowerConcurrency { .. } => SettingKey::Concurrency,
        }
    }

    /// The dotted key, as the config file writes it.
    pub fn name(self) -> &'static str {
        match self {
            SettingKey::ResolverMode => "resolver.mode",
            SettingKey::FallbackDirect => "proxy.fallback_direct",
            SettingKey::Concurrency => "fetch.concurrency and politeness.per_host_concurrency",
        }
    }

    /// Its value in `c`.
    pub fn get(self, c: &Config) -> SettingValue {
        match self {
            SettingKey::ResolverMode => SettingValue::Mode(c.resolver.mode),
            SettingKey::FallbackDirect => SettingValue::Flag(c.proxy.fallback_direct),
            SettingKey::Concurrency => SettingValue::Counts {
                fetch: c.fetch.concurrency,
                per_host: c.politeness.per_host_concurrency,
            },
        }
    }

    /// Sets it in `c` (a value of another key's type changes nothing).
    fn put(self, c: &mut Config, v: SettingValue) {
        match (self, v) {
            (SettingKey::ResolverMode, SettingValue::Mode(m)) => c.resolver.mode = m,
            (SettingKey::FallbackDirect, SettingValue::Flag(f)) => c.proxy.fallback_direct = f,
            (SettingKey::Concurrency, SettingValue::Counts { fetch, per_host }) => {
                c.fetch.concurrency = fetch;
                c.politeness.per_host_concurrency = per_host;
            }
            _ => {}
        }
    }
}

/// A value of a [`SettingKey`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SettingValue {
    Mode(ResolverMode),
    Flag(bool),
    /// `fetch.concurrency` and `politeness.per_host_concurrency`.
    Counts {
        fetch: u32,
        per_host: u32,
    },
}

/// As the config file writes it (`"doh"`, `true`, `2`).
impl fmt::Display for SettingValue {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SettingValue::Mode(m) => write!(f, "\"{m}\""),
            SettingValue::Flag(b) => write!(f, "{b}"),
            SettingValue::Counts { fetch, per_host } => write!(f, "{fetch} and {per_host}"),
        }
    }
}

/// The value `setting` gives a key whose value without any alert is `base`.
fn target(setting: Setting, base: SettingValue) -> SettingValue {
    match (setting, base) {
        (Setting::ResolverDoh, _) => SettingValue::Mode(ResolverMode::Doh),
        (Setting::FallbackDirect(on), _) => SettingValue::Flag(on),
        (Setting::LowerConcurrency { factor }, SettingValue::Counts { fetch, per_host }) => {
            // factor is in (0, 1): the product is below n and at least 0; at least one request stays.
            let lower = |n: u32| {
                let lowered = (f64::from(n) * factor).floor();
                if lowered >= 1.0 { lowered as u32 } else { 1 }
            };
            SettingValue::Counts {
                fetch: lower(fetch),
                per_host: lower(per_host),
            }
        }
        (Setting::LowerConcurrency { .. }, other) => other,
    }
}

/// One key that alerts hold.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Override {
    /// What the alerts set.
    value: SettingValue,
    /// What it replaced (the value without any alert).
    replaced: SettingValue,
    /// The alerts that hold it, in the order they came.
    holders: Vec<Requester>,
}

/// What became of one set or unset.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OverrideResult {
    /// The setting has the alert's value (set now, or already by this alert or another).
    Applied,
    /// The old value is back.
    Undone,
    /// Left as it is: changed since the alert set it, or still held by another alert.
    Kept,
    /// Nothing to do.
    Skipped,
}

impl OverrideResult {
    /// The name in answers and logs.
    pub fn as_str(self) -> &'static str {
        match self {
            OverrideResult::Applied => "applied",
            OverrideResult::Undone => "undone",
            OverrideResult::Kept => "kept",
            OverrideResult::Skipped => "skipped",
        }
    }
}

/// What a set or unset did, and why, in words.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OverrideOutcome {
    pub result: OverrideResult,
    /// The key it is about.
    pub key: &'static str,
    pub detail: String,
}

impl OverrideOutcome {
    fn new(result: OverrideResult, key: SettingKey, detail: String) -> OverrideOutcome {
        OverrideOutcome {
            result,
            key: key.name(),
            detail,
        }
    }
}

/// The settings alerts hold over the running config.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SettingOverrides {
    held: BTreeMap<SettingKey, Override>,
    /// Alerts whose key a reload set since they set it: their resolution leaves the reload's value.
    superseded: Vec<(SettingKey, Requester)>,
}

impl SettingOverrides {
    /// True when no alert holds a setting.
    pub fn is_empty(&self) -> bool {
        self.held.is_empty() && self.superseded.is_empty()
    }

    /// The keys alerts hold, each with the value in force and the value it replaced.
    pub fn held(&self) -> impl Iterator<Item = (&'static str, SettingValue, SettingValue)> + '_ {
        self.held
            .iter()
            .map(|(k, o)| (k.name(), o.value, o.replaced))
    }

    /// The alert `by` fires: gives `config` (the running config) the setting's value while it does.
    pub fn set(
        &mut self,
        setting: Setting,
        by: &Requester,
        config: &mut Config,
    ) -> OverrideOutcome {
        let key = SettingKey::of(setting);
        let outcome = |result, detail| OverrideOutcome::new(result, key, detail);
        if setting == Setting::ResolverDoh && config.resolver.doh.is_empty() {
            return outcome(
                OverrideResult::Skipped,
                "no [[resolver.doh]] endpoint is configured".to_owned(),
            );
        }
        if self.superseded.iter().any(|(k, r)| *k == key && r == by) {
            return outcome(
                OverrideResult::Skipped,
                format!(
                    "a reload set {} since this alert set it: the reload's value stands",
                    key.name()
                ),
            );
        }
        let current = key.get(config);
        let Some(o) = self.held.get_mut(&key) else {
            let value = target(setting, current);
            if value == current {
                return outcome(
                    OverrideResult::Skipped,
                    format!("{} is {value} already", key.name()),
                );
            }
            key.put(config, value);
            self.held.insert(
                key,
                Override {
                    value,
                    replaced: current,
                    holders: vec![by.clone()],
                },
            );
            return outcome(
                OverrideResult::Applied,
                format!(
                    "{} = {value} (was {current}) until the alert resolves; not kept across a restart",
                    key.name()
                ),
            );
        };
        let value = target(setting, o.replaced);
        let was_holder = o.holders.contains(by);
        if !was_holder {
            o.holders.push(by.clone());
        }
        let detail = if o.value != value || current != value {
            o.value = value;
            key.put(config, value);
            format!(
                "{} = {value} (was {current}); back to {} when the last of {} resolves",
                key.name(),
                o.replaced,
                holders(&o.holders)
            )
        } else if was_holder {
            format!("{} = {value} already, set by this alert", key.name())
        } else {
            format!(
                "{} = {value} already; back to {} when the last of {} resolves",
                key.name(),
                o.replaced,
                holders(&o.holders)
            )
        };
        outcome(OverrideResult::Applied, detail)
    }

    /// The alert `by` was resolved: puts back in `config` the value its setting replaced, when it was the last
    /// alert holding it and the setting still has the value the alerts gave it.
    pub fn unset(
        &mut self,
        setting: Setting,
        by: &Requester,
        config: &mut Config,
    ) -> OverrideOutcome {
        let key = SettingKey::of(setting);
        let outcome = |result, detail| OverrideOutcome::new(result, key, detail);
        if let Some(i) = self
            .superseded
            .iter()
            .position(|(k, r)| *k == key && r == by)
        {
            self.superseded.remove(i);
            return outcome(
                OverrideResult::Kept,
                format!(
                    "a reload set {} since this alert set it: {} stands",
                    key.name(),
                    key.get(config)
                ),
            );
        }
        let Some(o) = self.held.get_mut(&key).filter(|o| o.holders.contains(by)) else {
            return outcome(
                OverrideResult::Skipped,
                format!(
                    "nothing to undo: this alert did not set {} (or did before a restart)",
                    key.name()
                ),
            );
        };
        o.holders.retain(|r| r != by);
        if !o.holders.is_empty() {
            return outcome(
                OverrideResult::Kept,
                format!(
                    "{} = {} stays: still set by {}",
                    key.name(),
                    o.value,
                    holders(&o.holders)
                ),
            );
        }
        let Some(o) = self.held.remove(&key) else {
            return outcome(OverrideResult::Skipped, "nothing to undo".to_owned());
        };
        let now = key.get(config);
        if now != o.value {
            return outcome(
                OverrideResult::Kept,
                format!(
                    "{} was changed to {now} since the alert set {}: it stands",
                    key.name(),
                    o.value
                ),
            );
        }
        key.put(config, o.replaced);
        outcome(
            OverrideResult::Undone,
            format!("{} back to {} (from {now})", key.name(), o.replaced),
        )
    }

    /// A reload replaces the config file's `old_file` with `new_file`: the overrides of keys the reload left alone
    /// are laid over `new_file` (they stay in force), those of keys it set end (the reload's value stands, and the
    /// alerts' resolutions will leave it). Answers a line for each override that ended.
    pub fn rebase(&mut self, old_file: &Config, new_file: &mut Config) -> Vec<String> {
        let mut ended = Vec::new();
        let keys: Vec<SettingKey> = self.held.keys().copied().collect();
        for key in keys {
            let Some(o) = self.held.get(&key) else {
                continue;
            };
            let set_by_reload = key.get(old_file) != key.get(new_file);
            let doh_gone = o.value == SettingValue::Mode(ResolverMode::Doh)
                && new_file.resolver.doh.is_empty();
            if !set_by_reload && !doh_gone {
                key.put(new_file, o.value);
                continue;
            }
            let why = if set_by_reload {
                format!("the reload set {} = {}", key.name(), key.get(new_file))
            } else {
                format!(
                    "the reload left no [[resolver.doh]] endpoint: {} = {}",
                    key.name(),
                    key.get(new_file)
                )
            };
            if let Some(o) = self.held.remove(&key) {
                ended.push(format!(
                    "{why}; the value {} set by {} ends",
                    o.value,
                    holders(&o.holders)
                ));
                self.superseded
                    .extend(o.holders.into_iter().map(|r| (key, r)));
            }
        }
        ended
    }
}

/// The alerts, for a detail (`alert A, alert B`).
fn holders(h: &[Requester]) -> String {
    h.iter()
        .map(ToString::to_string)
        .collect::<Vec<_>>()
        .join(", ")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::DohEndpoint;

    fn alert(fp: &str) -> Requester {
        Requester::Alert {
            alert: format!("A{fp}"),
            fingerprint: fp.to_owned(),
        }
    }

    fn with_doh() -> Config {
        let mut c = Config::default();
        c.resolver.doh.push(DohEndpoint {
            url: url::Url::parse("https://dns.example/dns-query").unwrap(),
            bootstrap: None,
            ca_file: None,
        });
        c
    }

    #[test]
    fn a_setting_is_set_while_the_alert_fires_and_undone_when_it_resolves() {
        let mut o = SettingOverrides::default();
        let mut c = with_doh();
        let set = o.set(Setting::ResolverDoh, &alert("1"), &mut c);
        assert_eq!(
            (set.result, set.key),
            (OverrideResult::Applied, "resolver.mode")
        );
        assert!(set.detail.contains("(was \"detect\")"), "{}", set.detail);
        assert_eq!(c.resolver.mode, ResolverMode::Doh);
        assert_eq!(
            o.held().collect::<Vec<_>>(),
            [(
                "resolver.mode",
                SettingValue::Mode(ResolverMode::Doh),
                SettingValue::Mode(ResolverMode::Detect)
            )]
        );
        // Alertmanager sends a firing alert again: nothing changes.
        let again = o.set(Setting::ResolverDoh, &alert("1"), &mut c);
        assert_eq!(again.result, OverrideResult::Applied);
        assert!(again.detail.contains("already"), "{}", again.detail);
        let undone = o.unset(Setting::ResolverDoh, &alert("1"), &mut c);
        assert_eq!(undone.result, OverrideResult::Undone, "{}", undone.detail);
        assert_eq!(c.resolver.mode, ResolverMode::Detect);
        assert!(o.is_empty());
        // Resolved again (or never set): nothing to undo.
        let twice = o.unset(Setting::ResolverDoh, &alert("1"), &mut c);
        assert_eq!(twice.result, OverrideResult::Skipped);
        assert_eq!(c, with_doh());
    }

    #[test]
    fn two_alerts_on_one_setting_undo_it_when_the_last_resolves() {
        let mut o = SettingOverrides::default();
        let mut c = Config::default();
        c.politeness.per_host_concurrency = 8;
        c.fetch.concurrency = 64;
        let half = Setting::LowerConcurrency { factor: 0.5 };
        assert_eq!(
            o.set(half, &alert("1"), &mut c).result,
            OverrideResult::Applied
        );
        assert_eq!(
            (c.fetch.concurrency, c.politeness.per_host_concurrency),
            (32, 4)
        );
        // The second alert's factor applies to the configured value, not to the lowered one.
        let quarter = Setting::LowerConcurrency { factor: 0.25 };
        let second = o.set(quarter, &alert("2"), &mut c);
        assert_eq!(second.result, OverrideResult::Applied);
        assert_eq!(c.politeness.per_host_concurrency, 2);
        assert!(
            second.detail.contains("alert A1, alert A2"),
            "{}",
            second.detail
        );
        let first_gone = o.unset(half, &alert("1"), &mut c);
        assert_eq!(first_gone.result, OverrideResult::Kept);
        assert!(
            first_gone.detail.contains("still set by alert A2"),
            "{}",
            first_gone.detail
        );
        assert_eq!(c.politeness.per_host_concurrency, 2);
        let last = o.unset(quarter, &alert("2"), &mut c);
        assert_eq!(last.result, OverrideResult::Undone);
        assert_eq!(
            (c.fetch.concurrency, c.politeness.per_host_concurrency),
            (64, 8)
        );
        // At least one request at a time.
        c.politeness.per_host_concurrency = 3;
        o.set(
            Setting::LowerConcurrency { factor: 0.1 },
            &alert("3"),
            &mut c,
        );
        assert_eq!(c.politeness.per_host_concurrency, 1);
    }

    #[test]
    fn direct_fallback_on_and_off_share_one_key() {
        let mut o = SettingOverrides::default();
        let mut c = Config::default();
        assert!(!c.proxy.fallback_direct);
        let on = o.set(Setting::FallbackDirect(true), &alert("1"), &mut c);
        assert_eq!(
            (on.result, on.key),
            (OverrideResult::Applied, "proxy.fallback_direct")
        );
        let off = o.set(Setting::FallbackDirect(false), &alert("2"), &mut c);
        assert_eq!(off.result, OverrideResult::Applied);
        assert!(!c.proxy.fallback_direct);
        o.unset(Setting::FallbackDirect(true), &alert("1"), &mut c);
        let last = o.unset(Setting::FallbackDirect(false), &alert("2"), &mut c);
        assert_eq!(last.result, OverrideResult::Undone);
        assert!(!c.proxy.fallback_direct && o.is_empty());
    }

    #[test]
    fn a_setting_that_needs_nothing_or_cannot_be_had_is_skipped() {
        let mut o = SettingOverrides::default();
        let mut c = Config::default();
        let no_doh = o.set(Setting::ResolverDoh, &alert("1"), &mut c);
        assert_eq!(no_doh.result, OverrideResult::Skipped);
        assert!(no_doh.detail.contains("[[resolver.doh]]"));
        // Already so without any alert: no override, so its resolution changes nothing either.
        c.fetch.concurrency = 1;
        let one = o.set(
            Setting::LowerConcurrency { factor: 0.5 },
            &alert("1"),
            &mut c,
        );
        assert_eq!(one.result, OverrideResult::Skipped, "{}", one.detail);
        assert!(o.is_empty());
        c.fetch.concurrency = Config::default().fetch.concurrency;
        assert_eq!(c, Config::default());
    }

    #[test]
    fn a_reload_that_sets_the_key_ends_the_override_and_its_value_stands() {
        let mut o = SettingOverrides::default();
        let file = with_doh();
        let mut running = file.clone();
        o.set(Setting::ResolverDoh, &alert("1"), &mut running);
        // A reload that leaves the key alone keeps the override in force.
        let mut same = file.clone();
        same.politeness.min_delay = std::time::Duration::ZERO;
        let mut effective = same.clone();
        assert!(o.rebase(&file, &mut effective).is_empty());
        assert_eq!(effective.resolver.mode, ResolverMode::Doh);
        // A reload that sets it (even to the alert's value) ends it.
        let mut plain = same.clone();
        plain.resolver.mode = ResolverMode::Plain;
        let mut effective = plain.clone();
        let ended = o.rebase(&same, &mut effective);
        assert_eq!(effective, plain);
        assert!(
            ended.len() == 1 && ended[0].contains("the reload set resolver.mode = \"plain\""),
            "{ended:?}"
        );
        // The alert fires on: the reload's value stays; resolved: kept.
        let again = o.set(Setting::ResolverDoh, &alert("1"), &mut effective);
        assert_eq!(again.result, OverrideResult::Skipped);
        assert_eq!(effective.resolver.mode, ResolverMode::Plain);
        let kept = o.unset(Setting::ResolverDoh, &alert("1"), &mut effective);
        assert_eq!(kept.result, OverrideResult::Kept, "{}", kept.detail);
        assert!(kept.detail.contains("\"plain\" stands"), "{}", kept.detail);
        assert_eq!(effective.resolver.mode, ResolverMode::Plain);
        assert!(o.is_empty());
    }

    #[test]
    fn a_reload_without_doh_endpoints_ends_a_doh_override() {
        let mut o = SettingOverrides::default();
        let file = with_doh();
        let mut running = file.clone();
        o.set(Setting::ResolverDoh, &alert("1"), &mut running);
        let mut effective = Config::default();
        let ended = o.rebase(&file, &mut effective);
        assert_eq!(effective.resolver.mode, ResolverMode::Detect);
        assert!(
            ended[0].contains("no [[resolver.doh]] endpoint"),
            "{ended:?}"
        );
    }

    #[test]
    fn a_value_changed_behind_the_override_stands() {
        let mut o = SettingOverrides::default();
        let mut c = Config::default();
        o.set(Setting::FallbackDirect(true), &alert("1"), &mut c);
        c.proxy.fallback_direct = false;
        let kept = o.unset(Setting::FallbackDirect(true), &alert("1"), &mut c);
        assert_eq!(kept.result, OverrideResult::Kept);
        assert!(!c.proxy.fallback_direct);
    }
}
