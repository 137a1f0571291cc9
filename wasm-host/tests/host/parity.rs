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

/// The module is built with WebAssembly's fixed-width SIMD, as `.cargo/config.toml` asks: LLVM
/// vectorizes its loops over bytes as it does natively with SSE2 (docs/wasm.md, "The module's
/// loops vectorized"). A `RUSTFLAGS` variable in the environment replaces that setting; the module
/// would then run slower with nothing else to show for it, so this checks what was built: the
/// module validates with SIMD on, and is refused by an engine with SIMD off for using it.
#[test]
fn the_module_is_built_with_webassembly_simd() {
    let bytes = std::fs::read(crate::common::module()).expect("read the module");
    let validate = |simd: bool| {
        let mut config = wasmtime::Config::new();
        // Relaxed SIMD builds on SIMD: wasmtime refuses the one off without the other.
        config.wasm_simd(simd).wasm_relaxed_simd(simd);
        let engine = wasmtime::Engine::new(&config).expect("engine");
        wasmtime::Module::validate(&engine, &bytes)
    };
    validate(true).expect("the module validates with SIMD on");
    let refused = validate(false).expect_err("the module uses no SIMD instruction");
    let message = format!("{refused:#}");
    assert!(
        message.contains("SIMD"),
        "refused for another reason: {message}"
    );
}

/// The module reads stdin in chunks of 1 MiB (`read_stdin` in src/main.rs, WASI only): inputs
/// one byte short of a chunk, exactly one, one byte over, and several chunks long come out as
/// they do natively, with every item.
#[test]
fn stdin_read_in_chunks_gives_the_native_output_at_every_chunk_boundary() {
    const CHUNK: usize = 1 << 20;
    let module = crate::common::module();
    for size in [
        CHUNK - 1,
        CHUNK,
        CHUNK + 1,
        2 * CHUNK,
        3 * CHUNK + CHUNK / 2,
    ] {
        let (input, last_item) = config_maps_of_size(size);
        assert_eq!(input.len(), size);
        let want = run(&native(), &[], &[], &input);
        assert!(want.status.success(), "native run on {size} bytes failed");
        assert!(
            String::from_utf8_lossy(&want.stdout).contains(&last_item),
            "native output on {size} bytes lacks {last_item}"
        );
        let got = run_host(&module, &[], &input);
        assert_eq!(
            (got.status.code(), &got.stdout, &got.stderr),
            (want.status.code(), &want.stdout, &want.stderr),
            "{size} bytes: the module's output differs from native"
        );
    }
}

/// A ResourceList of exactly `size` bytes: ConfigMaps of about 1 KB, a function config that
/// passes them through, and a comment filling the rest. Also returns the last ConfigMap's name.
fn config_maps_of_size(size: usize) -> (Vec<u8>, String) {
    const FUNCTION_CONFIG: &str = "functionConfig:\n  apiVersion: fn.cutover.dev/v1alpha1\n  \
        kind: LoadBalancerAnnouncer\n  metadata:\n    name: cutover\n  spec:\n    announcer: cilium\n";
    let payload = "x".repeat(900);
    let mut text =
        String::from("apiVersion: config.kubernetes.io/v1\nkind: ResourceList\nitems:\n");
    let mut last = String::new();
    for i in 0.. {
        let item = format!(
            "- apiVersion: v1\n  kind: ConfigMap\n  metadata:\n    name: cm-{i:05}\n  data:\n    payload: {payload}\n"
        );
        // Room for the function config and a comment line of at least "#\n".
        if text.len() + item.len() + FUNCTION_CONFIG.len() + 2 > size {
            break;
        }
        text.push_str(&item);
        last = format!("cm-{i:05}");
    }
    text.push_str(FUNCTION_CONFIG);
    let fill = size - text.len() - 2;
    text.push('#');
    text.push_str(&"p".repeat(fill));
    text.push('\n');
    (text.into_bytes(), last)
}
