//! Helpers of the prepull integration tests: ResourceLists from the examples through the real
//! `kpt fn source`, runs of the binary that must succeed or fail, item lookups and edits.

use std::path::PathBuf;

use serde_yaml::{Mapping, Value};

use super::{kpt, run_cmd, run_fn};

pub const GENERATED_BY: &str = "fn.cutover.dev/generated-by";

pub fn example(name: &str) -> PathBuf {
    super::root().join("examples").join(name)
}

/// `kpt fn source <example> --fn-config fn-config.yaml`: the ResourceList kpt itself builds.
pub fn source(name: &str) -> Value {
    let dir = example(name);
    let run = run_cmd(
        kpt()
            .args(["fn", "source"])
            .arg(&dir)
            .arg("--fn-config")
            .arg(dir.join("fn-config.yaml")),
    );
    assert_eq!(run.code, 0, "kpt fn source: {}", run.stderr);
    run.resource_list()
}

pub fn run_list(list: &Value) -> super::Run {
    run_fn(serde_yaml::to_string(list).unwrap().as_bytes())
}

pub fn items(list: &Value) -> &Vec<Value> {
    list["items"].as_sequence().expect("items")
}

pub fn generated(list: &Value) -> Vec<&Value> {
    items(list)
        .iter()
        .filter(|i| {
            i["metadata"]["annotations"][GENERATED_BY].as_str() == Some("metallb-image-prepull")
        })
        .collect()
}

pub fn find<'a>(list: &'a Value, kind: &str, name: &str) -> &'a Value {
    items(list)
        .iter()
        .find(|i| i["kind"] == kind && i["metadata"]["name"] == name)
        .unwrap_or_else(|| panic!("no {kind} {name}"))
}

pub fn job(list: &Value) -> &Value {
    items(list)
        .iter()
        .find(|i| i["kind"] == "Job")
        .expect("a waiter Job")
}

pub fn set(v: &mut Value, path: &[&str], value: Value) {
    let mut cur = v;
    for key in &path[..path.len() - 1] {
        let map = cur.as_mapping_mut().expect("mapping");
        cur = map
            .entry(Value::from(*key))
            .or_insert_with(|| Value::Mapping(Mapping::new()));
    }
    cur.as_mapping_mut()
        .unwrap()
        .insert(Value::from(path[path.len() - 1]), value);
}

pub fn yaml(src: &str) -> Value {
    serde_yaml::from_str(src).unwrap()
}

/// The ResourceList output of a successful run, with the exit code checked.
pub fn ok(list: &Value) -> Value {
    let run = run_list(list);
    assert_eq!(
        run.code,
        0,
        "stderr: {}\nstdout: {}",
        run.stderr,
        run.stdout_str()
    );
    run.resource_list()
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
    // Every result the mode produces names its check; config decoding happens before the mode.
    let decoding = e["message"]
        .as_str()
        .unwrap()
        .starts_with("invalid function config");
    assert!(
        decoding || e["tags"]["check"].is_string(),
        "no check tag: {e:?}"
    );
    assert_eq!(e["field"]["path"], field, "{e:?}");
    assert!(
        e["resourceRef"]["kind"].is_string(),
        "error names no resource: {e:?}"
    );
    assert!(!run.stderr.is_empty());
    e
}

pub fn with_spec(mut list: Value, key: &str, value: Value) -> Value {
    set(&mut list, &["functionConfig", "spec", key], value);
    list
}

pub fn edit_item(mut list: Value, kind: &str, name: &str, f: impl FnOnce(&mut Value)) -> Value {
    let item = list["items"]
        .as_sequence_mut()
        .unwrap()
        .iter_mut()
        .find(|i| i["kind"] == kind && i["metadata"]["name"] == name)
        .unwrap();
    f(item);
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
    let bin_dir = super::bin().parent().unwrap().to_path_buf();
    let path = format!(
        "{}:{}",
        bin_dir.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    run_cmd(
        kpt()
            .env("PATH", path)
            .args(["fn", "render"])
            .arg(dir)
            .arg("--allow-exec"),
    )
}
