//! Series handles kept by their labels' static strings: a label set the crawl updates for every record costs a
//! short scan of a few entries instead of building owned labels, hashing them and looking the family up.

use std::sync::RwLock;

/// At most this many label sets are kept; others go to the family every time.
const KEPT: usize = 64;

/// Handles of one family's series by label key.
pub(crate) struct Handles<K, M> {
    kept: RwLock<Vec<(K, M)>>,
}

impl<K: Copy + PartialEq, M: Clone> Handles<K, M> {
    pub(crate) fn new() -> Handles<K, M> {
        Handles {
            kept: RwLock::new(Vec::new()),
        }
    }

    /// Calls `f` with the series of `key`, made by `make` (the family's `get_or_create`) the first time.
    #[inline]
    pub(crate) fn with(&self, key: K, make: impl FnOnce() -> M, f: impl FnOnce(&M)) {
        if let Ok(kept) = self.kept.read()
            && let Some((_, m)) = kept.iter().find(|(k, _)| *k == key)
        {
            f(m);
            return;
        }
        let m = make();
        f(&m);
        if let Ok(mut kept) = self.kept.write()
            && kept.len() < KEPT
            && !kept.iter().any(|(k, _)| *k == key)
        {
            kept.push((key, m));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use prometheus_client::metrics::counter::Counter;
    use prometheus_client::metrics::family::Family;

    #[test]
    fn a_kept_handle_updates_the_familys_series() {
        let family = Family::<Vec<(&'static str, String)>, Counter>::default();
        let handles = Handles::new();
        let labels = |o: &str| vec![("outcome", o.to_owned())];
        let mut made = 0;
        for o in ["fetched", "failed", "fetched", "fetched"] {
            handles.with(
                o,
                || {
                    made += 1;
                    family.get_or_create(&labels(o)).clone()
                },
                |c| {
                    c.inc();
                },
            );
        }
        assert_eq!(made, 2, "each label set is looked up in the family once");
        assert_eq!(family.get_or_create(&labels("fetched")).get(), 3);
        assert_eq!(family.get_or_create(&labels("failed")).get(), 1);
    }

    #[test]
    fn past_the_bound_label_sets_still_count() {
        let family = Family::<Vec<(&'static str, String)>, Counter>::default();
        let handles = Handles::new();
        let names: Vec<&'static str> = (0..KEPT + 10)
            .map(|i| &*Box::leak(format!("r{i}").into_boxed_str()))
            .collect();
        for _ in 0..2 {
            for &n in &names {
                handles.with(
                    n,
                    || {
                        family
                            .get_or_create(&vec![("reason", n.to_owned())])
                            .clone()
                    },
                    |c| {
                        c.inc();
                    },
                );
            }
        }
        for &n in &names {
            assert_eq!(
                family.get_or_create(&vec![("reason", n.to_owned())]).get(),
                2
            );
        }
    }
}
