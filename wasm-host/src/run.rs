//! Running a module in the sandbox: WASI preview 1 with nothing but in-memory stdio
//! ([`crate::wasi`]), a memory limiter and a wall-clock watchdog.

use std::io::Write;
use std::sync::mpsc::{self, RecvTimeoutError, Sender};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use wasmtime::error::Context;
use wasmtime::{Config, Engine, Linker, Module, ResourceLimiter, Store};

use crate::wasi::{self, Exit, OutputFull, Stdio};

/// Largest stdout we accept. The buffer only grows as written, so this costs nothing until used;
/// a module that writes past it is stopped rather than having its output truncated.
const STDOUT_CAPACITY: usize = 1 << 30;
/// Largest stderr we keep (diagnostics; a module that fills it is stopped the same way).
const STDERR_CAPACITY: usize = 64 << 20;
/// Table elements the module may have (each costs a pointer of host memory).
const MAX_TABLE_ELEMENTS: usize = 1 << 20;
/// What the module sees as argv[0]; its own messages say `cutover:` as the native binary's do.
const ARGV0: &str = "cutover";

/// Memory and time limits of one run.
#[derive(Debug, Clone, PartialEq)]
pub struct Limits {
    /// Linear-memory limit in MiB.
    pub max_memory_mib: u64,
    /// Wall-clock limit in seconds.
    pub timeout_secs: f64,
}

impl Default for Limits {
    fn default() -> Self {
        Self {
            max_memory_mib: 512,
            timeout_secs: 60.0,
        }
    }
}

/// What a run produced.
pub struct RunResult {
    /// The module's complete stdout, in chunks (meaningful only for [`Ending::Exited`]).
    pub stdout: Vec<Vec<u8>>,
    /// The module's stderr, however the run ended.
    pub stderr: Vec<u8>,
    /// How the run ended.
    pub ending: Ending,
    /// The run's store, kept for the caller to drop or to leave to the process's exit.
    pub teardown: Teardown,
}

/// A finished run's store: the instance and its linear memory, of no more use once the output
/// is taken. Dropping it tears the instance down and unmaps the memory; the host's `main`
/// leaves it to the process's exit instead, as it does the compiled code, which took 2–3 % off
/// the host's CPU time on `sylva` (docs/wasm.md, "A finished run's store left to the exit").
pub struct Teardown(#[allow(dead_code)] Store<State>);

/// How a run ended.
pub enum Ending {
    /// The module returned from `_start` (status 0) or called `proc_exit(status)`.
    Exited(i32),
    /// The host stopped it (limit, trap, output overflow); the message says why.
    Stopped(String),
}

/// The engine every run uses. Its configuration is part of what compiled code depends on, so the
/// cache key (see `cache`) covers it through wasmtime's own compatibility check.
pub fn engine() -> wasmtime::Result<Engine> {
    // No epoch interruption and no fuel: epoch checks (a load and a compare at every loop head
    // and function entry) cost the module 15-20 % of its CPU time on large inputs
    // (docs/wasm.md, Performance). The run time is bounded by the [`Watchdog`] instead.
    let mut config = Config::new();
    // The module is built with WebAssembly's fixed-width SIMD (`.cargo/config.toml`). wasmtime
    // enables it by default; said here so that a change of that default cannot refuse the module.
    config.wasm_simd(true);
    Engine::new(&config).context("cannot create the wasmtime engine")
}

/// The store's data: the module's streams and the memory limiter.
struct State {
    stdio: Stdio,
    limiter: Limiter,
}

/// Caps linear memory and remembers that the cap was hit, so that the resulting trap (or
/// instantiation failure) is reported as what it is rather than as an anonymous trap.
struct Limiter {
    max_bytes: usize,
    exceeded: bool,
}

impl ResourceLimiter for Limiter {
    fn memory_growing(
        &mut self,
        _current: usize,
        desired: usize,
        _maximum: Option<usize>,
    ) -> wasmtime::Result<bool> {
        if desired > self.max_bytes {
            self.exceeded = true;
            // An error, not `Ok(false)`: the module stops at once instead of running on into its
            // own allocation-failure path (a Rust guest would abort with a less useful message).
            wasmtime::bail!("memory limit exceeded");
        }
        Ok(true)
    }

    fn table_growing(
        &mut self,
        _current: usize,
        desired: usize,
        _maximum: Option<usize>,
    ) -> wasmtime::Result<bool> {
        Ok(desired <= MAX_TABLE_ELEMENTS)
    }
}

/// Runs `module` as a WASI command with `input` (its chunks in order) on stdin, within `limits`.
///
/// `Err` is reserved for host failures (WASI's functions cannot be linked, say); anything about
/// the module, including an import the sandbox lacks, a trap or a limit, is an `Ok` with its
/// [`Ending`].
pub fn run(
    engine: &Engine,
    module: &Module,
    input: Vec<Vec<u8>>,
    limits: &Limits,
) -> wasmtime::Result<RunResult> {
    // Only what is set here exists for the module: no preopens, no env, no inherited stdio,
    // no sockets (see `wasi`).
    let stdio = Stdio::new(ARGV0, input, STDOUT_CAPACITY, STDERR_CAPACITY);
    let stderr = stdio.stderr();
    let max_bytes = usize::try_from(limits.max_memory_mib << 20).unwrap_or(usize::MAX);
    let mut store = Store::new(
        engine,
        State {
            stdio,
            limiter: Limiter {
                max_bytes,
                exceeded: false,
            },
        },
    );
    store.limiter(|state| &mut state.limiter);
    let watchdog = Watchdog::start(
        Duration::from_secs_f64(limits.timeout_secs),
        Arc::clone(&stderr),
        format!("module ran longer than {} s; stopped", limits.timeout_secs),
    );

    let mut linker: Linker<State> = Linker::new(engine);
    wasi::add_to_linker(&mut linker, |state| &mut state.stdio)
        .context("cannot link WASI preview 1")?;
    let outcome = linker
        .instantiate(&mut store, module)
        .and_then(|instance| instance.get_typed_func::<(), ()>(&mut store, "_start"))
        .and_then(|start| start.call(&mut store, ()));
    watchdog.finish();

    let exceeded_memory = store.data().limiter.exceeded;
    // Taken, not copied: the output is as large as the input for a ResourceList.
    let stdout = store.data_mut().stdio.take_stdout();
    // The watchdog may still hold stderr for a moment: copied (diagnostics, small).
    let stderr = stderr
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .clone();
    let ending = match outcome {
        Ok(()) => Ending::Exited(0),
        Err(_) if exceeded_memory => Ending::Stopped(format!(
            "module exceeded the memory limit of {} MiB; stopped",
            limits.max_memory_mib
        )),
        Err(e) => {
            if let Some(exit) = e.downcast_ref::<Exit>() {
                Ending::Exited(exit.0)
            } else if let Some(full) = e.downcast_ref::<OutputFull>() {
                // The module's writes were refused: report it rather than hand on output
                // that may be cut short.
                Ending::Stopped(format!("{full}; nothing written"))
            } else {
                Ending::Stopped(format!("module failed: {e:#}"))
            }
        }
    };
    Ok(RunResult {
        stdout,
        stderr,
        ending,
        teardown: Teardown(store),
    })
}

/// Stops a run that outlives its time limit. A host process makes exactly one run, and its
/// output is written only once the run has finished, so the watchdog stops the run by ending
/// the process: the module's diagnostics, then the reason, on stderr, exit status 1, nothing on
/// stdout, as for any other stopped run. A run that finished first is never stopped: finishing
/// and stopping take the same lock.
struct Watchdog {
    finished: Arc<Mutex<bool>>,
    wake: Sender<()>,
}

impl Watchdog {
    fn start(limit: Duration, module_stderr: Arc<Mutex<Vec<u8>>>, reason: String) -> Self {
        let finished = Arc::new(Mutex::new(false));
        let (wake, sleep) = mpsc::channel::<()>();
        let flag = Arc::clone(&finished);
        // Detached: it ends when woken (or when the sender is dropped), or with the process.
        std::thread::spawn(move || {
            if let Err(RecvTimeoutError::Timeout) = sleep.recv_timeout(limit) {
                let finished = flag.lock().unwrap_or_else(PoisonError::into_inner);
                if !*finished {
                    let mut out = std::io::stderr().lock();
                    let module_stderr =
                        module_stderr.lock().unwrap_or_else(PoisonError::into_inner);
                    out.write_all(&module_stderr).ok();
                    writeln!(out, "cutover-wasm: {reason}").ok();
                    out.flush().ok();
                    std::process::exit(1);
                }
            }
        });
        Self { finished, wake }
    }

    /// The run is over: from now on the watchdog leaves the process alone.
    fn finish(self) {
        *self.finished.lock().unwrap_or_else(PoisonError::into_inner) = true;
        self.wake.send(()).ok();
    }
}
