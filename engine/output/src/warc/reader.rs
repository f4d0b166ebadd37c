//! Walks the gzip members of a `.warc.gz` file and reports each one's compressed bounds; the writer uses it to
//! find a torn tail, the tests to read back what was written.

use std::io::{self, BufRead, BufReader, Read};

/// One complete gzip member: where it starts, its compressed length and its decompressed bytes.
#[derive(Debug)]
pub struct Member {
    pub offset: u64,
    pub length: u64,
    pub data: Vec<u8>,
}

/// Reads members one after another. A member that does not decode to its end with a matching CRC and size (a
/// torn or damaged tail) ends the walk with an error that carries its offset.
pub struct MemberReader<R: Read> {
    inner: Counting<BufReader<R>>,
    done: bool,
}

/// A member that could not be read whole.
#[derive(Debug)]
pub struct BadMember {
    pub offset: u64,
    pub source: io::Error,
}

impl<R: Read> MemberReader<R> {
    pub fn new(r: R) -> MemberReader<R> {
        MemberReader {
            inner: Counting {
                inner: BufReader::with_capacity(256 * 1024, r),
                pos: 0,
            },
            done: false,
        }
    }

    /// The next member, `Ok(None)` at a clean end of file.
    pub fn next_member(&mut self) -> Result<Option<Member>, BadMember> {
        if self.done {
            return Ok(None);
        }
        let offset = self.inner.pos;
        let at_end = self
            .inner
            .fill_buf()
            .map(|b| b.is_empty())
            .map_err(|source| BadMember { offset, source })?;
        if at_end {
            self.done = true;
            return Ok(None);
        }
        let mut data = Vec::new();
        let mut dec = flate2::bufread::GzDecoder::new(&mut self.inner);
        if let Err(source) = dec.read_to_end(&mut data) {
            self.done = true;
            return Err(BadMember { offset, source });
        }
        drop(dec);
        Ok(Some(Member {
            offset,
            length: self.inner.pos - offset,
            data,
        }))
    }
}

/// A `BufRead` that counts the bytes its user consumed.
struct Counting<R> {
    inner: R,
    pos: u64,
}

impl<R: BufRead> Read for Counting<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let n = self.inner.read(buf)?;
        self.pos += n as u64;
        Ok(n)
    }
}

impl<R: BufRead> BufRead for Counting<R> {
    fn fill_buf(&mut self) -> io::Result<&[u8]> {
        self.inner.fill_buf()
    }

    fn consume(&mut self, amt: usize) {
        self.pos += amt as u64;
        self.inner.consume(amt);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    fn gz(data: &[u8]) -> Vec<u8> {
        let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
        e.write_all(data).unwrap();
        e.finish().unwrap()
    }

    #[test]
    fn members_are_bounded_and_a_torn_one_is_reported() {
        let (a, b) = (gz(b"first"), gz(&[7u8; 10_000]));
        let mut file = [a.clone(), b.clone()].concat();
        let mut r = MemberReader::new(&file[..]);
        let m = r.next_member().unwrap().unwrap();
        assert_eq!(
            (m.offset, m.length, &m.data[..]),
            (0, a.len() as u64, &b"first"[..])
        );
        let m = r.next_member().unwrap().unwrap();
        assert_eq!((m.offset, m.length), (a.len() as u64, b.len() as u64));
        assert!(r.next_member().unwrap().is_none());

        file.extend_from_slice(&b[..b.len() - 3]);
        let mut r = MemberReader::new(&file[..]);
        r.next_member().unwrap().unwrap();
        r.next_member().unwrap().unwrap();
        let bad = r.next_member().unwrap_err();
        assert_eq!(bad.offset, (a.len() + b.len()) as u64);

        let mut corrupt = a.clone();
        let n = corrupt.len();
        corrupt[n - 5] ^= 0xff; // the CRC
        assert!(MemberReader::new(&corrupt[..]).next_member().is_err());
    }
}
