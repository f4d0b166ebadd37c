//! Optional tools (`redis-server`, `redis-cli`, warcio, ...): a test that needs one calls [`require`] (or
//! [`unavailable`] when it looked the tool up itself). Missing locally, the test skips with a note on stderr; under
//! `CI=true` the same test fails, so CI never passes by skipping.

use std::path::PathBuf;

/// True when running under CI (`CI=true`), where every optional tool is required.
pub fn on_ci() -> bool {
    std::env::var("CI").is_ok_and(|v| v == "true")
}

/// The program's path when it is an executable file in a directory of `PATH`.
pub fn on_path(program: &str) -> Option<PathBuf> {
    let paths = std::env::var_os("PATH")?;
    std::env::split_paths(&paths)
        .map(|d| d.join(program))
        .find(|p| p.is_file())
}

/// Says that `test` cannot run because `what` is missing (`hint`: how to get it): a panic under `CI=true`,
/// otherwise a note on stderr. Returns false, for `if !require(..) { return; }`.
pub fn unavailable(test: &str, what: &str, hint: &str) -> bool {
    let msg = format!("{test}: {what} not found ({hint})");
    if on_ci() {
        panic!("{msg}; CI=true requires it");
    }
    eprintln!("note: skipping {msg}");
    false
}

/// True when every program is on `PATH`; otherwise [`unavailable`] with the missing ones.
pub fn require(test: &str, programs: &[&str], hint: &str) -> bool {
    let missing: Vec<&str> = programs
        .iter()
        .copied()
        .filter(|p| on_path(p).is_none())
        .collect();
    missing.is_empty() || unavailable(test, &missing.join(" and "), hint)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_program_is_found_on_path_and_a_made_up_one_is_not() {
        assert!(on_path("sh").is_some());
        assert!(on_path("no-such-program-crawl-test-kit").is_none());
        assert!(require("tool lookup", &["sh"], "a shell"));
    }

    #[test]
    fn a_missing_program_skips_locally_and_fails_under_ci() {
        let missing = std::panic::catch_unwind(|| {
            require("tool lookup", &["no-such-program-crawl-test-kit"], "none")
        });
        match missing {
            Ok(ran) => assert!(!ran && !on_ci()),
            Err(_) => assert!(on_ci()),
        }
    }
}
