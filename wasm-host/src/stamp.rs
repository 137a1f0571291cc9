//! Stamps: what the cache remembers about a module file, so that a cached run need not hash it.
//!
//! Hashing the module to find its cache entry is most of the host's own cost on a small input
//! (several MiB through BLAKE3 on every run; docs/wasm.md, Compiled-code cache). A stamp records,
//! for one file (device and inode), its size, modification time and status-change time (ctime)
//! next to the hash they were seen with. A later run that finds the same five values takes the
//! hash from the stamp.
//!
//! Why the ctime makes this safe where size and mtime alone are not (the "racy" case of `make`
//! and of git's index): the kernel sets a file's ctime to the current time on every change of
//! its content or metadata, and no system call sets it to anything else (`utimensat` and
//! `touch -d` set mtime, and move ctime to now). A stamp is only written for a file whose ctime
//! is at least [`SETTLED`] in the past, so any later change gives a ctime that differs from the
//! stamp's, even on a file system whose clock ticks coarsely; a file written a moment ago is
//! hashed on every run until it has settled. Renaming or copying a module gives it a new ctime
//! (or a new inode) and so a new hash pass, never a wrong entry.

use std::fs;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

/// How long ago a module must have last changed before its stamp is written.
pub const SETTLED: Duration = Duration::from_secs(2);

/// The first word of a stamp file; a file without it is ignored.
const FORMAT: &str = "cutover-wasm-stamp-v1";

/// What a stamp compares: the file's identity, size and both change times.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FileState {
    dev: u64,
    ino: u64,
    size: u64,
    mtime: (i64, i64),
    ctime: (i64, i64),
}

impl FileState {
    /// The state of an open file (`fstat`; opening first also revalidates cached attributes on
    /// network file systems).
    pub fn of(meta: &fs::Metadata) -> Self {
        Self {
            dev: meta.dev(),
            ino: meta.ino(),
            size: meta.size(),
            mtime: (meta.mtime(), meta.mtime_nsec()),
            ctime: (meta.ctime(), meta.ctime_nsec()),
        }
    }

    /// Whether the file last changed at least [`SETTLED`] before `now`. A ctime of zero (a file
    /// system that keeps none) is never settled.
    fn settled(&self, now: SystemTime) -> bool {
        let Ok(now) = now.duration_since(SystemTime::UNIX_EPOCH) else {
            return false;
        };
        let (secs, nanos) = self.ctime;
        let (Ok(secs), Ok(nanos)) = (u64::try_from(secs), u32::try_from(nanos)) else {
            return false;
        };
        secs != 0 && now.saturating_sub(Duration::new(secs, nanos)) >= SETTLED
    }

    fn line(&self, hash: &blake3::Hash) -> String {
        format!(
            "{FORMAT} {} {} {} {} {} {} {} {}\n",
            self.dev,
            self.ino,
            self.size,
            self.mtime.0,
            self.mtime.1,
            self.ctime.0,
            self.ctime.1,
            hash.to_hex()
        )
    }
}

/// The stamp file of the module in `state`, in the cache directory.
fn path(dir: &Path, state: &FileState) -> PathBuf {
    dir.join(format!("stamp-{}-{}", state.dev, state.ino))
}

/// The module's hash, if a stamp for exactly this state exists.
pub fn lookup(dir: &Path, state: &FileState) -> Option<blake3::Hash> {
    let text = fs::read_to_string(path(dir, state)).ok()?;
    let hash = blake3::Hash::from_hex(recorded_hash(&text)?).ok()?;
    (state.line(&hash).trim_end() == text.trim_end()).then_some(hash)
}

/// The module hash (hex) a stamp file's text records, whatever state it was written for;
/// `None` for text that is not a stamp of this format.
pub fn recorded_hash(text: &str) -> Option<&str> {
    let (_, hex) = text.trim_end().strip_prefix(FORMAT)?.rsplit_once(' ')?;
    Some(hex)
}

/// Records that the module in `state` has `hash`, if it has settled by `now`; `write` stores
/// the file (atomically: the cache's own writer). Failing to write is not an error: the next
/// run hashes again.
pub fn record(
    dir: &Path,
    state: &FileState,
    hash: &blake3::Hash,
    now: SystemTime,
    write: impl FnOnce(&Path, &[u8]) -> std::io::Result<()>,
) {
    if state.settled(now) {
        let _ = write(&path(dir, state), state.line(hash).as_bytes());
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::temp;

    fn state() -> FileState {
        FileState {
            dev: 2049,
            ino: 131,
            size: 7_864_482,
            mtime: (1_764_700_000, 123_456_789),
            ctime: (1_764_700_000, 223_456_789),
        }
    }

    fn ctime(state: &FileState) -> SystemTime {
        SystemTime::UNIX_EPOCH + Duration::new(state.ctime.0 as u64, state.ctime.1 as u32)
    }

    fn write(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
        fs::write(path, bytes)
    }

    #[test]
    fn a_settled_module_is_found_by_its_exact_state_only() {
        let dir = temp("stamp-exact");
        let s = state();
        let hash = blake3::hash(b"module");
        record(&dir, &s, &hash, ctime(&s) + SETTLED, write);
        assert_eq!(lookup(&dir, &s), Some(hash));
        // Any one value changed: no hash (the same inode, so the same stamp file is read).
        let changed = [
            FileState {
                size: s.size + 1,
                ..s
            },
            FileState {
                mtime: (s.mtime.0, s.mtime.1 + 1),
                ..s
            },
            FileState {
                ctime: (s.ctime.0, s.ctime.1 + 1),
                ..s
            },
            FileState {
                ctime: (s.ctime.0 + 1, s.ctime.1),
                ..s
            },
        ];
        for other in changed {
            assert_eq!(lookup(&dir, &other), None, "{other:?}");
        }
        fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn a_module_changed_a_moment_ago_gets_no_stamp() {
        let dir = temp("stamp-young");
        let s = state();
        let hash = blake3::hash(b"module");
        for now in [
            ctime(&s),
            ctime(&s) + SETTLED - Duration::from_nanos(1),
            // A clock set back before the file's ctime.
            ctime(&s) - Duration::from_secs(60),
        ] {
            record(&dir, &s, &hash, now, write);
            assert_eq!(lookup(&dir, &s), None);
        }
        let no_ctime = FileState { ctime: (0, 0), ..s };
        record(&dir, &no_ctime, &hash, SystemTime::now(), write);
        assert_eq!(lookup(&dir, &no_ctime), None);
        fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn a_damaged_stamp_is_ignored() {
        let dir = temp("stamp-damaged");
        let s = state();
        let hash = blake3::hash(b"module");
        let good = s.line(&hash);
        for text in [
            String::new(),
            good.replace(FORMAT, "cutover-wasm-stamp-v0"),
            good[..good.len() - 10].to_string(),
            good.replace(&hash.to_hex().to_string(), "not-a-hash"),
            format!("x{good}"),
        ] {
            fs::write(path(&dir, &s), &text).unwrap();
            assert_eq!(lookup(&dir, &s), None, "{text:?}");
        }
        fs::write(path(&dir, &s), &good).unwrap();
        assert_eq!(lookup(&dir, &s), Some(hash));
        fs::remove_dir_all(&dir).unwrap();
    }

    /// The hash a stamp records, read the way the pruning reads it: only from a stamp of this
    /// format, whatever file state it was written for.
    #[test]
    fn a_stamp_names_its_hash_whatever_its_state() {
        let hash = blake3::hash(b"module");
        let hex = hash.to_hex().to_string();
        let mut other = state();
        other.ino = 7;
        assert_eq!(recorded_hash(&state().line(&hash)), Some(hex.as_str()));
        assert_eq!(recorded_hash(&other.line(&hash)), Some(hex.as_str()));
        assert_eq!(recorded_hash("damaged"), None);
        assert_eq!(
            recorded_hash(&format!("cutover-wasm-stamp-v0 1 2 {hex}\n")),
            None
        );
    }
}
