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
/// `failOnWarnings` makes the warnings of a cutover phase errors; a plan never fails on them.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields, default)]
pub struct LoadBalancerAnnouncerSpec {
    /// Target announcer. When unset, `networking.loadBalancerAnnouncer` from the platform values
    /// item is used, else `metallb` (plan only).
    pub announcer: Option<Announcer>,
    /// Cilium version (e.g. `1.18.4`); else the tag of an upstream Cilium image in the Cilium
    /// release values, else the version of the upstream cilium chart. Umbrella charts (cozystack's
    /// `cozy-cilium`, version `0.0.0` in its source) and rebuilt images never count: set it then.
    pub cilium_version: Option<String>,
    /// Which step of the cutover to emit (`announcer: cilium` only): `prepare` adds the Cilium
    /// pools and Service annotations while MetalLB still answers; `stop-speaker` also stops the
    /// MetalLB speaker; `cutover` also adds the L2 announcement policies and removes MetalLB.
    /// Apply them in this order so both never answer ARP at once.
    pub phase: Phase,
    /// Service label used to request a pool (what MetalLB's `address-pool` annotation becomes);
    /// a label key (`[prefix/]name`), else an error.
    pub pool_label: String,
    /// Cilium's `l2announcements.leaseRenewDeadline`, used to size `k8sClientRateLimit`; else
    /// the value in the Cilium release among the items, else Cilium's default `5s`.
    pub lease_renew_deadline: Option<Duration>,
    /// Accept that `externalTrafficPolicy: Local` Services change announcing nodes: MetalLB
    /// announces them only from nodes with a ready endpoint, Cilium's L2 announcer from any
    /// selected node. Without it such a Service is an error.
    pub accept_local_traffic_policy_change: bool,
    /// Cilium's operator is scaled to 0 while this phase's pools are applied and started after
    /// they all exist (see the runbook). LB-IPAM wakes up on the first pool it sees and judges
    /// every Service against the pools seen so far, so with several pools and no Cilium pool in
    /// the cluster yet, the phase that creates them is refused without this.
    pub cilium_operator_stopped: bool,
    /// Flux-orchestrated output (`announcer: cilium` only): instead of the one phase of
    /// `phase`, write the three phases as payload directories applied by chained Flux
    /// Kustomizations, each Ready only when its gate Job (`cutover verify`) passes. Needs the
    /// `ObservedState` item. See `step` for the commits it takes (two, and two for the cleanup).
    pub orchestrate: Option<Box<super::orchestrate::Orchestrate>>,
    /// `true`: every warning of an `announcer: cilium` run is reported as an error (same message,
    /// tagged `promotedFrom: warning`), so the run exits 1 and no item is changed; for pipelines
    /// where nobody reads warnings (they also go to stderr). A plan (`announcer: metallb`, set or
    /// from the platform values) still exits 0 and says in an info that the field did not apply:
    /// the plan is what runs while the platform stays on MetalLB, and a config written for the
    /// cutover must not fail every render of a platform nobody has started to move (why the plan
    /// reports its errors as warnings tagged `planSeverity: error`: gate a review on that tag).
    pub fail_on_warnings: bool,
}

impl Default for LoadBalancerAnnouncerSpec {
    fn default() -> Self {
        LoadBalancerAnnouncerSpec {
            announcer: None,
            cilium_version: None,
            phase: Phase::Prepare,
            pool_label: DEFAULT_POOL_LABEL.into(),
            lease_renew_deadline: None,
            accept_local_traffic_policy_change: false,
            cilium_operator_stopped: false,
            orchestrate: None,
            fail_on_warnings: false,
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

/// The three steps of the cutover; each phase's output contains the previous ones. A single Flux
/// apply creates before it prunes, so emitting Cilium's L2 policies and the MetalLB removal together
/// would let both answer ARP for a while: the speaker is stopped in its own apply first.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize, JsonSchema,
)]
#[serde(rename_all = "kebab-case")]
pub enum Phase {
    /// Phase 1 (no ARP change): add the Cilium pools (Cilium imports the Services' current IPs),
    /// label/annotate the Services, enable L2 announcements in the Cilium values. MetalLB keeps
    /// running and answering; this phase can soak as long as needed.
    Prepare,
    /// Phase 2: phase 1 plus the MetalLB speaker stopped. From here until phase 3 is applied nobody
    /// answers ARP: keep that window short (seconds).
    StopSpeaker,
    /// Phase 3: phase 2 plus the CiliumL2AnnouncementPolicies; MetalLB objects, annotations and
    /// installation are removed. Refuses to run while the speaker still runs.
    Cutover,
}

impl Phase {
    /// The config value, for messages.
    pub fn as_str(self) -> &'static str {
        match self {
            Phase::Prepare => "prepare",
            Phase::StopSpeaker => "stop-speaker",
            Phase::Cutover => "cutover",
        }
    }
}
