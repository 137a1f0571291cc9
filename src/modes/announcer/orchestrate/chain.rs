//! The chain's plan: the three phases run one after the other on the items (as the three
//! commits would), then every object is given to exactly one phase — the first that changes
//! it — or left where it is. Changes a later phase makes to an object an earlier phase already
//! writes are left to the cleanup commit: two Kustomizations applying one object would undo
//! each other on every reconciliation (they share kustomize-controller's field manager).

use std::collections::BTreeMap;

use serde_yaml::Value;

use super::super::config::{Announcer, LoadBalancerAnnouncerSpec, Phase};
use super::super::observed;
use super::GENERATED_BY_CHAIN;
use crate::krm::annotations::is_orchestrator_annotation;
use crate::krm::object::set_annotation;
use crate::krm::{KrmObject, KrmResult};

/// The phases in order.
pub const PHASES: [Phase; 3] = [Phase::Prepare, Phase::StopSpeaker, Phase::Cutover];

/// Identity of an object across the phases: group, kind, namespace, name.
pub type Key = (String, String, String, String);

/// The identity of an item.
pub fn key(item: &Value) -> Key {
    (
        item.group().to_owned(),
        item.kind().to_owned(),
        item.namespace().unwrap_or("").to_owned(),
        item.name().to_owned(),
    )
}

/// An item without the orchestrator's annotations (paths, indexes, ids), for comparison.
fn comparable(item: &Value) -> Value {
    let mut item = item.clone();
    if let Some(Value::Mapping(annotations)) = item
        .get_mut("metadata")
        .and_then(|m| m.get_mut("annotations"))
    {
        annotations.retain(|k, _| !k.as_str().is_some_and(is_orchestrator_annotation));
        if annotations.is_empty()
            && let Some(Value::Mapping(meta)) = item.get_mut("metadata")
        {
            meta.remove("annotations");
        }
    }
    item
}

/// The items after each phase.
pub struct Stages {
    /// `[after prepare, after stop-speaker, after cutover]`.
    pub after: [Vec<Value>; 3],
    /// Warnings of the three runs (each message once).
    pub warnings: Vec<KrmResult>,
}

/// Runs the phases in order, each on the output of the one before. Phase cutover runs with the
/// observed state's MetalLB pods cleared: in the chain, the stop-speaker gate proves on the
/// cluster that they are gone before the cutover payload is applied.
pub fn simulate(
    spec: &LoadBalancerAnnouncerSpec,
    items: &[Value],
    fc: Option<&Value>,
) -> Result<Stages, Vec<KrmResult>> {
    let mut current = items.to_vec();
    let mut after: Vec<Vec<Value>> = Vec::with_capacity(3);
    let mut warnings: Vec<KrmResult> = Vec::new();
    for phase in PHASES {
        if phase == Phase::Cutover {
            clear_metallb_pods(&mut current);
        }
        let one = LoadBalancerAnnouncerSpec {
            announcer: Some(Announcer::Cilium),
            phase,
            orchestrate: None,
            ..spec.clone()
        };
        let outcome = super::super::run(&one, &current, fc);
        let mut errors = Vec::new();
        for mut r in outcome.results {
            // The phase order is the chain's own; the next step is the next Kustomization.
            let check = r.tags.get("check").map(String::as_str);
            if matches!(check, Some("phase-order" | "next-step" | "outcome")) {
                continue;
            }
            // "Apply the Services and the pools with one Kustomization": the chain does (both
            // are in the prepare payload), so Flux applies the pins first.
            let pins_first = check == Some("transitions")
                && r.is_warning()
                && r.field
                    .as_ref()
                    .is_some_and(|f| f.path == "spec.ciliumOperatorStopped");
            if pins_first {
                continue;
            }
            r.tags
                .entry("phase".into())
                .or_insert_with(|| phase.as_str().into());
            if r.is_error() {
                errors.push(r);
            } else if r.is_warning() && !warnings.iter().any(|w| w.message == r.message) {
                warnings.push(r);
            }
        }
        if !errors.is_empty() {
            errors.extend(warnings);
            return Err(errors);
        }
        crate::krm::apply::apply(&mut current, outcome.edits).map_err(|e| vec![e])?;
        after.push(current.clone());
    }
    let [prepare, stop, cutover]: [Vec<Value>; 3] = after.try_into().expect("three phases");
    Ok(Stages {
        after: [prepare, stop, cutover],
        warnings,
    })
}

/// Empties `metallb` of the `ObservedState` item (speaker nodes, controller pods).
fn clear_metallb_pods(items: &mut [Value]) {
    for item in items.iter_mut() {
        if item.is(crate::config::GROUP, observed::KIND)
            && let Some(Value::Mapping(m)) = item.get_mut("metallb")
        {
            m.insert("speakerNodes".into(), Value::Sequence(Vec::new()));
            m.insert("controllerPods".into(), 0.into());
        }
    }
}

/// What the chain writes.
#[derive(Debug, Default)]
pub struct Placement {
    /// Input items a phase takes over: index → (phase, its content after that phase).
    pub moved: BTreeMap<usize, (Phase, Value)>,
    /// Objects a phase creates, in order.
    pub added: Vec<(Phase, Value)>,
    /// Changes left to the cleanup commit: (input index, what).
    pub deferred: Vec<(usize, String)>,
    /// Objects two phases before cutover change: (input index, first phase, later phase).
    /// One Kustomization applies an object, so the chain cannot stage them (refused).
    pub split: Vec<(usize, Phase, Phase)>,
}

/// Gives every changed object to the first phase that changes it.
pub fn place(items: &[Value], stages: &Stages) -> Placement {
    let by_key: Vec<BTreeMap<Key, &Value>> = stages
        .after
        .iter()
        .map(|items| items.iter().map(|i| (key(i), i)).collect())
        .collect();
    let inputs: BTreeMap<Key, usize> = items.iter().enumerate().map(|(i, v)| (key(v), i)).collect();
    let mut placement = Placement::default();
    for (index, item) in items.iter().enumerate() {
        if is_chain_object(item) || item.is(crate::config::GROUP, observed::KIND) {
            continue;
        }
        let k = key(item);
        let before = comparable(item);
        let versions: Vec<Option<&Value>> = by_key.iter().map(|m| m.get(&k).copied()).collect();
        let first = versions
            .iter()
            .position(|v| v.is_none_or(|v| comparable(v) != before));
        let Some(p) = first else { continue };
        let phase = PHASES[p];
        match versions[p] {
            Some(v)
                if phase == Phase::Prepare
                    && versions[1].is_none_or(|w| comparable(w) != comparable(v)) =>
            {
                placement.split.push((index, phase, Phase::StopSpeaker));
            }
            Some(v) if phase != Phase::Cutover => {
                let last = versions[2];
                if last.is_none_or(|l| comparable(l) != comparable(v)) {
                    let what = if last.is_none() {
                        "its removal in phase cutover".to_owned()
                    } else {
                        "its phase cutover change".to_owned()
                    };
                    placement.deferred.push((index, what));
                }
                placement.moved.insert(index, (phase, v.clone()));
            }
            Some(_) => placement
                .deferred
                .push((index, "its phase cutover change".to_owned())),
            None => placement
                .deferred
                .push((index, format!("its removal in phase {}", phase.as_str()))),
        }
    }
    for (p, map) in stages.after.iter().enumerate() {
        for item in map {
            let k = key(item);
            let earlier = p > 0 && by_key[p - 1].contains_key(&k);
            if !inputs.contains_key(&k) && !earlier {
                placement.added.push((PHASES[p], item.clone()));
            }
        }
    }
    placement
}

/// True for the objects the chain itself generates (Flux units, gates, plan, kustomization files).
pub fn is_chain_object(item: &Value) -> bool {
    item.annotation(crate::modes::prepull::GENERATED_BY) == Some(GENERATED_BY_CHAIN)
}

/// Marks an object as the chain's (regenerated on every run).
pub fn mark_chain_object(item: &mut Value) {
    set_annotation(
        item,
        crate::modes::prepull::GENERATED_BY,
        GENERATED_BY_CHAIN,
    );
}

#[cfg(test)]
mod tests {
    use super::*;

    fn svc(name: &str, note: &str) -> Value {
        crate::krm::yaml::from_str(&format!(
            "apiVersion: v1\nkind: Service\nmetadata:\n  name: {name}\n  namespace: ns\n  annotations:\n    note: {note}\n"
        ))
        .unwrap()
    }

    fn stages(after: [Vec<Value>; 3]) -> Stages {
        Stages {
            after,
            warnings: Vec::new(),
        }
    }

    #[test]
    fn the_first_phase_that_changes_an_object_owns_it() {
        let items = vec![svc("a", "0"), svc("b", "0"), svc("c", "0")];
        let s = stages([
            vec![svc("a", "1"), svc("b", "0"), svc("c", "0"), svc("new", "0")],
            vec![svc("a", "1"), svc("b", "2"), svc("c", "0"), svc("new", "0")],
            vec![
                svc("a", "3"),
                svc("b", "2"),
                svc("new", "0"),
                svc("pol", "0"),
            ],
        ]);
        let p = place(&items, &s);
        assert_eq!(p.moved[&0].0, Phase::Prepare);
        assert_eq!(p.moved[&1].0, Phase::StopSpeaker);
        assert!(!p.moved.contains_key(&2));
        // a's cutover change and c's removal wait for the cleanup commit.
        assert_eq!(
            p.deferred,
            [
                (0, "its phase cutover change".to_owned()),
                (2, "its removal in phase cutover".to_owned())
            ]
        );
        let added: Vec<(Phase, &str)> = p.added.iter().map(|(ph, v)| (*ph, v.name())).collect();
        assert_eq!(added, [(Phase::Prepare, "new"), (Phase::Cutover, "pol")]);
        assert!(p.split.is_empty());
    }

    #[test]
    fn an_object_changed_by_prepare_and_stop_speaker_is_split() {
        let items = vec![svc("a", "0")];
        let s = stages([
            vec![svc("a", "1")],
            vec![svc("a", "2")],
            vec![svc("a", "2")],
        ]);
        let p = place(&items, &s);
        assert_eq!(p.split, [(0, Phase::Prepare, Phase::StopSpeaker)]);
        assert!(p.moved.is_empty());
    }
}
