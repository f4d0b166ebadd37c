//! Network namespaces a test makes for the processes it starts, so that it can cut one off the network and heal it
//! again (`ip link set … down`/`up`) without touching anything else.
//!
//! A [`Lab`] is a set of namespaces ("spaces") joined to the test's own namespace (the hub) by segments: each
//! segment is a bridge in the hub with `<prefix>.1/24`, and every space has a veth pair on it, the space's end
//! `e<segment>` with `<prefix>.<2 + space>/24`, the hub's end enslaved to the bridge. The prefixes come from
//! 198.18.0.0/15 (set aside for network tests, RFC 2544), skipping any /24 the hub already routes. A server of the
//! test listens on the bridge's address (or on more addresses the test adds to the bridge, [`Lab::add_hub_address`]);
//! a process runs in a space when its command line starts with [`Lab::exec_prefix`] (`ip netns exec <name>`).
//! [`Lab::cut`] takes the hub's end of one space's veth down: what the space sends on that segment is dropped
//! silently and nothing reaches it, as when a cable is pulled; [`Lab::heal`] brings it back. Dropping the lab
//! deletes the namespaces, the veths and the bridges.
//!
//! Names carry the test's pid and a counter (`cl<pid><n>…`), so tests running at once never share one. This needs
//! root and iproute2: a test calls [`require`] first, which skips it with a note when either is missing, except
//! under `CI=true`, where that fails it.

use std::net::Ipv4Addr;
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicU32, Ordering};

use crate::{ToolError, tool};

const IP: &str = "ip";
const HINT: &str = "run as root with iproute2 installed";
/// Spaces and segments a lab may have (one hex digit each in the interface names).
const MAX_SPACES: usize = 16;
const MAX_SEGMENTS: usize = 8;
/// The /24s of 198.18.0.0/15.
const PREFIXES: usize = 512;

/// Labs made by this process so far (part of every name).
static NEXT: AtomicU32 = AtomicU32::new(0);

/// True when this test can make network namespaces (root, `ip` on PATH, and a namespace made and deleted as a
/// probe). Otherwise false with a note, or a panic under `CI=true`.
pub fn require(test: &str) -> bool {
    if !tool::require(test, &[IP, "id"], HINT) {
        return false;
    }
    let uid = Command::new("id")
        .arg("-u")
        .stdin(Stdio::null())
        .output()
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_owned())
        .unwrap_or_default();
    if uid != "0" {
        return tool::unavailable(test, "root (network namespaces)", HINT);
    }
    let probe = format!("clprobe{}", std::process::id());
    match ip(&["netns", "add", &probe]) {
        Ok(()) => {
            let _ = ip(&["netns", "del", &probe]);
            true
        }
        Err(e) => tool::unavailable(test, &format!("network namespaces ({e})"), HINT),
    }
}

/// Runs `ip` with `args`; its stderr in the error when it fails.
fn ip(args: &[&str]) -> Result<(), ToolError> {
    let what = format!("{IP} {}", args.join(" "));
    let out = Command::new(IP)
        .args(args)
        .stdin(Stdio::null())
        .output()
        .map_err(ToolError::io(what.clone()))?;
    if out.status.success() {
        Ok(())
    } else {
        Err(ToolError::failed(what, out.status, &out.stderr))
    }
}

/// `ip`'s output (for the routes the hub already has).
fn ip_output(args: &[&str]) -> Result<String, ToolError> {
    let what = format!("{IP} {}", args.join(" "));
    let out = Command::new(IP)
        .args(args)
        .stdin(Stdio::null())
        .output()
        .map_err(ToolError::io(what.clone()))?;
    if !out.status.success() {
        return Err(ToolError::failed(what, out.status, &out.stderr));
    }
    Ok(String::from_utf8_lossy(&out.stdout).into_owned())
}

/// The `i`-th /24 of 198.18.0.0/15, as its first three octets.
fn prefix_at(i: usize) -> [u8; 3] {
    let i = i % PREFIXES;
    [198, 18 + (i / 256) as u8, (i % 256) as u8]
}

fn dotted(p: [u8; 3]) -> String {
    format!("{}.{}.{}.", p[0], p[1], p[2])
}

/// One bridge of the hub.
#[derive(Debug)]
struct Segment {
    bridge: String,
    prefix: [u8; 3],
}

/// Namespaces joined to the hub by bridged veth pairs (see the module docs). Dropping it deletes them all.
#[derive(Debug)]
pub struct Lab {
    tag: String,
    spaces: Vec<String>,
    segments: Vec<Segment>,
}

impl Lab {
    /// Makes `spaces` namespaces (at most 16), each on `segments` segments (at most 8), loopback up in each.
    pub fn start(spaces: usize, segments: usize) -> Result<Lab, ToolError> {
        if spaces > MAX_SPACES || segments > MAX_SEGMENTS {
            return Err(ToolError::Report {
                what: "network lab".to_owned(),
                report: format!(
                    "{spaces} spaces and {segments} segments asked, at most {MAX_SPACES} and {MAX_SEGMENTS}"
                ),
            });
        }
        let n = NEXT.fetch_add(1, Ordering::Relaxed);
        let pid = std::process::id();
        let tag = format!("cl{:x}{:02x}", pid & 0xff_ffff, n & 0xff);
        let mut lab = Lab {
            tag,
            spaces: Vec::new(),
            segments: Vec::new(),
        };
        // Cleanup on any error below is the drop's: everything made so far is listed in `lab`.
        let routed = ip_output(&["-4", "-o", "route", "show", "table", "all"])?
            + &ip_output(&["-4", "-o", "addr", "show"])?;
        let base = (pid as usize).wrapping_mul(37) + (n as usize) * MAX_SEGMENTS;
        let mut next = 0;
        for s in 0..segments {
            let prefix = loop {
                if next >= PREFIXES {
                    return Err(ToolError::Report {
                        what: "network lab".to_owned(),
                        report: "every /24 of 198.18.0.0/15 is routed already".to_owned(),
                    });
                }
                let p = prefix_at(base + next);
                next += 1;
                if !routed.contains(&dotted(p)) {
                    break p;
                }
            };
            let bridge = format!("{}b{s:x}", lab.tag);
            ip(&["link", "add", &bridge, "type", "bridge"])?;
            lab.segments.push(Segment { bridge, prefix });
            let seg = &lab.segments[s];
            ip(&[
                "addr",
                "add",
                &format!("{}1/24", dotted(prefix)),
                "dev",
                &seg.bridge,
            ])?;
            ip(&["link", "set", &seg.bridge, "up"])?;
        }
        for k in 0..spaces {
            let name = format!("{}-{k}", lab.tag);
            ip(&["netns", "add", &name])?;
            lab.spaces.push(name);
            let name = &lab.spaces[k];
            ip(&["-n", name, "link", "set", "lo", "up"])?;
            for (s, seg) in lab.segments.iter().enumerate() {
                let hub_end = lab.hub_end(k, s);
                let inner = format!("e{s}");
                ip(&[
                    "link", "add", &hub_end, "type", "veth", "peer", "name", &inner, "netns", name,
                ])?;
                ip(&["link", "set", &hub_end, "master", &seg.bridge])?;
                ip(&["link", "set", &hub_end, "up"])?;
                let addr = format!("{}/24", lab.address(k, s));
                ip(&["-n", name, "addr", "add", &addr, "dev", &inner])?;
                ip(&["-n", name, "link", "set", &inner, "up"])?;
            }
        }
        Ok(lab)
    }

    /// The hub's end of space `space`'s veth on segment `segment`.
    fn hub_end(&self, space: usize, segment: usize) -> String {
        format!("{}{space:x}{segment:x}", self.tag)
    }

    /// The first three octets of segment `segment`'s addresses.
    pub fn prefix(&self, segment: usize) -> [u8; 3] {
        self.segments[segment].prefix
    }

    /// The hub's address on segment `segment` (`<prefix>.1`).
    pub fn hub(&self, segment: usize) -> Ipv4Addr {
        let [a, b, c] = self.prefix(segment);
        Ipv4Addr::new(a, b, c, 1)
    }

    /// Space `space`'s address on segment `segment` (`<prefix>.<2 + space>`).
    pub fn address(&self, space: usize, segment: usize) -> Ipv4Addr {
        let [a, b, c] = self.prefix(segment);
        Ipv4Addr::new(a, b, c, 2 + space as u8)
    }

    /// Gives the hub one more address on segment `segment`, `<prefix>.<last>` (keep clear of `.1` and the spaces'
    /// `.2` upward), for a server that listens on several addresses.
    pub fn add_hub_address(&self, segment: usize, last: u8) -> Result<Ipv4Addr, ToolError> {
        let [a, b, c] = self.prefix(segment);
        let addr = Ipv4Addr::new(a, b, c, last);
        ip(&[
            "addr",
            "add",
            &format!("{addr}/24"),
            "dev",
            &self.segments[segment].bridge,
        ])?;
        Ok(addr)
    }

    /// The namespace's name of space `space`.
    pub fn name(&self, space: usize) -> &str {
        &self.spaces[space]
    }

    /// What a command line starts with to run in space `space`: `ip netns exec <name>` (which execs the program,
    /// so the child's pid is the program's).
    pub fn exec_prefix(&self, space: usize) -> Vec<String> {
        vec![
            IP.to_owned(),
            "netns".to_owned(),
            "exec".to_owned(),
            self.spaces[space].clone(),
        ]
    }

    /// Cuts space `space` off segment `segment`: the hub's end of its veth goes down, so nothing passes either
    /// way and the space's packets are dropped without an error (its link has no carrier).
    pub fn cut(&self, space: usize, segment: usize) -> Result<(), ToolError> {
        ip(&["link", "set", &self.hub_end(space, segment), "down"])
    }

    /// Undoes [`Lab::cut`].
    pub fn heal(&self, space: usize, segment: usize) -> Result<(), ToolError> {
        ip(&["link", "set", &self.hub_end(space, segment), "up"])
    }
}

impl Drop for Lab {
    fn drop(&mut self) {
        // Deleting a namespace deletes the veth ends in it and with them their peers in the hub; the explicit
        // deletes catch a veth whose namespace was never made.
        for (k, name) in self.spaces.iter().enumerate() {
            let _ = ip(&["netns", "del", name]);
            for s in 0..self.segments.len() {
                let _ = ip(&["link", "del", &self.hub_end(k, s)]);
            }
        }
        for seg in &self.segments {
            let _ = ip(&["link", "del", &seg.bridge]);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::{Read, Write};
    use std::net::{SocketAddr, TcpListener};
    use std::time::Duration;

    /// `bash -c` in space `k` writing to `addr` and reading the answer, within 2 s.
    fn talk(lab: &Lab, k: usize, addr: SocketAddr) -> bool {
        let script = format!(
            "exec 3<>/dev/tcp/{}/{} && echo ping >&3 && read -t 2 line <&3 && [ \"$line\" = pong ]",
            addr.ip(),
            addr.port()
        );
        Command::new(IP)
            .args([
                "netns",
                "exec",
                lab.name(k),
                "timeout",
                "3",
                "bash",
                "-c",
                &script,
            ])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status()
            .is_ok_and(|s| s.success())
    }

    /// Answers every connection's first line with `pong` until the test ends.
    fn pong_server(addr: Ipv4Addr) -> SocketAddr {
        let l = TcpListener::bind((addr, 0)).expect("bind on the bridge");
        let local = l.local_addr().expect("local addr");
        std::thread::spawn(move || {
            for c in l.incoming().flatten() {
                let mut c = c;
                let _ = c.set_read_timeout(Some(Duration::from_secs(2)));
                let mut buf = [0u8; 16];
                if c.read(&mut buf).is_ok_and(|n| n > 0) {
                    let _ = c.write_all(b"pong\n");
                }
            }
        });
        local
    }

    #[test]
    fn a_space_reaches_the_hub_until_it_is_cut_and_again_once_healed_and_nothing_is_left() {
        if !require("network namespaces") || !tool::require("netns lab", &["bash", "timeout"], "") {
            return;
        }
        let lab = Lab::start(2, 2).expect("lab");
        assert_ne!(lab.prefix(0), lab.prefix(1));
        let extra = lab.add_hub_address(1, 200).expect("hub address");
        let on_hub = pong_server(lab.hub(0));
        let on_extra = pong_server(extra);
        assert!(talk(&lab, 0, on_hub) && talk(&lab, 1, on_extra));
        lab.cut(0, 0).expect("cut");
        assert!(!talk(&lab, 0, on_hub), "space 0 is cut off segment 0");
        assert!(talk(&lab, 0, on_extra), "segment 1 still carries space 0");
        assert!(talk(&lab, 1, on_hub), "space 1 is not cut");
        lab.heal(0, 0).expect("heal");
        // The first attempts may meet the neighbour entry that failed during the cut ("no route to host").
        let healed = std::time::Instant::now();
        while !talk(&lab, 0, on_hub) {
            assert!(healed.elapsed() < Duration::from_secs(5), "space 0 healed");
            std::thread::sleep(Duration::from_millis(50));
        }
        let names: Vec<String> = (0..2).map(|k| lab.name(k).to_owned()).collect();
        let bridge = lab.segments[0].bridge.clone();
        drop(lab);
        let left = ip_output(&["netns", "list"]).expect("netns list");
        assert!(names.iter().all(|n| !left.contains(n.as_str())), "{left}");
        assert!(ip(&["link", "show", &bridge]).is_err(), "{bridge} left");
    }
}
