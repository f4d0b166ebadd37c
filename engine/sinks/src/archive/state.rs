//! The object store sink's local state in the sinks folder: `<sink>.manifest.jsonl`, one line per verified upload,
//! appended and fsynced (a torn last line from a crash is cut off when it is read), and `<sink>.upload`, the upload
//! in progress, replaced whole, so that a crash leaves a record of what to clean up.

use std::collections::HashMap;
use std::fs::{File, OpenOptions};
use std::io::Write;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::SinkError;
use crate::checkpoint::write_durably;

/// One verified upload: a line of the manifest.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ManifestEntry {
    /// The local file's name.
    pub file: String,
    /// Where it is (`s3://bucket/prefix/name`, `file:///dir/name`).
    pub location: String,
    pub bytes: u64,
    /// SHA-256 of the file (lowercase hex).
    pub sha256: String,
    /// The store's ETag of the object, when it gives one (S3: an MD5 or a multipart ETag).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub etag: Option<String>,
    /// RFC 3339, when the upload was verified.
    pub uploaded_at: String,
    /// The object was already there with the same size and checksum (an upload of an earlier run whose manifest
    /// line was lost): recorded, not sent again.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub existed: bool,
}

/// The manifest file and what it holds.
#[derive(Debug)]
pub(crate) struct Manifest {
    sink: String,
    path: PathBuf,
    entries: Vec<ManifestEntry>,
    by_file: HashMap<String, usize>,
    /// The file's bytes, for the copy in the store.
    text: Vec<u8>,
}

impl Manifest {
    /// Reads `path` (empty when missing). A last line without its newline is what a crash left in the middle of an
    /// append: it is cut off the file. Any other line that is not an entry is an error.
    pub(crate) fn open(sink: &str, path: &Path) -> Result<Manifest, SinkError> {
        let io = |e| SinkError::io(sink, path, e);
        let mut text = match std::fs::read(path) {
            Ok(t) => t,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Vec::new(),
            Err(e) => return Err(io(e)),
        };
        let whole = text.iter().rposition(|&b| b == b'\n').map_or(0, |i| i + 1);
        if whole < text.len() {
            tracing::warn!(sink = %sink, path = %path.display(), bytes = text.len() - whole,
                "manifest ends in a torn line, cut off");
            text.truncate(whole);
            let f = OpenOptions::new().write(true).open(path).map_err(io)?;
            f.set_len(whole as u64).map_err(io)?;
            f.sync_all().map_err(io)?;
        }
        let mut m = Manifest {
            sink: sink.to_owned(),
            path: path.to_owned(),
            entries: Vec::new(),
            by_file: HashMap::new(),
            text: Vec::new(),
        };
        for (n, line) in text.split(|&b| b == b'\n').enumerate() {
            if line.is_empty() {
                continue;
            }
            let e: ManifestEntry = serde_json::from_slice(line).map_err(|e| {
                io(std::io::Error::new(
                    std::io::ErrorKind::InvalidData,
                    format!("line {}: {e}", n + 1),
                ))
            })?;
            m.insert(e);
        }
        m.text = text;
        Ok(m)
    }

    fn insert(&mut self, e: ManifestEntry) {
        self.by_file.insert(e.file.clone(), self.entries.len());
        self.entries.push(e);
    }

    pub(crate) fn get(&self, file: &str) -> Option<&ManifestEntry> {
        self.by_file.get(file).map(|&i| &self.entries[i])
    }

    pub(crate) fn len(&self) -> usize {
        self.entries.len()
    }

    /// The whole manifest as it is on disk.
    pub(crate) fn text(&self) -> &[u8] {
        &self.text
    }

    /// Appends `e` as one line and makes it durable.
    pub(crate) fn append(&mut self, e: ManifestEntry) -> Result<(), SinkError> {
        let io = |err| SinkError::io(&self.sink, &self.path, err);
        let mut line = serde_json::to_vec(&e).map_err(|err| io(std::io::Error::other(err)))?;
        line.push(b'\n');
        let mut f = OpenOptions::new()
            .create(true)
            .append(true)
            .open(&self.path)
            .map_err(io)?;
        f.write_all(&line).map_err(io)?;
        f.sync_data().map_err(io)?;
        if self.text.is_empty()
            && let Some(dir) = self.path.parent()
        {
            // The file may be new: its name must be durable too.
            File::open(dir).and_then(|d| d.sync_all()).map_err(io)?;
        }
        self.text.extend_from_slice(&line);
        self.insert(e);
        Ok(())
    }
}

/// The upload in progress: enough to abort it after a crash.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct UploadState {
    /// The local file's name.
    pub(crate) file: String,
    /// The object's path in the store.
    pub(crate) location: String,
    /// The multipart upload's id; None for a store that stages a file of its own (a local folder).
    #[serde(default)]
    pub(crate) upload_id: Option<String>,
    /// Parts the store acknowledged.
    #[serde(default)]
    pub(crate) parts_done: usize,
}

/// The `<sink>.upload` file.
#[derive(Debug)]
pub(crate) struct UploadFile {
    sink: String,
    path: PathBuf,
}

impl UploadFile {
    pub(crate) fn new(sink: &str, path: PathBuf) -> UploadFile {
        UploadFile {
            sink: sink.to_owned(),
            path,
        }
    }

    /// What the file holds, None when there is none.
    pub(crate) fn read(&self) -> Result<Option<UploadState>, SinkError> {
        let io = |e| SinkError::io(&self.sink, &self.path, e);
        match std::fs::read(&self.path) {
            Ok(b) => serde_json::from_slice(&b)
                .map(Some)
                .map_err(|e| io(std::io::Error::new(std::io::ErrorKind::InvalidData, e))),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
            Err(e) => Err(io(e)),
        }
    }

    /// Makes `s` the durable record.
    pub(crate) fn store(&self, s: &UploadState) -> Result<(), SinkError> {
        let bytes = serde_json::to_vec(s)
            .map_err(|e| SinkError::io(&self.sink, &self.path, std::io::Error::other(e)))?;
        write_durably(&self.sink, &self.path, &bytes)
    }

    /// Removes the record (durably).
    pub(crate) fn clear(&self) -> Result<(), SinkError> {
        let io = |e| SinkError::io(&self.sink, &self.path, e);
        match std::fs::remove_file(&self.path) {
            Ok(()) => {}
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(()),
            Err(e) => return Err(io(e)),
        }
        if let Some(dir) = self.path.parent() {
            File::open(dir).and_then(|d| d.sync_all()).map_err(io)?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(file: &str) -> ManifestEntry {
        ManifestEntry {
            file: file.to_owned(),
            location: format!("s3://b/p/{file}"),
            bytes: 3,
            sha256: "ab".repeat(32),
            etag: Some("\"x\"".to_owned()),
            uploaded_at: "2026-01-01T00:00:00Z".to_owned(),
            existed: false,
        }
    }

    #[test]
    fn entries_survive_reopening_and_a_torn_last_line_is_cut_off() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("s.manifest.jsonl");
        let mut m = Manifest::open("s", &path).unwrap();
        assert_eq!(m.len(), 0);
        m.append(entry("a.warc.gz")).unwrap();
        m.append(entry("b.warc.gz")).unwrap();
        let whole = std::fs::read(&path).unwrap();
        assert_eq!(m.text(), &whole[..]);
        // A crash in the middle of the third append.
        let mut f = OpenOptions::new().append(true).open(&path).unwrap();
        f.write_all(b"{\"file\":\"c.wa").unwrap();
        drop(f);
        let m = Manifest::open("s", &path).unwrap();
        assert_eq!(m.len(), 2);
        assert_eq!(m.get("b.warc.gz"), Some(&entry("b.warc.gz")));
        assert!(m.get("c.warc.gz").is_none());
        assert_eq!(std::fs::read(&path).unwrap(), whole);
    }

    #[test]
    fn a_damaged_line_inside_is_an_error_naming_the_file_and_line() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("s.manifest.jsonl");
        std::fs::write(&path, "{}\n{\"file\":1}\n").unwrap();
        let e = Manifest::open("s", &path).unwrap_err().to_string();
        assert!(
            e.contains("s.manifest.jsonl") && e.contains("line 1"),
            "{e}"
        );
    }

    #[test]
    fn the_upload_record_is_stored_read_and_cleared() {
        let dir = tempfile::tempdir().unwrap();
        let f = UploadFile::new("s", dir.path().join("s.upload"));
        assert_eq!(f.read().unwrap(), None);
        let s = UploadState {
            file: "a.warc.gz".into(),
            location: "p/a.warc.gz".into(),
            upload_id: Some("id-1".into()),
            parts_done: 2,
        };
        f.store(&s).unwrap();
        assert_eq!(f.read().unwrap(), Some(s));
        f.clear().unwrap();
        f.clear().unwrap();
        assert_eq!(f.read().unwrap(), None);
    }
}
