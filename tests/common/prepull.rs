//! Helpers of the prepull integration tests: runs of the binary that must fail with one error,
//! the generated payload, and `kpt fn render` of a package. The ResourceList helpers they share
//! with the other tests (kpt's `fn source` of an example, lookups, edits) are in [`super`].

use std::path::PathBuf;

use serde_yaml::{Mapping, Value};

use super::{items, kpt, run_cmd, run_list};

pub const GENERATED_BY: &str = "fn.cutover.dev/generated-by";

pub fn example(name: &str) -> PathBuf {
    super::root().join("examples").join(name)
}

pub fn generated(list: &Value) -> Vec<&Value> {
    items(list)
        .iter()
        .filter(|i| {
            i["metadata"]["annotations"][GENERATED_BY].as_str() == Some("metallb-image-prepull")
        })
        .collect()
}

pub fn job(list: &Value) -> &Value {
    items(list)
        .iter()
        .find(|i| i["kind"] == "Job")
        .expect("a waiter Job")
}

/// Runs input that must fail: exit 1, a valid ResourceList whose items are exactly the input
/// items, one error result naming `field` (and a resource). Returns the error result.
pub fn fails(list: &Value, field: &str) -> Value {
    let run = run_list(list);
    assert_eq!(
        run.code,
        1,
        "expected failure; stdout: {}",
        run.stdout_str()
    );
    let out = run.resource_list();
    assert_eq!(out["kind"], "ResourceList");
    assert_eq!(
        items(&out),
        items(list),
        "items must come out unchanged on error"
    );
    let errors: Vec<&Value> = out["results"]
        .as_sequence()
        .unwrap()
        .iter()
        .filter(|r| r["severity"] == "error")
        .collect();
    assert_eq!(errors.len(), 1, "{errors:?}");
    let e = errors[0].clone();
    // Every result names a documented check, config decoding's included.
    super::assert_prepull_checks(&run);
    assert_eq!(e["field"]["path"], field, "{e:?}");
    assert!(
        e["resourceRef"]["kind"].is_string(),
        "error names no resource: {e:?}"
    );
    assert!(!run.stderr.is_empty());
    e
}

/// The example `prepull-upgrade-bfd-peers`, whose function config is in kpt's ConfigMap form,
/// with `data.<key>` set to `value`.
pub fn configmap_form_with(key: &str, value: &str) -> Value {
    let mut list = super::example_source("prepull-upgrade-bfd-peers");
    super::set_path(&mut list, &["functionConfig", "data", key], value.into());
    list
}

/// Edits the `spec` of the typed function config.
pub fn edit_fc(mut list: Value, f: impl FnOnce(&mut Mapping)) -> Value {
    f(list["functionConfig"]["spec"]
        .as_mapping_mut()
        .expect("a typed config with a spec"));
    list
}

/// `kpt fn render --allow-exec` of a package whose Kptfile runs `exec: cutover` (the built binary
/// first on PATH).
pub fn kpt_render(dir: &std::path::Path) -> super::Run {
    run_cmd(
        kpt()
            .env("PATH", super::path_with_bin())
            .args(["fn", "render"])
            .arg(dir)
            .arg("--allow-exec"),
    )
}
