//! Cache of compiled modules, so that only the first run of a module pays for Cranelift.
//!
//! Entries are `<dir>/<BLAKE3 of the module bytes>-wasmtime-<version>-<arch>.cwasm`, the output of
//! [`Module::serialize`]. The cache is an optimisation only: any failure to read or write it
//! falls back to compiling in memory, silently (a KRM function's stderr is for its results).
//!
//! Finding the entry needs the module's hash. The module is several MiB, and hashing it was most
//! of the host's own time on a small input (docs/wasm.md, Compiled-code cache), so a hash is
//! remembered with the file's state in a stamp (`stamp`), and a run that finds the file
//! unchanged takes the hash from there. Otherwise the module is hashed in one pass, streamed
//! through a small buffer rather than read into fresh memory as large as the module.
//!
//! The cache stays bounded (`prune`): a miss that stores an entry removes the least recently
//! used ones beyond a total size, and a hit marks its entry used.

use std::fs;
use std::io::{Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};
use std::time::SystemTime;

use wasmtime::error::Context;
use wasmtime::{Engine, Module};

use crate::prune;
use crate::stamp::{self, FileState};

/// The wasmtime version compiled in; part of every cache key (kept equal to the exact pin in
/// Cargo.toml by the `wasmtime_version_matches_the_pin` test).
pub const WASMTIME_VERSION: &str = "48.0.8";

/// The cache directory: `$CUTOVER_WASM_CACHE_DIR` (`off` disables caching), else
/// `$XDG_CACHE_HOME/cutover-wasm`, else `$HOME/.cache/cutover-wasm`.
pub fn dir() -> Option<PathBuf> {
    let var = |name| std::env::var_os(name).filter(|v| !v.is_empty());
    if let Some(dir) = var("CUTOVER_WASM_CACHE_DIR") {
        return (dir != "off").then(|| PathBuf::from(dir));
    }
    if let Some(xdg) = var("XDG_CACHE_HOME") {
        return Some(PathBuf::from(xdg).join("cutover-wasm"));
    }
    var("HOME").map(|home| PathBuf::from(home).join(".cache").join("cutover-wasm"))
}

/// Loads the module at `path`: from the cache when a valid entry exists, else compiled (and
/// stored in the cache when `cache_dir` is given and writable).
pub fn load(engine: &Engine, path: &Path, cache_dir: Option<&Path>) -> wasmtime::Result<Module> {
    let Some(dir) = cache_dir else {
        return compile(engine, &read(path)?, path);
    };
    let cannot_read = || format!("cannot read module {}", path.display());
    let mut file = fs::File::open(path).with_context(cannot_read)?;
    let state = FileState::of(&file.metadata().with_context(cannot_read)?);
    if let Some(hash) = stamp::lookup(dir, &state)
        && let Some(module) = cached(engine, &dir.join(entry_name(&hash)))
    {
        return Ok(module);
    }
    let hash = hash_stream(&mut file).with_context(cannot_read)?;
    if let Some(module) = cached(engine, &dir.join(entry_name(&hash))) {
        record_unless_changed(dir, &file, &state, &hash);
        return Ok(module);
    }
    // A miss: the entry is named after the bytes compiled, hashed again here, not after the
    // streamed hash above; the file may have been rewritten in between, and an entry must never
    // hold code compiled from other bytes than its name says.
    file.seek(SeekFrom::Start(0)).with_context(cannot_read)?;
    let mut bytes = Vec::new();
    file.read_to_end(&mut bytes).with_context(cannot_read)?;
    let module = compile(engine, &bytes, path)?;
    let hash = blake3::hash(&bytes);
    let entry = dir.join(entry_name(&hash));
    if let Ok(serialized) = module.serialize()
        && store(&entry, &serialized).is_ok()
    {
        record_unless_changed(dir, &file, &state, &hash);
        // The only time the cache grows, so the time to bound it.
        prune::prune(dir, &entry, SystemTime::now());
    }
    Ok(module)
}

/// The cached module in `entry`, if there is a valid one; a corrupt or incompatible entry is
/// removed (and then recompiled and replaced by the caller).
fn cached(engine: &Engine, entry: &Path) -> Option<Module> {
    let meta = fs::metadata(entry).ok().filter(fs::Metadata::is_file)?;
    // SAFETY: `deserialize_file` maps the file and runs its machine code, so it must be the
    // output of `Module::serialize` and nothing else. Only `store` below writes files under
    // these names, and it writes them complete to a temporary name and then renames them,
    // so a reader never sees a partial entry. The name carries the BLAKE3 hash of the module
    // (computed, or taken from a stamp recorded with it: `stamp`) and the wasmtime version, and
    // wasmtime itself checks the header (version, target, engine settings) and rejects a
    // mismatch, which we treat like a miss. What this cannot stop is someone who can write to
    // the user's cache directory planting code — but such a person can as well replace the
    // executables in the user's own directories.
    match unsafe { Module::deserialize_file(engine, entry) } {
        Ok(module) => {
            prune::mark_used(entry, &meta, SystemTime::now());
            Some(module)
        }
        Err(_) => {
            let _ = fs::remove_file(entry);
            None
        }
    }
}

/// Writes the module's stamp, so that the next run need not hash it, if the file is as it was
/// before it was hashed (a change meanwhile moves its ctime, and the stamp would not match).
fn record_unless_changed(dir: &Path, file: &fs::File, before: &FileState, hash: &blake3::Hash) {
    if let Ok(meta) = file.metadata()
        && FileState::of(&meta) == *before
    {
        stamp::record(dir, before, hash, SystemTime::now(), store);
    }
}

fn read(path: &Path) -> wasmtime::Result<Vec<u8>> {
    fs::read(path).with_context(|| format!("cannot read module {}", path.display()))
}

/// The hash of what `reader` yields, read through a 64 KiB buffer rather than into memory as
/// large as the module (whose fresh pages cost more to fault in than the hash costs to compute).
fn hash_stream(reader: &mut impl Read) -> std::io::Result<blake3::Hash> {
    let mut hasher = blake3::Hasher::new();
    hasher.update_reader(reader)?;
    Ok(hasher.finalize())
}

fn compile(engine: &Engine, bytes: &[u8], path: &Path) -> wasmtime::Result<Module> {
    Module::new(engine, bytes).with_context(|| format!("cannot compile module {}", path.display()))
}

/// The entry's file name for a module's hash.
fn entry_name(module_hash: &blake3::Hash) -> String {
    format!(
        "{}-wasmtime-{WASMTIME_VERSION}-{}.cwasm",
        module_hash.to_hex(),
        std::env::consts::ARCH
    )
}

/// Writes an entry atomically: a unique temporary file in the same directory, then a rename.
fn store(entry: &Path, serialized: &[u8]) -> std::io::Result<()> {
    let dir = entry.parent().unwrap_or(Path::new("."));
    create_private_dir(dir)?;
    let tmp = dir.join(format!(
        ".tmp-{}-{}",
        std::process::id(),
        entry
            .file_name()
            .map_or_else(Default::default, |n| n.to_string_lossy())
    ));
    let written = fs::File::create(&tmp).and_then(|mut f| {
        f.write_all(serialized)?;
        f.sync_all()
    });
    match written.and_then(|()| fs::rename(&tmp, entry)) {
        Ok(()) => Ok(()),
        Err(e) => {
            let _ = fs::remove_file(&tmp);
            Err(e)
        }
    }
}

/// Creates the cache directory readable by its owner only: its files become executable code.
fn create_private_dir(dir: &Path) -> std::io::Result<()> {
    let mut builder = fs::DirBuilder::new();
    builder.recursive(true);
    #[cfg(unix)]
    std::os::unix::fs::DirBuilderExt::mode(&mut builder, 0o700);
    builder.create(dir)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wasmtime_version_matches_the_pin() {
        let manifest = include_str!("../Cargo.toml");
        assert!(manifest.contains(&format!("wasmtime = {{ version = \"={WASMTIME_VERSION}\"")));
    }

    #[test]
    fn entry_names_differ_by_module_content() {
        assert_ne!(
            entry_name(&blake3::hash(b"a")),
            entry_name(&blake3::hash(b"b"))
        );
        // BLAKE3's published value for "abc".
        assert!(entry_name(&blake3::hash(b"abc")).starts_with(
            "6437b3ac38465133ffb63b75273a8db548c558465d79db03fd359c6cd5bd9d85-wasmtime-48.0.8-"
        ));
    }

    #[test]
    fn the_streamed_hash_is_the_hash_of_the_bytes() {
        let dir = std::env::temp_dir().join(format!("cutover-wasm-hash-{}", std::process::id()));
        fs::create_dir_all(&dir).unwrap();
        let path = dir.join("module.wasm");
        // Longer than the 64 KiB read buffer, and not a multiple of it.
        let bytes: Vec<u8> = (0..200_001u32).map(|i| (i % 251) as u8).collect();
        fs::write(&path, &bytes).unwrap();
        let streamed = hash_stream(&mut fs::File::open(&path).unwrap()).unwrap();
        fs::remove_dir_all(&dir).unwrap();
        assert_eq!(streamed, blake3::hash(&bytes));
    }
}
