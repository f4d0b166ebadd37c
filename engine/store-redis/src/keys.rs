//! Key naming. Every key of shard `s` of crawl `c` starts with `{c:s}:`, so all of a shard's keys hash to one
//! cluster slot and every script that works on a shard is single-slot. Crawl-wide keys start with `{c}:`.
//!
//! Per shard (the suffixes are built again inside the Lua scripts from the meta key's prefix):
//! - `meta`: a hash: `inst` (the crawl instance sentinel), `fence` (fencing token counter), `owner`, `token`,
//!   `exp` (lease expiry, Redis server time in ms), `known`, `pending`, `done`, `pages`, `sched` (URLs in the
//!   revisit schedule), `seq` (queue order counter), `seen`, `lv`, `sp` (the dedup layout, see [`super::seen`]),
//!   `sxlv`, `sxsp`, `swn` (the schedule's index layout and window counter), `lay` (the version of this layout: a
//!   crawl stored by a version with another layout is refused when opened);
//! - `q:<host fp>:<depth>`: a host queue's pending URLs of one depth, a list in discovery order (so sorted by seq);
//!   each element is the whole entry ([`crawl_core::frontier::codec::QueueElement`]: seq, kind and flags, the
//!   parent's 8-byte key, attempt/retries/redirect chain when not empty, and the URL's path when its origin is the
//!   queue's, else the whole URL; a revisit carries its prior visit in place of a parent). The records queue of the
//!   shard is host fp `0`. A list stays a quicklist of
//!   listpacks: about 2 bytes of overhead per element. The owner reads from the head and skips what it holds (a
//!   prefix of each list, since only the owner removes, and only what it read), and finds what it finishes or
//!   updates there too, so that costs the owner's window, never the queue's length;
//! - `qd:<host fp>`: a sorted set of the depths whose list is not empty (reads go from the cursor's depth up);
//! - `org`: a hash host fp → the origin (`scheme://authority`) of its queue, from its first URL;
//! - `par`: the parent table, a hash parent key (8 bytes: the parent's URL fingerprint) → `<pending children>
//!   <parent URL>`; a parent URL is stored once, however many children it has, and its row goes with its last
//!   pending child;
//! - `pn:<bucket>`: with recrawl only, the URLs still pending, bucketed integer sets like the seen sets (layout
//!   `pnlv`, `pnsp`, `pnn` in `meta`), so a URL found again while it waits is not queued twice;
//! - `hosts`: a hash host key → pending count; `names`: host fp → host key (finishing knows only the fp);
//! - `pause`: a hash host key → `until:level`: until when (Unix ms) the host is paused after a 429/503 or a
//!   Retry-After, and the step of its exponential backoff;
//! - `robots`: a hash authority → the robots.txt rules that apply (until when, its host, the rules' snapshot);
//! - `s:<bucket>`: the seen-URL buckets (integer sets);
//! - `rec`: the records stream, with the consumer group `g`;
//! - the revisit schedule (continuous crawling; `lua/sched.lua`), finished URLs waiting to come due again. An entry
//!   is the URL's fingerprint (8 bytes), its due time (Unix seconds, 4 bytes), its host fp (8 bytes), its depth
//!   (varint) and the queue element it becomes without its sequence number (the prior visit and the URL's path,
//!   as in a host queue). `sq:<id>`: a window, a list of entries in no order; `sw`: a sorted set of the windows by
//!   their earliest due time (a window covers the due times from there to the next window's start); `sm`: a hash
//!   window → its latest due time. A window of several due times holds at most 128 entries (it is cut in two at
//!   a due-time boundary when it grows past that); a window of one due time may hold any number, and is taken
//!   from its head. `sx:<bucket>`: the index, URL fp (8 bytes) → due time, hashes by linear hashing on the fp
//!   small enough to stay listpacks (about 40 fields each), through which a sitemap hint or a second schedule of
//!   a URL finds its entry. So a scheduled URL costs its entry in a list and a field of the index, not a member of
//!   a sorted set and a field of a large hash: about 138 bytes of Redis memory with a typical prior visit (an ETag
//!   of 14 bytes, a Last-Modified, a capture) and a 34-byte path, 148 with its seen entry, at 1 M URLs on 256
//!   shards (150 at 10 M); a pending revisit about 106 (its prior in its queue element), against 61 for a first
//!   visit. `MEM_SIZES=1000000 MEM_HOSTS=1000 cargo bench -p crawl-store-redis --bench memory`.
//!
//! - `ops`: what operators set on the shard's hosts, a hash host (`host` or `host:port`, as
//!   [`crawl_core::control::HostMatch`] spells it) → its [`crawl_core::control::HostRule`] as JSON; `opv` in `meta`
//!   counts its changes. It lives with the shard, so whoever owns the shard, now or later, finds it there.
//!
//! Crawl-wide: `{c}:instance` (the crawl instance id, with its state), `{c}:members` (live processes, score =
//! heartbeat expiry in server time), `{c}:proc:<process id>` (a process's JSONL checkpoint and next record number),
//! `{c}:op` (what operators set crawl-wide, a hash: `v`, a version every operator change raises; `crawl`, the
//! crawl's pause as JSON; `s:<shard>`, the last `opv` of the shard announced; see `operator.rs`).

use crawl_core::frontier::Fp;

/// The consumer group of every records stream.
pub const GROUP: &str = "g";

/// Key names of one crawl.
#[derive(Debug, Clone)]
pub struct Keys {
    crawl: String,
}

impl Keys {
    pub fn new(crawl: &str) -> Keys {
        Keys {
            crawl: crawl.to_owned(),
        }
    }

    /// The crawl's name.
    pub fn crawl(&self) -> &str {
        &self.crawl
    }

    /// The prefix of every key of shard `s`, hash tag included.
    pub fn shard_prefix(&self, shard: u32) -> String {
        format!("{{{}:{}}}:", self.crawl, shard)
    }

    /// The shard's meta hash (the first key of every shard script).
    pub fn meta(&self, shard: u32) -> String {
        format!("{}meta", self.shard_prefix(shard))
    }

    /// The shard's pauses of throttled hosts (host key → until, Unix ms).
    pub fn pause(&self, shard: u32) -> String {
        format!("{}pause", self.shard_prefix(shard))
    }

    /// The shard's robots.txt rules (authority → `expires_ms host\n` + snapshot).
    pub fn robots(&self, shard: u32) -> String {
        format!("{}robots", self.shard_prefix(shard))
    }

    /// The shard's records stream.
    pub fn stream(&self, shard: u32) -> String {
        format!("{}rec", self.shard_prefix(shard))
    }

    /// A host queue's list of one depth in its shard.
    pub fn queue(&self, shard: u32, host: Fp, depth: u32) -> String {
        format!("{}q:{}:{}", self.shard_prefix(shard), host, depth)
    }

    /// The depths of a host queue that have a list (a sorted set).
    pub fn depths(&self, shard: u32, host: Fp) -> String {
        format!("{}qd:{}", self.shard_prefix(shard), host)
    }

    /// The shard's parent table (parent key → pending children and the parent URL).
    pub fn parents(&self, shard: u32) -> String {
        format!("{}par", self.shard_prefix(shard))
    }

    /// The shard's queue origins (host fp → `scheme://authority`).
    pub fn origins(&self, shard: u32) -> String {
        format!("{}org", self.shard_prefix(shard))
    }

    /// The shard's operator rules: host (or `host:port`) → its [`crawl_core::control::HostRule`] as JSON.
    pub fn rules(&self, shard: u32) -> String {
        format!("{}ops", self.shard_prefix(shard))
    }

    /// What operators set crawl-wide: the version, the crawl's pause, the shards' announced rule versions.
    pub fn operator(&self) -> String {
        format!("{{{}}}:op", self.crawl)
    }

    /// A seen-URL bucket of a shard.
    pub fn bucket(&self, shard: u32, bucket: u64) -> String {
        format!("{}s:{}", self.shard_prefix(shard), bucket)
    }

    pub fn instance(&self) -> String {
        format!("{{{}}}:instance", self.crawl)
    }

    pub fn members(&self) -> String {
        format!("{{{}}}:members", self.crawl)
    }

    pub fn process(&self, process_id: &str) -> String {
        format!("{{{}}}:proc:{}", self.crawl, process_id)
    }
}

/// A URL fingerprint as a set/hash member: the decimal form of the fingerprint's bits read as an i64, which Redis
/// stores as an 8-byte integer in an integer set.
pub fn member(fp: Fp) -> String {
    (fp as i64).to_string()
}

/// The fingerprint of a member written by [`member`].
pub fn member_fp(m: &[u8]) -> Option<Fp> {
    std::str::from_utf8(m)
        .ok()?
        .parse::<i64>()
        .ok()
        .map(|v| v as u64)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shard_keys_share_one_hash_tag() {
        let k = Keys::new("crawl");
        assert_eq!(k.meta(7), "{crawl:7}:meta");
        assert_eq!(k.stream(7), "{crawl:7}:rec");
        assert_eq!(k.queue(7, 42, 3), "{crawl:7}:q:42:3");
        assert_eq!(k.depths(7, 42), "{crawl:7}:qd:42");
        assert_eq!(k.parents(7), "{crawl:7}:par");
        assert_eq!(k.bucket(7, 3), "{crawl:7}:s:3");
        assert_eq!(k.rules(7), "{crawl:7}:ops");
        assert_eq!(k.members(), "{crawl}:members");
        assert_eq!(k.operator(), "{crawl}:op");
        assert_eq!(k.process("p1"), "{crawl}:proc:p1");
    }

    #[test]
    fn members_round_trip_all_fingerprints() {
        for fp in [0, 1, 42, u64::MAX, 1 << 63, (1 << 63) - 1] {
            assert_eq!(member_fp(member(fp).as_bytes()), Some(fp));
        }
        assert_eq!(member(u64::MAX), "-1");
    }
}
