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

use serde::Deserialize;
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

/// The item's fields (see [`wrap`] for what each holds). A digest rather than the live objects
/// themselves: a platform's export is thousands of Services, and a few bytes a Service keep the
/// package's diff readable and the function's parse cheap.
#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase", default, deny_unknown_fields)]
struct Digest {
    /// `<namespace>/<name>` → its IPs, comma-separated (empty: no IP yet).
    services: BTreeMap<String, String>,
    /// Node name → what MetalLB's speaker judges.
    nodes: BTreeMap<String, NodeDigest>,
    cilium_pools: Vec<CiliumDigest>,
    cilium_l2_policies: Vec<CiliumDigest>,
    metallb: MetallbDigest,
}

#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase", default, deny_unknown_fields)]
struct NodeDigest {
    exclude_from_external_load_balancers: bool,
    network_unavailable: bool,
}

#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase", default, deny_unknown_fields)]
struct CiliumDigest {
    name: String,
    generated_by_cutover: bool,
    conflicting: bool,
}

#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase", default, deny_unknown_fields)]
struct MetallbDigest {
    speaker_nodes: Vec<String>,
    controller_pods: usize,
}

/// The fields of the item besides `apiVersion`, `kind` and `metadata`.
const DIGEST_FIELDS: &[&str] = &[
    "services",
    "nodes",
    "ciliumPools",
    "ciliumL2Policies",
    "metallb",
];

impl Observed {
    /// Reads an `ObservedState` item; a field that does not read is an error naming its path.
    pub fn read(index: usize, item: &Value, results: &mut Vec<KrmResult>) -> Observed {
        let mut out = Observed {
            index,
            ..Observed::default()
        };
        let mut fields = Mapping::new();
        for (k, v) in item.as_mapping().into_iter().flatten() {
            match k.as_str() {
                Some("apiVersion" | "kind" | "metadata") => {}
                Some(key) if DIGEST_FIELDS.contains(&key) => {
                    fields.insert(k.clone(), v.clone());
                }
                _ => {
                    let key = k.as_str().unwrap_or("?");
                    results.push(
                        KrmResult::error(format!(
                            "unknown field {key:?}: an ObservedState has {} (write it with cutover observe)",
                            DIGEST_FIELDS.join(", ")
                        ))
                        .about(item)
                        .field(key),
                    );
                    return out;
                }
            }
        }
        let digest: Digest = match super::inputs::decode(item, &Value::Mapping(fields), "") {
            Ok(d) => d,
            Err(e) => {
                results.push(e);
                return out;
            }
        };
        for (key, ips) in digest.services {
            let Some((ns, name)) = key.split_once('/') else {
                results.push(
                    KrmResult::error("a Service key is <namespace>/<name>")
                        .about(item)
                        .field(format!("services.{key}")),
                );
                continue;
            };
            let ips = ips
                .split(',')
                .map(str::trim)
                .filter(|ip| !ip.is_empty())
                .map(str::to_owned)
                .collect();
            out.services.insert((ns.to_owned(), name.to_owned()), ips);
        }
        out.nodes = digest
            .nodes
            .into_iter()
            .map(|(name, n)| LiveNode {
                name,
                excluded: n.exclude_from_external_load_balancers,
                network_unavailable: n.network_unavailable,
            })
            .collect();
        let cilium = |kind: &str, list: Vec<CiliumDigest>| -> Vec<LiveCiliumObject> {
            list.into_iter()
                .map(|c| LiveCiliumObject {
                    kind: kind.to_owned(),
                    name: c.name,
                    generated: c.generated_by_cutover,
                    conflicting: c.conflicting,
                })
                .collect()
        };
        out.cilium = cilium("CiliumLoadBalancerIPPool", digest.cilium_pools);
        out.cilium.extend(cilium(
            "CiliumL2AnnouncementPolicy",
            digest.cilium_l2_policies,
        ));
        out.speaker_nodes = digest.metallb.speaker_nodes.into_iter().collect();
        out.controller_pods = digest.metallb.controller_pods;
        out
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

/// A MetalLB pod's component (`speaker`, `controller`) when it runs: chart labels
/// `app.kubernetes.io/name: metallb` + `app.kubernetes.io/component`, or the manifests' `app:
/// metallb` + `component`; phase Running or Pending (a pod that may still answer).
fn metallb_component(pod: &Value) -> Option<&str> {
    running_metallb_component(|k| pod.label(k), str_at(pod, &["status", "phase"]))
}

/// [`metallb_component`] on a pod's `label` lookup and `status.phase`, whatever the pod's
/// representation (`cutover verify` reads typed Pods).
pub fn running_metallb_component<'a>(
    label: impl Fn(&str) -> Option<&'a str>,
    phase: Option<&str>,
) -> Option<&'a str> {
    let name = label("app.kubernetes.io/name").or_else(|| label("app"));
    let running = matches!(phase, Some("Running" | "Pending"));
    if name != Some("metallb") || !running {
        return None;
    }
    label("app.kubernetes.io/component").or_else(|| label("component"))
}

/// `cutover observe`: reads kubectl's `List` (YAML or JSON, as `kubectl get … -o yaml` prints
/// it) and writes the `ObservedState` item, a digest of what the announcer reads:
///
/// - `services`: every LoadBalancer Service, `<namespace>/<name>: <ip>[,<ip>]` from
///   `status.loadBalancer.ingress` (empty when it has none yet);
/// - `nodes`: every Node, with `excludeFromExternalLoadBalancers` (the label MetalLB honours)
///   and `networkUnavailable` (the condition MetalLB honours) when true;
/// - `ciliumPools`, `ciliumL2Policies`: name, `generatedByCutover` (cutover's managed-by label)
///   and, for pools, `conflicting` (`cilium.io/PoolConflict` True);
/// - `metallb`: `speakerNodes` (nodes with a running speaker pod) and `controllerPods`.
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
    let mut services = Mapping::new();
    let mut nodes = Mapping::new();
    let (mut pools, mut policies) = (Vec::new(), Vec::new());
    let (mut speakers, mut controllers) = (BTreeSet::new(), 0u64);
    for item in items {
        match (item.group(), item.kind()) {
            ("", "Service") if str_at(item, &["spec", "type"]) == Some("LoadBalancer") => {
                let ips: Vec<&str> = at(item, &["status", "loadBalancer", "ingress"])
                    .and_then(Value::as_sequence)
                    .into_iter()
                    .flatten()
                    .filter_map(|i| i.get("ip").and_then(Value::as_str))
                    .collect();
                let key = format!("{}/{}", item.namespace().unwrap_or("default"), item.name());
                services.insert(key.into(), ips.join(",").into());
            }
            ("", "Node") => {
                let mut node = Mapping::new();
                if item.label(EXCLUDE_LB_LABEL).is_some() {
                    node.insert("excludeFromExternalLoadBalancers".into(), true.into());
                }
                if condition_true(item, "NetworkUnavailable") {
                    node.insert("networkUnavailable".into(), true.into());
                }
                nodes.insert(item.name().into(), Value::Mapping(node));
            }
            (CILIUM_GROUP, kind @ ("CiliumLoadBalancerIPPool" | "CiliumL2AnnouncementPolicy")) => {
                let mut entry = Mapping::new();
                entry.insert("name".into(), item.name().into());
                let generated = item.label(MANAGED_BY.0) == Some(MANAGED_BY.1);
                entry.insert("generatedByCutover".into(), generated.into());
                if kind == "CiliumLoadBalancerIPPool" {
                    let conflicting = condition_true(item, "cilium.io/PoolConflict");
                    entry.insert("conflicting".into(), conflicting.into());
                    pools.push(Value::Mapping(entry));
                } else {
                    policies.push(Value::Mapping(entry));
                }
            }
            ("", "Pod") => match metallb_component(item) {
                Some("speaker") => {
                    let node = str_at(item, &["spec", "nodeName"]).unwrap_or("?");
                    speakers.insert(node.to_owned());
                }
                Some("controller") => controllers += 1,
                _ => {}
            },
            _ => {}
        }
    }
    let mut metallb = Mapping::new();
    let speakers: Vec<Value> = speakers.into_iter().map(Value::from).collect();
    metallb.insert("speakerNodes".into(), Value::Sequence(speakers));
    metallb.insert("controllerPods".into(), controllers.into());
    let mut annotations = Mapping::new();
    annotations.insert(LOCAL_CONFIG.into(), "true".into());
    let mut metadata = Mapping::new();
    metadata.insert("name".into(), name.into());
    metadata.insert("annotations".into(), Value::Mapping(annotations));
    let mut out = Mapping::new();
    out.insert("apiVersion".into(), crate::config::API_VERSION.into());
    out.insert("kind".into(), KIND.into());
    out.insert("metadata".into(), Value::Mapping(metadata));
    out.insert("services".into(), Value::Mapping(services));
    out.insert("nodes".into(), Value::Mapping(nodes));
    out.insert("ciliumPools".into(), Value::Sequence(pools));
    out.insert("ciliumL2Policies".into(), Value::Sequence(policies));
    out.insert("metallb".into(), Value::Mapping(metallb));
    Ok(Value::Mapping(out))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn yaml(text: &str) -> Value {
        serde_yaml::from_str(text).unwrap()
    }

    const LIST: &str = r#"
apiVersion: v1
kind: List
metadata: {resourceVersion: ""}
items:
- {apiVersion: v1, kind: Service, metadata: {name: web, namespace: shop, managedFields: [{manager: x}]},
   spec: {type: LoadBalancer}, status: {loadBalancer: {ingress: [{ip: 10.0.0.5}, {ip: "fd00::5"}, {hostname: x}]}}}
- {apiVersion: v1, kind: Service, metadata: {name: pending}, spec: {type: LoadBalancer}}
- {apiVersion: v1, kind: Service, metadata: {name: internal}, spec: {type: ClusterIP}}
- {apiVersion: v1, kind: Secret, metadata: {name: s}}
- {apiVersion: v1, kind: Node, metadata: {name: cp1, labels: {node.kubernetes.io/exclude-from-external-load-balancers: ""}}}
- {apiVersion: v1, kind: Node, metadata: {name: w1}, status: {conditions: [{type: NetworkUnavailable, status: "True"}]}}
- {apiVersion: v1, kind: Node, metadata: {name: w2}}
- {apiVersion: cilium.io/v2, kind: CiliumLoadBalancerIPPool, metadata: {name: other},
   status: {conditions: [{type: cilium.io/PoolConflict, status: "True"}]}}
- {apiVersion: cilium.io/v2alpha1, kind: CiliumL2AnnouncementPolicy, metadata: {name: mine, labels: {app.kubernetes.io/managed-by: cutover}}}
- {apiVersion: v1, kind: Pod, metadata: {name: s1, labels: {app.kubernetes.io/name: metallb, app.kubernetes.io/component: speaker}},
   spec: {nodeName: w2}, status: {phase: Running}}
- {apiVersion: v1, kind: Pod, metadata: {name: c1, labels: {app: metallb, component: controller}}, status: {phase: Running}}
- {apiVersion: v1, kind: Pod, metadata: {name: old, labels: {app: metallb, component: speaker}}, status: {phase: Succeeded}}
- {apiVersion: v1, kind: Pod, metadata: {name: web-1, labels: {app: web}}, status: {phase: Running}}
"#;

    #[test]
    fn observe_then_read_gives_back_what_the_announcer_needs() {
        let item = wrap(&yaml(LIST), "live").unwrap();
        assert_eq!(item.kind(), KIND);
        assert_eq!(item.annotation(LOCAL_CONFIG), Some("true"));
        assert_eq!(item["services"]["shop/web"], "10.0.0.5,fd00::5");
        assert_eq!(item["services"]["default/pending"], "");
        assert!(item["services"].get("default/internal").is_none());
        let text = serde_yaml::to_string(&item).unwrap();
        assert!(!text.contains("managedFields") && !text.contains("Secret"));
        let mut results = Vec::new();
        let o = Observed::read(3, &item, &mut results);
        assert!(results.is_empty(), "{results:?}");
        assert_eq!(o.index, 3);
        assert_eq!(
            o.service_ips("shop", "web"),
            Some(&["10.0.0.5".to_owned(), "fd00::5".to_owned()][..])
        );
        assert_eq!(o.service_ips("default", "pending"), Some(&[][..]));
        assert_eq!(o.service_ips("default", "internal"), None);
        assert_eq!(o.excluded_nodes(), vec!["cp1", "w1"]);
        assert_eq!(o.cilium.len(), 2);
        assert!(o.cilium[0].conflicting && !o.cilium[0].generated);
        assert!(o.cilium[1].generated && o.cilium[1].kind == "CiliumL2AnnouncementPolicy");
        assert_eq!(o.speaker_nodes, BTreeSet::from(["w2".to_owned()]));
        assert_eq!(o.controller_pods, 1);
    }

    #[test]
    fn a_field_that_does_not_read_is_an_error_naming_it() {
        for (text, field) in [
            (
                "{apiVersion: fn.cutover.dev/v1alpha1, kind: ObservedState, metadata: {name: x}, items: []}",
                "items",
            ),
            (
                "{apiVersion: fn.cutover.dev/v1alpha1, kind: ObservedState, metadata: {name: x}, services: {web: 10.0.0.1}}",
                "services.web",
            ),
            (
                "{apiVersion: fn.cutover.dev/v1alpha1, kind: ObservedState, metadata: {name: x}, nodes: {n: {excluded: true}}}",
                "nodes.n",
            ),
        ] {
            let mut results = Vec::new();
            Observed::read(0, &yaml(text), &mut results);
            assert_eq!(results.len(), 1, "{text}");
            assert!(results[0].is_error());
            let path = results[0]
                .field
                .as_ref()
                .map(|f| f.path.as_str())
                .unwrap_or("");
            assert!(path.starts_with(field), "{text}: {path}");
        }
    }

    #[test]
    fn wrap_refuses_what_is_no_list() {
        assert!(wrap(&yaml("{kind: Service}"), "live").is_err());
        assert!(wrap(&yaml("{kind: List}"), "live").is_err());
    }
}
