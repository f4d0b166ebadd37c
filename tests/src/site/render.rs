//! Rendering of the generated site's bodies: HTML pages, leaf pages, robots.txt, sitemaps, 404s, and gzip.
//!
//! Each body is written once per request into one buffer sized up front (no re-growth), then handed to hyper as
//! `Bytes` without a copy. The padding text is made once per site.

use std::cell::RefCell;
use std::fmt::Write as _;
use std::sync::atomic::AtomicU64;

use bytes::Bytes;
use flate2::{Compress, Compression, Crc, FlushCompress, Status};

use super::SiteSpec;
use super::changing::{Family, Misbehavior, PageKey, Schedule};
use super::clock::SiteClock;
use super::conditional::{http_date, w3c_date};
use super::graph::{Kind, Link, Target, page_embeds, page_links, wide_children, write_href};

const WORDS: [&str; 16] = [
    "alpha", "bravo", "crawler", "delta", "echo", "frontier", "golf", "hotel", "index", "juliet",
    "kilo", "lima", "metro", "nordic", "oscar", "polite",
];

/// Deterministic filler text (ASCII words and spaces) of at least `len` bytes.
pub(crate) fn filler(seed: u64, len: usize) -> String {
    let mut s = String::with_capacity(len + 16);
    let mut x = seed | 1;
    while s.len() < len {
        // xorshift64: cheap and deterministic
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        s.push_str(WORDS[(x % WORDS.len() as u64) as usize]);
        s.push(if x.is_multiple_of(11) { '.' } else { ' ' });
    }
    s
}

/// Everything the renderer needs about one site; built once at start.
pub(crate) struct Renderer {
    pub spec: SiteSpec,
    pub bases: Vec<String>,
    /// at least `2 * page_bytes` of padding text
    pub filler: String,
    /// the site's time in changing mode
    pub clock: SiteClock,
    /// responses of hosts whose ETag changes on every response ([`Misbehavior::EtagChurn`])
    pub churn: AtomicU64,
}

impl Renderer {
    pub fn new(spec: SiteSpec, bases: Vec<String>, clock: SiteClock) -> Self {
        let filler = filler(spec.seed, spec.page_bytes.saturating_mul(2).max(64));
        Self {
            spec,
            bases,
            filler,
            clock,
            churn: AtomicU64::new(0),
        }
    }

    /// Whether `key` is a page the generator serves with a change schedule (changing mode only; a new page may not
    /// be born yet).
    pub(crate) fn has_schedule(&self, key: &PageKey) -> bool {
        let spec = &self.spec;
        let Some(ch) = &spec.changing else {
            return false;
        };
        key.host < spec.hosts
            && match key.family {
                Family::Page | Family::Private | Family::Nofollow => key.n < spec.pages_per_host,
                Family::Orphan => spec.sitemaps && key.n < spec.orphans,
                Family::New => key.n < ch.new_pages,
            }
    }

    /// A changing page's body at `version` (current since `since`): the page as the other modes render it, with a
    /// version marker before `</body>`.
    pub(crate) fn changing_body(&self, key: &PageKey, version: u64, since: u64) -> Bytes {
        let kind = match key.family {
            Family::Page => None,
            Family::Private => Some(Kind::Private),
            Family::Nofollow => Some(Kind::Nofollow),
            Family::Orphan | Family::New => Some(Kind::Orphan),
        };
        let base = match kind {
            None => self.page(key.host, key.n),
            Some(kind) => self.leaf(&Target {
                host: key.host,
                kind,
                n: key.n,
            }),
        };
        let html = String::from_utf8_lossy(&base);
        let at = html.rfind("</body>").unwrap_or(html.len());
        let mut out = String::with_capacity(html.len() + 96);
        out.push_str(&html[..at]);
        if key.family == Family::New {
            let _ = writeln!(out, "<p class=\"new\">new page {}</p>", key.n);
        }
        let _ = writeln!(
            out,
            "<p class=\"version\" data-version=\"{version}\">version {version} since {}</p>",
            http_date(since)
        );
        out.push_str(&html[at..]);
        Bytes::from(out.into_bytes())
    }

    /// The URLs of `host`'s page sitemap in changing mode: every page, orphan and born new page.
    pub(crate) fn sitemap_keys(&self, host: usize, now: u64) -> Vec<PageKey> {
        let spec = &self.spec;
        let Some(ch) = &spec.changing else {
            return Vec::new();
        };
        let key = |family, n| PageKey { host, family, n };
        let mut keys: Vec<PageKey> = (0..spec.pages_per_host)
            .map(|n| key(Family::Page, n))
            .collect();
        if spec.sitemaps {
            keys.extend((0..spec.orphans).map(|n| key(Family::Orphan, n)));
        }
        keys.extend(
            (0..ch.new_pages)
                .map(|n| key(Family::New, n))
                .filter(|k| Schedule::of(spec, ch, k).version_at(now).is_some()),
        );
        keys
    }

    fn sitemap_changing(&self, host: usize) -> Option<Bytes> {
        let ch = self.spec.changing.as_ref()?;
        let now = self.clock.now_s();
        let lying = ch.misbehavior(host) == Some(Misbehavior::LyingSitemap);
        let keys = self.sitemap_keys(host, now);
        let mut out = String::with_capacity(keys.len() * 140 + 128);
        out.push_str(
            "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n\
             <urlset xmlns=\"http://www.sitemaps.org/schemas/sitemap/0.9\">\n",
        );
        for k in keys {
            let sched = Schedule::of(&self.spec, ch, &k);
            let Some((_, since)) = sched.version_at(now) else {
                continue;
            };
            let lastmod = if lying { now.saturating_sub(1) } else { since };
            let _ = writeln!(
                out,
                "  <url><loc>{}{}</loc><lastmod>{}</lastmod><changefreq>{}</changefreq></url>",
                self.base(host),
                k.path(),
                w3c_date(lastmod),
                sched.class.changefreq()
            );
        }
        out.push_str("</urlset>\n");
        Some(Bytes::from(out.into_bytes()))
    }

    pub(crate) fn base(&self, host: usize) -> &str {
        self.bases.get(host).map(String::as_str).unwrap_or("")
    }

    fn pad(&self, out: &mut String, salt: usize) {
        // leave room for the closing tags
        let need = self.spec.page_bytes.saturating_sub(out.len() + 24);
        if need == 0 {
            return;
        }
        let span = self.filler.len().saturating_sub(need).max(1);
        let start = salt.wrapping_mul(131) % span;
        let end = (start + need).min(self.filler.len());
        out.push_str("<p>");
        out.push_str(self.filler.get(start..end).unwrap_or(""));
        out.push_str("</p>\n");
    }

    fn head(&self, out: &mut String, title: &str) {
        out.push_str("<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\"><title>");
        out.push_str(title);
        out.push_str("</title></head>\n<body>\n<h1>");
        out.push_str(title);
        out.push_str("</h1>\n");
    }

    /// The HTML of page `n` on `host`, with all its links.
    pub fn page(&self, host: usize, n: usize) -> Bytes {
        if self.spec.realistic {
            return super::realistic::page(self, host, n);
        }
        let mut links: Vec<Link> = Vec::with_capacity(self.spec.links_per_page + 8);
        page_links(&self.spec, host, n, &mut links);
        let wide = if n == 0 {
            wide_children(&self.spec, host, 0)
        } else {
            0..0
        };
        let mut out = String::with_capacity(
            self.spec.page_bytes.max(links.len() * 80) + wide.len() * WIDE_LINK_BYTES + 512,
        );
        let title = format!("Host {host} page {n}");
        self.head(&mut out, &title);
        if self.spec.embeds {
            write_page_embeds(&mut out, n);
        }
        if self.spec.noscript_links {
            out.push_str("<noscript>");
        }
        out.push_str("<ul>\n");
        for l in &links {
            out.push_str("<li><a href=\"");
            write_href(&mut out, self.base(l.target.host), l, n);
            out.push('"');
            if l.nofollow {
                out.push_str(" rel=\"nofollow\"");
            }
            out.push('>');
            out.push_str(match l.target.kind {
                Kind::Page => "page",
                Kind::Private => "private",
                Kind::Old => "old",
                Kind::Missing => "missing",
                Kind::Nofollow => "nofollow",
                Kind::Orphan => "orphan",
            });
            out.push_str("</a></li>\n");
        }
        out.push_str("</ul>\n");
        if self.spec.noscript_links {
            out.push_str("</noscript>\n");
        }
        write_wide_links(&mut out, wide);
        self.pad(&mut out, n);
        out.push_str("</body></html>\n");
        Bytes::from(out.into_bytes())
    }

    /// The HTML of `/w/{id}` (wide mode), a page that answers 200: its wide links, written as they are generated.
    pub fn wide_page(&self, host: usize, id: usize) -> Bytes {
        let wide = wide_children(&self.spec, host, id);
        let mut out =
            String::with_capacity(self.spec.page_bytes + wide.len() * WIDE_LINK_BYTES + 256);
        let title = format!("Host {host} wide {id}");
        self.head(&mut out, &title);
        write_wide_links(&mut out, wide);
        self.pad(&mut out, id);
        out.push_str("</body></html>\n");
        Bytes::from(out.into_bytes())
    }

    /// A page without links (private, nofollow and orphan pages).
    pub fn leaf(&self, t: &Target) -> Bytes {
        if self.spec.realistic {
            return super::realistic::leaf(self, t);
        }
        let mut out = String::with_capacity(self.spec.page_bytes + 256);
        let title = format!("Host {} {:?} {}", t.host, t.kind, t.n);
        self.head(&mut out, &title);
        self.pad(&mut out, t.n.wrapping_add(7));
        out.push_str("</body></html>\n");
        Bytes::from(out.into_bytes())
    }

    pub fn robots(&self, host: usize) -> Bytes {
        let mut out = String::from("User-agent: *\nDisallow: /private/\n");
        if self.spec.sitemaps {
            out.push_str("\nSitemap: ");
            out.push_str(self.base(host));
            out.push_str("/sitemap.xml\n");
        }
        Bytes::from(out.into_bytes())
    }

    pub fn sitemap_index(&self, host: usize) -> Bytes {
        let mut out = String::from(
            "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n\
             <sitemapindex xmlns=\"http://www.sitemaps.org/schemas/sitemap/0.9\">\n  <sitemap><loc>",
        );
        out.push_str(self.base(host));
        out.push_str("/sitemap-pages.xml</loc></sitemap>\n</sitemapindex>\n");
        Bytes::from(out.into_bytes())
    }

    pub fn sitemap_pages(&self, host: usize) -> Bytes {
        if let Some(b) = self.sitemap_changing(host) {
            return b;
        }
        let mut out = String::from(
            "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n\
             <urlset xmlns=\"http://www.sitemaps.org/schemas/sitemap/0.9\">\n",
        );
        for o in super::graph::orphans(&self.spec, host) {
            out.push_str("  <url><loc>");
            out.push_str(self.base(host));
            o.write_path(&mut out);
            out.push_str("</loc></url>\n");
        }
        out.push_str("</urlset>\n");
        Bytes::from(out.into_bytes())
    }
}

/// The requisites of page `n` in embeds mode (see `graph::HOST_EMBEDS` and `graph::page_embeds`).
pub(crate) fn write_page_embeds(out: &mut String, n: usize) {
    let [img, img2x, bg] = page_embeds(n);
    let _ = write!(
        out,
        "<link rel=\"stylesheet\" href=\"/static/site.css\"><link rel=\"icon\" href=\"/static/favicon.ico\">\n\
         <img src=\"{img}\" srcset=\"{img2x} 2x\" alt=\"\">\n<div style=\"background: url('{bg}')\">bg</div>\n"
    );
}

/// A requisite under `/static/` in embeds mode: its content type and body, `None` for a path the pages do not
/// reference.
pub(crate) fn static_file(spec: &SiteSpec, path: &str) -> Option<(&'static str, Bytes)> {
    const PNG: &[u8] = b"\x89PNG\r\n\x1a\n-test-image";
    let fixed = match path {
        "/static/site.css" => Some((
            "text/css",
            "@import url(\"/static/extra.css\");\nbody { background: url(img/body.png) }\n",
        )),
        "/static/extra.css" => Some((
            "text/css; charset=utf-8",
            "@font-face { font-family: t; src: url('../static/font.woff2') format('woff2') }\n",
        )),
        "/static/favicon.ico" => Some(("image/x-icon", "ico")),
        "/static/font.woff2" => Some(("font/woff2", "wOF2")),
        _ => None,
    };
    if let Some((ct, body)) = fixed {
        return Some((ct, Bytes::from_static(body.as_bytes())));
    }
    if path == "/static/img/body.png" {
        return Some(("image/png", Bytes::from_static(PNG)));
    }
    let (dir, file) = path.strip_prefix("/static/")?.split_once('/')?;
    let stem = file.strip_suffix(".png")?;
    let n = match dir {
        "img" => stem.strip_suffix("-2x").unwrap_or(stem),
        "bg" => stem,
        _ => return None,
    };
    let n: usize = n.parse().ok()?;
    (n < spec.pages_per_host && page_embeds(n).iter().any(|p| p == path))
        .then(|| ("image/png", Bytes::from_static(PNG)))
}

/// Room for one wide link: `<li><a href="/w/{id}">w</a></li>` with an id of up to 20 digits.
pub(crate) const WIDE_LINK_BYTES: usize = 48;

/// Writes the wide links `ids` as a list of root-relative hrefs (nothing for an empty range).
pub(crate) fn write_wide_links(out: &mut String, ids: std::ops::Range<usize>) {
    if ids.is_empty() {
        return;
    }
    out.push_str("<ul class=\"wide\">\n");
    for id in ids {
        out.push_str("<li><a href=\"/w/");
        let _ = write!(out, "{id}");
        out.push_str("\">w</a></li>\n");
    }
    out.push_str("</ul>\n");
}

pub(crate) const NOT_FOUND: &[u8] =
    b"<!DOCTYPE html>\n<html><head><title>404 Not Found</title></head>\
<body><h1>Not Found</h1></body></html>\n";

thread_local! {
    /// One raw-deflate state per thread, reset for each body: creating a fresh one costs more than compressing a page.
    static DEFLATE: RefCell<Option<Compress>> = const { RefCell::new(None) };
}

/// gzip-compresses `data` (fast level). `None` only if the compressor fails, which it does not on memory.
pub(crate) fn gzip(data: &[u8]) -> Option<Bytes> {
    DEFLATE.with(|cell| {
        let mut slot = cell.try_borrow_mut().ok()?;
        let c = slot.get_or_insert_with(|| Compress::new(Compression::fast(), false));
        c.reset();
        let mut out = Vec::with_capacity(data.len() / 2 + 64);
        out.extend_from_slice(&[0x1f, 0x8b, 8, 0, 0, 0, 0, 0, 0, 3]);
        let mut done = false;
        for _ in 0..data.len() / 1024 + 64 {
            if out.capacity() - out.len() < 256 {
                out.reserve(out.capacity().max(1024));
            }
            let input = data.get(c.total_in() as usize..).unwrap_or(&[]);
            if c.compress_vec(input, &mut out, FlushCompress::Finish)
                .ok()?
                == Status::StreamEnd
            {
                done = true;
                break;
            }
        }
        if !done {
            return None;
        }
        let mut crc = Crc::new();
        crc.update(data);
        out.extend_from_slice(&crc.sum().to_le_bytes());
        out.extend_from_slice(&(data.len() as u32).to_le_bytes());
        Some(Bytes::from(out))
    })
}

/// Whether an `Accept-Encoding` value accepts gzip (`gzip` or `x-gzip` without `q=0`).
pub(crate) fn accepts_gzip(value: &str) -> bool {
    value.split(',').any(|part| {
        let mut it = part.split(';');
        let coding = it.next().unwrap_or("").trim();
        if !(coding.eq_ignore_ascii_case("gzip") || coding.eq_ignore_ascii_case("x-gzip")) {
            return false;
        }
        !it.any(|p| {
            let p = p.trim();
            p.strip_prefix("q=")
                .or_else(|| p.strip_prefix("Q="))
                .is_some_and(|q| q.trim().parse::<f32>().ok() == Some(0.0))
        })
    })
}
