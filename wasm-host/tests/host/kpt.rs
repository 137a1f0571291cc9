//! The host as kpt runs it: `kpt fn eval --exec "cutover-wasm --module cutover.wasm"` changes
//! every example package (and the host's fixture) exactly as `kpt fn eval --exec cutover` does,
//! and kpt reports the same results and exit code.

use std::path::Path;
use std::process::Command;

use crate::common::{Package, host, native, packages, root, shared_cache, temp_dir};

/// Copies a package directory (files and subdirectories).
fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        let target = to.join(entry.file_name());
        if entry.file_type().unwrap().is_dir() {
            copy_dir(&entry.path(), &target);
        } else {
            std::fs::copy(entry.path(), &target).unwrap();
        }
    }
}

/// Relative path and contents of every file of a package.
type Files = Vec<(String, Vec<u8>)>;

/// All files under `dir` with their contents, sorted by relative path.
fn tree(dir: &Path) -> Files {
    let mut files = Vec::new();
    let mut pending = vec![dir.to_path_buf()];
    while let Some(d) = pending.pop() {
        for entry in std::fs::read_dir(&d).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                pending.push(path);
            } else {
                let rel = path.strip_prefix(dir).unwrap().display().to_string();
                files.push((rel, std::fs::read(&path).unwrap()));
            }
        }
    }
    files.sort();
    files
}

/// Runs `kpt fn eval` with `exec` on a fresh copy of `package`; returns the exit code, kpt's
/// report with the exec string and durations taken out, and the resulting files.
fn eval(package: &Package, scratch: &Path, exec: &str) -> (Option<i32>, String, Files) {
    let copy = scratch.join("package");
    let _ = std::fs::remove_dir_all(&copy);
    copy_dir(&package.dir, &copy);
    let out = Command::new("kpt")
        .args(["fn", "eval"])
        .arg(&copy)
        .args(["--exec", exec, "--fn-config"])
        .arg(&package.fn_config)
        .env("CUTOVER_WASM_CACHE_DIR", shared_cache())
        .output()
        .expect("kpt is needed for this test (scripts/install-deps.sh checks for it)");
    let report = String::from_utf8_lossy(&out.stderr)
        .replace(exec, "FN")
        .lines()
        // "[PASS] "FN" in 1.2s": the duration differs between runs.
        .map(|line| line.split(" in ").next().unwrap_or(line).to_owned())
        .collect::<Vec<_>>()
        .join("\n");
    (out.status.code(), report, tree(&copy))
}

#[test]
fn kpt_fn_eval_exec_through_the_host_matches_the_native_binary() {
    let module = crate::common::module();
    let wasm_exec = format!("{} --module {}", host().display(), module.display());
    let native_exec = native().display().to_string();
    let scratch = temp_dir("kpt");
    let mut changed = 0;
    for package in packages() {
        let name = package.dir.display().to_string();
        let (native_code, native_report, native_files) = eval(&package, &scratch, &native_exec);
        let (wasm_code, wasm_report, wasm_files) = eval(&package, &scratch, &wasm_exec);
        assert!(
            native_report.contains("[RUNNING] \"FN\""),
            "{name}: kpt did not run the function:\n{native_report}"
        );
        assert_eq!(wasm_code, native_code, "{name}: exit code");
        assert_eq!(wasm_report, native_report, "{name}: kpt report");
        assert!(wasm_files == native_files, "{name}: resulting files differ");
        if native_files != tree(&package.dir) {
            changed += 1;
        }
    }
    // Parity on runs that only report would prove less: some example must change its package.
    assert!(
        changed > 0 || !root().join("examples").is_dir(),
        "no package was changed by the function"
    );
}
