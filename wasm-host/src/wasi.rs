//! The WASI preview 1 functions a KRM function module needs, and nothing else: its argv[0], an
//! empty environment, stdin from memory, stdout and stderr into memory, the clocks and random
//! bytes. No file or directory can be opened (none is preopened), and no socket exists.
//!
//! These are the fifteen functions Rust's standard library imports in a `wasm32-wasip1` command
//! (the cutover module's import section), with the behaviour wasmtime-wasi 48.0.8 gives them
//! for a context of in-memory pipes and no preopens (`wasmtime-wasi/src/p1.rs`: `fd_fdstat_get`,
//! `fd_filestat_get`, `fd_prestat_get`, `clock_time_get`, `proc_exit`): the same errno for the
//! same call. A module importing any other function fails to instantiate, naming the import.
//!
//! Why not wasmtime-wasi itself: its preview 1 runs every call through a multi-threaded tokio
//! runtime that it starts for each process, and linking its 46 functions is a fixed cost of
//! every run; both are a visible share of a short run (docs/wasm.md, "The host's own WASI").
//! The functions here are synchronous and touch nothing but the store's buffers.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Instant;

/// Size of a new chunk of stdout (stdin's chunks are the host's, `read_stdin`, of the same size).
const CHUNK: usize = 1 << 20;
/// The WASI module name of preview 1.
const MODULE: &str = "wasi_snapshot_preview1";

/// WASI errno values (`wasi_snapshot_preview1.witx`, `$errno`).
mod errno {
    pub const SUCCESS: i32 = 0;
    pub const BADF: i32 = 8;
    pub const FAULT: i32 = 21;
    pub const INVAL: i32 = 28;
    pub const IO: i32 = 29;
}

/// Most iovecs a call may pass (Linux's `UIO_MAXIOV`).
const IOV_MAX: i32 = 1024;
/// Most bytes one read returns (Linux's `MAX_RW_COUNT`), so that the count fits the `u32` WASI
/// returns it in whatever the iovecs add up to (they may overlap).
const MAX_READ: usize = 0x7fff_f000;
/// WASI rights (`$rights`): what stdin and stdout/stderr report they allow.
const RIGHT_FD_READ: u64 = 1 << 1;
const RIGHT_FD_WRITE: u64 = 1 << 6;
/// WASI file type `unknown`: what a pipe that is not a terminal reports.
const FILETYPE_UNKNOWN: u8 = 0;
/// WASI clock ids (`$clockid`).
const CLOCK_REALTIME: i32 = 0;
const CLOCK_MONOTONIC: i32 = 1;

/// Output one of the module's streams may not exceed: a write past it stops the module.
#[derive(Debug)]
pub struct OutputFull {
    /// `"output"` or `"diagnostics"`.
    pub stream: &'static str,
    /// The stream's capacity in MiB.
    pub mib: usize,
}

impl std::fmt::Display for OutputFull {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "module {} exceeded {} MiB", self.stream, self.mib)
    }
}

impl std::error::Error for OutputFull {}

/// The module called `proc_exit` with this status.
#[derive(Debug)]
pub struct Exit(pub i32);

impl std::fmt::Display for Exit {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "exited with status {}", self.0)
    }
}

impl std::error::Error for Exit {}

/// The module's view of the world: its three streams and its argv[0].
pub struct Stdio {
    argv0: Vec<u8>,
    /// What is left of stdin: chunks, the first read up to `read`.
    stdin: VecDeque<Vec<u8>>,
    read: usize,
    /// Chunks of stdin the module has read, kept for stdout to fill: their pages are already
    /// in memory, where a new buffer's would be faulted in one by one as written.
    spare: Vec<Vec<u8>>,
    /// What the module wrote to stdout, in chunks.
    stdout: Vec<Vec<u8>>,
    stdout_len: usize,
    stdout_capacity: usize,
    /// Shared with the watchdog, which prints it when it stops a run.
    stderr: Arc<Mutex<Vec<u8>>>,
    stderr_capacity: usize,
    /// Whether fd 0, 1, 2 are still open.
    open: [bool; 3],
    started: Instant,
}

impl Stdio {
    /// `argv0` the module's only argument, `stdin` all it can read (chunks, in order); its
    /// writes to stdout and stderr are kept up to the capacities.
    pub fn new(
        argv0: &str,
        stdin: Vec<Vec<u8>>,
        stdout_capacity: usize,
        stderr_capacity: usize,
    ) -> Self {
        let mut argv0 = argv0.as_bytes().to_vec();
        argv0.push(0);
        Self {
            argv0,
            stdin: stdin.into(),
            read: 0,
            spare: Vec::new(),
            stdout: Vec::new(),
            stdout_len: 0,
            stdout_capacity,
            stderr: Arc::new(Mutex::new(Vec::new())),
            stderr_capacity,
            open: [true; 3],
            started: Instant::now(),
        }
    }

    /// The module's stderr, as far as it has written it.
    pub fn stderr(&self) -> Arc<Mutex<Vec<u8>>> {
        Arc::clone(&self.stderr)
    }

    /// What the module wrote to stdout, in chunks.
    pub fn take_stdout(&mut self) -> Vec<Vec<u8>> {
        std::mem::take(&mut self.stdout)
    }

    /// Reads stdin into `buf`; returns how many bytes (0 at its end).
    fn read_into(&mut self, buf: &mut [u8]) -> usize {
        let mut total = 0;
        while total < buf.len() {
            let Some(chunk) = self.stdin.front() else {
                break;
            };
            let rest = &chunk[self.read..];
            let n = rest.len().min(buf.len() - total);
            buf[total..total + n].copy_from_slice(&rest[..n]);
            total += n;
            self.read += n;
            if self.read == chunk.len() {
                let mut chunk = self.stdin.pop_front().expect("the chunk just read");
                chunk.clear();
                self.spare.push(chunk);
                self.read = 0;
            }
        }
        total
    }

    /// Appends to the last chunk of stdout, then to a spare chunk, else to a new one.
    fn append_stdout(&mut self, mut bytes: &[u8]) {
        self.stdout_len += bytes.len();
        while !bytes.is_empty() {
            let room = self.stdout.last().map_or(0, |c| c.capacity() - c.len());
            if room == 0 {
                let chunk = self.spare.pop();
                self.stdout
                    .push(chunk.unwrap_or_else(|| Vec::with_capacity(CHUNK)));
                continue;
            }
            let (now, later) = bytes.split_at(room.min(bytes.len()));
            self.stdout
                .last_mut()
                .expect("a chunk with room")
                .extend_from_slice(now);
            bytes = later;
        }
    }

    fn is_open(&self, fd: i32) -> bool {
        usize::try_from(fd)
            .ok()
            .and_then(|fd| self.open.get(fd))
            .is_some_and(|open| *open)
    }

    /// Appends `bytes` to stdout (fd 1) or stderr (fd 2).
    fn write(&mut self, fd: i32, bytes: &[u8]) -> wasmtime::Result<()> {
        let full = |stream, capacity: usize| {
            wasmtime::Error::new(OutputFull {
                stream,
                mib: capacity >> 20,
            })
        };
        if fd == 1 {
            if self.stdout_len + bytes.len() > self.stdout_capacity {
                return Err(full("output", self.stdout_capacity));
            }
            self.append_stdout(bytes);
        } else {
            let mut stderr = self.stderr.lock().unwrap_or_else(PoisonError::into_inner);
            if stderr.len() + bytes.len() > self.stderr_capacity {
                return Err(full("diagnostics", self.stderr_capacity));
            }
            stderr.extend_from_slice(bytes);
        }
        Ok(())
    }
}

/// A guest address range, checked against the memory's size.
fn range(memory: &[u8], ptr: i32, len: usize) -> Option<std::ops::Range<usize>> {
    let start = ptr as u32 as usize;
    let end = start.checked_add(len)?;
    (end <= memory.len()).then_some(start..end)
}

fn put_u32(memory: &mut [u8], ptr: i32, value: u32) -> Result<(), i32> {
    let at = range(memory, ptr, 4).ok_or(errno::FAULT)?;
    memory[at].copy_from_slice(&value.to_le_bytes());
    Ok(())
}

fn put_u64(memory: &mut [u8], ptr: i32, value: u64) -> Result<(), i32> {
    let at = range(memory, ptr, 8).ok_or(errno::FAULT)?;
    memory[at].copy_from_slice(&value.to_le_bytes());
    Ok(())
}

fn get_u32(memory: &[u8], ptr: i32) -> Result<u32, i32> {
    let at = range(memory, ptr, 4).ok_or(errno::FAULT)?;
    Ok(u32::from_le_bytes(
        memory[at].try_into().expect("four bytes"),
    ))
}

/// The guest ranges of an array of `len` iovecs (`{buf: u32, buf_len: u32}`) at `iovs`. More
/// than [`IOV_MAX`] is `EINVAL`, as for `readv` and `writev`.
fn iovecs(memory: &[u8], iovs: i32, len: i32) -> Result<Vec<std::ops::Range<usize>>, i32> {
    if !(0..=IOV_MAX).contains(&len) {
        return Err(errno::INVAL);
    }
    (0..len as u32)
        .map(|i| {
            let at = (iovs as u32).checked_add(i * 8).ok_or(errno::FAULT)? as i32;
            let buf = get_u32(memory, at)?;
            let buf_len = get_u32(memory, at.wrapping_add(4))?;
            range(memory, buf as i32, buf_len as usize).ok_or(errno::FAULT)
        })
        .collect()
}

/// The errno of a call's outcome.
fn errno_of(outcome: Result<(), i32>) -> i32 {
    outcome.err().unwrap_or(errno::SUCCESS)
}

mod link;
#[cfg(test)]
mod tests;

pub use link::add_to_linker;
