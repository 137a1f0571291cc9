//! The chain through the real kpt and kubectl kustomize.

use super::*;
/// The real kpt renders `example`; returns a builder: the kinds and names the real kubectl
/// kustomize builds from a payload sub-directory.
fn rendered(example: &str) -> (impl Sized, impl Fn(&str) -> BTreeSet<String>) {
    let src = common::root().join("examples").join(example);
    let (tmp, dir) = common::package_copy(&src);
    let run = common::run_cmd(
        common::kpt()
            .args(["fn", "render"])
            .arg(&dir)
            .args(["--allow-exec"])
            .env("PATH", common::path_with_bin()),
    );
    assert_eq!(run.code, 0, "{}", run.stderr);
    let build = move |sub: &str| {
        let run = common::run_cmd(
            Command::new("kubectl")
                .arg("kustomize")
                .arg(dir.join("cilium-l2-cutover").join(sub)),
        );
        assert_eq!(run.code, 0, "{sub}: {}", run.stderr);
        serde_yaml::Deserializer::from_slice(&run.stdout)
            .map(|d| Value::deserialize(d).unwrap())
            .filter(|v| !v.is_null())
            .map(|v| {
                format!(
                    "{}/{}",
                    v["kind"].as_str().unwrap(),
                    v["metadata"]["name"].as_str().unwrap()
                )
            })
            .collect::<BTreeSet<String>>()
    };
    (tmp, build)
}

/// The real kpt writes the package; the real kubectl kustomize builds each phase directory into
/// the objects that phase applies, and the fence at the payload root into nothing.
#[test]
fn payload_directories_build_with_kubectl_kustomize() {
    let (_tmp, build) = rendered("announcer-orchestrated-cutover");
    assert!(build("").is_empty());
    let prepare = build("prepare");
    for want in [
        "Service/web",
        "Service/dns-tcp",
        "HelmRelease/cilium",
        "CiliumLoadBalancerIPPool/public",
        "Namespace/cilium-l2-cutover",
        "ConfigMap/cilium-l2-cutover-plan",
    ] {
        assert!(prepare.contains(want), "{want}: {prepare:?}");
    }
    assert!(build("stop-speaker").contains("HelmRelease/metallb"));
    assert!(build("cutover").contains("CiliumL2AnnouncementPolicy/public"));
}

/// After the cleanup: stop-speaker builds its gate alone (MetalLB's objects left it), the
/// cleanup directory its gate, the others as before.
#[test]
fn payload_directories_build_after_the_cleanup() {
    let (_tmp, build) = rendered("announcer-orchestrated-cleanup");
    assert!(build("").is_empty());
    let stop = build("stop-speaker");
    assert_eq!(stop.len(), 1, "{stop:?}");
    assert!(stop.iter().all(|o| o.starts_with("Job/")), "{stop:?}");
    let cleanup = build("cleanup");
    assert_eq!(cleanup.len(), 1, "{cleanup:?}");
    assert!(
        cleanup
            .iter()
            .all(|o| o.starts_with("Job/cilium-l2-cutover-gate-cleanup-"))
    );
    assert!(build("prepare").contains("Service/dns-tcp"));
    assert!(build("cutover").contains("CiliumL2AnnouncementPolicy/public"));
}

/// The ConfigMap form (`kpt fn eval -- key=value`, nested keys dotted) through the real kpt,
/// then the typed form again on its output: nothing changes the second time.
#[test]
fn the_configmap_form_through_kpt_eval_and_a_second_run() {
    let src = common::root().join("examples/announcer-orchestrated-cutover");
    let (_tmp, dir) = common::package_copy(&src);
    let args = [
        "--",
        "mode=load-balancer-announcer",
        "announcer=cilium",
        "orchestrate.step=chain",
        "orchestrate.kubectlImage=r/kube-job:1@sha256:0000000000000000000000000000000000000000000000000000000000000000",
        "orchestrate.cutoverImage=ghcr.io/example/cutover:0.1.0@sha256:0000000000000000000000000000000000000000000000000000000000000000",
        "orchestrate.source.sourceRef.kind=GitRepository",
        "orchestrate.source.sourceRef.name=platform",
        "orchestrate.source.sourceRef.namespace=flux-system",
        "orchestrate.source.path=./clusters/prod/cilium-l2-cutover",
        "orchestrate.timeouts.prepare=20m",
    ];
    let (run, _) = common::kpt_eval(&dir, &args);
    assert_eq!(run.code, 0, "{}\n{}", run.stdout_str(), run.stderr);
    let diff = common::diff_and_commit(&dir);
    assert!(diff.contains("timeout: 23m"), "{diff}");
    let (run, _) = common::kpt_eval(&dir, &args);
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert_eq!(
        common::diff_and_commit(&dir),
        "",
        "second run changed files"
    );
}
