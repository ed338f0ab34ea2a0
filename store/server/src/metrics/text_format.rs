//! Prometheus text format 0.0.4 from OpenMetrics text.
//!
//! prometheus-client writes OpenMetrics only. The two differ, for what Cairn
//! exports, in the family names of counters (`# TYPE x counter` over samples
//! `x_total` in OpenMetrics; the text format names the family `x_total`) and
//! of info metrics (`# TYPE x info` over `x_info`; the text format has no
//! info type: a gauge `x_info`), in `# UNIT` lines and in the `# EOF` line.
//! Samples are the same in both.

/// Rewrites an OpenMetrics exposition as text format 0.0.4.
pub fn from_openmetrics(openmetrics: &str) -> String {
    let mut out = String::with_capacity(openmetrics.len());
    // HELP precedes TYPE: hold it until the type says how to rename.
    let mut pending_help: Option<(&str, &str)> = None;
    for line in openmetrics.lines() {
        if let Some(rest) = line.strip_prefix("# HELP ") {
            let (name, help) = rest.split_once(' ').unwrap_or((rest, ""));
            pending_help = Some((name, help));
        } else if let Some(rest) = line.strip_prefix("# TYPE ") {
            let (name, kind) = rest.split_once(' ').unwrap_or((rest, "untyped"));
            let (name, kind) = match kind {
                "counter" => (format!("{name}_total"), "counter"),
                "info" => (format!("{name}_info"), "gauge"),
                "unknown" => (name.to_string(), "untyped"),
                other => (name.to_string(), other),
            };
            if let Some((_, help)) = pending_help.take() {
                out.push_str(&format!("# HELP {name} {help}\n"));
            }
            out.push_str(&format!("# TYPE {name} {kind}\n"));
        } else if line.starts_with("# UNIT ") || line == "# EOF" {
            continue;
        } else {
            out.push_str(line);
            out.push('\n');
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counters_and_infos_are_renamed() {
        let om = "# HELP cairn_fsyncs fsyncs.\n# TYPE cairn_fsyncs counter\ncairn_fsyncs_total 3\n\
                  # HELP cairn_build Build.\n# TYPE cairn_build info\ncairn_build_info{version=\"1\"} 1\n\
                  # HELP cairn_up_seconds Up.\n# TYPE cairn_up_seconds gauge\n# UNIT cairn_up_seconds seconds\n\
                  cairn_up_seconds 1.5\n# EOF\n";
        let text = from_openmetrics(om);
        assert_eq!(
            text,
            "# HELP cairn_fsyncs_total fsyncs.\n# TYPE cairn_fsyncs_total counter\ncairn_fsyncs_total 3\n\
             # HELP cairn_build_info Build.\n# TYPE cairn_build_info gauge\ncairn_build_info{version=\"1\"} 1\n\
             # HELP cairn_up_seconds Up.\n# TYPE cairn_up_seconds gauge\ncairn_up_seconds 1.5\n"
        );
    }
}
