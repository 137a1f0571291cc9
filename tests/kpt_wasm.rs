//! The module for kpt's own WebAssembly runtime (crate `kpt-wasm/`, docs/wasm.md), layer by
//! layer, so a failure says which one broke:
//!
//! 1. its shape: the imports and exports of Go's `js/wasm` ABI, parsed without kpt;
//! 2. node running it with the very glue kpt writes (taken from a kpt run, not copied here);
//! 3. real kpt (`KPT_FN_WASM_RUNTIME=nodejs`, `--allow-alpha-wasm`), eval and render, against the
//!    exec binary on every example.
//!
//! The module is built (`cargo build --target wasm32-unknown-unknown --release -p
//! cutover-kpt-wasm`, a no-op when it is up to date) unless `CUTOVER_KPT_WASM_MODULE` names one.
//! kpt leaves a directory per wasm run in `$TMPDIR`: every kpt and node run here gets a `TMPDIR`
//! under `target/kpt-wasm-tests/`.

mod common;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;

use common::examples::{examples, expected, results_from};
use common::{Run, diff_and_commit, kpt, package_copy, run_cmd, run_with_stdin};
use serde_yaml::Value;

/// The release module, built for this test run.
fn module() -> &'static Path {
    static MODULE: OnceLock<PathBuf> = OnceLock::new();
    MODULE.get_or_init(|| {
        if let Some(path) = std::env::var_os("CUTOVER_KPT_WASM_MODULE") {
            return PathBuf::from(path);
        }
        let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
        let args = [
            "build",
            "--target",
            "wasm32-unknown-unknown",
            "--release",
            "-p",
            "cutover-kpt-wasm",
        ];
        let run = run_cmd(Command::new(&cargo).args(args).current_dir(common::root()));
        assert_eq!(run.code, 0, "cargo {}:\n{}", args.join(" "), run.stderr);
        let path = target_dir().join("wasm32-unknown-unknown/release/cutover_kpt.wasm");
        assert!(path.is_file(), "{} was not built", path.display());
        path
    })
}

fn target_dir() -> PathBuf {
    std::env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| common::root().join("target"))
}

/// A fresh directory under `target/kpt-wasm-tests/` (a `TMPDIR` for kpt and node), removed
/// when dropped.
fn scratch(name: &str) -> tempfile::TempDir {
    let parent = target_dir().join("kpt-wasm-tests");
    std::fs::create_dir_all(&parent).unwrap();
    tempfile::Builder::new()
        .prefix(&format!("{name}-"))
        .tempdir_in(parent)
        .unwrap()
}

/// `kpt` set up for the node runtime, with its temporary files in `tmp`.
fn kpt_wasm(tmp: &Path) -> Command {
    let mut cmd = kpt();
    cmd.env("KPT_FN_WASM_RUNTIME", "nodejs").env("TMPDIR", tmp);
    cmd
}

/// Runs `cmd` under coreutils' `timeout`: a hang fails the test (exit 124) instead of stalling it.
fn run_bounded(cmd: &Command, secs: u32) -> Run {
    let mut bounded = Command::new("timeout");
    bounded.arg(secs.to_string()).arg(cmd.get_program());
    bounded.args(cmd.get_args());
    for (k, v) in cmd.get_envs() {
        match v {
            Some(v) => bounded.env(k, v),
            None => bounded.env_remove(k),
        };
    }
    if let Some(dir) = cmd.get_current_dir() {
        bounded.current_dir(dir);
    }
    let run = run_cmd(&mut bounded);
    assert_ne!(run.code, 124, "{cmd:?} ran longer than {secs} s");
    run
}

// ---------------------------------------------------------------------------------------------
// 1. Shape

#[test]
fn module_speaks_gos_js_wasm_abi_and_nothing_else() {
    use wasmparser::{ExternalKind, Parser, Payload, TypeRef, ValType};

    let bytes = std::fs::read(module()).unwrap();
    assert!(
        bytes.len() < 3 << 20,
        "module is {} bytes, over the 3 MiB budget",
        bytes.len()
    );
    wasmparser::Validator::new()
        .validate_all(&bytes)
        .expect("a valid module");

    // Function types by index, then imports and exports with their types.
    let mut types: Vec<(Vec<ValType>, Vec<ValType>)> = Vec::new();
    let mut func_types: Vec<u32> = Vec::new();
    let mut imports: Vec<(String, String, u32)> = Vec::new();
    let mut exports: Vec<(String, ExternalKind, u32)> = Vec::new();
    for payload in Parser::new(0).parse_all(&bytes) {
        match payload.unwrap() {
            Payload::TypeSection(reader) => {
                for ty in reader.into_iter_err_on_gc_types() {
                    let ty = ty.unwrap();
                    types.push((ty.params().to_vec(), ty.results().to_vec()));
                }
            }
            Payload::ImportSection(reader) => {
                for import in reader.into_imports() {
                    let import = import.unwrap();
                    let TypeRef::Func(ty) = import.ty else {
                        panic!("import {}.{} is not a function", import.module, import.name);
                    };
                    imports.push((import.module.into(), import.name.into(), ty));
                    func_types.push(ty);
                }
            }
            Payload::FunctionSection(reader) => {
                for ty in reader {
                    func_types.push(ty.unwrap());
                }
            }
            Payload::ExportSection(reader) => {
                for export in reader {
                    let export = export.unwrap();
                    exports.push((export.name.into(), export.kind, export.index));
                }
            }
            _ => {}
        }
    }
    let signature = |ty: u32| types[ty as usize].clone();

    // Every import is one of Go's `go` imports (kpt's wasm_exec.js), taking Go's stack pointer.
    const GO_IMPORTS: &[&str] = &[
        "runtime.wasmExit",
        "runtime.wasmWrite",
        "runtime.resetMemoryDataView",
        "runtime.nanotime1",
        "runtime.walltime",
        "runtime.scheduleTimeoutEvent",
        "runtime.clearTimeoutEvent",
        "runtime.getRandomData",
        "syscall/js.finalizeRef",
        "syscall/js.stringVal",
        "syscall/js.valueGet",
        "syscall/js.valueSet",
        "syscall/js.valueDelete",
        "syscall/js.valueIndex",
        "syscall/js.valueSetIndex",
        "syscall/js.valueCall",
        "syscall/js.valueInvoke",
        "syscall/js.valueNew",
        "syscall/js.valueLength",
        "syscall/js.valuePrepareString",
        "syscall/js.valueLoadString",
        "syscall/js.valueInstanceOf",
        "syscall/js.copyBytesToGo",
        "syscall/js.copyBytesToJS",
    ];
    assert!(!imports.is_empty());
    for (module, name, ty) in &imports {
        assert_eq!(
            module, "go",
            "import {module}.{name}: kpt provides only module `go`"
        );
        assert!(
            GO_IMPORTS.contains(&name.as_str()),
            "unknown import go.{name}"
        );
        assert_eq!(
            signature(*ty),
            (vec![ValType::I32], vec![]),
            "import go.{name} takes Go's stack pointer and returns nothing"
        );
    }
    // It must never exit (the glue would refuse to resume it) and must report memory growth.
    let names: Vec<&str> = imports.iter().map(|(_, n, _)| n.as_str()).collect();
    assert!(!names.contains(&"runtime.wasmExit"));
    for needed in [
        "runtime.resetMemoryDataView",
        "runtime.wasmWrite",
        "syscall/js.valueCall",
    ] {
        assert!(names.contains(&needed), "{needed} not imported");
    }

    let export = |name: &str| {
        exports
            .iter()
            .find(|(n, _, _)| n == name)
            .unwrap_or_else(|| panic!("export {name} missing; exports: {exports:?}"))
    };
    assert_eq!(export("mem").1, ExternalKind::Memory);
    for (name, params, results) in [
        ("run", vec![ValType::I32, ValType::I32], vec![]),
        ("resume", vec![], vec![]),
        ("getsp", vec![], vec![ValType::I32]),
    ] {
        let (_, kind, index) = export(name);
        assert_eq!(*kind, ExternalKind::Func, "{name}");
        assert_eq!(
            signature(func_types[*index as usize]),
            (params, results),
            "signature of {name}"
        );
    }
    // Only the ABI and the linker's two globals; no `memory`, no `_start`, nothing for tests.
    let mut extra: Vec<&str> = exports
        .iter()
        .map(|(n, _, _)| n.as_str())
        .filter(|n| !["mem", "run", "resume", "getsp"].contains(n))
        .collect();
    extra.sort();
    assert_eq!(extra, ["__data_end", "__heap_base"]);
}

// ---------------------------------------------------------------------------------------------
// 2. node with kpt's glue

/// The script kpt writes for the node runtime (Go's `wasm_exec.js` followed by kpt's glue), taken
/// from a real `kpt fn eval` run.
fn kpt_glue() -> &'static str {
    static GLUE: OnceLock<String> = OnceLock::new();
    GLUE.get_or_init(|| {
        let tmp = scratch("glue").keep();
        let package = tmp.join("package");
        std::fs::create_dir_all(&package).unwrap();
        std::fs::write(
            package.join("cm.yaml"),
            "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a\n",
        )
        .unwrap();
        let mut cmd = kpt_wasm(&tmp);
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

/// Runs `script` with node the way kpt does: only `KPT_FN_WASM_PATH` in the environment.
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
    .args(expected(&example).args);
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

// ---------------------------------------------------------------------------------------------
// 3. kpt

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
    let exp = expected(example);
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
            if exp.args.is_empty() {
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
    if matches!(how, How::Eval) && !exp.args.is_empty() {
        cmd.arg("--").args(&exp.args);
    }
    let run = run_bounded(&cmd, 300);
    let function = function.display().to_string();
    let report = run
        .stderr
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

#[test]
fn every_example_through_kpt_wasm_matches_the_exec_binary() {
    let tmp = scratch("examples");
    let tmp = tmp.path();
    let examples = examples();
    assert!(!examples.is_empty());
    let (mut changed, mut failed) = (0, 0);
    for example in &examples {
        let name = example.file_name().unwrap().to_string_lossy();
        let exit_code = expected(example).exit_code;
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

#[test]
fn docs_tell_how_to_build_run_and_publish_the_module() {
    let docs = std::fs::read_to_string(common::root().join("docs/wasm.md")).unwrap();
    let readme = std::fs::read_to_string(common::root().join("README.md")).unwrap();
    for needle in [
        "cargo build --target wasm32-unknown-unknown --release -p cutover-kpt-wasm",
        "KPT_FN_WASM_RUNTIME=nodejs kpt fn eval PKG --allow-alpha-wasm --exec ./cutover-kpt.wasm",
        "KPT_FN_WASM_RUNTIME=nodejs kpt fn render PKG --allow-alpha-wasm --allow-exec",
        "kpt alpha wasm push ./cutover-kpt.wasm",
    ] {
        assert!(docs.contains(needle), "docs/wasm.md lacks {needle:?}");
        assert!(readme.contains(needle), "README.md lacks {needle:?}");
    }
    // The file the docs copy is the one cargo builds (and `module()` uses).
    assert!(docs.contains("target/wasm32-unknown-unknown/release/cutover_kpt.wasm"));
}
