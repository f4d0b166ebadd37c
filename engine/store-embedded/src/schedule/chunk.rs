//! Chunks: items sorted by id, packed in one value keyed by the first item's id. The first item is its body alone;
//! each later one is the difference of its id to the previous one, then its body. Changing a chunk reads it up to
//! the change ([`cut`]) and copies what comes before and after as it is: only the item after the change is written
//! again (its difference changes).

use super::codec::{self, Cur, DuePair};
use crawl_core::frontier::codec::DecodeError;

/// How one kind of chunk writes its items.
pub trait Packing {
    /// The table's key, whose values are the items' ids.
    type K: redb::Key + 'static + for<'a> redb::Value<SelfType<'a> = Self::Id>;
    type Id: Copy + Ord + std::fmt::Debug + 'static;
    /// What a chunk is called in errors.
    const WHAT: &'static str;
    /// Appends the difference of `id` to `prev` (`prev < id`).
    fn put_delta(out: &mut Vec<u8>, prev: Self::Id, id: Self::Id);
    fn read_delta(c: &mut Cur<'_>, prev: Self::Id) -> Result<Self::Id, DecodeError>;
    /// The length of the body at the start of `buf`.
    fn body_len(buf: &[u8]) -> Result<usize, DecodeError>;
}

/// The due pairs: no body.
#[derive(Debug)]
pub struct DueOrder;

impl Packing for DueOrder {
    type K = (u32, u64);
    type Id = DuePair;
    const WHAT: &'static str = "schedule due chunk";

    fn put_delta(out: &mut Vec<u8>, prev: DuePair, id: DuePair) {
        codec::put_due_delta(out, prev, id);
    }

    fn read_delta(c: &mut Cur<'_>, prev: DuePair) -> Result<DuePair, DecodeError> {
        codec::read_due_delta(c, prev)
    }

    fn body_len(_: &[u8]) -> Result<usize, DecodeError> {
        Ok(0)
    }
}

/// The scheduled rows: each with its entry ([`codec::put_entry`]).
#[derive(Debug)]
pub struct ByRow;

impl Packing for ByRow {
    type K = u64;
    type Id = u64;
    const WHAT: &'static str = "schedule row chunk";

    fn put_delta(out: &mut Vec<u8>, prev: u64, id: u64) {
        codec::put_row_delta(out, prev, id);
    }

    fn read_delta(c: &mut Cur<'_>, prev: u64) -> Result<u64, DecodeError> {
        codec::read_row_delta(c, prev)
    }

    fn body_len(buf: &[u8]) -> Result<usize, DecodeError> {
        codec::entry_len(buf)
    }
}

/// Where an item is in its chunk's value: its difference from `start` (its body, for the first), its body from
/// `body` to `end`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Span<Id> {
    pub id: Id,
    pub start: usize,
    pub body: usize,
    pub end: usize,
}

/// The items of the chunk keyed `first`, in order.
pub fn parse<P: Packing>(first: P::Id, value: &[u8]) -> Result<Vec<Span<P::Id>>, DecodeError> {
    parse_while::<P>(first, value, |_| true)
}

/// The items of the chunk keyed `first`, in order, up to the first one `more` says no to (included).
pub fn parse_while<P: Packing>(
    first: P::Id,
    value: &[u8],
    mut more: impl FnMut(&Span<P::Id>) -> bool,
) -> Result<Vec<Span<P::Id>>, DecodeError> {
    let mut out: Vec<Span<P::Id>> = Vec::new();
    let mut c = Cur::new(value);
    loop {
        let start = c.pos();
        let id = match out.last() {
            None => first,
            Some(_) if c.is_empty() => break,
            Some(prev) => {
                let id = P::read_delta(&mut c, prev.id)?;
                if id <= prev.id {
                    return Err(DecodeError("chunk items out of order"));
                }
                id
            }
        };
        let body = c.pos();
        c.skip(P::body_len(value.get(body..).unwrap_or_default())?)?;
        let span = Span {
            id,
            start,
            body,
            end: c.pos(),
        };
        out.push(span);
        if !more(&span) {
            break;
        }
    }
    Ok(out)
}

/// Where an id is or goes in a chunk: the item before it, the item with it, the item after it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Cut<Id> {
    /// How many items come before it.
    pub index: usize,
    pub before: Option<Span<Id>>,
    pub found: Option<Span<Id>>,
    pub after: Option<Span<Id>>,
}

/// Where `id` is or goes in the chunk keyed `first`, read up to the item after it.
pub fn cut<P: Packing>(first: P::Id, value: &[u8], id: P::Id) -> Result<Cut<P::Id>, DecodeError> {
    let mut out = Cut {
        index: 0,
        before: None,
        found: None,
        after: None,
    };
    let mut c = Cur::new(value);
    let mut prev: Option<P::Id> = None;
    loop {
        let start = c.pos();
        let item = match prev {
            None => first,
            Some(_) if c.is_empty() => break,
            Some(p) => {
                let item = P::read_delta(&mut c, p)?;
                if item <= p {
                    return Err(DecodeError("chunk items out of order"));
                }
                item
            }
        };
        let body = c.pos();
        c.skip(P::body_len(value.get(body..).unwrap_or_default())?)?;
        let span = Span {
            id: item,
            start,
            body,
            end: c.pos(),
        };
        prev = Some(item);
        match item.cmp(&id) {
            std::cmp::Ordering::Less => {
                out.index += 1;
                out.before = Some(span);
            }
            std::cmp::Ordering::Equal => out.found = Some(span),
            std::cmp::Ordering::Greater => {
                out.after = Some(span);
                break;
            }
        }
    }
    Ok(out)
}

/// Builds a chunk's value from items in id order.
#[derive(Debug)]
pub struct Builder<P: Packing> {
    out: Vec<u8>,
    first: Option<P::Id>,
    prev: Option<P::Id>,
}

impl<P: Packing> Builder<P> {
    pub fn new(capacity: usize) -> Builder<P> {
        Builder {
            out: Vec::with_capacity(capacity),
            first: None,
            prev: None,
        }
    }

    pub fn len(&self) -> usize {
        self.out.len()
    }

    /// Appends an item.
    pub fn item(&mut self, id: P::Id, body: &[u8]) {
        match self.prev {
            Some(p) => P::put_delta(&mut self.out, p, id),
            None => self.first = Some(id),
        }
        self.out.extend_from_slice(body);
        self.prev = Some(id);
    }

    /// Starts with the items of the chunk keyed `first` up to `last` (included), as they are.
    pub fn prefix(&mut self, value: &[u8], first: P::Id, last: Option<&Span<P::Id>>) {
        if let Some(l) = last {
            self.out.extend_from_slice(&value[..l.end]);
            self.first = Some(first);
            self.prev = Some(l.id);
        }
    }

    /// Appends the item `from` of the chunk `value` and everything after it there, as it is: the end of the chunk.
    pub fn rest(&mut self, value: &[u8], from: Option<&Span<P::Id>>) {
        if let Some(s) = from {
            self.item(s.id, &value[s.body..s.end]);
            self.out.extend_from_slice(&value[s.end..]);
        }
    }

    /// Appends `value` from `at` as it is (items whose differences stay right): the end of the chunk.
    pub fn rest_raw(&mut self, value: &[u8], at: usize) {
        self.out
            .extend_from_slice(value.get(at..).unwrap_or_default());
    }

    /// The chunk's key and value; None when it holds no item.
    pub fn finish(self) -> Option<(P::Id, Vec<u8>)> {
        self.first.map(|f| (f, self.out))
    }
}

/// `items` (sorted, as ids and bodies) in `parts` chunks of about equal size, each of at most `cap` bytes (chunks
/// are halved while larger).
pub fn split<P: Packing>(
    items: &[(P::Id, &[u8])],
    parts: usize,
    cap: usize,
) -> Vec<(P::Id, Vec<u8>)> {
    let mut scratch = Vec::new();
    let weights: Vec<usize> = items
        .iter()
        .enumerate()
        .map(|(i, (id, body))| {
            scratch.clear();
            if let Some(i) = i.checked_sub(1) {
                P::put_delta(&mut scratch, items[i].0, *id);
            }
            scratch.len() + body.len()
        })
        .collect();
    let total: usize = weights.iter().sum();
    let mut cuts = vec![0];
    let mut sum = 0;
    for (i, w) in weights.iter().enumerate() {
        let next = cuts.len();
        if next < parts && i > 0 && sum >= total * next / parts && cuts.last() != Some(&i) {
            cuts.push(i);
        }
        sum += w;
    }
    cuts.push(items.len());
    let mut pieces: Vec<&[(P::Id, &[u8])]> = cuts
        .windows(2)
        .map(|w| &items[w[0]..w[1]])
        .filter(|p| !p.is_empty())
        .collect();
    let mut out = Vec::with_capacity(parts);
    while let Some(piece) = pieces.pop() {
        let mut b = Builder::<P>::new(cap);
        for (id, body) in piece {
            b.item(*id, body);
        }
        if b.len() > cap && piece.len() > 1 {
            let (x, y) = piece.split_at(piece.len() / 2);
            pieces.push(x);
            pieces.push(y);
            continue;
        }
        out.extend(b.finish());
    }
    out.sort_by_key(|c| c.0);
    out
}

#[cfg(test)]
mod tests;
