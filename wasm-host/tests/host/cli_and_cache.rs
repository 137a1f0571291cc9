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

/// Files in the cache directory whose name starts with `prefix`.
fn named(dir: &Path, prefix: &str) -> Vec<std::path::PathBuf> {
    cache_entries(dir)
        .into_iter()
        .filter(|p| p.file_name().unwrap().to_str().unwrap().starts_with(prefix))
        .collect()
}

#[test]
fn a_stamp_spares_the_hash_and_a_module_rewritten_in_place_is_never_served_stale() {
    let dir = temp_dir("stamp");
    let cache = dir.join("cache");
    let cache_str = cache.to_str().unwrap();
    // Two modules of the same size that differ only in what they write.
    let m = wat_module(&dir, "ok", OK_MODULE);
    let other = wat_module(&dir, "no", &OK_MODULE.replace("\"ok\"", "\"no\""));
    let (ok_bytes, no_bytes) = (std::fs::read(&m).unwrap(), std::fs::read(&other).unwrap());
    assert_eq!(ok_bytes.len(), no_bytes.len());
    let ok = (Some(5), "ok".to_string(), String::new());
    let no = (Some(5), "no".to_string(), String::new());

    // Just written: hashed on every run, no stamp yet.
    assert_eq!(run_with_cache(&m, cache_str), ok);
    assert!(named(&cache, "stamp-").is_empty());
    assert_eq!(run_with_cache(&other, cache_str), no);
    let no_hash = entry_hash(&cache, &no_bytes);

    // Settled (its ctime older than the host's two seconds): the next run leaves a stamp.
    std::thread::sleep(std::time::Duration::from_millis(2_100));
    assert_eq!(run_with_cache(&m, cache_str), ok);
    let stamps = named(&cache, "stamp-");
    assert_eq!(stamps.len(), 1, "{stamps:?}");
    let stamp = std::fs::read_to_string(&stamps[0]).unwrap();

    // The stamp is what later runs go by: pointed at the other module's entry, it is believed
    // (this is the hash pass it spares), so only the file's state may decide when it is used.
    let (state, _) = stamp.trim_end().rsplit_once(' ').unwrap();
    std::fs::write(&stamps[0], format!("{state} {no_hash}\n")).unwrap();
    assert_eq!(run_with_cache(&m, cache_str), no);
    std::fs::write(&stamps[0], &stamp).unwrap();
    assert_eq!(run_with_cache(&m, cache_str), ok);

    // Rewritten in place: same inode, same size, modification time set back to the old one.
    // Only the ctime, which the kernel moved, tells the files apart; the new code must run.
    let modified = std::fs::metadata(&m).unwrap().modified().unwrap();
    let file = std::fs::OpenOptions::new()
        .write(true)
        .truncate(true)
        .open(&m)
        .unwrap();
    std::io::Write::write_all(&mut &file, &no_bytes).unwrap();
    file.set_modified(modified).unwrap();
    drop(file);
    assert_eq!(run_with_cache(&m, cache_str), no);
    assert_eq!(run_with_cache(&m, cache_str), no);
}

/// The BLAKE3 hash of `module`, which names its entry; the entry must be in `cache`.
fn entry_hash(cache: &Path, module: &[u8]) -> String {
    let hash = blake3::hash(module).to_hex().to_string();
    let names: Vec<String> = cache_entries(cache)
        .iter()
        .map(|p| p.file_name().unwrap().to_str().unwrap().to_owned())
        .collect();
    assert!(
        names.iter().any(|n| n.starts_with(&hash)),
        "no entry for the module in {names:?}"
    );
    hash
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

/// A cache file of `mib` MiB (sparse: nothing is written) last modified `days_ago`.
fn aged_file(dir: &Path, name: &str, mib: u64, days_ago: u64) {
    let file = std::fs::File::create(dir.join(name)).unwrap();
    file.set_len(mib << 20).unwrap();
    let when = std::time::SystemTime::now() - std::time::Duration::from_secs(days_ago * 86_400);
    file.set_modified(when).unwrap();
}

fn fake_entry(digit: char) -> String {
    format!(
        "{}-wasmtime-48.0.8-x86_64.cwasm",
        digit.to_string().repeat(64)
    )
}

#[test]
fn a_miss_keeps_the_cache_under_its_bound_and_a_hit_marks_its_entry_used() {
    let dir = temp_dir("prune");
    let m = wat_module(&dir, "ok", OK_MODULE);
    let cache = dir.join("cache");
    std::fs::create_dir_all(&cache).unwrap();
    // Entries other modules left, 320 MiB in all: the bound is 256 MiB.
    aged_file(&cache, &fake_entry('a'), 150, 40);
    aged_file(&cache, &fake_entry('b'), 120, 3);
    aged_file(&cache, &fake_entry('c'), 50, 1);
    let stamp_of = |digit: char| {
        format!(
            "cutover-wasm-stamp-v1 1 2 3 4 5 6 7 {}\n",
            digit.to_string().repeat(64)
        )
    };
    std::fs::write(cache.join("stamp-9-1"), stamp_of('a')).unwrap();
    std::fs::write(cache.join("stamp-9-2"), stamp_of('b')).unwrap();
    aged_file(&cache, ".tmp-77-abandoned", 1, 1);
    aged_file(&cache, "notes.txt", 1, 400);
    let ok = (Some(5), "ok".to_string(), String::new());

    assert_eq!(run_with_cache(&m, cache.to_str().unwrap()), ok);
    let mut left: Vec<String> = cache_entries(&cache)
        .iter()
        .map(|p| p.file_name().unwrap().to_str().unwrap().to_owned())
        .collect();
    left.sort();
    let hash = entry_hash(&cache, &std::fs::read(&m).unwrap());
    let own = format!("{hash}-wasmtime-48.0.8-{}.cwasm", std::env::consts::ARCH);
    let mut expected = vec![
        fake_entry('b'),
        fake_entry('c'),
        own.clone(),
        "notes.txt".to_string(),
        "stamp-9-2".to_string(),
    ];
    expected.sort();
    assert_eq!(left, expected);

    // A hit on an entry last marked three days ago moves its time to now, and removes nothing,
    // although the cache is over its bound again (a miss would remove the entry just added).
    aged_file(&cache, &fake_entry('d'), 200, 10);
    let own = cache.join(own);
    let file = std::fs::File::options().write(true).open(&own).unwrap();
    file.set_modified(std::time::SystemTime::now() - std::time::Duration::from_secs(3 * 86_400))
        .unwrap();
    drop(file);
    assert_eq!(run_with_cache(&m, cache.to_str().unwrap()), ok);
    let age = std::fs::metadata(&own)
        .unwrap()
        .modified()
        .unwrap()
        .elapsed()
        .unwrap();
    assert!(age < std::time::Duration::from_secs(600), "{age:?}");
    assert_eq!(cache_entries(&cache).len(), expected.len() + 1);
}
