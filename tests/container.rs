//! The container image, run by the real clients: podman, `kpt fn eval`/`kpt fn render` with
//! `KPT_FN_RUNTIME=podman`, and `kubectl kustomize --enable-alpha-plugins` through a `docker`
//! shim that execs podman. The parity tests compare the image with the native binary of this build
//! (`CARGO_BIN_EXE_cutover`), on copies of every `examples/*/` package and of our own fixtures.
//!
//! Needs root, podman, kpt, kubectl and the image `localhost/cutover:dev` built by
//! `scripts/build-image.sh --private`, with the environment of `scripts/containers-env.sh`
//! (private storage). `scripts/test.sh` provides all of that and sets `CUTOVER_CONTAINER_TESTS=1`; without
//! that variable these tests print a loud SKIPPED banner and pass, so `cargo test` stays usable on
//! a machine without podman. With it, anything missing is a failure, never a skip.

mod common;

use common::copy_dir;

use std::collections::BTreeMap;
use std::fs;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::Instant;

use serde_yaml::Value;

const IMAGE: &str = "localhost/cutover:dev";
const NATIVE: &str = env!("CARGO_BIN_EXE_cutover");
const REPO: &str = env!("CARGO_MANIFEST_DIR");
/// The size budget for the uncompressed image.
const MAX_IMAGE_BYTES: u64 = 8 * 1024 * 1024;
/// The flags kpt and kustomize pass to `docker run`/`podman run` (plus `--read-only`, which makes
/// sure the function never needs to write anywhere but stdout and stderr).
const RUN_AS_ORCHESTRATORS_DO: &[&str] = &[
    "--user",
    "nobody",
    "--network",
    "none",
    "--read-only",
    "--security-opt=no-new-privileges",
];

/// True when the container tests must run; prints an uncaptured banner when they are skipped.
fn enabled(test: &str) -> bool {
    if std::env::var("CUTOVER_CONTAINER_TESTS").as_deref() == Ok("1") {
        assert!(
            std::env::var_os("CONTAINERS_STORAGE_CONF").is_some(),
            "CUTOVER_CONTAINER_TESTS=1 but CONTAINERS_STORAGE_CONF is unset: \
             `source scripts/containers-env.sh` (scripts/test.sh does) so podman sees the image"
        );
        return true;
    }
    // Straight to the stderr handle: the test harness captures eprintln!, and a skip must show.
    let _ = writeln!(
        std::io::stderr(),
        "\n!!!!!!!! SKIPPED container test `{test}`: set CUTOVER_CONTAINER_TESTS=1 after \
         scripts/build-image.sh --private (scripts/test.sh does both) !!!!!!!!\n"
    );
    false
}

// ----------------------------------------------------------------------------------------------
// Helpers
// ----------------------------------------------------------------------------------------------

/// A fresh scratch directory for one test, under cargo's per-target temp dir.
fn scratch(test: &str) -> PathBuf {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR"))
        .join("container")
        .join(test);
    if dir.exists() {
        fs::remove_dir_all(&dir).unwrap();
    }
    fs::create_dir_all(&dir).unwrap();
    dir
}

fn run(cmd: &mut Command, stdin: &[u8]) -> Output {
    let started = Instant::now();
    let mut child = cmd
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("cannot start {cmd:?}: {e}"));
    // Write from another thread: a large input must not deadlock against a full stdout pipe.
    let mut pipe = child.stdin.take().unwrap();
    let input = stdin.to_vec();
    let writer = std::thread::spawn(move || {
        // The process may exit before reading everything (e.g. on a usage error).
        let _ = pipe.write_all(&input);
    });
    let out = child.wait_with_output().unwrap();
    writer.join().unwrap();
    eprintln!(
        "ran {:?} {:?} -> {:?} in {:.2}s",
        cmd.get_program(),
        cmd.get_args().collect::<Vec<_>>(),
        out.status.code(),
        started.elapsed().as_secs_f64()
    );
    out
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

fn podman_run(extra: &[&str], args: &[&str], stdin: &[u8]) -> Output {
    let mut cmd = Command::new("podman");
    cmd.args(["run", "--rm", "-i", "--pull=never"])
        .args(RUN_AS_ORCHESTRATORS_DO)
        .args(extra)
        .arg(IMAGE)
        .args(args);
    run(&mut cmd, stdin)
}

fn native(args: &[&str], stdin: &[u8]) -> Output {
    run(Command::new(NATIVE).args(args), stdin)
}

/// Same bytes on stdout, same stderr, same exit code.
fn assert_same_run(what: &str, native: &Output, container: &Output) {
    assert_eq!(
        native.status.code(),
        container.status.code(),
        "{what}: exit codes differ\nnative stderr: {}\ncontainer stderr: {}",
        text(&native.stderr),
        text(&container.stderr)
    );
    assert_eq!(
        text(&native.stdout),
        text(&container.stdout),
        "{what}: stdout differs"
    );
    assert_eq!(
        native.stdout, container.stdout,
        "{what}: stdout bytes differ"
    );
    assert_eq!(
        text(&native.stderr),
        text(&container.stderr),
        "{what}: stderr differs"
    );
}

/// Every file under `dir`, by relative path.
fn tree(dir: &Path) -> BTreeMap<String, Vec<u8>> {
    fn walk(root: &Path, dir: &Path, out: &mut BTreeMap<String, Vec<u8>>) {
        let mut entries: Vec<_> = fs::read_dir(dir).unwrap().map(Result::unwrap).collect();
        entries.sort_by_key(|e| e.file_name());
        for entry in entries {
            let path = entry.path();
            if entry.file_type().unwrap().is_dir() {
                walk(root, &path, out);
            } else {
                let rel = path
                    .strip_prefix(root)
                    .unwrap()
                    .to_string_lossy()
                    .into_owned();
                out.insert(rel, fs::read(&path).unwrap());
            }
        }
    }
    let mut out = BTreeMap::new();
    walk(dir, dir, &mut out);
    out
}

fn assert_same_tree(what: &str, a: &Path, b: &Path) {
    let (ta, tb) = (tree(a), tree(b));
    assert_eq!(
        ta.keys().collect::<Vec<_>>(),
        tb.keys().collect::<Vec<_>>(),
        "{what}: different files"
    );
    for (path, bytes) in &ta {
        assert!(
            bytes == &tb[path],
            "{what}: {path} differs\n--- exec:\n{}\n--- image:\n{}",
            text(bytes),
            text(&tb[path])
        );
    }
}

/// A kpt `FunctionResultList` with what legitimately differs between runtimes removed: the
/// function's name (`exec: PATH` vs `image: NAME`) and trailing whitespace of `stderr` (kpt keeps
/// the final newline of an exec function's stderr and trims a container's).
fn normalized_results(results_dir: &Path) -> Value {
    let path = results_dir.join("results.yaml");
    let raw = fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let mut doc: Value = serde_yaml::from_str(&raw).unwrap();
    if let Some(items) = doc.get_mut("items").and_then(Value::as_sequence_mut) {
        for item in items {
            let map = item.as_mapping_mut().unwrap();
            map.remove("exec");
            map.remove("image");
            if let Some(Value::String(s)) = map.get_mut("stderr") {
                *s = s.trim_end().to_owned();
            }
        }
    }
    doc
}

/// Puts `name` first on PATH: a script that logs its arguments to `<dir>/<name>.log` and execs
/// `target`. Returns the new PATH.
fn shim(dir: &Path, name: &str, target: &str) -> String {
    fs::create_dir_all(dir).unwrap();
    let script = dir.join(name);
    let log = dir.join(format!("{name}.log"));
    fs::write(
        &script,
        format!(
            "#!/bin/sh\n# Test shim: log the arguments, then run {target}.\n\
             printf '%s\\n' \"$*\" >> '{}'\nexec {target} \"$@\"\n",
            log.display()
        ),
    )
    .unwrap();
    let mut perms = fs::metadata(&script).unwrap().permissions();
    std::os::unix::fs::PermissionsExt::set_mode(&mut perms, 0o755);
    fs::set_permissions(&script, perms).unwrap();
    let path = std::env::var("PATH").unwrap_or_default();
    format!("{}:{path}", dir.display())
}

/// Absolute path of a program on PATH (the shims must not exec themselves).
fn which(program: &str) -> String {
    common::which(program).display().to_string()
}

/// Asserts that every run logged by a shim used the flags kpt and kustomize promise.
fn assert_logged_runs(log: &Path, image: &str) {
    let log = fs::read_to_string(log)
        .unwrap_or_else(|e| panic!("{}: {e} (the shim was never called)", log.display()));
    let runs: Vec<&str> = log.lines().filter(|l| l.starts_with("run ")).collect();
    assert!(!runs.is_empty(), "no `run` in the shim log:\n{log}");
    for line in runs {
        let args: Vec<&str> = line.split_whitespace().collect();
        for pair in [["--user", "nobody"], ["--network", "none"]] {
            assert!(
                args.windows(2).any(|w| w == pair),
                "run without {pair:?}: {line}"
            );
        }
        assert!(
            args.contains(&"--security-opt=no-new-privileges"),
            "run without no-new-privileges: {line}"
        );
        assert!(args.contains(&image), "run of another image: {line}");
    }
}

/// A kpt package to evaluate: `examples/*/` (from the mode engineers) and our own fixtures.
struct Package {
    dir: PathBuf,
    /// `fn-config.yaml` or `.expected/fn-config.yaml` (or `fnConfig:`), for `--fn-config`.
    fn_config: Option<PathBuf>,
    /// `args:` of `.expected/config.yaml`, passed as `-- key=value` (instead of `--fn-config`, as
    /// tests/examples.rs does).
    args: Vec<(String, String)>,
}

impl Package {
    fn name(&self) -> String {
        self.dir
            .strip_prefix(REPO)
            .unwrap_or(&self.dir)
            .display()
            .to_string()
    }

    fn kv_args(&self) -> Vec<String> {
        self.args.iter().map(|(k, v)| format!("{k}={v}")).collect()
    }

    /// The functionConfig kpt builds from `-- key=value`, for `kpt fn source --fn-config`.
    fn fn_config_file(&self, scratch: &Path) -> Option<PathBuf> {
        if self.args.is_empty() {
            return self.fn_config.clone();
        }
        let data: serde_yaml::Mapping = self
            .args
            .iter()
            .map(|(k, v)| (Value::from(k.as_str()), Value::from(v.as_str())))
            .collect();
        let mut metadata = serde_yaml::Mapping::new();
        metadata.insert("name".into(), "function-input".into());
        let mut config = serde_yaml::Mapping::new();
        config.insert("apiVersion".into(), "v1".into());
        config.insert("kind".into(), "ConfigMap".into());
        config.insert("metadata".into(), Value::Mapping(metadata));
        config.insert("data".into(), Value::Mapping(data));
        let doc = serde_yaml::to_string(&config).unwrap();
        let file = scratch.join(format!("{}-fn-config.yaml", self.name().replace('/', "_")));
        fs::write(&file, doc).unwrap();
        Some(file)
    }
}

fn packages() -> Vec<Package> {
    let mut dirs = Vec::new();
    for parent in ["examples", "tests/fixtures/container/packages"] {
        let Ok(entries) = fs::read_dir(Path::new(REPO).join(parent)) else {
            continue;
        };
        for entry in entries {
            let dir = entry.unwrap().path();
            if dir.join("Kptfile").is_file() {
                dirs.push(dir);
            }
        }
    }
    dirs.sort();
    let packages: Vec<Package> = dirs
        .into_iter()
        .map(|dir| {
            let expected = dir.join(".expected");
            // examples/ keep the config next to the resources (the Kptfile's configPath); the
            // brief's catalog layout has it in .expected/.
            let mut fn_config = [dir.join("fn-config.yaml"), expected.join("fn-config.yaml")]
                .into_iter()
                .find(|p| p.is_file());
            let mut args = Vec::new();
            if let Ok(raw) = fs::read_to_string(expected.join("config.yaml")) {
                let config: Value = serde_yaml::from_str(&raw).unwrap();
                // kpt's test-runner field, if an example uses it instead of fn-config.yaml: a path
                // relative to the package (or to .expected/).
                if let Some(path) = config.get("fnConfig").and_then(Value::as_str) {
                    let found = [dir.join(path), expected.join(path)]
                        .into_iter()
                        .find(|p| p.is_file());
                    assert!(
                        found.is_some(),
                        "{}: fnConfig {path} not found",
                        dir.display()
                    );
                    fn_config = found;
                }
                if let Some(map) = config.get("args").and_then(Value::as_mapping) {
                    for (k, v) in map {
                        let scalar = |v: &Value| match v {
                            Value::String(s) => s.clone(),
                            other => serde_yaml::to_string(other).unwrap().trim().to_owned(),
                        };
                        args.push((scalar(k), scalar(v)));
                    }
                }
            }
            Package {
                dir,
                fn_config,
                args,
            }
        })
        .collect();
    assert!(
        packages.len() >= 3,
        "the container fixtures are missing: {packages:?}",
        packages = packages.iter().map(Package::name).collect::<Vec<_>>()
    );
    packages
}

// ----------------------------------------------------------------------------------------------
// Tests
// ----------------------------------------------------------------------------------------------

/// The image is minimal, labelled, runs as a numeric non-root user with the function as its
/// entrypoint, carries both tags on the same image, and stays within the size budget.
#[test]
fn image_is_minimal_labelled_and_non_root() {
    if !enabled("image_is_minimal_labelled_and_non_root") {
        return;
    }
    let versioned = format!("localhost/cutover:{}", env!("CARGO_PKG_VERSION"));
    let out = run(
        Command::new("podman").args(["image", "inspect", IMAGE, &versioned]),
        b"",
    );
    assert!(out.status.success(), "{}", text(&out.stderr));
    let images: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let (dev, tagged) = (&images[0], &images[1]);
    assert_eq!(dev["Id"], tagged["Id"], ":dev and :<version> differ");
    assert_eq!(dev["Os"], "linux");
    assert_eq!(dev["Architecture"], "amd64");
    assert_eq!(dev["Config"]["User"], "65534:65534");
    assert_eq!(dev["Config"]["Entrypoint"], serde_json::json!(["/cutover"]));
    let labels = &dev["Config"]["Labels"];
    for (label, want) in [
        ("source", env!("CARGO_PKG_REPOSITORY")),
        ("version", env!("CARGO_PKG_VERSION")),
        ("licenses", env!("CARGO_PKG_LICENSE")),
        ("description", env!("CARGO_PKG_DESCRIPTION")),
    ] {
        assert_eq!(
            labels[format!("org.opencontainers.image.{label}")],
            want,
            "label {label}"
        );
    }
    let size = dev["Size"].as_u64().unwrap();
    eprintln!("image size: {size} bytes ({} KiB)", size / 1024);
    assert!(
        size <= MAX_IMAGE_BYTES,
        "image is {size} bytes, budget {MAX_IMAGE_BYTES}"
    );
}

/// The container runs as kpt and kustomize run it: user `nobody` (resolved through the image's
/// /etc/passwd), no network, read-only root file system, no new privileges.
#[test]
fn runs_as_nobody_without_network_on_a_read_only_root() {
    if !enabled("runs_as_nobody_without_network_on_a_read_only_root") {
        return;
    }
    let out = podman_run(&["--cap-drop=all"], &["--version"], b"");
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert_eq!(
        text(&out.stdout),
        format!("cutover {}\n", env!("CARGO_PKG_VERSION"))
    );
    // `nobody` works because the image's /etc/passwd knows it: an unknown name does not.
    let out = run(
        Command::new("podman").args([
            "run",
            "--rm",
            "--pull=never",
            "--network",
            "none",
            "--user",
            "no-such-user",
            IMAGE,
            "--version",
        ]),
        b"",
    );
    assert!(!out.status.success(), "an unknown user was accepted");
    assert!(
        text(&out.stderr).contains("no-such-user"),
        "{}",
        text(&out.stderr)
    );
}

/// `kpt fn source` of every package piped through the image and through the native binary:
/// byte-identical stdout, same stderr, same exit code. Also malformed and JSON input.
#[test]
fn resource_list_parity_with_the_native_binary() {
    if !enabled("resource_list_parity_with_the_native_binary") {
        return;
    }
    let scratch = scratch("resource_list_parity");
    let mut inputs: Vec<(String, Vec<u8>)> = vec![
        ("empty input".into(), Vec::new()),
        ("not YAML".into(), b"{[ this is not yaml".to_vec()),
        (
            "JSON ResourceList, ConfigMap config".into(),
            br#"{"apiVersion":"config.kubernetes.io/v1","kind":"ResourceList","items":[],
                "functionConfig":{"apiVersion":"v1","kind":"ConfigMap",
                "metadata":{"name":"x"},"data":{"mode":"load-balancer-announcer"}}}"#
                .to_vec(),
        ),
    ];
    for pkg in packages() {
        let mut cmd = Command::new("kpt");
        cmd.args(["fn", "source"]).arg(&pkg.dir);
        if let Some(fc) = pkg.fn_config_file(&scratch) {
            cmd.arg("--fn-config").arg(fc);
        }
        let out = run(&mut cmd, b"");
        assert!(out.status.success(), "kpt fn source: {}", text(&out.stderr));
        inputs.push((pkg.name(), out.stdout));
    }
    for (what, input) in &inputs {
        assert_same_run(what, &native(&[], input), &podman_run(&[], &[], input));
    }
    fs::remove_dir_all(&scratch).unwrap();
}

/// `kpt fn eval` of every package with `--exec` (native) and with `--image` (podman), each on its
/// own copy: the same files afterwards, byte for byte, the same exit code and the same results.
#[test]
fn kpt_fn_eval_image_matches_exec_on_every_package() {
    if !enabled("kpt_fn_eval_image_matches_exec_on_every_package") {
        return;
    }
    let scratch = scratch("kpt_fn_eval");
    // A logging podman shim proves kpt ran the image with --user nobody --network none.
    let shims = scratch.join("bin");
    let path = shim(&shims, "podman", &which("podman"));
    for (i, pkg) in packages().iter().enumerate() {
        let name = pkg.name();
        let (exec_dir, image_dir) = (
            scratch.join(format!("{i}-exec")),
            scratch.join(format!("{i}-image")),
        );
        copy_dir(&pkg.dir, &exec_dir);
        copy_dir(&pkg.dir, &image_dir);
        let eval = |dir: &Path, results: &Path, runtime: &[&str]| {
            let mut cmd = Command::new("kpt");
            cmd.args(["fn", "eval"])
                .arg(dir)
                .args(runtime)
                .arg("--results-dir")
                .arg(results)
                .env("KPT_FN_RUNTIME", "podman")
                .env("PATH", &path);
            if !pkg.args.is_empty() {
                cmd.arg("--").args(pkg.kv_args());
            } else if let Some(fc) = &pkg.fn_config {
                cmd.arg("--fn-config").arg(fc);
            }
            run(&mut cmd, b"")
        };
        let (exec_results, image_results) = (
            scratch.join(format!("{i}-exec-results")),
            scratch.join(format!("{i}-image-results")),
        );
        let by_exec = eval(&exec_dir, &exec_results, &["--exec", NATIVE]);
        let by_image = eval(
            &image_dir,
            &image_results,
            &["--image", IMAGE, "--image-pull-policy", "never"],
        );
        eprintln!("{name}: exit code {:?}", by_exec.status.code());
        assert_eq!(
            by_exec.status.code(),
            by_image.status.code(),
            "{name}: kpt exit codes differ\nexec: {}\nimage: {}",
            text(&by_exec.stderr),
            text(&by_image.stderr)
        );
        assert_same_tree(&name, &exec_dir, &image_dir);
        assert_eq!(
            normalized_results(&exec_results),
            normalized_results(&image_results),
            "{name}: results differ"
        );
    }
    assert_logged_runs(&shims.join("podman.log"), IMAGE);
    fs::remove_dir_all(&scratch).unwrap();
}

/// `kpt fn render` of every package with a Kptfile pipeline, twice: with the pipeline naming
/// `image: localhost/cutover:dev` (`KPT_FN_RUNTIME=podman`) and with it naming the native binary
/// (`exec:`). `exec: cutover` (the examples' form) and `image: localhost/cutover:dev` (the
/// `render-image` fixture) are rewritten into each other. Same files afterwards, same exit code,
/// same results.
#[test]
fn kpt_fn_render_image_matches_exec_on_every_package() {
    if !enabled("kpt_fn_render_image_matches_exec_on_every_package") {
        return;
    }
    let scratch = scratch("kpt_fn_render");
    let shims = scratch.join("bin");
    let path = shim(&shims, "podman", &which("podman"));
    let mut rendered_with_image = 0;
    for (i, pkg) in packages().iter().enumerate() {
        let name = pkg.name();
        let original = fs::read_to_string(pkg.dir.join("Kptfile")).unwrap();
        let image_kptfile = retarget(&original, &format!("image: {IMAGE}"));
        let exec_kptfile = retarget(&original, &format!("exec: {NATIVE}"));
        if !image_kptfile.contains(&format!("image: {IMAGE}")) {
            eprintln!("{name}: no cutover function in the Kptfile pipeline, not rendered");
            continue;
        }
        rendered_with_image += 1;
        let (image_dir, exec_dir) = (
            scratch
                .join(format!("{i}-image"))
                .join(pkg.dir.file_name().unwrap()),
            scratch
                .join(format!("{i}-exec"))
                .join(pkg.dir.file_name().unwrap()),
        );
        copy_dir(&pkg.dir, &image_dir);
        copy_dir(&pkg.dir, &exec_dir);
        fs::write(image_dir.join("Kptfile"), &image_kptfile).unwrap();
        fs::write(exec_dir.join("Kptfile"), &exec_kptfile).unwrap();
        let render = |dir: &Path, results: &Path, flags: &[&str]| {
            run(
                Command::new("kpt")
                    .args(["fn", "render"])
                    .arg(dir)
                    .args(flags)
                    .arg("--results-dir")
                    .arg(results)
                    .env("KPT_FN_RUNTIME", "podman")
                    .env("PATH", &path),
                b"",
            )
        };
        let (image_results, exec_results) = (
            scratch.join(format!("{i}-image-results")),
            scratch.join(format!("{i}-exec-results")),
        );
        let by_image = render(
            &image_dir,
            &image_results,
            &["--image-pull-policy", "never"],
        );
        let by_exec = render(&exec_dir, &exec_results, &["--allow-exec"]);
        eprintln!("{name}: render exit code {:?}", by_exec.status.code());
        assert_eq!(
            by_exec.status.code(),
            by_image.status.code(),
            "{name}: exit codes differ\nexec: {}\nimage: {}",
            text(&by_exec.stderr),
            text(&by_image.stderr)
        );
        // The Kptfiles differ by construction; everything else must not.
        fs::write(image_dir.join("Kptfile"), &original).unwrap();
        fs::write(exec_dir.join("Kptfile"), &original).unwrap();
        assert_same_tree(&name, &exec_dir, &image_dir);
        assert_eq!(
            normalized_results(&exec_results),
            normalized_results(&image_results),
            "{name}: results differ"
        );
    }
    assert!(rendered_with_image > 0, "no package has a cutover pipeline");
    assert_logged_runs(&shims.join("podman.log"), IMAGE);
    fs::remove_dir_all(&scratch).unwrap();
}

/// The Kptfile with every cutover function of its pipeline (`exec: cutover` or
/// `image: localhost/cutover:dev`) replaced by `function` (`exec: PATH` or `image: NAME`).
fn retarget(kptfile: &str, function: &str) -> String {
    let mut out = String::new();
    for line in kptfile.lines() {
        let trimmed = line.trim_end();
        let replaced = ["exec: cutover".to_owned(), format!("image: {IMAGE}")]
            .iter()
            .find_map(|from| trimmed.strip_suffix(from.as_str()))
            .filter(|head| head.trim_start_matches(' ').is_empty() || head.trim() == "-")
            .map(|head| format!("{head}{function}"));
        out.push_str(replaced.as_deref().unwrap_or(line));
        out.push('\n');
    }
    out
}

/// `kubectl kustomize --enable-alpha-plugins` on a kustomization whose `transformers:` entry runs
/// `container: {image: localhost/cutover:dev}`, through a `docker` shim that execs podman.
///
/// The expected outcome is the native binary's on the same resources and config: when it succeeds,
/// the build output must equal `expected.yaml`; when it fails (today: the announcer mode is a
/// stub), the build must fail with the function's own error lines. So nothing has to be switched
/// when the mode lands — but `expected.yaml` must then be reviewed if the mode changes the items.
#[test]
fn kubectl_kustomize_runs_the_container_transformer() {
    if !enabled("kubectl_kustomize_runs_the_container_transformer") {
        return;
    }
    let scratch = scratch("kubectl_kustomize");
    let fixture = Path::new(REPO).join("tests/fixtures/container/kustomize");
    let kustomization = scratch.join("kustomize");
    copy_dir(&fixture, &kustomization);
    // expected.yaml is not part of the build; keep it out of the copy's directory listing anyway.
    let expected = fs::read_to_string(fixture.join("expected.yaml")).unwrap();
    fs::remove_file(kustomization.join("expected.yaml")).unwrap();

    // What the native function does with the same items and config.
    let source = run(
        Command::new("kpt")
            .args(["fn", "source"])
            .arg(fixture.join("service.yaml"))
            .arg("--fn-config")
            .arg(fixture.join("cutover.yaml")),
        b"",
    );
    assert!(source.status.success(), "{}", text(&source.stderr));
    let reference = native(&[], &source.stdout);

    // The shim is first on PATH, so /usr/local/bin/docker (a client without an engine) is never
    // reached; it logs the arguments kustomize passes.
    let shims = scratch.join("bin");
    let path = shim(&shims, "docker", &which("podman"));
    let build = run(
        Command::new("kubectl")
            .args(["kustomize", "--enable-alpha-plugins"])
            .arg(&kustomization)
            .env("PATH", &path),
        b"",
    );
    assert_logged_runs(&shims.join("docker.log"), IMAGE);
    if reference.status.success() {
        assert!(
            build.status.success(),
            "kustomize failed: {}",
            text(&build.stderr)
        );
        assert_eq!(text(&build.stdout), expected, "kustomize build output");
    } else {
        assert!(
            !build.status.success(),
            "kustomize succeeded but the function fails natively"
        );
        let stderr = text(&build.stderr);
        let reference_stderr = text(&reference.stderr);
        assert!(!reference_stderr.trim().is_empty());
        for line in reference_stderr.lines() {
            assert!(
                stderr.contains(line),
                "kustomize stderr lacks the function's error {line:?}:\n{stderr}"
            );
        }
        eprintln!(
            "kubectl kustomize: failed with the function's error, as the native binary does:\n{reference_stderr}"
        );
    }
    fs::remove_dir_all(&scratch).unwrap();
}

/// The shims and tree helpers are plain Rust; keep them honest on machines without podman too.
#[test]
fn helpers_compare_trees_and_find_programs() {
    let scratch = scratch("helpers");
    copy_dir(
        &Path::new(REPO).join("tests/fixtures/container"),
        &scratch.join("a"),
    );
    copy_dir(
        &Path::new(REPO).join("tests/fixtures/container"),
        &scratch.join("b"),
    );
    assert_same_tree("copies", &scratch.join("a"), &scratch.join("b"));
    assert!(tree(&scratch.join("a")).contains_key("packages/render-image/Kptfile"));
    let kptfile = "pipeline:\n  mutators:\n  - exec: cutover\n    configPath: fn-config.yaml\n";
    let image = retarget(kptfile, &format!("image: {IMAGE}"));
    assert_eq!(
        image,
        kptfile.replace("exec: cutover", &format!("image: {IMAGE}"))
    );
    assert_eq!(
        retarget(&image, "exec: /x"),
        kptfile.replace("cutover", "/x")
    );
    assert_eq!(
        retarget("exec: cutover-other\n", "exec: /x"),
        "exec: cutover-other\n"
    );
    assert!(Path::new(&which("sh")).is_absolute());
    assert!(packages().iter().any(|p| p.fn_config.is_some()));
    assert!(packages().iter().any(|p| !p.args.is_empty()));
    fs::remove_dir_all(&scratch).unwrap();
}

/// `kubectl kustomize --enable-alpha-plugins` with the image as a **generator**: kustomize passes
/// only the function config, so the prepull mode relies on its inline values and explicit
/// `upgrade`, and emits the unit and its payload without the `dependsOn` rewrite. kustomize drops
/// the local-config `kustomization.yaml` item and strips the path annotations: the build is the
/// applyable payload plus the Flux Kustomization, exactly as in `expected.yaml`.
#[test]
fn kubectl_kustomize_runs_the_prepull_container_generator() {
    if !enabled("kubectl_kustomize_runs_the_prepull_container_generator") {
        return;
    }
    let scratch = scratch("kubectl_kustomize_generator");
    let fixture = Path::new(REPO).join("tests/fixtures/container/kustomize-generator");
    let kustomization = scratch.join("kustomize");
    copy_dir(&fixture, &kustomization);
    let expected = fs::read_to_string(fixture.join("expected.yaml")).unwrap();
    fs::remove_file(kustomization.join("expected.yaml")).unwrap();
    let shims = scratch.join("bin");
    let path = shim(&shims, "docker", &which("podman"));
    let build = run(
        Command::new("kubectl")
            .args(["kustomize", "--enable-alpha-plugins"])
            .arg(&kustomization)
            .env("PATH", &path),
        b"",
    );
    assert_logged_runs(&shims.join("docker.log"), IMAGE);
    assert!(
        build.status.success(),
        "kustomize failed: {}",
        text(&build.stderr)
    );
    let out = text(&build.stdout);
    assert_eq!(out, expected, "kustomize generator output");
    assert!(
        !out.contains("config.kubernetes.io/"),
        "orchestrator annotations leaked:\n{out}"
    );
    let kinds: Vec<&str> = out
        .lines()
        .filter_map(|l| l.strip_prefix("kind: "))
        .collect();
    assert_eq!(
        kinds,
        [
            "ServiceAccount",
            "Role",
            "RoleBinding",
            "DaemonSet",
            "Job",
            "Kustomization"
        ]
    );
}

/// function.yaml's runtimes describe this build: every `sha256: ...  # image ID` is the image ID
/// of `localhost/cutover:<version>`, every `sha256: ...  # exec binary` the sha256 of the image's
/// `/cutover`, which is the static release binary (scripts/build-static-binary.sh builds both,
/// reproducibly). `UPDATE_EXPECTED=1` rewrites them, as `scripts/release.sh --update` does.
#[test]
fn function_yaml_digests_are_this_build() {
    if !enabled("function_yaml_digests_are_this_build") {
        return;
    }
    let versioned = format!("localhost/cutover:{}", env!("CARGO_PKG_VERSION"));
    let out = run(
        Command::new("podman").args(["image", "inspect", "--format", "{{.Id}}", &versioned]),
        b"",
    );
    assert!(out.status.success(), "{}", text(&out.stderr));
    let image_id = text(&out.stdout)
        .trim()
        .trim_start_matches("sha256:")
        .to_owned();
    // The binary as it is in the image: copied out of a created (never started) container.
    let scratch = scratch("function_yaml_digests");
    let name = format!("cutover-digest-{}", std::process::id());
    let created = run(
        Command::new("podman").args(["create", "--pull=never", "--name", &name, &versioned]),
        b"",
    );
    assert!(created.status.success(), "{}", text(&created.stderr));
    let binary = scratch.join("cutover");
    let copied = run(
        Command::new("podman")
            .arg("cp")
            .arg(format!("{name}:/cutover"))
            .arg(&binary),
        b"",
    );
    run(Command::new("podman").args(["rm", &name]), b"");
    assert!(copied.status.success(), "{}", text(&copied.stderr));
    let sum = run(Command::new("sha256sum").arg(&binary), b"");
    let binary_sha = text(&sum.stdout)
        .split_whitespace()
        .next()
        .unwrap()
        .to_owned();
    let path = Path::new(REPO).join("function.yaml");
    let yaml = fs::read_to_string(&path).unwrap();
    let values = |comment: &str| -> Vec<String> {
        yaml.lines()
            .filter_map(|l| l.trim().strip_suffix(comment))
            .filter_map(|l| l.trim().strip_prefix("sha256: "))
            .map(str::to_owned)
            .collect()
    };
    let (ids, shas) = (values("# image ID"), values("# exec binary"));
    assert!(
        !ids.is_empty() && !shas.is_empty(),
        "no marked sha256 lines"
    );
    if std::env::var("UPDATE_EXPECTED").is_ok_and(|v| v == "1") {
        let mut updated = yaml.clone();
        for old in ids.iter().chain(&shas) {
            let new = if ids.contains(old) {
                &image_id
            } else {
                &binary_sha
            };
            updated = updated.replace(old.as_str(), new);
        }
        fs::write(&path, updated).unwrap();
    } else {
        for id in &ids {
            assert_eq!(
                id, &image_id,
                "function.yaml's container sha256 is not this build's image ID: scripts/release.sh --update"
            );
        }
        for sha in &shas {
            assert_eq!(
                sha, &binary_sha,
                "function.yaml's exec sha256 is not this build's binary: scripts/release.sh --update"
            );
        }
    }
    fs::remove_dir_all(&scratch).unwrap();
}
