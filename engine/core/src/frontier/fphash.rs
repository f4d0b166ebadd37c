//! Hashing for in-memory maps keyed by fingerprints. A fingerprint is already the output of a strong 64-bit hash
//! (xxh3 of the canonical URL or host), so hashing it again with SipHash only costs time: the map takes its bits
//! as they are, mixed once so that keys which are not pure fingerprints (a [`super::UrlRef`]: a row number or a
//! fingerprint, with a slot) spread too.

use std::collections::{HashMap, HashSet};
use std::hash::{BuildHasherDefault, Hasher};

/// Passes a fingerprint through (one multiply folds in any extra bytes written after it).
#[derive(Debug, Default, Clone, Copy)]
pub struct FpHasher(u64);

const MIX: u64 = 0x9E37_79B9_7F4A_7C15;

impl Hasher for FpHasher {
    fn finish(&self) -> u64 {
        self.0
    }

    fn write(&mut self, bytes: &[u8]) {
        for b in bytes {
            self.write_u8(*b);
        }
    }

    fn write_u8(&mut self, v: u8) {
        self.0 = (self.0 ^ u64::from(v)).wrapping_mul(MIX).rotate_left(29);
    }

    fn write_u64(&mut self, v: u64) {
        self.0 ^= v;
    }
}

/// A map keyed by fingerprints.
pub type FpMap<K, V> = HashMap<K, V, BuildHasherDefault<FpHasher>>;
/// A set of fingerprints.
pub type FpSet<K> = HashSet<K, BuildHasherDefault<FpHasher>>;

#[cfg(test)]
mod tests {
    use super::*;
    use crate::frontier::UrlRef;
    use std::hash::BuildHasher;

    #[test]
    fn a_fingerprint_hashes_to_itself_and_a_slot_changes_the_hash() {
        let b = BuildHasherDefault::<FpHasher>::default();
        assert_eq!(b.hash_one(0xdead_beef_u64), 0xdead_beef);
        let a = b.hash_one(UrlRef { key: 42, slot: 0 });
        let c = b.hash_one(UrlRef { key: 42, slot: 1 });
        assert_ne!(a, c);
        let mut m: FpMap<u64, u32> = FpMap::default();
        for i in 0..10_000u64 {
            m.insert(i.wrapping_mul(0x2545_F491_4F6C_DD1D), i as u32);
        }
        assert_eq!(m.len(), 10_000);
        assert_eq!(m.get(&7u64.wrapping_mul(0x2545_F491_4F6C_DD1D)), Some(&7));
    }
}
