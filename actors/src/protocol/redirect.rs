//! Why the Location of a 3xx answer gives no URL to follow: the parser tells the scheduler, which records it as
//! the answer's error.

use crawl_core::canon::CanonError;
use crawl_core::config::hide_userinfo;

/// Why a 3xx answer's Location header gives no URL to follow.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RedirectError {
    /// The Location does not resolve against the page's URL to a canonical crawlable URL. `location` is as
    /// received, without the user name and password it may carry.
    #[error("unusable Location {location:?}: {reason}")]
    Unusable {
        location: String,
        reason: CanonError,
    },
}

impl RedirectError {
    /// The Location `location` (as received) refused for `reason`.
    pub fn unusable(location: &str, reason: CanonError) -> RedirectError {
        RedirectError::Unusable {
            location: hide_userinfo(location).into_owned(),
            reason,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_unusable_location_is_named_without_its_userinfo() {
        let Err(reason) = crawl_core::canon::canonicalize("http://u:hunter2@[bad/x") else {
            panic!("an unclosed IPv6 literal canonicalised");
        };
        let e = RedirectError::unusable("http://u:hunter2@[bad/x", reason.clone());
        assert_eq!(
            e,
            RedirectError::Unusable {
                location: "http://***@[bad/x".to_owned(),
                reason
            }
        );
        assert_eq!(
            e.to_string(),
            "unusable Location \"http://***@[bad/x\": invalid url: invalid IPv6 address"
        );
        let e =
            RedirectError::unusable("ftp://a.test/", CanonError::UnsupportedScheme("ftp".into()));
        assert_eq!(
            e.to_string(),
            "unusable Location \"ftp://a.test/\": unsupported scheme: ftp"
        );
    }
}
