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
use std::time::{Instant, SystemTime, UNIX_EPOCH};

use wasmtime::{Caller, Extern, Linker};

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

/// Runs `call` on the module's memory and its [`Stdio`].
fn with_memory<T, R>(
    caller: &mut Caller<'_, T>,
    stdio: fn(&mut T) -> &mut Stdio,
    call: impl FnOnce(&mut [u8], &mut Stdio) -> R,
) -> wasmtime::Result<R> {
    let Some(Extern::Memory(memory)) = caller.get_export("memory") else {
        wasmtime::bail!("the module exports no memory named \"memory\"");
    };
    let (bytes, data) = memory.data_and_store_mut(caller);
    Ok(call(bytes, stdio(data)))
}

/// Defines the functions in `linker`; `stdio` finds the [`Stdio`] in the store's data.
pub fn add_to_linker<T: 'static>(
    linker: &mut Linker<T>,
    stdio: fn(&mut T) -> &mut Stdio,
) -> wasmtime::Result<()> {
    add_args_and_environment(linker, stdio)?;
    add_streams(linker, stdio)?;
    add_descriptors(linker, stdio)?;
    add_process(linker, stdio)?;
    Ok(())
}

fn add_args_and_environment<T: 'static>(
    linker: &mut Linker<T>,
    stdio: fn(&mut T) -> &mut Stdio,
) -> wasmtime::Result<()> {
    linker.func_wrap(
        MODULE,
        "args_sizes_get",
        move |mut caller: Caller<'_, T>, argc: i32, size: i32| {
            with_memory(&mut caller, stdio, |memory, io| {
                let len = io.argv0.len() as u32;
                errno_of(put_u32(memory, argc, 1).and_then(|()| put_u32(memory, size, len)))
            })
        },
    )?;
    linker.func_wrap(
        MODULE,
        "args_get",
        move |mut caller: Caller<'_, T>, argv: i32, buf: i32| {
            with_memory(&mut caller, stdio, |memory, io| {
                let written = range(memory, buf, io.argv0.len()).ok_or(errno::FAULT);
                errno_of(written.and_then(|at| {
                    memory[at].copy_from_slice(&io.argv0);
                    put_u32(memory, argv, buf as u32)
                }))
            })
        },
    )?;
    linker.func_wrap(
        MODULE,
        "environ_sizes_get",
        move |mut caller: Caller<'_, T>, count: i32, size: i32| {
            with_memory(&mut caller, stdio, |memory, _| {
                errno_of(put_u32(memory, count, 0).and_then(|()| put_u32(memory, size, 0)))
            })
        },
    )?;
    linker.func_wrap(MODULE, "environ_get", |_: Caller<'_, T>, _: i32, _: i32| {
        errno::SUCCESS
    })?;
    Ok(())
}

fn add_streams<T: 'static>(
    linker: &mut Linker<T>,
    stdio: fn(&mut T) -> &mut Stdio,
) -> wasmtime::Result<()> {
    linker.func_wrap(
        MODULE,
        "fd_read",
        move |mut caller: Caller<'_, T>, fd: i32, iovs: i32, len: i32, nread: i32| {
            with_memory(&mut caller, stdio, |memory, io| {
                if fd != 0 || !io.is_open(0) {
                    return errno::BADF;
                }
                let read = iovecs(memory, iovs, len).map(|bufs| {
                    let mut total = 0;
                    for buf in bufs {
                        let len = buf.len().min(MAX_READ - total);
                        total += io.read_into(&mut memory[buf.start..buf.start + len]);
                    }
                    total as u32
                });
                errno_of(read.and_then(|n| put_u32(memory, nread, n)))
            })
        },
    )?;
    linker.func_wrap(
        MODULE,
        "fd_write",
        move |mut caller: Caller<'_, T>, fd: i32, iovs: i32, len: i32, nwritten: i32| {
            with_memory(&mut caller, stdio, |memory, io| {
                if !(fd == 1 || fd == 2) || !io.is_open(fd) {
                    return Ok(errno::BADF);
                }
                let bufs = match iovecs(memory, iovs, len) {
                    Ok(bufs) => bufs,
                    Err(e) => return Ok(e),
                };
                let mut total = 0u32;
                for buf in bufs {
                    total += buf.len() as u32;
                    io.write(fd, &memory[buf])?;
                }
                Ok(errno_of(put_u32(memory, nwritten, total)))
            })?
        },
    )?;
    linker.func_wrap(
        MODULE,
        "fd_close",
        move |mut caller: Caller<'_, T>, fd: i32| {
            let io = stdio(caller.data_mut());
            if !io.is_open(fd) {
                return errno::BADF;
            }
            io.open[fd as usize] = false;
            errno::SUCCESS
        },
    )?;
    Ok(())
}

fn add_descriptors<T: 'static>(
    linker: &mut Linker<T>,
    stdio: fn(&mut T) -> &mut Stdio,
) -> wasmtime::Result<()> {
    linker.func_wrap(
        MODULE,
        "fd_fdstat_get",
        move |mut caller: Caller<'_, T>, fd: i32, out: i32| {
            with_memory(&mut caller, stdio, |memory, io| {
                if !io.is_open(fd) {
                    return errno::BADF;
                }
                let rights = if fd == 0 {
                    RIGHT_FD_READ
                } else {
                    RIGHT_FD_WRITE
                };
                // `{fs_filetype: u8, fs_flags: u16 @2, rights_base: u64 @8, inheriting @16}`.
                let Some(at) = range(memory, out, 24) else {
                    return errno::FAULT;
                };
                let stat = &mut memory[at];
                stat.fill(0);
                stat[0] = FILETYPE_UNKNOWN;
                stat[8..16].copy_from_slice(&rights.to_le_bytes());
                stat[16..24].copy_from_slice(&rights.to_le_bytes());
                errno::SUCCESS
            })
        },
    )?;
    linker.func_wrap(
        MODULE,
        "fd_filestat_get",
        move |mut caller: Caller<'_, T>, fd: i32, out: i32| {
            with_memory(&mut caller, stdio, |memory, io| {
                if !io.is_open(fd) {
                    return errno::BADF;
                }
                // 64 bytes, every field 0 for a pipe: filetype (u8 @16) unknown, size 0.
                match range(memory, out, 64) {
                    Some(at) => {
                        memory[at].fill(0);
                        memory[out as u32 as usize + 16] = FILETYPE_UNKNOWN;
                        errno::SUCCESS
                    }
                    None => errno::FAULT,
                }
            })
        },
    )?;
    // No directory is preopened, so every descriptor a path is relative to is a bad one.
    linker.func_wrap(
        MODULE,
        "fd_prestat_get",
        |_: Caller<'_, T>, _: i32, _: i32| errno::BADF,
    )?;
    linker.func_wrap(
        MODULE,
        "fd_prestat_dir_name",
        |_: Caller<'_, T>, _: i32, _: i32, _: i32| errno::BADF,
    )?;
    linker.func_wrap(
        MODULE,
        "path_open",
        |_: Caller<'_, T>,
         _fd: i32,
         _dirflags: i32,
         _path: i32,
         _path_len: i32,
         _oflags: i32,
         _rights: i64,
         _inheriting: i64,
         _fdflags: i32,
         _opened: i32| errno::BADF,
    )?;
    Ok(())
}

fn add_process<T: 'static>(
    linker: &mut Linker<T>,
    stdio: fn(&mut T) -> &mut Stdio,
) -> wasmtime::Result<()> {
    linker.func_wrap(
        MODULE,
        "clock_time_get",
        move |mut caller: Caller<'_, T>, id: i32, _precision: i64, out: i32| {
            with_memory(&mut caller, stdio, |memory, io| {
                let now = match id {
                    CLOCK_REALTIME => SystemTime::now()
                        .duration_since(UNIX_EPOCH)
                        .map(|d| d.as_nanos() as u64)
                        .unwrap_or(0),
                    CLOCK_MONOTONIC => io.started.elapsed().as_nanos() as u64,
                    // The CPU-time clocks, as wasmtime-wasi answers them; any other id is invalid.
                    2 | 3 => return errno::BADF,
                    _ => return errno::INVAL,
                };
                errno_of(put_u64(memory, out, now))
            })
        },
    )?;
    linker.func_wrap(
        MODULE,
        "random_get",
        move |mut caller: Caller<'_, T>, buf: i32, len: i32| {
            with_memory(&mut caller, stdio, |memory, _| {
                match range(memory, buf, len as u32 as usize) {
                    Some(at) => match getrandom::fill(&mut memory[at]) {
                        Ok(()) => errno::SUCCESS,
                        Err(_) => errno::IO,
                    },
                    None => errno::FAULT,
                }
            })
        },
    )?;
    linker.func_wrap(
        MODULE,
        "proc_exit",
        |_: Caller<'_, T>, status: i32| -> wasmtime::Result<()> {
            // WASI's range, as wasmtime-wasi checks it.
            if !(0..126).contains(&status) {
                wasmtime::bail!("exit with invalid exit status outside of [0..126)");
            }
            Err(wasmtime::Error::new(Exit(status)))
        },
    )?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn stdio(chunks: &[&[u8]], capacity: usize) -> Stdio {
        Stdio::new(
            "cutover",
            chunks.iter().map(|c| c.to_vec()).collect(),
            capacity,
            capacity,
        )
    }

    #[test]
    fn stdin_is_read_across_chunks_and_a_read_chunk_is_dropped() {
        let mut io = stdio(&[b"abc", b"de", b"f"], 16);
        let mut buf = [0u8; 4];
        assert_eq!(io.read_into(&mut buf), 4);
        assert_eq!(&buf, b"abcd");
        // The first chunk was read whole: it is gone; the second is half read.
        assert_eq!((io.stdin.len(), io.read), (2, 1));
        // Kept, emptied, for stdout to fill.
        assert_eq!(io.spare.len(), 1);
        assert!(io.spare[0].is_empty() && io.spare[0].capacity() >= 3);
        assert_eq!(io.read_into(&mut buf), 2);
        assert_eq!(&buf[..2], b"ef");
        assert!(io.stdin.is_empty());
        assert_eq!(io.read_into(&mut buf), 0);
    }

    #[test]
    fn output_past_its_capacity_is_refused_whole_and_named() {
        let mut io = stdio(&[], 8);
        io.write(1, b"12345678").unwrap();
        let err = io.write(1, b"9").unwrap_err();
        let full = err.downcast_ref::<OutputFull>().expect("OutputFull");
        assert_eq!(full.stream, "output");
        assert_eq!(io.take_stdout().concat(), b"12345678");
        io.write(2, b"1234").unwrap();
        let err = io.write(2, b"56789").unwrap_err();
        assert_eq!(
            err.downcast_ref::<OutputFull>().unwrap().stream,
            "diagnostics"
        );
        assert_eq!(*io.stderr().lock().unwrap(), b"1234");
    }

    #[test]
    fn only_the_three_streams_are_open_until_closed() {
        let mut io = stdio(&[], 8);
        assert!((0..3).all(|fd| io.is_open(fd)));
        assert!(!io.is_open(3) && !io.is_open(-1));
        io.open[1] = false;
        assert!(!io.is_open(1));
    }

    #[test]
    fn guest_ranges_past_the_memory_are_faults() {
        let memory = [0u8; 16];
        assert_eq!(range(&memory, 8, 8), Some(8..16));
        assert_eq!(range(&memory, 8, 9), None);
        assert_eq!(range(&memory, -1, 1), None);
        // An iovec array whose buffer runs past the memory.
        let mut memory = [0u8; 32];
        memory[0..4].copy_from_slice(&16u32.to_le_bytes());
        memory[4..8].copy_from_slice(&17u32.to_le_bytes());
        assert_eq!(iovecs(&memory, 0, 1), Err(errno::FAULT));
        memory[4..8].copy_from_slice(&16u32.to_le_bytes());
        let ranges = iovecs(&memory, 0, 1).unwrap();
        assert_eq!((ranges.len(), ranges[0].clone()), (1, 16..32));
        // Too many iovecs, or a negative count, is invalid before any is read.
        assert_eq!(iovecs(&memory, 0, IOV_MAX + 1), Err(errno::INVAL));
        assert_eq!(iovecs(&memory, 0, -1), Err(errno::INVAL));
    }

    #[test]
    fn stdout_fills_read_chunks_of_stdin_before_new_ones() {
        let mut io = Stdio::new("cutover", vec![vec![7u8; 10], vec![8u8; 10]], 1 << 30, 64);
        let mut buf = [0u8; 20];
        assert_eq!(io.read_into(&mut buf), 20);
        let spare: Vec<*const u8> = io.spare.iter().map(|c| c.as_ptr()).collect();
        let out: Vec<u8> = (0..25u8).collect();
        io.write(1, &out[..4]).unwrap();
        io.write(1, &out[4..]).unwrap();
        let chunks = io.take_stdout();
        // The two spare chunks (the last one read first), then a new one for the rest.
        let used: Vec<*const u8> = chunks.iter().map(|c| c.as_ptr()).collect();
        assert_eq!(&used[..2], &[spare[1], spare[0]]);
        assert_eq!(chunks.len(), 3);
        assert!(chunks[2].capacity() >= CHUNK);
        assert_eq!(chunks.concat(), out);
    }
}
