//! SHA-1 digests in the WARC form `sha1:` + RFC 4648 base32 (upper case, 32 characters for 20 bytes), as
//! Heritrix and warcio write `WARC-Block-Digest` and `WARC-Payload-Digest`.

use std::fmt;

use sha1::Digest as _;

/// An incremental SHA-1 over one or more slices (the SHA extensions of the CPU when it has them).
pub struct Sha1 {
    ctx: sha1::Sha1,
}

impl Sha1 {
    pub fn new() -> Sha1 {
        Sha1 {
            ctx: sha1::Sha1::new(),
        }
    }

    pub fn update(&mut self, bytes: &[u8]) {
        self.ctx.update(bytes);
    }

    pub fn finish(self) -> Digest {
        Digest(self.ctx.finalize().into())
    }

    /// The digest of one slice.
    pub fn of(bytes: &[u8]) -> Digest {
        let mut h = Sha1::new();
        h.update(bytes);
        h.finish()
    }
}

impl Default for Sha1 {
    fn default() -> Self {
        Sha1::new()
    }
}

impl fmt::Debug for Sha1 {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Sha1")
    }
}

/// A SHA-1 digest. `Display` gives the WARC label, `sha1:` + 32 base32 characters.
#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Digest(pub [u8; 20]);

impl Digest {
    /// The WARC label, e.g. `sha1:3I42H3S6NNFQ2MSVX7XZKYAYSCX5QBYJ` for the empty string.
    pub fn label(&self) -> String {
        // 5 bytes of prefix and 32 of base32: one allocation, no formatting machinery (once a response).
        let mut label = String::with_capacity(37);
        label.push_str("sha1:");
        data_encoding::BASE32.encode_append(&self.0, &mut label);
        label
    }

    /// Parses a `sha1:` + base32 label (the form this module writes).
    pub fn parse_label(label: &str) -> Option<Digest> {
        let b32 = label.strip_prefix("sha1:")?;
        let raw = data_encoding::BASE32.decode(b32.as_bytes()).ok()?;
        let bytes: [u8; 20] = raw.try_into().ok()?;
        Some(Digest(bytes))
    }
}

impl fmt::Display for Digest {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "sha1:{}", base32(&self.0))
    }
}

impl fmt::Debug for Digest {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(self, f)
    }
}

/// RFC 4648 base32, upper case, with padding (20-byte digests need none).
pub fn base32(bytes: &[u8]) -> String {
    data_encoding::BASE32.encode(bytes)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rfc4648_base32_vectors() {
        assert_eq!(base32(b""), "");
        assert_eq!(base32(b"f"), "MY======");
        assert_eq!(base32(b"fo"), "MZXQ====");
        assert_eq!(base32(b"foobar"), "MZXW6YTBOI======");
    }

    #[test]
    fn sha1_labels_match_known_values() {
        // sha1("") = da39a3ee5e6b4b0d3255bfef95601890afd80709
        assert_eq!(
            Sha1::of(b"").label(),
            "sha1:3I42H3S6NNFQ2MSVX7XZKYAYSCX5QBYJ"
        );
        // sha1("abc") = a9993e364706816aba3e25717850c26c9cd0d89d
        let d = Sha1::of(b"abc");
        assert_eq!(d.0[..4], [0xa9, 0x99, 0x3e, 0x36]);
        assert_eq!(Digest::parse_label(&d.label()), Some(d));
        let mut inc = Sha1::new();
        inc.update(b"a");
        inc.update(b"bc");
        assert_eq!(inc.finish(), d);
        assert_eq!(Digest::parse_label("md5:AAAA"), None);
    }
}
