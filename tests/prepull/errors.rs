//! Error paths: bad function config (typed and ConfigMap form), bad items, a chart override
//! that cannot work, no values: exit 1, the items unchanged, one error naming the resource and
//! field.

use super::*;

#[test]
fn image_errors_name_the_entry() {
    let base = source("prepull-upgrade-native-bgp");
    let e = fails(
        &with_spec(
            base.clone(),
            "images",
            yaml("[quay.io/metallb/frr-k8s:v0.0.25, quay.io/frrouting/frr]"),
        ),
        "spec.images[1]",
    );
    assert!(e["message"].as_str().unwrap().contains("no tag or digest"));
    let e = fails(
        &with_spec(
            base.clone(),
            "images",
            yaml("[quay.io/frrouting/frr:latest]"),
        ),
        "spec.images[0]",
    );
    assert!(e["message"].as_str().unwrap().contains(":latest"));
    let e = fails(
        &with_spec(
            base.clone(),
            "images",
            yaml("[quay.io/frrouting/frr:10.4.3, quay.io/metallb/speaker:v0.15.2]"),
        ),
        "spec.images[1]",
    );
    assert!(
        e["message"]
            .as_str()
            .unwrap()
            .contains("at least one frr-k8s pod")
    );
    assert_eq!(e["resourceRef"]["kind"], "MetalLBImagePrepull");
}

#[test]
fn setting_errors_name_the_field() {
    let base = source("prepull-upgrade-native-bgp");
    fails(
        &with_spec(base.clone(), "waitTimeout", "ten minutes".into()),
        "spec.waitTimeout",
    );
    fails(
        &with_spec(base.clone(), "onTimeout", "retry".into()),
        "spec.onTimeout",
    );
    fails(
        &with_spec(base.clone(), "runAsUser", 0.into()),
        "spec.runAsUser",
    );
    fails(
        &with_spec(base.clone(), "payloadDir", "../escape".into()),
        "spec.payloadDir",
    );
}

#[test]
fn names_that_cannot_be_written_are_refused() {
    let base = source("prepull-upgrade-native-bgp");
    // A directory longer than a path can be: every generated file's path annotation repeats
    // it (the mutation suite's seed 0x30, case 156457: 4 MB of it held 210 MB of output).
    let e = fails(
        &with_spec(base.clone(), "payloadDir", "a".repeat(4_000_000).into()),
        "spec.payloadDir",
    );
    assert!(e["message"].as_str().unwrap().contains("PATH_MAX"), "{e:?}");
    // Every generated object is written into the namespace and names it again, so a namespace
    // the API server would refuse is refused here (the mutation suite's seed 0x31, case 254358:
    // a 4 MB namespace held 147 MB for 4.2 MB of input).
    let huge = "é".repeat(2_000_000);
    for bad in [
        "Metallb",
        "metallb_system",
        "-metallb",
        "metallb.system",
        huge.as_str(),
    ] {
        let e = fails(
            &with_spec(base.clone(), "namespace", bad.into()),
            "spec.namespace",
        );
        assert!(
            e["message"].as_str().unwrap().contains("DNS-1123 label"),
            "{e:?}"
        );
    }
}

#[test]
fn source_and_values_errors_name_the_field() {
    let base = source("prepull-upgrade-native-bgp");
    fails(
        &with_spec(
            base.clone(),
            "source",
            yaml("{sourceRef: {kind: GitRepository, name: g}, path: ../../escape}"),
        ),
        "spec.source.path",
    );
    fails(
        &with_spec(base.clone(), "source", yaml("{path: ./x}")),
        "spec.source.sourceRef",
    );
    fails(
        &with_spec(
            base.clone(),
            "source",
            yaml("{sourceRef: {kind: HelmRepository, name: g}, path: ./x}"),
        ),
        "spec.source.sourceRef.kind",
    );
    fails(
        &with_spec(base.clone(), "values", yaml("[not, a, mapping]")),
        "spec.values",
    );
    let e = fails(
        &with_spec(
            base.clone(),
            "values",
            yaml("{metallb: {bgp_lbs: {l3_options: {bgp_peers: tor-a}}}}"),
        ),
        "spec.values.metallb.bgp_lbs.l3_options.bgp_peers",
    );
    assert!(e["message"].as_str().unwrap().contains("mapping"));
    fails(
        &with_spec(
            base.clone(),
            "valuesFrom",
            yaml("{kind: ConfigMap, name: missing}"),
        ),
        "spec.valuesFrom",
    );
}

#[test]
fn configmap_form_errors_name_the_data_key() {
    fails(
        &configmap_form_with("images", "[quay.io/frrouting/frr:latest]"),
        "data.images[0]",
    );
    fails(
        &configmap_form_with("onTimeout", "sometimes"),
        "data.onTimeout",
    );
}

#[test]
fn bad_items_are_errors_about_the_item() {
    let base = source("prepull-upgrade-native-bgp");
    // Two Kustomizations named metallb.
    let mut dup = base.clone();
    let mut copy = find(&base, "Kustomization", "metallb").clone();
    set(&mut copy, &["metadata", "namespace"], "other".into());
    set(
        &mut copy,
        &["metadata", "annotations", "config.kubernetes.io/index"],
        "9".into(),
    );
    set(
        &mut copy,
        &[
            "metadata",
            "annotations",
            "internal.config.kubernetes.io/index",
        ],
        "9".into(),
    );
    dup["items"].as_sequence_mut().unwrap().push(copy);
    let e = fails(&dup, "metadata.name");
    assert_eq!(e["resourceRef"]["name"], "metallb");
    // Gated Kustomization without spec.
    let e = fails(
        &edit_item(base.clone(), "Kustomization", "metallb", |i| {
            i.as_mapping_mut().unwrap().remove("spec");
        }),
        "spec",
    );
    assert_eq!(e["resourceRef"]["name"], "metallb");
    // Malformed dependsOn: an entry without a name, or not a list.
    fails(
        &edit_item(base.clone(), "Kustomization", "metallb", |i| {
            i["spec"]["dependsOn"]
                .as_sequence_mut()
                .unwrap()
                .push(yaml("{namespace: x}"));
        }),
        "spec.dependsOn[3]",
    );
    fails(
        &edit_item(base.clone(), "Kustomization", "metallb", |i| {
            i["spec"]["dependsOn"] = "root-dependency-3".into();
        }),
        "spec.dependsOn",
    );
    // Values Secret that is not base64 / not a mapping.
    let e = fails(
        &edit_item(base.clone(), "Secret", "sylva-units-values", |i| {
            i["data"]["values"] = "%%%".into();
        }),
        "data.values",
    );
    assert_eq!(e["resourceRef"]["kind"], "Secret");
    fails(
        &edit_item(base.clone(), "Secret", "sylva-units-values", |i| {
            i["data"]["values"] = "LSAxCi0gMgo=".into(); // "- 1\n- 2\n"
        }),
        "data.values",
    );
}

#[test]
fn a_latest_chart_override_is_an_error_about_where_it_is_written() {
    // In the HelmRelease spec the metallb unit patches in (what sylva-units rendered).
    let list = edit_item(
        source("prepull-airgapped-overrides"),
        "Kustomization",
        "metallb",
        |k| {
            let patch = &mut k["spec"]["patches"][0]["patch"];
            let text = patch
                .as_str()
                .unwrap()
                .replace("tag: v0.0.25", "tag: latest");
            *patch = text.into();
        },
    );
    let e = fails(&list, "spec.patches");
    assert_eq!(e["resourceRef"]["name"], "metallb");
    assert!(e["message"].as_str().unwrap().contains(":latest"), "{e:?}");
    // In the sylva values, when no rendered patch says otherwise.
    let list = edit_item(
        edit_item(
            source("prepull-airgapped-overrides"),
            "Kustomization",
            "metallb",
            |k| {
                k["spec"].as_mapping_mut().unwrap().remove("patches");
            },
        ),
        "HelmRelease",
        "sylva-units",
        |hr| {
            hr["spec"]["values"]["metallb_helm_values"]["frr-k8s"]["frrk8s"]["image"]["tag"] =
                "latest".into();
        },
    );
    let e = fails(&list, "spec.values");
    assert_eq!(e["resourceRef"]["kind"], "HelmRelease");
    assert!(
        e["message"]
            .as_str()
            .unwrap()
            .contains("frr-k8s image override")
    );
}

#[test]
fn no_values_anywhere_is_an_error() {
    let list = source("prepull-upgrade-native-bgp");
    let mut list = list;
    list["items"]
        .as_sequence_mut()
        .unwrap()
        .retain(|i| i["kind"] != "Secret");
    fails(&list, "spec.values");
}

#[test]
fn more_error_paths_leave_the_items_alone() {
    let base = source("prepull-upgrade-native-bgp");
    fails(
        &with_spec(base.clone(), "images", yaml("[]")),
        "spec.images",
    );
    fails(
        &with_spec(
            base.clone(),
            "images",
            yaml("[quay.io/frrouting/frr:10.4.3, quay.io/frrouting/frr:10.4.3]"),
        ),
        "spec.images[1]",
    );
    fails(
        &with_spec(base.clone(), "noopCommand", yaml("[]")),
        "spec.noopCommand",
    );
    // Two discovered values Secrets: which one?
    let mut two = base.clone();
    let mut copy = find(&base, "Secret", "sylva-units-values").clone();
    set(&mut copy, &["metadata", "namespace"], "other".into());
    set(
        &mut copy,
        &["metadata", "annotations", "config.kubernetes.io/path"],
        "other/values.yaml".into(),
    );
    set(
        &mut copy,
        &[
            "metadata",
            "annotations",
            "internal.config.kubernetes.io/path",
        ],
        "other/values.yaml".into(),
    );
    two["items"].as_sequence_mut().unwrap().push(copy);
    let run = run_list(&two);
    assert_eq!(run.code, 1);
    let out = run.resource_list();
    assert_eq!(items(&out), items(&two));
    // Someone else's object already lives in the payload directory.
    let mut taken = base.clone();
    taken["items"].as_sequence_mut().unwrap().push(yaml(
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: notes\n  annotations:\n    config.kubernetes.io/path: metallb-image-prepull/notes.yaml\n    internal.config.kubernetes.io/path: metallb-image-prepull/notes.yaml\n",
    ));
    let run = run_list(&taken);
    assert_eq!(run.code, 1);
    assert_eq!(items(&run.resource_list()), items(&taken));
    assert!(
        run.stderr.contains("choose another spec.payloadDir"),
        "{}",
        run.stderr
    );
}
