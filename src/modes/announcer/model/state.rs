//! The cluster as the controllers see it: plain typed data, no YAML. [`super::read`] builds it
//! from KRM items; the controllers ([`super::lbipam`], [`super::metallb`],
//! [`super::l2announcer`]) read and change it; [`mod@super::explore`] clones it at every step, so
//! everything here is `Clone + Eq + Hash` (selectors compare by their canonical text).

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;
use std::hash::{Hash, Hasher};
use std::net::IpAddr;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelector;

use super::super::ipam::{Family, Interval};
use super::super::selector::{self, Labels};

/// A Service's identity.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct SvcKey {
    /// `metadata.namespace`.
    pub namespace: String,
    /// `metadata.name`.
    pub name: String,
}

impl fmt::Display for SvcKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}", self.namespace, self.name)
    }
}

/// A label selector that compares and hashes by its canonical text (`selector::canonical`);
/// `None` (no selector) selects everything, as in both controllers.
#[derive(Debug, Clone)]
pub struct Selector {
    canon: String,
    sel: Option<LabelSelector>,
}

impl Selector {
    /// Wraps a selector.
    pub fn new(sel: Option<LabelSelector>) -> Selector {
        Selector {
            canon: selector::canonical(sel.as_ref()),
            sel,
        }
    }
    /// The selector that selects everything.
    pub fn all() -> Selector {
        Selector::new(None)
    }
    /// Whether it selects an object with these labels.
    pub fn matches(&self, labels: &Labels) -> bool {
        self.sel
            .as_ref()
            .is_none_or(|s| selector::matches(s, labels))
    }
    /// The selector itself (`None`: selects everything).
    pub fn selector(&self) -> Option<&LabelSelector> {
        self.sel.as_ref()
    }
    /// Canonical text, for messages.
    pub fn canonical(&self) -> &str {
        &self.canon
    }
}

impl PartialEq for Selector {
    fn eq(&self, other: &Self) -> bool {
        self.canon == other.canon
    }
}
impl Eq for Selector {}
impl Hash for Selector {
    fn hash<H: Hasher>(&self, state: &mut H) {
        self.canon.hash(state);
    }
}

/// What a Service declares (metadata and spec), as a package or the cluster holds it.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Default)]
pub struct ServiceSpec {
    /// `metadata.labels`.
    pub labels: Labels,
    /// The MetalLB and Cilium LB-IPAM annotations (`metallb.io/`, `metallb.universe.tf/`,
    /// `lbipam.cilium.io/`, `io.cilium/`); the controllers read them by key.
    pub annotations: BTreeMap<String, String>,
    /// `spec.loadBalancerClass`.
    pub class: Option<String>,
    /// `spec.loadBalancerIP`.
    pub lb_ip: Option<String>,
    /// `spec.ports`: number and protocol (`TCP` when left out, as the API server defaults it).
    pub ports: Vec<(i32, String)>,
    /// `spec.externalTrafficPolicy: Local`.
    pub etp_local: bool,
    /// `spec.selector` of a `Local` Service, sorted.
    pub selector: Vec<(String, String)>,
}

impl ServiceSpec {
    /// The first of `keys` that is set, in order (Cilium's `annotation.Get(svc, key, alias)`,
    /// MetalLB's `valueForAnnotation(stable, deprecated)`).
    pub fn annotation(&self, keys: &[&str]) -> Option<&str> {
        keys.iter()
            .find_map(|k| self.annotations.get(*k))
            .map(String::as_str)
    }
}

/// A LoadBalancer Service: what it declares and what its status says.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Service {
    /// Declared fields.
    pub spec: ServiceSpec,
    /// `status.loadBalancer.ingress[].ip`, in order.
    pub status: Vec<IpAddr>,
}

/// A Node.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Node {
    /// `metadata.name`.
    pub name: String,
    /// `metadata.labels`.
    pub labels: Labels,
    /// Condition `NetworkUnavailable` is `True`.
    pub network_unavailable: bool,
    /// A MetalLB speaker pod runs on it.
    pub speaker_pod: bool,
}

/// A MetalLB IPAddressPool.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct MlbPool {
    /// `metadata.labels` (for `ipAddressPoolSelectors`).
    pub labels: Labels,
    /// `spec.addresses`, parsed.
    pub ranges: Vec<Interval>,
    /// `spec.autoAssign` (default true).
    pub auto_assign: bool,
    /// `spec.avoidBuggyIPs`.
    pub avoid_buggy: bool,
    /// `spec.serviceAllocation.namespaces` (empty = all).
    pub namespaces: Vec<String>,
    /// `spec.serviceAllocation.serviceSelectors` (OR; empty = all).
    pub service_selectors: Vec<Selector>,
    /// `spec.serviceAllocation.priority` (lower first).
    pub priority: Option<i64>,
}

/// A MetalLB L2Advertisement.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Advert {
    /// `spec.ipAddressPools`.
    pub pools: Vec<String>,
    /// `spec.ipAddressPoolSelectors` (with `pools`: OR; neither = all pools).
    pub pool_selectors: Vec<Selector>,
    /// `spec.nodeSelectors` (OR; empty = all nodes).
    pub node_selectors: Vec<Selector>,
}

/// One block of a Cilium pool.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Block {
    /// Covered addresses.
    pub interval: Interval,
    /// `allowFirstLastIPs: No` on a CIDR of more than two addresses: its ends are reserved.
    pub ends_reserved: bool,
}

impl Block {
    /// Whether LB-IPAM can hand out `ip` from this block.
    pub fn allows(&self, ip: IpAddr) -> bool {
        let (family, v) = ip_value(ip);
        self.interval.contains((family, v))
            && !(self.ends_reserved && (v == self.interval.start || v == self.interval.end))
    }
}

/// A CiliumLoadBalancerIPPool.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct CPool {
    /// `spec.blocks`.
    pub blocks: Vec<Block>,
    /// `spec.serviceSelector`.
    pub selector: Selector,
    /// `spec.disabled`.
    pub disabled: bool,
    /// Creation order (`metadata.creationTimestamp` of live pools, apply order for new
    /// ones): LB-IPAM marks the newer of two overlapping pools Conflicting.
    pub created: u64,
}

impl CPool {
    /// The spec as LB-IPAM compares it (`existingPool.Spec.DeepEqual(&pool.Spec)`).
    pub fn same_spec(&self, other: &CPool) -> bool {
        self.blocks == other.blocks
            && self.selector == other.selector
            && self.disabled == other.disabled
    }
}

/// A CiliumL2AnnouncementPolicy.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct L2Policy {
    /// `spec.serviceSelector`.
    pub service_selector: Selector,
    /// `spec.nodeSelector`.
    pub node_selector: Selector,
    /// `spec.loadBalancerIPs`.
    pub load_balancer_ips: bool,
}

/// Which processes run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Flags {
    /// MetalLB's controller (IP allocation).
    pub metallb_controller: bool,
    /// MetalLB's speaker (ARP).
    pub metallb_speaker: bool,
    /// Cilium's agent runs with `l2announcements.enabled`.
    pub l2_announcements: bool,
}

/// The cluster: objects and running processes.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Cluster {
    /// LoadBalancer Services.
    pub services: BTreeMap<SvcKey, Service>,
    /// Nodes.
    pub nodes: Vec<Node>,
    /// MetalLB IPAddressPools by name.
    pub mlb_pools: BTreeMap<String, MlbPool>,
    /// MetalLB L2Advertisements by name.
    pub adverts: BTreeMap<String, Advert>,
    /// Cilium pools by name.
    pub cilium_pools: BTreeMap<String, CPool>,
    /// Names of live Cilium pools whose status says `cilium.io/PoolConflict: True`.
    pub conflicting: BTreeSet<String>,
    /// Cilium L2 announcement policies by name.
    pub policies: BTreeMap<String, L2Policy>,
    /// Processes.
    pub flags: Flags,
    /// Cilium's `loadBalancer.protocolDifferentiation.enabled`, when set.
    pub protocol_diff: Option<bool>,
    /// Next creation order for a new Cilium pool.
    pub next_created: u64,
}

/// Labels Cilium matches pool and policy selectors against: the Service's own plus
/// `io.kubernetes.service.namespace` / `.name` (`svcLabels`, cilium/cilium
/// `operator/pkg/lbipam/service_store.go`).
pub fn cilium_labels(key: &SvcKey, spec: &ServiceSpec) -> Labels {
    let mut l = spec.labels.clone();
    l.insert(
        super::super::cilium::SVC_NAMESPACE_LABEL.into(),
        key.namespace.clone(),
    );
    l.insert(
        super::super::cilium::SVC_NAME_LABEL.into(),
        key.name.clone(),
    );
    l
}

/// `(family, value)` of an address.
pub fn ip_value(ip: IpAddr) -> (Family, u128) {
    match ip {
        IpAddr::V4(v4) => (Family::V4, u128::from(u32::from(v4))),
        IpAddr::V6(v6) => (Family::V6, u128::from(v6)),
    }
}

/// The address of `(family, value)`.
pub fn ip_of(family: Family, value: u128) -> IpAddr {
    match family {
        // V4 values are below 2^32 by construction.
        Family::V4 => IpAddr::V4(u32::try_from(value).unwrap_or(u32::MAX).into()),
        Family::V6 => IpAddr::V6(value.into()),
    }
}

/// Parses a comma-separated IP list; entries that do not parse are skipped, as both
/// controllers log and skip them.
pub fn ip_list(text: &str) -> Vec<IpAddr> {
    let mut out: Vec<IpAddr> = Vec::new();
    for ip in text.split(',').filter_map(|s| s.trim().parse().ok()) {
        if !out.contains(&ip) {
            out.push(ip);
        }
    }
    out
}
