//! WARC files: naming, rotation, buffered appends made durable by `sync`, checkpoints, and repair of a torn tail.

use std::fs::{File, OpenOptions};
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};
use std::time::SystemTime;

use crawl_core::record::RecordLocation;
use serde::{Deserialize, Serialize};

use super::WarcError;
use super::capture::{
    self, Capture, Encoded, Metadata, Prepared, RefersTo, Revisit, RevisitOf, RevisitTarget,
    WARC_FIELDS, warc_fields_line,
};
use super::dedup::PayloadDedup;
use super::digest::{Digest, Sha1};
use super::naming::{Naming, check_name_part, lock_dir, machine_hostname, timestamp17};
use super::reader::MemberReader;
use super::record::{RecordId, RecordType, WarcFields, parse_record};

pub use super::naming::FileTimestamp;

/// Files are rotated before they would pass this size: 1 GiB.
pub const DEFAULT_MAX_BYTES: u64 = 1 << 30;

/// The `format` line of the warcinfo record.
pub const WARC_FORMAT: &str = "WARC File Format 1.1";
/// The `conformsTo` line of the warcinfo record.
pub const WARC_CONFORMS_TO: &str =
    "http://iipc.github.io/warc-specifications/specifications/warc-format/warc-1.1/";

/// How a [`WarcWriter`] names, fills and describes its files.
#[derive(Debug, Clone)]
pub struct WarcWriterConfig {
    /// Directory of the files (created if needed).
    pub dir: PathBuf,
    /// PREFIX of `PREFIX-TIMESTAMP-SERIAL-HOST.warc.gz`.
    pub prefix: String,
    /// A file is rotated before a record would take it past this many bytes (a record larger than this gets a
    /// file of its own after the warcinfo record).
    pub max_bytes: u64,
    /// HOST of the file name and the warcinfo `hostname`; `None` takes the machine's host name.
    pub hostname: Option<String>,
    pub timestamp: FileTimestamp,
    /// SERIAL of the first file when the directory holds none of this writer's files (5 digits, zero-padded).
    pub first_serial: u32,
    /// The warcinfo `software` line.
    pub software: String,
    /// The warcinfo `config-digest` line: a digest of the crawl configuration, given by the caller.
    pub config_digest: Option<String>,
    /// Further warcinfo lines (`operator`, `isPartOf`, `description`, `http-header-user-agent`, ...).
    pub warcinfo_extra: Vec<(String, String)>,
    /// gzip level, 0 to 9.
    pub compression_level: u32,
}

impl WarcWriterConfig {
    /// Defaults: 1 GiB files, 17-digit timestamps, first serial 0, the machine's host name, gzip level 6.
    pub fn new(dir: impl Into<PathBuf>, prefix: impl Into<String>) -> WarcWriterConfig {
        WarcWriterConfig {
            dir: dir.into(),
            prefix: prefix.into(),
            max_bytes: DEFAULT_MAX_BYTES,
            hostname: None,
            timestamp: FileTimestamp::Now17,
            first_serial: 0,
            software: format!("crawl-engine/{}", env!("CARGO_PKG_VERSION")),
            config_digest: None,
            warcinfo_extra: Vec::new(),
            compression_level: 6,
        }
    }
}

/// Where the durable part of the archive ends: a file name and its length after the last [`WarcWriter::sync`].
/// Stored with each commit and given back to [`WarcWriter::open`].
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct WarcCheckpoint {
    pub file: String,
    pub bytes: u64,
}

/// A record as written.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WrittenRecord {
    pub id: RecordId,
    pub kind: RecordType,
    /// Its `WARC-Date`.
    pub date: String,
    pub location: RecordLocation,
    pub payload_digest: Option<Digest>,
}

/// The records of one capture: a `response` or a `revisit`, and the `request` when one was given.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CaptureWritten {
    pub response: WrittenRecord,
    pub request: Option<WrittenRecord>,
}

impl CaptureWritten {
    /// Whether the payload was archived as a revisit of an earlier record.
    pub fn is_revisit(&self) -> bool {
        self.response.kind == RecordType::Revisit
    }
}

/// What [`WarcWriter::open`] found and repaired.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct OpenReport {
    /// The file appends continue in.
    pub file: String,
    /// Whether that file was created by this open.
    pub created: bool,
    /// Bytes cut from the end of the file (beyond the checkpoint, or a torn member found by the scan).
    pub cut_bytes: u64,
    /// Files of this writer created after the checkpoint, hence holding no committed record, that were removed.
    pub removed_files: Vec<String>,
}

#[derive(Debug)]
struct Current {
    name: String,
    serial: u32,
    out: BufWriter<File>,
    /// Bytes including those still buffered.
    len: u64,
    /// Records after the warcinfo record.
    records: u64,
}

/// Appends records to rotating `.warc.gz` files, one gzip member per record.
///
/// Appends are buffered; [`sync`](Self::sync) writes and fsyncs them and returns the new [`WarcCheckpoint`].
/// After an I/O error the writer refuses further appends ([`WarcError::Failed`]): reopen it from the last
/// checkpoint.
#[derive(Debug)]
pub struct WarcWriter {
    cfg: WarcWriterConfig,
    naming: Naming,
    cur: Current,
    synced: WarcCheckpoint,
    dir_dirty: bool,
    failed: bool,
    report: OpenReport,
    /// Holds an exclusive lock on `PREFIX-HOST.warc.lock` in the directory while the writer lives.
    _lock: File,
}

impl WarcWriter {
    /// Opens the archive in `cfg.dir`. One writer per directory, prefix and host: a second one is refused with
    /// [`WarcError::Busy`] while the first lives (give concurrent writers distinct prefixes).
    ///
    /// With a checkpoint: the named file must exist and hold at least `bytes` bytes; it is cut to that length
    /// (dropping records appended but never synced, and any torn member) and appends continue in it. This
    /// writer's files with a higher serial were created after the checkpoint and are removed. Nothing before the
    /// checkpoint is read.
    ///
    /// Without one: the file with the highest serial is scanned member by member and cut after the last member
    /// that decodes whole (CRC and size checked) to a whole WARC record; appends continue in it. With no file
    /// yet, a new one is created. A file left empty gets its warcinfo record. The result is synced, so
    /// [`checkpoint`](Self::checkpoint) is valid at once.
    pub fn open(
        cfg: WarcWriterConfig,
        checkpoint: Option<&WarcCheckpoint>,
    ) -> Result<WarcWriter, WarcError> {
        let host = match &cfg.hostname {
            Some(h) => h.clone(),
            None => machine_hostname(),
        };
        check_name_part("prefix", &cfg.prefix)?;
        check_name_part("hostname", &host)?;
        if let FileTimestamp::Fixed(ts) = &cfg.timestamp
            && !((ts.len() == 14 || ts.len() == 17) && ts.bytes().all(|b| b.is_ascii_digit()))
        {
            return Err(WarcError::Config(format!(
                "timestamp {ts:?} is not 14 or 17 digits"
            )));
        }
        if cfg.compression_level > 9 {
            return Err(WarcError::Config(format!(
                "compression level {} is not 0..=9",
                cfg.compression_level
            )));
        }
        let naming = Naming {
            prefix: cfg.prefix.clone(),
            host,
        };
        let dir = cfg.dir.clone();
        std::fs::create_dir_all(&dir).map_err(|e| io_err(&dir, e))?;
        let lock = lock_dir(&dir, &naming)?;
        let mut files: Vec<(u32, String)> = Vec::new();
        for entry in std::fs::read_dir(&dir).map_err(|e| io_err(&dir, e))? {
            let entry = entry.map_err(|e| io_err(&dir, e))?;
            if let Some(name) = entry.file_name().to_str()
                && let Some(serial) = naming.serial(name)
            {
                files.push((serial, name.to_string()));
            }
        }
        files.sort();
        let mut report = OpenReport::default();
        let mut dir_dirty = false;

        let resumed = match checkpoint {
            Some(cp) => {
                let serial =
                    naming
                        .serial(&cp.file)
                        .ok_or_else(|| WarcError::CheckpointMismatch {
                            file: cp.file.clone(),
                            detail: format!(
                                "not a file of this writer ({}-TIMESTAMP-SERIAL-{}.warc.gz)",
                                naming.prefix, naming.host
                            ),
                        })?;
                let path = dir.join(&cp.file);
                let len = match std::fs::metadata(&path) {
                    Ok(m) => m.len(),
                    Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                        return Err(WarcError::CheckpointMismatch {
                            file: cp.file.clone(),
                            detail: "the file is missing".to_string(),
                        });
                    }
                    Err(e) => return Err(io_err(&path, e)),
                };
                if len < cp.bytes {
                    return Err(WarcError::CheckpointMismatch {
                        file: cp.file.clone(),
                        detail: format!(
                            "the file has {len} bytes but {} were synced; was it truncated or replaced?",
                            cp.bytes
                        ),
                    });
                }
                for (s, name) in files.iter().filter(|(s, _)| *s > serial) {
                    let p = dir.join(name);
                    std::fs::remove_file(&p).map_err(|e| io_err(&p, e))?;
                    tracing::warn!(file = %name, serial = s, "warc file created after the checkpoint removed");
                    report.removed_files.push(name.clone());
                    dir_dirty = true;
                }
                Some((serial, cp.file.clone(), len, cp.bytes, 1))
            }
            None => match files.last() {
                Some((serial, name)) => {
                    let path = dir.join(name);
                    let (good, records) = scan_complete(&path)?;
                    let len = std::fs::metadata(&path)
                        .map_err(|e| io_err(&path, e))?
                        .len();
                    Some((*serial, name.clone(), len, good, records.saturating_sub(1)))
                }
                None => None,
            },
        };

        let cur = match resumed {
            Some((serial, name, len, keep, records)) => {
                let path = dir.join(&name);
                let file = OpenOptions::new()
                    .append(true)
                    .open(&path)
                    .map_err(|e| io_err(&path, e))?;
                if len > keep {
                    file.set_len(keep).map_err(|e| io_err(&path, e))?;
                    report.cut_bytes = len - keep;
                    tracing::warn!(file = %name, cut_bytes = len - keep, kept_bytes = keep, "warc tail cut");
                }
                Current {
                    name,
                    serial,
                    out: BufWriter::with_capacity(256 * 1024, file),
                    len: keep,
                    records,
                }
            }
            None => {
                report.created = true;
                dir_dirty = true;
                create_file(&dir, &naming, &cfg.timestamp, cfg.first_serial)?
            }
        };
        let mut w = WarcWriter {
            synced: WarcCheckpoint {
                file: cur.name.clone(),
                bytes: cur.len,
            },
            cfg,
            naming,
            cur,
            dir_dirty,
            failed: false,
            report,
            _lock: lock,
        };
        if w.cur.len == 0 {
            w.write_warcinfo()?;
        }
        w.report.file = w.cur.name.clone();
        w.sync()?;
        tracing::info!(file = %w.cur.name, bytes = w.cur.len, created = w.report.created, "warc writer opened");
        Ok(w)
    }

    /// What the open found and repaired.
    pub fn open_report(&self) -> &OpenReport {
        &self.report
    }

    /// The file and length as of the last [`sync`](Self::sync): store it with the commit that follows the sync.
    pub fn checkpoint(&self) -> &WarcCheckpoint {
        &self.synced
    }

    /// The file appends go to now.
    pub fn current_file(&self) -> &str {
        &self.cur.name
    }

    pub fn dir(&self) -> &Path {
        &self.cfg.dir
    }

    /// HOST of the file names and the warcinfo records.
    pub fn hostname(&self) -> &str {
        &self.naming.host
    }

    /// Writes buffered records and fsyncs the file (and the directory when a file was created), making every
    /// append so far durable. Returns the new checkpoint.
    pub fn sync(&mut self) -> Result<WarcCheckpoint, WarcError> {
        self.ensure_usable()?;
        let path = self.cfg.dir.join(&self.cur.name);
        let r = self
            .cur
            .out
            .flush()
            .and_then(|()| self.cur.out.get_ref().sync_data());
        if let Err(e) = r {
            self.failed = true;
            return Err(io_err(&path, e));
        }
        if self.dir_dirty {
            let dir = &self.cfg.dir;
            if let Err(e) = File::open(dir).and_then(|d| d.sync_all()) {
                self.failed = true;
                return Err(io_err(dir, e));
            }
            self.dir_dirty = false;
        }
        self.synced = WarcCheckpoint {
            file: self.cur.name.clone(),
            bytes: self.cur.len,
        };
        Ok(self.synced.clone())
    }

    /// Archives one fetch: its `response` record and, when a request is given, its `request` record (linked
    /// both ways by `WARC-Concurrent-To`), in the same file.
    pub fn append_capture(&mut self, c: &Capture<'_>) -> Result<CaptureWritten, WarcError> {
        self.ensure_usable()?;
        let digest = Sha1::of(c.body);
        let recs = capture::encode_capture(c, digest, self.cfg.compression_level)?;
        self.write_capture(recs)
    }

    /// Archives one fetch, as a `revisit` when `dedup` knows its payload, else in full (then remembers it).
    /// Only a whole, non-empty payload is deduplicated: an empty body or a truncated one is always written.
    pub fn append_capture_dedup(
        &mut self,
        c: &Capture<'_>,
        dedup: &mut PayloadDedup,
    ) -> Result<CaptureWritten, WarcError> {
        self.ensure_usable()?;
        let digest = Sha1::of(c.body);
        let eligible = !c.body.is_empty() && c.truncated.is_none();
        if eligible && let Some(original) = dedup.get(&digest).map(RevisitTarget::refers_to) {
            let r = Revisit {
                url: c.url,
                date: c.date,
                ip: c.ip,
                request: c.request,
                response: c.response,
                of: RevisitOf::IdenticalPayload(digest),
                refers_to: Some(&original),
            };
            return self.append_revisit(&r);
        }
        let recs = capture::encode_capture(c, digest, self.cfg.compression_level)?;
        let written = self.write_capture(recs)?;
        if eligible {
            dedup.insert(RevisitTarget {
                record_id: written.response.id.clone(),
                target_uri: super::record::strip_userinfo(c.url).into_owned(),
                date: written.response.date.clone(),
                payload_digest: digest,
            });
        }
        Ok(written)
    }

    /// Archives a [`Prepared`] fetch.
    ///
    /// - A `304 Not Modified` ([`Prepared::not_modified`]) is its server-not-modified revisit; when `dedup` holds
    ///   the record of the URL's last capture (archived by this process), the revisit names it (`WARC-Refers-To`).
    /// - With `dedup`, a whole, non-empty payload already archived becomes an identical-payload-digest revisit:
    ///   of the record `dedup` remembers for its digest, or else, when it has the digest of the URL's last
    ///   capture ([`Prepared::with_prior`], e.g. archived by an earlier run), of that capture (by URI and date).
    /// - Anything else is written in full, and `dedup` remembers its payload.
    pub fn append_prepared(
        &mut self,
        p: Prepared,
        dedup: Option<&mut PayloadDedup>,
    ) -> Result<CaptureWritten, WarcError> {
        self.ensure_usable()?;
        if p.not_modified {
            // Its records name the last capture by URI and date (the store does not keep the record's id).
            return self.write_capture(p.records);
        }
        let Some(dedup) = dedup.filter(|_| p.eligible) else {
            return self.write_capture(p.records);
        };
        if let Some(original) = dedup.get(&p.digest).map(RevisitTarget::refers_to) {
            return self.append_revisit(&prepared_revisit(
                &p,
                RevisitOf::IdenticalPayload(p.digest),
                &original,
            ));
        }
        if let Some(prior) = p.prior.as_ref().filter(|c| c.matches(&p.digest)) {
            let original = RefersTo {
                record_id: None,
                target_uri: super::record::strip_userinfo(&p.url).into_owned(),
                date: prior.date.clone(),
            };
            return self.append_revisit(&prepared_revisit(
                &p,
                RevisitOf::IdenticalPayload(p.digest),
                &original,
            ));
        }
        let written = self.write_capture(p.records)?;
        dedup.insert(RevisitTarget {
            record_id: written.response.id.clone(),
            target_uri: super::record::strip_userinfo(&p.url).into_owned(),
            date: written.response.date.clone(),
            payload_digest: p.digest,
        });
        Ok(written)
    }

    /// Archives a fetch as a `revisit` record (its profile from [`Revisit::of`], the response's headers as block,
    /// no `WARC-Truncated`), plus its `request` record when given.
    pub fn append_revisit(&mut self, r: &Revisit<'_>) -> Result<CaptureWritten, WarcError> {
        self.ensure_usable()?;
        let recs = capture::encode_revisit(r, self.cfg.compression_level)?;
        self.write_capture(recs)
    }

    /// Archives a page's `metadata` record (outlinks and other fields).
    pub fn append_metadata(&mut self, m: &Metadata<'_>) -> Result<WrittenRecord, WarcError> {
        self.ensure_usable()?;
        let rec = capture::encode_metadata(m, self.cfg.compression_level)?;
        let mut out = self.write_group(vec![rec])?;
        out.pop().ok_or(WarcError::Failed)
    }

    fn write_capture(&mut self, recs: Vec<Encoded>) -> Result<CaptureWritten, WarcError> {
        let mut out = self.write_group(recs)?.into_iter();
        let response = out.next().ok_or(WarcError::Failed)?;
        Ok(CaptureWritten {
            response,
            request: out.next(),
        })
    }

    fn ensure_usable(&self) -> Result<(), WarcError> {
        if self.failed {
            Err(WarcError::Failed)
        } else {
            Ok(())
        }
    }

    /// Writes records one after another in one file, rotating first when they would take the file past
    /// `max_bytes` (unless it holds nothing but its warcinfo record).
    fn write_group(&mut self, recs: Vec<Encoded>) -> Result<Vec<WrittenRecord>, WarcError> {
        let total: u64 = recs.iter().map(|r| r.member.len() as u64).sum();
        if self.cur.records > 0 && self.cur.len + total > self.cfg.max_bytes {
            self.rotate()?;
        }
        let mut out = Vec::with_capacity(recs.len());
        for r in recs {
            let location = self.write_member(&r.member)?;
            self.cur.records += 1;
            out.push(WrittenRecord {
                id: r.id,
                kind: r.kind,
                date: r.date,
                location,
                payload_digest: r.payload_digest,
            });
        }
        Ok(out)
    }

    fn write_member(&mut self, member: &[u8]) -> Result<RecordLocation, WarcError> {
        let offset = self.cur.len;
        if let Err(e) = self.cur.out.write_all(member) {
            self.failed = true;
            return Err(io_err(&self.cfg.dir.join(&self.cur.name), e));
        }
        self.cur.len += member.len() as u64;
        Ok(RecordLocation {
            file: self.cur.name.clone(),
            offset,
            length: member.len() as u64,
        })
    }

    /// Closes the current file and goes on in a new one (with its warcinfo record), synced; returns the new
    /// checkpoint. A writer that resumed a file calls this when files must never be appended to once closed (an
    /// object store may have copied them).
    pub fn start_next_file(&mut self) -> Result<WarcCheckpoint, WarcError> {
        self.rotate()?;
        self.sync()
    }

    /// Closes the current file (flushed and fsynced, so [`sync`](Self::sync) only ever concerns the newest one)
    /// and starts the next serial with its warcinfo record.
    fn rotate(&mut self) -> Result<(), WarcError> {
        let old = self.cfg.dir.join(&self.cur.name);
        let r = self
            .cur
            .out
            .flush()
            .and_then(|()| self.cur.out.get_ref().sync_data());
        if let Err(e) = r {
            self.failed = true;
            return Err(io_err(&old, e));
        }
        let next =
            self.cur.serial.checked_add(1).ok_or_else(|| {
                WarcError::Config("the file serial number overflowed".to_string())
            })?;
        let cur = match create_file(&self.cfg.dir, &self.naming, &self.cfg.timestamp, next) {
            Ok(c) => c,
            Err(e) => {
                self.failed = true;
                return Err(e);
            }
        };
        tracing::info!(closed = %self.cur.name, closed_bytes = self.cur.len, file = %cur.name, "warc file rotated");
        self.cur = cur;
        self.dir_dirty = true;
        self.write_warcinfo()
    }

    fn write_warcinfo(&mut self) -> Result<(), WarcError> {
        let id = RecordId::random()?;
        let mut f = WarcFields::new(RecordType::Warcinfo, &id, SystemTime::now());
        f.push("WARC-Filename", self.cur.name.clone())?;
        let mut block = Vec::with_capacity(512);
        let mut line = |n: &str, v: &str| -> Result<(), WarcError> {
            block.extend_from_slice(&warc_fields_line(n, v)?);
            Ok(())
        };
        line("software", &self.cfg.software)?;
        line("hostname", &self.naming.host)?;
        line("format", WARC_FORMAT)?;
        line("conformsTo", WARC_CONFORMS_TO)?;
        if let Some(d) = &self.cfg.config_digest {
            line("config-digest", d)?;
        }
        for (n, v) in &self.cfg.warcinfo_extra {
            line(n, v)?;
        }
        let rec = capture::encode(
            RecordType::Warcinfo,
            id,
            f,
            WARC_FIELDS,
            &[&block],
            None,
            self.cfg.compression_level,
        )?;
        self.write_member(&rec.member)?;
        Ok(())
    }
}

/// The revisit of a prepared fetch.
fn prepared_revisit<'a>(p: &'a Prepared, of: RevisitOf, original: &'a RefersTo) -> Revisit<'a> {
    Revisit {
        url: &p.url,
        date: p.date,
        ip: p.ip,
        request: p.request.as_ref(),
        response: &p.response,
        of,
        refers_to: Some(original),
    }
}

fn io_err(path: &Path, source: std::io::Error) -> WarcError {
    WarcError::Io {
        path: path.display().to_string(),
        source,
    }
}

/// Creates the file of `serial` (it must not exist yet); the caller writes its warcinfo record.
fn create_file(
    dir: &Path,
    naming: &Naming,
    ts: &FileTimestamp,
    serial: u32,
) -> Result<Current, WarcError> {
    let timestamp = match ts {
        FileTimestamp::Fixed(t) => t.clone(),
        FileTimestamp::Now14 => timestamp17(SystemTime::now())[..14].to_string(),
        FileTimestamp::Now17 => timestamp17(SystemTime::now()),
    };
    let name = naming.name(&timestamp, serial);
    let path = dir.join(&name);
    let file = OpenOptions::new()
        .append(true)
        .create_new(true)
        .open(&path)
        .map_err(|e| io_err(&path, e))?;
    Ok(Current {
        name,
        serial,
        out: BufWriter::with_capacity(256 * 1024, file),
        len: 0,
        records: 0,
    })
}

/// The length of the file's prefix made of whole members that each hold one whole WARC record, and how many
/// such records there are.
fn scan_complete(path: &Path) -> Result<(u64, u64), WarcError> {
    let file = File::open(path).map_err(|e| io_err(path, e))?;
    let mut r = MemberReader::new(file);
    let (mut good, mut records) = (0u64, 0u64);
    loop {
        match r.next_member() {
            Ok(Some(m)) => {
                if let Err(e) = parse_record(&m.data) {
                    tracing::warn!(file = %path.display(), offset = m.offset, error = %e, "warc member is not a whole record");
                    break;
                }
                good = m.offset + m.length;
                records += 1;
            }
            Ok(None) => break,
            Err(bad) => {
                tracing::warn!(file = %path.display(), offset = bad.offset, error = %bad.source, "warc member torn");
                break;
            }
        }
    }
    Ok((good, records))
}
