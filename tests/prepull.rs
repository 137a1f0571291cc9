//! Integration tests of the `MetalLBImagePrepull` mode: the real binary on ResourceLists made
//! by the real `kpt fn source`, schema checks of every emitted object, the restricted profile on
//! every container, the rendered directory built by the real `kubectl kustomize`, the lifecycle
//! (re-run, changed images, gate closing), the kustomize generator call, and every error path.
//!
//! This file holds the payload and lifecycle tests; `prepull/kustomize.rs` the rendered directory
//! in kpt and kubectl kustomize and the generator call, `prepull/errors.rs` the error paths.

mod common;
#[path = "prepull/errors.rs"]
mod errors;
#[path = "prepull/kustomize.rs"]
mod kustomize;

use std::path::Path;

use common::prepull::*;
use common::{crd, k8s, package_copy, run_cmd, run_fn};
use common::{
    edit_item, example_source as source, find, items, ok, run_list, set_path as set, with_spec,
    yaml,
};
use k8s_openapi::api::apps::v1::DaemonSet;
use k8s_openapi::api::batch::v1::Job;
use k8s_openapi::api::core::v1::{PodSpec, ServiceAccount};
use k8s_openapi::api::rbac::v1::{Role, RoleBinding};
use serde_yaml::Value;

/// The pod template of a generated DaemonSet or Job, which must meet Pod Security "restricted"
/// (`name` is the example, for the failure message).
fn restricted_pod(obj: &Value, name: &str) -> PodSpec {
    let template = match obj["kind"].as_str().unwrap() {
        "DaemonSet" => {
            k8s::roundtrip::<DaemonSet>(obj)
                .unwrap()
                .spec
                .unwrap()
                .template
        }
        "Job" => k8s::roundtrip::<Job>(obj).unwrap().spec.unwrap().template,
        other => panic!("{name}: no pod template in a {other}"),
    };
    let pod = template.spec.unwrap();
    assert_eq!(
        k8s::restricted_violations(&pod),
        Vec::<String>::new(),
        "{name}"
    );
    pod
}

/// A generated Role that only reads (get/list/watch) some of `resources`.
fn assert_reads_only(obj: &Value, resources: &[&str]) {
    let role: Role = k8s::roundtrip(obj).unwrap();
    for rule in role.rules.unwrap() {
        assert!(
            rule.verbs
                .iter()
                .all(|v| ["get", "list", "watch"].contains(&v.as_str()))
        );
        for r in rule.resources.unwrap() {
            assert!(resources.contains(&r.as_str()), "{r}");
        }
    }
}

#[test]
fn every_emitted_object_validates_and_every_container_is_restricted() {
    for name in [
        "prepull-upgrade-native-bgp",
        "prepull-upgrade-bfd-peers",
        "prepull-airgapped-overrides",
    ] {
        let out = ok(&source(name));
        let objects = generated(&out);
        assert_eq!(
            objects.len(),
            7,
            "{name}: Flux unit, DaemonSet, 4 waiter objects, kustomization.yaml"
        );
        let mut containers = 0;
        for obj in objects {
            let kind = obj["kind"].as_str().unwrap();
            match (obj["apiVersion"].as_str().unwrap(), kind) {
                ("kustomize.toolkit.fluxcd.io/v1", "Kustomization") => {
                    crd::validate(obj).unwrap_or_else(|e| panic!("{name}: {e:?}"));
                }
                ("apps/v1", "DaemonSet") => {
                    let pod = restricted_pod(obj, name);
                    containers +=
                        pod.containers.len() + pod.init_containers.unwrap_or_default().len();
                }
                ("batch/v1", "Job") => {
                    containers += restricted_pod(obj, name).containers.len();
                }
                ("v1", "ServiceAccount") => {
                    k8s::roundtrip::<ServiceAccount>(obj).unwrap();
                }
                ("rbac.authorization.k8s.io/v1", "Role") => {
                    // Read-only: nothing but get/list/watch, daemonsets and pods only.
                    assert_reads_only(obj, &["daemonsets", "pods"]);
                }
                ("rbac.authorization.k8s.io/v1", "RoleBinding") => {
                    k8s::roundtrip::<RoleBinding>(obj).unwrap();
                }
                ("kustomize.config.k8s.io/v1beta1", "Kustomization") => {
                    assert_eq!(obj["resources"], yaml("[daemonset.yaml, waiter.yaml]"));
                    assert_eq!(
                        obj["metadata"]["annotations"]["config.kubernetes.io/local-config"],
                        "true"
                    );
                }
                other => panic!("unexpected object {other:?}"),
            }
        }
        // frr-k8s + frr init containers, pause, waiter.
        assert_eq!(containers, 4, "{name}");
    }
}

#[test]
fn the_unit_follows_its_siblings_and_gates_metallb() {
    let input = source("prepull-upgrade-native-bgp");
    let out = ok(&input);
    let unit = find(&out, "Kustomization", "metallb-image-prepull");
    let metallb_in = find(&input, "Kustomization", "metallb");
    assert_eq!(unit["metadata"]["namespace"], "sylva-system");
    // Exactly the configured source and path, never metallb's sylva-core source.
    assert_eq!(
        unit["spec"]["sourceRef"],
        yaml("{kind: GitRepository, name: platform-config}")
    );
    assert_ne!(unit["spec"]["sourceRef"], metallb_in["spec"]["sourceRef"]);
    assert_eq!(
        unit["spec"]["path"],
        "./clusters/mgmt/metallb-image-prepull"
    );
    assert_eq!(unit["spec"]["interval"], "24h");
    assert_eq!(unit["spec"]["retryInterval"], "1m");
    assert_eq!(unit["spec"]["prune"], true);
    assert_eq!(unit["spec"]["force"], false);
    assert_eq!(unit["spec"]["targetNamespace"], "metallb-system");
    assert_eq!(
        unit["spec"]["dependsOn"],
        yaml("[{name: root-dependency-3}]")
    );
    // The revision annotation the root-dependency-3 Job waits for, as on metallb.
    assert_eq!(
        unit["metadata"]["annotations"]["sylva-units-helm-revision"],
        metallb_in["metadata"]["annotations"]["sylva-units-helm-revision"]
    );
    assert_eq!(
        unit["metadata"]["annotations"]["sylva-units-helm-revision"],
        "3"
    );
    for chart_label in [
        "helm.sh/chart",
        "app.kubernetes.io/name",
        "app.kubernetes.io/instance",
        "app.kubernetes.io/version",
        "app.kubernetes.io/managed-by",
    ] {
        assert_eq!(
            unit["metadata"]["labels"][chart_label], metallb_in["metadata"]["labels"][chart_label],
            "{chart_label}"
        );
    }
    assert_eq!(
        unit["metadata"]["labels"]["sylva-units.unit"],
        "metallb-image-prepull"
    );
    assert_eq!(
        unit["metadata"]["labels"]["sylva-units/root-dependency-wait"],
        ""
    );
    assert!(
        unit["metadata"]["labels"]
            .get("sylva-units/protected")
            .is_none(),
        "protected would block pruning"
    );
    let job = job(&out);
    assert_eq!(
        unit["spec"]["healthChecks"][0]["name"],
        job["metadata"]["name"]
    );
    assert_eq!(unit["spec"]["healthChecks"][0]["kind"], "Job");
    // Bounded: Flux timeout > Job deadline > wait timeout (10m default).
    assert_eq!(unit["spec"]["timeout"], "16m");
    assert_eq!(job["spec"]["activeDeadlineSeconds"], 900);
    assert!(job["spec"]["backoffLimit"].as_i64().unwrap() <= 2);
    // No TTL: a deleted Job would be recreated by Flux and wait again every interval.
    assert!(job["spec"].get("ttlSecondsAfterFinished").is_none());
    // Same file directory as the gated unit, own file.
    assert_eq!(
        unit["metadata"]["annotations"]["config.kubernetes.io/path"],
        "sylva-units/metallb-image-prepull.yaml"
    );
    // metallb gains exactly one dependsOn entry; nothing else in it changes.
    let metallb_out = find(&out, "Kustomization", "metallb");
    let mut expected = metallb_in.clone();
    expected["spec"]["dependsOn"]
        .as_sequence_mut()
        .unwrap()
        .push(yaml("{name: metallb-image-prepull}"));
    assert_eq!(metallb_out, &expected);
    // Every other input item passes through untouched.
    for item in items(&input) {
        if item["metadata"]["name"] != "metallb" {
            assert!(items(&out).contains(item), "changed or dropped: {item:?}");
        }
    }
    // The speaker is never pre-pulled.
    let text = serde_yaml::to_string(&out).unwrap();
    assert!(!text.contains("metallb/speaker"));
}

#[test]
fn a_second_run_on_its_own_output_changes_nothing() {
    let first = ok(&source("prepull-upgrade-native-bgp"));
    let second = ok(&first);
    assert_eq!(items(&second), items(&first));
    let third = ok(&second);
    assert_eq!(items(&third), items(&first));
}

#[test]
fn orchestrator_annotations_on_the_gated_kustomization_survive_the_edit() {
    let mut input = source("prepull-upgrade-native-bgp");
    for item in input["items"].as_sequence_mut().unwrap() {
        if item["metadata"]["name"] == "metallb" {
            set(
                item,
                &["metadata", "annotations", "kustomize.config.k8s.io/id"],
                "kind: Kustomization\nname: metallb\n".into(),
            );
            set(
                item,
                &["metadata", "annotations", "config.k8s.io/id"],
                "7".into(),
            );
        }
    }
    let out = ok(&input);
    let metallb = find(&out, "Kustomization", "metallb");
    assert_eq!(metallb["metadata"]["annotations"]["config.k8s.io/id"], "7");
    assert!(metallb["metadata"]["annotations"]["kustomize.config.k8s.io/id"].is_string());
}

#[test]
fn a_changed_image_list_makes_a_new_job_and_drops_the_old_one() {
    let first = ok(&source("prepull-upgrade-native-bgp"));
    let old_job = job(&first)["metadata"]["name"].as_str().unwrap().to_owned();
    let mut again = first.clone();
    set(
        &mut again,
        &["functionConfig", "spec", "images"],
        yaml("[quay.io/metallb/frr-k8s:v0.0.26, quay.io/frrouting/frr:10.4.3]"),
    );
    let second = ok(&again);
    let new_job = job(&second)["metadata"]["name"]
        .as_str()
        .unwrap()
        .to_owned();
    assert_ne!(
        old_job, new_job,
        "Jobs are immutable: a new image list needs a new Job"
    );
    assert!(new_job.starts_with("metallb-image-prepull-wait-"));
    assert_eq!(
        items(&second).iter().filter(|i| i["kind"] == "Job").count(),
        1
    );
    let unit = find(&second, "Kustomization", "metallb-image-prepull");
    assert_eq!(unit["spec"]["healthChecks"][0]["name"], new_job.as_str());
    let ds = find(&second, "DaemonSet", "metallb-image-prepull");
    assert_eq!(
        ds["spec"]["template"]["spec"]["initContainers"][0]["image"],
        "quay.io/metallb/frr-k8s:v0.0.26"
    );
    // The replaced Job reuses the slot of the old one: no two items share a file slot.
    let job_file = &job(&second)["metadata"]["annotations"]["config.kubernetes.io/path"];
    assert_eq!(job_file, "metallb-image-prepull/waiter.yaml");
    // Deterministic: the same config gives the same name.
    assert_eq!(job(&ok(&again))["metadata"]["name"], new_job.as_str());
}

#[test]
fn when_the_gate_closes_the_unit_and_the_depends_on_entry_disappear() {
    let input = source("prepull-upgrade-native-bgp");
    let first = ok(&input);
    // The operator moves to L2 only: the BGP condition no longer holds.
    let mut closed = first.clone();
    set(
        &mut closed,
        &["functionConfig", "spec", "values"],
        yaml(
            "{_internal: {state: {is_upgrade: true}}, metallb: {l2_lbs: {address_pools: {p: {addresses: [10.0.0.1/32]}}}}}",
        ),
    );
    let out = ok(&closed);
    assert!(
        generated(&out).is_empty(),
        "generated objects must be removed"
    );
    assert_eq!(
        find(&out, "Kustomization", "metallb"),
        find(&input, "Kustomization", "metallb"),
        "the dependsOn entry is removed again"
    );
    let results = out["results"].as_sequence().unwrap();
    let removed = results
        .iter()
        .filter(|r| r["message"].as_str().unwrap().starts_with("removed "))
        .count();
    assert_eq!(
        removed, 8,
        "one info per removed object plus the dependsOn entry"
    );
    // Removing is idempotent too.
    assert_eq!(items(&ok(&out)), items(&out));
}

#[test]
fn a_noop_image_for_shell_less_images_is_restricted_too() {
    let list = with_spec(
        source("prepull-upgrade-native-bgp"),
        "noopImage",
        "docker.io/library/busybox:1.36.1-musl".into(),
    );
    let out = ok(&list);
    let ds: DaemonSet = k8s::roundtrip(find(&out, "DaemonSet", "metallb-image-prepull")).unwrap();
    let pod = ds.spec.unwrap().template.spec.unwrap();
    assert_eq!(k8s::restricted_violations(&pod), Vec::<String>::new());
    let init = pod.init_containers.unwrap();
    assert_eq!(init.len(), 3, "install-noop + frr-k8s + frr");
    assert_eq!(
        init[0].image.as_deref(),
        Some("docker.io/library/busybox:1.36.1-musl")
    );
    for c in &init[1..] {
        assert_eq!(c.command.as_deref(), Some(&["/noop/true".to_string()][..]));
    }
    // Both ways of saying how to no-op at once is a mistake.
    let both = with_spec(list, "noopCommand", yaml("[/bin/true]"));
    fails(&both, "spec.noopImage");
}

/// The upstream-chart path (no Sylva): every emitted object of the plain Flux, cozystack and
/// air-gapped examples, plus the optional BGP session check, validates against the vendored CRDs
/// and the k8s-openapi types, every pod is restricted, and every Role is read-only.
#[test]
fn upstream_chart_units_validate_and_are_restricted() {
    for (name, check) in [
        ("prepull-chart-flux-bgp", false),
        ("prepull-chart-flux-bgp", true),
        ("prepull-chart-cozystack", true),
        ("prepull-chart-airgapped", false),
    ] {
        let mut list = source(name);
        if check {
            list = with_spec(list, "bgpSessionCheck", yaml("{timeout: 5m}"));
        }
        let out = ok(&list);
        let objects = generated(&out);
        assert_eq!(
            objects.len(),
            if check { 13 } else { 7 },
            "{name}: Flux unit, DaemonSet, 4 waiter objects, kustomization.yaml (+ the session check's 6)"
        );
        let mut pods = 0;
        for obj in objects {
            match (
                obj["apiVersion"].as_str().unwrap(),
                obj["kind"].as_str().unwrap(),
            ) {
                ("kustomize.toolkit.fluxcd.io/v1", "Kustomization") => {
                    crd::validate(obj).unwrap_or_else(|e| panic!("{name}: {e:?}"));
                }
                ("apps/v1", "DaemonSet") | ("batch/v1", "Job") => {
                    restricted_pod(obj, name);
                    pods += 1;
                }
                ("v1", "ServiceAccount") => {
                    k8s::roundtrip::<ServiceAccount>(obj).unwrap();
                }
                ("rbac.authorization.k8s.io/v1", "Role") => {
                    assert_reads_only(obj, &["daemonsets", "pods", "bgpsessionstates"]);
                }
                ("rbac.authorization.k8s.io/v1", "RoleBinding") => {
                    k8s::roundtrip::<RoleBinding>(obj).unwrap();
                }
                ("kustomize.config.k8s.io/v1beta1", "Kustomization") => {
                    assert_eq!(
                        obj["metadata"]["annotations"]["config.kubernetes.io/local-config"],
                        "true"
                    );
                }
                other => panic!("unexpected object {other:?}"),
            }
        }
        assert_eq!(pods, if check { 3 } else { 2 }, "{name}");
        if check {
            let unit = find(&out, "Kustomization", "metallb-bgp-sessions");
            let gated = list["functionConfig"]["spec"]["kustomization"]
                .as_str()
                .unwrap_or("metallb");
            assert_eq!(unit["spec"]["dependsOn"][0]["name"], gated);
            assert!(
                unit["spec"]["path"]
                    .as_str()
                    .unwrap()
                    .ends_with("/bgp-sessions")
            );
            let said = out["results"]
                .as_sequence()
                .unwrap()
                .iter()
                .find(|r| r["tags"]["check"] == "bgp-sessions")
                .unwrap_or_else(|| panic!("{name}: no bgp-sessions result"));
            let message = said["message"].as_str().unwrap();
            assert!(
                message.contains(", which fails unless every frr-k8s BGPSessionState"),
                "{name}: {message}"
            );
            assert!(
                !message.contains("  "),
                "{name}: one space between words: {message}"
            );
        }
    }
}

/// The upstream-chart path leaves the package alone when the chart does not cross into 0.16,
/// and a second run on its own output changes nothing (with the session check too).
#[test]
fn upstream_chart_runs_are_idempotent_and_close_cleanly() {
    let list = with_spec(
        source("prepull-chart-flux-bgp"),
        "bgpSessionCheck",
        yaml("{timeout: 5m}"),
    );
    let first = ok(&list);
    let mut again = first.clone();
    again["results"] = Value::Null;
    let second = ok(&again);
    assert_eq!(items(&first), items(&second));
    // The live HelmRelease now runs 0.16.1: every generated object goes, the dependsOn too.
    let closed = edit_item(second, "HelmRelease", "metallb", |hr| {
        if hr["metadata"]["annotations"]["config.kubernetes.io/local-config"] == "true" {
            set(hr, &["status", "history"], yaml("[{chartVersion: 0.16.1}]"));
        }
    });
    let out = ok(&closed);
    assert!(generated(&out).is_empty());
    let ks = find(&out, "Kustomization", "metallb");
    assert!(ks["spec"]["dependsOn"].is_null(), "{:?}", ks["spec"]);
}
