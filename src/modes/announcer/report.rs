//! How the mode reports: plan mode (`announcer: metallb`) and the description of Service rewrites.

use std::collections::BTreeMap;

use serde_yaml::{Mapping, Value};

use super::Check;
use super::config::Phase;
use crate::krm::annotations::is_orchestrator_annotation;
use crate::krm::{Edit, KrmObject, KrmResult, Outcome, PatchOp, Severity};

/// Plan mode (`announcer: metallb`): no edit at all. Every edit becomes an info result saying what
/// `cilium` would do, and errors become warnings tagged `planSeverity: error` — MetalLB stays in
/// charge, so a pipeline that runs the platform default must not fail on a cutover nobody asked
/// for, yet the reviewer sees exactly what blocks it.
pub(super) fn as_plan(outcome: Outcome) -> Outcome {
    let mut results = Vec::new();
    for mut r in outcome.results {
        if r.severity == Severity::Error {
            r.severity = Severity::Warning;
            r.tags.insert("planSeverity".into(), "error".into());
        }
        r.message = format!("plan: {}", r.message);
        r.tags.insert("plan".into(), "true".into());
        // A plan shows all three phases at once.
        r.tags.remove("phase");
        results.push(r);
    }
    if !outcome.edits.is_empty() {
        results.push(
            KrmResult::info(
                "plan: announcer cilium applies this in three phases: prepare (pools, Service annotations, \
                 Cilium values), stop-speaker (MetalLB speaker stopped), cutover (L2 policies, MetalLB removed)",
            )
            .tag("check", Check::Plan)
            .tag("plan", "true"),
        );
    }
    for edit in outcome.edits {
        let r = match edit {
            Edit::Add { item } => {
                let mut shown = item.clone();
                strip_orchestrator(&mut shown);
                KrmResult::info(format!(
                    "plan: announcer cilium would add {} {}",
                    item.kind(),
                    item.name()
                ))
                .about_ref(item.resource_ref())
                .field("spec")
                .proposed(shown.get("spec").cloned().unwrap_or(Value::Null))
            }
            // Removals and changes are already described, item by item, by the results above.
            Edit::Replace { .. } | Edit::Patch { .. } | Edit::Remove { .. } => continue,
        };
        results.push(r.tag("check", Check::GeneratedObjects).tag("plan", "true"));
    }
    Outcome {
        edits: Vec::new(),
        results,
    }
}

/// The lines plan mode adds to stderr: its summaries (the infos about no object in particular),
/// one line each. Its warnings (findings, and errors downgraded for the plan) are written there
/// by the engine, as every mode's are.
pub(super) fn plan_lines(outcome: &Outcome) -> Vec<String> {
    outcome
        .results
        .iter()
        .filter(|r| r.tags.get("plan").is_some_and(|p| p == "true"))
        .filter(|r| r.severity == Severity::Info && r.resource_ref.is_none())
        .map(|r| format!("cutover: {r}"))
        .collect()
}

/// Info result describing a Service rewrite (`ops`, from [`super::services::patch`]): the keys
/// added, changed and removed. `old` holds the Service's labels and annotations (see
/// [`super::service::LbService::meta`]); the caller names the Service.
pub(super) fn service_change(
    old: &Value,
    ops: &[PatchOp],
    phase: Phase,
    pool_label: &str,
) -> KrmResult {
    // Only the labels and annotations are compared: copy those, not the Service.
    let new = &super::services::patched_metadata(old, &["labels", "annotations"], ops);
    let map = |v: &Value, key: &str| -> BTreeMap<String, String> {
        v.get("metadata")
            .and_then(|m| m.get(key))
            .and_then(Value::as_mapping)
            .into_iter()
            .flatten()
            .filter_map(|(k, v)| Some((k.as_str()?.to_owned(), v.as_str()?.to_owned())))
            .filter(|(k, _)| !is_orchestrator_annotation(k))
            .collect()
    };
    let (old_ann, new_ann) = (map(old, "annotations"), map(new, "annotations"));
    let mut set = Mapping::new();
    for (k, v) in &new_ann {
        if old_ann.get(k) != Some(v) {
            set.insert(k.as_str().into(), v.as_str().into());
        }
    }
    let removed: Vec<&str> = old_ann
        .keys()
        .filter(|k| !new_ann.contains_key(*k))
        .map(String::as_str)
        .collect();
    let mut parts = Vec::new();
    if !set.is_empty() {
        parts.push(format!(
            "annotations set: {}",
            set.keys()
                .filter_map(Value::as_str)
                .collect::<Vec<_>>()
                .join(", ")
        ));
    }
    if let Some(label) = map(new, "labels").get(pool_label)
        && map(old, "labels").get(pool_label) != Some(label)
    {
        parts.push(format!("label {pool_label}={label}"));
    }
    if !removed.is_empty() {
        parts.push(format!(
            "MetalLB annotations removed: {}",
            removed.join(", ")
        ));
    } else if phase != Phase::Cutover {
        parts.push("MetalLB annotations kept until phase cutover".into());
    }
    let r = KrmResult::info(format!(
        "Service rewritten for Cilium LB-IPAM: {}",
        parts.join("; ")
    ))
    .field("metadata.annotations");
    if set.is_empty() {
        r
    } else {
        r.proposed(Value::Mapping(set))
    }
}

pub(super) fn strip_orchestrator(item: &mut Value) {
    if let Some(meta) = item.get_mut("metadata").and_then(Value::as_mapping_mut) {
        let mut empty = false;
        if let Some(ann) = meta.get_mut("annotations").and_then(Value::as_mapping_mut) {
            ann.retain(|k, _| !k.as_str().is_some_and(is_orchestrator_annotation));
            empty = ann.is_empty();
        }
        if empty {
            meta.remove("annotations");
        }
    }
}
