//! `function.yaml` must carry exactly the schema `cutover schema` generates, and describe the
//! runtimes that exist. `UPDATE_EXPECTED=1` rewrites the generated part.

mod common;

use std::process::Command;

use common::run_cmd;
use serde_yaml::Value;

const MARKER: &str = "      openAPIV3Schema:";

fn generated_schema() -> serde_json::Value {
    let run = run_cmd(Command::new(common::bin()).arg("schema"));
    assert_eq!(run.code, 0, "{}", run.stderr);
    serde_json::from_slice(&run.stdout).expect("schema is JSON")
}

fn render_block(schema: &serde_json::Value) -> String {
    let yaml = serde_yaml::to_string(schema).unwrap();
    let mut out = String::from(MARKER);
    out.push('\n');
    for line in yaml.lines() {
        out.push_str("        ");
        out.push_str(line);
        out.push('\n');
    }
    out
}

#[test]
fn function_yaml_schema_is_the_generated_schema() {
    let path = common::root().join("function.yaml");
    let text = std::fs::read_to_string(&path).unwrap();
    let schema = generated_schema();
    if std::env::var("UPDATE_EXPECTED").is_ok_and(|v| v == "1") {
        let head = &text[..text.find(MARKER).expect("marker line in function.yaml")];
        std::fs::write(&path, format!("{head}{}", render_block(&schema))).unwrap();
    }
    let text = std::fs::read_to_string(&path).unwrap();
    let def: Value = serde_yaml::from_str(&text).unwrap();
    assert_eq!(def["apiVersion"], "config.kubernetes.io/v1alpha1");
    assert_eq!(def["kind"], "KRMFunctionDefinition");
    assert_eq!(def["spec"]["group"], "fn.cutover.dev");
    let versions = def["spec"]["versions"].as_sequence().unwrap();
    assert_eq!(versions.len(), 1);
    assert_eq!(versions[0]["name"], "v1alpha1");
    assert_eq!(versions[0]["idempotent"], true);
    let in_file: serde_json::Value =
        serde_yaml::from_value(versions[0]["schema"]["openAPIV3Schema"].clone()).unwrap();
    assert_eq!(
        in_file, schema,
        "function.yaml's openAPIV3Schema differs from `cutover schema`; run UPDATE_EXPECTED=1 cargo test --test function_definition"
    );
}

#[test]
fn function_yaml_names_existing_examples() {
    let def: Value = serde_yaml::from_str(
        &std::fs::read_to_string(common::root().join("function.yaml")).unwrap(),
    )
    .unwrap();
    let examples = def["spec"]["versions"][0]["examples"]
        .as_sequence()
        .unwrap();
    for e in examples {
        let p = common::root().join(e.as_str().unwrap());
        assert!(
            p.exists(),
            "function.yaml names {} which does not exist",
            p.display()
        );
    }
    let usage = def["spec"]["versions"][0]["usage"].as_str().unwrap();
    assert!(common::root().join(usage).exists());
}
