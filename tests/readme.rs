//! README.md, checked: its configuration reference is generated from the schema (`cutover schema
//! KIND`) and fails when they drift; the shell blocks it marks `<!-- readme-test: NAME -->` are
//! run literally, as a newcomer would run them (see `Newcomer`). `UPDATE_EXPECTED=1` rewrites
//! the section between the `<!-- config-reference:begin -->` and `<!-- config-reference:end -->`
//! markers.

mod common;

use std::process::Command;

use common::run_cmd;
use serde_json::Value as Json;

const BEGIN: &str = "<!-- config-reference:begin -->";
const END: &str = "<!-- config-reference:end -->";

fn schema(kind: &str) -> Json {
    let run = run_cmd(Command::new(common::bin()).args(["schema", kind]));
    assert_eq!(run.code, 0, "{}", run.stderr);
    serde_json::from_slice(&run.stdout).unwrap()
}

fn type_of(s: &Json) -> String {
    let enum_values = |s: &Json| -> Option<Vec<String>> {
        let e = s.get("enum")?.as_array()?;
        Some(
            e.iter()
                .map(|v| v.as_str().map_or(v.to_string(), |x| format!("`{x}`")))
                .collect(),
        )
    };
    if let Some(values) = enum_values(s) {
        return values.join(" \\| ");
    }
    for key in ["oneOf", "anyOf"] {
        if let Some(branches) = s.get(key).and_then(Json::as_array) {
            let parts: Vec<String> = branches.iter().map(type_of).collect();
            return parts.join(" \\| ");
        }
    }
    match s.get("type").and_then(Json::as_str) {
        Some("array") => format!(
            "list of {}",
            s.get("items").map(type_of).unwrap_or_else(|| "any".into())
        ),
        Some("object") if s.get("properties").is_some() => "object".into(),
        Some("object") => "map".into(),
        Some(t) => t.into(),
        None if s.get("x-kubernetes-preserve-unknown-fields").is_some() => "any YAML".into(),
        None => "any".into(),
    }
}

fn rows(props: &serde_json::Map<String, Json>, prefix: &str, out: &mut String) {
    for (name, s) in props {
        let field = format!("{prefix}{name}");
        let default = match s.get("default") {
            None | Some(Json::Null) => "—".to_string(),
            Some(Json::String(d)) => format!("`{d}`"),
            Some(d) => format!("`{d}`"),
        };
        let description = s
            .get("description")
            .and_then(Json::as_str)
            .unwrap_or("")
            .split_whitespace()
            .collect::<Vec<_>>()
            .join(" ")
            .replace('|', "\\|");
        out.push_str(&format!(
            "| `{field}` | {} | {default} | {description} |\n",
            type_of(s)
        ));
        let nested = s
            .get("properties")
            .or_else(|| s.get("items").and_then(|i| i.get("properties")))
            .and_then(Json::as_object);
        if let Some(nested) = nested {
            let sep = if s.get("items").is_some() { "[]." } else { "." };
            rows(nested, &format!("{field}{sep}"), out);
        }
    }
}

fn reference() -> String {
    let mut out = String::new();
    out.push_str(BEGIN);
    out.push_str("\n<!-- Generated from `cutover schema KIND` by tests/readme.rs; edit the doc comments in src/modes/*/config.rs instead. -->\n");
    for kind in [
        "MetalLBImagePrepull",
        "LoadBalancerAnnouncer",
        "Capm3OSImageSources",
    ] {
        let s = schema(kind);
        out.push_str(&format!("\n#### `{kind}` (`spec:`)\n\n"));
        out.push_str("| field | type | default | description |\n|---|---|---|---|\n");
        let props = s["properties"]["spec"]["properties"].as_object().unwrap();
        rows(props, "", &mut out);
    }
    out.push('\n');
    out.push_str(END);
    out
}

#[test]
fn readme_config_reference_matches_the_schema() {
    let path = common::root().join("README.md");
    let text = std::fs::read_to_string(&path).unwrap();
    let (start, end) = (
        text.find(BEGIN).expect("begin marker"),
        text.find(END).expect("end marker"),
    );
    let current = &text[start..end + END.len()];
    let generated = reference();
    if std::env::var("UPDATE_EXPECTED").is_ok_and(|v| v == "1") {
        std::fs::write(&path, text.replace(current, &generated)).unwrap();
        return;
    }
    assert_eq!(
        current, generated,
        "README config reference is stale: UPDATE_EXPECTED=1 cargo test --test readme"
    );
}

#[test]
fn readme_test_command_is_what_ci_runs() {
    let readme = std::fs::read_to_string(common::root().join("README.md")).unwrap();
    let ci = std::fs::read_to_string(common::root().join(".ci/run")).unwrap();
    let command = ci
        .lines()
        .rev()
        .find(|l| !l.trim().is_empty())
        .unwrap()
        .trim();
    assert!(
        readme.contains(&format!("\n{command}\n")),
        "README must show `{command}` (the command .ci/run runs) on its own line"
    );
}

#[test]
fn quickstart_resource_list_is_the_example_and_runs() {
    let root = common::root();
    let file = root.join("examples/quickstart/resourcelist.yaml");
    let text = std::fs::read_to_string(&file).unwrap();
    let body: String = text
        .lines()
        .skip_while(|l| l.starts_with('#'))
        .map(|l| format!("{l}\n"))
        .collect();
    let example = root.join("examples/prepull-upgrade-native-bgp");
    let source = run_cmd(
        common::kpt()
            .args(["fn", "source"])
            .arg(&example)
            .arg("--fn-config")
            .arg(example.join("fn-config.yaml"))
            .current_dir(&root),
    );
    assert_eq!(source.code, 0, "{}", source.stderr);
    assert_eq!(
        body,
        source.stdout_str(),
        "examples/quickstart/resourcelist.yaml is stale: regenerate it with the command in its header"
    );
    let run = common::run_fn(text.as_bytes());
    assert_eq!(run.code, 0, "{}", run.stderr);
    let kinds: Vec<String> = run.resource_list()["items"]
        .as_sequence()
        .unwrap()
        .iter()
        .map(|i| i["kind"].as_str().unwrap_or("").to_owned())
        .collect();
    assert!(kinds.iter().any(|k| k == "DaemonSet"), "{kinds:?}");
}

/// The README's user-facing commands, run literally.
#[path = "readme/newcomer.rs"]
mod newcomer;
