//! Cilium's L2 announcer (agent): which nodes may answer ARP for a Service's IPs.
//!
//! cilium/cilium `pkg/l2announcer/l2announcer.go`: `upsertSvc` (read in a stored snapshot of
//! the file) keeps Services with a status IP and no class or Cilium's L2 class, and matches
//! each policy's `serviceSelector` against the Service's labels plus
//! `io.kubernetes.service.namespace/name` (`svcAndMetaLabels`; nil = all); a policy applies
//! on the nodes its `nodeSelector` matches and announces `loadBalancerIPs`; every status IP of
//! the Service — whoever wrote it — is announced from ONE node elected per Service by lease.
//! There is no exclusion label (research notes §7, 1.19 branch point). The model keeps the
//! candidate set, assumes a Cilium agent on every node, and lets the announcer react at once
//! (no lease delay, which only shortens windows the invariants look at).

use std::collections::BTreeSet;

use super::state::{Cluster, SvcKey, cilium_labels};

/// Cilium's L2 announcer `loadBalancerClass`.
pub const L2_CLASS: &str = "io.cilium/l2-announcer";

/// The nodes Cilium may announce the Service's status IPs from.
pub fn announcers(cluster: &Cluster, key: &SvcKey) -> BTreeSet<String> {
    announcers_by(cluster, key, |_| true)
}

/// [`announcers`] counting only the policies whose name `policy` accepts (e.g. those a plan
/// expects).
pub fn announcers_by(
    cluster: &Cluster,
    key: &SvcKey,
    policy: impl Fn(&str) -> bool,
) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    let Some(svc) = cluster.services.get(key) else {
        return out;
    };
    let class_ok = svc.spec.class.as_deref().is_none_or(|c| c == L2_CLASS);
    if !cluster.flags.l2_announcements || !class_ok {
        return out;
    }
    let labels = cilium_labels(key, &svc.spec);
    for (name, p) in &cluster.policies {
        if !policy(name) || !p.load_balancer_ips || !p.service_selector.matches(&labels) {
            continue;
        }
        out.extend(
            cluster
                .nodes
                .iter()
                .filter(|n| p.node_selector.matches(&n.labels))
                .map(|n| n.name.clone()),
        );
    }
    out
}

#[cfg(test)]
mod tests {
    use super::super::metallb::EXCLUDE_LABEL;
    use super::super::testkit::*;
    use super::*;
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::{LabelSelector, LabelSelectorRequirement};

    /// A policy without selectors announces every Service from every node, excluded or not;
    /// nothing is announced while `l2announcements.enabled` is off; a `DoesNotExist`
    /// requirement drops the excluded node.
    #[test]
    fn candidates() {
        let mut c = empty();
        node(&mut c, "cp", &[(EXCLUDE_LABEL, "")]);
        node(&mut c, "w1", &[]);
        service(&mut c, "s", 80, &[], &["10.0.0.5"]);
        policy(&mut c, "all", None);
        assert!(announcers(&c, &key("s")).is_empty());
        c.flags.l2_announcements = true;
        assert_eq!(announcers(&c, &key("s")).len(), 2);
        let dne = LabelSelector {
            match_expressions: Some(vec![LabelSelectorRequirement {
                key: EXCLUDE_LABEL.into(),
                operator: "DoesNotExist".into(),
                values: None,
            }]),
            ..Default::default()
        };
        policy(&mut c, "all", Some(dne));
        let nodes = announcers(&c, &key("s"));
        assert_eq!(nodes.into_iter().collect::<Vec<_>>(), vec!["w1".to_owned()]);
        c.services.get_mut(&key("s")).unwrap().spec.class = Some("other".into());
        assert!(announcers(&c, &key("s")).is_empty());
    }
}
