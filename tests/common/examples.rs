//! The packages under `examples/` and what their `.expected/` says, for the tests that run them
//! through kpt (tests/examples.rs with its kpt e2e runner, tests/kpt_wasm). `.expected/config.yaml`
//! is a kpt e2e test case's configuration: kptdev/kpt@v1.0.0-beta.67
//! `pkg/test/runner/config.go` (`TestCaseConfig`, `EvalTestCaseConfig`, `newTestCaseConfig`) and
//! the `runtimes` filter of `e2e/fn_test.go`.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::Deserialize;
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

/// `.expected/config.yaml` (kpt's `TestCaseConfig` with its inline `EvalTestCaseConfig`).
#[derive(Debug, Default, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub struct TestCaseConfig {
    pub exit_code: i32,
    pub actual_strip_lines: Vec<String>,
    pub diff_strip_reg_ex: String,
    pub std_err: String,
    pub std_err_reg_ex: String,
    pub std_err_strip_lines: Vec<String>,
    pub std_out: String,
    pub sequential: bool,
    pub image_pull_policy: String,
    pub runtimes: Vec<String>,
    pub allow_exec: bool,
    pub allow_network: bool,
    pub allow_wasm: bool,
    pub skip: bool,
    pub debug: bool,
    /// `render` (the default) or `eval`.
    pub test_type: String,
    pub disable_output_truncate: bool,
    pub env: BTreeMap<String, String>,
    // EvalTestCaseConfig (inline in kpt's struct).
    pub exec_path: String,
    pub image: String,
    pub tag: String,
    /// Passed as `-- key=value` (eval only), in the file's order.
    pub args: serde_yaml::Mapping,
    pub network: bool,
    pub include_meta_resources: bool,
    pub fn_config: String,
    /// The catalog's e2e doc names it; kpt's runner always runs twice.
    pub run_count: Option<u32>,
}

/// One test case: its directory and configuration.
#[derive(Debug)]
pub struct TestCase {
    pub path: PathBuf,
    pub config: TestCaseConfig,
    /// `config.yaml` had no `testType`: a package in the layout examples had before the kpt
    /// catalog layout (see [`TestCase::is_previous_layout`]).
    pub test_type_given: bool,
}

impl TestCase {
    /// Reads `.expected/config.yaml` as kpt's `newTestCaseConfig` does (missing file: defaults).
    pub fn load(path: &Path) -> TestCase {
        let file = path.join(".expected/config.yaml");
        let (mut config, given) = match std::fs::read_to_string(&file) {
            Ok(text) => {
                let raw: Value = serde_yaml::from_str(&text).unwrap_or(Value::Null);
                let given = raw.get("testType").is_some();
                let config: TestCaseConfig = if raw.is_null() {
                    TestCaseConfig::default()
                } else {
                    serde_yaml::from_value(raw)
                        .unwrap_or_else(|e| panic!("{}: {e}", file.display()))
                };
                (config, given)
            }
            Err(_) => (TestCaseConfig::default(), false),
        };
        if config.test_type.is_empty() {
            config.test_type = "render".into();
        }
        if !given && previous_layout(path) {
            // Packages written before the catalog layout ran `kpt fn render --allow-exec`.
            config.allow_exec = true;
        }
        TestCase {
            path: path.to_owned(),
            config,
            test_type_given: given,
        }
    }

    pub fn name(&self) -> String {
        self.path
            .file_name()
            .unwrap()
            .to_string_lossy()
            .into_owned()
    }

    /// `results.yaml` is a plain list of results (the layout before the catalog's), compared as
    /// parsed results rather than as kpt's whole results file.
    pub fn is_previous_layout(&self) -> bool {
        !self.test_type_given && previous_layout(&self.path)
    }

    pub fn run_count(&self) -> u32 {
        self.config.run_count.unwrap_or(2)
    }

    /// kpt's `e2e/fn_test.go`: cases whose `runtimes` do not include `KPT_FN_RUNTIME` are skipped.
    pub fn runtime_matches(&self) -> bool {
        let current = std::env::var("KPT_FN_RUNTIME")
            .unwrap_or_default()
            .to_lowercase();
        self.config.runtimes.is_empty()
            || self
                .config
                .runtimes
                .iter()
                .any(|r| r.to_lowercase() == current)
    }
}

fn previous_layout(path: &Path) -> bool {
    std::fs::read_to_string(path.join(".expected/results.yaml"))
        .ok()
        .and_then(|t| serde_yaml::from_str::<Value>(&t).ok())
        .is_some_and(|v| v.is_sequence())
}

/// `args:` of a test case as `key=value` words, in the file's order (kpt passes them after `--`).
pub fn key_values(args: &serde_yaml::Mapping) -> Vec<String> {
    let scalar = |v: &Value| match v {
        Value::String(s) => s.clone(),
        other => serde_yaml::to_string(other).unwrap().trim_end().to_owned(),
    };
    args.iter()
        .map(|(k, v)| format!("{}={}", scalar(k), scalar(v)))
        .collect()
}
