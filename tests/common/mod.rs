//! Shared helpers for the integration tests: running the built binary, real kpt, package
//! copies with git diffs, and schema checks of emitted objects.
#![allow(dead_code)] // each test crate uses a different subset

pub mod crd;
pub mod examples;
pub mod json_schema;
pub mod k8s;
pub mod lean_read;
pub mod prepull;
pub mod transitions;

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use serde_yaml::Value;

/// What a process did.
#[derive(Debug)]
pub struct Run {
    pub stdout: Vec<u8>,
    pub stderr: String,
    pub code: i32,
}

impl Run {
    pub fn stdout_str(&self) -> &str {
        std::str::from_utf8(&self.stdout).expect("stdout is UTF-8")
    }
    /// The stdout ResourceList, parsed.
    pub fn resource_list(&self) -> Value {
        serde_yaml::from_slice(&self.stdout).unwrap_or_else(|e| {
            panic!(
                "stdout is not YAML ({e}):\n{}",
                String::from_utf8_lossy(&self.stdout)
            )
        })
    }
    /// The results written by the function.
    pub fn results(&self) -> Vec<Value> {
        self.resource_list()["results"]
            .as_sequence()
            .cloned()
            .unwrap_or_default()
    }
    /// The results of severity `error`.
    pub fn errors(&self) -> Vec<Value> {
        self.results()
            .into_iter()
            .filter(|r| r["severity"] == "error")
            .collect()
    }
}

/// The `check` tags of the engine's own results (README, "Result tags"): the function config,
/// an edit the engine cannot apply, an input item that is not a KRM resource.
pub const ENGINE_CHECKS: [&str; 3] = [
    cutover::config::CHECK,
    cutover::function::ENGINE_CHECK,
    cutover::krm::io::KRM_ITEM_CHECK,
];

/// Asserts that every result of a `LoadBalancerAnnouncer` run carries a `check` that the mode's
/// documentation lists ([`cutover::modes::announcer::Check::ALL`], tested against the doc) or
/// one of the engine's own: operators filter results by it.
#[allow(dead_code)] // not every test crate runs the announcer
pub fn assert_announcer_checks(run: &Run) {
    let documented: Vec<&str> = cutover::modes::announcer::Check::ALL
        .iter()
        .map(|c| c.as_str())
        .collect();
    assert_checks(
        run,
        &documented,
        "docs/modes/load-balancer-announcer.md, Results",
    );
}

/// The same for a `Capm3OSImageSources` run ([`cutover::modes::capm3::Check::ALL`]).
#[allow(dead_code)] // not every test crate runs the capm3 mode
pub fn assert_capm3_checks(run: &Run) {
    let documented: Vec<&str> = cutover::modes::capm3::Check::ALL
        .iter()
        .map(|c| c.as_str())
        .collect();
    assert_checks(
        run,
        &documented,
        "docs/modes/capm3-os-image-sources.md, Checks",
    );
}

/// The same for a `MetalLBImagePrepull` run ([`cutover::modes::prepull::Check::ALL`]).
#[allow(dead_code)] // not every test crate runs the prepull mode
pub fn assert_prepull_checks(run: &Run) {
    assert_checks(
        run,
        &documented_checks("metallb-image-prepull").expect("a mode"),
        "docs/modes/metallb-image-prepull.md, Results",
    );
}

/// The checks a mode's documentation lists, by the mode's `mode` tag (each list is tested
/// against its doc); `None` for a name that is no mode.
#[allow(dead_code)]
pub fn documented_checks(mode: &str) -> Option<Vec<&'static str>> {
    use cutover::modes::{announcer, capm3, prepull};
    Some(match mode {
        "metallb-image-prepull" => prepull::Check::ALL.iter().map(|c| c.as_str()).collect(),
        "load-balancer-announcer" => announcer::Check::ALL.iter().map(|c| c.as_str()).collect(),
        "capm3-os-image-sources" => capm3::Check::ALL.iter().map(|c| c.as_str()).collect(),
        _ => return None,
    })
}

/// Asserts that every result of a run carries a `check` that its mode's doc lists (by the
/// result's `mode` tag), or one of the engine's own.
#[allow(dead_code)]
pub fn assert_documented_checks(run: &Run) {
    for r in run.results() {
        let check = r["tags"]["check"]
            .as_str()
            .unwrap_or_else(|| panic!("a result without a check tag: {r:?}"));
        let documented = r["tags"]["mode"]
            .as_str()
            .map(|mode| documented_checks(mode).unwrap_or_else(|| panic!("unknown mode {mode:?}")))
            .unwrap_or_default();
        assert!(
            documented.contains(&check) || ENGINE_CHECKS.contains(&check),
            "check {check:?} is not documented: {r:?}"
        );
    }
}

#[allow(dead_code)]
fn assert_checks(run: &Run, documented: &[&str], doc: &str) {
    if run.stdout.is_empty() {
        return;
    }
    for r in run.results() {
        let check = r["tags"]["check"]
            .as_str()
            .unwrap_or_else(|| panic!("a result without a check tag: {r:?}"));
        assert!(
            documented.contains(&check) || ENGINE_CHECKS.contains(&check),
            "check {check:?} is not documented ({doc}): {r:?}"
        );
    }
}

/// Repository root.
pub fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// The function binary built by cargo for this test run.
pub fn bin() -> PathBuf {
    PathBuf::from(env!("CARGO_BIN_EXE_cutover"))
}

/// Runs the function binary with `input` on stdin.
pub fn run_fn(input: &[u8]) -> Run {
    run_with_stdin(Command::new(bin()), input)
}

/// Runs a command with the given stdin.
pub fn run_with_stdin(mut cmd: Command, input: &[u8]) -> Run {
    let mut child = cmd
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn");
    let mut stdin = child.stdin.take().unwrap();
    let input = input.to_vec();
    let writer = std::thread::spawn(move || {
        let _ = stdin.write_all(&input);
    });
    let out = child.wait_with_output().expect("wait");
    writer.join().unwrap();
    Run {
        stdout: out.stdout,
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
        code: out.status.code().unwrap_or(-1),
    }
}

/// Runs a command to completion.
pub fn run_cmd(cmd: &mut Command) -> Run {
    let out = cmd
        .output()
        .unwrap_or_else(|e| panic!("cannot run {cmd:?}: {e}"));
    Run {
        stdout: out.stdout,
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
        code: out.status.code().unwrap_or(-1),
    }
}

/// Absolute path of a program on PATH.
pub fn which(program: &str) -> PathBuf {
    std::env::var("PATH")
        .unwrap_or_default()
        .split(':')
        .map(|d| Path::new(d).join(program))
        .find(|p| p.is_file())
        .unwrap_or_else(|| panic!("{program} not on PATH"))
}

/// `$PATH` with the directory of this build's binary first, so that a Kptfile's `exec: cutover`
/// runs this build.
pub fn path_with_bin() -> String {
    format!(
        "{}:{}",
        bin().parent().unwrap().display(),
        std::env::var("PATH").unwrap_or_default()
    )
}

/// A `kpt` command with a clean environment for deterministic output.
pub fn kpt() -> Command {
    let mut cmd = Command::new("kpt");
    cmd.env("NO_COLOR", "1");
    cmd
}

/// `kpt fn eval <dir> --exec <this build's binary> --results-dir <tmp> <args>`: what kpt did, and
/// the function's results from the results file kpt wrote (none when it wrote none).
pub fn kpt_eval<S: AsRef<std::ffi::OsStr>>(dir: &Path, args: &[S]) -> (Run, Vec<Value>) {
    let results = tempfile::tempdir().unwrap();
    let run = run_cmd(
        kpt()
            .args(["fn", "eval"])
            .arg(dir)
            .arg("--exec")
            .arg(bin())
            .arg("--results-dir")
            .arg(results.path())
            .args(args),
    );
    let found = results_from(results.path()).as_sequence().cloned().unwrap();
    (run, found)
}

/// The results of every function in a kpt results file (`FunctionResultList`), in order.
pub fn results_of(results_file: &str) -> Value {
    let list: Value = serde_yaml::from_str(results_file).unwrap_or(Value::Null);
    let all = list
        .get("items")
        .and_then(Value::as_sequence)
        .into_iter()
        .flatten()
        .flat_map(|item| {
            item.get("results")
                .and_then(Value::as_sequence)
                .cloned()
                .unwrap_or_default()
        })
        .collect();
    Value::Sequence(all)
}

/// [`results_of`] the `results.yaml` kpt wrote into a `--results-dir` (none when it wrote none).
pub fn results_from(dir: &Path) -> Value {
    results_of(&std::fs::read_to_string(dir.join("results.yaml")).unwrap_or_default())
}

/// Copies a package directory into a fresh temporary directory (returns the guard and the path
/// of the copy) and commits it in a throwaway git repository so changes show as a diff.
pub fn package_copy(src: &Path) -> (tempfile::TempDir, PathBuf) {
    let tmp = tempfile::tempdir().unwrap();
    let dst = tmp.path().join(src.file_name().unwrap());
    copy_dir(src, &dst);
    git(&dst, &["init", "-q"]);
    git(&dst, &["add", "-A"]);
    commit(&dst, "input");
    (tmp, dst)
}

/// `git add -A && git diff --cached` in a package copy, then commits, so the next call shows only
/// later changes.
pub fn diff_and_commit(dir: &Path) -> String {
    git(dir, &["add", "-A"]);
    let diff = git(
        dir,
        &[
            "diff",
            "--cached",
            "--no-color",
            "--no-ext-diff",
            "--src-prefix=a/",
            "--dst-prefix=b/",
        ],
    );
    commit(dir, "run");
    diff
}

/// Commits everything staged (or nothing) with a throwaway identity.
fn commit(dir: &Path, message: &str) {
    let args = [
        "-c",
        "user.name=t",
        "-c",
        "user.email=t@t",
        "commit",
        "-qm",
        message,
        "--allow-empty",
    ];
    git(dir, &args);
}

fn git(dir: &Path, args: &[&str]) -> String {
    let out = Command::new("git")
        .arg("-C")
        .arg(dir)
        .args(args)
        .output()
        .expect("git");
    assert!(
        out.status.success(),
        "git {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

/// Recursive copy.
pub fn copy_dir(src: &Path, dst: &Path) {
    std::fs::create_dir_all(dst).unwrap();
    for entry in std::fs::read_dir(src).unwrap() {
        let entry = entry.unwrap();
        let to = dst.join(entry.file_name());
        if entry.file_type().unwrap().is_dir() {
            copy_dir(&entry.path(), &to);
        } else {
            std::fs::copy(entry.path(), &to).unwrap();
        }
    }
}

/// Every document of every YAML file below `dir` (skipping `.expected`), with its relative path.
pub fn package_objects(dir: &Path) -> Vec<(String, Value)> {
    let mut out = Vec::new();
    walk(dir, dir, &mut out);
    out.sort_by(|a, b| a.0.cmp(&b.0));
    out
}

fn walk(root: &Path, dir: &Path, out: &mut Vec<(String, Value)>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        let name = path.file_name().unwrap().to_string_lossy().into_owned();
        if name.starts_with('.') {
            continue;
        }
        if path.is_dir() {
            walk(root, &path, out);
        } else if name.ends_with(".yaml") || name.ends_with(".yml") || name == "Kptfile" {
            let rel = path
                .strip_prefix(root)
                .unwrap()
                .to_string_lossy()
                .into_owned();
            let text = std::fs::read_to_string(&path).unwrap();
            for doc in serde_yaml::Deserializer::from_str(&text) {
                let v = Value::deserialize_any(doc);
                if !v.is_null() {
                    out.push((rel.clone(), v));
                }
            }
        }
    }
}

trait DeserializeAny {
    fn deserialize_any(de: serde_yaml::Deserializer<'_>) -> Value;
}

impl DeserializeAny for Value {
    fn deserialize_any(de: serde_yaml::Deserializer<'_>) -> Value {
        serde::Deserialize::deserialize(de).expect("YAML document")
    }
}

/// A ResourceList text with the given items (YAML strings) and function config.
pub fn resource_list(items: &[&str], function_config: Option<&str>) -> String {
    let mut s = String::from("apiVersion: config.kubernetes.io/v1\nkind: ResourceList\n");
    if items.is_empty() {
        s.push_str("items: []\n");
    } else {
        s.push_str("items:\n");
        for item in items {
            s.push_str(&indent_item(item));
        }
    }
    if let Some(fc) = function_config {
        s.push_str("functionConfig:\n");
        for line in fc.lines() {
            s.push_str(&format!("  {line}\n"));
        }
    }
    s
}

/// `item` (a YAML document) as an entry of a block items list.
pub fn indent_item(item: &str) -> String {
    let mut out = String::new();
    for (i, line) in item.lines().enumerate() {
        out.push_str(if i == 0 { "- " } else { "  " });
        out.push_str(line);
        out.push('\n');
    }
    out
}

/// Parses a YAML text (a test's inline object).
pub fn yaml(src: &str) -> Value {
    serde_yaml::from_str(src).unwrap()
}

/// The items of a ResourceList.
pub fn items(list: &Value) -> &Vec<Value> {
    list["items"].as_sequence().expect("items")
}

/// The item of `kind` and `name` of a ResourceList.
pub fn find<'a>(list: &'a Value, kind: &str, name: &str) -> &'a Value {
    items(list)
        .iter()
        .find(|i| i["kind"] == kind && i["metadata"]["name"] == name)
        .unwrap_or_else(|| panic!("no {kind} {name}"))
}

/// Runs the function binary on a ResourceList.
pub fn run_list(list: &Value) -> Run {
    run_fn(serde_yaml::to_string(list).unwrap().as_bytes())
}

/// The ResourceList output of a run that must succeed (exit 0).
pub fn ok(list: &Value) -> Value {
    let run = run_list(list);
    assert_eq!(
        run.code,
        0,
        "stderr: {}\nstdout: {}",
        run.stderr,
        run.stdout_str()
    );
    assert_documented_checks(&run);
    run.resource_list()
}

/// The error results of a run on a ResourceList that must be refused: exit 1, the items as
/// they came in.
pub fn refused(list: &Value) -> Vec<Value> {
    let run = run_list(list);
    assert_eq!(run.code, 1, "{}", run.stderr);
    assert_eq!(
        run.resource_list()["items"],
        list["items"],
        "items unchanged on error"
    );
    assert_documented_checks(&run);
    run.errors()
}

/// Sets the value at a path of mapping keys, creating the mappings on the way.
pub fn set_path(v: &mut Value, path: &[&str], value: Value) {
    let (last, parents) = path.split_last().expect("a non-empty path");
    let mut cur = v;
    for key in parents {
        cur = cur
            .as_mapping_mut()
            .expect("mapping")
            .entry(Value::from(*key))
            .or_insert_with(|| Value::Mapping(serde_yaml::Mapping::new()));
    }
    cur.as_mapping_mut()
        .expect("mapping")
        .insert(Value::from(*last), value);
}

/// A ResourceList with `functionConfig.spec.<key>` set.
pub fn with_spec(mut list: Value, key: &str, value: Value) -> Value {
    set_path(&mut list, &["functionConfig", "spec", key], value);
    list
}

/// A ResourceList whose item of `kind` and `name` is changed by `f`.
pub fn edit_item(mut list: Value, kind: &str, name: &str, f: impl FnOnce(&mut Value)) -> Value {
    let item = list["items"]
        .as_sequence_mut()
        .expect("items")
        .iter_mut()
        .find(|i| i["kind"] == kind && i["metadata"]["name"] == name)
        .unwrap_or_else(|| panic!("no {kind} {name}"));
    f(item);
    list
}

/// `kpt fn source examples/<name> --fn-config examples/<name>/fn-config.yaml`: the ResourceList
/// kpt itself builds for an example.
pub fn example_source(name: &str) -> Value {
    let dir = root().join("examples").join(name);
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
