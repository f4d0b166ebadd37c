//! A bounded window of one queue of the store (a host's, or the records queue) in memory: the next URLs in queue
//! order, refilled from the store as it runs low.
//!
//! Invariant: every pending store entry of this queue with a key up to the cursor is in the window, leased, or
//! done and not yet committed ("out"). Entries the store hands out again while they are out are ignored, so the
//! cursor may move back (when the window overflows) without a URL ever being leased twice.

use super::{Entry, QueueKey, UrlRef};
use std::collections::BTreeMap;

/// How far the window has read its queue.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Cursor {
    /// Nothing read yet.
    Start,
    /// Read up to and including this key.
    At(QueueKey),
    /// Everything read: the store holds nothing beyond what is in memory.
    End,
}

/// A refill to ask the store for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Refill {
    pub after: Option<QueueKey>,
    pub max: usize,
}

#[derive(Debug)]
pub struct Window {
    entries: BTreeMap<QueueKey, Entry>,
    cursor: Cursor,
    loading: bool,
    out: super::fphash::FpSet<UrlRef>,
}

impl Window {
    /// A window of a queue that may have entries in the store.
    pub fn unloaded() -> Window {
        Window {
            entries: BTreeMap::new(),
            cursor: Cursor::Start,
            loading: false,
            out: Default::default(),
        }
    }

    /// A window of a queue that is empty in the store.
    pub fn complete() -> Window {
        Window {
            cursor: Cursor::End,
            ..Window::unloaded()
        }
    }

    pub fn len(&self) -> usize {
        self.entries.len()
    }

    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// The store may hold more than the window.
    pub fn has_more(&self) -> bool {
        self.cursor != Cursor::End
    }

    pub fn is_loading(&self) -> bool {
        self.loading
    }

    /// Entries leased or done but not committed.
    pub fn out(&self) -> usize {
        self.out.len()
    }

    /// Starts a refill when the window has fallen below half of `cap` and the store has more. The caller sends
    /// it to the store and hands the answer to [`fill`](Self::fill).
    pub fn want_refill(&mut self, cap: usize) -> Option<Refill> {
        if self.loading || !self.has_more() || self.entries.len() > cap / 2 {
            return None;
        }
        self.loading = true;
        let after = match self.cursor {
            Cursor::At(k) => Some(k),
            _ => None,
        };
        Some(Refill {
            after,
            max: cap.saturating_sub(self.entries.len()).max(1),
        })
    }

    /// A refill failed: it may be asked again.
    pub fn refill_failed(&mut self) {
        self.loading = false;
    }

    /// The store's answer to `asked`. Returns the change in the number of entries held.
    pub fn fill(&mut self, entries: Vec<Entry>, asked: Refill, cap: usize) -> isize {
        self.loading = false;
        let before = self.entries.len() as isize;
        let complete = entries.len() < asked.max;
        let last = entries.last().map(Entry::key);
        for e in entries {
            if !self.out.contains(&e.id) {
                self.entries.entry(e.key()).or_insert(e);
            }
        }
        self.cursor = match (complete, last) {
            (true, _) => Cursor::End,
            (false, Some(k)) => Cursor::At(k),
            (false, None) => self.cursor,
        };
        self.trim(cap);
        self.entries.len() as isize - before
    }

    /// A URL the store just added to this queue. Kept when it falls inside what the window has read; otherwise
    /// it stays in the store for a later refill. Returns the change in the number of entries held.
    pub fn offer(&mut self, e: Entry, cap: usize) -> isize {
        let inside = match self.cursor {
            Cursor::End => true,
            Cursor::At(k) => e.key() <= k,
            Cursor::Start => false,
        };
        if !inside || self.out.contains(&e.id) {
            return 0;
        }
        let before = self.entries.len() as isize;
        self.entries.entry(e.key()).or_insert(e);
        self.trim(cap);
        self.entries.len() as isize - before
    }

    /// A leased URL goes back (retry, re-drive). Returns the change in the number of entries held.
    pub fn put_back(&mut self, e: Entry) -> isize {
        self.out.remove(&e.id);
        let before = self.entries.len() as isize;
        self.entries.insert(e.key(), e);
        self.entries.len() as isize - before
    }

    /// Keeps at most `cap` entries: the last ones go back to the store (they are pending there) and the cursor
    /// moves back so a later refill reads them again.
    fn trim(&mut self, cap: usize) {
        let cap = cap.max(1);
        let mut trimmed = false;
        while self.entries.len() > cap {
            self.entries.pop_last();
            trimmed = true;
        }
        if trimmed && let Some((k, _)) = self.entries.last_key_value() {
            self.cursor = Cursor::At(*k);
        }
    }

    pub fn peek(&self) -> Option<&Entry> {
        self.entries.first_key_value().map(|(_, e)| e)
    }

    /// Takes the first entry; a stored one is out until [`settle`](Self::settle) or [`put_back`](Self::put_back).
    pub fn pop(&mut self) -> Option<Entry> {
        let (_, e) = self.entries.pop_first()?;
        if e.id != UrlRef::default() {
            self.out.insert(e.id);
        }
        Some(e)
    }

    /// A URL taken from this window is done and committed.
    pub fn settle(&mut self, id: UrlRef) {
        self.out.remove(&id);
        // A large burst of leases leaves a large table behind: let it go once they are all settled.
        if self.out.is_empty() && self.out.capacity() > 1024 {
            self.out = Default::default();
        }
    }

    /// Reads the queue again from its start (entries held stay; those out are skipped).
    pub fn rescan(&mut self) {
        self.cursor = Cursor::Start;
        self.loading = false;
    }

    /// Drops what is held (the store keeps it). Returns how many entries were dropped.
    pub fn release_memory(&mut self) -> usize {
        let n = self.entries.len();
        if n > 0 {
            self.entries = BTreeMap::new();
            self.cursor = Cursor::Start;
        }
        n
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn e(n: u64, depth: u32) -> Entry {
        let mut e = Entry::page(format!("http://a/{n}"), depth, None);
        e.seq = n;
        e.id = UrlRef { key: n, slot: 0 };
        e
    }

    fn urls(w: &mut Window) -> Vec<String> {
        let mut v = Vec::new();
        while let Some(x) = w.pop() {
            v.push(x.url);
        }
        v
    }

    #[test]
    fn refills_in_order_and_completes() {
        let mut w = Window::unloaded();
        let r = w.want_refill(4).unwrap();
        assert_eq!(
            r,
            Refill {
                after: None,
                max: 4
            }
        );
        assert!(w.want_refill(4).is_none(), "one refill at a time");
        assert_eq!(w.fill(vec![e(1, 0), e(2, 0), e(3, 1), e(4, 1)], r, 4), 4);
        assert!(w.has_more());
        assert_eq!(w.pop().unwrap().url, "http://a/1");
        assert_eq!(w.pop().unwrap().url, "http://a/2");
        let r = w.want_refill(4).unwrap();
        assert_eq!(r.after, Some(QueueKey { depth: 1, seq: 4 }));
        w.fill(vec![e(5, 1)], r, 4);
        assert!(!w.has_more());
        assert_eq!(urls(&mut w), vec!["http://a/3", "http://a/4", "http://a/5"]);
    }

    #[test]
    fn out_entries_are_never_handed_out_twice_after_the_cursor_moves_back() {
        let mut w = Window::unloaded();
        let r = w.want_refill(3).unwrap();
        w.fill(vec![e(1, 1), e(2, 1), e(3, 1)], r, 3);
        let leased = w.pop().unwrap();
        assert_eq!(leased.url, "http://a/1");
        // two lower-depth URLs arrive: the window overflows and gives back its last entries
        w.offer(e(10, 0), 3);
        w.offer(e(11, 0), 3);
        assert_eq!(w.len(), 3);
        // the store hands out everything after the moved-back cursor again, including the leased URL
        let r = w.want_refill(3);
        assert!(r.is_none(), "window is full");
        assert_eq!(w.pop().unwrap().url, "http://a/10");
        assert_eq!(w.pop().unwrap().url, "http://a/11");
        let r = w.want_refill(3).unwrap();
        assert_eq!(r.after, Some(QueueKey { depth: 1, seq: 2 }));
        w.fill(vec![e(1, 1), e(3, 1)], r, 3);
        assert_eq!(
            urls(&mut w),
            vec!["http://a/2", "http://a/3"],
            "leased URL 1 not again"
        );
    }

    #[test]
    fn offers_beyond_the_cursor_stay_in_the_store() {
        let mut w = Window::unloaded();
        assert_eq!(
            w.offer(e(1, 0), 4),
            0,
            "not loaded yet: the refill brings it"
        );
        let r = w.want_refill(2).unwrap();
        w.fill(vec![e(1, 0), e(2, 0)], r, 2);
        assert_eq!(w.offer(e(3, 0), 2), 0);
        let mut c = Window::complete();
        assert_eq!(c.offer(e(3, 0), 2), 1);
        c.pop();
        assert_eq!(c.out(), 1);
        c.settle(UrlRef { key: 3, slot: 0 });
        assert_eq!(c.out(), 0);
    }
}
