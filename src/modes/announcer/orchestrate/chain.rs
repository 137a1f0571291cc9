//! The chain's plan: the three phases run one after the other on the items (as the three
//! commits would), then every object is given to exactly one phase — the first that changes
//! it — or left where it is. Changes a later phase makes to an object an earlier phase already
//! writes are left to the cleanup commit: two Kustomizations applying one object would undo
//! each other on every reconciliation (they share kustomize-controller's field manager).

use std::collections::{BTreeMap, BTreeSet};

use serde_yaml::Value;

use super::super::config::{Announcer, LoadBalancerAnnouncerSpec, Phase};
use super::super::observed;
use super::GENERATED_BY_CHAIN;
use crate::krm::annotations::is_orchestrator_annotation;
use crate::krm::object::set_annotation;
use crate::krm::{Edit, KrmObject, KrmResult};
use crate::modes::announcer::Check;
use crate::modes::announcer::expected::ExpectedState;

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

/// Whether two items are the same but for the orchestrator's annotations (paths, indexes, ids)
/// — compared in place: an item may be large (an alias expansion within the reader's limits),
/// and copies of it for the comparison doubled what the chain held.
fn same(a: &Value, b: &Value) -> bool {
    let (Value::Mapping(a), Value::Mapping(b)) = (a, b) else {
        return a == b;
    };
    if !fields_equal(a, b, "metadata") {
        return false;
    }
    let (Some(Value::Mapping(x)), Some(Value::Mapping(y))) = (a.get("metadata"), b.get("metadata"))
    else {
        return a.get("metadata") == b.get("metadata");
    };
    if !fields_equal(x, y, "annotations") {
        return false;
    }
    match (x.get("annotations"), y.get("annotations")) {
        (None | Some(Value::Mapping(_)), None | Some(Value::Mapping(_))) => {
            let (kx, ky) = (kept_annotations(x), kept_annotations(y));
            kx.len() == ky.len()
                && kx
                    .iter()
                    .all(|(k, v)| ky.iter().any(|(l, w)| k == l && v == w))
        }
        (p, q) => p == q,
    }
}

/// The annotations of `metadata` but the orchestrator's.
fn kept_annotations(metadata: &serde_yaml::Mapping) -> Vec<(&Value, &Value)> {
    match metadata.get("annotations") {
        Some(Value::Mapping(an)) => an
            .iter()
            .filter(|(k, _)| !k.as_str().is_some_and(is_orchestrator_annotation))
            .collect(),
        _ => Vec::new(),
    }
}

/// The entries of two mappings are equal, `skip` aside (order ignored, as for YAML mappings).
fn fields_equal(a: &serde_yaml::Mapping, b: &serde_yaml::Mapping, skip: &str) -> bool {
    let len = |m: &serde_yaml::Mapping| m.len() - usize::from(m.contains_key(skip));
    len(a) == len(b)
        && a.iter()
            .filter(|(k, _)| k.as_str() != Some(skip))
            .all(|(k, v)| b.get(k) == Some(v))
}

/// What the three phases do to the items, kept as changes rather than as three copies of the
/// items (an input with a large item, an alias expansion within the reader's limits, held five
/// copies of it): per phase, each item it changed or added, by key and in output order, with its
/// content after the phase, and `None` for each item it removed. An item no phase touched is as
/// in the input.
pub struct Stages {
    /// `[prepare, stop-speaker, cutover]`.
    pub changed: [PhaseChanges; 3],
    /// The expected end state: the package after phase cutover, as the gates read it.
    pub expected: ExpectedState,
    /// Warnings of the three runs (each message once).
    pub warnings: Vec<KrmResult>,
}

/// The changes of one phase, in output order, found by key.
#[derive(Default)]
pub struct PhaseChanges {
    entries: Vec<(Key, Option<Value>)>,
    by_key: BTreeMap<Key, usize>,
}

impl PhaseChanges {
    fn insert(&mut self, key: Key, value: Option<Value>) {
        match self.by_key.get(&key) {
            Some(&at) => self.entries[at].1 = value,
            None => {
                self.by_key.insert(key.clone(), self.entries.len());
                self.entries.push((key, value));
            }
        }
    }

    /// The phase's change of `key`: `Some(None)` removed, `Some(Some(v))` changed or added.
    fn get(&self, key: &Key) -> Option<Option<&Value>> {
        self.by_key.get(key).map(|&at| self.entries[at].1.as_ref())
    }
}

impl Stages {
    /// The object `key` after phase `p` (0-based): the latest change at or before `p`, else
    /// `input` (the input item of that key, if any).
    pub fn version<'a>(
        &'a self,
        p: usize,
        key: &Key,
        input: Option<&'a Value>,
    ) -> Option<&'a Value> {
        (0..=p)
            .rev()
            .find_map(|q| self.changed[q].get(key))
            .unwrap_or(input)
    }
}

/// Runs the phases in order, each on the output of the one before. Phase cutover runs with the
/// observed state's MetalLB pods cleared: in the chain, the stop-speaker gate proves on the
/// cluster that they are gone before the cutover payload is applied.
///
/// An item may be large (an alias expansion within the reader's limits), so no copy of it is
/// made that the phases do not need: phase prepare reads the input itself, an item a phase
/// replaces or removes is not copied into the next phase's items, and what an earlier phase left
/// of an item is copied only when a later phase changes it (else it is the final content, moved
/// at the end).
pub fn simulate(
    spec: &LoadBalancerAnnouncerSpec,
    items: &[Value],
    fc: Option<&Value>,
) -> Result<Stages, Vec<KrmResult>> {
    // The items after the phases run so far; `None` before the first.
    let mut current: Option<Vec<Value>> = None;
    let mut changed: Vec<PhaseChanges> = Vec::with_capacity(3);
    let mut pending: Vec<Pending> = Vec::new();
    let mut warnings: Vec<KrmResult> = Vec::new();
    let mut expected = None;
    for (p, phase) in PHASES.into_iter().enumerate() {
        if phase == Phase::Cutover
            && let Some(before) = current.as_mut()
        {
            let observed = |i: usize| before[i].is(crate::config::GROUP, observed::KIND);
            take_snapshots(&mut pending, &mut changed, before, observed);
            clear_metallb_pods(before);
        }
        let one = LoadBalancerAnnouncerSpec {
            announcer: Some(Announcer::Cilium),
            phase,
            orchestrate: None,
            ..spec.clone()
        };
        let input: &[Value] = current.as_deref().unwrap_or(items);
        let outcome = super::super::run(&one, input, fc);
        let errors = keep_results(outcome.results, phase, &mut warnings);
        if !errors.is_empty() {
            let mut errors = errors;
            errors.extend(warnings);
            return Err(errors);
        }
        let removed: Vec<Key> = outcome
            .edits
            .iter()
            .filter_map(|e| match e {
                Edit::Remove { index } => input.get(*index).map(key),
                _ => None,
            })
            .collect();
        let edited: BTreeSet<usize> = outcome.edits.iter().filter_map(edit_index).collect();
        take_snapshots(&mut pending, &mut changed, input, |i| edited.contains(&i));
        let input_len = input.len();
        let mut next = match current.take() {
            Some(next) => next,
            None => first_copy(items, &outcome.edits),
        };
        let origins = crate::krm::apply::apply(&mut next, outcome.edits).map_err(|e| vec![e])?;
        follow_moves(&mut pending, &origins, input_len);
        let last = phase == Phase::Cutover;
        if last {
            expected = Some(ExpectedState::of(&next));
        }
        let mut changes = PhaseChanges::default();
        for (j, origin) in origins.iter().enumerate() {
            // `None`: replaced, patched or added by this phase.
            if origin.is_none() {
                let k = key(&next[j]);
                if last {
                    // After the last phase the items are not needed whole any more: move them.
                    changes.insert(k, Some(std::mem::take(&mut next[j])));
                } else {
                    changes.insert(k.clone(), Some(Value::Null));
                    pending.push(Pending {
                        phase: p,
                        key: k,
                        index: j,
                    });
                }
            }
        }
        for k in removed {
            changes.insert(k, None);
        }
        changed.push(changes);
        current = Some(next);
    }
    // What no later phase changed is the final content: moved, not copied.
    let mut last = current.unwrap_or_default();
    for pend in pending {
        let content = std::mem::take(&mut last[pend.index]);
        changed[pend.phase].insert(pend.key, Some(content));
    }
    let [prepare, stop, cutover]: [PhaseChanges; 3] =
        changed.try_into().ok().expect("three phases");
    Ok(Stages {
        changed: [prepare, stop, cutover],
        expected: expected.expect("phase cutover ran"),
        warnings,
    })
}

/// An item a phase changed whose content is still the current one at `index`: its snapshot is
/// taken when a later phase is about to change it, or moved at the end.
struct Pending {
    phase: usize,
    key: Key,
    index: usize,
}

/// Points the pending snapshots at where their items are after a phase's edits. The items they
/// point at were not edited (their snapshots were taken before), so they moved, if anything.
fn follow_moves(pending: &mut [Pending], origins: &[Option<usize>], input_len: usize) {
    let mut moved_to = vec![usize::MAX; input_len];
    for (j, origin) in origins.iter().enumerate() {
        if let Some(old) = *origin {
            moved_to[old] = j;
        }
    }
    for pend in pending {
        pend.index = moved_to[pend.index];
    }
}

/// Copies into their phase's changes the pending snapshots of the items `about_to_change`.
fn take_snapshots(
    pending: &mut Vec<Pending>,
    changed: &mut [PhaseChanges],
    items: &[Value],
    about_to_change: impl Fn(usize) -> bool,
) {
    pending.retain(|pend| {
        if !about_to_change(pend.index) {
            return true;
        }
        changed[pend.phase].insert(pend.key.clone(), Some(items[pend.index].clone()));
        false
    });
}

/// The input item an edit changes.
fn edit_index(edit: &Edit) -> Option<usize> {
    match edit {
        Edit::Replace { index, .. } | Edit::Patch { index, .. } | Edit::Remove { index } => {
            Some(*index)
        }
        Edit::Add { .. } => None,
    }
}

/// The first phase's items to apply its edits to: a copy of the input, but for the items it
/// replaces or removes, which need no copy (an empty placeholder goes in their place).
fn first_copy(items: &[Value], edits: &[Edit]) -> Vec<Value> {
    let gone: BTreeSet<usize> = edits
        .iter()
        .filter_map(|e| match e {
            Edit::Replace { index, .. } | Edit::Remove { index } => Some(*index),
            _ => None,
        })
        .collect();
    items
        .iter()
        .enumerate()
        .map(|(i, item)| {
            if gone.contains(&i) {
                Value::Null
            } else {
                item.clone()
            }
        })
        .collect()
}

/// Sorts a phase run's results: its errors (returned), its warnings (added to `warnings`, each
/// message once); what only concerns hand-applied phases is dropped.
fn keep_results(
    results: Vec<KrmResult>,
    phase: Phase,
    warnings: &mut Vec<KrmResult>,
) -> Vec<KrmResult> {
    let mut errors = Vec::new();
    for mut r in results {
        // The phase order is the chain's own; the next step is the next Kustomization.
        let check = r.tags.get("check").map(String::as_str);
        if [Check::PhaseOrder, Check::NextStep, Check::Outcome]
            .iter()
            .any(|c| c.is(check))
        {
            continue;
        }
        // "Apply the Services and the pools with one Kustomization": the chain does (both
        // are in the prepare payload), so Flux applies the pins first.
        let pins_first = Check::Transitions.is(check)
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
    errors
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
    let inputs: BTreeMap<Key, usize> = items.iter().enumerate().map(|(i, v)| (key(v), i)).collect();
    let mut placement = Placement::default();
    for (index, item) in items.iter().enumerate() {
        if is_chain_object(item) || item.is(crate::config::GROUP, observed::KIND) {
            continue;
        }
        let k = key(item);
        let versions: Vec<Option<&Value>> = (0..PHASES.len())
            .map(|p| stages.version(p, &k, Some(item)))
            .collect();
        let first = versions
            .iter()
            .position(|v| v.is_none_or(|v| !same(v, item)));
        let Some(p) = first else { continue };
        let phase = PHASES[p];
        match versions[p] {
            Some(v) if phase == Phase::Prepare && versions[1].is_none_or(|w| !same(w, v)) => {
                placement.split.push((index, phase, Phase::StopSpeaker));
            }
            Some(v) if phase != Phase::Cutover => {
                let last = versions[2];
                if last.is_none_or(|l| !same(l, v)) {
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
    // Objects a phase creates: not in the input, not there after the phase before.
    for (p, changes) in stages.changed.iter().enumerate() {
        for (k, v) in &changes.entries {
            let Some(v) = v else { continue };
            let earlier = p > 0 && stages.version(p - 1, k, None).is_some();
            if !inputs.contains_key(k) && !earlier {
                placement.added.push((PHASES[p], v.clone()));
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

    /// The stages of three whole item lists (what the phases left), as changes against `items`.
    fn stages(items: &[Value], after: [Vec<Value>; 3]) -> Stages {
        let mut before: Vec<Value> = items.to_vec();
        let changed = after.map(|now| {
            let mut changes = PhaseChanges::default();
            let was: BTreeMap<Key, &Value> = before.iter().map(|i| (key(i), i)).collect();
            for item in &now {
                if was.get(&key(item)) != Some(&item) {
                    changes.insert(key(item), Some(item.clone()));
                }
            }
            let is: std::collections::BTreeSet<Key> = now.iter().map(key).collect();
            for k in was.keys().filter(|k| !is.contains(*k)) {
                changes.insert(k.clone(), None);
            }
            before = now;
            changes
        });
        Stages {
            changed,
            expected: ExpectedState::of(&[]),
            warnings: Vec::new(),
        }
    }

    #[test]
    fn the_first_phase_that_changes_an_object_owns_it() {
        let items = vec![svc("a", "0"), svc("b", "0"), svc("c", "0")];
        let s = stages(
            &items,
            [
                vec![svc("a", "1"), svc("b", "0"), svc("c", "0"), svc("new", "0")],
                vec![svc("a", "1"), svc("b", "2"), svc("c", "0"), svc("new", "0")],
                vec![
                    svc("a", "3"),
                    svc("b", "2"),
                    svc("new", "0"),
                    svc("pol", "0"),
                ],
            ],
        );
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
        let s = stages(
            &items,
            [
                vec![svc("a", "1")],
                vec![svc("a", "2")],
                vec![svc("a", "2")],
            ],
        );
        let p = place(&items, &s);
        assert_eq!(p.split, [(0, Phase::Prepare, Phase::StopSpeaker)]);
        assert!(p.moved.is_empty());
    }
}
