//! Integration tests of the `MetalLBImagePrepull` mode: the real binary on ResourceLists made
//! by the real `kpt fn source`, schema checks of every emitted object, the restricted profile on
//! every container, the rendered directory built by the real `kubectl kustomize`, the lifecycle
//! (re-run, changed images, gate closing), the kustomize generator call, and every error path.

mod common;

use std::path::Path;

use common::prepull::*;
use common::{crd, k8s, package_copy, run_cmd, run_fn};
use common::{
    edit_item, example_source as source, find, items, ok, run_list, set_path as set, with_spec,
    yaml,
};
use k8s_openapi::api::apps::v1::DaemonSet;
use k8s_openapi::api::batch::v1::Job;
use k8s_openapi::api::core::v1::ServiceAccount;
use k8s_openapi::api::rbac::v1::{Role, RoleBinding};
use serde_yaml::Value;

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
                    let ds: DaemonSet = k8s::roundtrip(obj).unwrap();
                    let pod = ds.spec.unwrap().template.spec.unwrap();
                    assert_eq!(
                        k8s::restricted_violations(&pod),
                        Vec::<String>::new(),
                        "{name}"
                    );
                    containers +=
                        pod.containers.len() + pod.init_containers.unwrap_or_default().len();
                }
                ("batch/v1", "Job") => {
                    let job: Job = k8s::roundtrip(obj).unwrap();
                    let pod = job.spec.unwrap().template.spec.unwrap();
                    assert_eq!(
                        k8s::restricted_violations(&pod),
                        Vec::<String>::new(),
                        "{name}"
                    );
                    containers += pod.containers.len();
                }
                ("v1", "ServiceAccount") => {
                    k8s::roundtrip::<ServiceAccount>(obj).unwrap();
                }
                ("rbac.authorization.k8s.io/v1", "Role") => {
                    let role: Role = k8s::roundtrip(obj).unwrap();
                    // Read-only: nothing but get/list/watch, daemonsets and pods only.
                    for rule in role.rules.unwrap() {
                        assert!(
                            rule.verbs
                                .iter()
                                .all(|v| ["get", "list", "watch"].contains(&v.as_str()))
                        );
                        for r in rule.resources.unwrap() {
                            assert!(r == "daemonsets" || r == "pods", "{r}");
                        }
                    }
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
fn kubectl_kustomize_builds_the_directory_kpt_render_writes() {
    let (_guard, dir) = package_copy(&example("prepull-upgrade-native-bgp"));
    let run = kpt_render(&dir);
    assert_eq!(run.code, 0, "{}", run.stderr);
    let unit_dir: &Path = &dir.join("metallb-image-prepull");
    let built = run_cmd(
        std::process::Command::new("kubectl")
            .arg("kustomize")
            .arg(unit_dir),
    );
    assert_eq!(built.code, 0, "kubectl kustomize: {}", built.stderr);
    let docs: Vec<Value> = serde_yaml::Deserializer::from_str(built.stdout_str())
        .map(|d| serde::Deserialize::deserialize(d).unwrap())
        .collect();
    let mut kinds: Vec<&str> = docs.iter().map(|d| d["kind"].as_str().unwrap()).collect();
    kinds.sort_unstable();
    assert_eq!(
        kinds,
        ["DaemonSet", "Job", "Role", "RoleBinding", "ServiceAccount"]
    );
    for d in &docs {
        let annotations = d["metadata"]["annotations"]
            .as_mapping()
            .cloned()
            .unwrap_or_default();
        for k in annotations.keys() {
            let k = k.as_str().unwrap();
            assert!(
                !k.starts_with("config.kubernetes.io/") && !k.starts_with("internal.config"),
                "{k} leaks into the cluster"
            );
        }
    }
}

#[test]
fn as_a_kustomize_generator_the_unit_is_emitted_without_the_depends_on_rewrite() {
    let fc = "apiVersion: fn.cutover.dev/v1alpha1
kind: MetalLBImagePrepull
metadata:
  name: prepull
  annotations:
    config.kubernetes.io/local-config: 'true'
spec:
  upgrade: true
  source: {sourceRef: {kind: GitRepository, name: platform-config}, path: ./mgmt/metallb-image-prepull}
  values:
    metallb:
      bgp_lbs:
        l3_options:
          bgp_peers:
            tor: {local_asn: 64512, peer_asn: 65001, peer_address: 10.0.0.1}
";
    // kustomize passes the function config as the only item.
    let input = common::resource_list(&[fc], Some(fc));
    let run = run_fn(input.as_bytes());
    assert_eq!(run.code, 0, "{}", run.stderr);
    let out = run.resource_list();
    assert_eq!(generated(&out).len(), 7);
    let unit = find(&out, "Kustomization", "metallb-image-prepull");
    crd::validate(unit).unwrap();
    assert_eq!(unit["spec"]["sourceRef"]["name"], "platform-config");
    let said = out["results"].as_sequence().unwrap().iter().any(|r| {
        r["message"]
            .as_str()
            .unwrap()
            .contains("kustomize generator call")
            && r["message"].as_str().unwrap().contains("NOT rewritten")
    });
    assert!(said, "a result must say the dependsOn rewrite was not done");

    // Without source there is nowhere to reconcile the payload from.
    let no_source = fc.replace(
        "  source: {sourceRef: {kind: GitRepository, name: platform-config}, path: ./mgmt/metallb-image-prepull}\n",
        "",
    );
    assert_ne!(no_source, fc);
    let list: Value = yaml(&common::resource_list(&[&no_source], Some(&no_source)));
    fails(&list, "spec.source");
    // Without inline values there are none at all.
    let no_values = fc.split("  values:").next().unwrap().to_string();
    let list: Value = yaml(&common::resource_list(&[&no_values], Some(&no_values)));
    let e = fails(&list, "spec.values");
    assert!(e["message"].as_str().unwrap().contains("generator"));
}

#[test]
fn config_errors_name_the_field() {
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
    let mut list = source("prepull-upgrade-bfd-peers");
    set(
        &mut list,
        &["functionConfig", "data", "images"],
        "[quay.io/frrouting/frr:latest]".into(),
    );
    fails(&list, "data.images[0]");
    let mut list = source("prepull-upgrade-bfd-peers");
    set(
        &mut list,
        &["functionConfig", "data", "onTimeout"],
        "sometimes".into(),
    );
    fails(&list, "data.onTimeout");
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
