//! Shared by the host's integration tests: where things are, building the module and the native
//! binary when missing, and running the host.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::sync::{Mutex, OnceLock};

/// The repository root (the workspace).
pub fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("wasm-host is inside the workspace")
        .to_path_buf()
}

/// cargo's target directory, as the build scripts see it.
pub fn target_dir() -> PathBuf {
    std::env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| root().join("target"))
}

/// The host binary under test (built by cargo for this test run).
pub fn host() -> PathBuf {
    PathBuf::from(env!("CARGO_BIN_EXE_cutover-wasm"))
}

/// Serialises the nested cargo builds of one test binary (cargo itself locks across processes).
static BUILD: Mutex<()> = Mutex::new(());

/// Builds `artifact` with `cargo args` unless it exists; panics with the command when it fails.
fn ensure_built(artifact: &Path, args: &[&str]) -> PathBuf {
    let _guard = BUILD.lock().unwrap_or_else(|e| e.into_inner());
    if !artifact.is_file() {
        let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
        let status = Command::new(&cargo)
            .args(args)
            .current_dir(root())
            .status()
            .unwrap_or_else(|e| panic!("cannot run {cargo}: {e}"));
        assert!(
            status.success() && artifact.is_file(),
            "`cargo {}` did not produce {}",
            args.join(" "),
            artifact.display()
        );
    }
    artifact.to_path_buf()
}

/// The real `cutover.wasm` (release build for wasm32-wasip1), built when missing.
pub fn module() -> PathBuf {
    static MODULE: OnceLock<PathBuf> = OnceLock::new();
    MODULE
        .get_or_init(|| {
            let path = std::env::var_os("CUTOVER_WASM_MODULE")
                .map(PathBuf::from)
                .unwrap_or_else(|| target_dir().join("wasm32-wasip1/release/cutover.wasm"));
            ensure_built(
                &path,
                &[
                    "build",
                    "--target",
                    "wasm32-wasip1",
                    "--release",
                    "-p",
                    "cutover",
                    "--bin",
                    "cutover",
                ],
            )
        })
        .clone()
}

/// The native `cutover` binary (release), built when missing; `CUTOVER_BIN` overrides.
pub fn native() -> PathBuf {
    static NATIVE: OnceLock<PathBuf> = OnceLock::new();
    NATIVE
        .get_or_init(|| {
            let path = std::env::var_os("CUTOVER_BIN")
                .map(PathBuf::from)
                .unwrap_or_else(|| target_dir().join("release/cutover"));
            ensure_built(
                &path,
                &["build", "--release", "-p", "cutover", "--bin", "cutover"],
            )
        })
        .clone()
}

/// A fresh empty directory for one test.
pub fn temp_dir(name: &str) -> PathBuf {
    let dir = target_dir()
        .join("cutover-wasm-tests")
        .join(format!("{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("create test directory");
    dir
}

/// The compiled-code cache the tests share, so the real module is compiled once per run.
pub fn shared_cache() -> PathBuf {
    let dir = target_dir().join("cutover-wasm-tests").join("cache");
    std::fs::create_dir_all(&dir).expect("create cache directory");
    dir
}

/// Runs `program args` with `input` on stdin and `env` added to a cleared environment.
pub fn run(program: &Path, args: &[&str], env: &[(&str, &str)], input: &[u8]) -> Output {
    let mut child = Command::new(program)
        .args(args)
        .env_clear()
        .envs(env.iter().copied())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("cannot run {}: {e}", program.display()));
    let mut stdin = child.stdin.take().expect("piped stdin");
    // A module may exit without reading all of stdin; a broken pipe here is not the test's point.
    let _ = stdin.write_all(input);
    drop(stdin);
    child.wait_with_output().expect("wait for child")
}

/// Runs the host on `module` with extra host `args`, using the shared cache.
pub fn run_host(module: &Path, args: &[&str], input: &[u8]) -> Output {
    let cache = shared_cache();
    let mut all = vec!["--module", module.to_str().expect("UTF-8 path")];
    all.extend_from_slice(args);
    run(
        &host(),
        &all,
        &[(
            "CUTOVER_WASM_CACHE_DIR",
            cache.to_str().expect("UTF-8 path"),
        )],
        input,
    )
}

/// Compiles WAT text to a module file in `dir`.
pub fn wat_module(dir: &Path, name: &str, wat: &str) -> PathBuf {
    let bytes = wat::parse_str(wat).unwrap_or_else(|e| panic!("{name}: {e}"));
    let path = dir.join(format!("{name}.wasm"));
    std::fs::write(&path, bytes).expect("write module");
    path
}

/// The exit code, stdout and stderr of a finished process, for assertions.
pub fn summary(output: &Output) -> (Option<i32>, String, String) {
    (
        output.status.code(),
        String::from_utf8_lossy(&output.stdout).into_owned(),
        String::from_utf8_lossy(&output.stderr).into_owned(),
    )
}

/// A kpt package with the functionConfig file to evaluate it with.
pub struct Package {
    /// The package directory.
    pub dir: PathBuf,
    /// The `--fn-config` file.
    pub fn_config: PathBuf,
}

/// Every `examples/*/` package (with the `fn-config.yaml` next to its resources, or in
/// `.expected/`) and the host's own fixture package; at least the fixture.
pub fn packages() -> Vec<Package> {
    let mut dirs: Vec<PathBuf> = std::fs::read_dir(root().join("examples"))
        .map(|d| d.map(|e| e.expect("directory entry").path()).collect())
        .unwrap_or_default();
    dirs.sort();
    let mut packages: Vec<Package> = dirs
        .into_iter()
        .filter(|dir| dir.join("Kptfile").is_file())
        .filter_map(|dir| {
            let fn_config = [
                dir.join("fn-config.yaml"),
                dir.join(".expected/fn-config.yaml"),
            ]
            .into_iter()
            .find(|p| p.is_file())?;
            Some(Package { dir, fn_config })
        })
        .collect();
    let fixtures = root().join("wasm-host/tests/fixtures");
    packages.push(Package {
        dir: fixtures.join("package"),
        fn_config: fixtures.join("fn-config.yaml"),
    });
    packages
}
