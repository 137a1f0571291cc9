//! Reconciling the desired unit with the items an earlier run generated: unchanged objects are
//! left alone (byte-identical), changed ones replaced in place, stale ones removed; plus the
//! `dependsOn` entry on the gated Kustomization.

use std::collections::BTreeMap;

use serde_yaml::{Mapping, Value};

use super::check::Check;
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
                        .tag("check", Check::Unit),
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
                        .tag("check", Check::Unit),
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
            .tag("check", Check::Unit),
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
            .tag("check", Check::Unit),
        );
        out.edits.push(Edit::Remove { index: i });
    }
    if let Some(index) = gated {
        remove_depends_on(index, &items[index], "because the gate is closed", out);
    }
}

/// Removes our entry from the gated Kustomization's `spec.dependsOn` (and the key when it was the
/// only entry). A `dependsOn` on a unit that is gone would keep metallb from ever reconciling.
pub fn remove_depends_on(index: usize, item: &Value, reason: &str, out: &mut Outcome) {
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
        KrmResult::info(format!("removed dependsOn {UNIT} {reason}"))
            .about(item)
            .field("spec.dependsOn")
            .tag("check", Check::DependsOn),
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
        .tag("check", Check::DependsOn),
    );
    out.edits.push(Edit::Replace {
        index,
        item: updated,
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    fn v(src: &str) -> Value {
        serde_yaml::from_str(src).unwrap()
    }

    const GEN: &str = "apiVersion: apps/v1\nkind: DaemonSet\nmetadata:\n  name: metallb-image-prepull\n  annotations:\n    fn.cutover.dev/generated-by: metallb-image-prepull\n";

    #[test]
    fn unchanged_objects_get_no_edit_changed_ones_keep_identity_annotations() {
        let mut existing = v(&format!(
            "{GEN}    config.k8s.io/id: '4'\n    internal.config.kubernetes.io/path: x.yaml\nspec: {{a: 1}}\n"
        ));
        let items = vec![existing.clone()];
        let inputs = Inputs::scan(&items, None, "metallb");
        let mut out = Outcome::default();
        let same = v(&format!("{GEN}spec: {{a: 1}}\n"));
        assert!(!apply_unit(&items, &inputs, vec![same], &mut out));
        assert!(out.edits.is_empty());
        let changed = v(&format!("{GEN}spec: {{a: 2}}\n"));
        assert!(apply_unit(&items, &inputs, vec![changed], &mut out));
        let Edit::Replace { index: 0, item } = &out.edits[0] else {
            panic!("{:?}", out.edits)
        };
        assert_eq!(item.annotation("config.k8s.io/id"), Some("4"));
        assert_eq!(item["spec"]["a"], 2);
        // Stale generated objects are removed.
        existing["metadata"]["name"] = "old".into();
        let items = vec![existing];
        let inputs = Inputs::scan(&items, None, "metallb");
        let mut out = Outcome::default();
        apply_unit(&items, &inputs, Vec::new(), &mut out);
        assert_eq!(out.edits, vec![Edit::Remove { index: 0 }]);
    }

    #[test]
    fn depends_on_is_added_once_and_removed_cleanly() {
        let metallb = v(
            "kind: Kustomization\nmetadata: {name: metallb, namespace: ns}\nspec: {interval: 1h}\n",
        );
        let mut out = Outcome::default();
        add_depends_on(0, &metallb, &mut out);
        let Edit::Replace { item, .. } = &out.edits[0] else {
            panic!()
        };
        assert_eq!(
            item["spec"]["dependsOn"],
            v("[{name: metallb-image-prepull}]")
        );
        let mut again = Outcome::default();
        add_depends_on(0, item, &mut again);
        assert!(again.edits.is_empty(), "no duplicate");
        // An entry in another namespace is someone else's.
        let other = v(
            "kind: Kustomization\nmetadata: {name: metallb, namespace: ns}\nspec: {dependsOn: [{name: metallb-image-prepull, namespace: elsewhere}]}\n",
        );
        let mut out2 = Outcome::default();
        add_depends_on(0, &other, &mut out2);
        assert_eq!(out2.edits.len(), 1);
        // Removal drops the key it created.
        let items = vec![item.clone()];
        let inputs = Inputs::scan(&items, None, "metallb");
        let mut removed = Outcome::default();
        remove_unit(&items, &inputs, Some(0), &mut removed);
        let Edit::Replace { item: back, .. } = &removed.edits[0] else {
            panic!()
        };
        assert_eq!(back, &metallb);
    }
}
