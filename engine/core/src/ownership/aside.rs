//! Where `--fresh` moves an old output: beside it, its name with a UTC timestamp suffix.

use std::path::{Path, PathBuf};
use std::time::SystemTime;

/// `PATH.YYYYMMDDTHHMMSSZ` for the time `at`, with `-2`, `-3`, ... for the attempts after the first (the caller
/// tries the next one while the name is taken). None when `path` has no file name to suffix.
pub fn aside_path(path: &Path, at: SystemTime, attempt: u32) -> Option<PathBuf> {
    let name = path.file_name()?;
    let stamp: String = humantime::format_rfc3339_seconds(at)
        .to_string()
        .chars()
        .filter(|c| !matches!(c, '-' | ':'))
        .collect();
    let mut out = name.to_owned();
    out.push(".");
    out.push(&stamp);
    if attempt > 0 {
        out.push(format!("-{}", attempt + 1));
    }
    Some(path.with_file_name(out))
}
