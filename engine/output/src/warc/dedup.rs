//! A bounded in-memory table of payloads already archived in this crawl (payload digest → the record holding it),
//! for writing `revisit` records instead of storing a payload twice. Entries are evicted with the CLOCK
//! (second-chance) rule, so payloads that keep recurring stay while one-off ones make room.

use std::collections::{HashMap, VecDeque};

use super::capture::RevisitTarget;
use super::digest::Digest;

#[derive(Debug)]
struct Entry {
    target: RevisitTarget,
    referenced: bool,
}

/// Payload digest → the first record that archived the payload, holding at most `capacity` entries.
#[derive(Debug)]
pub struct PayloadDedup {
    capacity: usize,
    map: HashMap<Digest, Entry>,
    ring: VecDeque<Digest>,
}

impl PayloadDedup {
    /// A table of at most `capacity` payloads (0 remembers nothing).
    pub fn new(capacity: usize) -> PayloadDedup {
        PayloadDedup {
            capacity,
            map: HashMap::with_capacity(capacity.min(1 << 16)),
            ring: VecDeque::with_capacity(capacity.min(1 << 16)),
        }
    }

    /// The record that holds this payload, if it is remembered; marks it as recently used.
    pub fn get(&mut self, digest: &Digest) -> Option<&RevisitTarget> {
        let e = self.map.get_mut(digest)?;
        e.referenced = true;
        Some(&e.target)
    }

    /// Remembers the record of a payload archived in full; a digest already present keeps its first record.
    pub fn insert(&mut self, target: RevisitTarget) {
        if self.capacity == 0 || self.map.contains_key(&target.payload_digest) {
            return;
        }
        while self.map.len() >= self.capacity {
            let Some(d) = self.ring.pop_front() else {
                break;
            };
            match self.map.get_mut(&d) {
                Some(e) if e.referenced => {
                    e.referenced = false;
                    self.ring.push_back(d);
                }
                _ => {
                    self.map.remove(&d);
                }
            }
        }
        let d = target.payload_digest;
        self.map.insert(
            d,
            Entry {
                target,
                referenced: false,
            },
        );
        self.ring.push_back(d);
    }

    pub fn len(&self) -> usize {
        self.map.len()
    }

    pub fn is_empty(&self) -> bool {
        self.map.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::warc::digest::Sha1;
    use crate::warc::record::RecordId;

    fn target(payload: &[u8]) -> RevisitTarget {
        RevisitTarget {
            record_id: RecordId::random().unwrap(),
            target_uri: format!("http://h/{}", payload.len()),
            date: "2026-12-03T05:40:00.000000Z".to_string(),
            payload_digest: Sha1::of(payload),
        }
    }

    #[test]
    fn bounded_with_second_chance() {
        let mut t = PayloadDedup::new(2);
        let (a, b, c) = (target(b"a"), target(b"bb"), target(b"ccc"));
        t.insert(a.clone());
        t.insert(b.clone());
        let mut a2 = target(b"a");
        a2.target_uri = "http://other/".to_string();
        t.insert(a2);
        assert_eq!(
            t.get(&a.payload_digest),
            Some(&a),
            "the first record is kept"
        );
        t.insert(c.clone());
        assert_eq!(t.len(), 2);
        assert!(t.get(&a.payload_digest).is_some(), "a was used, so b went");
        assert!(t.get(&b.payload_digest).is_none());
        assert!(t.get(&c.payload_digest).is_some());
        let mut none = PayloadDedup::new(0);
        none.insert(a.clone());
        assert!(none.is_empty());
    }
}
