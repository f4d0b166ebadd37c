//! The "did you mean" matcher: the known name closest to a mistyped one, by edit distance.

/// The candidate closest to `name` by edit distance (case-insensitive), if close enough to be
/// a plausible typo: at most a third of the longer name's length, and at least 1.
pub(in crate::config) fn closest<'s>(
    name: &str,
    candidates: impl Iterator<Item = &'s str>,
) -> Option<&'s str> {
    let lower = name.to_lowercase();
    let mut best: Option<(usize, &'s str)> = None;
    for cand in candidates {
        let limit = (lower.chars().count().max(cand.chars().count()) / 3).max(1);
        let d = edit_distance(&lower, &cand.to_lowercase());
        if d <= limit && best.is_none_or(|(bd, _)| d < bd) {
            best = Some((d, cand));
        }
    }
    best.map(|(_, c)| c)
}

/// Levenshtein distance over characters.
fn edit_distance(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut prev: Vec<usize> = (0..=b.len()).collect();
    let mut cur = vec![0; b.len() + 1];
    for (i, ca) in a.chars().enumerate() {
        cur[0] = i + 1;
        for (j, cb) in b.iter().enumerate() {
            let subst = prev[j] + usize::from(ca != *cb);
            cur[j + 1] = subst.min(prev[j + 1] + 1).min(cur[j] + 1);
        }
        std::mem::swap(&mut prev, &mut cur);
    }
    prev[b.len()]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn edit_distance_counts_characters_not_bytes() {
        assert_eq!(edit_distance("", ""), 0);
        assert_eq!(edit_distance("abc", ""), 3);
        assert_eq!(edit_distance("", "abc"), 3);
        assert_eq!(edit_distance("kitten", "sitting"), 3);
        assert_eq!(edit_distance("warn", "warm"), 1);
        assert_eq!(edit_distance("b\u{fc}cher", "bucher"), 1);
    }

    #[test]
    fn the_closest_plausible_name_wins_ignoring_case() {
        let keys = ["max_depth", "max_pages", "scope", "seeds"];
        assert_eq!(closest("max_dept", keys.into_iter()), Some("max_depth"));
        assert_eq!(closest("SCOPE", keys.into_iter()), Some("scope"));
        assert_eq!(closest("max_pagez", keys.into_iter()), Some("max_pages"));
        // The first of equally close candidates.
        assert_eq!(closest("ab", ["ac", "ad"].into_iter()), Some("ac"));
        assert_eq!(closest("seed", keys.into_iter()), Some("seeds"));
        // Too far for a typo: more than a third of the longer name.
        assert_eq!(closest("timeout", keys.into_iter()), None);
        assert_eq!(closest("xy", ["ab"].into_iter()), None);
        // A short name still allows one edit.
        assert_eq!(closest("tr", ["tor"].into_iter()), Some("tor"));
        assert_eq!(closest("anything", std::iter::empty()), None);
    }
}
