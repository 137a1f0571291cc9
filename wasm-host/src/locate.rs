//! Finding the module when `--module` is not given.

use std::path::{Path, PathBuf};

use wasmtime::bail;
use wasmtime::error::Context;

/// The module file name the function crate builds.
const MODULE_NAME: &str = "cutover.wasm";

/// `--module` if given, else the module shipped next to this executable, else the one cargo
/// builds alongside it (`target/release/cutover-wasm` → `target/wasm32-wasip1/release/`).
pub fn module_path(explicit: Option<&str>) -> wasmtime::Result<PathBuf> {
    if let Some(path) = explicit {
        return Ok(PathBuf::from(path));
    }
    // current_exe resolves symlinks on Linux, so a symlink on PATH still finds the real install.
    let exe = std::env::current_exe().context("cannot locate this executable")?;
    let dir = exe.parent().unwrap_or(Path::new("."));
    let candidates = candidates(dir);
    match candidates.iter().find(|p| p.is_file()) {
        Some(found) => Ok(found.clone()),
        None => bail!(
            "no {MODULE_NAME} found (looked for {}); pass --module PATH",
            candidates
                .iter()
                .map(|p| p.display().to_string())
                .collect::<Vec<_>>()
                .join(" and ")
        ),
    }
}

fn candidates(exe_dir: &Path) -> Vec<PathBuf> {
    vec![
        exe_dir.join(MODULE_NAME),
        exe_dir
            .join("..")
            .join("wasm32-wasip1")
            .join("release")
            .join(MODULE_NAME),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn looks_next_to_the_executable_then_in_the_cargo_target_dir() {
        let c = candidates(Path::new("/x/target/release"));
        assert_eq!(c[0], Path::new("/x/target/release/cutover.wasm"));
        assert_eq!(
            c[1],
            Path::new("/x/target/release/../wasm32-wasip1/release/cutover.wasm")
        );
    }

    #[test]
    fn explicit_module_wins() {
        assert_eq!(
            module_path(Some("a.wasm")).unwrap(),
            PathBuf::from("a.wasm")
        );
    }
}
