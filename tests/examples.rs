//! Runs every package under `examples/` through the real kpt, the way the kpt functions catalog
//! tests its examples: `kpt fn eval --exec` and `kpt fn render` (Kptfile pipeline), each twice.
//!
//! Layout of an example (catalog style):
//! - `Kptfile` with `pipeline.mutators: [{exec: cutover, configPath: fn-config.yaml}]`
//! - `fn-config.yaml` (local-config) and the resources
//! - `.krmignore` containing `.expected`
//! - `.expected/config.yaml` (optional): `exitCode` (default 0), `args` (a map: eval uses
//!   `-- key=value` instead of `--fn-config`)
//! - `.expected/diff.patch`: `git diff` after one run (empty file when nothing changes)
//! - `.expected/results.yaml`: the function's results
//!
//! Set `UPDATE_EXPECTED=1` to rewrite `diff.patch` and `results.yaml` from the eval run.

mod common;

use std::path::Path;

use common::examples::{Expected, examples, expected, results_from};
use common::{diff_and_commit, kpt, package_copy, run_cmd};
use serde_yaml::Value;

enum How {
    Eval,
    Render,
}

/// Runs kpt once on `dir`; returns the diff and the results.
fn run_once(how: &How, dir: &Path, exp: &Expected) -> (String, Value) {
    let results = tempfile::tempdir().unwrap();
    let mut cmd = kpt();
    match how {
        How::Eval => {
            cmd.args(["fn", "eval"])
                .arg(dir)
                .arg("--exec")
                .arg(common::bin());
            cmd.arg("--results-dir").arg(results.path());
            if exp.args.is_empty() {
                cmd.arg("--fn-config").arg(dir.join("fn-config.yaml"));
            } else {
                cmd.arg("--").args(&exp.args);
            }
        }
        How::Render => {
            let bin_dir = common::bin().parent().unwrap().to_path_buf();
            let path = format!(
                "{}:{}",
                bin_dir.display(),
                std::env::var("PATH").unwrap_or_default()
            );
            cmd.env("PATH", path);
            cmd.args(["fn", "render"])
                .arg(dir)
                .args(["--allow-exec", "--results-dir"])
                .arg(results.path());
        }
    }
    let run = run_cmd(&mut cmd);
    let code = if run.code == 0 { 0 } else { 1 };
    assert_eq!(
        code,
        exp.exit_code,
        "{} exit code {} in {}\nstdout: {}\nstderr: {}",
        match how {
            How::Eval => "eval",
            How::Render => "render",
        },
        run.code,
        dir.display(),
        run.stdout_str(),
        run.stderr
    );
    (diff_and_commit(dir), results_from(results.path()))
}

fn check_example(example: &Path) {
    let exp = expected(example);
    let update = std::env::var("UPDATE_EXPECTED").is_ok_and(|v| v == "1");
    for how in [How::Eval, How::Render] {
        let (_guard, dir) = package_copy(example);
        let (diff, results) = run_once(&how, &dir, &exp);
        let diff_file = example.join(".expected/diff.patch");
        let results_file = example.join(".expected/results.yaml");
        if update && matches!(how, How::Eval) {
            std::fs::create_dir_all(example.join(".expected")).unwrap();
            std::fs::write(&diff_file, &diff).unwrap();
            std::fs::write(&results_file, serde_yaml::to_string(&results).unwrap()).unwrap();
        }
        let want_diff = std::fs::read_to_string(&diff_file).unwrap_or_else(|_| {
            panic!(
                "{} missing (UPDATE_EXPECTED=1 writes it)",
                diff_file.display()
            )
        });
        assert_eq!(
            diff,
            want_diff,
            "diff of {} differs from .expected/diff.patch",
            example.display()
        );
        let want_results: Value =
            serde_yaml::from_str(&std::fs::read_to_string(&results_file).unwrap()).unwrap();
        assert_eq!(
            results,
            want_results,
            "results of {} differ from .expected/results.yaml",
            example.display()
        );
        // Idempotence: a second run changes nothing.
        let (again, _) = run_once(&how, &dir, &exp);
        assert_eq!(
            again,
            "",
            "second run on {} changed files",
            example.display()
        );
    }
}

#[test]
fn every_example_matches_its_expected_output_with_kpt_eval_and_render() {
    let examples = examples();
    assert!(!examples.is_empty(), "no examples found");
    let only = std::env::var("EXAMPLE").ok();
    for example in examples {
        if only.as_deref().is_some_and(|o| !example.ends_with(o)) {
            continue;
        }
        check_example(&example);
    }
}
