use super::*;
use crawl_core::ownership::{Holder, Output, OwnershipError};

fn busy() -> OwnershipError {
    OwnershipError::Busy {
        output: Output::Jsonl,
        path: "/c/crawl.jsonl".into(),
        holder: Holder::default(),
    }
}

#[test]
fn every_failure_class_has_its_exit_status() {
    assert_eq!(EngineError::Usage("no seeds".into()).exit(), Exit::Refused);
    assert_eq!(EngineError::Refused(vec![busy()]).exit(), Exit::Refused);
    let locked = TreeError::Frontier(FrontierError::Locked(LockError::InUse {
        path: "/c/data".into(),
        holder: Some("12".into()),
    }));
    assert_eq!(EngineError::Tree(locked).exit(), Exit::Refused);
    let busy_warc = TreeError::Archive(WarcError::Busy {
        path: "/c/warc/x.warc.lock".into(),
    });
    assert_eq!(EngineError::Tree(busy_warc).exit(), Exit::Refused);
    let redis = TreeError::Frontier(FrontierError::Redis {
        target: "redis://127.0.0.1:1/0".into(),
        detail: "Connection refused".into(),
    });
    let e = EngineError::Tree(redis);
    assert_eq!(e.exit(), Exit::Failed);
    assert!(
        e.to_string()
            .ends_with("(the same command resumes once it can be reached)"),
        "{e}"
    );
    assert_eq!(EngineError::Fatal("x".into()).exit_code(), 1);
    let check = |refused: &[&str], failed: &[&str]| {
        EngineError::Check(CheckFailed {
            refused: refused.iter().map(|s| (*s).to_owned()).collect(),
            failed: failed.iter().map(|s| (*s).to_owned()).collect(),
        })
    };
    assert_eq!(check(&["a"], &["b"]).exit(), Exit::Refused);
    assert_eq!(check(&[], &["b"]).exit(), Exit::Failed);
    assert_eq!(check(&["a"], &["b"]).to_string(), "a\nb");
}

#[test]
fn a_jsonl_off_its_checkpoint_says_the_same_command_does_not_resume() {
    let e = EngineError::Tree(TreeError::Output(OutputError::CheckpointMismatch {
        path: "/c/crawl.jsonl".into(),
        detail: "byte 9 should end line 2 but is not a newline".into(),
    }));
    assert_eq!(e.exit(), Exit::Failed);
    let text = e.to_string();
    assert!(
        text.starts_with("output /c/crawl.jsonl: byte 9 should end line 2 but is not a newline"),
        "{text}"
    );
    assert!(
        text.contains("(the same command does not resume: ") && text.contains("--fresh"),
        "{text}"
    );
    // A refusal says nothing about resuming: nothing was started.
    let refused = EngineError::Refused(vec![busy()]).to_string();
    assert!(!refused.contains("resume"), "{refused}");
}

#[test]
fn the_table_has_a_line_per_status() {
    for code in ["  0 ", "  1 ", "  2 ", "  130 "] {
        assert_eq!(
            EXIT_STATUS.lines().filter(|l| l.starts_with(code)).count(),
            1,
            "{code:?} in\n{EXIT_STATUS}"
        );
    }
}
