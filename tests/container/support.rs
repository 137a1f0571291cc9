//! What the container tests share: scratch directories, runs of the image and of the native
//! binary, comparisons of runs, file trees and kpt results, logging shims for podman and docker,
//! and the kpt packages the parity tests run on (`examples/*/` and our own fixtures).

use super::*;
use common::examples::{TestCase, key_values};

/// A fresh scratch directory for one test, under cargo's per-target temp dir.
pub(super) fn scratch(test: &str) -> PathBuf {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR"))
        .join("container")
        .join(test);
    if dir.exists() {
        fs::remove_dir_all(&dir).unwrap();
    }
    fs::create_dir_all(&dir).unwrap();
    dir
}

pub(super) fn run(cmd: &mut Command, stdin: &[u8]) -> Output {
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

pub(super) fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

pub(super) fn podman_run(extra: &[&str], args: &[&str], stdin: &[u8]) -> Output {
    let mut cmd = Command::new("podman");
    cmd.args(["run", "--rm", "-i", "--pull=never"])
        .args(RUN_AS_ORCHESTRATORS_DO)
        .args(extra)
        .arg(IMAGE)
        .args(args);
    run(&mut cmd, stdin)
}

pub(super) fn native(args: &[&str], stdin: &[u8]) -> Output {
    run(Command::new(NATIVE).args(args), stdin)
}

/// Same bytes on stdout, same stderr, same exit code.
pub(super) fn assert_same_run(what: &str, native: &Output, container: &Output) {
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
pub(super) fn tree(dir: &Path) -> BTreeMap<String, Vec<u8>> {
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

pub(super) fn assert_same_tree(what: &str, a: &Path, b: &Path) {
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

/// Two kpt runs of one package, with the native binary and with the image, each on its own copy
/// (`(what kpt did, the copy, its results directory)`): the same exit code, the same files
/// afterwards byte for byte, the same results.
pub(super) fn assert_same_kpt_runs(
    name: &str,
    (by_exec, exec_dir, exec_results): (&Output, &Path, &Path),
    (by_image, image_dir, image_results): (&Output, &Path, &Path),
) {
    assert_eq!(
        by_exec.status.code(),
        by_image.status.code(),
        "{name}: kpt exit codes differ\nexec: {}\nimage: {}",
        text(&by_exec.stderr),
        text(&by_image.stderr)
    );
    assert_same_tree(name, exec_dir, image_dir);
    assert_eq!(
        normalized_results(exec_results),
        normalized_results(image_results),
        "{name}: results differ"
    );
}

/// A kpt `FunctionResultList` with what legitimately differs between runtimes removed: the
/// function's name (`exec: PATH` vs `image: NAME`) and trailing whitespace of `stderr` (kpt keeps
/// the final newline of an exec function's stderr and trims a container's).
pub(super) fn normalized_results(results_dir: &Path) -> Value {
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
pub(super) fn shim(dir: &Path, name: &str, target: &str) -> String {
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
pub(super) fn which(program: &str) -> String {
    common::which(program).display().to_string()
}

/// Asserts that every run logged by a shim used the flags kpt and kustomize promise.
pub(super) fn assert_logged_runs(log: &Path, image: &str) {
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
pub(super) struct Package {
    pub(super) dir: PathBuf,
    /// `fn-config.yaml` or `.expected/fn-config.yaml` (or `fnConfig:`), for `--fn-config`.
    pub(super) fn_config: Option<PathBuf>,
    /// `args:` of `.expected/config.yaml` as `key=value`, passed after `--` (instead of
    /// `--fn-config`, as tests/examples.rs does).
    pub(super) args: Vec<String>,
}

impl Package {
    pub(super) fn name(&self) -> String {
        self.dir
            .strip_prefix(REPO)
            .unwrap_or(&self.dir)
            .display()
            .to_string()
    }

    /// The functionConfig kpt builds from `-- key=value`, for `kpt fn source --fn-config`.
    pub(super) fn fn_config_file(&self, scratch: &Path) -> Option<PathBuf> {
        if self.args.is_empty() {
            return self.fn_config.clone();
        }
        let data: serde_yaml::Mapping = self
            .args
            .iter()
            .map(|kv| kv.split_once('=').expect("key=value"))
            .map(|(k, v)| (Value::from(k), Value::from(v)))
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

pub(super) fn packages() -> Vec<Package> {
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
            let case = TestCase::load(&dir);
            // examples/ keep the config next to the resources (the Kptfile's configPath); the
            // catalog layout has it in .expected/.
            let mut fn_config = [dir.join("fn-config.yaml"), expected.join("fn-config.yaml")]
                .into_iter()
                .find(|p| p.is_file());
            // kpt's test-runner field, if a package uses it instead of fn-config.yaml: a path
            // relative to the package (or to .expected/).
            let path = &case.config.fn_config;
            if !path.is_empty() {
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
            Package {
                dir,
                fn_config,
                args: key_values(&case.config.args),
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

/// The Kptfile with every cutover function of its pipeline (`exec: cutover` or
/// `image: localhost/cutover:dev`) replaced by `function` (`exec: PATH` or `image: NAME`).
pub(super) fn retarget(kptfile: &str, function: &str) -> String {
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
    // `.expected/config.yaml` `args:` become `-- key=value` words and the ConfigMap kpt builds.
    let packages = packages();
    let args = packages
        .iter()
        .find(|p| p.dir.ends_with("prepull-args"))
        .unwrap();
    assert_eq!(
        args.args,
        [
            "mode=metallb-image-prepull",
            "upgrade=true",
            "waitTimeout=5m"
        ]
    );
    let config = fs::read_to_string(args.fn_config_file(&scratch).unwrap()).unwrap();
    let config: Value = serde_yaml::from_str(&config).unwrap();
    assert_eq!(config["kind"], "ConfigMap");
    assert_eq!(config["data"]["upgrade"], "true");
    assert_eq!(config["data"]["waitTimeout"], "5m");
    fs::remove_dir_all(&scratch).unwrap();
}
