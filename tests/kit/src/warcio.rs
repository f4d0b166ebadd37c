//! warcio (the Python WARC library) as the tests' independent reader of the archives the crawler writes: `warcio
//! check` for every digest, `warcio index` for record bounds, and its Python API for the decoded payloads.
//!
//! warcio is found through `WARCIO` (a path) or on `PATH`; missing, [`Warcio::find`] skips the test with a note,
//! or fails it under `CI=true` (see [`crate::tool`]).

use std::path::{Path, PathBuf};
use std::process::Command;

use crate::{ToolError, tool};

/// warcio's command and the Python it was installed for.
#[derive(Debug, Clone)]
pub struct Warcio {
    exe: PathBuf,
    python: PathBuf,
}

/// A record as warcio reads it ([`Warcio::records`]).
#[derive(Debug, Clone, serde::Deserialize)]
pub struct WarcioRecord {
    #[serde(rename = "type")]
    pub kind: String,
    pub uri: Option<String>,
    pub refers_to: Option<String>,
    /// `WARC-Truncated`, when the body was cut.
    pub truncated: Option<String>,
    /// `WARC-Protocol` (`h2` for an HTTP/2 answer).
    pub protocol: Option<String>,
    /// The HTTP message's `User-Agent` header (request records).
    pub user_agent: Option<String>,
    pub id: String,
    /// HTTP status line (response and revisit records).
    pub status: Option<String>,
    /// The payload as warcio decodes it (content coding removed), hex.
    pub content: String,
    pub offset: u64,
    pub length: u64,
    pub file: String,
}

impl WarcioRecord {
    pub fn content_bytes(&self) -> Vec<u8> {
        (0..self.content.len() / 2)
            .filter_map(|i| u8::from_str_radix(&self.content[2 * i..2 * i + 2], 16).ok())
            .collect()
    }
}

const RECORDS: &str = r#"
import json, sys, os
from warcio.archiveiterator import ArchiveIterator
rows = []
for path in sys.argv[1:]:
    with open(path, 'rb') as f:
        it = ArchiveIterator(f)
        for r in it:
            h = r.http_headers
            row = {'type': r.rec_type, 'uri': r.rec_headers.get_header('WARC-Target-URI'),
                   'refers_to': r.rec_headers.get_header('WARC-Refers-To'),
                   'truncated': r.rec_headers.get_header('WARC-Truncated'),
                   'protocol': r.rec_headers.get_header('WARC-Protocol'),
                   'user_agent': h.get_header('User-Agent') if h else None,
                   'id': r.rec_headers.get_header('WARC-Record-ID'),
                   'status': (h.protocol + ' ' + h.statusline) if h and r.rec_type in ('response', 'revisit') else None,
                   'content': r.content_stream().read().hex(),
                   'file': os.path.basename(path)}
            row['offset'] = it.get_record_offset()
            row['length'] = it.get_record_length()
            rows.append(row)
print(json.dumps(rows))
"#;

impl Warcio {
    /// warcio from `WARCIO` or `PATH`; None with a note (for `test`) when it is missing, a panic when `CI=true`.
    pub fn find(test: &str) -> Option<Warcio> {
        let exe = std::env::var_os("WARCIO")
            .map(PathBuf::from)
            .filter(|p| p.is_file())
            .or_else(|| tool::on_path("warcio"));
        let Some(exe) = exe else {
            tool::unavailable(
                test,
                "warcio",
                "set WARCIO or put warcio on PATH: pip install warcio",
            );
            return None;
        };
        // The interpreter warcio was installed for: its shebang, else a python3 beside it.
        let shebang = std::fs::read_to_string(&exe)
            .ok()
            .and_then(|s| s.lines().next().map(str::to_string))
            .and_then(|l| l.strip_prefix("#!").map(|p| PathBuf::from(p.trim())));
        let python = shebang
            .filter(|p| p.is_file())
            .or_else(|| {
                exe.parent()
                    .map(|d| d.join("python3"))
                    .filter(|p| p.is_file())
            })
            .unwrap_or_else(|| PathBuf::from("python3"));
        Some(Warcio { exe, python })
    }

    /// `warcio check -v` on one file: it must pass, with every checkable digest reported `digest pass` (revisits
    /// have none). Returns warcio's report.
    pub fn check(&self, path: &Path) -> Result<String, ToolError> {
        let out = Command::new(&self.exe)
            .arg("check")
            .arg("-v")
            .arg(path)
            .output()
            .map_err(ToolError::io("warcio check"))?;
        let stdout = String::from_utf8_lossy(&out.stdout).to_string();
        if !out.status.success() || stdout.contains("failed") || stdout.contains("no digest") {
            return Err(ToolError::Failed {
                what: format!("warcio check {}", path.display()),
                status: out.status,
                output: format!("{stdout}\n{}", String::from_utf8_lossy(&out.stderr)),
            });
        }
        let records = stdout.matches("WARC-Record-ID").count();
        let passed = stdout.matches("digest pass").count();
        let revisits = stdout.matches("not checked (revisit)").count();
        if records == 0 || records != passed + revisits {
            return Err(ToolError::Report {
                what: format!("warcio check {}", path.display()),
                report: stdout,
            });
        }
        Ok(stdout)
    }

    /// `warcio index -f FIELDS` on one file: one JSON object per record.
    pub fn index(&self, path: &Path, fields: &str) -> Result<Vec<serde_json::Value>, ToolError> {
        let out = Command::new(&self.exe)
            .args(["index", "-f", fields])
            .arg(path)
            .output()
            .map_err(ToolError::io("warcio index"))?;
        if !out.status.success() {
            return Err(ToolError::failed(
                format!("warcio index {}", path.display()),
                out.status,
                &out.stderr,
            ));
        }
        String::from_utf8_lossy(&out.stdout)
            .lines()
            .map(|l| {
                serde_json::from_str(l).map_err(|source| ToolError::Json {
                    what: format!("warcio index line {l:?}"),
                    source,
                })
            })
            .collect()
    }

    /// Every record of the files, in order, through warcio's Python API.
    pub fn records(&self, files: &[PathBuf]) -> Result<Vec<WarcioRecord>, ToolError> {
        let out = self.python(RECORDS, files)?;
        serde_json::from_slice(&out).map_err(|source| ToolError::Json {
            what: "warcio records".to_owned(),
            source,
        })
    }

    /// A Python script run with warcio's interpreter (`sys.argv[1:]` = `args`); its standard output.
    pub fn python(&self, script: &str, args: &[PathBuf]) -> Result<Vec<u8>, ToolError> {
        let out = Command::new(&self.python)
            .args(["-c", script])
            .args(args)
            .output()
            .map_err(ToolError::io(self.python.display().to_string()))?;
        if !out.status.success() {
            return Err(ToolError::failed(
                self.python.display().to_string(),
                out.status,
                &out.stderr,
            ));
        }
        Ok(out.stdout)
    }
}

/// The `.warc.gz` files of a directory, by name.
pub fn warc_files(dir: &Path) -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = std::fs::read_dir(dir)
        .map(|d| {
            d.filter_map(Result::ok)
                .map(|e| e.path())
                .filter(|p| p.to_string_lossy().ends_with(".warc.gz"))
                .collect()
        })
        .unwrap_or_default();
    v.sort();
    v
}
