//! The host's command line, module lookup errors and compiled-code cache.

use std::path::Path;

use crate::common::{host, run, summary, temp_dir, wat_module};

/// Writes "ok" and exits 5: a module whose every run is easy to recognise.
const OK_MODULE: &str = r#"(module
  (import "wasi_snapshot_preview1" "fd_write" (func $fd_write (param i32 i32 i32 i32) (result i32)))
  (import "wasi_snapshot_preview1" "proc_exit" (func $proc_exit (param i32)))
  (memory (export "memory") 1)
  (data (i32.const 16) "ok")
  (func (export "_start")
    (i32.store (i32.const 0) (i32.const 16))
    (i32.store (i32.const 4) (i32.const 2))
    (drop (call $fd_write (i32.const 1) (i32.const 0) (i32.const 1) (i32.const 8)))
    (call $proc_exit (i32.const 5))))"#;

fn run_with_cache(module: &Path, cache: &str) -> (Option<i32>, String, String) {
    summary(&run(
        &host(),
        &["--module", module.to_str().unwrap()],
        &[("CUTOVER_WASM_CACHE_DIR", cache)],
        b"",
    ))
}

fn cache_entries(dir: &Path) -> Vec<std::path::PathBuf> {
    std::fs::read_dir(dir)
        .map(|d| d.map(|e| e.unwrap().path()).collect())
        .unwrap_or_default()
}

#[test]
fn compiled_code_is_cached_once_per_module_and_reused() {
    let dir = temp_dir("cache");
    let m = wat_module(&dir, "ok", OK_MODULE);
    let cache = dir.join("cache");
    let expected = (Some(5), "ok".to_string(), String::new());
    assert_eq!(run_with_cache(&m, cache.to_str().unwrap()), expected);
    let entries = cache_entries(&cache);
    assert_eq!(entries.len(), 1, "{entries:?}");
    let name = entries[0].file_name().unwrap().to_str().unwrap().to_owned();
    assert!(
        name.contains("-wasmtime-48.0.8-") && name.ends_with(".cwasm"),
        "{name}"
    );
    let modified = std::fs::metadata(&entries[0]).unwrap().modified().unwrap();
    assert_eq!(run_with_cache(&m, cache.to_str().unwrap()), expected);
    // Reused, not rewritten.
    assert_eq!(cache_entries(&cache), entries);
    assert_eq!(
        std::fs::metadata(&entries[0]).unwrap().modified().unwrap(),
        modified
    );
}

#[test]
fn a_corrupt_cache_entry_is_recompiled_and_replaced() {
    let dir = temp_dir("corrupt");
    let m = wat_module(&dir, "ok", OK_MODULE);
    let cache = dir.join("cache");
    run_with_cache(&m, cache.to_str().unwrap());
    let entry = cache_entries(&cache).pop().expect("an entry");
    let valid = std::fs::read(&entry).unwrap();
    for garbage in [
        b"not a compiled module".to_vec(),
        valid[..valid.len() / 2].to_vec(),
    ] {
        std::fs::write(&entry, &garbage).unwrap();
        assert_eq!(
            run_with_cache(&m, cache.to_str().unwrap()),
            (Some(5), "ok".to_string(), String::new())
        );
        assert_ne!(
            std::fs::read(&entry).unwrap(),
            garbage,
            "entry not replaced"
        );
    }
}

#[test]
fn an_unusable_cache_directory_only_costs_time() {
    let dir = temp_dir("unwritable");
    let m = wat_module(&dir, "ok", OK_MODULE);
    // A directory below a regular file can be neither created nor written.
    std::fs::write(dir.join("file"), "").unwrap();
    let blocked = dir.join("file").join("cache");
    assert_eq!(
        run_with_cache(&m, blocked.to_str().unwrap()),
        (Some(5), "ok".to_string(), String::new())
    );
    assert_eq!(
        run_with_cache(&m, "off"),
        (Some(5), "ok".to_string(), String::new())
    );
}

#[test]
fn a_missing_or_invalid_module_is_a_clear_error() {
    let dir = temp_dir("missing");
    let missing = dir.join("nope.wasm");
    let (code, stdout, stderr) = run_with_cache(&missing, "off");
    assert_eq!((code, stdout.as_str()), (Some(1), ""));
    assert!(
        stderr.starts_with(&format!(
            "cutover-wasm: cannot read module {}",
            missing.display()
        )),
        "{stderr}"
    );
    std::fs::write(dir.join("bad.wasm"), "not wasm").unwrap();
    let (code, _, stderr) = run_with_cache(&dir.join("bad.wasm"), "off");
    assert_eq!(code, Some(1));
    assert!(
        stderr.starts_with("cutover-wasm: cannot compile module"),
        "{stderr}"
    );
}

#[test]
fn usage_errors_exit_2_and_help_exits_0() {
    let out = run(&host(), &["--timeout", "forever"], &[], b"");
    let (code, stdout, stderr) = summary(&out);
    assert_eq!((code, stdout.as_str()), (Some(2), ""));
    assert!(
        stderr.starts_with("cutover-wasm: --timeout \"forever\""),
        "{stderr}"
    );
    let (code, stdout, _) = summary(&run(&host(), &["--help"], &[], b""));
    assert_eq!(code, Some(0));
    assert!(stdout.contains("cutover-wasm [--module PATH] [--max-memory MiB] [--timeout SECS]"));
}
