//! File names (`PREFIX-TIMESTAMP-SERIAL-HOST.warc.gz`), the machine's host name, and the lock that keeps one
//! writer per directory, prefix and host.

use std::fs::{File, OpenOptions};
use std::path::Path;
use std::time::SystemTime;

use super::WarcError;

/// The TIMESTAMP part of a file name.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FileTimestamp {
    /// The UTC time the file is created, `YYYYMMDDhhmmss`.
    Now14,
    /// The UTC time the file is created with milliseconds, `YYYYMMDDhhmmssSSS` (Heritrix's form).
    Now17,
    /// These 14 or 17 digits for every file.
    Fixed(String),
}

/// The parts of a file name this writer owns: its prefix and host.
#[derive(Debug, Clone)]
pub(super) struct Naming {
    pub(super) prefix: String,
    pub(super) host: String,
}

impl Naming {
    pub(super) fn name(&self, timestamp: &str, serial: u32) -> String {
        format!(
            "{}-{}-{:05}-{}.warc.gz",
            self.prefix, timestamp, serial, self.host
        )
    }

    /// The serial of `name` when it is one of this writer's files.
    pub(super) fn serial(&self, name: &str) -> Option<u32> {
        let rest = name
            .strip_prefix(self.prefix.as_str())?
            .strip_prefix('-')?
            .strip_suffix(".warc.gz")?
            .strip_suffix(self.host.as_str())?
            .strip_suffix('-')?;
        let (ts, serial) = rest.split_once('-')?;
        let digits = |s: &str| !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit());
        if !(digits(ts)
            && (ts.len() == 14 || ts.len() == 17)
            && digits(serial)
            && serial.len() >= 5)
        {
            return None;
        }
        serial.parse().ok()
    }
}

pub(super) fn check_name_part(what: &str, s: &str) -> Result<(), WarcError> {
    let ok = !s.is_empty()
        && s.bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"-_.".contains(&b))
        && !s.starts_with('.');
    if ok {
        Ok(())
    } else {
        Err(WarcError::Config(format!(
            "{what} {s:?} must be letters, digits, '-', '_' or '.' (not starting with '.')"
        )))
    }
}

/// Takes the lock that keeps a second writer with the same prefix and host out of the directory (it would
/// reuse serials, and its open could remove this writer's newer files).
pub(super) fn lock_dir(dir: &Path, naming: &Naming) -> Result<File, WarcError> {
    let path = dir.join(format!("{}-{}.warc.lock", naming.prefix, naming.host));
    let file = OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open(&path)
        .map_err(|e| WarcError::Io {
            path: path.display().to_string(),
            source: e,
        })?;
    // A lock just released can still look held for a moment: a child process forked by another thread shares
    // the lock's open file until it execs. Retry briefly before calling the directory busy.
    for attempt in 0..LOCK_ATTEMPTS {
        match file.try_lock() {
            Ok(()) => return Ok(file),
            Err(std::fs::TryLockError::WouldBlock) if attempt + 1 < LOCK_ATTEMPTS => {
                std::thread::sleep(std::time::Duration::from_millis(10));
            }
            Err(std::fs::TryLockError::WouldBlock) => break,
            Err(std::fs::TryLockError::Error(e)) => {
                return Err(WarcError::Io {
                    path: path.display().to_string(),
                    source: e,
                });
            }
        }
    }
    Err(WarcError::Busy {
        path: path.display().to_string(),
    })
}

const LOCK_ATTEMPTS: u32 = 50;

/// `YYYYMMDDhhmmssSSS` in UTC.
pub(super) fn timestamp17(t: SystemTime) -> String {
    humantime::format_rfc3339_millis(t)
        .to_string()
        .bytes()
        .filter(u8::is_ascii_digit)
        .map(char::from)
        .collect()
}

/// The machine's host name (Linux: `/proc/sys/kernel/hostname`), else `$HOSTNAME`, else `localhost`; characters
/// a file name part may not hold become `-`.
pub fn machine_hostname() -> String {
    let raw = std::fs::read_to_string("/proc/sys/kernel/hostname")
        .ok()
        .map(|s| s.trim().to_string())
        .filter(|s| !s.is_empty())
        .or_else(|| std::env::var("HOSTNAME").ok().filter(|s| !s.is_empty()))
        .unwrap_or_else(|| "localhost".to_string());
    let clean: String = raw
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' || c == '_' || c == '.' {
                c
            } else {
                '-'
            }
        })
        .collect();
    let clean = clean.trim_start_matches('.');
    if clean.is_empty() {
        "localhost".to_string()
    } else {
        clean.to_string()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_follow_the_iipc_pattern_and_parse_back() {
        let n = Naming {
            prefix: "crawl-a".to_string(),
            host: "node-1.example".to_string(),
        };
        let name = n.name("20261203054000123", 7);
        assert_eq!(
            name,
            "crawl-a-20261203054000123-00007-node-1.example.warc.gz"
        );
        assert_eq!(n.serial(&name), Some(7));
        assert_eq!(
            n.serial("crawl-a-20261203054000-123456-node-1.example.warc.gz"),
            Some(123_456)
        );
        assert_eq!(
            n.serial("crawl-a-2026120305400-00007-node-1.example.warc.gz"),
            None
        );
        assert_eq!(
            n.serial("crawl-a-20261203054000123-007-node-1.example.warc.gz"),
            None
        );
        assert_eq!(
            n.serial("crawl-b-20261203054000123-00007-node-1.example.warc.gz"),
            None
        );
        assert_eq!(
            n.serial("crawl-a-20261203054000123-00007-node-2.example.warc.gz"),
            None
        );
        assert_eq!(
            n.serial("crawl-a-20261203054000123-00007-node-1.example.warc"),
            None
        );
        let t = std::time::UNIX_EPOCH + std::time::Duration::from_millis(1_796_276_400_123);
        assert_eq!(timestamp17(t), "20261203054000123");
        let h = machine_hostname();
        assert!(check_name_part("hostname", &h).is_ok(), "{h}");
    }
}
