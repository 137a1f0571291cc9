//! The model of the sylva-units chart this mode relies on, in one place. Every rule cites where it
//! was read: `canonical/sylva-core` at commit `fd968edcf883a7d74df352e86c88a4d2788aa3be`
//! (upstream `main` of 2025-05-30), `charts/sylva-units/…`:
//!
//! - **which units are enabled**: helper `unit-enabled` (`templates/_helpers.tpl:160-200`): start
//!   from `units_enabled_default` (`values.yaml:249` false, `management.values.yaml:4` true); if
//!   `units_override_enabled` exists the unit is enabled only when listed; otherwise the unit's
//!   `enabled` (interpreted as a bool) decides; a `one_shot` unit already recorded done is disabled;
//!   then every `enabled_conditions` entry is ANDed in, each through `interpret-as-bool`
//!   (`templates/_interpret-values.tpl:483-560`: a bool, or a string that is `true`, `false`, empty,
//!   or a template whose output is one of those; anything else fails the render);
//! - **metallb's conditions**: `units.metallb.enabled_conditions` (`values.yaml:3646-3648`): MetalLB
//!   only with the `capd` infrastructure provider or the `cabpr` (RKE2) bootstrap provider. The
//!   providers default to `capd`/`cabpk` (`values.yaml:8321-8323`). Helm replaces lists, so
//!   `enabled_conditions` given in the deployment's values replace the chart's;
//! - **conditional dependencies**: `depends_on` values are interpreted as bools by `units.yaml:254-255`
//!   (`interpret-for-test`), and a dependency on a disabled unit fails the render (`units.yaml:261-262`),
//!   so upstream writes a dependency on a unit that may be off as
//!   `<unit>: '{{ tuple . "<unit>" | include "unit-enabled" }}'` (e.g. `units.metallb.depends_on.monitoring-crd`,
//!   `values.yaml:3650`), and units that follow metallb carry
//!   `'{{ tuple . "metallb" | include "unit-enabled" }}'` in their `enabled_conditions`
//!   (`metallb-resources`, `values.yaml:3677`); the upgrade condition is
//!   `'{{ .Values._internal.state.is_upgrade }}'` (`cluster-vip-fix-lbclass`, `values.yaml:4119ff`);
//! - **sources**: `templates/sources.yaml:14-16` fails the render when an enabled unit's `repo` is
//!   not a key of `.Values.source_templates` ("units.X.repo refers to 'Y' that isn't defined in
//!   .source_templates"); the chart itself defines the entries in [`CHART_SOURCE_TEMPLATES`]
//!   (`values.yaml:17ff`).
//!
//! cutover reads one values document, not the merged values Helm renders with. Where a value the
//! model needs is not in it, the chart's default applies when the model knows it
//! ([`CHART_DEFAULTS`]); otherwise the model refuses rather than guess.

mod gotpl;

use serde_yaml::{Mapping, Value};

use self::gotpl::{Env, Val};

/// The unit whose enablement the model evaluates.
pub const METALLB: &str = "metallb";

/// `units.metallb.enabled_conditions` of the chart, as written in `values.yaml:3646-3648` (a
/// single-quoted YAML scalar folded over two lines).
const METALLB_ENABLED_CONDITIONS_YAML: &str =
    "- '{{ or (.Values.cluster.capi_providers.infra_provider | eq \"capd\")
         (.Values.cluster.capi_providers.bootstrap_provider | eq \"cabpr\") }}'
";

/// Chart defaults of the values the modelled conditions read (`values.yaml:8321-8323`).
const CHART_DEFAULTS: [(&[&str], &str); 2] = [
    (&["cluster", "capi_providers", "infra_provider"], "capd"),
    (
        &["cluster", "capi_providers", "bootstrap_provider"],
        "cabpk",
    ),
];

/// The `source_templates` entries `values.yaml` itself defines.
pub const CHART_SOURCE_TEMPLATES: [&str; 25] = [
    "sylva-core",
    "weave-gitops",
    "sylva-capi-cluster",
    "sync-openstack-images",
    "devnull",
    "local-path-provisioner",
    "sriov-resources",
    "metallb-resources",
    "os-image-server",
    "capo-contrail-bgpaas",
    "libvirt-metal",
    "vault-operator",
    "sylva-dashboards",
    "minio-operator",
    "sylva-snmp-resources",
    "loki",
    "sylva-logging-flows",
    "sylva-prometheus-rules",
    "sylva-thanos-rules",
    "sylva-alertmanager-resources",
    "workload-team-defs",
    "bitnami-postgresql",
    "bitnami-postgresql-ha",
    "bitnami-thanos",
    "bitnami-redis-cluster",
];

/// The upgrade condition upstream units use.
pub const IS_UPGRADE: &str = "{{ .Values._internal.state.is_upgrade }}";

/// The template that is true exactly when `unit` is enabled (helper `unit-enabled`).
pub fn unit_enabled_expr(unit: &str) -> String {
    format!("{{{{ tuple . \"{unit}\" | include \"unit-enabled\" }}}}")
}

/// `units.metallb.enabled_conditions` of the chart.
pub fn metallb_chart_conditions() -> Vec<Value> {
    serde_yaml::from_str(METALLB_ENABLED_CONDITIONS_YAML).expect("static YAML")
}

/// Why the model cannot evaluate something: the values path at fault and what it could not do.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Refusal {
    /// Dotted path in the values, e.g. `units.metallb.enabled_conditions[0]`.
    pub path: String,
    /// What is not modelled or fails, and what to do.
    pub message: String,
}

/// Whether a unit is enabled, and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Verdict {
    /// The helper's answer.
    pub enabled: bool,
    /// The deciding facts, for the gate's result.
    pub evidence: String,
}

struct Model<'v> {
    root: &'v Mapping,
    /// How many `unit-enabled` calls enclose this evaluation.
    depth: usize,
    /// Chart defaults used in place of values absent from the document, for the evidence.
    defaults_used: std::cell::RefCell<Vec<String>>,
}

fn get<'v>(root: &'v Mapping, path: &[&str]) -> Option<&'v Value> {
    let (first, rest) = path.split_first()?;
    let mut current = root.get(*first)?;
    for key in rest {
        current = current.as_mapping()?.get(*key)?;
    }
    Some(current)
}

impl Env for Model<'_> {
    fn field(&self, path: &[&str]) -> Result<Val, String> {
        let dotted = path.join(".");
        match get(self.root, path) {
            Some(Value::Bool(b)) => Ok(Val::Bool(*b)),
            Some(Value::String(s)) if s.contains("{{") => Err(format!(
                ".Values.{dotted} is itself a template ({s:?}), which the model does not interpret"
            )),
            Some(Value::String(s)) => Ok(Val::Str(s.clone())),
            Some(Value::Null) => Ok(Val::Nil),
            Some(other) => Err(format!(
                ".Values.{dotted} is {}, which the model does not compare",
                super::values::type_name(other)
            )),
            None => CHART_DEFAULTS
                .iter()
                .find(|(p, _)| *p == path)
                .map(|(_, d)| {
                    let used = format!("{dotted}: {d}");
                    let mut all = self.defaults_used.borrow_mut();
                    if !all.contains(&used) {
                        all.push(used);
                    }
                    Val::Str((*d).into())
                })
                .ok_or_else(|| {
                    format!(
                        ".Values.{dotted} is not in the values read and its chart default is not modelled: give it there"
                    )
                }),
        }
    }

    fn unit_enabled(&self, unit: &str) -> Result<bool, String> {
        // A condition of metallb that asks whether metallb is enabled never ends in Helm either.
        if self.depth >= 1 {
            return Err(format!(
                "unit-enabled of {unit} inside {unit}'s own conditions recurses without end"
            ));
        }
        unit_enabled_at(self.root, unit, self.depth + 1)
            .map(|v| v.enabled)
            .map_err(|r| format!("unit-enabled of {unit}: {} ({})", r.message, r.path))
    }
}

/// `interpret-as-bool` of one value (a bool, or a string or template yielding `true`/`false`/``).
fn as_bool(model: &Model<'_>, value: &Value, path: &str) -> Result<bool, Refusal> {
    let refuse = |message: String| Refusal {
        path: path.to_string(),
        message,
    };
    let text = match value {
        Value::Bool(b) => return Ok(*b),
        Value::String(s) => s,
        other => {
            return Err(refuse(format!(
                "is {}: sylva-units' interpret-as-bool accepts only a bool or a string",
                super::values::type_name(other)
            )));
        }
    };
    let printed = match gotpl::action(text).map_err(&refuse)? {
        None => text.clone(),
        Some(expr) => gotpl::eval(expr, model)
            .and_then(|v| v.print())
            .map_err(|e| refuse(format!("{text:?}: {e}")))?,
    };
    match printed.as_str() {
        "true" => Ok(true),
        "false" | "" => Ok(false),
        other => Err(refuse(format!(
            "{text:?} gives {other:?}, which sylva-units cannot cast as a bool (the render would fail)"
        ))),
    }
}

/// The helper `unit-enabled` for `unit`, on the values read plus the modelled chart defaults.
/// Only `metallb` is modelled (its chart definition is known); other units are refused.
pub fn unit_enabled(root: &Mapping, unit: &str) -> Result<Verdict, Refusal> {
    unit_enabled_at(root, unit, 0)
}

fn unit_enabled_at(root: &Mapping, unit: &str, depth: usize) -> Result<Verdict, Refusal> {
    let model = Model {
        root,
        depth,
        defaults_used: Default::default(),
    };
    let at = |key: &str| format!("units.{unit}.{key}");
    if unit != METALLB {
        return Err(Refusal {
            path: format!("units.{unit}"),
            message: "the model knows only metallb's chart definition".into(),
        });
    }
    let def = get(root, &["units", unit]);
    let mut evidence = Vec::new();
    let mut enabled = match get(root, &["units_override_enabled"]) {
        Some(Value::Sequence(listed)) => {
            let on = listed.iter().any(|u| u.as_str() == Some(unit));
            evidence.push(format!(
                "units_override_enabled {} it",
                if on { "lists" } else { "does not list" }
            ));
            on
        }
        Some(_) => {
            return Err(Refusal {
                path: "units_override_enabled".into(),
                message: "is not a list of unit names (templated forms are not modelled)".into(),
            });
        }
        None => match def.and_then(|d| d.get("enabled")) {
            Some(v) => {
                let on = as_bool(&model, v, &at("enabled"))?;
                evidence.push(format!("units.{unit}.enabled is {on}"));
                on
            }
            None => match get(root, &["units_enabled_default"]) {
                Some(v) => {
                    let on = as_bool(&model, v, "units_enabled_default")?;
                    evidence.push(format!("units_enabled_default is {on}"));
                    on
                }
                // Both layers a deployment renders with enable metallb: management.values.yaml:4
                // (units_enabled_default: true), workload-cluster.values.yaml:298-299.
                None => {
                    evidence.push(format!(
                        "units.{unit}.enabled not set (management.values.yaml and workload-cluster.values.yaml enable it)"
                    ));
                    true
                }
            },
        },
    };
    if def.and_then(|d| d.get("one_shot")).and_then(Value::as_bool) == Some(true) {
        return Err(Refusal {
            path: at("one_shot"),
            message: "a one_shot metallb depends on the live sylva-units-status ConfigMap, which the model does not read".into(),
        });
    }
    let (conditions, whose) = match def.and_then(|d| d.get("enabled_conditions")) {
        None | Some(Value::Null) => (metallb_chart_conditions(), "the chart's"),
        Some(Value::Sequence(s)) => (s.clone(), "the values'"),
        Some(other) => {
            return Err(Refusal {
                path: at("enabled_conditions"),
                message: format!("is {}, not a list", super::values::type_name(other)),
            });
        }
    };
    for (i, condition) in conditions.iter().enumerate() {
        if !enabled {
            break;
        }
        enabled = as_bool(
            &model,
            condition,
            &format!("{}[{i}]", at("enabled_conditions")),
        )?;
        evidence.push(format!("{whose} enabled_conditions[{i}] is {enabled}"));
    }
    let defaults = model.defaults_used.borrow();
    if !defaults.is_empty() {
        evidence.push(format!("with the chart's default {}", defaults.join(", ")));
    }
    Ok(Verdict {
        enabled,
        evidence: evidence.join(", "),
    })
}

/// The `source_templates` entries a render with these values has: the chart's and the values'.
pub fn source_templates(root: &Mapping) -> Vec<String> {
    let mut names: Vec<String> = CHART_SOURCE_TEMPLATES
        .iter()
        .map(|s| (*s).to_string())
        .collect();
    if let Some(Value::Mapping(m)) = root.get("source_templates") {
        names.extend(m.keys().filter_map(|k| k.as_str().map(str::to_owned)));
    }
    names
}

/// The entries of the values' own `source_templates`, for messages.
pub fn own_source_templates(root: &Mapping) -> Vec<String> {
    match root.get("source_templates") {
        Some(Value::Mapping(m)) => m
            .keys()
            .filter_map(|k| k.as_str().map(str::to_owned))
            .collect(),
        _ => Vec::new(),
    }
}

#[cfg(test)]
mod tests;
