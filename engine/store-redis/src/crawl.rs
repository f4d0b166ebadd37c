//! Who this process is in which crawl: the settings, the key names, the crawl instance and the process id, and
//! the shard a host or queue entry belongs to. Every part of the store works against one [`Crawl`].

use super::RedisSettings;
use super::conn::Call;
use super::keys::Keys;
use crawl_core::frontier::host_fp;

/// The crawl as this process sees it; fixed once the store is open.
pub(crate) struct Crawl {
    pub settings: RedisSettings,
    pub keys: Keys,
    /// The crawl instance id (the shards' sentinel).
    pub inst: String,
    /// This process's id: it names its pending records, its leases and its state hash.
    pub pid: String,
}

impl Crawl {
    pub fn shards(&self) -> u32 {
        self.settings.shards
    }

    /// A script call on one shard, checked against the crawl instance.
    pub fn shard_call(&self, script: &'static redis::Script, shard: u32) -> Call {
        Call::new(script, self.keys.meta(shard))
            .arg(&self.inst)
            .arg(shard)
    }

    pub fn shard_of_host(&self, host: &str) -> u32 {
        (host_fp(host) % u64::from(self.shards())) as u32
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn crawl(shards: u32) -> Crawl {
        Crawl {
            settings: RedisSettings {
                shards,
                ..RedisSettings::default()
            },
            keys: Keys::new("c"),
            inst: "i".into(),
            pid: "p".into(),
        }
    }

    #[test]
    fn hosts_map_to_shards_by_their_fingerprint() {
        let c = crawl(16);
        for host in ["a.example", "b.example", "c.example"] {
            let s = c.shard_of_host(host);
            assert!(s < 16);
            assert_eq!(u64::from(s), host_fp(host) % 16);
        }
        assert_eq!(crawl(1).shard_of_host("a.example"), 0);
    }

    #[test]
    fn shard_calls_carry_the_instance_and_the_shard() {
        let c = crawl(4);
        let call = c.shard_call(&crate::scripts::SCRIPTS.stats, 3);
        assert_eq!(call.key, c.keys.meta(3));
        assert_eq!(call.args, vec![b"i".to_vec(), b"3".to_vec()]);
    }
}
