//! Cache of compiled modules, so that only the first run of a module pays for Cranelift.
//!
//! Entries are `<dir>/<sha256 of the module bytes>-wasmtime-<version>-<arch>.cwasm`, the output of
//! [`Module::serialize`]. The cache is an optimisation only: any failure to read or write it
//! falls back to compiling in memory, silently (a KRM function's stderr is for its results).

use std::fs;
use std::io::Write;
use std::path::{Path, PathBuf};

use sha2::{Digest, Sha256};
use wasmtime::error::Context;
use wasmtime::{Engine, Module};

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
    let bytes = fs::read(path).with_context(|| format!("cannot read module {}", path.display()))?;
    let Some(entry) = cache_dir.map(|dir| dir.join(entry_name(&bytes))) else {
        return compile(engine, &bytes, path);
    };
    if entry.is_file() {
        // SAFETY: `deserialize_file` maps the file and runs its machine code, so it must be the
        // output of `Module::serialize` and nothing else. Only `store` below writes files under
        // these names, and it writes them complete to a temporary name and then renames them,
        // so a reader never sees a partial entry. The name carries the SHA-256 of the module and
        // the wasmtime version, and wasmtime itself checks the header (version, target, engine
        // settings) and rejects a mismatch, which we treat like a miss. What this cannot stop is
        // someone who can write to the user's cache directory planting code — but such a person
        // can as well replace the executables in the user's own directories.
        match unsafe { Module::deserialize_file(engine, &entry) } {
            Ok(module) => return Ok(module),
            Err(_) => {
                // Corrupt or incompatible: recompile below and overwrite it.
                let _ = fs::remove_file(&entry);
            }
        }
    }
    let module = compile(engine, &bytes, path)?;
    if let Ok(serialized) = module.serialize() {
        let _ = store(&entry, &serialized);
    }
    Ok(module)
}

fn compile(engine: &Engine, bytes: &[u8], path: &Path) -> wasmtime::Result<Module> {
    Module::new(engine, bytes).with_context(|| format!("cannot compile module {}", path.display()))
}

/// The entry's file name for a module's bytes.
fn entry_name(module_bytes: &[u8]) -> String {
    let hash = Sha256::digest(module_bytes);
    let hex: String = hash.iter().map(|b| format!("{b:02x}")).collect();
    format!(
        "{hex}-wasmtime-{WASMTIME_VERSION}-{}.cwasm",
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
        assert_ne!(entry_name(b"a"), entry_name(b"b"));
        assert!(entry_name(b"a").starts_with(
            "ca978112ca1bbdcafac231b39a23dc4da786eff8147c4e72b9807785afee48bb-wasmtime-48.0.8-"
        ));
    }
}
