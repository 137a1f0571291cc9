//! The prepull mode against how sylva-units really runs units: the unit carries the Helm revision
//! the `root-dependency-<rev>` Job waits for (and refuses bundles that mix revisions), it reconciles
//! the configured payload source, a workload cluster's unit targets the workload cluster, the
//! speaker is recognised from the chart values, and the `output: sylva-values` form writes a unit
//! sylva-units' own schema accepts, back where the values were read, and takes it out again.

mod common;

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
    let mut list = source("prepull-upgrade-bfd-peers");
    set(
        &mut list,
        &["functionConfig", "data", "sourceRef.name"],
        "sylva-core".into(),
    );
    fails(&list, "data.sourceRef");
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

/// The `values` text of the sylva-units-values ConfigMap, parsed.
fn configmap_values(list: &Value) -> Value {
    yaml(
        find(list, "ConfigMap", "sylva-units-values")["data"]["values"]
            .as_str()
            .unwrap(),
    )
}

#[test]
fn the_sylva_values_unit_is_one_sylva_units_accepts() {
    let out = ok(&source("prepull-sylva-values"));
    let values = configmap_values(&out);
    let unit = &values["units"]["metallb-image-prepull"];
    let (schema, defs) = json_schema::sylva_unit_schema();
    let instance = serde_json::to_value(unit).unwrap();
    json_schema::validate(&schema, &defs, &instance).unwrap_or_else(|e| panic!("{e:#?}"));
    assert_eq!(unit["repo"], "platform-config");
    assert_eq!(
        unit["kustomization_spec"]["path"],
        "./environment-values/mgmt/metallb-image-prepull"
    );
    assert_eq!(unit["kustomization_spec"]["wait"], false);
    let job = job(&out)["metadata"]["name"].clone();
    assert_eq!(unit["kustomization_spec"]["healthChecks"][0]["name"], job);
    assert_eq!(
        values["units"]["metallb"]["depends_on"]["metallb-image-prepull"],
        true
    );
    // The repo names a source_templates entry of the values (sylva-units makes the sourceRef).
    assert_eq!(
        values["source_templates"]["platform-config"]["kind"],
        "GitRepository"
    );
    // The rest of the document is untouched.
    let input = configmap_values(&source("prepull-sylva-values"));
    assert_eq!(values["metallb"], input["metallb"]);
    assert_eq!(values["units"]["monitoring"], input["units"]["monitoring"]);
    assert_eq!(items(&ok(&out)), items(&out), "idempotent");
    // Line edits: the operator's comments survive, and closing the gate gives the text back.
    let text = |l: &Value| {
        find(l, "ConfigMap", "sylva-units-values")["data"]["values"]
            .as_str()
            .unwrap()
            .to_owned()
    };
    assert!(
        text(&out).contains("# the ToR pair of rack 1\n"),
        "{}",
        text(&out)
    );
    let closed = ok(&with_spec(out, "upgrade", false.into()));
    assert_eq!(text(&closed), text(&source("prepull-sylva-values")));
}

fn base64(text: &str) -> Value {
    serde_yaml::to_value(k8s_openapi::ByteString(text.as_bytes().to_vec())).unwrap()
}

fn unbase64(v: &Value) -> Value {
    let bytes: k8s_openapi::ByteString = serde_yaml::from_value(v.clone()).unwrap();
    yaml(std::str::from_utf8(&bytes.0).unwrap())
}

/// The `prepull-sylva-values` example with its values text (returned too) also in Secret
/// `sylva-units-secrets`, key `secrets`, which `valuesFrom` names: under `data` as base64 (as
/// kustomize's secretGenerator writes it) or under `stringData` as the text itself.
fn values_in_secret(section: &str) -> (Value, String) {
    let mut list = source("prepull-sylva-values");
    let text = find(&list, "ConfigMap", "sylva-units-values")["data"]["values"]
        .as_str()
        .unwrap()
        .to_owned();
    let mut secret = yaml(
        "apiVersion: v1\nkind: Secret\nmetadata:\n  name: sylva-units-secrets\n  namespace: sylva-system\n  annotations:\n    config.kubernetes.io/path: environment-values/sylva-units-secrets.yaml\n    internal.config.kubernetes.io/path: environment-values/sylva-units-secrets.yaml\ntype: Opaque\n",
    );
    let value = match section {
        "data" => base64(&text),
        _ => text.clone().into(),
    };
    set(&mut secret, &[section, "secrets"], value);
    list["items"].as_sequence_mut().unwrap().push(secret);
    let list = with_spec(
        list,
        "valuesFrom",
        yaml("{kind: Secret, name: sylva-units-secrets, key: secrets}"),
    );
    (list, text)
}

#[test]
fn sylva_values_in_a_secret_go_back_as_base64_and_come_out_again() {
    let (list, text) = values_in_secret("data");
    let out = ok(&list);
    let secret = find(&out, "Secret", "sylva-units-secrets");
    assert!(secret.get("stringData").is_none());
    let values = unbase64(&secret["data"]["secrets"]);
    assert_eq!(
        values["units"]["metallb"]["depends_on"]["metallb-image-prepull"],
        true
    );
    assert!(values["units"]["metallb-image-prepull"].is_mapping());
    // The ConfigMap that was not the source is left alone.
    assert_eq!(
        find(&out, "ConfigMap", "sylva-units-values"),
        find(&list, "ConfigMap", "sylva-units-values")
    );
    assert_eq!(items(&ok(&out)), items(&out), "idempotent");
    // Gate closed: exactly the original tree again, and the payload gone.
    let closed = ok(&with_spec(out, "upgrade", false.into()));
    let back = &find(&closed, "Secret", "sylva-units-secrets")["data"]["secrets"];
    assert_eq!(unbase64(back), yaml(&text));
    assert_eq!(back, &base64(&text), "the very same text, re-encoded");
    assert!(generated(&closed).is_empty());
}

#[test]
fn sylva_values_in_secret_string_data_go_back_as_text_and_come_out_again() {
    // The values as an operator writes them by hand: plain text in stringData, comments included.
    let (list, text) = values_in_secret("stringData");
    assert!(text.contains("# the ToR pair of rack 1\n"));
    let string_data = |l: &Value| {
        find(l, "Secret", "sylva-units-secrets")["stringData"]["secrets"]
            .as_str()
            .unwrap_or_else(|| panic!("no stringData.secrets"))
            .to_owned()
    };
    let out = ok(&list);
    let secret = find(&out, "Secret", "sylva-units-secrets");
    assert!(
        secret.get("data").is_none(),
        "written back where it was read"
    );
    let written = string_data(&out);
    let values = yaml(&written);
    assert_eq!(
        values["units"]["metallb"]["depends_on"]["metallb-image-prepull"],
        true
    );
    assert!(values["units"]["metallb-image-prepull"].is_mapping());
    // Edited line by line: the comments stay, and every line of the input is still there.
    assert!(written.contains("# the ToR pair of rack 1\n"), "{written}");
    assert!(
        text.lines().all(|l| written.lines().any(|w| w == l)),
        "{written}"
    );
    assert_eq!(
        find(&out, "ConfigMap", "sylva-units-values"),
        find(&list, "ConfigMap", "sylva-units-values"),
        "the ConfigMap that was not the source is left alone"
    );
    assert_eq!(generated(&out).len(), 6, "the payload");
    assert_eq!(items(&ok(&out)), items(&out), "idempotent");
    // Gate closed: the very same text, byte for byte, and the payload gone.
    let closed = ok(&with_spec(out, "upgrade", false.into()));
    assert_eq!(string_data(&closed), text);
    assert!(
        find(&closed, "Secret", "sylva-units-secrets")
            .get("data")
            .is_none()
    );
    assert!(generated(&closed).is_empty());
    assert_eq!(
        items(&ok(&closed)),
        items(&closed),
        "idempotent when closed"
    );
}

#[test]
fn values_that_cannot_be_written_back_are_refused() {
    // sylva-units' own dump of its values (it rewrites it and never reads it).
    let list = with_spec(
        with_spec(
            source("prepull-upgrade-native-bgp"),
            "output",
            "sylva-values".into(),
        ),
        "source",
        yaml("{repo: platform-config, path: ./x}"),
    );
    let e = fails(&list, "data.values");
    assert_eq!(e["resourceRef"]["name"], "sylva-units-values");
    assert!(e["message"].as_str().unwrap().contains("own dump"));
    // Inline values have nowhere to go.
    let list = with_spec(source("prepull-l2-only"), "output", "sylva-values".into());
    fails(&list, "spec.output");
}

#[test]
fn switching_output_forms_moves_the_unit_without_leaving_a_dangling_dependency() {
    // Rendered first, with the values also present as the ConfigMap an operator deploys from.
    let mut list = source("prepull-upgrade-native-bgp");
    let values_text = serde_yaml::to_string(&unbase64(
        &find(&list, "Secret", "sylva-units-values")["data"]["values"],
    ))
    .unwrap();
    let mut cm = yaml(
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: sylva-units-values\n  namespace: sylva-system\n  annotations:\n    config.kubernetes.io/path: environment-values/values.yaml\n    internal.config.kubernetes.io/path: environment-values/values.yaml\ndata: {}\n",
    );
    cm["data"]["values"] = values_text.into();
    list["items"].as_sequence_mut().unwrap().push(cm);
    let rendered = ok(&list);
    assert!(
        find(&rendered, "Kustomization", "metallb")["spec"]["dependsOn"]
            .as_sequence()
            .unwrap()
            .contains(&yaml("{name: metallb-image-prepull}"))
    );
    // Now the values form.
    let switched = with_spec(
        with_spec(
            with_spec(rendered, "output", "sylva-values".into()),
            "source",
            yaml("{repo: platform-config, path: ./x/metallb-image-prepull}"),
        ),
        "valuesFrom",
        yaml("{kind: ConfigMap, name: sylva-units-values}"),
    );
    let out = ok(&switched);
    assert!(
        !items(&out)
            .iter()
            .any(|i| i["apiVersion"] == "kustomize.toolkit.fluxcd.io/v1"
                && i["metadata"]["name"] == "metallb-image-prepull"),
        "the rendered unit goes: sylva-units renders it now"
    );
    assert_eq!(
        find(&out, "Kustomization", "metallb"),
        find(&list, "Kustomization", "metallb"),
        "metallb's rendered dependsOn entry goes with it"
    );
    assert!(configmap_values(&out)["units"]["metallb-image-prepull"].is_mapping());
    assert_eq!(generated(&out).len(), 6, "the payload stays");
    // And back: the values unit goes, the rendered one returns.
    let again = with_spec(
        with_spec(out, "output", "rendered".into()),
        "source",
        yaml(
            "{sourceRef: {kind: GitRepository, name: platform-config}, path: ./x/metallb-image-prepull}",
        ),
    );
    let back = ok(&again);
    assert!(
        configmap_values(&back)["units"]
            .get("metallb-image-prepull")
            .is_none()
    );
    assert_eq!(generated(&back).len(), 7);
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
fn a_unit_of_the_same_name_that_cutover_did_not_write_is_left_alone() {
    // A later sylva-units could render its own metallb-image-prepull unit.
    let mut list = source("prepull-upgrade-native-bgp");
    let mut theirs = find(&list, "Kustomization", "cluster-vip").clone();
    let text = serde_yaml::to_string(&theirs)
        .unwrap()
        .replace("cluster-vip", "metallb-image-prepull")
        .replace("index: '3'", "index: '9'");
    theirs = yaml(&text);
    list["items"].as_sequence_mut().unwrap().push(theirs);
    let out = ok(&list);
    assert_eq!(
        items(&out),
        items(&list),
        "nothing written, nothing duplicated"
    );
    let warned = out["results"].as_sequence().unwrap().iter().any(|r| {
        r["severity"] == "warning"
            && r["message"]
                .as_str()
                .unwrap()
                .contains("not generated by cutover")
    });
    assert!(warned);
    // The same, after an earlier run had written cutover's own unit: that one goes.
    let mut first = ok(&source("prepull-upgrade-native-bgp"));
    let ours = find(&first, "Kustomization", "metallb-image-prepull").clone();
    first["items"]
        .as_sequence_mut()
        .unwrap()
        .retain(|i| i != &ours);
    let mut theirs = ours.clone();
    theirs["metadata"]["annotations"]
        .as_mapping_mut()
        .unwrap()
        .remove(GENERATED_BY);
    theirs["metadata"]["namespace"] = "sylva-system".into();
    first["items"]
        .as_sequence_mut()
        .unwrap()
        .push(theirs.clone());
    let out = ok(&first);
    assert!(generated(&out).is_empty(), "cutover's payload is removed");
    assert!(items(&out).contains(&theirs));
}
