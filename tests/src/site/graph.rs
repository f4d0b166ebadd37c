//! The deterministic link graph of a generated test site, and the expected crawl results computed from it.
//!
//! Everything here is pure: the same [`SiteSpec`] gives the same links on every call, so the server renders pages
//! from it and [`expected`] walks the very same graph (a 0-1 BFS: links cost 1, a 301 costs 0).

use std::collections::{BTreeSet, HashMap, VecDeque};
use std::fmt::Write as _;

use super::{ExpectOptions, Expected, SiteSpec};

/// What a generated URL is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub(crate) enum Kind {
    /// `/` for page 0, `/page/{n}` otherwise: a 200 HTML page with links.
    Page,
    /// `/private/{n}`: disallowed by robots.txt; a 200 leaf page when fetched anyway.
    Private,
    /// `/old/{n}`: 301 to page `n`.
    Old,
    /// `/missing/{n}`: 404.
    Missing,
    /// `/nofollow/{n}`: linked only with `rel=nofollow`; a 200 leaf page that must never be fetched.
    Nofollow,
    /// `/orphan/{k}`: listed only in the sitemap; a 200 leaf page.
    Orphan,
}

/// One URL of the site: host index, kind and number.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub(crate) struct Target {
    pub host: usize,
    pub kind: Kind,
    pub n: usize,
}

impl Target {
    pub fn page(host: usize, n: usize) -> Self {
        Self {
            host,
            kind: Kind::Page,
            n,
        }
    }

    /// Appends the absolute path of this target (`/`, `/page/7`, `/old/3`, ...).
    pub fn write_path(&self, out: &mut String) {
        let prefix = match self.kind {
            Kind::Page if self.n == 0 => {
                out.push('/');
                return;
            }
            Kind::Page => "/page/",
            Kind::Private => "/private/",
            Kind::Old => "/old/",
            Kind::Missing => "/missing/",
            Kind::Nofollow => "/nofollow/",
            Kind::Orphan => "/orphan/",
        };
        out.push_str(prefix);
        let _ = write!(out, "{}", self.n);
    }
}

/// How an href is written in the HTML.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Form {
    /// `/page/7`
    RootRelative,
    /// `http://127.0.0.2:4000/page/7`
    Absolute,
    /// relative to the linking document: `7`, `page/7`, `../private/3`, `./`
    DocRelative,
}

/// One `<a>` on a page.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Link {
    pub target: Target,
    pub form: Form,
    /// `rel="nofollow"`
    pub nofollow: bool,
    /// the href carries a `#fragment` (same URL once canonicalised)
    pub fragment: bool,
}

/// splitmix64 finaliser: a cheap, well-mixed hash.
pub(crate) fn mix(mut z: u64) -> u64 {
    z = z.wrapping_add(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// Deterministic pseudo-random number for (seed, host, page, slot, salt).
pub(crate) fn rnd(spec: &SiteSpec, host: usize, n: usize, slot: usize, salt: u64) -> u64 {
    let mut h = mix(spec.seed ^ salt.wrapping_mul(0xA24B_AED4_963E_E407));
    h = mix(h ^ host as u64);
    h = mix(h ^ n as u64);
    mix(h ^ slot as u64)
}

pub(crate) fn unit(r: u64) -> f64 {
    (r >> 11) as f64 / (1u64 << 53) as f64
}

fn same_host_form(r: u64) -> Form {
    match r % 3 {
        0 => Form::RootRelative,
        1 => Form::Absolute,
        _ => Form::DocRelative,
    }
}

fn link(target: Target, form: Form) -> Link {
    Link {
        target,
        form,
        nofollow: false,
        fragment: false,
    }
}

/// Fills `out` with the links of page `n` on `host`, in document order.
pub(crate) fn page_links(spec: &SiteSpec, host: usize, n: usize, out: &mut Vec<Link>) {
    out.clear();
    let pages = spec.pages_per_host.max(1);
    let hosts = spec.hosts.max(1);
    let ratio = spec.effective_cross_ratio();
    let here = |k: Kind, m: usize| Target {
        host,
        kind: k,
        n: m,
    };
    // The chain n -> n+1 keeps every page of a host reachable from its page 0 ...
    if n + 1 < pages {
        let r = rnd(spec, host, n, 0, 1);
        out.push(link(Target::page(host, n + 1), same_host_form(r)));
    }
    // ... and page 0 of each host links page 0 of the next host.
    if n == 0 && host + 1 < hosts {
        out.push(link(Target::page(host + 1, 0), Form::Absolute));
    }
    for slot in 0..spec.links_per_page {
        let r = rnd(spec, host, n, slot, 2);
        let page = (rnd(spec, host, n, slot, 3) % pages as u64) as usize;
        if hosts > 1 && unit(r) < ratio {
            let other =
                (host + 1 + (rnd(spec, host, n, slot, 4) % (hosts as u64 - 1)) as usize) % hosts;
            out.push(link(Target::page(other, page), Form::Absolute));
        } else {
            out.push(link(Target::page(host, page), same_host_form(r >> 7)));
        }
    }
    out.push(link(
        here(Kind::Private, n),
        same_host_form(rnd(spec, host, n, 0, 5)),
    ));
    if spec.redirects {
        let to = (rnd(spec, host, n, 0, 6) % pages as u64) as usize;
        out.push(link(
            here(Kind::Old, to),
            same_host_form(rnd(spec, host, n, 0, 7)),
        ));
    }
    if spec.missing {
        out.push(link(
            here(Kind::Missing, n),
            same_host_form(rnd(spec, host, n, 0, 8)),
        ));
    }
    out.push(Link {
        target: here(Kind::Nofollow, n),
        form: Form::RootRelative,
        nofollow: true,
        fragment: false,
    });
    // A few duplicates: the first link again, absolute and with a fragment.
    if let Some(first) = out.first().copied() {
        out.push(Link {
            form: Form::Absolute,
            ..first
        });
        out.push(Link {
            form: Form::RootRelative,
            fragment: true,
            ..first
        });
    }
}

/// Pages of a host that share one navigation section in realistic mode.
const NAV_SECTION: usize = 40;

/// Fills `out` with the header navigation of page `n` in realistic mode ([`SiteSpec::realistic`]; empty
/// otherwise): 30 to 80 links (fewer on a host with fewer pages), all to pages of the same host: page 0 ("home"),
/// then the pages of the section of 40 that `n` belongs to and those after it. They are part of the graph, so
/// [`expected`] follows them; they reach no URL the chain does not, so without a depth limit the expected crawl is
/// the plain mode's.
pub(crate) fn nav_links(spec: &SiteSpec, host: usize, n: usize, out: &mut Vec<Link>) {
    out.clear();
    if !spec.realistic {
        return;
    }
    let pages = spec.pages_per_host.max(1);
    let want = 30 + (rnd(spec, host, n, 0, 11) % 51) as usize;
    out.push(link(Target::page(host, 0), Form::RootRelative));
    let start = n - n % NAV_SECTION;
    for i in 0..(want - 1).min(pages) {
        let form = match rnd(spec, host, n, i, 12) % 8 {
            0 => Form::Absolute,
            1..=3 => Form::RootRelative,
            _ => Form::DocRelative,
        };
        out.push(link(Target::page(host, (start + i) % pages), form));
    }
}

/// The requisites every page of a host shares in embeds mode ([`SiteSpec::embeds`]), as paths: the stylesheet the
/// pages link, the one it imports, what they load through `url()`, and the icon.
pub(crate) const HOST_EMBEDS: [&str; 5] = [
    "/static/site.css",
    "/static/favicon.ico",
    "/static/extra.css",
    "/static/img/body.png",
    "/static/font.woff2",
];

/// The requisites of page `n` of its own in embeds mode: its image, the image's `srcset` candidate and the
/// background of a style attribute.
pub(crate) fn page_embeds(n: usize) -> [String; 3] {
    [
        format!("/static/img/{n}.png"),
        format!("/static/img/{n}-2x.png"),
        format!("/static/bg/{n}.png"),
    ]
}

/// The URL paths listed in the page sitemap of a host.
pub(crate) fn orphans(spec: &SiteSpec, host: usize) -> impl Iterator<Item = Target> + use<> {
    let count = if spec.sitemaps { spec.orphans } else { 0 };
    (0..count).map(move |k| Target {
        host,
        kind: Kind::Orphan,
        n: k,
    })
}

/// Whether a path/target is served as a 200 page by the generator (without overrides).
pub(crate) fn served_ok(spec: &SiteSpec, t: &Target) -> bool {
    let in_pages = t.host < spec.hosts && t.n < spec.pages_per_host;
    match t.kind {
        Kind::Page | Kind::Private | Kind::Nofollow => in_pages,
        Kind::Orphan => t.host < spec.hosts && spec.sitemaps && t.n < spec.orphans,
        Kind::Old | Kind::Missing => false,
    }
}

/// The wide links of node `id` of `host` (wide mode, see [`SiteSpec::wide_links`]): node 0 is the host's page 0
/// (`/`), node `id > 0` is `/w/{id}`, and node `i` links to nodes `i * L + 1 ..= i * L + L` (`L = wide_links`).
/// Every wide URL thus has exactly one parent, so all wide links of a site are distinct. Empty when wide mode is
/// off, when `id` is not a 200 wide page, or when the child numbers would overflow (beyond depth 6 at `L = 1000`).
/// With [`SiteSpec::wide_siblings`] node `id > 0` links to its siblings instead (its parent's links, itself
/// included), which a crawler knows already: the frontier stops growing.
pub(crate) fn wide_children(spec: &SiteSpec, host: usize, id: usize) -> std::ops::Range<usize> {
    let l = spec.wide_links;
    let node = id == 0 || wide_ok(spec, host, id);
    let parent = if spec.wide_siblings && id > 0 {
        (id - 1) / l.max(1)
    } else {
        id
    };
    let first = parent.checked_mul(l).and_then(|x| x.checked_add(1));
    match (first, first.and_then(|x| x.checked_add(l))) {
        (Some(first), Some(end)) if l > 0 && node && host < spec.hosts => first..end,
        _ => 0..0,
    }
}

/// Whether `/w/{id}` on `host` answers 200 with wide links of its own (else 404): a share
/// [`SiteSpec::wide_ok_ratio`] of the ids, picked by a hash of (seed, host, id).
pub(crate) fn wide_ok(spec: &SiteSpec, host: usize, id: usize) -> bool {
    spec.wide_links > 0
        && id > 0
        && host < spec.hosts
        && unit(rnd(spec, host, id, 0, 10)) < spec.effective_wide_ratio()
}

/// Writes an href for `link` as it appears on the page `from` of the same host.
pub(crate) fn write_href(out: &mut String, base: &str, link: &Link, from: usize) {
    let t = &link.target;
    let start = out.len();
    match link.form {
        Form::Absolute => {
            out.push_str(base);
            t.write_path(out);
        }
        Form::RootRelative => t.write_path(out),
        Form::DocRelative => {
            let mut path = String::with_capacity(16);
            t.write_path(&mut path);
            if from == 0 {
                // the document is "/", its directory is "/"
                match path.strip_prefix('/') {
                    Some("") | None => out.push_str("./"),
                    Some(rest) => out.push_str(rest),
                }
            } else if let Some(rest) = path.strip_prefix("/page/") {
                // the document is "/page/{from}", its directory is "/page/"
                out.push_str(rest);
            } else {
                out.push_str("..");
                out.push_str(&path);
            }
        }
    }
    if out.len() == start {
        out.push('/');
    }
    if link.fragment {
        out.push_str("#top");
    }
}

/// 0-1 BFS over the link graph from `queue` (sorted by distance): each target's distance, and the nofollow targets
/// seen on the pages walked.
fn walk(
    spec: &SiteSpec,
    mut queue: VecDeque<(Target, u32)>,
    max: u32,
) -> (HashMap<Target, u32>, BTreeSet<Target>) {
    let mut dist: HashMap<Target, u32> = HashMap::new();
    let mut links = Vec::new();
    let mut nav = Vec::new();
    let mut nofollow_seen: BTreeSet<Target> = BTreeSet::new();
    // 0-1 BFS: the first time a target is popped, its distance is final.
    while let Some((t, d)) = queue.pop_front() {
        if d > max || dist.contains_key(&t) {
            continue;
        }
        dist.insert(t, d);
        match t.kind {
            Kind::Page if served_ok(spec, &t) => {
                page_links(spec, t.host, t.n, &mut links);
                nav_links(spec, t.host, t.n, &mut nav);
                for l in links.iter().chain(&nav) {
                    if l.nofollow {
                        nofollow_seen.insert(l.target);
                    } else if d < max && !dist.contains_key(&l.target) {
                        queue.push_back((l.target, d + 1));
                    }
                }
            }
            Kind::Old => queue.push_front((Target::page(t.host, t.n), d)),
            _ => {}
        }
    }
    (dist, nofollow_seen)
}

/// Computes the expected crawl from the graph, starting at page 0 of each host in `seed_hosts`.
pub(crate) fn expected(
    spec: &SiteSpec,
    bases: &[String],
    opts: &ExpectOptions,
    seed_hosts: &[usize],
) -> Expected {
    let max = opts.max_depth.unwrap_or(u32::MAX);
    let robots_block = spec.robots && opts.respect_robots;
    let seeds: Vec<(Target, u32)> = seed_hosts
        .iter()
        .filter(|h| **h < spec.hosts)
        .map(|&h| (Target::page(h, 0), 0))
        .collect();
    let (mut dist, mut nofollow_seen) = walk(spec, seeds.iter().copied().collect(), max);
    // In changing mode the sitemaps list every page, whose links lead on: walk again with the sitemap URLs of the
    // hosts reached at depth 1, until no new host is reached.
    if spec.changing.is_some() && opts.follow_sitemaps && max >= 1 {
        let mut hosts: BTreeSet<usize> = BTreeSet::new();
        loop {
            let reached: BTreeSet<usize> = dist.keys().map(|t| t.host).collect();
            if reached == hosts {
                break;
            }
            hosts = reached;
            let mut queue: VecDeque<(Target, u32)> = seeds.iter().copied().collect();
            for &h in &hosts {
                queue.extend((0..spec.pages_per_host).map(|n| (Target::page(h, n), 1)));
            }
            (dist, nofollow_seen) = walk(spec, queue, max);
        }
    }
    // Sitemap-only URLs count as depth 1 on every host the crawl reached.
    if opts.follow_sitemaps && max >= 1 {
        let visited: BTreeSet<usize> = dist.keys().map(|t| t.host).collect();
        for h in visited {
            for o in orphans(spec, h) {
                dist.entry(o).or_insert(1);
            }
        }
    }
    let url = |t: &Target| {
        let mut s = String::with_capacity(40);
        s.push_str(bases.get(t.host).map(String::as_str).unwrap_or(""));
        t.write_path(&mut s);
        s
    };
    let mut out = Expected::default();
    let mut sorted: Vec<&Target> = dist.keys().collect();
    sorted.sort();
    for t in &sorted {
        if spec.embeds && t.kind == Kind::Page && served_ok(spec, t) {
            let base = bases.get(t.host).map(String::as_str).unwrap_or("");
            for p in page_embeds(t.n)
                .iter()
                .map(String::as_str)
                .chain(HOST_EMBEDS)
            {
                out.embeds.insert(format!("{base}{p}"));
            }
        }
    }
    for t in sorted {
        match t.kind {
            Kind::Private if robots_block => {
                out.robots_excluded.insert(url(t));
            }
            Kind::Old => {
                out.redirects
                    .insert(url(t), url(&Target::page(t.host, t.n)));
            }
            _ if served_ok(spec, t) => {
                out.fetched_ok.insert(url(t));
            }
            _ => {
                out.not_found.insert(url(t));
            }
        }
    }
    out.never = nofollow_seen.iter().map(url).collect();
    out
}
