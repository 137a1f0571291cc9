//! The function through the real kpt (`kpt fn eval --exec`), on a package whose files use
//! comments, flow style, unusual key order, multi-document files and unknown fields: what the
//! function does not change must come back byte for byte; failures must leave files untouched
//! and report the offending field.

mod common;

use common::{diff_and_commit, kpt, kpt_eval as eval, package_copy, run_cmd};

fn fixture() -> std::path::PathBuf {
    common::root().join("tests/fixtures/kpt-package")
}

#[test]
fn plan_run_with_fn_config_file_leaves_every_byte_in_place() {
    let (_tmp, dir) = package_copy(&fixture());
    let cfg = dir.join("fn-config.yaml");
    let (run, results) = eval(&dir, &["--fn-config", cfg.to_str().unwrap()]);
    assert_eq!(run.code, 0, "{}\n{}", run.stdout_str(), run.stderr);
    assert_eq!(
        diff_and_commit(&dir),
        "",
        "files changed by a run that changes nothing"
    );
    assert!(!results.is_empty(), "the plan reports what it found");
    assert!(results.iter().all(|r| r["severity"] != "error"));
}

#[test]
fn plan_run_with_key_value_args_leaves_every_byte_in_place() {
    let (_tmp, dir) = package_copy(&fixture());
    let (run, _) = eval(
        &dir,
        &["--", "mode=load-balancer-announcer", "announcer=metallb"],
    );
    assert_eq!(run.code, 0, "{}\n{}", run.stdout_str(), run.stderr);
    assert_eq!(diff_and_commit(&dir), "");
}

#[test]
fn bad_key_value_args_fail_with_the_field_and_touch_nothing() {
    let (_tmp, dir) = package_copy(&fixture());
    let (run, results) = eval(
        &dir,
        &["--", "mode=metallb-image-prepull", "waitTimeout=soon"],
    );
    assert_eq!(run.code, 1, "{}\n{}", run.stdout_str(), run.stderr);
    assert_eq!(diff_and_commit(&dir), "");
    assert_eq!(results.len(), 1, "{results:?}");
    assert_eq!(results[0]["severity"], "error");
    assert_eq!(results[0]["field"]["path"], "data.waitTimeout");
    assert_eq!(results[0]["resourceRef"]["name"], "function-input");

    let (run, results) = eval(&dir, &["--", "mode=teleport"]);
    assert_eq!(run.code, 1);
    assert_eq!(results[0]["field"]["path"], "data.mode");
    assert_eq!(diff_and_commit(&dir), "");
}

#[test]
fn bad_fn_config_file_fails_with_the_field_and_touches_nothing() {
    let (_tmp, dir) = package_copy(&fixture());
    let cfg = dir.join("bad-config.yaml");
    std::fs::write(
        &cfg,
        "apiVersion: fn.cutover.dev/v1alpha1\nkind: LoadBalancerAnnouncer\nmetadata:\n  name: bad\n  annotations:\n    config.kubernetes.io/local-config: \"true\"\nspec:\n  announcer: metallb\n  colour: blue\n",
    )
    .unwrap();
    diff_and_commit(&dir);
    let (run, results) = eval(&dir, &["--fn-config", cfg.to_str().unwrap()]);
    assert_eq!(run.code, 1);
    assert_eq!(diff_and_commit(&dir), "");
    assert_eq!(results[0]["field"]["path"], "spec.colour");
    assert_eq!(results[0]["resourceRef"]["kind"], "LoadBalancerAnnouncer");
    assert_eq!(results[0]["file"]["path"], "bad-config.yaml");
}

/// A ConfigMap written by PyYAML (`yaml.safe_dump` of `{"k": "a: b\n"}` gives a multi-line
/// single-quoted value) as the last item: kpt hands it over with the closing quote at column 0,
/// right before `functionConfig:`. The run must give kpt back YAML it reads, every byte as a
/// function that echoes its input (`cat`) leaves it (kpt itself moves that quote to column 0).
#[test]
fn pyyaml_quoted_values_come_back_intact() {
    let (_tmp, dir) = package_copy(&fixture());
    std::fs::write(
        dir.join("zz-pyyaml.yaml"),
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: py\ndata:\n  k: 'a: b\n\n    '\n",
    )
    .unwrap();
    diff_and_commit(&dir);
    let echo = run_cmd(kpt().args(["fn", "eval"]).arg(&dir).args(["--exec", "cat"]));
    assert_eq!(echo.code, 0, "{}", echo.stderr);
    assert!(
        diff_and_commit(&dir).contains("+'\n"),
        "kpt's own serialization changed"
    );
    let (run, _) = eval(
        &dir,
        &["--", "mode=load-balancer-announcer", "announcer=metallb"],
    );
    assert_eq!(run.code, 0, "{}\n{}", run.stdout_str(), run.stderr);
    assert_eq!(diff_and_commit(&dir), "");
}
