//! YAML that YAML 1.1 readers take as the YAML 1.2 the serializer meant.
//!
//! `serde_yaml_ng` quotes a string only when YAML 1.2 would read it as something else, so
//! `off`, `yes` and `no` come out plain. kubectl and the API machinery (go-yaml) and PyYAML
//! read YAML 1.1, where those words are booleans: a CRD's `enum: [no, optional, yes]` or
//! `default: no`, or a container argument `off`, would arrive as booleans and be refused.
//! Everything this project writes as YAML for Kubernetes goes through [`quote_booleans`].

/// Words YAML 1.1 reads as booleans. The serializer follows YAML 1.2, where they are plain
/// strings, and leaves them unquoted; but kubectl (go-yaml) and PyYAML read YAML 1.1, so an
/// argument `off` or `yes` would reach the API server as a boolean and be refused.
const YAML11_BOOLEANS: &[&str] =
    &["y", "Y", "yes", "Yes", "YES", "n", "N", "no", "No", "NO", "on", "On", "ON", "off", "Off", "OFF"];

/// `yaml` with every plain scalar that YAML 1.1 would read as a boolean single-quoted (list
/// items and mapping values; block scalars' contents are left alone).
pub fn quote_booleans(yaml: &str) -> String {
    let mut out = String::with_capacity(yaml.len());
    let mut block_indent: Option<usize> = None;
    for line in yaml.lines() {
        let indent = line.len() - line.trim_start().len();
        if block_indent.is_some_and(|i| indent > i || line.trim().is_empty()) {
            out.push_str(line);
            out.push('\n');
            continue;
        }
        block_indent = None;
        let (head, value) = match line.rfind(": ") {
            Some(at) if !line.trim_start().starts_with("- ") || line[..at].contains("- ") => line.split_at(at + 2),
            _ => match line.trim_start().strip_prefix("- ") {
                Some(item) => line.split_at(line.len() - item.len()),
                None => (line, ""),
            },
        };
        if YAML11_BOOLEANS.contains(&value) {
            out.push_str(&format!("{head}'{value}'\n"));
            continue;
        }
        if matches!(value.trim_end_matches(['-', '+']), "|" | ">") {
            block_indent = Some(indent);
        }
        out.push_str(line);
        out.push('\n');
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn yaml11_booleans_are_quoted_outside_block_scalars() {
        let yaml = "args:\n- --port\n- off\n- --tls-auth-clients\n- yes\nmode: on\nreadOnly: true\n\
                    data:\n  cairn.toml: |\n    - no\n    x: off\nafter: no\n";
        let quoted = quote_booleans(yaml);
        assert_eq!(
            quoted,
            "args:\n- --port\n- 'off'\n- --tls-auth-clients\n- 'yes'\nmode: 'on'\nreadOnly: true\n\
             data:\n  cairn.toml: |\n    - no\n    x: off\nafter: 'no'\n"
        );
        let parsed: serde_yaml_ng::Value = serde_yaml_ng::from_str(&quoted).expect("still YAML");
        assert_eq!(parsed["args"][1].as_str(), Some("off"));
    }
}
