//! A kpt e2e test-case runner, the one the kpt functions catalog runs its examples with
//! (`tests/e2etest/e2e_test.go` of kptdev/krm-functions-catalog calls kpt's `pkg/test/runner`).
//! Go cannot be built here, so its semantics are implemented here, following
//! kptdev/kpt@v1.0.0-beta.67: `pkg/test/runner/config.go` (the `.expected/config.yaml` fields and
//! their defaults), `runner.go` (`runFnEval`, `runFnRender`, `compareResult`, `compareOutput`,
//! `updateExpected`), `util.go` (git and copy helpers) and `e2e/fn_test.go` (`skip`, `runtimes`).
//!
//! The test case's `.expected/config.yaml` is read by [`TestCase`] (tests/common/examples.rs).
//!
//! What kpt's runner does, and so this one:
//! - a test case is a directory with `.expected/`; `config.yaml` is optional (default: render);
//! - it runs `RunCount()` = 2 times, each on a fresh `cp -r` copy in a new temporary directory,
//!   committed to a new git repository; `setup.sh` before and `teardown.sh` after, `exec.sh`
//!   instead of the kpt command (run with bash in the copy);
//! - `testType: render`: `kpt fn render PKG [--results-dir] [-o] [--image-pull-policy]
//!   [--allow-exec] [--allow-alpha-wasm] [--truncate-output=false]`; `testType: eval`:
//!   `kpt fn eval PKG [--results-dir] [-o] [--allow-alpha-wasm] [--image-pull-policy] [--network]
//!   (--image IMG | --exec EXECPATH) [--tag] [--fn-config FNCONFIG] [--include-meta-resources]
//!   [-- k=v ...]`, where `execPath` and `fnConfig` are relative to `.expected/`;
//! - `--results-dir` only when `.expected/results.yaml` exists, which is then compared, trimmed,
//!   with the whole results file kpt wrote (a `FunctionResultList`), after `actualStripLines`;
//! - exit code must equal `exitCode`; stderr (timestamps of `[PASS]`/`[FAIL]` lines set to `0s`,
//!   `stdErrStripLines` removed, temporary-directory prefixes removed) must contain `stdErr` and
//!   match `stdErrRegEx`; stdout must contain `stdOut`;
//! - the diff is `git diff <first commit> HEAD` after committing everything, trimmed, against
//!   `.expected/diff.patch` (both normalized by `diffStripRegEx` when given);
//! - after a failing command (expected, since the exit code matched) the iterations stop;
//! - `KPT_E2E_UPDATE_EXPECTED=true` rewrites `results.yaml` and `diff.patch` from the first
//!   iteration instead of comparing.
//!
//! Fields kpt's runner reads but that change nothing here are accepted and ignored the same way:
//! `sequential` (this runner is sequential), `debug` (keeps the temporary directory), `env` (kpt's
//! runner does not apply it either). `runCount`, described by the catalog's e2e test but ignored by
//! kpt's runner (`RunCount()` is hard-coded to 2), is honoured here when given.

pub use crate::common::examples::TestCase;

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::atomic::{AtomicU64, Ordering};

use serde_yaml::Value;

/// What one kpt command did.
#[derive(Debug)]
pub struct Outcome {
    pub exit_code: i32,
    pub stdout: String,
    pub stderr: String,
    /// The results file kpt wrote, trimmed (empty without `--results-dir` or without a file).
    pub results: String,
    /// `git diff <first commit> HEAD` after committing everything, trimmed.
    pub diff: String,
}

/// The environment the kpt commands run in (the binary's directory first on PATH, a TMPDIR).
#[derive(Debug, Clone)]
pub struct Env {
    pub path: String,
    pub tmp: PathBuf,
}

impl Env {
    fn command(&self, program: &str) -> Command {
        let mut cmd = Command::new(program);
        cmd.env("PATH", &self.path).env("TMPDIR", &self.tmp);
        cmd
    }
}

/// A fresh temporary directory named as kpt's runner names them (`kpt-pipeline-e2e-<digits>`),
/// so that `removeTmpDirPrefix` finds the same prefixes in error messages.
fn temp_dir(env: &Env, prefix: &str) -> PathBuf {
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let n = COUNTER.fetch_add(1, Ordering::Relaxed);
    let dir = env
        .tmp
        .join(format!("{prefix}{}{n:04}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

fn run(cmd: &mut Command) -> (i32, String, String) {
    let out = cmd
        .output()
        .unwrap_or_else(|e| panic!("cannot run {cmd:?}: {e}"));
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

fn git(env: &Env, dir: &Path, args: &[&str]) -> String {
    let (code, stdout, stderr) = run(env.command("git").current_dir(dir).args(args));
    assert_eq!(code, 0, "git {args:?} in {}: {stderr}", dir.display());
    stdout
}

/// kpt's `gitCommit`: identity set in the repository, `--allow-empty`.
fn git_commit(env: &Env, dir: &Path, message: &str) {
    git(env, dir, &["config", "user.name", "none"]);
    git(env, dir, &["config", "user.email", "none"]);
    git(env, dir, &["commit", "-m", message, "--allow-empty"]);
}

/// kpt's `gitDiff`: the environment is replaced by `GIT_DIFF_OPTS=` alone, so no user or global
/// git configuration shapes the diff.
fn git_diff(dir: &Path, from: &str) -> String {
    let git = crate::common::which("git");
    let out = Command::new(git)
        .current_dir(dir)
        .env_clear()
        .env("GIT_DIFF_OPTS", "")
        .args(["diff", from, "HEAD"])
        .output()
        .expect("git diff");
    assert!(out.status.success(), "git diff in {}", dir.display());
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// A package copied (`cp -r`, `.expected` included) into `<tmp>/<name>`, committed.
pub struct Workspace {
    pub tmp: PathBuf,
    pub pkg: PathBuf,
    pub initial_commit: String,
}

impl Workspace {
    pub fn new(env: &Env, case: &TestCase, prefix: &str) -> Workspace {
        let tmp = temp_dir(env, prefix);
        let pkg = tmp.join(case.name());
        let (code, _, stderr) = run(Command::new("cp").arg("-r").arg(&case.path).arg(&pkg));
        assert_eq!(code, 0, "cp: {stderr}");
        git(env, &pkg, &["init", "-q"]);
        git(env, &pkg, &["add", "--all"]);
        git_commit(env, &pkg, "first");
        let initial_commit = git(env, &pkg, &["log", "-n", "1", "--pretty=format:%h"]);
        Workspace {
            tmp,
            pkg,
            initial_commit,
        }
    }

    fn results_dir(&self) -> PathBuf {
        self.tmp.join("results")
    }

    /// Runs `.expected/<script>` with bash in the package, when the case has it.
    fn script(&self, env: &Env, case: &TestCase, script: &str) {
        let path = case.path.join(".expected").join(script);
        if path.is_file() {
            let (code, stdout, stderr) = run(env.command("bash").arg(&path).current_dir(&self.pkg));
            assert_eq!(
                code,
                0,
                "{script} of {} failed:\n{stdout}{stderr}",
                case.name()
            );
        }
    }

    /// Commits everything and returns the trimmed diff against `since`.
    pub fn diff_since(&self, env: &Env, since: &str) -> String {
        git(env, &self.pkg, &["add", "--all"]);
        git_commit(env, &self.pkg, "second");
        git_diff(&self.pkg, since).trim().to_owned()
    }

    pub fn head(&self, env: &Env) -> String {
        git(env, &self.pkg, &["log", "-n", "1", "--pretty=format:%h"])
    }
}

/// The kpt command of a case, as `runFnEval`/`runFnRender` build it (or `exec.sh`).
fn command(env: &Env, case: &TestCase, ws: &Workspace, results: bool) -> Command {
    let c = &case.config;
    let exec_script = case.path.join(".expected/exec.sh");
    if exec_script.is_file() {
        let mut cmd = env.command("bash");
        cmd.arg(exec_script).current_dir(&ws.pkg);
        return cmd;
    }
    let mut cmd = env.command("kpt");
    cmd.env("NO_COLOR", "1");
    let expected = case.path.join(".expected");
    let out_dir = case.path.join("out").is_dir().then(|| ws.pkg.join("out"));
    match c.test_type.as_str() {
        "eval" => {
            cmd.args(["fn", "eval"]).arg(&ws.pkg);
            if results {
                cmd.arg("--results-dir").arg(ws.results_dir());
            }
            if let Some(out) = &out_dir {
                cmd.arg("-o").arg(out);
            }
            if c.allow_wasm {
                cmd.arg("--allow-alpha-wasm");
            }
            if !c.image_pull_policy.is_empty() {
                cmd.args(["--image-pull-policy", &c.image_pull_policy]);
            }
            if c.network {
                cmd.arg("--network");
            }
            if !c.image.is_empty() {
                cmd.args(["--image", &c.image]);
            } else if !c.exec_path.is_empty() {
                cmd.arg("--exec").arg(absolute(&expected, &c.exec_path));
            }
            if !c.tag.is_empty() {
                cmd.args(["--tag", &c.tag]);
            }
            if !c.fn_config.is_empty() {
                cmd.arg("--fn-config")
                    .arg(absolute(&expected, &c.fn_config));
            }
            if c.include_meta_resources {
                cmd.arg("--include-meta-resources");
            }
            let args = crate::common::examples::key_values(&c.args);
            if !args.is_empty() {
                cmd.arg("--").args(args);
            }
        }
        "render" => {
            cmd.args(["fn", "render"]).arg(&ws.pkg);
            if results {
                cmd.arg("--results-dir").arg(ws.results_dir());
            }
            if let Some(out) = &out_dir {
                cmd.arg("-o").arg(out);
            }
            if !c.image_pull_policy.is_empty() {
                cmd.args(["--image-pull-policy", &c.image_pull_policy]);
            }
            if c.allow_exec {
                cmd.arg("--allow-exec");
            }
            if c.allow_wasm {
                cmd.arg("--allow-alpha-wasm");
            }
            if c.disable_output_truncate {
                cmd.arg("--truncate-output=false");
            }
        }
        other => panic!("{}: invalid testType {other:?}", case.name()),
    }
    cmd
}

/// `fromSlashPath`: relative paths are relative to `.expected/`.
fn absolute(base: &Path, path: &str) -> PathBuf {
    let p = Path::new(path);
    if p.is_absolute() {
        p.to_owned()
    } else {
        base.join(p)
    }
}

/// Runs the case's command once in `ws` and collects what kpt's runner compares.
pub fn run_once(env: &Env, case: &TestCase, ws: &Workspace, results: bool) -> Outcome {
    let (exit_code, stdout, stderr) = run(&mut command(env, case, ws, results));
    let results = if results {
        read_results(&ws.results_dir())
    } else {
        String::new()
    };
    let diff = ws.diff_since(env, &ws.initial_commit);
    Outcome {
        exit_code,
        stdout,
        stderr: sanitize_timestamps(&stderr),
        results,
        diff,
    }
}

/// Runs the case's command again on its own output in `ws`: the diff it makes (idempotence).
pub fn rerun_diff(env: &Env, case: &TestCase, ws: &Workspace) -> String {
    let head = ws.head(env);
    let (code, stdout, stderr) = run(&mut command(env, case, ws, false));
    assert_eq!(
        code,
        case.config.exit_code,
        "{}: second run on the output: {stdout}{stderr}",
        case.name()
    );
    ws.diff_since(env, &head)
}

/// `setup.sh` (before) and `teardown.sh` (after), when the case has them.
pub fn setup(env: &Env, case: &TestCase, ws: &Workspace) {
    ws.script(env, case, "setup.sh");
}

/// See [`setup`].
pub fn teardown(env: &Env, case: &TestCase, ws: &Workspace) {
    ws.script(env, case, "teardown.sh");
}

/// `readActualResults`: the only file of the results directory, trimmed.
fn read_results(dir: &Path) -> String {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return String::new();
    };
    let files: Vec<PathBuf> = entries.map(|e| e.unwrap().path()).collect();
    assert!(files.len() <= 1, "more than one results file in {dir:?}");
    files
        .first()
        .map(|f| std::fs::read_to_string(f).unwrap().trim().to_owned())
        .unwrap_or_default()
}

/// `sanitizeTimestamps`: `[PASS] "fn" in 1.2s` becomes `[PASS] "fn" in 0s`.
pub fn sanitize_timestamps(stderr: &str) -> String {
    stderr
        .split('\n')
        .map(|line| {
            let tokens: Vec<&str> = line.split_whitespace().collect();
            if (line.starts_with("[PASS]") || line.starts_with("[FAIL]"))
                && tokens.len() == 4
                && tokens[2] == "in"
            {
                format!("{} {} in 0s", tokens[0], tokens[1])
            } else {
                line.to_owned()
            }
        })
        .collect::<Vec<_>>()
        .join("\n")
}

fn strip_lines(text: &str, lines: &[String]) -> String {
    let mut out = text.to_owned();
    for line in lines {
        out = out.replace(&format!("{line}\n"), "");
    }
    out
}

/// `removeTmpDirPrefix`.
fn remove_tmp_dir_prefix(stderr: &str) -> String {
    regex::Regex::new(r"/?\w+/kpt-pipeline-e2e-\d+/")
        .unwrap()
        .replace_all(stderr, "")
        .into_owned()
}

/// `normalizeDiff`.
fn normalize_diff(diff: &str, strip: &str) -> String {
    let strip = regex::Regex::new(strip).expect("diffStripRegEx");
    let index = regex::Regex::new(r"^index [0-9a-f]+\.\.[0-9a-f]+").unwrap();
    let hunk = regex::Regex::new(r"^@@ -\d+,\d+ \+\d+,\d+ @@").unwrap();
    diff.split('\n')
        .filter(|l| !strip.is_match(l))
        .map(|l| {
            let l = index.replace(l, "index NORMALIZED");
            hunk.replace(&l, "@@ NORMALIZED @@").into_owned()
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// The expected files (`newExpected`): missing files are empty, contents trimmed.
pub fn expected_file(case: &TestCase, name: &str) -> String {
    std::fs::read_to_string(case.path.join(".expected").join(name))
        .map(|t| t.trim().to_owned())
        .unwrap_or_default()
}

/// `compareResult` and `compareOutput`: `Err` with kpt's message when something differs.
pub fn compare(case: &TestCase, out: &Outcome) -> Result<(), String> {
    let c = &case.config;
    if out.exit_code != c.exit_code {
        return Err(format!(
            "actual exit code {} doesn't match expected {}\nstdout: {}\nstderr: {}",
            out.exit_code, c.exit_code, out.stdout, out.stderr
        ));
    }
    let stderr = remove_tmp_dir_prefix(&strip_lines(&out.stderr, &c.std_err_strip_lines));
    if !stderr.contains(&c.std_err) {
        return Err(format!("wanted stderr {:?}, got {stderr:?}", c.std_err));
    }
    if !c.std_err_reg_ex.is_empty() {
        let re = regex::Regex::new(&c.std_err_reg_ex).map_err(|e| e.to_string())?;
        if !re.is_match(&stderr) {
            return Err(format!(
                "unable to match regular expression {:?}, got {stderr}",
                c.std_err_reg_ex
            ));
        }
    }
    if !out.stdout.contains(&c.std_out) {
        return Err(format!(
            "wanted stdout {:?}, got {:?}",
            c.std_out, out.stdout
        ));
    }
    let actual = strip_lines(&out.results, &c.actual_strip_lines);
    if case.is_previous_layout() {
        let want: Value = serde_yaml::from_str(&expected_file(case, "results.yaml")).unwrap();
        let got = crate::common::results_of(&actual);
        if got != want {
            return Err(format!(
                "actual results don't match expected\nActual\n===\n{}",
                serde_yaml::to_string(&got).unwrap()
            ));
        }
    } else if actual != expected_file(case, "results.yaml") {
        return Err(format!(
            "actual results doesn't match expected\nActual\n===\n{actual}"
        ));
    }
    let (mut actual, mut want) = (out.diff.clone(), expected_file(case, "diff.patch"));
    if !c.diff_strip_reg_ex.is_empty() {
        actual = normalize_diff(&actual, &c.diff_strip_reg_ex);
        want = normalize_diff(&want, &c.diff_strip_reg_ex);
    }
    if actual != want {
        return Err(format!(
            "actual diff doesn't match expected\nActual\n===\n{actual}"
        ));
    }
    Ok(())
}

/// True when `KPT_E2E_UPDATE_EXPECTED=true` (kpt's switch) or `UPDATE_EXPECTED=1` (this
/// repository's) is set.
pub fn updating() -> bool {
    std::env::var("KPT_E2E_UPDATE_EXPECTED").is_ok_and(|v| v.eq_ignore_ascii_case("true"))
        || std::env::var("UPDATE_EXPECTED").is_ok_and(|v| v == "1")
}

/// `updateExpected`, writing `diff.patch` always (empty when nothing changes) and
/// `results.yaml` from kpt's results file. A package in the previous layout is moved to the
/// catalog layout: `testType` and `allowExec` are added to its `config.yaml`.
pub fn update_expected(case: &TestCase, out: &Outcome) {
    let dir = case.path.join(".expected");
    std::fs::create_dir_all(&dir).unwrap();
    if !out.results.is_empty() {
        std::fs::write(dir.join("results.yaml"), format!("{}\n", out.results)).unwrap();
    }
    let diff = if out.diff.is_empty() {
        String::new()
    } else {
        format!("{}\n", out.diff)
    };
    std::fs::write(dir.join("diff.patch"), diff).unwrap();
    if !case.test_type_given {
        let file = dir.join("config.yaml");
        let old = std::fs::read_to_string(&file).unwrap_or_default();
        let mut text = String::from("testType: render\nallowExec: true\n");
        text.push_str(old.trim_start_matches("{}\n"));
        std::fs::write(&file, text).unwrap();
    }
}
