//! One pass over the input items: everything the mode looks at, indexed by role, so later steps
//! never rescan the list (the engine may hand us 100k items).

use serde_yaml::Value;

use super::siblings::ROOT_DEPENDENCY_WAIT;
use crate::krm::KrmObject;
use crate::krm::annotations::LOCAL_CONFIG;

/// Name of the unit this mode generates (Flux Kustomization, DaemonSet, labels).
pub const UNIT: &str = "metallb-image-prepull";
/// Annotation marking every object this mode generated; its value is [`UNIT`].
pub const GENERATED_BY: &str = "fn.cutover.dev/generated-by";
/// Label sylva-units puts on every unit Kustomization.
pub const SYLVA_UNIT_LABEL: &str = "sylva-units.unit";
/// Flux Kustomization API group.
pub const FLUX_KUSTOMIZE_GROUP: &str = "kustomize.toolkit.fluxcd.io";
/// Flux HelmRelease API group.
pub const FLUX_HELM_GROUP: &str = "helm.toolkit.fluxcd.io";
/// Name of the sylva-units completion marker (Kustomization and ConfigMap).
pub const STATUS_NAME: &str = "sylva-units-status";

/// Positions of the items the mode cares about, in input order.
#[derive(Debug, Default)]
pub struct Inputs {
    /// The function configuration itself, when kpt passed it as an item too.
    pub function_config: Option<usize>,
    /// Items this mode generated on an earlier run.
    pub generated: Vec<usize>,
    /// Flux Kustomizations named like the gated unit (normally exactly one).
    pub gated: Vec<usize>,
    /// Flux Kustomizations that are sylva units (label `sylva-units.unit`), excluding ours.
    pub unit_kustomizations: Vec<usize>,
    /// A Flux Kustomization named like our unit that this mode did not generate (e.g. a unit
    /// sylva-units itself renders under that name).
    pub foreign_unit: Option<usize>,
    /// Flux Kustomizations sylva-units' root-dependency Job waits for (label
    /// `sylva-units/root-dependency-wait`), excluding ours.
    pub waiting_kustomizations: Vec<usize>,
    /// Flux Kustomization `sylva-units-status`.
    pub status_kustomization: Option<usize>,
    /// ConfigMap `sylva-units-status`.
    pub status_configmap: Option<usize>,
    /// MetalLB `BGPPeer` objects.
    pub bgp_peers: Vec<usize>,
    /// frr-k8s `FRRConfiguration` objects (only exist when frr-k8s already runs).
    pub frr_configurations: Vec<usize>,
    /// HelmReleases named `metallb`.
    pub metallb_helmreleases: Vec<usize>,
    /// Candidate holders of the sylva values: (kind, index).
    pub values_candidates: Vec<usize>,
    /// Number of items that are neither the function config nor local config (kustomize
    /// generators receive none).
    pub resources: usize,
}

impl Inputs {
    /// Indexes `items` for a run whose gated Kustomization is named `gated_name`.
    pub fn scan(items: &[Value], function_config: Option<&Value>, gated_name: &str) -> Self {
        let mut inputs = Inputs::default();
        for (index, item) in items.iter().enumerate() {
            if inputs.function_config.is_none()
                && function_config.is_some_and(|fc| same_object(fc, item))
            {
                inputs.function_config = Some(index);
                continue;
            }
            if item.annotation(LOCAL_CONFIG) != Some("true") {
                inputs.resources += 1;
            }
            if item.annotation(GENERATED_BY) == Some(UNIT) {
                inputs.generated.push(index);
                continue;
            }
            match (item.group(), item.kind()) {
                (FLUX_KUSTOMIZE_GROUP, "Kustomization") => {
                    if item.name() == gated_name {
                        inputs.gated.push(index);
                    }
                    if item.name() == UNIT {
                        inputs.foreign_unit.get_or_insert(index);
                    }
                    if item.name() == STATUS_NAME {
                        inputs.status_kustomization.get_or_insert(index);
                    }
                    if item.label(SYLVA_UNIT_LABEL).is_some() {
                        inputs.unit_kustomizations.push(index);
                    }
                    if item.label(ROOT_DEPENDENCY_WAIT).is_some() {
                        inputs.waiting_kustomizations.push(index);
                    }
                }
                ("", "ConfigMap") if item.name() == STATUS_NAME => {
                    inputs.status_configmap.get_or_insert(index);
                }
                ("metallb.io", "BGPPeer") => inputs.bgp_peers.push(index),
                ("frrk8s.metallb.io", "FRRConfiguration") => inputs.frr_configurations.push(index),
                (FLUX_HELM_GROUP, "HelmRelease") if item.name() == "metallb" => {
                    inputs.metallb_helmreleases.push(index)
                }
                _ => {}
            }
            if matches!(
                (item.group(), item.kind()),
                ("", "Secret") | ("", "ConfigMap") | (FLUX_HELM_GROUP, "HelmRelease")
            ) {
                inputs.values_candidates.push(index);
            }
        }
        inputs
    }

    /// True when the only input is the function configuration: a kustomize generator call.
    pub fn is_generator_call(&self) -> bool {
        self.resources == 0
    }
}

/// Same identity (without allocating: this runs once per item).
fn same_object(a: &Value, b: &Value) -> bool {
    a.name() == b.name()
        && a.kind() == b.kind()
        && a.api_version() == b.api_version()
        && a.namespace() == b.namespace()
}

#[cfg(test)]
mod tests {
    use super::*;

    use super::super::test_support::docs as items;

    #[test]
    fn indexes_items_by_role() {
        let items = items(
            "apiVersion: kustomize.toolkit.fluxcd.io/v1\nkind: Kustomization\nmetadata: {name: metallb, labels: {sylva-units.unit: metallb}}\n---\n\
             apiVersion: v1\nkind: Secret\nmetadata: {name: sylva-units-values}\n---\n\
             apiVersion: metallb.io/v1beta2\nkind: BGPPeer\nmetadata: {name: p}\n---\n\
             apiVersion: apps/v1\nkind: DaemonSet\nmetadata: {name: metallb-image-prepull, annotations: {fn.cutover.dev/generated-by: metallb-image-prepull}}\n---\n\
             apiVersion: fn.cutover.dev/v1alpha1\nkind: MetalLBImagePrepull\nmetadata: {name: fc}\n",
        );
        let fc = items[4].clone();
        let inputs = Inputs::scan(&items, Some(&fc), "metallb");
        assert_eq!(inputs.gated, vec![0]);
        assert_eq!(inputs.unit_kustomizations, vec![0]);
        assert_eq!(inputs.values_candidates, vec![1]);
        assert_eq!(inputs.bgp_peers, vec![2]);
        assert_eq!(inputs.generated, vec![3]);
        assert_eq!(inputs.function_config, Some(4));
        assert!(!inputs.is_generator_call());
        let only_fc = Inputs::scan(&items[4..], Some(&fc), "metallb");
        assert!(only_fc.is_generator_call());
    }
}
