//! The live objects of one `kubectl get … -o yaml`, typed.

use super::*;

/// A `CiliumLoadBalancerIPPool` or `CiliumL2AnnouncementPolicy`: what the gates read of it.
#[derive(Debug, Default, Deserialize)]
#[serde(default)]
pub struct CiliumObject {
    /// Name and labels.
    pub metadata: Meta,
    /// Conditions (pools).
    pub status: ConditionStatus,
}

/// A MetalLB `IPAddressPool` or `L2Advertisement`: its name is all the gates need.
#[derive(Debug, Default, Deserialize)]
#[serde(default)]
pub struct MetallbObject {
    /// Namespace and name.
    pub metadata: Meta,
}

/// The metadata the gates read of a custom resource.
#[derive(Debug, Default, Deserialize)]
#[serde(default)]
pub struct Meta {
    /// `metadata.name`.
    pub name: String,
    /// `metadata.namespace`.
    pub namespace: Option<String>,
}

/// `status.conditions` of a custom resource.
#[derive(Debug, Default, Deserialize)]
#[serde(default)]
pub struct ConditionStatus {
    /// The conditions.
    pub conditions: Vec<Condition>,
}

/// The live objects the gates read, typed.
#[derive(Debug, Default)]
pub struct Live {
    /// Services (all types).
    pub services: BTreeMap<(String, String), Service>,
    /// Nodes by name.
    pub nodes: BTreeMap<String, Node>,
    /// Pods.
    pub pods: Vec<Pod>,
    /// Leases by `(namespace, name)`.
    pub leases: BTreeMap<(String, String), Lease>,
    /// `CiliumLoadBalancerIPPool`s.
    pub pools: Vec<CiliumObject>,
    /// `CiliumL2AnnouncementPolicy`s.
    pub policies: Vec<CiliumObject>,
    /// MetalLB `IPAddressPool`s and `L2Advertisement`s as `(kind, object)`.
    pub metallb: Vec<(String, MetallbObject)>,
    /// The items as read, for the transition model's reader ([`model::snapshot`]).
    pub items: Vec<Value>,
}

impl Live {
    /// Reads kubectl's `List`; an item of a known kind that does not read is an error naming
    /// it. Items of other kinds are ignored.
    pub fn parse(text: &str) -> Result<Live, String> {
        let list = crate::krm::yaml::from_str(text).map_err(|e| format!("not YAML: {e}"))?;
        let items = match (list.get("kind").and_then(Value::as_str), list.get("items")) {
            (Some("List"), Some(Value::Sequence(items))) => items,
            (Some("List"), Some(Value::Null) | None) => return Ok(Live::default()),
            _ => {
                return Err(
                    "expected a List with items (the output of kubectl get … -o yaml)".into(),
                );
            }
        };
        Live::from_items(items.clone())
    }

    /// Reads the items of kubectl's `List` (or a model state's, [`super::model_items`]).
    pub fn from_items(items: Vec<Value>) -> Result<Live, String> {
        let mut live = Live::default();
        for (i, item) in items.iter().enumerate() {
            let api_version = item.get("apiVersion").and_then(Value::as_str).unwrap_or("");
            let group = api_version.rsplit_once('/').map_or("", |(g, _)| g);
            let kind = item.get("kind").and_then(Value::as_str).unwrap_or("");
            let name = item
                .get("metadata")
                .and_then(|m| m.get("name"))
                .and_then(Value::as_str)
                .unwrap_or("?");
            let context = |e: serde_yaml::Error| format!("items[{i}] ({kind} {name}): {e}");
            match (group, kind) {
                ("", "Service") => {
                    let svc: Service = typed(item).map_err(context)?;
                    live.services.insert(key(&svc.metadata), svc);
                }
                ("", "Node") => {
                    let node: Node = typed(item).map_err(context)?;
                    let name = node.metadata.name.clone().unwrap_or_default();
                    live.nodes.insert(name, node);
                }
                ("", "Pod") => live.pods.push(typed(item).map_err(context)?),
                ("coordination.k8s.io", "Lease") => {
                    let lease: Lease = typed(item).map_err(context)?;
                    live.leases.insert(key(&lease.metadata), lease);
                }
                ("cilium.io", "CiliumLoadBalancerIPPool") => {
                    live.pools.push(typed(item).map_err(context)?);
                }
                ("cilium.io", "CiliumL2AnnouncementPolicy") => {
                    live.policies.push(typed(item).map_err(context)?);
                }
                ("metallb.io", "IPAddressPool" | "L2Advertisement") => {
                    live.metallb
                        .push((kind.to_owned(), typed(item).map_err(context)?));
                }
                _ => {}
            }
        }
        live.items = items;
        Ok(live)
    }
}

pub(super) fn typed<T: serde::de::DeserializeOwned>(item: &Value) -> Result<T, serde_yaml::Error> {
    serde_yaml::from_value(item.clone())
}

pub(super) fn key(
    meta: &k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta,
) -> (String, String) {
    (
        meta.namespace
            .clone()
            .unwrap_or_else(|| "default".to_owned()),
        meta.name.clone().unwrap_or_default(),
    )
}
