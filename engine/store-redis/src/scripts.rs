//! The Lua scripts, one per operation. Every shard script starts with the same prologue (`lua/shard.lua`: the
//! sentinel check), those that touch the seen set (or, with recrawl, the pending set) include the dedup layout
//! (`lua/seen.lua`), those that touch the host queues include their layout (`lua/queue.lua`), and those that touch
//! the revisit schedule include its layout (`lua/sched.lua`); those of a forced re-fetch that look for a URL in its
//! host queue include `lua/find.lua`. Scripts are sent with EVALSHA and loaded again when
//! the server answers NOSCRIPT.

use redis::Script;
use std::sync::LazyLock;

macro_rules! shard_script {
    ($($file:literal),+) => {
        concat!(include_str!("lua/shard.lua"), $(include_str!($file)),+)
    };
}

/// All scripts, compiled (hashed) once.
pub struct Scripts {
    pub add: Script,
    pub apply: Script,
    pub next: Script,
    pub known: Script,
    /// Marks URLs seen without queueing them (measures the dedup layout alone).
    #[cfg(test)]
    pub mark: Script,
    pub stats: Script,
    pub hosts: Script,
    pub acquire: Script,
    pub renew: Script,
    pub release: Script,
    pub claim: Script,
    pub pel: Script,
    pub ack: Script,
    pub shard_init: Script,
    pub instance: Script,
    pub heartbeat: Script,
    pub hset: Script,
    /// Revisits due: into their hosts' queues (fenced).
    pub promote: Script,
    /// The schedule's earliest due time and what is due before a time.
    pub sdue: Script,
    /// Scheduled entries of URLs (sitemap hints read them).
    pub sget: Script,
    /// Scheduled URLs brought forward (sitemap hints).
    pub smove: Script,
    /// Compare-and-set of a host's operator rule in its shard.
    pub opset: Script,
    /// A shard's operator rules, when they changed.
    pub oprules: Script,
    /// Compare-and-set of the crawl's pause (crawl-wide).
    pub opcrawl: Script,
    /// A shard's rule change announced crawl-wide.
    pub opannounce: Script,
    /// A forced re-fetch: what is known, pending or scheduled of URLs.
    pub rfcheck: Script,
    /// A forced re-fetch: URLs looked for in a host queue, a page at a time.
    pub rfscan: Script,
    /// A forced re-fetch: done and scheduled URLs queued again.
    pub refetch: Script,
    /// The live processes with the time left on their heartbeats (crawl-wide).
    pub members: Script,
    /// Who holds a shard's lease now.
    pub holder: Script,
    /// Whether a shard has (had) URLs of a host.
    pub hostknown: Script,
}

pub static SCRIPTS: LazyLock<Scripts> = LazyLock::new(|| Scripts {
    add: Script::new(shard_script!(
        "lua/seen.lua",
        "lua/queue.lua",
        "lua/add.lua"
    )),
    apply: Script::new(shard_script!(
        "lua/seen.lua",
        "lua/queue.lua",
        "lua/sched.lua",
        "lua/apply.lua"
    )),
    next: Script::new(shard_script!("lua/queue.lua", "lua/next.lua")),
    known: Script::new(shard_script!("lua/seen.lua", "lua/known.lua")),
    #[cfg(test)]
    mark: Script::new(shard_script!("lua/seen.lua", "lua/mark.lua")),
    stats: Script::new(shard_script!("lua/stats.lua")),
    hosts: Script::new(shard_script!("lua/hosts.lua")),
    acquire: Script::new(shard_script!("lua/acquire.lua")),
    renew: Script::new(shard_script!("lua/renew.lua")),
    release: Script::new(shard_script!("lua/release.lua")),
    claim: Script::new(shard_script!("lua/claim.lua")),
    pel: Script::new(shard_script!("lua/pel.lua")),
    ack: Script::new(include_str!("lua/ack.lua")),
    shard_init: Script::new(include_str!("lua/shard_init.lua")),
    instance: Script::new(include_str!("lua/instance.lua")),
    heartbeat: Script::new(include_str!("lua/heartbeat.lua")),
    hset: Script::new(include_str!("lua/hset.lua")),
    promote: Script::new(shard_script!(
        "lua/seen.lua",
        "lua/queue.lua",
        "lua/sched.lua",
        "lua/promote.lua"
    )),
    sdue: Script::new(shard_script!("lua/sched.lua", "lua/sdue.lua")),
    sget: Script::new(shard_script!(
        "lua/queue.lua",
        "lua/sched.lua",
        "lua/sget.lua"
    )),
    smove: Script::new(shard_script!("lua/sched.lua", "lua/smove.lua")),
    opset: Script::new(shard_script!("lua/opset.lua")),
    oprules: Script::new(shard_script!("lua/oprules.lua")),
    opcrawl: Script::new(include_str!("lua/opcrawl.lua")),
    opannounce: Script::new(include_str!("lua/opannounce.lua")),
    rfcheck: Script::new(shard_script!(
        "lua/seen.lua",
        "lua/sched.lua",
        "lua/rfcheck.lua"
    )),
    rfscan: Script::new(shard_script!(
        "lua/queue.lua",
        "lua/find.lua",
        "lua/rfscan.lua"
    )),
    refetch: Script::new(shard_script!(
        "lua/seen.lua",
        "lua/queue.lua",
        "lua/sched.lua",
        "lua/find.lua",
        "lua/refetch.lua"
    )),
    members: Script::new(include_str!("lua/members.lua")),
    holder: Script::new(shard_script!("lua/holder.lua")),
    hostknown: Script::new(shard_script!("lua/hostknown.lua")),
});

/// The script with this SHA1 (a spooled call names its script so).
pub fn by_hash(hash: &str) -> Option<&'static Script> {
    let s = &*SCRIPTS;
    [
        &s.add,
        &s.apply,
        &s.next,
        &s.known,
        &s.stats,
        &s.hosts,
        &s.acquire,
        &s.renew,
        &s.release,
        &s.claim,
        &s.pel,
        &s.ack,
        &s.shard_init,
        &s.instance,
        &s.heartbeat,
        &s.hset,
        &s.promote,
        &s.sdue,
        &s.sget,
        &s.smove,
        &s.opset,
        &s.oprules,
        &s.opcrawl,
        &s.opannounce,
        &s.rfcheck,
        &s.rfscan,
        &s.refetch,
        &s.members,
        &s.holder,
        &s.hostknown,
    ]
    .into_iter()
    .find(|x| x.get_hash() == hash)
}
