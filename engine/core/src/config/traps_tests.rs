//! `[traps]`: defaults, values, and validation errors naming the key.

use super::tests::{errors, ok, only_error};
use super::*;

#[test]
fn defaults_are_safe_for_real_crawls() {
    let t = ok("").traps;
    assert_eq!(t, TrapsConfig::default());
    assert_eq!((t.max_urls_per_host, t.max_urls_per_pattern), (0, 0));
    assert_eq!(t.max_repeated_segments, 3);
    assert_eq!(
        (t.max_path_bytes, t.max_query_bytes, t.max_query_params),
        (1024, 1024, 32)
    );
    assert!(t.calendar);
    assert_eq!((t.calendar_past_years, t.calendar_future_years), (30, 3));
    assert_eq!(t.strip_params, ["jsessionid", "phpsessid", "sid", "utm_*"]);
    // An empty section is the defaults too; an empty list strips nothing.
    assert_eq!(ok("[traps]\n").traps, TrapsConfig::default());
    assert!(
        ok("[traps]\nstrip_params = []\n")
            .traps
            .strip_params
            .is_empty()
    );
}

#[test]
fn zero_turns_limits_off() {
    let t = ok(
        "[traps]\nmax_repeated_segments = 0\nmax_path_bytes = 0\nmax_query_bytes = 0\n\
                max_query_params = 0\ncalendar_past_years = 0\ncalendar_future_years = 0\n",
    )
    .traps;
    assert_eq!(t.max_repeated_segments, 0);
    assert_eq!(
        (t.max_path_bytes, t.max_query_bytes, t.max_query_params),
        (0, 0, 0)
    );
    assert_eq!((t.calendar_past_years, t.calendar_future_years), (0, 0));
}

#[test]
fn bad_values_name_the_key() {
    let (l, c, m, k) = only_error("[traps]\nmax_urls_per_host = -1\n");
    assert_eq!((l, c, k), (2, 1, ErrorKind::InvalidValue));
    assert!(m.starts_with("`traps.max_urls_per_host`"), "{m}");

    let (_, _, m, _) = only_error("[traps]\nmax_urls_per_pattern = \"10\"\n");
    assert_eq!(
        m,
        "`traps.max_urls_per_pattern`: expected an integer, found string"
    );

    let (_, _, m, _) = only_error("[traps]\ncalendar = 1\n");
    assert_eq!(m, "`traps.calendar`: expected a boolean, found integer");

    let (l, _, m, k) = only_error("[traps]\n\ncalendar_future_years = 5000\n");
    assert_eq!((l, k), (3, ErrorKind::InvalidValue));
    assert_eq!(m, "`traps.calendar_future_years`: at most 1000 years");

    let (_, _, m, _) = only_error("[traps]\ncalendar_past_years = 1001\n");
    assert_eq!(m, "`traps.calendar_past_years`: at most 1000 years");

    let (l, c, m, k) = only_error("[traps]\nstrip_params = [\"sid\", \"a*b\"]\n");
    assert_eq!((l, c, k), (2, 24, ErrorKind::InvalidValue));
    assert!(
        m.starts_with("`traps.strip_params[1]`: `a*b` is not a parameter name"),
        "{m}"
    );

    let (_, _, m, _) = only_error("[traps]\nstrip_params = [\"*\"]\n");
    assert!(
        m.starts_with("`traps.strip_params[0]`: `*` names no parameter"),
        "{m}"
    );

    let (_, _, m, _) = only_error("[traps]\nstrip_params = [\"a=b\"]\n");
    assert!(m.contains("`=` not allowed"), "{m}");

    let (_, _, m, _) = only_error("[traps]\nmax_url_per_host = 3\n");
    assert!(m.contains("max_urls_per_host"), "{m}");

    // Every problem at once, each naming its key.
    let all =
        errors("[traps]\nmax_path_bytes = -5\nstrip_params = [\"\"]\ncalendar_past_years = 2000\n");
    let text: Vec<String> = all.iter().map(|e| e.to_string()).collect();
    assert_eq!(all.len(), 3, "{text:?}");
    for key in ["max_path_bytes", "strip_params[0]", "calendar_past_years"] {
        assert!(
            text.iter().any(|t| t.contains(&format!("`traps.{key}`"))),
            "{key}: {text:?}"
        );
    }
}

#[test]
fn trap_keys_need_a_restart() {
    let old = Config::default();
    let mut new = Config::default();
    new.traps.max_urls_per_pattern = 10;
    new.traps.strip_params.clear();
    let plan = reload::plan(&old, &new);
    assert!(plan.rejected());
    assert_eq!(
        plan.restart_only,
        ["traps.max_urls_per_pattern", "traps.strip_params"]
    );
}
