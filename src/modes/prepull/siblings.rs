//! What makes the generated unit Kustomization look like one sylva-units rendered, and what
//! keeps it from stalling the release.
//!
//! sylva-units (sylva-core `charts/sylva-units/templates/units.yaml`, helper `unit-labels` in
//! `templates/_helpers.tpl`, `unit_definition_defaults` in `values.yaml`) gives every unit
//! Kustomization: the unit's labels, which start from `unit_definition_defaults.labels`
//! (`sylva-units/root-dependency-wait: ""`); the chart labels of `sylva-units.labels`;
//! `sylva-units.unit: <unit>`; and the unit's annotations, which start from
//! `unit_definition_defaults.annotations` (`sylva-units-helm-revision: <Release.Revision>`).
//!
//! The `root-dependency-<rev>` Job (`charts/sylva-units/scripts/root-dependency-check.sh`) waits
//! for every Kustomization labelled `sylva-units/root-dependency-wait` to carry the annotation
//! `sylva-units-helm-revision=<rev>`. A labelled unit without it makes that Job fail,
//! `root-dependency-<rev>` never becomes Ready, and every unit of the release waits forever.

use std::collections::BTreeMap;

use serde_yaml::Value;

use super::check::Check;
use super::helm_unit;
use super::inputs::{Inputs, SYLVA_UNIT_LABEL, UNIT};
use crate::krm::{KrmObject, KrmResult};

/// Label the root-dependency Job selects the Kustomizations it waits for by.
pub const ROOT_DEPENDENCY_WAIT: &str = "sylva-units/root-dependency-wait";
/// Annotation (label in sylva-units before the annotation form) carrying the Helm revision.
pub const HELM_REVISION: &str = "sylva-units-helm-revision";
/// Prefix of sylva-units' ordering lock Kustomization (`root-dependency-<release revision>`).
pub const ROOT_DEPENDENCY_PREFIX: &str = "root-dependency-";
/// Labels of sylva-units' `sylva-units.labels` helper (chart name and version, release).
const CHART_LABELS: [&str; 5] = [
    "helm.sh/chart",
    "app.kubernetes.io/name",
    "app.kubernetes.io/instance",
    "app.kubernetes.io/version",
    "app.kubernetes.io/managed-by",
];

/// Labels and annotations of the generated unit Kustomization.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct UnitIdentity {
    /// Labels as sylva-units would give the unit.
    pub labels: BTreeMap<String, String>,
    /// Annotations as sylva-units would give the unit (the Helm revision).
    pub annotations: BTreeMap<String, String>,
}

fn string_map(item: &Value, field: &str) -> BTreeMap<String, String> {
    item.get("metadata")
        .and_then(|m| m.get(field))
        .and_then(Value::as_mapping)
        .map(|m| {
            m.iter()
                .filter_map(|(k, v)| Some((k.as_str()?.to_owned(), v.as_str()?.to_owned())))
                .collect()
        })
        .unwrap_or_default()
}

fn is_root_dependency(item: &Value) -> bool {
    item.name().starts_with(ROOT_DEPENDENCY_PREFIX)
}

/// The labels and annotations of the new unit, copied from the gated Kustomization: the chart
/// labels, `sylva-units/root-dependency-wait` and the Helm revision (which every other waited-for
/// Kustomization must agree on), plus labels every other unit shares (a
/// `unit_definition_defaults.labels` of the deployment); never the gated unit's own labels such
/// as `sylva-units/protected` (a protected unit could not be pruned when the gate closes).
pub fn identity(
    items: &[Value],
    inputs: &Inputs,
    gated: &Value,
) -> Result<UnitIdentity, KrmResult> {
    let gated_labels = string_map(gated, "labels");
    let others: Vec<&Value> = inputs
        .unit_kustomizations
        .iter()
        .map(|&i| &items[i])
        .filter(|k| !std::ptr::eq(*k, gated) && !is_root_dependency(k))
        .collect();
    let mut labels: BTreeMap<String, String> = gated_labels
        .iter()
        .filter(|(k, v)| {
            CHART_LABELS.contains(&k.as_str())
                || k.as_str() == ROOT_DEPENDENCY_WAIT
                || k.as_str() == HELM_REVISION
                || (k.as_str() != SYLVA_UNIT_LABEL
                    && !others.is_empty()
                    && others.iter().all(|o| o.label(k) == Some(v.as_str())))
        })
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect();
    if gated_labels.contains_key(SYLVA_UNIT_LABEL) {
        labels.insert(SYLVA_UNIT_LABEL.into(), UNIT.into());
    }
    let revision = check_revision(items, inputs, gated)?;
    let annotations = revision
        .into_iter()
        .map(|r| (HELM_REVISION.to_string(), r))
        .collect();
    Ok(UnitIdentity {
        labels,
        annotations,
    })
}

/// The gated Kustomization's `sylva-units-helm-revision` annotation, checked against every
/// Kustomization the root-dependency Job waits for and against its own `root-dependency-<rev>`
/// dependency. Any disagreement means the bundle mixes renders of different sylva-units
/// revisions, and a unit copied from it could deadlock the release: an error naming them.
fn check_revision(
    items: &[Value],
    inputs: &Inputs,
    gated: &Value,
) -> Result<Option<String>, KrmResult> {
    let waits = gated.label(ROOT_DEPENDENCY_WAIT).is_some();
    let revision = gated.annotation(HELM_REVISION).map(str::to_owned);
    let Some(rev) = revision else {
        if waits {
            return Err(KrmResult::error(format!(
                "Kustomization {} carries the label {ROOT_DEPENDENCY_WAIT} but no annotation {HELM_REVISION}: \
                 sylva-units' root-dependency Job waits for that annotation to equal the release revision, so \
                 a unit copied from it would never be seen as updated and would block every unit of the release; \
                 give the rendered output of one sylva-units revision",
                gated.name()
            ))
            .about(gated)
            .field(format!("metadata.annotations.{HELM_REVISION}"))
            .tag("check", Check::HelmRevision));
        }
        return Ok(None);
    };
    let disagreeing: Vec<(usize, String)> = inputs
        .waiting_kustomizations
        .iter()
        .filter_map(|&i| {
            let item = &items[i];
            match item.annotation(HELM_REVISION) {
                Some(r) if r == rev => None,
                Some(r) => Some((i, format!("{} (revision {r})", item.name()))),
                None => Some((
                    i,
                    format!("{} (no {HELM_REVISION} annotation)", item.name()),
                )),
            }
        })
        .collect();
    if let Some((first, _)) = disagreeing.first() {
        let names: Vec<&str> = disagreeing.iter().map(|(_, n)| n.as_str()).collect();
        return Err(KrmResult::error(format!(
            "Kustomizations labelled {ROOT_DEPENDENCY_WAIT} disagree with {}'s {HELM_REVISION} {rev}: {}. \
             The root-dependency-{rev} Job waits until every one of them carries revision {rev}; the bundle \
             mixes renders of different sylva-units revisions, and a unit added to it could deadlock the \
             release. Give the rendered output of one revision",
            gated.name(),
            names.join(", ")
        ))
        .about(&items[*first])
        .field(format!("metadata.annotations.{HELM_REVISION}"))
        .tag("check", Check::HelmRevision));
    }
    let depends_on = gated
        .get("spec")
        .and_then(|s| s.get("dependsOn"))
        .and_then(Value::as_sequence)
        .map(Vec::as_slice)
        .unwrap_or_default();
    for (i, entry) in depends_on.iter().enumerate() {
        let Some(name) = entry.get("name").and_then(Value::as_str) else {
            continue;
        };
        if let Some(n) = name.strip_prefix(ROOT_DEPENDENCY_PREFIX)
            && n != rev
        {
            return Err(KrmResult::error(format!(
                "Kustomization {} depends on {name} but carries {HELM_REVISION} {rev}: sylva-units renders both from \
                 the same release revision; give the rendered output of one revision",
                gated.name()
            ))
            .about(gated)
            .field(format!("spec.dependsOn[{i}]"))
            .tag("check", Check::HelmRevision));
        }
    }
    Ok(Some(rev))
}

/// `spec.kubeConfig` for the unit. sylva-units keeps a Helm unit's Kustomization (like
/// `metallb`) on the management cluster and sends its HelmRelease to a workload cluster with the
/// HelmRelease's `kubeConfig` (`workload-cluster.values.yaml`); kustomize units there carry the
/// same `kubeConfig` on their Kustomization. The unit takes the gated Kustomization's own, else its
/// HelmRelease's. When neither has one but other units do (a workload cluster), the DaemonSet
/// would land on the management cluster: an error.
pub fn kube_config(
    items: &[Value],
    inputs: &Inputs,
    gated: &Value,
) -> Result<Option<(Value, String)>, KrmResult> {
    if let Some(k) = gated.get("spec").and_then(helm_unit::kube_config) {
        return Ok(Some((
            k.clone(),
            format!("spec.kubeConfig of Kustomization {}", gated.name()),
        )));
    }
    if let Some(spec) = helm_unit::patched_spec(gated)
        && let Some(k) = helm_unit::kube_config(&spec)
    {
        return Ok(Some((
            k.clone(),
            format!(
                "the HelmRelease Kustomization {} patches in (a Helm unit of a workload cluster keeps its \
                 Kustomization on the management cluster)",
                gated.name()
            ),
        )));
    }
    let remote: Vec<&str> = inputs
        .unit_kustomizations
        .iter()
        .map(|&i| &items[i])
        .filter(|k| k.get("spec").and_then(helm_unit::kube_config).is_some())
        .filter(|k| !is_dummy_unit(k))
        .map(KrmObject::name)
        .collect();
    if remote.is_empty() {
        return Ok(None);
    }
    Err(KrmResult::error(format!(
        "Kustomization {} has no spec.kubeConfig and patches in no HelmRelease with one, but unit(s) {} carry \
         spec.kubeConfig (a workload cluster): the {UNIT} unit would apply its DaemonSet to the cluster Flux \
         runs in, not to the nodes that run frr-k8s. Gate the Kustomization that deploys MetalLB to the \
         workload cluster (spec.kustomization)",
        gated.name(),
        remote.join(", ")
    ))
    .about(gated)
    .field("spec.kubeConfig")
    .tag("check", Check::KubeConfig))
}

/// Path of sylva-units' `dummy` unit template (sylva-core `charts/sylva-units/values.yaml`,
/// `unit_templates.dummy`, at fd968edc): a unit that applies nothing and only runs health checks.
/// A management cluster has such units with the `kubeConfig` of the cluster they check
/// (`calico-ready`, `cluster-reachable`), so they do not make it a workload cluster.
const DUMMY_UNIT_PATH: &str = "./kustomize-units/dummy/base";

fn is_dummy_unit(k: &Value) -> bool {
    k.get("spec")
        .and_then(|s| s.get("path"))
        .and_then(Value::as_str)
        .is_some_and(|p| p.trim_end_matches('/') == DUMMY_UNIT_PATH)
}

#[cfg(test)]
mod tests {
    use super::*;

    use super::super::test_support::docs;

    fn unit(name: &str, extra_labels: &str, rev: Option<&str>) -> String {
        let ann = rev.map_or(String::new(), |r| {
            format!("\n  annotations: {{{HELM_REVISION}: '{r}'}}")
        });
        format!(
            "apiVersion: kustomize.toolkit.fluxcd.io/v1\nkind: Kustomization\nmetadata:\n  name: {name}\n  labels: {{app.kubernetes.io/managed-by: Helm, helm.sh/chart: sylva-units-1.7.0, sylva-units.unit: {name}, sylva-units/root-dependency-wait: ''{extra_labels}}}{ann}\nspec: {{dependsOn: [{{name: root-dependency-3}}]}}\n---\n"
        )
    }

    fn ident(src: &str) -> Result<UnitIdentity, KrmResult> {
        let items = docs(src.trim_end_matches("---\n"));
        let inputs = Inputs::scan(&items, None, "metallb");
        identity(&items, &inputs, &items[inputs.gated[0]])
    }

    #[test]
    fn copies_what_sylva_units_gives_every_unit_and_nothing_unit_specific() {
        let got = ident(&format!(
            "{}{}",
            unit("metallb", ", sylva-units/protected: ''", Some("3")),
            unit("metallb-resources", "", Some("3"))
        ))
        .unwrap();
        assert_eq!(got.labels.get(SYLVA_UNIT_LABEL).unwrap(), UNIT);
        assert_eq!(got.labels.get(ROOT_DEPENDENCY_WAIT).unwrap(), "");
        assert_eq!(
            got.labels.get("helm.sh/chart").unwrap(),
            "sylva-units-1.7.0"
        );
        assert!(!got.labels.contains_key("sylva-units/protected"));
        assert_eq!(got.annotations.get(HELM_REVISION).unwrap(), "3");
        // Alone, metallb's own labels still stay its own.
        let alone = ident(&unit("metallb", ", sylva-units/protected: ''", Some("3"))).unwrap();
        assert!(!alone.labels.contains_key("sylva-units/protected"));
    }

    #[test]
    fn revision_disagreements_are_errors_naming_the_units() {
        let e = ident(&format!(
            "{}{}{}",
            unit("metallb", "", Some("3")),
            unit("a", "", Some("2")),
            unit("b", "", None)
        ))
        .unwrap_err();
        assert!(e.message.contains("a (revision 2), b (no"), "{}", e.message);
        assert_eq!(e.resource_ref.unwrap().name, "a");
        let e = ident(&unit("metallb", "", None)).unwrap_err();
        assert!(e.message.contains("no annotation"), "{}", e.message);
        let stale = unit("metallb", "", Some("4"));
        let e = ident(&stale).unwrap_err();
        assert_eq!(e.field.unwrap().path, "spec.dependsOn[0]");
    }
}
