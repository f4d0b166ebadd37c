//! The Prometheus queries of a Grafana dashboard, held against a scrape: which panels would say "No data" where
//! they should say 0 ([`no_data`]).

use super::Scrape;
use std::collections::BTreeSet;

/// How a query falls back to 0 when its metric has no series yet: `on()` matches the empty label set, so the 0 is
/// added only when the query itself returns nothing.
pub const ZERO_FALLBACK: &str = "or on() vector(0)";

/// One Prometheus query of a panel.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PanelQuery {
    /// The panel's title.
    pub panel: String,
    /// The query as written (`$job` and the other variables left in).
    pub expr: String,
}

/// Why a dashboard could not be read.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum DashboardError {
    #[error("dashboard JSON: {0}")]
    Json(#[from] serde_json::Error),
    #[error("the dashboard has no panels")]
    NoPanels,
}

/// Every query (`targets[].expr`) of every panel, rows' nested panels included, in order. Panels of another data
/// source (a Tempo table) have no `expr` and are left out.
pub fn panel_queries(json: &str) -> Result<Vec<PanelQuery>, DashboardError> {
    let dashboard: serde_json::Value = serde_json::from_str(json)?;
    let panels = dashboard["panels"]
        .as_array()
        .ok_or(DashboardError::NoPanels)?;
    let mut out = Vec::new();
    collect(panels, &mut out);
    Ok(out)
}

fn collect(panels: &[serde_json::Value], out: &mut Vec<PanelQuery>) {
    for panel in panels {
        if let Some(nested) = panel["panels"].as_array() {
            collect(nested, out);
        }
        let title = panel["title"].as_str().unwrap_or_default();
        for target in panel["targets"].as_array().into_iter().flatten() {
            if let Some(expr) = target["expr"].as_str() {
                out.push(PanelQuery {
                    panel: title.to_owned(),
                    expr: expr.to_owned(),
                });
            }
        }
    }
}

/// The metric names a query selects: the names followed by a `{` label matcher (every query of the dashboard
/// selects its series by `job` and `instance`).
pub fn metric_names(expr: &str) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    let is_name = |c: char| c.is_ascii_alphanumeric() || c == '_' || c == ':';
    let mut start = None;
    for (i, c) in expr.char_indices() {
        match (start, is_name(c)) {
            (None, true) => start = Some(i),
            (Some(s), false) => {
                let name = &expr[s..i];
                if c == '{' && name.starts_with(|c: char| c.is_ascii_alphabetic() || c == '_') {
                    out.insert(name.to_owned());
                }
                start = None;
            }
            _ => {}
        }
    }
    out
}

/// The queries that would show "No data" on a scrape like `scrape` (the engine's first, say), each as
/// `panel: why`: a metric the scrape has no sample of, in a query without [`ZERO_FALLBACK`]; or a ratio guarded
/// by `> 0` (empty until its denominator moves) without it.
pub fn no_data(queries: &[PanelQuery], scrape: &Scrape) -> Vec<String> {
    let mut out = Vec::new();
    for q in queries {
        if q.expr.trim_end().ends_with(ZERO_FALLBACK) {
            continue;
        }
        for name in metric_names(&q.expr) {
            if !scrape.has(&name) {
                out.push(format!("{}: no series of {name}", q.panel));
            }
        }
        if q.expr.contains("> 0)") {
            out.push(format!(
                "{}: a ratio is empty until its denominator moves",
                q.panel
            ));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    const DASHBOARD: &str = r#"{"panels": [
        {"title": "Rate", "targets": [{"expr": "sum(rate(x_total{job=~\"$job\"}[$__rate_interval]))"}]},
        {"title": "Row", "type": "row", "panels": [
            {"title": "Share", "targets": [{"expr": "sum(rate(x_total{a=\"b\"}[5m])) / (sum(rate(y_total{}[5m])) > 0)"}]},
            {"title": "Late", "targets": [{"expr": "sum by (k) (late_total{job=~\"$job\"}) or on() vector(0)"}]}
        ]},
        {"title": "Traces", "targets": [{"queryType": "traceql", "query": "{ duration > 2s }"}]},
        {"title": "Missing", "targets": [{"expr": "histogram_quantile(0.5, sum by (le) (rate(h_seconds_bucket{job=~\"$job\"}[1m])))"}]}
    ]}"#;

    #[test]
    fn queries_come_from_every_panel_and_name_their_metrics() {
        let queries = panel_queries(DASHBOARD).expect("dashboard");
        let panels: Vec<&str> = queries.iter().map(|q| q.panel.as_str()).collect();
        assert_eq!(panels, ["Rate", "Share", "Late", "Missing"]);
        assert_eq!(
            metric_names(&queries[1].expr),
            ["x_total", "y_total"].map(String::from).into()
        );
        assert_eq!(
            metric_names(&queries[3].expr),
            ["h_seconds_bucket"].map(String::from).into()
        );
        assert!(metric_names("vector(0) or on() time()").is_empty());
        assert!(matches!(panel_queries("{}"), Err(DashboardError::NoPanels)));
    }

    #[test]
    fn a_query_shows_no_data_without_a_series_or_with_an_unguarded_ratio() {
        let queries = panel_queries(DASHBOARD).expect("dashboard");
        let scrape = super::super::parse("x_total 0\ny_total 0\n").expect("scrape");
        assert_eq!(
            no_data(&queries, &scrape),
            [
                "Share: a ratio is empty until its denominator moves",
                "Missing: no series of h_seconds_bucket",
            ]
        );
    }
}
