//! The functions themselves, defined in a [`Linker`]: each reads and writes the module's memory
//! through the checks of the parent module and answers with a WASI errno.

use std::time::{SystemTime, UNIX_EPOCH};

use wasmtime::{Caller, Extern, Linker};

use super::*;

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
