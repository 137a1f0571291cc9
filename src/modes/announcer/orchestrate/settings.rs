//! `spec.orchestrate` validated: every refusal names its field.

use serde_yaml::Value;

use super::super::config::Phase;
use super::config::{Orchestrate, Step};
use super::flux::Unit;
use crate::krm::KrmResult;
use crate::krm::names::{NAMESPACE_RULE, is_namespace_name};
use crate::modes::prepull::{ImageRef, SourceRef, fc_error, package_dir, valid_flux_path};

/// The validated orchestration settings.
#[derive(Debug, Clone)]
pub struct Settings {
    /// Package-relative payload directory (no `./`, no trailing `/`).
    pub dir: String,
    /// The Flux source of the payloads (`step: chain`).
    pub source_ref: Option<SourceRef>,
    /// Path of the payload directory in that source (`step: chain`), without a trailing `/`.
    pub path: String,
    /// Namespace of the chained Kustomizations.
    pub flux_namespace: String,
    /// Namespace of the gate Jobs.
    pub gate_namespace: String,
    /// Namespace of Cilium's Leases.
    pub cilium_namespace: String,
    /// Gate container image.
    pub kubectl_image: String,
    /// Image the cutover binary is copied from.
    pub cutover_image: String,
    /// `spec.interval` of the Kustomizations.
    pub interval: String,
    /// Gate deadlines in seconds: prepare, stop-speaker, cutover, cleanup.
    pub timeouts: [u64; 4],
    /// uid of the gate pods.
    pub run_as_user: i64,
}

impl Settings {
    /// The gate deadline of `phase`, in seconds.
    pub fn timeout(&self, unit: Unit) -> u64 {
        match unit {
            Unit::Phase(Phase::Prepare) => self.timeouts[0],
            Unit::Phase(Phase::StopSpeaker) => self.timeouts[1],
            Unit::Phase(Phase::Cutover) => self.timeouts[2],
            Unit::Cleanup => self.timeouts[3],
        }
    }
}

const EXAMPLE: &str = "orchestrate: {source: {sourceRef: {kind: GitRepository, name: platform, namespace: flux-system}, \
     path: ./clusters/prod/cilium-l2-cutover}}";

/// Validates `spec.orchestrate`; steps `chain` and `cleanup` (which write the chain's
/// Kustomizations and gates) also need the source and the cutover image.
pub fn resolve(o: &Orchestrate, fc: Option<&Value>) -> Result<Settings, KrmResult> {
    let dir = package_dir(
        &o.payload_dir,
        "orchestrate.payloadDir",
        "cilium-l2-cutover",
        fc,
    )?;
    let chain = matches!(o.step, Step::Chain | Step::Cleanup);
    let step = o.step.as_str();
    let (source_ref, path) = match (&o.source, chain) {
        (_, false) => (None, String::new()),
        (None, true) => {
            return Err(fc_error(
                fc,
                format!(
                    "orchestrate.source is required with step: {step}: the Flux source where you publish {dir}/ \
                     and its path there (the function never guesses it; a Kustomization pointing at a path that \
                     does not exist is never Ready and the chain stops there), e.g. {EXAMPLE}"
                ),
                "orchestrate.source",
            ));
        }
        (Some(s), true) => {
            let Some(source_ref) = s.source_ref.clone().filter(|r| !r.name.is_empty()) else {
                return Err(fc_error(
                    fc,
                    format!(
                        "orchestrate.source.sourceRef is required (kind and name), e.g. {EXAMPLE}"
                    ),
                    "orchestrate.source.sourceRef",
                ));
            };
            let Some(path) = s.path.clone() else {
                return Err(fc_error(
                    fc,
                    format!(
                        "orchestrate.source.path is required: where {dir}/ is inside the source, e.g. {EXAMPLE}"
                    ),
                    "orchestrate.source.path",
                ));
            };
            if !valid_flux_path(&path) {
                return Err(fc_error(
                    fc,
                    format!("orchestrate.source.path {path:?} must be relative to the source root, without '..'"),
                    "orchestrate.source.path",
                )
                .current(path));
            }
            (Some(source_ref), path.trim_end_matches('/').to_owned())
        }
    };
    let kubectl_image = gate_image(
        chain.then_some(&o.kubectl_image),
        "orchestrate.kubectlImage",
        "the image of the gate container: /bin/sh and kubectl, e.g. Sylva's kube-job image",
        step,
        fc,
    )?;
    let cutover_image = gate_image(
        chain.then_some(&o.cutover_image),
        "orchestrate.cutoverImage",
        "the image you publish cutover as (its /cutover binary runs `cutover verify` in each gate Job)",
        step,
        fc,
    )?;
    // Each is written into every object of its kind the chain emits (and named again in
    // bindings, health checks and the gates' commands), so it must be one the API server accepts.
    for (field, namespace) in [
        ("orchestrate.fluxNamespace", &o.flux_namespace),
        ("orchestrate.gateNamespace", &o.gate_namespace),
        ("orchestrate.ciliumNamespace", &o.cilium_namespace),
    ] {
        if !is_namespace_name(namespace) {
            return Err(fc_error(
                fc,
                format!("{field} is not a namespace name: {NAMESPACE_RULE}"),
                field,
            ));
        }
    }
    Ok(Settings {
        dir,
        source_ref,
        path,
        flux_namespace: o.flux_namespace.clone(),
        gate_namespace: o.gate_namespace.clone(),
        cilium_namespace: o.cilium_namespace.clone(),
        kubectl_image,
        cutover_image,
        interval: o.interval.as_str().to_owned(),
        timeouts: [
            o.timeouts.prepare.as_secs_ceil(),
            o.timeouts.stop_speaker.as_secs_ceil(),
            o.timeouts.cutover.as_secs_ceil(),
            o.timeouts.cleanup.as_secs_ceil(),
        ],
        run_as_user: o.run_as_user,
    })
}

/// A gate image of a step that writes gates (`image` is `None` for the steps that write none):
/// required, and pinned by digest. A gate decides whether the next phase runs: it must run
/// exactly the image that was reviewed, and a tag can be moved under it between two rounds.
fn gate_image(
    image: Option<&Option<ImageRef>>,
    field: &str,
    what: &str,
    step: &str,
    fc: Option<&Value>,
) -> Result<String, KrmResult> {
    match image {
        None => Ok(String::new()),
        Some(None) => Err(fc_error(
            fc,
            format!("{field} is required with step: {step}: {what}, pinned by digest (repo:tag@sha256:…)"),
            field,
        )),
        Some(Some(image)) if !image.as_str().contains('@') => Err(fc_error(
            fc,
            format!(
                "{field} {} is pinned by tag only: a gate that decides whether the next phase runs must run exactly \
                 the image that was reviewed; pin it by digest (repo:tag@sha256:…, the digest your registry serves)",
                image.as_str()
            ),
            field,
        )
        .current(image.as_str())),
        Some(Some(image)) => Ok(image.to_string()),
    }
}
