//! What a client achieved on a changing test site: the site's ground truth (`testsite --truth-file`) against the
//! client's requests (crawl-engine's JSONL, or the site's request log for any other client), over a window of
//! real time.
//!
//! Real times (a record's `fetched_at`, a log line's start) become site time through the truth's clock fields:
//! `epoch_s + (real - started_real_ms) × time_scale`. A page's copy is what its last `200` brought; a `304`
//! confirms the copy the client had, which is current unless the page changed since that `200` (a host that
//! answers 304 to everything keeps stale copies). Other answers leave the copy as it was. A page counts from the
//! window's start, or from its birth when it appeared later; one born after the window is left out.

use std::collections::{BTreeMap, HashMap};

use serde::{Deserialize, Serialize};

use super::{Fetch, page_freshness};

/// Why a truth file, a JSONL file or a request log could not be read.
#[derive(Debug, thiserror::Error)]
pub enum ReportError {
    #[error("truth file: {0}")]
    Truth(serde_json::Error),
    #[error("JSONL line {line}: {source}")]
    Record {
        line: usize,
        source: serde_json::Error,
    },
    #[error("JSONL line {line}: fetched_at {value:?} is not an RFC 3339 time")]
    Time { line: usize, value: String },
    #[error("request log line {line}: expected `host start end status path`, got {text:?}")]
    LogLine { line: usize, text: String },
}

/// The ground truth a `testsite --changing --truth-file` writes.
#[derive(Debug, Clone, PartialEq, Deserialize)]
pub struct Truth {
    /// site seconds per real second
    pub time_scale: f64,
    /// site time (Unix s) at which the clock started
    pub epoch_s: u64,
    /// real time (Unix ms) at which the clock started
    pub started_real_ms: u64,
    /// site time (Unix s) at which the truth was written
    pub now_s: u64,
    pub pages: Vec<TruthPage>,
}

/// One page the site's sitemaps list.
#[derive(Debug, Clone, PartialEq, Deserialize)]
pub struct TruthPage {
    pub url: String,
    /// index of its host (for request logs, which name hosts by index)
    #[serde(default)]
    pub host: Option<usize>,
    /// site time (Unix s) from which it exists; None: from the epoch
    #[serde(default)]
    pub start_s: Option<u64>,
    /// its change class as the site prints it (`Periodic { period_s: 60, phase_s: 7 }`, `Never`, ...)
    #[serde(default)]
    pub class: Option<String>,
    /// change instants, site time (Unix s)
    pub changes: Vec<u64>,
}

impl Truth {
    pub fn parse(text: &str) -> Result<Truth, ReportError> {
        serde_json::from_str(text).map_err(ReportError::Truth)
    }

    /// Site time (Unix s) at real Unix time `real_ms`.
    pub fn site_s(&self, real_ms: f64) -> f64 {
        self.epoch_s as f64 + (real_ms - self.started_real_ms as f64) / 1000.0 * self.time_scale
    }
}

/// A short name of a truth class: `periodic-60s`, `never`, `bursty`, `poisson`; `unknown` without one.
pub fn class_label(class: Option<&str>) -> String {
    let Some(c) = class else {
        return "unknown".to_owned();
    };
    let name = c.split([' ', '{']).next().unwrap_or(c).to_ascii_lowercase();
    if name == "periodic"
        && let Some(period) = c
            .split_once("period_s:")
            .and_then(|(_, rest)| rest.split([',', '}']).next())
            .map(str::trim)
    {
        return format!("periodic-{period}s");
    }
    name
}

/// One request a client made, as its record or the site's log tells it.
#[derive(Debug, Clone, PartialEq)]
pub struct Request {
    pub url: String,
    /// when it was sent, real Unix ms
    pub at_ms: f64,
    /// the answer's status; None when none came
    pub status: Option<u16>,
    /// the client's own verdict (a record's `changed`); None when it gave none
    pub changed: Option<bool>,
}

/// The fields of a crawl-engine record this reader needs.
#[derive(Debug, Deserialize)]
struct RecordLine {
    url: String,
    status: Option<u16>,
    fetched_at: String,
    #[serde(default)]
    elapsed_ms: Option<u64>,
    #[serde(default)]
    changed: Option<bool>,
}

/// The requests of a crawl-engine JSONL file: one per line, sent at `fetched_at` less `elapsed_ms`.
pub fn requests_from_jsonl(text: &str) -> Result<Vec<Request>, ReportError> {
    let mut out = Vec::new();
    for (i, line) in text.lines().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        let r: RecordLine = serde_json::from_str(line).map_err(|source| ReportError::Record {
            line: i + 1,
            source,
        })?;
        let done = crawl_core::recrawl::parse_w3c_datetime_ms(&r.fetched_at).ok_or_else(|| {
            ReportError::Time {
                line: i + 1,
                value: r.fetched_at.clone(),
            }
        })?;
        out.push(Request {
            url: r.url,
            at_ms: done.saturating_sub(r.elapsed_ms.unwrap_or(0)) as f64,
            status: r.status,
            changed: r.changed,
        });
    }
    Ok(out)
}

/// The path of an absolute URL (`/` when it has none).
fn path_of(url: &str) -> &str {
    let rest = url.split_once("://").map_or(url, |(_, r)| r);
    rest.find('/').map_or("/", |i| &rest[i..])
}

/// The requests of a site request log written with `testsite --request-log-unix` (`host start end status path`,
/// Unix ms). A request for a truth page gets the page's URL; any other (robots.txt, sitemaps, unlisted pages)
/// gets `#<host><path>`.
pub fn requests_from_log(text: &str, truth: &Truth) -> Result<Vec<Request>, ReportError> {
    let urls: HashMap<(usize, &str), &str> = truth
        .pages
        .iter()
        .filter_map(|p| Some(((p.host?, path_of(&p.url)), p.url.as_str())))
        .collect();
    let mut out = Vec::new();
    for (i, line) in text.lines().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        let bad = || ReportError::LogLine {
            line: i + 1,
            text: line.to_owned(),
        };
        let mut f = line.splitn(5, ' ');
        let (Some(host), Some(start), Some(_end), Some(status), Some(path)) =
            (f.next(), f.next(), f.next(), f.next(), f.next())
        else {
            return Err(bad());
        };
        let host: usize = host.parse().map_err(|_| bad())?;
        let at_ms: f64 = start.parse().map_err(|_| bad())?;
        let status: u16 = status.parse().map_err(|_| bad())?;
        let path_only = path.split_once('?').map_or(path, |(p, _)| p);
        let url = urls
            .get(&(host, path_only))
            .map_or_else(|| format!("#{host}{path}"), |u| (*u).to_owned());
        out.push(Request {
            url,
            at_ms,
            status: (status != 0).then_some(status),
            changed: None,
        });
    }
    Ok(out)
}

/// The window of real time (Unix ms) measured; each bound defaults to the first or last request.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Window {
    pub from_ms: Option<f64>,
    pub to_ms: Option<f64>,
}

/// The figures of a set of pages over the window.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct Group {
    /// `all`, or a class label
    pub class: String,
    /// pages that existed during the window
    pub pages: usize,
    /// of them, pages the client held a copy of at some point of the window
    pub fetched: usize,
    /// mean over pages of the share of their time in the window with a current copy
    pub fresh_share: f64,
    /// mean over the pages with a copy of the copy's mean age while it existed (site seconds)
    pub mean_age_s: f64,
    /// mean over pages of the share of their time in the window with any copy
    pub covered_share: f64,
    /// requests for the pages sent in the window
    pub requests: usize,
    pub requests_per_page: f64,
    /// requests whose record says `changed: false` (crawl-engine's own view)
    pub unchanged_revisits: usize,
    /// of them, answered 304
    pub unchanged_304: usize,
    /// requests after a copy existed for a page that had not changed since that copy (the truth's view)
    pub still_revisits: usize,
    /// of them, answered 304
    pub still_304: usize,
}

impl Group {
    fn named(class: &str) -> Group {
        Group {
            class: class.to_owned(),
            ..Group::default()
        }
    }

    /// The share of `unchanged_revisits` answered 304 (0 when there were none).
    pub fn unchanged_304_share(&self) -> f64 {
        share(self.unchanged_304, self.unchanged_revisits)
    }

    /// The share of `still_revisits` answered 304 (0 when there were none).
    pub fn still_304_share(&self) -> f64 {
        share(self.still_304, self.still_revisits)
    }
}

fn share(part: usize, whole: usize) -> f64 {
    if whole == 0 {
        0.0
    } else {
        part as f64 / whole as f64
    }
}

/// The result: the window, every request sent in it, and the figures of all pages and of each class.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Report {
    pub from_real_ms: f64,
    pub to_real_ms: f64,
    /// the window in site seconds
    pub window_site_s: f64,
    /// requests in the window, for anything (robots.txt, sitemaps and unlisted URLs included)
    pub total_requests: usize,
    pub all: Group,
    pub classes: Vec<Group>,
}

/// One page's figures, before they are averaged into groups.
struct PageFigures {
    fresh: f64,
    covered: f64,
    /// mean age while a copy existed; None without a copy
    age: Option<f64>,
    requests: usize,
    unchanged: usize,
    unchanged_304: usize,
    still: usize,
    still_304: usize,
}

fn page_figures(
    truth: &Truth,
    page: &TruthPage,
    reqs: &[&Request],
    t0: f64,
    t1: f64,
) -> PageFigures {
    let in_window = |at: f64| at >= t0 && at <= t1;
    let mut fetches = Vec::new();
    // site time of the last 200, whose body is the copy
    let mut body_at: Option<f64> = None;
    let mut f = PageFigures {
        fresh: 0.0,
        covered: 0.0,
        age: None,
        requests: 0,
        unchanged: 0,
        unchanged_304: 0,
        still: 0,
        still_304: 0,
    };
    for r in reqs {
        let at = truth.site_s(r.at_ms);
        let counted = in_window(at);
        let not_modified = r.status == Some(304);
        if counted {
            f.requests += 1;
            if r.changed == Some(false) {
                f.unchanged += 1;
                f.unchanged_304 += usize::from(not_modified);
            }
        }
        // the page's copy was current when it was taken and nothing changed since
        let last_fetch = fetches.last().map(|x: &Fetch| x.at);
        if counted
            && let Some(prev) = last_fetch
            && !page
                .changes
                .iter()
                .any(|c| (*c as f64) > prev && (*c as f64) <= at)
            && fetches.last().is_some_and(|x| x.saw_current)
            && matches!(r.status, Some(200 | 304))
        {
            f.still += 1;
            f.still_304 += usize::from(not_modified);
        }
        match r.status {
            Some(200) => {
                body_at = Some(at);
                fetches.push(Fetch {
                    at,
                    saw_current: true,
                });
            }
            Some(304) => {
                if let Some(b) = body_at {
                    let seen = !page
                        .changes
                        .iter()
                        .any(|c| (*c as f64) > b && (*c as f64) <= at);
                    fetches.push(Fetch {
                        at,
                        saw_current: seen,
                    });
                }
            }
            _ => {}
        }
    }
    let changes: Vec<f64> = page.changes.iter().map(|c| *c as f64).collect();
    let p = page_freshness(&changes, &fetches, t0, t1);
    f.fresh = p.fresh_share;
    f.covered = p.covered_share;
    f.age = (p.covered_share > 0.0).then_some(p.mean_age_s);
    f
}

/// The figures of `requests` against `truth` over `window`.
pub fn report(truth: &Truth, requests: &[Request], window: Window) -> Report {
    let first = requests
        .iter()
        .map(|r| r.at_ms)
        .fold(f64::INFINITY, f64::min);
    let last = requests
        .iter()
        .map(|r| r.at_ms)
        .fold(f64::NEG_INFINITY, f64::max);
    let from_ms = window
        .from_ms
        .unwrap_or(if first.is_finite() { first } else { 0.0 });
    let to_ms = window
        .to_ms
        .unwrap_or(if last.is_finite() { last } else { from_ms });
    let (t0, t1) = (truth.site_s(from_ms), truth.site_s(to_ms));
    let mut by_url: HashMap<&str, Vec<&Request>> = HashMap::new();
    for r in requests {
        by_url.entry(r.url.as_str()).or_default().push(r);
    }
    for reqs in by_url.values_mut() {
        reqs.sort_by(|a, b| a.at_ms.total_cmp(&b.at_ms));
    }
    let mut groups: BTreeMap<String, (Group, Vec<PageFigures>)> = BTreeMap::new();
    let mut all = (Group::named("all"), Vec::new());
    for page in &truth.pages {
        let start = page.start_s.map_or(t0, |s| t0.max(s as f64));
        if start >= t1 {
            continue;
        }
        let reqs = by_url.get(page.url.as_str()).map_or(&[][..], Vec::as_slice);
        let label = class_label(page.class.as_deref());
        let entry = groups
            .entry(label.clone())
            .or_insert_with(|| (Group::named(&label), Vec::new()));
        entry.1.push(page_figures(truth, page, reqs, start, t1));
        all.1.push(page_figures(truth, page, reqs, start, t1));
    }
    let finish = |(mut g, pages): (Group, Vec<PageFigures>)| {
        let n = pages.len();
        let with_copy: Vec<f64> = pages.iter().filter_map(|p| p.age).collect();
        g.pages = n;
        g.fetched = with_copy.len();
        g.fresh_share = mean(pages.iter().map(|p| p.fresh), n);
        g.covered_share = mean(pages.iter().map(|p| p.covered), n);
        g.mean_age_s = mean(with_copy.iter().copied(), with_copy.len());
        g.requests = pages.iter().map(|p| p.requests).sum();
        g.requests_per_page = share(g.requests, n);
        g.unchanged_revisits = pages.iter().map(|p| p.unchanged).sum();
        g.unchanged_304 = pages.iter().map(|p| p.unchanged_304).sum();
        g.still_revisits = pages.iter().map(|p| p.still).sum();
        g.still_304 = pages.iter().map(|p| p.still_304).sum();
        g
    };
    let total_requests = requests
        .iter()
        .filter(|r| r.at_ms >= from_ms && r.at_ms <= to_ms)
        .count();
    Report {
        from_real_ms: from_ms,
        to_real_ms: to_ms,
        window_site_s: (t1 - t0).max(0.0),
        total_requests,
        all: finish(all),
        classes: groups.into_values().map(finish).collect(),
    }
}

fn mean(values: impl Iterator<Item = f64>, n: usize) -> f64 {
    if n == 0 {
        0.0
    } else {
        values.sum::<f64>() / n as f64
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A clock at scale 60 started at real 1,000,000 ms with site epoch 5,000 s: real ms r is site
    /// 5,000 + (r - 1,000,000) × 0.06.
    fn truth(pages: Vec<TruthPage>) -> Truth {
        Truth {
            time_scale: 60.0,
            epoch_s: 5_000,
            started_real_ms: 1_000_000,
            now_s: 6_000,
            pages,
        }
    }

    fn page(url: &str, class: &str, changes: &[u64]) -> TruthPage {
        TruthPage {
            url: url.to_owned(),
            host: Some(0),
            start_s: Some(5_000),
            class: Some(class.to_owned()),
            changes: changes.to_vec(),
        }
    }

    /// The real ms at which the site clock reads `site_s`.
    fn real(site_s: f64) -> f64 {
        1_000_000.0 + (site_s - 5_000.0) / 0.06
    }

    fn req(url: &str, site_s: f64, status: u16, changed: Option<bool>) -> Request {
        Request {
            url: url.to_owned(),
            at_ms: real(site_s),
            status: Some(status),
            changed,
        }
    }

    fn close(a: f64, b: f64) -> bool {
        (a - b).abs() < 1e-6
    }

    #[test]
    fn the_truth_file_parses_and_maps_real_time_to_site_time() {
        let t = Truth::parse(
            r#"{"time_scale":60.0,"epoch_s":5000,"started_real_ms":1000000,"now_s":6000,
               "pages":[{"url":"http://127.0.0.1:8/","host":0,"start_s":5000,
                         "class":"Periodic { period_s: 60, phase_s: 7 }","changes":[5007,5067]},
                        {"url":"http://127.0.0.1:8/new/0","changes":[]}]}"#,
        )
        .unwrap();
        assert_eq!(t.pages.len(), 2);
        assert_eq!(t.pages[1].host, None, "older truth files have no host");
        assert!(close(t.site_s(1_000_000.0), 5_000.0));
        assert!(
            close(t.site_s(1_010_000.0), 5_600.0),
            "10 real s are 600 site s"
        );
        assert_eq!(class_label(t.pages[0].class.as_deref()), "periodic-60s");
        assert_eq!(class_label(Some("Never")), "never");
        assert_eq!(
            class_label(Some(
                "Bursty { cycle_s: 3600, changes: 5, spacing_s: 10, phase_s: 3 }"
            )),
            "bursty"
        );
        assert_eq!(class_label(Some("Poisson { mean_s: 900 }")), "poisson");
        assert_eq!(class_label(None), "unknown");
        assert!(Truth::parse("{").is_err());
    }

    #[test]
    fn jsonl_records_are_requests_sent_at_fetched_at_less_elapsed() {
        let text = concat!(
            r#"{"url":"http://a/","outcome":"fetched","status":200,"fetched_at":"2026-01-01T00:00:01.500Z","elapsed_ms":500,"visit":1,"changed":null}"#,
            "\n\n",
            r#"{"url":"http://a/","status":304,"fetched_at":"2026-01-01T00:00:03.000Z","elapsed_ms":null,"changed":false}"#,
            "\n",
            r#"{"url":"http://a/x","status":null,"fetched_at":"2026-01-01T00:00:04Z"}"#,
            "\n"
        );
        let r = requests_from_jsonl(text).unwrap();
        let base = 1_767_225_600_000.0;
        assert_eq!(r.len(), 3);
        assert_eq!(
            (r[0].at_ms, r[0].status, r[0].changed),
            (base + 1_000.0, Some(200), None)
        );
        assert_eq!(
            (r[1].at_ms, r[1].status, r[1].changed),
            (base + 3_000.0, Some(304), Some(false))
        );
        assert_eq!((r[2].url.as_str(), r[2].status), ("http://a/x", None));
        let bad = requests_from_jsonl(r#"{"url":"x","status":200,"fetched_at":"yesterday"}"#);
        assert!(
            matches!(bad, Err(ReportError::Time { line: 1, .. })),
            "{bad:?}"
        );
        assert!(matches!(
            requests_from_jsonl("{}\n"),
            Err(ReportError::Record { line: 1, .. })
        ));
    }

    #[test]
    fn log_lines_name_truth_pages_by_host_and_path() {
        let mut b = page("http://127.0.0.2:80/page/3", "Never", &[]);
        b.host = Some(1);
        let t = truth(vec![page("http://127.0.0.1:80/", "Never", &[]), b]);
        let log = "0 1000.5 1002.0 200 /\n1 1003 1004 304 /page/3\n1 1005 1006 200 /robots.txt\n0 1007 -1 0 /page/3?x\n";
        let r = requests_from_log(log, &t).unwrap();
        let urls: Vec<&str> = r.iter().map(|x| x.url.as_str()).collect();
        assert_eq!(
            urls,
            [
                "http://127.0.0.1:80/",
                "http://127.0.0.2:80/page/3",
                "#1/robots.txt",
                "#0/page/3?x"
            ]
        );
        assert_eq!(
            (r[0].at_ms, r[1].status, r[3].status),
            (1000.5, Some(304), None)
        );
        assert!(matches!(
            requests_from_log("0 1 2\n", &t),
            Err(ReportError::LogLine { line: 1, .. })
        ));
    }

    #[test]
    fn freshness_requests_and_304s_follow_the_truth() {
        // page a changes at 5,040 and 5,090; fetched at 5,000 (200), 5,030 (304), 5,060 (200), 5,080 (304)
        // over [5,000, 5,100]: fresh [5,000, 5,040) + [5,060, 5,090) = 70 of 100
        let a = "http://h/a";
        // page b never changes, fetched once at 5,050 and then 304 at 5,070: fresh [5,050, 5,100] = 50 of 100
        let b = "http://h/b";
        // page c is never fetched
        let t = truth(vec![
            page(a, "Periodic { period_s: 50, phase_s: 40 }", &[5_040, 5_090]),
            page(b, "Never", &[]),
            page("http://h/c", "Never", &[]),
        ]);
        let reqs = vec![
            req(a, 5_000.0, 200, None),
            req(a, 5_030.0, 304, Some(false)),
            req(a, 5_060.0, 200, Some(true)),
            req(a, 5_080.0, 200, Some(false)),
            req(b, 5_050.0, 200, None),
            req(b, 5_070.0, 304, Some(false)),
            req("#0/robots.txt", 5_000.0, 200, None),
            // outside the window: neither counted nor a copy
            req(b, 5_200.0, 200, None),
        ];
        let w = Window {
            from_ms: Some(real(5_000.0)),
            to_ms: Some(real(5_100.0)),
        };
        let r = report(&t, &reqs, w);
        assert!(close(r.window_site_s, 100.0), "{r:?}");
        assert_eq!(r.total_requests, 7);
        let all = &r.all;
        assert_eq!((all.pages, all.fetched), (3, 2));
        assert!(close(all.fresh_share, (0.7 + 0.5 + 0.0) / 3.0), "{all:?}");
        assert!(close(all.covered_share, (1.0 + 0.5) / 3.0), "{all:?}");
        // a: ages [5,040, 5,060) 0..20 (200) and [5,090, 5,100] 0..10 (50) over 100; b: 0
        assert!(close(all.mean_age_s, (2.5 + 0.0) / 2.0), "{all:?}");
        assert_eq!(all.requests, 6);
        assert!(close(all.requests_per_page, 2.0));
        // the client's view: three unchanged revisits, two of them 304s
        assert_eq!((all.unchanged_revisits, all.unchanged_304), (3, 2));
        assert!(close(all.unchanged_304_share(), 2.0 / 3.0));
        // the truth's view: a at 5,030 and 5,080 and b at 5,070 found nothing new
        assert_eq!((all.still_revisits, all.still_304), (3, 2));
        let labels: Vec<&str> = r.classes.iter().map(|g| g.class.as_str()).collect();
        assert_eq!(labels, ["never", "periodic-50s"]);
        assert_eq!((r.classes[0].pages, r.classes[0].requests), (2, 2));
        assert!(close(r.classes[1].fresh_share, 0.7));
    }

    #[test]
    fn a_304_to_an_outdated_copy_keeps_it_stale_and_late_pages_count_from_birth() {
        // the host answers 304 although the page changed at 5,020 (a misbehaving host)
        let a = "http://h/a";
        let mut late = page("http://h/new/0", "Never", &[]);
        late.start_s = Some(5_050);
        let mut unborn = page("http://h/new/1", "Never", &[]);
        unborn.start_s = Some(5_300);
        let t = truth(vec![page(a, "Never", &[5_020]), late, unborn]);
        let reqs = vec![
            req(a, 5_000.0, 200, None),
            req(a, 5_040.0, 304, Some(false)),
            req("http://h/new/0", 5_075.0, 200, None),
        ];
        let w = Window {
            from_ms: Some(real(5_000.0)),
            to_ms: Some(real(5_100.0)),
        };
        let r = report(&t, &reqs, w);
        assert_eq!(r.all.pages, 2, "a page born after the window is left out");
        // a: fresh [5,000, 5,020) = 0.2; new/0: fresh [5,075, 5,100] of [5,050, 5,100] = 0.5
        assert!(close(r.all.fresh_share, (0.2 + 0.5) / 2.0), "{r:?}");
        // the 304 at 5,040 followed a change: not a revisit of an unchanged page
        assert_eq!((r.all.still_revisits, r.all.unchanged_revisits), (0, 1));
        // defaults: the first and the last request
        let d = report(&t, &reqs, Window::default());
        assert!(close(d.from_real_ms, real(5_000.0)) && close(d.to_real_ms, real(5_075.0)));
    }
}
