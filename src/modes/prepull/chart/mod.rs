//! The upstream MetalLB chart path: MetalLB installed without Sylva (plain Flux HelmRelease,
//! cozystack, kustomize `helmCharts`) and upgraded from a chart ≤ 0.15 to 0.16+, where frr-k8s
//! became the default BGP backend. Same unit, payload and `source` contract as the Sylva path;
//! only the gate and the image defaults differ.
//!
//! **Ordering.** helm-controller's `HelmRelease.spec.dependsOn` names HelmReleases only
//! (fluxcd/helm-controller `api/v2/helmrelease_types.go`: "references to HelmRelease resources
//! that must be ready before this HelmRelease can be reconciled"), and the prepull is a DaemonSet
//! and a Job, not a chart. So the Flux Kustomization that applies the MetalLB installation
//! (`spec.kustomization`, default `metallb`) gets `dependsOn: [{name: metallb-image-prepull}]`:
//! kustomize-controller applies nothing of it, the new chart version included, until the unit is
//! Ready, and the unit is Ready only when its waiter Job completed (Flux's Job status reader).
//! This works on every Flux v2 release and for every installation form (a cozystack Package, a
//! HelmRelease, hydrated `helmCharts` output), which a HelmRelease-shaped prepull would not.

pub mod detect;
pub mod versions;

use serde_yaml::Value;

use super::config::{MetalLBImagePrepullSpec, OnTimeout, Output};
use super::gate::Condition;
use super::images::{self, ChartValues, FRR_K8S_PATH, FRR_PATH, Target};
use super::inputs::{GENERATED_BY, Inputs, UNIT};
use super::{Check, TagCheck, fc_error, reconcile, render, source, unit};
use crate::krm::{KrmObject, KrmResult, Outcome};
use detect::{Form, Installation, describe};
use versions::{FRR_K8S_DEFAULT_SINCE, Version};

/// The chart version and where it was read.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Known {
    text: String,
    version: Option<Version>,
    from: String,
    about: Option<usize>,
}

/// The conditions of the chart path, in result order.
struct ChartGate {
    conditions: Vec<(Check, Condition)>,
    target: Option<Known>,
}

impl ChartGate {
    fn is_open(&self) -> bool {
        self.conditions.iter().all(|(_, c)| c.met)
    }
    fn closed_reason(&self) -> String {
        self.conditions
            .iter()
            .filter(|(_, c)| !c.met)
            .map(|(_, c)| c.evidence.as_str())
            .collect::<Vec<_>>()
            .join("; ")
    }

    /// One info result for each condition, met or not, with its evidence.
    fn report(&self, items: &[Value], out: &mut Outcome) {
        for (check, c) in &self.conditions {
            let r = KrmResult::info(format!(
                "gate condition {}: {} — {}",
                check.as_str(),
                if c.met { "met" } else { "not met" },
                c.evidence
            ))
            .tag("check", *check);
            out.push(match c.about {
                Some(i) => r.about(&items[i]),
                None => r,
            });
        }
    }
}

fn as_bool(v: &Value) -> Option<bool> {
    match v {
        Value::Bool(b) => Some(*b),
        Value::String(s) => match s.trim() {
            "true" => Some(true),
            "false" => Some(false),
            _ => None,
        },
        _ => None,
    }
}

/// Runs the chart path when MetalLB is installed by the upstream chart among the items; `None`
/// when no installation is found (the caller reports the missing sylva values).
pub fn plan(
    spec: &MetalLBImagePrepullSpec,
    items: &[Value],
    inputs: &Inputs,
    fc: Option<&Value>,
) -> Result<Option<Outcome>, KrmResult> {
    let found = detect::find(items);
    let install = match found.as_slice() {
        [] => return Ok(None),
        [one] => one.clone(),
        _ => return Err(detect::ambiguous(items, &found).tag("check", Check::Install)),
    };
    if spec.output == Output::SylvaValues {
        return Err(fc_error(
            fc,
            format!(
                "output: sylva-values needs sylva values, and MetalLB is installed by {} (the upstream chart): use output: rendered",
                describe(&items[install.index])
            ),
            "output",
        )
        .tag("check", Check::Config));
    }
    let gated = gated_kustomization(spec, items, inputs)?;
    if let Some(g) = gated {
        unit::depends_on(&items[g]).check(Check::DependsOn)?;
    }
    let mut out = Outcome::default();
    out.results.extend(install_results(items, &install));
    let gate = evaluate(spec, items, inputs, &install, gated, fc);
    gate.report(items, &mut out);
    if !gate.is_open() {
        reconcile::remove_unit(items, inputs, gated, &mut out);
        out.push(
            KrmResult::info(format!(
                "gate closed, no {UNIT} unit: {}",
                gate.closed_reason()
            ))
            .tag("check", Check::Gate),
        );
        return Ok(Some(out));
    }
    let target = gate.target.as_ref().expect("an open gate has a target");
    let payload = source::resolve(spec, fc).check(Check::Source)?;
    let images = resolve_images(spec, items, &install, target, fc).check(Check::Images)?;
    for image in &images {
        out.push(
            KrmResult::info(format!("pre-pull {} ({})", image.image, image.source))
                .tag("check", Check::Images),
        );
    }
    if let Some(foreign) = inputs.foreign_unit.map(|i| &items[i]) {
        out.push(
            KrmResult::warning(format!(
                "Kustomization {} is not generated by cutover (no {GENERATED_BY} annotation): left alone, no unit or \
                 payload written and {} not made to depend on it here",
                foreign.name(),
                spec.kustomization
            ))
            .about(foreign)
            .tag("check", Check::Unit),
        );
        reconcile::apply_unit(items, inputs, Vec::new(), &mut out);
        return Ok(Some(out));
    }
    let settings =
        unit::settings(&payload, items, inputs, gated.map(|g| &items[g])).check(Check::Unit)?;
    let rendered = render::render(spec, &images, &settings);
    let mut objects = rendered.objects.clone();
    objects.extend(bgp_sessions(
        spec, items, gated, &settings, &payload, &mut out,
    ));
    let changed = reconcile::apply_unit(items, inputs, objects, &mut out);
    match gated {
        Some(index) => reconcile::add_depends_on(index, &items[index], &mut out),
        None => out.push(nothing_waits(spec, items, &install)),
    }
    out.push(summary(
        spec, &images, target, &rendered, &payload, &settings, changed,
    ));
    Ok(Some(out))
}

/// No Kustomization applies MetalLB among the items: the unit is emitted, but nothing makes the
/// upgrade wait for it.
fn nothing_waits(
    spec: &MetalLBImagePrepullSpec,
    items: &[Value],
    install: &Installation,
) -> KrmResult {
    KrmResult::warning(format!(
        "no Flux Kustomization {} among the items: the {UNIT} unit and its payload are emitted, but nothing \
         makes the MetalLB upgrade wait for it; add {{name: {UNIT}}} to spec.dependsOn of the Kustomization \
         that applies {} (or name it in spec.kustomization)",
        spec.kustomization,
        describe(&items[install.index])
    ))
    .tag("check", Check::DependsOn)
}

/// What the function found of the installation: where MetalLB comes from and where its values
/// are, and a warning when they are merged from `spec.valuesFrom` (not read).
fn install_results(items: &[Value], install: &Installation) -> Vec<KrmResult> {
    let mut results = vec![
        KrmResult::info(format!(
            "MetalLB is installed by {} ({}); upstream values at {}",
            describe(&items[install.index]),
            install.form.tag(),
            if install.values_path.is_empty() {
                "(none)".to_string()
            } else {
                install.values_field()
            }
        ))
        .about(&items[install.index])
        .tag("check", Check::Install)
        .tag("install", install.form.tag()),
    ];
    if install.values_from {
        results.push(
            KrmResult::warning(format!(
                "{} merges spec.valuesFrom, which this function does not read: image overrides and frrk8s/speaker.frr \
                 settings there are not seen; put them in spec.values or set spec.images",
                describe(&items[install.index])
            ))
            .about(&items[install.index])
            .field("spec.valuesFrom")
            .tag("check", Check::Values),
        );
    }
    results
}

/// `bgpSessionCheck`: the objects of the unit that checks the BGP sessions after the gated
/// Kustomization (none when it is not among the items, with a warning).
fn bgp_sessions(
    spec: &MetalLBImagePrepullSpec,
    items: &[Value],
    gated: Option<usize>,
    settings: &render::UnitSettings,
    payload: &source::Payload,
    out: &mut Outcome,
) -> Vec<Value> {
    match (&spec.bgp_session_check, gated) {
        (Some(check), Some(g)) => {
            let sessions = render::sessions_unit(spec, check, settings, items[g].name());
            out.push(
                KrmResult::info(format!(
                    "bgpSessionCheck: Flux Kustomization metallb-bgp-sessions waits for {} and health-checks Job {}, \
                     which fails unless every frr-k8s BGPSessionState in {} reports Established within {} (Flux \
                     timeout {}); payload in {}/bgp-sessions/",
                    items[g].name(),
                    sessions.job_name,
                    spec.namespace,
                    check.timeout.as_str(),
                    sessions.flux_timeout,
                    payload.dir
                ))
                .tag("check", Check::BgpSessions),
            );
            sessions.objects
        }
        (Some(_), None) => {
            out.push(
                KrmResult::warning(format!(
                    "bgpSessionCheck skipped: it runs after Kustomization {}, which is not among the items",
                    spec.kustomization
                ))
                .tag("check", Check::BgpSessions),
            );
            Vec::new()
        }
        (None, _) => Vec::new(),
    }
}

/// The closing result of an open gate on the chart path.
fn summary(
    spec: &MetalLBImagePrepullSpec,
    images: &[images::PrepullImage],
    target: &Known,
    rendered: &render::Rendered,
    payload: &source::Payload,
    settings: &render::UnitSettings,
    changed: bool,
) -> KrmResult {
    let on_timeout = match spec.on_timeout {
        OnTimeout::Proceed => "then proceeds and logs the nodes not covered",
        OnTimeout::Fail => "then fails, keeping metallb blocked",
    };
    KrmResult::info(format!(
            "gate open: {UNIT} pre-pulls {} image(s) on every node in namespace {} before MetalLB chart {} is applied; \
             waiter Job {} waits up to {} ({on_timeout}); Flux health-checks it with timeout {}; payload in {}/ must be \
             published at {} of {} {}; {}",
            images.len(),
            spec.namespace,
            target.text,
            rendered.job_name,
            spec.wait_timeout.as_str(),
            rendered.flux_timeout,
            payload.dir,
            payload.path,
            settings.source_ref.kind.as_str(),
            settings.source_ref.name,
            if changed {
                "unit written"
            } else {
                "unit already up to date"
            }
        ))
        .tag("check", Check::Summary)
}

/// The Flux Kustomization named `spec.kustomization`: at most one.
fn gated_kustomization(
    spec: &MetalLBImagePrepullSpec,
    items: &[Value],
    inputs: &Inputs,
) -> Result<Option<usize>, KrmResult> {
    match inputs.gated.as_slice() {
        [] => Ok(None),
        [one] => {
            if items[*one].get("spec").is_some_and(Value::is_mapping) {
                Ok(Some(*one))
            } else {
                Err(KrmResult::error(format!(
                    "Kustomization {} has no spec mapping: cannot add dependsOn",
                    spec.kustomization
                ))
                .about(&items[*one])
                .field("spec")
                .tag("check", Check::DependsOn))
            }
        }
        [first, ..] => Err(KrmResult::error(format!(
            "{} Flux Kustomizations are named {}: cannot tell which one applies MetalLB; name it in spec.kustomization",
            inputs.gated.len(),
            spec.kustomization
        ))
        .about(&items[*first])
        .field("metadata.name")
        .tag("check", Check::Metallb)),
    }
}

fn known(text: &str, from: String, about: Option<usize>) -> Known {
    Known {
        text: text.trim().to_owned(),
        version: Version::parse(text),
        from,
        about,
    }
}

/// The gate: `upgrade` (the chart crosses from ≤ 0.15 into 0.16+), `backend` (the target runs
/// the bundled frr-k8s and the running one did not), `bgp` and `metallb`.
fn evaluate(
    spec: &MetalLBImagePrepullSpec,
    items: &[Value],
    inputs: &Inputs,
    install: &Installation,
    gated: Option<usize>,
    fc: Option<&Value>,
) -> ChartGate {
    let (target, running) = versions(spec, items, install, fc);
    let upgrade = upgrade_condition(install, target.as_ref(), running.as_ref());
    let values = install.values(items);
    ChartGate {
        conditions: vec![
            (Check::Upgrade, upgrade),
            (
                Check::Backend,
                backend_condition(items, inputs, install, values),
            ),
            (Check::Bgp, bgp_condition(items, inputs, install, values)),
            (Check::Metallb, metallb_condition(items, install, gated)),
        ],
        target,
    }
}

/// The chart version the installation moves to and the one running now, each with where it
/// was read (the installation's own fields first, then the function config's).
fn versions(
    spec: &MetalLBImagePrepullSpec,
    items: &[Value],
    install: &Installation,
    fc: Option<&Value>,
) -> (Option<Known>, Option<Known>) {
    let config = |field: &str| {
        format!(
            "{}{}",
            super::config_field(fc, field),
            if fc.is_some() {
                " of the function config"
            } else {
                ""
            }
        )
    };
    let target = match (&install.target, &spec.to_chart_version) {
        (Some((text, field)), _) if Version::parse(text).is_some() => Some(known(
            text,
            format!("{field} of {}", describe(&items[install.index])),
            Some(install.index),
        )),
        (_, Some(text)) => Some(known(text, config("toChartVersion"), None)),
        (Some((text, field)), None) => Some(known(
            text,
            format!("{field} of {}", describe(&items[install.index])),
            Some(install.index),
        )),
        (None, None) => None,
    };
    let running = detect::running_version(items, install)
        .map(|(text, from, i)| known(&text, from, Some(i)))
        .or_else(|| {
            spec.from_chart_version
                .as_deref()
                .map(|t| known(t, config("fromChartVersion"), None))
        });
    (target, running)
}

/// `backend`: the target runs the bundled frr-k8s (not turned off, not external, not FRR mode)
/// and no FRRConfiguration shows frr-k8s running already.
fn backend_condition(
    items: &[Value],
    inputs: &Inputs,
    install: &Installation,
    values: Option<&Value>,
) -> Condition {
    let get = |path: &[&str]| {
        path.iter()
            .try_fold(values?, |v, k| v.get(*k))
            .and_then(as_bool)
    };
    let field = |rest: &str| format!("{}.{rest}", install.values_field());
    if get(&["frrk8s", "enabled"]) == Some(false) {
        Condition {
            met: false,
            evidence: format!(
                "the target keeps its BGP backend: {} is false (native or FRR mode stays)",
                field("frrk8s.enabled")
            ),
            about: Some(install.index),
        }
    } else if get(&["frrk8s", "external"]) == Some(true) {
        Condition {
            met: false,
            evidence: format!(
                "{} is true: MetalLB uses an frr-k8s installed elsewhere, whose images this chart does not bring",
                field("frrk8s.external")
            ),
            about: Some(install.index),
        }
    } else if get(&["speaker", "frr", "enabled"]) == Some(true) {
        Condition {
            met: false,
            evidence: format!(
                "{} is true: the target stays in (deprecated) FRR mode",
                field("speaker.frr.enabled")
            ),
            about: Some(install.index),
        }
    } else if let Some(&i) = inputs.frr_configurations.first() {
        Condition {
            met: false,
            evidence: format!(
                "frr-k8s already runs ({} FRRConfiguration object(s) among the items, e.g. {}): no backend switch",
                inputs.frr_configurations.len(),
                items[i].name()
            ),
            about: Some(i),
        }
    } else {
        Condition {
            met: true,
            evidence: format!(
                "the target runs the bundled frr-k8s (frrk8s.enabled defaults to true from chart {FRR_K8S_DEFAULT_SINCE}, \
                 not overridden) and no FRRConfiguration shows frr-k8s running today: the speaker's native or FRR \
                 backend is replaced"
            ),
            about: Some(install.index),
        }
    }
}

/// `bgp`: BGP peers among the items (not generated by cutover) or in the chart values.
fn bgp_condition(
    items: &[Value],
    inputs: &Inputs,
    install: &Installation,
    values: Option<&Value>,
) -> Condition {
    let in_values = values.map_or(0, detect::bgp_in_values);
    let peers: Vec<usize> = inputs
        .bgp_peers
        .iter()
        .copied()
        .filter(|&i| items[i].annotation(GENERATED_BY).is_none())
        .collect();
    if let Some(&first) = peers.first() {
        Condition {
            met: true,
            evidence: format!(
                "{} BGPPeer object(s) among the items (e.g. {})",
                peers.len(),
                describe(&items[first])
            ),
            about: Some(first),
        }
    } else if in_values > 0 {
        Condition {
            met: true,
            evidence: format!(
                "{in_values} BGPPeer manifest(s) in {}",
                install.values_field()
            ),
            about: Some(install.index),
        }
    } else {
        Condition {
            met: false,
            evidence: "no BGP in use: no metallb.io BGPPeer among the items or in the chart values (L2 only: the backend switch withdraws nothing)".into(),
            about: None,
        }
    }
}

/// `metallb`: the installation is enabled (and applied by the gated Kustomization, if any).
fn metallb_condition(items: &[Value], install: &Installation, gated: Option<usize>) -> Condition {
    match &install.disabled {
        Some(why) => Condition {
            met: false,
            evidence: format!("MetalLB is not being upgraded: {why}"),
            about: Some(install.index),
        },
        None => Condition {
            met: true,
            evidence: format!(
                "MetalLB enabled: {} installs it{}",
                describe(&items[install.index]),
                match gated {
                    Some(g) => format!(", applied by Kustomization {}", items[g].name()),
                    None => String::new(),
                }
            ),
            about: Some(install.index),
        },
    }
}

fn upgrade_condition(
    install: &Installation,
    target: Option<&Known>,
    running: Option<&Known>,
) -> Condition {
    let closed = |evidence: String, about: Option<usize>| Condition {
        met: false,
        evidence,
        about,
    };
    let Some(target) = target else {
        return closed(
            match install.form {
                Form::Cozystack => "target MetalLB chart version unknown: cozystack's umbrella chart carries cozystack's version; set spec.toChartVersion (cozystack v1.5.0+ vendors metallb 0.16.1)".into(),
                _ => "target MetalLB chart version unknown (no exact version in the installation): set spec.toChartVersion".into(),
            },
            Some(install.index),
        );
    };
    let Some(to) = target.version else {
        return closed(
            format!(
                "target {} ({}) is a range, not one version: set spec.toChartVersion to the version it resolves to",
                target.text, target.from
            ),
            target.about,
        );
    };
    let Some(running) = running else {
        return closed(
            format!(
                "running MetalLB chart version unknown (no status.history or status.lastAttemptedRevision of the \
                 installing HelmRelease among the items, no spec.fromChartVersion): treated as a fresh install of {to}"
            ),
            Some(install.index),
        );
    };
    let Some(from) = running.version else {
        return closed(
            format!(
                "running chart version {} ({}) is not a version",
                running.text, running.from
            ),
            running.about,
        );
    };
    let evidence = format!(
        "MetalLB chart {from} ({}) → {to} ({})",
        running.from, target.from
    );
    if from < FRR_K8S_DEFAULT_SINCE && to >= FRR_K8S_DEFAULT_SINCE {
        Condition {
            met: true,
            evidence: format!(
                "{evidence}: crosses into {FRR_K8S_DEFAULT_SINCE}, where frr-k8s becomes the default BGP backend"
            ),
            about: target.about.or(running.about),
        }
    } else if from >= FRR_K8S_DEFAULT_SINCE {
        closed(
            format!("{evidence}: already on {FRR_K8S_DEFAULT_SINCE}+, the switch is behind"),
            running.about,
        )
    } else {
        closed(
            format!("{evidence}: the target is below {FRR_K8S_DEFAULT_SINCE}, no backend switch"),
            target.about,
        )
    }
}

/// The images: `spec.images`, else the target chart's frr-k8s and FRR images from the version
/// table, overridden by the installation's values (`frr-k8s.frrk8s.image`,
/// `frr-k8s.frrk8s.frr.image`: registry mirrors, air-gap).
fn resolve_images(
    spec: &MetalLBImagePrepullSpec,
    items: &[Value],
    install: &Installation,
    target: &Known,
    fc: Option<&Value>,
) -> Result<Vec<images::PrepullImage>, KrmResult> {
    let item = &items[install.index];
    let sources: Vec<ChartValues<'_>> = install
        .values(items)
        .map(|values| ChartValues {
            values,
            source: format!("{} {}", describe(item), install.values_field()),
            about: Some(item),
            field: install.values_field(),
        })
        .into_iter()
        .collect();
    let row = target.version.and_then(versions::row);
    let Some(row) = row else {
        if spec.images.is_some() {
            return images::resolve_from(spec, &sources, &[], fc);
        }
        return Err(fc_error(
            fc,
            format!(
                "MetalLB chart {} is not in the image table (supported: {}): set spec.images to the frr-k8s and frr \
                 images that chart installs",
                target.text,
                versions::supported()
            ),
            "images",
        ));
    };
    let describe_default = |what: &str| {
        format!(
            "default {what} image of metallb chart {} (frr-k8s subchart {})",
            row.chart, row.frr_k8s_chart
        )
    };
    let targets = [
        Target {
            what: "frr-k8s",
            path: FRR_K8S_PATH,
            default: row.frr_k8s_image,
            default_source: describe_default("frr-k8s"),
        },
        Target {
            what: "frr",
            path: FRR_PATH,
            default: row.frr_image,
            default_source: describe_default("frr"),
        },
    ];
    images::resolve_from(spec, &sources, &targets, fc)
}

#[cfg(test)]
mod tests;
