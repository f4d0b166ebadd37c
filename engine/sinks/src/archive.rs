//! The object store sink: closed WARC files to S3 (or an S3-compatible server), a local folder, or memory, each
//! file uploaded once, verified, and recorded in a manifest.
//!
//! Where: `url` is `s3://bucket/prefix` (with `endpoint`, `region`, `allow_http` and the credentials from the
//! config, else from the usual `AWS_*` environment variables), `file:///dir`, or `memory://` (for tests). A file
//! goes to `<prefix>/<file name>`: in one put below `multipart_threshold`, in parts of `part_size` above it.
//!
//! Verified: after the upload a HEAD must show the file's size and, where the store offers a checksum, the file's:
//! S3's ETag is the MD5 of a single put, and for a multipart upload the MD5 of the parts' MD5s with the number of
//! parts, which this computes too. A local folder or memory has no content checksum in its metadata: the object is
//! read back and its SHA-256 compared.
//!
//! Exactly once: the manifest (`<sink>.manifest.jsonl` in the state folder, one line per verified upload, and a copy
//! at `<prefix>/manifest.jsonl` in the store) says what is done; a file in it is not sent again, and a file whose
//! object is already in the store with the same size and checksum (an upload whose manifest line was lost) is
//! recorded without sending it again. A different object under the same name is never overwritten: that is a
//! `Setup` error for the operator. (With KMS encryption S3's ETags are no MD5s: an upload of this sink is then
//! checked by its size and the ETag the store gave it, and an object found already there by its size alone
//! cannot be told from another one, so it is reported as a different object.)
//!
//! Crashes: a multipart upload is recorded in `<sink>.upload` (its id, fsynced) before its first part. A failed
//! upload is aborted at once; when even the abort fails (the store is away), or the process died, the record stays
//! and the upload is aborted at the next [`ArchiveStore::open`] or [`ArchiveStore::upload`], so none is left
//! dangling. (Between starting an upload and recording its id there is one round trip in which a crash leaves an
//! upload nobody knows; a bucket lifecycle rule that aborts incomplete multipart uploads covers that.)
//!
//! Schemes other than these (`gs://`, `az://`, ...) are not built in: [`ArchiveStore::open`] says so.

mod digest;
mod http;
mod state;

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use bytes::Bytes;
use crawl_core::config::{ObjectStoreSink, SecretUrl, SinkConfig};
use futures_util::StreamExt as _;
use object_store::aws::{AmazonS3, AmazonS3Builder, AmazonS3ConfigKey};
use object_store::client::{HttpError, HttpErrorKind};
use object_store::local::LocalFileSystem;
use object_store::memory::InMemory;
use object_store::multipart::{MultipartStore, PartId};
use object_store::path::Path as ObjPath;
use object_store::{
    BackoffConfig, ClientOptions, ObjectStore, ObjectStoreExt as _, PutPayload, RetryConfig,
};
use tokio::io::AsyncReadExt as _;

use crate::SinkError;
use digest::{EtagCheck, FileDigest};
pub use state::ManifestEntry;
use state::{Manifest, UploadFile, UploadState};

const KIND: &str = "object_store";
/// The name of the manifest's copy in the store, under the prefix.
pub const MANIFEST_OBJECT: &str = "manifest.jsonl";
/// Retries of one request inside `object_store` (the sink's loop retries the whole upload after that).
const REQUEST_RETRIES: usize = 3;
/// S3's most parts in one multipart upload.
const MAX_PARTS: usize = 10_000;
/// The longest error detail kept from the store's answer.
const DETAIL_MAX: usize = 400;

/// What one [`ArchiveStore::upload`] did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Uploaded {
    /// Where the file is (`s3://bucket/prefix/name`, `file:///dir/name`, `memory:///prefix/name`).
    pub location: String,
    pub bytes: u64,
    /// The file's SHA-256 (lowercase hex).
    pub checksum: String,
    /// Nothing was sent: the file was in the manifest already, or its object was in the store already.
    pub existed: bool,
}

/// An object store for closed files, with its manifest and upload record; see the module documentation.
pub struct ArchiveStore {
    sink: String,
    backend: Backend,
    /// Where the objects go, inside the store.
    prefix: ObjPath,
    /// The store's part of a location (`s3://bucket`, `file://`, `memory://`).
    base: String,
    /// The setting and target a connection failure names.
    reach: (&'static str, String),
    /// The URL as shown (no password).
    shown: String,
    timeout: Duration,
    multipart_threshold: u64,
    part_size: usize,
    delete_local: bool,
    manifest: Manifest,
    upload_file: UploadFile,
    /// The manifest's copy in the store lags the local one.
    manifest_dirty: bool,
    /// Credentials, blanked out of any error detail the store's answers bring.
    secrets: Vec<String>,
}

impl std::fmt::Debug for ArchiveStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ArchiveStore")
            .field("sink", &self.sink)
            .field("url", &self.shown)
            .field("prefix", &self.prefix.as_ref())
            .field("manifest", &self.manifest.len())
            .finish_non_exhaustive()
    }
}

/// The store behind an [`ArchiveStore`].
#[derive(Debug, Clone)]
enum Backend {
    /// S3's ETags are MD5s; multipart uploads have ids to record and abort.
    S3(Arc<AmazonS3>),
    /// Multipart uploads with ids (of this process only); no content checksum in the metadata.
    Memory(Arc<InMemory>),
    /// A folder: every write goes to a staging file (`<name>#<n>`) renamed into place, fsynced.
    Local(Arc<LocalFileSystem>),
}

impl Backend {
    fn store(&self) -> &dyn ObjectStore {
        match self {
            Backend::S3(s) => s.as_ref(),
            Backend::Memory(s) => s.as_ref(),
            Backend::Local(s) => s.as_ref(),
        }
    }

    fn multipart(&self) -> Option<&dyn MultipartStore> {
        match self {
            Backend::S3(s) => Some(s.as_ref()),
            Backend::Memory(s) => Some(s.as_ref()),
            Backend::Local(_) => None,
        }
    }
}

/// What an object already in the store is to the local file.
enum Remote {
    Absent,
    Same {
        etag: Option<String>,
    },
    /// `why` says what differs; `etag` is the object's, when its size is the file's and only the ETag differs.
    Different {
        why: String,
        etag: Option<String>,
    },
}

/// How an object-store error came about.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Failure {
    /// No answer: connecting failed, the connection broke, or the time ran out.
    Transport(HttpErrorKind),
    /// The store answered with this status.
    Status(u16),
    NotFound,
    Denied,
    /// Anything else (a local folder's I/O error, an answer that could not be read).
    Other,
}

impl Failure {
    fn of(e: &object_store::Error) -> Failure {
        match e {
            object_store::Error::NotFound { .. } => return Failure::NotFound,
            object_store::Error::PermissionDenied { .. }
            | object_store::Error::Unauthenticated { .. } => return Failure::Denied,
            _ => {}
        }
        let mut source: Option<&(dyn std::error::Error + 'static)> = Some(e);
        while let Some(s) = source {
            if let Some(h) = s.downcast_ref::<HttpError>() {
                return Failure::Transport(h.kind());
            }
            source = s.source();
        }
        // `object_store` does not expose the status of every failed request as a value; its message carries it.
        let text = e.to_string();
        text.find("status code: ")
            .and_then(|i| text.get(i + 13..i + 16))
            .and_then(|s| s.parse().ok())
            .map_or(Failure::Other, Failure::Status)
    }
}

impl ArchiveStore {
    /// Builds the store, checks it answers (a list under the prefix: no answer is `Unreachable` naming `endpoint`
    /// or `url`; a missing bucket, denied credentials or any other refusal is `Setup` naming `url`), reads its
    /// local state in `state_dir` (`<sink>.manifest.jsonl`, `<sink>.upload`) and aborts an upload a crash left.
    pub async fn open(
        sink: &SinkConfig,
        cfg: &ObjectStoreSink,
        state_dir: &Path,
    ) -> Result<ArchiveStore, SinkError> {
        let name = sink.name.as_str();
        let built = build(sink, cfg)?;
        std::fs::create_dir_all(state_dir).map_err(|e| SinkError::io(name, state_dir, e))?;
        let manifest = Manifest::open(name, &state_dir.join(format!("{name}.manifest.jsonl")))?;
        let reach = match &cfg.endpoint {
            Some(e) => (
                "endpoint",
                SecretUrl::parse(e).map_or_else(|_| "***".to_owned(), |u| u.to_string()),
            ),
            None => ("url", cfg.url.to_string()),
        };
        let mut s = ArchiveStore {
            sink: name.to_owned(),
            backend: built.backend,
            prefix: built.prefix,
            base: built.base,
            reach,
            shown: cfg.url.to_string(),
            timeout: sink.timeout,
            multipart_threshold: cfg.multipart_threshold,
            part_size: cfg.part_size,
            delete_local: cfg.delete_local,
            manifest_dirty: manifest.len() > 0,
            manifest,
            upload_file: UploadFile::new(name, state_dir.join(format!("{name}.upload"))),
            secrets: built.secrets,
        };
        s.check().await?;
        s.settle_pending().await.map_err(|e| match e {
            SinkError::Transient { sink, detail } => SinkError::Unreachable {
                sink,
                kind: KIND,
                key: s.reach.0,
                target: s.reach.1.clone(),
                detail,
            },
            e => e,
        })?;
        tracing::info!(sink = %s.sink, url = %s.shown, manifest = s.manifest.len(), "object store ready");
        Ok(s)
    }

    /// True when `file_name` is in the manifest (uploaded and verified).
    pub fn uploaded(&self, file_name: &str) -> bool {
        self.manifest.get(file_name).is_some()
    }

    /// The manifest's entry of `file_name`.
    pub fn entry(&self, file_name: &str) -> Option<&ManifestEntry> {
        self.manifest.get(file_name)
    }

    /// The number of files in the manifest.
    pub fn manifest_len(&self) -> usize {
        self.manifest.len()
    }

    /// Where `file_name` goes in the store (`s3://bucket/prefix/name`, ...).
    pub fn location_of(&self, file_name: &str) -> String {
        self.location(&self.prefix.clone().join(file_name))
    }

    /// Uploads the closed file `path` to `<prefix>/<file name>` (one put below `multipart_threshold`, parts of
    /// `part_size` above it; a multipart upload is recorded in `<sink>.upload` before its first part and aborted on
    /// any error), verifies it with a HEAD (size, and the S3 ETag or a read-back SHA-256), appends it to the
    /// manifest (fsynced), writes the manifest's copy in the store, and deletes the local file when `delete_local`
    /// says so. A file already in the manifest is a no-op; an object already in the store with the same size and
    /// checksum is recorded without sending it again (`existed`).
    ///
    /// An error after the manifest line was written (the copy in the store could not be put) leaves the file
    /// recorded: the next call for it is a no-op that puts the copy again and deletes the local file.
    pub async fn upload(&mut self, path: &Path) -> Result<Uploaded, SinkError> {
        let name = self.file_name(path)?;
        self.settle_pending().await?;
        if let Some(e) = self.manifest.get(&name) {
            let done = Uploaded {
                location: e.location.clone(),
                bytes: e.bytes,
                checksum: e.sha256.clone(),
                existed: true,
            };
            self.write_manifest_object().await?;
            self.remove_local(path)?;
            return Ok(done);
        }
        let loc = self.prefix.clone().join(name.as_str());
        let location = self.location(&loc);
        let digest = self.digest(path).await?;
        let (existed, etag) = match self.compare(&loc, &digest).await? {
            Remote::Same { etag } => {
                tracing::info!(sink = %self.sink, file = %name, location = %location,
                    "object already in the store, recorded without sending it again");
                (true, etag)
            }
            Remote::Different { why, .. } => {
                return Err(self.setup(
                    "url",
                    format!(
                        "`{location}` holds another object ({why}): not overwritten; move it away or \
                         change `url`"
                    ),
                ));
            }
            Remote::Absent => {
                let started = std::time::Instant::now();
                let sent = self.send(path, &name, &loc, &digest).await?;
                let etag = self.verify(&loc, &location, &digest, sent).await?;
                tracing::info!(sink = %self.sink, file = %name, location = %location, bytes = digest.bytes,
                    ms = started.elapsed().as_millis() as u64, "file uploaded and verified");
                (false, etag)
            }
        };
        self.manifest.append(ManifestEntry {
            file: name,
            location: location.clone(),
            bytes: digest.bytes,
            sha256: digest.sha256.clone(),
            etag,
            uploaded_at: humantime::format_rfc3339_seconds(SystemTime::now()).to_string(),
            existed,
        })?;
        self.manifest_dirty = true;
        self.write_manifest_object().await?;
        self.remove_local(path)?;
        Ok(Uploaded {
            location,
            bytes: digest.bytes,
            checksum: digest.sha256,
            existed,
        })
    }

    /// The list under the prefix that [`ArchiveStore::open`] checks the store with (its first page only).
    async fn check(&self) -> Result<(), SinkError> {
        let within = self.timeout * 3;
        let first = tokio::time::timeout(within, async {
            self.backend.store().list(Some(&self.prefix)).next().await
        })
        .await
        .map_err(|_| self.unreachable(format!("no answer within {within:?}")))?;
        match first {
            None | Some(Ok(_)) => Ok(()),
            Some(Err(e)) => Err(match Failure::of(&e) {
                Failure::Transport(_) => self.unreachable(self.detail(&e)),
                Failure::Status(s) if s >= 500 => self.unreachable(self.detail(&e)),
                _ => self.setup(
                    "url",
                    format!(
                        "the store refused a list under the prefix: {}",
                        self.detail(&e)
                    ),
                ),
            }),
        }
    }

    /// Aborts the upload `<sink>.upload` records (left by a crash, or by a failure whose abort failed too).
    async fn settle_pending(&mut self) -> Result<(), SinkError> {
        let Some(pending) = self.upload_file.read()? else {
            return Ok(());
        };
        self.abort(&pending).await?;
        tracing::warn!(sink = %self.sink, file = %pending.file, location = %pending.location,
            parts_done = pending.parts_done, "an interrupted upload was aborted");
        Ok(())
    }

    /// Aborts `s`'s upload and clears the record; an upload the store no longer knows counts as aborted.
    async fn abort(&self, s: &UploadState) -> Result<(), SinkError> {
        let loc = ObjPath::from(s.location.as_str());
        match (&self.backend, &s.upload_id) {
            (Backend::Local(fs), _) => self.remove_staged(fs, &loc)?,
            // Memory's uploads end with the process that made them.
            (Backend::Memory(m), Some(id)) => {
                let _ = m.abort_multipart(&loc, id).await;
            }
            (Backend::S3(s3), Some(id)) => match s3.abort_multipart(&loc, id).await {
                Ok(()) => {}
                Err(e) if matches!(Failure::of(&e), Failure::NotFound | Failure::Status(404)) => {}
                Err(e) => return Err(self.upload_error(&e)),
            },
            (_, None) => {}
        }
        self.upload_file.clear()
    }

    /// Removes the staging files (`<name>#<n>`) a local folder's interrupted write left beside `loc`.
    fn remove_staged(&self, fs: &LocalFileSystem, loc: &ObjPath) -> Result<(), SinkError> {
        let Ok(dest) = fs.path_to_filesystem(loc) else {
            return Ok(());
        };
        let (Some(dir), Some(stem)) = (dest.parent(), dest.file_name()) else {
            return Ok(());
        };
        let staged = format!("{}#", stem.to_string_lossy());
        let entries = match std::fs::read_dir(dir) {
            Ok(e) => e,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(()),
            Err(e) => return Err(SinkError::io(&self.sink, dir, e)),
        };
        for e in entries.flatten() {
            let n = e.file_name();
            let n = n.to_string_lossy();
            if n.strip_prefix(&staged)
                .is_some_and(|num| !num.is_empty() && num.bytes().all(|b| b.is_ascii_digit()))
            {
                let p = e.path();
                std::fs::remove_file(&p).map_err(|err| SinkError::io(&self.sink, &p, err))?;
            }
        }
        Ok(())
    }

    /// Sends the file: parts with a recorded id for S3 and memory above the threshold, one put below it; a local
    /// folder streams it into a staging file either way (recorded too, so a crash's leftover is removed). Returns
    /// the ETag the store gave the new object.
    async fn send(
        &mut self,
        path: &Path,
        name: &str,
        loc: &ObjPath,
        d: &FileDigest,
    ) -> Result<Option<String>, SinkError> {
        let in_parts = d.bytes >= self.multipart_threshold && d.parts() > 1;
        let backend = self.backend.clone();
        if let Backend::Local(fs) = &backend {
            let record = UploadState {
                file: name.to_owned(),
                location: loc.to_string(),
                upload_id: None,
                parts_done: 0,
            };
            self.upload_file.store(&record)?;
            let sent = self.send_streamed(fs.as_ref(), path, loc, d).await;
            if sent.is_err() {
                self.remove_staged(fs, loc)?;
            }
            self.upload_file.clear()?;
            return sent.map(|()| None);
        }
        match backend.multipart() {
            Some(mp) if in_parts => self.send_parts(mp, path, name, loc, d).await,
            _ => {
                let data = tokio::fs::read(path)
                    .await
                    .map_err(|e| SinkError::io(&self.sink, path, e))?;
                backend
                    .store()
                    .put(loc, PutPayload::from(Bytes::from(data)))
                    .await
                    .map(|r| r.e_tag)
                    .map_err(|e| self.upload_error(&e))
            }
        }
    }

    /// A multipart upload with its id recorded before the first part; aborted on any error.
    async fn send_parts(
        &mut self,
        mp: &dyn MultipartStore,
        path: &Path,
        name: &str,
        loc: &ObjPath,
        d: &FileDigest,
    ) -> Result<Option<String>, SinkError> {
        if d.parts() > MAX_PARTS {
            return Err(self.setup(
                "part_size_bytes",
                format!(
                    "{} bytes in parts of {} make {} parts, above S3's {MAX_PARTS}",
                    d.bytes,
                    self.part_size,
                    d.parts()
                ),
            ));
        }
        let id = mp
            .create_multipart(loc)
            .await
            .map_err(|e| self.upload_error(&e))?;
        let mut record = UploadState {
            file: name.to_owned(),
            location: loc.to_string(),
            upload_id: Some(id.clone()),
            parts_done: 0,
        };
        let sent = match self.upload_file.store(&record) {
            Ok(()) => self.put_parts(mp, path, loc, &id, d, &mut record).await,
            Err(e) => Err(e),
        };
        match sent {
            Ok(etag) => self.upload_file.clear().map(|()| etag),
            Err(e) => {
                if let Err(a) = self.abort(&record).await {
                    tracing::warn!(sink = %self.sink, file = %name, error = %a,
                        "abort of a failed multipart upload failed: it is aborted on the next try");
                }
                Err(e)
            }
        }
    }

    async fn put_parts(
        &self,
        mp: &dyn MultipartStore,
        path: &Path,
        loc: &ObjPath,
        id: &str,
        d: &FileDigest,
        record: &mut UploadState,
    ) -> Result<Option<String>, SinkError> {
        let io = |e| SinkError::io(&self.sink, path, e);
        let id = id.to_owned();
        let mut f = tokio::fs::File::open(path).await.map_err(io)?;
        let mut parts: Vec<PartId> = Vec::with_capacity(d.parts());
        let mut left = d.bytes;
        for idx in 0..d.parts() {
            let len = left.min(self.part_size as u64) as usize;
            let mut buf = vec![0u8; len];
            f.read_exact(&mut buf).await.map_err(io)?;
            left -= len as u64;
            let part = mp
                .put_part(loc, &id, idx, PutPayload::from(Bytes::from(buf)))
                .await
                .map_err(|e| self.upload_error(&e))?;
            parts.push(part);
            record.parts_done = idx + 1;
            self.upload_file.store(record)?;
        }
        mp.complete_multipart(loc, &id, parts)
            .await
            .map(|r| r.e_tag)
            .map_err(|e| self.upload_error(&e))
    }

    /// A local folder's write: parts of `part_size` into its staging file, renamed into place on completion.
    async fn send_streamed(
        &self,
        fs: &LocalFileSystem,
        path: &Path,
        loc: &ObjPath,
        d: &FileDigest,
    ) -> Result<(), SinkError> {
        let io = |e| SinkError::io(&self.sink, path, e);
        let mut up = fs
            .put_multipart(loc)
            .await
            .map_err(|e| self.upload_error(&e))?;
        let mut f = match tokio::fs::File::open(path).await {
            Ok(f) => f,
            Err(e) => {
                let _ = up.abort().await;
                return Err(io(e));
            }
        };
        let mut left = d.bytes;
        let sent: Result<(), SinkError> = async {
            while left > 0 {
                let len = left.min(self.part_size as u64) as usize;
                let mut buf = vec![0u8; len];
                f.read_exact(&mut buf).await.map_err(io)?;
                left -= len as u64;
                up.put_part(PutPayload::from(Bytes::from(buf)))
                    .await
                    .map_err(|e| self.upload_error(&e))?;
            }
            up.complete()
                .await
                .map(drop)
                .map_err(|e| self.upload_error(&e))
        }
        .await;
        if sent.is_err() {
            let _ = up.abort().await;
        }
        sent
    }

    /// The HEAD after an upload: the object must be the file. An ETag that is no MD5 of the bytes but the one the
    /// store gave the upload itself (S3 with KMS encryption) leaves the size as the check. An object that is not
    /// the file is removed (best effort) and the failure is transient: the next try uploads it again.
    async fn verify(
        &self,
        loc: &ObjPath,
        location: &str,
        d: &FileDigest,
        sent: Option<String>,
    ) -> Result<Option<String>, SinkError> {
        match self.compare(loc, d).await? {
            Remote::Same { etag } => Ok(etag),
            Remote::Absent => {
                Err(self.transient(format!("`{location}` not found after its upload")))
            }
            Remote::Different {
                etag: Some(etag), ..
            } if sent
                .as_deref()
                .is_some_and(|s| s.trim_matches('"') == etag.trim_matches('"')) =>
            {
                tracing::warn!(sink = %self.sink, object = %loc, etag = %etag,
                    "the store's ETags are no MD5s of the bytes (KMS encryption?): only the size was compared");
                Ok(Some(etag))
            }
            Remote::Different { why, .. } => {
                let removed = self.backend.store().delete(loc).await.is_ok();
                Err(self.transient(format!(
                    "`{location}` does not match the file after its upload ({why}){}",
                    if removed { "; removed" } else { "" }
                )))
            }
        }
    }

    /// What the object at `loc` is to the file: absent, the same (size, and the checksum the store offers or a
    /// read-back SHA-256), or different.
    async fn compare(&self, loc: &ObjPath, d: &FileDigest) -> Result<Remote, SinkError> {
        let store = self.backend.store();
        let meta = match store.head(loc).await {
            Ok(m) => m,
            Err(e) if Failure::of(&e) == Failure::NotFound => return Ok(Remote::Absent),
            Err(e) => return Err(self.upload_error(&e)),
        };
        if meta.size != d.bytes {
            return Ok(Remote::Different {
                why: format!("{} bytes, the file {}", meta.size, d.bytes),
                etag: None,
            });
        }
        if let Backend::S3(_) = self.backend {
            let etag = meta.e_tag;
            return Ok(match etag.as_deref().map(|e| d.check_etag(e)) {
                Some(EtagCheck::Same) => Remote::Same { etag },
                Some(EtagCheck::Different) => Remote::Different {
                    why: format!(
                        "ETag {}, the file's {} (single put) or {} (in {} parts)",
                        etag.as_deref().unwrap_or_default(),
                        d.single_etag(),
                        d.multipart_etag(),
                        d.parts()
                    ),
                    etag,
                },
                Some(EtagCheck::NotComparable) | None => {
                    tracing::warn!(sink = %self.sink, object = %loc, etag = ?etag,
                        "the object's ETag is no MD5 of its bytes: only its size was compared");
                    Remote::Same { etag }
                }
            });
        }
        let got = store.get(loc).await.map_err(|e| self.upload_error(&e))?;
        let mut sha = ring::digest::Context::new(&ring::digest::SHA256);
        let mut stream = got.into_stream();
        while let Some(chunk) = stream.next().await {
            sha.update(&chunk.map_err(|e| self.upload_error(&e))?);
        }
        let sum = data_encoding::HEXLOWER.encode(sha.finish().as_ref());
        Ok(if sum == d.sha256 {
            Remote::Same { etag: None }
        } else {
            Remote::Different {
                why: format!("SHA-256 {sum}, the file's {}", d.sha256),
                etag: None,
            }
        })
    }

    /// Puts the whole local manifest at `<prefix>/manifest.jsonl` when it changed since the last put.
    async fn write_manifest_object(&mut self) -> Result<(), SinkError> {
        if !self.manifest_dirty {
            return Ok(());
        }
        let loc = self.prefix.clone().join(MANIFEST_OBJECT);
        let body = Bytes::copy_from_slice(self.manifest.text());
        self.backend
            .store()
            .put(&loc, PutPayload::from(body))
            .await
            .map_err(|e| self.upload_error(&e))?;
        self.manifest_dirty = false;
        Ok(())
    }

    fn remove_local(&self, path: &Path) -> Result<(), SinkError> {
        if !self.delete_local {
            return Ok(());
        }
        match std::fs::remove_file(path) {
            Ok(()) => {
                tracing::debug!(sink = %self.sink, file = %path.display(), "local file deleted after its upload");
                Ok(())
            }
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
            Err(e) => Err(SinkError::io(&self.sink, path, e)),
        }
    }

    async fn digest(&self, path: &Path) -> Result<FileDigest, SinkError> {
        let (p, part_size) = (path.to_owned(), self.part_size);
        tokio::task::spawn_blocking(move || FileDigest::of_file(&p, part_size))
            .await
            .map_err(|e| SinkError::io(&self.sink, path, std::io::Error::other(e)))?
            .map_err(|e| SinkError::io(&self.sink, path, e))
    }

    fn file_name(&self, path: &Path) -> Result<String, SinkError> {
        path.file_name()
            .and_then(|n| n.to_str())
            .filter(|n| !n.is_empty() && *n != MANIFEST_OBJECT && !n.contains('#'))
            .map(str::to_owned)
            .ok_or_else(|| {
                SinkError::io(
                    &self.sink,
                    path,
                    std::io::Error::new(
                        std::io::ErrorKind::InvalidInput,
                        "not a file name this sink uploads (UTF-8, no `#`, not `manifest.jsonl`)",
                    ),
                )
            })
    }

    fn location(&self, loc: &ObjPath) -> String {
        match &self.backend {
            Backend::Local(fs) => fs
                .path_to_filesystem(loc)
                .ok()
                .and_then(|p| url::Url::from_file_path(p).ok())
                .map_or_else(|| format!("{}/{loc}", self.base), String::from),
            _ => format!("{}/{loc}", self.base),
        }
    }

    /// An error of a request made while uploading, as the sink's loop classifies it: no connection is
    /// `Unreachable`, a broken one, a timeout or a server error `Transient`, a refusal (4xx) `Setup`.
    fn upload_error(&self, e: &object_store::Error) -> SinkError {
        let detail = self.detail(e);
        match Failure::of(e) {
            Failure::Transport(HttpErrorKind::Connect) => self.unreachable(detail),
            Failure::Transport(_) | Failure::Other => self.transient(detail),
            Failure::Status(s) if s >= 500 || s == 408 || s == 429 => self.transient(detail),
            Failure::Status(_) | Failure::NotFound | Failure::Denied => self.setup("url", detail),
        }
    }

    /// The store's message, one line, bounded, with any credential blanked out.
    fn detail(&self, e: &object_store::Error) -> String {
        let mut d: String = e.to_string().replace(['\n', '\r'], " ");
        for s in &self.secrets {
            d = d.replace(s.as_str(), "***");
        }
        if d.len() > DETAIL_MAX {
            let mut cut = DETAIL_MAX;
            while !d.is_char_boundary(cut) {
                cut -= 1;
            }
            d.truncate(cut);
            d.push_str(" ...");
        }
        d
    }

    fn unreachable(&self, detail: String) -> SinkError {
        SinkError::Unreachable {
            sink: self.sink.clone(),
            kind: KIND,
            key: self.reach.0,
            target: self.reach.1.clone(),
            detail,
        }
    }

    fn setup(&self, key: &'static str, detail: String) -> SinkError {
        SinkError::Setup {
            sink: self.sink.clone(),
            kind: KIND,
            key,
            detail,
        }
    }

    fn transient(&self, detail: String) -> SinkError {
        SinkError::Transient {
            sink: self.sink.clone(),
            detail,
        }
    }
}

/// A backend made from the config, before anything is asked of it.
struct Built {
    backend: Backend,
    prefix: ObjPath,
    base: String,
    secrets: Vec<String>,
}

fn build(sink: &SinkConfig, cfg: &ObjectStoreSink) -> Result<Built, SinkError> {
    let setup = |detail: String| SinkError::Setup {
        sink: sink.name.clone(),
        kind: KIND,
        key: "url",
        detail,
    };
    let url = url::Url::parse(cfg.url.expose())
        .map_err(|e| setup(format!("`{}` is not a URL: {e}", cfg.url)))?;
    let prefix_of = |u: &url::Url| {
        ObjPath::from_url_path(u.path())
            .map_err(|e| setup(format!("`{}`: not a usable prefix: {e}", cfg.url)))
    };
    match url.scheme() {
        "s3" | "s3a" => {
            let bucket = url
                .host_str()
                .filter(|b| !b.is_empty())
                .ok_or_else(|| {
                    setup(format!(
                        "`{}` names no bucket (s3://bucket/prefix)",
                        cfg.url
                    ))
                })?
                .to_owned();
            let mut b = AmazonS3Builder::from_env()
                .with_bucket_name(&bucket)
                .with_allow_http(cfg.allow_http)
                .with_client_options(ClientOptions::new().with_allow_http(cfg.allow_http))
                .with_retry(RetryConfig {
                    backoff: BackoffConfig {
                        init_backoff: Duration::from_millis(100),
                        max_backoff: sink.retry_max.min(Duration::from_secs(2)),
                        base: 2.0,
                    },
                    max_retries: REQUEST_RETRIES,
                    retry_timeout: sink.timeout,
                });
            if let Some(e) = &cfg.endpoint {
                b = b.with_endpoint(e);
            }
            if let Some(r) = &cfg.region {
                b = b.with_region(r);
            }
            if let (Some(k), Some(s)) = (&cfg.access_key_id, &cfg.secret_access_key) {
                b = b
                    .with_access_key_id(k.expose())
                    .with_secret_access_key(s.expose());
            }
            let secure = b
                .get_config_value(&AmazonS3ConfigKey::Endpoint)
                .is_none_or(|e| !e.starts_with("http://"));
            b = b.with_http_connector(http::HyperConnector::new(sink.timeout, secure));
            let secrets = [
                AmazonS3ConfigKey::AccessKeyId,
                AmazonS3ConfigKey::SecretAccessKey,
                AmazonS3ConfigKey::Token,
            ]
            .iter()
            .filter_map(|k| b.get_config_value(k))
            .filter(|v| v.len() >= 4)
            .collect();
            let store = b
                .build()
                .map_err(|e| setup(format!("`{}`: {e}", cfg.url)))?;
            Ok(Built {
                backend: Backend::S3(Arc::new(store)),
                prefix: prefix_of(&url)?,
                base: format!("s3://{bucket}"),
                secrets,
            })
        }
        "file" => {
            let dir: PathBuf = url.to_file_path().map_err(|()| {
                setup(format!("`{}` is not a local folder (file:///dir)", cfg.url))
            })?;
            std::fs::create_dir_all(&dir)
                .map_err(|e| setup(format!("cannot make `{}`: {e}", dir.display())))?;
            let fs = LocalFileSystem::new_with_prefix(&dir)
                .map_err(|e| setup(format!("`{}`: {e}", dir.display())))?
                .with_fsync(true);
            Ok(Built {
                backend: Backend::Local(Arc::new(fs)),
                prefix: ObjPath::default(),
                base: "file://".to_owned(),
                secrets: Vec::new(),
            })
        }
        "memory" => Ok(Built {
            backend: Backend::Memory(Arc::new(InMemory::new())),
            prefix: prefix_of(&url)?,
            base: "memory://".to_owned(),
            secrets: Vec::new(),
        }),
        other => Err(setup(format!(
            "the `{other}` scheme is not built in (this build has s3, file and memory)"
        ))),
    }
}

#[cfg(test)]
mod tests;
