//! The two encodings of a scrape: OpenMetrics as prometheus-client writes it, and the Prometheus text format 0.0.4
//! made from it for scrapers that do not ask for OpenMetrics.

/// Content type of [`super::Metrics::openmetrics`].
pub const OPENMETRICS_CONTENT_TYPE: &str =
    "application/openmetrics-text; version=1.0.0; charset=utf-8";
/// Content type of [`super::Metrics::prometheus_text`].
pub const TEXT_CONTENT_TYPE: &str = "text/plain; version=0.0.4; charset=utf-8";

/// Rewrites OpenMetrics text as Prometheus text 0.0.4: counter families take their `_total` sample name, `# UNIT`
/// and `# EOF` go, exemplars are cut off, and `unknown` becomes `untyped`.
pub fn openmetrics_to_text(om: &str) -> String {
    let counters: std::collections::HashSet<&str> = om
        .lines()
        .filter_map(|l| l.strip_prefix("# TYPE "))
        .filter_map(|rest| rest.split_once(' '))
        .filter(|(_, t)| *t == "counter")
        .map(|(name, _)| name)
        .collect();
    let mut out = String::with_capacity(om.len());
    for line in om.lines() {
        if line == "# EOF" || line.starts_with("# UNIT ") {
            continue;
        }
        if let Some(rest) = line.strip_prefix("# TYPE ") {
            let (name, ty) = rest.split_once(' ').unwrap_or((rest, "untyped"));
            let ty = if ty == "unknown" { "untyped" } else { ty };
            if counters.contains(name) && !name.ends_with("_total") {
                out.push_str(&format!("# TYPE {name}_total {ty}\n"));
            } else {
                out.push_str(&format!("# TYPE {name} {ty}\n"));
            }
            continue;
        }
        if let Some(rest) = line.strip_prefix("# HELP ") {
            let (name, help) = rest.split_once(' ').unwrap_or((rest, ""));
            if counters.contains(name) && !name.ends_with("_total") {
                out.push_str(&format!("# HELP {name}_total {help}\n"));
            } else {
                out.push_str(&format!("# HELP {name} {help}\n"));
            }
            continue;
        }
        if line.starts_with('#') {
            continue;
        }
        out.push_str(strip_exemplar(line));
        out.push('\n');
    }
    out
}

/// A sample line without its ` # {..} value` exemplar (a `#` inside a quoted label value is not one).
fn strip_exemplar(line: &str) -> &str {
    let mut in_quotes = false;
    let mut escaped = false;
    for (i, c) in line.char_indices() {
        match c {
            '\\' if in_quotes && !escaped => {
                escaped = true;
                continue;
            }
            '"' if !escaped => in_quotes = !in_quotes,
            '#' if !in_quotes => return line[..i].trim_end(),
            _ => {}
        }
        escaped = false;
    }
    line
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn conversion_renames_counters_and_cuts_exemplars() {
        let om = "# HELP crawl_x Things.\n# TYPE crawl_x counter\ncrawl_x_total{a=\"q # r\"} 3\n\
                  # HELP crawl_d_seconds Lat.\n# TYPE crawl_d_seconds histogram\n# UNIT crawl_d_seconds seconds\n\
                  crawl_d_seconds_bucket{le=\"0.5\"} 1 # {trace_id=\"abc\"} 0.3\n# EOF\n";
        let t = openmetrics_to_text(om);
        assert_eq!(
            t,
            "# HELP crawl_x_total Things.\n# TYPE crawl_x_total counter\ncrawl_x_total{a=\"q # r\"} 3\n\
             # HELP crawl_d_seconds Lat.\n# TYPE crawl_d_seconds histogram\ncrawl_d_seconds_bucket{le=\"0.5\"} 1\n"
        );
    }
}
