//! Step `chain`: the payload directories, the chain's Kustomizations, gates and plan, as edits
//! of the items (moved objects replaced in place with their new file, created ones added, the
//! chain's own objects of an earlier run replaced or removed).

use std::collections::{BTreeMap, BTreeSet};

use serde::Serialize;
use serde_yaml::Value;

use super::super::config::Phase;
use super::chain::{self, PHASES, Placement, is_chain_object, key, mark_chain_object};
use super::flux::Unit;
use super::handover::path_of;
use super::settings::Settings;
use super::{NAME_PREFIX, flux, gate, rbac};
use crate::krm::object::set_file;
use crate::krm::{Edit, KrmObject, KrmResult, Outcome};
use crate::modes::announcer::expected::ExpectedState;

fn to_value<T: Serialize>(obj: &T) -> Value {
    serde_yaml::to_value(obj).expect("k8s objects serialize to YAML")
}

/// The file of a moved or created object: one object a file, named after it.
fn object_file(settings: &Settings, phase: Phase, item: &Value) -> String {
    let mut name = item.kind().to_lowercase();
    if let Some(ns) = item.namespace() {
        name.push('-');
        name.push_str(ns);
    }
    name.push('-');
    name.push_str(item.name());
    let name: String = name
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' || c == '.' {
                c
            } else {
                '_'
            }
        })
        .collect();
    format!("{}/{}/{name}.yaml", settings.dir, phase.as_str())
}

fn phase_of_dir(settings: &Settings, path: &str) -> Option<Phase> {
    let rest = path.strip_prefix(&format!("{}/", settings.dir))?;
    let (dir, _) = rest.split_once('/')?;
    PHASES.into_iter().find(|p| p.as_str() == dir)
}

/// The plan the gates read: the `ObservedState` item without orchestrator annotations (the
/// observed state), then the `ExpectedState` item (the expected end state). Its keys are
/// written sorted: the plan's text names the gate Jobs (a hash of it), so equivalent inputs
/// (the same item with merge keys or its keys in another order) must give the same text.
pub(super) fn plan_text(observed_item: &Value, expected: &ExpectedState) -> String {
    let mut item = sorted_keys(observed_item);
    if let Some(Value::Mapping(a)) = item
        .get_mut("metadata")
        .and_then(|m| m.get_mut("annotations"))
    {
        a.retain(|k, _| {
            !k.as_str()
                .is_some_and(crate::krm::annotations::is_orchestrator_annotation)
        });
    }
    let observed = serde_yaml::to_string(&item).unwrap_or_default();
    let expected = serde_yaml::to_string(&expected.to_item()).unwrap_or_default();
    format!("{observed}---\n{expected}")
}

/// `value` with the keys of every mapping in it sorted (as their YAML text).
fn sorted_keys(value: &Value) -> Value {
    match value {
        Value::Mapping(m) => {
            let mut entries: Vec<(String, Value, Value)> = m
                .iter()
                .map(|(k, v)| {
                    let text = serde_yaml::to_string(k).unwrap_or_default();
                    (text, k.clone(), sorted_keys(v))
                })
                .collect();
            entries.sort_by(|a, b| a.0.cmp(&b.0));
            Value::Mapping(entries.into_iter().map(|(_, k, v)| (k, v)).collect())
        }
        Value::Sequence(s) => Value::Sequence(s.iter().map(sorted_keys).collect()),
        Value::Tagged(t) => Value::Tagged(Box::new(serde_yaml::value::TaggedValue {
            tag: t.tag.clone(),
            value: sorted_keys(&t.value),
        })),
        other => other.clone(),
    }
}

/// Step `chain`: the edits.
pub(super) fn emit(
    items: &[Value],
    placement: &Placement,
    settings: &Settings,
    plan: &str,
) -> Result<Outcome, Vec<KrmResult>> {
    let mut outcome = Outcome::default();
    let mut files = payload_files(items, settings, |index| {
        placement.moved.contains_key(&index)
    });
    for (&index, (phase, item)) in &placement.moved {
        let path = object_file(settings, *phase, item);
        let mut item = item.clone();
        set_file(&mut item, &path, 0);
        outcome.results.push(
            KrmResult::info(format!(
                "{} is applied by Kustomization {} from {path}",
                item.object_ref(),
                flux::unit_name(*phase)
            ))
            .about(&items[index])
            .tag("phase", phase.as_str()),
        );
        files.entry(*phase).or_default().insert(path);
        outcome.edits.push(Edit::Replace { index, item });
    }
    for (phase, item) in &placement.added {
        let path = object_file(settings, *phase, item);
        let mut item = item.clone();
        set_file(&mut item, &path, 0);
        outcome.results.push(
            KrmResult::info(format!(
                "{} is created by Kustomization {} from {path}",
                item.object_ref(),
                flux::unit_name(*phase)
            ))
            .about(&item)
            .tag("phase", phase.as_str()),
        );
        files.entry(*phase).or_default().insert(path);
        outcome.edits.push(Edit::Add { item });
    }
    for (index, what) in &placement.deferred {
        outcome.results.push(
            KrmResult::info(format!(
                "{}: {what} is left to the cleanup commit after the chain (an object has one applier; MetalLB's \
                 objects and annotations are inert once its speaker and controller are stopped)",
                items[*index].object_ref()
            ))
            .about(&items[*index]),
        );
    }
    regenerate(items, settings, &files, plan, &CHAIN, &mut outcome)?;
    outcome.results.push(KrmResult::info(format!(
        "chain: Kustomizations {} → {} → {}, each Ready when its gate Job passes; publish {}/ at {} and commit",
        flux::unit_name(Phase::Prepare),
        flux::unit_name(Phase::StopSpeaker),
        flux::unit_name(Phase::Cutover),
        settings.dir,
        settings.path
    )));
    Ok(outcome)
}

/// The chain's Kustomizations of step `chain`.
pub(super) const CHAIN: [Unit; 3] = [
    Unit::Phase(Phase::Prepare),
    Unit::Phase(Phase::StopSpeaker),
    Unit::Phase(Phase::Cutover),
];

/// The files of the objects already in a phase directory and left as they are, except the
/// items `skip` names (moved or removed by this run).
pub(super) fn payload_files(
    items: &[Value],
    settings: &Settings,
    skip: impl Fn(usize) -> bool,
) -> BTreeMap<Phase, BTreeSet<String>> {
    let mut files: BTreeMap<Phase, BTreeSet<String>> = BTreeMap::new();
    for (index, item) in items.iter().enumerate() {
        if is_chain_object(item) || skip(index) {
            continue;
        }
        if let Some(path) = path_of(item)
            && let Some(phase) = phase_of_dir(settings, path)
        {
            files.entry(phase).or_default().insert(path.to_owned());
        }
    }
    files
}

/// The chain's own objects for `units` (in `dependsOn` order) and the payload `files`, as
/// edits: those of an earlier run replaced in place, new ones added, stale ones removed.
pub(super) fn regenerate(
    items: &[Value],
    settings: &Settings,
    files: &BTreeMap<Phase, BTreeSet<String>>,
    plan: &str,
    units: &[Unit],
    outcome: &mut Outcome,
) -> Result<(), Vec<KrmResult>> {
    let generated = chain_objects(settings, files, plan, units);
    check_names(items, &generated)?;
    reconcile_chain_objects(items, generated, outcome);
    Ok(())
}

/// An object of the package with the name of one the chain generates would have two appliers.
fn check_names(items: &[Value], generated: &[Value]) -> Result<(), Vec<KrmResult>> {
    let names: BTreeSet<chain::Key> = generated.iter().map(key).collect();
    let errors: Vec<KrmResult> = items
        .iter()
        .filter(|i| !is_chain_object(i) && names.contains(&key(i)))
        .map(|item| {
            KrmResult::error(format!(
                "{} has the name of an object the chain generates: both would be applied, by two Kustomizations; \
                 rename it, or choose other orchestrate namespaces",
                item.object_ref()
            ))
            .about(item)
            .field("metadata.name")
        })
        .collect();
    if errors.is_empty() {
        Ok(())
    } else {
        Err(errors)
    }
}

/// Every object the chain generates, with its file.
fn chain_objects(
    settings: &Settings,
    files: &BTreeMap<Phase, BTreeSet<String>>,
    plan: &str,
    units: &[Unit],
) -> Vec<Value> {
    let dir = &settings.dir;
    let mut out = Vec::new();
    let mut push = |mut v: Value, path: String, index: usize| {
        mark_chain_object(&mut v);
        set_file(&mut v, &path, index);
        out.push(v);
    };
    let chain_file = format!("{dir}-chain.yaml");
    let access = rbac::access(settings, plan);
    let access_file = format!("{dir}/{}/gate-access.yaml", Phase::Prepare.as_str());
    push(to_value(&access.namespace), access_file.clone(), 0);
    push(to_value(&access.account), access_file.clone(), 1);
    push(to_value(&access.role), access_file.clone(), 2);
    push(to_value(&access.binding), access_file.clone(), 3);
    push(to_value(&access.plan), access_file, 4);
    push(
        to_value(&flux::kustomize_file(NAME_PREFIX, Vec::new())),
        format!("{dir}/kustomization.yaml"),
        0,
    );
    let mut after = None;
    for (i, &phase) in units.iter().enumerate() {
        let job = gate::job(settings, phase, plan);
        let job_name = job.metadata.name.clone().unwrap_or_default();
        let phase_dir = format!("{dir}/{}", phase.as_str());
        let own = match phase {
            Unit::Phase(p) => files.get(&p),
            Unit::Cleanup => None,
        };
        let mut resources: Vec<String> = own
            .into_iter()
            .flatten()
            .filter_map(|p| p.strip_prefix(&format!("{phase_dir}/")).map(str::to_owned))
            .collect();
        if phase == Unit::Phase(Phase::Prepare) {
            resources.push("gate-access.yaml".into());
        }
        resources.push("gate.yaml".into());
        resources.sort();
        push(to_value(&job), format!("{phase_dir}/gate.yaml"), 0);
        push(
            to_value(&flux::kustomize_file(&flux::unit_name(phase), resources)),
            format!("{phase_dir}/kustomization.yaml"),
            0,
        );
        push(
            to_value(&flux::unit(settings, phase, after, &job_name)),
            chain_file.clone(),
            i,
        );
        after = Some(phase);
    }
    out
}

/// Replaces the chain objects of an earlier run in place, adds new ones, removes stale ones.
fn reconcile_chain_objects(items: &[Value], generated: Vec<Value>, outcome: &mut Outcome) {
    let mut existing: BTreeMap<chain::Key, usize> = items
        .iter()
        .enumerate()
        .filter(|(_, i)| is_chain_object(i))
        .map(|(index, i)| (key(i), index))
        .collect();
    for item in generated {
        match existing.remove(&key(&item)) {
            Some(index) if items[index] == item => {}
            Some(index) => outcome.edits.push(Edit::Replace { index, item }),
            None => outcome.edits.push(Edit::Add { item }),
        }
    }
    for index in existing.into_values() {
        outcome.results.push(
            KrmResult::info(format!(
                "removed {}: the chain no longer generates it (Flux prunes it)",
                items[index].object_ref()
            ))
            .about(&items[index]),
        );
        outcome.edits.push(Edit::Remove { index });
    }
}
