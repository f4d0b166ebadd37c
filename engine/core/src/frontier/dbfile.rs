//! Creating the embedded frontier's database file.

use super::FrontierError;
use redb::Database;
use std::path::Path;

/// Creates an empty database under a temporary name and renames it into place, so a crash in the middle of
/// creation never leaves a half-written `frontier.redb` behind.
pub(super) fn create_atomically(path: &Path, cache_bytes: usize) -> Result<(), FrontierError> {
    let io = |source| FrontierError::Io {
        path: path.display().to_string(),
        source,
    };
    let tmp = path.with_extension("redb.creating");
    if tmp.exists() {
        std::fs::remove_file(&tmp).map_err(io)?;
    }
    drop(
        Database::builder()
            .set_cache_size(cache_bytes)
            .create(&tmp)?,
    );
    std::fs::File::open(&tmp)
        .and_then(|f| f.sync_all())
        .map_err(io)?;
    std::fs::rename(&tmp, path).map_err(io)?;
    if let Some(parent) = path.parent() {
        std::fs::File::open(parent)
            .and_then(|d| d.sync_all())
            .map_err(io)?;
    }
    Ok(())
}
