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

impl Cursor {
    /// Read up to, and not including, `key`.
    fn below(key: QueueKey) -> Cursor {
        let prev = match key.seq.checked_sub(1) {
            Some(seq) => Some(QueueKey { seq, ..key }),
            None => key.depth.checked_sub(1).map(|depth| QueueKey {
                depth,
                seq: u64::MAX,
            }),
        };
        prev.map_or(Cursor::Start, Cursor::At)
    }
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
    /// While a refill is out, the smallest key the window let go of (a URL added beyond the cursor, an entry
    /// trimmed): the refill's answer may have been read before it was there, so it reads no further.
    held_back: Option<QueueKey>,
    out: super::fphash::FpSet<UrlRef>,
}

impl Window {
    /// A window of a queue that may have entries in the store.
    pub fn unloaded() -> Window {
        Window {
            entries: BTreeMap::new(),
            cursor: Cursor::Start,
            loading: false,
            held_back: None,
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
        self.held_back = None;
    }

    /// The store's answer to `asked`. Returns the change in the number of entries held. When the window let go of
    /// a key while the refill was out (see [`offer`](Self::offer) and the trimming of an overflow), the answer is
    /// taken only below that key and the cursor stops there: the next refill reads on from it.
    pub fn fill(&mut self, entries: Vec<Entry>, asked: Refill, cap: usize) -> isize {
        self.loading = false;
        let held_back = self.held_back.take();
        let before = self.entries.len() as isize;
        let complete = entries.len() < asked.max;
        let last = entries.last().map(Entry::key);
        for e in entries {
            if held_back.is_some_and(|k| e.key() >= k) {
                continue;
            }
            if !self.out.contains(&e.id) {
                self.entries.entry(e.key()).or_insert(e);
            }
        }
        self.cursor = match (complete, last) {
            (true, _) => Cursor::End,
            (false, Some(k)) => Cursor::At(k),
            (false, None) => self.cursor,
        };
        if let Some(k) = held_back
            && self.covers(k)
        {
            self.cursor = Cursor::below(k);
        }
        self.trim(cap);
        self.entries.len() as isize - before
    }

    /// True when the cursor is at or past `key`.
    fn covers(&self, key: QueueKey) -> bool {
        match self.cursor {
            Cursor::End => true,
            Cursor::At(k) => k >= key,
            Cursor::Start => false,
        }
    }

    /// While a refill is out, the window lets go of `key`: the refill's answer reads no further.
    fn hold_back(&mut self, key: QueueKey) {
        if self.loading {
            self.held_back = Some(self.held_back.map_or(key, |k| k.min(key)));
        }
    }

    /// A URL the store just added to this queue. Kept when it falls inside what the window has read; otherwise
    /// it stays in the store for a later refill (and a refill out, whose answer may have been read before the URL
    /// was added, reads no further than it). Returns the change in the number of entries held.
    pub fn offer(&mut self, e: Entry, cap: usize) -> isize {
        if !self.covers(e.key()) {
            self.hold_back(e.key());
            return 0;
        }
        if self.out.contains(&e.id) {
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
        let mut trimmed = None;
        while self.entries.len() > cap {
            trimmed = self.entries.pop_last().map(|(k, _)| k);
        }
        if let Some(first) = trimmed {
            self.hold_back(first);
            if let Some((k, _)) = self.entries.last_key_value() {
                self.cursor = Cursor::At(*k);
            }
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
        self.held_back = None;
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

    #[test]
    fn a_refill_read_before_a_url_was_added_beyond_the_cursor_stops_short_of_it() {
        let mut w = Window::unloaded();
        let r = w.want_refill(2).unwrap();
        w.fill(vec![e(1, 1), e(2, 1)], r, 2);
        assert_eq!(urls(&mut w), vec!["http://a/1", "http://a/2"]);
        let r = w.want_refill(2).unwrap();
        // A commit adds URL 5 while the refill is out; the store read the refill's answer before the add, and the
        // answer comes back after it: it says the queue ends with URL 3.
        assert_eq!(w.offer(e(5, 1), 2), 0, "beyond the cursor");
        w.fill(vec![e(3, 1)], r, 2);
        assert!(w.has_more(), "not read to its end: URL 5 is after");
        assert_eq!(urls(&mut w), vec!["http://a/3"]);
        let r = w.want_refill(2).unwrap();
        assert_eq!(r.after, Some(QueueKey { depth: 1, seq: 4 }));
        w.fill(vec![e(5, 1)], r, 2);
        assert!(!w.has_more());
        assert_eq!(urls(&mut w), vec!["http://a/5"]);
    }

    #[test]
    fn a_window_trimmed_while_a_refill_is_out_reads_again_from_where_it_was_trimmed() {
        let mut w = Window::unloaded();
        let r = w.want_refill(4).unwrap();
        w.fill((1..=4).map(|n| e(n, 1)).collect(), r, 4);
        assert_eq!(w.pop().unwrap().url, "http://a/1");
        assert_eq!(w.pop().unwrap().url, "http://a/2");
        let r = w.want_refill(4).unwrap();
        assert_eq!(r.after, Some(QueueKey { depth: 1, seq: 4 }));
        // Shallower URLs come in while the refill is out: the window overflows and lets URL 4 go.
        for n in 5..=7 {
            w.offer(e(n, 0), 4);
        }
        assert_eq!(w.len(), 4);
        let mut got = vec![w.pop().unwrap().url, w.pop().unwrap().url];
        // The answer read after URL 4: URL 8, the last one.
        w.fill(vec![e(8, 1)], r, 4);
        assert!(w.has_more(), "URL 4 and what follows are read again");
        got.extend(urls(&mut w));
        let r = w.want_refill(4).unwrap();
        assert_eq!(r.after, Some(QueueKey { depth: 1, seq: 3 }));
        w.fill(vec![e(4, 1), e(8, 1)], r, 4);
        got.extend(urls(&mut w));
        assert_eq!(
            got,
            [
                "http://a/5",
                "http://a/6",
                "http://a/7",
                "http://a/3",
                "http://a/4",
                "http://a/8"
            ]
        );
        assert!(!w.has_more());
    }
}
