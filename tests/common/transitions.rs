//! Helpers of the tests that read the transition-model situations under
//! `tests/transitions/<case>/`: the objects of one file of a case, and what `cutover observe`
//! writes from a case's live objects.

use std::io::Write;
use std::process::{Command, Stdio};

use serde::Deserialize;
use serde_yaml::Value;

/// Every document of `tests/transitions/<case>/<file>` (a multi-document YAML file), empty
/// documents left out.
pub fn load(case: &str, file: &str) -> Vec<Value> {
    let path = super::root()
        .join("tests/transitions")
        .join(case)
        .join(file);
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    serde_yaml::Deserializer::from_str(&text)
        .map(|d| Value::deserialize(d).unwrap())
        .filter(|v| !v.is_null())
        .collect()
}

/// `cutover observe` on the live objects, as `kubectl get … -o yaml` would list them: the
/// `ObservedState` it writes.
pub fn observe(live: &[Value]) -> Value {
    let mut list: Value = serde_yaml::from_str("{apiVersion: v1, kind: List}").unwrap();
    list["items"] = Value::Sequence(live.to_vec());
    let mut child = Command::new(super::bin())
        .arg("observe")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    child
        .stdin
        .take()
        .unwrap()
        .write_all(serde_yaml::to_string(&list).unwrap().as_bytes())
        .unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(out.status.success());
    serde_yaml::from_slice(&out.stdout).unwrap()
}
