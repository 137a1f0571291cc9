//! `output: rendered` edits Kustomizations that a `sylva-units` HelmRelease renders: the release
//! owns them. Its next upgrade renders them again, and helm-controller's drift detection (sylva-core
//! `environment-values/base/helm-release.yaml` sets `driftDetection: {mode: enabled}`) puts them
//! back as the release made them, so metallb's `dependsOn` on the unit disappears and metallb no
//! longer waits. The values form is what survives; a one-off edit must be accepted explicitly.

use serde_yaml::Value;

use super::check::Check;
use super::config::MetalLBImagePrepullSpec;
use super::inputs::FLUX_HELM_GROUP;
use crate::krm::{KrmObject, KrmResult};

/// True for a HelmRelease of the sylva-units chart (by name, or by chart name).
fn is_sylva_units_release(item: &Value) -> bool {
    if !item.is(FLUX_HELM_GROUP, "HelmRelease") {
        return false;
    }
    let chart = item
        .get("spec")
        .and_then(|s| s.get("chart"))
        .and_then(|c| c.get("spec"))
        .and_then(|s| s.get("chart"))
        .and_then(Value::as_str)
        .unwrap_or_default();
    item.name() == "sylva-units" || chart.trim_end_matches('/').ends_with("sylva-units")
}

/// What the release shows: drift detection mode and the revision it last applied, if given.
fn traits(item: &Value) -> String {
    let spec = item.get("spec");
    let drift = spec
        .and_then(|s| s.get("driftDetection"))
        .and_then(|d| d.get("mode"))
        .and_then(Value::as_str);
    let status = item.get("status");
    let revision = status
        .and_then(|s| s.get("history"))
        .and_then(|h| h.get(0))
        .and_then(|h| h.get("version"))
        .and_then(|v| {
            v.as_u64()
                .map(|n| n.to_string())
                .or(v.as_str().map(str::to_owned))
        })
        .or_else(|| {
            status
                .and_then(|s| s.get("lastAttemptedRevision"))
                .and_then(Value::as_str)
                .map(str::to_owned)
        });
    let mut parts = Vec::new();
    if let Some(d) = drift {
        parts.push(format!("driftDetection mode {d}"));
    }
    if let Some(r) = revision {
        parts.push(format!("last release {r}"));
    }
    if parts.is_empty() {
        String::new()
    } else {
        format!(" ({})", parts.join(", "))
    }
}

/// Refuses the rendered form next to a sylva-units HelmRelease unless the config accepts it.
pub fn check_rendered(
    spec: &MetalLBImagePrepullSpec,
    items: &[Value],
    fc: Option<&Value>,
) -> Result<Option<KrmResult>, KrmResult> {
    let Some(release) = items.iter().find(|i| is_sylva_units_release(i)) else {
        return Ok(None);
    };
    let who = format!(
        "HelmRelease {}{}{}",
        release
            .namespace()
            .map(|ns| format!("{ns}/"))
            .unwrap_or_default(),
        release.name(),
        traits(release)
    );
    if spec.accept_edits_to_sylva_units_release {
        return Ok(Some(
            KrmResult::info(format!(
                "{who} renders these Kustomizations: the edit to them is one-off (accepted by \
                 acceptEditsToSylvaUnitsRelease); the release's next upgrade or drift correction removes metallb's \
                 dependsOn on the unit"
            ))
            .about(release)
            .tag("check", Check::SylvaUnitsRelease),
        ));
    }
    Err(super::fc_error(
        fc,
        format!(
            "output: rendered would edit Kustomizations that {who} renders: its next upgrade, or helm-controller's drift \
             correction, puts metallb's dependsOn back without the unit and metallb no longer waits for the pre-pull; \
             use output: sylva-values (the unit goes into the values that release is deployed from), or set \
             acceptEditsToSylvaUnitsRelease: true to accept a one-off edit"
        ),
        "output",
    )
    .tag("check", Check::SylvaUnitsRelease))
}

#[cfg(test)]
mod tests {
    use super::*;

    use super::super::test_support::docs;

    const RELEASE: &str = "apiVersion: helm.toolkit.fluxcd.io/v2\nkind: HelmRelease\nmetadata: {name: sylva-units, namespace: sylva-system}\nspec: {driftDetection: {mode: enabled}}\nstatus: {history: [{version: 7}]}\n";

    #[test]
    fn a_sylva_units_release_refuses_the_rendered_form_unless_accepted() {
        let items = docs(RELEASE);
        let mut spec = MetalLBImagePrepullSpec::default();
        let e = check_rendered(&spec, &items, None).unwrap_err();
        assert!(
            e.message
                .contains("driftDetection mode enabled, last release 7"),
            "{}",
            e.message
        );
        assert!(e.message.contains("output: sylva-values"), "{}", e.message);
        assert_eq!(e.field.unwrap().path, "spec.output");
        spec.accept_edits_to_sylva_units_release = true;
        let w = check_rendered(&spec, &items, None).unwrap().unwrap();
        assert!(w.message.contains("one-off"), "{}", w.message);
        let other = docs(
            "apiVersion: helm.toolkit.fluxcd.io/v2\nkind: HelmRelease\nmetadata: {name: metallb}\nspec: {chart: {spec: {chart: metallb}}}\n",
        );
        assert_eq!(
            check_rendered(&MetalLBImagePrepullSpec::default(), &other, None).unwrap(),
            None
        );
    }
}
