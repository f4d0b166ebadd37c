//! What a closed file's upload is checked against: its size, its SHA-256, and the ETag S3 gives the object (the
//! MD5 of the bytes for a single put; for a multipart upload the MD5 of the parts' MD5s, then `-` and the number
//! of parts).

use std::io::Read;
use std::path::Path;

use data_encoding::HEXLOWER;
use md5::{Digest as _, Md5};

/// How much of the file is read at once.
const READ_BUF: usize = 1 << 20;

/// A file's size and digests, with `part_size` parts for the multipart ETag.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct FileDigest {
    pub(crate) bytes: u64,
    /// Lowercase hex.
    pub(crate) sha256: String,
    md5: [u8; 16],
    part_md5s: Vec<[u8; 16]>,
}

/// What an object's ETag says about the local file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum EtagCheck {
    Same,
    Different,
    /// Not an ETag of a form this can compute (server-side encryption with KMS, a multipart upload with another
    /// number of parts, another store's version tag).
    NotComparable,
}

impl FileDigest {
    /// Reads `path` once (blocking) and digests it.
    pub(crate) fn of_file(path: &Path, part_size: usize) -> std::io::Result<FileDigest> {
        let mut f = std::fs::File::open(path)?;
        let mut d = Digester::new(part_size);
        let mut buf = vec![0u8; READ_BUF];
        loop {
            let n = f.read(&mut buf)?;
            if n == 0 {
                return Ok(d.finish());
            }
            d.update(&buf[..n]);
        }
    }

    /// The digest of bytes in memory.
    #[cfg(test)]
    pub(crate) fn of_bytes(data: &[u8], part_size: usize) -> FileDigest {
        let mut d = Digester::new(part_size);
        d.update(data);
        d.finish()
    }

    /// The number of parts of a multipart upload of this file.
    pub(crate) fn parts(&self) -> usize {
        self.part_md5s.len()
    }

    /// The ETag of a single put (without quotes).
    pub(crate) fn single_etag(&self) -> String {
        HEXLOWER.encode(&self.md5)
    }

    /// The ETag of a multipart upload in parts of `part_size` (without quotes).
    pub(crate) fn multipart_etag(&self) -> String {
        let mut h = Md5::new();
        for p in &self.part_md5s {
            h.update(p);
        }
        format!(
            "{}-{}",
            HEXLOWER.encode(&h.finalize()),
            self.part_md5s.len()
        )
    }

    /// Compares an object's ETag (quoted or not) with the one this file gives, as a single put or as a multipart
    /// upload, whichever form the ETag has.
    pub(crate) fn check_etag(&self, etag: &str) -> EtagCheck {
        let e = etag.trim().trim_start_matches("W/").trim_matches('"');
        let hex32 = |s: &str| s.len() == 32 && s.bytes().all(|b| b.is_ascii_hexdigit());
        let same = |ok: bool| {
            if ok {
                EtagCheck::Same
            } else {
                EtagCheck::Different
            }
        };
        match e.split_once('-') {
            None if hex32(e) => same(e.eq_ignore_ascii_case(&self.single_etag())),
            Some((h, n)) if hex32(h) && n.parse::<usize>().is_ok_and(|n| n == self.parts()) => {
                same(e.eq_ignore_ascii_case(&self.multipart_etag()))
            }
            _ => EtagCheck::NotComparable,
        }
    }
}

/// Feeds bytes to the SHA-256, the MD5 of the whole and the MD5 of the part they fall in.
struct Digester {
    part_size: usize,
    sha: ring::digest::Context,
    md5: Md5,
    part: Md5,
    in_part: usize,
    part_md5s: Vec<[u8; 16]>,
    bytes: u64,
}

impl Digester {
    fn new(part_size: usize) -> Digester {
        Digester {
            part_size: part_size.max(1),
            sha: ring::digest::Context::new(&ring::digest::SHA256),
            md5: Md5::new(),
            part: Md5::new(),
            in_part: 0,
            part_md5s: Vec::new(),
            bytes: 0,
        }
    }

    fn update(&mut self, mut data: &[u8]) {
        self.sha.update(data);
        self.md5.update(data);
        self.bytes += data.len() as u64;
        while !data.is_empty() {
            let take = data.len().min(self.part_size - self.in_part);
            self.part.update(&data[..take]);
            self.in_part += take;
            data = &data[take..];
            if self.in_part == self.part_size {
                self.close_part();
            }
        }
    }

    fn close_part(&mut self) {
        let done = std::mem::replace(&mut self.part, Md5::new()).finalize();
        self.part_md5s.push(md5_bytes(&done));
        self.in_part = 0;
    }

    fn finish(mut self) -> FileDigest {
        if self.in_part > 0 {
            self.close_part();
        }
        FileDigest {
            bytes: self.bytes,
            sha256: HEXLOWER.encode(self.sha.finish().as_ref()),
            md5: md5_bytes(&self.md5.finalize()),
            part_md5s: self.part_md5s,
        }
    }
}

fn md5_bytes(d: &[u8]) -> [u8; 16] {
    let mut out = [0u8; 16];
    out.copy_from_slice(&d[..16]);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn digests_of_known_bytes() {
        let d = FileDigest::of_bytes(b"abc", 5 << 20);
        assert_eq!(d.bytes, 3);
        assert_eq!(
            d.sha256,
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
        );
        assert_eq!(d.single_etag(), "900150983cd24fb0d6963f7d28e17f72");
        assert_eq!(d.parts(), 1);
        assert_eq!(
            d.check_etag("\"900150983cd24fb0d6963f7d28e17f72\""),
            EtagCheck::Same
        );
        assert_eq!(
            d.check_etag("900150983cd24fb0d6963f7d28e17f73"),
            EtagCheck::Different
        );
        assert_eq!(d.check_etag("\"3\""), EtagCheck::NotComparable);
    }

    #[test]
    fn the_multipart_etag_is_the_md5_of_the_part_md5s() {
        // Parts "ab", "cd", "e": md5(md5("ab") ++ md5("cd") ++ md5("e")) with "-3".
        let d = FileDigest::of_bytes(b"abcde", 2);
        let mut h = Md5::new();
        for p in [&b"ab"[..], b"cd", b"e"] {
            h.update(Md5::digest(p));
        }
        let want = format!("{}-3", HEXLOWER.encode(&h.finalize()));
        assert_eq!(d.multipart_etag(), want);
        assert_eq!(d.check_etag(&format!("\"{want}\"")), EtagCheck::Same);
        // Another number of parts cannot be compared; the same number with other bytes differs.
        let other_parts = format!("{}-2", &want[..32]);
        assert_eq!(d.check_etag(&other_parts), EtagCheck::NotComparable);
        let wrong = format!("{}-3", "0".repeat(32));
        assert_eq!(d.check_etag(&wrong), EtagCheck::Different);
        // Bytes fed in pieces that straddle the parts give the same digests.
        let mut pieces = Digester::new(2);
        pieces.update(b"a");
        pieces.update(b"bcd");
        pieces.update(b"e");
        assert_eq!(pieces.finish(), d);
    }

    #[test]
    fn an_empty_file_has_no_parts() {
        let d = FileDigest::of_bytes(b"", 2);
        assert_eq!(d.parts(), 0);
        assert_eq!(d.single_etag(), "d41d8cd98f00b204e9800998ecf8427e");
    }
}
