//! The prepull mode against how sylva-units really runs units: the unit carries the Helm revision
//! the `root-dependency-<rev>` Job waits for (and refuses bundles that mix revisions), it reconciles
//! the configured payload source, a workload cluster's unit targets the workload cluster, the
//! speaker is recognised from the chart values, and the `output: sylva-values` form writes a unit
//! sylva-units' own schema accepts, back where the values were read, and takes it out again
//! (`prepull_sylva/values_form.rs`).

mod common;
#[path = "prepull_sylva/values_form.rs"]
mod values_form;

use common::prepull::*;
use common::{
    edit_item, example_source as source, find, items, ok, run_list, set_path as set, with_spec,
    yaml,
};
use common::{json_schema, package_copy};
use serde_yaml::Value;

fn revision(item: &Value) -> &Value {
    &item["metadata"]["annotations"]["sylva-units-helm-revision"]
}

/// The input items re-rendered by a later sylva-units release: every `root-dependency-3` and
/// revision annotation `3` becomes `4`; what the mode generated stays as it was.
fn next_release(list: &Value) -> Value {
    let mut next = list.clone();
    for item in next["items"].as_sequence_mut().unwrap() {
        if item["metadata"]["annotations"][GENERATED_BY].is_string() {
            continue;
        }
        let text = serde_yaml::to_string(item)
            .unwrap()
            .replace("root-dependency-3", "root-dependency-4")
            .replace(
                "sylva-units-helm-revision: '3'",
                "sylva-units-helm-revision: '4'",
            );
        *item = yaml(&text);
    }
    next
}

#[test]
fn the_unit_follows_the_release_revision_across_releases() {
    let first = ok(&source("prepull-upgrade-native-bgp"));
    let unit = find(&first, "Kustomization", "metallb-image-prepull");
    assert_eq!(revision(unit), "3");
    assert_eq!(
        unit["metadata"]["labels"]["sylva-units/root-dependency-wait"],
        ""
    );
    // Every Kustomization the root-dependency Job waits for carries the same revision.
    for item in items(&first) {
        if item["metadata"]["labels"]["sylva-units/root-dependency-wait"].is_string() {
            assert_eq!(revision(item), "3", "{:?}", item["metadata"]["name"]);
        }
    }
    let next = next_release(&first);
    assert_eq!(revision(find(&next, "Kustomization", "metallb")), "4");
    let second = ok(&next);
    let unit = find(&second, "Kustomization", "metallb-image-prepull");
    assert_eq!(
        revision(unit),
        "4",
        "a stale revision would stall root-dependency-4"
    );
    assert_eq!(
        unit["spec"]["dependsOn"],
        yaml("[{name: root-dependency-4}]")
    );
    assert_eq!(items(&ok(&second)), items(&second), "idempotent");
}

#[test]
fn units_that_would_deadlock_the_release_are_errors_naming_them() {
    let base = source("prepull-upgrade-native-bgp");
    // A sibling with the wait label but no revision annotation.
    let list = edit_item(base.clone(), "Kustomization", "cluster-vip", |k| {
        k["metadata"]["annotations"]
            .as_mapping_mut()
            .unwrap()
            .remove("sylva-units-helm-revision");
    });
    let e = fails(&list, "metadata.annotations.sylva-units-helm-revision");
    assert_eq!(e["resourceRef"]["name"], "cluster-vip");
    assert!(
        e["message"].as_str().unwrap().contains("cluster-vip (no"),
        "{e:?}"
    );
    assert_eq!(e["tags"]["check"], "helm-revision");
    // The gated Kustomization itself without it.
    let list = edit_item(base.clone(), "Kustomization", "metallb", |k| {
        k["metadata"]["annotations"]
            .as_mapping_mut()
            .unwrap()
            .remove("sylva-units-helm-revision");
    });
    let e = fails(&list, "metadata.annotations.sylva-units-helm-revision");
    assert_eq!(e["resourceRef"]["name"], "metallb");
    // The status Kustomization (not a unit, but waited for) of another revision.
    let list = edit_item(base, "Kustomization", "sylva-units-status", |k| {
        k["metadata"]["annotations"]["sylva-units-helm-revision"] = "2".into();
    });
    let e = fails(&list, "metadata.annotations.sylva-units-helm-revision");
    assert_eq!(e["resourceRef"]["name"], "sylva-units-status");
}

#[test]
fn a_gate_open_run_without_source_fails_and_a_closed_one_does_not_need_it() {
    let e = fails(
        &edit_fc(source("prepull-upgrade-native-bgp"), |spec| {
            spec.remove("source");
        }),
        "spec.source",
    );
    let message = e["message"].as_str().unwrap();
    assert!(message.contains("source is required"), "{message}");
    assert!(message.contains("e.g. source: {sourceRef:"), "{message}");
    assert_eq!(e["resourceRef"]["kind"], "MetalLBImagePrepull");
    // ConfigMap form: the data key.
    let mut list = source("prepull-upgrade-bfd-peers");
    for key in [
        "source.sourceRef.kind",
        "source.sourceRef.name",
        "source.path",
    ] {
        list["functionConfig"]["data"]
            .as_mapping_mut()
            .unwrap()
            .remove(key);
    }
    let e = fails(&list, "data.source");
    assert!(
        e["message"]
            .as_str()
            .unwrap()
            .contains("source.sourceRef.name=")
    );
    // Gate closed: nothing to publish, no source needed.
    let closed = edit_fc(source("prepull-fresh-install"), |spec| {
        spec.remove("source");
    });
    let out = ok(&closed);
    assert_eq!(items(&out), items(&closed));
}

#[test]
fn the_removed_fields_say_what_replaced_them() {
    let base = source("prepull-upgrade-native-bgp");
    let e = fails(
        &with_spec(
            base.clone(),
            "sourceRef",
            yaml("{kind: GitRepository, name: sylva-core}"),
        ),
        "spec.sourceRef",
    );
    assert!(
        e["message"]
            .as_str()
            .unwrap()
            .contains("replaced by source.sourceRef")
    );
    let e = fails(
        &with_spec(base, "path", "./metallb-image-prepull".into()),
        "spec.path",
    );
    let message = e["message"].as_str().unwrap();
    assert!(
        message.contains("payloadDir") && message.contains("source.path"),
        "{message}"
    );
    fails(
        &configmap_form_with("sourceRef.name", "sylva-core"),
        "data.sourceRef",
    );
}

#[test]
fn the_payload_lands_in_payload_dir_and_the_unit_reconciles_source_path() {
    let (_guard, dir) = package_copy(&example("prepull-upgrade-native-bgp"));
    let fc_path = dir.join("fn-config.yaml");
    let fc = std::fs::read_to_string(&fc_path).unwrap();
    std::fs::write(
        &fc_path,
        fc.replace("spec:\n", "spec:\n  payloadDir: platform/prepull\n"),
    )
    .unwrap();
    let run = kpt_render(&dir);
    assert_eq!(run.code, 0, "{}", run.stderr);
    for file in ["daemonset.yaml", "waiter.yaml", "kustomization.yaml"] {
        assert!(dir.join("platform/prepull").join(file).is_file(), "{file}");
    }
    assert!(!dir.join("metallb-image-prepull").exists());
    let unit: Value =
        yaml(&std::fs::read_to_string(dir.join("sylva-units/metallb-image-prepull.yaml")).unwrap());
    assert_eq!(
        unit["spec"]["path"],
        "./clusters/mgmt/metallb-image-prepull"
    );
    assert_eq!(unit["spec"]["sourceRef"]["name"], "platform-config");
}

#[test]
fn a_workload_cluster_unit_goes_where_the_metallb_release_goes() {
    let input = source("prepull-workload-cluster");
    let out = ok(&input);
    let unit = find(&out, "Kustomization", "metallb-image-prepull");
    assert_eq!(unit["metadata"]["namespace"], "wc1");
    assert_eq!(
        unit["spec"]["kubeConfig"],
        yaml("{secretRef: {name: wc1-kubeconfig}}")
    );
    assert_eq!(
        unit["spec"]["kubeConfig"],
        find(&input, "Kustomization", "namespace-defs")["spec"]["kubeConfig"],
        "the kubeConfig sylva-units gives the kustomize units of this cluster"
    );
    assert_eq!(unit["spec"]["targetNamespace"], "metallb-system");
    // Without the HelmRelease's kubeConfig nothing says where the nodes are: an error.
    let list = edit_item(input, "Kustomization", "metallb", |k| {
        let patch = &mut k["spec"]["patches"][0]["patch"];
        let text = patch.as_str().unwrap().replace(
            "    kubeConfig:\n      secretRef:\n        name: wc1-kubeconfig\n",
            "",
        );
        assert!(!text.contains("kubeConfig"), "{text}");
        *patch = text.into();
    });
    let e = fails(&list, "spec.kubeConfig");
    assert_eq!(e["resourceRef"]["name"], "metallb");
    assert_eq!(e["tags"]["check"], "kube-config");
    let message = e["message"].as_str().unwrap();
    assert!(message.contains("namespace-defs"), "{message}");
}

#[test]
fn the_speaker_is_recognised_from_the_chart_values_not_its_name() {
    // The air-gapped release renames the speaker repository (no metallb/speaker in the path).
    let list = with_spec(
        source("prepull-airgapped-overrides"),
        "images",
        yaml(
            "[registry.airgap.example/quay.io/metallb/frr-k8s:v0.0.25, registry.airgap.example/metallb-speaker:v0.16.1]",
        ),
    );
    let e = fails(&list, "spec.images[1]");
    let message = e["message"].as_str().unwrap();
    assert!(
        message.contains(
            "speaker.image.repository in the HelmRelease patched in by Kustomization metallb"
        ),
        "{message}"
    );
    // Read from the sylva values alone too.
    let list = edit_item(list, "Kustomization", "metallb", |k| {
        k["spec"].as_mapping_mut().unwrap().remove("patches");
    });
    let e = fails(&list, "spec.images[1]");
    assert!(
        e["message"]
            .as_str()
            .unwrap()
            .contains("sylva values metallb_helm_values")
    );
    // A chart override that points the frr-k8s image at the speaker repository is refused too.
    let list = edit_item(
        source("prepull-airgapped-overrides"),
        "Kustomization",
        "metallb",
        |k| {
            let patch = &mut k["spec"]["patches"][0]["patch"];
            let text = patch.as_str().unwrap().replace(
                "repository: registry.airgap.example/quay.io/metallb/frr-k8s",
                "repository: registry.airgap.example/metallb-speaker",
            );
            *patch = text.into();
        },
    );
    let run = run_list(&list);
    assert_eq!(run.code, 1);
    assert!(
        run.stderr.contains("is the MetalLB speaker image"),
        "{}",
        run.stderr
    );
}

#[test]
fn the_readme_example_config_names_the_source_and_runs() {
    let readme = std::fs::read_to_string(common::root().join("README.md")).unwrap();
    let block = readme
        .split("```yaml\n")
        .skip(1)
        .filter_map(|b| b.split("```").next())
        .find(|b| b.contains("kind: MetalLBImagePrepull"))
        .expect("a MetalLBImagePrepull example in README.md");
    let fc = yaml(block);
    assert!(
        fc["spec"]["source"]["sourceRef"]["name"].is_string(),
        "{block}"
    );
    assert!(fc["spec"]["source"]["path"].is_string(), "{block}");
    let mut list = source("prepull-upgrade-native-bgp");
    list["functionConfig"] = fc;
    let out = ok(&list);
    let unit = find(&out, "Kustomization", "metallb-image-prepull");
    assert_eq!(
        unit["spec"]["path"],
        "./clusters/mgmt/metallb-image-prepull"
    );
}

#[test]
fn a_unit_of_the_same_name_that_cutover_did_not_write_is_an_error_naming_it() {
    // A later sylva-units could render its own metallb-image-prepull unit.
    let mut list = source("prepull-upgrade-native-bgp");
    let mut theirs = find(&list, "Kustomization", "cluster-vip").clone();
    let text = serde_yaml::to_string(&theirs)
        .unwrap()
        .replace("cluster-vip", "metallb-image-prepull")
        .replace("index: '3'", "index: '9'");
    theirs = yaml(&text);
    list["items"].as_sequence_mut().unwrap().push(theirs);
    let e = fails(&list, "metadata.annotations");
    assert_eq!(e["resourceRef"]["name"], "metallb-image-prepull");
    let message = e["message"].as_str().unwrap();
    assert!(message.contains("not generated by cutover"), "{message}");
    assert!(
        message.contains("MetalLBImagePrepull must not run"),
        "{message}"
    );
    // The same in the values: an error on the values item, whatever the output form.
    let values = source("prepull-sylva-values");
    let with_theirs = edit_item(values, "ConfigMap", "sylva-units-values", |cm| {
        let text = cm["data"]["values"].as_str().unwrap().replace(
            "  monitoring:\n",
            "  metallb-image-prepull: {enabled: true}\n  monitoring:\n",
        );
        cm["data"]["values"] = text.into();
    });
    let e = fails(&with_theirs, "data.values");
    assert_eq!(e["resourceRef"]["name"], "sylva-units-values");
    let message = e["message"].as_str().unwrap();
    assert!(
        message
            .contains("units.metallb-image-prepull in ConfigMap sylva-system/sylva-units-values"),
        "{message}"
    );
}
