//! Typed Cilium objects cutover emits (and reads back for the coverage proof).

use std::collections::BTreeMap;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelector;
use serde::{Deserialize, Serialize};

use super::ipam::CiliumBlock;

/// Synthetic Service label Cilium matches pool and policy selectors against.
pub const SVC_NAMESPACE_LABEL: &str = "io.kubernetes.service.namespace";
/// Synthetic Service label with the Service name.
pub const SVC_NAME_LABEL: &str = "io.kubernetes.service.name";

/// Metadata of a generated, cluster-scoped object.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct Meta {
    /// Object name.
    pub name: String,
    /// Labels (cutover's managed-by marker).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub labels: BTreeMap<String, String>,
    /// Annotations (`cutover.dev/source`).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub annotations: BTreeMap<String, String>,
}

/// `CiliumLoadBalancerIPPool` (`cilium.io/v2` from 1.18, `v2alpha1` before; same shape).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct IpPool {
    /// `cilium.io/v2` or `cilium.io/v2alpha1`.
    pub api_version: String,
    /// `CiliumLoadBalancerIPPool`.
    pub kind: String,
    /// Metadata.
    pub metadata: Meta,
    /// Spec.
    pub spec: IpPoolSpec,
}

/// Spec of a pool.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct IpPoolSpec {
    /// `Yes`/`No`. cutover never sets it (CIDRs are emitted only where the default `Yes`
    /// applies); read back for the coverage proof.
    #[serde(
        rename = "allowFirstLastIPs",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    pub allow_first_last_ips: Option<String>,
    /// Address blocks.
    #[serde(default)]
    pub blocks: Vec<Block>,
    /// Services that may allocate from the pool (none = all).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub service_selector: Option<LabelSelector>,
}

impl IpPoolSpec {
    /// The blocks as LB-IPAM reads them, `allowFirstLastIPs` applied (a block it cannot parse
    /// holds no address).
    pub fn cilium_blocks(&self) -> Vec<CiliumBlock> {
        let allow = self.allow_first_last_ips.as_deref();
        self.blocks
            .iter()
            .filter_map(|b| {
                CiliumBlock::parse(
                    b.cidr.as_deref(),
                    b.start.as_deref(),
                    b.stop.as_deref(),
                    allow,
                )
            })
            .collect()
    }
}

/// One pool block: `cidr`, or `start` with optional `stop`.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct Block {
    /// CIDR.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cidr: Option<String>,
    /// First address of a range.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub start: Option<String>,
    /// Last address of a range.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stop: Option<String>,
}

/// `CiliumL2AnnouncementPolicy` (`cilium.io/v2alpha1`, the only version).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct L2Policy {
    /// `cilium.io/v2alpha1`.
    pub api_version: String,
    /// `CiliumL2AnnouncementPolicy`.
    pub kind: String,
    /// Metadata.
    pub metadata: Meta,
    /// Spec.
    pub spec: L2PolicySpec,
}

/// Spec of an L2 announcement policy.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct L2PolicySpec {
    /// Services announced (none = all).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub service_selector: Option<LabelSelector>,
    /// Announcing nodes (none = all).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub node_selector: Option<LabelSelector>,
    /// Interface regexes (none = all).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub interfaces: Option<Vec<String>>,
    /// Always true: MetalLB announced LoadBalancer IPs.
    #[serde(rename = "loadBalancerIPs", default)]
    pub load_balancer_ips: bool,
}

/// Escapes an interface name for a Go regular expression, as Go's `regexp.QuoteMeta` does, and
/// anchors it so `eth0` does not also match `eth01`.
pub fn interface_regex(name: &str) -> String {
    let mut out = String::with_capacity(name.len() + 4);
    out.push('^');
    for c in name.chars() {
        if "\\.+*?()|[]{}^$".contains(c) {
            out.push('\\');
        }
        out.push(c);
    }
    out.push('$');
    out
}

/// Inverse of [`interface_regex`]; `None` for a regex cutover did not write.
pub fn interface_from_regex(re: &str) -> Option<String> {
    let inner = re.strip_prefix('^')?.strip_suffix('$')?;
    let mut out = String::new();
    let mut chars = inner.chars();
    while let Some(c) = chars.next() {
        match c {
            '\\' => out.push(chars.next()?),
            c if "\\.+*?()|[]{}^$".contains(c) => return None,
            c => out.push(c),
        }
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn interface_regexes_are_anchored_and_escaped() {
        assert_eq!(interface_regex("eth0"), "^eth0$");
        assert_eq!(interface_regex("bond0.100"), "^bond0\\.100$");
        assert_eq!(interface_regex("br-ex"), "^br-ex$");
        for name in ["eth0", "bond0.100", "a+b", "x[1]"] {
            assert_eq!(
                interface_from_regex(&interface_regex(name)).as_deref(),
                Some(name)
            );
        }
        assert_eq!(interface_from_regex("^eth[0-9]+$"), None);
        assert_eq!(interface_from_regex("eth0"), None);
    }
}
