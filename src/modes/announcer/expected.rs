//! The expected end state: what the cluster must show once phase cutover is applied, as the
//! function computes it from the package (the Cilium pools and L2 policies the cutover leaves,
//! and for each Service the policies that announce it). The orchestrated chain writes it into
//! the plan ConfigMap after the `ObservedState` (the observed state); `cutover verify --plan`
//! reads it, and the cutover and cleanup gates check the cluster against it.

use std::collections::{BTreeMap, BTreeSet};

use serde::{Deserialize, Serialize};
use serde_yaml::Value;

use super::model::{self, state::SvcKey};

/// `kind` of the expected-state item (group `fn.cutover.dev`).
pub const KIND: &str = "ExpectedState";

/// The expected end state (its YAML fields besides `apiVersion`, `kind`, `metadata`).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default, deny_unknown_fields)]
pub struct ExpectedState {
    /// Names of the `CiliumLoadBalancerIPPool`s after cutover.
    pub cilium_pools: BTreeSet<String>,
    /// Names of the `CiliumL2AnnouncementPolicy`s after cutover: no other may announce.
    pub cilium_l2_policies: BTreeSet<String>,
    /// `<namespace>/<name>` → the policies (of `ciliumL2Policies`) that select the Service with
    /// `loadBalancerIPs: true`: its Lease holder must be a node one of them selects. Services the
    /// package does not hold (rendered by charts) are absent.
    pub announced_by: BTreeMap<String, BTreeSet<String>>,
}

impl ExpectedState {
    /// The expected end state of `items`, the package after phase cutover.
    pub fn of(items: &[Value]) -> ExpectedState {
        let cluster = model::snapshot(items).cluster;
        let mut announced_by = BTreeMap::new();
        for (key, svc) in &cluster.services {
            let class_ok = svc
                .spec
                .class
                .as_deref()
                .is_none_or(|c| c == model::l2announcer::L2_CLASS);
            if !class_ok {
                continue;
            }
            announced_by.insert(key.to_string(), policies_for(&cluster, key));
        }
        ExpectedState {
            cilium_pools: cluster.cilium_pools.keys().cloned().collect(),
            cilium_l2_policies: cluster.policies.keys().cloned().collect(),
            announced_by,
        }
    }

    /// The item written after the `ObservedState` in the plan.
    pub fn to_item(&self) -> Value {
        let mut item: Value = serde_yaml::to_value(self).unwrap_or(Value::Null);
        if let Value::Mapping(m) = &mut item {
            let mut head = serde_yaml::Mapping::new();
            head.insert(
                "apiVersion".into(),
                format!("{}/v1alpha1", crate::config::GROUP).into(),
            );
            head.insert("kind".into(), KIND.into());
            let mut meta = serde_yaml::Mapping::new();
            meta.insert("name".into(), "expected".into());
            head.insert("metadata".into(), Value::Mapping(meta));
            head.extend(std::mem::take(m));
            *m = head;
        }
        item
    }

    /// Reads the item's fields; the error names the field that does not read.
    pub fn read(item: &Value) -> Result<ExpectedState, String> {
        let mut fields = item.clone();
        if let Value::Mapping(m) = &mut fields {
            for k in ["apiVersion", "kind", "metadata"] {
                m.remove(k);
            }
        }
        serde_path_to_error::deserialize(fields).map_err(|e| {
            let path = e.path().to_string();
            format!("{KIND} {path}: {}", e.into_inner())
        })
    }
}

/// The L2 policies that announce the Service's IPs (`loadBalancerIPs: true`, its
/// `serviceSelector` matching; nodes aside).
fn policies_for(cluster: &model::state::Cluster, key: &SvcKey) -> BTreeSet<String> {
    let Some(svc) = cluster.services.get(key) else {
        return BTreeSet::new();
    };
    let labels = model::state::cilium_labels(key, &svc.spec);
    cluster
        .policies
        .iter()
        .filter(|(_, p)| p.load_balancer_ips && p.service_selector.matches(&labels))
        .map(|(n, _)| n.clone())
        .collect()
}
