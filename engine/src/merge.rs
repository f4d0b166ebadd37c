//! `crawl-engine merge -o OUT FILE...`: one JSONL from the files of the processes of one crawl, each record once.
//!
//! A record is identified by its `record_id` (written by the distributed mode) or, in files without one, by its URL
//! and, with continuous crawling (`[recrawl]`), its `visit`: each fetch of a URL keeps its own record.
//! The first record of each identity is kept, in the order of the files and their lines. Identities are remembered
//! as 128-bit fingerprints (xxh3), so memory stays at 16 bytes per record however long the URLs are; two distinct
//! identities sharing a fingerprint is a chance of about n²/2¹²⁹ (10⁻²³ for ten million records).
//!
//! A last line without its newline (a process killed while appending) is left out and reported; any other line
//! that is not a JSON record is an error naming its file and line. The output is written to a temporary file beside
//! OUT and renamed over it once complete, so OUT is never left half written.

use std::collections::HashSet;
use std::fs::File;
use std::io::{BufRead, BufReader, BufWriter, Write};
use std::path::{Path, PathBuf};

/// What a merge did.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct MergeReport {
    pub files: usize,
    /// Records read (complete lines).
    pub read: u64,
    /// Records written to the output.
    pub written: u64,
    /// Records dropped because their identity was already written.
    pub duplicates: u64,
    /// Files whose last line had no newline (left out).
    pub torn: Vec<PathBuf>,
}

/// Errors of a merge.
#[derive(Debug, thiserror::Error)]
pub enum MergeError {
    #[error("{path}: {source}")]
    Io {
        path: String,
        source: std::io::Error,
    },
    #[error("{path}:{line}: not a crawl record: {detail}")]
    BadLine {
        path: String,
        line: u64,
        detail: String,
    },
    #[error("no input files")]
    NoInput,
    #[error("the output {0} is also an input")]
    OutputIsInput(String),
}

fn io(path: &Path) -> impl FnOnce(std::io::Error) -> MergeError + '_ {
    move |source| MergeError::Io {
        path: path.display().to_string(),
        source,
    }
}

/// The identity of one record line.
fn identity(path: &Path, line_no: u64, line: &[u8]) -> Result<u128, MergeError> {
    #[derive(serde::Deserialize)]
    struct Ident<'a> {
        #[serde(borrow, default)]
        record_id: Option<std::borrow::Cow<'a, str>>,
        #[serde(borrow)]
        url: std::borrow::Cow<'a, str>,
        #[serde(default)]
        visit: Option<u32>,
    }
    let ident: Ident = serde_json::from_slice(line).map_err(|e| MergeError::BadLine {
        path: path.display().to_string(),
        line: line_no,
        detail: e.to_string(),
    })?;
    let key = match (&ident.record_id, ident.visit) {
        (Some(id), _) => format!("id:{id}"),
        (None, Some(visit)) => format!("visit:{visit}:{}", ident.url),
        (None, None) => format!("url:{}", ident.url),
    };
    Ok(twox_hash::XxHash3_128::oneshot(key.as_bytes()))
}

/// Merges `inputs` into `output`.
pub fn merge(output: &Path, inputs: &[PathBuf]) -> Result<MergeReport, MergeError> {
    if inputs.is_empty() {
        return Err(MergeError::NoInput);
    }
    if let Ok(out) = output.canonicalize() {
        for i in inputs {
            if i.canonicalize().is_ok_and(|c| c == out) {
                return Err(MergeError::OutputIsInput(output.display().to_string()));
            }
        }
    }
    let tmp = {
        let mut name = output
            .file_name()
            .map(|n| n.to_os_string())
            .unwrap_or_default();
        name.push(".merging");
        output.with_file_name(name)
    };
    let mut report = MergeReport {
        files: inputs.len(),
        ..MergeReport::default()
    };
    let mut seen: HashSet<u128> = HashSet::new();
    let mut out = BufWriter::new(File::create(&tmp).map_err(io(&tmp))?);
    let result = (|| {
        for path in inputs {
            let mut reader = BufReader::new(File::open(path).map_err(io(path))?);
            let mut line = Vec::new();
            let mut line_no = 0u64;
            loop {
                line.clear();
                let n = reader.read_until(b'\n', &mut line).map_err(io(path))?;
                if n == 0 {
                    break;
                }
                line_no += 1;
                if line.last() != Some(&b'\n') {
                    report.torn.push(path.clone());
                    break;
                }
                if line.iter().all(u8::is_ascii_whitespace) {
                    continue;
                }
                report.read += 1;
                if seen.insert(identity(path, line_no, &line)?) {
                    out.write_all(&line).map_err(io(&tmp))?;
                    report.written += 1;
                } else {
                    report.duplicates += 1;
                }
            }
        }
        out.flush().map_err(io(&tmp))?;
        out.get_ref().sync_all().map_err(io(&tmp))?;
        Ok(())
    })();
    if let Err(e) = result {
        let _ = std::fs::remove_file(&tmp);
        return Err(e);
    }
    std::fs::rename(&tmp, output).map_err(io(output))?;
    Ok(report)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn write(dir: &Path, name: &str, text: &str) -> PathBuf {
        let p = dir.join(name);
        std::fs::write(&p, text).unwrap();
        p
    }

    #[test]
    fn keeps_the_first_record_of_each_identity_in_file_order() {
        let dir = tempfile::tempdir().unwrap();
        let a = write(
            dir.path(),
            "a.jsonl",
            "{\"url\":\"http://x/1\",\"record_id\":\"r1\",\"n\":1}\n{\"url\":\"http://x/2\",\"record_id\":\"r2\"}\n",
        );
        let b = write(
            dir.path(),
            "b.jsonl",
            "{\"url\":\"http://x/1\",\"record_id\":\"r1\",\"n\":2}\n\n{\"url\":\"http://x/3\"}\n{\"url\":\"http://x/3\"}\n",
        );
        let out = dir.path().join("all.jsonl");
        let r = merge(&out, &[a, b]).unwrap();
        assert_eq!((r.read, r.written, r.duplicates), (5, 3, 2));
        assert!(r.torn.is_empty());
        let text = std::fs::read_to_string(&out).unwrap();
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines.len(), 3);
        assert!(lines[0].contains("\"n\":1"), "the first copy wins");
        assert!(lines[1].contains("x/2") && lines[2].contains("x/3"));
        assert!(!dir.path().join("all.jsonl.merging").exists());
    }

    #[test]
    fn each_fetch_of_a_recrawl_keeps_its_record() {
        let dir = tempfile::tempdir().unwrap();
        // A single-process continuous crawl: no record_id, one line per visit; a copy of visit 2 elsewhere.
        let a = write(
            dir.path(),
            "a.jsonl",
            "{\"url\":\"http://x/1\",\"visit\":1,\"changed\":null}\n\
             {\"url\":\"http://x/1\",\"visit\":2,\"changed\":false}\n\
             {\"url\":\"http://x/2\",\"visit\":1,\"changed\":null}\n",
        );
        let b = write(
            dir.path(),
            "b.jsonl",
            "{\"url\":\"http://x/1\",\"visit\":2,\"changed\":true}\n\
             {\"url\":\"http://x/1\",\"visit\":3,\"changed\":true}\n\
             {\"url\":\"http://x/1\"}\n",
        );
        // Distributed: the record_id names the fetch, whatever the visit says.
        let c = write(
            dir.path(),
            "c.jsonl",
            "{\"url\":\"http://x/9\",\"record_id\":\"09-1\",\"visit\":1}\n\
             {\"url\":\"http://x/9\",\"record_id\":\"09-2\",\"visit\":2}\n\
             {\"url\":\"http://x/9\",\"record_id\":\"09-2\",\"visit\":2}\n",
        );
        let out = dir.path().join("all.jsonl");
        let r = merge(&out, &[a, b, c]).unwrap();
        assert_eq!((r.read, r.written, r.duplicates), (9, 7, 2));
        let text = std::fs::read_to_string(&out).unwrap();
        let visits: Vec<(String, Option<u64>)> = text
            .lines()
            .map(|l| {
                let v: serde_json::Value = serde_json::from_str(l).unwrap();
                (v["url"].as_str().unwrap().to_owned(), v["visit"].as_u64())
            })
            .collect();
        let x1 = |n| ("http://x/1".to_owned(), n);
        let x9 = |n| ("http://x/9".to_owned(), Some(n));
        assert_eq!(
            visits,
            [
                x1(Some(1)),
                x1(Some(2)),
                ("http://x/2".to_owned(), Some(1)),
                x1(Some(3)),
                x1(None),
                x9(1),
                x9(2)
            ]
        );
        assert!(
            text.contains("\"visit\":2,\"changed\":false"),
            "the first copy of visit 2 wins"
        );
    }

    #[test]
    fn a_torn_last_line_is_left_out_and_reported() {
        let dir = tempfile::tempdir().unwrap();
        let a = write(
            dir.path(),
            "a.jsonl",
            "{\"url\":\"http://x/1\"}\n{\"url\":\"ht",
        );
        let out = dir.path().join("all.jsonl");
        let r = merge(&out, std::slice::from_ref(&a)).unwrap();
        assert_eq!((r.read, r.written), (1, 1));
        assert_eq!(r.torn, vec![a]);
    }

    #[test]
    fn a_bad_line_names_file_and_line_and_leaves_no_output() {
        let dir = tempfile::tempdir().unwrap();
        let a = write(
            dir.path(),
            "a.jsonl",
            "{\"url\":\"http://x/1\"}\nnot json\n",
        );
        let out = dir.path().join("all.jsonl");
        let e = merge(&out, &[a]).unwrap_err().to_string();
        assert!(e.contains("a.jsonl:2: not a crawl record"), "{e}");
        assert!(!out.exists() && !dir.path().join("all.jsonl.merging").exists());
    }

    #[test]
    fn refuses_no_input_and_an_output_that_is_an_input() {
        let dir = tempfile::tempdir().unwrap();
        let a = write(dir.path(), "a.jsonl", "{\"url\":\"http://x/1\"}\n");
        assert!(matches!(merge(&a, &[]), Err(MergeError::NoInput)));
        assert!(matches!(
            merge(&a, std::slice::from_ref(&a)),
            Err(MergeError::OutputIsInput(_))
        ));
        assert_eq!(
            std::fs::read_to_string(&a).unwrap(),
            "{\"url\":\"http://x/1\"}\n"
        );
    }
}
