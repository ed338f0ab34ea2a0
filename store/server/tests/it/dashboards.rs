//! The Grafana dashboards in dashboards/: every panel query parses as PromQL
//! (the `promql-parser` crate, after substituting Grafana's variables),
//! selects by `$instance` and `$pod`, and names only metrics a running Cairn
//! exports (scraped from an in-process server's /metrics); and every metric
//! family exported is documented in docs/metrics.md.

use crate::common;

use std::collections::BTreeSet;
use std::path::PathBuf;

use promql_parser::parser::{self, Expr, VectorSelector};
use serde_json::Value;

fn dashboards() -> Vec<(String, Value)> {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../dashboards");
    let mut out = Vec::new();
    for entry in std::fs::read_dir(&dir).expect("dashboards/ exists") {
        let path = entry.expect("dir entry").path();
        if path.extension().is_some_and(|e| e == "json") {
            let text = std::fs::read_to_string(&path).expect("readable dashboard");
            let json: Value = serde_json::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
            out.push((path.file_name().expect("name").to_string_lossy().into_owned(), json));
        }
    }
    assert!(out.len() >= 2, "the overview and durability dashboards");
    out
}

/// Every panel (rows' nested panels included).
fn panels(dashboard: &Value) -> Vec<&Value> {
    let mut out = Vec::new();
    for panel in dashboard["panels"].as_array().expect("panels") {
        out.push(panel);
        if let Some(nested) = panel["panels"].as_array() {
            out.extend(nested);
        }
    }
    out
}

/// Grafana's variables replaced by values Prometheus accepts.
fn substitute(expr: &str) -> String {
    expr.replace("$__rate_interval", "1m")
        .replace("$__interval", "1m")
        .replace("$__range", "1h")
        .replace("${instance}", ".*")
        .replace("$instance", ".*")
        .replace("${pod}", ".*")
        .replace("$pod", ".*")
}

fn selectors<'a>(expr: &'a Expr, out: &mut Vec<&'a VectorSelector>) {
    match expr {
        Expr::Aggregate(a) => {
            selectors(&a.expr, out);
            if let Some(p) = &a.param {
                selectors(p, out);
            }
        }
        Expr::Unary(u) => selectors(&u.expr, out),
        Expr::Binary(b) => {
            selectors(&b.lhs, out);
            selectors(&b.rhs, out);
        }
        Expr::Paren(p) => selectors(&p.expr, out),
        Expr::Subquery(s) => selectors(&s.expr, out),
        Expr::VectorSelector(v) => out.push(v),
        Expr::MatrixSelector(m) => out.push(&m.vs),
        Expr::Call(c) => c.args.args.iter().for_each(|a| selectors(a, out)),
        Expr::NumberLiteral(_) | Expr::StringLiteral(_) | Expr::Extension(_) => {}
    }
}

/// Metric names in a text-format exposition.
fn exported_names(metrics: &str) -> BTreeSet<String> {
    metrics
        .lines()
        .filter(|l| !l.starts_with('#') && !l.is_empty())
        .filter_map(|l| l.split(['{', ' ']).next())
        .map(str::to_string)
        .collect()
}

#[test]
fn every_panel_query_parses_and_names_exported_metrics() {
    let server = common::TestServer::start();
    server.client().cmd(&["SET", "k", "v"]);
    let exported = exported_names(&common::http::get(server.admin_addr(), "/metrics").body);
    assert!(exported.contains("cairn_commands_total"), "{exported:?}");

    let mut checked = 0;
    for (file, dashboard) in dashboards() {
        let variables: Vec<&str> = dashboard["templating"]["list"]
            .as_array()
            .expect("templating")
            .iter()
            .filter_map(|v| v["name"].as_str())
            .collect();
        assert!(["datasource", "instance", "pod"].iter().all(|v| variables.contains(v)), "{file}: {variables:?}");
        for panel in panels(&dashboard) {
            let title = panel["title"].as_str().unwrap_or("?");
            let Some(targets) = panel["targets"].as_array() else { continue };
            assert_eq!(panel["datasource"]["uid"], "${datasource}", "{file} / {title}: datasource variable");
            for target in targets {
                let raw = target["expr"].as_str().unwrap_or_else(|| panic!("{file} / {title}: no expr"));
                let expr = parser::parse(&substitute(raw)).unwrap_or_else(|e| panic!("{file} / {title}: {raw}: {e}"));
                let mut found = Vec::new();
                selectors(&expr, &mut found);
                assert!(!found.is_empty(), "{file} / {title}: {raw} selects nothing");
                for vs in found {
                    let name =
                        vs.name.as_deref().unwrap_or_else(|| panic!("{file} / {title}: selector without a name"));
                    assert!(exported.contains(name), "{file} / {title}: {name} is not exported by Cairn");
                    let labels: Vec<&str> = vs.matchers.matchers.iter().map(|m| m.name.as_str()).collect();
                    assert!(
                        labels.contains(&"instance") && labels.contains(&"pod"),
                        "{file} / {title}: {raw}: select by $instance and $pod"
                    );
                }
                checked += 1;
            }
        }
    }
    assert!(checked >= 20, "only {checked} queries");
}

#[test]
fn a_query_naming_an_unknown_metric_is_caught() {
    let expr = parser::parse(&substitute(r#"rate(cairn_nope_total{instance=~"$instance"}[$__rate_interval])"#))
        .expect("parses");
    let mut found = Vec::new();
    selectors(&expr, &mut found);
    assert_eq!(found.iter().map(|v| v.name.as_deref()).collect::<Vec<_>>(), vec![Some("cairn_nope_total")]);
    assert!(parser::parse("sum(rate(x[5m])").is_err());
}

/// Metric families (`# TYPE name kind`) in an exposition.
fn families(metrics: &str) -> Vec<(String, String)> {
    metrics
        .lines()
        .filter_map(|l| l.strip_prefix("# TYPE "))
        .filter_map(|l| l.split_once(' '))
        .map(|(name, kind)| (name.to_string(), kind.trim().to_string()))
        .collect()
}

/// Whether docs/metrics.md names the family (a counter by its `_total` sample name, or by its own).
fn documented(doc: &str, name: &str) -> bool {
    doc.contains(&format!("`{name}`")) || doc.contains(&format!("`{name}_total`"))
}

#[test]
fn every_exported_metric_family_is_documented() {
    let server = common::TestServer::start();
    let mut c = server.client();
    // Traffic that brings out the labelled families: commands, errors, a blocking pop that times out.
    c.cmd(&["SET", "k", "v"]);
    c.cmd(&["GET", "k"]);
    c.cmd(&["INCR", "k"]);
    c.cmd(&["BLPOP", "nolist", "0.01"]);
    let exposition = common::http::get(server.admin_addr(), "/metrics").body;
    let found = families(&exposition);
    assert!(found.len() >= 40, "only {} families: {found:?}", found.len());
    let doc_path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../docs/metrics.md");
    let doc = std::fs::read_to_string(&doc_path).expect("docs/metrics.md");
    let missing: Vec<&(String, String)> = found.iter().filter(|(name, _)| !documented(&doc, name)).collect();
    assert!(missing.is_empty(), "exported but not in docs/metrics.md: {missing:?}");
    // The check can fail: a family docs/metrics.md does not name is caught.
    assert!(!documented(&doc, "cairn_not_a_metric"));
}
