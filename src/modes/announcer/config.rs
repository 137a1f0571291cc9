//! `LoadBalancerAnnouncer` configuration (`spec:` of the typed form, `data:` of the ConfigMap form).

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::config::types::Duration;

/// Default Service label that carries the requested pool (what MetalLB's `address-pool`
/// annotation becomes). It lives in cutover's own domain: Cilium reserves no label for pool
/// selection, and a key under `lbipam.cilium.io/` or `metallb.io/` would pretend to be read by
/// one of those controllers.
pub const DEFAULT_POOL_LABEL: &str = "cutover.dev/address-pool";

/// Configuration of the load-balancer announcer cutover mode. Every field is optional.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields, default)]
pub struct LoadBalancerAnnouncerSpec {
    /// Target announcer. When unset, `networking.loadBalancerAnnouncer` from the platform values
    /// item is used, else `metallb` (plan only).
    pub announcer: Option<Announcer>,
    /// Cilium version (e.g. `1.18.4`); else the Cilium chart version among the items.
    pub cilium_version: Option<String>,
    /// Which half of the cutover to emit (`announcer: cilium` only). `prepare` stops the MetalLB
    /// speaker and adds the Cilium pools; `cutover` adds the L2 announcement policies and
    /// removes MetalLB. Apply them one after the other so both never answer ARP at once.
    pub phase: Phase,
    /// Service label used to request a pool (what MetalLB's `address-pool` annotation becomes).
    pub pool_label: String,
    /// Cilium's `l2announcements.leaseRenewDeadline`, used to size `k8sClientRateLimit`; else
    /// the value in the Cilium release among the items, else Cilium's default `5s`.
    pub lease_renew_deadline: Option<Duration>,
}

impl Default for LoadBalancerAnnouncerSpec {
    fn default() -> Self {
        LoadBalancerAnnouncerSpec {
            announcer: None,
            cilium_version: None,
            phase: Phase::Prepare,
            pool_label: DEFAULT_POOL_LABEL.into(),
            lease_renew_deadline: None,
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

/// The two halves of the cutover. A single Flux apply creates before it prunes, so emitting
/// Cilium's L2 policies and the MetalLB removal together would let both answer ARP for a while.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum Phase {
    /// Phase 1: disable the MetalLB speaker (nobody answers ARP; traffic keeps flowing to the
    /// node upstream routers cached), add the Cilium pools, label/annotate the Services and
    /// enable L2 announcements in the Cilium values. MetalLB objects stay.
    Prepare,
    /// Phase 2: everything of phase 1 plus the CiliumL2AnnouncementPolicies; MetalLB objects,
    /// annotations and installation are removed. Refuses to run while the speaker still runs.
    Cutover,
}

impl Phase {
    /// The config value, for messages.
    pub fn as_str(self) -> &'static str {
        match self {
            Phase::Prepare => "prepare",
            Phase::Cutover => "cutover",
        }
    }
}
