//! Every package under `examples/` is a kpt catalog e2e test case (`.expected/config.yaml`,
//! `diff.patch`, `results.yaml`; see `tests/e2e/mod.rs` for kpt's semantics and the Go files they
//! follow), run here as kpt's runner runs it, against the real kpt and the `cutover` binary of
//! this build (first on PATH, so a Kptfile's `exec: cutover` is this build).
//!
//! Besides kpt's checks, cutover's own:
//! - idempotence: the command run again on its own output changes nothing;
//! - eval parity: `kpt fn eval --exec` with the Kptfile's `configPath` (or with `args:` of
//!   `config.yaml`, the ConfigMap form) gives the same diff and the same results as the case;
//! - every result of every example carries the tags `mode` and `check`, a check its mode's doc
//!   lists;
//! - every example README has the catalog's sections.
//!
//! `UPDATE_EXPECTED=1` (or kpt's `KPT_E2E_UPDATE_EXPECTED=true`) rewrites `diff.patch` and
//! `results.yaml`; `EXAMPLE=<name>` runs one example.

mod common;
mod e2e;

use std::path::{Path, PathBuf};

use e2e::{Env, TestCase, Workspace};
use serde_yaml::Value;

/// kpt's `ScanTestCases` over `examples/`: every directory with a `.expected` directory.
fn cases() -> Vec<TestCase> {
    let mut dirs: Vec<PathBuf> = std::fs::read_dir(common::root().join("examples"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.join(".expected").is_dir())
        .collect();
    dirs.sort();
    let only = std::env::var("EXAMPLE").ok();
    dirs.retain(|d| only.as_deref().is_none_or(|o| d.ends_with(o)));
    assert!(!dirs.is_empty(), "no examples found");
    dirs.iter().map(|d| TestCase::load(d)).collect()
}

fn env() -> Env {
    let tmp = Path::new(env!("CARGO_TARGET_TMPDIR")).join("e2e");
    std::fs::create_dir_all(&tmp).unwrap();
    Env {
        path: common::path_with_bin(),
        tmp,
    }
}

/// kpt's `runFnEval`/`runFnRender` loop for one case, plus the idempotence check.
fn run_case(env: &Env, case: &TestCase) -> Result<(), String> {
    let results = case.path.join(".expected/results.yaml").is_file();
    if e2e::updating() {
        let ws = Workspace::new(env, case, "kpt-pipeline-e2e-");
        e2e::setup(env, case, &ws);
        let out = e2e::run_once(env, case, &ws, true);
        e2e::update_expected(case, &out);
        std::fs::remove_dir_all(&ws.tmp).unwrap();
        return Ok(());
    }
    for iteration in 1..=case.run_count() {
        let ws = Workspace::new(env, case, "kpt-pipeline-e2e-");
        e2e::setup(env, case, &ws);
        let out = e2e::run_once(env, case, &ws, results);
        e2e::compare(case, &out).map_err(|e| format!("iteration {iteration}: {e}"))?;
        // After a (matching) failure kpt's runFnEval stops before teardown.sh, runFnRender after.
        if out.exit_code != 0 && case.config.test_type == "eval" {
            break;
        }
        if out.exit_code == 0 {
            let again = e2e::rerun_diff(env, case, &ws);
            if !again.is_empty() {
                return Err(format!(
                    "a second run on the output changed files:\n{again}"
                ));
            }
        }
        e2e::teardown(env, case, &ws);
        if !case.config.debug {
            std::fs::remove_dir_all(&ws.tmp).unwrap();
        }
        if out.exit_code != 0 {
            break;
        }
    }
    Ok(())
}

#[test]
fn every_example_passes_the_catalog_e2e_run() {
    let env = env();
    let mut failures = Vec::new();
    for case in cases() {
        if case.config.skip || !case.runtime_matches() {
            eprintln!("SKIPPED {} (skip or runtimes)", case.name());
            continue;
        }
        if let Err(e) = run_case(&env, &case) {
            failures.push(format!("{}: {e}", case.name()));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
}

/// The function the Kptfile's pipeline runs, when it is this one function: `exec: cutover`
/// (its `configPath`, if any).
fn cutover_function(pkg: &Path) -> Option<Option<String>> {
    let kptfile: Value =
        serde_yaml::from_str(&std::fs::read_to_string(pkg.join("Kptfile")).ok()?).ok()?;
    let functions: Vec<&Value> = ["mutators", "validators"]
        .iter()
        .filter_map(|k| kptfile["pipeline"][*k].as_sequence())
        .flatten()
        .collect();
    match functions.as_slice() {
        [f] if f["exec"] == "cutover" => Some(f["configPath"].as_str().map(str::to_owned)),
        _ => None,
    }
}

/// `kpt fn eval --exec` with the pipeline's config (or `args:`, the ConfigMap form) gives the
/// diff and the results the case expects from `kpt fn render`.
#[test]
fn every_example_gives_the_same_result_with_kpt_fn_eval() {
    if e2e::updating() {
        return;
    }
    let env = env();
    let mut checked = 0;
    for case in cases() {
        if case.config.test_type != "render" || case.config.skip {
            continue;
        }
        let Some(config_path) = cutover_function(&case.path) else {
            continue;
        };
        let ws = Workspace::new(&env, &case, "kpt-eval-parity-");
        let results = ws.tmp.join("results");
        let mut cmd = std::process::Command::new("kpt");
        cmd.env("PATH", &env.path)
            .env("TMPDIR", &env.tmp)
            .args(["fn", "eval"])
            .arg(&ws.pkg)
            .arg("--exec")
            .arg(common::bin())
            .arg("--results-dir")
            .arg(&results);
        let args = common::examples::key_values(&case.config.args);
        if !args.is_empty() {
            cmd.arg("--").args(args);
        } else if let Some(config) = &config_path {
            cmd.arg("--fn-config").arg(ws.pkg.join(config));
        }
        let run = common::run_cmd(&mut cmd);
        let name = case.name();
        assert_eq!(
            run.code, case.config.exit_code,
            "{name}: kpt fn eval exit code\n{}",
            run.stderr
        );
        let diff = ws.diff_since(&env, &ws.initial_commit);
        assert_eq!(
            diff,
            e2e::expected_file(&case, "diff.patch"),
            "{name}: kpt fn eval changes other files than kpt fn render"
        );
        let want = std::fs::read_to_string(case.path.join(".expected/results.yaml")).unwrap();
        let want = if case.is_previous_layout() {
            serde_yaml::from_str(&want).unwrap()
        } else {
            common::results_of(&want)
        };
        assert_eq!(
            common::results_from(&results),
            want,
            "{name}: kpt fn eval gives other results than kpt fn render"
        );
        std::fs::remove_dir_all(&ws.tmp).unwrap();
        checked += 1;
    }
    assert!(checked > 0, "no example runs `exec: cutover` alone");
}

/// The result-tag scheme (README "Behaviour you can rely on"): every result carries `mode` and
/// `check`, and the check is one its mode's doc lists (or one of the engine's own).
#[test]
fn every_result_of_every_example_carries_mode_and_check() {
    let mut missing = Vec::new();
    for case in cases() {
        let text = e2e::expected_file(&case, "results.yaml");
        let results = if case.is_previous_layout() {
            serde_yaml::from_str(&text).unwrap()
        } else {
            common::results_of(&text)
        };
        for r in results.as_sequence().into_iter().flatten() {
            for tag in ["mode", "check"] {
                if r["tags"][tag].as_str().is_none_or(str::is_empty) {
                    missing.push(format!(
                        "{}: no `{tag}` on {:?}",
                        case.name(),
                        r["message"].as_str().unwrap_or("")
                    ));
                }
            }
            let (Some(mode), Some(check)) =
                (r["tags"]["mode"].as_str(), r["tags"]["check"].as_str())
            else {
                continue;
            };
            let documented = common::documented_checks(mode)
                .unwrap_or_else(|| panic!("{}: unknown mode {mode:?}", case.name()));
            if !documented.contains(&check) && !common::ENGINE_CHECKS.contains(&check) {
                missing.push(format!(
                    "{}: check {check:?} is not in the {mode} doc's list, on {:?}",
                    case.name(),
                    r["message"].as_str().unwrap_or("")
                ));
            }
        }
    }
    assert!(
        missing.is_empty(),
        "{} results lack a tag:\n{}",
        missing.len(),
        missing.join("\n")
    );
}

/// Each example README has the catalog's sections: what it shows, how to run it, what to expect.
#[test]
fn every_example_readme_has_the_catalog_sections() {
    for case in cases() {
        let readme = std::fs::read_to_string(case.path.join("README.md"))
            .unwrap_or_else(|_| panic!("{}: no README.md", case.name()));
        assert!(
            readme.starts_with(&format!("# {}", case.name())),
            "{}: README title",
            case.name()
        );
        for section in [
            "### Overview",
            "### Function invocation",
            "### Expected result",
        ] {
            assert!(
                readme.contains(&format!("\n{section}\n")),
                "{}: README lacks {section}",
                case.name()
            );
        }
        assert!(
            readme.contains(&format!("kpt fn {} ", case.config.test_type)),
            "{}: README does not show the kpt fn {} command the test runs",
            case.name(),
            case.config.test_type
        );
    }
}

/// The runner must be able to fail: a case whose expected diff or results are wrong fails, and
/// kpt's normalizations work as in Go.
#[test]
fn the_runner_detects_wrong_expectations() {
    assert_eq!(
        e2e::sanitize_timestamps("[PASS] \"cutover\" in 1.2s\n[RUNNING] \"cutover\""),
        "[PASS] \"cutover\" in 0s\n[RUNNING] \"cutover\""
    );
    let env = env();
    let case = cases()
        .into_iter()
        .find(|c| c.config.exit_code == 0 && !e2e::expected_file(c, "diff.patch").is_empty())
        .expect("an example that changes files");
    let ws = Workspace::new(&env, &case, "kpt-pipeline-e2e-");
    let out = e2e::run_once(&env, &case, &ws, true);
    assert_eq!(e2e::compare(&case, &out), Ok(()));
    let mut wrong = e2e::Outcome {
        diff: out.diff.replacen('+', "-", 1),
        ..out
    };
    assert!(e2e::compare(&case, &wrong).unwrap_err().contains("diff"));
    wrong.diff = e2e::expected_file(&case, "diff.patch");
    wrong.results = wrong
        .results
        .replacen("severity: info", "severity: warning", 1);
    assert!(e2e::compare(&case, &wrong).unwrap_err().contains("results"));
    wrong.exit_code = 3;
    assert!(
        e2e::compare(&case, &wrong)
            .unwrap_err()
            .contains("exit code")
    );
    std::fs::remove_dir_all(&ws.tmp).unwrap();
}
