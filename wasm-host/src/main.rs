//! `cutover-wasm`: runs the cutover WASI module (or any `wasm32-wasip1` command module) in a
//! wasmtime sandbox, as a KRM exec function: ResourceList on stdin, ResourceList on stdout.
//!
//! The sandbox grants the module nothing but its three pipes: no preopened directories, no
//! environment, no network, no arguments beyond argv[0], bounded memory and run time.

mod cache;
mod cli;
mod locate;
mod prune;
mod run;
mod stamp;
mod wasi;

/// An empty directory of its own for one unit test.
#[cfg(test)]
fn temp(name: &str) -> std::path::PathBuf {
    let dir = std::env::temp_dir().join(format!("cutover-wasm-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

use std::io::{Read, Write};
use std::process::ExitCode;

use wasmtime::error::Context;

use crate::cli::{Command, Options};
use crate::run::Ending;

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let options = match cli::parse(&args) {
        Ok(Command::Run(options)) => options,
        Ok(Command::Help) => return print(cli::USAGE),
        Ok(Command::Version) => {
            return print(&format!(
                "cutover-wasm {} (wasmtime {})\n",
                env!("CARGO_PKG_VERSION"),
                cache::WASMTIME_VERSION
            ));
        }
        Err(message) => {
            eprintln!("cutover-wasm: {message}\n\n{}", cli::USAGE);
            return ExitCode::from(2);
        }
    };
    match run_host(&options) {
        Ok(code) => code,
        Err(e) => {
            eprintln!("cutover-wasm: {e:#}");
            ExitCode::FAILURE
        }
    }
}

/// All of stdin, in chunks of 1 MiB: once the module has read a chunk, the run fills it with
/// the module's stdout, so that the input and the output are not held side by side
/// (docs/wasm.md, "The host's own WASI").
fn read_stdin() -> std::io::Result<Vec<Vec<u8>>> {
    const CHUNK: u64 = 1 << 20;
    let mut stdin = std::io::stdin().lock();
    let mut chunks = Vec::new();
    loop {
        let mut chunk = Vec::with_capacity(CHUNK as usize);
        // Fewer bytes than the limit only at the end of stdin.
        let read = (&mut stdin).take(CHUNK).read_to_end(&mut chunk)?;
        if read > 0 {
            chunks.push(chunk);
        }
        if (read as u64) < CHUNK {
            return Ok(chunks);
        }
    }
}

/// Loads the module, runs it on all of stdin and relays its output.
fn run_host(options: &Options) -> wasmtime::Result<ExitCode> {
    let module_path = locate::module_path(options.module.as_deref())?;
    let engine = run::engine()?;
    let module = cache::load(&engine, &module_path, cache::dir().as_deref())?;

    let input = read_stdin().context("cannot read stdin")?;

    let result = run::run(&engine, &module, input, &options.limits)?;
    // The process ends right after this: tearing the compiled code down (unmapping it and
    // deregistering its unwind information function by function) was 15 % of the host's own
    // CPU time on a small input, and tearing the instance down 2–3 % of a run on `sylva`, for
    // memory the kernel reclaims at exit anyway.
    std::mem::forget(result.teardown);
    std::mem::forget(module);
    std::mem::forget(engine);
    // The module's own diagnostics come first, whatever happened, as with the native binary.
    std::io::stderr().write_all(&result.stderr).ok();
    match result.ending {
        Ending::Exited(code) => {
            // stdout is written only once the module has finished, in one piece: a pipeline never
            // sees part of a ResourceList.
            let mut stdout = std::io::stdout().lock();
            result
                .stdout
                .iter()
                .try_for_each(|chunk| stdout.write_all(chunk))
                .and_then(|()| stdout.flush())
                .context("cannot write stdout")?;
            Ok(exit_code(code))
        }
        Ending::Stopped(message) => {
            eprintln!("cutover-wasm: {message}");
            Ok(ExitCode::FAILURE)
        }
    }
}

/// Maps a WASI exit status onto the process exit code (statuses outside 0..=255 become 1).
fn exit_code(code: i32) -> ExitCode {
    u8::try_from(code).map_or(ExitCode::FAILURE, ExitCode::from)
}

fn print(text: &str) -> ExitCode {
    match std::io::stdout().lock().write_all(text.as_bytes()) {
        Ok(()) => ExitCode::SUCCESS,
        Err(_) => ExitCode::FAILURE,
    }
}
