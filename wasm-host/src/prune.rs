//! Keeping the compiled-code cache bounded. Every new module (each release, each build of a
//! development tree) adds an entry of about 18 MiB, and nothing else would ever remove one.
//!
//! The rule is wasmtime's own cache's (bytecodealliance/wasmtime, `crates/cache/src/config.rs`
//! at 0a2c367, `DEFAULT_FILES_TOTAL_SIZE_SOFT_LIMIT`, and the cleanup task in
//! `crates/cache/src/worker.rs` at 08f9eb1): the entries listed newest first by modification time,
//! their sizes added up, and every entry from the first that passes the limit removed. It is
//! simpler here because the host makes one run per process: there is no worker thread, and the
//! cache is pruned only when a run has just compiled a module and stored it (a miss, which has
//! already spent seconds in Cranelift). A hit costs nothing new: the entry's `stat` is the one
//! the lookup makes anyway, and the entry's time is moved forward at most once a day.
//!
//! Only files the cache itself names are ever removed (entries, stamps, temporary files), so a
//! cache directory shared with other files (`CUTOVER_WASM_CACHE_DIR`) keeps them. Every step is
//! best effort: a file that cannot be read or removed is left, and the run goes on. Removing an
//! entry another process has mapped is safe: the mapping keeps the file's pages until it ends.

use std::fs;
use std::path::Path;
use std::time::{Duration, SystemTime};

use crate::stamp;

/// Largest total size of the entries kept (the entry just written is always kept). About a dozen
/// of today's entries; wasmtime's own cache defaults to 512 MiB for every module a user runs.
pub const MAX_TOTAL_BYTES: u64 = 256 << 20;

/// How old an entry's modification time must be before a hit moves it to now. Once a day is
/// precise enough to tell the entries in use from the ones left behind, and keeps hits from
/// writing to the cache directory on every run.
pub const MARK_USED_AFTER: Duration = Duration::from_secs(24 * 60 * 60);

/// How old a temporary file must be before it counts as abandoned: a writer takes well under a
/// second, so one an hour old was left by a process that died between writing and renaming.
pub const ABANDONED_AFTER: Duration = Duration::from_secs(60 * 60);

/// What a file of the cache directory is, by its name.
#[derive(Debug, PartialEq, Eq)]
enum CacheFile {
    /// A compiled module, `<64 hex digits: the module's BLAKE3>-wasmtime-<version>-<arch>.cwasm`.
    Entry { module_hash: String },
    /// `stamp-<device>-<inode>` (`stamp`).
    Stamp,
    /// `.tmp-<pid>-<entry name>`, an entry or stamp being written.
    Temporary,
    /// Anything else: never touched.
    Other,
}

fn classify(name: &str) -> CacheFile {
    let is_number = |s: &str| !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit());
    if let Some(rest) = name.strip_prefix("stamp-")
        && let Some((dev, ino)) = rest.split_once('-')
        && is_number(dev)
        && is_number(ino)
    {
        return CacheFile::Stamp;
    }
    if let Some(rest) = name.strip_prefix(".tmp-")
        && let Some((pid, _)) = rest.split_once('-')
        && is_number(pid)
    {
        return CacheFile::Temporary;
    }
    let hex = name.get(..64).filter(|h| {
        h.bytes()
            .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
    });
    match hex {
        Some(hash) if name[64..].starts_with("-wasmtime-") && name.ends_with(".cwasm") => {
            CacheFile::Entry {
                module_hash: hash.to_owned(),
            }
        }
        _ => CacheFile::Other,
    }
}

/// Marks the entry a run has just loaded as used: its modification time moves to `now` if it is
/// older than [`MARK_USED_AFTER`]. `meta` is the entry's metadata from the lookup.
pub fn mark_used(entry: &Path, meta: &fs::Metadata, now: SystemTime) {
    let stale = meta.modified().is_ok_and(|t| {
        now.duration_since(t)
            .is_ok_and(|age| age >= MARK_USED_AFTER)
    });
    if stale && let Ok(file) = fs::File::open(entry) {
        // The owner may set the times of a file opened for reading (`futimens`).
        let _ = file.set_modified(now);
    }
}

/// One entry found in the directory.
struct Entry {
    name: String,
    module_hash: String,
    bytes: u64,
    used: SystemTime,
}

/// Removes what the cache no longer needs once `kept` (the entry just written) is in `dir`: the
/// least recently used entries beyond [`MAX_TOTAL_BYTES`], the stamps that name no entry left,
/// and temporary files abandoned for [`ABANDONED_AFTER`].
pub fn prune(dir: &Path, kept: &Path, now: SystemTime) {
    let Ok(listing) = fs::read_dir(dir) else {
        return;
    };
    let kept = kept.file_name().and_then(|n| n.to_str()).unwrap_or("");
    let mut entries = Vec::new();
    let mut stamps = Vec::new();
    for file in listing.flatten() {
        let (Ok(name), Ok(meta)) = (file.file_name().into_string(), file.metadata()) else {
            continue;
        };
        if !meta.is_file() {
            continue;
        }
        let used = meta.modified().unwrap_or(SystemTime::UNIX_EPOCH);
        match classify(&name) {
            CacheFile::Entry { module_hash } => entries.push(Entry {
                name,
                module_hash,
                bytes: meta.len(),
                used,
            }),
            CacheFile::Stamp => stamps.push(name),
            CacheFile::Temporary => {
                if now
                    .duration_since(used)
                    .is_ok_and(|age| age >= ABANDONED_AFTER)
                {
                    let _ = fs::remove_file(dir.join(&name));
                }
            }
            CacheFile::Other => {}
        }
    }
    // The entry just written first, then the most recently used; the name breaks ties, so that
    // two runs over the same directory remove the same files.
    entries.sort_by(|a, b| {
        (b.name == kept)
            .cmp(&(a.name == kept))
            .then(b.used.cmp(&a.used))
            .then(a.name.cmp(&b.name))
    });
    let mut total = 0u64;
    // Once one entry does not fit, every older one goes too: least recently used first.
    let mut full = false;
    let mut remaining = Vec::new();
    for entry in entries {
        total = total.saturating_add(entry.bytes);
        full = full || total > MAX_TOTAL_BYTES;
        if entry.name == kept || !full {
            remaining.push(entry.module_hash);
        } else {
            let _ = fs::remove_file(dir.join(&entry.name));
        }
    }
    for name in stamps {
        let names_an_entry = fs::read_to_string(dir.join(&name)).is_ok_and(|text| {
            stamp::recorded_hash(&text).is_some_and(|hash| remaining.iter().any(|h| h == hash))
        });
        if !names_an_entry {
            let _ = fs::remove_file(dir.join(&name));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::temp;

    const MIB: u64 = 1 << 20;
    const DAY: Duration = Duration::from_secs(24 * 60 * 60);

    /// An entry's name for a module hash made of one repeated hex digit.
    fn entry(digit: char) -> String {
        format!(
            "{}-wasmtime-48.0.8-x86_64.cwasm",
            digit.to_string().repeat(64)
        )
    }

    /// A file of `bytes` (sparse: the test writes no data) last modified at `modified`.
    fn file(dir: &Path, name: &str, bytes: u64, modified: SystemTime) {
        let f = fs::File::create(dir.join(name)).unwrap();
        f.set_len(bytes).unwrap();
        f.set_modified(modified).unwrap();
    }

    fn names(dir: &Path) -> Vec<String> {
        let mut names: Vec<String> = fs::read_dir(dir)
            .unwrap()
            .map(|e| e.unwrap().file_name().into_string().unwrap())
            .collect();
        names.sort();
        names
    }

    #[test]
    fn only_the_names_the_cache_writes_are_its_own() {
        let hash = "0123456789abcdef".repeat(4);
        assert_eq!(
            classify(&format!("{hash}-wasmtime-48.0.8-x86_64.cwasm")),
            CacheFile::Entry {
                module_hash: hash.clone()
            }
        );
        // Older wasmtime versions and other architectures are entries too.
        assert!(matches!(
            classify(&format!("{hash}-wasmtime-47.0.0-aarch64.cwasm")),
            CacheFile::Entry { .. }
        ));
        assert_eq!(classify("stamp-2049-131"), CacheFile::Stamp);
        assert_eq!(classify(".tmp-4242-stamp-2049-131"), CacheFile::Temporary);
        assert_eq!(
            classify(&format!(".tmp-1-{hash}-wasmtime-48.0.8-x86_64.cwasm")),
            CacheFile::Temporary
        );
        for other in [
            "notes.txt".to_string(),
            "stamp-2049-131.bak".into(),
            "stamp-2049".into(),
            ".tmp-pid-x".into(),
            format!("{}-wasmtime-48.0.8-x86_64.cwasm", &hash[1..]),
            format!("{}-wasmtime-48.0.8-x86_64.cwasm", hash.to_uppercase()),
            format!("{hash}-wasmtime-48.0.8-x86_64.cwasm.old"),
            format!("{hash}.cwasm"),
            "é".repeat(40),
        ] {
            assert_eq!(classify(&other), CacheFile::Other, "{other}");
        }
    }

    #[test]
    fn the_least_recently_used_entries_beyond_the_total_go_with_their_stamps() {
        let dir = temp("prune-lru");
        let now = SystemTime::now();
        file(&dir, &entry('a'), 120 * MIB, now - 10 * DAY);
        file(&dir, &entry('b'), 120 * MIB, now - 5 * DAY);
        file(&dir, &entry('c'), 100 * MIB, now - DAY);
        file(&dir, &entry('d'), MIB, now - 20 * DAY);
        file(&dir, &entry('e'), 2 * MIB, now);
        for (stamp, digit) in [("stamp-1-1", 'a'), ("stamp-1-2", 'c'), ("stamp-1-3", 'f')] {
            let line = format!(
                "cutover-wasm-stamp-v1 1 2 3 4 5 6 7 {}\n",
                digit.to_string().repeat(64)
            );
            fs::write(dir.join(stamp), line).unwrap();
        }
        fs::write(dir.join("stamp-1-4"), "damaged").unwrap();
        file(&dir, ".tmp-1-old", MIB, now - 2 * ABANDONED_AFTER);
        file(&dir, ".tmp-2-writing", MIB, now);
        file(&dir, "notes.txt", 900 * MIB, now - 100 * DAY);

        prune(&dir, &dir.join(entry('e')), now);
        // e (just written) 2, c 102, b 222 MiB fit; a would make 342, so a goes, and d, older
        // still, although it is small. The stamps of a, of no entry (f) and the damaged one go.
        let mut expected = vec![
            ".tmp-2-writing".to_string(),
            entry('b'),
            entry('c'),
            entry('e'),
            "notes.txt".into(),
            "stamp-1-2".into(),
        ];
        expected.sort();
        assert_eq!(names(&dir), expected);
        // Pruning again changes nothing.
        prune(&dir, &dir.join(entry('e')), now);
        assert_eq!(names(&dir), expected);
        fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn the_entry_just_written_stays_even_alone_over_the_total() {
        let dir = temp("prune-kept");
        let now = SystemTime::now();
        file(&dir, &entry('a'), MAX_TOTAL_BYTES + 1, now - DAY);
        file(&dir, &entry('b'), MIB, now);
        prune(&dir, &dir.join(entry('a')), now);
        assert_eq!(names(&dir), vec![entry('a')]);
        fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn a_hit_marks_its_entry_used_at_most_once_a_day() {
        let dir = temp("prune-used");
        let now = SystemTime::now();
        let path = dir.join(entry('a'));
        let modified = |p: &Path| fs::metadata(p).unwrap().modified().unwrap();
        for (age, moved) in [
            (DAY - Duration::from_secs(60), false),
            (DAY, true),
            (30 * DAY, true),
        ] {
            file(&dir, &entry('a'), MIB, now - age);
            let before = modified(&path);
            mark_used(&path, &fs::metadata(&path).unwrap(), now);
            let expected = if moved { now } else { before };
            assert_eq!(modified(&path), expected, "age {age:?}");
        }
        fs::remove_dir_all(&dir).unwrap();
    }
}
