//! IPv6 literal hosts: one canonical form (lowercase, compressed, bracketed) whatever way they are written, and
//! the keys derived from it.

use crate::canon::*;

#[test]
fn ipv6_literals_are_lowercase_and_compressed() {
    for input in [
        "http://[::1]:8080/a",
        "http://[0:0:0:0:0:0:0:1]:8080/a",
        "HTTP://[0000:0000::0001]:8080/a",
        "http://[::0:1]:8080/a#frag",
    ] {
        let c = canonicalize(input).expect(input);
        assert_eq!(c.as_str(), "http://[::1]:8080/a", "{input}");
    }
    let c = canonicalize("https://[2001:DB8:0:0:0:0:0:AB]/").unwrap();
    assert_eq!(c.as_str(), "https://[2001:db8::ab]/");
    // The default port goes, as for names.
    let c = canonicalize("http://[FE80::1]:80/x").unwrap();
    assert_eq!(c.as_str(), "http://[fe80::1]/x");
    // The IPv4-mapped form is written in hex, so both spellings are one URL.
    let a = canonicalize("http://[::ffff:127.0.2.6]/").unwrap();
    let b = canonicalize("http://[::FFFF:7F00:206]/").unwrap();
    assert_eq!(a, b);
    assert_eq!(a.as_str(), "http://[::ffff:7f00:206]/");
}

#[test]
fn relative_links_and_keys_keep_the_literal() {
    let base = canonicalize("http://[0::1]:8080/dir/page").unwrap();
    let next = canonicalize_relative(&base, "../b?x=1").unwrap();
    assert_eq!(next.as_str(), "http://[::1]:8080/b?x=1");
    let abs = canonicalize_relative(&base, "//[0:0::2]/c").unwrap();
    assert_eq!(abs.as_str(), "http://[::2]/c");
    assert_eq!(host_key(&next), "[::1]");
    assert_eq!(authority_key(&next), "http://[::1]:8080");
    assert_eq!(robots_url(&next).as_str(), "http://[::1]:8080/robots.txt");
}

#[test]
fn malformed_literals_are_errors() {
    for bad in [
        "http://[::1/",
        "http://[:::1]/",
        "http://[fe80::1%eth0]/",
        "http://[12345::1]/",
    ] {
        assert!(canonicalize(bad).is_err(), "{bad}");
    }
}
