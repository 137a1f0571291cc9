//! `kubectl kustomize --enable-alpha-plugins` running the image, through a `docker` shim that
//! execs podman: as a transformer and as a generator.

use super::*;

/// `kubectl kustomize --enable-alpha-plugins` on a copy of `tests/fixtures/container/<fixture>`
/// in `scratch` (its `expected.yaml` left out of the copy), with a logging `docker` shim that
/// execs podman first on PATH, so /usr/local/bin/docker (a client without an engine) is never
/// reached. Asserts that every run the shim logged used the flags kustomize promises. Returns the
/// build and `expected.yaml`.
fn kustomize_build(scratch: &Path, fixture: &str) -> (Output, String) {
    let fixture = Path::new(REPO)
        .join("tests/fixtures/container")
        .join(fixture);
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
    (build, expected)
}

/// `kubectl kustomize --enable-alpha-plugins` on a kustomization whose `transformers:` entry runs
/// `container: {image: localhost/cutover:dev}`, through a `docker` shim that execs podman.
///
/// The expected outcome is the native binary's on the same resources and config: when it succeeds,
/// the build output must equal `expected.yaml`; when it fails, the build must fail with the
/// function's own error lines.
#[test]
fn kubectl_kustomize_runs_the_container_transformer() {
    if !enabled("kubectl_kustomize_runs_the_container_transformer") {
        return;
    }
    let scratch = scratch("kubectl_kustomize");
    let fixture = Path::new(REPO).join("tests/fixtures/container/kustomize");
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
    let (build, expected) = kustomize_build(&scratch, "kustomize");
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
    let (build, expected) = kustomize_build(&scratch, "kustomize-generator");
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
