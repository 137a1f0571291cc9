//! The README's user-facing commands, run literally: the shell blocks README.md marks
//! `<!-- readme-test: NAME -->`, in a newcomer's environment (see [`Newcomer`]), and the claims
//! next to them (kubectl kustomize and exec functions, the kustomize examples).

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::Command;

use crate::common::{self, run_cmd};

/// A shell block of README.md marked `<!-- readme-test: NAME [fails-with="TEXT"] -->` on the
/// line before it.
#[derive(Debug)]
struct Snippet {
    name: String,
    fails_with: Option<String>,
    script: String,
}

fn snippets() -> Vec<Snippet> {
    let readme = std::fs::read_to_string(common::root().join("README.md")).unwrap();
    let marker =
        regex::Regex::new(r#"^<!-- readme-test: (\S+)(?: fails-with="([^"]*)")? -->$"#).unwrap();
    let mut lines = readme.lines();
    let mut out = Vec::new();
    while let Some(line) = lines.next() {
        let Some(m) = marker.captures(line) else {
            continue;
        };
        assert_eq!(
            lines.next(),
            Some("```sh"),
            "{line}: no ```sh block after it"
        );
        let script: String = lines
            .by_ref()
            .take_while(|l| *l != "```")
            .map(|l| format!("{l}\n"))
            .collect();
        out.push(Snippet {
            name: m[1].to_owned(),
            fails_with: m.get(2).map(|f| f.as_str().to_owned()),
            script,
        });
    }
    out
}

/// Snippets that need podman and build or run the image (see tests/container.rs for the switch).
const CONTAINER_SNIPPETS: &[&str] = &["image-build", "kpt-image", "kustomize-container"];

/// A newcomer's machine in a scratch directory: the commands run "from the repository root" in
/// a directory where `examples` and `scripts` are the repository's (symlinks; the scripts find
/// the repository through them), with `cutover` installed (the binary of this build first on
/// PATH, standing in for `cargo install`), a fresh HOME (the README writes under `~/.local`),
/// and the user's default container store pointed at an empty directory: podman and buildah read
/// their default store from `CONTAINERS_STORAGE_CONF` when it is set, so the test never touches
/// the machine's /var/lib/containers and the image must land where the user's engine looks.
struct Newcomer {
    dir: PathBuf,
    env: Vec<(String, String)>,
}

impl Newcomer {
    fn new() -> Newcomer {
        let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("readme-newcomer");
        let _ = std::fs::remove_dir_all(&dir);
        let (work, home, bin, store, tmp) = (
            dir.join("work"),
            dir.join("home"),
            dir.join("bin"),
            dir.join("containers"),
            dir.join("tmp"),
        );
        for d in [&work, &home, &bin, &store, &tmp] {
            std::fs::create_dir_all(d).unwrap();
        }
        for link in ["examples", "scripts"] {
            std::os::unix::fs::symlink(common::root().join(link), work.join(link)).unwrap();
        }
        std::os::unix::fs::symlink(common::bin(), bin.join("cutover")).unwrap();
        // The user's default store, emptied: same driver as the machine's default (not set).
        std::fs::write(
            store.join("storage.conf"),
            format!(
                "[storage]\ngraphroot = \"{}\"\nrunroot = \"{}\"\n",
                store.join("storage").display(),
                store.join("run").display()
            ),
        )
        .unwrap();
        // This machine may not raise the open-files limit (README: the `rlimit type 7` note);
        // everything else is podman's default configuration.
        std::fs::write(
            store.join("containers.conf"),
            "[containers]\ndefault_ulimits = []\n",
        )
        .unwrap();
        let var = |k: &str| std::env::var(k).unwrap_or_default();
        let real_home = var("HOME");
        let or_default = |k: &str, d: &str| {
            let v = var(k);
            if v.is_empty() {
                format!("{real_home}/{d}")
            } else {
                v
            }
        };
        let env = vec![
            ("HOME".into(), home.display().to_string()),
            // Cargo and rustup where the user installed them (their defaults under the real HOME).
            ("CARGO_HOME".into(), or_default("CARGO_HOME", ".cargo")),
            ("RUSTUP_HOME".into(), or_default("RUSTUP_HOME", ".rustup")),
            ("PATH".into(), format!("{}:{}", bin.display(), var("PATH"))),
            ("TMPDIR".into(), tmp.display().to_string()),
            (
                "CONTAINERS_STORAGE_CONF".into(),
                store.join("storage.conf").display().to_string(),
            ),
            (
                "CONTAINERS_CONF".into(),
                store.join("containers.conf").display().to_string(),
            ),
        ];
        Newcomer { dir, env }
    }

    /// Removes everything. podman's overlay driver may leave its `overlay` directory bind-mounted
    /// after podman exits; unmount it first (nothing else is mounted there).
    fn remove(&self) {
        let overlay = self.dir.join("containers/storage/overlay");
        if overlay.exists() {
            let _ = Command::new("umount")
                .arg(&overlay)
                .stderr(std::process::Stdio::null())
                .status();
        }
        std::fs::remove_dir_all(&self.dir).unwrap();
    }

    fn work(&self) -> PathBuf {
        self.dir.join("work")
    }

    fn command(&self, program: &str) -> Command {
        let mut cmd = Command::new(program);
        cmd.current_dir(self.work());
        // What the test suite exports for its private store must not leak into the user's.
        for k in [
            "CONTAINERS_REGISTRIES_CONF",
            "CUTOVER_CONTAINERS_DIR",
            "CUTOVER_IMAGE_STORE",
            "KPT_FN_RUNTIME",
            "DOCKER_HOST",
            "NO_COLOR",
        ] {
            cmd.env_remove(k);
        }
        cmd.envs(self.env.iter().map(|(k, v)| (k, v)));
        cmd
    }

    fn run(&self, snippet: &Snippet) -> common::Run {
        eprintln!("--- README snippet {}:\n{}", snippet.name, snippet.script);
        run_cmd(
            self.command("bash")
                .args(["-euo", "pipefail", "-c"])
                .arg(&snippet.script),
        )
    }
}

fn container_tests_enabled(what: &str) -> bool {
    if std::env::var("CUTOVER_CONTAINER_TESTS").as_deref() == Ok("1") {
        return true;
    }
    let _ = writeln!(
        std::io::stderr(),
        "\n!!!!!!!! SKIPPED README snippet `{what}`: set CUTOVER_CONTAINER_TESTS=1 (scripts/test.sh does) !!!!!!!!\n"
    );
    false
}

/// Every marked README block, in README order, in one newcomer's environment: the exec blocks
/// always, the image blocks with `CUTOVER_CONTAINER_TESTS=1` (building the image into an empty
/// default store, then running it with kpt and kustomize from there).
#[test]
fn readme_commands_work_as_written() {
    let snippets = snippets();
    let names: Vec<&str> = snippets.iter().map(|s| s.name.as_str()).collect();
    for expected in [
        "kpt-eval-exec",
        "kpt-render-exec",
        "image-build",
        "kpt-image",
        "kustomize-container",
        "kustomize-exec-skip-is-visible",
    ] {
        assert!(
            names.contains(&expected),
            "README lost snippet {expected}: {names:?}"
        );
    }
    let user = Newcomer::new();
    for snippet in &snippets {
        if CONTAINER_SNIPPETS.contains(&snippet.name.as_str())
            && !container_tests_enabled(&snippet.name)
        {
            continue;
        }
        let run = user.run(snippet);
        let (out, err) = (run.stdout_str().to_owned(), run.stderr.clone());
        match &snippet.fails_with {
            Some(needle) => {
                assert_ne!(run.code, 0, "{}: succeeded\n{out}{err}", snippet.name);
                assert!(err.contains(needle.as_str()), "{}: {err}", snippet.name);
                continue;
            }
            None => assert_eq!(run.code, 0, "{}:\n{out}\n{err}", snippet.name),
        }
        check_snippet(&user, &snippet.name, &out, &err);
    }
    user.remove();
}

/// What each snippet must have done beyond exiting 0.
fn check_snippet(user: &Newcomer, name: &str, out: &str, err: &str) {
    let work = user.work();
    match name {
        "kpt-eval-exec" => {
            assert_eq!(err.matches("[PASS] \"cutover\"").count(), 2, "{err}");
            assert!(
                work.join("sylva-units-rendered/metallb-image-prepull")
                    .is_dir(),
                "the prepull unit was not added"
            );
        }
        "kpt-render-exec" => assert!(err.contains("[PASS] \"cutover\""), "{err}"),
        "image-build" => {
            assert!(out.contains("image ID"), "{out}");
            let images = run_cmd(user.command("podman").args([
                "image",
                "inspect",
                "--format",
                "{{.Id}}",
                "localhost/cutover:dev",
            ]));
            assert_eq!(
                images.code, 0,
                "the image is not in the user's default store: {}",
                images.stderr
            );
        }
        "kpt-image" => {
            assert!(err.contains("[PASS] \"localhost/cutover:dev\""), "{err}");
            // The image rendered what the exec binary renders.
            let exec = work.join("platform-exec");
            let cp = run_cmd(
                user.command("cp")
                    .args(["-r", "examples/announcer-cozystack-l2"])
                    .arg(&exec),
            );
            assert_eq!(cp.code, 0);
            let render = run_cmd(
                user.command("kpt")
                    .args(["fn", "render"])
                    .arg(&exec)
                    .arg("--allow-exec"),
            );
            assert_eq!(render.code, 0, "{}", render.stderr);
            for file in ["services.yaml", "metallb-config.yaml", "releases.yaml"] {
                let a = std::fs::read_to_string(exec.join(file)).unwrap();
                let b = std::fs::read_to_string(work.join("platform-image").join(file)).unwrap();
                assert_eq!(a, b, "{file}: image and exec render differ");
            }
            let original = std::fs::read_to_string(
                common::root().join("examples/announcer-cozystack-l2/services.yaml"),
            )
            .unwrap();
            assert_ne!(
                original,
                std::fs::read_to_string(exec.join("services.yaml")).unwrap(),
                "the render changed nothing"
            );
        }
        "kustomize-container" => {
            assert!(out.contains("kind: CiliumLoadBalancerIPPool"), "{out}");
        }
        other => panic!("no check for README snippet {other}"),
    }
}

/// What the README says about `kubectl kustomize` and exec functions: without the
/// `container: {network: true}` guard the function is skipped without a word (exit 0, items
/// unchanged, even with a config that must fail); with it the build fails.
#[test]
fn kubectl_kustomize_skips_exec_functions_unless_guarded() {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("readme-kustomize-exec");
    let _ = std::fs::remove_dir_all(&dir);
    common::copy_dir(&common::root().join("examples/kustomize-exec"), &dir);
    std::fs::copy(common::bin(), dir.join("cutover")).unwrap();
    let config = std::fs::read_to_string(dir.join("cutover.yaml")).unwrap();
    let failing = config.replace("announcer: cilium", "announcer: no-such-announcer");
    let unguarded = failing.replace("      container:\n        network: true\n", "");
    assert_ne!(unguarded, failing, "the guard lines moved");
    let build = || {
        run_cmd(
            Command::new("kubectl")
                .args(["kustomize", "--enable-alpha-plugins"])
                .arg(&dir),
        )
    };
    std::fs::write(dir.join("cutover.yaml"), &unguarded).unwrap();
    let skipped = build();
    assert_eq!(skipped.code, 0, "{}", skipped.stderr);
    let services = std::fs::read_to_string(dir.join("services.yaml")).unwrap();
    assert!(
        !skipped.stdout_str().contains("lbipam.cilium.io"),
        "the function ran"
    );
    assert!(
        services
            .lines()
            .filter(|l| l.contains("kind: Service"))
            .count()
            == skipped.stdout_str().matches("kind: Service\n").count()
    );
    std::fs::write(dir.join("cutover.yaml"), &failing).unwrap();
    let guarded = build();
    assert_ne!(guarded.code, 0);
    assert!(
        guarded
            .stderr
            .contains("network required but not enabled with --network"),
        "{}",
        guarded.stderr
    );
    std::fs::remove_dir_all(&dir).unwrap();
}

/// The kustomize function configs the README shows are the bundled examples' files (comments
/// aside), so the tested examples are what a reader copies.
#[test]
fn readme_kustomize_snippets_are_the_examples() {
    let readme = std::fs::read_to_string(common::root().join("README.md")).unwrap();
    let code = |text: &str| -> Vec<String> {
        text.lines()
            .filter(|l| !l.trim_start().starts_with('#') && !l.trim().is_empty())
            .map(str::to_owned)
            .collect()
    };
    let blocks: Vec<&str> = readme
        .split("```yaml\n")
        .skip(1)
        .map(|b| &b[..b.find("```").unwrap()])
        .collect();
    for (example, after) in [
        ("kustomize-container", "# cutover.yaml\n"),
        (
            "kustomize-exec",
            "# kustomization.yaml: transformers: [cutover.yaml]\n",
        ),
    ] {
        let file = std::fs::read_to_string(
            common::root()
                .join("examples")
                .join(example)
                .join("cutover.yaml"),
        )
        .unwrap();
        let block = blocks
            .iter()
            .find_map(|b| b.split_once(after).map(|(_, rest)| rest))
            .unwrap_or_else(|| panic!("README has no block with {after:?}"));
        assert_eq!(
            code(block),
            code(&file),
            "README snippet vs examples/{example}/cutover.yaml"
        );
    }
}
