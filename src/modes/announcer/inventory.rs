//! What the announcer knows about the items once they are read: the MetalLB configuration
//! (typed pools and advertisements), the LoadBalancer Services, the MetalLB and Cilium
//! installations, Cilium objects an earlier run generated, and the platform values switch.
//! [`super::inputs`] builds it.

use std::collections::{BTreeMap, BTreeSet};

use k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelector;
use serde::Deserialize;
use serde_yaml::Value;

use super::install::{Chart, HelmValues};
use super::ipam::MetalLbAddress;
use super::selector::Labels;
use super::service::LbService;

/// MetalLB API group.
pub const METALLB_GROUP: &str = "metallb.io";
/// Cilium API group.
pub const CILIUM_GROUP: &str = "cilium.io";
/// Label cutover puts on the Cilium objects it generates, so a later run recognises them.
pub const MANAGED_BY: (&str, &str) = ("app.kubernetes.io/managed-by", "cutover");
/// `loadBalancerClass` MetalLB answers to (besides no class).
pub const METALLB_CLASS: &str = "metallb.io/metallb";
/// MetalLB kinds that belong to its BGP mode (out of scope).
pub const BGP_KINDS: &[&str] = &["BGPPeer", "BGPAdvertisement", "BFDProfile", "Community"];
/// Label key/value cutover sets as a node selector to keep a MetalLB speaker DaemonSet off every
/// node (phase `stop-speaker`, for installs that are not Helm releases).
pub const SPEAKER_OFF: (&str, &str) = ("cutover.dev/metallb-speaker", "disabled");

/// `metallb.io/v1beta1` IPAddressPool `spec`.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct IpAddressPoolSpec {
    /// CIDRs and `a-b` ranges.
    pub addresses: Vec<String>,
    /// Defaults to true.
    pub auto_assign: Option<bool>,
    /// Skip `.0`/`.255` IPv4 addresses.
    #[serde(rename = "avoidBuggyIPs")]
    pub avoid_buggy_ips: bool,
    /// Restrictions on which Services may use the pool.
    pub service_allocation: Option<ServiceAllocation>,
}

/// `spec.serviceAllocation` of an IPAddressPool.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct ServiceAllocation {
    /// Lower wins among auto-assign pools.
    pub priority: Option<i64>,
    /// Allowed namespaces.
    pub namespaces: Vec<String>,
    /// Allowed namespaces by label (OR).
    pub namespace_selectors: Vec<LabelSelector>,
    /// Allowed Services by label (OR).
    pub service_selectors: Vec<LabelSelector>,
}

/// `metallb.io/v1beta1` L2Advertisement `spec`.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct L2AdvertisementSpec {
    /// Pools by name.
    pub ip_address_pools: Vec<String>,
    /// Pools by label (OR with the names); none of both = all pools.
    pub ip_address_pool_selectors: Vec<LabelSelector>,
    /// Announcing nodes (OR); empty = all nodes.
    pub node_selectors: Vec<LabelSelector>,
    /// Interface names; empty = all.
    pub interfaces: Vec<String>,
    /// (MetalLB 0.16) Services the advertisement applies to (OR); empty = all.
    pub service_selectors: Vec<LabelSelector>,
    /// (MetalLB > 0.16.1) preferred nodes; Cilium has no equivalent.
    pub preferred_node_selectors: Option<Value>,
}

/// Longest label value Kubernetes accepts. Pool names become values of the pool label (on
/// Services, and in every generated selector that lists pools), so a longer name is refused
/// when the pool is read: it could not be requested, and each auto-assign pool's `NotIn` list
/// would repeat it.
pub const MAX_LABEL_VALUE: usize = 63;

/// An IPAddressPool from the items.
#[derive(Debug, Clone)]
pub struct Pool {
    /// Item index.
    pub index: usize,
    /// `metadata.name`.
    pub name: String,
    /// `metadata.labels` (for `ipAddressPoolSelectors`).
    pub labels: Labels,
    /// Typed spec.
    pub spec: IpAddressPoolSpec,
    /// Parsed `spec.addresses`, same order.
    pub addresses: Vec<MetalLbAddress>,
}

impl Pool {
    /// MetalLB's default for `autoAssign` is true.
    pub fn auto_assign(&self) -> bool {
        self.spec.auto_assign.unwrap_or(true)
    }
}

/// An L2Advertisement from the items.
#[derive(Debug, Clone)]
pub struct Advertisement {
    /// Item index.
    pub index: usize,
    /// `metadata.name`.
    pub name: String,
    /// Typed spec.
    pub spec: L2AdvertisementSpec,
}

/// How MetalLB is installed, as found among the items.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum InstallKind {
    /// A chart with Helm values (the `metallb` chart, or cozystack's `cozy-metallb` umbrella).
    Helm {
        /// Where its values are.
        values: HelmValues,
        /// The object carrying them.
        carrier: Carrier,
    },
    /// A HelmRelease the cozystack operator generated from a Package that is among the items
    /// too: the Package carries the values (the operator rewrites the release from it); the
    /// release is only removed with MetalLB.
    Rendered {
        /// The Package.
        package: String,
    },
    /// Flux Kustomization that applies MetalLB manifests.
    FluxKustomization,
    /// A plain manifest of the MetalLB installation (label `app: metallb` or
    /// `app.kubernetes.io/name: metallb`, or a `metallb.io` CRD); `speaker` marks its DaemonSet.
    Manifest {
        /// True for the speaker DaemonSet.
        speaker: bool,
    },
}

/// The kind of object that carries a chart's Helm values.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Carrier {
    /// A Flux HelmRelease; `generated_by` names the cozystack Package the cozystack operator
    /// generated it from (it rewrites the release from the Package).
    HelmRelease {
        /// The Package (label `cozystack.io/package`).
        generated_by: Option<String>,
    },
    /// A cozystack Package.
    Package,
    /// A k3s/RKE2 `helm.cattle.io` HelmChart.
    HelmChart,
}

/// One item of the MetalLB installation.
#[derive(Debug, Clone)]
pub struct Install {
    /// Item index.
    pub index: usize,
    /// What it is.
    pub kind: InstallKind,
}

/// The Cilium Helm release among the items.
#[derive(Debug, Clone)]
pub struct CiliumRelease {
    /// Item index.
    pub index: usize,
    /// Where its values are.
    pub values: HelmValues,
    /// The object carrying them.
    pub carrier: Carrier,
    /// The chart, as far as the items tell.
    pub chart: Chart,
    /// cozystack's `values-kubeovn.yaml` is merged into the chart (it sets `devices`).
    pub kubeovn: bool,
}

/// Everything the mode reads from the items.
#[derive(Debug, Default)]
pub struct Inventory {
    /// IPAddressPools, input order.
    pub pools: Vec<Pool>,
    /// Names of IPAddressPools left out of `pools` after an error on them (an unreadable spec, a
    /// name that cannot be a label value): references to them are not reported again.
    pub rejected_pools: BTreeSet<String>,
    /// L2Advertisements, input order.
    pub adverts: Vec<Advertisement>,
    /// BGP-mode MetalLB objects.
    pub bgp: Vec<usize>,
    /// Other `metallb.io` objects (status-like kinds), removed with MetalLB.
    pub other_metallb: Vec<usize>,
    /// Services of type LoadBalancer.
    pub services: Vec<LbService>,
    /// The MetalLB installation.
    pub install: Vec<Install>,
    /// Cilium Helm releases (more than one is an error).
    pub cilium: Vec<CiliumRelease>,
    /// `(kind, name)` → index of Cilium pools/policies in the items.
    pub cilium_objects: BTreeMap<(String, String), usize>,
    /// Namespace labels from Namespace items (for `namespaceSelectors`).
    pub namespaces: BTreeMap<String, Labels>,
    /// Flux objects with `spec.dependsOn`.
    pub flux_dependents: Vec<usize>,
    /// `networking.loadBalancerAnnouncer` values found: (item index, value).
    pub switch: Vec<(usize, String)>,
    /// HelmReleases and cozystack Packages: chart values that may hold Service annotations.
    pub value_carriers: Vec<usize>,
    /// The cluster's live objects (an `ObservedState` item), when the package holds them.
    pub observed: Option<super::observed::Observed>,
}
