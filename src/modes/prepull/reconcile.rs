//! Reconciling the desired unit with the items an earlier run generated: unchanged objects are
//! left alone (byte-identical), changed ones replaced in place, stale ones removed; plus the
//! `dependsOn` entry on the gated Kustomization.

use std::collections::BTreeMap;

use serde_yaml::{Mapping, Value};

use super::inputs::{Inputs, UNIT};
use crate::krm::annotations::{LOCAL_CONFIG, is_orchestrator_annotation};
use crate::krm::{Edit, KrmObject, KrmResult, Outcome};

/// Identity of a generated object across runs.
fn key(item: &Value) -> (String, String, Option<String>, String) {
    (
        item.group().to_owned(),
        item.kind().to_owned(),
        item.namespace().map(str::to_owned),
        item.name().to_owned(),
    )
}

/// The object without the annotations orchestrators add (path, index, ids), for comparison.
fn without_orchestrator_annotations(item: &Value) -> Value {
    let mut copy = item.clone();
    if let Some(meta) = copy.get_mut("metadata").and_then(Value::as_mapping_mut) {
        let empty = match meta.get_mut("annotations").and_then(Value::as_mapping_mut) {
            Some(annotations) => {
                annotations.retain(|k, _| !k.as_str().is_some_and(is_orchestrator_annotation));
                annotations.is_empty()
            }
            None => false,
        };
        if empty {
            meta.remove("annotations");
        }
    }
    copy
}

/// Keeps the orchestrator annotations (ids, kpt's internal keys) of the item being replaced.
fn carry_annotations(mut desired: Value, existing: &Value) -> Value {
    let existing_annotations = existing
        .get("metadata")
        .and_then(|m| m.get("annotations"))
        .and_then(Value::as_mapping);
    if let (Some(from), Some(to)) = (
        existing_annotations,
        desired
            .get_mut("metadata")
            .and_then(|m| m.get_mut("annotations"))
            .and_then(Value::as_mapping_mut),
    ) {
        for (k, v) in from {
            if k.as_str().is_some_and(is_orchestrator_annotation) && !to.contains_key(k) {
                to.insert(k.clone(), v.clone());
            }
        }
    }
    desired
}

/// `Flux Kustomization sylva-system/metallb-image-prepull`, `DaemonSet metallb-system/...`: the
/// two Kustomization kinds are told apart.
fn describe(item: &Value) -> String {
    let kind = match (item.group(), item.kind()) {
        ("kustomize.toolkit.fluxcd.io", "Kustomization") => "Flux Kustomization",
        ("kustomize.config.k8s.io", "Kustomization") => "kustomize Kustomization",
        (_, kind) => kind,
    };
    match item.namespace() {
        Some(ns) => format!("{kind} {ns}/{}", item.name()),
        None => format!("{kind} {}", item.name()),
    }
}

/// Emits the edits that turn the previously generated items into `desired`. Returns true when
/// anything changes.
pub fn apply_unit(
    items: &[Value],
    inputs: &Inputs,
    desired: Vec<Value>,
    out: &mut Outcome,
) -> bool {
    let mut existing: BTreeMap<_, usize> = BTreeMap::new();
    for &i in &inputs.generated {
        existing.insert(key(&items[i]), i);
    }
    let mut changed = false;
    for object in desired {
        match existing.remove(&key(&object)) {
            Some(i)
                if without_orchestrator_annotations(&items[i])
                    == without_orchestrator_annotations(&object) => {}
            Some(i) => {
                out.push(
                    KrmResult::info(format!("updated {}", describe(&object)))
                        .about(&object)
                        .tag("check", "unit"),
                );
                out.edits.push(Edit::Replace {
                    index: i,
                    item: carry_annotations(object, &items[i]),
                });
                changed = true;
            }
            None => {
                out.push(
                    KrmResult::info(format!("added {}", describe(&object)))
                        .about(&object)
                        .tag("check", "unit"),
                );
                out.edits.push(Edit::Add { item: object });
                changed = true;
            }
        }
    }
    for (_, i) in existing {
        out.push(
            KrmResult::info(format!(
                "removed stale {} (no longer part of the unit)",
                describe(&items[i])
            ))
            .about(&items[i])
            .tag("check", "unit"),
        );
        out.edits.push(Edit::Remove { index: i });
        changed = true;
    }
    changed
}

/// Gate closed: removes everything an earlier run generated and the `dependsOn` entry, so Flux
/// prunes the unit and no pause pods linger.
pub fn remove_unit(items: &[Value], inputs: &Inputs, gated: Option<usize>, out: &mut Outcome) {
    for &i in &inputs.generated {
        out.push(
            KrmResult::info(format!(
                "removed {} because the gate is closed{}",
                describe(&items[i]),
                if items[i].annotation(LOCAL_CONFIG) == Some("true") {
                    ""
                } else {
                    " (once this output is applied, Flux prunes it from the cluster)"
                }
            ))
            .about(&items[i])
            .tag("check", "unit"),
        );
        out.edits.push(Edit::Remove { index: i });
    }
    let Some(index) = gated else {
        return;
    };
    let item = &items[index];
    let own_ns = item.namespace();
    let mut updated = item.clone();
    let Some(spec) = updated.get_mut("spec").and_then(Value::as_mapping_mut) else {
        return;
    };
    let Some(Value::Sequence(entries)) = spec.get_mut("dependsOn") else {
        return;
    };
    let before = entries.len();
    entries.retain(|e| !is_our_entry(e, own_ns));
    if entries.len() == before {
        return;
    }
    if entries.is_empty() {
        spec.remove("dependsOn");
    }
    out.push(
        KrmResult::info(format!(
            "removed dependsOn {UNIT} because the gate is closed"
        ))
        .about(item)
        .field("spec.dependsOn")
        .tag("check", "depends-on"),
    );
    out.edits.push(Edit::Replace {
        index,
        item: updated,
    });
}

fn is_our_entry(entry: &Value, own_ns: Option<&str>) -> bool {
    entry.get("name").and_then(Value::as_str) == Some(UNIT)
        && entry
            .get("namespace")
            .and_then(Value::as_str)
            .is_none_or(|ns| Some(ns) == own_ns)
}

/// Adds `{name: metallb-image-prepull}` to the gated Kustomization's `spec.dependsOn`, editing
/// its YAML in place (one list entry appended; everything else untouched). No-op when present.
pub fn add_depends_on(index: usize, item: &Value, out: &mut Outcome) {
    let own_ns = item.namespace();
    let present = item
        .get("spec")
        .and_then(|s| s.get("dependsOn"))
        .and_then(Value::as_sequence)
        .is_some_and(|entries| entries.iter().any(|e| is_our_entry(e, own_ns)));
    if present {
        return;
    }
    let mut updated = item.clone();
    let Some(spec) = updated.get_mut("spec").and_then(Value::as_mapping_mut) else {
        return;
    };
    let mut entry = Mapping::new();
    entry.insert("name".into(), UNIT.into());
    let deps = spec
        .entry("dependsOn".into())
        .or_insert_with(|| Value::Sequence(Vec::new()));
    if deps.is_null() {
        *deps = Value::Sequence(Vec::new());
    }
    if let Value::Sequence(entries) = deps {
        entries.push(Value::Mapping(entry.clone()));
    }
    out.push(
        KrmResult::info(format!(
            "Kustomization {} now waits for {UNIT} (the images are on every node before metallb reconciles)",
            item.name()
        ))
        .about(item)
        .field("spec.dependsOn")
        .proposed(Value::Mapping(entry))
        .tag("check", "depends-on"),
    );
    out.edits.push(Edit::Replace {
        index,
        item: updated,
    });
}
