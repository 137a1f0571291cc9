//! MetalLB image prepull mode (`MetalLBImagePrepull`).
//!
//! On a Sylva 1.6 → 1.7 upgrade with BGP peers, adds a gated `metallb-image-prepull` Flux unit
//! that pre-pulls the frr-k8s and frr images on every node, and makes the `metallb` unit depend
//! on it, so frr-k8s pods start in seconds when the chart switches the BGP backend. Without
//! sylva values, the same unit serves any MetalLB chart upgrade from ≤ 0.15 to 0.16+ with BGP
//! (plain Flux HelmRelease, cozystack, kustomize `helmCharts`; see [`chart`]).
//!
//! Flow (kpt catalog style): read config → index items → find the sylva values → evaluate the
//! gate → resolve images → render the unit → reconcile with what an earlier run generated. The
//! unit goes into the rendered Flux Kustomizations (`output: rendered`) or into the sylva-units
//! values (`output: sylva-values`); the payload is written to `payloadDir` either way.

mod chart;
mod check;
mod config;
mod daemonset;
mod gate;
mod helm_unit;
mod image;
mod images;
mod inputs;
mod pod;
mod reads;
mod reconcile;
mod release;
mod render;
mod sessions;
mod siblings;
mod source;
mod sylva_units;
mod sylva_values;
#[cfg(test)]
mod test_support;
mod unit;
mod values;
mod values_text;
mod waiter;

pub use check::Check;
pub use config::*;
pub use image::ImageRef;
pub use inputs::{GENERATED_BY, UNIT};
/// Shared with the announcer's gate Jobs (`announcer::orchestrate`).
pub(crate) use pod::{quantity, resources, restricted_container, restricted_pod};
pub use reads::reads;
/// Shared with the announcer's chained Flux units.
pub(crate) use render::{flux_duration, fnv1a};
pub use source::{package_dir, valid_flux_path};
pub use values::type_name;

use serde_yaml::Value;

use crate::krm::names::{NAMESPACE_RULE, is_namespace_name};
use crate::krm::{Garbage, KrmObject, KrmResult, Outcome};
use crate::modes::Ran;

/// Field path of a configuration field in the form the user wrote: `spec.<field>` for the
/// typed kind, `data.<field>` for the kpt ConfigMap form.
pub(crate) fn config_field(fc: Option<&Value>, field: &str) -> String {
    match fc {
        Some(fc) if fc.is("", "ConfigMap") => format!("data.{field}"),
        _ => format!("spec.{field}"),
    }
}

/// Runs the mode: any error result leaves every item as it came in. The sylva values' tree is
/// handed back with the outcome, for the function to free after writing the output
/// ([`crate::krm::Garbage`]).
pub fn run(
    spec: &MetalLBImagePrepullSpec,
    items: &[Value],
    function_config: Option<&Value>,
) -> Ran {
    let mut garbage = Garbage::new();
    let outcome = match plan(spec, items, function_config, &mut garbage) {
        Ok(mut outcome) => {
            if spec.fail_on_warnings && outcome.promote_warnings() > 0 {
                crate::modes::nothing_changed(&mut outcome);
            }
            outcome
        }
        Err(error) => Outcome {
            edits: Vec::new(),
            results: vec![error],
        },
    };
    Ran {
        outcome,
        garbage,
        ..Ran::default()
    }
}

/// Gives an error result the `check` tag of the step that produced it, unless it has one.
trait TagCheck<T> {
    fn check(self, check: Check) -> Result<T, KrmResult>;
}

impl<T> TagCheck<T> for Result<T, KrmResult> {
    fn check(self, check: Check) -> Result<T, KrmResult> {
        self.map_err(|r| {
            if r.tags.contains_key("check") {
                r
            } else {
                r.tag("check", check)
            }
        })
    }
}

/// An error about the function config at `field` (in the form the user wrote, see [`config_field`]).
pub(crate) fn fc_error(fc: Option<&Value>, message: String, field: &str) -> KrmResult {
    let r = KrmResult::error(message).field(config_field(fc, field));
    match fc {
        Some(fc) => r.about(fc),
        None => r,
    }
}

/// A warning about the function config at `field`.
fn fc_warning(fc: Option<&Value>, message: &str, field: &str) -> KrmResult {
    let r = KrmResult::warning(message).field(config_field(fc, field));
    match fc {
        Some(fc) => r.about(fc),
        None => r,
    }
}

/// Checks the configuration values serde cannot.
fn validate(spec: &MetalLBImagePrepullSpec, fc: Option<&Value>) -> Result<(), KrmResult> {
    source::reject_removed_fields(spec, fc)?;
    if spec.run_as_user <= 0 {
        return Err(fc_error(
            fc,
            format!(
                "runAsUser must be a non-root uid (> 0), got {}: Pod Security \"restricted\" forbids root and the frr images default to root",
                spec.run_as_user
            ),
            "runAsUser",
        ));
    }
    if spec.noop_command.is_empty() || spec.noop_command[0].is_empty() {
        return Err(fc_error(
            fc,
            "noopCommand must name a program that exits 0 in every pre-pulled image".into(),
            "noopCommand",
        ));
    }
    if spec.noop_image.is_some() && spec.noop_command != default_noop_command() {
        return Err(fc_error(
            fc,
            "noopImage and noopCommand exclude each other: with noopImage every pre-pull container runs the copied /noop/true".into(),
            "noopImage",
        ));
    }
    for (field, value) in [
        ("namespace", &spec.namespace),
        ("kustomization", &spec.kustomization),
    ] {
        if value.is_empty() {
            return Err(fc_error(fc, format!("{field} must not be empty"), field));
        }
    }
    // Every generated object is written into this namespace (and names it again in its
    // bindings and health checks), so it must be one the API server accepts.
    if !is_namespace_name(&spec.namespace) {
        return Err(fc_error(
            fc,
            format!("namespace is not a namespace name: {NAMESPACE_RULE}"),
            "namespace",
        ));
    }
    Ok(())
}

/// Reads the config and the items, finds the sylva values and plans with them; the values go
/// to `garbage` once planned, whatever the plan's result.
fn plan(
    spec: &MetalLBImagePrepullSpec,
    items: &[Value],
    fc: Option<&Value>,
    garbage: &mut Garbage,
) -> Result<Outcome, KrmResult> {
    validate(spec, fc).check(Check::Config)?;
    source::payload_dir(spec, fc).check(Check::Source)?;
    let inputs = inputs::Inputs::scan(items, fc, &spec.kustomization);
    let generator = inputs.is_generator_call();
    let Some(values) = values::locate(spec, items, &inputs, fc).check(Check::Values)? else {
        return without_sylva_values(spec, items, &inputs, fc, generator);
    };
    let planned = plan_with_values(spec, items, fc, &inputs, &values);
    garbage.push(Box::new(values));
    planned
}

/// The plan on the Sylva path: the gate, the images and the unit, from the sylva values.
fn plan_with_values(
    spec: &MetalLBImagePrepullSpec,
    items: &[Value],
    fc: Option<&Value>,
    inputs: &inputs::Inputs,
    values: &values::SylvaValues,
) -> Result<Outcome, KrmResult> {
    check_sylva(spec, items, inputs, values, fc)?;
    let gate = gate::evaluate(spec, items, inputs, values, fc).check(Check::Gate)?;
    if let Some(g) = gate.gated.map(|i| &items[i]) {
        unit::depends_on(g).check(Check::DependsOn)?;
    }
    let mut out = Outcome::default();
    out.push(
        KrmResult::info(format!("sylva values read from {}", values.describe(items)))
            .tag("check", Check::Values),
    );
    if spec.bgp_session_check.is_some() {
        out.push(
            fc_warning(
                fc,
                "bgpSessionCheck is not supported on the Sylva path yet (only for the upstream MetalLB chart): ignored",
                "bgpSessionCheck",
            )
            .tag("check", Check::BgpSessions),
        );
    }
    out.results.extend(gate.results(items));
    if !gate.is_open() {
        reconcile::remove_unit(items, inputs, gate.gated, &mut out);
        remove_from_values(values, items, "because the gate is closed", &mut out)
            .check(Check::SylvaValues)?;
        out.push(
            KrmResult::info(format!(
                "gate closed, no {UNIT} unit: {}",
                gate.closed_reason()
            ))
            .tag("check", Check::Gate),
        );
        return Ok(out);
    }
    let payload = source::resolve(spec, fc).check(Check::Source)?;
    let images = images::resolve(
        spec,
        items,
        inputs,
        values,
        gate.gated.map(|i| &items[i]),
        fc,
    )
    .check(Check::Images)?;
    for image in &images {
        out.push(
            KrmResult::info(format!("pre-pull {} ({})", image.image, image.source))
                .tag("check", Check::Images),
        );
    }
    let open = OpenGate {
        spec,
        items,
        fc,
        inputs,
        values,
        gated: gate.gated,
        payload: &payload,
        images: &images,
    };
    let (rendered, changed) = match spec.output {
        Output::Rendered => open.into_rendered_units(&mut out)?,
        Output::SylvaValues => open.into_sylva_values(&mut out)?,
    };
    out.push(summary(spec, &images, &rendered, &payload, changed));
    Ok(out)
}

/// No sylva values anywhere: MetalLB installed by the upstream chart (plain Flux, cozystack,
/// kustomize), or an error saying where the values may come from.
fn without_sylva_values(
    spec: &MetalLBImagePrepullSpec,
    items: &[Value],
    inputs: &inputs::Inputs,
    fc: Option<&Value>,
    generator: bool,
) -> Result<Outcome, KrmResult> {
    if !generator && let Some(out) = chart::plan(spec, items, inputs, fc)? {
        return Ok(out);
    }
    let message = if generator {
        "no sylva values: a kustomize generator receives only its function config, so give the values inline in spec.values".to_string()
    } else {
        "no sylva values found: give spec.values, spec.valuesFrom, or include Secret sylva-units-values, ConfigMap sylva-units-values or HelmRelease sylva-units among the items".to_string()
    };
    Err(fc_error(fc, message, "values").tag("check", Check::Values))
}

/// What must hold of the values and the items before the gate is evaluated: values this mode
/// can write back (for `output: sylva-values`), and no `metallb-image-prepull` unit that
/// cutover did not generate.
fn check_sylva(
    spec: &MetalLBImagePrepullSpec,
    items: &[Value],
    inputs: &inputs::Inputs,
    values: &values::SylvaValues,
    fc: Option<&Value>,
) -> Result<(), KrmResult> {
    if spec.output == Output::SylvaValues {
        sylva_values::check_writable(values, items, fc).check(Check::SylvaValues)?;
    }
    sylva_values::check_no_foreign_unit(values, items).check(Check::SylvaValues)?;
    let Some(foreign) = inputs.foreign_unit.map(|i| &items[i]) else {
        return Ok(());
    };
    Err(KrmResult::error(format!(
        "Kustomization {} is not generated by cutover (no {GENERATED_BY} annotation): remove it or rename it if it \
         is yours; if your Sylva release renders this unit itself, it pre-pulls the images and MetalLBImagePrepull \
         must not run; if an earlier cutover generated it, add the annotation {GENERATED_BY}: {UNIT} back",
        foreign.name()
    ))
    .about(foreign)
    .field("metadata.annotations")
    .tag("check", Check::Unit))
}

/// Everything the edits of an open gate need, read and checked.
struct OpenGate<'a> {
    spec: &'a MetalLBImagePrepullSpec,
    items: &'a [Value],
    fc: Option<&'a Value>,
    inputs: &'a inputs::Inputs,
    values: &'a values::SylvaValues,
    /// The gated Kustomization (`metallb`), when it is among the items.
    gated: Option<usize>,
    payload: &'a source::Payload,
    images: &'a [images::PrepullImage],
}

impl OpenGate<'_> {
    /// `output: rendered`: the unit as Flux Kustomizations among the items, `metallb` depending
    /// on it. Returns what was rendered and whether any item changed.
    fn into_rendered_units(self, out: &mut Outcome) -> Result<(render::Rendered, bool), KrmResult> {
        let (spec, items, inputs) = (self.spec, self.items, self.inputs);
        if let Some(accepted) =
            release::check_rendered(spec, items, self.fc).check(Check::SylvaUnitsRelease)?
        {
            out.push(accepted);
        }
        let gated = self.gated.map(|i| &items[i]);
        let settings = unit::settings(self.payload, items, inputs, gated).check(Check::Unit)?;
        if let Some(rev) = settings.identity.annotations.get(siblings::HELM_REVISION) {
            out.push(
                KrmResult::info(format!(
                    "the unit carries {}={rev}, as do {} and all {} Kustomization(s) labelled {}, so the \
                     root-dependency-{rev} Job sees it updated",
                    siblings::HELM_REVISION,
                    spec.kustomization,
                    inputs.waiting_kustomizations.len(),
                    siblings::ROOT_DEPENDENCY_WAIT
                ))
                .tag("check", Check::HelmRevision),
            );
        }
        if let Some((_, from)) = &settings.kube_config {
            out.push(
                KrmResult::info(format!(
                    "workload cluster: the unit applies its payload with the kubeConfig of {from}"
                ))
                .tag("check", Check::KubeConfig),
            );
        }
        let rendered = render::render(spec, self.images, &settings);
        let changed = reconcile::apply_unit(items, inputs, rendered.objects.clone(), out);
        match self.gated {
            Some(index) if !inputs.is_generator_call() => {
                reconcile::add_depends_on(index, &items[index], out);
            }
            _ => out.push(
                KrmResult::info(format!(
                    "kustomize generator call (only the function config came in): the {UNIT} unit and its payload are emitted, \
                     but Kustomization {} is not among the items, so its spec.dependsOn was NOT rewritten; add {{name: {UNIT}}} to it yourself",
                    spec.kustomization
                ))
                .tag("check", Check::DependsOn),
            ),
        }
        // A unit left in the values by an earlier sylva-values run would be rendered twice.
        remove_from_values(
            self.values,
            items,
            "because output is rendered now (the unit is a rendered Kustomization)",
            out,
        )
        .check(Check::SylvaValues)?;
        Ok((rendered, changed))
    }

    /// `output: sylva-values`: the unit's definition written into the sylva-units values (which
    /// render it), its payload among the items. Returns what was rendered and whether any item
    /// changed.
    fn into_sylva_values(self, out: &mut Outcome) -> Result<(render::Rendered, bool), KrmResult> {
        let (spec, items, values, payload) = (self.spec, self.items, self.values, self.payload);
        let repo = payload.repo.as_deref().unwrap_or_default();
        sylva_values::check_repo(values, items, repo, self.fc).check(Check::Source)?;
        unit::check_payload_dir(items, self.inputs, &payload.dir).check(Check::Unit)?;
        let rendered = render::payload(spec, self.images, &payload.dir);
        let definition = sylva_values::unit_definition(
            spec,
            payload,
            &rendered.job_name,
            &rendered.flux_timeout,
        );
        let mut changed =
            match sylva_values::add(values, items, definition, out).check(Check::SylvaValues)? {
                Some(root) => {
                    let edit = sylva_values::write_back(values, items, root, out)
                        .check(Check::SylvaValues)?;
                    out.edits.push(edit);
                    true
                }
                None => false,
            };
        // The payload objects are (re)written; a Flux Kustomization left by an earlier rendered
        // run goes (stale), and so does metallb's dependsOn on it.
        changed |= reconcile::apply_unit(items, self.inputs, rendered.objects.clone(), out);
        if let Some(index) = self.gated {
            reconcile::remove_depends_on(
                index,
                &items[index],
                "because output is sylva-values now (sylva-units renders the dependency from units.metallb.depends_on)",
                out,
            );
        }
        Ok((rendered, changed))
    }
}

/// The closing result of an open gate: what the unit pre-pulls, how long it waits, where its
/// payload goes.
fn summary(
    spec: &MetalLBImagePrepullSpec,
    images: &[images::PrepullImage],
    rendered: &render::Rendered,
    payload: &source::Payload,
    changed: bool,
) -> KrmResult {
    let on_timeout = match spec.on_timeout {
        OnTimeout::Proceed => "then proceeds and logs the nodes not covered",
        OnTimeout::Fail => "then fails, keeping metallb blocked",
    };
    KrmResult::info(format!(
        "gate open: {UNIT} pre-pulls {} image(s) on every node in namespace {}; waiter Job {} waits up to {} ({on_timeout}); \
         Flux health-checks it with timeout {}; payload in {}/ must be published at {} of {}; {}",
        images.len(),
        spec.namespace,
        rendered.job_name,
        spec.wait_timeout.as_str(),
        rendered.flux_timeout,
        payload.dir,
        payload.path,
        match (&payload.source_ref, &payload.repo) {
            (Some(sr), _) => format!("{} {}", sr.kind.as_str(), sr.name),
            (None, Some(repo)) => format!("source_templates.{repo}"),
            (None, None) => "its source".to_string(),
        },
        if changed { "unit written" } else { "unit already up to date" }
    ))
    .tag("check", Check::Summary)
}

/// Removes the unit an earlier `output: sylva-values` run wrote into the values, if any.
fn remove_from_values(
    values: &values::SylvaValues,
    items: &[Value],
    reason: &str,
    out: &mut Outcome,
) -> Result<(), KrmResult> {
    if matches!(values.origin, values::Origin::Inline) {
        return Ok(());
    }
    if let Some(root) = sylva_values::remove(values, items, reason, out) {
        let edit = sylva_values::write_back(values, items, root, out)?;
        out.edits.push(edit);
    }
    Ok(())
}
