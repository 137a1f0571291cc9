//! Cilium's L2 announcer (agent): which nodes may answer ARP for a Service's IPs.
//!
//! cilium/cilium `pkg/l2announcer/l2announcer.go` (1.19 branch point, research notes §7):
//! with `l2announcements.enabled`, a policy selects a Service when its `serviceSelector`
//! matches the Service's labels plus `io.kubernetes.service.namespace/name` (nil = all) and it
//! announces `loadBalancerIPs`; every status IP of the Service — whoever wrote it — is then
//! announced from ONE node elected (per Service, by lease) among the nodes its `nodeSelector`
//! matches. There is no exclusion label. The model keeps the candidate set; a Cilium agent is
//! assumed on every node. Services of another `loadBalancerClass` than Cilium's L2 class are
//! skipped.

use std::collections::BTreeSet;

use super::state::{Cluster, SvcKey, cilium_labels};

/// Cilium's L2 announcer `loadBalancerClass`.
pub const L2_CLASS: &str = "io.cilium/l2-announcer";

/// The nodes Cilium may announce the Service's status IPs from.
pub fn announcers(cluster: &Cluster, key: &SvcKey) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    let Some(svc) = cluster.services.get(key) else {
        return out;
    };
    let class_ok = svc.spec.class.as_deref().is_none_or(|c| c == L2_CLASS);
    if !cluster.flags.l2_announcements || !class_ok {
        return out;
    }
    let labels = cilium_labels(key, &svc.spec);
    for policy in cluster.policies.values() {
        if !policy.load_balancer_ips || !policy.service_selector.matches(&labels) {
            continue;
        }
        out.extend(
            cluster
                .nodes
                .iter()
                .filter(|n| policy.node_selector.matches(&n.labels))
                .map(|n| n.name.clone()),
        );
    }
    out
}
