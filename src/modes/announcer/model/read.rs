//! KRM items → [`Snapshot`]: a live snapshot (objects as `kubectl get -o yaml` returns them,
//! with status) or a package (what the function emits for a phase; no status).
//!
//! Services, MetalLB pools and advertisements and the installations come from the announcer's
//! own reader ([`inputs::read`]); Cilium objects, Nodes and speaker Pods are read here.

use std::collections::{BTreeMap, BTreeSet};

use k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelector;
use serde_yaml::Value;

use super::super::cilium::{IpPool, L2Policy as CiliumL2Policy};
use super::super::helm::{self, get_path, path};
use super::super::inputs::{self, at};
use super::super::inventory::{Install, InstallKind, Inventory};
use super::super::ipam::{CiliumBlock, Family};
use super::super::service::LbService;
use super::super::values;
use super::state::{
    Advert, Block, CPool, Cluster, Flags, L2Policy, MlbPool, Node, Selector, Service, ServiceSpec,
    SvcKey, ip_list,
};

/// What a set of items says, in the model's terms.
#[derive(Debug, Clone)]
pub struct Snapshot {
    /// The objects (and, for a live snapshot, the statuses and processes).
    pub cluster: Cluster,
    /// MetalLB `(speaker, controller)` running per the installation items, `None` when the
    /// items hold no installation.
    pub metallb: Option<(bool, bool)>,
    /// Cilium release: `l2announcements.enabled` and the effective values as text (a change
    /// restarts the operator), `None` without a Cilium release.
    pub cilium: Option<(bool, String)>,
}

/// Reads items. Processes default to what the items say; without MetalLB installation items
/// the MetalLB processes run when MetalLB pools exist (a live cluster with pools has them).
pub fn snapshot(items: &[Value]) -> Snapshot {
    let (inv, _) = inputs::read(items);
    let metallb = metallb_flags(items, &inv);
    let cilium = inv.cilium.first().map(|release| {
        let v = values::effective_cilium_values(&items[release.index], release);
        let l2 = helm::as_bool(get_path(&v, &path(&[], &["l2announcements", "enabled"])));
        (
            l2 == Some(true),
            serde_yaml::to_string(&v).unwrap_or_default(),
        )
    });
    let protocol_diff = inv
        .cilium
        .first()
        .and_then(|r| values::protocol_differentiation(&items[r.index], r));
    let has_pools = !inv.pools.is_empty();
    let (speaker, controller) = metallb.unwrap_or((has_pools, has_pools));
    let mut cluster = Cluster {
        services: inv.services.iter().map(|s| service(items, s)).collect(),
        nodes: nodes(items),
        mlb_pools: mlb_pools(&inv),
        adverts: adverts(&inv),
        cilium_pools: BTreeMap::new(),
        conflicting: BTreeSet::new(),
        policies: BTreeMap::new(),
        flags: Flags {
            metallb_controller: controller,
            metallb_speaker: speaker,
            l2_announcements: cilium.as_ref().is_some_and(|c| c.0),
        },
        protocol_diff,
        next_created: 0,
    };
    cilium_objects(items, &mut cluster);
    Snapshot {
        cluster,
        metallb,
        cilium,
    }
}

fn service(items: &[Value], svc: &LbService) -> (SvcKey, Service) {
    let key = SvcKey {
        namespace: svc.namespace().to_owned(),
        name: svc.name().to_owned(),
    };
    let annotations = svc
        .kept_annotation_keys()
        .filter_map(|k| Some((k.to_owned(), svc.kept_annotation(k)?.to_owned())))
        .collect();
    let spec = ServiceSpec {
        labels: svc.labels(),
        annotations,
        class: svc.class().map(str::to_owned),
        lb_ip: svc.spec_lb_ip().map(str::to_owned),
        ports: ports(&items[svc.index]),
        etp_local: svc.etp_local(),
        selector: svc
            .selector()
            .unwrap_or_default()
            .into_iter()
            .map(|(k, v)| (k.to_owned(), v.to_owned()))
            .collect(),
    };
    let status = ip_list(&svc.ingress_ips().join(","));
    (key, Service { spec, status })
}

/// `spec.ports` as (port, protocol); the protocol defaults to TCP as the API server does.
fn ports(item: &Value) -> Vec<(i32, String)> {
    at(item, &["spec", "ports"])
        .and_then(Value::as_sequence)
        .into_iter()
        .flatten()
        .filter_map(|p| {
            let port =
                i32::try_from(crate::krm::yaml::resolve::go_yaml_i64(p.get("port")?)?).ok()?;
            let proto = p.get("protocol").and_then(Value::as_str).unwrap_or("TCP");
            Some((port, proto.to_owned()))
        })
        .collect()
}

fn selectors(list: &[LabelSelector]) -> Vec<Selector> {
    list.iter()
        .cloned()
        .map(|s| Selector::new(Some(s)))
        .collect()
}

fn mlb_pools(inv: &Inventory) -> BTreeMap<String, MlbPool> {
    inv.pools
        .iter()
        .map(|p| {
            let alloc = p.spec.service_allocation.clone().unwrap_or_default();
            let pool = MlbPool {
                labels: p.labels.clone(),
                ranges: p.addresses.iter().map(|a| a.interval()).collect(),
                auto_assign: p.auto_assign(),
                avoid_buggy: p.spec.avoid_buggy_ips,
                namespaces: alloc.namespaces.clone(),
                service_selectors: selectors(&alloc.service_selectors),
                priority: alloc.priority,
            };
            (p.name.clone(), pool)
        })
        .collect()
}

fn adverts(inv: &Inventory) -> BTreeMap<String, Advert> {
    inv.adverts
        .iter()
        .map(|a| {
            let advert = Advert {
                pools: a.spec.ip_address_pools.clone(),
                pool_selectors: selectors(&a.spec.ip_address_pool_selectors),
                node_selectors: selectors(&a.spec.node_selectors),
            };
            (a.name.clone(), advert)
        })
        .collect()
}

/// `(speaker, controller)` running. The speaker runs when any speaker-bearing item runs it
/// ([`values::speaker_stopped`]); the controller stops only with `controller.enabled: false`
/// in a chart's values.
fn metallb_flags(items: &[Value], inv: &Inventory) -> Option<(bool, bool)> {
    if inv.install.is_empty() {
        return None;
    }
    let speaker: Vec<bool> = inv
        .install
        .iter()
        .filter_map(|i| values::speaker_stopped(&items[i.index], i))
        .collect();
    let speaker = speaker.is_empty() || speaker.iter().any(|stopped| !stopped);
    let controller = !inv
        .install
        .iter()
        .any(|i| controller_stopped(&items[i.index], i));
    Some((speaker, controller))
}

fn controller_stopped(item: &Value, install: &Install) -> bool {
    match &install.kind {
        InstallKind::Helm { values, .. } => {
            get_path(
                &helm::read(item, &values.at),
                &path(&values.prefix, &["controller", "enabled"]),
            ) == Some(&Value::Bool(false))
        }
        _ => false,
    }
}

fn kind_of(item: &Value) -> (&str, &str) {
    let s = |k: &str| item.get(k).and_then(Value::as_str).unwrap_or("");
    (s("apiVersion"), s("kind"))
}

fn name_of(item: &Value) -> String {
    at(item, &["metadata", "name"])
        .and_then(Value::as_str)
        .unwrap_or("")
        .to_owned()
}

fn condition_true(item: &Value, kind: &str) -> bool {
    at(item, &["status", "conditions"])
        .and_then(Value::as_sequence)
        .is_some_and(|cs| {
            cs.iter().any(|c| {
                c.get("type").and_then(Value::as_str) == Some(kind)
                    && c.get("status").and_then(Value::as_str) == Some("True")
            })
        })
}

/// Nodes, and which of them run a MetalLB speaker pod (Pods labelled `component: speaker` or
/// `app.kubernetes.io/component: speaker`); without any speaker Pod among the items every
/// node counts as running one (a snapshot without Pods says nothing about them).
fn nodes(items: &[Value]) -> Vec<Node> {
    let mut speakers: BTreeSet<String> = BTreeSet::new();
    let mut any_pod = false;
    for item in items.iter().filter(|i| kind_of(i) == ("v1", "Pod")) {
        let labels = super::super::selector::labels_of(item);
        let speaker = ["component", "app.kubernetes.io/component"]
            .iter()
            .any(|k| labels.get(*k).map(String::as_str) == Some("speaker"));
        if let (true, Some(node)) = (speaker, at(item, &["spec", "nodeName"])) {
            any_pod = true;
            speakers.extend(node.as_str().map(str::to_owned));
        }
    }
    items
        .iter()
        .filter(|i| kind_of(i) == ("v1", "Node"))
        .map(|item| {
            let name = name_of(item);
            Node {
                speaker_pod: !any_pod || speakers.contains(&name),
                labels: super::super::selector::labels_of(item),
                network_unavailable: condition_true(item, "NetworkUnavailable"),
                name,
            }
        })
        .collect()
}

/// Cilium pools (with creation order and the live Conflicting mark) and L2 policies.
fn cilium_objects(items: &[Value], cluster: &mut Cluster) {
    let mut created: Vec<(String, String)> = Vec::new();
    for item in items {
        let (api, kind) = kind_of(item);
        if !api.starts_with("cilium.io/") {
            continue;
        }
        match kind {
            "CiliumLoadBalancerIPPool" => {
                let Ok(pool) = serde_yaml::from_value::<IpPool>(item.clone()) else {
                    continue;
                };
                let name = pool.metadata.name.clone();
                let ts = at(item, &["metadata", "creationTimestamp"])
                    .and_then(Value::as_str)
                    .unwrap_or("~")
                    .to_owned();
                created.push((ts, name.clone()));
                if condition_true(item, "cilium.io/PoolConflict") {
                    cluster.conflicting.insert(name.clone());
                }
                let disabled = at(item, &["spec", "disabled"]).and_then(Value::as_bool);
                cluster
                    .cilium_pools
                    .insert(name, cilium_pool(&pool, disabled == Some(true)));
            }
            "CiliumL2AnnouncementPolicy" => {
                let Ok(p) = serde_yaml::from_value::<CiliumL2Policy>(item.clone()) else {
                    continue;
                };
                let policy = L2Policy {
                    service_selector: Selector::new(p.spec.service_selector),
                    node_selector: Selector::new(p.spec.node_selector),
                    load_balancer_ips: p.spec.load_balancer_ips,
                };
                cluster.policies.insert(p.metadata.name, policy);
            }
            _ => {}
        }
    }
    // RFC 3339 timestamps sort as text; objects without one (packages) come last, by name.
    created.sort();
    for (order, (_, name)) in created.iter().enumerate() {
        if let Some(p) = cluster.cilium_pools.get_mut(name) {
            p.created = order as u64;
        }
    }
    cluster.next_created = created.len() as u64;
}

fn cilium_pool(pool: &IpPool, disabled: bool) -> CPool {
    let blocks = pool
        .spec
        .cilium_blocks()
        .into_iter()
        .map(|b| match b {
            CiliumBlock::Range(interval) => Block {
                interval,
                ends_reserved: false,
            },
            CiliumBlock::Cidr {
                interval,
                prefix,
                first_last_reserved,
            } => Block {
                interval,
                ends_reserved: first_last_reserved && interval_bits(&interval) - prefix > 1,
            },
        })
        .collect();
    CPool {
        blocks,
        selector: Selector::new(pool.spec.service_selector.clone()),
        disabled,
        created: 0,
    }
}

fn interval_bits(iv: &super::super::ipam::Interval) -> u32 {
    match iv.family {
        Family::V4 => 32,
        Family::V6 => 128,
    }
}

/// Whether MetalLB may hand out `value` of `pool` (`avoidBuggyIPs` skips `.0` and `.255`).
pub fn mlb_allows(pool: &MlbPool, ip: std::net::IpAddr) -> bool {
    let (family, v) = super::state::ip_value(ip);
    // MetalLB's `avoidBuggyIPs`: IPv4 addresses ending in .0 or .255.
    let buggy = family == Family::V4 && matches!(v & 0xff, 0 | 255);
    pool.ranges.iter().any(|r| r.contains((family, v))) && !(pool.avoid_buggy && buggy)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn items(text: &str) -> Vec<Value> {
        serde_yaml::Deserializer::from_str(text)
            .map(|d| serde::Deserialize::deserialize(d).unwrap())
            .collect()
    }

    /// cozystack's umbrella chart nests MetalLB's values under `metallb:`; Cilium's
    /// `l2announcements.enabled` comes from its release; Nodes, speaker Pods, live pool
    /// conflicts and creation order are read.
    #[test]
    fn processes_and_cluster_objects() {
        let s = snapshot(&items(
            r#"
apiVersion: helm.toolkit.fluxcd.io/v2
kind: HelmRelease
metadata: {name: metallb, namespace: cozy-metallb}
spec:
  chart: {spec: {chart: cozy-metallb}}
  values: {metallb: {speaker: {enabled: false}, controller: {enabled: false}}}
---
apiVersion: helm.toolkit.fluxcd.io/v2
kind: HelmRelease
metadata: {name: cilium, namespace: kube-system}
spec:
  chart: {spec: {chart: cilium}}
  values: {l2announcements: {enabled: true}}
---
apiVersion: v1
kind: Node
metadata: {name: n1}
status: {conditions: [{type: NetworkUnavailable, status: "True"}]}
---
apiVersion: v1
kind: Node
metadata: {name: n2}
---
apiVersion: v1
kind: Pod
metadata: {name: speaker-x, namespace: metallb-system, labels: {app.kubernetes.io/component: speaker}}
spec: {nodeName: n2}
---
apiVersion: cilium.io/v2
kind: CiliumLoadBalancerIPPool
metadata: {name: b, creationTimestamp: "2025-01-01T00:00:00Z"}
spec: {blocks: [{start: 10.0.0.1, stop: 10.0.0.9}], disabled: true}
status: {conditions: [{type: cilium.io/PoolConflict, status: "True"}]}
---
apiVersion: cilium.io/v2
kind: CiliumLoadBalancerIPPool
metadata: {name: a, creationTimestamp: "2026-01-01T00:00:00Z"}
spec: {blocks: [{cidr: 10.0.1.0/24}], allowFirstLastIPs: "No"}
"#,
        ));
        assert_eq!(s.metallb, Some((false, false)));
        assert_eq!(s.cilium.as_ref().map(|c| c.0), Some(true));
        let c = &s.cluster;
        assert!(c.nodes[0].network_unavailable && !c.nodes[0].speaker_pod);
        assert!(!c.nodes[1].network_unavailable && c.nodes[1].speaker_pod);
        assert_eq!(
            (c.cilium_pools["b"].created, c.cilium_pools["a"].created),
            (0, 1)
        );
        assert!(c.cilium_pools["b"].disabled && c.conflicting.contains("b"));
        let a = &c.cilium_pools["a"].blocks[0];
        assert!(!a.allows("10.0.1.0".parse().unwrap()) && a.allows("10.0.1.1".parse().unwrap()));
    }

    /// A cozystack Package carries MetalLB's values under `spec.components.metallb.values`
    /// (and `metallb:` inside them); without installation items the processes follow the
    /// pools.
    #[test]
    fn package_values_and_defaults() {
        let s = snapshot(&items(
            r#"
apiVersion: cozystack.io/v1alpha1
kind: Package
metadata: {name: cozystack.metallb}
spec:
  variant: default
  components:
    metallb:
      values: {metallb: {speaker: {enabled: false}}}
"#,
        ));
        assert_eq!(s.metallb, Some((false, true)));
        let pool = "apiVersion: metallb.io/v1beta1\nkind: IPAddressPool\nmetadata: {name: p, namespace: m}\nspec: {addresses: [10.0.0.0/28]}\n";
        let s = snapshot(&items(pool));
        assert_eq!(s.metallb, None);
        assert!(s.cluster.flags.metallb_speaker && s.cluster.flags.metallb_controller);
        assert!(!snapshot(&[]).cluster.flags.metallb_speaker);
    }
}
