//! The config reader: arbitrary TOML never panics; a config that loads loads again to an equal value and a reload
//! from it to itself changes no key; a config that does not load reports at least one error, each on one line with
//! a position inside the text.
#![no_main]

use crawl_core::config::Config;
use crawl_core::config::reload::plan;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let text = String::from_utf8_lossy(data);
    match Config::from_str(&text, "fuzz.toml") {
        Ok(config) => {
            let again =
                Config::from_str(&text, "fuzz.toml").expect("a config that loaded loads again");
            assert_eq!(again, config, "two loads of the same text differ");
            let plan = plan(&config, &again);
            assert!(plan.is_noop(), "reload to the same config changes {plan:?}");
        }
        Err(errors) => {
            assert!(errors.len() > 0, "an error without errors");
            let lines = text.split('\n').count();
            for e in &errors {
                assert!(
                    e.line >= 1 && e.line <= lines + 1,
                    "line {} of {lines}: {e}",
                    e.line
                );
                assert!(e.column >= 1, "column {}: {e}", e.column);
                assert!(
                    !e.message.is_empty() && !e.message.contains('\n'),
                    "message {:?}",
                    e.message
                );
                assert_eq!(e.origin, "fuzz.toml");
            }
        }
    }
});
