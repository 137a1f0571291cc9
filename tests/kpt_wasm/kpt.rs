//! Real kpt, eval and render, against the exec binary.

use std::collections::BTreeMap;
use std::path::Path;

use serde_yaml::Value;

use crate::common::examples::{TestCase, examples, key_values};
use crate::common::{self, diff_and_commit, package_copy, results_from};
use crate::{kpt_wasm, module, run_bounded, scratch};

/// What one kpt run did, with what differs by design between the runtimes taken out.
#[derive(Debug, PartialEq)]
struct KptRun {
    code: i32,
    /// kpt's stderr with the function's name as `FN`, without `WASM ` and durations.
    report: String,
    diff: String,
    results: Value,
    /// Every file of the package afterwards, by relative path.
    files: BTreeMap<String, String>,
}

/// The files below `dir` (not `.git`), by path relative to `root`.
fn files(root: &Path, dir: &Path, out: &mut BTreeMap<String, String>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.file_name().is_some_and(|n| n == ".git") {
            continue;
        }
        if path.is_dir() {
            files(root, &path, out);
        } else {
            let rel = path.strip_prefix(root).unwrap().display().to_string();
            out.insert(rel, std::fs::read_to_string(&path).unwrap());
        }
    }
}

enum How {
    Eval,
    Render,
}

/// Runs kpt on a copy of `example` with `function` (the exec binary or the module).
fn kpt_run(how: &How, example: &Path, function: &Path, wasm: bool, tmp: &Path) -> KptRun {
    let case = TestCase::load(example);
    let args = key_values(&case.config.args);
    let (_guard, dir) = package_copy(example);
    let results = tmp.join("results");
    let _ = std::fs::remove_dir_all(&results);
    std::fs::create_dir_all(&results).unwrap();
    let mut cmd = kpt_wasm(tmp);
    match how {
        How::Eval => {
            cmd.args(["fn", "eval"])
                .arg(&dir)
                .arg("--exec")
                .arg(function);
            if args.is_empty() {
                cmd.arg("--fn-config").arg(dir.join("fn-config.yaml"));
            }
        }
        How::Render => {
            // The examples' Kptfiles name `cutover`; point them at the function under test
            // (committed, so the diff shows only what the run did).
            let kptfile = dir.join("Kptfile");
            let text = std::fs::read_to_string(&kptfile).unwrap();
            assert!(text.contains("exec: cutover\n"), "{}", kptfile.display());
            let text = text.replace(
                "exec: cutover\n",
                &format!("exec: {}\n", function.display()),
            );
            std::fs::write(&kptfile, text).unwrap();
            diff_and_commit(&dir);
            cmd.args(["fn", "render"]).arg(&dir).arg("--allow-exec");
        }
    }
    cmd.arg("--results-dir").arg(&results);
    if wasm {
        cmd.arg("--allow-alpha-wasm");
    }
    if matches!(how, How::Eval) && !args.is_empty() {
        cmd.arg("--").args(&args);
    }
    let run = run_bounded(&cmd, 300);
    let function = function.display().to_string();
    let stderr = if run.code == 0 {
        without_stderr_block(&run.stderr)
    } else {
        run.stderr.clone()
    };
    let report = stderr
        .replace(&function, "FN")
        .replace("[RUNNING] WASM ", "[RUNNING] ")
        .lines()
        // `[PASS] "FN" in 1.2s`: durations differ between runs.
        .map(|line| line.split(" in ").next().unwrap_or(line).to_owned())
        .collect::<Vec<_>>()
        .join("\n");
    let mut after = BTreeMap::new();
    files(&dir, &dir, &mut after);
    if matches!(how, How::Render) {
        after.remove("Kptfile");
    }
    KptRun {
        code: run.code,
        report,
        diff: diff_and_commit(&dir),
        results: results_from(&results),
        files: after,
    }
}

/// kpt's report without the `Stderr:` block of a passing function. kpt's node runtime runs node
/// through an `ExecFn` with a `FnResult` of its own that kpt never reports
/// (kptdev/kpt@v1.0.0-beta.56 `internal/fnruntime/nodejs.go`, `NewNodejsFn`), so what a passing
/// WASM function writes to stderr (the announcer's plan lines) is not shown; the exec runtime
/// shows it. Everything else must be equal.
fn without_stderr_block(report: &str) -> String {
    let mut out = Vec::new();
    let mut in_block = false;
    for line in report.lines() {
        if line == "  Stderr:" {
            in_block = true;
            continue;
        }
        if in_block && line.starts_with("    ") {
            continue;
        }
        in_block = false;
        out.push(line);
    }
    out.join("\n")
}

#[test]
fn every_example_through_kpt_wasm_matches_the_exec_binary() {
    let tmp = scratch("examples");
    let tmp = tmp.path();
    let examples = examples();
    assert!(!examples.is_empty());
    let (mut changed, mut failed) = (0, 0);
    for example in &examples {
        let name = example.file_name().unwrap().to_string_lossy();
        let exit_code = TestCase::load(example).config.exit_code;
        for how in [How::Eval, How::Render] {
            let what = match how {
                How::Eval => "eval",
                How::Render => "render",
            };
            let exec = kpt_run(&how, example, &common::bin(), false, tmp);
            let wasm = kpt_run(&how, example, module(), true, tmp);
            assert_eq!(
                i32::from(wasm.code != 0),
                exit_code,
                "{name} {what}: exit code {}\n{}",
                wasm.code,
                wasm.report
            );
            assert!(
                wasm.report.contains("[RUNNING] \"FN\""),
                "{name} {what}: kpt ran no function:\n{}",
                wasm.report
            );
            assert_eq!(wasm, exec, "{name} {what}: kpt-WASM differs from exec");
            changed += usize::from(!wasm.diff.is_empty());
            failed += usize::from(wasm.code != 0);
        }
    }
    // Parity on runs that change nothing would prove little.
    assert!(changed > 0, "no example changed its package");
    assert!(failed > 0, "no example failed");
}

#[test]
fn yaml_1_1_look_alike_strings_stay_strings_through_kpt() {
    // Strings that YAML 1.1 readers (sigs.k8s.io/yaml: kubectl, Flux) take for booleans, numbers
    // or dates unless they are quoted.
    const LOOK_ALIKES: &[&str] = &[
        "yes",
        "no",
        "on",
        "off",
        "y",
        "n",
        "true",
        "0x1F",
        "1_000",
        "0755",
        "1e3",
        "12:30",
        "2024-01-01",
        "~",
        "null",
    ];
    let example = common::root().join("examples/announcer-cozystack-cutover");
    let mut fixture = String::new();
    for (i, v) in LOOK_ALIKES.iter().enumerate() {
        fixture.push_str(&format!("    example.com/look-alike-{i}: \"{v}\"\n"));
    }
    let tmp = scratch("look-alikes");
    let tmp = tmp.path();
    let package = tmp.join("package");
    let _ = std::fs::remove_dir_all(&package);
    common::copy_dir(&example, &package);
    // On the Service the function rewrites, and in a ConfigMap it leaves alone.
    let services = package.join("services.yaml");
    let text = std::fs::read_to_string(&services).unwrap();
    let anchor = "    lbipam.cilium.io/ips: 192.168.123.210\n";
    assert!(text.contains(anchor));
    std::fs::write(
        &services,
        text.replace(anchor, &format!("{anchor}{fixture}")),
    )
    .unwrap();
    let data: String = fixture.replace("    example.com/", "  ");
    std::fs::write(
        package.join("look-alikes.yaml"),
        format!("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: look-alikes\n  namespace: tenant-demo\ndata:\n{data}"),
    )
    .unwrap();

    let exec = kpt_run(&How::Eval, &package, &common::bin(), false, tmp);
    let wasm = kpt_run(&How::Eval, &package, module(), true, tmp);
    assert_eq!(wasm.code, 0, "{}", wasm.report);
    assert!(
        wasm.diff.contains("services.yaml"),
        "the Service was rewritten:\n{}",
        wasm.diff
    );
    assert_eq!(wasm, exec);
    // The files kpt wrote: every value is still quoted, and parses back as the string.
    for file in ["services.yaml", "look-alikes.yaml"] {
        let text = &wasm.files[file];
        for (i, v) in LOOK_ALIKES.iter().enumerate() {
            let key = format!("look-alike-{i}: ");
            let line = text
                .lines()
                .find(|l| l.contains(&key))
                .unwrap_or_else(|| panic!("{file}: {key} lost:\n{text}"));
            let value = line.split_once(&key).unwrap().1;
            assert!(
                value == format!("'{v}'") || value == format!("\"{v}\""),
                "{file}: {v:?} written as {value}"
            );
        }
        for doc in serde_yaml::Deserializer::from_str(text) {
            let doc: Value = serde::Deserialize::deserialize(doc).unwrap();
            for (k, v) in doc["metadata"]["annotations"]
                .as_mapping()
                .into_iter()
                .chain(doc["data"].as_mapping())
                .flatten()
            {
                if k.as_str().is_some_and(|k| k.contains("look-alike")) {
                    assert!(v.is_string(), "{file}: {k:?} is {v:?}");
                }
            }
        }
    }
}
