//! One pass over the items: the objects the mode looks at, indexed by role and by namespaced name.

use std::collections::HashMap;

use serde_yaml::Value;

use crate::krm::KrmObject;

/// Label sylva-units puts on every unit's objects; the `cluster` unit's HelmRelease carries
/// `sylva-units.unit: cluster` (charts/sylva-units/templates/_helpers.tpl, `unit-labels`).
pub const SYLVA_UNIT_LABEL: &str = "sylva-units.unit";
/// The unit whose HelmRelease renders the Cluster API objects (sylva-capi-cluster).
pub const CLUSTER_UNIT: &str = "cluster";
/// Flux HelmRelease API group.
pub const FLUX_HELM_GROUP: &str = "helm.toolkit.fluxcd.io";
/// Kyverno API group.
pub const KYVERNO_GROUP: &str = "kyverno.io";

/// (namespace, name) of a namespaced object.
pub type NamespacedName = (Option<String>, String);

/// Positions of the items the mode cares about.
#[derive(Debug, Default)]
pub struct Inputs {
    /// HelmReleases, in input order.
    pub helm_releases: Vec<usize>,
    /// ConfigMaps by namespace and name.
    pub config_maps: HashMap<NamespacedName, usize>,
    /// Secrets by namespace and name.
    pub secrets: HashMap<NamespacedName, usize>,
    /// Namespaces by name.
    pub namespaces: HashMap<String, usize>,
    /// Kyverno ClusterPolicies, in input order.
    pub cluster_policies: Vec<usize>,
}

impl Inputs {
    /// Indexes `items`. The first of several items with the same identity wins (kpt and
    /// kustomize refuse duplicates anyway).
    pub fn scan(items: &[Value]) -> Self {
        let mut inputs = Inputs::default();
        for (index, item) in items.iter().enumerate() {
            let key = || (item.namespace().map(str::to_owned), item.name().to_owned());
            match (item.group(), item.kind()) {
                (FLUX_HELM_GROUP, "HelmRelease") => inputs.helm_releases.push(index),
                (KYVERNO_GROUP, "ClusterPolicy") => inputs.cluster_policies.push(index),
                ("", "ConfigMap") => {
                    inputs.config_maps.entry(key()).or_insert(index);
                }
                ("", "Secret") => {
                    inputs.secrets.entry(key()).or_insert(index);
                }
                ("", "Namespace") => {
                    inputs
                        .namespaces
                        .entry(item.name().to_owned())
                        .or_insert(index);
                }
                _ => {}
            }
        }
        inputs
    }

    /// The ConfigMap `name` in `namespace`, if among the items.
    pub fn config_map(&self, namespace: Option<&str>, name: &str) -> Option<usize> {
        self.config_maps
            .get(&(namespace.map(str::to_owned), name.to_owned()))
            .copied()
    }

    /// The Secret `name` in `namespace`, if among the items.
    pub fn secret(&self, namespace: Option<&str>, name: &str) -> Option<usize> {
        self.secrets
            .get(&(namespace.map(str::to_owned), name.to_owned()))
            .copied()
    }

    /// The object a `valuesFrom` entry of kind `kind` names, in `namespace`.
    pub fn values_source(&self, kind: &str, namespace: Option<&str>, name: &str) -> Option<usize> {
        match kind {
            "ConfigMap" => self.config_map(namespace, name),
            "Secret" => self.secret(namespace, name),
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn indexes_by_role_and_namespaced_name() {
        let items: Vec<Value> = serde_yaml::Deserializer::from_str(
            "apiVersion: helm.toolkit.fluxcd.io/v2\nkind: HelmRelease\nmetadata: {name: cluster, namespace: wc1}\n---\n\
             apiVersion: v1\nkind: ConfigMap\nmetadata: {name: os-images-info, namespace: wc1}\n---\n\
             apiVersion: v1\nkind: ConfigMap\nmetadata: {name: os-images-info, namespace: wc2}\n---\n\
             apiVersion: v1\nkind: Namespace\nmetadata: {name: wc1}\n---\n\
             apiVersion: kyverno.io/v1\nkind: ClusterPolicy\nmetadata: {name: p}\n",
        )
        .map(|d| serde::Deserialize::deserialize(d).unwrap())
        .collect();
        let inputs = Inputs::scan(&items);
        assert_eq!(inputs.helm_releases, vec![0]);
        assert_eq!(inputs.config_map(Some("wc1"), "os-images-info"), Some(1));
        assert_eq!(inputs.config_map(Some("wc2"), "os-images-info"), Some(2));
        assert_eq!(inputs.config_map(None, "os-images-info"), None);
        assert_eq!(inputs.namespaces.get("wc1"), Some(&3));
        assert_eq!(inputs.cluster_policies, vec![4]);
        assert_eq!(inputs.values_source("Secret", Some("wc1"), "x"), None);
    }
}
