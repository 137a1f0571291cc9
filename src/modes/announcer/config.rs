//! `LoadBalancerAnnouncer` configuration (`spec:` of the typed form, `data:` of the ConfigMap form).

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// Configuration of the load-balancer announcer cutover mode. Every field is optional.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields, default)]
pub struct LoadBalancerAnnouncerSpec {
    /// Target announcer. When unset, `networking.loadBalancerAnnouncer` from the platform values
    /// item is used, else `metallb` (plan only).
    pub announcer: Option<Announcer>,
    /// Cilium version (e.g. `1.18.4`); else the Cilium chart version among the items.
    pub cilium_version: Option<String>,
    /// Service label used to request a pool (what MetalLB's `address-pool` annotation becomes).
    pub pool_label: String,
}

impl Default for LoadBalancerAnnouncerSpec {
    fn default() -> Self {
        LoadBalancerAnnouncerSpec {
            announcer: None,
            cilium_version: None,
            pool_label: "cutover.dev/address-pool".into(),
        }
    }
}

/// Which controller announces LoadBalancer IPs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum Announcer {
    /// MetalLB stays; cutover only reports the plan.
    Metallb,
    /// Cilium LB-IPAM + L2 announcements replace MetalLB.
    Cilium,
}
