//! Bounds for in-process fuzzing: a counting global allocator (bytes held and their peak, a
//! hard cap so a runaway case cannot take the machine) and a watchdog that aborts a case that
//! hangs. The test binary installs [`Counting`] with `#[global_allocator]`.

use std::alloc::{GlobalAlloc, Layout};
use std::cell::Cell;

use mimalloc::MiMalloc;
use std::io::Write;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Mutex, OnceLock};
use std::time::{Duration, Instant};

/// One measured run at a time: the case's input, its number and the watchdog's clock are global
/// to the test binary, and its tests run on parallel threads.
pub static MEASURING: Mutex<()> = Mutex::new(());

/// No allocation past this many bytes held: the process aborts (see [`Counting`]).
pub const MEMORY_CAP: usize = 3 << 29;

// ---------------------------------------------------------------------------------------------
// Memory: a counting allocator.

/// The system allocator, counting bytes held and their peak, refusing past [`MEMORY_CAP`].
pub struct Counting;

/// Bytes held by the whole test binary: what [`MEMORY_CAP`] applies to.
pub static HELD: AtomicUsize = AtomicUsize::new(0);
/// The case running (for the message when the cap is hit).
pub static CASE: AtomicUsize = AtomicUsize::new(usize::MAX);

thread_local! {
    /// Bytes this thread allocated minus those it freed. It goes below its start when the thread
    /// frees what another allocated, and stays up for what another thread frees for it.
    static OWN: Cell<isize> = const { Cell::new(0) };
    /// The highest [`OWN`] has been since [`start_measuring`].
    static OWN_PEAK: Cell<isize> = const { Cell::new(0) };
}

/// Starts measuring the calling thread's allocations; returns the base to give
/// [`measured_peak`].
///
/// A run is measured on its own thread, not on [`HELD`]: the other tests of the binary, on
/// parallel threads, build and drop inputs of their own while a run is measured, and a
/// generator building a 1 MiB alias bomb once put at least 22 MB on a 3 KB regression's
/// count. What the function frees on its background thread (`krm::free_in_background`) stays
/// counted until the run ends, so the peak is never lower than the run's own.
pub fn start_measuring() -> isize {
    let base = OWN.with(Cell::get);
    OWN_PEAK.with(|peak| peak.set(base));
    base
}

/// The most the calling thread has held beyond `base` since [`start_measuring`].
pub fn measured_peak(base: isize) -> usize {
    usize::try_from(OWN_PEAK.with(Cell::get) - base).unwrap_or(0)
}

fn own_grow(size: usize) {
    let size = isize::try_from(size).unwrap_or(isize::MAX);
    let _ = OWN.try_with(|own| {
        let now = own.get().saturating_add(size);
        own.set(now);
        let _ = OWN_PEAK.try_with(|peak| peak.set(peak.get().max(now)));
    });
}

fn own_shrink(size: usize) {
    let size = isize::try_from(size).unwrap_or(isize::MAX);
    let _ = OWN.try_with(|own| own.set(own.get().saturating_sub(size)));
}

impl Counting {
    fn grow(size: usize) -> bool {
        let held = HELD.fetch_add(size, Ordering::Relaxed) + size;
        if held > MEMORY_CAP {
            HELD.fetch_sub(size, Ordering::Relaxed);
            cap_hit();
            return false;
        }
        own_grow(size);
        true
    }

    fn shrink(size: usize) {
        HELD.fetch_sub(size, Ordering::Relaxed);
        own_shrink(size);
    }
}

/// Says which case hit the cap, without allocating (the allocator is refusing).
fn cap_hit() {
    let mut buf = [0u8; 96];
    let msg = b"fuzz_mutation: memory cap hit by case ";
    buf[..msg.len()].copy_from_slice(msg);
    let mut n = CASE.load(Ordering::Relaxed);
    let mut digits = [0u8; 20];
    let mut len = 0;
    loop {
        digits[len] = b'0' + (n % 10) as u8;
        len += 1;
        n /= 10;
        if n == 0 {
            break;
        }
    }
    for i in 0..len {
        buf[msg.len() + i] = digits[len - 1 - i];
    }
    buf[msg.len() + len] = b'\n';
    let _ = std::io::stderr().write_all(&buf[..msg.len() + len + 1]);
}

/// What [`Counting`] allocates with: the fuzz cases allocate and free whole document trees,
/// which mimalloc serves several times faster than glibc's malloc. The bounds count requested
/// bytes, the same in any allocator.
const INNER: MiMalloc = MiMalloc;

unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        if !Counting::grow(layout.size()) {
            return std::ptr::null_mut();
        }
        let p = unsafe { INNER.alloc(layout) };
        if p.is_null() {
            Counting::shrink(layout.size());
        }
        p
    }
    unsafe fn dealloc(&self, p: *mut u8, layout: Layout) {
        unsafe { INNER.dealloc(p, layout) };
        Counting::shrink(layout.size());
    }
    unsafe fn realloc(&self, p: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        if new_size > layout.size() && !Counting::grow(new_size - layout.size()) {
            return std::ptr::null_mut();
        }
        let q = unsafe { INNER.realloc(p, layout, new_size) };
        if q.is_null() {
            if new_size > layout.size() {
                Counting::shrink(new_size - layout.size());
            }
        } else if new_size < layout.size() {
            Counting::shrink(layout.size() - new_size);
        }
        q
    }
}

/// Waits (briefly) until memory freed in the background by the previous run is gone, so the
/// previous run's garbage does not count against the next one's [`MEMORY_CAP`].
/// (The function frees its garbage on a helper thread after it returns.)
pub fn quiesce() {
    let mut last = HELD.load(Ordering::Relaxed);
    let mut stable = 0;
    for _ in 0..200 {
        std::thread::sleep(Duration::from_micros(100));
        let now = HELD.load(Ordering::Relaxed);
        stable = if now == last { stable + 1 } else { 0 };
        if stable == 2 {
            return;
        }
        last = now;
    }
}

// ---------------------------------------------------------------------------------------------
// Time: a watchdog for hangs.

pub static STARTED_MS: AtomicU64 = AtomicU64::new(0);
pub static RUNNING: AtomicBool = AtomicBool::new(false);
pub static CURRENT_INPUT: Mutex<Vec<u8>> = Mutex::new(Vec::new());
/// The thread running the case (its Linux task id; 0 when unknown) and its CPU time at the
/// start, in nanoseconds: what the watchdog goes by.
static RUNNER_TASK: AtomicU64 = AtomicU64::new(0);
static STARTED_CPU_NS: AtomicU64 = AtomicU64::new(0);

/// How many times the hang bound a case may take in wall time while its CPU time stays under
/// that bound: a case blocked without using a CPU is a hang too, but one starved by a loaded
/// machine (long runs are niced and share it with builds) is not.
pub const WALL_FACTOR: u32 = 10;

pub fn now_ms() -> u64 {
    static EPOCH: OnceLock<Instant> = OnceLock::new();
    EPOCH.get_or_init(Instant::now).elapsed().as_millis() as u64
}

/// Marks the calling thread as running a case, for the watchdog.
pub fn case_started() {
    STARTED_MS.store(now_ms(), Ordering::SeqCst);
    let task = current_task();
    let cpu = task.and_then(task_cpu_time).unwrap_or_default();
    STARTED_CPU_NS.store(cpu.as_nanos() as u64, Ordering::SeqCst);
    RUNNER_TASK.store(task.unwrap_or(0), Ordering::SeqCst);
    RUNNING.store(true, Ordering::SeqCst);
}

/// The case has returned: the watchdog leaves the process alone until the next one.
pub fn case_finished() {
    RUNNING.store(false, Ordering::SeqCst);
}

/// Whether a case that has run `wall` and used `cpu` (`None` where the platform does not say)
/// hangs: past `hang` of CPU time, or past [`WALL_FACTOR`] × `hang` of wall time whatever its
/// CPU time; past `hang` of wall time where CPU time is unknown.
pub fn is_hang(wall: Duration, cpu: Option<Duration>, hang: Duration) -> bool {
    match cpu {
        Some(cpu) => cpu > hang || wall > hang * WALL_FACTOR,
        None => wall > hang,
    }
}

/// Aborts the process (after saving the input) when one case hangs ([`is_hang`]) past
/// `FUZZ_HANG_SECS` (default 10 × the time limit).
pub fn start_watchdog(limit: Duration) {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        let hang = std::env::var("FUZZ_HANG_SECS")
            .ok()
            .and_then(|s| s.parse().ok())
            .map_or(limit * 10, Duration::from_secs);
        std::thread::spawn(move || {
            loop {
                std::thread::sleep(Duration::from_millis(500));
                if !RUNNING.load(Ordering::SeqCst) {
                    continue;
                }
                let wall = Duration::from_millis(now_ms() - STARTED_MS.load(Ordering::SeqCst));
                let task = RUNNER_TASK.load(Ordering::SeqCst);
                let cpu = (task != 0).then(|| task_cpu_time(task)).flatten().map(|now| {
                    now.saturating_sub(Duration::from_nanos(STARTED_CPU_NS.load(Ordering::SeqCst)))
                });
                // Read again: the case may have ended (and the next begun) meanwhile.
                if !RUNNING.load(Ordering::SeqCst) || !is_hang(wall, cpu, hang) {
                    continue;
                }
                let path = super::failure_dir().join("mutation-hang.yaml");
                if let Ok(input) = CURRENT_INPUT.try_lock() {
                    let _ = std::fs::write(&path, &*input);
                }
                let cpu = cpu.map_or_else(|| "unknown".into(), |c| format!("{c:?}"));
                eprintln!(
                    "fuzz_mutation: case {} hangs ({wall:?} of wall time, {cpu} of CPU; bound {hang:?} of CPU, {:?} of wall time): input in {}; aborting",
                    CASE.load(Ordering::SeqCst),
                    hang * WALL_FACTOR,
                    path.display()
                );
                std::process::abort();
            }
        });
    });
}

/// CPU time the calling thread has had so far (Linux: `/proc/thread-self/schedstat`, whose first
/// field is nanoseconds on a CPU); `None` elsewhere. The time bound is on this, not on wall time,
/// so a loaded machine (long runs share it with builds) does not make a case slow.
pub fn thread_cpu_time() -> Option<Duration> {
    schedstat_cpu("/proc/thread-self/schedstat")
}

/// The calling thread's Linux task id (`/proc/thread-self` links to `<pid>/task/<tid>`).
pub fn current_task() -> Option<u64> {
    let link = std::fs::read_link("/proc/thread-self").ok()?;
    link.file_name()?.to_str()?.parse().ok()
}

/// CPU time a thread of this process has had so far, read from any thread.
pub fn task_cpu_time(task: u64) -> Option<Duration> {
    schedstat_cpu(&format!("/proc/self/task/{task}/schedstat"))
}

fn schedstat_cpu(path: &str) -> Option<Duration> {
    let stat = std::fs::read_to_string(path).ok()?;
    let nanos = stat.split_whitespace().next()?.parse().ok()?;
    Some(Duration::from_nanos(nanos))
}

pub fn time_limit() -> Duration {
    let default = if cfg!(debug_assertions) {
        60_000
    } else {
        2_000
    };
    Duration::from_millis(
        std::env::var("FUZZ_TIME_LIMIT_MS")
            .ok()
            .and_then(|s| s.parse().ok())
            .unwrap_or(default),
    )
}
