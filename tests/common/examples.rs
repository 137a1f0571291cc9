//! The packages under `examples/` and what their `.expected/` says, for the tests that run them
//! through kpt (tests/examples.rs, tests/kpt_wasm.rs).

use std::path::{Path, PathBuf};

use serde_yaml::Value;

/// Every example package (a directory of `examples/` with a Kptfile), sorted.
pub fn examples() -> Vec<PathBuf> {
    let mut dirs: Vec<PathBuf> = std::fs::read_dir(super::root().join("examples"))
        .map(|rd| {
            rd.map(|e| e.unwrap().path())
                .filter(|p| p.join("Kptfile").exists())
                .collect()
        })
        .unwrap_or_default();
    dirs.sort();
    dirs
}

/// `.expected/config.yaml` of an example.
pub struct Expected {
    /// `exitCode` (default 0).
    pub exit_code: i32,
    /// `args` as `key=value` (eval passes them after `--` instead of `--fn-config`).
    pub args: Vec<String>,
}

pub fn expected(example: &Path) -> Expected {
    let path = example.join(".expected/config.yaml");
    let cfg: Value = std::fs::read_to_string(&path)
        .map(|t| serde_yaml::from_str(&t).unwrap())
        .unwrap_or(Value::Null);
    let args = cfg
        .get("args")
        .and_then(Value::as_mapping)
        .map(|m| {
            m.iter()
                .map(|(k, v)| format!("{}={}", k.as_str().unwrap(), scalar(v)))
                .collect()
        })
        .unwrap_or_default();
    Expected {
        exit_code: cfg.get("exitCode").and_then(Value::as_i64).unwrap_or(0) as i32,
        args,
    }
}

fn scalar(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        other => serde_yaml::to_string(other).unwrap().trim_end().to_owned(),
    }
}

/// The function's results from a kpt results directory.
pub fn results_from(dir: &Path) -> Value {
    let text = std::fs::read_to_string(dir.join("results.yaml")).unwrap_or_default();
    let list: Value = serde_yaml::from_str(&text).unwrap_or(Value::Null);
    let mut all = Vec::new();
    for item in list
        .get("items")
        .and_then(Value::as_sequence)
        .into_iter()
        .flatten()
    {
        for r in item
            .get("results")
            .and_then(Value::as_sequence)
            .into_iter()
            .flatten()
        {
            all.push(r.clone());
        }
    }
    Value::Sequence(all)
}
