//! The spool: commits kept on disk while Redis is unreachable, and their replay at the next start.

use super::call::Call;

/// Commits kept on disk while Redis is unreachable, one file per commit: the exact script calls, replayed in order
/// at the next start. Every script is idempotent (an apply carries its nonce, and a shard whose lease has passed to
/// another process refuses it: that process redoes the work), so a replay of a commit that did reach Redis changes
/// nothing.
#[derive(Debug, Clone)]
pub struct Spool {
    pub(super) dir: std::path::PathBuf,
}

const SPOOL_MAGIC: &[u8] = b"crawl-engine spool 1\n";

impl Spool {
    /// Writes `calls` to a new file and fsyncs it (and the directory).
    pub fn write(&self, calls: &[Call]) -> std::io::Result<std::path::PathBuf> {
        use std::io::Write;
        std::fs::create_dir_all(&self.dir)?;
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_nanos())
            .unwrap_or(0);
        let path = self.dir.join(format!("{nanos:032}.commit"));
        let mut buf = Vec::from(SPOOL_MAGIC);
        let put = |buf: &mut Vec<u8>, b: &[u8]| {
            buf.extend_from_slice(&(b.len() as u64).to_le_bytes());
            buf.extend_from_slice(b);
        };
        put(&mut buf, &(calls.len() as u64).to_le_bytes());
        for c in calls {
            put(&mut buf, c.script.get_hash().as_bytes());
            put(&mut buf, c.key.as_bytes());
            put(&mut buf, &(c.args.len() as u64).to_le_bytes());
            for a in &c.args {
                put(&mut buf, a);
            }
        }
        let tmp = path.with_extension("tmp");
        let mut f = std::fs::File::create(&tmp)?;
        f.write_all(&buf)?;
        f.sync_all()?;
        std::fs::rename(&tmp, &path)?;
        std::fs::File::open(&self.dir)?.sync_all()?;
        Ok(path)
    }

    /// Removes files a crash left half written (never renamed to a spooled commit, so never sent).
    pub fn remove_partial(&self) -> std::io::Result<()> {
        match std::fs::read_dir(&self.dir) {
            Ok(rd) => {
                for e in rd {
                    let p = e?.path();
                    if p.extension().is_some_and(|x| x == "tmp") {
                        tracing::warn!(path = %p.display(), "half-written spooled commit removed (it was never sent)");
                        std::fs::remove_file(&p)?;
                    }
                }
                Ok(())
            }
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
            Err(e) => Err(e),
        }
    }

    /// The spooled commits, oldest first.
    pub fn pending(&self) -> std::io::Result<Vec<std::path::PathBuf>> {
        let mut out = Vec::new();
        match std::fs::read_dir(&self.dir) {
            Ok(rd) => {
                for e in rd {
                    let p = e?.path();
                    if p.extension().is_some_and(|x| x == "commit") {
                        out.push(p);
                    }
                }
            }
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => return Err(e),
        }
        out.sort();
        Ok(out)
    }

    /// Reads one spooled commit back (None: the file is not a whole spooled commit, e.g. cut by a crash while it
    /// was written, so nothing of it had been sent either).
    pub fn read(path: &std::path::Path) -> std::io::Result<Option<Vec<Call>>> {
        let data = std::fs::read(path)?;
        Ok(parse_spool(&data))
    }
}

fn parse_spool(data: &[u8]) -> Option<Vec<Call>> {
    let mut rest = data.strip_prefix(SPOOL_MAGIC)?;
    let mut take = || -> Option<&[u8]> {
        let n = usize::try_from(u64::from_le_bytes(rest.get(..8)?.try_into().ok()?)).ok()?;
        let b = rest.get(8..8 + n)?;
        rest = &rest[8 + n..];
        Some(b)
    };
    let count = u64::from_le_bytes(take()?.try_into().ok()?);
    let mut calls = Vec::new();
    for _ in 0..count {
        let hash = std::str::from_utf8(take()?).ok()?.to_owned();
        let script = super::scripts::by_hash(&hash)?;
        let key = std::str::from_utf8(take()?).ok()?.to_owned();
        let nargs = u64::from_le_bytes(take()?.try_into().ok()?);
        let mut c = Call::new(script, key);
        for _ in 0..nargs {
            c.args.push(take()?.to_vec());
        }
        calls.push(c);
    }
    Some(calls)
}
