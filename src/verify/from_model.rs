//! A transition-model state as the live objects `cutover verify` reads: the other way from
//! [`model::snapshot`] (which [`lease_held`] uses to read live objects as a model state).
//!
//! The model keeps what decides IPs and announcers; the gates read what the controllers write
//! about it. The conversion writes, for each state:
//! - Services with `status.loadBalancer.ingress` and, for a Service LB-IPAM handled (it has a
//!   view of it), condition `cilium.io/IPAMRequestSatisfied`: True when every IP it allocated
//!   is in the status, else False (`out_of_ips` when it allocated nothing);
//! - Nodes with their labels and `NetworkUnavailable`;
//! - one Running MetalLB speaker Pod per node that runs one while the speaker runs, one
//!   controller Pod while the controller runs (the chart's labels);
//! - per Service Cilium's L2 announcer may announce, its Lease, renewed at `now`, held by a
//!   candidate: an excluded one if any (the election may pick any candidate; the gate must
//!   hold whichever it picks), else the first by name;
//! - Cilium pools (PoolConflict True when LB-IPAM marked them) and policies;
//! - MetalLB pools and advertisements.

use serde_json::json;

use super::*;
use crate::modes::announcer::model::lbipam::LbIpam;

/// The live objects of a model state, as `kubectl get … -o yaml` items.
pub fn model_items(
    cluster: &Cluster,
    lbipam: &LbIpam,
    cilium_namespace: &str,
    now: Timestamp,
) -> Vec<Value> {
    let mut out: Vec<serde_json::Value> = Vec::new();
    for (key, svc) in &cluster.services {
        out.push(service(key, svc, lbipam));
    }
    for node in &cluster.nodes {
        let conditions = if node.network_unavailable {
            json!([{"type": "NetworkUnavailable", "status": "True"}])
        } else {
            json!([])
        };
        out.push(json!({"apiVersion": "v1", "kind": "Node",
            "metadata": {"name": node.name, "labels": node.labels},
            "status": {"conditions": conditions}}));
        if cluster.flags.metallb_speaker && node.speaker_pod {
            out.push(pod(
                &format!("speaker-{}", node.name),
                "speaker",
                &node.name,
            ));
        }
    }
    if cluster.flags.metallb_controller {
        let node = cluster.nodes.first().map_or("", |n| n.name.as_str());
        out.push(pod("controller", "controller", node));
    }
    for key in cluster.services.keys() {
        let candidates = l2announcer::announcers(cluster, key);
        let excluded = cluster
            .nodes
            .iter()
            .find(|n| candidates.contains(&n.name) && n.labels.contains_key(EXCLUDE_LB_LABEL));
        let holder = excluded
            .map(|n| n.name.clone())
            .or_else(|| candidates.first().cloned());
        if let Some(holder) = holder {
            out.push(
                json!({"apiVersion": "coordination.k8s.io/v1", "kind": "Lease",
                "metadata": {"namespace": cilium_namespace,
                    "name": format!("{LEASE_PREFIX}{}-{}", key.namespace, key.name)},
                "spec": {"holderIdentity": holder, "leaseDurationSeconds": 15,
                    "renewTime": now.to_string()}}),
            );
        }
    }
    cilium_objects(cluster, lbipam, &mut out);
    for (name, pool) in &cluster.mlb_pools {
        let addresses: Vec<String> = pool.ranges.iter().map(ToString::to_string).collect();
        out.push(
            json!({"apiVersion": "metallb.io/v1beta1", "kind": "IPAddressPool",
            "metadata": {"namespace": "metallb-system", "name": name},
            "spec": {"addresses": addresses}}),
        );
    }
    for (name, advert) in &cluster.adverts {
        out.push(
            json!({"apiVersion": "metallb.io/v1beta1", "kind": "L2Advertisement",
            "metadata": {"namespace": "metallb-system", "name": name},
            "spec": {"ipAddressPools": advert.pools}}),
        );
    }
    out.iter()
        .map(|v| serde_yaml::to_value(v).unwrap_or(Value::Null))
        .collect()
}

fn service(
    key: &SvcKey,
    svc: &crate::modes::announcer::model::state::Service,
    lbipam: &LbIpam,
) -> serde_json::Value {
    let ingress: Vec<serde_json::Value> = svc.status.iter().map(|ip| json!({"ip": ip})).collect();
    let mut conditions = Vec::new();
    if let Some(view) = lbipam.views.get(key) {
        let ok = !view.allocated.is_empty()
            && view.allocated.iter().all(|(ip, _)| svc.status.contains(ip));
        let (status, reason) = if ok {
            ("True", "satisfied")
        } else if view.allocated.is_empty() {
            ("False", "out_of_ips")
        } else {
            ("False", "not_in_status")
        };
        conditions.push(
            json!({"type": IPAM_SATISFIED[0], "status": status, "reason": reason,
            "message": "", "lastTransitionTime": "2026-01-01T00:00:00Z"}),
        );
    }
    let spec = &svc.spec;
    let ports: Vec<serde_json::Value> = spec
        .ports
        .iter()
        .map(|(p, proto)| json!({"port": p, "protocol": proto}))
        .collect();
    let mut s = json!({"type": "LoadBalancer", "ports": ports,
        "externalTrafficPolicy": if spec.etp_local { "Local" } else { "Cluster" }});
    if let Some(class) = &spec.class {
        s["loadBalancerClass"] = json!(class);
    }
    if let Some(ip) = &spec.lb_ip {
        s["loadBalancerIP"] = json!(ip);
    }
    if !spec.selector.is_empty() {
        let sel: BTreeMap<&str, &str> = spec
            .selector
            .iter()
            .map(|(k, v)| (k.as_str(), v.as_str()))
            .collect();
        s["selector"] = json!(sel);
    }
    json!({"apiVersion": "v1", "kind": "Service",
        "metadata": {"namespace": key.namespace, "name": key.name, "labels": spec.labels,
            "annotations": spec.annotations},
        "spec": s,
        "status": {"loadBalancer": {"ingress": ingress}, "conditions": conditions}})
}

fn pod(name: &str, component: &str, node: &str) -> serde_json::Value {
    json!({"apiVersion": "v1", "kind": "Pod",
        "metadata": {"namespace": "metallb-system", "name": format!("metallb-{name}"),
            "labels": {"app.kubernetes.io/name": "metallb",
                "app.kubernetes.io/component": component}},
        "spec": {"nodeName": node, "containers": [{"name": component}]},
        "status": {"phase": "Running"}})
}

fn cilium_objects(cluster: &Cluster, lbipam: &LbIpam, out: &mut Vec<serde_json::Value>) {
    for (name, pool) in &cluster.cilium_pools {
        let blocks: Vec<serde_json::Value> = pool
            .blocks
            .iter()
            .map(|b| {
                let (start, stop) = (
                    crate::modes::announcer::model::state::ip_of(
                        b.interval.family,
                        b.interval.start,
                    ),
                    crate::modes::announcer::model::state::ip_of(b.interval.family, b.interval.end),
                );
                json!({"start": start, "stop": stop})
            })
            .collect();
        let mut spec = json!({"blocks": blocks, "disabled": pool.disabled});
        if let Some(sel) = pool.selector.selector() {
            spec["serviceSelector"] = json!(sel);
        }
        let conflict = lbipam.conflicting.contains(name) || cluster.conflicting.contains(name);
        let conditions = if conflict {
            json!([{"type": POOL_CONFLICT[0], "status": "True", "reason": "cidr_overlap",
                "message": "", "lastTransitionTime": "2026-01-01T00:00:00Z"}])
        } else {
            json!([])
        };
        out.push(
            json!({"apiVersion": "cilium.io/v2alpha1", "kind": "CiliumLoadBalancerIPPool",
            "metadata": {"name": name}, "spec": spec, "status": {"conditions": conditions}}),
        );
    }
    for (name, policy) in &cluster.policies {
        let mut spec = json!({"loadBalancerIPs": policy.load_balancer_ips});
        if let Some(sel) = policy.service_selector.selector() {
            spec["serviceSelector"] = json!(sel);
        }
        if let Some(sel) = policy.node_selector.selector() {
            spec["nodeSelector"] = json!(sel);
        }
        out.push(
            json!({"apiVersion": "cilium.io/v2alpha1", "kind": "CiliumL2AnnouncementPolicy",
            "metadata": {"name": name}, "spec": spec}),
        );
    }
}
