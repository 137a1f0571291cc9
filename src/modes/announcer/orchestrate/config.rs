//! `orchestrate:` of `LoadBalancerAnnouncer`: one run emits the three phases as payload
//! directories and the Flux Kustomizations that apply them in order, each gated by a Job.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::config::types::Duration;
use crate::modes::prepull::{ImageRef, SourceRef};

/// Flux-orchestrated output (`spec.orchestrate`). Four steps, each its own commit: `handover`
/// marks the objects the chain will take over `kustomize.toolkit.fluxcd.io/prune: disabled`
/// (let the owning Flux Kustomization apply it), `chain` moves them into the payload
/// directories and adds the chained Flux Kustomizations, their gate Jobs and the plan; once the
/// chain is Ready, `cleanup-handover` takes that annotation off MetalLB's objects and `cleanup`
/// removes them (Flux prunes them) and MetalLB's annotations, gated by `cutover verify cleanup`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields, default)]
pub struct Orchestrate {
    /// `handover` (default): the preparatory commit; `chain`: the chain itself, refused while
    /// an object it takes over lacks the hand-over annotation; `cleanup-handover` and
    /// `cleanup`: the two commits after the chain, refused on a package the chain step did not
    /// write.
    pub step: Step,
    /// Package directory the three payloads are written to (`<payloadDir>/prepare`,
    /// `/stop-speaker`, `/cutover`); publish it as `source.path` in `source.sourceRef`. It must
    /// lie outside what the package's own Flux Kustomization builds.
    pub payload_dir: String,
    /// Where the payload directory is published (required for steps `chain` and `cleanup`).
    pub source: Option<ChainSource>,
    /// Namespace of the chained Flux Kustomizations (next to the one that applies the package).
    pub flux_namespace: String,
    /// Namespace of the gate Jobs (created by the first payload, Pod Security `restricted`).
    pub gate_namespace: String,
    /// Namespace of Cilium's L2 announcement Leases.
    pub cilium_namespace: String,
    /// Image of the gate container (required for steps `chain` and `cleanup`, pinned by digest:
    /// `repo[:tag]@sha256:…`): needs `/bin/sh` and `kubectl`, e.g. Sylva's `kube-job` image.
    /// There is no default: a gate decides whether the next phase runs, so it runs exactly the
    /// image the operator reviewed and mirrored, never one a tag may move under.
    pub kubectl_image: Option<ImageRef>,
    /// The cutover image (required for steps `chain` and `cleanup`, pinned by digest): an init
    /// container copies its `/cutover` binary into the gate pod.
    pub cutover_image: Option<ImageRef>,
    /// `spec.interval` of the chained Kustomizations.
    pub interval: Duration,
    /// How long each gate may take before its Job fails (its `activeDeadlineSeconds`; the
    /// Kustomization's `timeout` adds room for pulling the images).
    pub timeouts: GateTimeouts,
    /// Non-root uid of the gate pods.
    #[schemars(range(min = 1))]
    pub run_as_user: i64,
}

impl Default for Orchestrate {
    fn default() -> Self {
        Orchestrate {
            step: Step::Handover,
            payload_dir: "cilium-l2-cutover".into(),
            source: None,
            flux_namespace: "flux-system".into(),
            gate_namespace: "cilium-l2-cutover".into(),
            cilium_namespace: "kube-system".into(),
            kubectl_image: None,
            cutover_image: None,
            interval: Duration::parse("10m").expect("valid default"),
            timeouts: GateTimeouts::default(),
            run_as_user: 65534,
        }
    }
}

/// The commits of an orchestrated cutover.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum Step {
    /// Mark every object the chain takes over `kustomize.toolkit.fluxcd.io/prune: disabled`.
    Handover,
    /// Emit the payloads, the chained Kustomizations, the gates and the plan.
    Chain,
    /// After the chain: drop `kustomize.toolkit.fluxcd.io/prune: disabled` from the objects
    /// the cleanup removes, so the Kustomization applying them takes it off the live objects.
    CleanupHandover,
    /// After `cleanup-handover` was applied: remove MetalLB's objects (Flux prunes them) and
    /// its annotations, and add the cleanup gate's Kustomization.
    Cleanup,
}

impl Step {
    /// The config value, for messages.
    pub fn as_str(self) -> &'static str {
        match self {
            Step::Handover => "handover",
            Step::Chain => "chain",
            Step::CleanupHandover => "cleanup-handover",
            Step::Cleanup => "cleanup",
        }
    }
}

/// Where the payload directory is published for Flux.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ChainSource {
    /// Flux source holding the published payload directory.
    pub source_ref: Option<SourceRef>,
    /// Path of the payload directory inside that source, e.g. `./clusters/prod/cilium-l2-cutover`.
    pub path: Option<String>,
}

/// Deadline of each gate Job.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields, default)]
pub struct GateTimeouts {
    /// Phase prepare: the Cilium agents restart (L2 announcements on) and LB-IPAM imports
    /// every Service.
    pub prepare: Duration,
    /// Phase stop-speaker: MetalLB's speaker and controller pods terminate.
    pub stop_speaker: Duration,
    /// Phase cutover: every Service's L2 Lease is acquired (client-side rate limited).
    pub cutover: Duration,
    /// Step cleanup: Flux prunes MetalLB's release, helm-controller uninstalls it (its CRDs,
    /// pools and advertisements go with it when the chart owns them).
    pub cleanup: Duration,
}

impl Default for GateTimeouts {
    fn default() -> Self {
        GateTimeouts {
            prepare: Duration::parse("15m").expect("valid default"),
            stop_speaker: Duration::parse("5m").expect("valid default"),
            cutover: Duration::parse("5m").expect("valid default"),
            cleanup: Duration::parse("10m").expect("valid default"),
        }
    }
}
