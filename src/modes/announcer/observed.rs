//! Observed state: the cluster's live objects, exported into the package as one `ObservedState`
//! item (local config: kpt and Flux never apply it, the function never edits it).
//!
//! Services in git carry no `status`: the IPs MetalLB assigned live only in the cluster, so a
//! proof that reads only the package cannot know them. `cutover observe` wraps the output of
//! one documented `kubectl get … -o yaml` (see docs/operations/cilium-l2-cutover.md) into this
//! item; the announcer then takes each Service's IPs from it, and learns which Cilium pools and
//! L2 policies exist, which nodes carry MetalLB's exclusion label, and whether MetalLB's speaker
//! and controller pods still run.

use std::collections::{BTreeMap, BTreeSet};

use serde_yaml::{Mapping, Value};

use super::inventory::{CILIUM_GROUP, MANAGED_BY};
use crate::krm::annotations::LOCAL_CONFIG;
use crate::krm::{KrmObject, KrmResult};

/// `kind` of the observed-state item (group `fn.cutover.dev`).
pub const KIND: &str = "ObservedState";
/// Label MetalLB's speaker honours (since v0.14.0, `speakersForPool`): it never announces from
/// a node carrying it, whatever the value. kubeadm and Talos set it on control planes.
pub const EXCLUDE_LB_LABEL: &str = "node.kubernetes.io/exclude-from-external-load-balancers";

/// A Cilium pool or L2 policy that exists in the cluster.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LiveCiliumObject {
    /// `CiliumLoadBalancerIPPool` or `CiliumL2AnnouncementPolicy`.
    pub kind: String,
    /// `metadata.name`.
    pub name: String,
    /// Carries cutover's `app.kubernetes.io/managed-by` label (an earlier phase applied it).
    pub generated: bool,
    /// A pool LB-IPAM marked Conflicting (`cilium.io/PoolConflict` True).
    pub conflicting: bool,
}

/// A node as MetalLB's speaker judges it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LiveNode {
    /// `metadata.name`.
    pub name: String,
    /// Carries [`EXCLUDE_LB_LABEL`].
    pub excluded: bool,
    /// Condition `NetworkUnavailable` is True (MetalLB skips such nodes too).
    pub network_unavailable: bool,
}

/// What the `ObservedState` item says about the cluster.
#[derive(Debug, Clone, Default)]
pub struct Observed {
    /// Item index of the `ObservedState` item.
    pub index: usize,
    /// LoadBalancer Services by `(namespace, name)`: their `status.loadBalancer.ingress` IPs.
    pub services: BTreeMap<(String, String), Vec<String>>,
    /// Nodes.
    pub nodes: Vec<LiveNode>,
    /// Cilium pools and L2 policies.
    pub cilium: Vec<LiveCiliumObject>,
    /// Nodes with a running MetalLB speaker pod.
    pub speaker_nodes: BTreeSet<String>,
    /// Running MetalLB controller pods.
    pub controller_pods: usize,
}

impl Observed {
    /// Reads an `ObservedState` item. Items of other kinds inside it are ignored; an item that
    /// is not a mapping is an error naming its index.
    pub fn read(index: usize, item: &Value, results: &mut Vec<KrmResult>) -> Observed {
        let mut out = Observed {
            index,
            ..Observed::default()
        };
        let Some(list) = item.get("items").and_then(Value::as_sequence) else {
            results.push(
                KrmResult::error("ObservedState has no items list: write it with cutover observe")
                    .about(item)
                    .field("items"),
            );
            return out;
        };
        for (i, live) in list.iter().enumerate() {
            if !live.is_mapping() {
                results.push(
                    KrmResult::error("not an object")
                        .about(item)
                        .field(format!("items[{i}]")),
                );
                continue;
            }
            out.observe(live);
        }
        out
    }

    fn observe(&mut self, live: &Value) {
        match (live.group(), live.kind()) {
            ("", "Service") => {
                if str_at(live, &["spec", "type"]) != Some("LoadBalancer") {
                    return;
                }
                let ns = live.namespace().unwrap_or("default").to_owned();
                let ips = at(live, &["status", "loadBalancer", "ingress"])
                    .and_then(Value::as_sequence)
                    .into_iter()
                    .flatten()
                    .filter_map(|i| i.get("ip").and_then(Value::as_str))
                    .map(str::to_owned)
                    .collect();
                self.services.insert((ns, live.name().to_owned()), ips);
            }
            ("", "Node") => self.nodes.push(LiveNode {
                name: live.name().to_owned(),
                excluded: live.label(EXCLUDE_LB_LABEL).is_some(),
                network_unavailable: condition_true(live, "NetworkUnavailable"),
            }),
            (CILIUM_GROUP, kind @ ("CiliumLoadBalancerIPPool" | "CiliumL2AnnouncementPolicy")) => {
                self.cilium.push(LiveCiliumObject {
                    kind: kind.to_owned(),
                    name: live.name().to_owned(),
                    generated: live.label(MANAGED_BY.0) == Some(MANAGED_BY.1),
                    conflicting: condition_true(live, "cilium.io/PoolConflict"),
                })
            }
            ("", "Pod") => self.observe_pod(live),
            _ => {}
        }
    }

    /// MetalLB's pods (chart labels `app.kubernetes.io/name: metallb` and
    /// `app.kubernetes.io/component`, or the manifests' `app: metallb` and `component`).
    fn observe_pod(&mut self, pod: &Value) {
        let name = pod
            .label("app.kubernetes.io/name")
            .or_else(|| pod.label("app"));
        if name != Some("metallb") {
            return;
        }
        let running = matches!(
            str_at(pod, &["status", "phase"]),
            Some("Running" | "Pending")
        );
        if !running {
            return;
        }
        let component = pod
            .label("app.kubernetes.io/component")
            .or_else(|| pod.label("component"));
        match component {
            Some("speaker") => {
                let node = str_at(pod, &["spec", "nodeName"]).unwrap_or("?");
                self.speaker_nodes.insert(node.to_owned());
            }
            Some("controller") => self.controller_pods += 1,
            _ => {}
        }
    }

    /// The IPs of a LoadBalancer Service the cluster has, `None` when it has no such Service.
    pub fn service_ips(&self, namespace: &str, name: &str) -> Option<&[String]> {
        self.services
            .get(&(namespace.to_owned(), name.to_owned()))
            .map(Vec::as_slice)
    }

    /// Nodes MetalLB's speaker never announces from.
    pub fn excluded_nodes(&self) -> Vec<&str> {
        self.nodes
            .iter()
            .filter(|n| n.excluded || n.network_unavailable)
            .map(|n| n.name.as_str())
            .collect()
    }
}

fn at<'a>(v: &'a Value, path: &[&str]) -> Option<&'a Value> {
    path.iter().try_fold(v, |cur, key| cur.get(*key))
}

fn str_at<'a>(v: &'a Value, path: &[&str]) -> Option<&'a str> {
    at(v, path).and_then(Value::as_str)
}

fn condition_true(obj: &Value, kind: &str) -> bool {
    at(obj, &["status", "conditions"])
        .and_then(Value::as_sequence)
        .into_iter()
        .flatten()
        .any(|c| {
            c.get("type").and_then(Value::as_str) == Some(kind)
                && c.get("status").and_then(Value::as_str) == Some("True")
        })
}

/// The kinds `cutover observe` keeps from kubectl's list (everything else is dropped, so the
/// item stays small and holds no Secret by accident).
const OBSERVED_KINDS: &[(&str, &str)] = &[
    ("", "Service"),
    ("", "Node"),
    ("", "Pod"),
    (CILIUM_GROUP, "CiliumLoadBalancerIPPool"),
    (CILIUM_GROUP, "CiliumL2AnnouncementPolicy"),
];

/// `cutover observe`: wraps kubectl's `List` (YAML or JSON, as `kubectl get … -o yaml` prints
/// it) into an `ObservedState` item. Keeps only the kinds the announcer reads, LoadBalancer
/// Services only, MetalLB pods only, and drops `metadata.managedFields` (bulk no reader needs).
pub fn wrap(list: &Value, name: &str) -> Result<Value, String> {
    let items = match (list.kind(), list.get("items")) {
        ("List", Some(Value::Sequence(items))) => items,
        ("List", _) => return Err("the List has no items".into()),
        (kind, _) => {
            return Err(format!(
                "expected a List (kubectl get … -o yaml), got {kind:?}"
            ));
        }
    };
    let mut kept = Vec::new();
    for item in items {
        let key = (item.group(), item.kind());
        if !OBSERVED_KINDS.contains(&key) {
            continue;
        }
        if key == ("", "Service") && str_at(item, &["spec", "type"]) != Some("LoadBalancer") {
            continue;
        }
        if key == ("", "Pod")
            && item
                .label("app.kubernetes.io/name")
                .or_else(|| item.label("app"))
                != Some("metallb")
        {
            continue;
        }
        let mut item = item.clone();
        if let Some(meta) = item.get_mut("metadata").and_then(Value::as_mapping_mut) {
            meta.remove("managedFields");
        }
        kept.push(item);
    }
    let mut annotations = Mapping::new();
    annotations.insert(LOCAL_CONFIG.into(), "true".into());
    let mut metadata = Mapping::new();
    metadata.insert("name".into(), name.into());
    metadata.insert("annotations".into(), Value::Mapping(annotations));
    let mut out = Mapping::new();
    out.insert("apiVersion".into(), crate::config::API_VERSION.into());
    out.insert("kind".into(), KIND.into());
    out.insert("metadata".into(), Value::Mapping(metadata));
    out.insert("items".into(), Value::Sequence(kept));
    Ok(Value::Mapping(out))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn yaml(text: &str) -> Value {
        serde_yaml::from_str(text).unwrap()
    }

    #[test]
    fn reads_services_nodes_cilium_objects_and_metallb_pods() {
        let item = yaml(
            r#"
apiVersion: fn.cutover.dev/v1alpha1
kind: ObservedState
metadata: {name: live}
items:
- {apiVersion: v1, kind: Service, metadata: {name: web, namespace: shop}, spec: {type: LoadBalancer},
   status: {loadBalancer: {ingress: [{ip: 10.0.0.5}, {hostname: x}]}}}
- {apiVersion: v1, kind: Service, metadata: {name: internal}, spec: {type: ClusterIP}}
- {apiVersion: v1, kind: Node, metadata: {name: cp1, labels: {node.kubernetes.io/exclude-from-external-load-balancers: ""}}}
- {apiVersion: v1, kind: Node, metadata: {name: w1}, status: {conditions: [{type: NetworkUnavailable, status: "True"}]}}
- {apiVersion: v1, kind: Node, metadata: {name: w2}}
- {apiVersion: cilium.io/v2, kind: CiliumLoadBalancerIPPool, metadata: {name: other},
   status: {conditions: [{type: cilium.io/PoolConflict, status: "True"}]}}
- {apiVersion: v1, kind: Pod, metadata: {name: s1, labels: {app.kubernetes.io/name: metallb, app.kubernetes.io/component: speaker}},
   spec: {nodeName: w2}, status: {phase: Running}}
- {apiVersion: v1, kind: Pod, metadata: {name: c1, labels: {app: metallb, component: controller}}, status: {phase: Running}}
- {apiVersion: v1, kind: Pod, metadata: {name: old, labels: {app: metallb, component: speaker}}, status: {phase: Succeeded}}
"#,
        );
        let mut results = Vec::new();
        let o = Observed::read(3, &item, &mut results);
        assert!(results.is_empty(), "{results:?}");
        assert_eq!(o.index, 3);
        assert_eq!(
            o.service_ips("shop", "web"),
            Some(&["10.0.0.5".to_owned()][..])
        );
        assert_eq!(o.service_ips("default", "internal"), None);
        assert_eq!(o.excluded_nodes(), vec!["cp1", "w1"]);
        assert_eq!(o.cilium.len(), 1);
        assert!(o.cilium[0].conflicting && !o.cilium[0].generated);
        assert_eq!(o.speaker_nodes, BTreeSet::from(["w2".to_owned()]));
        assert_eq!(o.controller_pods, 1);
    }

    #[test]
    fn an_item_without_items_is_an_error() {
        let mut results = Vec::new();
        Observed::read(
            0,
            &yaml(
                "{apiVersion: fn.cutover.dev/v1alpha1, kind: ObservedState, metadata: {name: x}}",
            ),
            &mut results,
        );
        assert_eq!(results.len(), 1);
        assert!(results[0].is_error());
    }

    #[test]
    fn wrap_keeps_what_the_announcer_reads() {
        let list = yaml(
            r#"
apiVersion: v1
kind: List
metadata: {resourceVersion: ""}
items:
- {apiVersion: v1, kind: Service, metadata: {name: a, managedFields: [{manager: x}]}, spec: {type: LoadBalancer}}
- {apiVersion: v1, kind: Service, metadata: {name: b}, spec: {type: ClusterIP}}
- {apiVersion: v1, kind: Secret, metadata: {name: s}}
- {apiVersion: v1, kind: Pod, metadata: {name: p, labels: {app: web}}}
- {apiVersion: v1, kind: Node, metadata: {name: n}}
"#,
        );
        let out = wrap(&list, "live").unwrap();
        assert_eq!(out.kind(), KIND);
        assert_eq!(out.annotation(LOCAL_CONFIG), Some("true"));
        let names: Vec<&str> = out["items"]
            .as_sequence()
            .unwrap()
            .iter()
            .map(|i| i.name())
            .collect();
        assert_eq!(names, ["a", "n"]);
        assert!(out["items"][0]["metadata"].get("managedFields").is_none());
        assert!(wrap(&yaml("{kind: Service}"), "live").is_err());
    }
}
