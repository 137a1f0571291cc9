//! The chained Flux Kustomizations (`kustomize.toolkit.fluxcd.io/v1`), one per phase, and the
//! kustomize files of the payload directories.
//!
//! Each phase's Kustomization depends on the previous one (`dependsOn`: applied only once it
//! is Ready) and is Ready only when its gate Job completed: `healthChecks` names the Job and
//! `wait` is off, so the objects the phase applies do not count (the Services and releases are
//! judged by the gate, which knows what each phase must reach). Flux's Job status reader
//! reports a Job Current only once it completed, Failed when it failed (fluxcd/pkg
//! `runtime/statusreaders/job.go`).

use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use serde::Serialize;

use super::super::config::Phase;
use super::rbac::meta;
use super::settings::Settings;
use crate::modes::flux::{JobHealthCheck, KustomizeFile};
use crate::modes::prepull::{SourceRef, flux_duration};

/// Seconds a Kustomization's `timeout` adds to its gate's deadline: pulling two images and
/// scheduling the pod on a busy node.
pub const FLUX_MARGIN_SECS: u64 = 180;

/// Flux `Kustomization`, only the fields the chain sets.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct FluxKustomization {
    api_version: &'static str,
    kind: &'static str,
    metadata: ObjectMeta,
    spec: FluxSpec,
}

#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
struct FluxSpec {
    #[serde(skip_serializing_if = "Vec::is_empty")]
    depends_on: Vec<DependsOn>,
    health_checks: Vec<JobHealthCheck>,
    interval: String,
    path: String,
    prune: bool,
    retry_interval: String,
    source_ref: SourceRef,
    timeout: String,
    wait: bool,
}

#[derive(Debug, Clone, Serialize)]
struct DependsOn {
    name: String,
}

/// A Kustomization of the chain: one per phase, and the cleanup's (step `cleanup`), whose
/// payload is its gate alone.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Unit {
    /// The Kustomization applying a phase's payload.
    Phase(Phase),
    /// The Kustomization of the cleanup gate (`cutover verify cleanup`).
    Cleanup,
}

impl Unit {
    /// Its directory under the payload directory, its gate and the suffix of its name.
    pub fn as_str(self) -> &'static str {
        match self {
            Unit::Phase(p) => p.as_str(),
            Unit::Cleanup => "cleanup",
        }
    }
}

impl From<Phase> for Unit {
    fn from(p: Phase) -> Unit {
        Unit::Phase(p)
    }
}

/// Name of the Kustomization of `unit`.
pub fn unit_name(unit: impl Into<Unit>) -> String {
    format!("{}-{}", super::NAME_PREFIX, unit.into().as_str())
}

/// The Kustomization of `phase`, depending on `after` and health-checking `job`.
pub fn unit(settings: &Settings, phase: Unit, after: Option<Unit>, job: &str) -> FluxKustomization {
    let source_ref = settings
        .source_ref
        .clone()
        .expect("step chain has a source (settings::resolve)");
    FluxKustomization {
        api_version: "kustomize.toolkit.fluxcd.io/v1",
        kind: "Kustomization",
        metadata: meta(&unit_name(phase), Some(&settings.flux_namespace)),
        spec: FluxSpec {
            depends_on: after
                .map(|p| DependsOn { name: unit_name(p) })
                .into_iter()
                .collect(),
            health_checks: vec![JobHealthCheck::new(job, &settings.gate_namespace)],
            interval: settings.interval.clone(),
            path: format!("{}/{}", settings.path, phase.as_str()),
            // Prunes what the phase creates (the Cilium pools, the L2 policies, the gates) when
            // the chain is removed; objects it took over carry prune: disabled and survive.
            prune: true,
            retry_interval: "1m".into(),
            source_ref,
            timeout: flux_duration(settings.timeout(phase) + FLUX_MARGIN_SECS),
            wait: false,
        },
    }
}

/// The kustomize file of a payload directory (local config for kpt: a build input, never
/// applied). An empty list at the payload root fences the phases off: Flux's generated
/// kustomization of the package adds a sub-directory holding a kustomization file as one
/// resource and does not descend into it (fluxcd/pkg `kustomize/kustomize_generator.go`), so
/// the package's own Kustomization never applies a phase.
pub fn kustomize_file(name: &str, resources: Vec<String>) -> KustomizeFile {
    KustomizeFile::new(meta(name, None), resources)
}
