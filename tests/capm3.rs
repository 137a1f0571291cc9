//! Integration tests of the `Capm3OSImageSources` mode: the real binary on ResourceLists made by
//! the real `kpt fn source` from the capm3 examples, the emitted and edited objects checked
//! against the vendored Kyverno and Flux CRDs and k8s-openapi, and the error paths and edge
//! cases: bad config, missing items, management vs workload, `valuesFrom` order, (B) carrying
//! `os_images`, fixes that cannot be written.

mod common;

use common::{
    Run, crd, edit_item as edit, example_source as source, find, items, k8s, run_list,
    set_path as set, with_spec, yaml,
};
use k8s_openapi::api::core::v1::Namespace;
use serde_yaml::{Mapping, Value};

/// A run of the function; every result must carry a documented `check`.
fn run(list: &Value) -> Run {
    let r = run_list(list);
    common::assert_capm3_checks(&r);
    r
}

/// The ResourceList output of a run that must succeed (exit 0).
fn ok(list: &Value) -> Value {
    let r = run(list);
    assert_eq!(
        r.code,
        0,
        "stderr: {}\nstdout: {}",
        r.stderr,
        r.stdout_str()
    );
    r.resource_list()
}

/// Output of a run that must fail: exit 1, the items exactly as they came in.
fn fails(list: &Value) -> Value {
    let r = run(list);
    assert_eq!(r.code, 1, "expected failure; stdout: {}", r.stdout_str());
    assert!(!r.stderr.is_empty());
    let out = r.resource_list();
    assert_eq!(
        items(&out),
        items(list),
        "items must come out unchanged on error"
    );
    out
}

fn results(out: &Value) -> Vec<Value> {
    out["results"].as_sequence().cloned().unwrap_or_default()
}

/// The results of one check.
fn check(out: &Value, name: &str) -> Vec<Value> {
    results(out)
        .into_iter()
        .filter(|r| r["tags"]["check"] == name)
        .collect()
}

fn only(out: &Value, name: &str) -> Value {
    let found = check(out, name);
    assert_eq!(found.len(), 1, "{name}: {found:#?}");
    found[0].clone()
}

fn without(mut list: Value, kind: &str, name: &str) -> Value {
    let seq = list["items"].as_sequence_mut().unwrap();
    let before = seq.len();
    seq.retain(|i| !(i["kind"] == kind && i["metadata"]["name"] == name));
    assert_eq!(seq.len() + 1, before, "no {kind} {name} to remove");
    list
}

/// The example `name` without its (B) ConfigMap `b`, the `valuesFrom` of its HelmRelease
/// `cluster` changed by `f`.
fn without_b(name: &str, b: &str, f: impl FnOnce(&mut Vec<Value>)) -> Value {
    edit(
        without(source(name), "ConfigMap", b),
        "HelmRelease",
        "cluster",
        |hr| f(hr["spec"]["valuesFrom"].as_sequence_mut().unwrap()),
    )
}

fn value_names(release: &Value) -> Vec<String> {
    release["spec"]["valuesFrom"]
        .as_sequence()
        .unwrap()
        .iter()
        .map(|e| e["name"].as_str().unwrap().to_owned())
        .collect()
}

/// Runs the output again: nothing may change.
fn idempotent(out: &Value) {
    let mut again_in = out.clone();
    again_in.as_mapping_mut().unwrap().remove("results");
    let again = ok(&again_in);
    assert_eq!(items(&again), items(out), "a second run changed items");
    assert!(
        check(&again, "os-images-info")
            .iter()
            .chain(&check(&again, "served-images"))
            .all(|r| r["severity"] == "info"),
        "{:#?}",
        results(&again)
    );
}

#[test]
fn emitted_and_edited_objects_validate_against_the_upstream_crds() {
    // The exported clone policy, corrected in place (generateExisting set as sylva-core ships it).
    let out = ok(&source("capm3-management-fix"));
    let policy = find(&out, "ClusterPolicy", "clone-os-images-info-capm3");
    crd::validate(policy).unwrap_or_else(|e| panic!("ClusterPolicy: {e:?}"));
    assert_eq!(policy["spec"]["generateExisting"], true);
    assert_eq!(
        policy["metadata"]["annotations"]["config.kubernetes.io/path"],
        "clone-policy.yaml"
    );
    idempotent(&out);
    // The rewired HelmRelease.
    let out = ok(&source("capm3-workload-legacy-wiring-fix"));
    let release = find(&out, "HelmRelease", "cluster");
    crd::validate(release).unwrap_or_else(|e| panic!("HelmRelease: {e:?}"));
    assert_eq!(
        value_names(release)[6..],
        ["os-images-info", "kyverno-cloned-os-image-server-images"]
    );
    idempotent(&out);
    // Every example's input HelmRelease and ClusterPolicy is valid too (the fixtures are real).
    for name in ["capm3-workload-healthy", "capm3-not-capm3"] {
        let list = source(name);
        crd::validate(find(&list, "HelmRelease", "cluster")).unwrap();
    }
}

#[test]
fn a_wrong_clone_policy_is_corrected_and_validates() {
    // The policy as it was before the decoupling: clone os-images/...-os-images-info as
    // kyverno-cloned-os-images-info-capm3 (and, in this package, no generateExisting).
    let list = edit(
        source("capm3-management-fix"),
        "ClusterPolicy",
        "clone-os-images-info-capm3",
        |old| {
            set(
                old,
                &["spec", "rules"],
                yaml(
                    "- name: clone-os-images-info-capm3\n  match: {any: [{resources: {kinds: [Namespace], selector: {matchLabels: {sylva-project.org/workload-cluster: ''}}}}]}\n  generate: {kind: ConfigMap, apiVersion: v1, name: kyverno-cloned-os-images-info-capm3, namespace: '{{request.object.metadata.name}}', synchronize: true, clone: {name: capm3-os-image-server-os-images-info, namespace: os-images}}\n",
                ),
            )
        },
    );
    let checked = fails(&with_spec(list.clone(), "fix", Value::Bool(false)));
    let fields: Vec<String> = check(&checked, "clone-policy")
        .iter()
        .map(|r| r["field"]["path"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(
        fields,
        [
            "spec.rules[0].generate.name",
            "spec.rules[0].generate.clone",
            "spec.generateExisting"
        ]
    );
    let out = ok(&list);
    let fixed = find(&out, "ClusterPolicy", "clone-os-images-info-capm3");
    crd::validate(fixed).unwrap();
    assert_eq!(
        fixed["spec"]["rules"][0]["generate"]["name"],
        "kyverno-cloned-os-image-server-images"
    );
    assert_eq!(
        fixed["spec"]["rules"][0]["generate"]["clone"]["namespace"],
        "sylva-system"
    );
    assert_eq!(fixed["spec"]["generateExisting"], true);
    // Orchestrator annotations survive the replacement.
    assert!(fixed["metadata"]["annotations"]["config.kubernetes.io/path"].is_string());
    idempotent(&out);
}

#[test]
fn the_namespace_label_is_checked_and_added_with_fix() {
    let list = edit(source("capm3-workload-healthy"), "Namespace", "wc1", |ns| {
        ns["metadata"].as_mapping_mut().unwrap().remove("labels");
    });
    let out = fails(&list);
    let r = only(&out, "namespace-label");
    assert_eq!(
        r["field"]["path"],
        "metadata.labels.sylva-project.org/workload-cluster"
    );
    assert_eq!(r["resourceRef"]["kind"], "Namespace");
    let out = ok(&with_spec(list, "fix", Value::Bool(true)));
    let ns = find(&out, "Namespace", "wc1");
    let typed: Namespace = k8s::roundtrip(ns).unwrap();
    assert_eq!(
        typed.metadata.labels.unwrap()["sylva-project.org/workload-cluster"],
        ""
    );
    idempotent(&out);
}

#[test]
fn missing_items_are_warnings_naming_what_was_not_checked() {
    let base = source("capm3-workload-healthy");
    let list = without(base.clone(), "ConfigMap", "os-images-info");
    let out = ok(&list);
    let r = only(&out, "image-selection");
    assert_eq!(r["severity"], "warning");
    assert!(
        r["message"]
            .as_str()
            .unwrap()
            .contains("wc1/os-images-info is not among the items")
    );
    let out = ok(&without(
        base.clone(),
        "ConfigMap",
        "kyverno-cloned-os-image-server-images",
    ));
    let served = check(&out, "image-served");
    assert_eq!(served.len(), 1, "{served:#?}");
    assert_eq!(served[0]["severity"], "warning");
    assert_eq!(served[0]["field"]["path"], "spec.valuesFrom[7]");
    assert_eq!(
        check(&out, "image-selection").len(),
        2,
        "selection still checked"
    );
    let out = ok(&without(base.clone(), "Namespace", "wc1"));
    assert_eq!(only(&out, "namespace-label")["severity"], "warning");
    // Without the cluster values Secret, sylva-units' values are not there either: the provider
    // cannot be told.
    let list = without(base.clone(), "Secret", "helm-unit-values-cluster-5f0c2a1");
    let out = fails(&list);
    let e = only(&out, "provider");
    assert_eq!(e["severity"], "error");
    assert!(
        e["message"]
            .as_str()
            .unwrap()
            .contains("sylva-units-values"),
        "{e:?}"
    );
    // No cluster unit at all.
    let out = ok(&without(base, "HelmRelease", "cluster"));
    assert_eq!(only(&out, "cluster")["severity"], "warning");
    assert!(
        check(&out, "clone-policy").is_empty(),
        "no capm3 cluster, no policy check"
    );
}

#[test]
fn sylva_values_stand_in_for_the_cluster_values_secret() {
    let base = source("capm3-workload-healthy");
    let secret = find(&base, "Secret", "helm-unit-values-cluster-5f0c2a1");
    let encoded = secret["data"]["values"].as_str().unwrap();
    let decoded = String::from_utf8(encoded_bytes(encoded)).unwrap();
    let list = sylva_values_for_secret(base, &decoded);
    let out = ok(&list);
    let provider = only(&out, "provider");
    assert!(
        provider["message"]
            .as_str()
            .unwrap()
            .contains("ConfigMap wc1/sylva-units-values")
    );
    assert_eq!(check(&out, "image-served").len(), 2);
    // sylva-units' default provider is capd.
    let list = edit(list, "ConfigMap", "sylva-units-values", |cm| {
        cm["data"]["values"] = Value::from("cluster: {name: wc1}\n");
    });
    let out = ok(&list);
    assert!(
        only(&out, "provider")["message"]
            .as_str()
            .unwrap()
            .contains("infra provider capd")
    );
}

/// `list` with the cluster values Secret of wc1 replaced by the sylva-units-values ConfigMap,
/// whose values hold `cluster` (YAML text) under `cluster`.
fn sylva_values_for_secret(list: Value, cluster: &str) -> Value {
    let mut values = Mapping::new();
    values.insert("cluster".into(), yaml(cluster));
    let cm = yaml(&format!(
        "apiVersion: v1\nkind: ConfigMap\nmetadata: {{name: sylva-units-values, namespace: wc1}}\ndata:\n  values: {}\n",
        serde_json::to_string(&serde_yaml::to_string(&values).unwrap()).unwrap()
    ));
    let mut list = without(list, "Secret", "helm-unit-values-cluster-5f0c2a1");
    list["items"].as_sequence_mut().unwrap().push(cm);
    list
}

fn encoded_bytes(b64: &str) -> Vec<u8> {
    serde_yaml::from_value::<k8s_openapi::ByteString>(Value::from(b64))
        .unwrap()
        .0
}

#[test]
fn management_and_workload_are_told_apart_by_namespace_or_config() {
    // A workload cluster pointing at the management cluster's output directly.
    let list = edit(
        source("capm3-workload-healthy"),
        "HelmRelease",
        "cluster",
        |hr| {
            hr["spec"]["valuesFrom"][7]["name"] = Value::from("capm3-os-image-server-os-images");
        },
    );
    let out = fails(&list);
    let e = only(&out, "served-images");
    assert_eq!(e["field"]["path"], "spec.valuesFrom[7]");
    assert!(e["message"].as_str().unwrap().contains("directly"));
    let fixed = ok(&with_spec(list.clone(), "fix", Value::Bool(true)));
    assert_eq!(
        value_names(find(&fixed, "HelmRelease", "cluster"))[7],
        "kyverno-cloned-os-image-server-images"
    );
    idempotent(&fixed);
    // Declared the management cluster, the same list is right (its (B) is the output itself);
    // the workload namespace's ConfigMaps are then not its (B).
    let out = ok(&with_spec(list, "context", Value::from("management")));
    assert!(
        only(&out, "provider")["message"]
            .as_str()
            .unwrap()
            .starts_with("management cluster")
    );
    assert!(check(&out, "served-images").is_empty());
    assert!(check(&out, "namespace-label").is_empty());
    // The management package's release, declared a workload cluster, must read the clone.
    let management = with_spec(source("capm3-management-fix"), "fix", Value::Bool(false));
    let out = fails(&with_spec(management, "context", Value::from("workload")));
    let served: Vec<Value> = check(&out, "served-images");
    assert_eq!(served[0]["field"]["path"], "spec.valuesFrom[7]");
    // ...and its clone is not among the items: fix: true would not rewire it either.
    assert!(
        served[1]["message"]
            .as_str()
            .unwrap()
            .starts_with("refused")
    );
    // No namespace: auto cannot decide.
    let list = edit(
        source("capm3-workload-healthy"),
        "HelmRelease",
        "cluster",
        |hr| {
            hr["metadata"].as_mapping_mut().unwrap().remove("namespace");
        },
    );
    let out = fails(&list);
    let e = &results(&out)[0];
    assert_eq!(e["field"]["path"], "metadata.namespace");
    assert!(e["message"].as_str().unwrap().contains("spec.context"));
}

#[test]
fn valuesfrom_order_b_before_a_is_a_warning_and_fix_reorders() {
    let list = edit(
        source("capm3-workload-healthy"),
        "HelmRelease",
        "cluster",
        |hr| {
            let entries = hr["spec"]["valuesFrom"].as_sequence_mut().unwrap();
            entries.swap(6, 7);
        },
    );
    let out = ok(&list);
    let w = only(&out, "values-order");
    assert_eq!(w["severity"], "warning");
    assert_eq!(w["field"]["path"], "spec.valuesFrom[6]");
    assert_eq!(items(&out), items(&list), "check-only changes nothing");
    let out = ok(&with_spec(list, "fix", Value::Bool(true)));
    assert_eq!(
        value_names(find(&out, "HelmRelease", "cluster"))[6..],
        ["os-images-info", "kyverno-cloned-os-image-server-images"]
    );
    idempotent(&out);
}

#[test]
fn b_carrying_os_images_is_an_error_about_the_configmap() {
    let list = edit(
        source("capm3-workload-healthy"),
        "ConfigMap",
        "kyverno-cloned-os-image-server-images",
        |cm| {
            let doc = cm["data"]["values.yaml"].as_str().unwrap().to_owned();
            cm["data"]["values.yaml"] = Value::from(format!(
                "{doc}os_images:\n  ubuntu-noble-plain-rke2-1-31-8: {{sha256: '{}'}}\n",
                "0".repeat(64)
            ));
        },
    );
    let out = fails(&list);
    let e = only(&out, "os-images-override");
    assert_eq!(
        e["resourceRef"]["name"],
        "kyverno-cloned-os-image-server-images"
    );
    assert_eq!(e["field"]["path"], "data.values.yaml.os_images");
    // Merged after (A), (B)'s checksum wins: the selected image is then one the server does
    // not serve, as the chart would see it.
    let served = check(&out, "image-served");
    assert!(
        served.iter().all(|r| r["severity"] == "error"),
        "{served:#?}"
    );
    // With fix: true the wiring is fine and the content cannot be fixed: still an error.
    fails(&with_spec(list, "fix", Value::Bool(true)));
}

#[test]
fn corrections_are_not_written_when_another_error_remains() {
    // Legacy wiring (fixable) plus an ambiguous selector (not fixable).
    let mut list = with_spec(
        source("capm3-workload-legacy-wiring"),
        "fix",
        Value::Bool(true),
    );
    let ambiguous = source("capm3-ambiguous-selector");
    let secret = find(&ambiguous, "Secret", "helm-unit-values-cluster-5f0c2a1").clone();
    list = edit(list, "Secret", "helm-unit-values-cluster-5f0c2a1", |s| {
        *s = secret
    });
    let out = fails(&list);
    let fixed = only(&out, "os-images-info");
    assert_eq!(fixed["severity"], "info");
    assert!(
        fixed["message"]
            .as_str()
            .unwrap()
            .ends_with("not written: this run has errors, so every item is left as it came in"),
        "{fixed:?}"
    );
}

#[test]
fn config_errors_name_the_field() {
    let base = source("capm3-workload-healthy");
    let field_of = |list: &Value| {
        let out = fails(list);
        let e = results(&out)
            .into_iter()
            .find(|r| r["severity"] == "error")
            .unwrap();
        assert_eq!(e["resourceRef"]["kind"], "Capm3OSImageSources", "{e:?}");
        e["field"]["path"].as_str().unwrap().to_owned()
    };
    assert_eq!(
        field_of(&with_spec(base.clone(), "fixx", Value::Bool(true))),
        "spec.fixx"
    );
    assert_eq!(
        field_of(&with_spec(base.clone(), "context", Value::from("mgmt"))),
        "spec.context"
    );
    assert_eq!(
        field_of(&with_spec(base.clone(), "osImagesInfo", Value::from(""))),
        "spec.osImagesInfo"
    );
    assert_eq!(
        field_of(&with_spec(
            base.clone(),
            "servedImages",
            Value::from("capm3-os-image-server-os-images")
        )),
        "spec.servedImages"
    );
    assert_eq!(
        field_of(&with_spec(base.clone(), "cluster", yaml("{name: nope}"))),
        "spec.cluster"
    );
    assert_eq!(
        field_of(&with_spec(
            base.clone(),
            "cluster",
            yaml("{namespace: wc1}")
        )),
        "spec.cluster"
    );
    // The ConfigMap form names the data key.
    let mut cm = base.clone();
    cm["functionConfig"] = yaml(
        "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: function-input}\ndata: {mode: capm3-os-image-sources, fix: perhaps}\n",
    );
    let out = fails(&cm);
    assert_eq!(results(&out)[0]["field"]["path"], "data.fix");
    cm["functionConfig"]["data"] = yaml(
        "{mode: capm3-os-image-sources, fix: 'true', cluster.name: cluster, cluster.namespace: wc1}",
    );
    ok(&cm);
}

#[test]
fn bad_items_are_errors_about_the_item() {
    let base = source("capm3-workload-healthy");
    let list = edit(base.clone(), "HelmRelease", "cluster", |hr| {
        hr["spec"]["valuesFrom"][2] = Value::from("capo-cluster-resources");
    });
    let out = fails(&list);
    let e = &results(&out)[0];
    assert_eq!(e["resourceRef"]["kind"], "HelmRelease");
    assert_eq!(e["field"]["path"], "spec.valuesFrom[2]");
    let list = edit(base.clone(), "ConfigMap", "os-images-info", |cm| {
        cm["data"]["values.yaml"] = Value::from("- not: a mapping\n");
    });
    let out = fails(&list);
    let e = &results(&out)
        .into_iter()
        .find(|r| r["severity"] == "error")
        .unwrap();
    assert_eq!(e["resourceRef"]["name"], "os-images-info");
    assert_eq!(e["field"]["path"], "data.values.yaml");
    let list = edit(
        base,
        "ConfigMap",
        "kyverno-cloned-os-image-server-images",
        |cm| {
            cm["data"]["values.yaml"] =
                Value::from("capm3_os_image_server_images: {abc: {available: sometimes}}\n");
        },
    );
    let out = fails(&list);
    let e = results(&out)
        .into_iter()
        .find(|r| r["severity"] == "error")
        .unwrap();
    assert!(
        e["field"]["path"]
            .as_str()
            .unwrap()
            .starts_with("data.values.yaml.capm3_os_image_server_images.abc"),
        "{e:?}"
    );
}

#[test]
fn a_missing_clone_policy_is_not_emitted_but_its_owner_named() {
    let out = ok(&source("capm3-management-policy-missing"));
    assert_eq!(
        items(&out),
        items(&source("capm3-management-policy-missing"))
    );
    let w = only(&out, "clone-policy");
    assert_eq!(w["severity"], "warning");
    let message = w["message"].as_str().unwrap();
    assert!(message.contains("mgmt-cluster-state-values"), "{message}");
    assert!(
        message.contains("units.mgmt-cluster-state-values.enabled"),
        "{message}"
    );
    // With failOnWarnings the missing policy stops the pipeline.
    fails(&with_spec(
        source("capm3-management-policy-missing"),
        "failOnWarnings",
        Value::Bool(true),
    ));
    // The management cluster's sylva values disable the unit that ships it: an error there.
    let disabled = source("capm3-refuse-policy-unit-disabled");
    let out = fails(&disabled);
    let e = check(&out, "clone-policy")
        .into_iter()
        .find(|r| r["severity"] == "error")
        .unwrap();
    assert_eq!(e["resourceRef"]["name"], "sylva-units-values");
    assert_eq!(
        e["field"]["path"],
        "data.values.units.mgmt-cluster-state-values.enabled"
    );
    // Enabled (or left to a template), only the warning remains.
    for value in ["true", "'{{ .Values.x }}'"] {
        let list = edit(disabled.clone(), "ConfigMap", "sylva-units-values", |cm| {
            cm["data"]["values"] = Value::from(format!(
                "units:\n  mgmt-cluster-state-values:\n    enabled: {value}\n"
            ));
        });
        assert_eq!(only(&ok(&list), "clone-policy")["severity"], "warning");
    }
}

#[test]
fn adding_b_waits_for_the_management_cluster() {
    // Legacy wiring, fix: true, the clone not among the items: refused, nothing written.
    let list = source("capm3-refuse-rewire-before-management");
    let out = fails(&list);
    let refused: Vec<Value> = check(&out, "served-images");
    assert_eq!(refused.len(), 1, "{refused:#?}");
    assert_eq!(refused[0]["severity"], "error");
    assert_eq!(refused[0]["field"]["path"], "spec.valuesFrom");
    let message = refused[0]["message"].as_str().unwrap();
    assert!(
        message.contains("upgrade the management cluster first"),
        "{message}"
    );
    assert!(
        message.contains("spec.managementServesClonedImages"),
        "{message}"
    );
    // The wiring finding stays an error: it is not reported as fixed.
    let legacy = only(&out, "os-images-info");
    assert_eq!(legacy["severity"], "error");
    assert!(legacy["tags"]["fixed"].is_null());
    // The config's word that the management cluster serves it lets the fix through.
    let out = ok(&with_spec(
        list.clone(),
        "managementServesClonedImages",
        Value::Bool(true),
    ));
    let release = find(&out, "HelmRelease", "cluster");
    crd::validate(release).unwrap();
    assert_eq!(
        value_names(release)[6..],
        ["os-images-info", "kyverno-cloned-os-image-server-images"]
    );
    // The ConfigMap form takes it too.
    let mut cm = list.clone();
    cm["functionConfig"] = yaml(
        "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: function-input}\ndata: {mode: capm3-os-image-sources, fix: 'true', managementServesClonedImages: 'true'}\n",
    );
    ok(&cm);
    // (B) missing altogether from a healthy workload wiring: refused the same way.
    let list = without_b(
        "capm3-workload-healthy",
        "kyverno-cloned-os-image-server-images",
        |values_from| {
            values_from.pop();
        },
    );
    let out = fails(&with_spec(list, "fix", Value::Bool(true)));
    assert!(
        check(&out, "served-images")
            .iter()
            .any(|r| r["message"].as_str().unwrap().starts_with("refused"))
    );
    // Reordering a (B) the HelmRelease already reads adds no dependency: not refused.
    let list = without_b(
        "capm3-workload-healthy",
        "kyverno-cloned-os-image-server-images",
        |values_from| values_from.swap(6, 7),
    );
    let out = ok(&with_spec(list, "fix", Value::Bool(true)));
    assert_eq!(
        value_names(find(&out, "HelmRelease", "cluster"))[6..],
        ["os-images-info", "kyverno-cloned-os-image-server-images"]
    );
    // The management cluster: its (B) is the os-image-server output; adding it without the
    // output among the items is refused too.
    let list = without_b(
        "capm3-management-policy-missing",
        "capm3-os-image-server-os-images",
        |values_from| {
            values_from.pop();
        },
    );
    let out = fails(&list);
    let refusal = check(&out, "served-images")
        .into_iter()
        .find(|r| r["message"].as_str().unwrap().starts_with("refused"))
        .unwrap();
    assert!(
        refusal["message"]
            .as_str()
            .unwrap()
            .contains("upgrade the management cluster's os-image-server unit first")
    );
}

#[test]
fn a_selector_that_pins_k8s_version_is_checked_without_k8s_version() {
    // The sylva values stand in for the cluster values Secret, with k8s_version a template
    // (as sylva-units' defaults have it): unknown here.
    let base = source("capm3-workload-healthy");
    let cluster = "name: wc1\ncapi_providers: {infra_provider: capm3, bootstrap_provider: cabpr}\nk8s_version: '{{ .Values.k8s_version_map.x }}'\n\
        control_plane: {capm3: {os_image_selector: {os: ubuntu, os-release: noble, flavor: plain, k8s-version: '1\\.31\\..*'}}}\n\
        machine_deployments: {md0: {capm3: {os_image_selector: {os: opensuse}}}}\n";
    let list = sylva_values_for_secret(base, cluster);
    let out = ok(&list);
    let selection = check(&out, "image-selection");
    assert_eq!(selection.len(), 2, "{selection:#?}");
    // The control plane pins k8s-version: its image is selected and checked as served.
    assert_eq!(selection[0]["severity"], "info");
    assert_eq!(
        selection[0]["field"]["currentValue"],
        "ubuntu-noble-plain-rke2-1-31-8"
    );
    let served = check(&out, "image-served");
    assert_eq!(served.len(), 1, "{served:#?}");
    assert_eq!(served[0]["severity"], "info");
    // md0 does not: not checked, and the warning says which key and why.
    assert_eq!(selection[1]["severity"], "warning");
    assert_eq!(
        selection[1]["field"]["path"],
        "machine_deployments.md0.capm3.os_image_selector"
    );
    let message = selection[1]["message"].as_str().unwrap();
    assert!(
        message.contains("does not set k8s-version") && message.contains("template"),
        "{message}"
    );
}
