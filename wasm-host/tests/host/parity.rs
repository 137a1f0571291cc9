//! Parity: the WASM module through the host gives byte-identical stdout, identical stderr and the
//! same exit code as the native binary, on every example and every error-path input.

use std::path::{Path, PathBuf};
use std::process::Command;

use crate::common::{native, packages, root, run, run_host, shared_cache};

/// One test input: a name for messages and the ResourceList bytes.
struct Input {
    name: String,
    bytes: Vec<u8>,
}

/// Every package of [`common::packages`] as kpt hands it to a function, every ready-made
/// `examples/*/resourcelist.yaml`, and every `tests/inputs/*/*.yaml`.
fn inputs() -> Vec<Input> {
    let mut inputs: Vec<Input> = packages()
        .into_iter()
        .map(|p| Input {
            name: p.dir.display().to_string(),
            bytes: kpt_source(&p.dir, &p.fn_config),
        })
        .collect();
    let mut files: Vec<PathBuf> = sorted_entries(&root().join("examples"))
        .into_iter()
        .map(|dir| dir.join("resourcelist.yaml"))
        .filter(|file| file.is_file())
        .collect();
    for group in sorted_entries(&root().join("tests/inputs")) {
        files.extend(
            sorted_entries(&group)
                .into_iter()
                .filter(|file| file.extension().is_some_and(|e| e == "yaml")),
        );
    }
    inputs.extend(files.into_iter().map(|file| Input {
        name: file.display().to_string(),
        bytes: std::fs::read(&file).expect("read input"),
    }));
    inputs
}

fn sorted_entries(dir: &Path) -> Vec<PathBuf> {
    let mut entries: Vec<PathBuf> = std::fs::read_dir(dir)
        .map(|d| d.map(|e| e.expect("directory entry").path()).collect())
        .unwrap_or_default();
    entries.sort();
    entries
}

/// The ResourceList kpt would give a function for `package`.
fn kpt_source(package: &Path, fn_config: &Path) -> Vec<u8> {
    let out = Command::new("kpt")
        .args(["fn", "source"])
        .arg(package)
        .arg("--fn-config")
        .arg(fn_config)
        .output()
        .expect("kpt is needed for the parity test (scripts/install-deps.sh checks for it)");
    assert!(
        out.status.success(),
        "kpt fn source {}: {}",
        package.display(),
        String::from_utf8_lossy(&out.stderr)
    );
    out.stdout
}

#[test]
fn wasm_output_is_byte_identical_to_native_on_every_input() {
    let inputs = inputs();
    let errors_dir = root().join("tests/inputs/errors");
    assert!(
        inputs
            .iter()
            .filter(|i| i.name.starts_with(errors_dir.to_str().unwrap()))
            .count()
            >= 9,
        "error-path inputs missing from {}",
        errors_dir.display()
    );
    let module = crate::common::module();
    let mut mismatches = Vec::new();
    for input in &inputs {
        let want = run(&native(), &[], &[], &input.bytes);
        let got = run_host(&module, &[], &input.bytes);
        if (want.status.code(), &want.stdout, &want.stderr)
            != (got.status.code(), &got.stdout, &got.stderr)
        {
            mismatches.push(format!(
                "{}:\n  native exit {:?}, stderr {:?}, {} bytes out\n  wasm   exit {:?}, stderr {:?}, {} bytes out",
                input.name,
                want.status.code(),
                String::from_utf8_lossy(&want.stderr),
                want.stdout.len(),
                got.status.code(),
                String::from_utf8_lossy(&got.stderr),
                got.stdout.len(),
            ));
        }
    }
    assert!(mismatches.is_empty(), "{}", mismatches.join("\n"));
    eprintln!("parity held on {} inputs", inputs.len());
}

#[test]
fn the_default_module_is_the_one_built_alongside_the_host() {
    // Make sure it exists where the lookup expects it (target/wasm32-wasip1/release).
    crate::common::module();
    let input = std::fs::read(root().join("tests/inputs/valid/announcer-metallb.yaml")).unwrap();
    let cache = shared_cache();
    let got = run(
        &crate::common::host(),
        &[],
        &[("CUTOVER_WASM_CACHE_DIR", cache.to_str().unwrap())],
        &input,
    );
    let want = run(&native(), &[], &[], &input);
    assert_eq!(
        (got.status.code(), got.stdout, got.stderr),
        (want.status.code(), want.stdout, want.stderr)
    );
}
