//! Load-balancer announcer cutover mode (`LoadBalancerAnnouncer`): MetalLB L2 → Cilium LB-IPAM +
//! L2 announcements without losing a Service IP and without both answering ARP at once.
//!
//! Flow (kpt catalog style): read the items (`inputs`) into the `inventory` → translate pools
//! and advertisements (`translate`) and Services (`services`) → edit Helm values (`values`) →
//! prove coverage (`coverage`) → emit the edits of the selected phase, or (announcer `metallb`)
//! report them as a plan without changing anything.

mod check;
mod cilium;
mod config;
mod coverage;
mod cutover;
pub mod expected;
mod helm;
mod inputs;
use super::install;
mod inventory;
mod ipam;
mod metallb;
pub mod model;
pub mod observed;
pub mod orchestrate;
mod policies;
mod preconditions;
mod release;
mod report;
mod selector;
mod service;
mod services;
mod sharing;
mod translate;
mod values;
mod values_annotations;
mod version;

pub use check::Check;
pub use config::*;
pub use inputs::{Reader, passes_through, read, reads};

use serde_yaml::Value;

use super::Ran;
use crate::krm::{KrmObject, KrmResult, Outcome};
use cutover::Cutover;
use inventory::Inventory;
use report::as_plan;

/// Runs the mode.
pub fn run(
    spec: &LoadBalancerAnnouncerSpec,
    items: &[Value],
    function_config: Option<&Value>,
) -> Outcome {
    run_read(spec, items, function_config, inputs::read(items)).outcome
}

/// Runs the mode on items already read (by a [`Reader`] while they were parsed: the Services'
/// trees may be gone from `items`). In plan mode the summaries also go to stderr, one line each,
/// beside the warnings the engine writes there: under `kubectl kustomize` and other
/// orchestrators that do not show results a plan would otherwise be silent.
pub fn run_read(
    spec: &LoadBalancerAnnouncerSpec,
    items: &[Value],
    function_config: Option<&Value>,
    read: (Inventory, Vec<KrmResult>),
) -> Ran {
    let (inv, mut results) = read;
    for r in &mut results {
        r.tags
            .entry("check".into())
            .or_insert_with(|| Check::Input.into());
    }
    let outcome = run_inventory(spec, items, function_config, &inv, results);
    // 10k Services' facts: freed off the critical path, like the engine's garbage.
    crate::krm::free_in_background(inv);
    let stderr = report::plan_lines(&outcome);
    Ran {
        outcome,
        stderr,
        ..Ran::default()
    }
}

/// [`run_read`] on the inventory, which the caller frees.
fn run_inventory(
    spec: &LoadBalancerAnnouncerSpec,
    items: &[Value],
    function_config: Option<&Value>,
    inv: &Inventory,
    mut results: Vec<KrmResult>,
) -> Outcome {
    // Errors in the switch itself stay errors even in plan mode: the run cannot tell which
    // announcer is wanted.
    let mut switch_errors = Vec::new();
    let announcer = resolve_announcer(spec, inv, items, &mut switch_errors);
    if announcer == Announcer::Cilium
        && let Some(orchestrate) = &spec.orchestrate
        && switch_errors.is_empty()
    {
        let mut outcome = orchestrate::run(spec, orchestrate, items, function_config);
        // The chain's simulation of phase prepare reads the same items again and finds what the
        // read above found: each finding is reported once.
        outcome
            .results
            .retain(|r| !results.iter().any(|read| read.same_finding(r)));
        outcome.results.splice(0..0, results);
        if spec.fail_on_warnings {
            outcome.promote_warnings();
        }
        if outcome.has_errors() {
            super::nothing_changed(&mut outcome);
        }
        return outcome;
    }
    let mut outcome = if inv.pools.is_empty() && inv.adverts.is_empty() && inv.bgp.is_empty() {
        results.push(
            KrmResult::info(
                "no MetalLB IPAddressPool, L2Advertisement or BGP object among the items: nothing to migrate",
            )
            .tag("check", Check::Inventory),
        );
        Outcome {
            edits: Vec::new(),
            results,
        }
    } else {
        let plan_mode = announcer != Announcer::Cilium;
        let phase = if plan_mode {
            Phase::Cutover
        } else {
            spec.phase
        };
        let mut out = Cutover::new(spec, phase, plan_mode, inv, items, function_config).run();
        results.append(&mut out.results);
        Outcome {
            edits: out.edits,
            results,
        }
    };
    if announcer != Announcer::Cilium {
        outcome = as_plan(outcome);
    }
    if announcer == Announcer::Cilium
        && spec.phase != Phase::Cutover
        && let Some(r) = after_cutover(spec.phase, inv, items)
    {
        outcome.results.push(r);
    }
    for r in &mut switch_errors {
        r.tags
            .entry("check".into())
            .or_insert_with(|| Check::AnnouncerSwitch.into());
    }
    outcome.results.splice(0..0, switch_errors);
    if spec.fail_on_warnings {
        if announcer == Announcer::Cilium {
            outcome.promote_warnings();
        } else if outcome.results.iter().any(KrmResult::is_warning) {
            // A summary line of the plan: also on stderr.
            outcome.results.push(
                KrmResult::info(
                    "plan: failOnWarnings does not apply to a plan (announcer metallb): its warnings stay \
                     warnings; those tagged planSeverity: error are what blocks the cutover",
                )
                .tag("check", Check::Plan)
                .tag("plan", "true"),
            );
        }
    }
    // Plan mode has downgraded its own errors, so only cilium-mode, promoted or switch errors
    // remain here.
    if outcome.has_errors() {
        super::nothing_changed(&mut outcome);
    }
    outcome
}

/// The first CiliumL2AnnouncementPolicy cutover generated among the items (phase `cutover` was
/// applied), by item index.
fn generated_l2_policy(inv: &Inventory, items: &[Value]) -> Option<usize> {
    inv.cilium_objects
        .iter()
        .find(|((kind, _), index)| {
            kind == "CiliumL2AnnouncementPolicy"
                && items[**index].label(inventory::MANAGED_BY.0) == Some(inventory::MANAGED_BY.1)
        })
        .map(|(_, &index)| index)
}

/// Warning for an earlier phase run on the output of phase `cutover`: the L2 policies cutover
/// generated are among the items.
fn after_cutover(phase: Phase, inv: &Inventory, items: &[Value]) -> Option<KrmResult> {
    let index = generated_l2_policy(inv, items)?;
    Some(
        KrmResult::warning(format!(
            "phase {} after phase cutover: the CiliumL2AnnouncementPolicies cutover generated are among the items, \
             so Cilium answers ARP; an earlier phase does not bring MetalLB back (phase cutover removed it) and leaves \
             the policies in place. To hand the IPs back to MetalLB, revert the cutover change and keep the speaker \
             stopped until the policies are gone (see the runbook's rollback)",
            phase.as_str()
        ))
        .about(&items[index])
        .tag("check", Check::PhaseOrder)
        .tag("phase", phase.as_str()),
    )
}

/// `spec.announcer`, else the platform values switch, else `metallb`.
fn resolve_announcer(
    spec: &LoadBalancerAnnouncerSpec,
    inv: &Inventory,
    items: &[Value],
    results: &mut Vec<KrmResult>,
) -> Announcer {
    let mut from_values = None;
    for (index, value) in &inv.switch {
        let parsed = match value.as_str() {
            "metallb" => Announcer::Metallb,
            "cilium" => Announcer::Cilium,
            other => {
                results.push(
                    KrmResult::error(format!(
                        "networking.loadBalancerAnnouncer is {other:?}: expected metallb or cilium"
                    ))
                    .about(&items[*index])
                    .field("networking.loadBalancerAnnouncer")
                    .current(other),
                );
                continue;
            }
        };
        match from_values {
            Some(prev) if prev != parsed => results.push(
                KrmResult::error(
                    "the items disagree on networking.loadBalancerAnnouncer (metallb and cilium)",
                )
                .about(&items[*index])
                .field("networking.loadBalancerAnnouncer"),
            ),
            _ => from_values = Some(parsed),
        }
    }
    match (spec.announcer, from_values) {
        (Some(a), Some(v)) if a != v => {
            results.push(KrmResult::warning(format!(
                "spec.announcer ({}) overrides networking.loadBalancerAnnouncer ({}) from the platform values",
                name(a),
                name(v)
            )));
            a
        }
        (Some(a), _) | (None, Some(a)) => a,
        (None, None) => Announcer::Metallb,
    }
}

fn name(a: Announcer) -> &'static str {
    match a {
        Announcer::Metallb => "metallb",
        Announcer::Cilium => "cilium",
    }
}

#[cfg(test)]
mod tests;
