//! `crawl-engine ctl`'s answers for people: aligned tables and one-line confirmations. An answer this version
//! cannot read is printed as the server sent it.

use crate::api::dto::{
    ActionDto, DropDto, HostDto, HostsDto, ReloadDto, StatusDto, Target, UrlsDto,
};
use crate::cli::CtlAction;
use serde::de::DeserializeOwned;

/// The text for a successful answer of `action`.
pub fn answer(action: &CtlAction, body: &[u8]) -> String {
    let text = match action {
        CtlAction::Status => parse(body).map(|s: StatusDto| status(&s)),
        CtlAction::Hosts { .. } => parse(body).map(|h: HostsDto| hosts(&h.hosts)),
        CtlAction::Host { .. } => parse(body).map(|h: HostDto| host(&h)),
        CtlAction::Add { .. } => parse(body).map(|u: UrlsDto| urls(&u)),
        CtlAction::Pause { host } => {
            parse(body).map(|a: ActionDto| done(&a, "paused", host.as_deref()))
        }
        CtlAction::Resume { host } => {
            parse(body).map(|a: ActionDto| done(&a, "resumed", host.as_deref()))
        }
        CtlAction::Politeness { host, clear, .. } => parse(body).map(|a: ActionDto| {
            let what = if *clear {
                "politeness back to the configured one for"
            } else {
                "politeness set for"
            };
            done(&a, what, Some(host))
        }),
        CtlAction::Drop { host } => parse(body).map(|d: DropDto| match (d.requested, d.queued) {
            (false, _) => format!("a drop of {host}'s queue is under way already\n"),
            (true, Some(n)) => format!("dropping the {n} URLs queued for {host}\n"),
            (true, None) => format!("dropping the queue of {host} (another process crawls it)\n"),
        }),
        CtlAction::Reload => parse(body).map(|r: ReloadDto| reload(&r)),
    };
    text.unwrap_or_else(|| format!("{}\n", String::from_utf8_lossy(body).trim_end()))
}

fn parse<T: DeserializeOwned>(body: &[u8]) -> Option<T> {
    serde_json::from_slice(body).ok()
}

/// Rows with their columns aligned (two spaces between), each line trimmed at its end.
pub fn table(rows: &[Vec<String>]) -> String {
    let columns = rows.iter().map(Vec::len).max().unwrap_or(0);
    let widths: Vec<usize> = (0..columns)
        .map(|c| {
            rows.iter()
                .filter_map(|r| r.get(c))
                .map(|s| s.chars().count())
                .max()
                .unwrap_or(0)
        })
        .collect();
    let mut out = String::new();
    for row in rows {
        let mut line = String::new();
        for (i, cell) in row.iter().enumerate() {
            line.push_str(cell);
            if i + 1 < row.len() {
                let pad = widths[i] - cell.chars().count() + 2;
                line.push_str(&" ".repeat(pad));
            }
        }
        out.push_str(line.trim_end());
        out.push('\n');
    }
    out
}

fn kv(key: &str, value: impl ToString) -> Vec<String> {
    vec![key.to_owned(), value.to_string()]
}

fn or_dash(v: Option<impl ToString>) -> String {
    v.map(|v| v.to_string()).unwrap_or_else(|| "-".to_owned())
}

fn status(s: &StatusDto) -> String {
    let c = &s.counters;
    let mut rows = vec![
        kv("state", s.state.as_str()),
        kv("process", &s.process),
        kv("paused", if s.paused { "yes" } else { "no" }),
    ];
    if let Some(w) = &s.waiting_for {
        rows.push(kv("waiting for", w));
    }
    rows.extend([
        kv("fetched", c.fetched),
        kv("failed", c.failed),
        kv("excluded", c.excluded),
        kv("queued", c.queued),
        kv("in flight", c.in_flight),
        kv("hosts", c.hosts),
        kv("known", c.known),
        kv("retries", c.retries),
        kv("pages/s", format!("{:.2}", s.rates.pages_per_s)),
    ]);
    let paused = if s.operator.paused_hosts.is_empty() {
        "-".to_owned()
    } else {
        s.operator.paused_hosts.join(", ")
    };
    rows.push(kv("paused hosts", paused));
    for (h, p) in &s.operator.politeness {
        rows.push(kv(
            &format!("politeness {h}"),
            format!(
                "delay_ms {} concurrency {} expires_at {}",
                or_dash(p.delay_ms),
                or_dash(p.concurrency),
                or_dash(p.expires_at)
            ),
        ));
    }
    if s.processes.len() > 1 {
        rows.push(kv("processes", s.processes.len()));
        for p in &s.processes {
            rows.push(kv(
                &format!("process {}", p.id),
                format!(
                    "shards {} last_seen_ms {}{}",
                    or_dash(p.shards),
                    or_dash(p.last_seen_ms),
                    if p.this_process { " (this one)" } else { "" }
                ),
            ));
        }
    }
    if let Some(why) = &s.processes_error {
        rows.push(kv("processes", format!("unknown: {why}")));
    }
    table(&rows)
}

fn errors_total(h: &HostDto) -> u64 {
    h.errors.values().sum()
}

fn hosts(list: &[HostDto]) -> String {
    if list.is_empty() {
        return "no hosts\n".to_owned();
    }
    let mut rows = vec![
        ["HOST", "QUEUED", "IN_FLIGHT", "ERRORS", "PAUSED", "NEXT_MS"]
            .map(str::to_owned)
            .to_vec(),
    ];
    for h in list {
        rows.push(vec![
            h.host.clone(),
            or_dash(h.queued),
            h.in_flight.to_string(),
            errors_total(h).to_string(),
            if h.paused { "yes".into() } else { "no".into() },
            or_dash(h.next_allowed_in_ms),
        ]);
    }
    table(&rows)
}

fn host(h: &HostDto) -> String {
    let mut rows = vec![
        kv("host", &h.host),
        kv("queued", or_dash(h.queued)),
        kv("in flight", h.in_flight),
        kv("next allowed in ms", or_dash(h.next_allowed_in_ms)),
        kv("backoff level", h.backoff_level),
        kv(
            "paused",
            if h.paused {
                format!("yes ({})", or_dash(h.paused_by.as_ref()))
            } else {
                "no".into()
            },
        ),
        kv(
            "politeness",
            h.politeness.as_ref().map_or_else(
                || "configured".to_owned(),
                |p| {
                    format!(
                        "delay_ms {} concurrency {}",
                        or_dash(p.delay_ms),
                        or_dash(p.concurrency)
                    )
                },
            ),
        ),
        kv(
            "robots",
            serde_json::to_value(h.robots)
                .ok()
                .and_then(|v| v.as_str().map(str::to_owned))
                .unwrap_or_default(),
        ),
    ];
    for (reason, n) in &h.errors {
        rows.push(kv(&format!("errors {reason}"), n));
    }
    if let Some(owner) = &h.owner {
        rows.push(kv("owner", owner));
    }
    table(&rows)
}

fn urls(u: &UrlsDto) -> String {
    let mut rows = vec![["URL", "RESULT", "REASON"].map(str::to_owned).to_vec()];
    for a in &u.urls {
        rows.push(vec![
            a.url.clone(),
            serde_json::to_value(a.result)
                .ok()
                .and_then(|v| v.as_str().map(str::to_owned))
                .unwrap_or_default(),
            or_dash(a.reason.as_ref()),
        ]);
    }
    table(&rows)
}

fn done(a: &ActionDto, verb: &str, host: Option<&str>) -> String {
    let target = match (a.target, host) {
        (Target::Host, Some(h)) => h.to_owned(),
        (Target::Host, None) => "the host".to_owned(),
        (Target::Crawl, _) => "the crawl".to_owned(),
    };
    let note = if a.changed {
        ""
    } else {
        " (no change: it was so already)"
    };
    format!("{verb} {target}{note}\n")
}

fn reload(r: &ReloadDto) -> String {
    match &r.changed {
        Some(keys) if !keys.is_empty() => format!("config reloaded: {}\n", keys.join(", ")),
        _ => "config reloaded: no change\n".to_owned(),
    }
}
