//! The WASM runtime is described where users look: function.yaml and docs/wasm.md.

use crate::common::{host, root, run};

#[test]
fn function_yaml_and_docs_describe_the_wasm_runtime() {
    // function.yaml's exec platforms are release artifacts, one file with one sha256 each; the
    // WASI runtime is two files (host and module) that no release publishes yet, so function.yaml
    // names it in its head and points to docs/wasm.md instead of listing a platform.
    let function = std::fs::read_to_string(root().join("function.yaml")).unwrap();
    let head: String = function
        .lines()
        .take_while(|l| l.starts_with('#'))
        .collect::<Vec<_>>()
        .join("\n");
    assert!(
        head.contains("cutover-wasm") && head.contains("docs/wasm.md"),
        "function.yaml's head must point WASI users to cutover-wasm and docs/wasm.md"
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
