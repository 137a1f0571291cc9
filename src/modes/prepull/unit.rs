//! What the new Flux unit copies from its siblings: namespace, labels, intervals, source,
//! ordering roots; and where its files go in the package.

use std::collections::BTreeMap;

use serde_yaml::Value;

use super::config::{MetalLBImagePrepullSpec, SourceRef};
use super::config_field;
use super::inputs::{Inputs, SYLVA_UNIT_LABEL, UNIT};
use super::render::UnitSettings;
use crate::krm::annotations::{INTERNAL_PATH, PATH};
use crate::krm::{KrmObject, KrmResult};

/// Prefix of sylva-units' ordering lock Kustomization (`root-dependency-<release revision>`).
pub const ROOT_DEPENDENCY_PREFIX: &str = "root-dependency-";

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

/// Normalises `spec.path` (`./metallb-image-prepull` → `metallb-image-prepull`).
pub fn payload_dir(
    spec: &MetalLBImagePrepullSpec,
    fc: Option<&Value>,
) -> Result<String, KrmResult> {
    let trimmed = spec.path.trim_start_matches("./").trim_end_matches('/');
    let valid = !trimmed.is_empty()
        && trimmed != "."
        && !spec.path.starts_with('/')
        && trimmed
            .split('/')
            .all(|s| !s.is_empty() && s != "." && s != "..");
    if valid {
        Ok(trimmed.to_owned())
    } else {
        let r = KrmResult::error(format!(
            "path {:?} must be a relative directory below the package (and source) root, e.g. ./metallb-image-prepull",
            spec.path
        ))
        .field(config_field(fc, "path"))
        .current(spec.path.clone());
        Err(match fc {
            Some(fc) => r.about(fc),
            None => r,
        })
    }
}

/// Labels every sylva unit Kustomization shares (chart labels, `sylva-units/root-dependency-wait`),
/// with `sylva-units.unit` set to the new unit. Unit-specific labels such as
/// `sylva-units/protected` on metallb are deliberately not copied: a protected unit could not be
/// pruned when the gate closes.
fn sibling_labels(items: &[Value], inputs: &Inputs) -> BTreeMap<String, String> {
    let mut common: Option<BTreeMap<String, String>> = None;
    for &i in &inputs.unit_kustomizations {
        let labels: BTreeMap<String, String> = items[i]
            .get("metadata")
            .and_then(|m| m.get("labels"))
            .and_then(Value::as_mapping)
            .map(|m| {
                m.iter()
                    .filter_map(|(k, v)| Some((k.as_str()?.to_owned(), v.as_str()?.to_owned())))
                    .collect()
            })
            .unwrap_or_default();
        common = Some(match common {
            None => labels,
            Some(c) => c
                .into_iter()
                .filter(|(k, v)| labels.get(k) == Some(v))
                .collect(),
        });
    }
    let mut labels = common.unwrap_or_default();
    if !inputs.unit_kustomizations.is_empty() {
        labels.insert(SYLVA_UNIT_LABEL.into(), UNIT.into());
    }
    labels
}

fn string_at(item: &Value, key: &str) -> Option<String> {
    item.get("spec")?.get(key)?.as_str().map(str::to_owned)
}

/// Gathers the settings of the new unit.
pub fn settings(
    spec: &MetalLBImagePrepullSpec,
    items: &[Value],
    inputs: &Inputs,
    gated: Option<&Value>,
    fc: Option<&Value>,
) -> Result<UnitSettings, KrmResult> {
    let payload_dir = payload_dir(spec, fc)?;
    let source_ref = match (&spec.source_ref, gated) {
        (Some(s), _) => s.clone(),
        (None, Some(g)) => {
            let raw = g.get("spec").and_then(|s| s.get("sourceRef")).cloned();
            let parsed = raw
                .ok_or_else(|| "missing".to_string())
                .and_then(|v| serde_yaml::from_value::<SourceRef>(v).map_err(|e| e.to_string()));
            parsed.map_err(|e| {
                KrmResult::error(format!(
                    "cannot copy spec.sourceRef of Kustomization {} ({e}): set spec.sourceRef in the function config",
                    g.name()
                ))
                .about(g)
                .field("spec.sourceRef")
            })?
        }
        (None, None) => {
            let r = KrmResult::error(
                "no Kustomization to copy the sourceRef from (kustomize generator call): set sourceRef (kind, name) in the function config",
            )
            .field(config_field(fc, "sourceRef"));
            return Err(match fc {
                Some(fc) => r.about(fc),
                None => r,
            });
        }
    };
    let payload_prefix = format!("{payload_dir}/");
    let own_files = |p: &str| p.starts_with(&payload_prefix);
    let mut flux_file: Option<(String, usize)> = None;
    for &i in &inputs.generated {
        let item = &items[i];
        if item.is("kustomize.toolkit.fluxcd.io", "Kustomization") && item.name() == UNIT {
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
    // One pass over the items: other objects must not live in our payload directory, and the
    // Flux Kustomization takes the first free index of its file.
    let generated: std::collections::HashSet<usize> = inputs.generated.iter().copied().collect();
    let mut used = std::collections::BTreeSet::new();
    for (i, item) in items.iter().enumerate() {
        if generated.contains(&i) || Some(i) == inputs.function_config {
            continue;
        }
        let path = item
            .annotation(INTERNAL_PATH)
            .or_else(|| item.annotation(PATH));
        if let Some(path) = path {
            if own_files(path) {
                return Err(KrmResult::error(format!(
                    "{} already holds {} which this mode did not generate: choose another spec.path",
                    payload_dir,
                    item.object_ref()
                ))
                .about(item));
            }
            if path == flux_path
                && let Some(f) = item.file_ref()
            {
                used.insert(f.index);
            }
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
    Ok(UnitSettings {
        flux_namespace: gated.and_then(|g| g.namespace().map(str::to_owned)),
        flux_labels: sibling_labels(items, inputs),
        interval: gated
            .and_then(|g| string_at(g, "interval"))
            .unwrap_or_else(|| "24h".into()),
        retry_interval: gated
            .and_then(|g| string_at(g, "retryInterval"))
            .or_else(|| gated.is_none().then(|| "1m".into())),
        source_ref,
        depends_on,
        kube_config: gated
            .and_then(|g| g.get("spec")?.get("kubeConfig"))
            .filter(|v| !v.is_null())
            .cloned(),
        payload_dir,
        flux_file,
    })
}

/// Sylva workload clusters: kustomize units carry `spec.kubeConfig` (they apply to the workload
/// cluster) while Helm units such as `metallb` keep their Kustomization on the management cluster
/// without one. The unit copies `kubeConfig` from the gated Kustomization only, so in that layout
/// its DaemonSet would land on the management cluster: say so.
pub fn kube_config_warning(items: &[Value], inputs: &Inputs, gated: &Value) -> Option<KrmResult> {
    let has_kube_config = |item: &Value| {
        item.get("spec")
            .and_then(|s| s.get("kubeConfig"))
            .is_some_and(|k| !k.is_null())
    };
    if has_kube_config(gated) {
        return None;
    }
    let sibling = inputs
        .unit_kustomizations
        .iter()
        .map(|&i| &items[i])
        .find(|k| has_kube_config(k))?;
    Some(
        KrmResult::warning(format!(
            "Kustomization {} has no spec.kubeConfig but unit {} has one (a workload cluster?): the {UNIT} unit applies \
             its DaemonSet where Flux runs, which may not be the cluster whose nodes run frr-k8s",
            gated.name(),
            sibling.name()
        ))
        .about(gated)
        .field("spec.kubeConfig")
        .tag("check", "kube-config"),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    use super::super::test_support::docs;

    #[test]
    fn payload_dir_must_stay_inside_the_package() {
        for (path, ok) in [
            ("./metallb-image-prepull", Some("metallb-image-prepull")),
            ("units/prepull/", Some("units/prepull")),
            ("../x", None),
            ("/abs", None),
            ("./", None),
            ("a//b", None),
        ] {
            let spec = MetalLBImagePrepullSpec {
                path: path.into(),
                ..Default::default()
            };
            assert_eq!(payload_dir(&spec, None).ok().as_deref(), ok, "{path}");
        }
    }

    #[test]
    fn settings_copy_siblings() {
        let items = docs(
            "apiVersion: kustomize.toolkit.fluxcd.io/v1\nkind: Kustomization\nmetadata:\n  name: metallb\n  namespace: sylva-system\n  labels: {sylva-units.unit: metallb, common: x, sylva-units/protected: ''}\n  annotations: {config.kubernetes.io/path: units/all.yaml, config.kubernetes.io/index: '1'}\nspec:\n  interval: 1h\n  retryInterval: 2m\n  sourceRef: {kind: OCIRepository, name: sylva-core}\n  dependsOn: [{name: root-dependency-7}, {name: cluster-vip}]\n---\n\
             apiVersion: kustomize.toolkit.fluxcd.io/v1\nkind: Kustomization\nmetadata:\n  name: other\n  labels: {sylva-units.unit: other, common: x}\n  annotations: {config.kubernetes.io/path: units/metallb-image-prepull.yaml}\nspec: {}\n",
        );
        let spec = MetalLBImagePrepullSpec::default();
        let inputs = Inputs::scan(&items, None, "metallb");
        let s = settings(&spec, &items, &inputs, Some(&items[0]), None).unwrap();
        assert_eq!(s.flux_namespace.as_deref(), Some("sylva-system"));
        assert_eq!(s.interval, "1h");
        assert_eq!(s.retry_interval.as_deref(), Some("2m"));
        assert_eq!(s.source_ref.kind, "OCIRepository");
        assert_eq!(s.depends_on.len(), 1, "only the ordering root");
        assert_eq!(s.flux_labels.get("common").map(String::as_str), Some("x"));
        assert_eq!(
            s.flux_labels.get("sylva-units.unit").map(String::as_str),
            Some(UNIT)
        );
        assert!(!s.flux_labels.contains_key("sylva-units/protected"));
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
        let e = settings(
            &MetalLBImagePrepullSpec::default(),
            &items,
            &inputs,
            Some(&items[0]),
            None,
        )
        .unwrap_err();
        assert!(
            e.message.contains("choose another spec.path"),
            "{}",
            e.message
        );
    }
}
