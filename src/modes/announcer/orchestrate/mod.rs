//! Flux-orchestrated cutover (`spec.orchestrate`): the three phases of one run as payload
//! directories, applied by chained Flux Kustomizations, each gated by a `cutover verify` Job.
//!
//! Pipeline: settings (validated config) → chain (the phases run in order, every object given
//! to the first phase that changes it) → checks (the hand-over annotation) → edits (the
//! payloads, the Kustomizations, the gates, the plan).
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
mod config;
mod flux;
mod gate;
mod rbac;
mod settings;

use std::collections::{BTreeMap, BTreeSet};

use serde::Serialize;
use serde_yaml::Value;

pub use config::*;

use super::config::{LoadBalancerAnnouncerSpec, Phase};
use super::observed;
use crate::krm::annotations::{INTERNAL_PATH, PATH};
use crate::krm::object::{set_annotation, set_file};
use crate::krm::{Edit, KrmObject, KrmResult, Outcome};
use chain::{PHASES, Placement, is_chain_object, key, mark_chain_object};
use settings::Settings;

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
                        r.tag("check", "orchestrate")
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
    let settings = settings::resolve(orchestrate, fc).map_err(|e| vec![e])?;
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
    let mut results = stages.warnings;
    results.extend(settings::unpinned_images(orchestrate, fc));
    let mut outcome = match orchestrate.step {
        Step::Handover => handover(items, &placement, &settings),
        Step::Chain => {
            check_handed_over(items, &placement, &settings)?;
            emit(items, &placement, &settings, observed_item)?
        }
    };
    results.append(&mut outcome.results);
    for r in &mut results {
        r.tags
            .entry("check".into())
            .or_insert_with(|| "orchestrate".into());
    }
    outcome.results = results;
    Ok(outcome)
}

fn path_of(item: &Value) -> Option<&str> {
    item.annotation(INTERNAL_PATH)
        .or_else(|| item.annotation(PATH))
}

/// True when the item already lives in the payload directory (moved by an earlier run).
fn in_payload(item: &Value, settings: &Settings) -> bool {
    path_of(item).is_some_and(|p| p.starts_with(&format!("{}/", settings.dir)))
}

/// Step `handover`: `prune: disabled` on every object the chain will take over.
fn handover(items: &[Value], placement: &Placement, settings: &Settings) -> Outcome {
    let mut outcome = Outcome::default();
    for (&index, (phase, _)) in &placement.moved {
        let item = &items[index];
        if in_payload(item, settings) {
            continue;
        }
        if item.annotation(PRUNE) != Some("disabled") {
            let mut edited = item.clone();
            set_annotation(&mut edited, PRUNE, "disabled");
            outcome.edits.push(Edit::Replace {
                index,
                item: edited,
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
        "next step: commit this hand-over, let the Flux Kustomization that applies the package reconcile it (check \
         that the {} object(s) above show {PRUNE}: disabled on the cluster), then run again with \
         orchestrate.step: chain",
        placement.moved.len()
    )));
    outcome
}

/// Step `chain`: every object it moves must have been handed over.
fn check_handed_over(
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

/// The plan the gates read: the `ObservedState` item without orchestrator annotations.
fn plan_text(observed_item: &Value) -> String {
    let mut item = observed_item.clone();
    if let Some(Value::Mapping(a)) = item
        .get_mut("metadata")
        .and_then(|m| m.get_mut("annotations"))
    {
        a.retain(|k, _| {
            !k.as_str()
                .is_some_and(crate::krm::annotations::is_orchestrator_annotation)
        });
    }
    serde_yaml::to_string(&item).unwrap_or_default()
}

/// Step `chain`: the edits.
fn emit(
    items: &[Value],
    placement: &Placement,
    settings: &Settings,
    observed_item: &Value,
) -> Result<Outcome, Vec<KrmResult>> {
    let mut outcome = Outcome::default();
    let mut files: BTreeMap<Phase, BTreeSet<String>> = BTreeMap::new();
    // Objects already in a phase directory and left as they are (a second run).
    for (index, item) in items.iter().enumerate() {
        if is_chain_object(item) || placement.moved.contains_key(&index) {
            continue;
        }
        if let Some(path) = path_of(item)
            && let Some(phase) = phase_of_dir(settings, path)
        {
            files.entry(phase).or_default().insert(path.to_owned());
        }
    }
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
    let generated = chain_objects(settings, &files, &plan_text(observed_item));
    check_names(items, &generated)?;
    reconcile_chain_objects(items, generated, &mut outcome);
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
    for (i, phase) in PHASES.into_iter().enumerate() {
        let job = gate::job(settings, phase, plan);
        let job_name = job.metadata.name.clone().unwrap_or_default();
        let phase_dir = format!("{dir}/{}", phase.as_str());
        let mut resources: Vec<String> = files
            .get(&phase)
            .into_iter()
            .flatten()
            .filter_map(|p| p.strip_prefix(&format!("{phase_dir}/")).map(str::to_owned))
            .collect();
        if phase == Phase::Prepare {
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
