//! The order of the switch: management cluster first. A rewiring that adds (B) to a `cluster`
//! HelmRelease is only safe once (B) exists. sylva-units renders (B)'s `valuesFrom` entry without
//! `optional` (charts/sylva-units/values.yaml, the `cluster` unit), and helm-controller fails a
//! release whose non-optional values reference is not found (fluxcd/pkg chartutil/values.go,
//! `ChartValuesFromReferences`): rewired before the management cluster writes and clones (B),
//! the cluster's HelmRelease stops reconciling.

use serde_yaml::Value;

use super::Context;
use super::check::Check;
use super::config::Capm3OSImageSourcesSpec;
use super::inputs::Inputs;
use super::values;
use super::wiring::Names;
use crate::krm::{KrmObject, KrmResult};
use crate::modes::prepull::config_field;

/// The sylva-units unit whose capm3 component ships the clone policy
/// (kustomize-units/mgmt-cluster-state-values/components/capm3/clone-os-images-info.yaml).
pub const POLICY_UNIT: &str = "mgmt-cluster-state-values";

/// True when something shows that (B) exists where the HelmRelease looks it up: the ConfigMap
/// among the items (in the HelmRelease's namespace), or the config's word for it.
pub fn served_exists(
    spec: &Capm3OSImageSourcesSpec,
    inputs: &Inputs,
    namespace: Option<&str>,
    names: &Names,
) -> bool {
    spec.management_serves_cloned_images || inputs.config_map(namespace, &names.served).is_some()
}

/// The error that refuses to add (B) to `release` while nothing shows that it exists.
pub fn refusal(
    spec: &Capm3OSImageSourcesSpec,
    context: Context,
    release: &Value,
    names: &Names,
    fc: Option<&Value>,
) -> KrmResult {
    let ns = release.namespace().unwrap_or("<none>");
    let flag = config_field(fc, "managementServesClonedImages");
    let first = match context {
        Context::Workload => format!(
            "upgrade the management cluster first: its os-image-server must write {}/{} and the ClusterPolicy {} of its {POLICY_UNIT} unit must copy it into namespace {ns} as {}",
            spec.server_output.namespace, spec.server_output.name, spec.clone_policy, names.served
        ),
        Context::Management => format!(
            "upgrade the management cluster's os-image-server unit first: it must write {}/{}",
            spec.server_output.namespace, spec.server_output.name
        ),
    };
    KrmResult::error(format!(
        "refused to add (B) {ns}/{served}: it is not among the items and {flag} is not true, so nothing shows that it exists. \
         sylva-units renders (B)'s valuesFrom entry without `optional`, so helm-controller fails HelmRelease {ns}/{name} as long as the ConfigMap is missing. \
         Order: {first}; then export {ns}/{served} with this package (kubectl get configmap -n {ns} {served} -o yaml) or set {flag}: true, and run again. spec.valuesFrom is left as it is",
        served = names.served,
        name = release.name(),
    ))
    .about(release)
    .field("spec.valuesFrom")
    .tag("check", Check::ServedImages)
}

/// Where the clone policy comes from when a capm3 package lacks it; cutover does not emit it,
/// so that the policy keeps one owner.
pub fn policy_owner_hint(spec: &Capm3OSImageSourcesSpec, management: bool) -> String {
    let export = format!("kubectl get clusterpolicy {} -o yaml", spec.clone_policy);
    if management {
        format!(
            "sylva-units' {POLICY_UNIT} unit ships it (its components/capm3, included when the management cluster's capm3 unit is enabled) and cutover does not add a second owner: \
             export it ({export}) to check it; if the management cluster has none, enable the unit (units.{POLICY_UNIT}.enabled must not be false in the management cluster's sylva values) and make sure its capm3 unit is enabled. \
             Without it no workload-cluster namespace gets {}, and every workload cluster's HelmRelease that reads it fails",
            spec.served_images
        )
    } else {
        format!(
            "it belongs to the management cluster, where sylva-units' {POLICY_UNIT} unit ships it: check the management cluster's package ({export})"
        )
    }
}

/// Label kustomize-controller puts on every object a Flux Kustomization applies (with
/// `kustomize.toolkit.fluxcd.io/namespace`).
pub const FLUX_OWNER_LABEL: &str = "kustomize.toolkit.fluxcd.io/name";

/// A note for findings on an item a Flux Kustomization applied (an export from the cluster):
/// its owner reapplies the version in its source, so a correction made here does not last.
pub fn flux_owner(item: &Value) -> Option<String> {
    let name = item.label(FLUX_OWNER_LABEL)?;
    let namespace = item
        .label("kustomize.toolkit.fluxcd.io/namespace")
        .map(|ns| format!("{ns}/"))
        .unwrap_or_default();
    Some(format!(
        " (Flux Kustomization {namespace}{name} applies this object and reapplies its own version at its next reconciliation: the lasting correction belongs in that unit's source, i.e. upgrading the management cluster's sylva-units)"
    ))
}

/// When the clone policy is not among the items: an error if the management cluster's
/// sylva-units values (among the items, in `serverOutput.namespace`) disable the unit that ships
/// it — `units.mgmt-cluster-state-values.enabled: false`, as an environment may set it. A
/// template or any other value is left to sylva-units.
pub fn policy_unit_disabled(
    spec: &Capm3OSImageSourcesSpec,
    items: &[Value],
    inputs: &Inputs,
) -> Result<Option<KrmResult>, KrmResult> {
    let Some(sylva) = values::sylva_values(items, inputs, Some(&spec.server_output.namespace))?
    else {
        return Ok(None);
    };
    let disabled = match values::get(&sylva.root, &["units", POLICY_UNIT, "enabled"]) {
        Some(Value::Bool(false)) => true,
        Some(Value::String(v)) => v.trim() == "false",
        _ => false,
    };
    if !disabled {
        return Ok(None);
    }
    Ok(Some(
        KrmResult::error(format!(
            "{} disables sylva-units' {POLICY_UNIT} unit, which ships the Kyverno ClusterPolicy {} (its components/capm3): no workload-cluster namespace gets {}, and every workload cluster's `cluster` HelmRelease that reads it fails. Enable the unit in the management cluster's sylva values before rewiring workload clusters",
            sylva.origin, spec.clone_policy, spec.served_images
        ))
        .about(&items[sylva.index])
        .field(format!("{}.units.{POLICY_UNIT}.enabled", sylva.field))
        .current(false)
        .proposed(true)
        .tag("check", Check::ClonePolicy),
    ))
}
