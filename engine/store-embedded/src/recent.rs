//! An exact cache of recently seen URLs: most links a crawl finds are navigation that repeats from page to page, and
//! a hit here confirms a duplicate without a lookup in the store. Exact because it compares the URL, not only its
//! fingerprint; bounded by two generations of `cap` entries (the older one is dropped when the newer fills).

use crawl_core::frontier::fphash::FpMap;

#[derive(Debug)]
pub struct RecentUrls {
    cur: FpMap<u64, Box<str>>,
    old: FpMap<u64, Box<str>>,
    cap: usize,
}

impl RecentUrls {
    pub fn new(cap: usize) -> RecentUrls {
        RecentUrls {
            cur: FpMap::with_capacity_and_hasher(cap.min(1 << 16), Default::default()),
            old: FpMap::default(),
            cap: cap.max(1),
        }
    }

    /// True when `url` (with fingerprint `fp`) is known to be stored.
    pub fn contains(&self, fp: u64, url: &str) -> bool {
        self.cur.get(&fp).is_some_and(|u| &**u == url)
            || self.old.get(&fp).is_some_and(|u| &**u == url)
    }

    /// Remembers a URL that is stored (committed).
    pub fn insert(&mut self, fp: u64, url: &str) {
        if self.cur.len() >= self.cap {
            self.old = std::mem::take(&mut self.cur);
        }
        self.cur.insert(fp, url.into());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exact_and_bounded() {
        let mut r = RecentUrls::new(2);
        r.insert(1, "http://a/1");
        assert!(r.contains(1, "http://a/1"));
        assert!(
            !r.contains(1, "http://a/other"),
            "same fingerprint, other URL: not a hit"
        );
        r.insert(2, "http://a/2");
        r.insert(3, "http://a/3");
        assert!(
            r.contains(1, "http://a/1") && r.contains(3, "http://a/3"),
            "two generations kept"
        );
        r.insert(4, "http://a/4");
        r.insert(5, "http://a/5");
        assert!(
            !r.contains(1, "http://a/1"),
            "the oldest generation is dropped"
        );
    }
}
