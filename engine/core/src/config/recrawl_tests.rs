//! `[recrawl]`: defaults, values, rules, and validation errors naming the key.

use std::time::Duration;

use super::tests::{errors, ok, only_error};
use super::*;

#[test]
fn defaults_are_off_with_nutch_rates() {
    let r = ok("").recrawl;
    assert_eq!(r, RecrawlConfig::default());
    assert!(!r.enabled && r.adaptive);
    assert_eq!(r.interval, Duration::from_secs(86_400));
    assert_eq!(r.min_interval, Duration::from_secs(60));
    assert_eq!(r.max_interval, Duration::from_secs(30 * 86_400));
    assert_eq!((r.inc_rate, r.dec_rate), (0.2, 0.3));
    assert_eq!(r.host_revisits_per_minute, 0);
    assert!(r.rules.is_empty());
    assert_eq!(ok("[recrawl]\n").recrawl, RecrawlConfig::default());
}

#[test]
fn every_key_and_rule_is_read() {
    let r = ok(
        "[recrawl]\nenabled = true\ninterval_s = 600\nmin_interval_s = 300\nmax_interval_s = 7200\n\
         adaptive = false\ninc_rate = 0.5\ndec_rate = 1e-1\nhost_revisits_per_minute = 6\n\
         [[recrawl.rules]]\npattern = '/live/'\ninterval_s = 5\n\
         [[recrawl.rules]]\npattern = '\\.pdf$'\ninterval_s = 7200\nadaptive = true\n",
    )
    .recrawl;
    assert!(r.enabled && !r.adaptive);
    assert_eq!(
        (r.interval, r.min_interval, r.max_interval),
        (
            Duration::from_secs(600),
            Duration::from_secs(300),
            Duration::from_secs(7200)
        )
    );
    assert_eq!(
        (r.inc_rate, r.dec_rate, r.host_revisits_per_minute),
        (0.5, 0.1, 6)
    );
    assert_eq!(r.rules.len(), 2);
    // A rule below the global minimum is allowed (a hot page); adaptive absent follows the section.
    assert_eq!(r.rules[0].pattern.as_str(), "/live/");
    assert_eq!(
        (r.rules[0].interval, r.rules[0].adaptive),
        (Duration::from_secs(5), None)
    );
    assert_eq!(r.rules[1].adaptive, Some(true));
    assert!(r.rules[1].pattern.is_match("https://a.example/x.pdf"));
}

#[test]
fn bounds_and_cross_checks_name_the_key() {
    let (l, c, m, k) = only_error("[recrawl]\nmin_interval_s = 0\n");
    assert_eq!((l, c, k), (2, 1, ErrorKind::InvalidValue));
    assert!(m.starts_with("`recrawl.min_interval_s`"), "{m}");

    let (_, _, m, _) = only_error("[recrawl]\ninterval_s = 40000000\n");
    assert!(m.starts_with("`recrawl.interval_s`"), "{m}");

    let (l, _, m, _) = only_error("[recrawl]\nmin_interval_s = 120\ninterval_s = 60\n");
    assert_eq!(l, 2);
    assert_eq!(
        m,
        "`recrawl.min_interval_s` (120) must not exceed `recrawl.interval_s` (60)"
    );
    let (l, _, m, _) = only_error("[recrawl]\n\nmax_interval_s = 3600\n");
    assert_eq!(l, 3, "reported at the key that is written");
    assert_eq!(
        m,
        "`recrawl.interval_s` (86400) must not exceed `recrawl.max_interval_s` (3600)"
    );

    for (text, key) in [
        ("inc_rate = 0", "inc_rate"),
        ("inc_rate = 1.0", "inc_rate"),
        ("dec_rate = 0.0", "dec_rate"),
        ("dec_rate = 1", "dec_rate"),
    ] {
        let (_, _, m, k) = only_error(&format!("[recrawl]\n{text}\n"));
        assert_eq!(k, ErrorKind::InvalidValue);
        assert!(
            m.starts_with(&format!("`recrawl.{key}`: must be above 0 and below 1")),
            "{text}: {m}"
        );
    }
    let (_, _, m, _) = only_error("[recrawl]\ndec_rate = 1.5\n");
    assert!(
        m.starts_with("`recrawl.dec_rate`: must be from 0.0 to 1.0"),
        "{m}"
    );

    let (_, _, m, _) = only_error("[recrawl]\nenabled = \"yes\"\n");
    assert_eq!(m, "`recrawl.enabled`: expected a boolean, found string");
}

#[test]
fn rules_need_a_pattern_and_an_interval_within_max() {
    let (l, _, m, _) = only_error("[recrawl]\n[[recrawl.rules]]\ninterval_s = 60\n");
    assert_eq!(l, 2, "at the rule");
    assert_eq!(m, "`recrawl.rules[0]`: missing required key `pattern`");

    let (_, _, m, _) = only_error("[recrawl]\n[[recrawl.rules]]\npattern = 'a'\n");
    assert_eq!(m, "`recrawl.rules[0]`: missing required key `interval_s`");

    let (l, c, m, _) = only_error("[[recrawl.rules]]\npattern = '('\ninterval_s = 60\n");
    assert_eq!((l, c), (2, 1));
    assert!(m.starts_with("`recrawl.rules[0].pattern`"), "{m}");

    let (l, _, m, _) = only_error(
        "[recrawl]\nmax_interval_s = 86400\n[[recrawl.rules]]\npattern = 'a'\ninterval_s = 90000\n",
    );
    assert_eq!(l, 5);
    assert_eq!(
        m,
        "`recrawl.rules[0].interval_s`: 90000 is above `recrawl.max_interval_s` (86400)"
    );

    let (_, _, m, _) = only_error("[[recrawl.rules]]\npattern = 'a'\ninterval_s = 0\n");
    assert!(m.starts_with("`recrawl.rules[0].interval_s`"), "{m}");
}

#[test]
fn unknown_keys_are_suggested() {
    let (l, c, m, k) = only_error("[recrawl]\ninterval = 60\n");
    assert_eq!((l, c, k), (2, 1, ErrorKind::UnknownKey));
    assert_eq!(
        m,
        "unknown key `recrawl.interval`; did you mean `interval_s`?"
    );

    let (_, _, m, _) =
        only_error("[[recrawl.rules]]\npattern = 'a'\ninterval_s = 60\nadaptiv = false\n");
    assert_eq!(
        m,
        "unknown key `recrawl.rules[0].adaptiv`; did you mean `adaptive`?"
    );

    let (_, _, m, _) = only_error("[recrawll]\n");
    assert_eq!(m, "unknown section `recrawll`; did you mean `recrawl`?");

    // Every problem at once.
    let all = errors("[recrawl]\ninc_rate = 2\nmin_interval_s = -1\n[[recrawl.rules]]\n");
    assert_eq!(all.len(), 4, "{all:?}");
}
