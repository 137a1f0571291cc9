//! Steps `cleanup-handover` and `cleanup`: the changes the chain left once it is Ready (an
//! object has one applier at every step, so the chain could not make them): MetalLB's
//! installation, pools and advertisements removed, MetalLB's annotations taken off the
//! Services, `dependsOn` entries on the removed release dropped. They are phase cutover's
//! changes run on the chain's output, which [`super::chain::place`] lists as deferred.
//!
//! A removal takes two commits, the hand-over backwards. kustomize-controller prunes an object
//! only if its **live** metadata carries no `kustomize.toolkit.fluxcd.io/prune: disabled`
//! (`deleteObjects`, fluxcd/pkg `ssa/manager_delete.go`), and the chain's objects carry it.
//! Server-side apply removes a field its field manager set and no longer sends; every
//! Kustomization applies as `kustomize-controller` (`ssa.Owner{Field: r.ControllerName}` in
//! kustomize-controller's `kustomization_controller.go`; `client.FieldOwner` with
//! `ForceOwnership` in fluxcd/pkg `ssa/manager_apply.go`), the manager that set the annotation
//! at the hand-over. So `cleanup-handover` drops the annotation from the manifests and the
//! next apply drops it from the live objects; `cleanup` then removes the objects and their
//! Kustomization prunes them.
//!
//! MetalLB's pools and advertisements are the exception: their apply is skipped (`ssa:
//! IfNotPresent`, since MetalLB's webhook refuses their UPDATE once its controller is
//! stopped), so their live objects keep the annotation and the package Kustomization's owner
//! labels, and no Kustomization prunes them. Uninstalling MetalLB's chart deletes its CRDs
//! (templates of its `crds` subchart) and every pool and advertisement with them; where the
//! CRDs are installed otherwise they are left, and the cleanup gate names them.

use std::collections::BTreeMap;

use serde_yaml::Value;

use super::super::config::Phase;
use super::PRUNE;
use super::chain::{PHASES, Placement, Stages, is_chain_object, key};
use super::flux::{self, Unit};
use super::handover::{in_payload, path_of};
use super::payload::{CHAIN, payload_files, regenerate};
use super::settings::Settings;
use crate::krm::annotations::INTERNAL_PATH;
use crate::krm::outcome::PatchOp;
use crate::krm::{Edit, KrmObject, KrmResult, Outcome};
use crate::modes::prepull::fc_error;

/// Flux's per-object apply policy the chain sets on MetalLB's pools and advertisements.
const SSA: (&str, &str) = ("kustomize.toolkit.fluxcd.io/ssa", "IfNotPresent");

/// Every unit of the chain once the cleanup is written.
const WITH_CLEANUP: [Unit; 4] = [CHAIN[0], CHAIN[1], CHAIN[2], Unit::Cleanup];

/// The package is what step `chain` wrote: the three Kustomizations are among the items, no
/// phase would move or create anything more. Each refusal names the item and field.
pub(super) fn check_chain_state(
    items: &[Value],
    placement: &Placement,
    settings: &Settings,
    fc: Option<&Value>,
) -> Result<(), Vec<KrmResult>> {
    let mut errors = Vec::new();
    for phase in PHASES {
        let name = flux::unit_name(phase);
        let present = items.iter().any(|i| {
            is_chain_object(i)
                && i.is("kustomize.toolkit.fluxcd.io", "Kustomization")
                && i.name() == name
        });
        if !present {
            errors.push(fc_error(
                fc,
                format!(
                    "the cleanup runs on the chain's output, but Kustomization {name} is not among the items: run \
                     orchestrate.step: chain first, commit it and let the chain become Ready"
                ),
                "orchestrate.step",
            ));
        }
    }
    for (&index, (phase, _)) in &placement.moved {
        let item = &items[index];
        let (field, why) = if in_payload(item, settings) {
            (
                "spec".to_owned(),
                format!("phase {} would change it again", phase.as_str()),
            )
        } else {
            (
                format!("metadata.annotations.{INTERNAL_PATH}"),
                format!(
                    "it is not in {}/{}/ where step chain moves it",
                    settings.dir,
                    phase.as_str()
                ),
            )
        };
        errors.push(
            KrmResult::error(format!(
                "{}: {why}: the package is not in the state step chain writes; run orchestrate.step: chain first",
                item.object_ref()
            ))
            .about(item)
            .field(field),
        );
    }
    for (phase, item) in &placement.added {
        errors.push(fc_error(
            fc,
            format!(
                "{} is created by phase {} but not among the items: the package is not in the state step chain \
                 writes; run orchestrate.step: chain first",
                item.object_ref(),
                phase.as_str()
            ),
            "orchestrate.step",
        ));
    }
    if errors.is_empty() {
        Ok(())
    } else {
        Err(errors)
    }
}

/// The cleanup's change of each item it touches: `None` removes it, `Some` is its new content.
pub(super) fn changes(
    items: &[Value],
    placement: &Placement,
    stages: &Stages,
) -> BTreeMap<usize, Option<Value>> {
    placement
        .deferred
        .iter()
        .map(|(index, _)| {
            let item = &items[*index];
            (*index, stages.version(2, &key(item), Some(item)).cloned())
        })
        .collect()
}

/// The Kustomization that applies `item` (and prunes it once it leaves).
fn applier(item: &Value, settings: &Settings) -> String {
    let phase = path_of(item).and_then(|p| {
        let rest = p.strip_prefix(&format!("{}/", settings.dir))?;
        PHASES
            .into_iter()
            .find(|ph| rest.starts_with(&format!("{}/", ph.as_str())))
    });
    match phase {
        Some(p) => format!("Kustomization {}", flux::unit_name(p)),
        None => "the package's Kustomization".to_owned(),
    }
}

/// Step `cleanup-handover`: `prune: disabled` off every object the cleanup removes.
pub(super) fn cleanup_handover(
    items: &[Value],
    changes: &BTreeMap<usize, Option<Value>>,
    settings: &Settings,
) -> Outcome {
    let mut outcome = Outcome::default();
    let removed = changes.iter().filter(|(_, c)| c.is_none()).map(|(i, _)| *i);
    let mut count = 0;
    for index in removed {
        let item = &items[index];
        if item.annotation(PRUNE) != Some("disabled") {
            continue;
        }
        count += 1;
        let what = if item.annotation(SSA.0) == Some(SSA.1) {
            format!(
                "Flux skips its apply ({}: {}), so the live object keeps the annotation and nobody prunes it: it goes \
                 with MetalLB's CRDs when Flux uninstalls MetalLB in step cleanup, else delete it by hand (gate \
                 cleanup names it)",
                SSA.0, SSA.1
            )
        } else {
            format!(
                "{} applies it without the annotation and server-side apply removes it from the live object (same \
                 field manager, kustomize-controller), so step cleanup's removal prunes it",
                applier(item, settings)
            )
        };
        outcome.edits.push(Edit::Patch {
            index,
            ops: vec![PatchOp::remove_annotation(PRUNE)],
        });
        outcome.results.push(
            KrmResult::info(format!(
                "cleanup hand-over: {} loses {PRUNE}: disabled; {what}",
                item.object_ref()
            ))
            .about(item)
            .field(format!("metadata.annotations.{PRUNE}")),
        );
    }
    outcome.results.push(KrmResult::info(format!(
        "next step: commit this cleanup hand-over and let Flux apply it: the {count} object(s) above must show no \
         {PRUNE} annotation on the cluster (except MetalLB's pools and advertisements, whose apply is skipped) before \
         you push step cleanup. Then run again with orchestrate.step: cleanup"
    )));
    outcome
}

/// Step `cleanup`: the removals and changes, and the cleanup gate's Kustomization.
pub(super) fn cleanup(
    items: &[Value],
    changes: &BTreeMap<usize, Option<Value>>,
    settings: &Settings,
    plan: &str,
) -> Result<Outcome, Vec<KrmResult>> {
    let protected: Vec<KrmResult> = changes
        .iter()
        .filter(|(i, c)| c.is_none() && items[**i].annotation(PRUNE) == Some("disabled"))
        .map(|(i, _)| {
            KrmResult::error(format!(
                "{} is removed by the cleanup but still carries {PRUNE}: disabled: no Kustomization would prune it. \
                 Run orchestrate.step: cleanup-handover first, commit it and let Flux apply it",
                items[*i].object_ref()
            ))
            .about(&items[*i])
            .field(format!("metadata.annotations.{PRUNE}"))
        })
        .collect();
    if !protected.is_empty() {
        return Err(protected);
    }
    let mut outcome = Outcome::default();
    for (&index, change) in changes {
        let item = &items[index];
        match change {
            None => {
                let how = if item.annotation(SSA.0) == Some(SSA.1) {
                    "its live owner labels name the package's Kustomization (its apply was skipped): it goes with \
                     MetalLB's CRDs when helm-controller uninstalls MetalLB, else delete it by hand (gate cleanup \
                     names it)"
                        .to_owned()
                } else {
                    format!("{} prunes it", applier(item, settings))
                };
                outcome.results.push(
                    KrmResult::info(format!("cleanup: {} removed; {how}", item.object_ref()))
                        .about(item),
                );
                outcome.edits.push(Edit::Remove { index });
            }
            Some(new) => {
                outcome.results.push(
                    KrmResult::info(format!(
                        "cleanup: {} gets its phase cutover change, applied by {}",
                        item.object_ref(),
                        applier(item, settings)
                    ))
                    .about(item),
                );
                outcome.edits.push(Edit::Replace {
                    index,
                    item: new.clone(),
                });
            }
        }
    }
    let files = payload_files(items, settings, |i| matches!(changes.get(&i), Some(None)));
    regenerate(items, settings, &files, plan, &WITH_CLEANUP, &mut outcome)?;
    outcome.results.push(KrmResult::info(format!(
        "cleanup: Kustomization {} (after {}) is Ready when gate cleanup passes: IPs kept, every Lease held, no \
         MetalLB pod, pool or advertisement left; publish {}/ at {} and commit",
        flux::unit_name(Unit::Cleanup),
        flux::unit_name(Phase::Cutover),
        settings.dir,
        settings.path
    )));
    Ok(outcome)
}
