//! node running the module with the very glue kpt writes, and panics (through node and kpt).

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;

use crate::common::examples::{TestCase, key_values};
use crate::common::{self, Run, diff_and_commit, package_copy, run_cmd, run_with_stdin};
use crate::{kpt_wasm, module, run_bounded, scratch};

/// The script kpt writes for the node runtime (Go's `wasm_exec.js` followed by kpt's glue), taken
/// from a real `kpt fn eval` run.
fn kpt_glue() -> &'static str {
    static GLUE: OnceLock<String> = OnceLock::new();
    GLUE.get_or_init(|| {
        let scratch = scratch("glue");
        let tmp = scratch.path();
        let package = tmp.join("package");
        std::fs::create_dir_all(&package).unwrap();
        std::fs::write(
            package.join("cm.yaml"),
            "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a\n",
        )
        .unwrap();
        let mut cmd = kpt_wasm(tmp);
        cmd.args(["fn", "eval"])
            .arg(&package)
            .args(["--allow-alpha-wasm", "--exec"])
            .arg(module())
            .args(["--", "mode=load-balancer-announcer", "announcer=metallb"]);
        let run = run_bounded(&cmd, 120);
        assert_eq!(run.code, 0, "kpt: {}", run.stderr);
        let dirs: Vec<PathBuf> = std::fs::read_dir(tmp.join("kpt-wasm-fn"))
            .expect("kpt wrote its node files under $TMPDIR/kpt-wasm-fn")
            .map(|e| e.unwrap().path())
            .collect();
        assert_eq!(dirs.len(), 1, "one node directory per run: {dirs:?}");
        std::fs::read_to_string(dirs[0].join("kpt-fn-wasm-glue-runner.js")).unwrap()
    })
}

/// Where kpt's glue script starts, after Go's `wasm_exec.js` (kpt's `jsglue.go`).
const GLUE_START: &str = "// The code below run the wasm function.";

/// Runs `script` with node as kpt does: `KPT_FN_WASM_PATH` in the environment, and nothing else
/// but the `PATH` that finds node.
fn node(script: &str, tmp: &Path, input: &[u8]) -> Run {
    let path = tmp.join("runner.js");
    std::fs::write(&path, script).unwrap();
    let mut cmd = Command::new("timeout");
    cmd.args(["120", "node"])
        .arg(&path)
        .env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .env("KPT_FN_WASM_PATH", module());
    let run = run_with_stdin(cmd, input);
    assert_ne!(run.code, 124, "node ran longer than 120 s");
    run
}

#[test]
fn node_with_kpts_glue_gives_what_the_exec_binary_gives() {
    let glue = kpt_glue();
    assert!(glue.contains(GLUE_START) && glue.contains("processResourceList(rl)"));
    let tmp = scratch("node");
    let tmp = tmp.path();
    let mut inputs: Vec<PathBuf> = ["valid", "errors"]
        .iter()
        .flat_map(|d| std::fs::read_dir(common::root().join("tests/inputs").join(d)).unwrap())
        .map(|e| e.unwrap().path())
        .collect();
    inputs.sort();
    let mut failed = 0;
    for input in &inputs {
        let bytes = std::fs::read(input).unwrap();
        let wasm = node(glue, tmp, &bytes);
        // The glue reads stdin as UTF-8 text (invalid bytes become U+FFFD): the module sees that.
        let native = common::run_fn(String::from_utf8_lossy(&bytes).as_bytes());
        let name = input.display();
        assert_eq!(wasm.code, native.code, "{name}: exit code\n{}", wasm.stderr);
        assert_eq!(wasm.stderr, native.stderr, "{name}: stderr");
        // console.log adds a newline; without a ResourceList the glue prints the diagnostics.
        let want = if native.stdout.is_empty() {
            format!("{}\n", native.stderr)
        } else {
            format!("{}\n", native.stdout_str())
        };
        assert_eq!(wasm.stdout_str(), want, "{name}: stdout");
        failed += usize::from(native.code != 0);
    }
    assert!(
        failed > 0 && failed < inputs.len(),
        "inputs cover both outcomes"
    );
}

#[test]
fn a_panic_is_reported_and_node_exits_non_zero_without_hanging() {
    let glue = kpt_glue();
    let wasm_exec = &glue[..glue.find(GLUE_START).expect("kpt's glue marker")];
    // Calls a function id the module never registered: its `resume` panics on that.
    let script = format!(
        "{wasm_exec}\nconst go = new Go();\n\
         WebAssembly.instantiate(fs.readFileSync(process.env.KPT_FN_WASM_PATH), go.importObject)\n\
         .then((result) => {{ go.run(result.instance); go._makeFuncWrapper(99)('x'); }});\n"
    );
    let run = node(&script, scratch("panic").path(), b"");
    assert_ne!(run.code, 0, "{}", run.stderr);
    assert!(
        run.stderr
            .starts_with("cutover: internal error (panic): call of an unknown function id 99"),
        "{}",
        run.stderr
    );
    assert!(
        run.stderr.contains("RuntimeError: unreachable"),
        "{}",
        run.stderr
    );
    assert_eq!(run.stdout_str(), "");
}

#[test]
fn a_panic_fails_the_kpt_step_without_hanging() {
    let tmp = scratch("kpt-panic");
    let tmp = tmp.path();
    // kpt runs `node` from PATH with an empty environment: a `node` first on PATH that preloads a
    // script shifting the ids of the functions the module registers makes kpt's own call of
    // `processResourceList` reach an id the module does not know, and panic.
    let real_node = run_cmd(Command::new("sh").args(["-c", "command -v node"]));
    let real_node = real_node.stdout_str().trim();
    assert!(!real_node.is_empty(), "node on PATH");
    let preload = tmp.join("shift-ids.js");
    std::fs::write(
        &preload,
        "let Go;\nObject.defineProperty(globalThis, 'Go', {\n  get() { return Go; },\n  \
         set(cls) { Go = class extends cls { _makeFuncWrapper(id) { return super._makeFuncWrapper(id + 100); } }; },\n});\n",
    )
    .unwrap();
    let bin = tmp.join("bin");
    std::fs::create_dir_all(&bin).unwrap();
    let wrapper = bin.join("node");
    std::fs::write(
        &wrapper,
        format!(
            "#!/bin/sh\nexec {real_node} --require {} \"$@\"\n",
            preload.display()
        ),
    )
    .unwrap();
    let mut perms = std::fs::metadata(&wrapper).unwrap().permissions();
    std::os::unix::fs::PermissionsExt::set_mode(&mut perms, 0o755);
    std::fs::set_permissions(&wrapper, perms).unwrap();

    let example = common::root().join("examples/announcer-cozystack-cutover");
    let (_guard, dir) = package_copy(&example);
    let mut cmd = kpt_wasm(tmp);
    cmd.env(
        "PATH",
        format!(
            "{}:{}",
            bin.display(),
            std::env::var("PATH").unwrap_or_default()
        ),
    )
    .args(["fn", "eval"])
    .arg(&dir)
    .args(["--allow-alpha-wasm", "--exec"])
    .arg(module())
    .arg("--")
    .args(key_values(&TestCase::load(&example).config.args));
    let run = run_bounded(&cmd, 120);
    assert_eq!(run.code, 1, "{}", run.stderr);
    assert!(run.stderr.contains("[FAIL]"), "{}", run.stderr);
    assert!(
        run.stderr
            .contains("cutover: internal error (panic): call of an unknown function id 101"),
        "{}",
        run.stderr
    );
    assert_eq!(diff_and_commit(&dir), "", "a failed step changes no file");
}
