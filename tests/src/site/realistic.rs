//! Realistic-corpus rendering ([`SiteSpec::realistic`]): pages laid out like a documentation site, with the tag and
//! attribute density of one, over the same link graph as the plain pages.
//!
//! A page has an inline `<style>` and `<script>` in its head, a header whose navigation list holds the page's nav
//! links ([`nav_links`]: 30 to 80 pages of its host), a sidebar with an "on this page" table of contents
//! (fragment-only hrefs), and an article of sections: headings with anchors, paragraphs with inline `<a>`,
//! `<code>`, `<em>` and `<strong>`, syntax-highlighted `<pre><code>` blocks, tables, lists and figures with an
//! `<img>`, then a footer and a second inline script. The graph links ([`page_links`]) are spread over the
//! paragraphs in document order; those left when the page has reached its size are listed under "See also".
//!
//! The size of a page is drawn from the seed, host and page number: 5 to 60 KB, skewed towards small pages (mean
//! about 24 KB). Every link is a plain `<a href="...">`: scripts, styles and code samples hold no URL (code samples
//! escape their markup), and images are `data:` URIs, so a crawler that follows `<img src>` fetches nothing more.
//! Leaf pages (private, nofollow, orphan) use the same layout without links.

use std::fmt::Write as _;

use bytes::Bytes;

use super::SiteSpec;
use super::graph::{Kind, Link, Target, nav_links, page_links, rnd, wide_children, write_href};
use super::render::{Renderer, WIDE_LINK_BYTES, write_page_embeds, write_wide_links};

/// Smallest and largest target size of a page; the last block written may pass the target by a few KB.
const MIN_TARGET: usize = 5_200;
const MAX_TARGET: usize = 56_000;

const VOCAB: [&str; 96] = [
    "the",
    "a",
    "crawler",
    "request",
    "response",
    "returns",
    "value",
    "option",
    "configuration",
    "each",
    "host",
    "queue",
    "frontier",
    "when",
    "is",
    "are",
    "with",
    "for",
    "of",
    "to",
    "in",
    "this",
    "that",
    "it",
    "can",
    "be",
    "set",
    "default",
    "field",
    "struct",
    "method",
    "function",
    "error",
    "string",
    "buffer",
    "stream",
    "timeout",
    "connection",
    "server",
    "client",
    "header",
    "body",
    "page",
    "link",
    "document",
    "parser",
    "token",
    "scope",
    "robots",
    "sitemap",
    "redirect",
    "status",
    "retry",
    "limit",
    "rate",
    "delay",
    "worker",
    "thread",
    "task",
    "channel",
    "message",
    "actor",
    "store",
    "commit",
    "record",
    "output",
    "archive",
    "digest",
    "schema",
    "index",
    "path",
    "query",
    "fragment",
    "domain",
    "address",
    "resolver",
    "cache",
    "entry",
    "key",
    "lease",
    "deadline",
    "budget",
    "metric",
    "counter",
    "gauge",
    "span",
    "trace",
    "log",
    "level",
    "file",
    "directory",
    "format",
    "json",
    "written",
    "read",
    "only",
];

const IDENTS: [&str; 24] = [
    "max_depth",
    "Config",
    "fetch_page",
    "HostQueue",
    "user_agent",
    "Frontier::push",
    "Result<T>",
    "min_delay_ms",
    "Url::parse",
    "on_response",
    "Summary",
    "allow_private_networks",
    "per_host_concurrency",
    "Record",
    "commit()",
    "warc_dir",
    "Vec<Link>",
    "Option<u64>",
    "redirect_limit",
    "parse_sitemap",
    "CrawlError",
    "lease_ttl",
    "Arc<Store>",
    "extract_links",
];

const KEYWORDS: [&str; 8] = ["let", "fn", "pub", "use", "match", "if", "return", "async"];

const STYLE: &str = "<style>
:root { --fg: #1d1f21; --bg: #ffffff; --accent: #0b63c5; --muted: #5c6370; --sidebar-width: 17rem; }
html[data-theme=\"dark\"] { --fg: #d7dae0; --bg: #1e2127; --accent: #61afef; --muted: #9da5b4; }
body { margin: 0; font: 16px/1.6 system-ui, -apple-system, \"Segoe UI\", sans-serif; color: var(--fg); background: var(--bg); }
.site-header { position: sticky; top: 0; z-index: 10; border-bottom: 1px solid #e1e4e8; background: var(--bg); }
.site-header .nav-list { display: flex; flex-wrap: wrap; gap: .25rem 1rem; list-style: none; margin: 0; padding: .5rem 1rem; }
.nav-link { color: var(--muted); text-decoration: none; font-size: .875rem; }
.nav-link.active, .nav-link:hover { color: var(--accent); }
.layout { display: grid; grid-template-columns: var(--sidebar-width) minmax(0, 1fr); max-width: 80rem; margin: 0 auto; }
.sidebar { position: sticky; top: 3rem; align-self: start; max-height: calc(100vh - 3rem); overflow-y: auto; padding: 1rem; }
.toc-list { list-style: none; padding-left: 0; } .toc-list li { margin: .2rem 0; }
.content { padding: 1rem 2rem 4rem; min-width: 0; }
h1, h2, h3 { line-height: 1.25; } h2 { border-bottom: 1px solid #eaecef; padding-bottom: .3rem; }
.anchor { visibility: hidden; margin-left: .3rem; text-decoration: none; } h2:hover .anchor, h3:hover .anchor { visibility: visible; }
pre { background: #f6f8fa; border-radius: 6px; padding: 1rem; overflow-x: auto; font-size: .85rem; }
code { font-family: ui-monospace, SFMono-Regular, Menlo, Consolas, monospace; }
.k { color: #a626a4; } .nf { color: #4078f2; } .s { color: #50a14f; } .c { color: #a0a1a7; font-style: italic; } .n { color: #986801; }
table { border-collapse: collapse; margin: 1rem 0; } th, td { border: 1px solid #dfe2e5; padding: .4rem .8rem; text-align: left; }
.admonition { border-left: 4px solid var(--accent); background: #f1f8ff; padding: .5rem 1rem; margin: 1rem 0; }
.figure-img { max-width: 100%; height: auto; } figcaption { color: var(--muted); font-size: .875rem; }
.site-footer { border-top: 1px solid #e1e4e8; padding: 2rem; color: var(--muted); font-size: .875rem; }
@media (max-width: 52rem) { .layout { grid-template-columns: 1fr; } .sidebar { display: none; } }
</style>
";

const HEAD_SCRIPT: &str = "<script>
(function () {
  var stored = null;
  try { stored = window.localStorage.getItem(\"theme\"); } catch (e) { stored = null; }
  var dark = window.matchMedia && window.matchMedia(\"(prefers-color-scheme: dark)\").matches;
  document.documentElement.setAttribute(\"data-theme\", stored || (dark ? \"dark\" : \"light\"));
})();
</script>
";

const TAIL_SCRIPT: &str = "<script>
document.addEventListener(\"DOMContentLoaded\", function () {
  var toggle = document.getElementById(\"theme-toggle\");
  if (toggle) {
    toggle.addEventListener(\"click\", function () {
      var next = document.documentElement.getAttribute(\"data-theme\") === \"dark\" ? \"light\" : \"dark\";
      document.documentElement.setAttribute(\"data-theme\", next);
      try { window.localStorage.setItem(\"theme\", next); } catch (e) { /* private mode */ }
    });
  }
  var headings = document.querySelectorAll(\"h2[id], h3[id]\");
  var items = document.querySelectorAll(\".toc-list a\");
  window.addEventListener(\"scroll\", function () {
    var current = null;
    for (var i = 0; i < headings.length; i++) {
      if (headings[i].getBoundingClientRect().top < 80) { current = headings[i].id; }
    }
    for (var j = 0; j < items.length; j++) {
      items[j].classList.toggle(\"active\", items[j].getAttribute(\"data-target\") === current);
    }
  }, { passive: true });
});
</script>
";

/// A 1x1 transparent GIF: an image a crawler does not fetch.
const IMG_SRC: &str =
    "data:image/gif;base64,R0lGODlhAQABAIAAAAAAAP///yH5BAEAAAAALAAAAAABAAEAAAIBRAA7";

/// xorshift64* stream seeded per page: the text of a page is the same on every request.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }

    fn below(&mut self, n: usize) -> usize {
        (self.next() % n.max(1) as u64) as usize
    }

    fn word(&mut self) -> &'static str {
        VOCAB[self.below(VOCAB.len())]
    }

    fn ident(&mut self) -> &'static str {
        IDENTS[self.below(IDENTS.len())]
    }
}

/// The target size of page `n` (or leaf `salt`) on `host`: MIN_TARGET..=MAX_TARGET, skewed towards small pages.
pub(crate) fn target_size(spec: &SiteSpec, host: usize, n: usize, salt: u64) -> usize {
    let u = (rnd(spec, host, n, 0, salt) >> 11) as f64 / (1u64 << 53) as f64;
    MIN_TARGET + ((MAX_TARGET - MIN_TARGET) as f64 * u * u) as usize
}

/// Writes `text` with `&`, `<` and `>` escaped.
fn escape(out: &mut String, text: &str) {
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            c => out.push(c),
        }
    }
}

/// A title of a few words for page `m` (the same wherever it is linked from).
fn page_title(out: &mut String, spec: &SiteSpec, host: usize, m: usize) {
    let mut rng = Rng(rnd(spec, host, m, 0, 14) | 1);
    let words = 2 + rng.below(3);
    for i in 0..words {
        let w = rng.word();
        if i == 0 {
            let mut cs = w.chars();
            if let Some(c) = cs.next() {
                out.extend(c.to_uppercase());
                out.push_str(cs.as_str());
            }
        } else {
            out.push(' ');
            out.push_str(w);
        }
    }
}

/// One page being written: the output, the page's text stream and the graph links still to place.
struct Writer<'a> {
    r: &'a Renderer,
    host: usize,
    n: usize,
    out: String,
    rng: Rng,
    links: &'a [Link],
    next_link: usize,
}

impl Writer<'_> {
    fn link(&mut self, l: &Link, class: Option<&str>) {
        self.out.push_str("<a");
        if let Some(c) = class {
            self.out.push_str(" class=\"");
            self.out.push_str(c);
            self.out.push('"');
        }
        self.out.push_str(" href=\"");
        write_href(&mut self.out, self.r.base(l.target.host), l, self.n);
        self.out.push('"');
        if l.nofollow {
            self.out.push_str(" rel=\"nofollow\"");
        }
        self.out.push('>');
        match l.target.kind {
            Kind::Page => page_title(&mut self.out, &self.r.spec, l.target.host, l.target.n),
            k => {
                let _ = write!(self.out, "{k:?} {}", l.target.n);
            }
        }
        self.out.push_str("</a>");
    }

    /// One sentence of 8 to 20 words, with inline markup and possibly the next graph link.
    fn sentence(&mut self, with_link: bool) {
        let words = 8 + self.rng.below(13);
        let link_at = if with_link {
            self.rng.below(words)
        } else {
            usize::MAX
        };
        for i in 0..words {
            if i > 0 {
                self.out.push(' ');
            }
            if i == link_at && self.next_link < self.links.len() {
                let l = self.links[self.next_link];
                self.next_link += 1;
                self.link(&l, None);
                continue;
            }
            let w = self.rng.word();
            match self.rng.below(24) {
                0 | 1 => {
                    self.out.push_str("<code>");
                    escape(&mut self.out, IDENTS[self.rng.below(IDENTS.len())]);
                    self.out.push_str("</code>");
                }
                2 => {
                    self.out.push_str("<em>");
                    self.out.push_str(w);
                    self.out.push_str("</em>");
                }
                3 => {
                    self.out.push_str("<strong>");
                    self.out.push_str(w);
                    self.out.push_str("</strong>");
                }
                _ if i == 0 => {
                    let mut cs = w.chars();
                    if let Some(c) = cs.next() {
                        self.out.extend(c.to_uppercase());
                        self.out.push_str(cs.as_str());
                    }
                }
                _ => self.out.push_str(w),
            }
        }
        self.out.push_str(". ");
    }

    fn paragraph(&mut self) {
        self.out.push_str("<p>");
        let sentences = 2 + self.rng.below(5);
        for _ in 0..sentences {
            let with_link = self.rng.below(3) == 0;
            self.sentence(with_link);
        }
        self.out.push_str("</p>\n");
    }

    fn code_block(&mut self) {
        self.out
            .push_str("<div class=\"code-block\"><pre><code class=\"language-rust hljs\">");
        let lines = 4 + self.rng.below(14);
        for _ in 0..lines {
            match self.rng.below(5) {
                0 => {
                    self.out.push_str("<span class=\"c\">// ");
                    for _ in 0..4 + self.rng.below(6) {
                        self.out.push_str(self.rng.word());
                        self.out.push(' ');
                    }
                    self.out.push_str("</span>\n");
                }
                1 => {
                    let _ = writeln!(
                        self.out,
                        "<span class=\"k\">pub</span> <span class=\"k\">fn</span> <span class=\"nf\">{}_{}</span>(\
                         {}: &amp;<span class=\"n\">str</span>) -&gt; <span class=\"n\">Result</span>&lt;(), \
                         <span class=\"n\">Error</span>&gt; {{",
                        self.rng.word(),
                        self.rng.word(),
                        self.rng.word()
                    );
                }
                2 => {
                    let _ = writeln!(
                        self.out,
                        "    <span class=\"k\">let</span> {} = <span class=\"nf\">{}</span>(\
                         <span class=\"s\">&quot;{} {}&quot;</span>)?;",
                        self.rng.word(),
                        self.rng.word(),
                        self.rng.word(),
                        self.rng.word()
                    );
                }
                3 => {
                    let kw = KEYWORDS[self.rng.below(KEYWORDS.len())];
                    let _ = write!(self.out, "    <span class=\"k\">{kw}</span> ");
                    escape(&mut self.out, self.rng.ident());
                    self.out.push_str(";\n");
                }
                _ => {
                    let _ = writeln!(
                        self.out,
                        "    {}.<span class=\"nf\">{}</span>(<span class=\"n\">{}</span>);",
                        self.rng.word(),
                        self.rng.word(),
                        self.rng.below(1000)
                    );
                }
            }
        }
        self.out.push_str("</code></pre></div>\n");
    }

    fn table(&mut self) {
        self.out.push_str(
            "<table class=\"params\"><thead><tr><th scope=\"col\">Name</th><th scope=\"col\">Type</th>\
             <th scope=\"col\">Description</th></tr></thead>\n<tbody>\n",
        );
        for _ in 0..3 + self.rng.below(6) {
            self.out.push_str("<tr><td><code>");
            escape(&mut self.out, self.rng.ident());
            self.out.push_str("</code></td><td><code>");
            escape(&mut self.out, self.rng.ident());
            self.out.push_str("</code></td><td>");
            for _ in 0..5 + self.rng.below(8) {
                self.out.push_str(self.rng.word());
                self.out.push(' ');
            }
            self.out.push_str("</td></tr>\n");
        }
        self.out.push_str("</tbody></table>\n");
    }

    fn figure(&mut self, k: usize) {
        let _ = write!(
            self.out,
            "<figure class=\"figure\" id=\"fig-{k}\"><img class=\"figure-img\" src=\"{IMG_SRC}\" alt=\"{} {}\" \
             width=\"{}\" height=\"{}\" loading=\"lazy\" decoding=\"async\"><figcaption>Figure {k}: ",
            self.rng.word(),
            self.rng.word(),
            320 + 40 * self.rng.below(12),
            180 + 20 * self.rng.below(12)
        );
        for _ in 0..6 + self.rng.below(6) {
            self.out.push_str(self.rng.word());
            self.out.push(' ');
        }
        self.out.push_str("</figcaption></figure>\n");
    }

    fn list(&mut self) {
        self.out.push_str("<ul class=\"bullets\">\n");
        for _ in 0..3 + self.rng.below(5) {
            self.out.push_str("<li>");
            let with_link = self.rng.below(4) == 0;
            self.sentence(with_link);
            self.out.push_str("</li>\n");
        }
        self.out.push_str("</ul>\n");
    }

    fn admonition(&mut self) {
        self.out.push_str(
            "<div class=\"admonition note\" role=\"note\"><p class=\"admonition-title\"><strong>Note</strong></p><p>",
        );
        self.sentence(false);
        self.out.push_str("</p></div>\n");
    }

    /// A section `k` of the article: a heading, then blocks until about 1.5 to 4 KB.
    fn section(&mut self, k: usize, stop: usize) {
        let _ = write!(
            self.out,
            "<section class=\"doc-section\" id=\"sec-{k}\">\n<h2 id=\"h-{k}\">"
        );
        page_title(
            &mut self.out,
            &self.r.spec,
            self.host,
            self.n.wrapping_add(k * 7919),
        );
        let _ = writeln!(
            self.out,
            "<a class=\"anchor\" href=\"#h-{k}\" aria-hidden=\"true\">#</a></h2>"
        );
        let end = (self.out.len() + 1_500 + self.rng.below(2_500)).min(stop);
        // A heading is followed by text (and the first one by an example), then by whatever fills the section.
        self.paragraph();
        if k == 1 {
            self.code_block();
        }
        let mut blocks = 1;
        while self.out.len() < end {
            match self.rng.below(12) {
                0 | 1 => self.code_block(),
                2 => self.table(),
                3 => self.figure(k * 10 + blocks),
                4 => self.list(),
                5 => self.admonition(),
                6 => {
                    let _ = write!(self.out, "<h3 id=\"h-{k}-{blocks}\">");
                    page_title(&mut self.out, &self.r.spec, self.host, self.n + k + blocks);
                    self.out.push_str("</h3>\n");
                    self.paragraph();
                }
                _ => self.paragraph(),
            }
            blocks += 1;
        }
        self.out.push_str("</section>\n");
    }
}

/// The layout of a realistic page: `links` spread over the article, `nav` in the header (both empty for a leaf).
fn render(r: &Renderer, t: &Target, links: &[Link], nav: &[Link], salt: u64) -> Bytes {
    let spec = &r.spec;
    let (host, n) = (t.host, t.n);
    let target = target_size(spec, host, n, salt);
    let wide = if t.kind == Kind::Page && n == 0 {
        wide_children(spec, host, 0)
    } else {
        0..0
    };
    let mut w = Writer {
        r,
        host,
        n,
        out: String::with_capacity(target + 4_096 + wide.len() * WIDE_LINK_BYTES),
        rng: Rng(rnd(spec, host, n, 0, salt + 1) | 1),
        links,
        next_link: 0,
    };
    let title = match t.kind {
        Kind::Page => format!("Host {host} page {n}"),
        k => format!("Host {host} {k:?} {n}"),
    };
    w.out.push_str(
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\
         <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n<title>",
    );
    w.out.push_str(&title);
    w.out
        .push_str("</title>\n<meta name=\"description\" content=\"");
    page_title(&mut w.out, spec, host, n);
    w.out.push_str("\">\n");
    w.out.push_str(STYLE);
    w.out.push_str(HEAD_SCRIPT);
    let _ = writeln!(w.out, "</head>\n<body class=\"docs page-{n}\" id=\"top\">");
    if spec.embeds && t.kind == Kind::Page {
        write_page_embeds(&mut w.out, n);
    }
    if spec.noscript_links {
        w.out.push_str("<noscript>");
    }
    w.out.push_str(
        "<header class=\"site-header\" role=\"banner\">\n<div class=\"brand\"><img class=\"logo\" src=\"",
    );
    w.out.push_str(IMG_SRC);
    w.out.push_str(
        "\" alt=\"\" width=\"32\" height=\"32\"><span class=\"brand-name\">Docs</span></div>\n\
         <nav class=\"topnav\" aria-label=\"Main navigation\"><ul class=\"nav-list\">\n",
    );
    for l in nav {
        let active = l.target.n == n;
        w.out.push_str("<li class=\"nav-item\">");
        w.link(
            l,
            Some(if active {
                "nav-link active"
            } else {
                "nav-link"
            }),
        );
        w.out.push_str("</li>\n");
    }
    w.out.push_str(
        "</ul>\n<button id=\"theme-toggle\" class=\"btn btn-icon\" type=\"button\" aria-label=\"Toggle theme\">\
         &#9680;</button></nav>\n</header>\n",
    );
    // The sections are drawn before the sidebar lists them: sizes decide how many there are.
    let tail_len = 1_200 + TAIL_SCRIPT.len();
    let head_len = w.out.len();
    let mut article = String::new();
    std::mem::swap(&mut w.out, &mut article);
    let _ = write!(
        w.out,
        "<main class=\"content\" id=\"content\" role=\"main\"><article class=\"doc\">\n<h1>"
    );
    w.out.push_str(&title);
    w.out.push_str("</h1>\n<p class=\"lead\">");
    w.sentence(false);
    w.out.push_str("</p>\n");
    let mut sections = 0;
    // Room for the sidebar: about 60 bytes per section.
    while sections == 0 || head_len + w.out.len() + tail_len + 60 * (sections + 1) < target {
        sections += 1;
        let stop = target.saturating_sub(head_len + tail_len + 60 * (sections + 1));
        w.section(sections, stop.max(w.out.len() + 400));
    }
    if w.next_link < links.len() {
        w.out
            .push_str("<section class=\"see-also\" id=\"see-also\"><h2>See also</h2>\n<ul>\n");
        while let Some(l) = links.get(w.next_link).copied() {
            w.next_link += 1;
            w.out.push_str("<li>");
            w.link(&l, None);
            w.out.push_str("</li>\n");
        }
        w.out.push_str("</ul></section>\n");
    }
    write_wide_links(&mut w.out, wide);
    w.out.push_str("</article></main>\n");
    std::mem::swap(&mut w.out, &mut article);
    w.out.push_str(
        "<div class=\"layout\">\n<aside class=\"sidebar\" id=\"sidebar\" aria-label=\"On this page\">\
         <p class=\"toc-title\">On this page</p>\n<ul class=\"toc-list\">\n",
    );
    for k in 1..=sections {
        let _ = writeln!(
            w.out,
            "<li><a href=\"#sec-{k}\" data-target=\"h-{k}\">Section {k}</a></li>"
        );
    }
    w.out.push_str("</ul></aside>\n");
    w.out.push_str(&article);
    w.out.push_str("</div>\n");
    if spec.noscript_links {
        w.out.push_str("</noscript>\n");
    }
    w.out
        .push_str("<footer class=\"site-footer\" role=\"contentinfo\"><p class=\"copyright\">");
    for _ in 0..12 {
        w.out.push_str(w.rng.word());
        w.out.push(' ');
    }
    w.out.push_str("</p></footer>\n");
    w.out.push_str(TAIL_SCRIPT);
    w.out.push_str("</body></html>\n");
    Bytes::from(w.out.into_bytes())
}

/// The realistic HTML of page `n` on `host`: its graph links in the article, its nav links in the header.
pub(crate) fn page(r: &Renderer, host: usize, n: usize) -> Bytes {
    let mut links = Vec::with_capacity(r.spec.links_per_page + 8);
    page_links(&r.spec, host, n, &mut links);
    let mut nav = Vec::with_capacity(80);
    nav_links(&r.spec, host, n, &mut nav);
    render(r, &Target::page(host, n), &links, &nav, 20)
}

/// A realistic page without links (private, nofollow and orphan pages).
pub(crate) fn leaf(r: &Renderer, t: &Target) -> Bytes {
    let salt = 30 + t.kind as u64 * 2;
    render(r, t, &[], &[], salt)
}
