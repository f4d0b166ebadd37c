//! Why a process could not take its data_dir (the lock itself is `crawl-store-embedded`'s `DirLock`).

/// Why the data_dir could not be locked.
#[derive(Debug, thiserror::Error)]
pub enum LockError {
    #[error(
        "frontier.data_dir: {path} is in use by another crawl-engine process{}; stop it, or give this crawl its own \
         frontier.data_dir",
        holder.as_ref().map(|p| format!(" (pid {p})")).unwrap_or_default()
    )]
    InUse {
        path: String,
        holder: Option<String>,
    },
    #[error("cannot lock data_dir {path}: {source}")]
    Io {
        path: String,
        source: std::io::Error,
    },
}
