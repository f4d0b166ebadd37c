//! One process per data_dir: an exclusive advisory lock on `data_dir/LOCK`, held for the life of the process and
//! released by the OS even after `kill -9`.

use std::fs::{File, OpenOptions};
use std::io::{Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};

use crawl_core::frontier::LockError;

/// The held lock; dropping it releases the lock.
#[derive(Debug)]
pub struct DirLock {
    _file: File,
    dir: PathBuf,
    path: PathBuf,
}

impl DirLock {
    /// Creates `dir` if needed and takes its lock, or says who holds it.
    pub fn acquire(dir: &Path) -> Result<DirLock, LockError> {
        let io = |source| LockError::Io {
            path: dir.display().to_string(),
            source,
        };
        std::fs::create_dir_all(dir).map_err(io)?;
        let path = dir.join("LOCK");
        let mut file = OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .open(&path)
            .map_err(io)?;
        match file.try_lock() {
            Ok(()) => {}
            Err(std::fs::TryLockError::WouldBlock) => {
                let mut holder = String::new();
                let _ = file.read_to_string(&mut holder);
                let holder = holder.trim().to_owned();
                return Err(LockError::InUse {
                    path: dir.display().to_string(),
                    holder: (!holder.is_empty()).then_some(holder),
                });
            }
            Err(std::fs::TryLockError::Error(e)) => return Err(io(e)),
        }
        file.set_len(0).map_err(io)?;
        file.seek(SeekFrom::Start(0)).map_err(io)?;
        write!(file, "{}", std::process::id()).map_err(io)?;
        Ok(DirLock {
            _file: file,
            dir: dir.to_path_buf(),
            path,
        })
    }

    /// The lock file.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The data_dir it locks.
    pub fn dir(&self) -> &Path {
        &self.dir
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn second_lock_on_same_dir_is_refused_until_released() {
        let dir = tempfile::tempdir().unwrap();
        let first = DirLock::acquire(dir.path()).unwrap();
        let err = DirLock::acquire(dir.path()).unwrap_err();
        let msg = err.to_string();
        assert!(
            msg.contains("in use by another crawl-engine process"),
            "{msg}"
        );
        assert!(msg.contains(&std::process::id().to_string()), "{msg}");
        drop(first);
        assert!(DirLock::acquire(dir.path()).is_ok());
    }
}

/// The identity of the process that works in `dir` (it holds the dir's lock): read from `dir/process-id`, or made
/// once (the host name and 64 random bits) and stored there, so a restarted process is the same member of a
/// shared crawl and finds its pending records again.
pub fn process_id(dir: &Path) -> Result<String, LockError> {
    let path = dir.join("process-id");
    let io = |source| LockError::Io {
        path: path.display().to_string(),
        source,
    };
    match std::fs::read_to_string(&path) {
        Ok(s) if !s.trim().is_empty() => return Ok(s.trim().to_owned()),
        Ok(_) => {}
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
        Err(e) => return Err(io(e)),
    }
    let host = std::fs::read_to_string("/proc/sys/kernel/hostname")
        .ok()
        .map(|h| {
            h.trim()
                .chars()
                .filter(|c| c.is_ascii_alphanumeric() || *c == '-' || *c == '.')
                .take(40)
                .collect::<String>()
        })
        .filter(|h| !h.is_empty())
        .unwrap_or_else(|| "host".to_owned());
    let id = format!("{host}-{:016x}", random_u64());
    let tmp = dir.join("process-id.tmp");
    let mut f = File::create(&tmp).map_err(io)?;
    f.write_all(id.as_bytes()).map_err(io)?;
    f.sync_all().map_err(io)?;
    std::fs::rename(&tmp, &path).map_err(io)?;
    Ok(id)
}

/// 64 bits from the standard library's randomly seeded hasher, the time and the process id.
pub(crate) fn random_u64() -> u64 {
    use std::hash::{BuildHasher, Hasher};
    let mut h = std::collections::hash_map::RandomState::new().build_hasher();
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos())
        .unwrap_or(0);
    h.write_u128(now);
    h.write_u32(std::process::id());
    h.finish()
}

#[cfg(test)]
mod id_tests {
    use super::*;

    #[test]
    fn a_process_id_is_made_once_and_kept() {
        let dir = tempfile::tempdir().unwrap();
        let a = process_id(dir.path()).unwrap();
        assert!(a.len() > 17 && a.contains('-'), "{a}");
        assert_eq!(process_id(dir.path()).unwrap(), a);
        let other = tempfile::tempdir().unwrap();
        assert_ne!(process_id(other.path()).unwrap(), a);
    }
}
