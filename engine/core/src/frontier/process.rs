//! The processes of a crawl shared by many processes, as its store sees them: which are alive (their heartbeat has
//! not lapsed) and which shards each holds now (by the shards' leases).

/// One process of a crawl shared by many processes ([`super::FrontierStore::processes`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProcessInfo {
    /// Its id in the store (stable for its data_dir).
    pub id: String,
    /// How long until its heartbeat lapses, in the store's time. None: it still holds a lease but is no longer a
    /// live member (it stopped or hangs; its shards go to the others once its leases run out).
    pub heartbeat_expires_in_ms: Option<u64>,
    /// The shards it holds now (leases that have not run out), ascending.
    pub shards_held: Vec<u32>,
}

impl ProcessInfo {
    /// The processes from the live members (id, time until the heartbeat lapses) and the holder of each shard's
    /// lease, by shard number (None: free, or run out): every member, and every holder that is not one, sorted
    /// by id.
    pub fn tally(members: Vec<(String, u64)>, holders: &[Option<String>]) -> Vec<ProcessInfo> {
        let mut out: Vec<ProcessInfo> = members
            .into_iter()
            .map(|(id, expires_in)| ProcessInfo {
                id,
                heartbeat_expires_in_ms: Some(expires_in),
                shards_held: Vec::new(),
            })
            .collect();
        for (shard, holder) in holders.iter().enumerate() {
            let Some(id) = holder else { continue };
            let i = match out.iter().position(|p| &p.id == id) {
                Some(i) => i,
                None => {
                    out.push(ProcessInfo {
                        id: id.clone(),
                        heartbeat_expires_in_ms: None,
                        shards_held: Vec::new(),
                    });
                    out.len() - 1
                }
            };
            out[i].shards_held.push(shard as u32);
        }
        out.sort_by(|a, b| a.id.cmp(&b.id));
        out
    }

    /// How long ago it was last seen, for a heartbeat that lasts `lease_ms` from when it is sent (every process of
    /// a crawl is configured with the same lease); None for a process that is no longer a live member.
    pub fn last_seen_ms(&self, lease_ms: u64) -> Option<u64> {
        self.heartbeat_expires_in_ms
            .map(|left| lease_ms.saturating_sub(left))
    }

    /// The process in `list` that holds `shard`.
    pub fn holder_of(list: &[ProcessInfo], shard: u32) -> Option<&ProcessInfo> {
        list.iter().find(|p| p.shards_held.contains(&shard))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn holders(of: &[Option<&str>]) -> Vec<Option<String>> {
        of.iter().map(|h| h.map(str::to_owned)).collect()
    }

    #[test]
    fn members_get_their_shards_and_a_holder_that_left_is_listed_too() {
        let members = vec![("b".to_owned(), 900), ("a".to_owned(), 1000)];
        let list = ProcessInfo::tally(
            members,
            &holders(&[Some("a"), Some("b"), None, Some("a"), Some("gone")]),
        );
        let ids: Vec<&str> = list.iter().map(|p| p.id.as_str()).collect();
        assert_eq!(ids, ["a", "b", "gone"]);
        assert_eq!(list[0].shards_held, [0, 3]);
        assert_eq!(list[1].shards_held, [1]);
        assert_eq!(
            (list[2].heartbeat_expires_in_ms, &list[2].shards_held[..]),
            (None, &[4][..])
        );
        assert_eq!(
            ProcessInfo::holder_of(&list, 3).map(|p| p.id.as_str()),
            Some("a")
        );
        assert_eq!(ProcessInfo::holder_of(&list, 2), None);
    }

    #[test]
    fn a_member_without_shards_is_listed() {
        let members = vec![("idle".to_owned(), 700), ("a".to_owned(), 500)];
        let list = ProcessInfo::tally(members, &holders(&[Some("a"), Some("a")]));
        assert_eq!(list.len(), 2);
        assert_eq!(
            (list[0].id.as_str(), &list[0].shards_held[..]),
            ("a", &[0, 1][..])
        );
        assert!(list[1].shards_held.is_empty());
        assert!(ProcessInfo::tally(Vec::new(), &[]).is_empty());
    }

    #[test]
    fn last_seen_is_the_lease_minus_what_is_left() {
        let p = ProcessInfo {
            id: "a".into(),
            heartbeat_expires_in_ms: Some(12_000),
            shards_held: Vec::new(),
        };
        assert_eq!(p.last_seen_ms(15_000), Some(3_000));
        assert_eq!(p.last_seen_ms(10_000), Some(0), "a longer lease than ours");
        let gone = ProcessInfo {
            heartbeat_expires_in_ms: None,
            ..p
        };
        assert_eq!(gone.last_seen_ms(15_000), None);
    }
}
