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

//!
//! This file holds the image's own tests and the run against the native binary; `container/kpt.rs`
//! the kpt runs, `container/kustomize.rs` the kubectl kustomize runs, `container/support.rs` what
//! they share.

mod common;
#[path = "container/kpt.rs"]
mod kpt;
#[path = "container/kustomize.rs"]
mod kustomize;
#[path = "container/support.rs"]
mod support;

use std::collections::BTreeMap;
use std::fs;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::Instant;

use common::copy_dir;
use serde_yaml::Value;
use support::*;

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
