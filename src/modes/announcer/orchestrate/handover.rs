//! Step `handover` and its check in step `chain`: every object the chain takes over carries
//! `kustomize.toolkit.fluxcd.io/prune: disabled` before it moves (see the module doc of
//! [`super`] for why that takes its own commit).

use serde_yaml::Value;

use super::PRUNE;
use super::chain::Placement;
use super::settings::Settings;
use crate::krm::annotations::{INTERNAL_PATH, PATH};
use crate::krm::{Edit, KrmObject, KrmResult, Outcome, PatchOp};

pub(super) fn path_of(item: &Value) -> Option<&str> {
    item.annotation(INTERNAL_PATH)
        .or_else(|| item.annotation(PATH))
}

/// True when the item already lives in the payload directory (moved by an earlier run).
pub(super) fn in_payload(item: &Value, settings: &Settings) -> bool {
    path_of(item).is_some_and(|p| p.starts_with(&format!("{}/", settings.dir)))
}

/// Step `handover`: `prune: disabled` on every object the chain will take over.
pub(super) fn handover(items: &[Value], placement: &Placement, settings: &Settings) -> Outcome {
    let mut outcome = Outcome::default();
    for (&index, (phase, _)) in &placement.moved {
        let item = &items[index];
        if in_payload(item, settings) {
            continue;
        }
        if item.annotation(PRUNE) != Some("disabled") {
            // A patch of the item's own tree, not a copy: the tree may hold aliases expanded to
            // hundreds of thousands of nodes.
            outcome.edits.push(Edit::Patch {
                index,
                ops: vec![PatchOp::set_annotation(PRUNE, "disabled")],
            });
        }
        outcome.results.push(
            KrmResult::info(format!(
                "hand-over: {} carries {PRUNE}: disabled, so no Kustomization deletes it while it moves to \
                 {}/{}/ (step chain)",
                item.object_ref(),
                settings.dir,
                phase.as_str()
            ))
            .about(item)
            .field(format!("metadata.annotations.{PRUNE}")),
        );
    }
    outcome.results.push(KrmResult::info(format!(
        "next step: commit this hand-over and let the Flux Kustomization that applies the package apply it: its \
         lastAppliedRevision must be this commit, and the {} object(s) above must show {PRUNE}: disabled on the \
         cluster, before you push step chain (if Flux only ever sees the chain's revision, it prunes them: a \
         Service deleted and recreated can lose its IP). Then run again with orchestrate.step: chain",
        placement.moved.len()
    )));
    outcome
}

/// Step `chain`: every object it moves must have been handed over.
pub(super) fn check_handed_over(
    items: &[Value],
    placement: &Placement,
    settings: &Settings,
) -> Result<(), Vec<KrmResult>> {
    let errors: Vec<KrmResult> = placement
        .moved
        .keys()
        .map(|&i| &items[i])
        .filter(|item| !in_payload(item, settings) && item.annotation(PRUNE) != Some("disabled"))
        .map(|item| {
            KrmResult::error(format!(
                "{} moves to the chain but lacks {PRUNE}: disabled: the package's Kustomization would prune it if \
                 it reconciles before the chain takes it over (it deletes objects whose live labels name it, \
                 unless they carry that annotation). Run orchestrate.step: handover first, commit it and let Flux \
                 apply it",
                item.object_ref()
            ))
            .about(item)
            .field(format!("metadata.annotations.{PRUNE}"))
        })
        .collect();
    if errors.is_empty() {
        Ok(())
    } else {
        Err(errors)
    }
}
