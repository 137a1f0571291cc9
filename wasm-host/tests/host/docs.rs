//! The WASM runtime is described where users look: function.yaml and docs/wasm.md.

use crate::common::{host, root, run};

#[test]
fn function_yaml_and_docs_describe_the_wasm_runtime() {
    let function = std::fs::read_to_string(root().join("function.yaml")).unwrap();
    let entries: Vec<&str> = function
        .lines()
        .filter(|l| l.trim() == "- bin: cutover-wasm")
        .collect();
    assert_eq!(
        entries.len(),
        1,
        "function.yaml needs an exec platform for cutover-wasm"
    );

    let docs = std::fs::read_to_string(root().join("docs/wasm.md")).unwrap();
    let help = String::from_utf8(run(&host(), &["--help"], &[], b"").stdout).unwrap();
    let usage = help
        .lines()
        .find(|l| l.trim_start().starts_with("cutover-wasm [--module"))
        .expect("usage line in --help");
    assert!(docs.contains(usage.trim()), "docs/wasm.md lacks {usage:?}");
    for needle in [
        "kpt fn eval PKG --exec \"cutover-wasm\"",
        "kustomize build --enable-alpha-plugins --enable-exec",
        "module exceeded the memory limit of 512 MiB; stopped",
        "module ran longer than 60 s; stopped",
    ] {
        assert!(docs.contains(needle), "docs/wasm.md lacks {needle:?}");
    }
}
