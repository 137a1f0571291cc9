//! What the new Flux unit copies from its siblings (namespace, intervals, ordering roots, and via
//! [`siblings`] its labels, revision and kubeConfig), and where its files go in the package.

use serde_yaml::Value;

use super::inputs::{FLUX_KUSTOMIZE_GROUP, Inputs, UNIT};
use super::render::UnitSettings;
use super::siblings::{self, ROOT_DEPENDENCY_PREFIX};
use super::source::Payload;
use crate::krm::annotations::{INTERNAL_PATH, PATH};
use crate::krm::{KrmObject, KrmResult};

/// A validated `spec.dependsOn` of the gated Kustomization.
#[derive(Debug, Clone, PartialEq)]
pub struct DependsOn<'a> {
    /// The entries, as written.
    pub entries: &'a [Value],
}

/// Reads and validates `spec.dependsOn` of a Flux Kustomization.
pub fn depends_on(item: &Value) -> Result<DependsOn<'_>, KrmResult> {
    let err = |message: String, field: String| KrmResult::error(message).about(item).field(field);
    let entries: &[Value] = match item.get("spec").and_then(|s| s.get("dependsOn")) {
        None | Some(Value::Null) => &[],
        Some(Value::Sequence(s)) => s,
        Some(other) => {
            return Err(err(
                format!(
                    "spec.dependsOn must be a list of {{name, namespace}} entries, found {}",
                    super::values::type_name(other)
                ),
                "spec.dependsOn".into(),
            ));
        }
    };
    for (i, entry) in entries.iter().enumerate() {
        let ok = entry.as_mapping().is_some_and(|m| {
            m.get("name")
                .and_then(Value::as_str)
                .is_some_and(|n| !n.is_empty())
                && m.get("namespace").is_none_or(|ns| ns.as_str().is_some())
        });
        if !ok {
            return Err(err(
                "malformed dependsOn entry: expected a mapping with a non-empty string name (and optional string namespace)".into(),
                format!("spec.dependsOn[{i}]"),
            )
            .current(entry.clone()));
        }
    }
    Ok(DependsOn { entries })
}

fn string_at(item: &Value, key: &str) -> Option<String> {
    item.get("spec")?.get(key)?.as_str().map(str::to_owned)
}

fn item_path(item: &Value) -> Option<&str> {
    item.annotation(INTERNAL_PATH)
        .or_else(|| item.annotation(PATH))
}

/// Objects this mode did not generate must not live in the payload directory: the unit would
/// apply them, and a gate closing would not remove them.
pub fn check_payload_dir(items: &[Value], inputs: &Inputs, dir: &str) -> Result<(), KrmResult> {
    let prefix = format!("{dir}/");
    let generated: std::collections::HashSet<usize> = inputs.generated.iter().copied().collect();
    for (i, item) in items.iter().enumerate() {
        if generated.contains(&i) || Some(i) == inputs.function_config {
            continue;
        }
        if item_path(item).is_some_and(|p| p.starts_with(&prefix)) {
            return Err(KrmResult::error(format!(
                "{dir} already holds {} which this mode did not generate: choose another spec.payloadDir",
                item.object_ref()
            ))
            .about(item));
        }
    }
    Ok(())
}

/// Gathers the settings of the new unit (rendered form).
pub fn settings(
    payload: &Payload,
    items: &[Value],
    inputs: &Inputs,
    gated: Option<&Value>,
) -> Result<UnitSettings, KrmResult> {
    let payload_dir = payload.dir.clone();
    let mut flux_file: Option<(String, usize)> = None;
    for &i in &inputs.generated {
        let item = &items[i];
        if item.is(FLUX_KUSTOMIZE_GROUP, "Kustomization") && item.name() == UNIT {
            flux_file = item
                .file_ref()
                .map(|f| (f.path, usize::try_from(f.index).unwrap_or(0)));
        }
    }
    let flux_path = match flux_file.as_ref() {
        Some((path, _)) => path.clone(),
        None => {
            let dir = gated
                .and_then(KrmObject::file_ref)
                .and_then(|f| f.path.rsplit_once('/').map(|(d, _)| d.to_owned()));
            match dir {
                Some(d) => format!("{d}/{UNIT}.yaml"),
                None => format!("{UNIT}.yaml"),
            }
        }
    };
    check_payload_dir(items, inputs, &payload_dir)?;
    // The Flux Kustomization takes the first free index of its file.
    let generated: std::collections::HashSet<usize> = inputs.generated.iter().copied().collect();
    let mut used = std::collections::BTreeSet::new();
    for (i, item) in items.iter().enumerate() {
        if generated.contains(&i) || Some(i) == inputs.function_config {
            continue;
        }
        if item_path(item) == Some(flux_path.as_str())
            && let Some(f) = item.file_ref()
        {
            used.insert(f.index);
        }
    }
    let flux_file = match flux_file {
        Some((path, index)) if !used.contains(&(index as u64)) => (path, index),
        _ => {
            let free = (0u64..).find(|i| !used.contains(i)).unwrap_or(0);
            (flux_path, usize::try_from(free).unwrap_or(0))
        }
    };
    let depends_on = match gated {
        Some(g) => depends_on(g)?
            .entries
            .iter()
            .filter(|e| {
                e.get("name")
                    .and_then(Value::as_str)
                    .is_some_and(|n| n.starts_with(ROOT_DEPENDENCY_PREFIX))
            })
            .cloned()
            .collect(),
        None => Vec::new(),
    };
    let (identity, kube_config) = match gated {
        Some(g) => (
            siblings::identity(items, inputs, g)?,
            siblings::kube_config(items, inputs, g)?,
        ),
        None => Default::default(),
    };
    Ok(UnitSettings {
        flux_namespace: gated.and_then(|g| g.namespace().map(str::to_owned)),
        identity,
        interval: gated
            .and_then(|g| string_at(g, "interval"))
            .unwrap_or_else(|| "24h".into()),
        retry_interval: gated
            .and_then(|g| string_at(g, "retryInterval"))
            .or_else(|| gated.is_none().then(|| "1m".into())),
        force: gated
            .and_then(|g| g.get("spec")?.get("force")?.as_bool())
            .unwrap_or(false),
        source_ref: payload
            .source_ref
            .clone()
            .expect("the rendered form always has a sourceRef"),
        path: payload.path.clone(),
        depends_on,
        kube_config,
        payload_dir,
        flux_file,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    use super::super::config::{SourceKind, SourceRef};
    use super::super::test_support::docs;

    fn payload() -> Payload {
        Payload {
            dir: "metallb-image-prepull".into(),
            path: "./clusters/mgmt/metallb-image-prepull".into(),
            source_ref: Some(SourceRef {
                kind: SourceKind::OCIRepository,
                name: "platform".into(),
                namespace: None,
            }),
            repo: None,
        }
    }

    #[test]
    fn settings_copy_siblings() {
        let items = docs(
            "apiVersion: kustomize.toolkit.fluxcd.io/v1\nkind: Kustomization\nmetadata:\n  name: metallb\n  namespace: sylva-system\n  labels: {sylva-units.unit: metallb, common: x, sylva-units/protected: ''}\n  annotations: {config.kubernetes.io/path: units/all.yaml, config.kubernetes.io/index: '1'}\nspec:\n  interval: 1h\n  retryInterval: 2m\n  sourceRef: {kind: OCIRepository, name: sylva-core}\n  dependsOn: [{name: root-dependency-7}, {name: cluster-vip}]\n---\n\
             apiVersion: kustomize.toolkit.fluxcd.io/v1\nkind: Kustomization\nmetadata:\n  name: other\n  labels: {sylva-units.unit: other, common: x}\n  annotations: {config.kubernetes.io/path: units/metallb-image-prepull.yaml}\nspec: {}\n",
        );
        let inputs = Inputs::scan(&items, None, "metallb");
        let s = settings(&payload(), &items, &inputs, Some(&items[0])).unwrap();
        assert_eq!(s.flux_namespace.as_deref(), Some("sylva-system"));
        assert_eq!(s.interval, "1h");
        assert_eq!(s.retry_interval.as_deref(), Some("2m"));
        assert_eq!(
            s.source_ref.name, "platform",
            "the configured source, not metallb's"
        );
        assert_eq!(s.path, "./clusters/mgmt/metallb-image-prepull");
        assert_eq!(s.depends_on.len(), 1, "only the ordering root");
        let labels = &s.identity.labels;
        assert_eq!(labels.get("common").map(String::as_str), Some("x"));
        assert_eq!(
            labels.get("sylva-units.unit").map(String::as_str),
            Some(UNIT)
        );
        assert!(!labels.contains_key("sylva-units/protected"));
        // Index 0 of the target file is taken by another object: next free index.
        assert_eq!(
            s.flux_file,
            ("units/metallb-image-prepull.yaml".to_string(), 1)
        );
        assert_eq!(s.payload_dir, "metallb-image-prepull");
    }

    #[test]
    fn depends_on_must_be_a_list_of_named_entries() {
        let bad = docs("kind: Kustomization\nspec: {dependsOn: [{name: a}, {name: 3}]}\n");
        assert_eq!(
            depends_on(&bad[0]).unwrap_err().field.unwrap().path,
            "spec.dependsOn[1]"
        );
        let bad = docs("kind: Kustomization\nspec: {dependsOn: {name: a}}\n");
        assert_eq!(
            depends_on(&bad[0]).unwrap_err().field.unwrap().path,
            "spec.dependsOn"
        );
        let good = docs("kind: Kustomization\nspec: {dependsOn: [{name: a, namespace: b}]}\n");
        assert_eq!(depends_on(&good[0]).unwrap().entries.len(), 1);
    }

    #[test]
    fn objects_of_others_in_the_payload_dir_are_an_error() {
        let items = docs(
            "apiVersion: kustomize.toolkit.fluxcd.io/v1\nkind: Kustomization\nmetadata: {name: metallb}\nspec: {sourceRef: {kind: GitRepository, name: s}}\n---\n\
             apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: mine\n  annotations: {config.kubernetes.io/path: metallb-image-prepull/cm.yaml}\n",
        );
        let inputs = Inputs::scan(&items, None, "metallb");
        let e = settings(&payload(), &items, &inputs, Some(&items[0])).unwrap_err();
        assert!(
            e.message.contains("choose another spec.payloadDir"),
            "{}",
            e.message
        );
    }
}
