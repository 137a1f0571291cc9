//! The sandbox: hand-written WASI modules try what a function must not do, and the host either
//! denies it (the call fails as documented) or stops the module with the documented message.

use std::path::PathBuf;
use std::time::{Duration, Instant};

use crate::common::{run, run_host, summary, temp_dir, wat_module};

/// Imports and helpers every test module shares: memory, `fd_write`, `proc_exit`, and
/// `$say` which writes the 7 bytes "partial" at offset 1024 to stdout.
fn module(body: &str) -> String {
    format!(
        r#"(module
  (import "wasi_snapshot_preview1" "fd_write" (func $fd_write (param i32 i32 i32 i32) (result i32)))
  (import "wasi_snapshot_preview1" "proc_exit" (func $proc_exit (param i32)))
  (import "wasi_snapshot_preview1" "path_open"
    (func $path_open (param i32 i32 i32 i32 i32 i64 i64 i32 i32) (result i32)))
  (import "wasi_snapshot_preview1" "fd_prestat_get" (func $fd_prestat_get (param i32 i32) (result i32)))
  (import "wasi_snapshot_preview1" "environ_sizes_get" (func $environ_sizes_get (param i32 i32) (result i32)))
  (import "wasi_snapshot_preview1" "args_sizes_get" (func $args_sizes_get (param i32 i32) (result i32)))
  (import "wasi_snapshot_preview1" "args_get" (func $args_get (param i32 i32) (result i32)))
  (memory (export "memory") 1)
  (data (i32.const 1024) "partial")
  (data (i32.const 2048) "/etc/passwd")
  (func $write (param $ptr i32) (param $len i32)
    (i32.store (i32.const 0) (local.get $ptr))
    (i32.store (i32.const 4) (local.get $len))
    (drop (call $fd_write (i32.const 1) (i32.const 0) (i32.const 1) (i32.const 8))))
  (func $say (call $write (i32.const 1024) (i32.const 7)))
  {body}
)"#
    )
}

/// `body` with the imports and helpers of [`module`], compiled to `<name>.wasm` in a fresh
/// directory of its own.
fn sandbox_module(name: &str, body: &str) -> PathBuf {
    wat_module(&temp_dir(name), name, &module(body))
}

/// What a run the host stopped gives: exit 1, no output, and `stderr`, the host's message.
fn stopped(stderr: &str) -> (Option<i32>, String, String) {
    (Some(1), String::new(), stderr.into())
}

/// WASI errno `badf`: what the module gets for any directory descriptor, as none is preopened.
const ERRNO_BADF: i32 = 8;

#[test]
fn opening_a_file_fails_with_badf_as_no_directory_is_preopened() {
    // path_open relative to fd 3, the first preopen in WASI's numbering; exits with the errno.
    let m = sandbox_module(
        "open",
        r#"(func (export "_start")
                 (call $proc_exit (call $path_open (i32.const 3) (i32.const 0)
                   (i32.const 2048) (i32.const 11) (i32.const 0)
                   (i64.const 2) (i64.const 0) (i32.const 0) (i32.const 3000))))"#,
    );
    let out = run_host(&m, &[], b"");
    assert_eq!(
        summary(&out),
        (Some(ERRNO_BADF), String::new(), String::new())
    );
}

#[test]
fn no_preopened_directory_is_reported() {
    let m = sandbox_module(
        "prestat",
        r#"(func (export "_start")
                 (call $proc_exit (call $fd_prestat_get (i32.const 3) (i32.const 3000))))"#,
    );
    let out = run_host(&m, &[], b"");
    assert_eq!(out.status.code(), Some(ERRNO_BADF));
}

#[test]
fn the_environment_is_empty_even_when_the_host_has_variables() {
    // Exits with count + total size of the environment: 0 only when it is empty.
    let m = sandbox_module(
        "env",
        r#"(func (export "_start")
                 (drop (call $environ_sizes_get (i32.const 0) (i32.const 4)))
                 (call $proc_exit (i32.add (i32.load (i32.const 0)) (i32.load (i32.const 4)))))"#,
    );
    let cache = crate::common::shared_cache();
    let out = run(
        &crate::common::host(),
        &["--module", m.to_str().unwrap()],
        &[
            ("CUTOVER_WASM_CACHE_DIR", cache.to_str().unwrap()),
            ("SECRET_TOKEN", "must-not-leak"),
            ("HOME", "/root"),
        ],
        b"",
    );
    assert_eq!(summary(&out), (Some(0), String::new(), String::new()));
}

#[test]
fn the_module_sees_only_argv0_not_the_host_arguments() {
    // Writes the argument buffer to stdout and exits with 40 + argc.
    let m = sandbox_module(
        "args",
        r#"(func (export "_start")
                 (drop (call $args_sizes_get (i32.const 100) (i32.const 104)))
                 (drop (call $args_get (i32.const 200) (i32.const 4096)))
                 (call $write (i32.const 4096) (i32.load (i32.const 104)))
                 (call $proc_exit (i32.add (i32.const 40) (i32.load (i32.const 100)))))"#,
    );
    let out = run_host(&m, &["--timeout", "30", "--max-memory", "64"], b"");
    assert_eq!(summary(&out), (Some(41), "cutover\0".into(), String::new()));
}

#[test]
fn growing_memory_past_the_limit_stops_the_module() {
    // Grows by 1 MiB at a time; had the host let memory.grow fail instead, it would exit 3.
    let m = sandbox_module(
        "grow",
        r#"(func (export "_start")
                 (call $say)
                 (loop $more
                   (if (i32.eq (memory.grow (i32.const 16)) (i32.const -1))
                     (then (call $proc_exit (i32.const 3))))
                   (br $more)))"#,
    );
    let out = run_host(&m, &["--max-memory", "16"], b"");
    assert_eq!(
        summary(&out),
        stopped("cutover-wasm: module exceeded the memory limit of 16 MiB; stopped\n")
    );
    // The default limit is 512 MiB.
    let out = run_host(&m, &[], b"");
    assert_eq!(
        summary(&out),
        stopped("cutover-wasm: module exceeded the memory limit of 512 MiB; stopped\n")
    );
}

#[test]
fn an_initial_memory_above_the_limit_is_refused() {
    let dir = temp_dir("big");
    // 400 pages of 64 KiB = 25 MiB.
    let m = wat_module(
        &dir,
        "big",
        r#"(module (memory 400) (func (export "_start")))"#,
    );
    let out = run_host(&m, &["--max-memory", "16"], b"");
    assert_eq!(
        summary(&out),
        stopped("cutover-wasm: module exceeded the memory limit of 16 MiB; stopped\n")
    );
}

#[test]
fn an_endless_loop_is_stopped_at_the_timeout_without_partial_output() {
    let m = sandbox_module(
        "loop",
        r#"(func (export "_start") (call $say) (loop $forever (br $forever)))"#,
    );
    let started = Instant::now();
    let out = run_host(&m, &["--timeout", "0.5"], b"");
    let took = started.elapsed();
    assert_eq!(
        summary(&out),
        stopped("cutover-wasm: module ran longer than 0.5 s; stopped\n")
    );
    assert!(
        took >= Duration::from_millis(500),
        "stopped early: {took:?}"
    );
    assert!(took < Duration::from_secs(20), "stopped late: {took:?}");
}

#[test]
fn a_trap_ends_with_exit_1_its_message_and_no_output() {
    let m = sandbox_module(
        "trap",
        r#"(func (export "_start") (call $say) unreachable)"#,
    );
    let (code, stdout, stderr) = summary(&run_host(&m, &[], b""));
    assert_eq!((code, stdout.as_str()), (Some(1), ""));
    assert!(
        stderr.starts_with("cutover-wasm: module failed: ") && stderr.contains("unreachable"),
        "{stderr}"
    );
}

#[test]
fn proc_exit_status_and_output_are_passed_on() {
    let m = sandbox_module(
        "exit",
        r#"(func (export "_start") (call $say) (call $proc_exit (i32.const 7)))"#,
    );
    assert_eq!(
        summary(&run_host(&m, &[], b"ignored")),
        (Some(7), "partial".into(), String::new())
    );
}

/// A module that copies stdin to stdout through `fd_read` with two buffers of 3 and 61 440
/// bytes a call, and writes "eof" to stderr at the end.
const ECHO_MODULE: &str = r#"(module
  (import "wasi_snapshot_preview1" "fd_read" (func $fd_read (param i32 i32 i32 i32) (result i32)))
  (import "wasi_snapshot_preview1" "fd_write" (func $fd_write (param i32 i32 i32 i32) (result i32)))
  (import "wasi_snapshot_preview1" "proc_exit" (func $proc_exit (param i32)))
  (memory (export "memory") 2)
  (data (i32.const 100) "eof")
  (func (export "_start") (local $n i32)
    ;; iovecs at 0: {4096, 3} and {4099, 61440}; the count read at 16.
    (i32.store (i32.const 0) (i32.const 4096)) (i32.store (i32.const 4) (i32.const 3))
    (i32.store (i32.const 8) (i32.const 4099)) (i32.store (i32.const 12) (i32.const 61440))
    (block $done (loop $more
      (if (call $fd_read (i32.const 0) (i32.const 0) (i32.const 2) (i32.const 16))
        (then (call $proc_exit (i32.const 9))))
      (local.set $n (i32.load (i32.const 16)))
      (br_if $done (i32.eqz (local.get $n)))
      ;; one iovec {4096, n} at 32 for the write
      (i32.store (i32.const 32) (i32.const 4096)) (i32.store (i32.const 36) (local.get $n))
      (drop (call $fd_write (i32.const 1) (i32.const 32) (i32.const 1) (i32.const 40)))
      (br $more)))
    (i32.store (i32.const 32) (i32.const 100)) (i32.store (i32.const 36) (i32.const 3))
    (drop (call $fd_write (i32.const 2) (i32.const 32) (i32.const 1) (i32.const 40)))))"#;

#[test]
fn stdin_reaches_the_module_whole_across_the_hosts_chunks() {
    let m = wat_module(&temp_dir("echo"), "echo", ECHO_MODULE);
    // Around the host's 1 MiB chunks: empty, one byte, a chunk and one byte either side of it,
    // and two and a half chunks of bytes that differ from one offset to the next.
    for len in [0, 1, (1 << 20) - 1, 1 << 20, (1 << 20) + 1, 5 << 19] {
        let input: Vec<u8> = (0..len).map(|i| (i % 251) as u8).collect();
        let out = run_host(&m, &[], &input);
        assert_eq!(out.status.code(), Some(0), "{len} bytes");
        assert!(out.stdout == input, "{len} bytes: stdout differs");
        assert_eq!(out.stderr, b"eof", "{len} bytes");
    }
}

#[test]
fn a_module_importing_a_function_the_sandbox_lacks_is_refused_by_name() {
    // `poll_oneoff` (sleeping, waiting on descriptors) is not part of the sandbox.
    let m = wat_module(
        &temp_dir("poll"),
        "poll",
        r#"(module
  (import "wasi_snapshot_preview1" "poll_oneoff" (func (param i32 i32 i32 i32) (result i32)))
  (memory (export "memory") 1)
  (func (export "_start")))"#,
    );
    let (code, stdout, stderr) = summary(&run_host(&m, &[], b""));
    assert_eq!((code, stdout.as_str()), (Some(1), ""));
    assert!(
        stderr.contains("wasi_snapshot_preview1::poll_oneoff"),
        "{stderr}"
    );
}
