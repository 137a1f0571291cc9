//! The gate: the prepull unit exists only on an upgrade of a cluster with BGP (L3) MetalLB config
//! and MetalLB enabled. Each condition carries its evidence so the results explain the decision.
//! The `upgrade` and `metallb` conditions are read here; the `bgp` condition, with the backend
//! case it implies, in [`bgp`].

mod bgp;

use serde_yaml::Value;

use super::check::Check;
use super::config::{MetalLBImagePrepullSpec, Output, UpgradeMode};
use super::config_field;
use super::inputs::{Inputs, STATUS_NAME};
use super::sylva_units;
use super::values::{Origin, SylvaValues, type_name};
use crate::krm::{KrmObject, KrmResult};

/// One gate condition and why it holds or not.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Condition {
    /// Whether the condition holds.
    pub met: bool,
    /// Evidence, for the result message.
    pub evidence: String,
    /// The item the evidence comes from, if any.
    pub about: Option<usize>,
}

/// Which row of the Sylva backend table this upgrade is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Case {
    /// Case (1) → (3): no peer uses BFD or route learning, 1.6 ran the native speaker.
    NativeToFrrK8s,
    /// Case (2) → (4): some peer uses BFD or route learning, 1.6 already ran frr-k8s.
    FrrK8sVersionBump,
}

impl Case {
    /// Short name for result tags.
    pub fn tag(self) -> &'static str {
        match self {
            Case::NativeToFrrK8s => "native-to-frr-k8s",
            Case::FrrK8sVersionBump => "frr-k8s-version-bump",
        }
    }
}

/// All gate conditions.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Gate {
    /// This render is an upgrade.
    pub upgrade: Condition,
    /// BGP L3 configuration is present.
    pub bgp: Condition,
    /// MetalLB is enabled and its Kustomization is in the items.
    pub metallb: Condition,
    /// Backend transition, with its evidence.
    pub case: (Case, String),
    /// Position of the gated Kustomization.
    pub gated: Option<usize>,
}

impl Gate {
    /// True when every condition holds.
    pub fn is_open(&self) -> bool {
        self.upgrade.met && self.bgp.met && self.metallb.met
    }

    /// One info result per condition (tag `check`), plus the backend case when BGP is configured.
    pub fn results(&self, items: &[Value]) -> Vec<KrmResult> {
        let mut out = Vec::with_capacity(4);
        for (check, condition) in [
            (Check::Upgrade, &self.upgrade),
            (Check::Bgp, &self.bgp),
            (Check::Metallb, &self.metallb),
        ] {
            let r = KrmResult::info(format!(
                "gate condition {}: {} — {}",
                check.as_str(),
                if condition.met { "met" } else { "not met" },
                condition.evidence
            ))
            .tag("check", check);
            out.push(match condition.about {
                Some(i) => r.about(&items[i]),
                None => r,
            });
        }
        if self.bgp.met {
            out.push(
                KrmResult::info(self.case.1.clone())
                    .tag("check", Check::Case)
                    .tag("case", self.case.0.tag()),
            );
        }
        out
    }

    /// One-line reason the gate is closed (first failing condition first).
    pub fn closed_reason(&self) -> String {
        [&self.upgrade, &self.bgp, &self.metallb]
            .into_iter()
            .filter(|c| !c.met)
            .map(|c| c.evidence.as_str())
            .collect::<Vec<_>>()
            .join("; ")
    }
}

/// Evaluates the gate. Errors are bad input (malformed values or Kustomizations).
pub fn evaluate(
    spec: &MetalLBImagePrepullSpec,
    items: &[Value],
    inputs: &Inputs,
    values: &SylvaValues,
    fc: Option<&Value>,
) -> Result<Gate, KrmResult> {
    let metallb = metallb_enabled(spec, items, inputs, values, fc)?;
    let upgrade = upgrade(spec, items, inputs, values);
    let (bgp, case) = bgp::condition(items, inputs, values, fc)?;
    Ok(Gate {
        upgrade,
        bgp,
        metallb: metallb.0,
        case,
        gated: metallb.1,
    })
}

/// Reads a boolean that may be written as a string (sylva values often are GoTPL output).
/// `None` for anything else, including unrendered templates.
fn as_bool(v: &Value) -> Option<bool> {
    match v {
        Value::Bool(b) => Some(*b),
        Value::String(s) => match s.trim() {
            "true" | "True" => Some(true),
            "false" | "False" => Some(false),
            _ => None,
        },
        _ => None,
    }
}

fn as_text(v: &Value) -> Option<String> {
    match v {
        Value::String(s) if !s.contains("{{") && !s.trim().is_empty() => Some(s.trim().to_owned()),
        Value::Number(n) => Some(n.to_string()),
        _ => None,
    }
}

fn upgrade(
    spec: &MetalLBImagePrepullSpec,
    items: &[Value],
    inputs: &Inputs,
    values: &SylvaValues,
) -> Condition {
    let status_cm = inputs.status_configmap.map(|i| &items[i]);
    let status_ks = inputs.status_kustomization.map(|i| &items[i]);
    let previous = status_cm
        .and_then(|cm| cm.get("data")?.get("sylva-units-chart-version"))
        .and_then(as_text);
    let target = status_ks
        .and_then(|ks| ks.annotation("target-sylva-units-chart-version"))
        .map(str::to_owned)
        .or_else(|| {
            values
                .get(&["_internal", "sylva_core_version"])
                .and_then(as_text)
        });
    let versions = match (&previous, &target) {
        (Some(p), Some(t)) => format!("upgrade from {p} to {t}"),
        (Some(p), None) => format!("upgrade from {p}"),
        (None, Some(t)) => format!("upgrade to {t}"),
        _ => "upgrade".to_string(),
    };
    let (met, why, about) = match spec.upgrade {
        UpgradeMode::True => (true, "spec.upgrade is true".to_string(), None),
        UpgradeMode::False => (false, "spec.upgrade is false".to_string(), None),
        UpgradeMode::Auto => {
            let flag = values
                .get(&["_internal", "state", "is_upgrade"])
                .and_then(as_bool);
            let inventory = status_ks.is_some_and(|ks| {
                ks.get("status")
                    .and_then(|s| s.get("inventory"))
                    .and_then(|i| i.get("entries"))
                    .and_then(Value::as_sequence)
                    .is_some_and(|e| !e.is_empty())
            });
            let about_values = match values.origin {
                Origin::Item { index, .. } => Some(index),
                Origin::Inline => None,
            };
            match flag {
                Some(b) => (
                    b,
                    format!("_internal.state.is_upgrade is {b} in the values"),
                    about_values,
                ),
                None if inventory => (
                    true,
                    format!(
                        "Kustomization {STATUS_NAME} has inventory entries (a full install completed)"
                    ),
                    inputs.status_kustomization,
                ),
                None if status_cm.is_some() => (
                    true,
                    format!("ConfigMap {STATUS_NAME} is present (a full install completed)"),
                    inputs.status_configmap,
                ),
                None => (
                    false,
                    format!(
                        "no _internal.state.is_upgrade in the values and no reconciled {STATUS_NAME} among the items"
                    ),
                    None,
                ),
            }
        }
    };
    let evidence = if met {
        format!("{versions}: {why}")
    } else {
        format!("fresh install, not an upgrade: {why}")
    };
    Condition {
        met,
        evidence,
        about,
    }
}

/// The error for a values form the sylva-units model cannot evaluate: on the values item (the
/// path inside a HelmRelease's `spec.values`, else the data key), or on `spec.values`.
fn refusal(
    r: sylva_units::Refusal,
    items: &[Value],
    values: &SylvaValues,
    fc: Option<&Value>,
) -> KrmResult {
    let message = format!(
        "cannot tell whether sylva-units enables metallb: {} {} (cutover evaluates metallb's enabled_conditions as \
         sylva-units' unit-enabled helper does, for the forms sylva-core uses); write it in one of those forms, or give \
         the value it reads in {}",
        r.path,
        r.message,
        values.describe(items)
    );
    match &values.origin {
        Origin::Inline => {
            let e =
                KrmResult::error(message).field(config_field(fc, &format!("values.{}", r.path)));
            match fc {
                Some(fc) => e.about(fc),
                None => e,
            }
        }
        Origin::Item { index, field } => {
            let path = if field == "spec.values" {
                format!("{field}.{}", r.path)
            } else {
                field.clone()
            };
            KrmResult::error(message).about(&items[*index]).field(path)
        }
    }
}

fn metallb_enabled(
    spec: &MetalLBImagePrepullSpec,
    items: &[Value],
    inputs: &Inputs,
    values: &SylvaValues,
    fc: Option<&Value>,
) -> Result<(Condition, Option<usize>), KrmResult> {
    let name = &spec.kustomization;
    let verdict = sylva_units::unit_enabled(&values.root, sylva_units::METALLB)
        .map_err(|r| refusal(r, items, values, fc))?;
    let enabled = &verdict.evidence;
    let gated = match inputs.gated.as_slice() {
        [] => None,
        [index] => Some(*index),
        [first, second, ..] => {
            return Err(KrmResult::error(format!(
                "{} Flux Kustomizations are named {name} (also in namespace {}): cannot tell which one to gate; remove the duplicate or gate another one with spec.kustomization",
                inputs.gated.len(),
                items[*second].namespace().unwrap_or("(none)")
            ))
            .about(&items[*first])
            .field("metadata.name"));
        }
    };
    if let Some(index) = gated {
        let item = &items[index];
        match item.get("spec") {
            Some(Value::Mapping(_)) => {}
            Some(other) => {
                return Err(KrmResult::error(format!(
                    "Kustomization {name} has a spec that is {}, not a mapping",
                    type_name(other)
                ))
                .about(item)
                .field("spec"));
            }
            None => {
                return Err(KrmResult::error(format!(
                    "Kustomization {name} has no spec: cannot copy its sourceRef or add dependsOn"
                ))
                .about(item)
                .field("spec"));
            }
        }
    }
    let condition = if !verdict.enabled {
        Condition {
            met: false,
            evidence: format!(
                "MetalLB is disabled, as sylva-units' unit-enabled evaluates it: {enabled}"
            ),
            about: gated,
        }
    } else if gated.is_none() && spec.output == Output::SylvaValues {
        // The values a sylva-units release is deployed from come without rendered
        // Kustomizations; sylva-units itself decides whether metallb is enabled.
        Condition {
            met: true,
            evidence: format!(
                "MetalLB enabled, as sylva-units' unit-enabled evaluates it: {enabled} (output: sylva-values, no rendered \
                 Kustomization {name} among the items)"
            ),
            about: None,
        }
    } else if inputs.is_generator_call() {
        Condition {
            met: true,
            evidence: format!(
                "MetalLB enabled, as sylva-units' unit-enabled evaluates it: {enabled} (kustomize generator call: \
                 Kustomization {name} not checked)"
            ),
            about: None,
        }
    } else if let Some(index) = gated {
        Condition {
            met: true,
            evidence: format!(
                "MetalLB enabled: Kustomization {}{} is among the items and sylva-units' unit-enabled gives true: {enabled}",
                items[index]
                    .namespace()
                    .map(|ns| format!("{ns}/"))
                    .unwrap_or_default(),
                items[index].name()
            ),
            about: Some(index),
        }
    } else {
        Condition {
            met: false,
            evidence: format!(
                "MetalLB is not deployed: no Flux Kustomization {name} among the items"
            ),
            about: None,
        }
    };
    Ok((condition, gated))
}

#[cfg(test)]
mod tests;
