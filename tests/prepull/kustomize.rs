//! The rendered payload in the tools that consume it: `kpt fn render` writes the directory and
//! the real `kubectl kustomize` builds it; as a kustomize generator (function config only) the
//! unit is emitted without the `dependsOn` rewrite.

use super::*;

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
