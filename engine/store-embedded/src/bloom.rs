//! A scalable Bloom filter over URL fingerprints: it answers "surely new" or "maybe seen", never more. The store
//! confirms every "maybe seen" against its tables, so a false positive costs a lookup, never a URL.
//!
//! Written here rather than taken from a crate because it is fed the fingerprint the store computes anyway
//! (no second hash of the URL), and it grows by adding filters twice as large, so memory follows the crawl.

/// Bits per expected element (about 1-2 % false positives with 7 probes in a blocked filter).
const BITS_PER_ITEM: usize = 10;
const PROBES: u32 = 7;
/// 64-bit words per block (512 bits, one cache line).
const BLOCK_WORDS: usize = 8;

#[derive(Debug)]
struct Layer {
    bits: Vec<u64>,
    capacity: usize,
    len: usize,
}

impl Layer {
    fn new(capacity: usize) -> Layer {
        let words = (capacity * BITS_PER_ITEM)
            .div_ceil(64)
            .next_multiple_of(BLOCK_WORDS)
            .max(BLOCK_WORDS);
        Layer {
            bits: vec![0; words],
            capacity,
            len: 0,
        }
    }

    fn probes(&self, fp: u64) -> [(usize, u64); PROBES as usize] {
        // Blocked: every probe of a fingerprint falls in one 512-bit block (one cache line), so a lookup or an insert
        // costs one cache miss, not seven. The block comes from the high half of the fingerprint, the bits inside it
        // from the low half (double hashing). Multiply-shift maps the high half onto the blocks in order, so
        // fingerprints inserted in sorted order (a rebuild from the store, whose keys are fingerprints) touch the
        // blocks front to back.
        let blocks = (self.bits.len() / BLOCK_WORDS).max(1) as u64;
        let base = (((fp >> 32) * blocks) >> 32) as usize * BLOCK_WORDS;
        let h1 = fp & 0xffff_ffff;
        let h2 = (fp >> 17) | 1;
        let mut out = [(0usize, 0u64); PROBES as usize];
        for (i, slot) in out.iter_mut().enumerate() {
            let bit = h1.wrapping_add((i as u64).wrapping_mul(h2)) % 512;
            *slot = (base + (bit / 64) as usize, 1u64 << (bit % 64));
        }
        out
    }

    fn contains(&self, fp: u64) -> bool {
        self.probes(fp).iter().all(|&(w, m)| self.bits[w] & m != 0)
    }

    fn insert(&mut self, fp: u64) {
        for (w, m) in self.probes(fp) {
            self.bits[w] |= m;
        }
        self.len += 1;
    }
}

/// The filter.
#[derive(Debug)]
pub struct Bloom {
    layers: Vec<Layer>,
}

impl Bloom {
    /// A filter sized for `expected` fingerprints at first (it grows past that).
    pub fn new(expected: usize) -> Bloom {
        Bloom {
            layers: vec![Layer::new(expected.max(1024))],
        }
    }

    /// False means surely never inserted.
    pub fn may_contain(&self, fp: u64) -> bool {
        self.layers.iter().any(|l| l.contains(fp))
    }

    pub fn insert(&mut self, fp: u64) {
        let full = self.layers.last().is_none_or(|l| l.len >= l.capacity);
        if full {
            let next = self.layers.last().map_or(1 << 20, |l| l.capacity * 2);
            self.layers.push(Layer::new(next));
        }
        if let Some(l) = self.layers.last_mut() {
            l.insert(fp);
        }
    }

    /// Bytes of memory held.
    pub fn bytes(&self) -> usize {
        self.layers.iter().map(|l| l.bits.len() * 8).sum()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn never_a_false_negative_and_few_false_positives() {
        let mut b = Bloom::new(10_000);
        let fps: Vec<u64> = (0..50_000u64)
            .map(|i| crawl_core::frontier::url_fp(&format!("http://h/{i}")))
            .collect();
        for fp in &fps {
            b.insert(*fp);
        }
        assert!(
            fps.iter().all(|fp| b.may_contain(*fp)),
            "no false negatives, also across layers"
        );
        let fp_count = (0..20_000u64)
            .filter(|i| b.may_contain(crawl_core::frontier::url_fp(&format!("http://other/{i}"))))
            .count();
        assert!(
            fp_count < 20_000 / 20,
            "false positives {fp_count} of 20000"
        );
        assert!(b.bytes() < 200_000, "{} bytes", b.bytes());
    }
}
