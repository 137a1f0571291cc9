//! The HelmRelease a sylva-units Helm unit deploys. sylva-units renders a Helm unit (such as
//! `metallb`) as a Flux Kustomization of `./kustomize-units/helmrelease-generic` whose
//! `spec.patches` carry the real HelmRelease: a JSON6902 patch (YAML text) on `target.kind:
//! HelmRelease` with `op: replace, path: /spec, value: <the HelmRelease spec>` (template
//! `helmrelease-kustomization-patch-template`, sylva-core `charts/sylva-units/templates/_helpers.tpl`).
//! That spec holds the chart values the release actually uses and, on a workload cluster, the
//! `kubeConfig` that sends the release to the workload cluster while the Kustomization itself
//! stays on the management cluster.

use serde_yaml::Value;

/// The HelmRelease `spec` patched in by a Helm-unit Kustomization, if it has one.
pub fn patched_spec(kustomization: &Value) -> Option<Value> {
    let patches = kustomization.get("spec")?.get("patches")?.as_sequence()?;
    patches.iter().find_map(|p| {
        let targets_helmrelease = p
            .get("target")
            .and_then(|t| t.get("kind"))
            .and_then(Value::as_str)
            == Some("HelmRelease");
        if !targets_helmrelease {
            return None;
        }
        let ops: Value = crate::krm::yaml::from_str(p.get("patch")?.as_str()?).ok()?;
        ops.as_sequence()?.iter().find_map(|op| {
            let replaces_spec = matches!(
                op.get("op").and_then(Value::as_str),
                Some("replace" | "add")
            ) && op.get("path").and_then(Value::as_str) == Some("/spec");
            replaces_spec
                .then(|| op.get("value"))
                .flatten()
                .filter(|v| v.is_mapping())
                .cloned()
        })
    })
}

/// `spec.kubeConfig` of a Kustomization or HelmRelease spec, when set (not null).
pub fn kube_config(spec: &Value) -> Option<&Value> {
    spec.get("kubeConfig").filter(|k| !k.is_null())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_the_spec_sylva_units_patches_in() {
        let k: Value = serde_yaml::from_str(
            "spec:\n  patches:\n  - patch: |\n      kind: Secret\n      metadata: {name: _unused_}\n      $patch: delete\n    target: {kind: Secret}\n  - patch: |\n      - op: replace\n        path: /metadata\n        value: {name: metallb}\n      - op: replace\n        path: /spec\n        value:\n          kubeConfig: {secretRef: {name: wc-kubeconfig}}\n          values: {speaker: {image: {repository: m/s}}}\n    target: {kind: HelmRelease}\n",
        )
        .unwrap();
        let spec = patched_spec(&k).unwrap();
        assert_eq!(spec["values"]["speaker"]["image"]["repository"], "m/s");
        assert_eq!(
            kube_config(&spec).unwrap()["secretRef"]["name"],
            "wc-kubeconfig"
        );
        let plain: Value = serde_yaml::from_str("spec: {path: ./x}").unwrap();
        assert_eq!(patched_spec(&plain), None);
    }
}
