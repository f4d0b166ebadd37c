//! An error with its causes, as one line: what the fetcher, the DNS-over-HTTPS client and the trace exporter put
//! in their failure details.

use std::error::Error as StdError;
use std::io;

/// Longest error chain that is inspected.
pub const MAX_CHAIN: usize = 32;

/// The next error in the chain; for `io::Error` this is its payload, which `source()` skips.
pub fn next_in_chain<'a>(
    err: &'a (dyn StdError + 'static),
) -> Option<&'a (dyn StdError + 'static)> {
    if let Some(io_err) = err.downcast_ref::<io::Error>()
        && let Some(inner) = io_err.get_ref()
    {
        let inner: &(dyn StdError + 'static) = inner;
        return Some(inner);
    }
    err.source()
}

/// The whole chain rendered as `outer: inner: innermost`, skipping repeated messages.
pub fn chain_message(err: &(dyn StdError + 'static)) -> String {
    let mut parts: Vec<String> = Vec::new();
    let mut cur = Some(err);
    let mut depth = 0;
    while let Some(e) = cur {
        let msg = e.to_string();
        if !parts.iter().any(|p| p.contains(msg.as_str())) {
            parts.push(msg);
        }
        depth += 1;
        if depth >= MAX_CHAIN {
            break;
        }
        cur = next_in_chain(e);
    }
    parts.join(": ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Debug)]
    struct Outer(io::Error);

    impl std::fmt::Display for Outer {
        fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            f.write_str("send failed")
        }
    }

    impl StdError for Outer {
        fn source(&self) -> Option<&(dyn StdError + 'static)> {
            Some(&self.0)
        }
    }

    #[test]
    fn the_chain_goes_into_io_payloads_and_skips_repeats() {
        // io::Error::source skips its payload; the chain does not. The io error repeats its payload's message.
        let e = Outer(io::Error::other("connection refused"));
        assert_eq!(chain_message(&e), "send failed: connection refused");
        assert!(next_in_chain(&e.0).is_some(), "the payload of an io::Error");
    }
}
