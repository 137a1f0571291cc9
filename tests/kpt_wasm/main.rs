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

#[path = "../common/mod.rs"]
mod common;
mod kpt;
mod node;
mod shape;

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;

use common::{Run, kpt, run_cmd};

/// The release module, built for this test run.
pub fn module() -> &'static Path {
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

pub fn target_dir() -> PathBuf {
    std::env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| common::root().join("target"))
}

/// A fresh directory under `target/kpt-wasm-tests/` (a `TMPDIR` for kpt and node), removed
/// when dropped.
pub fn scratch(name: &str) -> tempfile::TempDir {
    let parent = target_dir().join("kpt-wasm-tests");
    std::fs::create_dir_all(&parent).unwrap();
    tempfile::Builder::new()
        .prefix(&format!("{name}-"))
        .tempdir_in(parent)
        .unwrap()
}

/// `kpt` set up for the node runtime, with its temporary files in `tmp`.
pub fn kpt_wasm(tmp: &Path) -> Command {
    let mut cmd = kpt();
    cmd.env("KPT_FN_WASM_RUNTIME", "nodejs").env("TMPDIR", tmp);
    cmd
}

/// Runs `cmd` under coreutils' `timeout`: a hang fails the test (exit 124) instead of stalling it.
pub fn run_bounded(cmd: &Command, secs: u32) -> Run {
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
