//! Running a module in the sandbox: WASI preview 1 with nothing but in-memory stdio, a memory
//! limiter and an epoch deadline.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use wasmtime::error::Context;
use wasmtime::{Config, Engine, Linker, Module, ResourceLimiter, Store, Trap};
use wasmtime_wasi::p1::{self, WasiP1Ctx};
use wasmtime_wasi::p2::pipe::{MemoryInputPipe, MemoryOutputPipe};
use wasmtime_wasi::{I32Exit, WasiCtxBuilder};

/// How often the background thread advances the engine's epoch; the timeout's resolution.
const TICK: Duration = Duration::from_millis(50);
/// Largest stdout we accept. The pipe only grows as written, so this costs nothing until used;
/// a module that fills it is stopped rather than having its output truncated.
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
    /// The module's complete stdout (meaningful only for [`Ending::Exited`]).
    pub stdout: Vec<u8>,
    /// The module's stderr, however the run ended.
    pub stderr: Vec<u8>,
    /// How the run ended.
    pub ending: Ending,
}

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
    let mut config = Config::new();
    // Epoch checks cost a load and compare at loop heads and function entries, far cheaper
    // than fuel metering, and bound wall-clock time, which is what a pipeline cares about.
    config.epoch_interruption(true);
    Engine::new(&config).context("cannot create the wasmtime engine")
}

/// The store's data: the WASI context and the memory limiter.
struct State {
    wasi: WasiP1Ctx,
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

/// Runs `module` as a WASI command with `input` on stdin, within `limits`.
///
/// `Err` is reserved for host failures (the module's imports cannot be satisfied, say); anything
/// the module does, including trapping or exceeding a limit, is an `Ok` with its [`Ending`].
pub fn run(
    engine: &Engine,
    module: &Module,
    input: Vec<u8>,
    limits: &Limits,
) -> wasmtime::Result<RunResult> {
    let stdout = MemoryOutputPipe::new(STDOUT_CAPACITY);
    let stderr = MemoryOutputPipe::new(STDERR_CAPACITY);
    // Only what is set here exists for the module: no preopens, no env, no inherited stdio,
    // no sockets (preview 1 can only use sockets it is handed, and none are).
    let wasi = WasiCtxBuilder::new()
        .stdin(MemoryInputPipe::new(input))
        .stdout(stdout.clone())
        .stderr(stderr.clone())
        .args(&[ARGV0])
        .allow_tcp(false)
        .allow_udp(false)
        .allow_ip_name_lookup(false)
        .build_p1();
    let max_bytes = usize::try_from(limits.max_memory_mib << 20).unwrap_or(usize::MAX);
    let mut store = Store::new(
        engine,
        State {
            wasi,
            limiter: Limiter {
                max_bytes,
                exceeded: false,
            },
        },
    );
    store.limiter(|state| &mut state.limiter);
    let ticks = (limits.timeout_secs / TICK.as_secs_f64()).ceil().max(1.0) as u64;
    store.set_epoch_deadline(ticks);
    let ticker = Ticker::start(engine.clone());

    let mut linker: Linker<State> = Linker::new(engine);
    p1::add_to_linker_sync(&mut linker, |state| &mut state.wasi)
        .context("cannot link WASI preview 1")?;
    let outcome = linker
        .instantiate(&mut store, module)
        .and_then(|instance| instance.get_typed_func::<(), ()>(&mut store, "_start"))
        .and_then(|start| start.call(&mut store, ()));
    drop(ticker);

    let exceeded_memory = store.data().limiter.exceeded;
    drop(store);
    let stdout = stdout.contents().to_vec();
    let stderr = stderr.contents().to_vec();
    let ending = match outcome {
        Ok(()) => Ending::Exited(0),
        Err(_) if exceeded_memory => Ending::Stopped(format!(
            "module exceeded the memory limit of {} MiB; stopped",
            limits.max_memory_mib
        )),
        Err(e) => match e.downcast_ref::<I32Exit>() {
            Some(exit) => Ending::Exited(exit.0),
            None if e.downcast_ref::<Trap>() == Some(&Trap::Interrupt) => Ending::Stopped(format!(
                "module ran longer than {} s; stopped",
                limits.timeout_secs
            )),
            None => Ending::Stopped(format!("module failed: {e:#}")),
        },
    };
    // A full pipe means the module's writes were refused: report it rather than hand on
    // output that may be cut short.
    let ending = match ending {
        Ending::Exited(_) if stdout.len() >= STDOUT_CAPACITY => Ending::Stopped(format!(
            "module output exceeded {} MiB; nothing written",
            STDOUT_CAPACITY >> 20
        )),
        Ending::Exited(_) if stderr.len() >= STDERR_CAPACITY => Ending::Stopped(format!(
            "module diagnostics exceeded {} MiB; nothing written",
            STDERR_CAPACITY >> 20
        )),
        other => other,
    };
    Ok(RunResult {
        stdout,
        stderr,
        ending,
    })
}

/// Advances the engine's epoch every [`TICK`] until dropped.
struct Ticker {
    stop: Arc<AtomicBool>,
}

impl Ticker {
    fn start(engine: Engine) -> Self {
        let stop = Arc::new(AtomicBool::new(false));
        let flag = Arc::clone(&stop);
        // Detached: it ends at the next tick after `stop` is set, or with the process.
        std::thread::spawn(move || {
            while !flag.load(Ordering::Relaxed) {
                std::thread::sleep(TICK);
                engine.increment_epoch();
            }
        });
        Self { stop }
    }
}

impl Drop for Ticker {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
    }
}
