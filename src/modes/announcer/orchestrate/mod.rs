//! Flux-orchestrated cutover (`spec.orchestrate`): the three phases of one run as payload
//! directories, applied by chained Flux Kustomizations, each gated by a `cutover verify` Job.
//!
//! Pipeline: `settings` (validated config) → `chain` (the phases run in order, every object
//! given to the first phase that changes it) → `handover` (the hand-over step, or its check) →
//! `payload` (the edits: payloads, Kustomizations from `flux`, gates from `gate`, shared access
//! and plan from `rbac`); after the chain, `cleanup` (the chain state checked, then steps
//! `cleanup-handover` and `cleanup`: the changes the chain left, the cleanup gate).
//!
//! Ownership: an object the chain changes moves from the package's Kustomization to one
//! phase's. kustomize-controller prunes only objects whose live labels
//! `kustomize.toolkit.fluxcd.io/name|namespace` name the pruning Kustomization and that do not
//! carry `kustomize.toolkit.fluxcd.io/prune: disabled` (`deleteObjects` in
//! `internal/controller/kustomization_controller.go`; fluxcd/pkg `ssa/manager_delete.go`), and
//! every Kustomization applies with the same field manager `kustomize-controller`. So the move
//! takes two commits: `step: handover` marks the objects `prune: disabled` while the package's
//! Kustomization still applies them; `step: chain` moves them. Whichever Kustomization then
//! reconciles first, the object is never deleted (the annotation, then the labels of its new
//! owner), and never applied by two (the chain's Kustomizations are created by the package's
//! own, in the revision that drops the objects from it).

mod chain;
mod cleanup;
mod config;
mod flux;
mod gate;
mod handover;
mod payload;
mod rbac;
mod settings;

use serde_yaml::Value;

pub use config::*;
pub use gate::{LIVE_RESOURCES, METALLB_RESOURCES};

use super::config::LoadBalancerAnnouncerSpec;
use super::observed;
use crate::krm::{KrmObject, KrmResult, Outcome};
use crate::modes::announcer::Check;
use handover::{check_handed_over, handover};
use payload::emit;

/// Value of `fn.cutover.dev/generated-by` on the chain's own objects.
pub const GENERATED_BY_CHAIN: &str = "load-balancer-announcer-chain";
/// Prefix of every name the chain generates.
pub const NAME_PREFIX: &str = "cilium-l2-cutover";
/// kustomize-controller's prune annotation (`kustomize.toolkit.fluxcd.io/prune: disabled`).
pub const PRUNE: &str = "kustomize.toolkit.fluxcd.io/prune";

/// Runs the orchestrated mode; any error leaves every item unchanged.
pub fn run(
    spec: &LoadBalancerAnnouncerSpec,
    orchestrate: &Orchestrate,
    items: &[Value],
    fc: Option<&Value>,
) -> Outcome {
    match plan(spec, orchestrate, items, fc) {
        Ok(outcome) => outcome,
        Err(results) => Outcome {
            edits: Vec::new(),
            results: results
                .into_iter()
                .map(|r| {
                    if r.tags.contains_key("check") {
                        r
                    } else {
                        r.tag("check", Check::Orchestrate)
                    }
                })
                .collect(),
        },
    }
}

fn plan(
    spec: &LoadBalancerAnnouncerSpec,
    orchestrate: &Orchestrate,
    items: &[Value],
    fc: Option<&Value>,
) -> Result<Outcome, Vec<KrmResult>> {
    // A field of `spec.orchestrate` that is missing or wrong is the function config's problem,
    // tagged as every mode tags its config's errors.
    let settings = settings::resolve(orchestrate, fc)
        .map_err(|e| vec![e.tag("check", crate::config::CHECK)])?;
    let Some(observed_item) = items
        .iter()
        .find(|i| i.is(crate::config::GROUP, observed::KIND))
    else {
        return Err(vec![crate::modes::prepull::fc_error(
            fc,
            "orchestrate needs the ObservedState item among the items (`kubectl get … -o yaml | cutover observe`, \
             taken before phase prepare): the gates check the cluster against its Service IPs"
                .into(),
            "orchestrate",
        )]);
    };
    let stages = chain::simulate(spec, items, fc)?;
    let placement = chain::place(items, &stages);
    let split: Vec<KrmResult> = placement
        .split
        .iter()
        .map(|&(index, first, later)| {
            KrmResult::error(format!(
                "{} is changed by phase {} and again by phase {}: one object is applied by one Kustomization, and \
                 either would be wrong (the {} Kustomization would apply both changes before its gate, the {} one \
                 would hold the first back). Move the two settings into separate objects, or cut over with the \
                 three phases by hand",
                items[index].object_ref(),
                first.as_str(),
                later.as_str(),
                first.as_str(),
                later.as_str()
            ))
            .about(&items[index])
            .field("spec")
        })
        .collect();
    if !split.is_empty() {
        return Err(split);
    }
    let mut results = stages.warnings.clone();
    // The plan: the observed state, and the end state phase cutover leaves.
    let plan = payload::plan_text(observed_item, &stages.expected);
    let mut outcome = match orchestrate.step {
        Step::Handover => handover(items, &placement, &settings),
        Step::Chain => {
            check_handed_over(items, &placement, &settings)?;
            emit(items, &placement, &settings, &plan)?
        }
        Step::CleanupHandover => {
            cleanup::check_chain_state(items, &placement, &settings, fc)?;
            let changes = cleanup::changes(items, &placement, &stages);
            cleanup::cleanup_handover(items, &changes, &settings)
        }
        Step::Cleanup => {
            cleanup::check_chain_state(items, &placement, &settings, fc)?;
            let changes = cleanup::changes(items, &placement, &stages);
            cleanup::cleanup(items, &changes, &settings, &plan)?
        }
    };
    results.append(&mut outcome.results);
    for r in &mut results {
        r.tags
            .entry("check".into())
            .or_insert_with(|| Check::Orchestrate.into());
    }
    outcome.results = results;
    Ok(outcome)
}
